"""DeepScholar-bench metrics (§8.3)."""

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import gmean

from scoring.metrics import (
    NUGGET_MODES,
    citation_precision,
    claim_coverage,
    document_importance,
    geometric_mean,
    geometric_means_over_common,
    nugget_coverage,
    reference_coverage,
    relevance_rate,
    win_rate,
)


class TestRelevanceRate:
    def test_divides_by_two_s(self):
        # Σ = 3 over |S| = 3 → 3 / 6 (the released code would report 1.0)
        assert relevance_rate([2, 1, 0]) == pytest.approx(0.5)
        assert relevance_rate([2, 2]) == 1.0
        assert relevance_rate([0]) == 0.0

    def test_empty_and_invalid(self):
        assert relevance_rate([]) is None
        with pytest.raises(ValueError, match="0, 1 or 2"):
            relevance_rate([1, 3])
        with pytest.raises(ValueError, match="0, 1 or 2"):
            relevance_rate([1.5])
        with pytest.raises(ValueError, match="grades must contain numbers, not booleans"):
            relevance_rate([True, False])


def test_reference_coverage():
    assert reference_coverage(["a", "b", "x"], ["a", "b", "c", "d"]) == 0.5
    assert reference_coverage(["a", "a", "a"], ["a", "b"]) == 0.5  # set semantics
    assert reference_coverage([], ["a"]) == 0.0
    assert reference_coverage(["a"], []) is None
    assert reference_coverage({"2401.1", "2401.2"}, ("2401.2",)) == 1.0
    with pytest.raises(ValueError, match="invalid id"):
        reference_coverage(["a", None], ["a"])
    with pytest.raises(ValueError, match="collection"):
        reference_coverage("abc", ["a"])


class TestDocumentImportance:
    def test_median_ratio(self):
        assert document_importance([10, 20, 30], [100, 200, 300]) == pytest.approx(0.1)
        assert document_importance([1, 3, 5, 1000], [8, 8]) == pytest.approx(0.5)  # median 4 / 8

    def test_capped_at_one(self):
        assert document_importance([1000], [10]) == 1.0

    def test_zero_cases(self):
        assert document_importance([5, 6], [0, 0, 1]) == 0.0  # exemplar median 0
        assert document_importance([5, 6], []) == 0.0  # exemplar missing
        assert document_importance([], [5]) == 0.0  # nothing retrieved

    def test_invalid(self):
        with pytest.raises(ValueError, match="system_citation_counts"):
            document_importance([-1], [3])
        with pytest.raises(ValueError, match="system_citation_counts must contain only numbers; found None at position 1"):
            document_importance([1, None], [3])


def test_citation_precision():
    assert citation_precision([True, False, True, True]) == 0.75
    assert citation_precision([1.0, 0.5]) == 0.75
    assert citation_precision([]) is None
    with pytest.raises(ValueError, match=r"\[0.0, 1.0\]"):
        citation_precision([1.2])


class TestClaimCoverage:
    def test_window_counts_neighbours(self):
        s = np.zeros((4, 4), dtype=bool)
        s[0, 1] = True  # sentence 0 supported by sentence 1's citations
        s[2, 2] = True  # sentence 2 supported by its own
        s[3, 0] = True  # sentence 3 supported only from 3 sentences away
        assert claim_coverage(s, window=0) == 0.25
        assert claim_coverage(s, window=1) == 0.5
        assert claim_coverage(s, window=2) == 0.5
        assert claim_coverage(s, window=3) == 0.75

    def test_default_window_is_one(self):
        s = [[0, 1], [0, 0]]
        assert claim_coverage(s) == 0.5

    def test_empty_and_invalid(self):
        assert claim_coverage(np.zeros((0, 0), dtype=bool)) is None
        assert claim_coverage([]) is None
        with pytest.raises(ValueError, match="square"):
            claim_coverage(np.zeros((2, 3), dtype=bool))
        with pytest.raises(ValueError, match="window"):
            claim_coverage(np.eye(2, dtype=bool), window=-1)
        with pytest.raises(ValueError, match="window"):
            claim_coverage(np.eye(2, dtype=bool), window=1.5)
        with pytest.raises(ValueError, match="True/False"):
            claim_coverage([[0, 2], [0, 0]])

    @settings(max_examples=80, deadline=None)
    @given(
        st.integers(min_value=1, max_value=12).flatmap(lambda n: arrays(bool, (n, n))),
        st.integers(min_value=0, max_value=5),
    )
    def test_matches_loop_definition(self, support, window):
        n = support.shape[0]
        covered = [any(support[i, j] for j in range(max(0, i - window), min(n, i + window + 1))) for i in range(n)]
        assert claim_coverage(support, window) == pytest.approx(np.mean(covered))
        assert claim_coverage(support, window) <= claim_coverage(support, window + 1)


