/*
** test_accessors.c -- the entry points for language bindings:
** kiln_execute_views (arrays described per call, byte strides),
** kiln_fusion_output_sizes (the sizes kiln_execute gives its outputs, for
** callers that allocate outputs themselves: the Python frontend allocates
** them with the inputs' library) and kiln_context_clear_caches.
*/
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exec_util.h"

static kiln_view view(kiln_dtype t, int rank, const int64_t *sizes,
                      const int64_t *byte_strides, void *data)
{
    kiln_view v;
    memset(&v, 0, sizeof v);
    v.data = data;
    v.dtype = t;
    v.rank = rank;
    v.memory = KILN_MEM_HOST;
    size_t es = kiln_dtype_size(t);
    int64_t step = (int64_t)es;
    for (int a = rank - 1; a >= 0; a--) {
        v.sizes[a] = sizes[a];
        v.byte_strides[a] = byte_strides ? byte_strides[a] : step;
        step *= sizes[a];
    }
    return v;
}

START_TEST(output_sizes_follow_the_inputs)
{
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n"
                               "%b = input f32 [?, ?]\n%c = matmul %a %b\n"
                               "%s = sum %a axes=[1]\n%k = max %a axes=[0] keepdim\n"
                               "output %c\noutput %s\noutput %k\n");
    float a[6] = {0}, b[12] = {0};
    int64_t as[2] = {2, 3}, bs[2] = {3, 4};
    kiln_view in[2] = {view(KILN_F32, 2, as, NULL, a), view(KILN_F32, 2, bs, NULL, b)};
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
    kiln_view bad[2] = {in[1], in[0]}; /* K = 4 against 2 */
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
    ck_assert_int_eq(kiln_fusion_output_sizes(f, NULL, 2, sz, 24),
                     KILN_ERR_INVALID_ARGUMENT);
    double d[6] = {0};
    kiln_view wrong[2] = {view(KILN_F64, 2, as, NULL, d), in[1]};
    ck_assert_int_eq(kiln_fusion_output_sizes(f, wrong, 2, sz, 24), KILN_ERR_DTYPE);
    ck_assert_mem_eq(sz, keep, sizeof sz);
    kiln_fusion_destroy(f);
    /* an unfinalized fusion */
    kiln_fusion *g;
    ck_assert_int_eq(kiln_fusion_create(&g), KILN_OK);
    ck_assert_int_eq(kiln_fusion_output_sizes(g, NULL, 0, sz, 24), KILN_ERR_STATE);
    kiln_fusion_destroy(g);
}
END_TEST

/* kiln_execute_views: byte strides (a transposed view), size-1 axes with
** any stride, the view checks naming the view, more views than the inline
** room, and everything else as kiln_execute. */
START_TEST(execute_views_describe_arrays)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n"
                               "%b = input f32 [?, ?]\n%y = sub %a %b\noutput %y\n");
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0, 0, 0, 0, 0, 0}, y[6];
    int64_t sz[2] = {3, 2}, tr[2] = {4, 12}; /* a^T: [3, 2] over [2, 3] */
    kiln_view in[2] = {view(KILN_F32, 2, sz, tr, a), view(KILN_F32, 2, sz, NULL, b)};
    kiln_view out[1] = {view(KILN_F32, 2, sz, NULL, y)};
    ck_assert_int_eq(kiln_execute_views(ctx, f, in, 2, out, 1, NULL, NULL), KILN_OK);
    float want[6] = {1, 4, 2, 5, 3, 6};
    ck_assert_mem_eq(y, want, sizeof y);
    kiln_view neg = in[0];
    neg.byte_strides[0] = -4;
    kiln_view two[2] = {in[0], neg};
    ck_assert_int_eq(kiln_execute_views(ctx, f, two, 2, out, 1, NULL, NULL), KILN_ERR_SHAPE);
    ck_assert_msg(strstr(kiln_last_error(), "input 1: axis 0 has a stride of -4 bytes") != NULL,
                  "%s", kiln_last_error());
    kiln_view odd = out[0];
    odd.byte_strides[1] = 6;
    ck_assert_int_eq(kiln_execute_views(ctx, f, in, 2, &odd, 1, NULL, NULL),
                     KILN_ERR_ALIGNMENT);
    ck_assert_msg(strstr(kiln_last_error(), "output 0: axis 1") != NULL, "%s",
                  kiln_last_error());
    kiln_view big = in[0];
    big.rank = 9;
    two[1] = big;
    ck_assert_int_eq(kiln_execute_views(ctx, f, two, 2, out, 1, NULL, NULL), KILN_ERR_LIMIT);
    ck_assert_int_eq(kiln_execute_views(ctx, f, NULL, 2, out, 1, NULL, NULL),
                     KILN_ERR_INVALID_ARGUMENT);
    /* a size-1 axis may have any stride, even a negative one */
    int64_t one[2] = {1, 2}, st1[2] = {-100, 4};
    kiln_view r1[2] = {view(KILN_F32, 2, one, st1, a), view(KILN_F32, 2, one, NULL, b)};
    kiln_view o1 = view(KILN_F32, 2, one, NULL, y);
    ck_assert_int_eq(kiln_execute_views(ctx, f, r1, 2, &o1, 1, NULL, NULL), KILN_OK);
    ck_assert_float_eq(y[1], 2.0f);
    /* dtype mismatch: kiln_execute's error */
    double d[6] = {0};
    kiln_view dv[2] = {view(KILN_F64, 2, sz, NULL, d), in[1]};
    ck_assert_int_eq(kiln_execute_views(ctx, f, dv, 2, out, 1, NULL, NULL), KILN_ERR_DTYPE);
    kiln_fusion_destroy(f);
    /* 20 inputs: more than the inline room */
    char kf[2048] = "kiln.fusion 1\n";
    for (int i = 0; i < 20; i++)
        snprintf(kf + strlen(kf), sizeof kf - strlen(kf), "%%i%d = input f32 [?]\n", i);
    snprintf(kf + strlen(kf), sizeof kf - strlen(kf), "%%s0 = add %%i0 %%i1\n");
    for (int i = 2; i < 20; i++)
        snprintf(kf + strlen(kf), sizeof kf - strlen(kf), "%%s%d = add %%s%d %%i%d\n",
                 i - 1, i - 2, i);
    snprintf(kf + strlen(kf), sizeof kf - strlen(kf), "output %%s18\n");
    f = tu_fusion(kf);
    float ones[2] = {1, 1};
    int64_t n2[1] = {2};
    kiln_view many[20];
    for (int i = 0; i < 20; i++)
        many[i] = view(KILN_F32, 1, n2, NULL, ones);
    kiln_view o20 = view(KILN_F32, 1, n2, NULL, y);
    ck_assert_int_eq(kiln_execute_views(ctx, f, many, 20, &o20, 1, NULL, NULL), KILN_OK);
    ck_assert_float_eq(y[1], 20.0f);
    int64_t s20[KILN_MAX_RANK];
    ck_assert_int_eq(kiln_fusion_output_sizes(f, many, 20, s20, KILN_MAX_RANK), KILN_OK);
    ck_assert_int_eq(s20[0], 2);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* After clearing, the same execute misses both caches and compiles again;
