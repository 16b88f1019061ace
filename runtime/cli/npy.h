/*
** npy.h -- NumPy .npy files for the command-line tool (`kiln run`), and
** the deterministic random inputs shared by `kiln run --random` and
** `kiln cache`.
**
** Format: versions 1.0, 2.0 and 3.0 are read; 1.0 is written (2.0 when the
** header would not fit).  Little-endian, C order only.  dtypes:
**   bool '|b1', i32 '<i4', i64 '<i8', f16 '<f2', f32 '<f4', f64 '<f8',
**   bf16 '<V2' (raw bfloat16 bit patterns, as ml_dtypes saves them).
*/
#ifndef KILN_CLI_NPY_H
#define KILN_CLI_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

typedef struct kiln_npy {
    kiln_dtype dtype;
    int rank;
    int64_t sizes[KILN_MAX_RANK];
    void *data;      /* contiguous C-order elements (malloc'd) */
    size_t nbytes;
} kiln_npy;

/* Read `path`.  On failure returns non-zero and writes a message that
** names the file into err. */
int kiln_npy_read(const char *path, kiln_npy *out, char *err, size_t cap);
/* Write a contiguous array.  Non-zero on failure, with err filled. */
int kiln_npy_write(const char *path, kiln_dtype dtype, int rank,
                   const int64_t *sizes, const void *data, char *err,
                   size_t cap);
void kiln_npy_free(kiln_npy *a);

/* Fill n elements of dtype with values derived from splitmix64(seed):
** floats uniform in [-2, 2), integers in [-100, 100], bool 0/1. */
void kiln_npy_random(kiln_dtype dtype, size_t n, uint64_t *state, void *dst);

#endif
