// cuda_check.cu - one .cu file with zero's CUDA backend, built by nvcc with
// nothing but `pkg-config --cflags --libs zero` (tests/consumer/run.sh): the
// installed zero.pc holds every include directory and library it needs.
// Compiled and linked, not run (no GPU needed).
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "zero_cuda.cuh"

#include <stdio.h>

int main(void) {
    printf("%s\n", zero_cuda_build_info());
    return 0;
}
