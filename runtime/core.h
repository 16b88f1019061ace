/*
** core.h -- private declarations shared by the runtime core: the context
** (context.c), the planner (plan.c), the plan and kernel caches (cache.c),
** the keys (keys.c), the fallback (fallback.c) and execute (execute.c and
** the files of execute.h).  Never installed; see docs/runtime.md for the
** rules these modules implement.
**
** Ownership in one paragraph: a context owns its backend (and the dlopen
** handle of a plugin), its environment snapshot, and both caches.  A plan
** or kernel entry is reference counted; the cache holds one reference while
** the entry is in the cache, every execute that uses it holds one more, and
** the last release frees it (so LRU eviction never frees an entry in use).
*/
#ifndef KILN_CORE_H
#define KILN_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "internal.h"

/* ------------------------------------------------------------ the plan */

/* A value a segment reads: fusion node `node` presented as a view over the
** segment's domain.  map[a] is the domain axis of the node's axis a. */
typedef struct kiln__leaf {
    int32_t node;
    int32_t own;   /* PART_OWN: the node whose shape the view has */
    uint8_t part;  /* KILN__PART_* : which domain the view is over */
    int8_t map[KILN_MAX_RANK];
} kiln__leaf;

#define KILN__PART_D 0      /* the segment domain D */
#define KILN__PART_K 1      /* the keepdim domain after a REDUCE */
#define KILN__PART_OWN 2    /* the node's own shape (matmul operands) */

/* A value a segment writes: node `node` into its buffer (fusion output
** `out`, or an intermediate when out < 0). */
typedef struct kiln__sout {
    int32_t node;
    int32_t out;
    uint8_t part;
    int8_t map[KILN_MAX_RANK];
} kiln__sout;

/* One variant of a segment's IR: [0] without contraction, [1] with. */
typedef struct kiln__segir {
    kiln_ir_node *nodes;
    uint32_t n_nodes;
    int32_t *outputs;       /* n_outs node indices */
    uint8_t *blob;          /* serialized IR + traits: the kernel-key text */
    size_t blob_len;
    uint64_t blob_hash;
} kiln__segir;

typedef struct kiln__pseg {
    uint32_t kind;          /* kiln_ir_segment_kind */
    const char *what;       /* info-record name */
    int32_t dom_node;       /* node whose concrete shape is D (rank dom_rank) */
    int dom_rank;
    uint32_t red_axes;      /* reduction: axes set to 1 in the keepdim domain */
    int32_t k_node;         /* matmul: operand a ([M,K]) */
    uint32_t n_leaves;
    kiln__leaf *leaves;
    uint32_t n_outs;
    kiln__sout *outs;
    uint32_t *in_traits, *out_traits;
    uint32_t index64;
    kiln__segir ir[2];
    int contracts;          /* ir[1] differs from ir[0] */
} kiln__pseg;

typedef struct kiln__plan kiln__plan;
struct kiln__plan {
    /* key (full comparison behind `hash`) */
    uint64_t hash;
    uint64_t *key;
    size_t n_key;
    kiln_ir_node *f_nodes;  /* copy of the fusion's node and output arrays */
    uint32_t f_n_nodes;
    int32_t *f_outputs;
    uint32_t f_n_outputs;
    /* the plan */
    uint32_t n_segs;
    kiln__pseg *segs;
    int32_t *out_of;        /* per node: fusion output index, or -1 */
    int32_t *inter_of;      /* per node: intermediate index, or -1 */
    uint32_t n_inter;
    int32_t *inter_node;    /* node of each intermediate */
    /* cache bookkeeping */
    atomic_long refs;
    kiln__plan *lru_prev, *lru_next, *chain;
};

