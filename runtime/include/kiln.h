/*
** kiln.h -- the one public header of the Kiln fusion runtime.
**
** Kiln compiles small tensor-op graphs ("fusions") into kernels and runs them
** on a backend (the CPU reference interpreter "ref", the CUDA backend "cuda",
** or a plugin loaded by path).  Every execute call may carry enable/disable
** option items that are merged with the environment (KILN_ENABLE,
** KILN_DISABLE, KILN_DUMP); the caches never reuse a plan or kernel that was
** built under different options.  docs/ states the full contract.
**
** Conventions (see docs/runtime.md):
**   - Every fallible function returns a kiln_status.  On failure, outputs are
**     left untouched unless the comment says otherwise, and a detailed
**     message is available from kiln_last_error() on the calling thread.
**   - Handles are opaque, with create/destroy pairs; destroy accepts NULL.
**   - Structs that may grow start with a struct_size field that the caller
**     sets to sizeof(the struct); fields are only ever appended.
**   - Status codes are append-only and never renumbered.
*/
#ifndef KILN_H
#define KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0
#define KILN_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ status */

/* X(NAME, value, description).  Append only; never renumber. */
#define KILN_STATUS_TABLE(X)                                                   \
    X(KILN_OK, 0, "success")                                                   \
    X(KILN_ERR_INVALID_ARGUMENT, 1, "invalid argument")                        \
    X(KILN_ERR_NO_MEMORY, 2, "out of memory")                                  \
    X(KILN_ERR_OPTION_SYNTAX, 3, "malformed option string")                    \
    X(KILN_ERR_OPTION_UNKNOWN, 4, "unknown option name")                       \
    X(KILN_ERR_OPTION_ARGUMENT, 5, "invalid option argument")                  \
    X(KILN_ERR_OPTION_ELEMENT, 6, "execute option element is not one item")    \
    X(KILN_ERR_FUSION, 7, "invalid fusion definition")                         \
    X(KILN_ERR_DTYPE, 8, "dtype mismatch")                                     \
    X(KILN_ERR_SHAPE, 9, "shape mismatch")                                     \
    X(KILN_ERR_PARSE, 10, "malformed fusion text")                             \
    X(KILN_ERR_STATE, 11, "object in the wrong state for this call")           \
    X(KILN_ERR_UNSUPPORTED, 12, "not supported by this backend")               \
    X(KILN_ERR_FALLBACK_DISABLED, 13, "fallback needed but disable=fallback")  \
    X(KILN_ERR_BACKEND_UNAVAILABLE, 14, "backend unavailable")                 \
    X(KILN_ERR_BACKEND, 15, "backend failure")                                 \
    X(KILN_ERR_COMPILE, 16, "kernel compilation failed")                       \
    X(KILN_ERR_CUDA, 17, "CUDA driver call failed")                            \
    X(KILN_ERR_IO, 18, "I/O error")                                            \
    X(KILN_ERR_CORRUPT, 19, "corrupted or incompatible file")                  \
    X(KILN_ERR_ABI, 20, "backend ABI mismatch")                                \
    X(KILN_ERR_NOT_FOUND, 21, "not found")                                     \
    X(KILN_ERR_LIMIT, 22, "size or count limit exceeded")                      \
    X(KILN_ERR_ALIGNMENT, 23, "misaligned or overlapping tensor memory")

typedef enum kiln_status {
#define KILN_X_(name, value, desc) name = value,
    KILN_STATUS_TABLE(KILN_X_)
#undef KILN_X_
} kiln_status;

/* Stable name ("KILN_ERR_SHAPE") and one-line description of a status.
** Unknown values give "KILN_UNKNOWN_STATUS" / "unknown status". */
KILN_API const char *kiln_status_name(kiln_status s);
KILN_API const char *kiln_strerror(kiln_status s);

/* The detailed message of the last failure on the calling thread (never NULL;
** "" when there was none).  Valid until the next Kiln call on this thread. */
KILN_API const char *kiln_last_error(void);

