"""A folder of generated reports, one file per (system, task).

Layout — ``path`` is the root folder, each sub-folder one system (its name is the
``System`` name, read through the alias table, created when missing), each file one report::

    <root>/<system>/<task key>.md               the task key must name one task
    <root>/<system>/<protocol>/<task key>.md    e.g. reports/storm/deepscholar/2506.02838.md
    <root>/<system>/<arxiv id>.json             ReportBench's generated-report format: a JSON
                                                object whose ``response`` is the markdown report

The protocol level is needed when a key exists in several protocols. An unknown
task key, an unknown protocol folder, an ambiguous key, non-UTF-8 or binary content
or an oversized file fails the import naming the file; other files (not ``.md`` or
``.json``) are skipped and listed in the import table. Reports go through ``reports_submit``: a re-import
replaces changed texts and leaves identical ones untouched.
"""

from pathlib import Path

from ..models import Protocol, Task
from ..services.reports import ReportInput
from .base import ImportFailed, ImportResult, Record, read_json
from .catalogue import entries
from .common import read_text, reports_store
from .systems import SystemSpec, systems_ensure

REPORT_SUFFIXES = (".md", ".json")


def _report_text(path: Path, name: str) -> str:
    if path.suffix.lower() != ".json":
        return read_text(path, name=name)
    data = read_json(path, name=name)
    rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
    if not isinstance(data, dict):
        raise rec.fail(f"expected a JSON object with a response field, got {type(data).__name__}")
    return rec.text("response", required=True)


def _holds_reports(folder: Path) -> bool:
    """A system's folder: it holds report files or protocol folders itself."""
    return any(entry.is_file() or entry.name in Protocol.values for entry in entries(folder))


def reports_root(unpacked: Path) -> Path:
    """In an unpacked zip, the folder of system folders: wrappers are descended through, but a
    lone system's folder (``storm/2312.04861.md``) is read from the folder around it."""
    root = unpacked
    while len(only := entries(root)) == 1 and only[0].is_dir() and not _holds_reports(only[0]):
        root = only[0]
    return root


def _report_files(root: Path, *, result: ImportResult) -> list[tuple[str, str | None, Path]]:
    found = []
    for system_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(system_dir.rglob("*")):
            if not path.is_file() or path.name.startswith("."):
                continue
            name = path.relative_to(root).as_posix()
            parts = path.relative_to(system_dir).parts
            if path.suffix.lower() not in REPORT_SUFFIXES:
                result.skip(system_dir.name, name, "not a .md report or a .json report with a response field")
                continue
            if len(parts) > 2:
                raise ImportFailed("too deeply nested: expected <system>/<task key>.md (or .json) or "
                                   "<system>/<protocol>/<task key>.md", file=name)
            protocol = parts[0] if len(parts) == 2 else None
            if protocol is not None and protocol not in Protocol.values:
                raise ImportFailed(f"unknown protocol folder {protocol!r} (known: {', '.join(Protocol.values)})",
                                   file=name)
            found.append((system_dir.name, protocol, path))
    return found


def import_markdown_reports(path: Path, *, result: ImportResult) -> None:
    root = Path(path)
    if not root.is_dir():
        raise ImportFailed("expected a folder of <system>/<task key>.md reports", file=root.name)
    files = _report_files(root, result=result)
    if not files:
        raise ImportFailed("no <system>/<task key>.md (or .json) files in the folder", file=root.name)
    tasks: dict[str, list[Task]] = {}
    for task in Task.objects.filter(key__in={p.stem for _, _, p in files}):
        tasks.setdefault(task.key, []).append(task)
    systems = systems_ensure(
        [SystemSpec(name, description="Imported from a folder of markdown reports.") for name in {s for s, _, _ in files}],
        result=result,
    )
    items, seen = [], {}
    for system, protocol, file in files:
        name = file.relative_to(root).as_posix()
        candidates = [t for t in tasks.get(file.stem, []) if protocol is None or t.protocol == protocol]
        if not candidates:
            where = f" in protocol {protocol}" if protocol else ""
            raise ImportFailed(f"no task with key {file.stem!r}{where}", file=name)
        if len(candidates) > 1:
            protocols = ", ".join(sorted(t.protocol for t in candidates))
            raise ImportFailed(f"task key {file.stem!r} exists in several protocols ({protocols}); put the file "
                               f"under {system}/<protocol>/", file=name)
        first = seen.setdefault((candidates[0].pk, systems[system].pk), name)
        if first != name:
            raise ImportFailed(f"a second report by {system} on task {file.stem}, after {first}", file=name)
        text = _report_text(file, name)
        if not text.strip():
            raise ImportFailed("the report is empty", file=name)
        items.append(ReportInput(task=candidates[0], system=systems[system], text=text, source_path=name))
    reports_store(items, result=result)
