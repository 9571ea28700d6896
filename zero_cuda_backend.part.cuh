/* zero_cuda_backend.part.cuh: a part of zero_cuda.cuh in development (inlined before it lands) */
