/*
** test_sweep.c -- unit tests of the sweep category's machinery
** (conformance/crmath.c, sweep.c): the correctly rounded reference on
** values worked out by hand (or with Python's struct module), the sample
** recipe, the per-element judgement (bounds, undecided candidates, the
** fast_math flush) and the vector validation errors.
*/
#include <check.h>
#include <math.h>
#include <string.h>

#include "../../conformance/conform.h"

START_TEST(cr_casts)
{
    uint64_t o;
    /* bf16 ties: 0x3f808000 is halfway between 0x3f80 and 0x3f81 (even:
    ** 0x3f80); 0x3f818000 between 0x3f81 and 0x3f82 (even: 0x3f82) */
    ck_assert_int_eq(cr_cast_f32(KILN_BF16, 0x3f808000u, &o), 0);
    ck_assert_uint_eq(o, 0x3f80);
    cr_cast_f32(KILN_BF16, 0x3f818000u, &o);
    ck_assert_uint_eq(o, 0x3f82);
    cr_cast_f32(KILN_BF16, 0x3f808001u, &o);
    ck_assert_uint_eq(o, 0x3f81);
    /* f16: 1 + 2^-11 is a tie (even: 1.0 = 0x3c00); 1 + 3 * 2^-11 -> 0x3c02 */
    cr_cast_f32(KILN_F16, 0x3f801000u, &o);
    ck_assert_uint_eq(o, 0x3c00);
    cr_cast_f32(KILN_F16, 0x3f803000u, &o);
    ck_assert_uint_eq(o, 0x3c02);
    /* f16 overflow: 65520 (0x477ff000) is the tie to infinity */
    cr_cast_f32(KILN_F16, 0x477ff000u, &o);
    ck_assert_uint_eq(o, 0x7c00);
    cr_cast_f32(KILN_F16, 0x477fefffu, &o);
    ck_assert_uint_eq(o, 0x7bff);
    /* f16 subnormals: 2^-24 is the smallest (0x0001); 2^-25 a tie to 0 */
    cr_cast_f32(KILN_F16, 0x33800000u, &o);
    ck_assert_uint_eq(o, 0x0001);
    cr_cast_f32(KILN_F16, 0xb3000000u, &o);
    ck_assert_uint_eq(o, 0x8000);
    cr_cast_f32(KILN_F16, 0x33400000u, &o); /* 1.5 * 2^-25 -> 2^-24 */
    ck_assert_uint_eq(o, 0x0001);
    /* integers: truncation, saturation, NaN -> 0; bool */
    cr_cast_f32(KILN_I32, 0xc0700000u, &o); /* -3.75 */
    ck_assert_uint_eq(o, 0xfffffffdu);
    cr_cast_f32(KILN_I32, 0x4f000000u, &o); /* 2^31 */
    ck_assert_uint_eq(o, 0x7fffffffu);
    cr_cast_f32(KILN_I64, 0xff800000u, &o); /* -inf */
    ck_assert_uint_eq(o, 0x8000000000000000ull);
    cr_cast_f32(KILN_I32, 0x7fc00000u, &o);
    ck_assert_uint_eq(o, 0);
    cr_cast_f32(KILN_BOOL, 0x7fc00000u, &o);
    ck_assert_uint_eq(o, 1);
    cr_cast_f32(KILN_BOOL, 0x80000000u, &o);
    ck_assert_uint_eq(o, 0);
    ck_assert_int_ne(cr_cast_f32(KILN_F32 + 100, 0, &o), 0);
}
END_TEST

START_TEST(cr_values)
{
    cr_val r;
    ck_assert_int_eq(cr_eval(CR_EXP, KILN_F32, 0x3f800000u, &r), 0);
    ck_assert_uint_eq(r.lo, 0x402df854u); /* e */
    ck_assert_uint_eq(r.hi, r.lo);
    cr_eval(CR_LOG, KILN_F32, 0x40000000u, &r);
    ck_assert_uint_eq(r.lo, 0x3f317218u); /* ln 2 */
    cr_eval(CR_LOG, KILN_F32, 0xbf800000u, &r); /* log(-1): NaN */
    ck_assert(cf_is_nan(KILN_F32, r.lo));
    cr_eval(CR_LOG, KILN_F32, 0x80000000u, &r); /* log(-0) = -inf */
    ck_assert_uint_eq(r.lo, 0xff800000u);
    cr_eval(CR_RSQRT, KILN_F32, 0x40800000u, &r); /* 1/sqrt(4) */
    ck_assert_uint_eq(r.lo, 0x3f000000u);
    cr_eval(CR_EXP, KILN_F32, 0xc2c00000u, &r); /* exp(-96): subnormal */
    ck_assert_uint_eq(r.lo, 0x000005a9u);
    cr_eval(CR_SIGMOID, KILN_F32, 0xff800000u, &r);
    ck_assert_uint_eq(r.lo, 0);
    /* relu(-0): either zero, decided */
    cr_eval(CR_RELU, KILN_F32, 0x80000000u, &r);
    ck_assert_uint_eq(r.lo, 0);
    ck_assert_uint_eq(r.hi, 0x80000000u);
    ck_assert_int_eq(r.undecided, 0);
    cr_eval(CR_RECIPROCAL, KILN_F64, 0x4008000000000000ull, &r); /* 1/3 */
    ck_assert_uint_eq(r.lo, 0x3fd5555555555555ull);
    ck_assert_int_ne(cr_eval(CR_EXP, KILN_F16, 0, &r), 0);
    ck_assert_int_eq(cr_op_parse("sigmoid"), CR_SIGMOID);
    ck_assert_int_eq(cr_op_parse("pow"), -1);
}
END_TEST

