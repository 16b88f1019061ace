/*
** kernel_db_cache.c -- how the kernel cache (cache.c) uses the kernel
** database (kernel_db.c): the database key of a kernel, lookup +
** deserialize on a miss of the in-memory cache, serialize + store after a
** compile, and the per-kernel outcome (docs/kernel-db.md, "The key").
**
** The key is the full kernel key, as text followed by the IR bytes:
**     kiln kernel-db key v<schema>
**     kiln <library version>
**     host <cpu> ptr<bits> <endianness>
**     backend <name>
**     identity <the backend's identity: flags, target, compiler version>
**     versions <the backend's db_versions(): compiler and driver>
**     options <canonical kernel-level options>
**     ir <n>
**     <n bytes: the segment IR after contraction and simplification,
**      with its input/output traits and index width (plan.c)>
** so a stored kernel is used only for exactly the kernel it was built as.
**
** Invariant: a kernel the backend compiled gets exactly one outcome when
** the database was asked (HIT means nothing was compiled); kernels the
** reference backend built (a KILN_ERR_UNSUPPORTED fallback) and failed
** compiles are never stored and count nothing.
*/
#include <string.h>

#include "core.h"
#include "kernel_db.h"

#if defined(__x86_64__)
#define HOST_CPU "x86_64"
#elif defined(__aarch64__)
#define HOST_CPU "aarch64"
#else
#define HOST_CPU "other"
#endif

kiln__kdb *kiln__context_kdb(kiln_context *ctx)
{
    return ctx != NULL ? ctx->kdb : NULL;
}

/* The database key of kernel (v, kir) into b. */
static void build_key(kiln_context *ctx, const kiln__variant *v,
                      const kiln__segir *kir, const char *versions, kiln_buf *b)
{
    uint16_t one = 1;
    kiln__buf_printf(b, "kiln kernel-db key v%u\nkiln %s\nhost %s ptr%zu %s\n"
                        "backend %s\nidentity %s\nversions %s\noptions %s\n"
                        "ir %zu\n",
                     KILN__KDB_SCHEMA, KILN_VERSION_STRING, HOST_CPU,
                     sizeof(void *) * 8, *(uint8_t *)&one ? "le" : "be",
                     ctx->name, v->identity, versions, v->canonical,
                     kir->blob_len);
    kiln__buf_add(b, (const char *)kir->blob, kir->blob_len);
}

/* The backend's db_versions(), or NULL after refusing the database (the
** probe failing, or a backend that cannot persist: fail closed). */
static const char *versions_of(kiln_context *ctx, char *buf, size_t cap)
{
    const kiln_backend *be = &ctx->be;
    if (be->db_versions == NULL || be->serialize == NULL ||
        be->deserialize == NULL) {
        kiln__kdb_refuse(ctx->kdb, "backend %s cannot persist kernels (no "
                                   "db_versions/serialize/deserialize)",
                         ctx->name);
        return NULL;
    }
    buf[0] = '\0';
    kiln_status s = be->db_versions(ctx->be_state, buf, cap);
    if (s != KILN_OK || memchr(buf, '\0', cap) == NULL || strchr(buf, '\n')) {
        kiln__kdb_refuse(ctx->kdb, "backend %s: the version probe failed (%s)",
                         ctx->name, s != KILN_OK ? kiln_last_error()
                                                 : "malformed version text");
        return NULL;
    }
    return buf;
}

/* The payload of k (kiln__malloc'd) or NULL (the kernel is not stored). */
static uint8_t *serialize(kiln_context *ctx, kiln__kernel *k, size_t *n)
{
    size_t cap = 64 * 1024, size = 0;
    char err[KILN_ERR_MSG_CAP];
    for (int round = 0; round < 2; round++) {
        uint8_t *buf = kiln__malloc(cap);
        if (buf == NULL)
            return NULL;
        err[0] = '\0';
        kiln_status s = ctx->be.serialize(ctx->be_state, k->out.handle, buf,
                                          cap, &size, err, sizeof err);
        if (s == KILN_OK && size <= cap) {
            *n = size;
            return buf;
        }
        kiln__free(buf);
        if (s != KILN_ERR_LIMIT || size <= cap || size > KILN__KDB_MAX_ENTRY)
            return NULL;
        cap = size;
    }
    return NULL;
}

static kiln_db_outcome outcome_of(kiln__kdb_result r, int stored)
{
    switch (r) {
    case KILN__KDB_HIT: return KILN_DB_HIT;
    case KILN__KDB_CORRUPT: return KILN_DB_CORRUPT;
    case KILN__KDB_REFUSED: return KILN_DB_REFUSED;
    default: return stored ? KILN_DB_STORED : KILN_DB_MISS;
    }
}

kiln_status kiln__kdb_obtain(kiln_context *ctx, const kiln__pseg *s,
                             const kiln__variant *v, const kiln__segir *kir,
                             kiln__kernel *k, int use_db, int *compiled,
                             char *err, size_t cap)
{
    k->db = KILN_DB_NONE;
    *compiled = 1;
    if (!use_db || ctx->kdb == NULL)
        return kiln__compile_into(ctx, s, v, k, err, cap);
    char vbuf[512];
    kiln__kdb_result r = KILN__KDB_REFUSED;
    kiln_buf key = {0};
    const char *versions = kiln__kdb_ready(ctx->kdb)
                               ? versions_of(ctx, vbuf, sizeof vbuf)
                               : NULL;
    int have_key = 0;
    if (versions != NULL) {
        build_key(ctx, v, kir, versions, &key);
        have_key = !key.failed; /* out of memory: compiled, not stored */
        r = KILN__KDB_MISS;
    }
    if (have_key) {
        uint8_t *payload = NULL;
        size_t n = 0;
        r = kiln__kdb_load(ctx->kdb, key.data, key.len, &payload, &n);
        if (r == KILN__KDB_HIT) {
            char e2[KILN_ERR_MSG_CAP] = "";
            memset(&k->out, 0, sizeof k->out);
            kiln_status st = ctx->be.deserialize(ctx->be_state, payload, n,
                                                 &k->out, e2, sizeof e2);
            kiln__free(payload);
            if (st == KILN_OK) {
                k->be = &ctx->be;
                k->be_state = ctx->be_state;
                k->reference = 0;
                k->db = KILN_DB_HIT;
                kiln__kdb_count(ctx->kdb, KILN__KDB_HIT, 0);
                kiln__buf_free(&key);
                *compiled = 0;
                return KILN_OK;
            }
            fprintf(ctx->dump, "kiln: kernel_db: corrupt entry in %s: backend "
                               "%s cannot load its payload (%s): the kernel is "
                               "compiled again and the entry replaced\n",
                    kiln__kdb_dir(ctx->kdb), ctx->name,
                    e2[0] ? e2 : kiln_strerror(st));
            r = KILN__KDB_CORRUPT;
        }
    }
    kiln_status st = kiln__compile_into(ctx, s, v, k, err, cap);
    int stored = 0;
    if (st == KILN_OK && !k->reference) {
        if (have_key && r != KILN__KDB_REFUSED) {
            size_t n = 0;
            uint8_t *payload = serialize(ctx, k, &n);
            if (payload != NULL)
                stored = kiln__kdb_store(ctx->kdb, key.data, key.len, payload, n);
            kiln__free(payload);
        }
        k->db = outcome_of(r, stored);
        kiln__kdb_count(ctx->kdb, r, stored);
    } else if (r == KILN__KDB_CORRUPT) {
        kiln__kdb_count(ctx->kdb, r, 0); /* the bad file was still found */
    }
    kiln__buf_free(&key);
    return st;
}
