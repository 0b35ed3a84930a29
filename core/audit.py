"""The one audit trail: every write records one ``AuditLog`` row inside its own transaction
(Zulip's ``RealmAuditLog``): a trace never outlives a change that rolled back, and no change
goes without one."""

from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.utils import timezone

from .audit_actions import AuditAction
from .models import AuditLog


def audit_log_rows(rows: list[dict]) -> list[AuditLog]:
    """Write several audit rows (each a dict of ``audit_log_record``'s arguments) in one INSERT,
    for writes that change many rows at once. Refuses to run outside a transaction."""
    entries = audit_log_entries(rows)
    AuditLog.objects.bulk_create(entries)
    return entries


def audit_log_entries(rows: list[dict]) -> list[AuditLog]:
    """The unsaved ``AuditLog`` instances of ``rows`` (``audit_log_rows``' arguments), for a
    writer that inserts them itself in the same transaction (``benchmark.services.history``'s
    ``ProposableWrites``); refuses to make them outside a transaction, as ``audit_log_rows``."""
    if not transaction.get_connection().in_atomic_block:
        actions = ", ".join(sorted({repr(row["action"]) for row in rows}))
        raise RuntimeError(f"audit rows {actions} must be written inside the transaction of the change they record")
    return [_audit_log(**row) for row in rows]


def _audit_log(
    *,
    action: AuditAction,
    actor=None,
    actor_label: str = "",
    target: models.Model | None = None,
    target_model: type[models.Model] | None = None,
    target_id: int | None = None,
    project_id: int | None = None,
    before: Any = None,
    after: Any = None,
    note: str = "",
    at=None,
) -> AuditLog:
    if not isinstance(action, AuditAction):  # one spelling per action: a new one is a member first
        raise TypeError(f"audit action {action!r} is not a core.audit_actions.AuditAction member; add it there")
    if target is not None:
        target_model, target_id = type(target), target.pk
    # get_for_model is served from ContentType's cache after its first use: no query per row.
    content_type = ContentType.objects.get_for_model(target_model, for_concrete_model=False) if target_model else None
    return AuditLog(
        actor=actor, actor_label=actor_label, action=action, content_type=content_type, object_id=target_id,
        project_id=project_id, before=before, after=after, note=note,
        created_at=timezone.now() if at is None else at,
    )


def audit_log_record(**row) -> AuditLog:
    """Write one audit row about ``target`` (or the row ``target_id`` of ``target_model``).

    ``action`` is an ``AuditAction`` member (free text is refused); ``actor_label`` names who
    acted when no user did (an import, a model); ``project_id`` the annotation project the action
    belongs to, if any; ``at`` when it happened, if not now (restored history). Refuses to run
    outside a transaction."""
    (entry,) = audit_log_rows([row])
    return entry
