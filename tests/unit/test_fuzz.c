/*
** test_fuzz.c -- the fuzz category's generator and test file
** (conformance/fuzz.c; docs/conformance.md, "The fuzz category"): every
** generated fusion is valid and the same for the same seed, the seeds of
** the default run cover every op of the op table, the in-memory test file
** holds the seeds asked for and refuses bad ranges, and fusions run clean
** on ref against ref.  That a wrong backend fails (and is minimised) is
** proved by the mutants contig_inner_only and matmul_dense_a (make mutants).
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../conformance/conform.h"

/* Every op of the op table (docs/fusion-format.md, section 3). */
static const char *const all_ops[] = {
    "input", "const", "neg", "abs", "exp", "log", "sqrt", "rsqrt",
    "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "erf", "floor",
    "ceil", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq",
    "ne", "lt", "le", "gt", "ge", "and", "or", "not", "where", "fma", "cast",
    "broadcast", "sum", "max", "min", "matmul"};
#define N_OPS (sizeof all_ops / sizeof all_ops[0])

START_TEST(generated_fusions_are_valid_and_cover_every_op)
{
    int seen[N_OPS] = {0};
    int dtypes[7] = {0}, keepdim = 0, broadcast_axis = 0, rank0 = 0;
    static const char *const dn[] = {"bool", "i32", "i64", "f16", "bf16",
                                     "f32", "f64"};
    ck_assert_int_eq((int)N_OPS, 41);
    for (uint64_t seed = CF_FUZZ_SEED; seed < CF_FUZZ_SEED + CF_FUZZ_COUNT;
         seed++) {
        char *a = NULL, *b = NULL;
        ck_assert_int_eq(cf_fuzz_text(seed, &a), 0);
        ck_assert_int_eq(cf_fuzz_text(seed, &b), 0);
        ck_assert_str_eq(a, b); /* the seed alone decides */
        kiln_fusion *f = NULL;
        kiln_status st = kiln_fusion_parse(a, strlen(a), &f);
        ck_assert_msg(st == KILN_OK, "seed %llu: %s\n%s",
                      (unsigned long long)seed, kiln_last_error(), a);
        kiln_fusion_destroy(f);
        for (char *p = a; (p = strstr(p, " = ")) != NULL; p += 3) {
            char op[24] = "";
            sscanf(p + 3, "%23s", op);
            for (size_t k = 0; k < N_OPS; k++)
                seen[k] |= strcmp(op, all_ops[k]) == 0;
        }
        for (int d = 0; d < 7; d++) {
            char pat[16];
            snprintf(pat, sizeof pat, "input %s", dn[d]);
            dtypes[d] |= strstr(a, pat) != NULL;
        }
        keepdim |= strstr(a, "keepdim") != NULL;
        broadcast_axis |= strstr(a, ", 1]") != NULL || strstr(a, "[1,") != NULL;
        rank0 |= strstr(a, " []") != NULL;
        free(a);
        free(b);
    }
    for (size_t k = 0; k < N_OPS; k++)
        ck_assert_msg(seen[k], "no fusion of the default seeds uses '%s'",
                      all_ops[k]);
    for (int d = 0; d < 7; d++)
        ck_assert_msg(dtypes[d], "no input of dtype %s", dn[d]);
    ck_assert(keepdim && broadcast_axis && rank0);
}
END_TEST

