/*
** fallback.c -- the REFERENCE fallback (docs/runtime.md, "Fallback"), in
** one place: a backend that answers KILN_ERR_UNSUPPORTED, when it compiles
** a segment (cache.c asks kiln__fallback_applies and then
** kiln__fallback_compile) or when it launches one (kiln__launch_segment),
** has the segment run by the reference backend instead (host copies for
** device memory), unless disable=fallback, which turns it into
** KILN_ERR_FALLBACK_DISABLED (kiln__fallback_allowed at compile time,
** kiln__launch_segment at launch).
*/
#include <stdlib.h>
#include <string.h>

#include "execute.h"

int kiln__fallback_applies(const kiln_context *ctx, kiln_status st)
{
    return st == KILN_ERR_UNSUPPORTED && ctx->ref != NULL &&
           ctx->ref_state != ctx->be_state;
}

kiln_status kiln__fallback_compile(kiln_context *ctx,
                                   const kiln_ir_segment *seg,
                                   const kiln_kernel_options *ko,
                                   kiln__kernel *k, char *err, size_t cap)
{
    memset(&k->out, 0, sizeof k->out);
    kiln_status st = ctx->ref->compile(ctx->ref_state, seg, ko, &k->out, err,
                                       cap);
    k->be = ctx->ref;
    k->be_state = ctx->ref_state;
    k->reference = 1;
    return st;
}

/* ------------------------------------------------------- host staging */

/* With a stream (device backends only; NULL: nothing to do), wait for the
** work issued on it (stream NULL below: the backend's default stream). */
kiln_status kiln__sync_stream(kiln_context *ctx, void *stream, const char *when)
{
    char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
    kiln_status s = ctx->be.stream_sync(ctx->be_state, stream, err, sizeof err);
    if (s != KILN_OK)
        return kiln__err(s, "execute: stream synchronization %s: %s", when,
                         err[0] ? err : kiln_strerror(s));
    return KILN_OK;
}

