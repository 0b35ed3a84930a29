"""The 500s of issue 27 §4, each through the page or API that gave it: huge integers in project
``overlap``/``seed``, label ``item`` (single and batch), the task/system pickers of the new-project,
new-run and new-task-set pages, ``hold_seconds``/``hold_minutes``, the human dashboards' ids, and
judge configurations whose values break the rules (refused when saved; an old bad row stops a run
start with a clear 400). Nothing is stored by any of them."""

import pytest
from django.test import Client

from annotation.models import AnnotationProject, Label
from benchmark.models import TaskSet
from scoring.models import EvaluationRun, JudgeConfig
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db
HUGE = 10**25
HUGE_TEXT = "9" * 20


def _not_500(response, *expected):
    assert response.status_code != 500 and response.status_code in expected, (
        response.status_code, response.content[:400])
    return response


def test_project_numbers_beyond_range_are_400s_naming_the_field(world):
    curator = client_for(world.users["curator"])
    before = AnnotationProject.objects.count()
    for field, value in (("overlap", HUGE), ("seed", HUGE), ("hold_seconds", 10**14), ("hold_seconds", HUGE),
                         ("overlap", -1), ("seed", "x"), ("tasks", [HUGE]), ("systems", [HUGE]), ("task_set", HUGE)):
        body = {"name": "huge", "kind": "pairwise", "tasks": [world.task.pk], field: value}
        answer = _not_500(curator.post("/api/projects/", body, format="json"), 400)
        assert field in answer.json(), answer.json()
    patched = _not_500(curator.patch(f"/api/projects/{world.project_a.pk}/", {"hold_seconds": 10**14},
                                     format="json"), 400)
    assert "hold_seconds" in patched.json()
    assert AnnotationProject.objects.count() == before


def test_a_label_for_an_item_beyond_range_is_a_400_single_and_batched(world):
    annotator = client_for(world.users["ann_a"])
    body = {"item": HUGE, "value": {"label": "x"}, "client_token": "7c0a4a8e-1a7e-4f53-9a0e-0f3a2d9b1c11"}
    single = _not_500(annotator.post("/api/labels/", body, format="json"), 400)
    assert "item" in single.json()
    batch = _not_500(annotator.post("/api/labels/batch/", [body, {**body, "item": HUGE_TEXT}], format="json"),
                     200, 207, 400)
    assert "item" in batch.content.decode()
    assert not Label.objects.filter(annotator=world.users["ann_a"]).exclude(item__project=world.project_a).exists()


@pytest.mark.parametrize("field", ["tasks", "systems", "task_set", "judge_config"])
def test_the_new_project_page_refuses_huge_pickers(world, field):
    browser = Client()
    browser.force_login(world.users["curator"])
    before = AnnotationProject.objects.count()
    page = _not_500(browser.post("/annotate/new/", {"kind": "pairwise", "name": "p", "hold_minutes": 30,
                                                    "component": "report", field: str(HUGE)}), 400)
    assert AnnotationProject.objects.count() == before and page.context["form"].errors.get(field)


@pytest.mark.parametrize("field", ["tasks", "systems", "task_set", "judge_config"])
def test_the_new_run_page_refuses_huge_pickers(world, field):
    browser = Client()
    browser.force_login(world.users["curator"])
    before = EvaluationRun.objects.count()
    page = _not_500(browser.post("/runs/new/", {"protocol": world.task.protocol, "judge_config": world.project_a.judge_config_id,
                                                field: str(HUGE)}), 400, 200)
    assert EvaluationRun.objects.count() == before and page.context["form"].errors.get(field)


def test_the_new_task_set_page_refuses_huge_tasks(world):
    browser = Client()
    browser.force_login(world.users["curator"])
    before = TaskSet.objects.count()
    page = _not_500(browser.post("/benchmark/task-sets/new/", {"name": "huge", "tasks": [str(HUGE), "-1"]}), 400, 200)
    assert TaskSet.objects.count() == before and page.context["form"].errors.get("tasks")
    _not_500(browser.get("/benchmark/task-sets/new/", {"discipline": str(HUGE)}), 200, 400)


