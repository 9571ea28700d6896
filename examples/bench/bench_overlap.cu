/* bench_overlap.cu - how much of the gradient communication a backward hides:
   a synthetic backward of L layers on every GPU, each layer a compute kernel
   of known length followed by its gradient (zero_grad, a fill kernel,
   zero_grad_ready), ZeRO stage 2 with one unit per layer.

       make bench
       build/bench/bench_overlap [--layers 24] [--numel 16777216] [--compute-us 200] [-n 10] [-w 2]

   One process per GPU (zero_cuda_launch_local forks them). Three loops, each
   timed with CUDA events on the compute stream from before the first layer
   to after the last zero_grad_ready (the micro-batch being complete, the
   compute stream waits there for the comm stream: the second event completes
   when the last reduction has):
     total     compute kernel + gradient fill + zero_grad_ready per layer
     compute   the same compute kernels and fills into a plain buffer, no engine
     comm      the engine loop without the compute kernels (fills kept)
   exposed communication = (total - compute) / comm. The engine clears each
   gradient slot on the compute stream when the backward takes it (a memset
   of the layer's gradient); "compute + gradient-slot memsets" measures that
   cost alone. With BENCH_GRAD_WRITE=1 the tensors are registered
   ZERO_TENSOR_GRAD_WRITE (the fill stores every element) and no slot is
   cleared.
   The compute kernel spins one warp per SM for --compute-us microseconds: it
   shows whether the engine starts each reduction as soon as its gradient is
   ready and keeps the compute stream running, not how a reduction slows
   under real kernels competing for SMs and memory bandwidth.
   A diagnostic loop runs the compute kernel on half the SMs (the other half
   left free for the communication kernels): "total, half-grid compute".
   The timeline is one more backward with CUDA events (timing on) recorded on
   the compute stream around each layer's zero_grad, compute and fill, and on
   the engine's communication stream before its pre-division, around its
   reduce-scatter and after its copy of the owned chunk: the backend's scale,
   reduce_scatter and convert are wrapped through the backend table
   (zero_backend) handed to zero_engine_create, and the wrappers record
   through the backend's own event_record. zero_event is the CUDA backend's
   private type (a cudaEvent_t in a struct, defined in zero_cuda.cuh's
   implementation): this benchmark fills it with timing events of its own,
   for want of a public handle on the communication stream. zero_step runs
   after every backward, outside the events. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "bench.cuh"

/* ---- the wrapped backend: stamps on the comm stream when asked ---- */

enum { ST_PRE, ST_RS0, ST_RS1, ST_END, ST_COUNT };
static const zero_backend *g_real;
static zero_backend g_wrapped;
static std::vector<zero_event> g_cev; /* [unit call][ST_*], timing events */
static int g_stamping, g_calls[ST_COUNT], g_max_calls;

static void stamp(int which, void *ctx) {
    zero_error err;
    if (!g_stamping || g_calls[which] >= g_max_calls) return;
    BENCH_ZERO(g_real->event_record(ctx, &g_cev[(size_t)g_calls[which] * ST_COUNT + which], ZERO_STREAM_COMM, &err), &err);
    g_calls[which]++;
}
/* The engine reduces with ZERO_OP_AVG (no pre-division pass) and, with one
   micro-batch, straight into the accumulator (no copy): the "pre" stamp is
   the reduce-scatter's start and "end" its end, unless a convert (accumulate)
   or the ring's memset follows, which record "end" again (re-recording an
   event moves it). */
static void restamp_end(void *ctx) {
    zero_error err;
    if (!g_stamping || g_calls[ST_END] == 0 || g_calls[ST_END] > g_max_calls) return;
    BENCH_ZERO(g_real->event_record(ctx, &g_cev[(size_t)(g_calls[ST_END] - 1) * ST_COUNT + ST_END], ZERO_STREAM_COMM, &err),
               &err);
}
static zero_result w_rs(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt, zero_op op,
                        zero_stream_id s, zero_error *err) {
    zero_result r;
    stamp(ST_PRE, ctx);
    stamp(ST_RS0, ctx);
    r = g_real->reduce_scatter(ctx, send, recv, count, dt, op, s, err);
    if (r == ZERO_OK) {
        stamp(ST_RS1, ctx);
        stamp(ST_END, ctx);
    }
    return r;
}
static zero_result w_convert(void *ctx, void *dst, zero_dtype ddt, const void *src, zero_dtype sdt, size_t n, int acc,
                             zero_stream_id s, zero_error *err) {
    zero_result r = g_real->convert(ctx, dst, ddt, src, sdt, n, acc, s, err);
    if (r == ZERO_OK && s == ZERO_STREAM_COMM) restamp_end(ctx);
    return r;
}
static zero_result w_memset0(void *ctx, void *p, size_t bytes, zero_stream_id s, zero_error *err) {
    zero_result r = g_real->memset0(ctx, p, bytes, s, err);
    if (r == ZERO_OK && s == ZERO_STREAM_COMM) restamp_end(ctx);
    return r;
}

