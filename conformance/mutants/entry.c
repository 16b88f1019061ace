/*
** entry.c -- the plugin entry of every backend mutant (conformance/mutants/
** README.md).  scripts/build_mutant.sh compiles it once per backend mutant,
** with -DKILN_MUTANT_NAME='"NAME"', and links it with the ref backend built
** from that mutant's patched sources, into build/mutants/NAME.so.
**
** The plugin links libkiln's objects privately and exports exactly one
** symbol, kiln_backend_entry.  Its descriptor is a copy of the (patched) ref
** backend's named "mutant_NAME", whose identity string is ref's prefixed by
** "mutant_NAME;", so a mutant's kernels never share a kernel key with
** ref's.  The copy is made on each call of the entry in thread-local storage
** (the host copies it at once).
*/
#include <stdio.h>

#include "internal.h"

#ifndef KILN_MUTANT_NAME
#error "build with -DKILN_MUTANT_NAME='\"NAME\"' (scripts/build_mutant.sh)"
#endif

static _Thread_local kiln_backend desc;

/* "mutant_NAME;" then ref's identity, in place. */
static kiln_status mutant_identity(void *state, const kiln_kernel_options *ko,
                                   char *buf, size_t cap)
{
    if (buf == NULL || cap == 0)
        return KILN_ERR_INVALID_ARGUMENT;
    int n = snprintf(buf, cap, "mutant_%s;", KILN_MUTANT_NAME);
    if (n < 0 || (size_t)n >= cap)
        return KILN_ERR_LIMIT;
    return kiln__backend_ref()->identity(state, ko, buf + n, cap - (size_t)n);
}

/* Entry point.  The host passes its KILN_BACKEND_ABI_VERSION and checks the
** descriptor's abi_version and struct_size itself. */
__attribute__((visibility("default"))) const kiln_backend *
kiln_backend_entry(uint32_t host_abi)
{
    (void)host_abi;
    desc = *kiln__backend_ref();
    desc.name = "mutant_" KILN_MUTANT_NAME;
    desc.identity = mutant_identity;
    return &desc;
}
