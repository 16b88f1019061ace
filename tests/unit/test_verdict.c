/*
** test_verdict.c -- unit tests of what decides a conformance verdict
** (conformance/verdict.c, expectations.c, sha256.c) and of
** kiln_context_backend_identity.  The command line end to end is
** tests/cli/test_verdict.py.  SHA-256 digests were computed independently
** with Python's hashlib.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../conformance/conform.h"

/* ---------------------------------------------------------------- sha256 */

START_TEST(sha256_known_digests)
{
    static const struct {
        size_t n; /* that many 'a' */
        const char *hex;
    } v[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {1000000,
         "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    };
    char out[65];
    cf_sha256_hex("", 0, out);
    ck_assert_str_eq(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
                          "95991b7852b855");
    cf_sha256_hex("abc", 3, out);
    ck_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb4"
                          "10ff61f20015ad");
    char *a = malloc(1000000);
    ck_assert_ptr_nonnull(a);
    memset(a, 'a', 1000000);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        cf_sha256_hex(a, v[i].n, out);
        ck_assert_msg(strcmp(out, v[i].hex) == 0, "%zu: %s", v[i].n, out);
    }
    free(a);
}
END_TEST

/* ---------------------------------------------------------- expectations */

START_TEST(expectations_parse)
{
    static const char text[] =
        "# comment\n"
        "\n"
        "numerics/12   fail   f16 matmul rounds to f16 (bug 7)  \r\n"
        "  numerics/1? unsupported no reductions\n"
        "cache.isolation/* skip hangs\n"
        "numerics/1* fail never reached: numerics/12 matches line 3 first";
    cf_expectations e;
    char err[CF_MSG];
    ck_assert_msg(cf_expectations_parse(text, sizeof text - 1, "x.txt", &e, err,
                                        sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(e.n, 4);
    ck_assert_str_eq(e.lines[0].pattern, "numerics/12");
    ck_assert_int_eq(e.lines[0].result, CF_FAIL);
    ck_assert_str_eq(e.lines[0].reason, "f16 matmul rounds to f16 (bug 7)");
    ck_assert_int_eq(e.lines[0].line, 3);
    ck_assert_int_eq(e.lines[1].result, CF_UNSUPPORTED);
    ck_assert_int_eq(e.lines[2].result, CF_SKIP);
    /* the first matching line decides */
    ck_assert_ptr_eq(cf_expectations_match(&e, "numerics/12", 1), &e.lines[0]);
    ck_assert_ptr_eq(cf_expectations_match(&e, "numerics/13", 1), &e.lines[1]);
    ck_assert_ptr_eq(cf_expectations_match(&e, "numerics/100", 1), &e.lines[3]);
    ck_assert_ptr_eq(cf_expectations_match(&e, "cache.isolation/7", 1),
                     &e.lines[2]);
    ck_assert_ptr_null(cf_expectations_match(&e, "numerics/2", 1));
    ck_assert_uint_eq(e.lines[0].uses, 1);
    /* the hash is of the bytes */
    char h[65];
    cf_sha256_hex(text, sizeof text - 1, h);
    ck_assert_str_eq(e.sha256, h);
    cf_expectations_free(&e);
}
END_TEST

START_TEST(expectations_errors)
{
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"numerics/1 fail\n", "x.txt:1: 'numerics/1 fail' has no reason"},
        {"numerics/1\n", "needs a result"},
        {"numerics/1 pass it works\n", "result 'pass' is not fail"},
        {"numerics/1 invalid-vector x\n", "is not fail, unsupported or skip"},
        {"# ok\nnumerics/1 fail a\nnumerics/1 skip b\n",
         "x.txt:3: the pattern is already on line 2"},
        {"numerics/1 fail a\001b\n", "a control character (byte 0x01)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_expectations e;
        char err[CF_MSG];
        memset(&e, 0x5a, sizeof e);
        ck_assert_int_ne(cf_expectations_parse(bad[i].text, strlen(bad[i].text),
                                               "x.txt", &e, err, sizeof err),
                         0);
        ck_assert_msg(strstr(err, bad[i].needle) != NULL, "%zu: %s", i, err);
    }
    cf_expectations e;
    char err[CF_MSG];
    ck_assert_int_ne(cf_expectations_parse("a fail x\0y\n", 11, "x.txt", &e, err,
                                           sizeof err), 0);
    ck_assert_msg(strstr(err, "a NUL byte") != NULL, "%s", err);
    ck_assert_int_ne(cf_expectations_load("/nonexistent/exp.txt", &e, err,
                                          sizeof err), 0);
}
END_TEST

/* --------------------------------------------------------------- outcome */

/* A test with the given flags (NUL-separated, n of them). */
static cf_test mktest(const char *flags, size_t n)
{
    cf_test t;
    memset(&t, 0, sizeof t);
    t.category = "numerics";
    t.tcid = 1;
    t.comment = "c";
    t.result = "valid";
    t.text = "{}";
    t.flags = flags;
    t.n_flags = n;
    return t;
}

START_TEST(finish_outcome_rules)
{
    static const char fl[] = "op=add\0disable=fallback";
    cf_test plain = mktest(fl, 1), about = mktest(fl, 2);
    cf_outcome o;
    ck_assert(cf_test_has_flag(&about, CF_FALLBACK_FLAG));
    ck_assert(!cf_test_has_flag(&plain, CF_FALLBACK_FLAG));
    /* a pass with a REFERENCE segment is unsupported ... */
    memset(&o, 0, sizeof o);
    o.native = 2;
    o.fallback = 1;
    snprintf(o.fallback_what, sizeof o.fallback_what, "reduction");
    o.acceptable = 1;
    cf_finish_outcome(&o, &plain, 0);
    ck_assert_int_eq(o.status, CF_UNSUPPORTED);
    ck_assert_msg(strstr(o.msg, "1 of 3 segments ran on the reference "
                                "fallback") && strstr(o.msg, "reduction"),
                  "%s", o.msg);
    ck_assert_int_eq(o.acceptable, 0);
    /* ... unless the test is about the fallback */
    memset(&o, 0, sizeof o);
    o.fallback = 1;
    cf_finish_outcome(&o, &about, 0);
    ck_assert_int_eq(o.status, CF_PASS);
    /* a native pass stays a pass */
    memset(&o, 0, sizeof o);
    o.native = 3;
    cf_finish_outcome(&o, &plain, 0);
    ck_assert_int_eq(o.status, CF_PASS);
    /* the backend declining under disable=fallback */
    memset(&o, 0, sizeof o);
    o.status = CF_FAIL;
    o.declined = 1;
    snprintf(o.msg, sizeof o.msg, "step 0: kiln_execute: "
             "KILN_ERR_FALLBACK_DISABLED");
    cf_finish_outcome(&o, &about, 0);
    ck_assert_int_eq(o.status, CF_UNSUPPORTED);
    ck_assert_str_eq(o.msg, "step 0: kiln_execute: KILN_ERR_FALLBACK_DISABLED");
    /* invalid vectors */
    memset(&o, 0, sizeof o);
    o.status = CF_FAIL;
    snprintf(o.msg, sizeof o.msg, "invalid vector: inputs[0]: bad");
    cf_finish_outcome(&o, &plain, 0);
    ck_assert_int_eq(o.status, CF_INVALID);
    /* nothing ran anywhere: a pass of Kiln itself, a skip for a plugin */
    memset(&o, 0, sizeof o);
    cf_finish_outcome(&o, &plain, 0);
    ck_assert_int_eq(o.status, CF_PASS);
    cf_finish_outcome(&o, &plain, 1);
    ck_assert_int_eq(o.status, CF_SKIP);
    ck_assert_msg(strstr(o.msg, "judges Kiln's own runtime"), "%s", o.msg);
    memset(&o, 0, sizeof o);
    o.native = 1;
    cf_finish_outcome(&o, &plain, 1);
    ck_assert_int_eq(o.status, CF_PASS);
    /* a plain failure stays one, even with fallback segments */
    memset(&o, 0, sizeof o);
    o.status = CF_FAIL;
    o.fallback = 4;
    snprintf(o.msg, sizeof o.msg, "outputs[0]: element 0");
    cf_finish_outcome(&o, &plain, 0);
    ck_assert_int_eq(o.status, CF_FAIL);
}
END_TEST

START_TEST(outcome_merge_and_segments)
{
    cf_outcome o, t;
    memset(&o, 0, sizeof o);
    memset(&t, 0, sizeof t);
    o.native = 1;
    t.native = 2;
    t.fallback = 3;
    snprintf(t.fallback_what, sizeof t.fallback_what, "pointwise");
    t.status = CF_FAIL;
    t.declined = 1;
    snprintf(t.msg, sizeof t.msg, "thread 1: declined");
    cf_note_abs(&t, 1, 0.5);
    cf_outcome_merge(&o, &t);
    ck_assert_uint_eq(o.native, 3);
    ck_assert_uint_eq(o.fallback, 3);
    ck_assert_str_eq(o.fallback_what, "pointwise");
    ck_assert_int_eq(o.status, CF_FAIL);
    ck_assert(o.declined);
    ck_assert(o.abs_seen && o.max_abs == 0.5);
    cf_note_abs(&o, 0, 9.0); /* not seen: ignored */
    ck_assert(o.max_abs == 0.5);
    cf_note_segments(&o, NULL); /* no info record: nothing */
    ck_assert_uint_eq(o.native, 3);
    for (int s = 0; s < CF_N_STATUS; s++)
        ck_assert_int_eq(cf_status_parse(cf_status_name((cf_status)s)), s);
    ck_assert_int_eq(cf_status_parse("passed"), -1);
}
END_TEST

/* -------------------------------------------------------------- summary */

static cf_result res(const cf_test *t, cf_status st, uint64_t native,
                     const cf_expect_line *ex)
{
    cf_result r;
    memset(&r, 0, sizeof r);
    r.test = t;
    snprintf(r.id, sizeof r.id, "numerics/1");
    r.status = st;
    r.native = native;
    r.expect = ex;
    return r;
}

/* cf_summarize of the two results r[] into a fresh *s. */
static void summarize(cf_summary *s, cf_result *r, int strict)
{
    memset(s, 0, sizeof *s);
    s->results = r;
    s->n_results = 2;
    s->strict = strict;
    ck_assert_int_eq(cf_summarize(s), 0);
}

START_TEST(verdict_needs_evidence)
{
    cf_test t = mktest("", 0);
    cf_expect_line fail_line = {"numerics/1", CF_FAIL, "known", 1, 0};
    cf_summary s;
    char why[512];
    /* passes without a native segment are no evidence */
    cf_result r1[] = {res(&t, CF_PASS, 0, NULL), res(&t, CF_UNSUPPORTED, 0, NULL)};
    summarize(&s, r1, 0);
    ck_assert(!s.verdict.pass);
    cf_verdict_text(&s, why, sizeof why);
    ck_assert_msg(strstr(why, "no test ran on the backend under test and passed "
                              "(1 passed without a native segment)"), "%s", why);
    ck_assert_uint_eq(s.total.n[CF_PASS], 1);
    ck_assert_uint_eq(s.cats[0].c.n[CF_UNSUPPORTED], 1);
    cf_summary_free(&s);
    /* one native pass: green, unless --strict sees the unsupported one */
    cf_result r2[] = {res(&t, CF_PASS, 1, NULL), res(&t, CF_UNSUPPORTED, 0, NULL)};
    summarize(&s, r2, 0);
    ck_assert(s.verdict.pass && s.verdict.evidence == 1);
    cf_summary_free(&s);
    summarize(&s, r2, 1);
    ck_assert(!s.verdict.pass && s.verdict.strict == 1 && r2[1].fails_run);
    cf_summary_free(&s);
    /* an expected fail is fine; the same test passing contradicts it */
    cf_result r3[] = {res(&t, CF_PASS, 1, NULL), res(&t, CF_FAIL, 1, &fail_line)};
    summarize(&s, r3, 0);
    ck_assert(s.verdict.pass && s.verdict.expected == 1 && !r3[1].unexpected);
    cf_summary_free(&s);
    r3[1].status = CF_PASS;
    summarize(&s, r3, 0);
    ck_assert(!s.verdict.pass && s.verdict.unexpected == 1 && r3[1].unexpected);
    cf_summary_free(&s);
    /* an invalid vector always fails the run */
    cf_result r4[] = {res(&t, CF_PASS, 1, NULL), res(&t, CF_INVALID, 0, NULL)};
    summarize(&s, r4, 0);
    ck_assert(!s.verdict.pass && s.verdict.invalid == 1);
    cf_summary_free(&s);
}
END_TEST

/* ------------------------------------------------------------- identity */

START_TEST(backend_identity)
{
    kiln_context *ctx = NULL;
    kiln_context_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.backend = "ref";
    ck_assert_int_eq(kiln_context_create(&c, &ctx), KILN_OK);
    char buf[256], small[5];
    ck_assert_int_eq(kiln_context_backend_identity(ctx, buf, sizeof buf), KILN_OK);
    ck_assert_msg(strncmp(buf, "ref kiln-", 9) == 0, "%s", buf);
    ck_assert_int_eq(kiln_context_backend_identity(ctx, small, sizeof small),
                     KILN_OK);
    ck_assert_str_eq(small, "ref ");
    ck_assert_int_eq(kiln_context_backend_identity(NULL, buf, sizeof buf),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_context_backend_identity(ctx, NULL, 4),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_context_backend_identity(ctx, buf, 0),
                     KILN_ERR_INVALID_ARGUMENT);
    kiln_context_destroy(ctx);
}
END_TEST

Suite *verdict_suite(void)
{
    Suite *s = suite_create("verdict");
    TCase *tc = tcase_create("verdict");
    tcase_add_test(tc, sha256_known_digests);
    tcase_add_test(tc, expectations_parse);
    tcase_add_test(tc, expectations_errors);
    tcase_add_test(tc, finish_outcome_rules);
    tcase_add_test(tc, outcome_merge_and_segments);
    tcase_add_test(tc, verdict_needs_evidence);
    tcase_add_test(tc, backend_identity);
    suite_add_tcase(s, tc);
    return s;
}
