/*
** ref.c -- the `ref` backend: the CPU reference interpreter and the oracle
** of the conformance suite (docs/backends.md, kiln_backend.h for the segment IR).
**
** compile() turns a segment into an immutable plan of whole-array steps;
** launch() runs it over blocks of up to BLK elements, one tight typed loop
** per node and block (never a per-element switch).  The plan:
**
**   - Every non-leaf node lives in a *domain*: D with some axes shrunk to
**     size 1 (`mask`), reached after `depth` reductions.  INPUT and CONST
**     nodes are leaves: they are loaded (gathered through their strided
**     view, stride 0 on size-1 axes) into whichever domain reads them, so
**     an input read after a REDUCE must be in keepdim form (kiln_backend.h).  A
**     pointwise node takes the largest domain of its non-leaf operands:
**     after a REDUCE it is in the reduced domain, unless it also reads a
**     computed value of D (then the reduced value broadcasts back over D,
**     which the planner does not emit today but ref supports).
**   - Nodes sharing (depth, mask) form a *group*, evaluated block by block
**     over its domain in row-major order.  Groups run in order of depth,
**     then from the smallest domain (most size-1 axes) to the largest, which
**     is a topological order of the groups.
**   - A REDUCE node is accumulated by the group of its operand and
**     materialised as a whole buffer over its keepdim domain; a MATMUL node
**     is computed before any group into an [M,N] buffer.  A pointwise value
**     read by another group is materialised too.  Materialised values are
**     read back with the same strided gather as inputs.
**
** Numerics (the contract of docs/numerics.md):
**   - add/sub/mul/div/sqrt/reciprocal/fma, casts, neg/abs, min/max,
**     comparisons, where, floor/ceil, relu are correctly rounded / exact:
**     computed in the dtype itself (the build uses -ffp-contract=off, so a
**     MUL feeding an ADD rounds twice; FMA nodes call fmaf/fma).
**   - f32 transcendentals are computed in double and rounded once to f32
**     (rsqrt = 1/sqrt, sigmoid = 1/(1+exp(-x)) in double): within 1 ulp.
**     f64 transcendentals are computed in long double (x86-64: 64-bit
**     significand) and rounded to double: within 1 ulp on glibc (the
**     contract bounds are 1-4 ulp); f64 rsqrt is then corrected to the
**     correctly rounded result with an exact integer test.  Under valgrind, which emulates long
**     double with double, they degrade to ~2 ulp.
**   - maximum/minimum and max/min reductions propagate NaN (torch).
**   - Sums: f32 accumulates in double, f64 with Neumaier (compensated)
**     summation, integers wrap (unsigned arithmetic).  An all-zero sum keeps
**     the IEEE sign; a sum over an empty axis is +0; max/min over an empty
**     axis is KILN_ERR_SHAPE.
**   - Matmul: products and sums in double per output element (exact
**     products for f16/bf16/f32 inputs), summed in K order, rounded once to
**     f32.
** The kernel-key identity is "<name> kiln-<version> contract=<0|1>" and
** depends on nothing else: contraction is already explicit in the IR, and
** fast_math / lineinfo / debug do not change what ref computes.
**
** The per-element arithmetic of every op and the reduction accumulators,
** where the numerics above live, are ref_math.c's (ref.h: the plan types
** both files read).  What stays here is past 800 lines because it is one
** interpreter: compile() builds the step list and launch() is its only
** reader (the step kinds, groups, domains and scratch layout change
** together).
**
** Thread safety: a compiled plan is immutable; launch allocates its own
** scratch, so one handle may be launched from several threads at once.
*/
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backends/ref.h"
#include "internal.h"
#include "numeric.h"

#define BLK 1024 /* elements per block */

/* --------------------------------------------------------------- state */

/* ref keeps nothing per open instance, but open() still allocates a state:
** every instance then has its own non-NULL state pointer, which the runtime
** compares to tell its reference path apart from the backend
** (fallback.c). */
typedef struct ref_state {
    char unused;
} ref_state;

/* ---------------------------------------------------------------- plan */


