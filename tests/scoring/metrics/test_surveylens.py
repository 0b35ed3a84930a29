"""SurveyLens: RAMS, TAMS, Bradley–Terry aspect weights, rubric score, structure ratios."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import Bounds, minimize
from scipy.special import expit

from scoring.metrics import (
    STRUCTURE_STATISTICS,
    bt_aspect_weights,
    rams,
    redundancy_weights,
    rubric_score,
    structure_ratios,
    tams,
)


def _brute_force_rams(gold, gen, tau, lam):
    """Enumerate every one-to-one matching; unique optimum assumed (generic floats)."""
    m, n = gold.shape
    gain = np.maximum(gold - tau, 0.0)
    best, best_pairs = -1.0, None
    if m <= n:
        candidates = ([(i, c) for i, c in enumerate(cols)] for cols in itertools.permutations(range(n), m))
    else:
        candidates = ([(r, j) for j, r in enumerate(rows)] for rows in itertools.permutations(range(m), n))
    for pairs in candidates:
        total = sum(gain[i, j] for i, j in pairs)
        if total > best + 1e-12:
            best, best_pairs = total, pairs
    weights = [1.0] * m if m == 1 else [math.exp(-lam * max(gen[i, k] for k in range(m) if k != i)) for i in range(m)]
    hits = [(i, j) for i, j in best_pairs if gold[i, j] >= tau]
    p = sum(weights[i] for i, _ in hits) / m
    r = len(hits) / n
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _random_case(seed, m, n):
    rng = np.random.default_rng(seed)
    gold = rng.random((m, n))
    gen = rng.random((m, m))
    gen = (gen + gen.T) / 2
    np.fill_diagonal(gen, 1.0)
    return gold, gen


class TestRAMS:
    def test_hand_computed(self):
        gold = np.array([[0.9, 0.2], [0.85, 0.3]])
        gen = np.array([[1.0, 0.5], [0.5, 1.0]])
        out = rams(gold, gen, tau=0.5, lam=1.0)
        # only one gold entry can be matched above τ; one hit of weight e^-0.5
        assert out["precision"] == pytest.approx(math.exp(-0.5) / 2)
        assert out["recall"] == pytest.approx(0.5)
        p, r = out["precision"], out["recall"]
        assert out["rams"] == pytest.approx(2 * p * r / (p + r))

    def test_hungarian_not_greedy(self):
        # greedy would take (0,0)=0.95 and leave entry 1 with 0.55 → gain 0.45+0.05;
        # the optimum takes (0,1)+(1,0) → 0.4+0.4
        gold = np.array([[0.95, 0.9], [0.9, 0.55]])
        gen = np.eye(2)
        out = rams(gold, gen, tau=0.5, lam=0.0)
        assert out["precision"] == 1.0 and out["recall"] == 1.0 and out["rams"] == 1.0

    @pytest.mark.parametrize(("m", "n"), [(1, 1), (1, 3), (3, 1), (2, 4), (4, 2), (3, 3), (4, 4)])
    @pytest.mark.parametrize("seed", range(5))
    def test_matches_brute_force(self, m, n, seed):
        gold, gen = _random_case(seed, m, n)
        out = rams(gold, gen, tau=0.4, lam=1.3)
        p, r, score = _brute_force_rams(gold, gen, 0.4, 1.3)
        assert out["precision"] == pytest.approx(p)
        assert out["recall"] == pytest.approx(r)
        assert out["rams"] == pytest.approx(score)

    def test_empty_sets(self):
        zero = {"precision": 0.0, "recall": 0.0, "rams": 0.0}
        assert rams(np.zeros((0, 3)), np.zeros((0, 0)), 0.5) == zero
        assert rams(np.zeros((2, 0)), np.eye(2), 0.5) == zero
        assert rams([], [], 0.5) == zero

    def test_nothing_above_threshold(self):
        gold, gen = _random_case(0, 3, 3)
        assert rams(gold, gen, tau=1.5)["rams"] == 0.0

    def test_single_generated_entry_has_no_redundancy(self):
        out = rams([[0.8, 0.1]], [[1.0]], tau=0.5, lam=5.0)
        assert out["precision"] == 1.0 and out["recall"] == 0.5

    def test_ties_at_threshold_count_as_hits(self):
        # σ = τ exactly: zero gain, but the paper's indicator counts it (σ ≥ τ).
        out = rams([[0.5, 0.5], [0.5, 0.5]], np.eye(2), tau=0.5, lam=0.0)
        assert out["recall"] == 1.0 and out["precision"] == 1.0

    def test_redundancy_weights(self):
        gen = np.array([[1.0, 0.2, 0.7], [0.2, 1.0, 0.1], [0.7, 0.1, 1.0]])
        assert redundancy_weights(gen, 2.0) == pytest.approx(np.exp(-2.0 * np.array([0.7, 0.2, 0.7])))

    @pytest.mark.parametrize(
        ("gold", "gen", "kwargs", "message"),
        [
            ([[0.5, float("nan")]], [[1.0]], {}, "non-finite"),
            ([[0.5, 0.2]], [[1.0, 0.1]], {}, "square"),
            ([[0.5]], [[1.0]], {"lam": -1.0}, "lam"),
            ([[0.5]], [[1.0]], {"tau": float("inf")}, "tau"),
            ([0.5, 0.2], [[1.0]], {}, "2-dimensional"),
            ([["0.5"]], [[1.0]], {}, "numbers"),
        ],
    )
    def test_invalid(self, gold, gen, kwargs, message):
        with pytest.raises(ValueError, match=message):
            rams(gold, gen, **{"tau": 0.5, **kwargs})

    def test_speed_1000_square(self):
        gold, gen = _random_case(1, 1000, 1000)
        out = rams(gold, gen, tau=0.7)  # bench/metrics_bench.py times it
        assert all(0.0 <= out[key] <= 1.0 for key in ("precision", "recall", "rams"))


similarity_case = st.tuples(
    st.integers(min_value=1, max_value=7), st.integers(min_value=1, max_value=7), st.integers(min_value=0, max_value=2**31)
)


@settings(max_examples=60, deadline=None)
@given(similarity_case, st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=4.0))
def test_rams_bounds_and_permutation_invariance(case, tau, lam):
    m, n, seed = case
    gold, gen = _random_case(seed, m, n)
    out = rams(gold, gen, tau, lam)
    for key in ("precision", "recall", "rams"):
        assert 0.0 <= out[key] <= 1.0
    rng = np.random.default_rng(seed + 1)
    pr, pc = rng.permutation(m), rng.permutation(n)
    again = rams(gold[pr][:, pc], gen[pr][:, pr], tau, lam)
    for key in out:
        assert again[key] == pytest.approx(out[key], abs=1e-12)


def _with_duplicate(gold, gen, k):
    """Append an exact copy of generated entry k (similarity 1 to it)."""
    m = gold.shape[0]
    gen2 = np.ones((m + 1, m + 1))
    gen2[:m, :m] = gen
    gen2[m, :m] = gen2[:m, m] = gen[k]
    gen2[m, k] = gen2[k, m] = 1.0
    return np.vstack([gold, gold[k]]), gen2


@settings(max_examples=100, deadline=None)
@given(similarity_case, st.floats(min_value=0.0, max_value=0.95), st.floats(min_value=0.0, max_value=4.0), st.data())
def test_a_duplicate_raises_precision_only_by_earning_its_own_match(case, tau, lam, data):
    m, n, seed = case
    gold, gen = _random_case(seed, m, n)
    k = data.draw(st.integers(min_value=0, max_value=m - 1))
    before = rams(gold, gen, tau, lam)
    after = rams(*_with_duplicate(gold, gen, k), tau, lam)
    if after["recall"] <= before["recall"]:
        assert after["precision"] <= before["precision"] + 1e-12


@settings(max_examples=100, deadline=None)
@given(similarity_case, st.floats(min_value=0.0, max_value=0.95), st.floats(min_value=math.log(2), max_value=6.0), st.data())
def test_adding_a_duplicate_never_raises_precision(case, tau, lam, data):
    """Guaranteed when λ (1 − max_k σ(s, s_k)) ≥ ln 2 for the duplicated entry s."""
    m, n, seed = case
    gold, gen = _random_case(seed, m, n)
    k = data.draw(st.integers(min_value=0, max_value=m - 1))
    cap = 1.0 - math.log(2) / lam
    others = np.arange(m) != k
    gen[k, others] = gen[others, k] = gen[k, others] * cap
    before = rams(gold, gen, tau, lam)["precision"]
    after = rams(*_with_duplicate(gold, gen, k), tau, lam)["precision"]
    assert after <= before + 1e-12


def test_duplicate_can_raise_precision_outside_the_guaranteed_regime():
    """Documented behaviour of the paper's formula (found by the property test above)."""
    gold, gen = _random_case(0, 3, 7)
    before = rams(gold, gen, tau=0.75, lam=1.0)
    after = rams(*_with_duplicate(gold, gen, 0), tau=0.75, lam=1.0)
    assert after["recall"] > before["recall"]
    assert after["precision"] > before["precision"]


