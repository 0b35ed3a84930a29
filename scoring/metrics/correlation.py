"""Rank correlation and paired tests for meta-evaluation (SurveyLens §4.3, Table 7).

SurveyLens measures how well metric scores agree with human preference
rankings by Spearman's ρ and pairwise concordance; Kendall's τ-b and the
paired t-test are the usual companions.  Concordant/discordant pair counts
use an O(n log n) inversion count (Knight's method), so these scale to large n.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.special import stdtr  # Student's t CDF: scipy.stats would add ~50 MiB to every web worker

from ._validate import as_numeric, fail

__all__ = ["spearman", "kendall_tau", "pairwise_concordance", "paired_t_test", "holm_adjust",
           "permutation_p_values"]


def _paired(x: Any, y: Any, minimum: int, names: tuple[str, str] = ("x", "y")) -> tuple[np.ndarray, np.ndarray]:
    a = as_numeric(x, names[0])
    b = as_numeric(y, names[1])
    if a.size != b.size:
        fail(f"{names[0]} and {names[1]} must have the same length; got {a.size} and {b.size}")
    if a.size < minimum:
        fail(f"at least {minimum} paired observations are needed; got {a.size}")
    return a, b


def _average_ranks(values: np.ndarray) -> np.ndarray:
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]


def _tied_pairs(*columns: np.ndarray) -> float:
    """Number of unordered pairs equal on all given columns."""
    _, counts = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
    return float(np.sum(counts * (counts - 1) / 2.0))


def _inversions(sequence: np.ndarray) -> int:
    """Pairs i < j with sequence[i] > sequence[j], for non-negative integer codes.

    Bit by bit from the top: two codes first differ at one bit, where the
    larger has a 1; within groups sharing the higher bits, count for every 0
    the 1s before it.  Each level is vectorised (stable sort + cumsum).
    """
    if sequence.size < 2:
        return 0
    total = 0
    for level in range(int(sequence.max()).bit_length() - 1, -1, -1):
        prefix = sequence >> (level + 1)
        order = np.argsort(prefix, kind="stable")
        group = prefix[order]
        bit = (sequence[order] >> level) & 1
        ones_before = np.cumsum(bit) - bit
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        group_id = np.cumsum(np.r_[True, group[1:] != group[:-1]]) - 1
        within = ones_before - ones_before[starts][group_id]
        total += int(within[bit == 0].sum())
    return total


def _pair_counts(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    n = a.size
    total = n * (n - 1) / 2.0
    tied_a, tied_b, tied_both = _tied_pairs(a), _tied_pairs(b), _tied_pairs(a, b)
    order = np.lexsort((b, a))
    _, b_codes = np.unique(b, return_inverse=True)
    discordant = float(_inversions(b_codes[order].astype(np.int64)))
    concordant = total - tied_a - tied_b + tied_both - discordant
    return {
        "total": total,
        "concordant": concordant,
        "discordant": discordant,
        "tied_x": tied_a,
        "tied_y": tied_b,
        "tied_both": tied_both,
    }


def spearman(x: Any, y: Any) -> dict[str, float | int | None]:
    """Spearman's ρ: Pearson correlation of average ranks (ties get their mean rank).

    Returns ``{"rho", "p_value", "n"}``; the two-sided p-value uses the
    t approximation t = ρ √((n − 2)/(1 − ρ²)) with n − 2 degrees of freedom
    (as SciPy does).  ρ is ``None`` when either variable is constant; the
    p-value is ``None`` when ρ is or when n < 3.
    """
    a, b = _paired(x, y, 2)
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denominator = math.sqrt(float(ra @ ra) * float(rb @ rb))
    n = a.size
    if denominator == 0:
        return {"rho": None, "p_value": None, "n": n}
    rho = float(np.clip((ra @ rb) / denominator, -1.0, 1.0))
    if n < 3:
        return {"rho": rho, "p_value": None, "n": n}
    if abs(rho) == 1.0:
        return {"rho": rho, "p_value": 0.0, "n": n}
    t = rho * math.sqrt((n - 2) / ((1.0 - rho) * (1.0 + rho)))
    return {"rho": rho, "p_value": float(2.0 * stdtr(n - 2, -abs(t))), "n": n}


def _tie_sums(values: np.ndarray) -> tuple[float, float, float]:
    _, counts = np.unique(values, return_counts=True)
    t = counts.astype(float)
    return float(np.sum(t * (t - 1))), float(np.sum(t * (t - 1) * (t - 2))), float(np.sum(t * (t - 1) * (2 * t + 5)))


def kendall_tau(x: Any, y: Any) -> dict[str, float | int | None]:
    """Kendall's τ-b = (C − D) / √((n₀ − n₁)(n₀ − n₂)) with tie corrections.

    C/D are concordant/discordant pairs, n₀ = n(n−1)/2 and n₁, n₂ the pairs
    tied in x and in y.  Returns ``{"tau", "p_value", "n"}``; the two-sided
    p-value is the large-sample normal approximation with the tie-corrected
    variance of C − D (SciPy's ``method="asymptotic"``).  τ is ``None`` when
    either variable is constant.
    """
    a, b = _paired(x, y, 2)
    counts = _pair_counts(a, b)
    n = a.size
    n0 = counts["total"]
    denominator = math.sqrt((n0 - counts["tied_x"]) * (n0 - counts["tied_y"]))
    if denominator == 0:
        return {"tau": None, "p_value": None, "n": n}
    s = counts["concordant"] - counts["discordant"]
    tau = float(np.clip(s / denominator, -1.0, 1.0))
    x1, x2, xv = _tie_sums(a)
    y1, y2, yv = _tie_sums(b)
    variance = (n * (n - 1) * (2 * n + 5) - xv - yv) / 18.0 + x1 * y1 / (2.0 * n * (n - 1))
    if n > 2:
        variance += x2 * y2 / (9.0 * n * (n - 1) * (n - 2))
    p_value = float(math.erfc(abs(s) / math.sqrt(variance) / math.sqrt(2.0))) if variance > 0 else None
    return {"tau": tau, "p_value": p_value, "n": n}


def pairwise_concordance(x: Any, y: Any) -> dict[str, float | int | None]:
    """Share of item pairs ordered the same way by x and y (SurveyLens Table 7 "Conc.%").

    Pairs tied in x or in y are left out of the share and counted separately:
    returns ``{"concordance": C / (C + D) or None, "concordant": C,
    "discordant": D, "tied": pairs tied in either}`` (concordance on a 0–1 scale).
    """
    a, b = _paired(x, y, 0)
    counts = _pair_counts(a, b) if a.size >= 2 else dict.fromkeys(("concordant", "discordant", "tied_x", "tied_y", "tied_both"), 0.0)
    c, d = counts["concordant"], counts["discordant"]
    tied = counts["tied_x"] + counts["tied_y"] - counts["tied_both"]
    return {
        "concordance": c / (c + d) if c + d > 0 else None,
        "concordant": int(c),
        "discordant": int(d),
        "tied": int(tied),
    }


def paired_t_test(a: Any, b: Any) -> dict[str, float | int | None]:
    """Paired two-sided t-test of mean(a − b) = 0.

    Returns ``{"statistic", "p_value", "mean_difference", "df"}`` with
    t = mean(d) / (sd(d)/√n), sd with n − 1 degrees of freedom.  When every
    difference is the same: a non-zero mean gives t = ±inf and p = 0, a zero
    mean gives ``None`` for both (the test is undefined).
    """
    x, y = _paired(a, b, 2, ("a", "b"))
    diff = x - y
    n = diff.size
    mean = float(diff.mean())
    sd = float(diff.std(ddof=1))
    if sd == 0:
        if mean == 0:
            return {"statistic": None, "p_value": None, "mean_difference": 0.0, "df": n - 1}
        return {"statistic": math.copysign(math.inf, mean), "p_value": 0.0, "mean_difference": mean, "df": n - 1}
    t = mean / (sd / math.sqrt(n))
    return {"statistic": t, "p_value": float(2.0 * stdtr(n - 1, -abs(t))), "mean_difference": mean, "df": n - 1}


def holm_adjust(p_values: Any) -> list[float | None]:
    """Holm's step-down adjusted p-values (Holm 1979) for a family of tests: sorted ascending,
    p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)). ``None`` entries (no test) are left as
    ``None`` and not counted in m. Rejecting where p̃ < α controls the family-wise error at α."""
    values = list(p_values)
    present = [(p, i) for i, p in enumerate(values) if p is not None]
    arr = as_numeric([p for p, _ in present], "p_values") if present else np.array([])
    if ((arr < 0) | (arr > 1)).any():
        fail("p_values must lie in [0, 1]")
    order = np.argsort(arr, kind="stable")
    m = arr.size
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * arr[order])) if m else arr
    out: list[float | None] = [None] * len(values)
    for rank, k in enumerate(order):
        out[present[k][1]] = float(adjusted[rank])
    return out


def _null_statistics(a: np.ndarray, b: np.ndarray, orders: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman ρ and Kendall τ-b of ``a`` against ``b`` re-paired by each row of ``orders``
    (row k pairs a_i with b_{orders[k, i]}); both from ranks and pair signs, which a re-pairing
    only permutes, so every row costs two matrix products."""
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    rho = (rb[orders] @ ra) / math.sqrt(float(ra @ ra) * float(rb @ rb))
    i, j = np.triu_indices(a.size, 1)
    sign_a = np.sign(a[i] - a[j])
    b_perm = b[orders]
    s = np.sign(b_perm[:, i] - b_perm[:, j]) @ sign_a
    n0 = i.size
    denominator = math.sqrt((n0 - _tied_pairs(a)) * (n0 - _tied_pairs(b)))
    return {"spearman": np.clip(rho, -1.0, 1.0), "kendall": np.clip(s / denominator, -1.0, 1.0)}


