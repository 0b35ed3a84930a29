"""Project guidelines (issue #30): written on the project form or through the API, each change a
new audited version; shown in every workspace, open on a member's first page and after each
change, folded otherwise; every label records the version its annotator had been shown."""

import re
import uuid

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import AnnotationProject, Label, ProjectMembership
from annotation.services.projects import project_update
from core.models import AuditLog
from tests.annotation_factories import checklist_task, pairwise_project, verify_project

from .conftest import claim_of

pytestmark = pytest.mark.django_db

GUIDELINES = "## Accept\n\nAccept an item when **every** claim in it is checkable.\n\n<script>alert(1)</script>"


def _workspace(client, project, *, hx: bool = False) -> str:
    headers = {"HTTP_HX_REQUEST": "true"} if hx else {}
    response = client.get(reverse("annotation:workspace", args=[project.pk]), **headers)
    assert response.status_code == 200
    return response.content.decode()


def _guidelines_tag(html: str) -> str | None:
    found = re.search(r'<details id="ws-guidelines"[^>]*>', html)
    return found.group(0) if found else None


@pytest.fixture
def project(owner, alice, bob):
    task, _ = checklist_task(4)
    return verify_project(owner, [alice, bob], tasks=[task], guidelines=GUIDELINES)


def test_guidelines_are_versioned_and_every_change_is_audited(project, owner):
    assert project.guidelines_version == 1
    project_update(project=project, actor=owner, guidelines=GUIDELINES.replace("\n", "\r\n") + "\n\n")
    project.refresh_from_db()
    assert project.guidelines_version == 1  # the browser's CRLF and trailing blank lines are no change
    assert not AuditLog.objects.filter(action="project.update").exists()
    project_update(project=project, actor=owner, guidelines="Reject vague items.")
    project.refresh_from_db()
    assert (project.guidelines, project.guidelines_version) == ("Reject vague items.", 2)
    event = AuditLog.objects.get(action="project.update")
    assert event.before == {"guidelines": GUIDELINES, "guidelines_version": "1"}
    assert event.after == {"guidelines": "Reject vague items.", "guidelines_version": "2"}


def test_a_project_without_guidelines_is_version_0_and_its_workspace_shows_none(owner, alice, bob, client):
    task, _ = checklist_task(2)
    plain = verify_project(owner, [alice, bob], tasks=[task], name="plain")
    assert plain.guidelines_version == 0
    client.force_login(alice)
    html = _workspace(client, plain)
    assert _guidelines_tag(html) is None and 'data-role="guidelines"' not in html


def test_open_on_the_first_page_folded_after_and_open_again_after_a_change(project, owner, alice, client):
    client.force_login(alice)
    first = _workspace(client, project)
    tag = _guidelines_tag(first)
    assert tag is not None and " open" in tag and 'data-role="guidelines"' in tag
    # rendered with the app's safe markdown: headings and bold, no script
    assert "<h2>Accept</h2>" in first and "<strong>every</strong>" in first
    assert "<script>alert(1)</script>" not in first
    assert ProjectMembership.objects.get(project=project, user=alice).guidelines_seen == 1
    assert AuditLog.objects.filter(action="guidelines.seen", actor=alice).count() == 1

    again = _guidelines_tag(_workspace(client, project))
    assert again is not None and " open" not in again  # seen: folded, still there

    project_update(project=project, actor=owner, guidelines=GUIDELINES + "\n\nNew: reject duplicates.")
    changed = _workspace(client, project)
    assert " open" in _guidelines_tag(changed) and "updated" in changed and "reject duplicates" in changed
    assert ProjectMembership.objects.get(project=project, user=alice).guidelines_seen == 2


def test_an_htmx_answer_opens_the_header_guidelines_only_after_a_change(project, owner, alice, client):
    client.force_login(alice)
    _workspace(client, project)  # the page: seen
    assert 'id="ws-guidelines"' not in _workspace(client, project, hx=True)  # nothing to swap
    project_update(project=project, actor=owner, guidelines="Version two.")
    panel = _workspace(client, project, hx=True)
    assert re.search(r'<details id="ws-guidelines"[^>]* open hx-swap-oob="true"', panel)
    assert "Version two." in panel


