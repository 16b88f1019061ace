/*
** plan.c -- the planner: turns a finalized fusion, an input signature and
** the plan-level options into segments in the form runtime/include/kiln_backend.h
** specifies (docs/runtime.md, "Segmentation").
**
** The rules, deliberately simple:
**   1. Hard values are REDUCE and MATMUL results.  Each one starts a
**      segment, in node order: a reduction segment (its pointwise producer
**      cone over D = the operand's shape, the REDUCE, then its reduced-shape
**      pointwise consumers), or a matmul segment whose kind is the matmul
**      path (default MATMUL_FALLBACK; disable=matmul_expr_eval: MATMUL;
**      enable=fuse_matmul: MATMUL_EPILOGUE, which also takes the pointwise
**      consumers over [M,N]).
**   2. A consumer joins the segment of the latest hard value it depends on
**      when it has that segment's reduced (or [M,N]) shape, and its other
**      operands are constants, inputs, or values made by earlier segments.
**   3. Every other value that must exist in memory (a fusion output, or a
**      computed matmul operand) is a pointwise value: it joins the last
**      pointwise segment of the same symbolic shape if every value it reads
**      is made before that segment, else it starts a new one.
**   4. A segment recomputes the pointwise cone of what it produces, up to
**      inputs and values made by other segments (those are materialised:
**      written by their segment, read as strided views).  BROADCAST nodes
**      disappear: a value read through them is a view with stride 0 on the
**      new axes, and a declared size-1 axis is a stride-0 view as well.
**   5. Contraction (kernel level) is prepared here as a second IR variant
**      of each segment: add(mul(a,b),c) and add(c,mul(a,b)) -> fma(a,b,c)
**      for f32/f64 when that mul node has exactly one use in the whole
**      fusion, is not a fusion output, and is an operand of that very add
**      (lhs first).  cache.c picks the variant from disable=fma.
**   6. Limits (docs/runtime.md, "Segment limits"): a segment has at most
**      KILN_SEGMENT_MAX_VIEWS(rank of D) views (inputs + outputs), and a
**      value it computes has at most MAX_CONE operations in its cone
**      inside the segment.  A segment past either limit is split: the
**      planner flags fusion nodes (split[]) and plans again.  CUT makes a
**      value a materialised intermediate of its own pointwise segment
**      (the operands of the first value, in topological order, whose cone
**      is past a limit; a mul that rule 5 contracts into its add stays
**      with it, its operands are cut instead, so no split changes a
**      result); NOABSORB keeps a reduction or matmul from taking its
**      consumers (when those are past a limit); FRESH starts a new
**      pointwise segment at an output (too many outputs).  Every round
**      sets at least one new flag, so at most 3 * nodes rounds run; only
**      fusions past a limit ever take a second round.
** Symbolic shapes come from the fusion's axis classes (fusion.c): two
** values share a domain exactly when their class arrays are equal, which
** holds for every input sizes of the same signature.  So a plan depends on
** the signature only, never on concrete sizes.
**
** What every built plan satisfies is checked by plan_invariants() in an
** assert() at the end of kiln__plan_build.
*/
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define MAX_DEPTH 2048 /* operand-chain depth the recursive emitter accepts */
#define MAX_CONE KILN__PLAN_MAX_CONE

/* split[] flags (rule 6). */
#define SPLIT_CUT 1u      /* a materialised value: its own pointwise segment */
#define SPLIT_FRESH 2u    /* an output that starts a new pointwise segment */
#define SPLIT_NOABSORB 4u /* a hard node that takes no consumers */

typedef struct seg_build {
    uint32_t kind;
    int32_t anchor;      /* hard node, or first pointwise value */
    int32_t dom_node;
    int dom_rank;
    uint32_t red_axes;
    int closed;          /* a CUT value's segment: nothing else joins */
} seg_build;

typedef struct planner {
    const kiln_fusion *f;
    const kiln__sig *sig;
    uint32_t n;
    int32_t *uses, *out_idx, *owner;
    uint8_t *hard, *need, *mat;
    uint8_t *split;      /* SPLIT_* per node, kept across rounds */
    uint8_t *pw;         /* is_pointwise(op) per node */
    seg_build *segs;
    uint32_t n_segs;
    /* scratch for cone walks */
    int32_t *stack;
    uint8_t *seen;
} planner;

static int is_pointwise(int op)
{
    const kiln_op_desc *info = kiln__op_desc((kiln_op)op);
    return op == KILN_OP_FMA || op == KILN_OP_CAST ||
           (info != NULL && strchr("ubclw", info->kind) != NULL &&
            info->kind != 0);
}

static const int32_t *cls_of(const kiln_fusion *f, int32_t v)
{
    return &f->axis_class[(size_t)v * KILN_MAX_RANK];
}

static int same_shape(const kiln_fusion *f, int32_t a, int32_t b)
{
    int r = f->nodes[a].rank;
    return r == f->nodes[b].rank &&
           memcmp(cls_of(f, a), cls_of(f, b), (size_t)r * sizeof(int32_t)) ==
               0;
}

/* Largest owner among the values segment `seg` would read to make v (-1 if
** none); v's cone is walked through everything not owned elsewhere. */
static int32_t cone_max_owner(planner *P, int32_t v, int32_t seg)
{
    int32_t best = -1;
    size_t sp = 0;
    memset(P->seen, 0, P->n);
    P->stack[sp++] = v;
    P->seen[v] = 1;
    while (sp > 0) {
        int32_t x = P->stack[--sp];
        const kiln_ir_node *n = &P->f->nodes[x];
        if (x != v && n->op != KILN_OP_CONST && P->owner[x] >= 0 &&
            P->owner[x] != seg) {
            if (P->owner[x] > best)
                best = P->owner[x];
            continue;
        }
        if (n->op == KILN_OP_INPUT || n->op == KILN_OP_CONST)
            continue;
        for (int k = 0; k < 3 && n->args[k] >= 0; k++)
            if (!P->seen[n->args[k]]) {
                P->seen[n->args[k]] = 1;
                P->stack[sp++] = n->args[k];
            }
    }
    return best;
}

static void add_seg(planner *P, uint32_t kind, int32_t anchor, int32_t dom,
                    uint32_t red, int closed)
{
    seg_build *s = &P->segs[P->n_segs++];
    s->kind = kind;
    s->anchor = anchor;
    s->dom_node = dom;
    s->dom_rank = P->f->nodes[dom].rank;
    s->red_axes = red;
    s->closed = closed;
}

/* Absorb the pointwise consumers of hard node h (segment seg). */
static void absorb_consumers(planner *P, int32_t h, int32_t seg)
{
    const kiln_fusion *f = P->f;
    for (uint32_t j = (uint32_t)h + 1; j < P->n; j++) {
        const kiln_ir_node *n = &f->nodes[j];
        if (!P->pw[j] || P->owner[j] >= 0 || !same_shape(f, (int32_t)j, h))
            continue;
        int linked = 0, ok = 1;
        for (int k = 0; k < 3 && n->args[k] >= 0; k++) {
            int32_t a = n->args[k];
            int aop = f->nodes[a].op;
            if (P->owner[a] == seg)
                linked = 1;
            else if (!(aop == KILN_OP_CONST || aop == KILN_OP_INPUT ||
                       (P->owner[a] >= 0 && P->owner[a] < seg)))
                ok = 0;
        }
        if (ok && linked)
            P->owner[j] = seg;
    }
}

/* The node reached from v through BROADCAST nodes. */
static int32_t through_broadcasts(const kiln_fusion *f, int32_t v)
{
    while (f->nodes[v].op == KILN_OP_BROADCAST)
        v = f->nodes[v].args[0];
    return v;
}

