/*
** test_ir_simplify.c -- runtime/ir_simplify.c pass by pass on hand-built
** node lists: constant folding of every op it folds (integers wrapping,
** floats with one rounding, saturating casts) and every case it must leave
** alone (fast_math, NaN, transcendentals, f16/bf16, zeros of max/min/relu),
** each identity and its float caveats (-0, fast_math), the exact strength
** reductions and their range limits, common subexpressions, the pass mask,
** and the pass-name text.  Every expected bit pattern is written out here
** (IEEE 754 by hand), never computed by the code under test.  (The passes
** inside generated kernels are in test_cuda.c.)
*/
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "ir_simplify.h"

#define CAP 16

typedef struct fx {
    kiln_ir_node n[CAP];
    int32_t alias[CAP];
    kiln_ir_work w;
    kiln_kernel_options ko;
} fx;

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    f->w.n = f->n;
    f->w.cap = CAP;
    f->w.alias = f->alias;
    for (int i = 0; i < CAP; i++)
        f->alias[i] = i;
    f->ko.struct_size = sizeof f->ko;
}

static int32_t node(fx *f, int op, int dt, int32_t a, int32_t b, int32_t c, uint64_t bits)
{
    kiln_ir_node *x = &f->n[f->w.nn];
    x->op = (uint16_t)op;
    x->dtype = (uint8_t)dt;
    x->args[0] = a;
    x->args[1] = b;
    x->args[2] = c;
    x->io = op == KILN_OP_INPUT ? (int32_t)f->w.nn : -1;
    x->bits = bits;
    return (int32_t)f->w.nn++;
}

static int32_t input(fx *f, int dt) { return node(f, KILN_OP_INPUT, dt, -1, -1, -1, 0); }
static int32_t cnst(fx *f, int dt, uint64_t bits) { return node(f, KILN_OP_CONST, dt, -1, -1, -1, bits); }

static uint64_t only(int pass) { return ((uint64_t)1 << KILN_SP_COUNT) - 1u - ((uint64_t)1 << pass); }

/* ------------------------------------------------------------ folding */

typedef struct fold_case {
    int op, adt, rdt, nargs, fm;
    uint64_t a, b, c;
    int folds;     /* 1: the node must become this constant */
    uint64_t want;
} fold_case;

#define F32_1 0x3f800000u
#define F32_2 0x40000000u
#define F32_3 0x40400000u
#define F32_NAN 0x7fc00000u

