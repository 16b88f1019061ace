/*
** cuda_loader.h -- the one table of CUDA driver, NVRTC and cuBLAS functions
** Kiln uses, loaded with dlopen()/dlsym() (docs/backends.md, "CUDA backend").
**
** Kiln never links CUDA: one build runs with or without a GPU.  Each backend
** instance owns a kiln_cuda_api value (no global mutable state) that
** kiln__cuda_load() fills once from libcuda.so.1, the newest libnvrtc.so.*
** and, optionally, the newest libcublas.so.*.  The symbol names come from
** the toolkit's own headers (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so
** on), so the pointer types and the versioned names always agree.
**
** Invariant: nothing else in the tree calls cu* / nvrtc* / cublas*
** directly; every call goes through KILN_CU / KILN_NVRTC below (or through
** kiln__cu_check / kiln__nvrtc_check), which turn a failure into a
** kiln_status and a message naming the call text, the error name and
** string (with a fallback when the lookup itself fails) and the raw code.
*/
#ifndef KILN_CUDA_LOADER_H
#define KILN_CUDA_LOADER_H

#include <stddef.h>

#include <cuda.h>
#include <nvrtc.h>
#include <cublas_api.h>

#include "internal.h"

/* X(name): driver functions (libcuda.so.1). */
#define KILN_CUDA_DRIVER_FNS(X)                                                \
    X(cuGetErrorName)                                                          \
    X(cuGetErrorString)                                                        \
    X(cuInit)                                                                  \
    X(cuDriverGetVersion)                                                      \
    X(cuDeviceGetCount)                                                        \
    X(cuDeviceGet)                                                             \
    X(cuDeviceGetAttribute)                                                    \
    X(cuDeviceGetName)                                                         \
    X(cuDevicePrimaryCtxRetain)                                                \
    X(cuDevicePrimaryCtxRelease)                                               \
    X(cuCtxGetCurrent)                                                         \
    X(cuCtxSetCurrent)                                                         \
    X(cuCtxSynchronize)                                                        \
    X(cuModuleLoadDataEx)                                                      \
    X(cuModuleUnload)                                                          \
    X(cuModuleGetFunction)                                                     \
    X(cuFuncGetAttribute)                                                      \
    X(cuLaunchKernel)                                                          \
    X(cuMemAlloc)                                                              \
    X(cuMemFree)                                                               \
    X(cuMemcpyHtoD)                                                            \
    X(cuMemcpyDtoH)                                                            \
    X(cuMemcpyDtoD)                                                            \
    X(cuMemsetD8)                                                              \
    X(cuEventCreate)                                                           \
    X(cuEventRecord)                                                           \
    X(cuEventSynchronize)                                                      \
    X(cuEventElapsedTime)                                                      \
    X(cuEventDestroy)                                                          \
    X(cuMemsetD8Async)                                                         \
    X(cuStreamWaitEvent)                                                       \
    X(cuStreamSynchronize)                                                     \
    X(cuStreamCreate)                                                          \
    X(cuStreamDestroy)                                                         \
    X(cuLaunchHostFunc)

/* X(name): NVRTC functions (libnvrtc.so.*). */
#define KILN_NVRTC_FNS(X)                                                      \
    X(nvrtcGetErrorString)                                                     \
    X(nvrtcVersion)                                                            \
    X(nvrtcCreateProgram)                                                      \
    X(nvrtcDestroyProgram)                                                     \
    X(nvrtcCompileProgram)                                                     \
    X(nvrtcGetProgramLogSize)                                                  \
    X(nvrtcGetProgramLog)                                                      \
    X(nvrtcGetPTXSize)                                                         \
    X(nvrtcGetPTX)                                                             \
    X(nvrtcGetCUBINSize)                                                       \
    X(nvrtcGetCUBIN)

/* X(name): cuBLAS functions (libcublas.so.*, optional). */
#define KILN_CUBLAS_FNS(X)                                                     \
    X(cublasCreate_v2)                                                         \
    X(cublasDestroy_v2)                                                        \
    X(cublasSetStream_v2)                                                      \
    X(cublasGetStatusName)                                                     \
    X(cublasGemmEx)

