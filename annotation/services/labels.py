"""Submitting and undoing labels.

A label is final once submitted: a second, different submission by the same annotator for
the same item is refused (``AlreadyLabelledError``). To correct a mistake the annotator
undoes their last action (``label_undo_last``) while nothing depends on it yet, then labels
again — except in blind projects, where committing reveals what was hidden and the label stays
final. Resubmitting the same form (same ``client_token``) returns the first label.
"""

import uuid

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from benchmark.models import Task
from benchmark.services.history import StaleEditError, proposable_update
from core.models import AuditLog as AuditEvent  # the one trail; the old name stays in this module's hints

from .. import rawsql
from ..models import (
    AnnotationItem,
    AnnotationProject,
    Assignment,
    Label,
    PairwisePreference,
    ReportPair,
    Role,
)
from ..selectors import LABELLING_ROLES, item_target, project_role
from .audit import audit_record
from .claims import active_claims, claim_create, claim_release, item_has_free_slot
from .errors import AlreadyLabelledError, ClaimLostError, ItemNotOpenError, ProjectNotOpenError, UndoRefusedError
from .locking import item_lock
from .review import COMPLETED_ITEM_FIELDS, item_complete, task_uncurate
from .values import value_clean

PREFERENCE_SOURCE = "studio"


def _token(client_token) -> uuid.UUID:
    try:
        return client_token if isinstance(client_token, uuid.UUID) else uuid.UUID(str(client_token))
    except ValueError as exc:
        raise ValueError(f"client_token: {client_token!r} is not a UUID") from exc


def _earlier_submission(*, annotator, token: uuid.UUID, item_id: int) -> Label | None:
    """The annotator's label made with this form (``token``): a resubmission, returned as is.
    Raises ``ValueError`` when the token was used on another item and ``AlreadyLabelledError``
    when the annotator labelled this item with another form. One query for both."""
    token_db = Label._meta.get_field("client_token").get_db_prep_value(token, connection)
    earlier = rawsql.rows(
        Label,
        f"SELECT * FROM {rawsql.table(Label)} WHERE annotator_id = %s AND (client_token = %s OR item_id = %s)"
        " ORDER BY id LIMIT 2",
        [annotator.pk, token_db, item_id],
    )
    first = next((label for label in earlier if label.client_token == token), None)
    if first is not None and first.item_id != item_id:
        raise ValueError(
            f"client_token: already used for a label on item {first.item_id}; each form needs its own token"
        )
    if first is None and earlier:
        raise AlreadyLabelledError(f"you already labelled item {item_id}; undo your last label to change it")
    return first


def require_labeller(*, project: AnnotationProject, user, role: str | None = None) -> None:
    """``role``: the user's role in ``project`` when the caller already resolved it."""
    if role is None:
        role = project_role(project=project, user=user)
    if role not in LABELLING_ROLES:
        raise PermissionError(
            f"{user} may not label items of project {project.name!r} (role: {role or 'not a member'})"
        )
    if project.blind and role == Role.CURATOR:  # curators see labels as items complete, so they cannot label blind
        raise PermissionError(
            f"project {project.name!r} is blind: only its annotators label; to label, a curator joins it as an"
            " annotator (and is then blind like any annotator until committing each label)"
        )
    if project.status != AnnotationProject.Status.OPEN:
        raise ProjectNotOpenError(f"project {project.name!r} is {project.status}; it accepts no labels now")


def preference_record(*, label: Label, pair: ReportPair, project: AnnotationProject) -> PairwisePreference:
    """Mirror a pairwise label as the ``PairwisePreference`` row the metrics read."""
    value = label.value
    return PairwisePreference.objects.create(
        task_id=pair.task_id, report_left_id=value["left_report_id"], report_right_id=value["right_report_id"],
        annotator_id=label.annotator_id, component=project.component, choice=value["choice"],
        dimensions=value["dimensions"], reason=value["reason"], seconds_taken=value["seconds_taken"],
        labeled_at=label.created_at, source=PREFERENCE_SOURCE, external_id=f"label-{label.pk}", project=project,
        label=label,
    )


