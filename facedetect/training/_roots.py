"""The per-round objective shared by Cost-Sensitive AdaBoost and AdaBoostDB, and its root.

For a candidate with weighted class errors ``(eP, eN)`` the round objective is

    L(alpha) = p ((1-eP) e^{-Cp alpha} + eP e^{Cp alpha})
             + q ((1-eN) e^{-Cn alpha} + eN e^{Cn alpha})

with class masses ``p + q = 1``, and its minimiser is the root of the increasing function

    g(alpha) = a (eP e^{Cp alpha} - (1-eP) e^{-Cp alpha})
             + b (eN e^{Cn alpha} - (1-eN) e^{-Cn alpha}),
    a = Cp p / (Cp p + Cn q),  b = 1 - a.

Costs are divided by ``max(Cp, Cn)`` before anything is solved (L is invariant under
``(Cp, Cn, alpha) -> (k Cp, k Cn, alpha / k)``), so exponents stay bounded.
See ``../shared/docs/adaboostdb-math.md``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba

# Above this |alpha| (in units where max cost is 1) exp() would overflow; a root beyond it
# is reported as the cap.
ALPHA_CAP = 700.0


def normalized_costs(cost) -> tuple[float, float]:
    """``(Cp, Cn) / max(Cp, Cn)`` of a pair :func:`facedetect.costs.check_cost` accepts (the
    estimators check it once per fit, before this).

    Examples
    --------
    >>> normalized_costs((1, 10))
    (0.1, 1.0)
    """
    cp, cn = (float(c) for c in cost)
    top = max(cp, cn)
    return cp / top, cn / top


@numba.njit(cache=True)
def root_function(alpha, e_pos, e_neg, a, b, cp, cn):
    """g(alpha): negative below the candidate's optimal alpha, positive above it."""
    return (a * (e_pos * math.exp(cp * alpha) - (1.0 - e_pos) * math.exp(-cp * alpha))
            + b * (e_neg * math.exp(cn * alpha) - (1.0 - e_neg) * math.exp(-cn * alpha)))


@numba.njit(cache=True)
def _root_slope(alpha, e_pos, e_neg, a, b, cp, cn):
    return (a * cp * (e_pos * math.exp(cp * alpha) + (1.0 - e_pos) * math.exp(-cp * alpha))
            + b * cn * (e_neg * math.exp(cn * alpha) + (1.0 - e_neg) * math.exp(-cn * alpha)))


@numba.njit(cache=True)
def solve_alpha(e_pos, e_neg, a, b, cp, cn):
    """The candidate's optimal alpha: the root of g, by bracketed Newton in alpha space.

    Deterministic to the last bit for the same inputs, which is what lets the conditional
    search and the exhaustive search agree exactly. ``eP = eN = 0`` (a perfect stump) has
    no finite root and returns ``inf``; ``eP = eN = 1`` returns ``-inf``.

    Examples
    --------
    >>> a, b = static_parameters(0.5, 0.5, 1.0, 1.0)
    >>> round(solve_alpha(0.1, 0.1, a, b, 1.0, 1.0), 6), round(0.5 * math.log(0.9 / 0.1), 6)
    (1.098612, 1.098612)
    """
    if e_pos <= 0.0 and e_neg <= 0.0:
        return math.inf
    if e_pos >= 1.0 and e_neg >= 1.0:
        return -math.inf
    g0 = root_function(0.0, e_pos, e_neg, a, b, cp, cn)
    if g0 == 0.0:
        return 0.0
    # Bracket [lo, hi] with g(lo) < 0 < g(hi), growing away from 0 by doubling.
    if g0 < 0.0:
        lo, hi = 0.0, 1.0
        while root_function(hi, e_pos, e_neg, a, b, cp, cn) < 0.0:
            if hi >= ALPHA_CAP:
                return ALPHA_CAP
            lo = hi
            hi = min(2.0 * hi, ALPHA_CAP)
    else:
        lo, hi = -1.0, 0.0
        while root_function(lo, e_pos, e_neg, a, b, cp, cn) > 0.0:
            if lo <= -ALPHA_CAP:
                return -ALPHA_CAP
            hi = lo
            lo = max(2.0 * lo, -ALPHA_CAP)
    x = 0.5 * (lo + hi)
    for _ in range(200):
        gx = root_function(x, e_pos, e_neg, a, b, cp, cn)
        if gx == 0.0:
            return x
        if gx < 0.0:
            lo = x
        else:
            hi = x
        step = gx / _root_slope(x, e_pos, e_neg, a, b, cp, cn)
        x_new = x - step
        if not (lo < x_new < hi):
            x_new = 0.5 * (lo + hi)
        if abs(x_new - x) <= 4e-16 * (1.0 + abs(x)) or hi - lo <= 4e-16 * (1.0 + abs(x)):
            return x_new
        x = x_new
    return x


@numba.njit(cache=True)
def round_loss(alpha, e_pos, e_neg, p, q, cp, cn):
    """L(alpha) for class masses p, q (p + q = 1): the factor the total weight shrinks by."""
    if math.isinf(alpha):
        return 0.0 if alpha > 0 and e_pos == 0.0 and e_neg == 0.0 else math.inf
    return (p * ((1.0 - e_pos) * math.exp(-cp * alpha) + e_pos * math.exp(cp * alpha))
            + q * ((1.0 - e_neg) * math.exp(-cn * alpha) + e_neg * math.exp(cn * alpha)))


def static_parameters(p: float, q: float, cp: float, cn: float) -> tuple[float, float]:
    """``(a, b)`` of the root condition for class masses ``p, q``."""
    total = cp * p + cn * q
    return cp * p / total, cn * q / total


class RootCoefficients(NamedTuple):
    """The constants of one round's root condition ``g`` (above): ``a, b`` from the class
    masses and the normalised costs ``cp, cn``. The search kernels take them as one tuple.

    Examples
    --------
    >>> coefs = RootCoefficients.for_round(0.5, 0.5, 1.0, 0.1)
    >>> round(coefs.a, 4), round(coefs.b, 4), coefs.cp, coefs.cn
    (0.9091, 0.0909, 1.0, 0.1)
    """

    a: float
    b: float
    cp: float
    cn: float

    @classmethod
    def for_round(cls, p: float, q: float, cp: float, cn: float) -> "RootCoefficients":
        """The coefficients for class masses ``p, q`` and normalised costs ``cp, cn``."""
        return cls(*static_parameters(p, q, cp, cn), float(cp), float(cn))
