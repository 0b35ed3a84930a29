from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from core.workers import worker_heartbeat_beat
from scoring.models import EvaluationRun, ScoreCard
from scoring.services import runs
from tests.scoring.services.fakes import ScriptedJudge, judge_config, reports_for, systems, two_group_checklist


@pytest.fixture
def data():
    checklists = [two_group_checklist(), two_group_checklist()]
    a, b = systems(2)
    for cl in checklists:
        reports_for(cl.task, [a, b])
    return {"tasks": ",".join(cl.task.key for cl in checklists), "config": judge_config()}


def evaluate(data, *args) -> str:
    out = StringIO()
    call_command("evaluate", "--protocol", "deepsynth", "--judge", data["config"].name, "--systems", "sys-a,sys-b",
                 "--tasks", data["tasks"], *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_waiting_without_a_live_worker_is_refused_before_anything_is_created(data):
    with pytest.raises(CommandError, match="No Celery worker is alive"):
        evaluate(data, "--wait")
    assert not EvaluationRun.objects.exists()


@pytest.mark.django_db
def test_without_a_worker_the_run_is_queued_and_the_command_says_so(data, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr("scoring.tasks.execute_job.delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        out = evaluate(data)
    run = EvaluationRun.objects.get()
    assert run.status == "running" and len(sent) == 4
    assert f"run #{run.pk}: 4 job(s)" in out
    assert "No Celery worker is alive" in out and "queued" in out


@pytest.mark.django_db
def test_with_a_live_worker_the_command_only_enqueues(data, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr("scoring.tasks.execute_job.delay", lambda job_id: None)
    worker_heartbeat_beat(hostname="w@h", pid=1, started_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        out = evaluate(data)
    assert "No Celery worker" not in out


@pytest.mark.django_db
def test_inline_runs_the_jobs_in_the_command_process_with_a_progress_bar(data, monkeypatch):
    judge = ScriptedJudge(data["config"])
    monkeypatch.setattr(runs, "_judge_for", lambda config: judge)
    monkeypatch.setattr("scoring.tasks.execute_job.delay", lambda job_id: pytest.fail("inline must not enqueue"))
    monkeypatch.setattr("scoring.tasks.finalize_run.delay", lambda run_id: pytest.fail("inline must not enqueue"))
    out = evaluate(data, "--inline", "--name", "cli")
    run = EvaluationRun.objects.get(name="cli")
    assert run.status == "finished" and len(judge.calls) == 8
    assert "[##############################] 4/4 jobs  done 4  failed 0" in out
    assert "offline heuristic" in out  # the scripted judge's configuration is an offline one
    assert f"run #{run.pk} finished" in out
    assert "sys-a" in out and "100.0" in out
    header = next(line for line in out.splitlines() if line.startswith("system"))
    assert header.split() == ["system", "overall", "general", "constraint", "precision", "judged", "failed"]

    rescored = StringIO()
    call_command("rescore", "--run", str(run.pk), stdout=rescored)
    assert "6 score card(s) recomputed" in rescored.getvalue()
    assert ScoreCard.objects.filter(run=run).count() == 6
    assert len(judge.calls) == 8


@pytest.mark.django_db
def test_unknown_names_are_reported(data):
    with pytest.raises(CommandError, match="no judge configuration named 'nope'"):
        call_command("evaluate", "--protocol", "deepsynth", "--judge", "nope", "--systems", "sys-a", "--tasks", "x")
    with pytest.raises(CommandError, match="no system named 'sys-z'"):
        call_command("evaluate", "--protocol", "deepsynth", "--judge", data["config"].name, "--systems", "sys-z",
                     "--tasks", "x")
    with pytest.raises(CommandError, match="no deepsynth task with key"):
        call_command("evaluate", "--protocol", "deepsynth", "--judge", data["config"].name, "--systems", "sys-a",
                     "--tasks", "missing-key")
    with pytest.raises(CommandError, match="no run #999"):
        call_command("rescore", "--run", "999")
