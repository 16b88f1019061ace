/*
** test_cuda.c -- the CUDA backend pieces that run without a GPU: the
** loader's "unavailable" reasons, codegen for every op x dtype compiled by
** NVRTC for sm_90 and sm_80 under the kernel-level option sets, the option
** -> flag mapping, the identity string, failed compiles carrying the log
** and the source, the bit-exact simplification passes, trait / index64
** variants, and the compile-only "nvrtc" backend end to end (through ref).
**
** NVRTC compiles take ~0.5 s per program, so many generated kernels are
** compiled as one program: each kernel's text after the preamble is put in
** its own namespace and its entry points renamed.  Tests that need NVRTC
** or a GPU record a visible, counted skip (tu_skip.h) when it is missing,
** and fail instead under KILN_TEST_NVRTC_REQUIRED / KILN_TEST_GPU.
*/
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_codegen.h"
#include "backends/cuda_flags.h"
#include "ir_simplify.h"
#include "backends/cuda_loader.h"
#include "internal.h"
#include "numeric.h"
#include "../../conformance/conform.h"
#include "tu_skip.h"

#define AC (KILN_TRAIT_CONTIG | KILN_TRAIT_ALIGN16)

/* ------------------------------------------------------- segment builder */

/* Room for the largest segments the planner hands out (many views). */
typedef struct tseg {
    kiln_ir_node n[600];
    uint32_t nn;
    int32_t outs[256];
    uint32_t nout, nin;
    uint32_t itr[256], otr[256];
    kiln_ir_segment s;
} tseg;

static void ts_init(tseg *t, uint32_t kind)
{
    memset(t, 0, sizeof *t);
    t->s.struct_size = sizeof t->s;
    t->s.kind = kind;
}
static int32_t ts_node(tseg *t, int op, int dt, int rank, int a, int b, int c)
{
    ck_assert_uint_lt(t->nn, sizeof t->n / sizeof t->n[0]);
    kiln_ir_node *x = &t->n[t->nn];
    memset(x, 0, sizeof *x);
    x->op = (uint16_t)op;
    x->dtype = (uint8_t)dt;
    x->rank = (uint8_t)rank;
    x->args[0] = a;
    x->args[1] = b;
    x->args[2] = c;
    x->io = -1;
    return (int32_t)t->nn++;
}
static int32_t ts_in(tseg *t, int dt, int rank, uint32_t traits)
{
    int32_t i = ts_node(t, KILN_OP_INPUT, dt, rank, -1, -1, -1);
    ck_assert_uint_lt(t->nin, sizeof t->itr / sizeof t->itr[0]);
    t->n[i].io = (int32_t)t->nin;
    t->itr[t->nin++] = traits;
    return i;
}
static int32_t ts_const(tseg *t, int dt, uint64_t bits)
{
    int32_t i = ts_node(t, KILN_OP_CONST, dt, 0, -1, -1, -1);
    t->n[i].bits = bits;
    return i;
}
static int32_t ts_reduce(tseg *t, int op, int dt, int rank, int a, uint32_t axes)
{
    int32_t i = ts_node(t, op, dt, rank, a, -1, -1);
    t->n[i].axes = axes;
    t->n[i].bcast = axes;
    t->n[i].flags = KILN_IR_KEEPDIM;
    return i;
}
static void ts_out(tseg *t, int32_t v, uint32_t traits)
{
    ck_assert_uint_lt(t->nout, sizeof t->outs / sizeof t->outs[0]);
    t->otr[t->nout] = traits;
    t->outs[t->nout++] = v;
}
static const kiln_ir_segment *ts_done(tseg *t)
{
    t->s.nodes = t->n;
    t->s.n_nodes = t->nn;
    t->s.n_inputs = t->nin;
    t->s.outputs = t->outs;
    t->s.n_outputs = t->nout;
    t->s.input_traits = t->itr;
    t->s.output_traits = t->otr;
    return &t->s;
}

static kiln_kernel_options ko_default(void)
{
    kiln_kernel_options ko;
    memset(&ko, 0, sizeof ko);
    ko.struct_size = sizeof ko;
    ko.contract = 1;
    ko.sass = 1;
    ko.canonical = "";
    return ko;
}

/* ------------------------------------------------------- segment catalogue */

/* The op table (runtime/fusion.c) decides the catalogue: every pointwise
** op (kinds u/b/c/l/w and fma) x every dtype its row accepts, every
** reduction x its dtypes, matmul x its dtypes. */
static const kiln_op_desc *row(int op) { return kiln__op_desc((kiln_op)op); }

static int is_pointwise(int op)
{
    return strchr("ubclw", row(op)->kind) != NULL || op == KILN_OP_FMA;
}

static int result_dtype(int op, int dt)
{
    return row(op)->result == KILN_RESULT_SAME ? dt : row(op)->result;
}

/* Pointwise segment `op` on dtype dt over rank 2 with the given traits. */
static void seg_pointwise(tseg *t, int op, int dt, uint32_t tr)
{
    ts_init(t, KILN_SEGK_POINTWISE);
    int a[3];
    int n = row(op)->arity;
    for (int k = 0; k < n; k++) {
        int d = (op == KILN_OP_WHERE && k == 0) ? KILN_BOOL : dt;
        a[k] = ts_in(t, d, 2, k == 1 ? KILN_TRAIT_ALIGN16 : tr); /* one broadcast-ish view */
    }
    int r = ts_node(t, op, result_dtype(op, dt), 2, a[0], n > 1 ? a[1] : -1, n > 2 ? a[2] : -1);
    ts_out(t, r, tr);
}

static void seg_cast(tseg *t, int from, int to, uint32_t tr)
{
    ts_init(t, KILN_SEGK_POINTWISE);
    int a = ts_in(t, from, 1, tr);
    ts_out(t, ts_node(t, KILN_OP_CAST, to, 1, a, -1, -1), tr);
}

/* Reduction: out = rop(x * x or x, axes) then + bias (reduced domain). */
static void seg_reduce(tseg *t, int rop, int dt, int rank, uint32_t axes, uint32_t tr)
{
    ts_init(t, KILN_SEGK_REDUCTION);
    int x = ts_in(t, dt, rank, tr);
    int p = ts_node(t, KILN_OP_ABS, dt, rank, x, -1, -1);
    int r = ts_reduce(t, rop, dt, rank, p, axes);
    int b = ts_in(t, dt, rank, 0);
    int y = ts_node(t, KILN_OP_ADD, dt, rank, r, b, -1);
    ts_out(t, y, tr);
    ts_out(t, r, tr);
}

static void seg_matmul(tseg *t, uint32_t kind, int dt, int epilogue, uint32_t tr)
{
    ts_init(t, kind);
    int a = ts_in(t, dt, 2, tr), b = ts_in(t, dt, 2, tr);
    int m = ts_node(t, KILN_OP_MATMUL, KILN_F32, 2, a, b, -1);
    if (epilogue) {
        int bias = ts_in(t, KILN_F32, 2, 0);
        int s = ts_node(t, KILN_OP_ADD, KILN_F32, 2, m, bias, -1);
        ts_out(t, ts_node(t, KILN_OP_RELU, KILN_F32, 2, s, -1, -1), tr);
    } else {
        ts_out(t, m, tr);
    }
}

/* Build catalogue entry i into t; returns 0 past the end.  The list covers
** every op x accepted dtype, every cast pair, sum/max/min inner and outer
** for each dtype, and matmul standalone / epilogue / fallback per dtype. */
static int catalogue(int i, tseg *t, uint32_t tr)
{
    int idx = 0;
    for (int op = 0; op < KILN_OP_COUNT; op++)
        for (int dt = 0; is_pointwise(op) && dt < KILN_DTYPE_COUNT; dt++)
            if (row(op)->accepts >> dt & 1u) {
                if (idx++ == i) {
                    seg_pointwise(t, op, dt, tr);
                    return 1;
                }
            }
    for (int from = 0; from < KILN_DTYPE_COUNT; from++)
        for (int to = 0; to < KILN_DTYPE_COUNT; to++)
            if (idx++ == i) {
                seg_cast(t, from, to, tr);
                return 1;
            }
    for (int op = 0; op < KILN_OP_COUNT; op++)
        for (int dt = 0; row(op)->reduce != KILN_REDUCE_NONE && dt < KILN_DTYPE_COUNT; dt++)
            for (int shape = 0; (row(op)->accepts >> dt & 1u) && shape < 3; shape++)
                if (idx++ == i) {
                    /* inner [?, ?] axis 1; outer axis 0; rank 3 axes {0, 2} */
                    if (shape == 0)
                        seg_reduce(t, op, dt, 2, 2u, tr);
                    else if (shape == 1)
                        seg_reduce(t, op, dt, 2, 1u, tr);
                    else
                        seg_reduce(t, op, dt, 3, 5u, tr);
                    return 1;
                }
    for (int dt = 0; dt < KILN_DTYPE_COUNT; dt++)
        for (int kind = 0; (row(KILN_OP_MATMUL)->accepts >> dt & 1u) && kind < 3; kind++)
            if (idx++ == i) {
                seg_matmul(t, kind == 0 ? KILN_SEGK_MATMUL
                              : kind == 1 ? KILN_SEGK_MATMUL_EPILOGUE
                                          : KILN_SEGK_MATMUL_FALLBACK,
                           dt, kind == 1, tr);
                return 1;
            }
    return 0;
}

/* ------------------------------------------------------- NVRTC batches */

/* NVRTC loaded into api, or 0 after a visible skip of `test` (a failure
** under KILN_TEST_NVRTC_REQUIRED, which make nvrtc-check sets). */
static int nvrtc_api(kiln_cuda_api *api, const char *test)
{
    char why[512];
    int ok = kiln__cuda_load(api, KILN_CUDA_LOAD_NVRTC, why, sizeof why) == KILN_OK;
    return tu_require(ok, "KILN_TEST_NVRTC_REQUIRED", test,
                      "NVRTC cannot be loaded: %s", why);
}

/* Open backend be, or 0 after a visible skip of `test` (a failure when the
** environment variable `required_by` is set). */
static int open_or_skip(const kiln_backend *be, void **st, const char *required_by,
                        const char *test)
{
    char err[4096];
    return tu_require(be->open(0, st, err, sizeof err) == KILN_OK, required_by, test,
                      "backend %s does not open: %s", be->name, err);
}

