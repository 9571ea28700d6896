/* gpt_attn.cuh - examples/gpt's fused causal attention (forward and
   backward) on the tensor cores. Included by gpt_cuda.cuh after its element
   helpers and GPT_TRY; not a header of its own. */
#ifndef GPT_ATTN_CUH
#define GPT_ATTN_CUH

/* ---- fused causal attention (fp16 / bf16; head size 64 or 128; T a multiple of 64) ---- */

/* FlashAttention-2's schedule (Dao 2023) on Hopper's mma.sync tensor-core
   instruction (m16n8k16, fp32 accumulation): a block of 4 warps takes 64
   queries (forward, dQ) or 64 keys (dK, dV) of one (sequence, head), each
   warp 16 of them, and walks the 64-wide tiles of the other side up to the
   diagonal. Scores and probabilities stay in registers (the accumulator
   layout of one product is the operand layout of the next, PTX ISA
   "matrix fragments for mma.m16n8k16"); K, V, Q, dO tiles go through
   shared memory. The forward keeps each row's log-sum-exp (base 2) for the
   backward. The backward is two kernels, dK/dV by key tile and dQ by query
   tile, each recomputing the probabilities: two more products than
   FlashAttention-2's single pass, in exchange for no atomics (the same bits
   every run). */

#define GPT_FA_TILE 64

template <typename T> struct gpt_fa_ok {
    static constexpr bool value = false;
};
template <> struct gpt_fa_ok<__half> {
    static constexpr bool value = true;
};
template <> struct gpt_fa_ok<__nv_bfloat16> {
    static constexpr bool value = true;
};

/* d (4 fp32) += a (16 x 16) b (16 x 8) */
template <typename T>
__device__ __forceinline__ void gpt_mma(float *d, const uint32_t *a, uint32_t b0, uint32_t b1) {
    if constexpr (std::is_same<T, __half>::value)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two floats as one 32-bit operand register (the first in the low half); the rounded values back in *lo, *hi */
template <typename T> __device__ __forceinline__ uint32_t gpt_pack(float *lo, float *hi) {
    T a = ex_to<T>(*lo), b = ex_to<T>(*hi);
    *lo = ex_f32(a), *hi = ex_f32(b);
    return (uint32_t)*(const unsigned short *)&a | ((uint32_t) * (const unsigned short *)&b << 16);
}

__device__ __forceinline__ uint32_t gpt_lds32(const void *p) { return *(const uint32_t *)p; }

/* b0, b1 of a 16 x 8 B operand whose k runs down the rows of a row-major
   tile: rows [k0, k0 + 16), column n0 (ldmatrix .trans: lane i gives the
   address of row k0 + i for i < 16) */
template <typename T> __device__ __forceinline__ void gpt_ldsm_t(const T *row0, int ldt, uint32_t *b0, uint32_t *b1) {
    int lane = threadIdx.x % 32;
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(row0 + (lane % 16) * ldt);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(*b0), "=r"(*b1) : "r"(addr));
}

/* the A operand (16 x 16) of rows [0, 16), columns [k0, k0 + 16) of a row-major tile */
template <typename T> __device__ __forceinline__ void gpt_lda(const T *tile, int ldt, int k0, uint32_t *a) {
    int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    a[0] = gpt_lds32(tile + g * ldt + k0 + 2 * t);
    a[1] = gpt_lds32(tile + (g + 8) * ldt + k0 + 2 * t);
    a[2] = gpt_lds32(tile + g * ldt + k0 + 2 * t + 8);
    a[3] = gpt_lds32(tile + (g + 8) * ldt + k0 + 2 * t + 8);
}

/* acc[8][4] = A (16 x HD, as HD/16 operands) B^T, B a row-major tile of 64 rows of HD: scores of 16 rows
   against 64 columns, 8 tiles of 16 x 8 */
template <typename T, int HD>
__device__ __forceinline__ void gpt_fa_qk(const uint32_t (*a)[4], const T *B, float (*acc)[4]) {
    constexpr int LDT = HD + 8;
    int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    for (int j = 0; j < 8; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0;
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const T *p = B + (8 * j + g) * LDT + 16 * kk + 2 * t;
            gpt_mma<T>(acc[j], a[kk], gpt_lds32(p), gpt_lds32(p + 8));
        }
}

