"""The one interface every annotation kind implements (``AnnotationKind``), and the checks of a
label's value that kinds share.

A kind says, in one module of ``annotation.kinds``: what its items point at and how they are
made; what a label's value may hold and how it is cleaned; what two labels must share to agree
and when a complete item goes to adjudication; what its items' judge label is; what completing
an item does; which templates show its form and panel; which value fields blind mode hides and
why a blind label stays final; which dashboard sections and export columns it has; and its own
statistics. The loop, the services, the views and the API ask the kind (``kind_of``) instead
of comparing ``project.kind``.
"""

from __future__ import annotations

import abc
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from benchmark.models import Report

from ..models import AnnotationProject

# Every part a kind implements: the attributes and methods ``AnnotationKind`` declares abstract or
# required (``tests/annotation/kinds/test_registry.py`` checks each registered kind has them all).
ATTRIBUTES = (
    "name", "main_field", "target_kinds", "default_overlap", "min_overlap", "default_reveal", "key_fields",
    "blind_fields", "undo_refused", "shows_after_label", "dashboard_sections", "export_columns",
    "applies_to_benchmark", "value_fields", "create_fields", "settings_fields", "item_template",
)
METHODS = (
    "label_set_defaults", "settings_clean", "targets", "value_clean", "consensus_key", "judge_label",
    "labels_disagree", "summary", "agreement_units", "key_value", "fill", "judge_labels", "statistics",
)


class AnnotationKind(abc.ABC):
    """One kind of annotation. Subclasses set every name of ``ATTRIBUTES`` and implement every
    method of ``METHODS``; a module-level instance is what the registry holds."""

    name: ClassVar[str]  # an ``AnnotationProject.Kind`` value
    main_field: ClassVar[str]  # the value field a gold label picks and agreement compares
    value_fields: ClassVar[tuple[str, ...]]  # every field a label's value may hold
    target_kinds: ClassVar[tuple[str, ...]]  # ``TargetKind`` values its items point at
    default_overlap: ClassVar[int] = 1
    min_overlap: ClassVar[int] = 1
    default_reveal: ClassVar[str] = AnnotationProject.Reveal.AFTER_LABEL
    key_fields: ClassVar[tuple[str, ...]]  # the value fields ``consensus_key`` reads
    blind_fields: ClassVar[tuple[str, ...]] = ()  # value fields hidden until the item is revealed
    undo_refused: ClassVar[str]  # why a blind label is final, ``{position}`` the item's, ``{when}`` the reveal policy
    dashboard_sections: ClassVar[tuple[str, ...]]  # the dashboards that show this kind's projects
    export_columns: ClassVar[tuple[str, ...]]  # the value's columns in flat exports
    applies_to_benchmark: ClassVar[bool] = False  # completing an agreed item writes the benchmark row
    # (field, value): a label whose field has this value is compared whole (verify: an edit, edits included)
    whole_value_when: ClassVar[tuple[str, str] | None] = None
    create_fields: ClassVar[tuple[str, ...]] = ()  # ``project_create``'s arguments only this kind reads
    shows_after_label: ClassVar[bool] = False  # the panel stays on the item after a label (to show what it hid)
    settings_fields: ClassVar[tuple[str, ...]] = ()  # the project's fields only this kind reads (audited)

    @property
    def item_template(self) -> str:
        """The workspace's panel of an item: what it shows of the target, the label form, and
        after the label what the item revealed (``templates/annotation/kinds/<kind>/item.html``)."""
        return f"annotation/kinds/{self.name}/item.html"

    @abc.abstractmethod
    def label_set_defaults(self, *, judge_labels: Sequence[str] = ()) -> dict:
        """``{field: [allowed values]}`` when the project gives none; ``fixed`` values below."""

    fixed_values: ClassVar[tuple[str, ...] | None] = None  # the only main-field values with a meaning

    def judge_labels(self, project: AnnotationProject, task_ids: Sequence[int]) -> Sequence[str]:
        """The labels the judge gave in the project's scope (an agreement project's default set)."""
        return ()

    @abc.abstractmethod
    def settings_clean(self, *, fields: dict) -> dict:
        """The kind's own creation fields, checked and filled in (``ValueError`` naming the field):
        ``fields`` holds what ``project_create`` was given; returns the model fields to store."""

    @abc.abstractmethod
    def targets(self, project: AnnotationProject, task_ids: Sequence[int], *,
                sample_size: int | None = None) -> tuple[list[tuple[str, int, int | None, int | None]], dict]:
        """How items are made: ``(target_kind, target_id, task_id, version)`` in the order they are
        offered, and ``{target_id: inclusion probability}`` for a random sample (else empty)."""

    def key_value(self, parts: dict[str, str | None]) -> dict:
        """A value for ``consensus_key`` from its ``key_fields`` read back as text (the agreement
        figures read only those, never whole values): numbers parsed where the key needs them."""
        return parts

    def fill(self, project: AnnotationProject, *, actor) -> int | None:
        """Items the kind makes itself, their number (None: ``targets`` says what to make)."""
        return None

    @abc.abstractmethod
    def value_clean(self, project: AnnotationProject, value: Any, target) -> dict:
        """The normalized value, or ``ValueError`` naming the first invalid field (``value.<field>``)."""

    @abc.abstractmethod
    def consensus_key(self, value: dict, *, order: Mapping[int, Any] | None = None) -> Any:
        """What two labels must share to agree."""

    @abc.abstractmethod
    def judge_label(self, target) -> str | None:
        """The judge's label an item's labels are compared with (None: no judge)."""

    @abc.abstractmethod
    def summary(self, value: dict, *, sides: dict | None = None) -> str:
        """One line describing a label's value (the adjudication queue, the reveal)."""

    def labels_disagree(self, project: AnnotationProject, values: list[dict], *, judge_label: str | None) -> bool:
        """Whether a complete item goes to adjudication: its labels' consensus keys differ, or
        any label differs from the judge's."""
        if len({_hashable(self.consensus_key(value)) for value in values}) > 1:
            return True
        return judge_label is not None and any(value.get(self.main_field) != judge_label for value in values)

    def agreement_units(self, project: dict) -> tuple[list, list, list] | None:
        """Numeric ratings for inter-annotator α at the interval level, ``(units, coders,
        values)``; None: the labels' consensus keys (``key_fields``) are the categories compared."""
        return None

    @abc.abstractmethod
    def statistics(self, project: dict) -> dict | None:
        """The kind's own figures beside the shared inter-annotator ones (None: none)."""


