/* nvcc -std=c++17 -O2 -arch=sm_90 -I. -o build/minimal_cuda examples/minimal.cu -lnccl

   minimal.cu - examples/minimal.c on GPUs: the same 2-layer MLP, data and
   checks, with the CUDA backend (one process per GPU) and ZeRO stage 3, so
   each layer's weights are gathered on zero_fetch and dropped on
   zero_release around the kernels that use them. The forward and backward
   are tiny kernels on zero's compute stream.

       build/minimal_cuda [checkpoint_dir]     (default: a new directory in /tmp, removed at the end)

   Started by hand it forks one process per visible GPU; under torchrun
   --no-python, srun or mpirun each process is a rank, and checkpoint_dir
   must then be given (a directory every rank sees). Rank 0 ends with
   "N passed, N failed"; every rank exits non-zero on an error or a failed
   check. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>

enum { MICRO = 2, BATCH = 8, IN = 8, HID = 16, STEPS = 60 };
enum { W1, B1, W2, B2, NT };             /* the tensors, in forward order */
enum { ALL = IN * HID + HID + HID + 1 }; /* their elements */

/* A number in [-1, 1) from (a, b) alone, the same on the host and the GPU. */
static __host__ __device__ float rnd(uint64_t a, uint64_t b) {
    uint64_t x = (a + 1) * 0x9e3779b97f4a7c15ull ^ (b + 1) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31, x *= 0xd6e8feb86659fd93ull, x ^= x >> 32;
    return (float)(x >> 40) / (float)(1 << 23) - 1.0f;
}

/* The engine asks each rank only for the elements it keeps (on the host, as fp32). */
static void init_weight(void *user, int t, int64_t off, int64_t n, float *out) {
    (void)user;
    for (int64_t i = 0; i < n; i++) out[i] = 0.5f * rnd(1000 + (uint64_t)t, (uint64_t)(off + i));
}

/* ---- kernels: one block each, a fixed summation order (runs are repeatable) ---- */

/* layer 1, a thread per (sample i, hidden j): x from the sample's index, h = tanh(x W1 + b1) */
__global__ void layer1_fwd(uint64_t data, const float *w1, const float *b1, float *x, float *h) {
    int i = threadIdx.x / HID, j = threadIdx.x % HID;
    float z = b1[j];
    for (int k = 0; k < IN; k++) z += rnd(data + (uint64_t)i, (uint64_t)k) * w1[k * HID + j];
    h[i * HID + j] = tanhf(z);
    if (j < IN) x[i * IN + j] = rnd(data + (uint64_t)i, (uint64_t)j);
}

/* layer 2 and the loss, a thread per sample: p = h . w2 + b2 against y = tanh(sum_k sin(k + 1) x_k);
   d = d(loss * S)/dp, not divided by ranks or micro-batches (the engine averages) */
__global__ void layer2_fwd(const float *x, const float *h, const float *w2, const float *b2, float S, float *d,
                           float *loss) {
    __shared__ float l[BATCH];
    int i = threadIdx.x;
    float y = 0, p = b2[0];
    for (int k = 0; k < IN; k++) y += sinf(k + 1.0f) * x[i * IN + k];
    for (int j = 0; j < HID; j++) p += h[i * HID + j] * w2[j];
    y = tanhf(y);
    l[i] = 0.5f * (p - y) * (p - y) / BATCH;
    d[i] = S * (p - y) / BATCH;
    __syncthreads();
    if (i == 0) {
        float sum = 0;
        for (int k = 0; k < BATCH; k++) sum += l[k];
        *loss += sum / MICRO;
    }
}

/* layer 2's backward, a thread per hidden j: gw2, gb2, and dz = d w2 tanh' for layer 1 */
__global__ void layer2_bwd(const float *d, const float *h, const float *w2, float *dz, float *gw2, float *gb2) {
    int j = threadIdx.x;
    float g = 0, gb = 0;
    for (int i = 0; i < BATCH; i++) {
        float hij = h[i * HID + j];
        g += d[i] * hij, gb += d[i];
        dz[i * HID + j] = d[i] * w2[j] * (1 - hij * hij);
    }
    gw2[j] = g;
    if (j == 0) gb2[0] = gb;
}

