"""Changes to curated items, each with its audit row (``core.audit``) in the same transaction."""

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db import models, transaction
from django.db.models import Q

from core.audit import audit_log_record

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


@transaction.atomic
def proposable_update(
    *,
    obj: Proposable,
    changes: dict[str, Any],
    expected_version: int,
    actor=None,
    actor_label: str = "",
    action: str = "edit",
    note: str = "",
) -> Proposable:
    """Apply ``changes`` to an item unless it moved past ``expected_version`` meanwhile.

    The row is locked for the check-and-write, so two editors of the same version
    cannot both succeed: the second gets ``StaleEditError``. The returned row carries the
    revision written for the change as ``latest_revision``.
    """
    unknown = set(changes) - set(obj.tracked_fields)
    if unknown:
        raise ValueError(f"{type(obj).__name__} has no editable field(s): {', '.join(sorted(unknown))}")
    current = type(obj).objects.select_for_update().get(pk=obj.pk)
    if current.version != expected_version:
        raise StaleEditError(current, expected_version, current.version)
    before = snapshot(current)
    for name, value in changes.items():
        setattr(current, name, value)
    # Only what changed is validated, with every field a constraint ties to it (Django skips a
    # constraint when any of its fields is excluded): the rest was valid when it was written.
    checked = _tied_fields(current, set(changes))
    current.full_clean(exclude=[f.name for f in current._meta.concrete_fields if f.name not in checked])
    current.version += 1
    current.save(update_fields=[*changes, "version", *(["updated_at"] if hasattr(current, "updated_at") else [])])
    current.latest_revision = audit_log_record(
        target=current, action=action, actor=actor, actor_label=actor_label, before=before, after=snapshot(current), note=note
    )
    return current


def proposable_review(
    *, obj: Proposable, status: str, expected_version: int, actor=None, note: str = "", edits: dict | None = None
) -> Proposable:
    """Accept, reject, or edit-and-accept an item (status ``edited`` needs ``edits``)."""
    if status not in ReviewStatus.values:
        raise ValueError(f"unknown review status {status!r}; expected one of {', '.join(ReviewStatus.values)}")
    if status == ReviewStatus.EDITED and not edits:
        raise ValueError("an 'edited' review needs the edited fields")
    changes = dict(edits or {}, review_status=status)
    return proposable_update(
        obj=obj, changes=changes, expected_version=expected_version, actor=actor, action=f"review:{status}", note=note
    )
