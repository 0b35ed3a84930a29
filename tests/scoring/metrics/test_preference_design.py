"""The expected information of a comparison, against computations written here (NumPy/SciPy)."""

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.special import entr, expit

from scoring.metrics.preference_design import bradley_terry_laplace, covariance_after, pair_information

COMPARISONS = [(0, 1, 1), (0, 1, 1), (1, 0, 1), (1, 2, 1), (2, 1, 0.5), (0, 2, 1), (2, 0, 1), (3, 2, 1), (2, 3, 1),
               (3, 0, 0)]
RIDGE = 0.25


def _by_hand(comparisons, n, ridge):
    """The MAP by SciPy's optimiser and the inverse Hessian of the penalised NLL written out."""
    c = np.asarray(comparisons, dtype=float)
    i, j, y = c[:, 0].astype(int), c[:, 1].astype(int), c[:, 2]

    def nll(theta):
        d = theta[i] - theta[j]
        return -np.sum(y * np.log(expit(d)) + (1 - y) * np.log(expit(-d))) + ridge / 2 * theta @ theta

    theta = optimize.minimize(nll, np.zeros(n), method="BFGS", options={"gtol": 1e-10}).x
    hess = ridge * np.eye(n)
    for a, b in zip(i, j):
        p = expit(theta[a] - theta[b])
        x = np.zeros(n)
        x[a], x[b] = 1, -1
        hess += p * (1 - p) * np.outer(x, x)
    return theta - theta.mean(), np.linalg.inv(hess)


def _binary_entropy(p):
    return entr(p) + entr(1 - p)


def test_the_laplace_fit_is_the_map_and_its_inverse_hessian():
    fit = bradley_terry_laplace(COMPARISONS, n_items=4, prior_precision=RIDGE)
    theta, cov = _by_hand(COMPARISONS, 4, RIDGE)
    assert np.allclose(fit["theta"], theta, atol=1e-5)
    assert np.allclose(fit["covariance"], cov, atol=1e-5)


def test_the_information_of_a_pair_is_the_mutual_information_of_its_outcome_and_strengths():
    fit = bradley_terry_laplace(COMPARISONS, n_items=4, prior_precision=RIDGE)
    found = pair_information(fit["theta"], fit["covariance"])
    theta, cov = fit["theta"], fit["covariance"]
    for a, b in [(0, 1), (0, 3), (1, 2), (2, 3)]:
        mean, var = theta[a] - theta[b], cov[a, a] + cov[b, b] - 2 * cov[a, b]
        sd = np.sqrt(var)

        def density(d, mean=mean, sd=sd):
            return np.exp(-((d - mean) ** 2) / (2 * sd * sd)) / (sd * np.sqrt(2 * np.pi))

        low, high = mean - 12 * sd, mean + 12 * sd
        predicted = integrate.quad(lambda d: expit(d) * density(d), low, high, epsabs=1e-12)[0]
        left = integrate.quad(lambda d: _binary_entropy(expit(d)) * density(d), low, high, epsabs=1e-12)[0]
        information = _binary_entropy(predicted) - left
        assert found["predicted"][a, b] == pytest.approx(predicted, abs=1e-7)
        assert found["variance"][a, b] == pytest.approx(var)
        assert found["information"][a, b] == pytest.approx(information, abs=1e-7)
        assert found["information"][b, a] == pytest.approx(information, abs=1e-7)
    assert np.all(np.diag(found["information"]) == 0)


def test_a_pair_known_to_be_a_coin_flip_is_worth_less_than_an_unknown_one():
    # 0 and 1 met 200 times and split them; 2 and 3 met once.
    comparisons = [(0, 1, k % 2) for k in range(200)] + [(2, 3, 1), (0, 2, 1), (2, 0, 1), (1, 3, 1), (3, 1, 1)]
    fit = bradley_terry_laplace(comparisons, n_items=4)
    info = pair_information(fit["theta"], fit["covariance"])["information"]
    assert info[0, 1] < 0.01 < info[2, 3]
    assert info[0, 1] < info[2, 3]


def test_the_covariance_after_one_more_comparison_is_the_inverse_of_the_updated_hessian():
    fit = bradley_terry_laplace(COMPARISONS, n_items=4, prior_precision=RIDGE)
    theta, cov = fit["theta"], fit["covariance"]
    p = expit(theta[1] - theta[3])
    x = np.array([0.0, 1.0, 0.0, -1.0])
    expected = np.linalg.inv(np.linalg.inv(cov) + p * (1 - p) * np.outer(x, x))
    assert np.allclose(covariance_after(theta, cov, 1, 3), expected)
    assert np.allclose(covariance_after(theta, cov, 3, 1), expected)
    with pytest.raises(ValueError, match="itself"):
        covariance_after(theta, cov, 2, 2)


