"""``deepscholar.nugget_support``: which of the task's nuggets the report supports (AutoNuggetizer).

target_kind ``nugget``, target_id the nugget. The task's nuggets that are not rejected, in
batches of ``options["nugget_batch_size"]`` (10) per call; labels support / partial_support /
not_support. ``nugget_coverage`` is the paper's strict-all score; the other modes are kept beside
it (:func:`nugget_coverage`). No nugget → ``None`` and a note.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from django.db import transaction

from benchmark.models import Nugget, ReviewStatus
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.metrics import nugget_coverage
from scoring.models import Verdict

from ..base import fingerprint, record_answer
from ..verdicts import (
    RAW_TEXT_LIMIT, Decision, answer_error, answered_in_chunks, cost_share, reusable, stored_verdicts, upsert_verdicts,
    verdict_fields,
)
from .inputs import int_option

NUGGETS = "deepscholar.nugget_support"
NUGGET_KIND = "nugget"
NUGGET_LABELS = {"support": 2.0, "partial_support": 1.0, "not_support": 0.0}
DEFAULT_NUGGET_BATCH = 10
NO_NUGGETS = ("the task has no nuggets: import them or create them with the propose command "
              "(deepscholar.nuggetize), then rescore")


def counted_nuggets(task) -> list[Nugget]:
    nuggets = Nugget.objects.filter(task=task).exclude(review_status=ReviewStatus.REJECTED)
    return list(nuggets.order_by("position", "id"))


def parse_nugget_answer(answer: JudgeAnswer, ids: Sequence[int]) -> dict[int, Decision]:
    """Per requested nugget id its label, or why there is none: every id answered exactly once
    with a known label; ids that were not asked about are ignored."""
    if not answer.ok:
        return {i: Decision(error=answer_error(answer)) for i in ids}
    entries = answer.data.get("labels") if isinstance(answer.data, dict) else None
    if not isinstance(entries, list):
        return {i: Decision(error="malformed answer: no 'labels' list") for i in ids}
    found: dict[int, list[dict]] = defaultdict(list)
    for entry in entries:
        if isinstance(entry, dict) and not isinstance(entry.get("id"), bool):
            try:
                found[int(entry.get("id"))].append(entry)
            except (TypeError, ValueError):
                continue
    out = {}
    for i in ids:
        hits = found.get(i, [])
        if len(hits) != 1:
            out[i] = Decision(error="malformed answer: nugget missing from the judge's answer" if not hits
                              else f"malformed answer: nugget answered {len(hits)} times")
            continue
        label = str(hits[0].get("label", "")).strip().lower()
        out[i] = (Decision(label=label, score=NUGGET_LABELS[label]) if label in NUGGET_LABELS
                  else Decision(error=f"malformed answer: unknown label {hits[0].get('label')!r}"))
    return out


def ask_nuggets(*, run, report, judge: Judge) -> None:
    config = run.judge_config
    size = int_option(config, "nugget_batch_size", DEFAULT_NUGGET_BATCH, 1)
    report_hash = fingerprint(report.text)
    existing = stored_verdicts(run, report, [NUGGET_KIND])
    todo = [
        (n, fingerprint(report_hash, n.text)) for n in counted_nuggets(report.task)
        if not reusable(existing.get((NUGGET_KIND, n.id, "", 0)), fingerprint(report_hash, n.text), NUGGET_LABELS)
    ]
    batches = [todo[i:i + size] for i in range(0, len(todo), size)]

    def call_of(batch) -> JudgeCall:
        return JudgeCall(step=NUGGETS, variables={
            "report": report.text, "nuggets": [{"id": n.id, "text": n.text} for n, _ in batch]})

    for chunk, answers in answered_in_chunks(judge, batches, call_of, run=run):
        for batch, answer in zip(chunk, answers, strict=True):
            _store_nugget_batch(batch, answer, run=run, report=report)


def _store_nugget_batch(batch, answer: JudgeAnswer, *, run, report) -> None:
    decisions = parse_nugget_answer(answer, [n.id for n, _ in batch])
    shares = cost_share(answer, len(batch))
    with transaction.atomic():
        call = record_answer(answer, run=run, step=NUGGETS)
        rows = []
        for (nugget, input_hash), share in zip(batch, shares, strict=True):
            decision = decisions[nugget.id]
            raw = {"input_hash": input_hash, "importance": nugget.importance}
            if decision.error:
                raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
            else:
                raw["answer"] = {"id": nugget.id, "label": decision.label}
            rows.append(Verdict(
                **verdict_fields(run, report, step=NUGGETS, kind=NUGGET_KIND, target_id=nugget.id),
                label=decision.label, score=decision.score, error=decision.error, raw_response=raw,
                evidence=nugget.text[:RAW_TEXT_LIMIT], call=call, **share,
            ))
        upsert_verdicts(rows, run=run, report=report, labels=NUGGET_LABELS)


def score_nuggets(*, report, stored, variant: str = "paper") -> tuple[dict, list[str]]:
    """(metrics, notes): nugget coverage in the paper's four modes, over the nuggets judged.

    A mode whose nugget set is empty is ``None`` (the paper's variant) or 0.0 (``upstream``, as the
    released code scores a task without nuggets or a report without vital nuggets); nuggets whose
    judgement failed are left out in both, never scored 0."""
    nuggets = counted_nuggets(report.task)
    report_hash = fingerprint(report.text)
    judged = [(label, n.importance) for n in nuggets
              if (label := stored.label_of((NUGGET_KIND, n.id, "", 0), fingerprint(report_hash, n.text),
                                           NUGGET_LABELS))]
    labels, importance = [j[0] for j in judged], [j[1] for j in judged]
    scored = bool(judged) or (variant == "upstream" and not nuggets)
    metrics = {}
    for mode, key in (("strict_all", "nugget_coverage"), ("all", "nugget_coverage_all"),
                      ("strict_vital", "nugget_coverage_strict_vital"), ("vital", "nugget_coverage_vital")):
        metrics[key] = nugget_coverage(labels, importance, mode, variant=variant) if scored else None
    metrics["nuggets"], metrics["nuggets_judged"] = len(nuggets), len(judged)
    return metrics, ([] if nuggets else [NO_NUGGETS])
