/*
** ref_math.c -- the reference backend's arithmetic (ref.c runs the plan):
** one tight typed loop per op over a block of elements, and the reduction
** accumulators.  The numerics contract they implement is stated in ref.c's
** opening comment and docs/numerics.md.
*/
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backends/ref.h"
#include "internal.h"
#include "numeric.h"

/* -------------------------------------------------------------- kernels */

#define LOOP(expr)                                                             \
    do {                                                                       \
        for (int64_t i = 0; i < n; i++)                                        \
            y[i] = (expr);                                                     \
    } while (0)

static void un_f32(int op, const float *x, float *y, int64_t n)
{
    switch (op) {
    case KILN_OP_NEG: LOOP(-x[i]); break;
    case KILN_OP_ABS: LOOP(fabsf(x[i])); break;
    case KILN_OP_EXP: LOOP((float)exp((double)x[i])); break;
    case KILN_OP_LOG: LOOP((float)log((double)x[i])); break;
    case KILN_OP_SQRT: LOOP(sqrtf(x[i])); break;
    case KILN_OP_RSQRT: LOOP((float)(1.0 / sqrt((double)x[i]))); break;
    case KILN_OP_RECIPROCAL: LOOP(1.0f / x[i]); break;
    case KILN_OP_SIN: LOOP((float)sin((double)x[i])); break;
    case KILN_OP_COS: LOOP((float)cos((double)x[i])); break;
    case KILN_OP_TANH: LOOP((float)tanh((double)x[i])); break;
    case KILN_OP_SIGMOID:
        LOOP((float)(1.0 / (1.0 + exp(-(double)x[i]))));
        break;
    case KILN_OP_RELU: LOOP(x[i] != x[i] ? x[i] : x[i] > 0.0f ? x[i] : 0.0f); break;
    case KILN_OP_ERF: LOOP((float)erf((double)x[i])); break;
    case KILN_OP_FLOOR: LOOP(floorf(x[i])); break;
    case KILN_OP_CEIL: LOOP(ceilf(x[i])); break;
    default: break;
    }
}

typedef long double ld;

static int bitlen_u128(unsigned __int128 v)
{
    uint64_t hi = (uint64_t)(v >> 64);
    return hi ? 128 - __builtin_clzll(hi)
              : (uint64_t)v ? 64 - __builtin_clzll((uint64_t)v) : 0;
}

/* 1 when the exact 1/sqrt(x) is above m = M * 2^em (x > 0 finite, M odd
** > 1, M < 2^55): 1/sqrt(x) > m  <=>  x * m^2 < 1  <=>  X * M^2 < 2^k.
** X * M^2 has an odd factor > 1, so it never equals 2^k. */
static int rsqrt_above(uint64_t X, int ex, uint64_t M, int em)
{
    unsigned __int128 m2 = (unsigned __int128)M * M; /* < 2^110 */
    unsigned __int128 lo = (unsigned __int128)X * (uint64_t)m2;
    unsigned __int128 hi = (unsigned __int128)X * (uint64_t)(m2 >> 64) + (lo >> 64);
    int len = hi ? 64 + bitlen_u128(hi) : bitlen_u128((uint64_t)lo);
    int k = -(ex + 2 * em);
    return len <= k;
}

/* Correctly rounded f64 rsqrt.  The long double estimate is within a small
** fraction of an ulp, so the answer is it or a neighbour; which one is
** settled exactly against the two midpoints (a near-tie would otherwise
** round the wrong way, e.g. at the largest subnormal). */
static double rsqrt_f64(double x)
{
    double r = (double)(1.0L / sqrtl((ld)x));
    if (!(x > 0) || isinf(x) || !isfinite(r))
        return r; /* NaN, negatives, +-0, +inf: the estimate is exact */
    uint64_t xb, rb;
    memcpy(&xb, &x, 8);
    memcpy(&rb, &r, 8);
    int xe = (int)(xb >> 52);
    uint64_t X = xb & ((1ull << 52) - 1);
    int ex = xe ? xe - 1075 : -1074;
    if (xe)
        X |= 1ull << 52;
    /* r is normal: 2^-512 <= r <= 2^537 */
    uint64_t R = (rb & ((1ull << 52) - 1)) | (1ull << 52);
    int e = (int)(rb >> 52) - 1075;
    if (rsqrt_above(X, ex, 2 * R + 1, e - 1))
        return nextafter(r, INFINITY);
    int below = R == (1ull << 52) ? !rsqrt_above(X, ex, 4 * R - 1, e - 2)
                                  : !rsqrt_above(X, ex, 2 * R - 1, e - 1);
    return below ? nextafter(r, 0.0) : r;
}

