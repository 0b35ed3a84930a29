"""End to end on the real DeepScholar-bench release, judged by the offline heuristic judge.

Row 0 (TaxAgent) with the reports of all four released systems, through ``scoring.services.runs``
executed inline, then a re-run of the same configuration, which must make no call. Only one of the
two papers with outputs: the offline judge embeds every sentence and source with MiniLM in NumPy,
and the ~600 (sentence, source) pairs of the ±5 windows take over a minute on a busy machine. The
release carries no citation counts, so document importance is undefined and the card says so.
"""

import pytest
import numpy as np

from benchmark.importers.catalogue import run_import
from benchmark.models import System, Task
from scoring.models import JudgeConfig, LLMCall, ScoreCard, Verdict
from scoring.pipelines.deepscholar.nuggets import NO_NUGGETS
from scoring.pipelines.deepscholar.pipeline import METRIC_KEYS
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_create, run_start

PAPER = "2506.02838"  # row 0, TaxAgent


def evaluate(config, tasks, systems):
    run = run_start(run=run_create(protocol="deepscholar", judge_config=config, systems=systems, tasks=tasks),
                    enqueue=False)
    outcomes = [job_execute(job_id=pk, enqueue=False) for pk in run.jobs.order_by("pk").values_list("pk", flat=True)]
    assert outcomes == ["done"] * run.jobs.count()
    return run_finalize(run=run)


@pytest.mark.django_db
def test_the_offline_judge_scores_the_released_reports_and_a_rerun_makes_no_call(datasets):
    run_import("deepscholar", datasets / "deepscholar-bench")
    tasks = list(Task.objects.filter(protocol="deepscholar", key=PAPER))
    systems = list(System.objects.filter(reports__task__in=tasks).distinct())
    assert len(tasks) == 1 and len(systems) == 4
    nuggets = tasks[0].nuggets.count()
    assert nuggets > 0
    config = JudgeConfig.objects.create(name="offline", backend=JudgeConfig.Backend.OFFLINE)

    run = evaluate(config, tasks, systems)

    assert run.status == "finished", run.error
    calls = LLMCall.objects.filter(run=run)
    assert calls.exists() and not calls.filter(ok=False).exists()
    # reference importance: once per task, copied to the task's other three reports
    for task in tasks:
        asked = Verdict.objects.filter(report__task=task, target_kind="gold_reference", call__isnull=False)
        copied = Verdict.objects.filter(report__task=task, target_kind="gold_reference", call__isnull=True)
        references = task.gold_references.count()
        assert (asked.count(), copied.count()) == (references, 3 * references)
    cards = ScoreCard.objects.filter(run=run, report__isnull=False).select_related("report__task")
    assert cards.count() == 4
    for card in cards:
        m = card.metrics
        assert card.items_failed == 0 and card.items_judged > 0  # every released source has a snippet
        for key in ("organization", "relevance_rate", "reference_coverage", "citation_precision", "claim_coverage"):
            assert 0 <= m[key] <= 1, key
        windows = [m["claim_coverage_by_window"][str(w)] for w in range(6)]
        assert windows == sorted(windows)  # a wider window never covers less (Fig. 5)
        assert m["claim_coverage"] == windows[1]
        assert m["document_importance"] is None and any("citation counts" in n for n in m["notes"])
        assert m["nuggets"] == nuggets and m["nuggets_judged"] == nuggets and 0 <= m["nugget_coverage"] <= 1
        assert NO_NUGGETS not in m["notes"]
        # document importance is undefined: a report's own geometric mean is not taken over fewer metrics
        assert m["geometric_mean"] is None and m["geometric_mean_over"] == []
    systems_cards = ScoreCard.objects.filter(run=run, report__isnull=True)
    assert systems_cards.count() == 4
    common = [k for k in METRIC_KEYS if k != "document_importance"]
    for card in systems_cards:
        assert card.metrics["reports"] == 1 and set(card.metrics["claim_coverage_by_window"]) == set("012345")
        # Table 2: the geometric mean of the system's means over the metrics every system of the run has
        assert card.metrics["geometric_mean_over"] == common
        assert card.metrics["geometric_mean"] == pytest.approx(
            np.prod([card.metrics[k] for k in common]) ** (1 / len(common)))

    verdicts = Verdict.objects.count()
    again = evaluate(config, tasks, systems)
    assert LLMCall.objects.filter(run=again).count() == 0 and Verdict.objects.count() == verdicts
    assert {c.report_id: c.metrics for c in ScoreCard.objects.filter(run=again, report__isnull=False)} == {
        c.report_id: c.metrics for c in cards}
    