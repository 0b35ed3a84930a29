"""How many labels a pairwise study needs until its ranking is settled, simulated from known
Bradley–Terry strengths: round-robin against the product's adaptive choice.

Settings (``SETTINGS``; θ in logits, P(i beats j) = σ(θ_i − θ_j), shuffled onto the system
numbers each replication so that no design can read the order from the numbering):

* ``10_random``, ``20_random``: leaderboard-like fields, θ drawn afresh each replication as
  sorted independent Uniform(0, span) values (random gaps, near-ties included);
* ``10_even``: 10 systems evenly spaced;
* ``5_envsci``: the five systems of the SurveyLens EnvSci outline preferences, θ their
  Bradley–Terry MLE on that annotator's 50 preferences (``annotation.simulation.pairwise``).

A replication labels ``horizon`` comparisons with each design, one outcome drawn per label:

* **round-robin**: every pair of systems once in a random order, then again in a fresh order,
  and so on (what a double round-robin over tasks amounts to for a system-level ranking);
* **adaptive**: the product's chooser (``scoring.metrics.preference_design.choose_pairs_batch``,
  the function ``services.adaptive_pairs.pairs_choose`` calls), one annotator with
  ``pairs_ahead(annotators=1)`` pairs open ahead (the pair chosen now is labelled that many
  labels later; the open ones count as pending in the choice), the project default
  ``uniform_share`` of uniform turns, no pair's capacity binding.

After every label θ is the MAP under the human ranking's weak prior (``PRIOR_PRECISION``; the
MLE does not exist for the first labels) and Kendall's τ-b with the true θ is computed
(:func:`kendall_tau_b_batch`; an estimate's ties count as ties, all tied at the start: τ = 0).
**Settled** = the first label count from which τ ≥ 0.9 holds through the horizon (1 + the last
count with τ < 0.9); a replication still below 0.9 at the horizon counts as horizon + 1
(``censored``). Reported: the mean over replications for each design and their ratio
(``ratio_settled``), with standard errors.
"""

from __future__ import annotations

import numpy as np

from scoring.metrics import PRIOR_PRECISION
from scoring.metrics.preference_design import bradley_terry_map_batch, choose_pairs_batch, covariance_after_batch

from ..models import AnnotationProject
from ..services.adaptive_pairs import is_uniform_turn, pairs_ahead

TAU_TARGET = 0.9
UNIFORM_SHARE = AnnotationProject._meta.get_field("uniform_share").default
REPLICATIONS = 200
# Newton steps after each label, warm-started at the previous fit: one label moves θ̂ little and
# Newton converges quadratically (tests: within 1e-6 of the converged fit).
NEWTON_STEPS = 2


def _envsci_strengths() -> np.ndarray:
    from .pairwise import preference_records, strengths

    records = [r for r in preference_records() if r["file"].startswith("Annotator_EnvSci")]
    systems = sorted({r["left"] for r in records} | {r["right"] for r in records})
    index = {name: n for n, name in enumerate(systems)}
    return np.sort(strengths([(index[r["left"]], index[r["right"]], r["outcome"]) for r in records], len(systems)))


# name → (systems, θ: "even"/"random" with span, or a callable; horizon in labels)
SETTINGS = {
    "10_random": {"systems": 10, "strengths": ("random", 6.0), "horizon": 2000},
    "20_random": {"systems": 20, "strengths": ("random", 6.0), "horizon": 3000},
    "10_even": {"systems": 10, "strengths": ("even", 2.7), "horizon": 1500},
    "5_envsci": {"systems": 5, "strengths": ("envsci", None), "horizon": 600},
}


