"""Fusion builder (.kf text, docs/fusion-format.md) and a reference
evaluator over exact arithmetic.

    g = Graph()
    a = g.input("f32", "??")          # "?" ordinary axis, "1" broadcast axis
    b = g.input("f32", "1?")
    m = g.op("mul", a, b)
    g.output(m)
    g.text()                          # the .kf text
    g.evaluate(inputs, disable=[...]) # expected outputs (exact reference)

The evaluator applies the planner's contraction rule (docs/conformance.md): unless
disable=fma is in effect, for f32/f64 add(mul(a,b),c) and add(c,mul(a,b))
become fma(a,b,c) when that mul has exactly one use and is not an output
(lhs preferred).  Elementwise results are memoised by input bit patterns.
Arrays are (shape, flat row-major list of values).
"""

import math
from fractions import Fraction

import fp
import refmath
from check_vectors import contract

INF = fp.INF
NAN = fp.NAN


def _neg(v):
    return math.copysign(1.0, v) < 0


# ------------------------------------------------------- elementwise ops

def _add(a, b, dt):
    if fp.is_float(dt):
        if math.isfinite(a) and math.isfinite(b):
            q = Fraction(a) + Fraction(b)
            return fp.round_q(q, dt, _neg(a) and _neg(b))
        return a + b        # IEEE for infinities / NaN
    return fp.wrap(a + b, dt)


def _sub(a, b, dt):
    if fp.is_float(dt):
        return _add(a, -b, dt)
    return fp.wrap(a - b, dt)


def _mul(a, b, dt):
    if fp.is_float(dt):
        if math.isfinite(a) and math.isfinite(b):
            return fp.round_q(Fraction(a) * Fraction(b), dt,
                              _neg(a) != _neg(b))
        return a * b
    return fp.wrap(a * b, dt)


def _div(a, b, dt):
    if a != a or b != b:
        return NAN
    if b == 0:
        if a == 0:
            return NAN
        return -INF if _neg(a) != _neg(b) else INF
    if not math.isfinite(a) or not math.isfinite(b):
        if not math.isfinite(a) and not math.isfinite(b):
            return NAN
        return a / b
    return fp.round_q(Fraction(a) / Fraction(b), dt, _neg(a) != _neg(b))


def _fma(a, b, c, dt):
    if a != a or b != b or c != c:
        return NAN
    if math.isfinite(a) and math.isfinite(b) and math.isfinite(c):
        p = Fraction(a) * Fraction(b)
        q = p + Fraction(c)
        if q == 0:
            pneg = _neg(a) != _neg(b)
            negz = (p == 0 and c == 0 and pneg and _neg(c))
            return fp.round_q(q, dt, negz)
        return fp.round_q(q, dt)
    if not math.isfinite(a) or not math.isfinite(b):
        if a == 0 or b == 0:
            return NAN
        p = INF if _neg(a) == _neg(b) else -INF
        if not math.isfinite(c) and c != p:
            return NAN
        return p
    return c


def _maximum(a, b, dt):
    if fp.is_float(dt) and (a != a or b != b):
        return NAN
    if a == b:
        return a if not fp.is_float(dt) or not _neg(a) else b
    return max(a, b)


def _minimum(a, b, dt):
    if fp.is_float(dt) and (a != a or b != b):
        return NAN
    if a == b:
        return a if not fp.is_float(dt) or _neg(a) else b
    return min(a, b)


def _floor(a, dt):
    if not math.isfinite(a) or a == 0:
        return a
    r = float(math.floor(a))
    return math.copysign(r, a) if r == 0 else r


def _ceil(a, dt):
    if not math.isfinite(a) or a == 0:
        return a
    r = float(math.ceil(a))
    return math.copysign(r, a) if r == 0 else r


def _relu(a, dt):
    if fp.is_float(dt):
        if a != a:
            return a
        return a if a > 0 else 0.0
    return a if a > 0 else 0


def _neg_op(a, dt):
    return -a if fp.is_float(dt) else fp.wrap(-a, dt)


def _abs_op(a, dt):
    return abs(a) if fp.is_float(dt) else fp.wrap(abs(a), dt)


def _trans(name):
    f = refmath.FUNCS[name]

    def op(a, dt):
        return fp.rnd(f(a), dt)
    return op


def _pow(a, b, dt):
    return fp.rnd(refmath.pow_(a, b), dt)


def _cmp(pred):
    def op(a, b, dt):
        if fp.is_float(dt) and (a != a or b != b):
            return 1 if pred is _NE else 0
        return 1 if pred(a, b) else 0
    return op


def _NE(a, b):
    return a != b


