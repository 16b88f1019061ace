/*
** test_output_sizes.c -- kiln_fusion_output_sizes: the sizes kiln_execute
** gives its outputs, for callers that allocate outputs themselves (the
** Python frontend allocates them with the inputs' library).
*/
#include <check.h>
#include <string.h>

#include "exec_util.h"

START_TEST(output_sizes_follow_the_inputs)
{
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n"
                               "%b = input f32 [?, ?]\n%c = matmul %a %b\n"
                               "%s = sum %a axes=[1]\n%k = max %a axes=[0] keepdim\n"
                               "output %c\noutput %s\noutput %k\n");
    float a[6] = {0}, b[12] = {0};
    int64_t as[2] = {2, 3}, bs[2] = {3, 4};
    kiln_tensor *in[2] = {tu_tensor(KILN_F32, 2, as, NULL, a),
                          tu_tensor(KILN_F32, 2, bs, NULL, b)};
    int64_t sz[3 * KILN_MAX_RANK];
    memset(sz, 0xff, sizeof sz);
    ck_assert_int_eq(kiln_fusion_output_sizes(f, in, 2, sz, 3 * KILN_MAX_RANK), KILN_OK);
    ck_assert_int_eq(sz[0], 2);
    ck_assert_int_eq(sz[1], 4);
    ck_assert_int_eq(sz[KILN_MAX_RANK], 2);
    ck_assert_int_eq(sz[2 * KILN_MAX_RANK], 1);
    ck_assert_int_eq(sz[2 * KILN_MAX_RANK + 1], 3);
    /* errors: as kiln_execute reports them, and sizes untouched */
    int64_t keep[3 * KILN_MAX_RANK];
    memcpy(keep, sz, sizeof sz);
    kiln_tensor *bad[2] = {in[1], in[0]}; /* K = 4 against 2 */
    ck_assert_int_eq(kiln_fusion_output_sizes(f, bad, 2, sz, 3 * KILN_MAX_RANK),
                     KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "matmul"));
    ck_assert_mem_eq(sz, keep, sizeof sz);
    ck_assert_int_eq(kiln_fusion_output_sizes(f, in, 1, sz, 3 * KILN_MAX_RANK),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_fusion_output_sizes(f, in, 2, sz, 3 * KILN_MAX_RANK - 1),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_fusion_output_sizes(NULL, in, 2, sz, 24),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_fusion_output_sizes(f, in, 2, NULL, 24),
                     KILN_ERR_INVALID_ARGUMENT);
    double d[6] = {0};
    kiln_tensor *wrong[2] = {tu_tensor(KILN_F64, 2, as, NULL, d), in[1]};
    ck_assert_int_eq(kiln_fusion_output_sizes(f, wrong, 2, sz, 24), KILN_ERR_DTYPE);
    ck_assert_mem_eq(sz, keep, sizeof sz);
    kiln_tensor_destroy(wrong[0]);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(in[1]);
    kiln_fusion_destroy(f);
    /* an unfinalized fusion */
    kiln_fusion *g;
    ck_assert_int_eq(kiln_fusion_create(&g), KILN_OK);
    ck_assert_int_eq(kiln_fusion_output_sizes(g, NULL, 0, sz, 24), KILN_ERR_STATE);
    kiln_fusion_destroy(g);
}
END_TEST

Suite *output_sizes_suite(void)
{
    Suite *s = suite_create("output_sizes");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, output_sizes_follow_the_inputs);
    suite_add_tcase(s, tc);
    return s;
}