/* Append the kernel part of `src` to batch b as namespace kN with renamed
** entry points; the first call also appends the preamble. */
static void batch_add(kiln_buf *b, const char *src, int n)
{
    const char *marker = "// ---- end of preamble\n";
    const char *m = strstr(src, marker);
    ck_assert_ptr_nonnull(m);
    if (b->len == 0)
        kiln__buf_add(b, src, (size_t)(m - src) + strlen(marker));
    kiln__buf_printf(b, "namespace k%d {\n", n);
    const char *p = m + strlen(marker);
    for (;;) {
        const char *q1 = strstr(p, "kiln_main(");
        const char *q2 = strstr(p, "kiln_finish(");
        const char *q = q1 && (!q2 || q1 < q2) ? q1 : q2;
        if (q == NULL)
            break;
        size_t l = (size_t)(strchr(q, '(') - q);
        kiln__buf_add(b, p, (size_t)(q - p) + l);
        kiln__buf_printf(b, "_%d", n);
        p = q + l;
    }
    kiln__buf_puts(b, p);
    kiln__buf_printf(b, "} // namespace k%d\n", n);
}

/* Compile a batch with the flags of ko for arch; failure (error or any
** warning) fails the test with the log. */
static void batch_compile(const kiln_cuda_api *api, const char *src,
                          const kiln_kernel_options *ko, const char *arch)
{
    const char *argv[16];
    int argc = 0;
    char store[256];
    ck_assert_int_eq(kiln__cuda_flags(ko, arch, argv, &argc, store, sizeof store), KILN_OK);
    nvrtcProgram p = NULL;
    ck_assert_int_eq(api->p_nvrtcCreateProgram(&p, src, "batch.cu", 0, NULL, NULL),
                     NVRTC_SUCCESS);
    nvrtcResult r = api->p_nvrtcCompileProgram(p, argc, argv);
    size_t n = 0;
    api->p_nvrtcGetProgramLogSize(p, &n);
    char *log = malloc(n + 1);
    ck_assert_ptr_nonnull(log);
    log[0] = '\0';
    api->p_nvrtcGetProgramLog(p, log);
    api->p_nvrtcDestroyProgram(&p);
    int bad = r != NVRTC_SUCCESS || strspn(log, " \r\n") != strlen(log);
    if (bad)
        fprintf(stderr, "NVRTC %s failed (%d):\n%.6000s\n", arch, (int)r, log);
    free(log);
    ck_assert_msg(!bad, "NVRTC compile of the batch failed for %s", arch);
}

/* Generate catalogue entries [lo, hi) under ko with traits tr (and
** index64), compile them as one program for sm_90 and sm_80. */
static int compile_catalogue_step(const kiln_kernel_options *ko, uint32_t tr, int index64,
                                  int lo, int hi, int step)
{
    kiln_cuda_api api;
    if (!nvrtc_api(&api, __func__))
        return -1;
    kiln_buf b = {0};
    int count = 0;
    tseg t;
    for (int i = lo; i < hi && catalogue(i, &t, tr); i += step) {
        t.s.index64 = (uint32_t)index64;
        char *src = NULL;
        kiln_cuda_kinfo info;
        kiln_status s = kiln__cuda_codegen(ts_done(&t), ko, &src, &info);
        ck_assert_msg(s == KILN_OK, "codegen of catalogue entry %d: %s", i, kiln_last_error());
        batch_add(&b, src, i);
        kiln__free(src);
        count++;
    }
    ck_assert(!b.failed);
    if (count > 0) {
        batch_compile(&api, b.data, ko, "sm_90");
        batch_compile(&api, b.data, ko, "sm_80");
    }
    kiln__buf_free(&b);
    kiln__cuda_unload(&api);
    return count;
}

/* The whole catalogue under every option set takes minutes of NVRTC time:
** `make nvrtc-check` (scripts/nvrtc_check.sh) sets KILN_TEST_NVRTC_FULL=1;
** plain unit runs compile a strided sample of it. */
static int full_sweep(void) { return getenv("KILN_TEST_NVRTC_FULL") != NULL; }

static int compile_catalogue(const kiln_kernel_options *ko, uint32_t tr, int index64,
                             int lo, int hi)
{
    return compile_catalogue_step(ko, tr, index64, lo, hi, full_sweep() ? 1 : 9);
}

static int catalogue_size(void)
{
    tseg t;
    int n = 0;
    while (catalogue(n, &t, 0))
        n++;
    return n;
}

/* Every op x dtype etc. with the default options, aligned + contiguous
** views (vector paths, flat indexing). */
START_TEST(nvrtc_all_ops_default)
{
    kiln_kernel_options ko = ko_default();
    int n = compile_catalogue(&ko, AC, 0, 0, 1000);
    if (n >= 0 && full_sweep())
        ck_assert_int_eq(n, catalogue_size());
}
END_TEST

/* Same under fast_math + disable=fma, plain strided views, 64-bit indices. */
START_TEST(nvrtc_all_ops_fast_nofma_strided64)
{
    kiln_kernel_options ko = ko_default();
    ko.fast_math = 1;
    ko.contract = 0;
    compile_catalogue(&ko, 0, 1, 0, 1000);
}
END_TEST

/* The remaining kernel-level option sets on a slice of the catalogue
** (casts, reductions, matmul are all in the slice). */
START_TEST(nvrtc_option_sets)
{
    int n = catalogue_size();
    for (int set = full_sweep() ? 0 : 1; set < (full_sweep() ? 4 : 2); set++) {
        kiln_kernel_options ko = ko_default();
        switch (set) {
        case 0: ko.lineinfo = 1; break;
        case 1: ko.sass = 0; break;                 /* PTX for the driver JIT */
        case 2: ko.simplify_off = 0x1f; break;      /* every pass off */
        default: ko.debug = 1; ko.lineinfo = 1; break; /* -G wins */
        }
        int lo = set * 7, hi = lo + 14; /* a few pointwise kernels */
        compile_catalogue(&ko, set & 1 ? AC : KILN_TRAIT_ALIGN16, set == 2, lo, hi);
        /* plus the reductions and matmuls (the tail of the catalogue) */
        if (set != 3)
            compile_catalogue(&ko, AC, 0, n - 45, n);
    }
}
END_TEST

/* ------------------------------------------------------- flags / identity */

static int has_flag(const char *const *argv, int argc, const char *f)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], f) == 0)
            return 1;
    return 0;
}

START_TEST(flag_mapping)
{
    const char *argv[16];
    int argc;
    char store[256];
    kiln_kernel_options ko = ko_default();
    ck_assert_int_eq(kiln__cuda_flags(&ko, "sm_90", argv, &argc, store, sizeof store), KILN_OK);
    ck_assert(has_flag(argv, argc, "--std=c++17"));
    ck_assert(has_flag(argv, argc, "-default-device"));
    ck_assert(has_flag(argv, argc, "-arch=sm_90"));
    ck_assert(has_flag(argv, argc, "--fmad=true"));
    ck_assert(!has_flag(argv, argc, "--use_fast_math"));
    ck_assert(!has_flag(argv, argc, "-G") && !has_flag(argv, argc, "-lineinfo"));
    ko.fast_math = 1;
    ko.contract = 0;
    ck_assert_int_eq(kiln__cuda_flags(&ko, "sm_90", argv, &argc, store, sizeof store), KILN_OK);
    ck_assert(has_flag(argv, argc, "--use_fast_math"));
    ck_assert(has_flag(argv, argc, "--fmad=false"));
    int fm = -1, fa = -1; /* --fmad=false must come after --use_fast_math */
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--use_fast_math") == 0) fm = i;
        if (strcmp(argv[i], "--fmad=false") == 0) fa = i;
    }
    ck_assert_int_gt(fa, fm);
    ko = ko_default();
    ko.lineinfo = 1;
    ck_assert_int_eq(kiln__cuda_flags(&ko, "sm_80", argv, &argc, store, sizeof store), KILN_OK);
    ck_assert(has_flag(argv, argc, "-lineinfo") && has_flag(argv, argc, "-arch=sm_80"));
    ko.debug = 1;
    ck_assert_int_eq(kiln__cuda_flags(&ko, "sm_80", argv, &argc, store, sizeof store), KILN_OK);
    ck_assert(has_flag(argv, argc, "-G") && !has_flag(argv, argc, "-lineinfo"));
    ko = ko_default();
    ko.sass = 0;
    ck_assert_int_eq(kiln__cuda_flags(&ko, "sm_90", argv, &argc, store, sizeof store), KILN_OK);
    ck_assert(has_flag(argv, argc, "-arch=compute_90"));
    ck_assert_int_eq(kiln__cuda_flags(&ko, "gfx90", argv, &argc, store, sizeof store),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln__cuda_flags(&ko, "sm_90", argv, &argc, store, 8), KILN_ERR_LIMIT);
    char text[256];
    ck_assert_int_eq(kiln__cuda_flags_text(&ko, "sm_90", text, sizeof text), KILN_OK);
    ck_assert_str_eq(text, "--std=c++17 -default-device -arch=compute_90 --fmad=true");
    char simp[64];
    kiln__ir_simplify_text(0, simp, sizeof simp);
    ck_assert_str_eq(simp, "");
    kiln__ir_simplify_text(0x1f, simp, sizeof simp);
    ck_assert_str_eq(simp, "all");
    kiln__ir_simplify_text((1u << 3) | 1u, simp, sizeof simp);
    ck_assert_str_eq(simp, "cse,index");
}
END_TEST