/* Which libraries kiln__cuda_load must open. */
/* Bytes of one message about a library or a call (why a load failed, a
** checked call's failure), and of an architecture name ("sm_90"). */
#define KILN_CUDA_MSG_CAP 1024
#define KILN_CUDA_ARCH_CAP 16
/* Bytes of the driver's JIT error log kept for a failed module load. */
#define KILN_CUDA_JIT_LOG_CAP 2048

#define KILN_CUDA_LOAD_DRIVER 1u
#define KILN_CUDA_LOAD_NVRTC 2u
#define KILN_CUDA_LOAD_CUBLAS 4u /* optional: failure only recorded */

typedef struct kiln_cuda_api {
    void *h_cuda, *h_nvrtc, *h_cublas;      /* dlopen handles or NULL */
    char nvrtc_path[512], cublas_path[512]; /* what was opened ("" if not) */
    char cublas_why[256];                   /* why cuBLAS is absent */
    int nvrtc_major, nvrtc_minor;           /* from nvrtcVersion */
#define KILN_X_(name) __typeof__(name) *p_##name;
    KILN_CUDA_DRIVER_FNS(KILN_X_)
    KILN_NVRTC_FNS(KILN_X_)
    KILN_CUBLAS_FNS(KILN_X_)
#undef KILN_X_
} kiln_cuda_api;

/* Fill *api with the libraries named by `what`.  On failure returns
** KILN_ERR_BACKEND_UNAVAILABLE with a reason in err ("no driver (...)",
** "no NVRTC (...)"), and *api holds no open handle.  cuBLAS failing to load
** is not an error: api->h_cublas stays NULL and cublas_why says why.
** Environment overrides: KILN_LIBCUDA_PATH, KILN_NVRTC_PATH,
** KILN_CUBLAS_PATH (an explicit path that fails to load is an error for the
** driver and NVRTC, and "absent" for cuBLAS).  Does not call cuInit. */
kiln_status kiln__cuda_load(kiln_cuda_api *api, unsigned what, char *err,
                            size_t cap);
/* Close every handle (NULL-safe; the table is zeroed). */
void kiln__cuda_unload(kiln_cuda_api *api);

/* Turn a CUresult into a status + message ("cuda: CALL failed: NAME (STRING)
** [code N]") written to err (may be NULL) and recorded with kiln__err.
** CUDA_SUCCESS gives KILN_OK and touches nothing.  OUT_OF_MEMORY maps to
** KILN_ERR_NO_MEMORY, everything else to KILN_ERR_CUDA. */
kiln_status kiln__cu_check(const kiln_cuda_api *api, CUresult r,
                           const char *call, char *err, size_t cap);
/* Same for nvrtcResult (KILN_ERR_COMPILE). */
kiln_status kiln__nvrtc_check(const kiln_cuda_api *api, nvrtcResult r,
                              const char *call, char *err, size_t cap);
/* Same for cublasStatus_t (KILN_ERR_BACKEND). */
kiln_status kiln__cublas_check(const kiln_cuda_api *api, cublasStatus_t r,
                               const char *call, char *err, size_t cap);

/* Call through the table and check: KILN_CU(api, cuMemAlloc, (&p, n), err,
** cap) evaluates to a kiln_status; the message quotes "cuMemAlloc(&p, n)". */
#define KILN_CU(api, fn, args, err, cap)                                       \
    kiln__cu_check((api), (api)->p_##fn args, #fn #args, (err), (cap))
#define KILN_NVRTC(api, fn, args, err, cap)                                    \
    kiln__nvrtc_check((api), (api)->p_##fn args, #fn #args, (err), (cap))
#define KILN_CUBLAS(api, fn, args, err, cap)                                   \
    kiln__cublas_check((api), (api)->p_##fn args, #fn #args, (err), (cap))

/* snprintf into dst (cap bytes) that may truncate on purpose: messages
** are bounded.  NULL dst or cap 0 writes nothing. */
void kiln__cuda_fmt(char *dst, size_t cap, const char *f, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* KILN_CUDA_LOADER_H */
