"""Category numerics: every op x accepted dtype x special values x shapes.

A test holds a .kf "fusion", "options" ({"enable","disable"} lists),
"inputs" (tensors) and either "outputs" (tensors with a "check") or, for
invalid tests, "error": {"status": "KILN_ERR_..."}.  Reference values come
from kf.Graph.evaluate (exact Fractions; transcendentals from refmath at
>= 400 bits), rounded correctly to the output dtype.

Checks (docs/conformance.md gives the exact formulas):
  exact  correctly rounded ops (any NaN matches any NaN)
  ulp    transcendentals: ordered-integer distance from the reference <= max
  abs    reductions and matmul: |got - ref| <= bound (hex f64 per element),
         bound = gamma_m * sum|terms| + |ref - exact| (rounded up to f64),
         gamma_m = m u / (1 - m u), m = n - 1 for a sum of n terms and K
         for a matmul, u = 2^-24 (f32) or 2^-53 (f64); 0 where every order
         is exact (errbound.py).
"""

import math
import random
from fractions import Fraction

import errbound
import fp
import kf
import many_inputs
import optable
from vecfile import VectorFile

NOTES = {
    "Special": "Special values: +-0, +-inf, NaN, subnormals, the extremes "
               "of the dtype.",
    "Random": "Values drawn from a fixed-seed generator.",
    "Rank0": "Rank-0 tensors.",
    "ZeroSize": "A tensor with a zero-size axis (no elements).",
    "OddSize": "Sizes that are not multiples of any vector width.",
    "Broadcast": "Broadcasting through declared broadcast axes (size 1).",
    "BroadcastOp": "Broadcasting through the broadcast op (a new rank).",
    "Strided": "Non-contiguous input strides (transposed, gaps).",
    "StrideZero": "An input with a stride-0 axis.",
    "Large": "Enough elements for several GPU blocks; repeat-encoded data.",
    "Transcendental": "ULP-bounded function (CUDA Math API maxima).",
    "FastMath": "enable=fast_math profile: looser bounds of docs/conformance.md; "
                "denormal inputs/outputs may flush to zero (ftz).",
    "SignedZero": "max/min/relu of +-0: either sign is acceptable "
                  "(alternatives).",
    "Tie": "Values exactly halfway between two values of the target type "
           "(round to nearest even).",
    "Saturation": "Float to integer casts saturate to the target range; "
                  "NaN -> 0.",
    "Overflow": "Results that overflow to infinity.",
    "IntWrap": "Integer arithmetic wraps (two's complement).",
    "Reduction": "Sum/max/min reduction; sums use the error-bound check.",
    "KeepDim": "Reduction with keepdim.",
    "Matmul": "Matmul, checked with the sum bound over K.",
    "Order": "Inputs where the order of accumulation matters (large K or "
             "n, all-positive terms, cancellation): every order in the "
             "accumulation type meets the bound, a narrower accumulator "
             "does not.",
    "MatmulPath": "A matmul path chosen by options (default fallback, "
                  "disable=matmul_expr_eval, enable=fuse_matmul).",
    "Contraction": "The contraction rule (add(mul(a,b),c) -> "
                   "fma when the mul has one use and is not an output).",
    "InvalidShape": "Execute must fail with KILN_ERR_SHAPE.",
    "InvalidDtype": "Execute must fail with KILN_ERR_DTYPE.",
    "Composite": "A fusion of several ops.",
    "OutputRules": "The caller gives an output that breaks an output rule "
                   "of kiln_execute (docs/runtime.md): wrong dtype, rank "
                   "or sizes, not dense row-major, or overlapping an input "
                   "or another output (givenOutputs).  Execute must fail "
                   "with the documented status and write nothing.",
    "ManyViews": "A segment with more than 16 inputs or outputs (17, 33, "
                 "70): broadcast, strided, stride-0 and size-1 inputs at "
                 "every position class (< 16, 16..31, >= 32, the last).",
    "SegmentSplit": "More views than one segment may hold "
                    "(docs/runtime.md, \"Segment limits\"): the planner "
                    "splits the segment.",
}

# The op rules and ULP bounds come from testgen's one copy of the C op
# table (optable.py, checked against `kiln fusion --op-table-json`).
ULP = optable.ULP

FLOAT = ("f32", "f64")
NUM = ("i32", "i64", "f32", "f64")
UNARY_DT = optable.op_dtypes("u")
BINARY_DT = optable.op_dtypes("b")
COMPARE_DT = optable.op_dtypes("c")
ALL_DT = optable.DTYPE_NAMES

# value ranges of random inputs per op: (lo, hi, log-uniform magnitude?)
DOMAIN = {"exp": {"f32": (-87.0, 88.0), "f64": (-700.0, 700.0)},
          "log": (1e-30, 1e30), "sqrt": (1e-30, 1e30),
          "rsqrt": (1e-30, 1e30), "sin": (-20.0, 20.0), "cos": (-20.0, 20.0),
          "tanh": (-12.0, 12.0), "sigmoid": (-40.0, 40.0),
          "erf": (-6.0, 6.0)}


ulp_bound = optable.ulp_bound


def rand_vals(rng, dt, n, op=None):
    out = []
    for _ in range(n):
        if dt == "bool":
            out.append(rng.randrange(2))
        elif dt in fp.INTS:
            bits = fp.BITS[dt]
            r = rng.random()
            if r < 0.4:
                out.append(rng.randrange(-1000, 1000))
            else:
                out.append(rng.randrange(-(1 << (bits - 1)),
                                         1 << (bits - 1)))
        else:
            d = DOMAIN.get(op)
            if isinstance(d, dict):
                d = d.get(dt, d.get("f32"))
            if d is None:
                mag = math.exp(rng.uniform(math.log(1e-6), math.log(1e6)))
                v = mag * rng.choice((1, -1))
            elif d[0] > 0:
                v = math.exp(rng.uniform(math.log(d[0]), math.log(d[1])))
            else:
                v = rng.uniform(*d)
            out.append(fp.rnd(v, dt))
    return out


def extra_specials(op, dt):
    """Op-specific interesting points (rounded to dt)."""
    pts = {
        "exp": [88.72283935546875, 88.7228, -103.97, -87.33, 709.78, -745.1,
                1e-10, -1e-10, 0.6931471805599453, 20.0],
        "log": [1.0, 2.0, 0.5, 1e-40, 1e-310, 1.0000001, 0.9999999, 10.0],
        "sqrt": [4.0, 2.0, 1e-40, 1e-310, 0.25, 1e30],
        "rsqrt": [4.0, 2.0, 1e-40, 1e-310, 0.25, 1e30, 16.0],
        "reciprocal": [3.0, 1e-39, 1e-310, 1e38, 1e308, 7.0],
        "sin": [3.141592653589793, 1.5707963267948966, 1e10, 1e22, 1e30,
                -100.0, 6.283185307179586, 1e-20],
        "cos": [3.141592653589793, 1.5707963267948966, 1e10, 1e22, 1e30,
                -100.0, 6.283185307179586, 1e-20],
        "tanh": [1e-20, 0.25, 9.0, 20.0, -0.0001, 400.0],
        "sigmoid": [1e-20, -20.0, 20.0, -100.0, 100.0, -750.0],
        "erf": [1e-20, 0.5, 2.0, 3.9, 5.9, -6.5, 10.0],
        "floor": [0.5, -0.5, 1.5, -1.5, 2.0 ** 52 + 0.5, -2.5, 1e20, -1e-30],
        "ceil": [0.5, -0.5, 1.5, -1.5, 2.0 ** 52 + 0.5, -2.5, 1e20, -1e-30],
    }.get(op, [])
    return [fp.rnd(v, dt) for v in pts]


