"""DeepSynth-Eval checklist scoring (paper §3.4, eq. 1–7)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.metrics import checklist_scores, group_score, system_precision, threshold_from_clip_factor


def _verdicts(correct: int, omitted: int, incorrect: int) -> list[int]:
    return [1] * correct + [0] * omitted + [-1] * incorrect


class TestPaperExample:
    """§3.4: a group with N_k = 15 items and θ_k = 10 saturates at a reward of 10."""

    def test_reward_of_ten_is_full_credit(self):
        assert group_score(_verdicts(10, 5, 0), threshold=10) == 1.0

    def test_remaining_items_add_nothing(self):
        assert group_score(_verdicts(15, 0, 0), threshold=10) == 1.0

    def test_below_threshold_is_proportional(self):
        assert group_score(_verdicts(8, 7, 0), threshold=10) == pytest.approx(0.8)

    def test_incorrect_items_subtract(self):
        # S_k = 12 - 3 = 9 → 9/10
        assert group_score(_verdicts(12, 0, 3), threshold=10) == pytest.approx(0.9)

    def test_negative_reward_is_floored_at_zero(self):
        assert group_score(_verdicts(2, 3, 10), threshold=10) == 0.0

    def test_default_threshold_is_group_size(self):
        assert group_score(_verdicts(6, 9, 0)) == pytest.approx(6 / 15)


def test_checklist_scores_hand_computed():
    groups = [
        {"kind": "general", "verdicts": _verdicts(10, 5, 0), "threshold": 10},  # 1.0
        {"kind": "general", "verdicts": [1, 0, 0, -1], "threshold": None},  # 0/4 = 0.0
        {"kind": "constraint", "verdicts": [1, 1, 0, 0, 0], "threshold": 4},  # 2/4 = 0.5
    ]
    out = checklist_scores(groups)
    assert out["general"] == pytest.approx(50.0)
    assert out["constraint"] == pytest.approx(50.0)
    assert out["overall"] == pytest.approx(100 * (1.0 + 0.0 + 0.5) / 3)  # eq. 6: every group counts once
    assert out["correct"] == 13 and out["omitted"] == 10 and out["incorrect"] == 1
    assert out["precision"] == pytest.approx(100 * 13 / 14)  # eq. 7, pooled over items


def test_overall_weights_groups_not_items():
    big = {"kind": "general", "verdicts": [1] * 100}
    small = {"kind": "constraint", "verdicts": [0]}
    assert checklist_scores([big, small])["overall"] == pytest.approx(50.0)


def test_undefined_parts_are_none():
    out = checklist_scores([{"kind": "general", "verdicts": [0, 0, 0]}])
    assert out["constraint"] is None
    assert out["precision"] is None  # nothing mentioned
    assert out["general"] == 0.0 and out["overall"] == 0.0
    empty = checklist_scores([])
    assert empty == {
        "general": None,
        "constraint": None,
        "overall": None,
        "precision": None,
        "correct": 0,
        "omitted": 0,
        "incorrect": 0,
    }


def test_threshold_key_may_be_omitted():
    assert checklist_scores([{"kind": "constraint", "verdicts": [1, 0]}])["constraint"] == 50.0


def test_threshold_from_clip_factor_matches_released_scorer():
    assert threshold_from_clip_factor(15, 1.0) == 15.0
    assert threshold_from_clip_factor(15, 0.8) == pytest.approx(12.0)
    verdicts = _verdicts(9, 5, 1)
    # released code: min(reward / (clip * sum_of_rewards), 1), unit rewards
    released = min(sum(verdicts) / (0.8 * len(verdicts)), 1.0)
    assert group_score(verdicts, threshold_from_clip_factor(len(verdicts), 0.8)) == pytest.approx(released)


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([{"kind": "general", "verdicts": [1, 2]}], "1 \\(correct\\), 0 \\(omitted\\) or -1"),
        ([{"kind": "general", "verdicts": []}], "must not be empty"),
        ([{"kind": "general", "verdicts": [1, float("nan")]}], "non-finite"),
        ([{"kind": "general", "verdicts": ["1"]}], "numbers"),
        ([{"kind": "summary", "verdicts": [1]}], "kind"),
        ([{"kind": "general", "verdicts": [1, 0], "threshold": 3}], "must not exceed"),
        ([{"kind": "general", "verdicts": [1, 0], "threshold": 0}], "threshold"),
        ([{"kind": "general", "verdicts": [1, 0], "threshold": -1}], "threshold"),
        ([{"kind": "general", "verdicts": [1], "weight": 2.0}], "equally"),
        ([{"verdicts": [1]}], "'kind' and 'verdicts'"),
        (["general"], "must be a dict"),
        ({"kind": "general", "verdicts": [1]}, "list of group dicts"),
    ],
)
def test_invalid_input_raises(groups, message):
    with pytest.raises(ValueError, match=message):
        checklist_scores(groups)


@pytest.mark.parametrize(("n", "factor"), [(0, 0.8), (10, 0.0), (10, 1.2), (10, float("nan")), (2.5, 0.8)])
def test_invalid_clip_factor(n, factor):
    with pytest.raises(ValueError, match=("clip_factor" if n == 10 else "n_items") + " must be"):
        threshold_from_clip_factor(n, factor)


group_strategy = st.builds(
    lambda kind, verdicts, frac: {"kind": kind, "verdicts": verdicts, "threshold": None if frac is None else max(frac * len(verdicts), 0.5)},
    st.sampled_from(["general", "constraint"]),
    st.lists(st.sampled_from([-1, 0, 1]), min_size=1, max_size=20),
    st.one_of(st.none(), st.floats(min_value=0.05, max_value=1.0)),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(group_strategy, max_size=8), st.randoms(use_true_random=False))
def test_properties(groups, rnd):
    groups = [g for g in groups if g["threshold"] is None or g["threshold"] <= len(g["verdicts"])]
    out = checklist_scores(groups)
    for key in ("general", "constraint", "overall", "precision"):
        assert out[key] is None or 0.0 <= out[key] <= 100.0
    assert out["correct"] + out["omitted"] + out["incorrect"] == sum(len(g["verdicts"]) for g in groups)
    shuffled = list(groups)
    rnd.shuffle(shuffled)
    again = checklist_scores(shuffled)
    for key, value in out.items():
        assert (value is None and again[key] is None) or math.isclose(value, again[key], abs_tol=1e-9)
    if out["general"] is not None and out["constraint"] is not None:
        n_gen = sum(g["kind"] == "general" for g in groups)
        expected = (out["general"] * n_gen + out["constraint"] * (len(groups) - n_gen)) / len(groups)
        assert out["overall"] == pytest.approx(expected)


def test_numpy_verdicts_accepted():
    assert group_score(np.array([1, 1, 0, -1]), 2) == 0.5


def test_released_checklists_against_released_scorer_formula(datasets):
    """The released example tasks, scored with synthetic verdicts, agree with the released formula.

    A paper group is a released ``checklist`` entry (its sub-groups pooled); θ = clip_factor · N.
    The released scorer does not floor at 0 (the paper does), so the reference adds the floor.
    """
    import json

    rng = np.random.default_rng(0)
    lines = (datasets / "deepsynth-eval" / "example_gen_result.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        task = json.loads(line)
        groups, reference = [], {"general": [], "constraint": []}
        for group in task["checklist"]:
            rewards = [req["reward"] for sub in group["sub_groups"] for req in sub["requirements"]]
            assert set(rewards) == {1.0} and group["weight"] == 1.0  # unit rewards, equal weights
            verdicts = rng.choice([1, 0, -1], size=len(rewards), p=[0.5, 0.35, 0.15]).tolist()
            kind = "constraint" if group["strict"] else "general"
            groups.append({"kind": kind, "verdicts": verdicts, "threshold": threshold_from_clip_factor(len(rewards), group["clip_factor"])})
            released = min(sum(verdicts) / (group["clip_factor"] * sum(rewards)), 1.0)
            reference[kind].append(max(released, 0.0))
        out = checklist_scores(groups)
        assert out["general"] == pytest.approx(100 * np.mean(reference["general"]))
        assert out["constraint"] == pytest.approx(100 * np.mean(reference["constraint"]))
        assert out["overall"] == pytest.approx(100 * np.mean(reference["general"] + reference["constraint"]))


class TestSystemPrecision:
    """Eq. 7 for a system over several reports: pooled item counts (the paper's), or the mean of report values."""

    def test_released_tasks_pooled_and_per_report_against_numpy(self, datasets):
        """The released example tasks' checklists, judged with synthetic verdicts whose mention rate
        differs per task, so that pooling weighs tasks by their mentioned items and averaging does not."""
        import json

        rng = np.random.default_rng(7)
        lines = (datasets / "deepsynth-eval" / "example_gen_result.jsonl").read_text(encoding="utf-8").splitlines()
        counts = []
        for k, line in enumerate(lines):
            n_items = sum(len(sub["requirements"]) for group in json.loads(line)["checklist"] for sub in group["sub_groups"])
            mentioned = 0.1 + 0.25 * k
            verdicts = rng.choice([1, 0, -1], size=n_items, p=[mentioned * (0.9 - 0.2 * k), 1 - mentioned,
                                                               mentioned * (0.1 + 0.2 * k)])
            counts.append(((verdicts == 1).sum(), (verdicts == -1).sum()))
            out = checklist_scores([{"kind": "general", "verdicts": verdicts.tolist()}])
            assert (out["correct"], out["incorrect"]) == counts[-1]
        counts = np.array(counts, dtype=float)
        correct, incorrect = counts[:, 0], counts[:, 1]
        pooled = system_precision(correct.astype(int).tolist(), incorrect.astype(int).tolist())
        assert pooled == pytest.approx(100 * correct.sum() / (correct.sum() + incorrect.sum()))
        per_report = system_precision(correct, incorrect, variant="per_report")
        assert per_report == pytest.approx(np.mean(100 * correct / (correct + incorrect)))
        assert abs(pooled - per_report) > 1  # the two readings differ on these tasks

    def test_reports_without_a_mention(self):
        assert system_precision([0, 3], [0, 1], variant="per_report") == pytest.approx(75.0)
        assert system_precision([0, 3], [0, 1]) == pytest.approx(75.0)
        assert system_precision([0, 0], [0, 0]) is None
        assert system_precision([0], [0], variant="per_report") is None

    @pytest.mark.parametrize("correct, incorrect, variant, message", [
        ([1, 2], [1], "pooled", "one count per report"),
        ([1.5], [1], "pooled", "must be counts"),
        ([-1], [1], "pooled", "must be counts"),
        ([1], [1], "mean", "variant"),
        ([], [], "pooled", "correct"),
    ])
    def test_invalid_input_raises(self, correct, incorrect, variant, message):
        with pytest.raises(ValueError, match=message):
            system_precision(correct, incorrect, variant=variant)
