"""DeepSynth-Eval (paper §3.4): one judge call per checklist group, one verdict per item.

For each report and each checklist group of its task, the judge answers the step
``deepsynth.checklist_group`` for all of the group's items at once and labels each item
correct (1), omitted (0) or incorrect (-1). With ``JudgeConfig.repeats`` = k, every group
is asked k times (``repeat`` 0..k-1) and an item's label is the majority over its finished
repeats; a tie goes to the lowest-scoring tied label (incorrect < omitted < correct), so an
item counts as correct only when most repeats say so.

What counts: groups and items whose ``review_status`` is not rejected. An item whose
judge call failed, whose answer was malformed, or which the answer left out (or
answered twice, or with an unknown label) gets a verdict with ``error`` set and no
label: it is excluded from the scores and counted in ``items_failed``; a re-run retries it.

Group threshold θ (eq. 3): ``group.threshold`` (capped at the number of counted items N),
else ``threshold_from_clip_factor(N, group.clip_factor)``, else N. When only J < N items
of a group were judged, θ is scaled by J/N so that the failed items neither count as
omitted nor make the group easier to saturate; a group with no judged item is left out
of the means (the card says how many groups were scored).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone

from benchmark.models import ChecklistGroup, ChecklistItem, ReviewStatus
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.metrics import (
    GROUP_SCORE_VARIANTS, PRECISION_VARIANTS, checklist_scores, group_score, system_precision,
    threshold_from_clip_factor,
)
from scoring.models import Verdict

from .base import BasePipeline, fingerprint, record_answer, split_evenly, variant_option
from .verdicts import answered_in_chunks, reusable

STEP = "deepsynth.checklist_group"
TARGET_KIND = "checklist_item"
LABEL_SCORES = {"correct": 1, "omitted": 0, "incorrect": -1}
RAW_TEXT_LIMIT = 4000  # characters of a malformed answer kept on its verdicts for debugging

_UPDATED_FIELDS = [
    "step", "label", "score", "rationale", "evidence", "error", "raw_response", "call",
    "tokens_in", "tokens_out", "latency_ms", "cost_usd",
]


@dataclass(frozen=True)
class GroupSpec:
    group: ChecklistGroup
    items: list[ChecklistItem]


@dataclass(frozen=True)
class ItemOutcome:
    label: str = ""
    evidence: str = ""
    rationale: str = ""
    entry: dict | None = None
    error: str = ""


@dataclass
class GroupCall:
    spec: GroupSpec
    items: list[ChecklistItem]  # the items still to judge in this repeat
    inputs: dict[int, str]  # item id -> fingerprint of what the verdict is about
    repeat: int
    call: JudgeCall
    stored: frozenset[int]  # ids of the items that had a (failed or stale) verdict row when the job began


def checklist_for_scoring(task) -> list[GroupSpec]:
    """The task's groups and items that count (not rejected), in order; empty groups dropped."""
    items = ChecklistItem.objects.exclude(review_status=ReviewStatus.REJECTED).order_by("position", "id")
    groups = (
        ChecklistGroup.objects.filter(task=task)
        .exclude(review_status=ReviewStatus.REJECTED)
        .select_related("constraint_question")
        .prefetch_related(Prefetch("items", queryset=items))
        .order_by("position", "id")
    )
    specs = [GroupSpec(group, list(group.items.all())) for group in groups]
    return [spec for spec in specs if spec.items]


def constraint_question(group: ChecklistGroup) -> str:
    """The group's structural constraint question, as the judge reads it ("" for topic groups)."""
    return group.constraint_question.text if group.constraint_question_id else ""


def parse_group_answer(answer: JudgeAnswer, item_ids: Sequence[int]) -> dict[int, ItemOutcome]:
    """Per requested item id, its verdict or why there is none. The answer must cover every
    requested id exactly once with a known label; ids the call did not ask about are ignored."""
    if not answer.ok:
        return {i: ItemOutcome(error=f"judge error: {answer.error or 'no answer'}") for i in item_ids}
    entries = answer.data.get("verdicts") if isinstance(answer.data, dict) else None
    if not isinstance(entries, list):
        return {i: ItemOutcome(error="malformed answer: no 'verdicts' list") for i in item_ids}
    by_id: dict[int, list[dict]] = defaultdict(list)
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("id"), int) and not isinstance(entry.get("id"), bool):
            by_id[entry["id"]].append(entry)
    outcomes = {}
    for i in item_ids:
        found = by_id.get(i, [])
        if not found:
            outcomes[i] = ItemOutcome(error="malformed answer: item missing from the judge's answer")
            continue
        if len(found) > 1:
            outcomes[i] = ItemOutcome(error=f"malformed answer: item answered {len(found)} times")
            continue
        entry = found[0]
        label = str(entry.get("label", "")).strip().lower()
        if label not in LABEL_SCORES:
            outcomes[i] = ItemOutcome(error=f"malformed answer: unknown label {entry.get('label')!r}")
            continue
        outcomes[i] = ItemOutcome(
            label=label, evidence=str(entry.get("evidence") or ""), rationale=str(entry.get("rationale") or ""), entry=entry
        )
    return outcomes


