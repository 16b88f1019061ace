/*
** test_plan.c -- the planner's segment limits (docs/runtime.md, "Segment
** limits"; issue 11): any number of fusion inputs and outputs, with every
** segment within KILN_SEGMENT_MAX_VIEWS of its rank and every computed
** value within KILN__PLAN_MAX_CONE operations of its cone.  Fusions past a
** limit are split, never rejected and never handed to a backend whole:
** each test checks the plan's segments (and that the CUDA code generator
** accepts each of them), then the values on ref against values computed
** here.  Also the planner's size on the alternating-reduction pattern that
** grew quadratically, and the signature flags of inputs and outputs past
** position 32.  Rules 1-5 of plan.c's header each have golden plan dumps
** (the text of dump=fusion_ir, plus each segment's contracted variant),
** checked by hand against the rule they pin.
*/
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "backends/cuda_codegen.h"
#include "exec_util.h"

/* ------------------------------------------------------------ helpers */

/* Input layouts of the many-input fusions (rank 2, domain [R, C]). */
enum { L_DENSE, L_ROW, L_COL, L_BCAST, L_TRANS, L_ZERO, L_COUNT };
#define R 3
#define C 5

static const char *layout_decl(int l)
{
    switch (l) {
    case L_ROW: return "[1, ?]";
    case L_COL: return "[?, 1]";
    case L_BCAST: return "[?]";
    default: return "[?, ?]";
    }
}

/* Build the plan of fusion text kf for inputs whose signature flags are
** `flags` (one per input; outputs aligned), under enable item `en`. */
static kiln__plan *plan_of(const kiln_fusion *f, const uint8_t *flags, const char *en)
{
    struct kiln_options o;
    memset(&o, 0, sizeof o);
    if (en != NULL)
        ck_assert_int_eq(kiln__options_apply_item(&o, KILN_SET_ENABLE, en, 0), KILN_OK);
    uint32_t ni = f->n_inputs, no = f->n_outputs;
    uint8_t *bits = calloc(ni + no + 1, 1);
    ck_assert_ptr_nonnull(bits);
    for (uint32_t i = 0; i < ni; i++)
        bits[i] = flags ? flags[i] : (uint8_t)(KILN__SIG_CONTIG | KILN__SIG_ALIGN16);
    for (uint32_t j = 0; j < no; j++)
        bits[ni + j] = KILN__SIG_ALIGN16;
    kiln__sig sig = {bits, bits + ni, 0};
    kiln__plan *p = NULL;
    kiln_status s = kiln__plan_build(f, &o, NULL, &sig, &p);
    ck_assert_msg(s == KILN_OK, "plan: %s", kiln_last_error());
    free(bits);
    return p;
}

/* Distinct computed nodes in the cone of node w of ir. */
static uint32_t cone_size(const kiln__segir *ir, uint32_t w, uint8_t *seen)
{
    memset(seen, 0, ir->n_nodes);
    uint32_t *stack = malloc(ir->n_nodes * sizeof *stack);
    ck_assert_ptr_nonnull(stack);
    uint32_t sp = 0, n = 0;
    stack[sp++] = w;
    seen[w] = 1;
    while (sp > 0) {
        const kiln_ir_node *x = &ir->nodes[stack[--sp]];
        if (x->op == KILN_OP_INPUT || x->op == KILN_OP_CONST)
            continue;
        n++;
        for (int k = 0; k < 3; k++)
            if (x->args[k] >= 0 && !seen[x->args[k]]) {
                seen[x->args[k]] = 1;
                stack[sp++] = (uint32_t)x->args[k];
            }
    }
    free(stack);
    return n;
}

/* Every segment within the limits, and accepted by the CUDA generator
** (which rejects a segment past KILN_SEGMENT_MAX_VIEWS).  Returns the
** total IR nodes of the plan (variant 0). */
static size_t check_limits(const kiln__plan *p, const char *what)
{
    size_t total = 0;
    kiln_kernel_options ko;
    memset(&ko, 0, sizeof ko);
    ko.struct_size = sizeof ko;
    ko.contract = 1;
    ko.sass = 1;
    ko.canonical = "";
    for (uint32_t s = 0; s < p->n_segs; s++) {
        const kiln__pseg *ps = &p->segs[s];
        uint32_t views = ps->n_leaves + ps->n_outs;
        ck_assert_msg(views <= KILN_SEGMENT_MAX_VIEWS(ps->dom_rank),
                      "%s: segment %u (%s, rank %d) has %u views, the maximum is %u", what,
                      s, ps->what, ps->dom_rank, views, KILN_SEGMENT_MAX_VIEWS(ps->dom_rank));
        const kiln__segir *ir = &ps->ir[0];
        uint8_t *seen = malloc(ir->n_nodes + 1);
        ck_assert_ptr_nonnull(seen);
        for (uint32_t i = 0; i < ir->n_nodes; i++) {
            uint32_t c = cone_size(ir, i, seen);
            ck_assert_msg(c <= KILN__PLAN_MAX_CONE,
                          "%s: segment %u node %u computes %u operations", what, s, i, c);
        }
        free(seen);
        total += ir->n_nodes;
        if (ps->kind == KILN_SEGK_MATMUL_FALLBACK)
            continue;
        kiln_ir_segment seg;
        kiln__pseg_segment(ps, 0, &seg);
        char *src = NULL;
        kiln_cuda_kinfo info;
        kiln_status st = kiln__cuda_codegen(&seg, &ko, &src, &info);
        ck_assert_msg(st == KILN_OK || strstr(kiln_last_error(), "views") == NULL,
                      "%s: segment %u: %s", what, s, kiln_last_error());
        for (uint32_t k = 0; st == KILN_OK && ps->kind == KILN_SEGK_POINTWISE &&
                             k < ps->n_leaves; k++) {
            /* a dense view by the linear index, any other by its strides
            ** (the issue: input 16 read output 0's dense bit) */
            char load[64], flat[64], strided[64];
            snprintf(load, sizeof load, "kld(a.in%u + oi%u)", k, k);
            snprintf(flat, sizeof flat, "const ix oi%u = i;", k);
            snprintf(strided, sizeof strided, "oi%u += c * (ix)a.is%u[d];", k, k);
            if (strstr(src, load) == NULL)
                continue;
            int dense = (ps->in_traits[k] & KILN_TRAIT_CONTIG) != 0;
            ck_assert_msg((strstr(src, flat) != NULL) == dense &&
                              (strstr(src, strided) != NULL) == !dense,
                          "%s: segment %u input %u (traits %u) indexed wrongly", what, s, k,
                          ps->in_traits[k]);
        }
        kiln__free(src);
    }
    return total;
}