def test_each_label_records_the_guidelines_version_its_annotator_had_seen(project, owner, alice, client):
    client.force_login(alice)
    _workspace(client, project)
    claim = claim_of(alice, project)
    data = {"decision": "accept", "client_token": str(uuid.uuid4())}
    # the guidelines change after alice's page showed version 1: her label was made under version 1
    project_update(project=project, actor=owner, guidelines="Version two.")
    response = client.post(reverse("annotation:label", args=[project.pk, claim.item_id]), data,
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200, response.content.decode()[:2000]
    assert Label.objects.get(annotator=alice).guidelines_version == 1
    assert "Version two." in response.content.decode()  # and the answer opens version 2
    second = claim_of(alice, project)
    client.post(reverse("annotation:label", args=[project.pk, second.item_id]),
                {"decision": "accept", "client_token": str(uuid.uuid4())}, HTTP_HX_REQUEST="true")
    assert Label.objects.get(annotator=alice, item_id=second.item_id).guidelines_version == 2


def test_an_api_label_records_what_the_workspace_showed_the_annotator(project, alice):
    api = APIClient()
    api.force_authenticate(alice)
    item = api.post(f"/api/projects/{project.pk}/next/").json()["assignment"]["item"]
    response = api.post("/api/labels/", {"item": item, "value": {"decision": "accept"},
                                         "client_token": str(uuid.uuid4())}, format="json")
    assert response.status_code == 201, response.content
    assert Label.objects.get(annotator=alice).guidelines_version == 0  # never shown in a workspace


def test_guidelines_through_the_api(owner, alice, bob):
    task, _ = checklist_task(2)
    api = APIClient()
    api.force_authenticate(owner)
    created = api.post("/api/projects/", {"name": "api guided", "kind": "verify", "tasks": [task.pk],
                                          "guidelines": "Read the survey first."}, format="json")
    assert created.status_code == 201, created.content
    assert (created.json()["guidelines"], created.json()["guidelines_version"]) == ("Read the survey first.", 1)
    pk = created.json()["id"]
    patched = api.patch(f"/api/projects/{pk}/", {"guidelines": "Read the *whole* survey."}, format="json")
    assert patched.status_code == 200 and patched.json()["guidelines_version"] == 2
    assert AuditLog.objects.filter(action="project.update", project_id=pk).count() == 1
    assert api.patch(f"/api/projects/{pk}/", {"guidelines_version": 9}, format="json").status_code == 400


def test_guidelines_through_the_project_forms(owner, client):
    task, _ = checklist_task(2)
    client.force_login(owner)
    response = client.post(reverse("annotation:new") + "?", {
        "action": "create", "kind": "verify", "name": "form guided", "tasks": [task.pk], "hold_minutes": 15,
        "component": "report", "blind": "on", "guidelines": "Be strict.",
    })
    assert response.status_code == 302, response.content.decode()[:3000]
    project = AnnotationProject.objects.get(name="form guided")
    assert (project.guidelines, project.guidelines_version) == ("Be strict.", 1)
    edit = reverse("annotation:edit", args=[project.pk])
    assert "Be strict." in client.get(edit).content.decode()
    client.post(edit, {"name": "form guided", "description": "", "guidelines": "Be strict.\r\nCite the section.",
                       "hold_minutes": 15, "status": "open"})
    project.refresh_from_db()
    assert (project.guidelines, project.guidelines_version) == ("Be strict.\nCite the section.", 2)


def test_pairwise_workspace_shows_guidelines_too(owner, alice):
    from django.test import Client

    project = pairwise_project(owner, [alice], guidelines="Prefer the report that **answers the task**.")
    client = Client()
    client.force_login(alice)
    html = _workspace(client, project)
    assert 'data-role="guidelines"' in html and "<strong>answers the task</strong>" in html


def test_the_label_export_carries_the_guidelines_version(project, alice, client):
    from annotation.exporters import LABEL_COLUMNS, label_rows

    client.force_login(alice)
    _workspace(client, project)
    claim = claim_of(alice, project)
    client.post(reverse("annotation:label", args=[project.pk, claim.item_id]),
                {"decision": "accept", "client_token": str(uuid.uuid4())}, HTTP_HX_REQUEST="true")
    (row,) = label_rows(Label.objects.filter(annotator=alice))
    assert "guidelines_version" in LABEL_COLUMNS and row["guidelines_version"] == 1
