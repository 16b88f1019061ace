/*
** nvrtc.c -- the compile-only backend "nvrtc" (docs/backends.md, "CUDA
** backend"; kiln_backend.h for the ABI): CUDA code generation and NVRTC
** without a GPU, for CI.
**
** It needs only NVRTC.  compile() generates and compiles the CUDA source
** (cuda_codegen.c, cuda_compile.c) for every architecture in
** KILN_NVRTC_ARCHS (default "sm_90,sm_80"), fails with KILN_ERR_COMPILE on
** any error or warning, and then delegates compile/launch to the ref
** backend, so results are still checked on a machine without a GPU.
** KILN_NVRTC_CHECK_CACHE=DIR memoizes passed checks on disk (full-text
** comparison, never a bare hash).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda_codegen.h"
#include "backends/cuda_compile.h"
#include "backends/cuda_flags.h"
#include "kernel_db.h"

#define NVRTC_MAX_ARCHS 8

typedef struct nvrtc_state {
    kiln_cuda_api api;
    char archs[NVRTC_MAX_ARCHS][KILN_CUDA_ARCH_CAP];
    int n_archs;
    char arch_list[NVRTC_MAX_ARCHS * KILN_CUDA_ARCH_CAP]; /* "sm_90,sm_80" */
    const kiln_backend *ref;
    void *ref_state;
} nvrtc_state;

/* Parse "sm_90,sm_80" into st->archs. */
static kiln_status parse_archs(nvrtc_state *st, const char *list, char *err, size_t cap)
{
    st->n_archs = 0;
    st->arch_list[0] = '\0';
    const char *p = list;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        char a[KILN_CUDA_ARCH_CAP];
        if (n == 0 || n >= sizeof a || st->n_archs == NVRTC_MAX_ARCHS || strncmp(p, "sm_", 3) != 0 ||
            n <= 3 || strspn(p + 3, "0123456789") < n - 3) {
            return kiln__cuda_fail(err, cap, KILN_ERR_BACKEND_UNAVAILABLE,
                                   "nvrtc: bad KILN_NVRTC_ARCHS '%s' (want e.g. sm_90,sm_80)",
                                   list);
        }
        memcpy(a, p, n);
        a[n] = '\0';
        memcpy(st->archs[st->n_archs++], a, n + 1);
        size_t l = strlen(st->arch_list);
        kiln__cuda_fmt(st->arch_list + l, sizeof st->arch_list - l, "%s%s", l ? "," : "", a);
        p += n;
        if (*p == ',')
            p++;
    }
    if (st->n_archs == 0)
        return kiln__cuda_fail(err, cap, KILN_ERR_BACKEND_UNAVAILABLE,
                               "nvrtc: empty KILN_NVRTC_ARCHS");
    return KILN_OK;
}

static kiln_status nvrtc_open(int device, void **state, char *err, size_t cap)
{
    if (state == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "nvrtc: NULL state");
    nvrtc_state *st = kiln__calloc(1, sizeof *st);
    if (st == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_NO_MEMORY, "nvrtc: out of memory");
    char why[KILN_CUDA_MSG_CAP];
    kiln_status s = kiln__cuda_load(&st->api, KILN_CUDA_LOAD_NVRTC, why, sizeof why);
    if (s != KILN_OK) {
        kiln__free(st);
        return kiln__cuda_fail(err, cap, s, "nvrtc: %s", why);
    }
    const char *archs = getenv("KILN_NVRTC_ARCHS");
    s = parse_archs(st, archs && archs[0] ? archs : "sm_90,sm_80", err, cap);
    st->ref = kiln__backend_ref();
    if (s == KILN_OK && st->ref == NULL)
        s = kiln__cuda_fail(err, cap, KILN_ERR_BACKEND_UNAVAILABLE,
                            "nvrtc: reference backend missing");
    if (s == KILN_OK)
        s = st->ref->open(device, &st->ref_state, err, cap);
    if (s != KILN_OK) {
        kiln__cuda_unload(&st->api);
        kiln__free(st);
        return s;
    }
    *state = st;
    return KILN_OK;
}

