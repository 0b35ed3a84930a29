"""SciSage's ``scisage_upstream`` reference variant pinned to what the released scorer computed.

``tests/fixtures/upstream/scisage.json`` holds the outputs of TechnicolorGUO/SciSage's own
``eval/reference_eval.py`` (``optimized_similarity_match`` and its ``__main__`` arithmetic; commit and
how it was run are in the file) on constructed papers: per paper alone, and pooled over the papers.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from scoring.metrics import pooled_reference_prf, reference_prf, scisage_upstream_similar

FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures/upstream/scisage.json").read_text())


def test_fixture_names_the_released_code():
    assert FIXTURE["repository"] == "TechnicolorGUO/SciSage"
    assert re.fullmatch(r"[0-9a-f]{40}", FIXTURE["commit"])


@pytest.mark.parametrize("name", sorted(FIXTURE["cases"]))
def test_per_paper_counts_are_the_released_counts(name):
    case = FIXTURE["cases"][name]
    for paper, expected in zip(case["papers"], case["per_paper"], strict=True):
        got = reference_prf(paper["generated"], paper["references"], variant="scisage_upstream")
        assert (got["tp"], got["n_predicted"], got["n_gold"]) == (
            expected["tp"], expected["n_predicted"], expected["n_gold"])


@pytest.mark.parametrize("name", sorted(FIXTURE["cases"]))
def test_pooled_aggregate_is_the_released_value(name):
    case = FIXTURE["cases"][name]
    per_paper = [reference_prf(p["generated"], p["references"], variant="scisage_upstream") for p in case["papers"]]
    pooled = pooled_reference_prf([r["tp"] for r in per_paper], [r["n_predicted"] for r in per_paper],
                                  [r["n_gold"] for r in per_paper])
    for key in ("tp", "n_predicted", "n_gold", "precision", "recall", "f1"):
        assert pooled[key] == pytest.approx(case["upstream"][key], abs=1e-12), key


def test_issue_case_pooled_against_the_mean_of_papers():
    case = FIXTURE["cases"]["issue_case"]
    per_paper = [reference_prf(p["generated"], p["references"], variant="scisage_upstream") for p in case["papers"]]
    assert np.mean([r["f1"] for r in per_paper]) == pytest.approx(0.5)  # the leaderboard's mean before
    assert case["upstream"]["f1"] == pytest.approx(1 / 11)  # 0.091: what the released code reports


def test_gold_titles_are_split_into_sub_sentences_and_empty_titles_count():
    assert scisage_upstream_similar("Attention is all you need", "Attention is all you need. Transformers for X")
    assert not reference_prf([{"title": "Attention is all you need"}],
                             [{"title": "Attention is all you need. Transformers for sequence transduction"}])["tp"]
    assert scisage_upstream_similar("", "Deep residual learning.")  # "" against the empty piece after the period
    assert not scisage_upstream_similar("", "Deep residual learning")
    got = reference_prf([{"title": ""}, {"title": None}], [{"title": "A title."}], variant="scisage_upstream")
    assert (got["tp"], got["n_predicted"], got["n_gold"]) == (2, 2, 1)


def test_pooled_reference_prf_validates():
    assert pooled_reference_prf([], [], [])["f1"] == 0.0
    with pytest.raises(ValueError, match="one entry per paper"):
        pooled_reference_prf([1], [1, 2], [1])
    with pytest.raises(ValueError, match="non-negative integer"):
        pooled_reference_prf([1.5], [2], [2])
