"""Category cache.isolation: executes of one fusion with changing options,
inputs and shapes; each step states its outputs and plan/kernel hit or miss.

Each test runs on a fresh context (so its first step misses both caches).
Expected semantics (docs/conformance.md):
  first run: plan miss, kernels miss; same options again: hit/hit, 0 compiles;
  a none-level option change: hit/hit, 0 compiles; a kernel-level change:
  plan hit, kernels miss; back to earlier options: hit/hit; a plan-level
  change: plan miss (kernels "any": a new plan may find its kernels cached);
  a new input size: plan hit by default (sizes are not in the key), plan miss
  under disable=kernel_reuse; a non-contiguous input: plan miss (contiguity
  is in the input signature).
The flagship test catches nvFuser's flaw from outputs alone: a*b+c in f32 is
contracted by default (fma: one rounding) and separately rounded under
disable=fma; the inputs make the two differ in every element, so a runtime
that reuses the first kernel fails on the outputs, not only on counters.
"""

import random
from fractions import Fraction

import errbound
import fp
import kf
from vecfile import VectorFile

NOTES = {
    "NvFuserFlaw": "a*b+c with default options (contracted to fma), then "
                   "disable=fma, then default again, on inputs where the two "
                   "roundings differ in every element: reusing a kernel "
                   "across kernel-level options fails on outputs.",
    "KernelLevel": "A kernel-level option changes: plan hit, kernels miss.",
    "NoneLevel": "A none-level option changes: plan hit, kernels hit, no "
                 "compiles.",
    "PlanLevel": "A plan-level option changes: plan miss.",
    "Return": "Back to options used earlier: plan hit, kernels hit.",
    "Shape": "A new input size: plan hit by default; miss under "
             "disable=kernel_reuse.",
    "Layout": "A non-contiguous input changes the input signature: plan "
              "miss.",
    "FastMath": "enable=fast_math: outputs checked with the fast_math bounds "
                "(ftz); the precise step after it must meet the default "
                "bound, which a reused fast kernel would exceed.",
    "Env": "Options come from the environment too.",
    "Concurrent": "Steps run concurrently by several threads on one context; "
                  "outputs checked, hit/miss not checked.",
    "Matmul": "Matmul paths chosen by plan-level options.",
    "NvrtcCaching": "disable=nvrtc_caching: every call compiles (a kernel "
                    "miss and one compile), the cached kernel stays cached "
                    "and the fresh one is not cached.",
    "Lru": "Small cache capacities (\"capacities\"): the least recently "
           "used entry is evicted; a step after the eviction hits the "
           "recently used entry and misses the evicted one.",
    "Reload": "setenv steps change the environment strings, reload steps "
              "take a new snapshot in the same context: kernel-level, "
              "dump, none-level and plan-level changes.",
    "Align": "An input placed \"offset\" elements into its storage: not "
             "16-byte aligned is a new input signature (plan miss); "
             "aligned again hits.",
    "Size1": "An ordinary axis becomes size 1: a new input signature, a "
             "plan miss.",
    "MultiSegment": "A fusion with several segments.",
    "Serde": "Kernel database (kiln conform --serde): a step with \"pass\" "
             "runs only in that process of the round trip (in order with "
             "the others in a plain run).  The fusion is unique to the test, "
             "so pass 1 stores its kernels (db: stored); pass 2 changes a "
             "kernel-level option and must miss the database (db: stored), "
             "then returns to pass 1's options and must hit it (db: hit).  A "
             "database that ignored the option in its key would hand back "
             "pass 1's kernel and fail on the outputs.",
}

FMA_KF = None


def _out(dt, shape, values, check, period=None):
    t = {"dtype": dt, "shape": list(shape)}
    numel = 1
    for s in shape:
        numel *= s
    head = kf.periodic(values, period) if period else None
    if head is not None:
        t["data"] = {"repeat": kf.hexlist(head, dt), "count": numel}
    else:
        t["data"] = kf.hexlist(values, dt)
    t["check"] = dict(check)
    return t


def _rand_f(rng, dt, lo=-4.0, hi=4.0):
    return fp.rnd(rng.uniform(lo, hi), dt)


