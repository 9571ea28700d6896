/* gpt_attn.cuh - examples/gpt's fused causal attention (forward and
   backward) on the tensor cores. Included by gpt_cuda.cuh after its element
   helpers and GPT_TRY; not a header of its own. */
#ifndef GPT_ATTN_CUH
#define GPT_ATTN_CUH

/* ---- fused causal attention (fp16 / bf16; head size 64 or 128; T a multiple of 64) ----

   FlashAttention-2's schedule (Dao 2023) on Hopper's mma.sync tensor-core
   instruction (m16n8k16, fp32 accumulation). A block of NW warps takes 16 NW
   queries (forward, dQ) or 16 NW keys (dK, dV) of one (sequence, head), each
   warp 16 of them, and walks the 64-wide tiles of the other side up to the
   diagonal. A warp's rows lie in one 64-row tile, whose index against the
   tile of the other side says: earlier (all visible), the diagonal (mask)
   or later (nothing to do; the warp still joins the barriers). Scores and
   probabilities stay in registers (the accumulator layout of one product is
   the operand layout of the next, PTX ISA "matrix fragments for
   mma.m16n8k16"); K, V, Q, dO tiles go through shared memory by cp.async
   and come out as operands by ldmatrix .x4: one ldmatrix per two mma for
   the B operand of S = Q K^T, one .x4.trans per two mma for that of P V.

   The grid is (B H, row blocks) and the block index is read from blockIdx.y
   reversed where rows are longer for later blocks: blocks start in order of
   their linear index, so every head's longest causal rows (the last query
   blocks, the first key blocks) start first and the short ones fill the
   tail.

   The forward keeps three K, V buffers (the copy of tile kt + 2 runs while
   tile kt is used, one barrier per tile), takes the row maximum of the raw
   scores and folds scale log2(e) into one FFMA before the exp2, and keeps
   each row's log-sum-exp (base 2) for the backward. At head size 64 it runs
   8 warps, so each K, V tile brought to shared memory serves 128 queries;
   at head size 128 the registers allow 4.

   The backward is two kernels of 4 warps, dK/dV by key block and dQ by
   query block, each recomputing the probabilities from the log-sum-exp:
   two more products than FlashAttention-2's single pass, in exchange for
   no atomics (the same bits every run). */

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

/* cp.async groups: close the copies issued since the last commit into one group; wait until at most N groups
   are still in flight */
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

/* D[b h, t] = sum_d dO[b t, h HD + d] O[b t, h HD + d]: 8 threads per (b, t, h), gpt_v8 loads (8
   elements each, hd / 8 per thread), the 8 partial sums added by shuffles in a fixed order. hd a multiple
   of 64. */
template <typename T>
__global__ void gk_fa_dot(const T *__restrict__ dout, const T *__restrict__ out, float *__restrict__ D, int64_t rows,
                          int T_, int H, int C, int hd) {
    int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 8;
    int k = threadIdx.x % 8;
    if (w >= rows) return; /* (rows are whole 8-lane groups: the shuffles below stay within live lanes) */
    int64_t bt = w / H;
    int h = (int)(w % H);
    const T *a = dout + bt * C + h * hd, *o = out + bt * C + h * hd;
    float s = 0;
    for (int d = 8 * k; d < hd; d += 64) {
        gpt_v8<T> av = *(const gpt_v8<T> *)(a + d), ov = *(const gpt_v8<T> *)(o + d);
#pragma unroll
        for (int i = 0; i < 8; i++) s += ex_f32(av.x[i]) * ex_f32(ov.x[i]);
    }
    unsigned m = __activemask();
    s += __shfl_xor_sync(m, s, 1);
    s += __shfl_xor_sync(m, s, 2);
    s += __shfl_xor_sync(m, s, 4);
    if (!k) D[((bt / T_) * H + h) * T_ + bt % T_] = s;
}

/* four 8 x 8 b16 matrices: lanes 8 i .. 8 i + 7 give the row addresses of matrix i; r[i] is matrix i's
   (row lane / 4, columns 2 (lane % 4), + 1), or with .trans its (rows 2 (lane % 4), + 1, column lane / 4) */
