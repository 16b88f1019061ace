/*
** check_numeric.c -- the numeric comparison rules of the conformance suite
** (docs/conformance.md, "Output checks"): bit patterns of f16, bf16, f32
** and f64, the ULP distance on the ordered integer representation, the FTZ
** allowance, NaN rules, absolute bounds, and the per-output check kinds
** exact / ulp / abs / sumBound with per-element alternatives.
**
** Everything works on bit patterns, never on host float arithmetic of the
** values being judged, except |got - ref| for absolute bounds, which is
** evaluated in double (exact for f16/bf16/f32 operands).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"


/* Layout of a binary floating-point format, read from the one dtype table
** (KILN_DTYPE_TABLE in kiln.h: size and fraction bits; the exponent bits
** are what is left of the width after the sign). */
typedef struct fmt {
    int width, mant; /* total bits, mantissa (fraction) bits */
} fmt;

static int float_fmt(kiln_dtype dt, fmt *f)
{
    switch (dt) {
#define KILN_X_(id, value, text, size, ebits, mbits)                           \
    case id:                                                                   \
        f->width = 8 * (size);                                                 \
        f->mant = (mbits);                                                     \
        return (ebits) != 0;
        KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
    default:
        return 0;
    }
}

static uint64_t sign_bit(const fmt *f) { return (uint64_t)1 << (f->width - 1); }
static uint64_t mant_mask(const fmt *f) { return ((uint64_t)1 << f->mant) - 1; }
static uint64_t exp_mask(const fmt *f)
{
    return (sign_bit(f) - 1) & ~mant_mask(f);
}

int cf_is_float(kiln_dtype dt)
{
    fmt f;
    return float_fmt(dt, &f);
}

int cf_is_nan(kiln_dtype dt, uint64_t b)
{
    fmt f;
    return float_fmt(dt, &f) && (b & exp_mask(&f)) == exp_mask(&f) &&
           (b & mant_mask(&f)) != 0;
}

static int is_inf(kiln_dtype dt, uint64_t b)
{
    fmt f;
    return float_fmt(dt, &f) && (b & exp_mask(&f)) == exp_mask(&f) &&
           (b & mant_mask(&f)) == 0;
}

int cf_is_denormal(kiln_dtype dt, uint64_t b)
{
    fmt f;
    return float_fmt(dt, &f) && (b & exp_mask(&f)) == 0 &&
           (b & mant_mask(&f)) != 0;
}

int cf_is_zero(kiln_dtype dt, uint64_t b)
{
    fmt f;
    if (!float_fmt(dt, &f))
        return b == 0;
    return (b & ~sign_bit(&f)) == 0;
}

int cf_sign(kiln_dtype dt, uint64_t b)
{
    fmt f;
    if (!float_fmt(dt, &f))
        return 0;
    return (b & sign_bit(&f)) != 0;
}

double cf_to_double(kiln_dtype dt, uint64_t b)
{
    switch (dt) {
    case KILN_BOOL: return b ? 1.0 : 0.0;
    case KILN_I32: return (double)(int32_t)(uint32_t)b;
    case KILN_I64: return (double)(int64_t)b;
    case KILN_F32: { uint32_t u = (uint32_t)b; float x; memcpy(&x, &u, 4); return x; }
    case KILN_F64: { double x; memcpy(&x, &b, 8); return x; }
    default: break;
    }
    fmt f; /* f16 / bf16: decode by hand (exact in double) */
    if (!float_fmt(dt, &f))
        return 0.0;
    int ebits = f.width - 1 - f.mant, bias = (1 << (ebits - 1)) - 1;
    uint64_t e = (b & exp_mask(&f)) >> f.mant, m = b & mant_mask(&f);
    double s = cf_sign(dt, b) ? -1.0 : 1.0;
    if (e == ((uint64_t)1 << ebits) - 1)
        return m ? NAN : s * INFINITY;
    if (e == 0)
        return s * ldexp((double)m, 1 - bias - f.mant);
    return s * ldexp((double)(m | ((uint64_t)1 << f.mant)), (int)e - bias - f.mant);
}

/* The checker's own ULP distance, written apart from the runtime's
** kiln__ulp_distance (runtime/numeric.c) on purpose: this is the code that
** judges every backend, ref included, so a bug in the runtime's helper must
** not be able to pass its own results.  Only the format facts (the dtype
** table) are shared; tests/unit/test_conform_check.c and test_numeric.c
** check both implementations against worked values. */
uint64_t cf_ulp_distance(kiln_dtype dt, uint64_t a, uint64_t b)
{
    fmt f;
    if (!float_fmt(dt, &f))
        return a == b ? 0 : CF_ULP_INF;
    int na = cf_is_nan(dt, a), nb = cf_is_nan(dt, b);
    if (na || nb)
        return na && nb ? 0 : CF_ULP_INF;
    uint64_t s = sign_bit(&f);
    uint64_t ma = a & ~s, mb = b & ~s; /* magnitudes on the ordered line */
    if ((a & s) == (b & s))
        return ma > mb ? ma - mb : mb - ma;
    return ma + mb; /* opposite signs: distance through zero */
}

