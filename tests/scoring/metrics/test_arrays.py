"""``unique_inverse``: what ``np.unique(..., return_inverse=True)`` gives, without its sort for compact integers."""

import numpy as np
import pytest

from scoring.metrics._arrays import unique_inverse

CASES = {
    "item ids": np.repeat(np.arange(500_000, 500_300, dtype=np.int32), 7),
    "codes, shuffled": np.random.default_rng(0).integers(0, 5, 1000),
    "negative and unsigned": np.array([-3, 7, -3, 0, 7, 2], dtype=np.int64),
    "uint8": np.array([200, 3, 3, 255], dtype=np.uint8),
    "one value": np.array([42]),
    "empty": np.array([], dtype=np.int64),
    "sparse ids (sorted)": np.array([10**12, 5, 10**12, 7]),
    "strings (sorted)": np.array(["b", "a", "b", "c"]),
    "floats (sorted)": np.array([0.5, 0.25, 0.5]),
}


@pytest.mark.parametrize("name", CASES)
def test_same_as_numpy_unique(name):
    values = CASES[name]
    distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    got = unique_inverse(values, counts=True)
    assert got[0].dtype == distinct.dtype and np.array_equal(got[0], distinct)
    assert np.array_equal(got[1], inverse.ravel()) and np.array_equal(got[2], counts)
    assert np.array_equal(unique_inverse(values)[1], inverse.ravel()) and len(unique_inverse(values)) == 2