/* Structured detail of the last failure on this thread.  Option errors fill
** source ("KILN_ENABLE", "execute enable[2]", ...), offset (byte offset in
** the offending string, or -1) and token (the offending text).  Strings stay
** valid until the next Kiln call on this thread. */
typedef struct kiln_error_info {
    size_t struct_size;
    kiln_status status;
    const char *message;
    const char *source;
    long offset;
    const char *token;
} kiln_error_info;
KILN_API kiln_status kiln_last_error_info(kiln_error_info *out);

/* Runtime version: returns KILN_VERSION_STRING of the library actually
** linked; *major etc. may be NULL. */
KILN_API const char *kiln_version(int *major, int *minor, int *patch);

/* Memory returned by Kiln (printed text, JSON) is released with kiln_free. */
KILN_API void kiln_free(void *p);

/* ----------------------------------------------------------------- options */

typedef enum kiln_opt_set {
    KILN_SET_ENABLE = 0,
    KILN_SET_DISABLE = 1,
    KILN_SET_DUMP = 2
} kiln_opt_set;

/* Cache level of an option: what it may change (docs/options.md). */
typedef enum kiln_level {
    KILN_LEVEL_ALL = -1, /* filter value only: every level */
    KILN_LEVEL_PLAN = 0,
    KILN_LEVEL_KERNEL = 1,
    KILN_LEVEL_NONE = 2
} kiln_level;

typedef enum kiln_arg_shape {
    KILN_ARG_NONE = 0,  /* takes no argument list */
    KILN_ARG_INT = 1,   /* one non-negative decimal integer */
    KILN_ARG_NAMES = 2  /* a list of names from a fixed vocabulary */
} kiln_arg_shape;

/* One row of the option catalogue, the single source of truth. */
typedef struct kiln_option_desc {
    const char *name;
    kiln_opt_set set;
    kiln_arg_shape arg;
    kiln_level level;
    const char *description;
    const char *const *vocabulary; /* KILN_ARG_NAMES: NULL-terminated, sorted */
    uint64_t int_default;          /* KILN_ARG_INT: value when no list given */
    int implemented;               /* 1 when its effect exists in this build */
} kiln_option_desc;

/* Catalogue access: *count receives the number of rows. */
KILN_API const kiln_option_desc *kiln_option_catalogue(size_t *count);

/* An effective option set: a plain value (no hidden global state).  Create
** from environment strings, apply execute items, print canonically. */
typedef struct kiln_options kiln_options;

/* Parse the three environment strings (NULL means unset), in the order
** enable, disable, dump.  On error *out is untouched and the error names the
** variable ("KILN_ENABLE", ...), the byte offset, the offending token and
** the valid names of that set. */
KILN_API kiln_status kiln_options_from_env(const char *enable,
                                           const char *disable,
                                           const char *dump,
                                           kiln_options **out);

/* Apply one execute element (exactly one item of the grammar) to `opts`.
** `index` is the element's position, used in error messages
** ("execute enable[2]").  `set` must be ENABLE or DISABLE.  On error `opts`
** is unchanged. */
KILN_API kiln_status kiln_options_apply(kiln_options *opts, kiln_opt_set set,
                                        const char *item, size_t index);

KILN_API kiln_status kiln_options_copy(const kiln_options *src,
                                       kiln_options **out);
KILN_API void kiln_options_destroy(kiln_options *opts);

/* Canonical text of the options of `level` (KILN_LEVEL_ALL for all), written
** NUL-terminated into buf (cap bytes).  *len receives the text length
** without the NUL; if it does not fit, KILN_ERR_LIMIT is returned and *len
** still says how much is needed.  An empty set prints "". */
KILN_API kiln_status kiln_options_canonical(const kiln_options *opts,
                                            kiln_level level, char *buf,
                                            size_t cap, size_t *len);

/* 64-bit hash (FNV-1a) of the canonical text of `level`. */
KILN_API kiln_status kiln_options_hash(const kiln_options *opts,
                                       kiln_level level, uint64_t *out);

/* Whether option `name` of `set` is on: *on receives 0/1.  *int_arg (may
** be NULL) receives the argument: the value of an integer option, or for a
** name-list option the bit mask of its vocabulary words (bit i = word i; a
** bare item sets every bit); 0 when the option is off.  Unknown names give
** KILN_ERR_OPTION_UNKNOWN. */
KILN_API kiln_status kiln_options_get(const kiln_options *opts,
                                      kiln_opt_set set, const char *name,
                                      int *on, uint64_t *int_arg);