/* Copy a device view's storage span to a fresh host block (outputs too:
** the span is copied so untouched bytes survive the copy back). */
static kiln_status stage_view(kiln_context *ctx, kiln_ir_tensor *t,
                              void **host, size_t *bytes)
{
    int64_t e;
    if (kiln_ckd_extent(t->rank, t->sizes, t->strides, &e) ||
        kiln_ckd_bytes(e, kiln_dtype_size((kiln_dtype)t->dtype), bytes))
        return kiln__err(KILN_ERR_LIMIT, "execute: a staged view's storage "
                                         "extent overflows");
    *host = kiln__malloc(*bytes ? *bytes : 1);
    if (*host == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
    if (*bytes > 0) {
        kiln_status s = ctx->be.mem_copy(ctx->be_state, *host, t->data, *bytes,
                                         1, err, sizeof err);
        if (s != KILN_OK) {
            kiln__free(*host);
            return kiln__err(s, "execute: device-to-host copy: %s",
                             kiln__be_str(err, sizeof err));
        }
    }
    return KILN_OK;
}

/* Run one segment on the reference backend with kernel k (compiled by
** ref), staging device memory through host copies. */
static kiln_status run_on_ref(kiln_context *ctx, void *ref_handle,
                              kiln_launch *L, kiln_ir_tensor *in,
                              kiln_ir_tensor *out)
{
    int device = ctx->be.memory == KILN_MEM_DEVICE;
    uint32_t nv = L->n_inputs + L->n_outputs;
    void **host = NULL;
    size_t *bytes = NULL;
    void **orig = NULL;
    kiln_status s = KILN_OK;
    char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
    /* the copies run on the backend's default stream: the caller's stream
    ** must have produced the inputs first */
    if (device && (s = kiln__sync_stream(ctx, L->stream, "before the reference "
                                   "fallback")) != KILN_OK)
        return s;
    if (device) {
        host = kiln__calloc(nv ? nv : 1, sizeof *host);
        bytes = kiln__calloc(nv ? nv : 1, sizeof *bytes);
        orig = kiln__calloc(nv ? nv : 1, sizeof *orig);
        if (!host || !bytes || !orig) {
            s = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
            goto done;
        }
        for (uint32_t k = 0; k < nv; k++) {
            kiln_ir_tensor *t = k < L->n_inputs ? &in[k] : &out[k - L->n_inputs];
            if ((s = stage_view(ctx, t, &host[k], &bytes[k])) != KILN_OK)
                goto done;
            orig[k] = t->data;
            t->data = host[k];
        }
    }
    s = ctx->ref->launch(ctx->ref_state, ref_handle, L, err, sizeof err);
    if (s != KILN_OK) {
        s = kiln__err(s, "reference backend: %s",
                      err[0] ? kiln__be_str(err, sizeof err) : kiln_strerror(s));
        goto done;
    }
    if (device) {
        for (uint32_t k = L->n_inputs; k < nv; k++) {
            if (bytes[k] == 0)
                continue;
            s = ctx->be.mem_copy(ctx->be_state, orig[k], host[k], bytes[k], 0,
                                 err, sizeof err);
            if (s != KILN_OK) {
                s = kiln__err(s, "execute: host-to-device copy: %s",
                              kiln__be_str(err, sizeof err));
                goto done;
            }
        }
        /* ...and the later segments on the caller's stream must see them */
        if (L->stream != NULL)
            s = kiln__sync_stream(ctx, NULL, "after the reference fallback");
    }
done:
    if (device && host != NULL) {
        for (uint32_t k = 0; k < nv; k++) {
            kiln_ir_tensor *t = k < L->n_inputs ? &in[k] : &out[k - L->n_inputs];
            if (orig && orig[k])
                t->data = orig[k];
            kiln__free(host[k]);
        }
    }
    kiln__free(host);
    kiln__free(bytes);
    kiln__free(orig);
    return s;
}

/* A one-off reference kernel for segment s (launch-time UNSUPPORTED). */
static kiln_status ref_once(kiln_context *ctx, const kiln__pseg *s,
                            const kiln__variant *v, kiln_launch *L,
                            kiln_ir_tensor *in, kiln_ir_tensor *out)
{
    kiln_ir_segment seg;
    kiln__pseg_ir(s, v, &seg);
    kiln_kernel_out ko;
    memset(&ko, 0, sizeof ko);
    char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
    kiln_status st = ctx->ref->compile(ctx->ref_state, &seg, &v->ko, &ko, err,
                                       sizeof err);
    if (st != KILN_OK)
        return kiln__err(st, "reference backend: %s",
                         err[0] ? kiln__be_str(err, sizeof err) : kiln_strerror(st));
    st = run_on_ref(ctx, ko.handle, L, in, out);
    if (ctx->ref->release != NULL)
        ctx->ref->release(ctx->ref_state, ko.handle);
    return st;
}

/* ----------------------------------------------------------- deciding */

kiln_status kiln__fallback_allowed(const kiln__call *c,
                                   const struct kiln_options *eo, uint32_t i)
{
    if (!c->kern[i]->reference || !kiln__opt_on(eo, KOPT_DIS_FALLBACK))
        return KILN_OK;
    return kiln__err(KILN_ERR_FALLBACK_DISABLED,
                     "segment %u (%s): backend %s cannot generate it "
                     "and disable=fallback forbids the reference path",
                     i, c->plan->segs[i].what, c->ctx->name);
}

kiln_status kiln__launch_segment(const kiln__call *c,
                                 const struct kiln_options *eo, uint32_t i,
                                 kiln_launch *L, kiln_ir_tensor *in,
                                 kiln_ir_tensor *out, uint8_t *reference)
{
    kiln_context *ctx = c->ctx;
    const kiln__pseg *s = &c->plan->segs[i];
    kiln__kernel *k = c->kern[i];
    *reference = (uint8_t)k->reference;
    if (k->reference)
        return run_on_ref(ctx, k->out.handle, L, in, out);
    char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
    kiln_status st = ctx->be.launch(ctx->be_state, k->out.handle, L, err,
                                    sizeof err);
    kiln__be_str(err, sizeof err);
    if (kiln__fallback_applies(ctx, st)) {
        if (kiln__opt_on(eo, KOPT_DIS_FALLBACK))
            return kiln__err(KILN_ERR_FALLBACK_DISABLED,
                             "segment %u (%s): backend %s cannot run it "
                             "(%s) and disable=fallback forbids the "
                             "reference path",
                             i, s->what, ctx->name, err);
        *reference = 2;
        L->gpu_ms = -1;
        return ref_once(ctx, s, c->var, L, in, out);
    }
    if (st != KILN_OK)
        return kiln__err(st, "segment %u (%s) on %s: %s", i, s->what,
                         ctx->name, err[0] ? err : kiln_strerror(st));
    return KILN_OK;
}
