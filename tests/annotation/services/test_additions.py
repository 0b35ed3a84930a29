"""``proposable_add``: a reviewer adds the item a task is missing; it is reviewed like the others."""

import pytest
from django.contrib.contenttypes.models import ContentType

from core.models import AuditLog

from annotation.models import AnnotationItem, Role
from annotation.services.additions import proposable_add
from annotation.services.errors import ProjectNotOpenError
from tests.annotation_factories import submit_held as label_submit  # blind: on an item held (#37)
from annotation.services.projects import membership_add, project_set_status
from benchmark.models import (
    BibEntry,
    ChecklistItem,
    ConstraintQuestion,
    GoldReference,
    Nugget,
    RubricCriterion,
    Task,
    TaskPrompt,
)
from tests.annotation_factories import agreement_project, annotator, checklist_task, members_add, token
from tests.factories import BibEntryFactory, ChecklistGroupFactory, TaskFactory, TaskPromptFactory, UserFactory

pytestmark = pytest.mark.django_db


def all_kinds_project(owner, users, task, **options):
    from annotation.services.projects import project_create

    project = project_create(name="verify all", kind="verify", created_by=owner, tasks=[task], **options)
    members_add(project, owner, users)
    return project


@pytest.fixture
def world(owner, alice, bob, carol):
    task, items = checklist_task(2)
    project = all_kinds_project(owner, [alice, bob, carol], task)
    return task, items[0].group, project


def test_an_added_nugget_is_a_human_proposal_with_its_revision_audit_and_item(world, alice):
    task, _, project = world
    before_items = project.items.count()
    nugget = proposable_add(
        task=task, kind="nugget", fields={"text": "Radar works in fog.", "importance": "vital"}, actor=alice,
        project=project,
    )
    nugget = Nugget.objects.get(pk=nugget.pk)
    assert (nugget.origin, nugget.proposed_by, nugget.review_status, nugget.version) == ("human", "alice", "proposed", 1)
    assert (nugget.task_id, nugget.importance) == (task.pk, "vital")
    # one audit row for the one action: the item's history and the project's
    [row] = AuditLog.objects.filter(content_type=ContentType.objects.get_for_model(Nugget), object_id=nugget.pk)
    assert (row.action, row.actor, row.before, row.project_id) == ("proposable.add", alice, None, project.pk)
    assert row.after["text"] == "Radar works in fog." and row.after["review_status"] == "proposed"
    item = AnnotationItem.objects.get(project=project, target_kind="nugget", target_id=nugget.pk)
    assert f"(item {item.pk})" in row.note
    assert (item.task_id, item.labels_needed, item.target_version, item.status) == (task.pk, 2, 1, "open")
    assert item.position == max(project.items.exclude(pk=item.pk).values_list("position", flat=True)) + 1
    assert project.items.count() == before_items + 1


@pytest.mark.parametrize(
    ("kind", "fields", "model"),
    [
        ("prompt", {"level": "detail", "text": "Write a detail-rich survey."}, TaskPrompt),
        ("constraint_question", {"title": "Datasets", "text": "Which datasets does it compare?"}, ConstraintQuestion),
        ("checklist_item", {"text": "Mentions multipath noise.", "reward": 2.0}, ChecklistItem),
        ("gold_reference", {"title": "K-Radar: 4D Radar Object Detection", "year": 2022, "important": True},
         GoldReference),
        ("rubric_criterion", {"component": "content", "aspect": "Coverage", "name": "Datasets"}, RubricCriterion),
    ],
)
def test_every_kind_can_be_added(world, alice, kind, fields, model):
    task, group, project = world
    if kind == "checklist_item":
        fields = {**fields, "group": group.pk}
    row = proposable_add(task=task, kind=kind, fields=fields, actor=alice, project=project)
    row = model.objects.get(pk=row.pk)
    assert (row.origin, row.proposed_by, row.review_status) == ("human", "alice", "proposed")
    assert project.items.filter(target_kind=kind, target_id=row.pk).exists()
    if kind == "checklist_item":
        assert row.group == group and row.position == max(group.items.values_list("position", flat=True))
    if kind == "gold_reference":
        assert row.bib_entry.title == "K-Radar: 4D Radar Object Detection" and row.important


def test_a_gold_reference_reuses_a_known_publication_and_is_not_added_twice(world, alice):
    task, _, project = world
    known = BibEntryFactory(title="RadarScenes: A Real-World Radar Point Cloud Data Set", doi="10.1000/radar.2021")
    ref = proposable_add(
        task=task, kind="gold_reference", fields={"title": "RadarScenes", "doi": "https://doi.org/10.1000/radar.2021"}, actor=alice,
        project=project,
    )
    assert ref.bib_entry_id == known.pk and BibEntry.objects.count() == 1
    with pytest.raises(ValueError, match=r"^fields\.title: .*already a gold reference"):
        proposable_add(task=task, kind="gold_reference", fields={"title": known.title}, actor=alice, project=project)


