"""Behaviour of the API beyond permissions: optimistic edits, uploads, lists, tokens, CSRF, schema."""

import io
import json
import uuid

from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchmark.services import uploads as benchmark_uploads
from benchmark.models import ChecklistItem, Report
from core.models import AuditLog
from tests.api.conftest import client_for


def test_patch_goes_through_proposable_update_and_a_stale_edit_is_409(world):
    curator = client_for(world.users["curator"])
    item = world.objs["checklist-item"]
    url = reverse("api:checklist-item-detail", kwargs={"pk": item.pk})
    ok = curator.patch(url, {"text": "Mentions the baseline.", "expected_version": item.version}, format="json")
    assert ok.status_code == 200, ok.content
    assert ok.json()["version"] == item.version + 1
    stale = curator.patch(url, {"text": "Another edit.", "expected_version": item.version}, format="json")
    assert stale.status_code == 409
    assert "changed by someone else" in stale.json()["detail"]
    assert ChecklistItem.objects.get(pk=item.pk).text == "Mentions the baseline."
    history = curator.get(reverse("api:checklist-item-revisions", kwargs={"pk": item.pk})).json()
    assert [row["action"] for row in history["results"]] == ["proposable.edit"]
    assert history["results"][0]["actor"] == "curator"
    revisions = reverse("api:checklist-item-revisions", kwargs={"pk": item.pk})
    for spelling, found in (("proposable.edit", 1), ("edit", 1), ("review.accepted", 0)):  # "edit": the old spelling
        assert curator.get(revisions, {"action": spelling}).json()["count"] == found, spelling
    unknown = curator.get(revisions, {"action": "tweak"})
    assert unknown.status_code == 400 and "unknown audit action 'tweak'" in unknown.json()["action"][0]


def test_review_and_field_errors(world):
    curator = client_for(world.users["curator"])
    nugget = world.objs["nugget"]
    url = reverse("api:nugget-review", kwargs={"pk": nugget.pk})
    edited = curator.post(url, {"status": "edited", "expected_version": 1}, format="json")
    assert edited.status_code == 400 and "edited" in json.dumps(edited.json())
    accepted = curator.post(url, {"status": "accepted", "expected_version": 1}, format="json")
    assert accepted.status_code == 200 and accepted.json()["review_status"] == "accepted"
    bad = curator.patch(reverse("api:nugget-detail", kwargs={"pk": nugget.pk}),
                        {"importance": "critical", "expected_version": 2}, format="json")
    assert bad.status_code == 400 and "importance" in bad.json()


def test_lists_filter_order_and_paginate(world):
    client = client_for(world.users["ann_a"])
    body = client.get(reverse("api:task-list"), {"protocol": world.task.protocol, "ordering": "-key"}).json()
    assert {"count", "next", "previous", "results"} <= body.keys()
    assert all(row["protocol"] == world.task.protocol for row in body["results"])
    keys = [row["key"] for row in body["results"]]
    assert keys == sorted(keys, reverse=True)
    assert client.get(reverse("api:task-list"), {"ordering": "survey__abstract"}).status_code == 400
    wrong = client.get(reverse("api:report-list"), {"task": "abc"})
    assert wrong.status_code == 400 and "task" in wrong.json()
    prompts = client.get(reverse("api:prompt-list"), {"task": world.task.pk, "review_status": "proposed"}).json()
    assert [row["id"] for row in prompts["results"]] == [world.objs["prompt"].pk]


def test_taskset_export_downloads_jsonl(world):
    response = client_for(world.users["viewer"]).get(reverse("api:taskset-export", kwargs={"pk": world.task_set.pk}))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in response["Content-Disposition"]
    lines = response.content.decode().splitlines()
    assert [json.loads(line)["key"] for line in lines] == [world.task.key]


def _upload_url():
    return reverse("api:report-list")


def test_report_upload_json_single_batch_and_files(world):
    curator = client_for(world.users["curator"])
    single = {"task": world.task.pk, "system": world.report.system_id, "text": "# New\n\nText [1]."}
    assert curator.post(_upload_url(), single, format="json").json() == {"created": 0, "updated": 1, "unchanged": 0}
    other = client_for(world.users["curator"]).post(
        reverse("api:system-list"), {"name": "sys-b", "workflow": "rag"}, format="json").json()
    batch = {"reports": [dict(single, system=other["id"])]}
    assert curator.post(_upload_url(), batch, format="json").status_code == 201
    md = io.BytesIO(b"# File report\n\nBody.")
    md.name = f"{world.task.key}.md"
    response = curator.post(_upload_url(), {"system": other["id"], "protocol": world.task.protocol, "files": [md]},
                            format="multipart")
    assert response.status_code == 200 and response.json()["updated"] == 1


