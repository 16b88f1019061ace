/*
** status.c -- status codes, the thread-local last error, the allocation
** hooks (with fault injection), and small shared helpers.
**
** The last error is thread-local so that two threads using Kiln never see
** each other's messages; it is the only per-thread state in the library.
** Fault injection is likewise per thread: a test arms it, calls one API
** function, and checks that the call failed cleanly with KILN_ERR_NO_MEMORY.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ERR_MSG_CAP 2048
#define ERR_TOK_CAP 256
#define ERR_SRC_CAP 128

typedef struct err_state {
    kiln_status status;
    char message[ERR_MSG_CAP];
    char source[ERR_SRC_CAP];
    char token[ERR_TOK_CAP];
    long offset;
    long fault_countdown; /* < 0: off */
    long alloc_count;
} err_state;

static _Thread_local err_state tls_err = {KILN_OK, "", "", "", -1, -1, 0};

const char *kiln_status_name(kiln_status s)
{
    switch (s) {
#define KILN_X_(name, value, desc)                                             \
    case name:                                                                 \
        return #name;
        KILN_STATUS_TABLE(KILN_X_)
#undef KILN_X_
    }
    return "KILN_UNKNOWN_STATUS";
}

const char *kiln_strerror(kiln_status s)
{
    switch (s) {
#define KILN_X_(name, value, desc)                                             \
    case name:                                                                 \
        return desc;
        KILN_STATUS_TABLE(KILN_X_)
#undef KILN_X_
    }
    return "unknown status";
}

const char *kiln_last_error(void) { return tls_err.message; }

kiln_status kiln_last_error_info(kiln_error_info *out)
{
    if (out == NULL || out->struct_size < sizeof(kiln_error_info))
        return KILN_ERR_INVALID_ARGUMENT; /* must not clobber the error */
    out->status = tls_err.status;
    out->message = tls_err.message;
    out->source = tls_err.source;
    out->offset = tls_err.offset;
    out->token = tls_err.token;
    return KILN_OK;
}

const char *kiln_version(int *major, int *minor, int *patch)
{
    if (major) *major = KILN_VERSION_MAJOR;
    if (minor) *minor = KILN_VERSION_MINOR;
    if (patch) *patch = KILN_VERSION_PATCH;
    return KILN_VERSION_STRING;
}

void kiln__err_clear(void)
{
    tls_err.status = KILN_OK;
    tls_err.message[0] = '\0';
    tls_err.source[0] = '\0';
    tls_err.token[0] = '\0';
    tls_err.offset = -1;
}

kiln_status kiln__err(kiln_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_err.message, sizeof tls_err.message, fmt, ap);
    va_end(ap);
    tls_err.status = s;
    tls_err.source[0] = '\0';
    tls_err.token[0] = '\0';
    tls_err.offset = -1;
    return s;
}

kiln_status kiln__opt_err(kiln_status s, const char *source, long offset,
                          const char *token, size_t token_len,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_err.message, sizeof tls_err.message, fmt, ap);
    va_end(ap);
    tls_err.status = s;
    snprintf(tls_err.source, sizeof tls_err.source, "%s",
             source ? source : "");
    if (token_len >= sizeof tls_err.token)
        token_len = sizeof tls_err.token - 1;
    if (token != NULL)
        memcpy(tls_err.token, token, token_len);
    else
        token_len = 0;
    tls_err.token[token_len] = '\0';
    tls_err.offset = offset;
    return s;
}

/* ------------------------------------------------------ memory + faults */

static int fault_fire(void)
{
    tls_err.alloc_count++;
    if (tls_err.fault_countdown < 0)
        return 0;
    if (tls_err.fault_countdown == 0)
        return 1; /* keep failing until disarmed: a retry must not succeed */
    tls_err.fault_countdown--;
    return 0;
}

long kiln__fault_after(long n)
{
    long made = tls_err.alloc_count;
    tls_err.alloc_count = 0;
    tls_err.fault_countdown = n;
    return made;
}

void *kiln__malloc(size_t n)
{
    if (fault_fire())
        return NULL;
    return malloc(n ? n : 1);
}

void *kiln__calloc(size_t count, size_t size)
{
    if (fault_fire())
        return NULL;
    if (count == 0 || size == 0)
        count = size = 1;
    return calloc(count, size);
}

void *kiln__realloc(void *p, size_t n)
{
    if (fault_fire())
        return NULL;
    return realloc(p, n ? n : 1);
}

char *kiln__strndup(const char *s, size_t n)
{
    char *d = kiln__malloc(n + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *kiln__strdup(const char *s) { return kiln__strndup(s, strlen(s)); }

void kiln__free(void *p) { free(p); }

void kiln_free(void *p) { kiln__free(p); }

/* ---------------------------------------------------------------- helpers */

void kiln__shape_text(int rank, const int64_t *sizes, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int a = 0; a < rank && n < cap; a++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", a ? ", " : "",
                              (long long)sizes[a]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

char *kiln__be_str(char *buf, size_t cap)
{
    if (cap > 0)
        buf[cap - 1] = '\0';
    return buf;
}

int kiln__be_terminated(const char *buf, size_t cap)
{
    return memchr(buf, '\0', cap) != NULL;
}

uint64_t kiln__fnv1a(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void kiln__buf_add(kiln_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = kiln__realloc(b->data, cap);
        if (d == NULL) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void kiln__buf_puts(kiln_buf *b, const char *s) { kiln__buf_add(b, s, strlen(s)); }

void kiln__buf_printf(kiln_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        kiln__buf_add(b, small, (size_t)n);
        return;
    }
    char *big = kiln__malloc((size_t)n + 1);
    if (big == NULL) {
        b->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    kiln__buf_add(b, big, (size_t)n);
    kiln__free(big);
}

void kiln__buf_free(kiln_buf *b)
{
    kiln__free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

/* ------------------------------------------------------- dtypes and ops */

const char *kiln_dtype_name(kiln_dtype t)
{
    switch (t) {
#define KILN_X_(name, value, text, size, ebits, mbits)                         \
    case name:                                                                 \
        return text;
        KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
    default:
        return NULL;
    }
}

size_t kiln_dtype_size(kiln_dtype t)
{
    switch (t) {
#define KILN_X_(name, value, text, size, ebits, mbits)                         \
    case name:                                                                 \
        return size;
        KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
    default:
        return 0;
    }
}

kiln_status kiln_dtype_parse(const char *name, kiln_dtype *out)
{
    if (name == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_dtype_parse: NULL");
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        if (strcmp(name, kiln_dtype_name((kiln_dtype)t)) == 0) {
            *out = (kiln_dtype)t;
            return KILN_OK;
        }
    }
    return kiln__err(KILN_ERR_DTYPE,
                     "unknown dtype '%s' (valid: bool, i32, i64, f16, bf16, "
                     "f32, f64)",
                     name);
}

static const char *const op_names[KILN_OP_COUNT] = {
#define KILN_X_(name, value, text, arity, kind) [value] = text,
    KILN_OP_TABLE(KILN_X_)
#undef KILN_X_
};

const char *kiln_op_name(kiln_op op)
{
    if ((int)op < 0 || op >= KILN_OP_COUNT)
        return NULL;
    return op_names[op];
}

kiln_status kiln_op_parse(const char *name, kiln_op *out)
{
    if (name == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_op_parse: NULL");
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        if (strcmp(name, op_names[op]) == 0) {
            *out = (kiln_op)op;
            return KILN_OK;
        }
    }
    return kiln__err(KILN_ERR_PARSE, "unknown op '%s'", name);
}
