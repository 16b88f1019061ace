#!/usr/bin/env python3
"""Offline check of the sweep reference (conformance/crmath.c) against
mpmath at 200 bits (docs/numerics.md, "The sweep reference").

    python3 scripts/crmath_check.py [--n N] [--scan S] [--f32-scan F]
                                    [--seed SEED]

Not part of the build or of `make test`: it needs mpmath (Debian:
python3-mpmath) and a C compiler.  It compiles crmath.c into a shared
object (build/crmath_check.so) and, per op and dtype (f32 and f64), checks

  - every fixed input of the sweep sample (specials, binade edges, ties),
  - N random bit patterns,
  - every input among S further random bit patterns (and, for f32, among
    F bit patterns evenly spread over all 2^32, scanned in C) for which
    crmath needed its long double step or stayed undecided (the hard
    cases: results closest to a rounding boundary),

and per cast from f32 the fixed inputs and N random patterns.  A decided
result must equal mpmath's correctly rounded value; an undecided one must
have it among its two candidates.  Exits 1 on any disagreement.
"""

import argparse
import ctypes
import os
import random
import struct
import subprocess
import sys

import mpmath
from mpmath import mp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "testgen"))
import sweep  # noqa: E402

OPS = ("exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sin", "cos",
       "erf", "sigmoid", "floor", "ceil", "neg", "abs", "relu")
DT = {"bool": 0, "i32": 1, "i64": 2, "f16": 3, "bf16": 4, "f32": 5, "f64": 6}
FMT = {"f32": (24, -126, 127), "f64": (53, -1022, 1023),
       "f16": (11, -14, 15), "bf16": (8, -126, 127)}


class CrVal(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64),
                ("approx", ctypes.c_double), ("undecided", ctypes.c_int),
                ("stage", ctypes.c_int)]


SCAN_C = r"""
#include "conform.h"
/* f32 inputs start + i * stride (i < n, mod 2^32) that needed crmath's
** long double step or stayed undecided */
size_t cr_scan(int op, uint32_t start, uint32_t stride, uint64_t n,
               uint32_t *out, size_t cap)
{
    size_t k = 0;
    cr_val r;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b = start + (uint32_t)(i * stride);
        cr_eval((cr_op)op, KILN_F32, b, &r);
        if (r.stage >= 2 && k < cap)
            out[k++] = b;
    }
    return k;
}
"""


def build():
    out = os.path.join(ROOT, "build", "crmath_check.so")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    scan = os.path.join(ROOT, "build", "crmath_scan.c")
    with open(scan, "w") as f:
        f.write(SCAN_C)
    subprocess.check_call(
        ["cc", "-std=c11", "-O2", "-fPIC", "-shared", "-ffp-contract=off",
         "-D_DEFAULT_SOURCE", "-I" + os.path.join(ROOT, "runtime/include"),
         "-I" + os.path.join(ROOT, "runtime"),
         "-I" + os.path.join(ROOT, "conformance"),
         os.path.join(ROOT, "conformance/crmath.c"), scan, "-o", out,
         "-lm"])
    lib = ctypes.CDLL(out)
    lib.cr_eval.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_uint64,
                            ctypes.POINTER(CrVal))
    lib.cr_scan.argtypes = (ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32,
                            ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint32),
                            ctypes.c_size_t)
    lib.cr_scan.restype = ctypes.c_size_t
    lib.cr_cast_f32.argtypes = (ctypes.c_int, ctypes.c_uint32,
                                ctypes.POINTER(ctypes.c_uint64))
    return lib


def to_mpf(bits, dt):
    if dt == "f32":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def encode(v, dt):
    """The bits of the correctly rounded v (an mpf, +-inf or nan) in dt."""
    p, emin, emax = FMT[dt]
    width = {"f32": 32, "f64": 64, "f16": 16, "bf16": 16}[dt]
    mant = p - 1
    ebits = width - 1 - mant
    sign = (1 << (width - 1)) if (v < 0 or (v == 0 and mpmath.sign(v) < 0)) \
        else 0
    if mpmath.isnan(v):
        return ((1 << ebits) - 1) << mant | 1 << (mant - 1)
    a = abs(v)
    if mpmath.isinf(a):
        return sign | ((1 << ebits) - 1) << mant
    if a == 0:
        return sign
    m, e = mpmath.frexp(a)            # a = m 2^e, 0.5 <= m < 1
    E = max(int(e) - 1, emin)
    q = mpmath.ldexp(1, E - mant)     # the quantum
    n = a / q
    fl = int(mpmath.floor(n))
    frac = n - fl
    if frac > 0.5 or (frac == 0.5 and fl % 2 == 1):
        fl += 1
    # fl * 2^(E - mant), fl <= 2^p
    if fl >= 1 << p:
        fl >>= 1
        E += 1
    if E > emax:
        return sign | ((1 << ebits) - 1) << mant
    if fl < 1 << mant:                # subnormal (E == emin)
        return sign | fl
    return sign | (E + (1 << (ebits - 1)) - 1) << mant | (fl - (1 << mant))


