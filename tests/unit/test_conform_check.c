/*
** test_conform_check.c -- unit tests of the conformance runner's own
** machinery (conformance/vectors.c, check_numeric.c, differential.c): the
** ULP distance, FTZ and NaN rules, absolute bounds and alternatives, hex and
** tensor decoding, vector-file validation errors, and the splitmix64 input
** recipe.  Expected values are worked out by hand from the IEEE formats or
** computed independently (Python's struct module for the rounding cases),
** never by the code under test.
*/
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../conformance/conform.h"
#include "../../conformance/outputs.h"

/* ------------------------------------------------------------ ULP distance */

START_TEST(ulp_f32)
{
    ck_assert_uint_eq(cf_ulp_distance(KILN_F32, 0x3f800000, 0x3f800001), 1);
    ck_assert_uint_eq(cf_ulp_distance(KILN_F32, 0x3f800001, 0x3f800000), 1);
    ck_assert_uint_eq(cf_ulp_distance(KILN_F32, 0x00000000, 0x80000000), 0);
    /* smallest denormals of opposite sign: two steps through zero */
    ck_assert_uint_eq(cf_ulp_distance(KILN_F32, 0x00000001, 0x80000001), 2);
    /* infinity is one step beyond FLT_MAX */
    ck_assert_uint_eq(cf_ulp_distance(KILN_F32, 0x7f7fffff, 0x7f800000), 1);
    /* 1.0 to 2.0: 2^23 steps */
    ck_assert_uint_eq(cf_ulp_distance(KILN_F32, 0x3f800000, 0x40000000),
                      1u << 23);
    /* any NaN matches any NaN, never a number */
    ck_assert_uint_eq(cf_ulp_distance(KILN_F32, 0x7fc00000, 0xffc00001), 0);
    ck_assert(cf_ulp_distance(KILN_F32, 0x7fc00000, 0x3f800000) == CF_ULP_INF);
    ck_assert(cf_ulp_distance(KILN_F32, 0x7f800000, 0x7fc00000) == CF_ULP_INF);
}
END_TEST

START_TEST(ulp_other_formats)
{
    ck_assert_uint_eq(cf_ulp_distance(KILN_F16, 0x3c00, 0x3c01), 1);
    ck_assert_uint_eq(cf_ulp_distance(KILN_F16, 0x7bff, 0x7c00), 1);
    ck_assert(cf_ulp_distance(KILN_F16, 0x7c01, 0x7c00) == CF_ULP_INF);
    /* bf16 +1.0 vs -1.0: 0x3f80 steps on each side of zero */
    ck_assert_uint_eq(cf_ulp_distance(KILN_BF16, 0x3f80, 0xbf80), 2 * 0x3f80);
    ck_assert_uint_eq(cf_ulp_distance(KILN_F64, 0x3ff0000000000000ULL,
                                      0x3ff0000000000001ULL), 1);
    ck_assert_uint_eq(cf_ulp_distance(KILN_F64, 0x8000000000000000ULL, 0), 0);
    /* f64 extremes of opposite sign do not overflow the distance */
    ck_assert(cf_ulp_distance(KILN_F64, 0x7ff0000000000000ULL,
                              0xfff0000000000000ULL) ==
              2 * 0x7ff0000000000000ULL);
    /* integers: equal or not */
    ck_assert_uint_eq(cf_ulp_distance(KILN_I32, 5, 5), 0);
    ck_assert(cf_ulp_distance(KILN_I32, 5, 6) == CF_ULP_INF);
}
END_TEST

START_TEST(classify)
{
    ck_assert(cf_is_denormal(KILN_F32, 0x00000001));
    ck_assert(cf_is_denormal(KILN_F32, 0x807fffff));
    ck_assert(!cf_is_denormal(KILN_F32, 0x00800000));
    ck_assert(!cf_is_denormal(KILN_F32, 0x00000000));
    ck_assert(cf_is_denormal(KILN_F16, 0x03ff));
    ck_assert(!cf_is_denormal(KILN_F16, 0x0400));
    ck_assert(cf_is_denormal(KILN_BF16, 0x0001));
    ck_assert(cf_is_nan(KILN_BF16, 0x7fc1));
    ck_assert(!cf_is_nan(KILN_BF16, 0x7f80));
    ck_assert(cf_is_zero(KILN_F64, 0x8000000000000000ULL));
    ck_assert(cf_sign(KILN_F16, 0x8000));
    ck_assert(!cf_is_float(KILN_I64));
    ck_assert(cf_to_double(KILN_F16, 0x3c00) == 1.0);
    ck_assert(cf_to_double(KILN_F16, 0x0001) == ldexp(1.0, -24));
    ck_assert(cf_to_double(KILN_F16, 0xfc00) == -INFINITY);
    ck_assert(cf_to_double(KILN_BF16, 0x4049) == 3.140625);
    ck_assert(cf_to_double(KILN_I32, 0xffffffff) == -1.0);
}
END_TEST

/* --------------------------------------------------------------- compare */

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    ck_assert_msg(j != NULL, "test JSON: %s", e.text);
    return j;
}

/* Compare f32 arrays under the check given as JSON; returns cf_compare's
** result, msg receives its message. */
static int cmp_f32(const char *check, const uint32_t *got, const uint32_t *want,
                   size_t n, cf_cmp_stats *st, char *msg)
{
    cf_check c;
    char err[256];
    json_t *j = js(check);
    ck_assert_msg(cf_check_from_json(j, "check", KILN_F32, n, &c, err,
                                     sizeof err) == 0, "%s", err);
    json_decref(j);
    msg[0] = '\0';
    int r = cf_compare(&c, KILN_F32, n, got, want, NULL, st, msg, 512);
    cf_check_free(&c);
    return r;
}

START_TEST(compare_exact_nan_and_zero)
{
    uint32_t want[2] = {0x7fc00000, 0x00000000};
    uint32_t got[2] = {0xffc12345, 0x00000000};
    char msg[512];
    ck_assert_int_eq(cmp_f32("{\"kind\":\"exact\"}", got, want, 2, NULL, msg), 0);
    got[1] = 0x80000000; /* -0 is not +0 bit for bit */
    ck_assert_int_ne(cmp_f32("{\"kind\":\"exact\"}", got, want, 2, NULL, msg), 0);
    ck_assert_msg(strstr(msg, "element 1 of 2") != NULL, "%s", msg);
    ck_assert_msg(strstr(msg, "0x80000000") != NULL, "%s", msg);
}
END_TEST

/* Several elements out of bound: the first is described, then how many
** and the worst; a single bad element has no summary. */
START_TEST(compare_summarises_all_failures)
{
    uint32_t want[4] = {0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000};
    uint32_t got[4] = {0x3f800003, 0x3f800001, 0x3f800005, 0x3f800000};
    char msg[512];
    ck_assert_int_ne(cmp_f32("{\"kind\":\"ulp\",\"max\":1}", got, want, 4,
                             NULL, msg), 0);
    ck_assert_msg(strstr(msg, "element 0 of 4") &&
                      strstr(msg, "3 ulp > max 1") &&
                      strstr(msg, "(2 of 4 elements out of bound; worst 5 ulp "
                                  "at element 2)"),
                  "%s", msg);
    got[2] = 0x3f800000;
    ck_assert_int_ne(cmp_f32("{\"kind\":\"ulp\",\"max\":1}", got, want, 4,
                             NULL, msg), 0);
    ck_assert_msg(strstr(msg, "elements out of bound") == NULL, "%s", msg);
}
END_TEST

