/*
** test_plugin.c -- loading a backend from a shared object by path: the
** test plugin ($KILN_TEST_PLUGIN, tests/plugins/kiln_test_plugin.c) runs
** fusions exactly like ref; a .so without the entry symbol, a descriptor of
** another ABI version or a short struct_size are rejected with
** KILN_ERR_ABI and a message saying why.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_util.h"
#include "internal.h" /* KILN_ERR_MSG_CAP, offsetof(kiln_backend, ...) */
#include "tu_skip.h"

/* $KILN_TEST_PLUGIN, or NULL after a visible skip (a failure under
** KILN_TEST_ENV_REQUIRED, which make test-unit sets). */
static const char *plugin_path(const char *test)
{
    return tu_require_env("KILN_TEST_PLUGIN", test);
}

static kiln_status try_create(const char *backend, kiln_context **ctx)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = backend;
    cfg.use_env_override = 1;
    *ctx = NULL;
    return kiln_context_create(&cfg, ctx);
}

START_TEST(plugin_runs_like_ref)
{
    const char *path = plugin_path(__func__);
    if (path == NULL)
        return;
    char why[256];
    ck_assert_int_eq(kiln_backend_probe(path, why, sizeof why), KILN_OK);
    kiln_context *pc, *rc;
    ck_assert_int_eq(try_create(path, &pc), KILN_OK);
    ck_assert_str_eq(kiln_context_backend(pc), "test-plugin");
    rc = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                               "%s = sum %x axes=[1] keepdim\n%y = div %x %s\n"
                               "output %y\n");
    float x[6] = {1, 2, 3, 4, 5, 6}, o1[6], o2[6];
    int64_t sz[2] = {2, 3};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 2, sz, NULL, x)};
    kiln_tensor *a[1] = {tu_tensor(KILN_F32, 2, sz, NULL, o1)};
    kiln_tensor *b[1] = {tu_tensor(KILN_F32, 2, sz, NULL, o2)};
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert_int_eq(kiln_execute(pc, f, in, 1, a, 1, NULL, info), KILN_OK);
    ck_assert_int_eq(kiln_execute(rc, f, in, 1, b, 1, NULL, NULL), KILN_OK);
    ck_assert_mem_eq(o1, o2, sizeof o1);
    char *js;
    kiln_exec_info_json(info, &js);
    ck_assert_ptr_nonnull(strstr(js, "\"backend\": \"test-plugin\""));
    kiln_free(js);
    kiln_exec_info_destroy(info);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(a[0]);
    kiln_tensor_destroy(b[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(pc);
    kiln_context_destroy(rc);
}
END_TEST

START_TEST(missing_entry_symbol)
{
    /* any shared object that is not a Kiln backend: the C math library */
    kiln_context *ctx;
    kiln_status s = try_create("libm.so.6", &ctx);
    ck_assert_int_eq(s, KILN_ERR_ABI);
    ck_assert_ptr_null(ctx);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_backend_entry"));
}
END_TEST

/* rule: [abi.version] */
START_TEST(abi_version_mismatch)
{
    const char *path = plugin_path(__func__);
    if (path == NULL)
        return;
    kiln_context *ctx;
    setenv("KILN_TEST_PLUGIN_ABI", "2", 1);
    ck_assert_int_eq(try_create(path, &ctx), KILN_ERR_ABI);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "ABI version 2"));
    unsetenv("KILN_TEST_PLUGIN_ABI");
    setenv("KILN_TEST_PLUGIN_SIZE", "16", 1);
    ck_assert_int_eq(try_create(path, &ctx), KILN_ERR_ABI);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "struct_size 16"));
    unsetenv("KILN_TEST_PLUGIN_SIZE");
    ck_assert_int_eq(try_create(path, &ctx), KILN_OK);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(unloadable_paths)
{
    kiln_context *ctx;
    ck_assert_int_eq(try_create("/nonexistent/libkiln_nothing.so", &ctx),
                     KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "/nonexistent/libkiln_nothing.so"));
    ck_assert_int_eq(try_create("not-a-backend", &ctx), KILN_ERR_BACKEND_UNAVAILABLE);
}
END_TEST

