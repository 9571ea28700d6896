/* train_mlp.cu - examples/train_mlp.c's character-level language model,
   trained on GPUs through zero's engine and its CUDA backend: one process per
   GPU, the forward and backward as CUDA kernels and cuBLAS GEMMs on zero's
   compute stream, parameters and gradients in the engine's device buffers.

   Same model, data, initial weights, sampling and flags as train_mlp.c (all
   in examples/train_mlp_common.h), so with fp32 and the same world size the
   losses follow the host build's to float rounding. Per micro-batch:

       sample      a kernel hashes (seed, step, slot) to text positions
                   (sample_pos, as the host does) and gathers the windows
       forward     per layer: zero_fetch, embedding gather or GEMM (cuBLAS,
                   fp32 accumulation; fp16/bf16 operands in those dtypes) and
                   a bias + GELU kernel, zero_release
       loss        softmax cross entropy and its gradient, one block per
                   sample, seeded with zero_loss_scale
       backward    per layer: dx = dz W^T, then dW = x^T dz and db written into
                   zero_grad's buffers and handed over with zero_grad_ready
                   (the engine reduces them on its communication stream while
                   the next layer's kernels run); the embedding's gradient is
                   a deterministic per-row sum (no atomics)

   Activations that feed a GEMM are kept in the compute dtype, pre-activations
   and dx in fp32. The loss of every step is summed on the GPU and all-reduced
   over the ranks only when a progress line is due, or before zero_step when
   the engine reports it (zero_report_loss: jsonl_monitor, steps_per_print).

       train_mlp_cuda [--stage 2] [--dtype fp32|fp16|bf16] [--steps 200] ...
       train_mlp_cuda --compare-stages
       CUDA_VISIBLE_DEVICES=0 train_mlp_cuda          one GPU
       torchrun --no-python --nproc-per-node 2 build/train_mlp_cuda

   Started by hand it forks one process per visible GPU
   (zero_cuda_launch_local); under torchrun, srun or mpirun each process is
   one rank. Build (make run does it when a GPU is present):
       nvcc -std=c++17 -O2 -arch=sm_90 -I. -o build/train_mlp_cuda examples/train_mlp.cu -lnccl -lcublas */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "train_mlp_common.h"
#include "example_dtype.cuh"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdarg.h>

static void usage(void) {
    printf("usage: train_mlp_cuda [options]\n"
           "\n"
           "Trains a character-level MLP language model with ZeRO on every visible GPU, one process\n"
           "per GPU (the CUDA backend; examples/train_mlp.c is the same on host ranks).\n"
           "\n"
           "%s"
           "  --quiet              no progress lines\n"
           "\n"
           "Started by hand, the program forks one process per visible GPU (choose them with\n"
           "CUDA_VISIBLE_DEVICES); under torchrun --no-python, srun or mpirun each process is a rank.\n"
           "%s",
           train_mlp_options, train_mlp_batch_note);
}

/* ---- errors ---- */

__attribute__((format(printf, 3, 4))) static zero_result fail_msg(zero_error *err, zero_result code, const char *fmt,
                                                                  ...) {
    va_list ap;
    memset(err, 0, sizeof *err);
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

static zero_result blas_check(cublasStatus_t s, const char *what, zero_error *err) {
    if (s == CUBLAS_STATUS_SUCCESS) return ZERO_OK;
    return fail_msg(err, ZERO_ERR_CUDA, "%s failed: %s", what, cublasGetStatusName(s));
}

/* An engine call: on failure its error (zero_engine_error) becomes *err. */
#define ENGINE_TRY(e, call)                                                                  \
    do {                                                                                     \
        zero_result r_ = (call);                                                             \
        if (r_ != ZERO_OK) {                                                                 \
            *err = *zero_engine_error(e);                                                    \
            if (err->code == ZERO_OK) fail_msg(err, r_, "%s: %s", #call, zero_result_string(r_)); \
            return r_;                                                                       \
        }                                                                                    \
    } while (0)

/* A kernel launch (or the kernels before it) failed */
#define LAUNCH_CHECK(err) ZERO_CUDA_TRY(cudaGetLastError(), err)

/* ---- element types: fp32, fp16, bf16 in memory; float in registers ---- */

__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + tanhf(GELU_A * (x + GELU_B * x * x * x))); }
__device__ __forceinline__ float gelu_grad(float x) {
    float t = tanhf(GELU_A * (x + GELU_B * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_A * (1.0f + 3.0f * GELU_B * x * x);
}

/* ---- kernels ---- */

#define THREADS 256
static unsigned blocks_for(int64_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }

/* ctx[b, k] and tgt[b] of sample index slot * batch + b (sample_pos) */
__global__ void sample_kernel(const unsigned char *tok, uint64_t n, int K, uint64_t seed, int64_t step, int64_t slot,
                              int batch, int *ctx, int *tgt) {
    int b = blockIdx.x * blockDim.x + threadIdx.x, k;
    uint64_t pos;
    if (b >= batch) return;
    pos = sample_pos(seed, step, slot * batch + b, n, K);
    for (k = 0; k < K; k++) ctx[b * K + k] = tok[pos + (uint64_t)k];
    tgt[b] = tok[pos + (uint64_t)K];
}

/* x[b, k*C + c] = wte[ctx[b, k], c] */
template <typename T>
__global__ void embed_fwd(const int *ctx, const T *wte, T *x, int rows, int C) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)rows * C) return;
    x[i] = wte[(int64_t)ctx[i / C] * C + i % C];
}

