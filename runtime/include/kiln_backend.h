/*
** kiln_backend.h -- the Kiln backend ABI (docs/backends.md), installed next
** to kiln.h for plugin authors.
**
** A backend is a table of function pointers.  The built-in backends ("ref",
** "cuda") and plugins loaded by path all use it.  A plugin shared object
** exports exactly one symbol, KILN_BACKEND_ENTRY_SYMBOL, of type
** kiln_backend_entry_fn.  The host calls it with its own ABI version and
** receives a descriptor whose first two fields are abi_version and
** struct_size.  The host never reads a field beyond struct_size, and rejects
** a descriptor whose abi_version differs from KILN_BACKEND_ABI_VERSION.
** Optional functions may be NULL.
**
** What a backend receives is one *segment* of a planned fusion, already
** normalised by the planner (runtime/plan.c):
**   - every node of the segment is computed over one domain D of rank r
**     (launch->domain); BROADCAST nodes are gone, and every segment input is
**     presented as a strided view over D (stride 0 on broadcast axes);
**   - a REDUCE node turns D into D with its reduced axes of size 1 (its
**     `bcast` mask says which); nodes after it live in that reduced domain,
**     and their inputs/outputs are presented in that keepdim form;
**   - a MATMUL node's two operands are INPUT nodes of [M,K] and [K,N];
**     its domain is [M,N] (launch->domain[0..1]) and launch->k is K;
**   - contraction has already been applied: an FMA node must be computed
**     with one rounding (fma), and a MUL feeding an ADD must be rounded
**     separately.
**   - every non-INPUT node has rank r (the segment's domain rank); a CONST
**     node is a scalar: rank r with every axis marked in `bcast`; a CAST
**     may have equal source and result dtypes (a plain copy: the planner
**     uses it when a segment output is an input or a constant);
**   - INPUT nodes of pointwise/reduction segments have rank r too (their
**     view over D or over the keepdim domain); the REDUCE node always has
**     KILN_IR_KEEPDIM set (the segment is always in keepdim form).
** Invariant: node args always refer to earlier nodes (topological order).
*/
#ifndef KILN_BACKEND_H
#define KILN_BACKEND_H

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_BACKEND_ABI_VERSION 1u
#define KILN_BACKEND_ENTRY_SYMBOL "kiln_backend_entry"

#define KILN_IR_KEEPDIM 1u /* kiln_ir_node.flags on REDUCE nodes */

typedef struct kiln_ir_node {
    uint16_t op;     /* kiln_op */
    uint8_t dtype;   /* result dtype (kiln_dtype) */
    uint8_t rank;    /* result rank */
    int32_t args[3]; /* operand node indices (earlier nodes); -1 if unused */
    uint32_t bcast;  /* bit i: result axis i is a broadcast axis (size 1) */
    uint32_t axes;   /* REDUCE: reduced axes; BROADCAST: new result axes */
    uint32_t flags;  /* REDUCE: KILN_IR_KEEPDIM */
    int32_t io;      /* INPUT: input index; otherwise -1 */
    uint64_t bits;   /* CONST: the value's bit pattern in dtype */
} kiln_ir_node;

typedef enum kiln_ir_segment_kind {
    KILN_SEGK_POINTWISE = 0,        /* pointwise over D */
    KILN_SEGK_REDUCTION = 1,        /* producers, one REDUCE, consumers */
    KILN_SEGK_MATMUL = 2,           /* one generated standalone matmul */
    KILN_SEGK_MATMUL_EPILOGUE = 3,  /* generated matmul + pointwise epilogue */
    KILN_SEGK_MATMUL_FALLBACK = 4   /* library / reference matmul */
} kiln_ir_segment_kind;

/* The most views (inputs + outputs) the planner puts in one segment whose
** domain D has rank r.  With R = max(r, 1), one pointer and R strides per
** view, R sizes and 8 more 64-bit words fit in 4096 bytes, the kernel
** parameter limit that every CUDA version accepts:
**   r <= 1: 251, 2: 167, 3: 125, 4: 100, 5: 83, 6: 71, 7: 62, 8: 55.
** A segment that would need more is split by the planner (some values are
** materialised by earlier segments), never handed to a backend. */
#define KILN_SEGMENT_MAX_VIEWS(r)                                             \
    ((512u - ((r) > 1 ? (unsigned)(r) : 1u) - 8u) /                          \
     (((r) > 1 ? (unsigned)(r) : 1u) + 1u))

