"""The one audit trail: every write records one ``AuditLog`` row inside its own transaction
(Zulip's ``RealmAuditLog``): a trace never outlives a change that rolled back, and no change
goes without one."""

from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction

from .models import AuditLog


def audit_log_record(
    *,
    action: str,
    actor=None,
    actor_label: str = "",
    target: models.Model | None = None,
    target_model: type[models.Model] | None = None,
    target_id: int | None = None,
    project_id: int | None = None,
    before: Any = None,
    after: Any = None,
    note: str = "",
) -> AuditLog:
    """Write one audit row about ``target`` (or the row ``target_id`` of ``target_model``).

    ``actor_label`` names who acted when no user did (an import, a model); ``project_id`` the
    annotation project the action belongs to, if any. Refuses to run outside a transaction."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(f"audit row {action!r} must be written inside the transaction of the change it records")
    if target is not None:
        target_model, target_id = type(target), target.pk
    content_type = ContentType.objects.get_for_model(target_model, for_concrete_model=False) if target_model else None
    return AuditLog.objects.create(
        actor=actor, actor_label=actor_label, action=action, content_type=content_type, object_id=target_id,
        project_id=project_id, before=before, after=after, note=note,
    )
