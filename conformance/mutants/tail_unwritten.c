/*
** tail_unwritten.c -- conformance mutant: the ref backend with exactly one
** deliberate defect.  The conformance suite must fail it (scripts/mutants.sh
** checks that it does, in the category it should).
**
** The defect: the last partial group of 4 elements of every output is
** left unwritten when numel % 4 != 0. Caught by any output of odd size.
**
** Built as a plugin, build/mutants/tail_unwritten.so, that exports only the entry
** symbol.  The interpreter is ref.c's, selected through the defect knob of
** runtime/backends/ref.h, so the mutant differs from ref in nothing else
** (its name and identity are "mutant_tail_unwritten").
*/
#include "backends/ref.h"

/* Entry point.  The host passes its KILN_BACKEND_ABI_VERSION and checks the
** descriptor's abi_version and struct_size itself. */
__attribute__((visibility("default"))) const kiln_backend *
kiln_backend_entry(uint32_t host_abi)
{
    (void)host_abi;
    return kiln__backend_ref_variant(KILN_REF_DEFECT_TAIL_UNWRITTEN);
}