/* Steps 1-3: decide the segments and the owner of every produced value. */
static kiln_status form_segments(planner *P, const struct kiln_options *o)
{
    const kiln_fusion *f = P->f;
    uint32_t mm_kind = kiln__opt_on(o, KOPT_EN_FUSE_MATMUL)
                           ? KILN_SEGK_MATMUL_EPILOGUE
                       : kiln__opt_on(o, KOPT_DIS_MATMUL_EXPR_EVAL)
                           ? KILN_SEGK_MATMUL
                           : KILN_SEGK_MATMUL_FALLBACK;
    for (uint32_t i = 0; i < P->n; i++) {
        const kiln_ir_node *n = &f->nodes[i];
        if (n->op != KILN_OP_MATMUL)
            continue;
        if (mm_kind == KILN_SEGK_MATMUL_FALLBACK &&
            kiln__opt_on(o, KOPT_DIS_FALLBACK))
            return kiln__err(KILN_ERR_FALLBACK_DISABLED,
                             "matmul at %%%u needs the library fallback path, "
                             "but disable=fallback is set (use "
                             "disable=matmul_expr_eval or enable=fuse_matmul "
                             "for a generated matmul)",
                             i);
        for (int k = 0; k < 2; k++) {
            int32_t b = through_broadcasts(f, n->args[k]);
            int bop = f->nodes[b].op;
            if (bop != KILN_OP_INPUT && !P->hard[b])
                P->need[n->args[k]] = 1;
        }
    }
    for (uint32_t i = 0; i < P->n; i++) {
        const kiln_ir_node *n = &f->nodes[i];
        int32_t seg = (int32_t)P->n_segs;
        int absorb = !(P->split[i] & SPLIT_NOABSORB);
        if (kiln__op_is_reduce(n->op)) {
            P->owner[i] = seg;
            add_seg(P, KILN_SEGK_REDUCTION, (int32_t)i, n->args[0], n->axes, 0);
            if (absorb)
                absorb_consumers(P, (int32_t)i, seg);
        } else if (n->op == KILN_OP_MATMUL) {
            P->owner[i] = seg;
            add_seg(P, mm_kind, (int32_t)i, (int32_t)i, 0, 0);
            if (mm_kind == KILN_SEGK_MATMUL_EPILOGUE && absorb)
                absorb_consumers(P, (int32_t)i, seg);
        } else if (P->owner[i] < 0 &&
                   (P->out_idx[i] >= 0 || P->need[i] || (P->split[i] & SPLIT_CUT))) {
            /* a pointwise value: join the last open same-shape pointwise
            ** segment (rule 3), unless rule 6 says otherwise */
            int32_t cand = -1;
            for (int32_t s = (int32_t)P->n_segs - 1;
                 s >= 0 && !(P->split[i] & (SPLIT_CUT | SPLIT_FRESH)); s--) {
                if (P->segs[s].kind == KILN_SEGK_POINTWISE && !P->segs[s].closed &&
                    same_shape(f, P->segs[s].dom_node, (int32_t)i)) {
                    cand = s;
                    break;
                }
            }
            if (cand >= 0 && cone_max_owner(P, (int32_t)i, cand) < cand) {
                P->owner[i] = cand;
            } else {
                P->owner[i] = seg;
                add_seg(P, KILN_SEGK_POINTWISE, (int32_t)i, (int32_t)i, 0,
                        (P->split[i] & SPLIT_CUT) != 0);
            }
        }
    }
    return KILN_OK;
}

/* ------------------------------------------------------------ emission */

typedef struct emitter {
    planner *P;
    int32_t seg;
    const seg_build *sb;
    kiln_ir_node *nodes;
    int32_t *origin;      /* fusion node of each IR node, -1 synthesized */
    int32_t *memo_node;   /* memo: (fusion node, part, map) -> IR node */
    uint8_t *memo_part;
    int8_t (*memo_map)[KILN_MAX_RANK];
    int32_t *slots;       /* hash table of the memo: IR node + 1, 0 empty */
    uint32_t n_slots;     /* a power of two, at least twice the entries */
    uint32_t n_nodes, cap;
    kiln__leaf *leaves;
    uint32_t n_leaves, cap_leaves;
    int failed;
} emitter;

/* Hash of a memo key: fusion node v, part, map (v's rank), leaf or not. */
static uint32_t memo_hash(int32_t v, uint8_t part, const int8_t *map, int r,
                          int is_leaf)
{
    uint64_t m = 0;
    memcpy(&m, map, (size_t)r); /* r <= 8 bytes */
    uint64_t h = ((uint64_t)(uint32_t)v << 9 | (uint64_t)part << 1 |
                  (uint64_t)(is_leaf != 0)) * 0x9E3779B97F4A7C15ull;
    h ^= m * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(h ^ (h >> 32));
}

static int memo_eq(const emitter *E, uint32_t i, int32_t v, uint8_t part,
                   const int8_t *map, int is_leaf)
{
    return E->memo_node[i] == v && E->memo_part[i] == part &&
           memcmp(E->memo_map[i], map, E->P->f->nodes[v].rank) == 0 &&
           (E->nodes[i].op == KILN_OP_INPUT) == is_leaf;
}

/* Enter IR node i into the memo table (which has room) unless its key is
** there already: a lookup finds the first node of a key, as a scan in
** node order would. */
static void memo_put(emitter *E, uint32_t i)
{
    int32_t v = E->memo_node[i];
    if (v < 0)
        return; /* synthesized: never looked up */
    int leaf = E->nodes[i].op == KILN_OP_INPUT;
    uint32_t h = memo_hash(v, E->memo_part[i], E->memo_map[i],
                           E->P->f->nodes[v].rank, leaf);
    for (uint32_t k = h & (E->n_slots - 1);; k = (k + 1) & (E->n_slots - 1)) {
        int32_t e = E->slots[k];
        if (e == 0) {
            E->slots[k] = (int32_t)i + 1;
            return;
        }
        if (memo_eq(E, (uint32_t)e - 1, v, E->memo_part[i], E->memo_map[i], leaf))
            return;
    }
}

/* memo_put for the newest node i, growing the table first when needed. */
static int memo_insert(emitter *E, uint32_t i)
{
    if ((size_t)E->n_nodes * 2 > E->n_slots) {
        uint32_t ns = E->n_slots ? E->n_slots * 2 : 64;
        int32_t *t = kiln__calloc(ns, sizeof *t);
        if (t == NULL)
            return -1;
        kiln__free(E->slots);
        E->slots = t;
        E->n_slots = ns;
        for (uint32_t k = 0; k < i; k++)
            memo_put(E, k);
    }
    memo_put(E, i);
    return 0;
}

static int32_t push(emitter *E, const kiln_ir_node *n, int32_t origin,
                    uint8_t part, const int8_t *map)
{
    if (E->failed)
        return -1;
    if (E->n_nodes == E->cap) {
        uint32_t nc = E->cap ? E->cap * 2 : 16;
        kiln_ir_node *a = kiln__realloc(E->nodes, nc * sizeof *a);
        if (a) E->nodes = a;
        int32_t *b = a ? kiln__realloc(E->origin, nc * sizeof *b) : NULL;
        if (b) E->origin = b;
        int32_t *c = b ? kiln__realloc(E->memo_node, nc * sizeof *c) : NULL;
        if (c) E->memo_node = c;
        uint8_t *d = c ? kiln__realloc(E->memo_part, nc) : NULL;
        if (d) E->memo_part = d;
        int8_t(*e)[KILN_MAX_RANK] =
            d ? kiln__realloc(E->memo_map, nc * sizeof *e) : NULL;
        if (e) E->memo_map = e;
        if (e == NULL) {
            E->failed = 1;
            return -1;
        }
        E->cap = nc;
    }
    uint32_t i = E->n_nodes++;
    E->nodes[i] = *n;
    E->origin[i] = origin;
    E->memo_node[i] = origin;
    E->memo_part[i] = part;
    memset(E->memo_map[i], -1, KILN_MAX_RANK);
    if (map != NULL && origin >= 0)
        memcpy(E->memo_map[i], map, (size_t)E->P->f->nodes[origin].rank);
    if (memo_insert(E, i) < 0) {
        E->failed = 1;
        return -1;
    }
    return (int32_t)i;
}

