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
    with pytest.raises(ValueError):
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
        with pytest.raises(ValueError):
            majority_vote([True, None])


class TestFactualAccuracy:
    def test_tie_policies(self):
        decisions = [True, True, False, None]
        assert factual_accuracy(decisions) == pytest.approx(2 / 3)
        assert factual_accuracy(decisions, ties="count_as_wrong") == pytest.approx(2 / 4)

    def test_empty_and_all_ties(self):
        assert factual_accuracy([]) is None
        assert factual_accuracy([None, None]) is None
        assert factual_accuracy([None, None], ties="count_as_wrong") == 0.0

    def test_invalid(self):
        with pytest.raises(ValueError, match="ties"):
            factual_accuracy([True], ties="ignore")
        with pytest.raises(ValueError):
            factual_accuracy([True, "maybe"])
        with pytest.raises(ValueError):
            factual_accuracy("TFT")


class TestQuartiles:
    def test_distinct_counts_split_evenly(self):
        assert citation_quartiles([1, 2, 3, 4, 5, 6, 7, 8]).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
        assert citation_quartiles([40, 10, 30, 20]).tolist() == [4, 1, 3, 2]

    def test_ties_never_straddle_a_boundary(self):
        counts = [0, 0, 0, 0, 0, 5, 10, 20]
        # cut points: q25 = 0, q50 = 0, q75 = 6.25 → all zeros in Q1, Q2 and Q3 start above
        assert citation_quartiles(counts).tolist() == [1, 1, 1, 1, 1, 3, 4, 4]

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
    def test_monotone_and_tie_consistent(self, counts):
        q = citation_quartiles(counts)
        arr = np.array(counts)
        order = np.argsort(arr, kind="stable")
        assert np.all(np.diff(q[order]) >= 0)
        for value in np.unique(arr):
            assert len(set(q[arr == value].tolist())) == 1
        assert set(q.tolist()) <= {1, 2, 3, 4}


def test_recall_by_quartile_hand_computed():
    counts = [1, 2, 3, 4, 5, 6, 7, 8]
    matched = [False, False, True, False, True, True, True, True]
    assert recall_by_quartile(counts, matched) == [0.0, 0.5, 1.0, 1.0]


def test_recall_by_quartile_empty_quartiles_are_none():
    assert recall_by_quartile([0, 0, 0, 9], [True, False, False, True]) == [pytest.approx(1 / 3), None, None, 1.0]
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
