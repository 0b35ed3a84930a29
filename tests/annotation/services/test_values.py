"""How a label's value is coded for agreement, and the declared measurement level."""

import pytest

from annotation.services.values import consensus_key, label_level_clean, label_numbers, preference_outcome


@pytest.mark.parametrize("choice, left, right, expected", [
    ("left", 11, 12, "first"), ("right", 12, 11, "first"),  # the same judgement shown either way round
    ("right", 11, 12, "second"), ("left", 12, 11, "second"), ("tie", 12, 11, "tie"),
])
def test_a_preference_is_the_outcome_of_its_pair_whatever_the_sides(choice, left, right, expected):
    assert preference_outcome(choice, left, right) == expected


def test_the_pair_is_ordered_by_system_so_first_is_the_same_system_on_every_item():
    # report 40 is by system 1, report 7 by system 2: system 1's report comes first although its id is larger
    systems = {40: 1, 7: 2}
    assert preference_outcome("left", 40, 7, order=systems) == "first"
    assert preference_outcome("left", 7, 40, order=systems) == "second"
    value = {"choice": "right", "left_report_id": 7, "right_report_id": 40}
    assert consensus_key("pairwise", value, order=systems) == "first"
    swapped = {"choice": "left", "left_report_id": 40, "right_report_id": 7}
    assert consensus_key("pairwise", swapped, order=systems) == consensus_key("pairwise", value, order=systems)


def test_the_declared_level_is_checked_against_the_label_set():
    assert label_level_clean(kind="agreement", level="ordinal", label_set={"label": ["low", "high"]}) == "ordinal"
    assert label_level_clean(kind="agreement", level="interval", label_set={"label": ["1", "2.5"]}) == "interval"
    with pytest.raises(ValueError, match=r"label_level: interval labels must be numbers; 'low' is not"):
        label_level_clean(kind="agreement", level="interval", label_set={"label": ["low", "2"]})
    with pytest.raises(ValueError, match="label_level: only agreement projects"):
        label_level_clean(kind="pairwise", level="ordinal", label_set={"choice": ["left", "right", "tie"]})
    with pytest.raises(ValueError, match="label_level: 'ratio' is not one of"):
        label_level_clean(kind="agreement", level="ratio", label_set={"label": ["1", "2"]})


def test_label_numbers_follow_the_declared_level_never_the_values():
    label_set = {"label": ["irrelevant", "partial", "relevant"]}
    assert label_numbers(level="ordinal", label_set=label_set, labels=["relevant", "irrelevant"]) == [2.0, 0.0]
    assert label_numbers(level="ordinal", label_set=label_set, labels=["other"]) is None
    assert label_numbers(level="interval", label_set={"label": ["1", "5"]}, labels=["5", "1"]) == [5.0, 1.0]
    assert label_numbers(level="nominal", label_set={"label": ["0", "1", "2"]}, labels=["0", "2"]) is None
