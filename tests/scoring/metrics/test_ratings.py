"""scoring.metrics.ratings against independent computations: statsmodels' cluster-robust OLS
for the clustered mean, Shrout & Fleiss' published ICC(2,1) and statsmodels' two-way ANOVA for
its interval, SciPy's Spearman and t interval, scikit-learn's quadratic-weighted κ."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from scoring.metrics.ratings import clustered_mean, icc_2_1, judge_vs_experts

# Shrout & Fleiss (1979), Table 2: six targets rated by four judges; ICC(2,1) = .29.
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])


def _long(table):
    n, k = table.shape
    return [u for u in range(n) for _ in range(k)], [r for _ in range(n) for r in range(k)], table.ravel().tolist()


def test_clustered_mean_equals_statsmodels_cluster_robust_ols():
    rng = np.random.default_rng(7)
    clusters = np.repeat(np.arange(6), rng.integers(2, 6, size=6))
    values = rng.normal(3, 1, clusters.size) + clusters * 0.3
    found = clustered_mean(values.tolist(), clusters.tolist())
    fit = sm.OLS(values, np.ones_like(values)).fit(cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True)
    low, high = fit.conf_int(alpha=0.05)[0]
    assert found["mean"] == pytest.approx(values.mean())
    assert (found["low"], found["high"]) == pytest.approx((low, high), rel=1e-9)
    assert found["n"] == values.size and found["n_clusters"] == 6
    assert clustered_mean([1.0, 2.0], ["a", "a"])["low"] is None  # one cluster: no interval


def test_icc_2_1_equals_the_published_value_and_the_anova_interval():
    found = icc_2_1(*_long(SHROUT_FLEISS))
    assert found["icc"] == pytest.approx(0.29, abs=0.005) and (found["n_units"], found["n_raters"]) == (6, 4)
    # the interval from an independent two-way ANOVA's mean squares (McGraw & Wong 1996, case 2A)
    units, raters, scores = _long(SHROUT_FLEISS)
    table = sm.stats.anova_lm(smf.ols("y ~ C(u) + C(r)", pd.DataFrame({"y": scores, "u": units, "r": raters})).fit())
    msr, msc, mse = (table.loc[name, "mean_sq"] for name in ("C(u)", "C(r)", "Residual"))
    n, k = SHROUT_FLEISS.shape
    icc = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    assert found["icc"] == pytest.approx(icc, rel=1e-9)
    a, b = k * icc / (n * (1 - icc)), 1 + k * icc * (n - 1) / (n * (1 - icc))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
    f_low, f_high = stats.f.ppf(0.975, n - 1, v), stats.f.ppf(0.975, v, n - 1)
    low = n * (msr - f_low * mse) / (f_low * (k * msc + (k * n - k - n) * mse) + n * msr)
    high = n * (f_high * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_high * msr)
    assert (found["low"], found["high"]) == pytest.approx((low, high), rel=1e-9)
    assert found["low"] < found["icc"] < found["high"]


def test_icc_uses_the_units_every_rater_scored():
    units, raters, scores = _long(SHROUT_FLEISS)
    found = icc_2_1(units + [99], raters + [0], scores + [3])  # a unit only one rater scored
    assert found["icc"] == pytest.approx(icc_2_1(units, raters, scores)["icc"]) and found["n_units"] == 6
    assert icc_2_1([1, 2], ["a", "a"], [3, 4])["icc"] is None  # one rater


def test_judge_vs_experts_equals_scipy_and_sklearn():
    rng = np.random.default_rng(11)
    experts = rng.integers(1, 6, 40) + rng.choice([0, 0.5], 40)  # means of two raters: halves
    experts = np.clip(experts, 1, 5)
    judge = np.clip(experts + rng.normal(0.4, 0.8, 40), 1, 5)
    found = judge_vs_experts(judge.tolist(), experts.tolist(), low=1, high=5)
    assert found["n"] == 40
    assert found["spearman"] == pytest.approx(stats.spearmanr(judge, experts).statistic, rel=1e-9)
    rounded = [np.clip(np.floor(x + 0.5), 1, 5).astype(int) for x in (judge, experts)]
    assert found["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(*rounded, weights="quadratic", labels=[1, 2, 3, 4, 5]), rel=1e-9)
    difference = judge - experts
    low, high = stats.t.interval(0.95, difference.size - 1, loc=difference.mean(), scale=stats.sem(difference))
    assert found["mean_difference"] == pytest.approx(difference.mean())
    assert (found["difference_low"], found["difference_high"]) == pytest.approx((low, high), rel=1e-9)
