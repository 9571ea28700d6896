/* bench_beside.cu - what NCCL's collectives cost the GEMMs beside them, and
   how NCCL's ways of running them compare (docs/PERF.md 5j).

       make build/bench/bench_beside
       build/bench/bench_beside [--gemms N] [--colls N] [--shard ELEMS] [-n reps]

   One process drives every visible GPU (a communicator each, made in one
   group), so the ranks issue in lockstep: what is measured is the
   collectives' cost to the GEMMs, not one rank waiting for another. On each
   GPU a compute stream runs N bf16 GEMMs of GPT-2 XL's shape (8192 x 6400 x
   1600, cuBLAS) and a communication stream of the highest priority runs
   --colls all-gathers (each rank sends --shard bf16 elements) or
   reduce-scatters (each rank keeps --shard), enqueued interleaved so that
   neither waits on the host. Each way of running the collectives is timed
   alone, then beside the GEMMs; the GEMMs alone once. Median of -n
   repetitions after a warm-up, CUDA events on GPU 0.

   The ways (each its own communicator):
     kernel               NCCL's default (cudaMalloc buffers)
     symmetric windows    the buffers from ncclMemAlloc, registered with
                          ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC)
     copy engine          CTAPolicy NCCL_CTA_POLICY_ZERO on symmetric windows:
                          NCCL's copy-engine all-gather (NCCL >= 2.28, one
                          node); no reduce-scatter that way
     efficiency           CTAPolicy NCCL_CTA_POLICY_EFFICIENCY
     maxCTAs 8, 16        the communicator's config.maxCTAs
   Every all-gather way is checked against the ranks' known fills first.
   Exit 0; 1 a CUDA/NCCL/cuBLAS error or a wrong result; 2 usage; 77 fewer
   than 2 GPUs or an NCCL older than 2.28 (skipped). */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "../tool_args.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define BB_CUDA(x) bb_check_cuda((x), #x, __LINE__)
#define BB_NCCL(x) bb_check_nccl((x), #x, __LINE__)
#define BB_BLAS(x) bb_check_blas((x), #x, __LINE__)
static void bb_check_cuda(cudaError_t e, const char *what, int line) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "bench_beside:%d: %s: %s\n", line, what, cudaGetErrorString(e));
    exit(1);
}
static void bb_check_nccl(ncclResult_t r, const char *what, int line) {
    if (r == ncclSuccess) return;
    fprintf(stderr, "bench_beside:%d: %s: %s\n", line, what, ncclGetErrorString(r));
    exit(1);
}
static void bb_check_blas(cublasStatus_t s, const char *what, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    fprintf(stderr, "bench_beside:%d: %s: cuBLAS status %d\n", line, what, (int)s);
    exit(1);
}

#if NCCL_VERSION_CODE >= 22800
enum { BB_MAXG = 8, BB_WAYS = 6, BB_M = 8192, BB_N = 6400, BB_K = 1600 };
enum { W_KERNEL, W_SYMMETRIC, W_COPY_ENGINE, W_EFFICIENCY, W_CTAS8, W_CTAS16 };
static const char *const bb_way[BB_WAYS] = {"kernel", "symmetric windows", "copy engine (CTA policy zero)",
                                            "efficiency (CTA policy)", "maxCTAs 8", "maxCTAs 16"};
static int G;
static size_t shard;
static cudaStream_t cs[BB_MAXG], ms[BB_MAXG];
static cublasHandle_t hb[BB_MAXG];
static void *A[BB_MAXG], *B[BB_MAXG], *C[BB_MAXG];
struct bb_way_bufs {
    ncclComm_t comm[BB_MAXG];
    void *small[BB_MAXG], *big[BB_MAXG]; /* shard and G x shard bf16 elements */
};
static bb_way_bufs way[BB_WAYS];

