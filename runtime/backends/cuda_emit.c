/*
** cuda_emit.c -- the CUDA emitters (cuda_emit.h): one generated module's
** text after the preamble, for a segment the driver (cuda_codegen.c) has
** checked, simplified and classified.  The shape of the module and the
** kernel schemes are described in cuda_codegen.c's header comment; this
** file holds the expressions of single nodes (emit_node), the phase
** functions kiln_pre / kiln_post / kiln_finalize, and the kernels of each
** scheme: pointwise, reductions over inner or outer axes, matmul.
**
** Everything is appended to g->b through P(); an allocation failure there
** is noticed once, by the driver (g->b.failed).  Launch geometry facts the
** host needs (vector width, accumulator size, matmul tile, per-view flags)
** go into g->info as the code that depends on them is chosen.
*/
#include <stdio.h>
#include <string.h>

#include "backends/cuda_emit.h"
#include "ir_simplify.h"

/* ------------------------------------------------------------ tables */

/* value (register) and storage C types per kiln_dtype */
static const char *const ctype[KILN_DTYPE_COUNT] = {
    "bool", "int", "long long", "kh16", "kh16", "float", "double"};
static const char *const stype[KILN_DTYPE_COUNT] = {
    "unsigned char", "int", "long long", "kh16", "kh16", "float", "double"};

typedef kiln_cuda_gen gen;

static int32_t res(const gen *g, int32_t i) { return kiln__ir_res(&g->w, i); }

#define P(...) kiln__buf_printf(&g->b, __VA_ARGS__)

/* Append the literal of constant node c. */
static void lit(gen *g, const kiln_ir_node *c)
{
    uint64_t b = kiln__ir_canon(c->dtype, c->bits);
    switch (c->dtype) {
    case KILN_BOOL: P("%s", b ? "true" : "false"); break;
    case KILN_I32: P("((int)0x%xu)", (unsigned)b); break;
    case KILN_I64: P("((long long)0x%llxull)", (unsigned long long)b); break;
    case KILN_F16: case KILN_BF16: P("((kh16)0x%xu)", (unsigned)b); break;
    case KILN_F32: P("__uint_as_float(0x%xu)", (unsigned)b); break;
    default: P("__longlong_as_double((long long)0x%llxull)", (unsigned long long)b);
    }
}

/* Append the expression naming node i's value. */
static void arg(gen *g, int32_t i)
{
    i = res(g, i);
    if (g->w.n[i].op == KILN_OP_CONST)
        lit(g, &g->w.n[i]);
    else
        P("v%d", (int)i);
}

/* ------------------------------------------------------------ emission */

