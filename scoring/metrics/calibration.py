"""Calibrated judge scores: prediction-powered inference for a mean over judged units.

The judge labels all N units of a population (f_i, every verdict of a run); experts label a
random sample S of n of them (Y_i, their corrected label), unit i having been included with
probability π_i. The estimand is the mean of Y over the population. Three estimates:

* ``judge_only``: mean of f over the N units, with its CLT interval — an interval for the
  judge's own mean, which is biased for the experts' mean whenever the judge is;
* ``human_only``: the (inverse-probability weighted) mean of Y over S, CLT interval;
* ``ppi``: PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered
  Inference", arXiv:2311.01453; PPI: Angelopoulos et al., Science 382, 2023):
  θ̂_λ = mean_N(λ f) + Σ_S w_i (Y_i − λ f_i) / Σ_S w_i, λ tuned to minimise the variance and
  clipped to [0, 1] (λ = 1 is classical PPI, λ = 0 the human-only mean), with weights
  w_i = 1/π_i — the inverse-probability weighting of active statistical inference (Zrnic &
  Candès, ICML 2024), which keeps the estimate valid when the sample favoured the units where
  the judge was unsure. All three call ``ppi_py`` (``ppi_mean_pointestimate``,
  ``ppi_mean_ci``); nothing of PPI is re-derived here. ``ppi_py`` normalises the weights to
  sum n (a Hájek ratio; with uniform π it is the plain mean).

Effective-sample-size gain: (human-only width / PPI width)², so that n expert labels with the
judge are worth gain × n expert labels without it (the PPI++ paper's comparison at equal n).
A difference of two systems' means uses their independent samples: the estimates' difference
with standard errors added in quadrature.

The planner (:func:`labels_for_width`) inverts the PPI interval's width,
2 z √(λ² σ_f² / N + σ_r² / n), σ_r² the weighted variance of Y − λ f on the sample, for n,
assuming the variances and λ stay at their current estimates and new labels are drawn as the
current ones were.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special  # not scipy.stats: web processes import this module (tests/config/test_web_imports)

from ._validate import check_real, fail

__all__ = [
    "calibrated_mean", "difference_interval", "labels_for_width", "labels_for_difference_width",
    "report_mean_weights", "MIN_HUMAN_LABELS",
]

# Fewer expert labels than this give no PPI estimate: the rectifier's variance, and so the
# interval, is not estimable from one or two labels.
MIN_HUMAN_LABELS = 3


def _array(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).reshape(-1)
    if not np.all(np.isfinite(arr)):
        fail(f"{name} must be finite numbers")
    return arr


def _interval(estimate: float, se: float, z: float) -> dict:
    return {"estimate": float(estimate), "low": float(estimate - z * se), "high": float(estimate + z * se),
            "se": float(se)}


def _ppi_module():
    import ppi_py  # numba, statsmodels and pandas load with it: ~1 s, only where a calibrated score is asked

    return ppi_py


def calibrated_mean(y: Sequence[float], yhat: Sequence[float], yhat_all: Sequence[float], *,
                    inclusion: Sequence[float] | None = None, alpha: float = 0.05,
                    lam: float | None = None) -> dict:
    """Judge-only, human-only and PPI++ estimates of the experts' mean over a population.

    ``y``, ``yhat``: the experts' and the judge's value on each labelled unit; ``yhat_all``: the
    judge's value on every unit of the population (labelled ones included); ``inclusion``: each
    labelled unit's inclusion probability π (default: all equal, a uniform sample); ``lam``: a
    fixed λ (1: classical PPI) instead of PPI++'s tuned one.
    Returns ``judge_only``, ``human_only`` and ``ppi`` (each ``estimate``, ``low``, ``high``,
    ``se``), ``lam`` (PPI++'s λ), ``n_judge``, ``n_human``, ``ess_gain``, ``alpha`` and the
    variance parts the planner needs. ``human_only``/``ppi`` are ``None`` below
    ``MIN_HUMAN_LABELS`` labels.
    """
    check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    y, yhat, yhat_all = _array(y, "y"), _array(yhat, "yhat"), _array(yhat_all, "yhat_all")
    if y.size != yhat.size:
        fail(f"y and yhat must have one value per labelled unit; got {y.size} and {yhat.size}")
    if yhat_all.size == 0:
        fail("yhat_all: the population has no judged unit")
    if y.size > yhat_all.size:
        fail(f"more labelled units ({y.size}) than judged units ({yhat_all.size})")
    z = float(special.ndtri(1.0 - alpha / 2.0))
    n, N = int(y.size), int(yhat_all.size)
    judge_se = float(yhat_all.std() / math.sqrt(N))
    out: dict[str, Any] = {
        "judge_only": _interval(yhat_all.mean(), judge_se, z), "human_only": None, "ppi": None, "lam": None,
        "n_judge": N, "n_human": n, "ess_gain": None, "alpha": alpha,
    }
    if n < MIN_HUMAN_LABELS:
        return out
    if inclusion is None:
        w = None
    else:
        pi = _array(inclusion, "inclusion")
        if pi.size != n:
            fail(f"inclusion must have one probability per labelled unit; got {pi.size} for {n}")
        if np.any(pi <= 0) or np.any(pi > 1):
            fail("inclusion probabilities must be in (0, 1]")
        w = 1.0 / pi
    ppi = _ppi_module()
    ppi_y, ppi_yhat, ppi_all = y[:, None], yhat[:, None], yhat_all[:, None]
    # λ = 0 is the classical (weighted) mean of Y and its CLT interval, through the same code path.
    human = float(ppi.ppi_mean_pointestimate(ppi_y, ppi_yhat, ppi_all, lam=0, w=w).item())
    human_ci = ppi.ppi_mean_ci(ppi_y, ppi_yhat, ppi_all, alpha=alpha, lam=0, w=w)
    human_low, human_high = (float(v.item()) for v in human_ci)
    if lam is None:
        lam = _power_tuned_lambda(y, yhat, yhat_all, w)
    else:
        lam = check_real(lam, "lam", low=0.0, high=1.0)
    estimate = float(ppi.ppi_mean_pointestimate(ppi_y, ppi_yhat, ppi_all, lam=lam, w=w).item())
    low, high = (float(v.item()) for v in ppi.ppi_mean_ci(ppi_y, ppi_yhat, ppi_all, alpha=alpha, lam=lam, w=w))
    weights = np.ones(n) if w is None else w / w.sum() * n
    rectifier_var = float((weights * (y - lam * yhat)).var())
    judge_var = float((lam * yhat_all).var())
    out.update(
        human_only={"estimate": human, "low": human_low, "high": human_high, "se": (human_high - human_low) / (2 * z)},
        ppi={"estimate": estimate, "low": low, "high": high, "se": (high - low) / (2 * z)},
        lam=lam, rectifier_var=rectifier_var, judge_var=judge_var, z=z,
    )
    ppi_width, human_width = high - low, human_high - human_low
    out["ess_gain"] = float((human_width / ppi_width) ** 2) if ppi_width > 0 else None
    return out


def report_mean_weights(report_of_unit: Sequence) -> np.ndarray:
    """Each unit's factor a_u = U / (R · n_r(u)) for a mean of report means: U units in R
    reports, n_r of them in report r. Then mean_U(a · v) = (1/R) Σ_r mean_{u ∈ r} v_u, the
    papers' system score (DeepSynth-Eval eq. 6 per report, DeepScholar-bench's claim coverage
    per report, each then averaged over the system's reports). The factors are fixed by the
    population, not by the sample, so PPI on the scaled values a·Y and a·f (judge's and experts'
    alike) estimates the mean of report means with the same validity as an unweighted mean.
    ``report_of_unit``: each unit's report (any hashable)."""
    reports = list(report_of_unit)
    if not reports:
        return np.zeros(0)
    counts: dict = {}
    for report in reports:
        counts[report] = counts.get(report, 0) + 1
    return np.array([len(reports) / (len(counts) * counts[report]) for report in reports], dtype=float)


def _power_tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, w: np.ndarray | None) -> float:
    """PPI++'s λ as ``ppi_py.ppi_mean_ci`` chooses it (``lam=None``), returned so that the
    estimate, the interval and the planner use the same λ (``ppi_py`` does not return it)."""
    ppi = _ppi_module()
    from ppi_py.ppi import _calc_lam_glm
    from ppi_py.utils import construct_weight_vector

    n, N = y.size, yhat_all.size
    wl = construct_weight_vector(n, w, vectorized=True)
    wu = construct_weight_vector(N, None, vectorized=True)
    Y, Yhat, Yall = y[:, None], yhat[:, None], yhat_all[:, None]
    center = ppi.ppi_mean_pointestimate(Y, Yhat, Yall, lam=1, w=w)
    lam = _calc_lam_glm(wl * (Y - center), wl * (Yhat - center), wu * (Yall - center), np.eye(1), coord=None,
                        clip=True, optim_mode="overall")
    return float(lam) if np.isfinite(lam) else 0.0


