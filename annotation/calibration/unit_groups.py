"""Calibrated metrics whose unit holds several verdicts: the unit's value is the pipeline's own
function of all of them, applied once to the judge's labels and once to the experts' reference
labels on the same verdicts (``selectors.calibrated_scores``).

* DeepSynth-Eval (§3.4, eq. 3, 6): ``group_score``, a checklist group's saturated score
  max(0, min(1, S_k / θ_k)) in [0, 1] over its judged items (``deepsynth.saturated_group_score``:
  θ as ``group_threshold`` scales it for failed items; the judge configuration's
  ``group_score`` variant). Its units are the (report, group) pairs with a judged item; the
  pipeline's ``overall`` is the same groups' mean × 100, per report, and the system's the mean
  of that over its reports: the calibrated figure is that mean of report means
  (``selectors``, ``report_mean_weights``).
* DeepScholar-bench (§8.3.3): ``claim_coverage``, 1 when the query context or any document cited
  within ±w sentences of a claim sentence supports it (``citation_support.claim_support_row`` at
  the configuration's ``claim_window``). Its units are the (report, claim sentence) pairs with a
  judged pair; a sentence the labels leave undetermined (nothing supports it and a pair in its
  window has no verdict) has no value, as in the pipeline. A report's claim coverage is the mean
  over its sentences, the system's the mean over its reports: so is the calibrated figure.

A unit counts only when every one of its verdicts is in the population: one hidden by a blind
study leaves the whole unit out. Sampling by unit (``AnnotationProject.sampling_unit``) draws
these same units (:func:`sampling_units`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from benchmark.models import Report, Task
from scoring.models import Verdict
from scoring.pipelines import deepsynth
from scoring.pipelines.deepscholar.citation_support import (
    CITATIONS, PAIR_KIND, SUPPORT_LABELS, claim_pair_keys, claim_support_row,
)
from scoring.pipelines.deepscholar.documents import report_citations
from scoring.pipelines.deepscholar.inputs import claim_windows

from ..models import AnnotationProject
from .units import JUDGED_FIELDS, JudgedVerdict

SamplingUnit = AnnotationProject.SamplingUnit
BATCH = 2000  # verdict ids per query
# Below this many labelled units the card cautions that the interval may be short: in the simulation of
# docs/statistics.md ("Evidence for units of several verdicts") uniform samples of 20 checklist groups of
# reports of unequal size covered 0.869 at nominal 0.95, of 40 groups 0.932 (simulate_study ppi_units).
UNITS_FOR_COVERAGE = 40


@dataclass(frozen=True)
class VerdictGroup:
    """One unit: its verdicts and its value as a function of one label per verdict (in order);
    ``None`` when those labels leave it undetermined."""

    system_id: int
    report_id: int  # the system's score is a mean over its reports of each report's mean over units
    verdict_ids: tuple[int, ...]
    value: Callable[[Sequence[str]], float | None]


@dataclass(frozen=True)
class GroupMetric:
    key: str
    label: str  # what the number is, in words
    unit: str  # the ``SamplingUnit`` that draws these units
    units_name: str  # the units in words, plural (what a sample by this unit draws)
    step: str
    scale: frozenset[str]  # the labels with a value (an expert label outside gives the unit none)
    groups: Callable[[list[JudgedVerdict], object], list[VerdictGroup]]  # (the step's verdicts, judge configuration)


def _group_value(group, n_items: int, variant: str, labels: Sequence[str]) -> float:
    return deepsynth.saturated_group_score(group, n_items, labels, variant=variant)


def checklist_groups(verdicts: list[JudgedVerdict], config) -> list[VerdictGroup]:
    """The (report, checklist group) units of DeepSynth verdicts: each counted group
    (``checklist_for_scoring``) with a judged item, its value eq. 3 of the items' labels."""
    variant = deepsynth.group_score_variant(config)
    by_item = {(v.report_id, v.target_id): v for v in verdicts if v.target_kind == deepsynth.TARGET_KIND}
    reports = {v.report_id: (v.system_id, v.task_id) for v in verdicts}
    specs = {task.pk: deepsynth.checklist_for_scoring(task)
             for task in Task.objects.filter(pk__in={task for _, task in reports.values()})}
    out = []
    for report_id, (system_id, task_id) in sorted(reports.items()):
        for spec in specs.get(task_id, ()):
            judged = [by_item[(report_id, item.id)] for item in spec.items if (report_id, item.id) in by_item]
            if judged:
                out.append(VerdictGroup(system_id, report_id, tuple(v.verdict_id for v in judged),
                                        partial(_group_value, spec.group, len(spec.items), variant)))
    return out


