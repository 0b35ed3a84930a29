"""Preference-aligned rubric weights (SurveyLens §3.3.1, eq. 3), learned from stored rows.

The inputs are a finished SurveyLens run's per-report aspect scores (``aspect_<component>_<aspect>``
on its score cards: the mean 1–5 score of each aspect's criteria) and pairwise preferences between
reports of the same task (``PairwisePreference``, why this lives in annotation: experts' choices, or imported LLM
proxies as in the paper). For one discipline and one component, each preference with a winner
gives a row of winner and loser aspect scores; :func:`scoring.metrics.bt_aspect_weights` fits

    ŵ = argmax_{w ≥ 0} Σ log σ(wᵀ(x̃_winner − x̃_loser)) − α‖w‖²,   w̃ = ŵ / Σŵ,

and every criterion of aspect k (same discipline and component, not rejected) gets weight w̃_k,
written through ``proposable_update`` so each change has its revision row. Ties, pairs whose
reports were not scored in the run, and pairs missing an aspect are counted, not used. A
re-score of the run (``rescore``) then recomputes ``rubric_<component>`` with the new weights.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction

from benchmark.models import RubricCriterion, ReviewStatus
from benchmark.services.history import proposable_update
from scoring.metrics import bt_aspect_weights, rubric_score
from scoring.models import EvaluationRun, ScoreCard
from scoring.pipelines.surveys.scored_calls import slug
from scoring.pipelines.surveys.surveylens import COMPONENTS, RUBRIC_SCALE

from ..models import PairwisePreference

OVERALL_COMPONENTS = ("report", "overall", "")  # preferences about the whole survey also speak for a component


class WeightFitError(ValueError):
    """The stored rows cannot support a fit (wrong run, no usable preference, no aspect)."""


@dataclass
class WeightFit:
    component: str
    discipline_id: int
    aspects: list[str]
    weights: dict[str, float]
    pairs_used: int
    skipped: dict[str, int] = field(default_factory=dict)
    concordance_before: float | None = None  # share of used pairs whose winner scores higher
    concordance_after: float | None = None
    criteria_updated: int = 0
    variant: str = "paper"  # "upstream": the released bt.py, on raw 1–5 scores


def _aspect_scores(run: EvaluationRun, component: str, discipline_id: int) -> tuple[dict[int, dict], list[str]]:
    """Per report of the run in the discipline, its aspect scores for ``component``; and the aspects."""
    cards = ScoreCard.objects.filter(run=run, report__isnull=False, report__task__survey__discipline_id=discipline_id)
    criteria = _criteria(component, discipline_id)
    aspects = list(dict.fromkeys(c.aspect for c in criteria))
    keys = {aspect: f"aspect_{component}_{slug(aspect)}" for aspect in aspects}
    scores = {}
    for card in cards.only("report_id", "metrics"):
        values = {a: card.metrics.get(k) for a, k in keys.items()}
        scores[card.report_id] = {a: float(v) for a, v in values.items() if isinstance(v, (int, float))}
    return scores, aspects


def _criteria(component: str, discipline_id: int) -> list[RubricCriterion]:
    return list(
        RubricCriterion.objects.filter(discipline_id=discipline_id, component=component, task__isnull=True,
                                       scale_max=RUBRIC_SCALE)
        .exclude(review_status=ReviewStatus.REJECTED)
        .order_by("position", "id")
    )


def _concordance(weights: np.ndarray, winners: np.ndarray, losers: np.ndarray) -> float:
    win = rubric_score(weights, winners, x_max=RUBRIC_SCALE)
    lose = rubric_score(weights, losers, x_max=RUBRIC_SCALE)
    return float(np.mean(np.asarray(win) > np.asarray(lose)))


def rubric_weights_fit(
    *, run: EvaluationRun, component: str, discipline_id: int, preference_source: str = "",
    alpha: float = 0.1, apply: bool = False, actor=None, variant: str = "paper",
) -> WeightFit:
    """Fit the aspect weights of one component of one discipline and, with ``apply``, store them.
    ``variant="upstream"`` fits on the raw 1–5 scores as the released ``bt.py`` does
    (:func:`bt_aspect_weights`); the paper's eq. 3 normalises them to x / 5."""
    if run.protocol != "surveylens":
        raise WeightFitError(f"run #{run.pk} is a {run.protocol} run; weights are fitted on a surveylens run")
    if component not in COMPONENTS:
        raise WeightFitError(f"unknown component {component!r}; choose one of {', '.join(COMPONENTS)}")
    scores, aspects = _aspect_scores(run, component, discipline_id)
    if not aspects:
        raise WeightFitError(f"no {component} rubric criteria for this discipline: nothing to weight")

    preferences = PairwisePreference.objects.filter(
        report_left_id__in=list(scores), report_right_id__in=list(scores),
        component__in=[component, *OVERALL_COMPONENTS],
    )
    if preference_source:
        preferences = preferences.filter(source=preference_source)
    skipped: dict[str, int] = defaultdict(int)
    winners, losers = [], []
    for left, right, choice in preferences.values_list("report_left_id", "report_right_id", "choice"):
        if choice not in (PairwisePreference.Choice.LEFT, PairwisePreference.Choice.RIGHT):
            skipped["tie"] += 1
            continue
        win, lose = (left, right) if choice == PairwisePreference.Choice.LEFT else (right, left)
        if any(a not in scores[win] or a not in scores[lose] for a in aspects):
            skipped["aspect not scored"] += 1
            continue
        winners.append([scores[win][a] for a in aspects])
        losers.append([scores[lose][a] for a in aspects])
    if not winners:
        raise WeightFitError(
            f"no usable preference between reports scored in run #{run.pk} "
            f"(skipped: {dict(skipped) or 'none found'})"
        )
    w_arr, l_arr = np.array(winners), np.array(losers)
    try:
        fitted = bt_aspect_weights(w_arr, l_arr, alpha=alpha, x_max=RUBRIC_SCALE, variant=variant)
    except ValueError as error:
        raise WeightFitError(str(error)) from None
    current = _current_weights(component, discipline_id, aspects)
    fit = WeightFit(
        component=component, discipline_id=discipline_id, aspects=aspects,
        weights={a: float(w) for a, w in zip(aspects, fitted, strict=True)}, pairs_used=len(winners),
        skipped=dict(skipped), concordance_before=_concordance(current, w_arr, l_arr),
        concordance_after=_concordance(fitted, w_arr, l_arr), variant=variant,
    )
    if apply:
        fit.criteria_updated = _apply(fit, actor=actor, run=run)
    return fit


