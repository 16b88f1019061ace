/*
** test_numeric.c -- runtime/numeric.c against worked values: the cast rules
** numeric.h states (round to nearest even with one rounding, ties, gradual
** underflow, overflow to infinity, NaN kept and quieted, saturating
** float -> int with NaN -> 0, wrapping int -> int, bool), element
** load/store and kiln__convert, and the ULP / FTZ helpers.  Every expected
** bit pattern is written out here (worked by hand from IEEE 754), never
** computed by the code under test; the ULP distance is also compared with
** the conformance checker's own implementation (conformance/
** check_numeric.c), which is written apart from it on purpose.  (The casts
** as the ref backend runs them are in test_ref.c.)
*/
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "exec_util.h"
#include "numeric.h"
#include "../../conformance/conform.h"

/* f64 -> f16: ties to even, subnormals, overflow, NaN, and one rounding. */
START_TEST(narrow_to_f16)
{
    static const struct {
        double in;
        uint16_t want;
    } c[] = {
        {1.0, 0x3c00},
        {-2.0, 0xc000},
        {-0.0, 0x8000},
        {65504.0, 0x7bff},          /* the largest finite */
        {65519.0, 0x7bff},          /* below the midpoint to 2^16 */
        {65520.0, 0x7c00},          /* the midpoint: even is 2^16, overflow */
        {1e300, 0x7c00},
        {-1e300, 0xfc00},
        {0x1p-24, 0x0001},          /* the smallest subnormal */
        {0x1p-25, 0x0000},          /* half of it: ties to even (0) */
        {0x1.8p-24, 0x0002},        /* 1.5 of it: ties to even (2) */
        {0x1.0000000000001p-25, 0x0001}, /* just above the tie */
        {0x1p-14, 0x0400},          /* the smallest normal */
        {1.0 + 0x1p-11, 0x3c00},    /* tie between 1 and 1 + 2^-10: even */
        {1.0 + 3 * 0x1p-11, 0x3c02},/* tie, odd below: up */
        /* just above the tie: through f32 first it would become the tie
        ** and round down to 1.0 (double rounding) */
        {1.0 + 0x1p-11 + 0x1p-30, 0x3c01},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        ck_assert_msg(kiln__f64_to_f16(c[i].in) == c[i].want, "%a -> 0x%04x, want 0x%04x",
                      c[i].in, kiln__f64_to_f16(c[i].in), c[i].want);
    /* NaN: sign and top payload bits kept, quiet bit set */
    ck_assert_uint_eq(kiln__f64_to_f16(tu_f64(0x7ff8000000000000ull)), 0x7e00);
    ck_assert_uint_eq(kiln__f64_to_f16(tu_f64(0xfff0000000000001ull)), 0xfe00);
    ck_assert_uint_eq(kiln__f64_to_f16(tu_f64(0x7ff4000000000000ull)), 0x7f00);
    /* f32 -> f16 is the same rounding */
    ck_assert_uint_eq(kiln__f32_to_f16(65520.0f), 0x7c00);
    ck_assert_uint_eq(kiln__f32_to_f16(0x1p-25f), 0x0000);
}
END_TEST

START_TEST(narrow_to_bf16_and_f32)
{
    ck_assert_uint_eq(kiln__f64_to_bf16(1.0), 0x3f80);
    ck_assert_uint_eq(kiln__f64_to_bf16(1.0 + 0x1p-8), 0x3f80);     /* tie: even */
    ck_assert_uint_eq(kiln__f64_to_bf16(1.0 + 3 * 0x1p-8), 0x3f82); /* tie: up */
    ck_assert_uint_eq(kiln__f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
    ck_assert_uint_eq(kiln__f64_to_bf16(0x1p128), 0x7f80); /* overflow */
    ck_assert_uint_eq(kiln__f64_to_bf16(0x1p-133), 0x0001);  /* smallest subnormal */
    ck_assert_uint_eq(kiln__f32_to_bf16(1.0f), 0x3f80);
    float snan;
    uint32_t sb = 0x7f800001u; /* signalling NaN: quieted, payload truncated */
    memcpy(&snan, &sb, 4);
    ck_assert_uint_eq(kiln__f32_to_bf16(snan), 0x7fc0);
    ck_assert_uint_eq(tu_bits(kiln__f64_to_f32(1.0 + 0x1p-24)), 0x3f800000u); /* tie: even */
    ck_assert_uint_eq(tu_bits(kiln__f64_to_f32(1.0 + 3 * 0x1p-24)), 0x3f800002u);
    ck_assert_uint_eq(tu_bits(kiln__f64_to_f32(0x1p-150)), 0x00000000u);  /* tie to 0 */
    ck_assert_uint_eq(tu_bits(kiln__f64_to_f32(0x1.8p-149)), 0x00000002u);
    ck_assert_uint_eq(tu_bits(kiln__f64_to_f32(-0x1p200)), 0xff800000u);
}
END_TEST

/* Integers to floats are rounded once from the exact integer. */
START_TEST(integers_to_floats)
{
    ck_assert_uint_eq(tu_bits(kiln__i64_to_f32(16777217)), 0x4b800000u); /* 2^24+1: even */
    ck_assert_uint_eq(tu_bits(kiln__i64_to_f32(16777219)), 0x4b800002u); /* 2^24+3: up */
    ck_assert_uint_eq(tu_bits(kiln__i64_to_f32(INT64_MAX)), 0x5f000000u);
    ck_assert_uint_eq(tu_bits(kiln__i64_to_f32(INT64_MIN)), 0xdf000000u);
    ck_assert_uint_eq(kiln__i64_to_bf16(257), 0x4380); /* tie between 256 and 258 */
    ck_assert_uint_eq(kiln__i64_to_bf16(259), 0x4382);
    ck_assert_uint_eq(kiln__i64_to_f16(2049), 0x6800);  /* tie: even (2048) */
    ck_assert_uint_eq(kiln__i64_to_f16(2051), 0x6802);
    ck_assert_uint_eq(kiln__i64_to_f16(70000), 0x7c00); /* overflow */
    ck_assert_uint_eq(kiln__i64_to_f16(-70000), 0xfc00);
    /* 2^53 + 1 in f64: tie, even */
    ck_assert_uint_eq(tu_bits64(kiln__i64_to_f64(9007199254740993LL)), 0x4340000000000000ull);
    /* one rounding: 2^24 + 2^16 + 1 is just above the bf16 tie 2^24 + 2^16
    ** and rounds up; through f32 it would become the tie and round to even
    ** (down, 0x4b80) */
    ck_assert_uint_eq(kiln__i64_to_bf16(16777216 + 65536 + 1), 0x4b81);
}
END_TEST

START_TEST(floats_to_integers)
{
    ck_assert_int_eq(kiln__f64_to_i32(3.9), 3);
    ck_assert_int_eq(kiln__f64_to_i32(-3.9), -3);
    ck_assert_int_eq(kiln__f64_to_i32(2147483647.9), INT32_MAX);
    ck_assert_int_eq(kiln__f64_to_i32(2147483648.0), INT32_MAX);
    ck_assert_int_eq(kiln__f64_to_i32(-2147483648.9), INT32_MIN);
    ck_assert_int_eq(kiln__f64_to_i32(-1e300), INT32_MIN);
    ck_assert_int_eq(kiln__f64_to_i32(INFINITY), INT32_MAX);
    ck_assert_int_eq(kiln__f64_to_i32(NAN), 0);
    ck_assert(kiln__f64_to_i64(0x1p63) == INT64_MAX);
    ck_assert(kiln__f64_to_i64(-0x1p63) == INT64_MIN);
    ck_assert(kiln__f64_to_i64(-INFINITY) == INT64_MIN);
    ck_assert(kiln__f64_to_i64(NAN) == 0);
    ck_assert(kiln__f64_to_i64(-0x1.fffffffffffffp62) == -9223372036854774784LL);
}
END_TEST

/* Exact widening decodes, and the bit-pattern entry points per dtype. */
START_TEST(widening_and_bits)
{
    ck_assert(kiln__f16_to_f64(0x0001) == 0x1p-24);
    ck_assert(kiln__f16_to_f64(0x7bff) == 65504.0);
    ck_assert(kiln__f16_to_f64(0xfc00) == -INFINITY);
    ck_assert(kiln__f16_to_f32(0x3555) == 0x1.554p-2f);
    ck_assert_uint_eq(tu_bits64(kiln__f16_to_f64(0x7e01)), 0x7ff8040000000000ull); /* NaN payload */
    ck_assert(kiln__bf16_to_f64(0x3f80) == 1.0);
    ck_assert(kiln__bf16_to_f32(0x0001) == 0x1p-133f);
    /* bool: any non-zero byte is true; NaN is true */
    ck_assert(kiln__bits_to_f64(KILN_BOOL, 2) == 1.0);
    ck_assert_uint_eq(kiln__bits_from_f64(KILN_BOOL, NAN), 1);
    ck_assert_uint_eq(kiln__bits_from_f64(KILN_BOOL, -0.0), 0);
    /* int -> int wraps; float -> int saturates */
    ck_assert_uint_eq(kiln__bits_from_i64(KILN_I32, 0x100000005LL), 5);
    ck_assert_uint_eq(kiln__bits_from_i64(KILN_I32, -1), 0xffffffffu);
    ck_assert_uint_eq(kiln__bits_from_f64(KILN_I32, 1e12), 0x7fffffffu);
    ck_assert_uint_eq(kiln__bits_from_f64(KILN_F16, 1.0), 0x3c00);
    ck_assert_uint_eq(kiln__bits_from_i64(KILN_BF16, 257), 0x4380);
    ck_assert(kiln__bits_to_f64(KILN_I32, 0xfffffffeu) == -2.0);
    for (int t = 0; t < KILN_DTYPE_COUNT; t++)
        ck_assert_int_eq(kiln__dtype_is_float((kiln_dtype)t),
                         t == KILN_F16 || t == KILN_BF16 || t == KILN_F32 || t == KILN_F64);
    ck_assert_int_eq(kiln__dtype_is_float((kiln_dtype)KILN_DTYPE_COUNT), 0);
}
END_TEST

/* load/store by dtype width, and kiln__convert over arrays. */
START_TEST(load_store_convert)
{
    unsigned char buf[8];
    memset(buf, 0xee, sizeof buf);
    kiln__store_bits(KILN_F16, buf, 0x3c00);
    ck_assert_uint_eq(buf[2], 0xee); /* two bytes written, no more */
    ck_assert_uint_eq(kiln__load_bits(KILN_F16, buf), 0x3c00);
    ck_assert(kiln__load_f64(KILN_F16, buf) == 1.0);
    kiln__store_bits(KILN_I64, buf, 0xfffffffffffffff9ull);
    ck_assert(kiln__load_i64(KILN_I64, buf) == -7);
    ck_assert(kiln__load_f64(KILN_I64, buf) == -7.0);
    kiln__store_bits(KILN_BOOL, buf, 1);
    ck_assert_uint_eq(kiln__load_bits(KILN_BOOL, buf), 1);
    kiln__store_bits(KILN_I32, buf, 0xfffffffeu);
    ck_assert(kiln__load_i64(KILN_I32, buf) == -2);
    ck_assert(kiln__load_f64(KILN_I32, buf) == -2.0);
    kiln__store_bits(KILN_F16, buf, 0xc500);
    ck_assert(kiln__load_f64(KILN_F16, buf) == -5.0);
    ck_assert(kiln__load_i64(KILN_F16, buf) == -5);
    ck_assert_uint_eq(kiln__bits_from_f64(KILN_BF16, 1.0), 0x3f80);
    ck_assert(kiln__bits_to_f64(KILN_F16, 0x7bff) == 65504.0);

    float f[4] = {1.5f, -2.5f, 1e10f, NAN};
    int32_t i[4];
    kiln__convert(KILN_I32, i, KILN_F32, f, 4);
    ck_assert_int_eq(i[0], 1);
    ck_assert_int_eq(i[1], -2);
    ck_assert_int_eq(i[2], INT32_MAX);
    ck_assert_int_eq(i[3], 0);
    int64_t big[2] = {16777217, -16777219};
    float g[2];
    kiln__convert(KILN_F32, g, KILN_I64, big, 2);
    ck_assert_uint_eq(tu_bits(g[0]), 0x4b800000u);
    ck_assert_uint_eq(tu_bits(g[1]), 0xcb800002u);
    double d[2] = {65520.0, 0x1p-25};
    uint16_t h[2];
    kiln__convert(KILN_F16, h, KILN_F64, d, 2);
    ck_assert_uint_eq(h[0], 0x7c00);
    ck_assert_uint_eq(h[1], 0x0000);
    uint8_t b[3];
    double z[3] = {0.0, -0.0, NAN};
    kiln__convert(KILN_BOOL, b, KILN_F64, z, 3);
    ck_assert(b[0] == 0 && b[1] == 0 && b[2] == 1);
    float same[2] = {1, 2};
    kiln__convert(KILN_F32, same, KILN_F32, same, 2); /* in place, same dtype */
    ck_assert(same[1] == 2.0f);
}
END_TEST

/* ULP distance, ulp size, classification and flush to zero. */
START_TEST(ulp_and_ftz)
{
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F32, 0x00000000, 0x80000000), 0);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F32, 0x00000001, 0x80000001), 2);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F32, 0x7f7fffff, 0x7f800000), 1);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F32, 0x3f800000, 0x3f800003), 3);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F16, 0xbc00, 0x3c00), 2 * 0x3c00);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F32, 0x7fc00000, 0xffc00001), 0); /* NaN, NaN */
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F32, 0x7fc00000, 0x3f800000), UINT64_MAX);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_BF16, 0x0001, 0x8001), 2);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F64, 0x3ff0000000000000ull, 0x3fefffffffffffffull), 1);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_F64, 0x7fefffffffffffffull, 0xffefffffffffffffull),
                      2 * 0x7fefffffffffffffull);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_I32, 5, 5), 0);
    ck_assert_uint_eq(kiln__ulp_distance(KILN_I32, 5, 6), UINT64_MAX);
    ck_assert(kiln__ulp_size(KILN_F32, 0x3f800000) == 0x1p-23);
    ck_assert(kiln__ulp_size(KILN_F32, 0x00000000) == 0x1p-149);
    ck_assert(kiln__ulp_size(KILN_F32, 0x7f7fffff) == 0x1p104);
    ck_assert(kiln__ulp_size(KILN_F16, 0x3c00) == 0x1p-10);
    ck_assert(kiln__ulp_size(KILN_BF16, 0x3f80) == 0x1p-7);
    ck_assert(kiln__ulp_size(KILN_F64, tu_bits64(1.0)) == 0x1p-52);
    ck_assert(kiln__ulp_size(KILN_F16, 0x0000) == 0x1p-24);
    ck_assert(kiln__ulp_size(KILN_F64, 0x0000000000000001ull) == 0x1p-1074);
    ck_assert(isnan(kiln__ulp_size(KILN_F32, 0x7f800000)));
    ck_assert(isnan(kiln__ulp_size(KILN_I32, 1)));
    ck_assert_int_eq(kiln__bits_isnan(KILN_BF16, 0x7f81), 1);
    ck_assert_int_eq(kiln__bits_isnan(KILN_BF16, 0x7f80), 0);
    ck_assert_int_eq(kiln__bits_isinf(KILN_F16, 0xfc00), 1);
    ck_assert_int_eq(kiln__bits_isinf(KILN_F64, 0x7ff0000000000000ull), 1);
    ck_assert_int_eq(kiln__bits_isnan(KILN_I32, 0x7fc00000), 0);
    ck_assert_int_eq(kiln__bits_is_subnormal(KILN_F32, 0x00000001), 1);
    ck_assert_int_eq(kiln__bits_is_subnormal(KILN_F32, 0x00800000), 0);
    ck_assert_int_eq(kiln__bits_is_subnormal(KILN_F32, 0x80000000), 0);
    ck_assert_int_eq(kiln__bits_is_subnormal(KILN_F16, 0x83ff), 1);
    ck_assert_int_eq(kiln__bits_is_subnormal(KILN_F16, 0x0400), 0);
    ck_assert_uint_eq(kiln__bits_ftz(KILN_BF16, 0x0040), 0x0000);
    ck_assert_uint_eq(kiln__bits_ftz(KILN_F64, 0x0010000000000000ull), 0x0010000000000000ull);
    ck_assert_uint_eq(kiln__bits_ftz(KILN_F32, 0x807fffff), 0x80000000u);
    ck_assert_uint_eq(kiln__bits_ftz(KILN_F16, 0x03ff), 0x0000);
    ck_assert_uint_eq(kiln__bits_ftz(KILN_F32, 0x00800000), 0x00800000u);
    ck_assert_uint_eq(kiln__bits_ftz(KILN_I32, 1), 1);
}
END_TEST