/* ------------------------------------------------------------ check kinds */

void cf_check_free(cf_check *c)
{
    if (c == NULL)
        return;
    free(c->max_per_element);
    free(c->bounds);
    for (size_t i = 0; i < c->n_alts; i++)
        free(c->alts[i].bits);
    free(c->alts);
    memset(c, 0, sizeof *c);
}

int cf_check_from_json(const json_t *j, const char *where, kiln_dtype dt,
                       size_t numel, cf_check *out, char *err, size_t cap)
{
    cf_check c;
    memset(&c, 0, sizeof c);
    const char *kind = NULL;
    char e[256];
    if (!json_is_object(j))
        return cf_fail(err, cap, "%s: a check must be an object", where);
    if (cf_json_string(j, "kind", where, &kind, err, cap))
        return 1;
    if (strcmp(kind, "exact") == 0) {
        c.kind = CF_CHECK_EXACT;
    } else if (strcmp(kind, "ulp") == 0) {
        c.kind = CF_CHECK_ULP;
        const json_t *mx = json_object_get(j, "max");
        const json_t *per = json_object_get(j, "maxPerElement");
        if ((mx == NULL) == (per == NULL))
            return cf_fail(err, cap, "%s: an ulp check needs exactly one of "
                        "'max' and 'maxPerElement'", where);
        if (mx != NULL) {
            if (!json_is_integer(mx) || json_integer_value(mx) < 0)
                return cf_fail(err, cap, "%s: 'max' must be an integer >= 0",
                            where);
            c.max_ulp = (uint64_t)json_integer_value(mx);
        } else if (json_is_array(per)) {
            if (json_array_size(per) != numel)
                return cf_fail(err, cap, "%s: maxPerElement has %zu entries for "
                            "%zu elements", where, json_array_size(per), numel);
            c.n_per = numel;
            c.max_per_element = calloc(numel ? numel : 1, sizeof(uint64_t));
            if (c.max_per_element == NULL)
                return cf_fail(err, cap, "%s: out of memory", where);
            for (size_t i = 0; i < numel; i++) {
                const json_t *x = json_array_get(per, i);
                if (!json_is_integer(x) || json_integer_value(x) < 0) {
                    cf_check_free(&c);
                    return cf_fail(err, cap, "%s: maxPerElement[%zu] must be a "
                                "non-negative integer", where, i);
                }
                c.max_per_element[i] = (uint64_t)json_integer_value(x);
            }
        } else {
            return cf_fail(err, cap, "%s: 'maxPerElement' must be a list of "
                        "integers >= 0", where);
        }
        if (!cf_is_float(dt))
            return cf_check_free(&c),
                   cf_fail(err, cap, "%s: ulp check on non-float dtype %s", where,
                        kiln_dtype_name(dt));
    } else if (strcmp(kind, "abs") == 0) {
        c.kind = CF_CHECK_ABS;
        const json_t *b = json_object_get(j, "bounds");
        if (!json_is_array(b) ||
            (json_array_size(b) != numel && json_array_size(b) != 1))
            return cf_fail(err, cap, "%s: 'bounds' must list one hex f64 per "
                        "element (%zu) or a single one", where, numel);
        c.n_per = numel;
        c.bounds = calloc(numel ? numel : 1, sizeof(double));
        if (c.bounds == NULL)
            return cf_fail(err, cap, "%s: out of memory", where);
        for (size_t i = 0; i < json_array_size(b); i++) {
            const json_t *x = json_array_get(b, i);
            uint64_t bits;
            if (!json_is_string(x) ||
                cf_hex_parse(json_string_value(x), KILN_F64, &bits, e,
                             sizeof e)) {
                cf_check_free(&c);
                return cf_fail(err, cap, "%s: bounds[%zu]: %s", where, i,
                            json_is_string(x) ? e : "must be a hex string");
            }
            double v = cf_to_double(KILN_F64, bits);
            if (!(v >= 0)) {
                cf_check_free(&c);
                return cf_fail(err, cap, "%s: bounds[%zu] is negative or NaN",
                            where, i);
            }
            if (json_array_size(b) == 1)
                for (size_t k = 0; k < numel; k++)
                    c.bounds[k] = v;
            else
                c.bounds[i] = v;
        }
    } else if (strcmp(kind, "sumBound") == 0) {
        c.kind = CF_CHECK_SUMBOUND;
        c.sum_u = dt == KILN_F64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
    } else {
        return cf_fail(err, cap, "%s: unknown check kind '%s' (exact, ulp, abs, "
                    "sumBound)", where, kind);
    }
    const json_t *ftz = json_object_get(j, "ftz");
    if (ftz != NULL && !json_is_boolean(ftz)) {
        cf_check_free(&c);
        return cf_fail(err, cap, "%s: 'ftz' must be true or false", where);
    }
    c.ftz = json_is_true(ftz);
    const json_t *alts = json_object_get(j, "alternatives");
    if (alts != NULL) {
        if (!json_is_object(alts)) {
            cf_check_free(&c);
            return cf_fail(err, cap, "%s: 'alternatives' must be an object", where);
        }
        c.alts = calloc(json_object_size(alts) + 1, sizeof *c.alts);
        if (c.alts == NULL) {
            cf_check_free(&c);
            return cf_fail(err, cap, "%s: out of memory", where);
        }
        const char *key;
        json_t *list;
        json_object_foreach((json_t *)alts, key, list) {
            /* canonical decimal only: "01", "-0", "+1", " 1" are not keys */
            char *end;
            unsigned long long idx = strtoull(key, &end, 10);
            if (key[0] < '0' || key[0] > '9' || (key[0] == '0' && key[1]) ||
                *end != '\0' || idx >= numel) {
                cf_check_free(&c);
                return cf_fail(err, cap, "%s: alternatives key '%s' is not an "
                            "element index below %zu", where, key, numel);
            }
            if (!json_is_array(list)) {
                cf_check_free(&c);
                return cf_fail(err, cap, "%s: alternatives[%s] must be a list",
                            where, key);
            }
            cf_alt *a = &c.alts[c.n_alts++];
            a->index = idx;
            a->bits = calloc(json_array_size(list) + 1, sizeof(uint64_t));
            if (a->bits == NULL) {
                cf_check_free(&c);
                return cf_fail(err, cap, "%s: out of memory", where);
            }
            for (size_t i = 0; i < json_array_size(list); i++) {
                const json_t *x = json_array_get(list, i);
                if (!json_is_string(x) ||
                    cf_hex_parse(json_string_value(x), dt, &a->bits[i], e,
                                 sizeof e)) {
                    cf_check_free(&c);
                    return cf_fail(err, cap, "%s: alternatives[%s][%zu]: %s", where,
                                key, i,
                                json_is_string(x) ? e : "must be a hex string");
                }
                a->n++;
            }
        }
    }
    *out = c;
    return 0;
}

