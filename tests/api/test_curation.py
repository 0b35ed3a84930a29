"""The curator's writes through the API: projects, members, task sets — and their refusals.

Each write goes through its service, so the audit (or revision) row is checked next to the
change; each refusal leaves the stored rows as they were.
"""

from django.urls import reverse

from core.models import AuditLog

from annotation.models import AnnotationItem, AnnotationProject, ProjectMembership
from benchmark.models import TaskSet
from tests.annotation_factories import checklist_task
from tests.api.conftest import client_for


def _projects_url():
    return reverse("api:project-list")


def _verify_body(tasks, **extra):
    return {"name": "Review checklists", "kind": "verify", "tasks": [task.pk for task in tasks],
            "item_kinds": ["checklist_item"], **extra}


# --- POST /api/projects/ ------------------------------------------------------------------------


def test_curator_creates_a_verify_project_from_task_ids(world):
    task, checklist_items = checklist_task(3)
    response = client_for(world.users["curator"]).post(
        _projects_url(), _verify_body([task], hold_seconds=600, blind=False, description="Pilot"), format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["kind"], body["overlap"], body["blind"], body["n_items"]) == ("verify", 2, False, 3)
    project = AnnotationProject.objects.get(pk=body["id"])
    assert project.hold_duration.total_seconds() == 600 and project.description == "Pilot"
    targets = set(AnnotationItem.objects.filter(project=project).values_list("target_id", flat=True))
    assert targets == {item.pk for item in checklist_items}
    assert ProjectMembership.objects.get(project=project).user == world.users["curator"]
    event = AuditLog.objects.get(action="project.create", object_id=project.pk)
    assert event.actor == world.users["curator"] and event.after["items"] == 3


def test_curator_creates_an_agreement_project_from_a_task_set(world):
    body = {"name": "Judge check", "kind": "agreement", "task_set": world.task_set.pk,
            "judge_config": world.project_a.judge_config_id, "overlap": 2}
    response = client_for(world.users["curator"]).post(_projects_url(), body, format="json")
    assert response.status_code == 201, response.content
    project = AnnotationProject.objects.get(pk=response.json()["id"])
    assert project.task_set == world.task_set
    verdicts = world.project_a.judge_config.verdicts.filter(report__task=world.task, repeat=0).exclude(label="")
    assert response.json()["n_items"] == verdicts.count() > 0


def test_project_creation_refuses_non_curators_and_bad_fields_naming_them(world):
    task, _ = checklist_task(1)
    before = AnnotationProject.objects.count()
    for user in ("anon", "ann_a", "viewer"):
        assert client_for(world.users[user]).post(_projects_url(), _verify_body([task]), format="json").status_code == 403
    curator = client_for(world.users["curator"])
    cases = [
        ({"kind": "survey"}, "kind"),
        ({"tasks": [task.pk + 10_000]}, "tasks"),
        ({"tasks": []}, "tasks"),  # the service: give tasks or a task set
        ({"overlap": 1}, "overlap"),  # the service: verify needs k >= 2
        ({"item_kinds": ["essay"]}, "item_kinds"),
        ({"hold_seconds": 0}, "hold_seconds"),
        ({"name": world.project_a.name}, "name"),
    ]
    for change, field in cases:
        response = curator.post(_projects_url(), {**_verify_body([task]), **change}, format="json")
        assert response.status_code == 400, (change, response.content)
        assert field in response.json(), (change, response.json())
    agreement = curator.post(_projects_url(), {"name": "No judge", "kind": "agreement", "tasks": [task.pk]},
                             format="json")
    assert agreement.status_code == 400 and "judge_config" in agreement.json()
    assert AnnotationProject.objects.count() == before


# --- PATCH /api/projects/<id>/ ------------------------------------------------------------------


def _project_url(project):
    return reverse("api:project-detail", kwargs={"pk": project.pk})


