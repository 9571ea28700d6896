/* zero_cuda_kernels.part.cuh: a part of zero_cuda.cuh in development (inlined before it lands) */

/* ---- kernels -----------------------------------------------------------------

   The backend's four kernels, each computing exactly the function of its host
   backend twin in zero.h (zero__host_scale, _convert, _sumsq, _adam):

     zero__cuda_k_scale    x = round_dt(x * factor)
     zero__cuda_k_convert  dst = round_ddt(src), or round_ddt(dst + src) in fp32
     zero__cuda_k_sumsq    out[0] += sum of squares in double, out[1] flags inf/nan;
                           deterministic (no floating atomics: fixed grid, fixed order)
     zero__cuda_k_adam     DeepSpeed's Adam over a table of segments, many per launch

   Everything is one pass over memory. A thread handles 8 consecutive elements at
   a time with 16-byte loads and stores (two for an fp32 array, one for a 16-bit
   one) wherever every array of the call is 16-byte aligned at the same element;
   the elements before that element (the head) and after the last whole group of 8
   (the tail) go one at a time, as does a whole range whose arrays have no common
   alignment. Indices are size_t throughout (ranges beyond 2^31 elements), loops
   are grid-stride, and launches are asynchronous on the caller's stream.

   The fp32 arithmetic uses the _rn intrinsics, one rounding per operation in
   the host backend's order: nvcc may not fuse a multiply and an add into an FMA
   here, and -use_fast_math does not change the results, so a kernel and the host
   backend agree bit for bit on the same inputs (as long as the host compiler does
   not contract either: x86-64 without -mfma does not). Conversions to fp16/bf16
   round to nearest even (__float2half_rn, __float2bfloat16_rn semantics). */

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define ZERO__CUDA_THREADS 256       /* threads per block of every kernel here */
#define ZERO__CUDA_VEC 8             /* elements per thread per step: 16 bytes of 16-bit data */
#define ZERO__CUDA_SUMSQ_BLOCKS 1024 /* most blocks of one sumsq launch */
/* Doubles of device scratch zero__cuda_k_sumsq needs (one partial sum per block).
   The grid depends only on n and the buffer's alignment, never on the GPU, so
   the sum is the same on every device. */
#define ZERO__CUDA_SUMSQ_SCRATCH ZERO__CUDA_SUMSQ_BLOCKS
#define ZERO__CUDA_ADAM_BATCH 32     /* segments per Adam launch (passed by value) */

/* Tuning knobs (private). tests/gpu_kernels.cu prints the figures; measured on an
   H200 (Adam over 2^28 parameters, fp16 grad and param, 28 bytes each, against a
   2 GiB cudaMemcpy device to device in the same run, median of 5): unroll 1:
   86% of the copy's bandwidth; unroll 2: 90%; waves 4: 87%; the evict-first hint
   lost 4 points with every combination tried.
     ZERO__CUDA_WAVES           grid of the element-wise kernels, in full waves of
                                the GPU (blocks resident at once)
     ZERO__CUDA_ADAM_UNROLL     groups of 8 elements an Adam thread loads before it
                                computes (1 or 2): more bytes in flight per thread
     ZERO__CUDA_ADAM_STREAMING  1: Adam's loads and stores carry the evict-first
                                hint (ld/st.global.cs): its data is touched once */
#ifndef ZERO__CUDA_WAVES
#define ZERO__CUDA_WAVES 1
#endif
#ifndef ZERO__CUDA_ADAM_UNROLL
#define ZERO__CUDA_ADAM_UNROLL 2
#endif
#ifndef ZERO__CUDA_ADAM_STREAMING
#define ZERO__CUDA_ADAM_STREAMING 0
#endif

/* ---- kernels: element access ---- */

struct zero__cuda_none {}; /* a param type that is never written */

/* 16 aligned bytes; CS: evict-first (streaming) cache hint. */
template <bool CS> static __device__ __forceinline__ uint4 zero__cuda_ld16(const void *p) {
    if (CS) return __ldcs(reinterpret_cast<const uint4 *>(p));
    return *reinterpret_cast<const uint4 *>(p);
}
template <bool CS> static __device__ __forceinline__ void zero__cuda_st16(void *p, uint4 v) {
    if (CS) __stcs(reinterpret_cast<uint4 *>(p), v);
    else __stwb(reinterpret_cast<uint4 *>(p), v);
}

