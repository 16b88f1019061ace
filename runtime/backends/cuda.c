/*
** cuda.c -- the CUDA backend ("cuda") and the compile-only NVRTC backend
** ("nvrtc") (docs/backends.md, "CUDA backend"; backend.h for the ABI).
**
** cuda: open() dlopens the driver, NVRTC and (optionally) cuBLAS through
** cuda_loader.c, retains the primary context of device `device`, and keeps
** everything per instance: a module loaded by compile() belongs to the
** instance (and so to its device) that compiled it, and launch() refuses a
** handle from another instance.  compile() = cuda_codegen.c + NVRTC (cubin
** for the device's own sm_XX, or PTX JIT-loaded by the driver under
** disable=compile_to_sass) + cuModuleLoadDataEx; MATMUL_FALLBACK segments
** run through cublasGemmEx (f32 accumulation) when cuBLAS loaded and the
** operands are dense row-major, else the generated kernel.  Every driver
** call is checked; a failed compile carries the NVRTC log and the
** generated source.  A launch issues all of its work (kernels, cuBLAS,
** memsets, profiling events) on kiln_launch.stream, the caller's stream
** (NULL: the context's legacy default stream); mem_copy uses the legacy
** default stream and returns when the copy is done, and stream_sync waits
** for a stream.  launch() does not wait for the kernel (KILN_CUDA_SYNC=1
** makes it synchronize the context and report faults at the launch that
** caused them).
**
** Thread safety: the instance is immutable after open() except for the
** shared resources -- the reduction scratch buffer and the cuBLAS handle
** (with its workspace) -- all guarded by `lock` (held across the two
** launches of a split reduction so that another thread's launches cannot
** interleave on the shared scratch).  Work on different streams is not
** ordered by the GPU, so the stream that uses a shared resource first
** waits for `shared_ev`, recorded after the previous use on another
** stream (shared_begin / shared_end).
**
** nvrtc: needs only NVRTC.  compile() generates and compiles the CUDA
** source for every architecture in KILN_NVRTC_ARCHS (default
** "sm_90,sm_80"), fails with KILN_ERR_COMPILE on any error or warning, and
** then delegates compile/launch to the ref backend, so results are still
** checked on a machine without a GPU.  KILN_NVRTC_CHECK_CACHE=DIR memoizes
** passed checks on disk (full-text comparison, never a bare hash).
*/
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_codegen.h"
#include "backends/cuda_flags.h"
#include "backends/cuda_loader.h"
#include "ir_simplify.h"
#include "kernel_db.h"


/* Record status s with message msg in err and the thread's last error. */
static kiln_status fail(kiln_status s, char *err, size_t cap, const char *msg)
{
    kiln__cuda_fmt(err, cap, "%s", msg);
    return kiln__err(s, "%s", msg);
}

/* --------------------------------------------------------- NVRTC build */

/* Compile `src` for `arch` under `ko`.  With image != NULL the cubin (or
** PTX when !ko->sass) is returned in *image (kiln__free) and its size.
** Any error or warning (kiln__cuda_log_benign says which log text is not
** one) is KILN_ERR_COMPILE with the flags, the NVRTC log
** and the generated source (from the end of the preamble) in the message;
** `flags_out` (may be NULL) receives the flag text. */
static kiln_status nvrtc_build(const kiln_cuda_api *api, const char *src,
                               const kiln_kernel_options *ko, const char *arch,
                               char **image, size_t *image_size,
                               char *flags_out, size_t flags_cap, char *err,
                               size_t cap)
{
    const char *argv[16];
    int argc = 0;
    char store[256], ftext[256];
    kiln_status s = kiln__cuda_flags(ko, arch, argv, &argc, store, sizeof store);
    if (s == KILN_OK)
        s = kiln__cuda_flags_text(ko, arch, ftext, sizeof ftext);
    if (s != KILN_OK)
        return fail(s, err, cap, kiln_last_error());
    /* NVRTC's own cache keys without every option (see cuda_codegen.h) */
    if (kiln__cuda_nvrtc_caches(api->nvrtc_major, api->nvrtc_minor) &&
        argc < (int)(sizeof argv / sizeof argv[0])) {
        argv[argc++] = "--no-cache";
        size_t l = strlen(ftext);
        if (l + sizeof " --no-cache" <= sizeof ftext)
            memcpy(ftext + l, " --no-cache", sizeof " --no-cache");
    }
    if (flags_out != NULL)
        kiln__cuda_fmt(flags_out, flags_cap, "%s", ftext);
    nvrtcProgram prog = NULL;
    s = KILN_NVRTC(api, nvrtcCreateProgram, (&prog, src, "kiln_kernel.cu", 0, NULL, NULL),
                   err, cap);
    if (s != KILN_OK)
        return s;
    nvrtcResult r = api->p_nvrtcCompileProgram(prog, argc, argv);
    size_t logn = 0;
    char *log = NULL;
    if (api->p_nvrtcGetProgramLogSize(prog, &logn) == NVRTC_SUCCESS && logn > 0) {
        log = kiln__malloc(logn + 1);
        if (log != NULL && api->p_nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
            log[0] = '\0';
        if (log != NULL)
            log[logn] = '\0';
    }
    int warned = !kiln__cuda_log_benign(log, ko->debug);
    if (r != NVRTC_SUCCESS || warned) {
        /* Message: what failed, the log, then the kernel part of the source
        ** (the preamble is elided; line numbers say where it starts). */
        kiln_buf b = {0};
        const char *what = r != NVRTC_SUCCESS
                               ? (api->p_nvrtcGetErrorString ? api->p_nvrtcGetErrorString(r) : "?")
                               : "warnings are errors";
        kiln__buf_printf(&b, "cuda: NVRTC compile for %s failed (%s) [nvrtc %d.%d, flags: %s]\n",
                         arch, what, api->nvrtc_major, api->nvrtc_minor, ftext);
        kiln__buf_printf(&b, "--- NVRTC log ---\n%s\n", log ? log : "(no log)");
        const char *marker = strstr(src, "// ---- end of preamble\n");
        const char *body = src;
        int line = 1;
        if (marker != NULL) {
            for (const char *p = src; p < marker; p++)
                line += *p == '\n';
            body = marker;
        }
        kiln__buf_printf(&b, "--- generated source from line %d (preamble elided; "
                              "KILN_DUMP=cuda_kernel prints all) ---\n", line);
        kiln__buf_puts(&b, body);
        s = fail(KILN_ERR_COMPILE, err, cap, b.failed ? "cuda: NVRTC compile failed" : b.data);
        kiln__buf_free(&b);
        kiln__free(log);
        api->p_nvrtcDestroyProgram(&prog);
        return s;
    }
    kiln__free(log);
    if (image != NULL) {
        size_t n = 0;
        s = ko->sass ? KILN_NVRTC(api, nvrtcGetCUBINSize, (prog, &n), err, cap)
                     : KILN_NVRTC(api, nvrtcGetPTXSize, (prog, &n), err, cap);
        char *img = NULL;
        if (s == KILN_OK) {
            img = kiln__malloc(n + 1);
            if (img == NULL)
                s = fail(KILN_ERR_NO_MEMORY, err, cap, "cuda: out of memory (kernel image)");
        }
        if (s == KILN_OK)
            s = ko->sass ? KILN_NVRTC(api, nvrtcGetCUBIN, (prog, img), err, cap)
                         : KILN_NVRTC(api, nvrtcGetPTX, (prog, img), err, cap);
        if (s == KILN_OK) {
            img[n] = '\0';
            *image = img;
            *image_size = n;
        } else {
            kiln__free(img);
        }
    }
    api->p_nvrtcDestroyProgram(&prog);
    return s;
}

/* ------------------------------------------------------------ cuda state */

typedef struct cuda_state {
    kiln_cuda_api api;
    int ordinal;
    CUdevice dev;
    CUcontext ctx;      /* the device's primary context (retained) */
    int cc_major, cc_minor, sms;
    char arch[16];      /* "sm_90" */
    char name[128];
    int sync;           /* KILN_CUDA_SYNC=1 */
    pthread_mutex_t lock;
    CUdeviceptr scratch;
    size_t scratch_bytes;
    cublasHandle_t blas;
    CUevent shared_ev;      /* recorded after the last use of scratch/blas */
    CUstream shared_stream; /* the stream that recorded it */
    int shared_used;        /* shared_ev has been recorded */
} cuda_state;

typedef struct cuda_kernel {
    const cuda_state *owner; /* launching on another instance is refused */
    CUmodule mod;
    CUfunction fmain, ffinish;
    kiln_cuda_kinfo info;
    int cublas;              /* MATMUL_FALLBACK through cublasGemmEx */
    /* kept for serialize (the kernel database) */
    char *image;             /* cubin, or PTX (NUL-terminated) */
    size_t image_n;
    int ptx;
    char flags[256], path[16];
} cuda_kernel;

/* Make the instance's context current on this thread. */
static kiln_status enter(cuda_state *st, char *err, size_t cap)
{
    CUcontext cur = NULL;
    kiln_status s = KILN_CU(&st->api, cuCtxGetCurrent, (&cur), err, cap);
    if (s == KILN_OK && cur != st->ctx)
        s = KILN_CU(&st->api, cuCtxSetCurrent, (st->ctx), err, cap);
    return s;
}

static kiln_status cuda_open(int device, void **state, char *err, size_t cap)
{
    if (state == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "cuda: NULL state");
    cuda_state *st = kiln__calloc(1, sizeof *st);
    if (st == NULL)
        return fail(KILN_ERR_NO_MEMORY, err, cap, "cuda: out of memory");
    char why[768];
    kiln_status s = kiln__cuda_load(&st->api,
                                    KILN_CUDA_LOAD_DRIVER | KILN_CUDA_LOAD_NVRTC |
                                        KILN_CUDA_LOAD_CUBLAS,
                                    why, sizeof why);
    if (s != KILN_OK) {
        char msg[900];
        kiln__cuda_fmt(msg, sizeof msg, "cuda: %s", why);
        kiln__free(st);
        return fail(s, err, cap, msg);
    }
    kiln_cuda_api *api = &st->api;
    CUresult r = api->p_cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *nm = NULL;
        if (api->p_cuGetErrorName(r, &nm) != CUDA_SUCCESS || nm == NULL)
            nm = "unknown CUresult";
        char msg[512];
        if (r == CUDA_ERROR_NO_DEVICE)
            kiln__cuda_fmt(msg, sizeof msg, "cuda: no device (cuInit: %s [code %d])", nm, (int)r);
        else
            kiln__cuda_fmt(msg, sizeof msg, "cuda: no driver (cuInit failed: %s [code %d])", nm, (int)r);
        kiln__cuda_unload(api);
        kiln__free(st);
        return fail(KILN_ERR_BACKEND_UNAVAILABLE, err, cap, msg);
    }
    int count = 0;
    s = KILN_CU(api, cuDeviceGetCount, (&count), err, cap);
    if (s == KILN_OK && (device < 0 || device >= count)) {
        char msg[256];
        kiln__cuda_fmt(msg, sizeof msg, "cuda: no device (ordinal %d requested, %d present)", device, count);
        s = fail(KILN_ERR_BACKEND_UNAVAILABLE, err, cap, msg);
    }
    if (s == KILN_OK)
        s = KILN_CU(api, cuDeviceGet, (&st->dev, device), err, cap);
    if (s == KILN_OK)
        s = KILN_CU(api, cuDeviceGetAttribute,
                    (&st->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, st->dev), err, cap);
    if (s == KILN_OK)
        s = KILN_CU(api, cuDeviceGetAttribute,
                    (&st->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, st->dev), err, cap);
    if (s == KILN_OK)
        s = KILN_CU(api, cuDeviceGetAttribute,
                    (&st->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, st->dev), err, cap);
    if (s == KILN_OK && api->p_cuDeviceGetName(st->name, (int)sizeof st->name, st->dev) != CUDA_SUCCESS)
        kiln__cuda_fmt(st->name, sizeof st->name, "device %d", device);
    if (s == KILN_OK)
        s = KILN_CU(api, cuDevicePrimaryCtxRetain, (&st->ctx, st->dev), err, cap);
    if (s != KILN_OK) {
        kiln__cuda_unload(api);
        kiln__free(st);
        return s;
    }
    st->ordinal = device;
    kiln__cuda_fmt(st->arch, sizeof st->arch, "sm_%d%d", st->cc_major, st->cc_minor);
    if (st->sms <= 0)
        st->sms = 1;
    const char *sync = getenv("KILN_CUDA_SYNC");
    st->sync = sync != NULL && sync[0] == '1';
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        api->p_cuDevicePrimaryCtxRelease(st->dev);
        kiln__cuda_unload(api);
        kiln__free(st);
        return fail(KILN_ERR_BACKEND, err, cap, "cuda: pthread_mutex_init failed");
    }
    *state = st;
    return KILN_OK;
}

