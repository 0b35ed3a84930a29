"""Proposal batches, export and import jobs that a dead worker left running go back to the queue."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import ExportJob
from benchmark.models import ImportJob
from scoring.models import ProposalBatch, WorkerHeartbeat
from scoring.services.recovery import work_of_dead_workers_requeue
from scoring.workers import lost_workers_take, recover_orphaned_work
from tests.annotation_factories import JudgeConfigFactory
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def beat(hostname: str, age_seconds: float) -> None:
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname=hostname, pid=1, started_at=now - timedelta(hours=1),
                                   last_seen=now - timedelta(seconds=age_seconds))


def test_work_of_a_dead_worker_is_requeued_and_work_of_a_live_one_or_a_command_is_not(
        django_capture_on_commit_callbacks, monkeypatch):
    beat("alive@host", 1)
    beat("dead@host", 3600)
    config, user = JudgeConfigFactory(), UserFactory()
    batches = {w: ProposalBatch.objects.create(judge_config=config, status="running", worker=w)
               for w in ("alive@host", "dead@host", "gone@host", "")}
    exports = {w: ExportJob.objects.create(kind="taskset", requested_by=user, status="running", worker=w)
               for w in ("alive@host", "dead@host", "")}
    imports = {w: ImportJob.objects.create(format="native", original_name="tasks.jsonl", requested_by=user,
                                           status="running", worker=w)
               for w in ("alive@host", "dead@host")}
    finished = ProposalBatch.objects.create(judge_config=config, status="finished", worker="dead@host")
    enqueued = []
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", lambda pk: enqueued.append(("batch", pk)))
    monkeypatch.setattr("annotation.tasks.run_export.delay", lambda pk: enqueued.append(("export", pk)))
    monkeypatch.setattr("benchmark.tasks.run_import_job.delay", lambda pk: enqueued.append(("import", pk)))

    with django_capture_on_commit_callbacks(execute=True):
        counts = work_of_dead_workers_requeue()

    assert counts == {"proposalbatch_requeued": 2, "exportjob_requeued": 1, "importjob_requeued": 1}
    assert sorted(enqueued) == sorted([("batch", batches["dead@host"].pk), ("batch", batches["gone@host"].pk),
                                       ("export", exports["dead@host"].pk), ("import", imports["dead@host"].pk)])
    assert [ImportJob.objects.get(pk=job.pk).status for job in imports.values()] == ["running", "queued"]
    statuses = {w: b.status for w, b in ((w, ProposalBatch.objects.get(pk=b.pk)) for w, b in batches.items())}
    assert statuses == {"alive@host": "running", "dead@host": "pending", "gone@host": "pending", "": "running"}
    assert ExportJob.objects.get(pk=exports["dead@host"].pk).status == "queued"
    assert ExportJob.objects.get(pk=exports["alive@host"].pk).status == "running"
    assert ProposalBatch.objects.get(pk=finished.pk).status == "finished"
    assert work_of_dead_workers_requeue() == {"proposalbatch_requeued": 0, "exportjob_requeued": 0,
                                              "importjob_requeued": 0}


def test_lost_workers_are_taken_once_stale_rows_and_a_starting_workers_predecessor(settings):
    settings.WORKER_HEARTBEAT_SECONDS = 10
    beat("alive@host", 1)
    beat("killed@host", 3600)
    beat("restarting@host", 1)  # killed a moment ago; a new worker of that name is starting
    assert lost_workers_take() == ["killed@host"]
    assert lost_workers_take() == []  # acted on once
    assert lost_workers_take(starting="restarting@host") == ["restarting@host"]
    assert list(WorkerHeartbeat.objects.values_list("hostname", flat=True)) == ["alive@host"]


def test_a_lost_worker_requeues_its_work_even_under_a_name_alive_again(django_capture_on_commit_callbacks,
                                                                       monkeypatch):
    beat("restarted@host", 1)  # the new worker of the name already beats
    user = UserFactory()
    export = ExportJob.objects.create(kind="taskset", requested_by=user, status="running", worker="restarted@host")
    waiting_export = ExportJob.objects.create(kind="taskset", requested_by=user, status="queued")
    waiting_batch = ProposalBatch.objects.create(judge_config=JudgeConfigFactory(), status="pending")
    enqueued, recovered = [], []
    monkeypatch.setattr("annotation.tasks.run_export.delay", lambda pk: enqueued.append(("export", pk)))
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", lambda pk: enqueued.append(("batch", pk)))
    monkeypatch.setattr("scoring.workers.jobs_recover", lambda **kw: recovered.append(kw) or {})
    with django_capture_on_commit_callbacks(execute=True):
        assert work_of_dead_workers_requeue()["exportjob_requeued"] == 0  # alive, as far as anyone knows
    assert enqueued == []  # and nothing waiting is sent twice while no worker is lost
    with django_capture_on_commit_callbacks(execute=True):
        recover_orphaned_work(lost=["restarted@host"])
    # its running export goes back to the queue; what waits in it is sent again (its message may be gone)
    assert sorted(enqueued) == sorted([("export", export.pk), ("export", waiting_export.pk),
                                       ("batch", waiting_batch.pk)])
    assert ExportJob.objects.get(pk=export.pk).status == "queued"
    assert recovered == [{"redeliver_pending": True, "lost": ["restarted@host"]}]
    with django_capture_on_commit_callbacks(execute=True):
        recover_orphaned_work()  # nothing lost: pending jobs are not sent again
    assert recovered[-1] == {"redeliver_pending": False, "lost": []}
    with django_capture_on_commit_callbacks(execute=True):
        recover_orphaned_work(redeliver_pending=True)  # a worker starts: they are
    assert recovered[-1] == {"redeliver_pending": True, "lost": []}

