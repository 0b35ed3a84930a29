"""Rankings from pairwise comparisons: Bradley–Terry, online Elo, bootstrap intervals.

Comparisons are ``(i, j, outcome)`` triples — a sequence of triples or an
array of shape ``(n, 3)`` — with item indices ``i ≠ j`` in ``0..n_items-1``
and ``outcome`` 1 (i wins), 0 (j wins) or 0.5 (tie).  SurveyLens (§4.3) ranks
systems by pairwise preferences with online Elo (K 32, start 1500 in its released
code); Chatbot Arena style
leaderboards use Bradley–Terry with bootstrap confidence intervals and
:func:`rank_with_ci`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse
from scipy.linalg import lapack
from scipy.sparse import linalg as splinalg
from scipy.sparse.csgraph import connected_components

from ._validate import as_numeric, check_choice, check_int, check_real, fail

__all__ = [
    "bradley_terry",
    "bradley_terry_bootstrap",
    "to_elo_scale",
    "elo",
    "bootstrap_ci",
    "rank_with_ci",
]

_DENSE_LIMIT = 1500  # items; above this the Newton system is solved sparsely
_MAX_NEWTON = 500


class _Comparisons(NamedTuple):
    i: np.ndarray
    j: np.ndarray
    outcome: np.ndarray
    n_items: int


def _comparisons(comparisons: Any, n_items: int | None) -> _Comparisons:
    arr = as_numeric(comparisons, "comparisons", ndim=None)
    if arr.size == 0:
        arr = arr.reshape(0, 3)
    if arr.ndim != 2 or arr.shape[1] != 3:
        fail(f"comparisons must be (i, j, outcome) triples, shape (n, 3); got shape {arr.shape}")
    idx = arr[:, :2]
    bad = (idx != np.round(idx)) | (idx < 0)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        fail(f"comparisons item indices must be non-negative integers; row {row} is {arr[row].tolist()}")
    i, j = idx[:, 0].astype(np.intp), idx[:, 1].astype(np.intp)
    same = i == j
    if same.any():
        fail(f"an item cannot be compared with itself; row {int(np.argmax(same))} compares item {i[same][0]} with itself")
    outcome = arr[:, 2]
    bad_outcome = (outcome != 0) & (outcome != 0.5) & (outcome != 1)
    if bad_outcome.any():
        row = int(np.argmax(bad_outcome))
        fail(f"comparison outcomes must be 1 (i wins), 0 (j wins) or 0.5 (tie); row {row} has {outcome[row]!r}")
    seen = int(max(i.max(), j.max())) + 1 if arr.shape[0] else 0
    if n_items is None:
        n = seen
    else:
        n = check_int(n_items, "n_items", low=1)
        if seen > n:
            fail(f"comparisons refer to item {seen - 1} but n_items is {n}")
    if n == 0:
        fail("no items: pass n_items or at least one comparison")
    return _Comparisons(i, j, outcome, n)


class _Pairs(NamedTuple):
    """Comparisons aggregated per unordered pair (a < b) and outcome."""

    a: np.ndarray
    b: np.ndarray
    counts: np.ndarray  # (pairs, 3): comparisons where a scored 0, 0.5 and 1
    cell: np.ndarray  # per comparison: its flat index into ``counts`` (``counts.size`` if dropped)


_POINTS = np.array([0.0, 0.5, 1.0])


def _aggregate(data: _Comparisons, ties: str) -> _Pairs:
    i, j, outcome = data.i, data.j, data.outcome
    keep = outcome != 0.5 if ties == "exclude" else np.ones(outcome.size, dtype=bool)
    lo, hi = np.minimum(i, j)[keep], np.maximum(i, j)[keep]
    lo_points = np.where(i[keep] == lo, outcome[keep], 1.0 - outcome[keep])
    pair_keys, pair_index = np.unique(lo * data.n_items + hi, return_inverse=True)
    n_cells = 3 * pair_keys.size
    cell = np.full(outcome.size, n_cells, dtype=np.intp)  # dropped ties: one extra, ignored cell
    cell[keep] = pair_index * 3 + (2 * lo_points).astype(np.intp)
    counts = np.bincount(cell[keep], minlength=n_cells).reshape(-1, 3).astype(float)
    return _Pairs(pair_keys // data.n_items, pair_keys % data.n_items, counts, cell)


def _sigmoid(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """σ(d) and log σ(d), overflow-free (NumPy exp/log1p are much cheaper than scipy.special here)."""
    e = np.exp(-np.abs(d))
    inv = 1.0 / (1.0 + e)
    prob = np.where(d >= 0, inv, e * inv)
    log_prob = np.minimum(d, 0.0) - np.log1p(e)
    return prob, log_prob


class _Problem(NamedTuple):
    a: np.ndarray
    b: np.ndarray
    wins: np.ndarray
    total: np.ndarray
    n: int
    ridge: float
    hess_index: np.ndarray | None  # flat positions of the Hessian entries (dense case)


def _problem(a: np.ndarray, b: np.ndarray, wins: np.ndarray, total: np.ndarray, n: int, ridge: float) -> _Problem:
    keep = total > 0
    a, b, wins, total = a[keep], b[keep], wins[keep], total[keep]
    hess_index = np.concatenate([a * n + b, b * n + a, a * (n + 1), b * (n + 1)]) if n <= _DENSE_LIMIT else None
    return _Problem(a, b, wins, total, n, ridge, hess_index)


def _loss(problem: _Problem, theta: np.ndarray) -> float:
    """Penalised negative log-likelihood: −Σ [w log σ(d) + (t − w) log σ(−d)] + ridge/2 ‖θ‖²."""
    d = theta[problem.a] - theta[problem.b]
    _, log_prob = _sigmoid(d)
    losses = problem.total - problem.wins
    # log σ(−d) = log σ(d) − d
    return float(-(problem.total @ log_prob - losses @ d) + 0.5 * problem.ridge * (theta @ theta))


def _hessian_shift(n: int, ridge: float) -> np.ndarray:
    """ridge·I, or J/n when ridge = 0: the likelihood is shift invariant and J/n
    removes that null direction without changing steps orthogonal to it."""
    return np.full((n, n), 1.0 / n) if ridge == 0 else ridge * np.eye(n)


def _newton_step(problem: _Problem, theta: np.ndarray) -> tuple[np.ndarray, float]:
    """Newton direction and decrement gᵀH⁻¹g of the penalised negative log-likelihood."""
    a, b, n, ridge = problem.a, problem.b, problem.n, problem.ridge
    prob, _ = _sigmoid(theta[a] - theta[b])
    resid = problem.wins - problem.total * prob
    grad = np.bincount(b, resid, minlength=n) - np.bincount(a, resid, minlength=n) + ridge * theta
    h = problem.total * prob * (1.0 - prob)
    if problem.hess_index is not None:
        flat = np.bincount(problem.hess_index, np.concatenate([-h, -h, h, h]), minlength=n * n)
        hess = flat.astype(float).reshape(n, n) + _hessian_shift(n, ridge)
        factor, info = lapack.dpotrf(hess, lower=False, clean=False, overwrite_a=True)
        if info == 0:
            step = -lapack.dpotrs(factor, grad, lower=False)[0]
        else:  # numerically semi-definite (e.g. extreme separation)
            step = -np.linalg.lstsq(flat.astype(float).reshape(n, n) + _hessian_shift(n, ridge), grad, rcond=None)[0]
    else:
        diag = np.bincount(a, h, minlength=n) + np.bincount(b, h, minlength=n) + ridge
        off = sparse.coo_matrix((-h, (a, b)), shape=(n, n))
        hess = (off + off.T + sparse.diags(diag)).tocsc()
        if ridge == 0:
            # Shift invariance: pin θ_0 (the Laplacian minor is definite on a connected graph).
            step = np.zeros(n)
            step[1:] = -splinalg.spsolve(hess[1:, 1:], grad[1:])
        else:
            step = -splinalg.spsolve(hess, grad)
    return step, float(-(grad @ step))


def _fit(problem: _Problem, start: np.ndarray | None) -> np.ndarray:
    """Newton's method with backtracking line search; returns θ centred to mean 0."""
    theta = np.zeros(problem.n) if start is None else start.copy()
    current = _loss(problem, theta)
    for _ in range(_MAX_NEWTON):
        step, decrement = _newton_step(problem, theta)
        if decrement <= 1e-9 * max(1.0, abs(current)):
            # Quadratic-convergence region: loss differences are below float
            # resolution, so take full steps.  After a step with decrement δ the
            # remaining decrement is O(δ²): negligible once δ ≤ 1e-12·|f|.
            theta = theta + step
            if decrement <= 1e-12 * max(1.0, abs(current)) or np.max(np.abs(step), initial=0.0) < 1e-11:
                break
            continue
        scale = 1.0
        while True:
            candidate = theta + scale * step
            value = _loss(problem, candidate)
            if value <= current - 0.25 * scale * decrement or scale < 1e-12:
                break
            scale *= 0.5
        theta, current = candidate, value
    return theta - theta.mean()


