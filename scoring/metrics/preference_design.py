"""Which comparison to ask for next: the expected information a Bradley–Terry comparison brings.

An adaptive pairwise study asks for the comparison whose outcome is least certain *because the
strengths are not yet known* — not the comparisons that are coin flips however much is known
(two equally good systems). Under the Laplace approximation of the Bradley–Terry posterior
(the MAP θ̂ under the weak prior θ ~ N(0, 1/λ) of :mod:`.preference_ranking`, covariance
Σ = H⁻¹, H the Hessian of the penalised negative log-likelihood) the difference
d = θ_i − θ_j of a pair is N(d̂, v) with d̂ = θ̂_i − θ̂_j and v = Σ_ii + Σ_jj − 2Σ_ij.
The expected information of one more comparison of i and j about θ is the mutual information
between its outcome Y and d (Houlsby et al. 2011, "Bayesian active learning by disagreement"):

    I(i, j) = h(E[σ(d)]) − E[h(σ(d))],   h(p) = −p ln p − (1 − p) ln(1 − p)  (nats),

the entropy of the predicted outcome minus the entropy left if d were known. It is large where
the two systems' order is unsettled (d̂ near 0 relative to √v) and small both for settled
pairs and for pairs already known to be close to a coin flip. The expectations are
Gauss–Hermite sums over d (:data:`QUADRATURE_NODES` nodes).

A batch (a round of several pairs chosen before any of their outcomes is known) updates Σ after
each choice as one more comparison of that pair would (:func:`covariance_after`, a rank-one
Sherman–Morrison update with the Fisher weight σ(d̂)(1 − σ(d̂)); the update does not depend on
the outcome), so a round does not ask the same question many times over.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import ndtr

from ._validate import check_choice, check_int, check_real
from .preference_ranking import PRIOR_PRECISION
from .ranking import _POINTS, _aggregate, _comparisons, _fit, _problem, _sigmoid

__all__ = ["QUADRATURE_NODES", "CANDIDATE_SPAN", "bradley_terry_laplace", "bradley_terry_map_batch", "candidate_pairs",
           "choose_pairs_batch", "covariance_after", "covariance_after_batch", "doubt_variance_drop",
           "misorder_probability", "pair_information"]

QUADRATURE_NODES = 40
_NODES, _WEIGHTS = hermegauss(QUADRATURE_NODES)  # ∫ f(x) e^{−x²/2} dx ≈ Σ w f(x)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()  # E[f(Z)], Z ~ N(0, 1)


def bradley_terry_laplace(
    comparisons: Any, n_items: int | None = None, ties: str = "half", prior_precision: float = PRIOR_PRECISION,
) -> dict[str, np.ndarray]:
    """The MAP Bradley–Terry θ̂ under θ ~ N(0, 1/``prior_precision``) and its Laplace covariance.

    Returns ``{"theta": θ̂ (mean 0), "covariance": H⁻¹}``, H = ``prior_precision``·I + Σ over
    compared pairs of t·p(1 − p)(e_i − e_j)(e_i − e_j)ᵀ (t comparisons of the pair, p = σ(d̂)).
    The prior keeps both finite before every system has won and lost (a design must choose
    from the first label on); with no comparison at all θ̂ = 0 and Σ = I/λ.
    """
    check_choice(ties, "ties", ("half", "exclude"))
    ridge = check_real(prior_precision, "prior_precision", low=0.0, low_open=True)
    data = _comparisons(comparisons, n_items)
    pairs = _aggregate(data, ties)
    n = data.n_items
    wins, total = pairs.counts @ _POINTS, pairs.counts.sum(axis=1)
    theta = _fit(_problem(pairs.a, pairs.b, wins, total, n, ridge), None)
    prob, _ = _sigmoid(theta[pairs.a] - theta[pairs.b])
    h = total * prob * (1.0 - prob)
    hess = ridge * np.eye(n)
    np.add.at(hess, (pairs.a, pairs.b), -h)
    np.add.at(hess, (pairs.b, pairs.a), -h)
    np.add.at(hess, (pairs.a, pairs.a), h)
    np.add.at(hess, (pairs.b, pairs.b), h)
    return {"theta": theta, "covariance": np.linalg.inv(hess)}


def _entropy(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-300, 1.0)
    r = np.clip(1.0 - p, 1e-300, 1.0)
    return -(p * np.log(q) + (1.0 - p) * np.log(r))


def pair_information(theta: Any, covariance: Any) -> dict[str, np.ndarray]:
    """For every pair (i, j): the expected information of one more comparison (see the module
    docstring). Returns n × n symmetric arrays ``{"information", "difference", "variance",
    "predicted"}``: I(i, j) in nats (0 on the diagonal), d̂, v and P(i beats j) = E[σ(d)]."""
    theta = np.asarray(theta, dtype=float)
    cov = np.asarray(covariance, dtype=float)
    n = check_int(theta.size, "theta", low=1)
    if cov.shape != (n, n):
        raise ValueError(f"covariance must be {n} × {n} for {n} strengths; got shape {cov.shape}")
    diff = theta[:, None] - theta[None, :]
    diag = np.diag(cov)
    var = np.clip(diag[:, None] + diag[None, :] - 2.0 * cov, 0.0, None)
    d = diff[..., None] + np.sqrt(var)[..., None] * _NODES  # (n, n, nodes)
    p, _ = _sigmoid(d)
    predicted = p @ _WEIGHTS
    information = np.clip(_entropy(predicted) - _entropy(p) @ _WEIGHTS, 0.0, None)
    np.fill_diagonal(information, 0.0)
    return {"information": information, "difference": diff, "variance": var, "predicted": predicted}


def covariance_after(theta: Any, covariance: Any, i: int, j: int) -> np.ndarray:
    """Σ after one more comparison of i and j at θ̂: (H + w x xᵀ)⁻¹ with x = e_i − e_j and
    w = σ(d̂)(1 − σ(d̂)), by Sherman–Morrison: Σ − w Σx (Σx)ᵀ / (1 + w xᵀΣx)."""
    theta = np.asarray(theta, dtype=float)
    cov = np.asarray(covariance, dtype=float)
    n = theta.size
    i, j = check_int(i, "i", low=0), check_int(j, "j", low=0)
    if max(i, j) >= n:
        raise ValueError(f"items are numbered 0..{n - 1}; got ({i}, {j})")
    if i == j:
        raise ValueError("an item cannot be compared with itself")
    p = 1.0 / (1.0 + np.exp(-(theta[i] - theta[j])))
    w = p * (1.0 - p)
    sx = cov[:, i] - cov[:, j]
    return cov - w * np.outer(sx, sx) / (1.0 + w * (sx[i] - sx[j]))


# ---------------------------------------------------------------------------------------------
# The ranking design: compare the neighbours whose comparison most narrows the doubtful orders.
#
# A study that must get the *order* right (Kendall τ with the true order) needs the comparisons
# that settle orders still in doubt, and those are between neighbours in the ranking (Heckel et
# al. 2019, "Active ranking from pairwise comparisons and when parametric assumptions do not
# help"; Maystre & Grossglauser 2017, "Just sort it!"): a far pair's outcome is nearly certain
# and tells little. Under the Laplace posterior the order of k and l is wrong with probability
# m_kl = Φ(−|d̂_kl| / √v_kl). τ counts every pair's order, not only the neighbours': a chain of
# neighbours each compared alone leaves the orders two and three places apart to add up the
# chain's errors. So each informed turn takes, among the pairs adjacent in the current ranking
# (``CANDIDATE_SPAN``), the one whose comparison most lowers the doubt-weighted relative variance
#
#     D = Σ_{k<l} m_kl^DOUBT_POWER · v_kl' / v_kl   over every pair (k, l),
#
# v' the variance after the comparison (the rank-one update of :func:`covariance_after`, which
# does not depend on the outcome): :func:`doubt_variance_drop`. The drop counts the comparison's
# indirect effect on every order it touches through Σ, and it shrinks for a near-tie as it is
# compared (its relative drop w·v / (1 + w·v) → 0 as v → 0), so a near-tie — whose m stays near
# ½ however often it is compared — does not absorb the budget; τ ≥ 0.9 tolerates a few near-ties
# in the wrong order. Measured against the alternatives in docs/statistics.md ("Designs tried on
# these settings": the draw ∝ m or m² among neighbours, the largest m, the expected drop of m).
# Everything here works on a batch of R independent fits (the simulation's replications; the
# product passes R = 1): θ̂ (R, n), Σ (R, n, n).
# ---------------------------------------------------------------------------------------------

CANDIDATE_SPAN = 1
# The weight of a pair's relative variance is m²: the orders most in doubt count most
# (10 evenly spaced systems, uniform share 0.25, 400 replications, seed 3: 0.50 of
# round-robin's labels with m², 0.53 with m¹, 0.51 with m³).
DOUBT_POWER = 2


def bradley_terry_map_batch(wins: np.ndarray, counts: np.ndarray, start: np.ndarray | None = None,
                            prior_precision: float = PRIOR_PRECISION, tolerance: float = 1e-9,
                            max_iterations: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """The MAP Bradley–Terry θ̂ under θ ~ N(0, 1/λ) for R data sets at once, and the Hessian H.

    ``wins[r, i, j]``: points of i against j (a tie ½ each); ``counts[r, i, j]``: comparisons of
    i and j (symmetric). Damped Newton on the strictly concave log posterior, steps capped to 1 in
    each coordinate (a step from far never overshoots), warm-started at ``start``, at most
    ``max_iterations`` steps (the simulation takes 2 after each new label).
    The same estimate as :func:`bradley_terry_laplace` (tests check it); its covariance is H⁻¹.
    """
    wins, counts = np.asarray(wins, dtype=float), np.asarray(counts, dtype=float)
    r, n = wins.shape[0], wins.shape[1]
    theta = np.zeros((r, n)) if start is None else np.array(start, dtype=float)
    diagonal = np.arange(n)

    def parts(theta):
        prob = 0.5 + 0.5 * np.tanh(0.5 * (theta[:, :, None] - theta[:, None, :]))  # σ, overflow-free
        h = counts * prob * (1.0 - prob)
        hess = -h
        hess[:, diagonal, diagonal] += h.sum(axis=2) + prior_precision
        return prob, hess

    for _ in range(max_iterations):
        prob, hess = parts(theta)
        grad = (wins - counts * prob).sum(axis=2) - prior_precision * theta
        step = np.clip(np.linalg.solve(hess, grad[..., None])[..., 0], -1.0, 1.0)
        theta = theta + step
        if np.max(np.abs(step), initial=0.0) < tolerance:
            break
    return theta, parts(theta)[1]


def candidate_pairs(theta: np.ndarray, span: int = CANDIDATE_SPAN,
                    rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per fit, the pairs (i, j) at most ``span`` places apart in the ranking by θ̂: arrays
    (R, C) of i and j, C = Σ_{s=1..span} (n − s). ``rng`` orders equal θ̂ at random (before the
    first label all are equal; the numbering must not decide the first pairs)."""
    theta = np.asarray(theta, dtype=float)
    tiebreak = np.zeros(theta.shape) if rng is None else rng.random(theta.shape)
    order = np.lexsort((tiebreak, -theta), axis=-1)
    n = theta.shape[1]
    firsts, seconds = [], []
    for s in range(1, min(span, n - 1) + 1):
        firsts.append(order[:, :n - s])
        seconds.append(order[:, s:])
    return np.concatenate(firsts, axis=1), np.concatenate(seconds, axis=1)


