"""Background jobs (``core.models.Job``: evaluation jobs, proposal batches, import and export jobs):
the kinds the apps register, how a job is claimed, and how the jobs a dead worker left are recovered.

Claim. ``job_claim`` turns a queued job running with one conditional UPDATE that records the
claiming Celery worker's hostname (empty in a command), so of two messages for one job one runs it.

Orphans. While a worker executes a job, its heartbeat thread touches the job's ``updated_at``
every beat (``jobs_executing_touch``, ``core.worker_process``). A running job is an orphan
(``orphaned``) when the worker that claimed it is dead (its heartbeat went stale, or it was lost:
killed and restarted under the same name) or when that worker lives but no longer executes it
(its ``updated_at`` went stale: the task ended without settling it, e.g. the database was away
when it tried to put the job back). A job claimed by a command (no worker) is left to the command.

Recovery. ``jobs_recover`` (a worker starts, and every ``JOB_RECOVERY_SECONDS`` in each worker)
puts every kind's orphans back in the queue and enqueues them again. When a worker started or
was lost, the waiting jobs are enqueued again too: the filesystem broker deletes a message when
it hands it out, so a lost worker may have taken theirs. A duplicate message runs nothing, as a
job is claimed only from queued. Each app registers its kinds when it is ready (``job_kind_register``).

Sending. Every kind sends its jobs with ``jobs_enqueue_on_commit``: after the commit, one message
per job id, and a message the broker did not take is recorded (``unsent``) or left to recovery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import Job
from .workers import heartbeat_cutoff, live_workers, lost_workers_take

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobKind:
    model: type[Job]
    task: Any  # Celery task that runs one job from its id: task.delay(job_id)
    scope: Q = Q()  # the jobs recovery looks at (evaluation jobs: those of running runs)
    unsent: Q | None = None  # waiting jobs to enqueue again at every recovery (their messages may not have gone out)
    enqueue: Callable[[list[int]], None] | None = None  # sends jobs once committed; default: jobs_enqueue_on_commit
    recovered: Callable[[], dict[str, int]] | None = None  # runs after its jobs are recovered


_KINDS: dict[str, JobKind] = {}


def job_kind_register(kind: JobKind) -> None:
    _KINDS[kind.model._meta.label_lower] = kind


def job_kinds() -> list[JobKind]:
    return list(_KINDS.values())


def jobs_enqueue_on_commit(
    task, job_ids: Iterable[int], *, unsent: Callable[[Exception], None] | None = None,
    sent: Callable[[], None] | None = None,
) -> None:
    """The one way every job kind sends its jobs: one ``task.delay(job_id)`` per job once the
    transaction that stored them commits, so a worker never reads a job that is not there yet
    (outside a transaction they are sent at once). The message is the job's id alone, which any
    broker carries: the embedded filesystem broker, Redis or RabbitMQ.

    A broker that cannot take a message leaves the job stored but not sent. ``unsent`` (given
    the exception) says so where the job's owner will see it: a failed job naming the reason,
    or a mark recovery reads (it may raise, for the caller to hear of it from the commit).
    Without it the failure is logged and recovery (``jobs_recover``) sends the job later.
    ``sent`` runs once every message went out."""
    job_ids = list(job_ids)
    if not job_ids:
        return

    def send() -> None:
        try:
            for job_id in job_ids:
                task.delay(job_id)
        except Exception as exc:  # any failure to publish means the job would wait silently
            logger.warning("could not send %s for %d job(s) (ids from %s): %s: %s", task.name, len(job_ids),
                           job_ids[0], type(exc).__name__, exc)
            if unsent is not None:
                unsent(exc)
            return
        if sent is not None:
            sent()

    transaction.on_commit(send)


def unsent_reason(exc: Exception) -> str:
    """What a job that could not be sent says about it (``jobs_enqueue_on_commit``'s ``unsent``)."""
    return f"could not reach the task queue: {exc}"


def job_claim(model: type[Job], job_id: int, *conditions, worker: str = "", **fields) -> bool:
    """Queued → running, atomically, recording ``worker``; False when the job is not queued (or
    ``conditions`` do not hold). ``fields``: more columns the kind sets when a job starts."""
    now = timezone.now()
    return bool(
        model.objects.filter(*conditions, pk=job_id, status=model.queued_status)
        .update(status=model.running_status, worker=worker, started_at=now, updated_at=now, **fields)
    )


def job_release(model: type[Job], job_id: int) -> None:
    """Running → queued, for the next delivery (transient database errors, a worker shutting down).
    If the database cannot be reached, the job stays running and recovery takes it once it is stale."""
    try:
        model.objects.filter(pk=job_id, status=model.running_status).update(
            status=model.queued_status, worker="", updated_at=timezone.now())
    except DatabaseError:
        logger.warning("could not put %s %s back in the queue; recovery will", model._meta.verbose_name, job_id)


def orphaned(running: QuerySet, *, lost: Sequence[str] = (), claimed_by_command: bool = False) -> QuerySet:
    """The jobs of ``running`` (running jobs) that no live worker executes. ``lost``: workers known
    to have died even where one of the same name beats again. ``claimed_by_command``: count jobs
    claimed outside a worker too (an explicit resume; recovery leaves them to their command)."""
    alive = [w.hostname for w in live_workers() if w.hostname not in lost]
    by_dead_worker = ~Q(worker="") & (~Q(worker__in=alive) | Q(updated_at__lt=heartbeat_cutoff()))
    return running.filter(by_dead_worker | Q(worker="") if claimed_by_command else by_dead_worker)


def jobs_executing_touch(*, hostname: str, executing: Iterable[tuple[str, Any]]) -> None:
    """Mark the jobs this worker executes now as alive. ``executing``: (task name, job id) pairs."""
    kinds = {kind.task.name: kind for kind in job_kinds()}
    ids: dict[str, list] = {}
    for task_name, job_id in executing:
        if task_name in kinds:
            ids.setdefault(task_name, []).append(job_id)
    now = timezone.now()
    for task_name, job_ids in ids.items():
        model = kinds[task_name].model
        model.objects.filter(pk__in=job_ids, status=model.running_status, worker=hostname).update(updated_at=now)


def jobs_recover(*, lost: Sequence[str] | None = None, redeliver_waiting: bool = False) -> dict[str, int]:
    """Every kind's orphans back to queued and enqueued again; the waiting jobs enqueued again
    when ``redeliver_waiting`` (a worker starts) or a worker was lost, else only those the kind
    says may be unsent. ``lost``: workers known to have died (default: ``lost_workers_take``)."""
    lost = lost_workers_take() if lost is None else list(lost)
    if lost:
        logger.warning("workers lost: %s", ", ".join(lost))
    counts: dict[str, int] = {}
    for kind in job_kinds():
        counts.update(_kind_recover(kind, lost=lost, redeliver=redeliver_waiting or bool(lost)))
    return counts


def _kind_recover(kind: JobKind, *, lost: Sequence[str], redeliver: bool) -> dict[str, int]:
    model, name = kind.model, kind.model._meta.model_name
    with transaction.atomic():
        running = model.objects.filter(kind.scope, status=model.running_status)
        orphans = sorted(orphaned(running, lost=lost).select_for_update(skip_locked=True, of=("self",))
                         .values_list("pk", flat=True))
        model.objects.filter(pk__in=orphans, status=model.running_status).update(
            status=model.queued_status, worker="", updated_at=timezone.now())
        waiting_filter = Q() if redeliver else kind.unsent
        waiting = [] if waiting_filter is None else sorted(
            model.objects.filter(kind.scope, waiting_filter, status=model.queued_status)
            .exclude(pk__in=orphans).values_list("pk", flat=True))
        if orphans or waiting:
            if kind.enqueue is not None:
                kind.enqueue(orphans + waiting)
            else:
                jobs_enqueue_on_commit(kind.task, orphans + waiting)  # unsent: logged, stays queued for a later recovery
    if orphans or waiting:
        logger.warning("re-queued %d %s(s) left running by a dead worker, enqueued %d waiting one(s) again",
                       len(orphans), model._meta.verbose_name, len(waiting))
    counts = {f"{name}_requeued": len(orphans), f"{name}_redelivered": len(waiting)}
    if kind.recovered is not None:
        counts.update(kind.recovered())
    return counts

