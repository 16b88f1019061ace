/*
** keys.c -- the two cache keys (docs/runtime.md, "Caches and keys"):
**   plan   = fusion structural hash + input signature + plan-level options
**            (+ the input sizes under disable=kernel_reuse), a word array
**            that the plan cache compares whole (cache.c);
**   kernel = the serialized segment IR the variant selects (contracted or
**            not; plan.c serializes both) + the variant: canonical
**            kernel-level options + backend identity string.  The kernel
**            cache compares the blob bytes and the interned variant.
** Which options count at which level is options.c's (kiln__level_mask);
** nothing else here decides it.
*/
#include <string.h>

#include "execute.h"

uint64_t kiln__key_hash(const uint64_t *w, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    return h;
}

/* ----------------------------------------------------------- plan key */

size_t kiln__plan_key_len(const kiln_fusion *f, int reuse_off)
{
    return 6 + f->n_inputs + (f->n_outputs + 63) / 64 + 2 + KOPT_COUNT / 2 +
           (reuse_off ? (size_t)f->n_inputs * KILN_MAX_RANK : 0);
}

size_t kiln__plan_key(const kiln_fusion *f, kiln_tensor *const *inputs,
                      const kiln__sig *sig, const struct kiln_options *eo,
                      int reuse_off, uint64_t *key)
{
    size_t k = 0;
    key[k++] = f->hash;
    key[k++] = f->n_inputs | ((uint64_t)f->n_outputs << 32);
    for (uint32_t i = 0; i < f->n_inputs; i++) {
        const kiln_tensor *t = inputs[i];
        uint64_t ones = 0;
        for (int a = 0; a < t->rank; a++)
            if (t->sizes[a] == 1)
                ones |= 1u << a;
        uint64_t w = (uint64_t)t->dtype | ((uint64_t)t->rank << 8) | (ones << 16);
        w |= (uint64_t)sig->in[i] << 32;
        key[k++] = w;
    }
    for (uint32_t j = 0; j < f->n_outputs; j += 64) {
        uint64_t w = 0;
        for (uint32_t q = j; q < f->n_outputs && q < j + 64; q++)
            if (sig->out[q] & KILN__SIG_ALIGN16)
                w |= 1ull << (q - j);
        key[k++] = w;
    }
    key[k++] = (uint64_t)sig->index64;
    /* plan-level options: on bits, list bits, and the arguments of those
    ** that are on (only plan-level ones: arguments of others never count) */
    uint64_t pm = kiln__level_mask(KILN_LEVEL_PLAN);
    key[k++] = eo->on & pm;
    key[k++] = eo->has_list & pm;
    for (uint64_t b = eo->on & pm; b != 0; b &= b - 1)
        key[k++] = eo->arg[__builtin_ctzll(b)];
    if (reuse_off)
        for (uint32_t i = 0; i < f->n_inputs; i++)
            for (int a = 0; a < KILN_MAX_RANK; a++)
                key[k++] = a < inputs[i]->rank ? (uint64_t)inputs[i]->sizes[a]
                                               : ~0ull;
    return k;
}

/* --------------------------------------------------------- kernel key */

const kiln__segir *kiln__kernel_key(const kiln__pseg *s,
                                    const kiln__variant *v, uint64_t *hash)
{
    const kiln__segir *kir = &s->ir[v->ko.contract && s->contracts ? 1 : 0];
    *hash = kir->blob_hash ^ (v->hash * 0x9e3779b97f4a7c15ULL);
    return kir;
}
