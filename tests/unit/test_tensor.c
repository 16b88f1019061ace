/*
** test_tensor.c -- runtime/tensor.c against the invariants its header
** states: default row-major strides, the byte extent dtype_size * (1 +
** sum((size_i - 1) * stride_i)) (0 when a size is 0), what counts as dense,
** the element order of strided reads and writes (stride 0 included), the
** accessors' answers for NULL, the precise errors of create and of the
** copies, and allocation failure leaving *out untouched.
** (test_execute.c's tensor_validation covers the overflow limits.)
*/
#include <check.h>
#include <string.h>

#include "internal.h"

static kiln_tensor *host(kiln_dtype t, int rank, const int64_t *sizes,
                         const int64_t *strides, void *data)
{
    kiln_tensor *x = NULL;
    kiln_status s = kiln_tensor_create(NULL, t, rank, sizes, strides, KILN_MEM_HOST,
                                       data, &x);
    ck_assert_msg(s == KILN_OK, "create: %s", kiln_last_error());
    return x;
}

/* Byte extent of a description (kiln__tensor_describe). */
static int64_t extent(kiln_dtype t, int rank, const int64_t *sizes, const int64_t *strides)
{
    kiln_tensor d;
    int64_t bytes = -1;
    ck_assert_int_eq(kiln__tensor_describe(&d, t, rank, sizes, strides, KILN_MEM_HOST,
                                           "test", &bytes),
                     KILN_OK);
    return bytes;
}

START_TEST(strides_and_extent)
{
    int64_t sz[3] = {2, 3, 4};
    kiln_tensor *t = host(KILN_F32, 3, sz, NULL, NULL); /* owned, zeroed */
    ck_assert_int_eq(kiln_tensor_strides(t)[0], 12);
    ck_assert_int_eq(kiln_tensor_strides(t)[1], 4);
    ck_assert_int_eq(kiln_tensor_strides(t)[2], 1);
    ck_assert_int_eq(kiln_tensor_numel(t), 24);
    ck_assert_int_eq(kiln_tensor_dtype(t), KILN_F32);
    ck_assert_int_eq(kiln_tensor_memory(t), KILN_MEM_HOST);
    ck_assert_ptr_nonnull(kiln_tensor_data(t));
    kiln_tensor_destroy(t);
    ck_assert_int_eq(extent(KILN_F32, 3, sz, NULL), 96);
    int64_t s2[2] = {2, 3}, st[2] = {5, 1};
    ck_assert_int_eq(extent(KILN_F32, 2, s2, st), 4 * (1 + 5 + 2));
    int64_t s0[2] = {0, 1};
    ck_assert_int_eq(extent(KILN_F64, 2, s0, st), 0); /* empty: no storage */
    int64_t zs[2] = {0, 0};
    ck_assert_int_eq(extent(KILN_I64, 2, s2, zs), 8); /* stride 0: one element */
    ck_assert_int_eq(extent(KILN_F16, 0, NULL, NULL), 2); /* rank 0: one element */
    t = host(KILN_BOOL, 0, NULL, NULL, NULL);
    ck_assert_int_eq(kiln_tensor_numel(t), 1);
    ck_assert_ptr_nonnull(kiln_tensor_data(t));
    kiln_tensor_destroy(t);
    t = host(KILN_F32, 2, s0, NULL, NULL);
    ck_assert_ptr_null(kiln_tensor_data(t)); /* data NULL only when empty */
    ck_assert_int_eq(kiln_tensor_numel(t), 0);
    kiln_tensor_destroy(t);
}
END_TEST