def permutation_p_values(x: Any, y: Any, n_resamples: int = 9999, seed: int | None = 0) -> dict[str, Any]:
    """Two-sided permutation p-values of Spearman's ρ and Kendall's τ-b: the share of re-pairings
    of y with x whose statistic is at least as extreme as the observed one, each tail counted
    and doubled (p = min(1, 2·min(P(T ≤ t), P(T ≥ t)))), as ``scipy.stats.permutation_test``
    with ``permutation_type="pairings"`` defines it.

    Exact — all n! re-pairings — when n! ≤ ``n_resamples`` (n ≤ 8 at the default), else
    ``n_resamples`` random re-pairings with p = (count + 1)/(n_resamples + 1). With 5–9 systems
    the t and normal approximations of ``spearman``/``kendall_tau`` are rough; this is the
    exact small-sample test. Returns ``{"spearman", "kendall", "n_permutations", "exact"}``;
    a p-value is ``None`` where its statistic is (a constant variable)."""
    a, b = _paired(x, y, 3)
    n = a.size
    exact = math.factorial(n) <= n_resamples
    if exact:
        orders = np.array(list(itertools.permutations(range(n))), dtype=np.intp)
    else:
        rng = np.random.default_rng(seed)
        orders = rng.permuted(np.tile(np.arange(n), (n_resamples, 1)), axis=1)
    out: dict[str, Any] = {"spearman": None, "kendall": None, "n_permutations": int(orders.shape[0]), "exact": exact}
    if np.unique(a).size < 2 or np.unique(b).size < 2:
        return out
    observed = _null_statistics(a, b, np.arange(n)[None, :])
    null = _null_statistics(a, b, orders)
    for name in ("spearman", "kendall"):
        t = float(observed[name][0])
        slack = abs(t) * 1e-12 + 1e-12  # the same value computed by another permutation's rounding
        counts = np.array([(null[name] <= t + slack).sum(), (null[name] >= t - slack).sum()], dtype=float)
        shares = counts / orders.shape[0] if exact else (counts + 1) / (orders.shape[0] + 1)
        out[name] = float(min(1.0, 2.0 * shares.min()))
    return out
