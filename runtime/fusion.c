/*
** fusion.c -- the fusion IR: the op table, the builder, finalize, the
** structural hash and equality (docs/fusion-format.md states the rules;
** docs/runtime.md the API).  The concrete shape computation used at
** execute, from the classes finalize builds, is fusion_shapes.c's.
**
** A fusion is an append-only array of kiln_ir_node (kiln_backend.h) in
** topological order: a node's value id is its index, and its operands are
** always earlier nodes.  Each value has a dtype, a rank and a broadcast mask
** (`bcast`: bit i set = axis i is declared to have size 1 and expands
** against the other operands).  The builder validates every node when it is
** added, so a fusion is always well-formed; finalize only checks the
** whole-graph rules (at least one output) and freezes it.
**
** Invariants (checked by fusion_invariants() in asserts):
**   - nodes[i].args[j] is -1 or < i; unused args are -1;
**   - bcast has no bits at or above rank; axes/flags/io/bits are zero (io
**     -1) except for the ops that use them, so that the node array is a
**     canonical form and the hash/equal functions can compare fields;
**   - inputs[] lists the INPUT nodes in declaration order (io = position).
**
** Shape unification: two non-broadcast axes that an op combines must have
** the same size at execute.  finalize builds the equivalence classes of
** (node, axis) pairs (union-find) once and stores, for each pair, the flat
** index of its class's first member; that member is always an axis of an
** INPUT node (every non-broadcast axis descends from one), so at execute
** the sizes are read from the input tensors without allocating.
*/
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* ------------------------------------------------------------ op table */

/* THE op table (the single source of truth for ops; docs/fusion-format.md
** section 3).  A row is the op's KILN_OP_TABLE entry in kiln.h (value,
** name, arity, kind: the part of the table that is ABI) followed by the
** columns below, keyed by the op's enum name: the accepted operand dtypes,
** the result dtype and the reduction kind.  A missing OPROW_ is a compile
** error, a repeated or out-of-range value as well (-Woverride-init under
** -Werror; array bounds).  Everything in C reads these rows through
** kiln__op_desc() or kiln_op_info(): the builder, the .kf parser, the
** planner, the backends and `kiln fusion --op-table-json`, which testgen's
** copy (testgen/optable.py) is checked against. */

#define DT(t) (1u << (t))
#define T_ALL ((1u << KILN_DTYPE_COUNT) - 1u)
#define T_NUM (DT(KILN_I32) | DT(KILN_I64) | DT(KILN_F32) | DT(KILN_F64))
#define T_FLT (DT(KILN_F32) | DT(KILN_F64))
#define T_EQ (DT(KILN_BOOL) | T_NUM)
#define T_BOOL DT(KILN_BOOL)
#define T_MM (DT(KILN_F16) | DT(KILN_BF16) | DT(KILN_F32))

/* accepts, result, reduce.  For `where` the mask applies to the two value
** operands; the condition is bool. */
#define OPROW_KILN_OP_INPUT T_ALL, KILN_RESULT_GIVEN, KILN_REDUCE_NONE
#define OPROW_KILN_OP_CONST T_ALL, KILN_RESULT_GIVEN, KILN_REDUCE_NONE
#define OPROW_KILN_OP_NEG T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_ABS T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_EXP T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_LOG T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_SQRT T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_RSQRT T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_RECIPROCAL T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_SIN T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_COS T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_TANH T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_SIGMOID T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_RELU T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_ERF T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_FLOOR T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_CEIL T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_ADD T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_SUB T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_MUL T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_DIV T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_POW T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_MAXIMUM T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_MINIMUM T_NUM, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_EQ T_EQ, KILN_BOOL, KILN_REDUCE_NONE
#define OPROW_KILN_OP_NE T_EQ, KILN_BOOL, KILN_REDUCE_NONE
#define OPROW_KILN_OP_LT T_NUM, KILN_BOOL, KILN_REDUCE_NONE
#define OPROW_KILN_OP_LE T_NUM, KILN_BOOL, KILN_REDUCE_NONE
#define OPROW_KILN_OP_GT T_NUM, KILN_BOOL, KILN_REDUCE_NONE
#define OPROW_KILN_OP_GE T_NUM, KILN_BOOL, KILN_REDUCE_NONE
#define OPROW_KILN_OP_AND T_BOOL, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_OR T_BOOL, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_NOT T_BOOL, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_WHERE T_ALL, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_FMA T_FLT, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_CAST T_ALL, KILN_RESULT_GIVEN, KILN_REDUCE_NONE
#define OPROW_KILN_OP_BROADCAST T_ALL, KILN_RESULT_SAME, KILN_REDUCE_NONE
#define OPROW_KILN_OP_SUM T_NUM, KILN_RESULT_SAME, KILN_REDUCE_SUM
#define OPROW_KILN_OP_RMAX T_NUM, KILN_RESULT_SAME, KILN_REDUCE_MAX
#define OPROW_KILN_OP_RMIN T_NUM, KILN_RESULT_SAME, KILN_REDUCE_MIN
#define OPROW_KILN_OP_MATMUL T_MM, KILN_F32, KILN_REDUCE_NONE

