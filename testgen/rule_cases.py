"""numerics tests for rules that no other generator traces with an outcome
that can fail (docs/conformance.md, "Rule ids"):

- [num.reduce.empty_sum]: sum over an empty axis is +0.0, checked
  exactly (bits, sign included), for every float dtype and integer sums;
- [num.reduce.identity]: a max row that is all -inf is -inf, a min row
  that is all +inf is +inf, an integer max/min row of the extreme value is
  that value (a wrong identity shows);
- [kf.cast.narrow]: f64 -> f16 and f64 -> bf16 round once: inputs just off
  a tie of the target that round to the tie in f32 (rounding through f32
  gives the other neighbour);
- [abi.view.strides]: column slices: unit inner stride, padded rows;
- [opt.conflict.fallback]: disable=fallback on the matmul paths;
- [num.shape.size1]: an ordinary axis of size 1 against size 3.
"""

from fractions import Fraction

import fp
import kf

NOTES = {
    "EmptySum": "sum over an empty axis: +0.0 exactly (bits, sign "
                "included).",
    "Identity": "A max/min row of only the reduction's identity-like "
                "extreme (-inf for max, +inf for min, the integer "
                "extremes): the result is that value, exactly.",
    "OneRounding": "f64 -> f16/bf16 inputs just off a tie of the target "
                   "that round to the tie in f32: one rounding differs "
                   "from two.",
    "ColumnSlice": "Inputs that are column slices of wider rows: unit "
                   "inner stride, padded rows (gaps hold a filler).",
    "Offset": "Inputs that start \"offset\" elements into their storage "
              "(odd offsets: not 16-byte aligned).",
    "OrdinarySize1": "An ordinary axis of size 1 is not a broadcast axis.",
    "FallbackPath": "disable=fallback on each matmul path: the library path "
                    "fails with KILN_ERR_FALLBACK_DISABLED, the generated "
                    "paths run.",
}


def _off_tie(dst):
    """f64 values just off a tie of dst that f32 rounds onto the tie."""
    p = fp.params(dst)[0]                      # significand bits of dst
    out = []
    for base, e in ((1, 0), (3, 5), (1, -14 if dst == "f16" else -126)):
        one = Fraction(base) * Fraction(2) ** e
        ulp = Fraction(2) ** (e - (p - 1))
        for k in (0, 1):                       # even and odd low bit
            tie = one + ulp * k + ulp / 2
            for d in (Fraction(1, 2 ** 40), -Fraction(1, 2 ** 40)):
                x = tie * (1 + d)
                xf = fp.round_q(x, "f64")
                via = fp.round_q(Fraction(fp.round_q(Fraction(xf), "f32")),
                                 dst)
                direct = fp.round_q(Fraction(xf), dst)
                if via != direct:
                    out += [xf, -xf]
    # below the smallest f16 subnormal: 2^-25 (+ a bit) rounds up to 2^-24
    if dst == "f16":
        xf = fp.round_q(Fraction(2) ** -25 * (1 + Fraction(1, 2 ** 35)),
                        "f64")
        assert fp.round_q(Fraction(xf), dst) != fp.round_q(
            Fraction(fp.round_q(Fraction(xf), "f32")), dst)
        out += [xf, -xf]
    assert len(out) >= 8, (dst, len(out))
    return out


