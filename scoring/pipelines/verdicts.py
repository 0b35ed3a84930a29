"""Storing judge answers as ``Verdict`` rows, shared by every pipeline.

A verdict records the fingerprint of what it was asked about (``raw_response["input_hash"]``):
a finished verdict on the same question is reused, an errored or stale one is overwritten in
place, and the unique key on (target, report, judge configuration, prompt version, repeat)
makes duplicates impossible even when two workers race.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.models import Verdict

from .base import record_answer, split_evenly

RAW_TEXT_LIMIT = 4000  # characters of a malformed answer (or an evidence passage) kept on a verdict

UPDATED_FIELDS = [
    "step", "label", "score", "confidence", "rationale", "evidence", "error", "raw_response", "call",
    "tokens_in", "tokens_out", "latency_ms", "cost_usd", "updated_at",
]
_LOADED_FIELDS = ("id", "target_kind", "target_id", "target_key", "repeat", "label", "error", "raw_response",
                  "created_at")


def reusable(verdict: Verdict | None, input_hash: str, labels: Collection[str]) -> bool:
    """A finished verdict on the same question: known label, no error, and (when it recorded one)
    the same input fingerprint. Verdicts without a fingerprint (imported) are trusted."""
    if verdict is None or verdict.error or verdict.label not in labels:
        return False
    recorded = verdict.raw_response.get("input_hash") if isinstance(verdict.raw_response, dict) else None
    return recorded is None or recorded == input_hash


def verdict_fields(run, report, *, step: str, kind: str, target_id: int = 0, key: str = "", repeat: int = 0) -> dict:
    """The identifying fields of a verdict of ``run``'s judge configuration about one target."""
    config = run.judge_config
    return dict(
        report=report, judge_config=config, prompt_version=config.prompt_version, step=step, target_kind=kind,
        target_id=target_id, target_key=key, repeat=repeat,
    )


def verdict_key(v: Verdict) -> tuple:
    return (v.target_kind, v.target_id, v.target_key, v.repeat)


def stored_verdicts(run, report, kinds: Sequence[str]) -> dict[tuple, Verdict]:
    """The report's verdicts of these target kinds under ``run``'s configuration, by :func:`verdict_key`."""
    config = run.judge_config
    rows = Verdict.objects.filter(
        report=report, judge_config=config, prompt_version=config.prompt_version, target_kind__in=list(kinds)
    ).only(*_LOADED_FIELDS)
    return {verdict_key(v): v for v in rows}


def upsert_verdicts(rows: list[Verdict], *, run, report, labels: Collection[str]) -> None:
    """Insert new verdicts and overwrite unfinished or stale ones in place (rows locked first); a
    verdict finished meanwhile on the same question is kept. Call inside a transaction."""
    if not rows:
        return
    config = run.judge_config
    locked = {
        verdict_key(v): v
        for v in Verdict.objects.select_for_update().filter(
            report=report, judge_config=config, prompt_version=config.prompt_version,
            target_kind__in=sorted({row.target_kind for row in rows}),
            target_id__in=sorted({row.target_id for row in rows}),
        ).only(*_LOADED_FIELDS)
    }
    to_insert, to_update, now = [], [], timezone.now()
    for row in rows:
        current = locked.get(verdict_key(row))
        if current is None:
            to_insert.append(row)
        elif not reusable(current, row.raw_response["input_hash"], labels):
            row.pk, row.created_at, row.updated_at = current.pk, current.created_at, now
            to_update.append(row)
    Verdict.objects.bulk_create(to_insert, ignore_conflicts=True)
    Verdict.objects.bulk_update(to_update, UPDATED_FIELDS)


def answer_error(answer: JudgeAnswer) -> str:
    return f"judge error: {answer.error or 'no answer'}"


def cost_share(answer: JudgeAnswer, n: int) -> list[dict]:
    """One call's tokens, latency and cost split over the ``n`` verdicts it produced."""
    n = max(1, n)
    ins, outs = split_evenly(answer.tokens_in, n), split_evenly(answer.tokens_out, n)
    return [
        dict(tokens_in=ins[k], tokens_out=outs[k], latency_ms=answer.latency_ms / n, cost_usd=answer.cost_usd / n)
        for k in range(n)
    ]


@dataclass(frozen=True)
class Decision:
    """What one answer says about its target: a label (with its score), or why there is none."""

    label: str = ""
    score: float | None = None
    rationale: str = ""
    confidence: float | None = None
    error: str = ""


def label_decision(data: Mapping, labels: Mapping[str, float | None]) -> Decision:
    """The default reading of a one-target answer: ``{"label": ..., "rationale": ...}`` with a known label."""
    label = str(data.get("label", "")).strip().lower()
    if label not in labels:
        return Decision(error=f"malformed answer: unknown label {data.get('label')!r}")
    return Decision(label=label, score=labels[label], rationale=str(data.get("rationale") or ""))


def answered_in_chunks(judge: Judge, items: Sequence, call_of: Callable[[object], JudgeCall], *,
                       run) -> Iterator[tuple[Sequence, list[JudgeAnswer]]]:
    """``(chunk, answers)`` for ``items``, each chunk one item answered (in completion order), asked
    through ``judge.answer_as_completed``: ``max_concurrency`` calls stay in flight, and a stalled call
    never holds its neighbours' slots idle (as a chunk barrier would). Each answer is handed over as
    soon as it arrives, so the caller commits it at once: a worker killed mid-job loses only the
    answers still in flight. ``run`` is kept for the callers' signature."""
    for index, answer in judge.answer_as_completed([call_of(item) for item in items]):
        yield [items[index]], [answer]


@dataclass
class Pending:
    """One judge call still to make about one target, and the verdict it will become."""

    call: JudgeCall
    target_id: int
    input_hash: str
    key: str = ""
    extra: dict = field(default_factory=dict)
    evidence: str = ""


def ask_one_each(
    judge: Judge,
    pending: Sequence[Pending],
    *,
    run,
    report,
    kind: str,
    labels: Mapping[str, float | None],
    decide: Callable[[Mapping], Decision] | None = None,
) -> None:
    """Ask each pending call (one target each) with :func:`answered_in_chunks` and store each
    chunk's verdicts in one transaction. ``decide`` reads an answer's data (default
    :func:`label_decision`)."""
    decide = decide or (lambda data: label_decision(data, labels))
    for chunk, answers in answered_in_chunks(judge, pending, lambda p: p.call, run=run):
        with transaction.atomic():
            rows = []
            for item, answer in zip(chunk, answers, strict=True):
                decision = Decision(error=answer_error(answer)) if not answer.ok else decide(
                    answer.data if isinstance(answer.data, dict) else {}
                )
                raw = {"input_hash": item.input_hash, **item.extra}
                if decision.error:
                    raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
                else:
                    raw["answer"] = answer.data
                call = record_answer(answer, run=run, step=item.call.step)
                rows.append(Verdict(
                    **verdict_fields(run, report, step=item.call.step, kind=kind, target_id=item.target_id,
                                     key=item.key, repeat=item.call.repeat),
                    label=decision.label, score=decision.score, confidence=decision.confidence,
                    rationale=decision.rationale, error=decision.error, raw_response=raw,
                    evidence=item.evidence[:RAW_TEXT_LIMIT], call=call, **cost_share(answer, 1)[0],
                ))
            upsert_verdicts(rows, run=run, report=report, labels=labels)