__device__ __forceinline__ void gpt_ldsm4(uint32_t addr, uint32_t *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void gpt_ldsm4_t(uint32_t addr, uint32_t *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* the A operand (16 x 16) of rows [0, 16), columns [k0, k0 + 16) of a row-major tile, one ldmatrix:
   matrices (rows 0-7, k0), (rows 8-15, k0), (rows 0-7, k0 + 8), (rows 8-15, k0 + 8) are a0..a3 */
template <typename T> __device__ __forceinline__ void gpt_lda4(const T *tile, int ldt, int k0, uint32_t *a) {
    int lane = threadIdx.x % 32;
    gpt_ldsm4((uint32_t)__cvta_generic_to_shared(tile + (lane & 15) * ldt + k0 + 8 * (lane >> 4)), a);
}

/* acc[8][4] = A (16 x HD, as HD/16 operands) B^T, B a row-major tile of 64 rows of HD: scores of 16 rows
   against 64 columns, 8 tiles of 16 x 8. For the n-tiles 2 jp, 2 jp + 1 and k-step kk, the ldmatrix
   matrices (rows 16 jp + 0-7, 16 kk), (same rows, 16 kk + 8), (rows 16 jp + 8-15, 16 kk), (same, 16 kk + 8)
   are b0, b1 of n-tile 2 jp and b0, b1 of n-tile 2 jp + 1 (b0: k = 2 (lane % 4), n = lane / 4) */
template <typename T, int HD>
__device__ __forceinline__ void gpt_fa2_qk(const uint32_t (*a)[4], const T *B, float (*acc)[4]) {
    constexpr int LDT = HD + 8;
    int lane = threadIdx.x % 32;
    uint32_t base = (uint32_t)__cvta_generic_to_shared(B + (8 * (lane >> 4) + (lane & 7)) * LDT + 8 * ((lane >> 3) & 1));
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0;
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++)
#pragma unroll
        for (int jp = 0; jp < 4; jp++) {
            uint32_t b[4];
            gpt_ldsm4(base + (uint32_t)((16 * jp * LDT + 16 * kk) * sizeof(T)), b);
            gpt_mma<T>(acc[2 * jp], a[kk], b[0], b[1]);
            gpt_mma<T>(acc[2 * jp + 1], a[kk], b[2], b[3]);
        }
}

/* gpt_pack with one conversion instruction for both values (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32): the
   same round-to-nearest-even as ex_to<T> on each */
template <typename T> __device__ __forceinline__ uint32_t gpt_pack2(float *lo, float *hi) {
    uint32_t r;
    if constexpr (std::is_same<T, __half>::value) {
        __half2 h = __floats2half2_rn(*lo, *hi); /* .x (low half) from *lo */
        float2 f = __half22float2(h);
        *lo = f.x, *hi = f.y;
        r = *(const uint32_t *)&h;
    } else {
        __nv_bfloat162 h = __floats2bfloat162_rn(*lo, *hi);
        r = *(const uint32_t *)&h;
        *lo = __uint_as_float(r << 16), *hi = __uint_as_float(r & 0xffff0000u);
    }
    return r;
}

/* acc[HD/8][4] += P (16 x 64, in registers as 8 tiles of 16 x 8, rounded to T here: by gpt_pack, or by
   gpt_pack2 with PAIR, the same rounding in one instruction per pair) B (64 x HD
   row-major tile). For k-step kk and n-tiles 2 jp, 2 jp + 1, the ldmatrix .trans matrices
   (rows 16 kk + 0-7, column 16 jp), (rows 16 kk + 8-15, 16 jp), (rows 16 kk + 0-7, 16 jp + 8),
   (rows 16 kk + 8-15, 16 jp + 8) are b0, b1 of n-tile 2 jp and b0, b1 of n-tile 2 jp + 1 */
template <typename T, int HD, bool PAIR = false>
__device__ __forceinline__ void gpt_fa2_pv(float (*p)[4], const T *B, float (*acc)[4]) {
    constexpr int LDT = HD + 8;
    int lane = threadIdx.x % 32;
    uint32_t base = (uint32_t)__cvta_generic_to_shared(B + (lane & 15) * LDT + 8 * (lane >> 4));
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        uint32_t a[4];
        a[0] = (PAIR ? gpt_pack2<T> : gpt_pack<T>)(&p[2 * kk][0], &p[2 * kk][1]);
        a[1] = (PAIR ? gpt_pack2<T> : gpt_pack<T>)(&p[2 * kk][2], &p[2 * kk][3]);
        a[2] = (PAIR ? gpt_pack2<T> : gpt_pack<T>)(&p[2 * kk + 1][0], &p[2 * kk + 1][1]);
        a[3] = (PAIR ? gpt_pack2<T> : gpt_pack<T>)(&p[2 * kk + 1][2], &p[2 * kk + 1][3]);
#pragma unroll
        for (int jp = 0; jp < HD / 16; jp++) {
            uint32_t b[4];
            gpt_ldsm4_t(base + (uint32_t)((16 * kk * LDT + 16 * jp) * sizeof(T)), b);
            gpt_mma<T>(acc[2 * jp], a, b[0], b[1]);
            gpt_mma<T>(acc[2 * jp + 1], a, b[2], b[3]);
        }
    }
}

