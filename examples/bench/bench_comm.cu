/* bench_comm.cu - reduce-scatter and all-gather through the engine's unit path
   against raw NCCL on the same bytes, in the same process, nccl-tests style.

       make bench                      (all benchmarks)
       build/bench/bench_comm [-b 1M] [-e 1G] [-n 20] [-w 5] [-t fp16,fp32]

   One process per GPU: started by hand, zero_cuda_launch_local forks one per
   visible GPU (torchrun, srun and mpirun work too).

   What is timed (CUDA events on the compute stream, one pair per iteration,
   median over iterations, then the largest median over ranks):
     raw RS     ncclReduceScatter in place on the full buffer (what the engine
                does), called directly on the compute stream
     engine RS  a model of one tensor of `count` elements, reduce_bucket_size =
                count, ZeRO stage 2, so one unit: the event pair brackets
                zero_grad_ready(), which queues on the engine's communication
                stream the reduce-scatter (ncclAvg: the 1/world factor inside
                NCCL), straight into the accumulator (gradient_accumulation_steps
                1) or followed by the fp32 accumulation of the owned chunk
                (gas > 1) (the tensor is registered ZERO_TENSOR_GRAD_WRITE,
                the fill storing every element, so the gradient slot is not
                cleared; without the flag the engine clears it on the comm
                stream after the reduction: one memset of the unit more), and, the
                micro-batch being complete, makes the compute stream wait for
                them: the second event completes when the comm stream is done.
                "gas 1" runs zero_step after each iteration, outside the events;
                "accum" is one engine with gas = iterations + 1, timing every
                micro-batch but the first (which copies instead of adding).
     raw AG     ncclAllGather out of place (shard -> full buffer)
     engine AG  the same tensor under stage 3 (persistence threshold 0, no
                prefetch): the event pair brackets zero_fetch(), which orders the
                comm stream after the compute stream, all-gathers the unit into
                the parameter pool and makes the compute stream wait for it
   Before every iteration the ranks line up (one-element all-reduce, then a
   0.5 ms spin on the GPU while the host queues the timed work), and gradients
   are refilled with random values outside the events. Raw NCCL uses its own
   communicator, made like the engine's (NCCL defaults) from the same ids.
   size = bytes of the full buffer (the unit), count = its elements;
   algbw = size / time; busbw = algbw * (n-1)/n (nccl-tests' factor for
   reduce-scatter and all-gather); ratio = raw time / engine time (= busbw
   ratio). The kernel columns time, for reference, a pre-division pass (the
   scale kernel over the unit, which the engine no longer runs) and the copy /
   fp32 accumulation of the owned chunk alone. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "bench.cuh"

typedef struct opts {
    size_t min_bytes, max_bytes;
    int iters, warmup;
    int fp16, fp32;
    uint64_t pre_ns;
} opts;

static void init_params(void *user, int t, int64_t off, int64_t n, float *out) {
    (void)user;
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)((uint64_t)(off + i + 1315423911u * (uint64_t)(t + 1)) * 2654435761u);
        out[i] = (float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
}

static zero_config make_cfg(int stage, zero_dtype dt, int64_t count, int64_t gas, int world) {
    zero_config c = zero_config_default();
    zero_error err;
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = gas;
    c.zero_optimization.stage = stage;
    c.zero_optimization.reduce_bucket_size = count;
    c.zero_optimization.overlap_comm = 1;
    c.zero_optimization.stage3_param_persistence_threshold = 0;
    c.zero_optimization.stage3_prefetch_bucket_size = 0;
    c.zero_optimization.stage3_max_live_parameters = count; /* pool: 2 units */
    c.fp16.enabled = dt == ZERO_DTYPE_FP16;
    c.log.level = ZERO_LOG_WARN;
    BENCH_ZERO(zero_config_resolve(&c, world, &err), &err);
    return c;
}

static zero_engine *make_engine(const zero_backend *be, int stage, zero_dtype dt, int64_t count, int64_t gas) {
    zero_config c = make_cfg(stage, dt, count, gas, be->world);
    zero_tensor t;
    zero_engine *e = NULL;
    zero_error err;
    memset(&t, 0, sizeof t);
    t.name = "unit";
    t.numel = count;
    t.init = stage == 3 ? init_params : NULL; /* stage 3 gathers the parameters: not zeros */
    t.flags = ZERO_TENSOR_GRAD_WRITE;          /* the fill stores every element: no slot clear */
    BENCH_ZERO(zero_engine_create(&e, &c, &t, 1, be, &err), &err);
    /* creation's own collectives finish before the benchmark's communicator is used */
    BENCH_CUDA(cudaDeviceSynchronize());
    return e;
}

