/*
** conform.h -- internal declarations of the conformance runner
** (`kiln conform`).  The runner is a *client* of Kiln: it uses only the
** public API of kiln.h, never internal.h, so a pass proves the black-box
** contract.  docs/conformance.md describes the vector format and the runner.
**
** Layers (one file each):
**   vectors.c       load and validate vector files (jansson); hex bit
**                   patterns; tensors (strided storage, repeat data)
**   check_numeric.c ULP distance, FTZ, NaN rules; the output check kinds
**                   (exact / ulp / abs / sumBound) and their comparison
**   differential.c  splitmix64 input generation for differential tests
**   cases.c         one function per category that runs a vector test
**                   against a backend through the public API
**   verdict.c       where segments ran, the result of a test (pass / fail
**                   / unsupported / skip / invalid-vector), the summary
**                   tables and the run's exit status
**   expectations.c  expectations files (--expectations, --write-...)
**   results.c       the results file (--results) and --check-results
**   sha256.c        SHA-256 of the vector files (FIPS 180-4)
**   report.c        per-category and per-op x dtype tables, Markdown /
**                   JUnit / TAP
**   runner.c        command line, selection, sharding, Check wiring
**
** Memory here is plain malloc/free: the runner is outside libkiln and its
** allocation hooks.  Every loader/checker reports failures as text in a
** caller buffer (err, cap) and returns non-zero; none aborts on bad input.
*/
#ifndef KILN_CONFORM_H
#define KILN_CONFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "kiln.h"

#define CF_MSG 1024 /* size of message buffers */

/* ----------------------------------------------------------- vector files */

/* A loaded test keeps its JSON object as compact text: a jansson tree
** costs several times the file size, and the runner forks once per test,
** so a small parent process keeps fork cheap.  cf_test_json parses it. */
typedef struct cf_test {
    const char *category;  /* borrowed from the file */
    int tcid;
    const char *comment;   /* these strings point into the file's pool */
    const char *result;    /* "valid" | "invalid" | "acceptable" */
    const char *group_type;/* the test group's "type" */
    const char *flags;     /* n_flags NUL-terminated names, one after the
                           ** other, in the pool */
    size_t n_flags;
    const char *text;      /* the test object, compact JSON */
    json_t *json;          /* set while the test runs (cf_run_test) */
} cf_test;

typedef struct cf_file {
    char *path;
    char *category;
    char *suite_version;
    char sha256[65];       /* of the file's bytes, lower-case hex */
    char *pool;            /* all strings of the tests, NUL-separated */
    cf_test *tests;        /* n_tests, in tcId order */
    size_t n_tests;
} cf_file;

/* Format a message into err (cap bytes, may truncate) and return 1: the
** failure value of the cf_* helpers. */
int cf_fail(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Read a whole file into a malloc'd buffer of *len bytes and a NUL (the
** caller frees it).  NULL with errno set on failure. */
char *cf_read_file(const char *path, size_t *len);

/* Load and validate one vector file: the common fields of docs/
** conformance.md (suite, suiteVersion with major 1, category,
** numberOfTests, notes, testGroups, and per test tcId/comment/flags/
** result; every flag defined in notes; tcIds unique).  Category-specific
** fields are checked when the test runs.  On error returns non-zero with
** "PATH: where: what" in err, and *out is untouched.  Free with
** cf_file_free (accepts a zeroed struct). */
int cf_file_load(const char *path, cf_file *out, char *err, size_t cap);
/* The same from len bytes in memory; `name` stands for the path. */
int cf_file_load_buffer(const char *buf, size_t len, const char *name,
                        cf_file *out, char *err, size_t cap);
void cf_file_free(cf_file *f);

/* Parse a hex bit pattern ("0x3f800000") of dtype dt into *bits.  The
** digits must fit the dtype's width (bool: 0x0 or 0x1).  Non-zero + err on
** failure. */
int cf_hex_parse(const char *s, kiln_dtype dt, uint64_t *bits, char *err,
                 size_t cap);

