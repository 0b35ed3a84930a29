"""``deepscholar.organization``: the report against the task's exemplar, in both orders (§8.3.1).

target_kind ``organization``, target_key ``report_first`` / ``report_second``, ``repeat``
0..k-1 for ``JudgeConfig.repeats`` = k. Each order is its own comparison, labelled from the
report's side; the metric is the win rate with ties counted ½ (:func:`win_rate`).
"""

from __future__ import annotations

from collections.abc import Mapping

from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import win_rate

from ..base import fingerprint
from ..verdicts import Decision, Pending, ask_one_each, reusable, stored_verdicts
from .inputs import exemplar_text, query_text

ORGANIZATION = "deepscholar.organization"
ORGANIZATION_KIND = "organization"
OUTCOME_LABELS = {"win": 1.0, "tie": 0.5, "loss": 0.0}
REPORT_FIRST, REPORT_SECOND = "report_first", "report_second"


def organization_variables(report, order: str, *, query: str, exemplar: str) -> dict:
    """The organization question in one order: the report as A (``report_first``) or as B."""
    a, b = (report.text, exemplar) if order == REPORT_FIRST else (exemplar, report.text)
    return {"query": query, "report_a": a, "report_b": b}


def organization_questions(run, report) -> list[tuple[str, int, str, dict]]:
    """(target_key, repeat, input_hash, variables) of every comparison; none without an exemplar."""
    exemplar = exemplar_text(report.task)
    if not exemplar:
        return []
    query = query_text(report.task)
    out = []
    for repeat in range(run.judge_config.repeats):
        for key in (REPORT_FIRST, REPORT_SECOND):
            variables = organization_variables(report, key, query=query, exemplar=exemplar)
            out.append((key, repeat, fingerprint(query, variables["report_a"], variables["report_b"]), variables))
    return out


def _decide_outcome(report_as: str):
    """Read an organization answer from the report's side (it was A, or B)."""
    def decide(data: Mapping) -> Decision:
        winner = str(data.get("winner", "")).strip()
        if winner not in ("A", "B", "tie"):
            return Decision(error=f"malformed answer: unknown winner {data.get('winner')!r}")
        label = "tie" if winner == "tie" else ("win" if winner == report_as else "loss")
        return Decision(label=label, score=OUTCOME_LABELS[label], rationale=str(data.get("rationale") or ""))
    return decide


def ask_organization(*, run, report, judge: Judge) -> None:
    existing = stored_verdicts(run, report, [ORGANIZATION_KIND])
    for order, report_as in ((REPORT_FIRST, "A"), (REPORT_SECOND, "B")):
        pending = [
            Pending(JudgeCall(step=ORGANIZATION, variables=variables, repeat=repeat), 0, input_hash, key=key,
                    extra={"report_as": report_as})
            for key, repeat, input_hash, variables in organization_questions(run, report)
            if key == order and not reusable(existing.get((ORGANIZATION_KIND, 0, key, repeat)), input_hash,
                                             OUTCOME_LABELS)
        ]
        ask_one_each(judge, pending, run=run, report=report, kind=ORGANIZATION_KIND, labels=OUTCOME_LABELS,
                     decide=_decide_outcome(report_as))


def score_organization(*, run, report, stored) -> tuple[dict, list[str]]:
    """(metrics, notes): each order of each repeat is one comparison."""
    outcomes = [stored.label_of((ORGANIZATION_KIND, 0, key, repeat), input_hash, OUTCOME_LABELS)
                for key, repeat, input_hash, _ in organization_questions(run, report)]
    outcomes = [o for o in outcomes if o is not None]
    notes = [] if exemplar_text(report.task) else ["the task has no exemplar related-work section to compare with"]
    return {"organization": win_rate(outcomes) if outcomes else None, "organization_comparisons": len(outcomes)}, notes
