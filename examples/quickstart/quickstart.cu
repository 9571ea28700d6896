/* quickstart.cu: quickstart.c's model on GPUs, one process per GPU.
   Build: nvcc -std=c++17 -O2 -arch=sm_90 -I<dir of zero.h> -o quickstart_cuda quickstart.cu -lnccl
   Run:   ./quickstart_cuda [ds_config.json] */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include <stdio.h>

enum { D = 64, STEPS = 300 };

__device__ float noise(unsigned long long a, unsigned long long b, unsigned long long c) {
    unsigned long long x = a * 0x9e3779b97f4a7c15ull ^ b * 0xbf58476d1ce4e5b9ull ^ c * 0x94d049bb133111ebull;
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    return (float)(x >> 40) / (float)(1 << 23) - 1.0f;
}

/* one block of D threads: forward and backward of B samples; adds the
   gradients of loss * S into gw and gb, and the loss into *loss */
__global__ void fwd_bwd(const float *w, const float *b, float *gw, float *gb, float *loss, float S, int B, int G,
                        long long step, long long slot) {
    __shared__ float px[D], py[D];
    int k = threadIdx.x;
    float g = 0, gbias = 0, l = 0;
    for (int i = 0; i < B; i++) {
        float x = noise(step, slot * 1000 + i, k), p = b[0], y = 0.5f;
        px[k] = w[k] * x;
        py[k] = sinf((float)k) * x;
        __syncthreads();
        for (int j = 0; j < D; j++) p += px[j], y += py[j];
        __syncthreads();
        g += S * (p - y) * x / B;
        gbias += S * (p - y) / B;
        l += 0.5f * (p - y) * (p - y) / B / G;
    }
    gw[k] += g;
    if (k == 0) gb[0] += gbias, *loss += l;
}

#define TRY(call) do { zero_result r_ = (call); if (r_ != ZERO_OK) return r_; } while (0)

/* the training loop: the calls of quickstart.c, the kernels on stream s */
static zero_result train(zero_engine *e, const zero_config *cfg, const zero_backend *be, cudaStream_t s,
                         float *loss) {
    const int B = (int)cfg->train_micro_batch_size_per_gpu, G = (int)cfg->gradient_accumulation_steps;
    for (int step = 0; step < STEPS; step++) {
        cudaMemsetAsync(loss, 0, sizeof(float), s);
        for (int micro = 0; micro < G; micro++) {
            TRY(zero_fetch(e, 0));
            TRY(zero_fetch(e, 1));
            const float *w = (const float *)zero_param(e, 0), *b = (const float *)zero_param(e, 1);
            float *gw = (float *)zero_grad(e, 0), *gb = (float *)zero_grad(e, 1);
            if (!w || !b || !gw || !gb) return zero_engine_error(e)->code;
            fwd_bwd<<<1, D, 0, s>>>(w, b, gw, gb, loss, (float)zero_loss_scale(e), B, G, step,
                                    (long long)micro * be->world + be->rank);
            TRY(zero_release(e, 0));
            TRY(zero_release(e, 1));
            TRY(zero_grad_ready(e, 1));
            TRY(zero_grad_ready(e, 0));
        }
        zero_step_info info;
        TRY(zero_step(e, &info));
        if (be->rank == 0 && (step + 1) % 50 == 0) {
            float host_loss = 0;
            cudaMemcpyAsync(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost, s);
            cudaStreamSynchronize(s);
            printf("step %3d  loss %.6f  grad norm %.4f  lr %g\n", step + 1, host_loss, info.grad_norm, info.lr);
        }
    }
    return ZERO_OK;
}

int main(int argc, char **argv) {
    int code;
    zero_error err;
    zero_cuda *cu;
    zero_engine *e;
    zero_config cfg = zero_config_default();
    zero_tensor ts[2] = {};
    float *loss = NULL;
    /* first, before any CUDA call: started by hand, fork one process per GPU */
    if (zero_cuda_launch_local(&code, &err) != ZERO_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
    if (code >= 0) return code; /* the parent: every rank has finished */
    /* the launcher's variables, the GPU, the streams, NCCL */
    if (zero_cuda_backend_init(&cu, NULL, &err) != ZERO_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
    const zero_backend *be = zero_cuda_backend(cu);
    cfg.train_micro_batch_size_per_gpu = 16;
    cfg.optimizer.lr = 0.02;
    cfg.zero_optimization.stage = 2;
    if ((argc > 1 && zero_config_load(&cfg, argv[1], &err) != ZERO_OK) ||
        zero_config_resolve(&cfg, be->world, &err) != ZERO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    ts[0].name = "w", ts[0].numel = D;
    ts[1].name = "b", ts[1].numel = 1, ts[1].flags = ZERO_TENSOR_NO_DECAY;
    if (zero_engine_create(&e, &cfg, ts, 2, be, &err) != ZERO_OK) {
        fprintf(stderr, "rank %d: %s\n", be->rank, err.msg);
        return 1;
    }
    int rc = 0;
    if (cudaMalloc((void **)&loss, sizeof(float)) != cudaSuccess ||
        train(e, &cfg, be, zero_cuda_stream(cu), loss) != ZERO_OK) {
        fprintf(stderr, "rank %d: %s\n", be->rank, zero_engine_error(e)->msg);
        rc = 1;
    } else if (be->rank == 0) {
        printf("stage %d, %d GPUs: done\n", cfg.zero_optimization.stage, be->world);
    }
    zero_engine_destroy(e);
    cudaFree(loss);
    zero_cuda_backend_destroy(cu);
    return rc;
}
