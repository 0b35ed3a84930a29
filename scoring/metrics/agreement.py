"""Inter-annotator agreement: percent agreement, Cohen's κ, Fleiss' κ, Krippendorff's α.

The papers validate automatic judges against human experts with agreement
rates (ReportBench App. A.2.3: 84–96 %; DeepScholar-bench Table 3) and the
annotation tool reports chance-corrected agreement between annotators.
Undefined statistics (no variation at all, nothing to compare) return
``None`` rather than NaN.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse

from ._arrays import unique_inverse
from ._validate import as_numeric, check_choice, check_real, check_same_length, fail

__all__ = ["percent_agreement", "cohen_kappa", "fleiss_kappa", "fleiss_kappa_units", "krippendorff_alpha",
           "krippendorff_alpha_units", "landis_koch"]


def _as_array(values: Any) -> np.ndarray:
    """``np.asarray`` that does not let NumPy turn numbers into strings behind our back."""
    arr = np.asarray(values)
    if arr.dtype.kind == "U" and not isinstance(values, np.ndarray):
        as_objects = np.asarray(values, dtype=object)
        if not all(isinstance(v, str) for v in as_objects.ravel()):
            return as_objects  # mixed content: reported by the caller's element check
    return arr


def _labels(values: Any, name: str) -> np.ndarray:
    """A 1-D array of labels that are all strings or all real numbers (no missing values)."""
    if isinstance(values, (str, bytes)) or values is None:
        fail(f"{name} must be a sequence of labels; got {type(values).__name__}")
    arr = _as_array(values)
    if arr.ndim != 1:
        fail(f"{name} must be a flat sequence of labels; got shape {arr.shape}")
    if arr.dtype.kind in "Ub":
        return arr
    if arr.dtype.kind in "iuf":
        nan = np.isnan(arr) if arr.dtype.kind == "f" else np.zeros(arr.shape, dtype=bool)
        if nan.any():
            fail(f"{name} contains a missing value (NaN) at position {int(np.argmax(nan))}")
        return arr
    is_str = np.fromiter((isinstance(v, str) for v in arr), dtype=bool, count=arr.size)
    if is_str.all():
        return arr.astype(str)
    k = int(np.argmax(~is_str))
    fail(f"{name} must contain only strings or only numbers; found {arr[k]!r} at position {k}")
    raise AssertionError  # unreachable


def percent_agreement(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Share of items on which two raters give the same label (0–1); ``None`` for no item."""
    x, y = _labels(a, "a"), _labels(b, "b")
    check_same_length("a", x, "b", y)
    if x.size == 0:
        return None
    if (x.dtype.kind == "U") != (y.dtype.kind == "U"):
        fail("a and b must both hold strings or both hold numbers")
    return float(np.mean(x == y))


def _encode_pair(x: np.ndarray, y: np.ndarray, labels: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray, int]:
    if labels is None:
        categories, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
        return codes[: x.size], codes[x.size :], categories.size
    cats = _labels(labels, "labels")
    both = np.concatenate([x, y])
    if cats.size == 0 or (cats.dtype.kind == "U") != (both.dtype.kind == "U"):
        fail(f"labels {cats.tolist()} must list the raters' labels (strings for strings, numbers for numbers)")
    if np.unique(cats).size != cats.size:
        fail("labels must not contain duplicates")
    order = np.argsort(cats)
    sorted_cats = cats[order]
    pos = np.clip(np.searchsorted(sorted_cats, both), 0, cats.size - 1)
    missing = sorted_cats[pos] != both
    if missing.any():
        fail(f"label {both[missing][0]!r} is not among labels {cats.tolist()}")
    codes = order[pos]
    return codes[: x.size], codes[x.size :], cats.size


def cohen_kappa(a: Sequence[Any], b: Sequence[Any], weights: str | None = None, labels: Sequence[Any] | None = None) -> float | None:
    """Cohen's κ between two raters, optionally weighted.

    κ = 1 − Σ w_ij O_ij / Σ w_ij E_ij with O the observed and E the
    chance-expected (product of marginals) confusion proportions and
    w_ij = 𝟙[i ≠ j] (unweighted), |i − j| (``"linear"``) or (i − j)²
    (``"quadratic"``), i and j being positions in the category order: the
    sorted labels, or ``labels`` when given (needed for weighted κ on string
    labels, whose sorted order is rarely the scale order).  ``None`` when κ is
    undefined (no item, or both raters use one and the same category).
    """
    check_choice(weights, "weights", (None, "linear", "quadratic"))
    x, y = _labels(a, "a"), _labels(b, "b")
    check_same_length("a", x, "b", y)
    if x.size and (x.dtype.kind == "U") != (y.dtype.kind == "U"):
        fail("a and b must both hold strings or both hold numbers")
    if weights is not None and labels is None and (x.dtype.kind == "U" or y.dtype.kind == "U"):
        fail("weighted kappa on string labels needs labels=[...] giving the order of the scale")
    if x.size == 0:
        return None
    cx, cy, k = _encode_pair(x, y, labels)
    observed = np.bincount(cx * k + cy, minlength=k * k).reshape(k, k) / x.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    idx = np.arange(k)
    distance = np.abs(idx[:, None] - idx[None, :]).astype(float)
    w = (distance > 0).astype(float) if weights is None else distance if weights == "linear" else distance**2
    denominator = float((w * expected).sum())
    if denominator == 0:
        return None
    return 1.0 - float((w * observed).sum()) / denominator


