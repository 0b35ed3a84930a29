"""``calibration_simulation`` on the shipped demo data: the issue's targets (coverage ≥ 0.93 at
nominal 95 %, width ratio < 1 against human-only at the same n), deterministic for a seed; the
measured noise model from agreement labels on the demo judge's verdicts."""

import json

import pytest

from annotation.models import Role
from annotation.services.projects import membership_add, project_create
from annotation.simulation.calibration import calibration_simulation, demo_measured_confusion
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, annotator, label_all
from tests.factories import ReportFactory, TaskFactory


@pytest.mark.django_db
def test_calibration_simulation_meets_the_targets_and_is_deterministic():
    result = calibration_simulation(7, simulations=1000)
    assert result["simulations"] == 1000 and result["n_judge"] == 806
    assert result["coverage"] >= 0.93
    assert result["width_ratio"] < 1
    for model in result["noise_models"].values():
        assert model["coverage"] >= 0.93 and model["width_ratio"] < 1
    assert result["adaptive_lenient_judge"]["coverage"] >= 0.93
    assert "measured" not in result["noise_models"] and result["measured_from"].startswith("not run")
    assert calibration_simulation(7, simulations=1000) == result
    assert type(result["coverage"]) is float and json.loads(json.dumps(result)) == result
    with pytest.raises(ValueError, match="simulations"):
        calibration_simulation(7, simulations=0)
    measured = {"correct": {"correct": 0.9, "omitted": 0.1}, "omitted": {"omitted": 0.85, "correct": 0.15},
                "incorrect": {"incorrect": 0.5, "omitted": 0.5}}
    with_measured = calibration_simulation(7, simulations=200, measured=measured)
    assert with_measured["noise_models"]["measured"]["coverage"] >= 0.9


@pytest.mark.django_db
def test_measured_error_rates_come_from_settled_agreement_labels(owner):
    judge = JudgeConfigFactory(name="offline-heuristic")
    task = TaskFactory(protocol="deepsynth")
    report = ReportFactory(task=task)
    for k, label in enumerate(["omitted"] * 6 + ["correct"] * 4):
        VerdictFactory(report=report, judge_config=judge, step="deepsynth.checklist_group", target_id=k + 1,
                       label=label)
    project = project_create(name="demo agreement", kind="agreement", created_by=owner, tasks=[task],
                             judge_config=judge, label_set={"label": ["correct", "omitted", "incorrect"]})
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    from scoring.models import Verdict

    for item in project.items.order_by("position"):
        verdict = Verdict.objects.get(pk=item.target_id)
        # the expert finds 3 of the 6 "omitted" items covered
        label = "correct" if verdict.label == "omitted" and verdict.target_id <= 3 else verdict.label
        label_all(item, [expert], {"label": label})
    confusion, n = demo_measured_confusion()
    assert n == 10
    # add-one smoothing: omitted row counts (correct 3+1, omitted 3+1, incorrect 0+1) / 9
    assert confusion["omitted"]["correct"] == pytest.approx(4 / 9)
    assert confusion["correct"]["correct"] == pytest.approx(5 / 7)
    assert confusion["incorrect"]["incorrect"] == pytest.approx(1 / 3)
    result = calibration_simulation(3, simulations=100)
    assert "measured" in result["noise_models"] and result["measured_from"].startswith("10 settled")