/* rows [0, rows) of HD from global (row stride ld) into a tile of stride HD + 8 by cp.async; rows <= 128 */
template <typename T, int HD>
__device__ __forceinline__ void gpt_fa2_load(T *dst, const T *src, int64_t ld, int rows) {
    constexpr int LDT = HD + 8, PER_ROW = HD / 8;
    for (int i = threadIdx.x; i < rows * PER_ROW; i += blockDim.x) {
        int r = i / PER_ROW, c = (i % PER_ROW) * 8;
        uint32_t d = (uint32_t)__cvta_generic_to_shared(dst + r * LDT + c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src + r * ld + c));
    }
}

/* blocks per SM the register budget is set for: at head size 64, 3 blocks of 4 warps (168 registers) or 2
   of 8 (128); left alone, ptxas spends the registers on loads in flight and keeps only 2 blocks of 4 warps.
   Head size 128 needs all 255. */
#define GPT_FA2_MINB(HD, NW) ((HD) == 64 ? ((NW) == 8 ? 2 : 3) : 1)

/* exp2 by ex2.approx.ftz.f32 (the MUFU instruction alone): exp2f is the same instruction with extra scaling
   so that results below 2^-126 come out subnormal instead of 0; such a p is 0 once rounded to bf16 or fp16
   anyway (bf16's smallest normal is 2^-126, fp16's smallest subnormal 2^-24), and the running maximum keeps
   every row's largest p at 1. Both are 2-ulp approximations of 2^x. */
__device__ __forceinline__ float gpt_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* forward: grid (B H, ceil(T / (16 NW))), 32 NW threads, the block's queries [qb 16 NW, + 16 NW) with
   qb = gridDim.y - 1 - blockIdx.y. Three K, V buffers: the copy of tile kt + 2 starts right after the
   barrier that opens tile kt, into the buffer tile kt - 1 used (every warp has passed that barrier, so none
   still reads it); one barrier per tile, and a copy has two tiles of work to land in. Buffer i (i = 0, 1,
   2): K at sKV + 2 i TILE, V after it; Q staged in buffer 2 (16 NW <= 128 rows: two tiles). cp.async
   groups, one per commit: Q, KV 0, KV 1, then one per tile kt (KV kt + 2, empty past the last tile), so
   at the top of tile kt the newest group is KV kt + 1 and wait_group 1 leaves KV kt complete. */
