/*
** cuda_loader.c -- dlopen()/dlsym() of the CUDA driver, NVRTC and cuBLAS,
** and the error formatting every CUDA call goes through (cuda_loader.h).
**
** Library choice: the driver is "libcuda.so.1" (the name the driver
** installs; never the toolkit's stub) unless KILN_LIBCUDA_PATH names a file.
** NVRTC and cuBLAS: the env override when set, else the newest
** libNAME.so.MAJOR[.MINOR...] found in LD_LIBRARY_PATH, the usual toolkit
** directories (/usr/local/cuda/lib64, the versioned /usr/local/cuda-N/lib64, ...) and the
** system library directories, else the plain sonames through the dynamic
** loader's own search.  Every candidate that fails to open or lacks a symbol
** is reported in the error text.  Libraries are opened RTLD_NODELETE:
** dlclose() drops the reference but never unmaps them, so state they keep
** internally (NVRTC caches) stays valid and reachable, and a later load is
** cheap.
*/
#include <dlfcn.h>
#include <stdarg.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_loader.h"

/* snprintf that may truncate on purpose (messages are bounded). */
void kiln__cuda_fmt(char *dst, size_t cap, const char *f, ...)
{
    if (dst == NULL || cap == 0)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(dst, cap, f, ap);
    va_end(ap);
}

#define KSTR_(x) #x
#define KSTR(x) KSTR_(x) /* expands first: cuMemAlloc -> "cuMemAlloc_v2" */

/* Version key of "…/libnvrtc.so.13.0.88" -> 13000088 style ordering. */
static long long soname_version(const char *path, const char *stem)
{
    const char *p = strstr(path, stem);
    if (p == NULL)
        return -1;
    p += strlen(stem);
    long long v = 0;
    int parts = 0;
    while (parts < 3) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p)
            break;
        v = v * 10000 + n;
        parts++;
        if (*end != '.')
            break;
        p = end + 1;
    }
    while (parts++ < 3)
        v *= 10000;
    return v;
}

/* The library search (find_newest): bytes of a directory pattern or a list
** of directories (longer ones are cut: the search then misses them), how many
** directories it visits, of which at most LD_DIRS from LD_LIBRARY_PATH. */
#define PATH_CAP 1024
#define PATH_LIST_CAP 4096
#define SEARCH_DIRS 64
#define LD_DIRS 40

/* Newest file matching DIR/libNAME.so.* over the search directories; the
** result goes into best (cap bytes), "" when none. */
static void find_newest(const char *name, char *best, size_t cap)
{
    char stem[sizeof "libcublas.so."]; /* the longest name Kiln loads */
    kiln__cuda_fmt(stem, sizeof stem, "lib%s.so.", name);
    const char *fixed[] = {
        "/usr/local/cuda/lib64", "/usr/local/cuda/lib",
        "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda-*/lib64",
        "/usr/local/cuda-*/lib", "/usr/local/cuda-*/targets/x86_64-linux/lib",
        "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
        NULL};
    long long best_v = -1;
    best[0] = '\0';
    char dirs[PATH_LIST_CAP] = "";
    const char *ld = getenv("LD_LIBRARY_PATH");
    if (ld != NULL)
        kiln__cuda_fmt(dirs, sizeof dirs, "%s", ld);
    const char *home = getenv("CUDA_HOME");
    char homedir[PATH_CAP] = "";
    if (home != NULL && home[0] != '\0')
        kiln__cuda_fmt(homedir, sizeof homedir, "%s/lib64", home);
    /* Search order: LD_LIBRARY_PATH entries, $CUDA_HOME/lib64, the fixed
    ** list; the newest version wins wherever it is. */
    const char *list[SEARCH_DIRS];
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(dirs, ":", &save); tok != NULL && n < LD_DIRS;
         tok = strtok_r(NULL, ":", &save))
        list[n++] = tok;
    if (homedir[0] != '\0')
        list[n++] = homedir;
    for (int i = 0; fixed[i] != NULL && n < SEARCH_DIRS; i++)
        list[n++] = fixed[i];
    for (size_t d = 0; d < n; d++) {
        if (list[d][0] == '\0')
            continue;
        char pattern[PATH_CAP];
        kiln__cuda_fmt(pattern, sizeof pattern, "%s/%s*", list[d], stem);
        glob_t g;
        if (glob(pattern, 0, NULL, &g) != 0)
            continue;
        for (size_t k = 0; k < g.gl_pathc; k++) {
            const char *path = g.gl_pathv[k];
            long long v = soname_version(path, stem);
            if (v > best_v && strlen(path) < cap) {
                best_v = v;
                kiln__cuda_fmt(best, cap, "%s", path);
            }
        }
        globfree(&g);
    }
}

