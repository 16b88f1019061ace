/*
** context.c -- the execution context: backend choice and loading (built-in
** "ref"/"cuda"/"nvrtc", "auto", or a plugin shared object by path), the environment
** snapshot, and the context-wide counters.
**
** Invariants:
**   - ctx->env is the environment snapshot in force.  It is read once at
**     create (a malformed variable fails creation) and replaced only by a
**     successful kiln_context_reload_env(); readers copy it under env_mu, so
**     execute never sees a half-written snapshot.
**   - ctx->be is a private copy of the backend descriptor: only the first
**     struct_size bytes a plugin declared are copied, the rest stays zero,
**     so no field beyond the plugin's struct_size is ever read.
**   - A plugin's dlopen handle is closed only after every kernel of the
**     caches was released and the backend closed (kiln_context_destroy).
**   - The backend is never chosen from the environment: cfg->backend (or
**     "auto") is the only input, so a context behaves the same everywhere.
*/
#define _GNU_SOURCE /* dladdr1: the entry symbol's ELF type */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "kernel_db.h"

#define DEFAULT_PLAN_CAP 256
#define DEFAULT_KERNEL_CAP 1024

/* Fields a backend descriptor must provide (everything through launch). */
#define MIN_BACKEND_SIZE (offsetof(kiln_backend, launch) + sizeof(void *))

/* ------------------------------------------------------------ backends */

/* Copy descriptor d (already ABI-checked) into be, reading at most
** d->struct_size bytes. */
static void copy_descriptor(kiln_backend *be, const kiln_backend *d)
{
    size_t n = d->struct_size < sizeof *be ? d->struct_size : sizeof *be;
    memset(be, 0, sizeof *be);
    memcpy(be, d, n);
}

/* Check a descriptor from any source.  On failure returns KILN_ERR_ABI
** with the reason in why. */
static kiln_status check_descriptor(const kiln_backend *d, const char *src,
                                    char *why, size_t cap)
{
    if (d == NULL) {
        snprintf(why, cap, "%s: the entry function returned no descriptor",
                 src);
        return KILN_ERR_ABI;
    }
    if (d->abi_version != KILN_BACKEND_ABI_VERSION) {
        snprintf(why, cap,
                 "%s: backend ABI version %u, this runtime speaks version %u",
                 src, (unsigned)d->abi_version,
                 (unsigned)KILN_BACKEND_ABI_VERSION);
        return KILN_ERR_ABI;
    }
    if (d->struct_size < MIN_BACKEND_SIZE) {
        snprintf(why, cap,
                 "%s: descriptor struct_size %u is smaller than the %zu bytes "
                 "ABI version %u requires",
                 src, (unsigned)d->struct_size, (size_t)MIN_BACKEND_SIZE,
                 (unsigned)KILN_BACKEND_ABI_VERSION);
        return KILN_ERR_ABI;
    }
    kiln_backend be;
    copy_descriptor(&be, d);
    const char *missing = be.name == NULL       ? "name"
                          : be.open == NULL     ? "open"
                          : be.identity == NULL ? "identity"
                          : be.compile == NULL  ? "compile"
                          : be.launch == NULL   ? "launch"
                                                : NULL;
    if (missing == NULL && be.memory == KILN_MEM_DEVICE &&
        (be.mem_alloc == NULL || be.mem_free == NULL || be.mem_copy == NULL))
        missing = "mem_alloc/mem_free/mem_copy (a device-memory backend)";
    if (missing != NULL) {
        snprintf(why, cap, "%s: the descriptor lacks the required field %s",
                 src, missing);
        return KILN_ERR_ABI;
    }
    if (be.memory != KILN_MEM_HOST && be.memory != KILN_MEM_DEVICE) {
        snprintf(why, cap, "%s: invalid memory space %u", src,
                 (unsigned)be.memory);
        return KILN_ERR_ABI;
    }
    return KILN_OK;
}

/* Whether `sym`, what dlsym found for the entry symbol, is a function.  A
** plugin that exports a data object under that name would otherwise be
** called as code.  On glibc, dladdr1 gives the dynamic symbol table entry
** at that address, whose type must be STT_FUNC (aliases of a function are
** functions too).  Where the platform cannot tell, the symbol is trusted
** (docs/backends.md, "Trust"). */
static int entry_is_function(void *sym, char *why, size_t cap)
{
#ifdef __GLIBC__ /* dladdr1 and RTLD_DL_SYMENT (an enum, not a macro) */
    Dl_info info;
    const ElfW(Sym) *es = NULL;
    if (dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) == 0 || es == NULL ||
        info.dli_saddr != sym) {
        snprintf(why, cap, "no symbol table entry describes it");
        return 0;
    }
    if (ELF64_ST_TYPE(es->st_info) != STT_FUNC) {
        snprintf(why, cap, "it is not a function (ELF symbol type %u%s)",
                 (unsigned)ELF64_ST_TYPE(es->st_info),
                 ELF64_ST_TYPE(es->st_info) == STT_OBJECT ? ", a data object"
                                                          : "");
        return 0;
    }
