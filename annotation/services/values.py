"""What a label's value may contain: each kind's rules live in its module of ``annotation.kinds``
(the value's fields and their checks there); here, what every kind shares — the project's label
set and measurement level — and the entry points that ask the item's kind. Every refusal names
the field.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ..kinds import kind_of
from ..kinds.agreement import agreement_labels, step_label_union  # noqa: F401  (their callers import them here)
from ..kinds.pairwise import PAIRWISE_CHOICES, PAIRWISE_DIMENSIONS, dimensions_clean, preference_outcome  # noqa: F401
from ..kinds.verify import DECISION_STATUS, VERIFY_DECISIONS, VERIFY_REASONS  # noqa: F401
from ..models import AnnotationProject


def label_set_clean(*, kind: str, label_set: dict | None, judge_labels: Sequence[str] = ()) -> dict:
    """The project's label set with defaults filled in: ``{field: [allowed values]}`` (empty for
    a kind whose values are not labels of a set, such as rating's scores)."""
    annotation_kind = kind_of(kind)
    defaults = annotation_kind.label_set_defaults(judge_labels=judge_labels)
    if label_set is not None and not isinstance(label_set, dict):
        raise ValueError("label_set: expected an object {field: [allowed values]}")
    merged = {**defaults, **(label_set or {})}
    for field, values in merged.items():
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"label_set.{field}: expected a non-empty list of strings")
    main = annotation_kind.main_field
    if main not in defaults:
        return merged
    if len(merged.get(main, [])) < 2:
        hint = "" if annotation_kind.fixed_values else \
            f" (the verdicts use only {', '.join(merged.get(main, [])) or 'none'})"
        raise ValueError(f"label_set.{main}: give at least two values{hint}, e.g. the judge's full label set")
    fixed = annotation_kind.fixed_values
    if fixed and set(merged[main]) - set(fixed):
        raise ValueError(f"label_set.{main}: only {', '.join(fixed)} have a meaning here")
    return merged


def label_level_clean(*, kind: str, level: str, label_set: dict) -> str:
    """The declared measurement level of the project's main label field (Krippendorff's α is
    computed at this level, never at one guessed from the values). Agreement projects' labels
    may be ordered; interval labels must all be numbers; a rating's scores are interval."""
    levels = AnnotationProject.LabelLevel.values
    if level not in levels:
        raise ValueError(f"label_level: {level!r} is not one of {', '.join(levels)}")
    annotation_kind = kind_of(kind)
    if annotation_kind.main_field not in annotation_kind.label_set_defaults(judge_labels=["a", "b"]):
        return AnnotationProject.LabelLevel.INTERVAL  # numbers on a declared scale
    if level != AnnotationProject.LabelLevel.NOMINAL and annotation_kind.fixed_values:
        raise ValueError("label_level: only agreement projects' labels can be ordinal or interval")
    if level == AnnotationProject.LabelLevel.INTERVAL:
        for value in label_set.get(annotation_kind.main_field, []):
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


def value_clean(*, project: AnnotationProject, target, value: Any) -> dict:
    """The normalized value, or ``ValueError`` naming the first invalid field (the kind's
    ``value_clean``). ``target`` is the item's target row."""
    if target is None:
        raise ValueError("item: its target no longer exists")
    return kind_of(project).value_clean(project, value, target)


def consensus_key(kind: str, value: dict, *, order: Mapping[int, Any] | None = None) -> Any:
    """What two labels must share to agree (the kind's ``consensus_key``)."""
    return kind_of(kind).consensus_key(value, order=order)
