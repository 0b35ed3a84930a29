import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.test.utils import override_settings

from benchmark.importers.base import ImportFailed
from benchmark.importers.catalogue import IMPORTERS, run_import


class ProgressBar:
    """``[#####.....]  512/1085 files`` on one terminal line, redrawn when the percentage moves."""

    def __init__(self, stream, width: int = 40) -> None:
        self.stream, self.width, self.shown = stream, width, None

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        if percent == self.shown:
            return
        self.shown = percent
        filled = self.width * percent // 100
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}%  {done}/{total} files")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


class Command(BaseCommand):
    help = "Import benchmark data. Formats: " + "; ".join(f"{i.name}: {i.description}" for i in IMPORTERS.values())

    def add_arguments(self, parser):
        parser.add_argument("format", choices=sorted(IMPORTERS))
        parser.add_argument("path")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    def handle(self, *args, format: str, path: str, no_progress: bool = False, **options):
        progress = None if no_progress else ProgressBar(sys.stderr)
        # DEBUG keeps every query's SQL (with multi-megabyte report texts) in memory: not for an import.
        with override_settings(DEBUG=False):
            for connection in connections.all():
                connection.queries_log.clear()
            try:
                result = run_import(format, path, progress=progress)
            except ImportFailed as exc:
                raise CommandError(f"import failed, nothing was stored: {exc}") from None
        self.stdout.write(result.summary() or "nothing to import")
