/* bench_optim.cu - the optimizer step on one GPU: zero's fused Adam kernel
   and the engine's whole zero_step, in bytes per second against the
   device-to-device copy bandwidth measured in the same run. bench_torch_adam.py
   times PyTorch's fused AdamW and its mixed-precision sequence on the same GPU
   and prints the ratios (make bench runs both, this one first).

       make bench
       build/bench/bench_optim [--params 1e9] [--tensors 50] [-n 20] [-w 3] [--out file]
       build/bench/bench_optim --gpt 124M|1.5B [-n 20] [-w 3]

   Runs on the first visible GPU (no launcher needed; world 1).
     copy     cudaMemcpyAsync device-to-device of 2 GB; GB/s counts bytes read
              plus bytes written
     adam     the backend's fused Adam (zero_backend.adam, what zero_step calls
              per unit) over all parameters in one call: reads fp16 gradients
              and fp32 master, m, v; writes fp32 master, m, v and fp16
              parameters: 28 bytes per parameter
     step     zero_step of an engine (fp16, ZeRO stage 2, one rank, AdamW, weight
              decay, gradient clipping 1.0) over `tensors` tensors: inf/nan check
              and sum of squares of the gradients (2 bytes per parameter), the
              host reads the norm, then Adam with unscale and clip folded into one
              factor (28 bytes), the parameters' all-gather (a no-op on one rank).
              Timed with events on the compute stream around the call, after a
              backward that wrote random gradients; GB/s at 28 bytes per parameter.
   Inputs are random (a hash of the index); the first steps are warm-up.

   --gpt 124M | 1.5B: the tensors of examples/gpt/gpt_model.h (wte [V,C], wpe
   [T,C], per block ln_1, c_attn [C,3C] + bias, attn c_proj [C,C] + bias, ln_2,
   c_fc [C,4C] + bias, mlp c_proj [4C,C] + bias, then ln_f; its groups), bf16
   compute, fp32 master, AdamW, clipping 1.0; 124M: L 12, C 768, V 50257, T
   1024; 1.5B: L 48, C 1600. Times, besides the copy:
     fused    what a C training program writes by hand (llm.c's way): one
              kernel for the global norm of the bf16 gradients (block partial
              sums, the last block adds them and stores the clip factor), one
              AdamW kernel over the contiguous parameter buffer that reads the
              factor from device memory and writes fp32 master, m, v and the
              bf16 parameters: 30 bytes per parameter in all
     step     zero_step, stages 2, 1 and 0 on one rank, after a backward that
              wrote random gradients, the same 30 bytes per parameter
   and prints each step's ratio to the fused pass.

   --optimizer adam|lion|adagrad|sgd|all: each rule of zero's fused optimizer
   kernel (zero_adam_args.kind; sgd times momentum 0.9 and momentum 0) over --params parameters in --tensors calls of one
   zero_backend.adam_multi (fp16 gradients and parameters, fp32 master and the
   rule's state: 28 bytes a parameter for Adam, 20 for Lion, Adagrad and SGD
   with momentum, 12 for SGD without), against a plain reference kernel that
   loads and stores the same bytes of one contiguous buffer; prints both
   medians and their ratio (zero / reference). --state bf16: the master and
   the state in bf16 (bf16.bf16_master_weights_and_grads and
   bf16_optimizer_states: 16 bytes a parameter for Adam) with bf16 gradients
   and parameters (the engine's pairing), the reference's loads and stores in
   bf16 too (rounded to nearest even).

   --optimizer muon (and last in all): Muon on the device. zero_backend.muon_ns
   (5 Newton-Schulz steps in fp32 on the FMA units, no tensor cores) on one
   matrix of each of GPT-2 XL's shapes (1600 x 4800, 1600 x 1600, 1600 x 6400,
   6400 x 1600): ms, TFLOP/s at 5 (4 r r c + 2 r^3) a matrix (r the smaller
   side, c the larger) and the share of the GPU's FP32 peak (SMs x FP32 lanes
   x 2 x peak clock); then Muon's two element-wise calls over --params
   parameters in --tensors Muon segments (pass 1: m, v from the fp16 gradient;
   the step: master and the fp16 parameter from v; 14 bytes a parameter each)
   through zero_backend.adam_multi, against a plain kernel over the same bytes.

   --gpt 124M | 1.5B --save DIR: zero_save's speed (docs/PERF.md "Saving a
   checkpoint"). The stage-2 engine above, after 2 steps of random gradients,
   saves -n times (default 3) into fresh directories under DIR; each save is
   timed on the wall clock (it ends with its files and directories fsynced) and
   removed before the next. The baseline, in the same directory and run: the
   same bytes written by one write() loop from host memory into one file, then
   fsync: the disk's own speed. Prints the medians and their ratio. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "bench.cuh"

#include <string>

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

static void init_params(void *user, int t, int64_t off, int64_t n, float *out) {
    (void)user;
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)((uint64_t)(off + i) * 2654435761u) ^ (uint32_t)(t * 0x9E3779B9u);
        out[i] = ((float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f) * 0.1f;
    }
}

/* ---- --gpt: the hand-fused AdamW of a C training program ---- */

#define GPT_NORM_BLOCKS 1024

/* Sum of squares of g[0, n) (n a multiple of 8, g 16-byte aligned): block
   partials, then the last block to finish adds them in order and stores
   scale = clip / max(norm, clip) (llm.c's rule) for the AdamW kernel. */
static __global__ void gpt_norm_kernel(const __nv_bfloat16 *g, size_t n, float *partial, unsigned *done,
                                       float clip, float *scale) {
    __shared__ float red[32];
    __shared__ bool last;
    float acc = 0.0f;
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8; i < n; i += (size_t)gridDim.x * blockDim.x * 8) {
        uint4 u = *(const uint4 *)(g + i);
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
        for (int k = 0; k < 4; k++) {
            float a = __uint_as_float(w[k] << 16), b = __uint_as_float(w[k] & 0xFFFF0000u);
            acc += a * a + b * b;
        }
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xFFFFFFFFu, acc, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xFFFFFFFFu, acc, o);
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = acc;
            __threadfence();
            last = atomicAdd(done, 1u) == gridDim.x - 1;
        }
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        float sum = 0.0f;
        for (unsigned b = 0; b < gridDim.x; b++) sum += ((volatile float *)partial)[b];
        const float norm = sqrtf(sum);
        *scale = norm > clip ? clip / norm : 1.0f;
        *done = 0;
    }
}

/* AdamW over 8 elements per thread and step (n a multiple of 8, every buffer
   16-byte aligned). */