/* JSON object describing the effective options (each option with its set,
** arguments and level; canonical text and hash per level).  Free the text
** with kiln_free. */
KILN_API kiln_status kiln_options_json(const kiln_options *opts, char **out);

/* ----------------------------------------------------------------- dtypes */

/* X(NAME, value, text, size in bytes, exponent bits, fraction bits).  The
** last two give the IEEE-754 binary format of the float dtypes (0, 0 for
** bool and the integers).  Append only; never renumber (values cross the
** backend ABI in kiln_ir_node.dtype). */
#define KILN_DTYPE_TABLE(X)                                                    \
    X(KILN_BOOL, 0, "bool", 1, 0, 0)                                           \
    X(KILN_I32, 1, "i32", 4, 0, 0)                                             \
    X(KILN_I64, 2, "i64", 8, 0, 0)                                             \
    X(KILN_F16, 3, "f16", 2, 5, 10)                                            \
    X(KILN_BF16, 4, "bf16", 2, 8, 7)                                           \
    X(KILN_F32, 5, "f32", 4, 8, 23)                                            \
    X(KILN_F64, 6, "f64", 8, 11, 52)

typedef enum kiln_dtype {
#define KILN_X_(name, value, text, size, ebits, mbits) name = value,
    KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
        KILN_DTYPE_COUNT
} kiln_dtype;

KILN_API const char *kiln_dtype_name(kiln_dtype t);   /* NULL if invalid */
KILN_API size_t kiln_dtype_size(kiln_dtype t);        /* 0 if invalid */
KILN_API kiln_status kiln_dtype_parse(const char *name, kiln_dtype *out);

/* --------------------------------------------------------------------- ops */

/* X(NAME, value, text, arity, kind).  kind: 'u' unary, 'b' binary,
** 'c' compare, 'l' logical, 'w' where, 's' special (constructed by its own
** function).  Append only; never renumber: the values cross the backend
** ABI (kiln_ir_node.op) and the kernel database.  The accepted dtypes, the
** result dtype and the reduction kind of each op are further columns of
** the one op table, in runtime/fusion.c; kiln_op_info() reads a row. */
#define KILN_OP_TABLE(X)                                                       \
    X(KILN_OP_INPUT, 0, "input", 0, 's')                                       \
    X(KILN_OP_CONST, 1, "const", 0, 's')                                       \
    X(KILN_OP_NEG, 2, "neg", 1, 'u')                                           \
    X(KILN_OP_ABS, 3, "abs", 1, 'u')                                           \
    X(KILN_OP_EXP, 4, "exp", 1, 'u')                                           \
    X(KILN_OP_LOG, 5, "log", 1, 'u')                                           \
    X(KILN_OP_SQRT, 6, "sqrt", 1, 'u')                                         \
    X(KILN_OP_RSQRT, 7, "rsqrt", 1, 'u')                                       \
    X(KILN_OP_RECIPROCAL, 8, "reciprocal", 1, 'u')                             \
    X(KILN_OP_SIN, 9, "sin", 1, 'u')                                           \
    X(KILN_OP_COS, 10, "cos", 1, 'u')                                          \
    X(KILN_OP_TANH, 11, "tanh", 1, 'u')                                        \
    X(KILN_OP_SIGMOID, 12, "sigmoid", 1, 'u')                                  \
    X(KILN_OP_RELU, 13, "relu", 1, 'u')                                        \
    X(KILN_OP_ERF, 14, "erf", 1, 'u')                                          \
    X(KILN_OP_FLOOR, 15, "floor", 1, 'u')                                      \
    X(KILN_OP_CEIL, 16, "ceil", 1, 'u')                                        \
    X(KILN_OP_ADD, 17, "add", 2, 'b')                                          \
    X(KILN_OP_SUB, 18, "sub", 2, 'b')                                          \
    X(KILN_OP_MUL, 19, "mul", 2, 'b')                                          \
    X(KILN_OP_DIV, 20, "div", 2, 'b')                                          \
    X(KILN_OP_POW, 21, "pow", 2, 'b')                                          \
    X(KILN_OP_MAXIMUM, 22, "maximum", 2, 'b')                                  \
    X(KILN_OP_MINIMUM, 23, "minimum", 2, 'b')                                  \
    X(KILN_OP_EQ, 24, "eq", 2, 'c')                                            \
    X(KILN_OP_NE, 25, "ne", 2, 'c')                                            \
    X(KILN_OP_LT, 26, "lt", 2, 'c')                                            \
    X(KILN_OP_LE, 27, "le", 2, 'c')                                            \
    X(KILN_OP_GT, 28, "gt", 2, 'c')                                            \
    X(KILN_OP_GE, 29, "ge", 2, 'c')                                            \
    X(KILN_OP_AND, 30, "and", 2, 'l')                                          \
    X(KILN_OP_OR, 31, "or", 2, 'l')                                            \
    X(KILN_OP_NOT, 32, "not", 1, 'l')                                          \
    X(KILN_OP_WHERE, 33, "where", 3, 'w')                                      \
    X(KILN_OP_FMA, 34, "fma", 3, 's')                                          \
    X(KILN_OP_CAST, 35, "cast", 1, 's')                                        \
    X(KILN_OP_BROADCAST, 36, "broadcast", 1, 's')                              \
    X(KILN_OP_SUM, 37, "sum", 1, 's')                                          \
    X(KILN_OP_RMAX, 38, "max", 1, 's')                                         \
    X(KILN_OP_RMIN, 39, "min", 1, 's')                                         \
    X(KILN_OP_MATMUL, 40, "matmul", 2, 's')