static const kiln_op_desc op_table[KILN_OP_COUNT] = {
#define KILN_X_(id, value, text, arity, kind)                                  \
    [value] = {sizeof(kiln_op_desc), id, text, arity, kind, OPROW_##id},
    KILN_OP_TABLE(KILN_X_)
#undef KILN_X_
};

const kiln_op_desc *kiln__op_desc(kiln_op op)
{
    if ((int)op < 0 || op >= KILN_OP_COUNT)
        return NULL;
    return &op_table[op];
}

int kiln__op_is_reduce(int op)
{
    const kiln_op_desc *d = kiln__op_desc((kiln_op)op);
    return d != NULL && d->reduce != KILN_REDUCE_NONE;
}

kiln_status kiln_op_info(kiln_op op, kiln_op_desc *out)
{
    const kiln_op_desc *d = kiln__op_desc(op);
    if (d == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_op_info: invalid op %d (the ops are 0..%d)",
                         (int)op, KILN_OP_COUNT - 1);
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_op_info: out is NULL");
    if (out->struct_size < sizeof *d) /* the first version is the minimum */
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_op_info: out->struct_size %zu is smaller than "
                         "sizeof(kiln_op_desc) %zu",
                         out->struct_size, sizeof *d);
    *out = *d; /* struct_size = the bytes filled */
    kiln__err_clear();
    return KILN_OK;
}

/* "f32, f64" into buf: the dtypes of mask, in enum order. */
static const char *mask_text(uint32_t mask, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        if (!(mask & DT(t)))
            continue;
        int w = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "",
                         kiln_dtype_name((kiln_dtype)t));
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
    }
    return buf;
}

/* ------------------------------------------------------------- helpers */

#define MAX_NODES (1u << 24) /* value ids stay far from INT32_MAX */

static int valid_dtype(int t) { return t >= 0 && t < KILN_DTYPE_COUNT; }

static int is_half(int t) { return t == KILN_F16 || t == KILN_BF16; }

static uint32_t rank_mask(int rank) { return (1u << rank) - 1u; }

/* Common entry checks of every builder call; `what` names the call. */
static kiln_status builder_check(const kiln_fusion *f, const void *out,
                                 const char *what)
{
    if (f == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "%s: fusion is NULL", what);
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "%s: out is NULL", what);
    if (f->finalized)
        return kiln__err(KILN_ERR_STATE,
                         "%s: the fusion is finalized; no op may be added",
                         what);
    if (f->n_nodes >= MAX_NODES)
        return kiln__err(KILN_ERR_LIMIT, "%s: a fusion holds at most %u values",
                         what, MAX_NODES);
    return KILN_OK;
}

static kiln_status check_value(const kiln_fusion *f, kiln_value v,
                               const char *what)
{
    if (v < 0 || (uint32_t)v >= f->n_nodes)
        return kiln__err(KILN_ERR_FUSION,
                         "%s: value %%%ld is out of range (the fusion has %u "
                         "values)",
                         what, (long)v, f->n_nodes);
    return KILN_OK;
}

/* Grow an int32 array to hold one more element; NO_MEMORY leaves it as is. */
static kiln_status grow_i32(int32_t **arr, uint32_t n, uint32_t *cap)
{
    if (n < *cap)
        return KILN_OK;
    uint32_t nc = *cap ? *cap * 2 : 8;
    int32_t *p = kiln__realloc(*arr, (size_t)nc * sizeof **arr);
    if (p == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "fusion: out of memory");
    *arr = p;
    *cap = nc;
    return KILN_OK;
}

/* Append a node (all fields set by the caller); on success *out = its id. */
static kiln_status push_node(kiln_fusion *f, const kiln_ir_node *n,
                             kiln_value *out)
{
    if (f->n_nodes == f->cap_nodes) {
        uint32_t nc = f->cap_nodes ? f->cap_nodes * 2 : 16;
        kiln_ir_node *p = kiln__realloc(f->nodes, (size_t)nc * sizeof *p);
        if (p == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "fusion: out of memory");
        f->nodes = p;
        f->cap_nodes = nc;
    }
    f->nodes[f->n_nodes] = *n;
    *out = (kiln_value)f->n_nodes++;
    kiln__err_clear();
    return KILN_OK;
}