def misorder_probability(theta: np.ndarray, covariance: np.ndarray, first: np.ndarray,
                         second: np.ndarray) -> np.ndarray:
    """For each pair (``first[r, c]``, ``second[r, c]``): the posterior probability that the
    current order of the two is wrong, Φ(−|d̂| / √v). Returns (R, C)."""
    theta, cov = np.asarray(theta, dtype=float), np.asarray(covariance, dtype=float)
    rows = np.arange(theta.shape[0])[:, None]
    d = np.abs(theta[rows, first] - theta[rows, second])
    v = cov[rows, first, first] + cov[rows, second, second] - 2.0 * cov[rows, first, second]
    return ndtr(-d / np.sqrt(np.clip(v, 1e-12, None)))


def covariance_after_batch(theta: np.ndarray, covariance: np.ndarray, first: np.ndarray,
                           second: np.ndarray) -> np.ndarray:
    """:func:`covariance_after` for R fits at once, one pair (``first[r]``, ``second[r]``) each."""
    rows = np.arange(theta.shape[0])
    d = theta[rows, first] - theta[rows, second]
    p = 1.0 / (1.0 + np.exp(-d))
    w = p * (1.0 - p)
    sx = covariance[rows, :, first] - covariance[rows, :, second]  # (R, n)
    denom = 1.0 + w * (sx[rows, first] - sx[rows, second])
    return covariance - (w / denom)[:, None, None] * sx[:, :, None] * sx[:, None, :]


