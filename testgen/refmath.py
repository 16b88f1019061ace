"""High-precision reference functions for the numerics vectors.

Every function takes the exact input value(s) (Python floats) and returns
either a Python float for special / exact results (NaN, infinities, signed
zeros, exact ones) or a Fraction within ~10^-125 relative of the true value
(decimal arithmetic at 130+ significant digits, >= 400 bits), which
fp.round_q() then rounds correctly to the target format.  sqrt and rsqrt are
exact: they return a Fraction that rounds to the same value as the true
square root (the remainder becomes a sticky bit).

Methods: exp / ln: decimal.Decimal.exp() / .ln() (correctly rounded in
decimal); expm1 (small arguments of tanh), sin, cos, erf: Taylor series in
Decimal with guard digits (erf adds digits for the cancellation of its
alternating series, ~x^2/ln 10); sin/cos reduce the argument modulo pi/2 with
a 1,300-digit pi (Machin's formula in integers), enough for |x| up to 1.8e308.
self_test() compares with the math module on easy points.
"""

import decimal
import math
from decimal import Decimal
from fractions import Fraction

import fp

PREC = 130
INF = fp.INF
NAN = fp.NAN

_PI_CACHE = {}


def _ctx(prec=PREC):
    c = decimal.Context(prec=prec, Emin=-9999999, Emax=9999999,
                        rounding=decimal.ROUND_HALF_EVEN)
    c.traps[decimal.Inexact] = False
    c.traps[decimal.Rounded] = False
    return c


def _pi(digits=1300):
    """pi with `digits` decimal digits (Machin), as a Decimal."""
    if digits in _PI_CACHE:
        return _PI_CACHE[digits]
    guard = 10
    unity = 10 ** (digits + guard)

    def arctan_inv(x):
        total, term, n, sign = 0, unity // x, 1, 1
        x2 = x * x
        while term:
            total += sign * (term // n)
            term //= x2
            n += 2
            sign = -sign
        return total
    pi_int = 4 * (4 * arctan_inv(5) - arctan_inv(239))
    with decimal.localcontext(_ctx(digits + 5)):
        v = Decimal(pi_int) / Decimal(10) ** (digits + guard)
    _PI_CACHE[digits] = v
    return v


def _q(d):
    return Fraction(d)


def _sign(x):
    return -1 if math.copysign(1.0, x) < 0 else 1


def _special(x):
    return x != x or x in (INF, -INF)


# -------------------------------------------------------------- exp and log

def exp(x):
    if x != x:
        return NAN
    if x == INF:
        return INF
    if x == -INF:
        return 0.0
    if x == 0:
        return 1.0
    if x > 1000:
        return INF
    if x < -1000:
        return Fraction(1, 1 << 1600)
    with decimal.localcontext(_ctx()):
        return _q(Decimal(x).exp())


def log(x):
    if x != x or x < 0:
        return NAN
    if x == 0:
        return -INF
    if x == INF:
        return INF
    if x == 1:
        return 0.0
    with decimal.localcontext(_ctx()):
        return _q(Decimal(x).ln())


def _expm1_dec(y):
    """expm1 of a Decimal |y| < 1 by Taylor series (full relative accuracy)."""
    with decimal.localcontext(_ctx(PREC + 10)):
        term = y
        total = y
        n = 1
        eps = abs(y) * Decimal(10) ** -(PREC + 8)
        while abs(term) > eps:
            n += 1
            term = term * y / n
            total += term
        return total


def tanh(x):
    if x != x:
        return NAN
    if x in (INF, -INF):
        return float(_sign(x))
    if x == 0:
        return x
    s = _sign(x)
    a = abs(x)
    if a > 400:
        return s * (1 - Fraction(1, 1 << 1200))
    with decimal.localcontext(_ctx(PREC + 10)):
        if a < 0.5:
            m = _expm1_dec(2 * Decimal(a))
            t = m / (m + 2)
        else:
            t = 1 - 2 / ((2 * Decimal(a)).exp() + 1)
        return s * _q(t)


def sigmoid(x):
    if x != x:
        return NAN
    if x == INF:
        return 1.0
    if x == -INF:
        return 0.0
    if x == 0:
        return 0.5
    if x > 1000:
        return 1 - Fraction(1, 1 << 1600)
    if x < -1000:
        return Fraction(1, 1 << 1600)
    with decimal.localcontext(_ctx(PREC + 10)):
        return _q(1 / (1 + (-Decimal(x)).exp()))


def erf(x):
    if x != x:
        return NAN
    if x in (INF, -INF):
        return float(_sign(x))
    if x == 0:
        return x
    s = _sign(x)
    a = abs(x)
    if a > 7:
        return s * (1 - Fraction(1, 1 << 200))
    prec = PREC + 10 + int(a * a / 2.3) + 5
    with decimal.localcontext(_ctx(prec)):
        d = Decimal(a)
        d2 = d * d
        term = d            # (-1)^n x^(2n+1) / n!
        total = d
        n = 0
        eps = Decimal(10) ** -(prec - 2) * d
        while True:
            n += 1
            term = -term * d2 / n
            add = term / (2 * n + 1)
            total += add
            if abs(add) < eps:
                break
        pi = _pi(prec + 10)
        r = 2 * total / pi.sqrt()
    return s * _q(r)


# --------------------------------------------------------------- sin / cos

def _reduce(x):
    """(k mod 4, r) with x = k*pi/2 + r, |r| <= pi/4, r a Decimal."""
    with decimal.localcontext(_ctx(1250)):
        d = Decimal(x)
        half_pi = _pi(1300) / 2
        k = (d / half_pi).to_integral_value(rounding=decimal.ROUND_HALF_EVEN)
        r = d - k * half_pi
        return int(k) % 4, +r


def _sin_cos_series(r, want_sin):
    with decimal.localcontext(_ctx(PREC + 15)):
        r = +r
        r2 = r * r
        if want_sin:
            term, total, n = r, r, 1
        else:
            term, total, n = Decimal(1), Decimal(1), 0
        eps = Decimal(10) ** -(PREC + 12) * (abs(r) if want_sin else 1)
        while True:
            term = -term * r2 / ((n + 1) * (n + 2))
            n += 2
            total += term
            if abs(term) < eps:
                break
        return total


def _sincos(x, want_sin):
    if x != x or x in (INF, -INF):
        return NAN
    if x == 0:
        return x if want_sin else 1.0
    k, r = _reduce(x)
    if want_sin:
        table = {0: (True, 1), 1: (False, 1), 2: (True, -1), 3: (False, -1)}
    else:
        table = {0: (False, 1), 1: (True, -1), 2: (False, -1), 3: (True, 1)}
    use_sin, sign = table[k]
    return sign * _q(_sin_cos_series(r, use_sin))


def sin(x):
    return _sincos(x, True)


def cos(x):
    return _sincos(x, False)


# ------------------------------------------------------------ sqrt / rsqrt

def sqrt_q(q):
    """A Fraction that rounds (in any format of <= 64 bits precision) like
    sqrt(q): exact when sqrt(q) is rational, else the value with a sticky
    bit far below the rounding position."""
    n, d = q.numerator, q.denominator
    k = 700 + d.bit_length()
    m = n * d << (2 * k)
    r = math.isqrt(m)
    if r * r == m:
        return Fraction(r, d << k)
    return Fraction(2 * r + 1, d << (k + 1))


def sqrt(x):
    if x != x or x < 0:
        return NAN
    if x == 0 or x == INF:
        return x
    return sqrt_q(Fraction(x))


def rsqrt(x):
    if x != x or x < 0:
        return NAN
    if x == 0:
        return INF if _sign(x) > 0 else -INF
    if x == INF:
        return 0.0
    return sqrt_q(1 / Fraction(x))


# --------------------------------------------------------------------- pow

def _is_int(y):
    return not _special(y) and y == math.floor(y)


def _is_odd_int(y):
    return _is_int(y) and abs(y) < 2 ** 64 and int(y) % 2 == 1


def pow_(x, y):
    """C99 Annex F pow."""
    if y == 0:
        return 1.0
    if x == 1:
        return 1.0
    if x != x or y != y:
        return NAN
    if x == 0:
        neg0 = _sign(x) < 0
        if y < 0:
            return (-INF if neg0 else INF) if _is_odd_int(y) else INF
        return (-0.0 if neg0 else 0.0) if _is_odd_int(y) else 0.0
    if y in (INF, -INF):
        if x == -1:
            return 1.0
        big = abs(x) > 1
        return (INF if big else 0.0) if y > 0 else (0.0 if big else INF)
    if x == -INF:
        if y < 0:
            return -0.0 if _is_odd_int(y) else 0.0
        return -INF if _is_odd_int(y) else INF
    if x == INF:
        return 0.0 if y < 0 else INF
    sign = 1
    if x < 0:
        if not _is_int(y):
            return NAN
        if _is_odd_int(y):
            sign = -1
        x = -x
    lg = y * math.log2(x)
    if lg > 1100:
        return sign * INF
    if lg < -1200:
        return sign * Fraction(1, 1 << 1600)
    if _is_int(y) and abs(y) <= 64:
        return sign * Fraction(x) ** int(y)
    with decimal.localcontext(_ctx(PREC + 10)):
        return sign * _q((Decimal(y) * Decimal(x).ln()).exp())


FUNCS = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid,
         "erf": erf, "sin": sin, "cos": cos, "sqrt": sqrt, "rsqrt": rsqrt}


