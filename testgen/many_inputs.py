"""Numerics group "many views": segments with many inputs and outputs.

A generated kernel once kept one flag word per segment, inputs in bits
0-15 and outputs in bits 16-31, so input 16 was indexed by output 0's
density bit, and bits past 31 were undefined (issue 11).  These tests put
inputs of every layout at every position class of a segment (< 16, 16..31,
>= 32, the last), in segments of 17, 33 and 70 inputs, before and after a
reduction, plus segments past the view maximum of docs/runtime.md
("Segment limits"), which the planner must split.  All checks are exact:
the values are multiples of 1/16 in [-32, 32), so every sum is exact and
any input read at a wrong offset changes the result.
"""

import fp
import kf

# Input layouts over the domain [R, C] (rank 2): the .kf axes, the tensor
# shape, its strides (None: contiguous), whether it goes through the
# broadcast op (a rank-1 input of [C] lifted with new=[0]).
R, C = 3, 5
LAYOUTS = [
    # name      axes   shape    strides  broadcast op
    ("dense", "??", [R, C], None, False),
    ("row", "1?", [1, C], None, False),        # size-1 axis: stride 0
    ("col", "?1", [R, 1], None, False),        # the issue's [1, 0] view
    ("one", "11", [1, 1], None, False),        # size 1 everywhere
    ("bcast", "?", [C], None, True),           # broadcast op
    ("trans", "??", [R, C], [1, R], False),    # transposed storage
    ("gap", "??", [R, C], [C + 2, 1], False),  # row pitch with gaps
    ("zero", "??", [R, C], [0, 1], False),     # a stride-0 axis
]
# Layouts of a keepdim reduction result [R, 1] (axis 1 reduced) and [1, C]
# (axis 0 reduced), for the inputs read after the reduction.
POST = {
    1: [("col", "?1", [R, 1], None, None), ("one", "11", [1, 1], None, None),
        ("colgap", "?1", [R, 1], [3, 1], None),
        ("colzero", "?1", [R, 1], [0, 1], None),
        ("bcast", "?", [R], None, [1])],
    0: [("row", "1?", [1, C], None, None), ("one", "11", [1, 1], None, None),
        ("rowgap", "1?", [1, C], [1, 2], None),
        ("rowzero", "1?", [1, C], [1, 0], None),
        ("bcast", "?", [C], None, [0])],
}

FLAGS = {"row": ["Broadcast"], "col": ["Broadcast"], "one": ["Broadcast"],
         "bcast": ["BroadcastOp"], "trans": ["Strided"], "gap": ["Strided"],
         "zero": ["StrideZero"], "colgap": ["Strided"], "rowgap": ["Strided"],
         "colzero": ["StrideZero"], "rowzero": ["StrideZero"]}


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _values(rng, shape, strides):
    """Logical values (row-major) of a tensor stored with `strides`: one
    draw per storage element, so stride-0 axes repeat values."""
    def draw():
        return rng.randrange(-512, 512) / 16.0
    if strides is None:
        return [draw() for _ in range(_numel(shape))]
    size = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    store = [draw() for _ in range(size)]
    out = []
    for lin in range(_numel(shape)):
        rem, off = lin, 0
        for a in range(len(shape) - 1, -1, -1):
            rem, q = divmod(rem, shape[a])
            off += q * strides[a]
        out.append(store[off])
    return out


class Inputs:
    """Declares inputs on a graph and collects their tensors."""

    def __init__(self, g, rng):
        self.g, self.rng = g, rng
        self.ins, self.strides, self.flags = [], [], set()

    def add(self, layout, rank=2):
        name, axes, shape, strides, bc = layout
        x = self.g.input("f32", axes)
        self.ins.append(("f32", shape, _values(self.rng, shape, strides)))
        self.strides.append(strides)
        self.flags.update(FLAGS.get(name, []))
        if bc is True:
            return self.g.broadcast(x, rank, [0])
        if bc:
            return self.g.broadcast(x, rank, bc)
        return x


def _chain(g, values):
    acc = values[0]
    for v in values[1:]:
        acc = g.op("add", acc, v)
    return acc


def _add(B, comment, flags, g, inp):
    st = inp.strides if any(s is not None for s in inp.strides) else None
    B.add("many views", comment, sorted(set(flags) | inp.flags), g, inp.ins,
          strides=st)


def _pointwise(B, rng, n, rot, n_out=1):
    g = kf.Graph()
    inp = Inputs(g, rng)
    xs = [inp.add(LAYOUTS[(k + rot) % len(LAYOUTS)]) for k in range(n)]
    g.output(_chain(g, xs))
    for j in range(1, n_out):  # outputs 1.. : x_j - x_(j+1)
        g.output(g.op("sub", xs[j % n], xs[(j + 1) % n]))
    order = [LAYOUTS[(k + rot) % len(LAYOUTS)][0] for k in range(n)]
    _add(B, "%d inputs%s summed: input 0 %s, 15 %s, 16 %s, last %s" % (
        n, "" if n_out == 1 else " and %d outputs" % n_out, order[0],
        order[min(15, n - 1)], order[min(16, n - 1)], order[-1]),
        ["ManyViews"] + (["SegmentSplit"] if n + n_out > 167 else []), g, inp)