static void un_f64(int op, const double *x, double *y, int64_t n)
{
    switch (op) {
    case KILN_OP_NEG: LOOP(-x[i]); break;
    case KILN_OP_ABS: LOOP(fabs(x[i])); break;
    case KILN_OP_EXP: LOOP((double)expl((ld)x[i])); break;
    case KILN_OP_LOG: LOOP((double)logl((ld)x[i])); break;
    case KILN_OP_SQRT: LOOP(sqrt(x[i])); break;
    case KILN_OP_RSQRT: LOOP(rsqrt_f64(x[i])); break;
    case KILN_OP_RECIPROCAL: LOOP(1.0 / x[i]); break;
    case KILN_OP_SIN: LOOP((double)sinl((ld)x[i])); break;
    case KILN_OP_COS: LOOP((double)cosl((ld)x[i])); break;
    case KILN_OP_TANH: LOOP((double)tanhl((ld)x[i])); break;
    case KILN_OP_SIGMOID:
        LOOP((double)(1.0L / (1.0L + expl(-(ld)x[i]))));
        break;
    case KILN_OP_RELU: LOOP(x[i] != x[i] ? x[i] : x[i] > 0.0 ? x[i] : 0.0); break;
    case KILN_OP_ERF: LOOP((double)erfl((ld)x[i])); break;
    case KILN_OP_FLOOR: LOOP(floor(x[i])); break;
    case KILN_OP_CEIL: LOOP(ceil(x[i])); break;
    default: break;
    }
}

static void un_i32(int op, const int32_t *x, int32_t *y, int64_t n)
{
    switch (op) {
    case KILN_OP_NEG: LOOP((int32_t)(0u - (uint32_t)x[i])); break;
    case KILN_OP_ABS:
        LOOP(x[i] < 0 ? (int32_t)(0u - (uint32_t)x[i]) : x[i]);
        break;
    case KILN_OP_RELU: LOOP(x[i] > 0 ? x[i] : 0); break;
    default: break;
    }
}

static void un_i64(int op, const int64_t *x, int64_t *y, int64_t n)
{
    switch (op) {
    case KILN_OP_NEG: LOOP((int64_t)(0u - (uint64_t)x[i])); break;
    case KILN_OP_ABS:
        LOOP(x[i] < 0 ? (int64_t)(0u - (uint64_t)x[i]) : x[i]);
        break;
    case KILN_OP_RELU: LOOP(x[i] > 0 ? x[i] : 0); break;
    default: break;
    }
}

/* Binary arithmetic.  NaN-propagating max/min (torch). */
#define BIN_FLOAT(T, POWF)                                                     \
    switch (op) {                                                              \
    case KILN_OP_ADD: LOOP(a[i] + b[i]); break;                                \
    case KILN_OP_SUB: LOOP(a[i] - b[i]); break;                                \
    case KILN_OP_MUL: LOOP(a[i] * b[i]); break;                                \
    case KILN_OP_DIV: LOOP(a[i] / b[i]); break;                                \
    case KILN_OP_POW: LOOP(POWF(a[i], b[i])); break;                           \
    case KILN_OP_MAXIMUM:                                                      \
        LOOP(a[i] != a[i] ? a[i] : b[i] != b[i] ? b[i]                          \
             : a[i] > b[i] ? a[i] : b[i]);                                     \
        break;                                                                 \
    case KILN_OP_MINIMUM:                                                      \
        LOOP(a[i] != a[i] ? a[i] : b[i] != b[i] ? b[i]                          \
             : a[i] < b[i] ? a[i] : b[i]);                                     \
        break;                                                                 \
    default: break;                                                            \
    }

#define POW_F32(p, q) ((float)pow((double)(p), (double)(q)))
#define POW_F64(p, q) ((double)powl((ld)(p), (ld)(q)))

static void bin_f32(int op, const float *a, const float *b, float *y,
                    int64_t n)
{
    BIN_FLOAT(float, POW_F32)
}

static void bin_f64(int op, const double *a, const double *b, double *y,
                    int64_t n)
{
    BIN_FLOAT(double, POW_F64)
}

#define BIN_INT(T, U)                                                          \
    switch (op) {                                                              \
    case KILN_OP_ADD: LOOP((T)((U)a[i] + (U)b[i])); break;                     \
    case KILN_OP_SUB: LOOP((T)((U)a[i] - (U)b[i])); break;                     \
    case KILN_OP_MUL: LOOP((T)((U)a[i] * (U)b[i])); break;                     \
    case KILN_OP_MAXIMUM: LOOP(a[i] > b[i] ? a[i] : b[i]); break;              \
    case KILN_OP_MINIMUM: LOOP(a[i] < b[i] ? a[i] : b[i]); break;              \
    default: break;                                                            \
    }

