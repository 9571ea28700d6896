/* compile_c.c - zero.h (with the implementation) and zero_offload.h as C11,
   warning-free under -Wall -Wextra -Werror -Wpedantic with gcc and clang.
   Linked with compile_c_user.c (the same headers without the implementation)
   it proves two translation units share one implementation. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"

#include <stdio.h>

int zero_user_tu(void); /* compile_c_user.c */

int main(void) {
    zero_config cfg = zero_config_default();
    zero_cpu_features f = zero_cpu_detect();
    zero_simd_level simd = zero_cpu_simd_level(&f);
    int threads = zero_cpu_threads(0, &cfg.log);
    int host_ranks = zero_cpu_host_ranks();
    printf("zero %d.%d.%d: %s; CPU optimizer %s, %d threads, %d logical cores, %d rank(s) on this host\n",
           ZERO_VERSION_MAJOR, ZERO_VERSION_MINOR, ZERO_VERSION_PATCH, zero_result_string(ZERO_OK),
           zero_simd_level_name(simd), threads, f.logical_cores, host_ranks);
    return (threads >= 1 && host_ranks >= 1 && zero_user_tu() == 0) ? 0 : 1;
}
