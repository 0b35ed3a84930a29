"""κ and α with bootstrap intervals over items, against sklearn and the ``krippendorff`` package."""

import tracemalloc

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from scoring.metrics import cohen_kappa_bootstrap, krippendorff_alpha_bootstrap


def _rated(seed=0, n=60):
    rng = np.random.default_rng(seed)
    truth = rng.choice(["first", "second", "tie"], size=n, p=[0.5, 0.4, 0.1])
    noisy = np.where(rng.random(n) < 0.3, rng.choice(["first", "second", "tie"], size=n), truth)
    return truth, noisy


def test_kappa_and_its_resamples_match_sklearn():
    a, b = _rated()
    got = cohen_kappa_bootstrap(a, b, n_resamples=200, seed=5)
    assert got["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert got["observed"] == pytest.approx(np.mean(a == b)) and got["n"] == 60
    rng = np.random.default_rng(5)
    draws = rng.integers(0, 60, size=(200, 60))  # the same stream, one batch
    expected = [cohen_kappa_score(a[d], b[d]) for d in draws]
    low, high = np.quantile(expected, [0.025, 0.975])
    assert (got["low"], got["high"]) == pytest.approx((low, high), abs=1e-12)
    assert got["low"] < got["kappa"] < got["high"]


def test_kappa_resamples_in_batches_of_bounded_memory():
    """The agreement dashboard runs this in a web worker for every annotator pair: a batch of
    resamples must stay a few MiB (a resample × item matrix of 2²² cells peaked at 160 MiB),
    and batches must give what one batch of the same stream gives."""
    rng = np.random.default_rng(3)
    n = 20_000
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))
    tracemalloc.start()
    try:
        got = cohen_kappa_bootstrap(a, b, n_resamples=100, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24 * 2**20, f"{peak / 2**20:.0f} MiB"
    draws = np.random.default_rng(1).integers(0, n, size=(100, n))  # the same stream, one batch
    low, high = np.quantile([cohen_kappa_score(a[d], b[d]) for d in draws], [0.025, 0.975])
    assert (got["low"], got["high"]) == pytest.approx((low, high), abs=1e-12)


def test_kappa_of_one_category_is_undefined():
    got = cohen_kappa_bootstrap(["tie"] * 5, ["tie"] * 5, n_resamples=20)
    assert got["kappa"] is None and got["observed"] == 1.0 and got["n_undefined"] == 20 and got["low"] is None
    with pytest.raises(ValueError, match="rate the same items"):
        cohen_kappa_bootstrap(["a"], ["a", "b"])


def _long(matrix):
    """Coders × units reliability matrix (NaN = missing) as one row per rating."""
    coder, unit = np.nonzero(~np.isnan(matrix))
    return unit, matrix[coder, unit]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_and_its_resamples_match_the_krippendorff_package(level):
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, size=40).astype(float)
    matrix = np.vstack([np.clip(truth + rng.integers(-1, 2, size=40), 1, 5) for _ in range(3)])
    matrix[rng.random(matrix.shape) < 0.2] = np.nan
    unit, value = _long(matrix)
    got = krippendorff_alpha_bootstrap(unit, value, level=level, n_resamples=30, seed=2)
    assert got["alpha"] == pytest.approx(krippendorff.alpha(matrix, level_of_measurement=level), abs=1e-10)
    pairable = [u for u in range(40) if (~np.isnan(matrix[:, u])).sum() >= 2]
    rng = np.random.default_rng(2)
    for r in range(30):
        drawn = np.array(pairable)[rng.integers(0, len(pairable), len(pairable))]
        expected = krippendorff.alpha(matrix[:, drawn], level_of_measurement=level)
        assert got["samples"][r] == pytest.approx(expected, abs=1e-10)


def test_alpha_observed_agreement_is_the_share_of_agreeing_pairs():
    # unit 0: a, a, b (pairs within: 2 of 6 ordered pairs agree, weight 1/(3-1)); unit 1: a, a
    got = krippendorff_alpha_bootstrap([0, 0, 0, 1, 1], ["a", "a", "b", "a", "a"], n_resamples=5)
    assert got["observed"] == pytest.approx((2 / 2 + 2 / 1) / (6 / 2 + 2 / 1))
    assert got["n_units"] == 2
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha_bootstrap([0, 0], ["a", "b"], level="ratio")
