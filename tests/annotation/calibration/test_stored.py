"""Calibrated scores are computed by a worker and stored with the digest of their inputs: a read asks
once, serves the stored figures marked while newer ones are computed, and the figures equal those
computed in the request before (the same function on the same inputs, compared number by number)."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.calibration import stored
from annotation.calibration.selectors import calibrated_scores, calibration_figures
from annotation.models import CalibratedScores, Role
from annotation.services.projects import membership_add
from annotation.tasks import refresh_calibrated_scores
from scoring.models import Verdict
from tests.annotation.calibration.test_calibrated_api import STEP, _judged, _label_sample, _project
from tests.annotation_factories import VerdictFactory, annotator

pytestmark = pytest.mark.django_db


@pytest.fixture
def asked(monkeypatch):
    calls = []
    monkeypatch.setattr(refresh_calibrated_scores, "apply_async", lambda args, **kwargs: calls.append(args))
    return calls


def test_a_read_asks_a_worker_once_then_serves_its_figures_and_marks_them_stale_after_a_label(owner, asked):
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=30)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    api = APIClient()
    api.force_login(owner)
    url = reverse("api:run-calibrated", kwargs={"pk": run.pk})

    first = api.get(url, {"project": project.pk}).json()
    again = api.get(url, {"project": project.pk}).json()
    assert first["statistics"]["state"] in ("updating", "no_worker") and first["metrics"] == []
    assert again["statistics"]["state"] == first["statistics"]["state"] and len(asked) == 1  # asked once
    row = CalibratedScores.objects.get()
    assert refresh_calibrated_scores(row.pk) == "refreshed"  # what the worker runs
    current = api.get(url, {"project": project.pk}).json()
    assert current["statistics"]["state"] == "current" and current["metrics"]

    # the figures are what the request computed before: calibration_figures on the same inputs
    inline = calibration_figures(CalibratedScores.objects.get().inputs)
    for entry in inline:
        for system in entry["systems"]:
            for key in ("rectifier_var", "judge_var", "z"):
                system.pop(key, None)
        if entry["best_vs_second"]:
            entry["best_vs_second"].pop("parts", None)
    assert current["metrics"] == inline

    report = Verdict.objects.filter(judge_config=judge).first().report
    VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=999, label="correct")  # one unit more
    stale = api.get(url, {"project": project.pk}).json()
    assert stale["statistics"]["state"] in ("updating", "no_worker") and len(asked) == 2
    assert stale["metrics"] == current["metrics"]  # the previous figures, marked, while the worker computes
    newest = CalibratedScores.objects.order_by("-created_at").first()
    refresh_calibrated_scores(newest.pk)
    assert CalibratedScores.objects.count() == 1  # the superseded row is gone
    assert api.get(url, {"project": project.pk}).json()["statistics"]["state"] == "current"
    assert refresh_calibrated_scores(10**9) == "missing"


def test_stale_figures_are_served_only_to_readers_hidden_the_same_things(owner, asked, monkeypatch):
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=30)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    calibrated_scores(run=run, project=project, user=owner)
    refresh_calibrated_scores(CalibratedScores.objects.get().pk)
    monkeypatch.setattr(stored, "audience_of", lambda user: "another audience")
    other = calibrated_scores(run=run, project=project, user=owner)
    assert other["metrics"] == [] and other["statistics"]["state"] in ("updating", "no_worker")