static __global__ void gpt_adamw_kernel(float *master, float *m, float *v, const __nv_bfloat16 *g, __nv_bfloat16 *p,
                                        size_t n, const float *scale, float lr, float b1, float b2, float bc1, float bc2,
                                        float eps, float wd) {
    const float s = *scale;
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8; i < n; i += (size_t)gridDim.x * blockDim.x * 8) {
        float4 w0 = *(float4 *)(master + i), w1 = *(float4 *)(master + i + 4);
        float4 m0 = *(float4 *)(m + i), m1 = *(float4 *)(m + i + 4);
        float4 v0 = *(float4 *)(v + i), v1 = *(float4 *)(v + i + 4);
        uint4 gu = *(const uint4 *)(g + i);
        float W[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
        float M[8] = {m0.x, m0.y, m0.z, m0.w, m1.x, m1.y, m1.z, m1.w};
        float V[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
        const unsigned gw[4] = {gu.x, gu.y, gu.z, gu.w};
        unsigned pw[4];
        for (int k = 0; k < 8; k++) {
            const float gr = __uint_as_float(k & 1 ? gw[k / 2] & 0xFFFF0000u : gw[k / 2] << 16) * s;
            M[k] = b1 * M[k] + (1.0f - b1) * gr;
            V[k] = b2 * V[k] + (1.0f - b2) * gr * gr;
            W[k] -= lr * ((M[k] / bc1) / (sqrtf(V[k] / bc2) + eps) + wd * W[k]);
        }
        for (int k = 0; k < 4; k++) {
            const __nv_bfloat162 h = __floats2bfloat162_rn(W[2 * k], W[2 * k + 1]);
            memcpy(&pw[k], &h, sizeof h);
        }
        *(float4 *)(master + i) = make_float4(W[0], W[1], W[2], W[3]);
        *(float4 *)(master + i + 4) = make_float4(W[4], W[5], W[6], W[7]);
        *(float4 *)(m + i) = make_float4(M[0], M[1], M[2], M[3]);
        *(float4 *)(m + i + 4) = make_float4(M[4], M[5], M[6], M[7]);
        *(float4 *)(v + i) = make_float4(V[0], V[1], V[2], V[3]);
        *(float4 *)(v + i + 4) = make_float4(V[4], V[5], V[6], V[7]);
        *(uint4 *)(p + i) = make_uint4(pw[0], pw[1], pw[2], pw[3]);
    }
}

/* n bf16 values at p, random in +- amp (a hash of seed and the index). */
static __global__ void gpt_fill_bf16_kernel(__nv_bfloat16 *p, size_t n, uint32_t seed, float amp) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed * 0x9E3779B9u;
        h ^= h >> 15, h *= 0x2C1B3C6Du, h ^= h >> 12;
        p[i] = __float2bfloat16_rn(((float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f) * 2.0f * amp);
    }
}
static void gpt_fill_bf16(void *p, size_t n, uint32_t seed, float amp, cudaStream_t s) {
    static int grid = 0;
    if (!grid) grid = bench_sm_count() * 8;
    size_t want = (n + 255) / 256;
    gpt_fill_bf16_kernel<<<want < (size_t)grid ? (unsigned)(want ? want : 1) : (unsigned)grid, 256, 0, s>>>(
        (__nv_bfloat16 *)p, n, seed, amp);
    BENCH_CUDA(cudaGetLastError());
}

/* The GPT-2 tensors of examples/gpt/gpt_model.h, in its order and groups. */
/* The median ms of a device-to-device copy of bytes (ping-pong between two
   buffers, one event pair per run), the bandwidth every figure is set against */
static double copy_median_ms(size_t bytes, const std::vector<cudaEvent_t> &ea, const std::vector<cudaEvent_t> &eb,
                             int warmup, int total, cudaStream_t s) {
    void *a, *b;
    BENCH_CUDA(cudaMalloc(&a, bytes));
    BENCH_CUDA(cudaMalloc(&b, bytes));
    bench_fill(a, bytes / 4, ZERO_DTYPE_FP32, 7, 0.0f, 1.0f, s);
    for (int i = 0; i < total; i++) {
        BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
        BENCH_CUDA(cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, s));
        BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
    }
    double ms = bench_median(bench_event_ms(ea, eb, warmup, total));
    BENCH_CUDA(cudaFree(a));
    BENCH_CUDA(cudaFree(b));
    return ms;
}

static void gpt_tensors(int L, int64_t C, int64_t V, int64_t T, std::vector<zero_tensor> &ts,
                        std::vector<std::string> &names) {
    static const char *blk[12] = {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                                  "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                                  "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};
    const int64_t sz[12] = {C, C, C * 3 * C, 3 * C, C * C, C, C, C, C * 4 * C, 4 * C, 4 * C * C, C};
    names.clear();
    std::vector<int64_t> numel;
    std::vector<int> group;
    names.push_back("wte.weight"), numel.push_back(V * C), group.push_back(0);
    names.push_back("wpe.weight"), numel.push_back(T * C), group.push_back(0);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < 12; k++) {
            names.push_back("h." + std::to_string(l) + "." + blk[k]);
            numel.push_back(sz[k]);
            group.push_back(l + 1);
        }
    names.push_back("ln_f.weight"), numel.push_back(C), group.push_back(L + 1);
    names.push_back("ln_f.bias"), numel.push_back(C), group.push_back(L + 1);
    ts.assign(names.size(), zero_tensor());
    for (size_t t = 0; t < names.size(); t++) {
        memset(&ts[t], 0, sizeof(zero_tensor));
        ts[t].name = names[t].c_str();
        ts[t].numel = numel[t];
        ts[t].group = group[t];
        ts[t].init = init_params;
    }
}

/* --gpt's preset: L and C (V 50257, T 1024); 0 with a message when unknown */
static int gpt_preset(const char *which, int *L, int *C) {
    if (!strcmp(which, "124M")) *L = 12, *C = 768;
    else if (!strcmp(which, "1.5B")) *L = 48, *C = 1600;
    else {
        fprintf(stderr, "bench_optim: --gpt '%s': 124M or 1.5B\n", which);
        return 0;
    }
    return 1;
}

/* The engine the --gpt modes time: one rank, bf16, AdamW, weight decay 0.1, clipping 1.0 */
static zero_config gpt_config(int stage) {
    zero_config c = zero_config_default();
    zero_error err;
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = 1;
    c.zero_optimization.stage = stage;
    c.zero_optimization.overlap_comm = 1;
    c.bf16.enabled = 1;
    c.optimizer.type = ZERO_OPTIMIZER_ADAMW;
    c.optimizer.lr = 1e-4;
    c.optimizer.weight_decay = 0.1;
    c.gradient_clipping = 1.0;
    c.log.level = ZERO_LOG_WARN;
    BENCH_ZERO(zero_config_resolve(&c, 1, &err), &err);
    return c;
}

/* A backward that writes random (non-zero) gradients, last tensor first; seed i varies them by step */
static void gpt_backward(zero_engine *e, const std::vector<zero_tensor> &ts, int i, cudaStream_t s) {
    for (int t = (int)ts.size() - 1; t >= 0; t--) {
        void *gp = bench_ptr(zero_grad(e, t), "zero_grad", e);
        gpt_fill_bf16(gp, (size_t)ts[(size_t)t].numel, 100u + (uint32_t)i * 1000u + (uint32_t)t, 1e-3f, s);
        BENCH_ENG(zero_grad_ready(e, t), e);
    }
}

