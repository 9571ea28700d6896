/*
 * train_gpt2.cu - the GPU twin of train_gpt2.c: the same small GPT-2 trainer,
 * fp32, on one NVIDIA GPU with CUDA.
 *
 * It has the shape of llm.c's CUDA trainer (train_gpt2_fp32.cu): the same
 * structs, kernel names, single allocations (params_memory is one cudaMalloc,
 * the per-kind pointers point into it; the gradients likewise, allocated on
 * the first backward), activations on the GPU, and every kernel, copy and
 * memset on one stream, main_stream. The model, its seeded init (computed on
 * the host exactly as train_gpt2.c does, then copied to the GPU), the data,
 * the 20 steps of AdamW and the stdout are train_gpt2.c's, and so is the
 * fused forward: each layer's closing residual add goes with the NEXT
 * layer's first layernorm (layer l reads layer l+1's ln1w/ln1b, the last
 * layer lnfw/lnfb). It differs from train_gpt2.c in how the layers run: each
 * C function is a kernel (or a few) with one thread per output element, or
 * per row where a row is one reduction (layernorm, softmax, an attention
 * row), running the C loop's body in its order; the weight and bias
 * gradients that the C loops accumulate over B*T get kernels of their own,
 * one thread per weight element looping over (b, t) in order; the attention
 * backward is split into kernels that each write distinct outputs. No
 * atomics and no reduction whose order depends on scheduling, so a run is
 * deterministic. The GPU's expf, tanhf, ... and its fused multiply-adds
 * round differently from the CPU's: the losses follow train_gpt2.c's
 * closely, not bitwise. The update is the program's own AdamW kernel.
 *
 * Build: nvcc -std=c++17 -O2 -arch=sm_90 train_gpt2.cu
 * Run:   ./a.out [grad_accum_steps] [params_out_path]
 * Stdout: one "step %d: train loss %.6f" line per step, and greedily sampled
 * tokens every 10 steps (train_gpt2.c's format); other information goes to
 * stderr. It runs on the first visible GPU (CUDA_VISIBLE_DEVICES).
 */
#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* small helpers */

static void fail(const char* msg) { fprintf(stderr, "error: %s\n", msg); exit(EXIT_FAILURE); }

static void* calloc_check(size_t n, size_t size) {
    void* p = calloc(n, size);
    if (p == NULL) fail("out of memory");
    return p;
}

/* CUDA error checking: every CUDA call goes through cudaCheck */
static void cuda_check(cudaError_t error, const char* file, int line) {
    if (error != cudaSuccess) {
        fprintf(stderr, "[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
        exit(EXIT_FAILURE);
    }
}
#define cudaCheck(err) (cuda_check((err), __FILE__, __LINE__))

/* every kernel launch, memset and copy goes on this stream (made in main),
 * never on the legacy default stream */
static cudaStream_t main_stream;

/* the launch shape: block_size threads per block, enough blocks for N */
static const int block_size = 256;
#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

/* splitmix64: a tiny, fast, deterministic random number generator */
static unsigned long long splitmix64(unsigned long long* state) {
    unsigned long long z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static double random_uniform(unsigned long long* state) {
    return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* standard normal, by the Box-Muller transform */
static double random_normal(unsigned long long* state) {
    double u1 = 1.0 - random_uniform(state); /* in (0, 1], safe for log */
    double u2 = random_uniform(state);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ------------------------------------------------------------------------ */
/* all the individual layers' forward and backward passes: each C function
 * of train_gpt2.c is here a host function of the same name and arguments
 * that launches its kernel(s) on main_stream.
 * B = batch size, T = sequence length, C = channels, V = vocab size,
 * Vp = padded vocab size, NH = number of heads */

__global__ void encoder_forward_kernel(float* out, const int* inp, const float* wte,
                                       const float* wpe, int B, int T, int C) {
    /* one thread per (b, t, i): out[b,t,i] = wte[inp[b,t],i] + wpe[t,i] */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * C) return;
    int bt = idx / C, t = bt % T, i = idx % C;
    out[idx] = wte[inp[bt] * C + i] + wpe[t * C + i];
}

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe,
                     int B, int T, int C) {
    encoder_forward_kernel<<<CEIL_DIV(B * T * C, block_size), block_size, 0, main_stream>>>(
        out, inp, wte, wpe, B, T, C);
    cudaCheck(cudaGetLastError());
}

__global__ void encoder_backward_wte_kernel(float* dwte, const float* dout, const int* inp,
                                            int B, int T, int C, int Vp) {
    /* one thread per (ix, i) of dwte: the positions whose token is ix, in
     * (b, t) order, as the C loops add them */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= Vp * C) return;
    int ix = idx / C, i = idx % C;
    for (int bt = 0; bt < B * T; bt++) {
        if (inp[bt] == ix) dwte[idx] += dout[bt * C + i];
    }
}

__global__ void encoder_backward_wpe_kernel(float* dwpe, const float* dout, int B, int T, int C) {
    /* one thread per (t, i) of dwpe, over b in order */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * C) return;
    for (int b = 0; b < B; b++) dwpe[idx] += dout[b * T * C + idx];
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp,
                      int B, int T, int C, int Vp) {
    encoder_backward_wte_kernel<<<CEIL_DIV(Vp * C, block_size), block_size, 0, main_stream>>>(
        dwte, dout, inp, B, T, C, Vp);
    cudaCheck(cudaGetLastError());
    encoder_backward_wpe_kernel<<<CEIL_DIV(T * C, block_size), block_size, 0, main_stream>>>(
        dwpe, dout, B, T, C);
    cudaCheck(cudaGetLastError());
}

/* one row of layernorm; shared by layernorm_forward and the fused kernel so
 * that both give bit-identical results */
__device__ static void layernorm_row(float* out, float* mean, float* rstd, const float* x,
                                     const float* weight, const float* bias, int C) {
    const float eps = 1e-5f;
    float m = 0.0f;
    for (int i = 0; i < C; i++) m += x[i];
    m = m / C;
    float v = 0.0f;
    for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
    v = v / C;
    float s = 1.0f / sqrtf(v + eps);
    for (int i = 0; i < C; i++) out[i] = (s * (x[i] - m)) * weight[i] + bias[i];
    *mean = m, *rstd = s; /* cached for the backward pass */
}

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int N, int C) {
    /* one thread per row (b, t) */
    int bt = blockIdx.x * blockDim.x + threadIdx.x;
    if (bt >= N) return;
    layernorm_row(out + bt * C, mean + bt, rstd + bt, inp + bt * C, weight, bias, C);
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int B, int T, int C) {
    layernorm_forward_kernel<<<CEIL_DIV(B * T, block_size), block_size, 0, main_stream>>>(
        out, mean, rstd, inp, weight, bias, B * T, C);
    cudaCheck(cudaGetLastError());
}

__global__ void layernorm_backward_kernel(float* dinp, const float* dout, const float* inp,
                                          const float* weight, const float* mean,
                                          const float* rstd, int N, int C) {
    /* one thread per row (b, t): the C loop's body without dweight and dbias */
    int bt = blockIdx.x * blockDim.x + threadIdx.x;
    if (bt >= N) return;
    const float* dout_bt = dout + bt * C;
    const float* inp_bt = inp + bt * C;
    float* dinp_bt = dinp + bt * C;
    float mean_bt = mean[bt], rstd_bt = rstd[bt];
    /* two reductions: mean of dnorm and mean of dnorm * norm */
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = 0; i < C; i++) {
        float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
        float dnorm_i = weight[i] * dout_bt[i];
        dnorm_mean += dnorm_i;
        dnorm_norm_mean += dnorm_i * norm_bti;
    }
    dnorm_mean = dnorm_mean / C;
    dnorm_norm_mean = dnorm_norm_mean / C;
    /* accumulate the input gradient */
    for (int i = 0; i < C; i++) {
        float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
        float dnorm_i = weight[i] * dout_bt[i];
        float dval = dnorm_i - dnorm_mean - norm_bti * dnorm_norm_mean;
        dinp_bt[i] += dval * rstd_bt;
    }
}