START_TEST(compare_ulp)
{
    uint32_t want[3] = {0x3f800000, 0x3f800000, 0x7f800000};
    uint32_t got[3] = {0x3f800001, 0x3f800002, 0x7f800000};
    cf_cmp_stats st;
    char msg[512];
    memset(&st, 0, sizeof st);
    ck_assert_int_ne(cmp_f32("{\"kind\":\"ulp\",\"max\":1}", got, want, 3, &st,
                             msg), 0);
    ck_assert_msg(strstr(msg, "element 1 of 3") && strstr(msg, "2 ulp > max 1"),
                  "%s", msg);
    ck_assert_uint_eq(st.max_ulp, 2);
    ck_assert_int_eq(cmp_f32("{\"kind\":\"ulp\",\"max\":2}", got, want, 3, NULL,
                             msg), 0);
    ck_assert_int_eq(cmp_f32("{\"kind\":\"ulp\",\"maxPerElement\":[1,2,0]}",
                             got, want, 3, NULL, msg), 0);
    got[2] = 0x7fc00000; /* NaN where inf is expected */
    ck_assert_int_ne(cmp_f32("{\"kind\":\"ulp\",\"max\":1000}", got, want, 3,
                             NULL, msg), 0);
    ck_assert_msg(strstr(msg, "NaN mismatch") != NULL, "%s", msg);
}
END_TEST

START_TEST(compare_ftz)
{
    uint32_t want[1] = {0x00400000}; /* denormal 2^-127 */
    uint32_t got[1] = {0x00000000};
    char msg[512];
    ck_assert_int_ne(cmp_f32("{\"kind\":\"ulp\",\"max\":2}", got, want, 1, NULL,
                             msg), 0);
    ck_assert_int_eq(cmp_f32("{\"kind\":\"ulp\",\"max\":2,\"ftz\":true}", got,
                             want, 1, NULL, msg), 0);
    got[0] = 0x80000000; /* flushed, but with the wrong sign */
    ck_assert_int_ne(cmp_f32("{\"kind\":\"ulp\",\"max\":2,\"ftz\":true}", got,
                             want, 1, NULL, msg), 0);
    want[0] = 0x80400000;
    ck_assert_int_eq(cmp_f32("{\"kind\":\"exact\",\"ftz\":true}", got, want, 1,
                             NULL, msg), 0);
}
END_TEST

START_TEST(compare_abs_and_alternatives)
{
    /* bound 2^-20; 1 + 2^-21 is inside, 1 + 2^-19 outside */
    const char *chk = "{\"kind\":\"abs\",\"bounds\":[\"0x3eb0000000000000\","
                      "\"0x3eb0000000000000\"]}";
    uint32_t want[2] = {0x3f800000, 0x3f800000};
    uint32_t got[2] = {0x3f800004, 0x3f800010};
    char msg[512];
    ck_assert_int_ne(cmp_f32(chk, got, want, 2, NULL, msg), 0);
    ck_assert_msg(strstr(msg, "element 1 of 2") && strstr(msg, "bound"), "%s",
                  msg);
    got[1] = 0x3f800004;
    ck_assert_int_eq(cmp_f32(chk, got, want, 2, NULL, msg), 0);
    /* max(+0, -0): -0 is an accepted alternative for element 0 only */
    uint32_t w2[2] = {0x00000000, 0x00000000}, g2[2] = {0x80000000, 0};
    cf_cmp_stats st;
    memset(&st, 0, sizeof st);
    const char *alt = "{\"kind\":\"exact\",\"alternatives\":{\"0\":"
                      "[\"0x80000000\"]}}";
    ck_assert_int_eq(cmp_f32(alt, g2, w2, 2, &st, msg), 0);
    ck_assert_int_eq(st.acceptable, 1);
    g2[0] = 0;
    g2[1] = 0x80000000;
    ck_assert_int_ne(cmp_f32(alt, g2, w2, 2, NULL, msg), 0);
}
END_TEST

/* sumBound (differential): |got - ref| <= 2 gamma_n S, gamma_n = n u /
** (1 - n u), whatever order either backend summed in.  n = 4096, u =
** 2^-24, S = 1024: the bound is 2^-1 / (1 - 2^-12) = 0.50012...;
** 1024.5 is inside, 1024.5 + 2^-7 outside. */
START_TEST(compare_sumbound_gamma)
{
    cf_check c;
    char err[256], msg[512];
    json_t *j = js("{\"kind\":\"sumBound\"}");
    ck_assert_int_eq(cf_check_from_json(j, "check", KILN_F32, 1, &c, err,
                                        sizeof err), 0);
    json_decref(j);
    c.sum_n = 4096;
    double S[1] = {1024.0};
    uint32_t want[1] = {0x44800000}; /* 1024 */
    uint32_t got[1] = {0x44801000};  /* 1024.5 */
    ck_assert_int_eq(cf_compare(&c, KILN_F32, 1, got, want, S, NULL, msg,
                                sizeof msg), 0);
    got[0] = 0x44801040; /* 1024.5078125 */
    ck_assert_int_ne(cf_compare(&c, KILN_F32, 1, got, want, S, NULL, msg,
                                sizeof msg), 0);
    /* f64: u = 2^-53, n = 2, S = 1: bound 2 * 2^-52 / (1 - 2^-52) */
    cf_check_free(&c);
    j = js("{\"kind\":\"sumBound\"}");
    ck_assert_int_eq(cf_check_from_json(j, "check", KILN_F64, 1, &c, err,
                                        sizeof err), 0);
    json_decref(j);
    c.sum_n = 2;
    double one = 1.0, g2 = 1.0 + ldexp(1.0, -51), g3 = 1.0 + ldexp(3.0, -52);
    S[0] = 1.0;
    ck_assert_int_eq(cf_compare(&c, KILN_F64, 1, &g2, &one, S, NULL, msg,
                                sizeof msg), 0);
    ck_assert_int_ne(cf_compare(&c, KILN_F64, 1, &g3, &one, S, NULL, msg,
                                sizeof msg), 0);
    cf_check_free(&c);
}
END_TEST

START_TEST(check_json_errors)
{
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"kind\":\"close\"}", "unknown check kind 'close'"},
        {"{\"kind\":\"ulp\"}", "needs exactly one of 'max' and "
                                "'maxPerElement'"},
        /* a malformed max is an error, not a reason to use the other */
        {"{\"kind\":\"ulp\",\"max\":\"2\",\"maxPerElement\":[1,1]}",
         "needs exactly one of"},
        {"{\"kind\":\"ulp\",\"max\":-1}", "'max' must be an integer >= 0"},
        {"{\"kind\":\"ulp\",\"max\":1.5}", "'max' must be an integer >= 0"},
        {"{\"kind\":\"ulp\",\"maxPerElement\":3}",
         "'maxPerElement' must be a list"},
        /* alternatives keys are canonical decimal indices */
        {"{\"kind\":\"exact\",\"alternatives\":{\"-0\":[\"0x0\"]}}",
         "alternatives key '-0' is not an element index"},
        {"{\"kind\":\"exact\",\"alternatives\":{\"01\":[\"0x0\"]}}",
         "alternatives key '01'"},
        {"{\"kind\":\"exact\",\"alternatives\":{\"+1\":[\"0x0\"]}}",
         "alternatives key '+1'"},
        {"{\"kind\":\"exact\",\"alternatives\":{\" 1\":[\"0x0\"]}}",
         "alternatives key ' 1'"},
        {"{\"kind\":\"exact\",\"alternatives\":{\"\":[\"0x0\"]}}",
         "alternatives key ''"},
        {"{\"kind\":\"ulp\",\"maxPerElement\":[1]}", "1 entries for 2 elements"},
        {"{\"kind\":\"abs\",\"bounds\":[\"0x1\",\"zz\"]}", "bounds[1]"},
        {"{\"kind\":\"exact\",\"alternatives\":{\"7\":[\"0x0\"]}}",
         "alternatives key '7'"},
        {"{\"kind\":\"exact\",\"alternatives\":{\"0\":[\"0x1g\"]}}",
         "bad hex digit 'g'"},
        {"{\"kind\":\"exact\",\"ftz\":1}", "'ftz' must be true or false"},
        {"[1]", "must be an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_check c;
        char err[256] = "";
        json_t *j = js(bad[i].json);
        ck_assert_int_ne(cf_check_from_json(j, "outputs[0].check", KILN_F32, 2,
                                            &c, err, sizeof err), 0);
        ck_assert_msg(strstr(err, bad[i].needle) != NULL,
                      "case %zu: '%s' lacks '%s'", i, err, bad[i].needle);
        ck_assert_msg(strstr(err, "outputs[0].check") != NULL, "%s", err);
        json_decref(j);
    }
}
END_TEST

