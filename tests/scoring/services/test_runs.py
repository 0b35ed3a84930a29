import threading
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.jobs import jobs_recover
from core.models import WorkerHeartbeat
from scoring.judges.base import JudgeAnswer
from scoring.models import EvaluationRun, RunJob, ScoreCard, Verdict
from scoring.selectors import run_progress, run_score_cards
from scoring.services import runs
from scoring.services.run_finish import run_finalize, run_rescore
from scoring.services.runs import job_execute, run_cancel, run_create, run_resume, run_start
from tests.factories import TaskFactory
from tests.scoring.services.fakes import ScriptedJudge, deepsynth_runs, judge_config, reports_for, systems, two_group_checklist

Job = RunJob.Status


@pytest.fixture
def setup():
    """Two tasks × two systems (4 reports); a third system without reports."""
    a, b, idle = systems(3)
    return {**deepsynth_runs([a, b]), "idle": idle}


def create(setup, **kw) -> EvaluationRun:
    return run_create(
        protocol="deepsynth", judge_config=setup["config"], systems=setup["systems"] + [setup["idle"]],
        tasks=[cl.task for cl in setup["checklists"]], **kw,
    )


def execute_all(run, judge, **kw) -> list[str]:
    return [job_execute(job_id=pk, judge=judge, **kw) for pk in run.jobs.order_by("pk").values_list("pk", flat=True)]


@pytest.mark.django_db
def test_run_create_makes_one_job_per_report_and_step(setup):
    run = create(setup, name="first")
    assert run.status == EvaluationRun.Status.PENDING
    assert run.jobs.count() == 4
    assert set(run.jobs.values_list("step", flat=True)) == {"deepsynth.checklist_group"}
    assert set(run.jobs.values_list("report_id", flat=True)) == {r.pk for r in setup["reports"]}
    assert run.tasks.count() == 2 and run.systems.count() == 3


@pytest.mark.django_db
def test_run_create_refuses_what_cannot_run(setup):
    config = setup["config"]
    with pytest.raises(ValidationError, match="no evaluation pipeline"):
        run_create(protocol="nope", judge_config=config, systems=setup["systems"], tasks=[])
    with pytest.raises(ValidationError, match="exactly one"):
        run_create(protocol="deepsynth", judge_config=config, systems=setup["systems"])
    with pytest.raises(ValidationError, match="another protocol"):
        run_create(protocol="deepsynth", judge_config=config, systems=setup["systems"], tasks=[TaskFactory(protocol="reportbench")])
    with pytest.raises(ValidationError, match="nothing to evaluate"):
        run_create(protocol="deepsynth", judge_config=config, systems=[setup["idle"]], tasks=[setup["checklists"][0].task])
    assert not EvaluationRun.objects.exists()


@pytest.mark.django_db
def test_run_start_enqueues_every_job_only_after_commit(setup, sent, django_capture_on_commit_callbacks):
    run = create(setup)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run_start(run=run)
        assert sent == []
    for callback in callbacks:
        callback()
    assert sorted(sent) == sorted(("execute", pk) for pk in run.jobs.values_list("pk", flat=True))
    run.refresh_from_db()
    assert run.status == "running" and run.started_at is not None
    with pytest.raises(ValidationError, match="only a pending run starts"):
        run_start(run=run)


