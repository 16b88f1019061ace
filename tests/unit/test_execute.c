/*
** test_execute.c -- kiln_execute end to end on the reference backend:
** results (expected values computed here), the planner's segment kinds and
** matmul paths, contraction, validation errors, the info record, dumps,
** environment snapshot rules, tensors, and allocation-failure loops.
** The threads suite runs many executes with mixed options concurrently
** (also under ThreadSanitizer).
*/
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_util.h"
#include "internal.h"

static const char *PW =
    "kiln.fusion 1\n"
    "%a = input f32 [?, ?]\n"
    "%b = input f32 [1, ?]\n"
    "%c = input f32 [?]\n"
    "%m = mul %a %b\n"
    "%c2 = broadcast %c rank=2 new=[0]\n"
    "%s = add %m %c2\n"
    "%one = const f32 0x3f800000\n"
    "%t = sub %s %one\n"
    "output %t\n"
    "output %m\n";

START_TEST(pointwise_broadcast_views)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(PW);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, c[3] = {100, 200, 300};
    int64_t s23[2] = {2, 3}, s13[2] = {1, 3}, s3[1] = {3};
    kiln_tensor *in[3] = {tu_tensor(KILN_F32, 2, s23, NULL, a),
                          tu_tensor(KILN_F32, 2, s13, NULL, b),
                          tu_tensor(KILN_F32, 1, s3, NULL, c)};
    float o0[6] = {0};
    kiln_tensor *out[2] = {tu_tensor(KILN_F32, 2, s23, NULL, o0), NULL};
    ck_assert_int_eq(kiln_execute(ctx, f, in, 3, out, 2, NULL, NULL), KILN_OK);
    ck_assert_ptr_nonnull(out[1]); /* allocated by the runtime */
    const float *o1 = kiln_tensor_data(out[1]);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            float m = a[i * 3 + j] * b[j];
            ck_assert_float_eq(o1[i * 3 + j], m);
            ck_assert_float_eq(o0[i * 3 + j], m + c[j] - 1.0f);
        }
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(out[1]);
    for (int i = 0; i < 3; i++)
        kiln_tensor_destroy(in[i]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* Outputs that are an input, a constant or a broadcast view are copies;
** the input is never written. */
START_TEST(outputs_that_are_inputs_or_constants)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?]\n"
                               "%c = const f32 0x40400000\n"
                               "%b = broadcast %x rank=2 new=[0]\n"
                               "%y = mul %x %c\n"
                               "output %x\noutput %c\noutput %b\noutput %y\n");
    float x[3] = {1, 2, 3};
    int64_t s3[1] = {3};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 1, s3, NULL, x)};
    kiln_tensor *out[4] = {NULL, NULL, NULL, NULL};
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 4, NULL, NULL), KILN_OK);
    const float *o0 = kiln_tensor_data(out[0]), *o1 = kiln_tensor_data(out[1]);
    const float *o2 = kiln_tensor_data(out[2]), *o3 = kiln_tensor_data(out[3]);
    ck_assert_int_eq(kiln_tensor_rank(out[1]), 0);
    ck_assert_float_eq(o1[0], 3.0f);
    ck_assert_int_eq(kiln_tensor_rank(out[2]), 2);
    ck_assert_int_eq(kiln_tensor_sizes(out[2])[0], 1);
    for (int i = 0; i < 3; i++) {
        ck_assert_float_eq(x[i], (float)(i + 1)); /* input untouched */
        ck_assert_float_eq(o0[i], x[i]);
        ck_assert_float_eq(o2[i], x[i]);
        ck_assert_float_eq(o3[i], 3.0f * x[i]);
    }
    for (int j = 0; j < 4; j++)
        kiln_tensor_destroy(out[j]);
    kiln_tensor_destroy(in[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(strided_and_stride0_inputs)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                               "%y = input f32 [?, ?]\n%z = add %x %y\noutput %z\n");
    /* x: the transpose of a 3x2 buffer; y: a row repeated by stride 0 */
    float xb[6] = {1, 2, 3, 4, 5, 6}, yb[3] = {10, 20, 30}, o[6];
    int64_t sz[2] = {2, 3}, xs[2] = {1, 2}, ys[2] = {0, 1};
    kiln_tensor *in[2] = {tu_tensor(KILN_F32, 2, sz, xs, xb),
                          tu_tensor(KILN_F32, 2, sz, ys, yb)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 2, sz, NULL, o)};
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, NULL, NULL), KILN_OK);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            ck_assert_float_eq(o[i * 3 + j], xb[j * 2 + i] + yb[j]);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(in[1]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* sum, max (keepdim), NaN propagation, empty axes. */
START_TEST(reductions)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                               "%s = sum %x axes=[1]\n"
                               "%m = max %x axes=[0] keepdim\n"
                               "%n = neg %s\n"
                               "output %n\noutput %m\n");
    float x[6] = {1, 2, 3, 4, NAN, 6};
    int64_t sz[2] = {2, 3};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 2, sz, NULL, x)};
    kiln_tensor *out[2] = {NULL, NULL};
    kiln_exec_info *info;
    ck_assert_int_eq(kiln_exec_info_create(&info), KILN_OK);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 2, NULL, info), KILN_OK);
    const float *n = kiln_tensor_data(out[0]), *m = kiln_tensor_data(out[1]);
    ck_assert_int_eq(kiln_tensor_rank(out[0]), 1);
    ck_assert_int_eq(kiln_tensor_sizes(out[0])[0], 2);
    ck_assert_float_eq(n[0], -6.0f);
    ck_assert(isnan(n[1]));
    ck_assert_int_eq(kiln_tensor_rank(out[1]), 2);
    ck_assert_int_eq(kiln_tensor_sizes(out[1])[0], 1);
    ck_assert_float_eq(m[0], 4.0f);
    ck_assert(isnan(m[1]));
    ck_assert_float_eq(m[2], 6.0f);
    /* two reductions -> two reduction segments (neg joins the sum's) */
    ck_assert_uint_eq(kiln_exec_info_segment_count(info), 2);
    ck_assert_str_eq(tu_seg(info, 0).what, "reduction");
    ck_assert_str_eq(tu_seg(info, 1).what, "reduction");
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(out[1]);
    kiln_tensor_destroy(in[0]);

    /* empty reduced axis: sum is 0, max is an error */
    int64_t ez[2] = {2, 0};
    float dummy = 0;
    kiln_tensor *e[1] = {tu_tensor(KILN_F32, 2, ez, NULL, &dummy)};
    out[0] = out[1] = NULL;
    kiln_fusion *mx = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                                "%m = min %x axes=[1]\n%s = sum %x axes=[0]\n"
                                "output %s\noutput %m\n");
    ck_assert_int_eq(kiln_execute(ctx, mx, e, 1, out, 2, NULL, NULL), KILN_ERR_SHAPE);
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_null(out[1]);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "size 0"));
    kiln_fusion_destroy(mx);
    kiln_fusion *g = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                               "%s = sum %x axes=[1]\noutput %s\n");
    ck_assert_int_eq(kiln_execute(ctx, g, e, 1, out, 1, NULL, NULL), KILN_OK);
    ck_assert_float_eq(((float *)kiln_tensor_data(out[0]))[0], 0.0f);
    ck_assert_float_eq(((float *)kiln_tensor_data(out[0]))[1], 0.0f);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(e[0]);
    kiln_fusion_destroy(g);
    kiln_exec_info_destroy(info);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(softmax_segments)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                               "%m = max %x axes=[1] keepdim\n%d = sub %x %m\n"
                               "%e = exp %d\n%s = sum %e axes=[1] keepdim\n"
                               "%y = div %e %s\noutput %y\n");
    float x[8] = {1, 2, 3, 4, -1, 0, 1, 8};
    int64_t sz[2] = {2, 4};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 2, sz, NULL, x)};
    kiln_tensor *out[1] = {NULL};
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, info), KILN_OK);
    const float *y = kiln_tensor_data(out[0]);
    for (int i = 0; i < 2; i++) {
        double mx = -INFINITY, s = 0;
        for (int j = 0; j < 4; j++)
            mx = fmax(mx, x[i * 4 + j]);
        for (int j = 0; j < 4; j++)
            s += exp(x[i * 4 + j] - mx);
        for (int j = 0; j < 4; j++)
            ck_assert_double_eq_tol(y[i * 4 + j], exp(x[i * 4 + j] - mx) / s, 1e-6);
    }
    ck_assert_uint_eq(kiln_exec_info_segment_count(info), 3);
    ck_assert_str_eq(tu_seg(info, 0).what, "reduction");
    ck_assert_str_eq(tu_seg(info, 1).what, "reduction");
    ck_assert_str_eq(tu_seg(info, 2).what, "pointwise");
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(in[0]);
    kiln_exec_info_destroy(info);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

