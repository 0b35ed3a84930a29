"""What a label's value may contain, per project kind; every refusal names the field.

verify    {decision: accept|edit|reject, reason, note, edits}   (DeepSynth §3.2 screening reasons;
                                                                 a reject for reason "other" needs a note)
pairwise  {choice: left|right|tie, dimensions: {name: choice}, reason, seconds_taken,
           left_report_id, right_report_id}                     (positions as shown to the annotator)
agreement {label, judge_correct, correction, note}              (label from the judge's label set)
"""

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError

from benchmark.models import ReviewStatus
from scoring.pipelines.judged import step_labels

from ..models import AnnotationProject, ReportPair

VERIFY_DECISIONS = ("accept", "edit", "reject")
VERIFY_REASONS = ("over_specified", "ambiguous", "unverifiable", "factually_wrong", "duplicate", "other")
PAIRWISE_CHOICES = ("left", "right", "tie")
PAIRWISE_DIMENSIONS = ("organization", "coverage", "synthesis", "citations")
DECISION_STATUS = {"accept": ReviewStatus.ACCEPTED, "edit": ReviewStatus.EDITED, "reject": ReviewStatus.REJECTED}

_DEFAULT_FIELD = {
    AnnotationProject.Kind.VERIFY: "decision",
    AnnotationProject.Kind.PAIRWISE: "choice",
    AnnotationProject.Kind.AGREEMENT: "label",
}


def label_set_clean(*, kind: str, label_set: dict | None, judge_labels: Sequence[str] = ()) -> dict:
    """The project's label set with defaults filled in: ``{field: [allowed values]}``."""
    if kind not in _DEFAULT_FIELD:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(_DEFAULT_FIELD)}")
    defaults = {
        AnnotationProject.Kind.VERIFY: {"decision": list(VERIFY_DECISIONS), "reason": list(VERIFY_REASONS)},
        AnnotationProject.Kind.PAIRWISE: {"choice": list(PAIRWISE_CHOICES)},
        AnnotationProject.Kind.AGREEMENT: {"label": sorted(set(judge_labels))},
    }[kind]
    if label_set is not None and not isinstance(label_set, dict):
        raise ValueError("label_set: expected an object {field: [allowed values]}")
    merged = {**defaults, **(label_set or {})}
    for field, values in merged.items():
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"label_set.{field}: expected a non-empty list of strings")
    main = _DEFAULT_FIELD[kind]
    if len(merged.get(main, [])) < 2:
        hint = f" (the verdicts use only {', '.join(merged.get(main, [])) or 'none'})" if kind == "agreement" else ""
        raise ValueError(f"label_set.{main}: give at least two values{hint}, e.g. the judge's full label set")
    fixed = {
        AnnotationProject.Kind.VERIFY: VERIFY_DECISIONS, AnnotationProject.Kind.PAIRWISE: PAIRWISE_CHOICES
    }.get(kind)
    if fixed and set(merged[main]) - set(fixed):
        raise ValueError(f"label_set.{main}: only {', '.join(fixed)} have a meaning here")
    return merged


def label_level_clean(*, kind: str, level: str, label_set: dict) -> str:
    """The declared measurement level of the project's main label field (Krippendorff's α is
    computed at this level, never at one guessed from the values). Only agreement projects
    have labels that can be ordered; interval labels must all be numbers."""
    levels = AnnotationProject.LabelLevel.values
    if level not in levels:
        raise ValueError(f"label_level: {level!r} is not one of {', '.join(levels)}")
    if level != AnnotationProject.LabelLevel.NOMINAL and kind != AnnotationProject.Kind.AGREEMENT:
        raise ValueError("label_level: only agreement projects' labels can be ordinal or interval")
    if level == AnnotationProject.LabelLevel.INTERVAL:
        for value in label_set.get(_DEFAULT_FIELD[kind], []):
            try:
                float(value)
            except ValueError:
                raise ValueError(f"label_level: interval labels must be numbers; {value!r} is not") from None
    return level