def _check_mle_exists(pairs: _Pairs, wins: np.ndarray, total: np.ndarray, n: int) -> None:
    """Ford (1957): the unpenalised MLE exists iff the 'scored against' digraph is strongly connected."""
    a_scored = wins > 0
    b_scored = (total - wins) > 0
    rows = np.concatenate([pairs.b[a_scored], pairs.a[b_scored]])
    cols = np.concatenate([pairs.a[a_scored], pairs.b[b_scored]])
    graph = sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    n_components, _ = connected_components(graph, directed=True, connection="strong")
    if n_components > 1:
        fail(
            "the unpenalised Bradley-Terry MLE does not exist for these comparisons "
            "(some items are never compared, or a group of items never loses to the rest); use ridge > 0"
        )


def bradley_terry(comparisons: Any, n_items: int | None = None, ties: str = "half", ridge: float = 1e-6) -> np.ndarray:
    """Bradley–Terry maximum-likelihood log-strengths θ, centred to mean 0.

    Model: P(i beats j) = σ(θ_i − θ_j) = e^θi / (e^θi + e^θj).  ``ties="half"``
    counts a tie as half a win for each side; ``ties="exclude"`` drops ties.
    The estimate maximises the log-likelihood minus ``ridge/2 · ‖θ‖²`` — a
    Gaussian prior on θ of precision ``ridge`` (default 1e-6) that keeps θ
    finite when items are never compared, groups are disconnected or one item
    wins every comparison (the MLE would be infinite), and shifts ordinary
    estimates by a negligible amount.  With any ridge the optimum has mean 0;
    ``ridge=0`` gives the exact MLE, centred to mean 0, and raises
    ``ValueError`` when it does not exist.

    Comparisons are first aggregated into per-pair win totals (vectorised),
    then θ is found by Newton's method with backtracking line search on that
    aggregate (strictly convex objective, quadratic convergence).  To show θ
    on the Elo scale use :func:`to_elo_scale`.
    """
    check_choice(ties, "ties", ("half", "exclude"))
    penalty = check_real(ridge, "ridge", low=0.0)
    data = _comparisons(comparisons, n_items)
    pairs = _aggregate(data, ties)
    wins, total = pairs.counts @ _POINTS, pairs.counts.sum(axis=1)
    if penalty == 0:
        _check_mle_exists(pairs, wins, total, data.n_items)
    return _fit(_problem(pairs.a, pairs.b, wins, total, data.n_items, penalty), None)