static void nvrtc_close(void *state)
{
    nvrtc_state *st = state;
    if (st == NULL)
        return;
    if (st->ref != NULL && st->ref->close != NULL)
        st->ref->close(st->ref_state);
    kiln__cuda_unload(&st->api);
    kiln__free(st);
}

static kiln_status nvrtc_identity(void *state, const kiln_kernel_options *ko,
                                  char *buf, size_t cap)
{
    nvrtc_state *st = state;
    char archs[sizeof "archs=" + sizeof ((nvrtc_state *)0)->arch_list];
    char refid[KILN_CUDA_MSG_CAP] = "";
    kiln__cuda_fmt(archs, sizeof archs, "archs=%s", st->arch_list);
    kiln_status s = kiln__cuda_identity_text(&st->api, "nvrtc", archs, st->archs[0], ko, buf, cap);
    if (s == KILN_OK && st->ref->identity != NULL)
        s = st->ref->identity(st->ref_state, ko, refid, sizeof refid);
    if (s == KILN_OK) {
        size_t l = strlen(buf);
        int n = snprintf(buf + l, cap - l, " | %s", refid);
        if (n < 0 || (size_t)n >= cap - l)
            return kiln__err(KILN_ERR_LIMIT, "nvrtc identity: buffer too small");
    }
    return s;
}

/* Optional on-disk memo of compile checks that passed (KILN_NVRTC_CHECK_CACHE
** = a directory): the file <dir>/kiln-nvrtc-<fnv64>.ok holds the full text
** that was compiled (arch, flags, source) and counts as a hit only when it
** is byte-identical, so a hash collision can never skip a check.  Writes go
** to a temporary name and are renamed into place.  Any I/O problem just
** means "not cached". */
static char *memo_text(const kiln_cuda_api *api, const char *arch, const char *flags,
                       const char *src)
{
    kiln_buf b = {0};
    /* the compiler too: a pass under one NVRTC says nothing of another */
    kiln__buf_printf(&b, "kiln nvrtc check v%d\nnvrtc %d.%d %s\n%s\n%s\n",
                     KILN_CUDA_CODEGEN_VERSION, api->nvrtc_major, api->nvrtc_minor,
                     api->nvrtc_path, arch, flags);
    kiln__buf_puts(&b, src);
    if (b.failed) {
        kiln__buf_free(&b);
        return NULL;
    }
    return b.data;
}

#define MEMO_PATH_CAP 1024 /* a longer path is cut: another file, still checked */
#define MEMO_CHUNK 4096    /* bytes compared per read */

static void memo_path(const char *dir, const char *text, char *path, size_t cap)
{
    uint64_t h = kiln__fnv1a(text, strlen(text), KILN_FNV_SEED);
    kiln__cuda_fmt(path, cap, "%s/kiln-nvrtc-%016llx.ok", dir, (unsigned long long)h);
}

static int memo_hit(const char *dir, const char *text)
{
    char path[MEMO_PATH_CAP];
    memo_path(dir, text, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    size_t n = strlen(text), got = 0;
    char buf[MEMO_CHUNK];
    int same = 1;
    while (same) {
        size_t r = fread(buf, 1, sizeof buf, f);
        if (r == 0)
            break;
        same = got + r <= n && memcmp(buf, text + got, r) == 0;
        got += r;
    }
    fclose(f);
    return same && got == n;
}

static void memo_store(const char *dir, const char *text)
{
    char path[MEMO_PATH_CAP], tmp[MEMO_PATH_CAP + sizeof ".-9223372036854775807.tmp"];
    memo_path(dir, text, path, sizeof path);
    kiln__cuda_fmt(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f == NULL)
        return;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0)
        remove(tmp);
}

/* An nvrtc kernel: the ref kernel that runs it, and its database payload
** ("knv1", the segment IR and kernel options it was built from
** (kiln__kdb_ir_encode), the flags, then each architecture's name and
** NVRTC image -- empty for an architecture whose check the
** KILN_NVRTC_CHECK_CACHE memo answered).  deserialize() rebuilds the ref
** kernel from the payload's own IR and options, so a payload decides what
** runs, as a cubin does on the cuda backend. */
typedef struct nvrtc_kernel {
    void *ref;
    uint8_t *payload;
    size_t n;
} nvrtc_kernel;

