/*
** npy.c -- reading and writing NumPy .npy files (see npy.h for the dtypes
** and versions), and deterministic random data.
**
** Reading is strict: the magic, the version, the header dictionary's three
** keys, the dtype, C order, and the exact data length are all checked, and
** every failure names the file and what was wrong.
*/
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/npy.h"

static const struct {
    kiln_dtype dtype;
    const char *descr;
} descrs[] = {
    {KILN_BOOL, "|b1"}, {KILN_I32, "<i4"}, {KILN_I64, "<i8"},
    {KILN_F16, "<f2"},  {KILN_F32, "<f4"}, {KILN_F64, "<f8"},
    {KILN_BF16, "<V2"},
};

static int descr_dtype(const char *d, kiln_dtype *out)
{
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (strcmp(d, descrs[i].descr) == 0) {
            *out = descrs[i].dtype;
            return 0;
        }
    if (strcmp(d, "|V2") == 0) { /* bf16 spelled without byte order */
        *out = KILN_BF16;
        return 0;
    }
    return -1;
}

void kiln_npy_free(kiln_npy *a)
{
    if (a != NULL) {
        free(a->data);
        a->data = NULL;
    }
}

/* Find 'key': in the header dict; returns a pointer after the colon. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (p == NULL)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

int kiln_npy_read(const char *path, kiln_npy *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char pre[12];
    char *hdr = NULL;
    int rc = -1;
    if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        snprintf(err, cap, "%s: not a .npy file (bad magic)", path);
        goto done;
    }
    int major = pre[6];
    size_t hlen;
    if (major == 1) {
        hlen = pre[8] | ((size_t)pre[9] << 8);
    } else if (major == 2 || major == 3) {
        if (fread(pre + 10, 1, 2, fp) != 2) {
            snprintf(err, cap, "%s: truncated header", path);
            goto done;
        }
        hlen = pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) |
               ((size_t)pre[11] << 24);
    } else {
        snprintf(err, cap, "%s: unsupported .npy version %d.%d", path, major,
                 pre[7]);
        goto done;
    }
    if (hlen > (1u << 20)) {
        snprintf(err, cap, "%s: header of %zu bytes is too large", path, hlen);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (hdr == NULL || fread(hdr, 1, hlen, fp) != hlen) {
        snprintf(err, cap, "%s: truncated header", path);
        goto done;
    }
    hdr[hlen] = '\0';
    const char *d = dict_value(hdr, "descr");
    const char *fo = dict_value(hdr, "fortran_order");
    const char *sh = dict_value(hdr, "shape");
    if (d == NULL || fo == NULL || sh == NULL || *d != '\'') {
        snprintf(err, cap,
                 "%s: header lacks 'descr', 'fortran_order' or 'shape'", path);
        goto done;
    }
    char descr[16];
    size_t dl = 0;
    for (d++; *d && *d != '\'' && dl + 1 < sizeof descr; d++)
        descr[dl++] = *d;
    descr[dl] = '\0';
    if (descr_dtype(descr, &out->dtype) != 0) {
        snprintf(err, cap,
                 "%s: dtype '%s' is not supported (valid: |b1 <i4 <i8 <f2 <f4 "
                 "<f8, and <V2 for bf16; little-endian only)",
                 path, descr);
        goto done;
    }
    if (strncmp(fo, "False", 5) != 0) {
        snprintf(err, cap,
                 "%s: Fortran-order arrays are not supported (save with "
                 "np.ascontiguousarray)",
                 path);
        goto done;
    }
    if (*sh != '(') {
        snprintf(err, cap, "%s: malformed shape", path);
        goto done;
    }
    sh++;
    int64_t n = 1;
    while (1) {
        while (*sh == ' ' || *sh == ',')
            sh++;
        if (*sh == ')')
            break;
        if (!isdigit((unsigned char)*sh) || out->rank == KILN_MAX_RANK) {
            snprintf(err, cap, "%s: malformed shape or rank above %d", path,
                     KILN_MAX_RANK);
            goto done;
        }
        char *end;
        long long v = strtoll(sh, &end, 10);
        if (v < 0 || v > ((int64_t)1 << 40)) {
            snprintf(err, cap, "%s: dimension %lld out of range", path, v);
            goto done;
        }
        out->sizes[out->rank++] = v;
        n *= v;
        if (n > ((int64_t)1 << 40)) {
            snprintf(err, cap, "%s: too many elements", path);
            goto done;
        }
        sh = end;
    }
    size_t es = kiln_dtype_size(out->dtype);
    out->nbytes = (size_t)n * es;
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (out->data == NULL) {
        snprintf(err, cap, "%s: out of memory", path);
        goto done;
    }
    if (fread(out->data, 1, out->nbytes, fp) != out->nbytes) {
        snprintf(err, cap, "%s: truncated data (%zu bytes expected)", path,
                 out->nbytes);
        goto done;
    }
    if (fgetc(fp) != EOF) {
        snprintf(err, cap, "%s: trailing bytes after the data", path);
        goto done;
    }
    if (out->dtype == KILN_BOOL) {
        for (size_t i = 0; i < out->nbytes; i++)
            if (((unsigned char *)out->data)[i] > 1) {
                snprintf(err, cap, "%s: bool element %zu is not 0 or 1", path, i);
                goto done;
            }
    }
    rc = 0;
done:
    if (rc != 0)
        kiln_npy_free(out);
    free(hdr);
    fclose(fp);
    return rc;
}

int kiln_npy_write(const char *path, kiln_dtype dtype, int rank,
                   const int64_t *sizes, const void *data, char *err,
                   size_t cap)
{
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (descrs[i].dtype == dtype)
            descr = descrs[i].descr;
    if (descr == NULL) {
        snprintf(err, cap, "%s: invalid dtype", path);
        return -1;
    }
    char dict[512];
    int len = snprintf(dict, sizeof dict,
                       "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       descr);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%lld",
                        i ? ", " : "", (long long)sizes[i]);
        n *= sizes[i];
    }
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }",
                    rank == 1 ? "," : "");
    /* pad with spaces so that the data starts at a multiple of 64 */
    size_t total = 10 + (size_t)len + 1;
    size_t pad = (64 - total % 64) % 64;
    cli_out out; /* a temporary file, renamed over path at the end */
    if (cli_out_open(&out, path, err, cap) != 0)
        return -1;
    FILE *fp = out.fp;
    size_t hlen = (size_t)len + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, fp) == 10 &&
             fwrite(dict, 1, (size_t)len, fp) == (size_t)len;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', fp) != EOF;
    ok = ok && fputc('\n', fp) != EOF;
    size_t nbytes = (size_t)n * kiln_dtype_size(dtype);
    ok = ok && fwrite(data, 1, nbytes, fp) == nbytes;
    if (!ok) {
        snprintf(err, cap, "%s: write failed: %s", path, strerror(errno));
        cli_out_abort(&out);
        return -1;
    }
    return cli_out_commit(&out, path, err, cap);
}