/* layer 1's backward, a thread per weight (k, j): gw1 = x^T dz, gb1 = the column sums of dz */
__global__ void layer1_bwd(const float *x, const float *dz, float *gw1, float *gb1) {
    int k = threadIdx.x / HID, j = threadIdx.x % HID;
    float g = 0, gb = 0;
    for (int i = 0; i < BATCH; i++) g += x[i * IN + k] * dz[i * HID + j], gb += dz[i * HID + j];
    gw1[k * HID + j] = g;
    if (k == 0) gb1[j] = gb;
}

/* ---- one micro-batch ---- */

typedef struct acts {
    float *x, *h, *d, *dz; /* [BATCH, IN], [BATCH, HID], [BATCH], [BATCH, HID] */
} acts;

/* An engine call; on failure its error (what and why) becomes *err */
#define ENGINE(call) do { zero_result r_ = (call); if (r_ != ZERO_OK) { \
        *err = *zero_engine_error(e); return r_; } } while (0)
/* zero_param / zero_grad: NULL on failure */
#define BUFFER(p, call) do { if (!((p) = (float *)(call))) { \
        *err = *zero_engine_error(e); return err->code; } } while (0)

/* Samples data .. data + BATCH - 1; the loss (over MICRO) added to *loss on the GPU */
static zero_result micro_batch(zero_engine *e, cudaStream_t s, const acts *a, uint64_t data, float *loss,
                               zero_error *err) {
    float *w1, *b1, *w2, *b2, *gw1, *gb1, *gw2, *gb2;
    ENGINE(zero_fetch(e, W1)); /* stage 3: gathers fc1 from the ranks */
    ENGINE(zero_fetch(e, B1));
    BUFFER(w1, zero_param(e, W1));
    BUFFER(b1, zero_param(e, B1));
    layer1_fwd<<<1, BATCH * HID, 0, s>>>(data, w1, b1, a->x, a->h);
    ENGINE(zero_release(e, W1)); /* its memory may go to the next gather */
    ENGINE(zero_release(e, B1));
    ENGINE(zero_fetch(e, W2));
    ENGINE(zero_fetch(e, B2));
    BUFFER(w2, zero_param(e, W2));
    BUFFER(b2, zero_param(e, B2));
    layer2_fwd<<<1, BATCH, 0, s>>>(a->x, a->h, w2, b2, (float)zero_loss_scale(e), a->d, loss);
    ENGINE(zero_release(e, B2));
    /* backward, last tensor first: each gradient handed over as soon as its kernel is queued, so its unit's
       reduce-scatter runs on the communication stream while the next kernels run */
    BUFFER(gw2, zero_grad(e, W2));
    BUFFER(gb2, zero_grad(e, B2));
    layer2_bwd<<<1, HID, 0, s>>>(a->d, a->h, w2, a->dz, gw2, gb2);
    ENGINE(zero_release(e, W2)); /* w2 was needed until here, for dz */
    ENGINE(zero_grad_ready(e, B2));
    ENGINE(zero_grad_ready(e, W2));
    BUFFER(gw1, zero_grad(e, W1)); /* layer 1 reads no weights in its backward: no fetch */
    BUFFER(gb1, zero_grad(e, B1));
    layer1_bwd<<<1, IN * HID, 0, s>>>(a->x, a->dz, gw1, gb1);
    ENGINE(zero_grad_ready(e, B1));
    ENGINE(zero_grad_ready(e, W1));
    ZERO_CUDA_TRY(cudaGetLastError(), err); /* a launch that failed */
    return ZERO_OK;
}

/* ---- one rank ---- */

