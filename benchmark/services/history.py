"""Changes to curated items, each with its audit row (``core.audit``) in the same transaction."""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import Case, Q, Value, When
from django.db.models.functions import Cast
from django.utils import timezone

from core.audit import audit_log_entries, audit_log_record
from core.audit_actions import AuditAction
from core.models import AuditLog

from ..models import Proposable, ReviewStatus


class StaleEditError(Exception):
    """The item changed since the editor loaded it; their edit was not applied."""

    def __init__(self, obj: models.Model, expected: int, actual: int) -> None:
        super().__init__(
            f"{obj._meta.verbose_name} #{obj.pk} was changed by someone else (version {actual}, "
            f"your edit was based on version {expected}); reload it and apply your edit again."
        )
        self.expected = expected
        self.actual = actual


class ProposableMovedError(Exception):
    """A row read without its lock changed before the edit made from it was written: the caller
    rolls its transaction back and reads the row again under its lock."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, models.Model):
        return value.pk
    return value


def snapshot(obj: Proposable) -> dict[str, Any]:
    """The tracked fields of an item, as stored in a revision's before/after."""
    return {name: _jsonable(getattr(obj, name)) for name in obj.tracked_fields}


def _tied_fields(obj: models.Model, changed: set[str]) -> set[str]:
    """``changed`` plus every field that shares a constraint (unique or check) with one of them."""
    checked = set(changed)
    groups = [set(together) for together in obj._meta.unique_together]
    for constraint in obj._meta.constraints:
        names = set(getattr(constraint, "fields", ()) or ())
        condition = getattr(constraint, "condition", None)
        if isinstance(condition, Q):
            names |= condition.referenced_base_fields
        groups.append(names)
    grew = True
    while grew:  # a constraint may tie in a field that another constraint ties further
        grew = False
        for names in groups:
            if names & checked and not names <= checked:
                checked |= names
                grew = True
    return checked


@dataclass
class ProposableEdit:
    """A change checked and applied in memory to a row (``proposable_edit``), for
    ``proposable_edits_save`` to write: ``fields`` to update, the ``audit`` row, and the
    ``read_version`` the row had when read."""

    row: Proposable
    fields: list[str]
    audit: dict
    read_version: int


def proposable_edit(
    *,
    current: Proposable,
    changes: dict[str, Any],
    expected_version: int,
    actor=None,
    actor_label: str = "",
    action: AuditAction = AuditAction.PROPOSABLE_EDIT,
    note: str = "",
    reason: dict | None = None,
) -> ProposableEdit:
    """Check ``changes`` against ``current`` (read in the caller's transaction, under its row
    lock or not: see ``proposable_edits_save``) and apply them in memory, version and all.
    Raises ``ValueError`` (unknown field), ``StaleEditError`` or ``ValidationError`` before
    anything is written, leaving ``current`` as it was. ``reason`` (``review_reason``: why a
    reviewer decided so, code and text) is kept in the revision's ``after``, beside the state it
    explains: revisions, their API and the exports' history carry it."""
    unknown = set(changes) - set(current.tracked_fields)
    if unknown:
        raise ValueError(f"{type(current).__name__} has no editable field(s): {', '.join(sorted(unknown))}")
    if current.version != expected_version:
        raise StaleEditError(current, expected_version, current.version)
    before = snapshot(current)
    kept = {name: getattr(current, name) for name in changes}
    for name, value in changes.items():
        setattr(current, name, value)
    # Only what changed is validated, with every field a constraint ties to it (Django skips a
    # constraint when any of its fields is excluded): the rest was valid when it was written.
    checked = _tied_fields(current, set(changes))
    try:
        current.full_clean(exclude=[f.name for f in current._meta.concrete_fields if f.name not in checked])
    except ValidationError:
        for name, value in kept.items():
            setattr(current, name, value)
        raise
    read_version = current.version
    current.version += 1
    fields = [*changes, "version"]
    if hasattr(current, "updated_at"):  # set here: a bulk UPDATE does not run auto_now
        current.updated_at = timezone.now()
        fields.append("updated_at")
    after = snapshot(current)
    if reason:
        after["review_reason"] = dict(reason)
    audit = dict(target=current, action=action, actor=actor, actor_label=actor_label, before=before,
                 after=after, note=note)
    return ProposableEdit(row=current, fields=fields, audit=audit, read_version=read_version)


def _update_as_read(model: type[models.Model], rows: list[models.Model], fields: list[str],
                    read_versions: dict[Any, int]) -> int:
    """Write each row's ``fields`` in one UPDATE (``bulk_update``'s ``CASE``), only where the row
    is still at the version it was read at (``read_versions``, by primary key); how many rows it
    wrote."""
    as_read = Q()
    for row in rows:
        as_read |= Q(pk=row.pk, version=read_versions[row.pk])
    values = {}
    for name in fields:
        field = model._meta.get_field(name)
        if len(rows) == 1:
            values[field.attname] = getattr(rows[0], field.attname)
            continue
        case = Case(*[When(pk=row.pk, then=Value(getattr(row, field.attname), output_field=field)) for row in rows],
                    output_field=field)
        values[field.attname] = Cast(case, output_field=field) if connection.features.requires_casted_case_in_updates \
            else case
    return model.objects.filter(as_read).update(**values)


