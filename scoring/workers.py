"""Which Celery workers are alive, as told by their heartbeat rows.

A worker writes its heartbeat from a background thread in its main process, so the
answer does not depend on the broker supporting broadcast (the filesystem broker does
not) and costs the web process one indexed query.
"""

import logging
import os
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from .models import WorkerHeartbeat
from .services.runs import jobs_recover


def live_workers() -> list[WorkerHeartbeat]:
    cutoff = timezone.now() - timedelta(seconds=3 * settings.WORKER_HEARTBEAT_SECONDS)
    return list(WorkerHeartbeat.objects.filter(last_seen__gte=cutoff).order_by("hostname"))


def lost_workers_take(*, starting: str = "") -> list[str]:
    """Workers that died without removing their heartbeat row (a clean stop removes it): rows
    gone stale and, when a worker named ``starting`` starts, the row its predecessor of that
    name left. The rows are deleted, so each loss is acted on once; of recoveries running at
    the same time, each row goes to one."""
    cutoff = timezone.now() - timedelta(seconds=3 * settings.WORKER_HEARTBEAT_SECONDS)
    with transaction.atomic():
        rows = WorkerHeartbeat.objects.select_for_update(skip_locked=True).filter(
            Q(last_seen__lt=cutoff) | Q(hostname=starting or None)
        )
        hostnames = list(rows.values_list("hostname", flat=True))
        WorkerHeartbeat.objects.filter(hostname__in=hostnames).delete()
    return hostnames


def recover_orphaned_work(*, lost: list[str] | None = None, redeliver_pending: bool = False) -> dict[str, int]:
    """Everything dead workers left behind: evaluation jobs, proposal batches, export jobs.

    ``lost``: workers known to have died (default: ``lost_workers_take``). A lost worker may
    also have taken messages of pending jobs it never started (the filesystem broker deletes a
    message when it hands it out), so pending evaluation jobs are then enqueued again too, as
    they are with ``redeliver_pending`` (a worker starts)."""
    from .services.recovery import work_of_dead_workers_requeue  # imports live_workers from here

    lost = lost_workers_take() if lost is None else lost
    if lost:
        logging.getLogger(__name__).warning("workers lost: %s", ", ".join(lost))
    return {**jobs_recover(redeliver_pending=redeliver_pending or bool(lost), lost=lost),
            **work_of_dead_workers_requeue(lost=lost)}


def worker_heartbeat_beat(*, hostname: str, pid: int, started_at) -> None:
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname, defaults={"pid": pid, "started_at": started_at, "last_seen": timezone.now()}
    )


def worker_heartbeat_remove(*, hostname: str) -> None:
    WorkerHeartbeat.objects.filter(hostname=hostname).delete()


class HeartbeatThread(threading.Thread):
    def __init__(self, hostname: str) -> None:
        super().__init__(name="studio-heartbeat", daemon=True)
        self.hostname = hostname
        self.pid = os.getpid()
        self.started_at = timezone.now()
        self.stopped = threading.Event()

    def run(self) -> None:
        # The worker recovers jobs as it starts; after that, every JOB_RECOVERY_SECONDS, so a job
        # whose process died while its worker lives on does not wait for the next worker start.
        next_recovery = time.monotonic() + settings.JOB_RECOVERY_SECONDS
        predecessor_checked = False
        while not self.stopped.is_set():
            try:
                close_old_connections()
                if not predecessor_checked:
                    # before the first beat overwrites it: a row under this name is a killed predecessor's
                    lost = lost_workers_take(starting=self.hostname)
                    predecessor_checked = True
                    if lost:
                        recover_orphaned_work(lost=lost)
                worker_heartbeat_beat(hostname=self.hostname, pid=self.pid, started_at=self.started_at)
                if time.monotonic() >= next_recovery:
                    next_recovery = time.monotonic() + settings.JOB_RECOVERY_SECONDS
                    recover_orphaned_work()
            except Exception:  # a missed beat must never kill the worker; the next one retries
                logging.getLogger(__name__).exception("heartbeat failed")
            self.stopped.wait(settings.WORKER_HEARTBEAT_SECONDS)

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)
        try:
            worker_heartbeat_remove(hostname=self.hostname)
        finally:
            close_old_connections()
