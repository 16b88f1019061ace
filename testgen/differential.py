"""Category differential: large seeded random cases, generated at run time.

The runner generates the inputs from "seed", runs the fusion on the backend
under test and on the built-in ref backend (same options), and compares the
two with "tolerance".  The vectors hold no data except "inputsFirst" (the
first values of each input, so a runner can verify its generator).

Input generation recipe (normative; also in docs/conformance.md):

  splitmix64: state is a uint64 set to "seed".  next():
      state = state + 0x9E3779B97F4A7C15            (mod 2^64)
      z = state
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9      (mod 2^64)
      z = (z ^ (z >> 27)) * 0x94D049BB133111EB      (mod 2^64)
      return z ^ (z >> 31)
  One generator per test; inputs are filled in order (input 0 first), each
  in row-major element order, one next() per element.
  {"kind": "uniform", "lo": LO, "hi": HI} (float dtypes):
      u = (next() >> 11) * 2^-53                   (a double in [0, 1))
      x = LO + (HI - LO) * u                       (binary64 ops, each
                                                     rounded; no contraction)
      the element = x rounded to nearest even in the dtype.
  {"kind": "ints", "lo": LO, "hi": HI} (bool / integer dtypes):
      the element = LO + (next() mod (HI - LO + 1))   (exact integers;
      HI - LO + 1 <= 2^63 in every vector)

Tolerances (per output): {"kind": "exact"} bit-identical (any NaN matches
any NaN); {"kind": "ulp", "max": N} ordered-integer distance <= N;
{"kind": "sumBound", "n": n, "absFusion": KF}: |got - ref| <=
2 * gamma_n * S per output element, gamma_n = n u / (1 - n u), where n is
the number of terms reduced into each element, u = 2^-24 (f32) or 2^-53
(f64), and S is the ref backend's result of the fusion KF (the same
reduction over the absolute values of the terms) on the same inputs --
both results are within the single, order-independent bound gamma_{n-1}
sum|x| of the exact sum (docs/numerics.md), hence the factor 2; gamma_n
rather than gamma_{n-1} covers S being a rounded sum itself.
"""

import fp
import kf
import optable
from vecfile import VectorFile

M64 = (1 << 64) - 1

NOTES = {
    "Pointwise": "Large pointwise chain, exact comparison.",
    "Transcendental": "ULP-bounded functions: the two backends may differ "
                      "by twice the single-backend bound.",
    "Reduction": "Reductions compared with twice the sum bound.",
    "Integer": "Integer arithmetic (wrapping), exact.",
    "Cast": "Cast chains, exact.",
    "FastMath": "Both backends run under enable=fast_math.",
    "Contraction": "Contraction on by default; both backends must apply the "
                   "same rule.",
}


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


def gen_value(rng, dt, dist):
    if dist["kind"] == "uniform":
        u = (rng.next() >> 11) * 2.0 ** -53
        x = dist["lo"] + (dist["hi"] - dist["lo"]) * u
        return fp.rnd(x, dt)
    lo, hi = dist["lo"], dist["hi"]
    return lo + rng.next() % (hi - lo + 1)


def first_values(seed, inputs, k=4):
    """The first k values of every input (hex), per the recipe.  The state
    advances by a constant per draw, so skipping draws is an addition."""
    out = []
    consumed = 0
    for spec in inputs:
        n = 1
        for s in spec["shape"]:
            n *= s
        rng = SplitMix64(seed + consumed * 0x9E3779B97F4A7C15)
        out.append([fp.h(gen_value(rng, spec["dtype"], spec["dist"]),
                         spec["dtype"]) for _ in range(min(k, n))])
        consumed += n
    return out


def U(lo, hi):
    return {"kind": "uniform", "lo": lo, "hi": hi}


def I(lo, hi):
    return {"kind": "ints", "lo": lo, "hi": hi}


