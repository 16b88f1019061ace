/*
** cuda_codegen.c -- segment IR -> CUDA C++ (cuda_codegen.h): the driver.
** It checks the segment, runs the simplification passes (ir_simplify.h),
** classifies the nodes (liveness, the REDUCE/MATMUL node, the pre/post
** phases), then writes the module header and the preamble
** (cuda_preamble.cuh) and lets the emitters (cuda_emit.c) write the rest.
**
** Shape of every generated module (docs/backends.md, "CUDA backend"):
**   preamble (helpers, accumulators) | typedef of the index type `ix`
**   (unsigned 32-bit unless seg->index64) | struct KArgs | kiln_pre()
**   (reductions: the producers over D, returning the REDUCE operand) |
**   kiln_post() (everything after the REDUCE / MATMUL, or the whole
**   pointwise body: pure, takes loaded values, returns output values) |
**   kiln_finalize() (reductions/matmul: loads post inputs and stores the
**   outputs at one kept index) | the kernels kiln_main (and kiln_finish).
**
** Kernel schemes:
**   POINTWISE      grid-stride loop over the (host-collapsed) domain;
**                  a vector path (16-byte accesses, VEC elements per
**                  thread) when every view has KILN_TRAIT_ALIGN16, taken at
**                  run time only when the host verified alignment, inner
**                  strides 0/1 and divisibility; a scalar tail.
**   REDUCE_INNER   innermost axis reduced: a block (or a warp) per kept
**                  row, warp shuffles then shared memory, optional split of
**                  the row over gridDim.y with a second pass kiln_finish.
**   REDUCE_OUTER   innermost axis kept: 32 columns x 8 row-lanes per block
**                  (optionally VEC columns per thread), a fixed-order merge
**                  of the 8 lanes, the same optional split + finish.
**   MATMUL         64x64 tiles through shared memory, K in steps of 16,
**                  operands widened to f64 and accumulated with f64 FMA
**                  (products exact, far inside the docs/numerics.md bound), rounded
**                  once to f32, then the epilogue at (m, n).
** Determinism: launch geometry depends only on sizes and the device, and
** every merge happens in a fixed order: the same inputs give the same bits.
** No float atomics anywhere.
**
** Before emitting, the bit-exact simplification passes of ir_simplify.h
** rewrite a working copy of the nodes (cse, fold, identity, strength); the
** fifth pass, index, is the addressing choice made here: views with the
** CONTIG trait are addressed by the linear index instead of strides.
*/
#include <stdio.h>
#include <string.h>

#include "backends/cuda_codegen.h"
#include "backends/cuda_emit.h"
#include "ir_simplify.h"

/* The preamble every kernel starts with (cuda_preamble.cuh: typed
** load/store helpers, correctly rounded f16/bf16 conversions, saturating
** float->int casts, fixed-rounding arithmetic, NaN-propagating max/min, and
** the reduction accumulators; kept warning-free under NVRTC for sm_80 and
** sm_90).  The build embeds the file's bytes (the Makefile writes them as
** cuda_preamble.inc with od), so the .cuh is the one copy. */
static const char kiln_cuda_preamble[] = {
#include "cuda_preamble.inc"
    0};

typedef kiln_cuda_gen gen;

static int32_t res(const gen *g, int32_t i) { return kiln__ir_res(&g->w, i); }

#define P(...) kiln__buf_printf(&g->b, __VA_ARGS__)

/* ------------------------------------------------------------ driver */

static kiln_status check_segment(const kiln_ir_segment *s)
{
    if (s == NULL || s->nodes == NULL || s->n_nodes == 0 || s->outputs == NULL ||
        s->n_outputs == 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda codegen: empty segment");
    if (s->n_inputs > KILN_CUDA_MAX_VIEWS ||
        s->n_outputs > KILN_CUDA_MAX_VIEWS - s->n_inputs)
        return kiln__err(KILN_ERR_UNSUPPORTED,
                         "cuda codegen: %u inputs + %u outputs exceed %u views",
                         s->n_inputs, s->n_outputs, KILN_CUDA_MAX_VIEWS);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const kiln_ir_node *x = &s->nodes[i];
        if (x->op >= KILN_OP_COUNT || x->dtype >= KILN_DTYPE_COUNT ||
            x->rank > KILN_MAX_RANK)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u: bad op/dtype/rank", i);
        if (x->op == KILN_OP_BROADCAST)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u: BROADCAST must be planned away", i);
        for (int k = 0; k < 3; k++)
            if (x->args[k] >= (int32_t)i || x->args[k] < -1)
                return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                                 "cuda codegen: node %u: argument %d refers to node %d",
                                 i, k, (int)x->args[k]);
        if (x->op == KILN_OP_INPUT && (x->io < 0 || (uint32_t)x->io >= s->n_inputs))
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u: input index %d of %u", i,
                             (int)x->io, s->n_inputs);
        if (x->op != KILN_OP_INPUT && x->op != KILN_OP_CONST && x->args[0] < 0)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u (%s): missing operand", i,
                             kiln_op_name((kiln_op)x->op));
    }
    for (uint32_t k = 0; k < s->n_outputs; k++)
        if (s->outputs[k] < 0 || (uint32_t)s->outputs[k] >= s->n_nodes)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: output %u refers to node %d", k,
                             (int)s->outputs[k]);
    return KILN_OK;
}

