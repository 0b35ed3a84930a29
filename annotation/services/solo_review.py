"""A curator settles a task's proposals alone, on the task page: the decision a verify project's
agreeing reviewers would apply (``proposable_review``, its audit row in the same transaction),
then the task is curated once every proposal is settled (``task_curate_if_settled``), as after
a project's review. For a lab with one expert, where a verify project needs k ≥ 2 people.

A proposal also open in a verify project keeps its item there; the reviewers' later decision
is then based on an older version and goes to the adjudication queue as a conflict.
"""

from django.db import transaction

from benchmark.models import SETTLED_STATUSES
from benchmark.services.history import proposable_review
from core.accounts import is_global_curator

from ..models import VERIFY_TARGETS
from ..loop.settle import task_curate_if_settled
from .values import DECISION_STATUS


class SoloReviewError(ValueError):
    """The decision was not applied; the message says why."""


@transaction.atomic
def proposal_review_solo(*, kind: str, pk: int, decision: str, expected_version: int, actor,
                         edits: dict | None = None, note: str = ""):
    """Accept, edit (``edits``: the changed fields) or reject one unsettled proposal; returns the
    updated row with ``task_curated`` telling whether its task became curated by it.

    ``PermissionError`` for anyone but a global curator; ``LookupError`` for an unknown row;
    ``SoloReviewError`` for a settled proposal, an unknown decision or an edit without changes;
    ``StaleEditError``/``ValidationError`` from ``proposable_review`` (nothing written)."""
    if not is_global_curator(actor):
        raise PermissionError("only curators review proposals on the task page")
    if kind not in VERIFY_TARGETS:
        raise LookupError(f"no proposal kind {kind!r}")
    if decision not in DECISION_STATUS:
        raise SoloReviewError(f"decision: {decision!r} is not one of {', '.join(DECISION_STATUS)}")
    model, task_path = VERIFY_TARGETS[kind]
    row = model.objects.filter(pk=pk).first()
    if row is None:
        raise LookupError(f"no {kind.replace('_', ' ')} #{pk}")
    if row.review_status in SETTLED_STATUSES:
        raise SoloReviewError(f"{kind.replace('_', ' ')} #{pk} is already {row.review_status}; "
                              "its history (admin or API) changes a settled decision")
    if decision == "edit" and not edits:
        raise SoloReviewError("edit: change at least one field, or accept it as it is")
    task_id = model.objects.filter(pk=pk).values_list(task_path, flat=True).first()
    updated = proposable_review(
        obj=row, status=DECISION_STATUS[decision], expected_version=expected_version, actor=actor,
        note=f"solo review on the task page{': ' + note.strip() if note.strip() else ''}",
        edits=edits if decision == "edit" else None,
    )
    updated.task_curated = bool(task_id) and task_curate_if_settled(task_id=task_id, actor=actor, kind=kind)
    return updated