def majority_label(labels: Sequence[str]) -> str:
    """The most frequent label; a tie goes to the lowest-scoring tied label (see module doc)."""
    counts = Counter(labels)
    top = max(counts.values())
    return min((label for label, n in counts.items() if n == top), key=LABEL_SCORES.__getitem__)


def group_threshold(group: ChecklistGroup, n_items: int, n_judged: int) -> float:
    """θ for the judged items of a group of ``n_items`` counted items (see module doc)."""
    if group.threshold is not None:
        theta = min(float(group.threshold), float(n_items))
    elif group.clip_factor is not None:
        theta = threshold_from_clip_factor(n_items, group.clip_factor)
    else:
        theta = float(n_items)
    if n_judged < n_items:
        theta = theta * n_judged / n_items
    return min(theta, float(n_judged))


def saturated_group_score(group: ChecklistGroup, n_items: int, labels: Sequence[str], *, variant: str) -> float:
    """Eq. 3 for one group (0–1) from the labels of its judged items (one each; ``n_items``
    counted items, the failed ones included), as :meth:`DeepSynthPipeline.score_report` scores
    it: θ by :func:`group_threshold`, then ``group_score`` of the ``variant``. Calibrated scores
    apply it to the judge's labels and to the experts' (``annotation.calibration.unit_groups``)."""
    scores = [LABEL_SCORES[label] for label in labels]
    return group_score(scores, group_threshold(group, n_items, len(scores)), variant=variant)


def group_score_variant(config) -> str:
    """The judge configuration's group score variant (``options["variants"]["group_score"]``)."""
    return variant_option(config, "group_score", GROUP_SCORE_VARIANTS)


