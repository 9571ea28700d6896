/* bench.cuh - helpers shared by the benchmarks in examples/bench/ (not part of
   zero's API): error checks that stop the program, a spin kernel of known
   length, random fills, medians, and NCCL communicators of the benchmark's own
   made from the launcher's environment.

   Include after zero.h and zero_cuda.cuh. Every benchmark times with CUDA
   events after a warm-up and reports medians; inputs are random (never zeros). */
#ifndef ZERO_BENCH_CUH
#define ZERO_BENCH_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tool_args.h" /* the flags' numbers, range-checked */

#include <algorithm>
#include <vector>

#include <cuda_fp16.h>

int bench_rank = 0; /* for error messages */

/* ---- checks: a benchmark stops at the first failure, saying where ---- */

#define BENCH_CUDA(call) bench_cuda_check((call), #call, __FILE__, __LINE__)
static inline void bench_cuda_check(cudaError_t e, const char *what, const char *file, int line) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "[bench][rank %d] %s:%d: %s: %s (%s)\n", bench_rank, file, line, what, cudaGetErrorName(e),
            cudaGetErrorString(e));
    exit(1);
}

#define BENCH_NCCL(call) bench_nccl_check((call), #call, __FILE__, __LINE__)
static inline void bench_nccl_check(ncclResult_t r, const char *what, const char *file, int line) {
    if (r == ncclSuccess) return;
    fprintf(stderr, "[bench][rank %d] %s:%d: %s: NCCL error %d (%s)\n", bench_rank, file, line, what, (int)r,
            ncclGetErrorString(r));
    exit(1);
}

/* a zero call with a zero_error */
#define BENCH_ZERO(call, err) bench_zero_check((call), #call, (err), __FILE__, __LINE__)
static inline void bench_zero_check(zero_result r, const char *what, const zero_error *err, const char *file, int line) {
    if (r == ZERO_OK) return;
    fprintf(stderr, "[bench][rank %d] %s:%d: %s: %s\n%s\n", bench_rank, file, line, what, zero_result_string(r),
            err ? err->msg : "");
    exit(1);
}

/* an engine call: the engine's last error */
#define BENCH_ENG(call, e) bench_eng_check((call), #call, (e), __FILE__, __LINE__)
static inline void bench_eng_check(zero_result r, const char *what, const zero_engine *e, const char *file, int line) {
    if (r == ZERO_OK) return;
    fprintf(stderr, "[bench][rank %d] %s:%d: %s: %s\n%s\n", bench_rank, file, line, what, zero_result_string(r),
            zero_engine_error(e)->msg);
    exit(1);
}

static inline void *bench_ptr(void *p, const char *what, const zero_engine *e) {
    if (!p) {
        fprintf(stderr, "[bench][rank %d] %s returned NULL: %s\n", bench_rank, what, zero_engine_error(e)->msg);
        exit(1);
    }
    return p;
}

static inline double bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double bench_median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- kernels ---- */

__device__ __forceinline__ uint64_t bench_globaltimer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Each block's first thread spins for ns nanoseconds of the global timer: a
   "compute" kernel of known length that holds one warp per block. */
__global__ void bench_spin(uint64_t ns) {
    if (threadIdx.x != 0) return;
    uint64_t t0 = bench_globaltimer();
    while (bench_globaltimer() - t0 < ns) {
    }
}

__device__ __forceinline__ uint32_t bench_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

/* p[i] = bias + amp * u, u uniform in [-1, 1) from a hash of (seed, i) */
template <typename T> __global__ void bench_fill_k(T *p, size_t n, uint64_t seed, float bias, float amp) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        float u = (float)(bench_hash(seed * 0x9E3779B97F4A7C15ULL + i) >> 8) * (1.0f / 8388608.0f) - 1.0f;
        p[i] = (T)(bias + amp * u);
    }
}

static inline int bench_sm_count(void) {
    int dev = 0, sms = 0;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
}