/* ---------------------------------------------------------- hex, tensors */

START_TEST(hex_parse)
{
    uint64_t b = 0;
    char err[256];
    ck_assert_int_eq(cf_hex_parse("0x3F800000", KILN_F32, &b, err, sizeof err), 0);
    ck_assert_uint_eq(b, 0x3f800000);
    ck_assert_int_eq(cf_hex_parse("0xffffffffffffffff", KILN_I64, &b, err,
                                  sizeof err), 0);
    ck_assert(b == UINT64_MAX);
    ck_assert_int_eq(cf_hex_parse("0x1", KILN_BOOL, &b, err, sizeof err), 0);
    ck_assert_int_ne(cf_hex_parse("3f800000", KILN_F32, &b, err, sizeof err), 0);
    ck_assert_int_ne(cf_hex_parse("0x", KILN_F32, &b, err, sizeof err), 0);
    ck_assert_int_ne(cf_hex_parse("0x3g", KILN_F32, &b, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "'g'") != NULL, "%s", err);
    ck_assert_int_ne(cf_hex_parse("0x100000000", KILN_F32, &b, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "does not fit f32") != NULL, "%s", err);
    ck_assert_int_ne(cf_hex_parse("0x2", KILN_BOOL, &b, err, sizeof err), 0);
    ck_assert_int_ne(cf_hex_parse("0x10000", KILN_F16, &b, err, sizeof err), 0);
    ck_assert_int_ne(cf_hex_parse("0x10000000000000000", KILN_I64, &b, err,
                                  sizeof err), 0);
}
END_TEST

START_TEST(tensor_strided_and_repeat)
{
    char err[256];
    cf_tensor t;
    /* shape [2,2], strides [1,2]: element (i,j) at data[i + 2j] */
    json_t *j = js("{\"dtype\":\"i32\",\"shape\":[2,2],\"strides\":[1,2],"
                   "\"data\":[\"0xa\",\"0xb\",\"0xc\",\"0xd\"]}");
    ck_assert_msg(cf_tensor_from_json(j, "inputs[0]", 1, &t, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_uint_eq(t.numel, 4);
    ck_assert_uint_eq(t.storage, 4);
    int32_t g[4];
    cf_tensor_gather(&t, g);
    ck_assert_int_eq(g[0], 0xa);
    ck_assert_int_eq(g[1], 0xc);
    ck_assert_int_eq(g[2], 0xb);
    ck_assert_int_eq(g[3], 0xd);
    cf_tensor_free(&t);
    json_decref(j);
    /* broadcast stride 0: storage 1 + (3-1)*0 + (2-1)*1 = 2 */
    j = js("{\"dtype\":\"f32\",\"shape\":[3,2],\"strides\":[0,1],"
           "\"data\":{\"repeat\":[\"0x3f800000\",\"0x40000000\"],\"count\":2}}");
    ck_assert_msg(cf_tensor_from_json(j, "x", 1, &t, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_uint_eq(t.storage, 2);
    uint32_t f[6];
    cf_tensor_gather(&t, f);
    ck_assert_uint_eq(f[4], 0x3f800000);
    ck_assert_uint_eq(f[5], 0x40000000);
    cf_tensor_free(&t);
    json_decref(j);
    /* repeat pattern longer than one period */
    j = js("{\"dtype\":\"f16\",\"shape\":[5],\"data\":{\"repeat\":[\"0x1\","
           "\"0x2\"],\"count\":5}}");
    ck_assert(cf_tensor_from_json(j, "x", 1, &t, err, sizeof err) == 0);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 4), 1);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 3), 2);
    cf_tensor_free(&t);
    json_decref(j);
    /* zero-size and rank 0 */
    j = js("{\"dtype\":\"f32\",\"shape\":[0,3],\"strides\":[3,1],\"data\":[]}");
    ck_assert(cf_tensor_from_json(j, "x", 1, &t, err, sizeof err) == 0);
    ck_assert_uint_eq(t.numel, 0);
    ck_assert_uint_eq(t.storage, 0);
    cf_tensor_free(&t);
    json_decref(j);
    j = js("{\"dtype\":\"f64\",\"shape\":[],\"data\":[\"0x0\"]}");
    ck_assert(cf_tensor_from_json(j, "x", 1, &t, err, sizeof err) == 0);
    ck_assert_uint_eq(t.numel, 1);
    ck_assert_int_eq(t.rank, 0);
    cf_tensor_free(&t);
    json_decref(j);
}
END_TEST

START_TEST(tensor_errors)
{
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"shape\":[1],\"data\":[\"0x0\"]}", "missing field 'dtype'"},
        {"{\"dtype\":\"f8\",\"shape\":[1],\"data\":[\"0x0\"]}", "unknown dtype 'f8'"},
        {"{\"dtype\":\"f32\",\"data\":[\"0x0\"]}", "missing field 'shape'"},
        {"{\"dtype\":\"f32\",\"shape\":[-1],\"data\":[]}", "shape[0]"},
        {"{\"dtype\":\"f32\",\"shape\":[2,3],\"strides\":[1,2],\"data\":"
         "[\"0x0\",\"0x0\",\"0x0\",\"0x0\",\"0x0\"]}", "storage holds 6"},
        {"{\"dtype\":\"f32\",\"shape\":[2],\"strides\":[1],\"data\":[\"0x0\","
         "\"0xzz\"]}", "x.data[1]: '0xzz': bad hex digit 'z'"},
        {"{\"dtype\":\"i32\",\"shape\":[2],\"data\":[\"0x0\",7]}",
         "x.data[1]: must be a hex string"},
        {"{\"dtype\":\"f32\",\"shape\":[2],\"strides\":[1,1],\"data\":[]}",
         "2 entries for rank 1"},
        {"{\"dtype\":\"f32\",\"shape\":[3],\"data\":{\"repeat\":[\"0x0\"],"
         "\"count\":4}}", "count 4 but the storage holds 3"},
        {"{\"dtype\":\"f32\",\"shape\":[3],\"data\":{\"repeat\":[],\"count\":3}}",
         "expected {\"repeat\""},
        {"{\"dtype\":\"f32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data\":[\"0x0\"]}",
         "rank limit"},
        {"{\"dtype\":\"f32\",\"shape\":[1]}", "missing field 'data'"},
        {"{\"dtype\":\"f32\",\"shape\":[1048576,1048576],\"data\":[]}",
         "too many elements"},
        /* 1 + 2^24 * 2^40 wraps to 1 in 64 bits: the storage must not */
        {"{\"dtype\":\"f32\",\"shape\":[16777217],\"strides\":"
         "[1099511627776],\"data\":[\"0x0\"]}", "x: storage too large"},
        /* no elements, but contiguous strides of 2^80 */
        {"{\"dtype\":\"f32\",\"shape\":[0,1099511627776,1099511627776],"
         "\"data\":[]}", "x: the sizes multiply past 64 bits"},
        {"{\"dtype\":\"f32\",\"shape\":[1],\"strides\":null,\"data\":"
         "[\"0x0\"]}", "'strides' must be a list of integers"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_tensor t;
        char err[256] = "";
        json_t *j = js(bad[i].json);
        ck_assert_int_ne(cf_tensor_from_json(j, "x", 1, &t, err, sizeof err), 0);
        ck_assert_msg(strstr(err, bad[i].needle) != NULL,
                      "case %zu: '%s' lacks '%s'", i, err, bad[i].needle);
        json_decref(j);
    }
}
END_TEST

