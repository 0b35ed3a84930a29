"""The judge API: verdict filters (unknown ones refused), redacted errors, and judge configurations
limited to the endpoints the deployment binds keys to."""

import pytest
from django.contrib.admin.sites import site
from rest_framework.test import APIClient

from scoring.models import EvaluationRun, JudgeConfig, RunJob, Verdict
from tests.annotation_factories import curator
from tests.factories import ReportFactory, SystemFactory, TaskFactory

KEY = "sk-test-APIkey0123456789abcdefgh"


@pytest.fixture
def api(db):
    client = APIClient()
    client.force_login(curator())
    return client


@pytest.fixture
def verdicts(db):
    """Two configurations; run 1 judged reports r1 and r2 with config A, run 2 report r3 with config B."""
    a = JudgeConfig.objects.create(name="A", backend="offline")
    b = JudgeConfig.objects.create(name="B", backend="offline")
    task = TaskFactory(protocol="deepsynth")
    r1, r2, r3 = (ReportFactory(task=task, system=SystemFactory()) for _ in range(3))
    runs = {}
    for name, config, reports in (("one", a, [r1, r2]), ("two", b, [r3])):
        run = EvaluationRun.objects.create(name=name, protocol="deepsynth", judge_config=config, status="finished")
        RunJob.objects.bulk_create([RunJob(run=run, report=r, step="deepsynth.checklist_group") for r in reports])
        runs[name] = run
    rows = []
    for config, report, step in ((a, r1, "s1"), (a, r1, "s2"), (a, r2, "s1"), (b, r3, "s1"), (a, r3, "s1")):
        rows.append(Verdict.objects.create(report=report, judge_config=config, prompt_version="v1", step=step,
                                           target_kind="checklist_item", target_id=len(rows) + 1, label="correct"))
    return {"runs": runs, "rows": rows, "reports": (r1, r2, r3), "configs": (a, b)}


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_verdicts_filter_by_run_report_step_and_configuration(api, verdicts):
    rows, (r1, _, _), (_, b) = verdicts["rows"], verdicts["reports"], verdicts["configs"]
    one, two = verdicts["runs"]["one"], verdicts["runs"]["two"]
    assert ids(api.get(f"/api/verdicts/?run={one.pk}")) == [rows[0].pk, rows[1].pk, rows[2].pk]
    assert ids(api.get(f"/api/verdicts/?run={two.pk}")) == [rows[3].pk]  # config A's verdict on r3 is not run two's
    assert ids(api.get(f"/api/verdicts/?report={r1.pk}")) == [rows[0].pk, rows[1].pk]
    assert ids(api.get(f"/api/verdicts/?run={one.pk}&step=s1")) == [rows[0].pk, rows[2].pk]
    assert ids(api.get(f"/api/verdicts/?judge_config={b.pk}")) == [rows[3].pk]


@pytest.mark.parametrize("query, field, message", [
    ("runs=5", "runs", "unknown filter 'runs'; known: "),
    ("system=1", "system", "unknown filter 'system'"),
    ("run=999999", "run", "no run '999999'"),
    ("run=abc", "run", "no run 'abc'"),
])
def test_unknown_filters_and_unknown_runs_are_refused(api, verdicts, query, field, message):
    response = api.get(f"/api/verdicts/?{query}")
    assert response.status_code == 400
    assert message in response.json()[field][0]


def test_a_stored_error_echoing_a_key_is_shown_redacted(api, verdicts, settings):
    settings.OPENAI_API_KEY = "plain-configured-key-42"
    row = verdicts["rows"][0]
    Verdict.objects.filter(pk=row.pk).update(
        label="", error=f"judge error: HTTP 401: Incorrect API key provided: {KEY} / plain-configured-key-42")
    shown = next(v for v in api.get(f"/api/verdicts/?report={row.report_id}").json()["results"] if v["id"] == row.pk)
    assert shown["error"] == "judge error: HTTP 401: Incorrect API key provided: [redacted] / [redacted]"


def test_a_configuration_may_only_name_an_allowed_endpoint(api, settings):
    settings.OPENAI_BASE_URL = "https://llm.internal.example/v1"
    settings.JUDGE_ENDPOINTS = {"http://vllm.internal.example:8000/v1": ""}
    body = {"name": "theirs", "backend": "openai", "model": "m", "base_url": "https://attacker.example/v1"}
    response = api.post("/api/judge-configs/", body, format="json")
    assert response.status_code == 400
    (message,) = response.json()["base_url"]
    assert "not an allowed judge endpoint" in message
    assert "http://vllm.internal.example:8000/v1, https://llm.internal.example/v1" in message
    assert not JudgeConfig.objects.filter(name="theirs").exists()
    for allowed in ("http://VLLM.internal.example:8000/v1/", "https://llm.internal.example/v1", ""):
        response = api.post("/api/judge-configs/", {**body, "name": f"ok {allowed}", "base_url": allowed},
                            format="json")
        assert response.status_code == 201, response.content


def test_the_admin_form_refuses_an_endpoint_that_is_not_allowed(db, settings):
    settings.JUDGE_ENDPOINTS = {}
    form_class = site._registry[JudgeConfig].get_form(request=None)
    form = form_class(data={"name": "x", "backend": "openai", "model": "m", "base_url": "https://attacker.example/v1",
                            "temperature": 0, "prompt_version": "v1", "repeats": 1, "max_concurrency": 1,
                            "timeout_seconds": 10, "max_retries": 1, "price_input_per_million": 0,
                            "price_output_per_million": 0, "options": "{}"})
    assert not form.is_valid()
    assert "not an allowed judge endpoint" in form.errors["base_url"][0]


def test_batch_mode_is_set_on_create_and_changed_with_patch(api, settings):
    settings.OPENAI_BASE_URL = "https://llm.internal.example/v1"
    body = {"name": "batched", "backend": "openai", "model": "m", "batch": True}
    response = api.post("/api/judge-configs/", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert (created["batch"], created["batch_discount"]) == (True, 0.5)
    response = api.patch(f"/api/judge-configs/{created['id']}/", {"batch": False, "batch_discount": 0.25}, format="json")
    assert response.status_code == 200, response.content
    config = JudgeConfig.objects.get(pk=created["id"])
    assert (config.batch, config.batch_discount, config.name) == (False, 0.25, "batched")


@pytest.mark.parametrize("fields, field, message", [
    ({"batch_discount": 1.5}, "batch_discount", "at most 1"),
    ({"batch_discount": -0.1}, "batch_discount", "at least 0"),
    ({"batch_discount": "NaN"}, "batch_discount", ""),
    ({"backend": "offline", "model": "", "batch": True}, "batch", "only an OpenAI-compatible endpoint"),
])
def test_bad_batch_settings_are_refused_naming_the_field(api, settings, fields, field, message):
    settings.OPENAI_BASE_URL = "https://llm.internal.example/v1"
    response = api.post("/api/judge-configs/", {"name": "b", "backend": "openai", "model": "m", **fields},
                        format="json")
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()[field])
    assert not JudgeConfig.objects.filter(name="b").exists()
    config = JudgeConfig.objects.create(name="kept", backend="openai", model="m")
    response = api.patch(f"/api/judge-configs/{config.pk}/", fields, format="json")
    assert response.status_code == 400, response.content
    config.refresh_from_db()
    assert (config.backend, config.batch, config.batch_discount) == ("openai", False, 0.5)