__global__ void layernorm_backward_weight_kernel(float* dweight, float* dbias, const float* dout,
                                                 const float* inp, const float* mean,
                                                 const float* rstd, int N, int C) {
    /* one thread per channel i: dweight[i] and dbias[i], over (b, t) in order */
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= C) return;
    for (int bt = 0; bt < N; bt++) {
        float norm_bti = (inp[bt * C + i] - mean[bt]) * rstd[bt];
        dbias[i] += dout[bt * C + i];
        dweight[i] += norm_bti * dout[bt * C + i];
    }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C) {
    layernorm_backward_kernel<<<CEIL_DIV(B * T, block_size), block_size, 0, main_stream>>>(
        dinp, dout, inp, weight, mean, rstd, B * T, C);
    cudaCheck(cudaGetLastError());
    layernorm_backward_weight_kernel<<<CEIL_DIV(C, block_size), block_size, 0, main_stream>>>(
        dweight, dbias, dout, inp, mean, rstd, B * T, C);
    cudaCheck(cudaGetLastError());
}

__global__ void matmul_forward_kernel(float* out, const float* inp, const float* weight,
                                      const float* bias, int N, int C, int OC) {
    /* one thread per (b, t, o) */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * OC) return;
    int bt = idx / OC, o = idx % OC;
    const float* inp_bt = inp + bt * C;
    const float* wrow = weight + o * C;
    float val = (bias != NULL) ? bias[o] : 0.0f;
    for (int i = 0; i < C; i++) val += inp_bt[i] * wrow[i];
    out[bt * OC + o] = val;
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int B, int T, int C, int OC) {
    /* inp is (B,T,C), weight is (OC,C), bias is (OC) or NULL; out is (B,T,OC) */
    matmul_forward_kernel<<<CEIL_DIV(B * T * OC, block_size), block_size, 0, main_stream>>>(
        out, inp, weight, bias, B * T, C, OC);
    cudaCheck(cudaGetLastError());
}

__global__ void matmul_backward_inp_kernel(float* dinp, const float* dout, const float* weight,
                                           int N, int C, int OC) {
    /* one thread per (b, t, i) of dinp, over o in order */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * C) return;
    int bt = idx / C, i = idx % C;
    const float* dout_bt = dout + bt * OC;
    for (int o = 0; o < OC; o++) {
        float d = dout_bt[o];
        dinp[idx] += weight[o * C + i] * d;
    }
}

__global__ void matmul_backward_weight_kernel(float* dweight, float* dbias, const float* dout,
                                              const float* inp, int N, int C, int OC) {
    /* one thread per weight element (o, i), over (b, t) in order; the thread
     * of i == 0 also does dbias[o] */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= OC * C) return;
    int o = idx / C, i = idx % C;
    for (int bt = 0; bt < N; bt++) {
        float d = dout[bt * OC + o];
        if (dbias != NULL && i == 0) dbias[o] += d;
        dweight[idx] += inp[bt * C + i] * d;
    }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC) {
    /* backward into inp first */
    matmul_backward_inp_kernel<<<CEIL_DIV(B * T * C, block_size), block_size, 0, main_stream>>>(
        dinp, dout, weight, B * T, C, OC);
    cudaCheck(cudaGetLastError());
    /* then into weight and bias */
    matmul_backward_weight_kernel<<<CEIL_DIV(OC * C, block_size), block_size, 0, main_stream>>>(
        dweight, dbias, dout, inp, B * T, C, OC);
    cudaCheck(cudaGetLastError());
}

__global__ void attention_forward_kernel(float* out, float* preatt, float* att, const float* inp,
                                         int B, int T, int C, int NH) {
    /* one thread per (b, t, h): the C loop's body */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * NH) return;
    int b = idx / (T * NH), t = (idx / NH) % T, h = idx % NH;
    int C3 = C * 3, hs = C / NH; /* hs: head size */
    float scale = 1.0f / sqrtf((float)hs);
    const float* query_t = inp + b * T * C3 + t * C3 + h * hs;
    float* preatt_bth = preatt + b * NH * T * T + h * T * T + t * T;
    float* att_bth = att + b * NH * T * T + h * T * T + t * T;
    /* pass 1: query . key, and the running max */
    float maxval = -FLT_MAX;
    for (int t2 = 0; t2 <= t; t2++) {
        const float* key_t2 = inp + b * T * C3 + t2 * C3 + h * hs + C;
        float val = 0.0f;
        for (int i = 0; i < hs; i++) val += query_t[i] * key_t2[i];
        val *= scale;
        if (val > maxval) maxval = val;
        preatt_bth[t2] = val;
    }
    /* pass 2: exp and sum */
    float expsum = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
        float expv = expf(preatt_bth[t2] - maxval);
        expsum += expv;
        att_bth[t2] = expv;
    }
    float expsum_inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
    /* pass 3: normalize; the masked positions get zero */
    for (int t2 = 0; t2 <= t; t2++) att_bth[t2] *= expsum_inv;
    for (int t2 = t + 1; t2 < T; t2++) att_bth[t2] = preatt_bth[t2] = 0.0f;
    /* pass 4: weighted sum of the values */
    float* out_bth = out + b * T * C + t * C + h * hs;
    for (int i = 0; i < hs; i++) out_bth[i] = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
        const float* value_t2 = inp + b * T * C3 + t2 * C3 + h * hs + C * 2;
        float att_btht2 = att_bth[t2];
        for (int i = 0; i < hs; i++) out_bth[i] += att_btht2 * value_t2[i];
    }
}

void attention_forward(float* out, float* preatt, float* att, const float* inp,
                       int B, int T, int C, int NH) {
    /* inp is (B,T,3C) holding the query, key, value vectors; preatt and att
     * are (B,NH,T,T); out is (B,T,C). Causal: position t sees 0..t only. */
    attention_forward_kernel<<<CEIL_DIV(B * T * NH, block_size), block_size, 0, main_stream>>>(
        out, preatt, att, inp, B, T, C, NH);
    cudaCheck(cudaGetLastError());
}

__global__ void attention_backward_att_kernel(float* dpreatt, float* datt, const float* dout,
                                              const float* inp, const float* att,
                                              int B, int T, int C, int NH) {
    /* one thread per (b, t, h): the row's datt (backward through pass 4,
     * without dvalue), then its dpreatt (through the softmax) */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * NH) return;
    int b = idx / (T * NH), t = (idx / NH) % T, h = idx % NH;
    int C3 = C * 3, hs = C / NH;
    const float* att_bth = att + b * NH * T * T + h * T * T + t * T;
    float* datt_bth = datt + b * NH * T * T + h * T * T + t * T;
    float* dpreatt_bth = dpreatt + b * NH * T * T + h * T * T + t * T;
    const float* dout_bth = dout + b * T * C + t * C + h * hs;
    for (int t2 = 0; t2 <= t; t2++) {
        const float* value_t2 = inp + b * T * C3 + t2 * C3 + h * hs + C * 2;
        for (int i = 0; i < hs; i++) datt_bth[t2] += value_t2[i] * dout_bth[i];
    }
    for (int t2 = 0; t2 <= t; t2++) {
        for (int t3 = 0; t3 <= t; t3++) {
            float indicator = t2 == t3 ? 1.0f : 0.0f;
            float local_derivative = att_bth[t2] * (indicator - att_bth[t3]);
            dpreatt_bth[t3] += local_derivative * datt_bth[t2];
        }
    }
}

