from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from . import converters  # noqa: F401  (registers <id:> before any app's routes are resolved)
        from . import worker_process  # noqa: F401  (connects the heartbeat to Celery's signals)
        from .bounded import digits_only_model_serializers

        digits_only_model_serializers()  # "٣" is not 3 in any API
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from .tokens import tokens_revoke_on_password_change

        pre_save.connect(tokens_revoke_on_password_change, sender=get_user_model(),
                         dispatch_uid="core.tokens_revoke_on_password_change")
