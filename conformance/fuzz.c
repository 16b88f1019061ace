/*
** fuzz.c -- the `fuzz` category: random fusions generated at run time
** (docs/conformance.md, "The fuzz category").
**
** Test tcId N of the fuzz file carries "seed": S.  From S alone the runner
** derives a valid random fusion (every dtype; broadcast and rank-changing
** inputs, size-0 and size-1 axes, strided input layouts, keepdim max/min
** and integer-sum reductions between pointwise ops, long chains, up to 9
** inputs, f16/bf16/f32 matmuls with a bias/relu epilogue, transcendental
** and float-sum outputs), a random option set, and the inputs: exactly what
** `kiln run FUSION.kf --random S --shape ...` generates, so a failure
** replays with `kiln run`.  The fusion runs on the backend under test (with
** the strided layouts) and on `ref` (contiguous inputs, same options).
**
** Tolerance model: inexact ops (transcendentals, float sums, matmul) only
** produce outputs; they never feed another op.  Every other output is a
** chain of exact ops (docs/numerics.md, "Exact operations"; contraction is
** decided in the IR, so both backends compute the same ops) and must match
** ref up to the sign of zero and NaN payloads.  An inexact output gets the
** numerics contract's own bound for a differential comparison: twice the
** ULP bound of its op, or the sumBound of its sum / matmul (S computed by
** ref from the same fusion with |terms|).  Zero-sign-ambiguous values
** (maximum/minimum/relu/max/min results, docs/numerics.md "NaN and signed
** zeros") never reach an op that would turn the zero's sign into a
** different value (div, reciprocal, rsqrt, pow).
**
** A failure is minimised (outputs, nodes, options, layouts and sizes
** removed greedily while it still fails) and printed as `.kf` text with
** the `kiln run` commands that replay it.
*/
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/npy.h"
#include "conform.h"
#include "outputs.h"

#define FZ_MAX_NODES 96
#define FZ_MAX_IN 12
#define FZ_MAX_OUT 8
#define FZ_MAX_CLASS (KILN_MAX_RANK + 3)
#define FZ_MAX_ELEMS 4096

enum { OUT_EXACT, OUT_ULP, OUT_SUM, OUT_MM };

typedef struct fz_node {
    char op[16];
    int a[3], n_args;      /* operands (node ids) */
    char attr[64];         /* the rest of the statement */
    kiln_dtype dt;
    int rank;
    unsigned bmask;        /* broadcast axes */
    int cls[KILN_MAX_RANK];/* size class of each axis (-1: broadcast) */
    int zsign;             /* a zero here may have either sign */
    int input;             /* input position, or -1 */
    int fixed;             /* part of an inexact output's structure */
} fz_node;

typedef struct fz_input {
    int node;
    int strided;           /* the backend under test gets a strided view */
    int perm;              /* stride layout: 0 padded, 1 reversed axes */
} fz_input;

typedef struct fz_out {
    int node;
    int kind;              /* OUT_* */
    uint64_t ulp;          /* OUT_ULP */
} fz_out;

typedef struct fz_case {
    uint64_t seed;
    fz_node nodes[FZ_MAX_NODES];
    int n_nodes;
    fz_input in[FZ_MAX_IN];
    int n_in;
    fz_out out[FZ_MAX_OUT];
    int n_out;
    int64_t csize[FZ_MAX_CLASS];
    int n_cls;
    const char *en[4], *dis[6];
    int n_en, n_dis;
    int fast_math;
    int R;                 /* the rank of the chain's values */
} fz_case;

/* ------------------------------------------------------------ generation */

static uint64_t rnd(uint64_t *s, uint64_t n)
{
    return n ? cf_splitmix64(s) % n : 0;
}

static int chance(uint64_t *s, int percent)
{
    return (int)rnd(s, 100) < percent;
}

static const kiln_dtype all_dt[] = {KILN_BOOL, KILN_I32, KILN_I64, KILN_F16,
                                    KILN_BF16, KILN_F32, KILN_F64};

static int is_arith(kiln_dtype d)
{
    return d == KILN_I32 || d == KILN_I64 || d == KILN_F32 || d == KILN_F64;
}

static int is_fcomp(kiln_dtype d)
{
    return d == KILN_F32 || d == KILN_F64;
}

static int add_node(fz_case *c, const char *op, int n_args, int a0, int a1,
                    int a2, const char *attr, kiln_dtype dt)
{
    if (c->n_nodes >= FZ_MAX_NODES - 1)
        return -1;
    fz_node *n = &c->nodes[c->n_nodes];
    memset(n, 0, sizeof *n);
    snprintf(n->op, sizeof n->op, "%s", op);
    n->n_args = n_args;
    n->a[0] = a0, n->a[1] = a1, n->a[2] = a2;
    snprintf(n->attr, sizeof n->attr, "%s", attr ? attr : "");
    n->dt = dt;
    n->input = -1;
    /* shape: pointwise over the non-const operands */
    int first = 1;
    for (int i = 0; i < n_args; i++) {
        const fz_node *o = &c->nodes[n->a[i]];
        if (strcmp(o->op, "const") == 0)
            continue;
        if (first) {
            n->rank = o->rank;
            n->bmask = o->bmask;
            memcpy(n->cls, o->cls, sizeof n->cls);
            first = 0;
        } else {
            n->bmask &= o->bmask;
            for (int d = 0; d < o->rank; d++)
                if (n->cls[d] < 0)
                    n->cls[d] = o->cls[d];
        }
        n->zsign |= o->zsign;
    }
    return c->n_nodes++;
}

static int pickable(const fz_case *c, int v)
{
    return v >= 0 && c->nodes[v].rank == c->R &&
           strcmp(c->nodes[v].op, "const") != 0 && !c->nodes[v].fixed;
}

/* A random existing value of the chain's rank (no const), preferring
** recent ones (long chains). */
static int pick(fz_case *c, uint64_t *s, int lo)
{
    int n = c->n_nodes - lo;
    for (int tries = 0; n > 0 && tries < 8; tries++) {
        int v = chance(s, 60) ? c->n_nodes - 1 - (int)rnd(s, n < 3 ? (uint64_t)n : 3)
                              : lo + (int)rnd(s, (uint64_t)n);
        if (pickable(c, v))
            return v;
    }
    for (int v = c->n_nodes - 1; v >= lo; v--)
        if (pickable(c, v))
            return v;
    return -1;
}

static int cast_to(fz_case *c, int v, kiln_dtype dt)
{
    if (v < 0 || c->nodes[v].dt == dt)
        return v;
    int r = add_node(c, "cast", 1, v, 0, 0, kiln_dtype_name(dt), dt);
    if (r >= 0 && (dt == KILN_BOOL || dt == KILN_I32 || dt == KILN_I64))
        c->nodes[r].zsign = 0;
    return r;
}