typedef enum kiln_op {
#define KILN_X_(name, value, text, arity, kind) name = value,
    KILN_OP_TABLE(KILN_X_)
#undef KILN_X_
        KILN_OP_COUNT
} kiln_op;

/* What a reduction op computes (KILN_REDUCE_NONE for every other op).
** Append only. */
typedef enum kiln_reduce {
    KILN_REDUCE_NONE = 0,
    KILN_REDUCE_SUM = 1,
    KILN_REDUCE_MAX = 2,
    KILN_REDUCE_MIN = 3
} kiln_reduce;

/* kiln_op_desc.result when it is not one dtype. */
#define KILN_RESULT_SAME (-1)  /* the dtype of the (value) operands */
#define KILN_RESULT_GIVEN (-2) /* chosen by the constructor: an input's or
                                  constant's dtype, a cast's target */

/* One row of the op table.  `accepts` has bit (1u << t) set for each
** kiln_dtype t the operands may have; all operands share it, except that
** `where`'s condition (its first operand) is always bool and `accepts`
** then applies to the two value operands.  Fields are only ever appended. */
typedef struct kiln_op_desc {
    size_t struct_size;
    kiln_op op;
    const char *name;   /* as in the .kf text; static storage */
    int arity;          /* number of operands */
    char kind;          /* as in KILN_OP_TABLE */
    uint32_t accepts;
    int result;         /* a kiln_dtype, KILN_RESULT_SAME or KILN_RESULT_GIVEN */
    kiln_reduce reduce;
} kiln_op_desc;

/* Fill *out with the op table's row of `op` (docs/runtime.md, "The op
** table").  The caller sets out->struct_size to sizeof(kiln_op_desc); a
** later release that appends fields fills only the first struct_size
** bytes, and sets struct_size to the bytes it filled.  An op outside
** 0..KILN_OP_COUNT-1, a NULL out or a struct_size below this first
** version's size is KILN_ERR_INVALID_ARGUMENT, with *out untouched. */
KILN_API kiln_status kiln_op_info(kiln_op op, kiln_op_desc *out);

KILN_API const char *kiln_op_name(kiln_op op); /* NULL if invalid */
KILN_API kiln_status kiln_op_parse(const char *name, kiln_op *out);

/* ------------------------------------------------------------------ fusion */

#define KILN_MAX_RANK 8

typedef struct kiln_fusion kiln_fusion;
typedef int32_t kiln_value; /* a value (node) id inside one fusion */

KILN_API kiln_status kiln_fusion_create(kiln_fusion **out);
KILN_API void kiln_fusion_destroy(kiln_fusion *f);