/* The fusion of the .kf text in b (which is freed). */
static kiln_fusion *fusion_of(kiln_buf *b)
{
    ck_assert(!b->failed);
    kiln_fusion *f = tu_fusion(b->data);
    kiln__buf_free(b);
    return f;
}

/* Plan f with dense aligned inputs under enable item en and check the
** limits (and, with must_split, that it took several segments).  Returns
** the plan's total IR nodes. */
static size_t plan_checked(const kiln_fusion *f, const char *en, const char *what,
                           int must_split)
{
    kiln__plan *p = plan_of(f, NULL, en);
    size_t total = check_limits(p, what);
    if (must_split)
        ck_assert_msg(p->n_segs > 1, "%s: not split", what);
    kiln__plan_free(p);
    return total;
}

static void destroy_tensors(kiln_tensor **t, int n)
{
    for (int k = 0; k < n; k++)
        kiln_tensor_destroy(t[k]);
}

/* Small exact values: sums of a few hundred stay exact in f32. */
static float val(int input, int64_t storage_index)
{
    return (float)((input * 7 + storage_index * 3) % 11 - 5);
}

/* A host input of layout l for domain [R, C], values val(k, storage). */
typedef struct hin {
    kiln_tensor *t;
    float data[R * C];
    int64_t st[2]; /* element strides of the logical [R, C] view */
} hin;

static void make_input(hin *h, int k, int l)
{
    int64_t rc[2] = {R, C}, r1[2] = {1, C}, c1[2] = {R, 1}, c[1] = {C};
    int64_t trans[2] = {1, R}, zero[2] = {0, 1};
    for (int i = 0; i < R * C; i++)
        h->data[i] = val(k, i);
    switch (l) {
    case L_ROW:
        h->t = tu_tensor(KILN_F32, 2, r1, NULL, h->data);
        h->st[0] = 0; h->st[1] = 1;
        break;
    case L_COL:
        h->t = tu_tensor(KILN_F32, 2, c1, NULL, h->data);
        h->st[0] = 1; h->st[1] = 0;
        break;
    case L_BCAST:
        h->t = tu_tensor(KILN_F32, 1, c, NULL, h->data);
        h->st[0] = 0; h->st[1] = 1;
        break;
    case L_TRANS:
        h->t = tu_tensor(KILN_F32, 2, rc, trans, h->data);
        h->st[0] = 1; h->st[1] = R;
        break;
    case L_ZERO:
        h->t = tu_tensor(KILN_F32, 2, rc, zero, h->data);
        h->st[0] = 0; h->st[1] = 1;
        break;
    default:
        h->t = tu_tensor(KILN_F32, 2, rc, NULL, h->data);
        h->st[0] = C; h->st[1] = 1;
    }
}

static float at(const hin *h, int i, int j) { return h->data[i * h->st[0] + j * h->st[1]]; }

/* The .kf declaration and use of input k of layout l: "%xk" names the
** [R, C] value (through a broadcast for L_BCAST). */
static void declare(kiln_buf *b, int k, int l)
{
    kiln__buf_printf(b, "%%i%d = input f32 %s\n", k, layout_decl(l));
    if (l == L_BCAST)
        kiln__buf_printf(b, "%%x%d = broadcast %%i%d rank=2 new=[0]\n", k, k);
    else
        kiln__buf_printf(b, "%%x%d = neg %%i%d\n%%y%d = neg %%x%d\n", k, k, k, k);
}
static void ref_name(char *buf, size_t cap, int k, int l)
{
    snprintf(buf, cap, l == L_BCAST ? "%%x%d" : "%%y%d", k);
}

/* Run f on ref with inputs ins and fresh outputs; returns the outputs. */
static void run_ref(const kiln_fusion *f, hin *ins, int n, kiln_tensor **outs, size_t n_out)
{
    kiln_context *ctx = tu_ctx();
    kiln_tensor **in = calloc((size_t)n + 1, sizeof *in);
    ck_assert_ptr_nonnull(in);
    for (int k = 0; k < n; k++)
        in[k] = ins[k].t;
    for (size_t j = 0; j < n_out; j++)
        outs[j] = NULL;
    kiln_status s = kiln_execute(ctx, f, in, (size_t)n, outs, n_out, NULL, NULL);
    ck_assert_msg(s == KILN_OK, "execute: %s", kiln_last_error());
    free(in);
    kiln_context_destroy(ctx);
}

static const float *host_f32(const kiln_tensor *t)
{
    const float *d = kiln_tensor_data(t);
    ck_assert_ptr_nonnull(d);
    return d;
}

/* ------------------------------------------------------------ tests */

/* out = x0 + x1 + ... over n inputs, layouts rotating through every kind
** (offset rot), with each input passed through neg(neg()) so that it is
** an operation of the segment, not only a leaf. */
static void many_inputs_sum(int n, int rot)
{
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n");
    char name[32], prev[32];
    for (int k = 0; k < n; k++)
        declare(&b, k, (k + rot) % L_COUNT);
    ref_name(prev, sizeof prev, 0, rot % L_COUNT);
    for (int k = 1; k < n; k++) {
        ref_name(name, sizeof name, k, (k + rot) % L_COUNT);
        kiln__buf_printf(&b, "%%s%d = add %s %s\n", k, prev, name);
        snprintf(prev, sizeof prev, "%%s%d", k);
    }
    kiln__buf_printf(&b, "output %s\n", prev);
    ck_assert(!b.failed);
    kiln_fusion *f = fusion_of(&b);
    uint8_t *flags = calloc((size_t)n, 1);
    ck_assert_ptr_nonnull(flags);
    for (int k = 0; k < n; k++) {
        int l = (k + rot) % L_COUNT;
        flags[k] = KILN__SIG_ALIGN16 | (l == L_TRANS || l == L_ZERO ? 0 : KILN__SIG_CONTIG);
    }
    kiln__plan *p = plan_of(f, flags, NULL);
    char what[64];
    snprintf(what, sizeof what, "%d-input sum, rotation %d", n, rot);
    check_limits(p, what);
    if (n <= 70) /* the sizes: one kernel with n inputs */
        ck_assert_msg(p->n_segs == 1 && p->segs[0].n_leaves == (uint32_t)n,
                      "%s: %u segments, one expected", what, p->n_segs);
    else if (n + 1 > (int)KILN_SEGMENT_MAX_VIEWS(2))
        ck_assert_msg(p->n_segs > 1, "%s: not split", what);
    kiln__plan_free(p);
    free(flags);
    hin *ins = calloc((size_t)n, sizeof *ins);
    ck_assert_ptr_nonnull(ins);
    for (int k = 0; k < n; k++)
        make_input(&ins[k], k, (k + rot) % L_COUNT);
    kiln_tensor *out[1];
    run_ref(f, ins, n, out, 1);
    const float *o = host_f32(out[0]);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float want = at(&ins[0], i, j);
            for (int k = 1; k < n; k++)
                want += at(&ins[k], i, j);
            ck_assert_msg(o[i * C + j] == want, "%s: [%d,%d] = %g, want %g", what, i, j,
                          (double)o[i * C + j], (double)want);
        }
    kiln_tensor_destroy(out[0]);
    for (int k = 0; k < n; k++)
        kiln_tensor_destroy(ins[k].t);
    free(ins);
    kiln_fusion_destroy(f);
}