/* Bit-exact equality where any NaN equals any NaN. */
static int same(kiln_dtype dt, uint64_t a, uint64_t b)
{
    return a == b || (cf_is_nan(dt, a) && cf_is_nan(dt, b));
}

static int alt_match(const cf_check *c, kiln_dtype dt, size_t k, uint64_t g)
{
    for (size_t i = 0; i < c->n_alts; i++)
        if (c->alts[i].index == k)
            for (size_t j = 0; j < c->alts[i].n; j++)
                if (same(dt, g, c->alts[i].bits[j]))
                    return 1;
    return 0;
}

static void fmt_value(kiln_dtype dt, uint64_t b, char *buf, size_t cap)
{
    int w = (int)kiln_dtype_size(dt) * 2;
    if (cf_is_float(dt))
        snprintf(buf, cap, "0x%0*llx (%.17g)", w, (unsigned long long)b,
                 cf_to_double(dt, b));
    else if (dt == KILN_BOOL)
        snprintf(buf, cap, "0x%llx", (unsigned long long)b);
    else
        snprintf(buf, cap, "0x%0*llx (%.0f)", w, (unsigned long long)b,
                 cf_to_double(dt, b));
}

/* |got - want| in double, for absolute checks: NaN/inf handled by caller. */
static double abs_diff(kiln_dtype dt, uint64_t g, uint64_t w)
{
    return fabs(cf_to_double(dt, g) - cf_to_double(dt, w));
}