/* A host tensor decoded from JSON.  data holds `storage` elements of the
** dtype, packed little-endian as in memory; element (i0,..) lives at
** sum(i_k * strides[k]). */
typedef struct cf_tensor {
    kiln_dtype dtype;
    int rank;
    int64_t shape[KILN_MAX_RANK];
    int64_t strides[KILN_MAX_RANK];
    int strided;           /* "strides" was given */
    size_t offset;         /* "offset": elements before element 0 */
    size_t numel;
    size_t storage;        /* elements in data */
    unsigned char *data;
} cf_tensor;

/* Decode {"dtype","shape","strides"?,"offset"?,"data"} at JSON path `where`.  With
** need_data = 0 "data" may be absent (differential inputs).  On error
** non-zero, err names the path ("inputs[1].data[3]: ..."), *t untouched. */
int cf_tensor_from_json(const json_t *j, const char *where, int need_data,
                        cf_tensor *t, char *err, size_t cap);
void cf_tensor_free(cf_tensor *t);
/* Element k (in storage order) as bits. */
uint64_t cf_load_bits(kiln_dtype dt, const void *data, size_t k);
void cf_store_bits(kiln_dtype dt, void *data, size_t k, uint64_t bits);
/* Copy a strided tensor into contiguous row-major element order. */
void cf_tensor_gather(const cf_tensor *t, void *dst);

/* ------------------------------------------------------ per-test budget */

/* What one test may cost (docs/conformance.md, "Per-test budget"), so that
** a small hostile vector file cannot make the runner allocate gigabytes or
** run for hours:
**   elements: the sum over every tensor the runner decodes or generates
**     (inputs, expected outputs, differential inputs) of its storage
**     length plus its element count, expected outputs of a concurrent test
**     once per thread;
**   work: the work of all the test's executes together, as kiln_execute
**     counts it (kiln_context_config.max_work: every value's element
**     count, plus M*N*K per matmul); each execute gets an equal share.
** Both are enforced before anything of that size is allocated or run; a
** test over either is an `invalid vector` failure. */
#ifndef CF_BUDGET_ELEMENTS /* -D for the fuzz target only: same paths */
#define CF_BUDGET_ELEMENTS ((int64_t)1 << 26)
#endif
#define CF_BUDGET_WORK ((int64_t)1 << 32)

typedef struct cf_cost {
    int64_t elements;   /* counted against CF_BUDGET_ELEMENTS */
    int64_t executes;   /* the most kiln_execute calls the test makes */
} cf_cost;

/* Validate every field the runner reads from test object `test` of
** `category` (a known one): JSON types, enumerations, integer ranges,
** canonical integer keys, unknown fields, fields that do not apply to the
** test's result; decode every tensor and check (holding the element budget
** before each allocation) and count the executes.  On error non-zero with
** "path: what" in err (path as in the JSON: "steps[2].expect.plan"). */
int cf_test_validate(const char *category, const json_t *test, cf_cost *cost,
                     char *err, size_t cap);

/* Helpers for typed JSON access with a path in the error message. */
int cf_json_string(const json_t *obj, const char *key, const char *where,
                   const char **out, char *err, size_t cap);
/* A list of strings (NULL or absent -> 0 items); *out is malloc'd. */
int cf_json_strings(const json_t *obj, const char *key, const char *where,
                    const char ***out, size_t *n, char *err, size_t cap);

/* ------------------------------------------------------------- numerics */

/* Floating-point classification on bit patterns (f16, bf16, f32, f64). */
int cf_is_float(kiln_dtype dt);
int cf_is_nan(kiln_dtype dt, uint64_t bits);
int cf_is_denormal(kiln_dtype dt, uint64_t bits);
int cf_is_zero(kiln_dtype dt, uint64_t bits);
int cf_sign(kiln_dtype dt, uint64_t bits);
double cf_to_double(kiln_dtype dt, uint64_t bits); /* exact (i64: rounded) */

