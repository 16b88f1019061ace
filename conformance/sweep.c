/*
** sweep.c -- the `sweep` category (docs/conformance.md, "sweep"): a
** deterministic sample of inputs of one unary op (or a cast from f32),
** generated at run time, checked element by element against the correctly
** rounded reference of crmath.c under the documented bounds.
**
** The sample (normative; testgen/sweep.py writes the same "inputsFirst"):
**   fixed inputs first: for sign 0, 1, for every exponent field e (0..255
**   for f32, 0..2047 for f64), for the 10 fractions m below: the bit
**   pattern sign|e|m (every special value, both ends of every binade, and
**   round-to-nearest ties of the narrowing casts);
**   then input k (k >= F, F the number of fixed inputs): state = seed +
**   (k - F + 1) * 0x9e3779b97f4a7c15, mixed as in splitmix64
**   (differential.c); f32 takes the high 32 bits, f64 all 64.
** With `kiln conform --sweep all`, an f32 sweep runs every bit pattern
** 0 .. 2^32 - 1 instead (its --sweep-shard share of them).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

static const double ulp_cap = 1e18; /* an allowed ulp count past any use */

uint64_t cf_sweep_fixed_count(kiln_dtype dt)
{
    return dt == KILN_F32 ? 2 * 256 * 10 : 2 * 2048 * 10;
}

uint64_t cf_sweep_input(const cf_sweep *s, uint64_t k)
{
    int f32 = s->from == KILN_F32;
    int ebits = f32 ? 8 : 11, mant = f32 ? 23 : 52;
    uint64_t nf = cf_sweep_fixed_count(s->from);
    if (k < nf) {
        /* fractions: binade edges, and the ties of the narrowing casts
        ** (f32: to f16 and bf16; f64: to f32 and bf16), both parities */
        uint64_t mmax = ((uint64_t)1 << mant) - 1;
        const uint64_t ms[2][10] = {
            {0, 1, 2, 0x1000, 0x3000, 0x8000, 0x18000, (uint64_t)1 << 22,
             mmax - 1, mmax},
            {0, 1, 2, (uint64_t)1 << 28, (uint64_t)3 << 28,
             (uint64_t)1 << 44, (uint64_t)3 << 44, (uint64_t)1 << 51,
             mmax - 1, mmax}};
        uint64_t m = ms[!f32][k % 10], e = (k / 10) % ((uint64_t)1 << ebits);
        uint64_t sign = k / (10 << ebits);
        return (sign << (ebits + mant)) | (e << mant) | m;
    }
    uint64_t state = s->seed + (k - nf) * 0x9e3779b97f4a7c15ULL;
    uint64_t r = cf_splitmix64(&state);
    return f32 ? r >> 32 : r;
}

void cf_sweep_fusion(const cf_sweep *s, char *buf, size_t cap)
{
    const char *fr = kiln_dtype_name(s->from), *to = kiln_dtype_name(s->to);
    if (s->op == CR_CAST)
        snprintf(buf, cap, "kiln.fusion 1\n%%0 = input %s [?]\n%%1 = cast %%0 "
                 "%s\noutput %%1\n", fr, to);
    else
        snprintf(buf, cap, "kiln.fusion 1\n%%0 = input %s [?]\n%%1 = %s %%0\n"
                 "output %%1\n", fr, cr_op_name(s->op));
}

static int get_dtype(const json_t *o, const char *key, kiln_dtype *dt,
                     char *err, size_t cap)
{
    const char *name = NULL;
    if (cf_json_string(o, key, "sweep", &name, err, cap))
        return 1;
    if (kiln_dtype_parse(name, dt) != KILN_OK)
        return cf_fail(err, cap, "sweep.%s: '%.20s' is not a dtype", key, name);
    return 0;
}

static int only_keys(const json_t *o, const char *where,
                     const char *const *keys, char *err, size_t cap)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        int ok = 0;
        for (int i = 0; keys[i]; i++)
            ok |= strcmp(keys[i], k) == 0;
        if (!ok)
            return cf_fail(err, cap, "%s: unknown field '%.40s'", where, k);
    }
    return 0;
}