/* z += bias (z: [rows, out], fp32); act = gelu(z) in T when act is not NULL */
template <typename T>
__global__ void bias_gelu(float *z, const T *bias, T *act, int rows, int out) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float v;
    if (i >= (int64_t)rows * out) return;
    v = z[i] + ex_f32(bias[i % out]);
    z[i] = v;
    if (act) act[i] = ex_to<T>(gelu(v));
}

/* One block per sample: loss[b] = logsumexp(z) - z[tgt] and
   dz[b, v] = (softmax(z)[v] - [v == tgt]) * seed / batch, the gradient of the
   micro-batch mean times the loss scale. */
template <typename T>
__global__ void softmax_xent(const float *logits, const int *tgt, int V, float seed_over_batch, T *dz, float *loss) {
    __shared__ float red[THREADS];
    const float *z = logits + (int64_t)blockIdx.x * V;
    T *d = dz + (int64_t)blockIdx.x * V;
    int t = threadIdx.x, v, s, y = tgt[blockIdx.x];
    float mx = -INFINITY, sum = 0;
    for (v = t; v < V; v += blockDim.x) mx = fmaxf(mx, z[v]);
    red[t] = mx;
    __syncthreads();
    for (s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) red[t] = fmaxf(red[t], red[t + s]);
        __syncthreads();
    }
    mx = red[0];
    __syncthreads();
    for (v = t; v < V; v += blockDim.x) sum += expf(z[v] - mx);
    red[t] = sum;
    __syncthreads();
    for (s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) red[t] += red[t + s];
        __syncthreads();
    }
    sum = red[0];
    for (v = t; v < V; v += blockDim.x)
        d[v] = ex_to<T>((expf(z[v] - mx) / sum - (v == y ? 1.0f : 0.0f)) * seed_over_batch);
    if (t == 0) loss[blockIdx.x] = logf(sum) - (z[y] - mx);
}

/* *acc += factor * sum(loss[0..n)), in order: the rank's share of the step's loss */
__global__ void add_loss(const float *loss, int n, float factor, float *acc) {
    float s = 0;
    int i;
    for (i = 0; i < n; i++) s += loss[i];
    *acc += s * factor;
}

/* db[o] = sum over the batch of dz[b, o], in batch order */
template <typename T>
__global__ void bias_grad(const T *dz, int rows, int out, T *db) {
    int o = blockIdx.x * blockDim.x + threadIdx.x, b;
    float s = 0;
    if (o >= out) return;
    for (b = 0; b < rows; b++) s += ex_f32(dz[(int64_t)b * out + o]);
    db[o] = ex_to<T>(s);
}

/* dz = dx * gelu'(z): the previous layer's output gradient */
template <typename T>
__global__ void gelu_bwd(const float *dx, const float *z, int64_t n, T *dz) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dz[i] = ex_to<T>(dx[i] * gelu_grad(z[i]));
}

/* gwte[v, c] = sum of dx[r, c] over the rows r (b, k) whose id is v, in row
   order: one thread per element of wte, no atomics, the same every run */
