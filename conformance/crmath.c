/*
** crmath.c -- the correctly rounded reference of the `sweep` category
** (docs/numerics.md, "The sweep reference").  It shares no code with any
** backend: the runner checks every backend, `ref` included, against it.
**
** For a unary op at an input x (f32 or f64) it returns the correctly
** rounded result as a set of one or two candidates:
**   - exact ops (neg, abs, relu, floor, ceil, sqrt, reciprocal, casts) are
**     computed exactly: in binary64 for f32 (sqrt and division in binary64
**     then rounded to binary32 round once in effect: 53 >= 2 * 24 + 2), by
**     the IEEE-correct C operations for f64, and by integer arithmetic on
**     the bits for the narrowing casts;
**   - the transcendentals (exp, log, tanh, sin, cos, erf, sigmoid, rsqrt)
**     use a rounding test: y = f(x) in binary64 (glibc, error < 2^-50
**     relative with margin) is rounded to the target when the whole
**     interval y * (1 -+ 2^-47) rounds to one value; otherwise f(x) is
**     recomputed in long double (x86-64: 64-bit significand) and tested
**     with 2^-57; when even that interval straddles a rounding boundary the
**     result is *undecided* and both neighbours are candidates (counted
**     and reported by the runner).  f64 uses the long double step only,
**     with 2^-60 (glibc's long double functions are within a few units of
**     2^-64): about 1 input in 100 is undecided there.
** scripts/crmath_check.py checks this against mpmath at 200 bits on a
** large sample and on every input of a larger scan that needed the long
** double step or stayed undecided (docs/numerics.md).
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "conform.h"

static const char *const cr_names[CR_N_OPS] = {
    "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sin", "cos",
    "erf", "sigmoid", "floor", "ceil", "neg", "abs", "relu", "cast"};

int cr_op_parse(const char *name)
{
    for (int i = 0; i < CR_N_OPS; i++)
        if (strcmp(cr_names[i], name) == 0)
            return i;
    return -1;
}

const char *cr_op_name(cr_op op)
{
    return op >= 0 && op < CR_N_OPS ? cr_names[op] : "?";
}

int cr_op_transcendental(cr_op op)
{
    switch (op) {
    case CR_EXP: case CR_LOG: case CR_RSQRT: case CR_TANH: case CR_SIN:
    case CR_COS: case CR_ERF: case CR_SIGMOID:
        return 1;
    default:
        return 0;
    }
}

static uint32_t f2b(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static float b2f(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint64_t d2b(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

static double b2d(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static double f_d(cr_op op, double x)
{
    switch (op) {
    case CR_EXP: return exp(x);
    case CR_LOG: return log(x);
    case CR_RSQRT: return 1.0 / sqrt(x);
    case CR_TANH: return tanh(x);
    case CR_SIN: return sin(x);
    case CR_COS: return cos(x);
    case CR_ERF: return erf(x);
    default: return 1.0 / (1.0 + exp(-x)); /* CR_SIGMOID */
    }
}

static long double f_ld(cr_op op, long double x)
{
    switch (op) {
    case CR_EXP: return expl(x);
    case CR_LOG: return logl(x);
    case CR_RSQRT: return 1.0L / sqrtl(x);
    case CR_TANH: return tanhl(x);
    case CR_SIN: return sinl(x);
    case CR_COS: return cosl(x);
    case CR_ERF: return erfl(x);
    default: return 1.0L / (1.0L + expl(-x)); /* CR_SIGMOID */
    }
}

/* The binary32 rounding of y when y * (1 -+ eps) rounds to one value. */
static int decide32(long double y, long double eps, uint32_t *out)
{
    if (isnan(y) || isinf(y) || y == 0) {
        *out = f2b((float)y);
        return 1;
    }
    float a = (float)(y - fabsl(y) * eps), b = (float)(y + fabsl(y) * eps);
    *out = f2b(a);
    return f2b(a) == f2b(b);
}

static int decide64(long double y, long double eps, uint64_t *out)
{
    if (isnan(y) || isinf(y) || y == 0) {
        *out = d2b((double)y);
        return 1;
    }
    double a = (double)(y - fabsl(y) * eps), b = (double)(y + fabsl(y) * eps);
    *out = d2b(a);
    return d2b(a) == d2b(b);
}

static void exact32(cr_op op, float x, cr_val *r)
{
    double d = x, y;
    switch (op) {
    case CR_SQRT: y = sqrt(d); break;
    case CR_RECIPROCAL: y = 1.0 / d; break;
    case CR_FLOOR: y = floor(d); break;
    case CR_CEIL: y = ceil(d); break;
    case CR_NEG: y = -d; break;
    case CR_ABS: y = fabs(d); break;
    default: /* CR_RELU: relu(-0) may be either zero */
        y = isnan(d) ? d : d > 0 ? d : 0.0;
        r->lo = r->hi = f2b((float)y);
        if (d == 0 && signbit(d))
            r->hi = f2b(-0.0f);
        r->approx = y;
        return;
    }
    r->lo = r->hi = f2b((float)y);
    r->approx = y;
}

