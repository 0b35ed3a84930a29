"""Claims on items: the slot count and the claim rows shared by ``claim_next_items`` and the undo
that hands an item back to its annotator. Call under the items' row locks (``item_lock`` or
``lock_clause``): every claimer and submitter takes that lock first.
"""

from datetime import datetime

from .. import rawsql
from ..models import AnnotationItem, AnnotationProject, Assignment
from .audit import audit_record, audit_records


def active_claims(items: list[AnnotationItem], *, user=None, projects: list[int] = ()) -> list[Assignment]:
    """The items' claims in status active, expired or not (at most k per item): one query.
    ``user`` and ``projects``: with the user's active claims in those projects too."""
    if not items:
        return []
    where = f"item_id IN ({', '.join(['%s'] * len(items))})"
    params = [item.pk for item in items]
    if user is not None and projects:
        where = f"({where} OR (user_id = %s AND project_id IN ({', '.join(['%s'] * len(projects))})))"
        params += [user.pk, *projects]
    return rawsql.rows(
        Assignment, f"SELECT * FROM {rawsql.table(Assignment)} WHERE {where} AND status = %s",
        [*params, Assignment.Status.ACTIVE],
    )


def items_with_free_slot(items: list[AnnotationItem], now: datetime) -> set[int]:
    """Ids of the items that are open and whose labels plus unexpired claims leave room for one
    more (overlap k). Claims found expired are marked so on the way (one UPDATE for all)."""
    held: dict[int, int] = {}
    stale = []
    for claim in active_claims(items):
        if claim.expires_at <= now:
            stale.append(claim.pk)
        else:
            held[claim.item_id] = held.get(claim.item_id, 0) + 1
    if stale:
        Assignment.objects.filter(pk__in=stale).update(status=Assignment.Status.EXPIRED, ended_at=now)
    return {
        item.pk for item in items
        if item.status == AnnotationItem.Status.OPEN and item.labels_done + held.get(item.pk, 0) < item.labels_needed
    }


def item_has_free_slot(item: AnnotationItem, now: datetime) -> bool:
    """``items_with_free_slot`` of one item."""
    return item.pk in items_with_free_slot([item], now)


def claims_create(
    *, project: AnnotationProject, items: list[AnnotationItem], user, now: datetime, audit: list[dict] | None = None
) -> list[Assignment]:
    """Write the claims (each held for the project's hold duration) in one INSERT, and their
    audit rows in another. ``audit``: audit rows of the same transaction to write along."""
    if not items:
        if audit:
            audit_records(audit)
        return []
    claims = Assignment.objects.bulk_create([
        Assignment(project=project, item=item, user=user, claimed_at=now, expires_at=now + project.hold_duration)
        for item in items
    ])
    audit_records([*(audit or []), *(
        dict(actor=user, action="assignment.claim", target_kind="annotation_item", target_id=claim.item_id,
             project=project, after={"assignment_id": claim.pk, "expires_at": claim.expires_at.isoformat()})
        for claim in claims
    )])
    return claims


def claim_create(*, project: AnnotationProject, item: AnnotationItem, user, now: datetime) -> Assignment:
    """Write one claim and its audit row (``claims_create``)."""
    return claims_create(project=project, items=[item], user=user, now=now)[0]


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
