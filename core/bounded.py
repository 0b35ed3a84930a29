"""Whole numbers from outside — form fields, serializer fields, query parameters — within the
range their use can hold, refused with a message naming the field before anything reads them.

A number beyond 64 bits makes SQLite raise ``OverflowError``, PostgreSQL a ``DataError`` on a
small column, and ``timedelta`` its own ``OverflowError``: each was a 500. The one rule is
``integer_check``; the fields below are that rule in each framework's clothes:

* ``BoundedIntegerField`` (forms) and ``BoundedIntegerSerializerField`` (DRF): a value
  (default 0 … ``INT32_MAX``, the portable ``IntegerField`` column);
* ``IdChoiceField`` / ``IdMultipleChoiceField`` (forms) and ``IdRelatedField`` (DRF): a row
  chosen by its id, refused without a query unless it is an id (1 … ``MAX_ID``);
* ``bounded_formfield``, the ``formfield_callback`` of forms built from models.

``tests/security/test_integer_fields.py`` walks every integer form and serializer field of the
project with 10^25, -1 and "x".
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from rest_framework import serializers

from .converters import MAX_ID

INT32_MAX = 2**31 - 1  # PostgreSQL's integer; the widest column every database gives an IntegerField
SMALL_MAX = 2**15 - 1  # a (Positive)SmallIntegerField
HOLD_SECONDS_MAX = 366 * 24 * 3600  # the longest an item may stay claimed: a year


WHOLE_NUMBER_MAX_DIGITS = 100  # longer text is not read as a number at all


def ascii_digits(text: str) -> bool:
    """Whether ``text`` is one or more of the digits 0–9 and nothing else. ``str.isdigit`` and ``int``
    also take superscripts ("²", which ``int`` then refuses), mathematical digits ("𝟓") and other
    scripts' digits ("٣"): not a number anybody typed on purpose into a field of ours."""
    return bool(text) and text.isascii() and text.isdigit()


def not_whole_number(name: str, value) -> ValueError:
    """The one message for a whole number that is not one (every integer input says the same)."""
    return ValueError(f"{name}: expected a whole number (digits 0-9), got {str(value)[:40]!r}")


def whole_number(name: str, value) -> int:
    """``value`` (an int, an integral float, or decimal text of at most ``WHOLE_NUMBER_MAX_DIGITS``
    ASCII digits, ``ascii_digits``) as an int, however large; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool):
        raise not_whole_number(name, value)
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if len(digits) > WHOLE_NUMBER_MAX_DIGITS or not ascii_digits(digits):
            raise not_whole_number(name, value)
        return int(text)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    raise not_whole_number(name, value)


def integer_check(name: str, value, *, min_value: int = 0, max_value: int = INT32_MAX) -> int:
    """``value`` (see ``whole_number``) as an int within [min_value, max_value]; ``ValueError``
    naming ``name`` otherwise."""
    value = whole_number(name, value)
    if not min_value <= value <= max_value:
        raise ValueError(f"{name}: {value if abs(value) < 10**21 else 'a number that large'} is out of range "
                         f"({min_value} to {max_value})")
    return value


def integer_param(params, name: str, *, min_value: int = 0, max_value: int = INT32_MAX,
                  default: int | None = None) -> int | None:
    """An optional whole-number query parameter (``default`` when absent or empty)."""
    raw = params.get(name, "")
    if raw in (None, ""):
        return default
    return integer_check(name, raw, min_value=min_value, max_value=max_value)


def id_check(name: str, value) -> int:
    return integer_check(name, value, min_value=1, max_value=MAX_ID)


class BoundedIntegerField(forms.IntegerField):
    """A form's whole number within [min_value, max_value] (default, or ``None``: 0 … ``INT32_MAX``)."""

    def __init__(self, *, min_value: int | None = 0, max_value: int | None = INT32_MAX, **kwargs) -> None:
        super().__init__(min_value=0 if min_value is None else min_value,
                         max_value=INT32_MAX if max_value is None else max_value, **kwargs)

    def to_python(self, value):  # any size: the min/max validators then say what the range is
        if value in self.empty_values:
            return None
        try:
            return whole_number(self.label or "value", value)
        except ValueError:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None


class BoundedIntegerSerializerField(serializers.IntegerField):
    """An API's whole number within [min_value, max_value] (default 0 … ``INT32_MAX``)."""

    def __init__(self, *, min_value: int | None = 0, max_value: int | None = INT32_MAX, **kwargs) -> None:
        super().__init__(min_value=0 if min_value is None else min_value,
                         max_value=INT32_MAX if max_value is None else max_value, **kwargs)

    def to_internal_value(self, data):  # any size: the min/max validators then say what the range is
        try:
            return whole_number(self.field_name or "value", data)
        except ValueError:
            self.fail("invalid")


def bounded_formfield(model_field, **kwargs):
    """A ``formfield_callback`` for forms built from models (``fields_for_model``, ``ModelForm``):
    an integer column becomes a ``BoundedIntegerField`` within the range every database gives
    that column type; other fields are the model's own."""
    kind = model_field.get_internal_type()
    if isinstance(model_field, models.IntegerField) and not model_field.choices and \
            kind in BaseDatabaseOperations.integer_field_ranges and not kind.endswith("AutoField"):
        low, high = BaseDatabaseOperations.integer_field_ranges[kind]
        kwargs = {"form_class": BoundedIntegerField, "min_value": max(low, -MAX_ID - 1), "max_value": high, **kwargs}
    return model_field.formfield(**kwargs)


class _IdChoice:
    """For model choice fields: a value that is no id is an invalid choice, found without a query."""

    def _id_or_invalid(self, value):
        try:
            return id_check("id", value)
        except ValueError:
            raise ValidationError(self.error_messages["invalid_choice"], code="invalid_choice",
                                  params={"value": str(value)[:40]}) from None


class IdChoiceField(_IdChoice, forms.ModelChoiceField):
    """``ModelChoiceField`` over rows with integer ids."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        if not isinstance(value, self.queryset.model):
            value = self._id_or_invalid(value)
        return super().to_python(value)


class IdMultipleChoiceField(_IdChoice, forms.ModelMultipleChoiceField):
    """``ModelMultipleChoiceField`` over rows with integer ids."""

    def _check_values(self, value):
        try:
            values = frozenset(value)
        except TypeError:
            raise ValidationError(self.error_messages["invalid_list"], code="invalid_list") from None
        for each in values:
            try:
                id_check("id", each)
            except ValueError:
                raise ValidationError(self.error_messages["invalid_pk_value"], code="invalid_pk_value",
                                      params={"pk": str(each)[:40]}) from None
        return super()._check_values(value)


class IdRelatedField(serializers.PrimaryKeyRelatedField):
    """``PrimaryKeyRelatedField`` over rows with integer ids; a value that is no id is refused
    without a query."""

    def to_internal_value(self, data):
        try:
            data = id_check(self.field_name or "id", data)
        except ValueError:
            if isinstance(data, bool) or not isinstance(data, (int, str)):
                self.fail("incorrect_type", data_type=type(data).__name__)
            self.fail("does_not_exist", pk_value=str(data)[:40])
        return super().to_internal_value(data)
