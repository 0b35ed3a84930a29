"""Handing out items: claims held for the project's hold duration, never beyond overlap k.

``next_item_for`` picks, among open items the user has neither labelled nor skipped and that
still have a free slot (labels + unexpired claims < k), the one closest to completion (fewest
labels still needed), then the least annotated, then by position. The candidate row is locked
(PostgreSQL: ``FOR NO KEY UPDATE SKIP LOCKED``; SQLite: the IMMEDIATE transaction) and its
slots are counted again under the lock before the claim is written, because the candidate
query's snapshot may predate a concurrent claim. ``label_submit`` takes the same row lock.
"""

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from .models import AnnotationItem, AnnotationProject, Assignment, Label
from .services.audit import audit_record
from .services.errors import AnnotationError
from .services.labels import require_labeller
from .services.locking import first_unlocked, item_lock


def _claim_expire(assignment: Assignment, now) -> None:
    assignment.status, assignment.ended_at = Assignment.Status.EXPIRED, now
    assignment.save(update_fields=["status", "ended_at"])


def _candidates(*, project: AnnotationProject, user, now):
    active_claims = (
        Assignment.objects.filter(item=OuterRef("pk"), status=Assignment.Status.ACTIVE, expires_at__gt=now)
        .order_by()
        .values("item")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        AnnotationItem.objects.filter(project=project, status=AnnotationItem.Status.OPEN)
        .annotate(active_claims=Coalesce(Subquery(active_claims), 0), remaining=F("labels_needed") - F("labels_done"))
        .filter(active_claims__lt=F("remaining"))
        .exclude(Exists(Label.objects.filter(item=OuterRef("pk"), annotator=user)))
        .exclude(Exists(Assignment.objects.filter(item=OuterRef("pk"), user=user, status=Assignment.Status.SKIPPED)))
        .order_by("remaining", "labels_done", "position", "id")
    )


def _has_free_slot(item: AnnotationItem, now) -> bool:
    """Count under the item's lock: every claimer and submitter takes this lock first."""
    claims = Assignment.objects.filter(item=item, status=Assignment.Status.ACTIVE)
    stale = list(claims.filter(expires_at__lte=now))
    for claim in stale:
        _claim_expire(claim, now)
    active = claims.filter(expires_at__gt=now).count()
    return item.status == AnnotationItem.Status.OPEN and item.labels_done + active < item.labels_needed


@transaction.atomic
def next_item_for(*, project: AnnotationProject, user) -> Assignment | None:
    """Claim the user's next item and return the claim (``assignment.item``), or None when
    nothing is left for them. Asking again while holding an unexpired claim returns that claim.
    Raises ``PermissionError`` for non-labellers and ``ProjectNotOpenError`` for closed projects."""
    project = AnnotationProject.objects.get(pk=project.pk)
    require_labeller(project=project, user=user)
    now = timezone.now()
    held = (
        Assignment.objects.select_related("item")
        .filter(project=project, user=user, status=Assignment.Status.ACTIVE)
        .first()
    )
    if held is not None:
        if held.expires_at > now and held.item.status == AnnotationItem.Status.OPEN:
            return held
        _claim_expire(held, now)
    candidates = _candidates(project=project, user=user, now=now)
    passed_over: list[int] = []
    while True:
        item = first_unlocked(candidates.exclude(pk__in=passed_over))
        if item is None:
            return None
        if _has_free_slot(item, now):
            break
        passed_over.append(item.pk)
    assignment = Assignment.objects.create(
        project=project, item=item, user=user, claimed_at=now, expires_at=now + project.hold_duration
    )
    audit_record(
        actor=user, action="assignment.claim", target_kind="annotation_item", target_id=item.pk, project=project,
        after={"assignment_id": assignment.pk, "expires_at": assignment.expires_at.isoformat()},
    )
    return assignment


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


@transaction.atomic
def assignment_skip(*, assignment: Assignment, user) -> Assignment:
    """Give the item back and never be offered it again (undo with ``label_undo_last``)."""
    if Assignment.objects.filter(item_id=assignment.item_id, user=user, status=Assignment.Status.SKIPPED).exists():
        raise AnnotationError("you already skipped this item")
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.SKIPPED, action="assignment.skip")


@transaction.atomic
def assignment_release(*, assignment: Assignment, user) -> Assignment:
    """Give the item back without skipping it: it may be offered to the user again later."""
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.RELEASED, action="assignment.release")