/* A name ending in ".so" without a '/' is a file in the current directory
** (docs/backends.md, "Loading a plugin"): dlopen alone would search the
** library path and miss it. */
START_TEST(so_name_in_current_directory)
{
    const char *path = plugin_path(__func__);
    if (path == NULL)
        return;
    char dir[] = "/tmp/kiln-plugin-XXXXXX", cwd[4096], copy[4200], cmd[8800];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(copy, sizeof copy, "%s/my_backend.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, copy);
    ck_assert_int_eq(system(cmd), 0);
    kiln_context *ctx;
    /* elsewhere the name does not resolve, and the message says where it
    ** was looked for */
    ck_assert_int_eq(try_create("my_backend.so", &ctx),
                     KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "./my_backend.so"));
    ck_assert_int_eq(chdir(dir), 0);
    char why[256];
    kiln_status probe = kiln_backend_probe("my_backend.so", why, sizeof why);
    kiln_status made = try_create("my_backend.so", &ctx);
    ck_assert_int_eq(chdir(cwd), 0);
    unlink(copy);
    rmdir(dir);
    ck_assert_msg(probe == KILN_OK, "probe: %s", why);
    ck_assert_int_eq(made, KILN_OK);
    ck_assert_str_eq(kiln_context_backend(ctx), "test-plugin");
    kiln_context_destroy(ctx);
}
END_TEST

/* A backend that answers KILN_ERR_UNSUPPORTED has the segment run by the
** reference interpreter (kind "reference"), unless disable=fallback. */
static void fallback_case(const char *mode)
{
    const char *path = plugin_path(__func__);
    if (path == NULL)
        return;
    setenv("KILN_TEST_PLUGIN_UNSUPPORTED", mode, 1);
    kiln_context *ctx;
    ck_assert_int_eq(try_create(path, &ctx), KILN_OK);
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                               "%s = sum %x axes=[1]\n%y = neg %x\n"
                               "output %s\noutput %y\n");
    float x[6] = {1, 2, 3, 4, 5, 6}, s2[2], y6[6];
    int64_t sz[2] = {2, 3}, s1[1] = {2};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 2, sz, NULL, x)};
    kiln_tensor *out[2] = {tu_tensor(KILN_F32, 1, s1, NULL, s2),
                           tu_tensor(KILN_F32, 2, sz, NULL, y6)};
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 2, NULL, info), KILN_OK);
    ck_assert_float_eq(s2[0], 6.0f);
    ck_assert_float_eq(s2[1], 15.0f);
    ck_assert_float_eq(y6[5], -6.0f);
    ck_assert_uint_eq(kiln_exec_info_segment_count(info), 2);
    int is_launch = strcmp(mode, "launch") == 0;
    ck_assert_int_eq(tu_seg(info, 0).kind, KILN_SEG_REFERENCE);     /* sum */
    ck_assert_int_eq(tu_seg(info, 1).kind,
                     is_launch ? KILN_SEG_REFERENCE : KILN_SEG_GENERATED);
    ck_assert_str_eq(tu_seg(info, 0).path, "ref");
    const char *dis[1] = {"fallback"};
    kiln_exec_options eo = tu_opts(NULL, 0, dis, 1);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 2, &eo, info),
                     KILN_ERR_FALLBACK_DISABLED);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "disable=fallback"));
    unsetenv("KILN_TEST_PLUGIN_UNSUPPORTED");
    kiln_exec_info_destroy(info);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(out[1]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}

START_TEST(reference_fallback_at_compile) { fallback_case("compile"); }
END_TEST

START_TEST(reference_fallback_at_launch) { fallback_case("launch"); }
END_TEST

