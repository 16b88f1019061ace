/*
** cuda.c -- the CUDA backend "cuda" (docs/backends.md, "CUDA backend";
** kiln_backend.h for the ABI).  The compile-only "nvrtc" backend is
** nvrtc.c; what the two share is cuda_compile.c.
**
** open() dlopens the driver, NVRTC and (optionally) cuBLAS through
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
** stream (shared_begin / shared_end).  launch() is cuda_launch.c; the
** instance and kernel structs are cuda_backend.h.
*/
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_backend.h"
#include "backends/cuda_compile.h"
#include "backends/cuda_flags.h"
#include "backends/cuda_loader.h"
#include "kernel_db.h"

typedef kiln_cuda_state cuda_state;
typedef kiln_cuda_kernel cuda_kernel;

/* ------------------------------------------------------------ instance */

/* Make the instance's context current on this thread. */
kiln_status kiln__cuda_enter(cuda_state *st, char *err, size_t cap)
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
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "cuda: NULL state");
    cuda_state *st = kiln__calloc(1, sizeof *st);
    if (st == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_NO_MEMORY, "cuda: out of memory");
    char why[KILN_CUDA_MSG_CAP];
    kiln_status s = kiln__cuda_load(&st->api,
                                    KILN_CUDA_LOAD_DRIVER | KILN_CUDA_LOAD_NVRTC |
                                        KILN_CUDA_LOAD_CUBLAS,
                                    why, sizeof why);
    if (s != KILN_OK) {
        kiln__free(st);
        return kiln__cuda_fail(err, cap, s, "cuda: %s", why);
    }
    kiln_cuda_api *api = &st->api;
    CUresult r = api->p_cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *nm = NULL;
        if (api->p_cuGetErrorName(r, &nm) != CUDA_SUCCESS || nm == NULL)
            nm = "unknown CUresult";
        kiln__cuda_unload(api);
        kiln__free(st);
        return kiln__cuda_fail(err, cap, KILN_ERR_BACKEND_UNAVAILABLE,
                               r == CUDA_ERROR_NO_DEVICE
                                   ? "cuda: no device (cuInit: %s [code %d])"
                                   : "cuda: no driver (cuInit failed: %s [code %d])",
                               nm, (int)r);
    }
    int count = 0;
    s = KILN_CU(api, cuDeviceGetCount, (&count), err, cap);
    if (s == KILN_OK && (device < 0 || device >= count)) {
        s = kiln__cuda_fail(err, cap, KILN_ERR_BACKEND_UNAVAILABLE,
                            "cuda: no device (ordinal %d requested, %d present)", device, count);
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
        return kiln__cuda_fail(err, cap, KILN_ERR_BACKEND, "cuda: pthread_mutex_init failed");
    }
    *state = st;
    return KILN_OK;
}

static void cuda_close(void *state)
{
    cuda_state *st = state;
    if (st == NULL)
        return;
    char err[KILN_CUDA_MSG_CAP]; /* unread: the call cannot report */
    if (kiln__cuda_enter(st, err, sizeof err) == KILN_OK) {
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

static kiln_status cuda_identity(void *state, const kiln_kernel_options *ko,
                                 char *buf, size_t cap)
{
    cuda_state *st = state;
    return kiln__cuda_identity_text(&st->api, "cuda", st->arch, st->arch, ko, buf, cap);
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
    kiln_status s = kiln__cuda_enter(st, err, cap);
    if (s == KILN_OK) {
        char jit_log[KILN_CUDA_JIT_LOG_CAP] = "";
        CUjit_option o[3] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                             CU_JIT_LOG_VERBOSE};
        void *ov[3] = {jit_log, (void *)(uintptr_t)sizeof jit_log, (void *)(uintptr_t)0};
        CUresult r = st->api.p_cuModuleLoadDataEx(&k->mod, k->image, 3, o, ov);
        if (r != CUDA_SUCCESS) {
            k->mod = NULL;
            s = kiln__cu_check(&st->api, r, "cuModuleLoadDataEx(&mod, image, ...)", err, cap);
            s = kiln__cuda_fail(err, cap, s, "%s; JIT log: %s", kiln_last_error(),
                                jit_log[0] ? jit_log : "(empty)");
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
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "cuda compile: NULL argument");
    char *src = NULL;
    kiln_cuda_kinfo info;
    kiln_status s = kiln__cuda_codegen(seg, ko, &src, &info);
    if (s != KILN_OK)
        return kiln__cuda_fail(err, cap, s, "%s", kiln_last_error());
    cuda_kernel *k = kiln__calloc(1, sizeof *k);
    if (k == NULL) {
        kiln__free(src);
        return kiln__cuda_fail(err, cap, KILN_ERR_NO_MEMORY, "cuda compile: out of memory");
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
    char flags[KILN_CUDA_FLAG_STORE] = "";
    s = kiln__cuda_nvrtc_build(&st->api, src, ko, st->arch, &k->image, &k->image_n, flags,
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
    char err[KILN_CUDA_MSG_CAP]; /* unread: the call cannot report */
    if (k->mod != NULL && st != NULL && kiln__cuda_enter(st, err, sizeof err) == KILN_OK)
        st->api.p_cuModuleUnload(k->mod);
    kiln__free(k->image);
    kiln__free(k);
}

/* ------------------------------------------------------------ memory */

static kiln_status cuda_mem_alloc(void *state, size_t n, void **ptr, char *err,
                                  size_t cap)
{
    cuda_state *st = state;
    if (st == NULL || ptr == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                               "cuda mem_alloc: NULL argument");
    kiln_status s = kiln__cuda_enter(st, err, cap);
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
    char err[KILN_CUDA_MSG_CAP]; /* unread: the call cannot report */
    if (st == NULL || ptr == NULL || kiln__cuda_enter(st, err, sizeof err) != KILN_OK)
        return;
    st->api.p_cuMemFree((CUdeviceptr)(uintptr_t)ptr);
}

static kiln_status cuda_mem_copy(void *state, void *dst, const void *src,
                                 size_t n, int direction, char *err, size_t cap)
{
    cuda_state *st = state;
    if (st == NULL || (n > 0 && (dst == NULL || src == NULL)))
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "cuda mem_copy: NULL argument");
    if (n == 0)
        return KILN_OK;
    kiln_status s = kiln__cuda_enter(st, err, cap);
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
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "cuda mem_copy: bad direction");
    }
}

/* Wait for the work on `stream` (NULL: the legacy default stream). */
static kiln_status cuda_stream_sync(void *state, void *stream, char *err, size_t cap)
{
    cuda_state *st = state;
    if (st == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "cuda stream_sync: NULL state");
    kiln_status s = kiln__cuda_enter(st, err, cap);
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
    char err[KILN_CUDA_MSG_CAP]; /* unread: the call cannot report */
    if (st == NULL || k == NULL || k->cublas || k->fmain == NULL ||
        kiln__cuda_enter(st, err, sizeof err) != KILN_OK ||
        st->api.p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                     k->fmain) != CUDA_SUCCESS)
        return -1;
    return v;
}

