"""Input checks shared by the evaluation metrics.

Every metric validates its whole input before computing anything, and every rejection is an
:class:`EvaluationInputError` (a ``ValueError``) whose message names the argument, the index and,
where there is one, the key. Messages never echo string content: inputs may be chat text.

Strictness, in one place:

- strings must be exactly ``str`` (what ``json.loads`` produces), non-empty after ``strip()``;
- real numbers are ``numbers.Real`` but never ``bool``/``numpy.bool_``; complex numbers, strings
  and ``Decimal`` are refused; NaN and infinities are refused;
- booleans are ``bool`` or ``numpy.bool_``, never the integers 0 and 1;
- sequences are lists or tuples (and 1-D numpy arrays where an argument says so); size bounds are
  checked before any element is looked at.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sized
from typing import NoReturn

import numpy as np

from services.evaluation.errors import EvaluationInputError

__all__ = [
    "check_bool",
    "check_count",
    "check_text",
    "check_unit_real",
    "fail",
    "sequence_items",
    "type_name",
]


def fail(message: str) -> NoReturn:
    """Raise :class:`EvaluationInputError` with ``message``."""
    raise EvaluationInputError(message)


def type_name(value: object) -> str:
    """Name of the type of ``value``, for error messages (never the value itself)."""
    return type(value).__name__


def check_count(name: str, items: Sized, low: int, high: int | None) -> None:
    """Require ``low <= len(items) <= high`` (no upper bound when ``high`` is ``None``)."""
    n = len(items)
    if n < low:
        fail(f"{name}: needs at least {low} item(s), got {n}")
    if high is not None and n > high:
        fail(f"{name}: at most {high} items allowed, got {n}")


def sequence_items(
    name: str, value: object, *, low: int, high: int | None, allow_array: bool = False
) -> list[object]:
    """Return the elements of a list/tuple (or 1-D numpy array) after checking its length.

    Numpy arrays are converted with ``tolist()``, so their elements are checked exactly like the
    elements of a list (a bool array yields ``bool``, a complex array ``complex``, ...).
    """
    if allow_array and isinstance(value, np.ndarray):
        if value.ndim != 1:
            fail(f"{name}: must be 1-D, got an array with shape {value.shape}")
        check_count(name, value, low, high)
        items: list[object] = value.tolist()
        return items
    if not isinstance(value, list | tuple):
        kinds = "a list, tuple or 1-D numpy array" if allow_array else "a list or tuple"
        fail(f"{name}: must be {kinds}, got {type_name(value)}")
    check_count(name, value, low, high)
    return list(value)


def check_text(where: str, value: object) -> str:
    """Require an exact ``str`` that is non-empty after ``strip()``; return it unchanged."""
    if type(value) is not str:
        fail(f"{where}: must be a str, got {type_name(value)}")
    if not value.strip():
        fail(f"{where}: must not be empty or whitespace-only")
    return value


def check_unit_real(where: str, value: object) -> float:
    """Require a finite real number in [0, 1] (not a bool); return it as a float.

    ``-0.0`` is returned as ``0.0`` so that thresholds print and deduplicate cleanly.
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        fail(f"{where}: must be a real number, got {type_name(value)}")
    number = float(value)
    if not math.isfinite(number):
        fail(f"{where}: must be finite, got {number!r}")
    if not 0.0 <= number <= 1.0:
        fail(f"{where}: must lie in [0, 1], got {number!r}")
    return number + 0.0


def check_bool(where: str, value: object) -> bool:
    """Require a real boolean (``bool`` or ``numpy.bool_``), not 0/1; return it as ``bool``."""
    if not isinstance(value, bool | np.bool_):
        fail(f"{where}: must be a bool, got {type_name(value)}")
    return bool(value)
