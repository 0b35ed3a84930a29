"""Proposals by the offline heuristic judge on the real datasets, and the ``propose`` command."""

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from benchmark.importers.catalogue import run_import
from benchmark.models import ChecklistGroup, ConstraintQuestion, Nugget, RubricCriterion, Task, TaskPrompt
from core.models import AuditLog
from scoring.judges import JudgeCall, judge_for
from core.text import normalize_title
from scoring.models import JudgeConfig, LLMCall, ProposalBatch

pytestmark = pytest.mark.django_db

RADAR = "2312.04861"


@pytest.fixture
def offline():
    return JudgeConfig.objects.create(name="offline-heuristic", backend=JudgeConfig.Backend.OFFLINE)


def propose_command(*args) -> str:
    out = StringIO()
    call_command("propose", *args, stdout=out)
    return out.getvalue()


def test_real_deepsynth_tasks_keep_their_imported_question_and_say_why_nothing_else_can_be_proposed(datasets, offline):
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    keys = sorted(Task.objects.filter(protocol="deepsynth").values_list("key", flat=True))
    assert keys == ["0", "1", "2", "4"]
    groups_before = ChecklistGroup.objects.count()

    out = propose_command("--judge", offline.name, "--protocol", "deepsynth", "--inline")

    batch = ProposalBatch.objects.get()
    assert (batch.status, batch.total, batch.done, batch.failed) == ("finished", 12, 4, 8), (batch.error, out)
    assert batch.summary["units"] == {"failed": 8, "skipped": 4} and batch.summary["calls"] == 0
    # The release gives no survey text (its surveys are titled by arXiv id), which every failure names.
    survey = Task.objects.get(protocol="deepsynth", key="0").survey
    assert f"topic_groups on 0: survey “{survey.title}” has neither an outline nor content" in out
    assert "skipped question on 0: the task already has its prompts, which the judge must not change: " \
           "general (import, proposed)" in out
    assert "failures 8" in out and "(nothing new)" in out
    assert ChecklistGroup.objects.count() == groups_before and not LLMCall.objects.exists()


def test_real_reportbench_task_gets_the_two_missing_prompt_levels_and_a_rerun_costs_nothing(datasets, offline):
    run_import("reportbench", datasets / "reportbench" / "ReportBench_v1.1.jsonl", keys=[RADAR])
    task = Task.objects.get(protocol="reportbench", key=RADAR)
    (imported,) = TaskPrompt.objects.filter(task=task)
    variables = {"title": task.survey.title, "abstract": task.survey.abstract,
                 "cutoff_date": task.cutoff_date.isoformat()}
    expected = judge_for(offline).answer(JudgeCall("propose.reportbench_prompts", variables)).data

    out = propose_command("--judge", offline.name, "--tasks", RADAR, "--stage", "reportbench_prompts", "--inline")

    stored = {p.level: p for p in TaskPrompt.objects.filter(task=task, origin="llm")}
    missing = {"sentence", "paragraph", "detail"} - {imported.level}
    assert set(stored) == missing
    assert all(stored[level].text == expected[level] and stored[level].review_status == "proposed" for level in missing)
    assert TaskPrompt.objects.get(pk=imported.pk).text == imported.text
    assert AuditLog.objects.filter(action="proposable.propose", object_id__in=[p.pk for p in stored.values()]).count() == 2
    assert "prompt                         2" in out and "calls 1" in out and "failures 0" in out
    assert "the judge is the offline heuristic" in out
    assert "[##############################] 1/1 jobs  done 1  failed 0" in out

    again = propose_command("--judge", offline.name, "--tasks", RADAR, "--stage", "reportbench_prompts", "--inline")
    assert "units: 1 reused" in again and "calls 0" in again
    assert LLMCall.objects.count() == 1