/* acc[HD/8][4] += P (16 x 64, in registers as 8 tiles of 16 x 8, rounded to T here) B (64 x HD row-major tile) */
template <typename T, int HD>
__device__ __forceinline__ void gpt_fa_pv(float (*p)[4], const T *B, float (*acc)[4]) {
    constexpr int LDT = HD + 8;
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        uint32_t a[4];
        a[0] = gpt_pack<T>(&p[2 * kk][0], &p[2 * kk][1]);
        a[1] = gpt_pack<T>(&p[2 * kk][2], &p[2 * kk][3]);
        a[2] = gpt_pack<T>(&p[2 * kk + 1][0], &p[2 * kk + 1][1]);
        a[3] = gpt_pack<T>(&p[2 * kk + 1][2], &p[2 * kk + 1][3]);
#pragma unroll
        for (int j = 0; j < HD / 8; j++) {
            uint32_t b0, b1;
            gpt_ldsm_t<T>(B + 16 * kk * LDT + 8 * j, LDT, &b0, &b1);
            gpt_mma<T>(acc[j], a, b0, b1);
        }
    }
}

/* 64 rows of HD from global (row stride ld elements) into a tile of stride HD + 8, 16-byte vectors */
template <typename T, int HD> __device__ __forceinline__ void gpt_fa_load(T *dst, const T *src, int64_t ld) {
    constexpr int LDT = HD + 8, PER_ROW = HD / 8;
    for (int i = threadIdx.x; i < GPT_FA_TILE * PER_ROW; i += blockDim.x) {
        int r = i / PER_ROW, c = (i % PER_ROW) * 8;
        *(int4 *)(dst + r * LDT + c) = *(const int4 *)(src + r * ld + c);
    }
}

/* The same with cp.async (16 bytes each, no registers): the caller commits and waits */
template <typename T, int HD> __device__ __forceinline__ void gpt_fa_load_async(T *dst, const T *src, int64_t ld) {
    constexpr int LDT = HD + 8, PER_ROW = HD / 8;
    for (int i = threadIdx.x; i < GPT_FA_TILE * PER_ROW; i += blockDim.x) {
        int r = i / PER_ROW, c = (i % PER_ROW) * 8;
        uint32_t d = (uint32_t)__cvta_generic_to_shared(dst + r * LDT + c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src + r * ld + c));
    }
}
__device__ __forceinline__ void gpt_cp_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void gpt_cp_wait(void) { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* 16 x HD accumulators (rows g, g + 8 of the warp) times f into T rows at dst (row stride ld) */
template <typename T, int HD>
__device__ __forceinline__ void gpt_fa_put(float (*acc)[4], T *dst, int64_t ld, float f0, float f1) {
    int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < HD / 8; j++) {
        float a0 = acc[j][0] * f0, a1 = acc[j][1] * f0, a2 = acc[j][2] * f1, a3 = acc[j][3] * f1;
        *(uint32_t *)(dst + g * ld + 8 * j + 2 * t) = gpt_pack<T>(&a0, &a1);
        *(uint32_t *)(dst + (g + 8) * ld + 8 * j + 2 * t) = gpt_pack<T>(&a2, &a3);
    }
}

#define GPT_LOG2E 1.4426950408889634f

/* forward: grid (T / 64, B H), 128 threads; out [N, C] (head h at columns h HD); lse2 [B H, T], base 2.
   K and V tiles double-buffered (the next pair loads while this one is used); the mask only on the diagonal
   tile. */