static const char *MM = "kiln.fusion 1\n%a = input f32 [?, ?]\n%b = input f32 [?, ?]\n"
                        "%m = matmul %a %b\n%h = const f32 0x3f000000\n"
                        "%y = add %m %h\n%r = relu %y\noutput %r\n";

/* Runs MM with items; checks the result and the segment shapes. */
static void matmul_case(const char *en, const char *dis, kiln_status want,
                        const char *what0, const char *kind0, size_t n_segs)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(MM);
    float a[6] = {1, -2, 3, 4, 5, -6}, b[6] = {1, 0, 0, 1, 1, 1}, o[4];
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s22[2] = {2, 2};
    kiln_tensor *in[2] = {tu_tensor(KILN_F32, 2, s23, NULL, a),
                          tu_tensor(KILN_F32, 2, s32, NULL, b)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 2, s22, NULL, o)};
    const char *e1[1] = {en}, *d1[1] = {dis};
    kiln_exec_options eo = tu_opts(e1, en ? 1 : 0, d1, dis ? 1 : 0);
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, &eo, info), want);
    if (want == KILN_OK) {
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                float acc = 0;
                for (int k = 0; k < 3; k++)
                    acc += a[i * 3 + k] * b[k * 2 + j];
                acc += 0.5f;
                ck_assert_float_eq(o[i * 2 + j], acc > 0 ? acc : 0);
            }
        ck_assert_uint_eq(kiln_exec_info_segment_count(info), n_segs);
        kiln_segment_info s = tu_seg(info, 0);
        ck_assert_str_eq(s.what, what0);
        ck_assert_str_eq(kind0, s.kind == KILN_SEG_FALLBACK    ? "fallback"
                                : s.kind == KILN_SEG_GENERATED ? "generated"
                                                               : "reference");
    }
    kiln_exec_info_destroy(info);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(in[1]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}

START_TEST(matmul_paths)
{
    matmul_case(NULL, NULL, KILN_OK, "matmul_fallback", "fallback", 2);
    matmul_case(NULL, "matmul_expr_eval", KILN_OK, "matmul", "generated", 2);
    matmul_case("fuse_matmul", NULL, KILN_OK, "matmul_epilogue", "generated", 1);
    matmul_case(NULL, "fallback", KILN_ERR_FALLBACK_DISABLED, NULL, NULL, 0);
    matmul_case("fuse_matmul", "fallback", KILN_OK, "matmul_epilogue", "generated", 1);
    /* fuse_matmul wins over disable=matmul_expr_eval */
    matmul_case("fuse_matmul", "matmul_expr_eval", KILN_OK, "matmul_epilogue",
                "generated", 1);
}
END_TEST