/* ULP distance on the ordered integer representation: negative values are
** mapped to -(bits & ~sign), so +0 and -0 are 0 apart, adjacent floats 1
** apart and infinity one step beyond the largest finite value.  Two NaNs
** are 0 apart; a NaN and a non-NaN are CF_ULP_INF apart. */
#define CF_ULP_INF UINT64_MAX
uint64_t cf_ulp_distance(kiln_dtype dt, uint64_t a, uint64_t b);

typedef enum cf_check_kind {
    CF_CHECK_EXACT = 0,
    CF_CHECK_ULP = 1,
    CF_CHECK_ABS = 2,
    CF_CHECK_SUMBOUND = 3
} cf_check_kind;

typedef struct cf_alt {
    size_t index;
    uint64_t *bits;
    size_t n;
} cf_alt;

typedef struct cf_check {
    cf_check_kind kind;
    uint64_t max_ulp;          /* ULP: uniform bound */
    uint64_t *max_per_element; /* ULP: per-element bounds (or NULL) */
    double *bounds;            /* ABS: per-element bound */
    size_t n_per;              /* length of max_per_element / bounds */
    int ftz;
    cf_alt *alts;
    size_t n_alts;
    /* SUMBOUND (differential): |got - ref| <= 2 * gamma_n * S, gamma_n =
    ** n u / (1 - n u), S from the runner (see differential.c). */
    int64_t sum_n;
    double sum_u;
} cf_check;

/* Decode a check object for an output of dtype dt and numel elements.
** Non-zero + err on failure; *c untouched. */
int cf_check_from_json(const json_t *j, const char *where, kiln_dtype dt,
                       size_t numel, cf_check *c, char *err, size_t cap);
void cf_check_free(cf_check *c);

typedef struct cf_cmp_stats {
    uint64_t max_ulp;   /* largest ULP distance seen (ULP checks) */
    double max_abs;     /* largest |got - ref| (ABS / SUMBOUND checks) */
    int acceptable;     /* some element matched only an alternative */
    int ulp_seen;       /* max_ulp is meaningful */
} cf_cmp_stats;

/* Compare numel contiguous elements `got` with the reference `want` under
** check c.  sum_scale (SUMBOUND only) gives S per element (NULL: 0).
** Returns 0 when every element passes; otherwise non-zero and msg names
** the first failing element: index, got, expected, distance and bound.
** stats accumulates (may be NULL). */
int cf_compare(const cf_check *c, kiln_dtype dt, size_t numel,
               const void *got, const void *want, const double *sum_scale,
               cf_cmp_stats *stats, char *msg, size_t cap);

/* --------------------------------------------------------- differential */

/* splitmix64: state += 0x9e3779b97f4a7c15, then the mix of Steele et al.
** Returns the next output and advances *state. */
uint64_t cf_splitmix64(uint64_t *state);

/* A differential input's "dist": uniform over [lo, hi) (float dtypes) or
** integers in [lo, hi].  Non-zero + err when malformed. */
typedef struct cf_dist {
    int uniform;
    double flo, fhi;          /* uniform */
    int64_t ilo, ihi;         /* ints */
} cf_dist;
int cf_diff_dist(const json_t *input, const char *where, kiln_dtype dt,
                 cf_dist *d, char *err, size_t cap);

/* Generate the inputs of a differential test: each input in declaration
** order, each element in row-major order, from one splitmix64 stream
** seeded with `seed` (docs/conformance.md, "Differential inputs").
** Non-zero + err on a bad "dist". */
int cf_diff_generate(const json_t *input, const char *where, uint64_t *state,
                     cf_tensor *t, char *err, size_t cap);

/* ------------------------------------------------------------------ sweep */

/* crmath.c: the correctly rounded reference of the sweep category. */
typedef enum cr_op {
    CR_EXP, CR_LOG, CR_SQRT, CR_RSQRT, CR_RECIPROCAL, CR_TANH, CR_SIN, CR_COS,
    CR_ERF, CR_SIGMOID, CR_FLOOR, CR_CEIL, CR_NEG, CR_ABS, CR_RELU, CR_CAST,
    CR_N_OPS
} cr_op;