template <typename T>
__global__ void embed_bwd(const int *ctx, const float *dx, int rows, int C, int V, T *g) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int v, c, r;
    float s = 0;
    if (i >= (int64_t)V * C) return;
    v = (int)(i / C), c = (int)(i % C);
    for (r = 0; r < rows; r++)
        if (ctx[r] == v) s += dx[(int64_t)r * C + c];
    g[i] = ex_to<T>(s);
}

/* ---- GEMMs (cuBLAS is column-major; our matrices are row-major) ---- */

/* Row-major C[m', n'] = op(...) products, written as cuBLAS's column-major
   C^T: every call below is annotated with the row-major product it computes.
   fp32 accumulation always (CUBLAS_COMPUTE_32F: no TF32 for fp32 operands). */
template <typename T>
static zero_result gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T *A,
                        int lda, const T *B, int ldb, void *C, cudaDataType_t ctype, int ldc, zero_error *err) {
    const float one = 1.0f, zero = 0.0f;
    return blas_check(cublasGemmEx(h, ta, tb, m, n, k, &one, A, ex_dtype<T>::cuda, lda, B, ex_dtype<T>::cuda, ldb,
                                   &zero, C, ctype, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmEx", err);
}

/* ---- one rank's training ---- */

/* What lives for the whole process: the backend, cuBLAS, the text on the GPU */
typedef struct gpu {
    zero_cuda *cuda;
    const zero_backend *be;
    cudaStream_t stream;
    cublasHandle_t blas;
    unsigned char *tok; /* the text's ids, on the device */
    int rank, world;
    char ranks[320]; /* "2 GPUs (NVIDIA H200)" for the header */
} gpu;

/* A micro-batch's device buffers, activations in T */
template <typename T> struct acts {
    int *ctx, *tgt;
    T *x[MAX_LAYERS + 2];     /* x[0]: concatenated embeddings; x[l]: gelu(z[l]) */
    float *z[MAX_LAYERS + 2]; /* pre-activations, z[L+1]: logits */
    T *dz;                    /* output gradient of the current layer */
    float *dx;                /* input gradient of the current layer */
    float *loss;              /* [batch] */
};

template <typename T> static void acts_free(acts<T> *a) {
    int l;
    cudaFree(a->ctx);
    cudaFree(a->tgt);
    for (l = 0; l < MAX_LAYERS + 2; l++) cudaFree(a->x[l]), cudaFree(a->z[l]);
    cudaFree(a->dz);
    cudaFree(a->dx);
    cudaFree(a->loss);
    memset(a, 0, sizeof *a);
}

template <typename T> static zero_result acts_alloc(acts<T> *a, const mlp_dims *d, int B, zero_error *err) {
    int l, widest = d->context * d->embd;
    memset(a, 0, sizeof *a);
    if (d->hidden > widest) widest = d->hidden;
    if (d->vocab > widest) widest = d->vocab;
    ZERO_CUDA_TRY(cudaMalloc((void **)&a->ctx, sizeof(int) * (size_t)B * (size_t)d->context), err);
    ZERO_CUDA_TRY(cudaMalloc((void **)&a->tgt, sizeof(int) * (size_t)B), err);
    ZERO_CUDA_TRY(cudaMalloc((void **)&a->x[0], sizeof(T) * (size_t)B * (size_t)(d->context * d->embd)), err);
    for (l = 1; l <= d->layers + 1; l++) {
        ZERO_CUDA_TRY(cudaMalloc((void **)&a->z[l], sizeof(float) * (size_t)B * (size_t)fan_out(d, l)), err);
        if (l <= d->layers)
            ZERO_CUDA_TRY(cudaMalloc((void **)&a->x[l], sizeof(T) * (size_t)B * (size_t)fan_out(d, l)), err);
    }
    ZERO_CUDA_TRY(cudaMalloc((void **)&a->dz, sizeof(T) * (size_t)B * (size_t)widest), err);
    ZERO_CUDA_TRY(cudaMalloc((void **)&a->dx, sizeof(float) * (size_t)B * (size_t)widest), err);
    ZERO_CUDA_TRY(cudaMalloc((void **)&a->loss, sizeof(float) * (size_t)B), err);
    return ZERO_OK;
}

/* zero_param(t) in T, or the engine's error */
template <typename T> static zero_result param_of(zero_engine *e, int t, const T **p, zero_error *err) {
    *p = (const T *)zero_param(e, t);
    if (*p) return ZERO_OK;
    *err = *zero_engine_error(e);
    if (err->code == ZERO_OK) fail_msg(err, ZERO_ERR_STATE, "zero_param(%d) returned NULL", t);
    return err->code;
}

template <typename T> static zero_result grad_of(zero_engine *e, int t, T **g, zero_error *err) {
    *g = (T *)zero_grad(e, t);
    if (*g) return ZERO_OK;
    *err = *zero_engine_error(e);
    if (err->code == ZERO_OK) fail_msg(err, ZERO_ERR_STATE, "zero_grad(%d) returned NULL", t);
    return err->code;
}

/* One micro-batch (its samples already in a->ctx, a->tgt): forward, loss
   (added to *loss_acc times loss_factor), backward with the gradients handed
   to the engine layer by layer, as train_mlp.c's micro_batch does. */
template <typename T>
static zero_result micro_batch(const gpu *g, zero_engine *e, const mlp_dims *d, acts<T> *a, int B, int frozen_wte,
                               float loss_factor, float *loss_acc, zero_error *err) {
    cudaStream_t s = g->stream;
    cublasHandle_t h = g->blas;
    int L = d->layers, K = d->context, C = d->embd, V = d->vocab, l;
    const T *W, *bias;
    T *gW, *gb;

    /* forward */
    ENGINE_TRY(e, zero_fetch(e, T_WTE));
    if (param_of(e, T_WTE, &W, err)) return err->code;
    embed_fwd<T><<<blocks_for((int64_t)B * K * C), THREADS, 0, s>>>(a->ctx, W, a->x[0], B * K, C);
    LAUNCH_CHECK(err);
    ENGINE_TRY(e, zero_release(e, T_WTE));
    for (l = 1; l <= L + 1; l++) {
        int in = fan_in(d, l), out = fan_out(d, l);
        ENGINE_TRY(e, zero_fetch(e, t_weight(l)));
        ENGINE_TRY(e, zero_fetch(e, t_bias(l)));
        if (param_of(e, t_weight(l), &W, err) || param_of(e, t_bias(l), &bias, err)) return err->code;
        /* z[B, out] = x[B, in] W[in, out] */
        if (gemm<T>(h, CUBLAS_OP_N, CUBLAS_OP_N, out, B, in, W, out, a->x[l - 1], in, a->z[l], CUDA_R_32F, out, err))
            return err->code;
        bias_gelu<T><<<blocks_for((int64_t)B * out), THREADS, 0, s>>>(a->z[l], bias, l <= L ? a->x[l] : NULL, B, out);
        LAUNCH_CHECK(err);
        ENGINE_TRY(e, zero_release(e, t_weight(l)));
        ENGINE_TRY(e, zero_release(e, t_bias(l)));
    }
    softmax_xent<T><<<B, THREADS, 0, s>>>(a->z[L + 1], a->tgt, V, (float)zero_loss_scale(e) / (float)B, a->dz, a->loss);
    add_loss<<<1, 1, 0, s>>>(a->loss, B, loss_factor, loss_acc);
    LAUNCH_CHECK(err);

    /* backward: a->dz holds dL/dz[l] */
    for (l = L + 1; l >= 1; l--) {
        int in = fan_in(d, l), out = fan_out(d, l);
        ENGINE_TRY(e, zero_fetch(e, t_weight(l)));
        ENGINE_TRY(e, zero_fetch(e, t_bias(l)));
        if (param_of(e, t_weight(l), &W, err)) return err->code;
        /* dx[B, in] = dz[B, out] W^T (not needed below a frozen embedding) */
        if ((l > 1 || !frozen_wte) &&
            gemm<T>(h, CUBLAS_OP_T, CUBLAS_OP_N, in, B, out, W, out, a->dz, out, a->dx, CUDA_R_32F, in, err))
            return err->code;
        ENGINE_TRY(e, zero_release(e, t_weight(l)));
        ENGINE_TRY(e, zero_release(e, t_bias(l)));
        /* gradients in backward order (bias, then weight), each handed over when written */
        if (grad_of(e, t_bias(l), &gb, err)) return err->code;
        bias_grad<T><<<blocks_for(out), THREADS, 0, s>>>(a->dz, B, out, gb);
        LAUNCH_CHECK(err);
        ENGINE_TRY(e, zero_grad_ready(e, t_bias(l)));
        if (grad_of(e, t_weight(l), &gW, err)) return err->code;
        /* dW[in, out] = x[B, in]^T dz[B, out] */
        if (gemm<T>(h, CUBLAS_OP_N, CUBLAS_OP_T, out, in, B, a->dz, out, a->x[l - 1], in, gW, ex_dtype<T>::cuda, out,
                    err))
            return err->code;
        ENGINE_TRY(e, zero_grad_ready(e, t_weight(l)));
        if (l > 1) {
            gelu_bwd<T><<<blocks_for((int64_t)B * in), THREADS, 0, s>>>(a->dx, a->z[l - 1], (int64_t)B * in, a->dz);
            LAUNCH_CHECK(err);
        }
    }
    if (!frozen_wte) { /* the embedding's backward reads no parameters: no fetch */
        if (grad_of(e, T_WTE, &gW, err)) return err->code;
        embed_bwd<T><<<blocks_for((int64_t)V * C), THREADS, 0, s>>>(a->ctx, a->dx, B * K, C, V, gW);
        LAUNCH_CHECK(err);
        ENGINE_TRY(e, zero_grad_ready(e, T_WTE));
    }
    return ZERO_OK;
}

/* Sum the per-rank losses of steps [from, to) over the ranks into host[from..to):
   after the compute stream's kernels, on the communication stream (where the
   engine's collectives run, so the order is the same on every rank). */
static zero_result gather_losses(const gpu *g, zero_event *ev, const float *mine, float *sum, float *host, int from,
                                 int to, zero_error *err) {
    const zero_backend *be = g->be;
    zero_result r;
    size_t n = (size_t)(to - from);
    if ((r = be->event_record(be->ctx, ev, ZERO_STREAM_COMPUTE, err)) != ZERO_OK ||
        (r = be->stream_wait(be->ctx, ZERO_STREAM_COMM, ev, err)) != ZERO_OK ||
        (r = be->all_reduce(be->ctx, mine + from, sum + from, n, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM, err)) !=
            ZERO_OK ||
        (r = be->copy(be->ctx, host + from, sum + from, n * sizeof(float), ZERO_STREAM_COMM, err)) != ZERO_OK)
        return r;
    return be->sync(be->ctx, ZERO_STREAM_COMM, err);
}

template <typename T>
static zero_result train_rank(const gpu *g, const options *o, const corpus *text, int stage, const zero_config *cfg,
                              const zero_tensor *tensors, int nt, result *res, const char **where, zero_error *err) {
    const int B = (int)cfg->train_micro_batch_size_per_gpu, gas = (int)cfg->gradient_accumulation_steps;
    zero_engine *e = NULL;
    zero_event *ev = NULL;
    acts<T> a;
    float *loss_mine = NULL, *loss_sum = NULL, *loss_host = NULL;
    double *step_loss = NULL, t0, window = 0;
    int step, micro, t, n_window = 0, done = 0; /* done: steps whose global loss is on the host */
    int64_t at = 0;
    zero_result r;

    memset(&a, 0, sizeof a);
    *where = "zero_engine_create";
    if ((r = zero_engine_create(&e, cfg, tensors, nt, g->be, err)) != ZERO_OK) return r;
    *where = "buffers";
    if ((r = acts_alloc<T>(&a, &o->d, B, err)) != ZERO_OK) goto out;
    if ((r = zero_cuda_check(cudaMalloc((void **)&loss_mine, sizeof(float) * (size_t)o->steps), "cudaMalloc",
                             __FILE__, __LINE__, err)) != ZERO_OK ||
        (r = zero_cuda_check(cudaMalloc((void **)&loss_sum, sizeof(float) * (size_t)o->steps), "cudaMalloc",
                             __FILE__, __LINE__, err)) != ZERO_OK ||
        (r = zero_cuda_check(cudaMemsetAsync(loss_mine, 0, sizeof(float) * (size_t)o->steps, g->stream),
                             "cudaMemsetAsync", __FILE__, __LINE__, err)) != ZERO_OK ||
        (r = g->be->event_create(g->be->ctx, &ev, err)) != ZERO_OK)
        goto out;
    loss_host = (float *)calloc((size_t)o->steps, sizeof(float));
    step_loss = (double *)calloc((size_t)o->steps, sizeof(double));
    res->weights = (float *)calloc((size_t)res->n_weights, sizeof(float));
    if (!loss_host || !step_loss || !res->weights) {
        r = fail_msg(err, ZERO_ERR_OUT_OF_MEMORY, "host buffers");
        goto out;
    }
    if ((r = g->be->sync(g->be->ctx, ZERO_STREAM_COMPUTE, err)) != ZERO_OK) goto out;
    t0 = now_s();
    for (step = 1; step <= o->steps; step++) {
        zero_step_info info;
        int flush = step == o->steps || (!o->quiet && !o->compare && (step == 1 || step % o->print_every == 0));
        /* the engine writes the loss into its metrics file (jsonl_monitor)
           and its progress line (steps_per_print): on those steps the global
           loss comes to the host before zero_step, a wait for this step's
           kernels that the other steps do without */
        int to_engine = cfg->jsonl_monitor.enabled == 1 ||
                        (cfg->steps_per_print > 0 && (zero_global_steps(e) + 1) % cfg->steps_per_print == 0);
        *where = "micro-batch";
        for (micro = 0; micro < gas; micro++) {
            sample_kernel<<<blocks_for(B), THREADS, 0, g->stream>>>(g->tok, (uint64_t)text->n, o->d.context, o->seed,
                                                                    step, (int64_t)micro * g->world + g->rank, B,
                                                                    a.ctx, a.tgt);
            if ((r = micro_batch<T>(g, e, &o->d, &a, B, o->freeze, 1.0f / ((float)B * (float)gas),
                                    loss_mine + (step - 1), err)) != ZERO_OK)
                goto out;
        }
        if (to_engine) {
            *where = "loss all-reduce";
            if ((r = gather_losses(g, ev, loss_mine, loss_sum, loss_host, step - 1, step, err)) != ZERO_OK) goto out;
            zero_report_loss(e, (double)loss_host[step - 1] / g->world);
        }
        *where = "zero_step";
        if ((r = zero_step(e, &info)) != ZERO_OK) {
            *err = *zero_engine_error(e);
            goto out;
        }
        res->last = info;
        if (!flush) continue;
        *where = "loss all-reduce";
        if ((r = gather_losses(g, ev, loss_mine, loss_sum, loss_host, done, step, err)) != ZERO_OK) goto out;
        for (; done < step; done++) {
            step_loss[done] = (double)loss_host[done] / g->world;
            window += step_loss[done], n_window++;
        }
        if (o->report && !o->quiet && !o->compare) {
            print_progress(o, step, step_loss[step - 1], n_window, window, &info);
            window = 0, n_window = 0;
        }
    }
    res->seconds = now_s() - t0; /* the last gather_losses waited for the last step */
    result_losses(res, step_loss, o->steps);
    if (write_loss_file(o, stage, step_loss, 1)) {
        r = fail_msg(err, ZERO_ERR_IO, "%s: cannot write", o->loss_file);
        goto out;
    }
    res->tokens_per_step = cfg->train_batch_size;

    *where = "zero_memory_report";
    if ((r = zero_memory_report(e, &res->mem0)) != ZERO_OK) {
        *err = *zero_engine_error(e);
        goto out;
    }
    *where = "zero_read_state"; /* a collective: every rank gets the weights */
    for (t = 0; t < nt; t++) {
        if ((r = zero_read_state(e, t, ZERO_STATE_MASTER, 0, tensors[t].numel, res->weights + at)) != ZERO_OK) {
            *err = *zero_engine_error(e);
            goto out;
        }
        at += tensors[t].numel;
    }
    r = ZERO_OK;
out:
    if (ev) g->be->event_destroy(g->be->ctx, ev);
    zero_engine_destroy(e);
    cudaStreamSynchronize(g->stream);
    acts_free<T>(&a);
    cudaFree(loss_mine);
    cudaFree(loss_sum);
    free(loss_host);
    free(step_loss);
    return r;
}

/* train_fn of train_mlp_common.h: one run on every rank */
static int train(const options *o, const corpus *text, int stage, int verbose, result *res, void *user) {
    const gpu *g = (const gpu *)user;
    zero_config cfg;
    zero_error err;
    zero_tensor tensors[MAX_TENSORS];
    char names[MAX_TENSORS][32];
    init_spec spec;
    int64_t total = 0;
    int nt;
    const char *where = "";
    zero_result r;

    memset(res, 0, sizeof *res);
    memset(&err, 0, sizeof err);
    if (make_config(o, stage, &cfg, &err) != ZERO_OK) {
        if (o->report) fprintf(stderr, "%s: %s\n", o->prog, err.msg);
        return 1;
    }
    nt = model_tensors(o, tensors, names, &spec, &total);
    if (verbose && o->report) print_header(o, &cfg, g->ranks, total, nt);
    res->n_weights = total;
    switch (compute_dtype(&cfg)) {
    case ZERO_DTYPE_FP16: r = train_rank<__half>(g, o, text, stage, &cfg, tensors, nt, res, &where, &err); break;
    case ZERO_DTYPE_BF16: r = train_rank<__nv_bfloat16>(g, o, text, stage, &cfg, tensors, nt, res, &where, &err); break;
    default: r = train_rank<float>(g, o, text, stage, &cfg, tensors, nt, res, &where, &err); break;
    }
    if (r != ZERO_OK) {
        fprintf(stderr, "%s: rank %d: %s: %s\n", o->prog, g->rank, where, err.msg[0] ? err.msg : zero_result_string(r));
        free(res->weights);
        res->weights = NULL;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    options o;
    text_files files;
    corpus text;
    gpu g;
    zero_error err;
    zero_cuda_options opt;
    cudaDeviceProp prop;
    int rc = 1, code = -1, dev = 0, parsed;

    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines as they happen, also through a pipe */
    memset(&text, 0, sizeof text);
    memset(&g, 0, sizeof g);
    memset(&err, 0, sizeof err);
    options_default(&o, "train_mlp_cuda");
    if ((parsed = parse_args(argc, argv, 1, &o, &files)) != 0) { /* 2: --help; 1: a bad flag, said */
        if (parsed == 2) usage();
        rc = parsed == 2 ? 0 : 2;
        goto done;
    }
    /* before any CUDA call: started by hand on several GPUs, this process
       becomes the parent of one process per GPU and returns their exit code */
    code = -1;
    if (zero_cuda_launch_local(&code, &err) != ZERO_OK) {
        fprintf(stderr, "%s: %s\n", o.prog, err.msg);
        goto done;
    }
    if (code >= 0) {
        rc = code;
        goto done;
    }
    opt = zero_cuda_options_default();
    if (zero_cuda_backend_init(&g.cuda, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "%s: %s\n", o.prog, err.msg);
        goto done;
    }
    g.be = zero_cuda_backend(g.cuda);
    g.stream = zero_cuda_stream(g.cuda);
    g.rank = zero_cuda_env(g.cuda)->rank;
    g.world = zero_cuda_env(g.cuda)->world;
    o.world = g.world;
    o.report = g.rank == 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        snprintf(prop.name, sizeof prop.name, "?");
    snprintf(g.ranks, sizeof g.ranks, "%d GPU%s (%s), one process each", g.world, g.world == 1 ? "" : "s",
             prop.name);
    if (load_text(&o, &files, &text)) goto done;
    if (zero_cuda_check(cudaMalloc((void **)&g.tok, text.n), "cudaMalloc(text)", __FILE__, __LINE__, &err) ||
        zero_cuda_check(cudaMemcpy(g.tok, text.tok, text.n, cudaMemcpyHostToDevice), "cudaMemcpy(text)", __FILE__,
                        __LINE__, &err) ||
        blas_check(cublasCreate(&g.blas), "cublasCreate", &err) ||
        blas_check(cublasSetStream(g.blas, g.stream), "cublasSetStream", &err)) {
        fprintf(stderr, "%s: rank %d: %s\n", o.prog, g.rank, err.msg);
        goto done;
    }
    rc = o.compare ? compare_stages(&o, &text, train, &g) : train_one(&o, &text, train, &g);
done:
    if (g.blas) cublasDestroy(g.blas);
    if (g.tok) cudaFree(g.tok);
    if (g.cuda) zero_cuda_backend_destroy(g.cuda);
    corpus_free(&text);
    text_files_free(&files);
    return rc;
}