def difference_interval(first: dict, second: dict, *, alpha: float = 0.05) -> dict:
    """Difference of two independent estimates (``estimate`` and ``se`` each): the estimates'
    difference, standard errors in quadrature, normal interval."""
    z = float(special.ndtri(1.0 - alpha / 2.0))
    se = math.hypot(first["se"], second["se"])
    return _interval(first["estimate"] - second["estimate"], se, z)


def _needed(rectifier_var: float, n: int, budget: float) -> int | None:
    if rectifier_var <= 0:
        return 0
    if budget <= 0:
        return None
    return max(0, math.ceil(rectifier_var / budget) - n)


def labels_for_width(calibrated: dict, width: float) -> dict:
    """More expert labels expected to bring the PPI interval of one mean below ``width``.

    From the current estimates (``calibrated_mean``'s ``lam``, ``judge_var``,
    ``rectifier_var``): width(n) = 2 z √(judge_var / N + rectifier_var / n), solved for n.
    ``more`` is ``None`` when even labelling every unit could not reach it (the judge's own
    term is wider) and 0 when the interval is already narrower.
    """
    check_real(width, "width", low=0.0, low_open=True)
    if calibrated.get("ppi") is None:
        return {"more": None, "reason": f"needs at least {MIN_HUMAN_LABELS} expert labels to estimate the variance"}
    z, n, N = calibrated["z"], calibrated["n_human"], calibrated["n_judge"]
    budget = (width / (2 * z)) ** 2 - calibrated["judge_var"] / N
    more = _needed(calibrated["rectifier_var"], n, budget)
    if more is not None and n + more > N:
        more = None
    reason = "" if more is not None else "not reachable by labelling this population's units"
    return {"more": more, "reason": reason, "current_width": calibrated["ppi"]["high"] - calibrated["ppi"]["low"]}


