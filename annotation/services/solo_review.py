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
from .values import DECISION_STATUS, VERIFY_REASONS


class SoloReviewError(ValueError):
    """The decision was not applied; the message says why."""


def review_reason(*, decision: str, code: str, text: str, required: bool) -> dict | None:
    """The reviewer's why, checked: a code of ``VERIFY_REASONS`` (DeepSynth §3.2's screening
    reasons, as a verify project's) and free text; a rejection needs a code when ``required``,
    "other" needs the text. ``None`` when nothing was given."""
    code, text = code.strip(), text.strip()
    if code and code not in VERIFY_REASONS:
        raise SoloReviewError(f"reason: {code!r} is not one of {', '.join(VERIFY_REASONS)}")
    if decision == "reject" and required and not code:
        raise SoloReviewError("reason: say why it is rejected (pick a reason)")
    if code == "other" and not text:
        raise SoloReviewError("reason: say what is wrong when the reason is “other”")
    if len(text) > 1000:
        raise SoloReviewError("reason: the note is longer than 1000 characters")
    return {"code": code, "text": text} if code or text else None


@transaction.atomic
def proposal_review_solo(*, kind: str, pk: int, decision: str, expected_version: int, actor,
                         edits: dict | None = None, note: str = "", reason: dict | None = None,
                         where: str = "the task page", related: tuple[str, ...] = ()):
    """Accept, edit (``edits``: the changed fields) or reject one unsettled proposal; returns the
    updated row with ``task_curated`` telling whether its task became curated by it.

    ``reason`` (``review_reason``'s dict) is kept in the revision; ``where`` names the screen in
    its note; ``related``: relations read with the row (what the caller shows of it), so that the
    row returned needs no query more. ``PermissionError`` for anyone but a global curator;
    ``LookupError`` for an unknown row; ``SoloReviewError`` for a settled proposal, an unknown
    decision or an edit without changes; ``StaleEditError``/``ValidationError`` from
    ``proposable_review`` (nothing written).

    The row is read once, under its lock and with the path to its task: the settled check, the
    version check and the write see the same row, and a decision costs the lock, the UPDATE, its
    audit row and the task's curated check (``task_curate_if_settled``)."""
    if not is_global_curator(actor):
        raise PermissionError("only curators review proposals on the task page")
    if kind not in VERIFY_TARGETS:
        raise LookupError(f"no proposal kind {kind!r}")
    if decision not in DECISION_STATUS:
        raise SoloReviewError(f"decision: {decision!r} is not one of {', '.join(DECISION_STATUS)}")
    model, task_path = VERIFY_TARGETS[kind]
    *hops, task_field = task_path.split("__")
    try:
        row = model.objects.select_for_update(of=("self",)).select_related(*hops, *related).get(pk=pk)
    except model.DoesNotExist:
        raise LookupError(f"no {kind.replace('_', ' ')} #{pk}") from None
    if row.review_status in SETTLED_STATUSES:
        raise SoloReviewError(f"{kind.replace('_', ' ')} #{pk} is already {row.review_status}; "
                              "its history (admin or API) changes a settled decision")
    if decision == "edit" and not edits:
        raise SoloReviewError("edit: change at least one field, or accept it as it is")
    row = proposable_review(
        obj=row, status=DECISION_STATUS[decision], expected_version=expected_version, actor=actor,
        note=f"solo review on {where}{': ' + note.strip() if note.strip() else ''}",
        edits=edits if decision == "edit" else None, reason=reason, locked=True,
    )
    holder = row
    for hop in hops:
        holder = getattr(holder, hop)
    task_id = getattr(holder, f"{task_field}_id")
    row.task_curated = bool(task_id) and task_curate_if_settled(task_id=task_id, actor=actor, kind=kind)
    return row
