import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from core.models import WorkerHeartbeat
from core.workers import live_workers, worker_heartbeat_beat
from tests.support.workers import worker_environment

ROOT = Path(settings.BASE_DIR)


@pytest.mark.django_db
def test_healthz_reports_database_and_no_worker(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"] == {"ok": True, "vendor": "postgresql"}
    assert body["workers"]["alive"] == 0
    assert body["broker"]["ok"] is True and body["broker"]["url"].startswith("filesystem://")
    assert body["status"] == "degraded"


@pytest.mark.django_db
def test_stale_heartbeats_do_not_count_as_alive(client):
    now = timezone.now()
    worker_heartbeat_beat(hostname="fresh@host", pid=1, started_at=now)
    WorkerHeartbeat.objects.create(
        hostname="dead@host", pid=2, started_at=now, last_seen=now - timedelta(seconds=10 * settings.WORKER_HEARTBEAT_SECONDS)
    )
    assert [w.hostname for w in live_workers()] == ["fresh@host"]
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["workers"]["hosts"][0]["hostname"] == "fresh@host"


@pytest.mark.django_db
def test_pages_warn_when_no_worker_is_alive(client):
    from tests.factories import UserFactory

    client.force_login(UserFactory())
    assert b'id="worker-banner"' in client.get("/").content
    worker_heartbeat_beat(hostname="w@h", pid=1, started_at=timezone.now())
    assert b'id="worker-banner"' not in client.get("/").content


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_celery_worker_process_reports_its_heartbeat(client, tmp_path):
    env = worker_environment(tmp_path)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--hostname=probe@test", "--loglevel=WARNING"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not WorkerHeartbeat.objects.filter(hostname="probe@test").exists():
            assert worker.poll() is None, worker.stdout.read()
            time.sleep(0.3)
        assert client.get("/healthz").json()["workers"]["alive"] == 1
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    assert worker.returncode == 0, output
    # a clean shutdown removes the heartbeat, so the UI says at once that no worker runs
    assert not WorkerHeartbeat.objects.filter(hostname="probe@test").exists()
