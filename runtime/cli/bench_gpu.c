/*
** bench_gpu.c -- `kiln bench gpu`: the GPU benchmarks of docs/backends.md
** ("Measured performance"), all in one run on the cuda backend.
**
** Each figure is the median of --reps timed runs after warm-up, timed with
** CUDA events on the context's default stream (the stream Kiln launches
** on):
**   ceiling    cuMemcpyDtoD of 1 GiB, (bytes read + written) / time
**   relu_fma   relu(a*b+c) f32 over 2^28 elements      target >= 0.85 x ceiling
**   bias_add   [8192,8192] + [8192] broadcast          target >= 0.85
**   sum_inner  sum over axis 1 of [16384,16384] f32    target >= 0.80
**   sum_outer  sum over axis 0 of [16384,16384] f32    target >= 0.75
**   overhead   host time of a cache-hit kiln_execute (no option change, and
**              with a 2-item execute list) over a bare cuLaunchKernel of the
**              same generated kernel                  target ratio <= 1.5
**   compile    NVRTC cold compile of one fusion (ms) vs a cache hit (us)
**   matmul     4096^3 bf16 -> f32 on the cublas, generated and fused paths
**              (TFLOP/s; the paths are read back from the info record)
** Fusions are built through the public API (.kf text), tensors with
** kiln_tensor_create(..., KILN_MEM_DEVICE, ...): every figure of Kiln's own
** path is kiln_execute, which reaches the cuda backend through its ABI.
** The driver calls of the bench itself (events, the copy ceiling, the bare
** launch) go through the same dlopen table as the backend
** (backends/cuda_loader.h).
**
** The overhead baseline stays outside Kiln on purpose: it is what a launch
** costs with no runtime at all, so it cannot go through the runtime.  It
** launches the very kernel Kiln launches: the source and flags come from
** the cuda backend's descriptor (compile() and kernel_source(), bare_kernel
** below), this file compiles them with NVRTC and packs the parameter block
** by hand, which is why it includes cuda_codegen.h for the block's word
** layout (KILN_CUDA_ARG_WORDS, KILN_CUDA_T_*) and nothing else of it.
** Without a usable GPU it prints the reason and exits 1.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda_codegen.h" /* the KArgs word layout only */
#include "backends/cuda_flags.h"  /* KILN_CUDA_MAX_FLAGS */
#include "backends/cuda_loader.h"
#include "cli/cli.h"
#include "internal.h"

#define NUM_TEXT 32     /* a ratio or target in the table */
#define NOTE_TEXT 160   /* a row's note */
#define DEVICE_NAME 128 /* cuDeviceGetName */
#define HIT_RUNS 21     /* cache-hit executes timed by the compile bench */

typedef struct bench {
    kiln_cuda_api api;
    CUcontext ctx;
    CUdevice dev;
    kiln_context *kctx;
    int device, reps, quick;
    double ceiling_gbs;
    FILE *json;
    FILE *tab;           /* the table: stdout, or stderr when JSON goes there */
    int json_first;
    int misses;
} bench;

#define CK(b, fn, args)                                                        \
    do {                                                                       \
        if (kiln__cu_check(&(b)->api, (b)->api.p_##fn args, #fn #args, NULL,  \
                           0) != KILN_OK) {                                    \
            fprintf(stderr, "kiln bench gpu: %s\n", kiln_last_error());        \
            return -1;                                                         \
        }                                                                      \
    } while (0)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One result row: table line + JSON object. target <= 0: no target;