int cf_compare(const cf_check *c, kiln_dtype dt, size_t numel,
               const void *got, const void *want, const double *sum_scale,
               cf_cmp_stats *stats, char *msg, size_t cap)
{
    /* bad: elements out of bound; the first one is described in msg, and
    ** the summary appended at the end says how many and the worst (a
    ** systematic error and a single stray element read differently). */
    size_t bad = 0, worst_k = 0;
    uint64_t worst_d = 0;
    double worst_diff = 0;
    for (size_t k = 0; k < numel; k++) {
        uint64_t g = cf_load_bits(dt, got, k), w = cf_load_bits(dt, want, k);
        uint64_t d = cf_ulp_distance(dt, g, w);
        int ok;
        double bound = 0, diff = 0;
        uint64_t ubound = 0;
        switch (c->kind) {
        case CF_CHECK_ULP:
            ubound = c->max_per_element ? c->max_per_element[k] : c->max_ulp;
            ok = d <= ubound;
            break;
        case CF_CHECK_ABS:
        case CF_CHECK_SUMBOUND:
            if (c->kind == CF_CHECK_ABS)
                bound = c->bounds[k];
            else {
                /* 2 gamma_n S, gamma_n = n u / (1 - n u): any summation
                ** order of n terms is within gamma_{n-1} of the exact sum
                ** (docs/numerics.md); gamma_n also covers S being ref's
                ** rounded sum of |terms|.  n u >= 1: no finite bound. */
                double nu = (double)c->sum_n * c->sum_u;
                bound = nu >= 1.0 ? INFINITY
                        : 2.0 * (nu / (1.0 - nu)) *
                              (sum_scale ? sum_scale[k] : 0.0);
            }
            if (cf_is_nan(dt, g) || cf_is_nan(dt, w) || is_inf(dt, w) ||
                is_inf(dt, g))
                ok = same(dt, g, w);
            else {
                diff = abs_diff(dt, g, w);
                ok = diff <= bound;
                if (stats && diff > stats->max_abs)
                    stats->max_abs = diff;
            }
            break;
        default:
            ok = same(dt, g, w);
            break;
        }
        /* FTZ: a denormal reference may come back as a same-signed zero. */
        if (!ok && c->ftz && cf_is_denormal(dt, w) && cf_is_zero(dt, g) &&
            cf_sign(dt, g) == cf_sign(dt, w))
            ok = 1, d = 0;
        if (!ok && alt_match(c, dt, k, g)) {
            ok = 1;
            if (stats)
                stats->acceptable = 1;
            continue; /* an alternative is not an error to measure */
        }
        /* ULP statistics only where ULPs are the measure: near zero an
        ** absolute bound allows huge ULP distances that mean nothing. */
        if (stats && cf_is_float(dt) && d != CF_ULP_INF &&
            (c->kind == CF_CHECK_EXACT || c->kind == CF_CHECK_ULP)) {
            if (d > stats->max_ulp)
                stats->max_ulp = d;
            stats->ulp_seen = 1;
        }
        if (!ok) {
            int worse = c->kind == CF_CHECK_ULP ? (bad == 0 || d > worst_d)
                                                : (bad == 0 || diff > worst_diff);
            if (worse)
                worst_k = k, worst_d = d, worst_diff = diff;
        }
        if (!ok && bad++ == 0) {
            char gs[64], ws[64];
            fmt_value(dt, g, gs, sizeof gs);
            fmt_value(dt, w, ws, sizeof ws);
            if (c->kind == CF_CHECK_ULP) {
                char ds[32];
                if (d == CF_ULP_INF)
                    snprintf(ds, sizeof ds, "NaN mismatch");
                else
                    snprintf(ds, sizeof ds, "%llu ulp", (unsigned long long)d);
                snprintf(msg, cap, "element %zu of %zu: got %s, expected %s: "
                         "%s > max %llu", k, numel, gs, ws, ds,
                         (unsigned long long)ubound);
            } else if (c->kind == CF_CHECK_EXACT) {
                snprintf(msg, cap, "element %zu of %zu: got %s, expected %s "
                         "(exact)", k, numel, gs, ws);
            } else {
                snprintf(msg, cap, "element %zu of %zu: got %s, expected %s: "
                         "|diff| %.6g > bound %.6g", k, numel, gs, ws, diff,
                         bound);
            }
        }
    }
    if (bad > 1) {
        size_t used = strlen(msg);
        char worst[64] = "";
        if (c->kind == CF_CHECK_ULP && worst_d != CF_ULP_INF)
            snprintf(worst, sizeof worst, "; worst %llu ulp at element %zu",
                     (unsigned long long)worst_d, worst_k);
        else if (c->kind == CF_CHECK_ABS || c->kind == CF_CHECK_SUMBOUND)
            snprintf(worst, sizeof worst, "; worst |diff| %.6g at element %zu",
                     worst_diff, worst_k);
        if (used < cap)
            snprintf(msg + used, cap - used, " (%zu of %zu elements out of "
                     "bound%s)", bad, numel, worst);
    }
    return bad != 0;
}