static const fold_case folds[] = {
    /* integers and bool: the device's wrapping arithmetic */
    {KILN_OP_NEG, KILN_I32, KILN_I32, 1, 0, 5, 0, 0, 1, 0xfffffffbu},
    {KILN_OP_ABS, KILN_I32, KILN_I32, 1, 0, 0xfffffff9u, 0, 0, 1, 7},
    {KILN_OP_ABS, KILN_I32, KILN_I32, 1, 0, 7, 0, 0, 1, 7},
    {KILN_OP_RELU, KILN_I32, KILN_I32, 1, 0, 0xfffffffdu, 0, 0, 1, 0},
    {KILN_OP_RELU, KILN_I32, KILN_I32, 1, 0, 4, 0, 0, 1, 4},
    {KILN_OP_ADD, KILN_I32, KILN_I32, 2, 0, 0x7fffffffu, 1, 0, 1, 0x80000000u},
    {KILN_OP_SUB, KILN_I32, KILN_I32, 2, 0, 3, 5, 0, 1, 0xfffffffeu},
    {KILN_OP_MUL, KILN_I32, KILN_I32, 2, 0, 6, 7, 0, 1, 42},
    {KILN_OP_MUL, KILN_I64, KILN_I64, 2, 0, 0x100000000ull, 0x100000000ull, 0, 1, 0},
    {KILN_OP_MAXIMUM, KILN_I32, KILN_I32, 2, 0, 0xffffffffu, 2, 0, 1, 2},
    {KILN_OP_MAXIMUM, KILN_I32, KILN_I32, 2, 0, 3, 2, 0, 1, 3},
    {KILN_OP_MINIMUM, KILN_I32, KILN_I32, 2, 0, 0xffffffffu, 2, 0, 1, 0xffffffffu},
    {KILN_OP_MINIMUM, KILN_I32, KILN_I32, 2, 0, 3, 2, 0, 1, 2},
    {KILN_OP_EQ, KILN_I32, KILN_BOOL, 2, 0, 3, 3, 0, 1, 1},
    {KILN_OP_NE, KILN_I32, KILN_BOOL, 2, 0, 3, 3, 0, 1, 0},
    {KILN_OP_LT, KILN_I32, KILN_BOOL, 2, 0, 0xffffffffu, 0, 0, 1, 1},
    {KILN_OP_LE, KILN_I64, KILN_BOOL, 2, 0, 2, 2, 0, 1, 1},
    {KILN_OP_GT, KILN_I32, KILN_BOOL, 2, 0, 1, 2, 0, 1, 0},
    {KILN_OP_GE, KILN_I32, KILN_BOOL, 2, 0, 2, 1, 0, 1, 1},
    {KILN_OP_AND, KILN_BOOL, KILN_BOOL, 2, 0, 1, 0, 0, 1, 0},
    {KILN_OP_AND, KILN_BOOL, KILN_BOOL, 2, 0, 1, 1, 0, 1, 1},
    {KILN_OP_OR, KILN_BOOL, KILN_BOOL, 2, 0, 1, 0, 0, 1, 1},
    {KILN_OP_OR, KILN_BOOL, KILN_BOOL, 2, 0, 0, 0, 0, 1, 0},
    {KILN_OP_NOT, KILN_BOOL, KILN_BOOL, 1, 0, 0, 0, 0, 1, 1},
    {KILN_OP_CAST, KILN_I32, KILN_BOOL, 1, 0, 5, 0, 0, 1, 1},
    {KILN_OP_CAST, KILN_I64, KILN_I32, 1, 0, 0x1ffffffffull, 0, 0, 1, 0xffffffffu},
    {KILN_OP_CAST, KILN_I32, KILN_I64, 1, 0, 0xffffffffu, 0, 0, 1, 0xffffffffffffffffull},
    {KILN_OP_CAST, KILN_I32, KILN_F32, 1, 0, 3, 0, 0, 1, F32_3},
    {KILN_OP_CAST, KILN_I32, KILN_F64, 1, 0, 3, 0, 0, 1, 0x4008000000000000ull},
    {KILN_OP_CAST, KILN_I32, KILN_F32, 1, 1, 3, 0, 0, 0, 0},   /* fast_math */
    {KILN_OP_CAST, KILN_I32, KILN_F16, 1, 0, 3, 0, 0, 0, 0},   /* no host f16 */
    {KILN_OP_DIV, KILN_I32, KILN_I32, 2, 0, 6, 3, 0, 0, 0},    /* not an int op */
    /* floats, without fast_math: one rounding, as the device */
    {KILN_OP_NEG, KILN_F32, KILN_F32, 1, 0, F32_1, 0, 0, 1, 0xbf800000u},
    {KILN_OP_NEG, KILN_F64, KILN_F64, 1, 0, 0x3ff0000000000000ull, 0, 0, 1, 0xbff0000000000000ull},
    {KILN_OP_ABS, KILN_F32, KILN_F32, 1, 0, 0xc0000000u, 0, 0, 1, F32_2},
    {KILN_OP_ABS, KILN_F64, KILN_F64, 1, 0, 0x8000000000000000ull, 0, 0, 1, 0},
    {KILN_OP_NEG, KILN_F32, KILN_F32, 1, 1, F32_1, 0, 0, 1, 0xbf800000u}, /* sign flip: fm too */
    {KILN_OP_ADD, KILN_F32, KILN_F32, 2, 0, F32_1, F32_2, 0, 1, F32_3},
    {KILN_OP_ADD, KILN_F64, KILN_F64, 2, 0, 0x3fb999999999999aull, 0x3fc999999999999aull, 0, 1,
     0x3fd3333333333334ull}, /* 0.1 + 0.2 */
    {KILN_OP_ADD, KILN_F32, KILN_F32, 2, 0, 0x3dcccccdu, 0x3e4ccccdu, 0, 1, 0x3e99999au}, /* f32 */
    {KILN_OP_SUB, KILN_F32, KILN_F32, 2, 0, F32_1, F32_2, 0, 1, 0xbf800000u},
    {KILN_OP_SUB, KILN_F64, KILN_F64, 2, 0, 0x4000000000000000ull, 0x3ff0000000000000ull, 0, 1,
     0x3ff0000000000000ull},
    {KILN_OP_MUL, KILN_F32, KILN_F32, 2, 0, F32_2, F32_3, 0, 1, 0x40c00000u},
    {KILN_OP_MUL, KILN_F64, KILN_F64, 2, 0, 0x4000000000000000ull, 0x4008000000000000ull, 0, 1,
     0x4018000000000000ull},
    {KILN_OP_DIV, KILN_F32, KILN_F32, 2, 0, F32_1, 0x40800000u, 0, 1, 0x3e800000u},
    {KILN_OP_DIV, KILN_F32, KILN_F32, 2, 0, F32_1, F32_3, 0, 1, 0x3eaaaaabu}, /* 1/3 rounded once */
    {KILN_OP_DIV, KILN_F64, KILN_F64, 2, 0, 0x3ff0000000000000ull, 0x4008000000000000ull, 0, 1,
     0x3fd5555555555555ull},
    {KILN_OP_DIV, KILN_F32, KILN_F32, 2, 0, 0, 0, 0, 0, 0},         /* 0/0: NaN, not folded */
    {KILN_OP_FMA, KILN_F32, KILN_F32, 3, 0, F32_2, F32_3, F32_1, 1, 0x40e00000u},
    {KILN_OP_FMA, KILN_F64, KILN_F64, 3, 0, 0x4000000000000000ull, 0x4008000000000000ull,
     0x3ff0000000000000ull, 1, 0x401c000000000000ull},
    {KILN_OP_SQRT, KILN_F32, KILN_F32, 1, 0, 0x40800000u, 0, 0, 1, F32_2},
    {KILN_OP_SQRT, KILN_F64, KILN_F64, 1, 0, 0x4000000000000000ull, 0, 0, 1, 0x3ff6a09e667f3bcdull},
    {KILN_OP_RECIPROCAL, KILN_F32, KILN_F32, 1, 0, F32_2, 0, 0, 1, 0x3f000000u},
    {KILN_OP_RECIPROCAL, KILN_F64, KILN_F64, 1, 0, 0x4000000000000000ull, 0, 0, 1, 0x3fe0000000000000ull},
    {KILN_OP_FLOOR, KILN_F32, KILN_F32, 1, 0, 0xbfc00000u, 0, 0, 1, 0xc0000000u},
    {KILN_OP_CEIL, KILN_F32, KILN_F32, 1, 0, 0x3fc00000u, 0, 0, 1, F32_2},
    {KILN_OP_RELU, KILN_F32, KILN_F32, 1, 0, F32_3, 0, 0, 1, F32_3},
    {KILN_OP_RELU, KILN_F32, KILN_F32, 1, 0, 0xc0400000u, 0, 0, 0, 0}, /* a zero: skipped */
    {KILN_OP_MAXIMUM, KILN_F32, KILN_F32, 2, 0, F32_1, F32_2, 0, 1, F32_2},
    {KILN_OP_MAXIMUM, KILN_F32, KILN_F32, 2, 0, F32_2, F32_1, 0, 1, F32_2},
    {KILN_OP_MINIMUM, KILN_F32, KILN_F32, 2, 0, F32_1, F32_2, 0, 1, F32_1},
    {KILN_OP_MINIMUM, KILN_F32, KILN_F32, 2, 0, 0x80000000u, 0, 0, 0, 0}, /* min(-0, +0) */
    {KILN_OP_EQ, KILN_F32, KILN_BOOL, 2, 0, F32_1, F32_1, 0, 1, 1},
    {KILN_OP_NE, KILN_F32, KILN_BOOL, 2, 0, F32_1, F32_1, 0, 1, 0},
    {KILN_OP_LT, KILN_F32, KILN_BOOL, 2, 0, F32_1, F32_2, 0, 1, 1},
    {KILN_OP_LE, KILN_F64, KILN_BOOL, 2, 0, 0x4000000000000000ull, 0x3ff0000000000000ull, 0, 1, 0},
    {KILN_OP_GT, KILN_F32, KILN_BOOL, 2, 0, F32_2, F32_1, 0, 1, 1},
    {KILN_OP_GE, KILN_F32, KILN_BOOL, 2, 0, F32_1, F32_2, 0, 1, 0},
    {KILN_OP_EQ, KILN_F32, KILN_BOOL, 2, 0, 0x80000000u, 0, 0, 1, 1}, /* -0 == +0 */
    {KILN_OP_CAST, KILN_F32, KILN_BOOL, 1, 0, 0x3f000000u, 0, 0, 1, 1},
    {KILN_OP_CAST, KILN_F32, KILN_BOOL, 1, 0, 0x80000000u, 0, 0, 1, 0},
    {KILN_OP_CAST, KILN_F32, KILN_I32, 1, 0, 0x4f32d05eu, 0, 0, 1, 0x7fffffffu}, /* 3e9 saturates */
    {KILN_OP_CAST, KILN_F32, KILN_I32, 1, 0, 0xcf32d05eu, 0, 0, 1, 0x80000000u},
    {KILN_OP_CAST, KILN_F32, KILN_I32, 1, 0, 0xc0600000u, 0, 0, 1, 0xfffffffdu}, /* -3.5 -> -3 */
    {KILN_OP_CAST, KILN_F64, KILN_I64, 1, 0, 0x43e158e460913d00ull, 0, 0, 1, 0x7fffffffffffffffull},
    {KILN_OP_CAST, KILN_F64, KILN_I64, 1, 0, 0xc3e158e460913d00ull, 0, 0, 1, 0x8000000000000000ull},
    {KILN_OP_CAST, KILN_F64, KILN_I64, 1, 0, 0x4059000000000000ull, 0, 0, 1, 100},
    {KILN_OP_CAST, KILN_F32, KILN_F64, 1, 0, 0x3fc00000u, 0, 0, 1, 0x3ff8000000000000ull},
    {KILN_OP_CAST, KILN_F64, KILN_F32, 1, 0, 0x3fb999999999999aull, 0, 0, 1, 0x3dcccccdu},
    {KILN_OP_CAST, KILN_F32, KILN_F16, 1, 0, F32_1, 0, 0, 0, 0},
    /* never folded */
    {KILN_OP_EXP, KILN_F32, KILN_F32, 1, 0, F32_1, 0, 0, 0, 0},     /* transcendental */
    {KILN_OP_ADD, KILN_F32, KILN_F32, 2, 1, F32_1, F32_2, 0, 0, 0},  /* fast_math: FTZ */
    {KILN_OP_ADD, KILN_F32, KILN_F32, 2, 0, F32_NAN, F32_1, 0, 0, 0}, /* NaN payloads */
    {KILN_OP_ADD, KILN_F32, KILN_F32, 2, 0, F32_1, F32_NAN, 0, 0, 0},
    {KILN_OP_FMA, KILN_F32, KILN_F32, 3, 0, F32_1, F32_1, F32_NAN, 0, 0},
    {KILN_OP_ADD, KILN_F16, KILN_F16, 2, 0, 0x3c00, 0x3c00, 0, 0, 0}, /* no host f16 */
    {KILN_OP_NEG, KILN_BF16, KILN_BF16, 1, 0, 0x3f80, 0, 0, 0, 0},
    /* where() folds in any dtype: it only picks */
    {KILN_OP_WHERE, KILN_BOOL, KILN_F16, 3, 0, 1, 0x3c00, 0x4000, 1, 0x3c00},
    {KILN_OP_WHERE, KILN_BOOL, KILN_F16, 3, 0, 0, 0x3c00, 0x4000, 1, 0x4000},
};