@pytest.mark.django_db
def test_a_full_run_scores_every_report_and_system_and_reuses_verdicts(setup, sent, django_capture_on_commit_callbacks):
    cl = setup["checklists"][0]
    g, c = cl.general_items, cl.constraint_items
    labels = {g[0].id: "correct", g[1].id: "correct", g[2].id: "omitted", g[3].id: "incorrect", c[4].id: "omitted"}
    run = run_start(run=create(setup), enqueue=False)
    judge = ScriptedJudge(setup["config"], labels=labels)
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = execute_all(run, judge)
    assert outcomes == ["done"] * 4
    assert len(judge.calls) == 8  # 4 reports × 2 groups
    assert sent == [("finalize", run.pk)]  # only the job that settled the run asks for finalization

    run = run_finalize(run=run)
    assert run.status == "finished" and run.finished_at
    assert ScoreCard.objects.filter(run=run).count() == 6  # 4 reports + 2 systems
    a = setup["systems"][0]
    card = ScoreCard.objects.get(run=run, system=a, report__task=cl.task)
    assert card.metrics["overall"] == pytest.approx(62.5) and card.metrics["precision"] == pytest.approx(600 / 7)
    assert (card.items_judged, card.items_failed) == (9, 0)
    system_card = ScoreCard.objects.get(run=run, system=a, report=None)
    assert system_card.metrics["overall"] == pytest.approx((62.5 + 100.0) / 2)
    assert system_card.metrics["reports"] == 2 and system_card.items_judged == 18
    assert [c.system for c in run_score_cards(run=run)] == setup["systems"]

    # the same configuration again: zero calls, identical cards
    rerun = run_start(run=create(setup), enqueue=False)
    again = ScriptedJudge(setup["config"], labels=labels)
    assert execute_all(rerun, again) == ["done"] * 4
    assert again.calls == []
    rerun = run_finalize(run=rerun)
    assert ScoreCard.objects.get(run=rerun, system=a, report=None).metrics == system_card.metrics
    assert Verdict.objects.count() == 4 * 9


@pytest.mark.django_db
def test_progress_counts_and_eta_from_the_runs_pace(setup):
    run = run_start(run=create(setup), enqueue=False)
    assert run_progress(run=run) | {"eta_seconds": None} == {
        "status": "running", "total": 4, "done": 0, "failed": 0, "pending": 4, "running": 0, "cancelled": 0,
        "waiting": 0, "eta_seconds": None,
    }
    jobs = list(run.jobs.order_by("pk"))
    t0 = timezone.now() - timedelta(seconds=60)

    def job(n, status, start, end=None):
        RunJob.objects.filter(pk=jobs[n].pk).update(
            status=status, started_at=t0 + timedelta(seconds=start),
            finished_at=None if end is None else t0 + timedelta(seconds=end))

    job(2, Job.RUNNING, 0)
    assert run_progress(run=run)["eta_seconds"] is None  # nothing settled: no pace yet
    # two workers: jobs 0 and 1 ran side by side and settled at 10 s and 20 s, job 2 still runs
    job(0, Job.DONE, 0, 10)
    job(1, Job.FAILED, 0, 20)
    progress = run_progress(run=run)
    assert (progress["done"], progress["failed"], progress["running"], progress["pending"]) == (1, 1, 1, 1)
    # pace: 20 s from the first start to the last settled end over 2 settled jobs; 2 jobs left
    assert progress["eta_seconds"] == pytest.approx(20.0 / 2 * 2)
    # the estimate does not move with how many jobs happen to run at the moment
    job(3, Job.RUNNING, 20)
    assert run_progress(run=run)["eta_seconds"] == pytest.approx(20.0)
    job(2, Job.DONE, 0, 25)
    job(3, Job.DONE, 20, 30)
    assert run_progress(run=run)["eta_seconds"] == 0.0


@pytest.mark.django_db
def test_cancel_stops_pending_jobs_and_resume_finishes_them(setup, sent, django_capture_on_commit_callbacks):
    judge = ScriptedJudge(setup["config"])
    run = run_start(run=create(setup), enqueue=False)
    first, *rest = run.jobs.order_by("pk").values_list("pk", flat=True)
    assert job_execute(job_id=first, judge=judge) == "done"
    run = run_cancel(run=run)
    assert run.status == "cancelled"
    assert run_progress(run=run)["cancelled"] == 3
    assert [job_execute(job_id=pk, judge=judge) for pk in rest] == ["skipped"] * 3  # workers check before calling
    assert len(judge.calls) == 2
    with pytest.raises(ValidationError, match="is cancelled; only a pending or running run can be cancelled"):
        run_cancel(run=run)

    with django_capture_on_commit_callbacks(execute=True):
        run = run_resume(run=run)
    assert sorted(sent) == sorted(("execute", pk) for pk in rest)
    assert run_progress(run=run)["pending"] == 3
    assert execute_all(run, judge, enqueue=False) == ["skipped", "done", "done", "done"]
    assert len(judge.calls) == 8
    run = run_finalize(run=run)
    assert run.status == "finished"