#define NVRTC_PAYLOAD_MAGIC 0x31766e6bu /* "knv1" */

static kiln_status nvrtc_wrap(nvrtc_state *st, kiln_kernel_out *out, kiln_buf *pay,
                              char *err, size_t cap)
{
    nvrtc_kernel *w = kiln__calloc(1, sizeof *w);
    if (w == NULL || pay->failed) {
        kiln__free(w);
        kiln__buf_free(pay);
        st->ref->release(st->ref_state, out->handle);
        out->handle = NULL;
        return kiln__cuda_fail(err, cap, KILN_ERR_NO_MEMORY, "nvrtc: out of memory");
    }
    w->ref = out->handle;
    w->payload = (uint8_t *)pay->data;
    w->n = pay->len;
    out->handle = w;
    return KILN_OK;
}

static kiln_status nvrtc_compile(void *state, const kiln_ir_segment *seg,
                                 const kiln_kernel_options *ko, kiln_kernel_out *out,
                                 char *err, size_t cap)
{
    nvrtc_state *st = state;
    if (st == NULL || seg == NULL || ko == NULL || out == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "nvrtc compile: NULL argument");
    char *src = NULL;
    kiln_cuda_kinfo info;
    kiln_status s = kiln__cuda_codegen(seg, ko, &src, &info);
    if (s != KILN_OK)
        return kiln__cuda_fail(err, cap, s, "%s", kiln_last_error());
    char flags[KILN_CUDA_FLAG_STORE] = "";
    const char *memo = getenv("KILN_NVRTC_CHECK_CACHE");
    kiln_buf pay = {0};
    kiln__kdb_put_u32(&pay, NVRTC_PAYLOAD_MAGIC);
    kiln__kdb_ir_encode(seg, ko, &pay);
    for (int i = 0; i < st->n_archs && s == KILN_OK; i++) {
        char ftext[KILN_CUDA_FLAG_STORE] = "";
        if (kiln__cuda_flags_text(ko, st->archs[i], ftext, sizeof ftext) != KILN_OK)
            ftext[0] = '\0';
        if (i == 0) {
            kiln__cuda_fmt(flags, sizeof flags, "%s", ftext);
            kiln__kdb_put_str(&pay, flags);
            kiln__kdb_put_u32(&pay, (uint32_t)st->n_archs);
        }
        kiln__kdb_put_str(&pay, st->archs[i]);
        char *text = memo && memo[0] ? memo_text(&st->api, st->archs[i], ftext, src) : NULL;
        if (text != NULL && memo_hit(memo, text)) {
            kiln__free(text);
            kiln__kdb_put_bytes(&pay, NULL, 0);
            continue;
        }
        char *img = NULL;
        size_t img_n = 0;
        s = kiln__cuda_nvrtc_build(&st->api, src, ko, st->archs[i], &img, &img_n, NULL, 0, err, cap);
        if (s == KILN_OK && text != NULL)
            memo_store(memo, text);
        kiln__kdb_put_bytes(&pay, img, s == KILN_OK ? img_n : 0);
        kiln__free(img);
        kiln__free(text);
    }
    kiln__free(src);
    if (s == KILN_OK)
        s = st->ref->compile(st->ref_state, seg, ko, out, err, cap);
    if (s != KILN_OK) {
        kiln__buf_free(&pay);
        return s;
    }
    kiln__cuda_fmt(out->flags, sizeof out->flags, "%s", flags);
    return nvrtc_wrap(st, out, &pay, err, cap);
}

static void nvrtc_release(void *state, void *handle)
{
    nvrtc_state *st = state;
    nvrtc_kernel *w = handle;
    if (w == NULL)
        return;
    if (st != NULL && st->ref->release != NULL)
        st->ref->release(st->ref_state, w->ref);
    kiln__free(w->payload);
    kiln__free(w);
}

