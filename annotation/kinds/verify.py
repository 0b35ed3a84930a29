"""verify: two reviewers screen each proposed benchmark row (DeepSynth §3.2); an agreed decision
is applied to the row, a disagreement goes to a curator.

value ``{decision: accept|edit|reject, reason, note, edits}`` (a reject for reason "other"
needs a note; an edit names the edited fields).
"""

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q

from benchmark.models import ReviewStatus, RubricCriterion, Task

from ..models import VERIFY_TARGETS, AnnotationProject
from .base import AnnotationKind, choice, only, text

VERIFY_DECISIONS = ("accept", "edit", "reject")
VERIFY_REASONS = ("over_specified", "ambiguous", "unverifiable", "factually_wrong", "duplicate", "other")
REASON_LABELS = {
    "over_specified": "Over-specified",
    "ambiguous": "Ambiguous",
    "unverifiable": "Unverifiable from the source",
    "factually_wrong": "Factually wrong",
    "duplicate": "Duplicate",
    "other": "Other (add a note)",
}
DECISION_LABELS = {"accept": "Accept", "edit": "Edit", "reject": "Reject"}
DECISION_STATUS = {"accept": ReviewStatus.ACCEPTED, "edit": ReviewStatus.EDITED, "reject": ReviewStatus.REJECTED}


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


class Verify(AnnotationKind):
    name = AnnotationProject.Kind.VERIFY
    main_field = "decision"
    value_fields = ("decision", "reason", "note", "edits")
    target_kinds = tuple(VERIFY_TARGETS)
    default_overlap = 2  # review, then cross-validation
    min_overlap = 2
    key_fields = ("decision",)
    whole_value_when = ("decision", "edit")
    fixed_values = VERIFY_DECISIONS
    # what project_create takes for this kind beyond the common fields
    create_fields = ("item_kinds",)
    undo_refused = (
        "your decision on item {position} is final: this project is blind, and {when} how"
        " the other reviewers decided this proposal; ask a curator to correct it"
    )
    dashboard_sections = ("progress", "inter_annotator")
    export_columns = ("decision", "reason", "note", "edits")
    applies_to_benchmark = True
    label_form = "annotation.forms.VerifyForm"
    panel_view = "annotation.views.display.verify_view"
    adjudicated_when = "the labels disagree, or an agreed decision could not be applied"
    gold_reasons = True  # a rejected proposal's reason

    def label_set_defaults(self, *, judge_labels: Sequence[str] = ()) -> dict:
        return {"decision": list(VERIFY_DECISIONS), "reason": list(VERIFY_REASONS)}

    def settings_clean(self, *, fields: dict) -> dict:
        item_kinds = list(fields.get("item_kinds") or ()) or list(VERIFY_TARGETS)
        for item_kind in item_kinds:
            if item_kind not in VERIFY_TARGETS:
                raise ValueError(f"item_kinds: {item_kind!r} is not one of {', '.join(VERIFY_TARGETS)}")
        return {"item_kinds": item_kinds}

    def targets(self, project, task_ids, *, sample_size=None):
        """(kind, id, task id, version) of every proposed row of the chosen kinds; discipline-wide
        rubric criteria of the tasks' disciplines come with task None."""
        rows = []
        for kind in project.item_kinds:
            model, task_path = VERIFY_TARGETS[kind]
            scope = Q(**{f"{task_path}__in": task_ids})
            if model is RubricCriterion:
                disciplines = Task.objects.filter(pk__in=task_ids, survey__discipline__isnull=False).values(
                    "survey__discipline"
                )
                scope |= Q(task__isnull=True, discipline__in=disciplines)
            found = model.objects.filter(scope, review_status=ReviewStatus.PROPOSED).values_list(
                "pk", task_path, "version")
            rows.extend((kind, pk, task_id, version) for pk, task_id, version in found)
        order = list(VERIFY_TARGETS)
        rows.sort(key=lambda row: (row[2] is None, row[2] or 0, order.index(row[0]), row[1]))
        return rows, {}

    def value_clean(self, project, value, target) -> dict:
        value = only(value, set(self.value_fields))
        decision = choice(value, "decision", project.label_set.get("decision"), required=True)
        reason = choice(value, "reason", project.label_set.get("reason"), required=decision == "reject")
        note = text(value, "note")
        if decision == "reject" and reason == "other" and not note.strip():
            raise ValueError("value.note: say what is wrong when the reason is “other”")
        edits = value.get("edits") or {}
        if decision == "edit":
            edits = _edits_clean(edits, target)
        elif edits:
            raise ValueError("value.edits: only allowed with decision 'edit'")
        return {"decision": decision, "reason": reason, "note": note, "edits": edits}

    def consensus_key(self, value: dict, *, order: Mapping[int, Any] | None = None) -> Any:
        """The decision, and the exact edits of an edit."""
        edits = json.dumps(value.get("edits") or {}, sort_keys=True) if value["decision"] == "edit" else ""
        return (value["decision"], edits)

    def judge_label(self, target) -> str | None:
        return None

    def summary(self, value: dict, *, sides: dict | None = None) -> str:
        decision = DECISION_LABELS.get(value.get("decision"), value.get("decision", ""))
        if value.get("decision") == "reject":
            decision += f" — {REASON_LABELS.get(value.get('reason'), value.get('reason') or 'no reason')}"
        if value.get("edits"):
            decision += ": " + "; ".join(f"{name} → {new!r}" for name, new in value["edits"].items())
        return decision

    def statistics(self, project: dict) -> dict | None:
        return None


VERIFY = Verify()