__global__ void attention_backward_query_kernel(float* dinp, const float* inp,
                                                const float* dpreatt, int B, int T, int C,
                                                int NH) {
    /* one thread per (b, t, h, i) of dquery: over t2 <= t in order (pass 1) */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * C) return;
    int C3 = C * 3, hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    int b = idx / (T * C), t = (idx / C) % T, h = (idx / hs) % NH, i = idx % hs;
    const float* dpreatt_bth = dpreatt + b * NH * T * T + h * T * T + t * T;
    float* dquery_t = dinp + b * T * C3 + t * C3 + h * hs;
    for (int t2 = 0; t2 <= t; t2++) {
        const float* key_t2 = inp + b * T * C3 + t2 * C3 + h * hs + C;
        dquery_t[i] += key_t2[i] * dpreatt_bth[t2] * scale;
    }
}

__global__ void attention_backward_kv_kernel(float* dinp, const float* dout, const float* inp,
                                             const float* dpreatt, const float* att,
                                             int B, int T, int C, int NH) {
    /* one thread per (b, t2, h, i) of dkey and dvalue: over the rows t >= t2
     * that see position t2, in order (passes 4 and 1) */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * C) return;
    int C3 = C * 3, hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    int b = idx / (T * C), t2 = (idx / C) % T, h = (idx / hs) % NH, i = idx % hs;
    float* dkey_t2 = dinp + b * T * C3 + t2 * C3 + h * hs + C;
    float* dvalue_t2 = dinp + b * T * C3 + t2 * C3 + h * hs + C * 2;
    for (int t = t2; t < T; t++) {
        const float* att_bth = att + b * NH * T * T + h * T * T + t * T;
        const float* dpreatt_bth = dpreatt + b * NH * T * T + h * T * T + t * T;
        const float* query_t = inp + b * T * C3 + t * C3 + h * hs;
        const float* dout_bth = dout + b * T * C + t * C + h * hs;
        dvalue_t2[i] += att_bth[t2] * dout_bth[i];
        dkey_t2[i] += query_t[i] * dpreatt_bth[t2] * scale;
    }
}

void attention_backward(float* dinp, float* dpreatt, float* datt, const float* dout,
                        const float* inp, const float* att, int B, int T, int C, int NH) {
    /* datt and dpreatt per row first; then dquery, dkey and dvalue read them */
    attention_backward_att_kernel<<<CEIL_DIV(B * T * NH, block_size), block_size, 0, main_stream>>>(
        dpreatt, datt, dout, inp, att, B, T, C, NH);
    cudaCheck(cudaGetLastError());
    attention_backward_query_kernel<<<CEIL_DIV(B * T * C, block_size), block_size, 0, main_stream>>>(
        dinp, inp, dpreatt, B, T, C, NH);
    cudaCheck(cudaGetLastError());
    attention_backward_kv_kernel<<<CEIL_DIV(B * T * C, block_size), block_size, 0, main_stream>>>(
        dinp, dout, inp, dpreatt, att, B, T, C, NH);
    cudaCheck(cudaGetLastError());
}

#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

__global__ void gelu_forward_kernel(float* out, const float* inp, int N) {
    /* the tanh approximation of GELU, as GPT-2 uses; one thread per element */
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
}

void gelu_forward(float* out, const float* inp, int N) {
    gelu_forward_kernel<<<CEIL_DIV(N, block_size), block_size, 0, main_stream>>>(out, inp, N);
    cudaCheck(cudaGetLastError());
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    float tanh_arg = GELU_SCALING_FACTOR * (x + cube);
    float tanh_out = tanhf(tanh_arg), cosh_out = coshf(tanh_arg);
    float sech_out = 1.0f / (cosh_out * cosh_out);
    float local_grad = 0.5f * (1.0f + tanh_out) + x * 0.5f * sech_out *
                       GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += local_grad * dout[i];
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
    gelu_backward_kernel<<<CEIL_DIV(N, block_size), block_size, 0, main_stream>>>(
        dinp, inp, dout, N);
    cudaCheck(cudaGetLastError());
}

__global__ void residual_forward_kernel(float* out, const float* inp1, const float* inp2, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = inp1[i] + inp2[i];
}

void residual_forward(float* out, const float* inp1, const float* inp2, int N) {
    residual_forward_kernel<<<CEIL_DIV(N, block_size), block_size, 0, main_stream>>>(
        out, inp1, inp2, N);
    cudaCheck(cudaGetLastError());
}

__global__ void residual_backward_kernel(float* dinp1, float* dinp2, const float* dout, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    dinp1[i] += dout[i];
    dinp2[i] += dout[i];
}

void residual_backward(float* dinp1, float* dinp2, const float* dout, int N) {
    residual_backward_kernel<<<CEIL_DIV(N, block_size), block_size, 0, main_stream>>>(
        dinp1, dinp2, dout, N);
    cudaCheck(cudaGetLastError());
}

__global__ void fused_residual_layernorm_forward_kernel(float* residual, float* normed, float* mean,
                                                        float* rstd, const float* inp1,
                                                        const float* inp2, const float* weight,
                                                        const float* bias, int N, int C) {
    /* one thread per row n */
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    float* residual_n = residual + n * C;
    for (int i = 0; i < C; i++) residual_n[i] = inp1[n * C + i] + inp2[n * C + i];
    layernorm_row(normed + n * C, mean + n, rstd + n, residual_n, weight, bias, C);
}

/* the residual add that closes a layer, fused with the layernorm that opens
 * the next one: residual = inp1 + inp2, normed = layernorm(residual).
 * N rows of C channels; weight and bias are the NEXT layer's ln1 (or lnf). */
void fused_residual_layernorm_forward(float* residual, float* normed, float* mean,
                                      float* rstd, const float* inp1, const float* inp2,
                                      const float* weight, const float* bias, int N, int C) {
    fused_residual_layernorm_forward_kernel<<<CEIL_DIV(N, block_size), block_size, 0, main_stream>>>(
        residual, normed, mean, rstd, inp1, inp2, weight, bias, N, C);
    cudaCheck(cudaGetLastError());
}

__global__ void softmax_forward_kernel(float* probs, const float* logits, int N, int V, int Vp) {
    /* one thread per row (b, t) */
    int bt = blockIdx.x * blockDim.x + threadIdx.x;
    if (bt >= N) return;
    const float* logits_bt = logits + bt * Vp;
    float* probs_bt = probs + bt * Vp;
    float maxval = -FLT_MAX;
    for (int i = 0; i < V; i++) maxval = logits_bt[i] > maxval ? logits_bt[i] : maxval;
    float sum = 0.0f;
    for (int i = 0; i < V; i++) {
        probs_bt[i] = expf(logits_bt[i] - maxval);
        sum += probs_bt[i];
    }
    for (int i = 0; i < V; i++) probs_bt[i] /= sum;
    for (int i = V; i < Vp; i++) probs_bt[i] = 0.0f;
}

void softmax_forward(float* probs, const float* logits, int B, int T, int V, int Vp) {
    /* softmax over the first V logits of each row; the padding gets zero */
    softmax_forward_kernel<<<CEIL_DIV(B * T, block_size), block_size, 0, main_stream>>>(
        probs, logits, B * T, V, Vp);
    cudaCheck(cudaGetLastError());
}

__global__ void crossentropy_forward_kernel(float* losses, const float* probs, const int* targets,
                                            int N, int Vp) {
    int bt = blockIdx.x * blockDim.x + threadIdx.x;
    if (bt < N) losses[bt] = -logf(probs[bt * Vp + targets[bt]]);
}

void crossentropy_forward(float* losses, const float* probs, const int* targets,
                          int B, int T, int Vp) {
    crossentropy_forward_kernel<<<CEIL_DIV(B * T, block_size), block_size, 0, main_stream>>>(
        losses, probs, targets, B * T, Vp);
    cudaCheck(cudaGetLastError());
}

