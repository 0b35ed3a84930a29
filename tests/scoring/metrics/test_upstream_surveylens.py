"""SurveyLens's released code pinned: RAMS/TAMS at the shipped τ and BT rubric weights on raw scores.

``tests/fixtures/upstream/surveylens.json`` holds the outputs of TechnicolorGUO/SurveyLens's own
``eval_quantitative.py`` (``_compute_bms_redundancy``, ``_compute_t_ams_similarity``) and ``bt.py``
(``run_fitting``) with its shipped configuration files (commit and how they were run are in the file).
The similarities are computed here from the same vectors with numpy; the released code computes them in
float32, hence the 1e-6 tolerance.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from scoring.metrics import SURVEYLENS_TAU_PRESETS, bt_aspect_weights, rams, redundancy_weights, tams

FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures/upstream/surveylens.json").read_text())


def cosines(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (b / np.linalg.norm(b, axis=1, keepdims=True)).T


def test_fixture_names_the_released_code():
    assert FIXTURE["repository"] == "TechnicolorGUO/SurveyLens"
    assert re.fullmatch(r"[0-9a-f]{40}", FIXTURE["commit"])


def test_the_upstream_tau_preset_is_the_shipped_configuration():
    assert SURVEYLENS_TAU_PRESETS["upstream"] == FIXTURE["shipped_thresholds"] == {
        "outline": 0.95, "content": 0.95, "reference": 0.95}


@pytest.mark.parametrize("name", sorted(FIXTURE["alignment"]))
def test_rams_and_gated_tams_give_the_released_values(name):
    case = FIXTURE["alignment"][name]
    gen, gold = list(case["generated"].values()), list(case["gold"].values())
    gen_gold, gen_gen = cosines(gen, gold), cosines(gen, gen)
    assert (gen_gen[~np.eye(len(gen), dtype=bool)] < 0).any()  # the case exercises the clamp
    released = case["upstream"]
    tau = SURVEYLENS_TAU_PRESETS["upstream"]["reference"]
    assert tau == released["threshold"]
    got = rams(gen_gold, gen_gen, tau, released["lambda"])
    assert got["precision"] == pytest.approx(released["bms"]["precision"], abs=1e-6)
    assert got["recall"] == pytest.approx(released["bms"]["recall"], abs=1e-6)
    assert got["rams"] == pytest.approx(released["bms"]["bms"], abs=1e-6)
    assert tams(gen_gold, tau, "gated") == pytest.approx(released["t_ams"], abs=1e-6)


def test_negative_generated_similarities_no_longer_raise_precision_above_one():
    case = FIXTURE["alignment"]["all_negative_pairs"]
    gen, gold = list(case["generated"].values()), list(case["gold"].values())
    gen_gen = cosines(gen, gen)
    # before: ω = exp(−λ · max σ) with max σ < 0 gave ω > 1 and P = mean ω ≈ 1.206 > 1
    unclamped = np.exp(-(np.where(np.eye(3, dtype=bool), -np.inf, gen_gen)).max(axis=1))
    assert unclamped.mean() > 1.2
    assert redundancy_weights(gen_gen).tolist() == [1.0, 1.0, 1.0]
    assert rams(cosines(gen, gold), gen_gen, 0.95)["precision"] == pytest.approx(1.0)


def test_bt_weights_on_raw_scores_give_the_released_weights():
    bt = FIXTURE["bt"]
    winners = [[bt["scores"][w][f] for f in bt["features"]] for w, _ in bt["pairs"]]
    losers = [[bt["scores"][l][f] for f in bt["features"]] for _, l in bt["pairs"]]
    got = bt_aspect_weights(winners, losers, alpha=bt["alpha"], x_max=5.0, variant="upstream")
    expected = [bt["upstream"][f] for f in bt["features"]]
    assert got == pytest.approx(expected, abs=1e-6)
    paper = bt_aspect_weights(winners, losers, alpha=bt["alpha"], x_max=5.0)
    assert np.abs(paper - np.asarray(expected)).max() > 0.01  # normalised scores: other weights
    with pytest.raises(ValueError, match="variant"):
        bt_aspect_weights(winners, losers, variant="code")