static int run_gpt(const char *which, int iters, int warmup) {
    zero_error err;
    int L, C;
    const int64_t V = 50257, T = 1024;
    if (!gpt_preset(which, &L, &C)) return 2;
    std::vector<zero_tensor> ts;
    std::vector<std::string> names;
    gpt_tensors(L, C, V, T, ts, names);
    const int nt = (int)ts.size();
    int64_t N = 0;
    for (int t = 0; t < nt; t++) N += ts[(size_t)t].numel;
    const int64_t N8 = (N + 7) / 8 * 8; /* the fused pass's buffer: whole groups of 8 */
    const int total = warmup + iters;
    const double B = 30.0; /* bytes per parameter: gradient read twice (norm, Adam), master, m, v, bf16 param */

    zero_cuda *cu;
    BENCH_ZERO(zero_cuda_backend_init(&cu, NULL, &err), &err);
    const zero_backend *be = zero_cuda_backend(cu);
    cudaStream_t s = zero_cuda_stream(cu);
    if (be->world != 1) {
        fprintf(stderr, "bench_optim: runs on one GPU (world %d): start it without a launcher\n", be->world);
        return 1;
    }
    printf("# bench_optim --gpt %s: %d tensors, %lld parameters (L %d, C %d, V %lld, T %lld), bf16, AdamW, clip 1.0\n",
           which, nt, (long long)N, L, C, (long long)V, (long long)T);
    bench_device_line("# ");
    printf("# events on the compute stream, median of %d after %d warm-up; GB/s at %.0f bytes per parameter\n", iters,
           warmup, B);
    std::vector<cudaEvent_t> ea, eb;
    bench_events(ea, total);
    bench_events(eb, total);

    double copy_gbps;
    {
        const size_t bytes = (size_t)(B / 2 * (double)N); /* read + write = the step's bytes */
        double ms = copy_median_ms(bytes, ea, eb, warmup, total, s);
        copy_gbps = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
        printf("  d2d copy     %9.3f ms  %8.1f GB/s (read + write of the step's %.2f GB)\n", ms, copy_gbps,
               2.0 * (double)bytes / 1e9);
    }

    double fused_ms;
    {
        float *master, *m, *v, *partial, *scale;
        unsigned *done;
        __nv_bfloat16 *g, *p;
        int dev = 0, sms = 0;
        BENCH_CUDA(cudaGetDevice(&dev));
        BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        BENCH_CUDA(cudaMalloc(&master, 4 * (size_t)N8));
        BENCH_CUDA(cudaMalloc(&m, 4 * (size_t)N8));
        BENCH_CUDA(cudaMalloc(&v, 4 * (size_t)N8));
        BENCH_CUDA(cudaMalloc(&g, 2 * (size_t)N8));
        BENCH_CUDA(cudaMalloc(&p, 2 * (size_t)N8));
        BENCH_CUDA(cudaMalloc(&partial, 4 * GPT_NORM_BLOCKS));
        BENCH_CUDA(cudaMalloc(&scale, 4));
        BENCH_CUDA(cudaMalloc(&done, 4));
        BENCH_CUDA(cudaMemsetAsync(done, 0, 4, s));
        bench_fill(master, (size_t)N8, ZERO_DTYPE_FP32, 11, 0.0f, 0.05f, s);
        bench_fill(m, (size_t)N8, ZERO_DTYPE_FP32, 12, 0.0f, 1e-3f, s);
        bench_fill(v, (size_t)N8, ZERO_DTYPE_FP32, 13, 1e-6f, 1e-6f, s);
        gpt_fill_bf16(p, (size_t)N8, 15, 0.05f, s);
        const unsigned grid = (unsigned)sms * 8; /* 8 blocks of 256 per SM resident */
        for (int i = 0; i < total; i++) {
            gpt_fill_bf16(g, (size_t)N8, 100u + (uint32_t)i, 1e-3f, s);
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            gpt_norm_kernel<<<GPT_NORM_BLOCKS, 256, 0, s>>>(g, (size_t)N8, partial, done, 1.0f, scale);
            gpt_adamw_kernel<<<grid, 256, 0, s>>>(master, m, v, g, p, (size_t)N8, scale, 1e-4f, 0.9f, 0.95f,
                                                  1.0f - powf(0.9f, (float)(i + 1)), 1.0f - powf(0.95f, (float)(i + 1)),
                                                  1e-8f, 0.1f);
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
            BENCH_CUDA(cudaGetLastError());
        }
        fused_ms = bench_median(bench_event_ms(ea, eb, warmup, total));
        printf("  fused        %9.3f ms  %8.1f GB/s  %5.1f%% of copy  (norm kernel + AdamW kernel, 2 launches)\n",
               fused_ms, B * (double)N / (fused_ms * 1e-3) / 1e9, 100.0 * B * (double)N / (fused_ms * 1e-3) / 1e9 / copy_gbps);
        BENCH_CUDA(cudaFree(master));
        BENCH_CUDA(cudaFree(m));
        BENCH_CUDA(cudaFree(v));
        BENCH_CUDA(cudaFree(g));
        BENCH_CUDA(cudaFree(p));
        BENCH_CUDA(cudaFree(partial));
        BENCH_CUDA(cudaFree(scale));
        BENCH_CUDA(cudaFree(done));
    }

    int bad = 0;
    const int stages[3] = {2, 1, 0};
    for (int si = 0; si < 3; si++) {
        zero_config c = gpt_config(stages[si]);
        zero_engine *e;
        BENCH_ZERO(zero_engine_create(&e, &c, ts.data(), nt, be, &err), &err);
        std::vector<double> host_ms, norm_ms, opt_ms, gather_ms;
        int skipped = 0;
        for (int i = 0; i < total; i++) {
            zero_step_info info;
            gpt_backward(e, ts, i, s);
            BENCH_CUDA(cudaStreamSynchronize(s)); /* the reductions are done: the step alone is timed */
            double h0 = bench_now_s();
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            BENCH_ENG(zero_step(e, &info), e);
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
            BENCH_CUDA(cudaEventSynchronize(eb[(size_t)i]));
            if (i >= warmup) {
                host_ms.push_back((bench_now_s() - h0) * 1e3);
                norm_ms.push_back(info.time_ms[ZERO_PHASE_NORM]);
                opt_ms.push_back(info.time_ms[ZERO_PHASE_OPTIMIZER]);
                gather_ms.push_back(info.time_ms[ZERO_PHASE_GATHER]);
            }
            if (!info.applied) skipped++;
        }
        double ms = bench_median(bench_event_ms(ea, eb, warmup, total));
        printf("  zero_step s%d %9.3f ms  %8.1f GB/s  %5.1f%% of copy  %.3fx fused  (host wall %.3f ms; %d skipped)\n",
               stages[si], ms, B * (double)N / (ms * 1e-3) / 1e9, 100.0 * B * (double)N / (ms * 1e-3) / 1e9 / copy_gbps,
               ms / fused_ms, bench_median(host_ms), skipped);
        /* host time of zero_step's phases: norm up to the end of its wait for the statistics, optimizer the
           Adam launches, params the gathers and the final wait */
        printf("               host: norm %.3f ms (launches + wait), optimizer %.3f ms (launches), params %.3f ms "
               "(gathers + final wait)\n",
               bench_median(norm_ms), bench_median(opt_ms), bench_median(gather_ms));
        if (skipped) bad = 1;
        zero_engine_destroy(e);
    }
    bench_events_free(ea);
    bench_events_free(eb);
    zero_cuda_backend_destroy(cu);
    return bad;
}

/* bytes of the regular files under a directory (nftw's callback adds them) */
static long long g_tree_bytes;
static int tree_add(const char *, const struct stat *st, int type, struct FTW *) {
    if (type == FTW_F) g_tree_bytes += (long long)st->st_size;
    return 0;
}
static long long tree_bytes(const char *dir) {
    g_tree_bytes = 0;
    return nftw(dir, tree_add, 16, FTW_PHYS) == 0 ? g_tree_bytes : -1;
}
static void tree_remove(const char *dir) {
    std::string cmd = "rm -rf '" + std::string(dir) + "'";
    if (system(cmd.c_str()) != 0) fprintf(stderr, "bench_optim: could not remove %s\n", dir);
}

/* seconds to write bytes into a new file at path from host memory (64 MiB writes), fsync included */
static double raw_write_s(const char *path, long long bytes) {
    const size_t chunk = (size_t)64 << 20;
    std::vector<unsigned char> buf(chunk);
    for (size_t i = 0; i < chunk; i++) buf[i] = (unsigned char)(i * 2654435761u >> 13); /* not zeros */
    double t0 = bench_now_s();
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    for (long long left = bytes; left > 0;) {
        size_t n = left < (long long)chunk ? (size_t)left : chunk;
        ssize_t w = write(fd, buf.data(), n);
        if (w <= 0) {
            perror(path);
            exit(1);
        }
        left -= w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        perror(path);
        exit(1);
    }
    double s = bench_now_s() - t0;
    unlink(path);
    return s;
}

