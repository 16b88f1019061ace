"""Rule ids of the contract, and which rules each vector test traces.

Every normative statement of the contract carries an id, written in the
docs themselves as a code span `[area.name]` (docs/conformance.md, "Rule
ids").  RULE_DOCS are the files that define them; ANCHOR_RE finds them.

Every vector test has a field `rules`: {rule id: outcome}.  The outcome says
which expected result of the test would change if the implementation broke
that rule: one or more `PATH[=VALUE]` joined by "; ", PATH a path into the
test object (`steps[2].expect.kernels`, `outputs[0]`, `error.status`),
VALUE the value stated there.  testgen/spec_coverage.py checks that every
path exists and holds VALUE, that no outcome rests on an "any", and that
every rule has a test.

derive(category, test) computes the rules of a test from what the test is
(its category, flags, fusion, steps); a generator may also set
test["rules"] itself, and derive() keeps those entries.
"""

import re

RULE_DOCS = ("docs/options.md", "docs/runtime.md", "docs/numerics.md",
             "docs/fusion-format.md", "docs/backends.md")
AREAS = ("opt", "env", "cache", "info", "thread", "plan", "num", "kf", "abi")
ANCHOR_RE = re.compile(r"`\[((?:%s)(?:\.[a-z0-9_]+)+)\]`" % "|".join(AREAS))
ID_RE = re.compile(r"^(?:%s)(?:\.[a-z0-9_]+)+$" % "|".join(AREAS))

TRANSCENDENTAL = {"exp", "log", "tanh", "sin", "cos", "pow", "rsqrt", "erf",
                  "sigmoid"}
NAN_OPS = {"maximum", "minimum", "max", "min", "relu", "add", "sub", "mul",
           "div", "fma", "sum"}
FLOAT_BITS = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23),
              "f64": (11, 52)}


def is_nan(hexbits, dt):
    if dt not in FLOAT_BITS:
        return False
    e, m = FLOAT_BITS[dt]
    b = int(hexbits, 16)
    return (b >> m) & ((1 << e) - 1) == (1 << e) - 1 and b & ((1 << m) - 1)


def _data(t):
    """The element values of tensor t (gaps of a strided storage left out;
    a repeat-encoded storage as its pattern)."""
    d = t.get("data")
    if isinstance(d, dict):
        return d["repeat"]
    d = d or []
    base = t.get("offset", 0)
    if "strides" not in t:
        return d[base:]
    offs = [base]
    for n, s in zip(t["shape"], t["strides"]):
        offs = [o + i * s for o in offs for i in range(n)]
    return [d[o] for o in offs if o < len(d)]


def _parse_kf_ops(text):
    """[(op, dtype)] of a .kf text, without importing check_vectors."""
    ops = []
    for line in text.splitlines():
        m = re.match(r"%\d+ = (\w+)(?: (\w+))?", line)
        if m is None:
            continue
        op = m.group(1)
        if op == "input":
            ops.append(("input", m.group(2)))
        else:
            ops.append((op, None))
    return ops


def _steps(test, pred):
    return [i for i, s in enumerate(test.get("steps", [])) if pred(i, s)]


def _exp(s):
    return s.get("expect", {})


def _cache_outcome(test, i, keys):
    e = _exp(test["steps"][i])
    parts = ["steps[%d].expect.%s=%s" % (i, k, e[k]) for k in keys
             if k in e and e[k] != "any"]
    return "; ".join(parts)