#else
    (void)sym;
    (void)why;
    (void)cap;
#endif
    return 1;
}

/* A plugin is named by a path or a shared-object name:
**   - a name containing '/' ("./x.so", "/opt/b.so") is opened as given;
**   - a name ending in ".so" ("my_backend.so") is a file in the current
**     directory, like any file argument, so it is opened as "./NAME"
**     (dlopen would otherwise search the library path, not the directory);
**   - a versioned soname ("libfoo.so.1") is left to the dynamic loader's
**     search, as installed libraries are found.
** Writes what to hand to dlopen into buf; 0 when spec names no plugin. */
static int plugin_path(const char *spec, char *buf, size_t cap)
{
    size_t n = strlen(spec);
    int slash = strchr(spec, '/') != NULL;
    int so = n > 3 && strcmp(spec + n - 3, ".so") == 0;
    if (!slash && !so && strstr(spec, ".so.") == NULL)
        return 0;
    snprintf(buf, cap, "%s%s", so && !slash ? "./" : "", spec);
    return 1;
}

#define PLUGIN_PATH_CAP 4096 /* a longer plugin spec is an unknown backend */

/* Open backend `spec` on `device`: fills be, *state and *dl (plugin
** handle or NULL).  On failure nothing stays open and why says why. */
static kiln_status open_backend(const char *spec, int device, kiln_backend *be,
                                void **state, void **dl, char *why,
                                size_t cap)
{
    const kiln_backend *d = NULL;
    void *h = NULL;
    char err[KILN_ERR_MSG_CAP], path[PLUGIN_PATH_CAP];
    err[0] = '\0';
    kiln_status s;
    *dl = NULL;
    if (spec == NULL || strcmp(spec, "auto") == 0) {
        d = kiln__backend_cuda();
        if (d != NULL && check_descriptor(d, "cuda", err, sizeof err) ==
                             KILN_OK) {
            copy_descriptor(be, d);
            if (be->open(device, state, err, sizeof err) == KILN_OK)
                return KILN_OK;
        }
        spec = "ref"; /* cuda unusable here: the reference backend */
    }
    if (strcmp(spec, "ref") == 0 || strcmp(spec, "cuda") == 0 ||
        strcmp(spec, "nvrtc") == 0) {
        d = spec[0] == 'r'   ? kiln__backend_ref()
            : spec[0] == 'c' ? kiln__backend_cuda()
                             : kiln__backend_nvrtc();
        if (d == NULL) {
            snprintf(why, cap, "%s: backend not built into this library",
                     spec);
            return KILN_ERR_BACKEND_UNAVAILABLE;
        }
    } else if (strlen(spec) < sizeof path - 2 &&
               plugin_path(spec, path, sizeof path)) {
        dlerror();
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            const char *e = dlerror();
            snprintf(why, cap, "plugin %s: %s", spec, e ? e : "dlopen failed");
            return KILN_ERR_BACKEND_UNAVAILABLE;
        }
        dlerror();
        void *sym = dlsym(h, KILN_BACKEND_ENTRY_SYMBOL);
        if (sym == NULL) {
            snprintf(why, cap,
                     "plugin %s: no entry symbol %s (not a Kiln backend)",
                     spec, KILN_BACKEND_ENTRY_SYMBOL);
            dlclose(h);
            return KILN_ERR_ABI;
        }
        if (!entry_is_function(sym, err, sizeof err)) {
            snprintf(why, cap, "plugin %s: the entry symbol %s is not usable: "
                               "%s",
                     spec, KILN_BACKEND_ENTRY_SYMBOL, err);
            dlclose(h);
            return KILN_ERR_ABI;
        }
        kiln_backend_entry_fn fn;
        memcpy(&fn, &sym, sizeof fn); /* object pointer -> function pointer */
        d = fn(KILN_BACKEND_ABI_VERSION);
    } else {
        snprintf(why, cap,
                 "unknown backend '%s' (valid: ref, cuda, auto, or a plugin: "
                 "a path, a file name ending in .so, or a versioned soname)",
                 spec);
        return KILN_ERR_BACKEND_UNAVAILABLE;
    }
    if ((s = check_descriptor(d, spec, why, cap)) != KILN_OK) {
        if (h != NULL)
            dlclose(h);
        return s;
    }
    copy_descriptor(be, d);
    err[0] = '\0';
    s = be->open(device, state, err, sizeof err);
    if (s != KILN_OK) {
        kiln__be_str(err, sizeof err);
        snprintf(why, cap, "%s", err[0] ? err : kiln_strerror(s));
        if (h != NULL)
            dlclose(h);
        return s == KILN_ERR_NO_MEMORY ? s : KILN_ERR_BACKEND_UNAVAILABLE;
    }
    *dl = h;
    return KILN_OK;
}

