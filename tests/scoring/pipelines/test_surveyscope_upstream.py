"""The SurveyScope pipeline's system card with ``scisage_upstream``: the released scorer's pooled counts
(tests/fixtures/upstream/scisage.json holds its outputs), the mean of report values otherwise."""

import json
from pathlib import Path

import pytest

from scoring.metrics import reference_prf
from scoring.pipelines.surveys.surveyscope import SurveyScopePipeline

FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures/upstream/scisage.json").read_text())


def report_scores(variant: str) -> list[dict]:
    out = []
    for paper in FIXTURE["cases"]["issue_case"]["papers"]:
        prf = reference_prf(paper["generated"], paper["references"], variant=variant)
        out.append({"items_judged": 0, "items_failed": 0, "metrics": {
            "variants": {"references": variant}, "reference_tp": prf["tp"], "reference_precision": prf["precision"],
            "reference_recall": prf["recall"], "reference_f1": prf["f1"], "references": prf["n_predicted"],
            "gold_references": prf["n_gold"]}})
    return out


def test_system_card_pools_like_the_released_scorer():
    released = FIXTURE["cases"]["issue_case"]["upstream"]
    metrics = SurveyScopePipeline().score_system(report_scores=report_scores("scisage_upstream"))["metrics"]
    assert metrics["reference_f1"] == pytest.approx(released["f1"]) == pytest.approx(1 / 11)
    assert metrics["reference_precision"] == pytest.approx(released["precision"])
    assert metrics["reference_recall"] == pytest.approx(released["recall"])
    assert metrics["reference_tp"] == pytest.approx(0.5)  # TP stays the mean per report


def test_system_card_of_the_papers_variant_is_the_mean():
    metrics = SurveyScopePipeline().score_system(report_scores=report_scores("paper"))["metrics"]
    assert metrics["reference_f1"] == pytest.approx(0.5)