int cf_sweep_from_json(const json_t *t, cf_sweep *s, char *err, size_t cap)
{
    static const char *const skeys[] = {"op", "from", "to", "count", "seed",
                                        NULL};
    static const char *const bkeys[] = {"ulp", "ulpPerAbsX", "abs",
                                        "absWithin", "ftz", NULL};
    const json_t *sw = json_object_get(t, "sweep"), *b = json_object_get(t, "bound");
    const char *op = NULL, *fusion = NULL;
    memset(s, 0, sizeof *s);
    if (!json_is_object(sw) || !json_is_object(b))
        return cf_fail(err, cap, "'sweep' and 'bound' must be objects");
    if (only_keys(sw, "sweep", skeys, err, cap) ||
        only_keys(b, "bound", bkeys, err, cap) ||
        cf_json_string(sw, "op", "sweep", &op, err, cap) ||
        get_dtype(sw, "from", &s->from, err, cap) ||
        get_dtype(sw, "to", &s->to, err, cap) ||
        cf_json_string(t, "fusion", "test", &fusion, err, cap))
        return 1;
    int o = cr_op_parse(op);
    if (o < 0)
        return cf_fail(err, cap, "sweep.op: '%.20s' is not a sweep op", op);
    s->op = (cr_op)o;
    if (s->from != KILN_F32 && s->from != KILN_F64)
        return cf_fail(err, cap, "sweep.from: f32 or f64");
    if (s->op == CR_CAST ? s->from != KILN_F32 || s->to == KILN_F32
                         : s->to != s->from)
        return cf_fail(err, cap, "sweep.to: a cast goes from f32 to another "
                       "dtype; any other op keeps the dtype");
    const json_t *c = json_object_get(sw, "count"), *sd = json_object_get(sw, "seed");
    if (!json_is_integer(c) || json_integer_value(c) < (json_int_t)
            cf_sweep_fixed_count(s->from) ||
        json_integer_value(c) > ((json_int_t)1 << 24) || !json_is_integer(sd) ||
        json_integer_value(sd) < 0)
        return cf_fail(err, cap, "sweep.count: an integer from the number of "
                       "fixed inputs (%llu) to 2^24; sweep.seed: an integer "
                       ">= 0", (unsigned long long)cf_sweep_fixed_count(s->from));
    s->count = (uint64_t)json_integer_value(c);
    s->seed = (uint64_t)json_integer_value(sd);
    const json_t *u = json_object_get(b, "ulp"), *k = json_object_get(b, "ulpPerAbsX");
    const json_t *a = json_object_get(b, "abs"), *w = json_object_get(b, "absWithin");
    const json_t *f = json_object_get(b, "ftz");
    if (!json_is_null(u) && !(json_is_integer(u) && json_integer_value(u) >= 0))
        return cf_fail(err, cap, "bound.ulp: an integer >= 0, or null");
    s->has_ulp = json_is_integer(u);
    s->ulp = s->has_ulp ? (uint64_t)json_integer_value(u) : 0;
    if (k != NULL && !(json_is_number(k) && json_number_value(k) >= 0))
        return cf_fail(err, cap, "bound.ulpPerAbsX: a number >= 0");
    s->ulp_per_abs_x = k ? json_number_value(k) : 0;
    if ((a == NULL) != (w == NULL) ||
        (a && (!json_is_number(a) || !(json_number_value(a) >= 0) ||
               !json_is_array(w) || json_array_size(w) != 2 ||
               !json_is_number(json_array_get(w, 0)) ||
               !json_is_number(json_array_get(w, 1)))))
        return cf_fail(err, cap, "bound.abs (a number >= 0) and "
                       "bound.absWithin ([lo, hi]) come together");
    if (a) {
        s->has_abs = 1;
        s->abs = json_number_value(a);
        s->abs_lo = json_number_value(json_array_get(w, 0));
        s->abs_hi = json_number_value(json_array_get(w, 1));
    }
    if (!json_is_boolean(f))
        return cf_fail(err, cap, "bound.ftz: true or false");
    s->ftz = json_is_true(f);
    char want[160];
    cf_sweep_fusion(s, want, sizeof want);
    if (strcmp(want, fusion) != 0)
        return cf_fail(err, cap, "fusion: must be the sweep's own fusion "
                       "(input, one %s node, output)", op);
    return 0;
}