@transaction.atomic
def label_submit(
    *, item: AnnotationItem, annotator, value: dict, client_token, project: AnnotationProject | None = None,
    role: str | None = None, target=None,
) -> Label:
    """Store ``annotator``'s label for ``item`` and settle the item when it has all its labels.

    Ends the annotator's claim, bumps ``labels_done`` under the item's row lock, completes the
    item at k labels (verify: applies an agreed decision; disagreement: adjudication queue),
    mirrors pairwise labels as ``PairwisePreference`` rows, and writes the audit row — all in
    one transaction. Idempotent per ``client_token``.

    Raises ``ValueError`` (invalid value, naming the field, or a reused token),
    ``PermissionError``, ``ProjectNotOpenError``, ``ItemNotOpenError`` (item already complete),
    ``AlreadyLabelledError`` (a different earlier submission), ``ClaimLostError`` (the claim
    expired and the item's slots were given to others).

    ``project`` and ``role``: the item's project and the annotator's role in it, when the
    caller (a view) read them at the start of this request; else they are looked up.
    ``target``: the item's target row when the caller read it in this request to check the
    form; a verify decision is still applied against the version the reviewers saw
    (``proposable_update`` re-reads the row under its lock), so an older copy cannot slip in.
    """
    token = _token(client_token)
    locked = item_lock(item_id=item.pk)
    if project is not None and project.pk == locked.project_id:
        locked.project = project
    else:
        project, role = locked.project, None
    # Under the lock: a concurrent submission of the same form has committed by now.
    first = _earlier_submission(annotator=annotator, token=token, item_id=locked.pk)
    if first is not None:
        return first
    require_labeller(project=project, user=annotator, role=role)
    if locked.status != AnnotationItem.Status.OPEN:
        raise ItemNotOpenError(f"item {locked.pk} already has all {locked.labels_needed} labels it needs")
    if target is None or target.pk != locked.target_id:
        target = item_target(locked)
    if project.blind and isinstance(value, dict) and value.get("judge_correct") is not None:
        # Checked against the hidden verdict, the claim would answer whether it holds: an oracle.
        raise ValueError("value.judge_correct: not accepted in a blind project; send your label, the server compares it")
    clean = value_clean(project=project, target=target, value=value)
    now = timezone.now()
    claims = active_claims(locked)
    own = next((claim for claim in claims if claim.user_id == annotator.pk), None)
    if own is None or own.expires_at <= now:
        others = sum(1 for claim in claims if claim.user_id != annotator.pk and claim.expires_at > now)
        if locked.labels_done + others >= locked.labels_needed:
            raise ClaimLostError(
                f"your hold on item {locked.pk} expired and its {locked.labels_needed} slots are taken; "
                "your label was not saved — ask for the next item"
            )
    # No savepoint around the insert: on a conflict the whole submission is refused and rolled back.
    try:
        label = Label.objects.create(
            project=project, item=locked, annotator=annotator, value=clean, client_token=token, assignment=own,
            created_at=now,
        )
    except IntegrityError as exc:  # the same token raced in for another item
        raise ValueError("client_token: already used for another label; each form needs its own token") from exc
    if own is not None:
        own.status, own.ended_at = Assignment.Status.SUBMITTED, now
        own.save(update_fields=["status", "ended_at"])
    if project.kind == AnnotationProject.Kind.PAIRWISE:
        preference_record(label=label, pair=target, project=project)
    before = {"labels_done": locked.labels_done, "status": locked.status}
    locked.labels_done += 1
    audit_record(
        actor=annotator, action="label.submit", target_kind="annotation_item", target_id=locked.pk, project=project,
        before=before, after={"label_id": label.pk, "value": clean, "labels_done": locked.labels_done},
    )
    changed = ["labels_done"]
    if locked.labels_done == locked.labels_needed:
        item_complete(item=locked, actor=annotator, target=target)
        changed += COMPLETED_ITEM_FIELDS
    locked.save(update_fields=changed)
    return label


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


def _reclaim(*, item: AnnotationItem, annotator, project: AnnotationProject) -> Assignment | None:
    """Reserve the undone item for the annotator again (under the item's lock), so the
    workspace shows it as theirs. Same rules as ``next_item_for``: one claim per user and
    project (the claim they held meanwhile is released, and may be offered to them again
    after this item), never beyond overlap k, nothing in a paused or closed project."""
    now = timezone.now()
    if project.status != AnnotationProject.Status.OPEN or not item_has_free_slot(item, now):
        return None
    held = Assignment.objects.filter(project=project, user=annotator, status=Assignment.Status.ACTIVE).first()
    if held is not None:
        claim_release(assignment=held, user=annotator, now=now)
    return claim_create(project=project, item=item, user=annotator, now=now)


def _skip_undo(*, skip: Assignment, annotator, project: AnnotationProject) -> AuditEvent:
    locked = item_lock(item_id=skip.item_id)
    updated = Assignment.objects.filter(pk=skip.pk, status=Assignment.Status.SKIPPED).update(
        status=Assignment.Status.UNDONE
    )
    if not updated:
        raise UndoRefusedError("that skip was already undone")
    event = audit_record(
        actor=annotator, action="assignment.skip_undo", target_kind="annotation_item", target_id=skip.item_id,
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
            obj=target, changes=changes, expected_version=item.target_version, actor=annotator, action="review:undo",
            note=f"label undone in project {item.project.name!r}",
        )
    except StaleEditError as exc:
        raise UndoRefusedError(f"cannot undo: the reviewed item changed since ({exc})") from exc
    item.applied_revision = None
    item.target_version = updated.version


BLIND_UNDO_REFUSED = (
    "your label on item {position} is final: this project is blind, and committing it showed you what was"
    " hidden (the judge's verdict, the other labels, the systems compared); ask a curator to correct it"
)


def _label_undo(*, label: Label, annotator, project: AnnotationProject) -> AuditEvent:
    locked = item_lock(item_id=label.item_id)
    if project.blind:
        raise UndoRefusedError(BLIND_UNDO_REFUSED.format(position=locked.position))
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
        actor=annotator, action="label.undo", target_kind="annotation_item", target_id=locked.pk, project=project,
        before=before, after={"labels_done": locked.labels_done, "status": locked.status},
    )
    _reclaim(item=locked, annotator=annotator, project=project)
    return event


@transaction.atomic
def label_undo_last(*, annotator, project: AnnotationProject) -> AuditEvent | None:
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
