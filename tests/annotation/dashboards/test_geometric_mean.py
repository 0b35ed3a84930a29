"""DeepScholar's Table 2 geometric mean: one definition on the leaderboard, the run's system cards and the API."""

import random

import numpy as np
import pytest
from django.urls import reverse
from scipy.stats import gmean

from scoring.models import EvaluationRun, ScoreCard
from scoring.pipelines import pipeline_for
from tests.annotation_factories import JudgeConfigFactory
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db

SEVEN = ("organization", "nugget_coverage", "relevance_rate", "reference_coverage", "document_importance",
         "citation_precision", "claim_coverage")
SIX = tuple(k for k in SEVEN if k != "document_importance")


def _deepscholar_run():
    """Two systems, three tasks; no citation counts, so document importance is undefined everywhere."""
    rng = random.Random(4)
    run = EvaluationRun.objects.create(name="ds", protocol="deepscholar", judge_config=JudgeConfigFactory(),
                                       status=EvaluationRun.Status.FINISHED)
    systems = [SystemFactory(name="alpha"), SystemFactory(name="beta")]
    pipeline = pipeline_for("deepscholar")
    per_system = {}
    tasks = [TaskFactory(protocol="deepscholar", key=f"paper-{t}") for t in range(3)]
    for system in systems:
        scores = []
        for task in tasks:
            metrics = {k: round(rng.uniform(0.05, 1.0), 3) for k in SIX}
            metrics |= {"document_importance": None, "geometric_mean": None, "geometric_mean_over": []}
            report = ReportFactory(task=task, system=system)
            ScoreCard.objects.create(run=run, system=system, report=report, metrics=metrics)
            scores.append({"metrics": metrics, "items_judged": 1, "items_failed": 0})
        per_system[system.pk] = pipeline.score_system(report_scores=scores)
    pipeline.compare_systems(system_scores=per_system)  # what run_finalize stores
    for system_id, score in per_system.items():
        ScoreCard.objects.create(run=run, system_id=system_id, report=None, metrics=score["metrics"])
    return run, systems


def test_the_leaderboard_and_the_run_cards_show_the_geometric_mean_of_the_metric_means(curator_client):
    run, systems = _deepscholar_run()
    response = curator_client.get(reverse("dashboards:leaderboard"), {"protocol": "deepscholar"})
    board = response.context["board"]
    assert board["derived"] == {"metric": "geometric_mean", "over": list(SIX), "left_out": ["document_importance"]}
    for system in systems:
        cards = ScoreCard.objects.filter(system=system, report__isnull=False)
        expected = gmean([np.mean([c.metrics[k] for c in cards]) for k in SIX])
        [row] = [r for r in board["rows"] if r["system_id"] == system.pk]
        [cell] = [c for c in row["cells"] if c["metric"] == "geometric_mean"]
        assert cell["estimate"] == pytest.approx(expected) and cell["low"] is None
        stored = ScoreCard.objects.get(run=run, system=system, report__isnull=True).metrics
        assert stored["geometric_mean"] == pytest.approx(expected) and stored["geometric_mean_over"] == list(SIX)
    assert "left out because some system lacks them: document_importance" in response.content.decode()
    api = curator_client.get(reverse("api:dashboard-leaderboard"), {"protocol": "deepscholar"}).json()
    by_id = {r["system_id"]: r for r in api["rows"]}
    for row in board["rows"]:
        got = next(c for c in by_id[row["system_id"]]["cells"] if c["metric"] == "geometric_mean")
        assert got["estimate"] == pytest.approx(next(c for c in row["cells"] if c["metric"] == "geometric_mean")["estimate"])
    run_page = curator_client.get(reverse("runs:detail", args=[run.pk]))
    assert "Geometric mean (DeepScholar Table 2)" in run_page.content.decode()