/* One node's expression: `const T vI = ...;`. */
static void emit_node(gen *g, int32_t i)
{
    const kiln_ir_node *x = &g->w.n[i];
    int op = x->op;
    int a0 = x->args[0];
    int sdt = a0 >= 0 ? g->w.n[res(g, a0)].dtype : x->dtype; /* operand dtype */
    static const char *const fn[KILN_OP_COUNT] = {
        [KILN_OP_NEG] = "kneg", [KILN_OP_ABS] = "kabs", [KILN_OP_EXP] = "kexp",
        [KILN_OP_LOG] = "klog", [KILN_OP_SQRT] = "ksqrt",
        [KILN_OP_RSQRT] = "krsqrt", [KILN_OP_RECIPROCAL] = "krcp",
        [KILN_OP_SIN] = "ksin", [KILN_OP_COS] = "kcos", [KILN_OP_TANH] = "ktanh",
        [KILN_OP_SIGMOID] = "ksigmoid", [KILN_OP_RELU] = "krelu",
        [KILN_OP_ERF] = "kerf", [KILN_OP_FLOOR] = "kfloor",
        [KILN_OP_CEIL] = "kceil", [KILN_OP_ADD] = "kadd", [KILN_OP_SUB] = "ksub",
        [KILN_OP_MUL] = "kmul", [KILN_OP_DIV] = "kdiv", [KILN_OP_POW] = "kpow",
        [KILN_OP_MAXIMUM] = "kmax", [KILN_OP_MINIMUM] = "kmin",
        [KILN_OP_EQ] = "keq", [KILN_OP_NE] = "kne", [KILN_OP_LT] = "klt",
        [KILN_OP_LE] = "kle", [KILN_OP_GT] = "kgt", [KILN_OP_GE] = "kge",
        [KILN_OP_WHERE] = "kwhere", [KILN_OP_FMA] = "kfma"};
    P("    const %s v%d = ", ctype[x->dtype], (int)i);
    if (op == KILN_OP_AND || op == KILN_OP_OR) {
        P("(");
        arg(g, a0);
        P(op == KILN_OP_AND ? " && " : " || ");
        arg(g, x->args[1]);
        P(");\n");
        return;
    }
    if (op == KILN_OP_NOT) {
        P("!");
        arg(g, a0);
        P(";\n");
        return;
    }
    if (op == KILN_OP_CAST) {
        int to = x->dtype, from = sdt;
        /* prefix(arg)suffix per (to, from) */
        const char *pre = "(", *suf = ")";
        if (to == from) { pre = "("; }
        else if (to == KILN_BOOL) {
            if (from == KILN_F16 || from == KILN_BF16) { pre = "((("; suf = ") & 0x7fffu) != 0u)"; }
            else { pre = "(("; suf = ") != 0)"; }
        } else if (from == KILN_BOOL) {
            static const char *const one[KILN_DTYPE_COUNT] = {
                "true", "1", "1LL", "(kh16)0x3c00u", "(kh16)0x3f80u", "1.0f", "1.0"};
            static const char *const zero[KILN_DTYPE_COUNT] = {
                "false", "0", "0LL", "(kh16)0u", "(kh16)0u", "0.0f", "0.0"};
            P("(");
            arg(g, a0);
            P(" ? %s : %s);\n", one[to], zero[to]);
            return;
        } else {
            switch (to * 8 + from) {
#define C2(t, f) ((t) * 8 + (f))
            case C2(KILN_I32, KILN_I64): pre = "((int)(unsigned)(unsigned long long)("; suf = "))"; break;
            case C2(KILN_I32, KILN_F32): case C2(KILN_I32, KILN_F64): pre = "ksat_i32("; break;
            case C2(KILN_I32, KILN_F16): pre = "ksat_i32(kh2f("; suf = "))"; break;
            case C2(KILN_I32, KILN_BF16): pre = "ksat_i32(kb2f("; suf = "))"; break;
            case C2(KILN_I64, KILN_I32): pre = "((long long)("; suf = "))"; break;
            case C2(KILN_I64, KILN_F32): case C2(KILN_I64, KILN_F64): pre = "ksat_i64("; break;
            case C2(KILN_I64, KILN_F16): pre = "ksat_i64(kh2f("; suf = "))"; break;
            case C2(KILN_I64, KILN_BF16): pre = "ksat_i64(kb2f("; suf = "))"; break;
            case C2(KILN_F16, KILN_I32): pre = "kd2h((double)("; suf = "))"; break;
            case C2(KILN_F16, KILN_I64): pre = "kll2h("; break;
            case C2(KILN_F16, KILN_BF16): pre = "kf2h(kb2f("; suf = "))"; break;
            case C2(KILN_F16, KILN_F32): pre = "kf2h("; break;
            case C2(KILN_F16, KILN_F64): pre = "kd2h("; break;
            case C2(KILN_BF16, KILN_I32): pre = "kd2b((double)("; suf = "))"; break;
            case C2(KILN_BF16, KILN_I64): pre = "kll2b("; break;
            case C2(KILN_BF16, KILN_F16): pre = "kf2b(kh2f("; suf = "))"; break;
            case C2(KILN_BF16, KILN_F32): pre = "kf2b("; break;
            case C2(KILN_BF16, KILN_F64): pre = "kd2b("; break;
            case C2(KILN_F32, KILN_I32): pre = "__int2float_rn("; break;
            case C2(KILN_F32, KILN_I64): pre = "__ll2float_rn("; break;
            case C2(KILN_F32, KILN_F16): pre = "kh2f("; break;
            case C2(KILN_F32, KILN_BF16): pre = "kb2f("; break;
            case C2(KILN_F32, KILN_F64): pre = "__double2float_rn("; break;
            case C2(KILN_F64, KILN_I32): pre = "((double)("; suf = "))"; break; /* exact */
            case C2(KILN_F64, KILN_I64): pre = "__ll2double_rn("; break;
            case C2(KILN_F64, KILN_F16): pre = "((double)kh2f("; suf = "))"; break;
            case C2(KILN_F64, KILN_BF16): pre = "((double)kb2f("; suf = "))"; break;
            case C2(KILN_F64, KILN_F32): pre = "((double)("; suf = "))"; break; /* exact */
#undef C2
            default: pre = "("; break;
            }
        }
        P("%s", pre);
        arg(g, a0);
        P("%s;\n", suf);
        return;
    }
    P("%s(", fn[op] ? fn[op] : "kbad");
    for (int k = 0; k < 3 && x->args[k] >= 0; k++) {
        if (k)
            P(", ");
        arg(g, x->args[k]);
    }
    P(");\n");
}

/* Is node i emitted as a statement of the given phase? */
static int in_phase(const gen *g, uint32_t i, int pre_phase)
{
    const kiln_ir_node *x = &g->w.n[i];
    if (!g->live[i] || g->w.alias[i] != (int32_t)i || x->op == KILN_OP_INPUT ||
        x->op == KILN_OP_CONST || (int32_t)i == g->sp)
        return 0;
    return pre_phase ? g->pre[i] : !g->pre[i];
}

/* INPUT nodes read by a phase, in node order. */
static int phase_input(const gen *g, uint32_t i, int pre_phase)
{
    const kiln_ir_node *x = &g->w.n[i];
    if (x->op != KILN_OP_INPUT || g->w.alias[i] != (int32_t)i || !g->live[i])
        return 0;
    return pre_phase ? g->pre[i] : g->post_use[i];
}