/* The correctly rounded result of op at x: `lo` == `hi` when decided, else
** the two neighbours the exact value lies between (undecided = 1; relu(-0)
** has both zeros as candidates, decided); approx: f(x) in binary64 (for
** absolute bounds). */
typedef struct cr_val {
    uint64_t lo, hi;
    double approx;
    int undecided;
    int stage; /* 0 exact op, 1 binary64 decided, 2 long double decided,
               ** 3 undecided */
} cr_val;

int cr_op_parse(const char *name);         /* -1: not a sweep op */
const char *cr_op_name(cr_op op);
int cr_op_transcendental(cr_op op);
/* op (not CR_CAST) at x of dtype dt (f32 or f64); non-zero: other dtype. */
int cr_eval(cr_op op, kiln_dtype dt, uint64_t x, cr_val *r);
/* cast f32 x to `to` (fusion-format.md, section 4); non-zero: bad `to`. */
int cr_cast_f32(kiln_dtype to, uint32_t x, uint64_t *out);

/* sweep.c: one sweep test (docs/conformance.md, "sweep"). */
typedef struct cf_sweep {
    cr_op op;
    kiln_dtype from, to;
    uint64_t count, seed;  /* the sample: `count` inputs */
    int has_ulp;           /* bound.ulp is a number (null: unbounded) */
    uint64_t ulp;
    double ulp_per_abs_x;  /* allowed ulp += floor(|x| * this) */
    int has_abs;           /* within [abs_lo, abs_hi]: |got - f(x)| <= abs */
    double abs, abs_lo, abs_hi;
    int ftz;               /* f32 subnormal inputs/results may flush */
} cf_sweep;

/* Decode and validate a sweep test's "sweep", "bound" and "fusion"
** (which must be the canonical fusion of the op). */
int cf_sweep_from_json(const json_t *test, cf_sweep *s, char *err, size_t cap);
/* The canonical fusion text of a sweep (static storage per call: buf). */
void cf_sweep_fusion(const cf_sweep *s, char *buf, size_t cap);
/* Input k of the sample (k < count): the fixed inputs first (specials and
** every binade's edges), then splitmix64 bit patterns from the seed. */
uint64_t cf_sweep_input(const cf_sweep *s, uint64_t k);
uint64_t cf_sweep_fixed_count(kiln_dtype dt);

typedef struct cf_sweep_stats {
    uint64_t n, undecided, unchecked, over;
    uint64_t worst_ulp;              /* over checked ULP elements */
    uint64_t worst_x, worst_got, worst_want;
    int worst_set;
    uint64_t fail_x, fail_got, fail_want, fail_ulp, fail_allowed;
    int fail_abs;                    /* the first failure was an abs bound */
} cf_sweep_stats;

/* Check n outputs `got` (dtype s->to) for inputs `x` (dtype s->from). */
void cf_sweep_check(const cf_sweep *s, size_t n, const void *x,
                    const void *got, cf_sweep_stats *st);

/* ----------------------------------------------------------------- cases */

/* The result of one test (docs/conformance.md, "Results"); the values are
** stable (they travel through the runner's channel and results files). */
typedef enum cf_status {
    CF_PASS = 0,
    CF_FAIL = 1,
    CF_SKIP = 2,        /* the test does not apply here; msg says why */
    CF_UNSUPPORTED = 3, /* the backend declined a segment the test needs */
    CF_INVALID = 4      /* invalid-vector: the test itself is malformed */
} cf_status;
#define CF_N_STATUS 5
/* "pass", "fail", "skip", "unsupported", "invalid-vector". */
const char *cf_status_name(cf_status s);
/* The status named s; -1 when none. */
int cf_status_parse(const char *s);