static void exact64(cr_op op, double x, cr_val *r)
{
    double y;
    switch (op) {
    case CR_SQRT: y = sqrt(x); break;
    case CR_RECIPROCAL: y = 1.0 / x; break;
    case CR_FLOOR: y = floor(x); break;
    case CR_CEIL: y = ceil(x); break;
    case CR_NEG: y = -x; break;
    case CR_ABS: y = fabs(x); break;
    default:
        y = isnan(x) ? x : x > 0 ? x : 0.0;
        r->lo = r->hi = d2b(y);
        if (x == 0 && signbit(x))
            r->hi = d2b(-0.0);
        r->approx = y;
        return;
    }
    r->lo = r->hi = d2b(y);
    r->approx = y;
}

/* f32 -> f16 / bf16 by integer rounding of the bits (nearest even). */
static uint64_t narrow(uint32_t b, int ebits, int mant)
{
    int width = 1 + ebits + mant, bias = (1 << (ebits - 1)) - 1;
    uint32_t sign = (b >> 31) << (width - 1);
    uint32_t emax = (1u << ebits) - 1;
    int e = (int)((b >> 23) & 0xff);
    uint32_t m = b & 0x7fffff;
    if (e == 0xff)
        return m ? sign | (emax << mant) | (1u << (mant - 1))
                 : sign | (emax << mant);
    if (e == 0 && m == 0)
        return sign;
    /* value = sig * 2^(exp2), sig with 24 bits (normal) */
    uint64_t sig = e ? (m | 0x800000u) : m;
    int exp2 = (e ? e : 1) - 127 - 23;
    /* target quantum: 2^(E - mant) for a normal with exponent E, or the
    ** subnormal quantum 2^(1 - bias - mant) */
    int top = 63 - __builtin_clzll(sig) + exp2; /* floor(log2 value) */
    int q = (top < 1 - bias ? 1 - bias : top) - mant;
    int shift = q - exp2; /* drop `shift` low bits of sig */
    uint64_t r;
    if (shift <= 0)
        r = sig << -shift;
    else if (shift > 40)
        r = 0;
    else {
        uint64_t keep = sig >> shift, rem = sig & ((1ull << shift) - 1);
        uint64_t half = 1ull << (shift - 1);
        r = keep + (rem > half || (rem == half && (keep & 1)));
    }
    /* r * 2^q; encode: r < 2^mant is subnormal (at q = 1 - bias - mant) */
    int biased = q + mant + bias; /* exponent field for r in [2^mant, 2^(mant+1)) */
    if (r >= (1ull << (mant + 1))) {
        r >>= 1;
        biased++;
    }
    if (r < (1ull << mant))
        return sign | (uint32_t)r; /* subnormal (or zero) */
    if (biased >= (int)emax)
        return sign | (emax << mant);
    return sign | ((uint32_t)biased << mant) | ((uint32_t)r - (1u << mant));
}

int cr_cast_f32(kiln_dtype to, uint32_t xb, uint64_t *out)
{
    float x = b2f(xb);
    switch (to) {
    case KILN_F16: *out = narrow(xb, 5, 10); return 0;
    case KILN_BF16: *out = narrow(xb, 8, 7); return 0;
    case KILN_F32: *out = xb; return 0;
    case KILN_F64: *out = d2b((double)x); return 0;
    case KILN_BOOL: *out = x != 0 || isnan(x); return 0;
    case KILN_I32:
        *out = (uint32_t)(isnan(x) ? 0 : x >= 0x1p31f ? INT32_MAX
                          : x < -0x1p31f ? INT32_MIN : (int32_t)x);
        return 0;
    case KILN_I64:
        *out = (uint64_t)(isnan(x) ? 0 : x >= 0x1p63f ? INT64_MAX
                          : x < -0x1p63f ? INT64_MIN : (int64_t)x);
        return 0;
    default:
        return 1;
    }
}

int cr_eval(cr_op op, kiln_dtype dt, uint64_t xb, cr_val *r)
{
    r->undecided = 0;
    r->stage = 0;
    if (dt == KILN_F32) {
        float x = b2f((uint32_t)xb);
        if (!cr_op_transcendental(op)) {
            exact32(op, x, r);
            return 0;
        }
        double y = f_d(op, (double)x);
        uint32_t b;
        r->approx = y;
        r->stage = 1;
        if (decide32(y, 0x1p-47L, &b)) {
            r->lo = r->hi = b;
            return 0;
        }
        r->stage = 2;
        long double yl = f_ld(op, (long double)x);
        r->approx = (double)yl;
        if (decide32(yl, 0x1p-57L, &b)) {
            r->lo = r->hi = b;
            return 0;
        }
        r->undecided = 1;
        r->stage = 3;
        r->lo = f2b((float)(yl - fabsl(yl) * 0x1p-57L));
        r->hi = f2b((float)(yl + fabsl(yl) * 0x1p-57L));
        return 0;
    }
    if (dt != KILN_F64)
        return 1;
    double x = b2d(xb);
    if (!cr_op_transcendental(op)) {
        exact64(op, x, r);
        return 0;
    }
    long double yl = f_ld(op, (long double)x);
    uint64_t b;
    r->approx = (double)yl;
    r->stage = 2;
    if (decide64(yl, 0x1p-60L, &b)) {
        r->lo = r->hi = b;
        return 0;
    }
    r->undecided = 1;
    r->stage = 3;
    r->lo = d2b((double)(yl - fabsl(yl) * 0x1p-60L));
    r->hi = d2b((double)(yl + fabsl(yl) * 0x1p-60L));
    return 0;
}