/* Read everything written to a tmpfile so far. */
static void slurp(FILE *fp, char *buf, size_t cap)
{
    fflush(fp);
    rewind(fp);
    size_t n = fread(buf, 1, cap - 1, fp);
    buf[n] = '\0';
}

/* neg of 3 floats: the fusion, an input over x and an output over o. */
static kiln_fusion *neg3(float *x, float *o, kiln_tensor **in,
                         kiln_tensor **out)
{
    int64_t sz[1] = {3};
    *in = tu_tensor(KILN_F32, 1, sz, NULL, x);
    *out = tu_tensor(KILN_F32, 1, sz, NULL, o);
    return tu_fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\n"
                     "output %y\n");
}

START_TEST(warn_register_spill_reports_compiled_kernels)
{
    const char *path = plugin_path(__func__);
    if (path == NULL)
        return;
    setenv("KILN_TEST_PLUGIN_LOCAL_BYTES", "128", 1);
    FILE *dump = tmpfile();
    ck_assert_ptr_nonnull(dump);
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = path;
    cfg.use_env_override = 1;
    cfg.dump_stream = dump;
    kiln_context *ctx;
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    float x[3] = {1, 2, 3}, o[3];
    kiln_tensor *in[1], *out[1];
    kiln_fusion *f = neg3(x, o, &in[0], &out[0]);
    const char *w64[1] = {"warn_register_spill(64)"};
    const char *w256[1] = {"warn_register_spill(256)"};
    const char *nofma[1] = {"fma"};
    kiln_exec_options x64 = {sizeof x64, w64, 1, NULL, 0, NULL};
    kiln_exec_options x256 = {sizeof x256, w256, 1, nofma, 1, NULL};
    char buf[2048];

    /* a compile reporting 128 bytes > 64: one warning naming both numbers */
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &x64, NULL), KILN_OK);
    slurp(dump, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "uses 128 bytes of local memory"));
    ck_assert_ptr_nonnull(strstr(buf, "warn_register_spill(64)"));
    size_t len = strlen(buf);
    /* a cache hit compiles nothing, so it warns about nothing */
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &x64, NULL), KILN_OK);
    slurp(dump, buf, sizeof buf);
    ck_assert_uint_eq(strlen(buf), len);
    /* a new kernel (disable=fma) under a limit above 128: no warning */
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &x256, NULL), KILN_OK);
    slurp(dump, buf, sizeof buf);
    ck_assert_uint_eq(strlen(buf), len);
    ck_assert_float_eq(o[2], -3.0f);

    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
    fclose(dump);
    unsetenv("KILN_TEST_PLUGIN_LOCAL_BYTES");
}
END_TEST

/* The test plugin's path, required: these tests cannot pass without it. */
static const char *need_plugin(void)
{
    const char *p = getenv("KILN_TEST_PLUGIN");
    ck_assert_msg(p != NULL && p[0] != '\0', "KILN_TEST_PLUGIN is unset (run "
                                              "through make test-unit)");
    return p;
}

/* A data object exported under the entry symbol's name is refused from its
** ELF symbol type, never called (tests/plugins/kiln_data_entry.c). */
START_TEST(data_entry_symbol)
{
    char path[4096], why[512];
    const char *tp = need_plugin(), *slash = strrchr(tp, '/');
    snprintf(path, sizeof path, "%.*s/libkiln_data_entry.so",
             slash ? (int)(slash - tp) : 1, slash ? tp : ".");
    kiln_context *ctx;
    ck_assert_int_eq(try_create(path, &ctx), KILN_ERR_ABI);
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(kiln_last_error(), "the entry symbol "
                                            "kiln_backend_entry is not usable: "
                                            "it is not a function (ELF symbol "
                                            "type 1, a data object)"),
                  "%s", kiln_last_error());
    ck_assert_int_eq(kiln_backend_probe(path, why, sizeof why), KILN_ERR_ABI);
    ck_assert_ptr_nonnull(strstr(why, "not a function"));
}
END_TEST