def flaw_inputs(rng, dt, n, period=61):
    """a, b, c where fma(a,b,c) != round(round(a*b)+c) in every element.
    More than 256 elements repeat a pattern of `period` elements."""
    if n > 256:
        a, b, c = flaw_inputs(rng, dt, period)
        return (kf.expand_repeat(a, n), kf.expand_repeat(b, n),
                kf.expand_repeat(c, n))
    a, b, c = [], [], []
    while len(a) < n:
        x = _rand_f(rng, dt, 1.0, 2.0) * rng.choice((1, -1, 4, -0.25))
        y = _rand_f(rng, dt, 1.0, 2.0) * rng.choice((1, -1, 2, -0.5))
        p = Fraction(x) * Fraction(y)
        pr = fp.round_q(p, dt)
        if len(a) % 2 == 0:
            z = -pr                                  # fma: residual; sep: 0
        else:
            z = fp.rnd(-float(pr) * rng.uniform(0.3, 0.9), dt)
        fused = fp.round_q(p + Fraction(z), dt)
        sep = kf._add(pr, z, dt)
        if fp.encode(fused, dt) == fp.encode(sep, dt):
            continue
        a.append(x)
        b.append(y)
        c.append(z)
    return a, b, c


class Seq:
    """Builds the steps of one test, computing expected outputs."""

    def __init__(self, graph, env=None):
        self.g = graph
        self.env = env or {}
        self.env0 = dict(self.env)   # the test's "env" (before reloads)
        self.pending = dict(self.env)
        self.steps = []
        self.period = 61

    def setenv(self, **env):
        """A setenv step: new environment strings (None = unset); no effect
        until a reload."""
        self.pending = dict({"enable": None, "disable": None, "dump": None},
                            **env)
        self.steps.append({"action": "setenv", "env": dict(self.pending)})
        return self

    def reload(self):
        """A reload step: the context takes the strings of the last setenv."""
        self.env = {k: v for k, v in self.pending.items() if v is not None}
        self.steps.append({"action": "reload"})
        return self

    def step(self, enable, disable, inputs, expect, check=None,
             shapes=None, strides=None, period=None, pass_=None,
             offsets=None):
        """inputs: list of (dt, shape, values); check: per-output check or
        a function(out_index, input values, outputs) -> check."""
        env_dis = [x for x in (self.env.get("disable") or "").split(",") if x]
        dis = list(disable) + env_dis
        outs = self.g.evaluate([(s, v) for _, s, v in inputs], disable=dis)
        if period is None and max(len(v) for _, _, v in inputs) > 256:
            period = self.period
        jin = []
        for i, (dt, s, v) in enumerate(inputs):
            st = strides[i] if strides else None
            off = offsets[i] if offsets else 0
            head = kf.periodic(v, period) if period and not st and not off \
                else None
            if head is not None:
                jin.append(kf.repeat_tensor(dt, s, head))
            else:
                jin.append(kf.tensor(dt, s, v, strides=st, offset=off))
        jout = []
        for k, (s, v) in enumerate(outs):
            dt = self.g.nodes[self.g.outputs[k]].dtype
            c = check(k, inputs, v) if callable(check) else (
                check or {"kind": "exact"})
            jout.append(_out(dt, s, v, c, period))
        st = {"enable": list(enable), "disable": list(disable),
              "inputs": jin, "outputs": jout, "expect": dict(expect)}
        if pass_ is not None:
            st["pass"] = pass_
        self.steps.append(st)
        return self


MISS = {"plan": "miss", "kernels": "miss"}
HITS = {"plan": "hit", "kernels": "hit", "compiles": 0}
KMISS = {"plan": "hit", "kernels": "miss"}
PMISS = {"plan": "miss", "kernels": "any"}
PHIT = {"plan": "hit", "kernels": "any"}


def fma_graph(dt, rank=1):
    g = kf.Graph()
    ax = "?" * rank
    a = g.input(dt, ax)
    b = g.input(dt, ax)
    c = g.input(dt, ax)
    g.output(g.op("add", g.op("mul", a, b), c))
    return g


