/*
** hash.c -- the FNV-1a hash (kiln__fnv1a, internal.h) behind the plan and
** kernel keys, the fusion's structural hash and the on-disk names.  A hash
** is only ever an index: every key it stands for is compared in full
** (docs/runtime.md), so a collision costs a lookup, never a wrong kernel.
*/
#include "internal.h"

uint64_t kiln__fnv1a(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
