/*
** execute.c -- kiln_execute: one call, in named steps (docs/runtime.md,
** "The execute path"), each a function here or in a file of execute.h:
**
**   1. kiln__exec_check_args   the arguments            (exec_check.c)
**   2. effective_options       the environment snapshot (a plain struct)
**                              with this call's enable/disable items
**                              applied to the copy, so they affect this
**                              call only                      (here)
**   3. call_init               the per-call record            (here)
**   4. kiln__exec_validate     shapes, work limit, inputs, outputs
**                                                       (exec_check.c)
**   5. find_plan               the plan key (keys.c), then the plan cache
**                              (cache.c) or the planner (plan.c)  (here)
**   6. get_kernels             each segment's kernel for the kernel-level
**                              options (cache.c), the fallback's
**                              disable=fallback check (fallback.c) (here)
**   7. alloc_outputs,          runtime outputs and one block for the
**      alloc_intermediates     intermediates                   (here)
**   8. launch_segments         every segment in order (fallback.c's
**                              kiln__launch_segment), then the info
**                              record (exec_info.c)            (here)
**   then the outputs are handed out, or everything is freed (call_free).
**
** Invariants:
**   - on failure no output tensor is allocated or handed out, caller
**     outputs may have been partially written only if a launch failed;
**   - the hit path makes no heap allocation when the fusion is small
**     (<= KILN__SMALL_NODES nodes, <= KILN__SMALL_VIEWS views per
**     segment), no intermediate is needed, the outputs are given and info
**     is NULL or already sized;
**   - backends are reached only through their descriptors (ctx->be,
**     ctx->ref; kiln_backend.h).
** kiln_execute_views and kiln_fusion_output_sizes, at the end, describe
** views as tensors and call the same path.
*/
#include <stdlib.h>
#include <string.h>

#include "execute.h"

#define SMALL_NODES KILN__SMALL_NODES
#define SMALL_VIEWS KILN__SMALL_VIEWS
#define SMALL_KEY KILN__SMALL_KEY
#define SMALL_SEGS KILN__SMALL_SEGS

typedef kiln__call call;

/* ------------------------------------------------------ segment views */

/* Row-major strides (zero axes counted as 1); check_work has bounded the
** product of every value's sizes. */
static void contig_strides(int rank, const int64_t *sizes, int64_t *st)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= sizes[i] ? sizes[i] : 1;
    }
}

/* The buffer of node v and its strides: for reading, an input node reads
** its input tensor; for writing (is_out), a fusion output writes its output
** tensor (even when it is an input or a constant: a copy); otherwise the
** intermediate. */
static void buffer_of(const call *c, int32_t v, int is_out, void **data,
                      int64_t *st)
{
    const kiln__plan *p = c->plan;
    const kiln_ir_node *n = &p->f_nodes[v];
    if (n->op == KILN_OP_INPUT && !is_out) {
        const kiln_tensor *t = c->inputs[n->io];
        *data = t->data;
        memcpy(st, t->strides, sizeof t->strides);
        return;
    }
    contig_strides(n->rank, c->shapes[v], st);
    if (p->out_of[v] >= 0) {
        *data = c->outs[p->out_of[v]]->data;
    } else {
        int32_t k = p->inter_of[v];
        *data = (char *)c->inter_mem + c->inter_off[k];
    }
}

/* Domain sizes of a part of segment s. */
static void part_sizes(const call *c, const kiln__pseg *s, uint8_t part,
                       int32_t own, int64_t *sz, int *rank)
{
    int32_t src = part == KILN__PART_OWN ? own : s->dom_node;
    *rank = c->plan->f_nodes[src].rank;
    memcpy(sz, c->shapes[src], sizeof(int64_t) * KILN_MAX_RANK);
    if (part == KILN__PART_K)
        for (int a = 0; a < *rank; a++)
            if (s->red_axes & (1u << a))
                sz[a] = 1;
}

static void make_view(const call *c, const kiln__pseg *s, int32_t v,
                      int is_out, uint8_t part, int32_t own,
                      const int8_t *map, kiln_ir_tensor *t)
{
    int64_t st[KILN_MAX_RANK];
    void *data;
    buffer_of(c, v, is_out, &data, st);
    memset(t, 0, sizeof *t);
    t->data = data;
    t->dtype = c->plan->f_nodes[v].dtype;
    part_sizes(c, s, part, own, t->sizes, &t->rank);
    for (int a = 0; a < c->plan->f_nodes[v].rank; a++)
        if (c->shapes[v][a] != 1 && map[a] >= 0)
            t->strides[(int)map[a]] = st[a];
}