def _claim_value(claim: int, citations, window: int, keys: Sequence[str], labels: Sequence[str]) -> float | None:
    supports = {key: label == "support" for key, label in zip(keys, labels, strict=True)}
    row = claim_support_row(claim, supports, citations, window)
    return None if row is None else float(row.any())


def claim_sentences(verdicts: list[JudgedVerdict], config) -> list[VerdictGroup]:
    """The (report, claim sentence) units of DeepScholar citation-pair verdicts at the configured
    window: the pairs of its window that have a verdict; its value 1 when one supports it."""
    window, _ = claim_windows(config)
    by_pair = {(v.report_id, v.target_key): v for v in verdicts if v.target_kind == PAIR_KIND}
    systems = {v.report_id: v.system_id for v in verdicts}
    out = []
    for report in Report.objects.filter(pk__in=systems).order_by("pk"):
        citations = report_citations(report)
        for claim in citations.claims:
            keys = [key for key in claim_pair_keys(claim.index, citations, window) if (report.pk, key) in by_pair]
            if keys:
                verdict_ids = tuple(by_pair[(report.pk, key)].verdict_id for key in keys)
                out.append(VerdictGroup(systems[report.pk], report.pk, verdict_ids,
                                        partial(_claim_value, claim.index, citations, window, keys)))
    return out


GROUP_METRICS: dict[str, GroupMetric] = {
    SamplingUnit.GROUP: GroupMetric(
        "group_score", "saturated checklist group score, eq. 3, averaged over each report's groups, then over "
                       "the reports (0–1; the pipeline's overall is it × 100)",
        SamplingUnit.GROUP, "DeepSynth checklist groups", deepsynth.STEP, frozenset(deepsynth.LABEL_SCORES),
        checklist_groups),
    SamplingUnit.SENTENCE: GroupMetric(
        "claim_coverage", "share of a report's claim sentences supported by a citation within the window or the "
                          "query, averaged over the reports",
        SamplingUnit.SENTENCE, "DeepScholar claim sentences", CITATIONS, frozenset(SUPPORT_LABELS), claim_sentences),
}


def group_metrics_for(steps: Sequence[str]) -> list[GroupMetric]:
    """The several-verdict metrics of these judge steps."""
    return [metric for metric in GROUP_METRICS.values() if metric.step in steps]


def sampling_units(verdict_ids: list[int], unit: str, config) -> dict[int, int]:
    """verdict id → its unit (an index) for a sample drawn by ``unit``: the metric's own units
    (``GroupMetric.groups`` on ``config``'s settings), so a drawn unit holds exactly the verdicts
    its value reads; a verdict of no unit (an item or group rejected since, a pair beyond the
    claim window) is absent: a unit sample does not hold it."""
    metric = GROUP_METRICS[unit]
    rows = []
    for start in range(0, len(verdict_ids), BATCH):
        rows += Verdict.objects.filter(pk__in=verdict_ids[start:start + BATCH], step=metric.step).values_list(
            *JUDGED_FIELDS)
    groups = metric.groups([JudgedVerdict(*row, hidden=False) for row in rows], config)
    return {verdict: index for index, group in enumerate(groups) for verdict in group.verdict_ids}


def sampling_design_label(project: AnnotationProject) -> str:
    """How a project chose its verdicts, in words, naming the unit a sample by unit draws (the
    calibrated card; curators only: annotators are not told the unit)."""
    label = project.get_sampling_display().lower()
    metric = GROUP_METRICS.get(project.sampling_unit)
    if metric is None or project.sampling in (AnnotationProject.Sampling.ALL, AnnotationProject.Sampling.CHOSEN):
        return label
    return f"{label}, drawn as whole {metric.units_name}"


def drawn_units(project: AnnotationProject) -> int | None:
    """How many units a project sampled by unit holds (every verdict of each); ``None`` for a
    project of single verdicts."""
    if project.sampling_unit not in GROUP_METRICS:
        return None
    verdict_ids = list(project.items.values_list("target_id", flat=True))
    return len(set(sampling_units(verdict_ids, project.sampling_unit, project.judge_config).values()))
