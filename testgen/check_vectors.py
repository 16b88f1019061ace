#!/usr/bin/env python3
"""check_vectors.py -- a complete reference reader of the Kiln conformance
vectors, for implementers in any language (docs/conformance.md, "Reading
the vectors from another language").

    python3 testgen/check_vectors.py --impl exact        # must pass every test
    python3 testgen/check_vectors.py --impl numpy        # NumPy, judged
    python3 testgen/check_vectors.py --impl numpy --category cache.isolation
    python3 testgen/check_vectors.py --self-test         # the check kinds

It reads the JSON vector files of the numerics, cache.isolation and
differential categories with the standard library only, and runs each test
through an *implementation* ("impl") of the fusion semantics:

  - `exact`: our own exact reference in pure Python (testgen/kf.py: exact
    rational arithmetic, transcendentals at > 400 bits, rounded correctly).
    Every vector passes with it; that proves this reader (decoding, the .kf
    parser, the shape rules, the checks) agrees with the runner.
  - `numpy`: every op written the way a NumPy user would (np.exp on an f32
    array, x.astype(np.int32), np.sum, np.matmul on the input dtype ...),
    with NumPy's own results.  It fails exactly where NumPy's semantics
    differ from the contract; docs/conformance.md, "Worked example: NumPy
    against the numerics vectors", lists where and why.

What the reader does, in the order a test needs it:

  1. decode every dtype from its hex bit pattern (bool, i32, i64, f16, bf16,
     f32, f64), strided storage and `repeat` data (Tensor);
  2. parse the fusion's .kf text (parse_kf: lexical rules, every statement,
     dtype inference) and apply the contraction rule (contract);
  3. check the inputs against the fusion's declaration and compute every
     value's shape with the shape rules (Runtime.shapes) -- errors are the
     execute statuses the vectors expect (KILN_ERR_SHAPE, KILN_ERR_DTYPE;
     KILN_ERR_FALLBACK_DISABLED for a library-path matmul under
     disable=fallback); with `givenOutputs`, the output rules
     (check_given: dtype, rank and sizes, dense row-major, no overlap
     -> KILN_ERR_ALIGNMENT);
  4. run the impl and compare each output with its check (check_output:
     exact, ulp, abs, sumBound, ftz, alternatives).

Exit status: 0 when every selected test passes, 1 when any fails, 2 on a
usage error.  Standard library only; NumPy only for --impl numpy.
"""

import argparse
import json
import math
import os
import re
import struct
import sys
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------- dtypes

# dtype -> bits; float dtypes -> (exponent bits, fraction bits)
WIDTH = {"bool": 1, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32,
         "f64": 64}
FLOAT = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}
INTS = ("i32", "i64")
STATUSES = ("KILN_ERR_SHAPE", "KILN_ERR_DTYPE", "KILN_ERR_INVALID_ARGUMENT",
            "KILN_ERR_ALIGNMENT", "KILN_ERR_FALLBACK_DISABLED")


class ExecError(Exception):
    """An execute that fails with a Kiln status (`status`)."""

    def __init__(self, status, why):
        Exception.__init__(self, "%s: %s" % (status, why))
        self.status = status


