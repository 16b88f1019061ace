/*
** execute.c -- kiln_execute and the execute info record.
**
** One call: copy the environment snapshot (a plain struct) and apply this
** call's enable/disable items to the copy (nothing global changes, so the
** items affect this call only); validate inputs and outputs; build the
** plan key (fusion hash + input signature + plan-level options) and find
** or build the plan; resolve each segment's kernel for the kernel-level
** options (cache.c); allocate runtime outputs and intermediates; launch
** the segments in order; fill the info record.
**
** Invariants:
**   - on failure no output tensor is allocated or handed out, caller
**     outputs may have been partially written only if a launch failed;
**   - the hit path makes no heap allocation when the fusion is small
**     (<= SMALL_NODES nodes, <= SMALL_VIEWS views per segment), no
**     intermediate is needed, the outputs are given and info is NULL or
**     already sized;
**   - REFERENCE fallback: a backend that answers KILN_ERR_UNSUPPORTED (at
**     compile, cache.c, or at launch, here) has the segment run by the
**     reference backend (host copies for device memory), unless
**     disable=fallback, which turns it into KILN_ERR_FALLBACK_DISABLED.
*/
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define SMALL_NODES 32
#define SMALL_VIEWS 16
#define SMALL_KEY 256
#define SMALL_SEGS 16

/* ---------------------------------------------------------- info record */

typedef struct seg_text {
    char flags[256];
    char path[16];
} seg_text;

struct kiln_exec_info {
    int valid;
    struct kiln_options eo;
    kiln_buf canon;
    char backend[64];
    uint64_t plan_id;
    int plan_hit;
    size_t n_segs, cap_segs;
    kiln_segment_info *segs;
    seg_text *text;
};