template <typename T, int HD, int NW>
__global__ void __launch_bounds__(NW * 32, GPT_FA2_MINB(HD, NW))
    gk_fa3_fwd(const T *qkv, T *out, float *lse2, int T_, int H, int C, float scale) {
    constexpr int LDT = HD + 8, TILE = GPT_FA_TILE * LDT, BR = 16 * NW;
    extern __shared__ __align__(16) unsigned char g_fa_smem[];
    T *sKV = (T *)g_fa_smem;
    int qb = gridDim.y - 1 - blockIdx.y, bh = blockIdx.x, b = bh / H, h = bh % H;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int64_t ld = 3 * (int64_t)C;
    const T *q = qkv + (int64_t)b * T_ * ld + h * HD, *k = q + C, *v = q + 2 * C;
    const float sl2 = scale * GPT_LOG2E;
    int r0 = qb * BR, rows = min(BR, T_ - r0), last = (r0 + rows) / GPT_FA_TILE - 1; /* the last key tile */
    int q0 = r0 + warp * 16, qtw = q0 / GPT_FA_TILE, wr = q0 % GPT_FA_TILE;        /* the warp's rows */
    bool active = q0 < T_;
    gpt_fa2_load<T, HD>(sKV + 4 * TILE, q + (int64_t)r0 * ld, ld, rows);
    gpt_cp_commit();
    gpt_fa2_load<T, HD>(sKV, k, ld, GPT_FA_TILE);
    gpt_fa2_load<T, HD>(sKV + TILE, v, ld, GPT_FA_TILE);
    gpt_cp_commit();
    if (last >= 1) {
        gpt_fa2_load<T, HD>(sKV + 2 * TILE, k + (int64_t)GPT_FA_TILE * ld, ld, GPT_FA_TILE);
        gpt_fa2_load<T, HD>(sKV + 3 * TILE, v + (int64_t)GPT_FA_TILE * ld, ld, GPT_FA_TILE);
    }
    gpt_cp_commit();
    gpt_cp_wait<2>(); /* Q */
    __syncthreads();
    uint32_t qa[HD / 16][4];
    if (active)
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) gpt_lda4<T>(sKV + 4 * TILE + warp * 16 * LDT, LDT, 16 * kk, qa[kk]);
    float o[HD / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < HD / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0;
    int cur = 0; /* kt % 3 */
    for (int kt = 0; kt <= last; kt++) {
        gpt_cp_wait<1>(); /* KV kt */
        __syncthreads();  /* KV kt visible to all; every warp is done with buffer (kt + 2) % 3 (tile kt - 1, or Q) */
        if (kt + 2 <= last) {
            int nb = cur == 0 ? 2 : cur - 1; /* (kt + 2) % 3 */
            gpt_fa2_load<T, HD>(sKV + 2 * nb * TILE, k + (int64_t)(kt + 2) * GPT_FA_TILE * ld, ld, GPT_FA_TILE);
            gpt_fa2_load<T, HD>(sKV + (2 * nb + 1) * TILE, v + (int64_t)(kt + 2) * GPT_FA_TILE * ld, ld,
                                GPT_FA_TILE);
        }
        gpt_cp_commit();
        const T *sK = sKV + 2 * cur * TILE, *sV = sK + TILE;
        cur = cur == 2 ? 0 : cur + 1;
        if (active && kt <= qtw) { /* warp-uniform: past the diagonal every key is masked */
            float s[8][4];
            gpt_fa2_qk<T, HD>(qa, sK, s);
            if (kt == qtw) { /* the diagonal tile: keys after the query are masked */
#pragma unroll
                for (int j = 0; j < 8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (8 * j + 2 * t + (e & 1) > wr + g + 8 * (e >> 1)) s[j][e] = -INFINITY;
            }
            float mx[2] = {-INFINITY, -INFINITY}, alpha[2], sum[2] = {0, 0}, nm[2];
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) mx[e >> 1] = fmaxf(mx[e >> 1], s[j][e]);
#pragma unroll
            for (int r = 0; r < 2; r++) {
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
                float mn = fmaxf(m[r], mx[r] * sl2); /* finite: key kt*64 <= every query of the warp */
                alpha[r] = gpt_exp2(m[r] - mn);      /* 2^-inf = 0 on the first tile */
                m[r] = mn;
                nm[r] = -mn;
            }
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) s[j][e] = gpt_exp2(fmaf(s[j][e], sl2, nm[e >> 1]));
#pragma unroll
            for (int j = 0; j < HD / 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[j][e] *= alpha[e >> 1];
            gpt_fa2_pv<T, HD, true>(s, sV, o); /* rounds s to T: the sum below is of what V was weighted with */
#pragma unroll
            for (int j = 0; j < 8; j++) sum[0] += s[j][0] + s[j][1], sum[1] += s[j][2] + s[j][3];
#pragma unroll
            for (int r = 0; r < 2; r++) {
                sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 1);
                sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 2);
                l[r] = l[r] * alpha[r] + sum[r];
            }
        }
    }
    if (!active) return;
    gpt_fa_put<T, HD>(o, out + ((int64_t)b * T_ + q0) * C + h * HD, C, 1.0f / l[0], 1.0f / l[1]);
    if (t == 0) {
        lse2[(int64_t)bh * T_ + q0 + g] = m[0] + log2f(l[0]);
        lse2[(int64_t)bh * T_ + q0 + g + 8] = m[1] + log2f(l[1]);
    }
}

