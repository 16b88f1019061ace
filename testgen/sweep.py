"""Category sweep: every unary f32 op and every cast from f32 on a large
deterministic sample of inputs, generated at run time and checked element
by element against the runner's correctly rounded reference
(conformance/crmath.c) under the bounds of docs/numerics.md; the f64 ops on
a random sample.  The vectors hold only the op, the sample's size and
seed, and the bound.

The sample (normative; also in docs/conformance.md, "sweep"):

  fixed inputs first, F of them (f32: 2 * 256 * 10, f64: 2 * 2048 * 10):
      input k (k < F) is the bit pattern sign | e | m with
      m = FRACTIONS[dtype][k mod 10], e = (k div 10) mod 2^E,
      sign = k div (10 * 2^E)     (E exponent bits, M fraction bits):
      both ends of every binade, every special value, and the ties of the
      narrowing casts (f32 -> f16: 0x1000, 0x3000; f32 -> bf16: 0x8000,
      0x18000; f64 -> f32: 2^28, 3 * 2^28; f64 -> bf16: 2^44, 3 * 2^44)
  then input k >= F: state = seed + (k - F + 1) * 0x9E3779B97F4A7C15
      (mod 2^64), mixed as splitmix64's output (differential.py); f32
      takes the high 32 bits, f64 all 64.

"inputsAt" lists [k, hex] pairs of the sample, so a runner can verify its
generator.  `kiln conform --sweep all` replaces the sample of an f32 sweep
by every bit pattern (its --sweep-shard share).

The bound of a test, per element x (got = the backend's result, cr = the
correctly rounded result of crmath.c):
  NaN expected: got must be NaN; else got must not be NaN;
  "abs" and "absWithin" [lo, hi]: for lo <= x <= hi, |got - f(x)| <= abs;
  else "ulp" (null: not bounded there): the ordered-integer distance of got
      from cr <= ulp + floor(|x| * ulpPerAbsX)   (ulpPerAbsX: 0 if absent);
  "ftz" (fast_math): a subnormal f32 input may read as a zero of its sign,
      and an f32 result whose exact value is below 2^-126 in magnitude may
      be a zero of its sign.
"""

import math

import fp
import kf
import optable
from differential import SplitMix64
from numerics import FAST_SIGMOID_PER_X, FAST_SIGMOID_ULP, FAST_TANH_ULP
from vecfile import VectorFile

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
COUNT = 1 << 20

UNARY = ("exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sin", "cos",
         "erf", "sigmoid", "floor", "ceil", "neg", "abs", "relu")
CASTS = ("f16", "bf16", "f64", "i32", "i64", "bool")

NOTES = {
    "Sweep": "A unary op on 2^20 inputs: every special value, both ends of "
             "every binade, then random bit patterns; checked against the "
             "correctly rounded reference.",
    "Cast": "A cast from f32, exact.",
    "FastMath": "Run under enable=fast_math, with its bounds.",
}

FAST_ABS = fp.next_up(2.0 ** -21.41, "f64")


def fixed_count(dt):
    return 2 * 256 * 10 if dt == "f32" else 2 * 2048 * 10


def fractions(dt):
    e_bits, m_bits = fp_format(dt)
    mmax = (1 << m_bits) - 1
    if dt == "f32":
        return (0, 1, 2, 0x1000, 0x3000, 0x8000, 0x18000, 1 << 22,
                mmax - 1, mmax)
    return (0, 1, 2, 1 << 28, 3 << 28, 1 << 44, 3 << 44, 1 << 51,
            mmax - 1, mmax)


def sample_input(dt, seed, k):
    """Input k of the sample (the module docstring)."""
    e_bits, m_bits = fp_format(dt)
    nf = fixed_count(dt)
    if k < nf:
        m = fractions(dt)[k % 10]
        e = (k // 10) % (1 << e_bits)
        sign = k // (10 << e_bits)
        return (sign << (e_bits + m_bits)) | (e << m_bits) | m
    rng = SplitMix64((seed + (k - nf) * GAMMA) & M64)
    r = rng.next()
    return r >> 32 if dt == "f32" else r


def fp_format(dt):
    return optable.FORMATS[dt]


def hexbits(v, dt):
    return "0x%0*x" % (8 if dt == "f32" else 16, v)


def bound(op, dt, fast):
    """The bound object of op on dt (docs/numerics.md)."""
    b = optable.ulp_bound(op, dt)
    if not fast:
        return {"ulp": b if b is not None else 0, "ftz": False}
    if b is None:                       # exact ops and casts: exact, FTZ
        return {"ulp": 0, "ftz": True}
    if op == "exp":
        return {"ulp": 2, "ulpPerAbsX": 1.173, "ftz": True}
    if op == "log":
        return {"ulp": 3, "abs": FAST_ABS, "absWithin": [0.5, 2.0],
                "ftz": True}
    if op in ("sin", "cos"):
        return {"ulp": None, "abs": FAST_ABS,
                "absWithin": [-math.pi, math.pi], "ftz": True}
    if op == "tanh":
        return {"ulp": FAST_TANH_ULP, "ftz": True}
    if op == "sigmoid":
        return {"ulp": FAST_SIGMOID_ULP, "ulpPerAbsX": FAST_SIGMOID_PER_X,
                "ftz": True}
    return {"ulp": 4 * b, "ftz": True}  # erf, rsqrt


def build():
    vf = VectorFile("sweep", NOTES)
    seed = [0x5357454550]

    def add(group, comment, flags, op, frm, to, fast):
        seed[0] += 1
        s = seed[0]
        g = kf.Graph()
        x = g.input(frm, "?")
        g.output(g.cast(x, to) if op == "cast" else g.op(op, x))
        nf = fixed_count(frm)
        # f32: 2^20 inputs in all; f64: 2^20 random ones after the fixed
        count = COUNT if frm == "f32" else COUNT + nf
        at = [[k, hexbits(sample_input(frm, s, k), frm)]
              for k in (0, nf - 1, nf, nf + 1, count - 1)]
        opts = {"enable": ["fast_math"] if fast else [], "disable": []}
        vf.add("Sweep", group, {
            "comment": comment, "flags": flags + (["FastMath"] if fast else []),
            "result": "valid", "fusion": g.text(), "options": opts,
            "sweep": {"op": op, "from": frm, "to": to, "count": count,
                      "seed": s},
            "inputsAt": at,
            "bound": bound(op if op != "cast" else "cast", frm, fast)})

    for fast in (False, True):
        mode = "fast_math" if fast else "default"
        for op in UNARY:
            add("f32 " + mode, "f32 %s, %s, 2^20 inputs" % (op, mode),
                ["Sweep"], op, "f32", "f32", fast)
        for to in CASTS:
            add("f32 " + mode, "cast f32 -> %s, %s, 2^20 inputs" % (to, mode),
                ["Sweep", "Cast"], "cast", "f32", to, fast)
    for op in UNARY:
        add("f64 default", "f64 %s, default, 2^20 random inputs" % op,
            ["Sweep"],
            op, "f64", "f64", False)
    return {"sweep.json": vf.finish()}