/* The input signature of a call as the planner sees it: one flag byte per
** input and per output (so any number of them), and index64. */
#define KILN__SIG_CONTIG 1u   /* input: dense row-major */
#define KILN__SIG_ALIGN16 2u  /* input or output: 16-byte aligned data */
typedef struct kiln__sig {
    const uint8_t *in;     /* f->n_inputs flags */
    const uint8_t *out;    /* f->n_outputs flags (ALIGN16 only) */
    int index64;
} kiln__sig;

/* Segment limits (docs/runtime.md, "Segment limits"): a segment has at
** most KILN_SEGMENT_MAX_VIEWS(rank of its domain) views (kiln_backend.h), and
** every value it computes has at most KILN__PLAN_MAX_CONE operations in its
** cone inside the segment; the planner splits what would pass either. */
#define KILN__PLAN_MAX_CONE 256

/* Build a plan for `f` under plan-level options `o`, the concrete node
** shapes of this call and the signature `sig`.  On failure *out is
** untouched and the error is recorded (KILN_ERR_FALLBACK_DISABLED,
** NO_MEMORY). */
kiln_status kiln__plan_build(const kiln_fusion *f,
                             const struct kiln_options *o,
                             const int64_t (*shapes)[KILN_MAX_RANK],
                             const kiln__sig *sig, kiln__plan **out);
void kiln__plan_free(kiln__plan *p);
/* The backend-facing segment IR of s, contracted variant when `contracted`
** and s has one.  Borrows s's arrays. */
void kiln__pseg_segment(const kiln__pseg *s, int contracted,
                        kiln_ir_segment *seg);
/* Print the plan's segments (dump=fusion_ir). */
void kiln__plan_dump(const kiln__plan *p, FILE *out);

/* ----------------------------------------------------------- the caches */

/* An interned kernel-level option set together with the backend identity
** string it produces.  Owned by the context; never freed before it. */
typedef struct kiln__variant {
    struct kiln_options masked; /* only kernel-level options kept */
    kiln_kernel_options ko;
    char canonical[512];
    char identity[512];
    uint64_t hash;             /* of canonical + identity */
    struct kiln__variant *next;
} kiln__variant;

typedef struct kiln__kernel kiln__kernel;
struct kiln__kernel {
    uint64_t hash;             /* kernel id */
    uint8_t *blob;             /* serialized segment IR (owned) */
    size_t blob_len;
    const kiln__variant *var;  /* the options it was compiled under */
    int state;                 /* 0 pending, 1 ready, 2 failed */
    kiln_status status;        /* failed: the compile status */
    char *error;               /* failed: message */
    int reference;             /* compiled by the ref backend (fallback) */
    const kiln_backend *be;    /* who owns handle */
    void *be_state;
    kiln_kernel_out out;
    kiln_db_outcome db;        /* the database's part in building it */
    atomic_long refs;
    int in_cache;
    kiln__kernel *lru_prev, *lru_next, *chain;
};

typedef struct kiln__caches {
    pthread_mutex_t plan_mu;
    kiln__plan **plan_buckets;
    size_t plan_nb, plan_count, plan_cap;
    kiln__plan *plan_head, *plan_tail;
    uint64_t plan_hits, plan_misses, plan_evictions;

    pthread_mutex_t kern_mu;
    pthread_cond_t kern_cv;
    kiln__kernel **kern_buckets;
    size_t kern_nb, kern_count, kern_cap;
    kiln__kernel *kern_head, *kern_tail;
    uint64_t kern_hits, kern_misses, kern_evictions, compiles, loads;

    pthread_mutex_t var_mu;
    kiln__variant *variants;
} kiln__caches;

/* ----------------------------------------------------------- the context */

struct kiln_context {
    kiln_backend be;           /* copy of the descriptor (struct_size clipped) */
    void *be_state;
    void *dl;                  /* dlopen handle of a plugin, else NULL */
    char name[64];
    int device;
    const kiln_backend *ref;   /* the reference backend, for REFERENCE fallback */
    void *ref_state;           /* ref's state (== be_state when be is ref) */
    int ref_owned;             /* ref_state opened separately */
    kiln_context_config cfg;   /* env override pointers are borrowed */
    pthread_mutex_t env_mu;
    struct kiln_options env;
    FILE *dump;
    atomic_ullong executes;
    kiln__caches caches;
    struct kiln__kdb *kdb;     /* the kernel database (kernel_db.h) */
};

