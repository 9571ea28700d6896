/* gpt_cuda.cuh - examples/gpt's model on a GPU: the forward and backward of
   gpt_model.h's GPT-2 as CUDA kernels and cuBLAS GEMMs, in fp32, fp16 or
   bf16 compute (fp32 accumulation everywhere; the residual stream,
   LayerNorm statistics and softmax in fp32).

   The model never owns its parameters: gpt_wire.h calls the engine beside
   the kernels that need them (zero_fetch, zero_param, zero_release around
   each use; zero_grad, then zero_grad_ready as soon as the kernel writing
   the gradient is queued), block by block, so stage 3 gathers one block at
   a time and each unit's reduction overlaps the rest of the backward. The
   functions here are its compute pieces (gpt_hook_*): the order of the
   engine calls lives there alone, where tests/test_gpt_wire.c runs it on
   host ranks. tests/gpu_gpt.cu runs the same code without an engine, on
   plain device buffers: its own macros give the engine calls' names to
   them before it includes this file.

   One micro-batch (gpt_step): upload the tokens, embeddings, blocks 0..L-1,
   ln_f, then the tied head in row chunks (logits, loss, and straight away
   its backward: the head's wte gradient and d ln_f), ln_f's backward,
   blocks L-1..0 backward, the embeddings' backward. With recompute, the
   forward keeps only each block's input and the backward runs the block's
   forward again before its backward (activation checkpointing per block).
   gpt_forward is the same forward and loss alone (an evaluation), with the
   logits of each head chunk handed to the caller if it wants them.

   Attention runs in the fused kernels of gpt_attn.cuh (no T x T scores in
   memory), or, where they do not apply, materialises the scores of a few
   sequences at a time (fp32 scores, compute-dtype probabilities, in
   gpt_acts' scratch) with strided batched GEMMs over the heads; either
   backward recomputes the probabilities, so the activations a block keeps
   are linear in T. cuBLASLt epilogues carry the biases and the GELU (and its
   backward) next to their products; the MLP's GELU output is recomputed in
   the backward rather than kept. Every reduction has a fixed order: two runs
   of the same inputs give the same bits.

   Include after zero.h and zero_cuda.cuh (ZERO_CUDA_TRY, zero_error). */
#ifndef GPT_CUDA_CUH
#define GPT_CUDA_CUH

#include "gpt_model.h"
#include "gpt_wire.h"
#include "../example_dtype.cuh"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <type_traits>

/* ---- element types ---- */

__device__ __forceinline__ float g_gelu(float x) {
    const float a = (float)GPT_GELU_A, b = (float)GPT_GELU_B;
    return 0.5f * x * (1.0f + tanhf(a * (x + b * x * x * x)));
}
__device__ __forceinline__ float g_gelu_grad(float x) {
    const float a = (float)GPT_GELU_A, b = (float)GPT_GELU_B;
    float t = tanhf(a * (x + b * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * a * (1.0f + 3.0f * b * x * x);
}

__device__ __forceinline__ float g_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float g_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

#define GPT_THREADS 256
static inline unsigned gpt_blocks(int64_t n, int per = GPT_THREADS) { return (unsigned)((n + per - 1) / per); }

/* ---- kernels ---- */

/* four consecutive elements, one vector access */
template <typename T> struct alignas(4 * sizeof(T)) gpt_v4 {
    T x[4];
};
/* eight consecutive elements: one 16-byte access for 16-bit types, two for fp32 (a plain int4 holds only
   four floats: reading eight elements through one read past it) */
template <typename T> struct alignas(16) gpt_v8 {
    T x[8];
};


/* x[n, :] = wte[tok[n], :] + wpe[n % T, :] (fp32 residual stream) */
template <typename T>
__global__ void gk_embed(const int *tok, const T *wte, const T *wpe, float *x, int64_t N, int T_, int C) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * C) return;
    int64_t n = i / C;
    int c = (int)(i % C);
    x[i] = ex_f32(wte[(int64_t)tok[n] * C + c]) + ex_f32(wpe[(int64_t)(n % T_) * C + c]);
}

/* One warp per row: out = LN(x) w + b in T, mean and rstd kept (fp32) */
template <typename T>
__global__ void gk_ln_fwd(const float *x, const T *w, const T *b, T *out, float *mean, float *rstd, int64_t N, int C) {
    int64_t n = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (n >= N) return;
    const float *r = x + n * C;
    float s = 0, ss = 0;
    for (int c = lane; c < C; c += 32) s += r[c];
    float m = g_warp_sum(s) / C;
    for (int c = lane; c < C; c += 32) {
        float d = r[c] - m;
        ss += d * d;
    }
    float rs = rsqrtf(g_warp_sum(ss) / C + (float)GPT_LN_EPS);
    for (int c = lane; c < C; c += 32) out[n * C + c] = ex_to<T>((r[c] - m) * rs * ex_f32(w[c]) + ex_f32(b[c]));
    if (lane == 0) mean[n] = m, rstd[n] = rs;
}

/* One warp per row: dx (+)= the LayerNorm input gradient of dy (d of its output) */
template <typename T>
__global__ void gk_ln_bwd_dx(const float *dy, const float *x, const float *mean, const float *rstd, const T *w,
                             float *dx, int accumulate, int64_t N, int C) {
    int64_t n = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (n >= N) return;
    const float *g = dy + n * C, *r = x + n * C;
    float m = mean[n], rs = rstd[n], a = 0, bsum = 0;
    for (int c = lane; c < C; c += 32) {
        float d = g[c] * ex_f32(w[c]);
        a += d;
        bsum += d * (r[c] - m) * rs;
    }
    a = g_warp_sum(a) / C;
    bsum = g_warp_sum(bsum) / C;
    for (int c = lane; c < C; c += 32) {
        float v = rs * (g[c] * ex_f32(w[c]) - a - (r[c] - m) * rs * bsum);
        dx[n * C + c] = accumulate ? dx[n * C + c] + v : v;
    }
}

/* The forward with the row in registers (one read of the input, float4
   accesses): rows of C <= 32 * 4 * GPT_LN_VEC with C % 4 == 0, the common
   case (gpt_ln_fwd picks; the backward's fused kernel below likewise). */