static const char sweep_kf[] =
    "kiln.fusion 1\n%0 = input f32 [?]\n%1 = log %0\noutput %1\n";

static json_t *sweep_test(const char *fusion, const char *bound)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"fusion\": \"%s\", \"sweep\": {\"op\": \"log\", \"from\": "
             "\"f32\", \"to\": \"f32\", \"count\": 6000, \"seed\": 5}, "
             "\"bound\": %s}", fusion, bound);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_ptr_nonnull(j);
    return j;
}

START_TEST(sample_and_json)
{
    cf_sweep s;
    char err[256];
    json_t *j = sweep_test("kiln.fusion 1\\n%0 = input f32 [?]\\n%1 = log "
                           "%0\\noutput %1\\n", "{\"ulp\": 1, \"ftz\": false}");
    ck_assert_int_eq(cf_sweep_from_json(j, &s, err, sizeof err), 0);
    ck_assert_int_eq(s.op, CR_LOG);
    ck_assert_uint_eq(s.count, 6000);
    char kf[160];
    cf_sweep_fusion(&s, kf, sizeof kf);
    ck_assert_str_eq(kf, sweep_kf);
    /* fixed inputs: k = 10 * e + fraction index, sign after 2560 */
    ck_assert_uint_eq(cf_sweep_fixed_count(KILN_F32), 5120);
    ck_assert_uint_eq(cf_sweep_input(&s, 0), 0);
    ck_assert_uint_eq(cf_sweep_input(&s, 9), 0x007fffffu);
    ck_assert_uint_eq(cf_sweep_input(&s, 10 * 127 + 5), 0x3f808000u);
    ck_assert_uint_eq(cf_sweep_input(&s, 10 * 255), 0x7f800000u);
    ck_assert_uint_eq(cf_sweep_input(&s, 2560 + 10 * 255 + 7), 0xffc00000u);
    /* then splitmix64 outputs (high half) from seed 5 */
    uint64_t st = 5;
    ck_assert_uint_eq(cf_sweep_input(&s, 5120), cf_splitmix64(&st) >> 32);
    ck_assert_uint_eq(cf_sweep_input(&s, 5121), cf_splitmix64(&st) >> 32);
    json_decref(j);
    /* a fusion other than the op's own, a bad bound */
    j = sweep_test("kiln.fusion 1\\n%0 = input f32 [?]\\n%1 = exp "
                   "%0\\noutput %1\\n", "{\"ulp\": 1, \"ftz\": false}");
    ck_assert_int_ne(cf_sweep_from_json(j, &s, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "fusion"));
    json_decref(j);
    j = sweep_test("x", "{\"ulp\": 1, \"abs\": 0.5, \"ftz\": false}");
    ck_assert_int_ne(cf_sweep_from_json(j, &s, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "absWithin"));
    json_decref(j);
    j = sweep_test("x", "{\"ulp\": 1, \"ftz\": false, \"max\": 2}");
    ck_assert_int_ne(cf_sweep_from_json(j, &s, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "unknown field"));
    json_decref(j);
}
END_TEST

