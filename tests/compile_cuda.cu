// compile_cuda.cu - zero.h (with the implementation), zero_offload.h and
// zero_cuda.cuh under nvcc -std=c++17 -Wall -Wextra -Werror. `make test` only
// compiles it; linked (nvcc ... -lnccl) and run it checks the status helpers
// and queries GPU 0, printing the device or the error. Exit 0 with or without
// a GPU: only a wrong answer fails it. Run alone (GPU machine): make test-gpu
// T=compile_cuda
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "zero_cuda.cuh"
#include "zero_test.h"

// ZERO_CUDA_TRY / ZERO_NCCL_TRY must return from here on failure: *reached
// counts the statements after the macro.
static zero_result cuda_try(cudaError_t e, int *reached, zero_error *err) {
    ZERO_CUDA_TRY(e, err);
    (*reached)++;
    return ZERO_OK;
}
#ifndef ZERO_NO_NCCL
static zero_result nccl_try(ncclResult_t r, int *reached, zero_error *err) {
    ZERO_NCCL_TRY(r, err);
    (*reached)++;
    return ZERO_OK;
}
#endif

static void test_cuda_check() {
    zero_error err;
    int reached = 0;
    CHECK_EQ_INT(zero_cuda_check(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "train.cu", 42, &err),
                 ZERO_ERR_CUDA);
    CHECK_EQ_INT(err.code, ZERO_ERR_CUDA);
    CHECK_EQ_INT(err.item, ZERO_MSG_CUDA_OUT_OF_MEMORY);
    CHECK_STR_CONTAINS(err.msg, "train.cu:42: cudaMalloc(&p, n): cudaErrorMemoryAllocation (");
    CHECK_STR_CONTAINS(err.msg, cudaGetErrorString(cudaErrorMemoryAllocation));
    CHECK_STR_CONTAINS(err.msg, "\nHINT: ");
    CHECK_STR_CONTAINS(err.msg, "offload");

    CHECK_EQ_INT(zero_cuda_check(cudaErrorNoDevice, "cudaSetDevice(0)", "a.cu", 1, &err), ZERO_ERR_CUDA);
    CHECK_EQ_INT(err.item, ZERO_MSG_CUDA_NO_DEVICE);
    CHECK_STR_CONTAINS(err.msg, "cudaErrorNoDevice");
    CHECK_STR_CONTAINS(err.msg, "CUDA_VISIBLE_DEVICES");
    CHECK_EQ_INT(zero_cuda_check(cudaErrorInsufficientDriver, "x", "a.cu", 2, &err), ZERO_ERR_CUDA);
    CHECK_EQ_INT(err.item, ZERO_MSG_CUDA_NO_DEVICE);
    CHECK_STR_CONTAINS(err.msg, "HINT: ");
    CHECK_STR_CONTAINS(err.msg, "driver");

    // others: the call and CUDA's words, no hint; what and file may be NULL
    CHECK_EQ_INT(zero_cuda_check(cudaErrorLaunchFailure, NULL, NULL, 0, &err), ZERO_ERR_CUDA);
    CHECK_EQ_INT(err.item, ZERO_MSG_CUDA_CALL);
    CHECK(strncmp(err.msg, "cudaErrorLaunchFailure (", 24) == 0);
    CHECK(strstr(err.msg, "HINT") == NULL);
    CHECK_EQ_INT(zero_cuda_check(cudaErrorLaunchFailure, "k<<<1, 1>>>", NULL, 0, NULL), ZERO_ERR_CUDA);

    // success clears err
    CHECK_EQ_INT(zero_cuda_check(cudaSuccess, "x", "a.cu", 3, &err), ZERO_OK);
    CHECK_EQ_INT(err.code, ZERO_OK);
    CHECK_EQ_INT(err.item, ZERO_MSG_NONE);
    CHECK(err.msg[0] == 0);

    // the macro returns the error upward and skips the rest
    CHECK_EQ_INT(cuda_try(cudaErrorMemoryAllocation, &reached, &err), ZERO_ERR_CUDA);
    CHECK_EQ_INT(reached, 0);
    CHECK_STR_CONTAINS(err.msg, "compile_cuda.cu:");
    CHECK_STR_CONTAINS(err.msg, ": e: cudaErrorMemoryAllocation");
    CHECK_EQ_INT(cuda_try(cudaSuccess, &reached, &err), ZERO_OK);
    CHECK_EQ_INT(reached, 1);
}