#define GPT_LN_VEC 16
template <typename T>
__global__ void gk_ln_fwd_reg(const float *x, const T *w, const T *b, T *out, float *mean, float *rstd, int64_t N,
                              int C) {
    int64_t n = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32, C4 = C / 4;
    if (n >= N) return;
    const float4 *r = (const float4 *)(x + n * C);
    float4 v[GPT_LN_VEC];
    float s = 0, ss = 0;
#pragma unroll
    for (int i = 0; i < GPT_LN_VEC; i++) {
        int c = lane + 32 * i;
        v[i] = c < C4 ? r[c] : make_float4(0, 0, 0, 0);
        s += v[i].x + v[i].y + v[i].z + v[i].w;
    }
    float m = g_warp_sum(s) / C;
#pragma unroll
    for (int i = 0; i < GPT_LN_VEC; i++)
        if (lane + 32 * i < C4) {
            float a = v[i].x - m, bb = v[i].y - m, c = v[i].z - m, d = v[i].w - m;
            ss += a * a + bb * bb + c * c + d * d;
        }
    float rs = rsqrtf(g_warp_sum(ss) / C + (float)GPT_LN_EPS);
#pragma unroll
    for (int i = 0; i < GPT_LN_VEC; i++) {
        int c = lane + 32 * i;
        if (c >= C4) continue;
        gpt_v4<T> wv = *(const gpt_v4<T> *)(w + 4 * c), bv = *(const gpt_v4<T> *)(b + 4 * c), o;
        float xs[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
        for (int k = 0; k < 4; k++) o.x[k] = ex_to<T>((xs[k] - m) * rs * ex_f32(wv.x[k]) + ex_f32(bv.x[k]));
        *(gpt_v4<T> *)(out + n * C + 4 * c) = o;
    }
    if (lane == 0) mean[n] = m, rstd[n] = rs;
}

/* The LayerNorm backward in one pass over dy and x, rows in registers
   (gpt_ln_in_regs): dx (+)= the input gradient, dxt = dx in T as well
   (unless NULL: the next product's operand, no pass of its own), and the
   weight and bias gradients' partial sums of slab blockIdx.x (R rows) into
   part[blockIdx.x] and part[S + blockIdx.x]. Each warp sums its rows into
   its own shared-memory row (no atomics), then the block adds its warps in
   order: the same bits every run. */
#define GPT_LNB_WARPS 4
template <typename T>
__global__ void __launch_bounds__(32 * GPT_LNB_WARPS)
    gk_ln_bwd_fused(const float *__restrict__ dy, const float *__restrict__ x, const float *__restrict__ mean,
                    const float *__restrict__ rstd, const T *__restrict__ w, float *__restrict__ dx,
                    T *__restrict__ dxt, int accumulate, float *__restrict__ part, int64_t N, int C, int R, int S) {
    extern __shared__ float g_lnb_acc[]; /* [warps][2][C] */
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, C4 = C / 4;
    float *acc = g_lnb_acc + (size_t)warp * 2 * C;
    for (int c = lane; c < 2 * C; c += 32) acc[c] = 0;
    int64_t r0 = (int64_t)blockIdx.x * R, r1 = r0 + R < N ? r0 + R : N;
    for (int64_t n = r0 + warp; n < r1; n += GPT_LNB_WARPS) {
        const float4 *g = (const float4 *)(dy + n * C), *r = (const float4 *)(x + n * C);
        float m = mean[n], rs = rstd[n], a = 0, bsum = 0;
        float4 gv[GPT_LN_VEC], xh[GPT_LN_VEC], pv[GPT_LN_VEC];
        float4 *o = (float4 *)(dx + n * C);
#pragma unroll
        for (int i = 0; i < GPT_LN_VEC; i++) {
            int c = lane + 32 * i;
            if (c >= C4) continue;
            gpt_v4<T> wv = *(const gpt_v4<T> *)(w + 4 * c);
            float4 xv = r[c];
            if (accumulate) pv[i] = o[c]; /* issued with the row's other loads: 2.5 ms of a 195 ms XL step */
            gv[i] = g[c];
            xh[i] = make_float4((xv.x - m) * rs, (xv.y - m) * rs, (xv.z - m) * rs, (xv.w - m) * rs);
            float d0 = gv[i].x * ex_f32(wv.x[0]), d1 = gv[i].y * ex_f32(wv.x[1]), d2 = gv[i].z * ex_f32(wv.x[2]),
                  d3 = gv[i].w * ex_f32(wv.x[3]);
            a += d0 + d1 + d2 + d3;
            bsum += d0 * xh[i].x + d1 * xh[i].y + d2 * xh[i].z + d3 * xh[i].w;
            float4 *pw = (float4 *)(acc + 4 * c), *pb = (float4 *)(acc + C + 4 * c);
            float4 ow = *pw, ob = *pb;
            ow.x += gv[i].x * xh[i].x, ow.y += gv[i].y * xh[i].y, ow.z += gv[i].z * xh[i].z, ow.w += gv[i].w * xh[i].w;
            ob.x += gv[i].x, ob.y += gv[i].y, ob.z += gv[i].z, ob.w += gv[i].w;
            *pw = ow, *pb = ob;
        }
        a = g_warp_sum(a) / C;
        bsum = g_warp_sum(bsum) / C;
#pragma unroll
        for (int i = 0; i < GPT_LN_VEC; i++) {
            int c = lane + 32 * i;
            if (c >= C4) continue;
            gpt_v4<T> wv = *(const gpt_v4<T> *)(w + 4 * c);
            float4 v = make_float4(rs * (gv[i].x * ex_f32(wv.x[0]) - a - xh[i].x * bsum),
                                   rs * (gv[i].y * ex_f32(wv.x[1]) - a - xh[i].y * bsum),
                                   rs * (gv[i].z * ex_f32(wv.x[2]) - a - xh[i].z * bsum),
                                   rs * (gv[i].w * ex_f32(wv.x[3]) - a - xh[i].w * bsum));
            if (accumulate) {
                float4 p = pv[i];
                v.x += p.x, v.y += p.y, v.z += p.z, v.w += p.w;
            }
            o[c] = v;
            if (dxt) {
                gpt_v4<T> t4 = {{ex_to<T>(v.x), ex_to<T>(v.y), ex_to<T>(v.z), ex_to<T>(v.w)}};
                *(gpt_v4<T> *)(dxt + n * C + 4 * c) = t4;
            }
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < 2 * C; c += blockDim.x) {
        float v = 0;
        for (int k = 0; k < GPT_LNB_WARPS; k++) v += g_lnb_acc[(size_t)k * 2 * C + c];
        part[(int64_t)(c < C ? blockIdx.x : S + blockIdx.x) * C + (c < C ? c : c - C)] = v;
    }
}

static inline int gpt_ln_in_regs(int C) { return C % 4 == 0 && C <= 32 * 4 * GPT_LN_VEC; }

/* out = x + y + b (the residual after a projection, fp32), then its
   LayerNorm into ln, mean and rstd kept: one read of x and y instead of a
   residual pass and a LayerNorm pass over its output (rows in registers) */
template <typename T>
__global__ void gk_residual_ln(const float *x, const float *y, const T *pb, float *out, const T *w, const T *b, T *ln,
                               float *mean, float *rstd, int64_t N, int C) {
    int64_t n = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32, C4 = C / 4;
    if (n >= N) return;
    const float4 *xr = (const float4 *)(x + n * C), *yr = (const float4 *)(y + n * C);
    float4 *orow = (float4 *)(out + n * C);
    float4 v[GPT_LN_VEC];
    float s = 0, ss = 0;
#pragma unroll
    for (int i = 0; i < GPT_LN_VEC; i++) {
        int c = lane + 32 * i;
        if (c >= C4) {
            v[i] = make_float4(0, 0, 0, 0);
            continue;
        }
        float4 a = xr[c], d = yr[c];
        gpt_v4<T> bv = *(const gpt_v4<T> *)(pb + 4 * c);
        v[i] = make_float4(a.x + d.x + ex_f32(bv.x[0]), a.y + d.y + ex_f32(bv.x[1]), a.z + d.z + ex_f32(bv.x[2]),
                           a.w + d.w + ex_f32(bv.x[3]));
        orow[c] = v[i];
        s += v[i].x + v[i].y + v[i].z + v[i].w;
    }
    float m = g_warp_sum(s) / C;
#pragma unroll
    for (int i = 0; i < GPT_LN_VEC; i++)
        if (lane + 32 * i < C4) {
            float a = v[i].x - m, bb = v[i].y - m, c = v[i].z - m, d = v[i].w - m;
            ss += a * a + bb * bb + c * c + d * d;
        }
    float rs = rsqrtf(g_warp_sum(ss) / C + (float)GPT_LN_EPS);
#pragma unroll
    for (int i = 0; i < GPT_LN_VEC; i++) {
        int c = lane + 32 * i;
        if (c >= C4) continue;
        gpt_v4<T> wv = *(const gpt_v4<T> *)(w + 4 * c), bv = *(const gpt_v4<T> *)(b + 4 * c), o;
        float xs[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
        for (int k = 0; k < 4; k++) o.x[k] = ex_to<T>((xs[k] - m) * rs * ex_f32(wv.x[k]) + ex_f32(bv.x[k]));
        *(gpt_v4<T> *)(ln + n * C + 4 * c) = o;
    }
    if (lane == 0) mean[n] = m, rstd[n] = rs;
}

template <typename T>
static void gpt_ln_fwd(cudaStream_t s, const float *x, const T *w, const T *b, T *out, float *st, int64_t N, int C) {
    if (gpt_ln_in_regs(C)) gk_ln_fwd_reg<T><<<gpt_blocks(N, 8), 256, 0, s>>>(x, w, b, out, st, st + N, N, C);
    else gk_ln_fwd<T><<<gpt_blocks(N, 8), 256, 0, s>>>(x, w, b, out, st, st + N, N, C);
}

/* LayerNorm weight and bias gradients, deterministic in two passes: slab s
   sums rows [s R, (s+1) R) per column into part[s] (dw) and part[S + s]
   (db); gk_ln_bwd_sum adds the slabs in order. */
__global__ void gk_ln_bwd_part(const float *dy, const float *x, const float *mean, const float *rstd, float *part,
                               int64_t N, int C, int R, int S) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, s = blockIdx.y;
    if (c >= C) return;
    float dw = 0, db = 0;
    int64_t end = (int64_t)(s + 1) * R < N ? (int64_t)(s + 1) * R : N;
    for (int64_t n = (int64_t)s * R; n < end; n++) {
        float g = dy[n * C + c];
        dw += g * (x[n * C + c] - mean[n]) * rstd[n];
        db += g;
    }
    part[(int64_t)s * C + c] = dw;
    part[(int64_t)(S + s) * C + c] = db;
}
/* ... then the slabs added per column: block (32, 8) takes 32 columns, its
   row y the slabs y, y + 8, ..., and the 8 row sums are added in order (a
   fixed tree: the same bits every run, and 8x the threads of one per column) */
template <typename T> __global__ void __launch_bounds__(256) gk_ln_bwd_sum(const float *part, int C, int S, T *gw, T *gb) {
    __shared__ float red[2][8][33];
    int c = blockIdx.x * 32 + threadIdx.x, y = threadIdx.y;
    float dw = 0, db = 0;
    if (c < C)
        for (int s = y; s < S; s += 8) {
            dw += part[(int64_t)s * C + c];
            if (gb) db += part[(int64_t)(S + s) * C + c]; /* (a bias gradient alone: part holds S slabs, not 2 S) */
        }
    red[0][y][threadIdx.x] = dw, red[1][y][threadIdx.x] = db;
    __syncthreads();
    if (y > 1 || c >= C || (y && !gb)) return;
    float v = 0;
    for (int k = 0; k < 8; k++) v += red[y][k][threadIdx.x];
    (y ? gb : gw)[c] = ex_to<T>(v);
}

/* A bias gradient: the column sums of dy [N, M] (T, M a multiple of 8), in
   slabs of R rows like the LayerNorm's: block (32, 8) takes 256 columns (8
   per thread, gpt_v8 loads), its row y the rows y, y + 8, ... of the slab;
   the 8 row sums added in order into part[blockIdx.y]. gk_ln_bwd_sum (gb
   NULL) adds the slabs. One read of dy with 16-byte loads, the same bits
   every run (a GEMM against a ones vector is the fallback where M is not a
   multiple of 8). */
#define GPT_COLSUM_ROWS 128
template <typename T>
__global__ void __launch_bounds__(256) gk_colsum(const T *__restrict__ dy, int64_t N, int M, int R,
                                                 float *__restrict__ part) {
    __shared__ float red[8][32][9];
    int c0 = (blockIdx.x * 32 + threadIdx.x) * 8, y = threadIdx.y;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t r0 = (int64_t)blockIdx.y * R, r1 = r0 + R < N ? r0 + R : N;
    if (c0 < M)
        for (int64_t n = r0 + y; n < r1; n += 8) {
            gpt_v8<T> v = *(const gpt_v8<T> *)(dy + n * M + c0);
#pragma unroll
            for (int i = 0; i < 8; i++) acc[i] += ex_f32(v.x[i]);
        }
#pragma unroll
    for (int i = 0; i < 8; i++) red[y][threadIdx.x][i] = acc[i];
    __syncthreads();
    int t = y * 32 + threadIdx.x, x = t / 8, i = t % 8, c = (blockIdx.x * 32 + x) * 8 + i;
    if (c >= M) return;
    float v = 0;
    for (int k = 0; k < 8; k++) v += red[k][x][i];
    part[(int64_t)blockIdx.y * M + c] = v;
}

/* Row-wise kernels take grid (column groups, rows) and 4 columns per
   thread: no division per element, 8- or 16-byte accesses (every width here
   is a multiple of 8, every row starts 16-byte aligned). */
#define GPT_ROW_THREADS 128
static inline dim3 gpt_row_grid(int64_t rows, int cols) { /* rows past 65535 loop */
    return dim3((unsigned)((cols / 4 + GPT_ROW_THREADS - 1) / GPT_ROW_THREADS), (unsigned)(rows < 65535 ? rows : 65535));
}

/* y[n, m] += b[m] in place (T); with g: g = gelu(y) too */
template <typename T> __global__ void gk_bias(T *y, const T *b, T *g, int64_t N, int M) {
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (c >= M) return;
    gpt_v4<T> bv = *(const gpt_v4<T> *)(b + c);
    for (int64_t n = blockIdx.y; n < N; n += gridDim.y) {
        int64_t at = n * M + c;
        gpt_v4<T> yv = *(const gpt_v4<T> *)(y + at), gv;
        for (int i = 0; i < 4; i++) yv.x[i] = ex_to<T>(ex_f32(yv.x[i]) + ex_f32(bv.x[i]));
        *(gpt_v4<T> *)(y + at) = yv;
        if (!g) continue;
        for (int i = 0; i < 4; i++) gv.x[i] = ex_to<T>(g_gelu(ex_f32(yv.x[i])));
        *(gpt_v4<T> *)(g + at) = gv;
    }
}

/* out = x + y + b (fp32 residual), rows of C */
template <typename T>
__global__ void gk_residual(const float *x, const float *y, const T *b, float *out, int64_t N, int C) {
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (c >= C) return;
    float4 bb = {ex_f32(b[c]), ex_f32(b[c + 1]), ex_f32(b[c + 2]), ex_f32(b[c + 3])};
    for (int64_t n = blockIdx.y; n < N; n += gridDim.y) {
        int64_t at = n * C + c;
        float4 xv = *(const float4 *)(x + at), yv = *(const float4 *)(y + at);
        *(float4 *)(out + at) = make_float4(xv.x + yv.x + bb.x, xv.y + yv.y + bb.y, xv.z + yv.z + bb.z, xv.w + yv.w + bb.w);
    }
}

/* y = x in T; n a multiple of 4 */
template <typename T> __global__ void gk_to(const float *x, T *y, int64_t n) {
    int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= n) return;
    float4 v = *(const float4 *)(x + i);
    gpt_v4<T> o = {{ex_to<T>(v.x), ex_to<T>(v.y), ex_to<T>(v.z), ex_to<T>(v.w)}};
    *(gpt_v4<T> *)(y + i) = o;
}

template <typename T> __global__ void gk_fill(T *y, float v, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = ex_to<T>(v);
}

/* dg = dg * gelu'(h) in place; n a multiple of 4 */
template <typename T> __global__ void gk_gelu_bwd(T *dg, const T *h, int64_t n) {
    int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= n) return;
    gpt_v4<T> d = *(const gpt_v4<T> *)(dg + i), hv = *(const gpt_v4<T> *)(h + i);
    for (int k = 0; k < 4; k++) d.x[k] = ex_to<T>(ex_f32(d.x[k]) * g_gelu_grad(ex_f32(hv.x[k])));
    *(gpt_v4<T> *)(dg + i) = d;
}