def exact_value(op, x):
    """f(x) at mp.prec bits (x a Python float), or None for NaN results."""
    x = mpmath.mpf(x)
    if op == "exp":
        return mpmath.exp(x)
    if op == "log":
        if x < 0:
            return None
        return mpmath.log(x) if x > 0 else mpmath.mpf("-inf")
    if op == "sqrt":
        return None if x < 0 else mpmath.sqrt(x)
    if op == "rsqrt":
        if x < 0:
            return None
        if x == 0:
            return mpmath.mpf("inf")
        return 1 / mpmath.sqrt(x)
    if op == "reciprocal":
        return 1 / x
    if op == "tanh":
        return mpmath.tanh(x)
    if op == "sin":
        return mpmath.sin(x)
    if op == "cos":
        return mpmath.cos(x)
    if op == "erf":
        return mpmath.erf(x)
    if op == "sigmoid":
        return 1 / (1 + mpmath.exp(-x))
    if op == "floor":
        return mpmath.floor(x)
    if op == "ceil":
        return mpmath.ceil(x)
    if op == "neg":
        return -x
    if op == "abs":
        return abs(x)
    return x if x > 0 else mpmath.mpf(0)   # relu


def want_bits(op, bits, dt):
    x = to_mpf(bits, dt)
    width = 32 if dt == "f32" else 64
    nan = encode(mpmath.mpf("nan"), dt)
    if x != x:
        return {nan}
    if x in (float("inf"), float("-inf")):
        # limits, by IEEE/C99: computed by the float itself
        import math
        f = {"exp": math.exp, "tanh": math.tanh, "erf": math.erf,
             "floor": math.floor, "ceil": math.ceil, "neg": lambda v: -v,
             "abs": abs}
        if op in ("sin", "cos"):
            return {nan}
        if op == "log" or op == "sqrt":
            return {nan} if x < 0 else {encode(mpmath.mpf(x), dt)}
        if op == "rsqrt":
            return {nan} if x < 0 else {0}
        if op == "reciprocal":
            return {1 << (width - 1) if x < 0 else 0}
        if op == "sigmoid":
            return {0 if x < 0 else encode(mpmath.mpf(1), dt)}
        if op == "relu":
            return {0 if x < 0 else encode(mpmath.mpf(x), dt)}
        if op == "exp" and x < 0:
            return {0}
        if op in ("floor", "ceil", "abs", "neg"):
            return {encode(mpmath.mpf(f[op](x) if op != "floor" and
                                      op != "ceil" else x), dt)}
        return {encode(mpmath.mpf(f[op](x)), dt)}
    if x == 0:
        neg = struct.pack("<d", x)[7] & 0x80
        sz = 1 << (width - 1) if neg else 0
        zero_of = {"sin": sz, "tanh": sz, "erf": sz, "sqrt": sz,
                   "floor": sz, "ceil": sz, "abs": 0, "neg": sz ^ (1 << (width - 1)),
                   "relu": None}
        if op == "relu":
            return {0, sz}
        if op in zero_of:
            return {zero_of[op]}
        if op in ("rsqrt", "reciprocal"):
            return {sz | encode(mpmath.mpf("inf"), dt)}
    v = exact_value(op, x)
    if v is None:
        return {nan}
    b = encode(v, dt)
    if v == 0 and op in ("ceil", "neg") and x < 0:   # ceil(-0.5) = -0
        b |= 1 << (width - 1)
    return {b}


