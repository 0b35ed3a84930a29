"""Learning SurveyLens aspect weights from pairwise preferences (eq. 3) and storing them on the criteria."""

from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from benchmark.models import RubricCriterion
from core.models import AuditLog
from scoring.metrics import bt_aspect_weights
from scoring.models import EvaluationRun, ScoreCard
from annotation.services.rubric_weights import WeightFitError, rubric_weights_fit
from tests.annotation_factories import JudgeConfigFactory, PreferenceFactory
from tests.factories import DisciplineFactory, ReportFactory, RubricCriterionFactory, SurveyFactory, TaskFactory

pytestmark = pytest.mark.django_db

ASPECTS = ("Structure", "Evidence Hierarchy")
# per report: (Structure, Evidence Hierarchy) mean aspect scores on the 1–5 scale
SCORES = [(4.0, 2.0), (3.0, 4.5), (2.0, 3.0), (5.0, 1.5), (3.5, 3.5), (1.0, 4.0)]
# (winner, loser) indexes: Evidence Hierarchy explains most choices, Structure a few
PREFERENCES = [(1, 0), (1, 2), (4, 0), (5, 3), (2, 3), (4, 3), (0, 5), (4, 2), (1, 3), (0, 2)]


@pytest.fixture
def world():
    discipline = DisciplineFactory(code="MED")
    criteria = [
        RubricCriterionFactory(discipline=discipline, aspect=ASPECTS[0], name="Logical sections", position=0),
        RubricCriterionFactory(discipline=discipline, aspect=ASPECTS[0], name="Balanced depth", position=1),
        RubricCriterionFactory(discipline=discipline, aspect=ASPECTS[1], name="Evidence levels", position=2),
    ]
    other = RubricCriterionFactory(discipline=DisciplineFactory(code="CS"), aspect=ASPECTS[0], weight=1.0)
    run = EvaluationRun.objects.create(protocol="surveylens", judge_config=JudgeConfigFactory(), status="finished")
    task = TaskFactory(protocol="surveylens", survey=SurveyFactory(discipline=discipline))
    reports = [ReportFactory(task=task) for _ in SCORES]
    for report, (structure, evidence) in zip(reports, SCORES, strict=True):
        ScoreCard.objects.create(run=run, system=report.system, report=report, metrics={
            "aspect_outline_structure": structure, "aspect_outline_evidence_hierarchy": evidence,
        })
    for winner, loser in PREFERENCES:
        PreferenceFactory(task=task, report_left=reports[loser], report_right=reports[winner], choice="right")
    PreferenceFactory(task=task, report_left=reports[0], report_right=reports[1], choice="tie")
    return run, discipline, criteria, other


def expected_weights() -> np.ndarray:
    winners = np.array([SCORES[w] for w, _ in PREFERENCES])
    losers = np.array([SCORES[v] for _, v in PREFERENCES])
    return bt_aspect_weights(winners, losers, alpha=0.1, x_max=5.0)


def test_the_fit_is_eq_3_on_the_stored_aspect_scores_and_preferences(world):
    run, discipline, criteria, _ = world
    fit = rubric_weights_fit(run=run, component="outline", discipline_id=discipline.pk)
    expected = expected_weights()
    assert fit.aspects == list(ASPECTS)
    assert [fit.weights[a] for a in ASPECTS] == pytest.approx(list(expected))
    assert expected[1] > expected[0]  # the evidence aspect explains the choices better
    assert (fit.pairs_used, fit.skipped) == (len(PREFERENCES), {"tie": 1})
    assert fit.concordance_after >= fit.concordance_before
    assert fit.criteria_updated == 0 and all(c.weight == 1.0 for c in RubricCriterion.objects.all())


def test_the_upstream_variant_fits_on_raw_scores_as_the_released_bt_py(world):
    run, discipline, _, _ = world
    fit = rubric_weights_fit(run=run, component="outline", discipline_id=discipline.pk, variant="upstream")
    winners = np.array([SCORES[w] for w, _ in PREFERENCES])
    losers = np.array([SCORES[v] for _, v in PREFERENCES])
    raw = bt_aspect_weights(winners, losers, alpha=0.1, x_max=5.0, variant="upstream")
    assert fit.variant == "upstream" and [fit.weights[a] for a in ASPECTS] == pytest.approx(list(raw))
    assert list(raw) != pytest.approx(list(expected_weights()), abs=1e-3)
    out = StringIO()
    call_command("fit_rubric_weights", run=run.pk, discipline="surveylens:MED", component=["outline"],
                 variant="upstream", apply=True, stdout=out)
    note = AuditLog.objects.latest("pk").note
    assert "raw 1–5 scores" in note
    weights = {c.aspect: c.weight for c in RubricCriterion.objects.filter(discipline=discipline)}
    assert [weights[a] for a in ASPECTS] == pytest.approx(list(raw), abs=1e-6)


def test_applying_stores_each_aspect_weight_on_its_criteria_with_revisions(world):
    run, discipline, criteria, other = world
    fit = rubric_weights_fit(run=run, component="outline", discipline_id=discipline.pk, apply=True)
    expected = expected_weights()
    weights = {c.name: c.weight for c in RubricCriterion.objects.filter(discipline=discipline)}
    assert weights == pytest.approx({"Logical sections": expected[0], "Balanced depth": expected[0],
                                     "Evidence levels": expected[1]}, abs=1e-6)
    assert fit.criteria_updated == 3
    other.refresh_from_db()
    assert other.weight == 1.0  # another discipline is untouched
    revisions = AuditLog.objects.filter(object_id__in=[c.pk for c in criteria])
    assert revisions.count() == 3 and all("Bradley–Terry" in r.note for r in revisions)
    again = rubric_weights_fit(run=run, component="outline", discipline_id=discipline.pk, apply=True)
    assert again.criteria_updated == 0  # unchanged weights write nothing


def test_unusable_inputs_are_refused_and_change_nothing(world):
    run, discipline, _, _ = world
    with pytest.raises(WeightFitError, match="no content rubric criteria"):
        rubric_weights_fit(run=run, component="content", discipline_id=discipline.pk, apply=True)
    with pytest.raises(WeightFitError, match="no usable preference"):
        rubric_weights_fit(run=run, component="outline", discipline_id=discipline.pk, preference_source="nobody",
                           apply=True)
    deepsynth = EvaluationRun.objects.create(protocol="deepsynth", judge_config=run.judge_config)
    with pytest.raises(WeightFitError, match="is a deepsynth run"):
        rubric_weights_fit(run=deepsynth, component="outline", discipline_id=discipline.pk)
    assert not AuditLog.objects.exists()


def test_the_command_prints_the_weights_and_applies_them(world):
    run, discipline, _, _ = world
    out = StringIO()
    call_command("fit_rubric_weights", run=run.pk, discipline="surveylens:MED", component=["outline"], apply=True,
                 stdout=out)
    text = out.getvalue()
    expected = expected_weights()
    assert f"{expected[1]:.4f}  Evidence Hierarchy" in text and "3 criteria updated" in text
    assert f"rescore --run {run.pk}" in text
    with pytest.raises(CommandError, match="matches 0 disciplines"):
        call_command("fit_rubric_weights", run=run.pk, discipline="NOPE", stdout=StringIO())
    with pytest.raises(CommandError, match="no evaluation run #999999"):
        call_command("fit_rubric_weights", run=999999, discipline="MED", stdout=StringIO())
