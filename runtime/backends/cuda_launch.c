/*
** cuda_launch.c -- launch() of the cuda backend (cuda_backend.h): the
** parameter block of a generated kernel (cuda_codegen.h's word layout), the
** launch geometry of each kernel scheme, the split reductions' scratch, and
** the cuBLAS path.  Geometry depends only on the sizes and the device (SM
** count), never on timing, so the same inputs give the same bits; the
** shared scratch and cuBLAS handle are used under the instance's lock, and
** a stream that uses them after another one waits for it (shared_begin /
** shared_end).  The instance, compile and memory functions are cuda.c.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda_backend.h"
#include "backends/cuda_compile.h"

typedef kiln_cuda_state cuda_state;
typedef kiln_cuda_kernel cuda_kernel;

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
    return kiln__cuda_fail(err, cap, KILN_ERR_SHAPE, "cuda launch: %s (view %u)", what, k);
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
        return kiln__cuda_fail(err, cap, KILN_ERR_LIMIT, "cuda launch: grid too large");
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
        return kiln__cuda_fail(err, cap, KILN_ERR_LIMIT,
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
        return kiln__cuda_fail(err, cap, KILN_ERR_ALIGNMENT,
                               "cuda launch: cuBLAS path needs dense row-major operands "
                               "(the segment's CONTIG traits do not hold)");
    CUstream stream = launch_stream(L);
    if (K == 0) {
        if (ldc != N)
            return kiln__cuda_fail(err, cap, KILN_ERR_ALIGNMENT,
                                   "cuda launch: K=0 with padded output");
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

kiln_status kiln__cuda_launch(void *state, void *handle, kiln_launch *L,
                               char *err, size_t cap)
{
    cuda_state *st = state;
    cuda_kernel *k = handle;
    if (st == NULL || k == NULL || L == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "cuda launch: NULL argument");
    if (k->owner != st)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                               "cuda launch: kernel was compiled for device %d, not "
                               "device %d (modules are per device)",
                               k->owner->ordinal, st->ordinal);
    const kiln_cuda_kinfo *in = &k->info;
    L->gpu_ms = -1;
    if (L->n_inputs != in->n_inputs || L->n_outputs != in->n_outputs ||
        L->rank != in->rank || (L->n_inputs > 0 && L->inputs == NULL) || L->outputs == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                               "cuda launch: launch record does not match the compiled segment");
    for (int d = 0; d < L->rank; d++)
        if (L->domain[d] < 0)
            return kiln__cuda_fail(err, cap, KILN_ERR_SHAPE, "cuda launch: negative domain size");
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
            return kiln__cuda_fail(err, cap, KILN_ERR_LIMIT,
                                   "cuda launch: sizes need 64-bit indexing but the segment was "
                                   "compiled with index64 = 0");
    }
    s = kiln__cuda_enter(st, err, cap);
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