START_TEST(fold_table)
{
    const fold_case *c = &folds[_i];
    fx f;
    fx_init(&f);
    f.ko.fast_math = c->fm;
    f.ko.simplify_off = only(KILN_SP_FOLD);
    uint64_t v[3] = {c->a, c->b, c->c};
    int32_t arg[3] = {-1, -1, -1};
    for (int k = 0; k < c->nargs; k++) {
        /* where(): the condition is bool, the branches are the result's dtype */
        int dt = c->op == KILN_OP_WHERE && k > 0 ? c->rdt : c->adt;
        arg[k] = cnst(&f, dt, v[k]);
    }
    int32_t x = node(&f, c->op, c->rdt, arg[0], arg[1], arg[2], 0);
    kiln__ir_simplify(&f.w, &f.ko);
    if (c->folds) {
        ck_assert_msg(f.n[x].op == KILN_OP_CONST, "case %d (op %d): not folded", _i, c->op);
        ck_assert_msg(f.n[x].bits == c->want, "case %d (op %d): %#llx, want %#llx", _i, c->op,
                      (unsigned long long)f.n[x].bits, (unsigned long long)c->want);
        ck_assert_int_eq(f.n[x].args[0], -1);
    } else {
        ck_assert_msg(f.n[x].op == c->op, "case %d (op %d): folded to %#llx", _i, c->op,
                      (unsigned long long)f.n[x].bits);
    }
    ck_assert_int_eq(f.alias[x], x);
}
END_TEST