def cast_value(v, src, dst):
    """Convert a value of dtype src to dtype dst (the cast rules of docs/conformance.md)."""
    if dst == "bool":
        return 1 if (v != 0 or v != v) else 0
    if src == "bool":
        return float(v) if fp.is_float(dst) else v
    if fp.is_float(src) and dst in fp.INTS:
        if v != v:
            return 0
        n = fp.BITS[dst]
        lo, hi = -(1 << (n - 1)), (1 << (n - 1)) - 1
        if v == INF:
            return hi
        if v == -INF:
            return lo
        return max(lo, min(hi, int(v)))        # int() truncates to zero
    if dst in fp.INTS:
        return fp.wrap(v, dst)
    if src in fp.INTS:
        return fp.round_q(Fraction(v), dst)
    return fp.rnd(v, dst)


UNARY = {"neg": _neg_op, "abs": _abs_op, "relu": _relu, "floor": _floor,
         "ceil": _ceil, "sqrt": _trans("sqrt"), "rsqrt": _trans("rsqrt"),
         "exp": _trans("exp"), "log": _trans("log"), "sin": _trans("sin"),
         "cos": _trans("cos"), "tanh": _trans("tanh"),
         "sigmoid": _trans("sigmoid"), "erf": _trans("erf"),
         "reciprocal": lambda a, dt: _div(1.0, a, dt),
         "not": lambda a, dt: 1 - a}
BINARY = {"add": _add, "sub": _sub, "mul": _mul, "div": _div, "pow": _pow,
          "maximum": _maximum, "minimum": _minimum,
          "eq": _cmp(lambda a, b: a == b), "ne": _cmp(_NE),
          "lt": _cmp(lambda a, b: a < b), "le": _cmp(lambda a, b: a <= b),
          "gt": _cmp(lambda a, b: a > b), "ge": _cmp(lambda a, b: a >= b),
          "and": lambda a, b, dt: a & b, "or": lambda a, b, dt: a | b}
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


# ------------------------------------------------------------ the graph

class Node:
    __slots__ = ("op", "dtype", "args", "bcast", "attrs")

    def __init__(self, op, dtype, args, bcast, attrs=None):
        self.op, self.dtype, self.args = op, dtype, list(args)
        self.bcast = bcast              # string of "?"/"1" per axis
        self.attrs = attrs or {}


class Graph:
    def __init__(self):
        self.nodes = []
        self.outputs = []

    def _add(self, node):
        self.nodes.append(node)
        return len(self.nodes) - 1

    def input(self, dtype, axes=""):
        return self._add(Node("input", dtype, [], axes))

    def const(self, dtype, value):
        return self._add(Node("const", dtype, [], "",
                              {"bits": fp.encode(value, dtype)}))

    def op(self, op, *args):
        a0 = self.nodes[args[0]]
        if op in COMPARE:
            dt = "bool"
        elif op == "where":
            a0 = self.nodes[args[1]]
            dt = a0.dtype
        else:
            dt = a0.dtype
        rank = max(len(self.nodes[a].bcast) for a in args)
        bc = "".join("1" if all(len(self.nodes[a].bcast) == rank and
                                self.nodes[a].bcast[i] == "1" for a in args)
                     else "?" for i in range(rank))
        return self._add(Node(op, dt, args, bc))

    def scalar(self, dtype, value, rank):
        """A constant broadcast to `rank` (all axes broadcast axes)."""
        c = self.const(dtype, value)
        if rank == 0:
            return c
        return self.broadcast(c, rank, list(range(rank)))

    def cast(self, a, dtype):
        return self._add(Node("cast", dtype, [a], self.nodes[a].bcast))

    def broadcast(self, a, rank, new):
        src = iter(self.nodes[a].bcast)
        bc = "".join("1" if j in new else next(src) for j in range(rank))
        return self._add(Node("broadcast", self.nodes[a].dtype, [a], bc,
                              {"rank": rank, "new": list(new)}))

    def reduce(self, op, a, axes, keepdim=False):
        src = self.nodes[a].bcast
        if keepdim:
            bc = "".join("1" if i in axes else c for i, c in enumerate(src))
        else:
            bc = "".join(c for i, c in enumerate(src) if i not in axes)
        return self._add(Node(op, self.nodes[a].dtype, [a], bc,
                              {"axes": sorted(axes), "keepdim": keepdim}))

    def matmul(self, a, b):
        return self._add(Node("matmul", "f32", [a, b], "??"))

    def output(self, v):
        self.outputs.append(v)
        return v

    # ------------------------------------------------------------- text
    def text(self):
        out = ["kiln.fusion 1"]
        for i, n in enumerate(self.nodes):
            args = " ".join("%%%d" % a for a in n.args)
            if n.op == "input":
                out.append("%%%d = input %s [%s]" % (
                    i, n.dtype, ", ".join(n.bcast)))
            elif n.op == "const":
                out.append("%%%d = const %s 0x%x" % (i, n.dtype,
                                                     n.attrs["bits"]))
            elif n.op == "cast":
                out.append("%%%d = cast %s %s" % (i, args, n.dtype))
            elif n.op == "broadcast":
                out.append("%%%d = broadcast %s rank=%d new=[%s]" % (
                    i, args, n.attrs["rank"],
                    ", ".join(str(x) for x in n.attrs["new"])))
            elif n.op in ("sum", "max", "min"):
                out.append("%%%d = %s %s axes=[%s]%s" % (
                    i, n.op, args, ", ".join(str(x) for x in n.attrs["axes"]),
                    " keepdim" if n.attrs["keepdim"] else ""))
            else:
                out.append("%%%d = %s %s" % (i, n.op, args))
        for o in self.outputs:
            out.append("output %%%d" % o)
        return "\n".join(out) + "\n"

    # -------------------------------------------------------- evaluation
    def contracted(self, disable=()):
        """Node list after the contraction rule (fma nodes replace adds):
        the reference reader's rule, check_vectors.contract."""
        return contract(self, disable)

    def evaluate(self, inputs, disable=(), memo=None):
        """inputs: list of (shape, values); returns list of (shape, values)
        for the outputs.  Raises ShapeError for invalid sizes."""
        memo = {} if memo is None else memo
        nodes = self.contracted(disable)
        vals = [None] * len(nodes)
        ii = 0
        for i, n in enumerate(nodes):
            if n.op == "input":
                vals[i] = inputs[ii]
                ii += 1
            elif n.op == "const":
                vals[i] = ([], [fp.decode(n.attrs["bits"], n.dtype)])
            elif n.op == "broadcast":
                shape, v = vals[n.args[0]]
                it = iter(shape)
                ns = [1 if j in n.attrs["new"] else next(it)
                      for j in range(n.attrs["rank"])]
                vals[i] = (ns, v)
            elif n.op in ("sum", "max", "min"):
                vals[i] = _reduce(n, vals[n.args[0]], nodes[n.args[0]].dtype)
            elif n.op == "matmul":
                vals[i] = _matmul(vals[n.args[0]], vals[n.args[1]],
                                  nodes[n.args[0]].dtype)
            else:
                vals[i] = _pointwise(n, [vals[a] for a in n.args],
                                     [nodes[a].dtype for a in n.args], memo)
        return [vals[o] for o in self.outputs]


