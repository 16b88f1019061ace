/*
** internal.h -- declarations shared by the modules of libkiln, never
** installed.  Internal symbols carry the prefix kiln__ (two underscores) and
** are hidden from the shared library (-fvisibility=hidden); only KILN_API
** symbols of kiln.h are exported.
**
** Module map (the path of one execute call):
**   options.c -> fusion.c / fusion_text.c -> keys.c -> plan.c -> cache.c
**   -> execute.c (execute.h: its steps) -> backend (backends/ref.c,
**   backends/cuda.c, or a plugin)
*/
#ifndef KILN_INTERNAL_H
#define KILN_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>

#include "kiln.h"
#include "kiln_backend.h"
#include "ckd.h"

/* ----------------------------------------------------------------- errors */

/* Bytes of the thread's last-error message (kiln_last_error()), NUL
** included: a longer message is cut there.  A buffer that carries a
** message on its way to kiln__err (a backend's err, say) needs no more,
** and must have no less, or the message is cut twice. */
#define KILN_ERR_MSG_CAP 2048

/* Record a failure on this thread and return `s` (so callers can write
** `return kiln__err(KILN_ERR_SHAPE, "...", ...)`). */
kiln_status kiln__err(kiln_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same, for option errors: also records source, byte offset and token. */
kiln_status kiln__opt_err(kiln_status s, const char *source, long offset,
                          const char *token, size_t token_len,
                          const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Clear the thread's last error (called on entry of public functions that
** succeed, so kiln_last_error() reflects the last failure only). */
void kiln__err_clear(void);

/* ------------------------------------------------------ memory + faults */

/* All heap memory goes through these, so tests can fail the Nth call.
** kiln__fault_after(n): the (n+1)-th allocation from now on this thread
** fails; -1 switches injection off.  Returns the number of allocations
** made since the last call (for sizing fault loops). */
void *kiln__malloc(size_t n);
void *kiln__calloc(size_t count, size_t size);
void *kiln__realloc(void *p, size_t n);
char *kiln__strdup(const char *s);
char *kiln__strndup(const char *s, size_t n);
void kiln__free(void *p);
long kiln__fault_after(long n);

/* assert() for invariant checkers too slow for every call (a walk of a
** whole table, SQLite style): compiled only in debug builds, -DKILN_DEBUG
** (make's sanitizer and coverage builds); cheap checks use assert(). */
#ifdef KILN_DEBUG
#include <assert.h>
#define KILN_ASSERT_SLOW(x) assert(x)
#else
#define KILN_ASSERT_SLOW(x) ((void)0)
#endif

/* ---------------------------------------------------------------- helpers */

/* Strings a backend writes into a host buffer of cap bytes: error messages,
** the identity string, a compiled kernel's path and flags.  Backends are
** trusted native code (docs/backends.md), but a missing NUL must never turn
** into a read past the buffer.  kiln__be_str forces buf[cap - 1] = '\0' and
** returns buf (for error messages, shown truncated); kiln__be_terminated
** says whether the backend terminated the string itself (for strings that
** become keys or records, where a truncated value would be wrong: the
** caller rejects them with KILN_ERR_ABI).  Every read of such a buffer
** goes through one of the two. */
char *kiln__be_str(char *buf, size_t cap);
int kiln__be_terminated(const char *buf, size_t cap);

/* "[2, 3]": a shape for messages, cut to cap bytes. */
void kiln__shape_text(int rank, const int64_t *sizes, char *buf, size_t cap);

uint64_t kiln__fnv1a(const void *data, size_t n, uint64_t seed);
#define KILN_FNV_SEED 0xcbf29ce484222325ULL

/* A growable string buffer.  On allocation failure `failed` is set and
** further appends are ignored; the caller checks it once at the end. */
typedef struct kiln_buf {
    char *data;
    size_t len, cap;
    int failed;
} kiln_buf;
void kiln__buf_add(kiln_buf *b, const char *s, size_t n);
void kiln__buf_puts(kiln_buf *b, const char *s);
void kiln__buf_printf(kiln_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kiln__buf_free(kiln_buf *b);

/* ---------------------------------------------------------------- options */

/* The option catalogue: X(ID, name, set, arg, level, vocab, int_default,
** implemented, description).  This table is the single source of truth;
** options.c expands it into the public catalogue, docs/options.md is
** checked against it (make docs-check), and testgen reads it through
** `kiln options --catalogue-json`. */
#define KILN_OPTION_TABLE(X)                                                   \
    X(EN_FAST_MATH, "fast_math", KILN_SET_ENABLE, KILN_ARG_NONE,               \
      KILN_LEVEL_KERNEL, NULL, 0, 1,                                           \
      "compile with --use_fast_math (approximate transcendentals, FTZ)")       \
    X(EN_FUSE_MATMUL, "fuse_matmul", KILN_SET_ENABLE, KILN_ARG_NONE,           \
      KILN_LEVEL_PLAN, NULL, 0, 1,                                             \
      "matmul and its pointwise epilogue become one generated kernel")         \
    X(EN_KERNEL_DB, "kernel_db", KILN_SET_ENABLE, KILN_ARG_NONE,               \
      KILN_LEVEL_NONE, NULL, 0, 1,                                             \
      "use the persistent on-disk kernel cache")                               \
    X(EN_KERNEL_DEBUG, "kernel_debug", KILN_SET_ENABLE, KILN_ARG_NONE,         \
      KILN_LEVEL_KERNEL, NULL, 0, 1, "compile kernels with -G")                \
    X(EN_KERNEL_LINEINFO, "kernel_lineinfo", KILN_SET_ENABLE, KILN_ARG_NONE,   \
      KILN_LEVEL_KERNEL, NULL, 0, 1, "compile kernels with -lineinfo")         \
    X(EN_KERNEL_PROFILE, "kernel_profile", KILN_SET_ENABLE, KILN_ARG_NONE,     \
      KILN_LEVEL_NONE, NULL, 0, 1,                                             \
      "record per-segment GPU times in the execute info")                      \
    X(EN_WARN_REGISTER_SPILL, "warn_register_spill", KILN_SET_ENABLE,          \
      KILN_ARG_INT, KILN_LEVEL_NONE, NULL, 0, 1,                               \
      "warn when a kernel spills more than N bytes (default 0)")               \
    X(DIS_COMPILE_TO_SASS, "compile_to_sass", KILN_SET_DISABLE, KILN_ARG_NONE, \
      KILN_LEVEL_KERNEL, NULL, 0, 1,                                           \
      "keep PTX and let the driver JIT it instead of loading a cubin")         \
    X(DIS_EXPR_SIMPLIFY, "expr_simplify", KILN_SET_DISABLE, KILN_ARG_NAMES,    \
      KILN_LEVEL_KERNEL, kiln__simplify_passes, 0, 1,                          \
      "switch off the named codegen simplification passes (all if no list)")   \
    X(DIS_FALLBACK, "fallback", KILN_SET_DISABLE, KILN_ARG_NONE,               \
      KILN_LEVEL_PLAN, NULL, 0, 1,                                             \
      "a needed fallback path is an error instead of running")                 \
    X(DIS_FMA, "fma", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_KERNEL,      \
      NULL, 0, 1, "no contraction: every mul and add is rounded separately")   \
    X(DIS_KERNEL_REUSE, "kernel_reuse", KILN_SET_DISABLE, KILN_ARG_NONE,       \
      KILN_LEVEL_PLAN, NULL, 0, 1,                                             \
      "exact input sizes join the plan key: no reuse across shapes")           \
    X(DIS_MATMUL_EXPR_EVAL, "matmul_expr_eval", KILN_SET_DISABLE,              \
      KILN_ARG_NONE, KILN_LEVEL_PLAN, NULL, 0, 1,                              \
      "matmul runs as a generated standalone kernel, not the library path")   \
    X(DIS_NVRTC_CACHING, "nvrtc_caching", KILN_SET_DISABLE, KILN_ARG_NONE,     \
      KILN_LEVEL_NONE, NULL, 0, 1,                                             \
      "always recompile, even when the kernel is cached")                     \
    X(DIS_PARALLEL_COMPILE, "parallel_compile", KILN_SET_DISABLE,              \
      KILN_ARG_NONE, KILN_LEVEL_NONE, NULL, 0, 1,                              \
      "compile segments one at a time")                                        \
    X(DUMP_CACHE, "cache", KILN_SET_DUMP, KILN_ARG_NONE, KILN_LEVEL_NONE,      \
      NULL, 0, 1, "print plan/kernel cache hits, misses and evictions")       \
    X(DUMP_CUDA_KERNEL, "cuda_kernel", KILN_SET_DUMP, KILN_ARG_NONE,           \
      KILN_LEVEL_NONE, NULL, 0, 1, "print the generated source of each kernel") \
    X(DUMP_FUSION_IR, "fusion_ir", KILN_SET_DUMP, KILN_ARG_NONE,               \
      KILN_LEVEL_NONE, NULL, 0, 1, "print the fusion and its segments")        \
    X(DUMP_LAUNCH_PARAMS, "launch_params", KILN_SET_DUMP, KILN_ARG_NONE,       \
      KILN_LEVEL_NONE, NULL, 0, 1, "print each launch's domain and views")    \
    X(DUMP_OPTIONS, "options", KILN_SET_DUMP, KILN_ARG_NONE, KILN_LEVEL_NONE,  \
      NULL, 0, 1, "print the effective canonical options of each execute")

enum kiln__opt_id {
#define KILN_X_(id, name, set, arg, level, vocab, def, impl, desc) KOPT_##id,
    KILN_OPTION_TABLE(KILN_X_)
#undef KILN_X_
        KOPT_COUNT
};

/* The simplification passes of the code generators (ir_simplify.h), the
** vocabulary of disable=expr_simplify: X(ID, name), sorted bytewise by name.
** The one list: options.c expands it into the vocabulary, the passes into
** their bit numbers.  Bit KILN_SP_ID of a simplify mask = pass ID = word
** KILN_SP_ID of the vocabulary. */
#define KILN_SIMPLIFY_PASS_TABLE(X)                                            \
    X(CSE, "cse")                                                              \
    X(FOLD, "fold")                                                            \
    X(IDENTITY, "identity")                                                    \
    X(INDEX, "index")                                                          \
    X(STRENGTH, "strength")

enum kiln__simplify_pass {
#define KILN_X_(id, name) KILN_SP_##id,
    KILN_SIMPLIFY_PASS_TABLE(KILN_X_)
#undef KILN_X_
        KILN_SP_COUNT
};

/* The pass names of KILN_SIMPLIFY_PASS_TABLE in order, NULL-terminated. */
extern const char *const kiln__simplify_passes[];

/* The effective option set: a plain value, copied per call. */
struct kiln_options {
    uint64_t on;                /* bit KOPT_x: option x is on */
    uint64_t has_list;          /* bit KOPT_x: an explicit list was given */
    uint64_t arg[KOPT_COUNT];   /* INT: the value; NAMES: word bit mask */
};

static inline int kiln__opt_on(const struct kiln_options *o, int id)
{
    return (int)((o->on >> id) & 1u);
}

/* Apply one execute element without allocating (the execute hot path). */
kiln_status kiln__options_apply_item(struct kiln_options *o, kiln_opt_set set,
                                     const char *item, size_t index);
/* Decode the kernel-level options for a backend; `canonical` points into
** storage owned by the caller (buf, cap). */
kiln_status kiln__kernel_options(const struct kiln_options *o,
                                 kiln_kernel_options *ko, char *buf,
                                 size_t cap);
/* The options of `level` as a bit mask (KILN_LEVEL_ALL: every option).
** The level column of KILN_OPTION_TABLE is read here only (options.c):
** the plan key, the kernel variant and canonical text all go through it. */
uint64_t kiln__level_mask(kiln_level level);
/* o restricted to the options of `level` (others zeroed, arguments of the
** options that are off too). */
void kiln__options_mask(const struct kiln_options *o, kiln_level level,
                        struct kiln_options *out);
/* Canonical text of one level into a kiln_buf (appends). */
void kiln__options_canonical_buf(const struct kiln_options *o,
                                 kiln_level level, kiln_buf *b);

/* ----------------------------------------------------------------- fusion */

/* A fusion is an array of IR nodes in topological order (kiln_backend.h's
** kiln_ir_node, with rank/bcast describing each value's declared shape),
** plus the lists of input and output node ids.  Invariant once finalized:
** nodes[i].args[j] < i, every input appears once in `inputs` in
** declaration order, and `hash` is the structural hash. */
struct kiln_fusion {
    kiln_ir_node *nodes;
    uint32_t n_nodes, cap_nodes;
    int32_t *inputs;
    uint32_t n_inputs, cap_inputs;
    int32_t *outputs;
    uint32_t n_outputs, cap_outputs;
    int finalized;
    uint64_t hash;
    /* Built by finalize (fusion.c) for kiln__fusion_shapes
    ** (fusion_shapes.c): for flat index x = node * KILN_MAX_RANK + axis,
    ** axis_class[x] is the flat index of the first input axis whose size
    ** that axis must equal, or -1 for a broadcast (size 1) or absent axis.  axis_edges holds n_axis_edges
    ** (x, y, node) triples: the joins made by each node (error messages). */
    int32_t *axis_class;
    int32_t *axis_edges;
    uint32_t n_axis_edges;
    /* Set by kiln_fusion_parse: input i's %name without the '%' (one
    ** allocation: n_inputs pointers, then the strings); NULL for a fusion
    ** built through the builder API. */
    char **input_names;
};

/* A node of `op` with no operands (args -1, io -1, everything else 0). */
kiln_ir_node kiln__ir_node_blank(int op, int dtype, int rank);

/* The op table's row of op (fusion.c, the single source of truth for
** ops; kiln.h documents kiln_op_desc), or NULL for an invalid op. */
const kiln_op_desc *kiln__op_desc(kiln_op op);
/* 1 when op is a valid op with a reduction kind (sum, max, min). */
int kiln__op_is_reduce(int op);

/* Concrete shapes of every node of a finalized fusion for the given input
** sizes (validates ranks, dtypes, broadcast axes and size agreement).
** shapes must hold f->n_nodes rows of KILN_MAX_RANK. */
kiln_status kiln__fusion_shapes(const kiln_fusion *f,
                                kiln_tensor *const *inputs, size_t n_inputs,
                                int64_t (*shapes)[KILN_MAX_RANK]);

/* ----------------------------------------------------------------- tensor */

struct kiln_tensor {
    kiln_dtype dtype;
    int rank;
    int64_t sizes[KILN_MAX_RANK];
    int64_t strides[KILN_MAX_RANK];
    kiln_memory mem;
    void *data;
    int owned;                 /* data is freed with the tensor */
    kiln_context *ctx;         /* for device frees */
};

/* 1 when t is dense row-major (size-1 axes may have any stride; an empty
** tensor counts as dense). */
int kiln__tensor_dense(const kiln_tensor *t);
/* Validate a view (as kiln_tensor_create does; messages start with `who`)
** and fill *t (data NULL, not owned, no context); *bytes receives the byte
** extent of its storage.  On error *t is untouched. */
kiln_status kiln__tensor_describe(kiln_tensor *t, kiln_dtype dtype, int rank,
                                  const int64_t *sizes, const int64_t *strides,
                                  kiln_memory mem, const char *who,
                                  int64_t *bytes);

/* Built-in backends. */
const kiln_backend *kiln__backend_ref(void);
const kiln_backend *kiln__backend_cuda(void);
/* Compile-only CUDA backend for CI (backends/nvrtc.c): NVRTC-compiles every
** kernel, then runs it on the ref backend. */
const kiln_backend *kiln__backend_nvrtc(void);

#endif /* KILN_INTERNAL_H */
