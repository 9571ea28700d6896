/* example_dtype.cuh - the element types the CUDA examples compute in (fp32,
   fp16, bf16 in memory; float in registers): cuBLAS's name for each, and the
   conversions, on the host and the device. examples/train_mlp.cu,
   examples/gpt and tests/gpu_gpt.cu share them. */
#ifndef EXAMPLE_DTYPE_CUH
#define EXAMPLE_DTYPE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>

template <typename T> struct ex_dtype;
template <> struct ex_dtype<float> {
    static constexpr cudaDataType_t cuda = CUDA_R_32F;
};
template <> struct ex_dtype<__half> {
    static constexpr cudaDataType_t cuda = CUDA_R_16F;
};
template <> struct ex_dtype<__nv_bfloat16> {
    static constexpr cudaDataType_t cuda = CUDA_R_16BF;
};

__host__ __device__ __forceinline__ float ex_f32(float x) { return x; }
__host__ __device__ __forceinline__ float ex_f32(__half x) { return __half2float(x); }
__host__ __device__ __forceinline__ float ex_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
/* round to nearest even */
template <typename T> __host__ __device__ __forceinline__ T ex_to(float x);
template <> __host__ __device__ __forceinline__ float ex_to<float>(float x) { return x; }
template <> __host__ __device__ __forceinline__ __half ex_to<__half>(float x) { return __float2half_rn(x); }
template <> __host__ __device__ __forceinline__ __nv_bfloat16 ex_to<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}

#endif /* EXAMPLE_DTYPE_CUH */