/* ------------------------------------------------------ kernel database */

static kiln_status cuda_db_versions(void *state, char *buf, size_t cap)
{
    cuda_state *st = state;
    return kiln__cuda_versions_text(&st->api, 1, buf, cap);
}

#define CUDA_PAYLOAD_MAGIC 0x3275636bu /* "kcu2": per-view flag bytes */
enum { PAY_CUBIN = 0, PAY_PTX = 1, PAY_CUBLAS = 2 };

/* Copy b into the caller's buffer (the serialize contract). */
static kiln_status give_payload(kiln_buf *b, void *buf, size_t cap, size_t *size,
                                char *err, size_t ecap)
{
    if (b->failed) {
        kiln__buf_free(b);
        return kiln__cuda_fail(err, ecap, KILN_ERR_NO_MEMORY, "serialize: out of memory");
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
        return kiln__cuda_fail(err, ecap, KILN_ERR_INVALID_ARGUMENT,
                               "cuda serialize: NULL argument");
    if (!k->cublas && k->image == NULL)
        return kiln__cuda_fail(err, ecap, KILN_ERR_UNSUPPORTED, "cuda serialize: no image kept");
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
        return kiln__cuda_fail(err, ecap, KILN_ERR_INVALID_ARGUMENT,
                               "cuda deserialize: NULL argument");
    kiln__kdb_rd r = {payload, n, 0, 0};
    cuda_kernel *k = kiln__calloc(1, sizeof *k);
    if (k == NULL)
        return kiln__cuda_fail(err, ecap, KILN_ERR_NO_MEMORY, "cuda deserialize: out of memory");
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
        return kiln__cuda_fail(err, ecap, KILN_ERR_CORRUPT, "cuda deserialize: malformed payload");
    }
    kiln_status s = KILN_OK;
    if (type == PAY_CUBLAS) {
        k->cublas = 1;
        if (st->api.h_cublas == NULL || k->info.kind != KILN_CK_MATMUL)
            s = kiln__cuda_fail(err, ecap, KILN_ERR_CORRUPT, "cuda deserialize: a cuBLAS kernel "
                                "without cuBLAS or a matmul");
    } else {
        k->ptx = type == PAY_PTX;
        k->image = kiln__malloc(img_n + 1); /* PTX must end in a NUL */
        if (k->image == NULL) {
            s = kiln__cuda_fail(err, ecap, KILN_ERR_NO_MEMORY, "cuda deserialize: out of memory");
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
    .launch = kiln__cuda_launch,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_copy = cuda_mem_copy,
    .local_bytes = cuda_local_bytes,
    .stream_sync = cuda_stream_sync,
    .db_versions = cuda_db_versions,
    .serialize = cuda_serialize,
    .deserialize = cuda_deserialize,
    .kernel_source = kiln__cuda_kernel_source,
};

const kiln_backend *kiln__backend_cuda(void) { return &cuda_backend; }