kiln_ir_node kiln__ir_node_blank(int op, int dtype, int rank)
{
    kiln_ir_node n;
    memset(&n, 0, sizeof n);
    n.op = (uint16_t)op;
    n.dtype = (uint8_t)dtype;
    n.rank = (uint8_t)rank;
    n.args[0] = n.args[1] = n.args[2] = -1;
    n.io = -1;
    return n;
}

/* -------------------------------------------------------------- create */

kiln_status kiln_fusion_create(kiln_fusion **out)
{
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_fusion_create: out is NULL");
    kiln_fusion *f = kiln__calloc(1, sizeof *f);
    if (f == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_fusion_create: out of memory");
    *out = f;
    kiln__err_clear();
    return KILN_OK;
}

void kiln_fusion_destroy(kiln_fusion *f)
{
    if (f == NULL)
        return;
    kiln__free(f->nodes);
    kiln__free(f->inputs);
    kiln__free(f->outputs);
    kiln__free(f->axis_class);
    kiln__free(f->axis_edges);
    kiln__free(f->input_names);
    kiln__free(f);
}

/* --------------------------------------------------------------- leaves */

kiln_status kiln_fusion_input(kiln_fusion *f, kiln_dtype dtype, int rank,
                              const uint8_t *bcast, kiln_value *out)
{
    kiln_status s = builder_check(f, out, "input");
    if (s != KILN_OK)
        return s;
    if (!valid_dtype((int)dtype))
        return kiln__err(KILN_ERR_DTYPE, "input %u: invalid dtype %d",
                         f->n_inputs, (int)dtype);
    if (rank < 0)
        return kiln__err(KILN_ERR_SHAPE, "input %u: negative rank %d",
                         f->n_inputs, rank);
    if (rank > KILN_MAX_RANK)
        return kiln__err(KILN_ERR_LIMIT,
                         "input %u: rank %d exceeds the maximum rank %d",
                         f->n_inputs, rank, KILN_MAX_RANK);
    kiln_ir_node n = kiln__ir_node_blank(KILN_OP_INPUT, (int)dtype, rank);
    for (int i = 0; bcast != NULL && i < rank; i++)
        if (bcast[i])
            n.bcast |= 1u << i;
    n.io = (int32_t)f->n_inputs;
    s = grow_i32(&f->inputs, f->n_inputs, &f->cap_inputs);
    if (s != KILN_OK)
        return s;
    kiln_value id;
    s = push_node(f, &n, &id);
    if (s != KILN_OK)
        return s;
    f->inputs[f->n_inputs++] = id;
    *out = id;
    return KILN_OK;
}

kiln_status kiln_fusion_const(kiln_fusion *f, kiln_dtype dtype, uint64_t bits,
                              kiln_value *out)
{
    kiln_status s = builder_check(f, out, "const");
    if (s != KILN_OK)
        return s;
    if (!valid_dtype((int)dtype))
        return kiln__err(KILN_ERR_DTYPE, "const at %%%u: invalid dtype %d",
                         f->n_nodes, (int)dtype);
    size_t size = kiln_dtype_size(dtype);
    uint64_t limit = size == 8 ? UINT64_MAX : (1ull << (8 * size)) - 1;
    if (dtype == KILN_BOOL)
        limit = 1;
    if (bits > limit)
        return kiln__err(KILN_ERR_FUSION,
                         "const at %%%u: bit pattern 0x%llx does not fit %s "
                         "(maximum 0x%llx)",
                         f->n_nodes, (unsigned long long)bits,
                         kiln_dtype_name(dtype), (unsigned long long)limit);
    kiln_ir_node n = kiln__ir_node_blank(KILN_OP_CONST, (int)dtype, 0);
    n.bits = bits;
    return push_node(f, &n, out);
}

/* ------------------------------------------------------------ pointwise */

/* The dtype error of operand dtype t for op `info` at node id `at`. */
static kiln_status reject_dtype(const kiln_op_desc *info, uint32_t at,
                                kiln_value v, int t)
{
    char acc[96];
    mask_text(info->accepts, acc, sizeof acc);
    if (is_half(t) && (info->accepts & T_FLT))
        return kiln__err(KILN_ERR_DTYPE,
                         "%s at %%%u: %%%ld is %s, a storage type: cast it to "
                         "f32 first (%s accepts %s)",
                         info->name, at, (long)v, kiln_dtype_name((kiln_dtype)t),
                         info->name, acc);
    return kiln__err(KILN_ERR_DTYPE,
                     "%s at %%%u: dtype %s of %%%ld is not accepted (%s "
                     "accepts %s)",
                     info->name, at, kiln_dtype_name((kiln_dtype)t), (long)v,
                     info->name, acc);
}

kiln_status kiln_fusion_op(kiln_fusion *f, kiln_op op, const kiln_value *args,
                           int nargs, kiln_value *out)
{
    kiln_status s = builder_check(f, out, "op");
    if (s != KILN_OK)
        return s;
    const kiln_op_desc *info = kiln__op_desc(op);
    if (info == NULL)
        return kiln__err(KILN_ERR_FUSION, "op at %%%u: invalid op %d",
                         f->n_nodes, (int)op);
    uint32_t at = f->n_nodes;
    if (!(info->kind == 'u' || info->kind == 'b' || info->kind == 'c' ||
          info->kind == 'l' || info->kind == 'w' || op == KILN_OP_FMA))
        return kiln__err(KILN_ERR_FUSION,
                         "%s at %%%u: not a pointwise op; build it with its "
                         "own function (kiln_fusion_%s)",
                         info->name, at,
                         info->reduce != KILN_REDUCE_NONE ? "reduce" : info->name);
    if (nargs != info->arity)
        return kiln__err(KILN_ERR_FUSION,
                         "%s at %%%u: takes %d operand%s, got %d", info->name,
                         at, info->arity, info->arity == 1 ? "" : "s", nargs);
    if (args == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "%s at %%%u: args is NULL",
                         info->name, at);
    char what[48];
    snprintf(what, sizeof what, "%s at %%%u", info->name, at);
    for (int i = 0; i < nargs; i++)
        if ((s = check_value(f, args[i], what)) != KILN_OK)
            return s;

    /* dtypes: the value operands must agree and be accepted */
    int first = info->kind == 'w' ? 1 : 0;
    if (info->kind == 'w') {
        int c = f->nodes[args[0]].dtype;
        if (c != KILN_BOOL)
            return kiln__err(KILN_ERR_DTYPE,
                             "where at %%%u: the condition %%%ld is %s, must "
                             "be bool",
                             at, (long)args[0], kiln_dtype_name((kiln_dtype)c));
    }
    int t = f->nodes[args[first]].dtype;
    for (int i = first + 1; i < nargs; i++) {
        int u = f->nodes[args[i]].dtype;
        if (u != t)
            return kiln__err(KILN_ERR_DTYPE,
                             "%s at %%%u: dtype mismatch: %%%ld is %s, %%%ld "
                             "is %s",
                             info->name, at, (long)args[first],
                             kiln_dtype_name((kiln_dtype)t), (long)args[i],
                             kiln_dtype_name((kiln_dtype)u));
    }
    if (!(info->accepts & DT(t)))
        return reject_dtype(info, at, args[first], t);

    /* ranks: constants combine with anything, the rest must agree */
    int rank = -1;
    kiln_value rank_of = -1;
    uint32_t bcast = 0xffu;
    for (int i = 0; i < nargs; i++) {
        const kiln_ir_node *a = &f->nodes[args[i]];
        if (a->op == KILN_OP_CONST)
            continue;
        if (rank < 0) {
            rank = a->rank;
            rank_of = args[i];
        } else if (a->rank != rank) {
            return kiln__err(KILN_ERR_SHAPE,
                             "%s at %%%u: rank mismatch: %%%ld has rank %d, "
                             "%%%ld has rank %d (use broadcast to change rank)",
                             info->name, at, (long)rank_of, rank,
                             (long)args[i], a->rank);
        }
        bcast &= a->bcast;
    }
    if (rank < 0)
        rank = 0;
    kiln_ir_node n = kiln__ir_node_blank(op, info->result == KILN_RESULT_SAME ? t : info->result,
                                rank);
    n.bcast = bcast & rank_mask(rank);
    for (int i = 0; i < nargs; i++)
        n.args[i] = args[i];
    return push_node(f, &n, out);
}

kiln_status kiln_fusion_cast(kiln_fusion *f, kiln_value a, kiln_dtype to,
                             kiln_value *out)
{
    kiln_status s = builder_check(f, out, "cast");
    if (s != KILN_OK)
        return s;
    char what[48];
    snprintf(what, sizeof what, "cast at %%%u", f->n_nodes);
    if ((s = check_value(f, a, what)) != KILN_OK)
        return s;
    if (!valid_dtype((int)to))
        return kiln__err(KILN_ERR_DTYPE, "cast at %%%u: invalid target dtype %d",
                         f->n_nodes, (int)to);
    const kiln_ir_node *src = &f->nodes[a];
    kiln_ir_node n = kiln__ir_node_blank(KILN_OP_CAST, (int)to, src->rank);
    n.bcast = src->bcast;
    n.args[0] = a;
    return push_node(f, &n, out);
}

kiln_status kiln_fusion_broadcast(kiln_fusion *f, kiln_value a, int out_rank,
                                  const uint8_t *is_new, kiln_value *out)
{
    kiln_status s = builder_check(f, out, "broadcast");
    if (s != KILN_OK)
        return s;
    uint32_t at = f->n_nodes;
    char what[48];
    snprintf(what, sizeof what, "broadcast at %%%u", at);
    if ((s = check_value(f, a, what)) != KILN_OK)
        return s;
    if (out_rank < 0)
        return kiln__err(KILN_ERR_SHAPE, "broadcast at %%%u: negative rank %d",
                         at, out_rank);
    if (out_rank > KILN_MAX_RANK)
        return kiln__err(KILN_ERR_LIMIT,
                         "broadcast at %%%u: rank %d exceeds the maximum rank "
                         "%d",
                         at, out_rank, KILN_MAX_RANK);
    const kiln_ir_node *src = &f->nodes[a];
    uint32_t newmask = 0;
    int n_new = 0;
    for (int j = 0; is_new != NULL && j < out_rank; j++)
        if (is_new[j]) {
            newmask |= 1u << j;
            n_new++;
        }
    if (out_rank - n_new != src->rank)
        return kiln__err(KILN_ERR_SHAPE,
                         "broadcast at %%%u: %%%ld has rank %d and %d new "
                         "axes were given, so the result rank must be %d, not "
                         "%d",
                         at, (long)a, src->rank, n_new, src->rank + n_new,
                         out_rank);
    kiln_ir_node n = kiln__ir_node_blank(KILN_OP_BROADCAST, src->dtype, out_rank);
    n.axes = newmask;
    n.bcast = newmask;
    for (int j = 0, i = 0; j < out_rank; j++) {
        if (newmask & (1u << j))
            continue;
        if (src->bcast & (1u << i))
            n.bcast |= 1u << j;
        i++;
    }
    n.args[0] = a;
    return push_node(f, &n, out);
}

kiln_status kiln_fusion_reduce(kiln_fusion *f, kiln_op op, kiln_value a,
                               const int *axes, int naxes, int keepdim,
                               kiln_value *out)
{
    kiln_status s = builder_check(f, out, "reduce");
    if (s != KILN_OK)
        return s;
    uint32_t at = f->n_nodes;
    if (!kiln__op_is_reduce(op))
        return kiln__err(KILN_ERR_FUSION,
                         "reduce at %%%u: op %s is not a reduction (sum, max, "
                         "min)",
                         at, kiln_op_name(op) ? kiln_op_name(op) : "(invalid)");
    const kiln_op_desc *info = kiln__op_desc(op);
    char what[48];
    snprintf(what, sizeof what, "%s at %%%u", info->name, at);
    if ((s = check_value(f, a, what)) != KILN_OK)
        return s;
    const kiln_ir_node *src = &f->nodes[a];
    if (!(info->accepts & DT(src->dtype)))
        return reject_dtype(info, at, a, src->dtype);
    if (naxes <= 0)
        return kiln__err(KILN_ERR_FUSION,
                         "%s at %%%u: at least one axis must be reduced",
                         info->name, at);
    if (axes == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "%s at %%%u: axes is NULL",
                         info->name, at);
    uint32_t mask = 0;
    for (int i = 0; i < naxes; i++) {
        if (axes[i] < 0 || axes[i] >= src->rank)
            return kiln__err(KILN_ERR_FUSION,
                             "%s at %%%u: axis %d is out of range for %%%ld "
                             "of rank %d",
                             info->name, at, axes[i], (long)a, src->rank);
        if (mask & (1u << axes[i]))
            return kiln__err(KILN_ERR_FUSION,
                             "%s at %%%u: axis %d is listed twice",
                             info->name, at, axes[i]);
        mask |= 1u << axes[i];
    }
    kiln_ir_node n = kiln__ir_node_blank(op, src->dtype, src->rank);
    n.axes = mask;
    n.args[0] = a;
    if (keepdim) {
        n.flags = KILN_IR_KEEPDIM;
        n.bcast = src->bcast | mask;
    } else {
        int r = 0;
        for (int i = 0; i < src->rank; i++) {
            if (mask & (1u << i))
                continue;
            if (src->bcast & (1u << i))
                n.bcast |= 1u << r;
            r++;
        }
        n.rank = (uint8_t)r;
    }
    return push_node(f, &n, out);
}

kiln_status kiln_fusion_matmul(kiln_fusion *f, kiln_value a, kiln_value b,
                               kiln_value *out)
{
    kiln_status s = builder_check(f, out, "matmul");
    if (s != KILN_OK)
        return s;
    uint32_t at = f->n_nodes;
    char what[48];
    snprintf(what, sizeof what, "matmul at %%%u", at);
    if ((s = check_value(f, a, what)) != KILN_OK ||
        (s = check_value(f, b, what)) != KILN_OK)
        return s;
    const kiln_ir_node *x = &f->nodes[a], *y = &f->nodes[b];
    if (x->dtype != y->dtype)
        return kiln__err(KILN_ERR_DTYPE,
                         "matmul at %%%u: dtype mismatch: %%%ld is %s, %%%ld "
                         "is %s",
                         at, (long)a, kiln_dtype_name((kiln_dtype)x->dtype),
                         (long)b, kiln_dtype_name((kiln_dtype)y->dtype));
    if (!(op_table[KILN_OP_MATMUL].accepts & DT(x->dtype)))
        return reject_dtype(&op_table[KILN_OP_MATMUL], at, a, x->dtype);
    if (x->rank != 2 || y->rank != 2)
        return kiln__err(KILN_ERR_SHAPE,
                         "matmul at %%%u: operands must have rank 2, %%%ld has "
                         "rank %d",
                         at, x->rank != 2 ? (long)a : (long)b,
                         x->rank != 2 ? x->rank : y->rank);
    if (((x->bcast >> 1) & 1u) != (y->bcast & 1u))
        return kiln__err(KILN_ERR_SHAPE,
                         "matmul at %%%u: the K axis is a broadcast axis in "
                         "one operand only (%%%ld axis 1, %%%ld axis 0)",
                         at, (long)a, (long)b);
    kiln_ir_node n = kiln__ir_node_blank(KILN_OP_MATMUL, KILN_F32, 2);
    n.bcast = (x->bcast & 1u) | (y->bcast & 2u);
    n.args[0] = a;
    n.args[1] = b;
    return push_node(f, &n, out);
}

/* --------------------------------------------------------------- output */

kiln_status kiln_fusion_output(kiln_fusion *f, kiln_value v)
{
    if (f == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "output: fusion is NULL");
    if (f->finalized)
        return kiln__err(KILN_ERR_STATE,
                         "output: the fusion is finalized; no output may be "
                         "added");
    kiln_status s = check_value(f, v, "output");
    if (s != KILN_OK)
        return s;
    for (uint32_t i = 0; i < f->n_outputs; i++)
        if (f->outputs[i] == v)
            return kiln__err(KILN_ERR_FUSION,
                             "output: %%%ld is already output %u", (long)v, i);
    s = grow_i32(&f->outputs, f->n_outputs, &f->cap_outputs);
    if (s != KILN_OK)
        return s;
    f->outputs[f->n_outputs++] = v;
    kiln__err_clear();
    return KILN_OK;
}

/* ------------------------------------------------------------- finalize */

/* Checker used only inside assert(): the node array is canonical. */
static __attribute__((unused)) int fusion_invariants(const kiln_fusion *f)
{
    uint32_t n_in = 0;
    for (uint32_t i = 0; i < f->n_nodes; i++) {
        const kiln_ir_node *n = &f->nodes[i];
        if (n->op >= KILN_OP_COUNT || n->rank > KILN_MAX_RANK ||
            (n->bcast & ~rank_mask(n->rank)) != 0)
            return 0;
        for (int j = 0; j < 3; j++)
            if (n->args[j] >= (int32_t)i || n->args[j] < -1)
                return 0;
        if (n->op == KILN_OP_INPUT &&
            (n->io != (int32_t)n_in || f->inputs[n_in++] != (int32_t)i))
            return 0;
    }
    return n_in == f->n_inputs;
}

static uint32_t uf_find(int32_t *parent, uint32_t x)
{
    while ((uint32_t)parent[x] != x) {
        parent[x] = parent[parent[x]]; /* path halving */
        x = (uint32_t)parent[x];
    }
    return x;
}

/* Collects the (x, y, node) axis joins of one node; edges may be NULL to
** only count them. */
typedef struct edge_sink {
    int32_t *edges;
    uint32_t n;
} edge_sink;

static void add_edge(edge_sink *e, const kiln_fusion *f, int32_t an, int aa,
                     int32_t bn, int ba, uint32_t node)
{
    if ((f->nodes[an].bcast >> aa) & 1u)
        return; /* broadcast axes expand; they join nothing */
    if ((f->nodes[bn].bcast >> ba) & 1u)
        return;
    if (e->edges != NULL) {
        e->edges[3 * e->n + 0] = an * KILN_MAX_RANK + aa;
        e->edges[3 * e->n + 1] = bn * KILN_MAX_RANK + ba;
        e->edges[3 * e->n + 2] = (int32_t)node;
    }
    e->n++;
}

/* The axis joins that node i makes between its operands and its result. */
static void node_edges(const kiln_fusion *f, uint32_t i, edge_sink *e)
{
    const kiln_ir_node *n = &f->nodes[i];
    int32_t me = (int32_t)i;
    switch ((kiln_op)n->op) {
    case KILN_OP_INPUT:
    case KILN_OP_CONST:
        return;
    case KILN_OP_BROADCAST:
        for (int j = 0, k = 0; j < n->rank; j++)
            if (!(n->axes & (1u << j)))
                add_edge(e, f, n->args[0], k++, me, j, i);
        return;
    case KILN_OP_SUM:
    case KILN_OP_RMAX:
    case KILN_OP_RMIN: {
        int r = 0;
        for (int k = 0; k < f->nodes[n->args[0]].rank; k++) {
            if (n->axes & (1u << k)) {
                if (n->flags & KILN_IR_KEEPDIM)
                    r++;
                continue;
            }
            add_edge(e, f, n->args[0], k, me, r++, i);
        }
        return;
    }
    case KILN_OP_MATMUL:
        add_edge(e, f, n->args[0], 0, me, 0, i);
        add_edge(e, f, n->args[1], 1, me, 1, i);
        add_edge(e, f, n->args[0], 1, n->args[1], 0, i);
        return;
    default: /* pointwise and cast: operand axis j = result axis j */
        for (int k = 0; k < 3 && n->args[k] >= 0; k++) {
            if (f->nodes[n->args[k]].op == KILN_OP_CONST)
                continue;
            for (int j = 0; j < n->rank; j++)
                add_edge(e, f, n->args[k], j, me, j, i);
        }
        return;
    }
}

kiln_status kiln_fusion_finalize(kiln_fusion *f)
{
    if (f == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "finalize: fusion is NULL");
    if (f->finalized)
        return kiln__err(KILN_ERR_STATE, "finalize: already finalized");
    if (f->n_outputs == 0)
        return kiln__err(KILN_ERR_FUSION,
                         "finalize: the fusion has no output (mark at least "
                         "one value with output)");
    assert(fusion_invariants(f));

    /* Axis classes: union-find over flat (node, axis) indices. */
    size_t nflat = (size_t)f->n_nodes * KILN_MAX_RANK;
    edge_sink count = {NULL, 0};
    for (uint32_t i = 0; i < f->n_nodes; i++)
        node_edges(f, i, &count);
    int32_t *cls = kiln__malloc(nflat * sizeof *cls);
    edge_sink e = {kiln__malloc((size_t)count.n * 3 * sizeof(int32_t)), 0};
    if (cls == NULL || e.edges == NULL) {
        kiln__free(cls);
        kiln__free(e.edges);
        return kiln__err(KILN_ERR_NO_MEMORY, "finalize: out of memory");
    }
    for (uint32_t i = 0; i < f->n_nodes; i++)
        node_edges(f, i, &e);
    for (size_t x = 0; x < nflat; x++)
        cls[x] = (int32_t)x;
    for (uint32_t k = 0; k < e.n; k++) {
        uint32_t ra = uf_find(cls, (uint32_t)e.edges[3 * k]);
        uint32_t rb = uf_find(cls, (uint32_t)e.edges[3 * k + 1]);
        /* the smaller index stays root: it is the first input axis */
        if (ra < rb)
            cls[rb] = (int32_t)ra;
        else if (rb < ra)
            cls[ra] = (int32_t)rb;
    }
    for (size_t x = 0; x < nflat; x++) {
        const kiln_ir_node *n = &f->nodes[x / KILN_MAX_RANK];
        int ax = (int)(x % KILN_MAX_RANK);
        if (ax >= n->rank || ((n->bcast >> ax) & 1u))
            cls[x] = -1;
        else
            cls[x] = (int32_t)uf_find(cls, (uint32_t)x);
        /* a non-broadcast axis always descends from an input axis */
        assert(cls[x] < 0 ||
               f->nodes[cls[x] / KILN_MAX_RANK].op == KILN_OP_INPUT);
    }
    kiln__free(f->axis_class);
    kiln__free(f->axis_edges);
    f->axis_class = cls;
    f->axis_edges = e.edges;
    f->n_axis_edges = e.n;

    uint64_t h;
    f->finalized = 1;
    kiln_fusion_hash(f, &h);
    f->hash = h;
    kiln__err_clear();
    return KILN_OK;
}

/* ---------------------------------------------------------- hash, equal */

static uint64_t mix_u64(uint64_t h, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i)); /* little-endian, portable */
    return kiln__fnv1a(b, (size_t)bytes, h);
}