/* Declare the next input.  bcast[i] != 0 declares axis i a broadcast axis:
** its size must be 1 at execute and it expands against other operands.
** bcast may be NULL (no broadcast axes). */
KILN_API kiln_status kiln_fusion_input(kiln_fusion *f, kiln_dtype dtype,
                                       int rank, const uint8_t *bcast,
                                       kiln_value *out);
/* A rank-0 constant; `bits` holds the value's bit pattern in `dtype`
** (e.g. 0x3f800000 for f32 1.0, 1 for bool true). */
KILN_API kiln_status kiln_fusion_const(kiln_fusion *f, kiln_dtype dtype,
                                       uint64_t bits, kiln_value *out);
/* Any pointwise op of kind u/b/c/l/w (and KILN_OP_FMA), args[nargs]. */
KILN_API kiln_status kiln_fusion_op(kiln_fusion *f, kiln_op op,
                                    const kiln_value *args, int nargs,
                                    kiln_value *out);
KILN_API kiln_status kiln_fusion_cast(kiln_fusion *f, kiln_value a,
                                      kiln_dtype to, kiln_value *out);
/* Rank change: the result has out_rank axes; is_new[j] != 0 marks result
** axis j as a new broadcast axis (size 1); the others take the input's axes
** in order. */
KILN_API kiln_status kiln_fusion_broadcast(kiln_fusion *f, kiln_value a,
                                           int out_rank, const uint8_t *is_new,
                                           kiln_value *out);
/* op is KILN_OP_SUM, KILN_OP_RMAX or KILN_OP_RMIN; axes[naxes] distinct. */
KILN_API kiln_status kiln_fusion_reduce(kiln_fusion *f, kiln_op op,
                                        kiln_value a, const int *axes,
                                        int naxes, int keepdim,
                                        kiln_value *out);
/* 2-D [M,K] x [K,N] -> [M,N] f32; inputs f16, bf16 or f32 (same dtype). */
KILN_API kiln_status kiln_fusion_matmul(kiln_fusion *f, kiln_value a,
                                        kiln_value b, kiln_value *out);
/* Mark a value as the next output. */
KILN_API kiln_status kiln_fusion_output(kiln_fusion *f, kiln_value v);
/* Validate and freeze.  After this no op may be added. */
KILN_API kiln_status kiln_fusion_finalize(kiln_fusion *f);

KILN_API kiln_status kiln_fusion_hash(const kiln_fusion *f, uint64_t *out);
/* 1 when structurally equal (both finalized), else 0. */
KILN_API int kiln_fusion_equal(const kiln_fusion *a, const kiln_fusion *b);
KILN_API kiln_status kiln_fusion_num_inputs(const kiln_fusion *f, int *n);
KILN_API kiln_status kiln_fusion_num_outputs(const kiln_fusion *f, int *n);
/* dtype, rank and broadcast flags of input/output i. */
KILN_API kiln_status kiln_fusion_io(const kiln_fusion *f, int is_output,
                                    int i, kiln_dtype *dtype, int *rank,
                                    uint8_t *bcast /* KILN_MAX_RANK */);

/* The .kf text format (docs/fusion-format.md).  Parse returns a finalized
** fusion; errors carry "line:column".  Print returns canonical text to be
** freed with kiln_free. */
KILN_API kiln_status kiln_fusion_parse(const char *text, size_t len,
                                       kiln_fusion **out);
KILN_API kiln_status kiln_fusion_print(const kiln_fusion *f, char **out);

/* ------------------------------------------------------------------ tensor */

typedef enum kiln_memory {
    KILN_MEM_HOST = 0,
    KILN_MEM_DEVICE = 1
} kiln_memory;

typedef struct kiln_tensor kiln_tensor;
typedef struct kiln_context kiln_context;

/* Describe a tensor.  strides are in elements (any non-negative value,
** 0 included); NULL means contiguous row-major.  data NULL allocates
** (host: zeroed, owned by the tensor; device: needs ctx with a device
** backend).  Non-NULL data is borrowed: the caller keeps ownership.
** ctx may be NULL for host tensors. */
KILN_API kiln_status kiln_tensor_create(kiln_context *ctx, kiln_dtype dtype,
                                        int rank, const int64_t *sizes,
                                        const int64_t *strides,
                                        kiln_memory mem, void *data,
                                        kiln_tensor **out);