/* n elements of dtype dt (fp32, fp16 or bf16) at p: random in bias +- amp */
static inline void bench_fill(void *p, size_t n, zero_dtype dt, uint64_t seed, float bias, float amp,
                              cudaStream_t s) {
    static int grid = 0;
    if (!grid) grid = bench_sm_count() * 8;
    size_t want = (n + 255) / 256;
    int g = want < (size_t)grid ? (int)want : grid;
    if (g < 1) g = 1;
    if (dt == ZERO_DTYPE_FP16)
        bench_fill_k<__half><<<g, 256, 0, s>>>((__half *)p, n, seed, bias, amp);
    else if (dt == ZERO_DTYPE_BF16)
        bench_fill_k<__nv_bfloat16><<<g, 256, 0, s>>>((__nv_bfloat16 *)p, n, seed, bias, amp);
    else
        bench_fill_k<float><<<g, 256, 0, s>>>((float *)p, n, seed, bias, amp);
    BENCH_CUDA(cudaGetLastError());
}

/* ---- communicators of the benchmark's own ----

   n NCCL communicators over the ranks of env (ids from rank 0 through zero's
   TCP bootstrap, one exchange for all of them), each made with NCCL's default
   (blocking) configuration, as nccl-tests makes its own. The caller has
   selected its GPU. */
/* One process per GPU: started by hand, zero_cuda_launch_local forks them. In
   the parent the worst child's exit status (>= 0, main returns it); in a rank
   -1. Lines of output are not lost when a rank dies. */
static inline int bench_launch(void) {
    zero_error err;
    int code = -1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    BENCH_ZERO(zero_cuda_launch_local(&code, &err), &err);
    return code;
}

static inline void bench_comms(const zero_dist_env *env, int n, ncclComm_t *out) {
    std::vector<ncclUniqueId> ids((size_t)n);
    zero_error err;
    memset(ids.data(), 0, sizeof(ncclUniqueId) * (size_t)n);
    if (env->rank == 0)
        for (int i = 0; i < n; i++) BENCH_NCCL(ncclGetUniqueId(&ids[(size_t)i]));
    if (env->world > 1)
        BENCH_ZERO(zero_bootstrap_exchange(env, ids.data(), sizeof(ncclUniqueId) * (size_t)n, 120.0, &err), &err);
    for (int i = 0; i < n; i++) BENCH_NCCL(ncclCommInitRank(&out[i], env->world, ids[(size_t)i], env->rank));
}

/* Line up the ranks' GPUs before a timed region: a one-element all-reduce
   (both GPUs leave it within microseconds of each other), then a spin of
   pre_ns while the host queues the timed work, so neither the other rank's
   late start nor this host's launch time lands inside the measurement. */
static inline void bench_align(ncclComm_t comm, float *d_one, cudaStream_t s, uint64_t pre_ns) {
    if (comm) BENCH_NCCL(ncclAllReduce(d_one, d_one, 1, ncclFloat32, ncclSum, comm, s));
    bench_spin<<<1, 32, 0, s>>>(pre_ns);
    BENCH_CUDA(cudaGetLastError());
}

/* element-wise max over ranks of n doubles (in place, host memory) */
static inline void bench_max_over_ranks(ncclComm_t comm, double *v, int n, cudaStream_t s) {
    double *d;
    if (!comm) return;
    BENCH_CUDA(cudaMalloc(&d, sizeof(double) * (size_t)n));
    BENCH_CUDA(cudaMemcpyAsync(d, v, sizeof(double) * (size_t)n, cudaMemcpyHostToDevice, s));
    BENCH_NCCL(ncclAllReduce(d, d, (size_t)n, ncclFloat64, ncclMax, comm, s));
    BENCH_CUDA(cudaMemcpyAsync(v, d, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost, s));
    BENCH_CUDA(cudaStreamSynchronize(s));
    BENCH_CUDA(cudaFree(d));
}

