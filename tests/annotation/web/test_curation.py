"""The curator's project pages: /annotate/new/ (preview, create), edit, members, invitations."""

import re

import pytest
from django.urls import reverse

from core.models import AuditLog

from annotation.models import AnnotationProject, AnnotatorProfile, ProjectMembership
from tests.annotation_factories import checklist_task, verify_project
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def _login(client, user):
    client.force_login(user)
    return client


def _create_body(tasks, **extra):
    return {"kind": "verify", "name": "Checklist review", "tasks": [task.pk for task in tasks],
            "item_kinds": ["checklist_item"], "hold_minutes": "15", "blind": "on", "component": "report", **extra}


def test_annotators_cannot_open_the_new_project_page(client, alice):
    response = _login(client, alice).get(reverse("annotation:new"))
    assert response.status_code == 403 and "Only curators create" in response.content.decode()


def test_preview_counts_the_items_and_creates_nothing(client, owner):
    task, _ = checklist_task(3)
    events = AuditLog.objects.count()
    response = _login(client, owner).post(reverse("annotation:new"), {**_create_body([task]), "action": "preview"})
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'id="preview-items">3<', html), html
    assert "decision</strong> accept, edit, reject" in html
    assert not AnnotationProject.objects.exists() and AuditLog.objects.count() == events


def test_create_makes_the_project_and_opens_its_members(client, owner):
    task, _ = checklist_task(2)
    response = _login(client, owner).post(reverse("annotation:new"), {**_create_body([task]), "action": "create"})
    project = AnnotationProject.objects.get(name="Checklist review")
    assert response.status_code == 302 and response["Location"] == reverse("annotation:members", args=[project.pk])
    assert (project.kind, project.overlap, project.blind, project.items.count()) == ("verify", 2, True, 2)


def test_filters_pick_every_matching_task_when_none_is_ticked(client, owner):
    wanted, _ = checklist_task(1, key="wanted-topic")
    checklist_task(1, key="other")
    url = reverse("annotation:new") + "?search=wanted"
    page = _login(client, owner).get(url).content.decode()
    assert "1 task matches the filters" in page and "wanted-topic" in page and "other —" not in page
    response = client.post(url, {**_create_body([]), "action": "create"})
    assert response.status_code == 302
    assert list(AnnotationProject.objects.get().tasks.all()) == [wanted]


def test_service_refusals_land_on_the_field_and_store_nothing(client, owner):
    task, _ = checklist_task(1)
    response = _login(client, owner).post(reverse("annotation:new"),
                                          {**_create_body([task]), "overlap": "1", "action": "create"})
    assert response.status_code == 400
    html = response.content.decode()
    assert re.search(r'id="errors-overlap"><li>verify projects need k', html), html
    no_tasks = client.post(reverse("annotation:new"), {**_create_body([]), "action": "preview"})
    assert no_tasks.status_code == 400 and 'id="errors-tasks"><li>give tasks or a task set' in no_tasks.content.decode()
    assert not AnnotationProject.objects.exists()


