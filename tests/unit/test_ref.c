/*
** test_ref.c -- the ref backend (runtime/backends/ref.c) driven directly
** through its kiln_backend table with hand-built segments, and the cast
** rules of runtime/numeric.c.
**
** Expected values are computed independently of the code under test:
** hard-coded IEEE bit patterns, integer arithmetic, or long double
** arithmetic where that is provably a single correct rounding (x86-64 long
** double has a 64-bit significand >= 2*24+2, so an f32 +,-,*,/,sqrt done in
** long double and then rounded to float is correctly rounded: double
** rounding is innocuous).  numeric.c is never used to compute the value it
** is being tested for.
*/
#include <check.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "numeric.h"
#include "../../conformance/conform.h"

/* ------------------------------------------------------------ harness */

typedef struct tseg {
    kiln_ir_node n[48];
    uint32_t nn;
    int32_t outs[8];
    uint32_t no;
    uint32_t ni;
    uint32_t kind;
} tseg;

static void tseg_init(tseg *s, uint32_t kind)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
}

static int32_t t_node(tseg *s, int op, int dt, int32_t a, int32_t b, int32_t c)
{
    kiln_ir_node *n = &s->n[s->nn];
    memset(n, 0, sizeof *n);
    n->op = (uint16_t)op;
    n->dtype = (uint8_t)dt;
    n->args[0] = a;
    n->args[1] = b;
    n->args[2] = c;
    n->io = -1;
    return (int32_t)s->nn++;
}

static int32_t t_in(tseg *s, int dt)
{
    int32_t i = t_node(s, KILN_OP_INPUT, dt, -1, -1, -1);
    s->n[i].io = (int32_t)s->ni++;
    return i;
}

static int32_t t_const(tseg *s, int dt, uint64_t bits)
{
    int32_t i = t_node(s, KILN_OP_CONST, dt, -1, -1, -1);
    s->n[i].bits = bits;
    return i;
}

static int32_t t_op1(tseg *s, int op, int dt, int32_t a)
{
    return t_node(s, op, dt, a, -1, -1);
}

static int32_t t_op2(tseg *s, int op, int dt, int32_t a, int32_t b)
{
    return t_node(s, op, dt, a, b, -1);
}

static int32_t t_red(tseg *s, int op, int dt, int32_t a, uint32_t axes)
{
    int32_t i = t_node(s, op, dt, a, -1, -1);
    s->n[i].axes = axes;
    s->n[i].bcast = axes;
    s->n[i].flags = KILN_IR_KEEPDIM;
    return i;
}

static void t_out(tseg *s, int32_t v) { s->outs[s->no++] = v; }

static kiln_ir_segment t_seg(const tseg *s)
{
    kiln_ir_segment g;
    memset(&g, 0, sizeof g);
    g.struct_size = sizeof g;
    g.kind = s->kind;
    g.nodes = s->n;
    g.n_nodes = s->nn;
    g.n_inputs = s->ni;
    g.outputs = s->outs;
    g.n_outputs = s->no;
    return g;
}

/* A view: contiguous when strides is NULL. */
static kiln_ir_tensor tv(void *data, int dt, int rank, const int64_t *sizes,
                         const int64_t *strides)
{
    kiln_ir_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = (uint32_t)dt;
    t.rank = rank;
    int64_t m = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t.sizes[i] = sizes[i];
        t.strides[i] = strides ? strides[i] : m;
        m *= sizes[i];
    }
    return t;
}

static kiln_kernel_options default_ko(void)
{
    kiln_kernel_options ko;
    memset(&ko, 0, sizeof ko);
    ko.struct_size = sizeof ko;
    ko.contract = 1;
    ko.sass = 1;
    ko.canonical = "";
    return ko;
}

static char g_err[512];

/* Compile + launch a segment on backend b over domain (rank, dom). */
static kiln_status run_on(const kiln_backend *b, const tseg *s, int rank,
                          const int64_t *dom, int64_t k, kiln_ir_tensor *ins,
                          kiln_ir_tensor *outs)
{
    void *state = NULL;
    kiln_status st = b->open(0, &state, g_err, sizeof g_err);
    if (st != KILN_OK)
        return st;
    kiln_ir_segment seg = t_seg(s);
    kiln_kernel_options ko = default_ko();
    kiln_kernel_out ko_out;
    memset(&ko_out, 0, sizeof ko_out);
    g_err[0] = '\0';
    st = b->compile(state, &seg, &ko, &ko_out, g_err, sizeof g_err);
    if (st == KILN_OK) {
        kiln_launch L;
        memset(&L, 0, sizeof L);
        L.struct_size = sizeof L;
        L.rank = rank;
        for (int i = 0; i < rank; i++)
            L.domain[i] = dom[i];
        L.k = k;
        L.inputs = ins;
        L.n_inputs = s->ni;
        L.outputs = outs;
        L.n_outputs = s->no;
        st = b->launch(state, ko_out.handle, &L, g_err, sizeof g_err);
        b->release(state, ko_out.handle);
    }
    b->close(state);
    return st;
}

static kiln_status run(const tseg *s, int rank, const int64_t *dom,
                       kiln_ir_tensor *ins, kiln_ir_tensor *outs)
{
    return run_on(kiln__backend_ref(), s, rank, dom, 0, ins, outs);
}

static uint32_t fbits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}
static float bitsf(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static uint64_t dbits(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}
static double bitsd(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* Bitwise equality where any NaN matches any NaN. */
static int same_f32(float a, float b)
{
    if (a != a || b != b)
        return a != a && b != b;
    return fbits(a) == fbits(b);
}
static int same_f64(double a, double b)
{
    if (a != a || b != b)
        return a != a && b != b;
    return dbits(a) == dbits(b);
}

/* Independent ULP distance for f32 (ordered-integer mapping). */
static int64_t ulp32(float a, float b)
{
    if (a != a || b != b)
        return (a != a && b != b) ? 0 : INT64_MAX;
    int64_t ia = (int64_t)(fbits(a) & 0x7fffffffu), ib = (int64_t)(fbits(b) & 0x7fffffffu);
    if (fbits(a) >> 31) ia = -ia;
    if (fbits(b) >> 31) ib = -ib;
    return ia > ib ? ia - ib : ib - ia;
}
static int64_t ulp64(double a, double b)
{
    if (a != a || b != b)
        return (a != a && b != b) ? 0 : INT64_MAX;
    uint64_t ua = dbits(a), ub = dbits(b);
    __int128 ia = (__int128)(ua & 0x7fffffffffffffffull), ib = (__int128)(ub & 0x7fffffffffffffffull);
    if (ua >> 63) ia = -ia;
    if (ub >> 63) ib = -ib;
    __int128 d = ia > ib ? ia - ib : ib - ia;
    return d > INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* Special f32 values used across tests. */
static const uint32_t f32_specials[] = {
    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000,
    0x7fc00000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff,
    0xff7fffff, 0x3fc00000, 0x40490fdb, 0xc0a00000, 0x3eaaaaab, 0x4b800001,
    0x33800000, 0x3f7fffff, 0x41200000, 0xc2c80000, 0x3a83126f, 0x5f000000,
};
#define N_SPEC (sizeof f32_specials / sizeof f32_specials[0])

/* ----------------------------------------------- f32 binary, bit-exact */

/* Run one binary f32 op over all pairs of specials, contiguous [n,n]
** domain with the lhs broadcast along axis 1 and rhs along axis 0. */
static void run_bin_f32(int op, float *out)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t a = t_in(&s, KILN_F32), b = t_in(&s, KILN_F32);
    t_out(&s, t_op2(&s, op, KILN_F32, a, b));
    float va[N_SPEC], vb[N_SPEC];
    for (size_t i = 0; i < N_SPEC; i++)
        va[i] = vb[i] = bitsf(f32_specials[i]);
    int64_t dom[2] = {N_SPEC, N_SPEC};
    int64_t sa[2] = {N_SPEC, 1}, sb[2] = {1, N_SPEC};
    int64_t za[2] = {1, 0}, zb[2] = {0, 1};
    kiln_ir_tensor ins[2] = {tv(va, KILN_F32, 2, sa, za), tv(vb, KILN_F32, 2, sb, zb)};
    kiln_ir_tensor outs[1] = {tv(out, KILN_F32, 2, dom, NULL)};
    ck_assert_msg(run(&s, 2, dom, ins, outs) == KILN_OK, "%s", g_err);
}

START_TEST(f32_arith_bit_exact)
{
    static const int ops[] = {KILN_OP_ADD, KILN_OP_SUB, KILN_OP_MUL, KILN_OP_DIV};
    static float out[N_SPEC * N_SPEC];
    for (size_t o = 0; o < 4; o++) {
        run_bin_f32(ops[o], out);
        for (size_t i = 0; i < N_SPEC; i++)
            for (size_t j = 0; j < N_SPEC; j++) {
                long double x = bitsf(f32_specials[i]), y = bitsf(f32_specials[j]);
                long double e = ops[o] == KILN_OP_ADD ? x + y
                                : ops[o] == KILN_OP_SUB ? x - y
                                : ops[o] == KILN_OP_MUL ? x * y
                                                        : x / y;
                float want = (float)e;
                float got = out[i * N_SPEC + j];
                ck_assert_msg(same_f32(got, want),
                              "%s(0x%08x, 0x%08x) = 0x%08x, want 0x%08x",
                              kiln_op_name((kiln_op)ops[o]), f32_specials[i],
                              f32_specials[j], fbits(got), fbits(want));
            }
    }
}
END_TEST

START_TEST(f32_max_min_nan)
{
    static float mx[N_SPEC * N_SPEC], mn[N_SPEC * N_SPEC];
    run_bin_f32(KILN_OP_MAXIMUM, mx);
    run_bin_f32(KILN_OP_MINIMUM, mn);
    for (size_t i = 0; i < N_SPEC; i++)
        for (size_t j = 0; j < N_SPEC; j++) {
            float x = bitsf(f32_specials[i]), y = bitsf(f32_specials[j]);
            float gx = mx[i * N_SPEC + j], gn = mn[i * N_SPEC + j];
            if (x != x || y != y) {
                ck_assert(gx != gx);
                ck_assert(gn != gn);
            } else if (x == 0 && y == 0) {
                ck_assert(gx == 0 && gn == 0); /* either sign acceptable */
            } else {
                ck_assert(same_f32(gx, x > y ? x : y));
                ck_assert(same_f32(gn, x < y ? x : y));
            }
        }
}
END_TEST

/* ------------------------------------------------------ f64 arithmetic */

static double run_f64_bin(int op, double a, double b)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_F64), y = t_in(&s, KILN_F64);
    t_out(&s, t_op2(&s, op, KILN_F64, x, y));
    double out = -12345.0;
    kiln_ir_tensor ins[2] = {tv(&a, KILN_F64, 0, NULL, NULL),
                             tv(&b, KILN_F64, 0, NULL, NULL)};
    kiln_ir_tensor outs[1] = {tv(&out, KILN_F64, 0, NULL, NULL)};
    ck_assert_msg(run(&s, 0, NULL, ins, outs) == KILN_OK, "%s", g_err);
    return out;
}

START_TEST(f64_arith_known)
{
    /* 0.1 + 0.2 = 0x3fd3333333333334 (the famous 0.30000000000000004) */
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_ADD, 0.1, 0.2)), 0x3fd3333333333334ull);
    /* 1 + 2^-53 ties to even: 1.0; 1 + 3*2^-53 -> 1 + 2^-51 */
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_ADD, 1.0, 0x1p-53)), 0x3ff0000000000000ull);
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_ADD, 1.0, 0x1.8p-52)), 0x3ff0000000000002ull);
    /* 1/3 = 0x3fd5555555555555; 2/3 = 0x3fe5555555555555 */
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_DIV, 1.0, 3.0)), 0x3fd5555555555555ull);
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_DIV, 2.0, 3.0)), 0x3fe5555555555555ull);
    /* (1+2^-52)^2 = 1 + 2^-51 + 2^-104 -> 1 + 2^-51 */
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_MUL, 0x1.0000000000001p0, 0x1.0000000000001p0)),
                      0x3ff0000000000002ull);
    /* subnormal: min_subnormal / 2 ties to 0; 3*min/2 -> 2*min */
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_MUL, 0x1p-1074, 0.5)), 0);
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_MUL, 0x1p-1073, 0.75)), 2);
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_SUB, 0.0, 0.0)), 0);
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_SUB, -0.0, 0.0)), 0x8000000000000000ull);
    ck_assert(isinf(run_f64_bin(KILN_OP_MUL, DBL_MAX, 2.0)));
    ck_assert(isnan(run_f64_bin(KILN_OP_SUB, INFINITY, INFINITY)));
    ck_assert(isnan(run_f64_bin(KILN_OP_DIV, 0.0, 0.0)));
    ck_assert_uint_eq(dbits(run_f64_bin(KILN_OP_DIV, -1.0, 0.0)), 0xfff0000000000000ull);
    ck_assert(isnan(run_f64_bin(KILN_OP_MAXIMUM, NAN, 1.0)));
    ck_assert(isnan(run_f64_bin(KILN_OP_MAXIMUM, 1.0, NAN)));
    ck_assert(isnan(run_f64_bin(KILN_OP_MINIMUM, -INFINITY, NAN)));
    ck_assert(run_f64_bin(KILN_OP_MAXIMUM, -INFINITY, 3.0) == 3.0);
    ck_assert(run_f64_bin(KILN_OP_MINIMUM, -INFINITY, 3.0) == -INFINITY);
    ck_assert(run_f64_bin(KILN_OP_POW, 2.0, 10.0) == 1024.0);
    ck_assert(run_f64_bin(KILN_OP_POW, NAN, 0.0) == 1.0);
    ck_assert(run_f64_bin(KILN_OP_POW, 1.0, NAN) == 1.0);
    ck_assert(isnan(run_f64_bin(KILN_OP_POW, -8.0, 1.0 / 3.0)));
    ck_assert(run_f64_bin(KILN_OP_POW, 0.0, -1.0) == INFINITY);
}
END_TEST

/* ----------------------------------------------------- FMA vs separate */