static __global__ void bb_fill(__nv_bfloat16 *p, size_t n, int r) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16((float)(r * 7 + (int)(i % 97)));
}
static void bb_gemm(void) {
    const float one = 1, zero = 0;
    for (int d = 0; d < G; d++) {
        BB_CUDA(cudaSetDevice(d));
        BB_BLAS(cublasGemmEx(hb[d], CUBLAS_OP_N, CUBLAS_OP_N, BB_N, BB_M, BB_K, &one, B[d], CUDA_R_16BF, BB_N, A[d],
                             CUDA_R_16BF, BB_K, &zero, C[d], CUDA_R_16BF, BB_N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
}
static void bb_coll(const bb_way_bufs *w, int rs, int n) {
    for (int i = 0; i < n; i++) {
        BB_NCCL(ncclGroupStart());
        for (int d = 0; d < G; d++)
            if (rs) BB_NCCL(ncclReduceScatter(w->big[d], w->small[d], shard, ncclBfloat16, ncclSum, w->comm[d], ms[d]));
            else BB_NCCL(ncclAllGather(w->small[d], w->big[d], shard, ncclBfloat16, w->comm[d], ms[d]));
        BB_NCCL(ncclGroupEnd());
    }
}
struct bb_ms { double gemm, coll; };
/* ngemm GEMMs and ncoll collectives started together, interleaved on the host; medians on GPU 0 */
static bb_ms bb_run(const bb_way_bufs *w, int rs, int ngemm, int ncoll, int reps) {
    std::vector<double> a, b;
    cudaEvent_t e0[BB_MAXG], e1[BB_MAXG], e2[BB_MAXG];
    for (int d = 0; d < G; d++) {
        BB_CUDA(cudaSetDevice(d));
        BB_CUDA(cudaEventCreate(&e0[d])), BB_CUDA(cudaEventCreate(&e1[d])), BB_CUDA(cudaEventCreate(&e2[d]));
    }
    for (int rep = 0; rep <= reps; rep++) { /* rep 0: warm-up */
        for (int d = 0; d < G; d++) {
            BB_CUDA(cudaSetDevice(d));
            BB_CUDA(cudaDeviceSynchronize());
            BB_CUDA(cudaEventRecord(e0[d], cs[d]));
            BB_CUDA(cudaStreamWaitEvent(ms[d], e0[d], 0));
        }
        for (int i = 0, done = 0; i < std::max(ngemm, 1); i++) {
            int upto = ngemm ? (int)((long long)ncoll * (i + 1) / ngemm) : ncoll;
            if (upto > done) bb_coll(w, rs, upto - done), done = upto;
            if (ngemm) bb_gemm();
        }
        for (int d = 0; d < G; d++) {
            BB_CUDA(cudaSetDevice(d));
            BB_CUDA(cudaEventRecord(e1[d], cs[d]));
            BB_CUDA(cudaEventRecord(e2[d], ms[d]));
        }
        for (int d = 0; d < G; d++) BB_CUDA(cudaSetDevice(d)), BB_CUDA(cudaDeviceSynchronize());
        float t1, t2;
        BB_CUDA(cudaSetDevice(0));
        BB_CUDA(cudaEventElapsedTime(&t1, e0[0], e1[0]));
        BB_CUDA(cudaEventElapsedTime(&t2, e0[0], e2[0]));
        if (rep) a.push_back(t1), b.push_back(t2);
    }
    for (int d = 0; d < G; d++) {
        BB_CUDA(cudaSetDevice(d));
        BB_CUDA(cudaEventDestroy(e0[d])), BB_CUDA(cudaEventDestroy(e1[d])), BB_CUDA(cudaEventDestroy(e2[d]));
    }
    std::sort(a.begin(), a.end()), std::sort(b.begin(), b.end());
    return bb_ms{a[a.size() / 2], b[b.size() / 2]};
}
/* the all-gather of way w against the fills (rank r's shard holds r * 7 + i % 97), then its
   reduce-scatter of what it gathered (rank d keeps G (d * 7 + i % 97), within bf16's rounding) */
static int bb_wrong(const bb_way_bufs *w, int check_rs) {
    std::vector<__nv_bfloat16> h(shard * G);
    int bad = 0;
    for (int d = 0; d < G; d++) {
        BB_CUDA(cudaSetDevice(d));
        BB_CUDA(cudaMemset(w->big[d], 0, shard * 2 * G));
        bb_fill<<<256, 256, 0, ms[d]>>>((__nv_bfloat16 *)w->small[d], shard, d);
        BB_CUDA(cudaGetLastError());
    }
    bb_coll(w, 0, 1);
    for (int d = 0; d < G; d++) {
        BB_CUDA(cudaSetDevice(d));
        BB_CUDA(cudaStreamSynchronize(ms[d]));
        BB_CUDA(cudaMemcpy(h.data(), w->big[d], h.size() * 2, cudaMemcpyDeviceToHost));
        for (int r = 0; r < G; r++)
            for (size_t i = 0; i < shard; i++)
                if (__bfloat162float(h[r * shard + i]) != (float)(r * 7 + (int)(i % 97))) bad++;
    }
    if (!check_rs) return bad;
    bb_coll(w, 1, 1);
    for (int d = 0; d < G; d++) {
        BB_CUDA(cudaSetDevice(d));
        BB_CUDA(cudaStreamSynchronize(ms[d]));
        BB_CUDA(cudaMemcpy(h.data(), w->small[d], shard * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < shard; i++) {
            float want = (float)G * (float)(d * 7 + (int)(i % 97)), got = __bfloat162float(h[i]);
            if (!(got >= want - 0.01f * want - 0.5f && got <= want + 0.01f * want + 0.5f)) bad++;
        }
    }
    return bad;
}

static int bb_main(int ngemm, int ncoll, int reps) {
    int v = 0, lo = 0, hi = 0;
    if (cudaGetDeviceCount(&G) != cudaSuccess) G = 0; /* no GPU, or no driver: skipped, as below */
    if (G < 2) {
        printf("bench_beside: needs 2 or more GPUs, %d visible: skipped\n", G);
        return 77;
    }
    if (G > BB_MAXG) G = BB_MAXG;
    BB_NCCL(ncclGetVersion(&v));
    if (v < 22800) {
        printf("bench_beside: NCCL %d at run time, the CTA policies and windows need 2.28: skipped\n", v);
        return 77;
    }
    for (int d = 0; d < G; d++) {
        BB_CUDA(cudaSetDevice(d));
        BB_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
        BB_CUDA(cudaStreamCreateWithFlags(&cs[d], cudaStreamNonBlocking));
        BB_CUDA(cudaStreamCreateWithPriority(&ms[d], cudaStreamNonBlocking, hi));
        BB_BLAS(cublasCreate(&hb[d]));
        BB_BLAS(cublasSetStream(hb[d], cs[d]));
        BB_CUDA(cudaMalloc(&A[d], (size_t)BB_M * BB_K * 2));
        BB_CUDA(cudaMalloc(&B[d], (size_t)BB_K * BB_N * 2));
        BB_CUDA(cudaMalloc(&C[d], (size_t)BB_M * BB_N * 2));
        bb_fill<<<256, 256>>>((__nv_bfloat16 *)A[d], (size_t)BB_M * BB_K, 1);
        bb_fill<<<256, 256>>>((__nv_bfloat16 *)B[d], (size_t)BB_K * BB_N, 2);
        BB_CUDA(cudaGetLastError());
    }
    for (int k = 0; k < BB_WAYS; k++) {
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        ncclUniqueId id;
        int windows = k == W_SYMMETRIC || k == W_COPY_ENGINE;
        if (k == W_COPY_ENGINE) cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
        if (k == W_EFFICIENCY) cfg.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
        if (k == W_CTAS8) cfg.maxCTAs = 8;
        if (k == W_CTAS16) cfg.maxCTAs = 16;
        BB_NCCL(ncclGetUniqueId(&id));
        BB_NCCL(ncclGroupStart());
        for (int d = 0; d < G; d++) {
            BB_CUDA(cudaSetDevice(d));
            BB_NCCL(ncclCommInitRankConfig(&way[k].comm[d], G, id, d, &cfg));
        }
        BB_NCCL(ncclGroupEnd());
        for (int d = 0; d < G; d++) {
            BB_CUDA(cudaSetDevice(d));
            if (windows) {
                BB_NCCL(ncclMemAlloc(&way[k].small[d], shard * 2));
                BB_NCCL(ncclMemAlloc(&way[k].big[d], shard * 2 * G));
            } else {
                BB_CUDA(cudaMalloc(&way[k].small[d], shard * 2));
                BB_CUDA(cudaMalloc(&way[k].big[d], shard * 2 * G));
            }
        }
        if (windows) {
            ncclWindow_t ws, wb;
            BB_NCCL(ncclGroupStart());
            for (int d = 0; d < G; d++) {
                BB_CUDA(cudaSetDevice(d));
                BB_NCCL(ncclCommWindowRegister(way[k].comm[d], way[k].small[d], shard * 2, &ws, NCCL_WIN_COLL_SYMMETRIC));
                BB_NCCL(ncclCommWindowRegister(way[k].comm[d], way[k].big[d], shard * 2 * G, &wb, NCCL_WIN_COLL_SYMMETRIC));
            }
            BB_NCCL(ncclGroupEnd());
        }
        if (int bad = bb_wrong(&way[k], k != W_COPY_ENGINE)) {
            fprintf(stderr, "bench_beside: the all-gather or reduce-scatter by %s: %d elements wrong\n", bb_way[k], bad);
            return 1;
        }
    }
    printf("bench_beside: NCCL %d, %d GPUs, %d GEMMs %dx%dx%d bf16 beside %d collectives of %zu bf16 per rank, "
           "median of %d\n",
           v, G, ngemm, BB_M, BB_N, BB_K, ncoll, shard, reps);
    bb_ms g = bb_run(&way[W_KERNEL], 0, ngemm, 0, reps);
    printf("GEMMs alone: %.2f ms (%.1f TFLOP/s per GPU)\n", g.gemm, 2.0 * BB_M * BB_N * BB_K * ngemm / g.gemm / 1e9);
    for (int rs = 0; rs <= 1; rs++)
        for (int k = 0; k < BB_WAYS; k++) {
            if (rs && k == W_COPY_ENGINE) continue;
            bb_ms alone = bb_run(&way[k], rs, 0, ncoll, reps), both = bb_run(&way[k], rs, ngemm, ncoll, reps);
            double gb = (double)shard * 2 * (G - 1) * ncoll / 1e6; /* received (all-gather) or sent (reduce-scatter) per rank */
            printf("%s %-30s alone %8.2f ms (%5.0f GB/s per rank) | beside the GEMMs: GEMMs %8.2f ms (%+5.1f%%), "
                   "collectives %8.2f ms\n",
                   rs ? "reduce-scatter" : "all-gather    ", bb_way[k], alone.coll, gb / alone.coll, both.gemm,
                   100 * (both.gemm / g.gemm - 1), both.coll);
        }
    return 0;
}
#endif

int main(int argc, char **argv) {
    static const char usage[] =
        "usage: bench_beside [--gemms N] [--colls N] [--shard ELEMS] [-n reps]\n"
        "  --gemms  GEMMs per GPU (8192 x 6400 x 1600 bf16), 1 to 1e5 (400)\n"
        "  --colls  collectives per GPU beside them, 1 to 1e6 (1500)\n"
        "  --shard  bf16 elements each rank sends (all-gather) or keeps (reduce-scatter), 1024 to 1e9\n"
        "           (3840000: GPT-2 XL's c_attn weight on 2 GPUs)\n"
        "  -n       timed repetitions, 1 to 1000 (5)\n";
    long long gemms = 400, colls = 1500, elems = 3840000, reps = 5;
    if (tool_help_asked(argc, argv, usage)) return 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--gemms")) bad = tool_int("bench_beside", a, v, 1, 100000, &gemms), i++;
        else if (!strcmp(a, "--colls")) bad = tool_int("bench_beside", a, v, 1, 1000000, &colls), i++;
        else if (!strcmp(a, "--shard")) bad = tool_int("bench_beside", a, v, 1024, 1000000000, &elems), i++;
        else if (!strcmp(a, "-n")) bad = tool_int("bench_beside", a, v, 1, 1000, &reps), i++;
        else return tool_unknown_option("bench_beside", a, usage);
        if (bad) return 2;
    }
#if NCCL_VERSION_CODE >= 22800
    shard = (size_t)elems;
    return bb_main((int)gemms, (int)colls, (int)reps);
#else
    (void)gemms, (void)colls, (void)elems, (void)reps;
    printf("bench_beside: built against NCCL %d; the CTA policies and windows need 2.28: skipped\n", NCCL_VERSION_CODE);
    return 77;
#endif
}
