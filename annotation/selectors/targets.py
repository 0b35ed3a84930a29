"""What an item is about (its target row: a benchmark proposal, a report pair, a verdict or a report)
and the JSON-ready views of targets, labels, verdicts and gold labels the workspace shows."""

from collections import defaultdict
from typing import Any

from django.db.models import Case, OuterRef, QuerySet, Subquery, When

from benchmark.models import GoldReference, Report, ReviewStatus, TaskPrompt
from benchmark.services.history import snapshot
from core.compiled import CompiledRead
from scoring.models import Verdict
from scoring.pipelines.judged import judged_inputs as scoring_judged_inputs

from ..models import VERIFY_TARGETS, AnnotationItem, Label, ReportPair, TargetKind
from ..blind import label_value_shown
from ..services.values import agreement_labels


# A pair's task prompt: its general prompt first, else the first one not rejected.
_PAIR_PROMPT = Subquery(
    TaskPrompt.objects.filter(task_id=OuterRef("task_id")).exclude(review_status=ReviewStatus.REJECTED)
    .order_by(Case(When(level=TaskPrompt.Level.GENERAL, then=0), default=1), "pk").values("text")[:1]
)


def _proposables(kind: str) -> QuerySet:
    """The rows of a verify kind, with what their ``str()`` reads (a gold reference is its bib entry)."""
    model = VERIFY_TARGETS[kind][0]
    return model.objects.select_related("bib_entry") if model is GoldReference else model.objects.all()


def item_targets(items: list[AnnotationItem], *, with_text: bool = False) -> dict[int, Any]:
    """item id → its target row (benchmark proposable, ``ReportPair`` or ``Verdict``): one query per kind.
    ``with_text``: a pair's reports come with their parsed outlines (the workspace shows them)."""
    by_kind: dict[str, list[AnnotationItem]] = defaultdict(list)
    for item in items:
        by_kind[item.target_kind].append(item)
    out: dict[int, Any] = {}
    for kind, group in by_kind.items():
        if kind == TargetKind.REPORT_PAIR:
            rows = ReportPair.objects.select_related("report_left__system", "report_right__system")
            if not with_text:
                rows = rows.defer("report_left__parsed", "report_right__parsed")
            else:  # with what both reports answer (``workspace._pair_task``), in the same query
                rows = rows.select_related("task__survey").defer("task__survey__full_text").annotate(
                    task_prompt=_PAIR_PROMPT)
        elif kind == TargetKind.REPORT:
            rows = Report.objects.select_related("system", "task__survey").defer("task__survey__full_text")
            if not with_text:
                rows = rows.defer("parsed", "text")
        elif kind == TargetKind.VERDICT:
            rows = Verdict.objects.select_related("report__system", "judge_config").defer(
                "report__parsed", "raw_response"
            )
        else:
            rows = _proposables(kind)
        found = rows.in_bulk([item.target_id for item in group])
        for item in group:
            out[item.pk] = found.get(item.target_id)
    return out


# A plain verify target's row, read on every label POST of the workspace: compiled once per
# process and kind (``core.compiled``).
_PLAIN_TARGETS = {
    kind: CompiledRead(lambda target_id, model=model: model.objects.filter(pk=target_id).order_by()[:1], "target_id")
    for kind, (model, _) in VERIFY_TARGETS.items() if model is not GoldReference  # no related row to read along
}


def item_target(item: AnnotationItem, *, with_text: bool = False) -> Any:
    """The target row of one item (None when it was deleted); ``with_text``: see ``item_targets``."""
    plain = _PLAIN_TARGETS.get(item.target_kind)
    if plain is not None:
        return plain.first(target_id=item.target_id)
    return item_targets([item], with_text=with_text)[item.pk]


def _report_brief(report, *, blind: bool) -> dict:
    if blind:  # a side of the item, not a report: no handle that names it or its system
        return {"report_id": None, "system": None, "system_label": None}
    return {"report_id": report.pk, "system": str(report.system), "system_label": report.system.label}


def target_brief(item: AnnotationItem, target: Any, *, blind: bool = False, label_set: dict | None = None) -> dict:
    """A compact, JSON-ready description of an item's target for lists and the workspace.
    ``blind``: the item is not revealed to the reader (``annotation.blind``): a pair's or a
    verdict's ids, reports and systems are null (the keys stay, for clients). ``label_set``: the
    project's, of which a verdict's item offers its step's labels."""
    if target is None:
        return {"kind": item.target_kind, "id": None if blind else item.target_id, "missing": True}
    if item.target_kind == TargetKind.REPORT_PAIR:
        return {
            "kind": item.target_kind, "id": None if blind else target.pk, "task_id": target.task_id,
            "leg": None if blind else target.leg,
            "left": _report_brief(target.report_left, blind=blind),
            "right": _report_brief(target.report_right, blind=blind),
        }
    if item.target_kind == TargetKind.REPORT:  # a rating's report: its system hidden like a pair's sides
        return {"kind": item.target_kind, "id": None if blind else target.pk, "task_id": target.task_id,
                **_report_brief(target, blind=blind)}
    if item.target_kind == TargetKind.VERDICT:
        return {
            "kind": item.target_kind, "id": None if blind else target.pk,
            "report_id": None if blind else target.report_id, "step": target.step,
            "judged_kind": target.target_kind, "judged_id": None if blind else target.target_id,
            "judged_key": target.target_key,
            "labels": agreement_labels(label_set=label_set or {}, step=target.step),
        }
    return {
        "kind": item.target_kind, "id": target.pk, "text": str(target), "version": target.version,
        "review_status": target.review_status, "fields": snapshot(target),
    }


def judge_view(verdict: Verdict) -> dict:
    return {
        "label": verdict.label, "score": verdict.score, "confidence": verdict.confidence,
        "rationale": verdict.rationale, "evidence": verdict.evidence, "judge_config": str(verdict.judge_config),
    }


def judged_inputs(verdicts: list[Verdict]) -> dict[int, dict]:
    """verdict id → what its judge was shown (``scoring.pipelines.judged``): ``judged_text`` in
    words and ``judged_input``, its parts (the whole report is marked, not copied). A bounded
    number of queries: one per judged kind, and a few per report for the steps that read its
    citations. It holds the question, never the verdict: blind mode shows it before labelling."""
    return {
        pk: {"judged_text": judged.text, "judged_input": judged.as_dict()}
        for pk, judged in scoring_judged_inputs(verdicts).items()
    }


def label_view(label: Label, *, revealed: bool = True) -> dict:
    """``revealed``: the item is revealed to the reader (else the value names no report)."""
    return {
        "id": label.pk, "annotator_id": label.annotator_id, "annotator": label.annotator.get_username(),
        "value": label_value_shown(label.value, revealed=revealed), "created_at": label.created_at,
    }


def gold_view(item: AnnotationItem) -> dict | None:
    gold = getattr(item, "gold", None) if item.status == AnnotationItem.Status.ADJUDICATED else None
    if gold is None:
        return None
    return {"value": gold.value, "note": gold.note, "decided_by_id": gold.decided_by_id, "decided_at": gold.decided_at}