START_TEST(fma_vs_separate_rounding)
{
    /* f32: a = b = 1 + 2^-12, c = -(1 + 2^-11).  a*b = 1 + 2^-11 + 2^-24
    ** exactly; rounded to f32 that is a tie that goes to even (1 + 2^-11),
    ** so mul-then-add gives 0 while fma gives 2^-24 (0x33800000). */
    float a = bitsf(0x3f800800), c = bitsf(0xbf801000);
    for (int fused = 0; fused < 2; fused++) {
        tseg s;
        tseg_init(&s, KILN_SEGK_POINTWISE);
        int32_t x = t_in(&s, KILN_F32), y = t_in(&s, KILN_F32), z = t_in(&s, KILN_F32);
        if (fused) {
            t_out(&s, t_node(&s, KILN_OP_FMA, KILN_F32, x, y, z));
        } else {
            int32_t m = t_op2(&s, KILN_OP_MUL, KILN_F32, x, y);
            t_out(&s, t_op2(&s, KILN_OP_ADD, KILN_F32, m, z));
        }
        float out = 99.0f;
        kiln_ir_tensor ins[3] = {tv(&a, KILN_F32, 0, NULL, NULL),
                                 tv(&a, KILN_F32, 0, NULL, NULL),
                                 tv(&c, KILN_F32, 0, NULL, NULL)};
        kiln_ir_tensor outs[1] = {tv(&out, KILN_F32, 0, NULL, NULL)};
        ck_assert_int_eq(run(&s, 0, NULL, ins, outs), KILN_OK);
        ck_assert_uint_eq(fbits(out), fused ? 0x33800000u : 0u);
    }
    /* f64: a = b = 1 + 2^-27, c = -(1 + 2^-26): product 1 + 2^-26 + 2^-54
    ** rounds to 1 + 2^-26; fma keeps 2^-54 = 0x3c90000000000000. */
    double da = 0x1.0000002p0, dc = -0x1.0000004p0;
    for (int fused = 0; fused < 2; fused++) {
        tseg s;
        tseg_init(&s, KILN_SEGK_POINTWISE);
        int32_t x = t_in(&s, KILN_F64), z = t_in(&s, KILN_F64);
        if (fused) {
            t_out(&s, t_node(&s, KILN_OP_FMA, KILN_F64, x, x, z));
        } else {
            int32_t m = t_op2(&s, KILN_OP_MUL, KILN_F64, x, x);
            t_out(&s, t_op2(&s, KILN_OP_ADD, KILN_F64, z, m));
        }
        double out = 99.0;
        kiln_ir_tensor ins[2] = {tv(&da, KILN_F64, 0, NULL, NULL),
                                 tv(&dc, KILN_F64, 0, NULL, NULL)};
        kiln_ir_tensor outs[1] = {tv(&out, KILN_F64, 0, NULL, NULL)};
        ck_assert_int_eq(run(&s, 0, NULL, ins, outs), KILN_OK);
        ck_assert_uint_eq(dbits(out), fused ? 0x3c90000000000000ull : 0ull);
    }
}
END_TEST

/* ------------------------------------------------------- f32 unary ops */

static void run_un(int op, int dt, const void *in, void *out, int64_t n)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, dt);
    t_out(&s, t_op1(&s, op, dt, x));
    int64_t dom[1] = {n};
    kiln_ir_tensor ins[1] = {tv((void *)in, dt, 1, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(out, dt, 1, dom, NULL)};
    ck_assert_msg(run(&s, 1, dom, ins, outs) == KILN_OK, "%s", g_err);
}

START_TEST(f32_unary_exact_ops)
{
    float in[N_SPEC], out[N_SPEC];
    for (size_t i = 0; i < N_SPEC; i++)
        in[i] = bitsf(f32_specials[i]);
    static const int ops[] = {KILN_OP_NEG, KILN_OP_ABS, KILN_OP_SQRT,
                              KILN_OP_RECIPROCAL, KILN_OP_FLOOR, KILN_OP_CEIL,
                              KILN_OP_RELU};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        run_un(ops[o], KILN_F32, in, out, N_SPEC);
        for (size_t i = 0; i < N_SPEC; i++) {
            float x = in[i];
            uint32_t xb = f32_specials[i];
            float want;
            switch (ops[o]) {
            case KILN_OP_NEG: want = bitsf(xb ^ 0x80000000u); break;
            case KILN_OP_ABS: want = bitsf(xb & 0x7fffffffu); break;
            case KILN_OP_SQRT: want = (float)sqrtl((long double)x); break;
            case KILN_OP_RECIPROCAL: want = (float)(1.0L / (long double)x); break;
            case KILN_OP_FLOOR: want = (float)floorl((long double)x); break;
            case KILN_OP_CEIL: want = (float)ceill((long double)x); break;
            default: want = x != x ? x : x > 0 ? x : 0.0f; break;
            }
            if (ops[o] == KILN_OP_RELU && x == 0) {
                ck_assert(out[i] == 0); /* relu(-0) = +-0 acceptable */
                continue;
            }
            ck_assert_msg(same_f32(out[i], want), "%s(0x%08x) = 0x%08x, want 0x%08x",
                          kiln_op_name((kiln_op)ops[o]), xb, fbits(out[i]),
                          fbits(want));
        }
    }
}
END_TEST

static long double sigmoidl(long double x) { return 1.0L / (1.0L + expl(-x)); }

START_TEST(f32_transcendentals_within_bound)
{
    /* A sweep of inputs; expected = long double libm rounded to f32. */
    enum { N = 600 };
    static float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)((i - N / 2) * 0.0371) + (float)i * 1e-5f;
    in[0] = 0.0f;
    in[1] = -0.0f;
    in[2] = INFINITY;
    in[3] = -INFINITY;
    in[4] = NAN;
    in[5] = bitsf(0x00000001);
    in[6] = 88.7f;
    in[7] = -103.9f;
    static const struct {
        int op;
        long double (*f)(long double);
        int64_t bound;
    } t[] = {
        {KILN_OP_EXP, expl, 1},   {KILN_OP_LOG, logl, 1},
        {KILN_OP_SIN, sinl, 1},   {KILN_OP_COS, cosl, 1},
        {KILN_OP_TANH, tanhl, 1}, {KILN_OP_ERF, erfl, 1},
        {KILN_OP_SIGMOID, sigmoidl, 1},
    };
    for (size_t o = 0; o < sizeof t / sizeof t[0]; o++) {
        run_un(t[o].op, KILN_F32, in, out, N);
        for (int i = 0; i < N; i++) {
            float want = (float)t[o].f((long double)in[i]);
            ck_assert_msg(ulp32(out[i], want) <= t[o].bound,
                          "%s(%a) = %a, want %a", kiln_op_name((kiln_op)t[o].op),
                          (double)in[i], (double)out[i], (double)want);
        }
    }
    /* rsqrt: 1/sqrt in long double */
    run_un(KILN_OP_RSQRT, KILN_F32, in, out, N);
    for (int i = 0; i < N; i++) {
        float want = (float)(1.0L / sqrtl((long double)in[i]));
        ck_assert_msg(ulp32(out[i], want) <= 1, "rsqrt(%a)", (double)in[i]);
    }
    /* exact anchors */
    float a[8] = {0.0f, 1.0f, 4.0f, -0.0f, -1.0f, INFINITY, 0.25f, NAN};
    float r[8];
    run_un(KILN_OP_RSQRT, KILN_F32, a, r, 8);
    ck_assert(r[0] == INFINITY && r[1] == 1.0f && r[2] == 0.5f);
    ck_assert(r[3] == -INFINITY && isnan(r[4]) && r[5] == 0.0f && r[6] == 2.0f);
    ck_assert(isnan(r[7]));
    run_un(KILN_OP_LOG, KILN_F32, a, r, 8);
    ck_assert(r[0] == -INFINITY && r[1] == 0.0f && isnan(r[4]) && r[5] == INFINITY);
    run_un(KILN_OP_EXP, KILN_F32, a, r, 8);
    ck_assert(r[0] == 1.0f && r[3] == 1.0f && r[5] == INFINITY);
    run_un(KILN_OP_TANH, KILN_F32, a, r, 8);
    ck_assert(r[5] == 1.0f && fbits(r[3]) == 0x80000000u);
    run_un(KILN_OP_SIGMOID, KILN_F32, a, r, 8);
    ck_assert(r[0] == 0.5f && r[5] == 1.0f && isnan(r[7]));
}
END_TEST

START_TEST(f64_unary_ops)
{
    enum { N = 400 };
    static double in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (i - N / 2) * 0.0573 + i * 1e-9;
    in[0] = 0.0;
    in[1] = -0.0;
    in[2] = INFINITY;
    in[3] = -INFINITY;
    in[4] = NAN;
    in[5] = 0x1p-1074;
    /* exact ops vs hard facts */
    run_un(KILN_OP_SQRT, KILN_F64, in, out, N);
    ck_assert(out[0] == 0 && dbits(out[1]) == 0x8000000000000000ull);
    ck_assert(out[2] == INFINITY && isnan(out[3]) && isnan(out[4]));
    ck_assert_uint_eq(dbits(out[5]), 0x1e60000000000000ull); /* 2^-537 */
    double two = 2.0, r2;
    run_un(KILN_OP_SQRT, KILN_F64, &two, &r2, 1);
    ck_assert_uint_eq(dbits(r2), 0x3ff6a09e667f3bcdull); /* sqrt(2) */
    double three = 3.0;
    run_un(KILN_OP_RECIPROCAL, KILN_F64, &three, &r2, 1);
    ck_assert_uint_eq(dbits(r2), 0x3fd5555555555555ull);
    /* transcendentals: within 1 ulp of long double libm */
    static const struct {
        int op;
        long double (*f)(long double);
    } t[] = {{KILN_OP_EXP, expl},   {KILN_OP_LOG, logl},
             {KILN_OP_SIN, sinl},   {KILN_OP_COS, cosl},
             {KILN_OP_TANH, tanhl}, {KILN_OP_ERF, erfl},
             {KILN_OP_SIGMOID, sigmoidl}};
    for (size_t o = 0; o < sizeof t / sizeof t[0]; o++) {
        run_un(t[o].op, KILN_F64, in, out, N);
        for (int i = 0; i < N; i++) {
            double want = (double)t[o].f((long double)in[i]);
            ck_assert_msg(ulp64(out[i], want) <= 1, "%s(%a) = %a want %a",
                          kiln_op_name((kiln_op)t[o].op), in[i], out[i], want);
        }
    }
    /* rsqrt f64 is correctly rounded, near-ties included (expected values
    ** are the correctly rounded results, e.g. from mpmath) */
    static const uint64_t rs_in[] = {
        0x000fffffffffffffull, /* largest subnormal: just above a tie */
        0x7fefffffffffffffull, 0x3fe0000000000000ull, 0x4008000000000000ull,
        0x4000000000000000ull, 0x4010000000000000ull, 0x0000000000000001ull,
        0x000012688b70e62bull, 0x46293e5939a08ceaull, 0x3fb999999999999aull,
        0x7ff0000000000000ull, 0x0000000000000000ull, 0x8000000000000000ull,
        0xbff0000000000000ull};
    static const uint64_t rs_want[] = {
        0x5fe0000000000001ull, 0x1ff0000000000000ull, 0x3ff6a09e667f3bcdull,
        0x3fe279a74590331cull, 0x3fe6a09e667f3bcdull, 0x3fe0000000000000ull,
        0x6180000000000000ull, 0x601dd55745cbb7faull, 0x3cd203af9ee75616ull,
        0x40094c583ada5b52ull, 0x0000000000000000ull, 0x7ff0000000000000ull,
        0xfff0000000000000ull, 0x7ff8000000000000ull};
    enum { NRS = sizeof rs_in / sizeof rs_in[0] };
    double rsx[NRS], rsy[NRS];
    memcpy(rsx, rs_in, sizeof rsx);
    run_un(KILN_OP_RSQRT, KILN_F64, rsx, rsy, NRS);
    for (int i = 0; i < NRS; i++)
        ck_assert_msg(same_f64(rsy[i], bitsd(rs_want[i])), "rsqrt(%a) = %a", rsx[i], rsy[i]);
    run_un(KILN_OP_RSQRT, KILN_F64, in, out, N);
    for (int i = 0; i < N; i++)
        ck_assert(ulp64(out[i], (double)(1.0L / sqrtl((long double)in[i]))) <= 1);
    double one = 1.0;
    run_un(KILN_OP_EXP, KILN_F64, &one, &r2, 1);
    ck_assert_uint_eq(dbits(r2), 0x4005bf0a8b145769ull); /* e */
    run_un(KILN_OP_FLOOR, KILN_F64, in, out, N);
    for (int i = 6; i < N; i++)
        ck_assert(out[i] == floor(in[i]));
    double h = -2.5, f;
    run_un(KILN_OP_CEIL, KILN_F64, &h, &f, 1);
    ck_assert(f == -2.0);
    run_un(KILN_OP_RELU, KILN_F64, in, out, N);
    ck_assert(isnan(out[4]) && out[3] == 0 && out[2] == INFINITY);
    run_un(KILN_OP_NEG, KILN_F64, in, out, N);
    ck_assert_uint_eq(dbits(out[0]), 0x8000000000000000ull);
    run_un(KILN_OP_ABS, KILN_F64, in, out, N);
    ck_assert_uint_eq(dbits(out[1]), 0);
    ck_assert(out[3] == INFINITY);
}
END_TEST

/* ------------------------------------------------------ integer ops */