def reports_by_task(project: AnnotationProject, task_ids: Sequence[int], *, order: Sequence[str]) -> dict[int, list[int]]:
    """Each task's report ids in ``order``: the reports of the project's systems (none chosen:
    every system's), which the report kinds' items point at."""
    reports = Report.objects.filter(task__in=task_ids).order_by(*order)
    system_ids = list(project.systems.values_list("pk", flat=True))
    if system_ids:
        reports = reports.filter(system__in=system_ids)
    by_task: dict[int, list[int]] = defaultdict(list)
    for report_id, task_id in reports.values_list("pk", "task_id"):
        by_task[task_id].append(report_id)
    return by_task


def _hashable(key: Any) -> Any:
    if isinstance(key, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in key.items()))
    if isinstance(key, list):
        return tuple(_hashable(v) for v in key)
    return key


# --- checks of a label's value that kinds share; every refusal names the field -------------------


def choice(value: dict, field: str, allowed: Sequence[str] | None, *, required: bool) -> str:
    raw = value.get(field)
    if raw in (None, ""):
        if required:
            raise ValueError(f"value.{field}: required")
        return ""
    if allowed is not None and raw not in allowed:
        raise ValueError(f"value.{field}: {raw!r} is not one of {', '.join(allowed)}")
    return raw


def text(value: dict, field: str) -> str:
    raw = value.get(field, "")
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise ValueError(f"value.{field}: expected text")
    return raw


def only(value: Any, allowed: set[str]) -> dict:
    if not isinstance(value, dict):
        raise ValueError("value: expected an object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(f"value.{unknown[0]}: unknown field (allowed: {', '.join(sorted(allowed))})")
    return value