#define CF_MAX_ULP_STATS 8
typedef struct cf_ulp_stat {
    char op[24];
    char dtype[8];
    uint64_t ulp;
} cf_ulp_stat;

/* `kiln conform --serde` (docs/conformance.md, "--serde"): what one test
** did in one pass, summed over the contexts it created on the backend
** under test (their kiln_counters, read before each is destroyed) and over
** every output it read back (a hash of the bytes). */
typedef struct cf_serde {
    int pass;               /* 1 (fills the database) or 2 (must hit) */
    uint64_t digest;        /* sum of a hash of every output buffer read */
    uint64_t outputs;       /* how many were read */
    uint64_t compiles, hits, misses, stores, corrupt, refused;
    int pass_specific;      /* the test ran steps marked for one pass only */
} cf_serde;

typedef struct cf_outcome {
    cf_status status;
    int acceptable;
    char msg[CF_MSG];
    size_t n_ulp;
    cf_ulp_stat ulp[CF_MAX_ULP_STATS];
    /* Where the work ran, from the info record of every execute on the
    ** backend under test (cf_note_segments). */
    uint64_t native;       /* segments of kind GENERATED or FALLBACK */
    uint64_t fallback;     /* segments of kind REFERENCE */
    char fallback_what[64];/* the first REFERENCE segment's "what" */
    int declined;          /* the FAIL is the backend declining a segment:
                           ** an execute expected to succeed failed with
                           ** KILN_ERR_FALLBACK_DISABLED (cases.c) */
    int abs_seen;          /* max_abs is meaningful */
    double max_abs;        /* largest |got - ref| of abs/sumBound checks */
    cf_serde *serde;        /* --serde: where the test's outputs are summed */
} cf_outcome;

typedef struct cf_target {
    const char *backend;   /* name or path handed to kiln_context_create */
    int device;
    void *dump_stream;     /* FILE* for KILN_DUMP output (NULL: stderr) */
    uint64_t max_work;     /* each context's max_work (0: Kiln's default) */
    int plugin;            /* the backend is a plugin, not one of Kiln's own */
    cf_serde *serde;       /* --serde: enable=kernel_db is added to every
                              context on the backend under test (NULL: not) */
    int sweep_all;         /* --sweep all: f32 sweeps run every input */
    int sweep_print;       /* --sweep given: print a line per sweep test */
    uint32_t sweep_i, sweep_n; /* --sweep-shard I/N (0/0: 1/1) */
} cf_target;

/* Fold output bytes into o->serde (no-op without --serde; thread-safe). */
void cf_serde_fold(cf_outcome *o, const void *data, size_t n);

/* The category names the runner knows, in suite order (NULL-terminated). */
extern const char *const cf_categories[];
int cf_category_known(const char *name);

/* Run one test of a known category; fills *out (never aborts).  out->
** status is final (cf_finish_outcome has run). */
void cf_run_test(const cf_target *tg, const cf_test *t, cf_outcome *out);

/* A context on tg's backend as every case makes one (cases.c), and its
** release (--serde counters first). */
kiln_status cf_case_context(const cf_target *tg, kiln_context **ctx);
void cf_case_context_done(const cf_target *tg, kiln_context *ctx);

/* fuzz.c: the `fuzz` category.  cf_run_fuzz runs the random fusion of the
** test's "seed" on tg and on ref; cf_fuzz_text gives that fusion's .kf
** text (malloc'd; non-zero when out of memory). */
void cf_run_fuzz(const cf_target *tg, const cf_test *t, cf_outcome *o);
int cf_fuzz_text(uint64_t seed, char **kf);
/* The default-profile ULP bound the fuzz category uses for op on dt (the
** table of docs/numerics.md, "Transcendentals"); -1 when it has none. */
int cf_fuzz_ulp_bound(const char *op, kiln_dtype dt);
/* The fuzz category's tests, made in memory: tcId i+1 has "seed" seed+i
** (i < count), in a file of suite version `suite_version`.  The runner
** adds it when --category fuzz, --seed or --count is given (defaults
** CF_FUZZ_SEED, CF_FUZZ_COUNT).  Non-zero + err on a bad range. */
#define CF_FUZZ_SEED 1
#define CF_FUZZ_COUNT 200
#define CF_FUZZ_MAX_COUNT 1000000
int cf_fuzz_file(uint64_t seed, uint64_t count, const char *suite_version,
                 cf_file *out, char *err, size_t cap);

