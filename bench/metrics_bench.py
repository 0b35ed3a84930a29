"""Metric library throughput (``scoring.metrics``): the heavy computations at realistic scale.

* RAMS (SurveyLens) on 1,000 generated × 1,000 gold entries — Hungarian matching included;
* Krippendorff's α (nominal and interval) over 10 coders × 100,000 units with 20 % missing;
* Bradley–Terry over 100 systems and 100,000 comparisons (10 % ties);
* 1,000 bootstrap resamples of that Bradley–Terry fit;
* reference matching of 500 predicted against 500 gold references, every title with a typo
  so that all matching goes through the fuzzy stage.

Run all bench modules with ``python -m bench`` (``--only metrics`` for these), or this file
directly: ``python bench/metrics_bench.py`` prints the median of 3 runs per case.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

N_SYSTEMS = 100
N_COMPARISONS = 100_000


def _comparisons(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, N_SYSTEMS)
    i = rng.integers(0, N_SYSTEMS, N_COMPARISONS)
    j = (i + rng.integers(1, N_SYSTEMS, N_COMPARISONS)) % N_SYSTEMS
    p_win = 1.0 / (1.0 + np.exp(-(strength[i] - strength[j])))
    u = rng.random(N_COMPARISONS)
    outcome = np.where(u < 0.9 * p_win, 1.0, np.where(u < 0.9 * p_win + 0.1, 0.5, 0.0))
    return np.column_stack([i, j, outcome])


def _setup_rams() -> Callable[[], object]:
    from scoring.metrics import rams

    # Dense, unstructured similarities are the hardest case for the assignment
    # solver (embedding similarities with clear best matches solve faster).
    rng = np.random.default_rng(1)
    sim_gen_gold = rng.random((1000, 1000))
    sim_gen_gen = rng.random((1000, 1000))
    sim_gen_gen = (sim_gen_gen + sim_gen_gen.T) / 2
    return lambda: rams(sim_gen_gold, sim_gen_gen, tau=0.5, lam=1.0)


def _reliability_data() -> np.ndarray:
    rng = np.random.default_rng(2)
    truth = rng.integers(1, 6, 100_000)
    data = np.clip(truth + rng.integers(-1, 2, size=(10, 100_000)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    return data


def _setup_alpha(level: str) -> Callable[[], Callable[[], object]]:
    def setup() -> Callable[[], object]:
        from scoring.metrics import krippendorff_alpha

        data = _reliability_data()
        return lambda: krippendorff_alpha(data, level)

    return setup


def _setup_bt() -> Callable[[], object]:
    from scoring.metrics import bradley_terry

    comparisons = _comparisons()
    return lambda: bradley_terry(comparisons, n_items=N_SYSTEMS)


def _setup_bt_bootstrap() -> Callable[[], object]:
    from scoring.metrics import bradley_terry_bootstrap

    comparisons = _comparisons()
    return lambda: bradley_terry_bootstrap(comparisons, n_items=N_SYSTEMS, n_resamples=1000, seed=0)


def _setup_matching() -> Callable[[], object]:
    from scoring.metrics import match_references

    rng = np.random.default_rng(3)
    vocabulary = (
        "deep learning graph neural network survey large language model retrieval augmented generation "
        "evaluation benchmark vision transformer attention reinforcement policy optimisation diffusion "
        "contrastive representation federated privacy robustness adversarial efficient sparse"
    ).split()
    titles = [" ".join(rng.choice(vocabulary, size=rng.integers(4, 11))).capitalize() for _ in range(800)]
    gold = [{"title": t} for t in titles[:500]]
    # every predicted title carries a typo, so all matching happens in the fuzzy stage
    predicted = [{"title": t[:-3] + t[-2:] + "s"} for t in titles[250:750]]
    return lambda: match_references(predicted, gold, fuzzy_threshold=0.9)


BENCHMARKS: list[tuple[str, float, Callable[[], Callable[[], object]]]] = [
    ("RAMS, 1,000 x 1,000 entries", 1.0, _setup_rams),
    ("Krippendorff alpha nominal, 10 coders x 100,000 units", 1.0, _setup_alpha("nominal")),
    ("Krippendorff alpha interval, 10 coders x 100,000 units", 1.0, _setup_alpha("interval")),
    ("Bradley-Terry, 100 systems x 100,000 comparisons", 2.0, _setup_bt),
    ("Bradley-Terry bootstrap, 1,000 resamples of that fit", 30.0, _setup_bt_bootstrap),
    ("reference matching, 500 x 500 titles", 5.0, _setup_matching),
]


def main(repeat: int = 3) -> None:
    print(f"{'figure':<58} {'median s':>10} {'target s':>9} {'ratio':>7}")
    for name, target, setup in BENCHMARKS:
        timings = []
        for _ in range(repeat):
            run = setup()
            start = time.perf_counter()
            run()
            timings.append(time.perf_counter() - start)
        median = statistics.median(timings)
        flag = "" if median <= target else "  OVER TARGET"
        print(f"{name:<58} {median:>10.3f} {target:>9.2f} {median / target:>7.2f}{flag}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
