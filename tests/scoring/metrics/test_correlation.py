"""Rank correlations, pairwise concordance and the paired t-test, cross-checked with SciPy."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from scoring.metrics import kendall_tau, paired_t_test, pairwise_concordance, permutation_p_values, spearman
from scoring.metrics.correlation import _inversions

paired_lists = st.integers(min_value=3, max_value=40).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 6), min_size=n, max_size=n), st.lists(st.integers(0, 6), min_size=n, max_size=n))
)


class TestSpearman:
    def test_hand_computed(self):
        # no ties: ρ = 1 − 6 Σd² / (n(n²−1)); ranks (1,2,3,4,5) vs (2,1,4,3,5): Σd² = 4
        out = spearman([10, 20, 30, 40, 50], [2, 1, 4, 3, 5])
        assert out["rho"] == pytest.approx(1 - 6 * 4 / (5 * 24))
        assert out["n"] == 5

    @settings(max_examples=80, deadline=None)
    @given(paired_lists)
    def test_matches_scipy(self, xy):
        x, y = xy
        ours = spearman(x, y)
        if len(set(x)) == 1 or len(set(y)) == 1:
            assert ours["rho"] is None and ours["p_value"] is None
            return
        ref = stats.spearmanr(x, y)
        assert ours["rho"] == pytest.approx(ref.statistic, abs=1e-12)
        assert ours["p_value"] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)

    def test_edge_cases(self):
        assert spearman([1, 2], [3, 4]) == {"rho": 1.0, "p_value": None, "n": 2}
        assert spearman([1, 2, 3], [3, 2, 1])["p_value"] == 0.0
        with pytest.raises(ValueError, match="same length"):
            spearman([1, 2, 3], [1, 2])
        with pytest.raises(ValueError, match="at least 2"):
            spearman([1], [1])
        with pytest.raises(ValueError, match="non-finite"):
            spearman([1, np.nan, 3], [1, 2, 3])


class TestKendall:
    def test_hand_computed(self):
        # pairs: x = 1,2,3,4; y = 1,3,2,4 → C = 5, D = 1 → τ = 4/6
        assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4])["tau"] == pytest.approx(4 / 6)

    @settings(max_examples=80, deadline=None)
    @given(paired_lists)
    def test_matches_scipy_tau_b(self, xy):
        x, y = xy
        ours = kendall_tau(x, y)
        if len(set(x)) == 1 or len(set(y)) == 1:
            assert ours["tau"] is None
            return
        ref = stats.kendalltau(x, y, method="asymptotic")
        assert ours["tau"] == pytest.approx(ref.statistic, abs=1e-12)
        assert ours["p_value"] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)

    def test_large_input_matches_scipy(self):
        rng = np.random.default_rng(0)
        x = rng.integers(0, 1000, 50_000)
        y = x + rng.integers(0, 400, 50_000)
        assert kendall_tau(x, y)["tau"] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


class TestPairwiseConcordance:
    def test_hand_computed(self):
        out = pairwise_concordance([1, 2, 3, 4], [1, 3, 2, 2])
        # pairs: (1,2) c, (1,3) c, (1,4) c, (2,3) d, (2,4) d, (3,4) tied in y
        assert out == {"concordance": pytest.approx(3 / 5), "concordant": 3, "discordant": 2, "tied": 1}

    def test_all_ties_and_tiny_inputs(self):
        assert pairwise_concordance([1, 1, 1], [1, 2, 3]) == {"concordance": None, "concordant": 0, "discordant": 0, "tied": 3}
        assert pairwise_concordance([5], [7])["concordance"] is None
        assert pairwise_concordance([], [])["tied"] == 0

    @settings(max_examples=80, deadline=None)
    @given(paired_lists)
    def test_matches_brute_force(self, xy):
        x, y = xy
        c = d = t = 0
        for i, j in itertools.combinations(range(len(x)), 2):
            s = (x[i] - x[j]) * (y[i] - y[j])
            c += s > 0
            d += s < 0
            t += s == 0
        out = pairwise_concordance(x, y)
        assert (out["concordant"], out["discordant"], out["tied"]) == (c, d, t)
        assert out["concordance"] == (c / (c + d) if c + d else None)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=60))
def test_inversion_count(values):
    arr = np.array(values, dtype=np.int64)
    expected = sum(1 for i, j in itertools.combinations(range(len(values)), 2) if values[i] > values[j])
    assert _inversions(arr) == expected


class TestPairedT:
    def test_matches_scipy(self):
        rng = np.random.default_rng(1)
        a = rng.normal(0.6, 0.1, 30)
        b = a - rng.normal(0.05, 0.05, 30)
        ours = paired_t_test(a, b)
        ref = stats.ttest_rel(a, b)
        assert ours["statistic"] == pytest.approx(ref.statistic)
        assert ours["p_value"] == pytest.approx(ref.pvalue)
        assert ours["mean_difference"] == pytest.approx(np.mean(a - b))
        assert ours["df"] == 29

    def test_hand_computed(self):
        # d = 1, 2, 3: mean 2, sd 1 → t = 2 / (1/√3)
        out = paired_t_test([2, 4, 6], [1, 2, 3])
        assert out["statistic"] == pytest.approx(2 * math.sqrt(3))

    def test_constant_differences(self):
        assert paired_t_test([2, 3, 4], [1, 2, 3]) == {"statistic": math.inf, "p_value": 0.0, "mean_difference": 1.0, "df": 2}
        assert paired_t_test([1, 2], [1, 2])["statistic"] is None

    def test_invalid(self):
        with pytest.raises(ValueError, match="at least 2"):
            paired_t_test([1], [2])
        with pytest.raises(ValueError, match="a and b"):
            paired_t_test([1, 2], [1, 2, 3])


class TestPermutationPValues:
    """Exact and Monte Carlo permutation p-values against scipy.stats.permutation_test (pairings)."""

    @pytest.mark.parametrize("n", [3, 5, 6])
    @pytest.mark.parametrize("ties", [False, True])
    def test_exact_matches_scipy(self, n, ties):
        from scipy import stats

        rng = np.random.default_rng(n)
        x = rng.normal(size=n)
        y = x + rng.normal(size=n)
        if ties:
            y = np.round(y)
            x[0] = x[1]
        got = permutation_p_values(x, y)
        assert got["exact"] and got["n_permutations"] == math.factorial(n)
        for name, stat in (("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
            if np.unique(y).size < 2:
                assert got[name] is None
                continue
            expected = stats.permutation_test((x,), lambda v: stat(v, y).statistic, permutation_type="pairings").pvalue
            assert got[name] == pytest.approx(expected, abs=1e-12)

    def test_random_repairings_beyond_n_resamples(self):
        from scipy import stats

        rng = np.random.default_rng(9)
        x = rng.normal(size=7)
        y = x + 2 * rng.normal(size=7)
        got = permutation_p_values(x, y, n_resamples=4000, seed=1)  # 4000 < 7! = 5040: random re-pairings
        assert not got["exact"] and got["n_permutations"] == 4000
        exact = stats.permutation_test((x,), lambda v: stats.spearmanr(v, y).statistic, permutation_type="pairings").pvalue
        assert 0.05 < exact < 0.95
        assert got["spearman"] == pytest.approx(exact, abs=0.03)  # Monte Carlo error of 4000 draws

    def test_constant_variable_has_no_p_value(self):
        assert permutation_p_values([1, 2, 3, 4], [5, 5, 5, 5])["spearman"] is None
