/*
** exec_dump.c -- what one kiln_execute call writes to the context's dump
** stream (KILN_DUMP / dump=..., docs/options.md) and its
** warn_register_spill warnings.  Every line starts with "kiln: "; a
** multi-line record is written under the stream's lock, so concurrent
** calls never interleave inside one.
*/
#include <stdlib.h>
#include <string.h>

#include "execute.h"

void kiln__dump_options(const struct kiln_options *eo, FILE *dump)
{
    kiln_buf b = {0};
    kiln__options_canonical_buf(eo, KILN_LEVEL_ALL, &b);
    fprintf(dump, "kiln: options: %s\n", b.data ? b.data : "");
    kiln__buf_free(&b);
}

void kiln__dump_plan(const kiln_fusion *f, const kiln__plan *p, FILE *dump)
{
    char *text = NULL;
    flockfile(dump);
    if (kiln_fusion_print(f, &text) == KILN_OK)
        fprintf(dump, "kiln: fusion_ir:\n%s", text);
    kiln_free(text);
    kiln__plan_dump(p, dump);
    funlockfile(dump);
}

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
                              const kiln__variant *var, const kiln__call *c,
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
static void warn_spills(const kiln__plan *p, const kiln__call *c, uint64_t limit,
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

void kiln__dump_kernels(const kiln__call *c, const struct kiln_options *eo,
                        FILE *dump)
{
    kiln_context *ctx = c->ctx;
    const kiln__plan *p = c->plan;
    if (kiln__opt_on(eo, KOPT_DUMP_CUDA_KERNEL))
        dump_cuda_kernels(ctx, p, c->var, c, dump);
    if (kiln__opt_on(eo, KOPT_EN_WARN_REGISTER_SPILL))
        warn_spills(p, c, eo->arg[KOPT_EN_WARN_REGISTER_SPILL], dump);
    if (kiln__opt_on(eo, KOPT_DUMP_CACHE)) {
        flockfile(dump);
        fprintf(dump, "kiln: cache: plan %016llx %s\n",
                (unsigned long long)p->hash, c->plan_hit ? "hit" : "miss");
        for (uint32_t i = 0; i < p->n_segs; i++)
            fprintf(dump, "kiln: cache: segment %u (%s) kernel %016llx %s%s%s\n",
                    i, p->segs[i].what, (unsigned long long)c->kern[i]->hash,
                    c->hit[i] ? "hit" : "miss",
                    !c->hit[i] && c->kern[i]->db ? " kernel_db=" : "",
                    !c->hit[i] && c->kern[i]->db
                        ? kiln_db_outcome_name(c->kern[i]->db) : "");
        funlockfile(dump);
    }
}

void kiln__dump_launch(const kiln__call *c, uint32_t i, const kiln_launch *L,
                       FILE *dump)
{
    const kiln__pseg *s = &c->plan->segs[i];
    flockfile(dump);
    fprintf(dump, "kiln: launch segment %u (%s) kernel %016llx domain [",
            i, s->what, (unsigned long long)c->kern[i]->hash);
    for (int a = 0; a < L->rank; a++)
        fprintf(dump, "%s%lld", a ? "," : "", (long long)L->domain[a]);
    fprintf(dump, "]");
    if (s->k_node >= 0)
        fprintf(dump, " k=%lld", (long long)L->k);
    fprintf(dump, "\n");
    for (uint32_t q = 0; q < L->n_inputs; q++)
        dump_view(dump, "in", q, &L->inputs[q]);
    for (uint32_t q = 0; q < L->n_outputs; q++)
        dump_view(dump, "out", q, &L->outputs[q]);
    funlockfile(dump);
}