START_TEST(test_file_ranges)
{
    cf_file f;
    char err[CF_MSG];
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(cf_fuzz_file(5, 3, "1.2.3", &f, err, sizeof err), 0);
    ck_assert_str_eq(f.category, "fuzz");
    ck_assert_str_eq(f.suite_version, "1.2.3");
    ck_assert_uint_eq(f.n_tests, 3);
    for (size_t i = 0; i < 3; i++) {
        char want[32];
        ck_assert_int_eq(f.tests[i].tcid, (int)i + 1);
        snprintf(want, sizeof want, "\"seed\":%zu", 5 + i);
        ck_assert_msg(strstr(f.tests[i].text, want) != NULL, "%s",
                      f.tests[i].text);
        json_error_t je;
        json_t *j = json_loads(f.tests[i].text, 0, &je);
        cf_cost cost;
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(cf_test_validate("fuzz", j, &cost, err, sizeof err), 0);
        json_decref(j);
    }
    cf_file_free(&f);
    ck_assert_int_ne(cf_fuzz_file(5, 0, "1.0.0", &f, err, sizeof err), 0);
    ck_assert_int_ne(cf_fuzz_file((uint64_t)INT64_MAX - 2, 5, "1.0.0", &f, err,
                                  sizeof err), 0);
    ck_assert_int_ne(cf_fuzz_file(1, CF_FUZZ_MAX_COUNT + 1, "1.0.0", &f, err,
                                  sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "--count"));
    /* a fuzz test is validated like every other: no unknown fields */
    json_t *bad = json_loads("{\"tcId\": 1, \"comment\": \"\", \"flags\": [], "
                             "\"result\": \"valid\", \"seed\": 1, \"x\": 2}",
                             0, NULL);
    cf_cost cost;
    ck_assert_int_ne(cf_test_validate("fuzz", bad, &cost, err, sizeof err), 0);
    json_decref(bad);
    bad = json_loads("{\"tcId\": 1, \"comment\": \"\", \"flags\": [], "
                     "\"result\": \"valid\", \"seed\": -1}", 0, NULL);
    ck_assert_int_ne(cf_test_validate("fuzz", bad, &cost, err, sizeof err), 0);
    json_decref(bad);
}
END_TEST

START_TEST(runs_clean_on_ref)
{
    cf_file f;
    char err[CF_MSG];
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(cf_fuzz_file(1, 60, "1.0.0", &f, err, sizeof err), 0);
    cf_target tg;
    memset(&tg, 0, sizeof tg);
    tg.backend = "ref";
    uint64_t native = 0;
    for (size_t i = 0; i < f.n_tests; i++) {
        cf_outcome o;
        cf_run_test(&tg, &f.tests[i], &o);
        ck_assert_msg(o.status == CF_PASS || o.status == CF_SKIP,
                      "fuzz/%d: %s", f.tests[i].tcid, o.msg);
        native += o.native;
    }
    ck_assert_uint_gt(native, 60);
    cf_file_free(&f);
}
END_TEST

/* The fuzz category's ULP bounds are the table of docs/numerics.md
** (read from the document, run from the repository root). */
START_TEST(ulp_bounds_match_numerics_md)
{
    size_t len = 0;
    char *doc = cf_read_file("docs/numerics.md", &len);
    ck_assert_ptr_nonnull(doc);
    char *h = strstr(doc, "| dtype | exp |");
    ck_assert_ptr_nonnull(h);
    char ops[12][16];
    int n_ops = 0, rows = 0;
    char *line = h;
    for (char *p = strchr(line, '|') + 1; n_ops < 12; n_ops++) {
        char *q = strchr(p, '|');
        if (q == NULL || memchr(p, '\n', (size_t)(q - p)) != NULL)
            break;
        sscanf(p, " %15s", ops[n_ops]);
        p = q + 1;
    }
    ck_assert_int_eq(n_ops, 10); /* dtype + 9 functions */
    for (char *r = strchr(h, '\n'); r && (r = strchr(r + 1, '\n')) != NULL;) {
        char dt[8] = "";
        if (sscanf(r + 1, "| %7s |", dt) != 1 ||
            (strcmp(dt, "f32") != 0 && strcmp(dt, "f64") != 0))
            break;
        kiln_dtype d = dt[1] == '3' ? KILN_F32 : KILN_F64;
        char *p = strchr(r + 2, '|') + 1;
        for (int k = 1; k < n_ops; k++) {
            int want = (int)strtol(p, &p, 10);
            ck_assert_msg(cf_fuzz_ulp_bound(ops[k], d) == want,
                          "%s %s: fuzz uses %d ulp, numerics.md says %d",
                          ops[k], dt, cf_fuzz_ulp_bound(ops[k], d), want);
            p = strchr(p, '|') + 1;
        }
        rows++;
    }
    ck_assert_int_eq(rows, 2);
    ck_assert_int_eq(cf_fuzz_ulp_bound("add", KILN_F32), -1);
    free(doc);
}
END_TEST

Suite *fuzz_suite(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("generator");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, generated_fusions_are_valid_and_cover_every_op);
    tcase_add_test(tc, test_file_ranges);
    tcase_add_test(tc, runs_clean_on_ref);
    tcase_add_test(tc, ulp_bounds_match_numerics_md);
    suite_add_tcase(s, tc);
    return s;
}