START_TEST(identity_changes_with_every_kernel_option)
{
    const kiln_backend *be = kiln__backend_nvrtc();
    void *st = NULL;
    if (!open_or_skip(be, &st, "KILN_TEST_NVRTC_REQUIRED", __func__))
        return;
    char ids[9][1024];
    for (int v = 0; v < 9; v++) {
        kiln_kernel_options ko = ko_default();
        switch (v) {
        case 1: ko.fast_math = 1; break;
        case 2: ko.lineinfo = 1; break;
        case 3: ko.debug = 1; break;
        case 4: ko.contract = 0; break;
        case 5: ko.sass = 0; break;
        case 6: ko.simplify_off = 1; break;
        case 7: ko.simplify_off = 8; break;
        case 8: ko.debug = 1; ko.lineinfo = 1; break;
        default: break;
        }
        ck_assert_int_eq(be->identity(st, &ko, ids[v], sizeof ids[v]), KILN_OK);
        for (int u = 0; u < v; u++)
            ck_assert_msg(strcmp(ids[u], ids[v]) != 0, "identity %d == %d: %s", u, v, ids[v]);
    }
    ck_assert_ptr_nonnull(strstr(ids[0], "nvrtc archs=sm_90,sm_80 nvrtc-"));
    ck_assert_ptr_nonnull(strstr(ids[0], "codegen="));
    char small[16];
    kiln_kernel_options ko = ko_default();
    ck_assert_int_eq(be->identity(st, &ko, small, sizeof small), KILN_ERR_LIMIT);
    be->close(st);
}
END_TEST

/* ------------------------------------------------------- availability */

START_TEST(cuda_open_without_driver)
{
    /* An explicit driver path that does not exist: "no driver" always. */
    setenv("KILN_LIBCUDA_PATH", "/nonexistent/libcuda.so.1", 1);
    const kiln_backend *be = kiln__backend_cuda();
    ck_assert_str_eq(be->name, "cuda");
    void *st = (void *)0x1;
    char err[512] = "";
    ck_assert_int_eq(be->open(0, &st, err, sizeof err), KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(err, "cuda: no driver ("));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/libcuda.so.1"));
    ck_assert_ptr_eq(st, (void *)0x1); /* untouched on failure */
    unsetenv("KILN_LIBCUDA_PATH");
    /* The real library: on a machine without a driver the same reason. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        ck_assert_int_eq(be->open(0, &st, err, sizeof err), KILN_ERR_BACKEND_UNAVAILABLE);
        ck_assert_ptr_nonnull(strstr(err, "cuda: no driver ("));
    } else {
        dlclose(h);
        kiln_status s = be->open(0, &st, err, sizeof err);
        if (s == KILN_OK)
            be->close(st);
        else
            ck_assert_ptr_nonnull(strstr(err, "cuda: no"));
    }
}
END_TEST

START_TEST(nvrtc_missing_is_reported)
{
    setenv("KILN_NVRTC_PATH", "/nonexistent/libnvrtc.so.99", 1);
    void *st = NULL;
    char err[512] = "";
    ck_assert_int_eq(kiln__backend_nvrtc()->open(0, &st, err, sizeof err),
                     KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(err, "nvrtc: no NVRTC (KILN_NVRTC_PATH="));
    kiln_cuda_api api;
    ck_assert_int_eq(kiln__cuda_load(&api, KILN_CUDA_LOAD_NVRTC, err, sizeof err),
                     KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(err, "no NVRTC ("));
    unsetenv("KILN_NVRTC_PATH");
}
END_TEST

START_TEST(error_text_of_failed_calls)
{
    /* No driver table: the name/string lookups fall back. */
    kiln_cuda_api api;
    memset(&api, 0, sizeof api);
    char err[512];
    ck_assert_int_eq(kiln__cu_check(&api, CUDA_ERROR_INVALID_VALUE, "cuMemAlloc(&p, 0)", err,
                                    sizeof err), KILN_ERR_CUDA);
    ck_assert_str_eq(err, "cuda: cuMemAlloc(&p, 0) failed: unknown CUresult (no description) [code 1]");
    ck_assert_str_eq(kiln_last_error(), err);
    ck_assert_int_eq(kiln__cu_check(&api, CUDA_ERROR_OUT_OF_MEMORY, "x", err, sizeof err),
                     KILN_ERR_NO_MEMORY);
    ck_assert_int_eq(kiln__cu_check(&api, CUDA_SUCCESS, "x", err, sizeof err), KILN_OK);
    ck_assert_int_eq(kiln__nvrtc_check(&api, NVRTC_ERROR_COMPILATION, "nvrtcCompileProgram(p)",
                                       err, sizeof err), KILN_ERR_COMPILE);
    ck_assert_ptr_nonnull(strstr(err, "[code 6]"));
    if (nvrtc_api(&api, __func__)) {
        ck_assert_int_eq(kiln__nvrtc_check(&api, NVRTC_ERROR_COMPILATION, "nvrtcCompileProgram(p)",
                                           err, sizeof err), KILN_ERR_COMPILE);
        ck_assert_ptr_nonnull(strstr(err, "NVRTC_ERROR_COMPILATION"));
        kiln__cuda_unload(&api);
    }
}
END_TEST

/* ------------------------------------------------------- failed compiles */

/* Which NVRTC log text fails a build: any, except blank lines and, under
** -G only, the debug-information note. */
START_TEST(nvrtc_log_policy)
{
    const char *note = "warning: Function too large, generated debug "
                       "information may not be accurate.";
    char two[256];
    snprintf(two, sizeof two, "\n%s\r\n  \n%s\n", note, note);
    ck_assert_int_eq(kiln__cuda_log_benign(NULL, 0), 1);
    ck_assert_int_eq(kiln__cuda_log_benign("", 0), 1);
    ck_assert_int_eq(kiln__cuda_log_benign(" \r\n\n", 0), 1);
    ck_assert_int_eq(kiln__cuda_log_benign(note, 1), 1);
    ck_assert_int_eq(kiln__cuda_log_benign(two, 1), 1);
    ck_assert_int_eq(kiln__cuda_log_benign(note, 0), 0); /* not without -G */
    ck_assert_int_eq(kiln__cuda_log_benign(two, 0), 0);
    snprintf(two, sizeof two, "%s\nkiln_kernel.cu(3): warning #177-D: "
             "variable \"x\" was declared but never referenced\n", note);
    ck_assert_int_eq(kiln__cuda_log_benign(two, 1), 0); /* a real warning */
    ck_assert_int_eq(kiln__cuda_log_benign("warning: Function too large", 1), 0);
}
END_TEST

/* NVRTC 12.9 added a compile cache; Kiln turns it off from there on. */
START_TEST(nvrtc_cache_versions)
{
    ck_assert_int_eq(kiln__cuda_nvrtc_caches(11, 8), 0);
    ck_assert_int_eq(kiln__cuda_nvrtc_caches(12, 8), 0);
    ck_assert_int_eq(kiln__cuda_nvrtc_caches(12, 9), 1);
    ck_assert_int_eq(kiln__cuda_nvrtc_caches(13, 0), 1);
    ck_assert_int_eq(kiln__cuda_nvrtc_caches(14, 0), 1);
}
END_TEST

START_TEST(failed_compile_carries_log_and_source)
{
    setenv("KILN_NVRTC_ARCHS", "sm_10", 1); /* NVRTC rejects this target */
    const kiln_backend *be = kiln__backend_nvrtc();
    void *st = NULL;
    char err[16384];
    if (!open_or_skip(be, &st, "KILN_TEST_NVRTC_REQUIRED", __func__))
        return;
    tseg t;
    seg_pointwise(&t, KILN_OP_ADD, KILN_F32, AC);
    kiln_kernel_options ko = ko_default();
    kiln_kernel_out out;
    memset(&out, 0, sizeof out);
    ck_assert_int_eq(be->compile(st, ts_done(&t), &ko, &out, err, sizeof err), KILN_ERR_COMPILE);
    ck_assert_ptr_nonnull(strstr(err, "NVRTC compile for sm_10 failed"));
    ck_assert_ptr_nonnull(strstr(err, "--- NVRTC log ---"));
    ck_assert_ptr_nonnull(strstr(err, "sm_10"));           /* the log names it */
    ck_assert_ptr_nonnull(strstr(err, "--- generated source"));
    ck_assert_ptr_nonnull(strstr(err, "kiln_post("));      /* the source itself */
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "--- NVRTC log ---"));
    /* the flags NVRTC got: its own cache off where it has one */
    int mj = 0, mn = 0;
    ck_assert_int_eq(sscanf(strstr(err, "[nvrtc ") + 7, "%d.%d", &mj, &mn), 2);
    ck_assert_msg((strstr(err, " --no-cache]") != NULL) == kiln__cuda_nvrtc_caches(mj, mn),
                  "nvrtc %d.%d: %.300s", mj, mn, err);
    ck_assert_ptr_null(out.handle);
    be->close(st);
    unsetenv("KILN_NVRTC_ARCHS");
    setenv("KILN_NVRTC_ARCHS", "sm_90,,", 1);
    ck_assert_int_eq(be->open(0, &st, err, sizeof err), KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(err, "KILN_NVRTC_ARCHS"));
    unsetenv("KILN_NVRTC_ARCHS");
}
END_TEST

START_TEST(codegen_rejects_bad_segments)
{
    kiln_kernel_options ko = ko_default();
    char *src = (char *)0x1;
    kiln_cuda_kinfo info;
    tseg t;
    seg_pointwise(&t, KILN_OP_ADD, KILN_F32, AC);
    t.n[2].args[1] = 2; /* refers to itself */
    ck_assert_int_eq(kiln__cuda_codegen(ts_done(&t), &ko, &src, &info), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(src, (void *)0x1);
    ts_init(&t, KILN_SEGK_POINTWISE); /* f16 arithmetic needs a cast first */
    int a = ts_in(&t, KILN_F16, 1, AC);
    ts_out(&t, ts_node(&t, KILN_OP_NEG, KILN_F16, 1, a, -1, -1), AC);
    ck_assert_int_eq(kiln__cuda_codegen(ts_done(&t), &ko, &src, &info), KILN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "f16"));
    seg_reduce(&t, KILN_OP_SUM, KILN_F32, 2, 2u, AC);
    t.s.kind = KILN_SEGK_POINTWISE; /* kind disagrees with the nodes */
    ck_assert_int_eq(kiln__cuda_codegen(ts_done(&t), &ko, &src, &info), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln__cuda_codegen(NULL, &ko, &src, &info), KILN_ERR_INVALID_ARGUMENT);
    /* allocation failures are clean */
    seg_reduce(&t, KILN_OP_SUM, KILN_F32, 2, 2u, AC);
    for (long n = 0; n < 200; n++) {
        kiln__fault_after(n);
        kiln_status s = kiln__cuda_codegen(ts_done(&t), &ko, &src, &info);
        kiln__fault_after(-1);
        if (s == KILN_OK) {
            kiln__free(src);
            break;
        }
        ck_assert_int_eq(s, KILN_ERR_NO_MEMORY);
    }
}
END_TEST