/* ----------------------------------------------------------- vector files */

/* Write text to a temporary file and try to load it. */
static int load_text(const char *text, char *err, size_t cap, cf_file *f)
{
    char path[] = "/tmp/kiln-unit-vec-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    int r = cf_file_load(path, f, err, cap);
    unlink(path);
    return r;
}

#define HEAD "{\"suite\":\"kiln-conformance\",\"suiteVersion\":\"1.0.0\"," \
             "\"category\":\"numerics\",\"notes\":{\"A\":\"flag a\"},"

START_TEST(file_ok)
{
    cf_file f;
    char err[512];
    const char *text = HEAD "\"numberOfTests\":3,\"testGroups\":["
        "{\"type\":\"T\",\"tests\":[{\"tcId\":3,\"comment\":\"c3\",\"flags\":[],"
        "\"result\":\"valid\"},{\"tcId\":1,\"comment\":\"c1\",\"flags\":[\"A\"],"
        "\"result\":\"invalid\"}]},{\"type\":\"U\",\"tests\":[{\"tcId\":2,"
        "\"comment\":\"c2\",\"flags\":[],\"result\":\"acceptable\"}]}]}";
    ck_assert_msg(load_text(text, err, sizeof err, &f) == 0, "%s", err);
    ck_assert_uint_eq(f.n_tests, 3);
    ck_assert_str_eq(f.category, "numerics");
    ck_assert_int_eq(f.tests[0].tcid, 1); /* sorted by tcId */
    ck_assert_str_eq(f.tests[1].comment, "c2");
    ck_assert_str_eq(f.tests[1].group_type, "U");
    ck_assert_str_eq(f.tests[2].category, "numerics");
    ck_assert_str_eq(f.tests[2].text, "{\"tcId\":3,\"comment\":\"c3\","
                     "\"flags\":[],\"result\":\"valid\"}");
    cf_file_free(&f);
    cf_file_free(&f); /* free twice is harmless (zeroed) */
}
END_TEST

START_TEST(file_errors)
{
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"suite\": ", "invalid JSON"},
        {"[]", "top level must be an object"},
        {"{\"suite\":\"other\",\"suiteVersion\":\"1.0\",\"category\":\"x\"}",
         "'suite' is 'other'"},
        {"{\"suite\":\"kiln-conformance\",\"suiteVersion\":\"2.0.0\","
         "\"category\":\"x\"}", "suiteVersion '2.0.0' is not supported"},
        {"{\"suite\":\"kiln-conformance\",\"category\":\"x\"}",
         "missing field 'suiteVersion'"},
        {"{\"suite\":\"kiln-conformance\",\"suiteVersion\":\"1.x\","
         "\"category\":\"x\"}", "suiteVersion '1.x' is not supported"},
        {"{\"suite\":\"kiln-conformance\",\"suiteVersion\":\"1.0.0.1\","
         "\"category\":\"x\"}", "suiteVersion '1.0.0.1' is not supported"},
        {"{\"suite\":\"kiln-conformance\",\"suiteVersion\":\"1.0.0\","
         "\"category\":\"x\",\"notes\":{\"A\":5}}",
         "notes.A: must be a string"},
        {HEAD "\"numberOfTests\":1,\"testGroups\":[{\"type\":\"T\",\"tests\":"
         "[{\"comment\":\"c\",\"flags\":[],\"result\":\"valid\"}]}]}",
         "testGroups[0].tests[0]: missing field 'tcId'"},
        {HEAD "\"numberOfTests\":1,\"testGroups\":[{\"type\":\"T\",\"tests\":"
         "[{\"tcId\":1,\"comment\":\"c\",\"flags\":[\"B\"],\"result\":\"valid\"}"
         "]}]}", "flag 'B' is not defined in 'notes'"},
        {HEAD "\"numberOfTests\":1,\"testGroups\":[{\"type\":\"T\",\"tests\":"
         "[{\"tcId\":1,\"comment\":\"c\",\"flags\":[],\"result\":\"ok\"}]}]}",
         "'result' is 'ok'"},
        {HEAD "\"numberOfTests\":2,\"testGroups\":[{\"type\":\"T\",\"tests\":"
         "[{\"tcId\":1,\"comment\":\"c\",\"flags\":[],\"result\":\"valid\"}]}]}",
         "'numberOfTests' is 2 but the groups hold 1"},
        {HEAD "\"numberOfTests\":2,\"testGroups\":[{\"type\":\"T\",\"tests\":"
         "[{\"tcId\":1,\"comment\":\"c\",\"flags\":[],\"result\":\"valid\"},"
         "{\"tcId\":1,\"comment\":\"d\",\"flags\":[],\"result\":\"valid\"}]}]}",
         "tcId 1 appears twice"},
        {HEAD "\"numberOfTests\":1,\"testGroups\":[{\"type\":\"T\",\"tests\":"
         "[{\"tcId\":0,\"comment\":\"c\",\"flags\":[],\"result\":\"valid\"}]}]}",
         "'tcId' must be an integer >= 1"},
        {HEAD "\"numberOfTests\":0,\"testGroups\":{}}", "'testGroups' must be a list"},
        {HEAD "\"numberOfTests\":1,\"testGroups\":[{\"tests\":[{\"tcId\":1,"
         "\"comment\":\"c\",\"flags\":[],\"result\":\"valid\"}]}]}",
         "testGroups[0]: missing field 'type'"},
        {HEAD "\"numberOfTests\":1,\"notes\":{},\"testGroups\":[]}",
         "duplicate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_file f;
        char err[512] = "";
        memset(&f, 0, sizeof f);
        ck_assert_int_ne(load_text(bad[i].text, err, sizeof err, &f), 0);
        ck_assert_msg(strstr(err, bad[i].needle) != NULL,
                      "case %zu: '%s' lacks '%s'", i, err, bad[i].needle);
        ck_assert_msg(strstr(err, "/tmp/kiln-unit-vec-") != NULL,
                      "case %zu: no path in '%s'", i, err);
        ck_assert(f.pool == NULL && f.tests == NULL); /* untouched */
    }
    cf_file f;
    char err[512];
    ck_assert_int_ne(cf_file_load("/nonexistent/x.json", &f, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "/nonexistent/x.json") != NULL, "%s", err);
}
END_TEST

/* ----------------------------------------------------------- differential */

START_TEST(splitmix)
{
    /* Steele, Lea & Flood's splitmix64 from state 0 (reference outputs). */
    uint64_t s = 0;
    ck_assert(cf_splitmix64(&s) == 0xe220a8397b1dcdafULL);
    ck_assert(cf_splitmix64(&s) == 0x6e789e6aa1b965f4ULL);
    ck_assert(cf_splitmix64(&s) == 0x06c45d188009454fULL);
}
END_TEST

/* Generate one input from a JSON description with the given seed. */
static void gen(const char *text, uint64_t seed, cf_tensor *t)
{
    char err[256];
    json_t *j = js(text);
    ck_assert_msg(cf_diff_generate(j, "inputs[0]", &seed, t, err, sizeof err) == 0,
                  "%s", err);
    json_decref(j);
}

