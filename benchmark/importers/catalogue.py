"""The one list of import formats. Each importer is ``fn(path, *, result)`` and runs inside
``run_import``'s transaction, so a failure anywhere stores nothing."""

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from django.db import transaction

from .base import ImportFailed, ImportResult


@dataclass(frozen=True)
class Importer:
    name: str
    target: str  # "module:function", imported on first use
    description: str
    # "module:function" that finds, in an unpacked zip, the file or folder the importer reads;
    # by default ``unwrapped``: down through folders that hold a single entry.
    zip_root: str = ""

    def load(self) -> Callable[..., None]:
        return _function(self.target)

    def root_in(self, unpacked: Path) -> Path:
        return (_function(self.zip_root) if self.zip_root else unwrapped)(unpacked)


def _function(target: str) -> Callable:
    module, function = target.split(":")
    return getattr(import_module(module), function)


def entries(folder: Path) -> list[Path]:
    """A folder's entries, without the ``__MACOSX`` folder that macOS zips carry."""
    return [entry for entry in folder.iterdir() if entry.name != "__MACOSX"]


def unwrapped(unpacked: Path) -> Path:
    """The zip's only file, its only top-level folder (through nested wrappers), or the folder."""
    source = unpacked
    while source.is_dir() and len(only := entries(source)) == 1:
        source = only[0]
    return source


IMPORTERS: dict[str, Importer] = {
    imp.name: imp
    for imp in [
        Importer("native", "benchmark.importers.native:import_native", "our JSONL task format (docs/formats.md)"),
        Importer("reportbench", "benchmark.importers.reportbench:import_reportbench",
                 "ReportBench_v1.1.jsonl with its _GT folder of gold bibliographies"),
        Importer("deepscholar", "benchmark.importers.deepscholar:import_deepscholar",
                 "a DeepScholar-bench release folder (papers, citations, nuggets, system outputs)"),
        Importer("deepsynth", "benchmark.importers.deepsynth:import_deepsynth",
                 "DeepSynth-Eval tasks JSONL with checklists (and survey_result reports)"),
        Importer("surveylens", "benchmark.importers.surveylens:import_surveylens",
                 "a folder of SurveyLens Structured Survey Representation JSON files, one per system"),
        Importer("bibtex", "benchmark.importers.bibtex:import_bibtex", "a BibTeX file of bibliography entries"),
        Importer("reports", "benchmark.importers.markdown_reports:import_markdown_reports",
                 "a folder of markdown reports, <system>/<task key>.md",
                 zip_root="benchmark.importers.markdown_reports:reports_root"),
    ]
}


def importer_register(importer: Importer) -> None:
    """Formats whose rows belong to an app above benchmark (the annotation app's SurveyLens
    labels) join the list when that app is ready."""
    IMPORTERS[importer.name] = importer


def run_import(
    name: str, path: str | Path, *, progress: Callable[[int, int], None] | None = None, **options
) -> ImportResult:
    """Run one importer in one transaction; ``ImportFailed`` leaves the database untouched.
    ``progress(done, total)`` is called as importers that know their size advance."""
    if name not in IMPORTERS:
        raise ImportFailed(f"unknown import format {name!r}; known: {', '.join(sorted(IMPORTERS))}")
    path = Path(path)
    if not path.exists():
        raise ImportFailed("no such file or folder", file=path)
    result = ImportResult(on_progress=progress)
    with transaction.atomic():
        IMPORTERS[name].load()(path, result=result, **options)
    return result