def _percentile_bounds(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail], axis=0)
    return low, high


def bradley_terry_bootstrap(
    comparisons: Any,
    n_items: int | None = None,
    ties: str = "half",
    ridge: float = 1e-6,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, np.ndarray]:
    """Percentile bootstrap intervals for :func:`bradley_terry` (resampling comparisons).

    Each resample draws the N comparison rows with replacement (exactly as
    ``bootstrap_ci(lambda d: bradley_terry(d, n_items), comparisons, seed=seed)``
    would, same random stream) but only counts them into the aggregated
    (pair, outcome) cells — no per-comparison data is rebuilt or revalidated —
    and refits by Newton's method warm-started at the full-data estimate.
    Returns ``{"estimate", "low", "high", "samples"}``; ``samples`` has shape
    ``(n_resamples, n_items)``.
    """
    check_choice(ties, "ties", ("half", "exclude"))
    penalty = check_real(ridge, "ridge", low=0.0, low_open=True)
    resamples = check_int(n_resamples, "n_resamples", low=1)
    level = check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True, high_open=True)
    data = _comparisons(comparisons, n_items)
    pairs = _aggregate(data, ties)
    n = data.n_items
    counts = pairs.counts
    estimate = _fit(_problem(pairs.a, pairs.b, counts @ _POINTS, counts.sum(axis=1), n, penalty), None)
    samples = np.empty((resamples, n))
    n_rows = pairs.cell.size
    if n_rows == 0:
        samples[:] = estimate
    else:
        rng = np.random.default_rng(seed)
        for r in range(resamples):
            # Row resampling, counted straight into the (pair, outcome) cells.
            drawn = np.bincount(pairs.cell[rng.integers(0, n_rows, n_rows)], minlength=counts.size + 1)
            drawn = drawn[:-1].reshape(-1, 3).astype(float)
            problem = _problem(pairs.a, pairs.b, drawn @ _POINTS, drawn.sum(axis=1), n, penalty)
            samples[r] = _fit(problem, estimate)
    low, high = _percentile_bounds(samples, level)
    return {"estimate": estimate, "low": low, "high": high, "samples": samples}


def to_elo_scale(theta: Any, scale: float = 400.0, base: float = 10.0, initial: float = 1000.0) -> np.ndarray:
    """Bradley–Terry log-strengths on the Elo scale: initial + scale · θ / ln(base)."""
    values = as_numeric(theta, "theta")
    s = check_real(scale, "scale", low=0.0, low_open=True)
    b = check_real(base, "base", low=1.0, low_open=True)
    start = check_real(initial, "initial")
    return start + s * values / np.log(b)


