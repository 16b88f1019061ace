/*
** cuda.c -- the CUDA backend (work in progress: reports itself unavailable
** until the driver path lands).
*/
#include <stdio.h>

#include "internal.h"

static kiln_status cuda_open(int device, void **state, char *err, size_t cap)
{
    (void)device;
    (void)state;
    snprintf(err, cap, "cuda: backend not complete in this build");
    return KILN_ERR_BACKEND_UNAVAILABLE;
}

static const kiln_backend cuda_backend = {
    KILN_BACKEND_ABI_VERSION, sizeof(kiln_backend), "cuda", KILN_MEM_DEVICE,
    cuda_open, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

const kiln_backend *kiln__backend_cuda(void) { return &cuda_backend; }