class TestTAMS:
    def test_margin_form(self):
        sims = [[0.9, 0.6], [0.4, 0.5], [0.75, 0.1]]
        # per generated entry: max(0, max σ − 0.7) = 0.2, 0, 0.05
        assert tams(sims, 0.7) == pytest.approx((0.2 + 0.0 + 0.05) / 3)

    def test_gated_form(self):
        sims = [[0.9, 0.6], [0.4, 0.5], [0.75, 0.1]]
        assert tams(sims, 0.7, mode="gated") == pytest.approx((0.9 + 0.0 + 0.75) / 3)

    def test_empty(self):
        assert tams(np.zeros((0, 4)), 0.5) == 0.0
        assert tams(np.zeros((3, 0)), 0.5) == 0.0

    def test_invalid(self):
        with pytest.raises(ValueError, match="mode"):
            tams([[0.5]], 0.5, mode="hard")
        with pytest.raises(ValueError, match="non-finite"):
            tams([[np.nan]], 0.5)

    @settings(max_examples=50, deadline=None)
    @given(similarity_case, st.floats(min_value=0.0, max_value=1.0))
    def test_margin_never_exceeds_gated(self, case, tau):
        gold, _ = _random_case(case[2], case[0], case[1])
        assert 0.0 <= tams(gold, tau) <= tams(gold, tau, mode="gated") <= 1.0


