"""Arithmetic whose bytes do not depend on the x86-64 CPU: the rollout path's transcendentals and sums.

The transcendentals are FreeBSD msun's (fdlibm's) algorithms and coefficients (Sun Microsystems: "Permission to use,
copy, modify, and distribute this software is freely granted, provided that this notice is preserved")."""

from __future__ import annotations

import math

import numba
import numpy as np

_NJIT = dict(cache=True, fastmath=False, nogil=True)

# -- atan2 (fdlibm s_atan.c, e_atan2.c) ----------------------------------------------------------
_ATANHI = (
    4.63647609000806093515e-01,
    7.85398163397448278999e-01,
    9.82793723247329054082e-01,
    1.57079632679489655800e00,
)
_ATANLO = (
    2.26987774529616870924e-17,
    3.06161699786838301793e-17,
    1.39033110312309984516e-17,
    6.12323399573676603587e-17,
)
_AT0, _AT1, _AT2, _AT3 = (
    3.33333333333329318027e-01,
    -1.99999999998764832476e-01,
    1.42857142725034663711e-01,
    -1.11111104054623557880e-01,
)
_AT4, _AT5, _AT6, _AT7 = (
    9.09088713343650656196e-02,
    -7.69187620504482999495e-02,
    6.66107313738753120669e-02,
    -5.83357013379057348645e-02,
)
_AT8, _AT9, _AT10 = 4.97687799461593236017e-02, -3.65315727442169155270e-02, 1.62858201153657823623e-02
_PI = 3.14159265358979311600e00
_PI_LO = 1.2246467991473531772e-16
_PI_O_2 = 1.57079632679489655800e00
_PI_O_4 = 7.8539816339744827900e-01


@numba.njit(**_NJIT)
def atan(x: float) -> float:
    """arctan(x), fdlibm's four-interval reduction and degree-22 odd polynomial."""
    if x != x:
        return x + x
    ax = abs(x)
    if ax >= 7.378697629483821e19:  # 2**66: atan is pi/2 to the last bit
        r = _ATANHI[3] + _ATANLO[3]
        return r if x > 0 else -r
    if ax < 0.4375:
        if ax < 7.450580596923828e-09:  # 2**-27
            return x
        idx = -1
        t = x
    elif ax < 1.1875:
        if ax < 0.6875:
            idx = 0
            t = (2.0 * ax - 1.0) / (2.0 + ax)
        else:
            idx = 1
            t = (ax - 1.0) / (ax + 1.0)
    elif ax < 2.4375:
        idx = 2
        t = (ax - 1.5) / (1.0 + 1.5 * ax)
    else:
        idx = 3
        t = -1.0 / ax
    z = t * t
    w = z * z
    s1 = z * (_AT0 + w * (_AT2 + w * (_AT4 + w * (_AT6 + w * (_AT8 + w * _AT10)))))
    s2 = w * (_AT1 + w * (_AT3 + w * (_AT5 + w * (_AT7 + w * _AT9))))
    if idx < 0:
        return t - t * (s1 + s2)
    r = _ATANHI[idx] - ((t * (s1 + s2) - _ATANLO[idx]) - t)
    return -r if x < 0 else r


@numba.njit(**_NJIT)
def atan2(y: float, x: float) -> float:
    """The angle of (x, y) in [-pi, pi], with fdlibm's quadrant and special-value rules."""
    if x != x or y != y:
        return x + y
    if x == 1.0:
        return atan(y)
    neg_y = y < 0.0 or (y == 0.0 and math.copysign(1.0, y) < 0.0)
    neg_x = x < 0.0 or (x == 0.0 and math.copysign(1.0, x) < 0.0)
    if y == 0.0:
        if not neg_x:
            return y
        return -_PI if neg_y else _PI
    if x == 0.0:
        return -_PI_O_2 if neg_y else _PI_O_2
    if math.isinf(x):
        if math.isinf(y):
            r = 3.0 * _PI_O_4 if neg_x else _PI_O_4
        else:
            r = _PI if neg_x else 0.0
        return -r if neg_y else r
    if math.isinf(y):
        return -_PI_O_2 if neg_y else _PI_O_2
    k = math.frexp(y)[1] - math.frexp(x)[1]
    if k > 60:
        z = _PI_O_2 + 0.5 * _PI_LO
    elif neg_x and k < -60:
        z = 0.0
    else:
        z = atan(abs(y / x))
    if not neg_x:
        return -z if neg_y else z
    if not neg_y:
        return _PI - (z - _PI_LO)
    return (z - _PI_LO) - _PI


# -- sin and cos (msun k_sin.c, k_cos.c, e_rem_pio2.c medium range) ------------------------------
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
_INVPIO2 = 6.36619772367581382433e-01
_PIO2_1, _PIO2_1T = 1.57079632673412561417e00, 6.07710050650619224932e-11
_PIO2_2, _PIO2_2T = 6.07710050630396597660e-11, 2.02226624879595063154e-21
_PIO2_3, _PIO2_3T = 2.02226624871116645580e-21, 8.47842766036889956997e-32
_ROUND = 6755399441055744.0  # 1.5 * 2**52: adding and subtracting it rounds to the nearest integer


