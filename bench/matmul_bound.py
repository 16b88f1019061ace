"""The matmul error bound of docs/numerics.md ("Reductions and matmul") on
large all-positive inputs, for each matmul path of a backend:

    python3 bench/matmul_bound.py --kiln build/kiln [--backend cuda]
        [--size 4096] [--cases f32,bf16,f16] [--paths default,generated,fused]

Cases: f32 and bf16 [S,S] x [S,S], f16 [S,S+1] x [S+1,S] (S = --size),
operands uniform [0, 1) rounded to the dtype (fixed seed).  Paths: the
default options (the library path: cuBLAS on cuda), disable=
matmul_expr_eval (the generated kernel), enable=fuse_matmul with a zero
bias (relu(a @ b + 0), the generated kernel with its epilogue; exact for
these non-negative results, so the bound is the matmul's).  For each run it
prints the segment paths `kiln run --info` reports and the worst ratio,
over all elements, of |got - exact| to
  gamma_K P  (the contract, gamma_K = K u / (1 - K u), u = 2^-24),
  K u P      (the classical bound),
  (ceil(log2 K) + 2) u P  (the previous, pairwise bound),
P = sum_k |a_ik b_kj|; exact and P in float64 (their own error, at most
K 2^-53 P, is far below these).  Exit status 1 when a ratio to gamma_K P
exceeds 1 or a run fails.  Needs NumPy.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

FUSION = {
    "plain": "kiln.fusion 1\n%a = input {dt} [?, ?]\n%b = input {dt} [?, ?]\n"
             "%c = matmul %a %b\noutput %c\n",
    "fused": "kiln.fusion 1\n%a = input {dt} [?, ?]\n%b = input {dt} [?, ?]\n"
             "%bias = input f32 [1, ?]\n%c = matmul %a %b\n"
             "%t = add %c %bias\n%r = relu %t\noutput %r\n",
}
PATHS = {"default": ("plain", []),
         "generated": ("plain", ["--disable", "matmul_expr_eval"]),
         "fused": ("fused", ["--enable", "fuse_matmul"])}


def to_bf16_bits(x):
    """float32 array -> uint16 bf16 bit patterns (nearest even)."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def operand(rng, shape, dt, d):
    """(array for numpy in float64, path of the .npy kiln reads)."""
    x = rng.random(shape, dtype=np.float64)
    path = os.path.join(d, "in-%s-%dx%d-%d.npy" % (dt, shape[0], shape[1],
                                                   rng.integers(1 << 30)))
    if dt == "f32":
        v = x.astype(np.float32)
        np.save(path, v)
        return v.astype(np.float64), path
    if dt == "f16":
        v = x.astype(np.float16)
        np.save(path, v)
        return v.astype(np.float64), path
    bits = to_bf16_bits(x.astype(np.float32))
    np.save(path, bits.view("V2"))
    val = (bits.astype(np.uint32) << 16).view(np.float32)
    return val.astype(np.float64), path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--cases", default="f32,bf16,f16")
    ap.add_argument("--paths", default="default,generated,fused")
    args = ap.parse_args()
    u = 2.0 ** -24
    S = args.size
    bad = 0
    with tempfile.TemporaryDirectory(prefix="kiln-mmb.") as d:
        rng = np.random.default_rng(13)
        for dt in args.cases.split(","):
            K = S + 1 if dt == "f16" else S
            A, pa = operand(rng, (S, K), dt, d)
            B, pb = operand(rng, (K, S), dt, d)
            exact = A @ B  # all-positive: P = exact
            P = np.abs(A) @ np.abs(B)
            gam = K * u / (1 - K * u)
            old = (math.ceil(math.log2(K)) + 2) * u
            bias = os.path.join(d, "bias-%d.npy" % S)
            np.save(bias, np.zeros((1, S), np.float32))
            for pname in args.paths.split(","):
                kind, opts = PATHS[pname]
                kf = os.path.join(d, "%s-%s.kf" % (kind, dt))
                with open(kf, "w") as f:
                    f.write(FUSION[kind].format(dt=dt))
                out = os.path.join(d, "out-%s-%s" % (dt, pname))
                cmd = [args.kiln, "run", kf, "--input", "0=" + pa,
                       "--input", "1=" + pb, "--backend", args.backend,
                       "--info", "--out", out] + opts
                if kind == "fused":
                    cmd += ["--input", "2=" + bias]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print("%s K=%d %s: kiln run failed (%d): %s" % (
                        dt, K, pname, r.returncode, r.stderr.strip()[-400:]))
                    bad += 1
                    continue
                segs = []
                for line in r.stdout.splitlines():
                    if line.startswith("{"):
                        segs = ["%s/%s" % (s["what"], s["path"])
                                for s in json.loads(line)["segments"]]
                got = np.load(os.path.join(out, "out0.npy")).astype(np.float64)
                err = np.abs(got - exact)
                rg = float(np.max(err / (gam * P)))
                rk = float(np.max(err / (K * u * P)))
                ro = float(np.max(err / (old * P)))
                ok = rg <= 1.0
                bad += not ok
                print("%-4s [%d,%d]x[%d,%d] %-9s (%s): error/(gamma_K P) "
                      "%.4f  error/(K u P) %.4f  error/old %.2f  %s" % (
                          dt, S, K, K, S, pname, " ".join(segs), rg, rk, ro,
                          "within" if ok else "EXCEEDS the bound"))
                sys.stdout.flush()
    print("matmul_bound: %s" % ("all within gamma_K P" if not bad else
                                "%d run(s) failed or exceeded" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