@pytest.mark.django_db
def test_a_job_cancelled_while_queued_is_not_claimed(setup):
    run = run_start(run=create(setup), enqueue=False)
    job = run.jobs.first()
    EvaluationRun.objects.filter(pk=run.pk).update(status="cancelled")  # the run was cancelled after enqueueing
    assert job_execute(job_id=job.pk, judge=ScriptedJudge()) == "cancelled"
    job.refresh_from_db()
    assert job.status == Job.CANCELLED and job.attempts == 0


@pytest.mark.django_db
def test_a_crashing_step_fails_its_job_with_the_error_and_resume_retries_it(setup, monkeypatch):
    run = run_start(run=create(setup), enqueue=False)
    judge = ScriptedJudge(setup["config"])
    original = runs.pipeline_for("deepsynth").run_step
    bad_report = setup["reports"][0]

    def run_step(*, run, report, step, judge):
        if report.pk == bad_report.pk:
            raise RuntimeError("the report could not be rendered")
        return original(run=run, report=report, step=step, judge=judge)

    monkeypatch.setattr(runs.pipeline_for("deepsynth"), "run_step", run_step)
    assert sorted(execute_all(run, judge, enqueue=False)) == ["done", "done", "done", "failed"]
    failed = run.jobs.get(status=Job.FAILED)
    assert failed.error == "RuntimeError: the report could not be rendered"
    run = run_finalize(run=run)
    assert run.status == "finished_with_failures" and run.error.startswith("1 of 4 jobs failed, 9 items have no verdict")
    assert "RuntimeError: the report could not be rendered (×1 jobs)" in run.error
    card = ScoreCard.objects.get(run=run, report=bad_report)
    assert (card.items_judged, card.items_failed) == (0, 9)

    monkeypatch.undo()
    run = run_resume(run=run, enqueue=False)
    assert run_progress(run=run)["pending"] == 1
    assert execute_all(run, judge, enqueue=False).count("done") == 1
    run = run_finalize(run=run)
    assert run.status == "finished" and run.error == ""
    assert ScoreCard.objects.get(run=run, report=bad_report).items_judged == 9


@pytest.mark.django_db
def test_an_endpoint_failing_one_call_in_five_runs_every_job_and_ends_finished_with_failures(sent):
    checklist = two_group_checklist()
    tasks = [checklist.task] + [two_group_checklist().task for _ in range(4)]
    a, b = systems(2)
    for task in tasks:
        reports_for(task, [a, b])
    config = judge_config()

    def every_fifth_fails(call, n):
        return JudgeAnswer(data=None, error="HTTP 500: upstream error") if n % 5 == 4 else None

    judge = ScriptedJudge(config, respond=every_fifth_fails)
    run = run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=[a, b], tasks=tasks), enqueue=False)
    outcomes = execute_all(run, judge, enqueue=False)
    assert len(outcomes) == 10 and outcomes.count("failed") == 4  # calls 5, 10, 15, 20: one in four jobs' two
    assert all(e.startswith("1 of 2 judge calls failed: HTTP 500: upstream error")
               for e in run.jobs.filter(status=Job.FAILED).values_list("error", flat=True))
    run = run_finalize(run=run)
    assert run.status == "finished_with_failures"
    assert len(judge.calls) == 20
    errors = Verdict.objects.exclude(error="")
    assert set(errors.values_list("error", flat=True)) == {"judge error: HTTP 500: upstream error"}
    cards = ScoreCard.objects.filter(run=run, report__isnull=False)
    judged, failed = sum(c.items_judged for c in cards), sum(c.items_failed for c in cards)
    assert judged + failed == 10 * 9 and failed == errors.count() > 0
    for card in cards:
        assert card.metrics["correct"] == card.items_judged  # scores count judged items only
    # resuming retries the reports with failed items, asking only for those items
    failed_ids = sorted(errors.values_list("target_id", flat=True))
    retry = ScriptedJudge(config)
    run = run_resume(run=run, enqueue=False)
    assert run_progress(run=run)["pending"] == len({v.report_id for v in errors}) == 4
    execute_all(run, retry, enqueue=False)
    assert retry.items_asked() == failed_ids
    run = run_finalize(run=run)
    assert sum(c.items_failed for c in ScoreCard.objects.filter(run=run)) == 0
    assert run_resume(run=run, enqueue=False).status == "finished"  # nothing left: finalized again at once


