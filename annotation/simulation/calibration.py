"""Evidence for calibrated scores, by simulation on the shipped demo data (docs/statistics.md,
"Calibrated scores (PPI)").

Population: the demo run's judge verdicts — the offline judge on the DeepSynth-Eval demo
(``datasets/deepsynth-eval/example_gen_result.jsonl``: 4 reports, 806 checklist items), the
same calls the demo run (``manage.py demo_judges``) makes, asked here directly so the
simulation needs no database. Unit value: the item reward (+1 correct, 0 omitted, −1
incorrect), the metric ``item_reward``.

Human labels are simulated from a noise model P(expert label | judge label) — the repository
ships no expert labels on these verdicts, so each model is stated:

* ``symmetric``: the expert agrees with the judge with probability 0.8, otherwise picks one of
  the two other labels at random;
* ``lenient_judge`` (errors as an agreement study of a lexical judge measures them: it misses
  paraphrased coverage and over-credits surface matches): judge "omitted" → expert correct
  0.25, incorrect 0.05; judge "correct" → expert omitted 0.15, incorrect 0.05; judge
  "incorrect" → expert omitted 0.3, correct 0.1;
* ``measured``: the judge's error rates as measured on agreement labels: passed as ``measured``
  (``{judge label: {expert label: probability}}``), else read from the database — the settled
  expert labels (gold, else unanimous) of agreement items on the demo judge's DeepSynth
  verdicts (:func:`demo_measured_confusion`, each row add-one smoothed); left out, and said so,
  when there are none (a fresh demo has no agreement labels).

Each simulation draws every unit's expert label (so the truth, the mean over the 806 units,
varies), a uniform sample of ``n`` units, and computes the PPI++ interval
(``scoring.metrics.calibration``) and the human-only interval on the same sample; coverage is
the share of PPI intervals holding the true mean, the width ratio the mean PPI width over the
mean human-only width. ``adaptive`` repeats the ``lenient_judge`` model with uncertainty
sampling (uncertainty 1 for judge labels other than "omitted", 0.2 otherwise) and
inverse-probability weights.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from django.conf import settings

from scoring.metrics.calibration import calibrated_mean
from scoring.metrics.sampling import poisson_sample, uncertainty_probabilities, uniform_sample

LABELS = ("correct", "omitted", "incorrect")
REWARD = {"correct": 1.0, "omitted": 0.0, "incorrect": -1.0}
SAMPLE_SIZE = 150
DEMO_FILE = "deepsynth-eval/example_gen_result.jsonl"

NOISE_MODELS: dict[str, dict[str, dict[str, float]]] = {
    "symmetric": {j: {e: (0.8 if e == j else 0.1) for e in LABELS} for j in LABELS},
    "lenient_judge": {
        "omitted": {"correct": 0.25, "omitted": 0.70, "incorrect": 0.05},
        "correct": {"correct": 0.80, "omitted": 0.15, "incorrect": 0.05},
        "incorrect": {"correct": 0.10, "omitted": 0.30, "incorrect": 0.60},
    },
}

_JUDGED: dict[str, list[str]] = {}


def demo_judge_labels(datasets_dir: str | Path | None = None) -> list[str]:
    """The offline judge's label on every checklist item of the DeepSynth demo, in file order
    (what the demo run stores as its verdicts); computed once per process."""
    from scoring.judges.base import JudgeCall
    from scoring.judges.offline_judge import OfflineJudge
    from scoring.models import JudgeConfig

    path = Path(datasets_dir or settings.DATASETS_DIR) / DEMO_FILE
    key = str(path)
    if key in _JUDGED:
        return _JUDGED[key]
    calls = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        for group in record["checklist"]:
            items = [{"id": k, "text": requirement["content"]}
                     for k, requirement in enumerate(r for sub in group["sub_groups"] for r in sub["requirements"])]
            calls.append(JudgeCall(step="deepsynth.checklist_group", repeat=0, variables={
                "report": record["survey_result"], "group_name": group["group_name"],
                "constraint_question": (group.get("detailed_prompt") or "") if group.get("strict") else "",
                "items": items}))
    judge = OfflineJudge(JudgeConfig(name="simulation", backend=JudgeConfig.Backend.OFFLINE, max_concurrency=8))
    labels = []
    for answer in judge.answer_many(calls):
        if not answer.ok:
            raise RuntimeError(f"the offline judge failed on the demo: {answer.error}")
        labels.extend(verdict["label"] for verdict in answer.data["verdicts"])
    _JUDGED[key] = labels
    return labels


DEMO_JUDGE = "offline-heuristic"  # manage.py demo_judges' configuration
STEP = "deepsynth.checklist_group"


def demo_measured_confusion(judge_name: str = DEMO_JUDGE) -> tuple[dict[str, dict[str, float]], int] | None:
    """P(expert label | judge label) from the settled labels of agreement items on
    ``judge_name``'s DeepSynth verdicts, add-one smoothed per judge label, and how many labels it
    rests on; ``None`` when no such label exists."""
    from ..models import AnnotationItem, Label, TargetKind
    from scoring.models import Verdict

    items = AnnotationItem.objects.filter(
        target_kind=TargetKind.VERDICT, project__kind="agreement",
        target_id__in=Verdict.objects.filter(judge_config__name=judge_name, step=STEP).values("pk"))
    rows = list(items.values_list("pk", "target_id", "gold__value"))
    if not rows:
        return None
    judged = dict(Verdict.objects.filter(pk__in=items.values("target_id")).values_list("pk", "label"))
    given: dict[int, set] = {}
    for item_id, value in Label.objects.filter(item__in=items).values_list("item_id", "value"):
        if isinstance(value, dict) and value.get("label") in LABELS:
            given.setdefault(item_id, set()).add(value["label"])
    counts = {j: {e: 1.0 for e in LABELS} for j in LABELS}
    n = 0
    for item_id, verdict_id, gold in rows:
        expert = gold.get("label") if isinstance(gold, dict) else None
        if expert is None and len(given.get(item_id, ())) == 1:
            expert = next(iter(given[item_id]))
        if expert in LABELS and judged.get(verdict_id) in LABELS:
            counts[judged[verdict_id]][expert] += 1
            n += 1
    if n == 0:
        return None
    return {j: {e: c / sum(row.values()) for e, c in row.items()} for j, row in counts.items()}, n


def _confusion(model: Mapping[str, Mapping[str, float]]) -> np.ndarray:
    matrix = np.array([[float(model.get(j, {}).get(e, 0.0)) for e in LABELS] for j in LABELS])
    if np.any(matrix < 0) or not np.allclose(matrix.sum(axis=1), 1.0):
        raise ValueError("measured: each judge label's row must be probabilities that sum to 1")
    return matrix


class IntervalTally:
    """Coverage and mean widths of the PPI and experts-only intervals over simulations."""

    def __init__(self) -> None:
        self.hits = self.human_hits = 0
        self.ppi_widths: list[float] = []
        self.human_widths: list[float] = []
        self.sizes: list[int] = []

    def add(self, calibrated: dict, truth: float, size: int) -> None:
        """One simulation: ``calibrated_mean``'s answer on its sample and the true mean."""
        ppi, human = calibrated["ppi"], calibrated["human_only"]
        self.hits += int(ppi["low"] <= truth <= ppi["high"])
        self.human_hits += int(human["low"] <= truth <= human["high"])
        self.ppi_widths.append(ppi["high"] - ppi["low"])
        self.human_widths.append(human["high"] - human["low"])
        self.sizes.append(size)

    def summary(self) -> dict:
        simulations = len(self.sizes)
        return {
            "coverage": self.hits / simulations, "human_only_coverage": self.human_hits / simulations,
            "width_ratio": float(np.mean(self.ppi_widths) / np.mean(self.human_widths)),
            "ppi_width": float(np.mean(self.ppi_widths)), "human_only_width": float(np.mean(self.human_widths)),
            "n_human": float(np.mean(self.sizes)), "simulations": int(simulations),
        }