static void cuda_close(void *state)
{
    cuda_state *st = state;
    if (st == NULL)
        return;
    char err[256];
    if (enter(st, err, sizeof err) == KILN_OK) {
        if (st->blas != NULL)
            st->api.p_cublasDestroy_v2(st->blas);
        if (st->scratch != 0)
            st->api.p_cuMemFree(st->scratch);
        if (st->shared_ev != NULL)
            st->api.p_cuEventDestroy(st->shared_ev);
    }
    st->api.p_cuDevicePrimaryCtxRelease(st->dev);
    pthread_mutex_destroy(&st->lock);
    kiln__cuda_unload(&st->api);
    kiln__free(st);
}

/* "cuda sm_90 nvrtc-13.0 codegen=1 cublas=yes flags=... simplify_off=...
** ko=fm0,li0,g0,c1,s1": changes with every kernel-level option (ko= spells
** out each decoded field, simplify_off the passes), the target, the
** compiler and the generator.  Short enough for the runtime's 512-byte
** identity field even with eight NVRTC architectures. */
static kiln_status identity_text(const kiln_cuda_api *api, const char *prefix,
                                 const char *archs, const char *arch0,
                                 const kiln_kernel_options *ko, char *buf,
                                 size_t cap)
{
    if (ko == NULL || buf == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda identity: NULL argument");
    char flags[256], simp[64];
    kiln_status s = kiln__cuda_flags_text(ko, arch0, flags, sizeof flags);
    if (s != KILN_OK)
        return s;
    kiln__ir_simplify_text(ko->simplify_off, simp, sizeof simp);
    /* ko= spells out every decoded field, so options that map to the same
    ** flags (lineinfo under -G) still give distinct identities */
    int n = snprintf(buf, cap,
                     "%s %s nvrtc-%d.%d codegen=%d%s flags=%s simplify_off=%s "
                     "ko=fm%d,li%d,g%d,c%d,s%d",
                     prefix, archs, api->nvrtc_major, api->nvrtc_minor,
                     KILN_CUDA_CODEGEN_VERSION,
                     api->h_cuda == NULL ? "" : api->h_cublas ? " cublas=yes" : " cublas=no",
                     flags, simp[0] ? simp : "-", ko->fast_math != 0, ko->lineinfo != 0,
                     ko->debug != 0, ko->contract != 0, ko->sass != 0);
    if (n < 0 || (size_t)n >= cap)
        return kiln__err(KILN_ERR_LIMIT, "cuda identity: buffer of %zu bytes too small", cap);
    return KILN_OK;
}

static kiln_status cuda_identity(void *state, const kiln_kernel_options *ko,
                                 char *buf, size_t cap)
{
    cuda_state *st = state;
    return identity_text(&st->api, "cuda", st->arch, st->arch, ko, buf, cap);
}

static int dense_rowmajor(const uint32_t *traits, uint32_t k)
{
    return traits != NULL && (traits[k] & KILN_TRAIT_CONTIG) != 0;
}

static void cuda_release(void *state, void *handle);

/* Load k->image (cubin, or PTX JIT-compiled by the driver) as k's module and
** find its entry functions.  On failure the message carries the JIT log. */
static kiln_status load_module(cuda_state *st, cuda_kernel *k, char *err, size_t cap)
{
    kiln_status s = enter(st, err, cap);
    if (s == KILN_OK) {
        char jit_log[2048] = "";
        CUjit_option o[3] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                             CU_JIT_LOG_VERBOSE};
        void *ov[3] = {jit_log, (void *)(uintptr_t)sizeof jit_log, (void *)(uintptr_t)0};
        CUresult r = st->api.p_cuModuleLoadDataEx(&k->mod, k->image, 3, o, ov);
        if (r != CUDA_SUCCESS) {
            k->mod = NULL;
            s = kiln__cu_check(&st->api, r, "cuModuleLoadDataEx(&mod, image, ...)", err, cap);
            char msg[2600];
            kiln__cuda_fmt(msg, sizeof msg, "%s; JIT log: %s", kiln_last_error(), jit_log[0] ? jit_log : "(empty)");
            s = fail(s, err, cap, msg);
        }
    }
    if (s == KILN_OK)
        s = KILN_CU(&st->api, cuModuleGetFunction, (&k->fmain, k->mod, KILN_CUDA_ENTRY_MAIN),
                    err, cap);
    if (s == KILN_OK && (k->info.kind == KILN_CK_REDUCE_INNER || k->info.kind == KILN_CK_REDUCE_OUTER))
        s = KILN_CU(&st->api, cuModuleGetFunction,
                    (&k->ffinish, k->mod, KILN_CUDA_ENTRY_FINISH), err, cap);
    return s;
}