/* a*b + c where the fma and the separately rounded results differ. */
static uint32_t contraction_result(const char *kf, const char *dis)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion(kf);
    float a = tu_f32(0x3f800001), c = -tu_f32(0x3f800002), o = 1, o2 = 1;
    int64_t one[1] = {1};
    kiln_tensor *in[3] = {tu_tensor(KILN_F32, 1, one, NULL, &a),
                          tu_tensor(KILN_F32, 1, one, NULL, &a),
                          tu_tensor(KILN_F32, 1, one, NULL, &c)};
    int n_out;
    kiln_fusion_num_outputs(f, &n_out);
    kiln_tensor *out[2] = {tu_tensor(KILN_F32, 1, one, NULL, &o),
                           tu_tensor(KILN_F32, 1, one, NULL, &o2)};
    const char *d1[1] = {dis};
    kiln_exec_options eo = tu_opts(NULL, 0, d1, dis ? 1 : 0);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 3, out, (size_t)n_out, &eo, NULL), KILN_OK);
    for (int i = 0; i < 3; i++)
        kiln_tensor_destroy(in[i]);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(out[1]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
    return tu_bits(o);
}

START_TEST(contraction_rule)
{
    /* (1+2^-23)^2 - (1+2^-22) = 2^-46 exactly with fma, 0 when rounded */
    const char *lhs = "kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n"
                      "%c = input f32 [?]\n%m = mul %a %b\n%s = add %m %c\noutput %s\n";
    const char *rhs = "kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n"
                      "%c = input f32 [?]\n%m = mul %a %b\n%s = add %c %m\noutput %s\n";
    const char *two_uses = "kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n"
                           "%c = input f32 [?]\n%m = mul %a %b\n%s = add %m %c\n"
                           "%t = add %s %m\n%u = sub %t %m\noutput %s\n";
    const char *is_output = "kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n"
                            "%c = input f32 [?]\n%m = mul %a %b\n%s = add %m %c\n"
                            "output %s\noutput %m\n";
    ck_assert_uint_eq(contraction_result(lhs, NULL), 0x28800000u);
    ck_assert_uint_eq(contraction_result(lhs, "fma"), 0u);
    ck_assert_uint_eq(contraction_result(rhs, NULL), 0x28800000u);
    ck_assert_uint_eq(contraction_result(rhs, "fma"), 0u);
    ck_assert_uint_eq(contraction_result(two_uses, NULL), 0u);
    ck_assert_uint_eq(contraction_result(is_output, NULL), 0u);
}
END_TEST

START_TEST(deep_chains)
{
    kiln_context *ctx = tu_ctx();
    for (int depth = 1000; depth <= 3000; depth += 2000) {
        kiln_fusion *f;
        kiln_fusion_create(&f);
        kiln_value v;
        ck_assert_int_eq(kiln_fusion_input(f, KILN_F32, 1, NULL, &v), KILN_OK);
        for (int i = 0; i < depth; i++)
            ck_assert_int_eq(kiln_fusion_op(f, KILN_OP_NEG, &v, 1, &v), KILN_OK);
        kiln_fusion_output(f, v);
        ck_assert_int_eq(kiln_fusion_finalize(f), KILN_OK);
        float x = 2, y = 0;
        int64_t one[1] = {1};
        kiln_tensor *in[1] = {tu_tensor(KILN_F32, 1, one, NULL, &x)};
        kiln_tensor *out[1] = {tu_tensor(KILN_F32, 1, one, NULL, &y)};
        kiln_status s = kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL);
        if (depth <= 2048) {
            ck_assert_int_eq(s, KILN_OK);
            ck_assert_float_eq(y, 2.0f); /* an even number of negations */
        } else {
            ck_assert_int_eq(s, KILN_ERR_LIMIT);
        }
        kiln_tensor_destroy(in[0]);
        kiln_tensor_destroy(out[0]);
        kiln_fusion_destroy(f);
    }
    kiln_context_destroy(ctx);
}
END_TEST

/* Inputs [n, 1] and [1, n] that view one float with stride 0: 8 bytes of
** data for an n x n domain. */
static void stride0_pair(int64_t n, float *one, kiln_tensor *in[2])
{
    int64_t xs[2] = {n, 1}, ys[2] = {1, n}, zero[2] = {0, 0};
    in[0] = tu_tensor(KILN_F32, 2, xs, zero, one);
    in[1] = tu_tensor(KILN_F32, 2, ys, zero, one);
}