__global__ void crossentropy_softmax_backward_kernel(float* dlogits, const float* dlosses,
                                                     const float* probs, const int* targets,
                                                     int N, int V, int Vp) {
    /* one thread per (b, t, i) with i < V */
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * V) return;
    int bt = idx / V, i = idx % V;
    float indicator = i == targets[bt] ? 1.0f : 0.0f;
    dlogits[bt * Vp + i] += (probs[bt * Vp + i] - indicator) * dlosses[bt];
}

void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs,
                                   const int* targets, int B, int T, int V, int Vp) {
    /* d(loss)/d(logit_i) = p_i - 1[i == target]; the padding gets nothing */
    crossentropy_softmax_backward_kernel<<<CEIL_DIV(B * T * V, block_size), block_size, 0,
                                           main_stream>>>(dlogits, dlosses, probs, targets,
                                                          B * T, V, Vp);
    cudaCheck(cudaGetLastError());
}

__global__ void fill_kernel(float* out, float value, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = value;
}

/* out[0..N) = value, on the GPU */
void fill_device(float* out, float value, int N) {
    fill_kernel<<<CEIL_DIV(N, block_size), block_size, 0, main_stream>>>(out, value, N);
    cudaCheck(cudaGetLastError());
}

__global__ void adamw_kernel(float* params_memory, const float* grads_memory, float* m_memory,
                             float* v_memory, size_t num_parameters, float learning_rate,
                             float beta1, float beta2, float beta1_correction,
                             float beta2_correction, float eps, float weight_decay) {
    /* one thread per parameter: the C loop's body */
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_parameters) return;
    float param = params_memory[i], grad = grads_memory[i];
    /* update the first and second moments, then bias-correct them */
    float m = beta1 * m_memory[i] + (1.0f - beta1) * grad;
    float v = beta2 * v_memory[i] + (1.0f - beta2) * grad * grad;
    float m_hat = m / beta1_correction, v_hat = v / beta2_correction;
    m_memory[i] = m, v_memory[i] = v;
    params_memory[i] -= learning_rate * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * param);
}

/* ------------------------------------------------------------------------ */
/* GPT-2 model definition */

typedef struct {
    int max_seq_len;       /* max sequence length, e.g. 1024 */
    int vocab_size;        /* vocab size, e.g. 50257 */
    int padded_vocab_size; /* vocab size padded up, e.g. to a multiple of 128 */
    int num_layers;        /* number of layers, e.g. 12 */
    int num_heads;         /* number of heads in attention, e.g. 12 */
    int channels;          /* number of channels, e.g. 768 */
} GPT2Config;

/* the parameters of the model; each per-layer kind is stacked over layers */
#define NUM_PARAMETER_TENSORS 16
typedef struct {
    float *wte, *wpe;              /* (Vp, C), (maxT, C) */
    float *ln1w, *ln1b;            /* (L, C) each */
    float *qkvw, *qkvb;            /* (L, 3*C, C), (L, 3*C) */
    float *attprojw, *attprojb;    /* (L, C, C), (L, C) */
    float *ln2w, *ln2b;            /* (L, C) each */
    float *fcw, *fcb;              /* (L, 4*C, C), (L, 4*C) */
    float *fcprojw, *fcprojb;      /* (L, C, 4*C), (L, C) */
    float *lnfw, *lnfb;            /* (C) each */
} ParameterTensors;

void fill_in_parameter_sizes(size_t* param_sizes, GPT2Config config) {
    size_t Vp = config.padded_vocab_size, C = config.channels;
    size_t maxT = config.max_seq_len, L = config.num_layers;
    param_sizes[0] = Vp * C;           /* wte */
    param_sizes[1] = maxT * C;         /* wpe */
    param_sizes[2] = param_sizes[3] = L * C; /* ln1w, ln1b */
    param_sizes[4] = L * (3 * C) * C;  /* qkvw */
    param_sizes[5] = L * (3 * C);      /* qkvb */
    param_sizes[6] = L * C * C;        /* attprojw */
    param_sizes[7] = L * C;            /* attprojb */
    param_sizes[8] = param_sizes[9] = L * C; /* ln2w, ln2b */
    param_sizes[10] = L * (4 * C) * C; /* fcw */
    param_sizes[11] = L * (4 * C);     /* fcb */
    param_sizes[12] = L * C * (4 * C); /* fcprojw */
    param_sizes[13] = L * C;           /* fcprojb */
    param_sizes[14] = param_sizes[15] = C; /* lnfw, lnfb */
}

/* point the individual tensors into one block (on the GPU or, for the init,
 * on the host), in the order above */
void point_parameters(ParameterTensors* params, size_t* param_sizes, float* params_memory) {
    float** ptrs[] = {
        &params->wte, &params->wpe, &params->ln1w, &params->ln1b, &params->qkvw,
        &params->qkvb, &params->attprojw, &params->attprojb, &params->ln2w,
        &params->ln2b, &params->fcw, &params->fcb, &params->fcprojw, &params->fcprojb,
        &params->lnfw, &params->lnfb};
    float* params_memory_iterator = params_memory;
    for (size_t i = 0; i < NUM_PARAMETER_TENSORS; i++) {
        *(ptrs[i]) = params_memory_iterator;
        params_memory_iterator += param_sizes[i];
    }
}

/* allocate memory for the parameters on the GPU (one zeroed block) and point
 * the individual tensors to the right places, in the order above */
float* malloc_and_point_parameters(ParameterTensors* params, size_t* param_sizes) {
    size_t num_parameters = 0;
    for (size_t i = 0; i < NUM_PARAMETER_TENSORS; i++) num_parameters += param_sizes[i];
    float* params_memory = NULL;
    cudaCheck(cudaMalloc((void**)&params_memory, num_parameters * sizeof(float)));
    cudaCheck(cudaMemsetAsync(params_memory, 0, num_parameters * sizeof(float), main_stream));
    point_parameters(params, param_sizes, params_memory);
    return params_memory;
}

/* the activations the backward pass needs, for one (B, T) */
#define NUM_ACTIVATION_TENSORS 23
typedef struct {
    float* encoded;                      /* (B, T, C) */
    float *ln1, *ln1_mean, *ln1_rstd;    /* (L, B, T, C), (L, B, T) x2 */
    float *qkv, *atty;                   /* (L, B, T, 3*C), (L, B, T, C) */
    float *preatt, *att;                 /* (L, B, NH, T, T) each */
    float *attproj, *residual2;          /* (L, B, T, C) each */
    float *ln2, *ln2_mean, *ln2_rstd;    /* (L, B, T, C), (L, B, T) x2 */
    float *fch, *fch_gelu;               /* (L, B, T, 4*C) each */
    float *fcproj, *residual3;           /* (L, B, T, C) each */
    float *lnf, *lnf_mean, *lnf_rstd;    /* (B, T, C), (B, T) x2 */
    float *logits, *probs, *losses;      /* (B, T, Vp) x2, (B, T) */
} ActivationTensors;

void fill_in_activation_sizes(size_t* act_sizes, GPT2Config config, int B, int T) {
    size_t C = config.channels, NH = config.num_heads;
    size_t L = config.num_layers, Vp = config.padded_vocab_size;
    size_t BT = (size_t)B * (size_t)T;
    act_sizes[0] = BT * C;                                  /* encoded */
    act_sizes[1] = L * BT * C;                              /* ln1 */
    act_sizes[2] = act_sizes[3] = L * BT;                   /* ln1_mean, ln1_rstd */
    act_sizes[4] = L * BT * 3 * C;                          /* qkv */
    act_sizes[5] = L * BT * C;                              /* atty */
    act_sizes[6] = act_sizes[7] = L * B * NH * T * T;       /* preatt, att */
    act_sizes[8] = act_sizes[9] = L * BT * C;               /* attproj, residual2 */
    act_sizes[10] = L * BT * C;                             /* ln2 */
    act_sizes[11] = act_sizes[12] = L * BT;                 /* ln2_mean, ln2_rstd */
    act_sizes[13] = act_sizes[14] = L * BT * 4 * C;         /* fch, fch_gelu */
    act_sizes[15] = act_sizes[16] = L * BT * C;             /* fcproj, residual3 */
    act_sizes[17] = BT * C;                                 /* lnf */
    act_sizes[18] = act_sizes[19] = BT;                     /* lnf_mean, lnf_rstd */
    act_sizes[20] = act_sizes[21] = BT * Vp;                /* logits, probs */
    act_sizes[22] = BT;                                     /* losses */
}

