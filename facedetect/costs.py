"""The one check of a cost pair ``(Cp, Cn)``: the run's configuration and the estimators
call :func:`check_cost` (the command line's ``--cost`` only parses the text; its value is
checked with the configuration, and the error names the flag)."""

from __future__ import annotations

import math

from .errors import InvalidParameter

__all__ = ["MAX_COST_RATIO", "InvalidCost", "check_cost"]

# Beyond this ratio the cheaper class's exponent underflows and boosting degenerates.
MAX_COST_RATIO = 1e6


class InvalidCost(InvalidParameter):
    """A cost pair that cannot be trained for: an :class:`~facedetect.errors.InvalidParameter`
    naming ``cost`` (one line on the command line, naming ``--cost``), so also a
    ``ValueError``, as scikit-learn raises for a bad parameter.

    See Also
    --------
    check_cost : what raises it.

    Examples
    --------
    >>> error = InvalidCost("costs must be positive and finite, got (1, 0)")
    >>> isinstance(error, ValueError), error.parameter
    (True, 'cost')
    """

    def __init__(self, message: str):
        super().__init__(message, "cost")


def check_cost(cost, shown: str | None = None) -> tuple[float, float]:
    """``cost`` as two positive finite floats whose ratio is at most ``MAX_COST_RATIO``.

    Parameters
    ----------
    cost : pair of numbers
        ``(Cp, Cn)``: the cost of a missed face, then of a false alarm.
    shown : str, optional
        How the errors quote the value (default ``repr(cost)``), e.g. the flag as typed.

    Returns
    -------
    tuple of float
        ``(Cp, Cn)``.

    Raises
    ------
    InvalidCost
        Not a pair of numbers, not positive and finite, or too lopsided.

    See Also
    --------
    InvalidCost : what it raises.

    Examples
    --------
    >>> check_cost((1, 10))
    (1.0, 10.0)
    >>> check_cost((1, 0))
    Traceback (most recent call last):
        ...
    facedetect.costs.InvalidCost: costs must be positive and finite, got (1, 0)
    """
    shown = repr(cost) if shown is None else shown
    try:
        cp, cn = (float(c) for c in cost)
    except (TypeError, ValueError):
        raise InvalidCost(f"cost must be a pair (Cp, Cn) of numbers, got {shown}") \
            from None
    if not (0 < cp < math.inf and 0 < cn < math.inf):
        raise InvalidCost(f"costs must be positive and finite, got {shown}")
    if max(cp, cn) / min(cp, cn) > MAX_COST_RATIO:
        raise InvalidCost(f"the cost ratio must be at most {MAX_COST_RATIO:g}, got {shown}")
    return cp, cn