def build():
    vf = VectorFile("cache.isolation", NOTES)
    rng = random.Random(4242)

    def add(group, comment, flags, seq, threads=None, capacities=None):
        t = {"comment": comment, "flags": flags, "result": "valid",
             "fusion": seq.g.text(), "steps": seq.steps}
        if capacities:
            t["capacities"] = dict(capacities)
        if seq.env0:
            t["env"] = dict({"enable": None, "disable": None, "dump": None},
                            **seq.env0)
        if threads:
            t["threads"] = threads
            t["concurrent"] = True
        vf.add("CacheIsolation", group, t)

    # ---------------------------------------------- the nvFuser flaw
    for dt in ("f32", "f64"):
        for n in (1, 37, 256, 5000):
            a, b, c = flaw_inputs(rng, dt, n)
            ins = [(dt, [n], a), (dt, [n], b), (dt, [n], c)]
            g = fma_graph(dt)
            s = Seq(g)
            s.step([], [], ins, MISS)
            s.step([], ["fma"], ins, KMISS)
            s.step([], [], ins, HITS)
            s.step([], ["fma"], ins, HITS)
            add("nvFuser flaw: contraction vs disable=fma",
                "%s a*b+c, %d elements: default, disable=fma, default, "
                "disable=fma" % (dt, n), ["NvFuserFlaw", "KernelLevel",
                                          "Return"], s)
        a, b, c = flaw_inputs(rng, dt, 48)
        ins = [(dt, [48], a), (dt, [48], b), (dt, [48], c)]
        s = Seq(fma_graph(dt))
        s.step([], ["fma"], ins, MISS).step([], [], ins, KMISS)
        s.step([], ["fma"], ins, HITS).step([], [], ins, HITS)
        add("nvFuser flaw: contraction vs disable=fma",
            "%s a*b+c: disable=fma first, then default" % dt,
            ["NvFuserFlaw", "KernelLevel", "Return"], s)
        # other kernel-level options change nothing numerically but must
        # not bring back a contracted kernel under disable=fma
        s = Seq(fma_graph(dt))
        s.step([], [], ins, MISS)
        s.step(["kernel_lineinfo"], ["fma"], ins, KMISS)
        s.step(["kernel_lineinfo"], [], ins, KMISS)
        s.step([], ["fma", "expr_simplify"], ins, KMISS)
        s.step([], ["fma"], ins, KMISS)
        s.step([], [], ins, HITS)
        add("nvFuser flaw: contraction vs disable=fma",
            "%s a*b+c: disable=fma combined with other kernel options" % dt,
            ["NvFuserFlaw", "KernelLevel", "Return"], s)
        # 2-D with a broadcast operand
        a, b, c = flaw_inputs(rng, dt, 24)
        g = kf.Graph()
        x = g.input(dt, "??")
        y = g.input(dt, "1?")
        z = g.input(dt, "??")
        g.output(g.op("add", z, g.op("mul", x, y)))
        bb = b[:6]
        # recompute c so rows differ for the broadcast b
        cc = []
        for i in range(24):
            p = Fraction(a[i]) * Fraction(bb[i % 6])
            cc.append(-fp.round_q(p, dt) if i % 2 == 0 else
                      fp.rnd(-float(fp.round_q(p, dt)) * 0.7, dt))
        ins = [(dt, [4, 6], a), (dt, [1, 6], bb), (dt, [4, 6], cc)]
        s = Seq(g)
        s.step([], [], ins, MISS).step([], ["fma"], ins, KMISS)
        s.step([], [], ins, HITS)
        add("nvFuser flaw: contraction vs disable=fma",
            "%s c + a*b (rhs contraction) with a broadcast operand" % dt,
            ["NvFuserFlaw", "KernelLevel", "Return"], s)
        # env disable=fma: execute cannot switch it back on
        a, b, c = flaw_inputs(rng, dt, 16)
        ins = [(dt, [16], a), (dt, [16], b), (dt, [16], c)]
        s = Seq(fma_graph(dt), env={"disable": "fma"})
        s.step([], [], ins, MISS).step(["fast_math"], [], ins, KMISS,
                                       check={"kind": "exact", "ftz": True})
        s.step([], [], ins, HITS)
        add("environment", "%s a*b+c under KILN_DISABLE=fma" % dt,
            ["NvFuserFlaw", "Env"], s)
        s = Seq(fma_graph(dt), env={"enable": "kernel_profile"})
        s.step([], [], ins, MISS).step([], ["fma"], ins, KMISS)
        s.step([], [], ins, HITS)
        add("environment", "%s a*b+c under KILN_ENABLE=kernel_profile" % dt,
            ["NvFuserFlaw", "Env", "NoneLevel"], s)

    # ---------------------------------------------- kernel-level options
    kernel_opts = [(["fast_math"], []), (["kernel_lineinfo"], []),
                   (["kernel_debug"], []), ([], ["fma"]),
                   ([], ["compile_to_sass"]), ([], ["expr_simplify"]),
                   ([], ["expr_simplify(cse)"]),
                   ([], ["expr_simplify(fold,index)"])]
    for dt in ("f32", "f64"):
        for en, dis in kernel_opts:
            a, b, c = flaw_inputs(rng, dt, 40)
            ins = [(dt, [5, 8], a), (dt, [5, 8], b), (dt, [5, 8], c)]
            s = Seq(fma_graph(dt, 2))
            chk = {"kind": "exact", "ftz": True} if en == ["fast_math"] \
                else None
            s.step([], [], ins, MISS)
            s.step(en, dis, ins, KMISS, check=chk)
            s.step([], [], ins, HITS)
            s.step(en, dis, ins, HITS, check=chk)
            add("kernel-level options", "%s: %r %r is kernel-level"
                % (dt, en, dis), ["KernelLevel", "Return"], s)
    # two kernel-level variants of one option are different kernels
    a, b, c = flaw_inputs(rng, "f32", 20)
    ins = [("f32", [20], a), ("f32", [20], b), ("f32", [20], c)]
    s = Seq(fma_graph("f32"))
    s.step([], ["expr_simplify(cse)"], ins, MISS)
    s.step([], ["expr_simplify(fold)"], ins, KMISS)
    s.step([], ["expr_simplify(cse,cse)"], ins, HITS)
    s.step([], ["expr_simplify"], ins, KMISS)
    s.step([], ["expr_simplify(cse,fold,identity,index,strength)"], ins,
           {"plan": "hit", "kernels": "any"})
    add("kernel-level options", "expr_simplify argument lists are part of "
        "the kernel key", ["KernelLevel", "Return"], s)

    # ---------------------------------------------- none-level options
    none_opts = [(["kernel_profile"], []), (["warn_register_spill"], []),
                 (["warn_register_spill(128)"], []),
                 ([], ["parallel_compile"]),
                 (["kernel_profile", "warn_register_spill(7)"],
                  ["parallel_compile"])]
    for dt in ("f32", "f64"):
        for en, dis in none_opts:
            a, b, c = flaw_inputs(rng, dt, 33)
            ins = [(dt, [33], a), (dt, [33], b), (dt, [33], c)]
            s = Seq(fma_graph(dt))
            s.step([], [], ins, MISS)
            s.step(en, dis, ins, HITS)
            s.step(en, dis + ["fma"], ins, KMISS)
            s.step([], ["fma"], ins, HITS)
            s.step(en, dis, ins, HITS)
            add("none-level options", "%s: %r %r must not recompile"
                % (dt, en, dis), ["NoneLevel", "KernelLevel", "Return"], s)
    s = Seq(fma_graph("f32"))
    a, b, c = flaw_inputs(rng, "f32", 9)
    ins = [("f32", [9], a), ("f32", [9], b), ("f32", [9], c)]
    once = {"plan": "hit", "kernels": "miss", "compiles": 1}
    s.step([], [], ins, dict(MISS, compiles=1))
    s.step([], ["nvrtc_caching"], ins, once)
    s.step([], ["nvrtc_caching"], ins, once)
    s.step([], [], ins, HITS)
    s.step([], ["nvrtc_caching", "fma"], ins, once)
    s.step([], ["fma"], ins, once)
    s.step([], ["fma"], ins, HITS)
    add("none-level options", "disable=nvrtc_caching compiles on every "
        "call, keeps the cached kernel and caches nothing",
        ["NvrtcCaching", "Return"], s)
    s = Seq(fma_graph("f32"), env={"dump": "options,cache"})
    s.step([], [], ins, MISS).step(["kernel_profile"], [], ins, HITS)
    s.step([], ["fma"], ins, KMISS)
    add("none-level options", "KILN_DUMP does not enter any key",
        ["NoneLevel", "Env"], s)

    # ---------------------------------------------- reload in one context
    for dt in ("f32", "f64"):
        a, b, c = flaw_inputs(rng, dt, 20)
        ins = [(dt, [20], a), (dt, [20], b), (dt, [20], c)]
        s = Seq(fma_graph(dt))
        s.step([], [], ins, dict(MISS, compiles=1))
        s.setenv(disable="fma")
        s.step([], [], ins, HITS)          # no effect before the reload
        s.reload()
        s.step([], [], ins, dict(KMISS, compiles=1))
        s.setenv(disable="fma", dump="options,cache,fusion_ir,launch_params")
        s.reload()
        s.step([], [], ins, HITS)          # dumps are in neither key
        s.setenv(enable="kernel_profile")
        s.reload()
        s.step([], [], ins, HITS)          # back to contracted, cached
        s.setenv(disable="kernel_reuse")
        s.reload()
        s.step([], [], ins, {"plan": "miss", "kernels": "any"})
        add("reload", "%s a*b+c: setenv has no effect until a reload; a "
            "reload changes the kernel, a dump or none-level change "
            "recompiles nothing, a plan-level one misses the plan" % dt,
            ["Reload", "NoneLevel", "KernelLevel", "PlanLevel", "Return"], s)

    # ---------------------------------------------- LRU eviction
    # plan cache of 2: A, B, A again (A most recent), C evicts B, not A
    a, b, c = flaw_inputs(rng, "f32", 10)
    ins = [("f32", [10], a), ("f32", [10], b), ("f32", [10], c)]
    pany = {"plan": "miss", "kernels": "any"}
    s = Seq(fma_graph("f32"))
    s.step([], [], ins, MISS)
    s.step([], ["kernel_reuse"], ins, pany)
    s.step([], [], ins, HITS)
    s.step(["fuse_matmul"], [], ins, pany)
    s.step([], [], ins, HITS)
    s.step([], ["kernel_reuse"], ins, pany)
    add("LRU eviction", "plan cache of 2 entries: the least recently used "
        "plan is evicted, not the oldest", ["Lru", "PlanLevel", "Return"], s,
        capacities={"plan": 2, "kernel": 16})
    # kernel cache of 2: default, disable=fma, default again, fast_math
    # evicts disable=fma's kernel, not default's
    s = Seq(fma_graph("f32"))
    s.step([], [], ins, MISS)
    s.step([], ["fma"], ins, dict(KMISS, compiles=1))
    s.step([], [], ins, HITS)
    s.step(["kernel_lineinfo"], [], ins, dict(KMISS, compiles=1))
    s.step([], [], ins, HITS)
    s.step([], ["fma"], ins, dict(KMISS, compiles=1))
    add("LRU eviction", "kernel cache of 2 entries: the least recently used "
        "kernel is evicted, not the oldest", ["Lru", "KernelLevel", "Return"],
        s, capacities={"plan": 16, "kernel": 2})

    # ---------------------------------------------- plan-level options
    for dt in ("f32", "f64"):
        for dis in (["kernel_reuse"], ["fallback"], ["matmul_expr_eval"]):
            a, b, c = flaw_inputs(rng, dt, 12)
            ins = [(dt, [12], a), (dt, [12], b), (dt, [12], c)]
            s = Seq(fma_graph(dt))
            s.step([], [], ins, MISS).step([], dis, ins, PMISS)
            s.step([], [], ins, HITS).step([], dis, ins, HITS)
            s.step([], dis + ["fma"], ins, KMISS)
            add("plan-level options", "%s: disable=%s is plan-level"
                % (dt, dis[0]), ["PlanLevel", "Return", "KernelLevel"], s)
        s = Seq(fma_graph(dt))
        s.step([], [], ins, MISS).step(["fuse_matmul"], [], ins, PMISS)
        s.step([], [], ins, HITS)
        add("plan-level options", "%s: enable=fuse_matmul is plan-level"
            % dt, ["PlanLevel", "Return"], s)

    # ---------------------------------------------- shapes and layouts
    for dt in ("f32", "f64"):
        def ins_n(n):
            a, b, c = flaw_inputs(rng, dt, n)
            return [(dt, [n], a), (dt, [n], b), (dt, [n], c)]
        i8, i5, i300 = ins_n(8), ins_n(5), ins_n(300)
        s = Seq(fma_graph(dt))
        s.step([], [], i8, MISS).step([], [], i5, PHIT)
        s.step([], [], i300, PHIT).step([], [], i8, HITS)
        s.step([], ["fma"], i5, KMISS)
        add("shapes", "%s: new sizes reuse the plan by default" % dt,
            ["Shape"], s)
        s = Seq(fma_graph(dt))
        s.step([], ["kernel_reuse"], i8, MISS)
        s.step([], ["kernel_reuse"], i5, PMISS)
        s.step([], ["kernel_reuse"], i8, HITS)
        s.step([], ["kernel_reuse"], i5, HITS)
        s.step([], [], i300, PMISS)
        add("shapes", "%s: disable=kernel_reuse puts sizes in the plan key"
            % dt, ["Shape", "PlanLevel"], s)
        s = Seq(fma_graph(dt), env={"disable": "kernel_reuse"})
        s.step([], [], i8, MISS).step([], [], i5, PMISS)
        s.step([], [], i8, HITS)
        add("shapes", "%s: KILN_DISABLE=kernel_reuse" % dt,
            ["Shape", "Env"], s)
        # layout: transposed (non-contiguous) operand
        g = fma_graph(dt, 2)
        a, b, c = flaw_inputs(rng, dt, 12)
        ins = [(dt, [3, 4], a), (dt, [3, 4], b), (dt, [3, 4], c)]
        s = Seq(g)
        s.step([], [], ins, MISS)
        s.step([], [], ins, PMISS, strides=[[1, 3], None, None])
        s.step([], [], ins, HITS, strides=[[1, 3], None, None])
        s.step([], [], ins, HITS)
        s.step([], ["fma"], ins, KMISS, strides=[[1, 3], None, None])
        add("shapes", "%s: a transposed input is a new input signature" % dt,
            ["Layout", "KernelLevel"], s)
        # 16-byte alignment is in the input signature: an input one
        # element into its storage misses, four f32 (16 bytes) in hits
        a, b, c = flaw_inputs(rng, dt, 12)
        ins = [(dt, [12], a), (dt, [12], b), (dt, [12], c)]
        al16 = 16 // (4 if dt == "f32" else 8)
        s = Seq(fma_graph(dt))
        s.step([], [], ins, MISS)
        s.step([], [], ins, {"plan": "miss", "kernels": "any"},
               offsets=[1, 0, 0])
        s.step([], [], ins, HITS, offsets=[al16, 0, 0])
        s.step([], [], ins, HITS, offsets=[1, 0, 0])
        s.step([], [], ins, {"plan": "miss", "kernels": "any"},
               offsets=[0, 0, 3])
        s.step([], ["fma"], ins, KMISS, offsets=[1, 0, 0])
        add("shapes", "%s: an input that is not 16-byte aligned is a new "
            "input signature" % dt, ["Align", "Return", "KernelLevel"], s)
        # an ordinary axis that becomes size 1 is a new input signature
        a, b, c = flaw_inputs(rng, dt, 12)
        ins = [(dt, [3, 4], a), (dt, [3, 4], b), (dt, [3, 4], c)]
        row = [(dt, [1, 4], a[:4]), (dt, [1, 4], b[:4]), (dt, [1, 4], c[:4])]
        s = Seq(fma_graph(dt, 2))
        s.step([], [], ins, MISS)
        s.step([], [], row, {"plan": "miss", "kernels": "any"})
        s.step([], [], row, HITS)
        s.step([], [], ins, HITS)
        add("shapes", "%s: an ordinary axis of size 1 is in the input "
            "signature" % dt, ["Size1", "Return"], s)

    # ---------------------------------------------- fast_math
    for n, lo, hi in ((16, 60.0, 88.0), (64, -87.0, -40.0), (9, 20.0, 80.0)):
        g = kf.Graph()
        x = g.input("f32", "?")
        g.output(g.op("exp", x))
        xs = [fp.rnd(rng.uniform(lo, hi), "f32") for _ in range(n)]
        ins = [("f32", [n], xs)]
        fast = {"kind": "ulp", "ftz": True, "maxPerElement": [
            2 + int(abs(1.173 * v)) for v in xs]}
        prec = {"kind": "ulp", "max": 2}
        s = Seq(g)
        s.step([], [], ins, MISS, check=prec)
        s.step(["fast_math"], [], ins, KMISS, check=fast)
        s.step([], [], ins, HITS, check=prec)
        s.step(["fast_math"], [], ins, HITS, check=fast)
        add("fast_math", "expf on [%g, %g]: precise, fast, precise again"
            % (lo, hi), ["FastMath", "KernelLevel", "Return"], s)
    g = kf.Graph()
    x = g.input("f32", "?")
    g.output(g.op("exp", x))
    xs = [fp.rnd(rng.uniform(70, 85), "f32") for _ in range(32)]
    ins = [("f32", [32], xs)]
    fast = {"kind": "ulp", "ftz": True,
            "maxPerElement": [2 + int(abs(1.173 * v)) for v in xs]}
    s = Seq(g)
    s.step(["fast_math"], [], ins, MISS, check=fast)
    s.step([], [], ins, KMISS, check={"kind": "ulp", "max": 2})
    s.step(["fast_math", "kernel_profile"], [], ins, HITS, check=fast)
    add("fast_math", "fast first, then precise", ["FastMath", "KernelLevel"],
        s)
    s = Seq(g, env={"enable": "fast_math"})
    s.step([], [], ins, MISS, check=fast)
    s.step(["kernel_profile"], [], ins, HITS, check=fast)
    add("fast_math", "KILN_ENABLE=fast_math", ["FastMath", "Env"], s)

    # ---------------------------------------------- multi-segment
    for dt in ("f32", "f64"):
        g = kf.Graph()
        x = g.input(dt, "??")
        y = g.input(dt, "??")
        z = g.input(dt, "??")
        p = g.op("add", g.op("mul", x, y), z)
        g.output(p)
        g.output(g.reduce("max", p, [1]))
        a, b, c = flaw_inputs(rng, dt, 30)
        ins = [(dt, [5, 6], a), (dt, [5, 6], b), (dt, [5, 6], c)]
        s = Seq(g)
        s.step([], [], ins, MISS).step([], ["fma"], ins, KMISS)
        s.step([], [], ins, HITS).step([], ["fma"], ins, HITS)
        add("multi-segment", "%s: pointwise output + max reduction of a*b+c"
            % dt, ["MultiSegment", "NvFuserFlaw", "KernelLevel"], s)

    # ---------------------------------------------- matmul paths
    for dt in ("f32", "f16"):
        g = kf.Graph()
        a = g.input(dt, "??")
        b = g.input(dt, "??")
        bias = g.input("f32", "1?")
        mm = g.matmul(a, b)
        g.output(g.op("relu", g.op("add", mm, bias)))
        M, K, N = 6, 20, 5
        av = [fp.rnd(rng.uniform(-2, 2), dt) for _ in range(M * K)]
        bv = [fp.rnd(rng.uniform(-2, 2), dt) for _ in range(K * N)]
        cv = [fp.rnd(rng.uniform(-1, 1), "f32") for _ in range(N)]
        ins = [(dt, [M, K], av), (dt, [K, N], bv), ("f32", [1, N], cv)]

        def mm_check(k, inputs, got, av=av, bv=bv, cv=cv, M=M, N=N, K=K):
            return {"kind": "abs", "bounds": errbound.matmul_bounds(
                av, bv, M, K, N, got, cv)}
        s = Seq(g)
        s.step([], [], ins, MISS, check=mm_check)
        s.step([], ["matmul_expr_eval"], ins, PMISS, check=mm_check)
        s.step(["fuse_matmul"], [], ins, PMISS, check=mm_check)
        s.step([], [], ins, HITS, check=mm_check)
        s.step(["fuse_matmul"], [], ins, HITS, check=mm_check)
        s.step([], ["matmul_expr_eval"], ins, HITS, check=mm_check)
        add("matmul paths", "%s matmul + bias + relu on all three paths"
            % dt, ["Matmul", "PlanLevel", "Return"], s)

    # ---------------------------------------------- concurrency
    for i, dt in enumerate(("f32", "f64", "f32", "f64")):
        a, b, c = flaw_inputs(rng, dt, 128)
        ins = [(dt, [128], a), (dt, [128], b), (dt, [128], c)]
        s = Seq(fma_graph(dt))
        s.step([], [], ins, MISS)
        s.step([], ["fma"], ins, KMISS)
        s.step(["kernel_profile"], [], ins, HITS)
        s.step(["kernel_lineinfo"], ["fma"], ins, KMISS)
        s.step([], ["fma"], ins, HITS)
        s.step([], [], ins, HITS)
        if i >= 2:
            s.step(["fast_math"], [], ins, KMISS,
                   check={"kind": "exact", "ftz": True})
            s.step([], ["fma", "kernel_reuse"], ins, PMISS)
        add("concurrent", "%s: 8 threads alternate default / disable=fma "
            "on one context" % dt, ["Concurrent", "NvFuserFlaw"], s,
            threads=8)
    g = kf.Graph()
    x = g.input("f32", "?")
    g.output(g.op("exp", x))
    xs = [fp.rnd(rng.uniform(70, 85), "f32") for _ in range(64)]
    ins = [("f32", [64], xs)]
    fast = {"kind": "ulp", "ftz": True,
            "maxPerElement": [2 + int(abs(1.173 * v)) for v in xs]}
    s = Seq(g)
    for _ in range(3):
        s.step([], [], ins, PHIT, check={"kind": "ulp", "max": 2})
        s.step(["fast_math"], [], ins, PHIT, check=fast)
    s.steps[0]["expect"] = dict(MISS)
    add("concurrent", "8 threads alternate precise and fast_math expf",
        ["Concurrent", "FastMath"], s, threads=8)
    for n_threads in (2, 16):
        a, b, c = flaw_inputs(rng, "f32", 1000)
        ins = [("f32", [1000], a), ("f32", [1000], b), ("f32", [1000], c)]
        s = Seq(fma_graph("f32"))
        for k in range(4):
            s.step([], ["fma"] if k % 2 else [], ins, PHIT)
        s.steps[0]["expect"] = dict(MISS)
        add("concurrent", "%d threads, 1000 elements" % n_threads,
            ["Concurrent", "NvFuserFlaw"], s, threads=n_threads)
    serde_tests(add, rng)
    return {"cache.isolation.json": vf.finish()}


