"""Handing out items: claim, skip, release, revisit.

``claim_next_items`` picks, among the open items the user may claim (``rules.may_claim``: a
free slot, neither labelled, skipped nor held by them), the first in ``rules.claim_order``. The
candidate rows are locked (PostgreSQL: ``FOR NO KEY UPDATE SKIP LOCKED``; SQLite: the IMMEDIATE
transaction) and their slots are counted again inside the INSERT of the claims, because the
candidate query's snapshot may predate a concurrent claim (``store.claims_insert``).
``label_submit`` takes the same row lock. A client may hold up to ``MAX_CLAIMS`` claims in a
project (a batch); each is held and expires on its own.
"""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.audit_actions import AuditAction
from core.compiled import CompiledRead

from .. import rules
from ..models import AnnotationItem, AnnotationProject, Assignment
from ..selectors.projects import project_role
from ..services.audit import audit_record, audit_rows_for
from ..services.errors import AnnotationError, ProjectNotOpenError
from . import store

MAX_CLAIMS = 50  # items one request may claim (``?count=``); documented in docs/performance.md

# What a crowd study (``annotation.crowd``, registered at ready) makes of the next claims in its
# project: ``planner(project=, user=, now=, held=, want=)`` → one entry per claim to make, an item to
# claim (an attention check) or None (the next item in the usual order); fewer entries end the
# worker's quota. Asked only in projects with ``has_crowd_study``: no query elsewhere.
_claim_planner = None


def claim_planner_register(planner) -> None:
    global _claim_planner
    _claim_planner = planner


def require_labeller(*, project: AnnotationProject, user, role: str | None = None) -> None:
    """``rules.labeller_refusal`` as an error: ``PermissionError`` or ``ProjectNotOpenError``.
    ``role``: the user's role in ``project`` when the caller already resolved it."""
    if role is None:
        role = project_role(project=project, user=user)
    refusal = rules.labeller_refusal(role=role, blind=project.blind, project_status=project.status)
    if refusal is rules.Refusal.NOT_A_LABELLER:
        raise PermissionError(
            f"{user} may not label items of project {project.name!r} (role: {role or 'not a member'})"
        )
    if refusal is rules.Refusal.BLIND_CURATOR:
        raise PermissionError(
            f"project {project.name!r} is blind: only its annotators label; to label, a curator joins it as an"
            " annotator (and is then blind like any annotator until committing each label)"
        )
    if refusal is rules.Refusal.NOT_OPEN:
        raise ProjectNotOpenError(f"project {project.name!r} is {project.status}; it accepts no labels now")


# read twice by every claim request (before and inside its transaction): compiled once per process
_HELD_CLAIMS = CompiledRead(
    lambda project_id, user_id: Assignment.objects.select_related("item")
    .filter(project_id=project_id, user_id=user_id, status=Assignment.Status.ACTIVE).order_by("claimed_at", "id"),
    "project_id", "user_id")


def held_claims(*, project: AnnotationProject, user) -> list[Assignment]:
    """The user's active claims in the project, oldest first, with their items (one query)."""
    return _HELD_CLAIMS.rows(project_id=project.pk, user_id=user.pk)


def _usable(claim: Assignment, now) -> bool:
    return (rules.claim_live(status=claim.status, expires_at=claim.expires_at, now=now)
            and claim.item.status == AnnotationItem.Status.OPEN)


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
    held = [claim for claim in held_claims(project=project, user=user) if _usable(claim, now)]
    if len(held) >= count:
        return held[:count]
    with transaction.atomic():
        return claim_more(project=project, user=user, count=count)


def claim_next_item(*, project: AnnotationProject, user, role: str | None = None) -> Assignment | None:
    """The first of ``claim_next_items`` with ``count=1``: the claim held, else a new one; None
    when nothing is left for the user."""
    claims = claim_next_items(project=project, user=user, role=role)
    return claims[0] if claims else None


def claim_more(
    *, project: AnnotationProject, user, count: int, held: list[Assignment] | None = None,
    audit: list[dict] | None = None,
) -> list[Assignment]:
    """Top the user's usable claims up to ``count``, in the caller's transaction. ``held``: the
    user's active claims, when the caller read them in it; ``audit``: audit rows of the
    transaction to write with the claims' (else they are written here)."""
    now = timezone.now()
    if held is None:
        held = held_claims(project=project, user=user)  # again, in the transaction: a second tab may have claimed
    usable = [claim for claim in held if _usable(claim, now)]
    stale = [claim.pk for claim in held if not _usable(claim, now)]
    if stale:
        Assignment.objects.filter(pk__in=stale).update(status=Assignment.Status.EXPIRED, ended_at=now)
    if len(usable) >= count:
        return usable[:count]
    plan: list[AnnotationItem | None] = [None] * (count - len(usable))
    if project.has_crowd_study and _claim_planner is not None:
        plan = _claim_planner(project=project, user=user, now=now, held=usable, want=len(plan))
    claims: list[Assignment] = []
    passed_over = [claim.item_id for claim in usable]
    start = 0
    while start < len(plan):
        if plan[start] is not None:  # an item the planner chose, locked by it
            made = claims_create(project=project, items=[plan[start]], user=user, now=now, audit=audit)
            claims += made
            passed_over += [claim.item_id for claim in made]
            start += 1
            continue
        end = next((i for i in range(start, len(plan)) if plan[i] is not None), len(plan))
        claims += _claims_in_order(project=project, user=user, now=now, passed_over=passed_over,
                                   want=end - start, audit=audit)
        start = end
    return usable + claims


