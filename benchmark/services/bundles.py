"""Task-set bundles: a task set written as a zip in our format, an upstream one or as a Hugging
Face dataset folder (``exporters.huggingface``), with its manifest and changelog.
Deterministic (fixed entry times, sorted keys, no export time inside), so writing an unchanged
set twice gives the same bytes and the same sha256. The export jobs that run these in a worker
are ``annotation.services.exports``.
"""

import hashlib
import json
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..exporters.curated import curated_task
from ..exporters.deepscholar import write_deepscholar
from ..exporters.deepsynth import write_deepsynth
from ..exporters.huggingface import DatasetConfig, dataset_files, write_dataset_tables
from ..exporters.huggingface_card import CardContext, dataset_card
from ..exporters.native import canonical_json
from ..exporters.reportbench import write_reportbench
from ..models import Protocol, TaskSet
from .tasksets import taskset_changelog, taskset_export

GENERATOR = "survey-eval-studio export 1"
MANIFEST = "manifest.json"
NATIVE_FILE = "tasks.jsonl"
HISTORY_FILE = "history/tasks_with_history.jsonl"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: entries carry no export time


@dataclass(frozen=True)
class TaskSetFormat:
    name: str
    label: str
    protocol: str | None  # the protocol whose tasks the format holds; None: every task
    writer: Callable[[Iterable[dict], Callable[[str, bytes], None], Counter], None] | None
    frozen_only: bool = False  # offered for frozen sets only


HUGGINGFACE = "huggingface"
TASKSET_FORMATS: dict[str, TaskSetFormat] = {
    f.name: f
    for f in [
        TaskSetFormat("native", "Our JSONL task format (docs/formats.md)", None, None),
        TaskSetFormat("deepsynth", "DeepSynth-Eval tasks JSONL", Protocol.DEEPSYNTH, write_deepsynth),
        TaskSetFormat("reportbench", "ReportBench prompts + gold bibliography files", Protocol.REPORTBENCH,
                      write_reportbench),
        TaskSetFormat("deepscholar", "DeepScholar-bench CSVs + nuggets", Protocol.DEEPSCHOLAR, write_deepscholar),
        TaskSetFormat(HUGGINGFACE, "Hugging Face dataset: Parquet per config + dataset card (zipped folder)", None,
                      None, frozen_only=True),
    ]
}


def taskset_formats_for(task_set: TaskSet) -> list[TaskSetFormat]:
    """The formats a set can be written in: ours, and the upstream format of each protocol it holds."""
    protocols = set(task_set.tasks.values_list("protocol", flat=True))
    return [f for f in TASKSET_FORMATS.values()
            if (f.protocol is None or f.protocol in protocols) and (task_set.is_frozen or not f.frozen_only)]


# --- bundles --------------------------------------------------------------------------------


class Bundle:
    """A deterministic zip: fixed entry times and permissions, each file's size and sha256 kept."""

    def __init__(self, out: IO[bytes]) -> None:
        self.zip = zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6)
        self.files: dict[str, dict] = {}

    def _info(self, name: str, *, manifest: bool = False) -> zipfile.ZipInfo:
        if name in self.files or (name == MANIFEST) != manifest:
            raise ValueError(f"the bundle already has a file {name}")
        info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        return info

    def add(self, name: str, data: bytes) -> None:
        self.zip.writestr(self._info(name), data, compresslevel=6)
        self.files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        """A file written in pieces (large annotation files), hashed as it goes."""
        info = self._info(name)
        digest, size = hashlib.sha256(), 0
        with self.zip.open(info, "w") as entry:
            class _Hashing:
                def write(self, data: bytes) -> int:
                    nonlocal size
                    digest.update(data)
                    size += len(data)
                    return entry.write(data)

            yield _Hashing()
        self.files[name] = {"bytes": size, "sha256": digest.hexdigest()}

    def __enter__(self) -> "Bundle":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self.zip.fp is not None:
            # Finish the zip on the failure path too, so it never writes into an already closed
            # file when collected; the caller deletes the file.
            try:
                self.zip.close()
            except (OSError, ValueError, RuntimeError):
                pass

    def close(self, manifest: dict) -> dict:
        """Write ``manifest.json`` (with every file's size and sha256) last; returns it."""
        manifest = {**manifest, "files": dict(sorted(self.files.items()))}
        data = (json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2) + "\n").encode("utf-8")
        self.zip.writestr(self._info(MANIFEST, manifest=True), data, compresslevel=6)
        self.zip.close()
        return manifest


