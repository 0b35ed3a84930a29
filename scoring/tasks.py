"""Celery tasks of the scoring app: each takes ids, loads, calls one service, handles retry.

``execute_job`` is enqueued per job by ``scoring.services.runs`` after the transaction
commits (and by recovery, ``core.jobs``); ``finalize_run`` by the job that settles a run's
last one; ``propose_batch`` per proposal batch; ``poll_batches`` by recovery while some batch-mode
run has batch work, and when a run's jobs all wait for their batch (``scoring.services.batches``).
"""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .models import EvaluationRun
from .services.proposals import proposal_batch_execute
from .services.run_finish import run_finalize
from .services.runs import job_execute

RETRY = dict(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),  # transient database errors
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=8,
)


@shared_task(name="scoring.execute_job", bind=True, **RETRY)
def execute_job(self, job_id: int) -> str:
    return job_execute(job_id=job_id, worker=self.request.hostname or "")


@shared_task(name="scoring.finalize_run", **RETRY)
def finalize_run(run_id: int) -> str:
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None:
        return "missing"
    return run_finalize(run=run).status


@shared_task(name="scoring.propose_batch", bind=True, **RETRY)
def propose_batch(self, batch_id: int) -> str:
    return proposal_batch_execute(batch_id=batch_id, worker=self.request.hostname or "")


@shared_task(name="scoring.poll_batches", **RETRY)
def poll_batches(run_id: int | None = None) -> dict:
    """One look at the batches of a run (or of every run with batch work); never sleeps waiting."""
    # Imported here: this module is loaded by every web process (it enqueues), and the batch service
    # imports the openai client, which only a worker polling batches needs.
    from .services.batches import batches_poll

    return batches_poll(run_id=run_id)
