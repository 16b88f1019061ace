/*
** npy.c -- reading and writing NumPy .npy files (see npy.h for the dtypes,
** the versions and the exact header grammar), and deterministic random
** data.
**
** Reading is strict: the magic, the version, the header dictionary (a
** small recursive-descent parser of the grammar in npy.h, which reports
** the byte offset of the first deviation), the dtype, C order, and the
** exact data length are all checked, and every failure names the file and
** what was wrong.  Sizes go through ckd.h, and the data length is compared
** with what the file holds before anything of that size is allocated.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tool/tool.h"
#include "tool/npy.h"
#include "internal.h" /* kiln_ckd_* (ckd.h), kiln__shape_text */

#define NPY_MAX_HEADER ((size_t)1 << 20) /* a header is ~128 bytes */

static const struct {
    kiln_dtype dtype;
    const char *descr;
} descrs[] = {
    {KILN_BOOL, "|b1"}, {KILN_I32, "<i4"}, {KILN_I64, "<i8"},
    {KILN_F16, "<f2"},  {KILN_F32, "<f4"}, {KILN_F64, "<f8"},
    {KILN_BF16, "<V2"}, {KILN_BF16, "|V2"}, /* bf16 without byte order */
};

static int descr_dtype(const char *d, size_t n, kiln_dtype *out)
{
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (strlen(descrs[i].descr) == n && memcmp(d, descrs[i].descr, n) == 0) {
            *out = descrs[i].dtype;
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

int kiln_npy_alloc(kiln_npy *a, char *err, size_t cap)
{
    int64_t n;
    char sh[256];
    a->data = NULL;
    if (kiln_ckd_numel(a->rank, a->sizes, &n) ||
        kiln_ckd_bytes(n, kiln_dtype_size(a->dtype), &a->nbytes)) {
        kiln__shape_text(a->rank, a->sizes, sh, sizeof sh);
        snprintf(err, cap, "shape %s of %s: the element count or byte size "
                           "overflows 64 bits",
                 sh, kiln_dtype_name(a->dtype));
        return -1;
    }
    a->data = malloc(a->nbytes ? a->nbytes : 1);
    if (a->data == NULL) {
        kiln__shape_text(a->rank, a->sizes, sh, sizeof sh);
        snprintf(err, cap, "out of memory for shape %s of %s (%zu bytes)", sh,
                 kiln_dtype_name(a->dtype), a->nbytes);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------ header parser */

typedef struct hparse {
    const char *s;
    size_t len, i, base; /* text, length, position, file offset of s[0] */
    int major;
    char *err;
    size_t cap;
} hparse;

static int hfail(hparse *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int hfail(hparse *p, size_t at, const char *fmt, ...)
{
    int n = snprintf(p->err, p->cap, "byte %zu: ", p->base + at);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < p->cap)
        vsnprintf(p->err + n, p->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int peek(const hparse *p)
{
    return p->i < p->len ? (unsigned char)p->s[p->i] : -1;
}

static void skip_ws(hparse *p)
{
    while (peek(p) == ' ')
        p->i++;
}

/* What is at the position, for messages: a character, a byte value, or
** the end of the header. */
static const char *found(const hparse *p, char *buf, size_t cap)
{
    int c = peek(p);
    if (c < 0)
        snprintf(buf, cap, "the end of the header");
    else if (c >= 0x21 && c <= 0x7e)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", (unsigned)c);
    return buf;
}

static int expect(hparse *p, char c, const char *what)
{
    char f[32];
    if (peek(p) != (unsigned char)c)
        return hfail(p, p->i, "expected %s, found %s", what,
                     found(p, f, sizeof f));
    p->i++;
    return 0;
}

static int ident_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* A quoted string: *at and *n get its contents. */
static int hstring(hparse *p, const char **at, size_t *n, const char *what)
{
    int q = peek(p);
    size_t open = p->i;
    if (q != '\'' && q != '"') {
        char f[32];
        return hfail(p, p->i, "expected %s (a quoted string), found %s", what,
                     found(p, f, sizeof f));
    }
    p->i++;
    *at = p->s + p->i;
    for (int c; (c = peek(p)) != q; p->i++) {
        if (c < 0)
            return hfail(p, open, "the string opened here is not closed");
        if (c == '\\')
            return hfail(p, p->i, "escape sequences are not supported in "
                                  "header strings");
        if (c < 0x20 || c > 0x7e)
            return hfail(p, p->i, "byte 0x%02x in a string (printable ASCII "
                                  "only)",
                         (unsigned)c);
    }
    *n = (size_t)(p->s + p->i - *at);
    p->i++;
    return 0;
}

static int hbool(hparse *p, int *v)
{
    static const char *const words[2] = {"False", "True"};
    for (int b = 0; b < 2; b++) {
        size_t n = strlen(words[b]);
        if (p->len - p->i >= n && memcmp(p->s + p->i, words[b], n) == 0 &&
            !(p->i + n < p->len && ident_char((unsigned char)p->s[p->i + n]))) {
            p->i += n;
            *v = b;
            return 0;
        }
    }
    return hfail(p, p->i, "expected False or True as the value of "
                          "'fortran_order'");
}

static int hint(hparse *p, int64_t *v)
{
    size_t at = p->i;
    int c = peek(p);
    if (c < '0' || c > '9') {
        char f[32];
        return hfail(p, at, "expected a non-negative integer in 'shape', "
                            "found %s",
                     found(p, f, sizeof f));
    }
    int64_t x = 0;
    while ((c = peek(p)) >= '0' && c <= '9') {
        if (kiln_ckd_mul(x, 10, &x) || kiln_ckd_add(x, c - '0', &x))
            return hfail(p, at, "a dimension in 'shape' does not fit 64 bits");
        p->i++;
    }
    if (p->s[at] == '0' && p->i - at > 1)
        return hfail(p, at, "leading zeros are not allowed in '%.*s' (not a "
                            "Python integer literal)",
                     (int)(p->i - at), p->s + at);
    if (peek(p) == 'L' && p->major <= 2)
        p->i++; /* a Python 2 long, as old NumPy wrote them */
    if (ident_char(peek(p))) {
        char f[32];
        return hfail(p, p->i, "unexpected %s after the integer %.*s",
                     found(p, f, sizeof f), (int)(p->i - at), p->s + at);
    }
    *v = x;
    return 0;
}

static int hshape(hparse *p, kiln_npy *out)
{
    if (expect(p, '(', "'(' (a tuple) as the value of 'shape'"))
        return -1;
    skip_ws(p);
    if (peek(p) == ')') {
        p->i++;
        out->rank = 0;
        return 0;
    }
    int rank = 0;
    for (;;) {
        if (rank == KILN_MAX_RANK)
            return hfail(p, p->i, "'shape' has more than %d dimensions",
                         KILN_MAX_RANK);
        if (hint(p, &out->sizes[rank]))
            return -1;
        rank++;
        skip_ws(p);
        if (peek(p) == ',') {
            p->i++;
            skip_ws(p);
            if (peek(p) != ')')
                continue;
        } else if (peek(p) != ')') {
            char f[32];
            return hfail(p, p->i, "expected ',' or ')' in 'shape', found %s",
                         found(p, f, sizeof f));
        } else if (rank == 1) {
            return hfail(p, p->i, "a 1-dimensional shape needs a trailing "
                                  "comma, as in (%lld,): (N) is not a tuple",
                         (long long)out->sizes[0]);
        }
        p->i++; /* ')' */
        out->rank = rank;
        return 0;
    }
}

static const char *const keys[3] = {"descr", "fortran_order", "shape"};

/* One key: value item; seen is the mask of keys parsed so far. */
static int hitem(hparse *p, unsigned *seen, kiln_npy *out)
{
    const char *k, *v;
    size_t kn, vn, at = p->i;
    if (hstring(p, &k, &kn, "a key"))
        return -1;
    int key = -1;
    for (int i = 0; i < 3; i++)
        if (strlen(keys[i]) == kn && memcmp(k, keys[i], kn) == 0)
            key = i;
    if (key < 0)
        return hfail(p, at, "unknown key '%.*s' (the header holds exactly "
                            "'descr', 'fortran_order' and 'shape')",
                     (int)(kn < 40 ? kn : 40), k);
    if (*seen & (1u << key))
        return hfail(p, at, "the key '%s' appears twice", keys[key]);
    *seen |= 1u << key;
    skip_ws(p);
    if (expect(p, ':', "':' after the key"))
        return -1;
    skip_ws(p);
    at = p->i;
    if (key == 0) {
        if (hstring(p, &v, &vn, "the dtype descriptor"))
            return -1;
        if (descr_dtype(v, vn, &out->dtype) != 0)
            return hfail(p, at, "dtype '%.*s' is not supported (valid: |b1 "
                                "<i4 <i8 <f2 <f4 <f8, and <V2 for bf16; "
                                "little-endian only)",
                         (int)(vn < 40 ? vn : 40), v);
    } else if (key == 1) {
        int fortran = 0;
        if (hbool(p, &fortran))
            return -1;
        if (fortran)
            return hfail(p, at, "Fortran-order arrays are not supported "
                                "(save with np.ascontiguousarray)");
    } else if (hshape(p, out)) {
        return -1;
    }
    return 0;
}

int kiln_npy_parse_header(const char *text, size_t len, size_t base,
                          int major, kiln_npy *out, char *err, size_t cap)
{
    hparse p = {text, len, 0, base, major, err, cap};
    unsigned seen = 0;
    skip_ws(&p);
    if (expect(&p, '{', "'{' (the header dictionary)"))
        return -1;
    for (;;) {
        skip_ws(&p);
        if (peek(&p) == '}' && seen != 0)
            break; /* after a trailing comma */
        if (hitem(&p, &seen, out))
            return -1;
        skip_ws(&p);
        if (peek(&p) == ',') {
            p.i++;
            continue;
        }
        if (peek(&p) == '}')
            break;
        char f[32];
        return hfail(&p, p.i, "expected ',' or '}' after a value, found %s",
                     found(&p, f, sizeof f));
    }
    for (int i = 0; i < 3; i++)
        if (!(seen & (1u << i)))
            return hfail(&p, p.i, "the header lacks the key '%s'", keys[i]);
    p.i++; /* '}' */
    skip_ws(&p);
    if (peek(&p) != '\n' || p.i + 1 != p.len) {
        char f[32];
        return hfail(&p, p.i, "expected only spaces and a final newline after "
                              "the dictionary, found %s",
                     found(&p, f, sizeof f));
    }
    return 0;
}

/* ---------------------------------------------------------------- read */

/* Bytes left in fp from the current position, or -1 when it cannot seek. */
static long long bytes_left(FILE *fp)
{
    off_t here = ftello(fp);
    if (here < 0 || fseeko(fp, 0, SEEK_END) != 0)
        return -1;
    off_t end = ftello(fp);
    if (end < 0 || fseeko(fp, here, SEEK_SET) != 0)
        return -1;
    return (long long)(end - here);
}

/* Read exactly a->nbytes of data into a fresh a->data.  When the stream
** cannot seek (a pipe), the buffer grows with what actually arrives, so a
** short stream never costs the declared size. */
static int read_data(FILE *fp, kiln_npy *a, long long left, size_t *got)
{
    size_t want = a->nbytes, have = 0;
    size_t cap = left >= 0 || want < ((size_t)1 << 20) ? want : (size_t)1 << 20;
    unsigned char *buf = malloc(cap ? cap : 1);
    while (buf != NULL) {
        have += fread(buf + have, 1, cap - have, fp);
        if (have < cap || cap == want)
            break;
        size_t ncap = cap > want / 2 ? want : cap * 2;
        unsigned char *nb = realloc(buf, ncap);
        if (nb == NULL)
            free(buf);
        buf = nb;
        cap = ncap;
    }
    *got = have;
    if (buf == NULL)
        return -1;
    a->data = buf;
    return have == want ? 0 : 1;
}

int kiln_npy_read_stream(FILE *fp, const char *name, kiln_npy *out,
                         char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    unsigned char pre[12];
    char *hdr = NULL, msg[512];
    int rc = -1;
    size_t n = fread(pre, 1, 10, fp);
    if (n < 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        snprintf(err, cap, "%s: byte 0: not an .npy file (it does not start "
                           "with the magic \\x93NUMPY and a version)",
                 name);
        return -1;
    }
    int major = pre[6], minor = pre[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0) {
        snprintf(err, cap, "%s: byte 6: unsupported .npy version %d.%d (1.0, "
                           "2.0 and 3.0 are read)",
                 name, major, minor);
        return -1;
    }
    size_t lenbytes = major == 1 ? 2 : 4, hlen = 0;
    if (major != 1)
        n += fread(pre + 10, 1, 2, fp);
    if (n < 8 + lenbytes) {
        snprintf(err, cap, "%s: byte %zu: the file ends inside the header "
                           "length field",
                 name, n);
        return -1;
    }
    for (size_t i = 0; i < lenbytes; i++)
        hlen |= (size_t)pre[8 + i] << (8 * i);
    size_t base = 8 + lenbytes;
    long long left = bytes_left(fp);
    if (hlen > NPY_MAX_HEADER) {
        snprintf(err, cap, "%s: byte 8: a header of %zu bytes is over this "
                           "reader's limit of %zu",
                 name, hlen, NPY_MAX_HEADER);
        return -1;
    }
    if (left >= 0 && (unsigned long long)left < hlen) {
        snprintf(err, cap, "%s: byte 8: the header length field says %zu "
                           "bytes, the file holds %lld after it",
                 name, hlen, left);
        return -1;
    }
    hdr = malloc(hlen + 1);
    if (hdr == NULL) {
        snprintf(err, cap, "%s: out of memory", name);
        return -1;
    }
    if ((n = fread(hdr, 1, hlen, fp)) != hlen) {
        snprintf(err, cap, "%s: byte %zu: the file ends inside the %zu-byte "
                           "header",
                 name, base + n, hlen);
        goto done;
    }
    if (kiln_npy_parse_header(hdr, hlen, base, major, out, msg,
                              sizeof msg) != 0) {
        snprintf(err, cap, "%s: %s", name, msg);
        goto done;
    }
    /* the data length, checked against the file before allocating it */
    int64_t numel;
    char sh[256];
    kiln__shape_text(out->rank, out->sizes, sh, sizeof sh);
    if (kiln_ckd_numel(out->rank, out->sizes, &numel) ||
        kiln_ckd_bytes(numel, kiln_dtype_size(out->dtype), &out->nbytes)) {
        snprintf(err, cap, "%s: shape %s of %s: the element count or byte "
                           "size overflows 64 bits",
                 name, sh, kiln_dtype_name(out->dtype));
        goto done;
    }
    if (left >= 0 && (unsigned long long)(left - (long long)hlen) !=
                         (unsigned long long)out->nbytes) {
        snprintf(err, cap, "%s: shape %s of %s needs %zu data bytes, the file "
                           "holds %lld after the header (%s)",
                 name, sh, kiln_dtype_name(out->dtype), out->nbytes,
                 left - (long long)hlen,
                 left - (long long)hlen < (long long)out->nbytes
                     ? "truncated" : "trailing bytes");
        goto done;
    }
    size_t got;
    int r = read_data(fp, out, left, &got);
    if (r < 0) {
        snprintf(err, cap, "%s: out of memory for shape %s of %s (%zu bytes)",
                 name, sh, kiln_dtype_name(out->dtype), out->nbytes);
        goto done;
    }
    if (r > 0 || fgetc(fp) != EOF) {
        snprintf(err, cap, "%s: shape %s of %s needs %zu data bytes, %s", name,
                 sh, kiln_dtype_name(out->dtype), out->nbytes,
                 r > 0 ? "the file is shorter (truncated)"
                       : "the file has trailing bytes");
        goto done;
    }
    if (out->dtype == KILN_BOOL) {
        for (size_t i = 0; i < out->nbytes; i++)
            if (((unsigned char *)out->data)[i] > 1) {
                snprintf(err, cap, "%s: bool element %zu is not 0 or 1", name, i);
                goto done;
            }
    }
    rc = 0;
done:
    if (rc != 0)
        kiln_npy_free(out);
    free(hdr);
    return rc;
}

int kiln_npy_read(const char *path, kiln_npy *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = kiln_npy_read_stream(fp, path, out, err, cap);
    fclose(fp);
    return rc;
}

int kiln_npy_write(const char *path, kiln_dtype dtype, int rank,
                   const int64_t *sizes, const void *data, char *err,
                   size_t cap)
{
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0] && !descr; i++)
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
    int64_t n;
    size_t nbytes;
    if (rank < 0 || rank > KILN_MAX_RANK || kiln_ckd_numel(rank, sizes, &n) ||
        kiln_ckd_bytes(n, kiln_dtype_size(dtype), &nbytes)) {
        snprintf(err, cap, "%s: invalid rank or sizes", path);
        return -1;
    }
    for (int i = 0; i < rank; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%lld",
                        i ? ", " : "", (long long)sizes[i]);
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

int kiln_npy_layout(const char *name, int rank, const int64_t *sizes,
                    int64_t *strides, size_t *storage)
{
    int64_t st = 1;
    int pitched = strcmp(name, "pitched") == 0;
    if (!pitched && strcmp(name, "column-major") != 0)
        return 1;
    for (int k = 0; k < rank; k++) {
        int d = pitched ? rank - 1 - k : k;
        strides[d] = st;
        st = st * sizes[d] + pitched;
    }
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        if (sizes[d] > 0)
            n += (size_t)((sizes[d] - 1) * strides[d]);
    *storage = n;
    return 0;
}
