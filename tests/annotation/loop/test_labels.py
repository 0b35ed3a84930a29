import uuid

import pytest

from annotation.loop.claims import assignment_skip, claim_next_item
from annotation.services.audit import audit_kind
from core.audit_actions import AuditAction
from core.models import AuditLog
from annotation.models import AnnotationItem, Assignment, Label, PairwisePreference
from annotation.loop import labels as labels_module
from annotation.loop import store
from annotation.services.audit import audit_record
from annotation.services.errors import AlreadyLabelledError, ItemNotOpenError, ProjectNotOpenError, UndoRefusedError
from annotation.loop.labels import label_submit
from annotation.loop.undo import label_undo_last
from annotation.services.projects import project_set_status
from annotation.loop.settle import item_adjudicate
from benchmark.models import ChecklistItem
from scoring.models import Verdict
from tests.annotation_factories import (
    agreement_project,
    checklist_task,
    label_all,
    pairwise_project,
    token,
    verify_project,
)

pytestmark = pytest.mark.django_db


def test_resubmitting_the_same_form_returns_the_first_label(owner, alice):
    project = agreement_project(owner, [alice], overlap=2)
    item = claim_next_item(project=project, user=alice).item
    form = uuid.uuid4()
    first = label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=form)
    again = label_submit(item=item, annotator=alice, value={"label": "omitted"}, client_token=str(form))
    assert again.pk == first.pk and again.value["label"] == "correct"
    assert Label.objects.filter(item=item).count() == 1
    item.refresh_from_db()
    assert item.labels_done == 1
    assert AuditLog.objects.filter(action="label.submit").count() == 1


def test_a_token_cannot_be_reused_for_another_item(owner, alice):
    project = agreement_project(owner, [alice])
    first, second = project.items.order_by("position")[:2]
    form = token()
    label_submit(item=first, annotator=alice, value={"label": "correct"}, client_token=form)
    with pytest.raises(ValueError, match="client_token"):
        label_submit(item=second, annotator=alice, value={"label": "correct"}, client_token=form)


def test_a_token_racing_in_for_another_item_is_refused_and_nothing_of_it_is_stored(owner, alice, monkeypatch):
    """The insert's unique key catches what the check under the item's lock cannot see: the
    same form submitted for another item at the same moment (that item's lock is another)."""
    project = agreement_project(owner, [alice])
    first, second = project.items.order_by("position")[:2]
    form = token()
    label_submit(item=first, annotator=alice, value={"label": "correct"}, client_token=form)
    read = store.labels_and_claims
    # the race's blind spot: the labels read under the lock miss the other item's label
    monkeypatch.setattr(store, "labels_and_claims", lambda **kwargs: ([], read(**kwargs)[1]))
    with pytest.raises(ValueError, match="already used for another label"):
        label_submit(item=second, annotator=alice, value={"label": "correct"}, client_token=form)
    second.refresh_from_db()
    assert second.labels_done == 0 and not Label.objects.filter(item=second).exists()
    assert AuditLog.objects.filter(action="label.submit").count() == 1
    label_submit(item=second, annotator=alice, value={"label": "omitted"}, client_token=token())  # usable after


def test_a_second_different_submission_is_an_error(owner, alice):
    project = agreement_project(owner, [alice], overlap=2)
    item = project.items.first()
    label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=token())
    with pytest.raises(AlreadyLabelledError, match="undo") as refused:
        label_submit(item=item, annotator=alice, value={"label": "omitted"}, client_token=token())
    assert "label_undo_last" not in str(refused.value)  # shown to users: no internal names


def test_complete_items_take_no_more_labels(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], overlap=1)
    item = project.items.first()
    label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=token())
    with pytest.raises(ItemNotOpenError, match="already has all 1 labels it needs"):
        label_submit(item=item, annotator=bob, value={"label": "correct"}, client_token=token())


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"label": "maybe"}, "value.label"),
        ({}, "value.label"),
        ({"label": "correct", "judge_correct": False}, "value.judge_correct"),
        ({"label": "correct", "colour": "red"}, "value.colour"),
        ("correct", "value"),
    ],
)
def test_agreement_values_are_validated_naming_the_field(owner, alice, value, field):
    project = agreement_project(owner, [alice])
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        label_submit(item=project.items.first(), annotator=alice, value=value, client_token=token())
    assert not Label.objects.exists()


