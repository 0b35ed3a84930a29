"""Agreement statistics, cross-checked against scikit-learn and the krippendorff package."""

import itertools
import time

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from scoring.metrics import cohen_kappa, fleiss_kappa, krippendorff_alpha, landis_koch, percent_agreement


class TestPercentAgreement:
    def test_hand_computed(self):
        assert percent_agreement(["a", "b", "c", "a"], ["a", "b", "a", "a"]) == 0.75
        assert percent_agreement([1, 2], [1, 2]) == 1.0
        assert percent_agreement([], []) is None

    def test_invalid(self):
        with pytest.raises(ValueError, match="same length"):
            percent_agreement([1, 2], [1])
        with pytest.raises(ValueError, match="missing"):
            percent_agreement([1.0, np.nan], [1.0, 2.0])
        with pytest.raises(ValueError, match="only strings or only numbers"):
            percent_agreement(["a", None], ["a", "b"])
        with pytest.raises(ValueError, match="both hold"):
            percent_agreement(["1", "2"], [1, 2])
        with pytest.raises(ValueError, match="only strings or only numbers"):
            cohen_kappa(["1", 2], ["1", "2"])  # NumPy would silently turn 2 into "2"


class TestCohenKappa:
    def test_hand_computed(self):
        # 2x2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5 → κ = 0.4
        a = ["yes"] * 25 + ["no"] * 25
        b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
        assert cohen_kappa(a, b) == pytest.approx(0.4)

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=60),
        st.sampled_from([None, "linear", "quadratic"]),
    )
    def test_matches_sklearn(self, pairs, weights):
        a = [x for x, _ in pairs]
        b = [y for _, y in pairs]
        ours = cohen_kappa(a, b, weights=weights)
        if ours is None:
            assert len(set(a) | set(b)) == 1
        else:
            with np.errstate(all="ignore"):
                assert ours == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)

    def test_labels_define_scale_order(self):
        order = ["low", "mid", "high"]
        a = ["low", "mid", "high", "high", "mid"]
        b = ["low", "high", "high", "mid", "mid"]
        coded = {"low": 0, "mid": 1, "high": 2}
        expected = cohen_kappa_score([coded[x] for x in a], [coded[x] for x in b], weights="linear")
        assert cohen_kappa(a, b, weights="linear", labels=order) == pytest.approx(expected)
        with pytest.raises(ValueError, match="labels="):
            cohen_kappa(a, b, weights="linear")
        with pytest.raises(ValueError, match="not among labels"):
            cohen_kappa(a, b, labels=["low", "mid"])
        with pytest.raises(ValueError, match="must list the raters' labels"):
            cohen_kappa(a, b, labels=[0, 1, 2])
        with pytest.raises(ValueError, match="duplicates"):
            cohen_kappa(a, b, labels=["low", "mid", "high", "low"])
        with pytest.raises(ValueError, match="weights"):
            cohen_kappa(a, b, weights="cubic")

    def test_undefined_cases(self):
        assert cohen_kappa([], []) is None
        assert cohen_kappa(["x", "x"], ["x", "x"]) is None

    def test_perfect_and_chance(self):
        assert cohen_kappa([0, 1, 2, 0], [0, 1, 2, 0]) == 1.0
        assert cohen_kappa([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0)


class TestFleissKappa:
    WIKIPEDIA = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]

    def test_worked_example(self):
        # Fleiss (1971) style example as used on Wikipedia: P̄ = 0.378, P_e = 0.213, κ ≈ 0.210
        assert fleiss_kappa(self.WIKIPEDIA) == pytest.approx(0.20993, abs=5e-5)

    @settings(max_examples=40, deadline=None)
    @given(st.integers(2, 6), st.integers(2, 5), st.integers(1, 12), st.integers(0, 2**31))
    def test_matches_pairwise_definition(self, raters, categories, items, seed):
        rng = np.random.default_rng(seed)
        ratings = rng.integers(0, categories, size=(items, raters))
        counts = np.stack([np.bincount(r, minlength=categories) for r in ratings])
        agree = np.mean([np.mean([r[x] == r[y] for x, y in itertools.permutations(range(raters), 2)]) for r in ratings])
        share = counts.sum(axis=0) / counts.sum()
        chance = (share**2).sum()
        ours = fleiss_kappa(counts)
        if chance == 1:
            assert ours is None
        else:
            assert ours == pytest.approx((agree - chance) / (1 - chance))

    def test_invalid(self):
        with pytest.raises(ValueError, match="same number of raters"):
            fleiss_kappa([[1, 2], [2, 2]])
        with pytest.raises(ValueError, match="at least 2"):
            fleiss_kappa([[1, 0], [0, 1]])
        with pytest.raises(ValueError, match="non-negative integers"):
            fleiss_kappa([[1.5, 0.5]])
        with pytest.raises(ValueError, match="empty"):
            fleiss_kappa(np.zeros((0, 3)))


LEVELS = ["nominal", "ordinal", "interval", "ratio"]
# Krippendorff (2011) / krippendorff package reference data
REFERENCE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]