@pytest.mark.django_db
def test_rescore_recomputes_cards_from_stored_verdicts_without_calls(setup):
    run = run_start(run=create(setup), enqueue=False)
    execute_all(run, ScriptedJudge(setup["config"]), enqueue=False)
    run = run_finalize(run=run)
    report = setup["reports"][0]
    assert ScoreCard.objects.get(run=run, report=report).metrics["overall"] == pytest.approx(100.0)
    Verdict.objects.filter(report=report).update(label="omitted", score=0)
    cards = run_rescore(run=run)
    assert len(cards) == 6
    assert ScoreCard.objects.get(run=run, report=report).metrics["overall"] == pytest.approx(0.0)
    assert ScoreCard.objects.filter(run=run).count() == 6


def run_job_counts(counts: dict) -> dict:
    return {key: n for key, n in counts.items() if key.startswith("runjob_") or key == "runs_finalized"}


@pytest.mark.django_db
def test_a_job_left_running_by_a_dead_worker_is_recovered_and_runs_again(setup, sent, django_capture_on_commit_callbacks):
    run = run_start(run=create(setup), enqueue=False)
    orphan = run.jobs.order_by("pk").first()
    # claimed by a worker that has no heartbeat any more
    RunJob.objects.filter(pk=orphan.pk).update(status=Job.RUNNING, attempts=1, worker="dead@host")
    with django_capture_on_commit_callbacks(execute=True):
        counts = jobs_recover(lost=[])
    assert run_job_counts(counts) == {"runjob_requeued": 1, "runjob_redelivered": 0, "runs_finalized": 0}
    assert sent == [("execute", orphan.pk)]
    orphan.refresh_from_db()
    assert (orphan.status, orphan.worker) == (Job.PENDING, "")
    assert job_execute(job_id=orphan.pk, judge=ScriptedJudge(), enqueue=False, worker="new@host") == "done"
    orphan.refresh_from_db()
    assert (orphan.attempts, orphan.worker) == (2, "new@host")
    # its old message, delivered late, finds it claimed and runs nothing
    assert job_execute(job_id=orphan.pk, judge=ScriptedJudge(), enqueue=False) == "skipped"


@pytest.mark.django_db
def test_a_lost_worker_gets_the_pending_jobs_enqueued_again_and_each_still_runs_once(
        setup, sent, django_capture_on_commit_callbacks):
    """The filesystem broker deletes a message when it hands it out: a worker killed between
    taking a job's message and claiming the job leaves it pending with no message anywhere."""
    run = run_start(run=create(setup), enqueue=False)
    done, lost, *others = run.jobs.order_by("pk")
    assert job_execute(job_id=done.pk, judge=ScriptedJudge(), enqueue=False) == "done"
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_recover(lost=[])["runjob_redelivered"] == 0  # no worker lost: nothing is sent twice
    assert sent == []
    with django_capture_on_commit_callbacks(execute=True):
        counts = jobs_recover(lost=[], redeliver_waiting=True)
    assert run_job_counts(counts) == {"runjob_requeued": 0, "runjob_redelivered": 1 + len(others), "runs_finalized": 0}
    assert sorted(sent) == sorted(("execute", job.pk) for job in [lost, *others])
    assert job_execute(job_id=lost.pk, judge=ScriptedJudge(), enqueue=False) == "done"
    assert job_execute(job_id=lost.pk, judge=ScriptedJudge(), enqueue=False) == "skipped"  # its old message, if any