def _simulate(judge_codes: np.ndarray, confusion: np.ndarray, *, rng: np.random.Generator, simulations: int,
              n: int, adaptive: bool = False) -> dict:
    values = np.array([REWARD[label] for label in LABELS])
    f_all = values[judge_codes]
    cumulative = confusion.cumsum(axis=1)[judge_codes]
    pi = None
    if adaptive:
        pi = uncertainty_probabilities(np.where(f_all == 0.0, 0.2, 1.0), n)
    tally = IntervalTally()
    for _ in range(simulations):
        expert_codes = (rng.random(f_all.size)[:, None] > cumulative).sum(axis=1)
        y_all = values[np.minimum(expert_codes, len(LABELS) - 1)]
        truth = y_all.mean()
        if adaptive:
            chosen = poisson_sample(pi, rng)
            inclusion = pi[chosen]
        else:
            chosen, inclusion = uniform_sample(f_all.size, n, rng)
        tally.add(calibrated_mean(y_all[chosen], f_all[chosen], f_all, inclusion=inclusion), truth, chosen.size)
    return tally.summary()


def calibration_simulation(seed: int, simulations: int = 1000, *, n: int = SAMPLE_SIZE,
                           measured: Mapping[str, Mapping[str, float]] | None = None,
                           datasets_dir: str | Path | None = None) -> dict:
    """Coverage of the PPI interval (nominal 95 %) and its width relative to the human-only
    interval at the same n, per noise model (module docstring; ``measured_from`` says where the
    measured model came from, or why it was not run). The top-level
    ``coverage``/``width_ratio`` are the worst coverage and the largest ratio over the models
    with uniform samples, so a target met there is met by each. Deterministic for a seed."""
    for name, value, low in (("seed", seed, 0), ("simulations", simulations, 1), ("n", n, 2)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name}: give a whole number ≥ {low}; got {value!r}")
    labels = demo_judge_labels(datasets_dir)
    codes = np.array([LABELS.index(label) for label in labels])
    models = dict(NOISE_MODELS)
    measured_from = "given"
    if measured is None:
        found = demo_measured_confusion()
        if found is not None:
            measured, labelled = found
            measured_from = f"{labelled} settled expert labels on the demo judge's verdicts"
        else:
            measured_from = "not run: no settled expert label on the demo judge's verdicts in the database"
    if measured is not None:
        models["measured"] = {j: dict(row) for j, row in measured.items()}
    per_model = {}
    for index, (name, model) in enumerate(models.items()):
        rng = np.random.default_rng([seed, index])
        per_model[name] = _simulate(codes, _confusion(model), rng=rng, simulations=simulations, n=n)
    adaptive = _simulate(codes, _confusion(NOISE_MODELS["lenient_judge"]), rng=np.random.default_rng([seed, 99]),
                         simulations=simulations, n=n, adaptive=True)
    return {
        "coverage": min(m["coverage"] for m in per_model.values()),
        "width_ratio": max(m["width_ratio"] for m in per_model.values()),
        "simulations": simulations, "seed": seed, "n_judge": int(codes.size), "n_human": n, "metric": "item_reward",
        "judge_labels": {label: int((codes == k).sum()) for k, label in enumerate(LABELS)},
        "noise_models": per_model, "adaptive_lenient_judge": adaptive, "measured_from": measured_from,
    }


