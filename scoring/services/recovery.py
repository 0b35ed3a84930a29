"""Re-queue the jobs of every registered kind (``core.jobs``: proposal batches, export and import
jobs) that a dead Celery worker left running (and, when
a worker was lost, enqueue the waiting ones again).

Evaluation jobs are recovered by ``scoring.services.runs.jobs_recover`` (advisory locks). A
proposal batch or an export job records the hostname of the worker that claimed it; when that
worker's heartbeat has gone stale (``scoring.workers.live_workers``), nothing runs it any more —
the filesystem broker deleted its message when handing it out — so it goes back to the queue.
Work claimed outside a worker (``propose --inline``) has no hostname and is left alone.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from core.jobs import job_kinds

from ..workers import live_workers

logger = logging.getLogger(__name__)


def work_of_dead_workers_requeue(*, lost: list[str] = ()) -> dict[str, int]:
    """Put orphaned batches and export jobs back to their queued state and enqueue them again.
    ``lost``: workers known to have died, whose work is orphaned even where a new worker of the
    same name is alive now; the queued batches and exports are then enqueued again as well, as
    a lost worker may have taken their messages (each is claimed only from queued, so a second
    message runs nothing)."""
    alive = [w.hostname for w in live_workers() if w.hostname not in lost]
    requeued = {}
    for kind in job_kinds():  # proposal batches, export and import jobs (``core.jobs``)
        model, running, queued, task = kind.model, kind.running, kind.queued, kind.task
        with transaction.atomic():
            orphans = list(
                model.objects.select_for_update(skip_locked=True)
                .filter(status=running).exclude(worker="").exclude(worker__in=alive)
                .values_list("pk", flat=True)
            )
            model.objects.filter(pk__in=orphans, status=running).update(
                status=queued, worker="", updated_at=timezone.now())
            waiting = (
                list(model.objects.filter(status=queued).exclude(pk__in=orphans).values_list("pk", flat=True))
                if lost else []
            )
            for pk in orphans + waiting:
                transaction.on_commit(lambda pk=pk, task=task: task.delay(pk))
        requeued[f"{model._meta.model_name}_requeued"] = len(orphans)
        if orphans or waiting:
            logger.warning("re-queued %d %s(s) left running by a dead worker, enqueued %d waiting one(s) again",
                           len(orphans), model._meta.verbose_name, len(waiting))
    return requeued