def test_no_comparison_yet_is_the_prior():
    fit = bradley_terry_laplace(np.empty((0, 3)), n_items=3, prior_precision=0.5)
    assert np.allclose(fit["theta"], 0) and np.allclose(fit["covariance"], 2 * np.eye(3))


# --- the ranking design: batched fit, doubt, the draw ------------------------------------------


def _tallies(comparisons, n):
    wins, counts = np.zeros((n, n)), np.zeros((n, n))
    for i, j, y in comparisons:
        wins[int(i), int(j)] += y
        wins[int(j), int(i)] += 1 - y
        counts[int(i), int(j)] += 1
        counts[int(j), int(i)] += 1
    return wins, counts


def test_the_batched_fit_is_the_laplace_fit_of_each_data_set():
    from scoring.metrics.preference_design import bradley_terry_map_batch

    second = [(0, 3, 1), (3, 1, 0), (1, 2, 1), (2, 0, 0.5), (0, 1, 0)]
    data = [_tallies(COMPARISONS, 4), _tallies(second, 4), _tallies([], 4)]
    theta, hess = bradley_terry_map_batch(np.stack([w for w, _ in data]), np.stack([c for _, c in data]))
    for r, comparisons in enumerate([COMPARISONS, second, []]):
        expected, cov = _by_hand(comparisons, 4, RIDGE) if comparisons else (np.zeros(4), np.eye(4) / RIDGE)
        assert np.allclose(theta[r], expected, atol=1e-6)
        assert np.allclose(np.linalg.inv(hess[r]), cov, atol=1e-6)


def test_two_warm_newton_steps_after_one_more_label_land_on_the_converged_fit():
    from scoring.metrics.preference_design import bradley_terry_map_batch

    wins, counts = _tallies(COMPARISONS, 4)
    theta, _ = bradley_terry_map_batch(wins[None], counts[None])
    more_w, more_c = _tallies([*COMPARISONS, (1, 3, 1)], 4)
    warm, _ = bradley_terry_map_batch(more_w[None], more_c[None], start=theta, max_iterations=2)
    cold, _ = bradley_terry_map_batch(more_w[None], more_c[None])
    assert np.allclose(warm, cold, atol=1e-4)  # 3e-5 here, 11 labels; less as labels accumulate


def test_the_doubt_is_the_posterior_probability_of_the_wrong_order():
    from scipy.stats import norm

    from scoring.metrics.preference_design import misorder_probability

    fit = bradley_terry_laplace(COMPARISONS, n_items=4, prior_precision=RIDGE)
    theta, cov = fit["theta"], fit["covariance"]
    first, second = np.array([[0, 1, 2, 0]]), np.array([[1, 2, 3, 3]])
    found = misorder_probability(theta[None], cov[None], first, second)[0]
    for c, (a, b) in enumerate(zip(first[0], second[0])):
        sd = np.sqrt(cov[a, a] + cov[b, b] - 2 * cov[a, b])
        assert found[c] == pytest.approx(norm.sf(abs(theta[a] - theta[b]) / sd), abs=1e-12)


def test_the_batched_covariance_update_is_the_single_one():
    from scoring.metrics.preference_design import covariance_after_batch

    fit = bradley_terry_laplace(COMPARISONS, n_items=4, prior_precision=RIDGE)
    theta, cov = fit["theta"], fit["covariance"]
    found = covariance_after_batch(np.stack([theta, theta]), np.stack([cov, cov]), np.array([0, 2]), np.array([3, 1]))
    assert np.allclose(found[0], covariance_after(theta, cov, 0, 3))
    assert np.allclose(found[1], covariance_after(theta, cov, 2, 1))