class DeepSynthPipeline(BasePipeline):
    protocol = "deepsynth"

    def steps_for(self, report) -> list[str]:
        return [STEP]

    # --- judging ------------------------------------------------------------------------

    def run_step(self, *, run, report, step: str, judge: Judge) -> None:
        if step != STEP:
            raise ValueError(f"the DeepSynth pipeline has no step {step!r} (it has {STEP!r})")
        config = run.judge_config
        specs = checklist_for_scoring(report.task)
        report_hash = fingerprint(report.text)
        inputs = {
            item.id: fingerprint(report_hash, spec.group.name, constraint_question(spec.group), item.text)
            for spec in specs
            for item in spec.items
        }
        existing = self._verdicts(report=report, config=config, item_ids=list(inputs))
        calls = []
        for repeat in range(config.repeats):
            for spec in specs:
                todo = [item for item in spec.items
                        if not reusable(existing.get((item.id, repeat)), inputs[item.id], LABEL_SCORES)]
                if todo:
                    stored = frozenset(item.id for item in todo if (item.id, repeat) in existing)
                    calls.append(self._group_call(spec, todo, inputs, repeat, report, stored))
        for chunk, answers in answered_in_chunks(judge, calls, lambda group_call: group_call.call, run=run):
            for group_call, answer in zip(chunk, answers, strict=True):
                self._store(group_call, answer, run=run, report=report)

    def _group_call(self, spec: GroupSpec, todo, inputs, repeat: int, report, stored) -> GroupCall:
        variables = {
            "report": report.text,
            "group_name": spec.group.name,
            "constraint_question": constraint_question(spec.group),
            "items": [{"id": item.id, "text": item.text} for item in todo],
        }
        return GroupCall(
            spec=spec, items=todo, inputs={i.id: inputs[i.id] for i in todo}, repeat=repeat,
            call=JudgeCall(step=STEP, variables=variables, repeat=repeat), stored=stored,
        )

    @staticmethod
    def _verdicts(*, report, config, item_ids: list[int]) -> dict[tuple[int, int], Verdict]:
        rows = Verdict.objects.filter(
            report=report, judge_config=config, prompt_version=config.prompt_version,
            target_kind=TARGET_KIND, target_key="", target_id__in=item_ids,
        ).only("id", "target_id", "repeat", "label", "error", "raw_response")
        return {(v.target_id, v.repeat): v for v in rows}

    def _store(self, group_call: GroupCall, answer: JudgeAnswer, *, run, report) -> None:
        config = run.judge_config
        ids = [item.id for item in group_call.items]
        outcomes = parse_group_answer(answer, ids)
        n = len(ids)
        tokens_in, tokens_out = split_evenly(answer.tokens_in, n), split_evenly(answer.tokens_out, n)
        with transaction.atomic():
            call = record_answer(answer, run=run, step=STEP)
            rows = []
            for k, item_id in enumerate(ids):
                outcome = outcomes[item_id]
                raw = {"input_hash": group_call.inputs[item_id]}
                if outcome.error:
                    raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
                else:
                    raw["answer"] = outcome.entry
                rows.append(
                    Verdict(
                        report=report, judge_config=config, prompt_version=config.prompt_version, step=STEP,
                        target_kind=TARGET_KIND, target_id=item_id, target_key="", repeat=group_call.repeat,
                        label=outcome.label, score=LABEL_SCORES.get(outcome.label), rationale=outcome.rationale,
                        evidence=outcome.evidence, error=outcome.error, raw_response=raw, call=call,
                        tokens_in=tokens_in[k], tokens_out=tokens_out[k],
                        latency_ms=answer.latency_ms / n, cost_usd=answer.cost_usd / n,
                    )
                )
            self._upsert(rows, report=report, config=config, repeat=group_call.repeat, stored=group_call.stored)

    @staticmethod
    def _upsert(rows: list[Verdict], *, report, config, repeat: int, stored: frozenset[int]) -> None:
        """Insert new verdicts and overwrite unfinished (errored or stale) ones in place; a verdict
        another worker finished meanwhile is kept. The unique key makes duplicates impossible:
        rows that existed are locked before the check, and an insert racing another worker's
        insert of the same verdict is dropped (the other one stays, and is retried on a re-run
        if it was an error)."""
        locked = {}
        if stored:
            locked = {
                v.target_id: v
                for v in Verdict.objects.select_for_update().filter(
                    report=report, judge_config=config, prompt_version=config.prompt_version, target_kind=TARGET_KIND,
                    target_key="", repeat=repeat, target_id__in=sorted(stored),
                ).only("id", "target_id", "label", "error", "raw_response", "created_at")
            }
        to_insert, to_update, now = [], [], timezone.now()
        for row in rows:
            current = locked.get(row.target_id)
            if current is None:
                to_insert.append(row)
            elif not reusable(current, row.raw_response["input_hash"], LABEL_SCORES):
                row.pk, row.created_at, row.updated_at = current.pk, current.created_at, now
                to_update.append(row)
        Verdict.objects.bulk_create(to_insert, ignore_conflicts=True)
        Verdict.objects.bulk_update(to_update, _UPDATED_FIELDS + ["updated_at"])

    # --- scoring ------------------------------------------------------------------------

    def score_report(self, *, run, report) -> dict:
        config = run.judge_config
        specs = checklist_for_scoring(report.task)
        item_ids = [item.id for spec in specs for item in spec.items]
        labels: dict[int, list[str]] = defaultdict(list)
        rows = Verdict.objects.filter(
            report=report, judge_config=config, prompt_version=config.prompt_version, target_kind=TARGET_KIND,
            target_key="", target_id__in=item_ids, repeat__lt=config.repeats, error="",
            label__in=list(LABEL_SCORES),
        ).values_list("target_id", "label")
        for target_id, label in rows:
            labels[target_id].append(label)
        groups, judged, failed = [], 0, 0
        for spec in specs:
            scores = [LABEL_SCORES[majority_label(labels[item.id])] for item in spec.items if labels.get(item.id)]
            judged += len(scores)
            failed += len(spec.items) - len(scores)
            if scores:
                groups.append({
                    "kind": spec.group.kind,
                    "verdicts": scores,
                    "threshold": group_threshold(spec.group, len(spec.items), len(scores)),
                })
        variant = group_score_variant(config)
        metrics = checklist_scores(groups, variant=variant)
        variants = {"group_score": variant, "precision": variant_option(config, "precision", PRECISION_VARIANTS)}
        metrics.update(groups=len(specs), groups_scored=len(groups), items=judged + failed, repeats=config.repeats,
                       variants=variants)
        return {"metrics": metrics, "items_judged": judged, "items_failed": failed}

    def score_system(self, *, report_scores: Sequence[dict]) -> dict:
        """The mean of each report metric, except precision: eq. 7 over the system's reports as the
        run's ``precision`` variant says (by default pooled over all their mentioned items)."""
        score = super().score_system(report_scores=report_scores)
        if report_scores:
            metrics = score["metrics"]
            variant = (metrics.get("variants") or {}).get("precision", PRECISION_VARIANTS[0])
            correct = [s["metrics"].get("correct") or 0 for s in report_scores]
            incorrect = [s["metrics"].get("incorrect") or 0 for s in report_scores]
            metrics["precision"] = system_precision(correct, incorrect, variant=variant)
        return score