kiln_status kiln_fusion_hash(const kiln_fusion *f, uint64_t *out)
{
    if (f == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "hash: NULL argument");
    if (!f->finalized)
        return kiln__err(KILN_ERR_STATE, "hash: the fusion is not finalized");
    uint64_t h = kiln__fnv1a("kiln.fusion 1", 13, KILN_FNV_SEED);
    h = mix_u64(h, f->n_nodes, 4);
    for (uint32_t i = 0; i < f->n_nodes; i++) {
        const kiln_ir_node *n = &f->nodes[i];
        h = mix_u64(h, n->op, 2);
        h = mix_u64(h, n->dtype, 1);
        h = mix_u64(h, n->rank, 1);
        for (int j = 0; j < 3; j++)
            h = mix_u64(h, (uint32_t)n->args[j], 4);
        h = mix_u64(h, n->bcast, 4);
        h = mix_u64(h, n->axes, 4);
        h = mix_u64(h, n->flags, 4);
        h = mix_u64(h, (uint32_t)n->io, 4);
        h = mix_u64(h, n->bits, 8);
    }
    h = mix_u64(h, f->n_outputs, 4);
    for (uint32_t i = 0; i < f->n_outputs; i++)
        h = mix_u64(h, (uint32_t)f->outputs[i], 4);
    *out = h;
    return KILN_OK;
}