kiln_status kiln_backend_probe(const char *backend, char *why, size_t cap)
{
    char buf[KILN_ERR_MSG_CAP] = "";
    kiln_backend be;
    void *state = NULL, *dl = NULL;
    kiln_status s = open_backend(backend, 0, &be, &state, &dl, buf, sizeof buf);
    if (s == KILN_OK) {
        if (be.close != NULL)
            be.close(state);
        if (dl != NULL)
            dlclose(dl);
        buf[0] = '\0';
        kiln__err_clear();
    } else {
        kiln__err(s, "%s", buf);
    }
    if (why != NULL && cap > 0)
        snprintf(why, cap, "%s", buf);
    return s;
}

/* ---------------------------------------------------------- environment */

/* Parse the environment (or the override strings) into *out. */
static kiln_status read_env(const kiln_context_config *cfg,
                            struct kiln_options *out)
{
    const char *e, *d, *u;
    if (cfg->use_env_override) {
        e = cfg->env_enable;
        d = cfg->env_disable;
        u = cfg->env_dump;
    } else {
        e = getenv("KILN_ENABLE");
        d = getenv("KILN_DISABLE");
        u = getenv("KILN_DUMP");
    }
    kiln_options *o = NULL;
    kiln_status s = kiln_options_from_env(e, d, u, &o);
    if (s != KILN_OK)
        return s; /* the parser recorded source, offset and token */
    *out = *o;
    kiln_options_destroy(o);
    return KILN_OK;
}

/* ----------------------------------------------------------- lifecycle */

kiln_status kiln_context_create(const kiln_context_config *cfg,
                                kiln_context **out)
{
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_context_create: out is NULL");
    kiln_context_config c;
    memset(&c, 0, sizeof c);
    if (cfg != NULL) {
        if (cfg->struct_size < offsetof(kiln_context_config, backend) +
                                   sizeof(const char *))
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "kiln_context_create: cfg->struct_size %zu is too "
                             "small (set it to sizeof(kiln_context_config))",
                             cfg->struct_size);
        memcpy(&c, cfg,
               cfg->struct_size < sizeof c ? cfg->struct_size : sizeof c);
    }
    c.struct_size = sizeof c;
    if (c.device < 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_context_create: negative device %d", c.device);

    struct kiln_options env;
    kiln_status s = read_env(&c, &env);
    if (s != KILN_OK)
        return s;

    kiln_context *ctx = kiln__calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_context_create: out of memory");
    ctx->cfg = c;
    ctx->env = env;
    ctx->device = c.device;
    ctx->dump = c.dump_stream != NULL ? (FILE *)c.dump_stream : stderr;
    atomic_init(&ctx->executes, 0);

    char why[KILN_ERR_MSG_CAP] = "";
    s = open_backend(c.backend, c.device, &ctx->be, &ctx->be_state, &ctx->dl,
                     why, sizeof why);
    if (s != KILN_OK) {
        kiln__free(ctx);
        return kiln__err(s, "kiln_context_create: %s", why);
    }
    /* the plugin's name: at most what ctx->name holds is read */
    snprintf(ctx->name, sizeof ctx->name, "%.*s", (int)sizeof ctx->name - 1,
             ctx->be.name);
    ctx->ref = kiln__backend_ref();
    if (strcmp(ctx->name, "ref") == 0 && ctx->dl == NULL) {
        ctx->ref_state = ctx->be_state;
    } else if (ctx->ref != NULL) {
        char e2[KILN_ERR_MSG_CAP];
        if (ctx->ref->open(0, &ctx->ref_state, e2, sizeof e2) == KILN_OK)
            ctx->ref_owned = 1;
        else
            ctx->ref = NULL; /* no REFERENCE fallback available */
    }
    if (pthread_mutex_init(&ctx->env_mu, NULL) != 0) {
        s = kiln__err(KILN_ERR_NO_MEMORY, "kiln_context_create: mutex init");
        goto fail;
    }
    /* the kernel database: configured now, opened at its first use */
    ctx->kdb = kiln__kdb_from_env(ctx->dump);
    if (ctx->kdb == NULL) {
        s = kiln__err(KILN_ERR_NO_MEMORY, "kiln_context_create: out of memory");
        pthread_mutex_destroy(&ctx->env_mu);
        goto fail;
    }
    s = kiln__caches_init(&ctx->caches,
                          c.plan_cache_capacity ? c.plan_cache_capacity
                                                : DEFAULT_PLAN_CAP,
                          c.kernel_cache_capacity ? c.kernel_cache_capacity
                                                  : DEFAULT_KERNEL_CAP);
    if (s != KILN_OK) {
        pthread_mutex_destroy(&ctx->env_mu);
        goto fail;
    }
    *out = ctx;
    kiln__err_clear();
    return KILN_OK;
fail:
    kiln__kdb_destroy(ctx->kdb);
    if (ctx->ref_owned && ctx->ref->close != NULL)
        ctx->ref->close(ctx->ref_state);
    if (ctx->be.close != NULL)
        ctx->be.close(ctx->be_state);
    if (ctx->dl != NULL)
        dlclose(ctx->dl);
    kiln__free(ctx);
    return s;
}

