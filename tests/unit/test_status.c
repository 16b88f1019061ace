/* test_status.c -- the status table (every code pinned), names, version,
** dtype names. */
#include <check.h>
#include <string.h>

#include "kiln.h"

START_TEST(status_names_round_trip)
{
    ck_assert_str_eq(kiln_status_name(KILN_OK), "KILN_OK");
    ck_assert_str_eq(kiln_status_name(KILN_ERR_SHAPE), "KILN_ERR_SHAPE");
    ck_assert_str_eq(kiln_strerror(KILN_ERR_NO_MEMORY), "out of memory");
    ck_assert_str_eq(kiln_status_name((kiln_status)9999), "KILN_UNKNOWN_STATUS");
    ck_assert_str_eq(kiln_strerror((kiln_status)-5), "unknown status");
}
END_TEST

/* Every status code, its number, its stable name and its description:
** append-only ABI, written out here rather than derived from kiln.h. */
START_TEST(status_values_are_stable)
{
    static const struct {
        kiln_status s;
        int value;
        const char *name, *desc;
    } want[] = {
        {KILN_OK, 0, "KILN_OK",
         "success"},
        {KILN_ERR_INVALID_ARGUMENT, 1, "KILN_ERR_INVALID_ARGUMENT",
         "invalid argument"},
        {KILN_ERR_NO_MEMORY, 2, "KILN_ERR_NO_MEMORY",
         "out of memory"},
        {KILN_ERR_OPTION_SYNTAX, 3, "KILN_ERR_OPTION_SYNTAX",
         "malformed option string"},
        {KILN_ERR_OPTION_UNKNOWN, 4, "KILN_ERR_OPTION_UNKNOWN",
         "unknown option name"},
        {KILN_ERR_OPTION_ARGUMENT, 5, "KILN_ERR_OPTION_ARGUMENT",
         "invalid option argument"},
        {KILN_ERR_OPTION_ELEMENT, 6, "KILN_ERR_OPTION_ELEMENT",
         "execute option element is not one item"},
        {KILN_ERR_FUSION, 7, "KILN_ERR_FUSION",
         "invalid fusion definition"},
        {KILN_ERR_DTYPE, 8, "KILN_ERR_DTYPE",
         "dtype mismatch"},
        {KILN_ERR_SHAPE, 9, "KILN_ERR_SHAPE",
         "shape mismatch"},
        {KILN_ERR_PARSE, 10, "KILN_ERR_PARSE",
         "malformed fusion text"},
        {KILN_ERR_STATE, 11, "KILN_ERR_STATE",
         "object in the wrong state for this call"},
        {KILN_ERR_UNSUPPORTED, 12, "KILN_ERR_UNSUPPORTED",
         "not supported by this backend"},
        {KILN_ERR_FALLBACK_DISABLED, 13, "KILN_ERR_FALLBACK_DISABLED",
         "fallback needed but disable=fallback"},
        {KILN_ERR_BACKEND_UNAVAILABLE, 14, "KILN_ERR_BACKEND_UNAVAILABLE",
         "backend unavailable"},
        {KILN_ERR_BACKEND, 15, "KILN_ERR_BACKEND",
         "backend failure"},
        {KILN_ERR_COMPILE, 16, "KILN_ERR_COMPILE",
         "kernel compilation failed"},
        {KILN_ERR_CUDA, 17, "KILN_ERR_CUDA",
         "CUDA driver call failed"},
        {KILN_ERR_IO, 18, "KILN_ERR_IO",
         "I/O error"},
        {KILN_ERR_CORRUPT, 19, "KILN_ERR_CORRUPT",
         "corrupted or incompatible file"},
        {KILN_ERR_ABI, 20, "KILN_ERR_ABI",
         "backend ABI mismatch"},
        {KILN_ERR_NOT_FOUND, 21, "KILN_ERR_NOT_FOUND",
         "not found"},
        {KILN_ERR_LIMIT, 22, "KILN_ERR_LIMIT",
         "size or count limit exceeded"},
        {KILN_ERR_ALIGNMENT, 23, "KILN_ERR_ALIGNMENT",
         "misaligned or overlapping tensor memory"},
    };
    size_t n = sizeof want / sizeof want[0];
    ck_assert_uint_eq(n, 24);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq((int)want[i].s, want[i].value);
        ck_assert_int_eq(want[i].value, (int)i); /* dense: no gaps */
        ck_assert_str_eq(kiln_status_name(want[i].s), want[i].name);
        ck_assert_str_eq(kiln_strerror(want[i].s), want[i].desc);
    }
    size_t in_table = 0;
#define KILN_X_(name, value, desc) in_table++;
    KILN_STATUS_TABLE(KILN_X_)
#undef KILN_X_
    ck_assert_uint_eq(in_table, n); /* a new code is pinned here too */
    ck_assert_str_eq(kiln_status_name((kiln_status)24), "KILN_UNKNOWN_STATUS");
}
END_TEST

START_TEST(version_query)
{
    int a = -1, b = -1, c = -1;
    ck_assert_str_eq(kiln_version(&a, &b, &c), KILN_VERSION_STRING);
    ck_assert_int_eq(a, KILN_VERSION_MAJOR);
    ck_assert_int_eq(b, KILN_VERSION_MINOR);
    ck_assert_int_eq(c, KILN_VERSION_PATCH);
    ck_assert_ptr_nonnull(kiln_version(NULL, NULL, NULL));
}
END_TEST

START_TEST(dtype_names)
{
    kiln_dtype t;
    ck_assert_int_eq(kiln_dtype_parse("bf16", &t), KILN_OK);
    ck_assert_int_eq(t, KILN_BF16);
    ck_assert_uint_eq(kiln_dtype_size(KILN_F64), 8);
    ck_assert_int_eq(kiln_dtype_parse("f128", &t), KILN_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "f128"));
    ck_assert_ptr_null(kiln_dtype_name((kiln_dtype)77));
}
END_TEST

Suite *status_suite(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, status_names_round_trip);
    tcase_add_test(tc, status_values_are_stable);
    tcase_add_test(tc, version_query);
    tcase_add_test(tc, dtype_names);
    suite_add_tcase(s, tc);
    return s;
}