class Builder:
    def __init__(self):
        self.vf = VectorFile("numerics", NOTES)
        self.memo = {}

    def add(self, group, comment, flags, g, inputs, options=None,
            check=None, strides=None, period=None, alternatives=None,
            error=None, given=None, offsets=None):
        """inputs: list of (dt, shape, logical values).
        check: dict, or function(k, out_values, inputs) -> dict.
        alternatives: function(k, out_values, inputs) -> {idx: [vals]}."""
        options = options or {"enable": [], "disable": []}
        t = {"comment": comment, "flags": list(flags), "fusion": g.text(),
             "options": {"enable": list(options.get("enable", [])),
                         "disable": list(options.get("disable", []))}}
        jin = []
        for i, (dt, shape, vals) in enumerate(inputs):
            st = strides[i] if strides else None
            off = offsets[i] if offsets else 0
            head = kf.periodic(vals, period) if period and st is None \
                and not off else None
            if head is not None:
                jin.append(kf.repeat_tensor(dt, shape, head))
            else:
                jin.append(kf.tensor(dt, shape, vals, strides=st,
                                     offset=off))
        t["inputs"] = jin
        if error:
            t["result"] = "invalid"
            t["error"] = {"status": error}
            if given is not None:
                t["givenOutputs"] = given
            self.vf.add("Numerics", group, t)
            return
        ev_in = [(s, v) for _, s, v in inputs]
        short = (period and not strides and
                 all(len(s) == 1 and s == inputs[0][1] for _, s, _ in inputs)
                 and all(n.op not in ("sum", "max", "min", "matmul",
                                      "broadcast") for n in g.nodes))
        if short:
            ev_in = [([period], v[:period]) for s, v in ev_in]
        outs = g.evaluate(ev_in, disable=options.get("disable", []),
                          memo=self.memo)
        if short:
            count = inputs[0][1][0]
            outs = [([count], kf.expand_repeat(v, count)) for _, v in outs]
        jout = []
        acceptable = False
        for k, (shape, vals) in enumerate(outs):
            dt = g.nodes[g.outputs[k]].dtype
            o = {"dtype": dt, "shape": list(shape)}
            head = kf.periodic(vals, period) if period else None
            if head is not None:
                o["data"] = {"repeat": kf.hexlist(head, dt),
                             "count": len(vals)}
            else:
                o["data"] = kf.hexlist(vals, dt)
            c = check(k, vals, inputs) if callable(check) else dict(
                check or {"kind": "exact"})
            if alternatives:
                alt = alternatives(k, vals, inputs)
                if alt:
                    c["alternatives"] = {str(i): kf.hexlist(v, dt)
                                         for i, v in sorted(alt.items())}
                    acceptable = True
            o["check"] = c
            jout.append(o)
        t["outputs"] = jout
        t["result"] = "acceptable" if acceptable else "valid"
        self.vf.add("Numerics", group, t)


def _neg(v):
    return math.copysign(1.0, v) < 0


def zero_alts(op):
    """Alternatives for signed-zero ties of maximum/minimum/relu."""
    def alt(k, vals, inputs):
        out = {}
        if op == "relu":
            xs = inputs[0][2]
            for i, x in enumerate(xs):
                if isinstance(x, float) and x == 0 and _neg(x):
                    out[i] = [-0.0]
            return out
        a, b = inputs[0][2], inputs[1][2]
        if len(a) != len(vals) or len(b) != len(vals):
            return out
        for i, (x, y) in enumerate(zip(a, b)):
            if isinstance(x, float) and x == 0 and y == 0 and \
                    _neg(x) != _neg(y):
                out[i] = [-vals[i] if vals[i] == 0 else vals[i]]
        return out
    return alt


# Under fast_math, NVRTC turns tanhf into tanh.approx.f32 (MUFU.TANH), whose
# error over every f32 input is at most 133.96 ulp (maximum relative error
# 1.113e-5).  A 4x-the-default bound (8 ulp) passed on the H200 only while
# NVRTC's own compile cache served the precise kernel for the fast compile
# (docs/backends.md, "NVRTC's compile cache"); the real fast kernel was
# measured at up to 104 ulp on this test's 40 inputs.
FAST_TANH_ULP = 134
# Under fast_math, sigmoid is e/(1+e) or 1/(1+e) with e = __expf(+-x), whose
# error is 2 + floor(|1.173 x|) ulp (CUDA Math API): a relative error that
# grows with |x|.  The division keeps the relative error of e (x < 0) or
# halves it (x >= 0), and an ulp of e can be two ulp of the result (their
# binades differ), so 2 (2 + 1.173 |x|) + 3 roundings; the bound is
# 16 + floor(|2.346 x|) (docs/numerics.md, Transcendentals).
FAST_SIGMOID_ULP = 16
FAST_SIGMOID_PER_X = 2.346


def value_check(op, dt, fast=False):
    b = ulp_bound(op, dt)
    if b is None:
        c = {"kind": "exact"}
    else:
        c = {"kind": "ulp", "max": b * (4 if fast else 1)}
    if fast:
        c["ftz"] = True
    return c


def unary_graph(op, dt, axes):
    g = kf.Graph()
    x = g.input(dt, axes)
    g.output(g.op(op, x))
    return g


def binary_graph(op, dt, ax_a, ax_b):
    g = kf.Graph()
    a = g.input(dt, ax_a)
    b = g.input(dt, ax_b)
    g.output(g.op(op, a, b))
    return g


def storage_values(rng, dt, shape, strides, op=None):
    """Logical values consistent with a strided layout (stride 0 repeats)."""
    size = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    store = rand_vals(rng, dt, size, op)
    cst = kf._strides(shape)
    n = 1
    for s in shape:
        n *= s
    out = []
    for lin in range(n):
        rem, off = lin, 0
        for a in range(len(shape)):
            q, rem = divmod(rem, cst[a])
            off += q * strides[a]
        out.append(store[off])
    return out


# ----------------------------------------------------------------- unary

def gen_unary(B, rng):
    for op in sorted(UNARY_DT):
        for dt in UNARY_DT[op]:
            chk = value_check(op, dt)
            alts = zero_alts("relu") if op == "relu" and dt in FLOAT \
                else None
            sp = fp.specials(dt) + extra_specials(op, dt)
            grp = "unary %s" % op
            B.add(grp, "%s %s special values" % (op, dt), ["Special"],
                  unary_graph(op, dt, "?"), [(dt, [len(sp)], sp)],
                  check=chk, alternatives=alts)
            vals = rand_vals(rng, dt, 15, op)
            B.add(grp, "%s %s random [3,5]" % (op, dt),
                  ["Random", "OddSize"], unary_graph(op, dt, "??"),
                  [(dt, [3, 5], vals)], check=chk, alternatives=alts)
            vals = rand_vals(rng, dt, 1, op)
            B.add(grp, "%s %s rank 0" % (op, dt), ["Rank0"],
                  unary_graph(op, dt, ""), [(dt, [], vals)], check=chk,
                  alternatives=alts)
            B.add(grp, "%s %s zero-size [0,4]" % (op, dt), ["ZeroSize"],
                  unary_graph(op, dt, "??"), [(dt, [0, 4], [])], check=chk)
            for shape, st, fl in (([3, 4], [1, 3], "Strided"),
                                  ([4, 3], [7, 2], "Strided"),
                                  ([3, 5], [0, 1], "StrideZero")):
                vals = storage_values(rng, dt, shape, st, op)
                B.add(grp, "%s %s strides %r" % (op, dt, st), [fl],
                      unary_graph(op, dt, "??"), [(dt, shape, vals)],
                      check=chk, strides=[st], alternatives=alts)
            pat = rand_vals(rng, dt, 37, op)
            n = 20011
            B.add(grp, "%s %s %d elements" % (op, dt, n), ["Large", "Random"],
                  unary_graph(op, dt, "?"),
                  [(dt, [n], kf.expand_repeat(pat, n))], check=chk,
                  period=37)
            # broadcast op, then a binary op to expand
            if op in ("neg", "abs", "exp", "sqrt"):
                g = kf.Graph()
                x = g.input(dt, "?")
                y = g.input(dt, "??")
                bx = g.broadcast(x, 2, [0])
                g.output(g.op(op, bx))
                g.output(g.op("maximum", g.op(op, bx), y)
                         if dt != "bool" else y)
                xv = rand_vals(rng, dt, 5, op)
                yv = rand_vals(rng, dt, 15, op)
                B.add(grp, "%s %s after broadcast rank=2 new=[0]" % (op, dt),
                      ["BroadcastOp", "Composite"], g,
                      [(dt, [5], xv), (dt, [3, 5], yv)],
                      check=lambda k, v, i, c=chk: dict(c))