static void bin_i32(int op, const int32_t *a, const int32_t *b, int32_t *y,
                    int64_t n)
{
    BIN_INT(int32_t, uint32_t)
}

static void bin_i64(int op, const int64_t *a, const int64_t *b, int64_t *y,
                    int64_t n)
{
    BIN_INT(int64_t, uint64_t)
}

#define CMP(T, NORM)                                                           \
    do {                                                                       \
        const T *a = A;                                                        \
        const T *b = B;                                                        \
        switch (op) {                                                          \
        case KILN_OP_EQ: LOOP(NORM(a[i]) == NORM(b[i])); break;                \
        case KILN_OP_NE: LOOP(NORM(a[i]) != NORM(b[i])); break;                \
        case KILN_OP_LT: LOOP(a[i] < b[i]); break;                             \
        case KILN_OP_LE: LOOP(a[i] <= b[i]); break;                            \
        case KILN_OP_GT: LOOP(a[i] > b[i]); break;                             \
        case KILN_OP_GE: LOOP(a[i] >= b[i]); break;                            \
        default: break;                                                        \
        }                                                                      \
    } while (0)
#define AS_IS(v) (v)
#define AS_BOOL(v) ((v) != 0)

static void compare(int op, int dt, const void *A, const void *B, uint8_t *y,
                    int64_t n)
{
    switch (dt) {
    case KILN_BOOL: CMP(uint8_t, AS_BOOL); break;
    case KILN_I32: CMP(int32_t, AS_IS); break;
    case KILN_I64: CMP(int64_t, AS_IS); break;
    case KILN_F32: CMP(float, AS_IS); break;
    case KILN_F64: CMP(double, AS_IS); break;
    default: break;
    }
}

static void where_n(size_t es, const uint8_t *c, const void *A, const void *B,
                    void *Y, int64_t n)
{
    switch (es) {
    case 1: {
        const uint8_t *a = A, *b = B;
        uint8_t *y = Y;
        LOOP(c[i] ? a[i] : b[i]);
        break;
    }
    case 2: {
        const uint16_t *a = A, *b = B;
        uint16_t *y = Y;
        LOOP(c[i] ? a[i] : b[i]);
        break;
    }
    case 4: {
        const uint32_t *a = A, *b = B;
        uint32_t *y = Y;
        LOOP(c[i] ? a[i] : b[i]);
        break;
    }
    default: {
        const uint64_t *a = A, *b = B;
        uint64_t *y = Y;
        LOOP(c[i] ? a[i] : b[i]);
        break;
    }
    }
}

/* Evaluate pointwise node nd over n elements of the current block. */
void kiln__ref_compute(const ref_kernel *k, const rnode *nd,
                       void *const *slot, int32_t self, int64_t n)
{
    int op = nd->ir.op;
    void *Y = slot[self];
    const void *A = nd->ir.args[0] >= 0 ? slot[nd->ir.args[0]] : NULL;
    const void *B = nd->ir.args[1] >= 0 ? slot[nd->ir.args[1]] : NULL;
    const void *C = nd->ir.args[2] >= 0 ? slot[nd->ir.args[2]] : NULL;
    int adt = A != NULL ? k->nodes[nd->ir.args[0]].ir.dtype : nd->ir.dtype;
    switch (op) {
    case KILN_OP_CAST:
        kiln__convert((kiln_dtype)nd->ir.dtype, Y, (kiln_dtype)adt, A,
                      (size_t)n);
        return;
    case KILN_OP_WHERE:
        where_n(kiln_dtype_size((kiln_dtype)nd->ir.dtype), A, B, C, Y, n);
        return;
    case KILN_OP_FMA:
        if (nd->ir.dtype == KILN_F32) {
            const float *a = A, *b = B, *c = C;
            float *y = Y;
            LOOP(fmaf(a[i], b[i], c[i]));
        } else {
            const double *a = A, *b = B, *c = C;
            double *y = Y;
            LOOP(fma(a[i], b[i], c[i]));
        }
        return;
    case KILN_OP_AND: {
        const uint8_t *a = A, *b = B;
        uint8_t *y = Y;
        LOOP((a[i] != 0) & (b[i] != 0));
        return;
    }
    case KILN_OP_OR: {
        const uint8_t *a = A, *b = B;
        uint8_t *y = Y;
        LOOP((a[i] != 0) | (b[i] != 0));
        return;
    }
    case KILN_OP_NOT: {
        const uint8_t *a = A;
        uint8_t *y = Y;
        LOOP(a[i] == 0);
        return;
    }
    case KILN_OP_EQ:
    case KILN_OP_NE:
    case KILN_OP_LT:
    case KILN_OP_LE:
    case KILN_OP_GT:
    case KILN_OP_GE:
        compare(op, adt, A, B, Y, n);
        return;
    default:
        break;
    }
    if (arity_of(op) == 1) {
        switch (adt) {
        case KILN_F32: un_f32(op, A, Y, n); break;
        case KILN_F64: un_f64(op, A, Y, n); break;
        case KILN_I32: un_i32(op, A, Y, n); break;
        case KILN_I64: un_i64(op, A, Y, n); break;
        default: break;
        }
    } else {
        switch (adt) {
        case KILN_F32: bin_f32(op, A, B, Y, n); break;
        case KILN_F64: bin_f64(op, A, B, Y, n); break;
        case KILN_I32: bin_i32(op, A, B, Y, n); break;
        case KILN_I64: bin_i64(op, A, B, Y, n); break;
        default: break;
        }
    }
}

