"""The one-row-per-rating forms of Fleiss' κ and Krippendorff's α equal the matrix forms."""

import numpy as np
import pytest

from scoring.metrics import fleiss_kappa, fleiss_kappa_units, krippendorff_alpha, krippendorff_alpha_units


def _random_ratings(rng, *, n_units, n_coders, n_categories, missing):
    """A coders × units matrix of category indices (NaN = missing) and the same data as rows."""
    matrix = rng.integers(0, n_categories, size=(n_coders, n_units)).astype(float)
    matrix[rng.random(matrix.shape) < missing] = np.nan
    coder, unit = np.nonzero(~np.isnan(matrix))
    order = rng.permutation(unit.size)  # row order must not matter
    return matrix, unit[order] * 7 + 3, matrix[coder, unit][order]  # unit ids need not be 0..U−1


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_units_equals_matrix_alpha_on_random_data(seed, level):
    rng = np.random.default_rng(seed)
    matrix, units, values = _random_ratings(rng, n_units=300, n_coders=int(rng.integers(2, 9)),
                                            n_categories=int(rng.integers(2, 7)), missing=0.4)
    if level == "ratio":
        values, matrix = values + 1, matrix + 1
    expected = krippendorff_alpha(matrix, level=level)
    assert krippendorff_alpha_units(units, values, level=level) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_alpha_units_string_labels_and_undefined():
    a = ["yes", "no", "yes", "yes", "no"]
    b = ["yes", "no", "no", "yes", "no"]
    units = list(range(5)) * 2
    assert krippendorff_alpha_units(units, a + b) == pytest.approx(krippendorff_alpha([a, b]))
    assert krippendorff_alpha_units([1, 1, 2, 2], ["x"] * 4) is None  # no variation at all
    # a unit with one value is not pairable and changes nothing
    assert krippendorff_alpha_units([*units, 99], [*a, *b, "maybe"]) == pytest.approx(krippendorff_alpha([a, b]))


def test_alpha_units_invalid_input():
    with pytest.raises(ValueError, match="at least two coders"):
        krippendorff_alpha_units([1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="same length"):
        krippendorff_alpha_units([1, 1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="interval alpha needs numeric"):
        krippendorff_alpha_units([1, 1], ["a", "b"], level="interval")
    with pytest.raises(ValueError, match="missing"):
        krippendorff_alpha_units([1, 1], [1.0, np.nan])
    with pytest.raises(ValueError, match="unit ids"):
        krippendorff_alpha_units([1.5, 1.5], [1, 2])
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha_units([1, 1], [1, 2], level="cardinal")


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_units_equals_table_fleiss_on_random_data(seed):
    rng = np.random.default_rng(seed)
    raters, n_units, n_categories = int(rng.integers(2, 11)), 400, int(rng.integers(2, 8))
    labels = rng.integers(0, n_categories, size=(n_units, raters))
    table = np.stack([np.bincount(row, minlength=n_categories) for row in labels])
    units = np.repeat(np.arange(n_units), raters)
    order = rng.permutation(units.size)
    names = np.array([f"c{c}" for c in range(n_categories)])
    expected = fleiss_kappa(table)
    assert fleiss_kappa_units(units[order], labels.ravel()[order]) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert fleiss_kappa_units(units[order], names[labels.ravel()][order]) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_fleiss_units_hand_computed_and_invalid():
    # two units, two raters each, one agreement, one disagreement: P̄ = ½, P_e = (¾)² + (¼)² = ⅝ → κ = −⅓
    assert fleiss_kappa_units([1, 1, 2, 2], ["a", "a", "a", "b"]) == pytest.approx(-1 / 3)
    assert fleiss_kappa_units([1, 1, 2, 2], ["a"] * 4) is None
    with pytest.raises(ValueError, match="same number of raters"):
        fleiss_kappa_units([1, 1, 2, 2, 2], ["a", "a", "a", "b", "b"])
    with pytest.raises(ValueError, match="at least 2 ratings"):
        fleiss_kappa_units([1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="empty"):
        fleiss_kappa_units([], [])