/* dlopen the override or the candidates; returns the handle or NULL with
** the reasons appended to why. */
static void *open_lib(const char *name, const char *env, const char *const *sonames,
                      char *opened, size_t opened_cap, char *why, size_t why_cap)
{
    const char *over = getenv(env);
    why[0] = '\0';
    if (over != NULL && over[0] != '\0') {
        void *h = dlopen(over, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (h == NULL) {
            const char *e = dlerror();
            kiln__cuda_fmt(why, why_cap, "%s=%s: %s", env, over, e ? e : "dlopen failed");
        } else {
            kiln__cuda_fmt(opened, opened_cap, "%s", over);
        }
        return h;
    }
    char best[sizeof ((kiln_cuda_api *)0)->nvrtc_path]; /* where it is kept */
    find_newest(name, best, sizeof best);
    size_t used = 0;
    if (best[0] != '\0') {
        void *h = dlopen(best, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (h != NULL) {
            kiln__cuda_fmt(opened, opened_cap, "%s", best);
            return h;
        }
        const char *e = dlerror();
        used += (size_t)snprintf(why, why_cap, "%s: %s; ", best, e ? e : "?");
    }
    for (int i = 0; sonames[i] != NULL; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (h != NULL) {
            kiln__cuda_fmt(opened, opened_cap, "%s", sonames[i]);
            return h;
        }
        const char *e = dlerror();
        if (used < why_cap)
            used += (size_t)snprintf(why + used, why_cap - used, "%s%s",
                                     i ? "; " : "", e ? e : sonames[i]);
    }
    return NULL;
}

/* dlsym into *field (memcpy: object -> function pointer without a
** cast warning); the first missing symbol's name goes into `missing`. */
#define LOAD_SYM(handle, field, name, missing)                                 \
    do {                                                                       \
        void *s_ = dlsym((handle), KSTR(name));                                \
        if (s_ == NULL && (missing) == NULL)                                   \
            (missing) = KSTR(name);                                            \
        memcpy((field), &s_, sizeof s_);                                       \
    } while (0)

kiln_status kiln__cuda_load(kiln_cuda_api *api, unsigned what, char *err,
                            size_t cap)
{
    kiln_cuda_api a;
    memset(&a, 0, sizeof a);
    char why[KILN_CUDA_MSG_CAP];
    if (what & KILN_CUDA_LOAD_DRIVER) {
        const char *over = getenv("KILN_LIBCUDA_PATH");
        const char *path = (over && over[0]) ? over : "libcuda.so.1";
        a.h_cuda = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (a.h_cuda == NULL) {
            const char *e = dlerror();
            kiln__cuda_fmt(err, cap, "no driver (%s)", e ? e : path);
            return KILN_ERR_BACKEND_UNAVAILABLE;
        }
        const char *missing = NULL;
#define KILN_X_(name) LOAD_SYM(a.h_cuda, &a.p_##name, name, missing);
        KILN_CUDA_DRIVER_FNS(KILN_X_)
#undef KILN_X_
        if (missing != NULL) {
            kiln__cuda_fmt(err, cap, "no driver (%s lacks %s: driver too old?)",
                     path, missing);
            kiln__cuda_unload(&a);
            return KILN_ERR_BACKEND_UNAVAILABLE;
        }
    }
    if (what & KILN_CUDA_LOAD_NVRTC) {
        static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                              "libnvrtc.so", NULL};
        a.h_nvrtc = open_lib("nvrtc", "KILN_NVRTC_PATH", sonames, a.nvrtc_path,
                             sizeof a.nvrtc_path, why, sizeof why);
        if (a.h_nvrtc == NULL) {
            kiln__cuda_fmt(err, cap, "no NVRTC (%s)", why);
            kiln__cuda_unload(&a);
            return KILN_ERR_BACKEND_UNAVAILABLE;
        }
        const char *missing = NULL;
#define KILN_X_(name) LOAD_SYM(a.h_nvrtc, &a.p_##name, name, missing);
        KILN_NVRTC_FNS(KILN_X_)
#undef KILN_X_
        int mj = 0, mn = 0;
        if (missing == NULL && a.p_nvrtcVersion(&mj, &mn) != NVRTC_SUCCESS)
            missing = "a working nvrtcVersion";
        if (missing != NULL) {
            kiln__cuda_fmt(err, cap, "no NVRTC (%s lacks %s)", a.nvrtc_path, missing);
            kiln__cuda_unload(&a);
            return KILN_ERR_BACKEND_UNAVAILABLE;
        }
        a.nvrtc_major = mj;
        a.nvrtc_minor = mn;
    }
    if (what & KILN_CUDA_LOAD_CUBLAS) {
        static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12",
                                              "libcublas.so", NULL};
        a.h_cublas = open_lib("cublas", "KILN_CUBLAS_PATH", sonames,
                              a.cublas_path, sizeof a.cublas_path, why, sizeof why);
        if (a.h_cublas == NULL) {
            kiln__cuda_fmt(a.cublas_why, sizeof a.cublas_why, "%s", why);
        } else {
            const char *missing = NULL;
#define KILN_X_(name) LOAD_SYM(a.h_cublas, &a.p_##name, name, missing);
            KILN_CUBLAS_FNS(KILN_X_)
#undef KILN_X_
                if (missing != NULL) {
                kiln__cuda_fmt(a.cublas_why, sizeof a.cublas_why, "%s lacks %s",
                         a.cublas_path, missing);
                dlclose(a.h_cublas);
                a.h_cublas = NULL;
                a.cublas_path[0] = '\0';
#define KILN_X_(name) a.p_##name = NULL;
                KILN_CUBLAS_FNS(KILN_X_)
#undef KILN_X_
            }
        }
    }
    *api = a;
    return KILN_OK;
}