def label_numbers(*, level: str, label_set: dict, labels: Sequence[Any]) -> list[float] | None:
    """The labels as the numbers α compares at ``level``: their position in the label set
    (ordinal), their value (interval); ``None`` for nominal, or when a label is not in the
    label set / not a number (then only a nominal comparison is meaningful)."""
    if level == AnnotationProject.LabelLevel.ORDINAL:
        order = {value: rank for rank, value in enumerate(label_set.get("label", []))}
        return [float(order[str(v)]) for v in labels] if all(str(v) in order for v in labels) else None
    if level == AnnotationProject.LabelLevel.INTERVAL:
        try:
            return [float(v) for v in labels]
        except (TypeError, ValueError):
            return None
    return None


def dimensions_clean(dimensions: Sequence[str] | None) -> list[str]:
    if dimensions is None:
        return list(PAIRWISE_DIMENSIONS)
    if isinstance(dimensions, str) or not all(isinstance(d, str) and d for d in dimensions):
        raise ValueError("dimensions: expected a list of names")
    return list(dict.fromkeys(dimensions))


def _choice(value: dict, field: str, allowed: Sequence[str] | None, *, required: bool) -> str:
    raw = value.get(field)
    if raw in (None, ""):
        if required:
            raise ValueError(f"value.{field}: required")
        return ""
    if allowed is not None and raw not in allowed:
        raise ValueError(f"value.{field}: {raw!r} is not one of {', '.join(allowed)}")
    return raw


def _text(value: dict, field: str) -> str:
    raw = value.get(field, "")
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise ValueError(f"value.{field}: expected text")
    return raw


def _only(value: Any, allowed: set[str]) -> dict:
    if not isinstance(value, dict):
        raise ValueError("value: expected an object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(f"value.{unknown[0]}: unknown field (allowed: {', '.join(sorted(allowed))})")
    return value


def _edits_clean(edits: Any, target) -> dict:
    if not isinstance(edits, dict) or not edits:
        raise ValueError("value.edits: an 'edit' decision needs the edited fields as an object")
    editable = [name for name in target.tracked_fields if name != "review_status"]
    for name in edits:
        if name not in editable:
            raise ValueError(f"value.edits.{name}: not editable (editable: {', '.join(editable)})")
    probe = copy.copy(target)
    for name, raw in edits.items():
        setattr(probe, name, raw)
    try:
        probe.clean_fields(exclude=[f.name for f in probe._meta.fields if f.name not in edits])
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ValueError(f"value.edits.{field}: {' '.join(messages)}") from exc
    return {name: getattr(probe, name) for name in edits}


def _verify(project: AnnotationProject, value: Any, target) -> dict:
    value = _only(value, {"decision", "reason", "note", "edits"})
    decision = _choice(value, "decision", project.label_set.get("decision"), required=True)
    reason = _choice(value, "reason", project.label_set.get("reason"), required=decision == "reject")
    note = _text(value, "note")
    if decision == "reject" and reason == "other" and not note.strip():
        raise ValueError("value.note: say what is wrong when the reason is “other”")
    edits = value.get("edits") or {}
    if decision == "edit":
        edits = _edits_clean(edits, target)
    elif edits:
        raise ValueError("value.edits: only allowed with decision 'edit'")
    return {"decision": decision, "reason": reason, "note": note, "edits": edits}


def _report_id(value: dict, field: str, default: int) -> int:
    raw = value.get(field)
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"value.{field}: expected a report id")
    return raw


def _pairwise(project: AnnotationProject, value: Any, pair: ReportPair) -> dict:
    value = _only(value, {"choice", "dimensions", "reason", "seconds_taken", "left_report_id", "right_report_id"})
    choices = project.label_set.get("choice")
    choice = _choice(value, "choice", choices, required=True)
    left = _report_id(value, "left_report_id", pair.report_left_id)
    right = _report_id(value, "right_report_id", pair.report_right_id)
    if left == right or {left, right} != {pair.report_left_id, pair.report_right_id}:
        raise ValueError(
            "value.left_report_id: the shown reports must be this pair's "
            f"({pair.report_left_id}, {pair.report_right_id})"
        )
    dimensions = value.get("dimensions") or {}
    if not isinstance(dimensions, dict):
        raise ValueError("value.dimensions: expected an object {dimension: choice}")
    for name, dim_choice in dimensions.items():
        if name not in project.dimensions:
            raise ValueError(f"value.dimensions.{name}: unknown dimension (known: {', '.join(project.dimensions)})")
        if dim_choice not in choices:
            raise ValueError(f"value.dimensions.{name}: {dim_choice!r} is not one of {', '.join(choices)}")
    seconds = value.get("seconds_taken")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0):
        raise ValueError("value.seconds_taken: expected a non-negative number of seconds")
    return {
        "choice": choice, "dimensions": dict(dimensions), "reason": _text(value, "reason"),
        "seconds_taken": seconds, "left_report_id": left, "right_report_id": right,
    }