# ---------------------------------------------------------------- binary

def _cross(vals):
    a, b = [], []
    for x in vals:
        for y in vals:
            a.append(x)
            b.append(y)
    return a, b


def binary_specials(op, dt):
    if dt in fp.INTS:
        return fp.specials(dt)[:12]
    sp = fp.specials(dt)
    pick = [0.0, -0.0, 1.0, -1.0, fp.INF, -fp.INF, fp.NAN, sp[10], sp[14],
            sp[12], 0.5, -3.5]
    if op == "pow":
        pick = [0.0, -0.0, 1.0, -1.0, fp.INF, -fp.INF, fp.NAN, 2.0, 0.5,
                -2.0, 3.0, -0.5, 1.5, sp[14]]
    return [fp.rnd(v, dt) for v in pick]


def gen_binary(B, rng, ops, group_prefix="binary"):
    for op in sorted(ops):
        for dt in ops[op]:
            chk = value_check(op, dt) if op in BINARY_DT else \
                {"kind": "exact"}
            alts = zero_alts(op) if op in ("maximum", "minimum") and \
                dt in FLOAT else None
            grp = "%s %s" % (group_prefix, op)
            dom = "pow" if op == "pow" else None
            sp = binary_specials(op, dt) if dt != "bool" else [0, 1]
            a, b = _cross(sp)
            B.add(grp, "%s %s special values (all pairs)" % (op, dt),
                  ["Special"] + (["SignedZero"] if alts else []) +
                  (["IntWrap"] if dt in fp.INTS else []),
                  binary_graph(op, dt, "?", "?"),
                  [(dt, [len(a)], a), (dt, [len(b)], b)], check=chk,
                  alternatives=alts)

            def rv(n):
                if op == "pow":
                    return ([fp.rnd(rng.uniform(0.05, 8.0), dt)
                             for _ in range(n)],
                            [fp.rnd(rng.uniform(-6.0, 6.0), dt)
                             for _ in range(n)])
                return rand_vals(rng, dt, n, dom), rand_vals(rng, dt, n, dom)
            a, b = rv(15)
            B.add(grp, "%s %s random [3,5]" % (op, dt), ["Random", "OddSize"],
                  binary_graph(op, dt, "??", "??"),
                  [(dt, [3, 5], a), (dt, [3, 5], b)], check=chk,
                  alternatives=alts)
            a, b = rv(1)
            B.add(grp, "%s %s rank 0" % (op, dt), ["Rank0"],
                  binary_graph(op, dt, "", ""), [(dt, [], a), (dt, [], b)],
                  check=chk, alternatives=alts)
            B.add(grp, "%s %s zero-size [3,0]" % (op, dt), ["ZeroSize"],
                  binary_graph(op, dt, "??", "??"),
                  [(dt, [3, 0], []), (dt, [3, 0], [])], check=chk)
            a, _ = rv(24)
            _, b = rv(6)
            B.add(grp, "%s %s broadcast [4,6] x [1,6]" % (op, dt),
                  ["Broadcast"], binary_graph(op, dt, "??", "1?"),
                  [(dt, [4, 6], a), (dt, [1, 6], b)], check=chk,
                  alternatives=alts)
            _, b = rv(4)
            B.add(grp, "%s %s broadcast [4,6] x [4,1]" % (op, dt),
                  ["Broadcast"], binary_graph(op, dt, "??", "?1"),
                  [(dt, [4, 6], a), (dt, [4, 1], b)], check=chk,
                  alternatives=alts)
            g = kf.Graph()
            x = g.input(dt, "??")
            y = g.input(dt, "?")
            g.output(g.op(op, x, g.broadcast(y, 2, [0])))
            _, b = rv(6)
            B.add(grp, "%s %s with broadcast op" % (op, dt), ["BroadcastOp"],
                  g, [(dt, [4, 6], a), (dt, [6], b)], check=chk,
                  alternatives=alts)
            a, b = rv(12)
            bz = [b[i % 4] for i in range(12)]
            B.add(grp, "%s %s transposed x stride-0" % (op, dt),
                  ["Strided", "StrideZero"], binary_graph(op, dt, "??", "??"),
                  [(dt, [3, 4], a), (dt, [3, 4], bz)], check=chk,
                  strides=[[1, 3], [0, 1]], alternatives=alts)
            pa, pb = rv(41)
            n = 20500
            B.add(grp, "%s %s %d elements" % (op, dt, n), ["Large", "Random"],
                  binary_graph(op, dt, "?", "?"),
                  [(dt, [n], kf.expand_repeat(pa, n)),
                   (dt, [n], kf.expand_repeat(pb, n))], check=chk, period=41)


# -------------------------------------------------------------- others

def gen_logical(B, rng):
    for op in ("and", "or"):
        a, b = _cross([0, 1])
        B.add("logical", "%s truth table" % op, ["Special"],
              binary_graph(op, "bool", "?", "?"),
              [("bool", [4], a), ("bool", [4], b)])
        a = [rng.randrange(2) for _ in range(35)]
        b = [rng.randrange(2) for _ in range(7)]
        B.add("logical", "%s broadcast [5,7] x [1,7]" % op, ["Broadcast"],
              binary_graph(op, "bool", "??", "1?"),
              [("bool", [5, 7], a), ("bool", [1, 7], b)])
        pa = [rng.randrange(2) for _ in range(29)]
        pb = [rng.randrange(2) for _ in range(29)]
        B.add("logical", "%s 30001 elements" % op, ["Large"],
              binary_graph(op, "bool", "?", "?"),
              [("bool", [30001], kf.expand_repeat(pa, 30001)),
               ("bool", [30001], kf.expand_repeat(pb, 30001))], period=29)
    B.add("logical", "not", ["Special"], unary_graph("not", "bool", "?"),
          [("bool", [2], [0, 1])])
    B.add("logical", "not rank 0", ["Rank0"], unary_graph("not", "bool", ""),
          [("bool", [], [1])])
    B.add("logical", "not strided", ["Strided"],
          unary_graph("not", "bool", "??"),
          [("bool", [3, 3], [rng.randrange(2) for _ in range(9)])],
          strides=[[1, 3]])


def gen_where(B, rng):
    for dt in ALL_DT:
        g = kf.Graph()
        c = g.input("bool", "?")
        a = g.input(dt, "?")
        b = g.input(dt, "?")
        g.output(g.op("where", c, a, b))
        sp = fp.specials(dt)
        n = len(sp)
        cv = [i % 2 for i in range(n)]
        B.add("where", "where %s special values" % dt, ["Special"], g,
              [("bool", [n], cv), (dt, [n], sp), (dt, [n], sp[::-1])])
        g = kf.Graph()
        c = g.input("bool", "?1")
        a = g.input(dt, "??")
        b = g.input(dt, "1?")
        g.output(g.op("where", c, a, b))
        B.add("where", "where %s broadcast cond [4,1], b [1,5]" % dt,
              ["Broadcast"], g,
              [("bool", [4, 1], [1, 0, 0, 1]),
               (dt, [4, 5], rand_vals(rng, dt, 20)),
               (dt, [1, 5], rand_vals(rng, dt, 5))])
        g = kf.Graph()
        c = g.input("bool", "?")
        a = g.input(dt, "?")
        b = g.input(dt, "?")
        g.output(g.op("where", c, a, b))
        pc = [rng.randrange(2) for _ in range(31)]
        pa, pb = rand_vals(rng, dt, 31), rand_vals(rng, dt, 31)
        nn = 40000
        B.add("where", "where %s %d elements" % (dt, nn), ["Large"], g,
              [("bool", [nn], kf.expand_repeat(pc, nn)),
               (dt, [nn], kf.expand_repeat(pa, nn)),
               (dt, [nn], kf.expand_repeat(pb, nn))], period=31)
        B.add("where", "where %s rank 0" % dt, ["Rank0"],
              _where_g(dt, ""), [("bool", [], [0]),
                                 (dt, [], rand_vals(rng, dt, 1)),
                                 (dt, [], rand_vals(rng, dt, 1))])