/* Load/store one element, or a 16-byte-aligned group of 8, as float. */
template <typename T> struct zero__cuda_io;

template <> struct zero__cuda_io<float> {
    static __device__ __forceinline__ float ld(const float *p) { return *p; }
    static __device__ __forceinline__ void st(float *p, float x) { *p = x; }
    template <bool CS = false> static __device__ __forceinline__ void ld8(const float *p, float *f) {
        const uint4 a = zero__cuda_ld16<CS>(p), b = zero__cuda_ld16<CS>(p + 4);
        f[0] = __uint_as_float(a.x), f[1] = __uint_as_float(a.y), f[2] = __uint_as_float(a.z);
        f[3] = __uint_as_float(a.w), f[4] = __uint_as_float(b.x), f[5] = __uint_as_float(b.y);
        f[6] = __uint_as_float(b.z), f[7] = __uint_as_float(b.w);
    }
    template <bool CS = false> static __device__ __forceinline__ void st8(float *p, const float *f) {
        zero__cuda_st16<CS>(p, make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                                          __float_as_uint(f[3])));
        zero__cuda_st16<CS>(p + 4, make_uint4(__float_as_uint(f[4]), __float_as_uint(f[5]), __float_as_uint(f[6]),
                                              __float_as_uint(f[7])));
    }
};

template <> struct zero__cuda_io<__half> {
    static __device__ __forceinline__ float ld(const __half *p) { return __half2float(*p); }
    static __device__ __forceinline__ void st(__half *p, float x) { *p = __float2half_rn(x); }
    template <bool CS = false> static __device__ __forceinline__ void ld8(const __half *p, float *f) {
        const uint4 u = zero__cuda_ld16<CS>(p);
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            __half2 h;
            memcpy(&h, &w[k], sizeof h);
            const float2 t = __half22float2(h);
            f[2 * k] = t.x, f[2 * k + 1] = t.y;
        }
    }
    template <bool CS = false> static __device__ __forceinline__ void st8(__half *p, const float *f) {
        unsigned w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const __half2 h = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
            memcpy(&w[k], &h, sizeof h);
        }
        zero__cuda_st16<CS>(p, make_uint4(w[0], w[1], w[2], w[3]));
    }
};

template <> struct zero__cuda_io<__nv_bfloat16> {
    static __device__ __forceinline__ float ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
    static __device__ __forceinline__ void st(__nv_bfloat16 *p, float x) { *p = __float2bfloat16_rn(x); }
    template <bool CS = false> static __device__ __forceinline__ void ld8(const __nv_bfloat16 *p, float *f) {
        /* bf16 -> fp32 is exact: the bits moved up by 16 */
        const uint4 u = zero__cuda_ld16<CS>(p);
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            f[2 * k] = __uint_as_float(w[k] << 16);
            f[2 * k + 1] = __uint_as_float(w[k] & 0xFFFF0000u);
        }
    }
    template <bool CS = false> static __device__ __forceinline__ void st8(__nv_bfloat16 *p, const float *f) {
        unsigned w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
            memcpy(&w[k], &h, sizeof h);
        }
        zero__cuda_st16<CS>(p, make_uint4(w[0], w[1], w[2], w[3]));
    }
};

template <> struct zero__cuda_io<zero__cuda_none> {
    static __device__ __forceinline__ void st(zero__cuda_none *, float) {}
    template <bool CS = false> static __device__ __forceinline__ void st8(zero__cuda_none *, const float *) {}
};

/* Visit a range of n elements split as the host planned it (zero__cuda_plan):
   groups of 8 at head + 8 j for j < nv, then the rest one by one (the head's
   elements [0, head) and the tail [head + 8 nv, n)). t: this thread's index in
   the threads sharing the range, stride: their number. */
template <typename V, typename S>
static __device__ __forceinline__ void zero__cuda_for_range(size_t n, size_t head, size_t nv, size_t t,
                                                            size_t stride, V vec, S one) {
    const size_t body = ZERO__CUDA_VEC * nv, ns = n - body;
    for (size_t j = t; j < nv; j += stride) vec(head + ZERO__CUDA_VEC * j);
    for (size_t k = t; k < ns; k += stride) one(k < head ? k : k + body);
}

