"""Handing out items: claims held for the project's hold duration, never beyond overlap k.

``next_item_for`` picks, among open items the user has neither labelled nor skipped and that
still have a free slot (labels + unexpired claims < k), the one closest to completion (fewest
labels still needed), then the least annotated, then by position. The candidate row is locked
(PostgreSQL: ``FOR NO KEY UPDATE SKIP LOCKED``; SQLite: the IMMEDIATE transaction) and its
slots are counted again under the lock before the claim is written, because the candidate
query's snapshot may predate a concurrent claim. ``label_submit`` takes the same row lock.
"""

from django.db import connection, transaction
from django.utils import timezone

from .models import AnnotationItem, AnnotationProject, Assignment, Label
from .rawsql import by_pk, first_row, table
from .services.audit import audit_record
from .services.claims import claim_create, claim_expire, item_has_free_slot
from .services.errors import AnnotationError
from .services.labels import require_labeller
from .services.locking import item_lock, lock_clause


def _first_claimable(*, project: AnnotationProject, user, now, passed_over: list[int]) -> AnnotationItem | None:
    """The first item in claiming order that the user may take, locked (see the module
    docstring), or None. Its ORDER BY is the expression index of migration 0005, which the
    database walks instead of sorting the open items."""
    item, assignment, label = table(AnnotationItem), table(Assignment), table(Label)
    passed = f"AND i.id NOT IN ({', '.join(['%s'] * len(passed_over))})" if passed_over else ""
    sql = f"""
        SELECT i.* FROM {item} i
        WHERE i.project_id = %s AND i.status = %s
          AND (SELECT COUNT(*) FROM {assignment} a WHERE a.item_id = i.id AND a.status = %s AND a.expires_at > %s)
              < i.labels_needed - i.labels_done
          AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.item_id = i.id AND l.annotator_id = %s)
          AND NOT EXISTS (SELECT 1 FROM {assignment} s WHERE s.item_id = i.id AND s.user_id = %s AND s.status = %s)
          {passed}
        ORDER BY i.labels_needed - i.labels_done, i.labels_done, i.position, i.id
        LIMIT 1 {lock_clause(of="i", skip_locked=True)}"""
    params = [
        project.pk, AnnotationItem.Status.OPEN, Assignment.Status.ACTIVE, connection.ops.adapt_datetimefield_value(now),
        user.pk, user.pk, Assignment.Status.SKIPPED, *passed_over,
    ]
    return first_row(AnnotationItem, sql, params)


def _held_claim(*, project: AnnotationProject, user) -> Assignment | None:
    """The user's active claim in the project (at most one: ``assignment_one_active``), with
    its item."""
    held = first_row(
        Assignment, f"SELECT * FROM {table(Assignment)} WHERE project_id = %s AND user_id = %s AND status = %s",
        [project.pk, user.pk, Assignment.Status.ACTIVE],
    )
    if held is not None:
        held.item = by_pk(AnnotationItem, held.item_id)
    return held


def next_item_for(*, project: AnnotationProject, user, role: str | None = None) -> Assignment | None:
    """Claim the user's next item and return the claim (``assignment.item``), or None when
    nothing is left for them. Asking again while holding an unexpired claim returns that claim.
    Raises ``PermissionError`` for non-labellers and ``ProjectNotOpenError`` for closed projects.

    ``role``: the user's role, passed by a caller that read ``project`` and the role at the
    start of this request (``project_with_role``); without it both are read again here."""
    if role is None:
        project = AnnotationProject.objects.get(pk=project.pk)
    require_labeller(project=project, user=user, role=role)
    # Returning the claim the user holds is a read: it takes no write lock (on SQLite a write
    # transaction would queue every page load behind every submission).
    held = _held_claim(project=project, user=user)
    if held is not None and held.expires_at > timezone.now() and held.item.status == AnnotationItem.Status.OPEN:
        return held
    return _claim_next(project=project, user=user)


@transaction.atomic
def _claim_next(*, project: AnnotationProject, user) -> Assignment | None:
    now = timezone.now()
    held = _held_claim(project=project, user=user)  # again, in the transaction: a second tab may have claimed
    if held is not None:
        if held.expires_at > now and held.item.status == AnnotationItem.Status.OPEN:
            return held
        claim_expire(held, now)
    passed_over: list[int] = []
    while True:
        item = _first_claimable(project=project, user=user, now=now, passed_over=passed_over)
        if item is None:
            return None
        if item_has_free_slot(item, now):
            break
        passed_over.append(item.pk)
    return claim_create(project=project, item=item, user=user, now=now)


def _claim_end(*, assignment: Assignment, user, status: str, action: str) -> Assignment:
    if assignment.user_id != user.pk:
        raise PermissionError("only the annotator who holds a claim can end it")
    item_lock(item_id=assignment.item_id)  # serialize with claims and submissions on this item
    current = Assignment.objects.get(pk=assignment.pk)
    if current.status not in (Assignment.Status.ACTIVE, Assignment.Status.EXPIRED):
        raise AnnotationError(f"this claim is already {current.status}")
    before = {"assignment_id": current.pk, "status": current.status}
    current.status, current.ended_at = status, timezone.now()
    current.save(update_fields=["status", "ended_at"])
    audit_record(
        actor=user, action=action, target_kind="annotation_item", target_id=current.item_id,
        project=current.project, before=before, after={"status": status},
    )
    return current


def _active_claim(*, item: AnnotationItem, user) -> Assignment | None:
    return Assignment.objects.filter(item=item, user=user, status=Assignment.Status.ACTIVE).first()


@transaction.atomic
def assignment_skip(
    *, user, item: AnnotationItem | None = None, assignment: Assignment | None = None
) -> Assignment | None:
    """Give the item back and never be offered it again (undo with ``label_undo_last``).

    Pass the ``item``: the user's active claim on it is looked up here, and None is returned
    when they hold none (nothing to skip). ``assignment`` (a claim the caller already has,
    e.g. the API's claim URLs) is accepted too.
    """
    if (item is None) == (assignment is None):
        raise TypeError("assignment_skip takes either item or assignment")
    if assignment is None:
        assignment = _active_claim(item=item, user=user)
        if assignment is None:
            return None
    if Assignment.objects.filter(item_id=assignment.item_id, user=user, status=Assignment.Status.SKIPPED).exists():
        raise AnnotationError("you already skipped this item")
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.SKIPPED, action="assignment.skip")


@transaction.atomic
def assignment_release(*, assignment: Assignment, user) -> Assignment:
    """Give the item back without skipping it: it may be offered to the user again later."""
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.RELEASED, action="assignment.release")


@transaction.atomic
def skips_revisit(*, project: AnnotationProject, user) -> int:
    """Offer the user the items they skipped in this project again (their skips become releases;
    items labelled or settled since stay out as usual). Returns how many came back."""
    skipped = Assignment.objects.select_for_update().filter(project=project, user=user,
                                                             status=Assignment.Status.SKIPPED)
    item_ids = sorted(skipped.values_list("item_id", flat=True))
    if not item_ids:
        return 0
    skipped.update(status=Assignment.Status.RELEASED)
    audit_record(actor=user, action="assignment.revisit_skipped", target_kind="annotation_project",
                 target_id=project.pk, project=project, before={"skipped_items": item_ids}, after={"skipped_items": []})
    return len(item_ids)
