/*
** my_backend.c -- an example third-party Kiln backend, built outside the
** Kiln tree against the *installed* headers (kiln.h, kiln_backend.h) and
** validated with `kiln conform --backend ./my_backend.so`
** (conformance/examples/README.md; the ABI is in docs/backends.md).
**
** What it does: pointwise f32 segments made of add, sub, mul, neg and fma
** (plus the planner's same-dtype copy casts) are "compiled" into a small
** per-element interpreter over the segment's domain.  Every other segment
** (reductions, matmul, other ops or dtypes) is answered with
** KILN_ERR_UNSUPPORTED, and the runtime runs it on its built-in reference
** path instead -- so the whole suite still runs, and the tests that reach
** this backend judge it.
**
** Numerics: each node is rounded to f32 on its own (this file must be
** compiled without contraction: -ffp-contract=off), FMA nodes use fmaf (one
** rounding).  The planner has already decided contraction, so the kernel
** options do not change what is computed and the identity is constant.
**
** Invariants: the plugin exports exactly one symbol (kiln_backend_entry);
** a compiled handle is an immutable copy of the segment, safe to launch
** from several threads at once; nothing here allocates during launch.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln_backend.h>

typedef struct kernel {
    uint32_t n_nodes, n_outputs;
    kiln_ir_node *nodes;
    int32_t *outputs;
} kernel;

static kiln_status my_open(int device, void **state, char *err, size_t cap)
{
    (void)device;
    (void)err;
    (void)cap;
    *state = NULL; /* no state needed */
    return KILN_OK;
}

static void my_close(void *state) { (void)state; }

static kiln_status my_identity(void *state, const kiln_kernel_options *ko,
                               char *buf, size_t cap)
{
    (void)state;
    (void)ko; /* contraction is explicit in the IR; nothing else matters */
    snprintf(buf, cap, "my_backend 1.0 f32-pointwise");
    return KILN_OK;
}

static int supported(const kiln_ir_node *n)
{
    if (n->dtype != KILN_F32)
        return 0;
    switch (n->op) {
    case KILN_OP_INPUT: case KILN_OP_CONST: case KILN_OP_ADD:
    case KILN_OP_SUB: case KILN_OP_MUL: case KILN_OP_NEG: case KILN_OP_FMA:
        return 1;
    case KILN_OP_CAST: /* a copy only (same dtype in and out) */
        return 1;
    default:
        return 0;
    }
}

static kiln_status my_compile(void *state, const kiln_ir_segment *seg,
                              const kiln_kernel_options *ko,
                              kiln_kernel_out *out, char *err, size_t cap)
{
    (void)state;
    (void)ko;
    if (seg->kind != KILN_SEGK_POINTWISE) {
        snprintf(err, cap, "my_backend: only pointwise segments");
        return KILN_ERR_UNSUPPORTED;
    }
    for (uint32_t i = 0; i < seg->n_nodes; i++) {
        const kiln_ir_node *n = &seg->nodes[i];
        if (!supported(n) ||
            (n->op == KILN_OP_CAST && seg->nodes[n->args[0]].dtype != KILN_F32)) {
            snprintf(err, cap, "my_backend: node %u (op %u, dtype %u) is not "
                     "supported", i, n->op, n->dtype);
            return KILN_ERR_UNSUPPORTED;
        }
    }
    kernel *k = calloc(1, sizeof *k);
    if (k == NULL) {
        snprintf(err, cap, "my_backend: out of memory");
        return KILN_ERR_NO_MEMORY;
    }
    k->n_nodes = seg->n_nodes;
    k->n_outputs = seg->n_outputs;
    k->nodes = malloc(seg->n_nodes * sizeof *k->nodes);
    k->outputs = malloc((seg->n_outputs + 1) * sizeof *k->outputs);
    if (k->nodes == NULL || k->outputs == NULL) {
        free(k->nodes);
        free(k->outputs);
        free(k);
        snprintf(err, cap, "my_backend: out of memory");
        return KILN_ERR_NO_MEMORY;
    }
    memcpy(k->nodes, seg->nodes, seg->n_nodes * sizeof *k->nodes);
    memcpy(k->outputs, seg->outputs, seg->n_outputs * sizeof *k->outputs);
    out->handle = k;
    snprintf(out->path, sizeof out->path, "generated");
    snprintf(out->flags, sizeof out->flags, "-ffp-contract=off");
    return KILN_OK;
}