/* A fold needs every operand constant; an input stops it, and reductions
** and matmul are never touched, even over constants. */
START_TEST(fold_needs_constants)
{
    fx f;
    fx_init(&f);
    f.ko.simplify_off = only(KILN_SP_FOLD);
    int32_t in = input(&f, KILN_F32);
    int32_t one = cnst(&f, KILN_F32, F32_1);
    int32_t add = node(&f, KILN_OP_ADD, KILN_F32, in, one, -1, 0);
    int32_t sum = node(&f, KILN_OP_SUM, KILN_F32, one, -1, -1, 0);
    int32_t mm = node(&f, KILN_OP_MATMUL, KILN_F32, one, one, -1, 0);
    kiln__ir_simplify(&f.w, &f.ko);
    ck_assert_int_eq(f.n[add].op, KILN_OP_ADD);
    ck_assert_int_eq(f.n[sum].op, KILN_OP_SUM);
    ck_assert_int_eq(f.n[mm].op, KILN_OP_MATMUL);
    ck_assert_int_eq(f.n[in].op, KILN_OP_INPUT);
}
END_TEST

/* Folding chains: a folded node is a constant for the nodes after it. */
START_TEST(fold_chains)
{
    fx f;
    fx_init(&f);
    int32_t two = cnst(&f, KILN_I32, 2);
    int32_t three = cnst(&f, KILN_I32, 3);
    int32_t m = node(&f, KILN_OP_MUL, KILN_I32, two, three, -1, 0);
    int32_t n = node(&f, KILN_OP_NEG, KILN_I32, m, -1, -1, 0);
    kiln__ir_simplify(&f.w, &f.ko);
    ck_assert_int_eq(f.n[n].op, KILN_OP_CONST);
    ck_assert_uint_eq(f.n[n].bits, 0xfffffffau);
}
END_TEST

/* ----------------------------------------------------------- identities */

typedef struct id_case {
    const char *what;
    int op, dt, rdt, fm;
    /* operands: 'x', 'y' (inputs), or 'c' with the constant's bits */
    char a, b, c;
    uint64_t ca, cb, cc;
    char want; /* 'x'/'y': aliased to it, 'k': constant wbits, '-': unchanged */
    uint64_t wbits;
} id_case;