/* Traits of a segment input/output view, fixed by the plan's input
** signature (so they are part of the kernel key). */
#define KILN_TRAIT_CONTIG 1u  /* dense row-major over its domain, no stride 0 */
#define KILN_TRAIT_ALIGN16 2u /* data address is a multiple of 16 bytes */

typedef struct kiln_ir_segment {
    uint32_t struct_size;
    uint32_t kind;              /* kiln_ir_segment_kind */
    const kiln_ir_node *nodes;
    uint32_t n_nodes;
    uint32_t n_inputs;          /* INPUT nodes carry io = 0..n_inputs-1 */
    const int32_t *outputs;     /* node indices of the segment outputs */
    uint32_t n_outputs;
    const uint32_t *input_traits;  /* n_inputs KILN_TRAIT_* masks */
    const uint32_t *output_traits; /* n_outputs KILN_TRAIT_* masks */
    uint32_t index64;           /* 1: extents/offsets may need 64-bit indices */
} kiln_ir_segment;

/* The kernel-level options, decoded for the backend.  `canonical` is the
** canonical text of the kernel-level options (part of the kernel key). */
typedef struct kiln_kernel_options {
    uint32_t struct_size;
    int fast_math;       /* enable=fast_math */
    int lineinfo;        /* enable=kernel_lineinfo */
    int debug;           /* enable=kernel_debug */
    int contract;        /* 0 under disable=fma: --fmad=false etc. */
    int sass;            /* 0 under disable=compile_to_sass: PTX + JIT */
    uint64_t simplify_off; /* bit i: expr_simplify vocabulary word i off */
    const char *canonical;
} kiln_kernel_options;

/* A strided view handed to launch.  data is a host pointer for host-memory
** backends and a device address for device-memory ones. */
typedef struct kiln_ir_tensor {
    void *data;
    uint32_t dtype;
    int32_t rank;
    int64_t sizes[KILN_MAX_RANK];
    int64_t strides[KILN_MAX_RANK]; /* in elements */
} kiln_ir_tensor;

typedef struct kiln_launch {
    uint32_t struct_size;
    int32_t rank;                   /* rank of D */
    int64_t domain[KILN_MAX_RANK];  /* D (matmul: M, N) */
    int64_t k;                      /* matmul: K */
    const kiln_ir_tensor *inputs;   /* n_inputs, in segment input order */
    uint32_t n_inputs;
    const kiln_ir_tensor *outputs;  /* n_outputs, segment output order */
    uint32_t n_outputs;
    int profile;                    /* enable=kernel_profile: fill gpu_ms */
    double gpu_ms;                  /* out: measured time, or -1 */
    /* Appended (read only when struct_size covers it, else NULL): the
    ** caller's stream (kiln_exec_options.stream), for device-memory
    ** backends that provide stream_sync: launch issues all of the
    ** segment's work on it (NULL: the backend's default stream).  Host
    ** backends may ignore it. */
    void *stream;
} kiln_launch;

/* What compile hands back. */
typedef struct kiln_kernel_out {
    void *handle;      /* backend-owned; released with release() */
    char path[16];     /* "generated", "cublas", "ref" */
    char flags[256];   /* compiler flags actually used (for the info record) */
} kiln_kernel_out;