static void emit_struct(gen *g)
{
    int R = g->R;
    const kiln_ir_segment *s = g->seg;
    P("typedef %s ix;\n", s->index64 ? "unsigned long long" : "unsigned int");
    P("struct KArgs {\n    unsigned long long size[%d];\n", R);
    for (uint32_t k = 0; k < s->n_inputs; k++) {
        int dt = g->in_dtype[k];
        P("    const %s *in%u;\n    unsigned long long is%u[%d];\n",
          dt >= 0 ? stype[dt] : "unsigned char", k, k, R);
    }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        int dt = g->w.n[s->outputs[k]].dtype;
        P("    %s *out%u;\n    unsigned long long os%u[%d];\n", stype[dt], k, k, R);
    }
    P("    unsigned long long n, j, s, mode;\n    void *scratch;\n"
      "    unsigned long long nd, chunk, spare;\n};\n");
}

/* kiln_post(sp value, post inputs..., outputs&...). */
static void emit_post(gen *g)
{
    const kiln_ir_segment *s = g->seg;
    int first = 1;
    P("__device__ __forceinline__ void kiln_post(");
    if (g->sp >= 0) {
        P("const %s v%d", ctype[g->w.n[g->sp].dtype], (int)g->sp);
        first = 0;
    }
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (phase_input(g, i, 0)) {
            P("%sconst %s v%u", first ? "" : ", ", ctype[g->w.n[i].dtype], i);
            first = 0;
        }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        P("%s%s &r%u", first ? "" : ", ", ctype[g->w.n[s->outputs[k]].dtype], k);
        first = 0;
    }
    P(")\n{\n");
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (in_phase(g, i, 0))
            emit_node(g, (int32_t)i);
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        P("    r%u = ", k);
        arg(g, s->outputs[k]);
        P(";\n");
    }
    P("}\n");
}

/* Argument list of a kiln_post call: sp value expr, loaded inputs, r0.. */
static void post_call(gen *g, const char *spv, const char *off_prefix)
{
    const kiln_ir_segment *s = g->seg;
    int first = 1;
    P("kiln_post(");
    if (g->sp >= 0) {
        P("%s", spv);
        first = 0;
    }
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (phase_input(g, i, 0)) {
            int k = g->w.n[i].io;
            P("%skld(a.in%d + %si%d)", first ? "" : ", ", k, off_prefix, k);
            first = 0;
        }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        P("%sr%u", first ? "" : ", ", k);
        first = 0;
    }
    P(");\n");
}

static void decl_results(gen *g, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_outputs; k++)
        P("%s%s r%u;\n", ind, ctype[g->w.n[s->outputs[k]].dtype], k);
}

static void store_results(gen *g, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_outputs; k++)
        P("%sa.out%u[oo%u] = kst(r%u);\n", ind, k, k, k);
}

/* Does input k carry view flag f (KILN_CUDA_V_*)? */
static int in_has(const gen *g, uint32_t k, unsigned f)
{
    return (kiln__cuda_in_flags(&g->info, k) & f) != 0;
}

/* Number of inputs that carry view flag f. */
static uint32_t n_in_with(const gen *g, unsigned f)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < g->seg->n_inputs; k++)
        if (in_has(g, k, f))
            n++;
    return n;
}

/* Offsets of views for the kept-axis index `o` (reductions): declares
** `ix <prefix>i<k>` for inputs with a flag of in_flag and `oo<k>` for all
** outputs when outs != 0.  Axes in `axes_mask` are decomposed (row-major,
** last fastest); other axes contribute index 0. */
static void emit_decompose(gen *g, const char *idx, uint32_t axes_mask,
                           unsigned in_flag, int outs, const char *pfx,
                           const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, in_flag))
            P("%six %si%u = 0;\n", ind, pfx, k);
    if (outs)
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("%six oo%u = 0;\n", ind, k);
    int axes[KILN_MAX_RANK], na = 0;
    for (int d = 0; d < g->info.rank; d++)
        if (axes_mask >> d & 1u)
            axes[na++] = d;
    /* No view takes an offset: the coordinates would be unused (NVRTC
    ** warning 177, an error under warnings-are-errors). */
    if (na == 0 || (!outs && n_in_with(g, in_flag) == 0))
        return;
    P("%s{\n", ind);
    if (na > 1)
        P("%s    ix rem = %s;\n", ind, idx);
    for (int t = na - 1; t >= 0; t--) {
        int d = axes[t];
        if (na == 1)
            P("%s    const ix c%d = %s;\n", ind, d, idx);
        else if (t == 0)
            P("%s    const ix c%d = rem;\n", ind, d);
        else
            P("%s    const ix q%d = rem / (ix)a.size[%d];\n"
              "%s    const ix c%d = rem - q%d * (ix)a.size[%d];\n"
              "%s    rem = q%d;\n", ind, d, d, ind, d, d, d, ind, d);
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, in_flag))
                P("%s    %si%u += c%d * (ix)a.is%u[%d];\n", ind, pfx, k, d, k, d);
        if (outs)
            for (uint32_t k = 0; k < s->n_outputs; k++)
                P("%s    oo%u += c%d * (ix)a.os%u[%d];\n", ind, k, d, k, d);
    }
    P("%s}\n", ind);
}

