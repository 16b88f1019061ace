/*
** test_cache.c -- the plan and kernel caches seen from the outside (info
** record and counters): each option level has exactly its effect, LRU
** eviction at small capacities, single flight, shape reuse, and
** disable=nvrtc_caching.
*/
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "exec_util.h"
#include "tu_skip.h"

static const char *AXB =
    "kiln.fusion 1\n%a = input f32 [?, ?]\n%b = input f32 [?, ?]\n"
    "%m = mul %a %b\n%c = const f32 0x3f800000\n%s = add %m %c\noutput %s\n";

typedef struct run_result {
    uint64_t plan_id, kernel_id;
    int plan_hit, kernel_hit;
    float first;
} run_result;

/* Run AXB-like fusion f on r x c inputs with the given items. */
static run_result run(kiln_context *ctx, const kiln_fusion *f, int64_t r,
                      int64_t c, const char *en, const char *dis)
{
    float a[64], b[64], o[64];
    for (int i = 0; i < 64; i++) {
        a[i] = (float)i;
        b[i] = 2.0f;
    }
    int64_t sz[2] = {r, c};
    kiln_tensor *in[2] = {tu_tensor(KILN_F32, 2, sz, NULL, a),
                          tu_tensor(KILN_F32, 2, sz, NULL, b)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 2, sz, NULL, o)};
    const char *e1[1] = {en}, *d1[1] = {dis};
    kiln_exec_options eo = tu_opts(e1, en ? 1 : 0, d1, dis ? 1 : 0);
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    kiln_status s = kiln_execute(ctx, f, in, 2, out, 1, &eo, info);
    ck_assert_msg(s == KILN_OK, "execute: %s", kiln_last_error());
    run_result rr;
    kiln_exec_info_plan(info, &rr.plan_id, &rr.plan_hit);
    kiln_segment_info si = tu_seg(info, 0);
    rr.kernel_id = si.kernel_id;
    rr.kernel_hit = si.kernel_hit;
    rr.first = o[1];
    kiln_exec_info_destroy(info);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(in[1]);
    kiln_tensor_destroy(out[0]);
    return rr;
}

