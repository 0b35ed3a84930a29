"""Judge calls that score several targets at once (rubric criteria, quality dimensions), and their scores.

Each target gets one verdict labelled ``scored`` with its 1..high score; the call's cost is
shared between them. Reading back, a score counts for the repeats asked and while its
fingerprint matches the current question.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction

from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.models import Verdict

from ..base import record_answer
from ..verdicts import RAW_TEXT_LIMIT, answer_error, answered_in_chunks, cost_share, upsert_verdicts, verdict_fields

SCORED = "scored"
SCORED_LABELS = {SCORED: None}


def slug(text: str) -> str:
    """A criterion's name or aspect as a metric-key part."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


@dataclass(frozen=True)
class Target:
    answer_id: int | str  # the id the judge answers under
    target_id: int
    key: str
    input_hash: str


@dataclass
class ScoredCall:
    call: JudgeCall
    targets: list[Target] = field(default_factory=list)


def parse_scores(answer: JudgeAnswer, ids: Sequence, high: int) -> dict:
    """Per requested id: ``(score, rationale, entry)`` or an error string. Each id must be answered
    exactly once (same JSON type) with an integer 1..high; ids nobody asked about are ignored."""
    if not answer.ok:
        return {i: answer_error(answer) for i in ids}
    entries = answer.data.get("scores") if isinstance(answer.data, dict) else None
    if not isinstance(entries, list):
        return {i: "malformed answer: no 'scores' list" for i in ids}
    found: dict[tuple, list[dict]] = defaultdict(list)
    for entry in entries:
        if isinstance(entry, dict) and not isinstance(entry.get("id"), bool):
            found[(type(entry.get("id")), entry.get("id"))].append(entry)
    out = {}
    for i in ids:
        hits = found.get((type(i), i), [])
        if len(hits) != 1:
            out[i] = ("malformed answer: missing from the judge's answer" if not hits
                      else f"malformed answer: answered {len(hits)} times")
            continue
        value = hits[0].get("score")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            out[i] = f"malformed answer: score {value!r} is not an integer from 1 to {high}"
            continue
        out[i] = (float(value), str(hits[0].get("rationale") or ""), hits[0])
    return out


def ask_scored(judge: Judge, calls: Sequence[ScoredCall], *, run, report, kind: str, high: int) -> None:
    """Ask calls that each score several targets with ``answered_in_chunks``; each chunk's verdicts
    (one per target, the call's cost shared between them) are committed before the next."""
    for chunk, answers in answered_in_chunks(judge, calls, lambda c: c.call, run=run):
        with transaction.atomic():
            rows = []
            for scored, answer in zip(chunk, answers, strict=True):
                outcomes = parse_scores(answer, [t.answer_id for t in scored.targets], high)
                call = record_answer(answer, run=run, step=scored.call.step)
                for target, share in zip(scored.targets, cost_share(answer, len(scored.targets)), strict=True):
                    outcome = outcomes[target.answer_id]
                    failed = isinstance(outcome, str)
                    raw = {"input_hash": target.input_hash}
                    if failed:
                        raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
                    else:
                        raw["answer"] = outcome[2]
                    rows.append(Verdict(
                        **verdict_fields(run, report, step=scored.call.step, kind=kind, target_id=target.target_id,
                                         key=target.key, repeat=scored.call.repeat),
                        label="" if failed else SCORED, score=None if failed else outcome[0],
                        rationale="" if failed else outcome[1], error=outcome if failed else "",
                        raw_response=raw, call=call, **share,
                    ))
            upsert_verdicts(rows, run=run, report=report, labels=SCORED_LABELS)


def verdict_rows(run, report, kinds: Sequence[str]) -> dict[str, list[dict]]:
    config = run.judge_config
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for row in Verdict.objects.filter(
        report=report, judge_config=config, prompt_version=config.prompt_version, target_kind__in=list(kinds),
    ).values("target_kind", "target_id", "target_key", "repeat", "label", "score", "error", "raw_response"):
        by_kind[row["target_kind"]].append(row)
    return by_kind

def finished_scores(rows: list[dict], repeats: int, current_hash) -> dict[tuple[int, str], list[float]]:
    """Scores of the finished repeats per (target_id, key), when the fingerprint matches ``current_hash``."""
    out: dict[tuple[int, str], list[float]] = defaultdict(list)
    for row in rows:
        if row["repeat"] >= repeats or row["error"] or row["label"] != SCORED or row["score"] is None:
            continue
        recorded = (row["raw_response"] or {}).get("input_hash")
        if recorded is not None and recorded != current_hash(row["target_id"], row["target_key"]):
            continue  # asked about an older text or criterion: not scored until re-run
        out[(row["target_id"], row["target_key"])].append(float(row["score"]))
    return out
