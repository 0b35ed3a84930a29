"""Celery tasks of the annotation app: each takes ids, loads, calls one service, handles retry.

``run_export`` is enqueued per export job by ``annotation.services.exports.export_request``
(its Celery name, ``benchmark.run_export``, predates the move: messages queued before it still
run). ``refresh_project_agreement`` recomputes a project's cached agreement figures when the
dashboard found them stale. ``deliver_webhook`` is enqueued per delivery by ``annotation.services.webhooks.webhooks_fire``
after the transaction commits. A failed attempt is retried with exponential backoff and
jitter until the delivery's ``MAX_ATTEMPTS`` (counted on the row, so redeliveries after a
worker crash count too); the service then marks it failed.
"""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .models import ExportJob, WebhookDelivery
from .services.exports import export_execute
from .services.webhooks import MAX_ATTEMPTS, webhook_backoff, webhook_deliver


@shared_task(
    name="annotation.deliver_webhook", bind=True, acks_late=True,
    autoretry_for=(OperationalError, InterfaceError), retry_backoff=2, retry_backoff_max=60, retry_jitter=True,
    max_retries=MAX_ATTEMPTS + 2,  # the row's attempts end the retries first; this also bounds database retries
)
def deliver_webhook(self, delivery_id: int) -> str:
    delivery = WebhookDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None:
        return "missing"
    delivery = webhook_deliver(delivery_id=delivery_id)
    if delivery.status == WebhookDelivery.Status.PENDING:
        raise self.retry(countdown=webhook_backoff(attempts=delivery.attempts))
    return delivery.status


@shared_task(name="annotation.refresh_project_agreement", acks_late=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2, max_retries=5)
def refresh_project_agreement(project_id: int) -> str:
    from .dashboards.agreement import project_agreement_refresh

    return "refreshed" if project_agreement_refresh(project_id=project_id) is not None else "missing"


@shared_task(
    name="benchmark.run_export", bind=True, acks_late=True, autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2, retry_backoff_max=60, retry_jitter=True, max_retries=8,
)
def run_export(self, job_id: int) -> str:
    try:
        return export_execute(job_id=job_id, worker=self.request.hostname or "").status
    except ExportJob.DoesNotExist:
        return "missing"  # deleted (cancelled) before a worker got to it
