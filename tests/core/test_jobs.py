"""One claim and one recovery for every job kind: evaluation jobs, proposal batches, export and
import jobs. A dead worker's jobs go back to the queue; a live worker's and a command's stay."""

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.utils import timezone

from annotation.models import ExportJob
from benchmark.models import ImportJob
from django.db import transaction

from core.jobs import job_claim, job_release, jobs_enqueue_on_commit, jobs_executing_touch, jobs_recover
from core.models import WorkerHeartbeat
from scoring.models import ProposalBatch
from tests.annotation_factories import JudgeConfigFactory
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def beat(hostname: str, age_seconds: float) -> None:
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname=hostname, pid=1, started_at=now - timedelta(hours=1),
                                   last_seen=now - timedelta(seconds=age_seconds))


def requeued(counts: dict) -> dict:
    return {key: n for key, n in counts.items() if key.endswith("_requeued") and not key.startswith("runjob")}


@pytest.fixture
def enqueued(monkeypatch) -> list:
    sent = []
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", lambda pk: sent.append(("batch", pk)))
    monkeypatch.setattr("annotation.tasks.run_export.delay", lambda pk: sent.append(("export", pk)))
    monkeypatch.setattr("benchmark.tasks.run_import_job.delay", lambda pk: sent.append(("import", pk)))
    return sent


def test_a_job_is_claimed_once_from_queued_and_released_back_to_it():
    job = ExportJob.objects.create(kind="taskset", requested_by=UserFactory())
    assert job_claim(ExportJob, job.pk, worker="w1@host", error="")
    assert not job_claim(ExportJob, job.pk, worker="w2@host")  # a second message runs nothing
    job.refresh_from_db()
    assert (job.status, job.worker, job.started_at is not None) == ("running", "w1@host", True)
    job_release(ExportJob, job.pk)
    job.refresh_from_db()
    assert (job.status, job.worker) == ("queued", "")
    assert job_claim(ExportJob, job.pk, worker="w2@host")


def test_work_of_a_dead_worker_is_requeued_and_work_of_a_live_one_or_a_command_is_not(
        django_capture_on_commit_callbacks, enqueued):
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

    with django_capture_on_commit_callbacks(execute=True):
        counts = jobs_recover(lost=[])

    assert requeued(counts) == {"proposalbatch_requeued": 2, "exportjob_requeued": 1, "importjob_requeued": 1}
    assert sorted(enqueued) == sorted([("batch", batches["dead@host"].pk), ("batch", batches["gone@host"].pk),
                                       ("export", exports["dead@host"].pk), ("import", imports["dead@host"].pk)])
    assert [ImportJob.objects.get(pk=job.pk).status for job in imports.values()] == ["running", "queued"]
    statuses = {w: b.status for w, b in ((w, ProposalBatch.objects.get(pk=b.pk)) for w, b in batches.items())}
    assert statuses == {"alive@host": "running", "dead@host": "pending", "gone@host": "pending", "": "running"}
    assert ExportJob.objects.get(pk=exports["dead@host"].pk).status == "queued"
    assert ExportJob.objects.get(pk=exports["alive@host"].pk).status == "running"
    assert ProposalBatch.objects.get(pk=finished.pk).status == "finished"
    assert requeued(jobs_recover(lost=[])) == {"proposalbatch_requeued": 0, "exportjob_requeued": 0,
                                               "importjob_requeued": 0}


def test_a_lost_worker_requeues_its_work_even_under_a_name_alive_again(django_capture_on_commit_callbacks, enqueued):
    beat("restarted@host", 1)  # the new worker of the name already beats
    user = UserFactory()
    export = ExportJob.objects.create(kind="taskset", requested_by=user, status="running", worker="restarted@host")
    waiting_export = ExportJob.objects.create(kind="taskset", requested_by=user, status="queued")
    waiting_batch = ProposalBatch.objects.create(judge_config=JudgeConfigFactory(), status="pending")
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_recover(lost=[])["exportjob_requeued"] == 0  # alive, as far as anyone knows
    assert enqueued == []  # and nothing waiting is sent twice while no worker is lost
    with django_capture_on_commit_callbacks(execute=True):
        counts = jobs_recover(lost=["restarted@host"])
    # its running export goes back to the queue; what waits in it is sent again (its message may be gone)
    assert (counts["exportjob_requeued"], counts["exportjob_redelivered"], counts["proposalbatch_redelivered"]) == (1, 1, 1)
    assert sorted(enqueued) == sorted([("export", export.pk), ("export", waiting_export.pk),
                                       ("batch", waiting_batch.pk)])
    assert ExportJob.objects.get(pk=export.pk).status == "queued"
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        jobs_recover(lost=[], redeliver_waiting=True)  # a worker starts: what waits is sent again
    assert sorted(enqueued) == sorted([("export", export.pk), ("export", waiting_export.pk),
                                       ("batch", waiting_batch.pk)])


