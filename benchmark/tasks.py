"""Celery tasks of the benchmark app: each takes ids, loads, calls one service, handles retry.

``run_import_job`` is enqueued per import job by ``benchmark.services.imports.import_request``, after the
transaction commits. Only transient database errors are retried; any other failure
is recorded on the job with its reason by the service.
"""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .models import ImportJob
from .services.imports import import_execute


@shared_task(
    name="benchmark.run_import", bind=True, acks_late=True, autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2, retry_backoff_max=60, retry_jitter=True, max_retries=8,
)
def run_import_job(self, job_id: int) -> str:
    try:
        return import_execute(job_id=job_id, worker=self.request.hostname or "").status
    except ImportJob.DoesNotExist:
        return "missing"