static int32_t memo_find(emitter *E, int32_t v, uint8_t part,
                         const int8_t *map, int is_leaf)
{
    if (E->n_slots == 0)
        return -1;
    uint32_t h = memo_hash(v, part, map, E->P->f->nodes[v].rank, is_leaf);
    for (uint32_t k = h & (E->n_slots - 1);; k = (k + 1) & (E->n_slots - 1)) {
        int32_t e = E->slots[k];
        if (e == 0)
            return -1;
        if (memo_eq(E, (uint32_t)e - 1, v, part, map, is_leaf))
            return e - 1;
    }
}

static int part_rank(const emitter *E, uint8_t part)
{
    (void)part;
    return E->sb->dom_rank;
}

static uint32_t part_bcast(const emitter *E, uint8_t part)
{
    return part == KILN__PART_K ? E->sb->red_axes : 0;
}

/* A leaf: fusion node v read as a view (part, map). */
static int32_t emit_leaf(emitter *E, int32_t v, uint8_t part,
                         const int8_t *map, int32_t own)
{
    int32_t m = memo_find(E, v, part, map, 1);
    if (m >= 0 && part != KILN__PART_OWN)
        return m;
    if (E->n_leaves == E->cap_leaves) {
        uint32_t nc = E->cap_leaves ? E->cap_leaves * 2 : 8;
        kiln__leaf *l = kiln__realloc(E->leaves, nc * sizeof *l);
        if (l == NULL) {
            E->failed = 1;
            return -1;
        }
        E->leaves = l;
        E->cap_leaves = nc;
    }
    kiln__leaf *l = &E->leaves[E->n_leaves];
    memset(l, 0, sizeof *l);
    l->node = v;
    l->part = part;
    l->own = own;
    memset(l->map, -1, sizeof l->map);
    memcpy(l->map, map, E->P->f->nodes[v].rank);
    const kiln_ir_node *fn = &E->P->f->nodes[v];
    kiln_ir_node n = kiln__ir_node_blank(KILN_OP_INPUT, fn->dtype,
                           part == KILN__PART_OWN ? E->P->f->nodes[own].rank
                                                  : part_rank(E, part));
    n.bcast = part == KILN__PART_OWN ? 0 : part_bcast(E, part);
    n.io = (int32_t)E->n_leaves;
    int32_t i = push(E, &n, v, part, map);
    if (i >= 0)
        E->n_leaves++;
    if (E->P->owner[v] >= 0 && E->P->owner[v] != E->seg)
        E->P->mat[v] = 1;
    return i;
}

static int32_t emit(emitter *E, int32_t v, uint8_t part, const int8_t *map)
{
    planner *P = E->P;
    const kiln_fusion *f = P->f;
    const kiln_ir_node *fn = &f->nodes[v];
    if (E->failed)
        return -1;
    /* a leaf: an input, a value of another segment, or a value CUT in
    ** this round (no owner yet: the round is planned again, but reading
    ** it as a leaf keeps the rest of the round small) */
    if (fn->op == KILN_OP_INPUT ||
        (fn->op != KILN_OP_CONST && P->owner[v] >= 0 && P->owner[v] != E->seg) ||
        (P->owner[v] < 0 && (P->split[v] & SPLIT_CUT)))
        return emit_leaf(E, v, part, map, v);
    int32_t m = memo_find(E, v, part, map, 0);
    if (m >= 0)
        return m;
    int r = part_rank(E, part);
    if (fn->op == KILN_OP_CONST) { /* always inline, even if an output */
        kiln_ir_node n = kiln__ir_node_blank(KILN_OP_CONST, fn->dtype, r);
        n.bcast = (1u << r) - 1u;
        n.bits = fn->bits;
        return push(E, &n, v, part, map);
    }
    if (fn->op == KILN_OP_BROADCAST) {
        int8_t sub[KILN_MAX_RANK];
        memset(sub, -1, sizeof sub);
        for (int j = 0, k = 0; j < fn->rank; j++)
            if (!(fn->axes & (1u << j)))
                sub[k++] = map[j];
        return emit(E, fn->args[0], part, sub);
    }
    if (kiln__op_is_reduce(fn->op)) { /* this segment's own REDUCE, in keepdim form */
        int8_t id[KILN_MAX_RANK];
        memset(id, -1, sizeof id);
        for (int a = 0; a < r; a++)
            id[a] = (int8_t)a;
        int32_t x = emit(E, fn->args[0], KILN__PART_D, id);
        kiln_ir_node n = kiln__ir_node_blank(fn->op, fn->dtype, r);
        n.axes = fn->axes;
        n.bcast = fn->axes;
        n.flags = KILN_IR_KEEPDIM;
        n.args[0] = x;
        return push(E, &n, v, part, map);
    }
    if (fn->op == KILN_OP_MATMUL) {
        int32_t ab[2];
        for (int k = 0; k < 2; k++) {
            int32_t opnd = fn->args[k];
            int32_t b = through_broadcasts(f, opnd);
            int8_t bm[KILN_MAX_RANK];
            memset(bm, -1, sizeof bm);
            if (f->nodes[b].op == KILN_OP_INPUT ||
                (P->owner[b] >= 0 && P->owner[b] != E->seg)) {
                /* compose the broadcast maps: base axis -> operand axis */
                int8_t cur[KILN_MAX_RANK];
                for (int a = 0; a < KILN_MAX_RANK; a++)
                    cur[a] = (int8_t)a;
                int32_t x = opnd;
                while (x != b) {
                    const kiln_ir_node *bn = &f->nodes[x];
                    int8_t nxt[KILN_MAX_RANK];
                    memset(nxt, -1, sizeof nxt);
                    for (int j = 0, q = 0; j < bn->rank; j++)
                        if (!(bn->axes & (1u << j)))
                            nxt[q++] = cur[j];
                    memcpy(cur, nxt, sizeof cur);
                    x = bn->args[0];
                }
                memcpy(bm, cur, (size_t)f->nodes[b].rank);
                ab[k] = emit_leaf(E, b, KILN__PART_OWN, bm, opnd);
            } else {
                for (int a = 0; a < 2; a++)
                    bm[a] = (int8_t)a;
                ab[k] = emit_leaf(E, opnd, KILN__PART_OWN, bm, opnd);
            }
        }
        kiln_ir_node n = kiln__ir_node_blank(KILN_OP_MATMUL, fn->dtype, 2);
        n.args[0] = ab[0];
        n.args[1] = ab[1];
        return push(E, &n, v, part, map);
    }
    /* pointwise (computed over the domain, recomputed if not a member) */
    kiln_ir_node n = kiln__ir_node_blank(fn->op, fn->dtype, r);
    n.bcast = part_bcast(E, part);
    for (int k = 0; k < 3 && fn->args[k] >= 0; k++)
        n.args[k] = emit(E, fn->args[k], part, map);
    return push(E, &n, v, part, map);
}