START_TEST(int_ops_wrap)
{
    int32_t a[6] = {INT32_MAX, INT32_MIN, -7, 0, 5, -1};
    int32_t b[6] = {1, -1, 3, INT32_MIN, -5, INT32_MAX};
    int32_t y[6];
    static const int ops[] = {KILN_OP_ADD, KILN_OP_SUB, KILN_OP_MUL,
                              KILN_OP_MAXIMUM, KILN_OP_MINIMUM};
    for (size_t o = 0; o < 5; o++) {
        tseg s;
        tseg_init(&s, KILN_SEGK_POINTWISE);
        int32_t x = t_in(&s, KILN_I32), z = t_in(&s, KILN_I32);
        t_out(&s, t_op2(&s, ops[o], KILN_I32, x, z));
        int64_t dom[1] = {6};
        kiln_ir_tensor ins[2] = {tv(a, KILN_I32, 1, dom, NULL), tv(b, KILN_I32, 1, dom, NULL)};
        kiln_ir_tensor outs[1] = {tv(y, KILN_I32, 1, dom, NULL)};
        ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
        for (int i = 0; i < 6; i++) {
            int64_t p = a[i], q = b[i], e;
            switch (ops[o]) {
            case KILN_OP_ADD: e = p + q; break;
            case KILN_OP_SUB: e = p - q; break;
            case KILN_OP_MUL: e = p * q; break;
            case KILN_OP_MAXIMUM: e = p > q ? p : q; break;
            default: e = p < q ? p : q; break;
            }
            /* two's complement wrap to 32 bits, by integer arithmetic */
            int64_t w = ((e % 4294967296LL) + 4294967296LL) % 4294967296LL;
            if (w >= 2147483648LL)
                w -= 4294967296LL;
            ck_assert_int_eq(y[i], w);
        }
    }
    int32_t un[6];
    run_un(KILN_OP_NEG, KILN_I32, a, un, 6);
    ck_assert_int_eq(un[0], -INT32_MAX);
    ck_assert_int_eq(un[1], INT32_MIN);
    ck_assert_int_eq(un[2], 7);
    run_un(KILN_OP_ABS, KILN_I32, a, un, 6);
    ck_assert_int_eq(un[1], INT32_MIN);
    ck_assert_int_eq(un[2], 7);
    run_un(KILN_OP_RELU, KILN_I32, a, un, 6);
    ck_assert_int_eq(un[0], INT32_MAX);
    ck_assert_int_eq(un[2], 0);
    ck_assert_int_eq(un[4], 5);

    int64_t la[4] = {INT64_MAX, INT64_MIN, -3, 4000000000LL};
    int64_t lb[4] = {1, -1, 5, 4000000000LL};
    int64_t ly[4];
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_I64), z = t_in(&s, KILN_I64);
    int32_t m = t_op2(&s, KILN_OP_MUL, KILN_I64, x, z);
    t_out(&s, t_op2(&s, KILN_OP_ADD, KILN_I64, m, z));
    int64_t dom[1] = {4};
    kiln_ir_tensor ins[2] = {tv(la, KILN_I64, 1, dom, NULL), tv(lb, KILN_I64, 1, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(ly, KILN_I64, 1, dom, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
    ck_assert_int_eq(ly[0], INT64_MIN);      /* MAX*1 + 1 wraps */
    ck_assert_int_eq(ly[1], INT64_MAX);      /* MIN*-1 = MIN; MIN + -1 wraps */
    ck_assert_int_eq(ly[2], -10);
    /* 4e9*4e9 + 4e9 mod 2^64, as a signed value */
    ck_assert_int_eq(ly[3], (int64_t)(16000000000000000000ULL + 4000000000ULL));
    int64_t lu[4];
    run_un(KILN_OP_NEG, KILN_I64, la, lu, 4);
    ck_assert_int_eq(lu[1], INT64_MIN);
    run_un(KILN_OP_ABS, KILN_I64, la, lu, 4);
    ck_assert_int_eq(lu[1], INT64_MIN);
    ck_assert_int_eq(lu[2], 3);
    run_un(KILN_OP_RELU, KILN_I64, la, lu, 4);
    ck_assert_int_eq(lu[2], 0);
    ck_assert_int_eq(lu[0], INT64_MAX);
}
END_TEST

/* ------------------------------------------- comparisons, logic, where */

START_TEST(compare_logic_where)
{
    float a[5] = {1.0f, NAN, -0.0f, 2.0f, -INFINITY};
    float b[5] = {1.0f, NAN, 0.0f, 3.0f, -INFINITY};
    static const int ops[] = {KILN_OP_EQ, KILN_OP_NE, KILN_OP_LT,
                              KILN_OP_LE, KILN_OP_GT, KILN_OP_GE};
    static const uint8_t want[6][5] = {
        {1, 0, 1, 0, 1}, /* eq: NaN != NaN, -0 == +0 */
        {0, 1, 0, 1, 0}, /* ne */
        {0, 0, 0, 1, 0}, /* lt */
        {1, 0, 1, 1, 1}, /* le */
        {0, 0, 0, 0, 0}, /* gt */
        {1, 0, 1, 0, 1}, /* ge */
    };
    for (int dtk = 0; dtk < 2; dtk++) {
        int dt = dtk ? KILN_F64 : KILN_F32;
        double da[5], db[5];
        for (int i = 0; i < 5; i++) {
            da[i] = a[i];
            db[i] = b[i];
        }
        for (size_t o = 0; o < 6; o++) {
            tseg s;
            tseg_init(&s, KILN_SEGK_POINTWISE);
            int32_t x = t_in(&s, dt), z = t_in(&s, dt);
            t_out(&s, t_op2(&s, ops[o], KILN_BOOL, x, z));
            uint8_t y[5];
            int64_t dom[1] = {5};
            kiln_ir_tensor ins[2] = {tv(dtk ? (void *)da : (void *)a, dt, 1, dom, NULL),
                                     tv(dtk ? (void *)db : (void *)b, dt, 1, dom, NULL)};
            kiln_ir_tensor outs[1] = {tv(y, KILN_BOOL, 1, dom, NULL)};
            ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
            for (int i = 0; i < 5; i++)
                ck_assert_msg(y[i] == want[o][i], "%s[%d] dt %d",
                              kiln_op_name((kiln_op)ops[o]), i, dt);
        }
    }
    /* integer and bool comparisons */
    int64_t ia[3] = {INT64_MIN, 5, -1}, ib[3] = {INT64_MAX, 5, 0};
    for (size_t o = 0; o < 6; o++) {
        tseg s;
        tseg_init(&s, KILN_SEGK_POINTWISE);
        int32_t x = t_in(&s, KILN_I64), z = t_in(&s, KILN_I64);
        t_out(&s, t_op2(&s, ops[o], KILN_BOOL, x, z));
        uint8_t y[3];
        int64_t dom[1] = {3};
        kiln_ir_tensor ins[2] = {tv(ia, KILN_I64, 1, dom, NULL), tv(ib, KILN_I64, 1, dom, NULL)};
        kiln_ir_tensor outs[1] = {tv(y, KILN_BOOL, 1, dom, NULL)};
        ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
        for (int i = 0; i < 3; i++) {
            int e = ops[o] == KILN_OP_EQ ? ia[i] == ib[i]
                    : ops[o] == KILN_OP_NE ? ia[i] != ib[i]
                    : ops[o] == KILN_OP_LT ? ia[i] < ib[i]
                    : ops[o] == KILN_OP_LE ? ia[i] <= ib[i]
                    : ops[o] == KILN_OP_GT ? ia[i] > ib[i] : ia[i] >= ib[i];
            ck_assert_int_eq(y[i], e);
        }
    }
    /* bool: and/or/not/eq/ne, with a non-canonical true byte (2) */
    uint8_t p[4] = {0, 0, 2, 1}, q[4] = {0, 1, 0, 1};
    static const int lops[] = {KILN_OP_AND, KILN_OP_OR, KILN_OP_EQ, KILN_OP_NE};
    static const uint8_t lw[4][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {1, 0, 0, 1}, {0, 1, 1, 0}};
    for (int o = 0; o < 4; o++) {
        tseg s;
        tseg_init(&s, KILN_SEGK_POINTWISE);
        int32_t x = t_in(&s, KILN_BOOL), z = t_in(&s, KILN_BOOL);
        t_out(&s, t_op2(&s, lops[o], KILN_BOOL, x, z));
        uint8_t y[4];
        int64_t dom[1] = {4};
        kiln_ir_tensor ins[2] = {tv(p, KILN_BOOL, 1, dom, NULL), tv(q, KILN_BOOL, 1, dom, NULL)};
        kiln_ir_tensor outs[1] = {tv(y, KILN_BOOL, 1, dom, NULL)};
        ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
        for (int i = 0; i < 4; i++)
            ck_assert_int_eq(y[i], lw[o][i]);
    }
    uint8_t ny[4];
    run_un(KILN_OP_NOT, KILN_BOOL, p, ny, 4);
    ck_assert(ny[0] == 1 && ny[1] == 1 && ny[2] == 0 && ny[3] == 0);
    /* where over every dtype size, with a broadcast condition */
    static const int wdt[] = {KILN_BOOL, KILN_I32, KILN_I64, KILN_F16,
                              KILN_BF16, KILN_F32, KILN_F64};
    for (size_t d = 0; d < 7; d++) {
        int dt = wdt[d];
        size_t es = kiln_dtype_size((kiln_dtype)dt);
        unsigned char va[4 * 8], vb[4 * 8], vy[4 * 8];
        for (size_t i = 0; i < sizeof va; i++) {
            va[i] = (unsigned char)(0x10 + i);
            vb[i] = (unsigned char)(0x90 + i);
        }
        if (dt == KILN_BOOL) {
            memset(va, 1, sizeof va);
            memset(vb, 0, sizeof vb);
        }
        uint8_t cond[2] = {1, 0};
        tseg s;
        tseg_init(&s, KILN_SEGK_POINTWISE);
        int32_t c = t_in(&s, KILN_BOOL), x = t_in(&s, dt), z = t_in(&s, dt);
        t_out(&s, t_node(&s, KILN_OP_WHERE, dt, c, x, z));
        int64_t dom[2] = {2, 2}, cs[2] = {1, 2}, cst[2] = {0, 1};
        kiln_ir_tensor ins[3] = {tv(cond, KILN_BOOL, 2, cs, cst),
                                 tv(va, dt, 2, dom, NULL), tv(vb, dt, 2, dom, NULL)};
        kiln_ir_tensor outs[1] = {tv(vy, dt, 2, dom, NULL)};
        ck_assert_int_eq(run(&s, 2, dom, ins, outs), KILN_OK);
        /* cond varies along axis 1: elements 0,2 from a; 1,3 from b */
        for (int i = 0; i < 4; i++) {
            const unsigned char *src = (i % 2 == 0) ? va : vb;
            ck_assert_int_eq(memcmp(vy + i * es, src + i * es, es), 0);
        }
    }
}
END_TEST

/* ------------------------------------------------------------- casts */

/* Cast one element through a segment. */
static void cast1(int from, const void *src, int to, void *dst)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, from);
    t_out(&s, t_op1(&s, KILN_OP_CAST, to, x));
    kiln_ir_tensor ins[1] = {tv((void *)src, from, 0, NULL, NULL)};
    kiln_ir_tensor outs[1] = {tv(dst, to, 0, NULL, NULL)};
    ck_assert_msg(run(&s, 0, NULL, ins, outs) == KILN_OK, "%s", g_err);
}

static uint16_t c_f32_h(uint32_t fb, int to)
{
    float f = bitsf(fb);
    uint16_t h;
    cast1(KILN_F32, &f, to, &h);
    return h;
}
static uint16_t c_f64_h(double d, int to)
{
    uint16_t h;
    cast1(KILN_F64, &d, to, &h);
    return h;
}
static uint16_t c_i64_h(int64_t v, int to)
{
    uint16_t h;
    cast1(KILN_I64, &v, to, &h);
    return h;
}