static void my_release(void *state, void *handle)
{
    (void)state;
    kernel *k = handle;
    if (k == NULL)
        return;
    free(k->nodes);
    free(k->outputs);
    free(k);
}

/* Offset (in elements) of domain index idx in a strided view. */
static int64_t offset(const kiln_ir_tensor *t, const int64_t *idx, int rank)
{
    int64_t off = 0;
    for (int i = 0; i < rank; i++)
        off += idx[i] * t->strides[i];
    return off;
}

#define MAX_NODES 256

static kiln_status my_launch(void *state, void *handle, kiln_launch *a,
                             char *err, size_t cap)
{
    (void)state;
    const kernel *k = handle;
    float v[MAX_NODES];
    if (k->n_nodes > MAX_NODES) {
        snprintf(err, cap, "my_backend: more than %d nodes", MAX_NODES);
        return KILN_ERR_UNSUPPORTED;
    }
    int64_t total = 1, idx[KILN_MAX_RANK] = {0};
    for (int i = 0; i < a->rank; i++)
        total *= a->domain[i];
    for (int64_t e = 0; e < total; e++) {
        for (uint32_t i = 0; i < k->n_nodes; i++) {
            const kiln_ir_node *n = &k->nodes[i];
            const int32_t *g = n->args;
            switch (n->op) {
            case KILN_OP_INPUT: {
                const kiln_ir_tensor *t = &a->inputs[n->io];
                v[i] = ((const float *)t->data)[offset(t, idx, a->rank)];
                break;
            }
            case KILN_OP_CONST: {
                uint32_t bits = (uint32_t)n->bits;
                memcpy(&v[i], &bits, sizeof bits);
                break;
            }
            case KILN_OP_ADD: v[i] = v[g[0]] + v[g[1]]; break;
            case KILN_OP_SUB: v[i] = v[g[0]] - v[g[1]]; break;
            case KILN_OP_MUL: v[i] = v[g[0]] * v[g[1]]; break;
            case KILN_OP_NEG: v[i] = -v[g[0]]; break;
            case KILN_OP_FMA: v[i] = fmaf(v[g[0]], v[g[1]], v[g[2]]); break;
            default: v[i] = v[g[0]]; break; /* same-dtype cast: a copy */
            }
        }
        for (uint32_t o = 0; o < k->n_outputs; o++) {
            const kiln_ir_tensor *t = &a->outputs[o];
            ((float *)t->data)[offset(t, idx, a->rank)] = v[k->outputs[o]];
        }
        for (int i = a->rank - 1; i >= 0; i--) { /* next index, row-major */
            if (++idx[i] < a->domain[i])
                break;
            idx[i] = 0;
        }
    }
    a->gpu_ms = -1;
    return KILN_OK;
}

static const kiln_backend my_backend = {
    .abi_version = KILN_BACKEND_ABI_VERSION,
    .struct_size = sizeof(kiln_backend),
    .name = "my_backend",
    .memory = KILN_MEM_HOST,
    .open = my_open,
    .close = my_close,
    .identity = my_identity,
    .compile = my_compile,
    .release = my_release,
    .launch = my_launch,
    /* host memory: mem_alloc / mem_free / mem_copy stay NULL */
};

/* The one exported symbol: hand the descriptor to a host of our ABI. */
KILN_API const kiln_backend *kiln_backend_entry(uint32_t host_abi)
{
    return host_abi == KILN_BACKEND_ABI_VERSION ? &my_backend : NULL;
}
