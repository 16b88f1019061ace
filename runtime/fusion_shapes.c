/*
** fusion_shapes.c -- the concrete shapes of a finalized fusion's nodes for
** one call's input tensors (kiln__fusion_shapes, internal.h), and the
** messages that explain a size mismatch by the ops that join the two axes
** (docs/runtime.md, "Execute"; docs/fusion-format.md, shapes).
**
** Shape unification: two non-broadcast axes that an op combines must have
** the same size at execute.  finalize (fusion.c) builds the equivalence
** classes of (node, axis) pairs once and stores, for each pair, the flat
** index of its class's first member, always an axis of an INPUT node, so
** here the sizes are read from the input tensors without allocating.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* "input 1 axis 0" or "%4 axis 0" for flat index x. */
static void axis_text(const kiln_fusion *f, int32_t x, char *buf, size_t cap)
{
    const kiln_ir_node *n = &f->nodes[x / KILN_MAX_RANK];
    if (n->op == KILN_OP_INPUT)
        snprintf(buf, cap, "input %ld axis %d", (long)n->io,
                 (int)(x % KILN_MAX_RANK));
    else
        snprintf(buf, cap, "%%%ld axis %d", (long)(x / KILN_MAX_RANK),
                 (int)(x % KILN_MAX_RANK));
}

/* Append to b the ops on a shortest path of axis joins between flat axes
** x and y: "add at %4" or "mul at %2, add at %4".  Error path only; on
** allocation failure appends nothing. */
static void explain_join(const kiln_fusion *f, int32_t x, int32_t y,
                         kiln_buf *b)
{
    size_t nflat = (size_t)f->n_nodes * KILN_MAX_RANK;
    uint32_t ne = f->n_axis_edges;
    int32_t *via = kiln__malloc(nflat * sizeof *via); /* edge that reached */
    int32_t *queue = kiln__malloc(nflat * sizeof *queue);
    uint32_t *start = kiln__calloc(nflat + 1, sizeof *start); /* CSR rows */
    uint32_t *adj = kiln__malloc((size_t)ne * 2 * sizeof *adj); /* edge ids */
    if (via == NULL || queue == NULL || start == NULL || adj == NULL)
        goto done;
    /* adjacency in edge order, so the path found is deterministic */
    for (uint32_t k = 0; k < ne; k++) {
        start[f->axis_edges[3 * k] + 1]++;
        start[f->axis_edges[3 * k + 1] + 1]++;
    }
    for (size_t k = 0; k < nflat; k++)
        start[k + 1] += start[k];
    for (size_t k = 0; k < nflat; k++)
        queue[k] = (int32_t)start[k]; /* fill cursor per row */
    for (uint32_t k = 0; k < ne; k++) {
        adj[queue[f->axis_edges[3 * k]]++] = k;
        adj[queue[f->axis_edges[3 * k + 1]]++] = k;
    }
    for (size_t k = 0; k < nflat; k++)
        via[k] = -2;
    size_t head = 0, tail = 0;
    via[x] = -1;
    queue[tail++] = x;
    while (head < tail && via[y] == -2) {
        int32_t u = queue[head++];
        for (uint32_t j = start[u]; j < start[u + 1]; j++) {
            uint32_t k = adj[j];
            int32_t p = f->axis_edges[3 * k], q = f->axis_edges[3 * k + 1];
            int32_t v = p == u ? q : p;
            if (via[v] == -2) {
                via[v] = (int32_t)k;
                queue[tail++] = v;
            }
        }
    }
    if (via[y] == -2)
        goto done;
    /* walk back from y to x, collecting nodes (reverse order into queue) */
    size_t n = 0;
    for (int32_t v = y; via[v] >= 0;) {
        int32_t k = via[v];
        int32_t node = f->axis_edges[3 * k + 2];
        if (n == 0 || queue[n - 1] != node)
            queue[n++] = node;
        v = f->axis_edges[3 * k] == v ? f->axis_edges[3 * k + 1]
                                      : f->axis_edges[3 * k];
    }
    for (size_t k = n; k-- > 0;)
        kiln__buf_printf(b, "%s%s at %%%ld", k + 1 < n ? ", " : "",
                         kiln_op_name((kiln_op)f->nodes[queue[k]].op),
                         (long)queue[k]);
done:
    kiln__free(via);
    kiln__free(queue);
    kiln__free(start);
    kiln__free(adj);
}

