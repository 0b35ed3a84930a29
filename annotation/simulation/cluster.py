"""Do topic-clustered Bradley–Terry intervals hold with few topics? A simulation from known
strengths with topic-to-topic variation (docs/statistics.md, "Human ranking", "Interval").

Each replication: ``TOPICS`` topics; on topic t system i has strength θ_i + u_ti, u_ti ~ N(0,
``TOPIC_SD``²) independently (the systems do better on some topics than on others; that is what
makes comparisons on one topic dependent); every pair of the 5 systems is compared ``PER_PAIR``
times per topic (2 annotators × both sides), each outcome drawn from σ of the topic's strength
difference. θ: the SurveyLens EnvSci strengths (``annotation.simulation.bradley_terry``).
The interval: ``bradley_terry_clustered`` with the topic as cluster, as the human ranking's
``cluster=topic`` calls it (``N_RESAMPLES`` resamples, seeded per replication).

The truth it should cover is what the pooled fit estimates with infinitely many topics: the
Bradley–Terry θ (centred) of the win probabilities averaged over the topic variation,
P̄_ij = E σ(θ_i + u_i − θ_j − u_j) (``TRUTH_TOPICS`` draws; a pooled logit fit shrinks the
spread a little, so θ itself is not the estimand). Coverage = the share of (replication, system)
intervals holding it; ``coverage_percentile_only`` is the same for the plain percentile bounds
of the same resamples (the interval before the small-sample correction).
"""

from __future__ import annotations

import numpy as np

from scoring.metrics import bradley_terry_clustered
from scoring.metrics.preference_design import bradley_terry_map_batch

TOPICS = 5
TOPIC_SD = 0.5
PER_PAIR = 4
N_RESAMPLES = 200
REPLICATIONS = 200
TRUTH_TOPICS = 200_000


def pooled_truth(theta: np.ndarray, topic_sd: float = TOPIC_SD, seed: int = 0) -> np.ndarray:
    """The centred Bradley–Terry θ of the topic-averaged win probabilities (the estimand)."""
    rng = np.random.default_rng(seed)
    n = theta.size
    strength = theta[None, :] + topic_sd * rng.standard_normal((TRUTH_TOPICS, n))
    diff = strength[:, :, None] - strength[:, None, :]
    mean = (0.5 + 0.5 * np.tanh(0.5 * diff)).mean(axis=0)
    counts = np.ones((1, n, n)) - np.eye(n)
    fit, _ = bradley_terry_map_batch(mean[None] * counts, counts, prior_precision=1e-8)
    return fit[0] - fit[0].mean()


def cluster_simulation(seed: int, replications: int = REPLICATIONS, *, topics: int = TOPICS) -> dict:
    """Coverage of the topic-clustered 95 % interval at ``topics`` topics (module docstring)."""
    from .bradley_terry import _envsci_strengths

    theta = _envsci_strengths()
    theta = theta - theta.mean()
    truth = pooled_truth(theta)
    n = theta.size
    i, j = np.triu_indices(n, 1)
    rng = np.random.default_rng([seed, 31])
    hits = percentile_hits = total = 0
    widths, factors = [], []
    for replication in range(replications):
        rows, clusters = [], []
        for topic in range(topics):
            strength = theta + TOPIC_SD * rng.standard_normal(n)
            for _ in range(PER_PAIR):
                won = rng.random(i.size) < 1.0 / (1.0 + np.exp(-(strength[i] - strength[j])))
                rows += [(a, b, float(w)) for a, b, w in zip(i, j, won)]
                clusters += [topic] * i.size
        fit = bradley_terry_clustered(rows, clusters=clusters, n_items=n, n_resamples=N_RESAMPLES,
                                      seed=seed * 100_003 + replication)
        hits += int(((fit["low"] <= truth) & (truth <= fit["high"])).sum())
        low, high = np.quantile(fit["samples"], [0.025, 0.975], axis=0)
        percentile_hits += int(((low <= truth) & (truth <= high)).sum())
        total += n
        widths.append(float(np.mean(fit["high"] - fit["low"])))
        factors.append(fit["small_sample_factor"])
    return {"topics": topics, "coverage": hits / total,
            "coverage_percentile_only": percentile_hits / total, "replications": replications, "systems": n,
            "comparisons_per_topic": PER_PAIR * i.size, "topic_sd": TOPIC_SD, "n_resamples": N_RESAMPLES,
            "mean_width": float(np.mean(widths)), "small_sample_factor": factors[0],
            "truth": [round(float(v), 4) for v in truth]}