/* ------------------------------------------------------- variants, passes */

static char *gen(const kiln_ir_segment *s, const kiln_kernel_options *ko, kiln_cuda_kinfo *info)
{
    char *src = NULL;
    kiln_cuda_kinfo tmp;
    ck_assert_msg(kiln__cuda_codegen(s, ko, &src, info ? info : &tmp) == KILN_OK, "%s",
                  kiln_last_error());
    const char *m = strstr(src, "// ---- end of preamble\n");
    ck_assert_ptr_nonnull(m);
    return src;
}
static const char *body(const char *src) { return strstr(src, "// ---- end of preamble\n"); }

START_TEST(traits_and_index_width)
{
    kiln_kernel_options ko = ko_default();
    tseg t;
    kiln_cuda_kinfo info;
    seg_pointwise(&t, KILN_OP_MUL, KILN_F32, AC);
    char *s = gen(ts_done(&t), &ko, &info);
    ck_assert_ptr_nonnull(strstr(body(s), "typedef unsigned int ix;"));
    ck_assert_ptr_nonnull(strstr(body(s), "KVec<float, 4>"));      /* 16-byte vectors */
    ck_assert_ptr_nonnull(strstr(body(s), "const ix oi0 = i;"));   /* flat: CONTIG + index */
    ck_assert_int_eq(info.vec, 4);
    ck_assert_uint_eq(kiln__cuda_in_flags(&info, 0) & KILN_CUDA_V_FLAT, KILN_CUDA_V_FLAT);
    kiln__free(s);
    t.s.index64 = 1;
    s = gen(&t.s, &ko, &info);
    ck_assert_ptr_nonnull(strstr(body(s), "typedef unsigned long long ix;"));
    ck_assert_int_eq(info.index64, 1);
    kiln__free(s);
    seg_pointwise(&t, KILN_OP_MUL, KILN_F32, 0); /* no traits: scalar, strided */
    s = gen(ts_done(&t), &ko, &info);
    ck_assert_ptr_null(strstr(body(s), "KVec"));
    ck_assert_ptr_null(strstr(body(s), "const ix oi0 = i;"));
    ck_assert_int_eq(info.vec, 0);
    kiln__free(s);
    seg_cast(&t, KILN_F64, KILN_F16, AC); /* vector width from the smallest dtype */
    s = gen(ts_done(&t), &ko, &info);
    ck_assert_int_eq(info.vec, 8);
    ck_assert_ptr_nonnull(strstr(body(s), "kd2h("));
    kiln__free(s);
    seg_reduce(&t, KILN_OP_SUM, KILN_F32, 2, 2u, AC);
    s = gen(ts_done(&t), &ko, &info);
    ck_assert_int_eq(info.kind, KILN_CK_REDUCE_INNER);
    ck_assert_ptr_nonnull(strstr(body(s), "KAccSumF32"));
    ck_assert_ptr_nonnull(strstr(body(s), "kiln_finish"));
    ck_assert_uint_eq(info.acc_bytes, 8);
    kiln__free(s);
    seg_reduce(&t, KILN_OP_RMAX, KILN_F64, 2, 1u, AC);
    s = gen(ts_done(&t), &ko, &info);
    ck_assert_int_eq(info.kind, KILN_CK_REDUCE_OUTER);
    ck_assert_ptr_nonnull(strstr(body(s), "KAccMax<double>"));
    kiln__free(s);
    seg_matmul(&t, KILN_SEGK_MATMUL_EPILOGUE, KILN_BF16, 1, AC);
    s = gen(ts_done(&t), &ko, &info);
    ck_assert_int_eq(info.kind, KILN_CK_MATMUL);
    ck_assert_int_eq(info.mm_a, 0);
    ck_assert_int_eq(info.mm_b, 1);
    ck_assert_ptr_nonnull(strstr(body(s), "kb2f"));
    kiln__free(s);
}
END_TEST