START_TEST(pointwise_inputs_past_the_maximum)
{
    static const int counts[] = {17, 33, 70, 166, 167, 200, 400};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (int rot = 0; rot < L_COUNT; rot += 5)
            many_inputs_sum(counts[c], rot);
}
END_TEST

/* Rank 8 (55 views at most): a chain of 60 dense inputs. */
START_TEST(rank8_inputs_past_the_maximum)
{
    const int n = 60;
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n");
    for (int k = 0; k < n; k++)
        kiln__buf_printf(&b, "%%x%d = input i32 [?, ?, ?, ?, ?, ?, ?, ?]\n", k);
    kiln__buf_puts(&b, "%s0 = neg %x0\n");
    for (int k = 1; k < n; k++)
        kiln__buf_printf(&b, "%%s%d = add %%s%d %%x%d\n", k, k - 1, k);
    kiln__buf_printf(&b, "output %%s%d\n", n - 1);
    kiln_fusion *f = fusion_of(&b);
    plan_checked(f, NULL, "rank-8 chain", 1);
    int64_t sz[8] = {2, 1, 1, 2, 1, 1, 1, 3};
    int32_t data[60][12], *res;
    kiln_tensor *in[60], *out[1] = {NULL};
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < 12; i++)
            data[k][i] = k * 1000 + i;
        in[k] = tu_tensor(KILN_I32, 8, sz, NULL, data[k]);
    }
    kiln_context *ctx = tu_ctx();
    ck_assert_int_eq(kiln_execute(ctx, f, in, (size_t)n, out, 1, NULL, NULL), KILN_OK);
    res = kiln_tensor_data(out[0]);
    for (int i = 0; i < 12; i++) {
        int32_t want = -data[0][i];
        for (int k = 1; k < n; k++)
            want += data[k][i];
        ck_assert_int_eq(res[i], want);
    }
    kiln_tensor_destroy(out[0]);
    destroy_tensors(in, n);
    kiln_context_destroy(ctx);
    kiln_fusion_destroy(f);
}
END_TEST

/* 300 outputs of 10 inputs (rank 1: 251 views at most): split by outputs. */
START_TEST(outputs_past_the_maximum)
{
    const int n = 10, m = 300;
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n");
    for (int k = 0; k < n; k++)
        kiln__buf_printf(&b, "%%x%d = input f32 [?]\n", k);
    for (int j = 0; j < m; j++)
        kiln__buf_printf(&b, "%%o%d = sub %%x%d %%x%d\noutput %%o%d\n", j, j % n,
                         (j / n) % n, j);
    kiln_fusion *f = fusion_of(&b);
    plan_checked(f, NULL, "300 outputs", 1);
    float data[10][4];
    int64_t four[1] = {4};
    kiln_tensor *in[10], *out[300];
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < 4; i++)
            data[k][i] = (float)(k * 10 + i);
        in[k] = tu_tensor(KILN_F32, 1, four, NULL, data[k]);
    }
    for (int j = 0; j < m; j++)
        out[j] = NULL;
    kiln_context *ctx = tu_ctx();
    ck_assert_msg(kiln_execute(ctx, f, in, (size_t)n, out, (size_t)m, NULL, NULL) == KILN_OK,
                  "%s", kiln_last_error());
    for (int j = 0; j < m; j++) {
        const float *o = host_f32(out[j]);
        for (int i = 0; i < 4; i++)
            ck_assert(o[i] == data[j % n][i] - data[(j / n) % n][i]);
    }
    destroy_tensors(out, m);
    destroy_tensors(in, n);
    kiln_context_destroy(ctx);
    kiln_fusion_destroy(f);
}
END_TEST