/* g = gelu(h); n a multiple of 4 (the backward's copy of the MLP's GELU
   output, recomputed from the kept pre-activation instead of kept) */
template <typename T> __global__ void gk_gelu(const T *h, T *g, int64_t n) {
    int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= n) return;
    gpt_v4<T> hv = *(const gpt_v4<T> *)(h + i), o;
    for (int k = 0; k < 4; k++) o.x[k] = ex_to<T>(g_gelu(ex_f32(hv.x[k])));
    *(gpt_v4<T> *)(g + i) = o;
}

/* One warp per score row (rows = sequences x heads x T, row i of its T x T):
   P[i, j] = softmax_j<=i(scale S[i, j]), 0 above the diagonal */
template <typename T> __global__ void gk_softmax_causal(const float *S, T *P, int64_t rows, int T_, float scale) {
    int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;
    int i = (int)(r % T_);
    const float *s = S + r * T_;
    T *p = P + r * T_;
    float mx = -INFINITY, sum = 0;
    for (int j = lane; j <= i; j += 32) mx = fmaxf(mx, s[j] * scale);
    mx = g_warp_max(mx);
    for (int j = lane; j <= i; j += 32) sum += expf(s[j] * scale - mx);
    sum = g_warp_sum(sum);
    float inv = 1.0f / sum;
    for (int j = lane; j < T_; j += 32) p[j] = ex_to<T>(j <= i ? expf(s[j] * scale - mx) * inv : 0.0f);
}

/* The softmax's backward, one warp per row: dS = scale P (dP - sum_j dP_j P_j),
   written over P (dP: fp32, the GEMM dO V^T) */
template <typename T> __global__ void gk_softmax_bwd(const float *dP, T *P, int64_t rows, int T_, float scale) {
    int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;
    int i = (int)(r % T_);
    const float *d = dP + r * T_;
    T *p = P + r * T_;
    float dot = 0;
    for (int j = lane; j <= i; j += 32) dot += d[j] * ex_f32(p[j]);
    dot = g_warp_sum(dot);
    for (int j = lane; j <= i; j += 32) p[j] = ex_to<T>(scale * ex_f32(p[j]) * (d[j] - dot));
}

/* One block per row of the head's chunk (logits and dz rows ld apart, V
   used): loss[n] = logsumexp(z) - z[y] and, unless dz is NULL (a forward
   alone), dz = (softmax(z) - onehot(y)) * gscale in T */
template <typename T>
__global__ void gk_xent(const float *logits, int64_t ld, const int *tgt, int V, float gscale, T *dz, float *loss) {
    __shared__ float red[32];
    const float *z = logits + (int64_t)blockIdx.x * ld;
    T *d = dz ? dz + (int64_t)blockIdx.x * ld : NULL;
    int t = threadIdx.x, y = tgt[blockIdx.x], nw = blockDim.x / 32;
    float mx = -INFINITY, sum = 0;
    for (int v = t; v < V; v += blockDim.x) mx = fmaxf(mx, z[v]);
    mx = g_warp_max(mx);
    if (t % 32 == 0) red[t / 32] = mx;
    __syncthreads();
    mx = red[0];
    for (int w = 1; w < nw; w++) mx = fmaxf(mx, red[w]);
    __syncthreads();
    for (int v = t; v < V; v += blockDim.x) sum += expf(z[v] - mx);
    sum = g_warp_sum(sum);
    if (t % 32 == 0) red[t / 32] = sum;
    __syncthreads();
    sum = 0;
    for (int w = 0; w < nw; w++) sum += red[w];
    float inv = 1.0f / sum;
    if (d)
        for (int v = t; v < V; v += blockDim.x)
            d[v] = ex_to<T>((expf(z[v] - mx) * inv - (v == y ? 1.0f : 0.0f)) * gscale);
    if (t == 0) loss[blockIdx.x] = logf(sum) + mx - z[y];
}

/* *acc += factor * sum(loss[0..n)), one block, a fixed order */
__global__ void gk_loss_sum(const float *loss, int64_t n, float factor, float *acc) {
    __shared__ float red[GPT_THREADS];
    float s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += loss[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) *acc += red[0] * factor;
}

/* gwpe[t, c] = sum over the sequences of dx[b T + t, c] for t < T, and 0
   for the rows T .. P - 1 no position reads (every element written: wpe's
   gradient is ZERO_TENSOR_GRAD_WRITE) */
template <typename T> __global__ void gk_wpe_bwd(const float *dx, int B, int T_, int P, int C, T *g) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)P * C) return;
    float s = 0;
    if (i < (int64_t)T_ * C)
        for (int b = 0; b < B; b++) s += dx[(int64_t)b * T_ * C + i];
    g[i] = ex_to<T>(s);
}

/* gwte[v, :] += the sum of dx over the positions holding token v (pos[off[v]
   .. off[v+1]), ascending): block v, threads over the columns; no atomics */
template <typename T> __global__ void gk_wte_bwd(const float *dx, const int *off, const int *pos, int C, T *g) {
    int v = blockIdx.x, a = off[v], b = off[v + 1];
    if (a == b) return;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float s = 0;
        for (int k = a; k < b; k++) s += dx[(int64_t)pos[k] * C + c];
        g[(int64_t)v * C + c] = ex_to<T>(ex_f32(g[(int64_t)v * C + c]) + s);
    }
}

/* ---- GEMMs: row-major views of cuBLAS's column-major ---- */

/* Row-major C[M, N] = alpha op(A) op(B) + beta C, op(A) [M, K], op(B) [K, N];
   lda, ldb, ldc are row strides. As column-major this is C^T = op(B)^T op(A)^T,
   so cuBLAS gets B first. fp32 accumulation (CUBLAS_COMPUTE_32F: no TF32 for
   fp32 operands, unless tf32 is set). Batched over `batch` matrices with
   element strides sa, sb, sc when batch > 1. */
typedef struct gpt_lt gpt_lt;
typedef struct gpt_gemm_ctx {
    cublasHandle_t h;
    int tf32;
    gpt_lt *lt; /* cuBLASLt with epilogues (gpt_lt_create), or NULL: cuBLAS and separate kernels */
} gpt_gemm_ctx;

static inline zero_result gpt_blas(cublasStatus_t s, const char *what, zero_error *err) {
    if (s == CUBLAS_STATUS_SUCCESS) return ZERO_OK;
    memset(err, 0, sizeof *err);
    err->code = ZERO_ERR_CUDA;
    snprintf(err->msg, sizeof err->msg, "%s failed: %s", what, cublasGetStatusName(s));
    return ZERO_ERR_CUDA;
}