/* Domains far larger than memory from 8 bytes of stride-0 data are
** refused before anything runs: sizes whose product overflows int64, and
** a 2^56-element reduction, which would run for days, over the default
** work limit (docs/runtime.md, "Limits"). */
START_TEST(huge_stride0_domains)
{
    static const struct {
        const char *kf;
        int64_t n;
        const char *needle;
    } cases[] = {
        {"kiln.fusion 1\n%x = input f32 [?, 1]\n%y = input f32 [1, ?]\n"
         "%z = add %x %y\n%w = sum %z axes=[0]\n%v = neg %w\noutput %z\n",
         (int64_t)1 << 40,
         "work limit: the element count of %2 (add, shape [1099511627776, "
         "1099511627776]) overflows"},
        {"kiln.fusion 1\n%x = input f32 [?, 1]\n%y = input f32 [1, ?]\n"
         "%z = add %x %y\n%w = sum %z axes=[0, 1]\noutput %w\n",
         (int64_t)1 << 28,
         "work limit: this call would do 72057594574798849 element "
         "operations, above the context's max_work of 1099511627776 (the "
         "largest part: %2, add, shape [268435456, 268435456]"},
    };
    kiln_context *ctx = tu_ctx();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_fusion *f = tu_fusion(cases[i].kf);
        float one = 1;
        kiln_tensor *in[2], *out[1] = {NULL};
        stride0_pair(cases[i].n, &one, in);
        ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, NULL, NULL),
                         KILN_ERR_LIMIT);
        ck_assert_ptr_null(out[0]);
        ck_assert_msg(strstr(kiln_last_error(), cases[i].needle), "%s",
                      kiln_last_error());
        kiln_tensor_destroy(in[0]);
        kiln_tensor_destroy(in[1]);
        kiln_fusion_destroy(f);
    }
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(validation_errors)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?, 1]\n"
                               "%y = input f32 [?, ?]\n%z = add %x %y\noutput %z\n");
    float buf[64] = {0};
    int64_t s23[2] = {2, 3}, s21[2] = {2, 1}, s33[2] = {3, 3}, s3[1] = {3};
    kiln_tensor *x = tu_tensor(KILN_F32, 2, s21, NULL, buf);
    kiln_tensor *y = tu_tensor(KILN_F32, 2, s23, NULL, buf + 8);
    kiln_tensor *in[2] = {x, y};
    kiln_tensor *out[1] = {NULL};
    /* counts */
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 2, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_execute(NULL, f, in, 2, out, 1, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
    /* dtype, rank, declared broadcast axis, size agreement */
    int32_t ib[6];
    kiln_tensor *xi = tu_tensor(KILN_I32, 2, s21, NULL, ib);
    kiln_tensor *bad[2] = {xi, y};
    ck_assert_int_eq(kiln_execute(ctx, f, bad, 2, out, 1, NULL, NULL), KILN_ERR_DTYPE);
    kiln_tensor *r1 = tu_tensor(KILN_F32, 1, s3, NULL, buf);
    bad[0] = r1;
    ck_assert_int_eq(kiln_execute(ctx, f, bad, 2, out, 1, NULL, NULL), KILN_ERR_SHAPE);
    kiln_tensor *x23 = tu_tensor(KILN_F32, 2, s23, NULL, buf);
    bad[0] = x23;
    ck_assert_int_eq(kiln_execute(ctx, f, bad, 2, out, 1, NULL, NULL), KILN_ERR_SHAPE);
    kiln_tensor *y33 = tu_tensor(KILN_F32, 2, s33, NULL, buf + 8);
    bad[0] = x;
    bad[1] = y33;
    ck_assert_int_eq(kiln_execute(ctx, f, bad, 2, out, 1, NULL, NULL), KILN_ERR_SHAPE);
    ck_assert_ptr_null(out[0]);
    /* outputs: shape, dtype, misaligned, overlapping, strided */
    float ob[32];
    kiln_tensor *o33 = tu_tensor(KILN_F32, 2, s33, NULL, ob);
    out[0] = o33;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, NULL, NULL), KILN_ERR_SHAPE);
    int32_t oi[6];
    kiln_tensor *oint = tu_tensor(KILN_I32, 2, s23, NULL, oi);
    out[0] = oint;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, NULL, NULL), KILN_ERR_DTYPE);
    kiln_tensor *omis = tu_tensor(KILN_F32, 2, s23, NULL, (char *)ob + 1);
    out[0] = omis;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, NULL, NULL), KILN_ERR_ALIGNMENT);
    kiln_tensor *oover = tu_tensor(KILN_F32, 2, s23, NULL, buf + 10);
    out[0] = oover;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, NULL, NULL), KILN_ERR_ALIGNMENT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "overlaps input 1"));
    int64_t st[2] = {1, 2};
    kiln_tensor *ostr = tu_tensor(KILN_F32, 2, s23, st, ob);
    out[0] = ostr;
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, NULL, NULL), KILN_ERR_ALIGNMENT);
    /* a fusion that is not finalized */
    kiln_fusion *nf;
    kiln_fusion_create(&nf);
    out[0] = NULL;
    ck_assert_int_eq(kiln_execute(ctx, nf, in, 2, out, 1, NULL, NULL), KILN_ERR_STATE);
    ck_assert_ptr_null(out[0]);
    /* bad execute items name their element */
    const char *en[2] = {"fast_math", "nope"};
    kiln_exec_options eo = tu_opts(en, 2, NULL, 0);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, &eo, NULL), KILN_ERR_OPTION_UNKNOWN);
    kiln_error_info ei = {sizeof ei, 0, 0, 0, 0, 0};
    kiln_last_error_info(&ei);
    ck_assert_str_eq(ei.source, "execute enable[1]");
    const char *two[1] = {"fma,fallback"};
    eo = tu_opts(NULL, 0, two, 1);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 2, out, 1, &eo, NULL), KILN_ERR_OPTION_ELEMENT);
    ck_assert_ptr_null(out[0]);
    kiln_fusion_destroy(nf);
    kiln_tensor *all[] = {x, y, xi, r1, x23, y33, o33, oint, omis, oover, ostr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        kiln_tensor_destroy(all[i]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(info_record_and_json)
{
    kiln_context *ctx = tu_ctx();
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\noutput %y\n");
    float x = 2, y = 0;
    int64_t one[1] = {1};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 1, one, NULL, &x)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 1, one, NULL, &y)};
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert_str_eq(kiln_exec_info_options(info), "");
    ck_assert_int_eq(kiln_exec_info_plan(info, NULL, NULL), KILN_ERR_STATE);
    const char *en[2] = {"warn_register_spill(64)", "fast_math"};
    const char *dis[1] = {"fma"};
    kiln_exec_options eo = tu_opts(en, 2, dis, 1);
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, &eo, info), KILN_OK);
    ck_assert_str_eq(kiln_exec_info_options(info),
                     "enable=fast_math,warn_register_spill(64);disable=fma");
    uint64_t pid;
    int hit = -1;
    ck_assert_int_eq(kiln_exec_info_plan(info, &pid, &hit), KILN_OK);
    ck_assert_int_eq(hit, 0);
    kiln_segment_info s = tu_seg(info, 0);
    ck_assert_int_eq(s.kind, KILN_SEG_GENERATED);
    ck_assert_str_eq(s.what, "pointwise");
    ck_assert_int_eq(s.kernel_hit, 0);
    ck_assert_int_eq(s.device, -1);
    kiln_segment_info bad;
    bad.struct_size = sizeof bad;
    ck_assert_int_eq(kiln_exec_info_segment(info, 1, &bad), KILN_ERR_NOT_FOUND);
    char *js = NULL;
    ck_assert_int_eq(kiln_exec_info_json(info, &js), KILN_OK);
    ck_assert_ptr_nonnull(strstr(js, "\"options\": \"enable=fast_math,warn_register_spill(64);disable=fma\""));
    ck_assert_ptr_nonnull(strstr(js, "\"kernel\": \"enable=fast_math;disable=fma\""));
    ck_assert_ptr_nonnull(strstr(js, "\"none\": \"enable=warn_register_spill(64)\""));
    ck_assert_ptr_nonnull(strstr(js, "\"plan_hit\": false"));
    ck_assert_ptr_nonnull(strstr(js, "\"kind\": \"generated\""));
    kiln_free(js);
    /* the items did not leak into the next call */
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, info), KILN_OK);
    ck_assert_str_eq(kiln_exec_info_options(info), "");
    ck_assert_int_eq(kiln_exec_info_plan(info, NULL, &hit), KILN_OK);
    ck_assert_int_eq(hit, 1);
    ck_assert_float_eq(y, -2.0f);
    kiln_exec_info_destroy(info);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(dumps_go_to_the_dump_stream)
{
    FILE *fp = tmpfile();
    ck_assert_ptr_nonnull(fp);
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "ref";
    cfg.use_env_override = 1;
    cfg.env_dump = "options,cache,fusion_ir,launch_params";
    cfg.dump_stream = fp;
    kiln_context *ctx;
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\noutput %y\n");
    float x = 2, y = 0;
    int64_t one[1] = {1};
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 1, one, NULL, &x)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 1, one, NULL, &y)};
    ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL), KILN_OK);
    char text[8192] = {0};
    rewind(fp);
    size_t n = fread(text, 1, sizeof text - 1, fp);
    ck_assert_uint_gt(n, 0);
    ck_assert_ptr_nonnull(strstr(text, "kiln: options: dump=cache,fusion_ir,launch_params,options"));
    ck_assert_ptr_nonnull(strstr(text, "kiln: cache: plan"));
    ck_assert_ptr_nonnull(strstr(text, "miss"));
    ck_assert_ptr_nonnull(strstr(text, "kiln: fusion_ir:"));
    ck_assert_ptr_nonnull(strstr(text, "kiln: launch segment 0"));
    fclose(fp);
    kiln_tensor_destroy(in[0]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(env_snapshot_rules)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "ref";
    cfg.use_env_override = 1;
    char enable[64] = "fast_mat";
    cfg.env_enable = enable;
    kiln_context *ctx = NULL;
    /* a malformed environment fails creation with the parse error */
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_ERR_OPTION_UNKNOWN);
    ck_assert_ptr_null(ctx);
    kiln_error_info ei = {sizeof ei, 0, 0, 0, 0, 0};
    kiln_last_error_info(&ei);
    ck_assert_str_eq(ei.source, "KILN_ENABLE");
    strcpy(enable, "fast_math");
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    char canon[128];
    size_t len;
    kiln_options_canonical(kiln_context_env_options(ctx), KILN_LEVEL_ALL, canon,
                           sizeof canon, &len);
    ck_assert_str_eq(canon, "enable=fast_math");
    /* reload reads the strings again; on error the old snapshot stays */
    strcpy(enable, "kernel_debug,");
    ck_assert_int_eq(kiln_context_reload_env(ctx), KILN_OK);
    kiln_options_canonical(kiln_context_env_options(ctx), KILN_LEVEL_ALL, canon,
                           sizeof canon, &len);
    ck_assert_str_eq(canon, "enable=kernel_debug");
    strcpy(enable, ",x");
    ck_assert_int_eq(kiln_context_reload_env(ctx), KILN_ERR_OPTION_SYNTAX);
    kiln_options_canonical(kiln_context_env_options(ctx), KILN_LEVEL_ALL, canon,
                           sizeof canon, &len);
    ck_assert_str_eq(canon, "enable=kernel_debug");
    ck_assert_str_eq(kiln_context_backend(ctx), "ref");
    kiln_context_destroy(ctx);
}
END_TEST