static const id_case ids[] = {
    {"where(true, x, y)", KILN_OP_WHERE, KILN_F32, KILN_F32, 0, 'c', 'x', 'y', 1, 0, 0, 'x', 0},
    {"where(false, x, y)", KILN_OP_WHERE, KILN_F32, KILN_F32, 0, 'c', 'x', 'y', 0, 0, 0, 'y', 0},
    {"where(c, x, x)", KILN_OP_WHERE, KILN_F32, KILN_F32, 0, 'y', 'x', 'x', 0, 0, 0, 'x', 0},
    {"where(c, x, y)", KILN_OP_WHERE, KILN_F32, KILN_F32, 0, 'y', 'x', 'y', 0, 0, 0, '-', 0},
    {"cast f32 -> f32", KILN_OP_CAST, KILN_F32, KILN_F32, 0, 'x', 0, 0, 0, 0, 0, 'x', 0},
    {"cast f32 -> f64", KILN_OP_CAST, KILN_F32, KILN_F64, 0, 'x', 0, 0, 0, 0, 0, '-', 0},
    {"maximum(x, x)", KILN_OP_MAXIMUM, KILN_F32, KILN_F32, 0, 'x', 'x', 0, 0, 0, 0, 'x', 0},
    {"minimum(x, x) i32", KILN_OP_MINIMUM, KILN_I32, KILN_I32, 0, 'x', 'x', 0, 0, 0, 0, 'x', 0},
    {"maximum(x, y)", KILN_OP_MAXIMUM, KILN_F32, KILN_F32, 0, 'x', 'y', 0, 0, 0, 0, '-', 0},
    {"maximum(x, x) f16", KILN_OP_MAXIMUM, KILN_F16, KILN_F16, 0, 'x', 'x', 0, 0, 0, 0, '-', 0},
    {"x + 0 i32", KILN_OP_ADD, KILN_I32, KILN_I32, 0, 'x', 'c', 0, 0, 0, 0, 'x', 0},
    {"0 + x i64", KILN_OP_ADD, KILN_I64, KILN_I64, 0, 'c', 'x', 0, 0, 0, 0, 'x', 0},
    {"x + -0 f32", KILN_OP_ADD, KILN_F32, KILN_F32, 0, 'x', 'c', 0, 0, 0x80000000u, 0, 'x', 0},
    {"-0 + x f64", KILN_OP_ADD, KILN_F64, KILN_F64, 0, 'c', 'x', 0, 0x8000000000000000ull, 0, 0, 'x', 0},
    {"x + +0 f32 (x = -0 would change)", KILN_OP_ADD, KILN_F32, KILN_F32, 0, 'x', 'c', 0, 0, 0, 0, '-', 0},
    {"x + -0 f32 fast_math", KILN_OP_ADD, KILN_F32, KILN_F32, 1, 'x', 'c', 0, 0, 0x80000000u, 0, '-', 0},
    {"x - 0 f32", KILN_OP_SUB, KILN_F32, KILN_F32, 0, 'x', 'c', 0, 0, 0, 0, 'x', 0},
    {"x - 0 i32", KILN_OP_SUB, KILN_I32, KILN_I32, 0, 'x', 'c', 0, 0, 0, 0, 'x', 0},
    {"x - 1 i32", KILN_OP_SUB, KILN_I32, KILN_I32, 0, 'x', 'c', 0, 0, 1, 0, '-', 0},
    {"x * 1 f32", KILN_OP_MUL, KILN_F32, KILN_F32, 0, 'x', 'c', 0, 0, F32_1, 0, 'x', 0},
    {"1 * x i32", KILN_OP_MUL, KILN_I32, KILN_I32, 0, 'c', 'x', 0, 1, 0, 0, 'x', 0},
    {"x * 0 i32", KILN_OP_MUL, KILN_I32, KILN_I32, 0, 'x', 'c', 0, 0, 0, 0, 'k', 0},
    {"0 * x i64", KILN_OP_MUL, KILN_I64, KILN_I64, 0, 'c', 'x', 0, 0, 0, 0, 'k', 0},
    {"x * 0 f32 (NaN, inf, -0)", KILN_OP_MUL, KILN_F32, KILN_F32, 0, 'x', 'c', 0, 0, 0, 0, '-', 0},
    {"x * 1 f32 fast_math", KILN_OP_MUL, KILN_F32, KILN_F32, 1, 'x', 'c', 0, 0, F32_1, 0, '-', 0},
    {"x / 1 f32", KILN_OP_DIV, KILN_F32, KILN_F32, 0, 'x', 'c', 0, 0, F32_1, 0, 'x', 0},
    {"x / 1 f32 fast_math", KILN_OP_DIV, KILN_F32, KILN_F32, 1, 'x', 'c', 0, 0, F32_1, 0, '-', 0},
    {"x and true", KILN_OP_AND, KILN_BOOL, KILN_BOOL, 0, 'x', 'c', 0, 0, 1, 0, 'x', 0},
    {"x and false", KILN_OP_AND, KILN_BOOL, KILN_BOOL, 0, 'x', 'c', 0, 0, 0, 0, 'k', 0},
    {"true and x", KILN_OP_AND, KILN_BOOL, KILN_BOOL, 0, 'c', 'x', 0, 1, 0, 0, 'x', 0},
    {"false and x", KILN_OP_AND, KILN_BOOL, KILN_BOOL, 0, 'c', 'x', 0, 0, 0, 0, 'k', 0},
    {"x and x", KILN_OP_AND, KILN_BOOL, KILN_BOOL, 0, 'x', 'x', 0, 0, 0, 0, 'x', 0},
    {"x and y", KILN_OP_AND, KILN_BOOL, KILN_BOOL, 0, 'x', 'y', 0, 0, 0, 0, '-', 0},
    {"x or false", KILN_OP_OR, KILN_BOOL, KILN_BOOL, 0, 'x', 'c', 0, 0, 0, 0, 'x', 0},
    {"x or true", KILN_OP_OR, KILN_BOOL, KILN_BOOL, 0, 'x', 'c', 0, 0, 1, 0, 'k', 1},
    {"false or x", KILN_OP_OR, KILN_BOOL, KILN_BOOL, 0, 'c', 'x', 0, 0, 0, 0, 'x', 0},
    {"true or x", KILN_OP_OR, KILN_BOOL, KILN_BOOL, 0, 'c', 'x', 0, 1, 0, 0, 'k', 1},
    {"x or x", KILN_OP_OR, KILN_BOOL, KILN_BOOL, 0, 'x', 'x', 0, 0, 0, 0, 'x', 0},
    {"x or y", KILN_OP_OR, KILN_BOOL, KILN_BOOL, 0, 'x', 'y', 0, 0, 0, 0, '-', 0},
    {"exp(x)", KILN_OP_EXP, KILN_F32, KILN_F32, 0, 'x', 0, 0, 0, 0, 0, '-', 0},
};

