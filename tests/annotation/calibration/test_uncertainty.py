"""The judge's uncertainty on a verdict, which the adaptive design samples by."""

import pytest

from annotation.calibration.sampling import verdict_uncertainty
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory
from tests.factories import ReportFactory

STEP = "deepsynth.checklist_group"


@pytest.mark.django_db
def test_repeats_other_judges_and_confidence():
    judge, other = JudgeConfigFactory(), JudgeConfigFactory()
    report = ReportFactory()
    first = [VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=k, label="correct")
             for k in (1, 2, 3, 4)]
    # target 1: two more repeats, one of them disagreeing → 1/2
    VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=1, repeat=1, label="omitted")
    VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=1, repeat=2, label="correct")
    # target 2: another judge configuration disagrees → 1
    VerdictFactory(report=report, judge_config=other, step=STEP, target_id=2, label="incorrect")
    # target 3: the judge said it was 30 % sure → 0.7
    first[2].confidence = 0.3
    first[2].save(update_fields=["confidence"])
    u = verdict_uncertainty([v.pk for v in first])
    assert u == {first[0].pk: pytest.approx(0.5), first[1].pk: 1.0, first[2].pk: pytest.approx(0.7), first[3].pk: 0.0}