/* Liveness, the special node, the pre/post split; also checks dtypes the
** generator must see on operands. */
static kiln_status classify(gen *g)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_outputs; k++)
        g->live[res(g, s->outputs[k])] = 1;
    for (uint32_t i = g->w.nn; i-- > 0;) {
        if (!g->live[i] || g->w.alias[i] != (int32_t)i)
            continue;
        for (int k = 0; k < 3; k++)
            if (g->w.n[i].args[k] >= 0)
                g->live[res(g, g->w.n[i].args[k])] = 1;
    }
    g->sp = -1;
    for (uint32_t i = 0; i < g->w.nn; i++) {
        int op = g->w.n[i].op;
        if (!g->live[i] || g->w.alias[i] != (int32_t)i)
            continue;
        if (kiln__op_is_reduce(op) || op == KILN_OP_MATMUL) {
            if (g->sp >= 0)
                return kiln__err(KILN_ERR_UNSUPPORTED,
                                 "cuda codegen: more than one reduction/matmul in a segment");
            g->sp = (int32_t)i;
        }
    }
    int want = s->kind == KILN_SEGK_POINTWISE ? -1
             : s->kind == KILN_SEGK_REDUCTION ? 1 : 2;
    if (s->kind > KILN_SEGK_MATMUL_FALLBACK)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda codegen: segment kind %u",
                         s->kind);
    if (want < 0 && g->sp >= 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "cuda codegen: pointwise segment holds a %s node",
                         kiln_op_name((kiln_op)g->w.n[g->sp].op));
    if (want > 0 && (g->sp < 0 || (want == 1) != kiln__op_is_reduce(g->w.n[g->sp].op)))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "cuda codegen: %s segment without its %s node",
                         want == 1 ? "reduction" : "matmul",
                         want == 1 ? "REDUCE" : "MATMUL");
    if (g->sp >= 0) {
        int32_t sp = g->sp;
        for (int k = 0; k < 3; k++)
            if (g->w.n[sp].args[k] >= 0)
                g->pre[res(g, g->w.n[sp].args[k])] = 1;
        for (int32_t i = sp; i-- > 0;) {
            if (!g->pre[i] || g->w.alias[i] != i)
                continue;
            for (int k = 0; k < 3; k++)
                if (g->w.n[i].args[k] >= 0)
                    g->pre[res(g, g->w.n[i].args[k])] = 1;
        }
    }
    /* Post phase: what it reads must be the special node, INPUT/CONST
    ** leaves or post nodes. */
    for (uint32_t i = 0; i < g->w.nn; i++) {
        if (!g->live[i] || g->w.alias[i] != (int32_t)i || g->pre[i] ||
            (int32_t)i == g->sp || g->w.n[i].op == KILN_OP_INPUT ||
            g->w.n[i].op == KILN_OP_CONST)
            continue;
        for (int k = 0; k < 3; k++) {
            int32_t a = g->w.n[i].args[k];
            if (a < 0)
                continue;
            a = res(g, a);
            int op = g->w.n[a].op;
            if (op == KILN_OP_INPUT)
                g->post_use[a] = 1;
            else if (g->pre[a] && op != KILN_OP_CONST)
                return kiln__err(KILN_ERR_UNSUPPORTED,
                                 "cuda codegen: node %u reads pre-reduction value %d",
                                 i, (int)a);
        }
    }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        int32_t a = res(g, s->outputs[k]);
        if (g->w.n[a].op == KILN_OP_INPUT)
            g->post_use[a] = 1;
        else if (g->pre[a] && g->w.n[a].op != KILN_OP_CONST)
            return kiln__err(KILN_ERR_UNSUPPORTED,
                             "cuda codegen: output %u is a pre-reduction value", k);
    }
    for (uint32_t k = 0; k < KILN_CUDA_MAX_VIEWS; k++)
        g->in_dtype[k] = -1;
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (g->w.n[i].op == KILN_OP_INPUT) {
            int io = g->w.n[i].io;
            if (g->in_dtype[io] >= 0 && g->in_dtype[io] != g->w.n[i].dtype)
                return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                                 "cuda codegen: input %d has two dtypes", io);
            g->in_dtype[io] = g->w.n[i].dtype;
        }
    /* operand dtypes the generator cannot express */
    for (uint32_t i = 0; i < g->w.nn; i++) {
        const kiln_ir_node *x = &g->w.n[i];
        if (!g->live[i] || g->w.alias[i] != (int32_t)i || x->op == KILN_OP_INPUT ||
            x->op == KILN_OP_CONST || x->op == KILN_OP_CAST || x->op == KILN_OP_WHERE ||
            x->op == KILN_OP_MATMUL)
            continue;
        int dt = g->w.n[res(g, x->args[0])].dtype;
        if (dt == KILN_F16 || dt == KILN_BF16)
            return kiln__err(KILN_ERR_UNSUPPORTED,
                             "cuda codegen: %s on %s (cast to f32 first)",
                             kiln_op_name((kiln_op)x->op), kiln_dtype_name((kiln_dtype)dt));
    }
    return KILN_OK;
}

