"""Reading one field of a native JSONL line: its JSON type, the limits of the model field it is stored in.

Errors name the file, line and dotted field path (``Record.fail``); what PostgreSQL cannot store
(NUL, lone surrogates, NaN, Infinity) is refused wherever it sits in the line.
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any

from django.db import connection, models

from .base import Record


def objects(rec: Record, name: str) -> list[Record]:
    return [rec.child(value, f"{name}[{i}]") for i, value in enumerate(rec.get(name, list, default=[]))]


def only(rec: Record, allowed: Iterable[str]) -> None:
    allowed = set(allowed)
    for name in rec.data:
        if name not in allowed:
            raise rec.fail("unknown field (docs/formats.md lists the fields of format version 1)", name)


def _bad_text(text: str) -> str:
    if "\x00" in text:
        return "contains a NUL character, which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired UTF-16 surrogate escape, which is not text"
    return ""


def check_scalars(rec: Record) -> None:
    """Reject what PostgreSQL cannot store wherever it sits: NUL, lone surrogates, NaN and Infinity."""
    stack: list[tuple[Any, str]] = [(rec.data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for name, child in value.items():
                child_path = f"{path}.{name}" if path else name
                if problem := _bad_text(name):
                    raise rec.fail(f"field name {problem}", child_path)
                stack.append((child, child_path))
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(value))
        elif isinstance(value, str):
            if problem := _bad_text(value):
                raise rec.fail(problem, path)
        elif isinstance(value, float) and not math.isfinite(value):
            raise rec.fail("NaN and Infinity are not numbers this format accepts", path)


@dataclass(frozen=True)
class _Rule:
    """How one model field is read: its JSON type, default and limits (length, range, choices)."""

    name: str
    attname: str
    kind: type  # str, int, float, bool, list, dict, or date (an ISO string in the file)
    default: Callable[[], Any]
    required: bool
    max_length: int | None = None
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    label: str = ""


@cache
def _rules(model: type[models.Model], names: tuple[str, ...]) -> tuple[_Rule, ...]:
    rules = []
    for name in names:
        f = model._meta.get_field(name)
        common = {"name": name, "attname": f.attname, "default": f.get_default,
                  "required": not (f.blank or f.null or f.has_default())}
        if isinstance(f, models.JSONField):
            rules.append(_Rule(kind=type(f.get_default()), **common))
        elif isinstance(f, (models.BooleanField, models.FloatField)):
            rules.append(_Rule(kind=bool if isinstance(f, models.BooleanField) else float, **common))
        elif isinstance(f, models.IntegerField):
            low, high = connection.ops.integer_field_range(f.get_internal_type())
            rules.append(_Rule(kind=int, low=low, high=high, **common))
        elif isinstance(f, models.DateField):
            rules.append(_Rule(kind=date, **common))
        else:
            choices = tuple(str(choice) for choice, _ in f.flatchoices) if f.choices else ()
            rules.append(_Rule(kind=str, max_length=f.max_length, choices=choices, label=str(f.verbose_name), **common))
    return tuple(rules)


def _clean_value(rec: Record, rule: _Rule) -> Any:
    """One field, checked against the model field it is stored in (type, length, range, choices)."""
    name = rule.name
    if rule.kind is date:
        value = rec.get(name, str, required=rule.required)
        try:
            return None if value in (None, "") else date.fromisoformat(value)
        except ValueError:
            raise rec.fail(f"expected a date as YYYY-MM-DD, got {value!r}", name) from None
    if rule.kind is not str:
        value = rec.get(name, rule.kind, required=rule.required, default=None)
        if value is None:
            return rule.default()
        if rule.kind is float:
            return float(value)
        too_low = rule.low is not None and value < rule.low
        if rule.kind is int and (too_low or rule.high is not None and value > rule.high):
            raise rec.fail(f"must be between {rule.low} and {rule.high}", name)
        return value
    value = rec.text(name, required=rule.required, default=None)
    if value is None:
        return rule.default()
    if rule.max_length and len(value) > rule.max_length:
        raise rec.fail(f"longer than {rule.max_length} characters ({len(value)})", name)
    if rule.choices and value not in rule.choices:
        raise rec.fail(f"unknown {rule.label} {value!r}; expected one of: {', '.join(rule.choices)}", name)
    return value


def clean(rec: Record, model: type[models.Model], names: tuple[str, ...]) -> dict[str, Any]:
    return {rule.attname: _clean_value(rec, rule) for rule in _rules(model, names)}


def require(rec: Record, ok: bool, name: str, message: str) -> None:
    """Checks the database would make (CheckConstraints), made first so the error names the line."""
    if not ok:
        raise rec.fail(message, name)