int main(int argc, char **argv) {
    zero_error err;
    opts o = {1u << 20, (size_t)1 << 30, 20, 5, 1, 1, 500000};
    static const char usage[] =
        "usage: bench_comm [-b min bytes] [-e max bytes] [-n iters] [-w warmup] [-t fp16,fp32]\n"
        "  -b, -e  the smallest and largest buffer, 1K to 1024G bytes (K, M, G = 2^10, 2^20, 2^30), -b <= -e\n"
        "  -n      timed iterations, 1 to 1e6; -w  warm-up iterations, 0 to 1e6\n";
    if (tool_help_asked(argc, argv, usage)) return 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "-b")) bad = bench_size("bench_comm", a, v, 1024, (size_t)1 << 40, &o.min_bytes), i++;
        else if (!strcmp(a, "-e")) bad = bench_size("bench_comm", a, v, 1024, (size_t)1 << 40, &o.max_bytes), i++;
        else if (!strcmp(a, "-n")) bad = bench_int("bench_comm", a, v, 1, 1000000, &o.iters), i++;
        else if (!strcmp(a, "-w")) bad = bench_int("bench_comm", a, v, 0, 1000000, &o.warmup), i++;
        else if (!strcmp(a, "-t")) {
            if (!v || !*v)
                bad = tool_fail("bench_comm", a, "%s value (fp16, fp32 or fp16,fp32)", v ? "empty" : "missing");
            else if (!strstr(v, "fp16") && !strstr(v, "fp32"))
                bad = tool_fail("bench_comm", a, "'%s' names neither fp16 nor fp32", v);
            else o.fp16 = strstr(v, "fp16") != NULL, o.fp32 = strstr(v, "fp32") != NULL;
            i++;
        } else return tool_unknown_option("bench_comm", a, usage);
        if (bad) return 2;
    }
    if (o.max_bytes < o.min_bytes) {
        tool_fail("bench_comm", "-e", "%zu bytes is less than -b (%zu bytes)", o.max_bytes, o.min_bytes);
        return 2;
    }
    const int code = bench_launch(); /* after the flags: a bad one is reported once, not once per GPU */
    if (code >= 0) return code;

    zero_dist_env env;
    BENCH_ZERO(zero_dist_env_read(&env, &err), &err);
    bench_rank = env.rank;
    if (env.world < 2) {
        fprintf(stderr, "bench_comm: needs 2 or more GPUs (this process sees world %d)\n", env.world);
        return 1;
    }
    BENCH_CUDA(cudaSetDevice(env.local_rank));
    ncclComm_t comms[2]; /* [0] the engine's, [1] raw NCCL and the line-up */
    bench_comms(&env, 2, comms);
    zero_cuda_options copt = zero_cuda_options_default();
    copt.comm = comms[0];
    copt.device = env.local_rank; /* with a given communicator the backend does not read the local rank */
    zero_cuda *cu;
    BENCH_ZERO(zero_cuda_backend_init(&cu, &copt, &err), &err);
    const zero_backend *be = zero_cuda_backend(cu);
    cudaStream_t s = zero_cuda_stream(cu);
    ncclComm_t raw = comms[1];
    const int W = env.world, R = env.rank, total = o.warmup + o.iters;

    void *big, *shard, *acc;
    float *one;
    BENCH_CUDA(cudaMalloc(&big, o.max_bytes));
    BENCH_CUDA(cudaMalloc(&shard, o.max_bytes / (size_t)W + 256));
    BENCH_CUDA(cudaMalloc(&acc, o.max_bytes / (size_t)W * 2 + 256)); /* fp32 accumulator of an fp16 chunk */
    BENCH_CUDA(cudaMalloc(&one, sizeof(float)));
    BENCH_CUDA(cudaMemset(one, 0, sizeof(float)));
    std::vector<cudaEvent_t> ea, eb;
    bench_events(ea, total + 1);
    bench_events(eb, total + 1);

    if (R == 0) {
        printf("# bench_comm: %d ranks, one GPU each; reduce-scatter and all-gather of one unit, engine vs raw NCCL\n", W);
        bench_device_line("# ");
        printf("# events on the compute stream around each call after a GPU-side line-up of the ranks; median of %d "
               "iterations after %d warm-up, max over ranks\n", o.iters, o.warmup);
        printf("# engine RS = zero_grad_ready of a one-unit stage-2 model: ncclReduceScatter (ncclAvg) into the "
               "accumulator (gas 1) or + fp32 accumulate (accum) of the owned chunk, on the comm stream (tensor flagged "
               "ZERO_TENSOR_GRAD_WRITE: no slot clear); compute stream waits\n");
        printf("# engine AG = zero_fetch of a one-unit stage-3 model: ncclAllGather into the pool, compute stream "
               "waits\n");
        printf("# busbw = size/time * (n-1)/n; ratio = raw time / engine time; kernels alone: prediv (scale of the "
               "unit), copy / accum (of the chunk) through the backend\n");
    }

    for (int pass = 0; pass < 2; pass++) {
        zero_dtype dt = pass == 0 ? ZERO_DTYPE_FP16 : ZERO_DTYPE_FP32;
        if ((dt == ZERO_DTYPE_FP16 && !o.fp16) || (dt == ZERO_DTYPE_FP32 && !o.fp32)) continue;
        const size_t es = zero_dtype_size(dt);
        const ncclDataType_t nt = dt == ZERO_DTYPE_FP16 ? ncclFloat16 : ncclFloat32;
        if (R == 0) {
            printf("#\n# reduce-scatter, %s\n", zero_dtype_name(dt));
            printf("# %10s %11s %5s | %27s | %22s | %22s | %20s\n", "", "", "", "raw ncclReduceScatter", "engine, gas 1",
                   "engine, accum", "kernels alone (us)");
            printf("# %10s %11s %5s | %8s %8s %9s | %8s %7s %5s | %8s %7s %5s | %6s %6s %6s\n", "size(B)", "count", "type",
                   "time(us)", "algbw", "busbw", "time(us)", "busbw", "ratio", "time(us)", "busbw", "ratio", "prediv",
                   "copy", "accum");
        }
        std::vector<double> ag_rows; /* size, raw us, engine us per size */
        double worst_rs1 = 1e30, worst_rsa = 1e30, worst_ag = 1e30;
        for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
            const size_t n = bytes / es, chunk = n / (size_t)W;
            char *own = (char *)big + (size_t)R * chunk * es;
            double t[8]; /* raw RS, engine RS gas 1, engine RS accum, prediv, copy, accum, raw AG, engine AG (ms) */

            /* raw reduce-scatter */
            for (int i = 0; i < total; i++) {
                bench_align(raw, one, s, o.pre_ns);
                bench_fill(big, n, dt, 1000u + (uint64_t)i * 7u + (uint64_t)R, 0.0f, 1.0f, s);
                BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
                BENCH_NCCL(ncclReduceScatter(big, own, chunk, nt, ncclSum, raw, s));
                BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
            }
            t[0] = bench_median(bench_event_ms(ea, eb, o.warmup, total));

            /* engine, gas 1: zero_step after each micro-batch, outside the events */
            {
                zero_engine *e = make_engine(be, 2, dt, (int64_t)n, 1);
                for (int i = 0; i < total; i++) {
                    zero_step_info info;
                    bench_align(raw, one, s, o.pre_ns);
                    void *g = bench_ptr(zero_grad(e, 0), "zero_grad", e);
                    bench_fill(g, n, dt, 2000u + (uint64_t)i * 7u + (uint64_t)R, 0.0f, 1.0f, s);
                    BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
                    BENCH_ENG(zero_grad_ready(e, 0), e);
                    BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
                    BENCH_ENG(zero_step(e, &info), e);
                }
                t[1] = bench_median(bench_event_ms(ea, eb, o.warmup, total));
                zero_engine_destroy(e);
            }
            /* engine, accumulating micro-batches: gas = total + 1, the first untimed */
            {
                zero_engine *e = make_engine(be, 2, dt, (int64_t)n, total + 1);
                for (int i = -1; i < total; i++) {
                    bench_align(raw, one, s, o.pre_ns);
                    void *g = bench_ptr(zero_grad(e, 0), "zero_grad", e);
                    bench_fill(g, n, dt, 3000u + (uint64_t)(i + 1) * 7u + (uint64_t)R, 0.0f, 1.0f, s);
                    if (i >= 0) BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
                    BENCH_ENG(zero_grad_ready(e, 0), e);
                    if (i >= 0) BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
                }
                t[2] = bench_median(bench_event_ms(ea, eb, o.warmup, total));
                BENCH_CUDA(cudaStreamSynchronize(s));
                zero_engine_destroy(e); /* no zero_step: the accumulated gradients are dropped */
            }
            /* the kernels around the collective, alone, through the backend (compute stream) */
            {
                zero_error be_err;
                bench_fill(big, n, dt, 4000u, 0.0f, 1.0f, s);
                bench_fill(acc, chunk, ZERO_DTYPE_FP32, 4001u, 0.0f, 1.0f, s);
                for (int k = 0; k < 3; k++) {
                    for (int i = 0; i < total; i++) {
                        BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
                        if (k == 0) /* alternate 0.5 and 2: the values stay put */
                            BENCH_ZERO(be->scale(be->ctx, big, n, dt, i % 2 ? 2.0f : 0.5f, ZERO_STREAM_COMPUTE, &be_err),
                                       &be_err);
                        else if (k == 1)
                            BENCH_ZERO(be->convert(be->ctx, shard, dt, own, dt, chunk, 0, ZERO_STREAM_COMPUTE, &be_err),
                                       &be_err);
                        else
                            BENCH_ZERO(be->convert(be->ctx, acc, ZERO_DTYPE_FP32, own, dt, chunk, 1, ZERO_STREAM_COMPUTE,
                                                   &be_err),
                                       &be_err);
                        BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
                    }
                    t[3 + k] = bench_median(bench_event_ms(ea, eb, o.warmup, total));
                }
            }
            /* raw all-gather, out of place */
            bench_fill(shard, chunk, dt, 5000u + (uint64_t)R, 0.0f, 1.0f, s);
            for (int i = 0; i < total; i++) {
                bench_align(raw, one, s, o.pre_ns);
                BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
                BENCH_NCCL(ncclAllGather(shard, big, chunk, nt, raw, s));
                BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
            }
            t[6] = bench_median(bench_event_ms(ea, eb, o.warmup, total));
            /* engine all-gather: stage-3 fetch */
            {
                zero_engine *e = make_engine(be, 3, dt, (int64_t)n, 1);
                for (int i = 0; i < total; i++) {
                    bench_align(raw, one, s, o.pre_ns);
                    BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
                    BENCH_ENG(zero_fetch(e, 0), e);
                    BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
                    BENCH_ENG(zero_release(e, 0), e);
                }
                t[7] = bench_median(bench_event_ms(ea, eb, o.warmup, total));
                BENCH_CUDA(cudaStreamSynchronize(s));
                zero_engine_destroy(e);
            }
            bench_max_over_ranks(raw, t, 8, s);

            double f = (double)(W - 1) / W, gb = (double)bytes / 1e9;
            double bw[8];
            for (int k = 0; k < 8; k++) bw[k] = gb / (t[k] * 1e-3) * f; /* busbw */
            if (R == 0)
                printf("  %10zu %11zu %5s | %8.1f %8.2f %9.2f | %8.1f %7.2f %5.2f | %8.1f %7.2f %5.2f | %6.1f %6.1f %6.1f\n",
                       bytes, n, dt == ZERO_DTYPE_FP16 ? "half" : "float", t[0] * 1e3, gb / (t[0] * 1e-3), bw[0],
                       t[1] * 1e3, bw[1], t[0] / t[1], t[2] * 1e3, bw[2], t[0] / t[2], t[3] * 1e3, t[4] * 1e3,
                       t[5] * 1e3);
            ag_rows.push_back((double)bytes);
            ag_rows.push_back(t[6]);
            ag_rows.push_back(t[7]);
            if (bytes >= (16u << 20)) {
                worst_rs1 = std::min(worst_rs1, t[0] / t[1]);
                worst_rsa = std::min(worst_rsa, t[0] / t[2]);
                worst_ag = std::min(worst_ag, t[6] / t[7]);
            }
        }
        if (R == 0) {
            printf("#\n# all-gather, %s\n", zero_dtype_name(dt));
            printf("# %10s %11s %5s | %27s | %22s\n", "", "", "", "raw ncclAllGather", "engine zero_fetch (st. 3)");
            printf("# %10s %11s %5s | %8s %8s %9s | %8s %7s %5s\n", "size(B)", "count", "type", "time(us)", "algbw",
                   "busbw", "time(us)", "busbw", "ratio");
            for (size_t k = 0; k < ag_rows.size(); k += 3) {
                double bytes = ag_rows[k], tr = ag_rows[k + 1], te = ag_rows[k + 2], gb = bytes / 1e9;
                double f = (double)(W - 1) / W;
                printf("  %10.0f %11.0f %5s | %8.1f %8.2f %9.2f | %8.1f %7.2f %5.2f\n", bytes, bytes / (double)es,
                       dt == ZERO_DTYPE_FP16 ? "half" : "float", tr * 1e3, gb / (tr * 1e-3), gb / (tr * 1e-3) * f, te * 1e3,
                       gb / (te * 1e-3) * f, tr / te);
            }
            if (worst_ag < 1e29)
                printf("# %s, units >= 16 MB: worst engine/raw busbw: RS gas 1 %.3f, RS accum %.3f, AG %.3f (target >= "
                       "0.95: %s)\n",
                       zero_dtype_name(dt), worst_rs1, worst_rsa, worst_ag,
                       (worst_rs1 >= 0.95 && worst_rsa >= 0.95 && worst_ag >= 0.95) ? "met" : "missed");
        }
    }

    BENCH_CUDA(cudaStreamSynchronize(s));
    bench_events_free(ea);
    bench_events_free(eb);
    cudaFree(big);
    cudaFree(shard);
    cudaFree(acc);
    cudaFree(one);
    zero_cuda_backend_destroy(cu);
    ncclCommDestroy(comms[0]);
    ncclCommDestroy(comms[1]);
    return 0;
}