def test_judge_correct_alone_takes_the_judges_label(owner, alice):
    project = agreement_project(owner, [alice], labels=["omitted"], blind=False)
    item = project.items.first()
    label = label_submit(item=item, annotator=alice, value={"judge_correct": True}, client_token=token())
    assert label.value == {"label": "omitted", "judge_correct": True, "correction": "", "note": ""}


@pytest.mark.parametrize("claim", [True, False])
def test_a_blind_project_refuses_judge_correct_whatever_the_verdict(owner, alice, claim):
    project = agreement_project(owner, [alice], labels=["omitted", "correct"])
    for item in project.items.all():
        with pytest.raises(ValueError, match=r"value\.judge_correct: not accepted in a blind project"):
            label_submit(item=item, annotator=alice, value={"label": "omitted", "judge_correct": claim},
                         client_token=token())
    assert not Label.objects.exists()


def test_a_blind_project_computes_judge_correct_itself(owner, alice):
    project = agreement_project(owner, [alice], labels=["omitted", "correct"])
    first, second = project.items.order_by("position")
    agreed = label_submit(item=first, annotator=alice, value={"label": "omitted"}, client_token=token())
    disagreed = label_submit(item=second, annotator=alice, value={"label": "omitted"}, client_token=token())
    verdicts = {item.pk: item.target_id for item in (first, second)}
    judge = dict(Verdict.objects.filter(pk__in=verdicts.values()).values_list("pk", "label"))
    assert agreed.value["judge_correct"] == (judge[verdicts[first.pk]] == "omitted")
    assert disagreed.value["judge_correct"] == (judge[verdicts[second.pk]] == "omitted")
    assert {agreed.value["judge_correct"], disagreed.value["judge_correct"]} == {True, False}


def test_a_blind_project_needs_a_label(owner, alice):
    project = agreement_project(owner, [alice])
    with pytest.raises(ValueError, match=r"value\.label: required"):
        label_submit(item=project.items.first(), annotator=alice, value={}, client_token=token())


@pytest.mark.parametrize("kind", ["verify", "pairwise", "agreement"])
def test_a_label_in_a_blind_project_is_final(owner, alice, kind):
    if kind == "verify":
        task, _ = checklist_task(1)
        project, value = verify_project(owner, [alice], tasks=[task]), {"decision": "accept"}
    elif kind == "pairwise":
        project, value = pairwise_project(owner, [alice]), {"choice": "left"}
    else:
        project, value = agreement_project(owner, [alice]), {"label": "correct"}
    item = claim_next_item(project=project, user=alice).item
    label_submit(item=item, annotator=alice, value=value, client_token=token())
    noun = {"verify": "decision", "pairwise": "preference", "agreement": "label"}[kind]
    with pytest.raises(UndoRefusedError, match=f"your {noun} on item {item.position} is final: this project is blind"
                       ) as refused:
        label_undo_last(annotator=alice, project=project)
    # each kind names only what it hid (issue #30): verify has no judge and compares no systems
    said = str(refused.value)
    assert ("judge" in said) is (kind == "agreement") and ("systems" in said) is (kind == "pairwise")
    assert Label.objects.filter(item=item, annotator=alice).exists()
    assert not AuditLog.objects.filter(action="label.undo").exists()


def test_a_skip_in_a_blind_project_can_be_undone(owner, alice):
    project = agreement_project(owner, [alice])
    claim = claim_next_item(project=project, user=alice)
    assignment_skip(assignment=claim, user=alice)
    assert label_undo_last(annotator=alice, project=project).action == "assignment.skip_undo"