/* Reductions and a matmul epilogue with inputs past the maximum, before
** the hard node (the producer cone) and after it (the consumers):
**   t = x0 + ... (n inputs [?, ?]); m = max t axes=[1] keepdim;
**   u = m + c0 + ... (n inputs [?, 1]); output u
** and with fuse_matmul: mm = a @ b; v = mm + r0 + ... (n inputs [1, ?]). */
START_TEST(hard_nodes_past_the_maximum)
{
    const int n = 200;
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n");
    for (int k = 0; k < n; k++)
        kiln__buf_printf(&b, "%%x%d = input f32 [?, ?]\n%%c%d = input f32 [?, 1]\n", k, k);
    kiln__buf_puts(&b, "%t0 = neg %x0\n");
    for (int k = 1; k < n; k++)
        kiln__buf_printf(&b, "%%t%d = add %%t%d %%x%d\n", k, k - 1, k);
    kiln__buf_printf(&b, "%%m = max %%t%d axes=[1] keepdim\n%%u0 = add %%m %%c0\n", n - 1);
    for (int k = 1; k < n; k++)
        kiln__buf_printf(&b, "%%u%d = add %%u%d %%c%d\n", k, k - 1, k);
    kiln__buf_printf(&b, "output %%u%d\n", n - 1);
    kiln_fusion *f = fusion_of(&b);
    plan_checked(f, NULL, "reduction with 400 inputs", 1);
    hin *ins = calloc(2 * (size_t)n, sizeof *ins);
    ck_assert_ptr_nonnull(ins);
    for (int k = 0; k < 2 * n; k++)
        make_input(&ins[k], k, k % 2 ? L_COL : L_DENSE);
    kiln_tensor *out[1];
    run_ref(f, ins, 2 * n, out, 1);
    const float *o = host_f32(out[0]);
    for (int i = 0; i < R; i++) {
        float mx = 0;
        for (int j = 0; j < C; j++) {
            float t = -at(&ins[0], i, j);
            for (int k = 1; k < n; k++)
                t += at(&ins[2 * k], i, j);
            if (j == 0 || t > mx)
                mx = t;
        }
        float want = mx;
        for (int k = 0; k < n; k++)
            want += at(&ins[2 * k + 1], i, 0);
        ck_assert_msg(o[i] == want, "row %d: %g, want %g", i, (double)o[i], (double)want);
    }
    kiln_tensor_destroy(out[0]);
    for (int k = 0; k < 2 * n; k++)
        kiln_tensor_destroy(ins[k].t);
    free(ins);
    kiln_fusion_destroy(f);

    kiln__buf_puts(&b, "kiln.fusion 1\n%a = input f32 [?, ?]\n%b = input f32 [?, ?]\n"
                       "%mm = matmul %a %b\n%v0 = neg %mm\n");
    for (int k = 0; k < n; k++)
        kiln__buf_printf(&b, "%%r%d = input f32 [1, ?]\n%%v%d = add %%v%d %%r%d\n", k, k + 1,
                         k, k);
    kiln__buf_printf(&b, "output %%v%d\n", n);
    f = fusion_of(&b);
    plan_checked(f, "fuse_matmul", "matmul epilogue with 200 inputs", 1);
    kiln_fusion_destroy(f);
}
END_TEST

/* The alternating pattern of the issue: d(k) = d(k-1) - max(d(k-1)) over
** axis 1, `levels` times.  Every d(k) for k >= 1 equals x - rowmax(x)
** exactly (the row max of d(1) is +0).  Each reduction's producer cone
** reads x and every earlier max: at 20 levels the last segment has 21
** inputs, input 16 with strides [1, 0]. */
static kiln_fusion *alternating(int levels)
{
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n%d0 = input f32 [?, ?]\n");
    for (int k = 1; k <= levels; k++)
        kiln__buf_printf(&b, "%%m%d = max %%d%d axes=[1] keepdim\n%%d%d = sub %%d%d %%m%d\n",
                         k, k - 1, k, k - 1, k);
    kiln__buf_printf(&b, "output %%d%d\n", levels);
    kiln_fusion *f = fusion_of(&b);
    return f;
}

START_TEST(alternating_reductions)
{
    static const int levels[] = {20, 170, 1024};
    for (size_t q = 0; q < sizeof levels / sizeof levels[0]; q++) {
        kiln_fusion *f = alternating(levels[q]);
        kiln__plan *p = plan_of(f, NULL, NULL);
        char what[64];
        snprintf(what, sizeof what, "%d alternating levels", levels[q]);
        size_t total = check_limits(p, what);
        /* the planner's size stays linear in the fusion's (it was ~1M IR
        ** nodes, ~240 MB, at 1024 levels) */
        size_t n = f->n_nodes;
        ck_assert_msg(total <= 100 * n, "%s: %zu IR nodes for %zu fusion nodes", what, total,
                      n);
        if (levels[q] == 20) { /* the case: one segment of 21 inputs */
            const kiln__pseg *last = &p->segs[p->n_segs - 1];
            ck_assert_uint_eq(last->n_leaves, 21);
            ck_assert_uint_eq(last->in_traits[16], KILN_TRAIT_ALIGN16); /* [1, 0] */
        }
        kiln__plan_free(p);
        hin x;
        make_input(&x, 3, L_TRANS);
        kiln_tensor *out[1];
        run_ref(f, &x, 1, out, 1);
        const float *o = host_f32(out[0]);
        for (int i = 0; i < R; i++) {
            float mx = at(&x, i, 0);
            for (int j = 1; j < C; j++)
                if (at(&x, i, j) > mx)
                    mx = at(&x, i, j);
            for (int j = 0; j < C; j++)
                ck_assert_msg(o[i * C + j] == at(&x, i, j) - mx, "%s: [%d,%d]", what, i, j);
        }
        kiln_tensor_destroy(out[0]);
        kiln_tensor_destroy(x.t);
        kiln_fusion_destroy(f);
    }
}
END_TEST

/* The same class with one input and no leaves to speak of: a chain y(k)
** = neg y(k-1) and a reduction of every y(k), summed.  Each reduction
** recomputed its whole chain (2000 chains of up to 2000 operations); the
** cone limit materialises every 256th y. */
START_TEST(recomputed_chains_stay_linear)
{
    const int n = 2000;
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n%y0 = input i64 [?, ?]\n");
    for (int k = 1; k <= n; k++)
        kiln__buf_printf(&b, "%%y%d = neg %%y%d\n%%r%d = sum %%y%d axes=[1]\n", k, k - 1, k, k);
    kiln__buf_puts(&b, "%a1 = neg %r1\n");
    for (int k = 2; k <= n; k++)
        kiln__buf_printf(&b, "%%a%d = add %%a%d %%r%d\n", k, k - 1, k);
    kiln__buf_printf(&b, "output %%a%d\n", n);
    kiln_fusion *f = fusion_of(&b);
    size_t total = plan_checked(f, NULL, "recomputed chains", 1);
    ck_assert_msg(total <= 100 * (size_t)f->n_nodes, "%zu IR nodes", total);
    int64_t data[6] = {5, -3, 2, 7, 1, 1}, sz[2] = {2, 3}, *res;
    kiln_tensor *in[1] = {tu_tensor(KILN_I64, 2, sz, NULL, data)}, *out[1] = {NULL};
    kiln_context *ctx = tu_ctx();
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
    res = kiln_tensor_data(out[0]);
    /* r(k) = (-1)^k rowsum; a = -r1 + r2 + ... + r2000 = 2 * rowsum */
    ck_assert_int_eq(res[0], 2 * 4);
    ck_assert_int_eq(res[1], 2 * 9);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_context_destroy(ctx);
    kiln_fusion_destroy(f);
}
END_TEST

