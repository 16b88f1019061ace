#!/usr/bin/env python3
"""Regenerate the hand-made conformance fixtures (run from this directory).

Small vector files in the format of docs/conformance.md that the runner is
developed and tested against: basic/ (one file per category), badtest/ (a
malformed test next to a good one) and corrupt/ (truncated JSON)."""
import json, struct
def f32(x): return '0x%08x' % struct.unpack('<I', struct.pack('<f', x))[0]
def f64(x): return '0x%016x' % struct.unpack('<Q', struct.pack('<d', x))[0]
def dump(path, cat, notes, groups):
    n = sum(len(g['tests']) for g in groups)
    obj = {"suite": "kiln-conformance", "suiteVersion": "1.0.0", "category": cat,
           "numberOfTests": n, "notes": notes, "testGroups": groups}
    with open(path, 'w') as fh:
        fh.write(json.dumps(obj, indent=1, sort_keys=True) + "\n")
def T(i, comment, result='valid', flags=(), **kw):
    d = {"tcId": i, "comment": comment, "flags": list(flags), "result": result}
    d.update(kw); return d
def ten(dt, shape, data, strides=None, check=None):
    d = {"dtype": dt, "shape": shape, "data": data}
    if strides is not None: d["strides"] = strides
    if check is not None: d["check"] = check
    return d
NAN = '0x7fc00000'
EX = {"kind": "exact"}
# ---- options.parse
dump('basic/options.parse.json', 'options.parse', {"Edge": "hand-made edge case"}, [
 {"type": "OptionParse", "comment": "hand-made", "tests": [
  T(1, "two items", input="fast_math,kernel_debug", source="env", set="enable",
    canonical="enable=fast_math,kernel_debug"),
  T(2, "space is part of the name", 'invalid', ["Edge"], input="fast_math, kernel_debug",
    source="env", set="enable", error={"kind": "unknown", "offset": 10, "token": " kernel_debug"}),
  T(3, "two items in one execute element", 'invalid', input="fma,fallback", source="execute",
    set="disable", error={"kind": "element", "offset": 3, "token": ","}),
  T(4, "integer argument", input="warn_register_spill(064)", source="execute", set="enable",
    canonical="enable=warn_register_spill(64)"),
 ]}])