# --- Judges of known accuracy -------------------------------------------------------------------
JUDGE_ACCURACIES = (0.7, 0.8, 0.9)
HARD_SHARE = 0.25  # share of units on which the judge errs four times as often
HARD_ERROR_FACTOR = 4.0
# What the judge reports as its uncertainty on a unit: √(its error rate) up to scale, the rule
# π ∝ √E[(Y − f)² | X] of active statistical inference (scoring.metrics.sampling).
UNCERTAINTY = {"hard": 1.0, "easy": 0.5}
JUDGED_UNITS = 4000


def _known_judge(accuracy: float, n_units: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray,
                                                                                       np.ndarray]:
    """(expert codes, judge codes, hard) for one simulated population (see ppi_judges_simulation)."""
    expert = rng.integers(0, len(LABELS), n_units)
    hard = rng.random(n_units) < HARD_SHARE
    easy_error = (1.0 - accuracy) / (1.0 - HARD_SHARE + HARD_SHARE * HARD_ERROR_FACTOR)
    error = np.where(hard, HARD_ERROR_FACTOR * easy_error, easy_error)
    wrong = rng.random(n_units) < error
    judge = np.where(wrong, (expert + rng.integers(1, len(LABELS), n_units)) % len(LABELS), expert)
    return expert, judge, hard