/* The map of a segment root: its axes into the segment's domain. */
static void root_map(const emitter *E, int32_t v, uint8_t *part, int8_t *map)
{
    const kiln_fusion *f = E->P->f;
    memset(map, -1, KILN_MAX_RANK);
    if (E->sb->kind == KILN_SEGK_REDUCTION) {
        const kiln_ir_node *R = &f->nodes[E->sb->anchor];
        *part = KILN__PART_K;
        for (int a = 0, k = 0; a < E->sb->dom_rank; a++) {
            if ((R->axes & (1u << a)) && !(R->flags & KILN_IR_KEEPDIM))
                continue;
            map[k++] = (int8_t)a;
        }
        (void)v;
        return;
    }
    *part = KILN__PART_D;
    for (int a = 0; a < f->nodes[v].rank; a++)
        map[a] = (int8_t)a;
}

/* ------------------------------------------------------------ variants */

/* Contraction on a copy of nodes: returns the new node count (after DCE)
** and fills outputs; 0 changes -> *changed = 0. */
static uint32_t contract(const planner *P, kiln_ir_node *nodes,
                         const int32_t *origin, uint32_t n, int32_t *outs,
                         uint32_t n_outs, int *changed)
{
    const kiln_fusion *f = P->f;
    *changed = 0;
    for (uint32_t i = 0; i < n; i++) {
        kiln_ir_node *a = &nodes[i];
        if (a->op != KILN_OP_ADD || origin[i] < 0 ||
            (a->dtype != KILN_F32 && a->dtype != KILN_F64))
            continue;
        const kiln_ir_node *fa = &f->nodes[origin[i]];
        for (int side = 0; side < 2; side++) {
            int32_t fm = fa->args[side];
            int32_t sm = a->args[side];
            if (f->nodes[fm].op != KILN_OP_MUL || P->uses[fm] != 1 ||
                P->out_idx[fm] >= 0 || nodes[sm].op != KILN_OP_MUL ||
                origin[sm] != fm)
                continue;
            int32_t other = a->args[1 - side];
            a->op = KILN_OP_FMA;
            a->args[0] = nodes[sm].args[0];
            a->args[1] = nodes[sm].args[1];
            a->args[2] = other;
            *changed = 1;
            break;
        }
    }
    if (!*changed)
        return n;
    /* dead-code elimination (INPUT nodes always stay: io numbering) */
    uint8_t live[4096], *lv = n <= sizeof live ? live : kiln__calloc(n, 1);
    int32_t remap_small[4096], *remap =
        n <= 4096 ? remap_small : kiln__malloc(n * sizeof *remap);
    if (lv == NULL || remap == NULL) {
        if (lv != live) kiln__free(lv);
        if (remap != remap_small) kiln__free(remap);
        *changed = -1;
        return n;
    }
    memset(lv, 0, n);
    for (uint32_t k = 0; k < n_outs; k++)
        lv[outs[k]] = 1;
    for (uint32_t i = n; i-- > 0;) {
        if (nodes[i].op == KILN_OP_INPUT)
            lv[i] = 1;
        if (!lv[i])
            continue;
        for (int k = 0; k < 3; k++)
            if (nodes[i].args[k] >= 0)
                lv[nodes[i].args[k]] = 1;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!lv[i]) {
            remap[i] = -1;
            continue;
        }
        kiln_ir_node x = nodes[i];
        for (int k = 0; k < 3; k++)
            if (x.args[k] >= 0)
                x.args[k] = remap[x.args[k]];
        remap[i] = (int32_t)m;
        nodes[m++] = x;
    }
    for (uint32_t k = 0; k < n_outs; k++)
        outs[k] = remap[outs[k]];
    if (lv != live) kiln__free(lv);
    if (remap != remap_small) kiln__free(remap);
    return m;
}

static void put32(kiln_buf *b, uint32_t v) { kiln__buf_add(b, (const char *)&v, 4); }

/* The kernel-key text of one IR variant. */
static kiln_status serialize(const kiln__pseg *s, kiln__segir *ir)
{
    kiln_buf b = {0};
    kiln__buf_add(&b, "kseg1", 5);
    put32(&b, s->kind);
    put32(&b, ir->n_nodes);
    kiln__buf_add(&b, (const char *)ir->nodes, ir->n_nodes * sizeof *ir->nodes);
    put32(&b, s->n_leaves);
    put32(&b, s->n_outs);
    kiln__buf_add(&b, (const char *)ir->outputs, s->n_outs * sizeof(int32_t));
    kiln__buf_add(&b, (const char *)s->in_traits, s->n_leaves * sizeof(uint32_t));
    kiln__buf_add(&b, (const char *)s->out_traits, s->n_outs * sizeof(uint32_t));
    put32(&b, s->index64);
    if (b.failed) {
        kiln__buf_free(&b);
        return kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
    }
    ir->blob = (uint8_t *)b.data;
    ir->blob_len = b.len;
    ir->blob_hash = kiln__fnv1a(b.data, b.len, KILN_FNV_SEED);
    return KILN_OK;
}

/* Whether a view of node v (classes), mapped by map into a domain whose
** classes are dcls (rank dr), is dense row-major given that v's own buffer
** is (base_contig). */
static int view_contig(const kiln_fusion *f, int32_t v, const int8_t *map,
                       const int32_t *dcls, int dr, int base_contig)
{
    if (!base_contig)
        return 0;
    const int32_t *vc = cls_of(f, v);
    int last = -1;
    for (int a = 0; a < f->nodes[v].rank; a++) {
        if (vc[a] < 0)
            continue;
        if (map[a] <= last || map[a] >= dr || dcls[map[a]] != vc[a])
            return 0;
        last = map[a];
    }
    for (int d = 0; d < dr; d++) { /* no non-1 domain axis left unmapped */
        if (dcls[d] < 0)
            continue;
        int found = 0;
        for (int a = 0; a < f->nodes[v].rank; a++)
            if (map[a] == d && vc[a] >= 0)
                found = 1;
        if (!found)
            return 0;
    }
    return 1;
}

static void part_classes(const planner *P, const seg_build *sb, uint8_t part,
                         int32_t own, int32_t *dcls, int *dr)
{
    int32_t src = part == KILN__PART_OWN ? own : sb->dom_node;
    *dr = P->f->nodes[src].rank;
    memcpy(dcls, cls_of(P->f, src), (size_t)*dr * sizeof *dcls);
    if (part == KILN__PART_K)
        for (int a = 0; a < *dr; a++)
            if (sb->red_axes & (1u << a))
                dcls[a] = -1;
}

static int buffer_contig(const planner *P, int32_t v)
{
    const kiln_ir_node *n = &P->f->nodes[v];
    if (n->op == KILN_OP_INPUT)
        return (P->sig->in[n->io] & KILN__SIG_CONTIG) != 0;
    return 1; /* outputs and intermediates are allocated or checked dense */
}

static int buffer_align(const planner *P, int32_t v)
{
    const kiln_ir_node *n = &P->f->nodes[v];
    if (n->op == KILN_OP_INPUT)
        return (P->sig->in[n->io] & KILN__SIG_ALIGN16) != 0;
    if (P->out_idx[v] >= 0)
        return (P->sig->out[P->out_idx[v]] & KILN__SIG_ALIGN16) != 0;
    return 1;
}

static const char *what_of(uint32_t kind)
{
    switch (kind) {
    case KILN_SEGK_POINTWISE: return "pointwise";
    case KILN_SEGK_REDUCTION: return "reduction";
    case KILN_SEGK_MATMUL: return "matmul";
    case KILN_SEGK_MATMUL_EPILOGUE: return "matmul_epilogue";
    default: return "matmul_fallback";
    }
}