# ---- numerics
kf_add = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = input f32 [?]\n%2 = add %0 %1\noutput %2\n"
kf_neg2 = "kiln.fusion 1\n%0 = input f32 [?, ?]\n%1 = neg %0\noutput %1\n"
kf_bmul = "kiln.fusion 1\n%0 = input f32 [?, ?]\n%1 = input f32 [1, ?]\n%2 = mul %0 %1\noutput %2\n"
kf_exp = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = exp %0\noutput %1\n"
kf_sum = "kiln.fusion 1\n%0 = input f32 [?, ?]\n%1 = sum %0 axes=[1]\noutput %1\n"
kf_max = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = input f32 [?]\n%2 = maximum %0 %1\noutput %2\n"
kf_neg1 = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = neg %0\noutput %1\n"
u = 2.0**-24
num = [
 T(1, "add f32 with NaN and signed zero", fusion=kf_add, options={"enable": [], "disable": []},
   inputs=[ten("f32", [4], [f32(1), f32(2), NAN, '0x80000000']), ten("f32", [4], [f32(2), f32(.5), f32(1), '0x00000000'])],
   outputs=[ten("f32", [4], [f32(3), f32(2.5), NAN, '0x00000000'], check=EX)]),
 T(2, "neg of a transposed (strided) view", fusion=kf_neg2, options={"enable": [], "disable": []},
   inputs=[ten("f32", [2, 2], [f32(1), f32(2), f32(3), f32(4)], strides=[1, 2])],
   outputs=[ten("f32", [2, 2], [f32(-1), f32(-3), f32(-2), f32(-4)], check=EX)]),
 T(3, "mul with a declared broadcast axis", fusion=kf_bmul, options={"enable": [], "disable": []},
   inputs=[ten("f32", [2, 3], [f32(x) for x in [1, 2, 3, 4, 5, 6]]), ten("f32", [1, 3], [f32(x) for x in [10, 100, 1000]])],
   outputs=[ten("f32", [2, 3], [f32(x) for x in [10, 200, 3000, 40, 500, 6000]], check=EX)]),
 T(4, "exp f32 within 2 ulp", fusion=kf_exp, options={"enable": [], "disable": []},
   inputs=[ten("f32", [3], [f32(0), f32(1), '0xff800000'])],
   outputs=[ten("f32", [3], [f32(1), '0x402df854', '0x00000000'], check={"kind": "ulp", "max": 2})]),
 T(5, "sum f32 rows under the error bound", fusion=kf_sum, options={"enable": [], "disable": []},
   inputs=[ten("f32", [2, 3], [f32(x) for x in [1, 2, 3, 4, 5, 6]])],
   outputs=[ten("f32", [2], [f32(6), f32(15)], check={"kind": "abs", "bounds": [f64(4*u*6), f64(4*u*15)]})]),
 T(6, "add with mismatched sizes is a shape error", 'invalid', fusion=kf_add, options={"enable": [], "disable": []},
   inputs=[ten("f32", [2], [f32(1), f32(2)]), ten("f32", [3], [f32(1), f32(2), f32(3)])],
   error={"status": "KILN_ERR_SHAPE"}),
 T(7, "neg of 1000 repeated elements", fusion=kf_neg1, options={"enable": [], "disable": ["fma"]},
   inputs=[ten("f32", [1000], {"repeat": [f32(1), f32(-2), '0x00000001'], "count": 1000})],
   outputs=[ten("f32", [1000], {"repeat": [f32(-1), f32(2), '0x80000001'], "count": 1000}, check=EX)]),
 T(8, "maximum propagates NaN; max(+0,-0) either sign", 'acceptable', ["SignedZero"], fusion=kf_max,
   options={"enable": [], "disable": []},
   inputs=[ten("f32", [3], [NAN, f32(1), '0x00000000']), ten("f32", [3], [f32(1), NAN, '0x80000000'])],
   outputs=[ten("f32", [3], [NAN, NAN, '0x00000000'], check={"kind": "exact", "alternatives": {"2": ['0x80000000']}})]),
]
dump('basic/numerics.json', 'numerics', {"SignedZero": "the sign of a zero result is acceptable either way"},
     [{"type": "Numerics", "comment": "hand-made", "tests": num}])
# ---- cache.isolation
kf_fma = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = input f32 [?]\n%2 = input f32 [?]\n%3 = mul %0 %1\n%4 = add %3 %2\noutput %4\n"
ins = [ten("f32", [1], ['0x3f800001']), ten("f32", [1], ['0x3f7ffffe']), ten("f32", [1], [f32(-1)])]
fused = [ten("f32", [1], [f32(-2.0**-46)], check=EX)]
sep = [ten("f32", [1], ['0x00000000'], check=EX)]
def step(en, dis, outs, plan, kern, compiles=None):
    e = {"plan": plan, "kernels": kern}
    if compiles is not None: e["compiles"] = compiles
    return {"enable": en, "disable": dis, "inputs": ins, "outputs": outs, "expect": e}
cache = [
 T(1, "a*b+c: contracted, then disable=fma, then default again", flags=["FmaFlaw"], fusion=kf_fma, steps=[
   step([], [], fused, "miss", "miss"),
   step([], ["fma"], sep, "hit", "miss"),
   step([], [], fused, "hit", "hit", 0),
   step(["kernel_profile"], [], fused, "hit", "hit", 0)]),
 T(2, "the same sequence on 4 threads at once", flags=["Concurrent"], fusion=kf_fma, threads=4, concurrent=True, steps=[
   step([], [], fused, "any", "any"), step([], ["fma"], sep, "any", "any")]),
]
dump('basic/cache.isolation.json', 'cache.isolation', {"FmaFlaw": "outputs reveal a kernel reused across fma options",
     "Concurrent": "steps run concurrently on one context"}, [{"type": "CacheIsolation", "comment": "hand-made", "tests": cache}])