/* Sum over the block, in a fixed order; the result is valid in thread 0. */
static __device__ __forceinline__ double zero__cuda_block_sum(double v) {
    __shared__ double warp_sum[ZERO__CUDA_THREADS / 32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
    if (lane == 0) warp_sum[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? warp_sum[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
    }
    return v;
}

/* ---- kernels: device code ---- */

template <typename T>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_scale_kernel(T *x, size_t n, size_t head, size_t nv, float factor) {
    typedef zero__cuda_io<T> io;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    zero__cuda_for_range(
        n, head, nv, t, stride,
        [&](size_t i) {
            float f[ZERO__CUDA_VEC];
            io::ld8(x + i, f);
#pragma unroll
            for (int k = 0; k < ZERO__CUDA_VEC; k++) f[k] = __fmul_rn(f[k], factor);
            io::st8(x + i, f);
        },
        [&](size_t i) { io::st(x + i, __fmul_rn(io::ld(x + i), factor)); });
}

/* dst and src may be one buffer (same dtype): each element is read, then written,
   by one thread. */
template <typename D, typename S>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_convert_kernel(D *dst, const S *src, size_t n, size_t head, size_t nv, int accumulate) {
    typedef zero__cuda_io<D> dio;
    typedef zero__cuda_io<S> sio;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    zero__cuda_for_range(
        n, head, nv, t, stride,
        [&](size_t i) {
            float f[ZERO__CUDA_VEC];
            sio::ld8(src + i, f);
            if (accumulate) {
                float d[ZERO__CUDA_VEC];
                dio::ld8(dst + i, d);
#pragma unroll
                for (int k = 0; k < ZERO__CUDA_VEC; k++) f[k] = __fadd_rn(d[k], f[k]);
            }
            dio::st8(dst + i, f);
        },
        [&](size_t i) {
            float f = sio::ld(src + i);
            if (accumulate) f = __fadd_rn(dio::ld(dst + i), f);
            dio::st(dst + i, f);
        });
}

/* Block b's sum of squares into partial[b]. Squares of floats are exact in double;
   only the order of the additions is the kernel's own, fixed by the grid. */
template <typename T>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_sumsq_kernel(const T *x, size_t n, size_t head, size_t nv, double *partial) {
    typedef zero__cuda_io<T> io;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    double acc = 0.0;
    zero__cuda_for_range(
        n, head, nv, t, stride,
        [&](size_t i) {
            float f[ZERO__CUDA_VEC];
            io::ld8(x + i, f);
#pragma unroll
            for (int k = 0; k < ZERO__CUDA_VEC; k++) acc += (double)f[k] * (double)f[k];
        },
        [&](size_t i) {
            const double v = (double)io::ld(x + i);
            acc += v * v;
        });
    acc = zero__cuda_block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

/* One block: add the partial sums in a fixed order, then out as the host backend
   does. A finite float squared is below 2^256, so the double sum of finite
   elements never overflows: it is non-finite exactly when an element is. */
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_sumsq_finish_kernel(const double *partial, unsigned n_partial, double *out) {
    double acc = 0.0;
    for (unsigned i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[i];
    acc = zero__cuda_block_sum(acc);
    if (threadIdx.x == 0) {
        out[0] += acc;
        if (!isfinite(acc) && !(out[1] >= 1.0)) out[1] = 1.0;
    }
}

/* What every segment of one Adam call shares. */
struct zero__cuda_adam_common {
    float *master, *m, *v;
    const void *grad;
    void *param;
    float beta1, beta2, omb1, omb2, eps, bc2, grad_scale;
    int adamw;
};

/* One segment as the kernel walks it: elements [off, off + n) of every buffer,
   planned as in zero__cuda_for_range; step = -lr / bc1, decay = -lr * wd as the
   host backend computes them. */
struct zero__cuda_adam_kseg {
    size_t off, n, head, nv;
    float step, decay, wd;
};

/* A launch's segments; segment k owns blocks [block_end[k-1], block_end[k]). */
struct zero__cuda_adam_batch {
    int n_segs;
    unsigned block_end[ZERO__CUDA_ADAM_BATCH];
    zero__cuda_adam_kseg seg[ZERO__CUDA_ADAM_BATCH];
};

/* DeepSpeed's Adam for one element, the host backend's operations in its order. */
static __device__ __forceinline__ void zero__cuda_adam1(const zero__cuda_adam_common &c, float wd, float step,
                                                        float decay, float &p, float &m, float &v, float g) {
    g = __fmul_rn(g, c.grad_scale);
    if (!c.adamw && wd != 0.0f) g = __fadd_rn(__fmul_rn(p, wd), g);
    m = __fmul_rn(m, c.beta1);
    m = __fadd_rn(__fmul_rn(g, c.omb1), m);
    v = __fmul_rn(v, c.beta2);
    v = __fadd_rn(__fmul_rn(__fmul_rn(g, g), c.omb2), v);
    const float d = __fadd_rn(__fmul_rn(__fsqrt_rn(v), c.bc2), c.eps);
    if (c.adamw && wd != 0.0f) p = __fadd_rn(__fmul_rn(decay, p), p);
    p = __fadd_rn(__fmul_rn(__fdiv_rn(m, d), step), p);
}

/* U groups of 8 elements at idx[0..U): every load first, then the math, then
   every store (loads cannot move past stores to other buffers by themselves). */
template <int U, typename G, typename P>
static __device__ __forceinline__ void zero__cuda_adam_groups(const zero__cuda_adam_common &c, float wd, float step,
                                                              float decay, float *master, float *mm, float *vv,
                                                              const G *grad, P *param, const size_t *idx) {
    constexpr bool cs = ZERO__CUDA_ADAM_STREAMING != 0;
    float p[U][ZERO__CUDA_VEC], m[U][ZERO__CUDA_VEC], v[U][ZERO__CUDA_VEC], g[U][ZERO__CUDA_VEC];
#pragma unroll
    for (int u = 0; u < U; u++) {
        zero__cuda_io<float>::ld8<cs>(master + idx[u], p[u]);
        zero__cuda_io<float>::ld8<cs>(mm + idx[u], m[u]);
        zero__cuda_io<float>::ld8<cs>(vv + idx[u], v[u]);
        zero__cuda_io<G>::template ld8<cs>(grad + idx[u], g[u]);
    }
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int e = 0; e < ZERO__CUDA_VEC; e++)
            zero__cuda_adam1(c, wd, step, decay, p[u][e], m[u][e], v[u][e], g[u][e]);
#pragma unroll
    for (int u = 0; u < U; u++) {
        zero__cuda_io<float>::st8<cs>(master + idx[u], p[u]);
        zero__cuda_io<float>::st8<cs>(mm + idx[u], m[u]);
        zero__cuda_io<float>::st8<cs>(vv + idx[u], v[u]);
        zero__cuda_io<P>::template st8<cs>(param + idx[u], p[u]);
    }
}

/* Both parameters by value in the launch (__grid_constant__: read in place from
   the parameter space, never copied to local memory). P: the param type, or
   zero__cuda_none when no compute-dtype copy is written. The walk is
   zero__cuda_for_range's, ZERO__CUDA_ADAM_UNROLL strides at a time. */
template <typename G, typename P>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_adam_kernel(const __grid_constant__ zero__cuda_adam_common c,
                       const __grid_constant__ zero__cuda_adam_batch b) {
    typedef zero__cuda_io<G> gio;
    typedef zero__cuda_io<P> pio;
    int k = 0;
    while (k + 1 < b.n_segs && blockIdx.x >= b.block_end[k]) k++;
    const zero__cuda_adam_kseg &sg = b.seg[k];
    const unsigned first = k ? b.block_end[k - 1] : 0u;
    const size_t t = (size_t)(blockIdx.x - first) * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)(b.block_end[k] - first) * blockDim.x;
    const float wd = sg.wd, step = sg.step, decay = sg.decay;
    float *master = c.master + sg.off, *mm = c.m + sg.off, *vv = c.v + sg.off;
    const G *grad = (const G *)c.grad + sg.off;
    P *param = (P *)c.param + sg.off;
    const size_t n = sg.n, head = sg.head, nv = sg.nv, body = ZERO__CUDA_VEC * nv, ns = n - body;
    size_t j = t;
#if ZERO__CUDA_ADAM_UNROLL > 1
    for (; j + stride < nv; j += 2 * stride) {
        const size_t idx[2] = {head + ZERO__CUDA_VEC * j, head + ZERO__CUDA_VEC * (j + stride)};
        zero__cuda_adam_groups<2>(c, wd, step, decay, master, mm, vv, grad, param, idx);
    }
#endif
    for (; j < nv; j += stride) {
        const size_t idx[1] = {head + ZERO__CUDA_VEC * j};
        zero__cuda_adam_groups<1>(c, wd, step, decay, master, mm, vv, grad, param, idx);
    }
    for (size_t e = t; e < ns; e += stride) {
        const size_t i = e < head ? e : e + body;
        float p = master[i], m = mm[i], v = vv[i];
        zero__cuda_adam1(c, wd, step, decay, p, m, v, gio::ld(grad + i));
        master[i] = p;
        mm[i] = m;
        vv[i] = v;
        pio::st(param + i, p);
    }
}

/* ---- kernels: launchers ---- */

static int zero__cuda_kernel_dtype(zero_dtype dt) {
    return dt == ZERO_DTYPE_FP32 || dt == ZERO_DTYPE_FP16 || dt == ZERO_DTYPE_BF16;
}

/* An argument the kernels cannot take: a dtype other than fp32/fp16/bf16, a NULL
   or misaligned buffer of n > 0 elements. */
static zero_result zero__cuda_check_arg(const char *fname, const char *what, const void *p, size_t n,
                                        zero_dtype dt, zero_error *err) {
    if (!zero__cuda_kernel_dtype(dt))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda %s: %s dtype %d (%s) is not fp32, fp16 or bf16",
                          fname, what, (int)dt, zero_dtype_name(dt));
    if (n && !p)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda %s: %s is NULL (%zu elements)", fname, what, n);
    if (n && (uintptr_t)p % zero_dtype_size(dt))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda %s: %s (%p) is not aligned to its %zu-byte elements",
                          fname, what, p, zero_dtype_size(dt));
    return ZERO_OK;
}