static kiln_status fail(char *err, size_t cap, kiln_status s, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));
static kiln_status fail(char *err, size_t cap, kiln_status s, const char *fmt,
                        ...)
{
    if (err != NULL && cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* Operand count of a valid op (the op table, runtime/fusion.c). */

#define DT(t) (1u << (t))

/* Check node i of the copied plan; NULL if fine, else a message. */
static kiln_status check_node(const kiln_ir_segment *seg, uint32_t i,
                              char *err, size_t cap)
{
    const kiln_ir_node *n = &seg->nodes[i];
    int op = n->op;
    if (op >= KILN_OP_COUNT)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: node %u: invalid op %d", i, op);
    const char *name = kiln_op_name((kiln_op)op);
    if (n->dtype >= KILN_DTYPE_COUNT)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: node %u (%s): invalid dtype %d", i, name, n->dtype);
    int ar = arity_of(op);
    for (int j = 0; j < 3; j++) {
        int32_t a = n->args[j];
        if (j < ar && (a < 0 || (uint32_t)a >= i))
            return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                        "ref: node %u (%s): operand %d refers to node %d, "
                        "not an earlier node",
                        i, name, j, (int)a);
    }
    if (op == KILN_OP_INPUT && (n->io < 0 || (uint32_t)n->io >= seg->n_inputs))
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: node %u: input index %d outside 0..%u", i,
                    (int)n->io, seg->n_inputs);
    const kiln_op_desc *row = kiln__op_desc((kiln_op)op); /* what ref implements */
    if (op == KILN_OP_BROADCAST)
        return fail(err, cap, KILN_ERR_UNSUPPORTED,
                    "ref: node %u: broadcast nodes must be removed by the "
                    "planner (views carry stride 0 instead)",
                    i);
    /* the dtype the row's columns apply to: the first value operand (where:
    ** after the bool condition), or the node itself for a leaf */
    int first_val = op == KILN_OP_WHERE ? 1 : 0;
    int adt = ar > 0 ? seg->nodes[n->args[first_val]].dtype : n->dtype;
    int bad = !(row->accepts & DT(adt)) ? adt : -1;
    if (op == KILN_OP_WHERE && seg->nodes[n->args[0]].dtype != KILN_BOOL)
        bad = seg->nodes[n->args[0]].dtype;
    if (bad >= 0)
        return fail(err, cap, KILN_ERR_UNSUPPORTED,
                    "ref: node %u: %s does not accept %s", i, name,
                    kiln_dtype_name((kiln_dtype)bad));
    /* all value operands share a dtype */
    if (op != KILN_OP_CAST) {
        for (int j = first_val + 1; j < ar; j++) {
            int d = seg->nodes[n->args[j]].dtype;
            int d0 = seg->nodes[n->args[first_val]].dtype;
            if (d != d0)
                return fail(err, cap, KILN_ERR_UNSUPPORTED,
                            "ref: node %u: %s operands have dtypes %s and %s",
                            i, name, kiln_dtype_name((kiln_dtype)d0),
                            kiln_dtype_name((kiln_dtype)d));
        }
    }
    int want = row->result == KILN_RESULT_SAME ? adt : row->result;
    if (want >= 0 && n->dtype != want)
        return fail(err, cap, KILN_ERR_UNSUPPORTED,
                    "ref: node %u: %s of %s gives %s, not %s", i, name,
                    kiln_dtype_name((kiln_dtype)adt),
                    kiln_dtype_name((kiln_dtype)want),
                    kiln_dtype_name((kiln_dtype)n->dtype));
    if (op == KILN_OP_MATMUL &&
        (seg->nodes[n->args[0]].op != KILN_OP_INPUT ||
         seg->nodes[n->args[1]].op != KILN_OP_INPUT))
        return fail(err, cap, KILN_ERR_UNSUPPORTED,
                    "ref: node %u: matmul operands must be segment inputs", i);
    return KILN_OK;
}

static int popcount32(uint32_t x) { return __builtin_popcount(x); }

static int32_t get_group(rgroup *g, uint32_t *ng, int32_t depth, uint32_t mask)
{
    for (uint32_t i = 0; i < *ng; i++)
        if (g[i].depth == depth && g[i].mask == mask)
            return (int32_t)i;
    g[*ng].depth = depth;
    g[*ng].mask = mask;
    g[*ng].first = g[*ng].count = 0;
    return (int32_t)(*ng)++;
}

static int add_step(ref_kernel *k, int kind, int32_t node, int32_t out)
{
    if (k->n_steps == k->cap_steps) {
        uint32_t cap = k->cap_steps ? 2 * k->cap_steps : 16;
        rstep *s = kiln__realloc(k->steps, cap * sizeof *s);
        if (s == NULL)
            return 0;
        k->steps = s;
        k->cap_steps = cap;
    }
    k->steps[k->n_steps].kind = (uint8_t)kind;
    k->steps[k->n_steps].node = node;
    k->steps[k->n_steps].out = out;
    k->n_steps++;
    return 1;
}

static void kernel_free(ref_kernel *k)
{
    if (k == NULL)
        return;
    kiln__free(k->nodes);
    kiln__free(k->outputs);
    kiln__free(k->groups);
    kiln__free(k->steps);
    kiln__free(k);
}

/* Make node a available in group g (a load step unless computed there). */
static int ensure(ref_kernel *k, uint8_t *avail, int32_t g, int32_t a)
{
    if (avail[a])
        return 1;
    const rnode *n = &k->nodes[a];
    int kind;
    if (n->ir.op == KILN_OP_INPUT)
        kind = ST_LOAD_IN;
    else if (n->ir.op == KILN_OP_CONST)
        kind = ST_FILL;
    else
        kind = ST_LOAD_MAT; /* materialised in another group */
    (void)g;
    avail[a] = 1;
    return add_step(k, kind, a, -1);
}

static int cmp_group(const rgroup *a, const rgroup *b)
{
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    int pa = popcount32(a->mask), pb = popcount32(b->mask);
    if (pa != pb)
        return pa > pb ? -1 : 1; /* smaller domains first */
    return a->mask < b->mask ? -1 : a->mask > b->mask;
}