/* ------------------------------------------------------------- steps */

/* Step 2: the context's environment snapshot with this call's items. */
static kiln_status effective_options(kiln_context *ctx,
                                     const kiln_exec_options *opts,
                                     struct kiln_options *out)
{
    struct kiln_options eo;
    pthread_mutex_lock(&ctx->env_mu);
    eo = ctx->env;
    pthread_mutex_unlock(&ctx->env_mu);
    kiln_status st;
    for (size_t i = 0; opts != NULL && i < opts->n_enable; i++) {
        if (opts->enable[i] == NULL)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "kiln_execute: enable[%zu] is NULL", i);
        if ((st = kiln__options_apply_item(&eo, KILN_SET_ENABLE,
                                           opts->enable[i], i)) != KILN_OK)
            return st;
    }
    for (size_t i = 0; opts != NULL && i < opts->n_disable; i++) {
        if (opts->disable[i] == NULL)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "kiln_execute: disable[%zu] is NULL", i);
        if ((st = kiln__options_apply_item(&eo, KILN_SET_DISABLE,
                                           opts->disable[i], i)) != KILN_OK)
            return st;
    }
    atomic_fetch_add(&ctx->executes, 1);
    if (kiln__opt_on(&eo, KOPT_DUMP_OPTIONS))
        kiln__dump_options(&eo, ctx->dump);
    *out = eo;
    return KILN_OK;
}

/* Step 3: the call record, with its inline storage in use. */
static kiln_status call_init(call *c, kiln_context *ctx, const kiln_fusion *f,
                             kiln_tensor *const *inputs,
                             kiln_tensor **outputs, void *stream)
{
    memset(c, 0, offsetof(call, outs_small));
    c->ctx = ctx;
    c->f = f;
    c->inputs = inputs;
    c->outputs = outputs;
    c->stream = stream;
    c->shapes = c->shapes_small;
    c->kern = NULL;
    c->hit = c->hit_small;
    c->inter_off = c->inter_off_small;
    c->allocated = c->allocated_small;
    if (f->n_nodes > SMALL_NODES) {
        c->shapes = kiln__malloc(f->n_nodes * sizeof *c->shapes);
        if (c->shapes == NULL) {
            c->shapes = c->shapes_small;
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
        }
    }
    return KILN_OK;
}

