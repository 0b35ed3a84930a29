"""Judge position consistency (pairwise steps asked in both orders) and self-consistency across
repeats (issue #28 §4), against counts and sklearn computed here; curators only."""

import random

import pytest
from django.urls import reverse
from rest_framework.test import APIClient
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from annotation.dashboards import judge_consistency
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, annotator, curator
from tests.factories import ReportFactory

pytestmark = pytest.mark.django_db


def test_organization_asked_in_both_orders():
    rng = random.Random(1)
    judge = JudgeConfigFactory(name="org judge", repeats=2)
    expected = {"pairs": 0, "same": 0, "first": 0, "second": 0}
    for n in range(12):
        report = ReportFactory()
        for repeat in range(2):
            as_first = rng.choice(["win", "win", "tie", "loss"])  # the report shown as A: wins more often
            as_second = rng.choice(["win", "tie", "loss", "loss"])
            for key, label in (("report_first", as_first), ("report_second", as_second)):
                VerdictFactory(report=report, judge_config=judge, step="deepscholar.organization",
                               target_kind="organization", target_id=0, target_key=key, repeat=repeat, label=label)
            expected["pairs"] += 1
            expected["same"] += as_first == as_second
            expected["first"] += (as_first == "win") + (as_second == "loss")
            expected["second"] += (as_first == "loss") + (as_second == "win")
    # one comparison asked in one order only is counted apart
    VerdictFactory(report=ReportFactory(), judge_config=judge, step="deepscholar.organization",
                   target_kind="organization", target_id=0, target_key="report_first", label="win")
    [row] = judge_consistency.position_consistency()
    assert (row["n_pairs"], row["n_one_order"], row["consistent"]) == (expected["pairs"], 1, expected["same"])
    assert row["consistency"] == pytest.approx(expected["same"] / expected["pairs"])
    assert (row["first_shown_wins"], row["second_shown_wins"]) == (expected["first"], expected["second"])
    assert row["ties"] == 2 * expected["pairs"] - expected["first"] - expected["second"]
    decided = expected["first"] + expected["second"]
    assert row["p_value"] == pytest.approx(stats.binomtest(expected["first"], decided).pvalue)
    # the same verdicts' repeat 0 against repeat 1
    repeats = {r["step"]: r for r in judge_consistency.self_consistency()}
    org = repeats["deepscholar.organization"]
    from scoring.models import Verdict
    labels = {}
    for report, key, repeat, label in Verdict.objects.filter(judge_config=judge).values_list(
            "report_id", "target_key", "repeat", "label"):
        labels.setdefault((report, key), {})[repeat] = label
    both = [v for v in labels.values() if 0 in v and 1 in v]
    assert org["n"] == len(both) == 24
    assert org["kappa"] == pytest.approx(cohen_kappa_score([v[0] for v in both], [v[1] for v in both]), abs=1e-12)
    assert org["observed_agreement"] == pytest.approx(sum(v[0] == v[1] for v in both) / len(both))


def test_single_call_configurations_have_no_self_consistency_and_annotators_see_none(client):
    VerdictFactory(judge_config=JudgeConfigFactory(name="once"), repeat=0)
    assert judge_consistency.self_consistency() == []
    api = APIClient()
    api.force_authenticate(annotator("someone"))
    assert api.get(reverse("api:dashboard-agreement")).json()["judge_consistency"] is None
    api.force_authenticate(curator("boss"))
    assert api.get(reverse("api:dashboard-agreement")).json()["judge_consistency"] == {"position": [], "repeats": []}


def test_surveyscope_pairwise_against_the_human_survey_counts_the_human_shown_first():
    judge = JudgeConfigFactory(name="scope judge")
    for n, (as_first, as_second) in enumerate([("win", "loss"), ("win", "win"), ("tie", "loss"), ("loss", "loss")]):
        report = ReportFactory()
        for key, label in (("report_first", as_first), ("human_first", as_second)):
            VerdictFactory(report=report, judge_config=judge, step="scisage.pairwise", target_kind="human_pairwise",
                           target_id=0, target_key=key, label=label)
    [row] = judge_consistency.position_consistency()
    # first shown won: report as A won (2) + human as A won, i.e. report as B lost (3)
    assert (row["kind"], row["n_pairs"], row["consistent"]) == ("human_pairwise", 4, 2)
    assert (row["first_shown_wins"], row["second_shown_wins"], row["ties"]) == (5, 2, 1)