START_TEST(simplify_passes_and_switches)
{
    kiln_kernel_options ko = ko_default();
    tseg t;
    /* y = (x * 1.0) + (x * 1.0); z = y * 2.0; w = z / 4.0; c = 2 + 3 (i32) */
    ts_init(&t, KILN_SEGK_POINTWISE);
    int x = ts_in(&t, KILN_F32, 1, AC);
    int one = ts_const(&t, KILN_F32, 0x3f800000);
    int m1 = ts_node(&t, KILN_OP_MUL, KILN_F32, 1, x, one, -1);
    int m2 = ts_node(&t, KILN_OP_MUL, KILN_F32, 1, x, one, -1);
    int y = ts_node(&t, KILN_OP_ADD, KILN_F32, 1, m1, m2, -1);
    int two = ts_const(&t, KILN_F32, 0x40000000);
    int z = ts_node(&t, KILN_OP_MUL, KILN_F32, 1, y, two, -1);
    int four = ts_const(&t, KILN_F32, 0x40800000);
    int w = ts_node(&t, KILN_OP_DIV, KILN_F32, 1, z, four, -1);
    int i2 = ts_const(&t, KILN_I32, 2), i3 = ts_const(&t, KILN_I32, 3);
    int c = ts_node(&t, KILN_OP_ADD, KILN_I32, 0, i2, i3, -1);
    ts_out(&t, w, AC);
    ts_out(&t, c, AC);
    ts_done(&t);
    char *s = gen(&t.s, &ko, NULL);
    const char *b = body(s);
    ck_assert_ptr_null(strstr(b, "kmul(v0, __uint_as_float(0x3f800000u))")); /* identity */
    ck_assert_ptr_nonnull(strstr(b, "kadd(v0, v0)"));        /* cse + identity */
    ck_assert_ptr_nonnull(strstr(b, "kadd(v4, v4)"));        /* strength: y*2 -> y+y */
    ck_assert_ptr_nonnull(strstr(b, "kmul(v6, __uint_as_float(0x3e800000u))")); /* /4 -> *0.25 */
    ck_assert_ptr_nonnull(strstr(b, "r1 = ((int)0x5u);"));   /* fold */
    ck_assert_ptr_nonnull(strstr(b, "const ix oi0 = i;"));   /* index */
    kiln__free(s);
    /* each pass can be switched off on its own */
    struct { uint64_t off; const char *present; } cases[] = {
        {1u << 1, "kadd(((int)0x2u), ((int)0x3u))"},
        {1u << 2, "kmul(v0, __uint_as_float(0x3f800000u))"},
        {1u << 3, "ix oi0 = 0;"},
        {1u << 4, "kdiv(v6, __uint_as_float(0x40800000u))"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ko.simplify_off = cases[k].off;
        s = gen(&t.s, &ko, NULL);
        ck_assert_msg(strstr(body(s), cases[k].present) != NULL, "pass %zu off: %s missing", k,
                      cases[k].present);
        kiln__free(s);
    }
    /* cse: exp(x) + exp(x) shares the exp unless the pass is off */
    {
        tseg u;
        ts_init(&u, KILN_SEGK_POINTWISE);
        int ux = ts_in(&u, KILN_F32, 1, AC);
        int e1 = ts_node(&u, KILN_OP_EXP, KILN_F32, 1, ux, -1, -1);
        int e2 = ts_node(&u, KILN_OP_EXP, KILN_F32, 1, ux, -1, -1);
        ts_out(&u, ts_node(&u, KILN_OP_ADD, KILN_F32, 1, e1, e2, -1), AC);
        ko = ko_default();
        s = gen(ts_done(&u), &ko, NULL);
        ck_assert_ptr_nonnull(strstr(body(s), "kadd(v1, v1)"));
        kiln__free(s);
        ko.simplify_off = 1u;
        s = gen(&u.s, &ko, NULL);
        ck_assert_ptr_nonnull(strstr(body(s), "kadd(v1, v2)"));
        kiln__free(s);
    }
    /* with cse and identity off, both x*1 multiplications remain */
    ko.simplify_off = 1u | 4u;
    s = gen(&t.s, &ko, NULL);
    ck_assert_ptr_nonnull(strstr(body(s), "const float v2 = kmul(v0,"));
    ck_assert_ptr_nonnull(strstr(body(s), "const float v3 = kmul(v0,"));
    kiln__free(s);
    /* under fast_math float identities are not applied (flush to zero) */
    ko = ko_default();
    ko.fast_math = 1;
    s = gen(&t.s, &ko, NULL);
    ck_assert_ptr_nonnull(strstr(body(s), "kmul(v0, __uint_as_float(0x3f800000u))"));
    kiln__free(s);
}
END_TEST

/* ------------------------------------------------------- many views */

/* Segments with many inputs/outputs (issue 11: a flag word packed inputs
** into bits 0-15 and outputs into 16-31, so input 16 read output 0's
** CONTIG bit, and `1u << io` was undefined for io >= 32). */

/* Input k of a many-view test segment is dense (CONTIG) or a strided /
** broadcast view (ALIGN16 only), alternating; rot shifts the pattern so
** every position is tested both ways. */
static uint32_t many_trait(uint32_t k, int rot)
{
    return ((k + (uint32_t)rot) % 2u == 0) ? AC : KILN_TRAIT_ALIGN16;
}

static int has(const char *src, const char *fmt, uint32_t k)
{
    char pat[128];
    snprintf(pat, sizeof pat, fmt, k, k, k);
    return strstr(src, pat) != NULL;
}

/* Pointwise: out0 = x0 + x1 + ... (and with nout > 1, out j = x_j * x_j').
** Each input must be indexed by the linear index exactly when it is
** CONTIG, and by its strides otherwise; the same for each output. */
static void check_pointwise_views(uint32_t nin, uint32_t nout, int rot, char **keep)
{
    static tseg b;
    ts_init(&b, KILN_SEGK_POINTWISE);
    int32_t acc = -1;
    int32_t in[256];
    for (uint32_t k = 0; k < nin; k++) {
        in[k] = ts_in(&b, KILN_F32, 2, many_trait(k, rot));
        acc = k == 0 ? in[0] : ts_node(&b, KILN_OP_ADD, KILN_F32, 2, acc, in[k], -1);
    }
    ts_out(&b, acc, AC);
    for (uint32_t j = 1; j < nout; j++)
        ts_out(&b, ts_node(&b, KILN_OP_MUL, KILN_F32, 2, in[j % nin], in[(j * 7) % nin], -1),
               many_trait(j, rot + 1));
    kiln_kernel_options ko = ko_default();
    kiln_cuda_kinfo info;
    char *src = gen(ts_done(&b), &ko, &info);
    const char *body_text = body(src);
    ck_assert_uint_eq(info.n_inputs, nin);
    for (uint32_t k = 0; k < nin; k++) {
        int flat = many_trait(k, rot) == AC;
        ck_assert_msg(has(body_text, "const ix oi%u = i;", k) == flat,
                      "%u inputs, rot %d: input %u %s be indexed by the linear index", nin,
                      rot, k, flat ? "must" : "must not");
        ck_assert_msg(has(body_text, "oi%u += c * (ix)a.is%u[d];", k) == !flat,
                      "%u inputs, rot %d: input %u %s use its strides", nin, rot, k,
                      flat ? "must not" : "must");
        ck_assert_msg(has(body_text, "kld(a.in%u + oi%u)", k), "input %u is never loaded", k);
    }
    for (uint32_t j = 0; j < nout; j++) {
        int flat = j == 0 || many_trait(j, rot + 1) == AC;
        ck_assert_msg(has(body_text, "const ix oo%u = i;", j) == flat,
                      "%u outputs, rot %d: output %u flat = %d expected", nout, rot, j, flat);
        ck_assert_msg(has(body_text, "oo%u += c * (ix)a.os%u[d];", j) == !flat,
                      "%u outputs, rot %d: output %u strided = %d expected", nout, rot, j, !flat);
    }
    if (keep != NULL)
        *keep = src;
    else
        kiln__free(src);
}

/* Reduction over axis `red` of [?, ?]: inputs 0..npre-1 feed the REDUCE
** (read over D), the rest are added after it (read in the keepdim
** domain).  Every pre input must get a base offset bi<k> over the kept
** axis and be read at bi<k> + j * stride; every post input an offset
** oi<k> in kiln_finalize and nothing else. */
static void check_reduction_views(uint32_t nin, uint32_t npre, uint32_t red, int rot,
                                  char **keep)
{
    static tseg b;
    ts_init(&b, KILN_SEGK_REDUCTION);
    int32_t acc = -1;
    for (uint32_t k = 0; k < npre; k++) {
        int32_t x = ts_in(&b, KILN_F32, 2, many_trait(k, rot));
        acc = k == 0 ? x : ts_node(&b, KILN_OP_ADD, KILN_F32, 2, acc, x, -1);
    }
    int32_t r = ts_reduce(&b, KILN_OP_RMAX, KILN_F32, 2, acc, red);
    acc = r;
    for (uint32_t k = npre; k < nin; k++) {
        int32_t x = ts_in(&b, KILN_F32, 2, many_trait(k, rot));
        b.n[x].bcast = red;
        acc = ts_node(&b, KILN_OP_ADD, KILN_F32, 2, acc, x, -1);
        b.n[acc].bcast = red;
    }
    ts_out(&b, acc, AC);
    ts_out(&b, r, KILN_TRAIT_ALIGN16);
    kiln_kernel_options ko = ko_default();
    kiln_cuda_kinfo info;
    char *src = gen(ts_done(&b), &ko, &info);
    const char *t = body(src);
    uint32_t kept = red == 2u ? 0u : 1u;
    for (uint32_t k = 0; k < nin; k++) {
        char base[96], fin[96];
        snprintf(base, sizeof base, "bi%u += c%u * (ix)a.is%u[%u];", k, kept, k, kept);
        snprintf(fin, sizeof fin, "oi%u += c%u * (ix)a.is%u[%u];", k, kept, k, kept);
        int pre = k < npre;
        ck_assert_msg((strstr(t, base) != NULL) == pre,
                      "%u inputs (%u before the reduction), axis mask %u: input %u %s a "
                      "base offset over the kept axis", nin, npre, red, k,
                      pre ? "needs" : "must not have");
        ck_assert_msg((strstr(t, fin) != NULL) == !pre,
                      "%u inputs (%u before the reduction), axis mask %u: input %u %s an "
                      "offset in kiln_finalize", nin, npre, red, k,
                      pre ? "must not have" : "needs");
        ck_assert_msg(has(t, "kld(a.in%u + oi%u)", k), "input %u is never loaded", k);
    }
    if (keep != NULL)
        *keep = src;
    else
        kiln__free(src);
}

/* out = x0 + ... + x(nin-1) over rank `rank`, every input strided. */
static const kiln_ir_segment *chain_segment(tseg *b, int rank, uint32_t nin)
{
    ts_init(b, KILN_SEGK_POINTWISE);
    int32_t acc = -1;
    for (uint32_t k = 0; k < nin; k++) {
        int32_t x = ts_in(b, KILN_F32, rank, KILN_TRAIT_ALIGN16);
        acc = k == 0 ? x : ts_node(b, KILN_OP_ADD, KILN_F32, rank, acc, x, -1);
    }
    ts_out(b, acc, AC);
    return ts_done(b);
}

START_TEST(codegen_many_views_index_each_input)
{
    /* 17 inputs (one past the old 16-bit half), 33 (one past 32), 71 (the
    ** positions 0..70); each with both trait patterns */
    static const uint32_t counts[] = {2, 17, 33, 71};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (int rot = 0; rot < 2; rot++) {
            check_pointwise_views(counts[c], 1, rot, NULL);
            check_reduction_views(counts[c], counts[c] / 2, 2u, rot, NULL);
            check_reduction_views(counts[c], counts[c] / 2 + 1, 1u, rot, NULL);
        }
    /* many outputs as well: 40 inputs, 40 outputs */
    check_pointwise_views(40, 40, 0, NULL);
    check_pointwise_views(40, 40, 1, NULL);
    /* the documented maximum per rank: accepted at it, rejected past it */
    static tseg b;
    kiln_kernel_options ko = ko_default();
    for (int rank = 0; rank <= KILN_MAX_RANK; rank++) {
        uint32_t most = KILN_SEGMENT_MAX_VIEWS(rank);
        ck_assert_uint_le(KILN_CUDA_ARG_WORDS(rank > 0 ? rank : 1, most, 0) * 8,
                          KILN_CUDA_PARAM_BYTES);
        ck_assert_uint_gt(KILN_CUDA_ARG_WORDS(rank > 0 ? rank : 1, most + 1, 0) * 8,
                          KILN_CUDA_PARAM_BYTES);
        char *src = NULL;
        kiln_cuda_kinfo info;
        ck_assert_msg(kiln__cuda_codegen(chain_segment(&b, rank, most - 1), &ko, &src, &info) ==
                          KILN_OK, "rank %d, %u views: %s", rank, most, kiln_last_error());
        kiln__free(src);
        src = NULL;
        ck_assert_int_eq(kiln__cuda_codegen(chain_segment(&b, rank, most), &ko, &src, &info),
                         KILN_ERR_UNSUPPORTED);
        ck_assert_ptr_null(src);
        ck_assert_ptr_nonnull(strstr(kiln_last_error(), "views"));
    }
}
END_TEST

/* The many-view kernels and the largest kernel of each rank compile. */
START_TEST(nvrtc_many_views)
{
    kiln_cuda_api api;
    if (!nvrtc_api(&api, __func__))
        return;
    kiln_buf b = {0};
    char *src = NULL;
    int n = 0;
    check_pointwise_views(71, 1, 1, &src);
    batch_add(&b, src, n++);
    kiln__free(src);
    check_pointwise_views(40, 40, 0, &src);
    batch_add(&b, src, n++);
    kiln__free(src);
    check_reduction_views(71, 35, 2u, 1, &src);
    batch_add(&b, src, n++);
    kiln__free(src);
    check_reduction_views(71, 36, 1u, 0, &src);
    batch_add(&b, src, n++);
    kiln__free(src);
    static tseg big;
    kiln_kernel_options ko = ko_default();
    for (int rank = 0; rank <= KILN_MAX_RANK; rank += full_sweep() ? 1 : 4) {
        src = gen(chain_segment(&big, rank, KILN_SEGMENT_MAX_VIEWS(rank) - 1), &ko, NULL);
        batch_add(&b, src, n++);
        kiln__free(src);
    }
    ck_assert(!b.failed);
    batch_compile(&api, b.data, &ko, "sm_90");
    if (full_sweep())
        batch_compile(&api, b.data, &ko, "sm_80");
    kiln__buf_free(&b);
    kiln__cuda_unload(&api);
}
END_TEST

/* ------------------------------------------------------- nvrtc backend */

/* Both CUDA backends give dumps their source through the optional ABI
** function kernel_source: exactly what kiln__cuda_codegen generates for the
** segment, with the serialize-style size contract (KILN_ERR_LIMIT and the
** size needed when the buffer is short).  No NVRTC needed: the source
** depends on the segment and options alone. */
START_TEST(kernel_source_is_the_generated_source)
{
    tseg t;
    ts_init(&t, KILN_SEGK_POINTWISE);
    int a = ts_in(&t, KILN_F32, 1, AC);
    ts_out(&t, ts_node(&t, KILN_OP_NEG, KILN_F32, 1, a, -1, -1), AC);
    const kiln_ir_segment *seg = ts_done(&t);
    kiln_kernel_options ko = ko_default();
    char *want = NULL;
    kiln_cuda_kinfo info;
    ck_assert_int_eq(kiln__cuda_codegen(seg, &ko, &want, &info), KILN_OK);
    const kiln_backend *bes[2] = {kiln__backend_cuda(), kiln__backend_nvrtc()};
    for (int i = 0; i < 2; i++) {
        const kiln_backend *be = bes[i];
        ck_assert_ptr_nonnull(be->kernel_source);
        char err[256], small[8];
        size_t size = 0;
        ck_assert_int_eq(be->kernel_source(NULL, seg, &ko, NULL, 0, &size, err, sizeof err),
                         KILN_ERR_LIMIT);
        ck_assert_uint_eq(size, strlen(want) + 1);
        ck_assert_int_eq(be->kernel_source(NULL, seg, &ko, small, sizeof small, &size, err,
                                           sizeof err),
                         KILN_ERR_LIMIT);
        char *got = malloc(size);
        ck_assert_ptr_nonnull(got);
        ck_assert_int_eq(be->kernel_source(NULL, seg, &ko, got, size, &size, err, sizeof err),
                         KILN_OK);
        ck_assert_str_eq(got, want);
        free(got);
    }
    kiln__free(want);
}
END_TEST

/* KILN_DUMP=cuda_kernel on the nvrtc backend prints each compiled kernel's
** whole source (preamble included), through kernel_source. */
START_TEST(nvrtc_dump_prints_the_source)
{
    kiln_cuda_api api;
    if (!nvrtc_api(&api, __func__))
        return;
    kiln__cuda_unload(&api);
    FILE *dump = tmpfile();
    ck_assert_ptr_nonnull(dump);
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "nvrtc";
    cfg.use_env_override = 1;
    cfg.env_dump = "cuda_kernel";
    cfg.dump_stream = dump;
    kiln_context *ctx;
    ck_assert_msg(kiln_context_create(&cfg, &ctx) == KILN_OK, "%s", kiln_last_error());
    kiln_fusion *f = NULL;
    static const char kf[] = "kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\noutput %y\n";
    ck_assert_int_eq(kiln_fusion_parse(kf, sizeof kf - 1, &f), KILN_OK);
    float x[3] = {1, 2, 3}, o[3] = {0};
    int64_t n = 3;
    kiln_tensor *in = NULL, *out = NULL;
    ck_assert_int_eq(kiln_tensor_create(ctx, KILN_F32, 1, &n, NULL, KILN_MEM_HOST, x, &in),
                     KILN_OK);
    ck_assert_int_eq(kiln_tensor_create(ctx, KILN_F32, 1, &n, NULL, KILN_MEM_HOST, o, &out),
                     KILN_OK);
    ck_assert_msg(kiln_execute(ctx, f, &in, 1, &out, 1, NULL, NULL) == KILN_OK, "%s",
                  kiln_last_error());
    ck_assert(o[0] == -1.0f && o[2] == -3.0f);
    fflush(dump);
    rewind(dump);
    static char buf[1 << 16];
    size_t got = fread(buf, 1, sizeof buf - 1, dump);
    buf[got] = '\0';
    const char *hdr = strstr(buf, "kiln: cuda_kernel: segment 0 (");
    ck_assert_msg(hdr != NULL, "no dump:\n%s", buf);
    ck_assert_ptr_nonnull(strstr(hdr, "// ---- kiln CUDA preamble"));
    ck_assert_ptr_nonnull(strstr(hdr, "// ---- end of preamble\n"));
    ck_assert_ptr_nonnull(strstr(hdr, "kiln_main"));
    kiln_tensor_destroy(in);
    kiln_tensor_destroy(out);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
    fclose(dump);
}
END_TEST


START_TEST(nvrtc_backend_compiles_and_runs_on_ref)
{
    const kiln_backend *be = kiln__backend_nvrtc();
    ck_assert_str_eq(be->name, "nvrtc");
    ck_assert_uint_eq(be->memory, KILN_MEM_HOST);
    void *st = NULL;
    char err[4096];
    if (!open_or_skip(be, &st, "KILN_TEST_NVRTC_REQUIRED", __func__))
        return;
    /* relu(a*b+c) with the mul kept separate, and a sum over axis 1 */
    tseg t;
    ts_init(&t, KILN_SEGK_POINTWISE);
    int a = ts_in(&t, KILN_F32, 2, AC), b = ts_in(&t, KILN_F32, 2, AC);
    int c = ts_in(&t, KILN_F32, 2, KILN_TRAIT_ALIGN16);
    int m = ts_node(&t, KILN_OP_MUL, KILN_F32, 2, a, b, -1);
    int s = ts_node(&t, KILN_OP_ADD, KILN_F32, 2, m, c, -1);
    ts_out(&t, ts_node(&t, KILN_OP_RELU, KILN_F32, 2, s, -1, -1), AC);
    kiln_kernel_options ko = ko_default();
    kiln_kernel_out out;
    memset(&out, 0, sizeof out);
    ck_assert_msg(be->compile(st, ts_done(&t), &ko, &out, err, sizeof err) == KILN_OK, "%s", err);
    ck_assert_ptr_nonnull(strstr(out.flags, "-arch=sm_90"));
    float A[6] = {1, -2, 3, -4, 5, -6}, B[6] = {2, 2, 2, 2, 2, 2}, C[3] = {1, 1, -100};
    float O[6] = {0};
    kiln_ir_tensor in[3], o;
    memset(in, 0, sizeof in);
    memset(&o, 0, sizeof o);
    float *ptr[3] = {A, B, C};
    for (int k = 0; k < 3; k++) {
        in[k].data = ptr[k];
        in[k].dtype = KILN_F32;
        in[k].rank = 2;
        in[k].sizes[0] = 2;
        in[k].sizes[1] = 3;
        in[k].strides[0] = k == 2 ? 0 : 3; /* c broadcast over rows */
        in[k].strides[1] = 1;
    }
    o = in[0];
    o.data = O;
    kiln_launch L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.rank = 2;
    L.domain[0] = 2;
    L.domain[1] = 3;
    L.inputs = in;
    L.n_inputs = 3;
    L.outputs = &o;
    L.n_outputs = 1;
    ck_assert_msg(be->launch(st, out.handle, &L, err, sizeof err) == KILN_OK, "%s", err);
    const float want[6] = {3, 0, 0, 0, 11, 0};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(O[i] == want[i], "O[%d] = %g, want %g", i, O[i], want[i]);
    be->release(st, out.handle);
    be->close(st);
}
END_TEST

/* Reductions whose REDUCE operand reads no input (fuzz seed 10547: the
** operand simplifies to a constant): the coordinates of the kept index and
** of the reduced index j have no view to offset and must not be declared,
** else NVRTC's warning 177 ("declared but never referenced") fails the
** compile under warnings-are-errors.  Every reduction scheme: inner with
** one and two kept axes and two reduced axes, outer with two reduced axes,
** and the keepdim result read by no post input. */
START_TEST(nvrtc_reduction_without_operand_views_compiles)
{
    const kiln_backend *be = kiln__backend_nvrtc();
    void *st = NULL;
    char err[8192];
    if (!open_or_skip(be, &st, "KILN_TEST_NVRTC_REQUIRED", __func__))
        return;
    static const uint32_t axes[] = {5u, 4u, 3u, 6u, 1u, 2u};
    for (size_t q = 0; q < sizeof axes / sizeof axes[0]; q++)
        for (int rop = 0; rop < 2; rop++) {
            tseg t;
            ts_init(&t, KILN_SEGK_REDUCTION);
            int x = ts_in(&t, KILN_I32, 3, AC);
            int m = ts_node(&t, KILN_OP_MUL, KILN_I32, 3, x, ts_const(&t, KILN_I32, 0), -1);
            int c = ts_node(&t, KILN_OP_CAST, KILN_F64, 3, m, -1, -1);
            ts_out(&t, ts_reduce(&t, rop ? KILN_OP_SUM : KILN_OP_RMAX, KILN_F64, 3, c, axes[q]),
                   AC);
            kiln_kernel_options ko = ko_default();
            kiln_kernel_out out;
            memset(&out, 0, sizeof out);
            ck_assert_msg(be->compile(st, ts_done(&t), &ko, &out, err, sizeof err) == KILN_OK,
                          "axes 0x%x op %d: %s", axes[q], rop, err);
            be->release(st, out.handle);
        }
    be->close(st);
}
END_TEST

START_TEST(nvrtc_check_cache)
{
    char dir[] = "/tmp/kiln-nvrtc-memo-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("KILN_NVRTC_CHECK_CACHE", dir, 1);
    setenv("KILN_NVRTC_ARCHS", "sm_90", 1);
    const kiln_backend *be = kiln__backend_nvrtc();
    void *st = NULL;
    char err[4096];
    if (!open_or_skip(be, &st, "KILN_TEST_NVRTC_REQUIRED", __func__))
        return;
    tseg t;
    seg_pointwise(&t, KILN_OP_SUB, KILN_F64, AC);
    kiln_kernel_options ko = ko_default();
    kiln_kernel_out out;
    memset(&out, 0, sizeof out);
    ck_assert_int_eq(be->compile(st, ts_done(&t), &ko, &out, err, sizeof err), KILN_OK);
    be->release(st, out.handle);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/kiln-nvrtc-*.ok >/dev/null 2>&1", dir);
    ck_assert_int_eq(system(cmd), 0); /* the passed check was recorded */
    snprintf(cmd, sizeof cmd, "grep -q '^nvrtc [0-9][0-9]*[.][0-9][0-9]* ' %s/kiln-nvrtc-*.ok",
             dir);
    ck_assert_int_eq(system(cmd), 0); /* ... keyed on the compiler as well */
    /* a hit, then a tampered memo (content mismatch): both still compile */
    ck_assert_int_eq(be->compile(st, &t.s, &ko, &out, err, sizeof err), KILN_OK);
    be->release(st, out.handle);
    snprintf(cmd, sizeof cmd, "for f in %s/kiln-nvrtc-*.ok; do echo x >> $f; done", dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(be->compile(st, &t.s, &ko, &out, err, sizeof err), KILN_OK);
    be->release(st, out.handle);
    be->close(st);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    unsetenv("KILN_NVRTC_CHECK_CACHE");
    unsetenv("KILN_NVRTC_ARCHS");
}
END_TEST

/* ------------------------------------------------------- on a GPU */

/* Differential test of generated kernels on the GPU against ref, segment
** by segment (no planner involved).  Runs only where the cuda backend
** opens (the H200 machine); elsewhere it records a skip (a failure under
** KILN_TEST_GPU=1, which scripts/gpu_run.sh sets). */

/* Fill n elements of dtype dt: small exact values (multiples of 1/64); with
** `special`, also random bit patterns (NaN, inf, denormals, huge) and, for
** f16/bf16, random bits throughout. */
static void fill(void *p, int dt, int64_t n, uint64_t seed, int special_ok)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = cf_splitmix64(&s);
        double v = (double)((int64_t)(r % 2001) - 1000) / 64.0;
        int special = special_ok && (r >> 40) % 97 == 0;
        switch (dt) {
        case KILN_BOOL: ((uint8_t *)p)[i] = (uint8_t)(r & 1); break;
        case KILN_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(r >> 7); break;
        case KILN_I64: ((int64_t *)p)[i] = (int64_t)(r >> 3) - (int64_t)(r & 0xffff); break;
        case KILN_F16: case KILN_BF16:
            if (special_ok) {
                ((uint16_t *)p)[i] = (uint16_t)(r >> 11);
            } else {
                float f = (float)v;
                uint32_t u;
                memcpy(&u, &f, 4);
                ((uint16_t *)p)[i] = dt == KILN_BF16 ? (uint16_t)(u >> 16)
                                                     : kiln__f32_to_f16(f); /* exact */
            }
            break;
        case KILN_F32: {
            float f = (float)v;
            if (special) { uint32_t u = (uint32_t)(r >> 17); memcpy(&f, &u, 4); }
            ((float *)p)[i] = f;
            break;
        }
        default: {
            double d = v;
            if (special) { uint64_t u = r * 0x2545f4914f6cdd1dULL; memcpy(&d, &u, 8); }
            ((double *)p)[i] = d;
        }
        }
    }
}