def step_label_union(used: Iterable[tuple[str, str]]) -> set[str]:
    """An agreement project's default labels from the (step, label) pairs of its verdicts: every
    label those steps can give (``step_labels``: a tie the judge never gave is still a choice),
    plus any label the verdicts use that their step's catalogue does not list."""
    used = list(used)
    return {label for _, label in used if label} | {label for step, _ in used for label in step_labels(step)}


def agreement_labels(*, label_set: dict, step: str) -> list[str]:
    """The labels an agreement item on a verdict of ``step`` offers: the step's own labels
    (``step_labels``) that the project's label set allows, in the step's order; the project's
    whole set for steps that score rather than label (or whose labels the project left out)."""
    allowed = list(label_set.get("label", ()))
    return [label for label in step_labels(step) if label in allowed] or allowed


def _agreement(project: AnnotationProject, value: Any, verdict) -> dict:
    value = _only(value, {"label", "judge_correct", "correction", "note"})
    judge_correct = value.get("judge_correct")
    if judge_correct is not None and not isinstance(judge_correct, bool):
        raise ValueError("value.judge_correct: expected true or false")
    labels = agreement_labels(label_set=project.label_set, step=verdict.step)
    label = _choice(value, "label", labels, required=judge_correct is not True)
    label = label or verdict.label
    agrees = label == verdict.label
    if judge_correct is not None and judge_correct != agrees:
        raise ValueError(
            f"value.judge_correct: {judge_correct} contradicts label {label!r} (the judge said {verdict.label!r})"
        )
    return {
        "label": label, "judge_correct": agrees, "correction": _text(value, "correction"), "note": _text(value, "note")
    }


def value_clean(*, project: AnnotationProject, target, value: Any) -> dict:
    """The normalized value, or ``ValueError`` naming the first invalid field.

    ``target`` is the item's target row (benchmark proposable, ``ReportPair`` or ``Verdict``).
    """
    if target is None:
        raise ValueError("item: its target no longer exists")
    cleaners = {
        AnnotationProject.Kind.VERIFY: _verify,
        AnnotationProject.Kind.PAIRWISE: _pairwise,
        AnnotationProject.Kind.AGREEMENT: _agreement,
    }
    return cleaners[project.kind](project, value, target)


def preference_outcome(choice: str, left: int, right: int, *, order: Mapping[int, Any] | None = None) -> str:
    """A pairwise choice as the outcome of its pair, whatever side each report was shown on:
    ``first`` (better), ``second`` or ``tie``, the pair ordered by ``order[report]`` (the
    reports' systems, so "first" is the same system on every item of a system pair), then by
    report id. Coding the preferred report's id instead would make every report its own
    category and chance agreement vanish, inflating κ and α."""
    if choice == "tie":
        return "tie"
    preferred = {"left": left, "right": right}[choice]
    order = order or {}
    first = min((left, right), key=lambda report: (order.get(report, report), report))
    return "first" if preferred == first else "second"


def consensus_key(kind: str, value: dict, *, order: Mapping[int, Any] | None = None) -> Any:
    """What two labels must share to agree: the decision (and the exact edits), the pair's
    outcome (``preference_outcome``), or the label."""
    if kind == AnnotationProject.Kind.VERIFY:
        edits = json.dumps(value.get("edits") or {}, sort_keys=True) if value["decision"] == "edit" else ""
        return (value["decision"], edits)
    if kind == AnnotationProject.Kind.PAIRWISE:
        return preference_outcome(value["choice"], value["left_report_id"], value["right_report_id"], order=order)
    return value["label"]