def test_stale_heartbeats_are_taken_as_lost_by_recovery_once(django_capture_on_commit_callbacks, enqueued):
    beat("killed@host", 3600)
    export = ExportJob.objects.create(kind="taskset", requested_by=UserFactory(), status="running", worker="killed@host")
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_recover()["exportjob_requeued"] == 1
    assert enqueued == [("export", export.pk)]
    assert not WorkerHeartbeat.objects.exists()


def test_a_live_workers_job_it_no_longer_executes_is_recovered_and_one_it_executes_is_not(
        django_capture_on_commit_callbacks, enqueued):
    beat("alive@host", 1)
    user = UserFactory()
    stale = timezone.now() - timedelta(seconds=3 * settings.WORKER_HEARTBEAT_SECONDS + 1)
    executing, abandoned, others = (
        ExportJob.objects.create(kind="taskset", requested_by=user, status="running", worker=w) for w in
        ("alive@host", "alive@host", "other@host"))
    ExportJob.objects.filter(pk__in=[executing.pk, abandoned.pk, others.pk]).update(updated_at=stale)

    # the worker's heartbeat names the tasks it executes: only its own running rows are touched
    jobs_executing_touch(hostname="alive@host", executing=[("benchmark.run_export", executing.pk),
                                                           ("benchmark.run_export", others.pk),
                                                           ("scoring.finalize_run", abandoned.pk)])
    assert ExportJob.objects.get(pk=others.pk).updated_at == stale
    with django_capture_on_commit_callbacks(execute=True):
        counts = jobs_recover(lost=[])
    assert counts["exportjob_requeued"] == 2  # abandoned, and the one of a worker with no heartbeat
    assert sorted(enqueued) == sorted([("export", abandoned.pk), ("export", others.pk)])
    assert ExportJob.objects.get(pk=executing.pk).status == "running"


class Task:
    """A Celery task whose broker takes ``up_to`` messages, then refuses."""

    name = "tests.task"

    def __init__(self, up_to: int = 1000) -> None:
        self.sent: list[int] = []
        self.up_to = up_to

    def delay(self, job_id: int) -> None:
        if len(self.sent) >= self.up_to:
            raise ConnectionRefusedError("connection refused")
        self.sent.append(job_id)


def test_jobs_are_sent_once_committed_and_never_for_a_change_that_rolled_back(django_capture_on_commit_callbacks):
    task, outcome = Task(), SimpleNamespace(sent=0, unsent=[])
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            jobs_enqueue_on_commit(task, [3, 1], unsent=outcome.unsent.append,
                                   sent=lambda: setattr(outcome, "sent", outcome.sent + 1))
            assert task.sent == []  # not before the commit
    assert (task.sent, outcome.sent, outcome.unsent) == ([3, 1], 1, [])

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        try:
            with transaction.atomic():
                jobs_enqueue_on_commit(task, [7])
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
    assert callbacks == [] and task.sent == [3, 1]


def test_a_message_the_broker_refuses_is_handed_to_unsent_and_sent_is_not_called(django_capture_on_commit_callbacks):
    task, unsent, sent = Task(up_to=1), [], []
    with django_capture_on_commit_callbacks(execute=True):
        jobs_enqueue_on_commit(task, [1, 2], unsent=unsent.append, sent=lambda: sent.append(True))
    assert task.sent == [1] and sent == []
    assert [type(exc) for exc in unsent] == [ConnectionRefusedError]
    with django_capture_on_commit_callbacks(execute=True):  # no unsent: logged, left to recovery
        jobs_enqueue_on_commit(Task(up_to=0), [5])