float* malloc_and_point_activations(ActivationTensors* acts, size_t* act_sizes) {
    size_t num_activations = 0;
    for (size_t i = 0; i < NUM_ACTIVATION_TENSORS; i++) num_activations += act_sizes[i];
    float* acts_memory = NULL;
    cudaCheck(cudaMalloc((void**)&acts_memory, num_activations * sizeof(float)));
    cudaCheck(cudaMemsetAsync(acts_memory, 0, num_activations * sizeof(float), main_stream));
    float** ptrs[] = {
        &acts->encoded, &acts->ln1, &acts->ln1_mean, &acts->ln1_rstd, &acts->qkv,
        &acts->atty, &acts->preatt, &acts->att, &acts->attproj, &acts->residual2,
        &acts->ln2, &acts->ln2_mean, &acts->ln2_rstd, &acts->fch, &acts->fch_gelu,
        &acts->fcproj, &acts->residual3, &acts->lnf, &acts->lnf_mean, &acts->lnf_rstd,
        &acts->logits, &acts->probs, &acts->losses};
    float* acts_memory_iterator = acts_memory;
    for (size_t i = 0; i < NUM_ACTIVATION_TENSORS; i++) {
        *(ptrs[i]) = acts_memory_iterator;
        acts_memory_iterator += act_sizes[i];
    }
    return acts_memory;
}

typedef struct {
    GPT2Config config;
    /* the weights (parameters) of the model, and their sizes */
    ParameterTensors params;
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    float* params_memory;
    size_t num_parameters;
    /* gradients of the weights */
    ParameterTensors grads;
    float* grads_memory;
    /* buffers for the AdamW optimizer */
    float *m_memory, *v_memory;
    /* the activations of the model, and their sizes */
    ActivationTensors acts;
    size_t act_sizes[NUM_ACTIVATION_TENSORS];
    float* acts_memory;
    size_t num_activations;
    /* gradients of the activations */
    ActivationTensors grads_acts;
    float* grads_acts_memory;
    /* other run state */
    int batch_size, seq_len; /* the B and T of the activations' allocation */
    int *inputs, *targets;   /* the tokens of the last forward pass, on the GPU */
    float* cpu_losses;       /* the losses of the last forward pass, copied to the host */
    float mean_loss;         /* after a forward pass with targets, the mean loss */
} GPT2;

/* fill n floats with normal(0, std) draws */
static void fill_normal(float* p, size_t n, float std, unsigned long long* state) {
    for (size_t i = 0; i < n; i++) p[i] = (float)(random_normal(state) * std);
}

static void fill_constant(float* p, size_t n, float value) {
    for (size_t i = 0; i < n; i++) p[i] = value;
}

/* build a model with a deterministic random init, instead of llm.c's
 * gpt2_build_from_checkpoint. Matrices and embeddings ~ normal(0, 0.02),
 * layernorm weights 1, all biases 0, wte's padding rows 0. */
void gpt2_build_random(GPT2* model, GPT2Config config, unsigned long long seed) {
    if (config.channels % config.num_heads != 0) fail("channels % num_heads != 0");
    if (config.padded_vocab_size < config.vocab_size) fail("padded_vocab_size < vocab_size");
    model->config = config;
    fill_in_parameter_sizes(model->param_sizes, config);
    size_t num_parameters = 0;
    for (size_t i = 0; i < NUM_PARAMETER_TENSORS; i++) num_parameters += model->param_sizes[i];
    model->num_parameters = num_parameters;
    model->params_memory = malloc_and_point_parameters(&model->params, model->param_sizes);

    /* the init, in parameter order, computed on the host exactly as
     * train_gpt2.c does (as llm.c reads its checkpoint into a host buffer)
     * and copied to the GPU; the zeroed host block covers the biases */
    size_t V = config.vocab_size, C = config.channels;
    unsigned long long state = seed;
    float* params_memory_cpu = (float*)calloc_check(num_parameters, sizeof(float));
    ParameterTensors params_cpu;
    point_parameters(&params_cpu, model->param_sizes, params_memory_cpu);
    ParameterTensors* p = &params_cpu;
    fill_normal(p->wte, V * C, 0.02f, &state); /* padding rows stay 0 */
    fill_normal(p->wpe, model->param_sizes[1], 0.02f, &state);
    fill_constant(p->ln1w, model->param_sizes[2], 1.0f);
    fill_normal(p->qkvw, model->param_sizes[4], 0.02f, &state);
    fill_normal(p->attprojw, model->param_sizes[6], 0.02f, &state);
    fill_constant(p->ln2w, model->param_sizes[8], 1.0f);
    fill_normal(p->fcw, model->param_sizes[10], 0.02f, &state);
    fill_normal(p->fcprojw, model->param_sizes[12], 0.02f, &state);
    fill_constant(p->lnfw, model->param_sizes[14], 1.0f);
    cudaCheck(cudaMemcpyAsync(model->params_memory, params_memory_cpu,
                              num_parameters * sizeof(float), cudaMemcpyHostToDevice, main_stream));
    cudaCheck(cudaStreamSynchronize(main_stream));
    free(params_memory_cpu);

    /* the rest is allocated lazily, as in llm.c */
    model->grads_memory = model->m_memory = model->v_memory = NULL;
    model->acts_memory = model->grads_acts_memory = NULL;
    model->num_activations = 0;
    model->batch_size = model->seq_len = 0;
    model->inputs = model->targets = NULL;
    model->cpu_losses = NULL;
    model->mean_loss = -1.0f; /* -1 means "no loss computed" */
}

/* forward pass over B sequences of T tokens; targets may be NULL (no loss).
 * The activations are allocated on the first call, for that call's B and T;
 * later calls may use a smaller B or T only when targets is NULL (sampling). */
