/* bench_optim.cu - the optimizer step on one GPU: zero's fused Adam kernel
   and the engine's whole zero_step, in bytes per second against the
   device-to-device copy bandwidth measured in the same run. bench_torch_adam.py
   times PyTorch's fused AdamW and its mixed-precision sequence on the same GPU
   and prints the ratios (make bench runs both, this one first).

       make bench
       build/bench/bench_optim [--params 1e9] [--tensors 50] [-n 20] [-w 3] [--out file]

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
   Inputs are random (a hash of the index); the first steps are warm-up. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "bench.cuh"

static void init_params(void *user, int t, int64_t off, int64_t n, float *out) {
    (void)user;
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)((uint64_t)(off + i) * 2654435761u) ^ (uint32_t)(t * 0x9E3779B9u);
        out[i] = ((float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f) * 0.1f;
    }
}

int main(int argc, char **argv) {
    zero_error err;
    double params = 1e9;
    int tensors = 50, iters = 20, warmup = 3;
    const char *out_path = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    static const char usage[] =
        "usage: bench_optim [--params N] [--tensors T] [-n iters] [-w warmup] [--out file]\n"
        "  --params   parameters, 8 to 1e10 (1e9, 1.5B, 350M), at least one per tensor\n"
        "  --tensors  tensors of the engine, 1 to 1e6\n"
        "  -n         timed iterations, 1 to 1e6; -w  warm-up iterations, 1 to 1e6\n";
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        int bad = 0;
        if (!strcmp(a, "--params")) {
            if (!(bad = tool_count("bench_optim", a, v, 8, 10000000000LL, &n))) params = (double)n;
            i++;
        } else if (!strcmp(a, "--tensors")) bad = bench_int("bench_optim", a, v, 1, 1000000, &tensors), i++;
        else if (!strcmp(a, "-n")) bad = bench_int("bench_optim", a, v, 1, 1000000, &iters), i++;
        else if (!strcmp(a, "-w")) bad = bench_int("bench_optim", a, v, 1, 1000000, &warmup), i++;
        else if (!strcmp(a, "--out")) {
            if (!v || !*v) bad = tool_fail("bench_optim", a, "%s value (a file name)", v ? "empty" : "missing");
            out_path = v, i++;
        } else {
            fprintf(stderr, "bench_optim: unknown option '%s'\n", a);
            fputs(usage, stderr);
            return 2;
        }
        if (bad) return 2;
    }
    if (params < tensors) {
        tool_fail("bench_optim", "--tensors", "%d tensors is more than --params (%.0f)", tensors, params);
        return 2;
    }
    /* every tensor a multiple of 8 elements, so the total is exactly what is asked when it divides */
    const int64_t per = ((int64_t)(params / tensors) + 7) / 8 * 8;
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
        copy_gbps = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
        printf("  d2d copy   %10.3f ms for 2 x %.1f GB    %8.1f GB/s (read + write)\n", ms, (double)bytes / 1e9, copy_gbps);
        BENCH_CUDA(cudaFree(a));
        BENCH_CUDA(cudaFree(b));
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
        zero_adam_seg seg = {0, N, 1e-3f, 0.01f};
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
