// gpu_trainer.cu - tests/test_trainer.c's trainer (tied embedding, per-layer
// groups, its own cosine schedule, loss average and outlier skip) on the CUDA
// backend, one process per GPU: the program's arithmetic stays on the host
// (the model is tiny) and reaches the engine's device buffers through copies,
// so the engine's CUDA path is what is under test. Proves, at stages 0-3 with
// and without accumulation: the run trains (the outlier step skipped), its
// losses and weights equal the host backend's run of the same world
// (within 1e-6 of max|w|), and with the parameters (stages 0-2) and the
// gradients (every stage, no tied-embedding flag) in the program's own
// cudaMalloc'd stacked allocations bitwise the CUDA run without; at stage 3
// a forward on rank 0 alone inside zero_gather_params reads what the same
// forward on every rank reads (engine memory: a second pool; zero_alloc
// memory: none), the weights unchanged.
// Run alone (GPU machine): make test-gpu T=gpu_trainer
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "zero_test.h"

#define TRAINER_CUDA
static int host_mode; // the host backend's reference run: the program's memory is host memory
static zero_cuda *cu; // its compute stream runs what stands in for the program's kernels

static float *tr_param(zero_engine *e, int t);
static float *tr_grad(zero_engine *e, int t);
static zero_result tr_ready(zero_engine *e, int t);
static float *tr_alloc(size_t n) {
    float *p = NULL;
    if (host_mode) return (float *)malloc(sizeof(float) * n);
    return cudaMalloc((void **)&p, sizeof(float) * n) == cudaSuccess ? p : NULL;
}
static void tr_free(float *p) {
    if (p && host_mode) free(p);
    else if (p) cudaFree(p);
}
static void tr_put(float *dst, const float *src, size_t n) {
    cudaMemcpy(dst, src, sizeof(float) * n, host_mode ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice);
    if (!host_mode) cudaDeviceSynchronize(); // (from pageable memory the copy may still run when cudaMemcpy returns)
}
static void tr_get(float *dst, const float *src, size_t n) {
    if (!host_mode) cudaDeviceSynchronize(); // (the engine's streams do not order the legacy stream's copies)
    cudaMemcpy(dst, src, sizeof(float) * n, host_mode ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost);
}

#include "test_trainer.c"

// host mirrors of the engine's device buffers, one per tensor
static float mirror_p[NT][V * C], mirror_g[NT][V * C];
static void *grad_dev[NT];
static int64_t mirror_n[NT];

static float *tr_param(zero_engine *e, int t) {
    void *d = zero_param(e, t);
    if (!d || host_mode) return (float *)d;
    cudaDeviceSynchronize(); // the engine's streams: the parameters are in place
    cudaMemcpy(mirror_p[t], d, sizeof(float) * (size_t)numel_of(t), cudaMemcpyDeviceToHost);
    return mirror_p[t];
}
static float *tr_grad(zero_engine *e, int t) {
    void *d = zero_grad(e, t);
    if (!d || host_mode) return (float *)d;
    if (grad_dev[t] != d || mirror_n[t] == 0) { // the first ask of this micro-batch: the engine's (zeroed) buffer
        cudaDeviceSynchronize();
        cudaMemcpy(mirror_g[t], d, sizeof(float) * (size_t)numel_of(t), cudaMemcpyDeviceToHost);
        grad_dev[t] = d;
        mirror_n[t] = numel_of(t);
    }
    return mirror_g[t];
}
static zero_result tr_ready(zero_engine *e, int t) {
    if (host_mode) return zero_grad_ready(e, t);
    // the "backward kernel" writes on the compute stream, as a program's does: zero_grad_ready orders the
    // reduction behind it (a plain cudaMemcpy from pageable memory may still be in flight when it returns,
    // on a stream the engine's do not wait for)
    cudaMemcpyAsync(grad_dev[t], mirror_g[t], sizeof(float) * (size_t)numel_of(t), cudaMemcpyHostToDevice,
                    zero_cuda_stream(cu));
    mirror_n[t] = 0;
    grad_dev[t] = NULL;
    return zero_grad_ready(e, t);
}

// the host backend's run of the same trainer in this process
static void host_train(trainer *T, int stage, int world, int gas, int ext) {
    zero_error err;
    memset(T, 0, sizeof *T);
    T->stage = stage, T->world = world, T->gas = gas, T->flag = 1, T->ext = ext;
    make_tensors(1);
    host_mode = 1;
    CHECKF(zero_host_run(world, trainer_rank, T, &err) == ZERO_OK, "host run: %s", err.msg);
    host_mode = 0;
}