class ShapeError(Exception):
    pass


def _strides(shape):
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def _pointwise(n, args, dts, memo):
    rank = max(len(s) for s, _ in args)
    shape = []
    for ax in range(rank):
        sz = 1
        for s, _ in args:
            if len(s) == 0:
                continue                # rank-0 values broadcast
            if len(s) != rank:
                raise ShapeError("rank mismatch")
            if s[ax] != 1:
                if sz != 1 and sz != s[ax]:
                    raise ShapeError("size mismatch")
                sz = s[ax]
        shape.append(sz)
    total = 1
    for s in shape:
        total *= s
    # element strides of each argument (0 on broadcast axes)
    arg_st = []
    for s, _ in args:
        if len(s) == 0:
            arg_st.append([0] * rank)
        else:
            st = _strides(s)
            arg_st.append([0 if s[a] == 1 and shape[a] != 1 else st[a]
                           for a in range(rank)])
    ost = _strides(shape)
    if n.op in UNARY:
        f = UNARY[n.op]
    elif n.op in BINARY:
        f = BINARY[n.op]
    elif n.op == "fma":
        f = _fma
    elif n.op == "where":
        f = None
    elif n.op == "cast":
        f = None
    else:
        raise ValueError(n.op)
    dt_in = dts[-1] if n.op == "where" else dts[0]
    out = []
    same = all(list(s) == shape for s, _ in args)
    for lin in range(total):
        if same:
            xs = [a[1][lin] for a in args]
        else:
            rem = lin
            idx = [0] * len(args)
            for a in range(rank):
                q, rem = divmod(rem, ost[a]) if ost[a] else (0, rem)
                for k in range(len(args)):
                    idx[k] += q * arg_st[k][a]
            xs = [args[k][1][idx[k]] for k in range(len(args))]
        if n.op == "where":
            out.append(xs[1] if xs[0] else xs[2])
            continue
        key = (n.op, n.dtype, dt_in) + tuple(
            fp.encode(x, d) for x, d in zip(xs, dts))
        r = memo.get(key)
        if r is None:
            if n.op == "cast":
                r = cast_value(xs[0], dts[0], n.dtype)
            else:
                r = f(*xs, dt_in)
            memo[key] = r
        out.append(r)
    return (shape, out)


