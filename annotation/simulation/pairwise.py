"""How many labels a pairwise study needs: round-robin against adaptive pair choice, replayed on
the SurveyLens human preferences shipped in ``datasets/surveylens/human_annotation``.

The data: every ``*_outline_labels.json`` there (two annotators, 5 topics each, all 10 pairings
of 5 systems per topic: 100 preferences, 10 per system pair). The *truth* of a replay is the
per-pair empirical frequency: system i beats j with probability (wins of i over j + ½ ties) /
comparisons of the pair, pooled over topics and annotators. The *target* is the full-data
ranking: the Bradley–Terry strengths of all 100 preferences (the MLE where it exists, else the
MAP under the weak prior, as the human-ranking dashboard estimates).

A replication replays one study over the same pool the product would use: the 10 topics × 20
ordered system pairs (the double round-robin of each topic, 200 comparisons).

* **round-robin**: the product's schedule (``services.schedule.double_round_robin`` per topic,
  seeded per replication), labelled in the order ``kinds.pairwise.pair_targets`` stores it (every topic's
  first leg, round by round, then the second legs);
* **adaptive**: the product's choice (``services.adaptive_pairs.pairs_choose``, the same
  function, the project default ``uniform_share``, the items kept ahead for one annotator,
  ``pairs_ahead(annotators=1)``, each round's order shuffled as ``adaptive_pairs_fill`` does),
  each system pair at most 20 times (its ordered report pairs in the pool).

Each label's outcome is drawn from the truth. After every label the strengths are fitted as for
the target and Kendall's τ-b with the target computed (``scoring.metrics.kendall_tau``; the
target's own ties count as ties). **Labels needed** = the first label count at which τ ≥ 0.9;
a replication that never gets there within the pool counts as pool size + 1 (``censored``
says how many). Averaged over ``replications``, with the standard error of that mean (``se_*``),
the share of replications whose τ is ≥ 0.9 after the whole pool (``reached_at_end_*``) and the
mean τ at a few label counts (``tau_at_*``; τ is computed after every label until the first
that reaches 0.9, and at these counts).
"""

import json
import random
from pathlib import Path

import numpy as np
from django.conf import settings

from scoring.metrics import PRIOR_PRECISION, bradley_terry, comparison_structure, kendall_tau

from ..importers.surveylens_annotations import topic_of
from ..models import AnnotationProject
from ..services.adaptive_pairs import pairs_ahead, pairs_choose
from ..services.schedule import double_round_robin

TAU_TARGET = 0.9
CHECKPOINTS = (25, 50, 100, 150, 200)
OUTCOMES = {"a_better": 1.0, "b_better": 0.0, "tie": 0.5}
UNIFORM_SHARE = AnnotationProject._meta.get_field("uniform_share").default


def preference_records(folder: Path | None = None) -> list[dict]:
    """The outline preference records: ``{"topic", "left", "right", "outcome"}`` (1: left won)."""
    folder = folder or Path(settings.DATASETS_DIR) / "surveylens" / "human_annotation"
    records = []
    for path in sorted(folder.glob("*_outline_labels.json")):
        for record in json.loads(path.read_text(encoding="utf-8"))["part_c"]:
            mapping = record["mapping"]
            records.append({"topic": topic_of(record["prompt"]), "left": mapping["response_a_model"],
                            "right": mapping["response_b_model"], "outcome": OUTCOMES[record["choice"].lower()],
                            "file": path.name})
    if not records:
        raise ValueError(f"no SurveyLens outline preferences under {folder}")
    return records


def strengths(comparisons, n_items: int) -> np.ndarray:
    """Bradley–Terry θ: the MLE where it exists, else the MAP under the weak prior."""
    data = np.asarray(comparisons, dtype=float).reshape(-1, 3)
    if data.shape[0] == 0:
        return np.zeros(n_items)
    separable = comparison_structure(data, n_items=n_items)["separable"]
    return bradley_terry(data, n_items=n_items, ridge=PRIOR_PRECISION if separable else 0.0)


