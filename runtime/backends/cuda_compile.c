/*
** cuda_compile.c -- what the two CUDA backends share (cuda_compile.h): the
** error helper, the NVRTC compile of a generated source with its checks,
** the identity and version texts, and the source for dumps
** (kernel_source).  The cuda backend (cuda.c) loads the
** compiled image on its device; the compile-only nvrtc backend (nvrtc.c)
** keeps it for the kernel database and runs the kernel on ref.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda_compile.h"
#include "backends/cuda_codegen.h"
#include "backends/cuda_flags.h"
#include "ir_simplify.h"

kiln_status kiln__cuda_fail(char *err, size_t cap, kiln_status s, const char *fmt, ...)
{
    char msg[KILN_ERR_MSG_CAP]; /* a copy: an argument may be kiln_last_error() */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln__cuda_fmt(err, cap, "%s", msg);
    return kiln__err(s, "%s", msg);
}

/* ------------------------------------------------------------ NVRTC */

kiln_status kiln__cuda_nvrtc_build(const kiln_cuda_api *api, const char *src,
                                   const kiln_kernel_options *ko, const char *arch,
                                   char **image, size_t *image_size,
                                   char *flags_out, size_t flags_cap, char *err,
                                   size_t cap)
{
    const char *argv[KILN_CUDA_MAX_FLAGS];
    int argc = 0;
    char store[KILN_CUDA_FLAG_STORE], ftext[KILN_CUDA_FLAG_STORE];
    kiln_status s = kiln__cuda_flags(ko, arch, argv, &argc, store, sizeof store);
    if (s == KILN_OK)
        s = kiln__cuda_flags_text(ko, arch, ftext, sizeof ftext);
    if (s != KILN_OK)
        return kiln__cuda_fail(err, cap, s, "%s", kiln_last_error());
    /* NVRTC's own cache keys without every option (see cuda_flags.h) */
    if (kiln__cuda_nvrtc_caches(api->nvrtc_major, api->nvrtc_minor) &&
        argc < (int)(sizeof argv / sizeof argv[0])) {
        argv[argc++] = "--no-cache";
        size_t l = strlen(ftext);
        if (l + sizeof " --no-cache" <= sizeof ftext)
            memcpy(ftext + l, " --no-cache", sizeof " --no-cache");
    }
    if (flags_out != NULL)
        kiln__cuda_fmt(flags_out, flags_cap, "%s", ftext);
    nvrtcProgram prog = NULL;
    s = KILN_NVRTC(api, nvrtcCreateProgram, (&prog, src, "kiln_kernel.cu", 0, NULL, NULL),
                   err, cap);
    if (s != KILN_OK)
        return s;
    nvrtcResult r = api->p_nvrtcCompileProgram(prog, argc, argv);
    size_t logn = 0;
    char *log = NULL;
    if (api->p_nvrtcGetProgramLogSize(prog, &logn) == NVRTC_SUCCESS && logn > 0) {
        log = kiln__malloc(logn + 1);
        if (log != NULL && api->p_nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
            log[0] = '\0';
        if (log != NULL)
            log[logn] = '\0';
    }
    int warned = !kiln__cuda_log_benign(log, ko->debug);
    if (r != NVRTC_SUCCESS || warned) {
        /* Message: what failed, the log, then the kernel part of the source
        ** (the preamble is elided; line numbers say where it starts). */
        kiln_buf b = {0};
        const char *what = r != NVRTC_SUCCESS
                               ? (api->p_nvrtcGetErrorString ? api->p_nvrtcGetErrorString(r) : "?")
                               : "warnings are errors";
        kiln__buf_printf(&b, "cuda: NVRTC compile for %s failed (%s) [nvrtc %d.%d, flags: %s]\n",
                         arch, what, api->nvrtc_major, api->nvrtc_minor, ftext);
        kiln__buf_printf(&b, "--- NVRTC log ---\n%s\n", log ? log : "(no log)");
        const char *marker = strstr(src, "// ---- end of preamble\n");
        const char *body = src;
        int line = 1;
        if (marker != NULL) {
            for (const char *p = src; p < marker; p++)
                line += *p == '\n';
            body = marker;
        }
        kiln__buf_printf(&b, "--- generated source from line %d (preamble elided; "
                              "KILN_DUMP=cuda_kernel prints all) ---\n", line);
        kiln__buf_puts(&b, body);
        s = kiln__cuda_fail(err, cap, KILN_ERR_COMPILE, "%s",
                            b.failed ? "cuda: NVRTC compile failed" : b.data);
        kiln__buf_free(&b);
        kiln__free(log);
        api->p_nvrtcDestroyProgram(&prog);
        return s;
    }
    kiln__free(log);
    if (image != NULL) {
        size_t n = 0;
        s = ko->sass ? KILN_NVRTC(api, nvrtcGetCUBINSize, (prog, &n), err, cap)
                     : KILN_NVRTC(api, nvrtcGetPTXSize, (prog, &n), err, cap);
        char *img = NULL;
        if (s == KILN_OK) {
            img = kiln__malloc(n + 1);
            if (img == NULL)
                s = kiln__cuda_fail(err, cap, KILN_ERR_NO_MEMORY,
                                    "cuda: out of memory (kernel image)");
        }
        if (s == KILN_OK)
            s = ko->sass ? KILN_NVRTC(api, nvrtcGetCUBIN, (prog, img), err, cap)
                         : KILN_NVRTC(api, nvrtcGetPTX, (prog, img), err, cap);
        if (s == KILN_OK) {
            img[n] = '\0';
            *image = img;
            *image_size = n;
        } else {
            kiln__free(img);
        }
    }
    api->p_nvrtcDestroyProgram(&prog);
    return s;
}

/* ------------------------------------------------------------ texts */

kiln_status kiln__cuda_identity_text(const kiln_cuda_api *api, const char *prefix,
                                     const char *archs, const char *arch0,
                                     const kiln_kernel_options *ko, char *buf,
                                     size_t cap)
{
    if (ko == NULL || buf == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda identity: NULL argument");
    char flags[KILN_CUDA_FLAG_STORE], simp[sizeof "cse,fold,identity,index,strength"];
    kiln_status s = kiln__cuda_flags_text(ko, arch0, flags, sizeof flags);
    if (s != KILN_OK)
        return s;
    kiln__ir_simplify_text(ko->simplify_off, simp, sizeof simp);
    /* ko= spells out every decoded field, so options that map to the same
    ** flags (lineinfo under -G) still give distinct identities */
    int n = snprintf(buf, cap,
                     "%s %s nvrtc-%d.%d codegen=%d%s flags=%s simplify_off=%s "
                     "ko=fm%d,li%d,g%d,c%d,s%d",
                     prefix, archs, api->nvrtc_major, api->nvrtc_minor,
                     KILN_CUDA_CODEGEN_VERSION,
                     api->h_cuda == NULL ? "" : api->h_cublas ? " cublas=yes" : " cublas=no",
                     flags, simp[0] ? simp : "-", ko->fast_math != 0, ko->lineinfo != 0,
                     ko->debug != 0, ko->contract != 0, ko->sass != 0);
    if (n < 0 || (size_t)n >= cap)
        return kiln__err(KILN_ERR_LIMIT, "cuda identity: buffer of %zu bytes too small", cap);
    return KILN_OK;
}

kiln_status kiln__cuda_versions_text(const kiln_cuda_api *api, int driver,
                                     char *buf, size_t cap)
{
    int mj = 0, mn = 0, dv = 0;
    if (api->p_nvrtcVersion == NULL || api->p_nvrtcVersion(&mj, &mn) != NVRTC_SUCCESS)
        return kiln__err(KILN_ERR_BACKEND, "cuda: nvrtcVersion failed");
    if (driver && (api->p_cuDriverGetVersion == NULL ||
                   api->p_cuDriverGetVersion(&dv) != CUDA_SUCCESS || dv <= 0))
        return kiln__err(KILN_ERR_BACKEND, "cuda: cuDriverGetVersion failed");
    int n = driver ? snprintf(buf, cap, "nvrtc %d.%d driver %d", mj, mn, dv)
                   : snprintf(buf, cap, "nvrtc %d.%d", mj, mn);
    if (n < 0 || (size_t)n >= cap)
        return kiln__err(KILN_ERR_LIMIT, "cuda: version buffer too small");
    return KILN_OK;
}

/* ------------------------------------------------------------ dumps */

kiln_status kiln__cuda_kernel_source(void *state, const kiln_ir_segment *seg,
                                     const kiln_kernel_options *ko, char *buf,
                                     size_t cap, size_t *size, char *err,
                                     size_t err_cap)
{
    (void)state; /* the source depends on the segment and options alone */
    if (seg == NULL || ko == NULL || size == NULL || (buf == NULL && cap > 0))
        return kiln__cuda_fail(err, err_cap, KILN_ERR_INVALID_ARGUMENT,
                               "cuda kernel_source: NULL argument");
    char *src = NULL;
    kiln_cuda_kinfo info;
    kiln_status s = kiln__cuda_codegen(seg, ko, &src, &info);
    if (s != KILN_OK)
        return kiln__cuda_fail(err, err_cap, s, "%s", kiln_last_error());
    size_t n = strlen(src) + 1;
    *size = n;
    if (n > cap)
        s = KILN_ERR_LIMIT;
    else
        memcpy(buf, src, n);
    kiln__free(src);
    return s;
}