START_TEST(cast_to_half_ties_even)
{
    /* f32 -> f16 */
    ck_assert_uint_eq(c_f32_h(0x3f800000, KILN_F16), 0x3c00);
    ck_assert_uint_eq(c_f32_h(0x3f801000, KILN_F16), 0x3c00); /* 1+2^-11: tie -> even */
    ck_assert_uint_eq(c_f32_h(0x3f803000, KILN_F16), 0x3c02); /* 1+3*2^-11: tie -> even */
    ck_assert_uint_eq(c_f32_h(0x3f801001, KILN_F16), 0x3c01); /* above tie */
    ck_assert_uint_eq(c_f32_h(0x477fe000, KILN_F16), 0x7bff); /* 65504 */
    ck_assert_uint_eq(c_f32_h(0x477fefff, KILN_F16), 0x7bff); /* just below 65520 */
    ck_assert_uint_eq(c_f32_h(0x477ff000, KILN_F16), 0x7c00); /* 65520 -> inf */
    ck_assert_uint_eq(c_f32_h(0xc77ff000, KILN_F16), 0xfc00);
    ck_assert_uint_eq(c_f32_h(0x33800000, KILN_F16), 0x0001); /* 2^-24 */
    ck_assert_uint_eq(c_f32_h(0x33000000, KILN_F16), 0x0000); /* 2^-25 tie -> 0 */
    ck_assert_uint_eq(c_f32_h(0xb3000000, KILN_F16), 0x8000); /* -2^-25 -> -0 */
    ck_assert_uint_eq(c_f32_h(0x33000001, KILN_F16), 0x0001);
    ck_assert_uint_eq(c_f32_h(0x33c00000, KILN_F16), 0x0002); /* 1.5*2^-24 tie -> 2 */
    ck_assert_uint_eq(c_f32_h(0x387fe000, KILN_F16), 0x0400); /* 1023.5 * 2^-24: tie -> min normal */
    ck_assert_uint_eq(c_f32_h(0x387fc000, KILN_F16), 0x03ff); /* exact max subnormal */
    ck_assert_uint_eq(c_f32_h(0x7f800000, KILN_F16), 0x7c00);
    ck_assert_uint_eq(c_f32_h(0x00000001, KILN_F16), 0x0000);
    ck_assert_uint_eq(c_f32_h(0x80000000, KILN_F16), 0x8000);
    uint16_t hn = c_f32_h(0x7fc00000, KILN_F16);
    ck_assert((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0);
    /* f32 -> bf16 */
    ck_assert_uint_eq(c_f32_h(0x3f808000, KILN_BF16), 0x3f80); /* tie -> even */
    ck_assert_uint_eq(c_f32_h(0x3f818000, KILN_BF16), 0x3f82); /* tie -> even */
    ck_assert_uint_eq(c_f32_h(0x3f808001, KILN_BF16), 0x3f81);
    ck_assert_uint_eq(c_f32_h(0x7f7fffff, KILN_BF16), 0x7f80); /* max f32 -> inf */
    ck_assert_uint_eq(c_f32_h(0x7f7f7fff, KILN_BF16), 0x7f7f);
    ck_assert_uint_eq(c_f32_h(0x00000001, KILN_BF16), 0x0000);
    ck_assert_uint_eq(c_f32_h(0x00018000, KILN_BF16), 0x0002); /* subnormal tie -> even */
    ck_assert_uint_eq(c_f32_h(0x80010000, KILN_BF16), 0x8001);
    uint16_t bn = c_f32_h(0xffc00001, KILN_BF16);
    ck_assert((bn & 0x7f80) == 0x7f80 && (bn & 0x7f) != 0 && (bn & 0x8000));
}
END_TEST

START_TEST(cast_no_double_rounding)
{
    /* f64 -> f16: 1 + 2^-11 + 2^-40 is above the tie; through f32 the
    ** 2^-40 is lost and the tie then goes to even (0x3c00). */
    ck_assert_uint_eq(c_f64_h(0x1.002p0 + 0x1p-40, KILN_F16), 0x3c01);
    ck_assert_uint_eq(c_f64_h(0x1.002p0, KILN_F16), 0x3c00);
    ck_assert_uint_eq(c_f64_h(-(0x1.002p0 + 0x1p-40), KILN_F16), 0xbc01);
    /* subnormal f16 trap: 2^-25 + 2^-60 must round up to 0x0001 */
    ck_assert_uint_eq(c_f64_h(0x1p-25 + 0x1p-60, KILN_F16), 0x0001);
    ck_assert_uint_eq(c_f64_h(0x1p-25, KILN_F16), 0x0000);
    ck_assert_uint_eq(c_f64_h(65519.99999999, KILN_F16), 0x7bff);
    ck_assert_uint_eq(c_f64_h(1e300, KILN_F16), 0x7c00);
    ck_assert_uint_eq(c_f64_h(1e-300, KILN_F16), 0x0000);
    /* f64 -> bf16: 1 + 2^-8 + 2^-40 -> 0x3f81 (through f32: 0x3f80) */
    ck_assert_uint_eq(c_f64_h(0x1.01p0 + 0x1p-40, KILN_BF16), 0x3f81);
    ck_assert_uint_eq(c_f64_h(0x1.01p0, KILN_BF16), 0x3f80);
    ck_assert_uint_eq(c_f64_h(1e300, KILN_BF16), 0x7f80);
    ck_assert_uint_eq(c_f64_h(0x1p-133, KILN_BF16), 0x0001); /* min bf16 subnormal */
    ck_assert_uint_eq(c_f64_h(0x1p-134, KILN_BF16), 0x0000); /* tie -> 0 */
    ck_assert_uint_eq(c_f64_h(0x1p-134 + 0x1p-170, KILN_BF16), 0x0001);
    /* f64 -> f32 */
    double d = 0x1p-150 + 0x1p-200; /* above the tie at half min subnormal */
    float f;
    cast1(KILN_F64, &d, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 1);
    d = 0x1p-150;
    cast1(KILN_F64, &d, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0);
    d = 0x1.000001p0; /* 1 + 2^-24: tie -> 1.0 */
    cast1(KILN_F64, &d, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x3f800000);
    d = 0x1.000003p0; /* 1 + 3*2^-24: tie -> 1 + 2^-22 */
    cast1(KILN_F64, &d, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x3f800002);
    d = DBL_MAX;
    cast1(KILN_F64, &d, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x7f800000);
    d = 0x1.fffffefffffffp127; /* just below the overflow threshold */
    cast1(KILN_F64, &d, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x7f7fffff);
    d = 0x1.ffffffp127; /* exactly the threshold: tie -> inf */
    cast1(KILN_F64, &d, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x7f800000);
}
END_TEST

START_TEST(cast_int_to_float)
{
    /* i64 -> bf16 (8 significant bits) */
    ck_assert_uint_eq(c_i64_h(257, KILN_BF16), 0x4380); /* tie -> 256 */
    ck_assert_uint_eq(c_i64_h(259, KILN_BF16), 0x4382); /* tie -> 260 */
    ck_assert_uint_eq(c_i64_h(-258, KILN_BF16), 0xc381);
    /* 2^40 + 2^32 + 1: above the tie -> 2^40 + 2^33 (0x5381); through f32
    ** the +1 is lost and the tie goes to 2^40 (0x5380). */
    ck_assert_uint_eq(c_i64_h((1LL << 40) + (1LL << 32) + 1, KILN_BF16), 0x5381);
    ck_assert_uint_eq(c_i64_h((1LL << 40) + (1LL << 32), KILN_BF16), 0x5380);
    ck_assert_uint_eq(c_i64_h(INT64_MIN, KILN_BF16), 0xdf00); /* -2^63 */
    ck_assert_uint_eq(c_i64_h(INT64_MAX, KILN_BF16), 0x5f00); /* 2^63 */
    ck_assert_uint_eq(c_i64_h(0, KILN_BF16), 0x0000);
    /* i64 -> f16 */
    ck_assert_uint_eq(c_i64_h(2049, KILN_F16), 0x6800); /* tie -> 2048 */
    ck_assert_uint_eq(c_i64_h(2051, KILN_F16), 0x6802); /* tie -> 2052 */
    ck_assert_uint_eq(c_i64_h(65504, KILN_F16), 0x7bff);
    ck_assert_uint_eq(c_i64_h(65519, KILN_F16), 0x7bff);
    ck_assert_uint_eq(c_i64_h(65520, KILN_F16), 0x7c00);
    ck_assert_uint_eq(c_i64_h(-70000, KILN_F16), 0xfc00);
    ck_assert_uint_eq(c_i64_h(INT64_MAX, KILN_F16), 0x7c00);
    ck_assert_uint_eq(c_i64_h(-1, KILN_F16), 0xbc00);
    /* (2^11 + 1) * 2^20 + 1: above the tie -> 0x6c01... via f32 exact */
    /* i64 -> f32 / f64 */
    int64_t v = (1LL << 24) + 1;
    float f;
    cast1(KILN_I64, &v, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x4b800000);
    v = (1LL << 24) + 3;
    cast1(KILN_I64, &v, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x4b800002);
    v = INT64_MAX;
    cast1(KILN_I64, &v, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x5f000000);
    v = INT64_MIN;
    cast1(KILN_I64, &v, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0xdf000000);
    /* 2^53 + 2^29 + 1 -> above the f32 tie? f32 ulp at 2^53 is 2^30:
    ** 2^29 is the tie, +1 makes it round up: 2^53 + 2^30 */
    v = (1LL << 53) + (1LL << 29) + 1;
    cast1(KILN_I64, &v, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x5a000001);
    double d;
    v = (1LL << 53) + 1;
    cast1(KILN_I64, &v, KILN_F64, &d);
    ck_assert_uint_eq(dbits(d), 0x4340000000000000ull);
    v = (1LL << 53) + 3;
    cast1(KILN_I64, &v, KILN_F64, &d);
    ck_assert_uint_eq(dbits(d), 0x4340000000000002ull);
    v = INT64_MAX;
    cast1(KILN_I64, &v, KILN_F64, &d);
    ck_assert_uint_eq(dbits(d), 0x43e0000000000000ull);
    /* i32 -> f32 */
    int32_t w = 16777217;
    cast1(KILN_I32, &w, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x4b800000);
    w = INT32_MIN;
    cast1(KILN_I32, &w, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0xcf000000);
    w = 2049;
    uint16_t h;
    cast1(KILN_I32, &w, KILN_F16, &h);
    ck_assert_uint_eq(h, 0x6800);
    /* bool -> numbers */
    uint8_t t = 1, t2 = 7;
    cast1(KILN_BOOL, &t, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0x3f800000);
    cast1(KILN_BOOL, &t2, KILN_I64, &v);
    ck_assert_int_eq(v, 1);
    cast1(KILN_BOOL, &t, KILN_BF16, &h);
    ck_assert_uint_eq(h, 0x3f80);
    cast1(KILN_BOOL, &t, KILN_F16, &h);
    ck_assert_uint_eq(h, 0x3c00);
}
END_TEST

START_TEST(cast_float_to_int_saturate)
{
    static const struct {
        uint32_t f;
        int32_t want;
    } c32[] = {
        {0x4f32d05e, INT32_MAX}, /* 3e9 */
        {0xcf32d05e, INT32_MIN}, /* -3e9 */
        {0x7fc00000, 0},         /* NaN */
        {0xffc00000, 0},
        {0xbff33333, -1},        /* -1.9 */
        {0x3ff33333, 1},         /* 1.9 */
        {0x4effffff, 2147483520},
        {0x4f000000, INT32_MAX}, /* 2^31 */
        {0xcf000000, INT32_MIN}, /* -2^31 exact */
        {0x7f800000, INT32_MAX},
        {0xff800000, INT32_MIN},
        {0x80000001, 0},
        {0xbf7fffff, 0},
    };
    for (size_t i = 0; i < sizeof c32 / sizeof c32[0]; i++) {
        float f = bitsf(c32[i].f);
        int32_t r = 12345;
        cast1(KILN_F32, &f, KILN_I32, &r);
        ck_assert_msg(r == c32[i].want, "f32 0x%08x -> %d", c32[i].f, r);
    }
    static const struct {
        uint64_t d;
        int64_t want;
    } c64[] = {
        {0x43e0000000000000ull, INT64_MAX}, /* 2^63 */
        {0xc3e0000000000000ull, INT64_MIN}, /* -2^63 exact */
        {0xc3e0000000000001ull, INT64_MIN},
        {0x43dfffffffffffffull, 9223372036854774784LL},
        {0x7ff8000000000000ull, 0},
        {0x7ff0000000000000ull, INT64_MAX},
        {0xfff0000000000000ull, INT64_MIN},
        {0xc00c000000000000ull, -3}, /* -3.5 */
        {0x4415af1d78b58c40ull, INT64_MAX}, /* 1e20 */
    };
    for (size_t i = 0; i < sizeof c64 / sizeof c64[0]; i++) {
        double d = bitsd(c64[i].d);
        int64_t r = 12345;
        cast1(KILN_F64, &d, KILN_I64, &r);
        ck_assert_msg(r == c64[i].want, "f64 %a -> %lld", d, (long long)r);
        int32_t r32;
        cast1(KILN_F64, &d, KILN_I32, &r32);
        int64_t w32 = c64[i].want > INT32_MAX ? INT32_MAX
                      : c64[i].want < INT32_MIN ? INT32_MIN : c64[i].want;
        ck_assert_int_eq(r32, w32);
    }
    /* f16 / bf16 -> int */
    uint16_t h = 0x7c00; /* inf */
    int32_t r;
    cast1(KILN_F16, &h, KILN_I32, &r);
    ck_assert_int_eq(r, INT32_MAX);
    h = 0x7bff;
    cast1(KILN_F16, &h, KILN_I32, &r);
    ck_assert_int_eq(r, 65504);
    h = 0xfe00; /* NaN */
    cast1(KILN_F16, &h, KILN_I32, &r);
    ck_assert_int_eq(r, 0);
    h = 0x7f7f; /* bf16 max ~3.39e38 */
    int64_t rl;
    cast1(KILN_BF16, &h, KILN_I64, &rl);
    ck_assert_int_eq(rl, INT64_MAX);
    h = 0xc040; /* bf16 -3.0 */
    cast1(KILN_BF16, &h, KILN_I64, &rl);
    ck_assert_int_eq(rl, -3);
    /* -> bool */
    float fn = NAN, fz = -0.0f, fh = 0x1p-149f;
    uint8_t b = 9;
    cast1(KILN_F32, &fn, KILN_BOOL, &b);
    ck_assert_int_eq(b, 1);
    cast1(KILN_F32, &fz, KILN_BOOL, &b);
    ck_assert_int_eq(b, 0);
    cast1(KILN_F32, &fh, KILN_BOOL, &b);
    ck_assert_int_eq(b, 1);
    int64_t big = 1LL << 40;
    cast1(KILN_I64, &big, KILN_BOOL, &b);
    ck_assert_int_eq(b, 1);
    /* int -> int wraps */
    int64_t l = 0x100000005LL;
    int32_t w;
    cast1(KILN_I64, &l, KILN_I32, &w);
    ck_assert_int_eq(w, 5);
    l = 0x80000000LL;
    cast1(KILN_I64, &l, KILN_I32, &w);
    ck_assert_int_eq(w, INT32_MIN);
    w = -7;
    cast1(KILN_I32, &w, KILN_I64, &l);
    ck_assert_int_eq(l, -7);
}
END_TEST

START_TEST(cast_widening_exact)
{
    static const struct {
        uint16_t h;
        uint32_t f;
    } hf[] = {
        {0x0001, 0x33800000}, {0x8001, 0xb3800000}, {0x03ff, 0x387fc000},
        {0x0400, 0x38800000}, {0x7bff, 0x477fe000}, {0x3c00, 0x3f800000},
        {0x7c00, 0x7f800000}, {0xfc00, 0xff800000}, {0x8000, 0x80000000},
        {0x3555, 0x3eaaa000},
    };
    for (size_t i = 0; i < sizeof hf / sizeof hf[0]; i++) {
        float f;
        cast1(KILN_F16, &hf[i].h, KILN_F32, &f);
        ck_assert_msg(fbits(f) == hf[i].f, "f16 0x%04x -> 0x%08x", hf[i].h, fbits(f));
        double d;
        cast1(KILN_F16, &hf[i].h, KILN_F64, &d);
        ck_assert(same_f64(d, (double)bitsf(hf[i].f)));
    }
    uint16_t hn = 0x7e01;
    float fnan;
    cast1(KILN_F16, &hn, KILN_F32, &fnan);
    ck_assert(isnan(fnan));
    uint16_t b = 0x0001; /* bf16 min subnormal = 2^-133 */
    double d;
    cast1(KILN_BF16, &b, KILN_F64, &d);
    ck_assert(d == 0x1p-133);
    float f;
    b = 0xc0a0;
    cast1(KILN_BF16, &b, KILN_F32, &f);
    ck_assert_uint_eq(fbits(f), 0xc0a00000);
    /* f16 <-> bf16 goes through the exact value: f16 2^-24 -> bf16 */
    uint16_t h = 0x0001, r;
    cast1(KILN_F16, &h, KILN_BF16, &r);
    ck_assert_uint_eq(r, 0x3380);
    h = 0x3c01; /* 1 + 2^-10 -> bf16 tie? bf16 ulp at 1 = 2^-7: rounds to 1 */
    cast1(KILN_F16, &h, KILN_BF16, &r);
    ck_assert_uint_eq(r, 0x3f80);
    b = 0x4780; /* bf16 65536 -> f16 inf */
    cast1(KILN_BF16, &b, KILN_F16, &r);
    ck_assert_uint_eq(r, 0x7c00);
    f = 0x1p-149f;
    cast1(KILN_F32, &f, KILN_F64, &d);
    ck_assert_uint_eq(dbits(d), 0x36a0000000000000ull);
}
END_TEST

/* An independent encoder: round the exact value v (any f64 or i64 is
** exact in long double) to a binary format by scaling it so one ulp is 1
** and calling rintl (round half to even).  It shares no code or method
** with numeric.c's bit-level rounding. */
static uint64_t enc_ref(long double v, int mant, int ebits)
{
    int bias = (1 << (ebits - 1)) - 1;
    uint64_t sign = signbit(v) ? 1ull << (mant + ebits) : 0;
    uint64_t inf = ((1ull << ebits) - 1) << mant;
    long double a = fabsl(v);
    if (isnan(v))
        return inf | (1ull << (mant - 1));
    if (isinf(v))
        return sign | inf;
    if (a == 0)
        return sign;
    int e = ilogbl(a);
    int q = (e > 1 - bias ? e : 1 - bias) - mant;
    long double m = rintl(ldexpl(a, -q));
    if (m >= ldexpl(1.0L, mant + 1)) {
        m /= 2;
        q++;
    }
    if (m < ldexpl(1.0L, mant))
        return sign | (uint64_t)m; /* subnormal (or zero) */
    if (q + mant + bias >= (1 << ebits) - 1)
        return sign | inf;
    return sign | ((uint64_t)(q + mant + bias) << mant) |
           ((uint64_t)m - (1ull << mant));
}

/* Cast n contiguous elements through one segment launch. */
static void cast_n(int from, const void *src, int to, void *dst, int64_t n)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, from);
    t_out(&s, t_op1(&s, KILN_OP_CAST, to, x));
    int64_t dom[1] = {n};
    kiln_ir_tensor ins[1] = {tv((void *)src, from, 1, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(dst, to, 1, dom, NULL)};
    ck_assert_msg(run(&s, 1, dom, ins, outs) == KILN_OK, "%s", g_err);
}

