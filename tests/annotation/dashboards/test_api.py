"""``/api/dashboards/…``: each endpoint's JSON is exactly what the page's selector returns for the same rows."""

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.dashboards.inter_annotator import inter_annotator
from annotation.services.agreement import agreement_statistics_settle
from annotation.dashboards import agreement, human, judge_consistency
from annotation.dashboards import selectors as s
from tests.annotation_factories import annotator
from tests.annotation.dashboards.builders import agreement_setup, deepsynth_run, preferences, run_tasks

pytestmark = pytest.mark.django_db

NAMES = ("leaderboard", "human", "agreement", "chart-verdicts", "chart-scores", "chart-human-vs-automated")


def expected(data):
    """The selector's result as the JSON the endpoint sends (numbers survive the round trip exactly)."""
    return json.loads(json.dumps(s.jsonable(data)))


SERVED = ("statistics", "pending", "poll_seconds", "inline_preferences")  # stored figures' state beside them


def figures(body: dict) -> dict:
    """A human ranking's or judge vs people's answer without the state of its stored figures
    (``human_stored``, ``judge_stored``)."""
    assert body.get("statistics", {"state": "current"})["state"] == "current"
    return {k: v for k, v in body.items() if k not in SERVED}


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


# What each endpoint says of an empty database: nothing to show, counted as nothing.
EMPTY = {
    "leaderboard": lambda body: body["rows"] == [] and body["n_cards"] == 0,
    "human": lambda body: body["systems"] == [] and body["n_comparisons"] == 0,
    "agreement": lambda body: body["judge"]["groups"] == [] and body["iaa"]["projects"] == [],
    "chart-verdicts": lambda body: body["rows"] == [],
    "chart-scores": lambda body: body["groups"] == [],
    "chart-human-vs-automated": lambda body: body["options"] == [] and body["correlation"] is None,
    "chart-recall-by-quartile": lambda body: body["rows"] == [] and body["n_tasks"] == 0,
    "chart-coverage-by-window": lambda body: body["series"] == [] and body["n_cards"] == 0,
    "chart-discipline-heatmap": lambda body: body["rows"] == [] and body["n_cards"] == 0,
    "judge-sensitivity": lambda body: body["judges"] == [] and body["note"].startswith("0 judge configurations"),
    "run-progress": lambda body: body["runs"] == [],
}


@pytest.mark.parametrize("name", NAMES)
def test_empty_database(api, name):
    body = get(api, name)
    assert EMPTY[name](body), body


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
    run, systems = deepsynth_run()
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run))
    preferences(systems=systems, source="other", seed=5)
    body = get(api, "human")
    assert figures(body) == expected(human.human_ranking())
    assert body["systems"] and not body["correlations"] and body["correlation_note"]  # no protocol: no correlation
    scoped = get(api, "human", protocol="deepsynth")
    assert figures(scoped) == expected(human.human_ranking(scope=human.Scope(protocol="deepsynth")))
    assert scoped["correlations"] and all(c["protocol"] == "deepsynth" for c in scoped["correlations"])
    only = get(api, "human", source="other")
    assert figures(only) == expected(human.human_ranking(scope=human.Scope(source="other")))
    assert only["n_comparisons"] < body["n_comparisons"] and only["scope"]["source"] == "other"
    assert get(api, "human", protocol="reportbench")["n_comparisons"] == 0  # the preferences are on deepsynth tasks
    assert api.get(reverse("api:dashboard-human"), {"task_set": "x"}).status_code == 400


def test_charts_equal_selectors(api):
    run, systems = deepsynth_run()
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run))
    assert get(api, "chart-verdicts") == expected(s.verdict_breakdown(protocol="deepsynth"))
    assert get(api, "chart-verdicts", run=run.pk) == expected(s.verdict_breakdown(protocol="deepsynth", run_id=run.pk))
    scores = get(api, "chart-scores", metric="general")
    assert scores == expected(s.score_points(protocol="deepsynth", metric="general"))
    assert scores["metric"] == "general" and all(g["points"] for g in scores["groups"])
    vs = get(api, "chart-human-vs-automated")
    assert figures(vs) == expected(human.human_vs_automated())
    assert vs["correlation"]["points"] and vs["metric"] == vs["options"][0]
    chosen = get(api, "chart-human-vs-automated", metric="deepsynth:precision")
    assert chosen["correlation"]["metric"] == "precision"