int main(int argc, char **argv) {
    zero_error err;
    int L = 24, iters = 10, warmup = 2;
    int64_t numel = 16777216;
    double compute_us = 200;
    static const char usage[] =
        "usage: bench_overlap [--layers L] [--numel N] [--compute-us us] [-n iters] [-w warmup]\n"
        "  --layers      layers (one unit each), 1 to 1e5\n"
        "  --numel       elements per layer, 8 to 1e11 (rounded up to a multiple of 16)\n"
        "  --compute-us  the compute kernel per layer, 0 to 1e7 microseconds\n"
        "  -n            timed iterations, 1 to 1e6; -w  warm-up iterations, 0 to 1e6\n";
    if (tool_help_asked(argc, argv, usage)) return 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        int bad = 0;
        if (!strcmp(a, "--layers")) bad = bench_int("bench_overlap", a, v, 1, 100000, &L), i++;
        else if (!strcmp(a, "--numel")) {
            if (!(bad = tool_int("bench_overlap", a, v, 8, 100000000000LL, &n))) numel = (int64_t)n;
            i++;
        } else if (!strcmp(a, "--compute-us")) bad = tool_num("bench_overlap", a, v, 0, 1e7, &compute_us), i++;
        else if (!strcmp(a, "-n")) bad = bench_int("bench_overlap", a, v, 1, 1000000, &iters), i++;
        else if (!strcmp(a, "-w")) bad = bench_int("bench_overlap", a, v, 0, 1000000, &warmup), i++;
        else return tool_unknown_option("bench_overlap", a, usage);
        if (bad) return 2;
    }
    const int code = bench_launch(); /* after the flags: a bad one is reported once, not once per GPU */
    if (code >= 0) return code;
    numel = (numel + 15) / 16 * 16;
    const int total = warmup + iters;
    const uint64_t compute_ns = (uint64_t)(compute_us * 1e3), pre_ns = 500000;
    const zero_dtype dt = ZERO_DTYPE_FP16;
    const size_t es = 2, bytes = (size_t)numel * es;

    zero_dist_env env;
    BENCH_ZERO(zero_dist_env_read(&env, &err), &err);
    bench_rank = env.rank;
    if (env.world < 2) {
        fprintf(stderr, "bench_overlap: needs 2 or more GPUs (this process sees world %d)\n", env.world);
        return 1;
    }
    BENCH_CUDA(cudaSetDevice(env.local_rank));
    ncclComm_t comms[2]; /* [0] the engine's, [1] the line-up and the results */
    bench_comms(&env, 2, comms);
    zero_cuda_options copt = zero_cuda_options_default();
    copt.comm = comms[0];
    copt.device = env.local_rank; /* with a given communicator the backend does not read the local rank */
    zero_cuda *cu;
    BENCH_ZERO(zero_cuda_backend_init(&cu, &copt, &err), &err);
    g_real = zero_cuda_backend(cu);
    g_wrapped = *g_real;
    g_wrapped.memset0 = w_memset0;
    g_wrapped.reduce_scatter = w_rs;
    g_wrapped.convert = w_convert;
    cudaStream_t s = zero_cuda_stream(cu);
    const int R = env.rank, W = env.world, sms = bench_sm_count();

    zero_config c = zero_config_default();
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = 1;
    c.zero_optimization.stage = 2;
    c.zero_optimization.overlap_comm = 1;
    c.zero_optimization.reduce_bucket_size = numel;
    c.fp16.enabled = 1;
    c.log.level = ZERO_LOG_WARN;
    BENCH_ZERO(zero_config_resolve(&c, W, &err), &err);
    std::vector<zero_tensor> ts((size_t)L);
    std::vector<std::vector<char> > names((size_t)L, std::vector<char>(32));
    for (int l = 0; l < L; l++) {
        memset(&ts[(size_t)l], 0, sizeof(zero_tensor));
        snprintf(names[(size_t)l].data(), 32, "layer%d", l);
        ts[(size_t)l].name = names[(size_t)l].data();
        ts[(size_t)l].numel = numel;
        ts[(size_t)l].group = l;
        /* BENCH_GRAD_WRITE=1: the fill stores every element, so the tensors may be
           registered ZERO_TENSOR_GRAD_WRITE and the engine skips clearing slots */
        if (getenv("BENCH_GRAD_WRITE") && getenv("BENCH_GRAD_WRITE")[0] == '1') ts[(size_t)l].flags = ZERO_TENSOR_GRAD_WRITE;
    }
    zero_engine *e;
    BENCH_ZERO(zero_engine_create(&e, &c, ts.data(), L, &g_wrapped, &err), &err);
    BENCH_CUDA(cudaDeviceSynchronize());

    void *plain;
    float *one;
    BENCH_CUDA(cudaMalloc(&plain, bytes));
    BENCH_CUDA(cudaMalloc(&one, sizeof(float)));
    BENCH_CUDA(cudaMemset(one, 0, sizeof(float)));
    g_cev.resize((size_t)L * ST_COUNT);
    for (size_t k = 0; k < g_cev.size(); k++) BENCH_CUDA(cudaEventCreate(&g_cev[k].ev));
    std::vector<cudaEvent_t> tev; /* compute stream: [layer][zero_grad, compute start, compute end, fill end], begin, end */
    bench_events(tev, 4 * L + 2);
    g_max_calls = L;
    std::vector<cudaEvent_t> ea, eb;
    bench_events(ea, total);
    bench_events(eb, total);

    if (R == 0) {
        printf("# bench_overlap: %d ranks; synthetic backward of %d layers, each %.0f us of compute (one warp per SM "
               "spinning) then a %zu-byte fp16 gradient; ZeRO stage 2, one unit per layer\n",
               W, L, compute_us, bytes);
        bench_device_line("# ");
        printf("# events on the compute stream around the whole backward; median of %d after %d warm-up, max over "
               "ranks\n", iters, warmup);
    }

    /* mode 0: total, 1: compute only, 2: comm only, 3: compute + the engine's memsets (plain buffer),
       4: total with the compute kernel on half the SMs */
    double med[5];
    for (int mode = 0; mode < 5; mode++) {
        for (int i = 0; i < total; i++) {
            bench_align(comms[1], one, s, pre_ns);
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            for (int l = L - 1; l >= 0; l--) {
                uint64_t seed = (uint64_t)i * 1000u + (uint64_t)l * 10u + (uint64_t)R;
                if (mode == 0 || mode == 2 || mode == 4) {
                    void *g = bench_ptr(zero_grad(e, l), "zero_grad", e);
                    if (mode != 2) bench_spin<<<mode == 4 ? (sms + 1) / 2 : sms, 32, 0, s>>>(compute_ns);
                    bench_fill(g, (size_t)numel, dt, seed, 0.0f, 1.0f, s);
                    BENCH_ENG(zero_grad_ready(e, l), e);
                } else {
                    if (mode == 3) BENCH_CUDA(cudaMemsetAsync(plain, 0, bytes, s));
                    bench_spin<<<sms, 32, 0, s>>>(compute_ns);
                    bench_fill(plain, (size_t)numel, dt, seed, 0.0f, 1.0f, s);
                }
            }
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
            if (mode == 0 || mode == 2 || mode == 4) {
                zero_step_info info;
                BENCH_ENG(zero_step(e, &info), e);
            }
        }
        med[mode] = bench_median(bench_event_ms(ea, eb, warmup, total));
    }
    bench_max_over_ranks(comms[1], med, 5, s);

    /* the timeline: one more backward with stamps on both streams */
    memset(g_calls, 0, sizeof g_calls);
    bench_align(comms[1], one, s, pre_ns);
    g_stamping = 1;
    BENCH_CUDA(cudaEventRecord(tev[(size_t)(4 * L)], s));
    for (int l = L - 1, k = 0; l >= 0; l--, k++) {
        BENCH_CUDA(cudaEventRecord(tev[(size_t)(4 * k)], s));
        void *g = bench_ptr(zero_grad(e, l), "zero_grad", e);
        BENCH_CUDA(cudaEventRecord(tev[(size_t)(4 * k + 1)], s));
        bench_spin<<<sms, 32, 0, s>>>(compute_ns);
        BENCH_CUDA(cudaEventRecord(tev[(size_t)(4 * k + 2)], s));
        bench_fill(g, (size_t)numel, dt, 99u + (uint64_t)l, 0.0f, 1.0f, s);
        BENCH_CUDA(cudaEventRecord(tev[(size_t)(4 * k + 3)], s));
        BENCH_ENG(zero_grad_ready(e, l), e);
    }
    BENCH_CUDA(cudaEventRecord(tev[(size_t)(4 * L + 1)], s));
    g_stamping = 0;
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaStreamSynchronize(s));
    {
        zero_step_info info;
        BENCH_ENG(zero_step(e, &info), e);
    }
    BENCH_CUDA(cudaDeviceSynchronize());

    if (R == 0) {
        double total_ms = med[0], comp = med[1], comm = med[2], comp_clear = med[3], half = med[4];
        printf("#\n# %-38s %10s\n", "loop", "time (ms)");
        printf("  %-38s %10.3f\n", "total (compute + reductions)", total_ms);
        printf("  %-38s %10.3f\n", "compute only (kernels + fills)", comp);
        printf("  %-38s %10.3f\n", "compute + gradient-slot memsets", comp_clear);
        printf("  %-38s %10.3f   (%.3f per layer, %.0f%% of a layer's compute)\n", "comm only (engine, no compute)", comm,
               comm / L, 100.0 * comm / L / (compute_us * 1e-3));
        printf("  %-38s %10.3f   (exposed %.1f%% of comm)\n", "total, compute kernel on half the SMs", half,
               100.0 * (half - comp) / comm);
        printf("# exposed communication = (total - compute) / comm = %.1f%%  (target <= 10%%: %s)\n",
               100.0 * (total_ms - comp) / comm, (total_ms - comp) / comm <= 0.10 ? "met" : "missed");
        printf("# exposed beyond the engine's slot clears = (total - (compute + memsets)) / comm = %.1f%%%s\n",
               100.0 * (total_ms - comp_clear) / comm,
               getenv("BENCH_GRAD_WRITE") ? " (BENCH_GRAD_WRITE: the engine clears nothing here)" : "");
        printf("#\n# timeline of one backward, rank 0, microseconds from its start (CUDA events; compute stream: before "
               "zero_grad, compute start/end, fill end; comm stream: reduction start, reduce-scatter start/end, "
               "reduction end)\n");
        printf("# %5s %8s %8s %8s %8s | %8s %8s %8s %8s | %8s %8s\n", "layer", "zgrad", "c.start", "c.end", "fill.end",
               "r.start", "rs.start", "rs.end", "r.end", "wait", "reduce");
        cudaEvent_t t0 = tev[(size_t)(4 * L)];
        for (int k = 0; k < L; k++) {
            float v[8];
            for (int j = 0; j < 4; j++) BENCH_CUDA(cudaEventElapsedTime(&v[j], t0, tev[(size_t)(4 * k + j)]));
            for (int j = 0; j < 4; j++)
                BENCH_CUDA(cudaEventElapsedTime(&v[4 + j], t0, g_cev[(size_t)k * ST_COUNT + j].ev));
            printf("  %5d %8.1f %8.1f %8.1f %8.1f | %8.1f %8.1f %8.1f %8.1f | %8.1f %8.1f\n", L - 1 - k, v[0] * 1e3,
                   v[1] * 1e3, v[2] * 1e3, v[3] * 1e3, v[4] * 1e3, v[5] * 1e3, v[6] * 1e3, v[7] * 1e3,
                   (v[4] - v[3]) * 1e3, (v[7] - v[4]) * 1e3);
        }
        float c_last, end;
        BENCH_CUDA(cudaEventElapsedTime(&c_last, t0, tev[(size_t)(4 * L - 1)]));
        BENCH_CUDA(cudaEventElapsedTime(&end, t0, tev[(size_t)(4 * L + 1)]));
        printf("# last fill ends at %.1f us, the backward (compute stream after the last reduction) at %.1f us: %.1f us "
               "after\n",
               c_last * 1e3, end * 1e3, (end - c_last) * 1e3);
        printf("# zgrad..c.start = zero_grad (ring-slot wait + clear); wait = reduction start - its fill end; reduce = "
               "reduce-scatter (with 1/world inside, into the accumulator)\n");
    }

    bench_events_free(ea);
    bench_events_free(eb);
    zero_engine_destroy(e);
    cudaFree(plain);
    cudaFree(one);
    bench_events_free(tev);
    for (size_t k = 0; k < g_cev.size(); k++) cudaEventDestroy(g_cev[k].ev);
    zero_cuda_backend_destroy(cu);
    ncclCommDestroy(comms[0]);
    ncclCommDestroy(comms[1]);
    return 0;
}