static int bits_eq_or_nan(uint64_t got, uint64_t want, int mant, int ebits)
{
    uint64_t inf = ((1ull << ebits) - 1) << mant;
    uint64_t mag = (1ull << (mant + ebits)) - 1;
    if ((want & mag) > inf)
        return (got & mag) > inf;
    return got == want;
}

START_TEST(cast_sweep_vs_independent_encoder)
{
    enum { N = 4000 };
    static double d[N];
    static int64_t l[N];
    static float f[N];
    static uint16_t h[N];
    static float f32o[N];
    static double f64o[N];
    uint64_t st = 12345;
    for (int i = 0; i < N; i++) {
        uint64_t r = cf_splitmix64(&st);
        int kind = i % 4;
        if (kind == 0) { /* anywhere in the f16/bf16 ranges incl. subnormals */
            int e = (int)(cf_splitmix64(&st) % 300) - 150;
            d[i] = ldexp(1.0 + (double)(r >> 12) * 0x1p-52, e);
        } else if (kind == 1) { /* near f16 ties: k/2 ulps +- tiny */
            int e = (int)(cf_splitmix64(&st) % 40) - 26;
            double k = (double)(r % 4096) + 0.5;
            double tiny = ((r >> 20) % 3 == 0) ? 0 : ((r >> 20) % 3 == 1 ? 0x1p-30 : -0x1p-30);
            d[i] = ldexp(k + tiny, e);
        } else if (kind == 2) { /* near bf16 ties */
            int e = (int)(cf_splitmix64(&st) % 280) - 140;
            double k = (double)(r % 512) + 0.5;
            double tiny = ((r >> 20) % 3 == 0) ? 0 : ((r >> 20) % 3 == 1 ? 0x1p-40 : -0x1p-40);
            d[i] = ldexp(k + tiny, e);
        } else { /* random bit patterns, any class */
            memcpy(&d[i], &r, 8);
        }
        if (r & (1ull << 63))
            d[i] = -d[i];
        int bits = (int)(cf_splitmix64(&st) % 64);
        l[i] = (int64_t)(cf_splitmix64(&st) >> (63 - bits));
        if (r & 1)
            l[i] = -l[i];
        uint32_t fb = (uint32_t)(cf_splitmix64(&st) >> 32);
        f[i] = bitsf(fb);
    }
    l[0] = INT64_MIN;
    l[1] = INT64_MAX;
    static const struct {
        int to, mant, ebits;
    } tg[] = {{KILN_F16, 10, 5}, {KILN_BF16, 7, 8}};
    for (size_t t = 0; t < 2; t++) {
        cast_n(KILN_F64, d, tg[t].to, h, N);
        for (int i = 0; i < N; i++) {
            uint64_t w = enc_ref((long double)d[i], tg[t].mant, tg[t].ebits);
            ck_assert_msg(bits_eq_or_nan(h[i], w, tg[t].mant, tg[t].ebits),
                          "f64 %a -> %s: 0x%04x, want 0x%04llx", d[i],
                          kiln_dtype_name((kiln_dtype)tg[t].to), h[i],
                          (unsigned long long)w);
        }
        cast_n(KILN_I64, l, tg[t].to, h, N);
        for (int i = 0; i < N; i++) {
            uint64_t w = enc_ref((long double)l[i], tg[t].mant, tg[t].ebits);
            ck_assert_msg(h[i] == w, "i64 %lld -> %s: 0x%04x, want 0x%04llx",
                          (long long)l[i], kiln_dtype_name((kiln_dtype)tg[t].to),
                          h[i], (unsigned long long)w);
        }
        cast_n(KILN_F32, f, tg[t].to, h, N);
        for (int i = 0; i < N; i++) {
            uint64_t w = enc_ref((long double)f[i], tg[t].mant, tg[t].ebits);
            ck_assert_msg(bits_eq_or_nan(h[i], w, tg[t].mant, tg[t].ebits),
                          "f32 0x%08x -> %s: 0x%04x", fbits(f[i]),
                          kiln_dtype_name((kiln_dtype)tg[t].to), h[i]);
        }
    }
    cast_n(KILN_F64, d, KILN_F32, f32o, N);
    for (int i = 0; i < N; i++)
        ck_assert(bits_eq_or_nan(fbits(f32o[i]), enc_ref((long double)d[i], 23, 8), 23, 8));
    cast_n(KILN_I64, l, KILN_F32, f32o, N);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(fbits(f32o[i]), enc_ref((long double)l[i], 23, 8));
    cast_n(KILN_I64, l, KILN_F64, f64o, N);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(dbits(f64o[i]), enc_ref((long double)l[i], 52, 11));
    /* float -> int: truncl + clamp in long double */
    static int32_t i32o[N];
    static int64_t i64o[N];
    cast_n(KILN_F64, d, KILN_I32, i32o, N);
    cast_n(KILN_F64, d, KILN_I64, i64o, N);
    for (int i = 0; i < N; i++) {
        long double x = d[i];
        int64_t w32, w64;
        if (isnan(x)) {
            w32 = w64 = 0;
        } else {
            long double tr = truncl(x);
            w32 = tr > 2147483647.0L ? INT32_MAX : tr < -2147483648.0L ? INT32_MIN : (int64_t)tr;
            w64 = tr >= 9223372036854775808.0L ? INT64_MAX
                  : tr <= -9223372036854775808.0L ? INT64_MIN : (int64_t)tr;
        }
        ck_assert_msg(i32o[i] == w32, "%a -> i32 %d", d[i], i32o[i]);
        ck_assert_msg(i64o[i] == w64, "%a -> i64 %lld", d[i], (long long)i64o[i]);
    }
    /* f16 / bf16 -> f32 round trip of every pattern: widening is exact,
    ** so narrowing the result again gives the pattern back (NaN: a NaN) */
    static uint16_t all[65536], back[65536];
    static float wide[65536];
    for (int i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    for (size_t t = 0; t < 2; t++) {
        cast_n(tg[t].to, all, KILN_F32, wide, 65536);
        cast_n(KILN_F32, wide, tg[t].to, back, 65536);
        for (int i = 0; i < 65536; i++) {
            ck_assert(bits_eq_or_nan(back[i], all[i], tg[t].mant, tg[t].ebits));
            /* and the widened value is the encoder's preimage */
            if (!isnan(wide[i]))
                ck_assert_uint_eq(enc_ref((long double)wide[i], tg[t].mant, tg[t].ebits), all[i]);
        }
    }
}
END_TEST

START_TEST(cast_matrix_all_pairs)
{
    /* Every (from, to) pair on values whose result is known exactly:
    ** 0, 1, -2, 3 (representable in every dtype), and bool's 0/1. */
    static const int dts[] = {KILN_BOOL, KILN_I32, KILN_I64, KILN_F16,
                              KILN_BF16, KILN_F32, KILN_F64};
    /* bit patterns of 0, 1, -2, 3 per dtype (bool: 0, 1, 1, 1) */
    static const uint64_t pat[7][4] = {
        {0, 1, 1, 1},
        {0, 1, 0xfffffffe, 3},
        {0, 1, 0xfffffffffffffffeull, 3},
        {0x0000, 0x3c00, 0xc000, 0x4200},
        {0x0000, 0x3f80, 0xc000, 0x4040},
        {0x00000000, 0x3f800000, 0xc0000000, 0x40400000},
        {0, 0x3ff0000000000000ull, 0xc000000000000000ull, 0x4008000000000000ull},
    };
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 7; b++) {
            size_t ea = kiln_dtype_size((kiln_dtype)dts[a]);
            size_t eb = kiln_dtype_size((kiln_dtype)dts[b]);
            unsigned char src[32], dst[32];
            memset(dst, 0xaa, sizeof dst);
            for (int i = 0; i < 4; i++)
                memcpy(src + i * ea, &pat[a][i], ea); /* little endian */
            cast_n(dts[a], src, dts[b], dst, 4);
            for (int i = 0; i < 4; i++) {
                uint64_t got = 0;
                memcpy(&got, dst + i * eb, eb);
                /* from bool the values are 0,1,1,1 */
                int vi = a == 0 ? (i > 0) : i;
                uint64_t want = pat[b][vi];
                if (b == 0)
                    want = vi != 0;
                ck_assert_msg(got == want, "%s -> %s [%d]: 0x%llx want 0x%llx",
                              kiln_dtype_name((kiln_dtype)dts[a]),
                              kiln_dtype_name((kiln_dtype)dts[b]), i,
                              (unsigned long long)got, (unsigned long long)want);
            }
        }
}
END_TEST

START_TEST(remaining_op_dtype_pairs)
{
    /* f32 pow vs long double powl (within 1 ulp), and exact anchors */
    float pa[6] = {2.0f, 9.0f, -8.0f, 0.5f, 1.5f, 10.0f};
    float pb[6] = {10.0f, 0.5f, 3.0f, -2.0f, 7.25f, -3.0f};
    float po[6];
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_F32), y = t_in(&s, KILN_F32);
    t_out(&s, t_op2(&s, KILN_OP_POW, KILN_F32, x, y));
    int64_t d6[1] = {6};
    kiln_ir_tensor ins[2] = {tv(pa, KILN_F32, 1, d6, NULL), tv(pb, KILN_F32, 1, d6, NULL)};
    kiln_ir_tensor outs[1] = {tv(po, KILN_F32, 1, d6, NULL)};
    ck_assert_int_eq(run(&s, 1, d6, ins, outs), KILN_OK);
    ck_assert(po[0] == 1024.0f && po[1] == 3.0f && po[2] == -512.0f && po[3] == 4.0f);
    for (int i = 0; i < 6; i++)
        ck_assert(ulp32(po[i], (float)powl(pa[i], pb[i])) <= 1);
    /* i64 sub / max / min; i32 comparisons */
    int64_t la[3] = {INT64_MIN, 7, -7}, lb[3] = {1, 9, -9}, lo[3];
    static const int ops[] = {KILN_OP_SUB, KILN_OP_MAXIMUM, KILN_OP_MINIMUM};
    static const int64_t want[3][3] = {{INT64_MAX, -2, 2}, {1, 9, -7}, {INT64_MIN, 7, -9}};
    for (int o = 0; o < 3; o++) {
        tseg t;
        tseg_init(&t, KILN_SEGK_POINTWISE);
        x = t_in(&t, KILN_I64);
        y = t_in(&t, KILN_I64);
        t_out(&t, t_op2(&t, ops[o], KILN_I64, x, y));
        int64_t d3[1] = {3};
        kiln_ir_tensor li[2] = {tv(la, KILN_I64, 1, d3, NULL), tv(lb, KILN_I64, 1, d3, NULL)};
        kiln_ir_tensor lout[1] = {tv(lo, KILN_I64, 1, d3, NULL)};
        ck_assert_int_eq(run(&t, 1, d3, li, lout), KILN_OK);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(lo[i], want[o][i]);
    }
    int32_t ia[3] = {INT32_MIN, 4, 5}, ib[3] = {INT32_MAX, 4, -5};
    static const int cops[] = {KILN_OP_EQ, KILN_OP_NE, KILN_OP_LT,
                               KILN_OP_LE, KILN_OP_GT, KILN_OP_GE};
    static const uint8_t cw[6][3] = {{0, 1, 0}, {1, 0, 1}, {1, 0, 0},
                                     {1, 1, 0}, {0, 0, 1}, {0, 1, 1}};
    for (int o = 0; o < 6; o++) {
        tseg t;
        tseg_init(&t, KILN_SEGK_POINTWISE);
        x = t_in(&t, KILN_I32);
        y = t_in(&t, KILN_I32);
        t_out(&t, t_op2(&t, cops[o], KILN_BOOL, x, y));
        uint8_t r[3];
        int64_t d3[1] = {3};
        kiln_ir_tensor ci[2] = {tv(ia, KILN_I32, 1, d3, NULL), tv(ib, KILN_I32, 1, d3, NULL)};
        kiln_ir_tensor co[1] = {tv(r, KILN_BOOL, 1, d3, NULL)};
        ck_assert_int_eq(run(&t, 1, d3, ci, co), KILN_OK);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(r[i], cw[o][i]);
    }
    /* f64 sum / min reductions and f32 min over several axes */
    double dd[6] = {1.5, -2.0, NAN, 4.0, 0.25, -0.0};
    for (int k = 0; k < 2; k++) {
        tseg t;
        tseg_init(&t, KILN_SEGK_REDUCTION);
        x = t_in(&t, KILN_F64);
        t_out(&t, t_red(&t, k ? KILN_OP_RMIN : KILN_OP_SUM, KILN_F64, x, 1));
        double r[3];
        int64_t dm[2] = {2, 3}, om[2] = {1, 3};
        kiln_ir_tensor di[1] = {tv(dd, KILN_F64, 2, dm, NULL)};
        kiln_ir_tensor dout[1] = {tv(r, KILN_F64, 2, om, NULL)};
        ck_assert_int_eq(run(&t, 2, dm, di, dout), KILN_OK);
        if (k == 0) {
            ck_assert(r[0] == 5.5 && r[1] == -1.75 && isnan(r[2]));
        } else {
            ck_assert(r[0] == 1.5 && r[1] == -2.0 && isnan(r[2]));
        }
    }
    float ff[2][2][3];
    for (int i = 0; i < 12; i++)
        ((float *)ff)[i] = (float)(i * 7 % 12) - 5.0f;
    tseg t;
    tseg_init(&t, KILN_SEGK_REDUCTION);
    x = t_in(&t, KILN_F32);
    t_out(&t, t_red(&t, KILN_OP_RMIN, KILN_F32, x, 0x5));
    float r[2];
    int64_t dm[3] = {2, 2, 3}, om[3] = {1, 2, 1};
    kiln_ir_tensor fi[1] = {tv(ff, KILN_F32, 3, dm, NULL)};
    kiln_ir_tensor fo[1] = {tv(r, KILN_F32, 3, om, NULL)};
    ck_assert_int_eq(run(&t, 3, dm, fi, fo), KILN_OK);
    for (int j = 0; j < 2; j++) {
        float m = INFINITY;
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 3; k++)
                m = ff[i][j][k] < m ? ff[i][j][k] : m;
        ck_assert(r[j] == m);
    }
}
END_TEST

/* ------------------------------------------------------- views, shapes */

