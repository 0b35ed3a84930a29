"""Adding a missing item: a reviewer of a verify project proposes a benchmark row the task lacks.

The row is created as a human proposal (origin ``human``, ``proposed_by`` the user, review
status ``proposed``) with its one audit row, and it becomes an item of the
same project so it goes through the same two-stage review as the machine's proposals — all in
one transaction.
"""

from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import Max

from benchmark.models import (
    ChecklistGroup,
    ChecklistItem,
    ConstraintQuestion,
    GoldReference,
    Nugget,
    Origin,
    Proposable,
    ReviewStatus,
    RubricCriterion,
    Task,
    TaskPrompt,
)
from benchmark.services.bibliography import bib_entries_upsert
from benchmark.services.history import snapshot
from core.audit import audit_log_record
from core.audit_actions import AuditAction

from ..kinds import kind_of
from ..models import AnnotationItem, AnnotationProject, TargetKind
from .audit import audit_record
from ..loop.claims import require_labeller
from ..loop.settle import task_uncurate

# What a reviewer may add, and the fields each kind takes (a gold reference: its publication).
BIB_FIELDS = ("title", "authors", "year", "venue", "doi", "arxiv_id", "url")
ADD_FIELDS: dict[str, tuple[str, ...]] = {
    TargetKind.PROMPT: ("level", "text"),
    TargetKind.CONSTRAINT_QUESTION: ("title", "text"),
    TargetKind.CHECKLIST_ITEM: ("group", "subgroup", "text", "reward"),
    TargetKind.GOLD_REFERENCE: (*BIB_FIELDS, "important"),
    TargetKind.NUGGET: ("text", "importance"),
    TargetKind.RUBRIC_CRITERION: ("component", "aspect", "name", "description", "example", "weight"),
}
ADDABLE_KINDS = tuple(ADD_FIELDS)


def addable_kinds(project: AnnotationProject) -> list[str]:
    """The kinds a reviewer may add in ``project``: those it reviews (a group is not added alone)."""
    if not kind_of(project).applies_to_benchmark:
        return []
    return [kind for kind in ADDABLE_KINDS if kind in project.item_kinds]


def _next_position(rows) -> int:
    return (rows.aggregate(last=Max("position"))["last"] or 0) + 1


def _gold_reference(task: Task, fields: dict) -> GoldReference:
    record = {name: fields[name] for name in BIB_FIELDS if fields.get(name) not in (None, "")}
    if not record.get("title"):
        raise ValueError("fields.title: give the publication's title")
    try:
        (entry,) = bib_entries_upsert([record])
    except ValueError as exc:
        raise ValueError(f"fields.title: {exc}") from exc
    if GoldReference.objects.filter(task=task, bib_entry=entry).exists():
        raise ValueError(f"fields.title: “{entry.title}” is already a gold reference of this task")
    return GoldReference(
        task=task, bib_entry=entry, important=bool(fields.get("important")),
        position=_next_position(GoldReference.objects.filter(task=task)),
    )


def _checklist_item(task: Task, fields: dict) -> ChecklistItem:
    raw = fields.get("group")
    group_id = raw.pk if isinstance(raw, ChecklistGroup) else raw
    group = ChecklistGroup.objects.filter(pk=group_id, task=task).first() if group_id not in (None, "") else None
    if group is None:
        raise ValueError("fields.group: pick one of this task's checklist groups")
    values = {name: fields[name] for name in ("subgroup", "text", "reward") if name in fields}
    return ChecklistItem(group=group, position=_next_position(group.items.all()), **values)


def _row_new(kind: str, task: Task, fields: dict) -> Proposable:
    """The unsaved benchmark row (``ValueError`` naming the field for business-rule refusals)."""
    if kind == TargetKind.GOLD_REFERENCE:
        return _gold_reference(task, fields)
    if kind == TargetKind.CHECKLIST_ITEM:
        return _checklist_item(task, fields)
    if kind == TargetKind.PROMPT:
        level = fields.get("level")
        if level and TaskPrompt.objects.filter(task=task, level=level).exists():
            raise ValueError(f"fields.level: this task already has a {level} prompt; review that one instead")
        return TaskPrompt(task=task, **fields)
    model = {
        TargetKind.CONSTRAINT_QUESTION: ConstraintQuestion, TargetKind.NUGGET: Nugget,
        TargetKind.RUBRIC_CRITERION: RubricCriterion,
    }[kind]
    return model(task=task, position=_next_position(model.objects.filter(task=task)), **fields)


