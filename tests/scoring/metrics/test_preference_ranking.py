"""Separation checks, the weak prior and the cluster bootstrap, against computations written here."""

import re
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from scoring.metrics import (
    PRIOR_PRECISION,
    bradley_terry_bootstrap,
    bradley_terry_clustered,
    comparison_structure,
    prior_sensitivity,
)


def _penalised_nll(theta, comps, ridge):
    total = 0.0
    for i, j, s in comps:
        d = theta[i] - theta[j]
        total -= s * -np.logaddexp(0, -d) + (1 - s) * -np.logaddexp(0, d)
    return total + 0.5 * ridge * theta @ theta


def _map(comps, n, ridge):
    res = minimize(_penalised_nll, np.zeros(n), args=(comps, ridge), method="BFGS", options={"gtol": 1e-10})
    return res.x


def _separable_by_subsets(comps, n):
    """Brute force: some proper subset S of a connected group never scored against the rest of it."""
    pairs = {(min(i, j), max(i, j)) for i, j, _ in comps}
    if n > 1:
        seen, stack = {0}, [0]
        while stack:
            u = stack.pop()
            for a, b in pairs:
                for x, y in ((a, b), (b, a)):
                    if x == u and y not in seen:
                        seen.add(y)
                        stack.append(y)
        if len(seen) < n:
            return True
    for size in range(1, n):
        for subset in combinations(range(n), size):
            inside = set(subset)
            scored_out = scored_in = False
            for i, j, s in comps:
                if (i in inside) == (j in inside):
                    continue
                inner_points = s if i in inside else 1 - s
                scored_in |= inner_points > 0
                scored_out |= inner_points < 1
            if not scored_in or not scored_out:
                return True
    return False


ONE_WINS_ALL = [(0, j, 1.0) for j in (1, 2, 3) for _ in range(5)] + [
    (1, 2, 1.0), (1, 2, 0.0), (2, 3, 1.0), (3, 2, 1.0), (1, 3, 0.5), (3, 1, 1.0), (1, 3, 1.0)]
CHAIN = [(0, 1, 1.0)] * 5 + [(1, 2, 1.0)] * 5


@pytest.mark.parametrize("comps, n", [
    (ONE_WINS_ALL, 4), (CHAIN, 3), ([(0, 1, 1.0), (2, 3, 0.5)], 4), ([(0, 1, 0.5), (1, 2, 0.5), (2, 0, 1.0)], 3),
    ([(0, 1, 1.0), (1, 0, 1.0)], 2), ([(0, 1, 1.0), (1, 2, 1.0), (2, 0, 1.0)], 3), ([(0, 1, 0.5)], 2),
])
def test_separable_matches_a_brute_force_search(comps, n):
    assert comparison_structure(comps, n_items=n)["separable"] == _separable_by_subsets(comps, n)


def test_structure_names_the_groups():
    found = comparison_structure(ONE_WINS_ALL)
    assert found["never_lose"] == [[0]] and found["never_win"] == [[1, 2, 3]] and found["components"] == [[0, 1, 2, 3]]
    chain = comparison_structure(CHAIN)
    assert chain["never_lose"] == [[0]] and chain["never_win"] == [[2]]
    apart = comparison_structure([(0, 1, 0.5), (1, 0, 1.0), (2, 3, 0.5)], n_items=5)
    assert apart["components"] == [[0, 1], [2, 3], [4]] and apart["separable"]


def test_all_ties_is_not_separable_and_gives_equal_strengths():
    ties = [(0, 1, 0.5), (1, 2, 0.5), (2, 0, 0.5)] * 3
    assert not comparison_structure(ties)["separable"]
    fit = bradley_terry_clustered(ties, n_resamples=50)
    assert fit["estimate"] == pytest.approx([0, 0, 0], abs=1e-9) and fit["n_separable"] == 0


