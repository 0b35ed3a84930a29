import time
from types import SimpleNamespace

import pytest
from celery.worker import state

from annotation.models import ExportJob
from core import worker_process
from core.models import WorkerHeartbeat
from tests.factories import UserFactory


def test_the_executing_tasks_are_read_from_celerys_active_requests(monkeypatch):
    requests = [SimpleNamespace(name="benchmark.run_export", args=(7,)), SimpleNamespace(name="core.recover_jobs", args=())]
    monkeypatch.setattr(state, "active_requests", requests)
    assert worker_process.executing_tasks() == [("benchmark.run_export", 7)]


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_recovers_jobs_periodically_not_only_at_start(settings, monkeypatch):
    settings.WORKER_HEARTBEAT_SECONDS = 0.02
    settings.JOB_RECOVERY_SECONDS = 0.1
    recoveries = []
    monkeypatch.setattr(worker_process, "jobs_recover", lambda **kw: recoveries.append(time.monotonic()))
    thread = worker_process.HeartbeatThread("recovering@test")
    started = time.monotonic()
    thread.start()
    deadline = time.monotonic() + 10
    while len(recoveries) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.stop()
    assert len(recoveries) >= 3
    # every 0.1 s or more, not at every 0.02 s beat; the first one is left to the start-up task
    gaps = [b - a for a, b in zip([started, *recoveries], recoveries)]
    assert min(gaps) >= 0.1
    assert not WorkerHeartbeat.objects.filter(hostname="recovering@test").exists()


@pytest.mark.django_db(transaction=True)
def test_a_slow_recovery_does_not_delay_the_beats(settings, monkeypatch):
    settings.WORKER_HEARTBEAT_SECONDS = 0.02
    settings.JOB_RECOVERY_SECONDS = 0.05
    recovering, beats = [], []
    monkeypatch.setattr(worker_process, "jobs_recover", lambda **kw: recovering.append(1) or time.sleep(1.0))
    monkeypatch.setattr(worker_process, "worker_heartbeat_beat", lambda **kw: beats.append(time.monotonic()))
    thread = worker_process.HeartbeatThread("slow-recovery@test")
    thread.start()
    deadline = time.monotonic() + 10
    while not recovering and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    time.sleep(0.6)  # inside the one-second recovery
    thread.stop()
    thread.recovery.join(5)
    assert len([b for b in beats if b > started]) >= 5
    assert len(recovering) == 1  # one recovery at a time


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_the_jobs_its_worker_executes_fresh(settings, monkeypatch):
    settings.WORKER_HEARTBEAT_SECONDS = 0.02
    job = ExportJob.objects.create(kind="taskset", requested_by=UserFactory(), status="running", worker="busy@test")
    before = job.updated_at
    monkeypatch.setattr(worker_process, "executing_tasks", lambda: [("benchmark.run_export", job.pk)])
    thread = worker_process.HeartbeatThread("busy@test")
    thread.start()
    deadline = time.monotonic() + 10
    while ExportJob.objects.get(pk=job.pk).updated_at == before and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.stop()
    assert ExportJob.objects.get(pk=job.pk).updated_at > before