def self_test():
    """Compare with the math module (which is within ~1 ulp) on easy
    points; raises AssertionError on a mismatch of more than 1 ulp."""
    pts = [0.1, 0.5, 0.75, 1.25, 2.0, 3.3, -0.4, -1.7, 5.5, 10.0, 1e-3]
    refs = {"exp": math.exp, "log": math.log, "tanh": math.tanh,
            "sigmoid": lambda v: 1 / (1 + math.exp(-v)), "erf": math.erf,
            "sin": math.sin, "cos": math.cos, "sqrt": math.sqrt,
            "rsqrt": lambda v: 1 / math.sqrt(v)}
    for name, f in FUNCS.items():
        for x in pts:
            if name in ("log", "sqrt", "rsqrt") and x <= 0:
                continue
            got = fp.rnd(f(x), "f64")
            want = refs[name](x)
            if fp.ulp_distance(got, want, "f64") > 1:
                raise AssertionError("refmath.%s(%r) = %r, math gives %r"
                                     % (name, x, got, want))
    for x, y in ((2.0, 0.5), (1.5, 3.0), (0.3, -2.5), (7.0, 1.3), (-2.0, 3.0)):
        got = fp.rnd(pow_(x, y), "f64")
        if fp.ulp_distance(got, math.pow(x, y), "f64") > 1:
            raise AssertionError("refmath.pow(%r,%r)" % (x, y))
    # known exact values
    assert fp.rnd(sin(1e22), "f64") == -0.8522008497671888  # known result
    assert fp.rnd(sqrt(2.0), "f64") == math.sqrt(2.0)
    assert fp.rnd(exp(1.0), "f32") == 2.7182817459106445
