"""Whole numbers from outside are ASCII digits only, with one message naming the field: ``int()`` and
``str.isdigit`` also take superscripts ("²", which ``int`` then refuses with its own text), mathematical
digits ("𝟓" read as 5) and other scripts' digits ("٣" read as 3)."""

import pytest
from rest_framework.test import APIClient

from core.bounded import ascii_digits, integer_check, integer_param, whole_number
from annotation.models import Assignment
from tests.annotation_factories import agreement_project

ODD_DIGITS = ["²", "𝟓", "٣", "５", "1_0", "3\u0663"]


@pytest.mark.parametrize("raw", ODD_DIGITS)
def test_a_digit_that_is_not_ascii_is_refused_with_one_message(raw):
    assert not ascii_digits(raw)
    for read in (lambda: whole_number("count", raw), lambda: integer_check("count", raw),
                 lambda: integer_param({"count": raw}, "count")):
        with pytest.raises(ValueError) as error:
            read()
        assert str(error.value) == f"count: expected a whole number (digits 0-9), got {raw!r}"


def test_ascii_digits_are_read():
    assert ascii_digits("0123456789") and not ascii_digits("")
    assert whole_number("count", " 12 ") == 12 and integer_param({"count": "7"}, "count") == 7


@pytest.mark.parametrize("raw", ODD_DIGITS)
def test_claiming_with_a_count_in_odd_digits_is_a_400_naming_count_and_claims_nothing(owner, alice, bob, raw):
    project = agreement_project(owner, [alice, bob], labels=["correct"] * 4, overlap=2)
    client = APIClient()
    client.force_authenticate(alice)
    response = client.post(f"/api/projects/{project.pk}/next/?count={raw}")
    assert response.status_code == 400
    assert response.json() == {"count": [f"expected a whole number (digits 0-9), got {raw!r}"]}
    assert not Assignment.objects.filter(project=project, user=alice).exists()
    claimed = client.post(f"/api/projects/{project.pk}/next/?count=3")
    assert claimed.status_code == 200 and len(claimed.json()["claims"]) == 3


@pytest.mark.parametrize("raw", ["٣", "𝟓", "2_0"])
def test_an_integer_filter_in_odd_digits_is_a_400_naming_it(owner, raw):
    client = APIClient()
    client.force_authenticate(owner)
    response = client.get(f"/api/surveys/?year={raw}")
    assert response.status_code == 400
    assert response.json() == {"year": [f"{raw!r} is not a valid value for year"]}