START_TEST(backend_choice)
{
    char why[512];
    ck_assert_int_eq(kiln_backend_probe("ref", why, sizeof why), KILN_OK);
    ck_assert_str_eq(why, "");
    ck_assert_int_eq(kiln_backend_probe("nonsense", why, sizeof why),
                     KILN_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(why, "valid: ref, cuda, auto"));
    ck_assert_int_eq(kiln_backend_probe("/no/such/plugin.so", why, sizeof why),
                     KILN_ERR_BACKEND_UNAVAILABLE);
    /* auto always gives a usable backend (cuda when it opens, else ref) */
    kiln_context *ctx = tu_ctx_caps("auto", 0, 0);
    const char *name = kiln_context_backend(ctx);
    ck_assert(strcmp(name, "ref") == 0 || strcmp(name, "cuda") == 0);
    kiln_context_destroy(ctx);
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = 4; /* too small to hold even the backend field */
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_ERR_INVALID_ARGUMENT);
}
END_TEST

/* A context on ref with kiln_context_config.max_work = limit; struct_size
** `size` (an older caller's smaller struct when below sizeof). */
static kiln_context *work_ctx(uint64_t limit, size_t size)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = size;
    cfg.backend = "ref";
    cfg.use_env_override = 1;
    cfg.max_work = limit;
    kiln_context *ctx = NULL;
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    return ctx;
}

/* Run a one-input f32 fusion on n elements; returns the status. */
static kiln_status run_n(kiln_context *ctx, const kiln_fusion *f, int64_t n)
{
    float *x = calloc((size_t)n + 1, sizeof *x);
    kiln_tensor *in[1] = {tu_tensor(KILN_F32, 1, &n, NULL, x)};
    kiln_tensor *out[1] = {NULL};
    kiln_status st = kiln_execute(ctx, f, in, 1, out, 1, NULL, NULL);
    ck_assert(st == KILN_OK || out[0] == NULL);
    kiln_tensor_destroy(out[0]);
    kiln_tensor_destroy(in[0]);
    free(x);
    return st;
}

