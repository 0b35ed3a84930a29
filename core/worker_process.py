"""What runs in a Celery worker's main process besides its tasks: the heartbeat thread, which
beats, tells the database which jobs the worker executes (``core.jobs``), and recovers the work
of dead workers; started and stopped with the worker (connected by ``CoreConfig.ready``)."""

import logging
import os
import threading
import time

from celery.signals import worker_ready, worker_shutdown
from celery.worker import state
from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from .jobs import jobs_executing_touch, jobs_recover
from .tasks import recover_jobs
from .workers import lost_workers_take, worker_heartbeat_beat, worker_heartbeat_remove

logger = logging.getLogger(__name__)


def executing_tasks() -> list[tuple[str, object]]:
    """(task name, first argument) of every task this worker executes now, whatever its pool:
    Celery's main process keeps the requests it handed to the pool until they end."""
    for _ in range(3):
        try:
            requests = list(state.active_requests)
            break
        except RuntimeError:  # the set changed while it was copied (a task started or ended)
            continue
    else:
        return []
    return [(request.name, request.args[0]) for request in requests if request.args]


class HeartbeatThread(threading.Thread):
    def __init__(self, hostname: str) -> None:
        super().__init__(name="studio-heartbeat", daemon=True)
        self.hostname = hostname
        self.pid = os.getpid()
        self.started_at = timezone.now()
        self.stopped = threading.Event()
        self.recovery: threading.Thread | None = None

    def run(self) -> None:
        # The worker recovers jobs as it starts; after that, every JOB_RECOVERY_SECONDS, so a job
        # whose task died while its worker lives on does not wait for the next worker start.
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
                        jobs_recover(lost=lost)
                worker_heartbeat_beat(hostname=self.hostname, pid=self.pid, started_at=self.started_at)
                jobs_executing_touch(hostname=self.hostname, executing=executing_tasks())
                if time.monotonic() >= next_recovery and not (self.recovery and self.recovery.is_alive()):
                    next_recovery = time.monotonic() + settings.JOB_RECOVERY_SECONDS
                    # on a thread of its own: a long recovery (finalizing a large run) must not delay
                    # the beats, or other workers would take this one's jobs for orphans
                    self.recovery = threading.Thread(target=self._recover, name="studio-recovery", daemon=True)
                    self.recovery.start()
            except Exception:  # a missed beat must never kill the worker; the next one retries
                logger.exception("heartbeat failed")
            self.stopped.wait(settings.WORKER_HEARTBEAT_SECONDS)

    def _recover(self) -> None:
        try:
            jobs_recover()
        except Exception:  # the next period tries again
            logger.exception("job recovery failed")
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)
        try:
            worker_heartbeat_remove(hostname=self.hostname)
        finally:
            close_old_connections()


_thread: HeartbeatThread | None = None


@worker_ready.connect
def start_heartbeat(sender=None, **kwargs) -> None:
    global _thread
    _thread = HeartbeatThread(getattr(sender, "hostname", None) or "worker")
    _thread.start()


@worker_ready.connect
def recover_on_worker_start(sender=None, **kwargs) -> None:
    recover_jobs.delay(worker_started=True)


@worker_shutdown.connect
def stop_heartbeat(**kwargs) -> None:
    if _thread is not None:
        _thread.stop()
