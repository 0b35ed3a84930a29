"""The leaderboard's SurveyScope reference columns: pooled over tasks for ``scisage_upstream`` (as SciSage's
released scorer pools its counts), the mean of task values otherwise. The expected values are the released
scorer's own outputs (tests/fixtures/upstream/scisage.json)."""

import json
from pathlib import Path

import numpy as np
import pytest
from django.urls import reverse

from scoring import metrics as m
from scoring.models import EvaluationRun, ScoreCard
from tests.annotation_factories import JudgeConfigFactory
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db
FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures/upstream/scisage.json").read_text())


def vec_pooled(a, column):
    totals = a.sum(axis=-2)
    p = totals[..., 0] / totals[..., 1]
    r = totals[..., 0] / totals[..., 2]
    f1 = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    return (p, r, f1)[column]


def surveyscope_cards(variant: str):
    """One system, one card per paper of the fixture's issue case, its reference metrics as the pipeline
    stores them (``reference_prf`` with ``variant``)."""
    system = SystemFactory(name="SciSage")
    judge = JudgeConfigFactory(name=f"judge {variant}")
    run = EvaluationRun.objects.create(name=f"scope {variant}", protocol="surveyscope", judge_config=judge,
                                       status=EvaluationRun.Status.FINISHED)
    run.systems.set([system])
    for k, paper in enumerate(FIXTURE["cases"]["issue_case"]["papers"]):
        report = ReportFactory(task=TaskFactory(protocol="surveyscope", key=f"{variant}-{k}"), system=system)
        prf = m.reference_prf(paper["generated"], paper["references"], variant=variant)
        ScoreCard.objects.create(run=run, system=system, report=report, items_judged=1, metrics={
            "variants": {"references": variant}, "reference_tp": prf["tp"], "reference_precision": prf["precision"],
            "reference_recall": prf["recall"], "reference_f1": prf["f1"], "references": prf["n_predicted"],
            "gold_references": prf["n_gold"]})
    return run


def board_cells(client, run):
    board = client.get(reverse("dashboards:leaderboard"), {"protocol": "surveyscope", "run": run.pk}).context["board"]
    (row,) = board["rows"]
    return {c["metric"]: c for c in row["cells"]}


def test_scisage_upstream_is_pooled_over_tasks_as_the_released_scorer(curator_client):
    run = surveyscope_cards("scisage_upstream")
    cells = board_cells(curator_client, run)
    released = FIXTURE["cases"]["issue_case"]["upstream"]
    assert cells["reference_f1"]["estimate"] == pytest.approx(released["f1"]) == pytest.approx(1 / 11)
    assert cells["reference_f1"]["pooled"] and cells["reference_f1"]["n_tasks"] == 2
    rows = np.array([(c.metrics["reference_tp"], c.metrics["references"], c.metrics["gold_references"])
                     for c in ScoreCard.objects.filter(run=run)], dtype=float)
    for column, key in enumerate(("reference_precision", "reference_recall", "reference_f1")):
        if key not in cells:  # the leaderboard shows the headline metrics: TP and F1 (SciSage Table 4)
            continue
        assert cells[key]["estimate"] == pytest.approx(released[key.removeprefix("reference_")])
        ci = m.bootstrap_ci(lambda a, c=column: vec_pooled(a, c), rows, n_resamples=1000, seed=0, vectorized=True)
        assert (cells[key]["low"], cells[key]["high"]) == (pytest.approx(ci["low"]), pytest.approx(ci["high"]))


def test_the_papers_variant_keeps_the_mean_of_task_values(curator_client):
    run = surveyscope_cards("paper")
    cells = board_cells(curator_client, run)
    values = [c.metrics["reference_f1"] for c in ScoreCard.objects.filter(run=run)]
    assert cells["reference_f1"]["estimate"] == pytest.approx(np.mean(values)) == pytest.approx(0.5)
    assert "pooled" not in cells["reference_f1"]