def _current_weights(component: str, discipline_id: int, aspects: list[str]) -> np.ndarray:
    """The weights in use now, as the pipeline reads them (an aspect's mean criterion weight, normalised)."""
    by_aspect: dict[str, list[float]] = defaultdict(list)
    for criterion in _criteria(component, discipline_id):
        by_aspect[criterion.aspect].append(float(criterion.weight))
    w = np.array([sum(by_aspect[a]) / len(by_aspect[a]) for a in aspects])
    return w / w.sum() if w.sum() > 0 else np.full(len(aspects), 1.0 / len(aspects))


def _apply(fit: WeightFit, *, actor, run: EvaluationRun) -> int:
    fitted_on = " on raw 1–5 scores (the released bt.py)" if fit.variant == "upstream" else ""
    note = (f"Bradley–Terry weight{fitted_on} from {fit.pairs_used} preference(s) on run #{run.pk} "
            f"(concordance {fit.concordance_before:.2f} → {fit.concordance_after:.2f})")
    updated = 0
    with transaction.atomic():
        for criterion in _criteria(fit.component, fit.discipline_id):
            weight = round(fit.weights[criterion.aspect], 6)
            if criterion.weight == weight:
                continue
            proposable_update(obj=criterion, changes={"weight": weight}, expected_version=criterion.version,
                              actor=actor, actor_label="" if actor else "rubric weight fit", note=note)
            updated += 1
    return updated