/* dK, dV: grid (B H, ceil(T / (16 NW))), 32 NW threads, the block's keys [kb 16 NW, + 16 NW) with
   kb = blockIdx.y (the first keys see the most queries); warp w owns keys kb 16 NW + [16 w, 16 w + 16).
   Q, dO, lse and D of the 64-query tiles double-buffered. */
template <typename T, int HD, int NW>
__global__ void __launch_bounds__(NW * 32, GPT_FA2_MINB(HD, NW))
    gk_fa2_dkdv(const T *qkv, const T *dout, const float *lse2, const float *D, T *dqkv, int T_, int H, int C,
                float scale) {
    constexpr int LDT = HD + 8, TILE = GPT_FA_TILE * LDT, BR = 16 * NW, KT = (BR + GPT_FA_TILE - 1) / GPT_FA_TILE;
    extern __shared__ __align__(16) unsigned char g_fa_smem[];
    T *sK = (T *)g_fa_smem, *sV = sK + KT * TILE, *sQO = sV + KT * TILE; /* buffer i: Q at sQO + 2 i TILE, dO after */
    float *sLD = (float *)(sQO + 4 * TILE);                               /* buffer i: lse at sLD + 2 i 64, D after */
    int kb = blockIdx.y, bh = blockIdx.x, b = bh / H, h = bh % H;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3, nq = T_ / GPT_FA_TILE;
    const int64_t ld = 3 * (int64_t)C;
    const T *q = qkv + (int64_t)b * T_ * ld + h * HD, *k = q + C, *v = q + 2 * C;
    const T *dO = dout + (int64_t)b * T_ * C + h * HD;
    const float *L = lse2 + (int64_t)bh * T_, *DD = D + (int64_t)bh * T_;
    const float sl2 = scale * GPT_LOG2E;
    int r0 = kb * BR, rows = min(BR, T_ - r0), first = r0 / GPT_FA_TILE; /* the first query tile */
    int k0 = r0 + warp * 16, ktw = k0 / GPT_FA_TILE, wr = k0 % GPT_FA_TILE; /* the warp's keys */
    bool active = k0 < T_;
    /* one query tile's Q, dO (cp.async) and lse, D (16 B pieces, 16 threads each) into buffer i */
    auto load_q = [&](int qt, int i) {
        gpt_fa2_load<T, HD>(sQO + 2 * i * TILE, q + (int64_t)qt * GPT_FA_TILE * ld, ld, GPT_FA_TILE);
        gpt_fa2_load<T, HD>(sQO + (2 * i + 1) * TILE, dO + (int64_t)qt * GPT_FA_TILE * C, C, GPT_FA_TILE);
        if (threadIdx.x < 32) {
            int which = threadIdx.x / 16, c = (threadIdx.x % 16) * 4;
            const float *src = (which ? DD : L) + qt * GPT_FA_TILE + c;
            uint32_t d = (uint32_t)__cvta_generic_to_shared(sLD + (2 * i + which) * GPT_FA_TILE + c);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
        }
    };
    gpt_fa2_load<T, HD>(sK, k + (int64_t)r0 * ld, ld, rows);
    gpt_fa2_load<T, HD>(sV, v + (int64_t)r0 * ld, ld, rows);
    load_q(first, 0);
    gpt_cp_commit();
    gpt_cp_wait<0>();
    __syncthreads();
    uint32_t ka[HD / 16][4], va[HD / 16][4];
    if (active)
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            gpt_lda4<T>(sK + warp * 16 * LDT, LDT, 16 * kk, ka[kk]);
            gpt_lda4<T>(sV + warp * 16 * LDT, LDT, 16 * kk, va[kk]);
        }
    float dk[HD / 8][4], dv[HD / 8][4];