class TestNuggetCoverage:
    labels = ["support", "partial_support", "not_support", "support", "partial_support"]
    importance = ["vital", "vital", "vital", "okay", "okay"]

    @pytest.mark.parametrize(
        ("mode", "expected"),
        [
            ("strict_all", 2 / 5),
            ("all", (1 + 0.5 + 0 + 1 + 0.5) / 5),
            ("strict_vital", 1 / 3),
            ("vital", (1 + 0.5 + 0) / 3),
        ],
    )
    def test_modes(self, mode, expected):
        assert nugget_coverage(self.labels, self.importance, mode) == pytest.approx(expected)

    def test_default_mode_is_strict_all(self):
        assert nugget_coverage(self.labels, self.importance) == pytest.approx(0.4)

    def test_no_vital_nuggets_is_none(self):  # the upstream variant gives 0.0: test_upstream_deepscholar
        assert nugget_coverage(["support"], ["okay"], "vital") is None
        assert nugget_coverage(["support"], ["okay"], "strict_vital") is None
        assert nugget_coverage([], [], "all") is None

    def test_invalid(self):
        with pytest.raises(ValueError, match="outside the allowed set"):
            nugget_coverage(["supported"], ["vital"])
        with pytest.raises(ValueError, match="outside the allowed set"):
            nugget_coverage(["support"], ["important"])
        with pytest.raises(ValueError, match="same length"):
            nugget_coverage(["support"], ["vital", "okay"])
        with pytest.raises(ValueError, match="mode"):
            nugget_coverage(["support"], ["vital"], "strict")
        with pytest.raises(ValueError, match="labels"):
            nugget_coverage([1], ["vital"])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(["support", "partial_support", "not_support"]), st.sampled_from(["vital", "okay"])), max_size=15))
    def test_strict_never_exceeds_lenient(self, nuggets):
        labels = [lab for lab, _ in nuggets]
        imp = [i for _, i in nuggets]
        scores = {mode: nugget_coverage(labels, imp, mode) for mode in NUGGET_MODES}
        for strict, lenient in (("strict_all", "all"), ("strict_vital", "vital")):
            if scores[strict] is not None:
                assert 0.0 <= scores[strict] <= scores[lenient] <= 1.0


def test_win_rate():
    assert win_rate(["win", "tie", "loss", "win"]) == pytest.approx(2.5 / 4)
    assert win_rate(["tie"]) == 0.5
    assert win_rate([]) is None
    with pytest.raises(ValueError, match="outside the allowed set"):
        win_rate(["win", "draw"])


class TestGeometricMean:
    def test_values(self):
        assert geometric_mean([0.25, 1.0]) == pytest.approx(0.5)
        assert geometric_mean([0.2, 0.4, 0.8]) == pytest.approx(0.4)
        assert geometric_mean([0.3]) == pytest.approx(0.3)

    def test_zero_and_empty(self):
        assert geometric_mean([0.5, 0.0, 0.9]) == 0.0
        assert geometric_mean([]) is None

    @pytest.mark.parametrize("values", [[-0.1, 0.5], [1.5], [float("nan")], [None, 0.5]])
    def test_invalid(self, values):
        with pytest.raises(ValueError, match="^values (must|contains a non-finite)"):
            geometric_mean(values)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=1, max_size=10))
    def test_between_min_and_max(self, values):
        g = geometric_mean(values)
        assert min(values) * (1 - 1e-9) <= g <= max(values) * (1 + 1e-9)


class TestGeometricMeansOverCommon:
    def test_every_system_is_over_the_metrics_all_of_them_have(self):
        means = {"a": {"x": 0.5, "y": 0.2, "z": None}, "b": {"x": 0.9, "y": 0.4, "z": 0.8}}
        got = geometric_means_over_common(means, ["x", "y", "z"])
        assert got["over"] == ["x", "y"] and got["left_out"] == ["z"]
        assert got["values"]["a"] == pytest.approx(gmean([0.5, 0.2]))
        assert got["values"]["b"] == pytest.approx(gmean([0.9, 0.4]))

    def test_a_zero_mean_gives_zero_and_no_common_metric_gives_none(self):
        assert geometric_means_over_common({"a": {"x": 0.0, "y": 0.5}}, ["x", "y"])["values"] == {"a": 0.0}
        none = geometric_means_over_common({"a": {"x": None}, "b": {"x": 0.3}}, ["x"])
        assert none["values"] == {"a": None, "b": None} and none["over"] == []

    def test_the_documented_example(self):
        """docs/statistics.md states a system's six metric means and their geometric mean."""
        doc = (Path(__file__).resolve().parents[3] / "docs" / "statistics.md").read_text(encoding="utf-8")
        found = re.search(r"DeepScholar geometric mean example: means ([\d., ]+) give ([\d.]+)\.", doc)
        assert found, "docs/statistics.md lost its geometric mean example"
        means = [float(v) for v in found.group(1).split(", ")]
        keys = ["organization", "nugget_coverage", "relevance_rate", "reference_coverage", "citation_precision",
                "claim_coverage"]
        got = geometric_means_over_common({"s": dict(zip(keys, means)) | {"document_importance": None}},
                                          keys[:4] + ["document_importance"] + keys[4:])
        assert len(means) == 6 and got["left_out"] == ["document_importance"]
        assert round(got["values"]["s"], 3) == float(found.group(2)) == round(gmean(means), 3)
