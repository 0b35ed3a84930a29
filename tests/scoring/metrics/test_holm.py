"""Holm's step-down adjustment against the definition written out here."""

import itertools

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
    assert all(a <= b for a, b in itertools.pairwise(sorted(holm_adjust([0.01, 0.2, 0.03]))))
