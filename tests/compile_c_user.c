/* compile_c_user.c - a second translation unit: zero.h and zero_offload.h
   without ZERO_IMPLEMENTATION, calling functions that compile_c.c defines. */
#include "zero.h"
#include "zero_offload.h"

int zero_user_tu(void);

int zero_user_tu(void) {
    zero_config cfg = zero_config_default();
    zero_cpu_features f = zero_cpu_detect();
    if (f.logical_cores < 1) return 1;
    if (zero_simd_level_name(zero_cpu_simd_level(NULL))[0] == 0) return 2;
    if (zero_cpu_threads(2, &cfg.log) != 2) return 3;
    if (zero_result_string(ZERO_ERR_CUDA)[0] == 0) return 4;
    return 0;
}