START_TEST(judge_bounds)
{
    cf_sweep s;
    memset(&s, 0, sizeof s);
    s.op = CR_LOG;
    s.from = s.to = KILN_F32;
    s.has_ulp = 1;
    s.ulp = 1;
    /* log 2 = 0x3f317218: 1 ulp passes, 3 ulp fails and is reported */
    uint32_t x[3] = {0x40000000u, 0x40000000u, 0xbf800000u};
    uint32_t g[3] = {0x3f317219u, 0x3f31721bu, 0x7fc00001u};
    cf_sweep_stats st;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 3, x, g, &st);
    ck_assert_uint_eq(st.n, 3);
    ck_assert_uint_eq(st.over, 1);
    ck_assert_uint_eq(st.fail_ulp, 3);
    ck_assert_uint_eq(st.fail_got, 0x3f31721bu);
    ck_assert_uint_eq(st.worst_ulp, 3);
    /* a NaN where a number is due fails */
    g[0] = 0x7fc00000u;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 1);
    /* ulpPerAbsX: exp(-96) is 0x5a9; 0 is 1449 ulp away: allowed with
    ** 2 + floor(96 * 16) but not with 2 + floor(96 * 1.173) = 114 */
    s.op = CR_EXP;
    s.ulp = 2;
    s.ulp_per_abs_x = 16;
    x[0] = 0xc2c00000u;
    g[0] = 0;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 0);
    s.ulp_per_abs_x = 1.173;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 1);
    ck_assert_uint_eq(st.fail_allowed, 114);
    /* ftz: the subnormal result may be +0 (not -0) */
    s.ftz = 1;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 0);
    g[0] = 0x80000000u;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 1);
    /* ftz: a subnormal input may read as zero: neg(2^-149) = -0 */
    s.op = CR_NEG;
    s.ulp = 0;
    s.ulp_per_abs_x = 0;
    x[0] = 1;
    g[0] = 0x80000000u;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 0);
    s.ftz = 0;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 1);
    /* abs within [lo, hi], unbounded outside: fast sin */
    s.op = CR_SIN;
    s.has_ulp = 0;
    s.has_abs = 1;
    s.abs = 0x1p-21;
    s.abs_lo = -M_PI;
    s.abs_hi = M_PI;
    x[0] = 0x3f800000u; /* sin 1 = 0.84147098 = 0x3f576aa4 */
    g[0] = 0x3f576aa4u + 16; /* 16 ulp = 2^-20: over 2^-21 */
    x[1] = 0x49742400u; /* 1e6: unbounded */
    g[1] = 0x3f800000u;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 2, x, g, &st);
    ck_assert_uint_eq(st.over, 1);
    ck_assert_uint_eq(st.unchecked, 1);
    g[0] = 0x3f576aa4u + 3;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 0);
    /* a cast: exact */
    memset(&s, 0, sizeof s);
    s.op = CR_CAST;
    s.from = KILN_F32;
    s.to = KILN_BF16;
    s.has_ulp = 1;
    uint16_t h[2] = {0x3f80, 0x3f81};
    x[0] = x[1] = 0x3f808000u;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 2, x, h, &st);
    ck_assert_uint_eq(st.over, 1);
    ck_assert_uint_eq(st.fail_got, 0x3f81);
    /* fast_math casts: a subnormal input may read as zero (CUDA's
    ** cvt.ftz.f64.f32 gives +0 for 2^-149; x != 0 to bool gives false) */
    uint64_t dz = 0;
    x[0] = 1;
    s.to = KILN_F64;
    s.ftz = 1;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, &dz, &st);
    ck_assert_uint_eq(st.over, 0);
    s.ftz = 0;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, &dz, &st);
    ck_assert_uint_eq(st.over, 1);
    unsigned char bz = 0;
    s.to = KILN_BOOL;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, &bz, &st);
    ck_assert_uint_eq(st.over, 1);
    s.ftz = 1;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, &bz, &st);
    ck_assert_uint_eq(st.over, 0);
    /* fast_math sigmoid (docs/numerics.md): sigmoid(-85) = 0x022586e0;
    ** 150 ulp off (the fast exp's error there) passes 16 + floor(85 *
    ** 2.346) = 215, not a flat 16 */
    memset(&s, 0, sizeof s);
    s.op = CR_SIGMOID;
    s.from = s.to = KILN_F32;
    s.has_ulp = 1;
    s.ulp = 16;
    s.ulp_per_abs_x = 2.346;
    s.ftz = 1;
    x[0] = 0xc2aa0000u;
    g[0] = 0x022586e0u - 150;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 0);
    s.ulp_per_abs_x = 0;
    memset(&st, 0, sizeof st);
    cf_sweep_check(&s, 1, x, g, &st);
    ck_assert_uint_eq(st.over, 1);
    ck_assert_uint_eq(st.fail_allowed, 16);
}
END_TEST

Suite *sweep_suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("crmath");
    tcase_add_test(tc, cr_casts);
    tcase_add_test(tc, cr_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("sweep");
    tcase_add_test(tc, sample_and_json);
    tcase_add_test(tc, judge_bounds);
    suite_add_tcase(s, tc);
    return s;
}