/* Splitting never changes numerics: a single-use mul stays with the add
** it contracts into (fma), even when that add is where a cone passes the
** view limit.  out = t * w + c with t and c sums of 150 inputs each (rank
** 1: 251 views at most), so the add's cone has 301 inputs. */
START_TEST(split_keeps_contraction)
{
    const int n = 150;
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n%w = input f32 [?]\n");
    for (int k = 0; k < n; k++)
        kiln__buf_printf(&b, "%%x%d = input f32 [?]\n%%y%d = input f32 [?]\n", k, k);
    kiln__buf_puts(&b, "%t0 = neg %x0\n%c0 = neg %y0\n");
    for (int k = 1; k < n; k++)
        kiln__buf_printf(&b, "%%t%d = add %%t%d %%x%d\n%%c%d = add %%c%d %%y%d\n", k, k - 1, k,
                         k, k - 1, k);
    kiln__buf_printf(&b, "%%m = mul %%t%d %%w\n%%o = add %%m %%c%d\noutput %%o\n", n - 1,
                     n - 1);
    kiln_fusion *f = fusion_of(&b);
    plan_checked(f, NULL, "t * w + c", 1);
    enum { E = 8 };
    static float data[301][E];
    kiln_tensor *in[301], *out[1] = {NULL};
    int64_t sz[1] = {E};
    uint64_t st = 12345;
    for (int k = 0; k < 2 * n + 1; k++) {
        for (int i = 0; i < E; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            data[k][i] = (float)((double)(st >> 40) / (double)(1u << 24) * 3.0 - 1.5);
        }
        in[k] = tu_tensor(KILN_F32, 1, sz, NULL, data[k]);
    }
    kiln_context *ctx = tu_ctx();
    ck_assert_int_eq(kiln_execute(ctx, f, in, (size_t)(2 * n + 1), out, 1, NULL, NULL),
                     KILN_OK);
    const float *o = host_f32(out[0]);
    int differs = 0;
    for (int i = 0; i < E; i++) {
        float t = -data[1][i], c = -data[2][i];
        for (int k = 1; k < n; k++) {
            t += data[1 + 2 * k][i];
            c += data[2 + 2 * k][i];
        }
        float want = fmaf(t, data[0][i], c);
        volatile float prod = t * data[0][i];
        differs |= (prod + c) != want;
        ck_assert_msg(o[i] == want, "element %d: %a, fma gives %a", i, (double)o[i],
                      (double)want);
    }
    ck_assert_msg(differs, "the data does not tell fma from mul + add");
    kiln_tensor_destroy(out[0]);
    destroy_tensors(in, 2 * n + 1);
    kiln_context_destroy(ctx);
    kiln_fusion_destroy(f);
}
END_TEST

/* Signature flags of inputs and outputs past position 32 reach the
** segment traits (they were 32-bit masks: input 40 was never CONTIG). */
START_TEST(signature_flags_past_32)
{
    const int n = 40;
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n");
    for (int k = 0; k < n; k++)
        kiln__buf_printf(&b, "%%x%d = input f32 [?]\n%%o%d = add %%x%d %%x0\noutput %%o%d\n",
                         k, k, k, k);
    kiln_fusion *f = fusion_of(&b);
    uint8_t flags[40];
    for (int k = 0; k < n; k++)
        flags[k] = k % 2 ? KILN__SIG_CONTIG | KILN__SIG_ALIGN16 : KILN__SIG_ALIGN16;
    kiln__plan *p = plan_of(f, flags, NULL);
    ck_assert_uint_eq(p->n_segs, 1);
    const kiln__pseg *s = &p->segs[0];
    ck_assert_uint_eq(s->n_leaves, (uint32_t)n);
    for (uint32_t q = 0; q < s->n_leaves; q++) {
        int k = (int)s->leaves[q].node / 2; /* %xk is node 2k */
        uint32_t want = KILN_TRAIT_ALIGN16 | (k % 2 ? KILN_TRAIT_CONTIG : 0);
        ck_assert_msg(s->in_traits[q] == want, "input %d: traits %u, want %u", k,
                      s->in_traits[q], want);
    }
    for (uint32_t j = 0; j < s->n_outs; j++)
        ck_assert_uint_eq(s->out_traits[j] & KILN_TRAIT_ALIGN16, KILN_TRAIT_ALIGN16);
    kiln__plan_free(p);
    kiln_fusion_destroy(f);
}
END_TEST

/* A split plan (two rounds) fails cleanly at every allocation: the
** Nth allocation fails, plan_build says KILN_ERR_NO_MEMORY and frees
** what it made (ASan's leak check in `make test-asan`). */
START_TEST(split_allocation_failures)
{
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n");
    for (int k = 0; k < 60; k++)
        kiln__buf_printf(&b, "%%x%d = input f32 [?, ?, ?, ?, ?, ?, ?, ?]\n", k);
    kiln__buf_puts(&b, "%s0 = neg %x0\n");
    for (int k = 1; k < 60; k++)
        kiln__buf_printf(&b, "%%s%d = add %%s%d %%x%d\n", k, k - 1, k);
    kiln__buf_puts(&b, "%m = max %s59 axes=[7] keepdim\noutput %m\n");
    kiln_fusion *f = fusion_of(&b);
    uint8_t bits[61];
    memset(bits, KILN__SIG_CONTIG | KILN__SIG_ALIGN16, sizeof bits);
    kiln__sig sig = {bits, bits + 60, 0};
    struct kiln_options o;
    memset(&o, 0, sizeof o);
    long n;
    for (n = 0; n < 100000; n++) {
        kiln__plan *p = NULL;
        kiln__fault_after(n);
        kiln_status s = kiln__plan_build(f, &o, NULL, &sig, &p);
        kiln__fault_after(-1);
        if (s == KILN_OK) {
            ck_assert_uint_gt(p->n_segs, 1);
            kiln__plan_free(p);
            break;
        }
        ck_assert_int_eq(s, KILN_ERR_NO_MEMORY);
        ck_assert_ptr_null(p);
    }
    ck_assert_int_gt(n, 10);
    ck_assert_int_lt(n, 100000);
    kiln_fusion_destroy(f);
}
END_TEST

/* ------------------------------------------------- golden plan dumps */