def _where_g(dt, ax):
    g = kf.Graph()
    c = g.input("bool", ax)
    a = g.input(dt, ax)
    b = g.input(dt, ax)
    g.output(g.op("where", c, a, b))
    return g


def gen_fma(B, rng):
    for dt in FLOAT:
        g = kf.Graph()
        a, b, c = (g.input(dt, "?") for _ in range(3))
        g.output(g.op("fma", a, b, c))
        sp = [fp.rnd(v, dt) for v in (0.0, -0.0, 1.0, -1.0, fp.INF, -fp.INF,
                                      fp.NAN, fp.max_finite(dt),
                                      fp.min_subnormal(dt), 3.0)]
        av, bv, cv = [], [], []
        for x in sp:
            for y in sp:
                for z in sp[:7] + [sp[8]]:
                    av.append(x)
                    bv.append(y)
                    cv.append(z)
        n = len(av)
        B.add("fma", "fma %s special triples" % dt, ["Special"], g,
              [(dt, [n], av), (dt, [n], bv), (dt, [n], cv)])
        av = rand_vals(rng, dt, 45)
        bv = rand_vals(rng, dt, 45)
        cv = [fp.rnd(-float(fp.round_q(Fraction(x) * Fraction(y), dt)), dt)
              if i % 2 else z for i, (x, y, z) in
              enumerate(zip(av, bv, rand_vals(rng, dt, 45)))]
        B.add("fma", "fma %s random, half cancelling" % dt, ["Random"], g,
              [(dt, [45], av), (dt, [45], bv), (dt, [45], cv)])
        g2 = kf.Graph()
        a, b, c = g2.input(dt, "??"), g2.input(dt, "1?"), g2.input(dt, "?1")
        g2.output(g2.op("fma", a, b, c))
        B.add("fma", "fma %s broadcast" % dt, ["Broadcast"], g2,
              [(dt, [3, 4], rand_vals(rng, dt, 12)),
               (dt, [1, 4], rand_vals(rng, dt, 4)),
               (dt, [3, 1], rand_vals(rng, dt, 3))])
        g3 = kf.Graph()
        a, b, c = (g3.input(dt, "") for _ in range(3))
        g3.output(g3.op("fma", a, b, c))
        B.add("fma", "fma %s rank 0" % dt, ["Rank0"], g3,
              [(dt, [], [fp.rnd(1 + 2 ** -20, dt)]),
               (dt, [], [fp.rnd(1 - 2 ** -20, dt)]), (dt, [], [-1.0])])
        # subnormal results: x*y tiny
        ms = fp.min_normal(dt)
        av = [fp.rnd(ms * 0.75, dt), fp.rnd(1.5, dt), fp.rnd(-ms, dt)]
        bv = [0.5, fp.rnd(ms, dt), 0.25]
        cv = [fp.rnd(fp.min_subnormal(dt), dt), fp.rnd(-ms, dt), 0.0]
        B.add("fma", "fma %s subnormal results" % dt, ["Special"], g,
              [(dt, [3], av), (dt, [3], bv), (dt, [3], cv)])


def cast_inputs(src, dst):
    vals = list(fp.specials(src))
    flags = ["Special"]
    if fp.is_float(src) and fp.is_float(dst) and \
            fp.params(dst)[0] < fp.params(src)[0]:
        # ties: halfway between consecutive dst values, both parities
        p = fp.params(dst)[0]
        for base in (1.0, 1.0 + 2.0 ** (1 - p), 3.0, -5.0, 1000.0):
            b = fp.rnd(base, dst)
            u = float(fp.ulp_of(b, dst))
            for k in (0.5, 1.5, 0.25, 0.75):
                v = b + math.copysign(u * k, b)
                if fp.rnd(v, src) == v:
                    vals.append(v)
        # overflow to inf, subnormal targets
        vals += [fp.rnd(v, src) for v in (fp.max_finite(dst) * 1.5,
                                           -fp.max_finite(dst) * 1.5,
                                           fp.min_subnormal(dst) * 0.5,
                                           fp.min_subnormal(dst) * 0.75,
                                           fp.min_normal(dst) * 0.999)
                 if fp.max_finite(src) > abs(v)]
        flags += ["Tie", "Overflow"]
    if src in fp.INTS and fp.is_float(dst):
        p = fp.params(dst)[0]
        for e in (p, p + 1, p + 5, 30, 62):
            if e >= fp.BITS[src] - 1:
                continue
            for k in (1, 2, 3):
                vals += [(1 << e) + k, -((1 << e) + k)]
        vals += [65519, 65520, 65504, 65536] if dst == "f16" else []
        flags += ["Tie"]
    if fp.is_float(src) and dst in fp.INTS:
        bits = fp.BITS[dst]
        for v in (2.0 ** (bits - 1), -2.0 ** (bits - 1), 2.0 ** (bits - 1)
                  - 2 ** (bits - 1 - 24), 1e30, -1e30, 2.7, -2.7, 0.999,
                  -0.999, 2.0 ** 31 + 0.5, -(2.0 ** 31) - 1.0):
            if abs(v) <= fp.max_finite(src):
                vals.append(fp.rnd(v, src))
        flags += ["Saturation"]
    out = []
    seen = set()
    for v in vals:
        k = fp.encode(v, src)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out, flags


def gen_cast(B, rng):
    for src in ALL_DT:
        for dst in ALL_DT:
            g = kf.Graph()
            x = g.input(src, "?")
            g.output(g.cast(x, dst))
            vals, flags = cast_inputs(src, dst)
            B.add("cast", "cast %s -> %s" % (src, dst), flags, g,
                  [(src, [len(vals)], vals)])
            g = kf.Graph()
            x = g.input(src, "??")
            g.output(g.cast(x, dst))
            rv = rand_vals(rng, src, 6) if src in ("bool",) + fp.INTS else \
                [fp.rnd(rng.uniform(-300, 300), src) for _ in range(6)]
            B.add("cast", "cast %s -> %s transposed [2,3]" % (src, dst),
                  ["Strided", "Random"], g, [(src, [2, 3], rv)],
                  strides=[[1, 2]])


# ------------------------------------------------------------ reductions

def sum_check(dt, axes_groups):
    """abs bounds for a sum: per output element from its input group
    (errbound.sum_bound: gamma_{n-1} sum|x_i| + |ref - exact|)."""

    def chk(k, vals, inputs):
        bounds = []
        for i, xs in enumerate(axes_groups):
            if any(not math.isfinite(x) for x in xs):
                bounds.append(fp.h(0.0, "f64"))
                continue
            ref = vals[i]
            bnd = errbound.sum_bound(xs, ref if math.isfinite(ref) else
                                     fp.exact_sum(xs), dt)
            bounds.append(fp.h(fp.ceil_f64(bnd), "f64"))
        return {"kind": "abs", "bounds": bounds}
    return chk


def groups_of(shape, vals, axes):
    """Input values grouped per output element (row-major output order)."""
    keep = [a for a in range(len(shape)) if a not in axes]
    oshape = [shape[a] for a in keep]
    st = kf._strides(shape)
    ost = kf._strides(oshape)
    n_out = 1
    for s in oshape:
        n_out *= s
    groups = [[] for _ in range(n_out)]
    for lin, v in enumerate(vals):
        rem, o = lin, 0
        for a in range(len(shape)):
            q, rem = divmod(rem, st[a])
            if a not in axes:
                o += q * ost[keep.index(a)]
        groups[o].append(v)
    return groups


