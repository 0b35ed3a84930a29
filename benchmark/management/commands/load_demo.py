from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmark.importers.base import ImportFailed
from benchmark.services.demo import demo_load


class Command(BaseCommand):
    help = "Load the demo tasks, reports and preferences from the real public datasets (idempotent; no accounts)."

    def add_arguments(self, parser):
        parser.add_argument("--datasets-dir", default=str(settings.DATASETS_DIR),
                            help="the datasets folder (default: DATASETS_DIR, the repository's datasets/)")
        parser.add_argument("--messages", action="store_true", help="list every data-quality message")

    def handle(self, *args, datasets_dir: str, messages: bool, **options):
        try:
            result = demo_load(datasets_dir=datasets_dir)
        except ImportFailed as exc:
            raise CommandError(f"demo load failed, nothing was stored: {exc}") from None
        for kind, outcomes in sorted(result.counts.items()):
            self.stdout.write(f"{kind}: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items())))
        if messages:
            self.stdout.write("\n".join(result.messages))
        elif result.messages:
            self.stdout.write(f"{len(result.messages)} data-quality messages (--messages lists them)")
