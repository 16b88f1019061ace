"""IEEE-754 helpers: encode/decode bit patterns, correct rounding, ulp.

Values of the float dtypes (f16, bf16, f32, f64) are carried as Python floats:
every value of those formats is exactly a binary64 value.  Exact arithmetic
uses fractions.Fraction; round_q() rounds a Fraction to the nearest value of
the target format, ties to even, with gradual underflow (subnormals) and
overflow to infinity, exactly as IEEE-754 roundTiesToEven does.  Integers are
Python ints (signed, wrapped to their width); bool is 0/1.
"""

import math
import struct
from fractions import Fraction

import check_vectors
import optable

# dtype -> (exponent bits, stored mantissa bits): the dtype table's
# (optable.py, checked against kiln.h's KILN_DTYPE_TABLE)
FORMATS = optable.FORMATS
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i32", "i64")
BITS = {"bool": 1, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32,
        "f64": 64}
HEXW = {"bool": 1, "i32": 8, "i64": 16, "f16": 4, "bf16": 4, "f32": 8,
        "f64": 16}
INF = float("inf")
NAN = float("nan")
CANON_NAN = {"f16": 0x7e00, "bf16": 0x7fc0, "f32": 0x7fc00000,
             "f64": 0x7ff8000000000000}


def params(dt):
    """(precision p, emin, emax) of a float format."""
    e, m = FORMATS[dt]
    bias = (1 << (e - 1)) - 1
    return m + 1, 1 - bias, bias


def is_float(dt):
    return dt in FORMATS


def hexs(bits, dt):
    """Canonical hex of a bit pattern: fixed width, lower case ("0x1" bool)."""
    return "0x%0*x" % (HEXW[dt], bits)


# ------------------------------------------------------------ decode/encode

def decode(bits, dt):
    """Bit pattern -> value (float for float dtypes, int otherwise; bool is
    0/1): the reference reader's decoding, check_vectors.decode."""
    v = check_vectors.decode(bits, dt)
    return int(v) if dt == "bool" else v


def encode(v, dt):
    """Value -> bit pattern.  Float values must be representable in dt
    (use rnd() first); NaN encodes as the canonical quiet NaN."""
    if dt in FORMATS:
        if v != v:
            return CANON_NAN[dt]
        if dt == "f64":
            return struct.unpack("<Q", struct.pack("<d", v))[0]
        if dt == "f32":
            b = struct.unpack("<I", struct.pack("<f", v))[0]
        elif dt == "bf16":
            b32 = struct.unpack("<I", struct.pack("<f", v))[0]
            if b32 & 0xffff:
                raise ValueError("not a bf16 value: %r" % v)
            b = b32 >> 16
        else:
            b = struct.unpack("<H", struct.pack("<e", v))[0]
        if decode(b, dt) != v and v == v:
            raise ValueError("%r is not representable in %s" % (v, dt))
        return b
    if dt == "bool":
        return 1 if v else 0
    return v & ((1 << BITS[dt]) - 1)


def h(v, dt):
    """Value -> hex string."""
    return hexs(encode(v, dt), dt)


def wrap(v, dt):
    """Wrap an integer to dt (two's complement)."""
    n = BITS[dt]
    v &= (1 << n) - 1
    return v - (1 << n) if v >> (n - 1) else v


# ----------------------------------------------------------------- rounding

def _floor_log2(a):
    """floor(log2 a) for a positive Fraction."""
    n, d = a.numerator, a.denominator
    e = n.bit_length() - d.bit_length()
    if e >= 0:
        if n < (d << e):
            e -= 1
    else:
        if (n << -e) < d:
            e -= 1
    return e


def round_q(q, dt, neg_zero=False):
    """Round a Fraction to dt, ties to even.  A zero q gives -0.0 when
    neg_zero; a nonzero q that rounds to zero keeps its sign."""
    if q == 0:
        return -0.0 if neg_zero else 0.0
    neg = q < 0
    a = -q if neg else q
    p, emin, emax = params(dt)
    e = max(_floor_log2(a), emin)
    shift = e - (p - 1)
    if shift >= 0:
        num, den = a.numerator, a.denominator << shift
    else:
        num, den = a.numerator << -shift, a.denominator
    n, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and n & 1):
        n += 1
    if n == 0:
        return -0.0 if neg else 0.0
    if n.bit_length() + shift > emax + 1:
        return -INF if neg else INF
    v = math.ldexp(n, shift)
    return -v if neg else v


