"""docs/statistics.md shows `simulate_study`'s numbers as the command printed them: the tables
between the ``simulate_study seed N`` markers are ``docs_tables`` of the stored answers
(docs/data/simulate_study_seed<N>.json, the command's ``--json --only pairwise_bt,ppi_judges,cluster``
output), the stored answers meet issue 41's targets, and one stored row is recomputed here
(``5_envsci`` at the stored replications: a change of the chooser or the simulation that moves it
fails until the command is rerun and the docs regenerated)."""

import json
import re
from pathlib import Path

import pytest

from annotation.management.commands.simulate_study import docs_tables

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "statistics.md"
SEEDS = (7, 11)


def _stored(seed: int) -> dict:
    return json.loads((ROOT / "docs" / "data" / f"simulate_study_seed{seed}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_docs_tables_are_the_stored_answers(seed):
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(rf"<!-- simulate_study seed {seed}: begin -->\n(.*?)\n<!-- simulate_study seed {seed}: end -->",
                      text, re.S)
    assert found, f"no simulate_study seed {seed} markers in docs/statistics.md"
    assert found.group(1) == docs_tables(_stored(seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_stored_answers_meet_the_targets(seed):
    answer = _stored(seed)
    bt = answer["pairwise_bt"]
    assert set(bt) == {"10_random", "20_random", "10_even", "5_envsci"}
    assert all(row["replications"] >= 200 for row in bt.values())
    assert bt["10_random"]["ratio_settled"] <= 0.80 and bt["20_random"]["ratio_settled"] <= 0.80
    judges = {(row["accuracy"], row["design"]): row for row in answer["ppi_judges"]}
    assert set(judges) == {(a, d) for a in (0.7, 0.8, 0.9) for d in ("uniform", "adaptive")}
    assert judges[(0.8, "uniform")]["coverage"] >= 0.93 and judges[(0.8, "uniform")]["width_ratio"] <= 0.75
    assert judges[(0.9, "uniform")]["coverage"] >= 0.93 and judges[(0.9, "uniform")]["width_ratio"] <= 0.62
    assert answer["cluster"]["topics"] == 5 and answer["cluster"]["coverage"] >= 0.92


@pytest.mark.parametrize("seed", SEEDS)
def test_the_stored_answers_meet_the_even_spacing_target(seed):
    assert _stored(seed)["pairwise_bt"]["10_even"]["ratio_settled"] <= 0.60


@pytest.mark.django_db
def test_the_stored_envsci_row_is_what_the_command_computes_now():
    from annotation.simulation.bradley_terry import pairwise_bt_simulation

    stored = _stored(7)["pairwise_bt"]["5_envsci"]
    computed = pairwise_bt_simulation(7, stored["replications"], settings=("5_envsci",))["5_envsci"]
    # Not to the last digit: OpenBLAS picks its kernels by CPU, and a fit's last bits decide
    # near-ties of τ ≥ 0.9 in a few replications. Measured on one machine with OPENBLAS_CORETYPE
    # (2026-12-07): adaptive labels 45.015 (Haswell), 44.880 (SkylakeX, stored), 45.400
    # (Sandybridge) — up to 1.2 % on a mean, 1.5 % on its standard error. Means within 2.5 %,
    # standard errors within 5 %, counts exact: the chooser before this one moved the adaptive
    # mean by 4 % (46.8), and any change of the chooser or the simulation by as much or more.
    assert computed.keys() == stored.keys()
    for key, value in stored.items():
        if isinstance(value, float):
            assert computed[key] == pytest.approx(value, rel=0.05 if key.startswith("se_") else 0.025), key
        else:
            assert computed[key] == value, key


def test_the_online_elo_order_effect_is_as_documented():
    """docs/statistics.md: over 1000 random orders (seed 0) of the 100 SurveyLens outline
    preferences SurveyLens' online Elo puts SurveyForge first 695 times and Gemini 305."""
    from collections import Counter

    import numpy as np

    from annotation.dashboards.human import SURVEYLENS_ELO
    from annotation.simulation.pairwise import preference_records
    from scoring import metrics as m

    records = preference_records()
    systems = sorted({r["left"] for r in records} | {r["right"] for r in records})
    index = {name: n for n, name in enumerate(systems)}
    rows = np.array([(index[r["left"]], index[r["right"]], r["outcome"]) for r in records])
    rng = np.random.default_rng(0)
    first = Counter(systems[int(np.argmax(m.elo(rows[rng.permutation(len(rows))], n_items=len(systems),
                                                 **SURVEYLENS_ELO)))] for _ in range(1000))
    assert first == {"SurveyForge": 695, "Gemini": 305}
    assert "SurveyForge first in 695 of 1000 random orders" in DOCS.read_text(encoding="utf-8")