static void test_nccl_check() {
#ifndef ZERO_NO_NCCL
    zero_error err;
    int reached = 0;
    CHECK_EQ_INT(zero_nccl_check(ncclSystemError, "ncclAllReduce(...)", "dp.cu", 7, &err), ZERO_ERR_NCCL);
    CHECK_EQ_INT(err.code, ZERO_ERR_NCCL);
    CHECK_EQ_INT(err.item, ZERO_MSG_NCCL_CALL);
    CHECK_STR_CONTAINS(err.msg, "dp.cu:7: ncclAllReduce(...): NCCL error 2 (");
    CHECK_STR_CONTAINS(err.msg, ncclGetErrorString(ncclSystemError));
    CHECK_STR_CONTAINS(err.msg, "\nHINT: ");
    CHECK_STR_CONTAINS(err.msg, "/dev/shm");
    CHECK_EQ_INT(zero_nccl_check(ncclInvalidArgument, NULL, NULL, 0, &err), ZERO_ERR_NCCL);
    CHECK_STR_CONTAINS(err.msg, "NCCL_DEBUG");
    CHECK_EQ_INT(zero_nccl_check(ncclSuccess, "x", "a.cu", 1, &err), ZERO_OK);
    CHECK_EQ_INT(err.item, ZERO_MSG_NONE);
    CHECK_EQ_INT(nccl_try(ncclInternalError, &reached, &err), ZERO_ERR_NCCL);
    CHECK_EQ_INT(reached, 0);
    CHECK_EQ_INT(nccl_try(ncclSuccess, &reached, &err), ZERO_OK);
    CHECK_EQ_INT(reached, 1);
#endif
}

static void test_build_info() {
    const char *b = zero_cuda_build_info();
    printf("build: %s\n", b);
    CHECK_STR_CONTAINS(b, "zero 0.");
    CHECK_STR_CONTAINS(b, "CUDART_VERSION " ZERO__STR(CUDART_VERSION));
#ifdef ZERO_NO_NCCL
    CHECK_STR_CONTAINS(b, "no NCCL");
#else
    CHECK_STR_CONTAINS(b, "NCCL " ZERO__STR(NCCL_MAJOR) ".");
#endif
#ifdef __CUDA_ARCH_LIST__
    CHECK_STR_CONTAINS(b, "__CUDA_ARCH_LIST__ ");
#endif
}

static void test_device_query() {
    zero_cuda_device_info info;
    zero_error err;
    zero_result r;
    int before = -1, after = -1;

    CHECK_EQ_INT(zero_cuda_device_query(0, NULL, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(err.item, ZERO_MSG_NULL_ARG);
    CHECK_EQ_INT(zero_cuda_device_query(-1, &info, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(err.item, ZERO_MSG_BAD_ARG);

    r = zero_cuda_device_query(0, &info, &err);
    CHECK_EQ_INT(info.runtime_version, CUDART_VERSION);
#ifndef ZERO_NO_NCCL
    CHECK(info.nccl_version > 0);
#else
    CHECK_EQ_INT(info.nccl_version, 0);
#endif
    if (r == ZERO_OK) {
        printf("GPU 0: %s, sm_%d%d, %d SMs, %.1f of %.1f GiB free, driver %d, runtime %d, NCCL %d\n",
               info.name, info.major, info.minor, info.sm_count, info.free_bytes / 1073741824.0,
               info.total_bytes / 1073741824.0, info.driver_version, info.runtime_version,
               info.nccl_version);
        CHECK_EQ_INT(err.code, ZERO_OK);
        CHECK(info.name[0] != 0);
        CHECK(info.major >= 1);
        CHECK(info.sm_count > 0);
        CHECK(info.total_bytes > 0);
        CHECK(info.free_bytes > 0 && info.free_bytes <= info.total_bytes);
        CHECK(info.driver_version >= 1000);
        // an ordinal past the last GPU: a clear error, the current device kept
        CHECK(cudaGetDevice(&before) == cudaSuccess);
        CHECK_EQ_INT(zero_cuda_device_query(4096, &info, &err), ZERO_ERR_CUDA);
        CHECK_EQ_INT(err.item, ZERO_MSG_CUDA_NO_DEVICE);
        CHECK_STR_CONTAINS(err.msg, "GPU 4096 asked for");
        CHECK_STR_CONTAINS(err.msg, "HINT: ");
        CHECK(cudaGetDevice(&after) == cudaSuccess);
        CHECK_EQ_INT(after, before);
    } else {
        printf("no GPU: %s\n", err.msg);
        CHECK_EQ_INT(r, ZERO_ERR_CUDA);
        CHECK_EQ_INT(err.code, ZERO_ERR_CUDA);
        CHECK_EQ_INT(err.item, ZERO_MSG_CUDA_NO_DEVICE);
        CHECK_STR_CONTAINS(err.msg, "cudaGetDeviceCount");
        CHECK_STR_CONTAINS(err.msg, "HINT: ");
        CHECK(info.name[0] == 0);
    }
}

int main() {
    zero_cpu_features f = zero_cpu_detect();
    (void)zt_near;  // harness helpers this program has no use for
    (void)zt_rand_range;
    (void)zt_rand_int;
    (void)zt_seed;
    printf("host CPU: %s, %d logical cores\n", zero_simd_level_name(zero_cpu_simd_level(&f)),
           f.logical_cores);
    test_cuda_check();
    test_nccl_check();
    test_build_info();
    test_device_query();
    return zt_finish();
}