START_TEST(identity_table)
{
    const id_case *c = &ids[_i];
    fx f;
    fx_init(&f);
    f.ko.fast_math = c->fm;
    f.ko.simplify_off = only(KILN_SP_IDENTITY);
    int32_t x = input(&f, c->op == KILN_OP_WHERE ? c->rdt : c->dt);
    int32_t y = input(&f, c->op == KILN_OP_WHERE ? c->rdt : c->dt);
    const char ops[3] = {c->a, c->b, c->c};
    const uint64_t cv[3] = {c->ca, c->cb, c->cc};
    int32_t arg[3] = {-1, -1, -1};
    for (int k = 0; k < 3; k++) {
        int dt = c->op == KILN_OP_WHERE && k == 0 ? KILN_BOOL : c->dt;
        if (ops[k] == 'x') arg[k] = x;
        else if (ops[k] == 'y') arg[k] = c->op == KILN_OP_WHERE && k == 0 ? input(&f, KILN_BOOL) : y;
        else if (ops[k] == 'c') arg[k] = cnst(&f, dt, cv[k]);
    }
    int32_t n = node(&f, c->op, c->rdt, arg[0], arg[1], arg[2], 0);
    kiln__ir_simplify(&f.w, &f.ko);
    switch (c->want) {
    case 'x':
    case 'y':
        ck_assert_msg(kiln__ir_res(&f.w, n) == (c->want == 'x' ? x : y), "%s: aliased to %d",
                      c->what, kiln__ir_res(&f.w, n));
        break;
    case 'k':
        ck_assert_msg(f.n[n].op == KILN_OP_CONST && f.n[n].bits == c->wbits,
                      "%s: op %d bits %#llx", c->what, f.n[n].op, (unsigned long long)f.n[n].bits);
        break;
    default:
        ck_assert_msg(kiln__ir_res(&f.w, n) == n && f.n[n].op == c->op, "%s: rewritten", c->what);
    }
}
END_TEST

/* neg(neg(x)) and not(not(x)) are x; a single one stays. */
START_TEST(identity_double_negation)
{
    for (int op = 0; op < 2; op++) {
        int o = op ? KILN_OP_NOT : KILN_OP_NEG, dt = op ? KILN_BOOL : KILN_F32;
        fx f;
        fx_init(&f);
        f.ko.simplify_off = only(KILN_SP_IDENTITY);
        int32_t x = input(&f, dt);
        int32_t n1 = node(&f, o, dt, x, -1, -1, 0);
        int32_t n2 = node(&f, o, dt, n1, -1, -1, 0);
        kiln__ir_simplify(&f.w, &f.ko);
        ck_assert_int_eq(kiln__ir_res(&f.w, n2), x);
        ck_assert_int_eq(kiln__ir_res(&f.w, n1), n1);
    }
}
END_TEST

/* ------------------------------------------------------------- strength */

