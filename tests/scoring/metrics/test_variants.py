"""The upstream variants, reproducible by name, against the upstream formulas written out here."""

import numpy as np
import pytest

from scoring.metrics import checklist_scores, citation_precision, group_score, relevance_rate


def test_deepsynth_group_score_upstream_has_no_floor():
    verdicts = [1, -1, -1, 0, -1]  # S = −2 over N = 5
    assert group_score(verdicts) == 0.0
    assert group_score(verdicts, variant="upstream") == pytest.approx(-2 / 5)
    assert group_score([1] * 5, 4, variant="upstream") == 1.0  # still capped at 1
    groups = [{"kind": "general", "verdicts": verdicts}, {"kind": "constraint", "verdicts": [1, 1, 0]}]
    assert checklist_scores(groups, variant="upstream")["overall"] == pytest.approx(100 * np.mean([-2 / 5, 2 / 3]))
    assert checklist_scores(groups)["overall"] == pytest.approx(100 * np.mean([0.0, 2 / 3]))
    with pytest.raises(ValueError, match="variant"):
        group_score(verdicts, variant="code")


def test_deepscholar_relevance_rate_upstream_drops_the_half():
    grades = [2, 1, 0, 2]
    assert relevance_rate(grades) == pytest.approx(5 / 8)
    assert relevance_rate(grades, variant="upstream") == pytest.approx(5 / 4)


def test_deepscholar_citation_precision_upstream_is_the_mean_of_sentence_precisions():
    support = [1, 1, 1, 0]
    sentences = [0, 0, 0, 1]  # sentence 0: 3/3, sentence 1: 0/1
    assert citation_precision(support) == pytest.approx(3 / 4)
    assert citation_precision(support, variant="upstream", sentences=sentences) == pytest.approx((1.0 + 0.0) / 2)
    with pytest.raises(ValueError, match="sentences: the upstream variant needs"):
        citation_precision(support, variant="upstream")


def test_reportbench_upstream_matches_titles_exactly_after_its_own_normalisation():
    from scoring.metrics import reference_prf, upstream_title_key

    assert upstream_title_key("A/B Testing") == "ab testing"
    assert upstream_title_key("  Deep   Learning: A Review ") == "deep learning a review"
    predicted = [{"title": "A/B Testing"}, {"title": "Deep Learning: a review"}, {"title": "Attention is all you need!"}]
    gold = [{"title": "ab testing"}, {"title": "Deep learning - a review"}, {"title": "Other"}, {"title": "More"}]
    got = reference_prf(predicted, gold, variant="reportbench_upstream")
    # "deep learning  a review" keeps the dash's removal as a double space, collapsed: matches; the rest do not
    assert got["tp"] == 2 and got["precision"] == pytest.approx(2 / 3) and got["recall"] == pytest.approx(2 / 4)


def test_scisage_upstream_counts_every_pair_above_the_threshold():
    from difflib import SequenceMatcher

    from scoring.metrics import reference_prf

    predicted = [{"title": "Graph neural networks: a survey"}, {"title": "Graph neural network a survey"}]
    gold = [{"title": "Graph Neural Networks: A Survey"}, {"title": "Unrelated work on proteins"}]
    got = reference_prf(predicted, gold, variant="scisage_upstream")
    pairs = sum(SequenceMatcher(None, *sorted((" ".join(p["title"].lower().replace(":", " ").split()),
                                                " ".join(g["title"].lower().replace(":", " ").split())))).ratio() >= 0.8
                for p in predicted for g in gold)
    assert got["tp"] == pairs == 2  # both predictions match the same gold title: many to many
    assert got["recall"] == pytest.approx(2 / 2) and got["precision"] == pytest.approx(2 / 2)
    with pytest.raises(ValueError, match="variant"):
        reference_prf(predicted, gold, variant="surveyscope")
