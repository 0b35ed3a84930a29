"""Claims on items: the slot count and the claim row shared by ``next_item_for`` and the undo
that hands an item back to its annotator. Call under the item's row lock (``item_lock`` or
``lock_clause``): every claimer and submitter takes that lock first.
"""

from datetime import datetime

from .. import rawsql
from ..models import AnnotationItem, AnnotationProject, Assignment
from .audit import audit_record


def claim_expire(assignment: Assignment, now: datetime) -> None:
    assignment.status, assignment.ended_at = Assignment.Status.EXPIRED, now
    assignment.save(update_fields=["status", "ended_at"])


def active_claims(item: AnnotationItem) -> list[Assignment]:
    """The item's claims in status active, expired or not (at most its overlap k)."""
    return rawsql.rows(
        Assignment, f"SELECT * FROM {rawsql.table(Assignment)} WHERE item_id = %s AND status = %s",
        [item.pk, Assignment.Status.ACTIVE],
    )


def item_has_free_slot(item: AnnotationItem, now: datetime) -> bool:
    """Open, and its labels plus unexpired claims leave room for one more (overlap k).
    Claims found expired are marked so on the way."""
    active = 0
    for claim in active_claims(item):
        if claim.expires_at <= now:
            claim_expire(claim, now)
        else:
            active += 1
    return item.status == AnnotationItem.Status.OPEN and item.labels_done + active < item.labels_needed


def claim_create(*, project: AnnotationProject, item: AnnotationItem, user, now: datetime) -> Assignment:
    """Write the claim (held for the project's hold duration) and its audit row."""
    assignment = Assignment.objects.create(
        project=project, item=item, user=user, claimed_at=now, expires_at=now + project.hold_duration
    )
    audit_record(
        actor=user, action="assignment.claim", target_kind="annotation_item", target_id=item.pk, project=project,
        after={"assignment_id": assignment.pk, "expires_at": assignment.expires_at.isoformat()},
    )
    return assignment


def claim_release(*, assignment: Assignment, user, now: datetime) -> None:
    """End the user's own active claim without skipping (the item may be offered again)."""
    updated = Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.ACTIVE).update(
        status=Assignment.Status.RELEASED, ended_at=now
    )
    if updated:
        audit_record(
            actor=user, action="assignment.release", target_kind="annotation_item", target_id=assignment.item_id,
            project=assignment.project, before={"assignment_id": assignment.pk, "status": Assignment.Status.ACTIVE},
            after={"status": Assignment.Status.RELEASED},
        )
