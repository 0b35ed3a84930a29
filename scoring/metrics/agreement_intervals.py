"""Bootstrap intervals for agreement coefficients, resampling items (units), not single labels.

Labels of one item are not independent draws — the item is the unit of the rating design —
so a resample draws whole items with replacement and recomputes the coefficient on them.
Both functions compute every resample from counts (a confusion table for Cohen's κ, the
Krippendorff coincidence matrix for α), so a thousand resamples cost a thousand small
matrix products, not a thousand passes over the labels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from ._arrays import unique_inverse
from ._validate import check_choice, check_int, check_real, fail

__all__ = ["cohen_kappa_bootstrap", "krippendorff_alpha_bootstrap", "MAX_BOOTSTRAP_CATEGORIES"]

# Above this many distinct values the K² coincidence cells per resample cost more than the
# interval is worth (a verify project whose every edit is its own category).
MAX_BOOTSTRAP_CATEGORIES = 200
# Elements per temporary array of a batch of resamples (8 bytes each: 4 MiB). A batch holds
# two such arrays at once. These functions run in web processes (the agreement dashboard): a
# batch of 2²² elements with a resample × item weight matrix made a 160 MiB peak whatever the
# number of items. The batch size does not change the results: a generator's stream does not
# depend on how it is split, and the statistics are sums of integer counts.
_BATCH_ELEMENTS = 1 << 19


def _bounds(samples: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None, None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def _codes(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        fail(f"{name} must be one-dimensional")
    return arr


def cohen_kappa_bootstrap(a: Any, b: Any, n_resamples: int = 1000, confidence: float = 0.95,
                          seed: int | None = 0, weights: str | None = None) -> dict[str, Any]:
    """Cohen's κ of two coders over shared items, with observed agreement and a percentile
    bootstrap interval over items: ``{"kappa", "observed", "n", "low", "high", "n_undefined"}``.
    A resample where κ is undefined (both coders used one single category, pₑ = 1) is counted in
    ``n_undefined`` and left out of the interval.

    ``weights``: ``None`` (unweighted), ``"linear"`` or ``"quadratic"``: weighted κ = 1 − Σ w O /
    Σ w E with w_ij = |v_i − v_j| or (v_i − v_j)², v the labels' numbers — for an ordinal
    scale, each label's position in it (``cohen_kappa(..., weights=, labels=scale)``, sklearn's
    ``cohen_kappa_score(weights=, labels=scale)``)."""
    check_choice(weights, "weights", (None, "linear", "quadratic"))
    x, y = _codes(a, "a"), _codes(b, "b")
    if weights is not None and not (np.issubdtype(x.dtype, np.number) and np.issubdtype(y.dtype, np.number)):
        fail("weighted kappa needs numbers: each label's position on the ordered scale")
    if x.size != y.size:
        fail(f"a and b must rate the same items; got {x.size} and {y.size} labels")
    resamples = check_int(n_resamples, "n_resamples", low=1)
    level = check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True, high_open=True)
    n = x.size
    out = {"kappa": None, "observed": None, "n": n, "low": None, "high": None, "n_undefined": 0}
    if n == 0:
        return out
    categories, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
    codes = codes.ravel()
    cx, cy = codes[:n], codes[n:]
    k = int(codes.max()) + 1
    cell = cx * k + cy  # each item's cell of the K × K confusion table
    if weights is not None:
        distance = np.abs(categories.astype(float)[:, None] - categories.astype(float)[None, :])
        w = distance if weights == "linear" else distance**2

    def kappa(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """κ and observed agreement per confusion table (resample × K × K counts)."""
        total = tables.sum(axis=(1, 2))
        po = np.trace(tables, axis1=1, axis2=2) / total
        if weights is not None:
            expected = np.einsum("ri,rj->rij", tables.sum(axis=2), tables.sum(axis=1)) / total[:, None, None]
            disagreement = np.einsum("rij,ij->r", tables, w)
            chance = np.einsum("rij,ij->r", expected, w)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(np.isclose(chance, 0.0), np.nan, 1.0 - disagreement / chance), po
        pe = np.einsum("rc,rc->r", tables.sum(axis=2), tables.sum(axis=1)) / total**2
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.isclose(pe, 1.0), np.nan, (po - pe) / (1.0 - pe)), po

    full, observed = kappa(np.bincount(cell, minlength=k * k).reshape(1, k, k).astype(float))
    out["kappa"] = None if np.isnan(full[0]) else float(full[0])
    out["observed"] = float(observed[0])
    rng = np.random.default_rng(seed)
    # A resample's table counts the cells of the items it drew: no resample × item matrix.
    batch = max(1, min(resamples, _BATCH_ELEMENTS // max(n, k * k)))
    samples = []
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        cells = cell[rng.integers(0, n, size=(size, n))]
        cells += (np.arange(size) * (k * k))[:, None]
        tables = np.bincount(cells.ravel(), minlength=size * k * k).reshape(size, k, k).astype(float)
        samples.append(kappa(tables)[0])
    values = np.concatenate(samples)
    out["n_undefined"] = int(np.isnan(values).sum())
    out["low"], out["high"] = _bounds(values, level)
    return out


def _coincidence_rows(unit: np.ndarray, code: np.ndarray, k: int) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Per pairable unit its contribution to Krippendorff's coincidence matrix, flattened to
    K² columns: (n_u n_uᵀ − diag n_u) / (m_u − 1), n_u the unit's value counts, m_u its size."""
    units, u_index = unique_inverse(unit)
    counts = np.bincount(u_index * k + code, minlength=units.size * k).reshape(units.size, k).astype(float)
    m = counts.sum(axis=1)
    keep = m >= 2
    counts, m = counts[keep], m[keep]
    parts = []
    step = max(1, _BATCH_ELEMENTS // (k * k))  # units per chunk: the dense K × K blocks stay small
    for start in range(0, counts.shape[0], step):
        c, size = counts[start:start + step], m[start:start + step]
        blocks = (c[:, :, None] * c[:, None, :] - c[:, :, None] * np.eye(k)[None]) / (size - 1)[:, None, None]
        parts.append(sparse.csr_matrix(blocks.reshape(c.shape[0], k * k)))
    return (sparse.vstack(parts).tocsr() if parts else sparse.csr_matrix((0, k * k))), keep


def _alpha_from_coincidences(o: np.ndarray, delta: np.ndarray | None, level: str, values: np.ndarray) -> np.ndarray:
    """α per row of ``o`` (resample × K² coincidences)."""
    k = values.size
    o = o.reshape(-1, k, k)
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    if level == "ordinal":
        # δ²(c, k) = (Σ_{g between c and k} n_g − (n_c + n_k)/2)², from each resample's marginals
        cum = np.cumsum(n_c, axis=1)
        lo = np.minimum.outer(np.arange(k), np.arange(k))
        hi = np.maximum.outer(np.arange(k), np.arange(k))
        between = cum[:, hi] - np.concatenate([np.zeros((n_c.shape[0], 1)), cum], axis=1)[:, lo]
        d = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2.0) ** 2
    else:
        d = np.broadcast_to(delta, o.shape)
    observed = (o * d).sum(axis=(1, 2))
    expected = np.einsum("rc,rk,rck->r", n_c, n_c, d)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1) * observed / expected, np.nan)