def _ties_kept(theta: np.ndarray, tolerance: float = 1e-9) -> np.ndarray:
    """Strengths within ``tolerance`` of the next lower one made equal to it. Systems with the same
    data (SciSage and SurveyX here: the same record against every system, 5–5 with each other)
    come out of the fit a last bit apart (2e-16), which Kendall's τ-b would count as an order, so
    τ ≥ 0.9 would ask the estimate to put one of two equal systems above the other."""
    theta = np.array(theta, dtype=float)
    order = np.argsort(theta, kind="stable")
    for lower, upper in zip(order, order[1:]):
        if theta[upper] - theta[lower] <= tolerance:
            theta[upper] = theta[lower]
    return theta


class _Study:
    def __init__(self, records: list[dict], truth: str = "frequencies") -> None:
        self.systems = sorted({r["left"] for r in records} | {r["right"] for r in records})
        index = {name: n for n, name in enumerate(self.systems)}
        self.n = len(self.systems)
        self.topics = sorted({r["topic"] for r in records})
        self.comparisons = [(index[r["left"]], index[r["right"]], r["outcome"]) for r in records]
        wins, total = np.zeros((self.n, self.n)), np.zeros((self.n, self.n))
        for i, j, outcome in self.comparisons:
            wins[i, j] += outcome
            wins[j, i] += 1.0 - outcome
            total[i, j] += 1
            total[j, i] += 1
        if (total + np.eye(self.n) == 0).any():
            raise ValueError("every pair of systems needs at least one preference for its frequency")
        self.target = _ties_kept(strengths(self.comparisons, self.n))
        if truth == "frequencies":
            self.truth = wins / np.where(total > 0, total, 1.0)  # P(i beats j)
        elif truth == "bradley_terry":  # the fitted model itself: σ(θ_i − θ_j)
            self.truth = 1.0 / (1.0 + np.exp(-(self.target[:, None] - self.target[None, :])))
        else:
            raise ValueError(f"truth: 'frequencies' or 'bradley_terry', not {truth!r}")
        # The target's ordered pairs (a above b); its ties are not orders.
        self.orders = [(a, b) for a in range(self.n) for b in range(self.n) if self.target[a] > self.target[b] + 1e-9]
        self.pool = 2 * len(self.topics) * self.n * (self.n - 1) // 2

    def replay(self, comparisons) -> tuple[list[float | None], dict[int, list[bool]]]:
        """τ after each label up to the first that reaches the target, then only at the
        checkpoints (None elsewhere: the fits there would change no reported number); and at each
        checkpoint, which of the target's orders the estimate has right."""
        taus: list[float | None] = []
        right: dict[int, list[bool]] = {}
        reached = False
        for n in range(1, len(comparisons) + 1):
            if reached and n not in CHECKPOINTS and n != len(comparisons):
                taus.append(None)
                continue
            theta = strengths(comparisons[:n], self.n)
            tau = kendall_tau(theta, self.target)["tau"]
            taus.append(0.0 if tau is None else float(tau))
            reached = reached or taus[-1] >= TAU_TARGET
            if n in CHECKPOINTS:
                right[n] = [bool(theta[a] > theta[b]) for a, b in self.orders]
        return taus, right

    def label(self, i: int, j: int, rng: random.Random) -> tuple[int, int, float]:
        return i, j, 1.0 if rng.random() < self.truth[i, j] else 0.0

    def round_robin(self, rng: random.Random):
        schedule = [(leg, number, t, left, right)
                    for t in range(len(self.topics))
                    for leg, number, left, right in double_round_robin(range(self.n), seed=f"{rng.random()}:{t}")]
        schedule.sort(key=lambda row: row[:3])
        return self.replay([self.label(left, right, rng) for _, _, _, left, right in schedule])

    def adaptive(self, rng: random.Random):
        capacity = {(i, j): 2 * len(self.topics) for i in range(self.n) for j in range(i + 1, self.n)}
        ahead = pairs_ahead(annotators=1)
        queue: list[tuple[int, int]] = []
        comparisons: list[tuple[int, int, float]] = []
        created = 0

        def top_up() -> None:
            nonlocal created
            wanted = min(ahead - len(queue), self.pool - created)
            if wanted <= 0:
                return
            chosen = pairs_choose(comparisons=comparisons, n_systems=self.n, capacity=capacity, count=wanted,
                                  start=created, uniform_share=UNIFORM_SHARE, rng=rng)
            for pair in chosen:
                capacity[pair] -= 1
            rng.shuffle(chosen)
            queue.extend(chosen)
            created += len(chosen)

        top_up()
        while queue:
            i, j = queue.pop(0)
            # The side does not change the drawn outcome (the truth is per pair): which is left is moot here.
            comparisons.append(self.label(i, j, rng))
            top_up()
        return self.replay(comparisons)


