/*
** status.c -- status codes (kiln_status_name, kiln_strerror, both from
** kiln.h's KILN_STATUS_TABLE), the thread-local last error, and the
** library version.
**
** The last error is thread-local so that two threads using Kiln never see
** each other's messages.  Together with the allocation fault state
** (alloc.c) it is the only per-thread state in the library.  A message is
** cut at KILN_ERR_MSG_CAP bytes.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ERR_TOK_CAP 256
#define ERR_SRC_CAP 128

typedef struct err_state {
    kiln_status status;
    char message[KILN_ERR_MSG_CAP];
    char source[ERR_SRC_CAP];
    char token[ERR_TOK_CAP];
    long offset;
} err_state;

static _Thread_local err_state tls_err = {KILN_OK, "", "", "", -1};

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