/* How a range of n elements splits (see zero__cuda_for_range): the first element
   h < 8 at which every array p[k] (elements of size[k] bytes) is 16-byte aligned,
   then nv whole groups of 8; no common h: everything element by element. */
static void zero__cuda_plan(const void *const *p, const size_t *size, int n_arrays, size_t n, size_t *head,
                            size_t *nv) {
    size_t h;
    *head = 0;
    *nv = 0;
    for (h = 0; h < ZERO__CUDA_VEC && h + ZERO__CUDA_VEC <= n; h++) {
        int k, ok = 1;
        for (k = 0; k < n_arrays && ok; k++) ok = ((uintptr_t)p[k] + h * size[k]) % 16u == 0;
        if (ok) {
            *head = h;
            *nv = (n - h) / ZERO__CUDA_VEC;
            return;
        }
    }
}

/* Blocks for a planned range: one thread per group of 8 or per single element,
   whichever count is larger, at most cap. */
static unsigned zero__cuda_blocks(size_t n, size_t nv, unsigned cap) {
    const size_t ns = n - ZERO__CUDA_VEC * nv, units = nv > ns ? nv : ns;
    const size_t b = (units + ZERO__CUDA_THREADS - 1) / ZERO__CUDA_THREADS;
    return b < 1 ? 1u : b > cap ? cap : (unsigned)b;
}