def cast_want(to, bits):
    x = to_mpf(bits, "f32")
    if x != x:
        return {"f16": None, "bf16": None, "f64": None, "i32": 0, "i64": 0,
                "bool": 1}[to]
    if to == "bool":
        return int(x != 0)
    if to in ("i32", "i64"):
        w = 32 if to == "i32" else 64
        if x in (float("inf"), float("-inf")):
            v = (1 << (w - 1)) - 1 if x > 0 else -(1 << (w - 1))
        else:
            v = max(min(int(x), (1 << (w - 1)) - 1), -(1 << (w - 1)))
        return v & ((1 << w) - 1)
    if x == 0:
        sz = struct.pack("<f", x)[3] & 0x80
        return {"f16": 0x8000, "bf16": 0x8000, "f64": 1 << 63}[to] if sz \
            else 0
    return encode(mpmath.mpf(x), to)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--scan", type=int, default=1 << 18)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--f32-scan", type=int, default=1 << 26,
                    help="f32 bit patterns scanned in C for hard cases")
    a = ap.parse_args(argv)
    mp.prec = 200
    lib = build()
    rng = random.Random(a.seed)
    bad = 0
    for dt in ("f32", "f64"):
        width = 32 if dt == "f32" else 64
        fixed = [sweep.sample_input(dt, 0, k)
                 for k in range(sweep.fixed_count(dt))]
        for oi, op in enumerate(OPS):
            r = CrVal()
            hard, stats = [], [0, 0, 0, 0]
            if dt == "f32" and a.f32_scan:
                # every (2^32 / f32_scan)-th bit pattern, in C
                buf = (ctypes.c_uint32 * 4096)()
                k = lib.cr_scan(oi, rng.getrandbits(32),
                                (1 << 32) // a.f32_scan | 1, a.f32_scan,
                                buf, 4096)
                hard += list(buf[:k])
            for _ in range(a.scan):
                b = rng.getrandbits(width)
                lib.cr_eval(oi, DT[dt], b, ctypes.byref(r))
                stats[r.stage] += 1
                if r.stage >= 2:
                    hard.append(b)
            xs = fixed + [rng.getrandbits(width) for _ in range(a.n)] + hard
            nbad = 0
            for b in xs:
                lib.cr_eval(oi, DT[dt], b, ctypes.byref(r))
                want = want_bits(op, b, dt)
                nan = lambda v: (v >> (52 if dt == "f64" else 23)) & \
                    ((1 << (11 if dt == "f64" else 8)) - 1) == \
                    ((1 << (11 if dt == "f64" else 8)) - 1) and \
                    v & ((1 << (52 if dt == "f64" else 23)) - 1)
                got = {r.lo, r.hi}
                if any(nan(w) for w in want):
                    ok = all(nan(g) for g in got)
                elif r.undecided:
                    ok = bool(want & got)
                else:
                    ok = got <= want if op == "relu" else got == want
                if not ok:
                    nbad += 1
                    if nbad <= 5:
                        print("  MISMATCH %s %s x=0x%0*x: crmath %s, mpmath %s"
                              % (op, dt, width // 4, b,
                                 [hex(g) for g in sorted(got)],
                                 [hex(w) for w in sorted(want)]))
            bad += nbad
            print("%-4s %-10s %7d inputs (%d hard; of %d scanned here: long "
                  "double %d, undecided %d): %s" % (
                      dt, op, len(xs), len(hard), a.scan, stats[2], stats[3],
                      "ok" if nbad == 0 else "%d MISMATCHES" % nbad))
    fixed = [sweep.sample_input("f32", 0, k)
             for k in range(sweep.fixed_count("f32"))]
    for to in ("f16", "bf16", "f64", "i32", "i64", "bool"):
        nbad = 0
        out = ctypes.c_uint64()
        xs = fixed + [rng.getrandbits(32) for _ in range(a.n)]
        for b in xs:
            lib.cr_cast_f32(DT[to], b, ctypes.byref(out))
            w = cast_want(to, b)
            if w is None:   # NaN: any NaN
                fm = FMT[to]
                mant = fm[0] - 1
                ok = (out.value >> mant) & ((1 << (({"f16": 16, "bf16": 16,
                      "f64": 64}[to]) - 1 - mant)) - 1) == \
                    (1 << (({"f16": 16, "bf16": 16, "f64": 64}[to]) - 1 -
                           mant)) - 1 and out.value & ((1 << mant) - 1)
            else:
                ok = out.value == w
            if not ok:
                nbad += 1
                if nbad <= 5:
                    print("  MISMATCH cast f32->%s x=0x%08x: crmath 0x%x, "
                          "want %s" % (to, b, out.value, w))
        bad += nbad
        print("cast f32->%-5s %7d inputs: %s" % (
            to, len(xs), "ok" if nbad == 0 else "%d MISMATCHES" % nbad))
    print("crmath_check: %s" % ("PASS" if bad == 0 else "FAIL (%d)" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