def test_agreement_restricted_like_the_page():
    project, owner, users = agreement_setup()
    client = APIClient()
    client.force_authenticate(owner)
    body = get(client, "agreement")
    body["judge"] = figures(body["judge"])
    iaa = agreement_statistics_settle(inter_annotator(user=owner))
    assert body == expected({"judge": agreement.judge_agreement(user=owner), "iaa": iaa,
                             "imported": human.imported_agreement(),
                             "judge_consistency": judge_consistency.judge_consistency()})
    assert body["judge"]["groups"]
    # an annotator of the project curates nothing: the selectors show them no project, nor does the API
    client.force_authenticate(users[0])
    body = get(client, "agreement")
    body["judge"] = figures(body["judge"])
    iaa = agreement_statistics_settle(inter_annotator(user=users[0]))
    assert body == expected({"judge": agreement.judge_agreement(user=users[0]), "iaa": iaa,
                             "imported": human.imported_agreement(), "judge_consistency": None})
    assert not body["judge"]["groups"]


NEW_NAMES = ("chart-recall-by-quartile", "chart-coverage-by-window", "chart-discipline-heatmap", "judge-sensitivity",
             "run-progress")


@pytest.mark.parametrize("name", (*NEW_NAMES, "look-next"))
def test_new_endpoints_need_login(name):
    assert APIClient().get(reverse(f"api:dashboard-{name}")).status_code == 403


@pytest.mark.parametrize("name", NEW_NAMES)
def test_new_endpoints_on_empty_database(api, name):
    body = get(api, name)
    assert EMPTY[name](body), body


def test_papers_figures_equal_selectors(api):
    from annotation.dashboards import figures
    from tests.annotation_factories import JudgeConfigFactory
    from tests.annotation.dashboards.builders import deepscholar_run, reportbench_run, surveylens_run

    judge_a, judge_b = JudgeConfigFactory(name="A"), JudgeConfigFactory(name="B")
    run, systems, tasks = reportbench_run(n_tasks=3, judge=judge_a)
    reportbench_run(tasks=tasks, systems=systems, judge=judge_b, name="rb B")
    deepscholar_run(n_tasks=3)
    surveylens_run(tasks_per_discipline=1)
    body = get(api, "chart-recall-by-quartile")
    assert body == expected(figures.recall_by_quartile()) and len(body["rows"]) == 3
    assert get(api, "chart-recall-by-quartile", run=run.pk) == expected(figures.recall_by_quartile(run_id=run.pk))
    body = get(api, "chart-coverage-by-window")
    assert body == expected(figures.coverage_by_window()) and body["windows"] == [0, 1, 2, 3, 4, 5]
    body = get(api, "chart-discipline-heatmap", metric="rams_outline")
    assert body == expected(figures.discipline_heatmap(metric="rams_outline")) and body["rows"]
    body = get(api, "judge-sensitivity", judge_a=judge_b.pk, judge_b=judge_a.pk)
    assert body == expected(figures.judge_sensitivity(protocol="reportbench", judge_a=judge_b.pk, judge_b=judge_a.pk))
    assert body["metrics"] and body["n_shared"] == 9


@pytest.mark.parametrize("name, params, message", [
    ("chart-discipline-heatmap", {"metric": "nope"}, "metric: no SurveyLens score card has 'nope'"),
    ("chart-discipline-heatmap", {"protocol": "nope"}, "protocol: 'nope' is not one of"),
    ("judge-sensitivity", {"judge_a": "1", "judge_b": "1"}, "judge_a: judge configuration 1 has no report score card"),
    ("judge-sensitivity", {"judge_a": "z"}, "judge_a: 'z' is not an id"),
])
def test_bad_parameters_answer_400_with_the_reason(api, name, params, message):
    from tests.annotation.dashboards.builders import surveylens_run

    surveylens_run(tasks_per_discipline=1)
    response = api.get(reverse(f"api:dashboard-{name}"), params)
    assert response.status_code == 400 and message in response.json()["detail"]


def test_look_next_for_curators_only():
    from annotation.dashboards import triage
    from tests.annotation_factories import VerdictFactory, curator

    first = VerdictFactory(label="correct", confidence=0.1)
    client = APIClient()
    client.force_authenticate(annotator("reader"))
    assert client.get(reverse("api:dashboard-look-next")).status_code == 403
    client.force_authenticate(curator("boss"))
    body = get(client, "look-next")
    assert body == expected(triage.look_next()) and [i["verdict_id"] for i in body["items"]] == [first.pk]
    assert get(client, "look-next", confidence="0.05")["items"] == []
    assert client.get(reverse("api:dashboard-look-next"), {"confidence": "x"}).status_code == 400


def test_run_progress_equals_selector(api):
    from annotation.dashboards import progress
    from tests.annotation.dashboards.test_history_and_progress import _running_run

    _running_run("live")
    body = get(api, "run-progress")
    assert body == expected(progress.runs_in_progress()) and body["runs"][0]["total"] == 7