def test_real_surveylens_rubric_is_refused_by_the_offline_judge_with_its_reason(datasets, offline):
    run_import("surveylens", datasets / "surveylens" / "luciferase")
    task = Task.objects.get(protocol="surveylens", key="luciferase")
    assert task.survey.discipline is not None and task.survey.outline

    out = propose_command("--judge", offline.name, "--tasks", "luciferase", "--protocol", "surveylens", "--inline")

    assert "rubric_criteria on luciferase: judge error: not supported by the offline judge: writing " \
           "discipline-aware rubric criteria needs a language model's judgement" in out
    assert f"proposals #{ProposalBatch.objects.get().pk} failed: 1 of 1 units failed" in out
    assert not RubricCriterion.objects.exists()
    assert list(LLMCall.objects.values_list("ok", flat=True)) == [False]


def test_real_deepscholar_exemplar_is_nuggetized_without_duplicating_the_imported_nuggets(datasets, offline):
    from scoring.services.proposals import propose

    run_import("deepscholar", datasets / "deepscholar-bench")
    task = Task.objects.filter(protocol="deepscholar").order_by("key").first()
    imported = set(Nugget.objects.filter(task=task).values_list("text", flat=True))
    query = TaskPrompt.objects.get(task=task, level="general").text
    answer = judge_for(offline).answer(JudgeCall("deepscholar.nuggetize", {"query": query, "text": task.survey.full_text}))
    known = {normalize_title(t) for t in imported}
    expected = []
    for nugget in answer.data["nuggets"]:
        if normalize_title(nugget["text"]) not in known:
            known.add(normalize_title(nugget["text"]))
            expected.append((nugget["text"], nugget["importance"]))
    assert expected  # the exemplar yields something new to review

    summary = propose(tasks=[task], judge_config=offline)

    assert summary.proposed == {"nugget": len(expected)}
    stored = list(Nugget.objects.filter(task=task, origin="llm").order_by("position").values_list("text", "importance"))
    assert stored == expected
    assert set(Nugget.objects.filter(task=task, origin="import").values_list("text", flat=True)) == imported


def test_command_errors_are_clear_and_store_nothing(offline, monkeypatch):
    from tests.factories import SurveyFactory, TaskFactory

    TaskFactory(protocol="deepsynth", key="1", survey=SurveyFactory())
    TaskFactory(protocol="reportbench", key="1", survey=SurveyFactory())
    cases = [
        (("--judge", "nope", "--protocol", "deepsynth"), "no judge configuration named 'nope' (known: offline-heuristic)"),
        (("--judge", offline.name), "choose the tasks: --tasks k1,k2, --task-set NAME or --protocol P"),
        (("--judge", offline.name, "--tasks", "1"), "task key(s) in several protocols: 1 (deepsynth, reportbench); "
                                                    "add --protocol"),
        (("--judge", offline.name, "--tasks", "1,9", "--protocol", "deepsynth"), "no deepsynth task with key(s): 9"),
        (("--judge", offline.name, "--protocol", "surveylens"), "there is no surveylens task"),
        (("--judge", offline.name, "--tasks", "1", "--protocol", "deepsynth", "--stage", "nuggets"),
         "stages: nuggets builds deepscholar tasks, and these tasks are deepsynth"),
        (("--judge", offline.name, "--protocol", "deepsynth", "--wait"), "No Celery worker is alive"),
    ]
    for args, message in cases:
        with pytest.raises(CommandError, match=re.escape(message)):
            propose_command(*args)
    assert not ProposalBatch.objects.exists()


def test_without_flags_the_batch_is_queued_for_a_worker(offline, monkeypatch, django_capture_on_commit_callbacks):
    from tests.factories import SurveyFactory, TaskFactory

    TaskFactory(protocol="deepsynth", key="q", survey=SurveyFactory())
    sent = []
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        out = propose_command("--judge", offline.name, "--protocol", "deepsynth", "--stage", "question")
    batch = ProposalBatch.objects.get()
    assert sent == [batch.pk] and batch.status == "pending"
    assert f"proposals #{batch.pk}: 1 unit(s) (question) on 1 task(s)" in out
    assert "No Celery worker is alive" in out and "queued" in out
    assert not ConstraintQuestion.objects.exists()
