"""Calibrated scores of a run: the judge's verdicts on every unit, an agreement project's expert
labels on a random sample of them, combined by prediction-powered inference
(``scoring.metrics.calibration``; the metrics and unit values: ``units``).

Population: the run's first-repeat verdicts with a label, of its judge configuration and
prompt version, on its reports (its systems × tasks), in the project's scope (its tasks, steps
and systems) and not hidden from the user by a blind study (``annotation.blind.blind_items``,
``hidden_reports``: what it hides is left out, never estimated). Labelled units: the project's items on
those verdicts that have an inclusion probability and a reference label — the curator's gold
label, else the annotators' label when they all agree (the agreement dashboard's rule); an
item whose annotators disagree and which has no gold label waits (``waiting_adjudication``:
until it is settled the labelled units under-represent the hard ones, so adjudicate first).

A unit is one verdict (``units``), or several (``unit_groups``: a DeepSynth checklist group, a
DeepScholar claim sentence): such a unit is labelled once every verdict of it has a reference
label, waits while any of them waits, and its π is its own (a project sampled by unit gives each
verdict of a drawn unit the unit's π). Which units a project's labels calibrate:
``units_counted``.
"""

from __future__ import annotations

from collections import defaultdict

from benchmark.models import System
from benchmark.naming import system_label
from core.accounts import is_global_curator
from scoring.metrics.calibration import (
    MIN_HUMAN_LABELS, calibrated_mean, difference_interval, labels_for_difference_width, labels_for_width,
    report_mean_weights,
)
from scoring.models import EvaluationRun, Verdict

from ..blind import blind_items, hidden_reports
from ..kinds import kinds_with
from ..models import AnnotationItem, AnnotationProject, Label, Role, TargetKind
from ..selectors.projects import project_role
from .sampling import RANDOM_DESIGNS
from .unit_groups import GROUP_METRICS, GroupMetric
from .units import JUDGED_FIELDS, UNIT_METRICS, JudgedVerdict, expert_value, judge_value

ALPHA = 0.05
Sampling = AnnotationProject.Sampling
SamplingUnit = AnnotationProject.SamplingUnit
MEANING = ("The judge scored every unit; experts labelled a random sample of them. The calibrated score "
           "corrects the judge's average by the mistakes the experts found on that sample (prediction-powered "
           "inference), so its 95 % interval holds whatever the judge's bias, and is narrower than the experts' "
           "own interval when the judge is informative.")


class CalibrationRefused(ValueError):
    """The project cannot calibrate this run; the message says why (a 4xx)."""


def calibration_projects(*, user, judge_config_id: int) -> list[AnnotationProject]:
    """Agreement projects on this judge configuration that ``user`` curates, newest first."""
    projects = AnnotationProject.objects.filter(kind__in=kinds_with("calibration"), judge_config_id=judge_config_id)
    if not is_global_curator(user):
        projects = projects.filter(memberships__user=user, memberships__role=Role.CURATOR)
    return [p for p in projects.order_by("-created_at", "-id") if project_role(project=p, user=user) == Role.CURATOR]


def _reference_labels(project: AnnotationProject, verdict_ids: set[int]) -> tuple[dict[int, tuple[object, float]],
                                                                                  set[int]]:
    """verdict id → (reference label, inclusion probability) of the project's resolved items on
    ``verdict_ids`` (matched here, not in SQL: a run's units may outnumber a query's parameters),
    and the verdict ids whose annotators disagree with no gold label yet (they wait)."""
    items = AnnotationItem.objects.filter(project=project, target_kind=TargetKind.VERDICT,
                                          inclusion_probability__isnull=False)
    rows = [row for row in items.values_list("pk", "target_id", "inclusion_probability", "gold__value")
            if row[1] in verdict_ids]
    given: dict[int, list] = defaultdict(list)
    for item_id, value in Label.objects.filter(item__in=items).values_list("item_id", "value"):
        if isinstance(value, dict) and value.get("label") is not None:
            given[item_id].append(value["label"])
    out, waiting = {}, set()
    for item_id, verdict_id, pi, gold in rows:
        if isinstance(gold, dict) and gold.get("label") is not None:
            out[verdict_id] = (gold["label"], pi)
        elif given.get(item_id) and len(set(map(str, given[item_id]))) == 1:
            out[verdict_id] = (given[item_id][0], pi)
        elif given.get(item_id):
            waiting.add(verdict_id)
    return out, waiting