/* kiln_context_config.max_work (docs/runtime.md, "Limits"): the sum of
** every value's element count (+ M*N*K per matmul) is checked before
** anything runs, against a configured limit or the default. */
START_TEST(work_limit)
{
    kiln_context *ctx;
    kiln_fusion *f;
    kiln_tensor *out[1] = {NULL};

    /* a configured limit: neg of n elements is 2n element operations */
    f = tu_fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\n"
                  "output %y\n");
    ctx = work_ctx(100, sizeof(kiln_context_config));
    ck_assert_int_eq(run_n(ctx, f, 50), KILN_OK);
    ck_assert_int_eq(run_n(ctx, f, 51), KILN_ERR_LIMIT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "102 element operations, "
                                                    "above the context's "
                                                    "max_work of 100"));
    kiln_context_destroy(ctx);
    /* a caller built before the field existed gets the default */
    ctx = work_ctx(100, offsetof(kiln_context_config, max_work));
    ck_assert_int_eq(run_n(ctx, f, 51), KILN_OK);
    kiln_context_destroy(ctx);
    kiln_fusion_destroy(f);

    /* matmul counts M*N*K on top of its M*N result: [2,3] x [3,4] is
    ** 6 + 12 + 8 + 2*4*3 = 50 */
    f = tu_fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n"
                  "%b = input f32 [?, ?]\n%c = matmul %a %b\noutput %c\n");
    float a[6] = {0}, b[12] = {0};
    int64_t as[2] = {2, 3}, bs[2] = {3, 4};
    for (uint64_t lim = 49; lim <= 50; lim++) {
        ctx = work_ctx(lim, sizeof(kiln_context_config));
        kiln_tensor *mi[2] = {tu_tensor(KILN_F32, 2, as, NULL, a),
                              tu_tensor(KILN_F32, 2, bs, NULL, b)};
        kiln_status st = kiln_execute(ctx, f, mi, 2, out, 1, NULL, NULL);
        ck_assert_int_eq(st, lim == 50 ? KILN_OK : KILN_ERR_LIMIT);
        kiln_tensor_destroy(out[0]);
        out[0] = NULL;
        kiln_tensor_destroy(mi[0]);
        kiln_tensor_destroy(mi[1]);
        kiln_context_destroy(ctx);
    }
    kiln_fusion_destroy(f);
}
END_TEST

START_TEST(tensor_validation)
{
    kiln_tensor *t = NULL;
    int64_t neg[2] = {2, -1}, ok[2] = {2, 3}, nst[2] = {3, -1};
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 2, neg, NULL, KILN_MEM_HOST, NULL, &t), KILN_ERR_SHAPE);
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 2, ok, nst, KILN_MEM_HOST, NULL, &t), KILN_ERR_SHAPE);
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 9, ok, NULL, KILN_MEM_HOST, NULL, &t), KILN_ERR_LIMIT);
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, -1, ok, NULL, KILN_MEM_HOST, NULL, &t), KILN_ERR_SHAPE);
    ck_assert_int_eq(kiln_tensor_create(NULL, (kiln_dtype)42, 2, ok, NULL, KILN_MEM_HOST, NULL, &t), KILN_ERR_DTYPE);
    int64_t huge[2] = {INT64_MAX / 2, 4};
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F64, 2, huge, NULL, KILN_MEM_HOST, NULL, &t), KILN_ERR_LIMIT);
    int64_t hs[2] = {INT64_MAX / 4, 1};
    int64_t two[2] = {3, 1};
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F64, 2, two, hs, KILN_MEM_HOST, NULL, &t), KILN_ERR_LIMIT);
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 2, ok, NULL, KILN_MEM_DEVICE, NULL, &t), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    /* a stride-0 view of 2^62 elements over one float: its bytes do not
    ** fit size_t, so no host buffer can match it (the byte count used to
    ** wrap to 0 and a 0-byte write scattered 2^62 elements) */
    float one = 1;
    int64_t big = (int64_t)1 << 62, zero = 0;
    t = tu_tensor(KILN_F32, 1, &big, &zero, &one);
    ck_assert_int_eq(kiln_tensor_numel(t), big);
    ck_assert_int_eq(kiln_tensor_write(NULL, t, &one, 0), KILN_ERR_LIMIT);
    ck_assert_int_eq(kiln_tensor_read(NULL, t, &one, 0), KILN_ERR_LIMIT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "do not fit one host buffer"));
    kiln_tensor_destroy(t);
    t = NULL;
    /* an empty shape whose other sizes multiply past int64 */
    int64_t wide[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 3, wide, NULL, KILN_MEM_HOST, NULL, &t), KILN_ERR_LIMIT);
    /* owned, zeroed; strided write/read in element order */
    ck_assert_int_eq(kiln_tensor_create(NULL, KILN_F32, 2, ok, NULL, KILN_MEM_HOST, NULL, &t), KILN_OK);
    ck_assert_int_eq(kiln_tensor_numel(t), 6);
    ck_assert_float_eq(((float *)kiln_tensor_data(t))[5], 0.0f);
    kiln_tensor_destroy(t);
    float store[6] = {0};
    int64_t tr[2] = {1, 2};
    t = tu_tensor(KILN_F32, 2, ok, tr, store); /* transposed view of 3x2 */
    float src[6] = {1, 2, 3, 4, 5, 6}, back[6];
    ck_assert_int_eq(kiln_tensor_write(NULL, t, src, sizeof src), KILN_OK);
    ck_assert_float_eq(store[1], 4.0f); /* element (1,0) at offset 1 */
    ck_assert_int_eq(kiln_tensor_read(NULL, t, back, sizeof back), KILN_OK);
    ck_assert_mem_eq(back, src, sizeof src);
    ck_assert_int_eq(kiln_tensor_read(NULL, t, back, 5), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_tensor_strides(t)[1], 2);
    kiln_tensor_destroy(t); /* borrowed: store stays ours */
    kiln_tensor_destroy(NULL);
}
END_TEST