START_TEST(none_level_never_recompiles)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(AXB);
    run_result base = run(ctx, f, 2, 3, NULL, NULL);
    ck_assert_int_eq(base.plan_hit, 0);
    ck_assert_int_eq(base.kernel_hit, 0);
    kiln_counters c0 = tu_counters(ctx);
    static const char *const none_en[] = {"kernel_profile", "warn_register_spill(64)",
                                          "kernel_db", NULL};
    static const char *const none_dis[] = {"parallel_compile", NULL};
    for (int i = 0; none_en[i]; i++) {
        run_result r = run(ctx, f, 2, 3, none_en[i], NULL);
        ck_assert_int_eq(r.plan_hit, 1);
        ck_assert_int_eq(r.kernel_hit, 1);
        ck_assert_uint_eq(r.plan_id, base.plan_id);
        ck_assert_uint_eq(r.kernel_id, base.kernel_id);
    }
    run_result r = run(ctx, f, 2, 3, NULL, none_dis[0]);
    ck_assert_int_eq(r.kernel_hit, 1);
    ck_assert_uint_eq(tu_counters(ctx).compiles, c0.compiles);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(plan_level_changes_the_plan)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(AXB);
    run_result base = run(ctx, f, 2, 3, NULL, NULL);
    static const struct { const char *en, *dis; } items[] = {
        {"fuse_matmul", NULL}, {NULL, "kernel_reuse"},
        {NULL, "matmul_expr_eval"}, {NULL, "fallback"}};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        const char *it = items[i].en ? items[i].en : items[i].dis;
        run_result r = run(ctx, f, 2, 3, items[i].en, items[i].dis);
        ck_assert_msg(r.plan_hit == 0, "%s: plan hit", it);
        ck_assert_msg(r.plan_id != base.plan_id, "%s: same plan id", it);
        /* the same segment IR and kernel options: the kernel is shared */
        ck_assert_msg(r.kernel_hit == 1, "%s: kernel miss", it);
        ck_assert_uint_eq(r.kernel_id, base.kernel_id);
        r = run(ctx, f, 2, 3, items[i].en, items[i].dis);
        ck_assert_int_eq(r.plan_hit, 1);
    }
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(kernel_level_changes_only_the_kernel)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(AXB);
    run_result base = run(ctx, f, 2, 3, NULL, NULL);
    static const char *const ken[] = {"fast_math", "kernel_lineinfo", "kernel_debug", NULL};
    static const char *const kdis[] = {"fma", "compile_to_sass", "expr_simplify",
                                       "expr_simplify(cse)", NULL};
    uint64_t seen[16];
    int n_seen = 0;
    seen[n_seen++] = base.kernel_id;
    for (int side = 0; side < 2; side++) {
        const char *const *list = side ? kdis : ken;
        for (int i = 0; list[i]; i++) {
            kiln_counters c0 = tu_counters(ctx);
            run_result r = run(ctx, f, 2, 3, side ? NULL : list[i], side ? list[i] : NULL);
            ck_assert_msg(r.plan_hit == 1, "%s: plan miss", list[i]);
            ck_assert_uint_eq(r.plan_id, base.plan_id);
            ck_assert_msg(r.kernel_hit == 0, "%s: kernel hit", list[i]);
            ck_assert_uint_eq(tu_counters(ctx).compiles, c0.compiles + 1);
            for (int k = 0; k < n_seen; k++)
                ck_assert_msg(seen[k] != r.kernel_id, "%s: kernel id reused", list[i]);
            seen[n_seen++] = r.kernel_id;
            r = run(ctx, f, 2, 3, side ? NULL : list[i], side ? list[i] : NULL);
            ck_assert_int_eq(r.kernel_hit, 1);
        }
    }
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(shapes_and_kernel_reuse)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(AXB);
    run_result a = run(ctx, f, 2, 3, NULL, NULL);
    run_result b = run(ctx, f, 4, 5, NULL, NULL); /* same signature */
    ck_assert_int_eq(b.plan_hit, 1);
    ck_assert_uint_eq(a.plan_id, b.plan_id);
    ck_assert_float_eq(b.first, 1.0f * 2.0f + 1.0f);
    run_result c = run(ctx, f, 2, 3, NULL, "kernel_reuse");
    ck_assert_int_eq(c.plan_hit, 0);
    run_result d = run(ctx, f, 4, 5, NULL, "kernel_reuse");
    ck_assert_int_eq(d.plan_hit, 0); /* exact sizes are in the key now */
    ck_assert(d.plan_id != c.plan_id);
    run_result e = run(ctx, f, 4, 5, NULL, "kernel_reuse");
    ck_assert_int_eq(e.plan_hit, 1);
    /* a size-1 axis is part of the signature */
    run_result g = run(ctx, f, 1, 5, NULL, NULL);
    ck_assert_int_eq(g.plan_hit, 0);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* rule: [cache.lru] */
START_TEST(lru_eviction)
{
    kiln_context *ctx = tu_ctx_caps("ref", 2, 2);
    const char *ops[3] = {"neg", "abs", "relu"};
    kiln_fusion *f[3];
    for (int i = 0; i < 3; i++) {
        char kf[256];
        snprintf(kf, sizeof kf, "kiln.fusion 1\n%%a = input f32 [?, ?]\n"
                                "%%b = input f32 [?, ?]\n%%m = mul %%a %%b\n"
                                "%%s = %s %%m\noutput %%s\n", ops[i]);
        f[i] = tu_fusion(kf);
    }
    run(ctx, f[0], 2, 2, NULL, NULL);
    run(ctx, f[1], 2, 2, NULL, NULL);
    run_result r = run(ctx, f[0], 2, 2, NULL, NULL); /* f0 most recent */
    ck_assert_int_eq(r.plan_hit, 1);
    run(ctx, f[2], 2, 2, NULL, NULL); /* evicts f1 (least recent) */
    kiln_counters c = tu_counters(ctx);
    ck_assert_uint_eq(c.plan_evictions, 1);
    ck_assert_uint_eq(c.kernel_evictions, 1);
    r = run(ctx, f[0], 2, 2, NULL, NULL);
    ck_assert_int_eq(r.plan_hit, 1);
    ck_assert_int_eq(r.kernel_hit, 1);
    r = run(ctx, f[1], 2, 2, NULL, NULL);
    ck_assert_int_eq(r.plan_hit, 0);
    ck_assert_int_eq(r.kernel_hit, 0);
    c = tu_counters(ctx);
    ck_assert_uint_eq(c.plan_evictions, 2);
    ck_assert_uint_eq(c.compiles, 4);
    for (int i = 0; i < 3; i++)
        kiln_fusion_destroy(f[i]);
    kiln_context_destroy(ctx);
}
END_TEST

