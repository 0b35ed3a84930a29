from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import WorkerHeartbeat
from core.workers import live_workers, lost_workers_take

pytestmark = pytest.mark.django_db


def beat(hostname: str, age_seconds: float) -> None:
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname=hostname, pid=1, started_at=now - timedelta(hours=1),
                                   last_seen=now - timedelta(seconds=age_seconds))


def test_lost_workers_are_taken_once_stale_rows_and_a_starting_workers_predecessor(settings):
    settings.WORKER_HEARTBEAT_SECONDS = 10
    beat("alive@host", 1)
    beat("killed@host", 3600)
    beat("restarting@host", 1)  # killed a moment ago; a new worker of that name is starting
    assert [w.hostname for w in live_workers()] == ["alive@host", "restarting@host"]
    assert lost_workers_take() == ["killed@host"]
    assert lost_workers_take() == []  # acted on once
    assert lost_workers_take(starting="restarting@host") == ["restarting@host"]
    assert list(WorkerHeartbeat.objects.values_list("hostname", flat=True)) == ["alive@host"]
