/*
** exec_util.h -- small helpers shared by the execute, cache, plugin and
** thread tests: contexts without environment influence, fusions from .kf
** text, host tensors, and info-record accessors.
*/
#ifndef KILN_TEST_EXEC_UTIL_H
#define KILN_TEST_EXEC_UTIL_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

/* A context on `backend` that reads no environment (override strings). */
static inline kiln_context *tu_ctx_caps(const char *backend, size_t plans,
                                        size_t kernels)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = backend;
    cfg.use_env_override = 1;
    cfg.plan_cache_capacity = plans;
    cfg.kernel_cache_capacity = kernels;
    kiln_context *ctx = NULL;
    kiln_status s = kiln_context_create(&cfg, &ctx);
    ck_assert_msg(s == KILN_OK, "context %s: %s", backend, kiln_last_error());
    return ctx;
}

static inline kiln_context *tu_ctx(void) { return tu_ctx_caps("ref", 0, 0); }

static inline kiln_fusion *tu_fusion(const char *kf)
{
    kiln_fusion *f = NULL;
    kiln_status s = kiln_fusion_parse(kf, strlen(kf), &f);
    ck_assert_msg(s == KILN_OK, "parse: %s", kiln_last_error());
    return f;
}

/* A host tensor borrowing `data` (contiguous when strides is NULL). */
static inline kiln_tensor *tu_tensor(kiln_dtype t, int rank,
                                     const int64_t *sizes,
                                     const int64_t *strides, void *data)
{
    kiln_tensor *x = NULL;
    kiln_status s = kiln_tensor_create(NULL, t, rank, sizes, strides,
                                       KILN_MEM_HOST, data, &x);
    ck_assert_msg(s == KILN_OK, "tensor: %s", kiln_last_error());
    return x;
}

static inline kiln_exec_options tu_opts(const char *const *en, size_t n_en,
                                        const char *const *dis, size_t n_dis)
{
    kiln_exec_options o = {sizeof o, en, n_en, dis, n_dis, NULL};
    return o;
}

static inline kiln_counters tu_counters(const kiln_context *ctx)
{
    kiln_counters c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    ck_assert_int_eq(kiln_context_counters(ctx, &c), KILN_OK);
    return c;
}

static inline kiln_segment_info tu_seg(const kiln_exec_info *info, size_t i)
{
    kiln_segment_info s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    ck_assert_int_eq(kiln_exec_info_segment(info, i, &s), KILN_OK);
    return s;
}

static inline float tu_f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint32_t tu_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static inline double tu_f64(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

static inline uint64_t tu_bits64(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

#endif
