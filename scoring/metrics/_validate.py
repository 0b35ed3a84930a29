"""Shared input validation for :mod:`scoring.metrics`.

Every public metric funnels its inputs through these helpers so that bad
input fails the same way everywhere: a :class:`ValueError` whose message names
the argument and the problem (wrong length, label outside the allowed set,
NaN where not allowed, negative threshold, ...).  Nothing here coerces
silently: strings are never parsed as numbers, booleans are never accepted
where a count or score is expected unless the caller opts in, and ``None`` is
only accepted where the caller says it is a legal value.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence, Sized
from typing import Any

import numpy as np

__all__ = [
    "fail",
    "check_choice",
    "check_real",
    "check_int",
    "as_numeric",
    "as_binary",
    "encode_labels",
    "check_same_length",
    "check_range",
]


def fail(message: str) -> None:
    """Raise the library's validation error."""
    raise ValueError(message)


def _is_real_scalar(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``; raise otherwise."""
    options = tuple(choices)
    if not isinstance(value, (str, type(None), numbers.Number)) or value not in options:
        fail(f"{name} must be one of {', '.join(repr(c) for c in options)}; got {value!r}")
    return value


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Validate a finite real scalar within optional bounds and return it as float."""
    if not _is_real_scalar(value):
        fail(f"{name} must be a real number; got {value!r} ({type(value).__name__})")
    out = float(value)
    if not np.isfinite(out):
        fail(f"{name} must be finite; got {value!r}")
    if low is not None and (out < low or (low_open and out == low)):
        bound = ">" if low_open else ">="
        fail(f"{name} must be {bound} {low}; got {value!r}")
    if high is not None and (out > high or (high_open and out == high)):
        bound = "<" if high_open else "<="
        fail(f"{name} must be {bound} {high}; got {value!r}")
    return out


def check_int(value: Any, name: str, *, low: int | None = None) -> int:
    """Validate an integer scalar (bools rejected) with an optional lower bound."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        fail(f"{name} must be an integer; got {value!r} ({type(value).__name__})")
    out = int(value)
    if low is not None and out < low:
        fail(f"{name} must be >= {low}; got {out}")
    return out


def _first_bad_index(mask: np.ndarray) -> tuple[int, ...] | int:
    index = np.argwhere(mask)[0]
    return int(index[0]) if index.size == 1 else tuple(int(i) for i in index)


def _object_to_float(arr: np.ndarray, name: str, allow_missing: bool, allow_bool: bool) -> np.ndarray:
    """Convert an object array element-wise, rejecting non-numbers by position."""
    flat = arr.ravel()
    out = np.empty(flat.shape, dtype=float)
    for k, item in enumerate(flat):  # object arrays only: mixed Python values
        if item is None and allow_missing:
            out[k] = np.nan
        elif _is_real_scalar(item) or (allow_bool and isinstance(item, (bool, np.bool_))):
            out[k] = float(item)
        else:
            pos = np.unravel_index(k, arr.shape)
            pos_txt = pos[0] if len(pos) == 1 else tuple(int(p) for p in pos)
            fail(f"{name} must contain only numbers; found {item!r} at position {pos_txt}")
    return out.reshape(arr.shape)


def as_numeric(
    values: Any,
    name: str,
    *,
    ndim: int | None = 1,
    allow_empty: bool = True,
    allow_nan: bool = False,
    allow_bool: bool = False,
    allow_missing: bool = False,
) -> np.ndarray:
    """Return ``values`` as a float array after strict type and shape checks.

    ``allow_missing`` turns ``None`` entries into NaN (and implies NaN is
    allowed); strings are always rejected.
    """
    if isinstance(values, (str, bytes)) or values is None:
        fail(f"{name} must be an array of numbers; got {type(values).__name__}")
    try:
        arr = np.asarray(values)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name} must be a rectangular array of numbers ({exc})") from None
    if arr.dtype == object:
        arr = _object_to_float(arr, name, allow_missing, allow_bool)
    elif arr.dtype.kind == "b":
        if not allow_bool:
            fail(f"{name} must contain numbers, not booleans")
        arr = arr.astype(float)
    elif arr.dtype.kind in "iuf":
        arr = arr.astype(float, copy=False)
    else:
        fail(f"{name} must contain only numbers; got array of dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        if not (arr.size == 0 and ndim == 2 and arr.ndim == 1):
            fail(f"{name} must be {ndim}-dimensional; got shape {arr.shape}")
        arr = arr.reshape(0, 0)
    if not allow_empty and arr.size == 0:
        fail(f"{name} must not be empty")
    if arr.size:
        bad = np.isinf(arr) if (allow_nan or allow_missing) else ~np.isfinite(arr)
        if bad.any():
            where = _first_bad_index(bad)
            fail(f"{name} contains a non-finite value ({arr[bad][0]!r}) at position {where}")
    return arr


def as_binary(values: Any, name: str, *, ndim: int = 1) -> np.ndarray:
    """Return a boolean array from booleans or the integers 0/1 (nothing else)."""
    if isinstance(values, (str, bytes)) or values is None:
        fail(f"{name} must be an array of booleans; got {type(values).__name__}")
    arr = np.asarray(values)
    if arr.dtype == object:
        arr = _object_to_float(arr, name, allow_missing=False, allow_bool=True)
    if arr.size == 0:
        return np.zeros((0,) * ndim, dtype=bool)
    if arr.ndim != ndim:
        fail(f"{name} must be {ndim}-dimensional; got shape {arr.shape}")
    if arr.dtype.kind == "b":
        return arr
    if arr.dtype.kind not in "iuf":
        fail(f"{name} must contain booleans (or 0/1); got dtype {arr.dtype}")
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        fail(f"{name} must contain only True/False (or 0/1); found {arr[bad][0]!r} at position {_first_bad_index(bad)}")
    return arr.astype(bool)


def encode_labels(values: Any, name: str, allowed: Sequence[str]) -> np.ndarray:
    """Map string labels to their index in ``allowed``; reject anything else."""
    if isinstance(values, (str, bytes)) or values is None:
        fail(f"{name} must be a sequence of labels; got {type(values).__name__}")
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        fail(f"{name} must be a flat sequence of labels; got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    non_str = np.fromiter((not isinstance(v, str) for v in arr), dtype=bool, count=arr.size)
    if non_str.any():
        k = int(np.argmax(non_str))
        fail(f"{name} must contain only the labels {list(allowed)}; found {arr[k]!r} at position {k}")
    uniques, inverse = np.unique(arr.astype(str), return_inverse=True)
    lookup = {label: i for i, label in enumerate(allowed)}
    unknown = [u for u in uniques.tolist() if u not in lookup]
    if unknown:
        fail(f"{name} contains label(s) {unknown} outside the allowed set {list(allowed)}")
    codes = np.array([lookup[u] for u in uniques.tolist()], dtype=np.intp)
    return codes[inverse]


def check_same_length(name_a: str, a: Sized, name_b: str, b: Sized) -> None:
    """Raise if two sequences differ in length."""
    if len(a) != len(b):
        fail(f"{name_a} and {name_b} must have the same length; got {len(a)} and {len(b)}")


def check_range(arr: np.ndarray, name: str, low: float | None = None, high: float | None = None) -> None:
    """Raise if any entry lies outside [low, high] (NaN entries are ignored)."""
    if arr.size == 0:
        return
    bad = np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= arr < low
    if high is not None:
        bad |= arr > high
    if bad.any():
        bounds = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
        fail(f"{name} must lie in {bounds}; found {arr[bad][0]!r} at position {_first_bad_index(bad)}")