/* The op that defines output `index` of a .kf text ("?" when it cannot be
** told), from the text alone. */
void cf_output_op(const char *kf, size_t index, char *op, size_t cap);

/* --------------------------------------------------------------- verdict */

/* Count the segments of one execute's info record (NULL: nothing) on the
** backend under test: REFERENCE segments ran on the runtime's reference
** fallback, every other kind on the backend itself. */
void cf_note_segments(cf_outcome *o, const kiln_exec_info *info);
/* Fold a thread's outcome into o: counts, statistics, first failure. */
void cf_outcome_merge(cf_outcome *o, const cf_outcome *from);
/* Record |got - ref| statistics of one comparison. */
void cf_note_abs(cf_outcome *o, int seen, double max_abs);
/* Decide the final status (docs/conformance.md, "Results"):
**   FAIL whose message starts "invalid vector: " -> CF_INVALID;
**   FAIL that the backend declined                -> CF_UNSUPPORTED;
**   PASS with a REFERENCE segment, unless the test carries the flag
**     CF_FALLBACK_FLAG (it is about the fallback) -> CF_UNSUPPORTED;
**   PASS with no segment at all, when the backend under test is a plugin
**     (the test judged only Kiln's own runtime)  -> CF_SKIP. */
void cf_finish_outcome(cf_outcome *o, const cf_test *t, int plugin);
/* The flag of the tests about the reference fallback itself. */
#define CF_FALLBACK_FLAG "disable=fallback"
/* 1 when test t carries flag `name`. */
int cf_test_has_flag(const cf_test *t, const char *name);

/* ---------------------------------------------------------- expectations */

/* An expectations file (docs/conformance.md, "Expectations files"): lines
** "PATTERN RESULT REASON...", PATTERN a test id or a glob over ids
** (fnmatch: * ? [...]), RESULT fail, unsupported or skip, REASON
** mandatory; '#' starts a comment line.  The first line whose pattern
** matches a test decides its expectation. */
typedef struct cf_expect_line {
    char *pattern;
    cf_status result;      /* CF_FAIL, CF_UNSUPPORTED or CF_SKIP */
    char *reason;
    int line;              /* 1-based line number in the file */
    size_t uses;           /* selected tests it decided */
} cf_expect_line;

typedef struct cf_expectations {
    char *path;
    char sha256[65];       /* of the file's bytes */
    cf_expect_line *lines;
    size_t n;
} cf_expectations;

/* Parse len bytes of expectations text; `name` names it in errors
** ("FILE:LINE: what").  Non-zero + err on the first bad line; *e is then
** empty.  Free with cf_expectations_free (accepts a zeroed struct). */
int cf_expectations_parse(const char *text, size_t len, const char *name,
                          cf_expectations *e, char *err, size_t cap);
/* Read and parse FILE (also records its SHA-256). */
int cf_expectations_load(const char *path, cf_expectations *e, char *err,
                         size_t cap);
void cf_expectations_free(cf_expectations *e);
/* The line deciding test `id`, or NULL (counts a use when count != 0). */
cf_expect_line *cf_expectations_match(cf_expectations *e, const char *id,
                                      int count);

/* ---------------------------------------------------------------- report */

#define CF_MAX_KEYS 8
typedef struct cf_key { /* an output's defining op and its dtype */
    char op[24];
    char dtype[8];
} cf_key;