int main(void) {
    int code = 1;
    cu = zt_cuda_start("gpu_trainer", &code);
    if (!cu) return code;
    const zero_backend *be = zero_cuda_backend(cu);
    static trainer G, H, P;
    for (int gas = 1; gas <= 2; gas++)
        for (int stage = 0; stage <= 3; stage++) {
            if (B / (be->world * gas) < 1) continue;
            memset(&G, 0, sizeof G);
            G.stage = stage, G.world = be->world, G.gas = gas, G.flag = 1;
            make_tensors(1);
            CHECK(trainer_rank(be, &G) == ZERO_OK);
            CHECKF(G.create_r == ZERO_OK && G.run_r == ZERO_OK, "CUDA stage %d gas %d: %s", stage, gas, G.err);
            host_train(&H, stage, be->world, gas, 0);
            // the program's memory: run by every rank, so before the others leave for the next run
            for (int mode = 0; mode < 2; mode++) { // parameters (stages 0-2); parameters where allowed and gradients
                if (mode == 0 && stage > 2) continue;
                memset(&P, 0, sizeof P);
                P.stage = stage, P.world = be->world, P.gas = gas, P.flag = mode == 0, P.ext = stage <= 2 ? 1 : 2, P.gext = mode; // stage 3: zero_alloc memory, the program's pointers kept
                make_tensors(1);
                CHECK(trainer_rank(be, &P) == ZERO_OK);
                if (be->rank != 0) continue; // every rank runs it (its collectives); rank 0 holds the results
                CHECKF(P.create_r == ZERO_OK && P.run_r == ZERO_OK, "CUDA program memory (%d) stage %d gas %d: %s", mode, stage,
                       gas, P.err);
                CHECKF(max_diff(&G, &P) == 0 && !memcmp(G.loss, P.loss, sizeof P.loss) && (P.prog_equal || !P.ext),
                       "CUDA program memory (%d) stage %d gas %d: %.3g from the engine's memory (program memory %s)", mode,
                       stage, gas, max_diff(&G, &P), P.prog_equal ? "equal" : "differs");
            }
            if (stage == 3)
                for (int ext = 0; ext <= 2; ext += 2) { // a forward on every rank, then on rank 0 alone (zero_gather_params)
                    static trainer Ev, Ga;
                    trainer *X[2] = {&Ev, &Ga};
                    for (int k = 0; k < 2; k++) {
                        memset(X[k], 0, sizeof *X[k]);
                        X[k]->eval = 1 + k;
                        X[k]->stage = 3, X[k]->world = be->world, X[k]->gas = gas, X[k]->flag = 1, X[k]->ext = ext;
                        make_tensors(1);
                        CHECK(trainer_rank(be, X[k]) == ZERO_OK);
                    }
                    if (be->rank != 0) continue;
                    CHECKF(Ev.run_r == ZERO_OK && Ga.run_r == ZERO_OK && !memcmp(Ev.esum, Ga.esum, sizeof Ga.esum) &&
                               !memcmp(Ev.w, Ga.w, sizeof Ga.w) && !Ga.gather_misuse,
                           "CUDA stage 3 gas %d ext %d: rank 0's forward inside zero_gather_params differs from every "
                           "rank's: %s %s", gas, ext, Ev.err, Ga.err);
                }
            if (be->rank != 0) continue; // rank 0 holds the results
            double mw = max_abs(&H), d = max_diff(&H, &G), dl = 0;
            for (int k = 0; k < STEPS; k++) {
                CHECKF(G.applied[k] == (k != OUTLIER), "CUDA stage %d gas %d: step %d applied %d", stage, gas, k, G.applied[k]);
                dl = fmax(dl, fabs(G.loss[k] - H.loss[k]) / fabs(H.loss[k]));
            }
            CHECKF(d <= 1e-6 * mw && dl <= 1e-6, "CUDA stage %d gas %d: weights %.3g from the host run (max|w| %.3g), losses %.3g",
                   stage, gas, d, mw, dl);
            printf("gpu_trainer: stage %d gas %d world %d: CUDA vs host weights %.3g of max|w|, losses %.3g; %zu bytes\n", stage,
                   gas, be->world, d / mw, dl, G.mem_total);
        }
    zero_cuda_backend_destroy(cu);
    return zt_finish();
}
