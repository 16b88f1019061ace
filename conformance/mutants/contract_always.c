/*
** contract_always.c -- conformance mutant: the ref backend with exactly one
** deliberate defect.  The conformance suite must fail it (scripts/mutants.sh
** checks that it does, in the category it should).
**
** The defect: compile contracts add(mul(a,b),c) into one fused fma even
** when the segment keeps the mul and the add separate, i.e. it ignores
** disable=fma. Caught by the cache.isolation a*b+c sequence and the
** numerics fma/no-fma tests.
**
** Built as a plugin, build/mutants/contract_always.so, that exports only the entry
** symbol.  The interpreter is ref.c's, selected through the defect knob of
** runtime/backends/ref.h, so the mutant differs from ref in nothing else
** (its name and identity are "mutant_contract_always").
*/
#include "backends/ref.h"

/* Entry point.  The host passes its KILN_BACKEND_ABI_VERSION and checks the
** descriptor's abi_version and struct_size itself. */
__attribute__((visibility("default"))) const kiln_backend *
kiln_backend_entry(uint32_t host_abi)
{
    (void)host_abi;
    return kiln__backend_ref_variant(KILN_REF_DEFECT_CONTRACT_ALWAYS);
}
