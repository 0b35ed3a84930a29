"""DeepSynth-Eval checklist scoring (paper §3.4, eq. 1–7).

Each checklist item gets a verdict r(c) ∈ {1 (correct), 0 (omitted),
-1 (incorrect)} (eq. 1).  Items are grouped; a group's cumulative reward is
S_k = Σ r(c) (eq. 2) and its score is clipped against a saturation threshold
θ_k ≤ N_k: Score_k = max(0, min(1, S_k / θ_k)) (eq. 3).  General, constraint
and overall scores average the group scores with *equal weight per group*
(eq. 4–6); the paper defines no other weighting, so a per-group ``weight`` is
rejected.  Precision is N_correct / (N_correct + N_incorrect) over all
mentioned items (eq. 7); for a system over several tasks the paper's counts are
pooled over all its reports (:func:`system_precision`).

Deviation from the released scorer (kept on purpose, the paper is the spec):
the released code clips only from above (``min(sum / (clip * total), 1)``),
so a group with more incorrect than correct items can go negative there; the
paper's eq. 3 floors the group score at 0, and so do we.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._validate import as_numeric, check_choice, check_int, check_real, fail

__all__ = [
    "group_score", "checklist_scores", "threshold_from_clip_factor", "system_precision", "GROUP_SCORE_VARIANTS",
    "PRECISION_VARIANTS",
]

_KINDS = ("general", "constraint")
_GROUP_KEYS = frozenset({"kind", "verdicts", "threshold"})


def _verdicts(values: Any, name: str) -> np.ndarray:
    arr = as_numeric(values, name, allow_empty=False)
    bad = (arr != 1) & (arr != 0) & (arr != -1)
    if bad.any():
        k = int(np.argmax(bad))
        fail(f"{name} must contain only 1 (correct), 0 (omitted) or -1 (incorrect); found {arr[k]!r} at position {k}")
    return arr


def _threshold(value: Any, n_items: int, name: str) -> float:
    if value is None:
        return float(n_items)
    theta = check_real(value, name, low=0.0, low_open=True)
    if theta > n_items:
        fail(f"{name} must not exceed the number of items in the group ({n_items}); got {value!r} (paper eq. 3: θ_k ≤ N_k)")
    return theta


GROUP_SCORE_VARIANTS = ("paper", "upstream")


def group_score(verdicts: Sequence[int], threshold: float | None = None, variant: str = "paper") -> float:
    """Score of one checklist group, eq. 3: max(0, min(1, S_k / θ_k)) in [0, 1].

    ``threshold`` is θ_k (0 < θ_k ≤ N_k); ``None`` means θ_k = N_k.  The
    paper's example: N_k = 15 items and θ_k = 10, so a cumulative reward of 10
    already earns full credit. ``variant="upstream"`` reproduces the released
    scorer, which caps at 1 but has no floor at 0: min(1, S_k / θ_k), negative
    when incorrect items outweigh correct ones.
    """
    check_choice(variant, "variant", GROUP_SCORE_VARIANTS)
    arr = _verdicts(verdicts, "verdicts")
    theta = _threshold(threshold, arr.size, "threshold")
    ratio = arr.sum() / theta
    return float(min(ratio, 1.0) if variant == "upstream" else np.clip(ratio, 0.0, 1.0))


PRECISION_VARIANTS = ("pooled", "per_report")


def system_precision(correct: Sequence[int], incorrect: Sequence[int], variant: str = "pooled") -> float | None:
    """A system's precision in percent over its reports, from each report's N_correct and N_incorrect.

    ``"pooled"`` (the paper's, §3.4 eq. 7): Σ N_correct / Σ (N_correct + N_incorrect) over
    every mentioned checklist item of every report — eq. 7 counts items, unlike eq. 4–6, which
    the paper explicitly averages per group. ``"per_report"``: the mean over reports of each
    report's own eq. 7, reports with no mentioned item left out (their precision is undefined).
    ``None`` when no item was mentioned at all.
    """
    check_choice(variant, "variant", PRECISION_VARIANTS)
    right = as_numeric(correct, "correct", allow_empty=False)
    wrong = as_numeric(incorrect, "incorrect", allow_empty=False)
    if right.shape != wrong.shape:
        fail(f"correct and incorrect must have one count per report; got {right.size} and {wrong.size}")
    if (right < 0).any() or (wrong < 0).any() or (right % 1).any() or (wrong % 1).any():
        fail("correct and incorrect must be counts (non-negative integers)")
    mentioned = right + wrong
    if variant == "pooled":
        total = mentioned.sum()
        return float(100.0 * right.sum() / total) if total else None
    defined = mentioned > 0
    return float(np.mean(100.0 * right[defined] / mentioned[defined])) if defined.any() else None


def threshold_from_clip_factor(n_items: int, clip_factor: float) -> float:
    """θ for the released data's clip factors: θ = clip_factor · N.

    The released DeepSynth-Eval scorer divides a group's reward by
    ``clip_factor * sum(rewards)`` with unit rewards per item, i.e.
    θ = clip_factor · N (1.0 for general groups, 0.8 for strict/constraint
    groups).  ``clip_factor`` must lie in (0, 1] so that θ ≤ N (eq. 3).
    """
    n = check_int(n_items, "n_items", low=1)
    factor = check_real(clip_factor, "clip_factor", low=0.0, high=1.0, low_open=True)
    return factor * n


def _mean_percent(scores: list[float]) -> float | None:
    return float(np.mean(scores) * 100.0) if scores else None


def checklist_scores(groups: Sequence[Mapping[str, Any]], variant: str = "paper") -> dict[str, float | int | None]:
    """DeepSynth-Eval scores of one report (paper §3.4, eq. 3–7).

    ``groups`` is a list of ``{"kind": "general" | "constraint", "verdicts":
    [1, 0, -1, ...], "threshold": θ or None}`` (``threshold`` may be omitted;
    ``None`` means θ = number of items).  Returns, in percent (0–100):

    * ``general`` — mean general-group score (eq. 4), ``None`` without general groups;
    * ``constraint`` — mean constraint-group score (eq. 5), ``None`` without constraint groups;
    * ``overall`` — mean over *all* groups, each group weighted equally (eq. 6),
      ``None`` when there is no group at all;
    * ``precision`` — 100 · N_correct / (N_correct + N_incorrect) over all items
      of all groups (eq. 7), ``None`` when no item was mentioned;

    plus the integer counts ``correct``, ``omitted`` and ``incorrect``. ``variant``: the group
    score's (:func:`group_score`).
    """
    check_choice(variant, "variant", GROUP_SCORE_VARIANTS)
    if isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, Sequence):
        fail(f"groups must be a list of group dicts; got {type(groups).__name__}")
    per_kind: dict[str, list[float]] = {kind: [] for kind in _KINDS}
    counts = np.zeros(3, dtype=np.int64)  # incorrect, omitted, correct
    for g, group in enumerate(groups):
        if not isinstance(group, Mapping):
            fail(f"groups[{g}] must be a dict; got {type(group).__name__}")
        extra = set(group) - _GROUP_KEYS
        if extra:
            hint = " (DeepSynth-Eval weights every group equally; per-group weights are not defined)" if "weight" in extra else ""
            fail(f"groups[{g}] has unexpected key(s) {sorted(extra)}{hint}")
        if "kind" not in group or "verdicts" not in group:
            fail(f"groups[{g}] must have the keys 'kind' and 'verdicts'")
        kind = check_choice(group["kind"], f"groups[{g}]['kind']", _KINDS)
        verdicts = _verdicts(group["verdicts"], f"groups[{g}]['verdicts']")
        theta = _threshold(group.get("threshold"), verdicts.size, f"groups[{g}]['threshold']")
        per_kind[kind].append(group_score(verdicts, theta, variant=variant))
        counts += np.bincount((verdicts + 1).astype(np.intp), minlength=3)
    incorrect, omitted, correct = (int(c) for c in counts)
    mentioned = correct + incorrect
    return {
        "general": _mean_percent(per_kind["general"]),
        "constraint": _mean_percent(per_kind["constraint"]),
        "overall": _mean_percent(per_kind["general"] + per_kind["constraint"]),
        "precision": 100.0 * correct / mentioned if mentioned else None,
        "correct": correct,
        "omitted": omitted,
        "incorrect": incorrect,
    }
