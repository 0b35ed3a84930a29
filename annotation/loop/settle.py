"""Settling items: two-stage verification (DeepSynth §3.2), adjudication, task curation.

An item completes when it has ``labels_needed`` labels. If they agree, a verify item's
decision is applied to the benchmark row through ``proposable_review`` against the version
the reviewers saw; if they disagree (or, agreement projects, disagree with the judge) the
item waits in the adjudication queue for a curator's ``GoldLabel``. After every applied
decision the item's task becomes curated once every proposable of the task is settled.
"""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from benchmark.models import Task
from benchmark.services.history import (
    ProposableEdit,
    StaleEditError,
    proposable_edit,
    proposable_edits_save,
    proposable_review,
    review_changes,
)
from core.accounts import is_global_curator
from core.audit_actions import AuditAction

from ..models import AnnotationItem, GoldLabel, Label, Role
from ..kinds import kind_of
from ..selectors.progress import task_curation_status
from ..selectors.projects import project_role
from ..selectors.targets import item_target
from ..services.audit import audit_record
from ..services.errors import ItemNotOpenError, ReviewConflictError
from ..services.values import DECISION_STATUS, value_clean
from ..services.webhooks import webhooks_fire_task_curated
from . import store
from .store import item_lock


def review_apply(*, item: AnnotationItem, target, value: dict, actor, note: str, expected_version: int) -> None:
    """Apply a verify decision to the item's benchmark row; ``ReviewConflictError`` (nothing
    applied) when the row moved past ``expected_version`` or the edit is invalid."""
    decision = value["decision"]
    try:
        updated = proposable_review(
            obj=target, status=DECISION_STATUS[decision], expected_version=expected_version, actor=actor, note=note,
            edits=value["edits"] if decision == "edit" else None,
        )
    except StaleEditError as exc:
        raise ReviewConflictError(f"the decision was not applied: {exc}") from exc
    except ValidationError as exc:
        raise ReviewConflictError(f"the decision was not applied: {'; '.join(exc.messages)}") from exc
    item.applied_revision = updated.latest_revision
    item.target_version = updated.version
    item.conflict = ""
    if item.task_id:
        task_curate_if_settled(task_id=item.task_id, actor=actor, project=item.project, kind=item.target_kind)


def review_check(*, target, value: dict, actor, note: str, expected_version: int) -> ProposableEdit:
    """A verify decision checked against the item's benchmark row (read in the caller's
    transaction, under its lock or not: ``proposable_edits_save`` writes it only while it is
    as read) and applied to it in memory, for the caller to write with others
    (``proposable_edits_save``); ``ReviewConflictError`` (the row untouched) as ``review_apply``."""
    decision = value["decision"]
    try:
        return proposable_edit(
            current=target, changes=review_changes(status=DECISION_STATUS[decision],
                                                   edits=value["edits"] if decision == "edit" else None),
            expected_version=expected_version, actor=actor, note=note, action=AuditAction(f"review.{DECISION_STATUS[decision]}"),
        )
    except StaleEditError as exc:
        raise ReviewConflictError(f"the decision was not applied: {exc}") from exc
    except (ValidationError, ValueError) as exc:
        messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
        raise ReviewConflictError(f"the decision was not applied: {'; '.join(messages)}") from exc


_UNREAD = object()

# The item fields ``item_complete`` (with ``review_apply``) may change: what its caller saves.
COMPLETED_ITEM_FIELDS = ("status", "completed_at", "disagreement", "conflict", "applied_revision", "target_version")


def item_complete(
    *, item: AnnotationItem, actor, target=_UNREAD, labels: list[Label] | None = None,
    edits: list[tuple[AnnotationItem, ProposableEdit]] | None = None,
) -> None:
    """Called under the item's lock when its last label arrived (the caller saves the item's
    ``COMPLETED_ITEM_FIELDS``). ``target``: the item's target row when the caller read it under
    the same lock; ``labels``: the item's labels in order, when the caller read them under it.
    ``edits``: a list for an agreed verify decision, checked and applied in memory to ``target``
    (read by the caller, see ``review_check``), for the caller to write with others
    (``review_edits_save``); else it is written here (``review_apply``)."""
    project = item.project
    if labels is None:
        labels = list(Label.objects.filter(item_id=item.pk).order_by("created_at", "id"))
    if target is _UNREAD:
        target = item_target(item)
    kind = kind_of(project)
    disagreement = kind.labels_disagree(project, [label.value for label in labels], judge_label=kind.judge_label(target))
    item.status = AnnotationItem.Status.COMPLETE
    item.completed_at = timezone.now()
    item.disagreement = disagreement
    if not kind.applies_to_benchmark or disagreement:
        return
    reviewers = ", ".join(str(label.annotator_id) for label in labels)
    note = f"two-stage verification in project {project.name!r} (reviewers {reviewers})"
    if edits is not None:
        try:
            edits.append((item, review_check(target=target, value=labels[0].value, actor=actor, note=note,
                                             expected_version=item.target_version)))
        except ReviewConflictError as exc:
            item.conflict = str(exc)
        return
    try:
        review_apply(
            item=item, target=target, value=labels[0].value, actor=actor, note=note,
            expected_version=item.target_version,
        )
    except ReviewConflictError as exc:
        # The labels are kept; a curator settles the item from the adjudication queue.
        item.conflict = str(exc)


