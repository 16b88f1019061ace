/*
** exec_check.c -- what kiln_execute checks before it plans, allocates or
** launches anything (docs/runtime.md, "Execute"): its arguments, the work
** limit, the inputs, the outputs and their overlap.  A failure here leaves
** nothing allocated and nothing written.
*/
#include <stdlib.h>
#include <string.h>

#include "execute.h"

/* Storage span of a tensor in bytes (0 when empty). */
static int64_t span_bytes(const kiln_tensor *t)
{
    int64_t e = 0;
    kiln_ckd_extent(t->rank, t->sizes, t->strides, &e); /* checked at create */
    return e * (int64_t)kiln_dtype_size(t->dtype);
}

int64_t kiln__numel_of(int rank, const int64_t *sizes)
{
    int64_t n;
    return kiln_ckd_numel(rank, sizes, &n) ? INT64_MAX : n;
}

kiln_status kiln__exec_check_args(const kiln_context *ctx,
                                  const kiln_fusion *f,
                                  kiln_tensor **outputs, size_t n_outputs,
                                  const kiln_exec_options *opts,
                                  void **stream_out)
{
    if (ctx == NULL || f == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_execute: %s is NULL", ctx ? "fusion" : "ctx");
    if (!f->finalized)
        return kiln__err(KILN_ERR_STATE,
                         "kiln_execute: the fusion is not finalized");
    if (n_outputs != f->n_outputs)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_execute: the fusion has %u output%s, %zu given",
                         f->n_outputs, f->n_outputs == 1 ? "" : "s", n_outputs);
    if (outputs == NULL && n_outputs > 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_execute: outputs is NULL");
    /* two layouts: without `stream` (older callers) and with it */
    if (opts != NULL && opts->struct_size != offsetof(kiln_exec_options, stream) &&
        opts->struct_size < sizeof *opts)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_execute: opts->struct_size %zu is neither %zu "
                         "(the layout without `stream`) nor at least %zu (set "
                         "it to sizeof(kiln_exec_options))",
                         opts->struct_size, offsetof(kiln_exec_options, stream),
                         sizeof *opts);
    void *stream = opts != NULL && opts->struct_size >= sizeof *opts ? opts->stream
                                                                      : NULL;
    if (stream != NULL && ctx->be.memory == KILN_MEM_DEVICE &&
        ctx->be.stream_sync == NULL)
        return kiln__err(KILN_ERR_UNSUPPORTED,
                         "kiln_execute: opts->stream is set but backend %s does "
                         "not take streams (its descriptor has no "
                         "stream_sync); pass NULL to use its default stream",
                         ctx->name);
    if (ctx->be.memory != KILN_MEM_DEVICE)
        stream = NULL; /* host backends finish before returning: ignored */
    if (opts != NULL && ((opts->n_enable > 0 && opts->enable == NULL) ||
                         (opts->n_disable > 0 && opts->disable == NULL)))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_execute: an option list is NULL but its count "
                         "is not 0");
    *stream_out = stream;
    return KILN_OK;
}