START_TEST(diff_inputs)
{
    cf_tensor t;
    /* seed 7, uniform(-2, 3): values checked with Python's struct module */
    gen("{\"dtype\":\"f32\",\"shape\":[3],\"dist\":{\"kind\":\"uniform\","
        "\"lo\":-2.0,\"hi\":3.0}}", 7, &t);
    ck_assert_uint_eq(cf_load_bits(KILN_F32, t.data, 0), 0xbd504969);
    ck_assert_uint_eq(cf_load_bits(KILN_F32, t.data, 1), 0xbff54168);
    ck_assert_uint_eq(cf_load_bits(KILN_F32, t.data, 2), 0x40203e51);
    cf_tensor_free(&t);
    gen("{\"dtype\":\"f16\",\"shape\":[3],\"dist\":{\"kind\":\"uniform\","
        "\"lo\":-2.0,\"hi\":3.0}}", 7, &t);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 0), 0xaa82);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 1), 0xbfaa);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 2), 0x4102);
    cf_tensor_free(&t);
    gen("{\"dtype\":\"i32\",\"shape\":[3],\"dist\":{\"kind\":\"ints\","
        "\"lo\":-3,\"hi\":3}}", 7, &t);
    ck_assert_uint_eq(cf_load_bits(KILN_I32, t.data, 0), 0xffffffff);
    ck_assert_uint_eq(cf_load_bits(KILN_I32, t.data, 1), 0);
    ck_assert_uint_eq(cf_load_bits(KILN_I32, t.data, 2), 0xfffffffd);
    cf_tensor_free(&t);
}
END_TEST

START_TEST(diff_rounding)
{
    cf_tensor t;
    /* lo == hi gives exactly lo; then round to nearest even. */
    gen("{\"dtype\":\"bf16\",\"shape\":[1],\"dist\":{\"kind\":\"uniform\","
        "\"lo\":1.00390625,\"hi\":1.00390625}}", 1, &t); /* tie -> even */
    ck_assert_uint_eq(cf_load_bits(KILN_BF16, t.data, 0), 0x3f80);
    cf_tensor_free(&t);
    gen("{\"dtype\":\"bf16\",\"shape\":[1],\"dist\":{\"kind\":\"uniform\","
        "\"lo\":1.0039062500000002,\"hi\":1.0039062500000002}}", 1, &t);
    ck_assert_uint_eq(cf_load_bits(KILN_BF16, t.data, 0), 0x3f81);
    cf_tensor_free(&t);
    /* f16: 2^-25 ties to 0; 3*2^-26 rounds up to the smallest denormal */
    gen("{\"dtype\":\"f16\",\"shape\":[1],\"dist\":{\"kind\":\"uniform\","
        "\"lo\":2.98023223876953125e-08,\"hi\":2.98023223876953125e-08}}", 1, &t);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 0), 0x0000);
    cf_tensor_free(&t);
    gen("{\"dtype\":\"f16\",\"shape\":[1],\"dist\":{\"kind\":\"uniform\","
        "\"lo\":4.470348358154296875e-08,\"hi\":4.470348358154296875e-08}}", 1, &t);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 0), 0x0001);
    cf_tensor_free(&t);
    /* 65520 is halfway between 65504 (odd) and 2^16: rounds to inf */
    gen("{\"dtype\":\"f16\",\"shape\":[1],\"dist\":{\"kind\":\"uniform\","
        "\"lo\":-65520,\"hi\":-65520}}", 1, &t);
    ck_assert_uint_eq(cf_load_bits(KILN_F16, t.data, 0), 0xfc00);
    cf_tensor_free(&t);
}
END_TEST

START_TEST(diff_errors)
{
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"dtype\":\"f32\",\"shape\":[2]}", "missing or malformed 'dist'"},
        {"{\"dtype\":\"f32\",\"shape\":[2],\"dist\":{\"kind\":\"normal\"}}",
         "unknown kind 'normal'"},
        {"{\"dtype\":\"i32\",\"shape\":[2],\"dist\":{\"kind\":\"uniform\","
         "\"lo\":0,\"hi\":1}}", "float dtype"},
        {"{\"dtype\":\"i32\",\"shape\":[2],\"dist\":{\"kind\":\"ints\","
         "\"lo\":3,\"hi\":1}}", "lo <= hi"},
        {"{\"dtype\":\"f32\",\"shape\":[2],\"strides\":[1],\"dist\":{\"kind\":"
         "\"ints\",\"lo\":0,\"hi\":1}}", "contiguous"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_tensor t;
        uint64_t s = 1;
        char err[256] = "";
        json_t *j = js(bad[i].json);
        ck_assert_int_ne(cf_diff_generate(j, "inputs[0]", &s, &t, err,
                                          sizeof err), 0);
        ck_assert_msg(strstr(err, bad[i].needle) != NULL,
                      "case %zu: '%s' lacks '%s'", i, err, bad[i].needle);
        json_decref(j);
    }
}
END_TEST

/* ------------------------------------------- the runner, end to end (CLI) */

/* `$KILN_BIN conform ARGS` through the shell with stdout+stderr in buf;
** returns the exit status.  KILN_BIN unset (make test-unit sets it) fails
** the test: a check that cannot run is not a pass.  Runs from the repository root (the fixture paths). */
static int conform(const char *args, char *buf, size_t cap)
{
    const char *bin = getenv("KILN_BIN");
    char cmd[1024];
    ck_assert_msg(bin != NULL && bin[0] != '\0',
                  "KILN_BIN is unset (run through make test-unit)");
    snprintf(cmd, sizeof cmd, "'%s' conform %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#define FIX "tests/conformance_fixtures/"

START_TEST(cli_pass_skip_and_reports)
{
    static char out[65536];
    char tap[] = "/tmp/kiln-unit-tap-XXXXXX";
    int fd = mkstemp(tap);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "--backend ref --vectors " FIX "basic --tap %s",
             tap);
    int rc = conform(args, out, sizeof out);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, out);
    ck_assert_msg(strstr(out, "kiln conform: backend ref") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "100%: Checks: 16, Failures: 0, Errors: 0"), "%s",
                  out);
    /* differential on ref skips, and says why */
    ck_assert_msg(strstr(out, "SKIP 2 tests (differential/1, ...): "
                              "differential: the backend under test is ref"),
                  "%s", out);
    FILE *f = fopen(tap, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(tap);
    ck_assert_msg(strncmp(out, "TAP version 13\n1..16\nok 1 - ", 27) == 0, "%s",
                  out);
    ck_assert_msg(strstr(out, "ok 16 - differential/2 sum of 10000 uniform "
                              "values # SKIP"), "%s", out);
}
END_TEST

START_TEST(cli_bad_vectors)
{
    static char out[65536];
    int rc = conform("--backend ref --vectors " FIX "badtest", out, sizeof out);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, out);
    ck_assert_msg(strstr(out, "INVALID numerics/2 (bad hex in an input): invalid "
                              "vector: inputs[0].data[0]: '0x3f80000g': bad "
                              "hex digit 'g'"), "%s", out);
    ck_assert_msg(strstr(out, "INVALID numerics/3 (unknown check kind): invalid "
                              "vector: outputs[0].check.kind: 'roughly' is not "
                              "exact, ulp or abs"),
                  "%s", out);
    ck_assert_msg(strstr(out, "Checks: 3, Failures: 2, Errors: 0"), "%s", out);
    rc = conform("--vectors " FIX "corrupt", out, sizeof out);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, out);
    ck_assert_msg(strstr(out, FIX "corrupt/numerics.json:3:0: invalid JSON"),
                  "%s", out);
    rc = conform("--vectors " FIX "basic --filter zzz", out, sizeof out);
    ck_assert_msg(rc == 1 && strstr(out, "no test matches the selection"), "%s",
                  out);
    rc = conform("--vectors /nonexistent/dir", out, sizeof out);
    ck_assert_msg(rc == 1 && strstr(out, "cannot open vector directory"), "%s",
                  out);
}
END_TEST

