/*
** fuzz_npy.c -- libFuzzer target for the .npy reader of `kiln run`
** (runtime/tool/npy.c, `make fuzz-npy`).
**
** The input is a whole file, read through a memory stream.  Any input must
** either fail with a NUL-terminated "fuzz: ..." message and nothing left
** to free, or give an array whose rank, sizes and byte count agree (the
** byte count being exactly what the file held after the header).  The
** header parser is also run on the raw bytes as a version 1 and a version
** 3 header, which reaches its grammar without a valid prefix.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckd.h"
#include "tool/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    kiln_npy a;
    if (size > 0) {
        FILE *fp = fmemopen((void *)data, size, "rb");
        if (fp == NULL)
            return 0;
        memset(err, 0x55, sizeof err);
        int rc = kiln_npy_read_stream(fp, "fuzz", &a, err, sizeof err);
        fclose(fp);
        if (rc != 0) {
            if (a.data != NULL || memchr(err, '\0', sizeof err) == NULL ||
                strncmp(err, "fuzz: ", 6) != 0)
                abort();
        } else {
            int64_t n;
            size_t bytes;
            if (a.rank < 0 || a.rank > KILN_MAX_RANK ||
                kiln_ckd_numel(a.rank, a.sizes, &n) ||
                kiln_ckd_bytes(n, kiln_dtype_size(a.dtype), &bytes) ||
                bytes != a.nbytes || a.nbytes > size || a.data == NULL)
                abort();
            kiln_npy_free(&a);
        }
    }
    for (int major = 1; major <= 3; major += 2) {
        memset(&a, 0, sizeof a);
        if (kiln_npy_parse_header((const char *)data, size, 10, major, &a, err,
                                  sizeof err) == 0 &&
            (a.rank < 0 || a.rank > KILN_MAX_RANK || size == 0 ||
             data[size - 1] != '\n'))
            abort();
    }
    return 0;
}