static int is_nan_bits(int dt, const unsigned char *p)
{
    if (dt == KILN_F32) { float f; memcpy(&f, p, 4); return f != f; }
    if (dt == KILN_F64) { double d; memcpy(&d, p, 8); return d != d; }
    if (dt == KILN_F16) { uint16_t h; memcpy(&h, p, 2); return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
    if (dt == KILN_BF16) { uint16_t h; memcpy(&h, p, 2); return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }
    return 0;
}

typedef struct gcase {
    int rank;
    int64_t dom[3];
    int64_t k;                 /* matmul K */
    int64_t in_sz[4][3], out_sz[4][3];
    double rtol;               /* 0: bit-exact (any NaN matches any NaN) */
    int special;               /* inputs include NaN/inf/denormal/random bits */
} gcase;

static int64_t numel_r(int rank, const int64_t *sz)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= sz[d];
    return n;
}

static void mkview(kiln_ir_tensor *t, void *data, int dt, int rank, const int64_t *sz)
{
    memset(t, 0, sizeof *t);
    t->data = data;
    t->dtype = (uint32_t)dt;
    t->rank = rank;
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        t->sizes[d] = sz[d];
        t->strides[d] = st;
        st *= sz[d];
    }
}

static int out_dtype(const kiln_ir_segment *s, uint32_t k) { return s->nodes[s->outputs[k]].dtype; }
static int in_dtype_of(const kiln_ir_segment *s, uint32_t k)
{
    for (uint32_t i = 0; i < s->n_nodes; i++)
        if (s->nodes[i].op == KILN_OP_INPUT && s->nodes[i].io == (int32_t)k)
            return s->nodes[i].dtype;
    return KILN_F32;
}

