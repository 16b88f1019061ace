/*
** cuda_flags.c -- the kernel-level options -> NVRTC flags mapping
** (cuda_flags.h; docs/backends.md, "Kernel-level options and NVRTC
** flags"), and what Kiln makes of NVRTC's own cache and compile log.
** The mapping is the only place a flag is chosen: the backends compile
** with kiln__cuda_flags and report kiln__cuda_flags_text, so the flags in
** the info record and the identity are the flags used.
*/
#include <stdio.h>
#include <string.h>

#include "backends/cuda_flags.h"

kiln_status kiln__cuda_flags(const kiln_kernel_options *ko, const char *arch,
                             const char **argv, int *argc, char *store,
                             size_t cap)
{
    if (ko == NULL || arch == NULL || argv == NULL || argc == NULL || store == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda flags: NULL argument");
    const char *num = NULL;
    if (strncmp(arch, "sm_", 3) == 0)
        num = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0)
        num = arch + 8;
    if (num == NULL || num[0] == '\0' || strspn(num, "0123456789") != strlen(num) ||
        strlen(num) > 4)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "cuda flags: malformed architecture '%s' (want sm_NN)", arch);
    const char *list[KILN_CUDA_MAX_FLAGS];
    int n = 0;
    char archflag[sizeof "-arch=compute_" + 4];
    snprintf(archflag, sizeof archflag, "-arch=%s_%s", ko->sass ? "sm" : "compute", num);
    list[n++] = "--std=c++17";
    list[n++] = "-default-device";
    list[n++] = archflag;
    if (ko->fast_math)
        list[n++] = "--use_fast_math";
    list[n++] = ko->contract ? "--fmad=true" : "--fmad=false";
    if (ko->debug)
        list[n++] = "-G";
    else if (ko->lineinfo)
        list[n++] = "-lineinfo";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list[i]) + 1;
        if (used + l > cap)
            return kiln__err(KILN_ERR_LIMIT, "cuda flags: buffer too small");
        memcpy(store + used, list[i], l);
        argv[i] = store + used;
        used += l;
    }
    *argc = n;
    return KILN_OK;
}

int kiln__cuda_nvrtc_caches(int major, int minor)
{
    return major > 12 || (major == 12 && minor >= 9);
}

int kiln__cuda_log_benign(const char *log, int debug)
{
    static const char note[] = "warning: Function too large, generated "
                               "debug information may not be accurate.";
    if (log == NULL)
        return 1;
    const char *p = log;
    while (*p != '\0') {
        size_t n = strcspn(p, "\n");
        size_t m = n;
        while (m > 0 && (p[m - 1] == '\r' || p[m - 1] == ' '))
            m--;
        size_t lead = strspn(p, " ");
        int blank = lead >= m;
        int is_note = debug && m - lead == sizeof note - 1 &&
                      memcmp(p + lead, note, sizeof note - 1) == 0;
        if (!blank && !is_note)
            return 0;
        p += n;
        if (*p == '\n')
            p++;
    }
    return 1;
}

kiln_status kiln__cuda_flags_text(const kiln_kernel_options *ko,
                                  const char *arch, char *buf, size_t cap)
{
    const char *argv[KILN_CUDA_MAX_FLAGS];
    int argc = 0;
    char store[KILN_CUDA_FLAG_STORE];
    kiln_status st = kiln__cuda_flags(ko, arch, argv, &argc, store, sizeof store);
    if (st != KILN_OK)
        return st;
    size_t used = 0;
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(argv[i]);
        if (used + l + 2 > cap)
            return kiln__err(KILN_ERR_LIMIT, "cuda flags: text buffer too small");
        if (i)
            buf[used++] = ' ';
        memcpy(buf + used, argv[i], l);
        used += l;
    }
    if (cap > 0)
        buf[used] = '\0';
    return KILN_OK;
}
