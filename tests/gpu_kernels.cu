// gpu_kernels.cu - the CUDA backend's kernels (zero_cuda.cuh: scale, convert,
// sumsq, adam, and the batched sumsq_segs and adam_multi) against double-precision host references and against the host
// backend of zero.h on the same inputs, on fresh random data every run.
//
// What is checked, and how close:
//   scale, convert: bit for bit equal to the host backend's function (fp32
//     arithmetic, one rounding to the output dtype, round to nearest even), and
//     within half an ulp of the output dtype of the double-precision result
//     (relative 2^-24 fp32, 2^-11 fp16, 2^-8 bf16; plus half the smallest
//     subnormal absolute), one more fp32 rounding for accumulate;
//   sumsq: out[0] within 1e-12 relative of a compensated double sum (every
//     square is exact in double, only the order of the additions differs),
//     bit for bit the same twice (deterministic), out[1] set to max(out[1], 1)
//     by an inf or a nan and untouched otherwise;
//   adam: master, m, v within 2 fp32 ulp of the host backend's zero_backend
//     adam on the same inputs (the kernel uses the host's operations in its
//     order without FMA contraction, so it is expected bit for bit: the number
//     of elements that differ at all is printed), and within 8 u (u = 2^-24)
//     of the sum of the magnitudes of each formula's terms against a double
//     evaluation (for the weights, the update's term also scaled by how much
//     v's rounding moves it through the sqrt); the compute-dtype param exactly
//     the GPU master rounded to it.
//   sumsq_segs: every segment's out bit for bit sumsq's on that segment alone
//     (400 segments of 0, 1, a few to 300000 elements, inf and nan in some),
//     flags max(flag, 1) exactly where an inf or nan is, empty ones untouched;
//   lion, adagrad, sgd (zero_adam_args.kind): master and the state the rule
//     keeps bit for bit (0 ulp) the host backend's adam on the same inputs, the
//     param exactly round(host master), for 10 rule settings (Lion and Adagrad
//     twice, SGD with momentum 0 / 0.9 / 0.5, dampening 0 / 0.1 / 0.25, nesterov,
//     the first step and a later one) x fp32/fp16/bf16 grads x every param kind,
//     on random segment tables (odd sizes, weight decay 0, > 0 and < 0, grad_scale
//     1 and not) and single segments at unaligned starts; the state a rule does
//     not keep is NULL on both sides;
//   lamb (two passes): m, v, master and the param bit for bit the host
//     backend's, each segment's sums of p^2 and u^2 within 1e-12 of the host's
//     and the same bits when run again, with scratch for many blocks and for
//     32 (many launches); every grad dtype x param kind, eps inside and
//     outside the root, random segment tables and single segments;
//   adam_multi: master, m, v and params bit for bit adam called per call (40
//     calls of 20 segments, dtypes and grad_scale changing between runs; then
//     the same with the rule and its hyperparameters changing too);
//   bf16 storage (zero_adam_args.master_dtype, state_dtype): the kernels' bf16
//     store bit for bit zero_f32_to_bf16 (NaNs of both signs with their payloads,
//     infinities, overflow, ties, subnormals, random bit patterns; 16-byte groups
//     and single elements); every rule (Adam, AdamW, Lion, Adagrad, SGD with and
//     without momentum, Lamb's two passes, Muon's pass 1 and step with the AdamW
//     segments beside them) on bf16 master and state (Muon aside: its state is
//     fp32) and on a bf16 master with fp32 state x the dtypes they take (fp32 and
//     bf16 grads x no param, the master as the param, a bf16 param), and on fp32
//     (a control: every grad dtype, one param kind each): master, the kept state
//     and the param bit for bit the host backend's (the param rounded from the
//     fp32 result), Lamb's sums within 1e-12; random segment
//     tables in one call and cut into adam_multi calls, each array at its own
//     shift (other 16-byte heads, or none in common), single segments at
//     unaligned starts, Lamb with a small scratch; adam_multi over calls of the
//     three storages in runs; refused: bf16 state under Muon's segments, an fp32
//     master with bf16 state, other storage dtypes, and beside a bf16 master or
//     state an fp16 grad or an fp32 or fp16 param copy (every rule and pass, the
//     message naming them; fp32 storage takes them);
//   Every output buffer is poisoned first (all bits set: a NaN in each dtype):
//   elements inside the range must be written, elements outside (guards around
//   every range, gaps between Adam segments) must keep the poison.
//   Sizes 0, 1, 7, 8, 9, 1000, 2^20+3, unaligned starts (common and no common
//   16-byte alignment), 200 Adam segments of random sizes in one call, and
//   (full mode) ranges past 2^31 elements checked on the GPU.
// ZERO_TEST_QUICK=1 (the compute-sanitizer runs) shrinks sizes and skips the
// large ranges and the throughput print.
// Run alone (GPU machine): make test-gpu T=gpu_kernels
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "zero_test.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

static int quick;

#define CU(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            zt_fail++;                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            return;                                                                            \
        }                                                                                      \
    } while (0)

static const zero_dtype dtypes[3] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16};

// ---- host side: element sizes, sums, poison, random values ----

static size_t dsize(zero_dtype dt) { return zero_dtype_size(dt); }

// Neumaier's compensated sum: the reference for sumsq, far more accurate than
// the sequential double sum (whose error on 2^20 terms reaches 1e-12 relative)
struct csum {
    double s = 0, c = 0;
    void add(double x) {
        double t = s + x;
        c += fabs(s) >= fabs(x) ? (s - t) + x : (x - t) + s;
        s = t;
    }
    double get() const { return s + c; }
};
static int is_poison(const void *p, zero_dtype dt, size_t i) {
    const unsigned char *c = (const unsigned char *)p + i * dsize(dt);
    for (size_t k = 0; k < dsize(dt); k++)
        if (c[k] != 0xFF) return 0;
    return 1;
}
// half an ulp of dt, relative, and half its smallest subnormal
static double half_ulp(zero_dtype dt) {
    return dt == ZERO_DTYPE_FP16 ? ldexp(1, -11) : dt == ZERO_DTYPE_BF16 ? ldexp(1, -8) : ldexp(1, -24);
}
static double half_tiny(zero_dtype dt) {
    return dt == ZERO_DTYPE_FP16 ? ldexp(1, -25) : dt == ZERO_DTYPE_BF16 ? ldexp(1, -134) : ldexp(1, -150);
}
// a random value of dt: sign * [1, 2) * 2^[-6, 6], zero now and then
static float rand_val(zero_dtype dt) {
    if (zt_rand_int(0, 63) == 0) return 0.0f;
    double v = zt_rand_range(1, 2) * ldexp(1, (int)zt_rand_int(-6, 6));
    return zt_round(dt, (float)(zt_rand_int(0, 1) ? v : -v));
}

// A device range of n elements at element `off` of an allocation with GUARD poisoned
// guard elements on each side; host mirror of the whole allocation.
#define GUARD 16
struct buf {
    zero_dtype dt;
    size_t n, off, total;
    std::vector<unsigned char> h;
    void *d = nullptr;
    buf(zero_dtype dt_, size_t n_, size_t off_) : dt(dt_), n(n_), off(off_), total(2 * GUARD + off_ + n_) {
        h.assign(total * dsize(dt), 0xFF);
    }
    ~buf() { if (d) cudaFree(d); }
    void *hp() { return h.data() + (GUARD + off) * dsize(dt); }   // host range start
    void *dp() { return (char *)d + (GUARD + off) * dsize(dt); }  // device range start
    cudaError_t up() {
        cudaError_t e = d ? cudaSuccess : cudaMalloc(&d, total * dsize(dt));
        return e != cudaSuccess ? e : cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice);
    }
    cudaError_t down(std::vector<unsigned char> &out) {
        out.resize(h.size());
        return cudaMemcpy(out.data(), d, h.size(), cudaMemcpyDeviceToHost);
    }
    void fill_random() { for (size_t i = 0; i < n; i++) zt_store(hp(), dt, i, rand_val(dt)); }
};

// Guards untouched: elements [0, GUARD + off) and [GUARD + off + n, total) of got still poison.
static size_t guard_damage(const std::vector<unsigned char> &got, const buf &b) {
    size_t bad = 0;
    for (size_t i = 0; i < b.total; i++)
        if ((i < GUARD + b.off || i >= GUARD + b.off + b.n) && !is_poison(got.data(), b.dt, i)) bad++;
    return bad;
}

// ---- scale ----

static void test_scale(zero_dtype dt, size_t n, size_t off, float factor) {
    buf x(dt, n, off);
    std::vector<unsigned char> got;
    zero_error err;
    x.fill_random();
    CU(x.up());
    CHECK_EQ_INT(zero__cuda_k_scale(x.dp(), n, dt, factor, 0, &err), ZERO_OK);
    CU(cudaDeviceSynchronize());
    CU(x.down(got));
    const void *g = got.data() + (GUARD + off) * dsize(dt);
    size_t bad = 0, far = 0;
    double max_rel = 0;
    for (size_t i = 0; i < n; i++) {
        float in = zt_load(x.hp(), dt, i);
        unsigned char want[4];
        zt_store(want, dt, 0, in * factor);  // the host backend's function
        if (memcmp(want, (const char *)g + i * dsize(dt), dsize(dt))) bad++;
        double ref = (double)in * factor, o = zt_load(g, dt, i), e = fabs(o - ref);
        if (!(e <= half_ulp(dt) * fabs(ref) + half_tiny(dt))) far++;
        if (ref != 0) max_rel = std::max(max_rel, e / fabs(ref));
    }
    CHECKF(bad == 0 && far == 0 && guard_damage(got, x) == 0,
           "scale %s n %zu off %zu factor %g: %zu differ from the host backend, %zu beyond half an ulp "
           "(max rel %.3g), %zu guard elements written",
           zero_dtype_name(dt), n, off, factor, bad, far, max_rel, guard_damage(got, x));
}

// ---- convert ----

static void test_convert(zero_dtype ddt, zero_dtype sdt, size_t n, size_t doff, size_t soff, int acc) {
    buf dst(ddt, n, doff), src(sdt, n, soff);
    std::vector<unsigned char> got;
    zero_error err;
    src.fill_random();
    if (acc) dst.fill_random();  // else: poison, every element must be written
    CU(dst.up());
    CU(src.up());
    CHECK_EQ_INT(zero__cuda_k_convert(dst.dp(), ddt, src.dp(), sdt, n, acc, 0, &err), ZERO_OK);
    CU(cudaDeviceSynchronize());
    CU(dst.down(got));
    const void *g = got.data() + (GUARD + doff) * dsize(ddt);
    size_t bad = 0, far = 0;
    for (size_t i = 0; i < n; i++) {
        float s = zt_load(src.hp(), sdt, i), d = acc ? zt_load(dst.hp(), ddt, i) : 0.0f;
        unsigned char want[4];
        zt_store(want, ddt, 0, acc ? d + s : s);
        if (memcmp(want, (const char *)g + i * dsize(ddt), dsize(ddt))) bad++;
        double ref = (double)d + (double)s, o = zt_load(g, ddt, i);
        double tol = (acc ? ldexp(1, -24) + half_ulp(ddt) : half_ulp(ddt)) * fabs(ref) + half_tiny(ddt);
        if (!(fabs(o - ref) <= tol)) far++;
    }
    CHECKF(bad == 0 && far == 0 && guard_damage(got, dst) == 0,
           "convert %s <- %s n %zu offsets %zu/%zu accumulate %d: %zu differ from the host backend, "
           "%zu beyond tolerance, %zu guard elements written",
           zero_dtype_name(ddt), zero_dtype_name(sdt), n, doff, soff, acc, bad, far, guard_damage(got, dst));
}

// in place: dst == src, same dtype, accumulate (x = 2x) and plain (nothing to do)
static void test_convert_inplace(zero_dtype dt, size_t n, size_t off) {
    buf x(dt, n, off);
    std::vector<unsigned char> got;
    zero_error err;
    x.fill_random();
    CU(x.up());
    CHECK_EQ_INT(zero__cuda_k_convert(x.dp(), dt, x.dp(), dt, n, 1, 0, &err), ZERO_OK);
    CHECK_EQ_INT(zero__cuda_k_convert(x.dp(), dt, x.dp(), dt, n, 0, 0, &err), ZERO_OK);
    CU(cudaDeviceSynchronize());
    CU(x.down(got));
    const void *g = got.data() + (GUARD + off) * dsize(dt);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float v = zt_load(x.hp(), dt, i);
        if (zt_load(g, dt, i) != zt_round(dt, v + v)) bad++;
    }
    CHECKF(bad == 0 && guard_damage(got, x) == 0, "convert in place %s n %zu: %zu wrong", zero_dtype_name(dt), n, bad);
}

// ---- sumsq ----

static void sumsq_run(const void *dx, size_t n, zero_dtype dt, double *dout, double *scratch, const double in[2],
                      double res[2], zero_result *r) {
    zero_error err;
    res[0] = res[1] = -12345;
    if (cudaMemcpy(dout, in, 2 * sizeof(double), cudaMemcpyHostToDevice) != cudaSuccess) return;
    *r = zero__cuda_k_sumsq(dx, n, dt, dout, scratch, ZERO__CUDA_SUMSQ_SCRATCH, 0, &err);
    if (*r != ZERO_OK) fprintf(stderr, "sumsq: %s\n", err.msg);
    if (cudaMemcpy(res, dout, 2 * sizeof(double), cudaMemcpyDeviceToHost) != cudaSuccess) res[0] = -1;
}

static void test_sumsq(zero_dtype dt, size_t n, size_t off, double *dout, double *scratch) {
    buf x(dt, n, off);
    double in[2] = {zt_rand_range(0, 4), 0.5}, a[2], b[2];
    csum ref;
    zero_result r1 = ZERO_ERR_STATE, r2 = ZERO_ERR_STATE;
    x.fill_random();
    CU(x.up());
    for (size_t i = 0; i < n; i++) {
        double v = zt_load(x.hp(), dt, i);
        ref.add(v * v);
    }
    ref.add(in[0]);
    sumsq_run(x.dp(), n, dt, dout, scratch, in, a, &r1);
    sumsq_run(x.dp(), n, dt, dout, scratch, in, b, &r2);
    CHECK(r1 == ZERO_OK && r2 == ZERO_OK);
    CHECKF(zt_near(a[0], ref.get(), 1e-12) && a[1] == 0.5, "sumsq %s n %zu off %zu: got %.17g (flag %g) want %.17g",
           zero_dtype_name(dt), n, off, a[0], a[1], ref.get());
    CHECKF(memcmp(a, b, sizeof a) == 0, "sumsq %s n %zu: two runs differ: %.17g vs %.17g", zero_dtype_name(dt), n,
           a[0], b[0]);
    if (n == 0) CHECK(memcmp(a, in, sizeof a) == 0);
    if (n == 0) return;
    // an inf, then a nan, at a random element: the flag goes to max(flag, 1), the sum is not finite
    for (int kind = 0; kind < 2; kind++) {
        size_t at = (size_t)zt_rand_int(0, (long)n - 1);
        float bad = kind ? NAN : (zt_rand_int(0, 1) ? INFINITY : -INFINITY);
        unsigned char v[4];
        zt_store(v, dt, 0, bad);
        CU(cudaMemcpy((char *)x.dp() + at * dsize(dt), v, dsize(dt), cudaMemcpyHostToDevice));
        double flag_in[2] = {1.0, kind ? 3.0 : 0.25};
        sumsq_run(x.dp(), n, dt, dout, scratch, flag_in, a, &r1);
        CHECKF(r1 == ZERO_OK && !isfinite(a[0]) && a[1] == (kind ? 3.0 : 1.0),
               "sumsq %s n %zu with %s at %zu: sum %g flag %g", zero_dtype_name(dt), n, kind ? "nan" : "inf", at, a[0],
               a[1]);
        CU(cudaMemcpy((char *)x.dp() + at * dsize(dt), (char *)x.hp() + at * dsize(dt), dsize(dt),
                      cudaMemcpyHostToDevice));
    }
}

// ---- adam ----

enum { P_NONE, P_FP32, P_MASTER, P_FP16, P_BF16, P_COUNT };
static const char *const pmode_name[P_COUNT] = {"none", "fp32", "fp32=master", "fp16", "bf16"};

struct host_adam_call {
    const zero_adam_args *a;
    zero_result r;
    zero_error err;
};
static zero_result host_adam_fn(const zero_backend *be, void *arg) {
    host_adam_call *c = (host_adam_call *)arg;
    c->r = be->adam(be->ctx, c->a, ZERO_STREAM_COMPUTE, &c->err);
    return c->r;
}

// distance in ulps between two finite floats of the same sign (else large)
static double ulps(float a, float b) {
    if (zt_float_bits(a) == zt_float_bits(b)) return 0;
    if (isnan(a) || isnan(b)) return 1e30;
    int64_t ia = (int64_t)zt_float_bits(a), ib = (int64_t)zt_float_bits(b);
    if (ia & 0x80000000) ia = -(ia & 0x7FFFFFFF);
    if (ib & 0x80000000) ib = -(ib & 0x7FFFFFFF);
    return (double)(ia > ib ? ia - ib : ib - ia);
}