static inline zero_result gpt_mm(const gpt_gemm_ctx *g, int ta, int tb, int M, int N, int K, float alpha,
                                 const void *A, int lda, long long sa, const void *B, int ldb, long long sb,
                                 float beta, void *C, cudaDataType_t ct, int ldc, long long sc, int batch,
                                 cudaDataType_t abt, zero_error *err) {
    cublasComputeType_t comp = abt == CUDA_R_32F && g->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch <= 1)
        return gpt_blas(cublasGemmEx(g->h, ob, oa, N, M, K, &alpha, B, abt, ldb, A, abt, lda, &beta, C, ct, ldc, comp,
                                     CUBLAS_GEMM_DEFAULT),
                        "cublasGemmEx", err);
    return gpt_blas(cublasGemmStridedBatchedEx(g->h, ob, oa, N, M, K, &alpha, B, abt, ldb, sb, A, abt, lda, sa, &beta,
                                               C, ct, ldc, sc, batch, comp, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx", err);
}

/* ---- cuBLASLt: the same GEMMs with their elementwise neighbours fused ----

   The epilogues (cuBLASLt's, applied to the fp32 accumulator before the
   store) replace passes over the activations:
   - BIAS: y = x W + b (the qkv projection; no separate bias pass);
   - GELU_AUX_BIAS: h = x W + b kept as aux, g = gelu(h) stored (the MLP's
     first product: bias and GELU in one store instead of three passes);
   - DGELU: dh = (dg W^T) gelu'(h) (the MLP's backward through the GELU);
   - DGELU_BGRAD: the same and the bias gradient sum_n dh;
   - BGRADA: dW = x^T dy with the bias gradient sum_n dy.
   The last two are off by default (GPT_LT_DEFAULT).
   cuBLASLt's GELU is the tanh form, GPT-2's. Each (shape, epilogue) gets its
   descriptors and algorithm once (a heuristic query costs tens of
   microseconds), kept in a small table; a shape with no algorithm for its
   epilogue is remembered and the caller takes the separate kernels. */
enum { GPT_EPI_NONE, GPT_EPI_BIAS, GPT_EPI_GELU_AUX_BIAS, GPT_EPI_DGELU_BGRAD, GPT_EPI_BGRADA, GPT_EPI_DGELU };

/* The epilogues used unless GPT_LT_EPI says otherwise: the ones measured faster than the separate kernels
   on an H100 at GPT-2 XL's shapes (docs/PERF.md 5f). DGELU_BGRAD and BGRADA compute the bias gradient in
   a second kernel of cuBLASLt's, which measured slower than the separate bias-gradient pass. */
#define GPT_LT_DEFAULT (1 << GPT_EPI_NONE | 1 << GPT_EPI_BIAS | 1 << GPT_EPI_GELU_AUX_BIAS | 1 << GPT_EPI_DGELU)
#define GPT_LT_ENTRIES 256
/* The most elements of C (and of the epilogue's auxiliary matrix) one cuBLASLt call takes: larger
   products go in row chunks (gpt_mm_epi). A precaution: GPT-2 XL at micro-batch 24 ([N, 4C] of 1.6e8
   elements) stopped with an illegal address in a step that ran these epilogues, and the kernel at fault
   is not pinned down; every run measured so far had at most 2^26 elements per call. */
#define GPT_LT_MAX_ELEMS ((int64_t)1 << 26)
#define GPT_LT_WS ((size_t)32 << 20)
typedef struct gpt_lt_entry {
    int ta, tb, M, N, K, lda, ldb, ldc, ldaux, epi, beta_nz;
    cudaDataType_t ct, abt;
    int ok; /* 1: algo found; 0: none (callers fall back) */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} gpt_lt_entry;
struct gpt_lt {
    cublasLtHandle_t h;
    void *ws;
    int mask;          /* bit 1 << epi: that epilogue is used (GPT_LT_EPI, default GPT_LT_DEFAULT) */
    int64_t max_elems; /* the most elements of C per call (GPT_LT_MAX_ELEMS; tests set fewer) */
    int n;
    gpt_lt_entry e[GPT_LT_ENTRIES];
};

static inline void gpt_lt_destroy(gpt_lt *lt) {
    if (!lt) return;
    for (int i = 0; i < lt->n; i++) {
        gpt_lt_entry *x = &lt->e[i];
        if (x->op) cublasLtMatmulDescDestroy(x->op);
        if (x->la) cublasLtMatrixLayoutDestroy(x->la);
        if (x->lb) cublasLtMatrixLayoutDestroy(x->lb);
        if (x->lc) cublasLtMatrixLayoutDestroy(x->lc);
    }
    if (lt->ws) cudaFree(lt->ws);
    if (lt->h) cublasLtDestroy(lt->h);
    free(lt);
}

static inline zero_result gpt_lt_create(gpt_lt **out, zero_error *err) {
    gpt_lt *lt = (gpt_lt *)calloc(1, sizeof *lt);
    *out = NULL;
    if (!lt) {
        memset(err, 0, sizeof *err);
        err->code = ZERO_ERR_OUT_OF_MEMORY;
        snprintf(err->msg, sizeof err->msg, "host memory for the cuBLASLt table");
        return ZERO_ERR_OUT_OF_MEMORY;
    }
    if (gpt_blas(cublasLtCreate(&lt->h), "cublasLtCreate", err) != ZERO_OK) {
        free(lt);
        return err->code;
    }
    cudaError_t ce = cudaMalloc(&lt->ws, GPT_LT_WS);
    if (ce != cudaSuccess) {
        cudaGetLastError();
        lt->ws = NULL;
        gpt_lt_destroy(lt);
        memset(err, 0, sizeof *err);
        err->code = ZERO_ERR_OUT_OF_MEMORY;
        snprintf(err->msg, sizeof err->msg, "cuBLASLt workspace (%zu MiB): %s", GPT_LT_WS >> 20, cudaGetErrorString(ce));
        return ZERO_ERR_OUT_OF_MEMORY;
    }
    /* GPT_LT_EPI=bias,gelu,dgelu,dgelub,bgrad (any of them, or "none"): which epilogues run through
       cuBLASLt, the rest as separate kernels; for comparing them one at a time (docs/PERF.md) */
    lt->mask = GPT_LT_DEFAULT;
    lt->max_elems = GPT_LT_MAX_ELEMS;
    if (const char *m = getenv("GPT_LT_EPI")) {
        static const char *names[] = {"", "bias", "gelu", "dgelub", "bgrad", "dgelu"};
        lt->mask = 1 << GPT_EPI_NONE;
        while (*m) {
            size_t len = strcspn(m, ",");
            for (int i = 1; i < 6; i++)
                if (len == strlen(names[i]) && !strncmp(m, names[i], len)) lt->mask |= 1 << i;
            m += len + (m[len] == ',');
        }
    }
    *out = lt;
    return ZERO_OK;
}

/* The table entry of one shape and epilogue, made on first use. NULL with
   *err set: a cuBLASLt call failed (not "no algorithm": that is ok == 0). */
static gpt_lt_entry *gpt_lt_entry_of(gpt_lt *lt, int ta, int tb, int M, int N, int K, int lda, int ldb, int ldc,
                                     int ldaux, int epi, int beta_nz, cudaDataType_t ct, cudaDataType_t abt,
                                     zero_error *err) {
    for (int i = 0; i < lt->n; i++) {
        gpt_lt_entry *x = &lt->e[i];
        if (x->ta == ta && x->tb == tb && x->M == M && x->N == N && x->K == K && x->lda == lda && x->ldb == ldb &&
            x->ldc == ldc && x->ldaux == ldaux && x->epi == epi && x->beta_nz == beta_nz && x->ct == ct && x->abt == abt)
            return x;
    }
    if (lt->n == GPT_LT_ENTRIES) { /* a full table: this shape takes cuBLAS (more shapes than any model here has) */
        static gpt_lt_entry none;
        none.ok = 0;
        return &none;
    }
    gpt_lt_entry *x = &lt->e[lt->n++];
    memset(x, 0, sizeof *x);
    x->ta = ta, x->tb = tb, x->M = M, x->N = N, x->K = K, x->lda = lda, x->ldb = ldb, x->ldc = ldc;
    x->ldaux = ldaux, x->epi = epi, x->beta_nz = beta_nz, x->ct = ct, x->abt = abt;
    /* row-major C[M, N] = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's A is our B */
    cublasOperation_t oa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, ob = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t ep = epi == GPT_EPI_BIAS            ? CUBLASLT_EPILOGUE_BIAS
                            : epi == GPT_EPI_GELU_AUX_BIAS ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                            : epi == GPT_EPI_DGELU_BGRAD   ? CUBLASLT_EPILOGUE_DGELU_BGRAD
                            : epi == GPT_EPI_BGRADA        ? CUBLASLT_EPILOGUE_BGRADA
                            : epi == GPT_EPI_DGELU         ? CUBLASLT_EPILOGUE_DGELU
                                                           : CUBLASLT_EPILOGUE_DEFAULT;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    uint32_t align = 16;
    size_t ws = GPT_LT_WS;
    int64_t ld_aux = ldaux;
    zero_result r = ZERO_OK;
#define GPT_LT(call, what)                                                                                             \
    do {                                                                                                               \
        if ((r = gpt_blas((call), what, err)) != ZERO_OK) goto done;                                                   \
    } while (0)
    GPT_LT(cublasLtMatmulDescCreate(&x->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    GPT_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof oa), "cuBLASLt TRANSA");
    GPT_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof ob), "cuBLASLt TRANSB");
    GPT_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep), "cuBLASLt EPILOGUE");
    if (epi == GPT_EPI_GELU_AUX_BIAS || epi == GPT_EPI_DGELU_BGRAD || epi == GPT_EPI_DGELU)
        GPT_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld_aux, sizeof ld_aux),
               "cuBLASLt EPILOGUE_AUX_LD");
    GPT_LT(cublasLtMatrixLayoutCreate(&x->la, abt, tb ? K : N, tb ? N : K, ldb), "cublasLtMatrixLayoutCreate");
    GPT_LT(cublasLtMatrixLayoutCreate(&x->lb, abt, ta ? M : K, ta ? K : M, lda), "cublasLtMatrixLayoutCreate");
    GPT_LT(cublasLtMatrixLayoutCreate(&x->lc, ct, N, M, ldc), "cublasLtMatrixLayoutCreate");
    GPT_LT(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    GPT_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
           "cuBLASLt MAX_WORKSPACE_BYTES");
    /* the engine's parameters sit at 16-byte (not 256-byte) offsets in its flat buffers */
    GPT_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, sizeof align),
           "cuBLASLt MIN_ALIGNMENT_A");
    GPT_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align, sizeof align),
           "cuBLASLt MIN_ALIGNMENT_B");
    GPT_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align, sizeof align),
           "cuBLASLt MIN_ALIGNMENT_C");
    GPT_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align, sizeof align),
           "cuBLASLt MIN_ALIGNMENT_D");
    {
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt->h, x->op, x->la, x->lb, x->lc, x->lc, pref, 1, &res, &found);
        if (st == CUBLAS_STATUS_SUCCESS && found > 0 && res.state == CUBLAS_STATUS_SUCCESS) {
            x->algo = res.algo;
            x->ok = 1;
        } /* otherwise (NOT_SUPPORTED and the like) x->ok stays 0: this shape falls back */
    }
done:
#undef GPT_LT
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    return r == ZERO_OK ? x : NULL;
}

/* gpt_mm's product through cuBLASLt with an epilogue: vec is the bias (BIAS,
   GELU_AUX_BIAS) or where the bias gradient goes (DGELU_BGRAD, BGRADA), of
   N elements of the compute type; aux is the pre-activation h [M, N] with
   row stride ldaux (written by GELU_AUX_BIAS, read by DGELU_BGRAD and
   DGELU). *done is 0 when there is no cuBLASLt
   or no algorithm for this shape: nothing was queued, the caller does it
   with gpt_mm and kernels. */
static zero_result gpt_mm_epi(const gpt_gemm_ctx *g, cudaStream_t s, int ta, int tb, int M, int N, int K,
                              const void *A, int lda, const void *B, int ldb, float beta, void *C, cudaDataType_t ct,
                              int ldc, cudaDataType_t abt, int epi, const void *vec, void *aux, int ldaux, int *done,
                              zero_error *err) {
    *done = 0;
    if (!g->lt || (abt == CUDA_R_32F && g->tf32) || !(g->lt->mask & (1 << epi))) return ZERO_OK; /* (--tf32 stays with cuBLAS's TF32 path) */
    if ((int64_t)M * N > g->lt->max_elems) {
        /* rows in chunks (a multiple of 64 rows each); only where rows are independent: not the bias
           gradients (a sum over rows), not a transposed A (its rows are C's columns) */
        if (epi == GPT_EPI_DGELU_BGRAD || epi == GPT_EPI_BGRADA || ta) return ZERO_OK;
        int64_t rows = g->lt->max_elems / N / 64 * 64;
        if (rows < 64) return ZERO_OK;
        size_t ea = abt == CUDA_R_32F ? 4 : 2, ec = ct == CUDA_R_32F ? 4 : 2;
        for (int64_t r0 = 0; r0 < M; r0 += rows) {
            int m = (int)(M - r0 < rows ? M - r0 : rows), d1 = 0;
            zero_result r = gpt_mm_epi(g, s, ta, tb, m, N, K, (const char *)A + (size_t)r0 * lda * ea, lda, B, ldb,
                                       beta, (char *)C + (size_t)r0 * ldc * ec, ct, ldc, abt, epi, vec,
                                       aux ? (char *)aux + (size_t)r0 * ldaux * ec : NULL, ldaux, &d1, err);
            if (r != ZERO_OK) return r;
            if (!d1) {
                if (r0 == 0) return ZERO_OK; /* nothing queued: the caller's path does it all */
                memset(err, 0, sizeof *err);
                err->code = ZERO_ERR_CUDA;
                snprintf(err->msg, sizeof err->msg, "cuBLASLt: no algorithm for rows %lld.. of a %d-row product",
                         (long long)r0, M);
                return ZERO_ERR_CUDA;
            }
        }
        *done = 1;
        return ZERO_OK;
    }
    gpt_lt_entry *x = gpt_lt_entry_of(g->lt, ta, tb, M, N, K, lda, ldb, ldc, ldaux, epi, beta != 0.0f, ct, abt, err);
    if (!x) return err->code;
    if (!x->ok) return ZERO_OK;
    if (epi != GPT_EPI_NONE && epi != GPT_EPI_DGELU &&
        gpt_blas(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vec, sizeof vec),
                 "cuBLASLt BIAS_POINTER", err) != ZERO_OK)
        return err->code;
    if ((epi == GPT_EPI_GELU_AUX_BIAS || epi == GPT_EPI_DGELU_BGRAD || epi == GPT_EPI_DGELU) &&
        gpt_blas(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux),
                 "cuBLASLt EPILOGUE_AUX_POINTER", err) != ZERO_OK)
        return err->code;
    const float alpha = 1.0f;
    if (gpt_blas(cublasLtMatmul(g->lt->h, x->op, &alpha, B, x->la, A, x->lb, &beta, C, x->lc, C, x->lc, &x->algo,
                                g->lt->ws, GPT_LT_WS, s),
                 "cublasLtMatmul", err) != ZERO_OK)
        return err->code;
    *done = 1;
    return ZERO_OK;
}

#define GPT_TRY(call)                                                                                                  \
    do {                                                                                                               \
        zero_result r_ = (call);                                                                                       \
        if (r_ != ZERO_OK) return r_;                                                                                  \
    } while (0)
#define GPT_LAUNCHED(err) ZERO_CUDA_TRY(cudaGetLastError(), err)

#include "gpt_attn.cuh"

/* ---- activations ---- */

/* What one micro-batch keeps. Per block slot (L of them; 1 with recompute):
   LayerNorm outputs and statistics, qkv, the attention output, the MLP's
   pre-activation (not its GELU output: the backward recomputes that in one
   elementwise pass, 8 C bytes per token and block fewer kept); the fp32
   residual stream at every block boundary (always L + 1 of them: recompute
   starts from them). */
