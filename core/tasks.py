"""Celery tasks of core: each takes ids, loads, calls one service, handles retry.

``recover_jobs`` is enqueued by every worker as it starts (``core.worker_process``), so the jobs
a killed worker left behind run again and the waiting ones are sent again (their messages may
have been lost with a worker). ``deliver_webhook`` is enqueued per delivery once the transaction
that created it commits (``core.webhooks.webhook_deliveries_enqueue``); a failed attempt is
retried with exponential backoff and jitter until ``MAX_ATTEMPTS`` (counted on the row, so
redeliveries after a worker crash count too), after which the delivery is failed.
"""

from celery import shared_task
from django.apps import apps
from django.db import InterfaceError, OperationalError

from .jobs import jobs_recover
from .webhooks import MAX_ATTEMPTS, webhook_backoff, webhook_deliver

TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)


@shared_task(name="core.recover_jobs", autoretry_for=TRANSIENT_DB_ERRORS, retry_backoff=2, retry_backoff_max=60,
             retry_jitter=True, max_retries=8)
def recover_jobs(worker_started: bool = False) -> dict:
    return jobs_recover(redeliver_waiting=worker_started)


@shared_task(
    name="core.deliver_webhook", bind=True, acks_late=True,
    autoretry_for=TRANSIENT_DB_ERRORS, retry_backoff=2, retry_backoff_max=60, retry_jitter=True,
    max_retries=MAX_ATTEMPTS + 2,  # the row's attempts end the retries first; this also bounds database retries
)
def deliver_webhook(self, model_label: str, delivery_id: int) -> str:
    """``model_label``: the delivery model (``annotation.webhookdelivery``), a subclass of ``WebhookDeliveryBase``."""
    model = apps.get_model(model_label)
    if not model.objects.filter(pk=delivery_id).exists():
        return "missing"
    delivery = webhook_deliver(model=model, delivery_id=delivery_id)
    if delivery.status == model.Status.PENDING:
        raise self.retry(countdown=webhook_backoff(attempts=delivery.attempts))
    return delivery.status
