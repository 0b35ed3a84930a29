"""Outgoing webhooks: a project's subscriptions (``Webhook``) and one row per event to tell a
receiver about (``WebhookDelivery``).

A delivery is created in the same transaction as the change it reports (so a rolled-back
change leaves no delivery) and POSTed by the ``core.deliver_webhook`` Celery task after
commit; see ``core.webhooks`` for the body, headers, signature and retries.
"""

import secrets

from django.core.exceptions import ValidationError
from django.db import models

from benchmark.models import TimeStamped
from core.models import WebhookDeliveryBase
from core.outbound import outbound_url_validator

from .workspace import AnnotationProject


class WebhookEvent(models.TextChoices):
    RUN_FINISHED = "run.finished", "An evaluation run finished"
    TASK_CURATED = "task.curated", "A task was curated"


def webhook_secret_new() -> str:
    """A fresh signing secret (64 hex characters)."""
    return secrets.token_hex(32)


class Webhook(TimeStamped):
    """A receiver URL subscribed to some events of one project, signed with ``secret``."""

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="webhooks")
    # The address rule of core.outbound when saved, and again at each delivery (a name may move).
    url = models.URLField(max_length=500, validators=[outbound_url_validator])
    secret = models.CharField(max_length=200, default=webhook_secret_new, help_text="HMAC-SHA256 signing key")
    events = models.JSONField(default=list, help_text=f"any of: {', '.join(WebhookEvent.values)}")
    active = models.BooleanField(default=True, db_index=True)

    class Meta:
        ordering = ["project", "id"]

    def __str__(self) -> str:
        return f"{self.url} ({self.project_id})"

    def clean(self) -> None:
        if not isinstance(self.events, list) or not self.events:
            raise ValidationError({"events": f"a non-empty list of: {', '.join(WebhookEvent.values)}"})
        unknown = [event for event in self.events if event not in WebhookEvent.values]
        if unknown:
            raise ValidationError({"events": f"unknown events {unknown}; use {', '.join(WebhookEvent.values)}"})


class WebhookDelivery(WebhookDeliveryBase):
    """One event for one webhook of a project (the attempts and their outcome: ``WebhookDeliveryBase``)."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event} #{self.pk} → {self.webhook_id} ({self.status})"

    def receiver(self) -> tuple[str, str, bool]:
        return self.webhook.url, self.webhook.secret, self.webhook.active
