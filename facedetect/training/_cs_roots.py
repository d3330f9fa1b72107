"""The peer's root: Cost-Sensitive AdaBoost's hyperbolic equation (Masnadi-Shirazi &
Vasconcelos), solved per candidate as the paper's Algorithm 1 does (compiled zeroin, or
``scipy.optimize.brentq``), or for all candidates at once with numpy. AdaBoostDB's own root
is in :mod:`._roots`."""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.optimize import brentq

from ._roots import ALPHA_CAP, _root_slope, root_function, static_parameters

# The same two functions over arrays, for the vectorised peer solver.
_ARRAY_SIGNATURE = ["float64(float64, float64, float64, float64, float64, float64, float64)"]
_root_function_ufunc = numba.vectorize(_ARRAY_SIGNATURE, cache=True)(root_function.py_func)
_root_slope_ufunc = numba.vectorize(_ARRAY_SIGNATURE, cache=True)(_root_slope.py_func)


@numba.njit(cache=True)
def _cs_hyperbolic(alpha, fn_mass, fp_mass, pos_mass, neg_mass, cp, cn):
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
    h0 = _cs_hyperbolic(0.0, *args)
    if h0 == 0.0:
        return args, 0.0, 0.0, 0.0
    step = 1.0 if h0 < 0 else -1.0
    inner, outer = 0.0, step
    while (_cs_hyperbolic(outer, *args) < 0) == (h0 < 0):
        if abs(outer) >= ALPHA_CAP:
            return args, 0.0, 0.0, math.copysign(ALPHA_CAP, step)
        inner, outer = outer, math.copysign(min(2 * abs(outer), ALPHA_CAP), step)
    return args, min(inner, outer), max(inner, outer), math.nan


@numba.njit(cache=True, error_model="numpy")  # divide as C does: inf/nan, no exception
def _zeroin(args, xa, xb, xtol, rtol, max_iter):
    """Brent's zeroin on :func:`_cs_hyperbolic`, a line-by-line port of scipy's ``brentq.c``
    (so the result matches ``scipy.optimize.brentq`` bit for bit)."""
    xpre, xcur = xa, xb
    xblk, fblk, spre, scur = 0.0, 0.0, 0.0, 0.0
    fpre = _cs_hyperbolic(xpre, *args)
    fcur = _cs_hyperbolic(xcur, *args)
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
        fcur = _cs_hyperbolic(xcur, *args)
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
    return brentq(_cs_hyperbolic.py_func, lo, hi, args=args, xtol=1e-15, rtol=1e-15,
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
        return _root_function_ufunc(alpha, e_pos[idx], e_neg[idx], a, b, cp, cn)

    def slope_at(alpha, idx):
        return _root_slope_ufunc(alpha, e_pos[idx], e_neg[idx], a, b, cp, cn)

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
