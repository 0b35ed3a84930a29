"""SurveyLens and SurveyScope end to end: real SurveyLens data, the offline judge, the run services.

Two systems of the released luciferase topic (Qwen and Gemini, the shortest outputs, to keep
the offline MiniLM work small) are evaluated through ``run_create`` / ``job_execute`` /
``run_finalize`` exactly as a worker would, with Biology criteria built from the paper's
Table 2 aspects. The released human survey has no reference list, which must show as
undefined reference alignment, not as a zero or a failure.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmark.importers.catalogue import run_import
from benchmark.models import Protocol, Report, RubricCriterion, System, Task
from scoring.judges import judge_for
from scoring.judges.base import Judge
from scoring.metrics import rubric_score, win_rate
from scoring.models import Embedding, LLMCall, ScoreCard, Verdict
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_create, run_start
from tests.factories import ReportFactory
from tests.scoring.services.fakes import judge_config

# Committed as they are written (transaction=True): the judge answers in threads, each with its own
# connection, and embeds texts the run's own step has embedded in this thread just before. Inside
# one test transaction those rows stay uncommitted, a thread's insert of the same key waits on
# them, and this thread waits on the thread: a hang whenever no earlier test in the process left
# the vectors in the judge's memo (the file run alone). A worker runs a job in autocommit.
pytestmark = pytest.mark.django_db(transaction=True)

SYSTEMS = ("Gemini", "Qwen")
# SurveyLens Table 2: aspects per component, with unequal (Bradley–Terry-like) weights.
TABLE_2 = {
    "outline": [("Substantive Integrity", 0.5), ("Structural Coherence", 0.3), ("Formal Precision", 0.2)],
    "content": [("Scope and Relevance", 0.2), ("Structural Coherence", 0.2), ("Synthesis and Integration", 0.3),
                ("Critical Insight and Novelty", 0.3)],
    "reference": [("Scholarly Communication", 0.1), ("Bibliometric Comprehensiveness", 0.4),
                  ("Evidential Integrity", 0.3), ("Referential Pertinence and Compliance", 0.2)],
}


class CountingJudge(Judge):
    """The offline judge, counting the calls it is asked."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.inner = judge_for(config)
        self.heuristic = self.inner.heuristic
        self.calls = 0

    def answer(self, call):
        self.calls += 1
        return self.inner.answer(call)


def execute(run, judge) -> None:
    run_start(run=run, enqueue=False)
    for job_id in run.jobs.order_by("pk").values_list("pk", flat=True):
        assert job_execute(job_id=job_id, judge=judge, enqueue=False) == "done"
    run_finalize(run=run)
    run.refresh_from_db()
    assert run.status == "finished", run.error


@pytest.fixture
def luciferase(datasets):
    run_import("surveylens", datasets / "surveylens" / "luciferase")
    task = Task.objects.get(protocol=Protocol.SURVEYLENS, key="luciferase")
    for component, aspects in TABLE_2.items():
        for position, (aspect, weight) in enumerate(aspects):
            RubricCriterion.objects.create(
                discipline=task.survey.discipline, component=component, aspect=aspect, weight=weight,
                position=position, name=f"{aspect} ({component})",
                description=f"The survey's {component} shows {aspect.lower()} by the standards of biology reviews.",
            )
    return task, list(System.objects.filter(name__in=SYSTEMS))