template <typename T, int HD>
__global__ void __launch_bounds__(128) gk_fa_fwd(const T *qkv, T *out, float *lse2, int T_, int H, int C, float scale) {
    constexpr int LDT = HD + 8, TILE = GPT_FA_TILE * LDT;
    extern __shared__ __align__(16) unsigned char g_fa_smem[];
    T *sKV = (T *)g_fa_smem; /* buffer i: K at sKV + 2 i TILE, V after it */
    int qt = blockIdx.x, b = blockIdx.y / H, h = blockIdx.y % H, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int g = lane >> 2, t = lane & 3;
    const int64_t ld = 3 * (int64_t)C;
    const T *q = qkv + (int64_t)b * T_ * ld + h * HD, *k = q + C, *v = q + 2 * C;
    const float sl2 = scale * GPT_LOG2E;
    int q0 = qt * GPT_FA_TILE + warp * 16; /* the warp's first query */
    gpt_fa_load_async<T, HD>(sKV + 2 * TILE, q + (int64_t)qt * GPT_FA_TILE * ld, ld); /* Q, in buffer 1 */
    gpt_cp_commit();
    gpt_fa_load_async<T, HD>(sKV, k, ld);
    gpt_fa_load_async<T, HD>(sKV + TILE, v, ld);
    gpt_cp_commit();
    gpt_cp_wait<1>();
    __syncthreads();
    uint32_t qa[HD / 16][4];
    for (int kk = 0; kk < HD / 16; kk++) gpt_lda<T>(sKV + 2 * TILE + warp * 16 * LDT, LDT, 16 * kk, qa[kk]);
    __syncthreads(); /* buffer 1 is free for the next tile */
    float o[HD / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
    for (int j = 0; j < HD / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0;
    for (int kt = 0; kt <= qt; kt++) {
        const T *sK = sKV + 2 * (kt & 1) * TILE, *sV = sK + TILE;
        if (kt < qt) {
            T *nk = sKV + 2 * ((kt + 1) & 1) * TILE;
            gpt_fa_load_async<T, HD>(nk, k + (int64_t)(kt + 1) * GPT_FA_TILE * ld, ld);
            gpt_fa_load_async<T, HD>(nk + TILE, v + (int64_t)(kt + 1) * GPT_FA_TILE * ld, ld);
            gpt_cp_commit();
            gpt_cp_wait<1>();
        } else
            gpt_cp_wait<0>();
        __syncthreads();
        float s[8][4];
        gpt_fa_qk<T, HD>(qa, sK, s);
        float mx[2] = {-INFINITY, -INFINITY};
        if (kt == qt) { /* the diagonal tile: keys after the query are masked */
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (8 * j + 2 * t + (e & 1) > warp * 16 + g + 8 * (e >> 1)) s[j][e] = -INFINITY;
        }
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[j][e] *= sl2;
                mx[e >> 1] = fmaxf(mx[e >> 1], s[j][e]);
            }
        float alpha[2], sum[2] = {0, 0};
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            float mn = fmaxf(m[r], mx[r]); /* finite: key kt*64 <= every query of the tile */
            alpha[r] = exp2f(m[r] - mn);
            m[r] = mn;
        }
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[j][e] = exp2f(s[j][e] - m[e >> 1]);
#pragma unroll
        for (int j = 0; j < HD / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[j][e] *= alpha[e >> 1];
        gpt_fa_pv<T, HD>(s, sV, o); /* rounds s to T: the sum below is of what V was weighted with */
#pragma unroll
        for (int j = 0; j < 8; j++) sum[0] += s[j][0] + s[j][1], sum[1] += s[j][2] + s[j][3];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 1);
            sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 2);
            l[r] = l[r] * alpha[r] + sum[r];
        }
        __syncthreads(); /* this buffer is reloaded two tiles on */
    }
    gpt_fa_put<T, HD>(o, out + ((int64_t)b * T_ + q0) * C + h * HD, C, 1.0f / l[0], 1.0f / l[1]);
    if (t == 0) {
        lse2[(int64_t)blockIdx.y * T_ + q0 + g] = m[0] + log2f(l[0]);
        lse2[(int64_t)blockIdx.y * T_ + q0 + g + 8] = m[1] + log2f(l[1]);
    }
}

/* D[b h, t] = sum_d dO[b t, h HD + d] O[b t, h HD + d]: one warp per (b, t, h) */
template <typename T>
__global__ void gk_fa_dot(const T *dout, const T *out, float *D, int64_t rows, int T_, int H, int C, int hd) {
    int64_t w = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (w >= rows) return;
    int64_t bt = w / H;
    int h = (int)(w % H);
    const T *a = dout + bt * C + h * hd, *o = out + bt * C + h * hd;
    float s = 0;
    for (int d = lane; d < hd; d += 32) s += ex_f32(a[d]) * ex_f32(o[d]);
    s = g_warp_sum(s);
    if (!lane) D[((bt / T_) * H + h) * T_ + bt % T_] = s;
}