START_TEST(strength_mul_two)
{
    for (int side = 0; side < 2; side++) {
        fx f;
        fx_init(&f);
        f.ko.simplify_off = only(KILN_SP_STRENGTH);
        int32_t x = input(&f, KILN_F64);
        int32_t two = cnst(&f, KILN_F64, 0x4000000000000000ull);
        int32_t m = side ? node(&f, KILN_OP_MUL, KILN_F64, two, x, -1, 0)
                         : node(&f, KILN_OP_MUL, KILN_F64, x, two, -1, 0);
        kiln__ir_simplify(&f.w, &f.ko);
        ck_assert_int_eq(f.n[m].op, KILN_OP_ADD);
        ck_assert_int_eq(f.n[m].args[0], x);
        ck_assert_int_eq(f.n[m].args[1], x);
    }
    /* x*3 stays, and so does an integer x*2 */
    fx f;
    fx_init(&f);
    f.ko.simplify_off = only(KILN_SP_STRENGTH);
    int32_t x = input(&f, KILN_F32);
    int32_t m3 = node(&f, KILN_OP_MUL, KILN_F32, x, cnst(&f, KILN_F32, F32_3), -1, 0);
    int32_t xi = input(&f, KILN_I32);
    int32_t mi = node(&f, KILN_OP_MUL, KILN_I32, xi, cnst(&f, KILN_I32, 2), -1, 0);
    kiln__ir_simplify(&f.w, &f.ko);
    ck_assert_int_eq(f.n[m3].op, KILN_OP_MUL);
    ck_assert_int_eq(f.n[mi].op, KILN_OP_MUL);
}
END_TEST

typedef struct div_case {
    int dt;
    uint64_t d;
    int rewrites;
    uint64_t recip;
} div_case;

static const div_case divs[] = {
    {KILN_F32, 0x40800000u, 1, 0x3e800000u},             /* x/4 -> x*0.25 */
    {KILN_F32, 0xc0000000u, 1, 0xbf000000u},             /* x/-2 -> x*-0.5 */
    {KILN_F64, 0x3fe0000000000000ull, 1, 0x4000000000000000ull}, /* x/0.5 -> x*2 */
    {KILN_F32, F32_3, 0, 0},                             /* not a power of two */
    {KILN_F32, 0, 0, 0},                                 /* x/0 */
    {KILN_F32, 0x7f800000u, 0, 0},                       /* x/inf */
    {KILN_F32, F32_NAN, 0, 0},                           /* x/NaN */
    {KILN_F32, 0x7f000000u, 0, 0},                       /* 2^127: 2^-127 is subnormal */
    {KILN_F32, 0x00400000u, 0, 0},                       /* 2^-127 itself subnormal */
    {KILN_F64, 0x7fe0000000000000ull, 0, 0},             /* 2^1023 */
};

START_TEST(strength_div_table)
{
    const div_case *c = &divs[_i];
    fx f;
    fx_init(&f);
    f.ko.simplify_off = only(KILN_SP_STRENGTH);
    int32_t x = input(&f, c->dt);
    int32_t d = cnst(&f, c->dt, c->d);
    int32_t q = node(&f, KILN_OP_DIV, c->dt, x, d, -1, 0);
    uint32_t nn = f.w.nn;
    kiln__ir_simplify(&f.w, &f.ko);
    if (c->rewrites) {
        ck_assert_int_eq(f.n[q].op, KILN_OP_MUL);
        ck_assert_uint_eq(f.w.nn, nn + 1);
        int32_t k = f.n[q].args[1];
        ck_assert_int_eq(k, (int32_t)nn);
        ck_assert_int_eq(f.n[k].op, KILN_OP_CONST);
        ck_assert_uint_eq(f.n[k].bits, c->recip);
        ck_assert_int_eq(f.alias[k], k);
    } else {
        ck_assert_msg(f.n[q].op == KILN_OP_DIV, "case %d rewritten", _i);
        ck_assert_uint_eq(f.w.nn, nn);
    }
}
END_TEST

/* No room for the new constant: the division stays. */
START_TEST(strength_div_no_room)
{
    fx f;
    fx_init(&f);
    f.ko.simplify_off = only(KILN_SP_STRENGTH);
    int32_t x = input(&f, KILN_F32);
    int32_t q = node(&f, KILN_OP_DIV, KILN_F32, x, cnst(&f, KILN_F32, 0x40800000u), -1, 0);
    f.w.cap = f.w.nn;
    kiln__ir_simplify(&f.w, &f.ko);
    ck_assert_int_eq(f.n[q].op, KILN_OP_DIV);
    ck_assert_uint_eq(f.w.nn, 3);
}
END_TEST

/* ------------------------------------------------------------------ cse */

