"""SurveyLens metrics (SurveyLens §3.3, eq. 3–6, Algorithm 1, App. C, Table 6).

* :func:`rams` — Redundancy-Aware Matching Score (eq. 5, Algorithm 1);
* :func:`tams` — Thresholded Average Maximum Similarity (eq. 6);
* :func:`bt_aspect_weights` — preference-aligned aspect weights (eq. 3);
* :func:`rubric_score` — weighted rubric score S = 5 · Σ w̃_k · x̃_k (§3.3.1, App. C);
* :func:`structure_ratios` — structural statistics relative to the human survey (Table 6).

Similarities σ are whatever the caller's embedding model produced (cosine
similarity in the paper); they must be finite, and matrices are
``generated × gold`` (``m × n``) and ``generated × generated`` (``m × m``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.special import expit

# scipy.optimize is imported where it is used: it weighs ~25 MiB, and the web processes,
# which import this package for their dashboards, never call it.

from ._validate import as_numeric, check_choice, check_range, check_real, fail

__all__ = ["rams", "tams", "redundancy_weights", "bt_aspect_weights", "rubric_score", "structure_ratios", "STRUCTURE_STATISTICS",
           "SURVEYLENS_TAU_PRESETS", "BT_WEIGHT_VARIANTS"]

# Named τ per component. "upstream": the thresholds of the released configuration
# (scripts/config/eval_quantitative_config.json: 0.95 for outline, content and reference, with
# Qwen3-Embedding-8B); "default": this project's defaults for the offline MiniLM embedder.
SURVEYLENS_TAU_PRESETS: dict[str, dict[str, float]] = {
    "upstream": {"outline": 0.95, "content": 0.95, "reference": 0.95},
    "default": {"outline": 0.7, "content": 0.7, "reference": 0.8},
}
# "paper": eq. 3 on scores normalised to x / x_max; "upstream": scripts/evaluation/bt.py, raw scores.
BT_WEIGHT_VARIANTS = ("paper", "upstream")

# Tie-break bonus added to matched pairs that count as hits (σ ≥ τ); far below
# any meaningful difference in total matching gain.
_HIT_BONUS = 1e-9


def _similarities(sim_gen_gold: Any, sim_gen_gen: Any) -> tuple[np.ndarray, np.ndarray]:
    gold = as_numeric(sim_gen_gold, "sim_gen_gold", ndim=2)
    m = gold.shape[0]
    gen = as_numeric(sim_gen_gen, "sim_gen_gen", ndim=2)
    if gen.shape != (m, m):
        fail(f"sim_gen_gen must be square with one row per generated entry ({m} x {m}); got shape {gen.shape}")
    return gold, gen


def redundancy_weights(sim_gen_gen: Any, lam: float = 1.0) -> np.ndarray:
    """ω(s_i) = exp(−λ · max(0, max_{k≠i} σ(s_i, s_k))) (SurveyLens eq. 5 / Algorithm 1 line 6).

    Row ``i`` of ``sim_gen_gen`` is read (the diagonal is ignored).  A single
    generated entry has no other entry to be redundant with: ω = 1.  A
    negative maximum (an entry unlike every other) counts as 0, so ω ∈ [e^−λ, 1]
    and RAMS precision stays ≤ 1: the released code does the same (its cosine
    similarities are clamped at 0 and its maximum starts at 0.0), where eq. 5
    read literally would give ω > 1.
    """
    gen = as_numeric(sim_gen_gen, "sim_gen_gen", ndim=2)
    if gen.shape[0] != gen.shape[1]:
        fail(f"sim_gen_gen must be square; got shape {gen.shape}")
    lam_value = check_real(lam, "lam", low=0.0)
    return _redundancy(gen, lam_value)


def _redundancy(gen: np.ndarray, lam: float) -> np.ndarray:
    m = gen.shape[0]
    if m <= 1:
        return np.ones(m)
    off = gen.copy()
    np.fill_diagonal(off, -np.inf)
    return np.exp(-lam * np.maximum(off.max(axis=1), 0.0))


def rams(sim_gen_gold: Any, sim_gen_gen: Any, tau: float, lam: float = 1.0) -> dict[str, float]:
    """Redundancy-Aware Matching Score (SurveyLens eq. 5, Algorithm 1).

    1. gain S[i, j] = max(0, σ(s_i, g_j) − τ); the optimal one-to-one matching
       π* maximises Σ S over matched pairs (Hungarian algorithm,
       :func:`scipy.optimize.linear_sum_assignment`; rectangular m × n allowed);
    2. ω_i = exp(−λ · max(0, max_{k≠i} σ(s_i, s_k))) (:func:`redundancy_weights`);
    3. P = (1/m) Σ_{(i,j)∈π*} ω_i · 𝟙[σ_ij ≥ τ],  R = (1/n) Σ_{(i,j)∈π*} 𝟙[σ_ij ≥ τ];
    4. RAMS = 2PR / (P + R).

    Returns ``{"precision", "recall", "rams"}``; an empty generated or gold set,
    or P + R = 0, gives 0.  The paper leaves ties in the matching gain open
    (e.g. pairs with σ = τ exactly, whose gain is 0 but which count as hits);
    we resolve them towards more hits, then towards hits on less redundant
    entries, via a bonus of about 1e-9 on hit pairs — so assignments whose
    total gains differ by less than ~1e-9 count as tied — and the result does
    not depend on the order of the entries.

    Notes, for similarities in [0, 1]: P ≤ 1 (ω ≤ 1).  Adding an exact
    duplicate s′ of an entry s (σ(s, s′) = 1) never raises P *unless it also
    raises R*, i.e. the duplicate earns a gold match of its own; and it never
    raises P at all when λ · (1 − max_k σ(s, s_k)) ≥ ln 2.  Outside that regime
    the paper's formula can reward a duplicate slightly: e.g. if s already has
    a near-duplicate (ω_s ≈ e^−λ) and clears τ against two gold entries, the
    copy adds a second hit worth e^−λ.
    """
    gold, gen = _similarities(sim_gen_gold, sim_gen_gen)
    threshold = check_real(tau, "tau")
    lam_value = check_real(lam, "lam", low=0.0)
    m, n = gold.shape
    if m == 0 or n == 0:
        return {"precision": 0.0, "recall": 0.0, "rams": 0.0}
    weights = _redundancy(gen, lam_value)
    hit = gold >= threshold
    gain = np.maximum(gold - threshold, 0.0)
    # bonus ε·(1 + ω̂_i/(m+1)) with ω̂ ∈ (0, 1]: k hits always outweigh k−1 hits,
    # and among equally many hits the less redundant entries win.
    relative = weights / max(float(weights.max()), np.finfo(float).tiny)
    gain += hit * (_HIT_BONUS * (1.0 + relative / (m + 1)))[:, None]
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(gain, maximize=True)
    matched_hits = hit[rows, cols]
    precision = float(np.sum(weights[rows] * matched_hits) / m)
    recall = float(np.count_nonzero(matched_hits) / n)
    score = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": precision, "recall": recall, "rams": score}


def tams(sim_gen_gold: Any, tau: float, mode: str = "margin") -> float:
    """Thresholded Average Maximum Similarity (SurveyLens eq. 6).

    ``mode="margin"`` (the paper): TAMS = (1/|S|) Σ_s max(0, max_g σ(s, g) − τ).
    ``mode="gated"`` reproduces the released code instead, which keeps the
    similarity itself when it clears the threshold:
    (1/|S|) Σ_s max_g σ(s, g) · 𝟙[max_g σ(s, g) ≥ τ].
    No generated entry, or no gold entry, gives 0.
    """
    check_choice(mode, "mode", ("margin", "gated"))
    gold = as_numeric(sim_gen_gold, "sim_gen_gold", ndim=2)
    threshold = check_real(tau, "tau")
    m, n = gold.shape
    if m == 0 or n == 0:
        return 0.0
    best = gold.max(axis=1)
    if mode == "margin":
        return float(np.maximum(best - threshold, 0.0).mean())
    return float(np.where(best >= threshold, best, 0.0).mean())


def _normalised_differences(winner_scores: Any, loser_scores: Any, x_max: float, normalise: bool = True) -> np.ndarray:
    win = as_numeric(winner_scores, "winner_scores", ndim=2)
    lose = as_numeric(loser_scores, "loser_scores", ndim=2)
    if win.shape != lose.shape:
        fail(f"winner_scores and loser_scores must have the same shape; got {win.shape} and {lose.shape}")
    if win.shape[0] == 0:
        fail("at least one preference pair is needed")
    if win.shape[1] == 0:
        fail("at least one aspect (column) is needed")
    check_range(win, "winner_scores", 0.0, x_max)
    check_range(lose, "loser_scores", 0.0, x_max)
    return (win - lose) / x_max if normalise else win - lose


def bt_aspect_weights(winner_scores: Any, loser_scores: Any, alpha: float = 0.1, x_max: float = 5.0,
                      variant: str = "paper") -> np.ndarray:
    """Preference-aligned aspect weights (SurveyLens eq. 3).

    Row p of ``winner_scores`` / ``loser_scores`` (shape ``pairs × aspects``)
    holds the raw aspect scores x ∈ [0, x_max] of the preferred and the other
    survey of preference pair p.  Scores are normalised as x̃ = x / x_max and

        ŵ = argmax_{w ≥ 0} Σ_p log σ(wᵀ(x̃_winner − x̃_loser)) − α‖w‖²,

    solved with L-BFGS-B (bounds w ≥ 0, analytic gradient); the result is
    normalised to w̃ = ŵ / Σ ŵ.  ``alpha`` must be > 0 (it keeps ŵ finite on
    separable preferences).  Raises ``ValueError`` when ŵ = 0, which happens
    exactly when no aspect's summed difference favours the preferred surveys
    (then no weighting explains the preferences).

    ``variant="upstream"`` is the released ``scripts/evaluation/bt.py`` (``fit_bradley_terry``
    in ``run_fitting``): the same objective on the *raw* scores x (not x / x_max), L-BFGS-B
    from w = 1/k with its default tolerances and ``maxiter`` 1000 (the shipped
    ``bt_config.json``), normalised the same way. Raw scores make the penalty α‖w‖² weigh
    x_max² times less, so the weights differ from the paper's.
    """
    check_choice(variant, "variant", BT_WEIGHT_VARIANTS)
    a = check_real(alpha, "alpha", low=0.0, low_open=True)
    scale = check_real(x_max, "x_max", low=0.0, low_open=True)
    diff = _normalised_differences(winner_scores, loser_scores, scale, normalise=variant == "paper")
    if (diff.sum(axis=0) <= 0).all():
        fail("the optimal weights are all zero: no aspect's summed score difference favours the preferred surveys")

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = diff @ w
        value = np.logaddexp(0.0, -margin).sum() + a * (w @ w)
        grad = -(diff.T @ expit(-margin)) + 2.0 * a * w
        return float(value), grad

    from scipy.optimize import minimize

    k = diff.shape[1]
    options = {"maxiter": 1000} if variant == "upstream" else {"maxiter": 10_000, "ftol": 1e-15, "gtol": 1e-12}
    result = minimize(
        objective,
        np.full(k, 1.0 / k),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * k,
        options=options,
    )
    weights = np.maximum(result.x, 0.0)
    total = weights.sum()
    if not np.isfinite(total) or total <= 0:  # pragma: no cover - excluded by the zero-optimum test above
        fail("optimisation returned zero weights")
    return weights / total


def rubric_score(weights: Any, aspect_scores: Any, x_max: float = 5.0) -> float | np.ndarray:
    """Weighted rubric score S = 5 · Σ_k w̃_k · x_k / x_max (SurveyLens §3.3.1, App. C).

    ``weights`` are the normalised weights w̃ (non-negative, summing to 1);
    ``aspect_scores`` the raw scores x_k ∈ [0, x_max], one per aspect, or a
    2-D array ``surveys × aspects`` (then one score per survey is returned).
    Worked example (App. C): w̃ = 0.6 and x = 4.2 on a 5-point scale
    contribute 5 × 0.6 × 0.84 = 2.52.
    """
    scale = check_real(x_max, "x_max", low=0.0, low_open=True)
    w = as_numeric(weights, "weights", allow_empty=False)
    check_range(w, "weights", 0.0, None)
    if abs(w.sum() - 1.0) > 1e-6:
        fail(f"weights must sum to 1 (normalised w̃); they sum to {w.sum()!r}")
    scores = as_numeric(aspect_scores, "aspect_scores", ndim=None)
    if scores.ndim not in (1, 2) or scores.shape[-1] != w.size:
        fail(f"aspect_scores must have {w.size} aspect(s) in its last dimension; got shape {scores.shape}")
    check_range(scores, "aspect_scores", 0.0, scale)
    result = 5.0 * (scores / scale) @ w
    return float(result) if scores.ndim == 1 else result


STRUCTURE_STATISTICS = (
    "images",
    "tables",
    "equations",
    "paragraphs",
    "words",
    "sentences",
    "citations",
    "references",
    "characters",
)


def structure_ratios(generated_stats: Mapping[str, float], human_stats: Mapping[str, float]) -> dict[str, float | None]:
    """Generated / human ratio per structural statistic (SurveyLens Table 6).

    Both dicts must have the same keys, each one of :data:`STRUCTURE_STATISTICS`
    (Table 6's Img, Tab, Eq, Para, Wrd, Sent, Cite, Ref, Char), with
    non-negative finite values.  A statistic whose human value is 0 has no
    ratio: ``None`` (even if the generated value is 0 too).
    """
    for name, stats in (("generated_stats", generated_stats), ("human_stats", human_stats)):
        if not isinstance(stats, Mapping):
            fail(f"{name} must be a dict; got {type(stats).__name__}")
        unknown = sorted(set(stats) - set(STRUCTURE_STATISTICS), key=str)
        if unknown:
            fail(f"{name} has unknown statistic(s) {unknown}; allowed: {list(STRUCTURE_STATISTICS)}")
    if set(generated_stats) != set(human_stats):
        missing = sorted(set(generated_stats) ^ set(human_stats))
        fail(f"generated_stats and human_stats must have the same keys; they differ on {missing}")
    out: dict[str, float | None] = {}
    for key in STRUCTURE_STATISTICS:
        if key not in generated_stats:
            continue
        gen = check_real(generated_stats[key], f"generated_stats[{key!r}]", low=0.0)
        hum = check_real(human_stats[key], f"human_stats[{key!r}]", low=0.0)
        out[key] = gen / hum if hum > 0 else None
    return out
