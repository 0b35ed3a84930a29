"""Bradley–Terry on human preference data: separation checks, the MLE where it exists, a weak
prior where it does not, a cluster bootstrap.

Human preferences are few and often separable — a system that wins every comparison it is in,
a chain A > B > C, groups never compared with each other. There the maximum-likelihood θ is
infinite, a tiny ridge makes it merely huge (θ ≈ 11) and a percentile bootstrap over single
comparisons returns the same huge value in nearly every resample: a tight, meaningless
interval. This module says when the data are like that (:func:`comparison_structure`). Where
the MLE exists it is the estimate, as Chatbot Arena and published Bradley–Terry analyses
report it; only where it does not (and on request, ``prior="always"``) a weak Gaussian prior
θ ~ N(0, 1/λ) (:data:`PRIOR_PRECISION`) holds θ finite. Intervals resample whole clusters of
comparisons — items, topics, or annotator × item — rather than single rows
(:func:`bradley_terry_clustered`); :func:`prior_sensitivity` shows what the prior's width does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import ndtri, stdtrit  # normal and t quantiles; scipy.stats would add ~80 MiB to every web worker

from ._validate import check_choice, check_int, check_real, fail
from .ranking import _POINTS, _aggregate, _comparisons, _fit, _percentile_bounds, _problem, _sigmoid

__all__ = ["PRIOR_PRECISION", "PRIOR_MODES", "FEW_CLUSTERS", "comparison_structure", "bradley_terry_clustered", "prior_sensitivity"]

# θ ~ N(0, 2²): a difference of one prior sd (2.8 on θ_i − θ_j) is a 94 % win probability,
# so any effect the data support is left almost untouched, while a system with only wins ends
# near θ = 4 instead of running off to infinity.
PRIOR_PRECISION = 0.25
# "where_needed": the MLE, the prior only where the MLE does not exist (the whole data or a
# bootstrap resample separable); "always": the prior everywhere (a MAP estimate).
PRIOR_MODES = ("where_needed", "always")
# Fewer clusters than this: the interval says so (``few_clusters``). Cameron & Miller (2015, "A
# practitioner's guide to cluster-robust inference") put the trouble below 20–50 clusters; with
# the t(G − 1) correction the simulation of docs/statistics.md covers ≥ 0.92 at 5 topics, and
# below 5 nobody has measured it here.
FEW_CLUSTERS = 10


def _scored_against(a: np.ndarray, b: np.ndarray, wins: np.ndarray, total: np.ndarray, n: int) -> sparse.coo_matrix:
    """Edge u → v when v scored (won or tied) against u at least once."""
    a_scored, b_scored = wins > 0, (total - wins) > 0
    rows = np.concatenate([a[b_scored], b[a_scored]])
    cols = np.concatenate([b[b_scored], a[a_scored]])
    return sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))


def _is_separable(a, b, wins, total, n) -> bool:
    keep = total > 0
    if not keep.any():
        return n > 1
    graph = _scored_against(a[keep], b[keep], wins[keep], total[keep], n)
    return connected_components(graph, directed=True, connection="strong")[0] > 1


def comparison_structure(comparisons: Any, n_items: int | None = None, ties: str = "half") -> dict:
    """Whether the Bradley–Terry MLE exists for these comparisons and, if not, why.

    Returns ``{"components", "never_lose", "never_win", "separable"}``: ``components`` are the
    groups of items linked by any comparison (more than one: the groups cannot be placed on one
    scale); ``never_lose`` / ``never_win`` are groups of items (strongly connected components of
    the "scored against" graph, Ford 1957) that within their component never lost / never won
    against the other items they met — complete or quasi-complete separation; ``separable`` is
    true when any of this holds, i.e. the MLE does not exist (some θ would be infinite).
    """
    check_choice(ties, "ties", ("half", "exclude"))
    data = _comparisons(comparisons, n_items)
    pairs = _aggregate(data, ties)
    n = data.n_items
    wins, total = pairs.counts @ _POINTS, pairs.counts.sum(axis=1)
    keep = total > 0
    a, b, wins, total = pairs.a[keep], pairs.b[keep], wins[keep], total[keep]
    linked = sparse.coo_matrix((np.ones(a.size), (a, b)), shape=(n, n))
    n_comp, comp = connected_components(linked, directed=False)
    components = [np.flatnonzero(comp == c).tolist() for c in range(n_comp)]
    n_strong, strong = connected_components(_scored_against(a, b, wins, total, n), directed=True, connection="strong")
    # Between strong components u → v means v scored against u: a group with no edge in from
    # another group never scored against anyone outside it (never won), one with no edge out
    # was never scored against (never lost).
    cross = strong[a] != strong[b]
    graph = _scored_against(a, b, wins, total, n).tocoo()
    between = strong[graph.row] != strong[graph.col]
    has_in = np.zeros(n_strong, dtype=bool)
    has_out = np.zeros(n_strong, dtype=bool)
    has_in[strong[graph.col[between]]] = True
    has_out[strong[graph.row[between]]] = True
    met_outside = np.zeros(n_strong, dtype=bool)
    met_outside[strong[a[cross]]] = True
    met_outside[strong[b[cross]]] = True
    groups = [np.flatnonzero(strong == g).tolist() for g in range(n_strong)]
    never_lose = [groups[g] for g in range(n_strong) if met_outside[g] and not has_out[g]]
    never_win = [groups[g] for g in range(n_strong) if met_outside[g] and not has_in[g]]
    return {"components": components, "never_lose": never_lose, "never_win": never_win,
            "separable": n_comp > 1 or bool(never_lose) or bool(never_win)}


def _posterior_sd(a, b, total, theta: np.ndarray, ridge: float) -> np.ndarray:
    """Laplace standard deviations of the *centred* θ (what is reported): √diag(P H⁻¹ P), H the
    Hessian of the penalised negative log-likelihood at θ, P = I − J/n. The likelihood cannot
    see a common shift of all θ, so H⁻¹ alone would add the prior's shift variance 1/(nλ) to
    every system."""
    n = theta.size
    prob, _ = _sigmoid(theta[a] - theta[b])
    h = total * prob * (1.0 - prob)
    # ridge 0 (the MLE): J/n fills the one direction the likelihood cannot see, which P removes.
    hess = ridge * np.eye(n) if ridge > 0 else np.full((n, n), 1.0 / n)
    np.add.at(hess, (a, b), -h)
    np.add.at(hess, (b, a), -h)
    np.add.at(hess, (a, a), h)
    np.add.at(hess, (b, b), h)
    centre = np.eye(n) - 1.0 / n
    return np.sqrt(np.clip(np.diag(centre @ np.linalg.inv(hess) @ centre), 0.0, None))


def bradley_terry_clustered(
    comparisons: Any,
    clusters: Any = None,
    n_items: int | None = None,
    ties: str = "half",
    prior_precision: float = PRIOR_PRECISION,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    prior: str = "where_needed",
) -> dict[str, Any]:
    """Bradley–Terry θ with a percentile bootstrap that resamples whole ``clusters``.

    ``prior="where_needed"`` (default): the maximum-likelihood θ when it exists (the "scored
    against" graph strongly connected, :func:`comparison_structure`), else the MAP estimate under
    the prior θ ~ N(0, 1/``prior_precision``) (:func:`~.ranking.bradley_terry` with
    ``ridge = prior_precision``); each bootstrap resample likewise (``n_separable`` counts those
    that needed the prior). ``prior="always"``: the MAP estimate for the data and every resample.

    ``clusters``: one hashable label per comparison (e.g. the item, the topic, or (annotator,
    item)); comparisons sharing a label are drawn together, as they are not independent; clusters
    are numbered in first-seen order, the order in which the random draws index them. ``None``:
    each comparison is its own cluster. Returns ``{"estimate", "low", "high", "posterior_sd",
    "n_separable", "n_resamples", "n_clusters", "samples", "prior_used"}``. Where the estimate
    uses the prior, resampling cannot show the uncertainty — a system that wins every comparison
    wins them in every resample too — so the bounds are widened to cover the Laplace interval
    θ ± z·``posterior_sd`` (the posterior of the centred θ under the prior): never narrower than
    what the prior and data allow. ``posterior_sd`` at the MLE is the inverse observed
    information's.

    **Few clusters.** With ``clusters`` given, G of them, a percentile bootstrap over G clusters is
    too narrow when G is small (its variance is (G − 1)/G of the unbiased one and its tails are
    normal where a t with G − 1 degrees of freedom belongs; at 5 topics it covered 79–85 % at
    nominal 95 %). The bounds are widened to cover θ̂ ± t_{G−1}·√(G/(G − 1))·sd*, sd* the
    bootstrap standard deviation (the CR1 scaling with t(G − 1) critical values; Cameron & Miller
    2015, §VI). ``small_sample_factor`` is that multiplier (None: no clusters given, or G < 2,
    where no interval is possible and ``few_clusters`` says so); ``few_clusters`` is True below
    :data:`FEW_CLUSTERS`.
    """
    check_choice(ties, "ties", ("half", "exclude"))
    check_choice(prior, "prior", PRIOR_MODES)
    ridge = check_real(prior_precision, "prior_precision", low=0.0, low_open=True)
    resamples = check_int(n_resamples, "n_resamples", low=1)
    level = check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True, high_open=True)
    data = _comparisons(comparisons, n_items)
    pairs = _aggregate(data, ties)
    n = data.n_items
    counts = pairs.counts
    wins_all, total_all = counts @ _POINTS, counts.sum(axis=1)
    prior_used = prior == "always" or _is_separable(pairs.a, pairs.b, wins_all, total_all, n)
    point_ridge = ridge if prior_used else 0.0
    estimate = _fit(_problem(pairs.a, pairs.b, wins_all, total_all, n, point_ridge), None)
    n_rows = data.outcome.size
    if clusters is None:
        cluster_index = np.arange(n_rows)
    else:
        labels = list(clusters)
        if len(labels) != n_rows:
            fail(f"clusters must give one label per comparison: {n_rows} comparisons, {len(labels)} labels")
        numbers: dict[Any, int] = {}  # first-seen order: the draws index clusters in this order
        cluster_index = np.array([numbers.setdefault(label, len(numbers)) for label in labels], dtype=np.intp)
    n_clusters = int(cluster_index.max()) + 1 if n_rows else 0
    # Cluster × (pair, outcome) cell counts: a resample is a multiplicity vector times this.
    kept = pairs.cell < counts.size
    membership = sparse.csr_matrix(
        (np.ones(int(kept.sum())), (cluster_index[kept], pairs.cell[kept])), shape=(max(n_clusters, 1), counts.size)
    )
    samples = np.empty((resamples, n))
    n_separable = 0
    if n_clusters == 0:
        samples[:] = estimate
    else:
        rng = np.random.default_rng(seed)
        for r in range(resamples):
            weights = np.bincount(rng.integers(0, n_clusters, n_clusters), minlength=n_clusters).astype(float)
            drawn = np.asarray(membership.T @ weights).reshape(-1, 3)
            wins, total = drawn @ _POINTS, drawn.sum(axis=1)
            separable = _is_separable(pairs.a, pairs.b, wins, total, n)
            n_separable += separable
            resample_ridge = ridge if prior == "always" or separable else 0.0
            samples[r] = _fit(_problem(pairs.a, pairs.b, wins, total, n, resample_ridge), estimate)
    low, high = _percentile_bounds(samples, level)
    keep = total_all > 0
    sd = _posterior_sd(pairs.a[keep], pairs.b[keep], total_all[keep], estimate, point_ridge)
    if prior_used:
        z = float(ndtri(0.5 + level / 2.0))
        low, high = np.minimum(low, estimate - z * sd), np.maximum(high, estimate + z * sd)
    factor = None
    if clusters is not None and n_clusters >= 2 and resamples >= 2:
        factor = float(stdtrit(n_clusters - 1, 0.5 + level / 2.0)) * float(np.sqrt(n_clusters / (n_clusters - 1)))
        spread = factor * samples.std(axis=0, ddof=1)
        low, high = np.minimum(low, estimate - spread), np.maximum(high, estimate + spread)
    return {"estimate": estimate, "low": low, "high": high, "posterior_sd": sd, "n_separable": n_separable,
            "n_resamples": resamples, "n_clusters": n_clusters, "samples": samples, "prior_used": prior_used,
            "small_sample_factor": factor, "few_clusters": clusters is not None and n_clusters < FEW_CLUSTERS}


def prior_sensitivity(comparisons: Any, n_items: int | None = None, ties: str = "half",
                      prior_sds: Any = (1.0, 2.0, 4.0)) -> dict[str, Any]:
    """The MAP θ (centred) under θ ~ N(0, sd²) for each prior sd in ``prior_sds``: how much an
    estimate that needs the prior owes to its width (the default prior is sd 2). Returns
    ``{"prior_sd": [...], "estimates": array (len(prior_sds), n_items)}``."""
    check_choice(ties, "ties", ("half", "exclude"))
    sds = [check_real(v, "prior_sds", low=0.0, low_open=True) for v in prior_sds]
    data = _comparisons(comparisons, n_items)
    pairs = _aggregate(data, ties)
    wins, total = pairs.counts @ _POINTS, pairs.counts.sum(axis=1)
    estimates = np.array([_fit(_problem(pairs.a, pairs.b, wins, total, data.n_items, 1.0 / (sd * sd)), None)
                          for sd in sds])
    return {"prior_sd": sds, "estimates": estimates}