class TestBTAspectWeights:
    @staticmethod
    def _independent_solution(winners, losers, alpha):
        """Same objective (eq. 3) solved by a different method: projected Newton via trust-constr."""
        diff = (np.asarray(winners, float) - np.asarray(losers, float)) / 5.0

        def f(w):
            return np.logaddexp(0, -(diff @ w)).sum() + alpha * w @ w

        def grad(w):
            return -(diff.T @ expit(-(diff @ w))) + 2 * alpha * w

        k = diff.shape[1]
        res = minimize(f, np.ones(k), jac=grad, method="trust-constr", bounds=Bounds(np.zeros(k), np.full(k, np.inf)),
                       options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 5000})
        w = np.maximum(res.x, 0)
        return w / w.sum(), grad

    def test_matches_independent_solver_and_kkt(self):
        rng = np.random.default_rng(3)
        quality = rng.random((40, 4))
        scores = np.clip(np.round(1 + 4 * quality + rng.normal(0, 0.3, quality.shape)), 1, 5)
        true_w = np.array([0.6, 0.3, 0.1, 0.0])
        pairs = [(i, j) if scores[i] @ true_w >= scores[j] @ true_w else (j, i) for i in range(40) for j in range(i + 1, 40)]
        winners = np.array([scores[i] for i, _ in pairs])
        losers = np.array([scores[j] for _, j in pairs])
        w = bt_aspect_weights(winners, losers, alpha=0.1)
        assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
        assert w[0] > w[1] > w[3]
        reference, _ = self._independent_solution(winners, losers, 0.1)
        assert w == pytest.approx(reference, abs=1e-5)

    def test_symmetric_aspects_get_equal_weight(self):
        # each aspect explains exactly one of two mirror-image preferences
        winners = [[5, 3], [3, 5]]
        losers = [[3, 3], [3, 3]]
        assert bt_aspect_weights(winners, losers) == pytest.approx([0.5, 0.5], abs=1e-6)

    def test_uninformative_aspect_gets_zero(self):
        winners = [[5, 3], [4, 3], [5, 2]]
        losers = [[2, 3], [3, 3], [1, 2]]
        w = bt_aspect_weights(winners, losers)
        assert w == pytest.approx([1.0, 0.0], abs=1e-9)

    def test_contrary_aspect_gets_zero(self):
        winners = [[5, 1], [4, 2]]
        losers = [[1, 5], [2, 4]]
        assert bt_aspect_weights(winners, losers) == pytest.approx([1.0, 0.0], abs=1e-9)

    def test_all_zero_optimum_raises(self):
        with pytest.raises(ValueError, match="all zero"):
            bt_aspect_weights([[1, 1]], [[3, 2]])

    @pytest.mark.parametrize(
        ("winners", "losers", "kwargs", "message"),
        [
            ([[5, 1]], [[1, 5, 3]], {}, "same shape"),
            ([[6, 1]], [[1, 5]], {}, "winner_scores"),
            ([[5, 1]], [[1, -1]], {}, "loser_scores"),
            ([[5, 1]], [[1, 5]], {"alpha": 0.0}, "alpha"),
            ([[5, 1]], [[1, 5]], {"x_max": 0}, "x_max"),
            (np.zeros((0, 2)), np.zeros((0, 2)), {}, "preference pair"),
        ],
    )
    def test_invalid(self, winners, losers, kwargs, message):
        with pytest.raises(ValueError, match=message):
            bt_aspect_weights(winners, losers, **kwargs)