/* Set KILN_CUDA_V_PRE / V_POST on the inputs each phase reads. */
static void mark_inputs(gen *g)
{
    for (uint32_t i = 0; i < g->w.nn; i++) {
        if (phase_input(g, i, 1))
            g->info.view[g->w.n[i].io] |= KILN_CUDA_V_PRE;
        if (phase_input(g, i, 0))
            g->info.view[g->w.n[i].io] |= KILN_CUDA_V_POST;
    }
}

/* ------------------------------------------------------------ pointwise */

/* Smallest element size among the inputs with a flag of in_flag and, with
** outs, the outputs. */
static int min_view_size(const gen *g, unsigned in_flag, int outs)
{
    const kiln_ir_segment *s = g->seg;
    int m = 8;
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, in_flag)) {
            int sz = (int)kiln_dtype_size((kiln_dtype)g->in_dtype[k]);
            if (sz < m) m = sz;
        }
    for (uint32_t k = 0; outs && k < s->n_outputs; k++) {
        int sz = (int)kiln_dtype_size((kiln_dtype)g->w.n[s->outputs[k]].dtype);
        if (sz < m) m = sz;
    }
    return m;
}

static uint32_t trait_in(const gen *g, uint32_t k)
{
    return g->seg->input_traits ? g->seg->input_traits[k] : 0;
}
static uint32_t trait_out(const gen *g, uint32_t k)
{
    return g->seg->output_traits ? g->seg->output_traits[k] : 0;
}

/* Offsets for linear index `idx` over the collapsed domain (a.nd dims):
** flat views (KILN_CUDA_V_FLAT) take the index itself, the others their
** strides.  Only the inputs kiln_post reads get an offset. */
static void emit_pw_offsets(gen *g, const char *idx, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    const kiln_cuda_kinfo *in = &g->info;
    int strided = 0;
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_POST)) {
            if (in_has(g, k, KILN_CUDA_V_FLAT))
                P("%sconst ix oi%u = %s;\n", ind, k, idx);
            else {
                P("%six oi%u = 0;\n", ind, k);
                strided = 1;
            }
        }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        if (kiln__cuda_out_flags(in, k) & KILN_CUDA_V_FLAT)
            P("%sconst ix oo%u = %s;\n", ind, k, idx);
        else {
            P("%six oo%u = 0;\n", ind, k);
            strided = 1;
        }
    }
    if (!strided)
        return;
    int R = g->R;
    P("%s{\n%s    ix rem = %s;\n", ind, ind, idx);
    P("%s    const int lo = %d - (int)a.nd;\n", ind, R);
    P("%s#pragma unroll\n%s    for (int d = %d; d >= 0; --d) {\n", ind, ind, R - 1);
    P("%s        if (d < lo) break;\n", ind);
    P("%s        ix c = rem;\n", ind);
    P("%s        if (d > lo) { const ix q = rem / (ix)a.size[d]; c = rem - q * (ix)a.size[d]; rem = q; }\n", ind);
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_POST) && !in_has(g, k, KILN_CUDA_V_FLAT))
            P("%s        oi%u += c * (ix)a.is%u[d];\n", ind, k, k);
    for (uint32_t k = 0; k < s->n_outputs; k++)
        if (!(kiln__cuda_out_flags(in, k) & KILN_CUDA_V_FLAT))
            P("%s        oo%u += c * (ix)a.os%u[d];\n", ind, k, k);
    P("%s    }\n%s}\n", ind, ind);
}

static void emit_pointwise(gen *g)
{
    const kiln_ir_segment *s = g->seg;
    int vec = g->info.vec;
    emit_post(g);
    P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
      "    const ix n = (ix)a.n;\n"
      "    const ix step = (ix)blockDim.x * (ix)gridDim.x;\n"
      "    const ix t0 = (ix)blockIdx.x * (ix)blockDim.x + (ix)threadIdx.x;\n"
      "    ix tail = 0;\n");
    if (vec > 0) {
        P("    if (a.mode & 1ull) {\n"
          "        const ix nv = n / %d;\n"
          "        for (ix v = t0; v < nv; v += step) {\n"
          "            const ix i = v * %d;\n", vec, vec);
        emit_pw_offsets(g, "i", "            ");
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_POST))
                P("            KVec<%s, %d> x%u;\n"
                  "            kldv(x%u, a.in%u, oi%u, a.is%u[%d]);\n",
                  stype[g->in_dtype[k]], vec, k, k, k, k, k, g->R - 1);
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("            KVec<%s, %d> y%u;\n", stype[g->w.n[s->outputs[k]].dtype], vec, k);
        P("#pragma unroll\n            for (int e = 0; e < %d; ++e) {\n", vec);
        decl_results(g, "                ");
        /* call with vector lanes */
        {
            int first = 1;
            P("                kiln_post(");
            for (uint32_t i = 0; i < g->w.nn; i++)
                if (phase_input(g, i, 0)) {
                    P("%skcv(x%d.v[e])", first ? "" : ", ", g->w.n[i].io);
                    first = 0;
                }
            for (uint32_t k = 0; k < s->n_outputs; k++) {
                P("%sr%u", first ? "" : ", ", k);
                first = 0;
            }
            P(");\n");
        }
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("                y%u.v[e] = kst(r%u);\n", k, k);
        P("            }\n");
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("            kstv(a.out%u, oo%u, y%u);\n", k, k, k);
        P("        }\n        tail = nv * %d;\n    }\n", vec);
    }
    P("    for (ix i = tail + t0; i < n; i += step) {\n");
    emit_pw_offsets(g, "i", "        ");
    decl_results(g, "        ");
    P("        ");
    post_call(g, "", "o");
    store_results(g, "        ");
    P("    }\n}\n");
}