/* Finish a compile or a load: on success k becomes out's handle, with its
** path and flags; on failure k is released and s returned. */
static kiln_status hand_out(cuda_state *st, cuda_kernel *k, kiln_status s,
                            kiln_kernel_out *out)
{
    if (s != KILN_OK) {
        cuda_release(st, k);
        return s;
    }
    kiln__cuda_fmt(out->path, sizeof out->path, "%s", k->path);
    kiln__cuda_fmt(out->flags, sizeof out->flags, "%s", k->flags);
    out->handle = k;
    return KILN_OK;
}

static kiln_status cuda_compile(void *state, const kiln_ir_segment *seg,
                                const kiln_kernel_options *ko,
                                kiln_kernel_out *out, char *err, size_t cap)
{
    cuda_state *st = state;
    if (st == NULL || seg == NULL || ko == NULL || out == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "cuda compile: NULL argument");
    char *src = NULL;
    kiln_cuda_kinfo info;
    kiln_status s = kiln__cuda_codegen(seg, ko, &src, &info);
    if (s != KILN_OK)
        return fail(s, err, cap, kiln_last_error());
    cuda_kernel *k = kiln__calloc(1, sizeof *k);
    if (k == NULL) {
        kiln__free(src);
        return fail(KILN_ERR_NO_MEMORY, err, cap, "cuda compile: out of memory");
    }
    k->owner = st;
    k->info = info;
    if (seg->kind == KILN_SEGK_MATMUL_FALLBACK && st->api.h_cublas != NULL &&
        seg->n_outputs == 1 && dense_rowmajor(seg->input_traits, (uint32_t)info.mm_a) &&
        dense_rowmajor(seg->input_traits, (uint32_t)info.mm_b) &&
        dense_rowmajor(seg->output_traits, 0) && seg->nodes[seg->outputs[0]].op == KILN_OP_MATMUL) {
        k->cublas = 1;
        kiln__free(src);
        kiln__cuda_fmt(k->path, sizeof k->path, "cublas");
        kiln__cuda_fmt(k->flags, sizeof k->flags, "cublasGemmEx CUBLAS_COMPUTE_32F (%s)",
            st->api.cublas_path);
        return hand_out(st, k, KILN_OK, out);
    }
    char flags[256] = "";
    s = nvrtc_build(&st->api, src, ko, st->arch, &k->image, &k->image_n, flags,
                    sizeof flags, err, cap);
    kiln__free(src);
    k->ptx = !ko->sass;
    kiln__cuda_fmt(k->flags, sizeof k->flags, "%s", flags);
    kiln__cuda_fmt(k->path, sizeof k->path, "generated");
    if (s == KILN_OK)
        s = load_module(st, k, err, cap);
    return hand_out(st, k, s, out);
}

static void cuda_release(void *state, void *handle)
{
    cuda_state *st = state;
    cuda_kernel *k = handle;
    if (k == NULL)
        return;
    char err[256];
    if (k->mod != NULL && st != NULL && enter(st, err, sizeof err) == KILN_OK)
        st->api.p_cuModuleUnload(k->mod);
    kiln__free(k->image);
    kiln__free(k);
}

/* ------------------------------------------------------------ launch */

/* The parameter block: codegen accepted the segment only if its words
** fit in KILN_CUDA_PARAM_BYTES (KILN_SEGMENT_MAX_VIEWS). */
typedef struct pack {
    uint64_t w[KILN_CUDA_PARAM_BYTES / 8];
    size_t nw;
} pack;

static uint64_t *view_words(pack *p, const kiln_cuda_kinfo *in, int is_out, uint32_t k)
{
    size_t R = (size_t)in->R;
    size_t v = is_out ? in->n_inputs + k : k;
    return &p->w[R + v * (1 + R)];
}
static uint64_t *tail(pack *p, const kiln_cuda_kinfo *in)
{
    return &p->w[KILN_CUDA_ARG_WORDS(in->R, in->n_inputs, in->n_outputs) - KILN_CUDA_TAIL_WORDS];
}