def rnd(x, dt):
    """Round a float (or Fraction) value to dt, keeping specials."""
    if isinstance(x, Fraction):
        return round_q(x, dt)
    if x != x or x in (INF, -INF):
        return x
    return round_q(Fraction(x), dt, math.copysign(1.0, x) < 0)


def is_subnormal(v, dt):
    if v != v or v == 0 or v in (INF, -INF):
        return False
    p, emin, emax = params(dt)
    return abs(v) < math.ldexp(1.0, emin)


def ordered(bits, dt):
    """Map a float bit pattern to an integer that is monotone in the value
    (+0 and -0 both map to 0); ulp distance = |ordered(a) - ordered(b)|."""
    n = BITS[dt]
    mag = bits & ((1 << (n - 1)) - 1)
    return -mag if bits >> (n - 1) else mag


def ulp_distance(a, b, dt):
    return abs(ordered(encode(a, dt), dt) - ordered(encode(b, dt), dt))


def next_up(v, dt):
    b = encode(v, dt)
    o = ordered(b, dt) + 1
    n = BITS[dt]
    bits = o if o >= 0 else ((1 << (n - 1)) | -o)
    return decode(bits, dt)


def ulp_of(v, dt):
    """The spacing of dt at |v| (value of one ulp), as a Fraction."""
    p, emin, emax = params(dt)
    if v == 0:
        return Fraction(2) ** (emin - p + 1)
    e = max(_floor_log2(Fraction(abs(v))), emin)
    return Fraction(2) ** (e - p + 1)


def max_finite(dt):
    p, emin, emax = params(dt)
    return math.ldexp((1 << p) - 1, emax - p + 1)


def min_normal(dt):
    return math.ldexp(1.0, params(dt)[1])


def min_subnormal(dt):
    p, emin, emax = params(dt)
    return math.ldexp(1.0, emin - p + 1)


def ceil_f64(q):
    """Smallest f64 >= the non-negative Fraction q (for error bounds)."""
    v = round_q(q, "f64")
    if Fraction(v) < q:
        v = next_up(v, "f64")
    return v


# ------------------------------------------------------- exact dyadic sums

_SCALE = 1100


def dyadic(x):
    """A finite float as an integer multiple of 2^-1100 (exact)."""
    n, d = x.as_integer_ratio()
    return n << (_SCALE - d.bit_length() + 1)


def exact_sum(xs):
    """Exact sum of finite floats, as a Fraction (fast integer path)."""
    return Fraction(sum(dyadic(x) for x in xs), 1 << _SCALE)


def exact_abs_sum(xs):
    return Fraction(sum(abs(dyadic(x)) for x in xs), 1 << _SCALE)


def exact_dot(xs, ys):
    """(exact sum of x*y, exact sum of |x*y|) as Fractions."""
    s = m = 0
    for x, y in zip(xs, ys):
        p = dyadic(x) * dyadic(y)
        s += p
        m += abs(p)
    d = 1 << (2 * _SCALE)
    return Fraction(s, d), Fraction(m, d)


# ----------------------------------------------------------- special values

def specials(dt):
    """Interesting values of a dtype (deterministic order)."""
    if dt == "bool":
        return [0, 1]
    if dt in INTS:
        n = BITS[dt]
        lo, hi = -(1 << (n - 1)), (1 << (n - 1)) - 1
        return [0, 1, -1, 2, -2, 7, -7, 100, -100, hi, lo, hi - 1, lo + 1,
                12345, -54321]
    p, emin, emax = params(dt)
    mx, mn, ms = max_finite(dt), min_normal(dt), min_subnormal(dt)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, INF, -INF, NAN, mx, -mx,
            mn, -mn, ms, -ms, mn - ms, -(mn - ms), 2.5, -3.5, 0.1, -0.7]
    return [rnd(v, dt) for v in vals]
