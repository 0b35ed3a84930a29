"""Calibrated scores (``scoring.metrics.calibration``) and the sampling designs
(``scoring.metrics.sampling``) against independent computations written here with NumPy/SciPy."""

import math

import numpy as np
import pytest
from scipy import stats

from scoring.metrics.calibration import (
    calibrated_mean, difference_interval, labels_for_difference_width, labels_for_width, report_mean_weights,
)
from scoring.metrics.sampling import (
    poisson_sample, stratified_sample, uncertainty_probabilities, uniform_sample,
)

Z = stats.norm.ppf(0.975)


def _population(seed: int, N: int = 3000, flip: float = 0.15):
    rng = np.random.default_rng(seed)
    judge = rng.binomial(1, 0.3, N).astype(float)
    truth = np.where(rng.random(N) < flip, 1.0 - judge, judge)  # the judge errs on 15 % of the units
    return rng, judge, truth


def test_classical_ppi_is_the_textbook_estimator_and_clt_interval():
    """λ = 1: θ̂ = mean of f on the unlabelled + mean of (Y − f) on the labelled, interval
    θ̂ ± z √(σ²_f / N + σ²_{Y−f} / n) (Angelopoulos et al. 2023, the mean example)."""
    rng = np.random.default_rng(3)
    n, N = 150, 2000
    f_unlabelled = rng.normal(0.4, 0.2, N)
    f = rng.normal(0.4, 0.2, n)
    y = f + 0.1 + rng.normal(0, 0.1, n)  # the judge is 0.1 too low
    out = calibrated_mean(y, f, f_unlabelled, lam=1.0)
    estimate = f_unlabelled.mean() + (y - f).mean()
    half = Z * math.sqrt(f_unlabelled.var() / N + (y - f).var() / n)
    assert out["ppi"]["estimate"] == pytest.approx(estimate, abs=1e-12)
    assert out["ppi"]["low"] == pytest.approx(estimate - half, abs=1e-12)
    assert out["ppi"]["high"] == pytest.approx(estimate + half, abs=1e-12)
    # human-only: the sample mean and its CLT interval; judge-only: the judge's mean
    assert out["human_only"]["estimate"] == pytest.approx(y.mean())
    assert out["human_only"]["high"] - out["human_only"]["low"] == pytest.approx(2 * Z * y.std() / math.sqrt(n))
    assert out["judge_only"]["estimate"] == pytest.approx(f_unlabelled.mean())
    assert out["n_human"] == n and out["n_judge"] == N


def test_power_tuned_lambda_matches_its_closed_form_and_ppi_py_default():
    """PPI++ for a mean: λ* = Cov(Y, f) / ((1 + n/N) Var(f)), clipped to [0, 1] (Angelopoulos,
    Duchi & Zrnic 2023, Example 6.1); the estimate is mean_N(λf) + mean_n(Y − λf)."""
    import ppi_py

    rng = np.random.default_rng(11)
    n, N = 200, 1500
    f_all = rng.normal(0, 1, N)
    f = rng.normal(0, 1, n)
    y = 0.5 * f + rng.normal(0, 1, n)  # weakly informative judge: λ* well inside (0, 1)
    out = calibrated_mean(y, f, f_all)
    cov = np.mean((y - y.mean()) * (f - f.mean()))
    var = np.var(np.concatenate([f, f_all]), ddof=1)
    lam = float(np.clip(cov / ((1 + n / N) * var), 0, 1))
    assert 0.05 < lam < 0.95
    assert out["lam"] == pytest.approx(lam, rel=1e-9)
    estimate = (lam * f_all).mean() + (y - lam * f).mean()
    assert out["ppi"]["estimate"] == pytest.approx(estimate, abs=1e-12)
    half = Z * math.sqrt((lam * f_all).var() / N + (y - lam * f).var() / n)
    assert out["ppi"]["high"] - out["ppi"]["low"] == pytest.approx(2 * half, rel=1e-9)
    # the same interval as ppi_py's own default (lam=None)
    low, high = ppi_py.ppi_mean_ci(y, f, f_all, alpha=0.05)
    assert (out["ppi"]["low"], out["ppi"]["high"]) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    assert out["ess_gain"] == pytest.approx(((out["human_only"]["high"] - out["human_only"]["low"])
                                             / (out["ppi"]["high"] - out["ppi"]["low"])) ** 2)


def test_informative_judge_narrows_the_interval_and_an_uninformative_one_does_not_widen_it():
    rng, judge, truth = _population(5)
    chosen, pi = uniform_sample(judge.size, 200, rng)
    good = calibrated_mean(truth[chosen], judge[chosen], judge, inclusion=pi)
    assert good["ess_gain"] > 1.5
    noise = rng.random(judge.size)
    useless = calibrated_mean(truth[chosen], noise[chosen], noise, inclusion=pi)
    # λ → 0: PPI++ falls back to about the human-only interval (never much wider)
    assert useless["ess_gain"] > 0.9