@pytest.mark.parametrize("comps, n", [(ONE_WINS_ALL, 4), (CHAIN, 3)])
def test_the_prior_keeps_separable_estimates_finite_and_wide(comps, n):
    fit = bradley_terry_clustered(comps, n_resamples=100)
    expected = _map(comps, n, PRIOR_PRECISION)
    assert fit["estimate"] == pytest.approx(expected - expected.mean(), abs=1e-5)
    assert np.abs(fit["estimate"]).max() < 5
    # Every resample of a separable set is separable, and the interval is at least the Laplace one.
    assert fit["n_separable"] == 100
    best = int(np.argmax(fit["estimate"]))
    # A tiny ridge gives θ ≈ 11 (an artefact of the ridge); the prior a finite θ with a wide interval.
    assert bradley_terry_bootstrap(comps, n_resamples=10)["estimate"][best] > 8
    assert fit["high"][best] - fit["low"][best] > 3


def test_posterior_sd_is_that_of_the_centred_theta_under_the_penalised_likelihood():
    fit = bradley_terry_clustered(ONE_WINS_ALL, n_resamples=1)
    theta, eps, n = fit["estimate"], 1e-4, 4
    hess = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            ea, eb = np.eye(n)[a] * eps, np.eye(n)[b] * eps
            hess[a, b] = (_penalised_nll(theta + ea + eb, ONE_WINS_ALL, PRIOR_PRECISION)
                          - _penalised_nll(theta + ea - eb, ONE_WINS_ALL, PRIOR_PRECISION)
                          - _penalised_nll(theta - ea + eb, ONE_WINS_ALL, PRIOR_PRECISION)
                          + _penalised_nll(theta - ea - eb, ONE_WINS_ALL, PRIOR_PRECISION)) / (4 * eps * eps)
    centre = np.eye(n) - np.ones((n, n)) / n  # the reported θ are centred: cov(Pθ) = P H⁻¹ P
    assert fit["posterior_sd"] == pytest.approx(np.sqrt(np.diag(centre @ np.linalg.inv(hess) @ centre)), rel=1e-3)


def test_cluster_bootstrap_draws_whole_clusters():
    rng = np.random.default_rng(7)
    comps, clusters = [], []
    for item in range(12):
        i, j = rng.choice(4, size=2, replace=False)
        for annotator in range(2):
            comps.append((int(i), int(j), float(rng.choice([0.0, 0.5, 1.0]))))
            clusters.append(item)
    fit = bradley_terry_clustered(comps, clusters=clusters, n_items=4, n_resamples=15, seed=3)
    # The same stream of cluster draws, refitted here by a general optimiser: the MLE where the
    # resample is not separable (brute force), the prior's MAP where it is.
    draws = np.random.default_rng(3)
    separable = 0
    for r in range(15):
        chosen = draws.integers(0, 12, 12)
        resample = [c for k in chosen for c, cl in zip(comps, clusters) if cl == k]
        needs_prior = _separable_by_subsets(resample, 4)
        separable += needs_prior
        expected = _map(resample, 4, PRIOR_PRECISION if needs_prior else 0.0)
        assert fit["samples"][r] == pytest.approx(expected - expected.mean(), abs=1e-4)
    assert fit["n_clusters"] == 12 and fit["n_separable"] == separable
    with pytest.raises(ValueError, match="one label per comparison"):
        bradley_terry_clustered(comps, clusters=clusters[:-1])