kiln_status kiln__cuda_codegen(const kiln_ir_segment *seg,
                               const kiln_kernel_options *ko, char **source,
                               kiln_cuda_kinfo *info)
{
    if (ko == NULL || source == NULL || info == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda codegen: NULL argument");
    kiln_status st = check_segment(seg);
    if (st != KILN_OK)
        return st;
    gen G, *g = &G;
    memset(g, 0, sizeof G);
    g->seg = seg;
    g->ko = ko;
    g->w.nn = seg->n_nodes;
    g->w.cap = seg->n_nodes * 2 + 4;
    g->w.n = kiln__calloc(g->w.cap, sizeof *g->w.n);
    g->w.alias = kiln__calloc(g->w.cap, sizeof *g->w.alias);
    g->live = kiln__calloc(g->w.cap, 1);
    g->pre = kiln__calloc(g->w.cap, 1);
    g->post_use = kiln__calloc(g->w.cap, 1);
    if (!g->w.n || !g->w.alias || !g->live || !g->pre || !g->post_use) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "cuda codegen: out of memory");
        goto done;
    }
    memcpy(g->w.n, seg->nodes, seg->n_nodes * sizeof *g->w.n);
    for (uint32_t i = 0; i < g->w.cap; i++)
        g->w.alias[i] = (int32_t)i;
    kiln__ir_simplify(&g->w, ko);
    st = classify(g);
    if (st != KILN_OK)
        goto done;

    kiln_cuda_kinfo *in = &g->info;
    in->seg_kind = (int)seg->kind;
    in->n_inputs = seg->n_inputs;
    in->n_outputs = seg->n_outputs;
    in->block = 256;
    in->index64 = seg->index64 != 0;
    in->mm_a = in->mm_b = -1;
    int rank = 0;
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (g->live[i] && g->w.n[i].op != KILN_OP_CONST && g->w.n[i].rank > rank)
            rank = g->w.n[i].rank;
    for (uint32_t k = 0; k < seg->n_outputs; k++)
        if (seg->nodes[seg->outputs[k]].rank > rank)
            rank = seg->nodes[seg->outputs[k]].rank;
    in->rank = rank;
    g->R = in->R = rank > 0 ? rank : 1;
    if (seg->n_inputs + seg->n_outputs > KILN_SEGMENT_MAX_VIEWS(rank)) {
        st = kiln__err(KILN_ERR_UNSUPPORTED,
                       "cuda codegen: %u inputs + %u outputs exceed the %u views "
                       "of a rank-%d kernel (its parameters must fit in %d bytes)",
                       seg->n_inputs, seg->n_outputs, KILN_SEGMENT_MAX_VIEWS(rank),
                       rank, KILN_CUDA_PARAM_BYTES);
        goto done;
    }
    P("// kiln generated kernel: segment kind %u, codegen %d\n%s",
      seg->kind, KILN_CUDA_CODEGEN_VERSION, kiln_cuda_preamble);
    st = kiln__cuda_emit(g);
    if (st != KILN_OK)
        goto done;
    if (g->b.failed) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "cuda codegen: out of memory");
        goto done;
    }
    *source = g->b.data;
    g->b.data = NULL;
    *info = *in;
done:
    kiln__buf_free(&g->b);
    kiln__free(g->w.n);
    kiln__free(g->w.alias);
    kiln__free(g->live);
    kiln__free(g->pre);
    kiln__free(g->post_use);
    return st;
}