static void test_adam(zero_dtype gdt, int pmode, int adamw, const std::vector<zero_adam_seg> &segs, const char *what) {
    int64_t end = 0;
    for (auto &s : segs) end = std::max(end, s.offset + s.count);
    const size_t N = (size_t)end + 5;  // a few untouched elements past the last segment
    const zero_dtype pdt = pmode == P_FP16 ? ZERO_DTYPE_FP16 : pmode == P_BF16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    std::vector<float> master(N), m(N), v(N);
    std::vector<unsigned char> grad(N * dsize(gdt)), param(N * dsize(pdt), 0xFF);
    std::vector<char> inside(N, 0);
    for (auto &s : segs)
        for (int64_t i = s.offset; i < s.offset + s.count; i++) inside[i] = 1;
    for (size_t i = 0; i < N; i++) {
        float nanbits;
        uint32_t all = 0xFFFFFFFFu;
        memcpy(&nanbits, &all, 4);
        if (inside[i]) {
            master[i] = (float)zt_rand_range(-2, 2);
            // Adam's state as training leaves it: sqrt(v) of the order of |m| or larger
            m[i] = (float)zt_rand_range(-0.1, 0.1);
            v[i] = (float)((double)m[i] * m[i] * zt_rand_range(1, 10) + zt_rand_range(0, 1e-6));
            if (zt_rand_int(0, 15) == 0) m[i] = v[i] = 0.0f;  // a first step
            zt_store(grad.data(), gdt, i, rand_val(gdt));
        } else {
            master[i] = m[i] = v[i] = nanbits;
            zt_store(grad.data(), gdt, i, rand_val(gdt));
        }
    }
    const int t = (int)zt_rand_int(1, 1000);
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.beta1 = 0.9f;
    a.beta2 = 0.999f;
    a.eps = 1e-8f;
    a.bc1 = (float)(1.0 - pow(0.9, t));
    a.bc2 = (float)(1.0 / sqrt(1.0 - pow(0.999, t)));
    a.grad_scale = (float)ldexp(zt_rand_range(0.5, 1), -(int)zt_rand_int(0, 10));
    a.adamw = adamw;
    a.grad_dtype = gdt;
    a.param_dtype = pdt;
    a.segs = segs.data();
    a.n_segs = (int)segs.size();

    // host backend on copies
    std::vector<float> hm = master, hmm = m, hv = v;
    host_adam_call hc;
    hc.a = &a;
    hc.r = ZERO_ERR_STATE;
    zero_adam_args ha = a;
    ha.master = hm.data();
    ha.m = hmm.data();
    ha.v = hv.data();
    ha.grad = grad.data();
    ha.param = NULL;  // the host's rounding of master is checked directly below
    hc.a = &ha;
    zero_error herr;
    CHECK_EQ_INT(zero_host_run(1, host_adam_fn, &hc, &herr), ZERO_OK);

    // device
    float *dmaster = nullptr, *dm = nullptr, *dv = nullptr;
    void *dgrad = nullptr, *dparam = nullptr;
    CU(cudaMalloc(&dmaster, N * 4));
    CU(cudaMalloc(&dm, N * 4));
    CU(cudaMalloc(&dv, N * 4));
    CU(cudaMalloc(&dgrad, grad.size()));
    CU(cudaMemcpy(dmaster, master.data(), N * 4, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dm, m.data(), N * 4, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dv, v.data(), N * 4, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dgrad, grad.data(), grad.size(), cudaMemcpyHostToDevice));
    if (pmode != P_NONE && pmode != P_MASTER) {
        CU(cudaMalloc(&dparam, param.size()));
        CU(cudaMemcpy(dparam, param.data(), param.size(), cudaMemcpyHostToDevice));
    }
    zero_adam_args da = a;
    da.master = dmaster;
    da.m = dm;
    da.v = dv;
    da.grad = dgrad;
    da.param = pmode == P_NONE ? NULL : pmode == P_MASTER ? (void *)dmaster : dparam;
    zero_error err;
    zero_result r = zero__cuda_k_adam(&da, NULL, 0, 0, &err);
    CHECKF(r == ZERO_OK, "adam: %s", err.msg);
    CU(cudaDeviceSynchronize());
    std::vector<float> gm(N), gmm(N), gv(N);
    std::vector<unsigned char> gp(param.size(), 0xFF);
    CU(cudaMemcpy(gm.data(), dmaster, N * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gmm.data(), dm, N * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gv.data(), dv, N * 4, cudaMemcpyDeviceToHost));
    if (dparam) CU(cudaMemcpy(gp.data(), dparam, gp.size(), cudaMemcpyDeviceToHost));
    cudaFree(dmaster), cudaFree(dm), cudaFree(dv), cudaFree(dgrad);
    if (dparam) cudaFree(dparam);

    // compare
    size_t differ = 0, far_host = 0, far_ref = 0, outside = 0, pbad = 0, n_in = 0;
    double max_ulps = 0;
    const double u = ldexp(1, -24), b1 = a.beta1, b2 = a.beta2;
    std::vector<double> seg_lr(N, 0), seg_wd(N, 0);
    for (auto &s : segs)
        for (int64_t i = s.offset; i < s.offset + s.count; i++) seg_lr[i] = s.lr, seg_wd[i] = s.weight_decay;
    for (size_t i = 0; i < N; i++) {
        if (!inside[i]) {
            if (zt_float_bits(gm[i]) != 0xFFFFFFFFu || zt_float_bits(gmm[i]) != 0xFFFFFFFFu || zt_float_bits(gv[i]) != 0xFFFFFFFFu) outside++;
            if (dparam && !is_poison(gp.data(), pdt, i)) outside++;
            continue;
        }
        n_in++;
        const float got[3] = {gm[i], gmm[i], gv[i]}, hst[3] = {hm[i], hmm[i], hv[i]};
        for (int k = 0; k < 3; k++) {
            double d = ulps(got[k], hst[k]);
            if (d > 0) differ++;
            if (d > 2) far_host++;
            max_ulps = std::max(max_ulps, d);
        }
        // double evaluation from the same fp32 inputs, with the magnitude of each formula's terms
        double lr = (double)(float)seg_lr[i], wd = (double)(float)seg_wd[i], p = master[i];
        double g = (double)zt_load(grad.data(), gdt, i) * a.grad_scale, gmag = fabs(g);
        if (!adamw && wd != 0) g += wd * p, gmag += fabs(wd * p);
        double mr = b1 * m[i] + (1 - b1) * g, mmag = fabs(b1 * m[i]) + (1 - b1) * gmag;
        double vr = b2 * v[i] + (1 - b2) * g * g, vmag = b2 * v[i] + (1 - b2) * gmag * gmag;
        double den = sqrt(vr) * a.bc2 + a.eps;
        double pr = p, pmag = fabs(p);
        if (adamw && wd != 0) pr -= lr * wd * p, pmag += fabs(lr * wd * p);
        pr -= lr / a.bc1 * mr / den;
        // the update's terms, and its sensitivity to v's rounding (vmag / vr, through sqrt)
        pmag += lr / a.bc1 * mmag / den * (vr > 0 ? 1 + vmag / vr : 1);
        if (!(fabs(gmm[i] - mr) <= 8 * u * mmag + 1e-45) || !(fabs(gv[i] - vr) <= 8 * u * vmag + 1e-45) ||
            !(fabs(gm[i] - pr) <= 8 * u * pmag))
            far_ref++;
        if (dparam) {
            unsigned char want[4];
            zt_store(want, pdt, 0, gm[i]);
            if (memcmp(gp.data() + i * dsize(pdt), want, dsize(pdt))) pbad++;
        }
    }
    printf("adam %-26s grad %s param %-11s adamw %d: %zu segments, %zu elements, %zu values differ from the host "
           "backend (max %.0f ulp)\n",
           what, zero_dtype_name(gdt), pmode_name[pmode], adamw, segs.size(), n_in, differ, max_ulps);
    CHECKF(far_host == 0 && far_ref == 0 && outside == 0 && pbad == 0,
           "adam %s grad %s param %s adamw %d: %zu beyond 2 ulp of the host backend, %zu beyond 8u of the double "
           "reference, %zu outside elements written, %zu params not round(master)",
           what, zero_dtype_name(gdt), pmode_name[pmode], adamw, far_host, far_ref, outside, pbad);
}

static zero_adam_seg seg(int64_t off, int64_t count) {
    static const float wds[3] = {0.0f, 0.01f, 0.1f};
    zero_adam_seg s;
    memset(&s, 0, sizeof s);  // (muon and any later field: 0)
    s.offset = off;
    s.count = count;
    s.lr = (float)(1e-4 * pow(100.0, zt_rand01()));
    s.weight_decay = wds[zt_rand_int(0, 2)];
    return s;
}

// n segments of random sizes (1 included, some empty) separated by random gaps
static std::vector<zero_adam_seg> random_segs(int n, int64_t big) {
    std::vector<zero_adam_seg> v;
    int64_t at = zt_rand_int(0, 7);
    for (int k = 0; k < n; k++) {
        int64_t c;
        int kind = (int)zt_rand_int(0, 9);
        if (k == 0) c = 1;
        else if (kind == 0) c = 0;
        else if (kind <= 3) c = zt_rand_int(1, 9);
        else if (kind <= 7) c = zt_rand_int(10, 1000);
        else c = zt_rand_int(1000, big);
        v.push_back(seg(at, c));
        at += c + zt_rand_int(0, 20);
    }
    return v;
}


// ---- Lion, Adagrad, SGD: the same kernel, another rule ----

// A rule and its hyperparameters as zero_adam_args carries them.
struct rule {
    int kind;
    float beta1, beta2, eps, momentum, dampening;
    int nesterov, first;
};
static const char *rule_name(const rule &r, char *buf, size_t n) {
    if (r.kind == ZERO_OPTIMIZER_SGD)
        snprintf(buf, n, "SGD mom %g damp %g nesterov %d first %d", r.momentum, r.dampening, r.nesterov, r.first);
    else snprintf(buf, n, "%s", zero_optimizer_name((zero_optimizer_type)r.kind));
    return buf;
}
static void rule_args(const rule &r, zero_adam_args *a) {
    a->kind = r.kind;
    a->beta1 = r.beta1, a->beta2 = r.beta2, a->eps = r.eps;
    a->momentum = r.momentum, a->dampening = r.dampening, a->nesterov = r.nesterov, a->first = r.first;
}
// the cases every test runs: Lion and Adagrad at two settings, SGD over momentum 0 / 0.9,
// dampening, nesterov, the first step and a later one
static std::vector<rule> opt_rules(void) {
    std::vector<rule> v;
    v.push_back({ZERO_OPTIMIZER_LION, 0.9f, 0.99f, 0, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_LION, 0.95f, 0.98f, 0, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_ADAGRAD, 0, 0, 1e-10f, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_ADAGRAD, 0, 0, 1e-8f, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.0f, 0.0f, 0, 1});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.9f, 0.0f, 0, 1});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.9f, 0.0f, 0, 0});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.9f, 0.1f, 0, 0});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.9f, 0.0f, 1, 0});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.5f, 0.25f, 1, 1});
    return v;
}

// segments as seg() makes them, about one in six with a negative weight decay
// (Lion and Adagrad decay only when wd > 0, SGD whenever wd != 0)
static std::vector<zero_adam_seg> opt_segs(std::vector<zero_adam_seg> v) {
    for (auto &s : v)
        if (zt_rand_int(0, 5) == 0) s.weight_decay = -0.01f;
    return v;
}

// The inputs of one optimizer call over segs: master in [-2, 2], m in [-0.1, 0.1], v
// in [0, 0.01] inside the segments (m = v = 0 at one element in 16 where zeros is
// set) and the poison outside; a random grad everywhere; the param all poison.
struct opt_inputs {
    size_t N;
    zero_dtype pdt;
    std::vector<float> master, m, v;
    std::vector<unsigned char> grad, param;
    std::vector<char> inside;
};
static const uint32_t opt_poison = 0xFFFFFFFFu;
static opt_inputs make_inputs(const std::vector<zero_adam_seg> &segs, zero_dtype gdt, int pmode, int zeros) {
    opt_inputs in;
    int64_t end = 0;
    float nanbits;
    memcpy(&nanbits, &opt_poison, 4);
    for (auto &sg : segs) end = std::max(end, sg.offset + sg.count);
    in.N = (size_t)end + 5;
    in.pdt = pmode == P_FP16 ? ZERO_DTYPE_FP16 : pmode == P_BF16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    in.master.assign(in.N, nanbits), in.m.assign(in.N, nanbits), in.v.assign(in.N, nanbits);
    in.grad.resize(in.N * dsize(gdt)), in.param.assign(in.N * dsize(in.pdt), 0xFF);
    in.inside.assign(in.N, 0);
    for (auto &sg : segs)
        for (int64_t i = sg.offset; i < sg.offset + sg.count; i++) in.inside[i] = 1;
    for (size_t i = 0; i < in.N; i++) {
        zt_store(in.grad.data(), gdt, i, rand_val(gdt));
        if (!in.inside[i]) continue;
        in.master[i] = (float)zt_rand_range(-2, 2);
        in.m[i] = (float)zt_rand_range(-0.1, 0.1);
        in.v[i] = (float)zt_rand_range(0, 0.01);
        if (zeros && zt_rand_int(0, 15) == 0) in.m[i] = in.v[i] = 0.0f;  // Lion: c == +0 where g is 0 too
    }
    return in;
}

// The GPU's results (gm master, gmm m, gv v, gp param; dparam: a param was written)
// against the host's (hm, hmm, hv; mask: the state compared) on inputs in: the
// values that differ, the outside elements written, the params not round(host
// master), and inside / moved counts.
struct opt_diff {
    size_t differ, outside, pbad, n_in, moved;
};
static opt_diff compare_opt(const opt_inputs &in, int mask, const std::vector<float> &gm, const std::vector<float> &gmm,
                            const std::vector<float> &gv, const std::vector<unsigned char> &gp, bool dparam,
                            const std::vector<float> &hm, const std::vector<float> &hmm, const std::vector<float> &hv) {
    opt_diff r = {0, 0, 0, 0, 0};
    for (size_t i = 0; i < in.N; i++) {
        if (!in.inside[i]) {
            r.outside += zt_float_bits(gm[i]) != opt_poison || zt_float_bits(gmm[i]) != opt_poison ||
                         zt_float_bits(gv[i]) != opt_poison;
            if (dparam && !is_poison(gp.data(), in.pdt, i)) r.outside++;
            continue;
        }
        r.n_in++;
        r.moved += zt_float_bits(gm[i]) != zt_float_bits(in.master[i]);
        r.differ += zt_float_bits(gm[i]) != zt_float_bits(hm[i]);
        r.differ += (mask & 1) && zt_float_bits(gmm[i]) != zt_float_bits(hmm[i]);
        r.differ += (mask & 2) && zt_float_bits(gv[i]) != zt_float_bits(hv[i]);
        if (dparam) {
            unsigned char want[4];
            zt_store(want, in.pdt, 0, hm[i]);
            if (memcmp(gp.data() + i * dsize(in.pdt), want, dsize(in.pdt))) r.pbad++;
        }
    }
    return r;
}

// One call of rule r on the CUDA backend against the host backend's adam on the same
// inputs: master, the kept state and the param bit for bit (the kernel runs
// zero__opt_range's operations in its order, __fmaf_rn where it calls fmaf), the state
// the rule does not keep passed as NULL to both, every element outside the segments
// untouched (poison), the param round(master) in its dtype.
static void test_opt(const rule &r, zero_dtype gdt, int pmode, const std::vector<zero_adam_seg> &segs, const char *what) {
    const opt_inputs in = make_inputs(segs, gdt, pmode, 1);
    const size_t N = in.N;
    const zero_dtype pdt = in.pdt;
    const int mask = zero_optimizer_state_mask((zero_optimizer_type)r.kind, r.momentum);
    const std::vector<float> &master = in.master, &m = in.m, &v = in.v;
    const std::vector<unsigned char> &grad = in.grad, &param = in.param;
    char name[96];
    rule_name(r, name, sizeof name);
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    rule_args(r, &a);
    a.bc1 = 1.0f, a.bc2 = 1.0f;
    a.grad_scale = zt_rand_int(0, 3) ? (float)ldexp(zt_rand_range(0.5, 1), -(int)zt_rand_int(0, 10)) : 1.0f;
    a.grad_dtype = gdt;
    a.param_dtype = pdt;
    a.segs = segs.data();
    a.n_segs = (int)segs.size();

    std::vector<float> hm = master, hmm = m, hv = v;
    zero_adam_args ha = a;
    ha.master = hm.data();
    ha.m = mask & 1 ? hmm.data() : NULL;
    ha.v = mask & 2 ? hv.data() : NULL;
    ha.grad = grad.data();
    ha.param = NULL;
    host_adam_call hc;
    hc.a = &ha;
    hc.r = ZERO_ERR_STATE;
    zero_error herr;
    CHECKF(zero_host_run(1, host_adam_fn, &hc, &herr) == ZERO_OK, "host %s: %s", name, herr.msg);

    float *dmaster = nullptr, *dm = nullptr, *dv = nullptr;
    void *dgrad = nullptr, *dparam = nullptr;
    CU(cudaMalloc(&dmaster, N * 4));
    CU(cudaMemcpy(dmaster, master.data(), N * 4, cudaMemcpyHostToDevice));
    if (mask & 1) {
        CU(cudaMalloc(&dm, N * 4));
        CU(cudaMemcpy(dm, m.data(), N * 4, cudaMemcpyHostToDevice));
    }
    if (mask & 2) {
        CU(cudaMalloc(&dv, N * 4));
        CU(cudaMemcpy(dv, v.data(), N * 4, cudaMemcpyHostToDevice));
    }
    CU(cudaMalloc(&dgrad, grad.size()));
    CU(cudaMemcpy(dgrad, grad.data(), grad.size(), cudaMemcpyHostToDevice));
    if (pmode != P_NONE && pmode != P_MASTER) {
        CU(cudaMalloc(&dparam, param.size()));
        CU(cudaMemcpy(dparam, param.data(), param.size(), cudaMemcpyHostToDevice));
    }
    zero_adam_args da = a;
    da.master = dmaster, da.m = dm, da.v = dv, da.grad = dgrad;
    da.param = pmode == P_NONE ? NULL : pmode == P_MASTER ? (void *)dmaster : dparam;
    zero_error err;
    zero_result res = zero__cuda_k_adam(&da, NULL, 0, 0, &err);
    CHECKF(res == ZERO_OK, "%s: %s", name, err.msg);
    CU(cudaDeviceSynchronize());
    std::vector<float> gm(N), gmm(m), gv(v);
    std::vector<unsigned char> gp(param.size(), 0xFF);
    CU(cudaMemcpy(gm.data(), dmaster, N * 4, cudaMemcpyDeviceToHost));
    if (dm) CU(cudaMemcpy(gmm.data(), dm, N * 4, cudaMemcpyDeviceToHost));
    if (dv) CU(cudaMemcpy(gv.data(), dv, N * 4, cudaMemcpyDeviceToHost));
    if (dparam) CU(cudaMemcpy(gp.data(), dparam, gp.size(), cudaMemcpyDeviceToHost));
    cudaFree(dmaster), cudaFree(dgrad);
    if (dm) cudaFree(dm);
    if (dv) cudaFree(dv);
    if (dparam) cudaFree(dparam);

    const opt_diff df = compare_opt(in, mask, gm, gmm, gv, gp, dparam != nullptr, hm, hmm, hv);
    const size_t differ = df.differ, outside = df.outside, pbad = df.pbad, n_in = df.n_in, moved = df.moved;
    printf("opt %-40s %-20s grad %s param %-11s: %zu segments, %zu elements, %zu values differ from the host backend\n",
           name, what, zero_dtype_name(gdt), pmode_name[pmode], segs.size(), n_in, differ);
    CHECKF(differ == 0 && outside == 0 && pbad == 0 && (n_in < 50 || moved > 0),
           "%s %s grad %s param %s: %zu values differ from the host backend, %zu outside elements written, %zu params "
           "not round(host master), %zu of %zu master values moved",
           name, what, zero_dtype_name(gdt), pmode_name[pmode], differ, outside, pbad, moved, n_in);
}

