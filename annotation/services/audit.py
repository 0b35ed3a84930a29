"""Audit rows, written inside the transaction of the change they describe."""

from django.db import transaction

from ..models import AuditEvent


def audit_record(
    *,
    actor,
    action: str,
    target_kind: str,
    target_id: int | None = None,
    project=None,
    before=None,
    after=None,
) -> AuditEvent:
    """Write one audit row. Refuses to run outside a transaction: a trace must never outlive
    a change that rolled back, nor exist without its change."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must be called inside the transaction of the change it records")
    return AuditEvent.objects.create(
        actor=actor,
        action=action,
        target_kind=target_kind,
        target_id=target_id,
        project=project,
        before=before,
        after=after,
    )