@pytest.mark.django_db
def test_a_job_a_live_worker_executes_is_neither_recovered_nor_resumed_until_it_stops_executing_it(setup):
    run = run_start(run=create(setup), enqueue=False)
    job, command_job = run.jobs.order_by("pk")[:2]
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="busy@host", pid=1, started_at=now, last_seen=now)
    RunJob.objects.filter(pk=job.pk).update(status=Job.RUNNING, worker="busy@host", updated_at=now)
    RunJob.objects.filter(pk=command_job.pk).update(status=Job.RUNNING, worker="", updated_at=now)

    assert job_execute(job_id=job.pk, judge=ScriptedJudge(), enqueue=False) == "skipped"
    assert jobs_recover(lost=[])["runjob_requeued"] == 0  # a command's job is left to the command, too
    run_cancel(run=run)
    resumed = run_resume(run=run, enqueue=False)
    assert resumed.jobs.get(pk=job.pk).status == Job.RUNNING
    assert resumed.jobs.get(pk=command_job.pk).status == Job.PENDING  # an explicit resume takes it

    # the worker lives on, but its heartbeat thread no longer touches the job: its task ended without settling it
    RunJob.objects.filter(pk=job.pk).update(updated_at=now - timedelta(seconds=3 * settings.WORKER_HEARTBEAT_SECONDS + 1))
    assert jobs_recover(lost=[])["runjob_requeued"] == 1
    assert RunJob.objects.get(pk=job.pk).status == Job.PENDING


@pytest.mark.django_db(transaction=True)
def test_two_workers_executing_the_same_job_at_once_make_one_set_of_calls_and_rows(setup):
    run = run_start(run=create(setup), enqueue=False)
    job = run.jobs.order_by("pk").first()
    judge = ScriptedJudge(setup["config"], delay=0.3)
    outcomes, barrier = [], threading.Barrier(2)

    def worker():
        try:
            barrier.wait()
            outcomes.append(job_execute(job_id=job.pk, judge=judge, enqueue=False))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["done", "skipped"]
    assert len(judge.calls) == 2
    assert Verdict.objects.count() == 9
    job.refresh_from_db()
    assert job.status == Job.DONE and job.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_two_runs_judging_the_same_report_concurrently_never_duplicate_verdicts(setup):
    report = setup["reports"][0]
    config = setup["config"]
    made = [
        run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=[report.system], tasks=[report.task]), enqueue=False)
        for _ in range(2)
    ]
    judge = ScriptedJudge(config, delay=0.2)
    barrier = threading.Barrier(2)

    def worker(run):
        try:
            barrier.wait()
            execute_all(run, judge, enqueue=False)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(run,)) for run in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Verdict.objects.filter(report=report).count() == 9
    assert not Verdict.objects.exclude(error="").exists()
    for run in made:
        assert run.jobs.get().status == Job.DONE


@pytest.mark.django_db
def test_scores_the_metrics_refuse_fail_the_run_with_the_reason(setup):
    group = setup["checklists"][0].constraint
    type(group).objects.filter(pk=group.pk).update(clip_factor=1.5)  # θ would exceed N (eq. 3)
    run = run_start(run=create(setup), enqueue=False)
    execute_all(run, ScriptedJudge(setup["config"]), enqueue=False)
    run = run_finalize(run=run)
    assert run.status == "failed"
    assert run.error.startswith("scoring failed: ValueError: clip_factor")
    assert not ScoreCard.objects.filter(run=run).exists()
