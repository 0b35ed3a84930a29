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
from .services.claims import claim_create, claim_expire, item_has_free_slot
from .services.errors import AnnotationError
from .services.labels import require_labeller
from .services.locking import first_unlocked, item_lock


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


@transaction.atomic
def next_item_for(*, project: AnnotationProject, user, role: str | None = None) -> Assignment | None:
    """Claim the user's next item and return the claim (``assignment.item``), or None when
    nothing is left for them. Asking again while holding an unexpired claim returns that claim.
    Raises ``PermissionError`` for non-labellers and ``ProjectNotOpenError`` for closed projects.

    ``role``: the user's role, passed by a caller that read ``project`` and the role at the
    start of this request (``project_with_role``); without it both are read again here."""
    if role is None:
        project = AnnotationProject.objects.get(pk=project.pk)
    require_labeller(project=project, user=user, role=role)
    now = timezone.now()
    held = (
        Assignment.objects.select_related("item")
        .filter(project=project, user=user, status=Assignment.Status.ACTIVE)
        .first()
    )
    if held is not None:
        if held.expires_at > now and held.item.status == AnnotationItem.Status.OPEN:
            return held
        claim_expire(held, now)
    candidates = _candidates(project=project, user=user, now=now)
    passed_over: list[int] = []
    while True:
        item = first_unlocked(candidates.exclude(pk__in=passed_over))
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