/* An arithmetic dtype the op accepts, near v's own. */
static kiln_dtype arith_for(uint64_t *s, kiln_dtype have, int float_only)
{
    if (float_only)
        return have == KILN_F64 ? KILN_F64 : (chance(s, 80) ? KILN_F32 : KILN_F64);
    if (is_arith(have) && chance(s, 75))
        return have;
    static const kiln_dtype a[] = {KILN_I32, KILN_I64, KILN_F32, KILN_F64};
    return a[rnd(s, 4)];
}

static void axes_text(char *buf, size_t cap, unsigned mask, int keepdim)
{
    size_t u = (size_t)snprintf(buf, cap, "axes=[");
    int first = 1;
    for (int d = 0; d < KILN_MAX_RANK && u < cap; d++)
        if (mask >> d & 1) {
            u += (size_t)snprintf(buf + u, cap - u, "%s%d", first ? "" : ", ", d);
            first = 0;
        }
    if (u < cap)
        snprintf(buf + u, cap - u, "]%s", keepdim ? " keepdim" : "");
}

/* A reduction over a random non-empty set of axes of v.  max/min never
** reduce an axis of size 0 (an error by contract). */
static int reduce(fz_case *c, uint64_t *s, int v, const char *op, int keepdim)
{
    const fz_node *n = &c->nodes[v];
    unsigned mask = 0;
    if (n->rank == 0)
        return -1;
    for (int d = 0; d < n->rank; d++) {
        int empty = n->cls[d] >= 0 && c->csize[n->cls[d]] == 0;
        if (strcmp(op, "sum") != 0 && empty)
            continue;
        if (chance(s, 45))
            mask |= 1u << d;
    }
    if (mask == 0) {
        int d = (int)rnd(s, (uint64_t)n->rank);
        if (strcmp(op, "sum") != 0 && n->cls[d] >= 0 &&
            c->csize[n->cls[d]] == 0)
            return -1;
        mask = 1u << d;
    }
    char attr[48];
    axes_text(attr, sizeof attr, mask, keepdim);
    int r = add_node(c, op, 1, v, 0, 0, attr, n->dt);
    if (r < 0)
        return r;
    fz_node *m = &c->nodes[r];
    if (keepdim) {
        m->bmask |= mask;
        for (int d = 0; d < m->rank; d++)
            if (mask >> d & 1)
                m->cls[d] = -1;
    } else {
        int k = 0;
        unsigned bm = 0;
        for (int d = 0; d < n->rank; d++)
            if (!(mask >> d & 1)) {
                m->cls[k] = n->cls[d];
                bm |= (n->bmask >> d & 1u) << k;
                k++;
            }
        m->rank = k;
        m->bmask = bm;
    }
    if (strcmp(op, "sum") != 0)
        m->zsign = 1;
    return r;
}

static int gen_const(fz_case *c, uint64_t *s, kiln_dtype dt)
{
    char lit[32];
    switch (dt) {
    case KILN_BOOL: snprintf(lit, sizeof lit, "%s", chance(s, 50) ? "true" : "false"); break;
    case KILN_I32:
    case KILN_I64: snprintf(lit, sizeof lit, "%d", (int)rnd(s, 7) - 3); break;
    default: {
        static const char *const f[] = {"0.5", "-1.25", "2", "0", "3.75", "-0.375"};
        snprintf(lit, sizeof lit, "%s", f[rnd(s, 6)]);
    }
    }
    char attr[48];
    snprintf(attr, sizeof attr, "%s %s", kiln_dtype_name(dt), lit);
    return add_node(c, "const", 0, 0, 0, 0, attr, dt);
}

