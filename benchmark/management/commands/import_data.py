from django.core.management.base import BaseCommand, CommandError

from benchmark.importers.base import ImportFailed
from benchmark.importers.catalogue import IMPORTERS, run_import


class Command(BaseCommand):
    help = "Import benchmark data. Formats: " + "; ".join(f"{i.name}: {i.description}" for i in IMPORTERS.values())

    def add_arguments(self, parser):
        parser.add_argument("format", choices=sorted(IMPORTERS))
        parser.add_argument("path")

    def handle(self, *args, format: str, path: str, **options):
        try:
            result = run_import(format, path)
        except ImportFailed as exc:
            raise CommandError(f"import failed, nothing was stored: {exc}") from None
        self.stdout.write(result.summary() or "nothing to import")
