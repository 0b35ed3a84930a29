import pytest

from core.models import AuditLog

from annotation.models import AnnotationItem, GoldLabel
from annotation.selectors.progress import task_curation_status
from annotation.selectors.workspace import adjudication_queue
from annotation.services.errors import ItemNotOpenError, ReviewConflictError
from tests.annotation_factories import submit_held as label_submit  # blind: on an item held (#37)
from annotation.loop.settle import item_adjudicate, task_curate
from benchmark.models import ChecklistItem
from benchmark.services.history import proposable_update
from tests.annotation_factories import (
    agreement_project,
    checklist_task,
    label_all,
    pairwise_project,
    token,
    verify_project,
)
from tests.factories import NuggetFactory

pytestmark = pytest.mark.django_db


def both_review(item, alice, bob, *values):
    return label_all(item, [alice, bob], *values)


def test_first_review_alone_changes_nothing(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    label_submit(item=project.items.get(), annotator=alice, value={"decision": "accept"}, client_token=token())
    checklist_item.refresh_from_db()
    assert (checklist_item.review_status, checklist_item.version) == ("proposed", 1)


def test_two_agreeing_reviews_accept_the_item(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = both_review(project.items.get(), alice, bob, {"decision": "accept"})
    checklist_item.refresh_from_db()
    assert (item.status, item.disagreement, item.conflict) == ("complete", False, "")
    assert (checklist_item.review_status, checklist_item.version) == ("accepted", 2)
    revision = AuditLog.objects.get(object_id=checklist_item.pk, action="review.accepted")
    assert revision.actor == bob and item.applied_revision == revision
    assert adjudication_queue(project=project) == []


def test_two_identical_edits_apply_the_edit(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    edit = {"decision": "edit", "edits": {"text": "The report names both benchmarks.", "reward": "2"}}
    both_review(project.items.get(), alice, bob, edit)
    checklist_item.refresh_from_db()
    assert (checklist_item.review_status, checklist_item.text, checklist_item.reward) == (
        "edited", "The report names both benchmarks.", 2.0,
    )


def test_two_agreeing_rejections_reject_even_with_different_reasons(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    both_review(
        project.items.get(), alice, bob,
        {"decision": "reject", "reason": "over_specified"}, {"decision": "reject", "reason": "ambiguous"},
    )
    checklist_item.refresh_from_db()
    assert checklist_item.review_status == "rejected"


def test_disagreement_goes_to_the_queue_and_the_gold_label_settles_it(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = both_review(
        project.items.get(), alice, bob, {"decision": "accept"}, {"decision": "reject", "reason": "unverifiable"}
    )
    checklist_item.refresh_from_db()
    assert item.disagreement and checklist_item.review_status == "proposed"
    (row,) = adjudication_queue(project=project)
    assert row["item_id"] == item.pk
    assert [(label["annotator"], label["value"]["decision"]) for label in row["labels"]] == [
        ("alice", "accept"), ("bob", "reject"),
    ]
    assert row["target"]["text"] == checklist_item.text

    with pytest.raises(PermissionError, match="only curators adjudicate items"):
        item_adjudicate(item=item, curator=alice, value={"decision": "accept"})
    gold = item_adjudicate(
        item=item, curator=owner, value={"decision": "reject", "reason": "unverifiable"}, note="no source"
    )
    checklist_item.refresh_from_db()
    item.refresh_from_db()
    assert (checklist_item.review_status, item.status) == ("rejected", "adjudicated")
    assert gold.decided_by == owner and gold.value["reason"] == "unverifiable"
    assert adjudication_queue(project=project) == []
    event = AuditLog.objects.get(action="item.adjudicate")
    assert event.actor == owner and event.after["note"] == "no source"
    with pytest.raises(ItemNotOpenError, match="is adjudicated: only complete, not yet adjudicated items can be adjudicated"):
        item_adjudicate(item=item, curator=owner, value={"decision": "accept"})


def test_different_edits_are_a_disagreement(owner, alice, bob):
    task, _ = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = both_review(
        project.items.get(), alice, bob,
        {"decision": "edit", "edits": {"text": "A"}}, {"decision": "edit", "edits": {"text": "B"}},
    )
    assert item.disagreement


def test_task_is_curated_only_when_every_item_is_settled(owner, alice, bob):
    task, checklist_items = checklist_task(2)
    nugget = NuggetFactory(task=task, review_status="proposed")
    project = verify_project(owner, [alice, bob], tasks=[task])
    task.refresh_from_db()
    assert task.status == "in_review"
    first, second = project.items.order_by("position")
    both_review(first, alice, bob, {"decision": "accept"})
    both_review(second, alice, bob, {"decision": "accept"}, {"decision": "reject", "reason": "duplicate"})
    task.refresh_from_db()
    assert task.status == "in_review"

    item_adjudicate(item=second, curator=owner, value={"decision": "accept"})
    task.refresh_from_db()
    assert task.status == "in_review"  # the nugget is still proposed
    status = task_curation_status(task=task)
    assert (status["total"], status["settled"], status["curatable"]) == (4, 3, False)
    assert status["kinds"]["nugget"]["proposed"] == 1
    with pytest.raises(ValueError, match="1 of 4"):
        task_curate(task=task, actor=owner)

    proposable_update(obj=nugget, changes={"review_status": "accepted"}, expected_version=1)
    with pytest.raises(PermissionError, match="only curators mark tasks curated"):
        task_curate(task=task, actor=alice)
    task_curate(task=task, actor=owner)
    task.refresh_from_db()
    assert task.status == "curated"
    assert AuditLog.objects.filter(action="task.curate", object_id=task.pk).count() == 1


def test_task_is_curated_automatically_after_the_last_settlement(owner, alice, bob):
    task, _ = checklist_task(2)
    project = verify_project(owner, [alice, bob], tasks=[task])
    for item in project.items.order_by("position"):
        both_review(item, alice, bob, {"decision": "accept"})
    task.refresh_from_db()
    assert task.status == "curated"
    assert task_curation_status(task=task)["curatable"]


def test_a_stale_item_is_not_overwritten_and_waits_for_a_curator(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = project.items.get()
    label_submit(item=item, annotator=alice, value={"decision": "accept"}, client_token=token())
    # Someone edits the checklist item between the two reviews.
    proposable_update(obj=checklist_item, changes={"text": "Rewritten."}, expected_version=1)
    label_submit(item=item, annotator=bob, value={"decision": "accept"}, client_token=token())
    item.refresh_from_db()
    checklist_item.refresh_from_db()
    assert (checklist_item.review_status, checklist_item.text, checklist_item.version) == ("proposed", "Rewritten.", 2)
    assert "changed by someone else" in item.conflict and "version 2" in item.conflict
    (row,) = adjudication_queue(project=project)
    assert row["conflict"] == item.conflict

    # Adjudicating against the old version is refused with the same clear message ...
    with pytest.raises(ReviewConflictError, match="based on version 1"):
        item_adjudicate(item=item, curator=owner, value={"decision": "accept"})
    assert not GoldLabel.objects.exists()
    # ... and applied against the version the curator was shown.
    item_adjudicate(item=item, curator=owner, value={"decision": "accept"}, expected_version=2)
    checklist_item.refresh_from_db()
    assert (checklist_item.review_status, checklist_item.version) == ("accepted", 3)


def test_agreement_items_disagreeing_with_the_judge_are_queued_with_the_verdict(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=["correct", "correct"], overlap=2)
    agreed, against_judge = project.items.order_by("position")
    both_review(agreed, alice, bob, {"label": "correct"})
    both_review(against_judge, alice, bob, {"label": "omitted"})
    assert not agreed.disagreement and against_judge.disagreement
    (row,) = adjudication_queue(project=project)
    assert row["item_id"] == against_judge.pk and row["judge"]["label"] == "correct"
    item_adjudicate(item=against_judge, curator=owner, value={"label": "omitted"}, note="judge missed it")
    assert AnnotationItem.objects.get(pk=against_judge.pk).status == "adjudicated"


def test_pairwise_agreement_compares_the_preferred_report_not_the_side(owner, alice, bob):
    # A client of a project that is not blind may show the pair flipped (blind ones name sides only).
    project = pairwise_project(owner, [alice, bob], overlap=2, blind=False)
    item = project.items.first()
    pair = project.pairs.get(pk=item.target_id)
    flipped = {"left_report_id": pair.report_right_id, "right_report_id": pair.report_left_id}
    both_review(item, alice, bob, {"choice": "left"}, {"choice": "right", **flipped})
    assert item.status == "complete" and not item.disagreement
    other = project.items.exclude(pk=item.pk).first()
    both_review(other, alice, bob, {"choice": "left"}, {"choice": "tie"})
    assert other.disagreement


def test_edits_are_checked_when_applied_by_a_curator(owner, alice, bob):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = both_review(
        project.items.get(), alice, bob, {"decision": "accept"},
        {"decision": "reject", "reason": "other", "note": "not in the survey"},
    )
    with pytest.raises(ValueError, match="value.edits.text"):
        item_adjudicate(item=item, curator=owner, value={"decision": "edit", "edits": {"text": ""}})
    assert ChecklistItem.objects.get(pk=checklist_item.pk).review_status == "proposed"


def _joined_then(monkeypatch, meanwhile):
    """The label loop reads a verify item's benchmark row with the item, without its lock;
    ``meanwhile(row)`` runs right after that read, as a concurrent transaction would."""
    from annotation.loop.store import reads

    read = reads.joined_target

    def joined_target(row):
        target = read(row)
        return meanwhile(target) or target

    monkeypatch.setattr(reads, "joined_target", joined_target)  # where the locked items' read finds it


def test_a_row_edited_after_the_last_review_read_it_is_not_overwritten(owner, alice, bob, monkeypatch):
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = project.items.get()
    label_submit(item=item, annotator=alice, value={"decision": "accept"}, client_token=token())
    _joined_then(monkeypatch, lambda row: proposable_update(obj=row, changes={"text": "Rewritten."},
                                                            expected_version=1) and None)
    label_submit(item=item, annotator=bob, value={"decision": "accept"}, client_token=token())
    item.refresh_from_db()
    checklist_item.refresh_from_db()
    # Read again under its lock, the row shows the edit: the decision waits for a curator.
    assert (checklist_item.review_status, checklist_item.text, checklist_item.version) == ("proposed", "Rewritten.", 2)
    assert item.status == "complete" and "changed by someone else" in item.conflict
    assert item.labels.count() == 2
    assert AuditLog.objects.filter(action="label.submit", object_id=item.pk).count() == 2


def test_a_row_read_before_a_change_the_item_already_knows_is_read_again(owner, alice, bob, monkeypatch):
    """The item's lock was awaited while a change committed: the row read with it is older than
    the version the item expects. That is no conflict: read under its lock, it matches."""
    task, (checklist_item,) = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = project.items.get()
    label_submit(item=item, annotator=alice, value={"decision": "accept"}, client_token=token())

    def older(row):
        row.version -= 1

    _joined_then(monkeypatch, older)
    label_submit(item=item, annotator=bob, value={"decision": "accept"}, client_token=token())
    item.refresh_from_db()
    checklist_item.refresh_from_db()
    assert (checklist_item.review_status, checklist_item.version, item.conflict) == ("accepted", 2, "")
    assert item.labels.count() == 2
