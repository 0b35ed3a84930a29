"""The annotator loop's rules, each stated once, on plain values (no database).

The loop (``annotation.loop``) applies them in Python where it holds the rows, and states them
again in SQL where one statement must apply them under a lock (``annotation.loop.store``); the
tests hold each SQL statement to these functions on random states.

- who may label: ``labeller_refusal``;
- a live claim: ``claim_live`` (active and not expired; an expired one still reads ``active``
  until someone marks it), and as filters on claim rows for the ORM reads outside the loop's
  hand-written statements: ``claims_live`` and ``claims_lapsed`` (active but expired);
- a free slot: ``has_free_slot`` (an open item whose labels plus live claims are below k);
- who may claim an item: ``may_claim`` (a free slot, and the user has neither labelled nor
  skipped it, nor holds it already);
- the claim order: ``claim_order`` (closest to completion first, then the least labelled, then
  by position);
- when labels disagree: ``labels_disagree``.
"""

import enum
from datetime import datetime

from django.db.models import Q

from .models import AnnotationItem, AnnotationProject, Assignment, Role
from .kinds import kind_of

LABELLING_ROLES = (Role.CURATOR, Role.ANNOTATOR)


class Refusal(enum.Enum):
    """Why a user may not label in a project (``labeller_refusal``)."""

    NOT_A_LABELLER = "not a labeller"  # a viewer, or no member
    BLIND_CURATOR = "curator in a blind project"  # curators see labels as items complete
    NOT_OPEN = "project not open"


def labeller_refusal(*, role: str | None, blind: bool, project_status: str) -> Refusal | None:
    """Who may label: annotators and curators of an open project, but no curator of a blind one
    (curators see every label once an item completes; to label blind, one joins as annotator).
    None when the user may label."""
    if role not in LABELLING_ROLES:
        return Refusal.NOT_A_LABELLER
    if blind and role == Role.CURATOR:
        return Refusal.BLIND_CURATOR
    if project_status != AnnotationProject.Status.OPEN:
        return Refusal.NOT_OPEN
    return None


def claim_live(*, status: str, expires_at: datetime, now: datetime) -> bool:
    """A claim holds a slot while it is active and has not expired."""
    return status == Assignment.Status.ACTIVE and expires_at > now


def claims_live(now: datetime, *, via: str = "") -> Q:
    """``claim_live`` as a filter on ``Assignment`` rows (``via``: the lookup path to them, e.g.
    ``"assignments__"`` from an item). A value, not a query: nothing is read here."""
    return Q(**{f"{via}status": Assignment.Status.ACTIVE, f"{via}expires_at__gt": now})


def claims_lapsed(now: datetime) -> Q:
    """Claims still marked active whose time is up: no longer live (``claim_live``), not yet marked expired."""
    return Q(status=Assignment.Status.ACTIVE, expires_at__lte=now)


def has_free_slot(*, item_status: str, labels_done: int, labels_needed: int, live_claims: int) -> bool:
    """An item has room for one more annotator while it is open and its labels plus its live
    claims (``claim_live``) stay below its overlap k (``labels_needed``)."""
    return item_status == AnnotationItem.Status.OPEN and labels_done + live_claims < labels_needed


def may_claim(
    *, item_status: str, labels_done: int, labels_needed: int, live_claims: int, labelled: bool, skipped: bool,
    held: bool,
) -> bool:
    """Whether a user may be handed an item: it has a free slot (``has_free_slot``, counting
    every live claim) and they have not labelled it, skipped it, nor hold it already."""
    return (has_free_slot(item_status=item_status, labels_done=labels_done, labels_needed=labels_needed,
                          live_claims=live_claims)
            and not labelled and not skipped and not held)


def claim_order(*, labels_needed: int, labels_done: int, position: int, pk: int) -> tuple[int, int, int, int]:
    """Items are handed out closest to completion first (fewest labels still needed), then the
    least labelled, then by position (and id): a sort key."""
    return (labels_needed - labels_done, labels_done, position, pk)


def labels_disagree(*, kind: str, values: list[dict], judge_label: str | None = None,
                    project: AnnotationProject | None = None) -> bool:
    """Whether a complete item goes to adjudication (the kind's ``labels_disagree``): its labels
    differ (``consensus_key``), or, agreement projects, any label differs from the judge's; a
    rating's scores lie further apart than the project's ``adjudicate_beyond``."""
    return kind_of(kind).labels_disagree(project, values, judge_label=judge_label)