def gen_reduce(B, rng):
    cases = [([5, 7], [1], False), ([5, 7], [0], False), ([5, 7], [0, 1],
                                                           False),
             ([5, 7], [1], True), ([3, 4, 5], [0, 2], True),
             ([3, 4, 5], [1], False), ([6], [0], False)]
    for op in ("sum", "max", "min"):
        for dt in NUM:
            for shape, axes, keep in cases:
                g = kf.Graph()
                x = g.input(dt, "?" * len(shape))
                g.output(g.reduce(op, x, axes, keep))
                n = 1
                for s in shape:
                    n *= s
                vals = rand_vals(rng, dt, n)
                chk = sum_check(dt, groups_of(shape, vals, axes)) if (
                    op == "sum" and dt in FLOAT) else {"kind": "exact"}
                fl = ["Reduction", "Random"] + (["KeepDim"] if keep else [])
                B.add("reduction %s" % op, "%s %s %r axes=%r%s" % (
                    op, dt, shape, axes, " keepdim" if keep else ""), fl, g,
                    [(dt, shape, vals)], check=chk)
            # special values along the reduced axis
            sp = fp.specials(dt)
            g = kf.Graph()
            x = g.input(dt, "??")
            g.output(g.reduce(op, x, [1]))
            if dt in FLOAT:
                rows = [[1.0, fp.NAN, 2.0], [fp.INF, -1.0, 3.0],
                        [fp.INF, -fp.INF, 0.0], [-0.0, 0.0, -0.0],
                        [sp[10], -sp[10], 1.0], [sp[14], sp[14], -sp[14]]]
            else:
                rows = [sp[0:3], sp[9:12], [sp[9], sp[9], 1] if op == "sum"
                        else sp[3:6]]
            vals = [v for r in rows for v in r]
            shape = [len(rows), 3]
            chk = sum_check(dt, rows) if op == "sum" and dt in FLOAT else \
                {"kind": "exact"}
            alts = None
            if op != "sum" and dt in FLOAT:
                def alts(k, v, i):
                    return {3: [-v[3]]}
            B.add("reduction %s" % op, "%s %s special rows" % (op, dt),
                  ["Reduction", "Special"] +
                  (["IntWrap"] if dt in fp.INTS and op == "sum" else []) +
                  (["SignedZero"] if alts else []), g,
                  [(dt, shape, vals)], check=chk, alternatives=alts)
            # strided input
            g = kf.Graph()
            x = g.input(dt, "??")
            g.output(g.reduce(op, x, [0]))
            vals = rand_vals(rng, dt, 12)
            sh = [3, 4]
            chk = sum_check(dt, groups_of(sh, vals, [0])) if (
                op == "sum" and dt in FLOAT) else {"kind": "exact"}
            B.add("reduction %s" % op, "%s %s transposed input" % (op, dt),
                  ["Reduction", "Strided"], g, [(dt, sh, vals)], check=chk,
                  strides=[[1, 3]])
            # large: all elements, and inner axis of many rows
            pat = rand_vals(rng, dt, 53)
            for sh, axes in (([100003], [0]), ([40, 2001], [1]),
                             ([2001, 30], [0])):
                n = sh[0] * (sh[1] if len(sh) > 1 else 1)
                vals = kf.expand_repeat(pat, n)
                g = kf.Graph()
                x = g.input(dt, "?" * len(sh))
                g.output(g.reduce(op, x, axes))
                chk = sum_check(dt, groups_of(sh, vals, axes)) if (
                    op == "sum" and dt in FLOAT) else {"kind": "exact"}
                t_in = [(dt, sh, vals)]
                B.add("reduction %s" % op, "%s %s %r axes=%r" % (
                    op, dt, sh, axes), ["Reduction", "Large"], g, t_in,
                    check=chk, period=53)
            # the worst case of sequential accumulation: a large value
            # first, then ones that each round away (within the bound with
            # nothing to spare: gamma_{n-1} sum|x| is that worst case)
            if op == "sum" and dt in FLOAT:
                big = 2.0 ** (24 if dt == "f32" else 53)
                for sh, axes in (([3, 1000], [1]), ([500, 2], [0]),
                                 ([4099], [0]), ([2, 64], [1])):
                    if len(sh) == 1 or axes == [1]:
                        row = sh[-1]
                        vals = [big if i % row == 0 else 1.0
                                for i in range(sh[0] * (sh[1] if len(sh) > 1
                                                        else 1))]
                    else:
                        vals = [big if i < sh[1] else 1.0
                                for i in range(sh[0] * sh[1])]
                    g = kf.Graph()
                    x = g.input(dt, "?" * len(sh))
                    g.output(g.reduce("sum", x, axes))
                    B.add("reduction sum", "sum %s of [2^%d, 1, 1, ...] %r "
                          "axes=%r: sequential accumulation in %s is the "
                          "worst case the bound allows" % (
                              dt, 24 if dt == "f32" else 53, sh, axes, dt),
                          ["Reduction", "Special"], g, [(dt, sh, vals)],
                          check=sum_check(dt, groups_of(sh, vals, axes)))
                # all-positive terms, many of them: every order in dt
                # meets the bound, a narrower accumulator does not
                prng = random.Random(1400 + FLOAT.index(dt))
                pat = [fp.rnd(prng.random(), dt) for _ in range(53)]
                for sh, axes in (([3, 4099], [1]), ([4099, 3], [0])):
                    vals = kf.expand_repeat(pat, sh[0] * sh[1])
                    g = kf.Graph()
                    x = g.input(dt, "??")
                    g.output(g.reduce("sum", x, axes))
                    B.add("reduction sum", "sum %s of all-positive uniform "
                          "[0, 1) %r axes=%r: an accumulator narrower than "
                          "%s exceeds the bound" % (dt, sh, axes, dt),
                          ["Reduction", "Large", "Order"], g,
                          [(dt, sh, vals)], period=53,
                          check=sum_check(dt, groups_of(sh, vals, axes)))
            # zero-size
            g = kf.Graph()
            x = g.input(dt, "??")
            g.output(g.reduce(op, x, [1]))
            if op == "sum":
                B.add("reduction %s" % op, "sum %s over an empty axis = 0"
                      % dt, ["Reduction", "ZeroSize"], g,
                      [(dt, [3, 0], [])],
                      check={"kind": "exact"} if dt in fp.INTS else
                      {"kind": "abs", "bounds": [fp.h(0.0, "f64")] * 3})
            else:
                B.add("reduction %s" % op, "%s %s over an empty axis fails"
                      % (op, dt), ["Reduction", "ZeroSize", "InvalidShape"],
                      g, [(dt, [3, 0], [])], error="KILN_ERR_SHAPE")
            B.add("reduction %s" % op, "%s %s of [0,4] over axis 1" % (op, dt),
                  ["Reduction", "ZeroSize"], g, [(dt, [0, 4], [])],
                  check={"kind": "exact"} if op != "sum" or dt in fp.INTS
                  else {"kind": "abs", "bounds": []})


# ---------------------------------------------------------------- matmul

def mm_check(av, bv, M, K, N, epilogue=None):
    """abs bounds of a matmul (errbound.matmul_bounds: gamma_K P + |ref -
    exact|, 0 where exact in any order; with the epilogue's add)."""
    def chk(k, vals, inputs):
        return {"kind": "abs", "bounds": errbound.matmul_bounds(
            av, bv, M, K, N, vals, epilogue)}
    return chk


PATHS = (("default", {"enable": [], "disable": []}),
         ("generated", {"enable": [], "disable": ["matmul_expr_eval"]}),
         ("fused", {"enable": ["fuse_matmul"], "disable": []}))