static kiln_status check_outputs(kiln__call *c, size_t n_outputs)
{
    const kiln_fusion *f = c->f;
    kiln_context *ctx = c->ctx;
    for (size_t j = 0; j < n_outputs; j++) {
        const kiln_tensor *t = c->outputs[j];
        if (t == NULL)
            continue;
        const kiln_ir_node *n = &f->nodes[f->outputs[j]];
        const int64_t *want = c->shapes[f->outputs[j]];
        if ((int)t->dtype != n->dtype)
            return kiln__err(KILN_ERR_DTYPE,
                             "output %zu: dtype %s, the fusion produces %s", j,
                             kiln_dtype_name(t->dtype) ? kiln_dtype_name(t->dtype)
                                                       : "(invalid)",
                             kiln_dtype_name((kiln_dtype)n->dtype));
        if (t->rank != n->rank)
            return kiln__err(KILN_ERR_SHAPE,
                             "output %zu: rank %d, the fusion produces rank %d",
                             j, t->rank, n->rank);
        for (int a = 0; a < n->rank; a++)
            if (t->sizes[a] != want[a])
                return kiln__err(KILN_ERR_SHAPE,
                                 "output %zu axis %d: size %lld, the fusion "
                                 "produces %lld for these inputs",
                                 j, a, (long long)t->sizes[a],
                                 (long long)want[a]);
        if (t->mem != (kiln_memory)ctx->be.memory)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "output %zu: %s memory, backend %s needs %s memory",
                             j, t->mem == KILN_MEM_HOST ? "host" : "device",
                             ctx->name,
                             ctx->be.memory == KILN_MEM_HOST ? "host" : "device");
        size_t es = kiln_dtype_size(t->dtype);
        if (kiln__numel_of(t->rank, t->sizes) > 0) {
            if (t->data == NULL)
                return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                                 "output %zu: data is NULL", j);
            if ((uintptr_t)t->data % es != 0)
                return kiln__err(KILN_ERR_ALIGNMENT,
                                 "output %zu: data %p is not aligned to its "
                                 "%zu-byte elements",
                                 j, t->data, es);
            if (!kiln__tensor_dense(t))
                return kiln__err(KILN_ERR_ALIGNMENT,
                                 "output %zu: must be dense row-major "
                                 "(strided or stride-0 outputs would write "
                                 "overlapping or scattered memory)",
                                 j);
        }
    }
    /* overlap: each output against every input and every other output */
    for (size_t j = 0; j < n_outputs; j++) {
        const kiln_tensor *t = c->outputs[j];
        int64_t tb = t ? span_bytes(t) : 0;
        if (tb == 0)
            continue;
        uintptr_t t0 = (uintptr_t)t->data, t1 = t0 + (uintptr_t)tb;
        for (size_t i = 0; i < f->n_inputs + j; i++) {
            const kiln_tensor *u =
                i < f->n_inputs ? c->inputs[i] : c->outputs[i - f->n_inputs];
            int64_t ub = u ? span_bytes(u) : 0;
            if (ub == 0)
                continue;
            uintptr_t u0 = (uintptr_t)u->data, u1 = u0 + (uintptr_t)ub;
            if (t0 < u1 && u0 < t1) {
                if (i < f->n_inputs)
                    return kiln__err(KILN_ERR_ALIGNMENT,
                                     "output %zu overlaps input %zu in memory",
                                     j, i);
                return kiln__err(KILN_ERR_ALIGNMENT,
                                 "output %zu overlaps output %zu in memory", j,
                                 i - f->n_inputs);
            }
        }
    }
    return KILN_OK;
}

/* The call's work (docs/runtime.md, "Limits"): every value's element
** count, plus M*N*K per matmul, against the context's max_work.  Runs
** before anything is planned, allocated or launched, so a huge domain from
** stride-0 views fails at once instead of running for hours.  A shape
** whose sizes multiply past int64 (zero axes counted as 1: they still
** become strides) is rejected too. */
static kiln_status check_work(const kiln__call *c)
{
    const kiln_fusion *f = c->f;
    uint64_t limit = c->ctx->cfg.max_work ? c->ctx->cfg.max_work
                                          : KILN_DEFAULT_MAX_WORK;
    int64_t work = 0, most = -1;
    uint32_t arg = 0;
    char sh[192];
    for (uint32_t v = 0; v < f->n_nodes; v++) {
        const kiln_ir_node *n = &f->nodes[v];
        const int64_t *sz = c->shapes[v];
        int64_t w, span = 1;
        int bad = kiln_ckd_numel(n->rank, sz, &w);
        for (int a = 0; a < n->rank && !bad; a++)
            bad = kiln_ckd_mul(span, sz[a] ? sz[a] : 1, &span);
        if (!bad && n->op == KILN_OP_MATMUL) { /* [M,K] x [K,N] */
            int64_t mnk;
            bad = kiln_ckd_mul(w, c->shapes[n->args[0]][1], &mnk) ||
                  kiln_ckd_add(w, mnk, &w);
        }
        if (bad || kiln_ckd_add(work, w, &work)) {
            kiln__shape_text(n->rank, sz, sh, sizeof sh);
            return kiln__err(KILN_ERR_LIMIT,
                             "kiln_execute: work limit: the element count of "
                             "%%%u (%s, shape %s) overflows int64",
                             v, kiln_op_name((kiln_op)n->op), sh);
        }
        if (w > most) {
            most = w;
            arg = v;
        }
    }
    if ((uint64_t)work > limit) {
        kiln__shape_text(f->nodes[arg].rank, c->shapes[arg], sh, sizeof sh);
        return kiln__err(KILN_ERR_LIMIT,
                         "kiln_execute: work limit: this call would do %lld "
                         "element operations, above the context's max_work "
                         "of %llu (the largest part: %%%u, %s, shape %s, "
                         "%lld)",
                         (long long)work, (unsigned long long)limit, arg,
                         kiln_op_name((kiln_op)f->nodes[arg].op), sh,
                         (long long)most);
    }
    return KILN_OK;
}

