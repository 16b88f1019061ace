/*
** cuda_flags.h -- the kernel-level options (kiln_kernel_options) -> NVRTC
** flags mapping, and the NVRTC facts the backends act on: whether a
** version has its own compile cache, and which compile logs are benign
** (docs/backends.md, "Kernel-level options and NVRTC flags").
*/
#ifndef KILN_CUDA_FLAGS_H
#define KILN_CUDA_FLAGS_H

#include <stddef.h>

#include "internal.h"

/* Room for the flags of one compile: kiln__cuda_flags writes at most 6, a
** backend may append --no-cache (kiln__cuda_nvrtc_caches). */
#define KILN_CUDA_MAX_FLAGS 16
/* Bytes that hold any flag set's strings (argv store) or its text. */
#define KILN_CUDA_FLAG_STORE 256

/* The NVRTC options for `ko` targeting `arch` ("sm_90"; the PTX form
** "compute_90" is used instead when ko->sass is 0).  Writes up to
** KILN_CUDA_MAX_FLAGS pointers into argv (pointing into store, cap bytes:
** KILN_CUDA_FLAG_STORE is enough) and their count into
** *argc.  Mapping: always --std=c++17 -default-device -arch=...;
** fast_math -> --use_fast_math; contract=0 -> --fmad=false (after
** --use_fast_math, so it wins); lineinfo -> -lineinfo (dropped under -G,
** which implies it); debug -> -G.  Returns KILN_ERR_LIMIT if store is too
** small, KILN_ERR_INVALID_ARGUMENT for a malformed arch. */
kiln_status kiln__cuda_flags(const kiln_kernel_options *ko, const char *arch,
                             const char **argv, int *argc, char *store,
                             size_t cap);

/* The same flags joined by spaces (for identity and the info record). */
kiln_status kiln__cuda_flags_text(const kiln_kernel_options *ko,
                                  const char *arch, char *buf, size_t cap);

/* 1 when NVRTC version major.minor has its own compile cache (12.9 and
** later), which Kiln switches off with --no-cache on every compile: NVRTC
** 13.0.88 on the H200 machine served a kernel built under --use_fast_math
** for a compile of the same source without it (docs/backends.md, "NVRTC's
** compile cache").  Kiln's caches key on every option instead. */
int kiln__cuda_nvrtc_caches(int major, int minor);

/* 1 when an NVRTC log holds only diagnostics that do not make the build
** fail: blank lines, and under -G (debug != 0) NVRTC's note that debug
** information of a large function may be inexact ("Function too large,
** generated debug information may not be accurate."), which says nothing
** about the code.  Any other text is a warning, and a warning fails the
** compile. */
int kiln__cuda_log_benign(const char *log, int debug);

#endif /* KILN_CUDA_FLAGS_H */