START_TEST(strided_and_broadcast_views)
{
    /* a: [3,4] transposed storage (strides {1,3}); b: [1,4] broadcast row;
    ** out: [3,4] written into every other element (strides {8,2}). */
    float a[12], b[4], out[24];
    for (int i = 0; i < 12; i++)
        a[i] = (float)(i * 10);
    for (int j = 0; j < 4; j++)
        b[j] = (float)j;
    for (int i = 0; i < 24; i++)
        out[i] = -1.0f;
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_F32), y = t_in(&s, KILN_F32);
    t_out(&s, t_op2(&s, KILN_OP_ADD, KILN_F32, x, y));
    int64_t dom[2] = {3, 4};
    int64_t ast[2] = {1, 3}, bs[2] = {1, 4}, bst[2] = {99, 1}, ost[2] = {8, 2};
    kiln_ir_tensor ins[2] = {tv(a, KILN_F32, 2, dom, ast), tv(b, KILN_F32, 2, bs, bst)};
    kiln_ir_tensor outs[1] = {tv(out, KILN_F32, 2, dom, ost)};
    ck_assert_int_eq(run(&s, 2, dom, ins, outs), KILN_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            ck_assert(out[i * 8 + j * 2] == a[i + j * 3] + b[j]);
            ck_assert(out[i * 8 + j * 2 + 1] == -1.0f);
        }
    /* stride 0 on an axis of full size (an expanded scalar) */
    float sc = 2.5f, o2[12];
    int64_t z[2] = {0, 0};
    kiln_ir_tensor ins2[2] = {tv(&sc, KILN_F32, 2, dom, z), tv(b, KILN_F32, 2, bs, bst)};
    kiln_ir_tensor outs2[1] = {tv(o2, KILN_F32, 2, dom, NULL)};
    ck_assert_int_eq(run(&s, 2, dom, ins2, outs2), KILN_OK);
    for (int i = 0; i < 12; i++)
        ck_assert(o2[i] == 2.5f + (float)(i % 4));
}
END_TEST

START_TEST(large_domain_several_blocks)
{
    /* 3 x 1000 with a non-contiguous input: crosses block boundaries. */
    enum { R = 3, C = 1000 };
    static int32_t a[C][R], out[R * C];
    for (int j = 0; j < C; j++)
        for (int i = 0; i < R; i++)
            a[j][i] = i * 100000 + j;
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_I32);
    int32_t c = t_const(&s, KILN_I32, 7);
    t_out(&s, t_op2(&s, KILN_OP_MUL, KILN_I32, x, c));
    int64_t dom[2] = {R, C}, st[2] = {1, R};
    kiln_ir_tensor ins[1] = {tv(a, KILN_I32, 2, dom, st)};
    kiln_ir_tensor outs[1] = {tv(out, KILN_I32, 2, dom, NULL)};
    ck_assert_int_eq(run(&s, 2, dom, ins, outs), KILN_OK);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            ck_assert_int_eq(out[i * C + j], 7 * (i * 100000 + j));
}
END_TEST

START_TEST(rank0_and_empty_domains)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_F32);
    int32_t c = t_const(&s, KILN_F32, 0x40000000); /* 2.0 */
    t_out(&s, t_op2(&s, KILN_OP_MUL, KILN_F32, x, c));
    float v = 1.5f, o = 0;
    kiln_ir_tensor ins[1] = {tv(&v, KILN_F32, 0, NULL, NULL)};
    kiln_ir_tensor outs[1] = {tv(&o, KILN_F32, 0, NULL, NULL)};
    ck_assert_int_eq(run(&s, 0, NULL, ins, outs), KILN_OK);
    ck_assert(o == 3.0f);
    /* 0-size: nothing is touched; NULL data is fine */
    int64_t dom[2] = {0, 5};
    kiln_ir_tensor ins0[1] = {tv(NULL, KILN_F32, 2, dom, NULL)};
    kiln_ir_tensor outs0[1] = {tv(NULL, KILN_F32, 2, dom, NULL)};
    ck_assert_int_eq(run(&s, 2, dom, ins0, outs0), KILN_OK);
    /* a constant output over a domain */
    tseg t;
    tseg_init(&t, KILN_SEGK_POINTWISE);
    t_out(&t, t_const(&t, KILN_F16, 0x3c00));
    uint16_t h[3] = {0, 0, 0};
    int64_t d3[1] = {3};
    kiln_ir_tensor ho[1] = {tv(h, KILN_F16, 1, d3, NULL)};
    ck_assert_int_eq(run(&t, 1, d3, NULL, ho), KILN_OK);
    ck_assert(h[0] == 0x3c00 && h[1] == 0x3c00 && h[2] == 0x3c00);
    /* an input passed straight through as an output (bf16) */
    tseg u;
    tseg_init(&u, KILN_SEGK_POINTWISE);
    t_out(&u, t_in(&u, KILN_BF16));
    uint16_t src[3] = {1, 2, 3}, dst[3] = {0};
    kiln_ir_tensor ui[1] = {tv(src, KILN_BF16, 1, d3, NULL)};
    kiln_ir_tensor uo[1] = {tv(dst, KILN_BF16, 1, d3, NULL)};
    ck_assert_int_eq(run(&u, 1, d3, ui, uo), KILN_OK);
    ck_assert(dst[0] == 1 && dst[2] == 3);
}
END_TEST

/* --------------------------------------------------------- reductions */

START_TEST(sum_axes_keepdim)
{
    /* x: [2,3,4] = 0..23 (f32); sums over {2}, {0}, {0,2}, all. */
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)i;
    int64_t dom[3] = {2, 3, 4};
    static const uint32_t axes[] = {0x4, 0x1, 0x5, 0x7, 0x0};
    for (size_t t = 0; t < 5; t++) {
        tseg s;
        tseg_init(&s, KILN_SEGK_REDUCTION);
        int32_t a = t_in(&s, KILN_F32);
        t_out(&s, t_red(&s, KILN_OP_SUM, KILN_F32, a, axes[t]));
        int64_t os[3];
        for (int i = 0; i < 3; i++)
            os[i] = (axes[t] >> i) & 1 ? 1 : dom[i];
        float out[24];
        for (int i = 0; i < 24; i++)
            out[i] = -1;
        kiln_ir_tensor ins[1] = {tv(x, KILN_F32, 3, dom, NULL)};
        kiln_ir_tensor outs[1] = {tv(out, KILN_F32, 3, os, NULL)};
        ck_assert_msg(run(&s, 3, dom, ins, outs) == KILN_OK, "%s", g_err);
        for (int i = 0; i < os[0]; i++)
            for (int j = 0; j < os[1]; j++)
                for (int k = 0; k < os[2]; k++) {
                    long e = 0;
                    for (int p = 0; p < 2; p++)
                        for (int q = 0; q < 3; q++)
                            for (int r = 0; r < 4; r++) {
                                if (!((axes[t] & 1) || p == i)) continue;
                                if (!((axes[t] & 2) || q == j)) continue;
                                if (!((axes[t] & 4) || r == k)) continue;
                                e += p * 12 + q * 4 + r;
                            }
                    ck_assert_msg(out[(i * os[1] + j) * os[2] + k] == (float)e,
                                  "axes 0x%x at %d,%d,%d", axes[t], i, j, k);
                }
    }
}
END_TEST

