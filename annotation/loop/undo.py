"""Undoing the annotator's last label or skip (``label_undo_last``).

A label is final once submitted (``loop.labels``); to correct a mistake the annotator
undoes their last action while nothing depends on it yet, then labels again — except in blind
projects, where committing revealed what was hidden and the label stays final.
"""

from django.db import transaction
from django.utils import timezone

from benchmark.models import Task
from benchmark.services.history import StaleEditError, proposable_update
from core.audit_actions import AuditAction
from core.models import AuditLog

from ..kinds import kind_of
from ..models import AnnotationItem, AnnotationProject, Assignment, Label, PairwisePreference
from ..selectors.targets import item_target
from ..services.audit import audit_record
from ..services.errors import UndoRefusedError
from .claims import claims_create, claims_release_all, item_has_free_slot
from .settle import task_uncurate
from .store import item_lock


def _last_action(*, annotator, project: AnnotationProject) -> Label | Assignment | None:
    label = Label.objects.filter(project=project, annotator=annotator).order_by("-created_at", "-id").first()
    skip = (
        Assignment.objects.filter(project=project, user=annotator, status=Assignment.Status.SKIPPED)
        .order_by("-ended_at", "-id")
        .first()
    )
    if skip is not None and (label is None or skip.ended_at > label.created_at):
        return skip
    return label


def undo_target_item(*, annotator, project: AnnotationProject) -> int | None:
    """The item ``label_undo_last`` would act on now (the annotator's last label or skip in the
    project), so a page offers "undo" only beside that one. A read: two queries."""
    action = _last_action(annotator=annotator, project=project)
    return None if action is None else action.item_id


def _reclaim(*, item: AnnotationItem, annotator, project: AnnotationProject) -> Assignment | None:
    """Reserve the undone item for the annotator again (under the item's lock), so the
    workspace shows it as theirs (first). Same rules as ``claim_next_item``: the claims they
    held meanwhile are released (and may be offered to them again after this item), never
    beyond overlap k, nothing in a paused or closed project."""
    now = timezone.now()
    if project.status != AnnotationProject.Status.OPEN or not item_has_free_slot(item, now):
        return None
    claims_release_all(project=project, user=annotator, now=now)
    claims = claims_create(project=project, items=[item], user=annotator, now=now)
    return claims[0] if claims else None


def _skip_undo(*, skip: Assignment, annotator, project: AnnotationProject) -> AuditLog:
    locked = item_lock(item_id=skip.item_id)
    updated = Assignment.objects.filter(pk=skip.pk, status=Assignment.Status.SKIPPED).update(
        status=Assignment.Status.UNDONE
    )
    if not updated:
        raise UndoRefusedError("that skip was already undone")
    event = audit_record(
        actor=annotator, action=AuditAction.ASSIGNMENT_SKIP_UNDO, target_kind="annotation_item", target_id=skip.item_id,
        project=project, before={"assignment_id": skip.pk, "status": Assignment.Status.SKIPPED},
        after={"status": Assignment.Status.UNDONE},
    )
    _reclaim(item=locked, annotator=annotator, project=project)
    return event


def _review_revert(*, item: AnnotationItem, annotator) -> None:
    """Put the benchmark row back as it was before this item's decision was applied."""
    if item.task_id and item.task.status == Task.Status.CURATED:
        if item.task.task_sets.filter(frozen_at__isnull=False).exists():
            raise UndoRefusedError(f"task {item.task.key} is curated and part of a frozen task set; ask a curator")
        task_uncurate(task_id=item.task_id, actor=annotator, project=item.project)
    target = item_target(item)
    revision = item.applied_revision
    changes = {name: revision.before[name] for name in target.tracked_fields if name in (revision.before or {})}
    try:
        updated = proposable_update(
            obj=target, changes=changes, expected_version=item.target_version, actor=annotator, action=AuditAction.REVIEW_UNDO,
            note=f"label undone in project {item.project.name!r}",
        )
    except StaleEditError as exc:
        raise UndoRefusedError(f"cannot undo: the reviewed item changed since ({exc})") from exc
    item.applied_revision = None
    item.target_version = updated.version


def _label_undo(*, label: Label, annotator, project: AnnotationProject) -> AuditLog:
    locked = item_lock(item_id=label.item_id)
    if project.blind:
        raise UndoRefusedError(kind_of(project).undo_refused.format(position=locked.position))
    label = Label.objects.filter(pk=label.pk).first()
    if label is None:
        raise UndoRefusedError("that label was already undone")
    if locked.status == AnnotationItem.Status.ADJUDICATED:
        raise UndoRefusedError(
            f"item {locked.pk} was already adjudicated by a curator; your label is part of the record"
        )
    before = {
        "label_id": label.pk, "value": label.value, "labels_done": locked.labels_done, "status": locked.status,
        "applied_revision_id": locked.applied_revision_id,
    }
    if locked.applied_revision_id is not None:
        _review_revert(item=locked, annotator=annotator)
    PairwisePreference.objects.filter(label=label).delete()
    if label.assignment_id:
        Assignment.objects.filter(pk=label.assignment_id).update(status=Assignment.Status.UNDONE)
    label.delete()
    locked.labels_done -= 1
    locked.status = AnnotationItem.Status.OPEN
    locked.disagreement, locked.conflict, locked.completed_at = False, "", None
    locked.save()
    event = audit_record(
        actor=annotator, action=AuditAction.LABEL_UNDO, target_kind="annotation_item", target_id=locked.pk, project=project,
        before=before, after={"labels_done": locked.labels_done, "status": locked.status},
    )
    _reclaim(item=locked, annotator=annotator, project=project)
    return event


@transaction.atomic
def label_undo_last(*, annotator, project: AnnotationProject) -> AuditLog | None:
    """Undo the annotator's most recent label or skip in the project; None when there is none.

    In a blind project a label is final (``UndoRefusedError``): committing it revealed what the
    project hides, so undoing would let the annotator copy the revealed answer. Skips reveal
    nothing and are undone as anywhere.

    A label is removed with its counter, its pairwise preference row, and (verify) the review
    decision it caused, which is reverted through ``proposable_update`` (a task curated by it
    goes back to in review). Refused (``UndoRefusedError``) once a curator adjudicated the
    item, when the benchmark row changed since, or when the task is in a frozen task set.

    The undone item is reserved for the annotator again (a new claim, see ``_reclaim``) when
    it has a free slot, so they can label it anew right away.
    """
    project = AnnotationProject.objects.get(pk=project.pk)  # its current status decides the re-claim
    action = _last_action(annotator=annotator, project=project)
    if action is None:
        return None
    if isinstance(action, Assignment):
        return _skip_undo(skip=action, annotator=annotator, project=project)
    return _label_undo(label=action, annotator=annotator, project=project)