static int run_save(const char *which, const char *dir, int iters) {
    zero_error err;
    int L, C;
    const int64_t V = 50257, T = 1024;
    if (!gpt_preset(which, &L, &C)) return 2;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_optim: --save %s: %s\n", dir, strerror(errno));
        return 1;
    }
    std::vector<zero_tensor> ts;
    std::vector<std::string> names;
    gpt_tensors(L, C, V, T, ts, names);
    const int nt = (int)ts.size();
    int64_t N = 0;
    for (int t = 0; t < nt; t++) N += ts[(size_t)t].numel;
    zero_cuda *cu;
    BENCH_ZERO(zero_cuda_backend_init(&cu, NULL, &err), &err);
    const zero_backend *be = zero_cuda_backend(cu);
    cudaStream_t s = zero_cuda_stream(cu);
    if (be->world != 1) {
        fprintf(stderr, "bench_optim: runs on one GPU (world %d): start it without a launcher\n", be->world);
        return 1;
    }
    printf("# bench_optim --gpt %s --save %s: %d tensors, %lld parameters, bf16, stage 2, one rank; median of %d\n",
           which, dir, nt, (long long)N, iters);
    bench_device_line("# ");
    zero_config c = gpt_config(2);
    zero_engine *e;
    BENCH_ZERO(zero_engine_create(&e, &c, ts.data(), nt, be, &err), &err);
    for (int i = 0; i < 2; i++) { /* master, m and v of a trained state, not an engine's first values */
        gpt_backward(e, ts, i, s);
        BENCH_ENG(zero_step(e, NULL), e);
    }
    BENCH_CUDA(cudaStreamSynchronize(s));
    std::vector<double> save_s, raw_s;
    long long bytes = 0;
    for (int i = 0; i < iters; i++) {
        std::string d = std::string(dir) + "/save" + std::to_string(i), f = std::string(dir) + "/raw.bin";
        double t0 = bench_now_s();
        BENCH_ZERO(zero_save(e, d.c_str(), &err), &err);
        save_s.push_back(bench_now_s() - t0);
        bytes = tree_bytes(d.c_str());
        if (bytes <= 0) {
            fprintf(stderr, "bench_optim: no checkpoint found under %s\n", d.c_str());
            return 1;
        }
        tree_remove(d.c_str());
        raw_s.push_back(raw_write_s(f.c_str(), bytes));
        printf("  save %d: %.3f s, the same bytes written raw: %.3f s\n", i, save_s.back(), raw_s.back());
    }
    double sv = bench_median(save_s), rw = bench_median(raw_s);
    printf("  zero_save    %8.3f s  %7.2f GB/s  (%.2f GB: the checkpoint's files)\n", sv, (double)bytes / sv / 1e9,
           (double)bytes / 1e9);
    printf("  raw write    %8.3f s  %7.2f GB/s  (one file, write() + fsync)\n", rw, (double)bytes / rw / 1e9);
    printf("  zero_save / raw write: %.3f\n", sv / rw);
    zero_engine_destroy(e);
    zero_cuda_backend_destroy(cu);
    return 0;
}

/* ---- --optimizer: each rule's fused kernel against a plain pass over its bytes ---- */

/* The rules --optimizer times: zero_adam_args.kind and momentum, the fp32
   arrays the rule reads and writes besides the master (m, v), the name. */
struct bench_rule {
    zero_optimizer_type kind;
    float momentum;
    int m, v;
    const char *name;
};
static const bench_rule bench_rules[5] = {{ZERO_OPTIMIZER_ADAMW, 0.0f, 1, 1, "adam"},
                                          {ZERO_OPTIMIZER_LION, 0.0f, 1, 0, "lion"},
                                          {ZERO_OPTIMIZER_ADAGRAD, 0.0f, 0, 1, "adagrad"},
                                          {ZERO_OPTIMIZER_SGD, 0.9f, 1, 0, "sgd"},
                                          {ZERO_OPTIMIZER_SGD, 0.0f, 0, 0, "sgd (momentum 0)"}};

/* Whether --optimizer `which` times rule r: its name, "sgd" both SGD rows, "all" every row. */
static int rule_picked(const bench_rule &r, const char *which) {
    return !strcmp(which, "all") || !strcmp(which, r.name) || (!strcmp(which, "sgd") && r.kind == ZERO_OPTIMIZER_SGD);
}

/* Bytes a parameter: 16-bit gradient read, 16-bit parameter written, the master
   and the rule's state read and written (4 bytes each, 2 in bf16). */
static double rule_bytes(const bench_rule &r, int s16) { return 2.0 + 2.0 + (s16 ? 4.0 : 8.0) * (1 + r.m + r.v); }

/* 8 values from fp32 or (B16) bf16 storage at p, and back (bf16: nearest even) */
template <bool B16> static __device__ __forceinline__ void ref_ld8(const void *p, float *f) {
    if (B16) {
        const uint4 u = *(const uint4 *)p;
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
        for (int k = 0; k < 4; k++) f[2 * k] = __uint_as_float(w[k] << 16), f[2 * k + 1] = __uint_as_float(w[k] & 0xFFFF0000u);
    } else {
        *(float4 *)f = *(const float4 *)p, *(float4 *)(f + 4) = *((const float4 *)p + 1);
    }
}
template <bool B16> static __device__ __forceinline__ void ref_st8(void *p, const float *f) {
    if (B16) {
        unsigned w[4];
        for (int k = 0; k < 4; k++) {
            const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
            memcpy(&w[k], &h, sizeof h);
        }
        *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
        *(float4 *)p = *(const float4 *)f, *((float4 *)p + 1) = *(const float4 *)(f + 4);
    }
}

/* The reference: what one would write by hand for rule R (the index in
   bench_rules; the m and v it touches spelled out again, as device code) over one contiguous buffer, 8 elements a thread and step (n a
   multiple of 8, every buffer 16-byte aligned), one kernel: the same loads and
   stores as zero's kernel, plain arithmetic. */
template <int R, bool B16>
static __global__ void ref_rule_kernel(char *w, char *m, char *v, const __half *g, __half *p, size_t n, float lr,
                                       float wd, float gs) {
    const size_t es = B16 ? 2 : 4;
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8; i < n; i += (size_t)gridDim.x * blockDim.x * 8) {
        float W[8], M[8] = {}, V[8] = {}, G[8];
        const uint4 gu = *(const uint4 *)(g + i);
        const unsigned gw[4] = {gu.x, gu.y, gu.z, gu.w};
        ref_ld8<B16>(w + i * es, W);
        if (R == 0 || R == 1 || R == 3) ref_ld8<B16>(m + i * es, M);
        if (R == 0 || R == 2) ref_ld8<B16>(v + i * es, V);
        for (int k = 0; k < 4; k++) { /* (B16: the gradient is bf16 too) */
            float2 f;
            if (B16) {
                __nv_bfloat162 h;
                memcpy(&h, &gw[k], sizeof h);
                f = __bfloat1622float2(h);
            } else {
                __half2 h;
                memcpy(&h, &gw[k], sizeof h);
                f = __half22float2(h);
            }
            G[2 * k] = f.x * gs, G[2 * k + 1] = f.y * gs;
        }
        for (int k = 0; k < 8; k++) {
            if (R == 0) {
                M[k] = 0.9f * M[k] + 0.1f * G[k];
                V[k] = 0.999f * V[k] + 0.001f * G[k] * G[k];
                W[k] -= lr * (M[k] / (sqrtf(V[k]) + 1e-8f) + wd * W[k]);
            } else if (R == 1) {
                const float c = 0.9f * M[k] + 0.1f * G[k];
                W[k] = W[k] * (1.0f - lr * wd) - (c > 0.0f ? lr : -lr);
                M[k] = 0.99f * M[k] + 0.01f * G[k];
            } else if (R == 2) {
                V[k] += G[k] * G[k];
                W[k] -= lr * G[k] / (sqrtf(V[k]) + 1e-10f);
            } else if (R == 3) {
                M[k] = 0.9f * M[k] + G[k] + wd * W[k];
                W[k] -= lr * M[k];
            } else {
                W[k] -= lr * (G[k] + wd * W[k]);
            }
        }
        unsigned pw[4];
        for (int k = 0; k < 4; k++) { /* (B16: the parameter copy is bf16 too) */
            if (B16) {
                const __nv_bfloat162 h = __floats2bfloat162_rn(W[2 * k], W[2 * k + 1]);
                memcpy(&pw[k], &h, sizeof h);
            } else {
                const __half2 h = __floats2half2_rn(W[2 * k], W[2 * k + 1]);
                memcpy(&pw[k], &h, sizeof h);
            }
        }
        ref_st8<B16>(w + i * es, W);
        if (R == 0 || R == 1 || R == 3) ref_st8<B16>(m + i * es, M);
        if (R == 0 || R == 2) ref_st8<B16>(v + i * es, V);
        *(uint4 *)(p + i) = make_uint4(pw[0], pw[1], pw[2], pw[3]);
    }
}