def doubt_variance_drop(theta: np.ndarray, covariance: np.ndarray, first: np.ndarray,
                        second: np.ndarray) -> np.ndarray:
    """For each candidate pair c = (``first[r, c]``, ``second[r, c]``): how much one more
    comparison of it lowers D = Σ_{k<l} g_kl v_kl, g_kl = m_kl^DOUBT_POWER / v_kl (module comment).

    With x the difference vector of a pair, the comparison updates Σ to Σ − w Σx_c (Σx_c)ᵀ /
    (1 + w x_cᵀΣx_c) (w = σ(d̂_c)(1 − σ(d̂_c))), so v_kl drops by w (x_klᵀΣx_c)² / (1 + w x_cᵀΣx_c)
    and D by w (Σx_c)ᵀ L (Σx_c) / (1 + w x_cᵀΣx_c), L = Σ_{k<l} g_kl x_kl x_klᵀ (a weighted graph
    Laplacian). Returns (R, C), ≥ 0."""
    theta, cov = np.asarray(theta, dtype=float), np.asarray(covariance, dtype=float)
    r, n = theta.shape
    rows = np.arange(r)[:, None]
    k, l = np.triu_indices(n, 1)
    every_k, every_l = np.broadcast_to(k, (r, k.size)), np.broadcast_to(l, (r, l.size))
    variance = np.clip(cov[:, k, k] + cov[:, l, l] - 2.0 * cov[:, k, l], 1e-12, None)
    weight = misorder_probability(theta, cov, every_k, every_l) ** DOUBT_POWER / variance
    laplacian = np.zeros((r, n, n))
    laplacian[:, k, l] = laplacian[:, l, k] = -weight
    laplacian[:, np.arange(n), np.arange(n)] = -laplacian.sum(axis=2)
    sx = cov[rows, :, first] - cov[rows, :, second]  # (R, C, n): Σx_c
    columns = np.arange(first.shape[1])[None, :]
    own = sx[rows, columns, first] - sx[rows, columns, second]  # x_cᵀΣx_c: the candidate's own v
    p = 0.5 + 0.5 * np.tanh(0.5 * (theta[rows, first] - theta[rows, second]))  # σ, overflow-free
    fisher = p * (1.0 - p)
    quadratic = np.einsum("rci,rij,rcj->rc", sx, laplacian, sx)
    return np.clip(fisher * quadratic / (1.0 + fisher * own), 0.0, None)