def _claims_in_order(*, project, user, now: datetime, passed_over: list[int], want: int,
                     audit: list[dict] | None) -> list[Assignment]:
    """Up to ``want`` new claims on the next items in ``rules.claim_order`` (``passed_over`` grows)."""
    claims: list[Assignment] = []
    while len(claims) < want:
        items = store.claimable_items(project=project, user=user, now=now, passed_over=passed_over,
                                      limit=want - len(claims))
        if not items:
            break
        claims += claims_create(project=project, items=items, user=user, now=now, audit=audit)
        passed_over += [item.pk for item in items]
    return claims


def claims_create(
    *, project: AnnotationProject, items: list[AnnotationItem], user, now: datetime, audit: list[dict] | None = None
) -> list[Assignment]:
    """Write the claims on those of ``items`` (locked by the caller) that still have a free slot,
    each held for the project's hold duration, and their audit rows (``audit``: a list to put
    them in for the caller, else written here). Claims found expired on the way are marked so
    first (``stale``, a column ``store.claimable_items`` carries), one UPDATE when there are any."""
    stale = [item.pk for item in items if getattr(item, "stale", True)]
    if stale:
        Assignment.objects.filter(rules.claims_lapsed(now), item_id__in=stale).update(
            status=Assignment.Status.EXPIRED, ended_at=now
        )
    claims = store.claims_insert(project=project, items=items, user=user, now=now)
    rows = [
        dict(actor=user, action=AuditAction.ASSIGNMENT_CLAIM, target_kind="annotation_item", target_id=claim.item_id,
             project=project, after={"assignment_id": claim.pk, "expires_at": claim.expires_at.isoformat()})
        for claim in claims
    ]
    if audit is None:
        store.audit_rows_insert(audit_rows_for(rows))
    else:
        audit += rows
    return claims


def item_has_free_slot(item: AnnotationItem, now: datetime) -> bool:
    """``rules.has_free_slot`` of one item (locked by the caller), counting its live claims;
    claims found expired are marked so on the way."""
    live = 0
    stale = []
    for claim in Assignment.objects.filter(item=item, status=Assignment.Status.ACTIVE):
        if rules.claim_live(status=claim.status, expires_at=claim.expires_at, now=now):
            live += 1
        else:
            stale.append(claim.pk)
    if stale:
        Assignment.objects.filter(pk__in=stale).update(status=Assignment.Status.EXPIRED, ended_at=now)
    return rules.has_free_slot(item_status=item.status, labels_done=item.labels_done,
                               labels_needed=item.labels_needed, live_claims=live)


def _claim_end(*, assignment: Assignment, user, status: str, action: str) -> Assignment:
    if assignment.user_id != user.pk:
        raise PermissionError("only the annotator who holds a claim can end it")
    store.item_lock(item_id=assignment.item_id)  # serialize with claims and submissions on this item
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
        assignment = Assignment.objects.filter(item=item, user=user, status=Assignment.Status.ACTIVE).first()
        if assignment is None:
            return None
    if Assignment.objects.filter(item_id=assignment.item_id, user=user, status=Assignment.Status.SKIPPED).exists():
        raise AnnotationError("you already skipped this item")
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.SKIPPED, action=AuditAction.ASSIGNMENT_SKIP)


@transaction.atomic
def assignment_release(*, assignment: Assignment, user) -> Assignment:
    """Give the item back without skipping it: it may be offered to the user again later."""
    return _claim_end(assignment=assignment, user=user, status=Assignment.Status.RELEASED, action=AuditAction.ASSIGNMENT_RELEASE)


def claims_release_all(*, project: AnnotationProject, user, now: datetime) -> None:
    """End the user's active claims in the project without skipping them (the items may be
    offered again), each with its audit row (inside the caller's transaction)."""
    for held in Assignment.objects.filter(project=project, user=user, status=Assignment.Status.ACTIVE):
        updated = Assignment.objects.filter(pk=held.pk, status=Assignment.Status.ACTIVE).update(
            status=Assignment.Status.RELEASED, ended_at=now
        )
        if updated:
            audit_record(
                actor=user, action=AuditAction.ASSIGNMENT_RELEASE, target_kind="annotation_item", target_id=held.item_id,
                project=project, before={"assignment_id": held.pk, "status": Assignment.Status.ACTIVE},
                after={"status": Assignment.Status.RELEASED},
            )


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