/* The grid of a grid-stride kernel: ZERO__CUDA_WAVES times the blocks of
   `kernel` this GPU holds at once. Whole waves: a partial last wave would leave
   multiprocessors idle while it runs (every block has the same work). */
template <typename K>
static zero_result zero__cuda_grid_cap(K kernel, unsigned *cap, zero_error *err) {
    int dev = 0, sms = 0, per_sm = 0;
    ZERO_CUDA_TRY(cudaGetDevice(&dev), err);
    ZERO_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    ZERO_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, ZERO__CUDA_THREADS, 0), err);
    *cap = (unsigned)(sms > 0 ? sms : 1) * (unsigned)(per_sm > 0 ? per_sm : 1) * ZERO__CUDA_WAVES;
    return ZERO_OK;
}

/* After a launch: its configuration error, if any, named after the kernel. */
static zero_result zero__cuda_launched(const char *kernel, zero_error *err) {
    return zero_cuda_check(cudaGetLastError(), kernel, __FILE__, __LINE__, err);
}

template <typename T>
static zero_result zero__cuda_scale_run(T *x, size_t n, float factor, cudaStream_t s, zero_error *err) {
    const void *arrays[1] = {x};
    const size_t size[1] = {sizeof(T)};
    size_t head, nv;
    unsigned cap = 1;
    zero_result r;
    if ((r = zero__cuda_grid_cap(zero__cuda_scale_kernel<T>, &cap, err)) != ZERO_OK) return r;
    zero__cuda_plan(arrays, size, 1, n, &head, &nv);
    zero__cuda_scale_kernel<T><<<zero__cuda_blocks(n, nv, cap), ZERO__CUDA_THREADS, 0, s>>>(x, n, head, nv, factor);
    return zero__cuda_launched("zero__cuda_scale_kernel (scale)", err);
}