#pragma unroll
    for (int j = 0; j < HD / 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[j][e] = dv[j][e] = 0;
    for (int qt = first; qt < nq; qt++) {
        int i = (qt - first) & 1;
        const T *sQ = sQO + 2 * i * TILE, *sO = sQ + TILE;
        const float *sL = sLD + 2 * i * GPT_FA_TILE, *sD = sL + GPT_FA_TILE;
        if (qt + 1 < nq) {
            load_q(qt + 1, i ^ 1);
            gpt_cp_commit();
            gpt_cp_wait<1>();
        } else
            gpt_cp_wait<0>();
        __syncthreads();
        if (active && qt >= ktw) { /* warp-uniform: before the diagonal no query sees these keys */
            float p[8][4], dp[8][4];
            gpt_fa2_qk<T, HD>(ka, sQ, p); /* S^T: 16 keys x 64 queries */
#pragma unroll
            for (int j = 0; j < 8; j++) {
                float2 lj = *(const float2 *)(sL + 8 * j + 2 * t); /* queries 8 j + 2 t, + 1 */
                p[j][0] = exp2f(fmaf(p[j][0], sl2, -lj.x));
                p[j][1] = exp2f(fmaf(p[j][1], sl2, -lj.y));
                p[j][2] = exp2f(fmaf(p[j][2], sl2, -lj.x));
                p[j][3] = exp2f(fmaf(p[j][3], sl2, -lj.y));
            }
            if (qt == ktw) /* the diagonal tile: queries before the key do not see it */
#pragma unroll
                for (int j = 0; j < 8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (8 * j + 2 * t + (e & 1) < wr + g + 8 * (e >> 1)) p[j][e] = 0.0f;
            gpt_fa2_pv<T, HD>(p, sO, dv);  /* dV += P^T dO (p rounded to T in place) */
            gpt_fa2_qk<T, HD>(va, sO, dp); /* dP^T = V dO^T */
#pragma unroll
            for (int j = 0; j < 8; j++) {
                float2 dj = *(const float2 *)(sD + 8 * j + 2 * t);
                p[j][0] *= dp[j][0] - dj.x;
                p[j][1] *= dp[j][1] - dj.y;
                p[j][2] *= dp[j][2] - dj.x;
                p[j][3] *= dp[j][3] - dj.y;
            }
            gpt_fa2_pv<T, HD>(p, sQ, dk); /* dK += dS^T Q */
        }
        __syncthreads(); /* this buffer is reloaded two tiles on */
    }
    if (!active) return;
    T *dst = dqkv + ((int64_t)b * T_ + k0) * ld + C + h * HD;
    gpt_fa_put<T, HD>(dk, dst, ld, scale, scale);
    gpt_fa_put<T, HD>(dv, dst + C, ld, 1.0f, 1.0f);
}

/* dQ: grid (B H, ceil(T / (16 NW))), 32 NW threads, queries [qb 16 NW, + 16 NW) with
   qb = gridDim.y - 1 - blockIdx.y; warp w owns 16 of them. K, V tiles double-buffered. */
template <typename T, int HD, int NW>
__global__ void __launch_bounds__(NW * 32, GPT_FA2_MINB(HD, NW))
    gk_fa2_dq(const T *qkv, const T *dout, const float *lse2, const float *D, T *dqkv, int T_, int H, int C,
              float scale) {
    constexpr int LDT = HD + 8, TILE = GPT_FA_TILE * LDT, BR = 16 * NW, QT = (BR + GPT_FA_TILE - 1) / GPT_FA_TILE;
    extern __shared__ __align__(16) unsigned char g_fa_smem[];
    T *sQ = (T *)g_fa_smem, *sO = sQ + QT * TILE, *sKV = sO + QT * TILE; /* buffer i: K at sKV + 2 i TILE, V after */
    int qb = gridDim.y - 1 - blockIdx.y, bh = blockIdx.x, b = bh / H, h = bh % H;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int64_t ld = 3 * (int64_t)C;
    const T *q = qkv + (int64_t)b * T_ * ld + h * HD, *k = q + C, *v = q + 2 * C;
    const T *dO = dout + (int64_t)b * T_ * C + h * HD;
    const float sl2 = scale * GPT_LOG2E;
    int r0 = qb * BR, rows = min(BR, T_ - r0), last = (r0 + rows) / GPT_FA_TILE - 1;
    int q0 = r0 + warp * 16, qtw = q0 / GPT_FA_TILE, wr = q0 % GPT_FA_TILE;
    bool active = q0 < T_;
    float nL[2] = {0, 0}, Dr[2] = {0, 0};
    if (active)
        for (int r = 0; r < 2; r++) {
            nL[r] = -lse2[(int64_t)bh * T_ + q0 + g + 8 * r];
            Dr[r] = D[(int64_t)bh * T_ + q0 + g + 8 * r];
        }
    gpt_fa2_load<T, HD>(sQ, q + (int64_t)r0 * ld, ld, rows);
    gpt_fa2_load<T, HD>(sO, dO + (int64_t)r0 * C, C, rows);
    gpt_fa2_load<T, HD>(sKV, k, ld, GPT_FA_TILE);
    gpt_fa2_load<T, HD>(sKV + TILE, v, ld, GPT_FA_TILE);
    gpt_cp_commit();
    gpt_cp_wait<0>();
    __syncthreads();
    uint32_t qa[HD / 16][4], oa[HD / 16][4];
    if (active)
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            gpt_lda4<T>(sQ + warp * 16 * LDT, LDT, 16 * kk, qa[kk]);
            gpt_lda4<T>(sO + warp * 16 * LDT, LDT, 16 * kk, oa[kk]);
        }
    float dq[HD / 8][4];
#pragma unroll
    for (int j = 0; j < HD / 8; j++) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0;
    for (int kt = 0; kt <= last; kt++) {
        const T *sK = sKV + 2 * (kt & 1) * TILE, *sV = sK + TILE;
        if (kt < last) {
            T *nk = sKV + 2 * ((kt + 1) & 1) * TILE;
            gpt_fa2_load<T, HD>(nk, k + (int64_t)(kt + 1) * GPT_FA_TILE * ld, ld, GPT_FA_TILE);
            gpt_fa2_load<T, HD>(nk + TILE, v + (int64_t)(kt + 1) * GPT_FA_TILE * ld, ld, GPT_FA_TILE);
            gpt_cp_commit();
            gpt_cp_wait<1>();
        } else
            gpt_cp_wait<0>();
        __syncthreads();
        if (active && kt <= qtw) {
            float p[8][4], dp[8][4];
            gpt_fa2_qk<T, HD>(qa, sK, p);  /* S */
            gpt_fa2_qk<T, HD>(oa, sV, dp); /* dP = dO V^T */
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) p[j][e] = exp2f(fmaf(p[j][e], sl2, nL[e >> 1]));
            if (kt == qtw) /* the diagonal tile: keys after the query are masked */
#pragma unroll
                for (int j = 0; j < 8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (8 * j + 2 * t + (e & 1) > wr + g + 8 * (e >> 1)) p[j][e] = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) /* P as the forward's product used it */
                    p[j][e] = ex_f32(ex_to<T>(p[j][e])) * (dp[j][e] - Dr[e >> 1]);
            gpt_fa2_pv<T, HD>(p, sK, dq); /* dQ += dS K */
        }
        __syncthreads();
    }
    if (!active) return;
    gpt_fa_put<T, HD>(dq, dqkv + ((int64_t)b * T_ + q0) * ld + h * HD, ld, scale, scale);
}