typedef struct cf_result {
    const cf_test *test;
    char id[96];           /* "<category>/<tcId>" */
    cf_status status;
    int acceptable;
    double ms;             /* time of the test body */
    double t0, t1;         /* monotonic start/end (ms) of the test body */
    char *msg;             /* message or reason (owned; NULL for a pass) */
    uint64_t native, fallback; /* segments (cf_outcome) */
    int abs_seen;
    double max_abs;
    size_t n_ulp;          /* largest ULP distance per op and dtype */
    cf_ulp_stat ulp[CF_MAX_ULP_STATS];
    const cf_expect_line *expect; /* its expectation, or NULL */
    int unexpected;        /* the result differs from expect */
    int fails_run;         /* this result makes the run fail (cf_summarize) */
} cf_result;

typedef struct cf_counts {
    size_t n[CF_N_STATUS]; /* tests per result */
    uint64_t native;       /* segments run by the backend under test */
    uint64_t fallback;     /* segments run on the reference fallback */
} cf_counts;

typedef struct cf_cat_row {
    const char *category;
    cf_counts c;
    double ms;             /* wall time from its first to its last test */
} cf_cat_row;

/* One op x dtype of one category: the tests whose outputs it defines.
** The ULP columns count only tests that ran entirely on the backend under
** test. */
typedef struct cf_op_row {
    size_t cat;            /* index into cf_summary.cats */
    char op[24];
    char dtype[8];
    cf_counts c;
    int ulp_seen;
    uint64_t max_ulp;
    size_t ulp_tests;
} cf_op_row;

/* Why the run passes or fails (cf_summarize; docs/conformance.md, "Exit
** status"). */
typedef struct cf_verdict {
    size_t failed;         /* fail results not expected */
    size_t invalid;        /* invalid-vector results */
    size_t unexpected;     /* results that contradict their expectation */
    size_t strict;         /* unsupported results that fail under --strict */
    size_t expected;       /* results that match their expectation */
    size_t evidence;       /* passes with native segments */
    int pass;              /* 1: exit status 0 */
} cf_verdict;

typedef struct cf_summary {
    const char *backend;
    const char *backend_note;  /* why this backend (auto choice) */
    const char *backend_identity; /* kiln_context_backend_identity */
    const char *device;        /* "host" or "device N" */
    const char *vectors_dir;
    const char *shard;         /* "1/1" */
    const char *suite_version;
    int strict;
    const cf_expectations *expect; /* NULL without --expectations */
    cf_result *results;
    size_t n_results;
    cf_cat_row *cats;          /* filled by cf_summarize */
    size_t n_cats;
    cf_op_row *ops;            /* sorted by category, op, dtype */
    size_t n_ops;
    cf_counts total;
    cf_verdict verdict;
    double wall_s;
} cf_summary;

/* Fill cats, ops, total and verdict from results (and each result's
** fails_run).  0, or 1 when out of memory.  cf_summary_free frees what it
** allocated (not the results). */
int cf_summarize(cf_summary *s);
void cf_summary_free(cf_summary *s);
/* The op x dtype keys of test t (from its fusion; none for a test without
** one).  Returns how many were written to keys[cap]. */
size_t cf_test_keys(const cf_test *t, cf_key *keys, size_t cap);
/* One line saying why the run fails ("" when it passes) into buf. */
void cf_verdict_text(const cf_summary *s, char *buf, size_t cap);
/* ----------------------------------------------------------------- serde */

/* serde.c: the --serde driver and the per-test records of its passes. */
typedef struct cf_serde_run {
    const char *backend;   /* chosen already: cuda or nvrtc, or a plugin */
    long device;
    const char *vectors;   /* NULL: the default */
    const char **cats;
    size_t n_cats;
    const char *filter, *exclude, *shard;
    double timeout;
    const char *report, *junit, *tap; /* written by pass 2 */
    int strict;
    const char **skip_flags;
    size_t n_skip;
    const char *expectations;          /* both passes */
    const char *results, *write_expect; /* written by pass 2 */
} cf_serde_run;
/* Run pass 1 and pass 2 as two processes on one fresh cache directory;
** the exit status (0 only when both passes passed). */
int cf_serde_drive(const cf_serde_run *a);
/* One test's record as JSON (a new reference). */
json_t *cf_serde_json(const cf_serde *sd);
/* Pass 1: its own rules; pass 2: compare with records (id -> record). */
void cf_serde_judge(const json_t *records, const char *id, const cf_serde *sd,
                    cf_outcome *o);