void kiln__cuda_unload(kiln_cuda_api *api)
{
    if (api == NULL)
        return;
    /* cuBLAS first: it may hold driver resources (handles are destroyed by
    ** the backend before this). */
    if (api->h_cublas != NULL)
        dlclose(api->h_cublas);
    if (api->h_nvrtc != NULL)
        dlclose(api->h_nvrtc);
    if (api->h_cuda != NULL)
        dlclose(api->h_cuda);
    memset(api, 0, sizeof *api);
}

kiln_status kiln__cu_check(const kiln_cuda_api *api, CUresult r,
                           const char *call, char *err, size_t cap)
{
    if (r == CUDA_SUCCESS)
        return KILN_OK;
    const char *name = NULL, *str = NULL;
    /* The lookups can fail themselves (unknown code, no table): fall back. */
    if (api == NULL || api->p_cuGetErrorName == NULL ||
        api->p_cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
        name = "unknown CUresult";
    if (api == NULL || api->p_cuGetErrorString == NULL ||
        api->p_cuGetErrorString(r, &str) != CUDA_SUCCESS || str == NULL)
        str = "no description";
    kiln_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? KILN_ERR_NO_MEMORY
                                                  : KILN_ERR_CUDA;
    char msg[KILN_CUDA_MSG_CAP];
    kiln__cuda_fmt(msg, sizeof msg, "cuda: %s failed: %s (%s) [code %d]", call, name,
             str, (int)r);
    if (err != NULL && cap > 0)
        kiln__cuda_fmt(err, cap, "%s", msg);
    return kiln__err(s, "%s", msg);
}

kiln_status kiln__nvrtc_check(const kiln_cuda_api *api, nvrtcResult r,
                              const char *call, char *err, size_t cap)
{
    if (r == NVRTC_SUCCESS)
        return KILN_OK;
    const char *str = NULL;
    if (api != NULL && api->p_nvrtcGetErrorString != NULL)
        str = api->p_nvrtcGetErrorString(r);
    if (str == NULL)
        str = "unknown nvrtcResult";
    char msg[KILN_CUDA_MSG_CAP];
    kiln__cuda_fmt(msg, sizeof msg, "nvrtc: %s failed: %s [code %d]", call, str,
             (int)r);
    if (err != NULL && cap > 0)
        kiln__cuda_fmt(err, cap, "%s", msg);
    return kiln__err(KILN_ERR_COMPILE, "%s", msg);
}

kiln_status kiln__cublas_check(const kiln_cuda_api *api, cublasStatus_t r,
                               const char *call, char *err, size_t cap)
{
    if (r == CUBLAS_STATUS_SUCCESS)
        return KILN_OK;
    const char *name = NULL;
    if (api != NULL && api->p_cublasGetStatusName != NULL)
        name = api->p_cublasGetStatusName(r);
    if (name == NULL)
        name = "unknown cublasStatus_t";
    kiln_status s = r == CUBLAS_STATUS_ALLOC_FAILED ? KILN_ERR_NO_MEMORY
                                                    : KILN_ERR_BACKEND;
    char msg[KILN_CUDA_MSG_CAP];
    kiln__cuda_fmt(msg, sizeof msg, "cublas: %s failed: %s [code %d]", call, name,
             (int)r);
    if (err != NULL && cap > 0)
        kiln__cuda_fmt(err, cap, "%s", msg);
    return kiln__err(s, "%s", msg);
}