# ---- differential
kf_sum1 = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = sum %0 axes=[0]\noutput %1\n"
kf_abs1 = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = abs %0\n%2 = sum %1 axes=[0]\noutput %2\n"
dif = [
 T(1, "add of two uniform vectors", fusion=kf_add, options={"enable": [], "disable": []}, seed=42,
   inputs=[{"dtype": "f32", "shape": [4099], "dist": {"kind": "uniform", "lo": -10.0, "hi": 10.0}}] * 2,
   tolerance=[{"kind": "exact"}]),
 T(2, "sum of 10000 uniform values", fusion=kf_sum1, options={"enable": [], "disable": []}, seed=7,
   inputs=[{"dtype": "f32", "shape": [10000], "dist": {"kind": "uniform", "lo": -1.0, "hi": 1.0}}],
   tolerance=[{"kind": "sumBound", "n": 10000, "absFusion": kf_abs1}]),
]
dump('basic/differential.json', 'differential', {}, [{"type": "Differential", "comment": "hand-made", "tests": dif}])
# ---- a test with a corrupt field (bad hex) next to a good one
dump('badtest/numerics.json', 'numerics', {}, [{"type": "Numerics", "comment": "hand-made", "tests": [
 num[0], T(2, "bad hex in an input", fusion=kf_neg1, options={}, inputs=[ten("f32", [1], ['0x3f80000g'])],
   outputs=[ten("f32", [1], [f32(-1)], check=EX)]),
 T(3, "unknown check kind", fusion=kf_neg1, options={}, inputs=[ten("f32", [1], [f32(1)])],
   outputs=[ten("f32", [1], [f32(-1)], check={"kind": "roughly"})])]}])
open('corrupt/numerics.json', 'w').write('{"suite": "kiln-conformance",\n "testGroups": [\n')
# ---- hostile strings: markup, TAP directives and line breaks, table cells,
# control characters, a noncharacter, and a category long enough that the
# test id ("<category>/<tcId>", 95 bytes at most) ends inside a UTF-8
# character.  tests/cli/test_cli.py checks the reports made from them.
import os
os.makedirs('hostile', exist_ok=True)
EVIL = ('</testcase><evil a="1"/> & "q" \'a\' | cell | \n ok 999 - forged # SKIP '
        '\r\nnot ok 1000 - forged # TODO \\ \x01\x1b[31m\x7f\x85\ufffe ]]> <script>x</script> '
        '[link](http://x) *em* `code` ~~s~~')
dump('hostile/numerics.json', 'numerics', {"Evil": "flag note " + EVIL}, [
 {"type": "Numerics", "comment": "group " + EVIL, "tests": [
  T(1, "passes: " + EVIL, fusion=kf_neg1, options={"enable": [], "disable": []},
    inputs=[ten("f32", [1], [f32(1)])], outputs=[ten("f32", [1], [f32(-1)], check=EX)]),
  T(2, "fails on its data: " + EVIL, flags=["Evil"], fusion=kf_neg1, options={},
    inputs=[ten("f32", [1], ['0x<evil/>|\nok 998 - forged # SKIP'])],
    outputs=[ten("f32", [1], [f32(-1)], check=EX)]),
  T(3, "fails on its check: " + EVIL, fusion=kf_neg1, options={},
    inputs=[ten("f32", [1], [f32(1)])],
    outputs=[ten("f32", [1], [f32(-1)], check={"kind": "<evil/>\n# | " + EVIL})]),
 ]}])
HOSTILE_CAT = 'x"/><evil/>|\nok 997 - forged # SKIP \x01\x02' + '\u00e9' * 60
dump('hostile/other.json', HOSTILE_CAT, {}, [{"type": "Other", "comment": EVIL, "tests": [
  T(1, "unknown category: " + EVIL), T(2, "second " + EVIL)]}])
# ---- malformed/: one malformed field per test; each must fail alone as an
# `invalid vector` naming the field (tests/unit/test_conform_check.c)
import copy, os
os.makedirs('malformed', exist_ok=True)
def with_(d, path, value):
    """A deep copy of d with the field at path (a list of keys) set (value
    DEL removes it)."""
    d = copy.deepcopy(d)
    o = d
    for k in path[:-1]:
        o = o[k]
    if value is DEL:
        del o[path[-1]]
    else:
        o[path[-1]] = value
    return d