START_TEST(sum_accuracy_f32_f64)
{
    /* f32: 1 + 1000 * 2^-27 (each addend below half an ulp of 1): a naive
    ** f32 accumulation stays at 1.0; accumulating in double does not. */
    enum { N = 1001 };
    static float x[N];
    x[0] = 1.0f;
    for (int i = 1; i < N; i++)
        x[i] = 0x1p-27f;
    {
        tseg s;
        tseg_init(&s, KILN_SEGK_REDUCTION);
        int32_t a = t_in(&s, KILN_F32);
        t_out(&s, t_red(&s, KILN_OP_SUM, KILN_F32, a, 1));
        float out = 0;
        int64_t dom[1] = {N}, one[1] = {1};
        kiln_ir_tensor ins[1] = {tv(x, KILN_F32, 1, dom, NULL)};
        kiln_ir_tensor outs[1] = {tv(&out, KILN_F32, 1, one, NULL)};
        ck_assert_int_eq(run_on(kiln__backend_ref(), &s, 1, dom, 0, ins, outs),
                         KILN_OK);
        /* exact: 1 + 1000/2^27 = 1 + 0x3e8p-27 -> f32, not the 1.0f of a
        ** naive f32 accumulation */
        float exact = (float)(1.0L + 1000.0L / 134217728.0L);
        ck_assert_uint_ne(fbits(exact), 0x3f800000u);
        ck_assert_uint_eq(fbits(out), fbits(exact));
    }
    /* f64 compensated: [1e16, 1, -1e16, 1] sums to exactly 2 */
    double d[4] = {1e16, 1.0, -1e16, 1.0}, dout = 0;
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t a = t_in(&s, KILN_F64);
    t_out(&s, t_red(&s, KILN_OP_SUM, KILN_F64, a, 1));
    int64_t dom[1] = {4}, one[1] = {1};
    kiln_ir_tensor ins[1] = {tv(d, KILN_F64, 1, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(&dout, KILN_F64, 1, one, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
    ck_assert(dout == 2.0);
    /* signs of zero, infinities, NaN */
    double z[2] = {-0.0, -0.0};
    int64_t d2[1] = {2};
    kiln_ir_tensor zi[1] = {tv(z, KILN_F64, 1, d2, NULL)};
    ck_assert_int_eq(run(&s, 1, d2, zi, outs), KILN_OK);
    ck_assert_uint_eq(dbits(dout), 0x8000000000000000ull);
    double inf2[2] = {INFINITY, 1.0};
    kiln_ir_tensor ii[1] = {tv(inf2, KILN_F64, 1, d2, NULL)};
    ck_assert_int_eq(run(&s, 1, d2, ii, outs), KILN_OK);
    ck_assert(dout == INFINITY);
    double infm[2] = {INFINITY, -INFINITY};
    kiln_ir_tensor im[1] = {tv(infm, KILN_F64, 1, d2, NULL)};
    ck_assert_int_eq(run(&s, 1, d2, im, outs), KILN_OK);
    ck_assert(isnan(dout));
}
END_TEST

START_TEST(sum_error_bound_random)
{
    /* Pseudo-random f32 sums of 5000 terms; check the contract bound
    ** against a long double reference (exact for these magnitudes). */
    enum { N = 5000 };
    static float x[N];
    uint64_t st = 0x9e3779b97f4a7c15ull;
    long double exact = 0, abssum = 0;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int64_t)(st >> 40) - (1 << 23)) * 0x1p-20f;
        exact += x[i];
        abssum += fabsl((long double)x[i]);
    }
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t a = t_in(&s, KILN_F32);
    t_out(&s, t_red(&s, KILN_OP_SUM, KILN_F32, a, 1));
    float out = 0;
    int64_t dom[1] = {N}, one[1] = {1};
    kiln_ir_tensor ins[1] = {tv(x, KILN_F32, 1, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(&out, KILN_F32, 1, one, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
    long double bound = (13 + 2) * 0x1p-24L * abssum;
    ck_assert(fabsl((long double)out - exact) <= bound);
    /* ref is much better than the bound: within one f32 rounding */
    ck_assert(ulp32(out, (float)exact) <= 1);
}
END_TEST

START_TEST(int_sum_and_minmax_reduce)
{
    int32_t a[4] = {INT32_MAX, 1, 5, -5};
    int32_t out = 0;
    int64_t dom[1] = {4}, one[1] = {1};
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t x = t_in(&s, KILN_I32);
    t_out(&s, t_red(&s, KILN_OP_SUM, KILN_I32, x, 1));
    kiln_ir_tensor ins[1] = {tv(a, KILN_I32, 1, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(&out, KILN_I32, 1, one, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, ins, outs), KILN_OK);
    ck_assert_int_eq(out, INT32_MIN); /* wraps */
    int64_t l[3] = {INT64_MAX, INT64_MAX, 2}, lo = 0;
    int64_t d3[1] = {3};
    tseg t;
    tseg_init(&t, KILN_SEGK_REDUCTION);
    x = t_in(&t, KILN_I64);
    t_out(&t, t_red(&t, KILN_OP_SUM, KILN_I64, x, 1));
    kiln_ir_tensor li[1] = {tv(l, KILN_I64, 1, d3, NULL)};
    kiln_ir_tensor lout[1] = {tv(&lo, KILN_I64, 1, one, NULL)};
    ck_assert_int_eq(run(&t, 1, d3, li, lout), KILN_OK);
    ck_assert_int_eq(lo, 0); /* 2*(2^63-1) + 2 = 2^64 -> 0 */
    /* max/min over axis 1 of [2,3] for each int dtype */
    int64_t m[6] = {INT64_MIN, -1, 7, 3, 3, INT64_MAX};
    for (int k = 0; k < 2; k++) {
        int op = k ? KILN_OP_RMIN : KILN_OP_RMAX;
        tseg u;
        tseg_init(&u, KILN_SEGK_REDUCTION);
        x = t_in(&u, KILN_I64);
        t_out(&u, t_red(&u, op, KILN_I64, x, 2));
        int64_t r[2];
        int64_t dm[2] = {2, 3}, om[2] = {2, 1};
        kiln_ir_tensor mi[1] = {tv(m, KILN_I64, 2, dm, NULL)};
        kiln_ir_tensor mo[1] = {tv(r, KILN_I64, 2, om, NULL)};
        ck_assert_int_eq(run(&u, 2, dm, mi, mo), KILN_OK);
        ck_assert_int_eq(r[0], k ? INT64_MIN : 7);
        ck_assert_int_eq(r[1], k ? 3 : INT64_MAX);
    }
    int32_t m32[3] = {-4, INT32_MIN, 9};
    for (int k = 0; k < 2; k++) {
        int op = k ? KILN_OP_RMIN : KILN_OP_RMAX;
        tseg u;
        tseg_init(&u, KILN_SEGK_REDUCTION);
        x = t_in(&u, KILN_I32);
        t_out(&u, t_red(&u, op, KILN_I32, x, 1));
        int32_t r = 0;
        kiln_ir_tensor mi[1] = {tv(m32, KILN_I32, 1, d3, NULL)};
        kiln_ir_tensor mo[1] = {tv(&r, KILN_I32, 1, one, NULL)};
        ck_assert_int_eq(run(&u, 1, d3, mi, mo), KILN_OK);
        ck_assert_int_eq(r, k ? INT32_MIN : 9);
    }
}
END_TEST

START_TEST(float_minmax_reduce_nan)
{
    float a[2][4] = {{1.0f, NAN, 3.0f, -1.0f}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY}};
    for (int k = 0; k < 2; k++) {
        int op = k ? KILN_OP_RMIN : KILN_OP_RMAX;
        tseg s;
        tseg_init(&s, KILN_SEGK_REDUCTION);
        int32_t x = t_in(&s, KILN_F32);
        t_out(&s, t_red(&s, op, KILN_F32, x, 2));
        float r[2];
        int64_t dm[2] = {2, 4}, om[2] = {2, 1};
        kiln_ir_tensor ins[1] = {tv(a, KILN_F32, 2, dm, NULL)};
        kiln_ir_tensor outs[1] = {tv(r, KILN_F32, 2, om, NULL)};
        ck_assert_int_eq(run(&s, 2, dm, ins, outs), KILN_OK);
        ck_assert(isnan(r[0]));
        ck_assert(r[1] == -INFINITY);
    }
    double d[3] = {-2.0, 5.0, 0x1p-1074}, r = 0;
    int64_t d3[1] = {3}, one[1] = {1};
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t x = t_in(&s, KILN_F64);
    t_out(&s, t_red(&s, KILN_OP_RMAX, KILN_F64, x, 1));
    kiln_ir_tensor ins[1] = {tv(d, KILN_F64, 1, d3, NULL)};
    kiln_ir_tensor outs[1] = {tv(&r, KILN_F64, 1, one, NULL)};
    ck_assert_int_eq(run(&s, 1, d3, ins, outs), KILN_OK);
    ck_assert(r == 5.0);
}
END_TEST

START_TEST(empty_reductions)
{
    int64_t dom[2] = {3, 0}, od[2] = {3, 1};
    float out[3] = {7, 7, 7};
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t x = t_in(&s, KILN_F32);
    t_out(&s, t_red(&s, KILN_OP_SUM, KILN_F32, x, 2));
    kiln_ir_tensor ins[1] = {tv(NULL, KILN_F32, 2, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(out, KILN_F32, 2, od, NULL)};
    ck_assert_int_eq(run(&s, 2, dom, ins, outs), KILN_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(fbits(out[i]), 0); /* +0 */
    for (int k = 0; k < 2; k++) {
        tseg t;
        tseg_init(&t, KILN_SEGK_REDUCTION);
        x = t_in(&t, KILN_I32);
        t_out(&t, t_red(&t, k ? KILN_OP_RMIN : KILN_OP_RMAX, KILN_I32, x, 2));
        int32_t io[3] = {7, 7, 7};
        kiln_ir_tensor ii[1] = {tv(NULL, KILN_I32, 2, dom, NULL)};
        kiln_ir_tensor oo[1] = {tv(io, KILN_I32, 2, od, NULL)};
        ck_assert_int_eq(run(&t, 2, dom, ii, oo), KILN_ERR_SHAPE);
        ck_assert(io[0] == 7 && io[2] == 7); /* untouched */
    }
    /* empty non-reduced axis: empty result, fine for max */
    int64_t dom2[2] = {0, 4}, od2[2] = {0, 1};
    tseg t;
    tseg_init(&t, KILN_SEGK_REDUCTION);
    x = t_in(&t, KILN_F32);
    t_out(&t, t_red(&t, KILN_OP_RMAX, KILN_F32, x, 2));
    kiln_ir_tensor ii[1] = {tv(NULL, KILN_F32, 2, dom2, NULL)};
    kiln_ir_tensor oo[1] = {tv(NULL, KILN_F32, 2, od2, NULL)};
    ck_assert_int_eq(run(&t, 2, dom2, ii, oo), KILN_OK);
}
END_TEST

START_TEST(reduction_with_producers_and_consumers)
{
    /* out0 = sum(x * y, axis 1) + c   (y broadcast [1,N], c in keepdim form
    ** [M,1] input); out1 = max(x, axis 1) (second REDUCE of the same domain
    ** is not needed: one reduce, plus a consumer). */
    enum { M = 5, N = 1300 }; /* N > block size */
    static float x[M * N], y[N];
    float c[M], out[M];
    for (int i = 0; i < M; i++) {
        c[i] = (float)(i * 1000);
        for (int j = 0; j < N; j++)
            x[i * N + j] = (float)((i + j) % 17) - 8.0f;
    }
    for (int j = 0; j < N; j++)
        y[j] = (float)(j % 3);
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t xi = t_in(&s, KILN_F32), yi = t_in(&s, KILN_F32), ci = t_in(&s, KILN_F32);
    int32_t p = t_op2(&s, KILN_OP_MUL, KILN_F32, xi, yi);
    int32_t r = t_red(&s, KILN_OP_SUM, KILN_F32, p, 2);
    int32_t o = t_op2(&s, KILN_OP_ADD, KILN_F32, r, ci);
    t_out(&s, o);
    t_out(&s, r);
    float rs[M];
    int64_t dom[2] = {M, N}, ys[2] = {1, N}, cs[2] = {M, 1};
    kiln_ir_tensor ins[3] = {tv(x, KILN_F32, 2, dom, NULL), tv(y, KILN_F32, 2, ys, NULL),
                             tv(c, KILN_F32, 2, cs, NULL)};
    kiln_ir_tensor outs[2] = {tv(out, KILN_F32, 2, cs, NULL), tv(rs, KILN_F32, 2, cs, NULL)};
    ck_assert_msg(run(&s, 2, dom, ins, outs) == KILN_OK, "%s", g_err);
    for (int i = 0; i < M; i++) {
        long e = 0;
        for (int j = 0; j < N; j++)
            e += (long)(((i + j) % 17) - 8) * (j % 3);
        ck_assert_msg(rs[i] == (float)e, "row %d: %g vs %ld", i, (double)rs[i], e);
        ck_assert(out[i] == (float)(e + i * 1000));
    }
    /* Beyond the planner's contract but supported: a consumer that
    ** broadcasts the reduced value back over D, (-x) - max(x); -x is
    ** materialised because two groups read it. */
    tseg t;
    tseg_init(&t, KILN_SEGK_REDUCTION);
    xi = t_in(&t, KILN_F32);
    int32_t nx = t_op1(&t, KILN_OP_NEG, KILN_F32, xi);
    int32_t mx = t_red(&t, KILN_OP_RMAX, KILN_F32, xi, 2);
    t_out(&t, t_op2(&t, KILN_OP_SUB, KILN_F32, nx, mx));
    t_out(&t, mx);
    static float sub[M * N];
    float mo[M];
    kiln_ir_tensor tins[1] = {tv(x, KILN_F32, 2, dom, NULL)};
    kiln_ir_tensor touts[2] = {tv(sub, KILN_F32, 2, dom, NULL), tv(mo, KILN_F32, 2, cs, NULL)};
    ck_assert_msg(run(&t, 2, dom, tins, touts) == KILN_OK, "%s", g_err);
    for (int i = 0; i < M; i++) {
        ck_assert(mo[i] == 8.0f);
        for (int j = 0; j < N; j++)
            ck_assert(sub[i * N + j] == -x[i * N + j] - 8.0f);
    }
}
END_TEST

START_TEST(reduce_rank0_and_outer_axis_strided)
{
    /* rank-0 "reduction" over no axes is the identity */
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t x = t_in(&s, KILN_F64);
    t_out(&s, t_red(&s, KILN_OP_SUM, KILN_F64, x, 0));
    double v = -0.0, o = 1;
    kiln_ir_tensor ins[1] = {tv(&v, KILN_F64, 0, NULL, NULL)};
    kiln_ir_tensor outs[1] = {tv(&o, KILN_F64, 0, NULL, NULL)};
    ck_assert_int_eq(run(&s, 0, NULL, ins, outs), KILN_OK);
    ck_assert_uint_eq(dbits(o), 0x8000000000000000ull);
    /* outer-axis sum of a transposed input into a strided output */
    int32_t a[4][3]; /* logical [3,4], storage transposed */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            a[j][i] = i * 10 + j;
    tseg t;
    tseg_init(&t, KILN_SEGK_REDUCTION);
    x = t_in(&t, KILN_I32);
    t_out(&t, t_red(&t, KILN_OP_SUM, KILN_I32, x, 1));
    int32_t out[8];
    for (int i = 0; i < 8; i++)
        out[i] = -9;
    int64_t dom[2] = {3, 4}, st[2] = {1, 3}, os[2] = {1, 4}, ost[2] = {0, 2};
    kiln_ir_tensor ti[1] = {tv(a, KILN_I32, 2, dom, st)};
    kiln_ir_tensor to[1] = {tv(out, KILN_I32, 2, os, ost)};
    ck_assert_int_eq(run(&t, 2, dom, ti, to), KILN_OK);
    for (int j = 0; j < 4; j++) {
        ck_assert_int_eq(out[2 * j], 30 + 3 * j);
        ck_assert_int_eq(out[2 * j + 1], -9);
    }
}
END_TEST

/* -------------------------------------------------------------- matmul */

static kiln_status run_mm(int kind, int dt, const void *a, const int64_t *ast,
                          const void *b, const int64_t *bst, int64_t M,
                          int64_t K, int64_t N, float *out, char *path)
{
    tseg s;
    tseg_init(&s, (uint32_t)kind);
    int32_t x = t_in(&s, dt), y = t_in(&s, dt);
    t_out(&s, t_op2(&s, KILN_OP_MATMUL, KILN_F32, x, y));
    void *state = NULL;
    const kiln_backend *be = kiln__backend_ref();
    ck_assert_int_eq(be->open(0, &state, g_err, sizeof g_err), KILN_OK);
    kiln_ir_segment seg = t_seg(&s);
    kiln_kernel_options ko = default_ko();
    kiln_kernel_out kout;
    kiln_status st = be->compile(state, &seg, &ko, &kout, g_err, sizeof g_err);
    if (st == KILN_OK) {
        snprintf(path, 16, "%s", kout.path);
        int64_t as[2] = {M, K}, bs[2] = {K, N}, os[2] = {M, N};
        kiln_ir_tensor ins[2] = {tv((void *)a, dt, 2, as, ast), tv((void *)b, dt, 2, bs, bst)};
        kiln_ir_tensor outs[1] = {tv(out, KILN_F32, 2, os, NULL)};
        kiln_launch L;
        memset(&L, 0, sizeof L);
        L.struct_size = sizeof L;
        L.rank = 2;
        L.domain[0] = M;
        L.domain[1] = N;
        L.k = K;
        L.inputs = ins;
        L.n_inputs = 2;
        L.outputs = outs;
        L.n_outputs = 1;
        st = be->launch(state, kout.handle, &L, g_err, sizeof g_err);
        be->release(state, kout.handle);
    }
    be->close(state);
    return st;
}

START_TEST(matmul_f32_f16_bf16)
{
    enum { M = 3, K = 5, N = 4 };
    float a[M * K], b[K * N], bt[N * K], out[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)(i % 5) * 0.5f;
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++)
            bt[j * K + k] = b[k * N + j];
    char path[16];
    for (int kind = KILN_SEGK_MATMUL; kind <= KILN_SEGK_MATMUL_FALLBACK; kind += 2) {
        ck_assert_int_eq(run_mm(kind, KILN_F32, a, NULL, b, NULL, M, K, N, out, path), KILN_OK);
        ck_assert_str_eq(path, kind == KILN_SEGK_MATMUL ? "generated" : "ref");
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float e = 0; /* small integers/halves: exact in any order */
                for (int k = 0; k < K; k++)
                    e += a[i * K + k] * b[k * N + j];
                ck_assert(out[i * N + j] == e);
            }
    }
    /* transposed B view */
    int64_t bst[2] = {1, K};
    float out2[M * N];
    ck_assert_int_eq(run_mm(KILN_SEGK_MATMUL, KILN_F32, a, NULL, bt, bst, M, K, N, out2, path), KILN_OK);
    ck_assert_int_eq(memcmp(out, out2, sizeof out), 0);
    /* f16 and bf16 operands: 1.0 and 0.5 patterns */
    uint16_t ha[M * K], hb[K * N], ba[M * K], bb[K * N];
    for (int i = 0; i < M * K; i++) {
        ha[i] = 0x3c00; /* 1.0 */
        ba[i] = 0x3f80;
    }
    for (int i = 0; i < K * N; i++) {
        hb[i] = 0x3800; /* 0.5 */
        bb[i] = 0x3f00;
    }
    ck_assert_int_eq(run_mm(KILN_SEGK_MATMUL_FALLBACK, KILN_F16, ha, NULL, hb, NULL, M, K, N, out, path), KILN_OK);
    for (int i = 0; i < M * N; i++)
        ck_assert(out[i] == 2.5f);
    ck_assert_int_eq(run_mm(KILN_SEGK_MATMUL_FALLBACK, KILN_BF16, ba, NULL, bb, NULL, M, K, N, out, path), KILN_OK);
    for (int i = 0; i < M * N; i++)
        ck_assert(out[i] == 2.5f);
    /* accumulation wider than f32: 1 + 2^-24 * 2 terms... the products
    ** 2^-25 twice are lost in a f32 accumulator but kept here. */
    /* wider accumulation: 1 + 3 * 2^-25 = 1 + 1.5 * 2^-24 rounds up to
    ** 1 + 2^-23, while a f32 accumulator would stay at 1.0 */
    float a1[4] = {1.0f, 0x1p-25f, 0x1p-25f, 0x1p-25f}, b1[4] = {1.0f, 1.0f, 1.0f, 1.0f}, o1;
    ck_assert_int_eq(run_mm(KILN_SEGK_MATMUL, KILN_F32, a1, NULL, b1, NULL, 1, 4, 1, &o1, path), KILN_OK);
    ck_assert_uint_eq(fbits(o1), 0x3f800001);
}
END_TEST

START_TEST(matmul_k0_and_epilogue)
{
    float out[6];
    for (int i = 0; i < 6; i++)
        out[i] = 5;
    char path[16];
    ck_assert_int_eq(run_mm(KILN_SEGK_MATMUL, KILN_F32, NULL, NULL, NULL, NULL, 2, 0, 3, out, path), KILN_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(fbits(out[i]), 0);
    /* epilogue: relu(a @ b + bias[1,N]) */
    tseg s;
    tseg_init(&s, KILN_SEGK_MATMUL_EPILOGUE);
    int32_t x = t_in(&s, KILN_F32), y = t_in(&s, KILN_F32), bias = t_in(&s, KILN_F32);
    int32_t mm = t_op2(&s, KILN_OP_MATMUL, KILN_F32, x, y);
    int32_t ad = t_op2(&s, KILN_OP_ADD, KILN_F32, mm, bias);
    t_out(&s, t_op1(&s, KILN_OP_RELU, KILN_F32, ad));
    t_out(&s, mm);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, -1, 1, 1}, bb[2] = {-3.5f, 0.5f};
    float o[4], m[4];
    int64_t d[2] = {2, 2}, bs[2] = {1, 2};
    kiln_ir_tensor ins[3] = {tv(a, KILN_F32, 2, d, NULL), tv(b, KILN_F32, 2, d, NULL),
                             tv(bb, KILN_F32, 2, bs, NULL)};
    kiln_ir_tensor outs[2] = {tv(o, KILN_F32, 2, d, NULL), tv(m, KILN_F32, 2, d, NULL)};
    ck_assert_msg(run_on(kiln__backend_ref(), &s, 2, d, 2, ins, outs) == KILN_OK, "%s", g_err);
    /* a@b = [[3,1],[7,1]] */
    ck_assert(m[0] == 3 && m[1] == 1 && m[2] == 7 && m[3] == 1);
    ck_assert(o[0] == 0 && o[1] == 1.5f && o[2] == 3.5f && o[3] == 1.5f);
}
END_TEST

/* ------------------------------------------------------ errors, faults */

START_TEST(identity_and_compile_errors)
{
    const kiln_backend *b = kiln__backend_ref();
    ck_assert_uint_eq(b->abi_version, KILN_BACKEND_ABI_VERSION);
    ck_assert_uint_eq(b->struct_size, sizeof(kiln_backend));
    ck_assert_str_eq(b->name, "ref");
    ck_assert_int_eq(b->memory, KILN_MEM_HOST);
    ck_assert_ptr_null(b->mem_alloc);
    void *state;
    ck_assert_int_eq(b->open(0, &state, g_err, sizeof g_err), KILN_OK);
    char id[128];
    kiln_kernel_options ko = default_ko();
    ck_assert_int_eq(b->identity(state, &ko, id, sizeof id), KILN_OK);
    ck_assert_str_eq(id, "ref kiln-" KILN_VERSION_STRING " contract=1");
    ko.contract = 0;
    ko.fast_math = 1; /* not part of the identity */
    ck_assert_int_eq(b->identity(state, &ko, id, sizeof id), KILN_OK);
    ck_assert_str_eq(id, "ref kiln-" KILN_VERSION_STRING " contract=0");
    ck_assert_int_eq(b->identity(state, &ko, id, 5), KILN_ERR_LIMIT);

    kiln_kernel_out out;
    /* f16 arithmetic is not accepted */
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_F16);
    t_out(&s, t_op2(&s, KILN_OP_ADD, KILN_F16, x, x));
    kiln_ir_segment seg = t_seg(&s);
    ck_assert_int_eq(b->compile(state, &seg, &ko, &out, g_err, sizeof g_err), KILN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(g_err, "f16"));
    /* a forward reference */
    tseg_init(&s, KILN_SEGK_POINTWISE);
    x = t_in(&s, KILN_F32);
    int32_t n = t_op1(&s, KILN_OP_NEG, KILN_F32, x);
    s.n[n].args[0] = 5;
    t_out(&s, n);
    seg = t_seg(&s);
    ck_assert_int_eq(b->compile(state, &seg, &ko, &out, g_err, sizeof g_err), KILN_ERR_INVALID_ARGUMENT);
    /* broadcast nodes must be gone */
    tseg_init(&s, KILN_SEGK_POINTWISE);
    x = t_in(&s, KILN_F32);
    t_out(&s, t_op1(&s, KILN_OP_BROADCAST, KILN_F32, x));
    seg = t_seg(&s);
    ck_assert_int_eq(b->compile(state, &seg, &ko, &out, g_err, sizeof g_err), KILN_ERR_UNSUPPORTED);
    /* comparison must give bool */
    tseg_init(&s, KILN_SEGK_POINTWISE);
    x = t_in(&s, KILN_F32);
    t_out(&s, t_op2(&s, KILN_OP_LT, KILN_F32, x, x));
    seg = t_seg(&s);
    ck_assert_int_eq(b->compile(state, &seg, &ko, &out, g_err, sizeof g_err), KILN_ERR_UNSUPPORTED);
    /* mixed operand dtypes */
    tseg_init(&s, KILN_SEGK_POINTWISE);
    x = t_in(&s, KILN_F32);
    int32_t y = t_in(&s, KILN_F64);
    t_out(&s, t_op2(&s, KILN_OP_ADD, KILN_F32, x, y));
    seg = t_seg(&s);
    ck_assert_int_eq(b->compile(state, &seg, &ko, &out, g_err, sizeof g_err), KILN_ERR_UNSUPPORTED);
    /* input index out of range, bad output index */
    tseg_init(&s, KILN_SEGK_POINTWISE);
    x = t_in(&s, KILN_F32);
    s.n[x].io = 3;
    t_out(&s, x);
    seg = t_seg(&s);
    ck_assert_int_eq(b->compile(state, &seg, &ko, &out, g_err, sizeof g_err), KILN_ERR_INVALID_ARGUMENT);
    tseg_init(&s, KILN_SEGK_POINTWISE);
    x = t_in(&s, KILN_F32);
    t_out(&s, 4);
    seg = t_seg(&s);
    ck_assert_int_eq(b->compile(state, &seg, &ko, &out, g_err, sizeof g_err), KILN_ERR_INVALID_ARGUMENT);
    b->close(state);
}
END_TEST

START_TEST(launch_errors_leave_outputs)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_POINTWISE);
    int32_t x = t_in(&s, KILN_F32);
    t_out(&s, t_op1(&s, KILN_OP_NEG, KILN_F32, x));
    float in[4] = {1, 2, 3, 4}, out[4] = {9, 9, 9, 9};
    int64_t dom[1] = {4}, d3[1] = {3};
    kiln_ir_tensor bad_dt[1] = {tv(in, KILN_F64, 1, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(out, KILN_F32, 1, dom, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, bad_dt, outs), KILN_ERR_DTYPE);
    kiln_ir_tensor bad_sz[1] = {tv(in, KILN_F32, 1, d3, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, bad_sz, outs), KILN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(g_err, "input 0"));
    kiln_ir_tensor ok_in[1] = {tv(in, KILN_F32, 1, dom, NULL)};
    kiln_ir_tensor bad_out[1] = {tv(out, KILN_F32, 1, d3, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, ok_in, bad_out), KILN_ERR_SHAPE);
    int64_t d2[2] = {4, 1};
    kiln_ir_tensor bad_rank[1] = {tv(in, KILN_F32, 2, d2, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, bad_rank, outs), KILN_ERR_SHAPE);
    /* an output of size 1 where the domain has 4 is not a broadcast */
    int64_t one[1] = {1};
    kiln_ir_tensor out1[1] = {tv(out, KILN_F32, 1, one, NULL)};
    ck_assert_int_eq(run(&s, 1, dom, ok_in, out1), KILN_ERR_SHAPE);
    for (int i = 0; i < 4; i++)
        ck_assert(out[i] == 9);
    int64_t neg[1] = {-1};
    ck_assert_int_eq(run(&s, 1, neg, ok_in, outs), KILN_ERR_SHAPE);
}
END_TEST

START_TEST(fault_injection_compile_launch)
{
    /* A reduction segment with a consumer and a materialised value. */
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t x = t_in(&s, KILN_F64);
    int32_t e = t_op1(&s, KILN_OP_EXP, KILN_F64, x);
    int32_t r = t_red(&s, KILN_OP_SUM, KILN_F64, e, 2);
    t_out(&s, t_op1(&s, KILN_OP_LOG, KILN_F64, r));
    const kiln_backend *b = kiln__backend_ref();
    kiln_ir_segment seg = t_seg(&s);
    kiln_kernel_options ko = default_ko();
    double in[6] = {0, 0, 0, 1, 1, 1}, out[2];
    int64_t dom[2] = {2, 3}, os[2] = {2, 1};
    kiln_ir_tensor ins[1] = {tv(in, KILN_F64, 2, dom, NULL)};
    kiln_ir_tensor outs[1] = {tv(out, KILN_F64, 2, os, NULL)};
    int saw_ok = 0, fails = 0;
    for (long n = 0; n < 200 && !saw_ok; n++) {
        void *state = NULL;
        kiln__fault_after(n);
        kiln_status st = b->open(0, &state, g_err, sizeof g_err);
        kiln_kernel_out ko_out;
        if (st == KILN_OK)
            st = b->compile(state, &seg, &ko, &ko_out, g_err, sizeof g_err);
        if (st == KILN_OK) {
            kiln_launch L;
            memset(&L, 0, sizeof L);
            L.struct_size = sizeof L;
            L.rank = 2;
            L.domain[0] = 2;
            L.domain[1] = 3;
            L.inputs = ins;
            L.n_inputs = 1;
            L.outputs = outs;
            L.n_outputs = 1;
            out[0] = out[1] = -7;
            st = b->launch(state, ko_out.handle, &L, g_err, sizeof g_err);
            if (st != KILN_OK)
                ck_assert(out[0] == -7 && out[1] == -7);
            b->release(state, ko_out.handle);
        }
        if (state != NULL)
            b->close(state);
        kiln__fault_after(-1);
        if (st == KILN_OK)
            saw_ok = 1;
        else {
            ck_assert_int_eq(st, KILN_ERR_NO_MEMORY);
            fails++;
        }
    }
    ck_assert(saw_ok);
    ck_assert_int_ge(fails, 5);
    ck_assert(fabs(out[0] - log(3.0)) < 1e-15);
    ck_assert(fabs(out[1] - log(3.0 * exp(1.0))) < 1e-15);
}
END_TEST

/* ------------------------------------------------------------ threads */

/* One compiled reduction kernel launched concurrently from several threads
** (the kernel cache shares handles between threads): every launch must
** see only its own inputs and scratch. */
typedef struct thr_arg {
    const kiln_backend *b;
    void *state;
    void *handle;
    int id;
    int bad;
} thr_arg;

static void *thr_main(void *p)
{
    thr_arg *a = p;
    enum { R = 3, C = 1500 };
    static _Thread_local float x[R * C];
    float out[R], row[R];
    for (int it = 0; it < 40; it++) {
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++)
                x[i * C + j] = (float)((a->id * 7 + it + i + j) % 13);
        int64_t dom[2] = {R, C}, os[2] = {R, 1};
        kiln_ir_tensor ins[1] = {tv(x, KILN_F32, 2, dom, NULL)};
        kiln_ir_tensor outs[2] = {tv(out, KILN_F32, 2, os, NULL), tv(row, KILN_F32, 2, os, NULL)};
        kiln_launch L;
        memset(&L, 0, sizeof L);
        L.struct_size = sizeof L;
        L.rank = 2;
        L.domain[0] = R;
        L.domain[1] = C;
        L.inputs = ins;
        L.n_inputs = 1;
        L.outputs = outs;
        L.n_outputs = 2;
        char err[256];
        if (a->b->launch(a->state, a->handle, &L, err, sizeof err) != KILN_OK) {
            a->bad++;
            continue;
        }
        for (int i = 0; i < R; i++) {
            long e = 0;
            for (int j = 0; j < C; j++)
                e += (a->id * 7 + it + i + j) % 13;
            if (out[i] != (float)e || row[i] != (float)(2 * e))
                a->bad++;
        }
    }
    return NULL;
}