def gen_matmul(B, rng):
    for dt in ("f16", "bf16", "f32"):
        for M, K, N in ((1, 1, 1), (7, 13, 5), (16, 64, 16), (33, 300, 9),
                        (4, 1, 3)):
            av = [fp.rnd(rng.uniform(-2, 2), dt) for _ in range(M * K)]
            bv = [fp.rnd(rng.uniform(-2, 2), dt) for _ in range(K * N)]
            for pname, opts in PATHS:
                g = kf.Graph()
                a = g.input(dt, "??")
                b = g.input(dt, "??")
                if pname == "fused":
                    bias = g.input("f32", "1?")
                    g.output(g.op("relu", g.op("add", g.matmul(a, b), bias)))
                    cv = [fp.rnd(rng.uniform(-1, 1), "f32")
                          for _ in range(N)]
                    ins = [(dt, [M, K], av), (dt, [K, N], bv),
                           ("f32", [1, N], cv)]
                    chk = mm_check(av, bv, M, K, N, cv)
                else:
                    g.output(g.matmul(a, b))
                    ins = [(dt, [M, K], av), (dt, [K, N], bv)]
                    chk = mm_check(av, bv, M, K, N)
                B.add("matmul", "matmul %s [%d,%d]x[%d,%d] path %s" % (
                    dt, M, K, K, N, pname), ["Matmul", "MatmulPath"], g, ins,
                    options=opts, check=chk)
        # epilogue on the default path, transposed operand
        M, K, N = 5, 8, 6
        av = [fp.rnd(rng.uniform(-2, 2), dt) for _ in range(M * K)]
        bv = [fp.rnd(rng.uniform(-2, 2), dt) for _ in range(K * N)]
        cv = [fp.rnd(rng.uniform(-1, 1), "f32") for _ in range(N)]
        for pname, opts in PATHS:
            g = kf.Graph()
            a = g.input(dt, "??")
            b = g.input(dt, "??")
            bias = g.input("f32", "1?")
            g.output(g.op("relu", g.op("add", g.matmul(a, b), bias)))
            B.add("matmul", "matmul %s + bias + relu, transposed A, path %s"
                  % (dt, pname), ["Matmul", "MatmulPath", "Strided",
                                  "Composite"], g,
                  [(dt, [M, K], av), (dt, [K, N], bv), ("f32", [1, N], cv)],
                  options=opts, check=mm_check(av, bv, M, K, N, cv),
                  strides=[[1, M], None, None])
        gen_matmul_orders(B, dt)
        g = kf.Graph()
        a = g.input(dt, "??")
        b = g.input(dt, "??")
        g.output(g.matmul(a, b))
        B.add("matmul", "matmul %s K mismatch" % dt,
              ["Matmul", "InvalidShape"], g,
              [(dt, [2, 3], [fp.rnd(1.0, dt)] * 6),
               (dt, [4, 2], [fp.rnd(1.0, dt)] * 8)], error="KILN_ERR_SHAPE")


# Inputs where the order of accumulation matters (docs/numerics.md,
# "Reductions and matmul"): every f32 order meets gamma_K P, an accumulator
# narrower than f32 does not.  Values repeat with period 53 (repeat-encoded).
MM_ORDER_CASES = (
    # (what, M, K, N, value generator)
    ("all-positive uniform [0, 1)", 2, 4097, 3,
     lambda rng, dt: fp.rnd(rng.random(), dt)),
    ("cancellation, uniform [-1, 1)", 2, 1025, 3,
     lambda rng, dt: fp.rnd(rng.uniform(-1, 1), dt)),
    ("integers 1..4, exact in every f32 order", 2, 4097, 2,
     lambda rng, dt: float(rng.randint(1, 4))),
)


def mm_order_operands(c, dt):
    """Case c of MM_ORDER_CASES in operand dtype dt: (what, M, K, N, a, b,
    bias) with row-major a [M,K], b [K,N] and the f32 bias row [1,N] (also
    read by testgen/accumulation_orders.py)."""
    what, M, K, N, gen = MM_ORDER_CASES[c]
    rng = random.Random(1300 + 10 * c + ("f16", "bf16", "f32").index(dt))
    pa = [gen(rng, dt) for _ in range(53)]
    pb = [gen(rng, dt) for _ in range(53)]
    av, bv = kf.expand_repeat(pa, M * K), kf.expand_repeat(pb, K * N)
    cv = [fp.rnd(rng.uniform(-1, 1), "f32") for _ in range(N)]
    return what, M, K, N, av, bv, cv


def gen_matmul_orders(B, dt):
    for c in range(len(MM_ORDER_CASES)):
        what, M, K, N, av, bv, cv = mm_order_operands(c, dt)
        for pname, opts in PATHS:
            g = kf.Graph()
            a = g.input(dt, "??")
            b = g.input(dt, "??")
            ins = [(dt, [M, K], av), (dt, [K, N], bv)]
            if pname == "fused":
                bias = g.input("f32", "1?")
                g.output(g.op("relu", g.op("add", g.matmul(a, b), bias)))
                ins.append(("f32", [1, N], cv))
                chk = mm_check(av, bv, M, K, N, cv)
            else:
                g.output(g.matmul(a, b))
                chk = mm_check(av, bv, M, K, N)
            B.add("matmul", "matmul %s [%d,%d]x[%d,%d] %s, path %s: an "
                  "accumulator narrower than f32 exceeds the bound" % (
                      dt, M, K, K, N, what, pname),
                  ["Matmul", "MatmulPath", "Large", "Order"], g, ins,
                  options=opts, check=chk, period=53)


# -------------------------------------------------------- fast_math

def gen_fast(B, rng):
    fast = {"enable": ["fast_math"], "disable": []}
    xs = [fp.rnd(rng.uniform(-87, 88), "f32") for _ in range(40)]
    B.add("fast_math", "fast expf: 2 + floor(|1.173 x|) ulp",
          ["FastMath", "Transcendental"], unary_graph("exp", "f32", "?"),
          [("f32", [40], xs)], options=fast,
          check={"kind": "ulp", "ftz": True, "maxPerElement": [
              2 + int(abs(1.173 * x)) for x in xs]})
    xs = [fp.rnd(rng.uniform(0.5, 2.0), "f32") for _ in range(40)]
    b = fp.h(fp.next_up(2.0 ** -21.41, "f64"), "f64")
    B.add("fast_math", "fast logf on [0.5, 2]: abs 2^-21.41",
          ["FastMath", "Transcendental"], unary_graph("log", "f32", "?"),
          [("f32", [40], xs)], options=fast,
          check={"kind": "abs", "ftz": True, "bounds": [b] * 40})
    xs = [fp.rnd(math.exp(rng.uniform(-60, 60)), "f32") for _ in range(40)]
    xs = [x for x in xs if not 0.5 <= x <= 2.0]
    B.add("fast_math", "fast logf outside [0.5, 2]: 3 ulp",
          ["FastMath", "Transcendental"], unary_graph("log", "f32", "?"),
          [("f32", [len(xs)], xs)], options=fast,
          check={"kind": "ulp", "ftz": True, "max": 3})
    for op in ("sin", "cos"):
        xs = [fp.rnd(rng.uniform(-math.pi, math.pi), "f32")
              for _ in range(40)]
        xs = [x for x in xs if abs(x) <= math.pi]
        B.add("fast_math", "fast %sf on [-pi, pi]: abs 2^-21.41" % op,
              ["FastMath", "Transcendental"], unary_graph(op, "f32", "?"),
              [("f32", [len(xs)], xs)], options=fast,
              check={"kind": "abs", "ftz": True, "bounds": [b] * len(xs)})
    for op, lo, hi in (("tanh", -2.0, 2.0), ("erf", -3.0, 3.0),
                       ("rsqrt", 0.01, 100.0), ("sigmoid", -87.0, 40.0)):
        xs = [fp.rnd(rng.uniform(lo, hi), "f32") for _ in range(40)]
        if op == "tanh":
            # fast tanhf is one hardware instruction (tanh.approx.f32,
            # MUFU.TANH since sm_75): 133.96 ulp at most over all floats
            B.add("fast_math", "fast tanhf: tanh.approx.f32, 134 ulp",
                  ["FastMath", "Transcendental"], unary_graph(op, "f32", "?"),
                  [("f32", [40], xs)], options=fast,
                  check={"kind": "ulp", "ftz": True, "max": FAST_TANH_ULP})
            continue
        if op == "sigmoid":
            # e = __expf(+-x) carries 2 + floor(|1.173 x|) ulp; the division
            # by 1 + e can double that in ulp of the result, plus roundings
            # (docs/numerics.md, fast_math)
            B.add("fast_math", "fast sigmoid: %d + floor(|%g x|) ulp" % (
                      FAST_SIGMOID_ULP, FAST_SIGMOID_PER_X),
                  ["FastMath", "Transcendental"], unary_graph(op, "f32", "?"),
                  [("f32", [40], xs)], options=fast,
                  check={"kind": "ulp", "ftz": True, "maxPerElement": [
                      FAST_SIGMOID_ULP + int(abs(FAST_SIGMOID_PER_X * x))
                      for x in xs]})
            continue
        B.add("fast_math", "fast %sf: 4x the default bound" % op,
              ["FastMath", "Transcendental"], unary_graph(op, "f32", "?"),
              [("f32", [40], xs)], options=fast,
              check=value_check(op, "f32", fast=True))
    xs = [fp.rnd(rng.uniform(0.5, 4.0), "f32") for _ in range(40)]
    ys = [fp.rnd(rng.uniform(-3.0, 3.0), "f32") for _ in range(40)]
    B.add("fast_math", "fast powf: 4x the default bound",
          ["FastMath", "Transcendental"], binary_graph("pow", "f32", "?", "?"),
          [("f32", [40], xs), ("f32", [40], ys)], options=fast,
          check=value_check("pow", "f32", fast=True))
    for op in ("add", "mul", "div", "sqrt"):
        g = binary_graph(op, "f32", "?", "?") if op != "sqrt" else \
            unary_graph("sqrt", "f32", "?")
        xs = [fp.rnd(rng.uniform(0.5, 100.0), "f32") for _ in range(30)]
        ys = [fp.rnd(rng.uniform(0.5, 100.0), "f32") for _ in range(30)]
        ins = [("f32", [30], xs)] + ([("f32", [30], ys)] if op != "sqrt"
                                     else [])
        B.add("fast_math", "%s stays correctly rounded under fast_math "
              "(normal values)" % op, ["FastMath"], g, ins, options=fast,
              check={"kind": "exact", "ftz": True})


