/*
** kiln_test_plugin.c -- a backend plugin for the plugin-loading tests
** (tests/unit/test_plugin.c): the reference backend under another name.
**
** It links libkiln.a privately (every libkiln symbol is hidden) and exports
** exactly one symbol, kiln_backend_entry.  Its descriptor is a copy of the
** reference backend's with name "test-plugin" and identity prefixed by
** "test-plugin;", so kernels it compiles can never be confused with ref's.
** The copy is built on each call of the entry function in thread-local
** storage (the host copies it at once); the entry returns NULL for a host
** ABI it does not speak.
**
** For the ABI tests, two environment variables bend the descriptor:
** KILN_TEST_PLUGIN_ABI=N reports abi_version N, KILN_TEST_PLUGIN_SIZE=N
** reports struct_size N.  For the REFERENCE-fallback tests,
** KILN_TEST_PLUGIN_UNSUPPORTED=compile makes compile() refuse reduction
** segments, =launch makes launch() refuse every segment, with
** KILN_ERR_UNSUPPORTED.  KILN_TEST_PLUGIN_LOCAL_BYTES=N makes local_bytes()
** report N bytes of local memory per thread for every kernel (the
** warn_register_spill tests).  KILN_TEST_PLUGIN_UNTERMINATED=open, compile
** or launch makes that call fail after filling the whole error buffer
** without a NUL; =identity, path or flags makes identity() or compile()
** succeed with that string filling its buffer without a NUL (the host must
** never read past a buffer a backend wrote).
**
**
** For the stream tests (tests/unit/test_stream.c), KILN_TEST_PLUGIN_DEVICE
** makes it a "device-memory" backend whose device memory is host memory
** (malloc/memcpy): =streams also provides stream_sync, =nostream does not.
** Its stream handle is a pointer to two uint64_t counters: launch()
** increments the first for every launch record that carries the stream,
** stream_sync() the second for every wait on it.
**
** Kernel database (tests/unit/test_kernel_db.c): kernels are wrapped with a
** payload (the segment IR and options, kiln__kdb_ir_encode) that
** deserialize() rebuilds a ref kernel from.  KILN_TEST_PLUGIN_DB=none
** leaves db_versions/serialize/deserialize NULL (a backend that cannot
** persist); =probe-fails makes db_versions() fail; =bad-payload makes
** deserialize() reject every payload; =forget makes serialize() decline
** every kernel; =skew makes every kernel deserialize() builds flip the
** lowest bit of its first output element (a database that hands back a
** kernel computing something else: `kiln conform --serde` must notice).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernel_db.h"

static _Thread_local kiln_backend desc;

static int unterminated(const char *where)
{
    const char *m = getenv("KILN_TEST_PLUGIN_UNTERMINATED");
    return m != NULL && strcmp(m, where) == 0;
}

/* Fill buf[0..cap) with 'x' and no terminating NUL; returns status. */
static kiln_status fill(char *buf, size_t cap, kiln_status status)
{
    memset(buf, 'x', cap);
    return status;
}

static kiln_status plugin_open(int device, void **state, char *err,
                               size_t cap)
{
    if (unterminated("open"))
        return fill(err, cap, KILN_ERR_BACKEND_UNAVAILABLE);
    return kiln__backend_ref()->open(device, state, err, cap);
}

static kiln_status plugin_identity(void *state, const kiln_kernel_options *ko,
                                   char *buf, size_t cap)
{
    char inner[400];
    kiln_status s = kiln__backend_ref()->identity(state, ko, inner, sizeof inner);
    if (s != KILN_OK)
        return s;
    if (unterminated("identity"))
        return fill(buf, cap, KILN_OK);
    int n = snprintf(buf, cap, "test-plugin;%s", inner);
    return n < 0 || (size_t)n >= cap ? KILN_ERR_LIMIT : KILN_OK;
}

static int refuses(const char *where)
{
    const char *m = getenv("KILN_TEST_PLUGIN_UNSUPPORTED");
    return m != NULL && strcmp(m, where) == 0;
}