/* rule: [cache.nvrtc_caching] */
START_TEST(nvrtc_caching_off_always_compiles)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(AXB);
    run(ctx, f, 2, 3, NULL, NULL);
    kiln_counters c0 = tu_counters(ctx);
    for (int i = 0; i < 3; i++) {
        run_result r = run(ctx, f, 2, 3, NULL, "nvrtc_caching");
        ck_assert_int_eq(r.plan_hit, 1);
        ck_assert_int_eq(r.kernel_hit, 0);
        ck_assert_float_eq(r.first, 3.0f);
    }
    kiln_counters c1 = tu_counters(ctx);
    ck_assert_uint_eq(c1.compiles, c0.compiles + 3);
    ck_assert_uint_eq(c1.kernel_misses, c0.kernel_misses + 3);
    run_result r = run(ctx, f, 2, 3, NULL, NULL);
    ck_assert_int_eq(r.kernel_hit, 1); /* the cached kernel is still there */
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

typedef struct sf_arg {
    kiln_context *ctx;
    const kiln_fusion *f;
    pthread_barrier_t *bar;
} sf_arg;

static void *sf_work(void *p)
{
    sf_arg *a = p;
    float x[4] = {1, 2, 3, 4}, y[4] = {1, 1, 1, 1}, o[4];
    int64_t sz[2] = {2, 2};
    kiln_tensor *in[2], *out[1];
    kiln_tensor_create(NULL, KILN_F32, 2, sz, NULL, KILN_MEM_HOST, x, &in[0]);
    kiln_tensor_create(NULL, KILN_F32, 2, sz, NULL, KILN_MEM_HOST, y, &in[1]);
    kiln_tensor_create(NULL, KILN_F32, 2, sz, NULL, KILN_MEM_HOST, o, &out[0]);
    pthread_barrier_wait(a->bar);
    kiln_status s = kiln_execute(a->ctx, a->f, in, 2, out, 1, NULL, NULL);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(in[1]);
    kiln_tensor_destroy(out[0]);
    return (void *)(intptr_t)(s == KILN_OK && o[3] == 5.0f);
}

/* rule: [cache.single_flight] */
START_TEST(single_flight)
{
    for (int round = 0; round < 5; round++) {
        kiln_context *ctx = tu_ctx();
        kiln_fusion *f = tu_fusion(AXB);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 8);
        pthread_t th[8];
        sf_arg a = {ctx, f, &bar};
        for (int i = 0; i < 8; i++)
            pthread_create(&th[i], NULL, sf_work, &a);
        for (int i = 0; i < 8; i++) {
            void *ok;
            pthread_join(th[i], &ok);
            ck_assert(ok != NULL);
        }
        kiln_counters c = tu_counters(ctx);
        ck_assert_uint_eq(c.compiles, 1); /* eight threads, one compile */
        ck_assert_uint_eq(c.kernel_misses, 1);
        ck_assert_uint_eq(c.kernel_hits + c.kernel_misses, 8);
        pthread_barrier_destroy(&bar);
        kiln_fusion_destroy(f);
        kiln_context_destroy(ctx);
    }
}
END_TEST

Suite *cache_suite(void)
{
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("levels");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, none_level_never_recompiles);
    tcase_add_test(tc, plan_level_changes_the_plan);
    tcase_add_test(tc, kernel_level_changes_only_the_kernel);
    tcase_add_test(tc, shapes_and_kernel_reuse);
    tcase_add_test(tc, lru_eviction);
    tcase_add_test(tc, nvrtc_caching_off_always_compiles);
    tcase_add_test(tc, single_flight);
    suite_add_tcase(s, tc);
    return s;
}

