"""Which Celery workers are alive, as told by their heartbeat rows, and which died.

A worker writes its heartbeat from a background thread in its main process
(``core.worker_process``), so the answer does not depend on the broker supporting broadcast
(the filesystem broker does not) and costs the web process one indexed query.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .models import WorkerHeartbeat


def heartbeat_cutoff():
    """Older than this, a heartbeat (or a running job's ``updated_at``, ``core.jobs``) is stale."""
    return timezone.now() - timedelta(seconds=3 * settings.WORKER_HEARTBEAT_SECONDS)


def live_workers() -> list[WorkerHeartbeat]:
    return list(WorkerHeartbeat.objects.filter(last_seen__gte=heartbeat_cutoff()).order_by("hostname"))


def lost_workers_take(*, starting: str = "") -> list[str]:
    """Workers that died without removing their heartbeat row (a clean stop removes it): rows
    gone stale and, when a worker named ``starting`` starts, the row its predecessor of that
    name left. The rows are deleted, so each loss is acted on once; of recoveries running at
    the same time, each row goes to one."""
    with transaction.atomic():
        rows = WorkerHeartbeat.objects.select_for_update(skip_locked=True).filter(
            Q(last_seen__lt=heartbeat_cutoff()) | Q(hostname=starting or None)
        )
        hostnames = list(rows.values_list("hostname", flat=True))
        WorkerHeartbeat.objects.filter(hostname__in=hostnames).delete()
    return hostnames


def worker_heartbeat_beat(*, hostname: str, pid: int, started_at) -> None:
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname, defaults={"pid": pid, "started_at": started_at, "last_seen": timezone.now()}
    )


def worker_heartbeat_remove(*, hostname: str) -> None:
    WorkerHeartbeat.objects.filter(hostname=hostname).delete()
