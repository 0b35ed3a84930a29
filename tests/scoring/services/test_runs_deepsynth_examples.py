"""End to end on a real DeepSynth-Eval example task, judged by the offline heuristic judge.

Only task "1" (7 groups — 5 general, 2 constraint — 83 items, an 11k-character report)
is evaluated: the offline judge embeds every item and report sentence with MiniLM in
NumPy, about a minute per example task on a busy 2-core machine, so all four would
take the suite's whole time budget.
"""

import pytest

from benchmark.importers.catalogue import run_import
from benchmark.models import ChecklistItem, ReviewStatus, System, Task
from scoring.models import JudgeConfig, LLMCall, ScoreCard, Verdict
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_create, run_start


def evaluate(config, tasks, system):
    run = run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=[system], tasks=tasks),
                    enqueue=False)
    assert [job_execute(job_id=pk, enqueue=False) for pk in run.jobs.values_list("pk", flat=True)] == ["done"]
    return run_finalize(run=run)


@pytest.mark.django_db
def test_the_offline_judge_produces_a_full_score_card_and_a_rerun_makes_no_call(datasets):
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    assert Task.objects.filter(protocol="deepsynth").count() == 4
    task = Task.objects.get(protocol="deepsynth", key="1")
    system = System.objects.get(name="deepsynth-example")
    config = JudgeConfig.objects.create(name="offline", backend=JudgeConfig.Backend.OFFLINE)
    items = ChecklistItem.objects.filter(group__task=task).exclude(review_status=ReviewStatus.REJECTED).count()
    assert (items, task.checklist_groups.count()) == (83, 7)

    run = evaluate(config, [task], system)

    assert run.status == "finished", run.error
    calls = LLMCall.objects.filter(run=run)
    assert calls.count() == 7 and not calls.filter(ok=False).exists()  # one call per checklist group
    assert Verdict.objects.filter(judge_config=config).count() == items
    report_card = ScoreCard.objects.get(run=run, report__isnull=False)
    assert (report_card.items_judged, report_card.items_failed) == (items, 0)
    m = report_card.metrics
    assert m["correct"] + m["omitted"] + m["incorrect"] == items
    assert (m["groups"], m["groups_scored"]) == (7, 7)
    for key in ("overall", "general", "constraint"):
        assert 0 <= m[key] <= 100
    assert m["precision"] is None or 0 <= m["precision"] <= 100
    system_card = ScoreCard.objects.get(run=run, report=None)
    assert system_card.metrics["overall"] == pytest.approx(m["overall"])
    assert system_card.metrics["reports"] == 1

    again = evaluate(config, [task], system)
    assert LLMCall.objects.filter(run=again).count() == 0
    assert ScoreCard.objects.get(run=again, report=None).metrics == system_card.metrics
