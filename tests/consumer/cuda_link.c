/* cuda_link.c - CUDA's runtime and NCCL called from plain C through CMake's
   zero::cuda (tests/consumer/CMakeLists.txt): its include directories and
   libraries are complete. Built, not run (no GPU needed). */
#include "zero.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>

int main(void) {
    int cuda = 0, nccl = 0;
    cudaRuntimeGetVersion(&cuda);
    ncclGetVersion(&nccl);
    printf("zero %d.%d.%d, CUDA runtime %d, NCCL %d\n", ZERO_VERSION_MAJOR, ZERO_VERSION_MINOR,
           ZERO_VERSION_PATCH, cuda, nccl);
    return 0;
}