def labels_for_difference_width(parts: Sequence[dict], width: float) -> dict:
    """More expert labels expected to bring the interval of a difference of independent means
    (the best system against the second) below ``width``: labels added to each part in
    proportion to the ones it has (a uniform sample keeps that ratio), so the rectifier terms
    shrink by one common factor c = (n + more) / n."""
    check_real(width, "width", low=0.0, low_open=True)
    if not parts or any(p.get("ppi") is None for p in parts):
        return {"more": None, "reason": f"needs at least {MIN_HUMAN_LABELS} expert labels per system"}
    z = parts[0]["z"]
    fixed = sum(p["judge_var"] / p["n_judge"] for p in parts)
    scaled = sum(p["rectifier_var"] / p["n_human"] for p in parts)
    budget = (width / (2 * z)) ** 2 - fixed
    n = sum(p["n_human"] for p in parts)
    current = 2 * z * math.sqrt(fixed + scaled)
    if scaled <= 0 or current <= width:
        return {"more": 0, "reason": "", "current_width": current}
    if budget <= 0:
        return {"more": None, "reason": "not reachable: the judge's own variance alone is wider",
                "current_width": current}
    factor = scaled / budget
    more = math.ceil(n * factor) - n
    if n + more > sum(p["n_judge"] for p in parts):
        return {"more": None, "reason": "not reachable by labelling these systems' units", "current_width": current}
    return {"more": max(0, more), "reason": "", "current_width": current}