/* Every allocation of a cold execute (plan miss, kernel compile, runtime
** outputs, info) fails once in turn: each call fails cleanly or succeeds. */
START_TEST(fault_injection_execute)
{
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t sz[2] = {2, 3};
    int ok_seen = 0;
    for (long n = 0; n < 400 && !ok_seen; n++) {
        kiln_context *ctx = tu_ctx();
        kiln_fusion *f = tu_fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                                   "%m = max %x axes=[1] keepdim\n%d = sub %x %m\n"
                                   "%e = exp %d\n%s = sum %e axes=[1] keepdim\n"
                                   "%y = div %e %s\noutput %y\noutput %s\n");
        kiln_tensor *in[1] = {tu_tensor(KILN_F32, 2, sz, NULL, x)};
        kiln_tensor *out[2] = {NULL, NULL};
        kiln_exec_info *info;
        kiln_exec_info_create(&info);
        kiln__fault_after(n);
        kiln_status s = kiln_execute(ctx, f, in, 1, out, 2, NULL, info);
        kiln__fault_after(-1);
        if (s == KILN_OK) {
            ok_seen = 1;
            ck_assert_ptr_nonnull(out[0]);
        } else {
            ck_assert_int_eq(s, KILN_ERR_NO_MEMORY);
            ck_assert_ptr_null(out[0]);
            ck_assert_ptr_null(out[1]);
        }
        /* the context stays usable after a failure */
        kiln_tensor_destroy(out[0]);
        kiln_tensor_destroy(out[1]);
        out[0] = out[1] = NULL;
        ck_assert_int_eq(kiln_execute(ctx, f, in, 1, out, 2, NULL, info), KILN_OK);
        kiln_tensor_destroy(out[0]);
        kiln_tensor_destroy(out[1]);
        kiln_exec_info_destroy(info);
        kiln_tensor_destroy(in[0]);
        kiln_fusion_destroy(f);
        kiln_context_destroy(ctx);
    }
    ck_assert(ok_seen);
}
END_TEST

START_TEST(fault_injection_context)
{
    for (long n = 0; n < 50; n++) {
        kiln_context_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.struct_size = sizeof cfg;
        cfg.backend = "ref";
        cfg.use_env_override = 1;
        cfg.env_disable = "fma";
        kiln_context *ctx = NULL;
        kiln__fault_after(n);
        kiln_status s = kiln_context_create(&cfg, &ctx);
        kiln__fault_after(-1);
        if (s == KILN_OK) {
            kiln_context_destroy(ctx);
            return;
        }
        ck_assert_int_eq(s, KILN_ERR_NO_MEMORY);
        ck_assert_ptr_null(ctx);
    }
    ck_abort_msg("context creation never succeeded");
}
END_TEST

Suite *execute_suite(void)
{
    Suite *s = suite_create("execute");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pointwise_broadcast_views);
    tcase_add_test(tc, outputs_that_are_inputs_or_constants);
    tcase_add_test(tc, strided_and_stride0_inputs);
    tcase_add_test(tc, reductions);
    tcase_add_test(tc, softmax_segments);
    tcase_add_test(tc, matmul_paths);
    tcase_add_test(tc, contraction_rule);
    tcase_add_test(tc, validation_errors);
    tcase_add_test(tc, deep_chains);
    tcase_add_test(tc, huge_stride0_domains);
    tcase_add_test(tc, work_limit);
    tcase_add_test(tc, info_record_and_json);
    tcase_add_test(tc, dumps_go_to_the_dump_stream);
    tcase_add_test(tc, env_snapshot_rules);
    tcase_add_test(tc, backend_choice);
    tcase_add_test(tc, tensor_validation);
    tcase_add_test(tc, fault_injection_execute);
    tcase_add_test(tc, fault_injection_context);
    suite_add_tcase(s, tc);
    return s;
}

/* ------------------------------------------------------------- threads */

#define N_THREADS 8
#define N_ITERS 1000

typedef struct worker {
    kiln_context *ctx;
    const kiln_fusion *f;
    int id;
    int failures;
    char why[256];
} worker;