# ------------------------------------------------------- contraction

def gen_contraction(B, rng):
    for dt in FLOAT:
        def fin(n):
            a = [fp.rnd(rng.uniform(1, 2), dt) for _ in range(n)]
            b = [fp.rnd(rng.uniform(1, 2), dt) for _ in range(n)]
            c = [-fp.round_q(Fraction(x) * Fraction(y), dt)
                 for x, y in zip(a, b)]
            return a, b, c
        a, b, c = fin(16)
        ins = [(dt, [16], a), (dt, [16], b), (dt, [16], c)]
        for opts in ({"enable": [], "disable": []},
                     {"enable": [], "disable": ["fma"]},
                     {"enable": ["fast_math"], "disable": ["fma"]}):
            g = kf.Graph()
            x, y, z = (g.input(dt, "?") for _ in range(3))
            g.output(g.op("add", g.op("mul", x, y), z))
            fl = ["Contraction"] + (["FastMath"] if opts["enable"] else [])
            B.add("contraction", "%s a*b+c options %r" % (dt, opts), fl, g,
                  ins, options=opts,
                  check={"kind": "exact", "ftz": True} if opts["enable"]
                  else None)
        # the mul has two uses: no contraction
        g = kf.Graph()
        x, y, z = (g.input(dt, "?") for _ in range(3))
        m = g.op("mul", x, y)
        g.output(g.op("add", g.op("add", m, z), m))
        B.add("contraction", "%s mul with two uses is not contracted" % dt,
              ["Contraction"], g, ins)
        # the mul is an output: no contraction
        g = kf.Graph()
        x, y, z = (g.input(dt, "?") for _ in range(3))
        m = g.op("mul", x, y)
        g.output(g.op("add", m, z))
        g.output(m)
        B.add("contraction", "%s mul that is an output is not contracted"
              % dt, ["Contraction"], g, ins)
        # both operands qualify: lhs contracted
        g = kf.Graph()
        x, y, z, w = (g.input(dt, "?") for _ in range(4))
        g.output(g.op("add", g.op("mul", x, y), g.op("mul", z, w)))
        a2, b2, _ = fin(16)
        B.add("contraction", "%s a*b + c*d: the lhs mul is contracted" % dt,
              ["Contraction"], g,
              [(dt, [16], a), (dt, [16], b), (dt, [16], a2), (dt, [16],
                                                              [-v for v in
                                                               b2])])
        # sub is not contracted
        g = kf.Graph()
        x, y, z = (g.input(dt, "?") for _ in range(3))
        g.output(g.op("sub", g.op("mul", x, y), z))
        B.add("contraction", "%s a*b-c is not contracted" % dt,
              ["Contraction"], g, [(dt, [16], a), (dt, [16], b),
                                   (dt, [16], [-v for v in c])])
        # rhs contraction through a broadcast const
        g = kf.Graph()
        x, y = g.input(dt, "?"), g.input(dt, "?")
        k = g.scalar(dt, fp.rnd(1.0 / 3.0, dt), 1)
        g.output(g.op("add", k, g.op("mul", x, y)))
        B.add("contraction", "%s const + a*b: rhs contraction" % dt,
              ["Contraction", "BroadcastOp"], g,
              [(dt, [16], a), (dt, [16], b)])


# ---------------------------------------------------------------- invalid

def gen_invalid(B, rng):
    g = binary_graph("add", "f32", "?", "?")
    B.add("invalid", "sizes differ on an ordinary axis", ["InvalidShape"], g,
          [("f32", [3], [1.0] * 3), ("f32", [4], [1.0] * 4)],
          error="KILN_ERR_SHAPE")
    g = binary_graph("add", "f32", "??", "1?")
    B.add("invalid", "declared broadcast axis given size 3",
          ["InvalidShape"], g,
          [("f32", [3, 2], [1.0] * 6), ("f32", [3, 2], [1.0] * 6)],
          error="KILN_ERR_SHAPE")
    g = unary_graph("neg", "f32", "??")
    B.add("invalid", "rank 1 tensor for a rank 2 input", ["InvalidShape"], g,
          [("f32", [4], [1.0] * 4)], error="KILN_ERR_SHAPE")
    B.add("invalid", "f64 tensor for an f32 input", ["InvalidDtype"],
          unary_graph("neg", "f32", "?"), [("f64", [2], [1.0, 2.0])],
          error="KILN_ERR_DTYPE")
    B.add("invalid", "i32 tensor for an i64 input", ["InvalidDtype"],
          unary_graph("abs", "i64", "?"), [("i32", [2], [1, -2])],
          error="KILN_ERR_DTYPE")
    B.add("invalid", "f16 tensor for a bf16 input", ["InvalidDtype"],
          _where_g("bf16", "?"), [("bool", [1], [1]), ("f16", [1], [1.0]),
                                  ("bf16", [1], [1.0])],
          error="KILN_ERR_DTYPE")
    B.add("invalid", "bool tensor for an f32 input", ["InvalidDtype"],
          binary_graph("mul", "f32", "?", "?"),
          [("f32", [2], [1.0, 2.0]), ("bool", [2], [1, 0])],
          error="KILN_ERR_DTYPE")
    g = binary_graph("add", "i32", "??", "??")
    B.add("invalid", "zero-size against size 2", ["InvalidShape"], g,
          [("i32", [0, 2], []), ("i32", [2, 2], [1, 2, 3, 4])],
          error="KILN_ERR_SHAPE")


# ------------------------------------------------------------ output rules