/* The fused path applies: fp16 / bf16, head size 64 or 128, T a multiple of 64 */
template <typename T> static inline int gpt_fa_usable(const gpt_dims *d) {
    int hd = d->dim / d->heads;
    return gpt_fa_ok<T>::value && (hd == 64 || hd == 128) && d->seq % GPT_FA_TILE == 0;
}

/* warps per block: the forward 8 at head size 64 (two blocks per SM without spills), else 4; the backward 4
   (at head size 64 three blocks, 12 warps, per SM) */
template <int HD> struct gpt_fa_nw {
    static constexpr int fwd = HD == 64 ? 8 : 4, bwd = 4;
};

/* dynamic shared memory. which 0: the forward's 3 x (K, V); 1: dK/dV's K, V of the block's keys + 2 x (Q,
   dO, lse, D); 2: dQ's Q, dO of the block's queries + 2 x (K, V) */
template <typename T, int HD> static size_t gpt_fa_smem(int which) {
    constexpr int nw = gpt_fa_nw<HD>::bwd, own = 2 * ((16 * nw + GPT_FA_TILE - 1) / GPT_FA_TILE);
    size_t tile = (size_t)GPT_FA_TILE * (HD + 8) * sizeof(T);
    return which == 0   ? 6 * tile
           : which == 1 ? (own + 4) * tile + 4 * GPT_FA_TILE * sizeof(float)
                        : (own + 4) * tile;
}