/* Each thread runs a*b+c with its own inputs under a rotating option set
** and checks its result bits and the info record's options. */
static void *work(void *arg)
{
    worker *w = arg;
    static const char *const en_sets[4][2] = {
        {NULL, NULL}, {"fast_math", NULL}, {"kernel_profile", NULL},
        {"warn_register_spill(8)", "fast_math"}};
    static const char *const dis_sets[4][1] = {{NULL}, {"fma"}, {"kernel_reuse"}, {NULL}};
    static const char *const canon[4] = {
        "", "enable=fast_math;disable=fma",
        "enable=kernel_profile;disable=kernel_reuse",
        "enable=fast_math,warn_register_spill(8)"};
    static const size_t n_en[4] = {0, 1, 1, 2}, n_dis[4] = {0, 1, 1, 0};
    kiln_exec_info *info;
    if (kiln_exec_info_create(&info) != KILN_OK) {
        w->failures++;
        return NULL;
    }
    float a = tu_f32(0x3f800001), c = -tu_f32(0x3f800002);
    for (int it = 0; it < N_ITERS; it++) {
        int k = (it + w->id) % 4;
        float b = a, o = 1.0f;
        int64_t one[1] = {1 + (it % 2)}; /* shapes alternate: reuse vs not */
        float av[2] = {a, a}, bv[2] = {b, b}, cv[2] = {c, c}, ov[2] = {o, o};
        kiln_tensor *in[3], *out[1];
        kiln_tensor_create(NULL, KILN_F32, 1, one, NULL, KILN_MEM_HOST, av, &in[0]);
        kiln_tensor_create(NULL, KILN_F32, 1, one, NULL, KILN_MEM_HOST, bv, &in[1]);
        kiln_tensor_create(NULL, KILN_F32, 1, one, NULL, KILN_MEM_HOST, cv, &in[2]);
        kiln_tensor_create(NULL, KILN_F32, 1, one, NULL, KILN_MEM_HOST, ov, &out[0]);
        kiln_exec_options eo = {sizeof eo, en_sets[k], n_en[k], dis_sets[k], n_dis[k], NULL};
        kiln_status s = kiln_execute(w->ctx, w->f, in, 3, out, 1, &eo, info);
        uint32_t want = k == 1 ? 0u : 0x28800000u; /* disable=fma: no fma */
        if (s != KILN_OK) {
            snprintf(w->why, sizeof w->why, "execute: %s", kiln_last_error());
            w->failures++;
        } else if (tu_bits(ov[0]) != want || tu_bits(ov[one[0] - 1]) != want) {
            snprintf(w->why, sizeof w->why, "set %d: got 0x%08x want 0x%08x", k,
                     tu_bits(ov[0]), want);
            w->failures++;
        } else if (strcmp(kiln_exec_info_options(info), canon[k]) != 0) {
            snprintf(w->why, sizeof w->why, "set %d: options '%s'", k,
                     kiln_exec_info_options(info));
            w->failures++;
        }
        for (int q = 0; q < 3; q++)
            kiln_tensor_destroy(in[q]);
        kiln_tensor_destroy(out[0]);
    }
    kiln_exec_info_destroy(info);
    return NULL;
}

/* rule: [thread.shared_context] [opt.prec.no_leak] */
START_TEST(threads_mixed_options)
{
    kiln_context *ctx = tu_ctx_caps("ref", 4, 4); /* small: evictions race too */
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n"
                               "%c = input f32 [?]\n%m = mul %a %b\n%s = add %m %c\n"
                               "output %s\n");
    pthread_t th[N_THREADS];
    worker w[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].ctx = ctx;
        w[i].f = f;
        w[i].id = i;
        ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N_THREADS; i++)
        ck_assert_msg(w[i].failures == 0, "thread %d: %d failures, last: %s", i,
                      w[i].failures, w[i].why);
    kiln_counters c = tu_counters(ctx);
    ck_assert_uint_eq(c.executes, N_THREADS * N_ITERS);
    ck_assert_uint_eq(c.plan_hits + c.plan_misses, N_THREADS * N_ITERS);
    /* the environment snapshot was never touched by execute items */
    char canon[64];
    size_t len;
    kiln_options_canonical(kiln_context_env_options(ctx), KILN_LEVEL_ALL, canon,
                           sizeof canon, &len);
    ck_assert_str_eq(canon, "");
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

/* One thread reloads the environment while others execute: every execute
** sees the old or the new snapshot, never a mix or an empty one. */
typedef struct reload_worker {
    kiln_context *ctx;
    kiln_fusion *f;
    int failures;
    char why[160];
} reload_worker;

static void *reload_exec(void *arg)
{
    reload_worker *w = arg;
    kiln_exec_info *info = NULL;
    if (kiln_exec_info_create(&info) != KILN_OK) {
        w->failures++;
        return NULL;
    }
    for (int it = 0; it < 300; it++) {
        int64_t n[1] = {2};
        float xv[2] = {1.0f, -2.0f}, ov[2] = {0, 0};
        kiln_tensor *in[1], *out[1];
        kiln_tensor_create(NULL, KILN_F32, 1, n, NULL, KILN_MEM_HOST, xv, &in[0]);
        kiln_tensor_create(NULL, KILN_F32, 1, n, NULL, KILN_MEM_HOST, ov, &out[0]);
        kiln_status s = kiln_execute(w->ctx, w->f, in, 1, out, 1, NULL, info);
        const char *o = s == KILN_OK ? kiln_exec_info_options(info) : "";
        if (s != KILN_OK || (strcmp(o, "enable=kernel_debug;disable=fma") != 0 &&
                             strcmp(o, "enable=fast_math;disable=fallback") != 0)) {
            snprintf(w->why, sizeof w->why, "execute %d: %s '%s'", it,
                     kiln_status_name(s), o);
            w->failures++;
        }
        kiln_tensor_destroy(in[0]);
        kiln_tensor_destroy(out[0]);
    }
    kiln_exec_info_destroy(info);
    return NULL;
}

/* rule: [thread.reload] [env.reload] */
START_TEST(threads_reload_while_executing)
{
    char enable[32] = "kernel_debug", disable[32] = "fma";
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "ref";
    cfg.use_env_override = 1;
    cfg.env_enable = enable;
    cfg.env_disable = disable;
    kiln_context *ctx = NULL;
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    kiln_fusion *f = tu_fusion("kiln.fusion 1\n%a = input f32 [?]\n"
                               "%n = neg %a\noutput %n\n");
    pthread_t th[4];
    reload_worker w[4];
    for (int i = 0; i < 4; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].ctx = ctx;
        w[i].f = f;
        ck_assert_int_eq(pthread_create(&th[i], NULL, reload_exec, &w[i]), 0);
    }
    for (int r = 0; r < 400; r++) { /* only this thread writes the strings */
        strcpy(enable, r % 2 ? "kernel_debug" : "fast_math");
        strcpy(disable, r % 2 ? "fma" : "fallback");
        ck_assert_int_eq(kiln_context_reload_env(ctx), KILN_OK);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(w[i].failures == 0, "thread %d: %d failures, last: %s", i,
                      w[i].failures, w[i].why);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}
END_TEST

Suite *threads_execute_suite(void)
{
    Suite *s = suite_create("threads_execute");
    TCase *tc = tcase_create("mixed");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, threads_mixed_options);
    tcase_add_test(tc, threads_reload_while_executing);
    suite_add_tcase(s, tc);
    return s;
}
