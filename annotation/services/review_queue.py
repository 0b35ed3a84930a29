"""The review queue's writes: one decision (``proposal_review_solo`` with the queue's rule that a
rejection names its reason) and a bulk decision over selected proposals, each proposal in its own
transaction (a savepoint inside a caller's) so that one stale or settled row is reported and never
stalls the others. Each returns the rows as the queue shows them (``selectors.review_queue.row_related``
read with the row under its lock), so the view answers them without reading them again."""

from dataclasses import dataclass

from django.core.exceptions import ValidationError

from benchmark.services.history import StaleEditError

from ..selectors.review_queue import row_related
from .solo_review import SoloReviewError, proposal_review_solo, review_reason

WHERE = "the review queue"
BULK_LIMIT = 200  # one request decides at most this many: a page and a half of the queue


@dataclass
class Outcome:
    kind: str
    pk: int
    row: object | None = None  # the updated row when applied, read with what its queue row shows
    error: str = ""
    task_curated: bool = False


def proposal_decide(*, kind: str, pk: int, decision: str, expected_version: int, actor, edits: dict | None = None,
                    reason_code: str = "", reason_text: str = "") -> object:
    """One decision of the queue (``proposal_review_solo``'s errors); a rejection needs a reason."""
    reason = review_reason(decision=decision, code=reason_code, text=reason_text, required=True)
    return proposal_review_solo(kind=kind, pk=pk, decision=decision, expected_version=expected_version,
                                actor=actor, edits=edits, reason=reason, where=WHERE, related=row_related(kind))


def proposals_decide_bulk(*, items: list[tuple[str, int, int]], decision: str, actor, reason_code: str = "",
                          reason_text: str = "") -> list[Outcome]:
    """Accept or reject each ``(kind, pk, expected_version)``; each applied with its own audit row
    in its own transaction (``proposal_review_solo`` is atomic), the failures (settled meanwhile,
    stale, unknown) reported per row.

    ``SoloReviewError`` before anything is written for a decision other than accept/reject, a
    rejection without a reason, or more than ``BULK_LIMIT`` rows."""
    if decision not in ("accept", "reject"):
        raise SoloReviewError("bulk: only accept or reject apply to several proposals at once")
    if not items:
        raise SoloReviewError("bulk: select at least one proposal")
    if len(items) > BULK_LIMIT:
        raise SoloReviewError(f"bulk: at most {BULK_LIMIT} proposals at once ({len(items)} selected)")
    reason = review_reason(decision=decision, code=reason_code, text=reason_text, required=True)
    outcomes = []
    for kind, pk, version in items:
        outcome = Outcome(kind=kind, pk=pk)
        try:
            outcome.row = proposal_review_solo(kind=kind, pk=pk, decision=decision, expected_version=version,
                                               actor=actor, reason=reason, where=f"{WHERE} (bulk)",
                                               related=row_related(kind))
        except (LookupError, SoloReviewError, StaleEditError, ValueError) as exc:
            outcome.error = str(exc)
        except ValidationError as exc:
            outcome.error = "; ".join(exc.messages)
        else:
            outcome.task_curated = outcome.row.task_curated
        outcomes.append(outcome)
    return outcomes
