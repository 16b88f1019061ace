/* test_status.c -- status table, last error, version. */
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

START_TEST(status_values_are_stable)
{
    /* Append-only: these numbers are ABI. */
    ck_assert_int_eq(KILN_ERR_OPTION_SYNTAX, 3);
    ck_assert_int_eq(KILN_ERR_OPTION_UNKNOWN, 4);
    ck_assert_int_eq(KILN_ERR_OPTION_ARGUMENT, 5);
    ck_assert_int_eq(KILN_ERR_OPTION_ELEMENT, 6);
    ck_assert_int_eq(KILN_ERR_ALIGNMENT, 23);
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