/* One random exact op; returns its node or -1. */
static int gen_exact(fz_case *c, uint64_t *s, int lo)
{
    int v = pick(c, s, lo);
    if (v < 0)
        return -1;
    kiln_dtype have = c->nodes[v].dt;
    switch (rnd(s, 10)) {
    case 0: case 1: { /* binary arithmetic */
        static const char *const ops[] = {"add", "sub", "mul", "maximum",
                                          "minimum", "div"};
        const char *op = ops[rnd(s, 6)];
        int fo = strcmp(op, "div") == 0;
        kiln_dtype dt = arith_for(s, have, fo);
        int w = chance(s, 15) ? gen_const(c, s, dt) : pick(c, s, lo);
        int x = cast_to(c, v, dt), y = cast_to(c, w, dt);
        if (x < 0 || y < 0 || (fo && c->nodes[y].zsign))
            return -1;
        int r = add_node(c, op, 2, x, y, 0, NULL, dt);
        if (r >= 0 && (op[0] == 'm' && op[1] != 'u'))
            c->nodes[r].zsign = 1;
        return r;
    }
    case 2: { /* unary */
        static const char *const ops[] = {"neg", "abs", "relu", "floor",
                                          "ceil", "sqrt", "reciprocal"};
        int k = (int)rnd(s, 7);
        kiln_dtype dt = arith_for(s, have, k >= 3);
        int x = cast_to(c, v, dt);
        if (x < 0 || (k == 6 && c->nodes[x].zsign))
            return -1;
        int r = add_node(c, ops[k], 1, x, 0, 0, NULL, dt);
        if (r >= 0 && k == 2)
            c->nodes[r].zsign = 1;
        return r;
    }
    case 3: { /* fma (and mul/add pairs, which contraction may fuse) */
        kiln_dtype dt = arith_for(s, have, 1);
        int x = cast_to(c, v, dt), y = cast_to(c, pick(c, s, lo), dt),
            z = cast_to(c, pick(c, s, lo), dt);
        if (x < 0 || y < 0 || z < 0)
            return -1;
        if (chance(s, 50))
            return add_node(c, "fma", 3, x, y, z, NULL, dt);
        int m = add_node(c, "mul", 2, x, y, 0, NULL, dt);
        return m < 0 ? -1 : add_node(c, "add", 2, m, z, 0, NULL, dt);
    }
    case 4: { /* comparison, logical */
        static const char *const ops[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        if (have == KILN_BOOL && chance(s, 60)) {
            int w = cast_to(c, pick(c, s, lo), KILN_BOOL);
            if (w < 0)
                return -1;
            int k = (int)rnd(s, 3);
            return k == 2 ? add_node(c, "not", 1, v, 0, 0, NULL, KILN_BOOL)
                          : add_node(c, k ? "or" : "and", 2, v, w, 0, NULL,
                                     KILN_BOOL);
        }
        kiln_dtype dt = arith_for(s, have, 0);
        int x = cast_to(c, v, dt), y = cast_to(c, pick(c, s, lo), dt);
        if (x < 0 || y < 0)
            return -1;
        int r = add_node(c, ops[rnd(s, 6)], 2, x, y, 0, NULL, KILN_BOOL);
        if (r >= 0)
            c->nodes[r].zsign = 0;
        return r;
    }
    case 5: { /* where, any dtype */
        int cond = cast_to(c, pick(c, s, lo), KILN_BOOL);
        int w = cast_to(c, pick(c, s, lo), have);
        if (cond < 0 || w < 0)
            return -1;
        return add_node(c, "where", 3, cond, v, w, NULL, have);
    }
    case 6: { /* casts through every dtype */
        return cast_to(c, v, all_dt[rnd(s, 7)]);
    }
    case 7: { /* reductions, keepdim so they combine again */
        if (!is_arith(have))
            v = cast_to(c, v, arith_for(s, have, 0));
        if (v < 0)
            return -1;
        kiln_dtype dt = c->nodes[v].dt;
        int k = (int)rnd(s, is_fcomp(dt) ? 2 : 3);
        const char *op = k == 0 ? "max" : k == 1 ? "min" : "sum";
        if (!chance(s, 35))
            return reduce(c, s, v, op, 1);
        /* without keepdim, then a broadcast op puts the reduced axes back */
        int r = reduce(c, s, v, op, 0);
        if (r < 0)
            return -1;
        char attr[64], ax[40];
        const char *a0 = strchr(c->nodes[r].attr, '[');
        const char *a1 = a0 ? strchr(a0, ']') : NULL;
        if (a0 == NULL || a1 == NULL || (size_t)(a1 - a0) >= sizeof ax)
            return -1;
        snprintf(ax, sizeof ax, "%.*s", (int)(a1 - a0 + 1), a0);
        snprintf(attr, sizeof attr, "rank=%d new=%s", c->nodes[v].rank, ax);
        int b = add_node(c, "broadcast", 1, r, 0, 0, attr, dt);
        if (b < 0)
            return -1;
        fz_node *bn = &c->nodes[b];
        const fz_node *src = &c->nodes[v], *red = &c->nodes[r];
        bn->rank = src->rank;
        bn->bmask = 0;
        for (int d = 0, q = 0; d < src->rank; d++) {
            int reduced = 0;
            for (const char *p = a0 + 1; p < a1; p++)
                if (*p >= '0' && *p <= '9' && atoi(p) == d &&
                    (p == a0 + 1 || p[-1] == ' ' || p[-1] == '['))
                    reduced = 1;
            if (reduced) {
                bn->cls[d] = -1;
                bn->bmask |= 1u << d;
            } else {
                bn->cls[d] = red->cls[q];
                bn->bmask |= (red->bmask >> q & 1u) << d;
                q++;
            }
        }
        return b;
    }
    default: { /* a plain chain step */
        kiln_dtype dt = arith_for(s, have, 0);
        int x = cast_to(c, v, dt);
        if (x < 0)
            return -1;
        static const char *const ops[] = {"neg", "abs", "add", "mul"};
        int k = (int)rnd(s, 4);
        if (k < 2)
            return add_node(c, ops[k], 1, x, 0, 0, NULL, dt);
        int y = cast_to(c, pick(c, s, lo), dt);
        return y < 0 ? -1 : add_node(c, ops[k], 2, x, y, 0, NULL, dt);
    }
    }
}

/* The ULP bounds of docs/numerics.md, "Transcendentals" (default profile). */
static const struct {
    const char *op;
    int f32, f64;
} ulp_table[] = {{"exp", 2, 1},  {"log", 1, 1},     {"tanh", 2, 1},
                 {"sin", 2, 2},  {"cos", 2, 2},     {"pow", 4, 2},
                 {"rsqrt", 2, 1},{"erf", 2, 2},     {"sigmoid", 4, 4}};

int cf_fuzz_ulp_bound(const char *op, kiln_dtype dt)
{
    for (size_t k = 0; k < sizeof ulp_table / sizeof ulp_table[0]; k++)
        if (strcmp(ulp_table[k].op, op) == 0)
            return dt == KILN_F32 ? ulp_table[k].f32
                   : dt == KILN_F64 ? ulp_table[k].f64 : -1;
    return -1;
}

static int add_input(fz_case *c, uint64_t *s, int rank, const int *cls,
                     kiln_dtype dt)
{
    if (c->n_in >= FZ_MAX_IN)
        return -1;
    char attr[64] = "";
    size_t u = (size_t)snprintf(attr, sizeof attr, "%s [", kiln_dtype_name(dt));
    int node = add_node(c, "input", 0, 0, 0, 0, NULL, dt);
    if (node < 0)
        return -1;
    fz_node *n = &c->nodes[node];
    n->rank = rank;
    for (int d = 0; d < rank; d++) {
        int b = cls[d] < 0;
        n->cls[d] = cls[d];
        n->bmask |= (unsigned)b << d;
        u += (size_t)snprintf(attr + u, sizeof attr - u, "%s%s", d ? ", " : "",
                              b ? "1" : "?");
    }
    snprintf(attr + u, sizeof attr - u, "]");
    snprintf(n->attr, sizeof n->attr, "%s", attr);
    n->input = c->n_in;
    c->in[c->n_in].node = node;
    c->in[c->n_in].strided = rank > 0 && chance(s, 30);
    c->in[c->n_in].perm = (int)rnd(s, 2);
    c->n_in++;
    return node;
}

static void gen_options(fz_case *c, uint64_t *s)
{
    static const char *const en[] = {"fast_math", "fuse_matmul"};
    static const char *const dis[] = {"fma", "expr_simplify",
                                      "matmul_expr_eval", "kernel_reuse",
                                      "compile_to_sass"};
    for (int i = 0; i < 2; i++)
        if (chance(s, i == 0 ? 15 : 30))
            c->en[c->n_en++] = en[i];
    for (int i = 0; i < 5; i++)
        if (chance(s, 20))
            c->dis[c->n_dis++] = dis[i];
    c->fast_math = c->n_en > 0 && strcmp(c->en[0], "fast_math") == 0;
}

static void generate(fz_case *c, uint64_t seed)
{
    uint64_t s = seed ^ 0x6a09e667f3bcc908ULL;
    memset(c, 0, sizeof *c);
    c->seed = seed;
    gen_options(c, &s);
    /* the domain: rank 0..4, sizes with 0 and 1 */
    int R = (int)rnd(&s, 5);
    if (R == 4 && chance(&s, 50))
        R = 2;
    c->R = R;
    int64_t total = 1;
    c->n_cls = R;
    for (int d = 0; d < R; d++) {
        int64_t z = chance(&s, 6) ? 0 : chance(&s, 20) ? 1
                    : chance(&s, 15) ? 17 + (int64_t)rnd(&s, 120)
                                     : 2 + (int64_t)rnd(&s, 6);
        if (total * (z ? z : 1) > FZ_MAX_ELEMS)
            z = 1 + (int64_t)rnd(&s, 3);
        c->csize[d] = z;
        total *= z ? z : 1;
    }
    /* inputs: full rank with broadcast axes, or one axis fewer and a
    ** broadcast op */
    int n_in = 1 + (int)rnd(&s, chance(&s, 20) ? 9 : 4);
    for (int i = 0; i < n_in; i++) {
        kiln_dtype dt = all_dt[rnd(&s, 7)];
        int cls[KILN_MAX_RANK];
        if (R > 0 && chance(&s, 20)) {
            int j = (int)rnd(&s, (uint64_t)R), k = 0;
            for (int d = 0; d < R; d++)
                if (d != j)
                    cls[k++] = chance(&s, 15) ? -1 : d;
            int v = add_input(c, &s, R - 1, cls, dt);
            if (v < 0)
                break;
            char attr[48];
            snprintf(attr, sizeof attr, "rank=%d new=[%d]", R, j);
            int b = add_node(c, "broadcast", 1, v, 0, 0, attr, dt);
            if (b < 0)
                break;
            fz_node *bn = &c->nodes[b];
            bn->rank = R;
            bn->bmask = 0;
            for (int d = 0, k2 = 0; d < R; d++) {
                bn->cls[d] = d == j ? -1 : cls[k2++];
                bn->bmask |= (unsigned)(bn->cls[d] < 0) << d;
            }
        } else {
            for (int d = 0; d < R; d++)
                cls[d] = chance(&s, 15) ? -1 : d;
            if (add_input(c, &s, R, cls, dt) < 0)
                break;
        }
    }
    /* the chain */
    int n_ops = 2 + (int)rnd(&s, chance(&s, 25) ? 40 : 12);
    for (int i = 0; i < n_ops && c->n_nodes < FZ_MAX_NODES - 12; i++)
        gen_exact(c, &s, 0);
    /* exact outputs: the last value and a few others, some reduced */
    int n_exact = 1 + (int)rnd(&s, 3);
    for (int i = 0; i < n_exact && c->n_out < FZ_MAX_OUT - 3; i++) {
        int v = i == 0 && pickable(c, c->n_nodes - 1) ? c->n_nodes - 1
                                                       : pick(c, &s, 0);
        if (v < 0)
            continue;
        if (chance(&s, 20) && is_arith(c->nodes[v].dt)) {
            int r = reduce(c, &s, v, is_fcomp(c->nodes[v].dt) ? "max" : "sum",
                           0);
            if (r >= 0)
                v = r;
        }
        int dup = 0;
        for (int k = 0; k < c->n_out; k++)
            dup |= c->out[k].node == v;
        if (!dup)
            c->out[c->n_out++] = (fz_out){v, OUT_EXACT, 0};
    }
    if (c->fast_math)
        return; /* inexact outputs: only under the default profile */
    /* a transcendental of an exact value */
    if (chance(&s, 50)) {
        int k = (int)rnd(&s, sizeof ulp_table / sizeof ulp_table[0]);
        int v = pick(c, &s, 0);
        kiln_dtype dt = chance(&s, 70) ? KILN_F32 : KILN_F64;
        int x = cast_to(c, v, dt), y = -1, r = -1;
        int binary = strcmp(ulp_table[k].op, "pow") == 0;
        int zs = strcmp(ulp_table[k].op, "rsqrt") == 0 || binary;
        if (binary)
            y = cast_to(c, pick(c, &s, 0), dt);
        if (x >= 0 && (!binary || y >= 0) && !(zs && c->nodes[x].zsign) &&
            strcmp(c->nodes[x].op, "const") != 0)
            r = add_node(c, ulp_table[k].op, binary ? 2 : 1, x, y, 0, NULL, dt);
        if (r >= 0) {
            int b = dt == KILN_F32 ? ulp_table[k].f32 : ulp_table[k].f64;
            c->nodes[r].fixed = 1;
            c->out[c->n_out++] = (fz_out){r, OUT_ULP, (uint64_t)(2 * b)};
        }
    }
    /* a float sum of an exact value */
    if (chance(&s, 50)) {
        int v = pick(c, &s, 0);
        kiln_dtype dt = chance(&s, 70) ? KILN_F32 : KILN_F64;
        int x = cast_to(c, v, dt), r = -1;
        if (x >= 0 && c->nodes[x].rank > 0)
            r = reduce(c, &s, x, "sum", chance(&s, 50));
        if (r >= 0) {
            c->nodes[r].fixed = 1;
            c->out[c->n_out++] = (fz_out){r, OUT_SUM, 0};
        }
    }
    /* a matmul of its own inputs, with an epilogue */
    if (chance(&s, 35) && c->n_in + 3 <= FZ_MAX_IN &&
        c->n_cls + 3 <= FZ_MAX_CLASS) {
        int M = c->n_cls, K = M + 1, N = M + 2;
        c->n_cls += 3;
        for (int i = 0; i < 3; i++)
            c->csize[M + i] = chance(&s, 8) ? 0 : chance(&s, 15) ? 1
                                                : 1 + (int64_t)rnd(&s, 24);
        static const kiln_dtype mdt[] = {KILN_F16, KILN_BF16, KILN_F32};
        kiln_dtype dt = mdt[rnd(&s, 3)];
        int ca[2] = {M, K}, cb[2] = {K, N}, cbias[2] = {-1, N};
        int a = add_input(c, &s, 2, ca, dt), b = add_input(c, &s, 2, cb, dt);
        if (a < 0 || b < 0)
            return;
        if (dt == KILN_F32 && chance(&s, 30)) /* an exact prologue */
            a = add_node(c, "neg", 1, a, 0, 0, NULL, dt);
        int r = a < 0 ? -1 : add_node(c, "matmul", 2, a, b, 0, NULL, KILN_F32);
        if (r < 0)
            return;
        c->nodes[r].cls[0] = M, c->nodes[r].cls[1] = N;
        c->nodes[r].bmask = 0;
        c->nodes[r].fixed = 1;
        if (chance(&s, 60)) {
            int bias = add_input(c, &s, 2, cbias, KILN_F32);
            if (bias >= 0)
                r = add_node(c, "add", 2, r, bias, 0, NULL, KILN_F32);
            if (r >= 0)
                c->nodes[r].fixed = 1;
            if (r >= 0 && chance(&s, 60)) {
                r = add_node(c, "relu", 1, r, 0, 0, NULL, KILN_F32);
                if (r >= 0)
                    c->nodes[r].fixed = 1;
            }
        }
        if (r >= 0)
            c->out[c->n_out++] = (fz_out){r, OUT_MM, 0};
    }
}

/* -------------------------------------------------------------- rendering */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int w = b->p ? vsnprintf(b->p + b->n, room, fmt, ap) : -1;
        va_end(ap);
        if (w >= 0 && (size_t)w < room) {
            b->n += (size_t)w;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 1024;
        while (w >= 0 && nc < b->n + (size_t)w + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (np == NULL) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

static void render_node(sbuf *b, const fz_case *c, int i, int id_off)
{
    const fz_node *n = &c->nodes[i];
    (void)id_off;
    sb_printf(b, "%%%d = %s", i, n->op);
    for (int k = 0; k < n->n_args; k++)
        sb_printf(b, " %%%d", n->a[k]);
    if (n->attr[0])
        sb_printf(b, " %s", n->attr);
    sb_printf(b, "\n");
}

/* The fusion text (outputs only when with_outputs). */
static char *render(const fz_case *c, int with_outputs)
{
    sbuf b = {0};
    sb_printf(&b, "kiln.fusion 1\n");
    for (int i = 0; i < c->n_nodes; i++)
        render_node(&b, c, i, 0);
    for (int k = 0; with_outputs && k < c->n_out; k++)
        sb_printf(&b, "output %%%d\n", c->out[k].node);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The fusion whose only output is S for output k (sum/matmul): the same
** terms, each |term| (f64 for sums, f32 for matmul operands). */
static char *render_abs(const fz_case *c, int k)
{
    char *base = render(c, 0);
    if (base == NULL)
        return NULL;
    sbuf b = {0};
    sb_printf(&b, "%s", base);
    free(base);
    int id = c->n_nodes;
    const fz_node *n = &c->nodes[c->out[k].node];
    if (c->out[k].kind == OUT_SUM) {
        sb_printf(&b, "%%%d = cast %%%d f64\n%%%d = abs %%%d\n", id, n->a[0],
                  id + 1, id);
        sb_printf(&b, "%%%d = sum %%%d %s\noutput %%%d\n", id + 2, id + 1,
                  n->attr, id + 2);
    } else {
        int relu = strcmp(n->op, "relu") == 0;
        const fz_node *add = relu ? &c->nodes[n->a[0]] : n;
        int has_bias = strcmp(add->op, "add") == 0;
        const fz_node *mm = has_bias ? &c->nodes[add->a[0]] : add;
        sb_printf(&b, "%%%d = cast %%%d f32\n%%%d = abs %%%d\n", id, mm->a[0],
                  id + 1, id);
        sb_printf(&b, "%%%d = cast %%%d f32\n%%%d = abs %%%d\n", id + 2,
                  mm->a[1], id + 3, id + 2);
        sb_printf(&b, "%%%d = matmul %%%d %%%d\n", id + 4, id + 1, id + 3);
        int last = id + 4;
        if (has_bias) {
            sb_printf(&b, "%%%d = abs %%%d\n%%%d = add %%%d %%%d\n", id + 5,
                      add->a[1], id + 6, id + 4, id + 5);
            last = id + 6;
        }
        sb_printf(&b, "output %%%d\n", last);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The terms per element of a sum/matmul output (its n). */
static int64_t terms(const fz_case *c, int k)
{
    const fz_node *n = &c->nodes[c->out[k].node];
    if (c->out[k].kind == OUT_SUM) {
        const fz_node *x = &c->nodes[n->a[0]];
        int64_t t = 1;
        const char *p = strchr(n->attr, '[');
        while (p && *p && *p != ']') {
            if (*p >= '0' && *p <= '9') {
                int d = (int)strtol(p, (char **)&p, 10);
                if (d < x->rank && x->cls[d] >= 0)
                    t *= c->csize[x->cls[d]];
                continue;
            }
            p++;
        }
        return t;
    }
    while (strcmp(n->op, "matmul") != 0)
        n = &c->nodes[n->a[0]];
    const fz_node *a = &c->nodes[n->a[0]];
    return a->cls[1] >= 0 ? c->csize[a->cls[1]] : 1;
}

/* ---------------------------------------------------------------- inputs */

typedef struct host_in {
    kiln_dtype dt;
    int rank;
    int64_t shape[KILN_MAX_RANK], strides[KILN_MAX_RANK];
    size_t numel, storage;
    void *dense;      /* contiguous values */
    void *strided;    /* the strided storage (NULL: contiguous) */
} host_in;

static void host_free(host_in *h, int n)
{
    for (int i = 0; i < n; i++) {
        free(h[i].dense);
        free(h[i].strided);
    }
}

static int make_inputs(const fz_case *c, host_in *h)
{
    uint64_t state = c->seed;
    memset(h, 0, sizeof *h * FZ_MAX_IN);
    for (int i = 0; i < c->n_in; i++) {
        const fz_node *n = &c->nodes[c->in[i].node];
        host_in *x = &h[i];
        size_t es = kiln_dtype_size(n->dt);
        x->dt = n->dt;
        x->rank = n->rank;
        x->numel = 1;
        for (int d = 0; d < n->rank; d++) {
            x->shape[d] = n->cls[d] < 0 ? 1 : c->csize[n->cls[d]];
            x->numel *= (size_t)x->shape[d];
        }
        x->dense = calloc(x->numel ? x->numel : 1, es);
        if (x->dense == NULL)
            return 1;
        kiln_npy_random(n->dt, x->numel, &state, x->dense); /* kiln run --random */
        if (!c->in[i].strided || x->numel == 0)
            continue;
        size_t storage = 1;
        kiln_npy_layout(c->in[i].perm ? "column-major" : "pitched", n->rank,
                        x->shape, x->strides, &storage);
        x->storage = storage;
        x->strided = malloc(storage * es);
        if (x->strided == NULL)
            return 1;
        memset(x->strided, 0xff, storage * es); /* gaps: NaN / -1 / true */
        for (size_t k = 0; k < x->numel; k++) {
            size_t off = 0, r = k;
            for (int d = n->rank - 1; d >= 0; d--) {
                off += (r % (size_t)x->shape[d]) * (size_t)x->strides[d];
                r /= (size_t)x->shape[d];
            }
            memcpy((char *)x->strided + off * es, (char *)x->dense + k * es, es);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ runs */

typedef struct fz_result {
    int ref_failed;        /* ref itself could not run it: not a finding */
    int failed;            /* the backend under test disagrees or failed */
    char msg[600];
    uint64_t native, fallback;
} fz_result;

static void destroy_all(kiln_tensor **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        kiln_tensor_destroy(t[i]);
}

/* Run c on ctx; outs[] receives the outputs (runtime-allocated).  With gs
** (the backend under test), the outputs are gs's guarded, canary-filled
** buffers instead (outputs.c; run `variant`), checked after the execute:
** a failed check sets *bad (with msg) and outs[] stays NULL. */
static kiln_status run_on(kiln_context *ctx, const kiln_fusion *f,
                          const fz_case *c, const host_in *h, int layouts,
                          kiln_exec_info *info, kiln_tensor **outs, size_t n_out,
                          cf_outset *gs, int variant, int *bad, char *msg,
                          size_t cap)
{
    kiln_tensor *in[FZ_MAX_IN] = {NULL}, *base[FZ_MAX_IN] = {NULL};
    /* the backend's memory space through the public API (a plugin too) */
    int dev = cf_backend_memory(ctx) == KILN_MEM_DEVICE;
    kiln_status st = KILN_OK;
    for (int i = 0; i < c->n_in && st == KILN_OK; i++) {
        const host_in *x = &h[i];
        size_t es = kiln_dtype_size(x->dt);
        int strided = layouts && x->strided != NULL;
        if (dev && strided) {
            int64_t len = (int64_t)x->storage;
            st = kiln_tensor_create(ctx, x->dt, 1, &len, NULL, KILN_MEM_DEVICE,
                                    NULL, &base[i]);
            if (st == KILN_OK)
                st = kiln_tensor_write(ctx, base[i], x->strided, x->storage * es);
            if (st == KILN_OK)
                st = kiln_tensor_create(ctx, x->dt, x->rank, x->shape,
                                        x->strides, KILN_MEM_DEVICE,
                                        kiln_tensor_data(base[i]), &in[i]);
        } else if (dev) {
            st = kiln_tensor_create(ctx, x->dt, x->rank, x->shape, NULL,
                                    KILN_MEM_DEVICE, NULL, &in[i]);
            if (st == KILN_OK)
                st = kiln_tensor_write(ctx, in[i], x->dense, x->numel * es);
        } else {
            st = kiln_tensor_create(ctx, x->dt, x->rank, x->shape,
                                    strided ? x->strides : NULL, KILN_MEM_HOST,
                                    strided ? x->strided : x->dense, &in[i]);
        }
    }
    if (st == KILN_OK) {
        kiln_exec_options eo;
        memset(&eo, 0, sizeof eo);
        eo.struct_size = sizeof eo;
        eo.enable = c->en;
        eo.n_enable = (size_t)c->n_en;
        eo.disable = c->dis;
        eo.n_disable = (size_t)c->n_dis;
        if (gs == NULL) {
            st = kiln_execute(ctx, f, in, (size_t)c->n_in, outs, n_out, &eo,
                              info);
        } else if (cf_outset_make(gs, ctx, f, in, (size_t)c->n_in, n_out,
                                  variant, msg, cap) != 0) {
            *bad = 1;
        } else {
            st = kiln_execute(ctx, f, in, (size_t)c->n_in, gs->t, n_out, &eo,
                              info);
            if (cf_outset_check(gs, ctx, st == KILN_OK, msg, cap) != 0)
                *bad = 1;
        }
    }
    destroy_all(in, (size_t)c->n_in);
    destroy_all(base, (size_t)c->n_in);
    return st;
}

static void *read_host(kiln_context *ctx, const kiln_tensor *t)
{
    size_t nb = (size_t)kiln_tensor_numel(t) *
                kiln_dtype_size(kiln_tensor_dtype(t));
    void *p = malloc(nb ? nb : 1);
    if (p && kiln_tensor_read(ctx, t, p, nb) != KILN_OK) {
        free(p);
        return NULL;
    }
    return p;
}

/* S per element of output k: ref's run of its abs fusion. */
static double *abs_scale(kiln_context *ref, const fz_case *c, int k,
                         const host_in *h, size_t numel)
{
    char *kf = render_abs(c, k);
    kiln_fusion *f = NULL;
    kiln_tensor *o = NULL;
    double *s = NULL;
    if (kf && kiln_fusion_parse(kf, strlen(kf), &f) == KILN_OK &&
        run_on(ref, f, c, h, 0, NULL, &o, 1, NULL, 0, NULL, NULL, 0) == KILN_OK &&
        (size_t)kiln_tensor_numel(o) == numel) {
        kiln_dtype dt = kiln_tensor_dtype(o);
        void *b = read_host(ref, o);
        s = b ? calloc(numel + 1, sizeof *s) : NULL;
        for (size_t i = 0; s && i < numel; i++)
            s[i] = cf_to_double(dt, cf_load_bits(dt, b, i));
        free(b);
    }
    kiln_tensor_destroy(o);
    kiln_fusion_destroy(f);
    free(kf);
    return s;
}

/* Run case c on the backend under test (bt) and ref; compare. */
static void fz_run(kiln_context *bt, kiln_context *ref, const fz_case *c,
                   fz_result *r)
{
    memset(r, 0, sizeof *r);
    char *kf = render(c, 1);
    kiln_fusion *f = NULL;
    host_in h[FZ_MAX_IN];
    kiln_tensor *ob[FZ_MAX_OUT] = {NULL}, *orf[FZ_MAX_OUT] = {NULL};
    kiln_exec_info *info = NULL;
    cf_outset gs;
    size_t n = (size_t)c->n_out;
    memset(h, 0, sizeof h);
    memset(&gs, 0, sizeof gs);
    if (kf == NULL || c->n_out == 0 ||
        kiln_fusion_parse(kf, strlen(kf), &f) != KILN_OK) {
        r->ref_failed = 1;
        snprintf(r->msg, sizeof r->msg, "generated fusion does not parse: %s",
                 kiln_last_error());
        goto done;
    }
    if (make_inputs(c, h)) {
        r->ref_failed = 1;
        snprintf(r->msg, sizeof r->msg, "out of memory");
        goto done;
    }
    kiln_status st = run_on(ref, f, c, h, 0, NULL, orf, n, NULL, 0, NULL, NULL,
                            0);
    if (st != KILN_OK) {
        r->ref_failed = 1;
        snprintf(r->msg, sizeof r->msg, "ref: kiln_execute: %s: %s",
                 kiln_status_name(st), kiln_last_error());
        goto done;
    }
    kiln_exec_info_create(&info);
    int bad = 0;
    char gmsg[CF_MSG];
    st = run_on(bt, f, c, h, 1, info, NULL, n, &gs, (int)(c->seed & 1), &bad,
                gmsg, sizeof gmsg);
    if (bad) {
        r->failed = 1;
        snprintf(r->msg, sizeof r->msg, "%.590s", gmsg);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        ob[i] = gs.t[i]; /* borrowed: gs owns them */
    if (info) {
        cf_outcome tmp;
        memset(&tmp, 0, sizeof tmp);
        cf_note_segments(&tmp, info);
        r->native = tmp.native;
        r->fallback = tmp.fallback;
    }
    if (st != KILN_OK) {
        r->failed = 1;
        snprintf(r->msg, sizeof r->msg, "kiln_execute failed where ref runs it: "
                 "%s: %s", kiln_status_name(st), kiln_last_error());
        goto done;
    }
    for (size_t i = 0; i < n && !r->failed; i++) {
        kiln_dtype dt = kiln_tensor_dtype(orf[i]);
        size_t numel = (size_t)kiln_tensor_numel(orf[i]);
        int rank = kiln_tensor_rank(orf[i]);
        int same = kiln_tensor_dtype(ob[i]) == dt &&
                   kiln_tensor_rank(ob[i]) == rank;
        for (int d = 0; same && d < rank; d++)
            same = kiln_tensor_sizes(ob[i])[d] == kiln_tensor_sizes(orf[i])[d];
        if (!same) {
            r->failed = 1;
            snprintf(r->msg, sizeof r->msg, "outputs[%zu] (%%%d): dtype or shape "
                     "differs from ref", i, c->out[i].node);
            break;
        }
        cf_check chk;
        memset(&chk, 0, sizeof chk);
        chk.ftz = c->fast_math;
        double *scale = NULL;
        switch (c->out[i].kind) {
        case OUT_EXACT:
            chk.kind = cf_is_float(dt) ? CF_CHECK_ULP : CF_CHECK_EXACT;
            break;
        case OUT_ULP:
            chk.kind = CF_CHECK_ULP;
            chk.max_ulp = c->out[i].ulp;
            break;
        default:
            chk.kind = CF_CHECK_SUMBOUND;
            chk.sum_n = terms(c, (int)i);
            chk.sum_u = dt == KILN_F64 ? 0x1p-53 : 0x1p-24;
            scale = abs_scale(ref, c, (int)i, h, numel);
            if (scale == NULL) {
                r->ref_failed = 1;
                snprintf(r->msg, sizeof r->msg, "ref could not compute the "
                         "bound of outputs[%zu]", i);
            }
            break;
        }
        void *g = read_host(bt, ob[i]), *w = read_host(ref, orf[i]);
        char m[CF_MSG];
        cf_cmp_stats stats;
        memset(&stats, 0, sizeof stats);
        if (!r->ref_failed && (g == NULL || w == NULL)) {
            r->failed = 1;
            snprintf(r->msg, sizeof r->msg, "outputs[%zu]: reading failed", i);
        } else if (!r->ref_failed &&
                   cf_compare(&chk, dt, numel, g, w, scale, &stats, m,
                              sizeof m)) {
            static const char *const kn[] = {"exact", "ulp", "sumBound",
                                             "sumBound"};
            r->failed = 1;
            snprintf(r->msg, sizeof r->msg, "outputs[%zu] (%%%d %s %s, %s "
                     "check): %.400s", i, c->out[i].node,
                     c->nodes[c->out[i].node].op, kiln_dtype_name(dt),
                     kn[c->out[i].kind], m);
        }
        free(g);
        free(w);
        free(scale);
        if (r->ref_failed)
            break;
    }
done:
    cf_outset_free(&gs);
    destroy_all(orf, n);
    kiln_exec_info_destroy(info);
    kiln_fusion_destroy(f);
    host_free(h, c->n_in);
    free(kf);
}

/* ------------------------------------------------------------- minimising */

/* Remove nodes no output needs; renumber.  Inputs stay (their data). */
static void dce(fz_case *c, int drop_inputs)
{
    int live[FZ_MAX_NODES] = {0}, map[FZ_MAX_NODES];
    for (int k = 0; k < c->n_out; k++)
        live[c->out[k].node] = 1;
    for (int i = c->n_nodes - 1; i >= 0; i--)
        if (live[i] || (!drop_inputs && c->nodes[i].input >= 0)) {
            live[i] = 1;
            for (int a = 0; a < c->nodes[i].n_args; a++)
                live[c->nodes[i].a[a]] = 1;
        }
    int m = 0, ni = 0;
    fz_input in[FZ_MAX_IN];
    for (int i = 0; i < c->n_nodes; i++) {
        if (!live[i])
            continue;
        map[i] = m;
        fz_node n = c->nodes[i];
        for (int a = 0; a < n.n_args; a++)
            n.a[a] = map[n.a[a]];
        if (n.input >= 0) {
            in[ni] = c->in[n.input];
            in[ni].node = m;
            n.input = ni++;
        }
        c->nodes[m++] = n;
    }
    c->n_nodes = m;
    memcpy(c->in, in, sizeof in[0] * (size_t)ni);
    c->n_in = ni;
    for (int k = 0; k < c->n_out; k++)
        c->out[k].node = map[c->out[k].node];
}

static int still_fails(kiln_context *bt, kiln_context *ref, const fz_case *c)
{
    fz_result r;
    fz_run(bt, ref, c, &r);
    return r.failed && !r.ref_failed;
}

static void minimise(kiln_context *bt, kiln_context *ref, fz_case *c)
{
    fz_case t;
    int budget = 400; /* runs */
    /* one output: the first that fails alone */
    for (int k = 0; k < c->n_out && c->n_out > 1 && budget > 0; k++) {
        t = *c;
        t.out[0] = c->out[k];
        t.n_out = 1;
        budget--;
        if (still_fails(bt, ref, &t)) {
            *c = t;
            break;
        }
    }
    dce(c, 0);
    for (int changed = 1; changed && budget > 0;) {
        changed = 0;
        /* bypass a node: its uses take its first same-typed operand */
        for (int i = c->n_nodes - 1; i >= 0 && budget > 0; i--) {
            const fz_node *n = &c->nodes[i];
            if (n->input >= 0 || n->fixed || n->n_args == 0)
                continue;
            for (int a = 0; a < n->n_args; a++) {
                int src = n->a[a];
                const fz_node *s = &c->nodes[src];
                if (s->dt != n->dt || s->rank != n->rank ||
                    strcmp(s->op, "const") == 0)
                    continue;
                t = *c;
                for (int j = i + 1; j < t.n_nodes; j++)
                    for (int q = 0; q < t.nodes[j].n_args; q++)
                        if (t.nodes[j].a[q] == i)
                            t.nodes[j].a[q] = src;
                for (int k = 0; k < t.n_out; k++)
                    if (t.out[k].node == i)
                        t.out[k].node = src;
                dce(&t, 0);
                budget--;
                if (still_fails(bt, ref, &t)) {
                    *c = t;
                    changed = 1;
                    break;
                }
            }
            if (i > c->n_nodes)
                i = c->n_nodes;
        }
        /* unused inputs */
        t = *c;
        dce(&t, 1);
        if (t.n_in < c->n_in && budget-- > 0 && still_fails(bt, ref, &t)) {
            *c = t;
            changed = 1;
        }
        /* options, layouts, sizes */
        for (int k = 0; k < c->n_en && budget > 0; k++) {
            t = *c;
            t.en[k] = t.en[--t.n_en];
            t.fast_math = 0;
            for (int q = 0; q < t.n_en; q++)
                t.fast_math |= strcmp(t.en[q], "fast_math") == 0;
            budget--;
            if (still_fails(bt, ref, &t))
                *c = t, changed = 1, k--;
        }
        for (int k = 0; k < c->n_dis && budget > 0; k++) {
            t = *c;
            t.dis[k] = t.dis[--t.n_dis];
            budget--;
            if (still_fails(bt, ref, &t))
                *c = t, changed = 1, k--;
        }
        for (int k = 0; k < c->n_in && budget > 0; k++) {
            if (!c->in[k].strided)
                continue;
            t = *c;
            t.in[k].strided = 0;
            budget--;
            if (still_fails(bt, ref, &t))
                *c = t, changed = 1;
        }
        for (int k = 0; k < c->n_cls && budget > 0; k++) {
            static const int64_t smaller[] = {1, 2, 0};
            for (int q = 0; q < 3 && budget > 0; q++) {
                if (smaller[q] >= c->csize[k])
                    continue;
                t = *c;
                t.csize[k] = smaller[q];
                budget--;
                if (still_fails(bt, ref, &t)) {
                    *c = t, changed = 1;
                    break;
                }
            }
        }
    }
}

/* The failure report: .kf text and the kiln run commands, on `out`. */
static void report(FILE *out, const fz_case *c, const char *backend,
                   const char *id, const char *msg)
{
    char *kf = render(c, 1);
    char cmd[1024];
    size_t u = (size_t)snprintf(cmd, sizeof cmd, "kiln run fuzz-%" PRIu64
                                ".kf --random %" PRIu64, c->seed, c->seed);
    for (int i = 0; i < c->n_in && u < sizeof cmd; i++) {
        const fz_node *n = &c->nodes[c->in[i].node];
        if (n->rank == 0)
            continue;
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --shape %d=", i);
        for (int d = 0; d < n->rank && u < sizeof cmd; d++)
            u += (size_t)snprintf(cmd + u, sizeof cmd - u, "%s%" PRId64,
                                  d ? "x" : "",
                                  n->cls[d] < 0 ? (int64_t)1 : c->csize[n->cls[d]]);
    }
    for (int i = 0; i < c->n_in && u < sizeof cmd; i++)
        if (c->in[i].strided)
            u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --layout %d=%s", i,
                                  c->in[i].perm ? "column-major" : "pitched");
    for (int i = 0; i < c->n_en && u < sizeof cmd; i++)
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --enable %s", c->en[i]);
    for (int i = 0; i < c->n_dis && u < sizeof cmd; i++)
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --disable %s", c->dis[i]);
    fprintf(out, "---- %s: fuzz seed %" PRIu64 " failed on %s (minimised): %s\n"
            "# save the fusion below as fuzz-%" PRIu64 ".kf; replay:\n"
            "#   %s --backend %s --out got\n#   %s --backend ref --out want\n",
            id, c->seed, backend, msg, c->seed, cmd, backend, cmd);
    fprintf(out, "%s---- end of fuzz seed %" PRIu64 "\n", kf ? kf : "", c->seed);
    fflush(out);
    free(kf);
}

/* ------------------------------------------------------------------ entry */

int cf_fuzz_text(uint64_t seed, char **kf)
{
    fz_case *c = malloc(sizeof *c);
    if (c == NULL)
        return 1;
    generate(c, seed);
    *kf = render(c, 1);
    free(c);
    return *kf == NULL;
}

void cf_run_fuzz(const cf_target *tg, const cf_test *t, cf_outcome *o)
{
    const json_t *sj = json_object_get(t->json, "seed");
    uint64_t seed = (uint64_t)json_integer_value(sj);
    kiln_context *bt = NULL, *ref = NULL;
    fz_case *c = malloc(sizeof *c);
    if (c == NULL) {
        o->status = CF_FAIL;
        snprintf(o->msg, sizeof o->msg, "out of memory");
        return;
    }
    generate(c, seed);
    kiln_status st = cf_case_context(tg, &bt);
    if (st == KILN_OK) {
        cf_target rt = {.backend = "ref", .max_work = tg->max_work};
        st = cf_case_context(&rt, &ref);
    }
    if (st != KILN_OK) {
        o->status = CF_FAIL;
        snprintf(o->msg, sizeof o->msg, "kiln_context_create: %s: %s",
                 kiln_status_name(st), kiln_last_error());
        goto done;
    }
    fz_result r;
    fz_run(bt, ref, c, &r);
    o->native += r.native;
    o->fallback += r.fallback;
    if (r.ref_failed) {
        /* the generator made something ref cannot run: a generator or
        ** ref defect, never hidden */
        o->status = CF_FAIL;
        snprintf(o->msg, sizeof o->msg, "invalid vector: fuzz seed %" PRIu64
                 ": %s", seed, r.msg);
    } else if (r.failed) {
        char first[600];
        snprintf(first, sizeof first, "%s", r.msg);
        minimise(bt, ref, c);
        fz_run(bt, ref, c, &r);
        char id[64];
        snprintf(id, sizeof id, "fuzz/%d", t->tcid);
        report(stderr, c, tg->backend, id, r.failed ? r.msg : first);
        o->status = CF_FAIL;
        snprintf(o->msg, sizeof o->msg, "fuzz seed %" PRIu64 ": %s (minimised "
                 "to %d nodes; the .kf and the kiln run replay are on stderr; "
                 "kiln conform --category fuzz --seed %" PRIu64 " --count 1 "
                 "reruns it)", seed, first, c->n_nodes, seed);
    }
done:
    cf_case_context_done(tg, bt);
    kiln_context_destroy(ref);
    free(c);
}

int cf_fuzz_file(uint64_t seed, uint64_t count, const char *suite_version,
                 cf_file *out, char *err, size_t cap)
{
    if (count == 0 || count > CF_FUZZ_MAX_COUNT ||
        seed > (uint64_t)INT64_MAX - count)
        return cf_fail(err, cap, "fuzz: --count must be 1..%d and --seed + "
                       "--count below 2^63", CF_FUZZ_MAX_COUNT);
    sbuf b = {0};
    sb_printf(&b, "{\"suite\": \"kiln-conformance\", \"suiteVersion\": \"%s\", "
              "\"category\": \"fuzz\", \"notes\": {}, \"numberOfTests\": %"
              PRIu64 ", \"testGroups\": [{\"type\": \"fuzz\", \"tests\": [",
              suite_version, count);
    for (uint64_t i = 0; i < count && !b.oom; i++)
        sb_printf(&b, "%s{\"tcId\": %" PRIu64 ", \"comment\": \"seed %" PRIu64
                  "\", \"flags\": [], \"result\": \"valid\", \"seed\": %" PRIu64
                  "}", i ? ", " : "", i + 1, seed + i, seed + i);
    sb_printf(&b, "]}]}");
    if (b.oom) {
        free(b.p);
        return cf_fail(err, cap, "fuzz: out of memory");
    }
    char name[96];
    snprintf(name, sizeof name, "(fuzz: seed %" PRIu64 ", count %" PRIu64 ")",
             seed, count);
    int rc = cf_file_load_buffer(b.p, b.n, name, out, err, cap);
    free(b.p);
    return rc;
}