/* dK, dV: grid (T / 64 key tiles, B H); warp w owns keys [16 w, 16 w + 16) of the tile. Q, dO, lse and D
   of the query tiles double-buffered. */
template <typename T, int HD>
__global__ void __launch_bounds__(128) gk_fa_dkdv(const T *qkv, const T *dout, const float *lse2, const float *D,
                                                   T *dqkv, int T_, int H, int C, float scale) {
    constexpr int LDT = HD + 8, TILE = GPT_FA_TILE * LDT;
    extern __shared__ __align__(16) unsigned char g_fa_smem[];
    T *sK = (T *)g_fa_smem, *sV = sK + TILE, *sQO = sV + TILE; /* buffer i: Q at sQO + 2 i TILE, dO after it */
    float *sLD = (float *)(sQO + 4 * TILE);                    /* buffer i: lse at sLD + 2 i 64, D after it */
    int kt = blockIdx.x, b = blockIdx.y / H, h = blockIdx.y % H, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int g = lane >> 2, t = lane & 3, nq = T_ / GPT_FA_TILE;
    const int64_t ld = 3 * (int64_t)C;
    const T *q = qkv + (int64_t)b * T_ * ld + h * HD, *k = q + C, *v = q + 2 * C;
    const T *dO = dout + (int64_t)b * T_ * C + h * HD;
    const float *L = lse2 + (int64_t)blockIdx.y * T_, *DD = D + (int64_t)blockIdx.y * T_;
    const float sl2 = scale * GPT_LOG2E;
    int k0 = kt * GPT_FA_TILE + warp * 16;
    /* one query tile's Q, dO (cp.async) and lse, D (16 B pieces, 16 threads each) into buffer i */
    auto load_q = [&](int qt, int i) {
        gpt_fa_load_async<T, HD>(sQO + 2 * i * TILE, q + (int64_t)qt * GPT_FA_TILE * ld, ld);
        gpt_fa_load_async<T, HD>(sQO + (2 * i + 1) * TILE, dO + (int64_t)qt * GPT_FA_TILE * C, C);
        if (threadIdx.x < 32) {
            int which = threadIdx.x / 16, c = (threadIdx.x % 16) * 4;
            const float *src = (which ? DD : L) + qt * GPT_FA_TILE + c;
            uint32_t d = (uint32_t)__cvta_generic_to_shared(sLD + (2 * i + which) * GPT_FA_TILE + c);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
        }
    };
    gpt_fa_load_async<T, HD>(sK, k + (int64_t)kt * GPT_FA_TILE * ld, ld);
    gpt_fa_load_async<T, HD>(sV, v + (int64_t)kt * GPT_FA_TILE * ld, ld);
    load_q(kt, 0);
    gpt_cp_commit();
    gpt_cp_wait<0>();
    __syncthreads();
    uint32_t ka[HD / 16][4], va[HD / 16][4];
    for (int kk = 0; kk < HD / 16; kk++) {
        gpt_lda<T>(sK + warp * 16 * LDT, LDT, 16 * kk, ka[kk]);
        gpt_lda<T>(sV + warp * 16 * LDT, LDT, 16 * kk, va[kk]);
    }
    float dk[HD / 8][4], dv[HD / 8][4];
    for (int j = 0; j < HD / 8; j++)
        for (int e = 0; e < 4; e++) dk[j][e] = dv[j][e] = 0;
    for (int qt = kt; qt < nq; qt++) {
        int i = (qt - kt) & 1;
        const T *sQ = sQO + 2 * i * TILE, *sO = sQ + TILE;
        const float *sL = sLD + 2 * i * GPT_FA_TILE, *sD = sL + GPT_FA_TILE;
        if (qt + 1 < nq) {
            load_q(qt + 1, i ^ 1);
            gpt_cp_commit();
            gpt_cp_wait<1>();
        } else
            gpt_cp_wait<0>();
        __syncthreads();
        float p[8][4], dp[8][4];
        gpt_fa_qk<T, HD>(ka, sQ, p); /* S^T: 16 keys x 64 queries */
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int col = 8 * j + 2 * t + (e & 1);
                p[j][e] = qt > kt || col >= warp * 16 + g + 8 * (e >> 1) ? exp2f(p[j][e] * sl2 - sL[col]) : 0.0f;
            }
        gpt_fa_pv<T, HD>(p, sO, dv);   /* dV += P^T dO (p rounded to T in place) */
        gpt_fa_qk<T, HD>(va, sO, dp);  /* dP^T = V dO^T */
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) p[j][e] *= dp[j][e] - sD[8 * j + 2 * t + (e & 1)];
        gpt_fa_pv<T, HD>(p, sQ, dk);   /* dK += dS^T Q */
        __syncthreads(); /* this buffer is reloaded two tiles on */
    }
    T *dst = dqkv + ((int64_t)b * T_ + k0) * ld + C + h * HD;
    gpt_fa_put<T, HD>(dk, dst, ld, scale, scale);
    gpt_fa_put<T, HD>(dv, dst + C, ld, 1.0f, 1.0f);
}