/* ------------------------------------------------------------ limits */

/* Work arrays of split_check, one entry per IR node of the segment. */
typedef struct cone_scratch {
    uint8_t *post, *cut;
    uint32_t *ub_nodes, *ub_leaves, *stamp;
    int32_t *stack;
    uint32_t tag;
} cone_scratch;

static int computed(const kiln_ir_node *x)
{
    return x->op != KILN_OP_INPUT && x->op != KILN_OP_CONST;
}

/* The exact cone of IR node w: distinct computed nodes (w included) and
** distinct leaves (INPUT nodes and nodes cut in this pass), counted until
** one passes its cap. */
static void cone_exact(const emitter *E, cone_scratch *cs, int32_t w,
                       uint32_t node_cap, uint32_t leaf_cap, uint32_t *nodes,
                       uint32_t *leaves)
{
    uint32_t tag = ++cs->tag;
    size_t sp = 0;
    *nodes = *leaves = 0;
    cs->stack[sp++] = w;
    cs->stamp[w] = tag;
    while (sp > 0 && *nodes <= node_cap && *leaves <= leaf_cap) {
        int32_t x = cs->stack[--sp];
        const kiln_ir_node *n = &E->nodes[x];
        if (n->op == KILN_OP_CONST)
            continue;
        if (n->op == KILN_OP_INPUT || (x != w && cs->cut[x])) {
            (*leaves)++;
            continue;
        }
        (*nodes)++;
        for (int k = 0; k < 3; k++) {
            int32_t a = n->args[k];
            if (a >= 0 && cs->stamp[a] != tag) {
                cs->stamp[a] = tag;
                cs->stack[sp++] = a;
            }
        }
    }
}

/* Upper bounds of node i's cone counts from its operands' (exact for
** trees, too high where operands share nodes). */
static void cone_bounds(const emitter *E, cone_scratch *cs, uint32_t i,
                        uint32_t node_cap, uint32_t leaf_cap)
{
    const kiln_ir_node *n = &E->nodes[i];
    uint32_t bn = 1, bl = 0;
    for (int k = 0; k < 3; k++) {
        int32_t a = n->args[k];
        if (a < 0)
            continue;
        if (cs->cut[a]) {
            bl++;
        } else {
            bn += cs->ub_nodes[a];
            bl += cs->ub_leaves[a];
        }
    }
    cs->ub_nodes[i] = bn > node_cap + 1 ? node_cap + 1 : bn;
    cs->ub_leaves[i] = bl > leaf_cap + 1 ? leaf_cap + 1 : bl;
}

/* Would contraction (rule 5) fuse mul v into add u?  Then a cut must not
** separate them: the split would change the numerics. */
static int contracts_into(const planner *P, int32_t u, int32_t v)
{
    const kiln_ir_node *a = &P->f->nodes[u], *m = &P->f->nodes[v];
    return a->op == KILN_OP_ADD && (a->dtype == KILN_F32 || a->dtype == KILN_F64) &&
           m->op == KILN_OP_MUL && P->uses[v] == 1 && P->out_idx[v] < 0 &&
           (a->args[0] == v || a->args[1] == v);
}

static int set_flag(planner *P, int32_t v, uint8_t flag)
{
    if (P->split[v] & flag)
        return 0;
    P->split[v] |= flag;
    return 1;
}

/* FRESH for the first output (node order) at which the outputs so far and
** the leaves they read pass maxv views.  Returns the flags set. */
static int split_outputs(planner *P, const emitter *E, cone_scratch *cs,
                         const int32_t *outs, const int32_t *roots,
                         uint32_t n_outs, uint32_t maxv)
{
    uint32_t tag = ++cs->tag, leaves = 0;
    for (uint32_t k = 0; k < n_outs; k++) {
        size_t sp = 0;
        if (cs->stamp[outs[k]] != tag) {
            cs->stamp[outs[k]] = tag;
            cs->stack[sp++] = outs[k];
        }
        while (sp > 0) {
            const kiln_ir_node *n = &E->nodes[cs->stack[--sp]];
            if (n->op == KILN_OP_INPUT)
                leaves++;
            for (int a = 0; a < 3; a++)
                if (n->args[a] >= 0 && cs->stamp[n->args[a]] != tag) {
                    cs->stamp[n->args[a]] = tag;
                    cs->stack[sp++] = n->args[a];
                }
        }
        if (leaves + k + 1 > maxv)
            return k > 0 ? set_flag(P, roots[k], SPLIT_FRESH) : 0;
    }
    return 0;
}

/* Rule 6 for a freshly emitted segment: within the limits, return 0;
** else set split flags on fusion nodes, add the number of new ones to
** *added and return 1 (-1: out of memory).  One pass over the IR in topological order: at the first
** node whose cone passes a limit, a node after the segment's REDUCE/MATMUL
** gets NOABSORB on that hard node (and the pass ends); otherwise its
** computed operands are CUT and count as leaves from there on.  Too many
** views with every cone in bounds: NOABSORB if the segment has consumers
** of its hard node, else FRESH at an output. */
static int split_check(planner *P, const emitter *E, const int32_t *outs,
                       const int32_t *roots, uint32_t n_outs, int *added_out)
{
    const seg_build *sb = E->sb;
    uint32_t n = E->n_nodes;
    uint32_t maxv = KILN_SEGMENT_MAX_VIEWS(sb->dom_rank);
    int views_over = E->n_leaves + n_outs > maxv;
    if (!views_over && n <= MAX_CONE)
        return 0;
    uint32_t leaf_cap = maxv - 1; /* leaves of one value plus its output */
    cone_scratch cs;
    memset(&cs, 0, sizeof cs);
    cs.post = kiln__calloc(n, 1);
    cs.cut = kiln__calloc(n, 1);
    cs.ub_nodes = kiln__calloc(n, sizeof *cs.ub_nodes);
    cs.ub_leaves = kiln__calloc(n, sizeof *cs.ub_leaves);
    cs.stamp = kiln__calloc(n, sizeof *cs.stamp);
    cs.stack = kiln__malloc(n * sizeof *cs.stack);
    int added = 0, has_post = 0, over = views_over;
    if (!cs.post || !cs.cut || !cs.ub_nodes || !cs.ub_leaves || !cs.stamp ||
        !cs.stack) {
        over = -1;
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) { /* nodes after the hard node */
        const kiln_ir_node *x = &E->nodes[i];
        for (int k = 0; k < 3; k++) {
            int32_t a = x->args[k];
            if (a >= 0 && (cs.post[a] || kiln__op_is_reduce(E->nodes[a].op) ||
                           E->nodes[a].op == KILN_OP_MATMUL))
                cs.post[i] = 1;
        }
        has_post |= cs.post[i];
    }
    for (uint32_t i = 0; i < n; i++) {
        const kiln_ir_node *x = &E->nodes[i];
        if (!computed(x)) {
            cs.ub_leaves[i] = x->op == KILN_OP_INPUT;
            continue;
        }
        cone_bounds(E, &cs, i, MAX_CONE, leaf_cap);
        if (cs.ub_nodes[i] <= MAX_CONE && cs.ub_leaves[i] <= leaf_cap)
            continue;
        uint32_t cn, cl;
        cone_exact(E, &cs, (int32_t)i, MAX_CONE, leaf_cap, &cn, &cl);
        if (cn <= MAX_CONE && cl <= leaf_cap) {
            cs.ub_nodes[i] = cn; /* the exact counts are tighter bounds */
            cs.ub_leaves[i] = cl;
            continue;
        }
        over = 1;
        if (cs.post[i]) {
            added += set_flag(P, sb->anchor, SPLIT_NOABSORB);
            goto done;
        }
        for (int k = 0; k < 3; k++) {
            int32_t a = x->args[k];
            if (a < 0 || !computed(&E->nodes[a]) || cs.cut[a])
                continue;
            int32_t v = E->origin[a];
            if (v < 0 || P->hard[v])
                continue;
            if (E->origin[i] >= 0 && contracts_into(P, E->origin[i], v)) {
                /* keep the mul with its add: cut the mul's operands */
                for (int q = 0; q < 3; q++) {
                    int32_t c = E->nodes[a].args[q];
                    if (c < 0 || !computed(&E->nodes[c]) || cs.cut[c] ||
                        E->origin[c] < 0 || P->hard[E->origin[c]])
                        continue;
                    cs.cut[c] = 1;
                    added += set_flag(P, E->origin[c], SPLIT_CUT);
                }
                cone_bounds(E, &cs, (uint32_t)a, MAX_CONE, leaf_cap);
                continue;
            }
            cs.cut[a] = 1;
            added += set_flag(P, v, SPLIT_CUT);
        }
        cone_bounds(E, &cs, i, MAX_CONE, leaf_cap);
    }
    if (added == 0 && views_over) {
        if (has_post)
            added = set_flag(P, sb->anchor, SPLIT_NOABSORB);
        else if (sb->kind == KILN_SEGK_POINTWISE)
            added = split_outputs(P, E, &cs, outs, roots, n_outs, maxv);
    }
done:
    kiln__free(cs.post);
    kiln__free(cs.cut);
    kiln__free(cs.ub_nodes);
    kiln__free(cs.ub_leaves);
    kiln__free(cs.stamp);
    kiln__free(cs.stack);
    *added_out += added;
    return over;
}