def gen_output_rules(B):
    """Given outputs that break the output rules of kiln_execute
    (docs/runtime.md, "Execute": dtype, rank/sizes, dense row-major, no
    overlap).  The runner hands exactly these outputs over; each execute
    must fail with the documented status and leave every buffer as it
    was.  An overlapping output lies inside the storage it overlaps, so
    an implementation that wrongly accepts it writes nothing outside the
    caller's buffers."""
    def out(dt, shape, strides=None, overlaps=None):
        o = {"dtype": dt, "shape": list(shape)}
        if strides is not None:
            o["strides"] = list(strides)
        if overlaps is not None:
            o["overlaps"] = overlaps
        return o
    vals = [fp.rnd(v, "f32") for v in (1.0, -2.0, 3.5, -0.25, 5.0, 6.0,
                                       -7.0, 8.0)]
    neg = unary_graph("neg", "f32", "?")
    x8 = [("f32", [8], vals)]
    rule = "output rules"
    B.add(rule, "given output i32 where the fusion produces f32",
          ["OutputRules", "InvalidDtype"], neg, x8,
          error="KILN_ERR_DTYPE", given=[out("i32", [8])])
    B.add(rule, "given output f64 where the fusion produces f32",
          ["OutputRules", "InvalidDtype"], neg, x8,
          error="KILN_ERR_DTYPE", given=[out("f64", [8])])
    B.add(rule, "given output i32 where a comparison produces bool",
          ["OutputRules", "InvalidDtype"],
          binary_graph("lt", "f32", "?", "?"), x8 + x8,
          error="KILN_ERR_DTYPE", given=[out("i32", [8])])
    B.add(rule, "given output of rank 2 for a rank 1 result",
          ["OutputRules", "InvalidShape"], neg, x8,
          error="KILN_ERR_SHAPE", given=[out("f32", [2, 4])])
    B.add(rule, "given output of rank 0 for a rank 1 result",
          ["OutputRules", "InvalidShape"], neg, x8,
          error="KILN_ERR_SHAPE", given=[out("f32", [])])
    B.add(rule, "given output of 9 elements for a result of 8",
          ["OutputRules", "InvalidShape"], neg, x8,
          error="KILN_ERR_SHAPE", given=[out("f32", [9])])
    B.add(rule, "given output of 7 elements for a result of 8",
          ["OutputRules", "InvalidShape"], neg, x8,
          error="KILN_ERR_SHAPE", given=[out("f32", [7])])
    B.add(rule, "given output [3,2] for a [2,3] result",
          ["OutputRules", "InvalidShape"], unary_graph("neg", "f32", "??"),
          [("f32", [2, 3], vals[:6])],
          error="KILN_ERR_SHAPE", given=[out("f32", [3, 2])])
    red = kf.Graph()
    red.output(red.reduce("sum", red.input("f32", "??"), [1]))
    B.add(rule, "given output [2,1] for a sum over axis 1 of [2,3] (rank 1)",
          ["OutputRules", "InvalidShape", "Reduction"], red,
          [("f32", [2, 3], vals[:6])],
          error="KILN_ERR_SHAPE", given=[out("f32", [2, 1])])
    B.add(rule, "given output with stride 2 (not dense)",
          ["OutputRules"], neg, x8,
          error="KILN_ERR_ALIGNMENT", given=[out("f32", [8], [2])])
    B.add(rule, "given output with stride 0 (every element one place)",
          ["OutputRules"], neg, x8,
          error="KILN_ERR_ALIGNMENT", given=[out("f32", [8], [0])])
    B.add(rule, "given output [2,3] with transposed strides [1,2]",
          ["OutputRules"], unary_graph("neg", "f32", "??"),
          [("f32", [2, 3], vals[:6])],
          error="KILN_ERR_ALIGNMENT", given=[out("f32", [2, 3], [1, 2])])
    B.add(rule, "given output that is the input itself (exact overlap)",
          ["OutputRules"], neg, x8, error="KILN_ERR_ALIGNMENT",
          given=[out("f32", [8], overlaps={"input": 0, "byteOffset": 0})])
    # a strided input [8] over 15 stored elements (60 bytes): the output's
    # 32 bytes lie inside them, interleaved or at the end
    B.add(rule, "given output interleaved with a strided input "
          "(partial overlap)", ["OutputRules"], neg, [("f32", [8], vals)],
          strides=[[2]], error="KILN_ERR_ALIGNMENT",
          given=[out("f32", [8], overlaps={"input": 0, "byteOffset": 4})])
    B.add(rule, "given output over the last half of a strided input "
          "(partial overlap)", ["OutputRules"], neg, [("f32", [8], vals)],
          strides=[[2]], error="KILN_ERR_ALIGNMENT",
          given=[out("f32", [8], overlaps={"input": 0, "byteOffset": 28})])
    B.add(rule, "given output overlapping the second input (partial)",
          ["OutputRules"], binary_graph("add", "f32", "?", "?"),
          [("f32", [8], vals), ("f32", [8], vals)], strides=[[1], [2]],
          error="KILN_ERR_ALIGNMENT",
          given=[out("f32", [8], overlaps={"input": 1, "byteOffset": 8})])
    two = kf.Graph()
    x = two.input("f32", "?")
    two.output(two.op("neg", x))
    two.output(two.op("abs", x))
    B.add(rule, "two given outputs at the same address (exact overlap)",
          ["OutputRules"], two, x8, error="KILN_ERR_ALIGNMENT",
          given=[out("f32", [8]),
                 out("f32", [8], overlaps={"output": 0, "byteOffset": 0})])
    B.add(rule, "two given outputs overlapping by 16 bytes",
          ["OutputRules"], two, x8, error="KILN_ERR_ALIGNMENT",
          given=[out("f32", [8]),
                 out("f32", [8], overlaps={"output": 0, "byteOffset": 16})])


# ------------------------------------------------- fuzz regressions
def gen_fuzz_regressions(B):
    """Fusions minimised from the fuzz category (docs/conformance.md, "The
    fuzz category") that a backend got wrong, kept so that every backend
    runs them (fixed data, no rng: the other vectors do not move)."""
    # fuzz seed 10916 (cuda: wrong element 0): i64 -> i32 -> neg -> min
    # keepdim -> i64, compared with the input broadcast over the kept axis
    for axes, shape, vals in (
            ("1?", [1, 2], [-9, -19]),
            ("??", [3, 4], [-9, -19, 5, 0,
                            2 ** 31, 2 ** 31 - 1, -(2 ** 31), 7,
                            2 ** 32 + 5, -(2 ** 31) - 1, 2 ** 40, -3])):
        for rop in ("min", "max"):
            g = kf.Graph()
            x = g.input("i64", axes)
            n = g.op("neg", g.cast(x, "i32"))
            r = g.cast(g.reduce(rop, n, [1], keepdim=True), "i64")
            g.output(g.cast(g.cast(g.op("ne", x, r), "f32"), "bool"))
            g.output(r)
            B.add("fuzz regressions", "fuzz seed 10916: ne(x, i64(%s(neg(i32(x"
                  "))) keepdim)) over i64 %r (i64 -> i32 wraps, neg of "
                  "INT_MIN wraps)" % (rop, shape),
                  ["Composite", "Reduction", "KeepDim", "IntWrap"], g,
                  [("i64", shape, vals)])


def build():
    B = Builder()
    rng = random.Random(1234567)
    import refmath
    refmath.self_test()
    gen_unary(B, rng)
    gen_binary(B, rng, BINARY_DT)
    gen_binary(B, rng, COMPARE_DT, "compare")
    gen_logical(B, rng)
    gen_where(B, rng)
    gen_fma(B, rng)
    gen_cast(B, rng)
    gen_reduce(B, rng)
    gen_matmul(B, rng)
    gen_fast(B, rng)
    gen_contraction(B, rng)
    gen_invalid(B, rng)
    many_inputs.gen_many_views(B, rng)
    gen_output_rules(B)
    import rule_cases
    rule_cases.gen(B, random.Random(1313))
    gen_fuzz_regressions(B)
    return {"numerics.json": B.vf.finish()}