@numba.njit(**_NJIT)
def _k_sin(x: float, y: float) -> float:
    """sin(x + y) for |x + y| <= pi/4, y the tail of x."""
    z = x * x
    w = z * z
    r = _S2 + z * (_S3 + z * _S4) + z * w * (_S5 + z * _S6)
    v = z * x
    return x - ((z * (0.5 * y - v * r) - y) - v * _S1)


@numba.njit(**_NJIT)
def _k_cos(x: float, y: float) -> float:
    """cos(x + y) for |x + y| <= pi/4, y the tail of x."""
    z = x * x
    w = z * z
    r = z * (_C1 + z * (_C2 + z * _C3)) + w * w * (_C4 + z * (_C5 + z * _C6))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - x * y))


@numba.njit(**_NJIT)
def _rem_pio2(x: float):
    """(n, y0, y1): x = n * pi/2 + y0 + y1 with |y0 + y1| <= pi/4 (Cody-Waite, up to three steps)."""
    fn = (x * _INVPIO2 + _ROUND) - _ROUND
    n = int(fn)
    r = x - fn * _PIO2_1
    w = fn * _PIO2_1T
    y0 = r - w
    j = math.frexp(x)[1]
    if y0 != 0.0 and j - math.frexp(y0)[1] > 16:  # cancellation: a second, finer step
        t = r
        w = fn * _PIO2_2
        r = t - w
        w = fn * _PIO2_2T - ((t - r) - w)
        y0 = r - w
        if y0 != 0.0 and j - math.frexp(y0)[1] > 49:
            t = r
            w = fn * _PIO2_3
            r = t - w
            w = fn * _PIO2_3T - ((t - r) - w)
            y0 = r - w
    y1 = (r - y0) - w
    return n, y0, y1


@numba.njit(**_NJIT)
def sin(x: float) -> float:
    if math.isinf(x) or x != x:
        return x - x
    if abs(x) <= 0.7853981633974483:
        if abs(x) < 7.450580596923828e-09:
            return x
        return _k_sin(x, 0.0)
    n, y0, y1 = _rem_pio2(x)
    q = n & 3
    if q == 0:
        return _k_sin(y0, y1)
    if q == 1:
        return _k_cos(y0, y1)
    if q == 2:
        return -_k_sin(y0, y1)
    return -_k_cos(y0, y1)


@numba.njit(**_NJIT)
def cos(x: float) -> float:
    if math.isinf(x) or x != x:
        return x - x
    if abs(x) <= 0.7853981633974483:
        if abs(x) < 7.450580596923828e-09:
            return 1.0
        return _k_cos(x, 0.0)
    n, y0, y1 = _rem_pio2(x)
    q = n & 3
    if q == 0:
        return _k_cos(y0, y1)
    if q == 1:
        return -_k_sin(y0, y1)
    if q == 2:
        return -_k_cos(y0, y1)
    return _k_sin(y0, y1)


# -- tanh (msun s_tanh.c over s_expm1.c) ----------------------------------------------------------
_LN2_HI, _LN2_LO, _INVLN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e00
_Q1, _Q2, _Q3 = -3.33333333333331316428e-02, 1.58730158725481460165e-03, -7.93650757867487942473e-05
_Q4, _Q5 = 4.00821782732936239552e-06, -2.01099218183624371326e-07


@numba.njit(**_NJIT)
def _reduce_ln2(x: float, ax: float):
    """(hi, lo, k) with x = k ln2 + (hi - lo), |hi - lo| <= ln2 / 2, for |x| > ln2 / 2 (ln2 in two parts, so
    hi is exact): k = +-1 below 3 ln2 / 2, else the nearest integer to x / ln2."""
    if ax < 1.0397207708399179:  # 3 ln2 / 2
        if x > 0.0:
            return x - _LN2_HI, _LN2_LO, 1
        return x + _LN2_HI, -_LN2_LO, -1
    k = int(_INVLN2 * x + (0.5 if x > 0.0 else -0.5))
    t = float(k)
    return x - t * _LN2_HI, t * _LN2_LO, k


@numba.njit(**_NJIT)
def expm1(x: float) -> float:
    """exp(x) - 1 for finite |x| < 700 (tanh's range; larger arguments are not needed here)."""
    ax = abs(x)
    if ax >= 38.816242111356935:  # 56 ln 2: exp(x) - 1 is -1 or exp(x) to the last bit
        if x < 0.0:
            return -1.0
    c = 0.0
    if ax > 0.34657359027997264:  # reduce: x = k ln2 + hi - lo
        hi, lo, k = _reduce_ln2(x, ax)
        x = hi - lo
        c = (hi - x) - lo
    elif ax < 5.551115123125783e-17:  # 2**-54
        return x
    else:
        k = 0
    hfx = 0.5 * x
    hxs = x * hfx
    r1 = 1.0 + hxs * (_Q1 + hxs * (_Q2 + hxs * (_Q3 + hxs * (_Q4 + hxs * _Q5))))
    t = 3.0 - r1 * hfx
    e = hxs * ((r1 - t) / (6.0 - x * t))
    if k == 0:
        return x - (x * e - hxs)
    twopk = math.ldexp(1.0, k)
    e = x * (e - c) - c
    e -= hxs
    if k == -1:
        return 0.5 * (x - e) - 0.5
    if k == 1:
        if x < -0.25:
            return -2.0 * (e - (x + 0.5))
        return 1.0 + 2.0 * (x - e)
    if k <= -2 or k > 56:
        y = 1.0 - (e - x)
        return y * twopk - 1.0
    if k < 20:
        t = 1.0 - math.ldexp(1.0, -k)
        y = t - (e - x)
        return y * twopk
    t = math.ldexp(1.0, -k)
    y = x - (e + t)
    y += 1.0
    return y * twopk


