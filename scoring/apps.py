from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from . import worker_signals  # noqa: F401  (connects the heartbeat to Celery's signals)
