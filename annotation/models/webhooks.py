"""Outgoing webhooks: a project's subscriptions (``Webhook``) and one row per attempt to tell a
receiver about an event (``WebhookDelivery``).

A delivery is created in the same transaction as the change it reports (so a rolled-back
change leaves no delivery) and POSTed by the ``annotation.deliver_webhook`` Celery task after
commit; see ``annotation.services.webhooks`` for the body, headers and signature.
"""

import secrets

from django.core.exceptions import ValidationError
from django.db import models

from benchmark.models import TimeStamped

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
    url = models.URLField(max_length=500)
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


class WebhookDelivery(models.Model):
    """One event for one webhook: pending until a 2xx answer (delivered) or the last attempt (failed)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event} #{self.pk} → {self.webhook_id} ({self.status})"