def build():
    vf = VectorFile("differential", NOTES)
    N = 1 << 20
    seed = [0x4B494C4E]

    def add(group, comment, flags, g, inputs, tol, options=None):
        seed[0] += 1
        s = seed[0]
        ins = [{"dtype": dt, "shape": shape, "dist": dist}
               for dt, shape, dist in inputs]
        vf.add("Differential", group, {
            "comment": comment, "flags": flags, "result": "valid",
            "fusion": g.text(), "seed": s,
            "options": options or {"enable": [], "disable": []},
            "inputs": ins, "inputsFirst": first_values(s, ins),
            "tolerance": tol})

    ex = [{"kind": "exact"}]
    for dt in ("f32", "f64"):
        g = kf.Graph()
        a, b, c = (g.input(dt, "?") for _ in range(3))
        g.output(g.op("relu", g.op("add", g.op("mul", a, b), c)))
        for opts in ({"enable": [], "disable": []},
                     {"enable": [], "disable": ["fma"]}):
            add("pointwise", "%s relu(a*b+c), 2^20 elements, %r" % (dt, opts),
                ["Pointwise", "Contraction"], g,
                [(dt, [N], U(-4.0, 4.0))] * 3, ex, opts)
        g = kf.Graph()
        a, b, c, d = (g.input(dt, "??") for _ in range(4))
        t = g.op("div", g.op("sub", g.op("mul", a, b), c), d)
        g.output(g.op("maximum", g.op("sqrt", g.op("abs", t)), t))
        add("pointwise", "%s max(sqrt|(a*b-c)/d|, (a*b-c)/d) [1024, 1023]"
            % dt, ["Pointwise"], g,
            [(dt, [1024, 1023], U(-100.0, 100.0))] * 3 +
            [(dt, [1024, 1023], U(0.5, 2.0))], ex)
    for dt in ("i32", "i64"):
        g = kf.Graph()
        a, b, c = (g.input(dt, "?") for _ in range(3))
        g.output(g.op("add", g.op("mul", a, b), g.op("neg", c)))
        lim = (1 << 31) if dt == "i32" else (1 << 40)
        add("integer", "%s a*b-c wrapping, 2^20 elements" % dt,
            ["Integer"], g, [(dt, [N], I(-lim, lim - 1))] * 3, ex)
    for op, lo, hi in (("exp", -80.0, 80.0), ("log", 1e-3, 1e6),
                       ("sin", -100.0, 100.0), ("tanh", -10.0, 10.0),
                       ("erf", -4.0, 4.0), ("sigmoid", -30.0, 30.0)):
        for dt in ("f32", "f64"):
            g = kf.Graph()
            x = g.input(dt, "?")
            g.output(g.op(op, x))
            b = optable.ulp_bound(op, dt)
            add("transcendental", "%s %s on [%g, %g]" % (dt, op, lo, hi),
                ["Transcendental"], g, [(dt, [N], U(lo, hi))],
                [{"kind": "ulp", "max": 2 * b}])
    g = kf.Graph()
    x = g.input("f32", "?")
    g.output(g.op("exp", x))
    add("transcendental", "f32 exp under fast_math on [-10, 10]",
        ["Transcendental", "FastMath"], g, [("f32", [N], U(-10.0, 10.0))],
        [{"kind": "ulp", "max": 2 + 2 + 11}],
        {"enable": ["fast_math"], "disable": []})
    for dt in ("f32", "f64"):
        for shape, axes in (([1024, 1024], [1]), ([1024, 1024], [0]),
                            ([N], [0]), ([64, 128, 128], [0, 2])):
            g = kf.Graph()
            x = g.input(dt, "?" * len(shape))
            g.output(g.reduce("sum", x, axes))
            ga = kf.Graph()
            xa = ga.input(dt, "?" * len(shape))
            ga.output(ga.reduce("sum", ga.op("abs", xa), axes))
            n = 1
            for a in axes:
                n *= shape[a]
            add("reduction", "%s sum %r axes=%r" % (dt, shape, axes),
                ["Reduction"], g, [(dt, shape, U(-1.0, 1.0))],
                [{"kind": "sumBound", "n": n, "absFusion": ga.text()}])
        g = kf.Graph()
        x = g.input(dt, "??")
        g.output(g.reduce("max", x, [1]))
        g.output(g.reduce("min", x, [0], True))
        add("reduction", "%s max / min [1000, 999]" % dt, ["Reduction"], g,
            [(dt, [1000, 999], U(-1e6, 1e6))], ex + ex)
    g = kf.Graph()
    x = g.input("f32", "?")
    h = g.cast(x, "f16")
    bb = g.cast(x, "bf16")
    g.output(g.cast(h, "f32"))
    g.output(g.cast(bb, "f32"))
    g.output(g.cast(x, "i32"))
    add("cast", "f32 -> f16/bf16/i32 casts, 2^20 elements", ["Cast"], g,
        [("f32", [N], U(-70000.0, 70000.0))], ex * 3)
    g = kf.Graph()
    x = g.input("i64", "?")
    g.output(g.cast(x, "f32"))
    g.output(g.cast(x, "f16"))
    add("cast", "i64 -> f32/f16 casts", ["Cast"], g,
        [("i64", [N], I(-(1 << 62), (1 << 62)))], ex * 2)
    return {"differential.json": vf.finish()}
