// compile_cpp.cpp - zero.h (with the implementation) and zero_offload.h as
// C++17, warning-free under -Wall -Wextra -Werror -Wpedantic with g++ and clang++.
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"

#include <cstdio>

int main() {
    zero_config cfg = zero_config_default();
    zero_cpu_features f = zero_cpu_detect();
    zero_simd_level simd = zero_cpu_simd_level(&f);
    int threads = zero_cpu_threads(0, &cfg.log);
    std::printf("zero %d.%d.%d (C++): CPU optimizer %s, %d threads, %d logical cores\n",
                ZERO_VERSION_MAJOR, ZERO_VERSION_MINOR, ZERO_VERSION_PATCH,
                zero_simd_level_name(simd), threads, f.logical_cores);
    return threads >= 1 ? 0 : 1;
}
