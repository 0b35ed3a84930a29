from django.core.management.base import BaseCommand

from scoring.models import JudgeConfig


class Command(BaseCommand):
    help = "Create the demo's judge configuration: the offline heuristic judge (idempotent)."

    def handle(self, *args, **options):
        config, created = JudgeConfig.objects.get_or_create(
            name="offline-heuristic",
            defaults={"backend": JudgeConfig.Backend.OFFLINE, "prompt_version": "v1", "max_concurrency": 2},
        )
        self.stdout.write(f"judge configuration {config} ({'created' if created else 'exists'})")