def _population(project: AnnotationProject, user, run: EvaluationRun | None) -> list[JudgedVerdict]:
    config = run.judge_config if run is not None else project.judge_config
    steps = set(UNIT_METRICS) | {metric.step for metric in GROUP_METRICS.values()}
    verdicts = Verdict.objects.filter(
        judge_config=config, prompt_version=config.prompt_version, repeat=0, error="", step__in=sorted(steps),
        report__task__in=project.tasks.all(),
    ).exclude(label="")
    if run is not None:
        tasks = run.task_set.tasks.all() if run.task_set_id else run.tasks.all()
        verdicts = verdicts.filter(report__task__in=tasks, report__system__in=run.systems.all())
    if project.steps:
        verdicts = verdicts.filter(step__in=project.steps)
    systems = list(project.systems.values_list("pk", flat=True))
    if systems:
        verdicts = verdicts.filter(report__system__in=systems)
    # What a blind study still hides from the reader is left out (the exclusions of
    # ``visible_verdicts``): a project curator reads the run's judge scores as the run page does,
    # but never a verdict of an item still blind to them, nor one on a report a blind pair hides.
    # A verdict blind to them is kept, marked hidden, only so that the units holding it are left
    # out whole (``unit_groups``): its label and score are never read.
    blind = set(blind_items(user).filter(target_kind=TargetKind.VERDICT).values_list("target_id", flat=True))
    verdicts = verdicts.exclude(report__in=hidden_reports(user))
    return [JudgedVerdict(*row, hidden=row[0] in blind) for row in verdicts.values_list(*JUDGED_FIELDS)]


def _bucket(groups: dict, names: dict, *, metric: str, definition: str, unit: str, system_id: int) -> dict:
    return groups.setdefault((metric, system_id), {
        "metric": metric, "definition": definition, "unit": unit, "system_id": system_id,
        "system": names.get(system_id, str(system_id)),
        "all": [], "y": [], "yhat": [], "pi": [], "off_scale": 0, "waiting": 0, "part_labelled": 0})


def _verdict_inputs(groups: dict, names: dict, units: list[JudgedVerdict], labelled: dict, waiting: set) -> None:
    """One unit per verdict (``UNIT_METRICS``)."""
    for unit in units:
        for metric in UNIT_METRICS.get(unit.step, ()):
            f = judge_value(metric, unit.label, unit.score)
            if f is None:
                continue
            group = _bucket(groups, names, metric=metric.key, definition=metric.label, unit="verdict",
                            system_id=unit.system_id)
            group["all"].append(f)
            group["waiting"] += unit.verdict_id in waiting
            if unit.verdict_id in labelled:
                label, pi = labelled[unit.verdict_id]
                y = expert_value(metric, label)
                if y is None:
                    group["off_scale"] += 1
                    continue
                group["y"].append(y)
                group["yhat"].append(f)
                group["pi"].append(pi)


def _group_inputs(groups: dict, names: dict, metric: GroupMetric, units: list[JudgedVerdict], config,
                  labelled: dict, waiting: set) -> None:
    """Several verdicts per unit (``unit_groups``): the unit's value by the judge's labels and, once
    every verdict of it has a reference label, by the experts'; a unit with a verdict waiting for
    adjudication waits, one with a verdict not labelled yet is not labelled."""
    of_step = [unit for unit in units if unit.step == metric.step]
    by_id = {unit.verdict_id: unit for unit in of_step}
    for unit in metric.groups(of_step, config):
        if any(by_id[v].hidden for v in unit.verdict_ids):
            continue
        f = unit.value([by_id[v].label for v in unit.verdict_ids])
        if f is None:
            continue
        group = _bucket(groups, names, metric=metric.key, definition=metric.label, unit=metric.unit,
                        system_id=unit.system_id)
        group["all"].append(f)
        group.setdefault("report_of_all", []).append(unit.report_id)
        if any(v in waiting for v in unit.verdict_ids):
            group["waiting"] += 1
            continue
        if not all(v in labelled for v in unit.verdict_ids):
            group["part_labelled"] += any(v in labelled for v in unit.verdict_ids)
            continue
        labels = [str(labelled[v][0]) for v in unit.verdict_ids]
        y = unit.value(labels) if all(label in metric.scale for label in labels) else None
        if y is None:
            group["off_scale"] += 1
            continue
        group["y"].append(y)
        group["yhat"].append(f)
        group["pi"].append(labelled[unit.verdict_ids[0]][1])  # a drawn unit's verdicts share its π
        group.setdefault("report_of_labelled", []).append(unit.report_id)
    for (key, _), group in groups.items():
        if key == metric.key:
            _mean_of_report_means(group)