def ppi_judges_simulation(seed: int, simulations: int = 1000, *, n: int = SAMPLE_SIZE,
                          n_units: int = JUDGED_UNITS) -> list[dict]:
    """Coverage (nominal 95 %) and width ratio of the PPI interval for judges of known accuracy.

    Per simulation a population of ``n_units`` judged units (4000: a run of several systems; the
    judge's own variance term λ²σ_f²/N grows as N shrinks, see docs/statistics.md): each unit's
    expert label uniform over correct / omitted / incorrect, its reward the metric
    ``item_reward``; the judge right with probability ``accuracy`` overall, wrong towards one of
    the two other labels at random, and four times as often wrong on a "hard" 25 % of units (the
    judge's uncertainty: 1 on hard units, 0.5 on easy ones). ``uniform``: a simple random sample
    of ``n`` units; ``adaptive``: Poisson sampling with π ∝ that uncertainty
    (``uncertainty_probabilities``, expected size ``n``), inverse-probability weights. Coverage
    is the share of PPI intervals holding the population's expert mean; ``width_ratio`` the mean
    PPI width over the mean human-only width of a *uniform* sample of ``n`` (the labels an
    adaptive design saves are measured against the plain study). Deterministic for a seed.
    """
    values = np.array([REWARD[label] for label in LABELS])
    out = []
    for a_index, accuracy in enumerate(JUDGE_ACCURACIES):
        for d_index, design in enumerate(("uniform", "adaptive")):
            rng = np.random.default_rng([seed, 1000 + a_index, d_index])
            hits, ppi_widths, human_widths, sizes = 0, [], [], []
            for _ in range(simulations):
                expert, judge, hard = _known_judge(accuracy, n_units, rng)
                y_all, f_all = values[expert], values[judge]
                chosen, inclusion = uniform_sample(n_units, n, rng)
                plain_inclusion = inclusion
                plain = calibrated_mean(y_all[chosen], f_all[chosen], f_all, inclusion=plain_inclusion)
                if design == "adaptive":
                    pi = uncertainty_probabilities(np.where(hard, UNCERTAINTY["hard"], UNCERTAINTY["easy"]), n)
                    chosen = poisson_sample(pi, rng)
                    inclusion = pi[chosen]
                out_ppi = calibrated_mean(y_all[chosen], f_all[chosen], f_all, inclusion=inclusion)["ppi"] \
                    if design == "adaptive" else plain["ppi"]
                truth = y_all.mean()
                hits += int(out_ppi["low"] <= truth <= out_ppi["high"])
                ppi_widths.append(out_ppi["high"] - out_ppi["low"])
                human_widths.append(plain["human_only"]["high"] - plain["human_only"]["low"])
                sizes.append(chosen.size)
            out.append({"accuracy": accuracy, "design": design, "coverage": hits / simulations,
                        "width_ratio": float(np.mean(ppi_widths) / np.mean(human_widths)),
                        "n_human": float(np.mean(sizes)), "n_judge": n_units, "simulations": simulations})
    return out
