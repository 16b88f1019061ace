/*
** tensor.c -- tensors: a dtype, sizes, strides in elements (any
** non-negative value, 0 included), a memory space and a data pointer.
**
** Invariants of a created tensor:
**   - 0 <= rank <= KILN_MAX_RANK, every size >= 0, every stride >= 0;
**   - the byte extent of its storage, dtype_size * (1 + sum((size_i - 1) *
**     stride_i)), fits in an int64 (checked with overflow detection); it is
**     0 when any size is 0;
**   - data is NULL only for an empty tensor; `owned` says whether destroy
**     frees it (host: kiln__free; device: the context's backend mem_free,
**     so an owned device tensor must not outlive its context).
*/
#include <string.h>

#include "core.h"

kiln_status kiln__tensor_describe(kiln_tensor *t, kiln_dtype dtype, int rank,
                                  const int64_t *sizes, const int64_t *strides,
                                  kiln_memory mem, const char *who,
                                  int64_t *bytes_out)
{
    size_t esize = kiln_dtype_size(dtype);
    if (esize == 0)
        return kiln__err(KILN_ERR_DTYPE, "%s: invalid dtype %d", who, (int)dtype);
    if (rank < 0 || rank > KILN_MAX_RANK)
        return kiln__err(rank < 0 ? KILN_ERR_SHAPE : KILN_ERR_LIMIT,
                         "%s: rank %d is outside 0..%d", who, rank,
                         KILN_MAX_RANK);
    if (rank > 0 && sizes == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "%s: sizes is NULL", who);
    if (mem != KILN_MEM_HOST && mem != KILN_MEM_DEVICE)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "%s: invalid memory space %d", who, (int)mem);
    int64_t st[KILN_MAX_RANK];
    int64_t n_el, step = 1;
    for (int i = rank - 1; i >= 0; i--) {
        if (sizes[i] < 0)
            return kiln__err(KILN_ERR_SHAPE, "%s: axis %d has negative size %lld",
                             who, i, (long long)sizes[i]);
        if (strides != NULL && strides[i] < 0)
            return kiln__err(KILN_ERR_SHAPE,
                             "%s: axis %d has negative stride %lld", who, i,
                             (long long)strides[i]);
        st[i] = strides != NULL ? strides[i] : step;
        if (kiln_ckd_mul(step, sizes[i] ? sizes[i] : 1, &step))
            return kiln__err(KILN_ERR_LIMIT, "%s: element count overflows", who);
    }
    if (kiln_ckd_numel(rank, sizes, &n_el))
        return kiln__err(KILN_ERR_LIMIT, "%s: element count overflows", who);
    int64_t ext, bytes;
    if (kiln_ckd_extent(rank, sizes, st, &ext) ||
        kiln_ckd_mul(ext, (int64_t)esize, &bytes) ||
        (uint64_t)bytes > SIZE_MAX / 2)
        return kiln__err(KILN_ERR_LIMIT,
                         "%s: the byte extent of the storage overflows", who);
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) {
        t->sizes[i] = sizes[i];
        t->strides[i] = st[i];
    }
    t->mem = mem;
    *bytes_out = bytes;
    return KILN_OK;
}

kiln_status kiln_tensor_create(kiln_context *ctx, kiln_dtype dtype, int rank,
                               const int64_t *sizes, const int64_t *strides,
                               kiln_memory mem, void *data, kiln_tensor **out)
{
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_tensor_create: out is NULL");
    kiln_tensor d;
    int64_t bytes;
    kiln_status s0 = kiln__tensor_describe(&d, dtype, rank, sizes, strides, mem,
                                           "kiln_tensor_create", &bytes);
    if (s0 != KILN_OK)
        return s0;
    if (mem == KILN_MEM_DEVICE && data == NULL &&
        (ctx == NULL || ctx->be.memory != KILN_MEM_DEVICE))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_tensor_create: allocating device memory needs "
                         "a context whose backend uses device memory (%s "
                         "does not)",
                         ctx ? ctx->name : "no context");

    kiln_tensor *t = kiln__calloc(1, sizeof *t);
    if (t == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_tensor_create: out of memory");
    *t = d;
    t->ctx = ctx;
    if (data != NULL) {
        t->data = data; /* borrowed */
    } else if (bytes > 0) {
        if (mem == KILN_MEM_HOST) {
            t->data = kiln__calloc(1, (size_t)bytes);
            if (t->data == NULL) {
                kiln__free(t);
                return kiln__err(KILN_ERR_NO_MEMORY,
                                 "kiln_tensor_create: out of memory (%lld "
                                 "bytes)",
                                 (long long)bytes);
            }
        } else {
            char err[256];
    err[0] = '\0';
            kiln_status s = ctx->be.mem_alloc(ctx->be_state, (size_t)bytes,
                                              &t->data, err, sizeof err);
            if (s != KILN_OK) {
                kiln__free(t);
                return kiln__err(s, "kiln_tensor_create: device allocation of "
                                    "%lld bytes failed: %s",
                                 (long long)bytes, kiln__be_str(err, sizeof err));
            }
        }
        t->owned = 1;
    }
    *out = t;
    kiln__err_clear();
    return KILN_OK;
}

