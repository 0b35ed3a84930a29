"""Blind by construction (issue #37): secret seeds through the web form and the API, labels only on
items held, and a member of a blind study and of another project reads nothing hidden there."""

import uuid

from django.urls import reverse

from core.models import AuditLog
from annotation.models import AnnotationItem, AnnotationProject, Label, ReportPair
from annotation.services.projects import membership_add, project_create
from scoring.models import Verdict
from tests.annotation_factories import agreement_project, annotator, curator, hold
from tests.api.conftest import client_for
from tests.factories import ReportFactory, SystemFactory, TaskFactory


def _tasks(n_tasks=3, n_systems=5):
    systems = [SystemFactory() for _ in range(n_systems)]
    tasks = [TaskFactory(protocol="surveylens") for _ in range(n_tasks)]
    for task in tasks:
        for system in systems:
            ReportFactory(task=task, system=system)
    return tasks


def _schedule(project) -> list[tuple[int, int]]:
    pairs = ReportPair.objects.filter(project=project).values_list("pk", "report_left", "report_right")
    by_pk = {pk: (left, right) for pk, left, right in pairs}
    return [by_pk[target] for target in project.items.order_by("position").values_list("target_id", flat=True)]


def test_the_api_draws_a_secret_seed_and_refuses_one_sent_for_a_blind_project(db):
    owner = curator()
    tasks = _tasks()
    api = client_for(owner)
    body = {"name": "p1", "kind": "pairwise", "tasks": [t.pk for t in tasks]}
    refused = api.post(reverse("api:project-list"), {**body, "seed": 0}, format="json")
    assert refused.status_code == 400 and "seed" in refused.content.decode()
    assert not AnnotationProject.objects.exists()
    first = api.post(reverse("api:project-list"), body, format="json")
    second = api.post(reverse("api:project-list"), {**body, "name": "p2"}, format="json")
    assert first.status_code == second.status_code == 201
    assert "seed" not in first.json()
    one, two = AnnotationProject.objects.get(name="p1"), AnnotationProject.objects.get(name="p2")
    assert one.seed != two.seed and 0 not in (one.seed, two.seed)
    assert _schedule(one) != _schedule(two)  # identically created, differently scheduled
    created = AuditLog.objects.get(project_id=one.pk, action="project.create")
    assert "seed" not in created.after and str(one.seed) not in str(created.after)  # the seed is shown nowhere
    open_one = api.post(reverse("api:project-list"), {**body, "name": "open", "blind": False, "seed": 7},
                        format="json")
    assert open_one.status_code == 201 and AnnotationProject.objects.get(name="open").seed == 7  # reproducible


def test_the_web_form_draws_a_secret_seed(client, db):
    owner = curator()
    tasks = _tasks(n_tasks=1, n_systems=4)
    client.force_login(owner)
    body = {"kind": "pairwise", "tasks": [tasks[0].pk], "hold_minutes": "15", "blind": "on", "component": "report",
            "pair_choice": "round_robin", "uniform_share": "0.25", "action": "create"}
    for name in ("form one", "form two"):
        assert client.post(reverse("annotation:new"), {**body, "name": name}).status_code == 302
    one, two = AnnotationProject.objects.get(name="form one"), AnnotationProject.objects.get(name="form two")
    assert one.seed != two.seed and 0 not in (one.seed, two.seed)


def test_a_label_on_an_item_not_held_is_refused_like_a_missing_one_and_stores_nothing(db):
    owner, alice = curator(), annotator("alice")
    project = agreement_project(owner, [alice], labels=["correct", "omitted"])
    item = project.items.order_by("position").first()
    api = client_for(alice)
    body = {"item": item.pk, "value": {"label": "correct"}, "client_token": str(uuid.uuid4())}
    refused = api.post(reverse("api:label-list"), body, format="json")
    missing = api.post(reverse("api:label-list"), {**body, "item": 10**9}, format="json")
    assert refused.status_code == missing.status_code == 404
    assert refused.json()["detail"].replace(str(item.pk), "N") == missing.json()["detail"].replace(str(10**9), "N")
    batch = api.post("/api/labels/batch/", [body], format="json").json()["results"]
    assert batch[0]["status"] == 404
    side = api.get(reverse("api:item-side", kwargs={"pk": item.pk, "side": "report"}))
    gone = api.get(reverse("api:item-side", kwargs={"pk": 10**9, "side": "report"}))
    assert side.status_code == gone.status_code == 404 and side.content == gone.content
    assert not Label.objects.exists()
    hold(item, alice)
    assert api.post(reverse("api:label-list"), body, format="json").status_code == 201


def test_judge_correct_is_not_shown_before_reveal(db):
    owner, alice = curator(), annotator("alice")
    project = agreement_project(owner, [alice], labels=["correct", "omitted"], reveal="close")
    item = project.items.order_by("position").first()
    hold(item, alice)
    api = client_for(alice)
    body = {"item": item.pk, "value": {"label": "correct"}, "client_token": str(uuid.uuid4())}
    answer = api.post(reverse("api:label-list"), body, format="json")
    assert answer.status_code == 201 and "judge_correct" not in answer.json()["value"]
    listed = api.get(reverse("api:label-list"), {"item": item.pk}).json()["results"]
    assert listed and all("judge_correct" not in row["value"] for row in listed)
    assert "judge_correct" in Label.objects.get().value  # stored, for the curators and after close


def test_a_member_of_a_blind_study_reads_nothing_it_hides_in_another_project_and_either_order_warns(db):
    owner, alice = curator(), annotator("alice")
    blind = agreement_project(owner, [], labels=["correct", "omitted"], name="blind study", reveal="close")
    verdicts = Verdict.objects.filter(pk__in=blind.items.values("target_id"))
    open_project = project_create(name="open look", kind="agreement", created_by=owner, blind=False,
                                  tasks=list({v.report.task for v in verdicts}), judge_config=blind.judge_config)
    membership_add(project=open_project, user=alice, role="annotator", actor=owner)
    api_owner = client_for(owner)
    added = api_owner.post(reverse("api:project-members", kwargs={"pk": blind.pk}),
                           {"username": "alice", "role": "annotator"}, format="json")
    assert added.status_code == 201
    assert any("open look" in w and "blind study" in w and "alice" in w for w in added.json()["warnings"])
    other = annotator("bob")
    membership_add(project=blind, user=other, role="annotator", actor=owner)
    later = api_owner.post(reverse("api:project-members", kwargs={"pk": open_project.pk}),
                           {"username": "bob", "role": "annotator"}, format="json")
    assert any("blind study" in w and "bob" in w for w in later.json()["warnings"])

    api = client_for(alice)
    item = open_project.items.order_by("position").first()
    context = api.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()
    hold(item, alice)
    body = {"item": item.pk, "value": {"label": "correct"}, "client_token": str(uuid.uuid4())}
    assert api.post(reverse("api:label-list"), body, format="json").status_code == 201
    context = api.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()
    assert context["judge"] is None and context["revealed"] is False  # the blind study still hides it
    listed = api.get(reverse("api:label-list"), {"item": item.pk}).json()["results"]
    assert all("judge_correct" not in row["value"] for row in listed)
    assert item.target_id not in {row["id"] for row in api.get(reverse("api:verdict-list")).json()["results"]}
    assert AnnotationItem.objects.filter(project=blind, target_id=item.target_id).exists()