/* ------------------------------------------------------------ reductions */

static const char *acc_type(int op, int dt, char *buf, size_t cap)
{
    if (op == KILN_OP_SUM) {
        static const char *const sums[KILN_DTYPE_COUNT] = {
            NULL, "KAccSumI32", "KAccSumI64", NULL, NULL, "KAccSumF32", "KAccSumF64"};
        return sums[dt];
    }
    if (dt == KILN_BOOL || dt == KILN_F16 || dt == KILN_BF16)
        return NULL;
    snprintf(buf, cap, "%s<%s>", op == KILN_OP_RMAX ? "KAccMax" : "KAccMin",
             ctype[dt]);
    return buf;
}

static size_t acc_size(int op, int dt)
{
    if (op == KILN_OP_SUM)
        return dt == KILN_F64 ? 16 : dt == KILN_F32 ? 8 : kiln_dtype_size((kiln_dtype)dt);
    return kiln_dtype_size((kiln_dtype)dt);
}

/* kiln_pre(pre inputs...) returning the REDUCE operand. */
static void emit_pre(gen *g)
{
    int32_t opnd = res(g, g->w.n[g->sp].args[0]);
    int first = 1;
    P("__device__ __forceinline__ %s kiln_pre(", ctype[g->w.n[opnd].dtype]);
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (phase_input(g, i, 1)) {
            P("%sconst %s v%u", first ? "" : ", ", ctype[g->w.n[i].dtype], i);
            first = 0;
        }
    P(")\n{\n");
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (in_phase(g, i, 1))
            emit_node(g, (int32_t)i);
    P("    return ");
    arg(g, opnd);
    P(";\n}\n");
}

/* Call of kiln_pre with scalar loads at offsets oi<k> or vector lanes. */
static void pre_call(gen *g, int lanes)
{
    int first = 1;
    P("kiln_pre(");
    for (uint32_t i = 0; i < g->w.nn; i++)
        if (phase_input(g, i, 1)) {
            int k = g->w.n[i].io;
            if (lanes)
                P("%skcv(x%d.v[e])", first ? "" : ", ", k);
            else
                P("%skld(a.in%d + oi%d)", first ? "" : ", ", k, k);
            first = 0;
        }
    P(")");
}

/* Offsets oi<k> = bi<k> + (reduced index j decomposed over red axes) of
** the inputs kiln_pre reads. */
static void emit_joffsets(gen *g, uint32_t red, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    int axes[KILN_MAX_RANK], na = 0;
    for (int d = 0; d < g->info.rank; d++)
        if (red >> d & 1u)
            axes[na++] = d;
    if (n_in_with(g, KILN_CUDA_V_PRE) == 0)
        return; /* no offsets to compute: no unused coordinates */
    if (na == 1) {
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_PRE))
                P("%sconst ix oi%u = bi%u + j * (ix)a.is%u[%d];\n", ind, k, k, k, axes[0]);
        return;
    }
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_PRE))
            P("%six oi%u = bi%u;\n", ind, k, k);
    P("%s{\n%s    ix rem = j;\n", ind, ind);
    for (int t = na - 1; t >= 0; t--) {
        int d = axes[t];
        if (t == 0)
            P("%s    const ix c%d = rem;\n", ind, d);
        else
            P("%s    const ix q%d = rem / (ix)a.size[%d];\n"
              "%s    const ix c%d = rem - q%d * (ix)a.size[%d];\n"
              "%s    rem = q%d;\n", ind, d, d, ind, d, d, d, ind, d);
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_PRE))
                P("%s    oi%u += c%d * (ix)a.is%u[%d];\n", ind, k, d, k, d);
    }
    P("%s}\n", ind);
}

static void emit_finalize(gen *g, const char *rt, uint32_t kept)
{
    P("__device__ __forceinline__ void kiln_finalize(const KArgs &a, const ix o, const %s red)\n{\n", rt);
    emit_decompose(g, "o", kept, KILN_CUDA_V_POST, 1, "o", "    ");
    decl_results(g, "    ");
    P("    ");
    post_call(g, "red", "o");
    store_results(g, "    ");
    P("}\n");
}