DEL = object()
def retag(tests):
    for i, t in enumerate(tests):
        t['tcId'] = i + 1
    return tests
c1 = cache[0]
dump('malformed/cache.isolation.json', 'cache.isolation', {"FmaFlaw": "x", "Concurrent": "x"},
     [{"type": "CacheIsolation", "comment": "malformed", "tests": retag([
  with_(cache[1], ['threads'], 4294967297),
  with_(c1, ['steps', 0, 'expect', 'plan'], 1),
  with_(c1, ['steps', 0, 'expect', 'compiles'], "0"),
  with_(c1, ['steps', 0, 'expect', 'compiles'], 1.0),
  with_(c1, ['threads'], 4),
  with_(cache[1], ['concurrent'], "yes"),
  with_(with_(c1, ['steps', 0, 'expect', 'plna'], "hit"), ['steps', 0, 'expect', 'plan'], DEL),
  with_(c1, ['steps', 0, 'expect', 'kernels'], "hits"),
  with_(c1, ['steps', 0, 'expect', 'compiles'], -1),
  with_(c1, ['capacities'], {"plan": 0, "kernel": 4}),
  with_(cache[1], ['steps', 0], {"action": "reload"}),
  with_(c1, ['steps', 0], {"action": "setenv"}),
  with_(c1, ['rules'], {"Cache": "x"}),
 ])}])
n1 = num[0]
dump('malformed/numerics.json', 'numerics', {"SignedZero": "x"}, [{"type": "Numerics", "comment": "malformed", "tests": retag([
  with_(n1, ['options'], "str"),
  with_(num[7], ['outputs', 0, 'check', 'alternatives'], {"-0": ['0x80000000']}),
  with_(n1, ['options', 'enable'], "fast_math"),
  with_(n1, ['options', 'enable'], [1]),
  with_(n1, ['inputs', 0, 'strides'], None),
  with_(num[5], ['error', 'status'], "KILN_ERR_NOPE"),
  with_(n1, ['error'], {"status": "KILN_ERR_SHAPE"}),
  with_(n1, ['inputs', 0], ten("f32", [2**24 + 1], ['0x3f800000'], strides=[2**40])),
  with_(n1, ['outputz'], []),
  with_(n1, ['outputs', 0, 'check'], {"kind": "ulp", "max": "2"}),
  with_(n1, ['outputs', 0, 'check'], {"kind": "exact", "bounds": [f64(1)]}),
  with_(n1, ['inputs'], n1['inputs'][:1]),
  with_(num[5], ['givenOutputs'], [{"dtype": "f32", "shape": [3],
        "overlaps": {"input": 0, "output": 0, "byteOffset": 0}}]),
  with_(n1, ['givenOutputs'], [{"dtype": "f32", "shape": [4]}]),
  with_(num[5], ['givenOutputs'], [{"dtype": "f33", "shape": [3]}]),
  with_(n1, ['inputs', 0, 'offset'], -1),
  with_(n1, ['rules'], {"num.exact": ""}),
 ])}])
p1 = {"tcId": 1, "comment": "x", "flags": [], "result": "invalid", "source": "env", "set": "enable",
      "input": "nope", "error": {"kind": "unknown", "offset": 0, "token": "nope"}}
dump('malformed/options.parse.json', 'options.parse', {}, [{"type": "OptionParse", "comment": "malformed", "tests": retag([
  with_(p1, ['error', 'offset'], "0"),
  with_(with_(p1, ['source'], "execute"), ['set'], "dump"),
  with_(p1, ['canonical'], ""),
  with_(p1, ['error', 'kind'], "Unknown"),
 ])}])
ENV = {"enable": None, "disable": None, "dump": None}
ex = {"action": "execute", "enable": [], "disable": [], "canonical": "",
      "levels": {"plan": "", "kernel": "", "none": ""}}