def test_curator_renames_and_closes_a_project(world):
    response = client_for(world.users["curator"]).patch(
        _project_url(world.project_a), {"name": "Project A (closed)", "status": "closed", "hold_seconds": 120},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert (response.json()["name"], response.json()["status"]) == ("Project A (closed)", "closed")
    world.project_a.refresh_from_db()
    assert world.project_a.hold_duration.total_seconds() == 120
    event = AuditLog.objects.get(action="project.update", object_id=world.project_a.pk)
    assert event.before["status"] == "open" and event.after["status"] == "closed"


def test_project_edit_refuses_members_who_are_not_curators_outsiders_and_unsafe_fields(world):
    url = _project_url(world.project_a)
    assert client_for(world.users["ann_a"]).patch(url, {"name": "Mine"}, format="json").status_code == 403
    assert client_for(world.users["viewer"]).patch(url, {"name": "Mine"}, format="json").status_code == 403
    assert client_for(world.users["ann_b"]).patch(url, {"name": "Mine"}, format="json").status_code == 404
    curator = client_for(world.users["curator"])
    assert client_for(world.users["ann_a"]).patch(url, {"overlap": 5}, format="json").status_code == 403
    unsafe = curator.patch(url, {"overlap": 5, "blind": False}, format="json")
    assert unsafe.status_code == 400 and set(unsafe.json()) == {"overlap", "blind"}
    bad = curator.patch(url, {"status": "archived"}, format="json")
    assert bad.status_code == 400 and "status" in bad.json()
    taken = curator.patch(url, {"name": world.project_b.name}, format="json")
    assert taken.status_code == 400 and "already exists" in taken.json()["name"][0]
    world.project_a.refresh_from_db()
    assert (world.project_a.name, world.project_a.overlap, world.project_a.status) == ("Project A", 2, "open")
    assert not AuditLog.objects.filter(action="project.update").exists()


# --- /api/projects/<id>/members/ ----------------------------------------------------------------


def _members_url(project):
    return reverse("api:project-members", kwargs={"pk": project.pk})


def test_curator_adds_lists_and_removes_a_member(world):
    curator = client_for(world.users["curator"])
    added = curator.post(_members_url(world.project_a), {"username": "ann_b", "role": "annotator"}, format="json")
    assert added.status_code == 201, added.content
    assert (added.json()["username"], added.json()["role"]) == ("ann_b", "annotator")
    listed = curator.get(_members_url(world.project_a)).json()
    assert [(row["username"], row["role"]) for row in listed] == [
        ("ann_a", "annotator"), ("ann_b", "annotator"), ("curator", "curator"), ("viewer", "viewer")
    ]
    assert AuditLog.objects.filter(action="membership.set", project_id=world.project_a.pk, object_id=world.users["ann_b"].pk).count() == 1
    removed = curator.delete(reverse("api:project-member-detail", kwargs={"pk": world.project_a.pk,
                                                                         "username": "ann_b"}))
    assert removed.status_code == 204
    assert not ProjectMembership.objects.filter(project=world.project_a, user=world.users["ann_b"]).exists()
    assert AuditLog.objects.filter(action="membership.remove", project_id=world.project_a.pk,
                                   object_id=world.users["ann_b"].pk).count() == 1


def test_membership_refuses_non_curators_outsiders_and_bad_fields(world):
    url = _members_url(world.project_a)
    body = {"username": "ann_b", "role": "curator"}
    assert client_for(world.users["ann_a"]).post(url, body, format="json").status_code == 403
    assert client_for(world.users["ann_a"]).get(url).status_code == 403
    assert client_for(world.users["viewer"]).post(url, body, format="json").status_code == 403
    assert client_for(world.users["ann_b"]).post(url, body, format="json").status_code == 404
    assert client_for(None).post(url, body, format="json").status_code == 403
    remove_a = reverse("api:project-member-detail", kwargs={"pk": world.project_a.pk, "username": "ann_a"})
    assert client_for(world.users["ann_a"]).delete(remove_a).status_code == 403
    curator = client_for(world.users["curator"])
    nobody = curator.post(url, {"username": "nobody", "role": "annotator"}, format="json")
    assert nobody.status_code == 400 and "no account named 'nobody'" in nobody.json()["username"][0]
    role = curator.post(url, {"username": "ann_b", "role": "owner"}, format="json")
    assert role.status_code == 400 and "role" in role.json()
    not_member = curator.delete(reverse("api:project-member-detail", kwargs={"pk": world.project_a.pk,
                                                                            "username": "ann_b"}))
    assert not_member.status_code == 400 and "not a member" in not_member.json()["user"][0]
    assert set(ProjectMembership.objects.filter(project=world.project_a).values_list("user__username", flat=True)) == {
        "ann_a", "curator", "viewer"}


# --- POST /api/task-sets/ -----------------------------------------------------------------------


def test_curator_creates_a_task_set_with_its_revision_row(world):
    response = client_for(world.users["curator"]).post(
        reverse("api:taskset-list"), {"name": "batch-1", "tasks": [world.task.pk]}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["version"], body["tasks"], body["is_frozen"]) == ("batch-1", 1, [world.task.pk], False)
    entry = AuditLog.objects.get(action="taskset.create", object_id=body["id"])
    assert entry.actor == world.users["curator"] and entry.after["tasks"] == [
        f"{world.task.protocol}/{world.task.key}"]


def test_task_set_creation_refuses_non_curators_and_bad_fields(world):
    url = reverse("api:taskset-list")
    before = TaskSet.objects.count()
    assert client_for(world.users["ann_a"]).post(url, {"name": "x", "tasks": []}, format="json").status_code == 403
    curator = client_for(world.users["curator"])
    taken = curator.post(url, {"name": "pilot", "tasks": [world.task.pk]}, format="json")
    assert taken.status_code == 400 and "already exists" in taken.json()["name"][0]
    unknown = curator.post(url, {"name": "y", "tasks": [world.task.pk + 10_000]}, format="json")
    assert unknown.status_code == 400 and "tasks" in unknown.json()
    blank = curator.post(url, {"name": "   ", "tasks": []}, format="json")
    assert blank.status_code == 400 and "name" in blank.json()
    assert TaskSet.objects.count() == before
