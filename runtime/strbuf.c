/*
** strbuf.c -- text: the growable string buffer (kiln_buf, internal.h), the
** reads of strings a backend wrote into a host buffer (kiln__be_str,
** kiln__be_terminated), and shapes in messages (kiln__shape_text).
**
** A kiln_buf never reports an allocation failure per call: `failed` is set,
** later appends are ignored, and its owner checks once at the end.  Its
** text is always NUL-terminated while data is not NULL.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define BUF_FIRST_CAP 64 /* bytes of a buffer's first allocation */
#define PRINTF_STACK 256 /* formatted on the stack first; longer text again
                            into a heap block of its exact size */

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

void kiln__buf_add(kiln_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : BUF_FIRST_CAP;
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
    char small[PRINTF_STACK];
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