kiln_status kiln_exec_info_create(kiln_exec_info **out)
{
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_create: out is NULL");
    kiln_exec_info *i = kiln__calloc(1, sizeof *i);
    if (i == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_exec_info_create: out of memory");
    *out = i;
    kiln__err_clear();
    return KILN_OK;
}

void kiln_exec_info_destroy(kiln_exec_info *info)
{
    if (info == NULL)
        return;
    kiln__buf_free(&info->canon);
    kiln__free(info->segs);
    kiln__free(info->text);
    kiln__free(info);
}

const char *kiln_exec_info_options(const kiln_exec_info *info)
{
    if (info == NULL || !info->valid || info->canon.data == NULL)
        return "";
    return info->canon.data;
}

kiln_status kiln_exec_info_plan(const kiln_exec_info *info, uint64_t *plan_id,
                                int *plan_hit)
{
    if (info == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_exec_info_plan: info is NULL");
    if (!info->valid)
        return kiln__err(KILN_ERR_STATE,
                         "kiln_exec_info_plan: no successful execute filled this record");
    if (plan_id) *plan_id = info->plan_id;
    if (plan_hit) *plan_hit = info->plan_hit;
    return KILN_OK;
}

size_t kiln_exec_info_segment_count(const kiln_exec_info *info)
{
    return info != NULL && info->valid ? info->n_segs : 0;
}

kiln_status kiln_exec_info_segment(const kiln_exec_info *info, size_t i,
                                   kiln_segment_info *out)
{
    if (info == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_segment: NULL argument");
    /* callers built before kernel_db was appended pass the older size */
    if (out->struct_size < offsetof(kiln_segment_info, kernel_db))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_segment: out->struct_size %zu is too "
                         "small (set it to sizeof(kiln_segment_info))",
                         out->struct_size);
    if (!info->valid || i >= info->n_segs)
        return kiln__err(KILN_ERR_NOT_FOUND,
                         "kiln_exec_info_segment: segment %zu does not exist "
                         "(the record has %zu)",
                         i, info->valid ? info->n_segs : (size_t)0);
    size_t n = out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
    memcpy(out, &info->segs[i], n);
    out->struct_size = n;
    return KILN_OK;
}

const char *kiln_db_outcome_name(kiln_db_outcome o)
{
    static const char *const names[] = {"none",   "hit",     "miss",
                                        "stored", "corrupt", "refused"};
    return (unsigned)o < sizeof names / sizeof names[0] ? names[o] : "?";
}

static const char *kind_name(kiln_segment_kind k)
{
    return k == KILN_SEG_GENERATED  ? "generated"
           : k == KILN_SEG_FALLBACK ? "fallback"
                                    : "reference";
}

static void json_str(kiln_buf *b, const char *s)
{
    kiln__buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            kiln__buf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            kiln__buf_printf(b, "\\u%04x", *p);
        else
            kiln__buf_add(b, (const char *)p, 1);
    }
    kiln__buf_puts(b, "\"");
}

kiln_status kiln_exec_info_json(const kiln_exec_info *info, char **out)
{
    if (info == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_json: NULL argument");
    if (!info->valid)
        return kiln__err(KILN_ERR_STATE,
                         "kiln_exec_info_json: no successful execute filled this record");
    kiln_buf b = {0};
    kiln__buf_puts(&b, "{\"backend\": ");
    json_str(&b, info->backend);
    kiln__buf_puts(&b, ", \"options\": ");
    json_str(&b, kiln_exec_info_options(info));
    static const struct { const char *name; kiln_level level; } lv[] = {
        {"plan", KILN_LEVEL_PLAN}, {"kernel", KILN_LEVEL_KERNEL},
        {"none", KILN_LEVEL_NONE}};
    kiln__buf_puts(&b, ", \"levels\": {");
    for (size_t k = 0; k < 3; k++) {
        kiln_buf t = {0};
        kiln__options_canonical_buf(&info->eo, lv[k].level, &t);
        kiln__buf_printf(&b, "%s\"%s\": ", k ? ", " : "", lv[k].name);
        json_str(&b, t.data ? t.data : "");
        if (t.failed)
            b.failed = 1;
        kiln__buf_free(&t);
    }
    kiln__buf_printf(&b, "}, \"plan_id\": \"%016llx\", \"plan_hit\": %s, "
                         "\"segments\": [",
                     (unsigned long long)info->plan_id,
                     info->plan_hit ? "true" : "false");
    for (size_t i = 0; i < info->n_segs; i++) {
        const kiln_segment_info *s = &info->segs[i];
        kiln__buf_printf(&b, "%s{\"kind\": \"%s\", \"what\": \"%s\", "
                             "\"kernel_id\": \"%016llx\", \"hit\": %s, "
                             "\"flags\": ",
                         i ? ", " : "", kind_name(s->kind), s->what,
                         (unsigned long long)s->kernel_id,
                         s->kernel_hit ? "true" : "false");
        json_str(&b, s->flags);
        kiln__buf_puts(&b, ", \"path\": ");
        json_str(&b, s->path);
        kiln__buf_printf(&b, ", \"device\": %d, \"gpu_ms\": %.6g, "
                             "\"kernel_db\": \"%s\"}",
                         s->device, s->gpu_ms, kiln_db_outcome_name(s->kernel_db));
    }
    kiln__buf_puts(&b, "]}");
    if (b.failed) {
        kiln__buf_free(&b);
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_exec_info_json: out of memory");
    }
    *out = b.data;
    return KILN_OK;
}

/* ------------------------------------------------------------ helpers */

static uint64_t mix_words(const uint64_t *w, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    return h;
}

/* Storage span of a tensor in bytes (0 when empty). */
static int64_t span_bytes(const kiln_tensor *t)
{
    int64_t e = 0;
    kiln_ckd_extent(t->rank, t->sizes, t->strides, &e); /* checked at create */
    return e * (int64_t)kiln_dtype_size(t->dtype);
}

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

/* Element count; INT64_MAX when it overflows (stride-0 inputs can describe
** domains far larger than memory; check_work rejects those first). */
static int64_t numel_of(int rank, const int64_t *sizes)
{
    int64_t n;
    return kiln_ckd_numel(rank, sizes, &n) ? INT64_MAX : n;
}

/* Everything one call needs, so that failure paths can free in one place. */
typedef struct call {
    kiln_context *ctx;
    const kiln_fusion *f;
    kiln_tensor *const *inputs;
    kiln_tensor **outputs;   /* caller's array */
    kiln_tensor **outs;      /* effective outputs (given or allocated) */
    uint8_t *allocated;
    int64_t (*shapes)[KILN_MAX_RANK];
    kiln__plan *plan;
    kiln__kernel **kern;
    int *hit;
    void *inter_raw, *inter_mem; /* one block for all intermediates */
    int64_t *inter_off;
    void *stream;            /* kiln_exec_options.stream (device backends) */
    uint8_t *sig_bits;       /* kiln__sig flags: inputs, then outputs */
    /* small inline storage (the hit path allocates nothing) */
    kiln_tensor *outs_small[SMALL_VIEWS];
    uint8_t allocated_small[SMALL_VIEWS];
    kiln__kernel *kern_small[SMALL_SEGS];
    int hit_small[SMALL_SEGS];
    int64_t inter_off_small[SMALL_VIEWS];
    uint8_t sig_small[2 * SMALL_VIEWS];
    int64_t shapes_small[SMALL_NODES][KILN_MAX_RANK];
} call;

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

/* ------------------------------------------------------------ dumping */

static void dump_view(FILE *o, const char *what, uint32_t k,
                      const kiln_ir_tensor *t)
{
    fprintf(o, "kiln:     %s%u %s sizes [", what, k,
            kiln_dtype_name((kiln_dtype)t->dtype));
    for (int a = 0; a < t->rank; a++)
        fprintf(o, "%s%lld", a ? "," : "", (long long)t->sizes[a]);
    fprintf(o, "] strides [");
    for (int a = 0; a < t->rank; a++)
        fprintf(o, "%s%lld", a ? "," : "", (long long)t->strides[a]);
    fprintf(o, "]\n");
}

/* The backend's source for seg under ko (kernel_source, an optional ABI
** function; kiln__malloc'd), or NULL when it gives none. */
static char *kernel_source(kiln_context *ctx, const kiln_ir_segment *seg,
                           const kiln_kernel_options *ko)
{
    char err[KILN_ERR_MSG_CAP]; /* unread: a dump has no error to report */
    size_t size = 0;
    if (ctx->be.kernel_source(ctx->be_state, seg, ko, NULL, 0, &size, err,
                              sizeof err) != KILN_ERR_LIMIT || size == 0)
        return NULL;
    char *src = kiln__malloc(size);
    if (src != NULL &&
        (ctx->be.kernel_source(ctx->be_state, seg, ko, src, size, &size, err,
                               sizeof err) != KILN_OK ||
         !kiln__be_terminated(src, size))) {
        kiln__free(src);
        src = NULL;
    }
    return src;
}

/* KILN_DUMP=cuda_kernel: print the source of every kernel this call
** compiled (cache misses) on a backend that provides kernel_source (both
** CUDA backends do).  The backend generates it from the same segment IR
** it compiled, so it is what the backend compiled. */
static void dump_cuda_kernels(kiln_context *ctx, const kiln__plan *p,
                              const kiln__variant *var, const call *c,
                              FILE *dump)
{
    if (ctx->be.kernel_source == NULL)
        return;
    for (uint32_t i = 0; i < p->n_segs; i++) {
        if (c->hit[i] || c->kern[i]->reference)
            continue;
        kiln_ir_segment seg;
        kiln__pseg_ir(&p->segs[i], var, &seg);
        char *src = kernel_source(ctx, &seg, &var->ko);
        if (src == NULL)
            continue; /* the backend compiled it, so this cannot fail */
        flockfile(dump);
        fprintf(dump, "kiln: cuda_kernel: segment %u (%s) kernel %016llx\n%s\n",
                i, p->segs[i].what, (unsigned long long)c->kern[i]->hash, src);
        funlockfile(dump);
        kiln__free(src);
    }
}

/* enable=warn_register_spill(N): for every kernel this call compiled, warn
** when the backend reports more than N bytes of local memory per thread
** (spills and stack).  Backends without local_bytes() report nothing. */
static void warn_spills(const kiln__plan *p, const call *c, uint64_t limit,
                        FILE *dump)
{
    for (uint32_t i = 0; i < p->n_segs; i++) {
        const kiln__kernel *k = c->kern[i];
        if (c->hit[i] || k->be == NULL || k->be->local_bytes == NULL)
            continue;
        int64_t n = k->be->local_bytes(k->be_state, k->out.handle);
        if (n >= 0 && (uint64_t)n > limit)
            fprintf(dump,
                    "kiln: warning: segment %u (%s) kernel %016llx uses %lld "
                    "bytes of local memory per thread (register spills), "
                    "more than warn_register_spill(%llu)\n",
                    i, p->segs[i].what, (unsigned long long)k->hash,
                    (long long)n, (unsigned long long)limit);
    }
}

/* ------------------------------------------------------- host staging */

/* With a stream (device backends only; NULL: nothing to do), wait for the
** work issued on it (stream NULL below: the backend's default stream). */
static kiln_status sync_stream(kiln_context *ctx, void *stream, const char *when)
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
    if (device && (s = sync_stream(ctx, L->stream, "before the reference "
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
            s = sync_stream(ctx, NULL, "after the reference fallback");
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

/* ------------------------------------------------------------ execute */

static kiln_status check_outputs(call *c, size_t n_outputs)
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
        if (numel_of(t->rank, t->sizes) > 0) {
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
static kiln_status check_work(const call *c)
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
static kiln_status check_inputs(call *c, kiln__sig *sig)
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
        int64_t n = numel_of(t->rank, t->sizes);
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
        if (numel_of(f->nodes[v].rank, c->shapes[v]) > INT32_MAX)
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

/* The plan key words; returns the count (key must hold SMALL_KEY or be
** sized by key_len()). */
static size_t key_len(const kiln_fusion *f, int reuse_off)
{
    return 6 + f->n_inputs + (f->n_outputs + 63) / 64 + 2 + KOPT_COUNT / 2 +
           (reuse_off ? (size_t)f->n_inputs * KILN_MAX_RANK : 0);
}

static size_t build_key(const call *c, const kiln__sig *sig,
                        const struct kiln_options *eo, int reuse_off,
                        uint64_t *key)
{
    const kiln_fusion *f = c->f;
    size_t k = 0;
    key[k++] = f->hash;
    key[k++] = f->n_inputs | ((uint64_t)f->n_outputs << 32);
    for (uint32_t i = 0; i < f->n_inputs; i++) {
        const kiln_tensor *t = c->inputs[i];
        uint64_t ones = 0;
        for (int a = 0; a < t->rank; a++)
            if (t->sizes[a] == 1)
                ones |= 1u << a;
        uint64_t w = (uint64_t)t->dtype | ((uint64_t)t->rank << 8) | (ones << 16);
        w |= (uint64_t)sig->in[i] << 32;
        key[k++] = w;
    }
    for (uint32_t j = 0; j < f->n_outputs; j += 64) {
        uint64_t w = 0;
        for (uint32_t q = j; q < f->n_outputs && q < j + 64; q++)
            if (sig->out[q] & KILN__SIG_ALIGN16)
                w |= 1ull << (q - j);
        key[k++] = w;
    }
    key[k++] = (uint64_t)sig->index64;
    /* plan-level options: on bits, list bits, and the arguments of those
    ** that are on (only plan-level ones: arguments of others never count) */
    uint64_t pm = kiln__level_mask(KILN_LEVEL_PLAN);
    key[k++] = eo->on & pm;
    key[k++] = eo->has_list & pm;
    for (uint64_t b = eo->on & pm; b != 0; b &= b - 1)
        key[k++] = eo->arg[__builtin_ctzll(b)];
    if (reuse_off)
        for (uint32_t i = 0; i < f->n_inputs; i++)
            for (int a = 0; a < KILN_MAX_RANK; a++)
                key[k++] = a < c->inputs[i]->rank ? (uint64_t)c->inputs[i]->sizes[a]
                                                  : ~0ull;
    return k;
}

static kiln_status fill_info(kiln_exec_info *info, const kiln_context *ctx,
                             const struct kiln_options *eo, const call *c,
                             int plan_hit, const uint8_t *reference,
                             const double *gpu_ms)
{
    const kiln__plan *p = c->plan;
    info->valid = 0;
    info->eo = *eo;
    info->canon.len = 0;
    if (info->canon.data != NULL)
        info->canon.data[0] = '\0';
    kiln__options_canonical_buf(eo, KILN_LEVEL_ALL, &info->canon);
    if (info->canon.failed) {
        kiln__buf_free(&info->canon);
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory (info)");
    }
    if (info->cap_segs < p->n_segs) {
        kiln_segment_info *s = kiln__realloc(info->segs, p->n_segs * sizeof *s);
        if (s == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory (info)");
        info->segs = s;
        seg_text *t = kiln__realloc(info->text, p->n_segs * sizeof *t);
        if (t == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory (info)");
        info->text = t;
        info->cap_segs = p->n_segs;
    }
    snprintf(info->backend, sizeof info->backend, "%s", ctx->name);
    info->plan_id = p->hash;
    info->plan_hit = plan_hit;
    info->n_segs = p->n_segs;
    for (uint32_t i = 0; i < p->n_segs; i++) {
        const kiln__kernel *k = c->kern[i];
        kiln_segment_info *s = &info->segs[i];
        memset(s, 0, sizeof *s);
        s->struct_size = sizeof *s;
        int ref = reference[i];
        s->kind = ref ? KILN_SEG_REFERENCE
                  : p->segs[i].kind == KILN_SEGK_MATMUL_FALLBACK
                      ? KILN_SEG_FALLBACK
                      : KILN_SEG_GENERATED;
        s->what = p->segs[i].what;
        s->kernel_id = k->hash;
        s->kernel_hit = c->hit[i];
        s->kernel_db = c->hit[i] ? KILN_DB_NONE : k->db; /* this call's part */
        snprintf(info->text[i].flags, sizeof info->text[i].flags, "%s",
                 ref == 2 ? "" : k->out.flags);
        snprintf(info->text[i].path, sizeof info->text[i].path, "%s",
                 ref ? "ref" : k->out.path);
        s->flags = info->text[i].flags;
        s->path = info->text[i].path;
        s->device = (!ref && ctx->be.memory == KILN_MEM_DEVICE) ? ctx->device : -1;
        s->gpu_ms = gpu_ms[i];
    }
    info->valid = 1;
    return KILN_OK;
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

kiln_status kiln_execute(kiln_context *ctx, const kiln_fusion *f,
                         kiln_tensor *const *inputs, size_t n_inputs,
                         kiln_tensor **outputs, size_t n_outputs,
                         const kiln_exec_options *opts, kiln_exec_info *info)
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

    /* effective options: the snapshot, then this call's items */
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
    FILE *dump = ctx->dump;
    if (kiln__opt_on(&eo, KOPT_DUMP_OPTIONS)) {
        kiln_buf b = {0};
        kiln__options_canonical_buf(&eo, KILN_LEVEL_ALL, &b);
        fprintf(dump, "kiln: options: %s\n", b.data ? b.data : "");
        kiln__buf_free(&b);
    }

    call c;
    memset(&c, 0, offsetof(call, outs_small));
    c.ctx = ctx;
    c.f = f;
    c.inputs = inputs;
    c.outputs = outputs;
    c.stream = stream;
    c.shapes = c.shapes_small;
    c.kern = NULL;
    c.hit = c.hit_small;
    c.inter_off = c.inter_off_small;
    c.allocated = c.allocated_small;
    if (f->n_nodes > SMALL_NODES) {
        c.shapes = kiln__malloc(f->n_nodes * sizeof *c.shapes);
        if (c.shapes == NULL) {
            c.shapes = c.shapes_small;
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
        }
    }
    if ((st = kiln__fusion_shapes(f, inputs, n_inputs, c.shapes)) != KILN_OK ||
        (st = check_work(&c)) != KILN_OK)
        goto fail;
    kiln__sig sig;
    if ((st = check_inputs(&c, &sig)) != KILN_OK)
        goto fail;
    if ((st = check_outputs(&c, n_outputs)) != KILN_OK)
        goto fail;
    for (size_t j = 0; j < n_outputs; j++)
        if (outputs[j] == NULL || (uintptr_t)outputs[j]->data % 16 == 0)
            c.sig_bits[f->n_inputs + j] |= KILN__SIG_ALIGN16;

    /* the plan */
    int reuse_off = kiln__opt_on(&eo, KOPT_DIS_KERNEL_REUSE);
    size_t nk = key_len(f, reuse_off);
    uint64_t key_small[SMALL_KEY], *key = key_small;
    if (nk > SMALL_KEY && (key = kiln__malloc(nk * sizeof *key)) == NULL) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
        goto fail;
    }
    nk = build_key(&c, &sig, &eo, reuse_off, key);
    uint64_t h = mix_words(key, nk);
    int plan_hit = 1;
    c.plan = kiln__plan_find(&ctx->caches, h, key, nk, f);
    if (c.plan == NULL) {
        plan_hit = 0;
        kiln__plan *np = NULL;
        st = kiln__plan_build(f, &eo, (const int64_t(*)[KILN_MAX_RANK])c.shapes,
                              &sig, &np);
        if (st == KILN_OK) {
            np->hash = h;
            np->n_key = nk;
            np->key = kiln__malloc(nk * sizeof *key);
            if (np->key == NULL) {
                kiln__plan_free(np);
                st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
            } else {
                memcpy(np->key, key, nk * sizeof *key);
                c.plan = kiln__plan_insert(&ctx->caches, np);
            }
        }
        if (st == KILN_OK && kiln__opt_on(&eo, KOPT_DUMP_FUSION_IR)) {
            char *text = NULL;
            flockfile(dump);
            if (kiln_fusion_print(f, &text) == KILN_OK)
                fprintf(dump, "kiln: fusion_ir:\n%s", text);
            kiln_free(text);
            kiln__plan_dump(c.plan, dump);
            funlockfile(dump);
        }
    }
    if (key != key_small)
        kiln__free(key);
    if (st != KILN_OK)
        goto fail;
    kiln__plan *p = c.plan;

    /* kernels */
    const kiln__variant *var = NULL;
    if ((st = kiln__variant_get(ctx, &eo, &var)) != KILN_OK)
        goto fail;
    if (p->n_segs > SMALL_SEGS) {
        c.kern = kiln__calloc(p->n_segs, sizeof *c.kern);
        c.hit = kiln__calloc(p->n_segs, sizeof *c.hit);
        if (c.kern == NULL || c.hit == NULL) {
            st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
            goto fail;
        }
    } else {
        c.kern = c.kern_small;
        memset(c.kern_small, 0, p->n_segs * sizeof *c.kern_small);
    }
    int nocache = kiln__opt_on(&eo, KOPT_DIS_NVRTC_CACHING);
    int use_db = kiln__opt_on(&eo, KOPT_EN_KERNEL_DB);
    int no_fallback = kiln__opt_on(&eo, KOPT_DIS_FALLBACK);
    for (uint32_t i = 0; i < p->n_segs; i++) {
        st = kiln__kernel_get(ctx, &p->segs[i], var, nocache, use_db,
                              &c.kern[i], &c.hit[i]);
        if (st != KILN_OK)
            goto fail;
        if (c.kern[i]->reference && no_fallback) {
            st = kiln__err(KILN_ERR_FALLBACK_DISABLED,
                           "segment %u (%s): backend %s cannot generate it "
                           "and disable=fallback forbids the reference path",
                           i, p->segs[i].what, ctx->name);
            goto fail;
        }
    }
    if (kiln__opt_on(&eo, KOPT_DUMP_CUDA_KERNEL))
        dump_cuda_kernels(ctx, p, var, &c, dump);
    if (kiln__opt_on(&eo, KOPT_EN_WARN_REGISTER_SPILL))
        warn_spills(p, &c, eo.arg[KOPT_EN_WARN_REGISTER_SPILL], dump);
    if (kiln__opt_on(&eo, KOPT_DUMP_CACHE)) {
        flockfile(dump);
        fprintf(dump, "kiln: cache: plan %016llx %s\n",
                (unsigned long long)p->hash, plan_hit ? "hit" : "miss");
        for (uint32_t i = 0; i < p->n_segs; i++)
            fprintf(dump, "kiln: cache: segment %u (%s) kernel %016llx %s%s%s\n",
                    i, p->segs[i].what, (unsigned long long)c.kern[i]->hash,
                    c.hit[i] ? "hit" : "miss",
                    !c.hit[i] && c.kern[i]->db ? " kernel_db=" : "",
                    !c.hit[i] && c.kern[i]->db
                        ? kiln_db_outcome_name(c.kern[i]->db) : "");
        funlockfile(dump);
    }

    /* outputs the runtime allocates */
    if (n_outputs > SMALL_VIEWS) {
        c.outs = kiln__calloc(n_outputs, sizeof *c.outs);
        c.allocated = kiln__calloc(n_outputs, 1);
        if (c.outs == NULL || c.allocated == NULL) {
            kiln__free(c.outs);
            c.outs = NULL;
            st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
            goto fail;
        }
    } else {
        c.outs = c.outs_small;
    }
    for (size_t j = 0; j < n_outputs; j++) {
        c.allocated[j] = 0;
        c.outs[j] = outputs[j];
    }
    for (size_t j = 0; j < n_outputs; j++) {
        if (outputs[j] != NULL)
            continue;
        const kiln_ir_node *n = &f->nodes[f->outputs[j]];
        st = kiln_tensor_create(ctx, (kiln_dtype)n->dtype, n->rank,
                                c.shapes[f->outputs[j]], NULL,
                                (kiln_memory)ctx->be.memory, NULL, &c.outs[j]);
        if (st != KILN_OK)
            goto fail;
        c.allocated[j] = 1;
    }
    /* intermediates: one block, 64-byte aligned pieces */
    if (p->n_inter > 0) {
        if (p->n_inter > SMALL_VIEWS &&
            (c.inter_off = kiln__malloc(p->n_inter * sizeof *c.inter_off)) == NULL) {
            c.inter_off = c.inter_off_small;
            st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
            goto fail;
        }
        int64_t total = 0;
        for (uint32_t k = 0; k < p->n_inter; k++) {
            int32_t v = p->inter_node[k];
            c.inter_off[k] = total;
            int64_t b;
            if (__builtin_mul_overflow(
                    numel_of(p->f_nodes[v].rank, c.shapes[v]),
                    (int64_t)kiln_dtype_size((kiln_dtype)p->f_nodes[v].dtype), &b) ||
                b > INT64_MAX / 4 || total > INT64_MAX / 4) {
                st = kiln__err(KILN_ERR_LIMIT,
                               "execute: the intermediate %%%d is too large to "
                               "allocate",
                               v);
                goto fail;
            }
            total += (b + 63) & ~(int64_t)63;
        }
        if (ctx->be.memory == KILN_MEM_DEVICE) {
            char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
            st = ctx->be.mem_alloc(ctx->be_state, (size_t)(total ? total : 64),
                                   &c.inter_raw, err, sizeof err);
            if (st != KILN_OK) {
                c.inter_raw = NULL;
                st = kiln__err(st, "execute: intermediate allocation: %s",
                               kiln__be_str(err, sizeof err));
                goto fail;
            }
            c.inter_mem = c.inter_raw; /* device allocations are aligned */
        } else {
            c.inter_raw = kiln__malloc((size_t)total + 64);
            if (c.inter_raw == NULL) {
                st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
                goto fail;
            }
            c.inter_mem = (void *)(((uintptr_t)c.inter_raw + 63) & ~(uintptr_t)63);
        }
    }

    /* launch */
    uint8_t reference_small[SMALL_SEGS], *reference = reference_small;
    double gpu_small[SMALL_SEGS], *gpu_ms = gpu_small;
    if (p->n_segs > SMALL_SEGS) {
        reference = kiln__calloc(p->n_segs, 1);
        gpu_ms = kiln__calloc(p->n_segs, sizeof *gpu_ms);
        if (reference == NULL || gpu_ms == NULL) {
            kiln__free(reference);
            kiln__free(gpu_ms);
            st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
            goto fail;
        }
    }
    int profile = kiln__opt_on(&eo, KOPT_EN_KERNEL_PROFILE);
    for (uint32_t i = 0; i < p->n_segs && st == KILN_OK; i++) {
        const kiln__pseg *s = &p->segs[i];
        kiln__kernel *k = c.kern[i];
        kiln_ir_tensor in_small[SMALL_VIEWS], out_small[SMALL_VIEWS];
        kiln_ir_tensor *in = in_small, *out = out_small;
        if (s->n_leaves > SMALL_VIEWS || s->n_outs > SMALL_VIEWS) {
            in = kiln__calloc(s->n_leaves + 1, sizeof *in);
            out = kiln__calloc(s->n_outs + 1, sizeof *out);
            if (in == NULL || out == NULL) {
                kiln__free(in);
                kiln__free(out);
                st = kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
                break;
            }
        }
        for (uint32_t q = 0; q < s->n_leaves; q++) {
            const kiln__leaf *l = &s->leaves[q];
            make_view(&c, s, l->node, 0, l->part, l->own, l->map, &in[q]);
        }
        for (uint32_t q = 0; q < s->n_outs; q++) {
            const kiln__sout *o = &s->outs[q];
            make_view(&c, s, o->node, 1, o->part, -1, o->map, &out[q]);
        }
        kiln_launch L;
        memset(&L, 0, sizeof L);
        L.struct_size = sizeof L;
        int dr;
        part_sizes(&c, s, KILN__PART_D, -1, L.domain, &dr);
        L.rank = dr;
        L.k = s->k_node >= 0 ? c.shapes[s->k_node][1] : 0;
        L.inputs = in;
        L.n_inputs = s->n_leaves;
        L.outputs = out;
        L.n_outputs = s->n_outs;
        L.profile = profile;
        L.gpu_ms = -1;
        L.stream = stream;
        if (kiln__opt_on(&eo, KOPT_DUMP_LAUNCH_PARAMS)) {
            flockfile(dump);
            fprintf(dump, "kiln: launch segment %u (%s) kernel %016llx domain [",
                    i, s->what, (unsigned long long)k->hash);
            for (int a = 0; a < L.rank; a++)
                fprintf(dump, "%s%lld", a ? "," : "", (long long)L.domain[a]);
            fprintf(dump, "]");
            if (s->k_node >= 0)
                fprintf(dump, " k=%lld", (long long)L.k);
            fprintf(dump, "\n");
            for (uint32_t q = 0; q < L.n_inputs; q++)
                dump_view(dump, "in", q, &in[q]);
            for (uint32_t q = 0; q < L.n_outputs; q++)
                dump_view(dump, "out", q, &out[q]);
            funlockfile(dump);
        }
        reference[i] = (uint8_t)k->reference;
        if (k->reference) {
            st = run_on_ref(ctx, k->out.handle, &L, in, out);
        } else {
            char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
            st = ctx->be.launch(ctx->be_state, k->out.handle, &L, err, sizeof err);
            kiln__be_str(err, sizeof err);
            if (st == KILN_ERR_UNSUPPORTED && ctx->ref != NULL &&
                ctx->ref_state != ctx->be_state) {
                if (no_fallback)
                    st = kiln__err(KILN_ERR_FALLBACK_DISABLED,
                                   "segment %u (%s): backend %s cannot run it "
                                   "(%s) and disable=fallback forbids the "
                                   "reference path",
                                   i, s->what, ctx->name, err);
                else {
                    reference[i] = 2;
                    L.gpu_ms = -1;
                    st = ref_once(ctx, s, var, &L, in, out);
                }
            } else if (st != KILN_OK) {
                st = kiln__err(st, "segment %u (%s) on %s: %s", i, s->what,
                               ctx->name, err[0] ? err : kiln_strerror(st));
            }
        }
        gpu_ms[i] = profile ? L.gpu_ms : -1;
        if (in != in_small) kiln__free(in);
        if (out != out_small) kiln__free(out);
    }
    /* the intermediates are freed below: the stream must be done with them */
    if (st == KILN_OK && stream != NULL && c.inter_raw != NULL)
        st = sync_stream(ctx, stream, "before freeing the intermediates");
    if (st == KILN_OK && info != NULL)
        st = fill_info(info, ctx, &eo, &c, plan_hit, reference, gpu_ms);
    if (reference != reference_small) kiln__free(reference);
    if (gpu_ms != gpu_small) kiln__free(gpu_ms);
    if (st != KILN_OK)
        goto fail;
    for (size_t j = 0; j < n_outputs; j++)
        outputs[j] = c.outs[j];
    call_free(&c, 0, n_outputs);
    kiln__err_clear();
    return KILN_OK;
fail:
    call_free(&c, 1, n_outputs);
    if (info != NULL)
        info->valid = 0;
    return st;
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
