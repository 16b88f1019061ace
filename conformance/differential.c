/*
** differential.c -- input generation for the `differential` category
** (docs/conformance.md, "Differential inputs").  The recipe is part of the
** vector format: any implementation that follows it draws the same inputs
** from the same seed, so a failure is reproducible anywhere.
**
**   state = seed; next(): state += 0x9e3779b97f4a7c15 (mod 2^64),
**     z = state; z = (z ^ z>>30) * 0xbf58476d1ce4e5b9;
**     z = (z ^ z>>27) * 0x94d049bb133111eb; return z ^ z>>31
**   One stream per test; inputs in declaration order, elements of each in
**   row-major order, one draw per element.
**   uniform(lo, hi): u = (next() >> 11) * 2^-53; x = lo + (hi - lo) * u in
**     binary64 (no contraction), then rounded to the dtype to nearest even.
**   ints(lo, hi): v = lo + next() mod (hi - lo + 1) (inclusive range), then
**     converted to the dtype (bool: v != 0).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"


uint64_t cf_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Round a binary64 value to a binary format of `mant` fraction bits and
** `ebits` exponent bits, to nearest even; returns its bit pattern. */
static uint64_t round_to_format(double x, int ebits, int mant)
{
    int width = 1 + ebits + mant, bias = (1 << (ebits - 1)) - 1;
    uint64_t sign = signbit(x) ? (uint64_t)1 << (width - 1) : 0;
    uint64_t emax = ((uint64_t)1 << ebits) - 1;
    if (isnan(x))
        return (emax << mant) | ((uint64_t)1 << (mant - 1));
    double a = fabs(x);
    if (isinf(a))
        return sign | (emax << mant);
    if (a == 0)
        return sign;
    int e;
    frexp(a, &e);
    int E = e - 1; /* a in [2^E, 2^(E+1)) */
    if (E < 1 - bias) { /* subnormal range: quantum 2^(1-bias-mant) */
        double r = rint(ldexp(a, mant - (1 - bias)));
        return sign | (uint64_t)r; /* r == 2^mant encodes the min normal */
    }
    double r = rint(ldexp(a, mant - E));
    if (r >= ldexp(1.0, mant + 1)) {
        r = ldexp(1.0, mant);
        E++;
    }
    if ((uint64_t)(E + bias) >= emax)
        return sign | (emax << mant);
    return sign | ((uint64_t)(E + bias) << mant) |
           ((uint64_t)r - ((uint64_t)1 << mant));
}

static uint64_t double_to_bits(kiln_dtype dt, double x)
{
    switch (dt) {
    case KILN_F16: return round_to_format(x, 5, 10);
    case KILN_BF16: return round_to_format(x, 8, 7);
    case KILN_F32: return round_to_format(x, 8, 23);
    default: { uint64_t b; memcpy(&b, &x, 8); return b; }
    }
}

int cf_diff_dist(const json_t *input, const char *where, kiln_dtype dt,
                 cf_dist *d, char *err, size_t cap)
{
    const json_t *dist = json_object_get(input, "dist");
    const char *kind = NULL;
    char w[160];
    snprintf(w, sizeof w, "%s.dist", where);
    if (!json_is_object(dist))
        return cf_fail(err, cap, "%s: missing or malformed 'dist'", where);
    if (cf_json_string(dist, "kind", w, &kind, err, cap))
        return 1;
    const json_t *lo = json_object_get(dist, "lo"), *hi = json_object_get(dist, "hi");
    memset(d, 0, sizeof *d);
    d->uniform = strcmp(kind, "uniform") == 0;
    if (!d->uniform && strcmp(kind, "ints") != 0)
        return cf_fail(err, cap, "%s: unknown kind '%s' (uniform, ints)", w, kind);
    if (d->uniform ? (!json_is_number(lo) || !json_is_number(hi) ||
                      !(json_number_value(lo) <= json_number_value(hi)) ||
                      !cf_is_float(dt))
                   : (!json_is_integer(lo) || !json_is_integer(hi) ||
                      json_integer_value(hi) < json_integer_value(lo)))
        return cf_fail(err, cap, "%s: %s needs numbers lo <= hi%s", w, kind,
                    d->uniform ? " and a float dtype" : " (integers)");
    if (d->uniform) {
        d->flo = json_number_value(lo);
        d->fhi = json_number_value(hi);
    } else {
        d->ilo = json_integer_value(lo);
        d->ihi = json_integer_value(hi);
    }
    return 0;
}

int cf_diff_generate(const json_t *input, const char *where, uint64_t *state,
                     cf_tensor *out, char *err, size_t cap)
{
    cf_tensor t;
    cf_dist d;
    if (cf_tensor_from_json(input, where, 0, &t, err, cap))
        return 1;
    if (t.strided || t.data != NULL) {
        cf_tensor_free(&t);
        return cf_fail(err, cap, "%s: differential inputs are contiguous and "
                    "generated (no 'strides', no 'data')", where);
    }
    if (cf_diff_dist(input, where, t.dtype, &d, err, cap))
        return 1;
    t.data = calloc(t.numel ? t.numel : 1, kiln_dtype_size(t.dtype));
    if (t.data == NULL)
        return cf_fail(err, cap, "%s: out of memory", where);
    for (size_t k = 0; k < t.numel; k++) {
        uint64_t r = cf_splitmix64(state), bits;
        if (d.uniform) {
            double l = d.flo, h = d.fhi;
            volatile double span = h - l; /* keep the rounding steps apart */
            volatile double prod = span * ((double)(r >> 11) * 0x1p-53);
            bits = double_to_bits(t.dtype, l + prod);
        } else {
            int64_t l = d.ilo, h = d.ihi;
            uint64_t range = (uint64_t)h - (uint64_t)l + 1; /* 0: full range */
            int64_t v = (int64_t)((uint64_t)l + (range ? r % range : r));
            switch (t.dtype) {
            case KILN_BOOL: bits = v != 0; break;
            case KILN_I32: bits = (uint32_t)(int32_t)v; break;
            case KILN_I64: bits = (uint64_t)v; break;
            default: bits = double_to_bits(t.dtype, (double)v); break;
            }
        }
        cf_store_bits(t.dtype, t.data, k, bits);
    }
    *out = t;
    return 0;
}
