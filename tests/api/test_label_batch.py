"""POST /api/labels/batch/ and POST /api/projects/<id>/next/?count=N (issue #20)."""

import uuid

import pytest
from rest_framework.test import APIClient

from core.models import AuditLog
from annotation.models import Assignment, Label
from tests.annotation_factories import agreement_project, annotator, curator, hold


@pytest.fixture
def blind(db):
    owner = curator("owner")
    alice, bob = annotator("alice"), annotator("bob")
    project = agreement_project(owner, [alice, bob], labels=("correct", "omitted", "correct", "omitted"), overlap=2)
    return project, alice, bob


def _client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_each_answer_is_accepted_or_refused_on_its_own(blind):
    project, alice, bob = blind
    outsider = agreement_project(curator("other"), [bob], name="other project")
    client = _client(alice)
    claims = client.post(f"/api/projects/{project.pk}/next/?count=3").json()["claims"]
    first, second, third = (claim["assignment"]["item"] for claim in claims)
    form = str(uuid.uuid4())
    body = [
        {"item": first, "value": {"label": "correct"}, "client_token": form},
        {"item": second, "value": {"label": "nonsense"}, "client_token": str(uuid.uuid4())},
        {"item": outsider.items.first().pk, "value": {"label": "correct"}, "client_token": str(uuid.uuid4())},
        {"item": 10**9, "value": {"label": "correct"}, "client_token": str(uuid.uuid4())},
        {"item": third, "value": {"label": "omitted"}, "client_token": form},  # the first answer's form
        {"item": first, "value": {"label": "correct"}, "client_token": form},  # the same form again
        {"item": third},
    ]
    response = client.post("/api/labels/batch/", body, format="json")
    assert response.status_code == 200
    results = response.json()["results"]
    assert [row["status"] for row in results] == [201, 400, 404, 404, 400, 200, 400]
    assert results[5]["label"]["id"] == results[0]["label"]["id"]  # idempotent by its token
    assert "nonsense" in results[1]["error"]["detail"]
    # An item of a project one is not in reads exactly like one that does not exist.
    assert results[2]["error"]["detail"].replace(str(outsider.items.first().pk), "N") == \
        results[3]["error"]["detail"].replace(str(10**9), "N")
    assert "each form needs its own token" in results[4]["error"]["client_token"][0]
    assert set(results[6]["error"]) == {"value", "client_token"}
    assert list(Label.objects.filter(annotator=alice).values_list("item", flat=True)) == [first]
    assert AuditLog.objects.filter(action="label.submit").count() == 1
    held = set(Assignment.objects.filter(user=alice, status="active").values_list("item", flat=True))
    assert held == {second, third}  # refused answers keep their claims


def test_refusals_in_a_blind_project_reveal_nothing_hidden(blind):
    project, alice, bob = blind
    item = project.items.order_by("position").first()
    hold(item, bob), hold(item, alice)
    _client(bob).post("/api/labels/", {"item": item.pk, "value": {"label": "omitted"},
                                       "client_token": str(uuid.uuid4())}, format="json")
    results = _client(alice).post("/api/labels/batch/", [
        {"item": item.pk, "value": {"label": "correct", "judge_correct": True}, "client_token": str(uuid.uuid4())},
    ], format="json").json()["results"]
    assert results[0]["status"] == 400
    text = str(results[0]).lower()
    assert "omitted" not in text and "bob" not in text and "verdict" not in text.replace("judge_correct", "")


def test_malformed_or_too_many_answers_refuse_the_request(blind):
    project, alice, _ = blind
    client = _client(alice)
    assert client.post("/api/labels/batch/", {"item": 1}, format="json").status_code == 400
    too_many = [{"item": 1, "value": {}, "client_token": str(uuid.uuid4())}] * 51
    response = client.post("/api/labels/batch/", too_many, format="json")
    assert response.status_code == 400 and "50" in str(response.json())
    response = client.post("/api/labels/batch/", "[1,", content_type="application/json")
    assert response.status_code == 400
    assert not Label.objects.exists()


def test_batch_claims_are_held_capped_and_returned_again(blind):
    project, alice, bob = blind
    client = _client(alice)
    assert client.post(f"/api/projects/{project.pk}/next/?count=51").status_code == 400
    assert client.post(f"/api/projects/{project.pk}/next/?count=0").status_code == 400
    claims = client.post(f"/api/projects/{project.pk}/next/?count=3").json()["claims"]
    again = client.post(f"/api/projects/{project.pk}/next/?count=3").json()["claims"]
    assert [c["assignment"]["id"] for c in again] == [c["assignment"]["id"] for c in claims]
    assert all(c["item"]["revealed"] is False and c["item"]["judge"] is None for c in claims)
    # The single-claim answer keeps its shape: the oldest held claim.
    single = client.post(f"/api/projects/{project.pk}/next/").json()
    assert single["assignment"]["id"] == claims[0]["assignment"]["id"]
    everything = client.post(f"/api/projects/{project.pk}/next/?count=50").json()["claims"]
    assert len(everything) == project.items.count()  # 4 items, k = 2: one slot each for alice
    assert Assignment.objects.filter(user=alice, status="active").count() == 4