START_TEST(cse_shares_equal_nodes)
{
    fx f;
    fx_init(&f);
    f.ko.simplify_off = only(KILN_SP_CSE);
    int32_t x = input(&f, KILN_F32), y = input(&f, KILN_F32);
    int32_t a1 = node(&f, KILN_OP_ADD, KILN_F32, x, y, -1, 0);
    int32_t a2 = node(&f, KILN_OP_ADD, KILN_F32, x, y, -1, 0);
    int32_t s = node(&f, KILN_OP_SUB, KILN_F32, x, y, -1, 0);
    int32_t k1 = cnst(&f, KILN_F32, F32_1);
    /* uses of a2 are rewritten to a1, so these two are equal too */
    int32_t m1 = node(&f, KILN_OP_MUL, KILN_F32, a1, k1, -1, 0);
    int32_t m2 = node(&f, KILN_OP_MUL, KILN_F32, a2, k1, -1, 0);
    int32_t m3 = node(&f, KILN_OP_MUL, KILN_F32, a2, y, -1, 0);
    kiln__ir_simplify(&f.w, &f.ko);
    ck_assert_int_eq(kiln__ir_res(&f.w, a2), a1);
    ck_assert_int_eq(kiln__ir_res(&f.w, s), s);
    ck_assert_int_eq(kiln__ir_res(&f.w, m2), m1);
    ck_assert_int_eq(f.n[m2].args[0], a1);
    ck_assert_int_eq(kiln__ir_res(&f.w, m3), m3);
    /* two inputs are never equal (their io differs) */
    ck_assert_int_eq(kiln__ir_res(&f.w, y), y);
    ck_assert_int_eq(kiln__ir_res(&f.w, -1), -1);
}
END_TEST

/* Every pass off: nothing changes, not even an obvious fold. */
START_TEST(all_passes_off)
{
    fx f;
    fx_init(&f);
    f.ko.simplify_off = ((uint64_t)1 << KILN_SP_COUNT) - 1u;
    int32_t a = cnst(&f, KILN_I32, 2), b = cnst(&f, KILN_I32, 2);
    int32_t m = node(&f, KILN_OP_MUL, KILN_I32, a, b, -1, 0);
    int32_t m2 = node(&f, KILN_OP_MUL, KILN_I32, a, b, -1, 0);
    kiln_ir_node before[CAP];
    memcpy(before, f.n, sizeof before);
    kiln__ir_simplify(&f.w, &f.ko);
    ck_assert_int_eq(memcmp(before, f.n, sizeof before), 0);
    ck_assert_int_eq(kiln__ir_res(&f.w, m2), m2);
    ck_assert_int_eq(kiln__ir_res(&f.w, b), b);
    ck_assert_int_eq(f.n[m].op, KILN_OP_MUL);
}
END_TEST

/* ----------------------------------------------------------- the helpers */

START_TEST(canon_and_text)
{
    ck_assert_uint_eq(kiln__ir_canon(KILN_BOOL, 5), 1);
    ck_assert_uint_eq(kiln__ir_canon(KILN_BOOL, 0), 0);
    ck_assert_uint_eq(kiln__ir_canon(KILN_I32, 0x1ffffffffull), 0xffffffffu);
    ck_assert_uint_eq(kiln__ir_canon(KILN_F32, 0xaa3f800000ull), 0x3f800000u);
    ck_assert_uint_eq(kiln__ir_canon(KILN_F16, 0x12345), 0x2345);
    ck_assert_uint_eq(kiln__ir_canon(KILN_BF16, 0xf3f80), 0x3f80);
    ck_assert_uint_eq(kiln__ir_canon(KILN_I64, 0xffffffffffffffffull), 0xffffffffffffffffull);

    char buf[64];
    kiln__ir_simplify_text(0, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    kiln__ir_simplify_text(((uint64_t)1 << KILN_SP_COUNT) - 1u, buf, sizeof buf);
    ck_assert_str_eq(buf, "all");
    kiln__ir_simplify_text(((uint64_t)1 << KILN_SP_FOLD) | ((uint64_t)1 << KILN_SP_STRENGTH),
                           buf, sizeof buf);
    ck_assert_str_eq(buf, "fold,strength");
    kiln__ir_simplify_text((uint64_t)1 << KILN_SP_INDEX, buf, sizeof buf);
    ck_assert_str_eq(buf, "index");
    /* cut to cap bytes (with the NUL) */
    kiln__ir_simplify_text(((uint64_t)1 << KILN_SP_FOLD) | ((uint64_t)1 << KILN_SP_STRENGTH),
                           buf, 8);
    ck_assert_str_eq(buf, "fold,st");
    buf[0] = 'z';
    kiln__ir_simplify_text(1, buf, 0);
    ck_assert_int_eq(buf[0], 'z');
}
END_TEST

Suite *ir_simplify_suite(void)
{
    Suite *s = suite_create("ir_simplify");
    TCase *tc = tcase_create("passes");
    tcase_add_loop_test(tc, fold_table, 0, (int)(sizeof folds / sizeof folds[0]));
    tcase_add_test(tc, fold_needs_constants);
    tcase_add_test(tc, fold_chains);
    tcase_add_loop_test(tc, identity_table, 0, (int)(sizeof ids / sizeof ids[0]));
    tcase_add_test(tc, identity_double_negation);
    tcase_add_test(tc, strength_mul_two);
    tcase_add_loop_test(tc, strength_div_table, 0, (int)(sizeof divs / sizeof divs[0]));
    tcase_add_test(tc, strength_div_no_room);
    tcase_add_test(tc, cse_shares_equal_nodes);
    tcase_add_test(tc, all_passes_off);
    tcase_add_test(tc, canon_and_text);
    suite_add_tcase(s, tc);
    return s;
}
