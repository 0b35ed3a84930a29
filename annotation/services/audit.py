"""Audit rows, written inside the transaction of the change they describe."""

from django.db import transaction

from ..models import AuditEvent


def audit_records(events: list[dict]) -> list[AuditEvent]:
    """Write audit rows (each a dict of ``audit_record``'s arguments) in one INSERT. Refuses to
    run outside a transaction: a trace must never outlive a change that rolled back, nor exist
    without its change."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must be called inside the transaction of the change it records")
    return AuditEvent.objects.bulk_create([AuditEvent(**event) for event in events])


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
    """Write one audit row (see ``audit_records``)."""
    (event,) = audit_records([dict(
        actor=actor, action=action, target_kind=target_kind, target_id=target_id, project=project, before=before,
        after=after,
    )])
    return event
