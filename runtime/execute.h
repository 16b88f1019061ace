/*
** execute.h -- private to kiln_execute and the files it is split into:
** the per-call record and the functions of each step (docs/runtime.md,
** "The execute path").
**
**   execute.c    kiln_execute and its steps, the views entry points
**   exec_check.c validation of the arguments, inputs, outputs and work
**   keys.c       the plan key and the kernel key
**   fallback.c   the REFERENCE fallback: when it applies, at compile time
**                and at launch, and what disable=fallback makes of it
**   exec_dump.c  the KILN_DUMP / warn_register_spill output of a call
**   exec_info.c  the kiln_exec_info record
**
** Backends are reached only through their descriptor (ctx->be, ctx->ref:
** kiln_backend.h); no file here includes a backend's own header.
*/
#ifndef KILN_EXECUTE_H
#define KILN_EXECUTE_H

#include "core.h"

/* Inline sizes of the hit path (no heap allocation when a call fits). */
#define KILN__SMALL_NODES 32
#define KILN__SMALL_VIEWS 16
#define KILN__SMALL_KEY 256
#define KILN__SMALL_SEGS 16

/* Everything one call needs, so that failure paths can free in one place. */
typedef struct kiln__call {
    kiln_context *ctx;
    const kiln_fusion *f;
    kiln_tensor *const *inputs;
    kiln_tensor **outputs;   /* caller's array */
    kiln_tensor **outs;      /* effective outputs (given or allocated) */
    uint8_t *allocated;
    int64_t (*shapes)[KILN_MAX_RANK];
    kiln__plan *plan;
    int plan_hit;
    const kiln__variant *var;
    kiln__kernel **kern;
    int *hit;
    void *inter_raw, *inter_mem; /* one block for all intermediates */
    int64_t *inter_off;
    void *stream;            /* kiln_exec_options.stream (device backends) */
    uint8_t *sig_bits;       /* kiln__sig flags: inputs, then outputs */
    /* small inline storage (the hit path allocates nothing) */
    kiln_tensor *outs_small[KILN__SMALL_VIEWS];
    uint8_t allocated_small[KILN__SMALL_VIEWS];
    kiln__kernel *kern_small[KILN__SMALL_SEGS];
    int hit_small[KILN__SMALL_SEGS];
    int64_t inter_off_small[KILN__SMALL_VIEWS];
    uint8_t sig_small[2 * KILN__SMALL_VIEWS];
    int64_t shapes_small[KILN__SMALL_NODES][KILN_MAX_RANK];
} kiln__call;

/* Element count; INT64_MAX when it overflows (stride-0 inputs can describe
** domains far larger than memory; the work check rejects those first). */
int64_t kiln__numel_of(int rank, const int64_t *sizes);

/* ------------------------------------------------------- exec_check.c */

/* The arguments of kiln_execute before anything else is read: *stream
** receives the stream to use (NULL on host backends). */
kiln_status kiln__exec_check_args(const kiln_context *ctx,
                                  const kiln_fusion *f,
                                  kiln_tensor **outputs, size_t n_outputs,
                                  const kiln_exec_options *opts,
                                  void **stream);
/* The concrete shapes of every node (into c->shapes), the work limit, the
** inputs and the given outputs; fills sig (flags in c->sig_bits). */
kiln_status kiln__exec_validate(kiln__call *c, size_t n_inputs,
                                size_t n_outputs, kiln__sig *sig);

/* ------------------------------------------------------------- keys.c */

/* Words in the plan key of a call of f (reuse_off: disable=kernel_reuse,
** which adds the input sizes). */
size_t kiln__plan_key_len(const kiln_fusion *f, int reuse_off);
/* The plan key (fusion hash + input signature + plan-level options) into
** key (kiln__plan_key_len words); returns the count. */
size_t kiln__plan_key(const kiln_fusion *f, kiln_tensor *const *inputs,
                      const kiln__sig *sig, const struct kiln_options *eo,
                      int reuse_off, uint64_t *key);
/* The hash of a key's words. */
uint64_t kiln__key_hash(const uint64_t *w, size_t n);

/* --------------------------------------------------------- fallback.c */

/* Wait for the work issued on `stream` (NULL: the backend's default). */
kiln_status kiln__sync_stream(kiln_context *ctx, void *stream,
                              const char *when);
/* Segment i of the call's plan ran or compiled to a reference kernel at
** compile time: KILN_OK, or KILN_ERR_FALLBACK_DISABLED when the call's
** options forbid the reference path. */
kiln_status kiln__fallback_allowed(const kiln__call *c,
                                   const struct kiln_options *eo, uint32_t i);
/* Launch segment i with L, in, out: on the reference backend when its
** kernel is a reference one, else on the backend, falling back to a
** one-off reference kernel when the backend answers UNSUPPORTED at launch.
** *reference receives 0 (backend), 1 (reference kernel) or 2 (launch-time
** fallback). */
kiln_status kiln__launch_segment(const kiln__call *c,
                                 const struct kiln_options *eo, uint32_t i,
                                 kiln_launch *L, kiln_ir_tensor *in,
                                 kiln_ir_tensor *out, uint8_t *reference);

/* -------------------------------------------------------- exec_dump.c */

/* dump=options: the call's effective options. */
void kiln__dump_options(const struct kiln_options *eo, FILE *dump);
/* dump=fusion_ir: the fusion and the plan built for it (plan misses). */
void kiln__dump_plan(const kiln_fusion *f, const kiln__plan *p, FILE *dump);
/* What the kernels step reports: dump=cuda_kernel (sources of the kernels
** this call compiled), enable=warn_register_spill(N), dump=cache. */
void kiln__dump_kernels(const kiln__call *c, const struct kiln_options *eo,
                        FILE *dump);
/* dump=launch_params: segment i's launch. */
void kiln__dump_launch(const kiln__call *c, uint32_t i, const kiln_launch *L,
                       FILE *dump);

/* -------------------------------------------------------- exec_info.c */

/* Fill info from a successful call (reference[i]: kiln__launch_segment's
** answer; gpu_ms[i]: the measured time or -1). */
kiln_status kiln__exec_info_fill(kiln_exec_info *info,
                                 const struct kiln_options *eo,
                                 const kiln__call *c,
                                 const uint8_t *reference,
                                 const double *gpu_ms);
/* Mark info as describing no call (a failed execute). */
void kiln__exec_info_invalidate(kiln_exec_info *info);

#endif /* KILN_EXECUTE_H */