static kiln_status build_plan(ref_kernel *k, char *err, size_t cap)
{
    uint32_t n = k->n_nodes;
    rgroup *g = kiln__calloc(2 * (size_t)n + 2, sizeof *g); /* <= 2n+1 */
    uint8_t *avail = kiln__calloc(n, 1);
    uint32_t *order = kiln__calloc(n + 1, sizeof *order);
    uint32_t ng = 0;
    kiln_status st = KILN_OK;
    if (g == NULL || avail == NULL || order == NULL) {
        st = fail(err, cap, KILN_ERR_NO_MEMORY, "ref: out of memory compiling");
        goto done;
    }
    /* Domains and groups. */
    for (uint32_t i = 0; i < n; i++) {
        rnode *nd = &k->nodes[i];
        int op = nd->ir.op;
        nd->group = nd->accum = nd->home = -1;
        if (op == KILN_OP_INPUT || op == KILN_OP_CONST) {
            nd->leaf = 1;
        } else if (op == KILN_OP_MATMUL) {
            nd->mat = 1;
        } else if (kiln__op_is_reduce(op)) {
            const rnode *a = &k->nodes[nd->ir.args[0]];
            uint32_t am = a->leaf ? 0 : a->mask;
            int32_t ad = a->leaf ? 0 : a->depth;
            nd->accum = get_group(g, &ng, ad, am);
            nd->depth = ad + 1;
            nd->mask = am | nd->ir.axes;
            nd->mat = 1;
        } else {
            int any = 0;
            uint32_t m = ~0u;
            int32_t d = 0;
            for (int j = 0; j < arity_of(op); j++) {
                const rnode *a = &k->nodes[nd->ir.args[j]];
                if (a->leaf)
                    continue;
                any = 1;
                m &= a->mask;
                if (a->depth > d)
                    d = a->depth;
            }
            nd->mask = any ? m : 0;
            nd->depth = d;
            nd->group = get_group(g, &ng, d, nd->mask);
        }
    }
    /* Values read outside their own group are materialised. */
    for (uint32_t i = 0; i < n; i++) {
        rnode *nd = &k->nodes[i];
        if (nd->group < 0)
            continue;
        for (int j = 0; j < arity_of(nd->ir.op); j++) {
            rnode *a = &k->nodes[nd->ir.args[j]];
            if (!a->leaf && a->group >= 0 && a->group != nd->group)
                a->mat = 1;
        }
    }
    /* Home groups of outputs that are not computed by a group. */
    for (uint32_t j = 0; j < k->n_outputs; j++) {
        rnode *nd = &k->nodes[k->outputs[j]];
        if (nd->group >= 0 || nd->home >= 0)
            continue;
        if (nd->leaf || nd->ir.op == KILN_OP_MATMUL)
            nd->home = get_group(g, &ng, 0, 0);
        else
            nd->home = get_group(g, &ng, nd->depth, nd->mask);
    }
    /* Execution order of the groups. */
    for (uint32_t i = 0; i < ng; i++)
        order[i] = i;
    for (uint32_t i = 1; i < ng; i++) { /* insertion sort: few groups */
        uint32_t x = order[i], j = i;
        while (j > 0 && cmp_group(&g[x], &g[order[j - 1]]) < 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    k->groups = kiln__calloc(ng ? ng : 1, sizeof *k->groups);
    if (k->groups == NULL) {
        st = fail(err, cap, KILN_ERR_NO_MEMORY, "ref: out of memory compiling");
        goto done;
    }
    for (uint32_t oi = 0; oi < ng; oi++) {
        int32_t gi = (int32_t)order[oi];
        rgroup *out = &k->groups[oi];
        *out = g[gi];
        out->first = k->n_steps;
        memset(avail, 0, n);
        int ok = 1;
        for (uint32_t i = 0; i < n && ok; i++) {
            rnode *nd = &k->nodes[i];
            if (nd->group == gi) {
                for (int j = 0; j < arity_of(nd->ir.op) && ok; j++)
                    ok = ensure(k, avail, gi, nd->ir.args[j]);
                ok = ok && add_step(k, ST_COMPUTE, (int32_t)i, -1);
                avail[i] = 1;
                if (ok && nd->mat)
                    ok = add_step(k, ST_STORE_MAT, (int32_t)i, -1);
            } else if (nd->accum == gi) {
                ok = ensure(k, avail, gi, nd->ir.args[0]) &&
                     add_step(k, ST_ACCUM, (int32_t)i, -1);
            }
        }
        for (uint32_t j = 0; j < k->n_outputs && ok; j++) {
            int32_t o = k->outputs[j];
            rnode *nd = &k->nodes[o];
            if (nd->group == gi || nd->home == gi)
                ok = ensure(k, avail, gi, o) &&
                     add_step(k, ST_STORE_OUT, o, (int32_t)j);
        }
        for (uint32_t i = 0; i < n && ok; i++)
            if (k->nodes[i].accum == gi)
                ok = add_step(k, ST_FINALIZE, (int32_t)i, -1);
        if (!ok) {
            st = fail(err, cap, KILN_ERR_NO_MEMORY,
                      "ref: out of memory compiling");
            goto done;
        }
        out->count = k->n_steps - out->first;
    }
    k->n_groups = ng;
    for (uint32_t i = 0; i < n; i++)
        k->n_mat += k->nodes[i].mat;
done:
    kiln__free(g);
    kiln__free(avail);
    kiln__free(order);
    return st;
}

/* ------------------------------------------------------------- backend */

static kiln_status ref_open(int device, void **state, char *err, size_t cap)
{
    (void)device; /* host memory: every device ordinal is the host */
    if (state == NULL)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "ref: state is NULL");
    ref_state *s = kiln__malloc(sizeof *s);
    if (s == NULL)
        return fail(err, cap, KILN_ERR_NO_MEMORY, "ref: out of memory");
    s->unused = 0;
    *state = s;
    return KILN_OK;
}

static void ref_close(void *state) { kiln__free(state); }

static int ko_contract(const kiln_kernel_options *ko)
{
    if (ko == NULL ||
        ko->struct_size < offsetof(kiln_kernel_options, contract) + sizeof(int))
        return 1;
    return ko->contract != 0;
}

static kiln_status ref_identity(void *state, const kiln_kernel_options *ko,
                                char *buf, size_t cap)
{
    if (buf == NULL || cap == 0)
        return KILN_ERR_INVALID_ARGUMENT;
    (void)state;
    int n = snprintf(buf, cap, "ref kiln-%s contract=%d", KILN_VERSION_STRING,
                     ko_contract(ko));
    return n >= 0 && (size_t)n < cap ? KILN_OK : KILN_ERR_LIMIT;
}

static kiln_status ref_compile(void *state, const kiln_ir_segment *seg,
                               const kiln_kernel_options *ko,
                               kiln_kernel_out *out, char *err, size_t cap)
{
    if (seg == NULL || out == NULL)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: compile: NULL segment or output");
    if (seg->struct_size < offsetof(kiln_ir_segment, input_traits))
        return fail(err, cap, KILN_ERR_ABI,
                    "ref: segment struct_size %u too small", seg->struct_size);
    if (seg->kind > KILN_SEGK_MATMUL_FALLBACK)
        return fail(err, cap, KILN_ERR_UNSUPPORTED,
                    "ref: unknown segment kind %u", seg->kind);
    if (seg->n_nodes == 0 || seg->nodes == NULL || seg->n_outputs == 0 ||
        seg->outputs == NULL)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: segment without nodes or outputs");
    for (uint32_t i = 0; i < seg->n_nodes; i++) {
        kiln_status s = check_node(seg, i, err, cap);
        if (s != KILN_OK)
            return s;
    }
    for (uint32_t j = 0; j < seg->n_outputs; j++)
        if (seg->outputs[j] < 0 || (uint32_t)seg->outputs[j] >= seg->n_nodes)
            return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                        "ref: output %u refers to node %d of %u", j,
                        (int)seg->outputs[j], seg->n_nodes);
    (void)state;
    ref_kernel *k = kiln__calloc(1, sizeof *k);
    if (k == NULL)
        return fail(err, cap, KILN_ERR_NO_MEMORY, "ref: out of memory compiling");
    k->kind = seg->kind;
    k->n_nodes = seg->n_nodes;
    k->n_inputs = seg->n_inputs;
    k->n_outputs = seg->n_outputs;
    k->nodes = kiln__calloc(seg->n_nodes, sizeof *k->nodes);
    k->outputs = kiln__calloc(seg->n_outputs, sizeof *k->outputs);
    if (k->nodes == NULL || k->outputs == NULL) {
        kernel_free(k);
        return fail(err, cap, KILN_ERR_NO_MEMORY, "ref: out of memory compiling");
    }
    for (uint32_t i = 0; i < seg->n_nodes; i++)
        k->nodes[i].ir = seg->nodes[i];
    memcpy(k->outputs, seg->outputs, seg->n_outputs * sizeof *k->outputs);
    kiln_status s = build_plan(k, err, cap);
    if (s != KILN_OK) {
        kernel_free(k);
        return s;
    }
    out->handle = k;
    snprintf(out->path, sizeof out->path, "%s",
             seg->kind == KILN_SEGK_MATMUL_FALLBACK ? "ref" : "generated");
    snprintf(out->flags, sizeof out->flags, "contract=%d", ko_contract(ko));
    return KILN_OK;
}