/* Every malformed field of malformed/ (tests/conformance_fixtures/
** make_fixtures.py) fails its test as an invalid vector naming the field,
** whatever the backend (differential tests are validated before the ref
** skip), and nothing passes. */
START_TEST(cli_malformed_vectors)
{
    static char out[65536];
    static const char *const want[] = {
        "options.parse/1 (x): invalid vector: error.offset: must be an integer "
        "in 0..2147483647, not a string",
        "options.parse/2 (x): invalid vector: set: 'dump' has no execute list",
        "options.parse/3 (x): invalid vector: canonical: does not apply to an "
        "invalid test",
        "options.parse/4 (x): invalid vector: error.kind: 'Unknown' is not "
        "syntax, unknown, argument or element",
        "options.precedence/1 (x): invalid vector: steps: must be empty when "
        "'createError' is given",
        "options.precedence/2 (x): invalid vector: steps[0].action: 'exec' is "
        "not execute, setenv or reload",
        "options.precedence/3 (x): invalid vector: env.enable: must be a "
        "string or null, not an integer",
        "options.precedence/4 (x): invalid vector: steps[0].levels.none: "
        "missing field",
        "options.precedence/5 (x): invalid vector: steps[0].canonical: does "
        "not apply to a step that expects an error",
        "cache.isolation/1 (the same sequence on 4 threads at once): invalid "
        "vector: threads: 4294967297 is outside 1..64",
        "cache.isolation/2 (a*b+c: contracted, then disable=fma, then default "
        "again): invalid vector: steps[0].expect.plan: must be a string, not "
        "an integer",
        "cache.isolation/3 (a*b+c: contracted, then disable=fma, then default "
        "again): invalid vector: steps[0].expect.compiles: must be an integer "
        "in 0..9223372036854775807, not a string",
        "again): invalid vector: steps[0].expect.compiles: must be an integer "
        "in 0..9223372036854775807, not a real number",
        "cache.isolation/5 (a*b+c: contracted, then disable=fma, then default "
        "again): invalid vector: threads: applies only with \"concurrent\": "
        "true",
        "cache.isolation/6 (the same sequence on 4 threads at once): invalid "
        "vector: concurrent: must be true or false, not a string",
        "invalid vector: steps[0].expect.plna: unknown field (the fields here "
        "are plan, kernels, compiles or db)",
        "invalid vector: steps[0].expect.kernels: 'hits' is not hit, miss or "
        "any",
        "invalid vector: steps[0].expect.compiles: -1 is outside "
        "0..9223372036854775807",
        "numerics/1 (add f32 with NaN and signed zero): invalid vector: "
        "options: must be an object, not a string",
        "numerics/2 (maximum propagates NaN; max(+0,-0) either sign): invalid "
        "vector: outputs[0].check: alternatives key '-0' is not an element "
        "index below 3",
        "numerics/3 (add f32 with NaN and signed zero): invalid vector: "
        "options.enable: must be a list, not a string",
        "numerics/4 (add f32 with NaN and signed zero): invalid vector: "
        "options.enable[0]: must be a string, not an integer",
        "numerics/5 (add f32 with NaN and signed zero): invalid vector: "
        "inputs[0]: 'strides' must be a list of integers",
        "numerics/6 (add with mismatched sizes is a shape error): invalid "
        "vector: error.status: 'KILN_ERR_NOPE' is not a Kiln status name",
        "numerics/7 (add f32 with NaN and signed zero): invalid vector: error: "
        "does not apply to a valid or acceptable test",
        /* 1 + 2^24 * 2^40 wraps to 1 in 64 bits: one stored element */
        "numerics/8 (add f32 with NaN and signed zero): invalid vector: "
        "inputs[0]: storage too large (at most 67108864 elements per tensor)",
        "numerics/9 (add f32 with NaN and signed zero): invalid vector: "
        "outputz: unknown field",
        "numerics/10 (add f32 with NaN and signed zero): invalid vector: "
        "outputs[0].check: 'max' must be an integer >= 0",
        "numerics/11 (add f32 with NaN and signed zero): invalid vector: "
        "outputs[0].check.bounds: does not apply to this check kind",
        "numerics/12 (add f32 with NaN and signed zero): invalid vector: "
        "inputs: 1 tensors for a fusion of 2 inputs",
        "numerics/13 (add with mismatched sizes is a shape error): invalid "
        "vector: givenOutputs[0].overlaps: needs exactly one of input and "
        "output",
        "numerics/14 (add f32 with NaN and signed zero): invalid vector: "
        "givenOutputs: does not apply to a valid or acceptable test",
        "numerics/15 (add with mismatched sizes is a shape error): invalid "
        "vector: givenOutputs[0].dtype: 'f33' is not bool, i32, i64, f16, "
        "bf16, f32 or f64",
        "numerics/16 (add f32 with NaN and signed zero): invalid vector: "
        "inputs[0]: 'offset' must be an integer in 0..67108864",
        "numerics/17 (add f32 with NaN and signed zero): invalid vector: "
        "rules.num.exact: the outcome must be a non-empty string",
        "cache.isolation/10 (a*b+c: contracted, then disable=fma, then default "
        "again): invalid vector: capacities.plan: 0 is outside 1..1048576",
        "cache.isolation/11 (the same sequence on 4 threads at once): invalid "
        "vector: steps[0].action: 'reload' is not allowed in a concurrent test",
        "cache.isolation/12 (a*b+c: contracted, then disable=fma, then default "
        "again): invalid vector: steps[0].env: missing field",
        "cache.isolation/13 (a*b+c: contracted, then disable=fma, then default "
        "again): invalid vector: rules: 'Cache' is not a rule id",
        "differential/1 (add of two uniform vectors): invalid vector: seed: -1 "
        "is outside 0..9223372036854775807",
        "differential/2 (add of two uniform vectors): invalid vector: "
        "inputs[0].data: unknown field (the fields here are dtype, shape or "
        "dist)",
        "differential/3 (add of two uniform vectors): invalid vector: "
        "tolerance[0].max: must be an integer in 0..9223372036854775807, not "
        "a string",
        "differential/4 (sum of 10000 uniform values): invalid vector: "
        "tolerance[0].max: unknown field (the fields here are kind, n or "
        "absFusion)",
        "differential/5 (add of two uniform vectors): invalid vector: "
        "inputsFirst[0][0]: '0x3f8000001' does not fit f32",
    };
    int rc = conform("--backend ref --vectors " FIX "malformed", out, sizeof out);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, out);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]) != NULL, "lacks '%s':\n%s", want[i],
                      out);
    ck_assert_msg(strstr(out, "Checks: 44, Failures: 44, Errors: 0"), "%s", out);
}
END_TEST

/* ----------------------------------------------- caller-provided outputs */

/* A ref context and `neg` of an f32 [5] input (host tensors). */
static kiln_context *outs_ctx(kiln_fusion **f, kiln_tensor **in, float *x)
{
    static const char kf[] = "kiln.fusion 1\n%0 = input f32 [?]\n"
                             "%1 = neg %0\noutput %1\n";
    kiln_context_config cfg;
    kiln_context *ctx = NULL;
    int64_t n = 5;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "ref";
    cfg.use_env_override = 1;
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    ck_assert_int_eq(kiln_fusion_parse(kf, strlen(kf), f), KILN_OK);
    for (int i = 0; i < 5; i++)
        x[i] = (float)i + 0.5f;
    ck_assert_int_eq(kiln_tensor_create(ctx, KILN_F32, 1, &n, NULL,
                                        KILN_MEM_HOST, x, in), KILN_OK);
    return ctx;
}

