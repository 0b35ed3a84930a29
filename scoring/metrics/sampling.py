"""Which judged units experts label, and each unit's inclusion probability π.

A calibrated score (:mod:`.calibration`) is valid only when the labelled units are a random
sample with known π (Horvitz & Thompson 1952). Three designs:

* :func:`uniform_sample`: n of N units without replacement, π = n/N for each;
* :func:`stratified_sample`: the same within each stratum (a system, a judge step), n split
  over the strata in proportion to their sizes (largest remainders, at least one each while
  n allows), π_h = n_h / N_h;
* :func:`uncertainty_probabilities` + :func:`poisson_sample`: active statistical inference
  (Zrnic & Candès, "Active Statistical Inference", ICML 2024, §3): each unit is included
  independently with π_i ∝ the judge's uncertainty on it (their optimal rule takes π_i ∝
  √E[(Y − f)² | X], which an uncertainty score stands in for), mixed with a uniform share so
  that every π_i is at least ``floor_share`` · n/N — the weights 1/π stay bounded, and so
  does the variance — then capped at 1 with the excess given back to the others.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
import numpy as np

from ._validate import check_int, check_real, fail

__all__ = ["uniform_sample", "stratified_sample", "uncertainty_probabilities", "poisson_sample"]


def uniform_sample(n_units: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(chosen indices in random order, π of each chosen unit) for a simple random sample."""
    check_int(n_units, "n_units", low=0)
    check_int(n, "n", low=1)
    n = min(n, n_units)
    chosen = rng.permutation(n_units)[:n]
    return chosen, np.full(chosen.size, n / n_units if n_units else 0.0)


def _allocate(sizes: np.ndarray, n: int) -> np.ndarray:
    """n split in proportion to ``sizes`` (largest remainders), at least one per stratum while n allows."""
    total = sizes.sum()
    exact = sizes * n / total
    counts = np.floor(exact).astype(int)
    if n >= sizes.size:
        counts = np.maximum(counts, np.minimum(1, sizes))
    while counts.sum() > n:  # the floor of one per stratum overshot: take from the largest
        counts[np.argmax(counts - exact)] -= 1
    order = np.argsort(-(exact - counts), kind="stable")
    k = 0
    while counts.sum() < n:
        i = order[k % sizes.size]
        if counts[i] < sizes[i]:
            counts[i] += 1
        k += 1
    return np.minimum(counts, sizes)


def stratified_sample(strata: Sequence[Hashable], n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(chosen indices in random order, π of each) for a proportionally allocated stratified
    sample; ``strata[i]`` is unit i's stratum."""
    check_int(n, "n", low=1)
    keys = list(dict.fromkeys(strata))
    codes = np.array([keys.index(s) for s in strata], dtype=int) if len(strata) else np.zeros(0, dtype=int)
    sizes = np.bincount(codes, minlength=len(keys)) if keys else np.zeros(0, dtype=int)
    n = min(n, int(sizes.sum()))
    if n == 0:
        return np.zeros(0, dtype=int), np.zeros(0)
    counts = _allocate(sizes, n)
    chosen, pis = [], []
    for h in range(len(keys)):
        members = np.flatnonzero(codes == h)
        take = rng.permutation(members)[: counts[h]]
        chosen.append(take)
        pis.append(np.full(take.size, counts[h] / sizes[h]))
    chosen_all, pi_all = np.concatenate(chosen), np.concatenate(pis)
    order = rng.permutation(chosen_all.size)  # the order items are offered in: random, so any prefix is random too
    return chosen_all[order], pi_all[order]


def uncertainty_probabilities(uncertainty: Sequence[float], n: float, *, floor_share: float = 0.2) -> np.ndarray:
    """π_i with Σ π_i = n (expected sample size): a ``floor_share`` of the budget spread
    uniformly, the rest in proportion to ``uncertainty`` (≥ 0), each π capped at 1."""
    u = np.asarray(uncertainty, dtype=float).reshape(-1)
    if u.size == 0:
        return u
    if not np.all(np.isfinite(u)) or np.any(u < 0):
        fail("uncertainty must be finite numbers ≥ 0")
    check_real(n, "n", low=0.0, low_open=True)
    check_real(floor_share, "floor_share", low=0.0, high=1.0, low_open=True)
    n = min(float(n), float(u.size))
    shape = floor_share / u.size + (1.0 - floor_share) * (u / u.sum() if u.sum() > 0 else np.full(u.size, 1 / u.size))
    pi = n * shape
    for _ in range(u.size):  # cap at 1 and hand the excess to the uncapped units, proportionally
        over = pi > 1.0
        if not over.any():
            break
        excess = (pi[over] - 1.0).sum()
        pi[over] = 1.0
        free = ~over & (pi < 1.0)
        if not free.any():
            break
        pi[free] += excess * pi[free] / pi[free].sum()
    return np.minimum(pi, 1.0)


def poisson_sample(pi: Sequence[float], rng: np.random.Generator) -> np.ndarray:
    """Indices of the units drawn, each independently with its probability, in random order."""
    p = np.asarray(pi, dtype=float).reshape(-1)
    if np.any(p < 0) or np.any(p > 1):
        fail("inclusion probabilities must be in [0, 1]")
    chosen = np.flatnonzero(rng.random(p.size) < p)
    return rng.permutation(chosen)
