"""Claims on items: the slot count and the claim rows shared by ``claim_next_items`` and the undo
that hands an item back to its annotator. Call under the items' row locks (``item_lock`` or
``lock_clause``): every claimer and submitter takes that lock first.
"""

from datetime import datetime

from django.db import connection

from core import rawsql
from core.audit_actions import AuditAction

from ..models import AnnotationItem, AnnotationProject, Assignment
from .audit import audit_record, audit_records


def active_claims(items: list[AnnotationItem], *, user=None, projects: list[int] = ()) -> list[Assignment]:
    """The items' claims in status active, expired or not (at most k per item): one query.
    ``user`` and ``projects``: with the user's active claims in those projects too."""
    if not items:
        return []
    where, params = active_claims_where(items, user=user, projects=projects)
    return rawsql.rows(Assignment, f"SELECT * FROM {rawsql.table(Assignment)} WHERE {where}", params)


def active_claims_where(items: list[AnnotationItem], *, user=None, projects: list[int] = ()) -> tuple[str, list]:
    """The WHERE clause of ``active_claims`` and its parameters (for a caller that reads them
    along with other rows: ``rawsql.union_rows``)."""
    where = f"item_id IN ({', '.join(['%s'] * len(items))})"
    params = [item.pk for item in items]
    if user is not None and projects:
        where = f"({where} OR (user_id = %s AND project_id IN ({', '.join(['%s'] * len(projects))})))"
        params += [user.pk, *projects]
    return f"{where} AND status = %s", [*params, Assignment.Status.ACTIVE]


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
    """Write the claims on those of ``items`` (locked by the caller) that still have a free slot,
    each held for the project's hold duration, and their audit rows. ``audit``: a list to put the
    audit rows in, for the caller to write with its own in the same transaction; else they are
    written here. Two statements whatever the number: the slots are counted again inside the
    INSERT, whose snapshot postdates the caller's lock (an earlier read may predate a claim
    committed meanwhile); claims found expired on the way are marked so first (``stale``, a
    column the caller's claimable read carries), one UPDATE when there are any."""
    stale = [item.pk for item in items if getattr(item, "stale", True)]
    if stale:
        _stale_expire(item_ids=stale, now=now)
    claims = _claims_insert(project=project, items=items, user=user, now=now)
    rows = [
        dict(actor=user, action=AuditAction.ASSIGNMENT_CLAIM, target_kind="annotation_item", target_id=claim.item_id,
             project=project, after={"assignment_id": claim.pk, "expires_at": claim.expires_at.isoformat()})
        for claim in claims
    ]
    if audit is None:
        audit_records(rows)
    else:
        audit += rows
    return claims


def _stale_expire(*, item_ids: list[int], now: datetime) -> None:
    Assignment.objects.filter(item_id__in=item_ids, status=Assignment.Status.ACTIVE, expires_at__lte=now).update(
        status=Assignment.Status.EXPIRED, ended_at=now
    )


def _claims_insert(*, project: AnnotationProject, items: list[AnnotationItem], user, now: datetime) -> list[Assignment]:
    """INSERT ... SELECT the claims of the items with a free slot (labels plus unexpired claims
    below k), in claiming order: one statement."""
    if not items:
        return []
    item, assignment = rawsql.table(AnnotationItem), rawsql.table(Assignment)
    at = connection.ops.adapt_datetimefield_value
    expires = now + project.hold_duration
    sql = f"""
        INSERT INTO {assignment} (project_id, item_id, user_id, claimed_at, expires_at, status)
        SELECT i.project_id, i.id, %s, %s, %s, %s FROM {item} i
        WHERE i.id IN ({', '.join(['%s'] * len(items))}) AND i.status = %s
          AND i.labels_done + (SELECT COUNT(*) FROM {assignment} a
                               WHERE a.item_id = i.id AND a.status = %s AND a.expires_at > %s) < i.labels_needed
        ORDER BY i.labels_needed - i.labels_done, i.labels_done, i.position, i.id
        RETURNING id, item_id"""
    params = [user.pk, at(now), at(expires), Assignment.Status.ACTIVE, *(i.pk for i in items),
              AnnotationItem.Status.OPEN, Assignment.Status.ACTIVE, at(now)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        created = sorted(cursor.fetchall())
    by_pk = {i.pk: i for i in items}
    claims = []
    for pk, item_id in created:
        claim = Assignment(pk=pk, project=project, item=by_pk[item_id], user=user, claimed_at=now, expires_at=expires,
                           status=Assignment.Status.ACTIVE)
        claim._state.adding, claim._state.db = False, connection.alias
        claims.append(claim)
    return claims


def claim_create(*, project: AnnotationProject, item: AnnotationItem, user, now: datetime) -> Assignment | None:
    """Write one claim and its audit row (``claims_create``); None when the item has no free slot."""
    claims = claims_create(project=project, items=[item], user=user, now=now)
    return claims[0] if claims else None


def claim_release(*, assignment: Assignment, user, now: datetime) -> None:
    """End the user's own active claim without skipping (the item may be offered again)."""
    updated = Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.ACTIVE).update(
        status=Assignment.Status.RELEASED, ended_at=now
    )
    if updated:
        audit_record(
            actor=user, action=AuditAction.ASSIGNMENT_RELEASE, target_kind="annotation_item", target_id=assignment.item_id,
            project=assignment.project, before={"assignment_id": assignment.pk, "status": Assignment.Status.ACTIVE},
            after={"status": Assignment.Status.RELEASED},
        )
