"""rating: experts score a report (or one of its components) on rubric criteria, on a declared
scale, blind to the system that wrote it — the human side of SurveyLens' 1–5 rubric judge,
SciSage's 0–100 rubrics and AutoSurvey-style coverage/structure/relevance studies.

value ``{scores: {criterion: number}, rationale}``: every criterion of the item scored, each on
the project's scale (``scale``: ``{min, max, anchors: {point: text}, adjudicate_beyond}``;
``{"min": 1, "max": 5}`` by default, 0–100 allowed). Criteria: the project's ``criteria``, or,
when it lists none, the item's task's rubric criteria (those of the project's component).
Two raters disagree when their scores of any criterion are more than ``adjudicate_beyond``
apart (default a quarter of the scale: 1 on 1–5, 25 on 0–100); then a curator adjudicates.
"""

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Q

from benchmark.models import ReviewStatus, RubricCriterion, Task

from ..models import AnnotationProject, TargetKind
from .base import AnnotationKind, only, reports_by_task, text

DEFAULT_SCALE = {"min": 1, "max": 5}
SCALE_LIMITS = (0, 100)  # the widest scale a project may declare (SciSage's 0–100 rubrics)
COMPONENTS = ("report", *RubricCriterion.Component.values)


def _number(raw: Any, field: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise ValueError(f"{field}: expected a number, not {raw!r}")
    return raw


def scale_clean(scale: Any) -> dict:
    """The declared scale with defaults filled in; ``ValueError`` naming ``scale.<field>``."""
    if scale in (None, {}):
        scale = dict(DEFAULT_SCALE)
    if not isinstance(scale, dict):
        raise ValueError("scale: expected an object {min, max, anchors, adjudicate_beyond}")
    unknown = sorted(set(scale) - {"min", "max", "anchors", "adjudicate_beyond"})
    if unknown:
        raise ValueError(f"scale.{unknown[0]}: unknown field (allowed: adjudicate_beyond, anchors, max, min)")
    low = _number(scale.get("min", DEFAULT_SCALE["min"]), "scale.min")
    high = _number(scale.get("max", DEFAULT_SCALE["max"]), "scale.max")
    if not SCALE_LIMITS[0] <= low < high <= SCALE_LIMITS[1]:
        raise ValueError(f"scale.max: the scale must run upwards within {SCALE_LIMITS[0]}–{SCALE_LIMITS[1]}"
                         f" ({low}–{high} does not)")
    anchors = scale.get("anchors") or {}
    if not isinstance(anchors, dict):
        raise ValueError("scale.anchors: expected an object {point: what it means}")
    clean_anchors = {}
    for point, meaning in anchors.items():
        try:
            number = float(point)
        except (TypeError, ValueError):
            raise ValueError(f"scale.anchors.{point}: not a point of the scale") from None
        if not low <= number <= high:
            raise ValueError(f"scale.anchors.{point}: outside the scale {low}–{high}")
        if not isinstance(meaning, str) or not meaning.strip():
            raise ValueError(f"scale.anchors.{point}: say what the point means")
        clean_anchors[str(int(number)) if number == int(number) else str(number)] = meaning.strip()
    beyond = scale.get("adjudicate_beyond")
    beyond = round((high - low) / 4, 6) if beyond is None else _number(beyond, "scale.adjudicate_beyond")
    if beyond < 0:
        raise ValueError("scale.adjudicate_beyond: a distance ≥ 0")
    return {"min": low, "max": high, "anchors": clean_anchors, "adjudicate_beyond": beyond}


def criteria_clean(criteria: Any) -> list[str]:
    if criteria in (None, ""):
        return []
    if isinstance(criteria, str) or not isinstance(criteria, (list, tuple)):
        raise ValueError("criteria: expected a list of names")
    names = []
    for name in criteria:
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ValueError(f"criteria: {name!r} is not a name (non-empty text up to 100 characters)")
        names.append(name.strip())
    if len(set(names)) != len(names):
        raise ValueError("criteria: each criterion once")
    return names


def task_criteria(project: AnnotationProject, task_id: int | None) -> list[str]:
    """The criteria an item of ``task_id`` is rated on: the project's, else the task's rubric
    criteria not rejected (its own and its discipline's; of the project's component, unless
    the whole report is rated), by component and position."""
    if project.criteria:
        return list(project.criteria)
    if task_id is None:
        return []
    discipline = Task.objects.filter(pk=task_id).values("survey__discipline")
    rows = RubricCriterion.objects.filter(Q(task_id=task_id) | Q(task__isnull=True, discipline__in=discipline)).exclude(
        review_status=ReviewStatus.REJECTED)
    if project.component != "report":
        rows = rows.filter(component=project.component)
    return list(dict.fromkeys(rows.order_by("component", "position", "pk").values_list("name", flat=True)))


class Rating(AnnotationKind):
    name = AnnotationProject.Kind.RATING
    main_field = "scores"
    value_fields = ("scores", "rationale")
    target_kinds = (TargetKind.REPORT,)
    # Blind to the system like pairwise: named only at close, else each label teaches its style.
    default_reveal = AnnotationProject.Reveal.AT_CLOSE
    key_fields = ("scores",)
    # what project_create takes for this kind beyond the common fields
    create_fields = ("systems", "component", "criteria", "scale")
    undo_refused = (
        "your rating on item {position} is final: this project is blind, and {when} which"
        " system wrote the report and any other expert's scores; ask a curator to correct it"
    )
    dashboard_sections = ("progress", "inter_annotator", "rating")
    settings_fields = ("criteria", "scale")
    export_columns = ("scores", "rationale")
    label_form = "annotation.forms.RatingForm"
    panel_view = "annotation.views.display.rating_view"

    def label_set_defaults(self, *, judge_labels: Sequence[str] = ()) -> dict:
        return {}  # scores are numbers on the scale, not labels of a set

    def settings_clean(self, *, fields: dict) -> dict:
        component = fields.get("component") or "report"
        if component not in COMPONENTS:
            raise ValueError(f"component: {component!r} is not one of {', '.join(COMPONENTS)}")
        return {"criteria": criteria_clean(fields.get("criteria")), "scale": scale_clean(fields.get("scale")),
                "component": component}

    def targets(self, project, task_ids, *, sample_size=None):
        """One item per report of the tasks (of the project's systems, empty: all), each task's
        reports in an order drawn from the project's secret seed (by system name, the order
        would tell which system wrote the next report)."""
        by_task = reports_by_task(project, task_ids, order=("task", "pk"))
        out = []
        for task_id, report_ids in sorted(by_task.items()):
            if not task_criteria(project, task_id):
                raise ValueError(f"criteria: task {task_id} has no rubric criteria; list the criteria on the project")
            random.Random(f"{project.seed}:rating:{task_id}").shuffle(report_ids)
            out.extend((TargetKind.REPORT, report_id, task_id, None) for report_id in report_ids)
        return out, {}

    def value_clean(self, project, value, target) -> dict:
        value = only(value, set(self.value_fields))
        scale = project.scale or scale_clean(None)
        criteria = task_criteria(project, getattr(target, "task_id", None))
        scores = value.get("scores")
        if not isinstance(scores, dict) or not scores:
            raise ValueError(f"value.scores: required, an object {{criterion: number}} for {', '.join(criteria)}")
        for name in scores:
            if name not in criteria:
                raise ValueError(f"value.scores.{name}: unknown criterion (known: {', '.join(criteria)})")
        clean = {}
        for name in criteria:
            if name not in scores or scores[name] is None:
                raise ValueError(f"value.scores.{name}: required")
            score = _number(scores[name], f"value.scores.{name}")
            if not scale["min"] <= score <= scale["max"]:
                raise ValueError(f"value.scores.{name}: {score} is outside the scale {scale['min']}–{scale['max']}")
            clean[name] = score
        return {"scores": clean, "rationale": text(value, "rationale")}

    def consensus_key(self, value: dict, *, order: Mapping[int, Any] | None = None) -> Any:
        return tuple(sorted(value["scores"].items()))

    def labels_disagree(self, project, values, *, judge_label=None) -> bool:
        """Some criterion's scores are more than ``adjudicate_beyond`` apart."""
        beyond = (project.scale or scale_clean(None))["adjudicate_beyond"]
        per_criterion: dict[str, list[float]] = defaultdict(list)
        for value in values:
            for name, score in value["scores"].items():
                per_criterion[name].append(score)
        return any(max(scores) - min(scores) > beyond for scores in per_criterion.values())

    def judge_label(self, target) -> str | None:
        return None  # the judge's rubric scores are compared in ``statistics``, not per item

    def summary(self, value: dict, *, sides: dict | None = None) -> str:
        scores = " · ".join(f"{name} {score:g}" for name, score in (value.get("scores") or {}).items())
        return scores + (f" — {value['rationale']}" if value.get("rationale") else "")

    def agreement_units(self, project: dict) -> tuple[list, list, list] | None:
        """Krippendorff's α over units = item × criterion, the scores as interval values:
        ``(units, coders, scores)``, one entry per score."""
        from ..models import Label

        units: dict[tuple[int, str], int] = {}
        unit, coder, score = [], [], []
        rows = Label.objects.filter(project_id=project["id"]).order_by("item_id", "pk").values_list(
            "item_id", "annotator_id", "value")
        for item_id, annotator_id, value in rows.iterator(chunk_size=5000):
            for name, number in sorted((value.get("scores") or {}).items()):
                unit.append(units.setdefault((item_id, name), len(units)))
                coder.append(annotator_id)
                score.append(float(number))
        return unit, coder, score

    def statistics(self, project: dict) -> dict | None:
        from .rating_stats import rating_statistics

        return rating_statistics(project)


RATING = Rating()