def _item_key(kind: str, index: int, item: dict):
    """How items are matched between versions: as a re-import matches them (docs/formats.md)."""
    if kind == "prompts":
        return item["level"]
    if kind == "gold_references":
        return canonical_json(item["bib"])
    return index


ITEM_LISTS = ("prompts", "constraint_questions", "checklist_groups", "checklist_items", "gold_references", "nuggets",
              "rubric_criteria")


def _items(task: dict, kind: str) -> dict:
    if kind == "checklist_items":
        return {(g, i): item for g, group in enumerate(task["checklist_groups"]) for i, item in enumerate(group["items"])}
    rows = task[kind]
    if kind == "checklist_groups":
        rows = [{k: v for k, v in group.items() if k != "items"} for group in rows]
    return {_item_key(kind, i, item): item for i, item in enumerate(rows)}


def task_changes(before: dict, after: dict) -> dict:
    """Which task fields and how many items of each kind were added, removed or changed."""
    fields = sorted(k for k in after.keys() | before.keys()
                    if k not in ITEM_LISTS and before.get(k) != after.get(k))
    items = {}
    for kind in ITEM_LISTS:
        old, new = _items(before, kind), _items(after, kind)
        counts = {
            "added": len(new.keys() - old.keys()),
            "removed": len(old.keys() - new.keys()),
            "changed": sum(1 for k in new.keys() & old.keys() if canonical_json(new[k]) != canonical_json(old[k])),
        }
        if any(counts.values()):
            items[kind] = counts
    return {"fields": fields, "items": items}


def _lines_by_key(text: str) -> dict[str, dict]:
    lines = (json.loads(line) for line in text.splitlines() if line)
    return {f"{line['protocol']}/{line['key']}": line for line in lines}


def taskset_changes(*, task_set: TaskSet, current_text: str | None = None, against: TaskSet | None = None) -> dict:
    """``taskset_changelog`` against ``against`` (default the previous version), with item-level
    changes of each changed task."""
    log = taskset_changelog(task_set=task_set, against=against)
    changes = {
        "previous": None if log.previous is None else {
            "name": log.previous.name, "version": log.previous.version, "content_hash": log.previous.content_hash},
        "added": log.added, "removed": log.removed, "unchanged": log.unchanged, "changed": [],
    }
    if log.changed:
        current = _lines_by_key(current_text if current_text is not None else taskset_export(task_set=task_set))
        previous = _lines_by_key(taskset_export(task_set=log.previous))
        changes["changed"] = [{"task": key, **task_changes(previous[key], current[key])} for key in log.changed]
    return changes


def _content_hash(task_set: TaskSet, text: str) -> str:
    return task_set.content_hash if task_set.is_frozen else hashlib.sha256(text.encode("utf-8")).hexdigest()


def taskset_dataset_write(
    *, task_set: TaskSet, folder: Path, extra_configs: Iterable[DatasetConfig] = (),
    progress: Callable[[int, int], None] = lambda done, total: None, changes: dict | None = None,
) -> dict[str, int]:
    """Write a frozen set as a Hugging Face dataset folder (``exporters.huggingface``): a Parquet
    file per config and the ``README.md`` card; returns the rows of each config. ``changes``:
    the set's ``taskset_changes`` when the caller has them already."""
    if not task_set.is_frozen:
        raise ValueError(f"format: {task_set} is not frozen; freeze it before exporting it as a Hugging Face dataset "
                         "(a published dataset states one fixed content and its hash)")
    text = taskset_export(task_set=task_set)
    written = write_dataset_tables(folder, text, extra_configs=extra_configs, progress=progress)
    context = CardContext(
        name=task_set.name, version=task_set.version, description=task_set.description,
        content_hash=task_set.content_hash, frozen_at=task_set.frozen_at,
        frozen_by=task_set.frozen_by.get_username() if task_set.frozen_by_id else None,
        changes=changes if changes is not None else taskset_changes(task_set=task_set, current_text=text),
        written=written, generator=GENERATOR)
    (folder / "README.md").write_text(dataset_card(context), encoding="utf-8")
    return dict(written.rows)