KILN_API void kiln_tensor_destroy(kiln_tensor *t);
KILN_API void *kiln_tensor_data(const kiln_tensor *t);
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
KILN_API int kiln_tensor_rank(const kiln_tensor *t);
KILN_API const int64_t *kiln_tensor_sizes(const kiln_tensor *t);
KILN_API const int64_t *kiln_tensor_strides(const kiln_tensor *t);
KILN_API kiln_memory kiln_tensor_memory(const kiln_tensor *t);
KILN_API int64_t kiln_tensor_numel(const kiln_tensor *t);
/* Copy between host memory and a tensor's storage (host or device),
** contiguous element order; nbytes must equal numel * dtype size. */
KILN_API kiln_status kiln_tensor_write(kiln_context *ctx, kiln_tensor *t,
                                       const void *src, size_t nbytes);
KILN_API kiln_status kiln_tensor_read(kiln_context *ctx, const kiln_tensor *t,
                                      void *dst, size_t nbytes);

/* ----------------------------------------------------------------- context */

typedef struct kiln_context_config {
    size_t struct_size;
    /* "ref", "cuda", "auto" (best usable: cuda, else ref), or a path to a
    ** plugin shared object.  NULL means "auto". */
    const char *backend;
    int device;                   /* device ordinal for device backends */
    size_t plan_cache_capacity;   /* 0: default (256) */
    size_t kernel_cache_capacity; /* 0: default (1024) */
    /* When use_env_override is non-zero, these strings replace the process
    ** environment (NULL = unset); otherwise getenv() is read. */
    int use_env_override;
    const char *env_enable;
    const char *env_disable;
    const char *env_dump;
    /* Stream for dump output (a FILE*); NULL means stderr. */
    void *dump_stream;
    /* Appended (read only when struct_size covers it).  The most work one
    ** kiln_execute may do: the sum over the fusion's values of their
    ** element counts for the call's sizes, plus M*N*K per matmul.  A call
    ** above it, or whose counts overflow, fails with KILN_ERR_LIMIT before
    ** it allocates or launches anything.  0: KILN_DEFAULT_MAX_WORK. */
    uint64_t max_work;
} kiln_context_config;

/* The default of kiln_context_config.max_work: 2^40 element operations. */
#define KILN_DEFAULT_MAX_WORK ((uint64_t)1 << 40)

/* Create a context.  cfg may be NULL (all defaults).  The environment is
** read now; a malformed KILN_* variable fails creation with the parse
** error.  An unusable backend fails with KILN_ERR_BACKEND_UNAVAILABLE and
** the reason. */
KILN_API kiln_status kiln_context_create(const kiln_context_config *cfg,
                                         kiln_context **out);
KILN_API void kiln_context_destroy(kiln_context *ctx);
/* Re-read the environment (or the override strings).  On error the old
** snapshot stays in force. */
KILN_API kiln_status kiln_context_reload_env(kiln_context *ctx);
/* Name of the backend in use ("ref", "cuda", plugin name). */
KILN_API const char *kiln_context_backend(const kiln_context *ctx);
/* The backend's identity string under the default (empty) kernel-level
** options: what it puts into the kernel-cache key (name, version, target,
** compiler).  Copies at most cap - 1 bytes and a NUL into buf (cut when
** longer).  KILN_ERR_INVALID_ARGUMENT for a NULL argument or cap 0 (buf
** untouched); the backend's own status when its identity() fails. */
KILN_API kiln_status kiln_context_backend_identity(kiln_context *ctx,
                                                   char *buf, size_t cap);
/* The environment snapshot currently in force (borrowed). */
KILN_API const kiln_options *kiln_context_env_options(const kiln_context *ctx);

/* Why the named backend is not usable here ("" and KILN_OK if usable). */
KILN_API kiln_status kiln_backend_probe(const char *backend, char *why,
                                        size_t cap);