/* milliseconds between event pairs a[i] -> b[i], i >= skip */
static inline std::vector<double> bench_event_ms(const std::vector<cudaEvent_t> &a, const std::vector<cudaEvent_t> &b,
                                                 int from, int to) {
    std::vector<double> out;
    for (int i = from; i < to; i++) {
        float ms = 0;
        BENCH_CUDA(cudaEventSynchronize(b[(size_t)i]));
        BENCH_CUDA(cudaEventElapsedTime(&ms, a[(size_t)i], b[(size_t)i]));
        out.push_back((double)ms);
    }
    return out;
}

static inline void bench_events(std::vector<cudaEvent_t> &v, int n) {
    v.resize((size_t)n);
    for (int i = 0; i < n; i++) BENCH_CUDA(cudaEventCreate(&v[(size_t)i]));
}
static inline void bench_events_free(std::vector<cudaEvent_t> &v) {
    for (size_t i = 0; i < v.size(); i++) cudaEventDestroy(v[i]);
    v.clear();
}

static inline void bench_device_line(const char *prefix) {
    int dev = 0, nccl = 0, rt = 0, drv = 0;
    cudaDeviceProp p;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaGetDeviceProperties(&p, dev));
    ncclGetVersion(&nccl);
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    printf("%sdevice: %s (sm_%d%d, %d SMs, %.0f GiB); CUDA runtime %d.%d, driver %d.%d; NCCL %d.%d.%d\n", prefix,
           p.name, p.major, p.minor, p.multiProcessorCount, (double)p.totalGlobalMem / (1024.0 * 1024 * 1024),
           rt / 1000, (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10, nccl / 10000, (nccl / 100) % 100, nccl % 100);
    printf("%sbuild: %s\n", prefix, zero_cuda_build_info());
}

/* ---- flags: tool_args.h's checks, one line on stderr and 1 on a bad value ---- */

/* a whole number in [lo, hi] into an int */
static inline int bench_int(const char *tool, const char *flag, const char *v, long long lo, long long hi, int *out) {
    long long n = 0;
    if (tool_int(tool, flag, v, lo, hi, &n)) return 1;
    *out = (int)n;
    return 0;
}

/* Bytes: "4096", "16M", "1G", "1.5K" (K, M, G = 2^10, 2^20, 2^30, any case),
   a whole number of bytes in [lo, hi]. */
static inline int bench_size(const char *tool, const char *flag, const char *s, size_t lo, size_t hi, size_t *out) {
    static const char what[] = "a size such as 4096, 64K, 16M or 1G";
    char range[96], buf[64];
    size_t n;
    double v, mult = 1;
    snprintf(range, sizeof range, "%zu to %zu bytes", lo, hi);
    if (!s) return tool_fail(tool, flag, "missing value (%s, %s)", what, range);
    if (!*s) return tool_fail(tool, flag, "empty value (%s, %s)", what, range);
    n = strlen(s);
    if (n >= sizeof buf) return tool_fail(tool, flag, "'%.40s...' is not %s (%s)", s, what, range);
    memcpy(buf, s, n + 1);
    switch (buf[n - 1]) {
    case 'K': case 'k': mult = 1024.0; buf[--n] = 0; break;
    case 'M': case 'm': mult = 1024.0 * 1024; buf[--n] = 0; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; buf[--n] = 0; break;
    default: break;
    }
    if (n == 0 || tool__scan(buf) != n) return tool_fail(tool, flag, "'%s' is not %s (%s)", s, what, range);
    v = strtod(buf, NULL) * mult;
    if (!(v >= (double)lo && v <= (double)hi)) return tool_fail(tool, flag, "%s is out of range (%s)", s, range);
    if (v != floor(v)) return tool_fail(tool, flag, "'%s' is not a whole number of bytes (%s)", s, range);
    *out = (size_t)v;
    return 0;
}

#endif /* ZERO_BENCH_CUH */