/* ------------------------------------------------------------ reductions */

void kiln__ref_acc_init(const rnode *nd, racc *r)
{
    int op = nd->ir.op, dt = nd->ir.dtype;
    for (int64_t i = 0; i < r->nr; i++) {
        if (dt == KILN_F32 || dt == KILN_F64) {
            double v = op == KILN_OP_SUM ? -0.0 /* keeps -0 + -0 = -0 */
                       : op == KILN_OP_RMAX ? -INFINITY : INFINITY;
            ((double *)r->acc)[i] = v;
            if (r->comp)
                r->comp[i] = 0.0;
        } else {
            ((int64_t *)r->acc)[i] = op == KILN_OP_SUM ? 0
                                     : op == KILN_OP_RMAX ? INT64_MIN
                                                          : INT64_MAX;
        }
    }
}

void kiln__ref_accumulate(const rnode *nd, racc *r, const void *X,
                          const int64_t *o, int64_t n)
{
    int op = nd->ir.op, dt = nd->ir.dtype;
    if (dt == KILN_F32 || dt == KILN_F64) {
        double *acc = r->acc;
        const float *xf = X;
        const double *xd = X;
#define XV(i) (dt == KILN_F32 ? (double)xf[i] : xd[i])
        if (op == KILN_OP_SUM) {
            if (dt == KILN_F32) {
                for (int64_t i = 0; i < n; i++)
                    acc[o[i]] += (double)xf[i];
            } else {
                double *c = r->comp;
                for (int64_t i = 0; i < n; i++) {
                    double s = acc[o[i]], x = xd[i], t = s + x;
                    if (fabs(s) >= fabs(x))
                        c[o[i]] += (s - t) + x;
                    else
                        c[o[i]] += (x - t) + s;
                    acc[o[i]] = t;
                }
            }
        } else if (op == KILN_OP_RMAX) {
            for (int64_t i = 0; i < n; i++) {
                double x = XV(i);
                if (x != x || x > acc[o[i]])
                    if (acc[o[i]] == acc[o[i]]) /* NaN sticks */
                        acc[o[i]] = x;
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                double x = XV(i);
                if (x != x || x < acc[o[i]])
                    if (acc[o[i]] == acc[o[i]])
                        acc[o[i]] = x;
            }
        }
#undef XV
        return;
    }
    int64_t *acc = r->acc;
    const int32_t *xi = X;
    const int64_t *xl = X;
#define XI(i) (dt == KILN_I32 ? (int64_t)xi[i] : xl[i])
    if (op == KILN_OP_SUM) {
        for (int64_t i = 0; i < n; i++)
            acc[o[i]] = (int64_t)((uint64_t)acc[o[i]] + (uint64_t)XI(i));
    } else if (op == KILN_OP_RMAX) {
        for (int64_t i = 0; i < n; i++)
            if (XI(i) > acc[o[i]])
                acc[o[i]] = XI(i);
    } else {
        for (int64_t i = 0; i < n; i++)
            if (XI(i) < acc[o[i]])
                acc[o[i]] = XI(i);
    }
#undef XI
}

void kiln__ref_finalize(const rnode *nd, const racc *r, void *buf)
{
    int op = nd->ir.op, dt = nd->ir.dtype;
    for (int64_t i = 0; i < r->nr; i++) {
        if (dt == KILN_F32 || dt == KILN_F64) {
            double v = ((double *)r->acc)[i];
            if (op == KILN_OP_SUM && r->empty)
                v = 0.0;
            else if (r->comp != NULL && r->comp[i] != 0.0 && isfinite(v))
                v += r->comp[i];
            if (dt == KILN_F32)
                ((float *)buf)[i] = kiln__f64_to_f32(v);
            else
                ((double *)buf)[i] = v;
        } else {
            int64_t v = ((int64_t *)r->acc)[i];
            if (dt == KILN_I32)
                ((int32_t *)buf)[i] = (int32_t)(uint32_t)(uint64_t)v;
            else
                ((int64_t *)buf)[i] = v;
        }
    }
}