@numba.njit(**_NJIT)
def tanh(x: float) -> float:
    if x != x:
        return x + x
    ax = abs(x)
    if ax < 22.0:
        if ax < 3.725290298461914e-09:  # 2**-28
            return x
        if ax >= 1.0:
            t = expm1(2.0 * ax)
            z = 1.0 - 2.0 / (t + 2.0)
        else:
            t = expm1(-2.0 * ax)
            z = -t / (t + 2.0)
    else:
        z = 1.0
    return z if x >= 0.0 else -z


# -- exp (fdlibm e_exp.c) -------------------------------------------------------------------------
_EXP_P1, _EXP_P2, _EXP_P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
_EXP_P4, _EXP_P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08
_EXP_OVERFLOW, _EXP_UNDERFLOW = 7.09782712893383973096e02, -7.45133219101941108420e02


@numba.njit(**_NJIT)
def exp(x: float) -> float:
    """e**x: reduce to x = k ln2 + r with |r| <= ln2 / 2, a rational approximation of e**r, scale by 2**k."""
    if x != x:
        return x + x
    if x > _EXP_OVERFLOW:
        return math.inf
    if x < _EXP_UNDERFLOW:
        return 0.0
    ax = abs(x)
    k = 0
    hi = x
    lo = 0.0
    if ax > 0.34657359027997264:  # ln2 / 2
        hi, lo, k = _reduce_ln2(x, ax)
        x = hi - lo
    elif ax < 3.725290298461914e-09:  # 2**-28: e**x rounds to 1 + x
        return 1.0 + x
    t = x * x
    c = x - t * (_EXP_P1 + t * (_EXP_P2 + t * (_EXP_P3 + t * (_EXP_P4 + t * _EXP_P5))))
    if k == 0:
        return 1.0 - ((x * c) / (c - 2.0) - x)
    y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi)
    if k > 1023:  # 2**k itself would overflow although the product does not
        return math.ldexp(y * 2.0, k - 1)
    return math.ldexp(y, k)


# -- array forms used by rollouts ----------------------------------------------------------------
@numba.njit(**_NJIT)
def atan2_array(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    out = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        out[i] = atan2(y[i], x[i])
    return out


@numba.njit(**_NJIT)
def sin_array(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = sin(x[i])
    return out


@numba.njit(**_NJIT)
def cos_array(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = cos(x[i])
    return out


@numba.njit(**_NJIT)
def dense(x: np.ndarray, w_t: np.ndarray, b: np.ndarray, activation: int) -> np.ndarray:
    """One layer, (N, in) float64 @ (in, out) + (out,): each output is b + (sum over inputs in index
    order), then tanh (activation 1), relu (2) or nothing (0).

    Rows go through in blocks of four, each weight row read once per block: a network's weights
    (480 KB for a 48-256-128-128-12 MLP in float64) stream from L2 for every row otherwise. Measured
    side by side on 400 rows of that MLP (relu), busy 2-core EPYC: 8.7-10.8 us per row blocked, 12.4-15.6
    one row at a time. Each output still sums its inputs in index order, so blocking changes no bit."""
    n, n_in = x.shape
    n_out = w_t.shape[1]
    out = np.zeros((n, n_out))
    r = 0
    while r + 4 <= n:
        a0, a1, a2, a3 = out[r], out[r + 1], out[r + 2], out[r + 3]
        for i in range(n_in):
            x0, x1, x2, x3 = x[r, i], x[r + 1, i], x[r + 2, i], x[r + 3, i]
            for o in range(n_out):  # independent outputs: vectorised across o, summed in i order
                w = w_t[i, o]
                a0[o] += x0 * w
                a1[o] += x1 * w
                a2[o] += x2 * w
                a3[o] += x3 * w
        r += 4
    for q in range(r, n):
        acc = out[q]
        for i in range(n_in):
            xi = x[q, i]
            for o in range(n_out):
                acc[o] += xi * w_t[i, o]
    for q in range(n):
        acc = out[q]
        for o in range(n_out):
            v = acc[o] + b[o]
            if activation == 1:
                v = tanh(v)
            elif activation == 2:
                v = v if v > 0.0 else 0.0
            acc[o] = v
    return out
