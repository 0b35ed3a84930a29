"""Holm's step-down adjustment against the definition written out here, and against the
sequential rejection test it stands for."""

import itertools

import numpy as np
import pytest

from scoring.metrics import holm_adjust


def _holm_by_definition(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03], [0.5, 0.001, 0.2, 0.04], [0.02], [0.3, 0.3, 0.01]])
def test_matches_the_definition(p):
    assert holm_adjust(p) == pytest.approx(_holm_by_definition(p))


def test_missing_tests_are_not_counted():
    assert holm_adjust([None, 0.01, None, 0.04]) == [None, pytest.approx(0.02), None, pytest.approx(0.04)]
    with pytest.raises(ValueError, match=r"p_values must lie in \[0, 1\]"):
        holm_adjust([1.5])
    # the adjusted values keep the order of the raw ones (sorted by raw p, not by themselves)
    raw = [0.04, 0.01, 0.2, 0.03, 0.035]
    adjusted = holm_adjust(raw)
    assert all(adjusted[i] <= adjusted[j] for i, j in itertools.pairwise(sorted(range(len(raw)), key=raw.__getitem__)))


def _holm_rejects(p, alpha):
    """Holm's sequential test itself: walk the sorted p-values and reject H_(k) while
    p_(k) ≤ α / (m − k + 1); stop at the first that is not."""
    m, rejected = len(p), set()
    for rank, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        if p[i] > alpha / (m - rank):
            break
        rejected.add(i)
    return rejected


def test_adjusted_values_reject_exactly_what_the_step_down_test_rejects():
    rng = np.random.default_rng(1979)
    for _ in range(300):
        p = rng.uniform(0, 0.1, size=int(rng.integers(1, 12))).tolist()
        p[-1] = p[0]  # a tie
        adjusted = holm_adjust(p)
        order = sorted(range(len(p)), key=lambda i: p[i])
        assert all(adjusted[i] <= adjusted[j] for i, j in itertools.pairwise(order)), p
        for alpha in (0.01, 0.05):
            if any(abs(p[i] * (len(p) - rank) - alpha) < 1e-12 for rank, i in enumerate(order)):
                continue  # on α's boundary float rounding may decide either way
            assert {i for i, a in enumerate(adjusted) if a <= alpha} == _holm_rejects(p, alpha), (p, alpha)