def _dataset_into(bundle: Bundle, folder: Path) -> None:
    for path in dataset_files(folder):
        with path.open("rb") as source, bundle.open(path.relative_to(folder).as_posix()) as target:
            shutil.copyfileobj(source, target, 1 << 20)


def _scratch_dir(out: IO[bytes]) -> str | None:
    """Where the Parquet files wait before they go into the zip: beside the bundle when it is a
    file (the exports folder, not a /tmp that may be memory), else the system's temporary folder."""
    name = getattr(out, "name", None)
    return str(Path(name).parent) if isinstance(name, str) and Path(name).parent.is_dir() else None


def taskset_bundle_write(
    *, task_set: TaskSet, format_name: str, include_history: bool, out: IO[bytes],
    progress: Callable[[int, int], None] = lambda done, total: None, include_unreviewed: bool = False,
    extra_configs: Iterable[DatasetConfig] = (),
) -> dict:
    """Write the set as a bundle in ``format_name``; returns the manifest.

    The tasks come from ``taskset_export``: a frozen set's snapshot, an unfrozen set's live
    tasks, so every format of a frozen set states the frozen content. An upstream format holds
    curated content only (``exporters.curated``): accepted or edited items of curated tasks,
    unless ``include_unreviewed``; the manifest says which. The native format holds everything,
    and so does ``huggingface`` (a frozen set's dataset folder, with the ``extra_configs`` its
    caller adds, e.g. labels), whose items say how they were reviewed.
    """
    export_format = TASKSET_FORMATS.get(format_name)
    if export_format is None:
        raise ValueError(f"format: {format_name!r} is not one of {', '.join(TASKSET_FORMATS)}")
    if format_name == HUGGINGFACE and include_history:
        raise ValueError("include_history: the Hugging Face format carries no review history; export it without, "
                         "or export the native format with history")
    text = taskset_export(task_set=task_set)
    history = taskset_export(task_set=task_set, include_history=True) if include_history else None
    total = text.count("\n")
    changes = taskset_changes(task_set=task_set, current_text=text)
    counts: Counter = Counter()
    progress(0, total)
    with Bundle(out) as bundle:
        if format_name == HUGGINGFACE:
            with tempfile.TemporaryDirectory(prefix=".dataset-", dir=_scratch_dir(out)) as scratch:
                rows = taskset_dataset_write(task_set=task_set, folder=Path(scratch), extra_configs=extra_configs,
                                             progress=progress, changes=changes)
                _dataset_into(bundle, Path(scratch))
            counts.update({f"{name} rows": n for name, n in rows.items()})
        elif export_format.writer is None:
            bundle.add(NATIVE_FILE, text.encode("utf-8"))
            counts["tasks"] = total
            progress(total, total)
        else:
            lines = [json.loads(line) for line in text.splitlines() if line]

            def counted() -> Iterator[dict]:
                for done, line in enumerate(lines, start=1):
                    task = curated_task(line, counts, include_unreviewed=include_unreviewed)
                    if task is not None:
                        yield task
                    progress(done, total)

            export_format.writer(counted(), bundle.add, counts)
        if history is not None:
            bundle.add(HISTORY_FILE, history.encode("utf-8"))
        manifest = {
            "format": export_format.name,
            "format_label": export_format.label,
            "generator": GENERATOR,
            "task_set": {"name": task_set.name, "version": task_set.version, "frozen": task_set.is_frozen,
                         "frozen_at": task_set.frozen_at.isoformat() if task_set.frozen_at else None},
            "content_hash": _content_hash(task_set, text),
            "content_hash_of": "the native JSONL of the set's tasks without history (" +
                               ("its frozen snapshot" if task_set.is_frozen else "live, the set is not frozen") + ")",
            "counts": dict(sorted(counts.items())),
            "include_history": include_history,
            "history_file": HISTORY_FILE if include_history else None,
            "content": (
                "every task and item, one Parquet config per kind, each item with its review status (README.md is "
                "the dataset card)" if format_name == HUGGINGFACE else
                "every task and item (native format)") if export_format.writer is None else (
                "curated, draft and in-review tasks; accepted, edited and unreviewed items (proposed by an LLM, an "
                "import or an annotator)" if include_unreviewed else
                "curated tasks only; accepted and edited items only"),
            "include_unreviewed": include_unreviewed if export_format.writer is not None else None,
            "changelog": changes,
        }
        return bundle.close(manifest)
