"""Checking a settings field against its declared kind and range: the one check behind
every settings object's table of limits (``modelfile._fields.SCAN_LIMITS``,
``pipeline.config.FIELD_LIMITS``, ``pipeline.settings.RUN_LIMITS`` and ``CASCADE_LIMITS``)
and the command-line flags typed from them."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import InvalidParameter

__all__ = ["check_limited"]


def check_limited(name: str, value, limits: dict, error=InvalidParameter):
    """``value`` as the field ``name`` of ``limits`` takes it: ``limits[name]`` is ``(kind,
    low, high, ends, optional)``, ``kind`` "int" or "float", ``ends`` as "[)" for
    [low, high), ``optional`` whether None is allowed. Numpy scalars are taken as the
    numbers they are; bools, strings and NaN are refused, with an
    :class:`~facedetect.errors.InvalidParameter` (or ``error``) naming the field.

    Examples
    --------
    >>> limits = {"stages": ("int", 1, 100, "[]", False),
    ...           "rate": ("float", 0.0, 1.0, "()", False)}
    >>> check_limited("stages", np.int64(3), limits)
    3
    >>> check_limited("rate", 1.0, limits)
    Traceback (most recent call last):
        ...
    facedetect.errors.InvalidParameter: rate must be a number in (0, 1), got 1.0
    """
    kind, low, high, ends, optional = limits[name]
    if value is None and optional:
        return None
    number = numbers.Integral if kind == "int" else numbers.Real
    inside = (isinstance(value, number) and not isinstance(value, (bool, np.bool_))
              and (low <= value if ends[0] == "[" else low < value)
              and (value <= high if ends[1] == "]" else value < high))   # NaN: False
    if not inside:
        what = "an integer" if kind == "int" else "a number"
        span = (f"{low}..{high}" if kind == "int"
                else f"{ends[0]}{low:.12g}, {high:.12g}{ends[1]}")
        raise error(f"{name} must be {what} in {span}"
                               + (" or None" if optional else "") + f", got {value!r}", name)
    return int(value) if kind == "int" else float(value)