static void ref_release(void *state, void *handle)
{
    (void)state;
    kernel_free(handle);
}

/* -------------------------------------------------------- index walking */

typedef struct dom {
    int r;
    int64_t dims[KILN_MAX_RANK];
    int64_t numel;
} dom;

static void unravel(const dom *d, int64_t s, int64_t *c)
{
    for (int i = d->r - 1; i >= 0; i--) {
        c[i] = d->dims[i] ? s % d->dims[i] : 0;
        s = d->dims[i] ? s / d->dims[i] : 0;
    }
}

/* Offsets (in elements) of n consecutive domain elements starting at
** coordinates c0, for a view with strides st (0 on broadcast axes). */
static void walk(const dom *d, const int64_t *c0, int64_t n,
                 const int64_t *st, int64_t *o)
{
    int r = d->r;
    if (r == 0) {
        for (int64_t j = 0; j < n; j++)
            o[j] = 0;
        return;
    }
    int64_t c[KILN_MAX_RANK];
    int64_t off = 0;
    for (int i = 0; i < r; i++) {
        c[i] = c0[i];
        off += c[i] * st[i];
    }
    int64_t inner = d->dims[r - 1], sin = st[r - 1];
    int64_t j = 0;
    while (j < n) {
        int64_t run = inner - c[r - 1];
        if (run > n - j)
            run = n - j;
        for (int64_t t = 0; t < run; t++)
            o[j + t] = off + t * sin;
        j += run;
        off += run * sin;
        c[r - 1] += run;
        if (c[r - 1] < inner)
            continue;
        off -= inner * sin;
        c[r - 1] = 0;
        for (int a = r - 2; a >= 0; a--) {
            c[a]++;
            off += st[a];
            if (c[a] < d->dims[a])
                break;
            off -= d->dims[a] * st[a];
            c[a] = 0;
        }
    }
}

