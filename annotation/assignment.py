"""Handing out items: claims held for the project's hold duration, never beyond overlap k.

``claim_next_items`` picks, among open items the user has neither labelled, skipped nor holds
and that still have a free slot (labels + unexpired claims < k), the ones closest to completion
(fewest labels still needed), then the least annotated, then by position. The candidate rows
are locked (PostgreSQL: ``FOR NO KEY UPDATE SKIP LOCKED``; SQLite: the IMMEDIATE transaction)
and their slots are counted again under the lock before the claims are written, because the
candidate query's snapshot may predate a concurrent claim. ``label_submit`` takes the same row
lock. A client may hold up to ``MAX_CLAIMS`` claims in a project (a batch); each is held and
expires on its own.
"""

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.audit_actions import AuditAction
from core.rawsql import rows, table

from .models import VERIFY_TARGETS, AnnotationItem, AnnotationProject, Assignment, Label
from .selectors.targets import joined_target, kinds_remember, target_join
from .services.audit import audit_record
from .services.claims import claims_create
from .services.errors import AnnotationError, ProjectNotOpenError
from .services.labels import (
    Submission,
    SubmissionResult,
    label_submit_many,
    require_labeller,
    submissions_run,
)
from .services.locking import item_lock, lock_clause

MAX_CLAIMS = 50  # items one request may claim (``?count=``); documented in docs/performance.md


def _claimable(
    *, project: AnnotationProject, user, now, passed_over: list[int], limit: int
) -> list[AnnotationItem]:
    """The first ``limit`` items in claiming order that the user may take, locked (see the
    module docstring). Its ORDER BY is the expression index of migration 0005, which the
    database walks instead of sorting the open items."""
    item, assignment, label = table(AnnotationItem), table(Assignment), table(Label)
    passed = f"AND i.id NOT IN ({', '.join(['%s'] * len(passed_over))})" if passed_over else ""
    # A verify item's benchmark row comes along for the page or answer that shows the item.
    joined = [kind for kind in project.item_kinds or () if kind in VERIFY_TARGETS]
    target_columns, target_joins, target_params = target_join(joined)
    sql = f"""
        SELECT i.*, EXISTS (SELECT 1 FROM {assignment} x WHERE x.item_id = i.id AND x.status = %s
                            AND x.expires_at <= %s) AS stale{target_columns}
        FROM {item} i{target_joins}
        WHERE i.project_id = %s AND i.status = %s
          AND (SELECT COUNT(*) FROM {assignment} a WHERE a.item_id = i.id AND a.status = %s AND a.expires_at > %s)
              < i.labels_needed - i.labels_done
          AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.item_id = i.id AND l.annotator_id = %s)
          AND NOT EXISTS (SELECT 1 FROM {assignment} s WHERE s.item_id = i.id AND s.user_id = %s AND s.status = %s)
          {passed}
        ORDER BY i.labels_needed - i.labels_done, i.labels_done, i.position, i.id
        LIMIT %s {lock_clause(of="i", skip_locked=True)}"""
    at = connection.ops.adapt_datetimefield_value(now)
    params = [
        Assignment.Status.ACTIVE, at, *target_params,
        project.pk, AnnotationItem.Status.OPEN, Assignment.Status.ACTIVE, at,
        user.pk, user.pk, Assignment.Status.SKIPPED, *passed_over, limit,
    ]
    found = rows(AnnotationItem, sql, params)
    for row in found:
        if row.target_kind in joined:
            row.target_row = joined_target(row)
    kinds_remember(found)
    return found


def _held_claims(*, project: AnnotationProject, user) -> list[Assignment]:
    """The user's active claims in the project, oldest first, with their items (one query)."""
    return list(
        Assignment.objects.select_related("item")
        .filter(project=project, user=user, status=Assignment.Status.ACTIVE)
        .order_by("claimed_at", "id")
    )


def _usable(claim: Assignment, now) -> bool:
    return claim.expires_at > now and claim.item.status == AnnotationItem.Status.OPEN


