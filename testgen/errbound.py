"""The error bounds of float sums and matmul: testgen's one copy of the
formulas of docs/numerics.md, "Reductions and matmul" (numerics.py and
cache_isolation.py compute every sum and matmul bound here).

Both bounds hold for ANY order of summation (sequential, pairwise, blocked,
split-K, tensor-core tiles): a sum of n terms in any binary tree takes n - 1
additions, so each term passes through at most n - 1 roundings, and with
the products of a matmul rounded once more each of its K terms passes
through at most K.  Higham (Accuracy and Stability of Numerical Algorithms,
2nd ed., sec. 3.1 and 4.2, Lemma 3.1) then bounds the error by
gamma_m * sum|terms|, gamma_m = m u / (1 - m u), u the unit roundoff of the
accumulation type (2^-24 for f32, 2^-53 for f64).

Where every partial sum in every order is exactly representable (all terms
are integer multiples of one power of two 2^-s and sum|terms| <= 2^p * 2^-s,
p the accumulation type's precision), every order gives the exact result:
the bound is 0.
"""

from fractions import Fraction

import fp
import kf

# unit roundoff and precision (significand bits) of the accumulation type
U = {"f32": Fraction(1, 1 << 24), "f64": Fraction(1, 1 << 53)}
PREC = {"f32": 24, "f64": 53}
# the smallest power-of-two spacing the type holds (its least subnormal)
MIN_SPACING_LOG2 = {"f32": 149, "f64": 1074}


def gamma(m, acc):
    """gamma_m = m u / (1 - m u) for the accumulation type acc (m >= 0)."""
    u = U[acc]
    if m * u >= 1:
        raise ValueError("gamma_%d undefined for %s" % (m, acc))
    return m * u / (1 - m * u)


def exact_in_any_order(terms, acc):
    """True when every partial sum of the Fraction terms, in any order, is
    exactly representable in acc: all are integer multiples of 2^-s (s the
    largest denominator exponent) and sum|t| * 2^s <= 2^p."""
    d = 1
    for t in terms:
        d = max(d, t.denominator)  # dyadic: denominators are powers of 2
    if d.bit_length() - 1 > MIN_SPACING_LOG2[acc]:
        return False
    return sum(abs(t) for t in terms) * d <= (1 << PREC[acc])


def sum_bound(xs, ref, acc):
    """Bound on |got - ref| for the sum of the finite values xs in type acc:
    gamma_{n-1} * sum|x| + |ref - exact| (0 where exact in any order)."""
    qs = [Fraction(x) for x in xs]
    ex = sum(qs)
    n = len(qs)
    if n <= 1 or exact_in_any_order(qs, acc):
        b = Fraction(0)
    else:
        b = gamma(n - 1, acc) * sum(abs(q) for q in qs)
    return b + abs(Fraction(ref) - ex)


def matmul_term_bound(arow, bcol, mag):
    """B of one matmul element (f32 accumulation): gamma_K * P, P =
    sum_k |a_k b_k| (the Fraction mag), K = len(arow); 0 where every
    product and every partial sum is exact in f32 in any order."""
    K = len(arow)
    if K == 0:
        return Fraction(0)
    prods = [Fraction(a) * Fraction(b) for a, b in zip(arow, bcol)]
    if exact_in_any_order(prods, "f32"):
        return Fraction(0)
    return gamma(K, "f32") * mag


def matmul_bounds(av, bv, M, K, N, refs, epilogue=None):
    """Per-element hex f64 bounds on |got - ref| of [M,K] x [K,N] (row-major
    values av, bv), refs the reference outputs; with epilogue (the f32 bias
    row of relu(add(matmul, bias))) the epilogue's add rounding is added."""
    ex, mag = kf.matmul_exact(([M, K], av), ([K, N], bv))
    u = U["f32"]
    out = []
    for i, e in enumerate(ex):
        r, j = divmod(i, N)
        B = matmul_term_bound(av[r * K:(r + 1) * K],
                              [bv[t * N + j] for t in range(K)], mag[i])
        if epilogue is None:
            exact, bnd = e, B
        else:
            tot = e + Fraction(epilogue[j])
            exact = max(tot, Fraction(0))
            bnd = B + u * (abs(tot) + B)
        bnd += abs(Fraction(refs[i]) - exact)
        out.append(fp.h(fp.ceil_f64(bnd), "f64"))
    return out