** every dropped entry counts as an eviction. */
START_TEST(clear_caches_forgets_plans_and_kernels)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?]\n"
                               "%y = neg %x\noutput %y\n");
    float x[2] = {1, 2}, y[2];
    int64_t n[1] = {2};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 1, n, NULL, x)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 1, n, NULL, y)};
    const char *dis[1] = {"fma"};
    kiln_exec_options o = tu_opts(NULL, 0, dis, 1);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL), KILN_OK);
    kiln_counters a = tu_counters(ctx); /* 1 plan, 2 kernels */
    ck_assert_int_eq(kiln_context_clear_caches(ctx), KILN_OK);
    kiln_counters b = tu_counters(ctx);
    ck_assert_uint_eq(b.plan_evictions - a.plan_evictions, 1);
    ck_assert_uint_eq(b.kernel_evictions - a.kernel_evictions, 2);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
    kiln_counters c = tu_counters(ctx);
    ck_assert_uint_eq(c.plan_misses, b.plan_misses + 1);
    ck_assert_uint_eq(c.kernel_misses, b.kernel_misses + 1);
    ck_assert_uint_eq(c.compiles, b.compiles + 1);
    ck_assert_float_eq(y[1], -2.0f);
    ck_assert_int_eq(kiln_context_clear_caches(ctx), KILN_OK); /* again: fine */
    ck_assert_int_eq(kiln_context_clear_caches(NULL), KILN_ERR_INVALID_ARGUMENT);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

Suite *accessors_suite(void)
{
    Suite *s = suite_create("accessors");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, output_sizes_follow_the_inputs);
    tcase_add_test(tc, execute_views_describe_arrays);
    tcase_add_test(tc, clear_caches_forgets_plans_and_kernels);
    suite_add_tcase(s, tc);
    return s;
}

/* Clearing while other threads execute (run under TSan by make test-tsan):
** every call still succeeds with the right result. */
typedef struct clear_arg {
    kiln_context *ctx;
    kiln_fusion *f;
    int id, bad;
} clear_arg;

static void *clear_worker(void *p)
{
    clear_arg *a = p;
    float x[4] = {1, 2, 3, (float)a->id}, y[4];
    int64_t n[1] = {4};
    kiln_tensor *in = NULL, *out = NULL;
    kiln_tensor_create(NULL, KILN_F32, 1, n, NULL, KILN_MEM_HOST, x, &in);
    kiln_tensor_create(NULL, KILN_F32, 1, n, NULL, KILN_MEM_HOST, y, &out);
    const char *dis[1] = {"fma"};
    for (int i = 0; i < 300; i++) {
        kiln_exec_options o = tu_opts(NULL, 0, dis, (size_t)(i & 1));
        if (kiln_execute(a->ctx, a->f, &in, 1, &out, 1, &o, NULL) != KILN_OK ||
            y[3] != -(float)a->id)
            a->bad++;
    }
    kiln_tensor_destroy(in);
    kiln_tensor_destroy(out);
    return NULL;
}

START_TEST(clear_while_executing)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?]\n"
                               "%y = neg %x\noutput %y\n");
    pthread_t th[4];
    clear_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (clear_arg){ctx, f, i, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, clear_worker, &args[i]), 0);
    }
    for (int i = 0; i < 200; i++)
        ck_assert_int_eq(kiln_context_clear_caches(ctx), KILN_OK);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].bad, 0);
    }
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

Suite *threads_clear_suite(void)
{
    Suite *s = suite_create("threads_clear");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, clear_while_executing);
    suite_add_tcase(s, tc);
    return s;
}
