/* bench_attn.cu - examples/gpt's fused causal attention (gpt_attn.cuh) alone:
   the forward (gpt_fa_fwd_hd) and the backward (gpt_fa_bwd_hd) in bf16,
   each timed with CUDA events after a warm-up (median of --reps). GPT-2 XL's
   attention (25 heads of 64, T = 1024) at micro-batch 8 and 16, then 16
   heads of 128.

   TFLOP/s count the causal (real) work: forward 2 * 2 * B * H * T * T * hd / 2
   (Q K^T and P V over the lower triangle), backward 2.5 times that (five
   products to the forward's two, as the FlashAttention papers count it;
   the two-kernel backward here does seven, and the extra two are not counted).

   First it checks the kernels on small cases against a CPU reference in
   double (softmax(Q K^T / sqrt(hd)) V with the causal mask, and dQ, dK, dV
   from the same bf16 inputs): max |error| / max |reference| per tensor must
   stay under 2e-2, and two runs must give the same bits. Exit status 1 on a
   failure.

       build/bench/bench_attn [--reps N] [--check-only]

   python3 examples/bench/bench_attn_torch.py times the same shapes through
   PyTorch's scaled_dot_product_attention. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "bench.cuh"
#include "../gpt/gpt_cuda.cuh"

#include <math.h>

typedef __nv_bfloat16 bf16;

static const char *TOOL = "bench_attn";

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

/* one problem's device buffers */
struct problem {
    int B, H, T, hd;
    gpt_dims d;
    size_t nqkv, nout, nlse;
    bf16 *qkv, *out, *dout, *dqkv;
    float *lse, *D;
};