def parse_hex(s, dt, where):
    """A hex bit pattern ("0x3f800000") of dtype dt -> int."""
    if not isinstance(s, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", s):
        raise ValueError("%s: %r is not a hex bit pattern" % (where, s))
    v = int(s, 16)
    if v >> WIDTH[dt]:
        raise ValueError("%s: %s does not fit %s" % (where, s, dt))
    return v


def decode(bits, dt):
    """Bit pattern -> Python value: float (exact for every float dtype),
    int (two's complement), or bool."""
    if dt == "f64":
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    if dt == "f32":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    if dt == "bf16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    if dt == "f16":
        return struct.unpack("<e", struct.pack("<H", bits))[0]
    if dt == "bool":
        return bool(bits)
    n = WIDTH[dt]
    return bits - (1 << n) if bits >> (n - 1) else bits


def is_nan(bits, dt):
    if dt not in FLOAT:
        return False
    e, m = FLOAT[dt]
    return (bits >> m) & ((1 << e) - 1) == (1 << e) - 1 and bits & ((1 << m) - 1)


def is_inf(bits, dt):
    if dt not in FLOAT:
        return False
    e, m = FLOAT[dt]
    return (bits >> m) & ((1 << e) - 1) == (1 << e) - 1 and not bits & ((1 << m) - 1)


def is_denormal(bits, dt):
    if dt not in FLOAT:
        return False
    e, m = FLOAT[dt]
    return (bits >> m) & ((1 << e) - 1) == 0 and bits & ((1 << m) - 1)


def sign(bits, dt):
    return bits >> (WIDTH[dt] - 1) & 1


def ordered(bits, dt):
    """The ordered integer line: negative patterns map to -(bits & ~sign),
    so +0 and -0 are 0 apart, neighbours 1, infinity one beyond the largest
    finite value."""
    mag = bits & ((1 << (WIDTH[dt] - 1)) - 1)
    return -mag if sign(bits, dt) else mag


def ulp_distance(a, b, dt):
    """ULP distance of two patterns; None when exactly one is NaN (an
    infinite distance); 0 for two NaNs."""
    na, nb = is_nan(a, dt), is_nan(b, dt)
    if na or nb:
        return 0 if na and nb else None
    return abs(ordered(a, dt) - ordered(b, dt))


def round_fraction(q, dt, negative_zero=False):
    """Round a Fraction to float dtype dt (ties to even, gradual underflow,
    overflow to infinity); returns the bit pattern."""
    e, m = FLOAT[dt]
    bias = (1 << (e - 1)) - 1
    sgn = 1 << (e + m)
    if q == 0:
        return sgn if negative_zero else 0
    s = sgn if q < 0 else 0
    a = abs(q)
    # exponent of the leading bit, clamped to the subnormal range
    ex = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** ex > a:
        ex -= 1
    ex = max(ex, 1 - bias)
    scaled = a / Fraction(2) ** (ex - m)      # the significand, unrounded
    n, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r > scaled.denominator or (2 * r == scaled.denominator and n & 1):
        n += 1
    if n >> (m + 1):                          # rounded up to the next binade
        n >>= 1
        ex += 1
    if ex > bias:
        return s | (((1 << e) - 1) << m)      # overflow: infinity
    if n >> m == 0:                           # subnormal (or zero)
        return s | n
    return s | ((ex + bias) << m) | (n & ((1 << m) - 1))


def encode_float(x, dt):
    """A Python float (binary64) rounded to float dtype dt, as bits."""
    if x != x:
        e, m = FLOAT[dt]
        return (((1 << e) - 1) << m) | (1 << (m - 1))
    if math.isinf(x):
        e, m = FLOAT[dt]
        return (1 << (e + m) if x < 0 else 0) | (((1 << e) - 1) << m)
    return round_fraction(Fraction(x), dt, math.copysign(1.0, x) < 0)


def encode(v, dt):
    """A Python value of dtype dt -> bits (floats rounded to nearest even)."""
    if dt in FLOAT:
        return encode_float(float(v), dt)
    if dt == "bool":
        return 1 if v else 0
    return int(v) & ((1 << WIDTH[dt]) - 1)


# -------------------------------------------------------------- tensors

class Tensor:
    """A tensor of a vector file.  `storage` holds the stored elements as
    bit patterns; element (i0, i1, ...) lives at offset + sum(i_k *
    strides[k]).
    Without "strides" the tensor is contiguous row-major."""

    def __init__(self, obj, where):
        if not isinstance(obj, dict):
            raise ValueError("%s: a tensor must be an object" % where)
        self.dtype = obj["dtype"]
        if self.dtype not in WIDTH:
            raise ValueError("%s.dtype: unknown dtype %r" % (where, self.dtype))
        self.shape = list(obj["shape"])
        self.numel = 1
        for s in self.shape:
            self.numel *= s
        self.strided = "strides" in obj
        self.strides = list(obj["strides"]) if self.strided else \
            row_major_strides(self.shape)
        self.offset = obj.get("offset", 0)     # elements before element 0
        if self.numel == 0:
            need = self.offset
        else:
            need = self.offset + 1 + sum((s - 1) * st for s, st in
                                         zip(self.shape, self.strides))
        data = obj.get("data")
        if isinstance(data, dict):              # {"repeat": [...], "count": N}
            pat = [parse_hex(h, self.dtype, where + ".data.repeat")
                   for h in data["repeat"]]
            count = data["count"]
            if count and not pat:
                raise ValueError("%s.data: empty repeat pattern" % where)
            self.storage = [pat[i % len(pat)] for i in range(count)]
        elif data is not None:
            self.storage = [parse_hex(h, self.dtype, "%s.data[%d]" % (where, i))
                            for i, h in enumerate(data)]
        else:
            self.storage = None                 # a differential input
        if self.storage is not None and len(self.storage) != need:
            raise ValueError("%s.data: %d stored elements, the shape and "
                             "strides need %d" % (where, len(self.storage), need))

    def elements(self):
        """The elements in row-major order (bit patterns)."""
        if not self.strided:
            return list(self.storage[self.offset:])
        out = []
        for idx in indices(self.shape):
            out.append(self.storage[self.offset + sum(
                i * s for i, s in zip(idx, self.strides))])
        return out


def row_major_strides(shape):
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def indices(shape):
    """Every index tuple of shape in row-major order."""
    idx = [0] * len(shape)
    total = 1
    for s in shape:
        total *= s
    for _ in range(total):
        yield tuple(idx)
        for a in range(len(shape) - 1, -1, -1):
            idx[a] += 1
            if idx[a] < shape[a]:
                break
            idx[a] = 0


# ------------------------------------------------------------ .kf text

# op -> (arity, accepted operand dtypes, result): "same", "bool", "f32" or
# "given" (docs/fusion-format.md, section 3).
NUM = ("i32", "i64", "f32", "f64")
FL = ("f32", "f64")
ALL = ("bool", "i32", "i64", "f16", "bf16", "f32", "f64")
OPS = {"neg": (1, NUM, "same"), "abs": (1, NUM, "same"),
       "exp": (1, FL, "same"), "log": (1, FL, "same"), "sqrt": (1, FL, "same"),
       "rsqrt": (1, FL, "same"), "reciprocal": (1, FL, "same"),
       "sin": (1, FL, "same"), "cos": (1, FL, "same"), "tanh": (1, FL, "same"),
       "sigmoid": (1, FL, "same"), "relu": (1, NUM, "same"),
       "erf": (1, FL, "same"), "floor": (1, FL, "same"),
       "ceil": (1, FL, "same"), "add": (2, NUM, "same"),
       "sub": (2, NUM, "same"), "mul": (2, NUM, "same"),
       "div": (2, FL, "same"), "pow": (2, FL, "same"),
       "maximum": (2, NUM, "same"), "minimum": (2, NUM, "same"),
       "eq": (2, ("bool",) + NUM, "bool"), "ne": (2, ("bool",) + NUM, "bool"),
       "lt": (2, NUM, "bool"), "le": (2, NUM, "bool"), "gt": (2, NUM, "bool"),
       "ge": (2, NUM, "bool"), "and": (2, ("bool",), "same"),
       "or": (2, ("bool",), "same"), "not": (1, ("bool",), "same"),
       "where": (3, ALL, "same"), "fma": (3, FL, "same"),
       "cast": (1, ALL, "given"), "broadcast": (1, ALL, "same"),
       "sum": (1, NUM, "same"), "max": (1, NUM, "same"),
       "min": (1, NUM, "same"), "matmul": (2, ("f16", "bf16", "f32"), "f32")}
REDUCTIONS = ("sum", "max", "min")


class Node:
    """One value of a fusion.  bcast: "?" (ordinary) or "1" (broadcast)
    per axis.  attrs: const "bits"; broadcast "rank", "new"; reductions
    "axes", "keepdim"."""

    __slots__ = ("op", "dtype", "args", "bcast", "attrs")

    def __init__(self, op, dtype, args, bcast, attrs=None):
        self.op, self.dtype, self.args, self.bcast = op, dtype, list(args), bcast
        self.attrs = attrs or {}


class Fusion:
    def __init__(self):
        self.nodes = []       # in definition order
        self.inputs = []      # node ids of the inputs, in order
        self.outputs = []     # node ids of the outputs, in order


class KfError(ValueError):
    pass


TOKEN = re.compile(r"[ \t\r]+|(%[A-Za-z0-9_]+)|([A-Za-z0-9_.+\-]+)|([=\[\],?])")


def tokens(line, lineno):
    out, pos = [], 0
    while pos < len(line):
        m = TOKEN.match(line, pos)
        if m is None:
            raise KfError("line %d: unexpected byte %r" % (lineno, line[pos]))
        if m.lastindex:
            out.append(m.group(m.lastindex))
        pos = m.end()
    return out


def int_list(toks, i, lineno):
    """Parse "[a, b, ...]" at toks[i]; returns (list, next index)."""
    if i >= len(toks) or toks[i] != "[":
        raise KfError("line %d: expected '['" % lineno)
    i += 1
    vals = []
    while i < len(toks) and toks[i] != "]":
        if toks[i] == ",":
            i += 1
            continue
        if not re.fullmatch(r"[0-9]{1,2}", toks[i]):
            raise KfError("line %d: bad integer %r" % (lineno, toks[i]))
        vals.append(int(toks[i]))
        i += 1
    if i >= len(toks):
        raise KfError("line %d: missing ']'" % lineno)
    return vals, i + 1


def const_bits(lit, dt, lineno):
    """A .kf constant literal (docs/fusion-format.md 5.4) -> bits."""
    if lit.lower().startswith("0x"):
        v = int(lit, 16)
        if v >> WIDTH[dt]:
            raise KfError("line %d: %s does not fit %s" % (lineno, lit, dt))
        return v
    if dt == "bool" and lit in ("true", "false"):
        return 1 if lit == "true" else 0
    if dt in INTS and re.fullmatch(r"[+-]?[0-9]+", lit):
        v = int(lit)
        if not -(1 << (WIDTH[dt] - 1)) <= v < (1 << (WIDTH[dt] - 1)):
            raise KfError("line %d: %s out of range for %s" % (lineno, lit, dt))
        return v & ((1 << WIDTH[dt]) - 1)
    if dt in ("f32", "f64"):
        low = lit.lower().lstrip("+-")
        neg = lit.startswith("-")
        if low in ("inf", "infinity", "nan"):
            return encode_float(float(lit), dt)
        try:   # correctly rounded from the exact decimal, as strtod does
            return round_fraction(Fraction(lit), dt, neg)
        except (ValueError, ZeroDivisionError):
            pass
    raise KfError("line %d: bad %s literal %r" % (lineno, dt, lit))


def parse_kf(text):
    """The .kf text format, version 1 (docs/fusion-format.md, section 5) ->
    Fusion, with each value's dtype and broadcast mask (section 2.1)."""
    f = Fusion()
    names = {}
    header = False
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.split("#", 1)[0]
        toks = tokens(line, lineno)
        if not toks:
            continue
        if not header:
            if toks != ["kiln.fusion", "1"]:
                raise KfError("line %d: expected the header 'kiln.fusion 1'"
                              % lineno)
            header = True
            continue

        def ref(tok):
            if tok not in names:
                raise KfError("line %d: %s is not defined" % (lineno, tok))
            return names[tok]
        if toks[0] == "output":
            if len(toks) != 2:
                raise KfError("line %d: output takes one value" % lineno)
            v = ref(toks[1])
            if v in f.outputs:
                raise KfError("line %d: %s is output twice" % (lineno, toks[1]))
            f.outputs.append(v)
            continue
        if len(toks) < 3 or not toks[0].startswith("%") or toks[1] != "=":
            raise KfError("line %d: expected '%%name = ...'" % lineno)
        name, op, rest = toks[0], toks[2], toks[3:]
        if name in names:
            raise KfError("line %d: %s is defined twice" % (lineno, name))
        if op == "input":
            dims, end = int_list_or_dims(rest, lineno)
            node = Node("input", rest[0], [], "".join(dims))
            f.inputs.append(len(f.nodes))
        elif op == "const":
            if len(rest) != 2 or rest[0] not in WIDTH:
                raise KfError("line %d: expected 'const DTYPE LITERAL'" % lineno)
            node = Node("const", rest[0], [], "",
                        {"bits": const_bits(rest[1], rest[0], lineno)})
        elif op == "cast":
            if len(rest) != 2 or rest[1] not in WIDTH:
                raise KfError("line %d: expected 'cast %%a DTYPE'" % lineno)
            a = ref(rest[0])
            node = Node("cast", rest[1], [a], f.nodes[a].bcast)
        elif op == "broadcast":
            a = ref(rest[0])
            if rest[1:4] != ["rank", "="] + rest[3:4] or rest[4:6] != ["new", "="]:
                raise KfError("line %d: expected 'broadcast %%a rank=R "
                              "new=[...]'" % lineno)
            rank = int(rest[3])
            new, _ = int_list(rest, 6, lineno)
            src = iter(f.nodes[a].bcast)
            if rank != len(f.nodes[a].bcast) + len(new) or \
                    any(j >= rank for j in new):
                raise ExecError("KILN_ERR_SHAPE", "broadcast rank")
            bc = "".join("1" if j in new else next(src) for j in range(rank))
            node = Node("broadcast", f.nodes[a].dtype, [a], bc,
                        {"rank": rank, "new": sorted(new)})
        elif op in REDUCTIONS:
            a = ref(rest[0])
            if rest[1:3] != ["axes", "="]:
                raise KfError("line %d: expected 'axes=[...]'" % lineno)
            axes, i = int_list(rest, 3, lineno)
            keep = rest[i:] == ["keepdim"]
            src = f.nodes[a].bcast
            if keep:
                bc = "".join("1" if k in axes else c for k, c in enumerate(src))
            else:
                bc = "".join(c for k, c in enumerate(src) if k not in axes)
            node = Node(op, f.nodes[a].dtype, [a], bc,
                        {"axes": sorted(axes), "keepdim": keep})
        elif op in OPS:
            args = [ref(t) for t in rest]
            arity = OPS[op][0]
            if len(args) != arity:
                raise KfError("line %d: %s takes %d operands" % (lineno, op, arity))
            node = pointwise_node(f, op, args)
        else:
            raise KfError("line %d: unknown op %r" % (lineno, op))
        names[name] = len(f.nodes)
        f.nodes.append(node)
    if not header or not f.outputs:
        raise KfError("no header or no output")
    return f


def int_list_or_dims(rest, lineno):
    """The "[?, 1, ...]" of an input statement (after its dtype)."""
    if len(rest) < 3 or rest[0] not in WIDTH or rest[1] != "[":
        raise KfError("line %d: expected 'input DTYPE [dims]'" % lineno)
    dims = [t for t in rest[2:] if t not in (",", "]")]
    if rest[-1] != "]" or any(d not in ("?", "1") for d in dims):
        raise KfError("line %d: dims are '?' or '1'" % lineno)
    return dims, len(rest)


def pointwise_node(f, op, args):
    """A pointwise, where, matmul node: dtype and broadcast mask (2.1)."""
    nodes = [f.nodes[a] for a in args]
    if op == "matmul":
        a, b = nodes
        bc = (a.bcast[0] if a.bcast else "?") + (b.bcast[1] if len(b.bcast) > 1 else "?")
        return Node("matmul", "f32", args, bc)
    data = nodes[1:] if op == "where" else nodes
    dt = data[0].dtype
    if any(n.dtype != dt for n in data) or dt not in OPS[op][1] or \
            (op == "where" and nodes[0].dtype != "bool"):
        raise KfError("%s: operand dtypes %s" % (op, [n.dtype for n in nodes]))
    if OPS[op][2] == "bool":
        result = "bool"
    else:
        result = dt
    ranked = [n for n in nodes if n.op != "const"]
    rank = len(ranked[0].bcast) if ranked else 0
    bc = "".join("1" if ranked and all(len(n.bcast) == rank and n.bcast[i] == "1"
                                       for n in ranked) else "?"
                 for i in range(rank))
    return Node(op, result, args, bc)


def contract(f, disable):
    """The contraction rule (docs/conformance.md, "Numerics contract"):
    unless disable=fma, f32/f64 add(mul(a,b),c) and add(c,mul(a,b)) become
    fma(a,b,c) when that mul has exactly one use and is not a fusion output
    (the left operand first when both qualify).  Returns a new node list."""
    nodes = [Node(n.op, n.dtype, n.args, n.bcast, n.attrs) for n in f.nodes]
    if "fma" in disable:
        return nodes
    uses = [0] * len(nodes)
    for n in nodes:
        for a in n.args:
            uses[a] += 1

    def single_mul(m):
        return nodes[m].op == "mul" and uses[m] == 1 and m not in f.outputs
    for n in nodes:
        if n.op == "add" and n.dtype in ("f32", "f64"):
            lhs, rhs = n.args
            if single_mul(lhs):
                n.op, n.args = "fma", nodes[lhs].args + [rhs]
            elif single_mul(rhs):
                n.op, n.args = "fma", nodes[rhs].args + [lhs]
    return nodes


# --------------------------------------------------------------- runtime

class Runtime:
    """What any runtime does around the arithmetic: check the inputs
    against the fusion's declaration and compute every value's shape."""

    @staticmethod
    def check_inputs(f, tensors):
        if len(tensors) != len(f.inputs):
            raise ExecError("KILN_ERR_INVALID_ARGUMENT", "%d inputs for %d"
                            % (len(tensors), len(f.inputs)))
        for k, (nid, t) in enumerate(zip(f.inputs, tensors)):
            n = f.nodes[nid]
            if t.dtype != n.dtype:
                raise ExecError("KILN_ERR_DTYPE", "input %d: %s, declared %s"
                                % (k, t.dtype, n.dtype))
            if len(t.shape) != len(n.bcast):
                raise ExecError("KILN_ERR_SHAPE", "input %d: rank %d, declared "
                                "%d" % (k, len(t.shape), len(n.bcast)))
            for a, d in enumerate(n.bcast):
                if d == "1" and t.shape[a] != 1:
                    raise ExecError("KILN_ERR_SHAPE", "input %d axis %d: size %d "
                                    "of a declared broadcast axis" % (k, a, t.shape[a]))

    @staticmethod
    def shapes(nodes, f, tensors):
        """Every node's shape, forward (docs/fusion-format.md 2.1): an
        ordinary axis must equal every ordinary axis it is combined with; a
        broadcast axis has size 1 and takes the size of the ordinary axes
        of the other operands at the op that combines them (the result's
        axis is then ordinary), so a value's broadcast axis stays 1."""
        shp = [None] * len(nodes)
        given = dict(zip(f.inputs, tensors))
        for i, n in enumerate(nodes):
            if n.op == "input":
                shp[i] = list(given[i].shape)
            elif n.op == "const":
                shp[i] = []
            elif n.op == "cast":
                shp[i] = list(shp[n.args[0]])
            elif n.op == "broadcast":
                it = iter(shp[n.args[0]])
                shp[i] = [1 if j in n.attrs["new"] else next(it)
                          for j in range(n.attrs["rank"])]
            elif n.op in REDUCTIONS:
                s = shp[n.args[0]]
                if n.attrs["keepdim"]:
                    shp[i] = [1 if a in n.attrs["axes"] else s[a]
                              for a in range(len(s))]
                else:
                    shp[i] = [s[a] for a in range(len(s)) if a not in n.attrs["axes"]]
            elif n.op == "matmul":
                (m, k), (k2, nn) = shp[n.args[0]], shp[n.args[1]]
                if k != k2:
                    raise ExecError("KILN_ERR_SHAPE", "matmul K %d vs %d" % (k, k2))
                shp[i] = [m, nn]
            else:
                ranked = [a for a in n.args if nodes[a].op != "const"]
                rank = len(shp[ranked[0]]) if ranked else 0
                out = []
                for ax in range(rank):
                    size = None
                    for a in ranked:
                        if nodes[a].bcast[ax] == "1":
                            continue
                        if size is not None and shp[a][ax] != size:
                            raise ExecError("KILN_ERR_SHAPE", "%s at %%%d axis "
                                            "%d: %d vs %d" % (n.op, i, ax, size,
                                                               shp[a][ax]))
                        size = shp[a][ax]
                    out.append(1 if size is None else size)
                shp[i] = out
        return shp


# ----------------------------------------------------------------- checks

def check_output(check, dt, got, want, scale=None):
    """Apply one check (docs/conformance.md, "Checks and tolerances") to
    the row-major bit patterns got/want.  scale: S per element for
    sumBound.  Returns (None, stats) or (message, stats); stats has
    "max_ulp", "max_abs", "acceptable"."""
    kind = check["kind"]
    stats = {"max_ulp": None, "max_abs": None, "acceptable": False}
    alts = {}
    for key, lst in (check.get("alternatives") or {}).items():
        if not re.fullmatch(r"0|[1-9][0-9]*", key) or int(key) >= len(want):
            return "alternatives key %r is not an element index" % key, stats
        alts[int(key)] = [parse_hex(h, dt, "alternatives") for h in lst]
    if kind == "abs":
        bounds = [decode(parse_hex(h, "f64", "bounds"), "f64")
                  for h in check["bounds"]]
        if len(bounds) == 1:
            bounds = bounds * len(want)
    if kind == "sumBound":
        n = check["n"]
        u = 2.0 ** -53 if dt == "f64" else 2.0 ** -24
        nu = n * u  # 2 gamma_n S, gamma_n = n u / (1 - n u)
        g_n = nu / (1.0 - nu) if nu < 1.0 else math.inf
    first, bad = None, 0
    for k, (g, w) in enumerate(zip(got, want)):
        d = ulp_distance(g, w, dt) if dt in FLOAT else (0 if g == w else None)
        if kind == "ulp":
            per = check.get("maxPerElement")
            bound = per[k] if per is not None else check["max"]
            ok = d is not None and d <= bound
        elif kind in ("abs", "sumBound"):
            bound = bounds[k] if kind == "abs" else 2.0 * g_n * scale[k]
            if is_nan(g, dt) or is_nan(w, dt) or is_inf(g, dt) or is_inf(w, dt):
                ok = g == w or (is_nan(g, dt) and is_nan(w, dt))
            else:
                diff = abs(decode(g, dt) - decode(w, dt))
                ok = diff <= bound
                stats["max_abs"] = max(stats["max_abs"] or 0.0, diff)
        elif kind == "exact":
            ok = g == w or (is_nan(g, dt) and is_nan(w, dt))
        else:
            return "unknown check kind %r" % kind, stats
        if not ok and check.get("ftz") and is_denormal(w, dt) and \
                g & ((1 << (WIDTH[dt] - 1)) - 1) == 0 and sign(g, dt) == sign(w, dt):
            ok, d = True, 0
        if not ok and any(g == a or (is_nan(g, dt) and is_nan(a, dt))
                          for a in alts.get(k, [])):
            stats["acceptable"] = True
            continue
        if dt in FLOAT and d is not None and kind in ("exact", "ulp"):
            stats["max_ulp"] = max(stats["max_ulp"] or 0, d)
        if not ok:
            bad += 1
            if first is None:
                what = ("%s ulp" % d if d is not None else "NaN mismatch") \
                    if kind != "abs" and kind != "sumBound" else \
                    "|diff| %.6g > bound %.6g" % (
                        abs(decode(g, dt) - decode(w, dt)) if not (
                            is_nan(g, dt) or is_nan(w, dt)) else float("nan"),
                        bound)
                first = "element %d of %d: got %s, expected %s (%s, %s)" % (
                    k, len(want), hexval(g, dt), hexval(w, dt), kind, what)
    if first is not None and bad > 1:
        first += " (%d of %d elements out of bound)" % (bad, len(want))
    return first, stats


def hexval(bits, dt):
    return "0x%0*x (%r)" % (max(1, WIDTH[dt] // 4), bits, decode(bits, dt))


# ------------------------------------------------------------ differential

def splitmix64(state):
    """(next state, output) of splitmix64 (docs/conformance.md,
    "Differential inputs")."""
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, z ^ (z >> 31)


def generate_inputs(test):
    """The inputs of a differential test from its seed, as Tensors."""
    state = test["seed"]
    out = []
    for k, spec in enumerate(test["inputs"]):
        t = Tensor(spec, "inputs[%d]" % k)
        dist, dt, bits = spec["dist"], t.dtype, []
        for _ in range(t.numel):
            state, r = splitmix64(state)
            if dist["kind"] == "uniform":
                lo, hi = float(dist["lo"]), float(dist["hi"])
                span = hi - lo          # two roundings, no fused multiply-add
                bits.append(encode_float(lo + span * ((r >> 11) * 2.0 ** -53), dt))
            else:
                lo, hi = dist["lo"], dist["hi"]
                v = lo + r % (hi - lo + 1)
                if dt == "bool":
                    bits.append(1 if v else 0)
                elif dt in INTS:
                    bits.append(v & ((1 << WIDTH[dt]) - 1))
                else:
                    bits.append(encode_float(float(v), dt))
        t.storage = bits
        first = (test.get("inputsFirst") or [[]] * len(test["inputs"]))[k]
        for i, h in enumerate(first):
            if parse_hex(h, dt, "inputsFirst") != bits[i]:
                raise ValueError("inputs[%d][%d]: generated 0x%x, inputsFirst "
                                 "says %s" % (k, i, bits[i], h))
        out.append(t)
    return out


# -------------------------------------------------------------- the impls

class ExactImpl:
    """Our exact reference (testgen/kf.py): exact arithmetic, correctly
    rounded; the vectors' expected values come from it."""
    name = "exact"

    def __init__(self):
        sys.path.insert(0, HERE)
        import fp  # noqa: E402 -- testgen's own modules
        import kf
        self.fp, self.kf = fp, kf
        self.memo = {}

    def evaluate(self, nodes, outputs, inputs, shapes, enable):
        kf, fp = self.kf, self.fp
        g = kf.Graph()
        for n in nodes:
            attrs = dict(n.attrs)
            g.nodes.append(kf.Node(n.op, n.dtype, n.args, n.bcast, attrs))
        g.outputs = list(outputs)
        vals = [(list(s), [fp.decode(b, dt) for b in bits])
                for dt, s, bits in inputs]
        try:   # the nodes are contracted already: no second contraction
            res = g.evaluate(vals, disable=("fma",), memo=self.memo)
        except kf.ShapeError as e:
            raise ExecError("KILN_ERR_SHAPE", str(e))
        return [[fp.encode(v, nodes[o].dtype) for v in vs]
                for o, (_, vs) in zip(outputs, res)]


class NumpyImpl:
    """Every op the way a NumPy user writes it, in the value's dtype.
    bf16 has no NumPy dtype: its values travel in float32 arrays (exact)
    and are rounded to bf16 by bit arithmetic when a cast asks for it."""
    name = "numpy"

    # NumPy picks SIMD code for some ops by the CPU it runs on: on AVX512
    # machines f32 exp/log/sin/... come from SVML (up to 4 ulp, NumPy 1.22
    # release notes), elsewhere from other code.  Unless --numpy-dispatch
    # native, the AVX512 paths are switched off, so the result is the same
    # on every x86-64 machine (the worked example in docs/conformance.md).
    AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL"

    def __init__(self, dispatch="baseline"):
        import warnings
        if dispatch == "baseline" and "numpy" not in sys.modules:
            os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", self.AVX512)
        with warnings.catch_warnings():  # "not supported by your machine"
            warnings.simplefilter("ignore", RuntimeWarning)
            import numpy as np
        self.np = np
        self.npdt = {"bool": np.bool_, "i32": np.int32, "i64": np.int64,
                     "f16": np.float16, "bf16": np.float32, "f32": np.float32,
                     "f64": np.float64}

    def to_array(self, dt, shape, bits):
        np = self.np
        raw = {"bool": (np.uint8, np.bool_), "i32": (np.uint32, np.int32),
               "i64": (np.uint64, np.int64), "f16": (np.uint16, np.float16),
               "f32": (np.uint32, np.float32), "f64": (np.uint64, np.float64)}
        if dt == "bf16":
            a = np.array([b << 16 for b in bits], dtype=np.uint32).view(np.float32)
        else:
            u, t = raw[dt]
            a = np.array(bits, dtype=u).view(t)
        return a.reshape(shape)

    def bits_of(self, dt, a):
        np = self.np
        a = np.ascontiguousarray(a).reshape(-1)
        if dt == "bf16":   # round float32 to bf16, to nearest even
            u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
            nan = np.isnan(a)
            r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
            r = np.where(nan, 0x7FC0, r)
            return [int(x) for x in r]
        view = {"bool": np.uint8, "i32": np.uint32, "i64": np.uint64,
                "f16": np.uint16, "f32": np.uint32, "f64": np.uint64}[dt]
        return [int(x) for x in a.astype(self.npdt[dt]).view(view)]

    def evaluate(self, nodes, outputs, inputs, shapes, enable):
        np = self.np
        vals = [None] * len(nodes)
        it = iter(inputs)
        with np.errstate(all="ignore"):
            for i, n in enumerate(nodes):
                vals[i] = self.op(n, [vals[a] for a in n.args],
                                  [nodes[a].dtype for a in n.args], it)
        return [self.bits_of(nodes[o].dtype, np.broadcast_to(vals[o], shapes[o]))
                for o in outputs]

    def op(self, n, a, dts, inputs):
        np = self.np
        t = self.npdt[n.dtype]
        if n.op == "input":
            dt, shape, bits = next(inputs)
            return self.to_array(dt, shape, bits)
        if n.op == "const":
            return self.to_array(n.dtype, [], [n.attrs["bits"]])
        if n.op == "cast":
            if n.dtype == "bf16":
                return a[0].astype(np.float32)   # rounded at the output
            return a[0].astype(t)
        if n.op == "broadcast":
            shape = list(a[0].shape)
            for j in n.attrs["new"]:
                shape.insert(j, 1)
            return a[0].reshape(shape)
        if n.op in REDUCTIONS:
            axes = tuple(n.attrs["axes"])
            f = {"sum": np.sum, "max": np.max, "min": np.min}[n.op]
            kw = {"dtype": t} if n.op == "sum" else {}
            try:
                return f(a[0], axis=axes, keepdims=n.attrs["keepdim"], **kw)
            except ValueError as e:   # max/min of an empty axis
                raise ExecError("KILN_ERR_SHAPE", str(e))
        if n.op == "matmul":
            return np.matmul(a[0], a[1]).astype(np.float32)
        if n.op == "fma":   # NumPy has no fma: the widest float NumPy has
            wide = np.float64 if n.dtype == "f32" else np.longdouble
            return (a[0].astype(wide) * a[1] + a[2]).astype(t)
        if n.op == "where":
            return np.where(a[0], a[1], a[2])
        x = a[0]
        unary = {"neg": np.negative, "abs": np.abs, "exp": np.exp,
                 "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
                 "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
                 "not": np.logical_not,
                 "rsqrt": lambda v: (1 / np.sqrt(v)).astype(v.dtype),
                 "reciprocal": lambda v: (1 / v).astype(v.dtype),
                 "sigmoid": lambda v: (1 / (1 + np.exp(-v))).astype(v.dtype),
                 "relu": lambda v: np.maximum(v, v.dtype.type(0)),
                 "erf": lambda v: np.vectorize(math.erf, otypes=[v.dtype])(v)
                 if v.size else v}
        if n.op in unary:
            return unary[n.op](x)
        binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                  "div": np.divide, "pow": np.power, "maximum": np.maximum,
                  "minimum": np.minimum, "eq": np.equal, "ne": np.not_equal,
                  "lt": np.less, "le": np.less_equal, "gt": np.greater,
                  "ge": np.greater_equal, "and": np.logical_and,
                  "or": np.logical_or}
        return binary[n.op](a[0], a[1]).astype(t)


IMPLS = {"exact": ExactImpl, "numpy": NumpyImpl}


# ---------------------------------------------------------------- driver

def enabled(options):
    return list((options or {}).get("enable") or [])


def disabled(options):
    return list((options or {}).get("disable") or [])


def option_names(s):
    """The option names of an environment string ("fma,fallback")."""
    return [re.sub(r"\(.*", "", item) for item in (s or "").split(",") if item]


def _span(dt, shape, strides):
    """Storage extent in bytes of a view (0 without elements)."""
    if any(n == 0 for n in shape):
        return 0
    if strides is None:
        n = 1
        for x in shape:
            n *= x
        return n * WIDTH[dt] // 8
    return (1 + sum((n - 1) * st for n, st in zip(shape, strides))) * \
        WIDTH[dt] // 8


def check_given(nodes, f, shapes, tensors, given):
    """The output rules of kiln_execute (docs/runtime.md, "Execute") for
    outputs the caller gives: dtype, rank and sizes, then dense row-major,
    then no overlap with an input or an earlier output."""
    if len(given) != len(f.outputs):
        raise ExecError("KILN_ERR_INVALID_ARGUMENT", "%d given outputs for %d"
                        % (len(given), len(f.outputs)))
    for j, (o, g) in enumerate(zip(f.outputs, given)):
        if g["dtype"] != nodes[o].dtype:
            raise ExecError("KILN_ERR_DTYPE", "output %d: dtype %s, the fusion "
                            "produces %s" % (j, g["dtype"], nodes[o].dtype))
        if list(g["shape"]) != list(shapes[o]):
            raise ExecError("KILN_ERR_SHAPE", "output %d: shape %s, the fusion "
                            "produces %s" % (j, g["shape"], list(shapes[o])))
    for j, g in enumerate(given):
        shape, st = g["shape"], g.get("strides")
        want = 1
        dense = True
        for a in range(len(shape) - 1, -1, -1):
            if st is not None and shape[a] != 1 and st[a] != want:
                dense = False
            want *= shape[a]
        if want and not dense:
            raise ExecError("KILN_ERR_ALIGNMENT", "output %d: not dense" % j)
    for j, g in enumerate(given):
        ov = g.get("overlaps")
        span = _span(g["dtype"], g["shape"], g.get("strides"))
        if ov is None or span == 0:
            continue
        if "input" in ov:
            t = tensors[ov["input"]]
            room = _span(t.dtype, t.shape, t.strides)
        else:
            h = given[ov["output"]]
            room = _span(h["dtype"], h["shape"], h.get("strides"))
        if ov["byteOffset"] < room:
            raise ExecError("KILN_ERR_ALIGNMENT", "output %d overlaps %s %d"
                            % (j, "input" if "input" in ov else "output",
                               ov.get("input", ov.get("output"))))


def run_fusion(impl, f, tensors, enable, disable, given=None):
    """(outputs as (dtype, shape, bits) list) of one execute."""
    Runtime.check_inputs(f, tensors)
    nodes = contract(f, disable)
    shapes = Runtime.shapes(nodes, f, tensors)
    if given is not None:
        check_given(nodes, f, shapes, tensors, given)
    # [opt.conflict.fallback]: the default matmul path is the library
    # fallback; disable=fallback turns it into an error
    if "fallback" in disable and "fuse_matmul" not in enable and \
            "matmul_expr_eval" not in disable and \
            any(n.op == "matmul" for n in nodes):
        raise ExecError("KILN_ERR_FALLBACK_DISABLED", "matmul needs the "
                        "library fallback path under disable=fallback")
    ins = [(t.dtype, t.shape, t.elements()) for t in tensors]
    outs = impl.evaluate(nodes, f.outputs, ins, shapes, enable)
    return [(nodes[o].dtype, shapes[o], bits) for o, bits in zip(f.outputs, outs)]


def check_outputs(results, expected, where):
    """Compare outputs with the expected tensors; returns (message, stats
    list)."""
    stats = []
    if len(results) != len(expected):
        return "%s%d outputs, the vector has %d" % (where, len(results),
                                                    len(expected)), stats
    for k, ((dt, shape, bits), ej) in enumerate(zip(results, expected)):
        want = Tensor(ej, "%soutputs[%d]" % (where, k))
        if dt != want.dtype or list(shape) != want.shape:
            return "%soutputs[%d]: %s %s, expected %s %s" % (
                where, k, dt, shape, want.dtype, want.shape), stats
        msg, st = check_output(ej["check"], dt, bits, want.elements())
        stats.append((k, dt, st))
        if msg:
            return "%soutputs[%d]: %s" % (where, k, msg), stats
    return None, stats


def run_numerics(impl, test):
    f = parse_kf(test["fusion"])
    tensors = [Tensor(t, "inputs[%d]" % i) for i, t in enumerate(test["inputs"])]
    opts = test.get("options")
    try:
        results = run_fusion(impl, f, tensors, enabled(opts), disabled(opts),
                             test.get("givenOutputs"))
    except ExecError as e:
        want = (test.get("error") or {}).get("status")
        if want == e.status:
            return None, []
        return "execute failed: %s%s" % (e, "" if want is None else
                                          ", expected %s" % want), []
    if "error" in test:
        return "execute succeeded, expected %s" % test["error"]["status"], []
    return check_outputs(results, test["outputs"], "")


def run_cache(impl, test):
    f = parse_kf(test["fusion"])
    env = dict(test.get("env") or {})
    env_en, env_dis = option_names(env.get("enable")), option_names(env.get("disable"))
    stats = []
    for s, step in enumerate(test["steps"]):
        # "setenv" changes the strings, "reload" takes a new snapshot
        if step.get("action") == "setenv":
            env = dict(step["env"])
            continue
        if step.get("action") == "reload":
            env_en = option_names(env.get("enable"))
            env_dis = option_names(env.get("disable"))
            continue
        tensors = [Tensor(t, "steps[%d].inputs[%d]" % (s, i))
                   for i, t in enumerate(step["inputs"])]
        try:
            results = run_fusion(impl, f, tensors, env_en + enabled(step),
                                 env_dis + disabled(step))
        except ExecError as e:
            return "step %d: execute failed: %s" % (s, e), stats
        msg, st = check_outputs(results, step["outputs"], "step %d: " % s)
        stats += st
        if msg:
            return msg, stats
    return None, stats


def run_differential(impl, test, reference):
    f = parse_kf(test["fusion"])
    tensors = generate_inputs(test)
    opts = test.get("options")
    en, dis = enabled(opts), disabled(opts)
    got = run_fusion(impl, f, tensors, en, dis)
    want = run_fusion(reference, f, tensors, en, dis)
    stats = []
    for k, (tol, (dt, shape, g), (_, wshape, w)) in enumerate(
            zip(test["tolerance"], got, want)):
        if list(shape) != list(wshape):
            return "outputs[%d]: shape %s, the reference %s" % (k, shape, wshape), stats
        scale = None
        if tol["kind"] == "sumBound":   # S: the reference of absFusion
            absf = parse_kf(tol["absFusion"])
            sdt, _, sb = run_fusion(reference, absf, tensors, en, dis)[k]
            scale = [decode(b, sdt) for b in sb]
        msg, st = check_output(tol, dt, g, w, scale)
        stats.append((k, dt, st))
        if msg:
            return "outputs[%d] vs the %s reference: %s" % (k, reference.name, msg), stats
    return None, stats


def output_ops(fusion_text):
    """(op, dtype) of each output's defining node, for the summary."""
    try:
        f = parse_kf(fusion_text)
    except (KfError, ExecError):
        return []
    return [(f.nodes[o].op, f.nodes[o].dtype) for o in f.outputs]


def self_test():
    """Each check kind on small cases with known answers (exit 1 on a
    wrong answer)."""
    f32 = lambda x: encode_float(x, "f32")  # noqa: E731
    nan, one = 0x7fc00000, f32(1.0)
    cases = [
        ({"kind": "exact"}, [one, nan], [one, 0x7fc00001], None, True),
        ({"kind": "exact"}, [0x80000000], [0x0], None, False),
        ({"kind": "exact", "alternatives": {"0": ["0x80000000"]}}, [0x80000000],
         [0x0], None, True),
        ({"kind": "ulp", "max": 2}, [one + 2], [one], None, True),
        ({"kind": "ulp", "max": 2}, [one + 3], [one], None, False),
        ({"kind": "ulp", "max": 1}, [0x80000000], [0x1], None, True),
        ({"kind": "ulp", "maxPerElement": [0, 5]}, [one, one + 5], [one, one],
         None, True),
        ({"kind": "ulp", "max": 100}, [one], [nan], None, False),
        ({"kind": "exact", "ftz": True}, [0x80000000], [0x80000001], None, True),
        ({"kind": "exact", "ftz": True}, [0x0], [0x80000001], None, False),
        ({"kind": "abs", "bounds": ["0x3fb999999999999a"]}, [f32(1.05)],
         [one], None, True),
        ({"kind": "abs", "bounds": ["0x3fb999999999999a"]}, [f32(1.2)], [one],
         None, False),
        ({"kind": "abs", "bounds": ["0x7ff0000000000000"]}, [f32(5.0)],
         [0x7f800000], None, False),
        ({"kind": "sumBound", "n": 4}, [f32(1.0 + 2 ** -20)], [one], [1.0],
         False),
        ({"kind": "sumBound", "n": 4}, [f32(1.0 + 2 ** -22)], [one], [1.0],
         True),
        # 2 gamma_4096 * 1024 = 0.50012...: any order's error, twice
        ({"kind": "sumBound", "n": 4096}, [f32(1024.5)], [f32(1024.0)],
         [1024.0], True),
        ({"kind": "sumBound", "n": 4096}, [f32(1024.5078125)],
         [f32(1024.0)], [1024.0], False),
    ]
    bad = 0
    for i, (chk, got, want, scale, ok) in enumerate(cases):
        msg, _ = check_output(chk, "f32", got, want, scale)
        if (msg is None) != ok:
            print("self-test %d: %s: %s" % (i, chk, msg or "passed"))
            bad += 1
    for text, dt in ((round_fraction(Fraction(1, 3), "f32"), 0x3eaaaaab),
                     (round_fraction(Fraction(65520), "f16"), 0x7c00),
                     (round_fraction(Fraction(1, 2 ** 25), "f16"), 0x0),
                     (round_fraction(Fraction(3, 2 ** 25), "f16"), 0x2),
                     (encode_float(1.00390625, "bf16"), 0x3f80)):
        if text != dt:
            print("self-test rounding: 0x%x, expected 0x%x" % (text, dt))
            bad += 1
    print("self-test: %d of %d checks as expected" % (len(cases) + 5 - bad,
                                                      len(cases) + 5))
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Run an implementation through the Kiln conformance "
                    "vectors with a complete reference reader.")
    ap.add_argument("--impl", choices=sorted(IMPLS), default="exact")
    ap.add_argument("--vectors", metavar="DIR",
                    help="vector directory (default: $KILN_VECTORS, else "
                         "conformance/vectors next to testgen/)")
    ap.add_argument("--category", action="append",
                    choices=("numerics", "cache.isolation", "differential"),
                    help="categories to run (default: numerics)")
    ap.add_argument("--filter", metavar="REGEX",
                    help="run only tests whose id or comment matches")
    ap.add_argument("--reference", choices=sorted(IMPLS), default="exact",
                    help="what differential tests compare against (default "
                         "exact; slow on their 2^20-element inputs)")
    ap.add_argument("--numpy-dispatch", choices=("baseline", "native"),
                    default="baseline",
                    help="NumPy's SIMD code paths: without AVX512 (default; "
                         "the same everywhere) or the machine's own")
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="no FAIL lines, only the summary")
    ap.add_argument("--self-test", action="store_true",
                    help="check the check kinds on small known cases")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    vectors = args.vectors or os.environ.get("KILN_VECTORS") or \
        os.path.join(HERE, "..", "conformance", "vectors")
    def make(name):
        return NumpyImpl(args.numpy_dispatch) if name == "numpy" else IMPLS[name]()
    try:
        impl = make(args.impl)
        reference = make(args.reference) if args.reference != args.impl else impl
    except ImportError as e:
        print("check_vectors: --impl %s needs %s (Debian: apt-get install "
              "python3-numpy, then run /usr/bin/python3)" % (args.impl, e.name),
              file=sys.stderr)
        return 2
    flt = re.compile(args.filter) if args.filter else None
    cats = args.category or ["numerics"]
    failed = total = 0
    by_op = {}
    for cat in cats:
        path = os.path.join(vectors, cat + ".json")
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        npass = nfail = 0
        for group in doc["testGroups"]:
            for test in group["tests"]:
                tid = "%s/%d" % (cat, test["tcId"])
                if flt and not (flt.search(tid) or flt.search(test["comment"])):
                    continue
                stats = []
                try:
                    if cat == "numerics":
                        msg, stats = run_numerics(impl, test)
                    elif cat == "cache.isolation":
                        msg, stats = run_cache(impl, test)
                    else:
                        msg, stats = run_differential(impl, test, reference)
                except (KfError, ValueError, KeyError, TypeError) as e:
                    msg = "invalid vector: %s: %s" % (type(e).__name__, e)
                ops = output_ops(test["fusion"])
                for key in sorted(set(ops)):
                    row = by_op.setdefault((cat,) + key, [0, [], None])
                    row[0] += 1
                    if msg:
                        row[1].append(test["tcId"])
                for k, dt, st in stats:   # ULP statistics per output op
                    if k < len(ops) and st["max_ulp"] is not None:
                        row = by_op[(cat,) + ops[k]]
                        row[2] = max(row[2] or 0, st["max_ulp"])
                if msg:
                    nfail += 1
                    if not args.quiet:
                        print("FAIL %s (%s): %s" % (tid, test["comment"], msg))
                else:
                    npass += 1
        print("%s: %d tests: %d pass, %d fail (impl %s)" % (
            cat, npass + nfail, npass, nfail, impl.name))
        failed += nfail
        total += npass + nfail
    if failed:
        print("failures by category, op and dtype of the outputs: failed of "
              "tests: test ids")
        for (cat, op, dt), (n, ids, _) in sorted(by_op.items()):
            if ids:
                print("  %s %s %s: %d of %d: %s" % (
                    cat, op, dt, len(ids), n, " ".join(map(str, ids))))
    ulps = ["%s %s %d" % (op, dt, u) for (cat, op, dt), (_, _, u)
            in sorted(by_op.items()) if u]
    print("largest ULP error over the exact and ulp checks, where not 0: %s"
          % (", ".join(ulps) or "none"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