@pytest.mark.parametrize("kind", ["pairwise", "agreement"])
def test_curators_do_not_label_in_a_blind_project(owner, alice, kind):
    project = pairwise_project(owner, [alice]) if kind == "pairwise" else agreement_project(owner, [alice])
    value = {"choice": "left"} if kind == "pairwise" else {"label": "correct"}
    with pytest.raises(PermissionError, match="is blind: only its annotators label"):
        label_submit(item=project.items.first(), annotator=owner, value=value, client_token=token())


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"decision": "maybe"}, "value.decision"),
        ({"decision": "reject"}, "value.reason"),
        ({"decision": "reject", "reason": "boring"}, "value.reason"),
        ({"decision": "edit"}, "value.edits"),
        ({"decision": "edit", "edits": {"group": 3}}, "value.edits.group"),
        ({"decision": "edit", "edits": {"reward": "lots"}}, "value.edits.reward"),
        ({"decision": "accept", "edits": {"text": "x"}}, "value.edits"),
    ],
)
def test_verify_values_are_validated_naming_the_field(owner, alice, value, field):
    task, _ = checklist_task(1)
    project = verify_project(owner, [alice], tasks=[task])
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        label_submit(item=project.items.first(), annotator=alice, value=value, client_token=token())


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"choice": "both"}, "value.choice"),
        ({"choice": "left", "dimensions": {"style": "left"}}, "value.dimensions.style"),
        ({"choice": "left", "dimensions": {"coverage": "up"}}, "value.dimensions.coverage"),
        ({"choice": "left", "left_report_id": 999999}, "value.left_report_id"),
        ({"choice": "left", "seconds_taken": -3}, "value.seconds_taken"),
    ],
)
def test_pairwise_values_are_validated_naming_the_field(owner, alice, value, field):
    project = pairwise_project(owner, [alice])
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        label_submit(item=project.items.first(), annotator=alice, value=value, client_token=token())


def test_pairwise_labels_record_the_shown_positions_and_a_preference_row(owner, alice):
    project = pairwise_project(owner, [alice], dimensions=["organization", "coverage"], blind=False)
    item = project.items.first()
    pair = project.pairs.get(pk=item.target_id)
    # A client showed the pair flipped (only where nothing is blind: a blind item names no report,
    # tests/api/test_blind_handles.py); the label records what was shown.
    value = {
        "choice": "left", "dimensions": {"coverage": "right"}, "seconds_taken": 41.5, "reason": "deeper",
        "left_report_id": pair.report_right_id, "right_report_id": pair.report_left_id,
    }
    label = label_submit(item=item, annotator=alice, value=value, client_token=token())
    preference = PairwisePreference.objects.get(label=label)
    assert (preference.report_left_id, preference.report_right_id) == (pair.report_right_id, pair.report_left_id)
    assert preference.choice == "left" and preference.project == project and preference.component == "report"
    assert preference.dimensions == {"coverage": "right"} and preference.seconds_taken == 41.5