class TestKrippendorff:
    @pytest.mark.parametrize(("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)])
    def test_published_values(self, level, expected):
        assert krippendorff_alpha(REFERENCE, level) == pytest.approx(expected, abs=5e-4)

    @pytest.mark.parametrize("level", LEVELS)
    @pytest.mark.parametrize("seed", range(4))
    def test_matches_krippendorff_package(self, level, seed):
        rng = np.random.default_rng(seed)
        truth = rng.integers(1, 6, size=60)
        data = np.clip(truth + rng.integers(-1, 2, size=(5, 60)), 1, 7).astype(float)
        data[rng.random(data.shape) < 0.3] = np.nan
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-10)

    @settings(max_examples=40, deadline=None)
    @given(st.integers(2, 5), st.integers(2, 30), st.sampled_from(LEVELS), st.integers(0, 2**31))
    def test_matches_package_with_continuous_values(self, coders, units, level, seed):
        rng = np.random.default_rng(seed)
        data = np.round(rng.gamma(2.0, 1.0, size=(coders, units)), 1)
        data[rng.random(data.shape) < 0.25] = np.nan
        pairable = (~np.isnan(data)).sum(axis=0) >= 2
        if not pairable.any() or np.unique(data[:, pairable][~np.isnan(data[:, pairable])]).size < 2:
            return
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-9)

    def test_string_labels(self):
        order = ["very low", "low", "mid", "high", "very high"]
        coded = [[None if np.isnan(v) else order[int(v) - 1] for v in row] for row in REFERENCE]
        assert krippendorff_alpha(coded, "nominal") == pytest.approx(krippendorff_alpha(REFERENCE, "nominal"))
        assert krippendorff_alpha(coded, "ordinal", value_domain=order) == pytest.approx(krippendorff_alpha(REFERENCE, "ordinal"))
        with pytest.raises(ValueError, match="value_domain"):
            krippendorff_alpha(coded, "ordinal")
        with pytest.raises(ValueError, match="numeric"):
            krippendorff_alpha(coded, "interval")
        with pytest.raises(ValueError, match="not in value_domain"):
            krippendorff_alpha(coded, "ordinal", value_domain=order[:3])
        with pytest.raises(ValueError, match="'nan'"):
            krippendorff_alpha(np.array([["a", "nan"], ["a", "b"]]), "nominal")

    def test_numeric_value_domain_order(self):
        # the domain's order, not numeric order, defines the ordinal scale
        data = [[1, 2, 3, 3], [1, 3, 2, 3]]
        flipped = krippendorff_alpha(data, "ordinal", value_domain=[1, 3, 2])
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 3, 2])
        assert flipped == pytest.approx(expected)

    def test_none_marks_missing(self):
        with_none = [[1, 2, None], [1, 3, 2]]
        with_nan = [[1, 2, np.nan], [1, 3, 2]]
        assert krippendorff_alpha(with_none, "interval") == krippendorff_alpha(with_nan, "interval")

    def test_undefined_and_invalid(self):
        assert krippendorff_alpha([[1, 1], [1, 1]]) is None
        with pytest.raises(ValueError, match="at least two coders"):
            krippendorff_alpha([[1, np.nan], [np.nan, 2]])
        with pytest.raises(ValueError, match="2-dimensional"):
            krippendorff_alpha([1, 2, 3])
        with pytest.raises(ValueError, match="level"):
            krippendorff_alpha([[1, 2], [1, 2]], "categorical")
        with pytest.raises(ValueError, match="non-negative"):
            krippendorff_alpha([[1, -2], [1, 2]], "ratio")
        with pytest.raises(ValueError, match="mixes"):
            krippendorff_alpha([["a", 1], ["a", 2]])
        with pytest.raises(ValueError, match="non-finite"):
            krippendorff_alpha([[1, np.inf], [1, 2]])

    def test_perfect_agreement(self):
        assert krippendorff_alpha([[1, 2, 3], [1, 2, 3]], "interval") == 1.0

    def test_large_matrix_is_fast(self):
        rng = np.random.default_rng(0)
        data = rng.integers(0, 5, size=(10, 100_000)).astype(float)
        data[rng.random(data.shape) < 0.2] = np.nan
        start = time.perf_counter()
        value = krippendorff_alpha(data, "nominal")
        assert time.perf_counter() - start < 5.0  # target (1 s) is checked by bench/metrics_bench.py
        assert abs(value) < 0.01


class TestLandisKoch:
    @pytest.mark.parametrize(
        ("kappa", "reading"),
        [
            (-0.3, "poor"),
            (-1.0, "poor"),
            (0.0, "slight"),
            (0.2, "slight"),
            (0.21, "fair"),
            (0.4, "fair"),
            (0.55, "moderate"),
            (0.6, "moderate"),
            (0.7, "substantial"),
            (0.8, "substantial"),
            (0.81, "almost perfect"),
            (1.0, "almost perfect"),
        ],
    )
    def test_bands(self, kappa, reading):
        assert landis_koch(kappa) == reading

    @pytest.mark.parametrize("kappa", [1.5, -1.2, float("nan"), None, "0.5", True])
    def test_invalid(self, kappa):
        with pytest.raises(ValueError, match="^kappa must be"):
            landis_koch(kappa)