static void emit_reduction(gen *g, const char *acc)
{
    const kiln_ir_segment *s = g->seg;
    const kiln_ir_node *sp = &g->w.n[g->sp];
    uint32_t all = (g->info.rank > 0) ? ((1u << g->info.rank) - 1u) : 0;
    uint32_t red = sp->axes & all, kept = all & ~red;
    int vec = g->info.vec;
    (void)s;
    emit_pre(g);
    emit_post(g);
    emit_finalize(g, ctype[sp->dtype], kept);
    if (g->info.kind == KILN_CK_REDUCE_INNER) {
        P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
          "    __shared__ %s ksm[8];\n"
          "    const ix O = (ix)a.n, J = (ix)a.j, chunk = (ix)a.chunk;\n"
          "    const unsigned tpr = (unsigned)(a.mode >> 8);\n"
          "    const ix row = (ix)blockIdx.x * (ix)(256u / tpr) + (ix)(threadIdx.x / tpr);\n"
          "    const unsigned lane = threadIdx.x %% tpr;\n"
          "    const ix split = (ix)blockIdx.y;\n"
          "    %s acc;\n    acc.init();\n"
          "    if (row < O) {\n", acc, acc);
        emit_decompose(g, "row", kept, KILN_CUDA_V_PRE, 0, "b", "        ");
        P("        const ix j0 = split * chunk;\n"
          "        const ix j1 = (J - j0 < chunk) ? J : j0 + chunk;\n");
        if (vec > 0) {
            P("        if (a.mode & 1ull) {\n"
              "#pragma unroll 4\n"
              "            for (ix j = j0 + (ix)lane * %d; j < j1; j += (ix)tpr * %d) {\n", vec, vec);
            for (uint32_t k = 0; k < s->n_inputs; k++)
                if (in_has(g, k, KILN_CUDA_V_PRE))
                    P("                KVec<%s, %d> x%u;\n"
                      "                kldv(x%u, a.in%u, bi%u + j * (ix)a.is%u[%d], a.is%u[%d]);\n",
                      stype[g->in_dtype[k]], vec, k, k, k, k, k, g->R - 1, k, g->R - 1);
            P("#pragma unroll\n                for (int e = 0; e < %d; ++e) acc.add(", vec);
            pre_call(g, 1);
            P(");\n            }\n        } else\n");
        }
        P("#pragma unroll 4\n        for (ix j = j0 + (ix)lane; j < j1; j += (ix)tpr) {\n");
        emit_joffsets(g, red, "            ");
        P("            acc.add(");
        pre_call(g, 0);
        P(");\n        }\n    }\n"
          "    kwarp_reduce(acc);\n"
          "    if (tpr == 256u) {\n"
          "        if ((threadIdx.x & 31u) == 0u) ksm[threadIdx.x >> 5] = acc;\n"
          "        __syncthreads();\n"
          "        if (threadIdx.x != 0u) return;\n"
          "        acc = ksm[0];\n"
          "#pragma unroll\n"
          "        for (int w = 1; w < 8; ++w) acc.merge(ksm[w]);\n"
          "    } else if (lane != 0u) {\n"
          "        return;\n"
          "    }\n"
          "    if (row >= O) return;\n"
          "    if (J == 0) acc.empty();\n"
          "    if (a.s == 1ull) kiln_finalize(a, row, acc.result());\n"
          "    else reinterpret_cast<%s *>(a.scratch)[split * O + row] = acc;\n"
          "}\n", acc);
    } else {
        int cv = vec > 0 ? vec : 1;
        P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
          "    __shared__ %s ksm[8][32 * %d];\n"
          "    const ix O = (ix)a.n, J = (ix)a.j, chunk = (ix)a.chunk;\n"
          "    const unsigned tx = threadIdx.x & 31u, ty = threadIdx.x >> 5;\n"
          "    const ix cv = (a.mode & 1ull) ? %d : 1;\n"
          "    const ix col = ((ix)blockIdx.x * 32u + tx) * cv;\n"
          "    const ix split = (ix)blockIdx.y;\n"
          "    %s acc[%d];\n"
          "#pragma unroll\n    for (int e = 0; e < %d; ++e) acc[e].init();\n"
          "    if (col < O) {\n", acc, cv, cv, acc, cv, cv);
        emit_decompose(g, "col", kept, KILN_CUDA_V_PRE, 0, "b", "        ");
        P("        const ix j0 = split * chunk;\n"
          "        const ix j1 = (J - j0 < chunk) ? J : j0 + chunk;\n");
        if (vec > 0) {
            P("        if (cv > 1) {\n"
              "#pragma unroll 4\n"
              "            for (ix j = j0 + ty; j < j1; j += 8u) {\n");
            emit_joffsets(g, red, "                ");
            for (uint32_t k = 0; k < s->n_inputs; k++)
                if (in_has(g, k, KILN_CUDA_V_PRE))
                    P("                KVec<%s, %d> x%u;\n"
                      "                kldv(x%u, a.in%u, oi%u, a.is%u[%d]);\n",
                      stype[g->in_dtype[k]], vec, k, k, k, k, k, g->R - 1);
            P("#pragma unroll\n                for (int e = 0; e < %d; ++e) acc[e].add(", vec);
            pre_call(g, 1);
            P(");\n            }\n        } else\n");
        }
        P("#pragma unroll 4\n        for (ix j = j0 + ty; j < j1; j += 8u) {\n");
        emit_joffsets(g, red, "            ");
        P("            acc[0].add(");
        pre_call(g, 0);
        P(");\n        }\n    }\n"
          "#pragma unroll\n    for (int e = 0; e < %d; ++e) ksm[ty][tx * %d + e] = acc[e];\n"
          "    __syncthreads();\n"
          "    if (ty != 0u || col >= O) return;\n"
          "    for (ix e = 0; e < cv; ++e) {\n"
          "        %s r = ksm[0][tx * %d + e];\n"
          "#pragma unroll\n"
          "        for (int y = 1; y < 8; ++y) r.merge(ksm[y][tx * %d + e]);\n"
          "        const ix o = col + e;\n"
          "        if (o >= O) break;\n"
          "        if (J == 0) r.empty();\n"
          "        if (a.s == 1ull) kiln_finalize(a, o, r.result());\n"
          "        else reinterpret_cast<%s *>(a.scratch)[split * O + o] = r;\n"
          "    }\n}\n", cv, cv, acc, cv, cv, acc);
    }
    /* second pass: merge the S partials of each kept index in split order */
    P("extern \"C\" __global__ void __launch_bounds__(256) kiln_finish(const KArgs a)\n{\n"
      "    const ix O = (ix)a.n, S = (ix)a.s;\n"
      "    const %s *p = reinterpret_cast<const %s *>(a.scratch);\n"
      "    const ix step = (ix)blockDim.x * (ix)gridDim.x;\n"
      "    for (ix o = (ix)blockIdx.x * (ix)blockDim.x + (ix)threadIdx.x; o < O; o += step) {\n"
      "        %s r = p[o];\n"
      "        for (ix t = 1; t < S; ++t) r.merge(p[t * O + o]);\n"
      "        kiln_finalize(a, o, r.result());\n"
      "    }\n}\n", acc, acc, acc);
}

