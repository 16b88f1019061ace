/*
** test_stream.c -- kiln_exec_options.stream (docs/runtime.md, "Streams"):
** the two accepted layouts of kiln_exec_options, the reference backend
** ignoring the stream, the stream reaching a device-memory backend's
** launch record (the test plugin in its fake-device mode, whose stream is
** a pair of counters), the waits the runtime adds for intermediates and the
** reference fallback, the clear error for a device backend without
** stream_sync, and -- on a GPU -- the cuda backend queueing its work on the
** caller's stream.  The GPU case records a visible skip when there is no GPU, unless
** KILN_TEST_GPU=1 (scripts/gpu_run.sh sets it), where it must run.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/cuda_loader.h"
#include "exec_util.h"
#include "tu_skip.h"

static const char *plugin(void)
{
    const char *p = getenv("KILN_TEST_PLUGIN");
    ck_assert_msg(p != NULL && p[0] != '\0',
                  "KILN_TEST_PLUGIN is not set (run through make test-unit)");
    return p;
}

static kiln_exec_options stream_opts(void *stream)
{
    kiln_exec_options o = tu_opts(NULL, 0, NULL, 0);
    o.stream = stream;
    return o;
}

static const char *NEG = "kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\noutput %y\n";
static const char *SOFTMAX =
    "kiln.fusion 1\n%x = input f32 [?, ?]\n%m = max %x axes=[1] keepdim\n"
    "%d = sub %x %m\n%e = exp %d\n%s = sum %e axes=[1] keepdim\n"
    "%y = div %e %s\noutput %y\n";

/* The older layout (no stream) still works; any other short size fails
** with a message naming both sizes; ref ignores a stream entirely. */
START_TEST(layouts_and_ref_ignores_the_stream)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(NEG);
    float x[3] = {1, -2, 3}, y[3] = {0, 0, 0};
    int64_t n[1] = {3};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 1, n, NULL, x)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 1, n, NULL, y)};
    const char *dis[1] = {"fma"};
    kiln_exec_options o = tu_opts(NULL, 0, dis, 1);
    o.struct_size = offsetof(kiln_exec_options, stream);
    o.stream = (void *)0x1; /* beyond the declared size: never read */
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL), KILN_OK);
    ck_assert_float_eq(y[1], 2.0f);
    o.struct_size = offsetof(kiln_exec_options, stream) + 4;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL),
                     KILN_ERR_INVALID_ARGUMENT);
    char want[128];
    snprintf(want, sizeof want, "neither %zu", offsetof(kiln_exec_options, stream));
    ck_assert_msg(strstr(kiln_last_error(), want) != NULL, "%s", kiln_last_error());
    o.struct_size = offsetof(kiln_exec_options, n_disable);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL),
                     KILN_ERR_INVALID_ARGUMENT);
    /* ref: any stream value is ignored (it is never dereferenced) */
    y[0] = 0;
    kiln_exec_options s = stream_opts((void *)0xdead);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &s, NULL), KILN_OK);
    ck_assert_float_eq(y[0], -1.0f);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

static kiln_context *device_plugin(const char *mode)
{
    setenv("KILN_TEST_PLUGIN_DEVICE", mode, 1);
    kiln_context *ctx = tu_ctx_caps(plugin(), 0, 0);
    unsetenv("KILN_TEST_PLUGIN_DEVICE");
    return ctx;
}

static kiln_tensor *dev_tensor(kiln_context *ctx, int rank, const int64_t *sz,
                               const float *host, size_t n)
{
    kiln_tensor *t = NULL;
    ck_assert_int_eq(kiln_tensor_create(ctx, KILN_F32, rank, sz, NULL,
                                        KILN_MEM_DEVICE, NULL, &t), KILN_OK);
    if (host != NULL)
        ck_assert_int_eq(kiln_tensor_write(ctx, t, host, n * 4), KILN_OK);
    return t;
}

