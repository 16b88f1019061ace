#!/usr/bin/env python3
"""Structural validation of conformance vector files (stdlib only).

Checks the rules of conformance/schema.json without a JSON Schema library,
plus the ones a schema cannot state, and every rule the C runner applies
to a test before it runs it (conformance/vectors.c, cf_test_validate):
required top-level fields, numberOfTests, unique tcIds 1..N, every flag
defined in notes; per category every field's JSON type (an integer is
never a bool or a real), enumerations, integer ranges (threads 1..64,
offsets, seeds, counts), canonical integer keys ("alternatives"), unknown
fields, fields that do not apply to the test's result; tensor hex
encodings (width per dtype), storage lengths, check objects; and the
runner's per-test element budget (docs/conformance.md, "Per-test budget").

    python3 testgen/validate_schema.py conformance/vectors/*.json
    python3 testgen/validate_schema.py --expect-invalid FILE...

--expect-invalid inverts the verdict per test: every test of the files
must be rejected (tests/conformance_fixtures/malformed holds one malformed
field per test); exit 1 naming each test that passes.
"""

import json
import os
import re
import sys

WIDTH = {"bool": 1, "i32": 8, "i64": 16, "f16": 4, "bf16": 4, "f32": 8,
         "f64": 16}
FLOATS = ("f16", "bf16", "f32", "f64")
HEX = re.compile(r"^0x[0-9a-f]+$")
INDEX = re.compile(r"^(0|[1-9][0-9]*)$")
SEMVER1 = re.compile(r"^1\.[0-9]+\.[0-9]+$")
RESULTS = ("valid", "invalid", "acceptable")
KINDS = ("syntax", "unknown", "argument", "element")
TOP = ("suite", "suiteVersion", "category", "numberOfTests", "notes",
       "testGroups")
BASE = ("tcId", "comment", "flags", "result", "rules")
RULE_ID = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
INT64_MAX = 2 ** 63 - 1
INT32_MAX = 2 ** 31 - 1
MAX_DIM = 2 ** 40              # the runner's largest size or stride
BUDGET_ELEMENTS = 2 ** 26      # conform.h CF_BUDGET_ELEMENTS
KILN_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "runtime", "include", "kiln.h")


def _status_names():
    """The status names of kiln.h's X-macro table (the source of truth)."""
    with open(KILN_H, encoding="utf-8") as f:
        return set(re.findall(r"X\((KILN_(?:OK|ERR_[A-Z_]+)), [0-9]+,",
                              f.read()))


STATUSES = _status_names()
CATEGORIES = ("options.parse", "options.precedence", "cache.isolation",
              "numerics", "differential", "sweep")


class Bad(Exception):
    """The first problem of one test (the runner fails it alone)."""


def _path(where, key):
    return "%s.%s" % (where, key) if where else key


