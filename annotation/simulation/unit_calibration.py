"""Evidence that calibrated scores of units of several verdicts hold under sampling by unit
(docs/statistics.md, "Calibrated scores (PPI)", "Evidence for units of several verdicts").

A simulated system of ``REPORTS`` reports whose reports hold unequal numbers of units, and whose
smaller reports are the better ones, so that the papers' system score (the mean over reports of
each report's mean over units) and the plain mean over units differ:

* ``group`` (DeepSynth-Eval's ``group_score``): a report holds 3–15 checklist groups of 2–6 items,
  θ = clip factor · N_k (0.8 on a third of the groups, else 1); an item's expert label is
  correct with the report's quality p_r = 0.8 − 0.04 (n_r − 3), else omitted (0.7) or incorrect
  (0.3); the judge gives the expert's label with probability 0.8, else one of the two others at
  random. A unit's value is eq. 3 of its items' rewards (``scoring.metrics.group_score``, the
  function the pipeline calls), by the judge's labels (f) and by the experts' (Y).
* ``sentence`` (DeepScholar-bench's ``claim_coverage``): a report holds 4–20 claim sentences of
  1–4 citation pairs each; a pair supports its sentence with the report's quality
  q_r = 0.6 − 0.02 (n_r − 4); the judge misses a support with probability 0.25 and sees one that
  is not there with probability 0.1. A sentence's value is 1 when any of its pairs supports it
  (the rule of ``citation_support.claim_support_row`` with every pair judged).

The reports and their sizes are drawn once per seed; each simulation draws every label again,
a uniform sample of ``n`` units (``uniform_sample``: π = n/U; a unit's verdicts all labelled,
as sampling by unit gives them) and computes the calibrated figure as the product does
(``calibrated_mean`` on the values × U / (R · n_r), ``report_mean_weights``). Truth: the mean
over reports of each report's expert mean. ``coverage``: the share of PPI intervals holding it;
``human_only_coverage`` the same for the experts-only interval; ``width_ratio`` the mean PPI
width over the mean experts-only width on the same samples; ``unweighted_coverage``: the
share of the PPI intervals of the plain unit mean (no scaling) holding the same truth — what the
calibrated figure would miss without the report weighting.
"""

from __future__ import annotations

import numpy as np

from scoring.metrics.calibration import calibrated_mean, report_mean_weights

from .calibration import IntervalTally
from scoring.metrics.checklist import group_score
from scoring.metrics.sampling import poisson_sample, uniform_sample

REPORTS = 20
SAMPLE_SIZES = (20, 40, 60)  # labelled units n (at 60, 3 per report: π = 1 in the smallest reports)
REWARDS = np.array([1, 0, -1])  # correct, omitted, incorrect
JUDGE_ITEM_ACCURACY = 0.8
MISSED_SUPPORT, SEEN_SUPPORT = 0.25, 0.1


def _checklist_population(rng: np.random.Generator) -> dict:
    groups_per_report = rng.integers(3, 16, REPORTS)
    report_of_group = np.repeat(np.arange(REPORTS), groups_per_report)
    items_per_group = rng.integers(2, 7, report_of_group.size)
    clip = np.where(rng.random(report_of_group.size) < 1 / 3, 0.8, 1.0)
    group_of_item = np.repeat(np.arange(report_of_group.size), items_per_group)
    quality = 0.8 - 0.04 * (groups_per_report - 3)
    return {"report_of_unit": report_of_group, "group_of_item": group_of_item,
            "item_quality": quality[report_of_group[group_of_item]], "thresholds": clip * items_per_group}


