from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmark.importers.base import ImportFailed
from benchmark.services.demo import demo_load


class Command(BaseCommand):
    help = "Load the demo tasks, reports and preferences from the real public datasets (idempotent; no accounts)."

    def add_arguments(self, parser):
        parser.add_argument("--shared-dir", default=str(settings.SHARED_DIR),
                            help="folder holding datasets/ (default: SHARED_DIR)")
        parser.add_argument("--messages", action="store_true", help="list every data-quality message")

    def handle(self, *args, shared_dir: str, messages: bool, **options):
        try:
            result = demo_load(shared_dir=shared_dir)
        except ImportFailed as exc:
            raise CommandError(f"demo load failed, nothing was stored: {exc}") from None
        for kind, outcomes in sorted(result.counts.items()):
            self.stdout.write(f"{kind}: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items())))
        if messages:
            self.stdout.write("\n".join(result.messages))
        elif result.messages:
            self.stdout.write(f"{len(result.messages)} data-quality messages (--messages lists them)")