def review_edits_save(*, edits: list[tuple[AnnotationItem, ProposableEdit]], actor, audit_rows: list[dict]) -> None:
    """Write the decisions ``item_complete`` checked (``edits``, maybe none) and the transaction's
    other audit rows (``audit_rows_for``) together, through the loop's statements
    (``store.PROPOSABLE_WRITES``), point each item at its revision, and curate each task once
    that all its proposables are settled."""
    proposable_edits_save([edit for _, edit in edits], audit_rows=audit_rows, writes=store.PROPOSABLE_WRITES)
    tasks: dict[int, tuple[AnnotationItem, set[str]]] = {}
    for item, edit in edits:
        item.applied_revision = edit.row.latest_revision
        item.target_version = edit.row.version
        item.conflict = ""
        if item.task_id:
            tasks.setdefault(item.task_id, (item, set()))[1].add(item.target_kind)
    for task_id, (item, kinds) in tasks.items():
        task_curate_if_settled(task_id=task_id, actor=actor, project=item.project,
                               kind=next(iter(kinds)) if len(kinds) == 1 else "")


@transaction.atomic
def item_adjudicate(
    *, item: AnnotationItem, curator, value: dict, note: str = "", expected_version: int | None = None
) -> GoldLabel:
    """A curator's final label for a complete item (one per item).

    Verify projects apply the gold decision to the benchmark row against ``expected_version``
    (default: the version the reviews were based on; pass the version shown to the curator
    when the queue flagged a conflict). Raises ``PermissionError`` for non-curators,
    ``ItemNotOpenError`` unless the item is complete and not yet adjudicated,
    ``ReviewConflictError`` when the benchmark row changed meanwhile, ``ValueError`` for an
    invalid value.
    """
    locked = item_lock(item_id=item.pk)
    project = locked.project
    if project_role(project=project, user=curator) != Role.CURATOR:
        raise PermissionError(f"only curators adjudicate items of project {project.name!r}")
    if locked.status != AnnotationItem.Status.COMPLETE:
        raise ItemNotOpenError(
            f"item {locked.pk} is {locked.status}: only complete, not yet adjudicated items can be adjudicated"
        )
    target = item_target(locked)
    clean = value_clean(project=project, target=target, value=value)
    before = {"status": locked.status, "disagreement": locked.disagreement, "conflict": locked.conflict}
    if kind_of(project).applies_to_benchmark:
        version = locked.target_version if expected_version is None else expected_version
        review_apply(
            item=locked, target=target, value=clean, actor=curator, expected_version=version,
            note=f"adjudicated in project {project.name!r}: {note}".strip(),
        )
    gold = GoldLabel.objects.create(item=locked, value=clean, note=note, decided_by=curator, decided_at=timezone.now())
    locked.status = AnnotationItem.Status.ADJUDICATED
    locked.save()
    audit_record(
        actor=curator, action=AuditAction.ITEM_ADJUDICATE, target_kind="annotation_item", target_id=locked.pk, project=project,
        before=before, after={"status": locked.status, "gold": clean, "note": note},
    )
    return gold


def _task_set_curated(*, task: Task, actor, project) -> None:
    before = task.status
    task.status = Task.Status.CURATED
    task.save(update_fields=["status", "updated_at"])
    audit_record(
        actor=actor, action=AuditAction.TASK_CURATE, target_kind="task", target_id=task.pk, project=project,
        before={"status": before}, after={"status": task.status},
    )
    # Every way a task becomes curated notifies, manual or automatic, in the same transaction.
    webhooks_fire_task_curated(task=task, actor=actor)


def task_curate_if_settled(*, task_id: int, actor, project=None, kind: str = "") -> bool:
    """Mark the task curated when all its proposables are settled (inside the caller's transaction).

    The task row is locked before counting, so two reviewers settling a task's last two items
    at once cannot both see the other's item still proposed (``store.task_settlement``). On
    SQLite the IMMEDIATE transaction is the lock. ``kind``: the kind of proposal just settled.
    """
    task, settled = store.task_settlement(task_id=task_id, kind=kind)
    if task.status in (Task.Status.CURATED, Task.Status.RETIRED):
        return task.status == Task.Status.CURATED
    if not settled:
        return False
    _task_set_curated(task=task, actor=actor, project=project)
    return True


@transaction.atomic
def task_curate(*, task: Task, actor) -> Task:
    """Mark a task curated by hand (global curators). ``ValueError`` while any item is unsettled."""
    if not is_global_curator(actor):
        raise PermissionError("only curators mark tasks curated")
    locked = Task.objects.select_for_update(no_key=True).get(pk=task.pk)
    if locked.status == Task.Status.RETIRED:
        raise ValueError(f"task {locked.key} is retired")
    status = task_curation_status(task=locked)
    if not status["curatable"]:
        raise ValueError(
            f"task {locked.key} cannot be curated: {status['unsettled']} of {status['total']} items are not yet "
            "accepted, edited or rejected"
        )
    if locked.status != Task.Status.CURATED:
        _task_set_curated(task=locked, actor=actor, project=None)
    return locked


def task_uncurate(*, task_id: int, actor, project=None) -> None:
    """Back to in review after a settled item was reverted (inside the caller's transaction)."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status != Task.Status.CURATED:
        return
    task.status = Task.Status.IN_REVIEW
    task.save(update_fields=["status", "updated_at"])
    audit_record(
        actor=actor, action=AuditAction.TASK_UNCURATE, target_kind="task", target_id=task.pk, project=project,
        before={"status": Task.Status.CURATED}, after={"status": task.status},
    )