def _mean_of_report_means(group: dict) -> None:
    """Scale a unit metric's values so that their mean over units is the papers' system score,
    the mean over the system's reports of each report's mean over its units: each unit's value,
    the judge's and the experts', × U / (R · n_r) (``report_mean_weights``; U units of the
    system, R reports, n_r of them in the unit's report). The factors are fixed by the population,
    so the PPI figures of the scaled values estimate that mean of report means."""
    reports = group.pop("report_of_all")
    factor = dict(zip(reports, report_mean_weights(reports).tolist()))
    group["all"] = [value * factor[report] for value, report in zip(group["all"], reports)]
    labelled = group.pop("report_of_labelled", [])
    group["y"] = [value * factor[report] for value, report in zip(group["y"], labelled)]
    group["yhat"] = [value * factor[report] for value, report in zip(group["yhat"], labelled)]


def units_counted(project: AnnotationProject) -> tuple[bool, list[GroupMetric]]:
    """Whether the project's labels calibrate one-verdict metrics, and which several-verdict ones:
    a sample of verdicts cannot give a unit of several its π, and a sample of units is clustered,
    which a per-verdict interval ignores; a project of every verdict (π = 1) calibrates both."""
    if project.sampling not in RANDOM_DESIGNS:
        return True, list(GROUP_METRICS.values())
    if project.sampling_unit == SamplingUnit.VERDICT:
        return True, []
    return False, [GROUP_METRICS[project.sampling_unit]]


def calibrated_scores(*, run: EvaluationRun | None, project: AnnotationProject, user) -> dict:
    """Over ``run``'s verdicts (``None``: every verdict in the project's scope), per system and
    metric: judge-only, human-only and PPI estimates with intervals, n_judge, n_human and the
    effective-sample-size gain; per metric, the best system against the second
    (PPI intervals of the difference). Raises ``PermissionError`` unless ``user`` curates the
    project, ``CalibrationRefused`` when the project cannot calibrate the run.

    The inputs are read here; the intervals (``ppi_py``, which loads numba, statsmodels and pandas:
    +158 MiB) are computed by a worker and stored (``stored``): ``statistics`` says whether the
    figures are ``current``, ``updating`` (a worker computes newer ones; the figures shown, if
    any, are of the inputs as they were at ``computed_at``) or ``no_worker``."""
    if project_role(project=project, user=user) != Role.CURATOR:
        raise PermissionError("only the project's curators read its calibrated scores")
    if project.kind not in kinds_with("calibration"):
        raise CalibrationRefused(f"project: {project.name!r} is not an agreement project (it labels no verdicts)")
    if project.judge_config_id is None:
        raise CalibrationRefused(f"project: {project.name!r} names no judge configuration")
    if run is not None and project.judge_config_id != run.judge_config_id:
        raise CalibrationRefused(f"project: {project.name!r} labels another judge configuration's verdicts than "
                                 f"run #{run.pk}'s")
    units = _population(project, user, run)
    labelled, waiting = _reference_labels(project, {u.verdict_id for u in units if not u.hidden})
    names = {pk: system_label(name, version, display) for pk, name, version, display in
             System.objects.filter(pk__in={u.system_id for u in units}).values_list(
                 "pk", "name", "version", "display_name")}
    groups: dict[tuple[str, int], dict] = {}
    per_verdict, group_metrics = units_counted(project)
    if per_verdict:
        _verdict_inputs(groups, names, [u for u in units if not u.hidden], labelled, waiting)
    config = run.judge_config if run is not None else project.judge_config
    for metric in group_metrics:
        _group_inputs(groups, names, metric, units, config, labelled, waiting)
    inputs = [groups[key] for key in sorted(groups, key=lambda k: (k[0], groups[k]["system"]))]
    head = {
        "run_id": run.pk if run is not None else None, "project_id": project.pk, "project": project.name,
        "sampling": project.sampling, "sampling_unit": project.sampling_unit,
        "random_sample": project.sampling in RANDOM_DESIGNS,
        "warning": _warning(project), "confidence": 1 - ALPHA, "min_human_labels": MIN_HUMAN_LABELS,
        "meaning": MEANING,
    }
    if all(len(group["y"]) < MIN_HUMAN_LABELS for group in inputs):
        # No interval to compute (no PPI, nothing of ppi_py): the judge's means, here and now.
        return {**head, "metrics": calibration_figures(inputs), "statistics": {"state": "current"}}
    from .stored import calibrated_figures_stored

    metrics, statistics = calibrated_figures_stored(project=project, run=run, user=user, inputs=inputs)
    return {**head, "metrics": metrics, "statistics": statistics}