def _checklist_values(population: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    quality, group_of_item = population["item_quality"], population["group_of_item"]
    expert = np.where(rng.random(quality.size) < quality, 0, np.where(rng.random(quality.size) < 0.7, 1, 2))
    wrong = rng.random(quality.size) >= JUDGE_ITEM_ACCURACY
    judge = np.where(wrong, (expert + rng.integers(1, 3, quality.size)) % 3, expert)
    bounds = np.flatnonzero(np.diff(group_of_item)) + 1

    def values(codes: np.ndarray) -> np.ndarray:
        return np.array([group_score(rewards, theta) for rewards, theta in
                         zip(np.split(REWARDS[codes], bounds), population["thresholds"])])

    return values(expert), values(judge)


def _claim_population(rng: np.random.Generator) -> dict:
    sentences_per_report = rng.integers(4, 21, REPORTS)
    report_of_sentence = np.repeat(np.arange(REPORTS), sentences_per_report)
    pairs = rng.integers(1, 5, report_of_sentence.size)
    sentence_of_pair = np.repeat(np.arange(report_of_sentence.size), pairs)
    quality = 0.6 - 0.02 * (sentences_per_report - 4)
    return {"report_of_unit": report_of_sentence, "sentence_of_pair": sentence_of_pair,
            "pair_quality": quality[report_of_sentence[sentence_of_pair]]}


def _claim_values(population: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    quality, sentence_of_pair = population["pair_quality"], population["sentence_of_pair"]
    expert = rng.random(quality.size) < quality
    flip = rng.random(quality.size) < np.where(expert, MISSED_SUPPORT, SEEN_SUPPORT)
    judge = expert ^ flip
    units = population["report_of_unit"].size

    def covered(support: np.ndarray) -> np.ndarray:
        return (np.bincount(sentence_of_pair, weights=support.astype(float), minlength=units) > 0).astype(float)

    return covered(expert), covered(judge)


SETTINGS = {"group": (_checklist_population, _checklist_values),
            "sentence": (_claim_population, _claim_values)}
DESIGNS = ("uniform", "per_report")


def _simulate(unit: str, design: str, n: int, seed: int, simulations: int) -> dict:
    make_population, draw_values = SETTINGS[unit]
    stream = list(SETTINGS).index(unit)
    population = make_population(np.random.default_rng([seed, 0, stream]))
    reports = population["report_of_unit"]
    scale = report_mean_weights(reports.tolist())
    per_report = scale * n / scale.sum()  # π ∝ 1 / n_r: n / R units of each report expected
    if per_report.max() > 1:
        raise ValueError(f"n: {n} units give a unit of a small report π > 1")
    rng = np.random.default_rng([seed, 1, stream, DESIGNS.index(design), n])
    tally, unweighted_hits, gaps = IntervalTally(), 0, []
    for _ in range(simulations):
        y_all, f_all = draw_values(population, rng)
        truth = float((scale * y_all).mean())
        if design == "uniform":
            chosen, inclusion = uniform_sample(reports.size, n, rng)
        else:
            chosen = poisson_sample(per_report, rng)
            inclusion = per_report[chosen]
        tally.add(calibrated_mean(scale[chosen] * y_all[chosen], scale[chosen] * f_all[chosen], scale * f_all,
                                  inclusion=inclusion), truth, chosen.size)
        if design == "uniform":
            plain = calibrated_mean(y_all[chosen], f_all[chosen], f_all, inclusion=inclusion)["ppi"]
            unweighted_hits += int(plain["low"] <= truth <= plain["high"])
        gaps.append(truth - float(y_all.mean()))
    return {
        "unit": unit, "design": design, "n": n, "reports": REPORTS, "units": int(reports.size), **tally.summary(),
        "unweighted_coverage": unweighted_hits / simulations if design == "uniform" else None,
        "report_mean_minus_unit_mean": float(np.mean(gaps)),
    }


def unit_calibration_simulation(seed: int, simulations: int = 1000, *, sample_sizes: tuple[int, ...] = SAMPLE_SIZES,
                                units: tuple[str, ...] = tuple(SETTINGS), designs: tuple[str, ...] = DESIGNS) -> dict:
    """Per unit (``group``, ``sentence``), design (``uniform``: the product's uniform sample by unit;
    ``per_report``: Poisson with π ∝ 1/n_r, n/R units of each report expected — a comparison, not
    a design the product offers) and sample size n: coverage of the calibrated
    PPI interval at nominal 95 %, the experts-only interval's, their width ratio and the plain
    unit mean's coverage of the same truth (module docstring). Deterministic for a seed."""
    for name, value, low in (("seed", seed, 0), ("simulations", simulations, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name}: give a whole number ≥ {low}; got {value!r}")
    rows = [_simulate(unit, design, n, seed, simulations) for unit in units for n in sample_sizes
            for design in designs]
    return {"seed": seed, "simulations": simulations, "rows": rows}


def unit_calibration_table(result: dict) -> str:
    """The markdown table docs/statistics.md shows for ``result`` (a test compares them)."""
    lines = ["| unit | units U (reports) | design | labelled units n (mean) | PPI coverage (nominal 0.95) |"
             " experts-only coverage | PPI width | width / experts-only | plain unit mean's PPI coverage |"
             " report mean − unit mean |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        plain = "—" if row["unweighted_coverage"] is None else f"{row['unweighted_coverage']:.3f}"
        lines.append(f"| {row['unit']} | {row['units']} ({row['reports']}) | {row['design']} | {row['n_human']:.1f} |"
                     f" {row['coverage']:.3f} | {row['human_only_coverage']:.3f} | {row['ppi_width']:.3f} |"
                     f" {row['width_ratio']:.3f} | {plain} | {row['report_mean_minus_unit_mean']:+.3f} |")
    lines.append(f"seed {result['seed']}, {result['simulations']} simulations per row")
    return "\n".join(lines)