void gpt2_forward(GPT2* model, int* inputs, int* targets, size_t B, size_t T) {
    if (model->params_memory == NULL) fail("model was not initialized");
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    int L = model->config.num_layers, NH = model->config.num_heads, C = model->config.channels;
    if (B == 0 || T == 0 || T > (size_t)model->config.max_seq_len) fail("bad B or T");

    /* validate the tokens */
    for (size_t i = 0; i < B * T; i++) {
        if (inputs[i] < 0 || inputs[i] >= V) fail("input token out of range");
        if (targets && (targets[i] < 0 || targets[i] >= V)) fail("target token out of range");
    }

    /* allocate the activations lazily, on the first forward */
    if (model->acts_memory == NULL) {
        model->batch_size = (int)B, model->seq_len = (int)T;
        fill_in_activation_sizes(model->act_sizes, model->config, (int)B, (int)T);
        size_t num_activations = 0;
        for (size_t i = 0; i < NUM_ACTIVATION_TENSORS; i++) num_activations += model->act_sizes[i];
        model->num_activations = num_activations;
        model->acts_memory = malloc_and_point_activations(&model->acts, model->act_sizes);
        cudaCheck(cudaMalloc((void**)&model->inputs, B * T * sizeof(int)));
        cudaCheck(cudaMalloc((void**)&model->targets, B * T * sizeof(int)));
        model->cpu_losses = (float*)calloc_check(B * T, sizeof(float));
    } else {
        /* a smaller B, T fits in the memory; the backward needs the full one */
        int same = B == (size_t)model->batch_size && T == (size_t)model->seq_len;
        if (B > (size_t)model->batch_size || T > (size_t)model->seq_len || (targets && !same)) {
            fail("B or T differ from the first forward's (smaller is allowed without targets)");
        }
    }

    /* copy the inputs and targets to the GPU, for the kernels and the backward pass */
    cudaCheck(cudaMemcpyAsync(model->inputs, inputs, B * T * sizeof(int), cudaMemcpyHostToDevice,
                              main_stream));
    if (targets != NULL) {
        cudaCheck(cudaMemcpyAsync(model->targets, targets, B * T * sizeof(int),
                                  cudaMemcpyHostToDevice, main_stream));
    }

    ParameterTensors params = model->params;
    ActivationTensors acts = model->acts;
    encoder_forward(acts.encoded, model->inputs, params.wte, params.wpe, B, T, C);
    /* layer 0's first layernorm; every later one comes from the fused kernel
     * at the end of the layer before it */
    layernorm_forward(acts.ln1, acts.ln1_mean, acts.ln1_rstd, acts.encoded,
                      params.ln1w, params.ln1b, B, T, C);

    for (int l = 0; l < L; l++) {
        float* residual = l == 0 ? acts.encoded : acts.residual3 + (l - 1) * B * T * C;

        /* this layer's weights */
        float *l_qkvw = params.qkvw + l * 3 * C * C, *l_qkvb = params.qkvb + l * 3 * C;
        float *l_attprojw = params.attprojw + l * C * C, *l_attprojb = params.attprojb + l * C;
        float *l_ln2w = params.ln2w + l * C, *l_ln2b = params.ln2b + l * C;
        float *l_fcw = params.fcw + l * 4 * C * C, *l_fcb = params.fcb + l * 4 * C;
        float *l_fcprojw = params.fcprojw + l * C * 4 * C, *l_fcprojb = params.fcprojb + l * C;

        /* this layer's activations */
        float *l_ln1 = acts.ln1 + l * B * T * C, *l_qkv = acts.qkv + l * B * T * 3 * C;
        float *l_atty = acts.atty + l * B * T * C, *l_preatt = acts.preatt + l * B * NH * T * T;
        float *l_att = acts.att + l * B * NH * T * T, *l_attproj = acts.attproj + l * B * T * C;
        float *l_residual2 = acts.residual2 + l * B * T * C, *l_ln2 = acts.ln2 + l * B * T * C;
        float *l_ln2_mean = acts.ln2_mean + l * B * T, *l_ln2_rstd = acts.ln2_rstd + l * B * T;
        float *l_fch = acts.fch + l * B * T * 4 * C;
        float *l_fch_gelu = acts.fch_gelu + l * B * T * 4 * C;
        float *l_fcproj = acts.fcproj + l * B * T * C;
        float *l_residual3 = acts.residual3 + l * B * T * C;

        /* now do the forward pass */
        matmul_forward(l_qkv, l_ln1, l_qkvw, l_qkvb, B, T, C, 3 * C);
        attention_forward(l_atty, l_preatt, l_att, l_qkv, B, T, C, NH);
        matmul_forward(l_attproj, l_atty, l_attprojw, l_attprojb, B, T, C, C);
        residual_forward(l_residual2, residual, l_attproj, B * T * C);
        layernorm_forward(l_ln2, l_ln2_mean, l_ln2_rstd, l_residual2, l_ln2w, l_ln2b, B, T, C);
        matmul_forward(l_fch, l_ln2, l_fcw, l_fcb, B, T, C, 4 * C);
        gelu_forward(l_fch_gelu, l_fch, B * T * 4 * C);
        matmul_forward(l_fcproj, l_fch_gelu, l_fcprojw, l_fcprojb, B, T, 4 * C, C);

        /* the residual add, fused with the next layer's ln1 (or, after the
         * last layer, the final layernorm) */
        int last = l + 1 == L;
        float* next_lnw = last ? params.lnfw : params.ln1w + (l + 1) * C;
        float* next_lnb = last ? params.lnfb : params.ln1b + (l + 1) * C;
        float* next_ln = last ? acts.lnf : acts.ln1 + (l + 1) * B * T * C;
        float* next_mean = last ? acts.lnf_mean : acts.ln1_mean + (l + 1) * B * T;
        float* next_rstd = last ? acts.lnf_rstd : acts.ln1_rstd + (l + 1) * B * T;
        fused_residual_layernorm_forward(l_residual3, next_ln, next_mean, next_rstd,
                                         l_residual2, l_fcproj, next_lnw, next_lnb, B * T, C);
    }

    /* the head, tied to the token embedding: logits = lnf . wte^T */
    matmul_forward(acts.logits, acts.lnf, params.wte, NULL, B, T, C, Vp);
    softmax_forward(acts.probs, acts.logits, B, T, V, Vp);

    /* also forward the cross-entropy loss function if we have the targets */
    if (targets != NULL) {
        crossentropy_forward(acts.losses, acts.probs, model->targets, B, T, Vp);
        /* the mean on the host, in train_gpt2.c's order */
        cudaCheck(cudaMemcpyAsync(model->cpu_losses, acts.losses, B * T * sizeof(float),
                                  cudaMemcpyDeviceToHost, main_stream));
        cudaCheck(cudaStreamSynchronize(main_stream));
        float mean_loss = 0.0f;
        for (size_t i = 0; i < B * T; i++) mean_loss += model->cpu_losses[i];
        mean_loss /= B * T;
        model->mean_loss = mean_loss;
    } else {
        model->mean_loss = -1.0f;
    }
}

void gpt2_zero_grad(GPT2* model) {
    if (model->grads_memory) {
        cudaCheck(cudaMemsetAsync(model->grads_memory, 0, model->num_parameters * sizeof(float),
                                  main_stream));
    }
    if (model->grads_acts_memory) {
        cudaCheck(cudaMemsetAsync(model->grads_acts_memory, 0,
                                  model->num_activations * sizeof(float), main_stream));
    }
}

/* backward pass of the last forward (which must have had targets). The
 * parameter gradients ACCUMULATE into grads; call gpt2_zero_grad before the
 * first micro-step. grad_scale multiplies the loss gradient: 1 for a plain
 * step, 1/grad_accum_steps to average over micro-steps (llm.c's CUDA trainer
 * folds the same factor into dloss). */