def _cache(test, flags):
    r = {}
    st = test["steps"]
    conc = test.get("concurrent")
    if conc:
        r["thread.shared_context"] = "steps[0].outputs[0]"
        return r
    opts = [(tuple(s.get("enable", [])), tuple(s.get("disable", [])))
            for s in st]
    shapes = [tuple(tuple(x["shape"]) for x in s.get("inputs", []))
              for s in st]
    strides = [tuple(tuple(x.get("strides") or ()) for x in
                     s.get("inputs", [])) for s in st]

    def first(pred):
        ix = _steps(test, pred)
        return ix[0] if ix else None

    if "KernelLevel" in flags or "NvFuserFlaw" in flags:
        i = first(lambda i, s: i > 0 and _exp(s).get("plan") == "hit" and
                  _exp(s).get("kernels") == "miss")
        if i is not None:
            r["cache.key.kernel"] = _cache_outcome(test, i, ("plan",
                                                             "kernels"))
    if "NvFuserFlaw" in flags:
        r["num.contraction"] = "steps[0].outputs[0]; steps[1].outputs[0]"
    if "NoneLevel" in flags:
        i = first(lambda i, s: i > 0 and opts[i] != opts[0] and
                  _exp(s).get("kernels") == "hit" and
                  _exp(s).get("compiles") == 0)
        if i is None and test.get("env", {}).get("dump"):
            i = first(lambda i, s: _exp(s).get("compiles") == 0)
        if i is not None:
            r["cache.key.none"] = _cache_outcome(
                test, i, ("plan", "kernels", "compiles"))
    if "PlanLevel" in flags:
        i = first(lambda i, s: i > 0 and _exp(s).get("plan") == "miss")
        if i is not None:
            r["cache.key.plan"] = _cache_outcome(test, i, ("plan",))
    if "Return" in flags:
        ix = _steps(test, lambda i, s: i > 0 and
                    opts[i] in opts[:i] and _exp(s).get("plan") == "hit" and
                    _exp(s).get("kernels") == "hit" and
                    _exp(s).get("compiles") == 0)
        if ix:
            r["cache.reuse"] = _cache_outcome(
                test, ix[-1], ("plan", "kernels", "compiles"))
    if "Shape" in flags:
        i = first(lambda i, s: i > 0 and shapes[i] != shapes[0] and
                  _exp(s).get("plan") == "miss")
        if i is not None:
            r["cache.key.exact_sizes"] = _cache_outcome(test, i, ("plan",))
        i = first(lambda i, s: i > 0 and shapes[i] != shapes[0] and
                  _exp(s).get("plan") == "hit")
        if i is not None and "disable=kernel_reuse" not in flags:
            r["cache.key.sizes"] = _cache_outcome(test, i, ("plan",))
    if "Align" in flags:
        offs = [tuple(x.get("offset", 0) for x in s["inputs"]) for s in st]
        i = first(lambda i, s: i > 0 and offs[i] != offs[0] and
                  _exp(s).get("plan") == "miss")
        if i is not None:
            r["cache.key.traits"] = _cache_outcome(test, i, ("plan",))
    if "Layout" in flags or "Size1" in flags:
        i = first(lambda i, s: i > 0 and (strides[i] != strides[0] or
                                          shapes[i] != shapes[0]) and
                  _exp(s).get("plan") == "miss")
        if i is not None:
            rid = "cache.key.size1" if "Size1" in flags else \
                "cache.key.traits"
            r[rid] = _cache_outcome(test, i, ("plan",))
    if "Env" in flags:
        env = test.get("env") or {}
        if "fma" in (env.get("disable") or "") or \
                "fast_math" in (env.get("enable") or ""):
            r["env.snapshot"] = "steps[0].outputs[0]"
        else:
            i = first(lambda i, s: i > 0 and _exp(s).get("plan") != "any"
                      and _exp(s).get("kernels") != "any")
            if i is not None:
                r["env.snapshot"] = _cache_outcome(
                    test, i, ("plan", "kernels", "compiles"))
    if "FastMath" in flags:
        i = first(lambda i, s: "fast_math" in s.get("enable", []) or
                  "fast_math" in ((test.get("env") or {}).get("enable")
                                  or ""))
        r["num.fast_math"] = "steps[%d].outputs[0]" % (i or 0)
    if "Matmul" in flags:
        r["num.matmul.epilogue"] = "steps[0].outputs[0]"
    if "Serde" in flags:
        i = first(lambda i, s: "db" in _exp(s))
        if i is not None:
            r["cache.kernel_db"] = _cache_outcome(test, i, ("db",))
    if "Reload" in flags:
        rel = [i for i, s in enumerate(st) if s.get("action") == "reload"]
        ex = [i for i, s in enumerate(st) if "expect" in s]
        # a setenv before any reload changes nothing: the step after it hits
        pre = [i for i in ex if i > 0 and i < rel[0] and
               _exp(st[i]).get("kernels") == "hit"]
        post = [i for i in ex if i > rel[0] and
                _exp(st[i]).get("kernels") == "miss"]
        r["env.reload"] = "; ".join(
            [_cache_outcome(test, i, ("kernels", "compiles"))
             for i in pre[:1] + post[:1]])
        for k in rel:
            env = st[k - 1].get("env", {}) if k > 0 else {}
            nxt = [i for i in ex if i > k]
            if env.get("dump") and nxt and \
                    _exp(st[nxt[0]]).get("compiles") == 0:
                r["cache.key.none"] = _cache_outcome(
                    test, nxt[0], ("plan", "kernels", "compiles"))
                break
    if "Lru" in flags:
        # the last step misses what was evicted; the one before hits what a
        # FIFO would have evicted
        n = len(st)
        r["cache.lru"] = "%s; %s" % (
            _cache_outcome(test, n - 2, ("plan", "kernels", "compiles")),
            _cache_outcome(test, n - 1, ("plan", "kernels", "compiles")))
    if "NvrtcCaching" in flags:
        i = first(lambda i, s: "nvrtc_caching" in s.get("disable", []) and
                  _exp(s).get("kernels") == "miss")
        r["cache.nvrtc_caching"] = _cache_outcome(
            test, i, ("plan", "kernels", "compiles"))
    return r