def test_the_documented_separable_example():
    """docs/statistics.md quotes the separable and chain examples; recomputed here."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "statistics.md").read_text(encoding="utf-8")
    found = re.search(r"separable example θ₀ = (\S+) \[(\S+), (\S+)\], (\d+) of (\d+) resamples separable; "
                      r"chain θ = ±(\S+) \[(\S+), (\S+)\]", doc)
    assert found, "docs/statistics.md lost its separable example"
    theta, low, high, separable, total, chain, chain_low, chain_high = found.groups()
    one_wins = [(0, j, 1.0) for j in (1, 2, 3) for _ in range(5)]
    for i, j, wins in ((1, 2, 6), (1, 3, 5), (2, 3, 4)):
        one_wins += [(i, j, 1.0)] * wins + [(i, j, 0.0)] * (10 - wins)
    fit = bradley_terry_clustered(one_wins)
    expected = _map(one_wins, 4, PRIOR_PRECISION)
    assert round(float((expected - expected.mean())[0]), 2) == float(theta) == round(float(fit["estimate"][0]), 2)
    assert (round(fit["low"][0], 2), round(fit["high"][0], 2)) == (float(low), float(high))
    assert (fit["n_separable"], fit["n_resamples"]) == (int(separable), int(total))
    chain_fit = bradley_terry_clustered(CHAIN)
    expected = _map(CHAIN, 3, PRIOR_PRECISION)
    assert round(float((expected - expected.mean())[0]), 2) == float(chain)
    assert (round(chain_fit["low"][0], 2), round(chain_fit["high"][0], 2)) == (float(chain_low), float(chain_high))


# Not separable: every system won and lost against the others (5 systems, 3 rounds of all pairs).
ROUND_ROBIN = [(i, j, float(outcome)) for rnd in range(3) for i, j in combinations(range(5), 2)
               for outcome in [((i + 2 * j + rnd) % 3 != 0) if (i, j) != (0, 4) else 0.5]]


def test_the_default_is_the_mle_where_it_exists():
    assert not _separable_by_subsets(ROUND_ROBIN, 5)
    fit = bradley_terry_clustered(ROUND_ROBIN, n_resamples=20)
    mle = _map(ROUND_ROBIN, 5, 0.0)
    assert not fit["prior_used"]
    assert fit["estimate"] == pytest.approx(mle - mle.mean(), abs=1e-5)
    weak = bradley_terry_clustered(ROUND_ROBIN, n_resamples=20, prior="always")
    expected = _map(ROUND_ROBIN, 5, PRIOR_PRECISION)
    assert weak["prior_used"] and weak["estimate"] == pytest.approx(expected - expected.mean(), abs=1e-5)
    # the prior pulls every estimate towards 0
    assert (np.abs(weak["estimate"]) < np.abs(fit["estimate"]) + 1e-12).all()
    # the MLE's sd: the inverse observed information of the centred θ (pseudo-inverse: shift invariance)
    theta, eps, n = fit["estimate"], 1e-4, 5
    hess = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            ea, eb = np.eye(n)[a] * eps, np.eye(n)[b] * eps
            hess[a, b] = (_penalised_nll(theta + ea + eb, ROUND_ROBIN, 0) - _penalised_nll(theta + ea - eb, ROUND_ROBIN, 0)
                          - _penalised_nll(theta - ea + eb, ROUND_ROBIN, 0)
                          + _penalised_nll(theta - ea - eb, ROUND_ROBIN, 0)) / (4 * eps * eps)
    centre = np.eye(n) - np.ones((n, n)) / n
    cov = centre @ np.linalg.pinv((hess + hess.T) / 2, rcond=1e-6, hermitian=True) @ centre
    assert fit["posterior_sd"] == pytest.approx(np.sqrt(np.diag(cov)), rel=1e-3)
    with pytest.raises(ValueError, match="prior"):
        bradley_terry_clustered(ROUND_ROBIN, prior="sometimes")


def test_separable_data_use_the_prior_and_its_sensitivity_is_shown():
    fit = bradley_terry_clustered(ONE_WINS_ALL, n_resamples=10)
    assert fit["prior_used"]
    found = prior_sensitivity(ONE_WINS_ALL, prior_sds=(1, 2, 4))
    for sd, row in zip((1, 2, 4), found["estimates"]):
        expected = _map(ONE_WINS_ALL, 4, 1 / sd**2)
        assert row == pytest.approx(expected - expected.mean(), abs=1e-5)
    assert found["estimates"][1] == pytest.approx(fit["estimate"], abs=1e-9)
    assert found["estimates"][2][0] > found["estimates"][1][0] > found["estimates"][0][0]  # a wider prior, a larger θ


def test_topic_clusters_draw_every_comparison_of_a_topic_together():
    """Cluster labels are topics: a resample's comparisons are whole topics' (checked by refitting)."""
    topics = [k // 2 for k in range(len(ROUND_ROBIN))]  # two comparisons per topic
    fit = bradley_terry_clustered(ROUND_ROBIN, clusters=topics, n_resamples=5, seed=2)
    assert fit["n_clusters"] == len(set(topics))
    draws = np.random.default_rng(2)
    for r in range(5):
        chosen = draws.integers(0, fit["n_clusters"], fit["n_clusters"])
        resample = [c for k in chosen for c, t in zip(ROUND_ROBIN, topics) if t == k]
        expected = _map(resample, 5, PRIOR_PRECISION if _separable_by_subsets(resample, 5) else 0.0)
        assert fit["samples"][r] == pytest.approx(expected - expected.mean(), abs=1e-4)


def test_the_documented_prior_shrinkage_on_the_released_preferences(datasets):
    """docs/statistics.md quotes how much the prior moves θ on the SurveyLens outline preferences;
    recomputed here with SciPy's optimiser from the released files."""
    import json

    doc = (Path(__file__).resolve().parents[3] / "docs" / "statistics.md").read_text(encoding="utf-8")
    folder = datasets / "surveylens" / "human_annotation"

    def comparisons(name):
        records = json.loads((folder / name).read_text(encoding="utf-8"))["part_c"]
        order = sorted({r["mapping"][k] for r in records for k in ("response_a_model", "response_b_model")})
        return order, [(order.index(r["mapping"]["response_a_model"]), order.index(r["mapping"]["response_b_model"]),
                        1.0 if r["choice"] == "A_better" else 0.0) for r in records]

    order, envsci = comparisons("Annotator_EnvSci_02_outline_labels.json")
    mle, weak = _map(envsci, 5, 0.0), _map(envsci, 5, PRIOR_PRECISION)
    mle, weak = mle - mle.mean(), weak - weak.mean()
    forge = order.index("SurveyForge")
    found = re.search(r"SurveyForge (\S+) → (\S+)\)", doc)
    assert found and (float(found.group(1)), float(found.group(2))) == (round(mle[forge], 3), round(weak[forge], 3))
    points = 400 / np.log(10) * np.abs(mle - weak)
    assert round(points.max()) == 81 and int(np.argmax(points)) == forge  # "up to 81 points"
    shrink = 1 - np.abs(weak) / np.abs(mle)
    others = np.delete(shrink, order.index("SurveyX"))
    assert (round(100 * others.min()), round(100 * others.max()), round(100 * shrink[order.index("SurveyX")])) == (8, 17, 45)
    both_order, bio = comparisons("Annotator_Biology_01_outline_labels.json")
    assert both_order == order
    together = envsci + bio
    mle, weak = _map(together, 5, 0.0), _map(together, 5, PRIOR_PRECISION)
    mle, weak = mle - mle.mean(), weak - weak.mean()
    shrink = 1 - np.abs(weak) / np.abs(mle)
    assert (int(100 * shrink.min()), int(100 * shrink.max())) == (8, 9)  # "8–9 % over both annotators"
    points = 400 / np.log(10) * np.abs(mle - weak)
    assert round(points.max()) == 28 and int(np.argmax(points)) == forge  # "at most 28 points … SurveyForge"
    order, biology = comparisons("Annotator_Biology_01_outline_labels.json")
    gemini = order.index("Gemini")
    thetas = [(_map(biology, 5, 1 / sd**2) - _map(biology, 5, 1 / sd**2).mean())[gemini] for sd in (1, 2, 4)]
    found = re.search(r"Gemini's θ is (\S+), (\S+) and (\S+) under prior sd 1, 2 and 4", doc)
    assert found and [float(v) for v in found.groups()] == pytest.approx([round(t, 3) for t in thetas], abs=1.1e-3)