/* The plan of .kf text kf (every input dense and aligned) under the
** enable item en and the disable item dis (either NULL), as text: the
** dump=fusion_ir dump (kiln__plan_dump), then, for each segment with a
** contracted variant (rule 5), that variant's nodes.  Freed by free(). */
static char *plan_text(const char *kf, const char *en, const char *dis)
{
    kiln_fusion *f = tu_fusion(kf);
    struct kiln_options o;
    memset(&o, 0, sizeof o);
    if (en != NULL)
        ck_assert_int_eq(kiln__options_apply_item(&o, KILN_SET_ENABLE, en, 0), KILN_OK);
    if (dis != NULL)
        ck_assert_int_eq(kiln__options_apply_item(&o, KILN_SET_DISABLE, dis, 0), KILN_OK);
    uint8_t bits[64];
    ck_assert_uint_le(f->n_inputs + f->n_outputs, sizeof bits);
    memset(bits, KILN__SIG_CONTIG | KILN__SIG_ALIGN16, sizeof bits);
    kiln__sig sig = {bits, bits + f->n_inputs, 0};
    kiln__plan *p = NULL;
    ck_assert_msg(kiln__plan_build(f, &o, NULL, &sig, &p) == KILN_OK, "plan: %s",
                  kiln_last_error());
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(m);
    kiln__plan_dump(p, m);
    for (uint32_t s = 0; s < p->n_segs; s++) {
        const kiln__segir *ir = &p->segs[s].ir[1];
        if (!p->segs[s].contracts)
            continue;
        fprintf(m, "fma variant of segment %u:", s);
        for (uint32_t i = 0; i < ir->n_nodes; i++) {
            const kiln_ir_node *n = &ir->nodes[i];
            fprintf(m, " n%u=%s", i, kiln_op_name((kiln_op)n->op));
            for (int k = 0; k < 3 && n->args[k] >= 0; k++)
                fprintf(m, "%sn%d", k ? "," : "(", n->args[k]);
            if (n->args[0] >= 0)
                fputc(')', m);
        }
        fputc('\n', m);
    }
    fclose(m);
    kiln__plan_free(p);
    kiln_fusion_destroy(f);
    return text;
}

/* The plan of kf is exactly `want` (on a difference both go to stderr:
** Check's messages are too short for them). */
static void golden(const char *what, const char *kf, const char *en, const char *dis,
                   const char *want)
{
    char *got = plan_text(kf, en, dis);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "%s: the plan differs from the golden dump\n--- want\n%s--- got\n%s",
                what, want, got);
    int same = strcmp(got, want) == 0;
    free(got);
    ck_assert_msg(same, "%s: the plan differs from the golden dump (stderr shows both)", what);
}

/* The golden dumps, checked by hand against plan.c's rules (the hash is 0:
** only the plan cache sets it). */
#define GOLDEN_R1_RED \
    "kiln: plan 0000000000000000: 2 segments\n"\
    "kiln:   segment 0: reduction, domain of %2 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     in1 = %1 over K map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = abs f32 rank 2 bcast 0x0 n0\n"\
    "kiln:     n2 = sum f32 rank 2 bcast 0x2 n1 axes 0x2\n"\
    "kiln:     n3 = input f32 rank 2 bcast 0x2 io 1\n"\
    "kiln:     n4 = add f32 rank 2 bcast 0x2 n2 n3\n"\
    "kiln:     out0 = n4 -> %4 (output)\n"\
    "kiln:   segment 1: reduction, domain of %0 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = max f32 rank 2 bcast 0x2 n0 axes 0x2\n"\
    "kiln:     out0 = n1 -> %5 (output)\n"
#define GOLDEN_R1_MM_DEFAULT \
    "kiln: plan 0000000000000000: 2 segments\n"\
    "kiln:   segment 0: matmul_fallback, domain of %3 (rank 2)\n"\
    "kiln:     in0 = %0 over own map [0,1] traits 3\n"\
    "kiln:     in1 = %1 over own map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = matmul f32 rank 2 bcast 0x0 n0 n1\n"\
    "kiln:     out0 = n2 -> %3 (intermediate)\n"\
    "kiln:   segment 1: pointwise, domain of %5 (rank 2)\n"\
    "kiln:     in0 = %3 over D map [0,1] traits 3\n"\
    "kiln:     in1 = %2 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = add f32 rank 2 bcast 0x0 n0 n1\n"\
    "kiln:     n3 = relu f32 rank 2 bcast 0x0 n2\n"\
    "kiln:     out0 = n3 -> %5 (output)\n"
#define GOLDEN_R1_MM_EXPR \
    "kiln: plan 0000000000000000: 2 segments\n"\
    "kiln:   segment 0: matmul, domain of %3 (rank 2)\n"\
    "kiln:     in0 = %0 over own map [0,1] traits 3\n"\
    "kiln:     in1 = %1 over own map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = matmul f32 rank 2 bcast 0x0 n0 n1\n"\
    "kiln:     out0 = n2 -> %3 (intermediate)\n"\
    "kiln:   segment 1: pointwise, domain of %5 (rank 2)\n"\
    "kiln:     in0 = %3 over D map [0,1] traits 3\n"\
    "kiln:     in1 = %2 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = add f32 rank 2 bcast 0x0 n0 n1\n"\
    "kiln:     n3 = relu f32 rank 2 bcast 0x0 n2\n"\
    "kiln:     out0 = n3 -> %5 (output)\n"
#define GOLDEN_R1_MM_FUSE \
    "kiln: plan 0000000000000000: 1 segment\n"\
    "kiln:   segment 0: matmul_epilogue, domain of %3 (rank 2)\n"\
    "kiln:     in0 = %0 over own map [0,1] traits 3\n"\
    "kiln:     in1 = %1 over own map [0,1] traits 3\n"\
    "kiln:     in2 = %2 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = matmul f32 rank 2 bcast 0x0 n0 n1\n"\
    "kiln:     n3 = input f32 rank 2 bcast 0x0 io 2\n"\
    "kiln:     n4 = add f32 rank 2 bcast 0x0 n2 n3\n"\
    "kiln:     n5 = relu f32 rank 2 bcast 0x0 n4\n"\
    "kiln:     out0 = n5 -> %5 (output)\n"