def fleiss_kappa(counts: Any) -> float | None:
    """Fleiss' κ from an items × categories count matrix (equal raters per item).

    ``counts[i, j]`` is the number of raters who put item i in category j; all
    rows must sum to the same n ≥ 2.  P̄ = mean_i (Σ_j n_ij² − n) / (n(n−1)),
    P_e = Σ_j p_j² with p_j the overall share of category j, κ = (P̄ − P_e) / (1 − P_e).
    ``None`` when P_e = 1 (every rating in one category).
    """
    table = as_numeric(counts, "counts", ndim=2, allow_empty=False)
    if (table < 0).any() or (table != np.round(table)).any():
        fail("counts must be non-negative integers")
    raters = table.sum(axis=1)
    if (raters != raters[0]).any():
        row = int(np.argmax(raters != raters[0]))
        fail(f"every item must be rated by the same number of raters; row 0 has {raters[0]:g}, row {row} has {raters[row]:g}")
    n = raters[0]
    if n < 2:
        fail(f"each item needs at least 2 ratings; got {n:g}")
    share = table.sum(axis=0) / table.sum()
    p_bar = float(((table**2).sum(axis=1) - n).mean() / (n * (n - 1)))
    p_e = float((share**2).sum())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def _long_format(units: Any, values: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit index 0..U−1 per value, labels, values per unit) of one-row-per-rating data."""
    unit_arr = _as_array(units)
    if unit_arr.ndim != 1:
        fail(f"units must be a flat sequence of unit ids; got shape {unit_arr.shape}")
    vals = _labels(values, "values")
    check_same_length("units", unit_arr, "values", vals)
    if unit_arr.size and unit_arr.dtype.kind not in "iuU":
        fail(f"units must hold integer or string unit ids; got {unit_arr.dtype}")
    _, unit_index, per_unit = unique_inverse(unit_arr, counts=True)
    return unit_index, vals, per_unit


def fleiss_kappa_units(units: Any, values: Any) -> float | None:
    """Fleiss' κ from one row per rating — ``units[i]`` rated ``values[i]`` — without forming the
    items × categories matrix (bounded memory for many items and many distinct labels).

    The same statistic as :func:`fleiss_kappa` on the count matrix those ratings make: every
    unit must have the same number n ≥ 2 of ratings.
    """
    unit_index, vals, raters = _long_format(units, values)
    if vals.size == 0:
        fail("values must not be empty")
    if (raters != raters[0]).any():
        k = int(np.argmax(raters != raters[0]))
        fail(f"every unit must be rated by the same number of raters; unit 0 has {raters[0]}, unit {k} has {raters[k]}")
    n = float(raters[0])
    if n < 2:
        fail(f"each unit needs at least 2 ratings; got {n:g}")
    _, category, totals = unique_inverse(vals, counts=True)
    cells, cell_counts = np.unique(unit_index * totals.size + category, return_counts=True)
    sum_squares = np.bincount(cells // totals.size, cell_counts.astype(float) ** 2, minlength=raters.size)
    share = totals / totals.sum()
    p_bar = float((sum_squares - n).mean() / (n * (n - 1)))
    p_e = float((share**2).sum())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


# --------------------------------------------------------------------------- Krippendorff


def _domain_positions(items: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Index of each item in ``domain``; raises for items outside it."""
    order = np.argsort(domain, kind="stable")
    ordered = domain[order]
    pos = np.clip(np.searchsorted(ordered, items), 0, max(domain.size - 1, 0))
    bad = ordered[pos] != items if domain.size else np.ones(items.size, dtype=bool)
    if bad.any():
        fail(f"reliability_data value {items[bad][0]!r} is not in value_domain")
    return order[pos].astype(float)


