"""``demo_judges`` (make run): the offline judge configuration and the quick demo run, each once."""

import io

import pytest
from django.core.management import call_command

from benchmark.services.tasksets import taskset_create
from scoring.management.commands import demo_judges
from scoring.models import EvaluationRun, JudgeConfig
from scoring.services.runs import run_start
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db


def test_demo_judges_queues_the_deepsynth_demo_run_once(monkeypatch):
    system = SystemFactory(name="deepsynth-example")
    tasks = [TaskFactory(protocol="deepsynth", key=str(n)) for n in range(4)]
    for task in tasks:
        ReportFactory(task=task, system=system)
    taskset_create(name="demo-deepsynth", tasks=tasks)
    started = []
    monkeypatch.setattr(demo_judges, "run_start", lambda *, run: started.append(run_start(run=run, enqueue=False)))

    out = io.StringIO()
    call_command("demo_judges", stdout=out)
    run = EvaluationRun.objects.get(name=demo_judges.DEMO_RUN)
    assert run.protocol == "deepsynth" and run.judge_config == JudgeConfig.objects.get(name="offline-heuristic")
    assert run.jobs.count() == 4 and [r.pk for r in started] == [run.pk] and run.task_set.name == "demo-deepsynth"
    assert "4 reports queued" in out.getvalue()

    call_command("demo_judges", stdout=io.StringIO())  # a second make run changes nothing
    assert EvaluationRun.objects.count() == 1 and JudgeConfig.objects.count() == 1 and len(started) == 1


def test_without_the_demo_set_only_the_judge_is_made():
    out = io.StringIO()
    call_command("demo_judges", stdout=out)
    assert JudgeConfig.objects.filter(name="offline-heuristic").exists() and not EvaluationRun.objects.exists()
    assert "demo-deepsynth is missing" in out.getvalue()