static void problem_init(problem *p, int B, int H, int T, int hd, std::vector<bf16> *hqkv, std::vector<bf16> *hdout) {
    p->B = B, p->H = H, p->T = T, p->hd = hd;
    memset(&p->d, 0, sizeof p->d);
    p->d.layers = 1, p->d.dim = H * hd, p->d.heads = H, p->d.seq = T, p->d.vocab = 256;
    int C = H * hd;
    p->nqkv = (size_t)B * T * 3 * C, p->nout = (size_t)B * T * C, p->nlse = (size_t)B * H * T;
    std::vector<bf16> a(p->nqkv), o(p->nout);
    for (auto &x : a) x = __float2bfloat16(urand());
    for (auto &x : o) x = __float2bfloat16(urand());
    BENCH_CUDA(cudaMalloc(&p->qkv, p->nqkv * sizeof(bf16)));
    BENCH_CUDA(cudaMalloc(&p->dqkv, p->nqkv * sizeof(bf16)));
    BENCH_CUDA(cudaMalloc(&p->out, p->nout * sizeof(bf16)));
    BENCH_CUDA(cudaMalloc(&p->dout, p->nout * sizeof(bf16)));
    BENCH_CUDA(cudaMalloc(&p->lse, p->nlse * sizeof(float)));
    BENCH_CUDA(cudaMalloc(&p->D, p->nlse * sizeof(float)));
    BENCH_CUDA(cudaMemcpy(p->qkv, a.data(), p->nqkv * sizeof(bf16), cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(p->dout, o.data(), p->nout * sizeof(bf16), cudaMemcpyHostToDevice));
    if (hqkv) *hqkv = a;
    if (hdout) *hdout = o;
}

static void problem_free(problem *p) {
    BENCH_CUDA(cudaFree(p->qkv));
    BENCH_CUDA(cudaFree(p->dqkv));
    BENCH_CUDA(cudaFree(p->out));
    BENCH_CUDA(cudaFree(p->dout));
    BENCH_CUDA(cudaFree(p->lse));
    BENCH_CUDA(cudaFree(p->D));
}

static void run_fwd(problem *p, cudaStream_t s) {
    zero_error err;
    memset(&err, 0, sizeof err);
    if (p->hd == 64)
        BENCH_ZERO((gpt_fa_fwd_hd<bf16, 64>(s, &p->d, p->B, p->qkv, p->out, p->lse, &err)), &err);
    else
        BENCH_ZERO((gpt_fa_fwd_hd<bf16, 128>(s, &p->d, p->B, p->qkv, p->out, p->lse, &err)), &err);
}

static void run_bwd(problem *p, cudaStream_t s) {
    zero_error err;
    memset(&err, 0, sizeof err);
    if (p->hd == 64)
        BENCH_ZERO((gpt_fa_bwd_hd<bf16, 64>(s, &p->d, p->B, p->qkv, p->out, p->lse, p->dout, p->D, p->dqkv, &err)),
                   &err);
    else
        BENCH_ZERO((gpt_fa_bwd_hd<bf16, 128>(s, &p->d, p->B, p->qkv, p->out, p->lse, p->dout, p->D, p->dqkv, &err)),
                   &err);
}

static std::vector<float> download(const bf16 *d, size_t n) {
    std::vector<bf16> h(n);
    BENCH_CUDA(cudaMemcpy(h.data(), d, n * sizeof(bf16), cudaMemcpyDeviceToHost));
    std::vector<float> f(n);
    for (size_t i = 0; i < n; i++) f[i] = __bfloat162float(h[i]);
    return f;
}

/* CPU reference in double: out [B T, C] and dqkv [B T, 3C] from the bf16 inputs */
static void reference(const problem *p, const std::vector<bf16> &qkv, const std::vector<bf16> &dout,
                      std::vector<double> *out, std::vector<double> *dqkv) {
    int B = p->B, H = p->H, T = p->T, hd = p->hd, C = H * hd;
    double scale = 1.0 / sqrt((double)hd);
    out->assign(p->nout, 0.0);
    dqkv->assign(p->nqkv, 0.0);
    std::vector<double> P((size_t)T * T), dS((size_t)T * T);
    auto at = [&](const std::vector<bf16> &v, int b, int t, int ld, int col) {
        return (double)__bfloat162float(v[((size_t)b * T + t) * ld + col]);
    };
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int qc = h * hd, kc = C + h * hd, vc = 2 * C + h * hd;
            for (int i = 0; i < T; i++) { /* P = softmax(Q K^T scale), causal */
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int e = 0; e < hd; e++) s += at(qkv, b, i, 3 * C, qc + e) * at(qkv, b, j, 3 * C, kc + e);
                    P[(size_t)i * T + j] = s * scale;
                    mx = fmax(mx, s * scale);
                }
                for (int j = 0; j <= i; j++) sum += P[(size_t)i * T + j] = exp(P[(size_t)i * T + j] - mx);
                for (int j = 0; j < T; j++) P[(size_t)i * T + j] = j <= i ? P[(size_t)i * T + j] / sum : 0.0;
            }
            for (int i = 0; i < T; i++) /* O = P V, then dS = P (dP - rowsum(dO O)) with dP = dO V^T */
                for (int e = 0; e < hd; e++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) o += P[(size_t)i * T + j] * at(qkv, b, j, 3 * C, vc + e);
                    (*out)[((size_t)b * T + i) * C + h * hd + e] = o;
                }
            for (int i = 0; i < T; i++) {
                double Di = 0;
                for (int e = 0; e < hd; e++)
                    Di += at(dout, b, i, C, h * hd + e) * (*out)[((size_t)b * T + i) * C + h * hd + e];
                for (int j = 0; j < T; j++) {
                    double dp = 0;
                    if (j <= i)
                        for (int e = 0; e < hd; e++) dp += at(dout, b, i, C, h * hd + e) * at(qkv, b, j, 3 * C, vc + e);
                    dS[(size_t)i * T + j] = P[(size_t)i * T + j] * (dp - Di);
                }
            }
            for (int i = 0; i < T; i++)
                for (int e = 0; e < hd; e++) {
                    double dq = 0, dk = 0, dv = 0;
                    for (int j = 0; j < T; j++) {
                        dq += dS[(size_t)i * T + j] * at(qkv, b, j, 3 * C, kc + e);       /* dQ = dS K scale */
                        dk += dS[(size_t)j * T + i] * at(qkv, b, j, 3 * C, qc + e);       /* dK = dS^T Q scale */
                        dv += P[(size_t)j * T + i] * at(dout, b, j, C, h * hd + e);       /* dV = P^T dO */
                    }
                    size_t r = ((size_t)b * T + i) * 3 * C;
                    (*dqkv)[r + qc + e] = dq * scale;
                    (*dqkv)[r + kc + e] = dk * scale;
                    (*dqkv)[r + vc + e] = dv;
                }
        }
}

/* max |got - ref| / max |ref| over the columns [c0, c0 + w) of rows of ld */
static double rel_err(const std::vector<float> &got, const std::vector<double> &ref, int ld, int c0, int w,
                      double *abs_out) {
    double e = 0, m = 0;
    for (size_t r = 0; r < got.size() / ld; r++)
        for (int c = c0; c < c0 + w; c++) {
            size_t i = r * ld + c;
            e = fmax(e, fabs((double)got[i] - ref[i]));
            m = fmax(m, fabs(ref[i]));
        }
    *abs_out = e;
    return m > 0 ? e / m : e;
}