def test_audit_rows_roll_back_with_a_failed_transaction(owner, alice, monkeypatch):
    project = pairwise_project(owner, [alice])
    item = project.items.first()
    events = AuditLog.objects.count()

    def broken(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(labels_module, "preference_record", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        label_submit(item=item, annotator=alice, value={"choice": "tie"}, client_token=token())
    item.refresh_from_db()
    assert item.labels_done == 0
    assert not Label.objects.exists()
    assert AuditLog.objects.count() == events


def test_audit_rows_exist_for_each_change(owner, alice):
    project = agreement_project(owner, [alice])
    claim = claim_next_item(project=project, user=alice)
    label = label_submit(item=claim.item, annotator=alice, value={"label": "correct"}, client_token=token())
    event = AuditLog.objects.get(action="label.submit")
    assert (event.actor, event.project_id, audit_kind(event)) == (alice, project.pk, "annotation_item")
    assert event.target_id == claim.item_id
    assert event.before == {"labels_done": 0, "status": "open"}
    assert event.after["label_id"] == label.pk and event.after["value"]["label"] == "correct"
    actions = set(AuditLog.objects.values_list("action", flat=True))
    assert {"project.create", "membership.set", "assignment.claim", "label.submit"} <= actions


@pytest.mark.django_db(transaction=True)
def test_audit_refuses_to_write_outside_a_transaction():
    with pytest.raises(RuntimeError, match="inside the transaction"):
        audit_record(actor=None, action=AuditAction.PROJECT_CREATE, target_kind="annotation_project")
    assert not AuditLog.objects.exists()


# --- Undo ------------------------------------------------------------------------------------


def test_undo_removes_the_label_and_its_counter(owner, alice):
    project = pairwise_project(owner, [alice], overlap=2, blind=False)
    claim = claim_next_item(project=project, user=alice)
    label_submit(item=claim.item, annotator=alice, value={"choice": "left"}, client_token=token())
    event = label_undo_last(annotator=alice, project=project)
    assert event.action == "label.undo" and event.before["value"]["choice"] == "left"
    item = AnnotationItem.objects.get(pk=claim.item_id)
    assert item.labels_done == 0 and not Label.objects.exists() and not PairwisePreference.objects.exists()
    assert Assignment.objects.get(pk=claim.pk).status == Assignment.Status.UNDONE
    # The item is offered again so the annotator can redo it.
    assert claim_next_item(project=project, user=alice).item == item
    assert label_undo_last(annotator=alice, project=project) is None


def test_undo_reopens_a_completed_item(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], overlap=2, blind=False)
    item = label_all(project.items.first(), [alice, bob], {"label": "correct"}, {"label": "omitted"})
    assert item.status == "complete" and item.disagreement
    label_undo_last(annotator=bob, project=project)
    item.refresh_from_db()
    assert (item.status, item.labels_done, item.disagreement) == ("open", 1, False)


def test_undo_of_a_skip_offers_the_item_again(owner, alice):
    project = agreement_project(owner, [alice], labels=["correct"], blind=False)
    claim = claim_next_item(project=project, user=alice)
    assignment_skip(assignment=claim, user=alice)
    assert claim_next_item(project=project, user=alice) is None
    event = label_undo_last(annotator=alice, project=project)
    assert event.action == "assignment.skip_undo"
    assert claim_next_item(project=project, user=alice).item == claim.item


def test_undo_is_refused_once_adjudicated(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], overlap=2, blind=False)
    item = label_all(project.items.first(), [alice, bob], {"label": "correct"}, {"label": "omitted"})
    item_adjudicate(item=item, curator=owner, value={"label": "correct"})
    with pytest.raises(UndoRefusedError, match="adjudicated"):
        label_undo_last(annotator=bob, project=project)
    assert Label.objects.filter(item=item).count() == 2


def accepted_by_both(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task], blind=False)
    item = label_all(project.items.get(), [alice, bob], {"decision": "accept"})
    return task, checklist_item, project, item


def test_undo_reverts_an_applied_review(owner, alice, bob):
    task, checklist_item, project, item = accepted_by_both(owner, alice, bob)
    checklist_item.refresh_from_db()
    task.refresh_from_db()
    assert (checklist_item.review_status, checklist_item.version, task.status) == ("accepted", 2, "curated")

    label_undo_last(annotator=bob, project=project)
    checklist_item.refresh_from_db()
    task.refresh_from_db()
    assert (checklist_item.review_status, checklist_item.version, task.status) == ("proposed", 3, "in_review")
    item.refresh_from_db()
    assert item.applied_revision is None and item.target_version == 3
    actions = list(AuditLog.objects.order_by("id").values_list("action", flat=True))
    # one trail: the item's revert sits between the task's and the label's rows; bob holds the item again
    assert actions[-4:] == ["task.uncurate", "review.undo", "label.undo", "assignment.claim"]


def test_undo_is_refused_when_the_item_was_edited_since(owner, alice, bob):
    from benchmark.services.history import proposable_update

    _, checklist_item, project, item = accepted_by_both(owner, alice, bob)
    fresh = ChecklistItem.objects.get(pk=checklist_item.pk)
    proposable_update(obj=fresh, changes={"text": "Sharper."}, expected_version=2)
    with pytest.raises(UndoRefusedError, match="changed since"):
        label_undo_last(annotator=bob, project=project)
    assert Label.objects.filter(item=item).count() == 2


def test_paused_projects_accept_no_labels(owner, alice):
    project = agreement_project(owner, [alice])
    project_set_status(project=project, status="paused", actor=owner)
    with pytest.raises(ProjectNotOpenError, match="project 'agreement' is paused; it accepts no labels"):
        label_submit(item=project.items.first(), annotator=alice, value={"label": "correct"}, client_token=token())