static ZERO__UNUSED zero_result zero__cuda_k_scale(void *x, size_t n, zero_dtype dt, float factor, cudaStream_t s,
                                                   zero_error *err) {
    zero_result r;
    if ((r = zero__cuda_check_arg("scale", "x", x, n, dt, err)) != ZERO_OK) return r;
    if (!n) {
        zero__ok(err);
        return ZERO_OK;
    }
    switch (dt) {
    case ZERO_DTYPE_FP16: return zero__cuda_scale_run((__half *)x, n, factor, s, err);
    case ZERO_DTYPE_BF16: return zero__cuda_scale_run((__nv_bfloat16 *)x, n, factor, s, err);
    default: return zero__cuda_scale_run((float *)x, n, factor, s, err);
    }
}

template <typename D, typename S>
static zero_result zero__cuda_convert_run(D *dst, const S *src, size_t n, int accumulate, cudaStream_t s,
                                          zero_error *err) {
    const void *arrays[2] = {dst, src};
    const size_t size[2] = {sizeof(D), sizeof(S)};
    size_t head, nv;
    unsigned cap = 1;
    zero_result r;
    if ((r = zero__cuda_grid_cap(zero__cuda_convert_kernel<D, S>, &cap, err)) != ZERO_OK) return r;
    zero__cuda_plan(arrays, size, 2, n, &head, &nv);
    zero__cuda_convert_kernel<D, S>
        <<<zero__cuda_blocks(n, nv, cap), ZERO__CUDA_THREADS, 0, s>>>(dst, src, n, head, nv, accumulate);
    return zero__cuda_launched("zero__cuda_convert_kernel (convert)", err);
}

template <typename D>
static zero_result zero__cuda_convert_to(D *dst, const void *src, zero_dtype sdt, size_t n, int accumulate,
                                         cudaStream_t s, zero_error *err) {
    switch (sdt) {
    case ZERO_DTYPE_FP16: return zero__cuda_convert_run(dst, (const __half *)src, n, accumulate, s, err);
    case ZERO_DTYPE_BF16: return zero__cuda_convert_run(dst, (const __nv_bfloat16 *)src, n, accumulate, s, err);
    default: return zero__cuda_convert_run(dst, (const float *)src, n, accumulate, s, err);
    }
}

/* dst and src may be the same buffer of the same dtype, not otherwise overlap
   (as the host backend). A plain copy between equal dtypes is a memcpy, bits kept. */
static ZERO__UNUSED zero_result zero__cuda_k_convert(void *dst, zero_dtype ddt, const void *src, zero_dtype sdt,
                                                     size_t n, int accumulate, cudaStream_t s, zero_error *err) {
    zero_result r;
    if ((r = zero__cuda_check_arg("convert", "dst", dst, n, ddt, err)) != ZERO_OK ||
        (r = zero__cuda_check_arg("convert", "src", src, n, sdt, err)) != ZERO_OK)
        return r;
    if (!n || (!accumulate && ddt == sdt && dst == src)) {
        zero__ok(err);
        return ZERO_OK;
    }
    if (!accumulate && ddt == sdt) {
        ZERO_CUDA_TRY(cudaMemcpyAsync(dst, src, n * zero_dtype_size(ddt), cudaMemcpyDefault, s), err);
        return ZERO_OK;
    }
    switch (ddt) {
    case ZERO_DTYPE_FP16: return zero__cuda_convert_to((__half *)dst, src, sdt, n, accumulate, s, err);
    case ZERO_DTYPE_BF16: return zero__cuda_convert_to((__nv_bfloat16 *)dst, src, sdt, n, accumulate, s, err);
    default: return zero__cuda_convert_to((float *)dst, src, sdt, n, accumulate, s, err);
    }
}