/* Emit segment `seg` with roots[n_roots] into ps.  Unless `keep`, a
** segment past the limits of rule 6 is left empty (no IR: the round's
** memory stays bounded) and counted in *over; *split counts the new split
** flags. */
static kiln_status emit_segment(planner *P, int32_t seg, const int32_t *roots,
                                uint32_t n_roots, kiln__pseg *ps, int keep,
                                int *over, int *split)
{
    emitter E;
    memset(&E, 0, sizeof E);
    E.P = P;
    E.seg = seg;
    E.sb = &P->segs[seg];
    int32_t *outs = kiln__malloc((n_roots ? n_roots : 1) * sizeof *outs);
    ps->outs = kiln__calloc(n_roots ? n_roots : 1, sizeof *ps->outs);
    if (outs == NULL || ps->outs == NULL) {
        kiln__free(outs);
        return kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
    }
    for (uint32_t k = 0; k < n_roots; k++) {
        int8_t map[KILN_MAX_RANK];
        uint8_t part;
        root_map(&E, roots[k], &part, map);
        int32_t x = emit(&E, roots[k], part, map);
        if (x >= 0 && (E.nodes[x].op == KILN_OP_INPUT ||
                       E.nodes[x].op == KILN_OP_CONST)) {
            kiln_ir_node c = kiln__ir_node_blank(KILN_OP_CAST, E.nodes[x].dtype,
                                   part_rank(&E, part));
            c.bcast = part_bcast(&E, part);
            c.args[0] = x;
            x = push(&E, &c, -1, part, NULL);
        }
        outs[k] = x;
        kiln__sout *so = &ps->outs[k];
        so->node = roots[k];
        so->out = P->out_idx[roots[k]];
        so->part = part;
        memcpy(so->map, map, sizeof so->map);
    }
    kiln_status st = KILN_OK;
    if (E.failed) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
        goto done;
    }
    int past = keep ? 0 : split_check(P, &E, outs, roots, n_roots, split);
    if (past < 0) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
        goto done;
    }
    if (past > 0) {
        (*over)++;
        goto done;
    }
    const seg_build *sb = E.sb;
    ps->kind = sb->kind;
    ps->what = what_of(sb->kind);
    ps->dom_node = sb->dom_node;
    ps->dom_rank = sb->dom_rank;
    ps->red_axes = sb->kind == KILN_SEGK_REDUCTION ? sb->red_axes : 0;
    ps->k_node = -1;
    if (sb->kind >= KILN_SEGK_MATMUL)
        ps->k_node = P->f->nodes[sb->anchor].args[0];
    ps->n_outs = n_roots;
    ps->n_leaves = E.n_leaves;
    ps->leaves = E.leaves;
    E.leaves = NULL;
    ps->index64 = (uint32_t)P->sig->index64;
    ps->in_traits = kiln__calloc(ps->n_leaves ? ps->n_leaves : 1, sizeof(uint32_t));
    ps->out_traits = kiln__calloc(n_roots ? n_roots : 1, sizeof(uint32_t));
    if (ps->in_traits == NULL || ps->out_traits == NULL) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
        goto done;
    }
    for (uint32_t k = 0; k < ps->n_leaves; k++) {
        const kiln__leaf *l = &ps->leaves[k];
        int32_t dcls[KILN_MAX_RANK];
        int dr;
        part_classes(P, sb, l->part, l->own, dcls, &dr);
        uint32_t t = 0;
        if (view_contig(P->f, l->node, l->map, dcls, dr, buffer_contig(P, l->node)))
            t |= KILN_TRAIT_CONTIG;
        if (buffer_align(P, l->node))
            t |= KILN_TRAIT_ALIGN16;
        ps->in_traits[k] = t;
    }
    for (uint32_t k = 0; k < n_roots; k++) {
        const kiln__sout *so = &ps->outs[k];
        int32_t dcls[KILN_MAX_RANK];
        int dr;
        part_classes(P, sb, so->part, -1, dcls, &dr);
        uint32_t t = 0;
        if (view_contig(P->f, so->node, so->map, dcls, dr, 1))
            t |= KILN_TRAIT_CONTIG;
        if (buffer_align(P, so->node))
            t |= KILN_TRAIT_ALIGN16;
        ps->out_traits[k] = t;
    }
    /* variant 0: as emitted */
    ps->ir[0].nodes = E.nodes;
    ps->ir[0].n_nodes = E.n_nodes;
    ps->ir[0].outputs = outs;
    E.nodes = NULL;
    outs = NULL;
    if ((st = serialize(ps, &ps->ir[0])) != KILN_OK)
        goto done;
    /* variant 1: contracted */
    kiln_ir_node *cn = kiln__malloc(ps->ir[0].n_nodes * sizeof *cn + 1);
    int32_t *co = kiln__malloc(n_roots * sizeof *co + 1);
    if (cn == NULL || co == NULL) {
        kiln__free(cn);
        kiln__free(co);
        st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
        goto done;
    }
    memcpy(cn, ps->ir[0].nodes, ps->ir[0].n_nodes * sizeof *cn);
    memcpy(co, ps->ir[0].outputs, n_roots * sizeof *co);
    int changed;
    uint32_t m = contract(P, cn, E.origin, ps->ir[0].n_nodes, co, n_roots,
                          &changed);
    if (changed < 0) {
        kiln__free(cn);
        kiln__free(co);
        st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
        goto done;
    }
    if (changed == 0) {
        kiln__free(cn);
        kiln__free(co);
        ps->contracts = 0;
        goto done;
    }
    ps->contracts = 1;
    ps->ir[1].nodes = cn;
    ps->ir[1].n_nodes = m;
    ps->ir[1].outputs = co;
    st = serialize(ps, &ps->ir[1]);