/* Step 5: the plan for this call's key, from the cache or built. */
static kiln_status find_plan(call *c, const struct kiln_options *eo,
                             const kiln__sig *sig)
{
    kiln_context *ctx = c->ctx;
    const kiln_fusion *f = c->f;
    kiln_status st = KILN_OK;
    int reuse_off = kiln__opt_on(eo, KOPT_DIS_KERNEL_REUSE);
    size_t nk = kiln__plan_key_len(f, reuse_off);
    uint64_t key_small[SMALL_KEY], *key = key_small;
    if (nk > SMALL_KEY && (key = kiln__malloc(nk * sizeof *key)) == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    nk = kiln__plan_key(f, c->inputs, sig, eo, reuse_off, key);
    uint64_t h = kiln__key_hash(key, nk);
    c->plan_hit = 1;
    c->plan = kiln__plan_find(&ctx->caches, h, key, nk, f);
    if (c->plan == NULL) {
        c->plan_hit = 0;
        kiln__plan *np = NULL;
        st = kiln__plan_build(f, eo, (const int64_t(*)[KILN_MAX_RANK])c->shapes,
                              sig, &np);
        if (st == KILN_OK) {
            np->hash = h;
            np->n_key = nk;
            np->key = kiln__malloc(nk * sizeof *key);
            if (np->key == NULL) {
                kiln__plan_free(np);
                st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
            } else {
                memcpy(np->key, key, nk * sizeof *key);
                c->plan = kiln__plan_insert(&ctx->caches, np);
            }
        }
        if (st == KILN_OK && kiln__opt_on(eo, KOPT_DUMP_FUSION_IR))
            kiln__dump_plan(f, c->plan, ctx->dump);
    }
    if (key != key_small)
        kiln__free(key);
    return st;
}

/* Step 6: every segment's kernel under the call's kernel-level options. */
static kiln_status get_kernels(call *c, const struct kiln_options *eo)
{
    kiln_context *ctx = c->ctx;
    const kiln__plan *p = c->plan;
    kiln_status st;
    if ((st = kiln__variant_get(ctx, eo, &c->var)) != KILN_OK)
        return st;
    if (p->n_segs > SMALL_SEGS) {
        c->kern = kiln__calloc(p->n_segs, sizeof *c->kern);
        c->hit = kiln__calloc(p->n_segs, sizeof *c->hit);
        if (c->kern == NULL || c->hit == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    } else {
        c->kern = c->kern_small;
        memset(c->kern_small, 0, p->n_segs * sizeof *c->kern_small);
    }
    int nocache = kiln__opt_on(eo, KOPT_DIS_NVRTC_CACHING);
    int use_db = kiln__opt_on(eo, KOPT_EN_KERNEL_DB);
    for (uint32_t i = 0; i < p->n_segs; i++)
        if ((st = kiln__kernel_get(ctx, &p->segs[i], c->var, nocache, use_db,
                                   &c->kern[i], &c->hit[i])) != KILN_OK ||
            (st = kiln__fallback_allowed(c, eo, i)) != KILN_OK)
            return st;
    kiln__dump_kernels(c, eo, ctx->dump);
    return KILN_OK;
}

/* Step 7a: the outputs the caller left NULL. */
static kiln_status alloc_outputs(call *c, size_t n_outputs)
{
    kiln_context *ctx = c->ctx;
    const kiln_fusion *f = c->f;
    kiln_tensor **outputs = c->outputs;
    kiln_status st;
    if (n_outputs > SMALL_VIEWS) {
        c->outs = kiln__calloc(n_outputs, sizeof *c->outs);
        c->allocated = kiln__calloc(n_outputs, 1);
        if (c->outs == NULL || c->allocated == NULL) {
            kiln__free(c->outs);
            c->outs = NULL;
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
        }
    } else {
        c->outs = c->outs_small;
    }
    for (size_t j = 0; j < n_outputs; j++) {
        c->allocated[j] = 0;
        c->outs[j] = outputs[j];
    }
    for (size_t j = 0; j < n_outputs; j++) {
        if (outputs[j] != NULL)
            continue;
        const kiln_ir_node *n = &f->nodes[f->outputs[j]];
        st = kiln_tensor_create(ctx, (kiln_dtype)n->dtype, n->rank,
                                c->shapes[f->outputs[j]], NULL,
                                (kiln_memory)ctx->be.memory, NULL, &c->outs[j]);
        if (st != KILN_OK)
            return st;
        c->allocated[j] = 1;
    }
    return KILN_OK;
}

/* Step 7b: the intermediates, one block of 64-byte aligned pieces. */
static kiln_status alloc_intermediates(call *c)
{
    kiln_context *ctx = c->ctx;
    const kiln__plan *p = c->plan;
    kiln_status st;
    if (p->n_inter == 0)
        return KILN_OK;
    if (p->n_inter > SMALL_VIEWS &&
        (c->inter_off = kiln__malloc(p->n_inter * sizeof *c->inter_off)) == NULL) {
        c->inter_off = c->inter_off_small;
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    }
    int64_t total = 0;
    for (uint32_t k = 0; k < p->n_inter; k++) {
        int32_t v = p->inter_node[k];
        c->inter_off[k] = total;
        int64_t b;
        if (__builtin_mul_overflow(
                kiln__numel_of(p->f_nodes[v].rank, c->shapes[v]),
                (int64_t)kiln_dtype_size((kiln_dtype)p->f_nodes[v].dtype), &b) ||
            b > INT64_MAX / 4 || total > INT64_MAX / 4)
            return kiln__err(KILN_ERR_LIMIT,
                             "execute: the intermediate %%%d is too large to "
                             "allocate",
                             v);
        total += (b + 63) & ~(int64_t)63;
    }
    if (ctx->be.memory == KILN_MEM_DEVICE) {
        char err[KILN_ERR_MSG_CAP];
        err[0] = '\0';
        st = ctx->be.mem_alloc(ctx->be_state, (size_t)(total ? total : 64),
                               &c->inter_raw, err, sizeof err);
        if (st != KILN_OK) {
            c->inter_raw = NULL;
            return kiln__err(st, "execute: intermediate allocation: %s",
                             kiln__be_str(err, sizeof err));
        }
        c->inter_mem = c->inter_raw; /* device allocations are aligned */
    } else {
        c->inter_raw = kiln__malloc((size_t)total + 64);
        if (c->inter_raw == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
        c->inter_mem = (void *)(((uintptr_t)c->inter_raw + 63) & ~(uintptr_t)63);
    }
    return KILN_OK;
}

/* Step 8, one segment: its views, its launch record, the launch. */
static kiln_status launch_one(const call *c, const struct kiln_options *eo,
                              uint32_t i, uint8_t *reference, double *gpu_ms)
{
    const kiln__pseg *s = &c->plan->segs[i];
    int profile = kiln__opt_on(eo, KOPT_EN_KERNEL_PROFILE);
    kiln_ir_tensor in_small[SMALL_VIEWS], out_small[SMALL_VIEWS];
    kiln_ir_tensor *in = in_small, *out = out_small;
    if (s->n_leaves > SMALL_VIEWS || s->n_outs > SMALL_VIEWS) {
        in = kiln__calloc(s->n_leaves + 1, sizeof *in);
        out = kiln__calloc(s->n_outs + 1, sizeof *out);
        if (in == NULL || out == NULL) {
            kiln__free(in);
            kiln__free(out);
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
        }
    }
    for (uint32_t q = 0; q < s->n_leaves; q++) {
        const kiln__leaf *l = &s->leaves[q];
        make_view(c, s, l->node, 0, l->part, l->own, l->map, &in[q]);
    }
    for (uint32_t q = 0; q < s->n_outs; q++) {
        const kiln__sout *o = &s->outs[q];
        make_view(c, s, o->node, 1, o->part, -1, o->map, &out[q]);
    }
    kiln_launch L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    int dr;
    part_sizes(c, s, KILN__PART_D, -1, L.domain, &dr);
    L.rank = dr;
    L.k = s->k_node >= 0 ? c->shapes[s->k_node][1] : 0;
    L.inputs = in;
    L.n_inputs = s->n_leaves;
    L.outputs = out;
    L.n_outputs = s->n_outs;
    L.profile = profile;
    L.gpu_ms = -1;
    L.stream = c->stream;
    if (kiln__opt_on(eo, KOPT_DUMP_LAUNCH_PARAMS))
        kiln__dump_launch(c, i, &L, c->ctx->dump);
    kiln_status st = kiln__launch_segment(c, eo, i, &L, in, out, reference);
    *gpu_ms = profile ? L.gpu_ms : -1;
    if (in != in_small) kiln__free(in);
    if (out != out_small) kiln__free(out);
    return st;
}

/* Step 8: every segment in order, then the info record. */
static kiln_status launch_segments(call *c, const struct kiln_options *eo,
                                   kiln_exec_info *info)
{
    const kiln__plan *p = c->plan;
    kiln_status st = KILN_OK;
    uint8_t reference_small[SMALL_SEGS], *reference = reference_small;
    double gpu_small[SMALL_SEGS], *gpu_ms = gpu_small;
    if (p->n_segs > SMALL_SEGS) {
        reference = kiln__calloc(p->n_segs, 1);
        gpu_ms = kiln__calloc(p->n_segs, sizeof *gpu_ms);
        if (reference == NULL || gpu_ms == NULL) {
            kiln__free(reference);
            kiln__free(gpu_ms);
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
        }
    }
    for (uint32_t i = 0; i < p->n_segs && st == KILN_OK; i++)
        st = launch_one(c, eo, i, &reference[i], &gpu_ms[i]);
    /* the intermediates are freed next: the stream must be done with them */
    if (st == KILN_OK && c->stream != NULL && c->inter_raw != NULL)
        st = kiln__sync_stream(c->ctx, c->stream,
                               "before freeing the intermediates");
    if (st == KILN_OK && info != NULL)
        st = kiln__exec_info_fill(info, eo, c, reference, gpu_ms);
    if (reference != reference_small) kiln__free(reference);
    if (gpu_ms != gpu_small) kiln__free(gpu_ms);
    return st;
}

static void call_free(call *c, int failed, size_t n_outputs)
{
    kiln_context *ctx = c->ctx;
    /* a failed call may have queued work on the caller's stream that
    ** writes the memory freed below: let it finish (best effort) */
    if (failed && c->stream != NULL && c->plan != NULL) {
        char err[KILN_ERR_MSG_CAP]; /* not kiln__err: the call's own error stays */
        (void)ctx->be.stream_sync(ctx->be_state, c->stream, err, sizeof err);
    }
    if (c->kern != NULL) {
        for (uint32_t i = 0; c->plan != NULL && i < c->plan->n_segs; i++)
            kiln__kernel_release(c->kern[i]);
        if (c->kern != c->kern_small)
            kiln__free(c->kern);
    }
    if (c->hit != c->hit_small)
        kiln__free(c->hit);
    if (c->inter_raw != NULL) {
        if (ctx->be.memory == KILN_MEM_DEVICE)
            ctx->be.mem_free(ctx->be_state, c->inter_raw);
        else
            kiln__free(c->inter_raw);
    }
    if (c->inter_off != c->inter_off_small)
        kiln__free(c->inter_off);
    if (c->outs != NULL) {
        for (size_t j = 0; j < n_outputs; j++)
            if (failed && c->allocated[j])
                kiln_tensor_destroy(c->outs[j]);
        if (c->outs != c->outs_small)
            kiln__free(c->outs);
    }
    if (c->allocated != c->allocated_small)
        kiln__free(c->allocated);
    kiln__plan_release(c->plan);
    if (c->shapes != c->shapes_small)
        kiln__free(c->shapes);
    if (c->sig_bits != c->sig_small)
        kiln__free(c->sig_bits);
}

/* ---------------------------------------------------------- execute */

kiln_status kiln_execute(kiln_context *ctx, const kiln_fusion *f,
                         kiln_tensor *const *inputs, size_t n_inputs,
                         kiln_tensor **outputs, size_t n_outputs,
                         const kiln_exec_options *opts, kiln_exec_info *info)
{
    void *stream;
    struct kiln_options eo;
    call c;
    kiln__sig sig;
    kiln_status st;
    if ((st = kiln__exec_check_args(ctx, f, outputs, n_outputs, opts,
                                    &stream)) != KILN_OK ||
        (st = effective_options(ctx, opts, &eo)) != KILN_OK ||
        (st = call_init(&c, ctx, f, inputs, outputs, stream)) != KILN_OK)
        return st;
    if ((st = kiln__exec_validate(&c, n_inputs, n_outputs, &sig)) != KILN_OK ||
        (st = find_plan(&c, &eo, &sig)) != KILN_OK ||
        (st = get_kernels(&c, &eo)) != KILN_OK ||
        (st = alloc_outputs(&c, n_outputs)) != KILN_OK ||
        (st = alloc_intermediates(&c)) != KILN_OK ||
        (st = launch_segments(&c, &eo, info)) != KILN_OK) {
        call_free(&c, 1, n_outputs);
        if (info != NULL)
            kiln__exec_info_invalidate(info);
        return st;
    }
    for (size_t j = 0; j < n_outputs; j++)
        outputs[j] = c.outs[j];
    call_free(&c, 0, n_outputs);
    kiln__err_clear();
    return KILN_OK;
}

/* ---------------------------------------------------------------- views */

/* Tensors for views[n] ("input"/"output" names them in errors), into
** ts[n] and ptrs[n]. */
static kiln_status views_to_tensors(const kiln_view *views, size_t n,
                                    const char *what, kiln_tensor *ts,
                                    kiln_tensor **ptrs)
{
    if (n > 0 && views == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "%ss is NULL", what);
    for (size_t i = 0; i < n; i++) {
        const kiln_view *v = &views[i];
        char who[64];
        snprintf(who, sizeof who, "%s %zu", what, i);
        size_t es = kiln_dtype_size((kiln_dtype)v->dtype);
        int64_t st[KILN_MAX_RANK];
        for (int a = 0; es > 0 && a < v->rank && a < KILN_MAX_RANK; a++) {
            int64_t b = v->byte_strides[a];
            if (v->sizes[a] <= 1) {
                st[a] = 0; /* never stepped */
            } else if (b < 0) {
                return kiln__err(KILN_ERR_SHAPE,
                                 "%s: axis %d has a stride of %lld bytes: "
                                 "strides must not be negative",
                                 who, a, (long long)b);
            } else if (b % (int64_t)es != 0) {
                return kiln__err(KILN_ERR_ALIGNMENT,
                                 "%s: axis %d has a stride of %lld bytes, not "
                                 "a multiple of the %zu-byte element",
                                 who, a, (long long)b, es);
            } else {
                st[a] = b / (int64_t)es;
            }
        }
        int64_t bytes;
        kiln_status s = kiln__tensor_describe(&ts[i], (kiln_dtype)v->dtype,
                                              v->rank, v->sizes, st,
                                              (kiln_memory)v->memory, who,
                                              &bytes);
        if (s != KILN_OK)
            return s;
        ts[i].data = v->data;
        ptrs[i] = &ts[i];
    }
    return KILN_OK;
}

/* Room for n tensors and their pointers: the inline arrays when they hold
** them, else one allocation (*heap). */
static kiln_status view_room(size_t n, kiln_tensor *small_t,
                             kiln_tensor **small_p, kiln_tensor **ts,
                             kiln_tensor ***ps, void **heap)
{
    *ts = small_t;
    *ps = small_p;
    *heap = NULL;
    if (n <= SMALL_VIEWS)
        return KILN_OK;
    *heap = kiln__malloc(n * (sizeof **ts + sizeof **ps));
    if (*heap == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    *ts = *heap;
    *ps = (kiln_tensor **)(*ts + n);
    return KILN_OK;
}

kiln_status kiln_execute_views(kiln_context *ctx, const kiln_fusion *f,
                               const kiln_view *inputs, size_t n_inputs,
                               const kiln_view *outputs, size_t n_outputs,
                               const kiln_exec_options *opts,
                               kiln_exec_info *info)
{
    kiln_tensor it[SMALL_VIEWS], ot[SMALL_VIEWS], *ip[SMALL_VIEWS],
        *op[SMALL_VIEWS];
    kiln_tensor *its, *ots, **ips, **ops;
    void *ih = NULL, *oh = NULL;
    kiln_status st = view_room(n_inputs, it, ip, &its, &ips, &ih);
    if (st == KILN_OK)
        st = view_room(n_outputs, ot, op, &ots, &ops, &oh);
    if (st == KILN_OK)
        st = views_to_tensors(inputs, n_inputs, "input", its, ips);
    if (st == KILN_OK)
        st = views_to_tensors(outputs, n_outputs, "output", ots, ops);
    if (st == KILN_OK)
        st = kiln_execute(ctx, f, ips, n_inputs, ops, n_outputs, opts, info);
    kiln__free(ih);
    kiln__free(oh);
    return st;
}

kiln_status kiln_fusion_output_sizes(const kiln_fusion *f,
                                     const kiln_view *inputs, size_t n_inputs,
                                     int64_t *sizes, size_t cap)
{
    if (f == NULL || sizes == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_fusion_output_sizes: %s is NULL",
                         f ? "sizes" : "fusion");
    if (f->finalized && cap < (size_t)f->n_outputs * KILN_MAX_RANK)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_fusion_output_sizes: cap %zu is less than %u "
                         "outputs x KILN_MAX_RANK",
                         cap, f->n_outputs);
    kiln_tensor it[SMALL_VIEWS], *ip[SMALL_VIEWS], *its, **ips;
    void *ih = NULL;
    int64_t small[SMALL_NODES][KILN_MAX_RANK], (*shapes)[KILN_MAX_RANK] = small;
    kiln_status st = view_room(n_inputs, it, ip, &its, &ips, &ih);
    if (st == KILN_OK)
        st = views_to_tensors(inputs, n_inputs, "input", its, ips);
    if (st == KILN_OK && f->n_nodes > SMALL_NODES &&
        (shapes = kiln__malloc(f->n_nodes * sizeof *shapes)) == NULL)
        st = kiln__err(KILN_ERR_NO_MEMORY, "kiln_fusion_output_sizes: out of memory");
    if (st == KILN_OK)
        st = kiln__fusion_shapes(f, ips, n_inputs, shapes);
    if (st == KILN_OK) {
        for (uint32_t j = 0; j < f->n_outputs; j++)
            memcpy(&sizes[(size_t)j * KILN_MAX_RANK], shapes[f->outputs[j]],
                   sizeof shapes[0]);
        kiln__err_clear();
    }
    if (shapes != small && shapes != NULL)
        kiln__free(shapes);
    kiln__free(ih);
    return st;
}