def serde_tests(add, rng):
    """The kernel database round trip (kiln conform --serde): pass 1 stores
    kernels under options A, pass 2 runs options B (must miss the database)
    and then A again (must hit it).  Each fusion is scaled by its own power
    of two, so its kernels are unique in the suite: no other test can have
    stored them."""
    first = {"plan": "miss", "kernels": "miss", "db": "stored"}
    second = {"plan": "any", "kernels": "miss", "db": "stored"}
    back = {"plan": "hit", "kernels": "any", "db": "hit"}
    j = [0]

    def scaled(g, v, dt, rank, up=True):
        j[0] += 1
        k = 2.0 ** (j[0] if up else -j[0])
        return g.op("mul", v, g.scalar(dt, k, rank))

    def fma_test(dt, a_opts, b_opts, comment, rank=1, reduce=False):
        g = kf.Graph()
        ax = "?" * rank
        x, y, z = g.input(dt, ax), g.input(dt, ax), g.input(dt, ax)
        p = scaled(g, g.op("add", g.op("mul", x, y), z), dt, rank)
        g.output(p)
        if reduce:
            g.output(g.reduce("max", p, [rank - 1]))
        n = 24
        a, b, c = flaw_inputs(rng, dt, n)
        shape = [n] if rank == 1 else [4, n // 4]
        ins = [(dt, shape, a), (dt, shape, b), (dt, shape, c)]
        s = Seq(g)
        s.step(a_opts[0], a_opts[1], ins, first, pass_=1)
        s.step(b_opts[0], b_opts[1], ins, second, pass_=2)
        s.step(a_opts[0], a_opts[1], ins, back, pass_=2)
        add("kernel database (--serde)", comment,
            ["Serde", "NvFuserFlaw", "KernelLevel"], s)

    dflt, nofma = ([], []), ([], ["fma"])
    for dt in ("f32", "f64"):
        fma_test(dt, dflt, nofma, "%s a*b+c: pass 1 default, pass 2 "
                 "disable=fma then default" % dt)
        fma_test(dt, nofma, dflt, "%s a*b+c: pass 1 disable=fma, pass 2 "
                 "default then disable=fma" % dt)
    fma_test("f32", dflt, nofma, "f32 a*b+c and its max over the last axis "
             "(two segments): pass 1 default, pass 2 disable=fma", rank=2,
             reduce=True)
    for b_opts, what in ((["kernel_lineinfo"], []), "enable=kernel_lineinfo"), \
                        (([], ["compile_to_sass"]), "disable=compile_to_sass"), \
                        (([], ["expr_simplify(cse)"]),
                         "disable=expr_simplify(cse)"), \
                        ((["kernel_debug"], []), "enable=kernel_debug"):
        fma_test("f32", dflt, b_opts, "f32 a*b+c: pass 1 default, pass 2 %s "
                 "then default" % what)
    # fast_math: on a GPU the fast expf misses the precise bound here
    for a_fast in (True, False):
        g = kf.Graph()
        x = g.input("f32", "?")
        g.output(scaled(g, g.op("exp", x), "f32", 1, up=False))
        xs = [fp.rnd(rng.uniform(70, 85), "f32") for _ in range(32)]
        ins = [("f32", [32], xs)]
        fast = {"kind": "ulp", "ftz": True,
                "maxPerElement": [2 + int(abs(1.173 * v)) for v in xs]}
        prec = {"kind": "ulp", "max": 2}
        fo, po = (["fast_math"], []), ([], [])
        a, b = (fo, po) if a_fast else (po, fo)
        ca, cb = (fast, prec) if a_fast else (prec, fast)
        s = Seq(g)
        s.step(a[0], a[1], ins, first, check=ca, pass_=1)
        s.step(b[0], b[1], ins, second, check=cb, pass_=2)
        s.step(a[0], a[1], ins, back, check=ca, pass_=2)
        add("kernel database (--serde)", "expf on [70, 85]: pass 1 %s, pass 2 "
            "%s then %s again" % (("fast_math", "precise", "fast_math")
                                  if a_fast else
                                  ("precise", "fast_math", "precise")),
            ["Serde", "FastMath", "KernelLevel"], s)