// ---- Lamb: its two passes against the host backend's ----

// Pass 1 (moments, each segment's sums of p^2 and u^2 added to what is there)
// then pass 2 (the step by each segment's trust ratio) on the CUDA backend and
// on the host backend, the same inputs: m, v, master and param bit for bit
// (u is the host's operations in its order), untouched outside the segments;
// the sums within 1e-12 of the host's sequential double sums (the GPU adds
// each block's, then the blocks in a fixed order), and the same bits when run
// again; with scratch for only a few blocks (many batches of launches) the
// same within 1e-12. The ratios are the host sums' (as the engine makes them:
// clamped sqrt(p^2) / sqrt(u^2)), copied to the device.
static void test_lamb(zero_dtype gdt, int pmode, int eps_inside, const std::vector<zero_adam_seg> &segs, double *scratch,
                      size_t n_scratch, const char *what) {
    const opt_inputs in = make_inputs(segs, gdt, pmode, 0);
    const size_t N = in.N, ns = segs.size();
    const zero_dtype pdt = in.pdt;
    const std::vector<float> &master = in.master, &m = in.m, &v = in.v;
    const std::vector<unsigned char> &grad = in.grad, &param = in.param;
    std::vector<double> sums0(2 * ns);
    for (auto &x : sums0) x = zt_rand_int(0, 1) ? zt_rand_range(0, 10) : 0.0;  // (a segment continued: sums so far)
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.kind = ZERO_OPTIMIZER_LAMB;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = eps_inside ? 1e-6f : 1e-8f, a.eps_inside = eps_inside;
    a.bc1 = (float)zt_rand_range(0.1, 1), a.bc2 = (float)zt_rand_range(0.01, 1);
    a.grad_scale = zt_rand_int(0, 3) ? (float)ldexp(zt_rand_range(0.5, 1), -(int)zt_rand_int(0, 10)) : 1.0f;
    a.grad_dtype = gdt, a.param_dtype = pdt;
    a.segs = segs.data(), a.n_segs = (int)ns;

    // the host: pass 1, the ratios, pass 2
    std::vector<float> hm = master, hmm = m, hv = v, ratio(ns);
    std::vector<double> hsums = sums0;
    zero_adam_args ha = a;
    ha.master = hm.data(), ha.m = hmm.data(), ha.v = hv.data(), ha.grad = grad.data(), ha.param = NULL;
    ha.lamb_pass = 1, ha.lamb_sums = hsums.data();
    host_adam_call hc;
    hc.a = &ha, hc.r = ZERO_ERR_STATE;
    zero_error herr;
    CHECKF(zero_host_run(1, host_adam_fn, &hc, &herr) == ZERO_OK && hc.r == ZERO_OK, "host Lamb pass 1: %s", hc.err.msg);
    for (size_t k = 0; k < ns; k++) {
        const double w = sqrt(hsums[2 * k]), u = sqrt(hsums[2 * k + 1]);
        ratio[k] = (float)(w != 0 && u != 0 ? std::min(10.0, std::max(0.01, w / u)) : 1.0);
    }
    ha.lamb_pass = 2, ha.lamb_sums = NULL, ha.lamb_ratio = ratio.data();
    CHECKF(zero_host_run(1, host_adam_fn, &hc, &herr) == ZERO_OK && hc.r == ZERO_OK, "host Lamb pass 2: %s", hc.err.msg);

    // the device, pass 1 twice from the same inputs (the same bits), then pass 2
    float *dmaster = nullptr, *dm = nullptr, *dv = nullptr, *dratio = nullptr;
    double *dsums = nullptr;
    void *dgrad = nullptr, *dparam = nullptr;
    CU(cudaMalloc(&dmaster, N * 4));
    CU(cudaMalloc(&dm, N * 4));
    CU(cudaMalloc(&dv, N * 4));
    CU(cudaMalloc(&dgrad, grad.size()));
    CU(cudaMalloc(&dsums, 2 * ns * sizeof(double) + 8));
    CU(cudaMalloc(&dratio, ns * 4 + 4));
    CU(cudaMemcpy(dgrad, grad.data(), grad.size(), cudaMemcpyHostToDevice));
    if (pmode != P_NONE && pmode != P_MASTER) {
        CU(cudaMalloc(&dparam, param.size()));
        CU(cudaMemcpy(dparam, param.data(), param.size(), cudaMemcpyHostToDevice));
    }
    zero_adam_args da = a;
    da.master = dmaster, da.m = dm, da.v = dv, da.grad = dgrad;
    da.param = pmode == P_NONE ? NULL : pmode == P_MASTER ? (void *)dmaster : dparam;
    da.lamb_pass = 1, da.lamb_sums = dsums;
    zero_error err;
    std::vector<double> gsums[2];
    std::vector<float> gmm(N), gv(N), gm(N);
    for (int rep = 0; rep < 2; rep++) {
        CU(cudaMemcpy(dmaster, master.data(), N * 4, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(dm, m.data(), N * 4, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(dv, v.data(), N * 4, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(dsums, sums0.data(), 2 * ns * sizeof(double), cudaMemcpyHostToDevice));
        CHECKF(zero__cuda_k_adam(&da, scratch, n_scratch, 0, &err) == ZERO_OK, "Lamb pass 1: %s", err.msg);
        CU(cudaDeviceSynchronize());
        gsums[rep].resize(2 * ns);
        CU(cudaMemcpy(gsums[rep].data(), dsums, 2 * ns * sizeof(double), cudaMemcpyDeviceToHost));
    }
    CU(cudaMemcpy(gmm.data(), dm, N * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gv.data(), dv, N * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(dratio, ratio.data(), ns * 4, cudaMemcpyHostToDevice));
    da.lamb_pass = 2, da.lamb_sums = NULL, da.lamb_ratio = dratio;
    CHECKF(zero__cuda_k_adam(&da, scratch, n_scratch, 0, &err) == ZERO_OK, "Lamb pass 2: %s", err.msg);
    CU(cudaDeviceSynchronize());
    std::vector<unsigned char> gp(param.size(), 0xFF);
    CU(cudaMemcpy(gm.data(), dmaster, N * 4, cudaMemcpyDeviceToHost));
    if (dparam) CU(cudaMemcpy(gp.data(), dparam, gp.size(), cudaMemcpyDeviceToHost));
    cudaFree(dmaster), cudaFree(dm), cudaFree(dv), cudaFree(dgrad), cudaFree(dsums), cudaFree(dratio);
    if (dparam) cudaFree(dparam);

    const opt_diff df = compare_opt(in, 3, gm, gmm, gv, gp, dparam != nullptr, hm, hmm, hv);
    const size_t differ = df.differ, outside = df.outside, pbad = df.pbad, n_in = df.n_in, moved = df.moved;
    double worst = 0;
    for (size_t k = 0; k < 2 * ns; k++)
        worst = std::max(worst, fabs(gsums[0][k] - hsums[k]) / std::max(1e-300, fabs(hsums[k])));
    const int same = !memcmp(gsums[0].data(), gsums[1].data(), 2 * ns * sizeof(double));
    printf("lamb %-28s eps_inside %d grad %s param %-11s scratch %7zu: %zu segments, %zu elements, %zu values differ "
           "from the host backend, sums within %.1e\n",
           what, eps_inside, zero_dtype_name(gdt), pmode_name[pmode], n_scratch, ns, n_in, differ, worst);
    CHECKF(differ == 0 && outside == 0 && pbad == 0 && (n_in < 50 || moved > 0) && worst <= 1e-12 && same,
           "Lamb %s grad %s param %s: %zu values differ from the host backend, %zu outside elements written, %zu params "
           "not round(host master), %zu of %zu moved; sums within %.2e of the host's, the same bits run again: %d",
           what, zero_dtype_name(gdt), pmode_name[pmode], differ, outside, pbad, moved, n_in, worst, same);
}

// ---- the batched calls: sumsq_segs and adam_multi against their one-call forms ----

// sumsq_segs over many segments (sizes 0, 1, small, large; unaligned starts;
// some holding an inf or a nan; more than one batch of launches) gives every
// segment's out the bits of zero__cuda_k_sumsq on that segment alone.
static void test_sumsq_segs(zero_dtype dt, int nseg, int64_t big, double *scratch) {
    std::vector<int64_t> off((size_t)nseg), cnt((size_t)nseg);
    int64_t at = zt_rand_int(0, 7);
    for (int k = 0; k < nseg; k++) {
        int kind = (int)zt_rand_int(0, 9);
        cnt[(size_t)k] = k == 0 ? 1 : k == 1 ? 0 : kind == 0 ? 0 : kind == 1 ? 1 : kind <= 4 ? zt_rand_int(2, 9)
                         : kind <= 8 ? zt_rand_int(10, 3000) : zt_rand_int(3000, big);
        off[(size_t)k] = at;
        at += cnt[(size_t)k] + zt_rand_int(0, 9);
    }
    buf x(dt, (size_t)at, 0);
    x.fill_random();
    int n_inf = 0, n_nan = 0;
    for (int k = 0; k < nseg; k++) {  // an inf or a nan in about one segment of eight
        int kind = (int)zt_rand_int(0, 15);
        if (cnt[(size_t)k] == 0 || kind > 1) continue;
        size_t i = (size_t)(off[(size_t)k] + zt_rand_int(0, cnt[(size_t)k] - 1));
        zt_store(x.hp(), dt, i, kind ? NAN : (zt_rand_int(0, 1) ? INFINITY : -INFINITY));
        kind ? n_nan++ : n_inf++;
    }
    CU(x.up());
    std::vector<double> in(2 * (size_t)nseg), a(in.size()), b(in.size());
    for (int k = 0; k < nseg; k++) {
        in[2 * (size_t)k] = zt_rand_int(0, 3) ? 0.0 : zt_rand_range(0, 4);
        in[2 * (size_t)k + 1] = zt_rand_int(0, 3) ? 0.0 : zt_rand_int(0, 1) ? 0.5 : 3.0;
    }
    double *douts = nullptr;
    CU(cudaMalloc(&douts, 2 * in.size() * sizeof(double)));
    double *da = douts, *db = douts + in.size();
    CU(cudaMemcpy(da, in.data(), in.size() * sizeof(double), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(db, in.data(), in.size() * sizeof(double), cudaMemcpyHostToDevice));
    std::vector<zero_sumsq_seg> segs((size_t)nseg);
    for (int k = 0; k < nseg; k++) {
        segs[(size_t)k].x = (const char *)x.dp() + (size_t)off[(size_t)k] * dsize(dt);
        segs[(size_t)k].count = cnt[(size_t)k];
        segs[(size_t)k].out = da + 2 * k;
    }
    zero_error err;
    zero_result r = zero__cuda_k_sumsq_segs(segs.data(), nseg, dt, scratch, ZERO__CUDA_SUMSQ_SCRATCH, 0, &err);
    CHECKF(r == ZERO_OK, "sumsq_segs %s: %s", zero_dtype_name(dt), err.msg);
    int one_ok = 1;
    for (int k = 0; k < nseg && one_ok; k++)
        one_ok = zero__cuda_k_sumsq(segs[(size_t)k].x, (size_t)cnt[(size_t)k], dt, db + 2 * k, scratch,
                                    ZERO__CUDA_SUMSQ_SCRATCH, 0, &err) == ZERO_OK;
    CHECKF(one_ok, "sumsq %s per segment: %s", zero_dtype_name(dt), err.msg);
    CU(cudaMemcpy(a.data(), da, a.size() * sizeof(double), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(b.data(), db, b.size() * sizeof(double), cudaMemcpyDeviceToHost));
    cudaFree(douts);
    int differ = 0, first = -1, bad_flags = 0;
    for (int k = 0; k < nseg; k++) {
        const size_t q = 2 * (size_t)k;
        if (memcmp(&a[q], &b[q], 2 * sizeof(double))) {
            differ++;
            if (first < 0) first = k;
        }
        // independent of both: an empty segment untouched; the flag max(flag, 1) exactly where an inf or nan is
        int has_bad = 0;
        for (int64_t i = 0; i < cnt[(size_t)k] && !has_bad; i++)
            has_bad = !std::isfinite(zt_load(x.hp(), dt, (size_t)(off[(size_t)k] + i)));
        const double want_flag = has_bad ? std::max(in[q + 1], 1.0) : in[q + 1];
        if (a[q + 1] != want_flag || (cnt[(size_t)k] == 0 && a[q] != in[q]) || (has_bad && std::isfinite(a[q])))
            bad_flags++;
    }
    printf("sumsq_segs %s: %d segments (%d inf, %d nan), %d differ from sumsq per segment\n", zero_dtype_name(dt), nseg,
           n_inf, n_nan, differ);
    CHECKF(differ == 0, "sumsq_segs %s: %d of %d segments differ from sumsq per segment (first %d: %lld elements, "
           "%.17g / %g vs %.17g / %g)", zero_dtype_name(dt), differ, nseg, first, first >= 0 ? (long long)cnt[(size_t)first] : 0LL,
           first >= 0 ? a[2 * (size_t)first] : 0.0, first >= 0 ? a[2 * (size_t)first + 1] : 0.0,
           first >= 0 ? b[2 * (size_t)first] : 0.0, first >= 0 ? b[2 * (size_t)first + 1] : 0.0);
    CHECKF(bad_flags == 0, "sumsq_segs %s: %d segments with a wrong flag or an empty segment written", zero_dtype_name(dt),
           bad_flags);
}

// adam_multi over n calls (each its own arrays at unaligned places, many
// segments each; grad and param dtypes and grad_scale changing between runs of
// calls, so that calls split into several launches) leaves master, m, v and
// the params bit for bit as zero__cuda_k_adam called per call does. mixed: the
// runs also change the rule (Adam, AdamW, Lion, Adagrad, SGD) or one of its
// hyperparameters, the state a rule does not keep passed as NULL.
static void test_adam_multi(int ncalls, int segs_per_call, int64_t big, int mixed) {
    const std::vector<rule> rules = opt_rules();
    rule ru = {ZERO_OPTIMIZER_ADAM, 0.9f, 0.999f, 1e-8f, 0, 0, 0, 0};
    int n_rules = 1;
    std::vector<zero_adam_args> calls((size_t)ncalls);
    std::vector<std::vector<zero_adam_seg>> segs((size_t)ncalls);
    std::vector<int64_t> base((size_t)ncalls), len((size_t)ncalls);
    std::vector<int> pmode((size_t)ncalls);
    int64_t N = 0;
    const int t = (int)zt_rand_int(1, 1000);
    zero_dtype gdt = dtypes[zt_rand_int(0, 2)];
    int pm = (int)zt_rand_int(0, P_COUNT - 1);
    float gscale = (float)ldexp(zt_rand_range(0.5, 1), -(int)zt_rand_int(0, 10));
    for (int i = 0; i < ncalls; i++) {
        if (zt_rand_int(0, 4) == 0) {  // a new run of calls: other dtypes or another grad_scale
            gdt = dtypes[zt_rand_int(0, 2)];
            pm = (int)zt_rand_int(0, P_COUNT - 1);
            if (zt_rand_int(0, 1)) gscale = (float)ldexp(zt_rand_range(0.5, 1), -(int)zt_rand_int(0, 10));
            if (mixed) {
                const int pick = (int)zt_rand_int(-2, (long)rules.size() - 1), tweak = (int)zt_rand_int(0, 2);
                if (pick < 0) ru = {pick == -1 ? ZERO_OPTIMIZER_ADAM : ZERO_OPTIMIZER_ADAMW, 0.9f, 0.999f, 1e-8f, 0, 0, 0, 0};
                else ru = rules[(size_t)pick];
                if (tweak == 0) ru.beta1 *= 0.99f, ru.eps *= 2.0f;  // the same rule, other hyperparameters
                if (tweak == 1) ru.first = !ru.first;
                n_rules++;
            }
        }
        segs[(size_t)i] = random_segs(segs_per_call, big);
        int64_t end = 0;
        for (auto &s : segs[(size_t)i]) end = std::max(end, s.offset + s.count);
        base[(size_t)i] = N + zt_rand_int(0, 7);
        len[(size_t)i] = end;
        N = base[(size_t)i] + end + zt_rand_int(0, 5);
        pmode[(size_t)i] = pm;
        zero_adam_args &a = calls[(size_t)i];
        memset(&a, 0, sizeof a);
        a.beta1 = 0.9f;
        a.beta2 = 0.999f;
        a.eps = 1e-8f;
        a.bc1 = (float)(1.0 - pow(0.9, t));
        a.bc2 = (float)(1.0 / sqrt(1.0 - pow(0.999, t)));
        a.grad_scale = gscale;
        a.adamw = 1;
        if (mixed) rule_args(ru, &a);
        a.grad_dtype = gdt;
        a.param_dtype = pm == P_FP16 ? ZERO_DTYPE_FP16 : pm == P_BF16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
        a.segs = segs[(size_t)i].data();
        a.n_segs = (int)segs[(size_t)i].size();
    }
    // host inputs: master, m, v, and 4 bytes of grad and of param per element (each call reads its own dtype)
    std::vector<float> master((size_t)N), m((size_t)N), v((size_t)N);
    std::vector<unsigned char> grad((size_t)N * 4), param((size_t)N * 4, 0xFF);
    for (int64_t i = 0; i < N; i++) {
        master[(size_t)i] = (float)zt_rand_range(-2, 2);
        m[(size_t)i] = (float)zt_rand_range(-0.1, 0.1);
        v[(size_t)i] = (float)((double)m[(size_t)i] * m[(size_t)i] * zt_rand_range(1, 10) + zt_rand_range(0, 1e-6));
    }
    for (int i = 0; i < ncalls; i++)
        for (int64_t j = 0; j < len[(size_t)i]; j++)
            zt_store(grad.data() + 4 * (size_t)base[(size_t)i], calls[(size_t)i].grad_dtype, (size_t)j,
                     rand_val(calls[(size_t)i].grad_dtype));
    float *dm[2] = {nullptr, nullptr};
    unsigned char *dgp = nullptr;
    // two copies of (master, m, v) and of param, one grad: [master m v] x 2, then grad, param x 2
    CU(cudaMalloc(&dm[0], 6 * (size_t)N * 4));
    dm[1] = dm[0] + 3 * (size_t)N;
    CU(cudaMalloc(&dgp, 3 * (size_t)N * 4));
    for (int c = 0; c < 2; c++) {
        CU(cudaMemcpy(dm[c], master.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(dm[c] + N, m.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(dm[c] + 2 * N, v.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(dgp + (size_t)(1 + c) * (size_t)N * 4, param.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    }
    CU(cudaMemcpy(dgp, grad.data(), (size_t)N * 4, cudaMemcpyHostToDevice));
    std::vector<zero_adam_args> dc[2] = {calls, calls};
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < ncalls; i++) {
            zero_adam_args &a = dc[c][(size_t)i];
            const size_t b = (size_t)base[(size_t)i];
            a.master = dm[c] + b;
            const int mask = zero_optimizer_state_mask((zero_optimizer_type)a.kind, a.momentum);
            a.m = mask & 1 ? dm[c] + N + b : NULL;
            a.v = mask & 2 ? dm[c] + 2 * N + b : NULL;
            a.grad = dgp + 4 * b;
            a.param = pmode[(size_t)i] == P_NONE     ? NULL
                      : pmode[(size_t)i] == P_MASTER ? (void *)a.master
                                                     : (void *)(dgp + (size_t)(1 + c) * (size_t)N * 4 + 4 * b);
        }
    zero_error err;
    zero_result r = zero__cuda_k_adam_multi(dc[0].data(), ncalls, NULL, 0, 0, &err);
    CHECKF(r == ZERO_OK, "adam_multi: %s", err.msg);
    int one_ok = 1;
    for (int i = 0; i < ncalls && one_ok; i++) one_ok = zero__cuda_k_adam(&dc[1][(size_t)i], NULL, 0, 0, &err) == ZERO_OK;
    CHECKF(one_ok, "adam per call: %s", err.msg);
    std::vector<unsigned char> got[2];
    for (int c = 0; c < 2; c++) {
        got[c].resize(4 * (size_t)N * 4);
        CU(cudaMemcpy(got[c].data(), dm[c], 3 * (size_t)N * 4, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(got[c].data() + 3 * (size_t)N * 4, dgp + (size_t)(1 + c) * (size_t)N * 4, (size_t)N * 4,
                      cudaMemcpyDeviceToHost));
    }
    cudaFree(dm[0]);
    cudaFree(dgp);
    size_t differ = 0, changed = 0, n_segs = 0;
    for (size_t k = 0; k < got[0].size(); k += 4) differ += memcmp(&got[0][k], &got[1][k], 4) != 0;
    for (size_t k = 0; k < (size_t)N; k++) changed += memcmp(&got[0][4 * k], &master[k], 4) != 0;
    for (auto &sv : segs) n_segs += sv.size();
    printf("adam_multi%s: %d calls (%d runs of rule and hyperparameters), %zu segments, %lld elements, %zu master "
           "values stepped, %zu words differ from adam per call\n",
           mixed ? " mixed" : "", ncalls, n_rules, n_segs, (long long)N, changed, differ);
    CHECKF(differ == 0, "adam_multi: %zu 4-byte words of master, m, v, params differ from adam called per call", differ);
    CHECKF(changed > 0, "adam_multi: no master value changed (nothing was stepped)");
}

// ---- Muon: the element-wise parts (muon_pass, seg.muon) and the orthogonalisation (muon_ns) ----

// the host backend's adam over calls a[0..n), in order (what adam_multi means)
struct host_calls {
    const zero_adam_args *a;
    int n;
    zero_error err;
};
static zero_result host_calls_fn(const zero_backend *be, void *arg) {
    host_calls *c = (host_calls *)arg;
    for (int i = 0; i < c->n; i++) {
        zero_result r = be->adam(be->ctx, &c->a[i], ZERO_STREAM_COMPUTE, &c->err);
        if (r != ZERO_OK) return r;
    }
    return ZERO_OK;
}

// Elements of master, m, v (and params) that differ from the host's (4-byte words),
// and elements outside the segments the GPU wrote (poison gone).
struct muon_diff {
    size_t differ = 0, outside = 0, pbad = 0;
};
static muon_diff muon_compare(const std::vector<char> &inside, const std::vector<float> *gpu, const std::vector<float> *host,
                              const std::vector<unsigned char> &gp, const std::vector<float> *pwant, zero_dtype pdt, int dparam) {
    muon_diff d;
    for (size_t i = 0; i < inside.size(); i++) {
        if (!inside[i]) {
            for (int k = 0; k < 3; k++) d.outside += zt_float_bits(gpu[k][i]) != 0xFFFFFFFFu;
            if (dparam && !is_poison(gp.data(), pdt, i)) d.outside++;
            continue;
        }
        for (int k = 0; k < 3; k++) d.differ += zt_float_bits(gpu[k][i]) != zt_float_bits(host[k][i]);
        if (!dparam) continue;
        if (!pwant) {  // pass 1: the param untouched
            d.pbad += !is_poison(gp.data(), pdt, i);
            continue;
        }
        unsigned char want[4];
        zt_store(want, pdt, 0, (*pwant)[i]);
        d.pbad += memcmp(gp.data() + i * dsize(pdt), want, dsize(pdt)) != 0;
    }
    return d;
}

// Runs calls a[0..n) on the GPU: one adam call when n is 1 and !multi, else adam_multi.
static zero_result muon_gpu_calls(const std::vector<zero_adam_args> &a, int multi, zero_error *err) {
    if (!multi) return zero__cuda_k_adam(&a[0], NULL, 0, 0, err);
    return zero__cuda_k_adam_multi(a.data(), (int)a.size(), NULL, 0, 0, err);
}

// Muon's two element-wise calls around the orthogonalisation, on the CUDA backend
// against the host backend on the same inputs. Pass 1 (kind Muon) moves m and v of
// the Muon segments, bit for bit the host's, and nothing else (master, params, the
// other segments' state, elements outside every segment). Then, v replaced on both
// sides by a stand-in for the orthogonalised update, a call of kind0 (Muon, whose
// other segments take AdamW; or Lion, or SGD) steps the Muon segments by Muon's step
// and the others by kind0's rule: master, m, v, params bit for bit the host's.
// ncalls 0: one adam call each; else the segments cut into ncalls calls of
// adam_multi (pass 0's calls alternating kind0 and AdamW).
static void test_muon(zero_dtype gdt, int pmode, int nesterov, int kind0, int ncalls, std::vector<zero_adam_seg> segs,
                      const char *what) {
    int64_t end = 0;
    for (auto &s : segs) {
        end = std::max(end, s.offset + s.count);
        s.muon = (int)zt_rand_int(0, 1);
    }
    segs.front().muon = 1;
    if (segs.size() > 1) segs.back().muon = 0;
    const size_t N = (size_t)end + 5;
    const zero_dtype pdt = pmode == P_FP16 ? ZERO_DTYPE_FP16 : pmode == P_BF16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    const uint32_t poison = 0xFFFFFFFFu;
    float nanbits;
    memcpy(&nanbits, &poison, 4);
    std::vector<float> st[3] = {std::vector<float>(N, nanbits), std::vector<float>(N, nanbits), std::vector<float>(N, nanbits)};
    std::vector<unsigned char> grad(N * dsize(gdt)), param(N * dsize(pdt), 0xFF);
    std::vector<char> inside(N, 0), muon(N, 0);
    for (auto &s : segs)
        for (int64_t i = s.offset; i < s.offset + s.count; i++) inside[(size_t)i] = 1, muon[(size_t)i] = (char)s.muon;
    for (size_t i = 0; i < N; i++) {
        zt_store(grad.data(), gdt, i, rand_val(gdt));
        if (!inside[i]) continue;
        st[0][i] = (float)zt_rand_range(-2, 2);
        st[1][i] = (float)zt_rand_range(-0.1, 0.1);
        st[2][i] = (float)zt_rand_range(0, 0.01);
    }
    const int nc = std::max(ncalls, 1), multi = ncalls > 0;
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f;
    a.bc1 = (float)(1.0 - pow(0.9, 7)), a.bc2 = (float)(1.0 / sqrt(1.0 - pow(0.999, 7)));
    a.grad_scale = zt_rand_int(0, 3) ? (float)ldexp(zt_rand_range(0.5, 1), -(int)zt_rand_int(0, 10)) : 1.0f;
    a.adamw = 1;
    a.momentum = (float)zt_rand_range(0.8, 0.99), a.nesterov = nesterov;
    a.grad_dtype = gdt, a.param_dtype = pdt;
    std::vector<zero_adam_args> p1((size_t)nc, a), p0((size_t)nc, a);
    for (int c = 0; c < nc; c++) {
        const size_t lo = segs.size() * (size_t)c / (size_t)nc, hi = segs.size() * (size_t)(c + 1) / (size_t)nc;
        p1[(size_t)c].segs = p0[(size_t)c].segs = segs.data() + lo;
        p1[(size_t)c].n_segs = p0[(size_t)c].n_segs = (int)(hi - lo);
        p1[(size_t)c].kind = ZERO_OPTIMIZER_MUON, p1[(size_t)c].muon_pass = 1;
        p0[(size_t)c].kind = multi && c % 2 ? ZERO_OPTIMIZER_ADAMW : kind0;
    }
    char name[96];
    snprintf(name, sizeof name, "Muon (then %s%s) nesterov %d", zero_optimizer_name((zero_optimizer_type)kind0),
             multi ? ", AdamW" : "", nesterov);

    // the host: both calls, v replaced in between (o: the stand-in for the orthogonalised update)
    std::vector<float> h[3] = {st[0], st[1], st[2]}, after1[3], o(N);
    for (size_t i = 0; i < N; i++) o[i] = muon[i] ? (float)zt_rand_range(-0.05, 0.05) : 0.0f;
    std::vector<zero_adam_args> h1 = p1, h0 = p0, d1 = p1, d0 = p0;
    for (int c = 0; c < nc; c++)
        for (zero_adam_args *x : {&h1[(size_t)c], &h0[(size_t)c]})
            x->master = h[0].data(), x->m = h[1].data(), x->v = h[2].data(), x->grad = grad.data(), x->param = NULL;
    host_calls hc = {h1.data(), nc, zero_error()};
    zero_error herr;
    CHECKF(zero_host_run(1, host_calls_fn, &hc, &herr) == ZERO_OK, "host %s pass 1: %s", name, hc.err.msg);
    for (int k = 0; k < 3; k++) after1[k] = h[k];
    for (size_t i = 0; i < N; i++)
        if (muon[i]) h[2][i] = o[i];
    const std::vector<float> v_in = h[2];
    hc.a = h0.data();
    CHECKF(zero_host_run(1, host_calls_fn, &hc, &herr) == ZERO_OK, "host %s: %s", name, hc.err.msg);

    // the GPU: the same two calls, v set to the host's v_in in between
    float *dst = nullptr;
    void *dgrad = nullptr, *dparam = nullptr;
    CU(cudaMalloc(&dst, 3 * N * 4));
    for (int k = 0; k < 3; k++) CU(cudaMemcpy(dst + k * N, st[k].data(), N * 4, cudaMemcpyHostToDevice));
    CU(cudaMalloc(&dgrad, grad.size()));
    CU(cudaMemcpy(dgrad, grad.data(), grad.size(), cudaMemcpyHostToDevice));
    if (pmode != P_NONE && pmode != P_MASTER) {
        CU(cudaMalloc(&dparam, param.size()));
        CU(cudaMemcpy(dparam, param.data(), param.size(), cudaMemcpyHostToDevice));
    }
    for (int c = 0; c < nc; c++)
        for (zero_adam_args *x : {&d1[(size_t)c], &d0[(size_t)c]}) {
            x->master = dst, x->m = dst + N, x->v = dst + 2 * N, x->grad = dgrad;
            x->param = pmode == P_NONE ? NULL : pmode == P_MASTER ? (void *)dst : dparam;
        }
    zero_error err;
    std::vector<float> g[3] = {std::vector<float>(N), std::vector<float>(N), std::vector<float>(N)};
    std::vector<unsigned char> gp(param.size(), 0xFF);
    for (int pass = 1; pass >= 0; pass--) {
        CHECKF(muon_gpu_calls(pass ? d1 : d0, multi, &err) == ZERO_OK, "%s pass %d: %s", name, pass, err.msg);
        CU(cudaDeviceSynchronize());
        for (int k = 0; k < 3; k++) CU(cudaMemcpy(g[k].data(), dst + k * N, N * 4, cudaMemcpyDeviceToHost));
        if (dparam) CU(cudaMemcpy(gp.data(), dparam, gp.size(), cudaMemcpyDeviceToHost));
        const muon_diff d = muon_compare(inside, g, pass ? after1 : h, gp, pass ? NULL : &h[0], pdt, dparam != nullptr);
        size_t moved = 0, n_in = 0;
        for (size_t i = 0; i < N; i++) {
            n_in += inside[i];
            moved += inside[i] && zt_float_bits(g[pass ? 1 : 0][i]) != zt_float_bits(st[pass ? 1 : 0][i]);
        }
        printf("muon pass %d %-36s %-22s grad %s param %-11s: %zu segments, %zu elements, %zu values differ from the host "
               "backend\n", pass, name, what, zero_dtype_name(gdt), pmode_name[pmode], segs.size(), n_in, d.differ);
        CHECKF(d.differ == 0 && d.outside == 0 && d.pbad == 0 && (n_in < 50 || moved > 0),
               "%s pass %d %s grad %s param %s: %zu values differ from the host backend, %zu outside elements written, "
               "%zu params wrong (pass 1: written; else not round(host master)), %zu of %zu %s values moved",
               name, pass, what, zero_dtype_name(gdt), pmode_name[pmode], d.differ, d.outside, d.pbad, moved, n_in,
               pass ? "m" : "master");
        if (pass) CU(cudaMemcpy(dst + 2 * N, v_in.data(), N * 4, cudaMemcpyHostToDevice));
    }
    cudaFree(dst), cudaFree(dgrad);
    if (dparam) cudaFree(dparam);
}

// Newton-Schulz in double, the reference for muon_ns: zero.h's math (X the
// matrix, transposed when rows > cols, over its Frobenius norm + 1e-7; steps of
// A = X X^T, B = b A + c A A, X = a X + B X with the fp32 coefficients; back,
// times scale) on one rows x cols matrix.
static void ns_ref(const float *x, int64_t rows, int64_t cols, int steps, float scale, double *out) {
    const int64_t r = std::min(rows, cols), c = std::max(rows, cols);
    const int tall = rows > cols;
    const double ca = 3.4445f, cb = -4.7750f, cc = 2.0315f;
    std::vector<double> X((size_t)(r * c)), A((size_t)(r * r)), B((size_t)(r * r)), Y((size_t)(r * c));
    double ss = 0;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            X[(size_t)(i * c + j)] = tall ? x[j * cols + i] : x[i * cols + j];
            ss += X[(size_t)(i * c + j)] * X[(size_t)(i * c + j)];
        }
    for (double &e : X) e /= sqrt(ss) + 1e-7;
    for (int s = 0; s < steps; s++) {
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < r; j++) {
                double acc = 0;
                for (int64_t k = 0; k < c; k++) acc += X[(size_t)(i * c + k)] * X[(size_t)(j * c + k)];
                A[(size_t)(i * r + j)] = acc;
            }
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < r; j++) {
                double acc = 0;
                for (int64_t k = 0; k < r; k++) acc += A[(size_t)(i * r + k)] * A[(size_t)(k * r + j)];
                B[(size_t)(i * r + j)] = cb * A[(size_t)(i * r + j)] + cc * acc;
            }
        for (int64_t i = 0; i < r; i++) {
            for (int64_t k = 0; k < c; k++) Y[(size_t)(i * c + k)] = ca * X[(size_t)(i * c + k)];
            for (int64_t j = 0; j < r; j++) {
                const double b = B[(size_t)(i * r + j)];
                for (int64_t k = 0; k < c; k++) Y[(size_t)(i * c + k)] += b * X[(size_t)(j * c + k)];
            }
        }
        X.swap(Y);
    }
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) (tall ? out[j * cols + i] : out[i * cols + j]) = X[(size_t)(i * c + j)] * scale;
}

// muon_ns on `batch` random matrices of rows x cols (x starting `off` floats past
// a 16-byte boundary) against ns_ref: max |gpu - ref| <= 1e-4 max(1, max |ref|);
// the host's fp32 zero_muon_orthogonalize measured against the same reference
// (printed); the guards around x and past the end of work untouched; a second
// run on the same input bit for bit the first (fixed order, no atomics).
static double muon_ns_worst = 0;  // largest error / tolerance seen, printed at the end
static void test_muon_ns(int64_t rows, int64_t cols, int64_t batch, int steps, int off) {
    const int64_t n = rows * cols, total = batch * n, W = zero_muon_work_elems(rows, cols);
    const float scale = (float)sqrt(std::max(1.0, (double)rows / (double)cols));
    const uint32_t poison = 0xFFFFFFFFu;
    float nanbits;
    memcpy(&nanbits, &poison, 4);
    std::vector<float> hx((size_t)(GUARD + off + total + GUARD), nanbits), work((size_t)W), got[2];
    for (int64_t i = 0; i < total; i++) hx[(size_t)(GUARD + off + i)] = (float)zt_rand_range(-1, 1);
    float *dx = nullptr, *dwork = nullptr;
    CU(cudaMalloc(&dx, hx.size() * 4));
    CU(cudaMalloc(&dwork, (size_t)(W + GUARD) * 4));
    zero_error err;
    for (int rep = 0; rep < 2; rep++) {
        CU(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
        CU(cudaMemset(dwork, 0xFF, (size_t)(W + GUARD) * 4));
        CHECKF(zero__cuda_k_muon_ns(dx + GUARD + off, batch, rows, cols, steps, scale, dwork, 0, &err) == ZERO_OK,
               "muon_ns %lld x %lld: %s", (long long)rows, (long long)cols, err.msg);
        got[rep].resize(hx.size());
        CU(cudaMemcpy(got[rep].data(), dx, hx.size() * 4, cudaMemcpyDeviceToHost));
        std::vector<float> tail(GUARD);
        CU(cudaMemcpy(tail.data(), dwork + W, GUARD * 4, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (float f : tail) bad += zt_float_bits(f) != poison;
        for (int64_t i = 0; i < GUARD + off; i++) bad += zt_float_bits(got[rep][(size_t)i]) != poison;
        for (int64_t i = GUARD + off + total; i < (int64_t)hx.size(); i++) bad += zt_float_bits(got[rep][(size_t)i]) != poison;
        CHECKF(bad == 0, "muon_ns %lld x %lld: %zu guard floats written", (long long)rows, (long long)cols, bad);
    }
    CHECKF(!memcmp(got[0].data(), got[1].data(), got[0].size() * 4), "muon_ns %lld x %lld: two runs differ",
           (long long)rows, (long long)cols);
    std::vector<float> host(hx.begin() + GUARD + off, hx.begin() + GUARD + off + total);
    CHECKF(zero_muon_orthogonalize(host.data(), batch, rows, cols, steps, scale, work.data(), &err) == ZERO_OK,
           "host orthogonalize: %s", err.msg);
    std::vector<double> ref((size_t)n);
    double gpu_err = 0, host_err = 0, top = 0;
    for (int64_t q = 0; q < batch; q++) {
        ns_ref(hx.data() + GUARD + off + q * n, rows, cols, steps, scale, ref.data());
        for (int64_t i = 0; i < n; i++) {
            const double want = ref[(size_t)i];
            top = std::max(top, fabs(want));
            gpu_err = std::max(gpu_err, fabs((double)got[0][(size_t)(GUARD + off + q * n + i)] - want));
            host_err = std::max(host_err, fabs((double)host[(size_t)(q * n + i)] - want));
            if (std::isnan(got[0][(size_t)(GUARD + off + q * n + i)])) gpu_err = INFINITY;
        }
    }
    const double tol = 1e-4 * std::max(1.0, top);
    muon_ns_worst = std::max(muon_ns_worst, gpu_err / tol);
    printf("muon_ns %4lld x %-4lld batch %lld steps %d scale %.3f: max |ref| %.3g, max |gpu - ref| %.3g, max |host fp32 - "
           "ref| %.3g (tolerance %.3g)\n",
           (long long)rows, (long long)cols, (long long)batch, steps, scale, top, gpu_err, host_err, tol);
    CHECKF(gpu_err <= tol, "muon_ns %lld x %lld batch %lld steps %d: max |gpu - ref| %.3g > %.3g", (long long)rows,
           (long long)cols, (long long)batch, steps, gpu_err, tol);
    cudaFree(dx), cudaFree(dwork);
}

static void test_muon_misuse(void) {
    zero_error err;
    float *d = nullptr;
    CU(cudaMalloc(&d, 4096));
    float *w = d + 512;
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 0, 4, 4, 5, 1.0f, w, 0, &err), ZERO_OK);  // nothing to do
    CHECK_EQ_INT(zero__cuda_k_muon_ns(NULL, 1, 4, 4, 5, 1.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "muon_ns");
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 1, 4, 4, 5, 1.0f, NULL, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "work (nil)");
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, -1, 4, 4, 5, 1.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "batch -1");
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 1, 0, 4, 5, 1.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 1, 4, -3, 5, 1.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "4 x -3");
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 1, 4, 4, -1, 1.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "-1 steps");
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 1, 4, 4, 5, 0.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "scale 0");
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 1, 4, 4, 5, NAN, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero__cuda_k_muon_ns((float *)((char *)d + 2), 1, 4, 4, 5, 1.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "aligned");
    CHECK_EQ_INT(zero__cuda_k_muon_ns(d, 1, (int64_t)1 << 40, (int64_t)1 << 40, 5, 1.0f, w, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "too large");
    CHECK_EQ_INT(zero__cuda_muon_ns(NULL, d, 1, 4, 4, 5, 1.0f, w, ZERO_STREAM_COMPUTE, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "no backend");
    // the element-wise parts: pass 1 is Muon's only, and a Muon segment needs v in a call of any rule
    zero_adam_seg s = seg(0, 4);
    s.muon = 1;
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.master = a.m = a.v = d, a.grad = d, a.grad_dtype = ZERO_DTYPE_FP32, a.segs = &s, a.n_segs = 1, a.grad_scale = 1.0f;
    a.kind = ZERO_OPTIMIZER_ADAMW, a.muon_pass = 1;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "muon_pass 1 with kind AdamW");
    a.kind = ZERO_OPTIMIZER_MUON, a.muon_pass = 2;
    CHECK_EQ_INT(zero__cuda_k_adam_multi(&a, 1, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "muon_pass 2 with kind Muon");
    a.muon_pass = 1;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.kind = ZERO_OPTIMIZER_LION, a.muon_pass = 0, a.v = NULL;  // Lion keeps no v, Muon's segment reads it
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "v is NULL");
    s.muon = 0;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    CU(cudaDeviceSynchronize());
    cudaFree(d);
}

// ---- bf16 storage: master_dtype and state_dtype ----

// fp32 to bf16 through the kernels' store (convert fp32 -> bf16: 16-byte groups where
// both arrays allow, single elements elsewhere) bit for bit zero_f32_to_bf16: NaNs of
// either sign, quiet and signalling with their payloads (quiet, the top payload bits
// kept), infinities, the largest floats (to inf or not), ties to even, subnormals and
// their ties, signed zeros, then random bit patterns.
static void test_bf16_bits(size_t doff, size_t soff) {
    static const uint32_t special[] = {
        0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F810000u,
        0x7F80FFFFu, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0x7F7F7FFFu, 0x7F7F8000u, 0x7F7E8000u, 0x3F808000u,
        0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0xBF818000u, 0x00000001u, 0x00008000u, 0x00018000u, 0x0000C000u,
        0x807FFFFFu, 0x007F8000u, 0x00800000u, 0x80000000u, 0x00000000u, 0x3F800000u};
    const size_t nsp = sizeof special / sizeof special[0], n = quick ? 2000 : 100000;
    buf dst(ZERO_DTYPE_BF16, n, doff), src(ZERO_DTYPE_FP32, n, soff);
    std::vector<unsigned char> got;
    zero_error err;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = i < nsp ? special[i] : (uint32_t)zt_rand_u64();
        if (i >= nsp && zt_rand_int(0, 7) == 0) u |= 0x7F800000u;  // many NaNs and infinities among the random ones
        memcpy((char *)src.hp() + 4 * i, &u, 4);
    }
    CU(dst.up());
    CU(src.up());
    CHECK_EQ_INT(zero__cuda_k_convert(dst.dp(), ZERO_DTYPE_BF16, src.dp(), ZERO_DTYPE_FP32, n, 0, 0, &err), ZERO_OK);
    CU(cudaDeviceSynchronize());
    CU(dst.down(got));
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++) {
        float x;
        uint16_t g;
        memcpy(&x, (const char *)src.hp() + 4 * i, 4);
        memcpy(&g, got.data() + (GUARD + doff + i) * 2, 2);
        if (g != zero_f32_to_bf16(x)) {
            bad++;
            if (first == n) first = i;
        }
    }
    CHECKF(bad == 0 && guard_damage(got, dst) == 0,
           "fp32 -> bf16 offsets %zu/%zu: %zu of %zu differ from zero_f32_to_bf16 (first: element %zu, 0x%08x), %zu guard "
           "elements written", doff, soff, bad, n, first,
           first < n ? (unsigned)zt_float_bits(((const float *)src.hp())[first]) : 0u, guard_damage(got, dst));
}

// host pointer to element 0 of b's range in h, a copy of b's host mirror
static void *hat(std::vector<unsigned char> &h, const buf &b) { return h.data() + (GUARD + b.off) * dsize(b.dt); }

// elements of b's allocation (guards included) whose bytes differ between x and y
static size_t elems_differ(const std::vector<unsigned char> &x, const std::vector<unsigned char> &y, const buf &b) {
    const size_t es = dsize(b.dt);
    size_t d = 0;
    for (size_t i = 0; i < b.total; i++) d += memcmp(&x[i * es], &y[i * es], es) != 0;
    return d;
}

// elements of b's allocation outside the segments (inside: per element of its range) not poison in got
static size_t elems_outside(const std::vector<unsigned char> &got, const buf &b, const std::vector<char> &inside) {
    size_t bad = 0;
    for (size_t i = 0; i < b.total; i++) {
        const bool in = i >= GUARD + b.off && i < GUARD + b.off + b.n && inside[i - GUARD - b.off];
        if (!in && !is_poison(got.data(), b.dt, i)) bad++;
    }
    return bad;
}

// What a storage call wrote where it must not, in array k of {master, m, v, grad,
// param}: the outputs' elements outside the segments no longer poison; the grad,
// an input storage_fill fills everywhere, changed anywhere (b.h is the input)
static size_t storage_outside(int k, const std::vector<unsigned char> &got, const buf &b, const std::vector<char> &inside) {
    return k == 3 ? elems_differ(got, b.h, b) : elems_outside(got, b, inside);
}

// Random inputs in the host mirrors of B = {master, m, v, grad, param} (each in its
// buf's dtype) where inside is set: master in [-2, 2], m in [-0.1, 0.1], v with
// sqrt(v) about |m| or more (Adam's state as training leaves it), m = v = 0 at one
// element in 16; a random grad everywhere; the rest (and the param) stay poison.
static void storage_fill(buf *const *B, const std::vector<char> &inside) {
    for (size_t i = 0; i < inside.size(); i++) {
        zt_store(B[3]->hp(), B[3]->dt, i, rand_val(B[3]->dt));
        if (!inside[i]) continue;
        float m = (float)zt_rand_range(-0.1, 0.1);
        float v = (float)((double)m * m * zt_rand_range(1, 10) + zt_rand_range(0, 1e-6));
        if (zt_rand_int(0, 15) == 0) m = v = 0.0f;
        zt_store(B[0]->hp(), B[0]->dt, i, (float)zt_rand_range(-2, 2));
        zt_store(B[1]->hp(), B[1]->dt, i, m);
        zt_store(B[2]->hp(), B[2]->dt, i, v);
    }
}

// Whether the CUDA kernels take rule kind on master mdt and state sdt (else
// zero__cuda_adam_check refuses it: test_storage_misuse): both fp32 or both bf16
// (Muon: not bf16, its segments need fp32 state), or a bf16 master with fp32
// state, for every rule.
static bool storage_runs(int kind, zero_dtype mdt, zero_dtype sdt) {
    if (mdt == sdt) return !(kind == ZERO_OPTIMIZER_MUON && sdt == ZERO_DTYPE_BF16);
    return mdt == ZERO_DTYPE_BF16;
}

// Whether the CUDA kernels take grad gdt and param kind pmode beside master mdt
// and state sdt (else zero__cuda_adam_check refuses them: test_storage_misuse):
// fp32 storage every one; a bf16 master or state the engine's bf16 compute
// alone, a grad in fp32 or bf16 and no param copy (none, or the master itself)
// or a bf16 one.
static bool storage_takes(zero_dtype mdt, zero_dtype sdt, zero_dtype gdt, int pmode) {
    if (mdt != ZERO_DTYPE_BF16 && sdt != ZERO_DTYPE_BF16) return true;
    return gdt != ZERO_DTYPE_FP16 && (pmode == P_NONE || pmode == P_MASTER || pmode == P_BF16);
}
// A random grad dtype and param kind that storage (mdt, sdt) takes.
static void storage_pick(zero_dtype mdt, zero_dtype sdt, zero_dtype *gdt, int *pmode) {
    do {
        *gdt = dtypes[zt_rand_int(0, 2)];
        *pmode = (int)zt_rand_int(0, P_COUNT - 1);
    } while (!storage_takes(mdt, sdt, *gdt, *pmode));
}

// The rules the storage tests run (rule.kind; Adam's adamw follows kind AdamW, Muon's
// other segments take AdamW as in test_muon; Lamb's eps_inside is picked per call).
static std::vector<rule> storage_rules(void) {
    std::vector<rule> v;
    v.push_back({ZERO_OPTIMIZER_ADAM, 0.9f, 0.999f, 1e-8f, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_ADAMW, 0.9f, 0.999f, 1e-8f, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_LION, 0.9f, 0.99f, 0, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_ADAGRAD, 0, 0, 1e-10f, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.0f, 0.0f, 0, 1});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.9f, 0.0f, 0, 1});
    v.push_back({ZERO_OPTIMIZER_SGD, 0, 0, 0, 0.9f, 0.1f, 1, 0});
    v.push_back({ZERO_OPTIMIZER_LAMB, 0.9f, 0.999f, 1e-8f, 0, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_MUON, 0.9f, 0.999f, 1e-8f, 0.95f, 0, 0, 0});
    v.push_back({ZERO_OPTIMIZER_MUON, 0.9f, 0.999f, 1e-8f, 0.9f, 0, 1, 0});
    return v;
}

// Runs calls a[0..n) on the GPU: one adam call when !multi (n is 1), else adam_multi.
static zero_result storage_gpu_calls(const std::vector<zero_adam_args> &a, int multi, double *scratch, size_t n_scratch,
                                     zero_error *err) {
    if (!multi) return zero__cuda_k_adam(&a[0], scratch, n_scratch, 0, err);
    return zero__cuda_k_adam_multi(a.data(), (int)a.size(), scratch, n_scratch, 0, err);
}

// Rule r with master in mdt and m, v in sdt (fp32 or bf16) on the CUDA backend
// against the host backend's adam on the same inputs, bit for bit: master, the
// state the rule keeps (the other NULL on both sides) and the param (the host's:
// rounded from the fp32 result, not from a bf16 master), every element outside the
// segments untouched (poison, guards included). Each array at its own shift of
// 0-7 elements when shifted (16-byte groups at other elements, or none in common).
// Lamb: pass 1 (m and v, compared, and each segment's sums within 1e-12 of the
// host's), then pass 2 by the host sums' trust ratios. Muon: a random half of the
// segments Muon's (the first one, not the last); pass 1 (m, v compared), then v of
// Muon's segments replaced on both sides by a stand-in for the orthogonalised
// update and a Muon call steps them by Muon's step and the others by AdamW. ncalls
// 0: one adam call per pass; else the segments cut into ncalls calls of adam_multi.
static void test_storage(const rule &r, zero_dtype mdt, zero_dtype sdt, zero_dtype gdt, int pmode,
                         std::vector<zero_adam_seg> segs, int ncalls, int shifted, double *scratch, size_t n_scratch,
                         const char *what) {
    const int lamb = r.kind == ZERO_OPTIMIZER_LAMB, muon = r.kind == ZERO_OPTIMIZER_MUON;
    int64_t end = 0;
    for (auto &s : segs) {
        end = std::max(end, s.offset + s.count);
        s.muon = muon ? (int)zt_rand_int(0, 1) : 0;
    }
    if (muon) segs.front().muon = 1;
    if (muon && segs.size() > 1) segs.back().muon = 0;
    // Muon's step on a bf16 master moves an element only where lr |u| reaches half its
    // ulp (|p| 2^-9): at lr 1e-4 and |u| <= 0.05 (the stand-in below) none of a segment
    // of 1000 in [-2, 2] did, so the pass checked nothing; at lr >= 1e-2 some 3% move
    if (muon && mdt == ZERO_DTYPE_BF16)
        for (auto &s : segs)
            if (s.muon) s.lr = std::max(s.lr, 1e-2f);
    const size_t N = (size_t)end + 5, ns = segs.size();
    const zero_dtype pdt = pmode == P_MASTER ? mdt
                           : pmode == P_FP16 ? ZERO_DTYPE_FP16
                           : pmode == P_BF16 ? ZERO_DTYPE_BF16
                                             : ZERO_DTYPE_FP32;
    const char *pname = pmode == P_MASTER ? "the master" : pmode_name[pmode];
    const int mask = muon ? 3 : zero_optimizer_state_mask((zero_optimizer_type)r.kind, r.momentum);
    size_t sh[5] = {0, 0, 0, 0, 0};
    if (shifted)
        for (size_t &x : sh) x = (size_t)zt_rand_int(0, 7);
    // master, m, v, grad, param: inputs in the bufs' host mirrors, poison outside the segments
    buf bm(mdt, N, sh[0]), bmm(sdt, N, sh[1]), bv(sdt, N, sh[2]), bg(gdt, N, sh[3]), bp(pdt, N, sh[4]);
    buf *B[5] = {&bm, &bmm, &bv, &bg, &bp};
    static const char *const bname[5] = {"master", "m", "v", "grad", "param"};
    std::vector<char> inside(N, 0), in_muon(N, 0);
    for (auto &s : segs)
        for (int64_t i = s.offset; i < s.offset + s.count; i++) inside[(size_t)i] = 1, in_muon[(size_t)i] = (char)s.muon;
    storage_fill(B, inside);
    for (buf *b : B) CU(b->up());
    std::vector<unsigned char> h[5];  // the host backend's arrays: copies of the inputs
    for (int k = 0; k < 5; k++) h[k] = B[k]->h;

    zero_adam_args a;
    memset(&a, 0, sizeof a);
    rule_args(r, &a);
    a.adamw = r.kind == ZERO_OPTIMIZER_ADAMW || muon;
    a.bc1 = a.bc2 = 1.0f;
    if (lamb) {
        a.eps_inside = (int)zt_rand_int(0, 1), a.eps = a.eps_inside ? 1e-6f : 1e-8f;
        a.bc1 = (float)zt_rand_range(0.1, 1), a.bc2 = (float)zt_rand_range(0.01, 1);
    } else if (r.kind == ZERO_OPTIMIZER_ADAM || r.kind == ZERO_OPTIMIZER_ADAMW || muon) {
        const int t = (int)zt_rand_int(1, 1000);
        a.bc1 = (float)(1.0 - pow(0.9, t)), a.bc2 = (float)(1.0 / sqrt(1.0 - pow(0.999, t)));
    }
    a.grad_scale = zt_rand_int(0, 3) ? (float)ldexp(zt_rand_range(0.5, 1), -(int)zt_rand_int(0, 10)) : 1.0f;
    a.grad_dtype = gdt, a.param_dtype = pdt, a.master_dtype = mdt, a.state_dtype = sdt;

    // the calls of each side: the segments cut into nc calls on the same arrays
    const int nc = std::max(ncalls, 1), multi = ncalls > 0;
    std::vector<double> sums0(2 * ns), hsums;
    std::vector<float> ratio(ns, 1.0f);
    for (auto &x : sums0) x = zt_rand_int(0, 1) ? zt_rand_range(0, 10) : 0.0;  // (a segment continued: sums so far)
    hsums = sums0;
    double *dsums = nullptr;
    float *dratio = nullptr;
    CU(cudaMalloc(&dsums, 2 * ns * sizeof(double) + 8));
    CU(cudaMalloc(&dratio, ns * 4 + 4));
    CU(cudaMemcpy(dsums, sums0.data(), 2 * ns * sizeof(double), cudaMemcpyHostToDevice));
    std::vector<zero_adam_args> hc((size_t)nc, a), dc((size_t)nc, a);
    for (int c = 0; c < nc; c++) {
        const size_t lo = ns * (size_t)c / (size_t)nc, hi = ns * (size_t)(c + 1) / (size_t)nc;
        zero_adam_args &x = hc[(size_t)c], &y = dc[(size_t)c];
        x.segs = y.segs = segs.data() + lo;
        x.n_segs = y.n_segs = (int)(hi - lo);
        x.master = hat(h[0], bm), y.master = bm.dp();
        x.m = mask & 1 ? hat(h[1], bmm) : NULL, y.m = mask & 1 ? bmm.dp() : NULL;
        x.v = mask & 2 ? hat(h[2], bv) : NULL, y.v = mask & 2 ? bv.dp() : NULL;
        x.grad = hat(h[3], bg), y.grad = bg.dp();
        x.param = pmode == P_NONE ? NULL : pmode == P_MASTER ? x.master : hat(h[4], bp);
        y.param = pmode == P_NONE ? NULL : pmode == P_MASTER ? y.master : bp.dp();
        x.lamb_sums = hsums.data() + 2 * lo, y.lamb_sums = dsums + 2 * lo;
        x.lamb_ratio = ratio.data() + lo, y.lamb_ratio = dratio + lo;
    }
    char name[128];
    snprintf(name, sizeof name, "%s%s%s master %s state %s", zero_optimizer_name((zero_optimizer_type)r.kind),
             r.kind == ZERO_OPTIMIZER_SGD ? (r.momentum != 0 ? " mom" : " plain") : "",
             (lamb && a.eps_inside) || (muon && r.nesterov) ? (lamb ? " eps_inside" : " nesterov") : "",
             zero_dtype_name(mdt), zero_dtype_name(sdt));

    // each pass on the host, then on the GPU, then every array compared
    const int passes = lamb || muon ? 2 : 1;
    for (int pass = 1; pass <= passes; pass++) {
        const int last = pass == passes;
        for (int c = 0; c < nc; c++)
            for (zero_adam_args *x : {&hc[(size_t)c], &dc[(size_t)c]}) {
                if (lamb) x->lamb_pass = pass;
                if (muon) x->muon_pass = last ? 0 : 1;
            }
        host_calls hcall = {hc.data(), nc, zero_error()};
        zero_error herr, err;
        CHECKF(zero_host_run(1, host_calls_fn, &hcall, &herr) == ZERO_OK, "host %s pass %d: %s", name, pass,
               hcall.err.msg);
        CHECKF(storage_gpu_calls(dc, multi, scratch, n_scratch, &err) == ZERO_OK, "%s pass %d: %s", name, pass, err.msg);
        CU(cudaDeviceSynchronize());
        std::vector<unsigned char> got[5];
        size_t differ[5] = {0, 0, 0, 0, 0}, outside = 0, n_in = 0, moved = 0;
        for (int k = 0; k < 5; k++) {
            CU(B[k]->down(got[k]));
            differ[k] = elems_differ(got[k], h[k], *B[k]);
            outside += storage_outside(k, got[k], *B[k], inside);
        }
        // what the pass moves: master in the last pass, m before it
        const int mk = last ? 0 : 1;
        for (size_t i = 0; i < N; i++) {
            if (!inside[i]) continue;
            n_in++;
            const size_t es = dsize(B[mk]->dt), at = (GUARD + B[mk]->off + i) * es;
            moved += memcmp(&got[mk][at], &B[mk]->h[at], es) != 0;
        }
        double worst = 0;
        if (lamb && pass == 1) {
            std::vector<double> gsums(2 * ns);
            CU(cudaMemcpy(gsums.data(), dsums, 2 * ns * sizeof(double), cudaMemcpyDeviceToHost));
            for (size_t k = 0; k < 2 * ns; k++)
                worst = std::max(worst, fabs(gsums[k] - hsums[k]) / std::max(1e-300, fabs(hsums[k])));
            for (size_t k = 0; k < ns; k++) {  // the engine's clamped ratio from the host's sums
                const double w = sqrt(hsums[2 * k]), u = sqrt(hsums[2 * k + 1]);
                ratio[k] = (float)(w != 0 && u != 0 ? std::min(10.0, std::max(0.01, w / u)) : 1.0);
            }
            CU(cudaMemcpy(dratio, ratio.data(), ns * 4, cudaMemcpyHostToDevice));
        }
        const size_t n_differ = differ[0] + differ[1] + differ[2] + differ[3] + differ[4];
        char sums[48] = "";
        if (lamb && pass == 1) snprintf(sums, sizeof sums, ", sums within %.1e", worst);
        printf("storage %-36s %-17s pass %d grad %s param %-11s shifted %d calls %d: %zu segments, %zu elements, %zu "
               "values differ from the host backend%s\n",
               name, what, pass, zero_dtype_name(gdt), pname, shifted, nc, ns, n_in, n_differ, sums);
        CHECKF(n_differ == 0 && outside == 0 && (n_in < 50 || moved > 0) && worst <= 1e-12,
               "storage %s %s pass %d grad %s param %s shifted %d calls %d: elements differing from the host backend: "
               "%s %zu, %s %zu, %s %zu, %s %zu, %s %zu; %zu outside elements written; %zu of %zu %s values moved; Lamb's "
               "sums within %.2e of the host's",
               name, what, pass, zero_dtype_name(gdt), pname, shifted, nc, bname[0], differ[0], bname[1],
               differ[1], bname[2], differ[2], bname[3], differ[3], bname[4], differ[4], outside, moved, n_in,
               bname[mk], worst);
        if (muon && !last) {  // the stand-in for the orthogonalised update, in fp32 v (Muon's state is fp32)
            for (size_t i = 0; i < N; i++)
                if (in_muon[i]) zt_store(hat(h[2], bv), sdt, i, (float)zt_rand_range(-0.05, 0.05));
            CU(cudaMemcpy(bv.d, h[2].data(), h[2].size(), cudaMemcpyHostToDevice));
        }
    }
    cudaFree(dsums), cudaFree(dratio);
}

// adam_multi over calls of the storages (bf16, a bf16 master with fp32 state,
// fp32), each call its own arrays at their own shifts, in runs of calls sharing a
// storage, against the host backend per call, bit for bit: a launch shared across
// storages would read one call's bf16 as another's fp32. The dtypes every storage
// takes: a grad in fp32 or bf16, a bf16 param or none. kind AdamW (one call each)
// or Lamb (pass 1 over all the calls, then pass 2 by the host sums' ratios).
static void test_storage_multi(int ncalls, int kind, double *scratch) {
    static const zero_dtype st[3][2] = {
        {ZERO_DTYPE_BF16, ZERO_DTYPE_BF16}, {ZERO_DTYPE_BF16, ZERO_DTYPE_FP32}, {ZERO_DTYPE_FP32, ZERO_DTYPE_FP32}};
    const int lamb = kind == ZERO_OPTIMIZER_LAMB, with_param = zt_rand_int(0, 2) != 0;
    const zero_dtype gdt = zt_rand_int(0, 1) ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32, pdt = ZERO_DTYPE_BF16;
    struct call {
        std::unique_ptr<buf> b[5];  // master, m, v, grad, param
        std::vector<unsigned char> h[5];
        std::vector<char> inside;
        std::vector<zero_adam_seg> segs;
        size_t first;  // its first segment's index in the sums and ratios
    };
    std::vector<call> calls((size_t)ncalls);
    size_t total_segs = 0;
    int s = (int)zt_rand_int(0, 2), runs = 1;
    for (call &c : calls) {  // segments first: the sums' and ratios' sizes
        c.segs = opt_segs(random_segs(quick ? 8 : 15, quick ? 3000 : 30000));
        c.first = total_segs;
        total_segs += c.segs.size();
    }
    std::vector<double> hsums(2 * total_segs, 0.0);
    std::vector<float> ratio(total_segs, 1.0f);
    double *dsums = nullptr;
    float *dratio = nullptr;
    CU(cudaMalloc(&dsums, hsums.size() * sizeof(double)));
    CU(cudaMalloc(&dratio, ratio.size() * 4));
    CU(cudaMemset(dsums, 0, hsums.size() * sizeof(double)));
    std::vector<zero_adam_args> hc((size_t)ncalls), dc((size_t)ncalls);
    for (int i = 0; i < ncalls; i++) {
        call &c = calls[(size_t)i];
        if (i > 0 && zt_rand_int(0, 2) == 0)  // a new run: another storage
            s = (s + (int)zt_rand_int(1, 2)) % 3, runs++;
        int64_t end = 0;
        for (auto &sg : c.segs) end = std::max(end, sg.offset + sg.count);
        const size_t N = (size_t)end + 3;
        const zero_dtype dts[5] = {st[s][0], st[s][1], st[s][1], gdt, pdt};
        c.inside.assign(N, 0);
        for (auto &sg : c.segs)
            for (int64_t j = sg.offset; j < sg.offset + sg.count; j++) c.inside[(size_t)j] = 1;
        buf *B[5];
        for (int k = 0; k < 5; k++) c.b[k].reset(new buf(dts[k], N, (size_t)zt_rand_int(0, 7))), B[k] = c.b[k].get();
        storage_fill(B, c.inside);
        for (int k = 0; k < 5; k++) {
            CU(B[k]->up());
            c.h[k] = B[k]->h;
        }
        zero_adam_args a;
        memset(&a, 0, sizeof a);
        a.kind = kind, a.adamw = 1, a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f;
        a.bc1 = lamb ? 0.5f : 0.2f, a.bc2 = lamb ? 0.75f : 1.1f, a.grad_scale = 0.5f;
        a.grad_dtype = gdt, a.param_dtype = pdt, a.master_dtype = st[s][0], a.state_dtype = st[s][1];
        a.segs = c.segs.data(), a.n_segs = (int)c.segs.size();
        hc[(size_t)i] = dc[(size_t)i] = a;
        zero_adam_args &x = hc[(size_t)i], &y = dc[(size_t)i];
        x.master = hat(c.h[0], *B[0]), x.m = hat(c.h[1], *B[1]), x.v = hat(c.h[2], *B[2]);
        x.grad = hat(c.h[3], *B[3]), x.param = with_param ? hat(c.h[4], *B[4]) : NULL;
        y.master = B[0]->dp(), y.m = B[1]->dp(), y.v = B[2]->dp(), y.grad = B[3]->dp();
        y.param = with_param ? B[4]->dp() : NULL;  // (none: the param buffer stays poison)
        x.lamb_sums = hsums.data() + 2 * c.first, y.lamb_sums = dsums + 2 * c.first;
        x.lamb_ratio = ratio.data() + c.first, y.lamb_ratio = dratio + c.first;
    }
    const int passes = lamb ? 2 : 1;
    for (int pass = 1; pass <= passes; pass++) {
        for (int i = 0; i < ncalls; i++) hc[(size_t)i].lamb_pass = dc[(size_t)i].lamb_pass = lamb ? pass : 0;
        host_calls hcall = {hc.data(), ncalls, zero_error()};
        zero_error herr, err;
        CHECKF(zero_host_run(1, host_calls_fn, &hcall, &herr) == ZERO_OK, "host storage multi pass %d: %s", pass,
               hcall.err.msg);
        CHECKF(zero__cuda_k_adam_multi(dc.data(), ncalls, scratch, ZERO__CUDA_SUMSQ_SCRATCH, 0, &err) == ZERO_OK,
               "storage multi pass %d: %s", pass, err.msg);
        CU(cudaDeviceSynchronize());
        size_t differ = 0, outside = 0, moved = 0;
        for (call &c : calls)
            for (int k = 0; k < 5; k++) {
                std::vector<unsigned char> got;
                CU(c.b[k]->down(got));
                differ += elems_differ(got, c.h[k], *c.b[k]);
                outside += storage_outside(k, got, *c.b[k], c.inside);
                if (k == (pass == passes ? 0 : 1)) moved += elems_differ(got, c.b[k]->h, *c.b[k]);
            }
        double worst = 0;
        if (lamb && pass == 1) {
            std::vector<double> gsums(hsums.size());
            CU(cudaMemcpy(gsums.data(), dsums, gsums.size() * sizeof(double), cudaMemcpyDeviceToHost));
            for (size_t k = 0; k < hsums.size(); k++)
                worst = std::max(worst, fabs(gsums[k] - hsums[k]) / std::max(1e-300, fabs(hsums[k])));
            for (size_t k = 0; k < total_segs; k++) {
                const double w = sqrt(hsums[2 * k]), u = sqrt(hsums[2 * k + 1]);
                ratio[k] = (float)(w != 0 && u != 0 ? std::min(10.0, std::max(0.01, w / u)) : 1.0);
            }
            CU(cudaMemcpy(dratio, ratio.data(), ratio.size() * 4, cudaMemcpyHostToDevice));
        }
        printf("storage adam_multi %s pass %d: %d calls in %d runs of one storage, grad %s param %s, %zu segments: %zu "
               "elements differ from the host backend\n",
               zero_optimizer_name((zero_optimizer_type)kind), pass, ncalls, runs, zero_dtype_name(gdt),
               with_param ? zero_dtype_name(pdt) : "none", total_segs, differ);
        CHECKF(differ == 0 && outside == 0 && moved > 0 && worst <= 1e-12,
               "storage adam_multi %s pass %d: %zu elements differ from the host backend, %zu outside elements "
               "written, %zu moved, Lamb's sums within %.2e",
               zero_optimizer_name((zero_optimizer_type)kind), pass, differ, outside, moved, worst);
    }
    cudaFree(dsums), cudaFree(dratio);
}

// The storage the CUDA kernels refuse, and what they take: bf16 state under Muon's
// segments (pass 1 and the step, adam and adam_multi), an fp32 master with bf16
// state, a storage dtype other than fp32 and bf16, a misaligned bf16 master; a bf16
// master with fp32 state for every rule (Lion, Lamb's pass 2, AdamW, Muon), a bf16
// master at a 2-byte boundary and a Muon call with bf16 state but no Muon segment
// run. Then the dtypes beside a bf16 master or state: an fp16 grad, an fp32 or fp16
// param copy refused on both bf16 storages (Muon's pass 1, Lamb's pass 2, a Lion
// call, adam_multi with a refused call after a good one), with the message naming
// them; fp32 and bf16 grads with no param, the master as the param, a NULL param
// of any dtype, a bf16 param run; on fp32 storage every one runs.
static void test_storage_misuse(void) {
    zero_error err;
    unsigned char *d = nullptr;
    CU(cudaMalloc(&d, 4096));
    CU(cudaMemset(d, 0, 4096));  // (zeros: the calls that run step finite numbers)
    zero_adam_seg s = seg(0, 4);
    s.muon = 1;
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.master = a.m = a.v = d + 1024, a.grad = d + 2048, a.grad_dtype = ZERO_DTYPE_FP32, a.grad_scale = 1.0f;
    a.segs = &s, a.n_segs = 1;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f, a.bc1 = 1.0f, a.bc2 = 1.0f, a.momentum = 0.95f;
    a.kind = ZERO_OPTIMIZER_MUON, a.muon_pass = 1;
    a.master_dtype = ZERO_DTYPE_BF16, a.state_dtype = ZERO_DTYPE_FP32;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);  // bf16 master, fp32 state: Muon's
    a.state_dtype = ZERO_DTYPE_BF16;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "Muon's");
    CHECK_STR_CONTAINS(err.msg, "state_dtype bf16");
    a.muon_pass = 0;  // the step
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "Muon's");
    a.kind = ZERO_OPTIMIZER_ADAMW;  // a Muon segment in a call of another rule too
    CHECK_EQ_INT(zero__cuda_k_adam_multi(&a, 1, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "Muon's");
    s.muon = 0;  // no Muon segment: bf16 state steps
    a.kind = ZERO_OPTIMIZER_MUON;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.muon_pass = 1;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.kind = ZERO_OPTIMIZER_LION, a.muon_pass = 0, a.state_dtype = ZERO_DTYPE_FP32;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);  // bf16 master, fp32 state: every rule
    a.kind = ZERO_OPTIMIZER_LAMB, a.lamb_pass = 2, a.lamb_ratio = (const float *)(d + 3072);
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.lamb_pass = 0, a.lamb_ratio = NULL;
    a.kind = ZERO_OPTIMIZER_ADAMW;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.master_dtype = ZERO_DTYPE_FP32, a.state_dtype = ZERO_DTYPE_BF16;  // fp32 master, bf16 state: no rule
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "master_dtype fp32 with state_dtype bf16 (AdamW)");
    a.master_dtype = ZERO_DTYPE_FP16, a.state_dtype = ZERO_DTYPE_FP32;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "master_dtype fp16");
    a.master_dtype = ZERO_DTYPE_FP32, a.state_dtype = (zero_dtype)ZERO__DTYPE_F64;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "state_dtype fp64");
    a.master_dtype = a.state_dtype = ZERO_DTYPE_BF16;
    a.master = d + 1;  // bf16 elements at an odd address
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "aligned");
    a.master = d + 2;  // a 2-byte boundary is a bf16 element's
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.m = d + 1026;  // and the state's when it is bf16
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.state_dtype = ZERO_DTYPE_FP32;  // not when it is fp32
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "m (");
    CU(cudaDeviceSynchronize());

    // the grad and param dtypes beside a bf16 master or state (the engine's bf16 compute)
    static const zero_dtype st[3][2] = {
        {ZERO_DTYPE_BF16, ZERO_DTYPE_BF16}, {ZERO_DTYPE_BF16, ZERO_DTYPE_FP32}, {ZERO_DTYPE_FP32, ZERO_DTYPE_FP32}};
    for (int si = 0; si < 3; si++) {
        const bool b16 = si < 2;
        const zero_result refused = b16 ? ZERO_ERR_INVALID_ARG : ZERO_OK;
        char want[96];
        memset(&a, 0, sizeof a);
        s = seg(0, 4);
        a.master = d + 1024, a.m = d + 1280, a.v = d + 1536, a.grad = d + 2048, a.grad_scale = 1.0f;
        a.segs = &s, a.n_segs = 1;
        a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f, a.bc1 = 1.0f, a.bc2 = 1.0f;
        a.kind = ZERO_OPTIMIZER_ADAMW, a.adamw = 1;
        a.master_dtype = st[si][0], a.state_dtype = st[si][1];
        for (zero_dtype gdt : {ZERO_DTYPE_FP32, ZERO_DTYPE_BF16}) {  // taken: no param, the master, a NULL one, bf16
            a.grad_dtype = gdt;
            a.param = NULL, a.param_dtype = ZERO_DTYPE_FP16;
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
            a.param = a.master, a.param_dtype = st[si][0];
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
            a.param = d + 3584, a.param_dtype = ZERO_DTYPE_BF16;
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
        }
        a.grad_dtype = ZERO_DTYPE_FP16, a.param = NULL;  // an fp16 grad
        CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), refused);
        if (b16) {
            snprintf(want, sizeof want, "grad_dtype fp16, param none with master_dtype bf16, state_dtype %s",
                     zero_dtype_name(st[si][1]));
            CHECK_STR_CONTAINS(err.msg, want);
            CHECK_STR_CONTAINS(err.msg, "bf16 master/state take fp32 or bf16 gradients and a bf16 (or no) parameter copy");
            CHECK_STR_CONTAINS(err.msg, "HINT: ");
        }
        for (zero_dtype pdt : {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16}) {  // an fp32 or fp16 param copy
            a.grad_dtype = ZERO_DTYPE_BF16, a.param = d + 3584, a.param_dtype = pdt;
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), refused);
            snprintf(want, sizeof want, "grad_dtype bf16, param %s with master_dtype bf16", zero_dtype_name(pdt));
            if (b16) CHECK_STR_CONTAINS(err.msg, want);
        }
        a.param = a.master, a.param_dtype = ZERO_DTYPE_FP32;  // the master's buffer in another dtype is a copy
        CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), b16 ? ZERO_ERR_INVALID_ARG : ZERO_OK);
        a.param = NULL;
        a.kind = ZERO_OPTIMIZER_LION, a.grad_dtype = ZERO_DTYPE_FP16;  // every rule, every pass
        CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), refused);
        if (b16) CHECK_STR_CONTAINS(err.msg, "grad_dtype fp16");
        a.kind = ZERO_OPTIMIZER_LAMB, a.lamb_pass = 2, a.lamb_ratio = (const float *)(d + 3072);
        a.grad_dtype = ZERO_DTYPE_FP32, a.param = d + 3584, a.param_dtype = ZERO_DTYPE_FP16;
        CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), refused);
        if (b16) CHECK_STR_CONTAINS(err.msg, "param fp16");
        a.param_dtype = ZERO_DTYPE_BF16;
        CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
        a.lamb_pass = 0, a.lamb_ratio = NULL;
        if (st[si][1] == ZERO_DTYPE_FP32) {  // Muon's pass 1 (its state is fp32)
            s.muon = 1;
            a.kind = ZERO_OPTIMIZER_MUON, a.muon_pass = 1, a.momentum = 0.95f, a.param = NULL;
            a.grad_dtype = ZERO_DTYPE_FP16;
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), refused);
            if (b16) CHECK_STR_CONTAINS(err.msg, "grad_dtype fp16");
            a.grad_dtype = ZERO_DTYPE_BF16;
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
            a.muon_pass = 0, a.param = d + 3584, a.param_dtype = ZERO_DTYPE_FP32;  // Muon's step
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), refused);
            if (b16) CHECK_STR_CONTAINS(err.msg, "param fp32");
            a.param_dtype = ZERO_DTYPE_BF16;
            CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
            s.muon = 0, a.muon_pass = 0, a.momentum = 0.0f;
        }
        a.kind = ZERO_OPTIMIZER_ADAMW, a.grad_dtype = ZERO_DTYPE_BF16, a.param = NULL;  // adam_multi: the second call
        zero_adam_args two[2] = {a, a};
        two[1].param = d + 3584, two[1].param_dtype = ZERO_DTYPE_FP16;
        CHECK_EQ_INT(zero__cuda_k_adam_multi(two, 2, NULL, 0, 0, &err), refused);
        if (b16) CHECK_STR_CONTAINS(err.msg, "param fp16");
        CU(cudaDeviceSynchronize());
    }
    cudaFree(d);
}

