"""The per-round objective shared by Cost-Sensitive AdaBoost and AdaBoostDB, and its root.

For a candidate with weighted class errors ``(eP, eN)`` the round objective is

    L(alpha) = p ((1-eP) e^{-Cp alpha} + eP e^{Cp alpha}) + q ((1-eN) e^{-Cn alpha} + eN e^{Cn alpha})

with class masses ``p + q = 1``, and its minimiser is the root of the increasing function

    g(alpha) = a (eP e^{Cp alpha} - (1-eP) e^{-Cp alpha}) + b (eN e^{Cn alpha} - (1-eN) e^{-Cn alpha}),
    a = Cp p / (Cp p + Cn q),  b = 1 - a.

Costs are divided by ``max(Cp, Cn)`` before anything is solved (L is invariant under
``(Cp, Cn, alpha) -> (k Cp, k Cn, alpha / k)``), so exponents stay bounded.
See ``../shared/docs/adaboostdb-math.md``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.optimize import brentq

# Above this |alpha| (in units where max cost is 1) exp() would overflow; a root beyond it
# is reported as the cap.
ALPHA_CAP = 700.0


MAX_COST_RATIO = 1e6


def normalized_costs(cost) -> tuple[float, float]:
    """``(Cp, Cn) / max(Cp, Cn)``, validated positive and finite."""
    try:
        cp, cn = (float(c) for c in cost)
    except (TypeError, ValueError):
        raise ValueError(f"cost must be a pair (Cp, Cn) of numbers, got {cost!r}") from None
    if not (0 < cp < math.inf and 0 < cn < math.inf):
        raise ValueError(f"costs must be positive and finite, got {cost!r}")
    top = max(cp, cn)
    if top / min(cp, cn) > MAX_COST_RATIO:
        # Beyond this the cheaper class's exponent underflows and boosting degenerates.
        raise ValueError(f"the cost ratio must be at most {MAX_COST_RATIO:g}, got {cost!r}")
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


# --- the peer: Cost-Sensitive AdaBoost's hyperbolic equation ------------------------------

@numba.njit(cache=True)
def cs_hyperbolic(alpha, fn_mass, fp_mass, pos_mass, neg_mass, cp, cn):
    """Masnadi-Shirazi & Vasconcelos' condition, as the paper's Algorithm 1 writes it.

    ``2 Cp B cosh(Cp a) + 2 Cn D cosh(Cn a) - Cp T_P e^{-Cp a} - Cn T_N e^{-Cn a}`` with
    ``B, D`` the misclassified positive and negative weight and ``T_P, T_N`` the class totals.
    """
    return (2 * cp * fn_mass * math.cosh(cp * alpha) + 2 * cn * fp_mass * math.cosh(cn * alpha)
            - cp * pos_mass * math.exp(-cp * alpha) - cn * neg_mass * math.exp(-cn * alpha))


@numba.njit(cache=True)
def _cs_bracket(e_pos, e_neg, p, q, cp, cn):
    """``(args, lo, hi, answer)``: the hyperbolic condition's arguments and a sign-changing
    bracket of its root, or the ``answer`` itself (inf, 0 or the cap) when no search is
    needed (``answer`` is NaN otherwise)."""
    args = (p * e_pos, q * e_neg, p, q, cp, cn)
    if e_pos <= 0.0 and e_neg <= 0.0:
        return args, 0.0, 0.0, math.inf
    if e_pos >= 1.0 and e_neg >= 1.0:
        return args, 0.0, 0.0, -math.inf
    h0 = cs_hyperbolic(0.0, *args)
    if h0 == 0.0:
        return args, 0.0, 0.0, 0.0
    step = 1.0 if h0 < 0 else -1.0
    inner, outer = 0.0, step
    while (cs_hyperbolic(outer, *args) < 0) == (h0 < 0):
        if abs(outer) >= ALPHA_CAP:
            return args, 0.0, 0.0, math.copysign(ALPHA_CAP, step)
        inner, outer = outer, math.copysign(min(2 * abs(outer), ALPHA_CAP), step)
    return args, min(inner, outer), max(inner, outer), math.nan


@numba.njit(cache=True, error_model="numpy")  # divide as C does: inf/nan, no exception
def _zeroin(args, xa, xb, xtol, rtol, max_iter):
    """Brent's zeroin on :func:`cs_hyperbolic`, a line-by-line port of scipy's ``brentq.c``
    (so the result matches ``scipy.optimize.brentq`` bit for bit)."""
    xpre, xcur = xa, xb
    xblk, fblk, spre, scur = 0.0, 0.0, 0.0, 0.0
    fpre = cs_hyperbolic(xpre, *args)
    fcur = cs_hyperbolic(xcur, *args)
    if fpre == 0.0:
        return xpre
    if fcur == 0.0:
        return xcur
    for _ in range(max_iter):
        if fpre != 0.0 and fcur != 0.0 and ((fpre < 0) != (fcur < 0)):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0.0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = cs_hyperbolic(xcur, *args)
    return xcur


@numba.njit(cache=True)
def cs_solve_scalar(e_pos, e_neg, p, q, cp, cn):
    """One candidate's alpha by Brent's method (zeroin) on the hyperbolic condition, as the
    paper ran Cost-Sensitive AdaBoost: one scalar root search per candidate."""
    args, lo, hi, answer = _cs_bracket(e_pos, e_neg, p, q, cp, cn)
    if not math.isnan(answer):
        return answer
    return _zeroin(args, lo, hi, 1e-15, 1e-15, 200)


@numba.njit(cache=True)
def cs_solve_each(e_pos, e_neg, p, q, cp, cn):
    """:func:`cs_solve_scalar` for every candidate in turn (no vectorisation across them)."""
    alpha = np.empty(e_pos.size)
    for i in range(e_pos.size):
        alpha[i] = cs_solve_scalar(e_pos[i], e_neg[i], p, q, cp, cn)
    return alpha


def cs_solve_scipy(e_pos, e_neg, p, q, cp, cn) -> float:
    """:func:`cs_solve_scalar` through ``scipy.optimize.brentq``: the reference it is tested
    against, and the pure-Python per-candidate cost."""
    args, lo, hi, answer = _cs_bracket(e_pos, e_neg, p, q, cp, cn)
    if not math.isnan(answer):
        return answer
    return brentq(cs_hyperbolic.py_func, lo, hi, args=args, xtol=1e-15, rtol=1e-15,
                  maxiter=200)


def cs_solve_vectorized(e_pos, e_neg, p, q, cp, cn, iterations: int = 100) -> np.ndarray:
    """Every candidate's alpha at once: bracketed Newton on whole numpy arrays.

    The strongest honest version of the peer: the same equation as
    :func:`cs_solve_scalar`, with no per-candidate Python overhead.
    """
    e_pos = np.asarray(e_pos, dtype=np.float64)
    e_neg = np.asarray(e_neg, dtype=np.float64)
    a, b = static_parameters(p, q, cp, cn)

    every = slice(None)

    def g_at(alpha, idx):
        ep, en = e_pos[idx], e_neg[idx]
        return (a * (ep * np.exp(cp * alpha) - (1 - ep) * np.exp(-cp * alpha))
                + b * (en * np.exp(cn * alpha) - (1 - en) * np.exp(-cn * alpha)))

    def slope_at(alpha, idx):
        ep, en = e_pos[idx], e_neg[idx]
        return (a * cp * (ep * np.exp(cp * alpha) + (1 - ep) * np.exp(-cp * alpha))
                + b * cn * (en * np.exp(cn * alpha) + (1 - en) * np.exp(-cn * alpha)))

    with np.errstate(over="ignore", invalid="ignore"):
        g0 = g_at(np.zeros_like(e_pos), every)
        sign = np.where(g0 < 0, 1.0, -1.0)
        lo = np.zeros_like(e_pos)
        hi = sign.copy()
        # Grow the brackets until g changes sign (at most log2(ALPHA_CAP) doublings).
        for _ in range(12):
            same = (np.sign(g_at(hi, every)) == np.sign(g0)) & (np.abs(hi) < ALPHA_CAP)
            if not same.any():
                break
            lo = np.where(same, hi, lo)
            hi = np.where(same, np.clip(hi * 2, -ALPHA_CAP, ALPHA_CAP), hi)
        lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
        x = 0.5 * (lo + hi)
        # Newton iterations on the candidates not yet converged only: most converge in a
        # handful of steps, a few need many.
        active = np.arange(x.size)
        for _ in range(iterations):
            xa, la, ha = x[active], lo[active], hi[active]
            gx = g_at(xa, active)
            la = np.where(gx < 0, xa, la)
            ha = np.where(gx > 0, xa, ha)
            x_new = xa - gx / slope_at(xa, active)
            outside = ~((x_new > la) & (x_new < ha))
            x_new = np.where(outside, 0.5 * (la + ha), x_new)
            done = (np.abs(x_new - xa) <= 4e-16 * (1 + np.abs(xa))) | (gx == 0)
            x[active] = np.where(gx == 0, xa, x_new)
            lo[active], hi[active] = la, ha
            active = active[~done]
            if active.size == 0:
                break
    x = np.where(g0 == 0, 0.0, x)
    x = np.where((e_pos <= 0) & (e_neg <= 0), np.inf, x)
    x = np.where((e_pos >= 1) & (e_neg >= 1), -np.inf, x)
    return np.clip(x, -ALPHA_CAP, ALPHA_CAP, where=np.isfinite(x), out=x)


def loss_vectorized(alpha, e_pos, e_neg, p, q, cp, cn) -> np.ndarray:
    """L(alpha) over arrays of candidates."""
    with np.errstate(over="ignore", invalid="ignore"):
        loss = (p * ((1 - e_pos) * np.exp(-cp * alpha) + e_pos * np.exp(cp * alpha))
                + q * ((1 - e_neg) * np.exp(-cn * alpha) + e_neg * np.exp(cn * alpha)))
    perfect = np.isposinf(alpha) & (e_pos == 0) & (e_neg == 0)
    return np.where(perfect, 0.0, loss)