# --- Undo hands the item back to its annotator -------------------------------------------------


def test_undoing_a_label_reserves_the_item_again_and_releases_the_claim_held_meanwhile(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], overlap=2, blind=False)
    first = claim_next_item(project=project, user=alice).item
    label_submit(item=first, annotator=alice, value={"label": "correct"}, client_token=token())
    held = claim_next_item(project=project, user=alice)
    assert held.item != first

    label_undo_last(annotator=alice, project=project)
    claim = Assignment.objects.get(project=project, user=alice, status=Assignment.Status.ACTIVE)
    assert claim.item == first and claim.expires_at - claim.claimed_at == project.hold_duration
    held.refresh_from_db()
    assert held.status == Assignment.Status.RELEASED
    actions = list(AuditLog.objects.order_by("-id").values_list("action", flat=True)[:3])
    assert actions == ["assignment.claim", "assignment.release", "label.undo"]
    # the released item comes back after this one
    label_submit(item=first, annotator=alice, value={"label": "omitted"}, client_token=token())
    assert claim_next_item(project=project, user=alice).item == held.item


def test_undoing_a_skip_reserves_the_item_again_unless_its_slots_are_taken(owner, alice, bob, carol):
    project = agreement_project(owner, [alice, bob, carol], labels=["correct"] * 2, overlap=1, blind=False)
    skipped = claim_next_item(project=project, user=alice)
    assignment_skip(item=skipped.item, user=alice)
    label_undo_last(annotator=alice, project=project)
    claim = Assignment.objects.get(project=project, user=alice, status=Assignment.Status.ACTIVE)
    assert claim.item == skipped.item

    assignment_skip(item=skipped.item, user=alice)
    other = claim_next_item(project=project, user=bob)  # overlap 1: bob takes the only slot of one item
    while other.item != skipped.item:
        assignment_skip(item=other.item, user=bob)
        other = claim_next_item(project=project, user=bob)
    label_undo_last(annotator=alice, project=project)
    assert not Assignment.objects.filter(item=skipped.item, user=alice, status=Assignment.Status.ACTIVE).exists()
    assert Assignment.objects.filter(item=skipped.item, status=Assignment.Status.ACTIVE).count() == 1


def test_undo_reserves_nothing_in_a_paused_project(owner, alice):
    project = agreement_project(owner, [alice], overlap=1, blind=False)
    item = claim_next_item(project=project, user=alice).item
    label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=token())
    project_set_status(project=project, status="paused", actor=owner)
    label_undo_last(annotator=alice, project=project)
    assert not Assignment.objects.filter(project=project, status=Assignment.Status.ACTIVE).exists()


# --- "other" needs a note (the service's rule, not only the form's) --------------------------------


def test_a_reject_for_reason_other_needs_a_note(owner, alice):
    task, _ = checklist_task(1)
    project = verify_project(owner, [alice], tasks=[task])
    item = claim_next_item(project=project, user=alice).item
    for note in ("", "   "):
        with pytest.raises(ValueError, match=r"^value\.note: "):
            label_submit(item=item, annotator=alice, value={"decision": "reject", "reason": "other", "note": note},
                         client_token=token())
    label = label_submit(item=item, annotator=alice, client_token=token(),
                         value={"decision": "reject", "reason": "other", "note": "It is the survey's motivation."})
    assert label.value["note"] == "It is the survey's motivation."


def test_an_item_kind_remembered_wrongly_still_finds_the_items_target(owner, alice, bob):
    """The lock query joins the kinds this process remembers for the items (an item's kind
    never changes, but SQLite reuses the ids of a rolled-back insert): a wrong memory costs a
    second read, never the target."""
    from types import SimpleNamespace

    from annotation.loop.store import kinds_remember

    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = project.items.get()
    kinds_remember([SimpleNamespace(pk=item.pk, target_kind="report_pair")])
    label_all(item, [alice, bob], {"decision": "accept"})
    checklist_item.refresh_from_db()
    assert (item.status, checklist_item.review_status) == ("complete", "accepted")
