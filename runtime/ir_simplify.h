/*
** ir_simplify.h -- the bit-exact simplification passes over a segment's
** IR (kiln_backend.h's kiln_ir_node), for any code generator: the CUDA
** generator (backends/cuda_codegen.c) runs them before it emits code.
**
** The passes rewrite a working copy of the nodes, never the segment: a node
** whose value equals another's is *aliased* to it (alias[i] = j), a node
** whose value is known becomes a CONST, and the strength pass may append
** one CONST node per division it rewrites.  A generator then emits every
** live node that is its own alias (kiln__ir_res resolves chains).  Passes
** are listed in KILN_SIMPLIFY_PASS_TABLE (internal.h), the vocabulary of
** disable=expr_simplify; bit KILN_SP_x of kiln_kernel_options.simplify_off
** switches pass x off.  `index` is an addressing choice the generator makes
** itself (kiln__ir_pass_on); the other four run here.
**
** Invariant: every rewrite preserves the value bit for bit on the device
** (docs/backends.md, "Simplification passes"):
**   fold      evaluates on the host only where the host's IEEE arithmetic
**             is the device's (integers; floats without fast_math, no NaN
**             involved; transcendentals never);
**   identity  drops x*1, x/1, x+(-0), x-0 (floats only without fast_math,
**             where no flush-to-zero is involved; a NaN operand may then
**             keep its payload), integer/boolean identities, where() with a
**             constant or equal branches;
**   strength  turns x*2 into x+x and x/2^k into x*2^-k (both exact);
**   cse       shares structurally equal nodes.
*/
#ifndef KILN_IR_SIMPLIFY_H
#define KILN_IR_SIMPLIFY_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* A working copy of a segment's nodes.  The caller allocates n with room
** for cap nodes (the strength pass adds a constant only while nn < cap;
** 2 * n_nodes + 4 leaves room for every one) and alias with cap entries,
** alias[i] = i for every i. */
typedef struct kiln_ir_work {
    kiln_ir_node *n;
    uint32_t nn, cap; /* nodes in use, room */
    int32_t *alias;   /* node -> the node whose value it is */
} kiln_ir_work;

/* 1 when pass `pass` (KILN_SP_*) is on under the mask simplify_off. */
static inline int kiln__ir_pass_on(uint64_t simplify_off, int pass)
{
    return ((simplify_off >> pass) & 1u) == 0;
}

/* The node whose value node i is (i itself when not aliased; -1 stays -1). */
int32_t kiln__ir_res(const kiln_ir_work *w, int32_t i);

/* The canonical bits of a value of dtype `dtype`: junk above its width
** masked off (bool: 0 or 1). */
uint64_t kiln__ir_canon(int dtype, uint64_t bits);

/* Run the passes cse, fold, identity and strength that ko->simplify_off
** leaves on, in node order, over w (fold and identity read ko->fast_math).
** Cannot fail: a rewrite that needs room beyond w->cap is skipped. */
void kiln__ir_simplify(kiln_ir_work *w, const kiln_kernel_options *ko);

/* Comma-separated names of the passes switched off in `off` ("" when none,
** "all" when every pass is off), cut to cap bytes. */
void kiln__ir_simplify_text(uint64_t off, char *buf, size_t cap);

#endif /* KILN_IR_SIMPLIFY_H */
