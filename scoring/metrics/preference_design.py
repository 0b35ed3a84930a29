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

from ._validate import check_choice, check_int, check_real
from .preference_ranking import PRIOR_PRECISION
from .ranking import _POINTS, _aggregate, _comparisons, _fit, _problem, _sigmoid

__all__ = ["QUADRATURE_NODES", "bradley_terry_laplace", "pair_information", "covariance_after"]

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