def elo(
    comparisons: Any,
    k: float = 4.0,
    scale: float = 400.0,
    base: float = 10.0,
    initial: float = 1000.0,
    n_items: int | None = None,
) -> np.ndarray:
    """Sequential (online) Elo ratings.

    For each comparison in order: E_i = 1 / (1 + base^((R_j − R_i)/scale)),
    R_i += k (S_i − E_i), R_j += k ((1 − S_i) − (1 − E_i)), with S_i the
    outcome (1 / 0.5 / 0).  Order matters; items never compared keep ``initial``.
    The defaults are Chatbot Arena's ``compute_online_elo`` (K 4, start 1000);
    SurveyLens' released ``EloCalculator`` uses the same update with K 32, start 1500.
    """
    k_value = check_real(k, "k", low=0.0, low_open=True)
    s = check_real(scale, "scale", low=0.0, low_open=True)
    b = check_real(base, "base", low=1.0, low_open=True)
    start = check_real(initial, "initial")
    data = _comparisons(comparisons, n_items)
    ratings = [start] * data.n_items
    log_base = math.log(b) / s
    exp = math.exp
    # An online update depends on the previous one: the loop is inherent.
    for i, j, outcome in zip(data.i.tolist(), data.j.tolist(), data.outcome.tolist()):
        expected = 1.0 / (1.0 + exp((ratings[j] - ratings[i]) * log_base))
        delta = k_value * (outcome - expected)
        ratings[i] += delta
        ratings[j] -= delta
    return np.asarray(ratings, dtype=float)


def bootstrap_ci(
    statistic: Callable[[np.ndarray], Any],
    data: Any,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    vectorized: bool = False,
) -> dict[str, Any]:
    """Percentile bootstrap confidence interval, resampling rows of ``data``.

    ``statistic(data)`` returns a scalar or an array; the result is
    ``{"estimate": statistic(data), "low": ..., "high": ...}`` with the
    (1 − confidence)/2 and (1 + confidence)/2 percentiles of the resampled
    statistics (floats for a scalar statistic, arrays otherwise).  With
    ``vectorized=True`` the statistic receives a batch of resamples with a
    leading resample axis — shape ``(batch, n)`` for 1-D data,
    ``(batch, n, k)`` for 2-D — and must return one result per resample.
    ``data`` must be numeric and finite; a statistic that yields a non-finite
    value on some resample raises ``ValueError``.
    """
    if not callable(statistic):
        fail("statistic must be callable")
    arr = as_numeric(data, "data", ndim=None, allow_empty=False)
    if arr.ndim == 0:
        fail("data must be an array with one row per observation")
    resamples = check_int(n_resamples, "n_resamples", low=1)
    level = check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True, high_open=True)
    if not isinstance(vectorized, bool):
        fail(f"vectorized must be True or False; got {vectorized!r}")
    rng = np.random.default_rng(seed)
    n = arr.shape[0]
    estimate = np.asarray(statistic(arr), dtype=float)
    if vectorized:
        row_size = max(1, arr[0].size * n)
        batch = max(1, min(resamples, (1 << 23) // row_size))
        parts = []
        for start in range(0, resamples, batch):
            size = min(batch, resamples - start)
            parts.append(np.asarray(statistic(arr[rng.integers(0, n, size=(size, n))]), dtype=float))
        samples = np.concatenate(parts, axis=0)
        if samples.shape[0] != resamples:
            fail(f"a vectorized statistic must return one result per resample; got shape {samples.shape}")
    else:
        samples = np.stack([np.asarray(statistic(arr[rng.integers(0, n, size=n)]), dtype=float) for _ in range(resamples)])
    if not np.isfinite(samples).all():
        fail("the statistic returned a non-finite value on at least one resample")
    low, high = _percentile_bounds(samples, level)
    if estimate.ndim == 0:
        return {"estimate": float(estimate), "low": float(low), "high": float(high)}
    return {"estimate": estimate, "low": low, "high": high}


def rank_with_ci(lower: Any, upper: Any) -> np.ndarray:
    """Chatbot-Arena rank: 1 + number of items whose lower bound exceeds this item's upper bound.

    ``lower`` and ``upper`` are the confidence bounds of each item's score
    (higher is better).  Items whose intervals overlap share a rank.
    """
    lo = as_numeric(lower, "lower")
    hi = as_numeric(upper, "upper")
    if lo.shape != hi.shape:
        fail(f"lower and upper must have the same length; got {lo.size} and {hi.size}")
    bad = lo > hi
    if bad.any():
        fail(f"lower must not exceed upper; item {int(np.argmax(bad))} has lower {lo[bad][0]!r} > upper {hi[bad][0]!r}")
    ordered = np.sort(lo)
    return 1 + (lo.size - np.searchsorted(ordered, hi, side="right"))