@pytest.mark.parametrize(
    ("kind", "fields", "message"),
    [
        ("nugget", {"text": ""}, r"^fields\.text: "),
        ("nugget", {"text": "x", "importance": "huge"}, r"^fields\.importance: "),
        ("nugget", {"text": "x", "colour": "red"}, r"^fields\.colour: not a field of a nugget"),
        ("checklist_item", {"text": "x"}, r"^fields\.group: pick one of this task's checklist groups"),
        ("gold_reference", {"authors": "Someone"}, r"^fields\.title: give the publication's title"),
        ("prompt", {"level": "general", "text": "again"}, r"^fields\.level: this task already has a general prompt"),
        ("checklist_group", {"name": "x"}, r"^kind: "),
    ],
)
def test_invalid_additions_name_the_field_and_leave_no_trace(world, alice, kind, fields, message):
    task, _, project = world
    TaskPromptFactory(task=task, level="general")
    items, audit_rows = project.items.count(), AuditLog.objects.count()
    with pytest.raises(ValueError, match=message):
        proposable_add(task=task, kind=kind, fields=fields, actor=alice, project=project)
    assert (project.items.count(), AuditLog.objects.count()) == (items, audit_rows)


def test_a_group_of_another_task_is_refused(world, alice):
    task, _, project = world
    other = ChecklistGroupFactory(task=TaskFactory())
    with pytest.raises(ValueError, match=r"^fields\.group"):
        proposable_add(task=task, kind="checklist_item", fields={"group": other.pk, "text": "x"}, actor=alice,
                       project=project)


def test_only_labelling_members_of_an_open_verify_project_add(world, owner, alice):
    task, _, project = world
    fields = {"text": "Radar works in fog."}
    with pytest.raises(PermissionError, match=r"may not label items of project 'verify all' \(role: not a member\)"):
        proposable_add(task=task, kind="nugget", fields=fields, actor=UserFactory(), project=project)
    viewer = annotator("viewer")
    membership_add(project=project, user=viewer, role=Role.VIEWER, actor=owner)
    with pytest.raises(PermissionError, match=r"may not label items of project 'verify all' \(role: viewer\)"):
        proposable_add(task=task, kind="nugget", fields=fields, actor=viewer, project=project)
    with pytest.raises(ValueError, match=r"^task: "):
        proposable_add(task=TaskFactory(), kind="nugget", fields=fields, actor=alice, project=project)
    project_set_status(project=project, status="paused", actor=owner)
    with pytest.raises(ProjectNotOpenError, match="project 'verify all' is paused; it accepts no labels"):
        proposable_add(task=task, kind="nugget", fields=fields, actor=alice, project=project)
    agreement = agreement_project(owner, [alice], name="judge checks")
    with pytest.raises(ValueError, match=r"^project: "):
        proposable_add(task=agreement.tasks.get(), kind="nugget", fields=fields, actor=alice, project=agreement)


def test_a_kind_the_project_does_not_review_is_refused(owner, alice):
    task, _ = checklist_task(1)
    project = all_kinds_project(owner, [alice], task, item_kinds=["checklist_item"])
    with pytest.raises(ValueError, match=r"^kind: .*reviews checklist item"):
        proposable_add(task=task, kind="nugget", fields={"text": "x"}, actor=alice, project=project)


def test_the_added_item_goes_through_two_stage_review(world, alice, bob, carol):
    task, _, project = world
    nugget = proposable_add(task=task, kind="nugget", fields={"text": "Radar works in fog."}, actor=alice,
                            project=project)
    item = project.items.get(target_kind="nugget", target_id=nugget.pk)
    for user in (bob, carol):
        label_submit(item=item, annotator=user, value={"decision": "accept"}, client_token=token())
    nugget.refresh_from_db()
    item.refresh_from_db()
    assert (item.status, nugget.review_status, nugget.version) == ("complete", "accepted", 2)


def test_a_curated_task_goes_back_to_review_when_an_item_is_added(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = all_kinds_project(owner, [alice, bob], task, item_kinds=["checklist_item", "nugget"])
    item = project.items.get()
    for user in (alice, bob):
        label_submit(item=item, annotator=user, value={"decision": "accept"}, client_token=token())
    assert Task.objects.get(pk=task.pk).status == "curated"
    proposable_add(task=task, kind="nugget", fields={"text": "Radar works in fog."}, actor=alice, project=project)
    assert Task.objects.get(pk=task.pk).status == "in_review"
    assert list(AuditLog.objects.order_by("-id").values_list("action", flat=True)[:2]) == [
        "proposable.add", "task.uncurate"
    ]