static kiln_status size_mismatch(const kiln_fusion *f, int32_t x, int64_t sx,
                                 int32_t root, int64_t sr)
{
    char ax[48], ar[48];
    axis_text(f, x, ax, sizeof ax);
    axis_text(f, root, ar, sizeof ar);
    kiln_buf why = {0};
    explain_join(f, root, x, &why);
    kiln_status s = kiln__err(
        KILN_ERR_SHAPE,
        "%s: size %lld does not match size %lld of %s (they are combined by "
        "%s)",
        ax, (long long)sx, (long long)sr, ar,
        why.data != NULL && !why.failed ? why.data : "the fusion's ops");
    kiln__buf_free(&why);
    return s;
}

kiln_status kiln__fusion_shapes(const kiln_fusion *f,
                                kiln_tensor *const *inputs, size_t n_inputs,
                                int64_t (*shapes)[KILN_MAX_RANK])
{
    if (f == NULL || shapes == NULL || (inputs == NULL && n_inputs > 0))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "shapes: NULL argument");
    if (!f->finalized)
        return kiln__err(KILN_ERR_STATE, "the fusion is not finalized");
    if (n_inputs != f->n_inputs)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "the fusion takes %u input%s, %zu given", f->n_inputs,
                         f->n_inputs == 1 ? "" : "s", n_inputs);
    for (uint32_t i = 0; i < f->n_nodes; i++) {
        const kiln_ir_node *n = &f->nodes[i];
        const int32_t *cls = &f->axis_class[(size_t)i * KILN_MAX_RANK];
        if (n->op != KILN_OP_INPUT) {
            for (int a = 0; a < n->rank; a++)
                shapes[i][a] = cls[a] < 0
                                   ? 1
                                   : shapes[cls[a] / KILN_MAX_RANK]
                                           [cls[a] % KILN_MAX_RANK];
            continue;
        }
        const kiln_tensor *t = inputs[n->io];
        if (t == NULL)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT, "input %ld is NULL",
                             (long)n->io);
        if ((int)t->dtype != n->dtype)
            return kiln__err(KILN_ERR_DTYPE,
                             "input %ld: dtype %s does not match the declared "
                             "%s",
                             (long)n->io,
                             kiln_dtype_name(t->dtype)
                                 ? kiln_dtype_name(t->dtype)
                                 : "(invalid)",
                             kiln_dtype_name((kiln_dtype)n->dtype));
        if (t->rank != n->rank)
            return kiln__err(KILN_ERR_SHAPE,
                             "input %ld: rank %d does not match the declared "
                             "rank %d",
                             (long)n->io, t->rank, n->rank);
        for (int a = 0; a < n->rank; a++) {
            int64_t sz = t->sizes[a];
            if (sz < 0)
                return kiln__err(KILN_ERR_SHAPE,
                                 "input %ld axis %d: negative size %lld",
                                 (long)n->io, a, (long long)sz);
            if (cls[a] < 0 && sz != 1)
                return kiln__err(KILN_ERR_SHAPE,
                                 "input %ld axis %d: size %lld, but the axis "
                                 "is declared broadcast (size 1)",
                                 (long)n->io, a, (long long)sz);
            int32_t me = (int32_t)(i * KILN_MAX_RANK + (uint32_t)a);
            if (cls[a] >= 0 && cls[a] != me) {
                int64_t want =
                    shapes[cls[a] / KILN_MAX_RANK][cls[a] % KILN_MAX_RANK];
                if (want != sz)
                    return size_mismatch(f, me, sz, cls[a], want);
            }
            shapes[i][a] = sz;
        }
    }
    return KILN_OK;
}