template <bool B16>
static void ref_rule_t(int r, char *w, char *m, char *v, const __half *g, __half *p, size_t n, unsigned blocks, cudaStream_t s) {
    const float lr = 1e-4f, wd = 0.01f, gs = 1.0f / 65536.0f;
    switch (r) {
    case 0: ref_rule_kernel<0, B16><<<blocks, 256, 0, s>>>(w, m, v, g, p, n, lr, wd, gs); break;
    case 1: ref_rule_kernel<1, B16><<<blocks, 256, 0, s>>>(w, m, v, g, p, n, lr, wd, gs); break;
    case 2: ref_rule_kernel<2, B16><<<blocks, 256, 0, s>>>(w, m, v, g, p, n, lr, wd, gs); break;
    case 3: ref_rule_kernel<3, B16><<<blocks, 256, 0, s>>>(w, m, v, g, p, n, lr, wd, gs); break;
    default: ref_rule_kernel<4, B16><<<blocks, 256, 0, s>>>(w, m, v, g, p, n, lr, wd, gs); break;
    }
}

static void ref_rule(int r, int s16, char *w, char *m, char *v, const __half *g, __half *p, size_t n, cudaStream_t s) {
    static int grid = 0;
    if (!grid) grid = bench_sm_count() * 8; /* one full wave of 256-thread blocks */
    const size_t want = (n / 8 + 255) / 256;
    const unsigned blocks = want < (size_t)grid ? (unsigned)(want ? want : 1) : (unsigned)grid;
    if (s16) ref_rule_t<true>(r, w, m, v, g, p, n, blocks, s);
    else ref_rule_t<false>(r, w, m, v, g, p, n, blocks, s);
    BENCH_CUDA(cudaGetLastError());
}

/* --optimizer NAME|all: for each rule, zero_backend.adam_multi over `tensors`
   calls of `per` parameters (as zero_step calls it: one launch for all) and
   the reference pass over the same buffers, each timed with events after the
   warm-up, medians; prints both and zero's time over the reference's. */
static int run_rules(const char *which, int s16, int64_t per, int tensors, int iters, int warmup) {
    zero_error err;
    const int64_t N = per * tensors;
    const int total = warmup + iters;
    int any = 0;
    for (int r = 0; r < 5; r++) any |= rule_picked(bench_rules[r], which);
    if (!any) {
        tool_fail("bench_optim", "--optimizer", "'%s': adam, lion, adagrad, sgd, muon or all", which);
        return 2;
    }
    zero_cuda *cu;
    BENCH_ZERO(zero_cuda_backend_init(&cu, NULL, &err), &err);
    const zero_backend *be = zero_cuda_backend(cu);
    cudaStream_t s = zero_cuda_stream(cu);
    const size_t es = s16 ? 2 : 4;
    /* bf16 storage: bf16 gradients and parameters, as the engine pairs them (bf16 compute) */
    const zero_dtype sdt = s16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32, gdt = s16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP16;
    printf("# bench_optim --optimizer %s: %lld parameters (%d tensors of %lld), %s grads and params, %s master and "
           "state, one GPU\n",
           which, (long long)N, tensors, (long long)per, s16 ? "bf16" : "fp16", s16 ? "bf16" : "fp32");
    bench_device_line("# ");
    printf("# events on the compute stream, median of %d after %d warm-up; reference: one plain fused kernel over the "
           "same buffers\n",
           iters, warmup);
    printf("  %-17s %6s %10s %10s %9s %8s\n", "rule", "B/par", "zero ms", "ref ms", "zero GB/s", "zero/ref");
    std::vector<cudaEvent_t> ea, eb;
    bench_events(ea, total);
    bench_events(eb, total);
    char *master, *m, *v;
    __half *grad, *param;
    BENCH_CUDA(cudaMalloc(&master, es * (size_t)N));
    BENCH_CUDA(cudaMalloc(&m, es * (size_t)N));
    BENCH_CUDA(cudaMalloc(&v, es * (size_t)N));
    BENCH_CUDA(cudaMalloc(&grad, 2 * (size_t)N));
    BENCH_CUDA(cudaMalloc(&param, 2 * (size_t)N));
    std::vector<zero_adam_seg> segs((size_t)tensors);
    std::vector<zero_adam_args> calls((size_t)tensors);
    for (int r = 0; r < 5; r++) {
        const bench_rule &br = bench_rules[r];
        if (!rule_picked(br, which)) continue;
        bench_fill(master, (size_t)N, sdt, 11, 0.0f, 0.05f, s);
        bench_fill(m, (size_t)N, sdt, 12, 0.0f, 1e-3f, s);
        bench_fill(v, (size_t)N, sdt, 13, 1e-6f, 1e-6f, s); /* v >= 0 */
        bench_fill(grad, (size_t)N, gdt, 14, 0.0f, 1.0f, s);
        for (int t = 0; t < tensors; t++) {
            zero_adam_seg &sg = segs[(size_t)t];
            zero_adam_args &a = calls[(size_t)t];
            const size_t off = (size_t)t * (size_t)per;
            sg.offset = 0, sg.count = per, sg.lr = 1e-4f, sg.weight_decay = 0.01f;
            memset(&a, 0, sizeof a);
            a.master = master + off * es;
            a.m = br.m ? m + off * es : NULL;
            a.v = br.v ? v + off * es : NULL;
            a.master_dtype = a.state_dtype = sdt;
            a.grad = grad + off;
            a.grad_dtype = gdt;
            a.param = param + off;
            a.param_dtype = gdt;
            a.segs = &sg;
            a.n_segs = 1;
            a.kind = br.kind;
            a.beta1 = 0.9f;
            a.beta2 = br.kind == ZERO_OPTIMIZER_LION ? 0.99f : 0.999f;
            a.eps = br.kind == ZERO_OPTIMIZER_ADAGRAD ? 1e-10f : 1e-8f;
            a.bc1 = 1.0f - powf(0.9f, 10.0f);
            a.bc2 = 1.0f / sqrtf(1.0f - powf(0.999f, 10.0f));
            a.grad_scale = 1.0f / 65536.0f;
            a.adamw = 1;
            a.momentum = br.momentum;
        }
        for (int i = 0; i < total; i++) {
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            BENCH_ZERO(be->adam_multi(be->ctx, calls.data(), tensors, ZERO_STREAM_COMPUTE, &err), &err);
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
        }
        const double zms = bench_median(bench_event_ms(ea, eb, warmup, total));
        for (int i = 0; i < total; i++) {
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            ref_rule(r, s16, master, m, v, grad, param, (size_t)N, s);
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
        }
        const double rms = bench_median(bench_event_ms(ea, eb, warmup, total));
        printf("  %-17s %6.0f %10.3f %10.3f %9.1f %8.3f\n", br.name, rule_bytes(br, s16), zms, rms,
               rule_bytes(br, s16) * (double)N / (zms * 1e-3) / 1e9, zms / rms);
    }
    BENCH_CUDA(cudaFree(master));
    BENCH_CUDA(cudaFree(m));
    BENCH_CUDA(cudaFree(v));
    BENCH_CUDA(cudaFree(grad));
    BENCH_CUDA(cudaFree(param));
    bench_events_free(ea);
    bench_events_free(eb);
    zero_cuda_backend_destroy(cu);
    return 0;
}

/* ---- --optimizer muon: Muon's orthogonalisation and its element-wise passes ---- */

/* Muon's element-wise passes by hand over one contiguous buffer (n a multiple
   of 8, every buffer 16-byte aligned), 8 elements a thread and step: PASS 1
   reads m and the fp16 gradient and writes m and v, PASS 0 reads master and v
   and writes master and the fp16 parameter: the loads and stores of zero's
   two kernels, plain arithmetic. */