** higher_better: PASS when value/ceiling >= target (or value <= target). */
static void row(bench *b, const char *name, double value, const char *unit,
                double ratio, double target, int higher_better, const char *note)
{
    const char *verdict = "";
    if (target > 0) {
        int pass = higher_better ? ratio >= target : ratio <= target;
        verdict = pass ? "PASS" : "MISS";
        if (!pass)
            b->misses++;
    }
    char rs[NUM_TEXT] = "", ts[NUM_TEXT] = "";
    if (ratio >= 0)
        snprintf(rs, sizeof rs, "%.3f", ratio);
    if (target > 0)
        snprintf(ts, sizeof ts, "%s %.2f", higher_better ? ">=" : "<=", target);
    fprintf(b->tab, "%-26s %12.3f %-8s %8s %9s %4s  %s\n", name, value, unit, rs, ts,
            verdict, note ? note : "");
    fflush(b->tab);
    if (b->json != NULL) {
        fprintf(b->json, "%s\n  {\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"",
                b->json_first ? "" : ",", name, value, unit);
        if (ratio >= 0)
            fprintf(b->json, ", \"ratio\": %.6g", ratio);
        if (target > 0)
            fprintf(b->json, ", \"target\": %.6g, \"target_kind\": \"%s\", \"verdict\": \"%s\"",
                    target, higher_better ? "min_ratio" : "max_ratio", verdict);
        if (note != NULL)
            fprintf(b->json, ", \"note\": \"%s\"", note);
        fprintf(b->json, "}");
        b->json_first = 0;
    }
}

static int enter(bench *b)
{
    CK(b, cuCtxSetCurrent, (b->ctx));
    return 0;
}

/* ------------------------------------------------------------ helpers */

static kiln_fusion *fusion(const char *text)
{
    kiln_fusion *f = NULL;
    if (kiln_fusion_parse(text, strlen(text), &f) != KILN_OK) {
        fprintf(stderr, "kiln bench gpu: fusion: %s\n", kiln_last_error());
        return NULL;
    }
    return f;
}

/* A device tensor filled with a small repeating pattern (no NaN/denormal). */
static kiln_tensor *dev_tensor(bench *b, kiln_dtype dt, int rank, const int64_t *sizes,
                               int fill)
{
    kiln_tensor *t = NULL;
    if (kiln_tensor_create(b->kctx, dt, rank, sizes, NULL, KILN_MEM_DEVICE, NULL, &t) !=
        KILN_OK) {
        fprintf(stderr, "kiln bench gpu: tensor: %s\n", kiln_last_error());
        return NULL;
    }
    if (!fill)
        return t;
    int64_t n = kiln_tensor_numel(t);
    size_t es = kiln_dtype_size(dt), nb = 0;
    unsigned char *h = kiln_ckd_bytes(n, es, &nb) ? NULL : malloc(nb + 1);
    if (h == NULL) {
        kiln_tensor_destroy(t);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        float v = (float)((i * 7919) % 1024 - 512) / 256.0f;
        if (dt == KILN_F32)
            memcpy(h + i * 4, &v, 4);
        else { /* bf16: top half of the f32 pattern (exact for these values) */
            uint32_t u;
            memcpy(&u, &v, 4);
            uint16_t hb = (uint16_t)(u >> 16);
            memcpy(h + i * 2, &hb, 2);
        }
    }
    kiln_status s = kiln_tensor_write(b->kctx, t, h, nb);
    free(h);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln bench gpu: write: %s\n", kiln_last_error());
        kiln_tensor_destroy(t);
        return NULL;
    }
    return t;
}

/* Median GPU time (ms) of kiln_execute(f) with the given options. */
static double time_exec(bench *b, kiln_fusion *f, kiln_tensor **in, size_t nin,
                        kiln_tensor **out, size_t nout, const kiln_exec_options *eo,
                        kiln_exec_info *info)
{
    CUevent e0, e1;
    if (enter(b) || KILN_CU(&b->api, cuEventCreate, (&e0, CU_EVENT_DEFAULT), NULL, 0) ||
        KILN_CU(&b->api, cuEventCreate, (&e1, CU_EVENT_DEFAULT), NULL, 0))
        return -1;
    double *ms = calloc((size_t)b->reps, sizeof *ms);
    double result = -1;
    if (ms == NULL)
        goto done;
    for (int w = 0; w < 3; w++)
        if (kiln_execute(b->kctx, f, in, nin, out, nout, eo, info) != KILN_OK) {
            fprintf(stderr, "kiln bench gpu: execute: %s\n", kiln_last_error());
            goto done;
        }
    for (int r = 0; r < b->reps; r++) {
        float t = 0;
        if (KILN_CU(&b->api, cuEventRecord, (e0, NULL), NULL, 0) ||
            kiln_execute(b->kctx, f, in, nin, out, nout, eo, NULL) != KILN_OK ||
            KILN_CU(&b->api, cuEventRecord, (e1, NULL), NULL, 0) ||
            KILN_CU(&b->api, cuEventSynchronize, (e1), NULL, 0) ||
            KILN_CU(&b->api, cuEventElapsedTime, (&t, e0, e1), NULL, 0)) {
            fprintf(stderr, "kiln bench gpu: timed run: %s\n", kiln_last_error());
            goto done;
        }
        ms[r] = t;
    }
    result = median(ms, b->reps);
done:
    free(ms);
    b->api.p_cuEventDestroy(e0);
    b->api.p_cuEventDestroy(e1);
    return result;
}