def kendall_tau_b_batch(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Kendall's τ-b of each row of ``estimate`` with the same row of ``truth`` (R, n); a row
    whose estimate is all tied gets 0 (τ-b undefined)."""
    n = estimate.shape[1]
    k, l = np.triu_indices(n, 1)
    a = np.sign(estimate[:, k] - estimate[:, l])
    b = np.sign(truth[:, k] - truth[:, l])
    denom = np.sqrt((a != 0).sum(axis=1) * (b != 0).sum(axis=1).astype(float))
    return np.where(denom > 0, (a * b).sum(axis=1) / np.where(denom > 0, denom, 1.0), 0.0)


def _truths(setting: dict, replications: int, rng: np.random.Generator) -> np.ndarray:
    n = setting["systems"]
    kind, span = setting["strengths"]
    if kind == "random":
        theta = np.sort(rng.uniform(0.0, span, (replications, n)), axis=1)
    elif kind == "even":
        theta = np.tile(np.linspace(0.0, span, n), (replications, 1))
    else:
        theta = np.tile(_envsci_strengths(), (replications, 1))
    theta = theta - theta.mean(axis=1, keepdims=True)
    return np.take_along_axis(theta, np.argsort(rng.random((replications, n)), axis=1), axis=1)


class _Run:
    """R replications labelled side by side: the tallies, the fit, τ after every label."""

    def __init__(self, truth: np.ndarray, horizon: int, rng: np.random.Generator) -> None:
        self.truth, self.horizon, self.rng = truth, horizon, rng
        self.r, self.n = truth.shape
        self.rows = np.arange(self.r)
        self.wins = np.zeros((self.r, self.n, self.n))
        self.counts = np.zeros((self.r, self.n, self.n))
        self.theta = np.zeros((self.r, self.n))
        self.hess = None
        self.taus = np.zeros((self.r, horizon))

    def label(self, step: int, i: np.ndarray, j: np.ndarray) -> None:
        p = 1.0 / (1.0 + np.exp(-(self.truth[self.rows, i] - self.truth[self.rows, j])))
        won = (self.rng.random(self.r) < p).astype(float)
        self.wins[self.rows, i, j] += won
        self.wins[self.rows, j, i] += 1.0 - won
        self.counts[self.rows, i, j] += 1
        self.counts[self.rows, j, i] += 1
        self.theta, self.hess = bradley_terry_map_batch(self.wins, self.counts, start=self.theta,
                                                          max_iterations=NEWTON_STEPS)
        self.taus[:, step] = kendall_tau_b_batch(self.theta, self.truth)


def settled(taus: np.ndarray, target: float = TAU_TARGET) -> np.ndarray:
    """Per row of τ after labels 1..T: the first label count from which τ ≥ ``target`` holds
    through T (1 + the last count below it; 1 if none is); T + 1 when the last is below."""
    below = taus < target
    last_below = taus.shape[1] - 1 - np.argmax(below[:, ::-1], axis=1)  # 0-based index
    return np.where(below.any(axis=1), last_below + 2, 1)


def round_robin(truth: np.ndarray, horizon: int, rng: np.random.Generator) -> np.ndarray:
    run = _Run(truth, horizon, rng)
    k, l = np.triu_indices(run.n, 1)
    order = np.empty((run.r, 0), dtype=np.intp)
    for step in range(horizon):
        if step % k.size == 0:
            order = np.argsort(rng.random((run.r, k.size)), axis=1)
        pick = order[:, step % k.size]
        run.label(step, k[pick], l[pick])
    return run.taus


def adaptive(truth: np.ndarray, horizon: int, rng: np.random.Generator,
             uniform_share: float = UNIFORM_SHARE) -> np.ndarray:
    run = _Run(truth, horizon, rng)
    ahead = pairs_ahead(annotators=1)
    cov = np.tile(np.eye(run.n) / PRIOR_PRECISION, (run.r, 1, 1))
    first, second = choose_pairs_batch(run.theta, cov, uniform=[is_uniform_turn(m, uniform_share)
                                                                 for m in range(ahead)], rng=rng)
    queue = [(first[:, t], second[:, t]) for t in range(ahead)]
    for step in range(horizon):
        i, j = queue.pop(0)
        run.label(step, i, j)
        cov = np.linalg.inv(run.hess)
        for pi, pj in queue:  # the open pairs: chosen, not yet labelled
            cov = covariance_after_batch(run.theta, cov, pi, pj)
        number = step + ahead
        first, second = choose_pairs_batch(run.theta, cov, uniform=[is_uniform_turn(number, uniform_share)], rng=rng)
        queue.append((first[:, 0], second[:, 0]))
    return run.taus


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else 0.0


def pairwise_bt_simulation(seed: int, replications: int = REPLICATIONS, settings: tuple[str, ...] | None = None) -> dict:
    """Per setting (module docstring): labels until τ ≥ 0.9 is settled, round-robin against the
    product's adaptive choice, over ``replications`` replications. Deterministic for a seed
    (streams ``[seed, setting number, 0 truth / 1 round-robin / 2 adaptive]``)."""
    if isinstance(replications, bool) or not isinstance(replications, int) or replications < 2:
        raise ValueError(f"replications: a whole number ≥ 2, not {replications!r}")
    out = {}
    for number, name in enumerate(SETTINGS):
        if settings is not None and name not in settings:
            continue
        setting = SETTINGS[name]
        truth = _truths(setting, replications, np.random.default_rng([seed, number, 0]))
        horizon = setting["horizon"]
        rr = settled(round_robin(truth, horizon, np.random.default_rng([seed, number, 1])))
        ad = settled(adaptive(truth, horizon, np.random.default_rng([seed, number, 2])))
        (rr_mean, rr_se), (ad_mean, ad_se) = _mean_se(rr.astype(float)), _mean_se(ad.astype(float))
        kind, span = setting["strengths"]
        out[name] = {
            "systems": setting["systems"], "replications": replications,
            "labels_round_robin": rr_mean, "labels_adaptive": ad_mean, "ratio_settled": ad_mean / rr_mean,
            "se_round_robin": rr_se, "se_adaptive": ad_se,
            "censored_round_robin": int((rr > horizon).sum()), "censored_adaptive": int((ad > horizon).sum()),
            "horizon": horizon, "strengths": kind if span is None else f"{kind} over [0, {span}] logits",
            "uniform_share": UNIFORM_SHARE, "tau_target": TAU_TARGET,
        }
    return out