/* ------------------------------------------------------------- random */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* f32 -> f16 bits, round to nearest even (normal range; tiny -> 0). */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffffu;
    if (e <= 0)
        return (uint16_t)sign;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    uint32_t h = sign | ((uint32_t)e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)h;
}

void kiln_npy_random(kiln_dtype dtype, size_t n, uint64_t *state, void *dst)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = splitmix64(state);
        double u = (double)(r >> 11) * (1.0 / 9007199254740992.0); /* [0,1) */
        float f = (float)(u * 4.0 - 2.0);
        switch (dtype) {
        case KILN_BOOL: ((uint8_t *)dst)[i] = (uint8_t)(r >> 63); break;
        case KILN_I32: ((int32_t *)dst)[i] = (int32_t)(r % 201) - 100; break;
        case KILN_I64: ((int64_t *)dst)[i] = (int64_t)(r % 201) - 100; break;
        case KILN_F16: ((uint16_t *)dst)[i] = f32_to_f16(f); break;
        case KILN_BF16: {
            uint32_t x;
            memcpy(&x, &f, 4);
            ((uint16_t *)dst)[i] = (uint16_t)(x >> 16);
            break;
        }
        case KILN_F32: ((float *)dst)[i] = f; break;
        case KILN_F64: ((double *)dst)[i] = u * 4.0 - 2.0; break;
        default: break;
        }
    }
}
