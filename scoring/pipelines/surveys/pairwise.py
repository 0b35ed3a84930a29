"""``survey.pairwise``: the report against the human survey, asked in both orders per repeat.

target_kind ``human_pairwise``, key ``report_first`` / ``human_first``; the verdict's label is the
outcome for the report: win, tie or loss. SurveyLens and SurveyScope ask the same question, so
their verdicts are shared. ``win_rate_vs_human`` is :func:`win_rate` over every judged comparison
(ties count half); ``pairwise_position_consistency`` the share of repeats whose two orders agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction

from scoring.embeddings import content_hash
from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import win_rate
from scoring.models import Verdict

from ..base import BasePipeline, fingerprint
from ..verdicts import Decision, Pending, ask_one_each, reusable, stored_verdicts, upsert_verdicts, verdict_fields
from .ssr import SurveySSR, survey_ssr, survey_topic

PAIRWISE = "survey.pairwise"
PAIRWISE_KIND = "human_pairwise"
OUTCOMES = {"win": 1.0, "tie": 0.5, "loss": 0.0}
ORDERS = ("report_first", "human_first")  # report as survey A, then as survey B
HUMAN_NOT_AVAILABLE = "the human survey has no text to compare with"


def pairwise_variables(report, order: str, *, topic: str, human: SurveySSR) -> dict:
    """The pairwise question in one order: the report as survey A (``report_first``) or as B."""
    a, b = (report.text, human.text) if order == "report_first" else (human.text, report.text)
    return {"topic": topic, "survey_a": a, "survey_b": b}


def _pairwise_hash(topic: str, report_text: str, human_text: str, order: str) -> str:
    return fingerprint("survey.pairwise", topic, content_hash(report_text), content_hash(human_text), order)


def _outcome_decider(order: str):
    def decide(data: Mapping) -> Decision:
        winner = data.get("winner")
        if winner not in ("A", "B", "tie"):
            return Decision(error=f"malformed answer: winner {winner!r} is not A, B or tie")
        report_side = "A" if order == "report_first" else "B"
        label = "tie" if winner == "tie" else ("win" if winner == report_side else "loss")
        return Decision(label=label, score=OUTCOMES[label], rationale=str(data.get("rationale") or ""))
    return decide


class SurveyPipeline(BasePipeline):
    """What both survey pipelines share: their step list and the pairwise step."""

    steps: list[str] = []

    def steps_for(self, report) -> list[str]:
        return list(self.steps)

    def _check_step(self, step: str) -> None:
        if step not in self.steps:
            raise ValueError(f"the {self.protocol} pipeline has no step {step!r} (it has {', '.join(self.steps)})")

    # pairwise against the human survey, both orders

    def _run_pairwise(self, *, run, report, judge: Judge) -> None:
        human = survey_ssr(report.task.survey)
        topic = survey_topic(report.task)
        existing = stored_verdicts(run, report, [PAIRWISE_KIND])
        unavailable = []
        for order in ORDERS:
            pending = []
            for repeat in range(run.judge_config.repeats):
                input_hash = _pairwise_hash(topic, report.text, human.text, order)
                if reusable(existing.get((PAIRWISE_KIND, 0, order, repeat)), input_hash, OUTCOMES):
                    continue
                if not human.text.strip():
                    unavailable.append(Verdict(
                        **verdict_fields(run, report, step=PAIRWISE, kind=PAIRWISE_KIND, key=order, repeat=repeat),
                        error=HUMAN_NOT_AVAILABLE, raw_response={"input_hash": input_hash, "order": order},
                    ))
                    continue
                call = JudgeCall(step=PAIRWISE, variables=pairwise_variables(report, order, topic=topic, human=human),
                                 repeat=repeat)
                pending.append(Pending(call, 0, input_hash, key=order, extra={"order": order}))
            ask_one_each(judge, pending, run=run, report=report, kind=PAIRWISE_KIND, labels=OUTCOMES,
                         decide=_outcome_decider(order))
        if unavailable:
            with transaction.atomic():
                upsert_verdicts(unavailable, run=run, report=report, labels=OUTCOMES)

    def _score_pairwise(self, *, run, report, rows: list[dict]) -> tuple[dict, int, int]:
        repeats = run.judge_config.repeats
        human = survey_ssr(report.task.survey)
        topic = survey_topic(report.task)
        outcomes: dict[tuple[str, int], str] = {}
        for row in rows:
            if row["repeat"] >= repeats or row["error"] or row["label"] not in OUTCOMES:
                continue
            recorded = (row["raw_response"] or {}).get("input_hash")
            if recorded is None or recorded == _pairwise_hash(topic, report.text, human.text, row["target_key"]):
                outcomes[(row["target_key"], row["repeat"])] = row["label"]
        asked = len(ORDERS) * repeats
        both = [r for r in range(repeats) if all((o, r) in outcomes for o in ORDERS)]
        metrics = {
            "win_rate_vs_human": win_rate(list(outcomes.values())) if outcomes else None,
            "pairwise_judged": len(outcomes),
            "pairwise_position_consistency": (
                sum(outcomes[("report_first", r)] == outcomes[("human_first", r)] for r in both) / len(both)
                if both else None),
        }
        return metrics, len(outcomes), asked - len(outcomes)