typedef struct kiln_counters {
    size_t struct_size;
    uint64_t executes;
    uint64_t plan_hits, plan_misses, plan_evictions;
    uint64_t kernel_hits, kernel_misses, kernel_evictions;
    uint64_t compiles;     /* backend compile calls actually made */
    uint64_t kernel_loads; /* modules loaded onto a device */
    /* Appended: the kernel database (enable=kernel_db, docs/kernel-db.md).
    ** A caller built before these fields existed passes a smaller
    ** struct_size and receives the fields it knows. */
    uint64_t kernel_db_hits;    /* kernels loaded from the database */
    uint64_t kernel_db_misses;  /* not found, compiled, but not stored */
    uint64_t kernel_db_corrupt; /* bad entries found (compiled and replaced) */
    uint64_t kernel_db_stores;  /* entries written */
    uint64_t kernel_db_refused; /* compiled while the database was refused */
} kiln_counters;
KILN_API kiln_status kiln_context_counters(const kiln_context *ctx,
                                           kiln_counters *out);

/* ----------------------------------------------------------------- execute */

typedef struct kiln_exec_options {
    size_t struct_size;
    const char *const *enable;
    size_t n_enable;
    const char *const *disable;
    size_t n_disable;
    /* Appended in 0.1 (read only when struct_size covers it; a struct_size
    ** of offsetof(kiln_exec_options, stream) is the older layout and means
    ** NULL).  The stream the call's device work is issued on: a CUstream
    ** for the cuda backend, whose launches, library calls and copies are
    ** then ordered on it; NULL is the legacy default stream.  The call may
    ** return before the work is done: the caller synchronizes with the
    ** stream as with any other work on it.  Host-memory backends (ref)
    ** finish before returning and ignore it.  A device-memory backend that
    ** does not take streams fails the call with KILN_ERR_UNSUPPORTED when
    ** it is not NULL (docs/runtime.md, "Streams"). */
    void *stream;
} kiln_exec_options;

typedef enum kiln_segment_kind {
    KILN_SEG_GENERATED = 0, /* code generated by the backend */
    KILN_SEG_FALLBACK = 1,  /* library path (e.g. cuBLAS matmul) */
    KILN_SEG_REFERENCE = 2  /* reference implementation */
} kiln_segment_kind;

typedef struct kiln_exec_info kiln_exec_info;

/* What the kernel database did for one segment's kernel (enable=kernel_db,
** docs/kernel-db.md).  NONE: not consulted (kernel_db off, an in-memory
** hit, disable=nvrtc_caching, or a kernel the reference backend built). */
typedef enum kiln_db_outcome {
    KILN_DB_NONE = 0,
    KILN_DB_HIT = 1,     /* loaded from the database: nothing compiled */
    KILN_DB_MISS = 2,    /* not found; compiled; not stored (ro, write failed) */
    KILN_DB_STORED = 3,  /* not found; compiled and stored */
    KILN_DB_CORRUPT = 4, /* a bad entry was found; compiled and replaced */
    KILN_DB_REFUSED = 5  /* the database may not be used here; compiled */
} kiln_db_outcome;

/* "none", "hit", "miss", "stored", "corrupt", "refused" ("?" if invalid). */
KILN_API const char *kiln_db_outcome_name(kiln_db_outcome o);

typedef struct kiln_segment_info {
    size_t struct_size;
    kiln_segment_kind kind;
    const char *what;      /* "pointwise", "reduction", "matmul", ... */
    uint64_t kernel_id;    /* kernel-cache key hash */
    int kernel_hit;        /* 1 when the kernel came from the cache */
    const char *flags;     /* backend identity: compiler flags actually used */
    const char *path;      /* matmul path: "generated", "cublas", "ref" */
    int device;            /* device it ran on (-1: host) */
    double gpu_ms;         /* with enable=kernel_profile, else -1 */
    /* Appended (a smaller struct_size receives the fields before it): */
    kiln_db_outcome kernel_db; /* the kernel database's part, if any */
} kiln_segment_info;

KILN_API kiln_status kiln_exec_info_create(kiln_exec_info **out);
KILN_API void kiln_exec_info_destroy(kiln_exec_info *info);
KILN_API const char *kiln_exec_info_options(const kiln_exec_info *info);
KILN_API kiln_status kiln_exec_info_plan(const kiln_exec_info *info,
                                         uint64_t *plan_id, int *plan_hit);
