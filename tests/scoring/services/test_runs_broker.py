"""Runs whose jobs cannot be sent (broker down or silent), and recovery of their jobs."""

import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from core.jobs import jobs_recover
from core.models import WorkerHeartbeat
from scoring.models import EvaluationRun, RunJob
from scoring.services.runs import BrokerUnavailable, run_cancel, run_create, run_resume, run_start
from tests.api.conftest import client_for
from tests.annotation_factories import curator
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.support.workers import worker_environment

ROOT = Path(settings.BASE_DIR)
Job = RunJob.Status


class Broker:
    """``execute_job.delay`` as a broker that is down until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False
        self.sent: list[int] = []

    def delay(self, job_id: int) -> None:
        if not self.up:
            raise KombuOperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        self.sent.append(job_id)


@pytest.fixture
def broker(monkeypatch) -> Broker:
    broker = Broker()
    monkeypatch.setattr("scoring.tasks.execute_job.delay", broker.delay)
    monkeypatch.setattr("scoring.tasks.finalize_run.delay", lambda run_id: None)
    return broker


@pytest.fixture
def data():
    checklists = [two_group_checklist(), two_group_checklist()]
    a, b = systems(2)
    for checklist in checklists:
        reports_for(checklist.task, [a, b])
    return {"tasks": [cl.task for cl in checklists], "systems": [a, b], "config": judge_config()}


def create(data) -> EvaluationRun:
    return run_create(protocol="deepsynth", judge_config=data["config"], systems=data["systems"], tasks=data["tasks"])


@pytest.mark.django_db
def test_a_run_started_while_the_broker_is_down_is_kept_and_recovery_sends_its_jobs(
        data, broker, django_capture_on_commit_callbacks):
    run = create(data)
    with pytest.raises(BrokerUnavailable, match=r"cannot be reached .*Connection refused.*the run is saved"):
        with django_capture_on_commit_callbacks(execute=True):
            run_start(run=run)
    run.refresh_from_db()
    assert (run.status, run.jobs_unsent) == ("running", True)
    assert run.jobs.filter(status=Job.PENDING).count() == 4

    with django_capture_on_commit_callbacks(execute=True):  # a recovery while the broker is still down
        assert jobs_recover()["runjob_redelivered"] == 4
    run.refresh_from_db()
    assert run.jobs_unsent and broker.sent == []

    broker.up = True
    with django_capture_on_commit_callbacks(execute=True):
        counts = jobs_recover()
    assert (counts["runjob_requeued"], counts["runjob_redelivered"], counts["runs_finalized"]) == (0, 4, 0)
    run.refresh_from_db()
    assert not run.jobs_unsent
    assert sorted(broker.sent) == sorted(run.jobs.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_recover()["runjob_redelivered"] == 0  # sent once: not again at every recovery


@pytest.mark.django_db
def test_a_resume_while_the_broker_is_down_is_kept_for_recovery(data, broker, django_capture_on_commit_callbacks):
    broker.up = True
    run = create(data)
    with django_capture_on_commit_callbacks(execute=True):
        run_start(run=run)
    run_cancel(run=run)
    broker.up, broker.sent = False, []
    with pytest.raises(BrokerUnavailable, match=rf"broker at {settings.CELERY_BROKER_URL}"):
        with django_capture_on_commit_callbacks(execute=True):
            run_resume(run=run)
    run.refresh_from_db()
    assert (run.status, run.jobs_unsent, run.jobs.filter(status=Job.PENDING).count()) == ("running", True, 4)


@pytest.mark.django_db(transaction=True)  # the commit, and with it the send, happens inside the request
def test_the_api_answers_a_json_503_naming_the_saved_run(data, broker):
    run = create(data)
    response = client_for(curator()).post(f"/api/runs/{run.pk}/start/")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["runs"] == [run.pk]
    assert "cannot be reached" in body["detail"]
    run.refresh_from_db()
    assert (run.status, run.jobs_unsent) == ("running", True)


@pytest.mark.django_db
def test_recovery_takes_the_jobs_of_lost_and_silent_workers_only(data, broker, django_capture_on_commit_callbacks):
    broker.up = True
    run = run_start(run=create(data), enqueue=False)
    now = timezone.now()
    for hostname, age in (("alive@host", 0), ("silent@host", 3600), ("restarted@host", 0)):
        WorkerHeartbeat.objects.create(hostname=hostname, pid=1, started_at=now, last_seen=now - timedelta(seconds=age))
    jobs = dict(zip(["alive@host", "silent@host", "restarted@host", ""], run.jobs.order_by("pk")))
    for hostname, job in jobs.items():
        RunJob.objects.filter(pk=job.pk).update(status=Job.RUNNING, worker=hostname)

    with django_capture_on_commit_callbacks(execute=True):
        counts = jobs_recover(lost=["restarted@host"])

    assert counts["runjob_requeued"] == 2
    assert sorted(broker.sent) == sorted([jobs["silent@host"].pk, jobs["restarted@host"].pk])
    statuses = dict(RunJob.objects.filter(run=run).values_list("pk", "status"))
    assert [statuses[job.pk] for job in jobs.values()] == [Job.RUNNING, Job.PENDING, Job.PENDING, Job.RUNNING]
    assert RunJob.objects.get(pk=jobs["silent@host"].pk).worker == ""


@pytest.mark.django_db
def test_an_executed_job_records_the_worker_that_claimed_it(data, broker):
    from scoring.services.runs import job_execute
    from tests.scoring.services.fakes import ScriptedJudge

    run = run_start(run=create(data), enqueue=False)
    job = run.jobs.order_by("pk").first()
    assert job_execute(job_id=job.pk, judge=ScriptedJudge(data["config"]), enqueue=False, worker="w1@host") == "done"
    assert RunJob.objects.get(pk=job.pk).worker == "w1@host"


# --- the command line against a real broker that refuses or never answers ------------------


def _refusing_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again: connections are refused


class SilentBroker(threading.Thread):
    """Accepts TCP connections and never answers."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []

    def run(self) -> None:
        while True:
            try:
                self.accepted.append(self.listener.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()
        for peer in self.accepted:
            peer.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("scheme", ["redis", "amqp"])
@pytest.mark.parametrize("fault", ["refusing", "silent"])
def test_evaluate_says_the_broker_cannot_be_reached_within_seconds(data, tmp_path, scheme, fault):
    silent = None
    if fault == "silent":
        silent = SilentBroker()
        silent.start()
        port = silent.port
    else:
        port = _refusing_port()
    url = f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"amqp://guest:hidden@127.0.0.1:{port}//"
    env = {**worker_environment(tmp_path), "CELERY_BROKER_URL": url}
    started = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "manage.py", "evaluate", "--protocol", "deepsynth", "--judge", data["config"].name,
             "--systems", "sys-a,sys-b", "--tasks", ",".join(t.key for t in data["tasks"])],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )
    finally:
        if silent is not None:
            silent.close()
    elapsed = time.monotonic() - started
    run = EvaluationRun.objects.get()
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"run #{run.pk}: the task queue (broker at" in result.stderr
    assert "Traceback" not in result.stderr and "hidden" not in result.stderr
    assert elapsed < 15, elapsed  # the process starts Django too; the broker part is ~2 × BROKER_TIMEOUT
    assert (run.status, run.jobs_unsent, run.jobs.filter(status=Job.PENDING).count()) == ("running", True, 4)