template <typename T> struct gpt_acts {
    gpt_dims d;
    int B, slots, nb; /* sequences; block slots; sequences per attention chunk (0: fused) */
    int flash;        /* the fused attention kernels */
    int64_t N;        /* B T */
    int head_rows;    /* rows per head chunk */
    int ldv;          /* the row stride of the head's logits and dlogits: V rounded up to a multiple of
                         GPT_LDV_ALIGN, so every row is aligned for the tensor cores whatever V is */
    float *resid;     /* [L + 1][N, C] */
    float *xmid;      /* [slots][N, C] */
    T *ln1, *qkv, *atty, *ln2, *fch;       /* [slots][N, C | 3C | C | C | 4C]; fch: the MLP's pre-activation
                                              (its GELU output is recomputed where needed, in d2) */
    float *st1, *st2;                      /* [slots][2][N]: mean, rstd */
    float *lse;         /* fused attention: [slots][B H T] row log-sum-exp */
    float *Dsc;         /* its backward's rowsum(dO o O), [B H T] */
    T *lnf;
    float *stf;         /* [2][N] */
    float *S;           /* attention scores, fp32 [nb, H, T, T]; the head's logits [head_rows, ldv] reuse it */
    T *P;               /* probabilities, [nb, H, T, T]; the head's dlogits [head_rows, ldv] reuse it */
    float *yf;          /* fp32 GEMM output [N, C] */
    float *dres, *dln;  /* fp32 [N, C]: gradient of the residual; of a LayerNorm output */
    T *d1, *d2;         /* [N, 4C] compute-dtype gradients */
    float *part;        /* LayerNorm slabs [2 S, C] */
    int ln_slabs, ln_rows;
    T *ones;            /* [N] */
    float *loss;        /* [N] per-position loss */
    int *idx;           /* device: tok [N], tgt [N], off [V + 1], pos [N] */
    int *idx_host;      /* pinned, two sets (double buffer) */
    int *cursor;        /* host [V + 1], the counting sort's */
    cudaEvent_t idx_done[2];
    int idx_turn;
    void *blas_ws;
    size_t bytes;       /* device bytes of all of the above */
};

template <typename T> static void gpt_acts_free(gpt_acts<T> *a) {
    void *dev[] = {a->resid, a->xmid, a->ln1, a->qkv, a->atty, a->ln2, a->fch, a->st1, a->st2, a->lse, a->Dsc, a->lnf,
                   a->stf, a->S, a->P, a->yf, a->dres, a->dln, a->d1, a->d2, a->part, a->ones, a->loss, a->idx,
                   a->blas_ws};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) cudaFree(dev[i]);
    if (a->idx_host) cudaFreeHost(a->idx_host);
    free(a->cursor);
    for (int i = 0; i < 2; i++)
        if (a->idx_done[i]) cudaEventDestroy(a->idx_done[i]);
    memset(a, 0, sizeof *a);
}

static inline int64_t gpt_idx_ints(const gpt_dims *d, int64_t N) { return 3 * N + d->vocab + 1; }

/* The logits' row stride: GPT-2's V = 50257 is odd, and a GEMM operand whose
   rows are not 16-byte aligned keeps cuBLAS off its tensor-core kernels (the
   dlogits are the A operand of both of the head's backward products). The
   columns V .. ldv - 1 are never read or written. */
#define GPT_LDV_ALIGN 64
static inline int gpt_ldv(const gpt_dims *d) { return (d->vocab + GPT_LDV_ALIGN - 1) / GPT_LDV_ALIGN * GPT_LDV_ALIGN; }

/* Allocates every buffer of a micro-batch of B sequences (nothing is
   allocated later: a batch that fits here runs). attn_bytes caps the
   attention scratch (at least one sequence). A failure frees what was taken
   and returns ZERO_ERR_OUT_OF_MEMORY. */
/* the slab partial sums: the LayerNorm's (2 S C) or a bias gradient's (N / GPT_COLSUM_ROWS slabs of up to 4C) */
static inline size_t gpt_part_floats(int ln_slabs, int64_t N, int C) {
    size_t ln = (size_t)(2 * ln_slabs) * (size_t)C, bias = (size_t)((N + GPT_COLSUM_ROWS - 1) / GPT_COLSUM_ROWS) * 4 * (size_t)C;
    return ln > bias ? ln : bias;
}

template <typename T>
static zero_result gpt_acts_alloc(gpt_acts<T> *a, const gpt_dims *d, int B, int recompute, int flash,
                                  size_t attn_bytes, cublasHandle_t blas, zero_error *err) {
    int64_t N = (int64_t)B * d->seq, C = d->dim, TT = (int64_t)d->seq * d->seq;
    size_t per_seq = (size_t)d->heads * (size_t)TT * (sizeof(float) + sizeof(T));
    memset(a, 0, sizeof *a);
    a->d = *d;
    a->B = B;
    a->N = N;
    a->slots = recompute ? 1 : d->layers;
    a->flash = flash && gpt_fa_usable<T>(d);
    a->nb = (int)(attn_bytes / per_seq);
    if (a->nb < 1) a->nb = 1;
    if (a->nb > B) a->nb = B;
    if (a->flash) a->nb = 0; /* no scores in memory */
    /* head chunk rows: the logits (fp32) and dlogits (T) fit the attention scratch (or attn_bytes) */
    a->ldv = gpt_ldv(d);
    {
        int64_t cap = a->flash ? (int64_t)(attn_bytes / (sizeof(float) + sizeof(T))) : (int64_t)a->nb * d->heads * TT,
                rows = cap / a->ldv;
        if (rows > N) rows = N;
        if (rows < 1) rows = 1;
        a->head_rows = (int)rows;
    }
    {   /* slabs of the LayerNorm backward: about 4 blocks (16 warps) per SM, each warp a few rows */
        int sms = 132;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        int64_t want = 4 * (int64_t)(sms > 0 ? sms : 132), rows = (N + want - 1) / want;
        a->ln_rows = (int)(rows < 4 ? 4 : rows > 256 ? 256 : rows);
    }
    a->ln_slabs = (int)((N + a->ln_rows - 1) / a->ln_rows);
    int64_t sl = a->slots;
    size_t scratch = (size_t)a->nb * d->heads * (size_t)TT;
    if (scratch < (size_t)a->head_rows * a->ldv) scratch = (size_t)a->head_rows * a->ldv;
    struct {
        void **p;
        size_t bytes;
    } want[] = {
        {(void **)&a->resid, sizeof(float) * (size_t)(d->layers + 1) * N * C},
        {(void **)&a->xmid, sizeof(float) * (size_t)(sl * N * C)},
        {(void **)&a->ln1, sizeof(T) * (size_t)(sl * N * C)},
        {(void **)&a->qkv, sizeof(T) * (size_t)(sl * N * 3 * C)},
        {(void **)&a->atty, sizeof(T) * (size_t)(sl * N * C)},
        {(void **)&a->ln2, sizeof(T) * (size_t)(sl * N * C)},
        {(void **)&a->fch, sizeof(T) * (size_t)(sl * N * 4 * C)},
        {(void **)&a->st1, sizeof(float) * (size_t)(sl * 2 * N)},
        {(void **)&a->st2, sizeof(float) * (size_t)(sl * 2 * N)},
        {(void **)&a->lse, sizeof(float) * (size_t)(a->flash ? sl * d->heads * N : 1)},
        {(void **)&a->Dsc, sizeof(float) * (size_t)(a->flash ? d->heads * N : 1)},
        {(void **)&a->lnf, sizeof(T) * (size_t)(N * C)},
        {(void **)&a->stf, sizeof(float) * (size_t)(2 * N)},
        {(void **)&a->S, sizeof(float) * scratch},
        {(void **)&a->P, sizeof(T) * scratch},
        {(void **)&a->yf, sizeof(float) * (size_t)(N * C)},
        {(void **)&a->dres, sizeof(float) * (size_t)(N * C)},
        {(void **)&a->dln, sizeof(float) * (size_t)(N * C)},
        {(void **)&a->d1, sizeof(T) * (size_t)(N * 4 * C)},
        {(void **)&a->d2, sizeof(T) * (size_t)(N * 4 * C)},
        {(void **)&a->part, sizeof(float) * gpt_part_floats(a->ln_slabs, N, C)},
        {(void **)&a->ones, sizeof(T) * (size_t)N},
        {(void **)&a->loss, sizeof(float) * (size_t)N},
        {(void **)&a->idx, sizeof(int) * (size_t)gpt_idx_ints(d, N)},
        {(void **)&a->blas_ws, (size_t)32 << 20},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cudaError_t ce = cudaMalloc(want[i].p, want[i].bytes);
        if (ce != cudaSuccess) {
            cudaGetLastError(); /* an allocation failure is not sticky: clear it */
            gpt_acts_free(a);
            memset(err, 0, sizeof *err);
            err->code = ZERO_ERR_OUT_OF_MEMORY;
            snprintf(err->msg, sizeof err->msg,
                     "activations of micro-batch %d x %d tokens: cudaMalloc of %.1f MiB failed (%s)", B, d->seq,
                     want[i].bytes / 1048576.0, cudaGetErrorString(ce));
            return ZERO_ERR_OUT_OF_MEMORY;
        }
        a->bytes += want[i].bytes;
    }
    ZERO_CUDA_TRY(cudaMallocHost((void **)&a->idx_host, 2 * sizeof(int) * (size_t)gpt_idx_ints(d, N)), err);
    if (!(a->cursor = (int *)malloc(sizeof(int) * (size_t)(d->vocab + 1)))) {
        memset(err, 0, sizeof *err);
        err->code = ZERO_ERR_OUT_OF_MEMORY;
        snprintf(err->msg, sizeof err->msg, "host memory for the token sort");
        return ZERO_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < 2; i++) ZERO_CUDA_TRY(cudaEventCreateWithFlags(&a->idx_done[i], cudaEventDisableTiming), err);
    /* cuBLAS gets its workspace here, so no GEMM allocates later */
    if (gpt_blas(cublasSetWorkspace(blas, a->blas_ws, (size_t)32 << 20), "cublasSetWorkspace", err)) return err->code;
    gk_fill<T><<<gpt_blocks(N), GPT_THREADS>>>(a->ones, 1.0f, N);
    ZERO_CUDA_TRY(cudaDeviceSynchronize(), err);
    return ZERO_OK;
}

/* ---- one micro-batch ---- */

/* What the model runs with. The order of its engine calls is gpt_wire.h's
   (gpt_wire_step, gpt_wire_forward), which runs the kernels below as its
   compute pieces: zero_fetch / zero_param / zero_release around every use
   of a parameter and zero_grad / zero_grad_ready around every gradient
   written, beside the kernels. */
typedef struct gpt_run {
    zero_engine *e;
    gpt_gemm_ctx gemm;
    cudaStream_t stream;
    int recompute;
} gpt_run;