/* A kernel: the ref kernel and its payload. */
typedef struct tp_kernel {
    void *ref;
    kiln_buf payload;
    int skew;  /* KILN_TEST_PLUGIN_DB=skew: loaded from the database */
} tp_kernel;

static const char *db_mode(void)
{
    const char *m = getenv("KILN_TEST_PLUGIN_DB");
    return m != NULL ? m : "";
}

/* Wrap the ref kernel in out->handle with the payload of (seg, ko). */
static kiln_status wrap(void *state, const kiln_ir_segment *seg,
                        const kiln_kernel_options *ko, kiln_kernel_out *out)
{
    tp_kernel *k = calloc(1, sizeof *k);
    if (k != NULL) {
        kiln__buf_puts(&k->payload, "tp1");
        kiln__kdb_ir_encode(seg, ko, &k->payload);
    }
    if (k == NULL || k->payload.failed) {
        if (k != NULL)
            kiln__buf_free(&k->payload);
        free(k);
        kiln__backend_ref()->release(state, out->handle);
        return KILN_ERR_NO_MEMORY;
    }
    k->ref = out->handle;
    out->handle = k;
    return KILN_OK;
}

static kiln_status plugin_compile(void *state, const kiln_ir_segment *seg,
                                  const kiln_kernel_options *ko,
                                  kiln_kernel_out *out, char *err, size_t cap)
{
    if (refuses("compile") && seg->kind == KILN_SEGK_REDUCTION) {
        snprintf(err, cap, "test-plugin: reductions are not supported");
        return KILN_ERR_UNSUPPORTED;
    }
    if (unterminated("compile"))
        return fill(err, cap, KILN_ERR_BACKEND);
    kiln_status s = kiln__backend_ref()->compile(state, seg, ko, out, err, cap);
    if (s == KILN_OK && unterminated("path"))
        fill(out->path, sizeof out->path, KILN_OK);
    if (s == KILN_OK && unterminated("flags"))
        fill(out->flags, sizeof out->flags, KILN_OK);
    return s == KILN_OK ? wrap(state, seg, ko, out) : s;
}

static void plugin_release(void *state, void *handle)
{
    tp_kernel *k = handle;
    if (k == NULL)
        return;
    kiln__backend_ref()->release(state, k->ref);
    kiln__buf_free(&k->payload);
    free(k);
}

static kiln_status plugin_launch(void *state, void *handle, kiln_launch *args,
                                 char *err, size_t cap)
{
    if (args->struct_size >= offsetof(kiln_launch, stream) + sizeof(void *) &&
        args->stream != NULL)
        ((uint64_t *)args->stream)[0]++;
    if (refuses("launch")) {
        snprintf(err, cap, "test-plugin: launch refused");
        return KILN_ERR_UNSUPPORTED;
    }
    if (unterminated("launch"))
        return fill(err, cap, KILN_ERR_BACKEND);
    tp_kernel *k = handle;
    kiln_status s = kiln__backend_ref()->launch(state, k->ref, args, err, cap);
    if (s == KILN_OK && k->skew && args->n_outputs > 0) {
        const kiln_ir_tensor *t = &args->outputs[0];
        int empty = 0;
        for (int d = 0; d < t->rank; d++)
            empty |= t->sizes[d] == 0;
        if (!empty && t->data != NULL)
            ((unsigned char *)t->data)[0] ^= 1;
    }
    return s;
}

static kiln_status plugin_db_versions(void *state, char *buf, size_t cap)
{
    (void)state;
    if (strcmp(db_mode(), "probe-fails") == 0)
        return KILN_ERR_BACKEND;
    snprintf(buf, cap, "test-plugin-db 1");
    return KILN_OK;
}

static kiln_status plugin_serialize(void *state, void *handle, void *buf,
                                    size_t cap, size_t *size, char *err,
                                    size_t ecap)
{
    (void)state;
    (void)err;
    (void)ecap;
    tp_kernel *k = handle;
    if (strcmp(db_mode(), "forget") == 0)
        return KILN_ERR_UNSUPPORTED;
    *size = k->payload.len;
    if (k->payload.len > cap)
        return KILN_ERR_LIMIT;
    memcpy(buf, k->payload.data, k->payload.len);
    return KILN_OK;
}