void gpt2_backward(GPT2* model, float grad_scale) {
    if (model->mean_loss == -1.0f) fail("must forward with targets before backward");

    /* lazily allocate the gradients on the first backward, as llm.c does */
    if (model->grads_acts_memory == NULL) {
        model->grads_memory = malloc_and_point_parameters(&model->grads, model->param_sizes);
        model->grads_acts_memory =
            malloc_and_point_activations(&model->grads_acts, model->act_sizes);
        gpt2_zero_grad(model);
    } else {
        /* activation gradients belong to one micro-step: clear them, so that
         * micro-steps do not leak into each other */
        cudaCheck(cudaMemsetAsync(model->grads_acts_memory, 0,
                                  model->num_activations * sizeof(float), main_stream));
    }

    size_t B = model->batch_size, T = model->seq_len;
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    int L = model->config.num_layers, NH = model->config.num_heads, C = model->config.channels;

    ParameterTensors params = model->params, grads = model->grads;
    ActivationTensors acts = model->acts, grads_acts = model->grads_acts;

    /* kick off the chain rule: the loss is the mean over B*T positions */
    float dloss_mean = grad_scale / (float)(B * T);
    fill_device(grads_acts.losses, dloss_mean, B * T);

    crossentropy_softmax_backward(grads_acts.logits, grads_acts.losses, acts.probs,
                                  model->targets, B, T, V, Vp);
    /* the tied head: its weight gradient lands in dwte */
    matmul_backward(grads_acts.lnf, grads.wte, NULL, grads_acts.logits, acts.lnf,
                    params.wte, B, T, C, Vp);
    float *residual = acts.residual3 + (L - 1) * B * T * C;
    float *dresidual = grads_acts.residual3 + (L - 1) * B * T * C;
    layernorm_backward(dresidual, grads.lnfw, grads.lnfb, grads_acts.lnf, residual,
                       params.lnfw, acts.lnf_mean, acts.lnf_rstd, B, T, C);

    for (int l = L - 1; l >= 0; l--) {
        residual = l == 0 ? acts.encoded : acts.residual3 + (l - 1) * B * T * C;
        dresidual = l == 0 ? grads_acts.encoded : grads_acts.residual3 + (l - 1) * B * T * C;

        /* this layer's weights */
        float *l_ln1w = params.ln1w + l * C, *l_qkvw = params.qkvw + l * 3 * C * C;
        float *l_attprojw = params.attprojw + l * C * C, *l_ln2w = params.ln2w + l * C;
        float *l_fcw = params.fcw + l * 4 * C * C, *l_fcprojw = params.fcprojw + l * C * 4 * C;
        /* this layer's weight gradients */
        float *dl_ln1w = grads.ln1w + l * C, *dl_ln1b = grads.ln1b + l * C;
        float *dl_qkvw = grads.qkvw + l * 3 * C * C, *dl_qkvb = grads.qkvb + l * 3 * C;
        float *dl_attprojw = grads.attprojw + l * C * C, *dl_attprojb = grads.attprojb + l * C;
        float *dl_ln2w = grads.ln2w + l * C, *dl_ln2b = grads.ln2b + l * C;
        float *dl_fcw = grads.fcw + l * 4 * C * C, *dl_fcb = grads.fcb + l * 4 * C;
        float *dl_fcprojw = grads.fcprojw + l * C * 4 * C, *dl_fcprojb = grads.fcprojb + l * C;
        /* this layer's activations */
        float *l_ln1 = acts.ln1 + l * B * T * C, *l_ln1_mean = acts.ln1_mean + l * B * T;
        float *l_ln1_rstd = acts.ln1_rstd + l * B * T, *l_qkv = acts.qkv + l * B * T * 3 * C;
        float *l_atty = acts.atty + l * B * T * C, *l_att = acts.att + l * B * NH * T * T;
        float *l_residual2 = acts.residual2 + l * B * T * C, *l_ln2 = acts.ln2 + l * B * T * C;
        float *l_ln2_mean = acts.ln2_mean + l * B * T, *l_ln2_rstd = acts.ln2_rstd + l * B * T;
        float *l_fch = acts.fch + l * B * T * 4 * C;
        float *l_fch_gelu = acts.fch_gelu + l * B * T * 4 * C;
        /* this layer's activation gradients */
        float *dl_ln1 = grads_acts.ln1 + l * B * T * C;
        float *dl_qkv = grads_acts.qkv + l * B * T * 3 * C;
        float *dl_atty = grads_acts.atty + l * B * T * C;
        float *dl_preatt = grads_acts.preatt + l * B * NH * T * T;
        float *dl_att = grads_acts.att + l * B * NH * T * T;
        float *dl_attproj = grads_acts.attproj + l * B * T * C;
        float *dl_residual2 = grads_acts.residual2 + l * B * T * C;
        float *dl_ln2 = grads_acts.ln2 + l * B * T * C;
        float *dl_fch = grads_acts.fch + l * B * T * 4 * C;
        float *dl_fch_gelu = grads_acts.fch_gelu + l * B * T * 4 * C;
        float *dl_fcproj = grads_acts.fcproj + l * B * T * C;
        float *dl_residual3 = grads_acts.residual3 + l * B * T * C;

        /* backprop this layer, in the reverse order of the forward */
        residual_backward(dl_residual2, dl_fcproj, dl_residual3, B * T * C);
        matmul_backward(dl_fch_gelu, dl_fcprojw, dl_fcprojb, dl_fcproj, l_fch_gelu,
                        l_fcprojw, B, T, 4 * C, C);
        gelu_backward(dl_fch, l_fch, dl_fch_gelu, B * T * 4 * C);
        matmul_backward(dl_ln2, dl_fcw, dl_fcb, dl_fch, l_ln2, l_fcw, B, T, C, 4 * C);
        layernorm_backward(dl_residual2, dl_ln2w, dl_ln2b, dl_ln2, l_residual2, l_ln2w,
                           l_ln2_mean, l_ln2_rstd, B, T, C);
        residual_backward(dresidual, dl_attproj, dl_residual2, B * T * C);
        matmul_backward(dl_atty, dl_attprojw, dl_attprojb, dl_attproj, l_atty, l_attprojw,
                        B, T, C, C);
        attention_backward(dl_qkv, dl_preatt, dl_att, dl_atty, l_qkv, l_att, B, T, C, NH);
        matmul_backward(dl_ln1, dl_qkvw, dl_qkvb, dl_qkv, l_ln1, l_qkvw, B, T, C, 3 * C);
        layernorm_backward(dresidual, dl_ln1w, dl_ln1b, dl_ln1, residual, l_ln1w,
                           l_ln1_mean, l_ln1_rstd, B, T, C);
    }
    encoder_backward(grads.wte, grads.wpe, grads_acts.encoded, model->inputs, B, T, C, Vp);
}

/* AdamW over all parameters; t is the 1-based step number. The moment
 * buffers are allocated (zeroed) on the first call, as in llm.c. */
void gpt2_update(GPT2* model, float learning_rate, float beta1, float beta2, float eps,
                 float weight_decay, int t) {
    if (model->grads_memory == NULL) fail("must backward before update");
    if (model->m_memory == NULL) {
        cudaCheck(cudaMalloc((void**)&model->m_memory, model->num_parameters * sizeof(float)));
        cudaCheck(cudaMalloc((void**)&model->v_memory, model->num_parameters * sizeof(float)));
        cudaCheck(cudaMemsetAsync(model->m_memory, 0, model->num_parameters * sizeof(float),
                                  main_stream));
        cudaCheck(cudaMemsetAsync(model->v_memory, 0, model->num_parameters * sizeof(float),
                                  main_stream));
    }
    float beta1_correction = 1.0f - powf(beta1, (float)t);
    float beta2_correction = 1.0f - powf(beta2, (float)t);
    adamw_kernel<<<CEIL_DIV(model->num_parameters, (size_t)block_size), block_size, 0,
                   main_stream>>>(model->params_memory, model->grads_memory, model->m_memory,
                                  model->v_memory, model->num_parameters, learning_rate, beta1,
                                  beta2, beta1_correction, beta2_correction, eps, weight_decay);
    cudaCheck(cudaGetLastError());
}

/* write the raw params_memory floats, the model's checkpoint here, after
 * copying them to the host */
void gpt2_write_params(GPT2* model, const char* path) {
    float* params_memory_cpu = (float*)calloc_check(model->num_parameters, sizeof(float));
    cudaCheck(cudaMemcpyAsync(params_memory_cpu, model->params_memory,
                              model->num_parameters * sizeof(float), cudaMemcpyDeviceToHost,
                              main_stream));
    cudaCheck(cudaStreamSynchronize(main_stream));
    FILE* f = fopen(path, "wb");
    if (f == NULL) fail("could not open the params output file");
    size_t n = fwrite(params_memory_cpu, sizeof(float), model->num_parameters, f);
    if (fclose(f) != 0 || n != model->num_parameters) fail("could not write the params");
    free(params_memory_cpu);
}

void gpt2_free(GPT2* model) {
    cudaCheck(cudaFree(model->params_memory));
    cudaCheck(cudaFree(model->grads_memory));
    cudaCheck(cudaFree(model->m_memory)), cudaCheck(cudaFree(model->v_memory));
    cudaCheck(cudaFree(model->acts_memory));
    cudaCheck(cudaFree(model->grads_acts_memory));
    cudaCheck(cudaFree(model->inputs)), cudaCheck(cudaFree(model->targets));
    free(model->cpu_losses);
}

