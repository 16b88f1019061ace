/*
** cuda_compile.h -- shared by the cuda backend (cuda.c) and the
** compile-only nvrtc backend (nvrtc.c): the error helper, the NVRTC compile
** of a generated source, the identity and version texts, and the source
** for dumps (docs/
** backends.md, "CUDA backend").  Private to the two backends.
*/
#ifndef KILN_CUDA_COMPILE_H
#define KILN_CUDA_COMPILE_H

#include <stddef.h>

#include "backends/cuda_loader.h"

/* Record status s with the message fmt... in err (cap bytes, cut to fit;
** may be NULL) and as the thread's last error; returns s.  The order of
** the arguments is the one every backend's fail() uses (err, cap, s, fmt):
** ref.c's keeps the message in err alone. */
kiln_status kiln__cuda_fail(char *err, size_t cap, kiln_status s,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Compile `src` for `arch` under `ko` with NVRTC (kiln__cuda_flags, plus
** --no-cache where NVRTC caches on its own).  With image != NULL the cubin
** (or PTX when !ko->sass) is returned in *image (kiln__free; NUL-terminated
** one byte past *image_size).  Any error or warning (kiln__cuda_log_benign
** says which log text is not one) is KILN_ERR_COMPILE with the flags, the
** NVRTC log and the generated source from the end of the preamble in the
** message; `flags_out` (may be NULL) receives the flag text.  On failure
** *image is untouched. */
kiln_status kiln__cuda_nvrtc_build(const kiln_cuda_api *api, const char *src,
                                   const kiln_kernel_options *ko, const char *arch,
                                   char **image, size_t *image_size,
                                   char *flags_out, size_t flags_cap, char *err,
                                   size_t cap);

/* The identity of a CUDA backend under ko: "PREFIX ARCHS nvrtc-13.0
** codegen=1 cublas=yes flags=... simplify_off=... ko=fm0,li0,g0,c1,s1"
** (cublas= only with a driver loaded).  It changes with every
** kernel-level option (ko= spells out each decoded field, simplify_off the
** passes), the target, the compiler and the generator; short enough for
** the runtime's 512-byte identity field even with eight NVRTC
** architectures.  arch0 is the architecture whose flags are quoted.
** KILN_ERR_LIMIT when cap is too small. */
kiln_status kiln__cuda_identity_text(const kiln_cuda_api *api, const char *prefix,
                                     const char *archs, const char *arch0,
                                     const kiln_kernel_options *ko, char *buf,
                                     size_t cap);

/* "nvrtc 13.0" (+ " driver 13000" when `driver`), probed afresh for the
** kernel database: a probe that fails is an error, and the database then
** refuses the backend (fail closed). */
kiln_status kiln__cuda_versions_text(const kiln_cuda_api *api, int driver,
                                     char *buf, size_t cap);

/* Both backends' kernel_source() (kiln_backend.h): the generated source
** of seg under ko, as compile() builds it (state is not used). */
kiln_status kiln__cuda_kernel_source(void *state, const kiln_ir_segment *seg,
                                     const kiln_kernel_options *ko, char *buf,
                                     size_t cap, size_t *size, char *err,
                                     size_t err_cap);

#endif /* KILN_CUDA_COMPILE_H */