def claim_next_items(*, project: AnnotationProject, user, role: str | None = None, count: int = 1) -> list[Assignment]:
    """Claim the user's next ``count`` items (1..``MAX_CLAIMS``) and return the claims, oldest
    first (``assignment.item``); fewer, or none, when less is left for them. The unexpired
    claims they hold come first: asking again returns them, topped up to ``count``.
    Raises ``PermissionError`` for non-labellers, ``ProjectNotOpenError`` for closed projects,
    ``ValueError`` for a count out of range.

    ``role``: the user's role, passed by a caller that read ``project`` and the role at the
    start of this request (``project_with_role``); without it both are read again here."""
    if not 1 <= count <= MAX_CLAIMS:
        raise ValueError(f"count: claim between 1 and {MAX_CLAIMS} items at once, not {count}")
    if role is None:
        project = AnnotationProject.objects.get(pk=project.pk)
    require_labeller(project=project, user=user, role=role)
    # Returning the claims the user holds is a read: it takes no write lock (on SQLite a write
    # transaction would queue every page load behind every submission).
    now = timezone.now()
    held = [claim for claim in _held_claims(project=project, user=user) if _usable(claim, now)]
    if len(held) >= count:
        return held[:count]
    with transaction.atomic():
        return _claim_more(project=project, user=user, count=count)


def claim_next_item(*, project: AnnotationProject, user, role: str | None = None) -> Assignment | None:
    """The first of ``claim_next_items`` with ``count=1``: the claim held, else a new one; None
    when nothing is left for the user."""
    claims = claim_next_items(project=project, user=user, role=role)
    return claims[0] if claims else None


def _claim_more(
    *, project: AnnotationProject, user, count: int, held: list[Assignment] | None = None,
    audit: list[dict] | None = None,
) -> list[Assignment]:
    """In the caller's transaction. ``held``: the user's active claims, when the caller read
    them in it; ``audit``: audit rows of the transaction to write with the claims'."""
    now = timezone.now()
    if held is None:
        held = _held_claims(project=project, user=user)  # again, in the transaction: a second tab may have claimed
    usable = [claim for claim in held if _usable(claim, now)]
    stale = [claim.pk for claim in held if not _usable(claim, now)]
    if stale:
        Assignment.objects.filter(pk__in=stale).update(status=Assignment.Status.EXPIRED, ended_at=now)
    if len(usable) >= count:
        return usable[:count]
    claims: list[Assignment] = []
    passed_over = [claim.item_id for claim in usable]
    while len(claims) < count - len(usable):
        items = _claimable(project=project, user=user, now=now, passed_over=passed_over,
                           limit=count - len(usable) - len(claims))
        if not items:
            break
        claims += claims_create(project=project, items=items, user=user, now=now, audit=audit)
        passed_over += [item.pk for item in items]
    return usable + claims


def label_submit_and_claim(
    *, annotator, submission: Submission, project: AnnotationProject | None = None, role: str | None = None,
    count: int = 1,
) -> tuple[SubmissionResult, list[Assignment]]:
    """One turn of the annotator loop in one transaction: ``label_submit`` of ``submission``,
    then, when it was stored (or is a resubmission), ``claim_next_items`` in its project
    (``count``: the next item and those the client shows after it, such as the workspace's
    prefetched one). The rules are theirs; what is saved is a transaction, a read of the user's
    held claims (they come with the item's claims) and an INSERT (all audit rows in one).
    Returns the result (its ``error`` unraised: the caller decides) and the claims, oldest
    first (none when nothing is left)."""
    def label_and_claim(batch) -> tuple[SubmissionResult, list[Assignment]]:
        (result,) = batch.answer_all()
        if result.error is not None:
            return result, []
        claims: list[Assignment] = []

        def claim_next(audit: list[dict]) -> None:
            try:
                require_labeller(project=result.label.project, user=annotator, role=result.role)
            except (PermissionError, ProjectNotOpenError):  # a resubmission after the project closed
                return
            claims.extend(_claim_more(project=result.label.project, user=annotator, count=count,
                                      held=batch.held_claims(result.label.project), audit=audit))

        batch.write(then=claim_next)
        return result, claims

    try:
        return submissions_run(label_and_claim, annotator=annotator, submissions=[submission], project=project,
                               role=role, with_held=True)
    except IntegrityError:
        # A form's token raced in for another item (see ``label_submit_many``): each step alone.
        (result,) = label_submit_many(annotator=annotator, submissions=[submission], project=project, role=role)
        if result.error is not None:
            return result, []
        return result, claim_next_items(project=result.label.project, user=annotator, role=result.role, count=count)


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
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.SKIPPED, action=AuditAction.ASSIGNMENT_SKIP)


@transaction.atomic
def assignment_release(*, assignment: Assignment, user) -> Assignment:
    """Give the item back without skipping it: it may be offered to the user again later."""
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.RELEASED, action=AuditAction.ASSIGNMENT_RELEASE)


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
    audit_record(actor=user, action=AuditAction.ASSIGNMENT_REVISIT_SKIPPED, target_kind="annotation_project",
                 target_id=project.pk, project=project, before={"skipped_items": item_ids}, after={"skipped_items": []})
    return len(item_ids)
