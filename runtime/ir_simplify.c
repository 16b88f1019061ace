/*
** ir_simplify.c -- the bit-exact simplification passes (ir_simplify.h):
** constant folding, identities, strength reduction and common
** subexpressions over a working copy of a segment's nodes.  What each pass
** may rewrite, and why the result is the device's bit for bit, is the
** header comment of ir_simplify.h; try_fold() holds the host-equals-device
** rule in code.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir_simplify.h"

static int is_float(int dt) { return dt == KILN_F32 || dt == KILN_F64; }
static int is_int(int dt) { return dt == KILN_I32 || dt == KILN_I64; }
static int32_t res(const kiln_ir_work *w, int32_t i)
{
    while (i >= 0 && w->alias[i] != i)
        i = w->alias[i];
    return i;
}

int32_t kiln__ir_res(const kiln_ir_work *w, int32_t i) { return res(w, i); }

/* ---------------------------------------------------- constant values */

static float f32v(uint64_t b)
{
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double f64v(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}
static uint64_t f32b(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t f64b(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
/* Canonical bits of a value of dtype dt (masks junk above the width). */
static uint64_t canon(int dt, uint64_t b)
{
    switch (dt) {
    case KILN_BOOL: return b != 0;
    case KILN_I32: case KILN_F32: return b & 0xffffffffu;
    case KILN_F16: case KILN_BF16: return b & 0xffffu;
    default: return b;
    }
}
uint64_t kiln__ir_canon(int dtype, uint64_t bits) { return canon(dtype, bits); }
static double fval(int dt, uint64_t b)
{
    return dt == KILN_F32 ? (double)f32v(b) : f64v(b);
}
static int64_t ival(int dt, uint64_t b)
{
    return dt == KILN_I32 ? (int64_t)(int32_t)(uint32_t)b
                          : dt == KILN_BOOL ? (int64_t)(b != 0) : (int64_t)b;
}
static uint64_t ibits(int dt, int64_t v)
{
    return dt == KILN_I32 ? (uint64_t)(uint32_t)v : (uint64_t)v;
}

/* ------------------------------------------------------------ passes */

static int cst(const kiln_ir_work *w, int32_t a, uint64_t *bits)
{
    if (a < 0)
        return 0;
    a = res(w, a);
    if (w->n[a].op != KILN_OP_CONST)
        return 0;
    *bits = canon(w->n[a].dtype, w->n[a].bits);
    return 1;
}

static void make_const(kiln_ir_work *w, int32_t i, uint64_t bits)
{
    kiln_ir_node *x = &w->n[i];
    x->op = KILN_OP_CONST;
    x->bits = canon(x->dtype, bits);
    x->args[0] = x->args[1] = x->args[2] = -1;
}

/* int/float cast semantics of the generated code, on the host. */
static int64_t sat_i(double x, int to)
{
    if (x != x)
        return 0;
    if (to == KILN_I32) {
        if (x >= 2147483648.0) return INT32_MAX;
        if (x <= -2147483649.0) return INT32_MIN;
    } else {
        if (x >= 9223372036854775808.0) return INT64_MAX;
        if (x <= -9223372036854775808.0) return INT64_MIN;
    }
    return (int64_t)x;
}

/* Constant folding: only where the host computes exactly what the device
** does (see the header comment).  Returns 1 when node i became a CONST. */
static int try_fold(kiln_ir_work *w, int32_t i, int fm)
{
    kiln_ir_node *x = &w->n[i];
    int ar = x->args[0] >= 0 ? w->n[res(w, x->args[0])].dtype : -1;
    uint64_t a = 0, b = 0, c = 0;
    int na = 0;
    for (int k = 0; k < 3; k++) {
        if (x->args[k] < 0)
            continue;
        uint64_t *dst = k == 0 ? &a : k == 1 ? &b : &c;
        if (!cst(w, x->args[k], dst))
            return 0;
        na++;
    }
    if (na == 0)
        return 0;
    int op = x->op;
    if (op == KILN_OP_WHERE) {
        make_const(w, i, a ? b : c);
        return 1;
    }
    if (ar == KILN_F16 || ar == KILN_BF16)
        return 0;
    if (op == KILN_OP_NEG && is_float(ar)) {
        make_const(w, i, a ^ (ar == KILN_F32 ? 0x80000000ull : 0x8000000000000000ull));
        return 1;
    }
    if (op == KILN_OP_ABS && is_float(ar)) {
        make_const(w, i, a & (ar == KILN_F32 ? 0x7fffffffull : 0x7fffffffffffffffull));
        return 1;
    }
    if (is_int(ar) || ar == KILN_BOOL) {
        int64_t p = ival(ar, a), q = ival(ar, b);
        uint64_t up = (uint64_t)p, uq = (uint64_t)q, r;
        int rd = x->dtype;
        switch (op) {
        case KILN_OP_NEG: r = 0 - up; break;
        case KILN_OP_ABS: r = p < 0 ? 0 - up : up; break;
        case KILN_OP_RELU: r = p > 0 ? up : 0; break;
        case KILN_OP_ADD: r = up + uq; break;
        case KILN_OP_SUB: r = up - uq; break;
        case KILN_OP_MUL: r = up * uq; break;
        case KILN_OP_MAXIMUM: r = p > q ? up : uq; break;
        case KILN_OP_MINIMUM: r = p < q ? up : uq; break;
        case KILN_OP_EQ: r = p == q; break;
        case KILN_OP_NE: r = p != q; break;
        case KILN_OP_LT: r = p < q; break;
        case KILN_OP_LE: r = p <= q; break;
        case KILN_OP_GT: r = p > q; break;
        case KILN_OP_GE: r = p >= q; break;
        case KILN_OP_AND: r = (p != 0) && (q != 0); break;
        case KILN_OP_OR: r = (p != 0) || (q != 0); break;
        case KILN_OP_NOT: r = p == 0; break;
        case KILN_OP_CAST:
            if (rd == KILN_BOOL) r = p != 0;
            else if (is_int(rd)) r = ibits(rd, p); /* wraps like the device */
            else if (rd == KILN_F32 && !fm) r = f32b((float)p);
            else if (rd == KILN_F64 && !fm) r = f64b((double)p);
            else return 0;
            break;
        default: return 0;
        }
        if (rd == KILN_I32)
            r = (uint64_t)(uint32_t)r;
        make_const(w, i, r);
        return 1;
    }
    if (!is_float(ar) || fm)
        return 0; /* fast_math: flush-to-zero makes host != device */
    double p = fval(ar, a), q = fval(ar, b), s = fval(ar, c);
    if (p != p || (na > 1 && q != q) || (na > 2 && s != s))
        return 0; /* NaN payloads are not reproduced exactly */
    int f32 = ar == KILN_F32;
    double r;
    int isbool = 0, bres = 0;
    switch (op) {
    case KILN_OP_ADD: r = f32 ? (double)((float)p + (float)q) : p + q; break;
    case KILN_OP_SUB: r = f32 ? (double)((float)p - (float)q) : p - q; break;
    case KILN_OP_MUL: r = f32 ? (double)((float)p * (float)q) : p * q; break;
    case KILN_OP_DIV: r = f32 ? (double)((float)p / (float)q) : p / q; break;
    case KILN_OP_FMA: r = f32 ? (double)fmaf((float)p, (float)q, (float)s) : fma(p, q, s); break;
    case KILN_OP_SQRT: r = f32 ? (double)sqrtf((float)p) : sqrt(p); break;
    case KILN_OP_RECIPROCAL: r = f32 ? (double)(1.0f / (float)p) : 1.0 / p; break;
    case KILN_OP_FLOOR: r = floor(p); break;
    case KILN_OP_CEIL: r = ceil(p); break;
    case KILN_OP_RELU: r = p > 0 ? p : 0.0; break;
    case KILN_OP_MAXIMUM: r = p > q ? p : q; break;
    case KILN_OP_MINIMUM: r = p < q ? p : q; break;
    case KILN_OP_EQ: isbool = 1; bres = p == q; r = 0; break;
    case KILN_OP_NE: isbool = 1; bres = p != q; r = 0; break;
    case KILN_OP_LT: isbool = 1; bres = p < q; r = 0; break;
    case KILN_OP_LE: isbool = 1; bres = p <= q; r = 0; break;
    case KILN_OP_GT: isbool = 1; bres = p > q; r = 0; break;
    case KILN_OP_GE: isbool = 1; bres = p >= q; r = 0; break;
    case KILN_OP_CAST: {
        int rd = x->dtype;
        if (rd == KILN_BOOL) { make_const(w, i, p != 0); return 1; }
        if (is_int(rd)) { make_const(w, i, ibits(rd, sat_i(p, rd))); return 1; }
        if (rd == KILN_F32) { make_const(w, i, f32b((float)p)); return 1; }
        if (rd == KILN_F64) { make_const(w, i, f64b(p)); return 1; }
        return 0;
    }
    default: return 0; /* transcendentals are never folded */
    }
    if (isbool) {
        make_const(w, i, (uint64_t)bres);
        return 1;
    }
    if (r != r)
        return 0;
    /* max/min of +-0 and relu(-0) keep the device's choice: skip zeros */
    if ((op == KILN_OP_MAXIMUM || op == KILN_OP_MINIMUM || op == KILN_OP_RELU) &&
        r == 0)
        return 0;
    make_const(w, i, f32 ? f32b((float)r) : f64b(r));
    return 1;
}

static int is_const_val(const kiln_ir_work *w, int32_t a, int dt, double v)
{
    uint64_t b;
    if (!cst(w, a, &b))
        return 0;
    if (is_float(dt)) {
        uint64_t want = dt == KILN_F32 ? f32b((float)v) : f64b(v);
        return b == want; /* bitwise: -0 and +0 differ */
    }
    return ival(dt, b) == (int64_t)v;
}

/* Identities (value-preserving).  Returns 1 when node i was aliased or
** turned into a constant. */
static int try_identity(kiln_ir_work *w, int32_t i, int fm)
{
    kiln_ir_node *x = &w->n[i];
    int32_t a = x->args[0] >= 0 ? res(w, x->args[0]) : -1;
    int32_t b = x->args[1] >= 0 ? res(w, x->args[1]) : -1;
    int32_t c = x->args[2] >= 0 ? res(w, x->args[2]) : -1;
    int dt = a >= 0 ? w->n[a].dtype : -1;
    int fl = is_float(dt);
    int fok = fl && !fm; /* no flush-to-zero in play */
    int iok = is_int(dt);
    uint64_t cb;
    switch (x->op) {
    case KILN_OP_WHERE:
        if (cst(w, a, &cb)) { w->alias[i] = cb ? b : c; return 1; }
        if (b == c) { w->alias[i] = b; return 1; }
        return 0;
    case KILN_OP_NEG:
        if (w->n[a].op == KILN_OP_NEG) { w->alias[i] = res(w, w->n[a].args[0]); return 1; }
        return 0;
    case KILN_OP_NOT:
        if (w->n[a].op == KILN_OP_NOT) { w->alias[i] = res(w, w->n[a].args[0]); return 1; }
        return 0;
    case KILN_OP_CAST:
        if (x->dtype == dt) { w->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_MAXIMUM: case KILN_OP_MINIMUM:
        if (a == b && (iok || fl)) { w->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_ADD:
        if ((iok && is_const_val(w, b, dt, 0)) || (fok && is_const_val(w, b, dt, -0.0))) { w->alias[i] = a; return 1; }
        if ((iok && is_const_val(w, a, dt, 0)) || (fok && is_const_val(w, a, dt, -0.0))) { w->alias[i] = b; return 1; }
        return 0;
    case KILN_OP_SUB:
        if ((iok || fok) && is_const_val(w, b, dt, 0.0)) { w->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_MUL:
        if ((iok || fok) && is_const_val(w, b, dt, 1)) { w->alias[i] = a; return 1; }
        if ((iok || fok) && is_const_val(w, a, dt, 1)) { w->alias[i] = b; return 1; }
        if (iok && (is_const_val(w, a, dt, 0) || is_const_val(w, b, dt, 0))) { make_const(w, i, 0); return 1; }
        return 0;
    case KILN_OP_DIV:
        if (fok && is_const_val(w, b, dt, 1)) { w->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_AND:
        if (cst(w, b, &cb)) { if (cb) w->alias[i] = a; else make_const(w, i, 0); return 1; }
        if (cst(w, a, &cb)) { if (cb) w->alias[i] = b; else make_const(w, i, 0); return 1; }
        if (a == b) { w->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_OR:
        if (cst(w, b, &cb)) { if (!cb) w->alias[i] = a; else make_const(w, i, 1); return 1; }
        if (cst(w, a, &cb)) { if (!cb) w->alias[i] = b; else make_const(w, i, 1); return 1; }
        if (a == b) { w->alias[i] = a; return 1; }
        return 0;
    default:
        return 0;
    }
}

/* Exact strength reductions on f32/f64: x*2 -> x+x; x/(+-2^k) -> x*(+-2^-k)
** when 2^-k is a normal number. */
static void try_strength(kiln_ir_work *w, int32_t i)
{
    kiln_ir_node *x = &w->n[i];
    if (!is_float(x->dtype))
        return;
    int dt = x->dtype;
    int32_t a = x->args[0] >= 0 ? res(w, x->args[0]) : -1;
    int32_t b = x->args[1] >= 0 ? res(w, x->args[1]) : -1;
    if (x->op == KILN_OP_MUL) {
        if (is_const_val(w, b, dt, 2.0)) { x->op = KILN_OP_ADD; x->args[1] = a; x->args[0] = a; }
        else if (is_const_val(w, a, dt, 2.0)) { x->op = KILN_OP_ADD; x->args[0] = b; x->args[1] = b; }
        return;
    }
    uint64_t cb;
    if (x->op != KILN_OP_DIV || !cst(w, b, &cb) || w->nn >= w->cap)
        return;
    double d = fval(dt, cb);
    int e;
    double m = frexp(d, &e); /* d = m * 2^e, |m| in [0.5, 1) */
    if (d == 0 || d != d || fabs(m) != 0.5 || isinf(d))
        return;
    double r = 1.0 / d; /* exact: a power of two */
    double minnorm = dt == KILN_F32 ? 0x1p-126 : 0x1p-1022;
    double maxv = dt == KILN_F32 ? 0x1p127 : 0x1p1023;
    if (fabs(r) < minnorm || fabs(r) > maxv || fabs(d) < minnorm)
        return;
    kiln_ir_node *k = &w->n[w->nn];
    memset(k, 0, sizeof *k);
    k->op = KILN_OP_CONST;
    k->dtype = (uint8_t)dt;
    k->args[0] = k->args[1] = k->args[2] = -1;
    k->io = -1;
    k->bits = dt == KILN_F32 ? f32b((float)r) : f64b(r);
    w->alias[w->nn] = (int32_t)w->nn;
    x = &w->n[i];
    x->op = KILN_OP_MUL;
    x->args[1] = (int32_t)w->nn;
    w->nn++;
}

static int same_node(const kiln_ir_node *p, const kiln_ir_node *q)
{
    return p->op == q->op && p->dtype == q->dtype && p->rank == q->rank &&
           p->args[0] == q->args[0] && p->args[1] == q->args[1] &&
           p->args[2] == q->args[2] && p->axes == q->axes &&
           p->flags == q->flags && p->io == q->io &&
           (p->op != KILN_OP_CONST || p->bits == q->bits);
}

void kiln__ir_simplify(kiln_ir_work *w, const kiln_kernel_options *ko)
{
    const uint64_t off = ko->simplify_off;
    const int fm = ko->fast_math;
    uint32_t orig = w->nn;
    for (uint32_t i = 0; i < orig; i++) {
        kiln_ir_node *x = &w->n[i];
        for (int k = 0; k < 3; k++)
            if (x->args[k] >= 0)
                x->args[k] = res(w, x->args[k]);
        if (x->op == KILN_OP_CONST || kiln__op_is_reduce(x->op) || x->op == KILN_OP_MATMUL)
            continue;
        if (x->op != KILN_OP_INPUT) {
            if (kiln__ir_pass_on(off, KILN_SP_FOLD) && try_fold(w, (int32_t)i, fm))
                continue;
            if (kiln__ir_pass_on(off, KILN_SP_IDENTITY) &&
                try_identity(w, (int32_t)i, fm))
                continue;
            if (kiln__ir_pass_on(off, KILN_SP_STRENGTH))
                try_strength(w, (int32_t)i);
        }
        if (kiln__ir_pass_on(off, KILN_SP_CSE)) {
            for (uint32_t j = 0; j < i; j++) {
                if (w->alias[j] == (int32_t)j && same_node(&w->n[j], &w->n[i])) {
                    w->alias[i] = (int32_t)j;
                    break;
                }
            }
        }
    }
}

void kiln__ir_simplify_text(uint64_t off, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    buf[0] = '\0';
    uint64_t all = ((uint64_t)1 << KILN_SP_COUNT) - 1u;
    if ((off & all) == all) {
        snprintf(buf, cap, "all");
        return;
    }
    size_t used = 0;
    for (int i = 0; i < KILN_SP_COUNT; i++)
        if (off >> i & 1u) {
            int n = snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
                             kiln__simplify_passes[i]);
            if (n < 0 || (size_t)n >= cap - used)
                return;
            used += (size_t)n;
        }
}