static kiln_status plugin_deserialize(void *state, const void *payload,
                                      size_t n, kiln_kernel_out *out,
                                      char *err, size_t ecap)
{
    kiln__kdb_ir ir;
    size_t used = 0;
    if (strcmp(db_mode(), "bad-payload") == 0 || n < 3 ||
        memcmp(payload, "tp1", 3) != 0 ||
        kiln__kdb_ir_decode((const uint8_t *)payload + 3, n - 3, &used, &ir) !=
            KILN_OK ||
        used != n - 3) {
        snprintf(err, ecap, "test-plugin: malformed payload");
        return KILN_ERR_CORRUPT;
    }
    kiln_status s = kiln__backend_ref()->compile(state, &ir.seg, &ir.ko, out,
                                                 err, ecap);
    if (s == KILN_OK)
        s = wrap(state, &ir.seg, &ir.ko, out);
    if (s == KILN_OK)
        ((tp_kernel *)out->handle)->skew = strcmp(db_mode(), "skew") == 0;
    kiln__kdb_ir_free(&ir);
    return s;
}

static kiln_status plugin_mem_alloc(void *state, size_t n, void **ptr,
                                    char *err, size_t cap)
{
    (void)state;
    *ptr = malloc(n ? n : 16);
    if (*ptr == NULL) {
        snprintf(err, cap, "test-plugin: out of memory");
        return KILN_ERR_NO_MEMORY;
    }
    return KILN_OK;
}

static void plugin_mem_free(void *state, void *ptr)
{
    (void)state;
    free(ptr);
}

static kiln_status plugin_mem_copy(void *state, void *dst, const void *src,
                                   size_t n, int direction, char *err,
                                   size_t cap)
{
    (void)state;
    (void)err;
    (void)cap;
    (void)direction;
    memcpy(dst, src, n);
    return KILN_OK;
}

static kiln_status plugin_stream_sync(void *state, void *stream, char *err,
                                      size_t cap)
{
    (void)state;
    (void)err;
    (void)cap;
    if (stream != NULL)
        ((uint64_t *)stream)[1]++;
    return KILN_OK;
}

static int64_t plugin_local_bytes(void *state, void *handle)
{
    (void)state;
    (void)handle;
    const char *n = getenv("KILN_TEST_PLUGIN_LOCAL_BYTES");
    return n != NULL ? strtoll(n, NULL, 10) : -1;
}

__attribute__((visibility("default"))) const kiln_backend *
kiln_backend_entry(uint32_t host_abi)
{
    if (host_abi != KILN_BACKEND_ABI_VERSION)
        return NULL;
    desc = *kiln__backend_ref();
    desc.name = "test-plugin";
    desc.open = plugin_open;
    desc.identity = plugin_identity;
    desc.compile = plugin_compile;
    desc.release = plugin_release;
    desc.launch = plugin_launch;
    desc.local_bytes = plugin_local_bytes;
    const char *dev = getenv("KILN_TEST_PLUGIN_DEVICE");
    if (dev != NULL) {
        desc.memory = KILN_MEM_DEVICE;
        desc.mem_alloc = plugin_mem_alloc;
        desc.mem_free = plugin_mem_free;
        desc.mem_copy = plugin_mem_copy;
        desc.stream_sync = strcmp(dev, "streams") == 0 ? plugin_stream_sync : NULL;
    }
    if (strcmp(db_mode(), "none") != 0) {
        desc.db_versions = plugin_db_versions;
        desc.serialize = plugin_serialize;
        desc.deserialize = plugin_deserialize;
    }
    const char *abi = getenv("KILN_TEST_PLUGIN_ABI");
    const char *size = getenv("KILN_TEST_PLUGIN_SIZE");
    if (abi != NULL)
        desc.abi_version = (uint32_t)strtoul(abi, NULL, 10);
    if (size != NULL)
        desc.struct_size = (uint32_t)strtoul(size, NULL, 10);
    return &desc;
}
