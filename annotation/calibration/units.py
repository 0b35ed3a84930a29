"""Which metrics are means over judged units, and the value one verdict (the judge's) or one
expert label gives its unit.

A calibrated score (``scoring.metrics.calibration``) needs a metric that is the mean of one
value per verdict, so that an expert's corrected label on that verdict gives the same unit its
true value. Each entry maps a judge step to the metrics it feeds and the value of each label,
the pipelines' own label maps (``scoring.pipelines``), on the scale the paper reports:

* DeepSynth-Eval (§3.4): ``item_reward``, the mean item reward r ∈ {+1 correct, 0 omitted,
  −1 incorrect} (eq. 1), and ``item_correct``, the share judged correct. The group scores
  clip each group's sum at its threshold (eq. 3), a function of several verdicts: their unit
  is the group (``unit_groups``).
* ReportBench (§3.2): ``match_rate`` (a cited statement consistent with its source: 1) and
  ``factual_accuracy`` (a non-cited statement correct: 1); the pipeline's factual accuracy is a
  majority over repeats, a unit here is the first repeat's verdict, the one experts see.
* DeepScholar-bench (§8.3): ``nugget_coverage`` (strict: supported 1, else 0),
  ``relevance_rate`` (grade / 2, eq. of §8.3.2), ``citation_precision`` (supported 1; the
  paper's per-citation mean). Claim coverage asks whether *any* citation within a window
  supports a sentence, several verdicts per unit: its unit is the sentence (``unit_groups``).
* SurveyLens rubric and SurveyScope quality scores: the judge's score on each criterion or
  dimension (1–5, 1–10), the expert's numeric label on the same scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scoring.pipelines import deepsynth, reportbench
from scoring.pipelines.deepscholar.citation_support import CITATIONS, SUPPORT_LABELS
from scoring.pipelines.deepscholar.nuggets import NUGGET_LABELS, NUGGETS
from scoring.pipelines.deepscholar.relevance import GRADE_LABELS, RELEVANCE
from scoring.pipelines.surveys.surveylens import RUBRIC
from scoring.pipelines.surveys.surveyscope import QUALITY


JUDGED_FIELDS = ("pk", "report__system_id", "step", "label", "score", "report_id", "report__task_id", "target_kind",
                 "target_id", "target_key")  # a ``JudgedVerdict``'s, as ``values_list`` reads them


@dataclass(frozen=True)
class JudgedVerdict:
    """A verdict of a calibrated population (``selectors``): what its unit value and unit need."""

    verdict_id: int
    system_id: int
    step: str
    label: str
    score: float | None
    report_id: int
    task_id: int
    target_kind: str
    target_id: int | None
    target_key: str
    hidden: bool  # a blind study hides it from the reader: left out, and so is every unit it belongs to


@dataclass(frozen=True)
class UnitMetric:
    key: str
    label: str  # what the number is, in words
    values: Mapping[str, float] | None  # label → unit value; None: the verdict's score and a numeric expert label


UNIT_METRICS: dict[str, tuple[UnitMetric, ...]] = {
    deepsynth.STEP: (
        UnitMetric("item_reward", "mean checklist item reward (+1 correct, 0 omitted, −1 incorrect)",
                   {k: float(v) for k, v in deepsynth.LABEL_SCORES.items()}),
        UnitMetric("item_correct", "share of checklist items covered correctly",
                   {k: 1.0 if k == "correct" else 0.0 for k in deepsynth.LABEL_SCORES}),
    ),
    reportbench.CONSISTENCY: (
        UnitMetric("match_rate", "share of cited statements consistent with their source",
                   dict(reportbench.CONSISTENCY_LABELS)),
    ),
    reportbench.FACTUALITY: (
        UnitMetric("factual_accuracy", "share of non-cited statements that are correct",
                   dict(reportbench.FACTUALITY_LABELS)),
    ),
    NUGGETS: (
        UnitMetric("nugget_coverage", "share of nuggets supported (strict)",
                   {k: 1.0 if k == "support" else 0.0 for k in NUGGET_LABELS}),
    ),
    RELEVANCE: (
        UnitMetric("relevance_rate", "mean relevance grade / 2", {k: v / 2.0 for k, v in GRADE_LABELS.items()}),
    ),
    CITATIONS: (
        UnitMetric("citation_precision", "share of citations that support their sentence", dict(SUPPORT_LABELS)),
    ),
    RUBRIC: (UnitMetric("rubric_score", "mean rubric criterion score (1–5)", None),),
    QUALITY: (UnitMetric("quality_score", "mean quality dimension score (1–10)", None),),
}


def judge_value(metric: UnitMetric, label: str, score: float | None) -> float | None:
    """The unit's value by the judge's verdict; ``None`` when the verdict has none."""
    if metric.values is None:
        return float(score) if score is not None else None
    return metric.values.get(label)


def expert_value(metric: UnitMetric, label) -> float | None:
    """The unit's value by the expert's label; ``None`` for a label off the metric's scale."""
    if label is None:
        return None
    if metric.values is None:
        try:
            return float(label)
        except (TypeError, ValueError):
            return None
    return metric.values.get(str(label))