/* The runtime's ULP distance and the conformance checker's (written apart
** on purpose) agree on random patterns of every float dtype. */
START_TEST(ulp_distance_agrees_with_the_checker)
{
    static const kiln_dtype fl[4] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
    uint64_t s = 12345;
    for (int k = 0; k < 4; k++) {
        int w = 8 * (int)kiln_dtype_size(fl[k]);
        uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
        for (int i = 0; i < 20000; i++) {
            uint64_t a = cf_splitmix64(&s) & mask, b = cf_splitmix64(&s) & mask;
            if (i % 3 == 0) /* neighbours too, not only far-apart pairs */
                b = (a + (cf_splitmix64(&s) & 7)) & mask;
            uint64_t r = kiln__ulp_distance(fl[k], a, b);
            uint64_t c = cf_ulp_distance(fl[k], a, b);
            ck_assert_msg(r == c, "%s 0x%llx 0x%llx: runtime %llu, checker %llu",
                          kiln_dtype_name(fl[k]), (unsigned long long)a,
                          (unsigned long long)b, (unsigned long long)r,
                          (unsigned long long)c);
        }
    }
}
END_TEST

Suite *numeric_suite(void)
{
    Suite *s = suite_create("numeric");
    TCase *tc = tcase_create("casts");
    tcase_add_test(tc, narrow_to_f16);
    tcase_add_test(tc, narrow_to_bf16_and_f32);
    tcase_add_test(tc, integers_to_floats);
    tcase_add_test(tc, floats_to_integers);
    tcase_add_test(tc, widening_and_bits);
    tcase_add_test(tc, load_store_convert);
    suite_add_tcase(s, tc);
    tc = tcase_create("ulp");
    tcase_add_test(tc, ulp_and_ftz);
    tcase_add_test(tc, ulp_distance_agrees_with_the_checker);
    suite_add_tcase(s, tc);
    return s;
}