/* Length of the run of 'x' that ends s (0 when s does not end in 'x'). */
static size_t trailing_x(const char *s)
{
    size_t n = strlen(s), k = 0;
    while (k < n && s[n - 1 - k] == 'x')
        k++;
    return k;
}

/* A backend that fills a host buffer to its last byte without a NUL: error
** messages are read up to the buffer's end (cap - 1 bytes, then the host's
** NUL), never past it; identity, path and flags, which become keys and
** records, are refused with KILN_ERR_ABI.  The host's error buffers are as
** large as the last error (KILN_ERR_MSG_CAP), so the re-recorded message
** fills the last error exactly: cut by its size, never sooner. */
START_TEST(unterminated_backend_strings)
{
    const char *path = need_plugin();
    kiln_context *ctx;
    setenv("KILN_TEST_PLUGIN_UNTERMINATED", "open", 1);
    ck_assert_int_eq(try_create(path, &ctx), KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_uint_eq(strlen(kiln_last_error()), KILN_ERR_MSG_CAP - 1);
    ck_assert_uint_gt(trailing_x(kiln_last_error()), KILN_ERR_MSG_CAP - 64);
    float x[3] = {1, 2, 3}, o[3];
    kiln_tensor *in[1], *out[1];
    kiln_fusion *f = neg3(x, o, &in[0], &out[0]);
    static const struct {
        const char *mode;
        kiln_status st;
        int full; /* the message fills the last error */
        const char *needle;
    } modes[] = {
        {"compile", KILN_ERR_BACKEND, 1, "backend test-plugin: xxx"},
        {"launch", KILN_ERR_BACKEND, 1, "on test-plugin: xxx"},
        {"identity", KILN_ERR_ABI, 0,
         "backend test-plugin: the identity string for kernel options '' is "
         "not NUL-terminated within its 512 bytes"},
        {"path", KILN_ERR_ABI, 0,
         "backend test-plugin: compile returned a kernel path or flags string "
         "that is not NUL-terminated within its 16 or 256 bytes"},
        {"flags", KILN_ERR_ABI, 0, "not NUL-terminated within its 16 or 256"},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        unsetenv("KILN_TEST_PLUGIN_UNTERMINATED");
        ck_assert_int_eq(try_create(path, &ctx), KILN_OK);
        setenv("KILN_TEST_PLUGIN_UNTERMINATED", modes[i].mode, 1);
        kiln_status st = kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL);
        ck_assert_msg(st == modes[i].st, "%s: %s: %s", modes[i].mode,
                      kiln_status_name(st), kiln_last_error());
        ck_assert_msg(strstr(kiln_last_error(), modes[i].needle), "%s: %s",
                      modes[i].mode, kiln_last_error());
        size_t len = strlen(kiln_last_error()), xs = trailing_x(kiln_last_error());
        if (modes[i].full)
            ck_assert_msg(len == KILN_ERR_MSG_CAP - 1 && xs > KILN_ERR_MSG_CAP - 64,
                          "%s: %zu bytes, %zu x", modes[i].mode, len, xs);
        else
            ck_assert_msg(xs == 0, "%s: %zu x", modes[i].mode, xs);
        kiln_context_destroy(ctx);
    }
    unsetenv("KILN_TEST_PLUGIN_UNTERMINATED");
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
}
END_TEST