class TestRubricScore:
    def test_paper_worked_example(self):
        # App. C: w̃ = 0.6, x̄ = 4.2/5 = 0.84 → contributes 5 × 0.6 × 0.84 = 2.52
        assert rubric_score([0.6, 0.4], [4.2, 0.0]) == pytest.approx(2.52)
        assert rubric_score([0.6, 0.4], [4.2, 3.0]) == pytest.approx(2.52 + 5 * 0.4 * 3.0 / 5)

    def test_range_and_batch(self):
        assert rubric_score([0.25] * 4, [5, 5, 5, 5]) == pytest.approx(5.0)
        assert rubric_score([0.25] * 4, [1, 1, 1, 1]) == pytest.approx(1.0)
        batch = rubric_score([0.5, 0.5], [[1, 5], [2, 2]])
        assert batch == pytest.approx([3.0, 2.0])
        assert rubric_score([1.0], [8.0], x_max=10) == pytest.approx(4.0)

    @pytest.mark.parametrize(
        ("weights", "scores", "message"),
        [
            ([0.6, 0.6], [3, 3], "sum to 1"),
            ([1.2, -0.2], [3, 3], "weights"),
            ([0.5, 0.5], [3, 6], "aspect_scores"),
            ([0.5, 0.5], [3, 3, 3], "last dimension"),
            ([], [], "empty"),
        ],
    )
    def test_invalid(self, weights, scores, message):
        with pytest.raises(ValueError, match=message):
            rubric_score(weights, scores)


class TestStructureRatios:
    def test_hand_computed(self):
        gen = {"images": 1, "tables": 0, "words": 8000, "references": 50}
        human = {"images": 10, "tables": 0, "words": 10000, "references": 200}
        assert structure_ratios(gen, human) == {"images": 0.1, "tables": None, "words": 0.8, "references": 0.25}

    def test_all_statistics(self):
        stats = dict.fromkeys(STRUCTURE_STATISTICS, 2)
        assert structure_ratios(stats, stats) == dict.fromkeys(STRUCTURE_STATISTICS, 1.0)

    @pytest.mark.parametrize(
        ("gen", "human", "message"),
        [
            ({"words": 1}, {"words": 1, "tables": 2}, "same keys"),
            ({"pictures": 1}, {"pictures": 1}, "unknown statistic"),
            ({"words": -1}, {"words": 1}, "generated_stats"),
            ({"words": 1}, {"words": float("nan")}, "human_stats"),
            ({"words": "10"}, {"words": 1}, "real number"),
            ([("words", 1)], {"words": 1}, "dict"),
        ],
    )
    def test_invalid(self, gen, human, message):
        with pytest.raises(ValueError, match=message):
            structure_ratios(gen, human)


@settings(max_examples=12, deadline=None)
@given(st.integers(min_value=2, max_value=6), st.integers(min_value=0, max_value=2**31))
def test_bt_weights_are_normalised_and_permutation_equivariant(k, seed):
    rng = np.random.default_rng(seed)
    winners = rng.integers(1, 6, size=(30, k)).astype(float)
    losers = rng.integers(1, 6, size=(30, k)).astype(float)
    assume(((winners - losers).sum(axis=0) > 0).any())
    w = bt_aspect_weights(winners, losers)
    assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
    perm = rng.permutation(k)
    assert bt_aspect_weights(winners[:, perm], losers[:, perm]) == pytest.approx(w[perm], abs=1e-6)