def test_a_huge_hold_time_on_the_edit_page_is_a_400(world):
    browser = Client()
    browser.force_login(world.users["curator"])
    before = AnnotationProject.objects.get(pk=world.project_a.pk).hold_duration
    for minutes in (str(10**20), str(10**12), "-5"):
        page = _not_500(browser.post(f"/annotate/{world.project_a.pk}/edit/", {
            "name": "A", "description": "", "hold_minutes": minutes, "status": "active"}), 400)
        assert "hold_minutes" in page.context["form"].errors
    assert AnnotationProject.objects.get(pk=world.project_a.pk).hold_duration == before


def test_the_human_dashboards_refuse_ids_beyond_range(world):
    curator = client_for(world.users["curator"])
    for param in ("project", "task_set"):
        answer = _not_500(curator.get("/api/dashboards/human/", {param: HUGE_TEXT}), 400)
        assert param in answer.content.decode()
        page = _not_500(curator.get("/dashboards/human/", {param: str(HUGE)}, follow=True), 200)
        assert f"{param}: " in page.content.decode()
        _not_500(curator.get("/dashboards/charts/human-vs-automated/", {param: str(HUGE)}, follow=True), 200, 400)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("options", [], "must be a JSON object"), ("options", "fast", "must be a JSON object"),
    ("timeout_seconds", 0, "more than 0"), ("timeout_seconds", -5, "more than 0"),
    ("temperature", 1e308, "at most 2"), ("temperature", -0.5, "at least 0"), ("repeats", 0, "1"),
    ("max_concurrency", HUGE, ""), ("max_retries", 10**6, ""), ("price_input_per_million", -1, "at least 0"),
])
def test_judge_configurations_with_bad_values_are_refused_and_not_stored(world, field, value, message):
    curator = client_for(world.users["curator"])
    before = JudgeConfig.objects.count()
    answer = _not_500(curator.post("/api/judge-configs/", {"name": "bad", "backend": "offline", field: value},
                                   format="json"), 400)
    assert field in answer.json() and message in str(answer.json()[field])
    assert JudgeConfig.objects.count() == before
    browser = Client()
    browser.force_login(world.users["curator"])
    form = {"name": "bad", "backend": "offline", "model": "", "base_url": "", "temperature": 0, "prompt_version": "v1",
            "repeats": 1, "max_concurrency": 1, "timeout_seconds": 10, "max_retries": 1,
            "price_input_per_million": 0, "price_output_per_million": 0, "embedding_backend": ""}
    if field != "options":
        _not_500(browser.post("/runs/judges/new/", {**form, field: value}), 400)
        assert JudgeConfig.objects.count() == before


def test_a_stored_configuration_with_bad_options_stops_a_run_start_with_a_clear_400(world):
    config = world.project_a.judge_config
    JudgeConfig.objects.filter(pk=config.pk).update(options=["not", "an", "object"])  # a row from before the rules
    curator = client_for(world.users["curator"])
    started = _not_500(curator.post(f"/api/runs/{world.run_pending.pk}/start/"), 400)
    assert "cannot run: options: must be a JSON object" in started.content.decode()
    assert EvaluationRun.objects.get(pk=world.run_pending.pk).status == "pending"
    runs = EvaluationRun.objects.count()
    created = _not_500(curator.post("/api/runs/", {
        "protocol": world.task.protocol, "judge_config": config.pk, "systems": [world.report.system_id],
        "tasks": [world.task.pk], "start": True}, format="json"), 400)
    assert "options" in created.content.decode()
    assert EvaluationRun.objects.count() == runs  # run_launch: a run that cannot start is not kept half-made
    JudgeConfig.objects.filter(pk=config.pk).update(options={}, timeout_seconds=0)
    assert "timeout_seconds" in _not_500(curator.post(f"/api/runs/{world.run_pending.pk}/start/"), 400).content.decode()