def calibration_figures(inputs: list[dict]) -> list[dict]:
    """The figures of ``calibrated_scores`` from its inputs (one per system and metric, in the order
    shown): ``calibrated_mean`` per system, the best system against the second per metric. A
    worker's computation (it imports ``ppi_py`` once some system has ``MIN_HUMAN_LABELS`` labels)."""
    metrics: dict[str, dict] = {}
    for group in inputs:
        result = calibrated_mean(group["y"], group["yhat"], group["all"], inclusion=group["pi"], alpha=ALPHA)
        entry = metrics.setdefault(group["metric"], {"metric": group["metric"], "definition": group["definition"],
                                                     "unit": group.get("unit", "verdict"), "systems": []})
        entry["systems"].append({"system_id": group["system_id"], "system": group["system"],
                                 "off_scale_labels": group["off_scale"], "waiting_adjudication": group["waiting"],
                                 # units with some but not all verdicts labelled (inputs stored before units: none)
                                 "part_labelled": group.get("part_labelled", 0),
                                 **result})
    for entry in metrics.values():
        entry["best_vs_second"] = _best_vs_second(entry["systems"])
    return list(metrics.values())


def _warning(project: AnnotationProject) -> str:
    if project.sampling == Sampling.CHOSEN:
        return ("This project's verdicts were chosen by hand, not sampled at random: its labels cannot calibrate "
                "the judge, so no item of it counts (create a project with random sampling).")
    if project.sampling == Sampling.ALL and project.items.filter(status=AnnotationItem.Status.OPEN).exists():
        return ("This project holds every verdict in scope and offers them in their stored order: until it is "
                "complete, the labelled ones are not a random sample and the interval may not hold.")
    return ""


def _best_vs_second(systems: list[dict]) -> dict | None:
    ranked = sorted((s for s in systems if s["ppi"] is not None), key=lambda s: -s["ppi"]["estimate"])
    if len(ranked) < 2:
        return None
    best, second = ranked[0], ranked[1]
    diff = difference_interval(best["ppi"], second["ppi"], alpha=ALPHA)
    return {"best": best["system"], "second": second["system"], "ppi": diff,
            "separated": diff["low"] > 0, "parts": [best, second]}


def calibrated_scores_shown(result: dict) -> dict:
    """A ``calibrated_scores`` answer as the API and the pages show it: without the planner's internals."""
    for entry in result["metrics"]:
        for system in entry["systems"]:
            for key in ("rectifier_var", "judge_var", "z"):
                system.pop(key, None)
        if entry["best_vs_second"]:
            entry["best_vs_second"].pop("parts", None)
    return result


def labels_plan(result: dict, *, metric: str, width: float, separation: bool = False) -> dict:
    """The planner, from a ``calibrated_scores`` answer: per system (or for the best-vs-second
    difference when ``separation``), how many more expert labels are expected to bring the PPI
    interval of ``metric`` below ``width`` — labelled units (``unit``: a verdict, or a whole
    checklist group or claim sentence)."""
    entry = next((m for m in result["metrics"] if m["metric"] == metric), None)
    if entry is None:
        known = ", ".join(m["metric"] for m in result["metrics"]) or "none"
        raise CalibrationRefused(f"metric: {metric!r} has no judged unit here (metrics: {known})")
    unit = entry.get("unit", "verdict")  # "more" counts these: a unit of several verdicts is labelled whole
    if separation:
        pair = entry["best_vs_second"]
        if pair is None:
            return {"metric": metric, "unit": unit, "width": width, "separation": True,
                    "more": None, "reason": f"needs two systems with at least {MIN_HUMAN_LABELS} labels each"}
        return {"metric": metric, "unit": unit, "width": width, "separation": True,
                "between": [pair["best"], pair["second"]], **labels_for_difference_width(pair["parts"], width)}
    return {"metric": metric, "unit": unit, "width": width, "separation": False,
            "systems": [{"system": s["system"], **labels_for_width(s, width)} for s in entry["systems"]]}


PLAN_ASSUMPTION = ("Assumes the variances stay at their current estimates (the judge's spread over all units and "
                   "that of the experts' corrections on the sample), the same λ, and new labels drawn as the current "
                   "ones were; the interval narrows as 1/√n in the labels.")