template <typename T>
static zero_result zero__cuda_sumsq_run(const T *x, size_t n, double *out, double *scratch, size_t scratch_doubles,
                                        cudaStream_t s, zero_error *err) {
    const void *arrays[1] = {x};
    const size_t size[1] = {sizeof(T)};
    size_t head, nv;
    unsigned grid;
    zero_result r;
    zero__cuda_plan(arrays, size, 1, n, &head, &nv);
    grid = zero__cuda_blocks(n, nv, ZERO__CUDA_SUMSQ_BLOCKS);
    if (!scratch || scratch_doubles < grid)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "cuda sumsq: scratch of %zu doubles at %p, %u needed (ZERO__CUDA_SUMSQ_SCRATCH)",
                          scratch_doubles, (void *)scratch, grid);
    zero__cuda_sumsq_kernel<T><<<grid, ZERO__CUDA_THREADS, 0, s>>>(x, n, head, nv, scratch);
    if ((r = zero__cuda_launched("zero__cuda_sumsq_kernel (sumsq)", err)) != ZERO_OK) return r;
    zero__cuda_sumsq_finish_kernel<<<1, ZERO__CUDA_THREADS, 0, s>>>(scratch, grid, out);
    return zero__cuda_launched("zero__cuda_sumsq_finish_kernel (sumsq)", err);
}

/* out and scratch: device memory; scratch holds ZERO__CUDA_SUMSQ_SCRATCH doubles
   and is in use until the launch ends (one sumsq at a time per scratch, which
   calls on one stream are). The grid, and so the order of the additions, depends
   on n and x's alignment alone: the same call gives the same bits on any GPU. */
static ZERO__UNUSED zero_result zero__cuda_k_sumsq(const void *x, size_t n, zero_dtype dt, double *out,
                                                   double *scratch, size_t scratch_doubles, cudaStream_t s,
                                                   zero_error *err) {
    zero_result r;
    if ((r = zero__cuda_check_arg("sumsq", "x", x, n, dt, err)) != ZERO_OK) return r;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda sumsq: out is NULL");
    if (!n) {
        zero__ok(err);
        return ZERO_OK;
    }
    switch (dt) {
    case ZERO_DTYPE_FP16: return zero__cuda_sumsq_run((const __half *)x, n, out, scratch, scratch_doubles, s, err);
    case ZERO_DTYPE_BF16:
        return zero__cuda_sumsq_run((const __nv_bfloat16 *)x, n, out, scratch, scratch_doubles, s, err);
    default: return zero__cuda_sumsq_run((const float *)x, n, out, scratch, scratch_doubles, s, err);
    }
}

/* One launch per ZERO__CUDA_ADAM_BATCH non-empty segments; a segment gets blocks
   in proportion to its size, at least one and at most one full wave of the GPU,
   so one launch covers many small tensors and a large one fills the GPU. */
template <typename G, typename P>
static zero_result zero__cuda_adam_run(const zero_adam_args *a, const zero__cuda_adam_common &c, cudaStream_t s,
                                       zero_error *err) {
    const int store = c.param != NULL;
    const size_t size[5] = {4, 4, 4, sizeof(G), sizeof(P)};
    zero__cuda_adam_batch b;
    unsigned cap = 1, total = 0;
    int k;
    zero_result r;
    if ((r = zero__cuda_grid_cap(zero__cuda_adam_kernel<G, P>, &cap, err)) != ZERO_OK) return r;
    memset(&b, 0, sizeof b);
    for (k = 0; k < a->n_segs; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        if (sg->count > 0) {
            zero__cuda_adam_kseg *q = &b.seg[b.n_segs];
            const size_t off = (size_t)sg->offset;
            const void *arrays[5] = {c.master + off, c.m + off, c.v + off, (const G *)c.grad + off,
                                     store ? (const void *)((const P *)c.param + off) : NULL};
            q->off = off;
            q->n = (size_t)sg->count;
            zero__cuda_plan(arrays, size, store ? 5 : 4, q->n, &q->head, &q->nv);
            q->wd = sg->weight_decay;
            q->step = -sg->lr / a->bc1;
            q->decay = -sg->lr * sg->weight_decay;
            total += zero__cuda_blocks(q->n, q->nv, cap);
            b.block_end[b.n_segs++] = total;
        }
        if (b.n_segs == ZERO__CUDA_ADAM_BATCH || (k + 1 == a->n_segs && b.n_segs > 0)) {
            zero__cuda_adam_kernel<G, P><<<total, ZERO__CUDA_THREADS, 0, s>>>(c, b);
            if ((r = zero__cuda_launched("zero__cuda_adam_kernel (adam)", err)) != ZERO_OK) return r;
            memset(&b, 0, sizeof b);
            total = 0;
        }
    }
    return ZERO_OK;
}