def test_bad_uploads_are_refused_naming_the_problem_and_change_nothing(world, settings, monkeypatch):
    curator = client_for(world.users["curator"])
    before = list(Report.objects.values_list("pk", "content_hash"))
    monkeypatch.setattr(benchmark_uploads, "REPORT_MAX_BYTES", 1000)
    big = io.BytesIO(b"x" * 2000)
    big.name = f"{world.task.key}.md"
    system, protocol = world.report.system_id, world.task.protocol
    response = curator.post(_upload_url(), {"system": system, "protocol": protocol, "files": [big]},
                            format="multipart")
    assert response.status_code == 413 and response.json()["file"] == big.name
    too_long = {"task": world.task.pk, "system": system, "text": "y" * 2000}
    response = curator.post(_upload_url(), too_long, format="json")
    assert response.status_code == 413 and "limit is 1000 bytes" in response.json()["detail"]
    exe = io.BytesIO(b"MZ\x90\x00")
    exe.name = "report.exe"
    response = curator.post(_upload_url(), {"system": system, "protocol": protocol, "files": [exe]},
                            format="multipart")
    assert response.status_code == 400 and response.json()["file"] == "report.exe"
    garbage = io.BytesIO(b"\xff\xfe\x00\x81binary")
    garbage.name = f"{world.task.key}.md"
    response = curator.post(_upload_url(), {"system": system, "protocol": protocol, "files": [garbage]},
                            format="multipart")
    assert response.status_code == 400 and "not UTF-8" in response.json()["detail"]
    unknown = io.BytesIO(b"# hi")
    unknown.name = "no-such-task.md"
    response = curator.post(_upload_url(), {"system": system, "protocol": protocol, "files": [unknown]},
                            format="multipart")
    assert response.status_code == 400 and "no-such-task" in response.json()["detail"]
    response = curator.post(_upload_url(), data='{"task": 1, "text": ', content_type="application/json")
    assert response.status_code == 400 and "JSON parse error" in response.json()["detail"]
    response = curator.post(_upload_url(), {"task": world.task.pk, "text": "x"}, format="json")
    assert response.status_code == 400 and "system" in response.json()
    assert list(Report.objects.values_list("pk", "content_hash")) == before


def test_import_endpoint_names_file_and_line(world):
    curator = client_for(world.users["curator"])
    upload = io.BytesIO(b'{"format_version": 1}\n{not json\n')
    upload.name = "tasks.jsonl"
    response = curator.post(reverse("api:import"), {"format": "native", "file": upload}, format="multipart")
    assert response.status_code == 400, response.content
    assert response.json()["file"] == "tasks.jsonl" and response.json()["line"] is not None
    upload = io.BytesIO(b'{"format_version": 1, "protocol": }\n')
    upload.name = "tasks.jsonl"
    response = curator.post(reverse("api:import"), {"format": "native", "file": upload}, format="multipart")
    assert response.status_code == 400, response.content
    assert (response.json()["line"], response.json()["column"]) == (1, 35)
    assert response.json()["detail"] == "tasks.jsonl, line 1, column 35: malformed JSON: expecting value"
    assert not AuditLog.objects.filter(action__startswith="import").exists()


def test_import_endpoint_returns_the_per_system_table(world):
    curator = client_for(world.users["curator"])
    line = {"task_id": "api-1", "survey_id": "2401.00001", "general_prompt": "Write a survey on X.",
            "survey_result": "Introduction\n\nText [1].\n\nReferences\n[1] A paper title. 2020.",
            "checklist": [{"group_name": "G", "strict": False, "sub_groups": [
                {"sub_group_name": "S", "requirements": [{"content": "Mentions X.", "reward": 1.0}]}]}]}
    upload = io.BytesIO(json.dumps(line).encode() + b"\n")
    upload.name = "example_gen_result.jsonl"
    response = curator.post(reverse("api:import"), {"format": "deepsynth", "file": upload}, format="multipart")
    assert response.status_code == 200, response.content
    assert response.json()["systems"] == [{"system": "deepsynth-example", "reports": 1, "citations": 1,
                                           "resolved_citations": 1, "skipped": []}]


def test_token_issue_and_token_auth(world):
    user = world.users["ann_a"]
    user.set_password("s3cret-pass!")
    user.save()
    anon = APIClient()
    response = anon.post(reverse("api:token"), {"username": "ann_a", "password": "s3cret-pass!"}, format="json")
    assert response.status_code == 200
    key = response.json()["token"]
    assert Token.objects.get(user=user).key == key
    scripted = APIClient()
    scripted.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert scripted.get(reverse("api:project-list")).status_code == 200
    scripted.credentials(HTTP_AUTHORIZATION="Token wrong")
    assert scripted.get(reverse("api:project-list")).status_code in (401, 403)