kiln_status kiln__caches_init(kiln__caches *c, size_t plan_cap,
                              size_t kern_cap);
void kiln__caches_fini(kiln__caches *c);

/* Look up the plan for key[n_key] (hash h) of fusion f.  On a hit returns
** it with one reference taken; NULL on a miss.  Counts the hit or miss. */
kiln__plan *kiln__plan_find(kiln__caches *c, uint64_t h, const uint64_t *key,
                            size_t n_key, const kiln_fusion *f);
/* Insert a freshly built plan (which already owns its key).  If another
** thread inserted the same key first, p is freed and that plan returned.
** Returns the plan with one reference for the caller.  Evicts LRU plans
** beyond capacity. */
kiln__plan *kiln__plan_insert(kiln__caches *c, kiln__plan *p);
void kiln__plan_release(kiln__plan *p);

/* The interned variant for options o (kernel-level part) into *out.  On
** failure (identity call or memory) *out is untouched. */
kiln_status kiln__variant_get(kiln_context *ctx, const struct kiln_options *o,
                              const kiln__variant **out);

/* The segment IR handed to the backend for `s` under variant `v`. */
void kiln__pseg_ir(const kiln__pseg *s, const kiln__variant *v,
                   kiln_ir_segment *seg);
/* The kernel key of segment s under variant v (keys.c): the IR variant
** whose blob is compared, returned, and the hash into *hash. */
const kiln__segir *kiln__kernel_key(const kiln__pseg *s,
                                    const kiln__variant *v, uint64_t *hash);
/* Resolve the kernel of segment s for variant v: from the cache, or by
** compiling it once (single-flight).  nocache: compile a private kernel
** (disable=nvrtc_caching).  use_db: a kernel the cache lacks is looked up
** in the kernel database first, and stored there once compiled
** (enable=kernel_db; kernel_db_cache.c).  On success *out holds one
** reference and *hit says whether it came from the cache. */
kiln_status kiln__kernel_get(kiln_context *ctx, const kiln__pseg *s,
                             const kiln__variant *v, int nocache, int use_db,
                             kiln__kernel **out, int *hit);
/* Build kernel k of segment s (IR variant kir) under variant v: through
** the kernel database when use_db, else compile (kernel_db_cache.c).
** k->db receives the outcome, *compiled whether the backend compiled. */
kiln_status kiln__kdb_obtain(kiln_context *ctx, const kiln__pseg *s,
                             const kiln__variant *v, const kiln__segir *kir,
                             kiln__kernel *k, int use_db, int *compiled,
                             char *err, size_t cap);
/* Compile k (cache.c): the backend, or the reference backend when
** kiln__fallback_applies to the backend's answer. */
kiln_status kiln__compile_into(kiln_context *ctx, const kiln__pseg *s,
                               const kiln__variant *v, kiln__kernel *k,
                               char *err, size_t cap);
/* The REFERENCE fallback's one decision (fallback.c): a backend's answer
** st hands the segment to the reference backend when it is
** KILN_ERR_UNSUPPORTED and the context has a reference backend distinct
** from its own. */
int kiln__fallback_applies(const kiln_context *ctx, kiln_status st);
/* Compile seg into k with the reference backend and mark k `reference`. */
kiln_status kiln__fallback_compile(kiln_context *ctx,
                                   const kiln_ir_segment *seg,
                                   const kiln_kernel_options *ko,
                                   kiln__kernel *k, char *err, size_t cap);
/* Drop one reference to k; the last one releases the backend's kernel and
** frees k. */
void kiln__kernel_release(kiln__kernel *k);

#endif /* KILN_CORE_H */