template <int PASS>
static __global__ void ref_muon_kernel(float *w, float *m, float *v, const __half *g, __half *p, size_t n, float lr,
                                       float wd, float gs, float mom) {
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8; i < n; i += (size_t)gridDim.x * blockDim.x * 8) {
        float A[8], B[8];
        if (PASS == 1) {
            const uint4 gu = *(const uint4 *)(g + i);
            const unsigned gw[4] = {gu.x, gu.y, gu.z, gu.w};
            *(float4 *)A = *(const float4 *)(m + i), *(float4 *)(A + 4) = *(const float4 *)(m + i + 4);
            for (int k = 0; k < 4; k++) {
                __half2 h;
                memcpy(&h, &gw[k], sizeof h);
                const float2 f = __half22float2(h);
                B[2 * k] = f.x * gs, B[2 * k + 1] = f.y * gs;
            }
            for (int k = 0; k < 8; k++) {
                A[k] += (B[k] - A[k]) * (1.0f - mom);
                B[k] = A[k] + (B[k] - A[k]) * (1.0f - mom);
            }
            *(float4 *)(m + i) = *(const float4 *)A, *(float4 *)(m + i + 4) = *(const float4 *)(A + 4);
            *(float4 *)(v + i) = *(const float4 *)B, *(float4 *)(v + i + 4) = *(const float4 *)(B + 4);
        } else {
            unsigned pw[4];
            *(float4 *)A = *(const float4 *)(w + i), *(float4 *)(A + 4) = *(const float4 *)(w + i + 4);
            *(float4 *)B = *(const float4 *)(v + i), *(float4 *)(B + 4) = *(const float4 *)(v + i + 4);
            for (int k = 0; k < 8; k++) A[k] = A[k] * (1.0f - lr * wd) - lr * B[k];
            for (int k = 0; k < 4; k++) {
                const __half2 h = __floats2half2_rn(A[2 * k], A[2 * k + 1]);
                memcpy(&pw[k], &h, sizeof h);
            }
            *(float4 *)(w + i) = *(const float4 *)A, *(float4 *)(w + i + 4) = *(const float4 *)(A + 4);
            *(uint4 *)(p + i) = make_uint4(pw[0], pw[1], pw[2], pw[3]);
        }
    }
}

/* The GPU's FP32 FMA peak in FLOP/s: SMs x FP32 lanes an SM x 2 x the peak
   clock (H100 / H200 SXM: 132 x 128 x 2 x 1.98 GHz = 66.9 TFLOP/s). */
static double fp32_peak(void) {
    int dev = 0, sms = 0, khz = 0, major = 0, minor = 0;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    const int lanes = major >= 9 || (major == 8 && minor != 0) ? 128 : 64;
    return (double)sms * lanes * 2.0 * khz * 1e3;
}

/* Median ms of `total` calls of fn (events around each; the first warmup not counted). */
template <typename F>
static double time_median_ms(F fn, std::vector<cudaEvent_t> &ea, std::vector<cudaEvent_t> &eb, int warmup, int total,
                             cudaStream_t s) {
    for (int i = 0; i < total; i++) {
        BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
        fn();
        BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
    }
    return bench_median(bench_event_ms(ea, eb, warmup, total));
}

/* --optimizer muon: zero_backend.muon_ns (5 steps, fp32) on one matrix of each
   of GPT-2 XL's shapes (c_attn 1600 x 4800, attn c_proj 1600 x 1600, c_fc
   1600 x 6400, mlp c_proj 6400 x 1600), TFLOP/s at 5 (4 r r c + 2 r^3) a
   matrix (r the smaller side) and the share of the FP32 peak; then Muon's two
   element-wise calls (zero_backend.adam_multi, every segment Muon's, fp16
   grads and params: 14 bytes a parameter each) against ref_muon_kernel. */
static int run_muon(int64_t per, int tensors, int iters, int warmup) {
    static const int64_t shapes[4][2] = {{1600, 4800}, {1600, 1600}, {1600, 6400}, {6400, 1600}};
    const int total = warmup + iters, steps = 5;
    const int64_t N = per * tensors;
    zero_error err;
    zero_cuda *cu;
    BENCH_ZERO(zero_cuda_backend_init(&cu, NULL, &err), &err);
    const zero_backend *be = zero_cuda_backend(cu);
    cudaStream_t s = zero_cuda_stream(cu);
    const double peak = fp32_peak();
    std::vector<cudaEvent_t> ea, eb;
    bench_events(ea, total);
    bench_events(eb, total);
    printf("# bench_optim --optimizer muon: Newton-Schulz (zero_backend.muon_ns, %d steps, fp32 FMAs) on GPT-2 XL's "
           "matrices, then Muon's element-wise calls\n", steps);
    bench_device_line("# ");
    printf("# events on the compute stream, median of %d after %d warm-up; FP32 peak %.1f TFLOP/s (SMs x FP32 lanes x 2 x "
           "peak clock)\n", iters, warmup, peak / 1e12);
    printf("  %-12s %10s %10s %8s\n", "muon_ns", "ms", "TFLOP/s", "of peak");
    for (const auto &sh : shapes) {
        const int64_t rows = sh[0], cols = sh[1], r = std::min(rows, cols), c = std::max(rows, cols);
        float *x, *work;
        BENCH_CUDA(cudaMalloc(&x, sizeof(float) * (size_t)(rows * cols)));
        BENCH_CUDA(cudaMalloc(&work, sizeof(float) * (size_t)zero_muon_work_elems(rows, cols)));
        bench_fill(x, (size_t)(rows * cols), ZERO_DTYPE_FP32, 21, 0.0f, 1.0f, s);
        const float scale = sqrtf(std::max(1.0f, (float)rows / (float)cols));
        const double ms = time_median_ms(
            [&] { BENCH_ZERO(be->muon_ns(be->ctx, x, 1, rows, cols, steps, scale, work, ZERO_STREAM_COMPUTE, &err), &err); },
            ea, eb, warmup, total, s);
        const double flops = steps * (4.0 * (double)r * r * c + 2.0 * (double)r * r * r);
        char name[32];
        snprintf(name, sizeof name, "%lldx%lld", (long long)rows, (long long)cols);
        printf("  %-12s %10.3f %10.1f %7.1f%%\n", name, ms, flops / (ms * 1e-3) / 1e12, 100.0 * flops / (ms * 1e-3) / peak);
        BENCH_CUDA(cudaFree(x));
        BENCH_CUDA(cudaFree(work));
    }

    float *master, *m, *v;
    __half *grad, *param;
    BENCH_CUDA(cudaMalloc(&master, sizeof(float) * (size_t)N));
    BENCH_CUDA(cudaMalloc(&m, sizeof(float) * (size_t)N));
    BENCH_CUDA(cudaMalloc(&v, sizeof(float) * (size_t)N));
    BENCH_CUDA(cudaMalloc(&grad, 2 * (size_t)N));
    BENCH_CUDA(cudaMalloc(&param, 2 * (size_t)N));
    bench_fill(master, (size_t)N, ZERO_DTYPE_FP32, 11, 0.0f, 0.05f, s);
    bench_fill(m, (size_t)N, ZERO_DTYPE_FP32, 12, 0.0f, 1e-3f, s);
    bench_fill(v, (size_t)N, ZERO_DTYPE_FP32, 13, 0.0f, 1e-3f, s);
    bench_fill(grad, (size_t)N, ZERO_DTYPE_FP16, 14, 0.0f, 1.0f, s);
    std::vector<zero_adam_seg> segs((size_t)tensors);
    std::vector<zero_adam_args> calls[2];
    for (int pass = 0; pass < 2; pass++) {
        calls[pass].assign((size_t)tensors, zero_adam_args());
        for (int t = 0; t < tensors; t++) {
            zero_adam_seg &sg = segs[(size_t)t];
            zero_adam_args &a = calls[pass][(size_t)t];
            const size_t off = (size_t)t * (size_t)per;
            sg.offset = 0, sg.count = per, sg.lr = 0.02f, sg.weight_decay = 0.01f, sg.muon = 1;
            memset(&a, 0, sizeof a);
            a.master = master + off, a.m = m + off, a.v = v + off;
            a.grad = grad + off, a.grad_dtype = ZERO_DTYPE_FP16;
            a.param = param + off, a.param_dtype = ZERO_DTYPE_FP16;
            a.segs = &sg, a.n_segs = 1;
            a.kind = ZERO_OPTIMIZER_MUON, a.muon_pass = pass;
            a.beta1 = 0.9f, a.beta2 = 0.95f, a.eps = 1e-8f, a.bc1 = 1.0f, a.bc2 = 1.0f, a.adamw = 1;
            a.grad_scale = 1.0f / 65536.0f, a.momentum = 0.95f, a.nesterov = 1;
        }
    }
    printf("# Muon's element-wise calls over %lld parameters (%d tensors of %lld, all Muon's), fp16 grads and params; "
           "reference: one plain kernel over the same bytes\n", (long long)N, tensors, (long long)per);
    printf("  %-17s %6s %10s %10s %9s %8s\n", "call", "B/par", "zero ms", "ref ms", "zero GB/s", "zero/ref");
    static const int grid_per_sm = 8;
    const size_t want = ((size_t)N / 8 + 255) / 256, most = (size_t)bench_sm_count() * grid_per_sm;
    const unsigned blocks = (unsigned)std::max<size_t>(1, std::min(want, most));
    for (int pass = 1; pass >= 0; pass--) {
        const double zms = time_median_ms(
            [&] { BENCH_ZERO(be->adam_multi(be->ctx, calls[pass].data(), tensors, ZERO_STREAM_COMPUTE, &err), &err); },
            ea, eb, warmup, total, s);
        const double rms = time_median_ms(
            [&] {
                if (pass) ref_muon_kernel<1><<<blocks, 256, 0, s>>>(master, m, v, grad, param, (size_t)N, 0.02f, 0.01f,
                                                                      1.0f / 65536.0f, 0.95f);
                else ref_muon_kernel<0><<<blocks, 256, 0, s>>>(master, m, v, grad, param, (size_t)N, 0.02f, 0.01f,
                                                                 1.0f / 65536.0f, 0.95f);
                BENCH_CUDA(cudaGetLastError());
            },
            ea, eb, warmup, total, s);
        printf("  %-17s %6d %10.3f %10.3f %9.1f %8.3f\n", pass ? "pass 1 (m, v)" : "step (master)", 14, zms, rms,
               14.0 * (double)N / (zms * 1e-3) / 1e9, zms / rms);
    }
    BENCH_CUDA(cudaFree(master));
    BENCH_CUDA(cudaFree(m));
    BENCH_CUDA(cudaFree(v));
    BENCH_CUDA(cudaFree(grad));
    BENCH_CUDA(cudaFree(param));
    bench_events_free(ea);
    bench_events_free(eb);
    zero_cuda_backend_destroy(cu);
    return 0;
}

