/*
** ckd.h -- checked size arithmetic: the one place where Kiln multiplies
** sizes.  Every element count (the product of a shape), byte size (count
** times element size), storage extent and work count in the project goes
** through these helpers, in libkiln, the backends, the `kiln` tool and the
** conformance runner alike, so that no size product can wrap silently
** (docs/runtime.md, "Limits").
**
** Header-only (static inline), no state, never installed and not part of
** the API: the conformance runner may include it although it otherwise
** uses only kiln.h.  Like C23's ckd_mul, each helper returns non-zero when
** the exact result does not fit (or an input is out of its domain), and
** then leaves *out unspecified.
*/
#ifndef KILN_CKD_H
#define KILN_CKD_H

#include <stddef.h>
#include <stdint.h>

/* a * b and a + b in int64_t; non-zero on overflow. */
static inline int kiln_ckd_mul(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

static inline int kiln_ckd_add(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

/* The element count of a shape: the product of sizes[0..rank), 0 when any
** size is 0 (whatever the others are), 1 for rank 0.  Non-zero when a size
** is negative or the product overflows int64_t. */
static inline int kiln_ckd_numel(int rank, const int64_t *sizes,
                                 int64_t *out)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (sizes[i] < 0)
            return 1;
        if (sizes[i] == 0)
            n = 0;
    }
    for (int i = 0; i < rank && n != 0; i++)
        if (__builtin_mul_overflow(n, sizes[i], &n))
            return 1;
    *out = n;
    return 0;
}

/* The storage extent of a strided view in elements, 1 + sum((size_i - 1) *
** stride_i), or 0 when any size is 0.  Non-zero when a size or stride is
** negative or the sum overflows int64_t. */
static inline int kiln_ckd_extent(int rank, const int64_t *sizes,
                                  const int64_t *strides, int64_t *out)
{
    int64_t span = 1, step;
    for (int i = 0; i < rank; i++) {
        if (sizes[i] < 0 || strides[i] < 0)
            return 1;
        if (sizes[i] == 0) {
            *out = 0;
            return 0;
        }
    }
    for (int i = 0; i < rank; i++)
        if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
            __builtin_add_overflow(span, step, &span))
            return 1;
    *out = span;
    return 0;
}

/* count * size in size_t (a byte size); non-zero when count is negative or
** the product does not fit size_t. */
static inline int kiln_ckd_bytes(int64_t count, size_t size, size_t *out)
{
    if (count < 0 || (uint64_t)count > SIZE_MAX)
        return 1;
    return __builtin_mul_overflow((size_t)count, size, out);
}

#endif /* KILN_CKD_H */