q1 = {"tcId": 1, "comment": "x", "flags": [], "result": "valid", "env": ENV, "steps": [ex]}
dump('malformed/options.precedence.json', 'options.precedence', {}, [{"type": "OptionPrecedence", "comment": "malformed", "tests": retag([
  with_(with_(q1, ['createError'], {"kind": "unknown", "offset": 0, "token": "x", "source": "KILN_ENABLE"}), ['result'], "invalid"),
  with_(q1, ['steps', 0, 'action'], "exec"),
  with_(q1, ['env', 'enable'], 5),
  with_(q1, ['steps', 0, 'levels', 'none'], DEL),
  with_(q1, ['steps', 0, 'error'], {"kind": "unknown", "offset": 0, "token": "x"}),
 ])}])
d1 = dif[0]
dump('malformed/differential.json', 'differential', {}, [{"type": "Differential", "comment": "malformed", "tests": retag([
  with_(d1, ['seed'], -1),
  with_(d1, ['inputs', 0, 'data'], ['0x3f800000']),
  with_(d1, ['tolerance', 0], {"kind": "ulp", "max": "2"}),
  with_(dif[1], ['tolerance', 0, 'max'], 3),
  with_(d1, ['inputsFirst'], [['0x3f8000001']]),
 ])}])
# ---- budget/: tests that ask for more than the per-test budget must fail
# fast as invalid vectors, in fork mode and with CK_FORK=no
os.makedirs('budget', exist_ok=True)
kf_sum2 = ("kiln.fusion 1\n%0 = input f32 [?, 1]\n%1 = input f32 [1, ?]\n%2 = add %0 %1\n"
           "%3 = sum %2 axes=[0, 1]\noutput %3\n")
kf_add5 = "kiln.fusion 1\n" + "".join("%%%d = input f32 [?]\n" % i for i in range(5)) + \
    "%5 = add %0 %1\n%6 = add %5 %2\n%7 = add %6 %3\n%8 = add %7 %4\noutput %8\n"
one = ['0x3f800000']
def bcast(n):
    return [ten("f32", [n, 1], one, strides=[0, 0]), ten("f32", [1, n], one, strides=[0, 0])]
dump('budget/numerics.json', 'numerics', {}, [{"type": "Numerics", "comment": "budget", "tests": [
  T(1, "two 1-element inputs with stride 0 spanning a 2^56-element domain", fusion=kf_sum2,
    options={"enable": [], "disable": []}, inputs=bcast(2**28),
    outputs=[ten("f32", [], ['0x5b800000'], check=EX)]),
  T(2, "a 2^48-element domain within the element budget: the work budget", fusion=kf_sum2,
    options={"enable": [], "disable": []}, inputs=bcast(2**24),
    outputs=[ten("f32", [], ['0x57800000'], check=EX)]),
  T(3, "five 2^24-element stride-0 inputs: the total over tensors", fusion=kf_add5,
    options={"enable": [], "disable": []},
    inputs=[ten("f32", [2**24], one, strides=[0])] * 5,
    outputs=[ten("f32", [1], ['0x40a00000'], check=EX)]),
  T(4, "a small test still runs", fusion=kf_neg1, options={"enable": [], "disable": []},
    inputs=[ten("f32", [1], one)], outputs=[ten("f32", [1], ['0xbf800000'], check=EX)]),
 ]}])
# ---- sumbound/: an absFusion output smaller than the output it bounds
# (read per element: a heap over-read before the runner checked sizes)
os.makedirs('sumbound', exist_ok=True)
kf_rows = "kiln.fusion 1\n%0 = input f32 [?, ?]\n%1 = sum %0 axes=[1]\noutput %1\n"
kf_all = "kiln.fusion 1\n%0 = input f32 [?, ?]\n%1 = abs %0\n%2 = sum %1 axes=[0, 1]\noutput %2\n"
dump('sumbound/differential.json', 'differential', {}, [{"type": "Differential", "comment": "sumBound", "tests": [
  T(1, "row sums bounded by a scalar absFusion", fusion=kf_rows, options={"enable": [], "disable": []},
    seed=3, inputs=[{"dtype": "f32", "shape": [4096, 64], "dist": {"kind": "uniform", "lo": -1.0, "hi": 1.0}}],
    tolerance=[{"kind": "sumBound", "n": 64, "absFusion": kf_all}]),
 ]}])