done:
    kiln__free(outs);
    kiln__free(E.nodes);
    kiln__free(E.origin);
    kiln__free(E.memo_node);
    kiln__free(E.memo_part);
    kiln__free(E.memo_map);
    kiln__free(E.slots);
    kiln__free(E.leaves);
    return st;
}

/* ----------------------------------------------------------- invariants */

/* The IR variant ir of segment ps is in backend.h's form: operands are
** earlier nodes, no BROADCAST node is left (rule 4), its INPUT nodes are
** the segment's leaves in order (the k-th has io k), and its outputs are
** n_outs of its nodes. */
static int segir_ok(const kiln__pseg *ps, const kiln__segir *ir)
{
    uint32_t inputs = 0;
    for (uint32_t i = 0; i < ir->n_nodes; i++) {
        const kiln_ir_node *n = &ir->nodes[i];
        if (n->op == KILN_OP_BROADCAST || n->op >= KILN_OP_COUNT)
            return 0;
        for (int k = 0; k < 3; k++)
            if (n->args[k] >= (int32_t)i || n->args[k] < -1)
                return 0;
        if (n->op == KILN_OP_INPUT && n->io != (int32_t)inputs++)
            return 0;
    }
    for (uint32_t k = 0; k < ps->n_outs; k++)
        if (ir->outputs[k] < 0 || (uint32_t)ir->outputs[k] >= ir->n_nodes)
            return 0;
    return inputs == ps->n_leaves;
}

/* Checker used only inside assert(): every segment's IR variants are in
** backend.h's form (segir_ok); the contracted variant exists exactly when
** `contracts` and only replaces add(mul) pairs (rule 5: never more
** nodes); a segment reads only fusion inputs and values written by earlier
** segments (rules 2-4), and no value is written twice; every fusion output
** is written by a segment.  Returns 1 when all hold (or when its scratch
** cannot be allocated). */
static __attribute__((unused)) int plan_invariants(const kiln__plan *p)
{
    int32_t *writer = kiln__malloc((p->f_n_nodes ? p->f_n_nodes : 1) * sizeof *writer);
    if (writer == NULL)
        return 1;
    int ok = 1;
    for (uint32_t i = 0; i < p->f_n_nodes; i++)
        writer[i] = -1;
    for (uint32_t s = 0; ok && s < p->n_segs; s++) {
        const kiln__pseg *ps = &p->segs[s];
        ok = segir_ok(ps, &ps->ir[0]) &&
             (ps->contracts ? segir_ok(ps, &ps->ir[1]) &&
                                  ps->ir[1].n_nodes <= ps->ir[0].n_nodes
                            : ps->ir[1].nodes == NULL);
        for (uint32_t k = 0; ok && k < ps->n_leaves; k++) {
            int32_t v = ps->leaves[k].node;
            ok = v >= 0 && (uint32_t)v < p->f_n_nodes &&
                 (p->f_nodes[v].op == KILN_OP_INPUT || writer[v] >= 0);
        }
        for (uint32_t k = 0; ok && k < ps->n_outs; k++) {
            int32_t v = ps->outs[k].node;
            ok = v >= 0 && (uint32_t)v < p->f_n_nodes && writer[v] < 0;
            if (ok)
                writer[v] = (int32_t)s;
        }
    }
    for (uint32_t j = 0; ok && j < p->f_n_outputs; j++)
        ok = writer[p->f_outputs[j]] >= 0;
    kiln__free(writer);
    return ok;
}

/* ---------------------------------------------------------------- build */

/* Free p's segments (their array included). */
static void free_segs(kiln__plan *p)
{
    for (uint32_t s = 0; p->segs != NULL && s < p->n_segs; s++) {
        kiln__pseg *ps = &p->segs[s];
        kiln__free(ps->leaves);
        kiln__free(ps->outs);
        kiln__free(ps->in_traits);
        kiln__free(ps->out_traits);
        for (int v = 0; v < 2; v++) {
            kiln__free(ps->ir[v].nodes);
            kiln__free(ps->ir[v].outputs);
            kiln__free(ps->ir[v].blob);
        }
    }
    kiln__free(p->segs);
    p->segs = NULL;
    p->n_segs = 0;
}

void kiln__plan_free(kiln__plan *p)
{
    if (p == NULL)
        return;
    free_segs(p);
    kiln__free(p->key);
    kiln__free(p->f_nodes);
    kiln__free(p->f_outputs);
    kiln__free(p->inter_of);
    kiln__free(p->inter_node);
    kiln__free(p->out_of);
    kiln__free(p);
}

