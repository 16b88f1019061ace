/*
** cuda_codegen.h -- segment IR (kiln_backend.h) -> CUDA C++ source for NVRTC
** (docs/backends.md, "CUDA backend"); the flags it is compiled with come
** from cuda_flags.h.
**
** The generated source is self-contained (no #include: f16/bf16 are raw
** 16-bit patterns converted with PTX cvt or exact bit arithmetic), so it
** compiles wherever NVRTC loads.  Every kernel takes one parameter, a
** struct KArgs passed by value, whose layout is a plain array of 64-bit
** words (KILN_CUDA_ARG_WORDS): the host packs it without knowing C++
** layout rules.
**
** Word layout, R = max(rank of D, 1):
**   size[R]                      the domain D (matmul: M, N)
**   per input  k: ptr, stride[R] element strides over D (0 = broadcast)
**   per output k: ptr, stride[R]
**   tail[8]: n, j, s, mode, scratch, nd, chunk, spare (KILN_CUDA_T_*).
*/
#ifndef KILN_CUDA_CODEGEN_H
#define KILN_CUDA_CODEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Bump when the generated code changes meaning: part of the identity. */
#define KILN_CUDA_CODEGEN_VERSION 1

typedef enum kiln_cuda_kkind {
    KILN_CK_POINTWISE = 0,
    KILN_CK_REDUCE_INNER = 1, /* the innermost axis is reduced */
    KILN_CK_REDUCE_OUTER = 2, /* the innermost axis is kept */
    KILN_CK_MATMUL = 3        /* matmul, standalone or with epilogue */
} kiln_cuda_kkind;

/* Tail word indices. */
enum {
    KILN_CUDA_T_N = 0,     /* pointwise: numel; reduction: kept count O; */
    KILN_CUDA_T_J = 1,     /* reduction: reduced count J */
    KILN_CUDA_T_S = 2,     /* reduction: splits S; matmul: K */
    KILN_CUDA_T_MODE = 3,  /* bit 0: vector path; bits 8..: threads/row */
    KILN_CUDA_T_SCRATCH = 4,
    KILN_CUDA_T_ND = 5,    /* pointwise: active (collapsed) dims */
    KILN_CUDA_T_CHUNK = 6, /* reduction: elements of J per split */
    KILN_CUDA_T_SPARE = 7
};
#define KILN_CUDA_TAIL_WORDS 8
#define KILN_CUDA_ARG_WORDS(R, nin, nout)                                      \
    ((size_t)(R) + ((size_t)(nin) + (size_t)(nout)) * (1 + (size_t)(R)) +       \
     KILN_CUDA_TAIL_WORDS)
/* The parameter block is at most 4096 bytes (the kernel-parameter limit
** every CUDA version and architecture accepts), so a kernel over a domain
** of rank r takes at most KILN_SEGMENT_MAX_VIEWS(r) views (kiln_backend.h):
** the planner never makes a larger segment, and codegen rejects one
** (KILN_ERR_UNSUPPORTED).  KILN_CUDA_MAX_VIEWS is the largest of these
** (rank <= 1), the size of the per-view arrays. */
#define KILN_CUDA_PARAM_BYTES 4096
#define KILN_CUDA_MAX_VIEWS KILN_SEGMENT_MAX_VIEWS(1)

/* Per-view flags (kiln_cuda_kinfo.view[]): inputs at 0..n_inputs-1, then
** outputs at n_inputs..n_inputs+n_outputs-1.  One byte per view, so no
** view count ever aliases another view's flag. */
#define KILN_CUDA_V_PRE 1u   /* input read over D by kiln_pre (reductions) */
#define KILN_CUDA_V_POST 2u  /* input read by kiln_post (all kinds) */
#define KILN_CUDA_V_FLAT 4u  /* pointwise: indexed by the linear index
                                (CONTIG trait + index pass); the host
                                checks the view really is dense */
#define KILN_CUDA_V_USED (KILN_CUDA_V_PRE | KILN_CUDA_V_POST)

/* Kernel entry names in every module. */
#define KILN_CUDA_ENTRY_MAIN "kiln_main"
#define KILN_CUDA_ENTRY_FINISH "kiln_finish" /* reductions only */

/* What the host needs to launch a generated module. */
typedef struct kiln_cuda_kinfo {
    int kind;              /* kiln_cuda_kkind */
    int seg_kind;          /* kiln_ir_segment_kind it came from */
    int rank;              /* rank of D (>= 0) */
    int R;                 /* max(rank, 1): words per stride array */
    uint32_t n_inputs, n_outputs;
    uint32_t red_axes;     /* reductions: the reduced axes of D */
    int vec;               /* elements per vector in the vector path; 0 none */
    uint8_t view[KILN_CUDA_MAX_VIEWS]; /* KILN_CUDA_V_* per view (above) */
    size_t acc_bytes;      /* reductions: bytes of one partial */
    int mm_a, mm_b;        /* matmul: operand input indices */
    int mm_dtype;          /* matmul operand dtype */
    int block;             /* threads per block */
    int tile_m, tile_n;    /* matmul tile */
    int index64;           /* 64-bit indices in the source (seg->index64) */
} kiln_cuda_kinfo;

/* Generate the CUDA source for `seg` under `ko`.  On success *source is a
** NUL-terminated string owned by the caller (kiln__free) and *info is
** filled.  On failure returns KILN_ERR_UNSUPPORTED (a segment shape this
** generator does not handle, or more views than KILN_SEGMENT_MAX_VIEWS of
** its rank), KILN_ERR_INVALID_ARGUMENT (a malformed
** segment) or KILN_ERR_NO_MEMORY, with a message; outputs untouched. */
/* Flags of input k / output k of a generated kernel. */
static inline unsigned kiln__cuda_in_flags(const kiln_cuda_kinfo *in, uint32_t k)
{
    return in->view[k];
}
static inline unsigned kiln__cuda_out_flags(const kiln_cuda_kinfo *in, uint32_t k)
{
    return in->view[in->n_inputs + k];
}

kiln_status kiln__cuda_codegen(const kiln_ir_segment *seg,
                               const kiln_kernel_options *ko, char **source,
                               kiln_cuda_kinfo *info);

#endif /* KILN_CUDA_CODEGEN_H */
