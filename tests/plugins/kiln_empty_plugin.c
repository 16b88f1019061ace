/*
** kiln_empty_plugin.c -- the emptiest backend that loads: every compile()
** answers KILN_ERR_UNSUPPORTED, so every segment runs on the runtime's
** reference fallback (tests/cli/test_verdict.py).  The suite must not
** call that a pass: its results are `unsupported` and `kiln conform`
** exits non-zero, because no test ran on the backend under test.
**
** It uses only the ABI of kiln_backend.h, as a third-party plugin would.
*/
#include <stdio.h>
#include <string.h>

#include "kiln_backend.h"

static int token; /* the state: nothing to keep */

static kiln_status empty_open(int device, void **state, char *err, size_t cap)
{
    (void)device;
    (void)err;
    (void)cap;
    *state = &token;
    return KILN_OK;
}

static void empty_close(void *state) { (void)state; }

static kiln_status empty_identity(void *state, const kiln_kernel_options *ko,
                                  char *buf, size_t cap)
{
    (void)state;
    int n = snprintf(buf, cap, "empty-plugin 1 (%s)",
                     ko->canonical ? ko->canonical : "");
    return n < 0 || (size_t)n >= cap ? KILN_ERR_LIMIT : KILN_OK;
}

static kiln_status empty_compile(void *state, const kiln_ir_segment *seg,
                                 const kiln_kernel_options *ko,
                                 kiln_kernel_out *out, char *err, size_t cap)
{
    (void)state;
    (void)seg;
    (void)ko;
    (void)out;
    snprintf(err, cap, "empty-plugin: compiles nothing");
    return KILN_ERR_UNSUPPORTED;
}

static void empty_release(void *state, void *handle)
{
    (void)state;
    (void)handle;
}

static kiln_status empty_launch(void *state, void *handle, kiln_launch *args,
                                char *err, size_t cap)
{
    (void)state;
    (void)handle;
    (void)args;
    snprintf(err, cap, "empty-plugin: nothing to launch");
    return KILN_ERR_UNSUPPORTED;
}

static const kiln_backend desc = {
    .abi_version = KILN_BACKEND_ABI_VERSION,
    .struct_size = sizeof(kiln_backend),
    .name = "empty-plugin",
    .memory = KILN_MEM_HOST,
    .open = empty_open,
    .close = empty_close,
    .identity = empty_identity,
    .compile = empty_compile,
    .release = empty_release,
    .launch = empty_launch}; /* optional functions: NULL */

__attribute__((visibility("default"))) const kiln_backend *
kiln_backend_entry(uint32_t host_abi)
{
    return host_abi == KILN_BACKEND_ABI_VERSION ? &desc : NULL;
}