KILN_API size_t kiln_exec_info_segment_count(const kiln_exec_info *info);
KILN_API kiln_status kiln_exec_info_segment(const kiln_exec_info *info,
                                            size_t i, kiln_segment_info *out);
/* The record as JSON; free with kiln_free. */
KILN_API kiln_status kiln_exec_info_json(const kiln_exec_info *info,
                                         char **out);

/* Run a finalized fusion.  inputs[n_inputs]; outputs[n_outputs]: a NULL
** entry is allocated by the runtime (contiguous, in the memory space of the
** backend, returned to the caller who destroys it).  opts may be NULL.
** info may be NULL; when given it is overwritten with this call's record.
** Thread-safe on one context; the options of one call never affect
** another.  On failure no output tensor is allocated. */
KILN_API kiln_status kiln_execute(kiln_context *ctx, const kiln_fusion *f,
                                  kiln_tensor *const *inputs, size_t n_inputs,
                                  kiln_tensor **outputs, size_t n_outputs,
                                  const kiln_exec_options *opts,
                                  kiln_exec_info *info);

/* ------------------------------------------------------ fusion input names */

/* The name input i had in the .kf text the fusion was parsed from: the
** %name of its `input` line without the '%' ("a" for `%a = input ...`),
** exactly as kiln_fusion_parse read it.  *name is NULL for a fusion built
** through the builder API.  The string lives as long as the fusion.
** KILN_ERR_INVALID_ARGUMENT for a NULL argument or i out of range (*name
** untouched). */
KILN_API kiln_status kiln_fusion_input_name(const kiln_fusion *f, int i,
                                            const char **name);

/* ------------------------------------------------- views (for bindings) */

/* A borrowed strided view described per call, for language bindings that
** would otherwise create and destroy a kiln_tensor per array per call.
** byte_strides are in bytes: non-negative multiples of the element size
** (an axis of size 0 or 1 may have any stride: it is never stepped). */
typedef struct kiln_view {
    void *data;
    int32_t dtype;    /* kiln_dtype */
    int32_t rank;
    int32_t memory;   /* kiln_memory */
    int32_t reserved; /* 0 */
    int64_t sizes[KILN_MAX_RANK];
    int64_t byte_strides[KILN_MAX_RANK];
} kiln_view;

/* kiln_execute on views: every output is given (nothing is allocated).
** The views are checked as kiln_tensor_create checks its arguments, with
** messages naming them ("input 1: axis 0 has a stride of -8 bytes"):
** KILN_ERR_SHAPE for a negative stride, KILN_ERR_ALIGNMENT for one that is
** not a multiple of the element size; then everything as kiln_execute. */
KILN_API kiln_status kiln_execute_views(kiln_context *ctx,
                                        const kiln_fusion *f,
                                        const kiln_view *inputs,
                                        size_t n_inputs,
                                        const kiln_view *outputs,
                                        size_t n_outputs,
                                        const kiln_exec_options *opts,
                                        kiln_exec_info *info);

/* The sizes of every output of `f` for these input views, as kiln_execute
** computes them (so that a caller can allocate the outputs itself):
** sizes[j * KILN_MAX_RANK + a] receives axis a of output j (its rank is
** kiln_fusion_io's); `cap` is the number of int64_t that sizes holds and
** must be at least n_outputs * KILN_MAX_RANK.  Checks the inputs' count,
** dtypes, ranks and sizes with kiln_execute's messages (KILN_ERR_DTYPE,
** KILN_ERR_SHAPE, ...); on error sizes is untouched. */
KILN_API kiln_status kiln_fusion_output_sizes(const kiln_fusion *f,
                                              const kiln_view *inputs,
                                              size_t n_inputs, int64_t *sizes,
                                              size_t cap);

/* Drop every plan and every compiled kernel from the context's caches
** (each counts as an eviction); the next execute of anything is a miss.
** Safe while other threads execute: an entry in use stays alive until its
** call releases it, and a kernel still being compiled stays in the cache. */
KILN_API kiln_status kiln_context_clear_caches(kiln_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* KILN_H */