/* The canaries are what docs/conformance.md lists: signalling NaNs for
** floats (quiet bit clear), odd patterns, bool neither 0 nor 1. */
START_TEST(outputs_canaries)
{
    ck_assert_uint_eq(cf_canary(KILN_F32, 0), 0x7fa5c3e1u);
    ck_assert_uint_eq(cf_canary(KILN_F32, 1), 0xff9a3c1eu);
    ck_assert(cf_is_nan(KILN_F32, cf_canary(KILN_F32, 0)) &&
              !(cf_canary(KILN_F32, 0) & 0x400000));
    ck_assert(cf_is_nan(KILN_F16, cf_canary(KILN_F16, 1)) &&
              !(cf_canary(KILN_F16, 1) & 0x200));
    ck_assert(cf_is_nan(KILN_BF16, cf_canary(KILN_BF16, 0)) &&
              !(cf_canary(KILN_BF16, 0) & 0x40));
    ck_assert(cf_is_nan(KILN_F64, cf_canary(KILN_F64, 1)) &&
              !(cf_canary(KILN_F64, 1) & (1ull << 51)));
    ck_assert_uint_gt(cf_canary(KILN_BOOL, 0), 1);
    ck_assert_uint_ne(cf_canary(KILN_I64, 0), cf_canary(KILN_I64, 1));
}
END_TEST