/* A failed call: which one, and why */
#define TRY(call, why) do { if ((r = (call)) != ZERO_OK) { \
        fprintf(stderr, "rank %d: %s: %s\n", be->rank, #call, why); goto out; } } while (0)

static zero_tensor tensor(const char *name, int64_t numel, int group, int flags, zero_init_fn init) {
    zero_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name, t.numel = numel, t.group = group, t.flags = flags, t.init = init;
    return t;
}

/* The default checkpoint directory is the program's own: removed at the end (a directory given is kept). */
static int remove_entry(const char *path, const struct stat *st, int kind, struct FTW *at) {
    (void)st, (void)kind, (void)at;
    return remove(path);
}
static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

int main(int argc, char **argv) {
    char tmp[] = "/tmp/zero_minimal_XXXXXX";
    if (argc > 1 && argv[1][0] == '-') { /* no flags: one optional directory */
        printf("usage: %s [checkpoint_dir]   (default: a new directory in /tmp, removed at the end)\n", argv[0]);
        return strcmp(argv[1], "--help") && strcmp(argv[1], "-h") ? 2 : 0;
    }
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp); /* before the fork: the local ranks share it */
    zero_cuda *cuda = NULL;
    zero_cuda_options opt = zero_cuda_options_default();
    zero_engine *e = NULL;
    zero_error err;
    zero_result r = ZERO_OK;
    acts a = {NULL, NULL, NULL, NULL};
    float *loss = NULL, host_loss[STEPS] = {0}, saved[ALL], loaded[ALL];
    int code = -1, ok[3] = {0, 0, 0};
    if (!dir || zero_cuda_launch_local(&code, &err) != ZERO_OK) {
        fprintf(stderr, "minimal_cuda: %s\n", dir ? err.msg : "mkdtemp failed");
        return 1;
    }
    if (code >= 0) { /* the parent of one process per GPU: their worst exit status */
        if (argc < 2) remove_tree(dir);
        return code;
    }
    if (zero_cuda_backend_init(&cuda, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "minimal_cuda: %s\n", err.msg);
        return 1;
    }
    const zero_backend *be = zero_cuda_backend(cuda);
    cudaStream_t s = zero_cuda_stream(cuda); /* our kernels and the engine's compute work share it */
    /* One group per layer: a unit never mixes the two, so stage 3 gathers a layer alone. */
    const zero_tensor tensors[NT] = {tensor("fc1.weight", IN * HID, 0, 0, init_weight),
                                     tensor("fc1.bias", HID, 0, ZERO_TENSOR_NO_DECAY, NULL),
                                     tensor("fc2.weight", HID, 1, 0, init_weight),
                                     tensor("fc2.bias", 1, 1, ZERO_TENSOR_NO_DECAY, NULL)};
    zero_config cfg = zero_config_default(); /* DeepSpeed's defaults; zero_config_load reads a ds_config.json */
    cfg.train_micro_batch_size_per_gpu = BATCH;
    cfg.gradient_accumulation_steps = MICRO;
    cfg.optimizer.lr = 0.01;
    cfg.zero_optimization.stage = 3;                              /* parameters sharded too */
    cfg.zero_optimization.reduce_bucket_size = 64;                /* elements per unit: fc1.weight fills two */
    cfg.zero_optimization.stage3_param_persistence_threshold = 0; /* else tensors this small stay gathered */
    TRY(zero_config_resolve(&cfg, be->world, &err), err.msg);
    TRY(zero_engine_create(&e, &cfg, tensors, NT, be, &err), err.msg);
    TRY(zero_cuda_check(cudaMalloc((void **)&a.x, sizeof(float) * (BATCH * (IN + 2 * HID + 1) + STEPS)), "cudaMalloc",
                        __FILE__, __LINE__, &err), err.msg);
    a.h = a.x + BATCH * IN, a.dz = a.h + BATCH * HID, a.d = a.dz + BATCH * HID, loss = a.d + BATCH;
    TRY(zero_cuda_check(cudaMemsetAsync(loss, 0, sizeof(float) * STEPS, s), "cudaMemsetAsync", __FILE__, __LINE__,
                        &err), err.msg);
    for (int step = 0; step < STEPS; step++) {
        for (int m = 0; m < MICRO; m++) /* every rank and micro-batch its own samples */
            TRY(micro_batch(e, s, &a, (((uint64_t)step * MICRO + (uint64_t)m) * be->world + (uint64_t)be->rank) * BATCH,
                            loss + step, &err), err.msg);
        if (cfg.jsonl_monitor.enabled == 1) { /* the metrics file carries the step's loss (rank 0's): only then is
                                                 it worth waiting for the step's kernels to read it */
            float mine = 0;
            TRY(zero_cuda_check(cudaMemcpyAsync(&mine, loss + step, sizeof mine, cudaMemcpyDeviceToHost, s),
                                "cudaMemcpyAsync", __FILE__, __LINE__, &err), err.msg);
            TRY(zero_cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize", __FILE__, __LINE__, &err), err.msg);
            zero_report_loss(e, mine);
        }
        TRY(zero_step(e, NULL), zero_engine_error(e)->msg); /* reduce, clip, Adam on this rank's shard */
    }
    /* the losses summed over the ranks once, at the end: a collective of the backend, after our kernels */
    TRY(zero_cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize", __FILE__, __LINE__, &err), err.msg);
    TRY(be->all_reduce(be->ctx, loss, loss, STEPS, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM, &err), err.msg);
    TRY(be->sync(be->ctx, ZERO_STREAM_COMM, &err), err.msg);
    TRY(zero_cuda_check(cudaMemcpy(host_loss, loss, sizeof host_loss, cudaMemcpyDeviceToHost), "cudaMemcpy", __FILE__,
                        __LINE__, &err), err.msg);
    ok[0] = host_loss[STEPS - 1] < host_loss[0] / 4; /* the same sums on every rank: the same verdict */
    TRY(zero_save(e, dir, &err), err.msg); /* each rank writes its shard, rank 0 the metadata */
    ok[1] = 1;
    for (int t = 0, at = 0; t < NT; at += (int)tensors[t].numel, t++) /* gathered from the ranks that own them */
        TRY(zero_read_state(e, t, ZERO_STATE_MASTER, 0, tensors[t].numel, saved + at), zero_engine_error(e)->msg);
    zero_engine_destroy(e); /* a new engine, as a resumed run would start, must come back to these weights */
    TRY(zero_engine_create(&e, &cfg, tensors, NT, be, &err), err.msg);
    TRY(zero_load(e, dir, &err), err.msg);
    for (int t = 0, at = 0; t < NT; at += (int)tensors[t].numel, t++)
        TRY(zero_read_state(e, t, ZERO_STATE_MASTER, 0, tensors[t].numel, loaded + at), zero_engine_error(e)->msg);
    ok[2] = memcmp(saved, loaded, sizeof saved) == 0;
out:
    if (be->rank == 0) {
        for (int step = 0; step < STEPS; step += 10)
            printf("step %2d  loss %.5f\n", step + 1, host_loss[step] / be->world);
        printf("%s  the loss fell: %.5f -> %.5f\n", ok[0] ? "ok  " : "FAIL", host_loss[0] / be->world,
               host_loss[STEPS - 1] / be->world);
        printf("%s  zero_save to %s%s\n", ok[1] ? "ok  " : "FAIL", dir,
               argc > 1 ? "" : " (a temporary directory, removed at the end)");
        printf("%s  zero_load into a fresh engine: the same weights\n", ok[2] ? "ok  " : "FAIL");
        printf("%d passed, %d failed\n", ok[0] + ok[1] + ok[2], 3 - ok[0] - ok[1] - ok[2]);
    }
    zero_engine_destroy(e); /* engines before their backend */
    cudaFree(a.x);
    if (argc < 2 && be->world == 1) remove_tree(dir); /* (more ranks: the process that started them removes it) */
    zero_cuda_backend_destroy(cuda);
    return r == ZERO_OK && ok[0] && ok[1] && ok[2] ? 0 : 1;
}