def _reduction(B, rng, n_pre, n_post, axis, rot, op):
    """t = x0 + ... (n_pre inputs over D); m = op(t, axis) keepdim;
    u = m + c0 + ... (n_post inputs of m's shape)."""
    g = kf.Graph()
    inp = Inputs(g, rng)
    xs = [inp.add(LAYOUTS[(k + rot) % len(LAYOUTS)]) for k in range(n_pre)]
    m = g.reduce(op, _chain(g, xs), [axis], True)
    post = POST[axis]
    cs = [inp.add(post[(k + rot) % len(post)]) for k in range(n_post)]
    g.output(_chain(g, [m] + cs))
    n = n_pre + n_post
    split = n + 1 > 167
    _add(B, "%s over axis %d: %d inputs before it, %d after (%d in all)" % (
        op, axis, n_pre, n_post, n), ["ManyViews", "Reduction", "KeepDim"] +
        (["SegmentSplit"] if split else []), g, inp)


def _alternating(B, rng, levels):
    """d(k) = d(k-1) - max(d(k-1)) axis 1: each reduction reads every
    earlier one, so the last segment has levels + 1 inputs."""
    g = kf.Graph()
    inp = Inputs(g, rng)
    d = inp.add(LAYOUTS[5])  # transposed
    for _ in range(levels):
        d = g.op("sub", d, g.reduce("max", d, [1], True))
    g.output(d)
    _add(B, "one input, %d alternating max / sub levels (a segment of %d "
         "inputs; input 16 has strides [1, 0])" % (levels, levels + 1),
         ["ManyViews", "Reduction", "KeepDim"], g, inp)


def _contraction_split(B, rng):
    """o = t * w + c, t and c sums of 150 inputs (rank 1: 251 views at
    most): the add's cone passes the limit, and the split must keep the
    mul with the add it contracts into (fma).  Values with full f32
    mantissas, so fma and mul + add differ."""
    n, e = 150, 8
    g = kf.Graph()
    ins = []

    def inp():
        ins.append(("f32", [e], [fp.rnd(rng.uniform(-1.5, 1.5), "f32")
                                 for _ in range(e)]))
        return g.input("f32", "?")
    w = inp()
    t = c = None
    for _ in range(n):
        x, y = inp(), inp()
        t = x if t is None else g.op("add", t, x)
        c = y if c is None else g.op("add", c, y)
    g.output(g.op("add", g.op("mul", t, w), c))
    B.add("many views", "t * w + c over 301 inputs: split, still contracted",
          ["ManyViews", "SegmentSplit", "Contraction"], g, ins)


def gen_many_views(B, rng):
    # Every layout at every position of 17 and 33 inputs (all rotations:
    # positions 16 and 32 are the last ones there); at 70 inputs each class
    # holds every layout already, three rotations vary the last one.  (Each
    # test is a kernel that `make nvrtc-check` compiles: 2-5 s at 70.)
    for n, rots in ((17, range(len(LAYOUTS))), (33, range(len(LAYOUTS))),
                    (70, (0, 3, 6))):
        for rot in rots:
            _pointwise(B, rng, n, rot)
    _pointwise(B, rng, 33, 2, n_out=33)
    _pointwise(B, rng, 70, 5, n_out=70)
    for n, rots in ((17, (0, 3)), (33, (0, 3)), (70, (0,))):
        for rot in rots:
            _reduction(B, rng, n // 2, n - n // 2, 1, rot, "max")
            _reduction(B, rng, n - n // 2, n // 2, 0, rot, "min")
    _alternating(B, rng, 20)
    # past the maximum of a rank-2 segment (167 views): split
    _pointwise(B, rng, 200, 1)
    _pointwise(B, rng, 100, 4, n_out=100)
    _reduction(B, rng, 180, 3, 1, 1, "max")
    _reduction(B, rng, 3, 180, 0, 2, "min")
    _contraction_split(B, rng)
    # rank 8 (55 views at most): 60 inputs
    g = kf.Graph()
    inp = Inputs(g, rng)
    shape = [2, 1, 1, 1, 1, 1, 1, 3]
    xs = [inp.add(("dense", "?" * 8, shape, None, False)) for _ in range(60)]
    g.output(_chain(g, xs))
    _add(B, "60 rank-8 inputs summed (past the 55 views of rank 8)",
         ["ManyViews", "SegmentSplit"], g, inp)