/* ------------------------------------------------------------ benchmarks */

static int bench_ceiling(bench *b)
{
    size_t bytes = b->quick ? ((size_t)64 << 20) : ((size_t)1 << 30);
    CUdeviceptr s = 0, d = 0;
    CUevent e0, e1;
    if (enter(b))
        return -1;
    CK(b, cuMemAlloc, (&s, bytes));
    CK(b, cuMemAlloc, (&d, bytes));
    CK(b, cuMemsetD8, (s, 1, bytes));
    CK(b, cuEventCreate, (&e0, CU_EVENT_DEFAULT));
    CK(b, cuEventCreate, (&e1, CU_EVENT_DEFAULT));
    double *ms = calloc((size_t)b->reps, sizeof *ms);
    if (ms == NULL)
        return -1;
    for (int r = -3; r < b->reps; r++) {
        float t = 0;
        CK(b, cuEventRecord, (e0, NULL));
        CK(b, cuMemcpyDtoD, (d, s, bytes));
        CK(b, cuEventRecord, (e1, NULL));
        CK(b, cuEventSynchronize, (e1));
        CK(b, cuEventElapsedTime, (&t, e0, e1));
        if (r >= 0)
            ms[r] = t;
    }
    double m = median(ms, b->reps);
    free(ms);
    b->ceiling_gbs = 2.0 * (double)bytes / (m * 1e-3) / 1e9;
    row(b, "ceiling_d2d_copy", b->ceiling_gbs, "GB/s", 1.0, 0, 1, "cuMemcpyDtoD, read+write");
    b->api.p_cuEventDestroy(e0);
    b->api.p_cuEventDestroy(e1);
    b->api.p_cuMemFree(s);
    b->api.p_cuMemFree(d);
    return 0;
}