def _split_object_matrix(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Object matrix -> (numeric values with NaN, None) or (missing mask, string labels)."""
    flat = arr.ravel()
    missing = np.fromiter((v is None or (isinstance(v, float) and np.isnan(v)) for v in flat), bool, flat.size)
    is_str = np.fromiter((isinstance(v, str) for v in flat), bool, flat.size)
    if is_str.any() and not is_str[~missing].all():
        k = int(np.argmax(~is_str & ~missing))
        fail(f"reliability_data mixes strings and non-strings (found {flat[k]!r}); use one kind of label")
    if is_str.any():
        return missing.reshape(arr.shape), flat[~missing].astype(str)
    return as_numeric(arr, "reliability_data", ndim=2, allow_missing=True), None


def _reliability_values(data: Any, level: str, value_domain: Sequence[Any] | None) -> np.ndarray:
    """coders × units float matrix, NaN for missing; string labels become positions in their domain."""
    if isinstance(data, (str, bytes)) or data is None:
        fail("reliability_data must be a coders x units matrix")
    try:
        arr = _as_array(data)
    except ValueError:
        fail("reliability_data must be a rectangular coders x units matrix")
    if arr.ndim != 2:
        fail(f"reliability_data must be 2-dimensional (coders x units); got shape {arr.shape}")
    labels = None
    if arr.dtype.kind == "U":
        if (arr == "nan").any():
            fail("reliability_data holds the string 'nan': mark missing string labels with None")
        missing, labels = np.zeros(arr.shape, dtype=bool), arr.ravel()
    elif arr.dtype == object:
        split = _split_object_matrix(arr)
        if split[1] is None:
            values = split[0]
        else:
            missing, labels = split
    else:
        values = as_numeric(arr, "reliability_data", ndim=2, allow_nan=True)
    if labels is not None:
        if level in ("interval", "ratio"):
            fail(f"{level} alpha needs numeric values; got string labels")
        if level == "ordinal" and value_domain is None:
            fail("ordinal alpha on string labels needs value_domain=[...] giving their order")
        domain = np.unique(labels) if value_domain is None else _labels(value_domain, "value_domain").astype(str)
        values = np.full(arr.shape, np.nan)
        values[~missing] = _domain_positions(labels, domain)
        return values
    if value_domain is not None:
        domain = as_numeric(value_domain, "value_domain")
        mask = ~np.isnan(values)
        positions = _domain_positions(values[mask], domain)
        if level == "ordinal":  # the domain's order, not the numeric order, defines the scale
            values = values.copy()
            values[mask] = positions
    return values


def _squared_distance_alpha(values: np.ndarray, unit: np.ndarray, m: np.ndarray, n: int) -> float | None:
    """Interval α from per-unit sums of squares (no coincidence matrix needed)."""
    units = m.size
    unit_mean = np.bincount(unit, values, minlength=units) / m
    within = np.bincount(unit, (values - unit_mean[unit]) ** 2, minlength=units)
    observed = float(np.sum(2.0 * m * within / (m - 1)))  # Σ_u Σ_{i≠j} (v_i − v_j)² / (m_u − 1)
    expected = float(2.0 * n * np.sum((values - values.mean()) ** 2))  # Σ_{i≠j} over all pairable values
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


def _mid_ranks(values: np.ndarray) -> np.ndarray:
    """Replace values by the mid-point of their cumulative frequency: ordinal δ becomes squared difference."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    mid = np.cumsum(counts) - counts / 2.0
    return mid[inverse]


def _unit_value_counts(codes: np.ndarray, unit: np.ndarray, n_units: int, n_values: int) -> sparse.csr_matrix:
    return sparse.csr_matrix((np.ones(codes.size), (unit, codes)), shape=(n_units, n_values))


def _nominal_alpha(values: np.ndarray, unit: np.ndarray, m: np.ndarray, n: int) -> float | None:
    _, codes, totals = np.unique(values, return_inverse=True, return_counts=True)
    per_unit = _unit_value_counts(codes, unit, m.size, totals.size)
    same_pairs = np.asarray(per_unit.multiply(per_unit).sum(axis=1)).ravel()  # Σ_c n_uc²
    observed = float(np.sum((m**2 - same_pairs) / (m - 1)))  # Σ_{c≠k} o_ck
    expected = float(n**2 - np.sum(totals.astype(float) ** 2))  # Σ_{c≠k} n_c n_k
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


def _ratio_delta(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    total = u + v
    return np.divide(u - v, total, out=np.zeros(np.broadcast(u, v).shape), where=total != 0) ** 2


def _ratio_alpha(values: np.ndarray, unit: np.ndarray, m: np.ndarray, n: int) -> float | None:
    if (values < 0).any():
        fail("ratio alpha needs non-negative values")
    distinct, codes, totals = np.unique(values, return_inverse=True, return_counts=True)
    per_unit = _unit_value_counts(codes, unit, m.size, distinct.size)
    coincidences = (per_unit.T @ sparse.diags(1.0 / (m - 1)) @ per_unit).tocoo()
    # The diagonal correction of the coincidence matrix is irrelevant: δ(c, c) = 0.
    observed = float(np.sum(coincidences.data * _ratio_delta(distinct[coincidences.row], distinct[coincidences.col])))
    weights = totals.astype(float)
    expected = 0.0
    step = max(1, (1 << 22) // max(1, distinct.size))
    for start in range(0, distinct.size, step):
        block = _ratio_delta(distinct[start : start + step, None], distinct[None, :])
        expected += float(weights[start : start + step] @ block @ weights)
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


def krippendorff_alpha(
    reliability_data: Any, level: str = "nominal", value_domain: Sequence[Any] | None = None
) -> float | None:
    """Krippendorff's α for a coders × units matrix with missing values (NaN or ``None``).

    α = 1 − D_o / D_e with the coincidence-matrix formulation: only units
    coded by at least two coders are pairable; each pairable unit u with m_u
    values contributes its ordered value pairs with weight 1/(m_u − 1), and
    D_e uses all pairs of pairable values.  Distances δ: nominal 𝟙[c ≠ k];
    ordinal (Σ_{g=c..k} n_g − (n_c + n_k)/2)²; interval (c − k)²;
    ratio ((c − k)/(c + k))².  Nominal, interval and ordinal (interval on
    frequency mid-ranks, which is algebraically the same distance) are
    computed from per-unit sums without forming the value × value matrix;
    ratio uses a sparse coincidence matrix.  String labels are allowed for
    nominal, and for ordinal with ``value_domain`` giving their order.
    ``None`` when α is undefined (all pairable values identical).
    """
    check_choice(level, "level", ("nominal", "ordinal", "interval", "ratio"))
    values = _reliability_values(reliability_data, level, value_domain)
    present = ~np.isnan(values)
    per_unit = present.sum(axis=0)
    pairable = per_unit >= 2
    if not pairable.any():
        fail("no unit has values from at least two coders, so agreement cannot be measured")
    present = present[:, pairable]
    flat = values[:, pairable][present]
    unit = np.nonzero(present)[1]
    return _alpha_of_pairable(flat, unit, per_unit[pairable].astype(float), level)


def krippendorff_alpha_units(units: Any, values: Any, level: str = "nominal") -> float | None:
    """Krippendorff's α from one row per coded value — unit ``units[i]`` was coded ``values[i]``
    — instead of the coders × units matrix: the same statistic as :func:`krippendorff_alpha`
    (coders do not enter α, only which values share a unit), in memory proportional to the
    number of values however many coders and units there are.

    Units with fewer than two values are not pairable and are left out. String labels are
    allowed for the nominal level only.
    """
    check_choice(level, "level", ("nominal", "ordinal", "interval", "ratio"))
    unit_index, vals, per_unit = _long_format(units, values)
    if vals.dtype.kind == "U":
        if level != "nominal":
            fail(f"{level} alpha needs numeric values; got string labels")
        vals = np.unique(vals, return_inverse=True)[1].ravel()
    pairable = per_unit >= 2
    if not pairable.any():
        fail("no unit has values from at least two coders, so agreement cannot be measured")
    keep = pairable[unit_index]
    renumbered = np.cumsum(pairable) - 1
    return _alpha_of_pairable(vals[keep].astype(float), renumbered[unit_index[keep]],
                              per_unit[pairable].astype(float), level)


def _alpha_of_pairable(flat: np.ndarray, unit: np.ndarray, m: np.ndarray, level: str) -> float | None:
    """α from the pairable values ``flat``, their unit index ``unit`` and the values per unit ``m``."""
    n = int(m.sum())
    if level == "nominal":
        return _nominal_alpha(flat, unit, m, n)
    if level == "ratio":
        return _ratio_alpha(flat, unit, m, n)
    if level == "ordinal":
        flat = _mid_ranks(flat)
    return _squared_distance_alpha(flat, unit, m, n)


# --------------------------------------------------------------------------- reading


_LANDIS_KOCH = ((0.0, "poor"), (0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"), (1.0, "almost perfect"))


def landis_koch(kappa: float) -> str:
    """Landis & Koch (1977) reading of a κ (or α) value in [−1, 1].

    < 0 poor; [0, 0.20] slight; (0.20, 0.40] fair; (0.40, 0.60] moderate;
    (0.60, 0.80] substantial; (0.80, 1] almost perfect.
    """
    if not isinstance(kappa, numbers.Real) or isinstance(kappa, bool):
        fail(f"kappa must be a real number; got {kappa!r}")
    value = check_real(kappa, "kappa", low=-1.0, high=1.0)
    if value < 0:
        return "poor"
    for upper, name in _LANDIS_KOCH[1:]:
        if value <= upper:
            return name
    raise AssertionError  # unreachable: value <= 1