/* ------------------------------------------------------------ matmul */

static void emit_matmul(gen *g)
{
    int A = g->info.mm_a, B = g->info.mm_b, dt = g->info.mm_dtype;
    const char *wid = dt == KILN_F16 ? "(double)kh2f" : dt == KILN_BF16 ? "(double)kb2f" : "(double)";
    emit_post(g);
    P("__device__ __forceinline__ void kiln_finalize_mm(const KArgs &a, const ix m, const ix nn, const float red)\n{\n");
    {
        const kiln_ir_segment *s = g->seg;
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_POST))
                P("    const ix oi%u = m * (ix)a.is%u[0] + nn * (ix)a.is%u[1];\n", k, k, k);
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("    const ix oo%u = m * (ix)a.os%u[0] + nn * (ix)a.os%u[1];\n", k, k, k);
    }
    decl_results(g, "    ");
    P("    ");
    post_call(g, "red", "o");
    store_results(g, "    ");
    P("}\n");
    P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
      "    __shared__ double As[16][64 + 1];\n"
      "    __shared__ double Bs[16][64 + 1];\n"
      "    const ix M = (ix)a.size[0], N = (ix)a.size[1], K = (ix)a.s;\n"
      "    const ix m0 = (ix)blockIdx.y * 64u, n0 = (ix)blockIdx.x * 64u;\n"
      "    const unsigned tx = threadIdx.x & 15u, ty = threadIdx.x >> 4;\n"
      "    const ix sa0 = (ix)a.is%d[0], sa1 = (ix)a.is%d[1];\n"
      "    const ix sb0 = (ix)a.is%d[0], sb1 = (ix)a.is%d[1];\n"
      "    double acc[4][4];\n"
      "#pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
      "#pragma unroll\n        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;\n"
      "    for (ix k0 = 0; k0 < K; k0 += 16u) {\n"
      "        for (unsigned l = threadIdx.x; l < 64u * 16u; l += 256u) {\n"
      "            const unsigned r = l >> 4, c = l & 15u;\n"
      "            const ix gm = m0 + r, gk = k0 + c;\n"
      "            As[c][r] = (gm < M && gk < K) ? %s(a.in%d[gm * sa0 + gk * sa1]) : 0.0;\n"
      "            const unsigned kr = l >> 6, nc = l & 63u;\n"
      "            const ix gk2 = k0 + kr, gn = n0 + nc;\n"
      "            Bs[kr][nc] = (gk2 < K && gn < N) ? %s(a.in%d[gk2 * sb0 + gn * sb1]) : 0.0;\n"
      "        }\n"
      "        __syncthreads();\n"
      "#pragma unroll\n"
      "        for (int kk = 0; kk < 16; ++kk) {\n"
      "            double ar[4], br[4];\n"
      "#pragma unroll\n            for (int i = 0; i < 4; ++i) ar[i] = As[kk][ty + 16u * i];\n"
      "#pragma unroll\n            for (int j = 0; j < 4; ++j) br[j] = Bs[kk][tx + 16u * j];\n"
      "#pragma unroll\n            for (int i = 0; i < 4; ++i)\n"
      "#pragma unroll\n                for (int j = 0; j < 4; ++j) acc[i][j] = __fma_rn(ar[i], br[j], acc[i][j]);\n"
      "        }\n"
      "        __syncthreads();\n"
      "    }\n"
      "#pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
      "#pragma unroll\n        for (int j = 0; j < 4; ++j) {\n"
      "            const ix m = m0 + ty + 16u * i, nn = n0 + tx + 16u * j;\n"
      "            if (m < M && nn < N) kiln_finalize_mm(a, m, nn, __double2float_rn(acc[i][j]));\n"
      "        }\n}\n", A, A, B, B, wid, A, wid, B);
}