def test_ipw_estimate_is_unbiased_under_uncertainty_sampling():
    """Active inference: units drawn with π ∝ uncertainty (floored); the 1/π-weighted PPI
    estimate is centred on the population's mean over many draws, the unweighted one is not."""
    rng, judge, truth = _population(7, N=4000, flip=0.1)
    # the judge is unsure (and wrong more often) on a known part of the population
    unsure = rng.random(judge.size) < 0.25
    truth = np.where(unsure & (rng.random(judge.size) < 0.5), 1.0 - judge, truth)
    pi = uncertainty_probabilities(np.where(unsure, 1.0, 0.1), 300)
    target = truth.mean()
    weighted, unweighted = [], []
    for _ in range(400):
        chosen = poisson_sample(pi, rng)
        weighted.append(calibrated_mean(truth[chosen], judge[chosen], judge, inclusion=pi[chosen], lam=1.0)
                        ["ppi"]["estimate"])
        unweighted.append(calibrated_mean(truth[chosen], judge[chosen], judge, lam=1.0)["ppi"]["estimate"])
    weighted, unweighted = np.array(weighted), np.array(unweighted)
    se = weighted.std() / math.sqrt(weighted.size)
    assert abs(weighted.mean() - target) < 3 * se + 1e-3
    assert abs(unweighted.mean() - target) > 10 * se  # ignoring π would be biased: the test can fail


def test_ppi_interval_covers_under_ipw():
    rng, judge, truth = _population(13, N=3000, flip=0.2)
    pi = uncertainty_probabilities(rng.random(judge.size), 250)
    hits = 0
    for _ in range(300):
        chosen = poisson_sample(pi, rng)
        out = calibrated_mean(truth[chosen], judge[chosen], judge, inclusion=pi[chosen])
        hits += out["ppi"]["low"] <= truth.mean() <= out["ppi"]["high"]
    assert hits / 300 >= 0.9


def test_uniform_and_stratified_inclusion_probabilities():
    rng = np.random.default_rng(0)
    chosen, pi = uniform_sample(500, 60, rng)
    assert len(set(chosen.tolist())) == 60 and np.allclose(pi, 60 / 500)
    strata = ["a"] * 300 + ["b"] * 150 + ["c"] * 50
    chosen, pi = stratified_sample(strata, 50, rng)
    taken = {h: sum(strata[i] == h for i in chosen) for h in "abc"}
    assert taken == {"a": 30, "b": 15, "c": 5}
    # Σ 1/π over the sample is the population size in each stratum (Horvitz–Thompson)
    for h, size in (("a", 300), ("b", 150), ("c", 50)):
        assert sum(1 / p for i, p in zip(chosen, pi) if strata[i] == h) == pytest.approx(size)
    # small strata still get one unit while n allows
    chosen, pi = stratified_sample(["a"] * 98 + ["b"] * 2, 5, rng)
    assert sum(1 for i in chosen if i >= 98) == 1


def test_uncertainty_probabilities_sum_floor_cap_and_empirical_frequency():
    u = np.r_[np.zeros(80), np.linspace(0.1, 1, 20)]
    pi = uncertainty_probabilities(u, 30, floor_share=0.2)
    assert pi.sum() == pytest.approx(30)
    assert pi.min() >= 0.2 * 30 / 100 - 1e-12 and pi.max() <= 1.0
    assert pi[-1] > pi[0]
    rng = np.random.default_rng(1)
    counts = np.zeros(100)
    for _ in range(4000):
        counts[poisson_sample(pi, rng)] += 1
    assert np.allclose(counts / 4000, pi, atol=0.03)


def test_planner_inverts_the_width_formula():
    rng, judge, truth = _population(17)
    chosen, pi = uniform_sample(judge.size, 100, rng)
    out = calibrated_mean(truth[chosen], judge[chosen], judge, inclusion=pi)
    target = 0.6 * (out["ppi"]["high"] - out["ppi"]["low"])
    plan = labels_for_width(out, target)
    n = out["n_human"] + plan["more"]

    def width(m):
        return 2 * Z * math.sqrt(out["judge_var"] / judge.size + out["rectifier_var"] / m)

    assert width(n) <= target < width(n - 1)
    assert labels_for_width(out, 10.0)["more"] == 0
    assert labels_for_width(out, 1e-6)["more"] is None  # below the judge's own term: not reachable
    other = calibrated_mean(truth[chosen][::-1], judge[chosen], judge, inclusion=pi)
    diff = difference_interval(out["ppi"], other["ppi"])
    assert diff["se"] == pytest.approx(math.hypot(out["ppi"]["se"], other["ppi"]["se"]))
    plan = labels_for_difference_width([out, other], 0.5 * (diff["high"] - diff["low"]))
    assert plan["more"] > 0


def test_report_mean_weights_turn_the_unit_mean_into_the_mean_of_report_means():
    reports = ["a"] * 10 + ["b"] * 3 + ["c"] * 7
    values = np.random.default_rng(4).random(20)
    a = report_mean_weights(reports)
    by_report = np.mean([values[:10].mean(), values[10:13].mean(), values[13:].mean()])
    assert (a * values).mean() == pytest.approx(by_report)
    assert values.mean() != pytest.approx(by_report)  # the unweighted mean is another number here
    assert a[:10] == pytest.approx(20 / 30) and a[10:13] == pytest.approx(20 / 9)
    assert report_mean_weights(["x", "y", "x", "y"]).tolist() == [1.0] * 4  # equal sizes: the plain mean
    assert report_mean_weights([]).size == 0


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="one value per labelled unit"):
        calibrated_mean([1, 0], [1], [1, 0, 1])
    with pytest.raises(ValueError, match="inclusion probabilities"):
        calibrated_mean([1, 0, 1], [1, 0, 0], [1, 0, 1, 1], inclusion=[0.5, 0, 0.5])
    few = calibrated_mean([1, 0], [1, 0], [1, 0, 1])
    assert few["ppi"] is None and few["human_only"] is None and few["judge_only"]["estimate"] == pytest.approx(2 / 3)
