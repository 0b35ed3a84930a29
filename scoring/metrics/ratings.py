"""Rubric ratings on a numeric scale (experts rating surveys, as SurveyLens' and SciSage's judges
do): a mean with a cluster-robust interval, ICC(2,1) with its interval, and a judge's scores
against the experts' on the same reports and criteria. Pure functions over lists and arrays.

Definitions (``docs/statistics.md``, "Rubric ratings"):

* ``clustered_mean`` — the mean of n values with a 95 % t interval whose standard error is
  the cluster-robust (CR1) one over G clusters (tasks): SE² = G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))² / n²,
  G − 1 degrees of freedom. Reports of one task share its difficulty, so they are not n
  independent draws.
* ``icc_2_1`` — Shrout & Fleiss' ICC(2,1) (McGraw & Wong's ICC(A,1)): two-way random effects,
  absolute agreement, one rater, from the units × raters table of units every rater scored,
  (MSR − MSE) / (MSR + (k−1)·MSE + k·(MSC − MSE)/n), with McGraw & Wong's F-based interval.
* ``judge_vs_experts`` — on the same (report, criterion) pairs: Spearman's ρ, Cohen's κ with
  quadratic weights over the scale's integer points (both sides rounded to the nearest point),
  and the mean difference judge − experts with its 95 % t interval (the judge's bias).
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from .agreement import cohen_kappa
from .correlation import spearman


def _t_interval(mean: float, se: float, df: int, confidence: float) -> tuple[float | None, float | None]:
    if df < 1 or not math.isfinite(se):
        return None, None
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return mean - half, mean + half


def clustered_mean(values: Sequence[float], clusters: Sequence[Any], confidence: float = 0.95) -> dict:
    """``{"mean", "low", "high", "n", "n_clusters"}``; the interval is None with one cluster."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0 or len(clusters) != x.size:
        raise ValueError("values and clusters: one cluster per value, at least one value")
    mean = float(x.mean())
    _, group = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    sums = np.bincount(group.ravel(), weights=x - mean)
    g = sums.size
    if g < 2:
        return {"mean": mean, "low": None, "high": None, "n": int(x.size), "n_clusters": int(g)}
    se = math.sqrt(g / (g - 1) * float((sums ** 2).sum())) / x.size
    low, high = _t_interval(mean, se, g - 1, confidence)
    return {"mean": mean, "low": low, "high": high, "n": int(x.size), "n_clusters": int(g)}


def complete_table(units: Sequence[Any], raters: Sequence[Any], scores: Sequence[float]) -> np.ndarray:
    """The units × raters table of the units every rater who rated at least two units scored
    (a rater's repeated score of a unit: its mean)."""
    cells: dict[tuple[Any, Any], list[float]] = {}
    for unit, rater, score in zip(units, raters, scores, strict=True):
        cells.setdefault((unit, rater), []).append(float(score))
    by_rater: dict[Any, set] = {}
    for unit, rater in cells:
        by_rater.setdefault(rater, set()).add(unit)
    kept = [rater for rater, seen in by_rater.items() if len(seen) >= 2]
    common = set.intersection(*(by_rater[rater] for rater in kept)) if kept else set()
    kept.sort(key=str)
    return np.array([[np.mean(cells[unit, rater]) for rater in kept] for unit in sorted(common, key=str)],
                    dtype=float).reshape(len(common), len(kept))


def icc_2_1(units: Sequence[Any], raters: Sequence[Any], scores: Sequence[float], confidence: float = 0.95) -> dict:
    """``{"icc", "low", "high", "n_units", "n_raters"}`` (``complete_table``'s units and raters);
    ``icc`` None with fewer than two of either, or no variance."""
    table = complete_table(units, raters, scores)
    n, k = table.shape
    out = {"icc": None, "low": None, "high": None, "n_units": int(n), "n_raters": int(k)}
    if n < 2 or k < 2:
        return out
    grand = table.mean()
    ss_rows = k * float(((table.mean(axis=1) - grand) ** 2).sum())
    ss_cols = n * float(((table.mean(axis=0) - grand) ** 2).sum())
    ss_error = float(((table - grand) ** 2).sum()) - ss_rows - ss_cols
    msr, msc, mse = ss_rows / (n - 1), ss_cols / (k - 1), ss_error / ((n - 1) * (k - 1))
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    if denominator <= 0:
        return out
    icc = (msr - mse) / denominator
    out["icc"] = float(icc)
    if icc >= 1 or mse <= 0:
        return out
    a = k * icc / (n * (1 - icc))
    b = 1 + k * icc * (n - 1) / (n * (1 - icc))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
    f_low = float(stats.f.ppf(0.5 + confidence / 2, n - 1, v))
    f_high = float(stats.f.ppf(0.5 + confidence / 2, v, n - 1))
    out["low"] = float(n * (msr - f_low * mse) / (f_low * (k * msc + (k * n - k - n) * mse) + n * msr))
    out["high"] = float(n * (f_high * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_high * msr))
    return out


def judge_vs_experts(judge: Sequence[float], experts: Sequence[float], *, low: float, high: float,
                     confidence: float = 0.95) -> dict:
    """``{"n", "spearman", "kappa_quadratic", "mean_difference", "difference_low",
    "difference_high"}`` over paired scores on the scale ``low``–``high``."""
    a, b = np.asarray(judge, dtype=float), np.asarray(experts, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("judge and experts: one score each per pair, at least one pair")
    points = list(range(int(math.ceil(low)), int(math.floor(high)) + 1))
    rounded = [np.clip(np.floor(v + 0.5), points[0], points[-1]).astype(int).tolist() for v in (a, b)]
    difference = a - b
    mean = float(difference.mean())
    se = float(difference.std(ddof=1)) / math.sqrt(a.size) if a.size > 1 else math.inf
    d_low, d_high = _t_interval(mean, se, a.size - 1, confidence)
    return {"n": int(a.size), "spearman": spearman(a, b)["rho"] if a.size >= 2 else None,
            "kappa_quadratic": cohen_kappa(*rounded, weights="quadratic", labels=points),
            "mean_difference": mean, "difference_low": d_low, "difference_high": d_high}