/* gb[M] = sum_n dy[n, :] (a bias gradient), queued on the stream */
template <typename T>
static zero_result gpt_bias_grad(const gpt_run *r, const gpt_acts<T> *a, const T *dy, int M, T *gb, zero_error *err) {
    int64_t N = a->N;
    if (M % 8)
        return gpt_mm(&r->gemm, 0, 0, 1, M, (int)N, 1.0f, a->ones, (int)N, 0, dy, M, 0, 0.0f, gb, ex_dtype<T>::cuda, M, 0,
                      1, ex_dtype<T>::cuda, err);
    int S = (int)((N + GPT_COLSUM_ROWS - 1) / GPT_COLSUM_ROWS);
    gk_colsum<T><<<dim3((unsigned)((M + 255) / 256), (unsigned)S), dim3(32, 8), 0, r->stream>>>(dy, N, M, GPT_COLSUM_ROWS,
                                                                                               a->part);
    gk_ln_bwd_sum<T><<<(unsigned)((M + 31) / 32), dim3(32, 8), 0, r->stream>>>(a->part, M, S, gb, (T *)NULL);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

/* gW[in, out] = x[N, in]^T dy[N, out] into g and, with gb, gb[out] = sum_n dy
   (cuBLASLt's BGRADA epilogue where GPT_LT_EPI asks for it, else gpt_bias_grad) */
template <typename T>
static zero_result gpt_weight_grad(const gpt_run *r, const gpt_acts<T> *a, T *g, T *gb, const T *x, int in,
                                   const T *dy, int out, zero_error *err) {
    int done = 0;
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    if (gb)
        GPT_TRY(gpt_mm_epi(&r->gemm, r->stream, 1, 0, in, out, (int)a->N, x, in, dy, out, 0.0f, g, dt, out, dt,
                           GPT_EPI_BGRADA, gb, NULL, 0, &done, err));
    if (!done) {
        GPT_TRY(gpt_mm(&r->gemm, 1, 0, in, out, (int)a->N, 1.0f, x, in, 0, dy, out, 0, 0.0f, g, dt, out, 0, 1, dt, err));
        if (gb) GPT_TRY(gpt_bias_grad<T>(r, a, dy, out, gb, err));
    }
    return ZERO_OK;
}

/* LayerNorm backward, in the two parts around the hand-over of its
   gradients. First dres (+)= dx of dy (fp32), d1 = dres in T when dxt is
   set (the next product's operand), and the weight and bias gradients'
   slab partial sums; then (gpt_ln_bwd_wb) those sums into gw, gb. */
template <typename T>
static zero_result gpt_ln_bwd_dx(const gpt_run *r, const gpt_acts<T> *a, const float *dy, const float *x,
                                 const float *st, const T *w, int accumulate, T *dxt, zero_error *err) {
    int64_t N = a->N;
    int C = a->d.dim;
    cudaStream_t s = r->stream;
    if (gpt_ln_in_regs(C)) {
        static int smem_set;
        size_t smem = sizeof(float) * 2 * GPT_LNB_WARPS * (size_t)C;
        if (!smem_set) { /* up to C = 2048: 64 KiB, past the default 48 */
            ZERO_CUDA_TRY(cudaFuncSetAttribute(gk_ln_bwd_fused<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)(sizeof(float) * 2 * GPT_LNB_WARPS * 32 * 4 * GPT_LN_VEC)),
                          err);
            smem_set = 1;
        }
        gk_ln_bwd_fused<T><<<(unsigned)a->ln_slabs, 32 * GPT_LNB_WARPS, smem, s>>>(
            dy, x, st, st + N, w, a->dres, dxt, accumulate, a->part, N, C, a->ln_rows, a->ln_slabs);
    } else {
        gk_ln_bwd_dx<T><<<gpt_blocks(N, 8), 256, 0, s>>>(dy, x, st, st + N, w, a->dres, accumulate, N, C);
        gk_ln_bwd_part<<<dim3(gpt_blocks(C, 128), (unsigned)a->ln_slabs), 128, 0, s>>>(dy, x, st, st + N, a->part, N,
                                                                                        C, a->ln_rows, a->ln_slabs);
        if (dxt) gk_to<T><<<gpt_blocks(N * C / 4), GPT_THREADS, 0, s>>>(a->dres, dxt, N * C);
    }
    GPT_LAUNCHED(err);
    return ZERO_OK;
}
template <typename T> static zero_result gpt_ln_bwd_wb(const gpt_run *r, const gpt_acts<T> *a, T *gw, T *gb, zero_error *err) {
    int C = a->d.dim;
    gk_ln_bwd_sum<T><<<(unsigned)((C + 31) / 32), dim3(32, 8), 0, r->stream>>>(a->part, C, a->ln_slabs, gw, gb);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

/* Attention of block slot k: atty = softmax(q k^T / sqrt(hd)) v per head,
   nb sequences at a time */
template <typename T> static zero_result gpt_attn_fwd(const gpt_run *r, gpt_acts<T> *a, const T *qkv, T *atty,
                                                      float *lse, zero_error *err) {
    const gpt_dims *d = &a->d;
    if constexpr (gpt_fa_ok<T>::value) {
        if (a->flash)
            return d->dim / d->heads == 64 ? gpt_fa_fwd_hd<T, 64>(r->stream, d, a->B, qkv, atty, lse, err)
                                           : gpt_fa_fwd_hd<T, 128>(r->stream, d, a->B, qkv, atty, lse, err);
    }
    (void)lse;
    int T_ = d->seq, C = d->dim, H = d->heads, hd = C / H;
    long long TT = (long long)T_ * T_;
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    float scale = 1.0f / sqrtf((float)hd);
    for (int b0 = 0; b0 < a->B; b0 += a->nb) {
        int nb = a->B - b0 < a->nb ? a->B - b0 : a->nb;
        for (int b = 0; b < nb; b++) { /* S[h] = q_h k_h^T */
            const T *q = qkv + (int64_t)(b0 + b) * T_ * 3 * C;
            GPT_TRY(gpt_mm(&r->gemm, 0, 1, T_, T_, hd, 1.0f, q, 3 * C, hd, q + C, 3 * C, hd, 0.0f, a->S + b * H * TT,
                           CUDA_R_32F, T_, TT, H, dt, err));
        }
        gk_softmax_causal<T><<<gpt_blocks((int64_t)nb * H * T_, 8), 256, 0, r->stream>>>(a->S, a->P,
                                                                                        (int64_t)nb * H * T_, T_, scale);
        GPT_LAUNCHED(err);
        for (int b = 0; b < nb; b++) { /* o_h = P_h v_h */
            const T *v = qkv + (int64_t)(b0 + b) * T_ * 3 * C + 2 * C;
            GPT_TRY(gpt_mm(&r->gemm, 0, 0, T_, hd, T_, 1.0f, a->P + b * H * TT, T_, TT, v, 3 * C, hd, 0.0f,
                           atty + (int64_t)(b0 + b) * T_ * C, dt, C, hd, H, dt, err));
        }
    }
    return ZERO_OK;
}

/* Its backward: datt (T, [N, C]) -> dqkv (T, [N, 3C]); P recomputed */
template <typename T> static zero_result gpt_attn_bwd(const gpt_run *r, gpt_acts<T> *a, const T *qkv, const T *atty,
                                                      const float *lse, const T *datt, T *dqkv, zero_error *err) {
    const gpt_dims *d = &a->d;
    if constexpr (gpt_fa_ok<T>::value) {
        if (a->flash)
            return d->dim / d->heads == 64
                       ? gpt_fa_bwd_hd<T, 64>(r->stream, d, a->B, qkv, atty, lse, datt, a->Dsc, dqkv, err)
                       : gpt_fa_bwd_hd<T, 128>(r->stream, d, a->B, qkv, atty, lse, datt, a->Dsc, dqkv, err);
    }
    (void)atty;
    (void)lse;
    int T_ = d->seq, C = d->dim, H = d->heads, hd = C / H;
    long long TT = (long long)T_ * T_;
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    float scale = 1.0f / sqrtf((float)hd);
    for (int b0 = 0; b0 < a->B; b0 += a->nb) {
        int nb = a->B - b0 < a->nb ? a->B - b0 : a->nb;
        int64_t rows = (int64_t)nb * H * T_;
        for (int b = 0; b < nb; b++) {
            const T *q = qkv + (int64_t)(b0 + b) * T_ * 3 * C;
            GPT_TRY(gpt_mm(&r->gemm, 0, 1, T_, T_, hd, 1.0f, q, 3 * C, hd, q + C, 3 * C, hd, 0.0f, a->S + b * H * TT,
                           CUDA_R_32F, T_, TT, H, dt, err));
        }
        gk_softmax_causal<T><<<gpt_blocks(rows, 8), 256, 0, r->stream>>>(a->S, a->P, rows, T_, scale);
        GPT_LAUNCHED(err);
        for (int b = 0; b < nb; b++) {
            int64_t base = (int64_t)(b0 + b) * T_;
            const T *q = qkv + base * 3 * C, *k = q + C, *v = q + 2 * C, *dout = datt + base * C;
            T *dq = dqkv + base * 3 * C, *dk = dq + C, *dv = dq + 2 * C;
            /* dv_h = P_h^T do_h */
            GPT_TRY(gpt_mm(&r->gemm, 1, 0, T_, hd, T_, 1.0f, a->P + b * H * TT, T_, TT, dout, C, hd, 0.0f, dv, dt,
                           3 * C, hd, H, dt, err));
            /* dP_h = do_h v_h^T (fp32, over the scores) */
            GPT_TRY(gpt_mm(&r->gemm, 0, 1, T_, T_, hd, 1.0f, dout, C, hd, v, 3 * C, hd, 0.0f, a->S + b * H * TT,
                           CUDA_R_32F, T_, TT, H, dt, err));
            (void)k;
        }
        gk_softmax_bwd<T><<<gpt_blocks(rows, 8), 256, 0, r->stream>>>(a->S, a->P, rows, T_, scale);
        GPT_LAUNCHED(err);
        for (int b = 0; b < nb; b++) {
            int64_t base = (int64_t)(b0 + b) * T_;
            const T *q = qkv + base * 3 * C, *k = q + C;
            T *dq = dqkv + base * 3 * C, *dk = dq + C;
            /* dq_h = dS_h k_h; dk_h = dS_h^T q_h */
            GPT_TRY(gpt_mm(&r->gemm, 0, 0, T_, hd, T_, 1.0f, a->P + b * H * TT, T_, TT, k, 3 * C, hd, 0.0f, dq, dt,
                           3 * C, hd, H, dt, err));
            GPT_TRY(gpt_mm(&r->gemm, 1, 0, T_, hd, T_, 1.0f, a->P + b * H * TT, T_, TT, q, 3 * C, hd, 0.0f, dk, dt,
                           3 * C, hd, H, dt, err));
        }
    }
    return ZERO_OK;
}

/* y[N, out] = x[N, in] W[in, out] + b in T: the BIAS epilogue, or a GEMM
   and a bias pass (that pass also writes g = gelu(y) when g is set) */
template <typename T>
static zero_result gpt_linear(const gpt_run *r, int64_t N, const T *x, int in, const T *W, const T *b, int out, T *y,
                              zero_error *err) {
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    int done;
    GPT_TRY(gpt_mm_epi(&r->gemm, r->stream, 0, 0, (int)N, out, in, x, in, W, out, 0.0f, y, dt, out, dt, GPT_EPI_BIAS,
                       b, NULL, 0, &done, err));
    if (done) return ZERO_OK;
    GPT_TRY(gpt_mm(&r->gemm, 0, 0, (int)N, out, in, 1.0f, x, in, 0, W, out, 0, 0.0f, y, dt, out, 0, 1, dt, err));
    gk_bias<T><<<gpt_row_grid(N, out), GPT_ROW_THREADS, 0, r->stream>>>(y, b, (T *)NULL, N, out);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

/* Block l's activations in slot k (l, or 0 with recompute), computed once
   per use; x is the block's input, kept for every block */
template <typename T> struct gpt_slot {
    float *x, *xmid, *st1, *st2, *lse;
    T *ln1, *qkv, *atty, *ln2, *fch;
};
template <typename T> static gpt_slot<T> gpt_slot_of(const gpt_acts<T> *a, int l, int k) {
    int64_t N = a->N, C = a->d.dim;
    gpt_slot<T> v;
    v.x = a->resid + l * N * C;
    v.xmid = a->xmid + k * N * C, v.st1 = a->st1 + k * 2 * N, v.st2 = a->st2 + k * 2 * N;
    v.lse = a->lse + k * a->d.heads * N;
    v.ln1 = a->ln1 + k * N * C, v.qkv = a->qkv + k * N * 3 * C, v.atty = a->atty + k * N * C;
    v.ln2 = a->ln2 + k * N * C, v.fch = a->fch + k * N * 4 * C;
    return v;
}

/* Block l's forward into slot k, on its parameters p (gpt_wire.h fetches
   and reads them): from resid[l] to resid[l + 1] (only up to the MLP's
   pre-activation when out_resid is 0: a recompute, whose output is already
   kept). The GELU output goes to the scratch d2, read by the MLP's second
   product only. */
template <typename T>
static zero_result gpt_block_fwd(const gpt_run *r, gpt_acts<T> *a, int l, int k, int out_resid, const T *const *p,
                                 zero_error *err) {
    const gpt_dims *d = &a->d;
    int64_t N = a->N;
    int C = d->dim, done = 0;
    cudaStream_t s = r->stream;
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    const gpt_slot<T> v = gpt_slot_of(a, l, k);
    const float *x = v.x;
    float *xmid = v.xmid, *st1 = v.st1, *st2 = v.st2;
    T *ln1 = v.ln1, *qkv = v.qkv, *atty = v.atty, *ln2 = v.ln2, *fch = v.fch, *fcg = a->d2;

    gpt_ln_fwd<T>(s, x, p[GPT_LN1_W], p[GPT_LN1_B], ln1, st1, N, C);
    GPT_LAUNCHED(err);
    GPT_TRY(gpt_linear<T>(r, N, ln1, C, p[GPT_QKV_W], p[GPT_QKV_B], 3 * C, qkv, err));
    GPT_TRY(gpt_attn_fwd<T>(r, a, qkv, atty, v.lse, err));
    GPT_TRY(gpt_mm(&r->gemm, 0, 0, (int)N, C, C, 1.0f, atty, C, 0, p[GPT_ATTN_PROJ_W], C, 0, 0.0f, a->yf, CUDA_R_32F,
                   C, 0, 1, dt, err));
    if (gpt_ln_in_regs(C)) /* xmid = x + yf + b and LN2 of it in one pass */
        gk_residual_ln<T><<<gpt_blocks(N, 8), 256, 0, s>>>(x, a->yf, p[GPT_ATTN_PROJ_B], xmid, p[GPT_LN2_W],
                                                            p[GPT_LN2_B], ln2, st2, st2 + N, N, C);
    else {
        gk_residual<T><<<gpt_row_grid(N, C), GPT_ROW_THREADS, 0, s>>>(x, a->yf, p[GPT_ATTN_PROJ_B], xmid, N, C);
        gpt_ln_fwd<T>(s, xmid, p[GPT_LN2_W], p[GPT_LN2_B], ln2, st2, N, C);
    }
    GPT_LAUNCHED(err);
    /* (a recompute runs the same product and epilogue as the forward: the same bits in fch) */
    GPT_TRY(gpt_mm_epi(&r->gemm, s, 0, 0, (int)N, 4 * C, C, ln2, C, p[GPT_FC_W], 4 * C, 0.0f, fcg, dt, 4 * C, dt,
                       GPT_EPI_GELU_AUX_BIAS, p[GPT_FC_B], fch, 4 * C, &done, err));
    if (!done) {
        GPT_TRY(gpt_mm(&r->gemm, 0, 0, (int)N, 4 * C, C, 1.0f, ln2, C, 0, p[GPT_FC_W], 4 * C, 0, 0.0f, fch, dt, 4 * C,
                       0, 1, dt, err));
        gk_bias<T><<<gpt_row_grid(N, 4 * C), GPT_ROW_THREADS, 0, s>>>(fch, p[GPT_FC_B], fcg, N, 4 * C);
        GPT_LAUNCHED(err);
    }
    if (!out_resid) return ZERO_OK;
    float *out = a->resid + (int64_t)(l + 1) * N * C; /* = xmid + fcg W + b */
    GPT_TRY(gpt_mm(&r->gemm, 0, 0, (int)N, C, 4 * C, 1.0f, fcg, 4 * C, 0, p[GPT_MLP_PROJ_W], C, 0, 0.0f, a->yf,
                   CUDA_R_32F, C, 0, 1, dt, err));
    gk_residual<T><<<gpt_row_grid(N, C), GPT_ROW_THREADS, 0, s>>>(xmid, a->yf, p[GPT_MLP_PROJ_B], out, N, C);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

/* Block l's backward from slot k in gpt_wire.h's pieces: a->dres holds
   d resid[l + 1] before GPT_WIRE_MLP_PROJ and d resid[l] after
   GPT_WIRE_LN1, a->d1 the same in T (written by the LayerNorm backward
   before: ln_f's or block l + 1's). Each piece's work before its gradients
   are asked for (gpt_block_bwd_before), then its writing of them, g[i] the
   gradient of gpt_wire_piece_tensors' i-th (gpt_block_bwd_write).
   GPT_WIRE_LNF is ln_f's: p its weight and bias. */
template <typename T>
static zero_result gpt_block_bwd_before(const gpt_run *r, gpt_acts<T> *a, gpt_wire_piece piece, int l, int k,
                                        const T *const *p, zero_error *err) {
    const gpt_dims *d = &a->d;
    int64_t N = a->N;
    int C = d->dim;
    cudaStream_t s = r->stream;
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    const gpt_slot<T> v = gpt_slot_of(a, l, k);
    switch (piece) {
    case GPT_WIRE_LNF: /* from the head's d ln_f */
        return gpt_ln_bwd_dx<T>(r, a, a->dln, a->resid + (int64_t)d->layers * N * C, a->stf, p[0], 0, a->d1, err);
    case GPT_WIRE_MLP_PROJ: /* the MLP: the GELU output again (into d2), read by the second product's gradients */
        gk_gelu<T><<<gpt_blocks(N * C), GPT_THREADS, 0, s>>>(v.fch, a->d2, N * 4 * C);
        GPT_LAUNCHED(err);
        return ZERO_OK;
    case GPT_WIRE_LN2:
        GPT_TRY(gpt_mm(&r->gemm, 0, 1, (int)N, C, 4 * C, 1.0f, a->d2, 4 * C, 0, p[GPT_FC_W], 4 * C, 0, 0.0f, a->dln,
                       CUDA_R_32F, C, 0, 1, dt, err));
        return gpt_ln_bwd_dx<T>(r, a, a->dln, v.xmid, v.st2, p[GPT_LN2_W], 1, a->d1, err);
    case GPT_WIRE_QKV: /* attention, from dy = d1 */
        GPT_TRY(gpt_mm(&r->gemm, 0, 1, (int)N, C, C, 1.0f, a->d1, C, 0, p[GPT_ATTN_PROJ_W], C, 0, 0.0f, a->d2, dt, C,
                       0, 1, dt, err));
        return gpt_attn_bwd<T>(r, a, v.qkv, v.atty, v.lse, a->d2, a->d1, err); /* dqkv: d1 */
    case GPT_WIRE_LN1:
        GPT_TRY(gpt_mm(&r->gemm, 0, 1, (int)N, C, 3 * C, 1.0f, a->d1, 3 * C, 0, p[GPT_QKV_W], 3 * C, 0, 0.0f, a->dln,
                       CUDA_R_32F, C, 0, 1, dt, err));
        return gpt_ln_bwd_dx<T>(r, a, a->dln, v.x, v.st1, p[GPT_LN1_W], 1, a->d1, err);
    default: return ZERO_OK;
    }
}

template <typename T>
static zero_result gpt_block_bwd_write(const gpt_run *r, gpt_acts<T> *a, gpt_wire_piece piece, int l, int k,
                                       const T *const *p, T *const *g, zero_error *err) {
    int64_t N = a->N;
    int C = a->d.dim, done = 0;
    cudaStream_t s = r->stream;
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    const gpt_slot<T> v = gpt_slot_of(a, l, k);
    switch (piece) {
    case GPT_WIRE_LNF: case GPT_WIRE_LN2: case GPT_WIRE_LN1: return gpt_ln_bwd_wb<T>(r, a, g[0], g[1], err);
    case GPT_WIRE_MLP_PROJ: return gpt_weight_grad<T>(r, a, g[0], g[1], a->d2, 4 * C, a->d1, C, err);
    case GPT_WIRE_FC_B: /* dh[N, 4C] = (dy W^T) gelu'(h), with the first product's bias gradient */
        GPT_TRY(gpt_mm_epi(&r->gemm, s, 0, 1, (int)N, 4 * C, C, a->d1, C, p[GPT_MLP_PROJ_W], C, 0.0f, a->d2, dt, 4 * C,
                           dt, GPT_EPI_DGELU_BGRAD, g[0], (void *)v.fch, 4 * C, &done, err));
        if (!done) { /* the product with the DGELU epilogue alone, or a GEMM and the GELU's backward pass */
            GPT_TRY(gpt_mm_epi(&r->gemm, s, 0, 1, (int)N, 4 * C, C, a->d1, C, p[GPT_MLP_PROJ_W], C, 0.0f, a->d2, dt,
                               4 * C, dt, GPT_EPI_DGELU, NULL, (void *)v.fch, 4 * C, &done, err));
            if (!done) {
                GPT_TRY(gpt_mm(&r->gemm, 0, 1, (int)N, 4 * C, C, 1.0f, a->d1, C, 0, p[GPT_MLP_PROJ_W], C, 0, 0.0f,
                               a->d2, dt, 4 * C, 0, 1, dt, err));
                gk_gelu_bwd<T><<<gpt_blocks(N * C), GPT_THREADS, 0, s>>>(a->d2, v.fch, N * 4 * C);
                GPT_LAUNCHED(err);
            }
            GPT_TRY(gpt_bias_grad<T>(r, a, a->d2, 4 * C, g[0], err));
        }
        return ZERO_OK;
    case GPT_WIRE_FC_W: return gpt_weight_grad<T>(r, a, g[0], (T *)NULL, v.ln2, C, a->d2, 4 * C, err);
    case GPT_WIRE_ATTN_PROJ: return gpt_weight_grad<T>(r, a, g[0], g[1], v.atty, C, a->d1, C, err);
    case GPT_WIRE_QKV: return gpt_weight_grad<T>(r, a, g[0], g[1], v.ln1, C, a->d1, 3 * C, err);
    default: return ZERO_OK;
    }
}

/* The tokens of one micro-batch: tok/tgt from B rows of T + 1 ids, and the
   positions of every token id in ascending order (for wte's backward),
   copied in one transfer through a pinned double buffer */
template <typename T>
static zero_result gpt_upload(const gpt_run *r, gpt_acts<T> *a, const int *rows, zero_error *err) {
    const gpt_dims *d = &a->d;
    int64_t N = a->N, n;
    int T_ = d->seq, V = d->vocab;
    int64_t ints = gpt_idx_ints(d, N);
    int *h = a->idx_host + (int64_t)a->idx_turn * ints, *tok = h, *tgt = h + N, *off = h + 2 * N, *pos = off + V + 1;
    ZERO_CUDA_TRY(cudaEventSynchronize(a->idx_done[a->idx_turn]), err); /* its last copy is done */
    for (n = 0; n < N; n++) {
        int64_t b = n / T_, t = n % T_;
        tok[n] = rows[b * (T_ + 1) + t];
        tgt[n] = rows[b * (T_ + 1) + t + 1];
        if (tok[n] < 0 || tok[n] >= V || tgt[n] < 0 || tgt[n] >= V) {
            memset(err, 0, sizeof *err);
            err->code = ZERO_ERR_INVALID_ARG;
            snprintf(err->msg, sizeof err->msg, "token %d at position %lld is outside the vocabulary [0, %d)",
                     tok[n] < 0 || tok[n] >= V ? tok[n] : tgt[n], (long long)n, V);
            return ZERO_ERR_INVALID_ARG;
        }
    }
    memset(off, 0, sizeof(int) * (size_t)(V + 1));
    for (n = 0; n < N; n++) off[tok[n] + 1]++;
    for (int v = 0; v < V; v++) off[v + 1] += off[v];
    for (int v = 0; v <= V; v++) a->cursor[v] = off[v]; /* a counting sort: positions stay ascending */
    for (n = 0; n < N; n++) pos[a->cursor[tok[n]]++] = (int)n;
    ZERO_CUDA_TRY(cudaMemcpyAsync(a->idx, h, sizeof(int) * (size_t)ints, cudaMemcpyHostToDevice, r->stream), err);
    ZERO_CUDA_TRY(cudaEventRecord(a->idx_done[a->idx_turn], r->stream), err);
    a->idx_turn ^= 1;
    return ZERO_OK;
}

/* What gpt_forward hands over of each head chunk: the fp32 logits of rows
   [row0, row0 + rows) of the micro-batch at dev (row stride ld elements,
   the first V of each row used), queued on the model's stream. dev is
   overwritten by the next chunk once this returns: copy (and wait) here. */
typedef zero_result (*gpt_logits_fn)(void *user, int64_t row0, int rows, const float *dev, int ld, zero_error *err);

/* ---- the compute pieces gpt_wire.h calls ---- */

/* One micro-batch's compute: what the hooks get as gpt_wire.user */
template <typename T> struct gpt_mb {
    const gpt_run *r;
    gpt_acts<T> *a;
    float gscale, loss_factor; /* gpt_step: the head's d loss_sum / d logit factor; of the loss added to loss_acc */
    float *loss_acc;
    gpt_logits_fn logits; /* gpt_forward: each head chunk's logits (or NULL) */
    void *logits_user;
};

/* x[n, :] = wte[tok[n], :] + wpe[n % T, :], the tokens uploaded before */
template <typename T> static zero_result gpt_hook_embed(void *u, const void *wte, const void *wpe, zero_error *err) {
    const gpt_mb<T> *m = (const gpt_mb<T> *)u;
    gpt_acts<T> *a = m->a;
    int64_t N = a->N;
    int C = a->d.dim;
    gk_embed<T><<<gpt_blocks(N * C), GPT_THREADS, 0, m->r->stream>>>(a->idx, (const T *)wte, (const T *)wpe, a->resid,
                                                                      N, a->d.seq, C);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

template <typename T>
static zero_result gpt_hook_block_fwd(void *u, int l, int slot, int out_resid, const void *const *pv, zero_error *err) {
    const gpt_mb<T> *m = (const gpt_mb<T> *)u;
    const T *p[GPT_PER_BLOCK];
    for (int i = 0; i < GPT_PER_BLOCK; i++) p[i] = (const T *)pv[i];
    return gpt_block_fwd<T>(m->r, m->a, l, slot, out_resid, p, err);
}

template <typename T> static zero_result gpt_hook_lnf_fwd(void *u, const void *w, const void *b, zero_error *err) {
    const gpt_mb<T> *m = (const gpt_mb<T> *)u;
    gpt_acts<T> *a = m->a;
    gpt_ln_fwd<T>(m->r->stream, a->resid + (int64_t)a->d.layers * a->N * a->d.dim, (const T *)w, (const T *)b, a->lnf,
                  a->stf, a->N, a->d.dim);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

/* The tied head in row chunks. Training (gwte set): logits, loss and
   straight away their backward (d ln_f into dln, the head's wte gradient
   added into gwte), then factor times the loss's sum added to *loss_acc.
   An evaluation: logits and the per-position losses alone, each chunk's
   logits handed to m->logits. */
template <typename T> static zero_result gpt_hook_head(void *u, const void *wtev, void *gwtev, zero_error *err) {
    const gpt_mb<T> *m = (const gpt_mb<T> *)u;
    const gpt_run *r = m->r;
    gpt_acts<T> *a = m->a;
    int64_t N = a->N;
    int C = a->d.dim, V = a->d.vocab, ldv = a->ldv;
    cudaStream_t s = r->stream;
    const cudaDataType_t dt = ex_dtype<T>::cuda;
    const T *wte = (const T *)wtev;
    T *gwte = (T *)gwtev;
    const int *tgt = a->idx + N;
    for (int64_t r0 = 0; r0 < N; r0 += a->head_rows) {
        int rows_n = (int)(N - r0 < a->head_rows ? N - r0 : a->head_rows);
        const T *x = a->lnf + r0 * C;
        GPT_TRY(gpt_mm(&r->gemm, 0, 1, rows_n, V, C, 1.0f, x, C, 0, wte, C, 0, 0.0f, a->S, CUDA_R_32F, ldv, 0, 1, dt,
                       err));
        if (!gwte) {
            gk_xent<T><<<rows_n, GPT_THREADS, 0, s>>>(a->S, ldv, tgt + r0, V, 0.0f, (T *)NULL, a->loss + r0);
            GPT_LAUNCHED(err);
            if (m->logits) GPT_TRY(m->logits(m->logits_user, r0, rows_n, a->S, ldv, err));
            continue;
        }
        gk_xent<T><<<rows_n, GPT_THREADS, 0, s>>>(a->S, ldv, tgt + r0, V, m->gscale, a->P, a->loss + r0);
        GPT_LAUNCHED(err);
        GPT_TRY(gpt_mm(&r->gemm, 0, 0, rows_n, C, V, 1.0f, a->P, ldv, 0, wte, C, 0, 0.0f, a->dln + r0 * C, CUDA_R_32F,
                       C, 0, 1, dt, err));
        GPT_TRY(gpt_mm(&r->gemm, 1, 0, V, C, rows_n, 1.0f, a->P, ldv, 0, x, C, 0, 1.0f, gwte, dt, C, 0, 1, dt, err));
    }
    if (!gwte) return ZERO_OK;
    gk_loss_sum<<<1, GPT_THREADS, 0, s>>>(a->loss, N, m->loss_factor, m->loss_acc);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

template <typename T>
static zero_result gpt_hook_piece_before(void *u, gpt_wire_piece piece, int l, int slot, const void *const *pv,
                                         zero_error *err) {
    const gpt_mb<T> *m = (const gpt_mb<T> *)u;
    const T *p[GPT_PER_BLOCK];
    for (int i = 0; i < (piece == GPT_WIRE_LNF ? 2 : GPT_PER_BLOCK); i++) p[i] = (const T *)pv[i];
    return gpt_block_bwd_before<T>(m->r, m->a, piece, l, slot, p, err);
}

template <typename T>
static zero_result gpt_hook_piece_write(void *u, gpt_wire_piece piece, int l, int slot, const void *const *pv,
                                        void *const *gv, zero_error *err) {
    const gpt_mb<T> *m = (const gpt_mb<T> *)u;
    const T *p[GPT_PER_BLOCK];
    T *g[2] = {(T *)gv[0], (T *)gv[1]};
    for (int i = 0; i < (piece == GPT_WIRE_LNF ? 2 : GPT_PER_BLOCK); i++) p[i] = (const T *)pv[i];
    return gpt_block_bwd_write<T>(m->r, m->a, piece, l, slot, p, g, err);
}

/* wpe's gradient from the positions, wte's rows added (on top of the head's share) */
template <typename T> static zero_result gpt_hook_embed_bwd(void *u, void *gwte, void *gwpe, zero_error *err) {
    const gpt_mb<T> *m = (const gpt_mb<T> *)u;
    gpt_acts<T> *a = m->a;
    const gpt_dims *d = &a->d;
    int C = d->dim, V = d->vocab;
    const int *off = a->idx + 2 * a->N, *pos = off + V + 1;
    cudaStream_t s = m->r->stream;
    gk_wpe_bwd<T><<<gpt_blocks((int64_t)gpt_positions(d) * C), GPT_THREADS, 0, s>>>(a->dres, a->B, d->seq,
                                                                                     gpt_positions(d), C, (T *)gwpe);
    gk_wte_bwd<T><<<V, 128, 0, s>>>(a->dres, off, pos, C, (T *)gwte);
    GPT_LAUNCHED(err);
    return ZERO_OK;
}

/* The wiring of run r around m's compute */
template <typename T> static gpt_wire gpt_wire_of(const gpt_run *r, gpt_mb<T> *m) {
    static const gpt_wire_compute c = {gpt_hook_embed<T>,        gpt_hook_block_fwd<T>,   gpt_hook_lnf_fwd<T>,
                                       gpt_hook_head<T>,         gpt_hook_piece_before<T>, gpt_hook_piece_write<T>,
                                       gpt_hook_embed_bwd<T>};
    gpt_wire w = {r->e, &m->a->d, r->recompute, &c, m};
    return w;
}

/* One micro-batch: forward, loss (factor times its sum added to *loss_acc,
   on the device), backward with every gradient handed over. rows: B rows of
   T + 1 token ids. gscale: what d loss_sum / d logit is multiplied by (the
   loss scale over the tokens the loss averages). */
template <typename T>
static zero_result gpt_step(const gpt_run *r, gpt_acts<T> *a, const int *rows, float gscale, float loss_factor,
                            float *loss_acc, zero_error *err) {
    gpt_mb<T> m = {r, a, gscale, loss_factor, loss_acc, NULL, NULL};
    gpt_wire w = gpt_wire_of<T>(r, &m);
    GPT_TRY(gpt_upload<T>(r, a, rows, err));
    return gpt_wire_step(&w, err);
}

/* One micro-batch's forward alone, for an evaluation: the per-position
   losses into a->loss [N] (device, queued on the stream), with the fetches
   and releases of gpt_step's forward and no gradient asked for or written,
   so the engine's state is untouched. The losses are bitwise gpt_step's for
   the same rows, weights and acts. logits: NULL, or called with each head
   chunk's logits. */
template <typename T>
static zero_result gpt_forward(const gpt_run *r, gpt_acts<T> *a, const int *rows, gpt_logits_fn logits, void *user,
                               zero_error *err) {
    gpt_mb<T> m = {r, a, 0.0f, 0.0f, NULL, logits, user};
    gpt_wire w = gpt_wire_of<T>(r, &m);
    GPT_TRY(gpt_upload<T>(r, a, rows, err));
    return gpt_wire_forward(&w, err);
}

#endif /* GPT_CUDA_CUH */