static int check_case(int B, int H, int T, int hd, cudaStream_t s) {
    const double tol = 2e-2;
    problem p;
    std::vector<bf16> hqkv, hdout;
    problem_init(&p, B, H, T, hd, &hqkv, &hdout);
    std::vector<double> rout, rdqkv;
    reference(&p, hqkv, hdout, &rout, &rdqkv);
    int C = H * hd;
    std::vector<float> out[2], dqkv[2];
    for (int rep = 0; rep < 2; rep++) { /* twice: the same bits */
        BENCH_CUDA(cudaMemset(p.out, 0, p.nout * sizeof(bf16)));
        BENCH_CUDA(cudaMemset(p.dqkv, 0, p.nqkv * sizeof(bf16)));
        run_fwd(&p, s);
        run_bwd(&p, s);
        BENCH_CUDA(cudaStreamSynchronize(s));
        out[rep] = download(p.out, p.nout);
        dqkv[rep] = download(p.dqkv, p.nqkv);
    }
    int same = memcmp(out[0].data(), out[1].data(), p.nout * sizeof(float)) == 0 &&
               memcmp(dqkv[0].data(), dqkv[1].data(), p.nqkv * sizeof(float)) == 0;
    double a[4], r[4];
    r[0] = rel_err(out[0], rout, C, 0, C, &a[0]);
    r[1] = rel_err(dqkv[0], rdqkv, 3 * C, 0, C, &a[1]);
    r[2] = rel_err(dqkv[0], rdqkv, 3 * C, C, C, &a[2]);
    r[3] = rel_err(dqkv[0], rdqkv, 3 * C, 2 * C, C, &a[3]);
    int ok = same && r[0] <= tol && r[1] <= tol && r[2] <= tol && r[3] <= tol;
    printf("check B=%d H=%d T=%d hd=%d max|err| (rel. to max|ref|): O %.2e (%.2e) dQ %.2e (%.2e) "
           "dK %.2e (%.2e) dV %.2e (%.2e); repeat %s: %s\n",
           B, H, T, hd, a[0], r[0], a[1], r[1], a[2], r[2], a[3], r[3], same ? "same bits" : "BITS DIFFER",
           ok ? "ok" : "FAIL");
    problem_free(&p);
    return !ok;
}

static double time_ms(problem *p, cudaStream_t s, int reps, int bwd) {
    std::vector<cudaEvent_t> a, b;
    bench_events(a, reps);
    bench_events(b, reps);
    run_fwd(p, s); /* the backward reads out and lse */
    for (int w = 0; w < 3; w++) bwd ? run_bwd(p, s) : run_fwd(p, s);
    for (int r = 0; r < reps; r++) {
        BENCH_CUDA(cudaEventRecord(a[r], s));
        bwd ? run_bwd(p, s) : run_fwd(p, s);
        BENCH_CUDA(cudaEventRecord(b[r], s));
    }
    BENCH_CUDA(cudaStreamSynchronize(s));
    double ms = bench_median(bench_event_ms(a, b, 0, reps));
    bench_events_free(a);
    bench_events_free(b);
    return ms;
}

int main(int argc, char **argv) {
    int reps = 20, check_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            if (bench_int(TOOL, "--reps", argv[++i], 1, 100000, &reps)) return 1;
        } else if (!strcmp(argv[i], "--check-only"))
            check_only = 1;
        else {
            fprintf(stderr, "usage: %s [--reps N] [--check-only]\n", TOOL);
            return 1;
        }
    }
    bench_device_line("");
    cudaStream_t s;
    BENCH_CUDA(cudaStreamCreate(&s));
    /* the small case; T = 192 leaves the last 128-row block half empty, hd 128 the other head size */
    int bad = check_case(1, 2, 128, 64, s);
    bad |= check_case(1, 3, 192, 64, s);
    bad |= check_case(1, 2, 128, 128, s);
    printf("check: %s (tolerance 2e-2 of max|ref| per tensor; each case twice, bitwise)\n", bad ? "FAIL" : "ok");
    if (bad || check_only) return bad;

    printf("TFLOP/s of causal FLOPs: forward 2*2*B*H*T*T*hd/2, backward 2.5x the forward's (FlashAttention's "
           "count); median of %d after 3 warm-up runs; bf16\n",
           reps);
    printf("%-28s %9s %9s %9s %9s\n", "shape", "fwd ms", "fwd TF/s", "bwd ms", "bwd TF/s");
    const int shapes[][4] = {{8, 25, 1024, 64}, {16, 25, 1024, 64}, {8, 16, 1024, 128}, {16, 16, 1024, 128}};
    for (const auto &sh : shapes) {
        problem p;
        problem_init(&p, sh[0], sh[1], sh[2], sh[3], NULL, NULL);
        double fl = 2.0 * 2.0 * sh[0] * sh[1] * (double)sh[2] * sh[2] * sh[3] / 2;
        char name[64];
        snprintf(name, sizeof name, "B=%d H=%d T=%d hd=%d", sh[0], sh[1], sh[2], sh[3]);
        double f = time_ms(&p, s, reps, 0), b = time_ms(&p, s, reps, 1);
        printf("%-28s %9.3f %9.1f %9.3f %9.1f\n", name, f, fl / f * 1e-9, b, 2.5 * fl / b * 1e-9);
        problem_free(&p);
    }
    BENCH_CUDA(cudaStreamDestroy(s));
    return 0;
}