/* ------------------------------------------------------------ schemes */

/* Which scheme, and its vector width: every view a phase reads must be
** 16-byte aligned for the vector path (the host still checks at launch). */
kiln_status kiln__cuda_emit(gen *g)
{
    const kiln_ir_segment *seg = g->seg;
    kiln_cuda_kinfo *in = &g->info;
    const int rank = in->rank;
    mark_inputs(g);

    int all_align = 1;
    for (uint32_t k = 0; k < seg->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_USED))
            all_align &= (trait_in(g, k) & KILN_TRAIT_ALIGN16) != 0;
    int out_align = 1;
    for (uint32_t k = 0; k < seg->n_outputs; k++)
        out_align &= (trait_out(g, k) & KILN_TRAIT_ALIGN16) != 0;

    emit_struct(g);
    if (seg->kind == KILN_SEGK_POINTWISE) {
        in->kind = KILN_CK_POINTWISE;
        if (kiln__ir_pass_on(g->ko->simplify_off, KILN_SP_INDEX)) {
            for (uint32_t k = 0; k < seg->n_inputs; k++)
                if (trait_in(g, k) & KILN_TRAIT_CONTIG)
                    in->view[k] |= KILN_CUDA_V_FLAT;
            for (uint32_t k = 0; k < seg->n_outputs; k++)
                if (trait_out(g, k) & KILN_TRAIT_CONTIG)
                    in->view[seg->n_inputs + k] |= KILN_CUDA_V_FLAT;
        }
        if (all_align && out_align) {
            int m = min_view_size(g, KILN_CUDA_V_USED, 1);
            in->vec = 16 / m > 8 ? 8 : 16 / m;
        }
        emit_pointwise(g);
    } else if (seg->kind == KILN_SEGK_REDUCTION) {
        const kiln_ir_node *sp = &g->w.n[g->sp];
        int opdt = g->w.n[res(g, sp->args[0])].dtype;
        char abuf[sizeof "KAccMax<long long>"]; /* the longest acc_type() */
        const char *acc = acc_type(sp->op, opdt, abuf, sizeof abuf);
        if (acc == NULL || opdt != sp->dtype) {
            return kiln__err(KILN_ERR_UNSUPPORTED, "cuda codegen: %s over %s",
                             kiln_op_name((kiln_op)sp->op),
                             kiln_dtype_name((kiln_dtype)opdt));
        }
        if (rank == 0)
            return kiln__err(KILN_ERR_UNSUPPORTED,
                             "cuda codegen: reduction of a rank-0 value");
        uint32_t all = (1u << rank) - 1u;
        in->red_axes = sp->axes & all;
        in->acc_bytes = acc_size(sp->op, opdt);
        int inner = (in->red_axes >> (rank - 1)) & 1u;
        in->kind = inner ? KILN_CK_REDUCE_INNER : KILN_CK_REDUCE_OUTER;
        int pre_align = 1, any_pre = 0;
        for (uint32_t k = 0; k < seg->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_PRE)) {
                pre_align &= (trait_in(g, k) & KILN_TRAIT_ALIGN16) != 0;
                any_pre = 1;
            }
        if (pre_align && any_pre &&
            (!inner || in->red_axes == (1u << (rank - 1)))) {
            int v = 16 / min_view_size(g, KILN_CUDA_V_PRE, 0);
            in->vec = inner ? (v > 8 ? 8 : v) : (v > 4 ? 4 : v);
        }
        emit_reduction(g, acc);
    } else {
        const kiln_ir_node *sp = &g->w.n[g->sp];
        int32_t a = res(g, sp->args[0]), b = res(g, sp->args[1]);
        if (rank != 2 || g->w.n[a].op != KILN_OP_INPUT || g->w.n[b].op != KILN_OP_INPUT ||
            g->w.n[a].dtype != g->w.n[b].dtype ||
            !(g->w.n[a].dtype == KILN_F16 || g->w.n[a].dtype == KILN_BF16 ||
              g->w.n[a].dtype == KILN_F32) ||
            sp->dtype != KILN_F32) {
            return kiln__err(KILN_ERR_UNSUPPORTED,
                             "cuda codegen: matmul needs two rank-2 INPUT operands "
                             "of f16/bf16/f32 and an f32 result");
        }
        in->kind = KILN_CK_MATMUL;
        in->mm_a = g->w.n[a].io;
        in->mm_b = g->w.n[b].io;
        in->mm_dtype = g->w.n[a].dtype;
        in->tile_m = in->tile_n = 64;
        emit_matmul(g);
    }
    return KILN_OK;
}