kiln_status kiln__plan_build(const kiln_fusion *f,
                             const struct kiln_options *o,
                             const int64_t (*shapes)[KILN_MAX_RANK],
                             const kiln__sig *sig, kiln__plan **out)
{
    (void)shapes;
    planner P;
    memset(&P, 0, sizeof P);
    P.f = f;
    P.sig = sig;
    P.n = f->n_nodes;
    size_t n = P.n ? P.n : 1;
    kiln_status st = KILN_OK;
    kiln__plan *p = kiln__calloc(1, sizeof *p);
    P.uses = kiln__calloc(n, sizeof *P.uses);
    P.out_idx = kiln__malloc(n * sizeof *P.out_idx);
    P.owner = kiln__malloc(n * sizeof *P.owner);
    P.hard = kiln__calloc(n, 1);
    P.need = kiln__calloc(n, 1);
    P.mat = kiln__calloc(n, 1);
    P.split = kiln__calloc(n, 1);
    P.pw = kiln__calloc(n, 1);
    P.segs = kiln__calloc(n, sizeof *P.segs);
    P.stack = kiln__malloc(n * sizeof *P.stack);
    P.seen = kiln__calloc(n, 1);
    int32_t *roots = kiln__malloc(n * sizeof *roots);
    int32_t *by_seg = kiln__malloc(n * sizeof *by_seg);
    uint32_t *first = kiln__malloc((n + 1) * sizeof *first);
    if (!p || !P.uses || !P.out_idx || !P.owner || !P.hard || !P.need ||
        !P.mat || !P.split || !P.pw || !P.segs || !P.stack || !P.seen || !roots ||
        !by_seg || !first) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < P.n; i++) {
        P.out_idx[i] = -1;
        P.owner[i] = -1;
        const kiln_ir_node *nd = &f->nodes[i];
        P.hard[i] = (uint8_t)(kiln__op_is_reduce(nd->op) || nd->op == KILN_OP_MATMUL);
        P.pw[i] = (uint8_t)is_pointwise(nd->op);
        for (int k = 0; k < 3; k++)
            if (nd->args[k] >= 0)
                P.uses[nd->args[k]]++;
    }
    for (uint32_t j = 0; j < f->n_outputs; j++)
        P.out_idx[f->outputs[j]] = (int32_t)j;
    /* emission recurses along operand chains: bound the depth (P.stack
    ** holds each node's depth here, before its use as a work stack) */
    for (uint32_t i = 0; i < P.n; i++) {
        int32_t d = 0;
        for (int k = 0; k < 3; k++)
            if (f->nodes[i].args[k] >= 0 && P.stack[f->nodes[i].args[k]] + 1 > d)
                d = P.stack[f->nodes[i].args[k]] + 1;
        P.stack[i] = d;
        if (d > MAX_DEPTH) {
            st = kiln__err(KILN_ERR_LIMIT,
                           "plan: %%%u is %d operations deep; the planner "
                           "accepts at most %d",
                           i, (int)d, MAX_DEPTH);
            goto fail;
        }
    }
    for (int over = 1, split = 1, keep = 0; over > 0;) {
        /* A round (rule 6).  A round with a segment past the limits sets
        ** a new split flag (docs/runtime.md says why); should one ever not,
        ** the next round keeps every segment as emitted. */
        keep = split == 0;
        free_segs(p);
        for (uint32_t i = 0; i < P.n; i++) {
            P.owner[i] = -1;
            P.mat[i] = 0;
        }
        P.n_segs = 0;
        if ((st = form_segments(&P, o)) != KILN_OK)
            goto fail;
        /* Emit the segments last to first: a segment's leaves mark the
        ** values earlier segments must write (mat), before those are
        ** emitted. */
        p->segs = kiln__calloc(P.n_segs ? P.n_segs : 1, sizeof *p->segs);
        if (p->segs == NULL) {
            st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
            goto fail;
        }
        p->n_segs = P.n_segs; /* all freed by kiln__plan_free on failure */
        over = split = 0;
        /* the nodes of each segment, in node order: by_seg[first[s]..] */
        memset(first, 0, (P.n_segs + 1) * sizeof *first);
        for (uint32_t i = 0; i < P.n; i++)
            if (P.owner[i] >= 0)
                first[P.owner[i] + 1]++;
        for (uint32_t s = 0; s < P.n_segs; s++)
            first[s + 1] += first[s];
        for (uint32_t i = 0; i < P.n; i++)
            if (P.owner[i] >= 0)
                by_seg[first[P.owner[i]]++] = (int32_t)i;
        for (uint32_t s = P.n_segs; s > 0; s--) /* back to the starts */
            first[s] = first[s - 1];
        first[0] = 0;
        for (int32_t s = (int32_t)P.n_segs - 1; s >= 0; s--) {
            uint32_t nr = 0;
            for (uint32_t q = first[s]; q < first[s + 1]; q++) {
                int32_t i = by_seg[q];
                if (P.out_idx[i] >= 0 || P.mat[i] || P.need[i])
                    roots[nr++] = i;
            }
            if (nr == 0)
                continue; /* nothing of it is ever used */
            if ((st = emit_segment(&P, s, roots, nr, &p->segs[s], keep, &over,
                                   &split)) != KILN_OK)
                goto fail;
        }
    }
    uint32_t kept = 0;
    for (uint32_t s = 0; s < P.n_segs; s++)
        if (p->segs[s].ir[0].blob != NULL)
            p->segs[kept++] = p->segs[s];
    p->n_segs = kept;

    /* buffers: fusion outputs, and intermediates for materialised values */
    p->out_of = kiln__malloc(n * sizeof *p->out_of);
    p->inter_of = kiln__malloc(n * sizeof *p->inter_of);
    p->inter_node = kiln__malloc(n * sizeof *p->inter_node);
    p->f_nodes = kiln__malloc(n * sizeof *p->f_nodes);
    p->f_outputs = kiln__malloc((f->n_outputs ? f->n_outputs : 1) * sizeof *p->f_outputs);
    if (!p->out_of || !p->inter_of || !p->inter_node || !p->f_nodes || !p->f_outputs) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "plan: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < P.n; i++) {
        p->out_of[i] = P.out_idx[i];
        p->inter_of[i] = -1;
        if (f->nodes[i].op != KILN_OP_INPUT && P.out_idx[i] < 0 &&
            (P.mat[i] || P.need[i]) && P.owner[i] >= 0) {
            p->inter_of[i] = (int32_t)p->n_inter;
            p->inter_node[p->n_inter++] = (int32_t)i;
        }
    }
    memcpy(p->f_nodes, f->nodes, P.n * sizeof *p->f_nodes);
    memcpy(p->f_outputs, f->outputs, f->n_outputs * sizeof *p->f_outputs);
    p->f_n_nodes = P.n;
    p->f_n_outputs = f->n_outputs;
    assert(plan_invariants(p));
    *out = p;
    p = NULL;
    goto cleanup;
fail:
    kiln__plan_free(p);
cleanup:
    kiln__free(P.uses);
    kiln__free(P.out_idx);
    kiln__free(P.owner);
    kiln__free(P.hard);
    kiln__free(P.need);
    kiln__free(P.mat);
    kiln__free(P.split);
    kiln__free(P.pw);
    kiln__free(P.segs);
    kiln__free(P.stack);
    kiln__free(P.seen);
    kiln__free(roots);
    kiln__free(by_seg);
    kiln__free(first);
    return st;
}

void kiln__pseg_segment(const kiln__pseg *s, int contracted,
                        kiln_ir_segment *seg)
{
    const kiln__segir *ir = &s->ir[contracted && s->contracts ? 1 : 0];
    memset(seg, 0, sizeof *seg);
    seg->struct_size = sizeof *seg;
    seg->kind = s->kind;
    seg->nodes = ir->nodes;
    seg->n_nodes = ir->n_nodes;
    seg->n_inputs = s->n_leaves;
    seg->outputs = ir->outputs;
    seg->n_outputs = s->n_outs;
    seg->input_traits = s->in_traits;
    seg->output_traits = s->out_traits;
    seg->index64 = s->index64;
}

/* ----------------------------------------------------------------- dump */

static const char *part_name(uint8_t part)
{
    return part == KILN__PART_D ? "D" : part == KILN__PART_K ? "K" : "own";
}

void kiln__plan_dump(const kiln__plan *p, FILE *out)
{
    fprintf(out, "kiln: plan %016llx: %u segment%s\n",
            (unsigned long long)p->hash, p->n_segs, p->n_segs == 1 ? "" : "s");
    for (uint32_t s = 0; s < p->n_segs; s++) {
        const kiln__pseg *ps = &p->segs[s];
        fprintf(out, "kiln:   segment %u: %s, domain of %%%d (rank %d)%s\n", s,
                ps->what, ps->dom_node, ps->dom_rank,
                ps->contracts ? ", contracts under fma" : "");
        for (uint32_t k = 0; k < ps->n_leaves; k++) {
            const kiln__leaf *l = &ps->leaves[k];
            fprintf(out, "kiln:     in%u = %%%d over %s map [", k, l->node,
                    part_name(l->part));
            for (int a = 0; a < p->f_nodes[l->node].rank; a++)
                fprintf(out, "%s%d", a ? "," : "", l->map[a]);
            fprintf(out, "] traits %u\n", ps->in_traits[k]);
        }
        const kiln__segir *ir = &ps->ir[0];
        for (uint32_t i = 0; i < ir->n_nodes; i++) {
            const kiln_ir_node *n = &ir->nodes[i];
            fprintf(out, "kiln:     n%u = %s %s rank %u bcast 0x%x", i,
                    kiln_op_name((kiln_op)n->op),
                    kiln_dtype_name((kiln_dtype)n->dtype), n->rank, n->bcast);
            for (int k = 0; k < 3 && n->args[k] >= 0; k++)
                fprintf(out, " n%d", n->args[k]);
            if (n->op == KILN_OP_INPUT)
                fprintf(out, " io %d", n->io);
            if (n->op == KILN_OP_CONST)
                fprintf(out, " 0x%llx", (unsigned long long)n->bits);
            if (kiln__op_is_reduce(n->op))
                fprintf(out, " axes 0x%x", n->axes);
            fputc('\n', out);
        }
        for (uint32_t k = 0; k < ps->n_outs; k++)
            fprintf(out, "kiln:     out%u = n%d -> %%%d (%s)\n", k,
                    ir->outputs[k], ps->outs[k].node,
                    ps->outs[k].out >= 0 ? "output" : "intermediate");
    }
}