/* dQ: grid (T / 64 query tiles, B H); warp w owns queries [16 w, 16 w + 16). K, V tiles double-buffered. */
template <typename T, int HD>
__global__ void __launch_bounds__(128) gk_fa_dq(const T *qkv, const T *dout, const float *lse2, const float *D, T *dqkv,
                                                 int T_, int H, int C, float scale) {
    constexpr int LDT = HD + 8, TILE = GPT_FA_TILE * LDT;
    extern __shared__ __align__(16) unsigned char g_fa_smem[];
    T *sQ = (T *)g_fa_smem, *sO = sQ + TILE, *sKV = sO + TILE; /* buffer i: K at sKV + 2 i TILE, V after it */
    int qt = blockIdx.x, b = blockIdx.y / H, h = blockIdx.y % H, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int g = lane >> 2, t = lane & 3;
    const int64_t ld = 3 * (int64_t)C;
    const T *q = qkv + (int64_t)b * T_ * ld + h * HD, *k = q + C, *v = q + 2 * C;
    const T *dO = dout + (int64_t)b * T_ * C + h * HD;
    const float sl2 = scale * GPT_LOG2E;
    int q0 = qt * GPT_FA_TILE + warp * 16;
    float Lr[2], Dr[2];
    for (int r = 0; r < 2; r++) {
        Lr[r] = lse2[(int64_t)blockIdx.y * T_ + q0 + g + 8 * r];
        Dr[r] = D[(int64_t)blockIdx.y * T_ + q0 + g + 8 * r];
    }
    gpt_fa_load_async<T, HD>(sQ, q + (int64_t)qt * GPT_FA_TILE * ld, ld);
    gpt_fa_load_async<T, HD>(sO, dO + (int64_t)qt * GPT_FA_TILE * C, C);
    gpt_fa_load_async<T, HD>(sKV, k, ld);
    gpt_fa_load_async<T, HD>(sKV + TILE, v, ld);
    gpt_cp_commit();
    gpt_cp_wait<0>();
    __syncthreads();
    uint32_t qa[HD / 16][4], oa[HD / 16][4];
    for (int kk = 0; kk < HD / 16; kk++) {
        gpt_lda<T>(sQ + warp * 16 * LDT, LDT, 16 * kk, qa[kk]);
        gpt_lda<T>(sO + warp * 16 * LDT, LDT, 16 * kk, oa[kk]);
    }
    float dq[HD / 8][4];
    for (int j = 0; j < HD / 8; j++) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0;
    for (int kt = 0; kt <= qt; kt++) {
        const T *sK = sKV + 2 * (kt & 1) * TILE, *sV = sK + TILE;
        if (kt < qt) {
            T *nk = sKV + 2 * ((kt + 1) & 1) * TILE;
            gpt_fa_load_async<T, HD>(nk, k + (int64_t)(kt + 1) * GPT_FA_TILE * ld, ld);
            gpt_fa_load_async<T, HD>(nk + TILE, v + (int64_t)(kt + 1) * GPT_FA_TILE * ld, ld);
            gpt_cp_commit();
            gpt_cp_wait<1>();
        } else
            gpt_cp_wait<0>();
        __syncthreads();
        float p[8][4], dp[8][4];
        gpt_fa_qk<T, HD>(qa, sK, p);  /* S */
        gpt_fa_qk<T, HD>(oa, sV, dp); /* dP = dO V^T */
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int r = e >> 1;
                float pr = kt < qt || 8 * j + 2 * t + (e & 1) <= warp * 16 + g + 8 * r ? exp2f(p[j][e] * sl2 - Lr[r])
                                                                                      : 0.0f;
                p[j][e] = ex_f32(ex_to<T>(pr)) * (dp[j][e] - Dr[r]); /* P as the forward's product used it */
            }
        gpt_fa_pv<T, HD>(p, sK, dq); /* dQ += dS K */
        __syncthreads();
    }
    gpt_fa_put<T, HD>(dq, dqkv + ((int64_t)b * T_ + q0) * ld + h * HD, ld, scale, scale);
}