@dataclass(frozen=True)
class ProposableWrites:
    """The two statements ``proposable_edits_save`` writes with: ``update_as_read(model, rows,
    fields, read_versions)`` (how many rows it wrote: those still at their read version) and
    ``insert(model, rows)`` (new rows, their ids set). ``ORM_WRITES`` by default; the annotator
    loop, which writes a decision on most labels, passes its SQL gateway's
    (``annotation.loop.store.PROPOSABLE_WRITES``: the same statements without building the ORM's
    query, held to these by its tests)."""

    update_as_read: Callable[[type[models.Model], list[models.Model], list[str], dict[Any, int]], int]
    insert: Callable[[type[models.Model], list[models.Model]], Any]


ORM_WRITES = ProposableWrites(update_as_read=_update_as_read,
                              insert=lambda model, rows: model.objects.bulk_create(rows))


def proposable_edits_save(edits: list[ProposableEdit], *, audit_rows: list[dict] = (),
                          writes: ProposableWrites = ORM_WRITES) -> list[AuditLog]:
    """Write checked edits: one UPDATE per model and one INSERT for their audit rows together
    with ``audit_rows`` (more rows of the same transaction, ``audit_log_rows`` dicts), through
    ``writes``. Each edited row's ``latest_revision`` is its audit row; returns the audit rows of
    ``audit_rows``.

    A row is written only while it is at the version its edit was made from: a caller that
    read the rows without their locks (``annotation``'s label loop, which saves a statement so)
    gets ``ProposableMovedError`` when one changed meanwhile and rolls its transaction back;
    under the row locks that never happens."""
    by_model: dict[type, list[ProposableEdit]] = defaultdict(list)
    for edit in edits:
        by_model[type(edit.row)].append(edit)
    for model, group in by_model.items():
        written = writes.update_as_read(model, [edit.row for edit in group],
                                        sorted({f for edit in group for f in edit.fields}),
                                        {edit.row.pk: edit.read_version for edit in group})
        if written != len(group):
            raise ProposableMovedError(
                f"{written} of {len(group)} {model._meta.verbose_name_plural} were still as read; not written")
    rows = audit_log_entries([edit.audit for edit in edits] + list(audit_rows)) if edits or audit_rows else []
    if rows:
        writes.insert(AuditLog, rows)
    for edit, row in zip(edits, rows):
        edit.row.latest_revision = row
    return rows[len(edits):]


def proposable_write(
    *, current: Proposable, changes: dict[str, Any], expected_version: int, actor=None, actor_label: str = "",
    action: AuditAction = AuditAction.PROPOSABLE_EDIT, note: str = "", reason: dict | None = None,
) -> Proposable:
    """Apply ``changes`` to ``current``, a row the caller read under its lock in its transaction
    (``select_for_update``), unless it moved past ``expected_version`` (``StaleEditError``,
    nothing written); the row is written as read, not read again, and returned carrying the
    revision written for the change as ``latest_revision``."""
    edit = proposable_edit(current=current, changes=changes, expected_version=expected_version, actor=actor,
                           actor_label=actor_label, action=action, note=note, reason=reason)
    current.save(update_fields=edit.fields)
    current.latest_revision = audit_log_record(**edit.audit)
    return current


@transaction.atomic
def proposable_update(
    *,
    obj: Proposable,
    changes: dict[str, Any],
    expected_version: int,
    actor=None,
    actor_label: str = "",
    action: AuditAction = AuditAction.PROPOSABLE_EDIT,
    note: str = "",
    reason: dict | None = None,
) -> Proposable:
    """Apply ``changes`` to an item unless it moved past ``expected_version`` meanwhile.

    The row is locked for the check-and-write (``proposable_write``), so two editors of the same
    version cannot both succeed: the second gets ``StaleEditError``. The returned row carries the
    revision written for the change as ``latest_revision``.
    """
    unknown = set(changes) - set(obj.tracked_fields)
    if unknown:  # before the lock: nothing to read for a change that cannot apply
        raise ValueError(f"{type(obj).__name__} has no editable field(s): {', '.join(sorted(unknown))}")
    current = type(obj).objects.select_for_update().get(pk=obj.pk)
    return proposable_write(current=current, changes=changes, expected_version=expected_version, actor=actor,
                            actor_label=actor_label, action=action, note=note, reason=reason)


def review_changes(*, status: str, edits: dict | None = None) -> dict[str, Any]:
    """The changes of accepting, rejecting, or editing-and-accepting an item (status ``edited``
    needs ``edits``)."""
    if status not in ReviewStatus.values:
        raise ValueError(f"unknown review status {status!r}; expected one of {', '.join(ReviewStatus.values)}")
    if status == ReviewStatus.EDITED and not edits:
        raise ValueError("an 'edited' review needs the edited fields")
    return dict(edits or {}, review_status=status)


def proposable_review(
    *, obj: Proposable, status: str, expected_version: int, actor=None, note: str = "", edits: dict | None = None,
    reason: dict | None = None, locked: bool = False,
) -> Proposable:
    """Accept, reject, or edit-and-accept an item (status ``edited`` needs ``edits``); ``reason``
    (``{"code": …, "text": …}``) is the reviewer's why, kept in the revision. ``locked``: ``obj``
    was read under its lock in the caller's transaction, and is written as read
    (``proposable_write``) instead of locked and read again (``proposable_update``)."""
    review = {"changes": review_changes(status=status, edits=edits), "expected_version": expected_version,
              "actor": actor, "action": AuditAction(f"review.{status}"), "note": note, "reason": reason}
    return proposable_write(current=obj, **review) if locked else proposable_update(obj=obj, **review)