def _full_clean(row: Proposable) -> None:
    try:
        row.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        name = "fields" if field == NON_FIELD_ERRORS else f"fields.{field}"
        raise ValueError(f"{name}: {' '.join(messages)}") from exc


def _task_reopen(*, task: Task, actor, project: AnnotationProject) -> None:
    """A new proposal means the task is under review again (draft and curated alike)."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task.pk)
    if task.status == Task.Status.CURATED:
        if task.task_sets.filter(frozen_at__isnull=False).exists():
            raise ValueError(f"task: {task.key} is curated and part of a frozen task set; ask a curator")
        task_uncurate(task_id=task.pk, actor=actor, project=project)
    elif task.status == Task.Status.DRAFT:
        task.status = Task.Status.IN_REVIEW
        task.save(update_fields=["status", "updated_at"])
        audit_record(
            actor=actor, action=AuditAction.TASK_REVIEW_START, target_kind="task", target_id=task.pk, project=project,
            before={"status": Task.Status.DRAFT}, after={"status": task.status},
        )


@transaction.atomic
def proposable_add(*, task: Task, kind: str, fields: dict[str, Any], actor, project: AnnotationProject) -> Proposable:
    """Add the ``kind`` row the reviewer found missing from ``task``, and queue it for review.

    ``fields`` are the row's fields (``ADD_FIELDS``): a checklist item names its ``group`` (an
    id or a group of the task); a gold reference gives its publication (``title`` required, the
    entry is reused when it is already known, see ``bib_entries_upsert``). The row gets origin
    ``human``, ``proposed_by`` the user's name, status ``proposed``, one audit row ("add", with
    the project), and an ``AnnotationItem`` at the end of the
    project with the project's overlap. A draft or curated task goes (back) to in review.

    Members who may label the project (annotators, curators) may add. Raises
    ``PermissionError``, ``ProjectNotOpenError``, and ``ValueError`` naming the offending
    argument or field (``kind: …``, ``task: …``, ``fields.text: …``).
    """
    project = AnnotationProject.objects.select_for_update(no_key=True).get(pk=project.pk)  # item positions
    require_labeller(project=project, user=actor)
    if not kind_of(project).applies_to_benchmark:
        raise ValueError(f"project: {project.name!r} does not verify proposals; items are added to verify projects")
    allowed = addable_kinds(project)
    if kind not in allowed:
        names = ", ".join(TargetKind(k).label.lower() for k in allowed) or "nothing"
        raise ValueError(f"kind: project {project.name!r} reviews {names}; it cannot take a {kind!r}")
    if not project.tasks.filter(pk=task.pk).exists():
        raise ValueError(f"task: {task.key} is not one of the tasks of project {project.name!r}")
    unknown = sorted(set(fields) - set(ADD_FIELDS[kind]))
    if unknown:
        raise ValueError(f"fields.{unknown[0]}: not a field of a {kind} (fields: {', '.join(ADD_FIELDS[kind])})")

    row = _row_new(kind, task, dict(fields))
    row.origin, row.proposed_by, row.review_status = Origin.HUMAN, actor.get_username(), ReviewStatus.PROPOSED
    _full_clean(row)
    row.save()
    _task_reopen(task=task, actor=actor, project=project)
    item = AnnotationItem.objects.create(
        project=project, target_kind=kind, target_id=row.pk, task=task,
        position=_next_position(AnnotationItem.objects.filter(project=project)),
        labels_needed=project.overlap, target_version=row.version,
    )
    # One row for one action: the item's history (``after``: its tracked fields) and the project's.
    audit_log_record(
        target=row, action=AuditAction.PROPOSABLE_ADD, actor=actor, project_id=project.pk, after=snapshot(row),
        note=f"added as missing by {actor.get_username()} in project {project.name!r} (item {item.pk})",
    )
    return row