// ---- past 2^31 elements: periodic inputs, every output element checked on the GPU ----

#define PERIOD 7168u  // 2^31 mod 7168 = 1024: an index cut to 32 bits lands on another phase

template <typename U> static __global__ void fill_periodic(U *x, size_t n, const U *table) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = table[i % PERIOD];
}
// elements past the first period that differ (bitwise) from their phase in the first period
template <typename U>
static __global__ void count_aperiodic(const U *x, size_t n, unsigned long long *bad) {
    unsigned long long c = 0;
    for (size_t i = PERIOD + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        c += x[i] != x[i % PERIOD];
    if (c) atomicAdd(bad, c);
}

template <typename U> static unsigned long long aperiodic(const void *x, size_t n, unsigned long long *dbad) {
    unsigned long long bad = ~0ull;
    cudaMemset(dbad, 0, sizeof *dbad);
    count_aperiodic<U><<<1024, 256>>>((const U *)x, n, dbad);
    cudaMemcpy(&bad, dbad, sizeof bad, cudaMemcpyDeviceToHost);
    return bad;
}

static void test_large(double *dout, double *scratch) {
    const size_t n = (1ull << 31) + 11;
    size_t free_b = 0, total_b = 0;
    CU(cudaMemGetInfo(&free_b, &total_b));
    if (free_b < n * 18 + (1ull << 30)) {
        printf("large ranges: skipped, %.1f GiB free, %.1f needed\n", free_b / 1073741824.0, n * 18 / 1073741824.0);
        return;
    }
    unsigned long long *dbad = nullptr;
    uint16_t *x16 = nullptr, *t16 = nullptr;
    CU(cudaMalloc(&dbad, sizeof *dbad));
    CU(cudaMalloc(&x16, n * 2));
    CU(cudaMalloc(&t16, PERIOD * 2));
    std::vector<uint16_t> table(PERIOD), first(PERIOD);
    zero_error err;

    // scale, fp16, 2^31 + 11 elements from element 0 of an aligned buffer
    for (unsigned i = 0; i < PERIOD; i++) table[i] = zero_f32_to_f16(rand_val(ZERO_DTYPE_FP16));
    CU(cudaMemcpy(t16, table.data(), PERIOD * 2, cudaMemcpyHostToDevice));
    fill_periodic<uint16_t><<<1024, 256>>>(x16, n, t16);
    CHECK_EQ_INT(zero__cuda_k_scale(x16, n, ZERO_DTYPE_FP16, 0.375f, 0, &err), ZERO_OK);
    CU(cudaMemcpy(first.data(), x16, PERIOD * 2, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (unsigned i = 0; i < PERIOD; i++) bad += first[i] != zero_f32_to_f16(zero_f16_to_f32(table[i]) * 0.375f);
    unsigned long long ap = aperiodic<uint16_t>(x16, n, dbad);
    CHECKF(bad == 0 && ap == 0, "scale fp16 n 2^31+11: %zu wrong in the first period, %llu elsewhere", bad, ap);
    printf("large: scale fp16 over %zu elements: %zu + %llu wrong\n", n, bad, ap);

    // sumsq over the same (bf16 view of the bits does not matter: read as fp16)
    {
        double res[2], in[2] = {0, 0};
        csum S, Sr;
        zero_result r = ZERO_ERR_STATE;
        for (unsigned i = 0; i < PERIOD; i++) {
            double v = zero_f16_to_f32(first[i]);
            S.add(v * v);
            if (i < n % PERIOD) Sr.add(v * v);
        }
        double ref = (double)(n / PERIOD) * S.get() + Sr.get();
        sumsq_run(x16, n, ZERO_DTYPE_FP16, dout, scratch, in, res, &r);
        CHECKF(r == ZERO_OK && zt_near(res[0], ref, 1e-12) && res[1] == 0, "sumsq fp16 n 2^31+11: %.17g want %.17g",
               res[0], ref);
        uint16_t inf = 0x7C00;
        CU(cudaMemcpy(x16 + (1ull << 31) + 5, &inf, 2, cudaMemcpyHostToDevice));
        sumsq_run(x16, n, ZERO_DTYPE_FP16, dout, scratch, in, res, &r);
        CHECKF(r == ZERO_OK && !isfinite(res[0]) && res[1] == 1, "sumsq fp16 n 2^31+11, inf at 2^31+5: flag %g", res[1]);
    }
    cudaFree(x16);
    cudaFree(t16);

    // adam: one segment of 2^31 + 11 elements, fp16 grad, bf16 param
    float *mas = nullptr, *mm = nullptr, *vv = nullptr, *tf = nullptr;
    uint16_t *gr = nullptr, *pa = nullptr;
    CU(cudaMalloc(&mas, n * 4));
    CU(cudaMalloc(&mm, n * 4));
    CU(cudaMalloc(&vv, n * 4));
    CU(cudaMalloc(&gr, n * 2));
    CU(cudaMalloc(&pa, n * 2));
    CU(cudaMalloc(&tf, PERIOD * 4 * 3));
    CU(cudaMalloc(&t16, PERIOD * 2));
    std::vector<float> tm(PERIOD * 3);
    for (unsigned i = 0; i < PERIOD; i++) {
        tm[i] = (float)zt_rand_range(-2, 2);
        tm[PERIOD + i] = (float)zt_rand_range(-0.1, 0.1);
        tm[2 * PERIOD + i] = (float)zt_rand_range(0, 0.01);
        table[i] = zero_f32_to_f16(rand_val(ZERO_DTYPE_FP16));
    }
    CU(cudaMemcpy(tf, tm.data(), tm.size() * 4, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(t16, table.data(), PERIOD * 2, cudaMemcpyHostToDevice));
    fill_periodic<uint32_t><<<1024, 256>>>((uint32_t *)mas, n, (const uint32_t *)tf);
    fill_periodic<uint32_t><<<1024, 256>>>((uint32_t *)mm, n, (const uint32_t *)tf + PERIOD);
    fill_periodic<uint32_t><<<1024, 256>>>((uint32_t *)vv, n, (const uint32_t *)tf + 2 * PERIOD);
    fill_periodic<uint16_t><<<1024, 256>>>(gr, n, t16);
    CU(cudaMemset(pa, 0xFF, n * 2));
    zero_adam_seg s = seg(0, (int64_t)n);
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.master = mas, a.m = mm, a.v = vv, a.grad = gr, a.grad_dtype = ZERO_DTYPE_FP16;
    a.param = pa, a.param_dtype = ZERO_DTYPE_BF16;
    a.segs = &s, a.n_segs = 1;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f, a.bc1 = 0.5f, a.bc2 = 1.25f, a.grad_scale = 0.5f, a.adamw = 1;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    CU(cudaDeviceSynchronize());
    // the first period against the host backend
    std::vector<float> hm(tm.begin(), tm.begin() + PERIOD), hmm(tm.begin() + PERIOD, tm.begin() + 2 * PERIOD),
        hv(tm.begin() + 2 * PERIOD, tm.end()), gm(PERIOD), gmm(PERIOD), gv(PERIOD);
    std::vector<uint16_t> gp(PERIOD);
    zero_adam_seg hs = s;
    hs.count = PERIOD;
    zero_adam_args ha = a;
    ha.master = hm.data(), ha.m = hmm.data(), ha.v = hv.data(), ha.grad = table.data(), ha.param = NULL;
    ha.segs = &hs;
    host_adam_call hc;
    hc.a = &ha;
    zero_error herr;
    CHECK_EQ_INT(zero_host_run(1, host_adam_fn, &hc, &herr), ZERO_OK);
    CU(cudaMemcpy(gm.data(), mas, PERIOD * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gmm.data(), mm, PERIOD * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gv.data(), vv, PERIOD * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(gp.data(), pa, PERIOD * 2, cudaMemcpyDeviceToHost));
    bad = 0;
    for (unsigned i = 0; i < PERIOD; i++)
        bad += ulps(gm[i], hm[i]) > 2 || ulps(gmm[i], hmm[i]) > 2 || ulps(gv[i], hv[i]) > 2 ||
               gp[i] != zero_f32_to_bf16(gm[i]);
    ap = aperiodic<uint32_t>(mas, n, dbad) + aperiodic<uint32_t>(mm, n, dbad) + aperiodic<uint32_t>(vv, n, dbad) +
         aperiodic<uint16_t>(pa, n, dbad);
    CHECKF(bad == 0 && ap == 0, "adam over 2^31+11 elements: %zu wrong in the first period, %llu elsewhere", bad, ap);
    printf("large: adam over %zu elements: %zu + %llu wrong\n", n, bad, ap);
    cudaFree(mas), cudaFree(mm), cudaFree(vv), cudaFree(gr), cudaFree(pa), cudaFree(tf), cudaFree(t16), cudaFree(dbad);
}

// ---- misuse ----

static void test_misuse(double *dout, double *scratch) {
    zero_error err;
    float *d = nullptr;
    CU(cudaMalloc(&d, 64));
    CHECK_EQ_INT(zero__cuda_k_scale(d, 4, ZERO_DTYPE_DEFAULT, 2.0f, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "scale");
    CHECK_EQ_INT(zero__cuda_k_scale(NULL, 4, ZERO_DTYPE_FP32, 2.0f, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero__cuda_k_scale(NULL, 0, ZERO_DTYPE_FP32, 2.0f, 0, &err), ZERO_OK);
    CHECK_EQ_INT(zero__cuda_k_scale((char *)d + 2, 4, ZERO_DTYPE_FP32, 2.0f, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "aligned");
    CHECK_EQ_INT(zero__cuda_k_convert(d, ZERO_DTYPE_FP32, d, (zero_dtype)ZERO__DTYPE_F64, 4, 0, 0, &err),
                 ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "src");
    CHECK_EQ_INT(zero__cuda_k_sumsq(d, 4, ZERO_DTYPE_FP32, NULL, scratch, ZERO__CUDA_SUMSQ_SCRATCH, 0, &err),
                 ZERO_ERR_INVALID_ARG);
    CHECK_EQ_INT(zero__cuda_k_sumsq(d, 4, ZERO_DTYPE_FP32, dout, scratch, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "scratch");
    zero_adam_seg s = seg(-1, 4);
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.master = a.m = a.v = d, a.grad = d, a.grad_dtype = ZERO_DTYPE_FP32, a.segs = &s, a.n_segs = 1;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "segment 0");
    a.n_segs = 0;  // nothing to do
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    CHECK_EQ_INT(zero__cuda_k_adam(NULL, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    // the state a rule keeps must be there; the state it does not keep may be NULL
    zero_adam_seg s4 = seg(0, 4);
    a.segs = &s4, a.n_segs = 1, a.grad_scale = 1.0f;
    a.kind = 99;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "kind 99");
    a.kind = ZERO_OPTIMIZER_LAMB;  // two passes: neither named is refused, not stepped as Adam
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "Lamb pass 0 without its pass (1 or 2)");
    a.lamb_pass = 1;  // pass 1 needs its sums, and scratch for the blocks' sums
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "without its lamb_sums");
    a.lamb_sums = dout;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "needs scratch");
    a.lamb_pass = 2, a.lamb_sums = NULL;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "without its lamb_ratio");
    a.lamb_pass = 0;
    a.kind = ZERO_OPTIMIZER_LION, a.m = NULL;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "m is NULL");
    a.kind = ZERO_OPTIMIZER_ADAGRAD, a.eps = 1e-10f, a.master = a.v = d, a.m = NULL;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.v = NULL;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(err.msg, "v is NULL");
    a.kind = ZERO_OPTIMIZER_SGD, a.momentum = 0.0f;  // no momentum: no state at all
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_OK);
    a.momentum = 0.9f;
    CHECK_EQ_INT(zero__cuda_k_adam(&a, NULL, 0, 0, &err), ZERO_ERR_INVALID_ARG);
    CU(cudaDeviceSynchronize());
    cudaFree(d);
}

// ---- throughput (printed, not checked) ----

static double median5(float *t) {
    std::sort(t, t + 5);
    return t[2];
}

static void bench(void) {
    const size_t n = 1ull << 28;
    const size_t copy_bytes = 2ull << 30;
    float *mas = nullptr, *mm = nullptr, *vv = nullptr, *tf = nullptr;
    uint16_t *gr = nullptr, *pa = nullptr, *t16 = nullptr;
    void *c0 = nullptr, *c1 = nullptr;
    cudaEvent_t e0, e1;
    float t[5];
    zero_error err;
    CU(cudaMalloc(&mas, n * 4));
    CU(cudaMalloc(&mm, n * 4));
    CU(cudaMalloc(&vv, n * 4));
    CU(cudaMalloc(&gr, n * 2));
    CU(cudaMalloc(&pa, n * 2));
    CU(cudaMalloc(&tf, PERIOD * 4));
    CU(cudaMalloc(&t16, PERIOD * 2));
    CU(cudaMalloc(&c0, copy_bytes));
    CU(cudaMalloc(&c1, copy_bytes));
    std::vector<float> tm(PERIOD);
    std::vector<uint16_t> th(PERIOD);
    for (unsigned i = 0; i < PERIOD; i++) {
        tm[i] = (float)zt_rand_range(0.001, 0.01);
        th[i] = zero_f32_to_f16(rand_val(ZERO_DTYPE_FP16));
    }
    CU(cudaMemcpy(tf, tm.data(), PERIOD * 4, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(t16, th.data(), PERIOD * 2, cudaMemcpyHostToDevice));
    fill_periodic<uint32_t><<<1024, 256>>>((uint32_t *)mas, n, (const uint32_t *)tf);
    fill_periodic<uint32_t><<<1024, 256>>>((uint32_t *)mm, n, (const uint32_t *)tf);
    fill_periodic<uint32_t><<<1024, 256>>>((uint32_t *)vv, n, (const uint32_t *)tf);
    fill_periodic<uint16_t><<<1024, 256>>>(gr, n, t16);
    fill_periodic<uint32_t><<<1024, 256>>>((uint32_t *)c0, copy_bytes / 4, (const uint32_t *)tf);
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    zero_adam_seg s = seg(0, (int64_t)n);
    s.weight_decay = 0.01f;
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.master = mas, a.m = mm, a.v = vv, a.grad = gr, a.grad_dtype = ZERO_DTYPE_FP16;
    a.param = pa, a.param_dtype = ZERO_DTYPE_FP16, a.segs = &s, a.n_segs = 1;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f, a.bc1 = 0.5f, a.bc2 = 1.25f, a.grad_scale = 1.0f / 1024, a.adamw = 1;
    for (int w = 0; w < 3; w++) zero__cuda_k_adam(&a, NULL, 0, 0, &err), cudaMemcpyAsync(c1, c0, copy_bytes, cudaMemcpyDeviceToDevice, 0);
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0, 0);
        cudaMemcpyAsync(c1, c0, copy_bytes, cudaMemcpyDeviceToDevice, 0);
        cudaEventRecord(e1, 0);
        CU(cudaEventSynchronize(e1));
        cudaEventElapsedTime(&t[r], e0, e1);
    }
    const double copy_ms = median5(t), copy_gbs = 2.0 * copy_bytes / (copy_ms * 1e6);
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0, 0);
        zero__cuda_k_adam(&a, NULL, 0, 0, &err);
        cudaEventRecord(e1, 0);
        CU(cudaEventSynchronize(e1));
        cudaEventElapsedTime(&t[r], e0, e1);
    }
    const double adam_ms = median5(t), adam_gbs = 28.0 * n / (adam_ms * 1e6);
    // sumsq: fp16 gradients, read once
    double *dout = nullptr, *scr = nullptr;
    CU(cudaMalloc(&dout, 16));
    CU(cudaMalloc(&scr, ZERO__CUDA_SUMSQ_SCRATCH * sizeof(double)));
    CU(cudaMemset(dout, 0, 16));
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0, 0);
        zero__cuda_k_sumsq(gr, n, ZERO_DTYPE_FP16, dout, scr, ZERO__CUDA_SUMSQ_SCRATCH, 0, &err);
        cudaEventRecord(e1, 0);
        CU(cudaEventSynchronize(e1));
        cudaEventElapsedTime(&t[r], e0, e1);
    }
    const double sumsq_ms = median5(t), sumsq_gbs = 2.0 * n / (sumsq_ms * 1e6);
    CU(cudaGetLastError());
    printf("throughput (median of 5 after warm-up, cudaEvents):\n");
    printf("  D2D cudaMemcpy %.2f GiB:           %8.3f ms  %7.1f GB/s (read + write)\n", copy_bytes / 1073741824.0,
           copy_ms, copy_gbs);
    printf("  adam 2^28 params, fp16 grad/param: %8.3f ms  %7.1f GB/s (28 B/param) = %.1f%% of D2D copy\n", adam_ms,
           adam_gbs, 100.0 * adam_gbs / copy_gbs);
    printf("  sumsq 2^28 fp16:                   %8.3f ms  %7.1f GB/s = %.1f%% of D2D copy\n", sumsq_ms, sumsq_gbs,
           100.0 * sumsq_gbs / copy_gbs);
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    cudaFree(mas), cudaFree(mm), cudaFree(vv), cudaFree(gr), cudaFree(pa), cudaFree(tf), cudaFree(t16);
    cudaFree(c0), cudaFree(c1), cudaFree(dout), cudaFree(scr);
}

