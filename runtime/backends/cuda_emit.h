/*
** cuda_emit.h -- the state the CUDA code generator's driver
** (cuda_codegen.c) hands to its emitters (cuda_emit.c).  Private to those
** two files.
*/
#ifndef KILN_CUDA_EMIT_H
#define KILN_CUDA_EMIT_H

#include "backends/cuda_codegen.h"
#include "ir_simplify.h"

/* One module being generated.  The driver fills everything but b's text
** after the preamble and the scheme fields of info (kind, vec, red_axes,
** acc_bytes, mm_*, tile_*, view flags), which the emitters set. */
typedef struct kiln_cuda_gen {
    const kiln_ir_segment *seg;
    const kiln_kernel_options *ko;
    kiln_ir_work w;      /* the simplified working copy (ir_simplify.h) */
    uint8_t *live;       /* needed by an output */
    uint8_t *pre;        /* feeds the REDUCE / MATMUL (domain D) */
    uint8_t *post_use;   /* INPUT read by the post phase */
    int32_t sp;          /* the REDUCE or MATMUL node, or -1 */
    int R;               /* words per stride array (rank, at least 1) */
    int in_dtype[KILN_CUDA_MAX_VIEWS];
    kiln_buf b;
    kiln_cuda_kinfo info;
} kiln_cuda_gen;

/* Append the module after the preamble (struct KArgs, the phase functions,
** the kernels) for g's segment kind, and fill g->info's scheme fields.
** KILN_ERR_UNSUPPORTED (with a message) for a reduction or matmul this
** generator has no scheme for; g->b may then hold partial text. */
kiln_status kiln__cuda_emit(kiln_cuda_gen *g);

#endif /* KILN_CUDA_EMIT_H */