def test_surveylens_offline_full_score_card_and_a_second_run_without_calls_or_embeddings(luciferase):
    task, systems = luciferase
    config = judge_config(name="offline-heuristic-surveys")
    judge = CountingJudge(config)
    run = run_create(protocol="surveylens", judge_config=config, systems=systems, tasks=[task])
    execute(run, judge)
    assert judge.calls == 2 * (3 + 2)  # per report: a rubric call per component, pairwise in both orders

    cards = {c.report.system.name: c for c in ScoreCard.objects.filter(run=run, report__isnull=False)}
    assert set(cards) == set(SYSTEMS)
    for name, card in cards.items():
        m = card.metrics
        assert card.items_failed == 0, name
        assert card.items_judged == 11 + 3 + 2  # 11 criteria, 3 embedded components, 2 comparisons
        for component in ("outline", "content"):
            assert 0.0 <= m[f"rams_{component}"] <= 1.0 and 0.0 <= m[f"tams_{component}"] <= 1.0
            assert m[f"gold_entries_{component}"] > 0 and m[f"entries_{component}"] > 0
        assert m["rams_outline"] > 0 and m["tams_content"] > 0  # on-topic surveys align with the human one
        # the released human survey has no reference list: undefined, not zero, and not a failure
        assert (m["rams_reference"], m["tams_reference"], m["gold_entries_reference"]) == (None, None, 0)
        assert m["structure_references"] is None and m["structure_words"] > 0

        report = card.report
        for component, aspects in TABLE_2.items():
            rows = Verdict.objects.filter(report=report, judge_config=config, target_kind="rubric_criterion",
                                          target_id__in=RubricCriterion.objects.filter(component=component)
                                          .values("id"))
            by_aspect = {RubricCriterion.objects.get(pk=v.target_id).aspect: v.score for v in rows}
            assert len(by_aspect) == len(aspects) and all(1 <= s <= 5 for s in by_aspect.values())
            weights = np.array([w for _, w in aspects])
            expected = rubric_score(weights / weights.sum(), [by_aspect[a] for a, _ in aspects])
            assert m[f"rubric_{component}"] == pytest.approx(expected)
        outcomes = list(Verdict.objects.filter(report=report, target_kind="human_pairwise")
                        .values_list("label", flat=True))
        assert m["win_rate_vs_human"] == pytest.approx(win_rate(outcomes))

    system_card = ScoreCard.objects.get(run=run, report__isnull=True, system__name="Qwen")
    assert system_card.metrics["rubric_content"] == pytest.approx(cards["Qwen"].metrics["rubric_content"])

    embeddings, calls, verdicts = Embedding.objects.count(), LLMCall.objects.count(), Verdict.objects.count()
    again = CountingJudge(config)
    run2 = run_create(protocol="surveylens", judge_config=config, systems=systems, tasks=[task])
    execute(run2, again)
    assert again.calls == 0
    assert (Embedding.objects.count(), LLMCall.objects.count(), Verdict.objects.count()) == (
        embeddings, calls, verdicts)
    second = {c.report.system.name: c.metrics for c in ScoreCard.objects.filter(run=run2, report__isnull=False)}
    assert second == {name: card.metrics for name, card in cards.items()}


def test_surveyscope_offline_full_score_card(luciferase):
    lens_task, systems = luciferase
    task = Task.objects.create(protocol=Protocol.SURVEYSCOPE, key="luciferase", survey=lens_task.survey,
                               title=lens_task.title)
    for report in Report.objects.filter(task=lens_task, system__in=systems):
        ReportFactory(task=task, system=report.system, text=report.text, parsed=report.parsed, stats=report.stats)
    config = judge_config(name="offline-heuristic-scope")
    judge = CountingJudge(config)
    run = run_create(protocol="surveyscope", judge_config=config, systems=systems, tasks=[task])
    execute(run, judge)
    assert judge.calls == 2 * (2 + 2)  # per report: 10-point dimensions, section structure, pairwise twice

    for card in ScoreCard.objects.filter(run=run, report__isnull=False):
        m = card.metrics
        assert (card.items_judged, card.items_failed) == (4 + 2, 0)
        values = [m[f"quality_{k}"] for k in ("language", "critical", "structure")]
        assert all(10.0 <= v <= 100.0 and v % 10 == 0 for v in values)  # 1–10 rescaled × 10
        section = m["quality_section_structure"]
        assert 20.0 <= section <= 100.0 and section % 20 == 0  # 1–5 rescaled × 20
        verdict = Verdict.objects.get(report=card.report, target_key="section_structure")
        assert verdict.score * 20 == section and "heuristic" in verdict.rationale
        assert m["quality_mean"] == pytest.approx(np.mean(values + [section]))
        assert m["reference_f1"] is None and m["gold_references"] == 0 and m["references"] > 0
        assert m["win_rate_vs_human"] in (0.0, 0.25, 0.5, 0.75, 1.0)
