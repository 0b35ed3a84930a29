"""ReportBench statement metrics and recall by citation quartile (§3.1–3.2, App. A.2.1)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.metrics import (
    citation_quartiles,
    factual_accuracy,
    majority_vote,
    match_rate,
    pooled_recall_by_quartile,
    recall_by_quartile,
)


def test_match_rate():
    assert match_rate([True, False, True, True]) == 0.75
    assert match_rate(np.array([1, 0])) == 0.5
    assert match_rate([]) is None
    with pytest.raises(ValueError, match="True/False"):
        match_rate([1, 2])
    with pytest.raises(ValueError, match="flags must contain booleans"):
        match_rate(["yes"])


class TestMajorityVote:
    def test_six_verdicts(self):
        # two models x three runs (§3.1)
        assert majority_vote([True, True, True, True, False, False]) == {"decision": True, "confidence": pytest.approx(4 / 6)}
        assert majority_vote([0, 0, 0, 0, 0, 1]) == {"decision": False, "confidence": pytest.approx(5 / 6)}

    def test_tie(self):
        assert majority_vote([True, False, True, False, True, False]) == {"decision": None, "confidence": 0.5}

    def test_unanimous_and_single(self):
        assert majority_vote([True]) == {"decision": True, "confidence": 1.0}

    def test_invalid(self):
        with pytest.raises(ValueError, match="empty"):
            majority_vote([])
        with pytest.raises(ValueError, match="votes must contain only numbers; found None at position 1"):
            majority_vote([True, None])


class TestFactualAccuracy:
    def test_tie_policies(self):
        decisions = [True, True, False, None]
        assert factual_accuracy(decisions, ties="exclude") == pytest.approx(2 / 3)
        assert factual_accuracy(decisions) == pytest.approx(2 / 4)  # a tie is not verified (paper, upstream)

    def test_empty_and_all_ties(self):
        assert factual_accuracy([]) is None
        assert factual_accuracy([None, None], ties="exclude") is None
        assert factual_accuracy([None, None]) == 0.0

    def test_invalid(self):
        with pytest.raises(ValueError, match="ties"):
            factual_accuracy([True], ties="ignore")
        with pytest.raises(ValueError, match="decisions must contain booleans"):
            factual_accuracy([True, "maybe"])
        with pytest.raises(ValueError, match="decisions must be a sequence of True/False/None; got str"):
            factual_accuracy("TFT")


class TestQuartiles:
    def test_distinct_counts_split_evenly(self):
        assert citation_quartiles([1, 2, 3, 4, 5, 6, 7, 8]).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
        assert citation_quartiles([40, 10, 30, 20]).tolist() == [4, 1, 3, 2]

    def test_ties_give_equal_size_quartiles_in_bibliography_order(self):
        counts = [0, 0, 0, 0, 0, 5, 10, 20]
        # ranked by count, equal counts in the order given: ranks 0..7 → quartile 1 + ⌊4r/8⌋
        assert citation_quartiles(counts).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
        ten = [3, 0, 0, 0, 0, 0, 0, 1, 1, 2]  # many ties: quantile cuts gave sizes like [6, 0, 1, 3]
        assert np.bincount(citation_quartiles(ten), minlength=5)[1:].tolist() == [3, 2, 3, 2]

    def test_single_and_empty(self):
        assert citation_quartiles([7]).tolist() == [1]
        assert citation_quartiles([]).tolist() == []

    def test_invalid(self):
        with pytest.raises(ValueError, match="non-negative"):
            citation_quartiles([1, -1])
        with pytest.raises(ValueError, match="non-finite"):
            citation_quartiles([1, float("nan")])

    @settings(max_examples=80, deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=40))
    def test_monotone_and_equal_sized(self, counts):
        q = citation_quartiles(counts)
        ranked = sorted(range(len(counts)), key=lambda i: (counts[i], i))  # ties by position
        assert [q[i] for i in ranked] == sorted(q.tolist())
        sizes = [int((q == k).sum()) for k in (1, 2, 3, 4)]
        assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(counts)
        assert [q[i] for i in ranked] == [1 + 4 * r // len(counts) for r in range(len(counts))]


def test_recall_by_quartile_hand_computed():
    counts = [1, 2, 3, 4, 5, 6, 7, 8]
    matched = [False, False, True, False, True, True, True, True]
    assert recall_by_quartile(counts, matched) == [0.0, 0.5, 1.0, 1.0]


def test_recall_by_quartile_empty_quartiles_are_none():
    assert recall_by_quartile([0, 0, 0, 9], [True, False, False, True]) == [1.0, 0.0, 0.0, 1.0]
    assert recall_by_quartile([0, 9], [True, False]) == [1.0, None, 0.0, None]
    assert recall_by_quartile([], []) == [None, None, None, None]
    with pytest.raises(ValueError, match="same length"):
        recall_by_quartile([1, 2], [True])


def test_pooled_recall_pools_references_not_surveys():
    survey_a = ([1, 2, 3, 4], [True, False, False, False])  # Q1 hit
    survey_b = ([10, 20, 30, 40, 50, 60, 70, 80], [False] * 8)
    pooled = pooled_recall_by_quartile([survey_a, survey_b])
    assert pooled[0] == pytest.approx(1 / 3)  # 1 of the 1 + 2 Q1 references
    assert pooled[1:] == [0.0, 0.0, 0.0]
    assert pooled_recall_by_quartile([]) == [None, None, None, None]
    with pytest.raises(ValueError, match="pair"):
        pooled_recall_by_quartile([([1, 2],)])