def gen(B, rng):
    B.vf.notes.update(NOTES)
    # empty sums: exact +0.0
    for dt in ("f32", "f64", "i32", "i64"):
        for shape, axes, keep in (([3, 0], [1], False), ([0, 4], [0], True),
                                  ([0], [0], False), ([2, 0, 3], [1], False)):
            g = kf.Graph()
            x = g.input(dt, "?" * len(shape))
            g.output(g.reduce("sum", x, axes, keep))
            B.add("rules: reductions", "sum %s %r axes=%r%s: empty, +0 "
                  "exactly" % (dt, shape, axes, " keepdim" if keep else ""),
                  ["Reduction", "ZeroSize", "EmptySum"], g,
                  [(dt, shape, [])], check={"kind": "exact"})
    # identity-like rows
    for op in ("max", "min"):
        for dt in ("f32", "f64", "i32", "i64"):
            if dt in fp.FLOATS:
                ext = -fp.INF if op == "max" else fp.INF
                lim = -fp.max_finite(dt) if op == "max" else fp.max_finite(dt)
            else:
                n = fp.BITS[dt]
                ext = -(1 << (n - 1)) if op == "max" else (1 << (n - 1)) - 1
                lim = ext + (1 if op == "max" else -1)
            rows = [[ext] * 5, [ext] * 4 + [lim], [ext], [lim, ext, ext]]
            for i, r in enumerate(rows):
                rows[i] = (r + [ext] * 5)[:5]
            vals = [v for r in rows for v in r]
            g = kf.Graph()
            x = g.input(dt, "??")
            g.output(g.reduce(op, x, [1]))
            B.add("rules: reductions", "%s %s: rows of %s" % (
                op, dt, "-inf" if op == "max" and dt in fp.FLOATS else
                "+inf" if dt in fp.FLOATS else "the extreme"),
                ["Reduction", "Special", "Identity"], g,
                [(dt, [len(rows), 5], vals)])
            g = kf.Graph()
            x = g.input(dt, "?")
            g.output(g.reduce(op, x, [0]))
            B.add("rules: reductions", "%s %s over one element %s" % (
                op, dt, fp.h(ext, dt)),
                ["Reduction", "Special", "Identity"], g, [(dt, [1], [ext])])
    # f64 -> f16 / bf16: one rounding
    for dst in ("f16", "bf16"):
        vals = _off_tie(dst)
        g = kf.Graph()
        x = g.input("f64", "?")
        g.output(g.cast(x, dst))
        B.add("rules: casts", "cast f64 -> %s just off a tie: one rounding, "
              "never through f32" % dst, ["OneRounding"], g,
              [("f64", [len(vals)], vals)])
    # column slices: unit inner stride, padded rows
    for dt in ("f32", "f64", "i32"):
        for (rows, cols, ld) in ((3, 4, 6), (5, 3, 7), (2, 33, 40)):
            a = [fp.rnd(rng.uniform(-8, 8), dt) if dt in fp.FLOATS else
                 rng.randint(-100, 100) for _ in range(rows * cols)]
            b = [fp.rnd(rng.uniform(-8, 8), dt) if dt in fp.FLOATS else
                 rng.randint(-100, 100) for _ in range(rows * cols)]
            g = kf.Graph()
            x = g.input(dt, "??")
            y = g.input(dt, "??")
            g.output(g.op("maximum", x, g.op("neg", y)))
            B.add("rules: layouts", "%s column slice [%d,%d] of rows of %d "
                  "and a dense operand" % (dt, rows, cols, ld),
                  ["Strided", "ColumnSlice"], g,
                  [(dt, [rows, cols], a), (dt, [rows, cols], b)],
                  strides=[[ld, 1], None])
            g = kf.Graph()
            x = g.input(dt, "??")
            g.output(g.reduce("max", x, [1]))
            B.add("rules: layouts", "%s max over a column slice [%d,%d] of "
                  "rows of %d" % (dt, rows, cols, ld),
                  ["Strided", "ColumnSlice", "Reduction"], g,
                  [(dt, [rows, cols], a)], strides=[[ld, 1]])
    # offset inputs: element 0 is not the first storage element (and, for
    # odd offsets, not 16-byte aligned), also with padded rows
    for dt in ("f32", "f64", "i32", "f16"):
        for offs, shape, strides in (([1, 3], [7], None),
                                     ([2, 0], [3, 5], None),
                                     ([3, 1], [2, 4], [[6, 1], None])):
            n = 1
            for x in shape:
                n *= x
            vals = [[fp.rnd(rng.uniform(-8, 8), dt) if dt in fp.FLOATS else
                     rng.randint(-100, 100) for _ in range(n)]
                    for _ in range(2)]
            g = kf.Graph()
            x = g.input(dt, "?" * len(shape))
            y = g.input(dt, "?" * len(shape))
            if dt == "f16":
                g.output(g.op("maximum", g.cast(x, "f32"), g.cast(y, "f32")))
            else:
                g.output(g.op("maximum", x, g.op("neg", y)))
            B.add("rules: layouts", "%s inputs at storage offsets %r, shape "
                  "%r%s" % (dt, offs, shape, " with padded rows" if strides
                            else ""), ["Offset"] + (["Strided"] if strides
                                                    else []), g,
                  [(dt, shape, vals[0]), (dt, shape, vals[1])],
                  strides=strides, offsets=offs)
    # disable=fallback on the matmul paths
    M, K, N = 3, 5, 2
    av = [fp.rnd(rng.uniform(-2, 2), "f32") for _ in range(M * K)]
    bv = [fp.rnd(rng.uniform(-2, 2), "f32") for _ in range(K * N)]
    g = kf.Graph()
    a = g.input("f32", "??")
    b = g.input("f32", "??")
    g.output(g.matmul(a, b))
    B.add("rules: fallback", "matmul on the library path under "
          "disable=fallback", ["Matmul", "FallbackPath"], g,
          [("f32", [M, K], av), ("f32", [K, N], bv)],
          options={"enable": [], "disable": ["fallback"]},
          error="KILN_ERR_FALLBACK_DISABLED")
    # an ordinary axis of size 1 is not a broadcast axis
    g = kf.Graph()
    x = g.input("f32", "??")
    y = g.input("f32", "??")
    g.output(g.op("add", x, y))
    B.add("rules: shapes", "ordinary axis of size 1 against size 3",
          ["InvalidShape", "OrdinarySize1"], g,
          [("f32", [1, 4], [1.0] * 4), ("f32", [3, 4], [1.0] * 12)],
          error="KILN_ERR_SHAPE")
