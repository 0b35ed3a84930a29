"""Celery tasks of the annotation app: each takes ids, loads, calls one service, handles retry.

``run_export`` is enqueued per export job by ``annotation.services.exports.export_request``
(its Celery name, ``benchmark.run_export``, predates the move: messages queued before it still
run). ``refresh_project_agreement`` computes and stores a project's inter-annotator agreement
figures when a dashboard read found them older than the labels (``services.agreement``),
``refresh_human_ranking`` and ``refresh_judge_agreement`` a stored scope's human ranking or
judge-vs-people figures when a read found them older than their inputs (the same mechanism);
``refresh_calibrated_scores`` a run's calibrated scores when a read found none for its inputs
(``calibration.stored``).
Webhook deliveries are sent by ``core.deliver_webhook``; ``annotation.deliver_webhook`` only
hands over the messages queued under its name before.
"""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from core.tasks import deliver_webhook

from .models import ExportJob, WebhookDelivery
from .services.exports import export_execute


@shared_task(name="annotation.deliver_webhook")
def deliver_webhook_queued_before_core(delivery_id: int) -> None:
    deliver_webhook.delay(WebhookDelivery._meta.label_lower, delivery_id)


@shared_task(name="annotation.refresh_project_agreement", acks_late=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2, max_retries=5)
def refresh_project_agreement(project_id: int) -> str:
    from .services.agreement import project_agreement_refresh

    return "refreshed" if project_agreement_refresh(project_id=project_id) is not None else "missing"


@shared_task(name="annotation.refresh_human_ranking", acks_late=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2, max_retries=5)
def refresh_human_ranking(scope: str) -> str:
    from .models import ProjectStatistics

    return _scope_refresh(ProjectStatistics.Kind.HUMAN_RANKING, scope)


@shared_task(name="annotation.refresh_judge_agreement", acks_late=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2, max_retries=5)
def refresh_judge_agreement(scope: str) -> str:
    from .models import ProjectStatistics

    return _scope_refresh(ProjectStatistics.Kind.JUDGE_AGREEMENT, scope)


def _scope_refresh(kind: str, scope: str) -> str:
    """A stored scope's figures computed and stored (``services.agreement``), or "missing"."""
    from .services.agreement import scope_statistics_refresh

    return "refreshed" if scope_statistics_refresh(kind=kind, scope=scope) is not None else "missing"


@shared_task(name="annotation.refresh_calibrated_scores", acks_late=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2, max_retries=5)
def refresh_calibrated_scores(row_id: int) -> str:
    from .calibration.stored import calibrated_scores_refresh

    return "refreshed" if calibrated_scores_refresh(row_id=row_id) else "missing"


@shared_task(
    name="benchmark.run_export", bind=True, acks_late=True, autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2, retry_backoff_max=60, retry_jitter=True, max_retries=8,
)
def run_export(self, job_id: int) -> str:
    try:
        return export_execute(job_id=job_id, worker=self.request.hostname or "").status
    except ExportJob.DoesNotExist:
        return "missing"  # deleted (cancelled) before a worker got to it