// zero_cuda_pcie_bandwidth_ready's callback: counts its calls, waits wait_s, returns result
struct pcie_ready_ctx {
    int calls;
    double wait_s;
    zero_result result;
};

static zero_result pcie_ready(void *ctx, zero_error *err) {
    pcie_ready_ctx *c = (pcie_ready_ctx *)ctx;
    c->calls++;
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < c->wait_s) {
    }
    if (c->result != ZERO_OK && err) {
        memset(err, 0, sizeof *err);
        err->code = c->result;
        snprintf(err->msg, sizeof err->msg, "pcie_ready: the ranks did not meet");
    }
    return c->result;
}

int main() {
    int ndev = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);  // progress survives a crash
    quick = getenv("ZERO_TEST_QUICK") && atoi(getenv("ZERO_TEST_QUICK"));
    zt_seed("gpu_kernels");
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no GPU: nothing to test\n");
        CHECK(0);
        return zt_finish();
    }
    double *dout = nullptr, *scratch = nullptr;
    if (cudaMalloc(&dout, 2 * sizeof(double)) != cudaSuccess ||
        cudaMalloc(&scratch, ZERO__CUDA_SUMSQ_SCRATCH * sizeof(double)) != cudaSuccess) {
        CHECK(0);
        return zt_finish();
    }
    std::vector<size_t> sizes = {0, 1, 7, 8, 9, 1000, quick ? (size_t)4099 : (size_t)(1 << 20) + 3};
    const size_t offs[4] = {0, 1, 3, 6};
    const float factors[4] = {0.5f, 1.0f / 3, 3.7f, 1.0f / 65536};

    for (zero_dtype dt : dtypes)
        for (size_t n : sizes)
            for (int k = 0; k < 4; k++) test_scale(dt, n, offs[(k + n) % 4], factors[k]);
    int pass0 = zt_pass, fail0 = zt_fail;
    printf("scale: %d checks, %d failed\n", zt_pass - 0 + zt_fail, zt_fail);

    for (zero_dtype ddt : dtypes)
        for (zero_dtype sdt : dtypes)
            for (size_t n : sizes)
                for (int acc = 0; acc < 2; acc++) {
                    test_convert(ddt, sdt, n, 0, 0, acc);  // aligned: the vector path
                    test_convert(ddt, sdt, n, offs[zt_rand_int(0, 3)], offs[zt_rand_int(0, 3)], acc);
                }
    for (zero_dtype dt : dtypes) test_convert_inplace(dt, quick ? 1001 : 100003, 1);
    printf("convert: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    for (zero_dtype dt : dtypes)
        for (size_t n : sizes)
            for (size_t off : {(size_t)0, (size_t)3}) test_sumsq(dt, n, off, dout, scratch);
    printf("sumsq: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    // adam: every grad dtype x param kind x adamw on many segments in one call
    for (zero_dtype gdt : dtypes)
        for (int pm = 0; pm < P_COUNT; pm++)
            for (int adamw = 0; adamw < 2; adamw++)
                test_adam(gdt, pm, adamw, random_segs(quick ? 40 : 200, quick ? 3000 : 100000), "random segments");
    // one segment of each size at unaligned starts
    for (size_t n : sizes)
        for (size_t off : {(size_t)0, (size_t)1, (size_t)5}) {
            std::vector<zero_adam_seg> one = {seg((int64_t)off, (int64_t)n)};
            test_adam(dtypes[zt_rand_int(0, 2)], (int)zt_rand_int(0, P_COUNT - 1), (int)zt_rand_int(0, 1), one,
                      n == 0 ? "one empty segment" : "one segment");
        }
    printf("adam: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    // Lion, Adagrad, SGD: each rule x grad dtype x param kind on many segments in one call, then
    // single segments of each size at unaligned starts with a rule picked at random
    for (const rule &r : opt_rules())
        for (zero_dtype gdt : dtypes)
            for (int pm = 0; pm < P_COUNT; pm++)
                test_opt(r, gdt, pm, opt_segs(random_segs(quick ? 30 : 120, quick ? 3000 : 60000)), "random segments");
    for (size_t n : sizes)
        for (size_t off : {(size_t)0, (size_t)1, (size_t)5}) {
            const std::vector<rule> rules = opt_rules();
            std::vector<zero_adam_seg> one = opt_segs({seg((int64_t)off, (int64_t)n)});
            test_opt(rules[(size_t)zt_rand_int(0, (long)rules.size() - 1)], dtypes[zt_rand_int(0, 2)],
                     (int)zt_rand_int(0, P_COUNT - 1), one, n == 0 ? "one empty segment" : "one segment");
        }
    printf("lion, adagrad, sgd: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    // Lamb: every grad dtype x param kind on many segments, eps inside and outside the root; a small
    // scratch (many launches); single segments of each size at unaligned starts
    for (zero_dtype gdt : dtypes)
        for (int pm = 0; pm < P_COUNT; pm++)
            test_lamb(gdt, pm, pm % 2, opt_segs(random_segs(quick ? 30 : 120, quick ? 3000 : 60000)), scratch,
                      ZERO__CUDA_SUMSQ_SCRATCH, "random segments");
    test_lamb(ZERO_DTYPE_BF16, P_BF16, 0, opt_segs(random_segs(quick ? 60 : 200, quick ? 30000 : 300000)), scratch, 64,
              "random segments");
    for (size_t n : sizes)
        for (size_t off : {(size_t)0, (size_t)1, (size_t)5})
            test_lamb(dtypes[zt_rand_int(0, 2)], (int)zt_rand_int(0, P_COUNT - 1), (int)zt_rand_int(0, 1),
                      opt_segs({seg((int64_t)off, (int64_t)n)}), scratch, ZERO__CUDA_SUMSQ_SCRATCH,
                      n == 0 ? "one empty segment" : "one segment");
    printf("lamb: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    for (zero_dtype dt : dtypes) test_sumsq_segs(dt, quick ? 150 : 400, quick ? 5000 : 300000, scratch);
    for (int rep = 0; rep < 3; rep++) test_adam_multi(quick ? 12 : 40, quick ? 12 : 20, quick ? 3000 : 50000, 0);
    for (int rep = 0; rep < 3; rep++) test_adam_multi(quick ? 16 : 40, quick ? 12 : 20, quick ? 3000 : 50000, 1);
    printf("sumsq_segs, adam_multi: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    // Muon's element-wise parts: every grad dtype x param kind x nesterov in one adam call, then through
    // adam_multi (AdamW calls between Muon's), then Lion and SGD calls stepping Muon segments, then single
    // segments of each size at unaligned starts
    for (zero_dtype gdt : dtypes)
        for (int pm = 0; pm < P_COUNT; pm++) {
            for (int nes = 0; nes < 2; nes++)
                test_muon(gdt, pm, nes, ZERO_OPTIMIZER_MUON, 0, opt_segs(random_segs(quick ? 30 : 120, quick ? 3000 : 60000)),
                          "random segments");
            test_muon(gdt, pm, (int)zt_rand_int(0, 1), ZERO_OPTIMIZER_MUON, 5,
                      opt_segs(random_segs(quick ? 40 : 150, quick ? 3000 : 60000)), "adam_multi");
        }
    for (int kind0 : {ZERO_OPTIMIZER_LION, ZERO_OPTIMIZER_SGD})
        for (int nc : {0, 3})
            test_muon(dtypes[zt_rand_int(0, 2)], (int)zt_rand_int(0, P_COUNT - 1), (int)zt_rand_int(0, 1), kind0, nc,
                      opt_segs(random_segs(quick ? 30 : 80, quick ? 3000 : 30000)), nc ? "adam_multi" : "random segments");
    for (size_t n : sizes)
        for (size_t off : {(size_t)0, (size_t)1, (size_t)5})
            if (n > 0)
                test_muon(dtypes[zt_rand_int(0, 2)], (int)zt_rand_int(0, P_COUNT - 1), (int)zt_rand_int(0, 1),
                          ZERO_OPTIMIZER_MUON, 0, opt_segs({seg((int64_t)off, (int64_t)n)}), "one segment");
    printf("muon (element-wise): %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    // bf16 storage: the bf16 store's bits (aligned and not); every rule on bf16 master and state (not Muon) and on a
    // bf16 master with fp32 state x the grad dtypes and param kinds they take (fp32, bf16 x none, the master, bf16;
    // fp32 as a control: every grad dtype, one param kind); per storage and rule, arrays at their own shifts in one
    // call and in adam_multi calls; Lamb with a small scratch on both; single segments of each size at unaligned
    // starts; adam_multi across storages; the refusals
    for (size_t doff : {(size_t)0, (size_t)1, (size_t)3})
        for (size_t soff : {(size_t)0, (size_t)1, (size_t)2}) test_bf16_bits(doff, soff);
    {
        static const zero_dtype st[3][2] = {
            {ZERO_DTYPE_BF16, ZERO_DTYPE_BF16}, {ZERO_DTYPE_BF16, ZERO_DTYPE_FP32}, {ZERO_DTYPE_FP32, ZERO_DTYPE_FP32}};
        const std::vector<rule> rules = storage_rules();
        for (int si = 0; si < 3; si++)
            for (size_t ri = 0; ri < rules.size(); ri++) {
                const rule &r = rules[ri];
                if (!storage_runs(r.kind, st[si][0], st[si][1])) continue;  // refused: test_storage_misuse
                for (int gi = 0; gi < 3; gi++)
                    for (int pm = 0; pm < P_COUNT; pm++) {
                        const zero_dtype gdt = dtypes[gi];
                        if (!storage_takes(st[si][0], st[si][1], gdt, pm)) continue;  // refused: test_storage_misuse
                        if (si == 2 && pm != (int)((ri + (size_t)gi) % P_COUNT)) continue;  // fp32: one param kind
                        test_storage(r, st[si][0], st[si][1], gdt, pm,
                                     opt_segs(random_segs(quick ? 30 : 120, quick ? 3000 : 60000)), 0, 0, scratch,
                                     ZERO__CUDA_SUMSQ_SCRATCH, "random segments");
                    }
                if (si == 2) continue;
                zero_dtype gdt;
                int pm;
                storage_pick(st[si][0], st[si][1], &gdt, &pm);
                test_storage(r, st[si][0], st[si][1], gdt, pm, opt_segs(random_segs(quick ? 30 : 120, quick ? 3000 : 60000)),
                             0, 1, scratch, ZERO__CUDA_SUMSQ_SCRATCH, "shifted arrays");
                storage_pick(st[si][0], st[si][1], &gdt, &pm);
                test_storage(r, st[si][0], st[si][1], gdt, pm, opt_segs(random_segs(quick ? 40 : 150, quick ? 3000 : 60000)),
                             3, (int)zt_rand_int(0, 1), scratch, ZERO__CUDA_SUMSQ_SCRATCH, "adam_multi");
            }
        for (int si = 0; si < 2; si++)
            test_storage(rules[7], st[si][0], st[si][1], si ? ZERO_DTYPE_FP32 : ZERO_DTYPE_BF16, P_BF16,
                         opt_segs(random_segs(quick ? 60 : 200, quick ? 30000 : 300000)), 0, 1, scratch, 64,
                         "small scratch");
        for (size_t n : sizes)
            for (size_t off : {(size_t)0, (size_t)1, (size_t)5}) {
                const rule &r = rules[(size_t)zt_rand_int(0, (long)rules.size() - 1)];
                int si = (int)zt_rand_int(0, 1), pm;
                zero_dtype gdt;
                if (!storage_runs(r.kind, st[si][0], st[si][1])) si = 1 - si;
                if (r.kind == ZERO_OPTIMIZER_MUON && n == 0) continue;
                storage_pick(st[si][0], st[si][1], &gdt, &pm);
                test_storage(r, st[si][0], st[si][1], gdt, pm, opt_segs({seg((int64_t)off, (int64_t)n)}), 0,
                             (int)zt_rand_int(0, 1), scratch, ZERO__CUDA_SUMSQ_SCRATCH,
                             n == 0 ? "one empty segment" : "one segment");
            }
        for (int rep = 0; rep < 2; rep++) {
            test_storage_multi(quick ? 8 : 20, ZERO_OPTIMIZER_ADAMW, scratch);
            test_storage_multi(quick ? 8 : 20, ZERO_OPTIMIZER_LAMB, scratch);
        }
        test_storage_misuse();
    }
    printf("bf16 storage: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);
    pass0 = zt_pass, fail0 = zt_fail;

    // muon_ns: square, wide and tall, sizes off the 128 tile, 0 / 1 / 5 steps, batches (unaligned matrices after the
    // first), x off a 16-byte boundary
    {
        struct shape { int64_t rows, cols, batch; int steps, off; };
        std::vector<shape> shapes = {{1, 1, 1, 5, 0},     {7, 13, 1, 5, 0},     {13, 7, 1, 5, 1},    {64, 64, 1, 5, 0},
                                     {100, 300, 1, 5, 0}, {300, 100, 1, 5, 0},  {257, 129, 1, 5, 0}, {129, 257, 1, 5, 3},
                                     {33, 65, 3, 5, 0},   {65, 33, 3, 5, 2},    {64, 200, 2, 0, 0},  {200, 64, 1, 1, 0},
                                     {128, 128, 1, 5, 0}, {1, 1000, 1, 5, 0},   {1000, 3, 1, 5, 0}};
        if (!quick) shapes.push_back({1000, 384, 1, 5, 0}), shapes.push_back({256, 1024, 1, 5, 0});
        for (const shape &sh : shapes) test_muon_ns(sh.rows, sh.cols, sh.batch, sh.steps, sh.off);
        printf("muon_ns: worst max |gpu - ref| is %.3g of the tolerance\n", muon_ns_worst);
    }
    test_muon_misuse();
    printf("muon_ns: %d checks, %d failed\n", zt_pass - pass0 + zt_fail - fail0, zt_fail - fail0);

    test_misuse(dout, scratch);
    {   // the PCIe probe behind zero_floor_of: finite, positive, and the copies it timed really moved bytes
        // (below 1 GB/s no PCIe link of a CUDA GPU runs; both ways at once take no less than one direction)
        zero_bandwidths bw = {0, 0, 0, 12345.0, 0, 0};
        zero_error err;
        CHECK(zero_cuda_pcie_bandwidth((size_t)(quick ? 4 : 64) << 20, 3, &bw, &err) == ZERO_OK);
        CHECK(std::isfinite(bw.h2d) && bw.h2d > 1e9 && std::isfinite(bw.d2h) && bw.d2h > 1e9);
        CHECK(std::isfinite(bw.duplex) && bw.duplex > 1e9 && bw.duplex < 2.2 * std::max(bw.h2d, bw.d2h));
        CHECK(bw.host == 12345.0);  // left as it was
        printf("pcie: %.1f GB/s to the device, %.1f to the host, %.1f both ways\n", bw.h2d / 1e9, bw.d2h / 1e9,
               bw.duplex / 1e9);
        // _ready: its callback once, before the timed copies (a 100 ms wait inside them would take the figures
        // below 1 GB/s: 4-64 MiB a copy); a failing one ends it with its result, bw unchanged
        pcie_ready_ctx rc = {0, 0.1, ZERO_OK};
        zero_bandwidths bw2 = {0, 0, 0, 0, 0, 0};
        CHECK(zero_cuda_pcie_bandwidth_ready((size_t)(quick ? 4 : 64) << 20, 3, pcie_ready, &rc, &bw2, &err) == ZERO_OK);
        CHECK(rc.calls == 1 && bw2.h2d > 1e9 && bw2.d2h > 1e9 && bw2.duplex > 1e9);
        rc = pcie_ready_ctx{0, 0, ZERO_ERR_NCCL};
        bw2 = zero_bandwidths{0, 0, 0, 0, 0, 0};
        CHECK(zero_cuda_pcie_bandwidth_ready((size_t)4 << 20, 3, pcie_ready, &rc, &bw2, &err) == ZERO_ERR_NCCL);
        CHECK(rc.calls == 1 && bw2.h2d == 0 && bw2.d2h == 0 && bw2.duplex == 0);
        CHECK_STR_CONTAINS(err.msg, "the ranks did not meet");
    }
    if (!quick) {
        test_large(dout, scratch);
        bench();
    }
    cudaFree(dout);
    cudaFree(scratch);
    return zt_finish();
}