void kiln_context_destroy(kiln_context *ctx)
{
    if (ctx == NULL)
        return;
    kiln__caches_fini(&ctx->caches); /* releases every kernel first */
    kiln__kdb_destroy(ctx->kdb);
    if (ctx->ref_owned && ctx->ref->close != NULL)
        ctx->ref->close(ctx->ref_state);
    if (ctx->be.close != NULL)
        ctx->be.close(ctx->be_state);
    if (ctx->dl != NULL)
        dlclose(ctx->dl);
    pthread_mutex_destroy(&ctx->env_mu);
    kiln__free(ctx);
}

kiln_status kiln_context_reload_env(kiln_context *ctx)
{
    if (ctx == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_context_reload_env: ctx is NULL");
    struct kiln_options env;
    kiln_status s = read_env(&ctx->cfg, &env);
    if (s != KILN_OK)
        return s; /* the old snapshot stays in force */
    pthread_mutex_lock(&ctx->env_mu);
    ctx->env = env;
    pthread_mutex_unlock(&ctx->env_mu);
    kiln__err_clear();
    return KILN_OK;
}

const char *kiln_context_backend(const kiln_context *ctx)
{
    return ctx != NULL ? ctx->name : NULL;
}

kiln_status kiln_context_backend_identity(kiln_context *ctx, char *buf,
                                          size_t cap)
{
    if (ctx == NULL || buf == NULL || cap == 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_context_backend_identity: NULL argument or "
                         "cap 0");
    struct kiln_options none;
    kiln_kernel_options ko;
    char canon[64], id[1024];
    memset(&none, 0, sizeof none);
    memset(&ko, 0, sizeof ko);
    kiln_status s = kiln__kernel_options(&none, &ko, canon, sizeof canon);
    if (s != KILN_OK)
        return s;
    ko.canonical = canon;
    memset(id, 0, sizeof id);
    s = ctx->be.identity(ctx->be_state, &ko, id, sizeof id - 1);
    if (s != KILN_OK)
        return kiln__err(s, "backend %s: identity failed", ctx->name);
    snprintf(buf, cap, "%s", id); /* id[] ends in a NUL the backend left */
    kiln__err_clear();
    return KILN_OK;
}

const kiln_options *kiln_context_env_options(const kiln_context *ctx)
{
    return ctx != NULL ? (const kiln_options *)&ctx->env : NULL;
}

kiln_status kiln_context_counters(const kiln_context *ctx, kiln_counters *out)
{
    if (ctx == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_context_counters: NULL argument");
    /* callers built before the kernel_db fields pass the older size */
    if (out->struct_size < offsetof(kiln_counters, kernel_db_hits))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_context_counters: out->struct_size %zu is too "
                         "small (set it to sizeof(kiln_counters))",
                         out->struct_size);
    kiln__caches *c = (kiln__caches *)&ctx->caches; /* locks only */
    kiln_counters r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.executes = atomic_load(&((kiln_context *)ctx)->executes);
    pthread_mutex_lock(&c->plan_mu);
    r.plan_hits = c->plan_hits;
    r.plan_misses = c->plan_misses;
    r.plan_evictions = c->plan_evictions;
    pthread_mutex_unlock(&c->plan_mu);
    pthread_mutex_lock(&c->kern_mu);
    r.kernel_hits = c->kern_hits;
    r.kernel_misses = c->kern_misses;
    r.kernel_evictions = c->kern_evictions;
    r.compiles = c->compiles;
    r.kernel_loads = c->loads;
    pthread_mutex_unlock(&c->kern_mu);
    kiln__kdb_counts d;
    kiln__kdb_counters(ctx->kdb, &d);
    r.kernel_db_hits = d.hits;
    r.kernel_db_misses = d.misses;
    r.kernel_db_corrupt = d.corrupt;
    r.kernel_db_stores = d.stores;
    r.kernel_db_refused = d.refused;
    size_t n = out->struct_size < sizeof r ? out->struct_size : sizeof r;
    r.struct_size = n;
    memcpy(out, &r, n);
    kiln__err_clear();
    return KILN_OK;
}
