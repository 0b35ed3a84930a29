from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from . import converters  # noqa: F401  (registers <id:> before any app's routes are resolved)
        from . import worker_process  # noqa: F401  (connects the heartbeat to Celery's signals)