/* Run compiled seg on cuda and ref with the same inputs (case c);
** compare the outputs. */
static void gpu_vs_ref_run(const kiln_backend *cu, void *cst, const kiln_backend *rf,
                           void *rst, const kiln_ir_segment *seg, void *hc, void *hr,
                           const gcase *c, const char *what)
{
    char err[8192];
    kiln_kernel_out oc, orf;
    oc.handle = hc;
    orf.handle = hr;
    kiln_ir_tensor hin[4], din[4], hout[4], rout[4], dout[4];
    void *hbuf[4] = {0}, *dbuf[4] = {0}, *obuf[4] = {0}, *rbuf[4] = {0}, *dobuf[4] = {0};
    for (uint32_t k = 0; k < seg->n_inputs; k++) {
        int dt = in_dtype_of(seg, k);
        int64_t n = numel_r(c->rank, c->in_sz[k]);
        size_t bytes = (size_t)n * kiln_dtype_size((kiln_dtype)dt);
        hbuf[k] = malloc(bytes + 16);
        fill(hbuf[k], dt, n, 1234 + k, c->special);
        ck_assert_int_eq(cu->mem_alloc(cst, bytes, &dbuf[k], err, sizeof err), KILN_OK);
        ck_assert_int_eq(cu->mem_copy(cst, dbuf[k], hbuf[k], bytes, 0, err, sizeof err), KILN_OK);
        mkview(&hin[k], hbuf[k], dt, c->rank, c->in_sz[k]);
        mkview(&din[k], dbuf[k], dt, c->rank, c->in_sz[k]);
    }
    for (uint32_t k = 0; k < seg->n_outputs; k++) {
        int dt = out_dtype(seg, k);
        size_t bytes = (size_t)numel_r(c->rank, c->out_sz[k]) * kiln_dtype_size((kiln_dtype)dt);
        obuf[k] = calloc(1, bytes + 16);
        rbuf[k] = calloc(1, bytes + 16);
        ck_assert_int_eq(cu->mem_alloc(cst, bytes, &dobuf[k], err, sizeof err), KILN_OK);
        mkview(&rout[k], rbuf[k], dt, c->rank, c->out_sz[k]);
        mkview(&dout[k], dobuf[k], dt, c->rank, c->out_sz[k]);
        mkview(&hout[k], obuf[k], dt, c->rank, c->out_sz[k]);
    }
    kiln_launch L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.rank = c->rank;
    for (int d = 0; d < c->rank; d++)
        L.domain[d] = c->dom[d];
    L.k = c->k;
    L.n_inputs = seg->n_inputs;
    L.n_outputs = seg->n_outputs;
    L.inputs = hin;
    L.outputs = rout;
    ck_assert_msg(rf->launch(rst, orf.handle, &L, err, sizeof err) == KILN_OK, "%s: ref %s", what, err);
    L.inputs = din;
    L.outputs = dout;
    L.profile = 1;
    ck_assert_msg(cu->launch(cst, oc.handle, &L, err, sizeof err) == KILN_OK, "%s: cuda %s", what, err);
    if (cu == kiln__backend_cuda())
        ck_assert_msg(L.gpu_ms >= 0, "%s: no profile time", what);
    for (uint32_t k = 0; k < seg->n_outputs; k++) {
        int dt = out_dtype(seg, k);
        size_t es = kiln_dtype_size((kiln_dtype)dt);
        int64_t n = numel_r(c->rank, c->out_sz[k]);
        ck_assert_int_eq(cu->mem_copy(cst, obuf[k], dobuf[k], (size_t)n * es, 1, err, sizeof err),
                         KILN_OK);
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *g = (const unsigned char *)obuf[k] + i * (int64_t)es;
            const unsigned char *r = (const unsigned char *)rbuf[k] + i * (int64_t)es;
            if (memcmp(g, r, es) == 0 || (is_nan_bits(dt, g) && is_nan_bits(dt, r)))
                continue;
            if (c->rtol > 0 && (dt == KILN_F32 || dt == KILN_F64)) {
                double gv, rv;
                if (dt == KILN_F32) { float a, b; memcpy(&a, g, 4); memcpy(&b, r, 4); gv = a; rv = b; }
                else { memcpy(&gv, g, 8); memcpy(&rv, r, 8); }
                if (fabs(gv - rv) <= c->rtol * (fabs(rv) + 1.0))
                    continue;
                ck_abort_msg("%s: output %u[%lld]: gpu %.17g ref %.17g", what, k, (long long)i, gv, rv);
            }
            ck_abort_msg("%s: output %u[%lld] differs (dtype %s)", what, k, (long long)i,
                         kiln_dtype_name((kiln_dtype)dt));
        }
    }
    for (uint32_t k = 0; k < 4; k++) {
        free(hbuf[k]);
        free(obuf[k]);
        free(rbuf[k]);
        if (dbuf[k]) cu->mem_free(cst, dbuf[k]);
        if (dobuf[k]) cu->mem_free(cst, dobuf[k]);
    }
}

/* Compile seg once on both backends, run every case, release. */
static void gpu_vs_ref(const kiln_backend *cu, void *cst, const kiln_backend *rf, void *rst,
                       const kiln_ir_segment *seg, const gcase *cases, int ncases,
                       const char *what)
{
    kiln_kernel_options ko = ko_default();
    kiln_kernel_out oc, orf;
    memset(&oc, 0, sizeof oc);
    memset(&orf, 0, sizeof orf);
    char err[8192];
    ck_assert_msg(cu->compile(cst, seg, &ko, &oc, err, sizeof err) == KILN_OK, "%s: %s", what, err);
    ck_assert_msg(rf->compile(rst, seg, &ko, &orf, err, sizeof err) == KILN_OK, "%s: %s", what, err);
    for (int i = 0; i < ncases; i++) {
        char w[160];
        snprintf(w, sizeof w, "%s, case %d", what, i);
        gpu_vs_ref_run(cu, cst, rf, rst, seg, oc.handle, orf.handle, &cases[i], w);
    }
    cu->release(cst, oc.handle);
    rf->release(rst, orf.handle);
}

static int transcendental(int op)
{
    return op == KILN_OP_EXP || op == KILN_OP_LOG || op == KILN_OP_RSQRT || op == KILN_OP_SIN ||
           op == KILN_OP_COS || op == KILN_OP_TANH || op == KILN_OP_SIGMOID ||
           op == KILN_OP_ERF || op == KILN_OP_POW;
}