/* ------------------------------------------------------------------------ */
/* a synthetic data loader: instead of token files, one fixed token stream
 * made by a Markov chain (next = perm[current] 7 times in 8, else a random
 * token), so there is something to learn. Like llm.c's sharding, rank r reads
 * batches r, r + P, r + 2P, ... of the stream (P = num_processes). */

#define DATA_VOCAB_SIZE 64
#define DATA_NUM_TOKENS 32768

typedef struct {
    int B, T;
    int process_rank, num_processes;
    int* tokens;              /* the whole token stream */
    size_t num_tokens;
    size_t current_position;  /* where this rank's next batch starts */
    int* buffer;              /* B*T+1 tokens of the current batch */
    int* inputs;              /* (B, T) */
    int* targets;             /* (B, T), the inputs shifted by one */
    size_t num_batches;       /* batches per pass over the stream, per rank */
} DataLoader;

void dataloader_reset(DataLoader* loader) {
    loader->current_position = (size_t)loader->process_rank * loader->B * loader->T;
}

void dataloader_init(DataLoader* loader, int B, int T, int process_rank, int num_processes,
                     unsigned long long seed) {
    if (B <= 0 || T <= 0 || process_rank < 0 || process_rank >= num_processes) fail("bad loader");
    loader->B = B, loader->T = T;
    loader->process_rank = process_rank, loader->num_processes = num_processes;
    loader->num_tokens = DATA_NUM_TOKENS;
    size_t per_step = (size_t)num_processes * B * T;
    if (per_step + 1 > loader->num_tokens) fail("not enough tokens for one batch per rank");
    loader->num_batches = (loader->num_tokens - 1) / per_step;

    /* the stream depends on the seed only, so every rank sees the same one */
    unsigned long long state = seed;
    int perm[DATA_VOCAB_SIZE];
    for (int i = 0; i < DATA_VOCAB_SIZE; i++) perm[i] = i;
    for (int i = DATA_VOCAB_SIZE - 1; i > 0; i--) {
        int j = (int)(splitmix64(&state) % (unsigned long long)(i + 1));
        int tmp = perm[i];
        perm[i] = perm[j], perm[j] = tmp;
    }
    loader->tokens = (int*)calloc_check(loader->num_tokens, sizeof(int));
    int token = (int)(splitmix64(&state) % DATA_VOCAB_SIZE);
    for (size_t i = 0; i < loader->num_tokens; i++) {
        loader->tokens[i] = token;
        int jump = random_uniform(&state) >= 0.875;
        token = jump ? (int)(splitmix64(&state) % DATA_VOCAB_SIZE) : perm[token];
    }

    loader->buffer = (int*)calloc_check((size_t)B * T + 1, sizeof(int));
    loader->inputs = (int*)calloc_check((size_t)B * T, sizeof(int));
    loader->targets = (int*)calloc_check((size_t)B * T, sizeof(int));
    dataloader_reset(loader);
}

void dataloader_next_batch(DataLoader* loader) {
    size_t BT = (size_t)loader->B * loader->T;
    /* wrap around to this rank's first batch when the stream runs out */
    if (loader->current_position + BT + 1 > loader->num_tokens) dataloader_reset(loader);
    memcpy(loader->buffer, loader->tokens + loader->current_position, (BT + 1) * sizeof(int));
    for (size_t i = 0; i < BT; i++) {
        loader->inputs[i] = loader->buffer[i];
        loader->targets[i] = loader->buffer[i + 1];
    }
    loader->current_position += BT * loader->num_processes;
}

void dataloader_free(DataLoader* loader) {
    free(loader->tokens), free(loader->buffer);
    free(loader->inputs), free(loader->targets);
}

/* ------------------------------------------------------------------------ */
/* sampling: greedy, so that it is deterministic */

/* the argmax over the real vocab of probs at position t of sequence 0 */
static int sample_argmax(const float* probs, int t, int V, int Vp) {
    const float* p = probs + (size_t)t * Vp;
    int best = 0;
    for (int i = 1; i < V; i++) best = p[i] > p[best] ? i : best;
    return best;
}

/* ------------------------------------------------------------------------ */
/* main training loop */

int main(int argc, char** argv) {
    int device = 0; /* the first visible GPU (llm.c: multi_gpu_config.local_device_idx) */
    cudaCheck(cudaSetDevice(device));
    cudaCheck(cudaStreamCreate(&main_stream));
    int grad_accum_steps = argc > 1 ? atoi(argv[1]) : 1;
    const char* params_out_path = argc > 2 ? argv[2] : NULL;
    if (grad_accum_steps < 1) fail("grad_accum_steps must be at least 1");

    /* a tiny GPT-2 */
    GPT2Config config = {.max_seq_len = 16, .vocab_size = DATA_VOCAB_SIZE,
                         .padded_vocab_size = 64, .num_layers = 2, .num_heads = 4,
                         .channels = 32};
    GPT2 model;
    gpt2_build_random(&model, config, 42);

    int B = 4, T = 16;
    DataLoader train_loader;
    dataloader_init(&train_loader, B, T, 0, 1, 1337);

    fprintf(stderr, "[GPT-2] max_seq_len %d vocab_size %d padded_vocab_size %d\n",
            config.max_seq_len, config.vocab_size, config.padded_vocab_size);
    fprintf(stderr, "[GPT-2] num_layers %d num_heads %d channels %d num_parameters %zu\n",
            config.num_layers, config.num_heads, config.channels, model.num_parameters);
    fprintf(stderr, "B %d T %d grad_accum_steps %d, train batches per pass %zu\n",
            B, T, grad_accum_steps, train_loader.num_batches);

    /* the sampling prompt: the first tokens of the data stream; each
     * sampled position's probs row is copied to the host */
    const int prompt_len = 4, gen_len = 8;
    int gen_tokens[16];
    float* cpu_probs = (float*)calloc_check(config.padded_vocab_size, sizeof(float));

    const int num_steps = 20;
    for (int step = 0; step < num_steps; step++) {
        /* one step: zero the grads, accumulate over the micro-steps, update */
        gpt2_zero_grad(&model);
        double loss = 0.0f;
        for (int micro_step = 0; micro_step < grad_accum_steps; micro_step++) {
            dataloader_next_batch(&train_loader);
            gpt2_forward(&model, train_loader.inputs, train_loader.targets, B, T);
            gpt2_backward(&model, 1.0f / grad_accum_steps);
            loss += model.mean_loss;
        }
        loss /= grad_accum_steps;
        gpt2_update(&model, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, step + 1); /* lr 1e-3, no decay */
        printf("step %d: train loss %.6f\n", step, loss);

        /* every 10 steps, generate from the model greedily with B = 1 */
        if ((step + 1) % 10 == 0) {
            for (int i = 0; i < prompt_len; i++) gen_tokens[i] = train_loader.tokens[i];
            printf("generated:");
            for (int t = prompt_len; t < prompt_len + gen_len; t++) {
                gpt2_forward(&model, gen_tokens, NULL, 1, t);
                const float* probs_row = model.acts.probs + (size_t)(t - 1) * config.padded_vocab_size;
                cudaCheck(cudaMemcpyAsync(cpu_probs, probs_row, config.padded_vocab_size * sizeof(float),
                                          cudaMemcpyDeviceToHost, main_stream));
                cudaCheck(cudaStreamSynchronize(main_stream));
                int next_token = sample_argmax(cpu_probs, 0, config.vocab_size,
                                               config.padded_vocab_size);
                gen_tokens[t] = next_token;
                printf(" %d", next_token);
            }
            printf("\n");
        }
    }

    if (params_out_path != NULL) gpt2_write_params(&model, params_out_path);

    free(cpu_probs);
    dataloader_free(&train_loader);
    gpt2_free(&model);
    cudaCheck(cudaStreamDestroy(main_stream));
    return 0;
}