def choose_pairs_batch(theta: Any, covariance: Any, *, uniform: Any, rng: np.random.Generator,
                       capacity: Any = None, span: int = CANDIDATE_SPAN) -> tuple[np.ndarray, np.ndarray]:
    """The next pairs (i < j) of R fits, one per entry of ``uniform`` (its turns: True draws a
    pair uniformly from the open ones). Other turns take, among the pairs adjacent in the ranking
    by θ̂, the one with the largest :func:`doubt_variance_drop` (equal drops — before any data all
    are — drawn at random). After each pick Σ is updated as one more comparison of it would
    (:func:`covariance_after_batch`), so a round spreads over the doubtful orders.
    ``capacity[r, i, j]`` (i < j): comparisons pair (i, j) may still get (default: unlimited); a
    fit whose adjacent pairs are all used up draws from its open pairs; a fit with no open pair
    gets −1. Returns (R, T) arrays of i and j."""
    theta = np.array(theta, dtype=float)
    cov = np.array(covariance, dtype=float)
    r, n = theta.shape
    left = None if capacity is None else np.triu(np.array(capacity, dtype=float), 1)
    rows = np.arange(r)
    turns = [bool(t) for t in np.asarray(uniform, dtype=bool).reshape(-1)]
    out_i = np.full((r, len(turns)), -1, dtype=np.intp)
    out_j = np.full((r, len(turns)), -1, dtype=np.intp)
    k, l = np.triu_indices(n, 1)
    for t, is_uniform in enumerate(turns):
        open_pairs = np.ones((r, k.size), bool) if left is None else left[:, k, l] > 0
        # a uniform draw among the open pairs: the largest of independent uniform keys
        draw = np.argmax(np.where(open_pairs, rng.random(open_pairs.shape), -1.0), axis=1)
        i, j = k[draw], l[draw]
        if not is_uniform:
            first, second = candidate_pairs(theta, span, rng)
            lo, hi = np.minimum(first, second), np.maximum(first, second)
            usable = np.ones(lo.shape, bool) if left is None else left[rows[:, None], lo, hi] > 0
            drop = np.where(usable, doubt_variance_drop(theta, cov, lo, hi), -1.0)
            # the largest drop; drops within a relative 1e-9 of it are equal (at random among them)
            top = drop.max(axis=1, keepdims=True)
            best = np.argmax(np.where(usable & (drop >= top - 1e-9 * np.abs(top)), rng.random(drop.shape), -1.0),
                             axis=1)
            has = usable.any(axis=1)
            i = np.where(has, lo[rows, best], i)
            j = np.where(has, hi[rows, best], j)
        some = open_pairs.any(axis=1)
        out_i[:, t] = np.where(some, i, -1)
        out_j[:, t] = np.where(some, j, -1)
        cov = np.where(some[:, None, None], covariance_after_batch(theta, cov, i, j), cov)
        if left is not None:
            left[rows[some], i[some], j[some]] -= 1
    return out_i, out_j