/* The whole differential sweep; `cu` is the cuda backend on a GPU, or the
** host shim below (to check the harness itself everywhere). */
static void differential(const kiln_backend *cu, void *cst, const kiln_backend *rf, void *rst)
{
    tseg t;
    char what[96];
    /* pointwise catalogue entries (not transcendentals): two shapes, the
    ** second with a tail that the vector path must finish */
    static const int64_t shapes[3][2] = {{64, 128}, {37, 129}, {64, 128}};
    for (int i = 0; catalogue(i, &t, AC); i++) {
        const kiln_ir_node *last = &t.n[t.nn - 1];
        if (t.s.kind != KILN_SEGK_POINTWISE || transcendental(last->op))
            continue;
        gcase cs[3];
        for (int sh = 0; sh < 3; sh++) {
            gcase c;
            memset(&c, 0, sizeof c);
            c.rank = last->rank;
            for (int d = 0; d < c.rank; d++)
                c.dom[d] = c.rank == 1 ? shapes[sh][0] * shapes[sh][1] : shapes[sh][d];
            for (int k = 0; k < 4; k++)
                for (int d = 0; d < c.rank; d++)
                    c.in_sz[k][d] = c.out_sz[k][d] = c.dom[d];
            c.special = 1;
            if (c.rank == 2) /* input 1 broadcast over rows, or (shape 2) columns */
                c.in_sz[1][sh == 2 ? 1 : 0] = 1;
            cs[sh] = c;
        }
        snprintf(what, sizeof what, "catalogue %d (%s)", i, kiln_op_name((kiln_op)last->op));
        gpu_vs_ref(cu, cst, rf, rst, ts_done(&t), cs, 3, what);
    }
    /* reductions: inner/outer/mixed, few long rows (split + finish) and
    ** many short ones (warp per row) */
    static const int rops[3] = {KILN_OP_SUM, KILN_OP_RMAX, KILN_OP_RMIN};
    static const int rdts[4] = {KILN_I32, KILN_I64, KILN_F32, KILN_F64};
    static const struct { int rank; uint32_t axes; int n; int64_t dom[3][3]; } rs[] = {
        {2, 2u, 3, {{3, 50003, 1}, {3000, 7, 1}, {300, 4096, 1}}},
        {2, 1u, 3, {{50003, 3, 1}, {64, 3000, 1}, {7, 301, 1}}},
        {3, 5u, 1, {{17, 5, 33}}},
        {1, 1u, 1, {{1 << 20, 1, 1}}}};
    for (int r = 0; r < 3; r++)
        for (int d = 0; d < 4; d++)
            for (size_t q = 0; q < sizeof rs / sizeof rs[0]; q++) {
                seg_reduce(&t, rops[r], rdts[d], rs[q].rank, rs[q].axes, AC);
                gcase cs[3];
                for (int k = 0; k < rs[q].n; k++) {
                    gcase *c = &cs[k];
                    memset(c, 0, sizeof *c);
                    c->rank = rs[q].rank;
                    for (int a = 0; a < c->rank; a++) {
                        c->dom[a] = rs[q].dom[k][a];
                        c->in_sz[0][a] = c->dom[a];
                        int red = (rs[q].axes >> a) & 1u;
                        c->in_sz[1][a] = c->out_sz[0][a] = c->out_sz[1][a] = red ? 1 : c->dom[a];
                    }
                    c->special = rops[r] != KILN_OP_SUM; /* exact sums: small values */
                    c->rtol = (rops[r] == KILN_OP_SUM && rdts[d] == KILN_F32) ? 1e-6
                            : (rops[r] == KILN_OP_SUM && rdts[d] == KILN_F64) ? 1e-14 : 0;
                }
                snprintf(what, sizeof what, "%s %s group %zu", kiln_op_name((kiln_op)rops[r]),
                         kiln_dtype_name((kiln_dtype)rdts[d]), q);
                gpu_vs_ref(cu, cst, rf, rst, ts_done(&t), cs, rs[q].n, what);
            }
    /* matmul: standalone, epilogue, fallback (cuBLAS when present) */
    static const int mdts[3] = {KILN_F16, KILN_BF16, KILN_F32};
    for (int d = 0; d < 3; d++)
        for (int kind = 0; kind < 3; kind++) {
            seg_matmul(&t, kind == 0 ? KILN_SEGK_MATMUL
                          : kind == 1 ? KILN_SEGK_MATMUL_EPILOGUE : KILN_SEGK_MATMUL_FALLBACK,
                       mdts[d], kind == 1, AC);
            gcase c;
            memset(&c, 0, sizeof c);
            c.rank = 2;
            c.dom[0] = 70;
            c.dom[1] = 90;
            c.k = 50;
            c.in_sz[0][0] = 70; c.in_sz[0][1] = 50;
            c.in_sz[1][0] = 50; c.in_sz[1][1] = 90;
            c.in_sz[2][0] = 70; c.in_sz[2][1] = 90;
            c.out_sz[0][0] = 70; c.out_sz[0][1] = 90;
            c.rtol = kind == 2 ? 1e-3 : 1e-6; /* cuBLAS: its own order */
            snprintf(what, sizeof what, "matmul %s kind %d", kiln_dtype_name((kiln_dtype)mdts[d]), kind);
            gpu_vs_ref(cu, cst, rf, rst, ts_done(&t), &c, 1, what);
        }
}

START_TEST(gpu_generated_kernels_match_ref)
{
    const kiln_backend *cu = kiln__backend_cuda(), *rf = kiln__backend_ref();
    void *cst = NULL, *rst = NULL;
    char err[1024];
    if (!open_or_skip(cu, &cst, "KILN_TEST_GPU", __func__))
        return;
    ck_assert_int_eq(rf->open(0, &rst, err, sizeof err), KILN_OK);
    differential(cu, cst, rf, rst);
    rf->close(rst);
    cu->close(cst);
}
END_TEST

/* The cuda side of warn_register_spill: the driver's per-thread local
** memory of a real kernel.  -G keeps locals on the stack, so the debug
** build of the matmul kernel must report some; the release build reports
** a count too (0 or more), and a cuBLAS kernel reports -1 (unknown). */
START_TEST(gpu_local_bytes)
{
    const kiln_backend *cu = kiln__backend_cuda();
    void *cst = NULL;
    char err[1024];
    if (!open_or_skip(cu, &cst, "KILN_TEST_GPU", __func__))
        return;
    ck_assert_ptr_nonnull(cu->local_bytes);
    tseg t;
    int64_t got[2];
    for (int debug = 0; debug < 2; debug++) {
        kiln_kernel_options ko = ko_default();
        ko.debug = debug;
        kiln_kernel_out out;
        memset(&out, 0, sizeof out);
        seg_matmul(&t, KILN_SEGK_MATMUL, KILN_F32, 0, AC);
        ck_assert_msg(cu->compile(cst, ts_done(&t), &ko, &out, err, sizeof err) == KILN_OK,
                      "%s", err);
        got[debug] = cu->local_bytes(cst, out.handle);
        cu->release(cst, out.handle);
    }
    fprintf(stderr, "test_cuda: matmul f32 local bytes per thread: %lld release, "
            "%lld with -G\n", (long long)got[0], (long long)got[1]);
    ck_assert_int_ge(got[0], 0);
    ck_assert_int_gt(got[1], 0);
    ck_assert_int_eq(cu->local_bytes(cst, NULL), -1);
    cu->close(cst);
}
END_TEST

/* A "device" backend that is ref with host memory: runs the differential
** harness without a GPU, so the harness (views, shapes, comparisons) is
** itself tested on every machine. */
static kiln_status shim_alloc(void *st, size_t n, void **p, char *err, size_t cap)
{
    (void)st; (void)err; (void)cap;
    *p = malloc(n ? n : 16);
    return *p ? KILN_OK : KILN_ERR_NO_MEMORY;
}
static void shim_free(void *st, void *p)
{
    (void)st;
    free(p);
}
static kiln_status shim_copy(void *st, void *dst, const void *src, size_t n, int dir, char *err,
                             size_t cap)
{
    (void)st; (void)dir; (void)err; (void)cap;
    memcpy(dst, src, n);
    return KILN_OK;
}

START_TEST(differential_harness_on_host)
{
    kiln_backend shim = *kiln__backend_ref();
    shim.mem_alloc = shim_alloc;
    shim.mem_free = shim_free;
    shim.mem_copy = shim_copy;
    const kiln_backend *rf = kiln__backend_ref();
    void *cst = NULL, *rst = NULL;
    char err[1024];
    ck_assert_int_eq(shim.open(0, &cst, err, sizeof err), KILN_OK);
    ck_assert_int_eq(rf->open(0, &rst, err, sizeof err), KILN_OK);
    differential(&shim, cst, rf, rst);
    rf->close(rst);
    shim.close(cst);
}
END_TEST

Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, flag_mapping);
    tcase_add_test(tc, identity_changes_with_every_kernel_option);
    tcase_add_test(tc, cuda_open_without_driver);
    tcase_add_test(tc, nvrtc_missing_is_reported);
    tcase_add_test(tc, error_text_of_failed_calls);
    tcase_add_test(tc, failed_compile_carries_log_and_source);
    tcase_add_test(tc, nvrtc_log_policy);
    tcase_add_test(tc, nvrtc_cache_versions);
    tcase_add_test(tc, codegen_rejects_bad_segments);
    tcase_add_test(tc, traits_and_index_width);
    tcase_add_test(tc, simplify_passes_and_switches);
    tcase_add_test(tc, codegen_many_views_index_each_input);
    tcase_add_test(tc, nvrtc_backend_compiles_and_runs_on_ref);
    tcase_add_test(tc, nvrtc_check_cache);
    tcase_add_test(tc, nvrtc_reduction_without_operand_views_compiles);
    tcase_add_test(tc, kernel_source_is_the_generated_source);
    tcase_add_test(tc, nvrtc_dump_prints_the_source);
    suite_add_tcase(s, tc);
    TCase *nv = tcase_create("nvrtc");
    tcase_set_timeout(nv, 600);
    tcase_add_test(nv, nvrtc_all_ops_default);
    tcase_add_test(nv, nvrtc_all_ops_fast_nofma_strided64);
    tcase_add_test(nv, nvrtc_option_sets);
    tcase_add_test(nv, nvrtc_many_views);
    tcase_add_test(nv, gpu_generated_kernels_match_ref);
    tcase_add_test(nv, gpu_local_bytes);
    tcase_add_test(nv, differential_harness_on_host);
    suite_add_tcase(s, nv);
    return s;
}
