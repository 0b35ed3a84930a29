"""Celery tasks of core: ``recover_jobs`` is enqueued by every worker as it starts
(``core.worker_process``), so the jobs a killed worker left behind run again and the waiting
ones are sent again (their messages may have been lost with a worker)."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .jobs import jobs_recover


@shared_task(name="core.recover_jobs", autoretry_for=(OperationalError, InterfaceError), retry_backoff=2,
             retry_backoff_max=60, retry_jitter=True, max_retries=8)
def recover_jobs(worker_started: bool = False) -> dict:
    return jobs_recover(redeliver_waiting=worker_started)