template <typename T, int HD> static zero_result gpt_fa_attrs(zero_error *err) {
    static int done;
    if (done) return ZERO_OK;
    constexpr int fw = gpt_fa_nw<HD>::fwd, bw = gpt_fa_nw<HD>::bwd;
    ZERO_CUDA_TRY(cudaFuncSetAttribute(gk_fa3_fwd<T, HD, fw>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)gpt_fa_smem<T, HD>(0)),
                  err);
    ZERO_CUDA_TRY(cudaFuncSetAttribute(gk_fa2_dkdv<T, HD, bw>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)gpt_fa_smem<T, HD>(1)),
                  err);
    ZERO_CUDA_TRY(cudaFuncSetAttribute(gk_fa2_dq<T, HD, bw>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)gpt_fa_smem<T, HD>(2)),
                  err);
    done = 1;
    return ZERO_OK;
}

template <typename T, int HD>
static zero_result gpt_fa_fwd_hd(cudaStream_t s, const gpt_dims *d, int B, const T *qkv, T *out, float *lse,
                                 zero_error *err) {
    GPT_TRY((gpt_fa_attrs<T, HD>(err)));
    constexpr int nw = gpt_fa_nw<HD>::fwd;
    float scale = 1.0f / sqrtf((float)HD);
    dim3 grid(B * d->heads, (d->seq + 16 * nw - 1) / (16 * nw));
    gk_fa3_fwd<T, HD, nw><<<grid, 32 * nw, gpt_fa_smem<T, HD>(0), s>>>(qkv, out, lse, d->seq, d->heads, d->dim,
                                                                      scale);
    ZERO_CUDA_TRY(cudaGetLastError(), err);
    return ZERO_OK;
}

template <typename T, int HD>
static zero_result gpt_fa_bwd_hd(cudaStream_t s, const gpt_dims *d, int B, const T *qkv, const T *out,
                                 const float *lse, const T *dout, float *D, T *dqkv, zero_error *err) {
    GPT_TRY((gpt_fa_attrs<T, HD>(err)));
    constexpr int nw = gpt_fa_nw<HD>::bwd;
    int64_t rows = (int64_t)B * d->seq * d->heads;
    float scale = 1.0f / sqrtf((float)HD);
    gk_fa_dot<T><<<gpt_blocks(rows * 8), GPT_THREADS, 0, s>>>(dout, out, D, rows, d->seq, d->heads, d->dim, HD);
    dim3 grid(B * d->heads, (d->seq + 16 * nw - 1) / (16 * nw));
    gk_fa2_dkdv<T, HD, nw><<<grid, 32 * nw, gpt_fa_smem<T, HD>(1), s>>>(qkv, dout, lse, D, dqkv, d->seq, d->heads,
                                                                       d->dim, scale);
    gk_fa2_dq<T, HD, nw><<<grid, 32 * nw, gpt_fa_smem<T, HD>(2), s>>>(qkv, dout, lse, D, dqkv, d->seq, d->heads,
                                                                     d->dim, scale);
    ZERO_CUDA_TRY(cudaGetLastError(), err);
    return ZERO_OK;
}

#endif /* GPT_ATTN_CUH */
