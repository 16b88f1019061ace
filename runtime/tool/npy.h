/*
** npy.h -- NumPy .npy files for the command-line tool (`kiln run`), and
** the deterministic random inputs shared by `kiln run --random` and
** `kiln cache`.
**
** Format: versions 1.0, 2.0 and 3.0 are read; 1.0 is written.
** Little-endian, C order only.  dtypes:
**   bool '|b1', i32 '<i4', i64 '<i8', f16 '<f2', f32 '<f4', f64 '<f8',
**   bf16 '<V2' (raw bfloat16 bit patterns, as ml_dtypes saves them).
**
** The reader is strict.  The header must be exactly this grammar (the
** Python literal NumPy writes; docs/runtime.md, ".npy files"):
**
**   header  = dict spaces "\n"                   (the last byte is "\n")
**   dict    = "{" ws item ws "," ws item ws "," ws item ws ["," ws] "}"
**   item    = key ws ":" ws value                (each key exactly once,
**   key     = str: 'descr' | 'fortran_order' | 'shape'     any order)
**   str     = "'" chars "'" | '"' chars '"'      (printable ASCII, no "\")
**   descr   = str (one of the dtypes above; '|V2' is also bf16)
**   fortran = "False" | "True" (True: rejected, C order only)
**   shape   = "(" ws ")" | "(" ws int ws "," ws ")"
**           | "(" ws int (ws "," ws int)+ ws ["," ws] ")"     (rank <= 8)
**   int     = "0" | [1-9][0-9]*, below 2^63; v1.0/v2.0 may add "L"
**             (Python 2 longs, which NumPy also reads)
**   ws      = " "*
**
** Anything else is rejected with the byte offset in the file.  The data
** length (element count times element size, checked for overflow) must
** equal what the file holds after the header; it is checked against the
** file before the data is allocated.
*/
#ifndef KILN_CLI_NPY_H
#define KILN_CLI_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln.h"

typedef struct kiln_npy {
    kiln_dtype dtype;
    int rank;
    int64_t sizes[KILN_MAX_RANK];
    void *data;      /* contiguous C-order elements (malloc'd) */
    size_t nbytes;
} kiln_npy;

/* Read `path`.  On failure returns non-zero and writes a message that
** names the file into err; *out holds nothing to free. */
int kiln_npy_read(const char *path, kiln_npy *out, char *err, size_t cap);
/* The same from an open stream positioned at the start of the file; `name`
** names it in messages.  The stream is read to its end. */
int kiln_npy_read_stream(FILE *fp, const char *name, kiln_npy *out,
                         char *err, size_t cap);
/* Parse the header dictionary (the `len` bytes after the length field);
** `base` is its offset in the file, `major` the format version.  Fills
** dtype, rank and sizes of *out.  Non-zero + "byte N: ..." in err. */
int kiln_npy_parse_header(const char *text, size_t len, size_t base,
                          int major, kiln_npy *out, char *err, size_t cap);
/* Allocate a->data for a->dtype, rank and sizes and set a->nbytes.  The
** element count and byte size are checked for overflow: non-zero with a
** message naming the shape when they overflow or malloc fails. */
int kiln_npy_alloc(kiln_npy *a, char *err, size_t cap);
/* Write a contiguous array.  Non-zero on failure, with err filled. */
int kiln_npy_write(const char *path, kiln_dtype dtype, int rank,
                   const int64_t *sizes, const void *data, char *err,
                   size_t cap);
void kiln_npy_free(kiln_npy *a);

/* Fill n elements of dtype with values derived from splitmix64(seed):
** floats uniform in [-2, 2), integers in [-100, 100], bool 0/1. */
void kiln_npy_random(kiln_dtype dtype, size_t n, uint64_t *state, void *dst);

/* A strided layout of a tensor of `rank` sizes (`kiln run --layout`, the
** fuzz category's strided inputs): "pitched" (unit inner stride, one
** element of padding after every row at every level) or "column-major".
** Fills strides[rank] and *storage (elements spanned, at least 1).
** Non-zero for an unknown name. */
int kiln_npy_layout(const char *name, int rank, const int64_t *sizes,
                    int64_t *strides, size_t *storage);

#endif
