"""Offline check of the sum and matmul bounds (docs/numerics.md, "Reductions
and matmul") against simulated accumulation orders; needs NumPy, not part
of `make testgen`.

    /usr/bin/python3 testgen/accumulation_orders.py [--quick]

Part 1: all-positive uniform [0, 1) dot products (inputs f32, bf16 or f16,
products and sums as each order does them), K from 1025 to 65536.  Prints
the worst ratio error / (gamma_K * P) (the contract: <= 1 passes) and
error / ((ceil(log2 K) + 2) u P) (the old pairwise bound) per order.
Part 2: the Order vectors of numerics.py (MM_ORDER_CASES), each order
against the bounds the vectors carry (errbound.matmul_bounds).
Every f32 order must pass every vector; each f16 and bf16 accumulator
must fail at least one vector of each input dtype (a mixed order, f16
blocks summed in f32, can pass the K = 4097 ones: the K = 1025 ones catch
it).
"""

import math
import os
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import errbound  # noqa: E402
import fp  # noqa: E402
import kf  # noqa: E402

F32 = np.float32


def bf16(x):
    """Round float32 array x to bfloat16 (nearest even), as float32."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


def f16(x):
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def r32(x):
    return np.asarray(x, np.float64).astype(np.float32)


def chop32(x):
    """float64 -> float32 rounded toward zero (a truncating adder)."""
    x = np.asarray(x, np.float64)
    y = x.astype(np.float32)
    over = np.abs(y.astype(np.float64)) > np.abs(x)
    y[over] = np.nextafter(y[over], np.float32(0))
    return y


# An order: fn(P) -> sums, P the [K, C] float64 products (exact: the
# operands have at most 24 significant bits), C independent columns.
def seq(rnd, prod_rnd=r32):
    def f(P):
        s = np.zeros(P.shape[1], np.float32)
        for k in range(P.shape[0]):
            s = rnd(s.astype(np.float64) + prod_rnd(P[k]).astype(np.float64))
        return s
    return f


def pairwise(rnd):
    def f(P):
        x = rnd(r32(P))
        while x.shape[0] > 1:
            if x.shape[0] % 2:
                x = np.concatenate([x, np.zeros((1, x.shape[1]), np.float32)])
            x = rnd(x[0::2].astype(np.float64) + x[1::2].astype(np.float64))
        return x[0]
    return f


def blocked(inner_rnd, block, outer_rnd=r32, split=1):
    """Sequential (FMA) inside K-blocks of `block` in inner_rnd, blocks summed
    sequentially in outer_rnd; split > 1: split-K, the pieces summed last."""
    def f(P):
        K = P.shape[0]
        pieces = np.array_split(np.arange(K), split)
        tot = np.zeros(P.shape[1], np.float32)
        for idx in pieces:
            part = np.zeros(P.shape[1], np.float32)
            for b0 in range(idx[0], idx[-1] + 1, block):
                blk = P[b0:min(b0 + block, idx[-1] + 1)]
                s = seq(inner_rnd, prod_rnd=lambda p: p)(blk)
                part = outer_rnd(part.astype(np.float64) + s)
            tot = r32(tot.astype(np.float64) + part)
        return tot
    return f


ORDERS = [
    ("f32 sequential", seq(r32), True),
    ("f32 sequential FMA", seq(r32, prod_rnd=lambda p: p), True),
    ("f32 pairwise", pairwise(r32), True),
    ("f32 blocked 32, split-K 4", blocked(r32, 32, split=4), True),
    ("f32 sequential, truncating adds", seq(chop32), True),
    ("f64 accumulate, f32 result", lambda P: r32(P.sum(axis=0)), True),
    ("bf16 sequential", seq(bf16), False),
    ("bf16 pairwise", pairwise(bf16), False),
    ("f16 sequential", seq(f16), False),
    ("f16 pairwise", pairwise(f16), False),
    ("f16 blocks of 32, f32 across", blocked(f16, 32), False),
]


def exact_sums(P):
    return np.array([math.fsum(P[:, c]) for c in range(P.shape[1])])


def part1(Ks, C, rng):
    u = 2.0 ** -24
    print("Part 1: all-positive uniform [0, 1), %d columns; worst "
          "error / (gamma_K P)  [error / old (ceil(log2 K) + 2) u P]" % C)
    for dt, cast in (("f32", r32), ("bf16", bf16), ("f16", f16)):
        for K in Ks:
            a = cast(rng.random((K, 1)))
            b = cast(rng.random((K, C)))
            P = a.astype(np.float64) * b.astype(np.float64)
            ex = exact_sums(P)
            mag = np.abs(P).sum(axis=0)
            g = K * u / (1 - K * u)
            old = (math.ceil(math.log2(K)) + 2) * u
            cells = []
            for name, fn, _ in ORDERS:
                err = np.abs(fn(P).astype(np.float64) - ex)
                cells.append("%s %.3g [%.3g]" % (
                    name, np.max(err / (g * mag)), np.max(err / (old * mag))))
            print("  %s K=%d:\n    %s" % (dt, K, "\n    ".join(cells)))


def part2():
    import numerics  # noqa: E402
    print("Part 2: the Order matmul vectors; worst error / the vector's "
          "bound (|got - ref| / bound)")
    bad = 0
    caught = {}  # (dt, order) -> some vector of dt fails it
    for c in range(len(numerics.MM_ORDER_CASES)):
        for dt in ("f16", "bf16", "f32"):
            what, M, K, N, av, bv, _ = numerics.mm_order_operands(c, dt)
            A = np.array(av, np.float64).reshape(M, K)
            Bm = np.array(bv, np.float64).reshape(K, N)
            ex, _ = kf.matmul_exact(([M, K], av), ([K, N], bv))
            refs = [fp.round_q(e, "f32") for e in ex]
            bounds = [fp.decode(int(h, 16), "f64") for h in
                      errbound.matmul_bounds(av, bv, M, K, N, refs)]
            row = []
            for name, fn, must_pass in ORDERS:
                worst = 0.0
                for i in range(M):
                    P = A[i][:, None] * Bm  # [K, N]
                    got = fn(P)
                    for j in range(N):
                        d = abs(float(got[j]) - refs[i * N + j])
                        bd = bounds[i * N + j]
                        worst = max(worst, d / bd if bd else
                                    (0.0 if d == 0 else math.inf))
                ok = worst <= 1.0
                if must_pass and not ok:
                    bad += 1
                caught[dt, name] = caught.get((dt, name), False) or not ok
                row.append("%s %.3g%s" % (name, worst,
                                          " (!)" if must_pass and not ok
                                          else ""))
            print("  %s %s K=%d:\n    %s" % (dt, what, K, "\n    ".join(row)))
    for (dt, name), hit in sorted(caught.items()):
        must_pass = [o[2] for o in ORDERS if o[0] == name][0]
        if not must_pass and not hit:
            print("  (!) %s inputs: %s passes every Order vector" % (dt, name))
            bad += 1
    return bad


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(13)
    part1([1025, 4097] if quick else [1025, 4097, 16384, 65536],
          8 if quick else 32, rng)
    bad = part2()
    print("%d unexpected results (an f32 order failing a vector, or a "
          "narrower accumulator passing every vector of a dtype)" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