#define GOLDEN_R2 \
    "kiln: plan 0000000000000000: 2 segments\n"\
    "kiln:   segment 0: reduction, domain of %0 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = sum f32 rank 2 bcast 0x2 n0 axes 0x2\n"\
    "kiln:     n2 = const f32 rank 2 bcast 0x3 0x40000000\n"\
    "kiln:     n3 = mul f32 rank 2 bcast 0x2 n1 n2\n"\
    "kiln:     out0 = n1 -> %2 (intermediate)\n"\
    "kiln:     out1 = n3 -> %4 (output)\n"\
    "kiln:   segment 1: pointwise, domain of %6 (rank 2)\n"\
    "kiln:     in0 = %2 over D map [0,1] traits 3\n"\
    "kiln:     in1 = %1 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = neg f32 rank 2 bcast 0x0 n1\n"\
    "kiln:     n3 = add f32 rank 2 bcast 0x0 n0 n2\n"\
    "kiln:     out0 = n3 -> %6 (output)\n"
#define GOLDEN_R3 \
    "kiln: plan 0000000000000000: 3 segments\n"\
    "kiln:   segment 0: pointwise, domain of %1 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = neg f32 rank 2 bcast 0x0 n0\n"\
    "kiln:     n2 = abs f32 rank 2 bcast 0x0 n0\n"\
    "kiln:     out0 = n1 -> %1 (output)\n"\
    "kiln:     out1 = n2 -> %2 (output)\n"\
    "kiln:   segment 1: reduction, domain of %0 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = sum f32 rank 2 bcast 0x2 n0 axes 0x2\n"\
    "kiln:     out0 = n1 -> %3 (intermediate)\n"\
    "kiln:   segment 2: pointwise, domain of %4 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     in1 = %3 over D map [0,1] traits 2\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = sub f32 rank 2 bcast 0x0 n0 n1\n"\
    "kiln:     out0 = n2 -> %4 (output)\n"
#define GOLDEN_R4_SOFTMAX \
    "kiln: plan 0000000000000000: 2 segments\n"\
    "kiln:   segment 0: reduction, domain of %1 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = exp f32 rank 2 bcast 0x0 n0\n"\
    "kiln:     n2 = sum f32 rank 2 bcast 0x2 n1 axes 0x2\n"\
    "kiln:     out0 = n2 -> %2 (intermediate)\n"\
    "kiln:   segment 1: pointwise, domain of %3 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [0,1] traits 3\n"\
    "kiln:     in1 = %2 over D map [0,1] traits 2\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = exp f32 rank 2 bcast 0x0 n0\n"\
    "kiln:     n2 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n3 = div f32 rank 2 bcast 0x0 n1 n2\n"\
    "kiln:     out0 = n3 -> %3 (output)\n"
#define GOLDEN_R4_BCAST \
    "kiln: plan 0000000000000000: 1 segment\n"\
    "kiln:   segment 0: pointwise, domain of %3 (rank 2)\n"\
    "kiln:     in0 = %0 over D map [1] traits 2\n"\
    "kiln:     in1 = %1 over D map [0,1] traits 3\n"\
    "kiln:     n0 = input f32 rank 2 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 2 bcast 0x0 io 1\n"\
    "kiln:     n2 = add f32 rank 2 bcast 0x0 n0 n1\n"\
    "kiln:     out0 = n2 -> %3 (output)\n"
#define GOLDEN_R5 \
    "kiln: plan 0000000000000000: 1 segment\n"\
    "kiln:   segment 0: pointwise, domain of %4 (rank 1), contracts under fma\n"\
    "kiln:     in0 = %0 over D map [0] traits 3\n"\
    "kiln:     in1 = %1 over D map [0] traits 3\n"\
    "kiln:     in2 = %2 over D map [0] traits 3\n"\
    "kiln:     n0 = input f32 rank 1 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f32 rank 1 bcast 0x0 io 1\n"\
    "kiln:     n2 = mul f32 rank 1 bcast 0x0 n0 n1\n"\
    "kiln:     n3 = input f32 rank 1 bcast 0x0 io 2\n"\
    "kiln:     n4 = add f32 rank 1 bcast 0x0 n2 n3\n"\
    "kiln:     n5 = mul f32 rank 1 bcast 0x0 n1 n3\n"\
    "kiln:     n6 = add f32 rank 1 bcast 0x0 n0 n5\n"\
    "kiln:     n7 = mul f32 rank 1 bcast 0x0 n0 n3\n"\
    "kiln:     n8 = add f32 rank 1 bcast 0x0 n7 n7\n"\
    "kiln:     n9 = mul f32 rank 1 bcast 0x0 n3 n3\n"\
    "kiln:     n10 = add f32 rank 1 bcast 0x0 n9 n0\n"\
    "kiln:     out0 = n4 -> %4 (output)\n"\
    "kiln:     out1 = n6 -> %6 (output)\n"\
    "kiln:     out2 = n8 -> %8 (output)\n"\
    "kiln:     out3 = n9 -> %9 (output)\n"\
    "kiln:     out4 = n10 -> %10 (output)\n"\
    "fma variant of segment 0: n0=input n1=input n2=input n3=fma(n0,n1,n2) n4=fma(n1,n2,n0) n5=mul(n0,n2) n6=add(n5,n5) n7=mul(n2,n2) n8=add(n7,n0)\n"
#define GOLDEN_R5_TYPES \
    "kiln: plan 0000000000000000: 2 segments\n"\
    "kiln:   segment 0: pointwise, domain of %4 (rank 1), contracts under fma\n"\
    "kiln:     in0 = %0 over D map [0] traits 3\n"\
    "kiln:     in1 = %1 over D map [0] traits 3\n"\
    "kiln:     n0 = input f64 rank 1 bcast 0x0 io 0\n"\
    "kiln:     n1 = input f64 rank 1 bcast 0x0 io 1\n"\
    "kiln:     n2 = mul f64 rank 1 bcast 0x0 n0 n1\n"\
    "kiln:     n3 = add f64 rank 1 bcast 0x0 n2 n0\n"\
    "kiln:     out0 = n3 -> %4 (output)\n"\
    "kiln:   segment 1: pointwise, domain of %6 (rank 1)\n"\
    "kiln:     in0 = %2 over D map [0] traits 3\n"\
    "kiln:     n0 = input i32 rank 1 bcast 0x0 io 0\n"\
    "kiln:     n1 = mul i32 rank 1 bcast 0x0 n0 n0\n"\
    "kiln:     n2 = add i32 rank 1 bcast 0x0 n1 n0\n"\
    "kiln:     out0 = n2 -> %6 (output)\n"\
    "fma variant of segment 0: n0=input n1=input n2=fma(n0,n1,n0)\n"

