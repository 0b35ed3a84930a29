"""PPI++ for a uniform sample written out in numpy, independently of ``ppi_py`` and of
``scoring.metrics.calibration``: the figures the calibrated-score tests check a row against."""

import math

import numpy as np
import pytest
from scipy import stats


def assert_row_is_ppi(row: dict, y, f, f_all) -> float:
    """``row`` (one system of a calibrated metric) against the closed form on the experts' values
    ``y`` and the judge's ``f`` on the labelled units, ``f_all`` on every unit; returns λ."""
    y, f, f_all = (np.asarray(a, dtype=float) for a in (y, f, f_all))
    n, N = y.size, f_all.size
    assert (row["n_human"], row["n_judge"]) == (n, N)
    assert row["judge_only"]["estimate"] == pytest.approx(f_all.mean())
    assert row["human_only"]["estimate"] == pytest.approx(y.mean())
    cov = np.mean((y - y.mean()) * (f - f.mean()))
    lam = float(np.clip(cov / ((1 + n / N) * np.var(np.concatenate([f, f_all]), ddof=1)), 0, 1))
    estimate = (lam * f_all).mean() + (y - lam * f).mean()
    half = stats.norm.ppf(0.975) * math.sqrt((lam * f_all).var() / N + (y - lam * f).var() / n)
    assert row["ppi"]["estimate"] == pytest.approx(estimate)
    assert (row["ppi"]["low"], row["ppi"]["high"]) == pytest.approx((estimate - half, estimate + half))
    return lam