/* A bandwidth benchmark: execute f, bytes moved per run, target ratio. */
static int bench_bw(bench *b, const char *name, const char *kf, int nin,
                    const int64_t (*isz)[2], const int *irank, int orank,
                    const int64_t *osz, double bytes, double target)
{
    kiln_fusion *f = fusion(kf);
    if (f == NULL)
        return -1;
    kiln_tensor *in[3] = {NULL, NULL, NULL}, *out[1] = {NULL};
    int rc = -1;
    for (int i = 0; i < nin; i++)
        if ((in[i] = dev_tensor(b, KILN_F32, irank[i], isz[i], 1)) == NULL)
            goto done;
    if ((out[0] = dev_tensor(b, KILN_F32, orank, osz, 0)) == NULL)
        goto done;
    double ms = time_exec(b, f, in, (size_t)nin, out, 1, NULL, NULL);
    if (ms <= 0)
        goto done;
    double gbs = bytes / (ms * 1e-3) / 1e9;
    char note[NOTE_TEXT];
    snprintf(note, sizeof note, "%.3f ms", ms);
    row(b, name, gbs, "GB/s", b->ceiling_gbs > 0 ? gbs / b->ceiling_gbs : -1, target, 1, note);
    rc = 0;
done:
    for (int i = 0; i < 3; i++)
        kiln_tensor_destroy(in[i]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    return rc;
}

static int bench_bandwidth(bench *b)
{
    int64_t n = b->quick ? ((int64_t)1 << 22) : ((int64_t)1 << 28);
    const int64_t v1[3][2] = {{n, 0}, {n, 0}, {n, 0}};
    const int r1[3] = {1, 1, 1};
    bench_bw(b, "relu_fma_f32_2^28",
             "kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n%c = input f32 [?]\n"
             "%m = mul %a %b\n%s = add %m %c\n%r = relu %s\noutput %r\n",
             3, v1, r1, 1, &n, 4.0 * 4.0 * (double)n, 0.85);
    int64_t m = b->quick ? 1024 : 8192;
    const int64_t v2[2][2] = {{m, m}, {m, 0}};
    const int r2[2] = {2, 1};
    const int64_t o2[2] = {m, m};
    bench_bw(b, "bias_add_8192^2",
             "kiln.fusion 1\n%x = input f32 [?, ?]\n%b = input f32 [?]\n"
             "%b2 = broadcast %b rank=2 new=[0]\n%y = add %x %b2\noutput %y\n",
             2, v2, r2, 2, o2, 4.0 * (2.0 * (double)m * (double)m + (double)m), 0.85);
    int64_t q = b->quick ? 2048 : 16384;
    const int64_t v3[1][2] = {{q, q}};
    const int r3[1] = {2};
    const int64_t o3[1] = {q};
    bench_bw(b, "sum_inner_16384^2",
             "kiln.fusion 1\n%x = input f32 [?, ?]\n%s = sum %x axes=[1]\noutput %s\n",
             1, v3, r3, 1, o3, 4.0 * ((double)q * (double)q + (double)q), 0.80);
    bench_bw(b, "sum_outer_16384^2",
             "kiln.fusion 1\n%x = input f32 [?, ?]\n%s = sum %x axes=[0]\noutput %s\n",
             1, v3, r3, 1, o3, 4.0 * ((double)q * (double)q + (double)q), 0.75);
    return 0;
}

/* The cubin of the cuda backend's kernel for seg under ko, built the way
** the backend builds it but outside Kiln, for the bare-launch baseline
** (malloc'd; NULL after a message).  The backend is reached through its ABI
** descriptor only: compile() reports the NVRTC flags it used and
** kernel_source() the source it compiled; this NVRTC call then repeats
** that compile. */
static char *bare_kernel(bench *b, const kiln_ir_segment *seg, const kiln_kernel_options *ko)
{
    const kiln_backend *be = kiln__backend_cuda();
    void *st = NULL;
    char err[KILN_ERR_MSG_CAP] = "";
    kiln_kernel_out out;
    memset(&out, 0, sizeof out);
    char *src = NULL, *cubin = NULL;
    size_t size = 0;
    if (be->open(b->device, &st, err, sizeof err) != KILN_OK ||
        be->compile(st, seg, ko, &out, err, sizeof err) != KILN_OK ||
        be->kernel_source(st, seg, ko, NULL, 0, &size, err, sizeof err) != KILN_ERR_LIMIT ||
        (src = malloc(size)) == NULL ||
        be->kernel_source(st, seg, ko, src, size, &size, err, sizeof err) != KILN_OK) {
        fprintf(stderr, "kiln bench gpu: the bare kernel: %s\n",
                err[0] ? err : kiln_last_error());
        goto done;
    }
    /* compile() reports its flags joined by spaces; none contains one */
    const char *argv[KILN_CUDA_MAX_FLAGS];
    int argc = 0;
    char *save = NULL;
    for (char *t = strtok_r(out.flags, " ", &save); t != NULL && argc < KILN_CUDA_MAX_FLAGS;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    nvrtcProgram prog;
    size_t cn = 0;
    if (b->api.p_nvrtcCreateProgram(&prog, src, "bench.cu", 0, NULL, NULL) != NVRTC_SUCCESS)
        goto nvrtc_failed;
    if (b->api.p_nvrtcCompileProgram(prog, argc, argv) != NVRTC_SUCCESS ||
        b->api.p_nvrtcGetCUBINSize(prog, &cn) != NVRTC_SUCCESS ||
        (cubin = malloc(cn)) == NULL || b->api.p_nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS) {
        free(cubin);
        cubin = NULL;
    }
    b->api.p_nvrtcDestroyProgram(&prog);
nvrtc_failed:
    if (cubin == NULL)
        fprintf(stderr, "kiln bench gpu: NVRTC failed for the bare kernel\n");
done:
    if (out.handle != NULL)
        be->release(st, out.handle);
    if (st != NULL)
        be->close(st);
    free(src);
    return cubin;
}

/* Host overhead: kiln_execute cache hits vs cuLaunchKernel of the same
** generated kernel (neg over 1024 f32), both without synchronisation. */
static int bench_overhead(bench *b)
{
    const int N = b->quick ? 2000 : 20000;
    int64_t n = 1024;
    kiln_fusion *f = fusion("kiln.fusion 1\n%a = input f32 [?]\n%r = neg %a\noutput %r\n");
    if (f == NULL)
        return -1;
    kiln_tensor *in = dev_tensor(b, KILN_F32, 1, &n, 1), *out = dev_tensor(b, KILN_F32, 1, &n, 0);
    if (in == NULL || out == NULL)
        return -1;
    /* the same kernel: IR of neg over [n], same traits/options, its source
    ** and flags from the cuda backend through the ABI (bare_kernel) */
    kiln_ir_node nodes[2];
    memset(nodes, 0, sizeof nodes);
    nodes[0].op = KILN_OP_INPUT; nodes[0].dtype = KILN_F32; nodes[0].rank = 1;
    nodes[0].args[0] = nodes[0].args[1] = nodes[0].args[2] = -1; nodes[0].io = 0;
    nodes[1].op = KILN_OP_NEG; nodes[1].dtype = KILN_F32; nodes[1].rank = 1;
    nodes[1].args[0] = 0; nodes[1].args[1] = nodes[1].args[2] = -1; nodes[1].io = -1;
    int32_t outs[1] = {1};
    uint32_t tr[1] = {KILN_TRAIT_CONTIG | KILN_TRAIT_ALIGN16};
    kiln_ir_segment seg = {sizeof seg, KILN_SEGK_POINTWISE, nodes, 2, 1, outs, 1, tr, tr, 0};
    kiln_kernel_options ko = {sizeof ko, 0, 0, 0, 1, 1, 0, ""};
    char *cubin = bare_kernel(b, &seg, &ko);
    if (cubin == NULL)
        return -1;
    CUmodule mod;
    CUfunction fn;
    if (enter(b))
        return -1;
    CK(b, cuModuleLoadDataEx, (&mod, cubin, 0, NULL, NULL));
    free(cubin);
    CK(b, cuModuleGetFunction, (&fn, mod, KILN_CUDA_ENTRY_MAIN));
    uint64_t w[KILN_CUDA_ARG_WORDS(1, 1, 1)];
    memset(w, 0, sizeof w);
    w[0] = (uint64_t)n;                                    /* size[1] */
    w[1] = (uint64_t)(uintptr_t)kiln_tensor_data(in); w[2] = 1;
    w[3] = (uint64_t)(uintptr_t)kiln_tensor_data(out); w[4] = 1;
    uint64_t *t = &w[5];
    t[KILN_CUDA_T_N] = (uint64_t)n;
    t[KILN_CUDA_T_ND] = 1;
    t[KILN_CUDA_T_MODE] = 1;
    void *params[1] = {w};
    unsigned blocks = (unsigned)((n / 4 + 255) / 256);
    /* warm-up both */
    for (int i = 0; i < 100; i++) {
        CK(b, cuLaunchKernel, (fn, blocks, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        if (kiln_execute(b->kctx, f, &in, 1, &out, 1, NULL, NULL) != KILN_OK) {
            fprintf(stderr, "kiln bench gpu: execute: %s\n", kiln_last_error());
            return -1;
        }
    }
    CK(b, cuCtxSynchronize, ());
    double samples[3][5];
    const char *en[1] = {"fast_math"}, *dis[1] = {"fma"};
    kiln_exec_options eo = {sizeof eo, en, 1, dis, 1, NULL};
    kiln_execute(b->kctx, f, &in, 1, &out, 1, &eo, NULL); /* compile once */
    for (int rep = 0; rep < 5; rep++) {
        for (int kind = 0; kind < 3; kind++) {
            if (enter(b))
                return -1;
            double t0 = now_us();
            for (int i = 0; i < N; i++) {
                kiln_status s = KILN_OK;
                if (kind == 0)
                    s = KILN_CU(&b->api, cuLaunchKernel,
                                (fn, blocks, 1, 1, 256, 1, 1, 0, NULL, params, NULL), NULL, 0);
                else
                    s = kiln_execute(b->kctx, f, &in, 1, &out, 1, kind == 2 ? &eo : NULL, NULL);
                if (s != KILN_OK) {
                    fprintf(stderr, "kiln bench gpu: overhead loop: %s\n", kiln_last_error());
                    return -1;
                }
            }
            double t1 = now_us();
            samples[kind][rep] = (t1 - t0) / N;
            if (enter(b))
                return -1;
            CK(b, cuCtxSynchronize, ());
        }
    }
    double bare = median(samples[0], 5), hit = median(samples[1], 5), hit2 = median(samples[2], 5);
    row(b, "launch_bare_cuLaunchKernel", bare, "us/call", -1, 0, 1, "host time, no sync");
    row(b, "execute_cache_hit", hit, "us/call", hit / bare, 1.5, 0, "ratio vs bare launch");
    row(b, "execute_cache_hit_2_items", hit2, "us/call", hit2 / bare, 1.5, 0,
        "enable=fast_math disable=fma");
    b->api.p_cuModuleUnload(mod);
    kiln_tensor_destroy(in);
    kiln_tensor_destroy(out);
    kiln_fusion_destroy(f);
    return 0;
}

/* Cold NVRTC compile of a fusion (fresh context: empty caches) vs a hit. */
static int bench_compile(bench *b)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "cuda";
    cfg.device = b->device;
    kiln_context *c2 = NULL;
    if (kiln_context_create(&cfg, &c2) != KILN_OK) {
        fprintf(stderr, "kiln bench gpu: context: %s\n", kiln_last_error());
        return -1;
    }
    kiln_context *save = b->kctx;
    b->kctx = c2;
    int64_t n = 1 << 20;
    kiln_fusion *f = fusion("kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n"
                            "%c = input f32 [?]\n%m = mul %a %b\n%s = add %m %c\n"
                            "%r = relu %s\noutput %r\n");
    kiln_tensor *in[3] = {dev_tensor(b, KILN_F32, 1, &n, 1), dev_tensor(b, KILN_F32, 1, &n, 1),
                          dev_tensor(b, KILN_F32, 1, &n, 1)};
    kiln_tensor *out = dev_tensor(b, KILN_F32, 1, &n, 0);
    int rc = -1;
    if (f && in[0] && in[1] && in[2] && out) {
        double t0 = now_us();
        kiln_status s1 = kiln_execute(c2, f, in, 3, &out, 1, NULL, NULL);
        double t1 = now_us();
        double hits[HIT_RUNS];
        kiln_status s2 = KILN_OK;
        for (int i = 0; i < HIT_RUNS && s2 == KILN_OK; i++) {
            double h0 = now_us();
            s2 = kiln_execute(c2, f, in, 3, &out, 1, NULL, NULL);
            hits[i] = now_us() - h0;
        }
        if (s1 == KILN_OK && s2 == KILN_OK) {
            row(b, "compile_cold_relu_fma", (t1 - t0) / 1e3, "ms", -1, 0, 1,
                "first execute: plan + codegen + NVRTC + module load");
            row(b, "compile_cache_hit", median(hits, HIT_RUNS), "us", -1, 0, 1,
                "execute with the kernel in the in-memory cache");
            rc = 0;
        } else {
            fprintf(stderr, "kiln bench gpu: compile bench: %s\n", kiln_last_error());
        }
    }
    for (int i = 0; i < 3; i++)
        kiln_tensor_destroy(in[i]);
    kiln_tensor_destroy(out);
    kiln_fusion_destroy(f);
    b->kctx = save;
    kiln_context_destroy(c2);
    return rc;
}

static int bench_matmul(bench *b)
{
    int64_t M = b->quick ? 1024 : 4096;
    int64_t sa[2] = {M, M};
    kiln_fusion *f = fusion("kiln.fusion 1\n%a = input bf16 [?, ?]\n%b = input bf16 [?, ?]\n"
                            "%m = matmul %a %b\n%r = relu %m\noutput %r\n");
    kiln_tensor *in[2] = {dev_tensor(b, KILN_BF16, 2, sa, 1), dev_tensor(b, KILN_BF16, 2, sa, 1)};
    kiln_tensor *out = dev_tensor(b, KILN_F32, 2, sa, 0);
    if (f == NULL || in[0] == NULL || in[1] == NULL || out == NULL)
        return -1;
    static const char *const names[3] = {"matmul_bf16_default", "matmul_bf16_generated",
                                         "matmul_bf16_fused"};
    const char *dis[1] = {"matmul_expr_eval"}, *en[1] = {"fuse_matmul"};
    for (int p = 0; p < 3; p++) {
        kiln_exec_options eo = {sizeof eo, NULL, 0, NULL, 0, NULL};
        if (p == 1) { eo.disable = dis; eo.n_disable = 1; }
        if (p == 2) { eo.enable = en; eo.n_enable = 1; }
        kiln_exec_info *info = NULL;
        kiln_exec_info_create(&info);
        double ms = time_exec(b, f, in, 2, &out, 1, &eo, info);
        char note[NOTE_TEXT] = "";
        size_t ns = info ? kiln_exec_info_segment_count(info) : 0;
        for (size_t i = 0; i < ns; i++) {
            kiln_segment_info si;
            memset(&si, 0, sizeof si);
            si.struct_size = sizeof si;
            if (kiln_exec_info_segment(info, i, &si) == KILN_OK && si.what &&
                strncmp(si.what, "matmul", 6) == 0)
                snprintf(note, sizeof note, "path=%s what=%s", si.path ? si.path : "?", si.what);
        }
        kiln_exec_info_destroy(info);
        if (ms > 0)
            row(b, names[p], 2.0 * (double)M * (double)M * (double)M / (ms * 1e-3) / 1e12,
                "TFLOP/s", -1, 0, 1, note);
    }
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(in[1]);
    kiln_tensor_destroy(out);
    kiln_fusion_destroy(f);
    return 0;
}

static void usage(FILE *o)
{
    fprintf(o, "usage: kiln bench gpu [--json[=FILE]] [--reps N] [--device N] [--quick]\n\n"
               "GPU benchmarks on the cuda backend (median of N timed runs after\n"
               "warm-up, CUDA events): copy ceiling, relu(a*b+c), bias add, sums,\n"
               "execute overhead vs cuLaunchKernel, NVRTC compile, bf16 matmul paths.\n\n"
               "  --json [FILE]  the rows as JSON: in FILE (--json FILE or\n"
               "                 --json=FILE; checked before anything runs and\n"
               "                 replaced in one step at the end), or on stdout\n"
               "                 with the table on stderr when FILE is not given\n"
               "  --reps N       timed runs per benchmark, 1..10000 (default 20)\n"
               "  --device N     CUDA device ordinal (default 0)\n"
               "  --quick        smaller sizes\n\n"
               "Exit 0 when every target passes, 1 when one misses or no GPU,\n"
               "2 usage error.\n");
}

int kiln_bench_gpu(int argc, char **argv)
{
    bench B, *b = &B;
    memset(b, 0, sizeof B);
    b->reps = 20;
    const char *json_path = NULL;
    int json_stdout = 0;
    static const char cmd[] = "kiln bench gpu";
    static const cli_opt opts[] = {{"--json", CLI_OPTIONAL},
                                   {"--reps", CLI_VALUE},
                                   {"--device", CLI_VALUE},
                                   {"--quick", CLI_FLAG},
                                   {NULL, CLI_FLAG}};
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    cli_args args;
    cli_args_init(&args, cmd, opts, argc, argv);
    const char *v;
    int opt;
    long n;
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        switch (opt) {
        case 0:
            json_path = v;
            json_stdout = v == NULL;
            break;
        case 1:
        case 2:
            if (cli_long(cmd, opts[opt].name, v, opt == 1 ? 1 : 0,
                         opt == 1 ? 10000 : 1023, &n) != 0)
                return 2;
            *(opt == 1 ? &b->reps : &b->device) = (int)n;
            break;
        case 3: b->quick = 1; break;
        case CLI_POSITIONAL: return cli_usage(cmd, "unexpected argument '%s'", v);
        default: return 2;
        }
    }
    const char *const names[] = {"--json"};
    if (cli_check_outputs(cmd, names, &json_path, 1) != 0)
        return 2;
    if (b->reps < 1 || b->reps > 10000) {
        fprintf(stderr, "kiln bench gpu: --reps must be 1..10000\n");
        return 2;
    }
    char why[KILN_ERR_MSG_CAP];
    if (kiln_backend_probe("cuda", why, sizeof why) != KILN_OK) {
        fprintf(stderr, "kiln bench gpu: no usable GPU: %s\n", why[0] ? why : kiln_last_error());
        return 1;
    }
    char err[KILN_ERR_MSG_CAP];
    if (kiln__cuda_load(&b->api, KILN_CUDA_LOAD_DRIVER | KILN_CUDA_LOAD_NVRTC, err, sizeof err) !=
        KILN_OK) {
        fprintf(stderr, "kiln bench gpu: %s\n", err);
        return 1;
    }
    int rc = 1;
    if (KILN_CU(&b->api, cuInit, (0), NULL, 0) != KILN_OK ||
        KILN_CU(&b->api, cuDeviceGet, (&b->dev, b->device), NULL, 0) != KILN_OK ||
        KILN_CU(&b->api, cuDevicePrimaryCtxRetain, (&b->ctx, b->dev), NULL, 0) != KILN_OK) {
        fprintf(stderr, "kiln bench gpu: %s\n", kiln_last_error());
        kiln__cuda_unload(&b->api);
        return 1;
    }
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "cuda";
    cfg.device = b->device;
    if (kiln_context_create(&cfg, &b->kctx) != KILN_OK) {
        fprintf(stderr, "kiln bench gpu: context: %s\n", kiln_last_error());
        goto out;
    }
    cli_out jout;
    memset(&jout, 0, sizeof jout);
    if (json_path != NULL) {
        if (cli_out_open(&jout, json_path, err, sizeof err) != 0) {
            fprintf(stderr, "kiln bench gpu: %s\n", err);
            goto out;
        }
        b->json = jout.fp;
    }
    b->tab = stdout;
    if (json_stdout) {
        b->json = stdout;
        b->tab = stderr;
    }
    char name[DEVICE_NAME] = "";
    b->api.p_cuDeviceGetName(name, (int)sizeof name, b->dev);
    fprintf(b->tab, "kiln bench gpu: %s (device %d), median of %d runs%s\n", name, b->device,
            b->reps, b->quick ? ", --quick sizes" : "");
    fprintf(b->tab, "%-26s %12s %-8s %8s %9s %4s  %s\n", "benchmark", "value", "unit", "ratio",
            "target", "", "note");
    if (b->json != NULL) {
        fprintf(b->json, "{\"device\": ");
        cli_json_string(b->json, name);
        fprintf(b->json, ", \"reps\": %d, \"quick\": %s, \"rows\": [", b->reps,
                b->quick ? "true" : "false");
        b->json_first = 1;
    }
    int fails = 0;
    fails += bench_ceiling(b) != 0;
    fails += bench_bandwidth(b) != 0;
    fails += bench_overhead(b) != 0;
    fails += bench_compile(b) != 0;
    fails += bench_matmul(b) != 0;
    if (b->json != NULL) {
        fprintf(b->json, "\n], \"misses\": %d, \"errors\": %d}\n", b->misses, fails);
        if (b->json != stdout && cli_out_commit(&jout, json_path, err, sizeof err) != 0) {
            fprintf(stderr, "kiln bench gpu: %s\n", err);
            fails++;
        }
    }
    fprintf(b->tab, "kiln bench gpu: %d target(s) missed, %d benchmark error(s)\n", b->misses,
            fails);
    rc = (fails || b->misses) ? 1 : 0;
out:
    kiln_context_destroy(b->kctx);
    b->api.p_cuDevicePrimaryCtxRelease(b->dev);
    kiln__cuda_unload(&b->api);
    return rc;
}