/* The single-flight test also runs under ThreadSanitizer. */
Suite *threads_cache_suite(void)
{
    Suite *s = suite_create("threads_cache");
    TCase *tc = tcase_create("single_flight");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, single_flight);
    suite_add_tcase(s, tc);
    return s;
}

/* ------------------------------------------------------ kiln run / cache */

/* `$KILN_BIN ARGS` through the shell, output into buf; -1 without KILN_BIN. */
static int sh(const char *args, char *buf, size_t cap)
{
    const char *bin = getenv("KILN_BIN");
    if (bin == NULL || bin[0] == '\0')
        return -1;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

START_TEST(cli_run_and_cache)
{
    static char out[16384];
    if (TU_REQUIRE_ENV("KILN_BIN") == NULL)
        return;
    ck_assert_int_eq(sh("--help", out, sizeof out), 0);
    char dir[] = "/tmp/kiln-run-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[4096];
    /* --repeat shows the cache: miss, then hits; --out writes .npy */
    snprintf(args, sizeof args,
             "run examples/relu_mul_add.kf --random 7 --size 3 --repeat 3 --info "
             "--backend ref --out %s", dir);
    ck_assert_int_eq(sh(args, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"plan_hit\": false"));
    char *second = strstr(out, "\n{");
    ck_assert_ptr_nonnull(second);
    ck_assert_ptr_nonnull(strstr(second, "\"plan_hit\": true"));
    char path[64];
    snprintf(path, sizeof path, "%s/out0.npy", dir);
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    unsigned char hdr[128];
    ck_assert_uint_eq(fread(hdr, 1, sizeof hdr, fp), sizeof hdr);
    ck_assert_mem_eq(hdr, "\x93NUMPY\x01\x00", 8);
    ck_assert_ptr_nonnull(strstr((char *)hdr + 10, "'shape': (3, 3)"));
    fclose(fp);
    /* the written file is read back as an input by name and position */
    snprintf(args, sizeof args,
             "run examples/relu_mul_add.kf --backend ref --input %%a=%s "
             "--input 1=%s --input %%c=%s", path, path, path);
    ck_assert_int_eq(sh(args, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "output 0: f32 [3, 3]:"));
    remove(path);
    rmdir(dir);
    /* errors: usage 2, failures 1 */
    ck_assert_int_eq(sh("run", out, sizeof out), 2);
    ck_assert_int_eq(sh("run examples/relu_mul_add.kf --backend ref", out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "no --random SEED"));
    ck_assert_int_eq(sh("run examples/relu_mul_add.kf --random 1 --backend ref "
                        "--input 0=/nonexistent.npy", out, sizeof out), 1);
    ck_assert_int_eq(sh("run examples/relu_mul_add.kf --random 1 --backend ref "
                        "--disable 'fma,fallback'", out, sizeof out), 1);
    ck_assert_ptr_nonnull(strstr(out, "KILN_ERR_OPTION_ELEMENT"));
    /* a random input whose byte size wraps 64 bits: an error, not a 1-byte
    ** buffer filled with 2^62 floats */
    ck_assert_int_eq(sh("run examples/bias_add.kf --random 1 --backend ref "
                        "--shape %bias=4611686018427387904", out, sizeof out), 1);
    ck_assert_msg(strstr(out, "kiln run: input 1: shape [4611686018427387904] "
                              "of f32: the element count or byte size "
                              "overflows 64 bits"), "%s", out);
    /* kiln cache: a kernel option recompiles, the plan is reused */
    ck_assert_int_eq(sh("cache --json --backend ref examples/relu_mul_add.kf "
                        "--repeat 2 --disable fma", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"plan_hits\": 1, \"plan_misses\": 1"));
    ck_assert_ptr_nonnull(strstr(out, "\"compiles\": 1"));
    ck_assert_int_eq(sh("cache --bogus", out, sizeof out), 2);
    ck_assert_int_eq(sh("bench --help", out, sizeof out), 0);
    ck_assert_int_eq(sh("bench nothing", out, sizeof out), 2);
}
END_TEST

Suite *cli_run_suite(void)
{
    Suite *s = suite_create("cli_run");
    TCase *tc = tcase_create("run");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cli_run_and_cache);
    suite_add_tcase(s, tc);
    return s;
}
