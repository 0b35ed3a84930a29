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
from django.db import close_old_connections
from django.utils import timezone

from .models import WorkerHeartbeat
from .services.runs import jobs_recover


def live_workers() -> list[WorkerHeartbeat]:
    cutoff = timezone.now() - timedelta(seconds=3 * settings.WORKER_HEARTBEAT_SECONDS)
    return list(WorkerHeartbeat.objects.filter(last_seen__gte=cutoff).order_by("hostname"))


def recover_orphaned_work() -> dict[str, int]:
    """Everything dead workers left running: evaluation jobs, proposal batches, export jobs."""
    from .services.recovery import work_of_dead_workers_requeue  # imports live_workers from here

    return {**jobs_recover(), **work_of_dead_workers_requeue()}


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
        while not self.stopped.is_set():
            try:
                close_old_connections()
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