typedef struct kiln_backend {
    uint32_t abi_version;   /* KILN_BACKEND_ABI_VERSION */
    uint32_t struct_size;   /* sizeof(kiln_backend) of the plugin's build */
    const char *name;
    uint32_t memory;        /* kiln_memory that launch expects */
    /* Open the backend on `device`.  On failure, err says why (e.g. "cuda:
    ** no driver (libcuda.so.1: cannot open shared object file)"). */
    kiln_status (*open)(int device, void **state, char *err, size_t cap);
    void (*close)(void *state);
    /* Identity string for the kernel key: flags, target, compiler version. */
    kiln_status (*identity)(void *state, const kiln_kernel_options *ko,
                            char *buf, size_t cap);
    kiln_status (*compile)(void *state, const kiln_ir_segment *seg,
                           const kiln_kernel_options *ko, kiln_kernel_out *out,
                           char *err, size_t cap);
    void (*release)(void *state, void *handle);
    kiln_status (*launch)(void *state, void *handle, kiln_launch *args,
                          char *err, size_t cap);
    /* Device memory; all NULL for host-memory backends. direction: 0 host
    ** to device, 1 device to host, 2 device to device. */
    kiln_status (*mem_alloc)(void *state, size_t n, void **ptr, char *err,
                             size_t cap);
    void (*mem_free)(void *state, void *ptr);
    kiln_status (*mem_copy)(void *state, void *dst, const void *src,
                            size_t n, int direction, char *err, size_t cap);
    /* Optional (appended in ABI 1; NULL or beyond struct_size = unknown):
    ** bytes of local memory one thread of the compiled kernel uses
    ** (register spills and stack), or -1 when unknown.  The runtime uses it
    ** for enable=warn_register_spill(N). */
    int64_t (*local_bytes)(void *state, void *handle);
    /* Optional (appended in ABI 1; NULL or beyond struct_size = absent):
    ** wait until the work issued on `stream` has finished (NULL: the
    ** backend's default stream, which mem_copy uses).  A device-memory
    ** backend that provides it honours kiln_launch.stream; one without it
    ** is never given a stream (an execute that names one fails with
    ** KILN_ERR_UNSUPPORTED).  The runtime calls it only for device-memory
    ** backends and only when the execute names a stream: before staging a
    ** segment through host copies for the reference fallback, after
    ** copying the results back, and before freeing the call's
    ** intermediates. */
    kiln_status (*stream_sync)(void *state, void *stream, char *err,
                               size_t cap);
    /* Optional, appended in ABI 1: the kernel database (enable=kernel_db,
    ** docs/kernel-db.md).  All three or none: a backend with any of them
    ** NULL (or beyond struct_size) never has its kernels persisted.
    ** db_versions: the versions a stored kernel depends on beyond
    ** identity() -- compiler, driver -- as text for the database key.  A
    ** failed probe must return an error: the database then refuses to
    ** serve this backend (fail closed).
    ** serialize: write compiled kernel `handle` as a payload into buf (cap
    ** bytes) and its length into *size.  KILN_ERR_LIMIT when cap is too
    ** small (*size = the length needed); KILN_ERR_UNSUPPORTED when this
    ** kernel cannot be persisted.
    ** deserialize: rebuild a kernel from a payload that serialize wrote
    ** (the host passes it only for the same database key, after checking
    ** the entry's checksum).  Fills *out as compile() does.  The payload
    ** alone decides what the kernel computes; any malformed payload must
    ** fail cleanly (KILN_ERR_CORRUPT). */
    kiln_status (*db_versions)(void *state, char *buf, size_t cap);
    kiln_status (*serialize)(void *state, void *handle, void *buf,
                             size_t cap, size_t *size, char *err,
                             size_t err_cap);
    kiln_status (*deserialize)(void *state, const void *payload,
                               size_t size, kiln_kernel_out *out, char *err,
                               size_t err_cap);
    /* Optional, appended in ABI 1 (NULL or beyond struct_size = absent):
    ** the source text compile() generates for segment `seg` under `ko`,
    ** for KILN_DUMP=cuda_kernel (docs/backends.md, "The descriptor").
    ** Writes the NUL-terminated text into buf (cap bytes) and its size,
    ** NUL included, into *size.  KILN_ERR_LIMIT when cap is too small
    ** (*size = the bytes needed: the host calls again with that much; buf
    ** may be NULL when cap is 0); the backend's compile error for a
    ** segment it cannot generate.  The runtime calls it only under that
    ** dump, for segments this backend compiled (not reference fallbacks);
    ** a backend that generates no source leaves it NULL. */
    kiln_status (*kernel_source)(void *state, const kiln_ir_segment *seg,
                                 const kiln_kernel_options *ko, char *buf,
                                 size_t cap, size_t *size, char *err,
                                 size_t err_cap);
} kiln_backend;

typedef const kiln_backend *(*kiln_backend_entry_fn)(uint32_t host_abi);

#ifdef __cplusplus
}
#endif
#endif /* KILN_BACKEND_H */