/* A device backend gets the stream in every launch record; the call only
** waits on it when it must (intermediates to free, a reference fallback). */
START_TEST(device_backend_gets_the_stream)
{
    kiln_context *ctx = device_plugin("streams");
    uint64_t cnt[2] = {0, 0};
    kiln_exec_options o = stream_opts(cnt);
    /* one pointwise segment, no intermediates: queued, never waited for */
    kiln_fusion *f = tu_fusion(NEG);
    float x[4] = {1, -2, 3, -4}, y[4];
    int64_t n[1] = {4};
    kiln_tensor *in[1] = {dev_tensor(ctx, 1, n, x, 4)};
    kiln_tensor *out[1] = {NULL};
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL), KILN_OK);
    ck_assert_uint_eq(cnt[0], 1);
    ck_assert_uint_eq(cnt[1], 0);
    ck_assert_int_eq(kiln_tensor_read(ctx, out[0], y, sizeof y), KILN_OK);
    ck_assert_float_eq(y[3], 4.0f);
    kiln_tensor_destroy(out[0]);
    /* without a stream the launch record carries NULL */
    out[0] = NULL;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
    ck_assert_uint_eq(cnt[0], 1);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(in[0]);
    kiln_fusion_destroy(f);

    /* softmax: three segments and intermediates, one wait before they are
    ** freed */
    f = tu_fusion(SOFTMAX);
    float a[6] = {1, 2, 3, 1, 1, 1}, b[6];
    int64_t sz[2] = {2, 3};
    in[0] = dev_tensor(ctx, 2, sz, a, 6);
    out[0] = NULL;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL), KILN_OK);
    ck_assert_uint_eq(cnt[0], 4);
    ck_assert_uint_eq(cnt[1], 1);
    ck_assert_int_eq(kiln_tensor_read(ctx, out[0], b, sizeof b), KILN_OK);
    ck_assert_float_eq_tol(b[3], 1.0f / 3.0f, 1e-6f);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(in[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);

    /* launch refused -> the reference fallback stages through host copies:
    ** the stream is waited for first */
    setenv("KILN_TEST_PLUGIN_UNSUPPORTED", "launch", 1);
    ctx = device_plugin("streams");
    f = tu_fusion(NEG);
    in[0] = dev_tensor(ctx, 1, n, x, 4);
    out[0] = NULL;
    cnt[0] = cnt[1] = 0;
    kiln_exec_info *info;
    ck_assert_int_eq(kiln_exec_info_create(&info), KILN_OK);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, info), KILN_OK);
    unsetenv("KILN_TEST_PLUGIN_UNSUPPORTED");
    ck_assert_int_eq(tu_seg(info, 0).kind, KILN_SEG_REFERENCE);
    ck_assert_uint_eq(cnt[1], 1);
    ck_assert_int_eq(kiln_tensor_read(ctx, out[0], y, sizeof y), KILN_OK);
    ck_assert_float_eq(y[1], 2.0f);
    kiln_exec_info_destroy(info);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(in[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* A device backend without stream_sync: a stream is refused before
** anything runs or is allocated; NULL still works. */
START_TEST(device_backend_without_streams_refuses_one)
{
    kiln_context *ctx = device_plugin("nostream");
    kiln_fusion *f = tu_fusion(NEG);
    float x[2] = {1, 2};
    int64_t n[1] = {2};
    kiln_tensor *in[1] = {dev_tensor(ctx, 1, n, x, 2)};
    kiln_tensor *out[1] = {NULL};
    uint64_t cnt[2] = {0, 0};
    kiln_exec_options o = stream_opts(cnt);
    kiln_counters before = tu_counters(ctx);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL), KILN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(kiln_last_error(), "does not take streams") != NULL, "%s",
                  kiln_last_error());
    ck_assert_ptr_null(out[0]);
    ck_assert_uint_eq(cnt[0], 0);
    ck_assert_uint_eq(tu_counters(ctx).executes, before.executes);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(in[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------------------ GPU */

static void CUDA_CB sleep_300ms(void *arg)
{
    (void)arg;
    usleep(300000);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CU_OK(api, fn, args)                                                   \
    do {                                                                       \
        char e_[512];                                                          \
        ck_assert_msg(KILN_CU(api, fn, args, e_, sizeof e_) == KILN_OK, "%s", e_); \
    } while (0)

/* On the cuda backend the work of a call is queued on the caller's
** (non-blocking) stream behind whatever is already there: a host function
** that sleeps 300 ms holds the stream, so right after execute returns the
** output still holds its sentinel, and after cuStreamSynchronize the
** result.  A split reduction on the legacy stream right after one on the
** held stream must wait for it (they share the scratch buffer): reading
** its output takes the rest of the 300 ms. */
START_TEST(gpu_work_runs_on_the_callers_stream)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "cuda";
    cfg.use_env_override = 1;
    kiln_context *ctx = NULL;
    kiln_status st = kiln_context_create(&cfg, &ctx);
    if (!TU_REQUIRE(st == KILN_OK, "KILN_TEST_GPU", "the cuda backend is unavailable: %s",
                    kiln_last_error()))
        return;
    kiln_cuda_api api;
    char why[768];
    ck_assert_int_eq(kiln__cuda_load(&api, KILN_CUDA_LOAD_DRIVER, why, sizeof why), KILN_OK);
    enum { N = 1 << 20, ROWS = 2, COLS = 1 << 20 };
    float *h = malloc(sizeof(float) * N), *r = malloc(sizeof(float) * N);
    float *big = malloc(sizeof(float) * ROWS * COLS);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_nonnull(big);
    for (int i = 0; i < N; i++)
        h[i] = (float)(i % 1000);
    for (int i = 0; i < ROWS * COLS; i++)
        big[i] = 1.0f;
    int64_t n[1] = {N}, bs[2] = {ROWS, COLS}, rs[2] = {ROWS, 1};
    kiln_tensor *x = dev_tensor(ctx, 1, n, h, N);   /* makes the context current */
    CUstream s;
    CU_OK(&api, cuStreamCreate, (&s, CU_STREAM_NON_BLOCKING));
    float sentinel[4] = {7, 7, 7, 7};
    for (int i = 0; i < N; i++)
        r[i] = 7.0f;
    kiln_tensor *y = dev_tensor(ctx, 1, n, r, N);
    kiln_fusion *f = tu_fusion(NEG);
    kiln_tensor *in[1] = {x}, *out[1] = {y};
    kiln_exec_options o = stream_opts(s);
    /* compile first, so the timed part is only the queueing */
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL), KILN_OK);
    CU_OK(&api, cuStreamSynchronize, (s));
    ck_assert_int_eq(kiln_tensor_write(ctx, y, r, sizeof(float) * N), KILN_OK);
    CU_OK(&api, cuCtxSynchronize, ());
    CU_OK(&api, cuLaunchHostFunc, (s, sleep_300ms, NULL));
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &o, NULL), KILN_OK);
    float got[4];
    ck_assert_int_eq(kiln_tensor_read(ctx, y, r, sizeof(float) * N), KILN_OK);
    memcpy(got, r + 1, sizeof got);
    ck_assert_mem_eq(got, sentinel, sizeof got); /* still queued on s */
    CU_OK(&api, cuStreamSynchronize, (s));
    ck_assert_int_eq(kiln_tensor_read(ctx, y, r, sizeof(float) * N), KILN_OK);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(r[i], -h[i]);

    /* split reductions: one on s (held), one on the legacy stream */
    kiln_fusion *sum = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                                 "%s = sum %x axes=[1] keepdim\noutput %s\n");
    kiln_tensor *bx = dev_tensor(ctx, 2, bs, big, (size_t)ROWS * COLS);
    kiln_tensor *o1 = dev_tensor(ctx, 2, rs, NULL, 0), *o2 = dev_tensor(ctx, 2, rs, NULL, 0);
    kiln_tensor *bin[1] = {bx}, *bo1[1] = {o1}, *bo2[1] = {o2};
    ck_assert_int_eq(kiln_execute(ctx, sum, bin, 1, bo2, 1, NULL, NULL), KILN_OK); /* compile */
    CU_OK(&api, cuCtxSynchronize, ());
    CU_OK(&api, cuLaunchHostFunc, (s, sleep_300ms, NULL));
    double t0 = now_s();
    ck_assert_int_eq(kiln_execute(ctx, sum, bin, 1, bo1, 1, &o, NULL), KILN_OK);
    ck_assert_int_eq(kiln_execute(ctx, sum, bin, 1, bo2, 1, NULL, NULL), KILN_OK);
    float s2[ROWS];
    ck_assert_int_eq(kiln_tensor_read(ctx, o2, s2, sizeof s2), KILN_OK);
    double waited = now_s() - t0;
    fprintf(stderr, "test_stream: the legacy-stream reduction waited %.0f ms for the "
            "held stream's scratch use\n", waited * 1e3);
    ck_assert_msg(waited > 0.2, "the second reduction did not wait for the first "
                  "(%.3f s): the shared scratch is not ordered across streams", waited);
    CU_OK(&api, cuStreamSynchronize, (s));
    float s1[ROWS];
    ck_assert_int_eq(kiln_tensor_read(ctx, o1, s1, sizeof s1), KILN_OK);
    for (int i = 0; i < ROWS; i++) {
        ck_assert_float_eq(s1[i], (float)COLS);
        ck_assert_float_eq(s2[i], (float)COLS);
    }

    /* profiling events and the matmul fallback (cuBLAS) on the stream */
    const char *prof[1] = {"kernel_profile"};
    kiln_exec_options po = tu_opts(prof, 1, NULL, 0);
    po.stream = s;
    kiln_exec_info *info;
    ck_assert_int_eq(kiln_exec_info_create(&info), KILN_OK);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &po, info), KILN_OK);
    ck_assert(tu_seg(info, 0).gpu_ms >= 0);
    kiln_fusion *mm = tu_fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n"
                                "%b = input f32 [?, ?]\n%c = matmul %a %b\noutput %c\n");
    float ma[6] = {1, 2, 3, 4, 5, 6}, mb[6] = {1, 0, 0, 1, 1, 1}, mc[4];
    int64_t as[2] = {2, 3}, bsz[2] = {3, 2}, cs[2] = {2, 2};
    kiln_tensor *mi[2] = {dev_tensor(ctx, 2, as, ma, 6), dev_tensor(ctx, 2, bsz, mb, 6)};
    kiln_tensor *mo[1] = {dev_tensor(ctx, 2, cs, NULL, 0)};
    CU_OK(&api, cuLaunchHostFunc, (s, sleep_300ms, NULL));
    ck_assert_int_eq(kiln_execute(ctx, mm, mi, 2, mo, 1, &o, info), KILN_OK);
    CU_OK(&api, cuStreamSynchronize, (s));
    ck_assert_int_eq(kiln_tensor_read(ctx, mo[0], mc, sizeof mc), KILN_OK);
    ck_assert_float_eq(mc[0], 4.0f);  /* [1 2 3] . [1 0 1] */
    ck_assert_float_eq(mc[1], 5.0f);  /* [1 2 3] . [0 1 1] */
    ck_assert_float_eq(mc[2], 10.0f);
    ck_assert_float_eq(mc[3], 11.0f);
    fprintf(stderr, "test_stream: matmul path on the stream: %s\n", tu_seg(info, 0).path);

    kiln_exec_info_destroy(info);
    for (int i = 0; i < 2; i++)
        kiln_tensor_destroy(mi[i]);
    kiln_tensor_destroy(mo[0]);
    kiln_tensor_destroy(bx);
    kiln_tensor_destroy(o1);
    kiln_tensor_destroy(o2);
    kiln_tensor_destroy(x);
    kiln_tensor_destroy(y);
    kiln_fusion_destroy(mm);
    kiln_fusion_destroy(sum);
    kiln_fusion_destroy(f);
    ck_assert_int_eq(api.p_cuStreamDestroy(s), CUDA_SUCCESS); /* a macro name */
    kiln_context_destroy(ctx);
    kiln__cuda_unload(&api);
    free(h);
    free(r);
    free(big);
}
END_TEST

Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, layouts_and_ref_ignores_the_stream);
    tcase_add_test(tc, device_backend_gets_the_stream);
    tcase_add_test(tc, device_backend_without_streams_refuses_one);
    tcase_add_test(tc, gpu_work_runs_on_the_callers_stream);
    suite_add_tcase(s, tc);
    return s;
}