def _numerics(test, flags):
    r = {}
    ops = [o for o, _ in _parse_kf_ops(test["fusion"]) if o not in
           ("input", "const")]
    opset = set(ops)
    if test["result"] == "invalid":
        st = test["error"]["status"]
        out = "error.status=%s" % st
        if st == "KILN_ERR_FALLBACK_DISABLED":
            r["opt.conflict.fallback"] = out
            return r
        r["kf.error.execute"] = out
        if "givenOutputs" in test:
            r["kf.error.output"] = out
        if opset & {"max", "min"} and "ZeroSize" in flags:
            r["num.reduce.empty_maxmin"] = out
        else:
            r["num.shape.error"] = out
        if "OrdinarySize1" in flags:
            r["num.shape.size1"] = out
        return r
    o0 = "outputs[0]"
    checks = [o["check"] for o in test["outputs"]]
    kinds = {c["kind"] for c in checks}
    if "FastMath" in flags:
        r["num.fast_math"] = o0
    elif opset & TRANSCENDENTAL:
        r["num.ulp"] = "outputs[0].check.max" if "max" in checks[0] else o0
    if "cast" in opset:
        r["kf.cast"] = o0
        if "Tie" in flags or "OneRounding" in flags:
            r["kf.cast.narrow"] = o0
        if "Saturation" in flags or "Overflow" in flags:
            r["kf.cast.saturate"] = o0
    if "Tie" in flags:
        r["num.round"] = o0
    if "sum" in opset and "abs" in kinds:
        r["num.reduce.sum_bound"] = "outputs[0].check.bounds"
    if "EmptySum" in flags:
        r["num.reduce.empty_sum"] = o0
    if "Identity" in flags:
        r["num.reduce.identity"] = o0
    if "matmul" in opset:
        if "relu" in opset:
            r["num.matmul.epilogue"] = o0
        else:
            r["num.matmul.bound"] = o0
    if "Contraction" in flags:
        r["num.contraction"] = o0
    if "IntWrap" in flags:
        r["num.int.wrap"] = o0
    for k, c in enumerate(checks):
        if "alternatives" in c:
            r["num.signed_zero"] = "outputs[%d].check.alternatives" % k
            break
    if "Broadcast" in flags or "BroadcastOp" in flags:
        r["num.shape.broadcast"] = o0
    for i, t in enumerate(test["inputs"]):
        if "offset" in t:
            r["abi.view.offset"] = "inputs[%d].offset; %s" % (i, o0)
            break
    for i, t in enumerate(test["inputs"]):
        if "strides" in t:
            r["abi.view.strides"] = "inputs[%d].strides; %s" % (i, o0)
            break
    if "ManyViews" in flags or "SegmentSplit" in flags:
        r["plan.segment.limits"] = o0
    if opset & NAN_OPS and any(is_nan(h, t["dtype"]) for t in test["inputs"]
                               for h in _data(t)):
        r["num.nan"] = o0
    if kinds == {"exact"} and not opset & TRANSCENDENTAL and \
            "FastMath" not in flags:
        r["num.exact"] = o0
    return r


def _sorted_names(text):
    names = [w.split("(")[0] for w in re.split(r",(?![^(]*\))", text) if w]
    return names == sorted(names)


