/*
** cuda_backend.h -- the cuda backend's instance and kernel, shared by its
** two files: cuda.c (open, compile, memory, the kernel database) and
** cuda_launch.c (launch).  Private to them; cuda.c's header comment states
** the backend's rules (one instance per device, what `lock` guards).
*/
#ifndef KILN_CUDA_BACKEND_H
#define KILN_CUDA_BACKEND_H

#include <pthread.h>

#include "backends/cuda_codegen.h"
#include "backends/cuda_loader.h"

#define KILN_CUDA_NAME_CAP 128 /* bytes of a device name (cut to fit) */

/* One open backend instance: immutable after open() except for the shared
** resources below `lock`. */
typedef struct kiln_cuda_state {
    kiln_cuda_api api;
    int ordinal;
    CUdevice dev;
    CUcontext ctx;      /* the device's primary context (retained) */
    int cc_major, cc_minor, sms;
    char arch[KILN_CUDA_ARCH_CAP]; /* "sm_90" */
    char name[KILN_CUDA_NAME_CAP]; /* the device's name (cuDeviceGetName) */
    int sync;           /* KILN_CUDA_SYNC=1 */
    pthread_mutex_t lock;
    CUdeviceptr scratch;
    size_t scratch_bytes;
    cublasHandle_t blas;
    CUevent shared_ev;      /* recorded after the last use of scratch/blas */
    CUstream shared_stream; /* the stream that recorded it */
    int shared_used;        /* shared_ev has been recorded */
} kiln_cuda_state;

/* A compiled kernel: a module of the instance `owner`, or the cuBLAS path. */
typedef struct kiln_cuda_kernel {
    const kiln_cuda_state *owner; /* launching on another instance is refused */
    CUmodule mod;
    CUfunction fmain, ffinish;
    kiln_cuda_kinfo info;
    int cublas;              /* MATMUL_FALLBACK through cublasGemmEx */
    /* kept for serialize (the kernel database) */
    char *image;             /* cubin, or PTX (NUL-terminated) */
    size_t image_n;
    int ptx;
    char flags[sizeof ((kiln_kernel_out *)0)->flags];
    char path[sizeof ((kiln_kernel_out *)0)->path];
} kiln_cuda_kernel;

/* Make the instance's context current on this thread (cuda.c). */
kiln_status kiln__cuda_enter(kiln_cuda_state *st, char *err, size_t cap);

/* The backend's launch() (cuda_launch.c; kiln_backend.h for the contract). */
kiln_status kiln__cuda_launch(void *state, void *handle, kiln_launch *L,
                              char *err, size_t cap);

#endif /* KILN_CUDA_BACKEND_H */
