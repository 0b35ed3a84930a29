"""Run by ``test_heavy_modules.py`` in a pytest process of its own (the name keeps the default
collection away): renders the run page with its calibrated card, the calibrated-scores API, the
dashboards (leaderboard, human ranking, agreement with "judge vs people", charts, look next, run
progress) and their API answers as a curator, then asserts that none of ``HEAVY`` was imported.
Calibrated scores are asked of a worker and none computes them here (``apply_async`` records)."""

import sys

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Role
from annotation.services.projects import membership_add
from annotation.tasks import refresh_calibrated_scores
from tests.annotation.calibration.test_calibrated_api import _judged, _label_sample, _project
from tests.annotation_factories import annotator

HEAVY = ("ppi_py", "numba", "statsmodels", "sklearn", "pandas", "openai", "httpx", "pydantic")

PAGES = ["dashboards:index", "dashboards:leaderboard", "dashboards:human", "dashboards:agreement",
         "dashboards:agreement_inter_annotator", "dashboards:chart_verdicts", "dashboards:chart_scores",
         "dashboards:chart_human_vs_auto", "dashboards:judge_sensitivity", "dashboards:look_next",
         "dashboards:run_progress", "runs:list"]
API = ["api:dashboard-judge-sensitivity", "api:dashboard-look-next", "api:dashboard-run-progress",
       "api:dashboard-chart-recall-by-quartile", "api:dashboard-chart-coverage-by-window",
       "api:dashboard-chart-discipline-heatmap"]


def loaded() -> list[str]:
    return sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)


@pytest.mark.django_db
def test_pages_and_api_answers_import_no_heavy_module(client, owner, monkeypatch):
    asked = []
    monkeypatch.setattr(refresh_calibrated_scores, "apply_async", lambda args, **kwargs: asked.append(args))
    assert loaded() == [], "imported before any request"
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=30)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    client.force_login(owner)
    api = APIClient()
    api.force_login(owner)

    page = client.get(reverse("runs:detail", kwargs={"run_id": run.pk}))
    assert page.status_code == 200 and 'id="calibrated-scores"' in page.content.decode()
    answer = api.get(reverse("api:run-calibrated", kwargs={"pk": run.pk}), {"project": project.pk})
    assert answer.status_code == 200 and answer.json()["statistics"]["state"] in ("updating", "no_worker")
    assert asked, "a worker was asked for the calibrated scores"
    for name in PAGES:
        response = client.get(reverse(name), {"protocol": "deepsynth"})
        assert response.status_code == 200, (name, response.status_code)
    for name in API:
        response = api.get(reverse(name), {"protocol": "deepsynth"})
        assert response.status_code < 500, (name, response.status_code)
    assert loaded() == []