def krippendorff_alpha_bootstrap(units: Any, values: Any, level: str = "nominal", n_resamples: int = 1000,
                                 confidence: float = 0.95, seed: int | None = 0) -> dict[str, Any]:
    """Krippendorff's α (one row per rating: the unit rated and the value given) with observed
    agreement and a percentile bootstrap interval over units: ``{"alpha", "observed",
    "n_units", "low", "high", "n_undefined", "samples"}``. ``observed`` is the share of
    agreeing ordered pairs of values within units (each unit weighted by its m_u − 1, as in
    α's coincidence matrix). Only units with at least two ratings count. With more than
    :data:`MAX_BOOTSTRAP_CATEGORIES` distinct values the bounds are ``None``."""
    check_choice(level, "level", ("nominal", "ordinal", "interval"))
    resamples = check_int(n_resamples, "n_resamples", low=1)
    conf = check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True, high_open=True)
    unit, raw = _codes(units, "units"), _codes(values, "values")
    if unit.size != raw.size:
        fail(f"units and values must have one entry per rating; got {unit.size} and {raw.size}")
    if level != "nominal":
        raw = raw.astype(float)
    distinct, code = unique_inverse(raw)
    k = distinct.size
    out = {"alpha": None, "observed": None, "n_units": 0, "low": None, "high": None, "n_undefined": 0, "samples": None}
    if k > MAX_BOOTSTRAP_CATEGORIES:
        fail(f"{k} distinct values: more than {MAX_BOOTSTRAP_CATEGORIES}, too many for the coincidence bootstrap")
    rows, _ = _coincidence_rows(unit, code, k)
    out["n_units"] = rows.shape[0]
    if rows.shape[0] == 0:
        return out
    delta = None
    if level == "nominal":
        delta = 1.0 - np.eye(k)
    elif level == "interval":
        delta = np.subtract.outer(distinct, distinct) ** 2
    full = np.asarray(rows.sum(axis=0)).reshape(1, -1)
    alpha = _alpha_from_coincidences(full, delta, level, distinct)[0]
    out["alpha"] = None if np.isnan(alpha) else float(alpha)
    out["observed"] = float(np.trace(full.reshape(k, k)) / full.sum())
    rng = np.random.default_rng(seed)
    n_units = rows.shape[0]
    samples = np.empty(resamples)
    for r in range(resamples):
        weights = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units).astype(float)
        coincidences = np.asarray(rows.T @ weights).reshape(1, -1)
        samples[r] = _alpha_from_coincidences(coincidences, delta, level, distinct)[0]
    out["n_undefined"] = int(np.isnan(samples).sum())
    out["low"], out["high"] = _bounds(samples, conf)
    out["samples"] = samples
    return out