/* Guarded outputs: aligned in run 1, not in run 2; an unwritten element, a
** write past the end or before the start, and a difference between runs
** are each reported with the element or byte. */
START_TEST(outputs_guards)
{
    kiln_fusion *f;
    kiln_tensor *in;
    float x[5];
    char msg[512];
    kiln_context *ctx = outs_ctx(&f, &in, x);
    cf_outset a, b;
    ck_assert_int_eq(cf_outset_make(&a, ctx, f, &in, 1, 1, 0, msg, sizeof msg), 0);
    ck_assert_int_eq(cf_outset_make(&b, ctx, f, &in, 1, 1, 1, msg, sizeof msg), 0);
    ck_assert_uint_eq((uintptr_t)kiln_tensor_data(a.t[0]) % 16, 0);
    ck_assert_uint_ne((uintptr_t)kiln_tensor_data(b.t[0]) % 16, 0);
    /* nothing written yet: element 0 still holds the canary */
    ck_assert_int_eq(cf_outset_check(&a, ctx, 1, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "outputs[0] element 0 [0] was never written: "
                         "it still holds the canary 0x7fa5c3e1") != NULL,
                  "%s", msg);
    ck_assert_int_eq(kiln_execute(ctx, f, &in, 1, a.t, 1, NULL, NULL), KILN_OK);
    ck_assert_int_eq(kiln_execute(ctx, f, &in, 1, b.t, 1, NULL, NULL), KILN_OK);
    ck_assert_int_eq(cf_outset_check(&a, ctx, 1, msg, sizeof msg), 0);
    ck_assert_int_eq(cf_outset_check(&b, ctx, 1, msg, sizeof msg), 0);
    ck_assert_int_eq(cf_outset_same(&a, &b, msg, sizeof msg), 0);
    /* one byte past the end (host memory: written directly) */
    unsigned char *p = kiln_tensor_data(a.t[0]);
    p[20] ^= 0xff;
    ck_assert_int_eq(cf_outset_check(&a, ctx, 1, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "outputs[0]: a write outside the output: guard "
                         "byte 0 past its end (byte offset 20)") != NULL,
                  "%s", msg);
    p[20] ^= 0xff;
    p[-3] ^= 0x01;
    ck_assert_int_eq(cf_outset_check(&a, ctx, 1, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "guard byte 3 before its start") != NULL, "%s",
                  msg);
    p[-3] ^= 0x01;
    /* run 2 differs at element 3 */
    ck_assert_int_eq(cf_outset_check(&a, ctx, 1, msg, sizeof msg), 0);
    b.g[0].after[b.g[0].off + 12] ^= 1;
    ck_assert_int_eq(cf_outset_same(&a, &b, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "outputs[0] element 3 [3] differs between two "
                         "runs") != NULL, "%s", msg);
    /* a failed execute must leave the output's own bytes alone too */
    ck_assert_int_eq(cf_outset_check(&a, ctx, 0, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "failed kiln_execute wrote outputs[0]: byte 0")
                  != NULL, "%s", msg);
    cf_outset_free(&a);
    cf_outset_free(&b);
    kiln_tensor_destroy(in);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* givenOutputs: an output over the input is refused (ALIGNMENT), and a
** write into the overlapped input is found. */
START_TEST(outputs_given_overlap)
{
    kiln_fusion *f;
    kiln_tensor *in;
    float x[5];
    char msg[512];
    kiln_context *ctx = outs_ctx(&f, &in, x);
    cf_outset s;
    json_error_t je;
    json_t *spec = json_loads("[{\"dtype\": \"f32\", \"shape\": [5], "
                              "\"overlaps\": {\"input\": 0, \"byteOffset\": "
                              "0}}]", 0, &je);
    ck_assert_ptr_nonnull(spec);
    ck_assert_int_eq(cf_outset_given(&s, ctx, spec, &in, 1, 1, msg, sizeof msg),
                     0);
    ck_assert_ptr_eq(kiln_tensor_data(s.t[0]), (void *)x);
    ck_assert_int_eq(kiln_execute(ctx, f, &in, 1, s.t, 1, NULL, NULL),
                     KILN_ERR_ALIGNMENT);
    ck_assert_int_eq(cf_outset_check(&s, ctx, 0, msg, sizeof msg), 0);
    x[1] = -x[1];
    ck_assert_int_eq(cf_outset_check(&s, ctx, 0, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "failed kiln_execute wrote input 0 (which an "
                         "output overlaps): byte 7 changed") != NULL, "%s",
                  msg);
    cf_outset_free(&s);
    /* an overlap that does not fit the storage is refused up front */
    json_decref(spec);
    spec = json_loads("[{\"dtype\": \"f32\", \"shape\": [5], \"overlaps\": "
                      "{\"input\": 0, \"byteOffset\": 4}}]", 0, &je);
    ck_assert_int_eq(cf_outset_given(&s, ctx, spec, &in, 1, 1, msg, sizeof msg),
                     1);
    ck_assert_msg(strstr(msg, "do not fit") != NULL, "%s", msg);
    cf_outset_free(&s);
    json_decref(spec);
    kiln_tensor_destroy(in);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* budget/: tests over the per-test budget fail at once as invalid vectors
** (the element budget before decoding, the work budget in kiln_execute
** through max_work), in fork mode and in the runner's own process; a
** small test next to them still passes.  Before the budget, test 2 (a
** 2^48-element reduction over two stride-0 inputs) ran for days. */
START_TEST(cli_budget)
{
    static char out[65536];
    static const char *const want[] = {
        "INVALID numerics/1 (two 1-element inputs with stride 0 spanning a "
        "2^56-element domain): invalid vector: inputs[0]: too many elements "
        "(at most 67108864 per tensor)",
        "INVALID numerics/2 (a 2^48-element domain within the element budget: "
        "the work budget): invalid vector: kiln_execute: KILN_ERR_LIMIT: "
        "kiln_execute: work limit: this call would do 281475010265089 element "
        "operations, above the context's max_work of 4294967296",
        "INVALID numerics/3 (five 2^24-element stride-0 inputs: the total over "
        "tensors): invalid vector: inputs[3]: the test's tensors exceed the "
        "per-test budget of 67108864 elements here",
        "Checks: 4, Failures: 3, Errors: 0",
    };
    for (int nofork = 0; nofork < 2; nofork++) {
        if (nofork)
            setenv("CK_FORK", "no", 1);
        int rc = conform("--backend ref --timeout 20 --vectors " FIX "budget",
                         out, sizeof out);
        unsetenv("CK_FORK");
        ck_assert_msg(rc == 1, "rc %d: %s", rc, out);
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            ck_assert_msg(strstr(out, want[i]) != NULL, "CK_FORK=%s: lacks "
                          "'%s':\n%s", nofork ? "no" : "yes", want[i], out);
    }
}
END_TEST

/* sumbound/: an absFusion whose output is smaller than the output it
** bounds is an invalid vector.  The runner used to read the main output's
** element count from it (a heap over-read, fatal under ASan and with
** CK_FORK=no).  Differential needs a backend other than ref: the test
** plugin, which runs like ref. */
START_TEST(cli_sumbound_size)
{
    static char out[65536];
    const char *plugin = getenv("KILN_TEST_PLUGIN");
    char args[4096];
    ck_assert_msg(plugin != NULL, "KILN_TEST_PLUGIN is unset (run through "
                                  "make test-unit)");
    snprintf(args, sizeof args, "--backend '%s' --vectors " FIX "sumbound",
             plugin);
    int rc = conform(args, out, sizeof out);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, out);
    ck_assert_msg(strstr(out, "INVALID differential/1 (row sums bounded by a "
                              "scalar absFusion): invalid vector: "
                              "tolerance[0]: output 0 of 'absFusion' is f32 "
                              "of 1 elements; sumBound needs a float output "
                              "of the 4096 elements output 0 has"),
                  "%s", out);
}
END_TEST

/* --serde on the test plugin, which persists kernels: the round trip
** holds; a backend that persists nothing, a database that stores nothing
** and a database that hands back another kernel (outputs one bit off,
** within the differential tolerance) each fail it. */
START_TEST(cli_serde_round_trip)
{
    static char out[65536];
    const char *plugin = getenv("KILN_TEST_PLUGIN");
    ck_assert_msg(plugin != NULL && plugin[0] != '\0', "KILN_TEST_PLUGIN is not set");
    char args[512];
    snprintf(args, sizeof args, "--serde --backend '%s' --vectors " FIX "basic", plugin);
    static const struct {
        const char *mode, *needle;
        int rc;
    } cases[] = {
        {"", "pass 1 exit 0, pass 2 exit 0: the round trip through the kernel "
             "database holds", 0},
        /* numerics run twice (aligned and unaligned outputs): two
        ** kernels per test */
        {"none", "serde pass 1: the kernel database did not store every kernel "
                 "compiled (0 not stored, 0 corrupt, 2 refused", 1},
        {"forget", "serde pass 1: the kernel database did not store every kernel "
                   "compiled (2 not stored", 1},
        {"skew", "serde pass 2: the outputs differ from pass 1", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("KILN_TEST_PLUGIN_DB", cases[i].mode, 1);
        int rc = conform(args, out, sizeof out);
        ck_assert_msg(rc == cases[i].rc, "mode '%s': rc %d: %s", cases[i].mode, rc, out);
        ck_assert_msg(strstr(out, cases[i].needle) != NULL, "mode '%s': '%s' lacks '%s'",
                      cases[i].mode, out, cases[i].needle);
    }
    unsetenv("KILN_TEST_PLUGIN_DB");
}
END_TEST

START_TEST(cli_usage_errors)
{
    static char out[8192];
    static const struct {
        const char *args, *needle;
    } bad[] = {
        {"--serde --backend ref --vectors " FIX "basic",
         "--serde needs a backend that compiles and persists kernels (cuda, "
         "nvrtc or a plugin); ref compiles nothing"},
        {"--serde --serde-check x --vectors " FIX "basic",
         "--serde, --serde-record and --serde-check exclude each other"},
        {"--serde-record", "option '--serde-record' needs a value"},
        {"--shard 3/2 --vectors " FIX "basic", "--shard needs I/N"},
        {"--shard x --vectors " FIX "basic", "--shard needs I/N"},
        {"--filter '(' --vectors " FIX "basic", "--filter '('"},
        {"--category nope --vectors " FIX "basic",
         "no category 'nope' in " FIX "basic; present: options.parse "
         "cache.isolation numerics differential"},
        {"--bogus", "unknown option '--bogus'"},
        {"stray", "unexpected argument 'stray'"},
        {"--shard", "option '--shard' needs a value"},
        {"--timeout 0", "--timeout needs seconds > 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = conform(bad[i].args, out, sizeof out);
        ck_assert_msg(rc == 2, "%s: rc %d: %s", bad[i].args, rc, out);
        ck_assert_msg(strstr(out, bad[i].needle) != NULL, "%s: '%s' lacks '%s'",
                      bad[i].args, out, bad[i].needle);
    }
    ck_assert_int_eq(conform("--help", out, sizeof out), 0);
    ck_assert(strstr(out, "--shard I/N") != NULL);
}
END_TEST

START_TEST(cli_list_filter_shard)
{
    static char all[8192], a[8192], b[8192];
    conform("--list --vectors " FIX "basic", all, sizeof all);
    ck_assert_str_eq(all, "options.parse/1\noptions.parse/2\noptions.parse/3\n"
                          "options.parse/4\ncache.isolation/1\n"
                          "cache.isolation/2\nnumerics/1\nnumerics/2\n"
                          "numerics/3\nnumerics/4\nnumerics/5\nnumerics/6\n"
                          "numerics/7\nnumerics/8\ndifferential/1\n"
                          "differential/2\n");
    /* round-robin shards partition the selection */
    ck_assert_int_eq(conform("--list --shard 1/3 --vectors " FIX "basic", a,
                             sizeof a), 0);
    ck_assert_str_eq(a, "options.parse/1\noptions.parse/4\nnumerics/1\n"
                        "numerics/4\nnumerics/7\ndifferential/2\n");
    ck_assert_int_eq(conform("--list --shard 3/3 --vectors " FIX "basic", b,
                             sizeof b), 0);
    ck_assert_str_eq(b, "options.parse/3\ncache.isolation/2\nnumerics/3\n"
                        "numerics/6\ndifferential/1\n");
    /* the filter sees ids and comments; --exclude removes */
    ck_assert_int_eq(conform("--list --filter 'strided|^options.parse/2$' "
                             "--vectors " FIX "basic", a, sizeof a), 0);
    ck_assert_str_eq(a, "options.parse/2\nnumerics/2\n");
    ck_assert_int_eq(conform("--list --category numerics --exclude 'f32' "
                             "--vectors " FIX "basic", a, sizeof a), 0);
    ck_assert_str_eq(a, "numerics/2\nnumerics/3\nnumerics/6\nnumerics/7\n"
                        "numerics/8\n");
}
END_TEST

Suite *conform_check_suite(void)
{
    Suite *s = suite_create("conform_check");
    TCase *tc = tcase_create("numeric");
    tcase_add_test(tc, ulp_f32);
    tcase_add_test(tc, ulp_other_formats);
    tcase_add_test(tc, classify);
    tcase_add_test(tc, compare_exact_nan_and_zero);
    tcase_add_test(tc, compare_ulp);
    tcase_add_test(tc, compare_summarises_all_failures);
    tcase_add_test(tc, compare_ftz);
    tcase_add_test(tc, compare_abs_and_alternatives);
    tcase_add_test(tc, compare_sumbound_gamma);
    tcase_add_test(tc, check_json_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("vectors");
    tcase_add_test(tc, hex_parse);
    tcase_add_test(tc, tensor_strided_and_repeat);
    tcase_add_test(tc, tensor_errors);
    tcase_add_test(tc, file_ok);
    tcase_add_test(tc, file_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("outputs");
    tcase_add_test(tc, outputs_canaries);
    tcase_add_test(tc, outputs_guards);
    tcase_add_test(tc, outputs_given_overlap);
    suite_add_tcase(s, tc);
    tc = tcase_create("differential");
    tcase_add_test(tc, splitmix);
    tcase_add_test(tc, diff_inputs);
    tcase_add_test(tc, diff_rounding);
    tcase_add_test(tc, diff_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cli_pass_skip_and_reports);
    tcase_add_test(tc, cli_bad_vectors);
    tcase_add_test(tc, cli_usage_errors);
    tcase_add_test(tc, cli_serde_round_trip);
    tcase_add_test(tc, cli_list_filter_shard);
    tcase_add_test(tc, cli_malformed_vectors);
    tcase_add_test(tc, cli_budget);
    tcase_add_test(tc, cli_sumbound_size);
    suite_add_tcase(s, tc);
    return s;
}