def _reduce(n, arr, dt):
    shape, v = arr
    axes = n.attrs["axes"]
    keep = [a for a in range(len(shape)) if a not in axes]
    oshape = [1 if a in axes else shape[a] for a in range(len(shape))]
    if n.op != "sum":
        for a in axes:
            if shape[a] == 0:
                raise ShapeError("max/min over an empty axis")
    groups = {}
    st = _strides(shape)
    total = len(v)
    ost = _strides(oshape)
    for lin in range(total):
        rem = lin
        o = 0
        for a in range(len(shape)):
            q, rem = divmod(rem, st[a])
            if a not in axes:
                o += q * ost[a]
        groups.setdefault(o, []).append(v[lin])
    ototal = 1
    for s in oshape:
        ototal *= s
    out = []
    for o in range(ototal):
        out.append(reduce_values(n.op, groups.get(o, []), dt))
    if not n.attrs["keepdim"]:
        oshape = [shape[a] for a in keep]
    return (oshape, out)


def reduce_values(op, xs, dt):
    if op == "sum":
        if not fp.is_float(dt):
            return fp.wrap(sum(xs), dt)
        if any(x != x for x in xs):
            return NAN
        infs = set(x for x in xs if x in (INF, -INF))
        if len(infs) == 2:
            return NAN
        if infs:
            return infs.pop()
        return fp.round_q(fp.exact_sum(xs), dt)
    f = _maximum if op == "max" else _minimum
    r = xs[0]
    for x in xs[1:]:
        r = f(r, x, dt)
    return r


def _matmul(a, b, dt):
    (m, k), av = a
    (k2, nn), bv = b
    if k != k2:
        raise ShapeError("matmul K mismatch")
    ex, _ = matmul_exact(a, b)
    return ([m, nn], [fp.round_q(q, "f32") for q in ex])


_MM_MEMO = {}


def matmul_exact(a, b):
    """Exact [M,N] Fractions and sum|a*b| per element."""
    (m, k), av = a
    (_, nn), bv = b
    key = (m, k, nn, tuple(fp.encode(x, "f64") for x in av),
           tuple(fp.encode(x, "f64") for x in bv))
    if key in _MM_MEMO:
        return _MM_MEMO[key]
    ex, mag = [], []
    cols = [[bv[t * nn + j] for t in range(k)] for j in range(nn)]
    for i in range(m):
        row = av[i * k:(i + 1) * k]
        for j in range(nn):
            e, g = fp.exact_dot(row, cols[j])
            ex.append(e)
            mag.append(g)
    _MM_MEMO[key] = (ex, mag)
    return ex, mag


# ----------------------------------------------------------- tensor JSON

def hexlist(values, dt):
    return [fp.h(v, dt) for v in values]


def tensor(dt, shape, values, strides=None, fill=None, offset=0):
    """JSON tensor for logical `values` (row-major).  With strides, the
    storage is laid out with those strides; gap elements get `fill` (a
    value never read).  Stride-0 axes need values that agree along them.
    With offset, that many filler elements come before element 0."""
    if offset:
        t = tensor(dt, shape, values, strides, fill)
        fill = NAN if fp.is_float(dt) else (0 if dt == "bool" else 0x5a)
        t["data"] = hexlist([fill] * offset, dt) + t["data"]
        t["offset"] = offset
        return t
    t = {"dtype": dt, "shape": list(shape)}
    if strides is None:
        t["data"] = hexlist(values, dt)
        return t
    numel = 1
    for s in shape:
        numel *= s
    t["strides"] = list(strides)
    if numel == 0:
        t["data"] = []
        return t
    size = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    if fill is None:
        fill = NAN if fp.is_float(dt) else (0 if dt == "bool" else 0x5a)
    store = [fill] * size
    cst = _strides(shape)
    for lin, v in enumerate(values):
        rem, off = lin, 0
        for a in range(len(shape)):
            q, rem = divmod(rem, cst[a])
            off += q * strides[a]
        if store[off] is not fill and fp.encode(store[off], dt) != \
                fp.encode(v, dt):
            raise ValueError("stride-0 storage conflict")
        store[off] = v
    t["data"] = hexlist(store, dt)
    return t


def repeat_tensor(dt, shape, pattern, count=None):
    """Contiguous tensor whose data is `pattern` repeated to numel."""
    numel = 1
    for s in shape:
        numel *= s
    return {"dtype": dt, "shape": list(shape),
            "data": {"repeat": hexlist(pattern, dt), "count": numel}}


def periodic(values, p):
    """The period-p prefix if `values` repeats with period p, else None.
    (Compares with ==, which is exact for data built by repetition.)"""
    if p <= 0 or len(values) <= p:
        return None
    head = values[:p]
    n = len(values)
    cand = (head * (n // p + 1))[:n]
    return head if cand == values else None


def expand_repeat(pattern, count):
    return [pattern[i % len(pattern)] for i in range(count)]
