"""Shared validation helpers: strict types, named errors, no silent coercion."""

import numpy as np
import pytest

from scoring.metrics._validate import as_binary, as_numeric, check_choice, check_int, check_real, encode_labels


class TestAsNumeric:
    def test_accepts_lists_and_arrays(self):
        assert as_numeric([1, 2.5], "x").tolist() == [1.0, 2.5]
        assert as_numeric(np.arange(3), "x").dtype == float

    @pytest.mark.parametrize(
        ("value", "kwargs", "message"),
        [
            (["1", "2"], {}, "only numbers"),
            ([1, None], {}, "found None at position 1"),
            ([True, False], {}, "not booleans"),
            ([1, float("nan")], {}, "non-finite value .* at position 1"),
            ([1, float("inf")], {"allow_nan": True}, "non-finite"),
            ([[1, 2], [3]], {"ndim": 2}, "rectangular"),
            ([[1, 2]], {}, "1-dimensional"),
            ([], {"allow_empty": False}, "empty"),
            ("123", {}, "array of numbers"),
            (None, {}, "array of numbers"),
        ],
    )
    def test_rejects(self, value, kwargs, message):
        with pytest.raises(ValueError, match=message):
            as_numeric(value, "x", **kwargs)

    def test_missing_values_when_allowed(self):
        out = as_numeric([[1, None]], "x", ndim=2, allow_missing=True)
        assert np.isnan(out[0, 1])
        assert np.isnan(as_numeric([1.0, np.nan], "x", allow_nan=True)[1])

    def test_names_argument_in_message(self):
        with pytest.raises(ValueError, match="^scores "):
            as_numeric(["a"], "scores")


class TestAsBinary:
    def test_accepts(self):
        assert as_binary([True, False], "f").tolist() == [True, False]
        assert as_binary([1, 0], "f").tolist() == [True, False]
        assert as_binary([], "f").size == 0

    @pytest.mark.parametrize("value", [[1, 2], ["yes"], [0.5], [None]])
    def test_rejects(self, value):
        with pytest.raises(ValueError, match="^f must contain"):
            as_binary(value, "f")


def test_encode_labels():
    assert encode_labels(["b", "a", "b"], "l", ("a", "b")).tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match=r"\['c'\] outside the allowed set"):
        encode_labels(["a", "c"], "l", ("a", "b"))
    with pytest.raises(ValueError, match="position 1"):
        encode_labels(["a", 1], "l", ("a", "b"))


def test_scalar_checks():
    assert check_real(0.5, "t", low=0, high=1) == 0.5
    assert check_int(3, "n", low=1) == 3
    assert check_choice("a", "mode", ("a", "b")) == "a"
    for bad in (True, "1", float("nan"), None):
        with pytest.raises(ValueError, match="^t must be (a real number|finite)"):
            check_real(bad, "t")
    with pytest.raises(ValueError, match="> 0"):
        check_real(0.0, "t", low=0.0, low_open=True)
    with pytest.raises(ValueError, match="integer"):
        check_int(2.0, "n")
    with pytest.raises(ValueError, match="one of"):
        check_choice(["a"], "mode", ("a", "b"))