#define KF "kiln.fusion 1\n"

/* Rule 1: REDUCE and MATMUL results are hard values, each starting a
** segment in node order.  A reduction segment holds the producer cone over
** the operand's shape, the REDUCE, and its reduced-shape consumers. */
START_TEST(golden_rule1_reductions)
{
    golden("rule 1, reductions",
           KF "%x = input f32 [?, ?]\n%b = input f32 [?, 1]\n%a = abs %x\n"
              "%s = sum %a axes=[1] keepdim\n%t = add %s %b\n"
              "%m = max %x axes=[1] keepdim\noutput %t\noutput %m\n",
           NULL, NULL, GOLDEN_R1_RED);
}
END_TEST

/* Rule 1: the matmul path is the segment kind: the library fallback by
** default, a generated standalone matmul under disable=matmul_expr_eval,
** and under enable=fuse_matmul one generated kernel that also takes the
** pointwise consumers over [M,N]. */
START_TEST(golden_rule1_matmul_paths)
{
    static const char kf[] = KF "%a = input f32 [?, ?]\n%b = input f32 [?, ?]\n"
                                "%c = input f32 [?, ?]\n%m = matmul %a %b\n"
                                "%r = add %m %c\n%y = relu %r\noutput %y\n";
    golden("rule 1, default matmul path", kf, NULL, NULL, GOLDEN_R1_MM_DEFAULT);
    golden("rule 1, disable=matmul_expr_eval", kf, NULL, "matmul_expr_eval",
           GOLDEN_R1_MM_EXPR);
    golden("rule 1, enable=fuse_matmul", kf, "fuse_matmul", NULL, GOLDEN_R1_MM_FUSE);
}
END_TEST

/* Rule 2: a consumer joins the reduction segment when it has the reduced
** shape and its other operands are constants, inputs or values of earlier
** segments -- not when it reads a pointwise value no segment makes (%n). */
START_TEST(golden_rule2_consumers)
{
    golden("rule 2",
           KF "%x = input f32 [?, ?]\n%b = input f32 [?, 1]\n"
              "%s = sum %x axes=[1] keepdim\n%k = const f32 0x40000000\n"
              "%t = mul %s %k\n%n = neg %b\n%u = add %s %n\n"
              "output %t\noutput %u\n",
           NULL, NULL, GOLDEN_R2);
}
END_TEST

/* Rule 3: values that must exist in memory join the last pointwise segment
** of their shape when everything they read is made before it (%p, %q),
** else start a new one (%z reads %s, made by a later segment). */
START_TEST(golden_rule3_pointwise)
{
    golden("rule 3",
           KF "%x = input f32 [?, ?]\n%p = neg %x\n%q = abs %x\n"
              "%s = sum %x axes=[1] keepdim\n%z = sub %x %s\n"
              "output %p\noutput %q\noutput %z\n",
           NULL, NULL, GOLDEN_R3);
}
END_TEST

/* Rule 4: a segment recomputes the pointwise cone of what it makes (exp %x
** in both segments of softmax), and BROADCAST nodes disappear into the
** views (the map of in1). */
START_TEST(golden_rule4_recompute_and_views)
{
    golden("rule 4, softmax",
           KF "%x = input f32 [?, ?]\n%e = exp %x\n%s = sum %e axes=[1] keepdim\n"
              "%y = div %e %s\noutput %y\n",
           NULL, NULL, GOLDEN_R4_SOFTMAX);
    golden("rule 4, broadcast",
           KF "%v = input f32 [?]\n%y = input f32 [?, ?]\n"
              "%b = broadcast %v rank=2 new=[0]\n%z = add %b %y\noutput %z\n",
           NULL, NULL, GOLDEN_R4_BCAST);
}
END_TEST

/* Rule 5: add(mul(a,b),c) and add(c,mul(a,b)) contract to fma(a,b,c) in
** the second IR variant, for f32 and f64, when the mul has exactly one use
** and is not a fusion output; not for integers. */
START_TEST(golden_rule5_contraction)
{
    golden("rule 5",
           KF "%a = input f32 [?]\n%b = input f32 [?]\n%c = input f32 [?]\n"
              "%m1 = mul %a %b\n%r1 = add %m1 %c\n"  /* lhs: contracts */
              "%m2 = mul %b %c\n%r2 = add %a %m2\n"  /* rhs: contracts */
              "%m3 = mul %a %c\n%r3 = add %m3 %m3\n" /* two uses: no */
              "%m4 = mul %c %c\n%r4 = add %m4 %a\n"  /* an output: no */
              "output %r1\noutput %r2\noutput %r3\noutput %r4\noutput %m4\n",
           NULL, NULL, GOLDEN_R5);
    golden("rule 5, f64 and i32",
           KF "%a = input f64 [?]\n%b = input f64 [?]\n%i = input i32 [?]\n"
              "%m = mul %a %b\n%r = add %m %a\n%n = mul %i %i\n%s = add %n %i\n"
              "output %r\noutput %s\n",
           NULL, NULL, GOLDEN_R5_TYPES);
}
END_TEST

Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pointwise_inputs_past_the_maximum);
    tcase_add_test(tc, rank8_inputs_past_the_maximum);
    tcase_add_test(tc, outputs_past_the_maximum);
    tcase_add_test(tc, hard_nodes_past_the_maximum);
    tcase_add_test(tc, alternating_reductions);
    tcase_add_test(tc, recomputed_chains_stay_linear);
    tcase_add_test(tc, split_keeps_contraction);
    tcase_add_test(tc, signature_flags_past_32);
    tcase_add_test(tc, split_allocation_failures);
    suite_add_tcase(s, tc);
    tc = tcase_create("rules");
    tcase_add_test(tc, golden_rule1_reductions);
    tcase_add_test(tc, golden_rule1_matmul_paths);
    tcase_add_test(tc, golden_rule2_consumers);
    tcase_add_test(tc, golden_rule3_pointwise);
    tcase_add_test(tc, golden_rule4_recompute_and_views);
    tcase_add_test(tc, golden_rule5_contraction);
    suite_add_tcase(s, tc);
    return s;
}