int main(int argc, char **argv) {
    zero_error err;
    double params = 1e9;
    int tensors = 50, iters = 20, warmup = 3, iters_set = 0;
    const char *out_path = NULL, *gpt = NULL, *save_dir = NULL, *optimizer = NULL;
    int state16 = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    static const char usage[] =
        "usage: bench_optim [--params N] [--tensors T] [-n iters] [-w warmup] [--out file]\n"
        "       bench_optim --gpt 124M|1.5B [-n iters] [-w warmup]\n"
        "       bench_optim --gpt 124M|1.5B --save DIR [-n saves]\n"
        "       bench_optim --optimizer adam|lion|adagrad|sgd|muon|all [--state fp32|bf16] [--params N] [--tensors T]\n"
        "                   [-n iters] [-w warmup]\n"
        "  --params   parameters, 8 to 1e10 (1e9, 1.5B, 350M), at least one per tensor\n"
        "  --tensors  tensors of the engine, 1 to 1e6\n"
        "  -n         timed iterations, 1 to 1e6; -w  warm-up iterations, 1 to 1e6\n";
    if (tool_help_asked(argc, argv, usage)) return 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        int bad = 0;
        if (!strcmp(a, "--params")) {
            if (!(bad = tool_count("bench_optim", a, v, 8, 10000000000LL, &n))) params = (double)n;
            i++;
        } else if (!strcmp(a, "--gpt")) {
            if (!v || !*v) bad = tool_fail("bench_optim", a, "%s value (124M or 1.5B)", v ? "empty" : "missing");
            gpt = v, i++;
        } else if (!strcmp(a, "--optimizer")) {
            if (!v || !*v) bad = tool_fail("bench_optim", a, "%s value (adam, lion, adagrad, sgd, muon or all)", v ? "empty" : "missing");
            optimizer = v, i++;
        } else if (!strcmp(a, "--state")) {
            if (!v || (strcmp(v, "fp32") && strcmp(v, "bf16")))
                bad = tool_fail("bench_optim", a, "%s value (fp32 or bf16)", v ? "bad" : "missing");
            state16 = v && !strcmp(v, "bf16"), i++;
        } else if (!strcmp(a, "--save")) {
            if (!v || !*v) bad = tool_fail("bench_optim", a, "%s value (a directory)", v ? "empty" : "missing");
            save_dir = v, i++;
        } else if (!strcmp(a, "--tensors")) bad = bench_int("bench_optim", a, v, 1, 1000000, &tensors), i++;
        else if (!strcmp(a, "-n")) bad = bench_int("bench_optim", a, v, 1, 1000000, &iters), iters_set = 1, i++;
        else if (!strcmp(a, "-w")) bad = bench_int("bench_optim", a, v, 1, 1000000, &warmup), i++;
        else if (!strcmp(a, "--out")) {
            if (!v || !*v) bad = tool_fail("bench_optim", a, "%s value (a file name)", v ? "empty" : "missing");
            out_path = v, i++;
        } else return tool_unknown_option("bench_optim", a, usage);
        if (bad) return 2;
    }
    if (state16 && (!optimizer || !strcmp(optimizer, "muon"))) {
        tool_fail("bench_optim", "--state", "bf16 times the rules of --optimizer (adam, lion, adagrad, sgd or all; not "
                                            "muon, whose state is fp32)");
        return 2;
    }
    if (save_dir && !gpt) {
        tool_fail("bench_optim", "--save", "times the --gpt model's checkpoint: give --gpt 124M or 1.5B");
        return 2;
    }
    if (save_dir) return run_save(gpt, save_dir, iters_set ? iters : 3);
    if (gpt) return run_gpt(gpt, iters, warmup);
    if (params < tensors) {
        tool_fail("bench_optim", "--tensors", "%d tensors is more than --params (%.0f)", tensors, params);
        return 2;
    }
    /* every tensor a multiple of 8 elements, so the total is exactly what is asked when it divides */
    const int64_t per = ((int64_t)(params / tensors) + 7) / 8 * 8;
    if (optimizer && !strcmp(optimizer, "muon")) return run_muon(per, tensors, iters, warmup);
    if (optimizer) {
        const int rc = run_rules(optimizer, state16, per, tensors, iters, warmup);
        return rc || strcmp(optimizer, "all") ? rc : run_muon(per, tensors, iters, warmup);
    }
    const int64_t N = per * tensors;
    const int total = warmup + iters;

    zero_cuda *cu;
    BENCH_ZERO(zero_cuda_backend_init(&cu, NULL, &err), &err);
    const zero_backend *be = zero_cuda_backend(cu);
    cudaStream_t s = zero_cuda_stream(cu);
    if (be->world != 1) {
        fprintf(stderr, "bench_optim: runs on one GPU (world %d): start it without a launcher\n", be->world);
        return 1;
    }
    printf("# bench_optim: optimizer step over %lld parameters (%d tensors of %lld), one GPU\n", (long long)N, tensors,
           (long long)per);
    bench_device_line("# ");
    printf("# events on the compute stream, median of %d after %d warm-up; GB/s = 28 bytes per parameter / time\n", iters,
           warmup);
    std::vector<cudaEvent_t> ea, eb;
    bench_events(ea, total);
    bench_events(eb, total);

    /* 1. device-to-device copy */
    double copy_gbps;
    {
        const size_t bytes = (size_t)2e9;
        double ms = copy_median_ms(bytes, ea, eb, warmup, total, s);
        copy_gbps = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
        printf("  d2d copy   %10.3f ms for 2 x %.1f GB    %8.1f GB/s (read + write)\n", ms, (double)bytes / 1e9, copy_gbps);
    }

    /* 2. the fused Adam kernel alone, all parameters in one call */
    double adam_ms;
    {
        float *master, *m, *v;
        void *grad, *param;
        zero_error be_err;
        BENCH_CUDA(cudaMalloc(&master, sizeof(float) * (size_t)N));
        BENCH_CUDA(cudaMalloc(&m, sizeof(float) * (size_t)N));
        BENCH_CUDA(cudaMalloc(&v, sizeof(float) * (size_t)N));
        BENCH_CUDA(cudaMalloc(&grad, 2 * (size_t)N));
        BENCH_CUDA(cudaMalloc(&param, 2 * (size_t)N));
        bench_fill(master, (size_t)N, ZERO_DTYPE_FP32, 11, 0.0f, 0.05f, s);
        bench_fill(m, (size_t)N, ZERO_DTYPE_FP32, 12, 0.0f, 1e-3f, s);
        bench_fill(v, (size_t)N, ZERO_DTYPE_FP32, 13, 1e-6f, 1e-6f, s); /* v >= 0 */
        bench_fill(grad, (size_t)N, ZERO_DTYPE_FP16, 14, 0.0f, 1.0f, s);
        bench_fill(param, (size_t)N, ZERO_DTYPE_FP16, 15, 0.0f, 0.05f, s);
        zero_adam_seg seg = {0, N, 1e-3f, 0.01f, 0};
        zero_adam_args a;
        memset(&a, 0, sizeof a);
        a.master = master;
        a.m = m;
        a.v = v;
        a.grad = grad;
        a.grad_dtype = ZERO_DTYPE_FP16;
        a.param = param;
        a.param_dtype = ZERO_DTYPE_FP16;
        a.segs = &seg;
        a.n_segs = 1;
        a.beta1 = 0.9f;
        a.beta2 = 0.999f;
        a.eps = 1e-8f;
        a.bc1 = 1.0f - powf(0.9f, 10.0f);
        a.bc2 = 1.0f / sqrtf(1.0f - powf(0.999f, 10.0f));
        a.grad_scale = 1.0f / 65536.0f;
        a.adamw = 1;
        for (int i = 0; i < total; i++) {
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            BENCH_ZERO(be->adam(be->ctx, &a, ZERO_STREAM_COMPUTE, &be_err), &be_err);
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
        }
        adam_ms = bench_median(bench_event_ms(ea, eb, warmup, total));
        printf("  adam       %10.3f ms                      %8.1f GB/s  %5.1f%% of copy  (zero_backend.adam, fp16 grads "
               "-> fp32 master/m/v + fp16 params)\n",
               adam_ms, 28.0 * (double)N / (adam_ms * 1e-3) / 1e9, 100.0 * 28.0 * (double)N / (adam_ms * 1e-3) / 1e9 / copy_gbps);
        BENCH_CUDA(cudaFree(master));
        BENCH_CUDA(cudaFree(m));
        BENCH_CUDA(cudaFree(v));
        BENCH_CUDA(cudaFree(grad));
        BENCH_CUDA(cudaFree(param));
    }

    /* 3. zero_step of the engine */
    double step_ms, step_host_ms;
    int skipped = 0;
    {
        zero_config c = zero_config_default();
        c.train_micro_batch_size_per_gpu = 1;
        c.gradient_accumulation_steps = 1;
        c.zero_optimization.stage = 2;
        c.zero_optimization.overlap_comm = 1;
        c.fp16.enabled = 1;
        c.optimizer.type = ZERO_OPTIMIZER_ADAMW;
        c.optimizer.lr = 1e-4;
        c.optimizer.weight_decay = 0.01;
        c.gradient_clipping = 1.0;
        c.log.level = ZERO_LOG_WARN;
        BENCH_ZERO(zero_config_resolve(&c, 1, &err), &err);
        std::vector<zero_tensor> ts((size_t)tensors);
        std::vector<std::vector<char> > names((size_t)tensors, std::vector<char>(32));
        for (int t = 0; t < tensors; t++) {
            memset(&ts[(size_t)t], 0, sizeof(zero_tensor));
            snprintf(names[(size_t)t].data(), 32, "layer%d.weight", t);
            ts[(size_t)t].name = names[(size_t)t].data();
            ts[(size_t)t].numel = per;
            ts[(size_t)t].group = t;
            ts[(size_t)t].init = init_params;
        }
        zero_engine *e;
        double t0 = bench_now_s();
        BENCH_ZERO(zero_engine_create(&e, &c, ts.data(), tensors, be, &err), &err);
        zero_memory_stats ms;
        zero_memory_report(e, &ms);
        printf("# engine created in %.1f s; %.2f GB of device memory planned\n", bench_now_s() - t0,
               (double)ms.planned_total[ZERO_MEM_DEVICE] / 1e9);
        std::vector<double> host_ms;
        for (int i = 0; i < total; i++) {
            zero_step_info info;
            for (int t = tensors - 1; t >= 0; t--) { /* backward: random scaled gradients */
                void *g = bench_ptr(zero_grad(e, t), "zero_grad", e);
                bench_fill(g, (size_t)per, ZERO_DTYPE_FP16, 100u + (uint64_t)i * 1000u + (uint64_t)t, 0.0f, 1.0f, s);
                BENCH_ENG(zero_grad_ready(e, t), e);
            }
            BENCH_CUDA(cudaStreamSynchronize(s)); /* the reductions are done: the step alone is timed */
            double h0 = bench_now_s();
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            BENCH_ENG(zero_step(e, &info), e);
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
            BENCH_CUDA(cudaEventSynchronize(eb[(size_t)i]));
            if (i >= warmup) host_ms.push_back((bench_now_s() - h0) * 1e3);
            if (!info.applied) skipped++;
        }
        step_ms = bench_median(bench_event_ms(ea, eb, warmup, total));
        step_host_ms = bench_median(host_ms);
        printf("  zero_step  %10.3f ms (host wall %.3f)   %8.1f GB/s  %5.1f%% of copy  (at 28 B/param; %d of %d steps "
               "skipped)\n",
               step_ms, step_host_ms, 28.0 * (double)N / (step_ms * 1e-3) / 1e9,
               100.0 * 28.0 * (double)N / (step_ms * 1e-3) / 1e9 / copy_gbps, skipped, total);
        zero_engine_destroy(e);
    }
    if (skipped) fprintf(stderr, "bench_optim: %d steps were skipped (inf/nan): the step time is not Adam's\n", skipped);

    if (out_path) {
        FILE *f = fopen(out_path, "w");
        cudaDeviceProp p;
        BENCH_CUDA(cudaGetDeviceProperties(&p, 0));
        if (!f) {
            fprintf(stderr, "bench_optim: cannot write %s\n", out_path);
            return 1;
        }
        fprintf(f, "device %s\nparams %lld\ntensors %d\ncopy_gbps %.3f\nadam_ms %.6f\nstep_ms %.6f\nstep_host_ms %.6f\n"
                   "skipped %d\n",
                p.name, (long long)N, tensors, copy_gbps, adam_ms, step_ms, step_host_ms, skipped);
        fclose(f);
    }
    bench_events_free(ea);
    bench_events_free(eb);
    zero_cuda_backend_destroy(cu);
    return skipped ? 1 : 0;
}