/* Validate the inputs and fill sig (flags in c->sig_bits, one byte per
** input and per output; the output flags are set by the caller). */
static kiln_status check_inputs(kiln__call *c, kiln__sig *sig)
{
    kiln_context *ctx = c->ctx;
    const kiln_fusion *f = c->f;
    memset(sig, 0, sizeof *sig);
    size_t nsig = (size_t)f->n_inputs + f->n_outputs;
    c->sig_bits = nsig <= sizeof c->sig_small ? c->sig_small
                                              : kiln__calloc(nsig, 1);
    if (c->sig_bits == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    memset(c->sig_bits, 0, nsig);
    sig->in = c->sig_bits;
    sig->out = c->sig_bits + f->n_inputs;
    for (uint32_t i = 0; i < f->n_inputs; i++) {
        const kiln_tensor *t = c->inputs[i];
        if (t->mem != (kiln_memory)ctx->be.memory)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "input %u: %s memory, backend %s needs %s memory",
                             i, t->mem == KILN_MEM_HOST ? "host" : "device",
                             ctx->name,
                             ctx->be.memory == KILN_MEM_HOST ? "host" : "device");
        size_t es = kiln_dtype_size(t->dtype);
        int64_t n = kiln__numel_of(t->rank, t->sizes);
        if (n > 0 && t->data == NULL)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT, "input %u: data is NULL", i);
        if ((uintptr_t)t->data % es != 0)
            return kiln__err(KILN_ERR_ALIGNMENT,
                             "input %u: data %p is not aligned to its %zu-byte "
                             "elements",
                             i, t->data, es);
        if (kiln__tensor_dense(t))
            c->sig_bits[i] |= KILN__SIG_CONTIG;
        if ((uintptr_t)t->data % 16 == 0)
            c->sig_bits[i] |= KILN__SIG_ALIGN16;
        if (span_bytes(t) / (int64_t)es > INT32_MAX)
            sig->index64 = 1;
    }
    for (uint32_t v = 0; v < f->n_nodes; v++) {
        if (kiln__numel_of(f->nodes[v].rank, c->shapes[v]) > INT32_MAX)
            sig->index64 = 1;
        int op = f->nodes[v].op;
        kiln_reduce r = kiln__op_desc((kiln_op)op)->reduce;
        if (r != KILN_REDUCE_MAX && r != KILN_REDUCE_MIN)
            continue;
        const int64_t *src = c->shapes[f->nodes[v].args[0]];
        for (int a = 0; a < f->nodes[f->nodes[v].args[0]].rank; a++)
            if ((f->nodes[v].axes & (1u << a)) && src[a] == 0)
                return kiln__err(KILN_ERR_SHAPE,
                                 "%s at %%%u reduces axis %d of size 0: the "
                                 "maximum/minimum of no elements is undefined",
                                 kiln_op_name((kiln_op)op), v, a);
    }
    return KILN_OK;
}

kiln_status kiln__exec_validate(kiln__call *c, size_t n_inputs,
                                size_t n_outputs, kiln__sig *sig)
{
    kiln_status st;
    if ((st = kiln__fusion_shapes(c->f, c->inputs, n_inputs, c->shapes)) !=
            KILN_OK ||
        (st = check_work(c)) != KILN_OK ||
        (st = check_inputs(c, sig)) != KILN_OK ||
        (st = check_outputs(c, n_outputs)) != KILN_OK)
        return st;
    for (size_t j = 0; j < n_outputs; j++)
        if (c->outputs[j] == NULL || (uintptr_t)c->outputs[j]->data % 16 == 0)
            c->sig_bits[c->f->n_inputs + j] |= KILN__SIG_ALIGN16;
    return KILN_OK;
}