/* Dense row-major: size-1 axes may have any stride; empty counts as dense. */
START_TEST(dense_rule)
{
    float buf[64];
    static const int64_t sz[2] = {3, 4}, rowmajor[2] = {4, 1}, trans[2] = {1, 3};
    static const int64_t one[2] = {1, 4}, odd[2] = {99, 1}, bcast[2] = {0, 1};
    static const int64_t empty[2] = {0, 4};
    static const struct {
        const int64_t *sizes, *strides;
        int dense;
    } c[] = {
        {sz, rowmajor, 1}, {sz, trans, 0}, {one, odd, 1}, {sz, bcast, 0},
        {empty, trans, 1}, {sz, NULL, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        kiln_tensor *t = host(KILN_F32, 2, c[i].sizes, c[i].strides, buf);
        ck_assert_msg(kiln__tensor_dense(t) == c[i].dense, "case %zu", i);
        kiln_tensor_destroy(t);
    }
}
END_TEST

/* Reads and writes go in row-major element order through the strides. */
START_TEST(strided_copies)
{
    int32_t store[6] = {0};
    int64_t sz[2] = {2, 3}, st[2] = {1, 2}; /* column-major storage */
    kiln_tensor *t = host(KILN_I32, 2, sz, st, store);
    int32_t src[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    ck_assert_int_eq(kiln_tensor_write(NULL, t, src, sizeof src), KILN_OK);
    static const int32_t want[6] = {1, 4, 2, 5, 3, 6};
    ck_assert_mem_eq(store, want, sizeof want);
    ck_assert_int_eq(kiln_tensor_read(NULL, t, back, sizeof back), KILN_OK);
    ck_assert_mem_eq(back, src, sizeof src);
    kiln_tensor_destroy(t);
    /* a stride-0 axis reads one element for the whole axis */
    int16_t row[3] = {7, 8, 9}, wide[6];
    int64_t bst[2] = {0, 1};
    t = host(KILN_F16, 2, sz, bst, row);
    ck_assert_int_eq(kiln_tensor_read(NULL, t, wide, sizeof wide), KILN_OK);
    static const int16_t wwant[6] = {7, 8, 9, 7, 8, 9};
    ck_assert_mem_eq(wide, wwant, sizeof wwant);
    kiln_tensor_destroy(t);
    /* empty: zero bytes, nothing touched; NULL host with bytes: an error */
    int64_t e[1] = {0};
    t = host(KILN_F32, 1, e, NULL, NULL);
    ck_assert_int_eq(kiln_tensor_read(NULL, t, NULL, 0), KILN_OK);
    kiln_tensor_destroy(t);
    t = host(KILN_I32, 2, sz, st, store);
    ck_assert_int_eq(kiln_tensor_write(NULL, t, NULL, 24), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(kiln_last_error(), "kiln_tensor_write: NULL argument");
    ck_assert_int_eq(kiln_tensor_read(NULL, t, back, 20), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(kiln_last_error(), "kiln_tensor_read: 20 bytes given, the tensor "
                                        "holds 6 elements of 4 bytes (24 bytes)");
    ck_assert_int_eq(kiln_tensor_read(NULL, NULL, back, 24), KILN_ERR_INVALID_ARGUMENT);
    kiln_tensor_destroy(t);
}
END_TEST

/* The precise errors of kiln_tensor_create; nothing is allocated. */
START_TEST(create_errors)
{
    int64_t ok[2] = {2, 3}, neg[2] = {2, -4}, nst[2] = {-1, 1};
    kiln_tensor *t = NULL;
    static const struct {
        kiln_dtype dt;
        int rank;
        int use_neg, use_nst, mem, null_sizes;
        kiln_status want;
        const char *msg;
    } c[] = {
        {(kiln_dtype)7, 2, 0, 0, KILN_MEM_HOST, 0, KILN_ERR_DTYPE,
         "kiln_tensor_create: invalid dtype 7"},
        {KILN_F32, 9, 0, 0, KILN_MEM_HOST, 0, KILN_ERR_LIMIT,
         "kiln_tensor_create: rank 9 is outside 0..8"},
        {KILN_F32, -1, 0, 0, KILN_MEM_HOST, 0, KILN_ERR_SHAPE,
         "kiln_tensor_create: rank -1 is outside 0..8"},
        {KILN_F32, 2, 0, 0, KILN_MEM_HOST, 1, KILN_ERR_INVALID_ARGUMENT,
         "kiln_tensor_create: sizes is NULL"},
        {KILN_F32, 2, 0, 0, 7, 0, KILN_ERR_INVALID_ARGUMENT,
         "kiln_tensor_create: invalid memory space 7"},
        {KILN_F32, 2, 1, 0, KILN_MEM_HOST, 0, KILN_ERR_SHAPE,
         "kiln_tensor_create: axis 1 has negative size -4"},
        {KILN_F32, 2, 0, 1, KILN_MEM_HOST, 0, KILN_ERR_SHAPE,
         "kiln_tensor_create: axis 0 has negative stride -1"},
        {KILN_F32, 2, 0, 0, KILN_MEM_DEVICE, 0, KILN_ERR_INVALID_ARGUMENT,
         "kiln_tensor_create: allocating device memory needs a context whose "
         "backend uses device memory (no context does not)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        kiln_status s = kiln_tensor_create(NULL, c[i].dt, c[i].rank,
                                           c[i].null_sizes ? NULL : c[i].use_neg ? neg : ok,
                                           c[i].use_nst ? nst : NULL, (kiln_memory)c[i].mem,
                                           NULL, &t);
        ck_assert_msg(s == c[i].want, "case %zu: %s", i, kiln_status_name(s));
        ck_assert_str_eq(kiln_last_error(), c[i].msg);
        ck_assert_ptr_null(t);
    }
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 2, ok, NULL, KILN_MEM_HOST, NULL, NULL),
                     KILN_ERR_INVALID_ARGUMENT);
    /* a borrowed device pointer needs no context to describe, but a copy
    ** needs a device backend */
    float fake[6];
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 2, ok, NULL, KILN_MEM_DEVICE, fake, &t),
                     KILN_OK);
    ck_assert_int_eq(kiln_tensor_read(NULL, t, fake, sizeof fake), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "needs a context with a device backend"));
    kiln_tensor_destroy(t);
}
END_TEST

START_TEST(null_accessors_and_faults)
{
    ck_assert_ptr_null(kiln_tensor_data(NULL));
    ck_assert_int_eq((int)kiln_tensor_dtype(NULL), -1);
    ck_assert_int_eq(kiln_tensor_rank(NULL), -1);
    ck_assert_ptr_null(kiln_tensor_sizes(NULL));
    ck_assert_ptr_null(kiln_tensor_strides(NULL));
    ck_assert_int_eq(kiln_tensor_numel(NULL), -1);
    ck_assert_int_eq(kiln_tensor_memory(NULL), KILN_MEM_HOST);
    kiln_tensor_destroy(NULL);
    /* the handle's allocation, then the owned storage's: each failure is
    ** NO_MEMORY with *out untouched and nothing leaked */
    int64_t sz[1] = {1000};
    for (long n = 0; n < 2; n++) {
        kiln_tensor *t = (kiln_tensor *)&sz; /* a sentinel */
        kiln__fault_after(n);
        kiln_status s = kiln_tensor_create(NULL, KILN_F64, 1, sz, NULL, KILN_MEM_HOST, NULL, &t);
        kiln__fault_after(-1);
        ck_assert_int_eq(s, KILN_ERR_NO_MEMORY);
        ck_assert_ptr_eq(t, (kiln_tensor *)&sz);
    }
}
END_TEST

Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, strides_and_extent);
    tcase_add_test(tc, dense_rule);
    tcase_add_test(tc, strided_copies);
    tcase_add_test(tc, create_errors);
    tcase_add_test(tc, null_accessors_and_faults);
    suite_add_tcase(s, tc);
    return s;
}