template <typename G>
static zero_result zero__cuda_adam_grad(const zero_adam_args *a, const zero__cuda_adam_common &c, cudaStream_t s,
                                        zero_error *err) {
    if (!c.param) return zero__cuda_adam_run<G, zero__cuda_none>(a, c, s, err);
    switch (a->param_dtype) {
    case ZERO_DTYPE_FP16: return zero__cuda_adam_run<G, __half>(a, c, s, err);
    case ZERO_DTYPE_BF16: return zero__cuda_adam_run<G, __nv_bfloat16>(a, c, s, err);
    default: return zero__cuda_adam_run<G, float>(a, c, s, err);
    }
}

static ZERO__UNUSED zero_result zero__cuda_k_adam(const zero_adam_args *a, cudaStream_t s, zero_error *err) {
    zero__cuda_adam_common c;
    int64_t end = 0;
    int k;
    zero_result r;
    if (!a) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda adam: args is NULL");
    if (a->n_segs < 0 || (a->n_segs > 0 && !a->segs))
        return zero__fail(err, a->n_segs < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, NULL, 0, 0,
                          "cuda adam: %d segments at %p", a->n_segs, (const void *)a->segs);
    for (k = 0; k < a->n_segs; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        if (sg->offset < 0 || sg->count < 0 || sg->offset > INT64_MAX - sg->count)
            return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda adam: segment %d has offset %lld, count %lld", k,
                              (long long)sg->offset, (long long)sg->count);
        if (sg->count > 0 && sg->offset + sg->count > end) end = sg->offset + sg->count;
    }
    if ((r = zero__cuda_check_arg("adam", "master", a->master, (size_t)end, ZERO_DTYPE_FP32, err)) != ZERO_OK ||
        (r = zero__cuda_check_arg("adam", "m", a->m, (size_t)end, ZERO_DTYPE_FP32, err)) != ZERO_OK ||
        (r = zero__cuda_check_arg("adam", "v", a->v, (size_t)end, ZERO_DTYPE_FP32, err)) != ZERO_OK ||
        (r = zero__cuda_check_arg("adam", "grad", a->grad, (size_t)end, a->grad_dtype, err)) != ZERO_OK ||
        (a->param && (r = zero__cuda_check_arg("adam", "param", a->param, (size_t)end, a->param_dtype, err)) != ZERO_OK))
        return r;
    if (!end) {
        zero__ok(err);
        return ZERO_OK;
    }
    memset(&c, 0, sizeof c);
    c.master = a->master;
    c.m = a->m;
    c.v = a->v;
    c.grad = a->grad;
    /* fp32 params that are the master weights: nothing to write */
    c.param = a->param && !(a->param_dtype == ZERO_DTYPE_FP32 && a->param == (void *)a->master) ? a->param : NULL;
    c.beta1 = a->beta1;
    c.beta2 = a->beta2;
    c.omb1 = 1.0f - a->beta1;
    c.omb2 = 1.0f - a->beta2;
    c.eps = a->eps;
    c.bc2 = a->bc2;
    c.grad_scale = a->grad_scale;
    c.adamw = a->adamw;
    switch (a->grad_dtype) {
    case ZERO_DTYPE_FP16: return zero__cuda_adam_grad<__half>(a, c, s, err);
    case ZERO_DTYPE_BF16: return zero__cuda_adam_grad<__nv_bfloat16>(a, c, s, err);
    default: return zero__cuda_adam_grad<float>(a, c, s, err);
    }
}