/* The fused path applies: fp16 / bf16, head size 64 or 128, T a multiple of 64 */
template <typename T> static inline int gpt_fa_usable(const gpt_dims *d) {
    int hd = d->dim / d->heads;
    return gpt_fa_ok<T>::value && (hd == 64 || hd == 128) && d->seq % GPT_FA_TILE == 0;
}

/* dynamic shared memory: forward 2 x (K, V); dK/dV K, V + 2 x (Q, dO, lse, D); dQ Q, dO + 2 x (K, V) */
template <typename T, int HD> static size_t gpt_fa_smem(int which) {
    size_t tile = (size_t)GPT_FA_TILE * (HD + 8) * sizeof(T);
    return which == 0 ? 4 * tile : which == 1 ? 6 * tile + 4 * GPT_FA_TILE * sizeof(float) : 6 * tile;
}

template <typename T, int HD> static zero_result gpt_fa_attrs(zero_error *err) {
    static int done;
    if (done) return ZERO_OK;
    ZERO_CUDA_TRY(cudaFuncSetAttribute(gk_fa_fwd<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)gpt_fa_smem<T, HD>(0)),
                  err);
    ZERO_CUDA_TRY(cudaFuncSetAttribute(gk_fa_dkdv<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)gpt_fa_smem<T, HD>(1)),
                  err);
    ZERO_CUDA_TRY(cudaFuncSetAttribute(gk_fa_dq<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)gpt_fa_smem<T, HD>(2)),
                  err);
    done = 1;
    return ZERO_OK;
}

template <typename T, int HD>
static zero_result gpt_fa_fwd_hd(cudaStream_t s, const gpt_dims *d, int B, const T *qkv, T *out, float *lse,
                                 zero_error *err) {
    GPT_TRY((gpt_fa_attrs<T, HD>(err)));
    dim3 grid(d->seq / GPT_FA_TILE, B * d->heads);
    gk_fa_fwd<T, HD><<<grid, 128, gpt_fa_smem<T, HD>(0), s>>>(qkv, out, lse, d->seq, d->heads, d->dim,
                                                             1.0f / sqrtf((float)HD));
    ZERO_CUDA_TRY(cudaGetLastError(), err);
    return ZERO_OK;
}

template <typename T, int HD>
static zero_result gpt_fa_bwd_hd(cudaStream_t s, const gpt_dims *d, int B, const T *qkv, const T *out,
                                 const float *lse, const T *dout, float *D, T *dqkv, zero_error *err) {
    GPT_TRY((gpt_fa_attrs<T, HD>(err)));
    int64_t rows = (int64_t)B * d->seq * d->heads;
    float scale = 1.0f / sqrtf((float)HD);
    dim3 grid(d->seq / GPT_FA_TILE, B * d->heads);
    gk_fa_dot<T><<<gpt_blocks(rows, 8), 256, 0, s>>>(dout, out, D, rows, d->seq, d->heads, d->dim, HD);
    gk_fa_dkdv<T, HD><<<grid, 128, gpt_fa_smem<T, HD>(1), s>>>(qkv, dout, lse, D, dqkv, d->seq, d->heads, d->dim,
                                                              scale);
    gk_fa_dq<T, HD><<<grid, 128, gpt_fa_smem<T, HD>(2), s>>>(qkv, dout, lse, D, dqkv, d->seq, d->heads, d->dim, scale);
    ZERO_CUDA_TRY(cudaGetLastError(), err);
    return ZERO_OK;
}

#endif /* GPT_ATTN_CUH */
