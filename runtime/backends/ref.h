/*
** ref.h -- the defect knob of the reference backend (backends/ref.c).
**
** The conformance suite proves it has teeth by running against "mutant"
** backends (conformance/mutants/): the ref backend with exactly one
** deliberate defect.  Rather than copying the interpreter, each mutant
** plugin asks ref.c for a variant table with one defect flag set.  The
** plain backend is kiln__backend_ref() == kiln__backend_ref_variant(0).
** Nothing but the mutants may ask for a defective variant.
*/
#ifndef KILN_BACKENDS_REF_H
#define KILN_BACKENDS_REF_H

#include "backend.h"

/* compile contracts add(mul(a,b),c) / add(c,mul(a,b)) (f32/f64, single-use
** mul that is not a segment output) into one fma even though the segment
** keeps them separate, i.e. it ignores disable=fma. */
#define KILN_REF_DEFECT_CONTRACT_ALWAYS 0x1u
/* maximum and the max reduction return the non-NaN operand (fmax). */
#define KILN_REF_DEFECT_MAX_DROPS_NAN 0x2u
/* f32 sums accumulate sequentially in f32 instead of f64. */
#define KILN_REF_DEFECT_NAIVE_F32_SUM 0x4u
/* the last partial group of 4 elements of every output (numel % 4 != 0)
** is left unwritten. */
#define KILN_REF_DEFECT_TAIL_UNWRITTEN 0x8u

/* The backend table of the ref interpreter with the given defects.  Only 0
** and single flags are available; any other value gives NULL.  Each variant
** has its own name ("ref", "mutant_contract_always", "mutant_max_drops_nan",
** "mutant_naive_f32_sum", "mutant_tail_unwritten"), which also starts its
** identity string, so a mutant's kernels never share a kernel-cache key
** with ref's.  The tables are static and immutable. */
const kiln_backend *kiln__backend_ref_variant(unsigned defects);

#endif /* KILN_BACKENDS_REF_H */
