"""``/api/dashboards/…``: each endpoint's JSON is exactly what the page's selector returns for the same rows."""

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.dashboards import selectors as s
from tests.annotation_factories import annotator
from tests.dashboards.builders import agreement_setup, deepsynth_run, preferences

pytestmark = pytest.mark.django_db

NAMES = ("leaderboard", "human", "agreement", "chart-verdicts", "chart-scores", "chart-human-vs-automated")


def expected(data):
    """The selector's result as the JSON the endpoint sends (numbers survive the round trip exactly)."""
    return json.loads(json.dumps(s.jsonable(data)))


def get(client, name, **params):
    response = client.get(reverse(f"api:dashboard-{name}"), params)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/json")
    return response.json()


@pytest.fixture
def api(db):
    client = APIClient()
    client.force_authenticate(annotator("reader"))
    return client


@pytest.mark.parametrize("name", NAMES)
def test_login_required(name):
    assert APIClient().get(reverse(f"api:dashboard-{name}")).status_code == 403


@pytest.mark.parametrize("name", NAMES)
def test_empty_database(api, name):
    get(api, name)


def test_leaderboard_equals_selector(api):
    run, systems = deepsynth_run()
    deepsynth_run(systems=systems, name="run B", seed=3)
    body = get(api, "leaderboard", protocol="deepsynth")
    board = s.leaderboard(protocol="deepsynth")
    assert body == expected(s.leaderboard_public(board))
    assert "systems" not in body
    first = body["rows"][0]["cells"][0]
    cell = board["rows"][0]["cells"][0]
    assert (first["estimate"], first["low"], first["high"]) == (cell["estimate"], cell["low"], cell["high"])
    assert isinstance(first["estimate"], float)
    narrowed = get(api, "leaderboard", protocol="deepsynth", run=run.pk)
    assert narrowed == expected(s.leaderboard_public(s.leaderboard(protocol="deepsynth", run_id=run.pk)))
    assert narrowed["n_runs"] == 1


def test_human_ranking_equals_selector(api):
    _, systems = deepsynth_run()
    preferences(systems=systems)
    preferences(systems=systems, source="other", seed=5)
    body = get(api, "human")
    assert body == expected(s.human_ranking())
    assert body["systems"] and body["correlations"]
    only = get(api, "human", source="other")
    assert only == expected(s.human_ranking(source="other"))
    assert only["n_comparisons"] < body["n_comparisons"]


def test_charts_equal_selectors(api):
    run, systems = deepsynth_run()
    preferences(systems=systems)
    assert get(api, "chart-verdicts") == expected(s.verdict_breakdown(protocol="deepsynth"))
    assert get(api, "chart-verdicts", run=run.pk) == expected(s.verdict_breakdown(protocol="deepsynth", run_id=run.pk))
    scores = get(api, "chart-scores", metric="general")
    assert scores == expected(s.score_points(protocol="deepsynth", metric="general"))
    assert scores["metric"] == "general" and all(g["points"] for g in scores["groups"])
    vs = get(api, "chart-human-vs-automated")
    assert vs == expected(s.human_vs_automated())
    assert vs["correlation"]["points"] and vs["metric"] == vs["options"][0]
    chosen = get(api, "chart-human-vs-automated", metric="deepsynth:precision")
    assert chosen["correlation"]["metric"] == "precision"


def test_agreement_restricted_like_the_page():
    project, owner, users = agreement_setup()
    client = APIClient()
    client.force_authenticate(owner)
    body = get(client, "agreement")
    assert body == expected({"judge": s.judge_agreement(user=owner), "iaa": s.inter_annotator(user=owner),
                             "imported": s.imported_agreement()})
    assert body["judge"]["groups"]
    # an annotator of the project curates nothing: the selectors show them no project, nor does the API
    client.force_authenticate(users[0])
    body = get(client, "agreement")
    assert body == expected({"judge": s.judge_agreement(user=users[0]), "iaa": s.inter_annotator(user=users[0]),
                             "imported": s.imported_agreement()})
    assert not body["judge"]["groups"]