static int node_eq(const kiln_ir_node *a, const kiln_ir_node *b)
{
    return a->op == b->op && a->dtype == b->dtype && a->rank == b->rank &&
           a->args[0] == b->args[0] && a->args[1] == b->args[1] &&
           a->args[2] == b->args[2] && a->bcast == b->bcast &&
           a->axes == b->axes && a->flags == b->flags && a->io == b->io &&
           a->bits == b->bits;
}

int kiln_fusion_equal(const kiln_fusion *a, const kiln_fusion *b)
{
    if (a == NULL || b == NULL || !a->finalized || !b->finalized)
        return 0;
    if (a == b)
        return 1;
    if (a->hash != b->hash || a->n_nodes != b->n_nodes ||
        a->n_outputs != b->n_outputs)
        return 0;
    for (uint32_t i = 0; i < a->n_nodes; i++)
        if (!node_eq(&a->nodes[i], &b->nodes[i]))
            return 0;
    for (uint32_t i = 0; i < a->n_outputs; i++)
        if (a->outputs[i] != b->outputs[i])
            return 0;
    return 1;
}

/* ---------------------------------------------------------------- query */

kiln_status kiln_fusion_num_inputs(const kiln_fusion *f, int *n)
{
    if (f == NULL || n == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "num_inputs: NULL argument");
    *n = (int)f->n_inputs;
    return KILN_OK;
}

kiln_status kiln_fusion_num_outputs(const kiln_fusion *f, int *n)
{
    if (f == NULL || n == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "num_outputs: NULL argument");
    *n = (int)f->n_outputs;
    return KILN_OK;
}

kiln_status kiln_fusion_io(const kiln_fusion *f, int is_output, int i,
                           kiln_dtype *dtype, int *rank, uint8_t *bcast)
{
    if (f == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "io: fusion is NULL");
    uint32_t count = is_output ? f->n_outputs : f->n_inputs;
    if (i < 0 || (uint32_t)i >= count)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "io: %s %d does not exist (the fusion has %u)",
                         is_output ? "output" : "input", i, count);
    const kiln_ir_node *n =
        &f->nodes[is_output ? f->outputs[i] : f->inputs[i]];
    if (dtype)
        *dtype = (kiln_dtype)n->dtype;
    if (rank)
        *rank = n->rank;
    if (bcast)
        for (int a = 0; a < KILN_MAX_RANK; a++)
            bcast[a] = (uint8_t)(a < n->rank && ((n->bcast >> a) & 1u));
    return KILN_OK;
}
