"""``manage.py simulate_study``: one object per study with --json, one table without."""

import io
import json

import pytest
from django.core.management import call_command

from annotation.simulation.pairwise import pairwise_simulation, preference_records


@pytest.fixture(scope="module")
def answer(django_db_setup, django_db_blocker) -> dict:
    # the PPI study reads the database for expert labels on the demo judge's verdicts (none here)
    out = io.StringIO()
    with django_db_blocker.unblock():
        call_command("simulate_study", "--seed", "7", "--json", "--only", "pairwise,ppi", stdout=out)
    return json.loads(out.getvalue())


def test_the_json_answer_has_the_pairwise_study(answer):
    pairwise = answer["pairwise"]
    assert {"labels_round_robin", "labels_adaptive", "replications"} <= set(pairwise)
    assert pairwise["replications"] == 100
    assert pairwise["preferences"] == 100 and pairwise["pool"] == 200
    for key in ("labels_round_robin", "labels_adaptive"):
        assert 1 <= pairwise[key] <= pairwise["pool"] + 1
    assert pairwise["ratio"] == pytest.approx(pairwise["labels_adaptive"] / pairwise["labels_round_robin"])


def test_the_json_answer_has_the_ppi_study_and_meets_its_targets(answer):
    ppi = answer["ppi"]
    assert ppi["simulations"] >= 1000 and ppi["seed"] == 7
    assert ppi["coverage"] >= 0.93, ppi  # nominal 95 %
    assert ppi["width_ratio"] < 1, ppi
    # the headline is the worst of the noise models, each of which is reported
    assert ppi["coverage"] == min(m["coverage"] for m in ppi["noise_models"].values())
    assert ppi["width_ratio"] == max(m["width_ratio"] for m in ppi["noise_models"].values())


@pytest.mark.xfail(strict=True, reason=(
    "issue 31's target is not met on the shipped SurveyLens preferences (docs/statistics.md, 'Adaptive pairwise"
    " assignment', with the designs tried): over 400 replications the expected-information design's ratio was 1.06"
    " at seed 7 and 1.26 at seed 11; issue 41's doubt-weighted neighbour design gives 1.11 at seed 7 (100"
    " replications); most replications reach τ ≥ 0.9 by an early lucky hit before a design has data, and the rest hinge on"
    " SurveyForge over Gemini, which the full data settle on indirect evidence against their head-to-head"))
def test_adaptive_pairs_reach_the_ranking_with_at_most_70_percent_of_the_labels(answer):
    pairwise = answer["pairwise"]
    assert pairwise["labels_adaptive"] <= 0.7 * pairwise["labels_round_robin"], pairwise


@pytest.mark.django_db
def test_the_table_names_each_measure():
    out = io.StringIO()
    call_command("simulate_study", "--seed", "3", "--only", "pairwise,ppi", stdout=out)
    text = out.getvalue()
    assert "labels to τ ≥ 0.9, round-robin" in text and "labels to τ ≥ 0.9, adaptive" in text
    assert text.count("| pairwise |") == 8
    assert text.count("| ppi      |") == 5 and "PPI coverage at nominal 95 %" in text


def test_the_truth_is_the_shipped_preferences():
    records = preference_records()
    assert len(records) == 100
    pairs = {frozenset((r["left"], r["right"])) for r in records}
    assert len(pairs) == 10


def test_a_replication_count_below_one_is_refused():
    with pytest.raises(ValueError, match="replications"):
        pairwise_simulation(7, replications=0)


def test_the_replay_chooses_with_the_products_function():
    from annotation.services import adaptive_pairs, schedule
    from annotation.simulation import pairwise

    assert pairwise.pairs_choose is adaptive_pairs.pairs_choose
    assert pairwise.pairs_ahead is adaptive_pairs.pairs_ahead
    assert pairwise.double_round_robin is schedule.double_round_robin


def test_every_replay_labels_the_whole_pool_once_per_design():
    import random

    from annotation.simulation.pairwise import CHECKPOINTS, _Study

    study = _Study(preference_records())
    for replay in (study.round_robin, study.adaptive):
        taus, right = replay(random.Random(1))
        assert len(taus) == study.pool == 200
        assert sorted(right) == list(CHECKPOINTS) and all(len(r) == len(study.orders) == 9 for r in right.values())


def test_an_unknown_truth_is_refused():
    with pytest.raises(ValueError, match="truth"):
        pairwise_simulation(7, replications=1, truth="coin")


def test_systems_with_the_same_data_tie_in_the_target():
    """SciSage and SurveyX have the same record (the same frequencies against every system, 5–5
    with each other): the target ties them exactly, so τ ≥ 0.9 does not ask for an order between
    them; checked with SciPy's τ-b on an estimate with the other orders right, either way round."""
    import numpy as np
    from scipy.stats import kendalltau

    from annotation.simulation.pairwise import TAU_TARGET, _Study

    study = _Study(preference_records())
    scisage, surveyx = study.systems.index("SciSage"), study.systems.index("SurveyX")
    assert study.target[scisage] == study.target[surveyx]
    assert len(study.orders) == 9
    for lower in (scisage, surveyx):
        estimate = study.target.copy()
        estimate[lower] -= 0.01
        assert kendalltau(estimate, study.target).statistic >= TAU_TARGET


@pytest.mark.django_db
def test_the_new_studies_answer_in_the_json_and_the_table():
    """The cluster study through the command with few replications (the full run's numbers are
    checked in tests/docs/test_statistics_numbers.py against the stored answers)."""
    out = io.StringIO()
    call_command("simulate_study", "--seed", "7", "--json", "--only", "cluster", "--replications", "2", stdout=out)
    answer = json.loads(out.getvalue())
    assert set(answer) == {"cluster"}
    assert answer["cluster"]["topics"] == 5 and answer["cluster"]["replications"] == 2
    assert 0 <= answer["cluster"]["coverage"] <= 1
    out = io.StringIO()
    call_command("simulate_study", "--seed", "7", "--only", "cluster", "--replications", "2", stdout=out)
    assert "topic-clustered 95 % interval: coverage" in out.getvalue()