def _labels_needed(taus: list[float | None]) -> int | None:
    return next((n for n, tau in enumerate(taus, start=1) if tau is not None and tau >= TAU_TARGET), None)


def _summary(study: _Study, runs: list) -> dict:
    pool = study.pool
    needed = np.array([pool + 1 if n is None else n for n in (_labels_needed(taus) for taus, _ in runs)], dtype=float)
    return {
        "labels": float(needed.mean()),
        "se": float(needed.std(ddof=1) / np.sqrt(needed.size)) if needed.size > 1 else None,
        "censored": int((needed > pool).sum()),
        "reached_at_end": float(np.mean([taus[-1] >= TAU_TARGET for taus, _ in runs])),
        "tau_at": {str(c): float(np.mean([taus[c - 1] for taus, _ in runs])) for c in CHECKPOINTS if c <= pool},
        "order_right_at": {
            f"{study.systems[a]} > {study.systems[b]}": {
                str(c): float(np.mean([right[c][k] for _, right in runs])) for c in CHECKPOINTS if c <= pool}
            for k, (a, b) in enumerate(study.orders)},
    }


def pairwise_simulation(seed: int, replications: int = 100, truth: str = "frequencies") -> dict:
    """Labels needed to reach Kendall τ ≥ 0.9 with the full-data ranking, round-robin against
    adaptive pair choice (see the module docstring), averaged over ``replications``. Returns
    ``{"labels_round_robin", "labels_adaptive", "replications", "ratio", ...}`` with the
    censored counts, mean τ at checkpoints, the share of replications with each of the target's
    orders right at the checkpoints, the data's n and the pool. ``truth="bradley_terry"`` draws
    the outcomes from the fitted model σ(θ_i − θ_j) instead of the frequencies (a check of the
    design where its model holds; the command reports the frequencies)."""
    if isinstance(replications, bool) or not isinstance(replications, int) or replications < 1:
        raise ValueError(f"replications: a whole number ≥ 1, not {replications!r}")
    study = _Study(preference_records(), truth=truth)
    runs = {"round_robin": [], "adaptive": []}
    for replication in range(replications):
        runs["round_robin"].append(study.round_robin(random.Random(f"{seed}:{replication}:round_robin")))
        runs["adaptive"].append(study.adaptive(random.Random(f"{seed}:{replication}:adaptive")))
    round_robin, adaptive = _summary(study, runs["round_robin"]), _summary(study, runs["adaptive"])
    return {
        "labels_round_robin": round_robin["labels"],
        "labels_adaptive": adaptive["labels"],
        "replications": replications,
        "ratio": adaptive["labels"] / round_robin["labels"],
        "se_round_robin": round_robin["se"],
        "se_adaptive": adaptive["se"],
        "censored_round_robin": round_robin["censored"],
        "censored_adaptive": adaptive["censored"],
        "reached_at_end_round_robin": round_robin["reached_at_end"],
        "reached_at_end_adaptive": adaptive["reached_at_end"],
        "tau_at_round_robin": round_robin["tau_at"],
        "tau_at_adaptive": adaptive["tau_at"],
        "order_right_at_round_robin": round_robin["order_right_at"],
        "order_right_at_adaptive": adaptive["order_right_at"],
        "truth": truth,
        "tau_target": TAU_TARGET,
        "uniform_share": UNIFORM_SHARE,
        "pool": study.pool,
        "preferences": len(study.comparisons),
        "systems": study.systems,
        "topics": len(study.topics),
        "target_strengths": [round(float(v), 4) for v in study.target],
    }
