"""The one interface every annotation kind implements (``AnnotationKind``), and the checks of a
label's value that kinds share.

A kind says, in one module of ``annotation.kinds``: what its items point at and how they are
made; what a label's value may hold and how it is cleaned; what two labels must share to agree
and when a complete item goes to adjudication; what its items' judge label is; what completing
an item does; which form, panel view and templates show it (the workspace panel, the adjudication
queue's target, the keyboard help) and the sentences the shared pages say of it; which value
fields blind mode hides, why a blind label stays final and which blind-audit attacks read its
items; which dashboard sections and export columns it has; and its own statistics. The loop,
the services, the views, the API and the templates (the ``kind_of`` filter of
``annotation.templatetags.kinds``) ask the kind instead of comparing ``project.kind``.
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
    "adjudication_template", "help_template", "label_form", "panel_view", "blind_hides", "hidden_until_close",
    "adjudicated_when", "label_reason_shown", "gold_reasons", "blind_attacks", "design_field",
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
    # The label form and the panel view live above the kinds (``annotation.forms``, ``annotation.views``),
    # which a kind may not import: it names them, and ``label_form_for`` / ``kind_view`` import them.
    label_form: ClassVar[str]  # dotted path of its ``annotation.forms.LabelForm`` subclass
    panel_view: ClassVar[str]  # dotted path of ``(item context, task) -> what the panel shows``
    # Sentences of the shared pages (``templates/annotation``), completed by the kind:
    # "Blind: {blind_hides} are revealed to an annotator …" (``_reveal.html``)
    blind_hides: ClassVar[str] = "others' labels and which report and system each item is about"
    # "{hidden_until_close} stay hidden until the study closes." (``_labels.html``)
    hidden_until_close: ClassVar[str] = "Other labels"
    # "N items where {adjudicated_when}." (``adjudication.html``)
    adjudicated_when: ClassVar[str] = "the labels disagree"
    # The adjudication queue shows a label's ``reason`` under its summary (when the summary leaves it out).
    label_reason_shown: ClassVar[bool] = False
    # A curator's own gold value names a reason (one of the label set's ``reason`` values).
    gold_reasons: ClassVar[bool] = False
    # The attacks of ``annotation.blind_audit`` that read this kind's items; the others have no trials.
    blind_attacks: ClassVar[tuple[str, ...]] = ()
    # The project field saying how its items were chosen (the exports' ``design``).
    design_field: ClassVar[str] = "sampling"

    @property
    def item_template(self) -> str:
        """The workspace's panel of an item: what it shows of the target, the label form, and
        after the label what the item revealed (``templates/annotation/kinds/<kind>/item.html``)."""
        return f"annotation/kinds/{self.name}/item.html"

    @property
    def adjudication_template(self) -> str:
        """What the adjudication queue shows of an item's target above its labels
        (``templates/annotation/kinds/<kind>/adjudication.html``; ``row`` in its context)."""
        return f"annotation/kinds/{self.name}/adjudication.html"

    @property
    def help_template(self) -> str:
        """The kind's section of the workspace's keyboard help (``templates/annotation/kinds/<kind>/help.html``)."""
        return f"annotation/kinds/{self.name}/help.html"

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