def test_edit_closes_a_project_and_annotators_are_refused(client, owner, alice):
    task, _ = checklist_task(1)
    project = verify_project(owner, [alice], tasks=[task], name="Old name")
    url = reverse("annotation:edit", args=[project.pk])
    assert _login(client, alice).get(url).status_code == 403
    response = _login(client, owner).post(url, {"name": "New name", "description": "", "hold_minutes": "30",
                                                "status": "closed"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert (project.name, project.status, project.hold_duration.total_seconds()) == ("New name", "closed", 1800)


def test_members_page_adds_removes_and_shows_progress(client, owner, alice, bob):
    task, _ = checklist_task(1)
    project = verify_project(owner, [alice], tasks=[task])
    url = reverse("annotation:members", args=[project.pk])
    assert _login(client, alice).get(url).status_code == 403
    page = _login(client, owner).get(url).content.decode()
    assert "alice" in page and '<option value="bob">bob</option>' in page
    assert client.post(url, {"action": "add", "add-username": "bob", "add-role": "annotator"}).status_code == 302
    assert ProjectMembership.objects.get(project=project, user=bob).role == "annotator"
    assert client.post(url, {"action": "remove", "username": "alice"}).status_code == 302
    assert not ProjectMembership.objects.filter(project=project, user=alice).exists()
    unknown = client.post(url, {"action": "add", "add-username": "ghost", "add-role": "annotator"})
    assert unknown.status_code == 400 and 'id="errors-username"' in unknown.content.decode()


def test_invitation_creates_an_account_whose_link_sets_the_password_once(client, owner):
    task, _ = checklist_task(1)
    project = verify_project(owner, [], tasks=[task])
    url = reverse("annotation:members", args=[project.pk])
    response = _login(client, owner).post(url, {"action": "invite", "invite-username": "dana",
                                                "invite-role": "annotator"})
    assert response.status_code == 201
    link = re.search(r'<code class="link-text">http://testserver(/invite/[^<]+)</code>', response.content.decode())
    assert link, response.content.decode()
    dana = ProjectMembership.objects.get(project=project, user__username="dana").user
    assert not dana.has_usable_password() and AnnotatorProfile.objects.get(user=dana).role == "annotator"
    assert AuditLog.objects.filter(action="account.invite", object_id=dana.pk).exists()
    assert link.group(1) not in str(list(AuditLog.objects.values_list("after", flat=True)))
    taken = client.post(url, {"action": "invite", "invite-username": "dana", "invite-role": "annotator"})
    assert taken.status_code == 400 and "already exists" in taken.content.decode()

    client.logout()
    form = client.get(link.group(1), follow=True)  # Django redirects to a session-held URL first
    assert "Set your password" in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a-long-Passphrase-42",
                                                    "new_password2": "a-long-Passphrase-42"})
    assert done.status_code == 302
    dana.refresh_from_db()
    assert dana.check_password("a-long-Passphrase-42")
    again = client.get(link.group(1), follow=True)
    assert "This link no longer works" in again.content.decode()


def test_project_list_offers_creation_to_curators_only(client, owner, alice):
    TaskFactory()
    assert 'id="new-project"' in _login(client, owner).get(reverse("annotation:project_list")).content.decode()
    assert 'id="new-project"' not in _login(client, alice).get(reverse("annotation:project_list")).content.decode()


def test_the_form_creates_an_adaptive_pairwise_project_and_names_a_bad_budget(client, owner):
    from tests.factories import ReportFactory

    task = TaskFactory(protocol="surveylens")
    for _ in range(3):
        ReportFactory(task=task)
    body = {"kind": "pairwise", "name": "Adaptive", "tasks": [task.pk], "hold_minutes": "15", "blind": "on",
            "component": "report", "pair_choice": "adaptive", "uniform_share": "0.5", "action": "create"}
    refused = _login(client, owner).post(reverse("annotation:new"), {**body, "pairs_budget": "7"})
    assert refused.status_code == 400
    assert "between 1 and 6" in refused.content.decode() and not AnnotationProject.objects.exists()
    preview = client.post(reverse("annotation:new"), {**body, "pairs_budget": "5", "action": "preview"})
    assert re.search(r'id="preview-items">4<', preview.content.decode())
    assert "up to <strong>5</strong> pairs" in preview.content.decode()
    created = client.post(reverse("annotation:new"), {**body, "pairs_budget": "5"})
    assert created.status_code == 302, created.content.decode()[:2000]
    project = AnnotationProject.objects.get()
    assert (project.pair_choice, project.uniform_share, project.pairs_budget) == ("adaptive", 0.5, 5)
    edit = client.get(reverse("annotation:edit", kwargs={"project_id": project.pk}))
    assert "adaptive pairs (0.50 uniform, 5 pairs in all)" in edit.content.decode()