/* Strides of a view of sizes vs over domain d: 0 on size-1 axes; *contig
** set when the view is the dense row-major layout of d. */
static void view_strides(const dom *d, const int64_t *sizes,
                         const int64_t *strides, int64_t *st, int *contig)
{
    int64_t expect = 1;
    *contig = 1;
    for (int i = d->r - 1; i >= 0; i--) {
        st[i] = (d->dims[i] == 1 || sizes[i] == 1) ? 0 : strides[i];
        if (d->dims[i] != 1 && st[i] != expect)
            *contig = 0;
        expect *= d->dims[i];
    }
}

/* Dense row-major strides of a buffer over domain b, read from domain d
** (b's size-1 axes broadcast). */
static void dense_strides(const dom *b, const dom *d, int64_t *st, int *contig)
{
    int64_t dense[KILN_MAX_RANK];
    int64_t m = 1;
    for (int i = b->r - 1; i >= 0; i--) {
        dense[i] = m;
        m *= b->dims[i];
    }
    view_strides(d, b->dims, dense, st, contig);
}

static void gather(void *dst, const char *base, size_t es, const int64_t *o,
                   int64_t n, int contig, int64_t start)
{
    char *d = dst;
    if (contig) {
        memcpy(d, base + (size_t)start * es, (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(d + (size_t)i * es, base + o[i] * (int64_t)es, es);
}

static void scatter(char *base, const void *src, size_t es, const int64_t *o,
                    int64_t n, int contig, int64_t start)
{
    const char *s = src;
    if (contig) {
        memcpy(base + (size_t)start * es, s, (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(base + o[i] * (int64_t)es, s + (size_t)i * es, es);
}

static void fill(void *dst, size_t es, uint64_t bits, int64_t n)
{
    char tmp[8];
    kiln__store_bits(es == 1 ? KILN_BOOL : es == 2 ? KILN_F16
                     : es == 4 ? KILN_F32 : KILN_F64, tmp, bits);
    char *d = dst;
    for (int64_t i = 0; i < n; i++)
        memcpy(d + (size_t)i * es, tmp, es);
}

/* ---------------------------------------------------------------- matmul */

static kiln_status matmul(const kiln_ir_tensor *A, const kiln_ir_tensor *B,
                          int64_t M, int64_t N, int64_t K, float *out,
                          char *err, size_t cap)
{
    double *b = NULL, *acc = NULL;
    int64_t kn;
    if (kiln_ckd_mul(K, N, &kn) || (uint64_t)kn > SIZE_MAX / 16 ||
        (uint64_t)N > SIZE_MAX / 16)
        return fail(err, cap, KILN_ERR_LIMIT, "ref: matmul too large");
    b = kiln__malloc((size_t)(kn ? kn : 1) * sizeof *b);
    acc = kiln__malloc((size_t)(N ? N : 1) * sizeof *acc);
    if (b == NULL || acc == NULL) {
        kiln__free(b);
        kiln__free(acc);
        return fail(err, cap, KILN_ERR_NO_MEMORY, "ref: out of memory (matmul)");
    }
    size_t esA = kiln_dtype_size((kiln_dtype)A->dtype);
    size_t esB = kiln_dtype_size((kiln_dtype)B->dtype);
    int64_t a0 = A->sizes[0] == 1 ? 0 : A->strides[0];
    int64_t a1 = A->sizes[1] == 1 ? 0 : A->strides[1];
    int64_t b0 = B->sizes[0] == 1 ? 0 : B->strides[0];
    int64_t b1 = B->sizes[1] == 1 ? 0 : B->strides[1];
    const char *pa = A->data, *pb = B->data;
    for (int64_t kk = 0; kk < K; kk++)
        for (int64_t j = 0; j < N; j++)
            b[kk * N + j] = kiln__load_f64((kiln_dtype)B->dtype,
                                           pb + (kk * b0 + j * b1) * (int64_t)esB);
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++)
            acc[j] = 0.0;
        for (int64_t kk = 0; kk < K; kk++) {
            double av = kiln__load_f64((kiln_dtype)A->dtype,
                                       pa + (i * a0 + kk * a1) * (int64_t)esA);
            const double *brow = b + kk * N;
            for (int64_t j = 0; j < N; j++)
                acc[j] += av * brow[j]; /* exact product, one rounding */
        }
        for (int64_t j = 0; j < N; j++)
            out[i * N + j] = kiln__f64_to_f32(acc[j]);
    }
    kiln__free(b);
    kiln__free(acc);
    return KILN_OK;
}

/* ---------------------------------------------------------------- launch */

static int mul_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static int make_dom(int r, const int64_t *D, uint32_t mask, dom *d)
{
    d->r = r;
    d->numel = 1;
    for (int i = 0; i < r; i++) {
        d->dims[i] = (mask >> i) & 1u ? 1 : D[i];
        if (!mul_ok(d->numel, d->dims[i], &d->numel))
            return 0;
    }
    return 1;
}

static kiln_status check_view(const kiln_ir_tensor *v, const dom *d,
                              int exact, const char *what, uint32_t idx,
                              char *err, size_t cap)
{
    if (v->rank != d->r)
        return fail(err, cap, KILN_ERR_SHAPE,
                    "ref: %s %u has rank %d, its domain has rank %d", what,
                    idx, (int)v->rank, d->r);
    for (int i = 0; i < d->r; i++) {
        int64_t s = v->sizes[i];
        if (s == d->dims[i] || (!exact && s == 1))
            continue;
        return fail(err, cap, KILN_ERR_SHAPE,
                    "ref: %s %u: axis %d has size %lld, the domain has %lld",
                    what, idx, i, (long long)s, (long long)d->dims[i]);
    }
    if (d->numel > 0 && v->data == NULL)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: %s %u has no data", what, idx);
    return KILN_OK;
}

/* Launch scratch.  One block holds the per-node tables, the offsets and the
** block buffers (on the stack when it is small, which keeps a tiny launch
** free of malloc); materialised buffers and accumulators are separate. */
typedef struct lscratch {
    void **slot;      /* per node: block buffer */
    void **mat;       /* per node: materialised buffer */
    racc *acc;        /* per node (REDUCE only) */
    int64_t *offs;
    char *block;      /* the one allocation, or NULL when on the stack */
} lscratch;

#define STACK_SCRATCH 4096

static void scratch_free(const ref_kernel *k, lscratch *s)
{
    if (s->mat != NULL && k->n_mat > 0)
        for (uint32_t i = 0; i < k->n_nodes; i++) {
            kiln__free(s->mat[i]);
            kiln__free(s->acc[i].acc);
            kiln__free(s->acc[i].comp);
        }
    kiln__free(s->block);
}

/* The domain of node nd's materialised buffer. */
static int node_dom(const rnode *nd, const kiln_launch *L, dom *d)
{
    return make_dom(L->rank, L->domain, nd->mask, d);
}

static kiln_status validate(const ref_kernel *k, const kiln_launch *L,
                            int64_t *max_numel, char *err, size_t cap)
{
    if (L->rank < 0 || L->rank > KILN_MAX_RANK)
        return fail(err, cap, KILN_ERR_SHAPE, "ref: domain rank %d", (int)L->rank);
    for (int i = 0; i < L->rank; i++)
        if (L->domain[i] < 0)
            return fail(err, cap, KILN_ERR_SHAPE,
                        "ref: domain axis %d has negative size %lld", i,
                        (long long)L->domain[i]);
    if (L->n_inputs != k->n_inputs || L->n_outputs != k->n_outputs)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: launch has %u inputs and %u outputs, the segment "
                    "%u and %u",
                    L->n_inputs, L->n_outputs, k->n_inputs, k->n_outputs);
    if ((k->n_inputs && L->inputs == NULL) || L->outputs == NULL)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: launch without input or output views");
    uint32_t rmask = L->rank >= 32 ? ~0u : ((1u << L->rank) - 1);
    for (uint32_t i = 0; i < k->n_nodes; i++) {
        const rnode *nd = &k->nodes[i];
        if (nd->ir.op == KILN_OP_INPUT &&
            L->inputs[nd->ir.io].dtype != nd->ir.dtype)
            return fail(err, cap, KILN_ERR_DTYPE,
                        "ref: input %d is %s, the segment expects %s",
                        (int)nd->ir.io,
                        kiln_dtype_name((kiln_dtype)L->inputs[nd->ir.io].dtype),
                        kiln_dtype_name((kiln_dtype)nd->ir.dtype));
        if (kiln__op_is_reduce(nd->ir.op) && (nd->ir.axes & ~rmask))
            return fail(err, cap, KILN_ERR_SHAPE,
                        "ref: node %u reduces axes 0x%x of a rank-%d domain",
                        i, nd->ir.axes, (int)L->rank);
        if (nd->ir.op == KILN_OP_MATMUL) {
            if (L->rank != 2 || L->k < 0)
                return fail(err, cap, KILN_ERR_SHAPE,
                            "ref: matmul needs a rank-2 domain and k >= 0");
            int64_t M = L->domain[0], N = L->domain[1], K = L->k;
            dom da = {2, {M, K}, 0}, db = {2, {K, N}, 0};
            const kiln_ir_tensor *va = &L->inputs[k->nodes[nd->ir.args[0]].ir.io];
            const kiln_ir_tensor *vb = &L->inputs[k->nodes[nd->ir.args[1]].ir.io];
            if (!mul_ok(M, K, &da.numel) || !mul_ok(K, N, &db.numel))
                return fail(err, cap, KILN_ERR_LIMIT, "ref: matmul too large");
            kiln_status s = check_view(va, &da, 0, "matmul operand", 0, err, cap);
            if (s == KILN_OK)
                s = check_view(vb, &db, 0, "matmul operand", 1, err, cap);
            if (s != KILN_OK)
                return s;
        }
        if (kiln__op_is_reduce(nd->ir.op) && nd->ir.op != KILN_OP_SUM) {
            dom r, a;
            const rnode *an = &k->nodes[nd->ir.args[0]];
            if (!node_dom(nd, L, &r) || !make_dom(L->rank, L->domain,
                                                  an->leaf ? 0 : an->mask, &a))
                return fail(err, cap, KILN_ERR_LIMIT, "ref: domain too large");
            if (a.numel == 0 && r.numel > 0)
                return fail(err, cap, KILN_ERR_SHAPE,
                            "ref: %s over an empty axis (node %u)",
                            kiln_op_name((kiln_op)nd->ir.op), i);
        }
    }
    for (uint32_t j = 0; j < k->n_outputs; j++) {
        const rnode *nd = &k->nodes[k->outputs[j]];
        if (L->outputs[j].dtype != nd->ir.dtype)
            return fail(err, cap, KILN_ERR_DTYPE,
                        "ref: output %u is %s, the segment computes %s", j,
                        kiln_dtype_name((kiln_dtype)L->outputs[j].dtype),
                        kiln_dtype_name((kiln_dtype)nd->ir.dtype));
    }
    *max_numel = 0;
    for (uint32_t gi = 0; gi < k->n_groups; gi++) {
        const rgroup *g = &k->groups[gi];
        dom d;
        if (!make_dom(L->rank, L->domain, g->mask, &d))
            return fail(err, cap, KILN_ERR_LIMIT, "ref: domain too large");
        if (d.numel > *max_numel)
            *max_numel = d.numel;
        for (uint32_t si = g->first; si < g->first + g->count; si++) {
            const rstep *st = &k->steps[si];
            kiln_status s = KILN_OK;
            if (st->kind == ST_LOAD_IN)
                s = check_view(&L->inputs[k->nodes[st->node].ir.io], &d, 0,
                               "input", (uint32_t)k->nodes[st->node].ir.io,
                               err, cap);
            else if (st->kind == ST_STORE_OUT)
                s = check_view(&L->outputs[st->out], &d, 1, "output",
                               (uint32_t)st->out, err, cap);
            if (s != KILN_OK)
                return s;
        }
    }
    return KILN_OK;
}

static kiln_status alloc_scratch(const ref_kernel *k, const kiln_launch *L,
                                 int64_t blk, lscratch *s, void *stack,
                                 char *err, size_t cap)
{
    uint32_t n = k->n_nodes;
    size_t tables = (size_t)n * (2 * sizeof(void *) + sizeof(racc));
    size_t total = tables + (size_t)blk * 8 + (size_t)n * (size_t)blk * 8;
    char *p = stack;
    memset(s, 0, sizeof *s);
    if (total > STACK_SCRATCH) {
        p = s->block = kiln__malloc(total);
        if (p == NULL)
            return fail(err, cap, KILN_ERR_NO_MEMORY,
                        "ref: out of memory (launch)");
    }
    memset(p, 0, tables);
    s->slot = (void **)p;
    s->mat = (void **)(p + (size_t)n * sizeof(void *));
    s->acc = (racc *)(p + (size_t)n * 2 * sizeof(void *));
    s->offs = (int64_t *)(p + tables);
    char *slots = p + tables + (size_t)blk * 8;
    for (uint32_t i = 0; i < n; i++) {
        const rnode *nd = &k->nodes[i];
        s->slot[i] = slots + (size_t)i * (size_t)blk * 8;
        if (!nd->mat)
            continue;
        dom d;
        if (!node_dom(nd, L, &d))
            return fail(err, cap, KILN_ERR_LIMIT, "ref: domain too large");
        size_t es = kiln_dtype_size((kiln_dtype)nd->ir.dtype);
        if ((uint64_t)d.numel > SIZE_MAX / 16)
            return fail(err, cap, KILN_ERR_LIMIT, "ref: buffer too large");
        s->mat[i] = kiln__malloc((size_t)(d.numel ? d.numel : 1) * es);
        if (s->mat[i] == NULL)
            goto oom;
        if (kiln__op_is_reduce(nd->ir.op)) {
            racc *r = &s->acc[i];
            const rnode *an = &k->nodes[nd->ir.args[0]];
            dom a;
            if (!make_dom(L->rank, L->domain, an->leaf ? 0 : an->mask, &a))
                return fail(err, cap, KILN_ERR_LIMIT, "ref: domain too large");
            r->nr = d.numel;
            r->empty = a.numel == 0;
            r->acc = kiln__malloc((size_t)(d.numel ? d.numel : 1) * 8);
            if (r->acc == NULL)
                goto oom;
            if (nd->ir.op == KILN_OP_SUM && nd->ir.dtype == KILN_F64) {
                r->comp = kiln__malloc((size_t)(d.numel ? d.numel : 1) * 8);
                if (r->comp == NULL)
                    goto oom;
            }
            kiln__ref_acc_init(nd, r);
        }
    }
    return KILN_OK;
oom:
    return fail(err, cap, KILN_ERR_NO_MEMORY, "ref: out of memory (launch)");
}

static void run_group(const ref_kernel *k, const rgroup *g,
                      const kiln_launch *L, int64_t blk, lscratch *s)
{
    dom d;
    make_dom(L->rank, L->domain, g->mask, &d);
    int64_t c0[KILN_MAX_RANK];
    for (int64_t start = 0; start < d.numel; start += blk) {
        int64_t n = d.numel - start < blk ? d.numel - start : blk;
        unravel(&d, start, c0);
        for (uint32_t si = g->first; si < g->first + g->count; si++) {
            const rstep *st = &k->steps[si];
            const rnode *nd = &k->nodes[st->node];
            size_t es = kiln_dtype_size((kiln_dtype)nd->ir.dtype);
            int64_t vs[KILN_MAX_RANK];
            int contig;
            switch (st->kind) {
            case ST_LOAD_IN: {
                const kiln_ir_tensor *v = &L->inputs[nd->ir.io];
                view_strides(&d, v->sizes, v->strides, vs, &contig);
                if (!contig)
                    walk(&d, c0, n, vs, s->offs);
                gather(s->slot[st->node], v->data, es, s->offs, n, contig,
                       start);
                break;
            }
            case ST_FILL:
                fill(s->slot[st->node], es, nd->ir.bits, n);
                break;
            case ST_LOAD_MAT: {
                dom b;
                node_dom(nd, L, &b);
                dense_strides(&b, &d, vs, &contig);
                if (!contig)
                    walk(&d, c0, n, vs, s->offs);
                gather(s->slot[st->node], s->mat[st->node], es, s->offs, n,
                       contig, start);
                break;
            }
            case ST_COMPUTE:
                kiln__ref_compute(k, nd, s->slot, st->node, n);
                break;
            case ST_ACCUM: {
                dom b;
                node_dom(nd, L, &b);
                dense_strides(&b, &d, vs, &contig);
                walk(&d, c0, n, vs, s->offs);
                kiln__ref_accumulate(nd, &s->acc[st->node], s->slot[nd->ir.args[0]],
                           s->offs, n);
                break;
            }
            case ST_STORE_OUT: {
                const kiln_ir_tensor *v = &L->outputs[st->out];
                view_strides(&d, v->sizes, v->strides, vs, &contig);
                if (!contig)
                    walk(&d, c0, n, vs, s->offs);
                scatter(v->data, s->slot[st->node], es, s->offs, n, contig,
                        start);
                break;
            }
            case ST_STORE_MAT:
                scatter(s->mat[st->node], s->slot[st->node], es, NULL, n, 1,
                        start);
                break;
            default:
                break;
            }
        }
    }
    for (uint32_t si = g->first; si < g->first + g->count; si++) {
        const rstep *st = &k->steps[si];
        if (st->kind == ST_FINALIZE)
            kiln__ref_finalize(&k->nodes[st->node], &s->acc[st->node], s->mat[st->node]);
    }
}

static kiln_status ref_launch(void *state, void *handle, kiln_launch *L,
                              char *err, size_t cap)
{
    (void)state;
    const ref_kernel *k = handle;
    if (k == NULL || L == NULL)
        return fail(err, cap, KILN_ERR_INVALID_ARGUMENT,
                    "ref: launch: NULL kernel or arguments");
    if (L->struct_size < offsetof(kiln_launch, profile))
        return fail(err, cap, KILN_ERR_ABI, "ref: launch struct_size %u too small",
                    L->struct_size);
    if (L->struct_size >= offsetof(kiln_launch, gpu_ms) + sizeof(double))
        L->gpu_ms = -1.0;
    int64_t max_numel = 0;
    kiln_status st = validate(k, L, &max_numel, err, cap);
    if (st != KILN_OK)
        return st;
    int64_t blk = max_numel < BLK ? (max_numel > 0 ? max_numel : 1) : BLK;
    lscratch s;
    union {
        max_align_t align;
        char bytes[STACK_SCRATCH];
    } stack;
    st = alloc_scratch(k, L, blk, &s, stack.bytes, err, cap);
    for (uint32_t i = 0; i < k->n_nodes && st == KILN_OK; i++) {
        const rnode *nd = &k->nodes[i];
        if (nd->ir.op == KILN_OP_MATMUL)
            st = matmul(&L->inputs[k->nodes[nd->ir.args[0]].ir.io],
                        &L->inputs[k->nodes[nd->ir.args[1]].ir.io],
                        L->domain[0], L->domain[1], L->k, s.mat[i], err, cap);
    }
    if (st == KILN_OK)
        for (uint32_t gi = 0; gi < k->n_groups; gi++)
            run_group(k, &k->groups[gi], L, blk, &s);
    scratch_free(k, &s);
    return st;
}

/* ----------------------------------------------------------------- table */

static const kiln_backend ref_table = {
    .abi_version = KILN_BACKEND_ABI_VERSION,
    .struct_size = sizeof(kiln_backend),
    .name = "ref",
    .memory = KILN_MEM_HOST,
    .open = ref_open,
    .close = ref_close,
    .identity = ref_identity,
    .compile = ref_compile,
    .release = ref_release,
    .launch = ref_launch,
};

const kiln_backend *kiln__backend_ref(void) { return &ref_table; }