def test_the_draw_keeps_to_neighbours_and_capacity_and_gives_minus_one_when_nothing_is_open():
    from scoring.metrics.preference_design import choose_pairs_batch

    theta = np.array([[2.0, 1.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
    cov = np.stack([np.eye(4), np.eye(4)])
    capacity = np.zeros((2, 4, 4))
    capacity[0, 0, 1] = capacity[0, 1, 2] = capacity[0, 2, 3] = capacity[0, 0, 3] = 1
    first, second = choose_pairs_batch(theta, cov, uniform=[False] * 5, rng=np.random.default_rng(0),
                                       capacity=capacity)
    picked = sorted(zip(first[0][:4].tolist(), second[0][:4].tolist()))
    assert picked == [(0, 1), (0, 3), (1, 2), (2, 3)]  # the neighbours first, then the one pair left open
    assert first[0][4] == -1 and (first[1] == -1).all()  # used up; the second fit had nothing open


def _doubt_weighted_variance(theta, cov):
    """D = Σ_{k<l} m_kl² v_kl / v_kl⁰ written out pair by pair (SciPy's normal tail), with the
    variances v⁰ of ``cov`` as the scale; returns D as a function of the covariance."""
    from scipy.stats import norm

    n = theta.size
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    v0 = {(a, b): cov[a, a] + cov[b, b] - 2 * cov[a, b] for a, b in pairs}
    weight = {p: norm.sf(abs(theta[p[0]] - theta[p[1]]) / np.sqrt(v0[p])) ** 2 for p in pairs}
    return lambda c: sum(weight[(a, b)] * (c[a, a] + c[b, b] - 2 * c[a, b]) / v0[(a, b)] for a, b in pairs)


def test_the_drop_is_the_fall_of_the_doubt_weighted_variance_after_one_more_comparison():
    """For every pair of four systems: D before minus D after the Hessian gains the pair's
    Fisher weight, the covariance inverted afresh (not the rank-one update)."""
    from scoring.metrics.preference_design import doubt_variance_drop

    theta, cov = _by_hand(COMPARISONS, 4, RIDGE)
    weighted = _doubt_weighted_variance(theta, cov)
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    found = doubt_variance_drop(theta[None], cov[None], np.array([[a for a, _ in pairs]]),
                                np.array([[b for _, b in pairs]]))[0]
    for n, (a, b) in enumerate(pairs):
        p = expit(theta[a] - theta[b])
        x = np.zeros(4)
        x[a], x[b] = 1, -1
        after = np.linalg.inv(np.linalg.inv(cov) + p * (1 - p) * np.outer(x, x))
        assert found[n] == pytest.approx(weighted(cov) - weighted(after), rel=1e-6), (a, b)
    assert found.min() > 0


def test_a_near_tie_compared_often_gives_way_to_a_doubtful_pair_compared_little():
    """Systems 0 ≈ 1 compared 400 times (m near ½, little left to learn), 2 vs 3 twice: the
    comparison of 2 and 3 lowers D more, though its m is smaller."""
    from scoring.metrics.preference_design import doubt_variance_drop, misorder_probability

    comparisons = [(0, 1, 1)] * 201 + [(1, 0, 1)] * 199 + [(1, 2, 1)] * 30 + [(2, 3, 1)] * 2
    fit = bradley_terry_laplace(comparisons, n_items=4)
    theta, cov = fit["theta"][None], fit["covariance"][None]
    first, second = np.array([[0, 2]]), np.array([[1, 3]])
    doubt = misorder_probability(theta, cov, first, second)[0]
    drop = doubt_variance_drop(theta, cov, first, second)[0]
    assert doubt[0] > doubt[1] and drop[1] > drop[0]


def test_an_informed_turn_takes_the_neighbour_with_the_largest_drop():
    from scoring.metrics.preference_design import choose_pairs_batch

    theta, cov = _by_hand(COMPARISONS, 4, RIDGE)
    weighted = _doubt_weighted_variance(theta, cov)
    order = np.argsort(-theta)
    neighbours = [tuple(sorted((int(a), int(b)))) for a, b in zip(order, order[1:])]

    def after(a, b):
        p = expit(theta[a] - theta[b])
        x = np.zeros(4)
        x[a], x[b] = 1, -1
        return np.linalg.inv(np.linalg.inv(cov) + p * (1 - p) * np.outer(x, x))

    best = max(neighbours, key=lambda pair: weighted(cov) - weighted(after(*pair)))
    for seed in range(5):
        first, second = choose_pairs_batch(theta[None], cov[None], uniform=[False], rng=np.random.default_rng(seed))
        assert (int(first[0, 0]), int(second[0, 0])) == best


def test_equal_drops_are_drawn_at_random():
    """Before any label every neighbour's drop is the same: the first pick is at random over
    the neighbours of a random order, so every pair comes up."""
    from scoring.metrics.preference_design import choose_pairs_batch

    theta, cov = np.zeros((1, 4)), np.eye(4)[None] / RIDGE
    seen = set()
    for seed in range(200):
        first, second = choose_pairs_batch(theta, cov, uniform=[False], rng=np.random.default_rng(seed))
        seen.add((int(first[0, 0]), int(second[0, 0])))
    assert seen == {(a, b) for a in range(4) for b in range(a + 1, 4)}