def _jtype(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    return {dict: "an object", list: "a list", str: "a string",
            int: "an integer", float: "a real number"}.get(type(x), "null")


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _keys(obj, allowed, where):
    for k in obj:
        if k not in allowed:
            raise Bad("%s: unknown field (the fields here are %s)"
                      % (_path(where, k), ", ".join(allowed)))


def _rules(t):
    """"rules" (optional): {rule id: non-empty outcome string}; which ids
    exist is checked by testgen/spec_coverage.py against the docs."""
    r = t.get("rules")
    if r is None:
        return
    if not isinstance(r, dict):
        raise Bad("rules: must be an object, not %s" % _jtype(r))
    for k, v in r.items():
        if len(k) > 64 or not RULE_ID.match(k):
            raise Bad("rules: %r is not a rule id (area.name: lower-case "
                      "words joined by dots)" % k[:64])
        if not isinstance(v, str) or not v:
            raise Bad("rules.%s: the outcome must be a non-empty string" % k)


def _get(obj, key, where, required):
    if key not in obj:
        if required:
            raise Bad("%s: missing field" % _path(where, key))
        return None
    return obj[key]


def _str(obj, key, where, required=True, allowed=None):
    v = _get(obj, key, where, required)
    if v is None and not required:
        return None
    if not isinstance(v, str):
        raise Bad("%s: must be a string, not %s" % (_path(where, key),
                                                    _jtype(v)))
    if allowed and v not in allowed:
        raise Bad("%s: %r is not one of %s" % (_path(where, key), v,
                                               ", ".join(allowed)))
    return v


def _int(obj, key, where, lo, hi, required=True):
    if key not in obj and not required:
        return None
    v = _get(obj, key, where, required)
    if not _is_int(v):
        raise Bad("%s: must be an integer in %d..%d, not %s"
                  % (_path(where, key), lo, hi, _jtype(v)))
    if not lo <= v <= hi:
        raise Bad("%s: %d is outside %d..%d" % (_path(where, key), v, lo, hi))
    return v


def _typed(obj, key, where, typ, required=True):
    if key not in obj and not required:
        return None
    v = _get(obj, key, where, required)
    ok = isinstance(v, bool) if typ is bool else (
        isinstance(v, typ) and not isinstance(v, bool))
    if not ok:
        name = {dict: "an object", list: "a list", bool: "true or false"}[typ]
        raise Bad("%s: must be %s, not %s" % (_path(where, key), name,
                                              _jtype(v)))
    return v


def _strings(obj, key, where, required=False):
    lst = _typed(obj, key, where, list, required)
    for i, s in enumerate(lst or []):
        if not isinstance(s, str):
            raise Bad("%s[%d]: must be a string, not %s"
                      % (_path(where, key), i, _jtype(s)))


def _absent(obj, key, where, why):
    if key in obj:
        raise Bad("%s: does not apply %s" % (_path(where, key), why))


def _options(obj, key, where):
    o = _typed(obj, key, where, dict, required=False)
    if o is not None:
        w = _path(where, key)
        _keys(o, ("enable", "disable"), w)
        _strings(o, "enable", w)
        _strings(o, "disable", w)


def _env(obj, key, where, required=False):
    if key not in obj and not required:
        return
    e = _get(obj, key, where, required)
    if e is None:
        return
    w = _path(where, key)
    if not isinstance(e, dict):
        raise Bad("%s: must be an object or null, not %s" % (w, _jtype(e)))
    _keys(e, ("enable", "disable", "dump"), w)
    for k, v in e.items():
        if v is not None and not isinstance(v, str):
            raise Bad("%s.%s: must be a string or null, not %s"
                      % (w, k, _jtype(v)))


def _opt_error(obj, key, where):
    e = _typed(obj, key, where, dict)
    w = _path(where, key)
    _keys(e, ("kind", "offset", "token", "source"), w)
    _str(e, "kind", w, allowed=KINDS)
    _int(e, "offset", w, 0, INT32_MAX)
    _str(e, "token", w)
    _str(e, "source", w, required=False)


def _hex_ok(h, dtype):
    if not isinstance(h, str) or not HEX.match(h):
        return False
    if dtype == "bool":
        return h in ("0x0", "0x1")
    return len(h) == 2 + WIDTH[dtype]


def _ints(t, key, where):
    v = t[key]
    if not isinstance(v, list) or len(v) > 8 or not all(
            _is_int(s) and 0 <= s <= MAX_DIM for s in v):
        raise Bad("%s: '%s' must be a list of at most 8 integers in 0..2^40"
                  % (where, key))
    return v


class Test:
    """One test: its budget count, then the category's rules."""

    def __init__(self):
        self.elements = 0

    def charge(self, where, n):
        self.elements += n
        if self.elements > BUDGET_ELEMENTS:
            raise Bad("%s: the test's tensors exceed the per-test budget of "
                      "%d elements here" % (where, BUDGET_ELEMENTS))

    def tensor(self, t, where, kind, times=1):
        """kind 0: input with data; 1: expected output with a check;
        2: generated differential input."""
        keys = (("dtype", "shape", "strides", "offset", "data"),
                ("dtype", "shape", "data", "check"),
                ("dtype", "shape", "dist"))[kind]
        if not isinstance(t, dict):
            raise Bad("%s: must be a tensor object, not %s" % (where,
                                                               _jtype(t)))
        _keys(t, keys, where)
        dt = _str(t, "dtype", where, allowed=tuple(WIDTH))
        _get(t, "shape", where, True)
        shape = _ints(t, "shape", where)
        numel = 1
        for s in shape:
            numel *= s
        if "strides" in t:
            strides = _ints(t, "strides", where)
            if len(strides) != len(shape):
                raise Bad("%s: 'strides' has %d entries for rank %d"
                          % (where, len(strides), len(shape)))
            storage = 0 if numel == 0 else 1 + sum(
                (s - 1) * st for s, st in zip(shape, strides))
        else:
            storage = numel
        if "offset" in t:       # storage elements before element 0
            storage += _int(t, "offset", where, 0, BUDGET_ELEMENTS)
        if numel > BUDGET_ELEMENTS or storage > BUDGET_ELEMENTS:
            raise Bad("%s: too many elements or storage too large" % where)
        self.charge(where, (numel + storage) * times)
        if kind == 2:
            self.dist(t, where, dt)
            return dt, numel
        data = _get(t, "data", where, True)
        if isinstance(data, dict):
            _keys(data, ("repeat", "count"), where + ".data")
            rep = _typed(data, "repeat", where + ".data", list)
            cnt = _int(data, "count", where + ".data", 0, INT64_MAX)
            if not rep or cnt != storage:
                raise Bad("%s.data: repeat data count %r != storage %d"
                          % (where, cnt, storage))
            vals = rep
        elif isinstance(data, list):
            vals = data
            if len(vals) != storage:
                raise Bad("%s.data: %d elements, storage needs %d"
                          % (where, len(vals), storage))
        else:
            raise Bad("%s.data: must be a list or a repeat object" % where)
        for i, v in enumerate(vals):
            if not _hex_ok(v, dt):
                raise Bad("%s.data[%d]: bad %s hex %r" % (where, i, dt, v))
        if kind == 1:
            self.check(_typed(t, "check", where, dict), where + ".check", dt,
                       numel)
        return dt, numel

    def tensors(self, obj, key, where, kind, times=1, required=True):
        lst = _typed(obj, key, where, list, required)
        for i, t in enumerate(lst or []):
            self.tensor(t, "%s[%d]" % (_path(where, key), i), kind, times)
        return lst

    @staticmethod
    def check(c, where, dt, numel):
        _keys(c, ("kind", "max", "maxPerElement", "bounds", "ftz",
                  "alternatives"), where)
        k = _str(c, "kind", where, allowed=("exact", "ulp", "abs"))
        if k != "ulp":
            _absent(c, "max", where, "to this check kind")
            _absent(c, "maxPerElement", where, "to this check kind")
        if k != "abs":
            _absent(c, "bounds", where, "to this check kind")
        if k == "ulp":
            if dt not in FLOATS:
                raise Bad("%s: ulp check on non-float dtype %s" % (where, dt))
            if ("max" in c) == ("maxPerElement" in c):
                raise Bad("%s: an ulp check needs exactly one of 'max' and "
                          "'maxPerElement'" % where)
            if "max" in c:
                _int(c, "max", where, 0, INT64_MAX)
            else:
                per = _typed(c, "maxPerElement", where, list)
                if len(per) != numel or not all(
                        _is_int(x) and 0 <= x <= INT64_MAX for x in per):
                    raise Bad("%s: maxPerElement needs %d integers >= 0"
                              % (where, numel))
        if k == "abs":
            b = _typed(c, "bounds", where, list)
            if len(b) not in (1, numel) or not all(_hex_ok(x, "f64")
                                                    for x in b):
                raise Bad("%s: abs check needs one f64 hex bound per element "
                          "(%d) or a single one" % (where, numel))
        _typed(c, "ftz", where, bool, required=False)
        alt = _typed(c, "alternatives", where, dict, required=False)
        for key, lst in (alt or {}).items():
            if not INDEX.match(key) or int(key) >= numel:
                raise Bad("%s: alternatives key %r is not an element index "
                          "below %d" % (where, key, numel))
            if not isinstance(lst, list) or not all(_hex_ok(x, dt)
                                                    for x in lst):
                raise Bad("%s: alternatives[%s] must be a list of %s hex"
                          % (where, key, dt))

    @staticmethod
    def dist(t, where, dt):
        d = _typed(t, "dist", where, dict)
        w = where + ".dist"
        _keys(d, ("kind", "lo", "hi"), w)
        k = _str(d, "kind", w, allowed=("uniform", "ints"))
        lo, hi = _get(d, "lo", w, True), _get(d, "hi", w, True)
        if k == "uniform":
            ok = (all(isinstance(x, (int, float)) and not isinstance(x, bool)
                      for x in (lo, hi)) and lo <= hi and dt in FLOATS)
        else:
            ok = _is_int(lo) and _is_int(hi) and lo <= hi
        if not ok:
            raise Bad("%s: %s needs numbers lo <= hi%s"
                      % (w, k, " and a float dtype" if k == "uniform"
                         else " (integers)"))


def _kf_inputs(kf):
    """How many inputs a .kf text declares (its `%name = input` lines)."""
    return sum(1 for line in kf.splitlines()
               if re.match(r"^\s*%\S+\s*=\s*input\b", line.split("#")[0]))


def _inputs_fit(t, lst, where):
    want = _kf_inputs(t["fusion"])
    if len(lst) != want:
        raise Bad("%sinputs: %d tensors for a fusion of %d inputs"
                  % (where, len(lst), want))


def _result_fields(t, result, want, error):
    if result == "invalid":
        _absent(t, want, "", "to an invalid test")
        _get(t, error, "", True)
    else:
        _absent(t, error, "", "to a valid or acceptable test")
        _get(t, want, "", True)


def _parse(t, result, _):
    _keys(t, BASE + ("source", "set", "input", "canonical", "error"), "")
    src = _str(t, "source", "", allowed=("env", "execute"))
    st = _str(t, "set", "", allowed=("enable", "disable", "dump"))
    _str(t, "input", "")
    _result_fields(t, result, "canonical", "error")
    if src == "execute" and st == "dump":
        raise Bad("set: 'dump' has no execute list (source must be env)")
    if result == "invalid":
        _opt_error(t, "error", "")
    else:
        _str(t, "canonical", "")


def _precedence(t, result, _):
    _keys(t, BASE + ("env", "steps", "createError"), "")
    _env(t, "env", "")
    steps = _typed(t, "steps", "", list)
    errors = "createError" in t
    if errors:
        _opt_error(t, "createError", "")
        if steps:
            raise Bad("steps: must be empty when 'createError' is given")
    step_keys = {"execute": ("action", "enable", "disable", "canonical",
                             "levels", "error"),
                 "setenv": ("action", "env"), "reload": ("action", "error")}
    for i, s in enumerate(steps):
        w = "steps[%d]" % i
        if not isinstance(s, dict):
            raise Bad("%s: must be an object, not %s" % (w, _jtype(s)))
        a = _str(s, "action", w, allowed=tuple(step_keys))
        _keys(s, step_keys[a], w)
        if "error" in s:
            errors = True
            _opt_error(s, "error", w)
        if a == "setenv":
            _env(s, "env", w, required=True)
        if a != "execute":
            continue
        _strings(s, "enable", w)
        _strings(s, "disable", w)
        if "error" in s:
            _absent(s, "canonical", w, "to a step that expects an error")
            _absent(s, "levels", w, "to a step that expects an error")
            continue
        _str(s, "canonical", w)
        lv = _typed(s, "levels", w, dict)
        _keys(lv, ("plan", "kernel", "none"), w + ".levels")
        for k in ("plan", "kernel", "none"):
            _str(lv, k, w + ".levels")
    if errors != (result == "invalid"):
        raise Bad("result: %r, but %s" % (result, "the test expects an error"
                                          if errors else
                                          "no step expects an error"))


def _cache(t, _, test):
    _keys(t, BASE + ("fusion", "env", "steps", "threads", "concurrent",
                     "capacities"), "")
    _str(t, "fusion", "")
    _env(t, "env", "")
    caps = _typed(t, "capacities", "", dict, required=False)
    if caps is not None:
        _keys(caps, ("plan", "kernel"), "capacities")
        _int(caps, "plan", "capacities", 1, 1 << 20)
        _int(caps, "kernel", "capacities", 1, 1 << 20)
    conc = _typed(t, "concurrent", "", bool, required=False)
    threads = _int(t, "threads", "", 1, 64, required=bool(conc)) or 1
    if not conc and "threads" in t:
        raise Bad('threads: applies only with "concurrent": true')
    steps = _typed(t, "steps", "", list)
    if not steps:
        raise Bad("steps: must list at least one step")
    n_exec = 0
    for i, s in enumerate(steps):
        w = "steps[%d]" % i
        if not isinstance(s, dict):
            raise Bad("%s: must be an object, not %s" % (w, _jtype(s)))
        action = _str(s, "action", w, required=False,
                      allowed=("execute", "setenv", "reload"))
        if action in ("setenv", "reload"):
            if conc:
                raise Bad("%s.action: %r is not allowed in a concurrent "
                          "test" % (w, action))
            if action == "setenv":
                _keys(s, ("action", "env"), w)
                _env(s, "env", w, required=True)
            else:
                _keys(s, ("action",), w)
            continue
        n_exec += 1
        _keys(s, ("action", "enable", "disable", "inputs", "outputs",
                  "expect", "pass"), w)
        _strings(s, "enable", w)
        _strings(s, "disable", w)
        _inputs_fit(t, test.tensors(s, "inputs", w, 0), w + ".")
        test.tensors(s, "outputs", w, 1, times=threads)
        ex = _typed(s, "expect", w, dict)
        _keys(ex, ("plan", "kernels", "compiles", "db"), w + ".expect")
        _str(ex, "plan", w + ".expect", allowed=("hit", "miss", "any"))
        _str(ex, "kernels", w + ".expect", allowed=("hit", "miss", "any"))
        _int(ex, "compiles", w + ".expect", 0, INT64_MAX, required=False)
        _str(ex, "db", w + ".expect", required=False,
             allowed=("none", "hit", "miss", "stored", "corrupt", "refused"))
        _int(s, "pass", w, 1, 2, required=False)
    if not n_exec:
        raise Bad("steps: must list at least one execute step")


def _int_list(obj, key, where, lo, hi, required=True):
    lst = _typed(obj, key, where, list, required)
    for i, v in enumerate(lst or []):
        if not _is_int(v) or not lo <= v <= hi:
            raise Bad("%s[%d]: must be an integer in %d..%d"
                      % (_path(where, key), i, lo, hi))
    return lst


def _given_outputs(t, n_inputs):
    """givenOutputs (invalid numerics tests): the outputs the runner hands
    over, each {"dtype", "shape", "strides"?, "overlaps"?}."""
    g = _typed(t, "givenOutputs", "", list)
    if not g:
        raise Bad("givenOutputs: must list at least one output")
    for j, o in enumerate(g):
        w = "givenOutputs[%d]" % j
        if not isinstance(o, dict):
            raise Bad("%s: must be an object, not %s" % (w, _jtype(o)))
        _keys(o, ("dtype", "shape", "strides", "overlaps"), w)
        _str(o, "dtype", w, allowed=tuple(WIDTH))
        shape = _int_list(o, "shape", w, 0, MAX_DIM)
        if len(shape) > 8:
            raise Bad("%s.shape: rank %d is above 8" % (w, len(shape)))
        st = _int_list(o, "strides", w, 0, MAX_DIM, required=False)
        if st is not None and len(st) != len(shape):
            raise Bad("%s.strides: %d strides for rank %d"
                      % (w, len(st), len(shape)))
        ov = _typed(o, "overlaps", w, dict, required=False)
        if ov is None:
            continue
        wo = w + ".overlaps"
        _keys(ov, ("input", "output", "byteOffset"), wo)
        if ("input" in ov) == ("output" in ov):
            raise Bad("%s: needs exactly one of input and output" % wo)
        if "input" in ov:
            _int(ov, "input", wo, 0, max(n_inputs - 1, 0))
        else:
            _int(ov, "output", wo, 0, max(j - 1, 0))
            if j == 0:
                raise Bad("%s.output: output 0 has no earlier output" % wo)
        _int(ov, "byteOffset", wo, 0, INT32_MAX)


def _numerics(t, result, test):
    _keys(t, BASE + ("fusion", "options", "inputs", "outputs", "error",
                     "givenOutputs"), "")
    _str(t, "fusion", "")
    _options(t, "options", "")
    ins = test.tensors(t, "inputs", "", 0)
    _result_fields(t, result, "outputs", "error")
    if result != "invalid":
        _absent(t, "givenOutputs", "", "to a valid or acceptable test (the "
                "runner gives every output itself)")
        _inputs_fit(t, ins, "")
        test.tensors(t, "outputs", "", 1)
        return
    e = _typed(t, "error", "", dict)
    _keys(e, ("status",), "error")
    st = _str(e, "status", "error")
    if st not in STATUSES:
        raise Bad("error.status: %r is not a Kiln status name" % st)
    if "givenOutputs" in t:
        _given_outputs(t, len(ins or []))


def _differential(t, _, test):
    _keys(t, BASE + ("fusion", "options", "seed", "inputs", "inputsFirst",
                     "tolerance"), "")
    _str(t, "fusion", "")
    _options(t, "options", "")
    _int(t, "seed", "", 0, INT64_MAX)
    ins = _typed(t, "inputs", "", list)
    shapes = [test.tensor(x, "inputs[%d]" % i, 2) for i, x in enumerate(ins)]
    _inputs_fit(t, ins, "")
    first = _typed(t, "inputsFirst", "", list, required=False)
    if first is not None and len(first) > len(ins):
        raise Bad("inputsFirst: %d rows for %d inputs" % (len(first),
                                                          len(ins)))
    for i, row in enumerate(first or []):
        dt, numel = shapes[i]
        if not isinstance(row, list) or len(row) > numel or not all(
                _hex_ok(h, dt) for h in row):
            raise Bad("inputsFirst[%d]: must list at most %d %s hex values"
                      % (i, numel, dt))
    for i, c in enumerate(_typed(t, "tolerance", "", list)):
        w = "tolerance[%d]" % i
        if not isinstance(c, dict):
            raise Bad("%s: must be an object, not %s" % (w, _jtype(c)))
        k = _str(c, "kind", w, allowed=("exact", "ulp", "sumBound"))
        _keys(c, {"exact": ("kind",), "ulp": ("kind", "max"),
                  "sumBound": ("kind", "n", "absFusion")}[k], w)
        if k == "ulp":
            _int(c, "max", w, 0, INT64_MAX)
        if k == "sumBound":
            _int(c, "n", w, 0, INT64_MAX)
            _str(c, "absFusion", w)


SWEEP_OPS = ("exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sin",
             "cos", "erf", "sigmoid", "floor", "ceil", "neg", "abs", "relu",
             "cast")


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _sweep(t, _, test):
    """conformance/sweep.c cf_sweep_from_json and vectors.c v_sweep."""
    import sweep as sw
    _keys(t, BASE + ("fusion", "options", "sweep", "bound", "inputsAt"), "")
    fusion = _str(t, "fusion", "")
    _options(t, "options", "")
    s = _typed(t, "sweep", "", dict)
    _keys(s, ("op", "from", "to", "count", "seed"), "sweep")
    op = _str(s, "op", "sweep", allowed=SWEEP_OPS)
    frm = _str(s, "from", "sweep", allowed=("f32", "f64"))
    to = _str(s, "to", "sweep", allowed=tuple(WIDTH))
    if (op == "cast") != (frm == "f32" and to != frm) or \
            (op != "cast" and to != frm):
        raise Bad("sweep.to: a cast goes from f32 to another dtype; any "
                  "other op keeps the dtype")
    count = _int(s, "count", "sweep", sw.fixed_count(frm), 2 ** 24)
    seed = _int(s, "seed", "sweep", 0, INT64_MAX)
    if 2 * count > BUDGET_ELEMENTS:
        raise Bad("sweep.count: over the per-test budget")
    want = ("kiln.fusion 1\n%%0 = input %s [?]\n%%1 = %s\noutput %%1\n"
            % (frm, "cast %%0 %s" % to if op == "cast" else op + " %0"))
    if fusion != want:
        raise Bad("fusion: must be the sweep's own fusion")
    b = _typed(t, "bound", "", dict)
    _keys(b, ("ulp", "ulpPerAbsX", "abs", "absWithin", "ftz"), "bound")
    if "ulp" not in b or not (b["ulp"] is None or (
            isinstance(b["ulp"], int) and not isinstance(b["ulp"], bool)
            and 0 <= b["ulp"] <= INT64_MAX)):
        raise Bad("bound.ulp: an integer >= 0, or null")
    if "ulpPerAbsX" in b and not (_num(b["ulpPerAbsX"]) and
                                  b["ulpPerAbsX"] >= 0):
        raise Bad("bound.ulpPerAbsX: a number >= 0")
    if ("abs" in b) != ("absWithin" in b) or ("abs" in b and not (
            _num(b["abs"]) and b["abs"] >= 0 and
            isinstance(b["absWithin"], list) and
            len(b["absWithin"]) == 2 and all(map(_num, b["absWithin"])))):
        raise Bad("bound.abs (a number >= 0) and bound.absWithin ([lo, hi]) "
                  "come together")
    if not isinstance(b.get("ftz"), bool):
        raise Bad("bound.ftz: true or false")
    for i, p in enumerate(_typed(t, "inputsAt", "", list, required=False)
                          or []):
        if not (isinstance(p, list) and len(p) == 2 and
                isinstance(p[0], int) and not isinstance(p[0], bool) and
                0 <= p[0] < count and _hex_ok(p[1], frm)):
            raise Bad("inputsAt[%d]: must be [k, hex] with 0 <= k < "
                      "sweep.count" % i)
        if int(p[1], 16) != sw.sample_input(frm, seed, p[0]):
            raise Bad("inputsAt[%d]: not input %d of the sample" % (i, p[0]))


RULES = {"options.parse": _parse, "options.precedence": _precedence,
         "cache.isolation": _cache, "numerics": _numerics,
         "differential": _differential, "sweep": _sweep}


def validate(doc, name="<doc>", per_test=None):
    """Problems of doc as messages.  per_test (a dict) receives, per tcId,
    the first problem of that test's own fields (or None)."""
    errs = []
    if not isinstance(doc, dict):
        return ["%s: top level must be an object" % name]
    for k in TOP:
        if k not in doc:
            errs.append("%s: missing top-level field %r" % (name, k))
    if errs:
        return errs
    if doc["suite"] != "kiln-conformance":
        errs.append("%s: suite is %r" % (name, doc["suite"]))
    if not isinstance(doc["suiteVersion"], str) or not SEMVER1.match(
            doc["suiteVersion"]):
        errs.append("%s: suiteVersion %r is not 1.x.y" % (name,
                                                         doc["suiteVersion"]))
    cat = doc["category"]
    if cat not in CATEGORIES:
        errs.append("%s: unknown category %r" % (name, cat))
    notes = doc["notes"]
    if not isinstance(notes, dict) or not all(isinstance(v, str)
                                              for v in notes.values()):
        errs.append("%s: notes must map flags to strings" % name)
        notes = {}
    if not _is_int(doc["numberOfTests"]) or doc["numberOfTests"] < 0:
        errs.append("%s: numberOfTests must be an integer >= 0" % name)
    ids = set()
    count = 0
    groups = doc["testGroups"] if isinstance(doc["testGroups"], list) else []
    for gi, g in enumerate(groups):
        if not isinstance(g, dict):
            errs.append("%s: group %d is not an object" % (name, gi))
            continue
        for k in ("type", "comment", "tests"):
            if k not in g:
                errs.append("%s: group %d lacks %r" % (name, gi, k))
        for t in g.get("tests", []):
            count += 1
            if not isinstance(t, dict):
                errs.append("%s: group %d: a test is not an object"
                            % (name, gi))
                continue
            tc = t.get("tcId")
            where = "%s: tcId %s" % (name, tc)
            if not _is_int(tc) or tc < 1 or tc in ids:
                errs.append("%s: tcId missing, < 1 or duplicated" % where)
            ids.add(tc)
            if not isinstance(t.get("comment"), str):
                errs.append("%s: no comment" % where)
            if not isinstance(t.get("flags"), list):
                errs.append("%s: flags must be a list" % where)
            for f in t.get("flags") or []:
                if f not in notes:
                    errs.append("%s: flag %r not defined in notes"
                                % (where, f))
            result = t.get("result")
            if result not in RESULTS:
                errs.append("%s: bad result %r" % (where, result))
                continue
            problem = None
            if cat in RULES:
                try:
                    _rules(t)
                    RULES[cat](t, result, Test())
                except Bad as e:
                    problem = str(e)
                    errs.append("%s: %s" % (where, problem))
            if per_test is not None:
                per_test[tc] = problem
            if len(errs) > 50 and per_test is None:
                return errs
    if count != doc["numberOfTests"]:
        errs.append("%s: numberOfTests %s but %d tests"
                    % (name, doc["numberOfTests"], count))
    if ids and ids != set(range(1, count + 1)):
        errs.append("%s: tcIds are not 1..%d" % (name, count))
    return errs


def validate_file(path, per_test=None):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return ["%s: cannot read: %s" % (path, e)]
    return validate(doc, path, per_test)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--expect-invalid":
        bad = 0
        for p in argv[1:]:
            per = {}
            validate_file(p, per)
            if not per:
                print("%s: no test was read" % p, file=sys.stderr)
                bad += 1
            for tc, problem in sorted(per.items()):
                if problem is None:
                    print("%s: tcId %s is accepted, but every test here is "
                          "malformed" % (p, tc), file=sys.stderr)
                    bad += 1
        return 1 if bad else 0
    bad = 0
    for p in argv:
        errs = validate_file(p)
        for e in errs:
            print(e, file=sys.stderr)
        bad += bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
