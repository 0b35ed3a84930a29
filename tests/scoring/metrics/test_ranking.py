"""Bradley–Terry, Elo, bootstrap intervals and ranks with intervals."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from scoring.metrics import (
    bootstrap_ci,
    bradley_terry,
    bradley_terry_bootstrap,
    elo,
    rank_with_ci,
    to_elo_scale,
)
from scoring.metrics import ranking


def _simulate(n_items, n_comparisons, seed, tie_rate=0.1):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n_items)
    i = rng.integers(0, n_items, n_comparisons)
    j = (i + rng.integers(1, n_items, n_comparisons)) % n_items
    p = 1 / (1 + np.exp(-(theta[i] - theta[j])))
    u = rng.random(n_comparisons)
    outcome = np.where(u < p * (1 - tie_rate), 1.0, np.where(u < p * (1 - tie_rate) + tie_rate, 0.5, 0.0))
    return np.column_stack([i, j, outcome]), theta


def _reference_mle(comparisons, n_items):
    """Independent fit: L-BFGS on the per-comparison likelihood (ties as half wins)."""
    i, j, y = comparisons[:, 0].astype(int), comparisons[:, 1].astype(int), comparisons[:, 2]

    def f(t):
        d = t[i] - t[j]
        value = -(y * -np.logaddexp(0, -d) + (1 - y) * -np.logaddexp(0, d)).sum()
        p = 1 / (1 + np.exp(-d))
        g = np.zeros(n_items)
        np.add.at(g, i, -(y - p))
        np.add.at(g, j, y - p)
        return value, g

    res = minimize(f, np.zeros(n_items), jac=True, method="L-BFGS-B", options={"maxiter": 20000, "ftol": 1e-16, "gtol": 1e-10})
    return res.x - res.x.mean()


class TestBradleyTerry:
    def test_two_items_closed_form(self):
        # i wins 3 of 4 → θ_i − θ_j = log 3, centred
        comps = [(0, 1, 1), (0, 1, 1), (1, 0, 0), (1, 0, 1)]
        theta = bradley_terry(comps, ridge=0)
        assert theta == pytest.approx([math.log(3) / 2, -math.log(3) / 2], abs=1e-10)

    def test_ties_half_or_excluded(self):
        comps = [(0, 1, 1), (0, 1, 0.5), (0, 1, 0.5), (0, 1, 0)]
        assert bradley_terry(comps, ridge=0) == pytest.approx([0.0, 0.0], abs=1e-12)
        comps = [(0, 1, 1), (0, 1, 1), (0, 1, 0.5), (0, 1, 0)]
        assert np.diff(bradley_terry(comps, ridge=0))[0] == pytest.approx(-math.log(2.5 / 1.5))
        assert np.diff(bradley_terry(comps, ties="exclude", ridge=0))[0] == pytest.approx(-math.log(2))

    def test_matches_independent_mle(self):
        comps, _ = _simulate(12, 3000, seed=1)
        assert bradley_terry(comps, ridge=0) == pytest.approx(_reference_mle(comps, 12), abs=1e-5)

    def test_tiny_ridge_barely_moves_estimates(self):
        comps, theta = _simulate(20, 5000, seed=2)
        est = bradley_terry(comps)
        assert est == pytest.approx(bradley_terry(comps, ridge=0), abs=1e-6)
        assert np.corrcoef(est, theta)[0, 1] > 0.95
        assert est.mean() == pytest.approx(0.0, abs=1e-12)

    @pytest.mark.parametrize("ridge", [0.0, 1e-6, 0.5])
    def test_sparse_solver_path_agrees(self, ridge, monkeypatch):
        comps, _ = _simulate(30, 1500, seed=7)
        dense = bradley_terry(comps, ridge=ridge)
        monkeypatch.setattr(ranking, "_DENSE_LIMIT", 5)  # large-n code path on a small problem
        assert bradley_terry(comps, ridge=ridge) == pytest.approx(dense, abs=1e-9)

    def test_list_and_array_inputs_agree(self):
        comps, _ = _simulate(5, 200, seed=3)
        as_list = [tuple(row) for row in comps.tolist()]
        assert bradley_terry(as_list) == pytest.approx(bradley_terry(comps))

    def test_perfect_separation_stays_finite(self):
        theta = bradley_terry([(0, 1, 1), (1, 2, 1), (0, 2, 1)])
        assert np.isfinite(theta).all() and theta[0] > theta[1] > theta[2]

    def test_disconnected_and_uncompared_items(self):
        theta = bradley_terry([(0, 1, 1), (1, 0, 1), (2, 3, 1), (3, 2, 0)], n_items=5)
        assert np.isfinite(theta).all() and theta.size == 5
        assert theta[4] == pytest.approx(theta[:2].mean(), abs=1e-6)
        with pytest.raises(ValueError, match="does not exist"):
            bradley_terry([(0, 1, 1), (1, 0, 1), (2, 3, 1), (3, 2, 0)], ridge=0)
        with pytest.raises(ValueError, match="does not exist"):
            bradley_terry([(0, 1, 1), (1, 2, 1)], ridge=0)

    def test_no_comparisons(self):
        assert bradley_terry([], n_items=3).tolist() == [0.0, 0.0, 0.0]
        assert bradley_terry([(0, 1, 0.5)], ties="exclude").tolist() == [0.0, 0.0]

    @pytest.mark.parametrize(
        ("comps", "kwargs", "message"),
        [
            ([(0, 0, 1)], {}, "itself"),
            ([(0, 1, 0.7)], {}, "outcomes"),
            ([(0, -1, 1)], {}, "non-negative integers"),
            ([(0, 1.5, 1)], {}, "non-negative integers"),
            ([(0, 3, 1)], {"n_items": 2}, "n_items"),
            ([(0, 1)], {}, "shape"),
            ([(0, 1, float("nan"))], {}, "non-finite"),
            ([(0, 1, 1)], {"ties": "draw"}, "ties"),
            ([(0, 1, 1)], {"ridge": -1.0}, "ridge"),
            ([], {}, "no items"),
        ],
    )
    def test_invalid(self, comps, kwargs, message):
        with pytest.raises(ValueError, match=message):
            bradley_terry(comps, **kwargs)

    @settings(max_examples=30, deadline=None)
    @given(st.integers(min_value=2, max_value=8), st.integers(min_value=0, max_value=2**31))
    def test_order_invariance_and_relabelling(self, n, seed):
        comps, _ = _simulate(n, 60, seed)
        theta = bradley_terry(comps)
        rng = np.random.default_rng(seed)
        assert bradley_terry(comps[rng.permutation(len(comps))]) == pytest.approx(theta, abs=1e-8)
        perm = rng.permutation(n)  # item k becomes perm[k]
        relabelled = comps.copy()
        relabelled[:, 0] = perm[comps[:, 0].astype(int)]
        relabelled[:, 1] = perm[comps[:, 1].astype(int)]
        moved = bradley_terry(relabelled, n_items=n)
        assert moved[perm] == pytest.approx(theta, abs=1e-8)
        swapped = comps[:, [1, 0, 2]].copy()
        swapped[:, 2] = 1 - swapped[:, 2]
        assert bradley_terry(swapped, n_items=n) == pytest.approx(theta, abs=1e-8)


def test_to_elo_scale():
    assert to_elo_scale([0.0, math.log(10)]) == pytest.approx([1000.0, 1400.0])
    with pytest.raises(ValueError, match="base"):
        to_elo_scale([0.0], base=1.0)


class TestBootstrapBT:
    def test_intervals_and_reproducibility(self):
        comps, _ = _simulate(6, 2000, seed=4)
        out = bradley_terry_bootstrap(comps, n_resamples=200, seed=1)
        assert out["samples"].shape == (200, 6)
        assert (out["low"] <= out["estimate"] + 1e-9).all() and (out["estimate"] <= out["high"] + 1e-9).all()
        again = bradley_terry_bootstrap(comps, n_resamples=200, seed=1)
        assert np.array_equal(out["samples"], again["samples"])

    @pytest.mark.parametrize("ties", ["half", "exclude"])
    def test_same_resamples_as_generic_row_bootstrap(self, ties):
        comps, _ = _simulate(5, 400, seed=5, tie_rate=0.3)
        fast = bradley_terry_bootstrap(comps, ties=ties, n_resamples=60, seed=2)

        def statistic(rows):
            return bradley_terry(rows, n_items=5, ties=ties)

        slow = bootstrap_ci(statistic, comps, n_resamples=60, seed=2)
        assert fast["estimate"] == pytest.approx(slow["estimate"], abs=1e-9)
        assert fast["low"] == pytest.approx(slow["low"], abs=1e-9)
        assert fast["high"] == pytest.approx(slow["high"], abs=1e-9)

    def test_invalid(self):
        with pytest.raises(ValueError, match="n_resamples"):
            bradley_terry_bootstrap([(0, 1, 1)], n_resamples=0)
        with pytest.raises(ValueError, match="confidence"):
            bradley_terry_bootstrap([(0, 1, 1)], confidence=1.0)
        with pytest.raises(ValueError, match="ridge"):
            bradley_terry_bootstrap([(0, 1, 1)], ridge=0)


def _fastchat_elo(comparisons, k=4, scale=400, base=10, initial=1000):
    ratings = {}
    for a, b, s in comparisons:
        ra, rb = ratings.get(a, initial), ratings.get(b, initial)
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        ratings[a] = ra + k * (s - ea)
        ratings[b] = rb + k * (1 - s - eb)
    return ratings


class TestElo:
    def test_hand_computed(self):
        r = elo([(0, 1, 1)], k=32)
        assert r == pytest.approx([1016.0, 984.0])
        r = elo([(0, 1, 1), (1, 0, 1)], k=32)
        expected_1 = 1 / (1 + 10 ** ((1016 - 984) / 400))
        assert r[1] == pytest.approx(984 + 32 * (1 - expected_1))
        assert r.sum() == pytest.approx(2000.0)

    def test_matches_chatbot_arena_formula(self):
        comps, _ = _simulate(7, 500, seed=6)
        ours = elo(comps)
        ref = _fastchat_elo([(int(a), int(b), s) for a, b, s in comps])
        assert ours == pytest.approx([ref.get(k, 1000.0) for k in range(7)])

    def test_order_matters_and_uncompared_keep_initial(self):
        a = elo([(0, 1, 1), (0, 1, 0)], k=32, n_items=3)
        b = elo([(0, 1, 0), (0, 1, 1)], k=32, n_items=3)
        assert not np.allclose(a, b)
        assert a[2] == 1000.0

    def test_invalid(self):
        with pytest.raises(ValueError, match="k"):
            elo([(0, 1, 1)], k=0)
        with pytest.raises(ValueError, match="outcomes"):
            elo([(0, 1, 2)])


class TestBootstrapCI:
    def test_mean_interval(self):
        rng = np.random.default_rng(0)
        data = rng.normal(10, 2, 400)
        out = bootstrap_ci(np.mean, data, n_resamples=2000, seed=1)
        assert out["estimate"] == pytest.approx(data.mean())
        se = data.std(ddof=1) / math.sqrt(400)
        assert out["low"] == pytest.approx(data.mean() - 1.96 * se, abs=0.05)
        assert out["high"] == pytest.approx(data.mean() + 1.96 * se, abs=0.05)

    def test_vectorized_matches_loop(self):
        data = np.arange(30.0) ** 1.5
        loop = bootstrap_ci(np.median, data, n_resamples=300, seed=4)
        vec = bootstrap_ci(lambda x: np.median(x, axis=-1), data, n_resamples=300, seed=4, vectorized=True)
        assert vec == pytest.approx(loop)

    def test_rows_of_2d_data_and_array_statistic(self):
        data = np.column_stack([np.arange(50.0), np.arange(50.0) * 2])
        out = bootstrap_ci(lambda d: d.mean(axis=0), data, n_resamples=200)
        assert out["estimate"] == pytest.approx([24.5, 49.0])
        assert out["low"][1] == pytest.approx(2 * out["low"][0])  # rows resampled together
        vec = bootstrap_ci(lambda d: d.mean(axis=1), data, n_resamples=200, vectorized=True)
        assert vec["low"] == pytest.approx(out["low"])

    def test_constant_data_and_single_row(self):
        assert bootstrap_ci(np.mean, [3.0] * 5, n_resamples=50) == {"estimate": 3.0, "low": 3.0, "high": 3.0}
        assert bootstrap_ci(np.mean, [7.0], n_resamples=10)["low"] == 7.0

    def test_invalid(self):
        with pytest.raises(ValueError, match="callable"):
            bootstrap_ci(None, [1.0])
        with pytest.raises(ValueError, match="empty"):
            bootstrap_ci(np.mean, [])
        with pytest.raises(ValueError, match="non-finite"):
            bootstrap_ci(np.mean, [1.0, np.nan])
        with pytest.raises(ValueError, match="confidence"):
            bootstrap_ci(np.mean, [1.0, 2.0], confidence=0)
        with pytest.raises(ValueError, match="non-finite value on at least one resample"):
            bootstrap_ci(lambda x: np.nan if x.min() == x.max() else 1.0, [1.0, 2.0], n_resamples=50)


class TestRankWithCI:
    def test_hand_computed(self):
        lower = [10.0, 8.0, 1.0, 0.5]
        upper = [12.0, 11.0, 3.0, 2.0]
        # item 2: items 0 and 1 have lower bounds above its upper bound 3 → rank 3
        assert rank_with_ci(lower, upper).tolist() == [1, 1, 3, 3]

    def test_no_overlap_is_plain_ranking(self):
        assert rank_with_ci([3, 1, 2], [3.5, 1.5, 2.5]).tolist() == [1, 3, 2]

    def test_invalid(self):
        with pytest.raises(ValueError, match="same length"):
            rank_with_ci([1, 2], [3])
        with pytest.raises(ValueError, match="must not exceed"):
            rank_with_ci([2.0], [1.0])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.floats(-100, 100), st.floats(0, 10)), min_size=1, max_size=20))
    def test_matches_definition(self, intervals):
        lower = np.array([lo for lo, _ in intervals])
        upper = lower + np.array([w for _, w in intervals])
        expected = [1 + sum(lower[j] > upper[i] for j in range(len(lower))) for i in range(len(lower))]
        assert rank_with_ci(lower, upper).tolist() == expected


def test_released_human_preferences(datasets):
    """SurveyLens outline preferences (two annotators): BT, Elo and bootstrap ranks are consistent."""
    import json

    from scoring.metrics import spearman

    folder = datasets / "surveylens" / "human_annotation"
    records = [r for path in sorted(folder.glob("*.json")) for r in json.loads(path.read_text(encoding="utf-8"))["part_c"]]
    systems = sorted({r["mapping"][side] for r in records for side in ("response_a_model", "response_b_model")})
    index = {name: k for k, name in enumerate(systems)}
    outcome = {"A_better": 1.0, "B_better": 0.0, "tie": 0.5}
    comps = [(index[r["mapping"]["response_a_model"]], index[r["mapping"]["response_b_model"]], outcome[r["choice"]]) for r in records]
    assert len(comps) == 100 and len(systems) == 5
    theta = bradley_terry(comps)
    ratings = elo(comps, k=4)
    assert spearman(theta, ratings)["rho"] > 0.8
    boot = bradley_terry_bootstrap(comps, n_resamples=200, seed=0)
    ranks = rank_with_ci(boot["low"], boot["high"])
    best = int(np.argmax(theta))
    assert ranks[best] == 1 and ranks.min() == 1 and ranks.max() <= len(systems)