def _parse(test, flags):
    r = {}
    if test["result"] == "invalid":
        e = test["error"]
        out = "error.kind=%s; error.offset=%d" % (e["kind"], e["offset"])
        r["opt.error"] = out
        if e["kind"] == "argument":
            r["opt.args"] = out
        if test["source"] == "execute":
            r["opt.execute.element"] = out
        return r
    r["opt.grammar"] = "canonical"
    if "Canonical" in flags or test["input"] != test["canonical"]:
        r["opt.canonical"] = "canonical"
    if "Duplicate" in flags:
        r["opt.duplicate"] = "canonical"
    if test["input"] and not _sorted_names(test["input"]) and \
            test["canonical"]:
        r["opt.canonical.sort"] = "canonical"
    if flags & {"IntArgument", "NameArgument", "NoArgument"}:
        r["opt.args"] = "canonical"
    if test["source"] == "execute":
        r["opt.execute.element"] = "canonical"
    return r


def _precedence(test, flags):
    r = {}
    if "createError" in test:
        e = test["createError"]
        r["opt.prec.env_error"] = "createError.kind=%s; createError.source=" \
            "%s" % (e["kind"], e["source"])
        return r
    st = test["steps"]
    ex = [i for i, s in enumerate(st) if s["action"] == "execute" and
          "canonical" in s]
    if ex:
        last = "steps[%d].canonical" % ex[-1]
        r["info.record"] = last
        for f, rid in (("Merge", "opt.prec.order"),
                       ("Random", "opt.prec.order"),
                       ("EnvOnly", "opt.prec.order"),
                       ("ExecuteOnly", "opt.prec.order"),
                       ("ArgOverride", "opt.prec.replace"),
                       ("NoSwitchOff", "opt.prec.no_switch_off")):
            if f in flags:
                r[rid] = last
        if "NoLeak" in flags:
            later = [i for i in ex if i > 0]
            r["opt.prec.no_leak"] = "steps[%d].canonical" % (
                later[0] if later else ex[-1])
        if "Levels" in flags:
            r["opt.level"] = "steps[%d].levels.plan; steps[%d].levels." \
                "kernel; steps[%d].levels.none" % (ex[-1], ex[-1], ex[-1])
    errs = [i for i, s in enumerate(st) if "error" in s]
    if "ExecuteError" in flags and errs:
        r["opt.error"] = "steps[%d].error.kind=%s" % (
            errs[0], st[errs[0]]["error"]["kind"])
    rel = [i for i, s in enumerate(st) if s["action"] == "reload"]
    if rel:
        after = [i for i in ex if i > rel[0]]
        if "ReloadError" in flags:
            bad = [i for i in rel if "error" in st[i]]
            r["env.reload.error"] = "steps[%d].error.kind=%s%s" % (
                bad[0], st[bad[0]]["error"]["kind"],
                "; steps[%d].canonical" % [i for i in ex if i > bad[0]][0]
                if [i for i in ex if i > bad[0]] else "")
        elif after:
            r["env.reload"] = "steps[%d].canonical" % after[0]
    return r


DERIVED = ("options.parse", "options.precedence", "cache.isolation",
           "numerics", "differential", "sweep")


def _sweep(test, flags):
    """A sweep test traces the bound of its one op: exact ops (ulp 0) and
    casts against [num.exact] / [kf.cast] (saturating for integers), the
    others against [num.ulp], and under fast_math its profile."""
    sw, b = test["sweep"], test["bound"]
    out = "bound"
    r = {}
    if "fast_math" in test["options"].get("enable", []):
        r["num.fast_math"] = out
    if sw["op"] == "cast":
        r["kf.cast"] = out
        if sw["to"] in ("i32", "i64"):
            r["kf.cast.saturate"] = out
        elif sw["to"] in ("f16", "bf16"):
            r["num.round"] = out
    elif b.get("ulp") == 0 and "abs" not in b:
        r["num.exact"] = out
    else:
        r["num.ulp"] = out
    return r


def derive(category, test, flags=None):
    """The {rule id: outcome} of `test` (see the module docstring)."""
    flags = set(test.get("flags", [])) if flags is None else set(flags)
    if category == "options.parse":
        r = _parse(test, flags)
    elif category == "options.precedence":
        r = _precedence(test, flags)
    elif category == "cache.isolation":
        r = _cache(test, flags)
    elif category == "numerics":
        r = _numerics(test, flags)
    elif category == "differential":
        r = {"num.differential": "tolerance[0]"}
    elif category == "sweep":
        r = _sweep(test, flags)
    else:
        r = {}
    r.update(test.get("rules", {}))
    return r