/* A backend error longer than the 1,024-byte buffers the host once passed
** to compile() and launch() reaches the last error whole: it used to be
** re-recorded through such a buffer and cut (an NVRTC log, say). */
START_TEST(long_backend_errors_are_not_cut)
{
    const char *path = need_plugin();
    float x[3] = {1, 2, 3}, o[3];
    kiln_tensor *in[1], *out[1];
    kiln_fusion *f = neg3(x, o, &in[0], &out[0]);
    static const char *const where[] = {"compile", "launch"};
    for (int i = 0; i < 2; i++) {
        kiln_context *ctx;
        ck_assert_int_eq(try_create(path, &ctx), KILN_OK);
        setenv("KILN_TEST_PLUGIN_LONG_ERROR", where[i], 1);
        kiln_status st = kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL);
        unsetenv("KILN_TEST_PLUGIN_LONG_ERROR");
        const char *e = kiln_last_error();
        ck_assert_msg(st == KILN_ERR_BACKEND, "%s: %s: %s", where[i],
                      kiln_status_name(st), e);
        ck_assert_msg(strstr(e, "test-plugin: a long ") != NULL, "%s: %s", where[i], e);
        ck_assert_msg(strlen(e) > 1500 && strcmp(e + strlen(e) - 4, " END") == 0,
                      "%s: the message was cut at %zu bytes: ...%s", where[i],
                      strlen(e), e + (strlen(e) > 40 ? strlen(e) - 40 : 0));
        kiln_context_destroy(ctx);
    }
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
}
END_TEST

/* KILN_DUMP=cuda_kernel prints what the backend's kernel_source() gives
** (an optional ABI function) for each kernel a call compiled, and nothing
** for a cache hit; a descriptor whose struct_size ends before the field
** has none, and the host never reads it. */
START_TEST(dump_uses_kernel_source)
{
    const char *path = need_plugin();
    float x[3] = {1, 2, 3}, o[3];
    kiln_tensor *in[1], *out[1];
    kiln_fusion *f = neg3(x, o, &in[0], &out[0]);
    char size[32], buf[4096];
    snprintf(size, sizeof size, "%zu", offsetof(kiln_backend, kernel_source));
    for (int clipped = 0; clipped < 2; clipped++) {
        if (clipped)
            setenv("KILN_TEST_PLUGIN_SIZE", size, 1);
        FILE *dump = tmpfile();
        ck_assert_ptr_nonnull(dump);
        kiln_context_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.struct_size = sizeof cfg;
        cfg.backend = path;
        cfg.use_env_override = 1;
        cfg.env_dump = "cuda_kernel";
        cfg.dump_stream = dump;
        kiln_context *ctx;
        ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
        unsetenv("KILN_TEST_PLUGIN_SIZE");
        ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
        ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
        slurp(dump, buf, sizeof buf);
        const char *hdr = strstr(buf, "kiln: cuda_kernel: segment 0 (");
        if (clipped) {
            ck_assert_msg(hdr == NULL, "dumped beyond struct_size:\n%s", buf);
        } else {
            ck_assert_msg(hdr != NULL, "no dump:\n%s", buf);
            ck_assert_msg(strstr(hdr, "\n// test-plugin source: 2 nodes\n//   node 0: "
                                      "input\n//   node 1: neg\n") != NULL, "%s", buf);
            ck_assert_msg(strstr(hdr + 1, "kiln: cuda_kernel:") == NULL,
                          "a cache hit was dumped:\n%s", buf);
        }
        kiln_context_destroy(ctx);
        fclose(dump);
    }
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
}
END_TEST

Suite *plugin_suite(void)
{
    Suite *s = suite_create("plugin");
    TCase *tc = tcase_create("load");
    tcase_add_test(tc, plugin_runs_like_ref);
    tcase_add_test(tc, warn_register_spill_reports_compiled_kernels);
    tcase_add_test(tc, missing_entry_symbol);
    tcase_add_test(tc, abi_version_mismatch);
    tcase_add_test(tc, unloadable_paths);
    tcase_add_test(tc, so_name_in_current_directory);
    tcase_add_test(tc, reference_fallback_at_compile);
    tcase_add_test(tc, reference_fallback_at_launch);
    tcase_add_test(tc, data_entry_symbol);
    tcase_add_test(tc, unterminated_backend_strings);
    tcase_add_test(tc, long_backend_errors_are_not_cut);
    tcase_add_test(tc, dump_uses_kernel_source);
    suite_add_tcase(s, tc);
    return s;
}
