"""The yardsticks of simulate_study's new studies against independent computations: Kendall's
τ-b (SciPy), settled label counts by hand, the cluster correction's t quantile (SciPy), the
estimand of the cluster study, the PPI width ratio in closed form, the simulated judges' accuracy."""

import numpy as np
import pytest
from scipy import stats

from annotation.simulation import bradley_terry as bt
from annotation.simulation.calibration import JUDGE_ACCURACIES, _known_judge, ppi_judges_simulation
from annotation.simulation.cluster import pooled_truth
from scoring.metrics import bradley_terry_clustered


def test_the_batched_tau_is_scipys_tau_b_ties_included():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=(40, 8))
    estimate = np.round(truth + rng.normal(scale=0.7, size=truth.shape), 0)  # rounding makes ties
    estimate[0] = 0.0  # all tied: τ-b undefined, counted 0
    found = bt.kendall_tau_b_batch(estimate, truth)
    assert found[0] == 0.0
    for r in range(1, 40):
        assert found[r] == pytest.approx(stats.kendalltau(estimate[r], truth[r]).statistic, abs=1e-12)


def test_settled_is_the_first_count_from_which_the_target_holds():
    taus = np.array([
        [0.0, 0.95, 0.85, 0.92, 0.93],  # last below at label 3: settled at 4
        [0.95, 0.95, 0.95, 0.95, 0.95],  # never below: 1
        [0.95, 0.95, 0.95, 0.95, 0.5],  # below at the end: horizon + 1 (censored)
        [0.9, 0.1, 0.9, 0.9, 0.9],  # 0.9 counts as reached: settled at 3
    ])
    assert bt.settled(taus).tolist() == [4, 1, 6, 3]


def test_the_truths_are_the_settings_strengths_shuffled_onto_the_systems():
    rng = np.random.default_rng(0)
    even = bt._truths(bt.SETTINGS["10_even"], 5, rng)
    assert np.allclose(np.sort(even, axis=1), np.sort(even[0]))
    assert np.allclose(np.diff(np.sort(even[0])), 0.3)
    assert len({tuple(np.argsort(row)) for row in even}) > 1  # the order is not the numbering
    random_field = bt._truths(bt.SETTINGS["20_random"], 5, rng)
    assert random_field.shape == (5, 20) and np.allclose(random_field.mean(axis=1), 0)


@pytest.mark.django_db
def test_a_small_run_reports_each_measure_and_is_deterministic():
    first = bt.pairwise_bt_simulation(7, replications=4, settings=("5_envsci",))
    assert first == bt.pairwise_bt_simulation(7, replications=4, settings=("5_envsci",))
    envsci = first["5_envsci"]
    assert envsci["systems"] == 5 and envsci["replications"] == 4
    assert envsci["ratio_settled"] == pytest.approx(envsci["labels_adaptive"] / envsci["labels_round_robin"])
    assert 1 <= envsci["labels_adaptive"] <= envsci["horizon"] + 1
    with pytest.raises(ValueError, match="replications"):
        bt.pairwise_bt_simulation(7, replications=1)


def test_the_simulation_chooses_with_the_products_function():
    from annotation.services import adaptive_pairs
    from scoring.metrics import preference_design

    assert bt.choose_pairs_batch is preference_design.choose_pairs_batch
    assert adaptive_pairs.choose_pairs_batch is preference_design.choose_pairs_batch
    assert bt.pairs_ahead is adaptive_pairs.pairs_ahead and bt.is_uniform_turn is adaptive_pairs.is_uniform_turn


def test_the_cluster_correction_is_t_with_g_minus_1_degrees_of_freedom():
    rng = np.random.default_rng(5)
    rows, clusters = [], []
    for topic in range(5):
        for _ in range(8):
            i, j = rng.choice(4, 2, replace=False)
            rows.append((int(i), int(j), float(rng.random() < 0.6)))
            clusters.append(topic)
    fit = bradley_terry_clustered(rows, clusters=clusters, n_items=4, n_resamples=300, seed=1)
    factor = stats.t.ppf(0.975, 4) * np.sqrt(5 / 4)
    assert fit["small_sample_factor"] == pytest.approx(factor)
    assert fit["few_clusters"] is True
    sd = fit["samples"].std(axis=0, ddof=1)
    assert np.all(fit["low"] <= fit["estimate"] - factor * sd + 1e-12)
    assert np.all(fit["high"] >= fit["estimate"] + factor * sd - 1e-12)
    plain = bradley_terry_clustered(rows, n_items=4, n_resamples=50, seed=1)
    assert plain["small_sample_factor"] is None and plain["few_clusters"] is False


def test_without_topic_variation_the_cluster_studys_estimand_is_the_strengths_themselves():
    theta = np.array([-1.0, -0.2, 0.4, 0.8])
    assert np.allclose(pooled_truth(theta, topic_sd=0.0), theta - theta.mean(), atol=1e-6)
    shrunk = pooled_truth(theta, topic_sd=0.5)
    assert np.all(np.abs(shrunk) < np.abs(theta - theta.mean()))  # averaging over topics pulls towards 0


@pytest.mark.parametrize("accuracy", JUDGE_ACCURACIES)
def test_the_simulated_judges_have_their_accuracy(accuracy):
    expert, judge, hard = _known_judge(accuracy, 200_000, np.random.default_rng(1))
    assert (expert == judge).mean() == pytest.approx(accuracy, abs=0.005)
    wrong = expert != judge
    assert wrong[hard].mean() / wrong[~hard].mean() == pytest.approx(4.0, rel=0.05)


@pytest.mark.django_db
def test_the_ppi_width_ratio_is_the_closed_form_for_a_uniform_sample():
    """Equal label variances and symmetric errors: corr(Y, f) = ρ = (3a − 1)/2 and PPI++'s λ ≈ ρ,
    so width / human-only width ≈ √(1 − ρ² + ρ² n/N) (the last term: the judge's own variance)."""
    found = {(e["accuracy"], e["design"]): e for e in ppi_judges_simulation(7, simulations=150)}
    for accuracy in JUDGE_ACCURACIES:
        rho = (3 * accuracy - 1) / 2
        closed = np.sqrt(1 - rho ** 2 + rho ** 2 * 150 / 4000)
        assert found[(accuracy, "uniform")]["width_ratio"] == pytest.approx(closed, abs=0.02)
        assert found[(accuracy, "uniform")]["coverage"] >= 0.9