static int is_sub32(uint64_t b)
{
    return (b & 0x7f800000u) == 0 && (b & 0x7fffffu) != 0;
}

/* The reference at x: cr_val of the op or the cast. */
static void ref_at(const cf_sweep *s, uint64_t x, cr_val *r)
{
    if (s->op == CR_CAST) {
        memset(r, 0, sizeof *r);
        cr_cast_f32(s->to, (uint32_t)x, &r->lo);
        r->hi = r->lo;
        r->approx = cf_to_double(s->to, r->lo);
        return;
    }
    cr_eval(s->op, s->from, x, r);
}

/* 0 when got passes at x against r; else the ulp distance (>= 1).
** *unchecked: 0 judged in ulp, 1 not bounded here, 2 judged in abs. */
static uint64_t judge(const cf_sweep *s, uint64_t x, uint64_t got,
                      const cr_val *r, uint64_t *dist, int *unchecked)
{
    kiln_dtype to = s->to;
    double xd = cf_to_double(s->from, x);
    uint64_t d1 = cf_ulp_distance(to, got, r->lo);
    uint64_t d2 = cf_ulp_distance(to, got, r->hi);
    uint64_t d = d1 < d2 ? d1 : d2;
    *dist = d;
    if (cf_is_nan(to, r->lo) || cf_is_nan(to, got))
        return d; /* 0 when both are NaN */
    if (s->has_abs && xd >= s->abs_lo && xd <= s->abs_hi) {
        double g = cf_to_double(to, got);
        *unchecked = 2;
        return fabs(g - r->approx) <= s->abs || d == 0 ? 0 : (d ? d : 1);
    }
    if (!s->has_ulp) {
        *unchecked = 1;
        return 0;
    }
    double allow = (double)s->ulp + floor(fabs(xd) * s->ulp_per_abs_x);
    if (!(allow < ulp_cap))
        allow = ulp_cap;
    return (double)d <= allow ? 0 : d;
}

void cf_sweep_check(const cf_sweep *s, size_t n, const void *xs,
                    const void *gots, cf_sweep_stats *st)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = cf_load_bits(s->from, xs, i);
        uint64_t got = cf_load_bits(s->to, gots, i);
        cr_val r;
        uint64_t d = 0;
        int unchecked = 0;
        ref_at(s, x, &r);
        uint64_t bad = judge(s, x, got, &r, &d, &unchecked);
        if (bad && s->ftz && s->from == KILN_F32) {
            /* fast_math: a subnormal input may read as a zero of its sign,
            ** a subnormal result may be a zero of its sign */
            uint64_t dz = 0;
            int uz = 0;
            cr_val rz;
            if (is_sub32(x)) {
                ref_at(s, x & 0x80000000u, &rz);
                if (!judge(s, x & 0x80000000u, got, &rz, &dz, &uz))
                    bad = 0, d = dz;
            }
            if (bad && s->to == KILN_F32 && fabs(r.approx) < 0x1p-126 &&
                (got & 0x7fffffffu) == 0 &&
                (got >> 31) == (uint64_t)(signbit(r.approx) != 0))
                bad = 0, d = 0;
        }
        st->n++;
        st->undecided += (uint64_t)r.undecided;
        st->unchecked += (uint64_t)(unchecked == 1);
        if (!unchecked && d != CF_ULP_INF &&
            (!st->worst_set || d > st->worst_ulp)) {
            st->worst_set = 1;
            st->worst_ulp = d;
            st->worst_x = x;
            st->worst_got = got;
            st->worst_want = r.lo;
        }
        if (bad) {
            if (st->over == 0) {
                st->fail_x = x;
                st->fail_got = got;
                st->fail_want = r.lo;
                st->fail_ulp = d;
                st->fail_abs = unchecked == 2;
                st->fail_allowed = s->ulp +
                    (uint64_t)floor(fabs(cf_to_double(s->from, x)) *
                                    s->ulp_per_abs_x);
            }
            st->over++;
        }
    }
}