START_TEST(threads_shared_kernel)
{
    tseg s;
    tseg_init(&s, KILN_SEGK_REDUCTION);
    int32_t x = t_in(&s, KILN_F32);
    int32_t r = t_red(&s, KILN_OP_SUM, KILN_F32, x, 2);
    t_out(&s, r);
    t_out(&s, t_op2(&s, KILN_OP_ADD, KILN_F32, r, r));
    const kiln_backend *b = kiln__backend_ref();
    void *state;
    ck_assert_int_eq(b->open(0, &state, g_err, sizeof g_err), KILN_OK);
    kiln_ir_segment seg = t_seg(&s);
    kiln_kernel_options ko = default_ko();
    kiln_kernel_out kout;
    ck_assert_int_eq(b->compile(state, &seg, &ko, &kout, g_err, sizeof g_err), KILN_OK);
    enum { T = 4 };
    pthread_t th[T];
    thr_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (thr_arg){b, state, kout.handle, i, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, thr_main, &args[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].bad, 0);
    }
    b->release(state, kout.handle);
    b->close(state);
}
END_TEST

Suite *threads_ref_suite(void)
{
    Suite *s = suite_create("threads_ref");
    TCase *tc = tcase_create("concurrent");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, threads_shared_kernel);
    suite_add_tcase(s, tc);
    return s;
}

Suite *ref_suite(void)
{
    Suite *s = suite_create("ref");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, f32_arith_bit_exact);
    tcase_add_test(tc, f32_max_min_nan);
    tcase_add_test(tc, f64_arith_known);
    tcase_add_test(tc, fma_vs_separate_rounding);
    tcase_add_test(tc, f32_unary_exact_ops);
    tcase_add_test(tc, f32_transcendentals_within_bound);
    tcase_add_test(tc, f64_unary_ops);
    tcase_add_test(tc, int_ops_wrap);
    tcase_add_test(tc, compare_logic_where);
    tcase_add_test(tc, remaining_op_dtype_pairs);
    suite_add_tcase(s, tc);
    TCase *tcc = tcase_create("casts");
    tcase_set_timeout(tcc, 60);
    tcase_add_test(tcc, cast_to_half_ties_even);
    tcase_add_test(tcc, cast_no_double_rounding);
    tcase_add_test(tcc, cast_int_to_float);
    tcase_add_test(tcc, cast_float_to_int_saturate);
    tcase_add_test(tcc, cast_widening_exact);
    tcase_add_test(tcc, cast_sweep_vs_independent_encoder);
    tcase_add_test(tcc, cast_matrix_all_pairs);
    suite_add_tcase(s, tcc);
    TCase *tv_ = tcase_create("views");
    tcase_add_test(tv_, strided_and_broadcast_views);
    tcase_add_test(tv_, large_domain_several_blocks);
    tcase_add_test(tv_, rank0_and_empty_domains);
    suite_add_tcase(s, tv_);
    TCase *tr = tcase_create("reductions");
    tcase_set_timeout(tr, 60);
    tcase_add_test(tr, sum_axes_keepdim);
    tcase_add_test(tr, sum_accuracy_f32_f64);
    tcase_add_test(tr, sum_error_bound_random);
    tcase_add_test(tr, int_sum_and_minmax_reduce);
    tcase_add_test(tr, float_minmax_reduce_nan);
    tcase_add_test(tr, empty_reductions);
    tcase_add_test(tr, reduction_with_producers_and_consumers);
    tcase_add_test(tr, reduce_rank0_and_outer_axis_strided);
    suite_add_tcase(s, tr);
    TCase *tm = tcase_create("matmul");
    tcase_add_test(tm, matmul_f32_f16_bf16);
    tcase_add_test(tm, matmul_k0_and_epilogue);
    suite_add_tcase(s, tm);
    TCase *te = tcase_create("errors");
    tcase_set_timeout(te, 60);
    tcase_add_test(te, identity_and_compile_errors);
    tcase_add_test(te, launch_errors_leave_outputs);
    tcase_add_test(te, fault_injection_compile_launch);
    suite_add_tcase(s, te);
    return s;
}