/* Read pass 1's record file into an object keyed by test id.  0 on
** success; 1 with a message on stderr. */
int cf_serde_load(const char *path, json_t **out);
/* Write the record file (one line per test that left a record); sums the
** compiles and the kernels kept (stored or found) over all tests. */
int cf_serde_write(const char *path, const cf_result *res,
                   const json_t *const *lines, size_t n, uint64_t *compiles,
                   uint64_t *kept);

/* The text report on the terminal. */
void cf_report_text(const cf_summary *s, FILE *out);
/* s made safe for a terminal or log into buf (cap bytes, truncated at a
** character boundary): control characters and invalid UTF-8 bytes become
** the text \xNN, so a vector's string cannot add or rewrite a line.
** Returns the length written. */
size_t cf_text_escape(const char *s, char *buf, size_t cap);
/* Markdown, JUnit XML and TAP 13 files, each written through cli_out.
** Every string taken from the vectors or the command line is escaped for
** the format (report.c).  0 on success; 1 with a message on stderr. */
int cf_report_markdown(const cf_summary *s, const char *path);
int cf_report_junit(const cf_summary *s, const char *path);
int cf_report_tap(const cf_summary *s, const char *path);
/* An expectations file listing every fail, unsupported and skip result
** of the run, its message as the reason (expectations.c). */
int cf_report_expectations(const cf_summary *s, const char *path);

/* ---------------------------------------------------------- results file */

/* What a results file records about the run besides the results. */
typedef struct cf_run_info {
    int argc;
    char **argv;                /* the command line */
    const char *const *categories;
    size_t n_categories;
    const char *filter, *exclude;
    const char *const *skip_flags;
    size_t n_skip_flags;
    double timeout;
    const char *vectors_source; /* "--vectors", "KILN_VECTORS", ... */
    const cf_file *files;       /* the loaded vector files */
    size_t n_files;
    char vectors_sha256[65];    /* cf_vectors_hash */
} cf_run_info;

/* SHA-256 of len bytes as 64 lower-case hex digits and a NUL. */
void cf_sha256_hex(const void *data, size_t len, char out[65]);
/* The suite hash: SHA-256 of the lines "<sha256>  <file name>\n" of the
** files sorted by name (what `sha256sum *.json | sha256sum` prints). */
void cf_vectors_hash(const cf_file *files, size_t n, char out[65]);
/* Write the results file (docs/conformance.md, "Results file") through
** cli_out.  0, or 1 with a message on stderr. */
int cf_results_write(const cf_summary *s, const cf_run_info *ri,
                     const char *path);

/* A results file read back for --check-results. */
typedef struct cf_results_doc {
    json_t *root;               /* owns everything below */
    const char *suite_version, *vectors_sha256;
    json_t *files;              /* [{"name","sha256",...}] */
    json_t *options;            /* the selection options */
    json_t *results;            /* the records */
    json_t *summary;
    json_t *expectations;       /* {"path","sha256"} or NULL */
} cf_results_doc;
/* Read and check the structure of a results file.  Non-zero + err (the
** JSON path of the first problem); *d untouched on failure. */
int cf_results_read(const char *path, cf_results_doc *d, char *err,
                    size_t cap);
void cf_results_free(cf_results_doc *d);

/* `kiln conform` (runner.c): the runner's entry, which build/kiln's
** command table calls (runtime/cli/main.c).  The runner uses only
** tool/tool.h of the tool's code, never runtime/cli/. */
int kiln_cmd_conform(int argc, char **argv);

#endif /* KILN_CONFORM_H */
