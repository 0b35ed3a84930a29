"""pairwise: which of two reports of the same task is better, overall and per dimension, shown
blind to their systems (a double round-robin per task, or adaptive pairs).

value ``{choice: left|right|tie, dimensions: {name: choice}, reason, seconds_taken,
left_report_id, right_report_id}`` (positions as shown to the annotator).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ..models import AnnotationProject, ReportPair, TargetKind
from ..services.adaptive_pairs import adaptive_pairs_fill
from ..services.schedule import pair_schedule
from .base import AnnotationKind, choice, only, reports_by_task, text

PAIRWISE_CHOICES = ("left", "right", "tie")
PAIRWISE_DIMENSIONS = ("organization", "coverage", "synthesis", "citations")
CHOICE_LABELS = {"left": "A is better", "right": "B is better", "tie": "Tie"}
BATCH = 1000


def dimensions_clean(dimensions: Sequence[str] | None) -> list[str]:
    if dimensions is None:
        return list(PAIRWISE_DIMENSIONS)
    if isinstance(dimensions, str) or not all(isinstance(d, str) and d for d in dimensions):
        raise ValueError("dimensions: expected a list of names")
    return list(dict.fromkeys(dimensions))


def _report_id(value: dict, field: str, default: int) -> int:
    raw = value.get(field)
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"value.{field}: expected a report id")
    return raw


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


def pair_targets(project: AnnotationProject, task_ids: Sequence[int]) -> list[tuple[str, int, int, None]]:
    """Schedule and store the double round-robin pairs of each task's reports (new pairs only)."""
    by_task = reports_by_task(project, task_ids, order=("task", "system__name", "system__version", "pk"))
    existing = set(ReportPair.objects.filter(project=project).values_list("report_left", "report_right"))
    # ``pair_schedule``: the one order of positions, which the blind audit's attacker rebuilds too.
    scheduled = [
        ReportPair(project=project, task_id=task_id, report_left_id=left, report_right_id=right, leg=leg, round=number)
        for task_id, leg, number, left, right in pair_schedule(by_task, seed=project.seed)
        if (left, right) not in existing
    ]
    created = ReportPair.objects.bulk_create(scheduled, batch_size=BATCH)
    return [(TargetKind.REPORT_PAIR, pair.pk, pair.task_id, None) for pair in created]


class Pairwise(AnnotationKind):
    name = AnnotationProject.Kind.PAIRWISE
    main_field = "choice"
    value_fields = ("choice", "dimensions", "reason", "seconds_taken", "left_report_id", "right_report_id")
    target_kinds = (TargetKind.REPORT_PAIR,)
    # Systems named only at close: after each label, annotators would learn each system's style.
    default_reveal = AnnotationProject.Reveal.AT_CLOSE
    key_fields = ("choice", "left_report_id", "right_report_id")
    blind_fields = ("left_report_id", "right_report_id")
    fixed_values = PAIRWISE_CHOICES
    # what project_create takes for this kind beyond the common fields
    create_fields = ("systems", "component", "dimensions", "pair_choice", "uniform_share", "pairs_budget")
    undo_refused = (
        "your preference on item {position} is final: this project is blind, and {when} which"
        " systems wrote the two reports and any other annotator's preference; ask a curator to correct it"
    )
    dashboard_sections = ("progress", "inter_annotator", "human_ranking", "position_bias")
    settings_fields = ("pair_choice", "uniform_share", "pairs_budget")
    export_columns = ("choice", "dimensions", "reason", "seconds_taken", "left_report_id", "right_report_id")
    label_form = "annotation.forms.PairwiseForm"
    panel_view = "annotation.views.display.pairwise_view"
    blind_hides = "others' labels and which systems wrote the reports"
    hidden_until_close = "Other labels and the systems"
    label_reason_shown = True  # the annotator's own words; the summary names only the choice
    blind_attacks = ("schedule", "style")  # they read the sides of report pairs
    design_field = "pair_choice"

    def label_set_defaults(self, *, judge_labels: Sequence[str] = ()) -> dict:
        return {"choice": list(PAIRWISE_CHOICES)}

    def settings_clean(self, *, fields: dict) -> dict:
        return {"dimensions": dimensions_clean(fields.get("dimensions"))}

    def fill(self, project: AnnotationProject, *, actor) -> int | None:
        """An adaptive project makes its pairs a few ahead, chosen as labels come."""
        if project.pair_choice == AnnotationProject.PairChoice.ADAPTIVE:
            return adaptive_pairs_fill(project=project, actor=actor)
        return None

    def targets(self, project, task_ids, *, sample_size=None):
        return pair_targets(project, task_ids), {}

    def value_clean(self, project, value, target: ReportPair) -> dict:
        pair = target
        value = only(value, set(self.value_fields))
        choices = project.label_set.get("choice")
        chosen = choice(value, "choice", choices, required=True)
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
            "choice": chosen, "dimensions": dict(dimensions), "reason": text(value, "reason"),
            "seconds_taken": seconds, "left_report_id": left, "right_report_id": right,
        }

    def consensus_key(self, value: dict, *, order: Mapping[int, Any] | None = None) -> Any:
        """The pair's outcome (``preference_outcome``), whichever side each report was on."""
        return preference_outcome(value["choice"], value["left_report_id"], value["right_report_id"], order=order)

    def key_value(self, parts: dict[str, str | None]) -> dict:
        return {**parts, "left_report_id": int(parts["left_report_id"]), "right_report_id": int(parts["right_report_id"])}

    def judge_label(self, target) -> str | None:
        return None

    def summary(self, value: dict, *, sides: dict | None = None) -> str:
        """``sides``: which report the page shows on the left (as A); None while it hides them."""
        choice = value.get("choice", "")
        if choice in ("left", "right") and sides:
            # A is the left report of this page; the annotator may have seen the pair swapped.
            position = "A" if value.get(f"{choice}_report_id") == sides.get("left") else "B"
            seen = "A" if choice == "left" else "B"
            return f"{position} is better" + ("" if position == seen else f" (shown to them as {seen})")
        return CHOICE_LABELS.get(choice, choice)

    def statistics(self, project: dict) -> dict | None:
        return None  # the human ranking has its own dashboard (``dashboards.human``)


PAIRWISE = Pairwise()