static kiln_status bad_launch(char *err, size_t cap, const char *what, uint32_t k)
{
    char msg[256];
    kiln__cuda_fmt(msg, sizeof msg, "cuda launch: %s (view %u)", what, k);
    return fail(KILN_ERR_SHAPE, err, cap, msg);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* The caller's stream (kiln_launch.stream, when the record has it). */
static CUstream launch_stream(const kiln_launch *L)
{
    return L->struct_size >= offsetof(kiln_launch, stream) + sizeof L->stream
               ? (CUstream)L->stream
               : NULL;
}

/* Around a use of the shared resources (scratch, cuBLAS), `lock` held: a
** stream other than the previous user's first waits for that use. */
static kiln_status shared_begin(cuda_state *st, CUstream s, char *err, size_t cap)
{
    if (!st->shared_used || st->shared_stream == s)
        return KILN_OK;
    return KILN_CU(&st->api, cuStreamWaitEvent, (s, st->shared_ev, 0), err, cap);
}
static kiln_status shared_end(cuda_state *st, CUstream s, char *err, size_t cap)
{
    kiln_status r = KILN_OK;
    if (st->shared_ev == NULL)
        r = KILN_CU(&st->api, cuEventCreate, (&st->shared_ev, CU_EVENT_DISABLE_TIMING),
                    err, cap);
    if (r == KILN_OK)
        r = KILN_CU(&st->api, cuEventRecord, (st->shared_ev, s), err, cap);
    if (r == KILN_OK) {
        st->shared_used = 1;
        st->shared_stream = s;
    }
    return r;
}

/* Launch one function of the module with the packed arguments on stream. */
static kiln_status run(cuda_state *st, CUfunction f, pack *p, uint64_t grid_x,
                       uint64_t grid_y, unsigned block, CUstream stream, char *err,
                       size_t cap)
{
    if (grid_x > 0x7fffffffu || grid_y > 65535u)
        return fail(KILN_ERR_LIMIT, err, cap, "cuda launch: grid too large");
    void *params[1] = {p->w};
    kiln_status s = KILN_CU(&st->api, cuLaunchKernel,
                            (f, (unsigned)grid_x, (unsigned)grid_y, 1, block, 1, 1, 0, stream,
                             params, NULL),
                            err, cap);
    if (s == KILN_OK && st->sync)
        s = KILN_CU(&st->api, cuCtxSynchronize, (), err, cap);
    return s;
}

static kiln_status ensure_scratch(cuda_state *st, size_t bytes, char *err, size_t cap)
{
    if (bytes <= st->scratch_bytes)
        return KILN_OK;
    if (st->scratch != 0) {
        /* earlier launches may still read it */
        kiln_status s = KILN_CU(&st->api, cuCtxSynchronize, (), err, cap);
        if (s != KILN_OK)
            return s;
        st->api.p_cuMemFree(st->scratch);
        st->scratch = 0;
        st->scratch_bytes = 0;
    }
    kiln_status s = KILN_CU(&st->api, cuMemAlloc, (&st->scratch, bytes), err, cap);
    if (s == KILN_OK)
        st->scratch_bytes = bytes;
    return s;
}

/* Validate the views and pack sizes/pointers/normalised strides (size-1
** axes get stride 0).  keep_mask: axes where outputs have the domain's
** size (others must be 1). Returns the largest element offset of any view
** in *maxoff. */
static kiln_status pack_views(const cuda_kernel *k, const kiln_launch *L,
                              const int64_t *dom, uint32_t out_keep, pack *p,
                              uint64_t *maxoff, char *err, size_t cap)
{
    const kiln_cuda_kinfo *in = &k->info;
    int R = in->R;
    *maxoff = 0;
    for (int d = 0; d < R; d++)
        p->w[d] = (uint64_t)(d < in->rank ? dom[d] : 1);
    for (int is_out = 0; is_out < 2; is_out++) {
        uint32_t nv = is_out ? in->n_outputs : in->n_inputs;
        const kiln_ir_tensor *views = is_out ? L->outputs : L->inputs;
        for (uint32_t v = 0; v < nv; v++) {
            const kiln_ir_tensor *t = &views[v];
            uint64_t *w = view_words(p, in, is_out, v);
            w[0] = (uint64_t)(uintptr_t)t->data;
            int matmul_operand = !is_out && in->kind == KILN_CK_MATMUL &&
                                 ((int)v == in->mm_a || (int)v == in->mm_b);
            if (t->rank != in->rank)
                return bad_launch(err, cap, "view rank differs from the domain's", v);
            uint64_t off = 0;
            int empty = 0;
            for (int d = 0; d < R; d++) {
                int64_t sz = d < t->rank ? t->sizes[d] : 1;
                int64_t sd = d < t->rank ? t->strides[d] : 0;
                if (sz < 0 || sd < 0)
                    return bad_launch(err, cap, "negative size or stride", v);
                if (sz == 0)
                    empty = 1;
                if (!matmul_operand) {
                    int64_t want = (int64_t)p->w[d];
                    if (is_out && !(out_keep >> d & 1u))
                        want = 1;
                    if (sz != want && !(sz == 1 && !is_out))
                        return bad_launch(err, cap, "view size does not match the domain", v);
                }
                w[1 + d] = sz == 1 ? 0 : (uint64_t)sd;
                int64_t step, o = (int64_t)off;
                if (sz > 1 && (kiln_ckd_mul(sz - 1, sd, &step) ||
                               kiln_ckd_add(o, step, &o)))
                    return bad_launch(err, cap, "storage extent overflows", v);
                off = (uint64_t)o;
            }
            if (!empty && off > *maxoff)
                *maxoff = off;
        }
    }
    return KILN_OK;
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

static kiln_status launch_pointwise(cuda_state *st, cuda_kernel *k, kiln_launch *L,
                                    pack *p, char *err, size_t cap)
{
    const kiln_cuda_kinfo *in = &k->info;
    int R = in->R;
    uint64_t n = 1;
    for (int d = 0; d < in->rank; d++)
        n *= (uint64_t)L->domain[d];
    if (n == 0)
        return KILN_OK; /* empty domain: nothing to write (strides of an
                           empty view say nothing about density) */
    /* flat views must really be dense row-major over D */
    for (uint32_t v = 0; v < in->n_inputs + in->n_outputs; v++) {
        int is_out = v >= in->n_inputs;
        uint32_t kk = is_out ? v - in->n_inputs : v;
        if (!(in->view[v] & KILN_CUDA_V_FLAT))
            continue;
        if (!is_out && !(in->view[v] & KILN_CUDA_V_USED))
            continue;
        uint64_t *w = view_words(p, in, is_out, kk);
        uint64_t dense = 1;
        for (int d = R - 1; d >= 0; d--) {
            if (p->w[d] > 1 && w[1 + d] != dense)
                return bad_launch(err, cap, "view marked CONTIG is not dense row-major", kk);
            dense *= p->w[d];
        }
    }
    /* unread inputs must not block merging */
    for (uint32_t v = 0; v < in->n_inputs; v++)
        if (!(kiln__cuda_in_flags(in, v) & KILN_CUDA_V_USED))
            memset(view_words(p, in, 0, v) + 1, 0, (size_t)R * sizeof(uint64_t));
    /* collapse: drop size-1 axes, merge d into d+1 where every view allows */
    uint64_t size[KILN_MAX_RANK];
    uint64_t str[KILN_CUDA_MAX_VIEWS][KILN_MAX_RANK];
    uint32_t nviews = in->n_inputs + in->n_outputs;
    int nd = 0;
    for (int d = 0; d < R; d++) {
        if (p->w[d] == 1)
            continue;
        int merge = nd > 0;
        for (uint32_t v = 0; v < nviews && merge; v++) {
            uint64_t *w = view_words(p, in, v >= in->n_inputs,
                                     v >= in->n_inputs ? v - in->n_inputs : v);
            merge = str[v][nd - 1] == w[1 + d] * p->w[d];
        }
        if (merge) {
            size[nd - 1] *= p->w[d];
            for (uint32_t v = 0; v < nviews; v++) {
                uint64_t *w = view_words(p, in, v >= in->n_inputs,
                                         v >= in->n_inputs ? v - in->n_inputs : v);
                str[v][nd - 1] = w[1 + d];
            }
        } else {
            size[nd] = p->w[d];
            for (uint32_t v = 0; v < nviews; v++) {
                uint64_t *w = view_words(p, in, v >= in->n_inputs,
                                         v >= in->n_inputs ? v - in->n_inputs : v);
                str[v][nd] = w[1 + d];
            }
            nd++;
        }
    }
    if (nd == 0) {
        size[0] = 1;
        for (uint32_t v = 0; v < nviews; v++)
            str[v][0] = 0;
        nd = 1;
    }
    for (int d = 0; d < R; d++) {
        int src = d - (R - nd);
        p->w[d] = src >= 0 ? size[src] : 1;
        for (uint32_t v = 0; v < nviews; v++) {
            uint64_t *w = view_words(p, in, v >= in->n_inputs,
                                     v >= in->n_inputs ? v - in->n_inputs : v);
            w[1 + d] = src >= 0 ? str[v][src] : 0;
        }
    }
    int vec = in->vec;
    int ok = vec > 0 && (nd == 1 || p->w[R - 1] % (uint64_t)vec == 0);
    for (uint32_t v = 0; v < nviews && ok; v++) {
        int is_out = v >= in->n_inputs;
        uint32_t kk = is_out ? v - in->n_inputs : v;
        if (!is_out && !(kiln__cuda_in_flags(in, kk) & KILN_CUDA_V_USED))
            continue;
        uint64_t *w = view_words(p, in, is_out, kk);
        ok = aligned16((const void *)(uintptr_t)w[0]) &&
             (is_out ? w[R] == 1 : w[R] <= 1);
        /* vector accesses start at multiples of VEC; a view broadcast
        ** along the inner axis is read one scalar per vector instead */
        for (int d = 0; d < R - 1 && ok && w[R] == 1; d++)
            ok = w[1 + d] % (uint64_t)vec == 0;
    }
    uint64_t *t = tail(p, in);
    t[KILN_CUDA_T_N] = n;
    t[KILN_CUDA_T_ND] = (uint64_t)nd;
    t[KILN_CUDA_T_MODE] = ok ? 1u : 0u;
    if (n == 0)
        return KILN_OK;
    uint64_t work = ok ? n / (uint64_t)vec : n;
    if (work == 0)
        work = 1;
    uint64_t blocks = ceil_div(work, 256);
    uint64_t maxb = (uint64_t)st->sms * 8;
    if (blocks > maxb)
        blocks = maxb;
    return run(st, k->fmain, p, blocks, 1, 256, launch_stream(L), err, cap);
}

static kiln_status launch_reduction(cuda_state *st, cuda_kernel *k, kiln_launch *L,
                                    pack *p, char *err, size_t cap)
{
    const kiln_cuda_kinfo *in = &k->info;
    int R = in->R;
    uint64_t O = 1, J = 1;
    for (int d = 0; d < in->rank; d++) {
        if (in->red_axes >> d & 1u)
            J *= (uint64_t)L->domain[d];
        else
            O *= (uint64_t)L->domain[d];
    }
    uint64_t *t = tail(p, in);
    t[KILN_CUDA_T_N] = O;
    t[KILN_CUDA_T_J] = J;
    if (O == 0)
        return KILN_OK;
    int vec = in->vec;
    int ok = vec > 0 && p->w[R - 1] % (uint64_t)vec == 0;
    for (uint32_t v = 0; v < in->n_inputs && ok; v++) {
        if (!(kiln__cuda_in_flags(in, v) & KILN_CUDA_V_PRE))
            continue;
        uint64_t *w = view_words(p, in, 0, v);
        ok = aligned16((const void *)(uintptr_t)w[0]) && w[R] <= 1;
        for (int d = 0; d < R - 1 && ok && w[R] == 1; d++)
            ok = w[1 + d] % (uint64_t)vec == 0;
    }
    uint64_t target = (uint64_t)st->sms * 8, S = 1, chunk = J > 0 ? J : 1;
    uint64_t grid_x;
    unsigned tpr = 0;
    uint64_t step = ok ? (uint64_t)vec : 1;
    if (in->kind == KILN_CK_REDUCE_INNER) {
        tpr = J >= 1024 ? 256u : 32u;
        grid_x = ceil_div(O, 256u / tpr);
        if (grid_x < target && J > 0) {
            S = ceil_div(target, grid_x);
            uint64_t most = ceil_div(J, (uint64_t)tpr * 8 * step);
            if (S > most) S = most;
        }
    } else {
        grid_x = ceil_div(O, 32 * step);
        if (grid_x < target && J > 0) {
            S = ceil_div(target, grid_x);
            uint64_t most = ceil_div(J, 64);
            if (S > most) S = most;
        }
    }
    if (S < 1)
        S = 1;
    if (S > 65535)
        S = 65535;
    if (J > 0) {
        chunk = ceil_div(J, S);
        chunk = ceil_div(chunk, step) * step;
        S = ceil_div(J, chunk);
    }
    t[KILN_CUDA_T_S] = S;
    t[KILN_CUDA_T_CHUNK] = chunk;
    t[KILN_CUDA_T_MODE] = (ok ? 1u : 0u) | ((uint64_t)tpr << 8);
    CUstream stream = launch_stream(L);
    if (S == 1)
        return run(st, k->fmain, p, grid_x, 1, 256, stream, err, cap);
    if (!in->index64 && S * O > 0x7fffffffu)
        return fail(KILN_ERR_LIMIT, err, cap,
                    "cuda launch: reduction partials need 64-bit indexing");
    pthread_mutex_lock(&st->lock);
    kiln_status s = ensure_scratch(st, (size_t)(S * O * in->acc_bytes), err, cap);
    if (s == KILN_OK)
        s = shared_begin(st, stream, err, cap);
    if (s == KILN_OK) {
        t[KILN_CUDA_T_SCRATCH] = (uint64_t)st->scratch;
        s = run(st, k->fmain, p, grid_x, S, 256, stream, err, cap);
    }
    if (s == KILN_OK) {
        uint64_t fb = ceil_div(O, 256);
        if (fb > target)
            fb = target;
        s = run(st, k->ffinish, p, fb, 1, 256, stream, err, cap);
    }
    if (s == KILN_OK)
        s = shared_end(st, stream, err, cap);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static cudaDataType_t blas_type(int dt)
{
    return dt == KILN_F16 ? CUDA_R_16F : dt == KILN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static kiln_status launch_cublas(cuda_state *st, cuda_kernel *k, kiln_launch *L,
                                 pack *p, char *err, size_t cap)
{
    const kiln_cuda_kinfo *in = &k->info;
    uint64_t M = (uint64_t)L->domain[0], N = (uint64_t)L->domain[1], K = (uint64_t)L->k;
    if (M == 0 || N == 0)
        return KILN_OK;
    uint64_t *wa = view_words(p, in, 0, (uint32_t)in->mm_a);
    uint64_t *wb = view_words(p, in, 0, (uint32_t)in->mm_b);
    uint64_t *wc = view_words(p, in, 1, 0);
    /* dense row-major with inner stride 1 (size-1 axes normalised to 0) */
    uint64_t lda = M > 1 ? wa[1] : K, ldb = K > 1 ? wb[1] : N, ldc = M > 1 ? wc[1] : N;
    if ((K > 1 && wa[2] != 1) || (N > 1 && wb[2] != 1) || (N > 1 && wc[2] != 1) ||
        lda < K || ldb < N || ldc < N || M > 0x7fffffff || N > 0x7fffffff ||
        K > 0x7fffffff || lda > 0x7fffffff || ldb > 0x7fffffff || ldc > 0x7fffffff)
        return fail(KILN_ERR_ALIGNMENT, err, cap,
                    "cuda launch: cuBLAS path needs dense row-major operands "
                    "(the segment's CONTIG traits do not hold)");
    CUstream stream = launch_stream(L);
    if (K == 0) {
        if (ldc != N)
            return fail(KILN_ERR_ALIGNMENT, err, cap, "cuda launch: K=0 with padded output");
        return KILN_CU(&st->api, cuMemsetD8Async,
                       ((CUdeviceptr)wc[0], 0, (size_t)(M * N * 4), stream), err, cap);
    }
    pthread_mutex_lock(&st->lock);
    kiln_status s = KILN_OK;
    if (st->blas == NULL)
        s = KILN_CUBLAS(&st->api, cublasCreate_v2, (&st->blas), err, cap);
    if (s == KILN_OK)
        s = shared_begin(st, stream, err, cap);
    if (s == KILN_OK)
        s = KILN_CUBLAS(&st->api, cublasSetStream_v2, (st->blas, (cudaStream_t)stream), err,
                        cap);
    if (s == KILN_OK) {
        const float alpha = 1.0f, beta = 0.0f;
        cudaDataType_t ty = blas_type(in->mm_dtype);
        /* row-major C = A B is column-major C^T = B^T A^T */
        s = KILN_CUBLAS(&st->api, cublasGemmEx,
                        (st->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha,
                         (const void *)(uintptr_t)wb[0], ty, (int)ldb,
                         (const void *)(uintptr_t)wa[0], ty, (int)lda, &beta,
                         (void *)(uintptr_t)wc[0], CUDA_R_32F, (int)ldc,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                        err, cap);
    }
    if (s == KILN_OK)
        s = shared_end(st, stream, err, cap);
    pthread_mutex_unlock(&st->lock);
    if (s == KILN_OK && st->sync)
        s = KILN_CU(&st->api, cuCtxSynchronize, (), err, cap);
    return s;
}

static kiln_status launch_matmul(cuda_state *st, cuda_kernel *k, kiln_launch *L,
                                 pack *p, char *err, size_t cap)
{
    const kiln_cuda_kinfo *in = &k->info;
    const kiln_ir_tensor *A = &L->inputs[in->mm_a], *B = &L->inputs[in->mm_b];
    uint64_t M = (uint64_t)L->domain[0], N = (uint64_t)L->domain[1];
    if (L->k < 0 || A->sizes[0] != L->domain[0] || A->sizes[1] != L->k ||
        B->sizes[0] != L->k || B->sizes[1] != L->domain[1])
        return bad_launch(err, cap, "matmul operands do not match [M,K] x [K,N]",
                          (uint32_t)in->mm_a);
    tail(p, in)[KILN_CUDA_T_S] = (uint64_t)L->k;
    if (k->cublas)
        return launch_cublas(st, k, L, p, err, cap);
    if (M == 0 || N == 0)
        return KILN_OK;
    return run(st, k->fmain, p, ceil_div(N, 64), ceil_div(M, 64), 256, launch_stream(L),
               err, cap);
}

static kiln_status cuda_launch(void *state, void *handle, kiln_launch *L,
                               char *err, size_t cap)
{
    cuda_state *st = state;
    cuda_kernel *k = handle;
    if (st == NULL || k == NULL || L == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "cuda launch: NULL argument");
    if (k->owner != st) {
        char msg[200];
        kiln__cuda_fmt(msg, sizeof msg, "cuda launch: kernel was compiled for device %d, not device %d "
                             "(modules are per device)",
            k->owner->ordinal, st->ordinal);
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, msg);
    }
    const kiln_cuda_kinfo *in = &k->info;
    L->gpu_ms = -1;
    if (L->n_inputs != in->n_inputs || L->n_outputs != in->n_outputs ||
        L->rank != in->rank || (L->n_inputs > 0 && L->inputs == NULL) || L->outputs == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap,
                    "cuda launch: launch record does not match the compiled segment");
    for (int d = 0; d < L->rank; d++)
        if (L->domain[d] < 0)
            return fail(KILN_ERR_SHAPE, err, cap, "cuda launch: negative domain size");
    pack p;
    memset(&p, 0, sizeof p);
    uint32_t keep = in->kind == KILN_CK_REDUCE_INNER || in->kind == KILN_CK_REDUCE_OUTER
                        ? ~in->red_axes : ~0u;
    uint64_t maxoff = 0;
    kiln_status s = pack_views(k, L, L->domain, keep, &p, &maxoff, err, cap);
    if (s != KILN_OK)
        return s;
    if (!in->index64 && !k->cublas) {
        /* the source was generated with 32-bit unsigned indices */
        int64_t numel;
        if (kiln_ckd_numel(L->rank, L->domain, &numel) || numel > 0x7fffffff ||
            maxoff > 0x7fffffffu || (uint64_t)L->k > 0x7fffffffu)
            return fail(KILN_ERR_LIMIT, err, cap,
                        "cuda launch: sizes need 64-bit indexing but the segment was "
                        "compiled with index64 = 0");
    }
    s = enter(st, err, cap);
    if (s != KILN_OK)
        return s;
    CUevent ev[2] = {NULL, NULL};
    if (L->profile) {
        s = KILN_CU(&st->api, cuEventCreate, (&ev[0], CU_EVENT_DEFAULT), err, cap);
        if (s == KILN_OK)
            s = KILN_CU(&st->api, cuEventCreate, (&ev[1], CU_EVENT_DEFAULT), err, cap);
        if (s == KILN_OK)
            s = KILN_CU(&st->api, cuEventRecord, (ev[0], launch_stream(L)), err, cap);
    }
    if (s == KILN_OK) {
        switch (in->kind) {
        case KILN_CK_POINTWISE: s = launch_pointwise(st, k, L, &p, err, cap); break;
        case KILN_CK_MATMUL: s = launch_matmul(st, k, L, &p, err, cap); break;
        default: s = launch_reduction(st, k, L, &p, err, cap); break;
        }
    }
    if (L->profile && s == KILN_OK) {
        float ms = 0;
        s = KILN_CU(&st->api, cuEventRecord, (ev[1], launch_stream(L)), err, cap);
        if (s == KILN_OK)
            s = KILN_CU(&st->api, cuEventSynchronize, (ev[1]), err, cap);
        if (s == KILN_OK)
            s = KILN_CU(&st->api, cuEventElapsedTime, (&ms, ev[0], ev[1]), err, cap);
        if (s == KILN_OK)
            L->gpu_ms = ms;
    }
    for (int i = 0; i < 2; i++)
        if (ev[i] != NULL)
            st->api.p_cuEventDestroy(ev[i]);
    return s;
}

/* ------------------------------------------------------------ memory */

static kiln_status cuda_mem_alloc(void *state, size_t n, void **ptr, char *err,
                                  size_t cap)
{
    cuda_state *st = state;
    if (st == NULL || ptr == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "cuda mem_alloc: NULL argument");
    kiln_status s = enter(st, err, cap);
    CUdeviceptr d = 0;
    if (s == KILN_OK) /* cuMemAlloc rejects 0 bytes: keep a valid address */
        s = KILN_CU(&st->api, cuMemAlloc, (&d, n ? n : 16), err, cap);
    if (s == KILN_OK)
        *ptr = (void *)(uintptr_t)d;
    return s;
}

static void cuda_mem_free(void *state, void *ptr)
{
    cuda_state *st = state;
    char err[256];
    if (st == NULL || ptr == NULL || enter(st, err, sizeof err) != KILN_OK)
        return;
    st->api.p_cuMemFree((CUdeviceptr)(uintptr_t)ptr);
}

static kiln_status cuda_mem_copy(void *state, void *dst, const void *src,
                                 size_t n, int direction, char *err, size_t cap)
{
    cuda_state *st = state;
    if (st == NULL || (n > 0 && (dst == NULL || src == NULL)))
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "cuda mem_copy: NULL argument");
    if (n == 0)
        return KILN_OK;
    kiln_status s = enter(st, err, cap);
    if (s != KILN_OK)
        return s;
    switch (direction) {
    case 0:
        return KILN_CU(&st->api, cuMemcpyHtoD, ((CUdeviceptr)(uintptr_t)dst, src, n), err, cap);
    case 1:
        return KILN_CU(&st->api, cuMemcpyDtoH, (dst, (CUdeviceptr)(uintptr_t)src, n), err, cap);
    case 2:
        return KILN_CU(&st->api, cuMemcpyDtoD,
                       ((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n), err, cap);
    default:
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "cuda mem_copy: bad direction");
    }
}

/* Wait for the work on `stream` (NULL: the legacy default stream). */
static kiln_status cuda_stream_sync(void *state, void *stream, char *err, size_t cap)
{
    cuda_state *st = state;
    if (st == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "cuda stream_sync: NULL state");
    kiln_status s = enter(st, err, cap);
    if (s == KILN_OK)
        s = KILN_CU(&st->api, cuStreamSynchronize, ((CUstream)stream), err, cap);
    return s;
}

/* Local memory per thread of the kernel's main function (spills + stack),
** from the driver; -1 for cuBLAS kernels or when the query fails. */
static int64_t cuda_local_bytes(void *state, void *handle)
{
    cuda_state *st = state;
    cuda_kernel *k = handle;
    int v = -1;
    char err[256];
    if (st == NULL || k == NULL || k->cublas || k->fmain == NULL ||
        enter(st, err, sizeof err) != KILN_OK ||
        st->api.p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                     k->fmain) != CUDA_SUCCESS)
        return -1;
    return v;
}

/* ------------------------------------------------------ kernel database */

/* "nvrtc 13.0" (+ " driver 13000" with a driver), probed afresh: a probe
** that fails makes the database refuse this backend (fail closed). */
static kiln_status versions_text(const kiln_cuda_api *api, int driver, char *buf,
                                 size_t cap)
{
    int mj = 0, mn = 0, dv = 0;
    if (api->p_nvrtcVersion == NULL || api->p_nvrtcVersion(&mj, &mn) != NVRTC_SUCCESS)
        return kiln__err(KILN_ERR_BACKEND, "cuda: nvrtcVersion failed");
    if (driver && (api->p_cuDriverGetVersion == NULL ||
                   api->p_cuDriverGetVersion(&dv) != CUDA_SUCCESS || dv <= 0))
        return kiln__err(KILN_ERR_BACKEND, "cuda: cuDriverGetVersion failed");
    int n = driver ? snprintf(buf, cap, "nvrtc %d.%d driver %d", mj, mn, dv)
                   : snprintf(buf, cap, "nvrtc %d.%d", mj, mn);
    if (n < 0 || (size_t)n >= cap)
        return kiln__err(KILN_ERR_LIMIT, "cuda: version buffer too small");
    return KILN_OK;
}

static kiln_status cuda_db_versions(void *state, char *buf, size_t cap)
{
    cuda_state *st = state;
    return versions_text(&st->api, 1, buf, cap);
}

#define CUDA_PAYLOAD_MAGIC 0x3275636bu /* "kcu2": per-view flag bytes */
enum { PAY_CUBIN = 0, PAY_PTX = 1, PAY_CUBLAS = 2 };

/* Copy b into the caller's buffer (the serialize contract). */
static kiln_status give_payload(kiln_buf *b, void *buf, size_t cap, size_t *size,
                                char *err, size_t ecap)
{
    if (b->failed) {
        kiln__buf_free(b);
        return fail(KILN_ERR_NO_MEMORY, err, ecap, "serialize: out of memory");
    }
    *size = b->len;
    kiln_status s = KILN_OK;
    if (b->len > cap)
        s = KILN_ERR_LIMIT;
    else if (b->len > 0)
        memcpy(buf, b->data, b->len);
    kiln__buf_free(b);
    return s;
}

static void put_kinfo(kiln_buf *b, const kiln_cuda_kinfo *i)
{
    const int64_t v[] = {i->kind, i->seg_kind, i->rank, i->R, i->n_inputs,
                         i->n_outputs, i->red_axes, i->vec,
                         (int64_t)i->acc_bytes, i->mm_a, i->mm_b, i->mm_dtype,
                         i->block, i->tile_m, i->tile_n, i->index64};
    kiln__kdb_put_u32(b, (uint32_t)(sizeof v / sizeof v[0]));
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        kiln__kdb_put_u64(b, (uint64_t)v[k]);
    /* one flag byte per view (inputs, then outputs) */
    size_t nv = (size_t)i->n_inputs + i->n_outputs;
    kiln__kdb_put_bytes(b, i->view, nv <= KILN_CUDA_MAX_VIEWS ? nv : 0);
}

/* Decode and range-check what put_kinfo wrote (launch indexes arrays with
** these values).  0 when valid. */
static int get_kinfo(kiln__kdb_rd *r, kiln_cuda_kinfo *i)
{
    enum { N = 16 };
    int64_t v[N];
    if (kiln__kdb_get_u32(r) != N)
        return -1;
    for (int k = 0; k < N; k++)
        v[k] = (int64_t)kiln__kdb_get_u64(r);
    const uint8_t *views = NULL;
    size_t nv = kiln__kdb_get_bytes(r, &views);
    if (r->bad)
        return -1;
    memset(i, 0, sizeof *i);
    i->kind = (int)v[0], i->seg_kind = (int)v[1], i->rank = (int)v[2];
    i->R = (int)v[3], i->n_inputs = (uint32_t)v[4], i->n_outputs = (uint32_t)v[5];
    i->red_axes = (uint32_t)v[6], i->vec = (int)v[7];
    i->acc_bytes = (size_t)v[8], i->mm_a = (int)v[9], i->mm_b = (int)v[10];
    i->mm_dtype = (int)v[11], i->block = (int)v[12], i->tile_m = (int)v[13];
    i->tile_n = (int)v[14], i->index64 = (int)v[15];
    int mm = i->kind == KILN_CK_MATMUL;
    if (v[0] < 0 || v[0] > KILN_CK_MATMUL || v[2] < 0 || v[2] > KILN_MAX_RANK ||
        v[3] != (v[2] > 0 ? v[2] : 1) || v[4] < 0 || v[5] < 1 ||
        v[4] + v[5] > (int64_t)KILN_SEGMENT_MAX_VIEWS(v[2]) || v[7] < 0 ||
        v[7] > 16 || v[8] < 0 || v[8] > 64 || v[15] < 0 || v[15] > 1 ||
        (mm && (v[9] < 0 || v[9] >= v[4] || v[10] < 0 || v[10] >= v[4] ||
                v[11] < 0 || v[11] >= KILN_DTYPE_COUNT || v[2] != 2)))
        return -1;
    if (views == NULL || nv != (size_t)(v[4] + v[5]))
        return -1;
    for (size_t k = 0; k < nv; k++) {
        if (views[k] & ~(KILN_CUDA_V_USED | KILN_CUDA_V_FLAT))
            return -1;
        i->view[k] = views[k];
    }
    return 0;
}

static kiln_status cuda_serialize(void *state, void *handle, void *buf, size_t cap,
                                  size_t *size, char *err, size_t ecap)
{
    (void)state;
    cuda_kernel *k = handle;
    if (k == NULL || size == NULL || (buf == NULL && cap > 0))
        return fail(KILN_ERR_INVALID_ARGUMENT, err, ecap, "cuda serialize: NULL argument");
    if (!k->cublas && k->image == NULL)
        return fail(KILN_ERR_UNSUPPORTED, err, ecap, "cuda serialize: no image kept");
    kiln_buf b = {0};
    kiln__kdb_put_u32(&b, CUDA_PAYLOAD_MAGIC);
    kiln__kdb_put_u32(&b, k->cublas ? PAY_CUBLAS : k->ptx ? PAY_PTX : PAY_CUBIN);
    put_kinfo(&b, &k->info);
    kiln__kdb_put_str(&b, k->path);
    kiln__kdb_put_str(&b, k->flags);
    kiln__kdb_put_bytes(&b, k->image, k->cublas ? 0 : k->image_n);
    return give_payload(&b, buf, cap, size, err, ecap);
}

static kiln_status cuda_deserialize(void *state, const void *payload, size_t n,
                                    kiln_kernel_out *out, char *err, size_t ecap)
{
    cuda_state *st = state;
    if (st == NULL || out == NULL || (payload == NULL && n > 0))
        return fail(KILN_ERR_INVALID_ARGUMENT, err, ecap, "cuda deserialize: NULL argument");
    kiln__kdb_rd r = {payload, n, 0, 0};
    cuda_kernel *k = kiln__calloc(1, sizeof *k);
    if (k == NULL)
        return fail(KILN_ERR_NO_MEMORY, err, ecap, "cuda deserialize: out of memory");
    k->owner = st;
    uint32_t magic = kiln__kdb_get_u32(&r), type = kiln__kdb_get_u32(&r);
    const uint8_t *img = NULL;
    int bad = magic != CUDA_PAYLOAD_MAGIC || type > PAY_CUBLAS || get_kinfo(&r, &k->info);
    kiln__kdb_get_str(&r, k->path, sizeof k->path);
    kiln__kdb_get_str(&r, k->flags, sizeof k->flags);
    size_t img_n = kiln__kdb_get_bytes(&r, &img);
    bad |= r.bad || r.at != n || (type == PAY_CUBLAS) != (img_n == 0);
    if (bad) {
        kiln__free(k);
        return fail(KILN_ERR_CORRUPT, err, ecap, "cuda deserialize: malformed payload");
    }
    kiln_status s = KILN_OK;
    if (type == PAY_CUBLAS) {
        k->cublas = 1;
        if (st->api.h_cublas == NULL || k->info.kind != KILN_CK_MATMUL)
            s = fail(KILN_ERR_CORRUPT, err, ecap, "cuda deserialize: a cuBLAS kernel "
                     "without cuBLAS or a matmul");
    } else {
        k->ptx = type == PAY_PTX;
        k->image = kiln__malloc(img_n + 1); /* PTX must end in a NUL */
        if (k->image == NULL) {
            s = fail(KILN_ERR_NO_MEMORY, err, ecap, "cuda deserialize: out of memory");
        } else {
            memcpy(k->image, img, img_n);
            k->image[img_n] = '\0';
            k->image_n = img_n;
            s = load_module(st, k, err, ecap);
        }
    }
    return hand_out(st, k, s, out);
}

static const kiln_backend cuda_backend = {
    .abi_version = KILN_BACKEND_ABI_VERSION,
    .struct_size = sizeof(kiln_backend),
    .name = "cuda",
    .memory = KILN_MEM_DEVICE,
    .open = cuda_open,
    .close = cuda_close,
    .identity = cuda_identity,
    .compile = cuda_compile,
    .release = cuda_release,
    .launch = cuda_launch,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_copy = cuda_mem_copy,
    .local_bytes = cuda_local_bytes,
    .stream_sync = cuda_stream_sync,
    .db_versions = cuda_db_versions,
    .serialize = cuda_serialize,
    .deserialize = cuda_deserialize,
};

const kiln_backend *kiln__backend_cuda(void) { return &cuda_backend; }

/* ------------------------------------------------------------ nvrtc */

#define NVRTC_MAX_ARCHS 8

typedef struct nvrtc_state {
    kiln_cuda_api api;
    char archs[NVRTC_MAX_ARCHS][16];
    int n_archs;
    char arch_list[160];
    const kiln_backend *ref;
    void *ref_state;
} nvrtc_state;

/* Parse "sm_90,sm_80" into st->archs. */
static kiln_status parse_archs(nvrtc_state *st, const char *list, char *err, size_t cap)
{
    st->n_archs = 0;
    st->arch_list[0] = '\0';
    const char *p = list;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        char a[16];
        if (n == 0 || n >= sizeof a || st->n_archs == NVRTC_MAX_ARCHS || strncmp(p, "sm_", 3) != 0 ||
            n <= 3 || strspn(p + 3, "0123456789") < n - 3) {
            char msg[256];
            kiln__cuda_fmt(msg, sizeof msg, "nvrtc: bad KILN_NVRTC_ARCHS '%s' (want e.g. sm_90,sm_80)", list);
            return fail(KILN_ERR_BACKEND_UNAVAILABLE, err, cap, msg);
        }
        memcpy(a, p, n);
        a[n] = '\0';
        memcpy(st->archs[st->n_archs++], a, n + 1);
        size_t l = strlen(st->arch_list);
        kiln__cuda_fmt(st->arch_list + l, sizeof st->arch_list - l, "%s%s", l ? "," : "", a);
        p += n;
        if (*p == ',')
            p++;
    }
    if (st->n_archs == 0)
        return fail(KILN_ERR_BACKEND_UNAVAILABLE, err, cap, "nvrtc: empty KILN_NVRTC_ARCHS");
    return KILN_OK;
}

static kiln_status nvrtc_open(int device, void **state, char *err, size_t cap)
{
    if (state == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "nvrtc: NULL state");
    nvrtc_state *st = kiln__calloc(1, sizeof *st);
    if (st == NULL)
        return fail(KILN_ERR_NO_MEMORY, err, cap, "nvrtc: out of memory");
    char why[768];
    kiln_status s = kiln__cuda_load(&st->api, KILN_CUDA_LOAD_NVRTC, why, sizeof why);
    if (s != KILN_OK) {
        char msg[900];
        kiln__cuda_fmt(msg, sizeof msg, "nvrtc: %s", why);
        kiln__free(st);
        return fail(s, err, cap, msg);
    }
    const char *archs = getenv("KILN_NVRTC_ARCHS");
    s = parse_archs(st, archs && archs[0] ? archs : "sm_90,sm_80", err, cap);
    st->ref = kiln__backend_ref();
    if (s == KILN_OK && st->ref == NULL)
        s = fail(KILN_ERR_BACKEND_UNAVAILABLE, err, cap, "nvrtc: reference backend missing");
    if (s == KILN_OK)
        s = st->ref->open(device, &st->ref_state, err, cap);
    if (s != KILN_OK) {
        kiln__cuda_unload(&st->api);
        kiln__free(st);
        return s;
    }
    *state = st;
    return KILN_OK;
}

static void nvrtc_close(void *state)
{
    nvrtc_state *st = state;
    if (st == NULL)
        return;
    if (st->ref != NULL && st->ref->close != NULL)
        st->ref->close(st->ref_state);
    kiln__cuda_unload(&st->api);
    kiln__free(st);
}

static kiln_status nvrtc_identity(void *state, const kiln_kernel_options *ko,
                                  char *buf, size_t cap)
{
    nvrtc_state *st = state;
    char archs[200], refid[256] = "";
    kiln__cuda_fmt(archs, sizeof archs, "archs=%s", st->arch_list);
    kiln_status s = identity_text(&st->api, "nvrtc", archs, st->archs[0], ko, buf, cap);
    if (s == KILN_OK && st->ref->identity != NULL)
        s = st->ref->identity(st->ref_state, ko, refid, sizeof refid);
    if (s == KILN_OK) {
        size_t l = strlen(buf);
        int n = snprintf(buf + l, cap - l, " | %s", refid);
        if (n < 0 || (size_t)n >= cap - l)
            return kiln__err(KILN_ERR_LIMIT, "nvrtc identity: buffer too small");
    }
    return s;
}

/* Optional on-disk memo of compile checks that passed (KILN_NVRTC_CHECK_CACHE
** = a directory): the file <dir>/kiln-nvrtc-<fnv64>.ok holds the full text
** that was compiled (arch, flags, source) and counts as a hit only when it
** is byte-identical, so a hash collision can never skip a check.  Writes go
** to a temporary name and are renamed into place.  Any I/O problem just
** means "not cached". */
static char *memo_text(const kiln_cuda_api *api, const char *arch, const char *flags,
                       const char *src)
{
    kiln_buf b = {0};
    /* the compiler too: a pass under one NVRTC says nothing of another */
    kiln__buf_printf(&b, "kiln nvrtc check v%d\nnvrtc %d.%d %s\n%s\n%s\n",
                     KILN_CUDA_CODEGEN_VERSION, api->nvrtc_major, api->nvrtc_minor,
                     api->nvrtc_path, arch, flags);
    kiln__buf_puts(&b, src);
    if (b.failed) {
        kiln__buf_free(&b);
        return NULL;
    }
    return b.data;
}

static void memo_path(const char *dir, const char *text, char *path, size_t cap)
{
    uint64_t h = kiln__fnv1a(text, strlen(text), KILN_FNV_SEED);
    kiln__cuda_fmt(path, cap, "%s/kiln-nvrtc-%016llx.ok", dir, (unsigned long long)h);
}

static int memo_hit(const char *dir, const char *text)
{
    char path[1024];
    memo_path(dir, text, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    size_t n = strlen(text), got = 0;
    char buf[4096];
    int same = 1;
    while (same) {
        size_t r = fread(buf, 1, sizeof buf, f);
        if (r == 0)
            break;
        same = got + r <= n && memcmp(buf, text + got, r) == 0;
        got += r;
    }
    fclose(f);
    return same && got == n;
}

static void memo_store(const char *dir, const char *text)
{
    char path[1024], tmp[1100];
    memo_path(dir, text, path, sizeof path);
    kiln__cuda_fmt(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f == NULL)
        return;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0)
        remove(tmp);
}

/* An nvrtc kernel: the ref kernel that runs it, and its database payload
** ("knv1", the segment IR and kernel options it was built from
** (kiln__kdb_ir_encode), the flags, then each architecture's name and
** NVRTC image -- empty for an architecture whose check the
** KILN_NVRTC_CHECK_CACHE memo answered).  deserialize() rebuilds the ref
** kernel from the payload's own IR and options, so a payload decides what
** runs, as a cubin does on the cuda backend. */
typedef struct nvrtc_kernel {
    void *ref;
    uint8_t *payload;
    size_t n;
} nvrtc_kernel;

#define NVRTC_PAYLOAD_MAGIC 0x31766e6bu /* "knv1" */

static kiln_status nvrtc_wrap(nvrtc_state *st, kiln_kernel_out *out, kiln_buf *pay,
                              char *err, size_t cap)
{
    nvrtc_kernel *w = kiln__calloc(1, sizeof *w);
    if (w == NULL || pay->failed) {
        kiln__free(w);
        kiln__buf_free(pay);
        st->ref->release(st->ref_state, out->handle);
        out->handle = NULL;
        return fail(KILN_ERR_NO_MEMORY, err, cap, "nvrtc: out of memory");
    }
    w->ref = out->handle;
    w->payload = (uint8_t *)pay->data;
    w->n = pay->len;
    out->handle = w;
    return KILN_OK;
}

static kiln_status nvrtc_compile(void *state, const kiln_ir_segment *seg,
                                 const kiln_kernel_options *ko, kiln_kernel_out *out,
                                 char *err, size_t cap)
{
    nvrtc_state *st = state;
    if (st == NULL || seg == NULL || ko == NULL || out == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "nvrtc compile: NULL argument");
    char *src = NULL;
    kiln_cuda_kinfo info;
    kiln_status s = kiln__cuda_codegen(seg, ko, &src, &info);
    if (s != KILN_OK)
        return fail(s, err, cap, kiln_last_error());
    char flags[256] = "";
    const char *memo = getenv("KILN_NVRTC_CHECK_CACHE");
    kiln_buf pay = {0};
    kiln__kdb_put_u32(&pay, NVRTC_PAYLOAD_MAGIC);
    kiln__kdb_ir_encode(seg, ko, &pay);
    for (int i = 0; i < st->n_archs && s == KILN_OK; i++) {
        char ftext[256] = "";
        if (kiln__cuda_flags_text(ko, st->archs[i], ftext, sizeof ftext) != KILN_OK)
            ftext[0] = '\0';
        if (i == 0) {
            kiln__cuda_fmt(flags, sizeof flags, "%s", ftext);
            kiln__kdb_put_str(&pay, flags);
            kiln__kdb_put_u32(&pay, (uint32_t)st->n_archs);
        }
        kiln__kdb_put_str(&pay, st->archs[i]);
        char *text = memo && memo[0] ? memo_text(&st->api, st->archs[i], ftext, src) : NULL;
        if (text != NULL && memo_hit(memo, text)) {
            kiln__free(text);
            kiln__kdb_put_bytes(&pay, NULL, 0);
            continue;
        }
        char *img = NULL;
        size_t img_n = 0;
        s = nvrtc_build(&st->api, src, ko, st->archs[i], &img, &img_n, NULL, 0, err, cap);
        if (s == KILN_OK && text != NULL)
            memo_store(memo, text);
        kiln__kdb_put_bytes(&pay, img, s == KILN_OK ? img_n : 0);
        kiln__free(img);
        kiln__free(text);
    }
    kiln__free(src);
    if (s == KILN_OK)
        s = st->ref->compile(st->ref_state, seg, ko, out, err, cap);
    if (s != KILN_OK) {
        kiln__buf_free(&pay);
        return s;
    }
    kiln__cuda_fmt(out->flags, sizeof out->flags, "%s", flags);
    return nvrtc_wrap(st, out, &pay, err, cap);
}

static void nvrtc_release(void *state, void *handle)
{
    nvrtc_state *st = state;
    nvrtc_kernel *w = handle;
    if (w == NULL)
        return;
    if (st != NULL && st->ref->release != NULL)
        st->ref->release(st->ref_state, w->ref);
    kiln__free(w->payload);
    kiln__free(w);
}

static kiln_status nvrtc_launch(void *state, void *handle, kiln_launch *args,
                                char *err, size_t cap)
{
    nvrtc_state *st = state;
    nvrtc_kernel *w = handle;
    if (w == NULL)
        return fail(KILN_ERR_INVALID_ARGUMENT, err, cap, "nvrtc launch: NULL kernel");
    return st->ref->launch(st->ref_state, w->ref, args, err, cap);
}

static kiln_status nvrtc_db_versions(void *state, char *buf, size_t cap)
{
    nvrtc_state *st = state;
    return versions_text(&st->api, 0, buf, cap);
}

static kiln_status nvrtc_serialize(void *state, void *handle, void *buf, size_t cap,
                                   size_t *size, char *err, size_t ecap)
{
    (void)state;
    nvrtc_kernel *w = handle;
    if (w == NULL || size == NULL || (buf == NULL && cap > 0))
        return fail(KILN_ERR_INVALID_ARGUMENT, err, ecap, "nvrtc serialize: NULL argument");
    *size = w->n;
    if (w->n > cap)
        return KILN_ERR_LIMIT;
    memcpy(buf, w->payload, w->n);
    return KILN_OK;
}

static kiln_status nvrtc_deserialize(void *state, const void *payload, size_t n,
                                     kiln_kernel_out *out, char *err, size_t ecap)
{
    nvrtc_state *st = state;
    if (st == NULL || out == NULL || (payload == NULL && n > 0))
        return fail(KILN_ERR_INVALID_ARGUMENT, err, ecap, "nvrtc deserialize: NULL argument");
    kiln__kdb_rd r = {payload, n, 0, 0};
    kiln__kdb_ir ir;
    size_t used = 0;
    if (kiln__kdb_get_u32(&r) != NVRTC_PAYLOAD_MAGIC ||
        kiln__kdb_ir_decode(r.p + r.at, n - r.at, &used, &ir) != KILN_OK)
        return fail(KILN_ERR_CORRUPT, err, ecap, "nvrtc deserialize: malformed payload");
    r.at += used;
    char flags[256], arch[16];
    kiln__kdb_get_str(&r, flags, sizeof flags);
    int bad = (int)kiln__kdb_get_u32(&r) != st->n_archs;
    for (int i = 0; i < st->n_archs && !bad && !r.bad; i++) {
        const uint8_t *img;
        kiln__kdb_get_str(&r, arch, sizeof arch);
        kiln__kdb_get_bytes(&r, &img);
        bad = strcmp(arch, st->archs[i]) != 0;
    }
    if (bad || r.bad || r.at != n) {
        kiln__kdb_ir_free(&ir);
        return fail(KILN_ERR_CORRUPT, err, ecap, "nvrtc deserialize: malformed payload "
                    "or other architectures");
    }
    kiln_status s = st->ref->compile(st->ref_state, &ir.seg, &ir.ko, out, err, ecap);
    kiln__kdb_ir_free(&ir);
    if (s != KILN_OK)
        return s;
    kiln__cuda_fmt(out->flags, sizeof out->flags, "%s", flags);
    kiln_buf pay = {0};
    kiln__buf_add(&pay, payload, n);
    return nvrtc_wrap(st, out, &pay, err, ecap);
}

static const kiln_backend nvrtc_backend = {
    .abi_version = KILN_BACKEND_ABI_VERSION,
    .struct_size = sizeof(kiln_backend),
    .name = "nvrtc",
    .memory = KILN_MEM_HOST,
    .open = nvrtc_open,
    .close = nvrtc_close,
    .identity = nvrtc_identity,
    .compile = nvrtc_compile,
    .release = nvrtc_release,
    .launch = nvrtc_launch,
    .db_versions = nvrtc_db_versions,
    .serialize = nvrtc_serialize,
    .deserialize = nvrtc_deserialize,
};

const kiln_backend *kiln__backend_nvrtc(void) { return &nvrtc_backend; }
