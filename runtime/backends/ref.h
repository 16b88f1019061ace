/*
** ref.h -- private to the reference backend (ref.c, ref_math.c): the
** compiled plan's types and the arithmetic ref.c's launch calls.
*/
#ifndef KILN_REF_H
#define KILN_REF_H

#include "internal.h"

enum {
    ST_LOAD_IN,   /* gather an INPUT node through its view */
    ST_FILL,      /* broadcast a CONST node */
    ST_LOAD_MAT,  /* gather a materialised node from its buffer */
    ST_COMPUTE,   /* evaluate a pointwise node */
    ST_ACCUM,     /* fold the operand block into a REDUCE accumulator */
    ST_STORE_OUT, /* scatter a node to a segment output */
    ST_STORE_MAT, /* copy a node into its materialised buffer */
    ST_FINALIZE   /* accumulator -> REDUCE buffer (after the group) */
};

typedef struct rstep {
    uint8_t kind;
    int32_t node;
    int32_t out; /* ST_STORE_OUT: output index */
} rstep;

typedef struct rnode {
    kiln_ir_node ir;
    uint32_t mask; /* axes of D of size 1 in this node's domain */
    int32_t depth; /* reductions between D and this node */
    int32_t group; /* pointwise: group computing it; -1 otherwise */
    int32_t accum; /* REDUCE: group that accumulates it */
    int32_t home;  /* group where a materialised value is native, or -1 */
    uint8_t leaf;  /* INPUT or CONST */
    uint8_t mat;   /* materialised over its domain */
} rnode;

typedef struct rgroup {
    uint32_t mask;
    int32_t depth;
    uint32_t first, count; /* steps */
} rgroup;

typedef struct ref_kernel {
    uint32_t kind;
    uint32_t n_nodes, n_inputs, n_outputs;
    rnode *nodes;
    int32_t *outputs;
    rgroup *groups; /* in execution order */
    uint32_t n_groups;
    rstep *steps;
    uint32_t n_steps, cap_steps;
    uint32_t n_mat; /* materialised nodes (0: launch needs no buffers) */
} ref_kernel;

typedef struct racc {
    void *acc;    /* double (float sums, float max/min), uint64 or int64 */
    double *comp; /* f64 sum: Neumaier compensation */
    int64_t nr;   /* elements of the reduced domain */
    int empty;    /* the reduced axes have extent 0 */
} racc;

static inline int arity_of(int op) { return kiln__op_desc((kiln_op)op)->arity; }

/* Evaluate pointwise node nd (index self) over n elements of the block:
** its operands' and its own values are in slot[]. */
void kiln__ref_compute(const ref_kernel *k, const rnode *nd,
                       void *const *slot, int32_t self, int64_t n);
/* A REDUCE node's accumulator: start, fold n operand elements X into the
** accumulator slots o[], and write the result into buf. */
void kiln__ref_acc_init(const rnode *nd, racc *r);
void kiln__ref_accumulate(const rnode *nd, racc *r, const void *X,
                          const int64_t *o, int64_t n);
void kiln__ref_finalize(const rnode *nd, const racc *r, void *buf);

#endif /* KILN_REF_H */
