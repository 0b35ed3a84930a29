"""The rating kind through the API: a project of one item per report, an annotator's next item
and scores, refusals naming the field, and Krippendorff's α in the agreement figures equal to
the ``krippendorff`` package on the same scores (units = item × criterion, interval level)."""

import uuid

import krippendorff
import numpy as np
import pytest
from rest_framework.test import APIClient

from annotation.models import AnnotationItem, AnnotationProject, Label
from tests.annotation_factories import annotator, curator
from tests.factories import ReportFactory, SystemFactory, TaskFactory

CRITERIA = ["coverage", "structure", "relevance"]


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def study(db):
    owner = curator("owner")
    systems = [SystemFactory() for _ in range(3)]
    tasks = [TaskFactory(protocol="surveylens") for _ in range(2)]
    for task in tasks:
        for system in systems:
            ReportFactory(task=task, system=system)
    answer = _client(owner).post("/api/projects/", {
        "name": "experts", "kind": "rating", "tasks": [t.pk for t in tasks], "criteria": CRITERIA,
        "scale": {"min": 1, "max": 5}, "overlap": 2, "blind": True}, format="json")
    assert answer.status_code == 201, answer.content
    project = AnnotationProject.objects.get(pk=answer.json()["id"])
    raters = [annotator("ana"), annotator("ben")]
    for rater in raters:
        assert _client(owner).post(f"/api/projects/{project.pk}/members/", {"username": rater.username,
                                   "role": "annotator"}, format="json").status_code in (200, 201)
    return owner, project, raters, tasks


def test_create_makes_one_item_per_report(study):
    owner, project, _, tasks = study
    items = AnnotationItem.objects.filter(project=project)
    assert items.count() == 6 and {i.target_kind for i in items} == {"report"}
    assert project.criteria == CRITERIA and project.scale["min"] == 1 and project.scale["max"] == 5
    assert project.label_level == "interval" and project.reveal == "close"


def test_next_item_is_blind_and_scores_are_taken(study):
    _, project, (ana, _), _ = study
    client = _client(ana)
    answer = client.post(f"/api/projects/{project.pk}/next/", format="json").json()
    target = answer["item"]["target"]
    assert target["kind"] == "report" and target["system"] is None and target["report_id"] is None
    assert answer["item"]["item"]["target_id"] is None
    assert target["criteria"] == CRITERIA and target["text"].startswith("# Report")
    posted = client.post("/api/labels/", {"item": answer["item"]["item"]["id"], "value": {
        "scores": {"coverage": 4, "structure": 3, "relevance": 5}, "rationale": "broad but loosely ordered"}, "client_token": str(uuid.uuid4())},
        format="json")
    assert posted.status_code == 201, posted.content
    assert Label.objects.get().value == {"scores": {"coverage": 4, "structure": 3, "relevance": 5},
                                         "rationale": "broad but loosely ordered"}


@pytest.mark.parametrize("scores, field", [
    ({"coverage": 6, "structure": 3, "relevance": 5}, "value.scores.coverage"),
    ({"coverage": 4, "structure": 3, "relevance": 5, "novelty": 2}, "value.scores.novelty"),
    ({"coverage": 4, "structure": 3}, "value.scores.relevance"),
    ({"coverage": "4", "structure": 3, "relevance": 5}, "value.scores.coverage"),
])
def test_bad_scores_are_refused_naming_the_field(study, scores, field):
    _, project, (ana, _), _ = study
    client = _client(ana)
    item_id = client.post(f"/api/projects/{project.pk}/next/", format="json").json()["item"]["item"]["id"]
    answer = client.post("/api/labels/", {"item": item_id, "value": {"scores": scores}, "client_token": str(uuid.uuid4())}, format="json")
    assert answer.status_code == 400 and field in answer.content.decode(), answer.content
    assert not Label.objects.exists()


@pytest.mark.parametrize("body, field", [
    ({"scale": {"min": 1, "max": 500}}, "scale.max"),
    ({"scale": {"min": 1, "max": 5, "anchors": {"7": "great"}}}, "scale.anchors.7"),
    ({"criteria": ["coverage", "coverage"]}, "criteria"),
])
def test_bad_settings_are_refused_naming_the_field(db, body, field):
    owner = curator("owner")
    task = TaskFactory()
    ReportFactory(task=task)
    answer = _client(owner).post("/api/projects/", {"name": "x", "kind": "rating", "tasks": [task.pk],
                                                    "criteria": CRITERIA, **body}, format="json")
    assert answer.status_code == 400 and field in answer.content.decode(), answer.content
    assert not AnnotationProject.objects.exists()


def test_alpha_in_the_agreement_figures_equals_the_krippendorff_package(study):
    owner, project, raters, _ = study
    rng = np.random.default_rng(3)
    data = {}  # (rater, item, criterion) -> score
    for rater in raters:
        client = _client(rater)
        while True:
            answer = client.post(f"/api/projects/{project.pk}/next/", format="json").json()
            if answer["item"] is None:
                break
            item_id = answer["item"]["item"]["id"]
            scores = {c: int(rng.integers(1, 6)) for c in CRITERIA}
            assert client.post("/api/labels/", {"item": item_id, "value": {"scores": scores}, "client_token": str(uuid.uuid4())},
                               format="json").status_code == 201
            for c, s in scores.items():
                data[rater.pk, item_id, c] = s
    units = sorted({(item, c) for _, item, c in data})
    reliability = np.array([[data.get((r.pk, *unit), np.nan) for unit in units] for r in raters], dtype=float)
    expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement="interval")
    figures = _client(owner).get(f"/api/dashboards/agreement/?project={project.pk}").json()
    mine = next(p for p in figures["iaa"]["projects"] if p["id"] == project.pk)
    assert mine["stats"]["level"] == "interval"
    assert mine["stats"]["alpha"] == pytest.approx(expected, abs=1e-9)
    assert mine["stats"]["n_units"] == len(units)