void kiln_tensor_destroy(kiln_tensor *t)
{
    if (t == NULL)
        return;
    if (t->owned && t->data != NULL) {
        if (t->mem == KILN_MEM_HOST)
            kiln__free(t->data);
        else if (t->ctx != NULL && t->ctx->be.mem_free != NULL)
            t->ctx->be.mem_free(t->ctx->be_state, t->data);
    }
    kiln__free(t);
}

void *kiln_tensor_data(const kiln_tensor *t) { return t ? t->data : NULL; }
kiln_dtype kiln_tensor_dtype(const kiln_tensor *t)
{
    return t ? t->dtype : (kiln_dtype)-1;
}
int kiln_tensor_rank(const kiln_tensor *t) { return t ? t->rank : -1; }
const int64_t *kiln_tensor_sizes(const kiln_tensor *t)
{
    return t ? t->sizes : NULL;
}
const int64_t *kiln_tensor_strides(const kiln_tensor *t)
{
    return t ? t->strides : NULL;
}
kiln_memory kiln_tensor_memory(const kiln_tensor *t)
{
    return t ? t->mem : KILN_MEM_HOST;
}

int64_t kiln_tensor_numel(const kiln_tensor *t)
{
    if (t == NULL)
        return -1;
    int64_t n = 0;
    kiln_ckd_numel(t->rank, t->sizes, &n); /* cannot fail: checked at create */
    return n;
}

/* 1 when t is dense row-major (size-1 axes may have any stride; an empty
** tensor counts as dense). */
int kiln__tensor_dense(const kiln_tensor *t)
{
    int64_t want = 1;
    if (kiln_tensor_numel(t) == 0)
        return 1; /* and below, want never exceeds the element count */
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->sizes[i] != 1 && t->strides[i] != want)
            return 0;
        want *= t->sizes[i];
    }
    return 1;
}

/* Copy between a contiguous host buffer and t's (host, strided) storage.
** to_tensor: 1 writes into t. */
static void host_strided_copy(const kiln_tensor *t, unsigned char *host,
                              int to_tensor)
{
    size_t es = kiln_dtype_size(t->dtype);
    int64_t idx[KILN_MAX_RANK] = {0};
    int64_t n = kiln_tensor_numel(t);
    unsigned char *base = t->data;
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int i = 0; i < t->rank; i++)
            off += idx[i] * t->strides[i];
        if (to_tensor)
            memcpy(base + off * (int64_t)es, host + k * (int64_t)es, es);
        else
            memcpy(host + k * (int64_t)es, base + off * (int64_t)es, es);
        for (int i = t->rank - 1; i >= 0; i--) {
            if (++idx[i] < t->sizes[i])
                break;
            idx[i] = 0;
        }
    }
}

static kiln_status xfer(kiln_context *ctx, const kiln_tensor *t, void *host,
                        size_t nbytes, int to_tensor, const char *what)
{
    if (t == NULL || (host == NULL && nbytes > 0))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    int64_t n = kiln_tensor_numel(t);
    size_t want;
    if (kiln_ckd_bytes(n, kiln_dtype_size(t->dtype), &want))
        return kiln__err(KILN_ERR_LIMIT,
                         "%s: the tensor's %lld elements of %zu bytes do not "
                         "fit one host buffer (size_t)",
                         what, (long long)n, kiln_dtype_size(t->dtype));
    if (nbytes != want)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "%s: %zu bytes given, the tensor holds %lld elements "
                         "of %zu bytes (%zu bytes)",
                         what, nbytes, (long long)n, kiln_dtype_size(t->dtype),
                         want);
    if (n == 0) {
        kiln__err_clear();
        return KILN_OK;
    }
    if (t->mem == KILN_MEM_HOST) {
        if (kiln__tensor_dense(t))
            memcpy(to_tensor ? t->data : host, to_tensor ? host : t->data,
                   nbytes);
        else
            host_strided_copy(t, host, to_tensor);
        kiln__err_clear();
        return KILN_OK;
    }
    if (ctx == NULL)
        ctx = t->ctx;
    if (ctx == NULL || ctx->be.mem_copy == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "%s: a device tensor needs a context with a device "
                         "backend",
                         what);
    if (!kiln__tensor_dense(t))
        return kiln__err(KILN_ERR_UNSUPPORTED,
                         "%s: strided device tensors cannot be copied "
                         "element-wise; use a contiguous tensor",
                         what);
    char err[256];
    err[0] = '\0';
    kiln_status s =
        to_tensor ? ctx->be.mem_copy(ctx->be_state, t->data, host, nbytes, 0,
                                     err, sizeof err)
                  : ctx->be.mem_copy(ctx->be_state, host, t->data, nbytes, 1,
                                     err, sizeof err);
    if (s != KILN_OK)
        return kiln__err(s, "%s: %s", what, kiln__be_str(err, sizeof err));
    kiln__err_clear();
    return KILN_OK;
}

kiln_status kiln_tensor_write(kiln_context *ctx, kiln_tensor *t,
                              const void *src, size_t nbytes)
{
    return xfer(ctx, t, (void *)src, nbytes, 1, "kiln_tensor_write");
}

kiln_status kiln_tensor_read(kiln_context *ctx, const kiln_tensor *t,
                             void *dst, size_t nbytes)
{
    return xfer(ctx, t, dst, nbytes, 0, "kiln_tensor_read");
}