static kiln_status nvrtc_launch(void *state, void *handle, kiln_launch *args,
                                char *err, size_t cap)
{
    nvrtc_state *st = state;
    nvrtc_kernel *w = handle;
    if (w == NULL)
        return kiln__cuda_fail(err, cap, KILN_ERR_INVALID_ARGUMENT, "nvrtc launch: NULL kernel");
    return st->ref->launch(st->ref_state, w->ref, args, err, cap);
}

static kiln_status nvrtc_db_versions(void *state, char *buf, size_t cap)
{
    nvrtc_state *st = state;
    return kiln__cuda_versions_text(&st->api, 0, buf, cap);
}

static kiln_status nvrtc_serialize(void *state, void *handle, void *buf, size_t cap,
                                   size_t *size, char *err, size_t ecap)
{
    (void)state;
    nvrtc_kernel *w = handle;
    if (w == NULL || size == NULL || (buf == NULL && cap > 0))
        return kiln__cuda_fail(err, ecap, KILN_ERR_INVALID_ARGUMENT,
                               "nvrtc serialize: NULL argument");
    *size = w->n;
    if (w->n > cap)
        return KILN_ERR_LIMIT;
    memcpy(buf, w->payload, w->n);
    return KILN_OK;
}

static kiln_status nvrtc_deserialize(void *state, const void *payload, size_t n,
                                     kiln_kernel_out *out, char *err, size_t ecap)
{
    nvrtc_state *st = state;
    if (st == NULL || out == NULL || (payload == NULL && n > 0))
        return kiln__cuda_fail(err, ecap, KILN_ERR_INVALID_ARGUMENT,
                               "nvrtc deserialize: NULL argument");
    kiln__kdb_rd r = {payload, n, 0, 0};
    kiln__kdb_ir ir;
    size_t used = 0;
    if (kiln__kdb_get_u32(&r) != NVRTC_PAYLOAD_MAGIC ||
        kiln__kdb_ir_decode(r.p + r.at, n - r.at, &used, &ir) != KILN_OK)
        return kiln__cuda_fail(err, ecap, KILN_ERR_CORRUPT, "nvrtc deserialize: malformed payload");
    r.at += used;
    char flags[KILN_CUDA_FLAG_STORE], arch[KILN_CUDA_ARCH_CAP];
    kiln__kdb_get_str(&r, flags, sizeof flags);
    int bad = (int)kiln__kdb_get_u32(&r) != st->n_archs;
    for (int i = 0; i < st->n_archs && !bad && !r.bad; i++) {
        const uint8_t *img;
        kiln__kdb_get_str(&r, arch, sizeof arch);
        kiln__kdb_get_bytes(&r, &img);
        bad = strcmp(arch, st->archs[i]) != 0;
    }
    if (bad || r.bad || r.at != n) {
        kiln__kdb_ir_free(&ir);
        return kiln__cuda_fail(err, ecap, KILN_ERR_CORRUPT, "nvrtc deserialize: malformed payload "
                               "or other architectures");
    }
    kiln_status s = st->ref->compile(st->ref_state, &ir.seg, &ir.ko, out, err, ecap);
    kiln__kdb_ir_free(&ir);
    if (s != KILN_OK)
        return s;
    kiln__cuda_fmt(out->flags, sizeof out->flags, "%s", flags);
    kiln_buf pay = {0};
    kiln__buf_add(&pay, payload, n);
    return nvrtc_wrap(st, out, &pay, err, ecap);
}

static const kiln_backend nvrtc_backend = {
    .abi_version = KILN_BACKEND_ABI_VERSION,
    .struct_size = sizeof(kiln_backend),
    .name = "nvrtc",
    .memory = KILN_MEM_HOST,
    .open = nvrtc_open,
    .close = nvrtc_close,
    .identity = nvrtc_identity,
    .compile = nvrtc_compile,
    .release = nvrtc_release,
    .launch = nvrtc_launch,
    .db_versions = nvrtc_db_versions,
    .serialize = nvrtc_serialize,
    .deserialize = nvrtc_deserialize,
    .kernel_source = kiln__cuda_kernel_source,
};

const kiln_backend *kiln__backend_nvrtc(void) { return &nvrtc_backend; }