def test_session_post_without_csrf_token_is_refused(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.users["curator"])
    response = client.post(reverse("api:system-list"), {"name": "csrf"}, content_type="application/json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    client.get(reverse("api:docs"))  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value if "csrftoken" in client.cookies else None
    if token:
        ok = client.post(reverse("api:system-list"), {"name": "csrf"}, content_type="application/json",
                         HTTP_X_CSRFTOKEN=token)
        assert ok.status_code == 201


def test_label_submit_through_the_api_is_idempotent(world):
    from tests.annotation_factories import hold

    client = client_for(world.users["ann_b"])
    hold(world.item_b, world.users["ann_b"])  # blind: a label only on an item held (#37)
    body = {"item": world.item_b.pk, "value": {"decision": "accept"}, "client_token": str(uuid.uuid4())}
    first = client.post(reverse("api:label-list"), body, format="json")
    again = client.post(reverse("api:label-list"), body, format="json")
    assert first.status_code == again.status_code == 201 and first.json()["id"] == again.json()["id"]
    different = client.post(reverse("api:label-list"), dict(body, client_token=str(uuid.uuid4())), format="json")
    assert different.status_code == 409
    invalid = client.post(reverse("api:label-list"), dict(body, client_token="nope"), format="json")
    assert invalid.status_code == 400 and "client_token" in invalid.json()


def test_schema_validates_and_docs_page_uses_vendored_redoc(world):
    call_command("spectacular", "--validate", stdout=io.StringIO())  # raises on schema errors
    client = client_for(world.users["viewer"])
    assert client.get(reverse("api:schema")).status_code == 200
    page = client.get(reverse("api:docs")).content.decode()
    assert "/static/vendor/redoc/redoc.standalone.js" in page
    assert "cdn" not in page.lower() and "https://" not in page


def test_operation_descriptions_are_for_api_users_not_developer_notes(world):
    import inspect

    from benchmark.api import common
    from scoring.services import runs

    schema = json.loads(client_for(world.users["viewer"]).get(reverse("api:schema"), {"format": "json"}).content)
    descriptions = {f"{method.upper()} {path}": op.get("description", "")
                    for path, ops in schema["paths"].items() for method, op in ops.items()}
    base_notes = [inspect.getdoc(cls) for _, cls in inspect.getmembers(common, inspect.isclass)
                  if cls.__module__ == common.__name__ and cls.__doc__]
    service_notes = [inspect.getdoc(f).splitlines()[0] for f in (runs.run_start, runs.run_cancel, runs.run_resume)]
    assert len(base_notes) >= 4 and len(descriptions) > 90
    leaked = {op: text for op, text in descriptions.items()
              if any(note in text for note in base_notes + service_notes) or "DRF" in text}
    assert not leaked, leaked
    assert descriptions["POST /api/runs/{id}/cancel/"] == "Cancel the run's pending jobs; jobs already running finish."
    assert descriptions["POST /api/auth/token/"].startswith("Exchange a username and password for an API token")
    assert descriptions["POST /api/projects/"].startswith("Create a project (curators)")  # the view's own


def test_the_api_root_lists_every_endpoint_and_the_docs(world):
    body = client_for(world.users["ann_a"]).get("/api/").json()
    assert (body["docs"], body["schema"]) == ("/api/docs/", "/api/schema/")
    paths = {row["name"]: row["path"] for row in body["endpoints"]}
    assert paths["task-list"] == "/api/tasks/" and paths["project-members"] == "/api/projects/<id:pk>/members/"
    assert "index" not in paths and len(paths) > 40


def test_a_run_posted_to_the_api_is_made_by_run_launch_started_or_not(world, monkeypatch,
                                                                        django_capture_on_commit_callbacks):
    from scoring.models import EvaluationRun
    from scoring.services import runs

    launched, sent = [], []
    original = runs.run_launch
    monkeypatch.setattr("scoring.api.views.run_launch", lambda **kw: launched.append(kw["start"]) or original(**kw))
    monkeypatch.setattr("scoring.tasks.execute_job.delay", sent.append)
    curator = client_for(world.users["curator"])
    body = {"protocol": world.task.protocol, "judge_config": world.project_a.judge_config.pk,
            "systems": [world.report.system_id], "tasks": [world.task.pk]}
    pending = curator.post("/api/runs/", body, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        running = curator.post("/api/runs/", {**body, "start": True}, format="json")
    assert (pending.status_code, running.status_code) == (201, 201), running.content
    assert launched == [False, True]
    assert (pending.json()["status"], running.json()["status"]) == ("pending", "running")
    assert sorted(sent) == sorted(EvaluationRun.objects.get(pk=running.json()["id"]).jobs.values_list("pk", flat=True))
