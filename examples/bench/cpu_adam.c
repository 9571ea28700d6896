/* cpu_adam.c - zero's CPU Adam (zero_offload.h: zero_cpu_adam) in parameters
   per second and bytes per second, against a STREAM-style memory bandwidth
   measured in the same run with the same thread pool. cpu_adam_torch.py times
   PyTorch's CPU AdamW and its offload sequence on the same parameter counts,
   reads this program's --out file and prints the ratios (make bench-cpu runs
   both, this one first).

       make bench-cpu
       build/bench/cpu_adam [--params 64M,1B] [--iters 10] [--warmup 2] [--threads T]
                            [--budget 10] [--no-single] [--out file]

   Built without -march flags: the SIMD path (AVX-512, AVX2+FMA+F16C or scalar)
   is chosen at run time from the CPU, as in the engine. For each parameter
   count (one flat buffer, one segment, AdamW with weight decay):
     fp16   gradients in fp16 times a scale (the unscale), fp32 master, m, v
            read and written, the fp16 parameters written in the same pass:
            2 + 12 read + 12 + 2 written = 28 bytes per parameter
     fp32   gradients in fp32, no parameter copy written (PyTorch's fused
            AdamW on fp32 parameters and gradients does the same work):
            4 + 12 read + 12 written = 28 bytes per parameter
   each on the best SIMD path this CPU has and on the scalar path, with all
   threads (the pool's default size: ZERO_CPU_THREADS, else the logical cores
   this process may use; --threads overrides) and with 1 (--no-single: not).
   Beside them, the memory bandwidth (the kernels below "STREAM-style
   kernels": copy, triad, both with streaming stores, and an Adam-shaped
   kernel of 4 read and 3 written streams with cached stores, with
   zero_cpu_adam's software prefetch, and with streaming stores) over fp32
   buffers of the same size (larger than any cache), run through the same
   pool with the same piece size as Adam. Bytes are what the program reads
   and writes (STREAM's convention: the write-allocate reads a cache does for
   stores are not counted, for Adam either). "% of bw" is against the fastest
   kernel at the same thread count, named in the summary lines.
   Timing: CLOCK_MONOTONIC around each call, warm-up calls first, the median
   of n calls; n is --iters, or fewer (at least 3) where that would take more
   than --budget seconds for one row (the single-thread scalar rows at 1e9);
   each row prints its n. A parameter count whose buffers (18 bytes per
   parameter) do not fit in MemAvailable is skipped with a message. Inputs are
   random (a hash of the index), never zeros. Then Lion, Adagrad and SGD
   (momentum 0.9) through the same call (zero_adam_args.kind), fp16 gradients
   and parameters, the best SIMD path, all threads: 20 bytes per parameter
   each, and their share of the same bandwidth. Last, Adam with bf16 master
   and state (adambf16: bf16.bf16_master_weights_and_grads and
   bf16_optimizer_states), fp16 gradients and parameters, the best SIMD path,
   all threads: 2 + 6 read + 6 + 2 written = 16 bytes per parameter. */
#define _POSIX_C_SOURCE 200809L
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "../tool_args.h" /* tool_int, tool_num: the flags' numbers, range-checked */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GRAIN 32768 /* zero_cpu_adam's piece size */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what, const zero_error *err) {
    fprintf(stderr, "cpu_adam: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

/* bytes the kernel can have: MemAvailable, else 0 (unknown) */
static double mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024.0;
}

static void cpu_name(char *out, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(out, n, "unknown");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':'), *e;
            if (!c) break;
            c++;
            while (*c == ' ' || *c == '\t') c++;
            e = c + strlen(c);
            while (e > c && (e[-1] == '\n' || e[-1] == ' ')) *--e = 0;
            snprintf(out, n, "%s", c);
            break;
        }
    }
    fclose(f);
}

/* One item of --params: "64M", "1B", "1e9", "1G", "2.5e6" (k = 1e3, M = 2^20,
   B or G = 1e9, any case) -> a count in [64, 1e13], rounded up to a multiple
   of 64; or one line on stderr and 1 */
static int parse_count(const char *s, int64_t *out) {
    static const char range[] = "64 to 1e13 parameters";
    char buf[64], *end;
    size_t n = strlen(s);
    double x, mult = 1;
    if (!*s) return tool_fail("cpu_adam", "--params", "empty value (a count such as 64M, 1B or 1e9, %s)", range);
    if (n >= sizeof buf)
        return tool_fail("cpu_adam", "--params", "'%.40s...' is not a count such as 64M, 1B or 1e9 (%s)", s, range);
    memcpy(buf, s, n + 1);
    switch (buf[n - 1]) {
    case 'k': case 'K': mult = 1e3; buf[--n] = 0; break;
    case 'm': case 'M': mult = 1024.0 * 1024.0; buf[--n] = 0; break;
    case 'b': case 'B': case 'g': case 'G': mult = 1e9; buf[--n] = 0; break;
    default: break;
    }
    if (n == 0 || tool__scan(buf) != n)
        return tool_fail("cpu_adam", "--params", "'%s' is not a count such as 64M, 1B or 1e9 (%s)", s, range);
    x = strtod(buf, &end) * mult;
    if (!(x >= 64 && x <= 1e13)) return tool_fail("cpu_adam", "--params", "%s is out of range (%s)", s, range);
    *out = ((int64_t)x + 63) / 64 * 64;
    return 0;
}

/* ---- buffers, filled through the pool (first touch by the threads that use them) ---- */

typedef struct bufs {
    float *master, *m, *v;
    void *grad;   /* 4 bytes per parameter: fp16 uses half of it */
    zero_f16 *param;
    zero_dtype grad_dtype;
} bufs;

static float rnd(int64_t i, uint32_t salt) {
    uint32_t h = (uint32_t)((uint64_t)i * 2654435761u) ^ (salt * 0x9E3779B9u);
    h ^= h >> 15;
    h *= 0x2c1b3c6dU;
    h ^= h >> 12;
    return (float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f; /* [-0.5, 0.5) */
}

static void fill_task(void *arg, int64_t b, int64_t e, int thread) {
    bufs *B = (bufs *)arg;
    (void)thread;
    for (int64_t i = b; i < e; i++) {
        float g = rnd(i, 4) * 2e-3f;
        B->master[i] = rnd(i, 1) * 0.1f;
        B->m[i] = rnd(i, 2) * 1e-4f;
        B->v[i] = (rnd(i, 3) + 0.5f) * 1e-6f + 1e-8f;
        if (B->grad_dtype == ZERO_DTYPE_FP16) ((zero_f16 *)B->grad)[i] = zero_f32_to_f16(g * 1024.0f);
        else ((float *)B->grad)[i] = g;
        B->param[i] = zero_f32_to_f16(B->master[i]);
    }
}

static void fill_grad_task(void *arg, int64_t b, int64_t e, int thread) {
    bufs *B = (bufs *)arg;
    (void)thread;
    for (int64_t i = b; i < e; i++) {
        float g = rnd(i, 4) * 2e-3f;
        if (B->grad_dtype == ZERO_DTYPE_FP16) ((zero_f16 *)B->grad)[i] = zero_f32_to_f16(g * 1024.0f);
        else ((float *)B->grad)[i] = g;
    }
}

/* ---- STREAM-style kernels ----

   The memory bandwidth Adam is judged against: the fastest of
     copy      b[i] = a[i]                      8 bytes per element
     triad     a[i] = b[i] + s c[i]            12
     copy-nt, triad-nt: the same with non-temporal (streaming) stores
     adam      a += s g, b += s g, c += s g    28: Adam's shape (4 streams
               read, 3 written in place), trivial arithmetic, cached stores
     adam-nt   the same with streaming stores
   over fp32 buffers of the parameter count (larger than any cache). Bytes
   are what the kernel reads and writes (STREAM's convention: the line reads
   an ordinary store to an uncached line costs, read-for-ownership, are not
   counted; streaming stores do not cost them). Vector loads: AVX-512 or AVX
   where the CPU has them (target attributes, chosen at run time like
   zero_offload.h), else SSE2 on x86-64, else plain C; no -march flag is
   given, so a plain loop would be scalar and measure the core, not memory.
   Streaming stores need aligned destinations: elements before the first
   aligned vector go one by one (the buffers are 64-byte aligned and the
   pieces multiples of 64 elements, so there are none here). */

typedef struct stream_args {
    float *a, *b, *c, *g;
    float s;
    int isa; /* 2 avx512f, 1 avx, 0 baseline */
    int nt;  /* streaming stores */
    int pf;  /* software prefetch of the read streams, 256 elements ahead (zero_cpu_adam's) */
} stream_args;

enum { K_COPY, K_TRIAD, K_COPY_NT, K_TRIAD_NT, K_ADAM, K_ADAM_PF, K_ADAM_NT, K_COUNT };
static const char *const kernel_names[K_COUNT] = {"copy", "triad", "copy-nt", "triad-nt", "adam", "adam-pf", "adam-nt"};
static const double kernel_bytes[K_COUNT] = {8, 12, 8, 12, 28, 28, 28};

#define ALIGNED(p, w) (((uintptr_t)(p) & ((w) * sizeof(float) - 1)) == 0)

/* one family per vector width: ATTR target, V vector type, W lanes */
#define STREAM_FAMILY(SUF, ATTR, V, W, LD, ST, STNT, ADD, MUL, SET1, FENCE)                              \
    ATTR static void copy_##SUF(float *d, const float *x, int nt, int64_t b, int64_t e) {                \
        int64_t i = b;                                                                                    \
        if (nt) {                                                                                         \
            for (; i < e && !ALIGNED(d + i, W); i++) d[i] = x[i];                                         \
            for (; i + W <= e; i += W) STNT(d + i, LD(x + i));                                            \
        }                                                                                                 \
        for (; i + W <= e; i += W) ST(d + i, LD(x + i));                                                  \
        for (; i < e; i++) d[i] = x[i];                                                                   \
        if (nt) FENCE();                                                                                  \
    }                                                                                                     \
    ATTR static void triad_##SUF(float *a, const float *x, const float *y, float s, int nt, int64_t b,   \
                                 int64_t e) {                                                             \
        const V vs = SET1(s);                                                                             \
        int64_t i = b;                                                                                    \
        if (nt) {                                                                                         \
            for (; i < e && !ALIGNED(a + i, W); i++) a[i] = x[i] + s * y[i];                              \
            for (; i + W <= e; i += W) STNT(a + i, ADD(LD(x + i), MUL(vs, LD(y + i))));                   \
        }                                                                                                 \
        for (; i + W <= e; i += W) ST(a + i, ADD(LD(x + i), MUL(vs, LD(y + i))));                         \
        for (; i < e; i++) a[i] = x[i] + s * y[i];                                                        \
        if (nt) FENCE();                                                                                  \
    }                                                                                                     \
    ATTR static void adam_##SUF(float *a, float *b2, float *c, const float *g, float s, int nt, int pf,  \
                                int64_t b, int64_t e) {                                                   \
        const V vs = SET1(s);                                                                             \
        int64_t i = b;                                                                                    \
        if (pf) {                                                                                         \
            for (; i + W <= e; i += W) {                                                                  \
                V sg, va, vb, vc;                                                                         \
                _mm_prefetch((const char *)(a + i + 256), _MM_HINT_T0);                                   \
                _mm_prefetch((const char *)(b2 + i + 256), _MM_HINT_T0);                                  \
                _mm_prefetch((const char *)(c + i + 256), _MM_HINT_T0);                                   \
                _mm_prefetch((const char *)(g + i + 256), _MM_HINT_T0);                                   \
                sg = MUL(vs, LD(g + i)), va = LD(a + i), vb = LD(b2 + i), vc = LD(c + i);                 \
                ST(a + i, ADD(va, sg));                                                                   \
                ST(b2 + i, ADD(vb, sg));                                                                  \
                ST(c + i, ADD(vc, sg));                                                                   \
            }                                                                                             \
        }                                                                                                 \
        if (nt) {                                                                                         \
            for (; i < e && !ALIGNED(a + i, W); i++) a[i] += s * g[i], b2[i] += s * g[i], c[i] += s * g[i]; \
            if (ALIGNED(b2 + i, W) && ALIGNED(c + i, W))                                                  \
                for (; i + W <= e; i += W) {                                                              \
                    V sg = MUL(vs, LD(g + i)), va = LD(a + i), vb = LD(b2 + i), vc = LD(c + i);           \
                    STNT(a + i, ADD(va, sg));                                                             \
                    STNT(b2 + i, ADD(vb, sg));                                                            \
                    STNT(c + i, ADD(vc, sg));                                                             \
                }                                                                                         \
        }                                                                                                 \
        for (; i + W <= e; i += W) {                                                                      \
            V sg = MUL(vs, LD(g + i)), va = LD(a + i), vb = LD(b2 + i), vc = LD(c + i);                   \
            ST(a + i, ADD(va, sg));                                                                       \
            ST(b2 + i, ADD(vb, sg));                                                                      \
            ST(c + i, ADD(vc, sg));                                                                       \
        }                                                                                                 \
        for (; i < e; i++) a[i] += s * g[i], b2[i] += s * g[i], c[i] += s * g[i];                         \
        if (nt) FENCE();                                                                                  \
    }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define STREAM_X86 1
#define ATTR512 __attribute__((target("avx512f")))
#define ATTR256 __attribute__((target("avx")))
STREAM_FAMILY(avx512, ATTR512, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_stream_ps, _mm512_add_ps,
              _mm512_mul_ps, _mm512_set1_ps, _mm_sfence)
STREAM_FAMILY(avx, ATTR256, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_stream_ps, _mm256_add_ps,
              _mm256_mul_ps, _mm256_set1_ps, _mm_sfence)
STREAM_FAMILY(sse2, , __m128, 4, _mm_loadu_ps, _mm_storeu_ps, _mm_stream_ps, _mm_add_ps, _mm_mul_ps, _mm_set1_ps,
              _mm_sfence)
#endif

static const char *stream_isa_name(int isa) {
#ifdef STREAM_X86
    return isa == 2 ? "avx512" : isa == 1 ? "avx" : "sse2";
#else
    (void)isa;
    return "c";
#endif
}

static void copy_task(void *arg, int64_t b, int64_t e, int thread) {
    stream_args *S = (stream_args *)arg;
    (void)thread;
#ifdef STREAM_X86
    if (S->isa == 2) copy_avx512(S->b, S->a, S->nt, b, e);
    else if (S->isa == 1) copy_avx(S->b, S->a, S->nt, b, e);
    else copy_sse2(S->b, S->a, S->nt, b, e);
#else
    for (int64_t i = b; i < e; i++) S->b[i] = S->a[i];
#endif
}

static void triad_task(void *arg, int64_t b, int64_t e, int thread) {
    stream_args *S = (stream_args *)arg;
    (void)thread;
#ifdef STREAM_X86
    if (S->isa == 2) triad_avx512(S->a, S->b, S->c, S->s, S->nt, b, e);
    else if (S->isa == 1) triad_avx(S->a, S->b, S->c, S->s, S->nt, b, e);
    else triad_sse2(S->a, S->b, S->c, S->s, S->nt, b, e);
#else
    for (int64_t i = b; i < e; i++) S->a[i] = S->b[i] + S->s * S->c[i];
#endif
}

static void adam_shape_task(void *arg, int64_t b, int64_t e, int thread) {
    stream_args *S = (stream_args *)arg;
    (void)thread;
#ifdef STREAM_X86
    if (S->isa == 2) adam_avx512(S->a, S->b, S->c, S->g, S->s, S->nt, S->pf, b, e);
    else if (S->isa == 1) adam_avx(S->a, S->b, S->c, S->g, S->s, S->nt, S->pf, b, e);
    else adam_sse2(S->a, S->b, S->c, S->g, S->s, S->nt, S->pf, b, e);
#else
    for (int64_t i = b; i < e; i++) S->a[i] += S->s * S->g[i], S->b[i] += S->s * S->g[i], S->c[i] += S->s * S->g[i];
#endif
}

typedef struct timing {
    double ms;
    int n;
} timing;

/* warm-up calls, then n timed calls (fewer where one row would pass budget_s) */
typedef int (*call_fn)(void *ctx);

static timing time_calls(call_fn fn, void *ctx, int warmup, int iters, double budget_s) {
    double *t = (double *)malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    double first = 0;
    timing r = {0, 0};
    int n = iters;
    if (!t) {
        fprintf(stderr, "cpu_adam: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < warmup; i++) {
        double t0 = now_s();
        if (fn(ctx)) exit(1);
        first = now_s() - t0;
        if (first * (warmup + iters) > 4 * budget_s) break; /* slow row: one warm-up is enough */
    }
    if (first > 0 && first * iters > budget_s) {
        n = (int)(budget_s / first);
        if (n < 3) n = 3;
        if (n > iters) n = iters;
    }
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        if (fn(ctx)) exit(1);
        t[i] = (now_s() - t0) * 1e3;
    }
    r.ms = median(t, n);
    r.n = n;
    free(t);
    return r;
}

typedef struct adam_ctx {
    zero_adam_args a;
    zero_simd_level level;
    zero_cpu_pool *pool;
} adam_ctx;

/* An Adam row's call over B's buffers (seg: the whole of them): fp16
   gradients times a scale and the fp16 parameters written (fp16), or fp32
   gradients and no parameter copy; AdamW with step 10's bias corrections. */
static void adam_row(adam_ctx *ac, const bufs *B, const zero_adam_seg *seg, int fp16) {
    memset(ac, 0, sizeof *ac);
    ac->a.master = B->master;
    ac->a.m = B->m;
    ac->a.v = B->v;
    ac->a.grad = B->grad;
    ac->a.grad_dtype = B->grad_dtype;
    ac->a.param = fp16 ? (void *)B->param : NULL;
    ac->a.param_dtype = ZERO_DTYPE_FP16;
    ac->a.segs = seg;
    ac->a.n_segs = 1;
    ac->a.beta1 = 0.9f;
    ac->a.beta2 = 0.999f;
    ac->a.eps = 1e-8f;
    ac->a.bc1 = 1.0f - powf(0.9f, 10.0f);
    ac->a.bc2 = 1.0f / sqrtf(1.0f - powf(0.999f, 10.0f));
    ac->a.grad_scale = fp16 ? 1.0f / 1024.0f : 1.0f;
    ac->a.adamw = 1;
}

static int adam_call(void *ctx) {
    adam_ctx *c = (adam_ctx *)ctx;
    zero_error err;
    if (zero_cpu_adam_at(&c->a, c->level, c->pool, &err) != ZERO_OK) {
        fprintf(stderr, "cpu_adam: zero_cpu_adam_at(%s): %s\n", zero_simd_level_name(c->level), err.msg);
        return 1;
    }
    return 0;
}

typedef struct stream_ctx {
    stream_args s;
    zero_cpu_task fn;
    zero_cpu_pool *pool;
    int64_t n;
} stream_ctx;

static int stream_call(void *ctx) {
    stream_ctx *c = (stream_ctx *)ctx;
    zero_error err;
    if (zero_cpu_pool_run(c->pool, c->fn, &c->s, c->n, GRAIN, &err) != ZERO_OK) {
        fprintf(stderr, "cpu_adam: zero_cpu_pool_run: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* --muon RxC,...: the host's Newton-Schulz (zero_muon_orthogonalize, Muon's orthogonalisation on host
   ranks: plain loops, one thread), 5 steps on a random R x C matrix, the median of --iters calls after one,
   in ms and GFLOP/s counting 5 (4 r^2 c + 2 r^3) with r the smaller side (PERF.md section 2's count for the
   GPU's muon_ns). What a matrix costs the CPU, beside what the GPU's kernel takes. */
static int muon_rows(const char *list, int iters) {
    const char *p = list;
    printf("# zero_muon_orthogonalize on the host (one thread, 5 steps): median of %d after 1\n", iters);
    printf("#      rows     cols |       ms    GFLOP/s\n");
    for (;;) {
        long long r = 0, c = 0;
        int used = 0;
        if (sscanf(p, "%lldx%lld%n", &r, &c, &used) != 2 || r < 1 || c < 1 || r > 65536 || c > 65536 ||
            (p[used] && p[used] != ',')) {
            tool_fail("cpu_adam", "--muon", "'%s' is not RxC[,RxC...] with 1 <= R, C <= 65536", p);
            return 2;
        }
        {
            const int64_t n = (int64_t)r * c, w = zero_muon_work_elems(r, c);
            const double sr = (double)(r < c ? r : c), sc = (double)(r < c ? c : r);
            float *x = (float *)malloc(sizeof(float) * (size_t)n), *x0 = (float *)malloc(sizeof(float) * (size_t)n);
            float *work = (float *)malloc(sizeof(float) * (size_t)w);
            double t[64];
            int k, m = iters < 64 ? iters : 64;
            zero_error err;
            if (!x || !x0 || !work) {
                fprintf(stderr, "cpu_adam: --muon %lldx%lld: out of memory\n", r, c);
                return 1;
            }
            for (int64_t i = 0; i < n; i++) x0[i] = (float)((double)((uint32_t)(i * 2654435761u) % 2001u) / 1000.0 - 1.0);
            for (k = -1; k < m; k++) {
                double t0;
                memcpy(x, x0, sizeof(float) * (size_t)n);
                t0 = now_s();
                if (zero_muon_orthogonalize(x, 1, r, c, 5, 1.0f, work, &err) != ZERO_OK) {
                    fprintf(stderr, "cpu_adam: zero_muon_orthogonalize: %s\n", err.msg);
                    return 1;
                }
                if (k >= 0) t[k] = now_s() - t0;
            }
            qsort(t, (size_t)m, sizeof t[0], cmp_double);
            printf("%10lld %8lld | %8.3f %10.2f\n", r, c, t[m / 2] * 1e3,
                   5 * (4 * sr * sr * sc + 2 * sr * sr * sr) / t[m / 2] / 1e9);
            free(x), free(x0), free(work);
        }
        p += used;
        if (!*p) return 0;
        p++;
    }
}

static const char usage[] =
    "usage: cpu_adam [--params 64M,1B] [--iters 10] [--warmup 2] [--threads T] [--budget S] [--no-single] "
    "[--out file]\n"
    "       cpu_adam --muon RxC[,RxC...] [--iters n]   the host's Newton-Schulz (Muon) per matrix shape\n"
    "  --params    parameter counts, comma-separated, 64 to 1e13 each (k = 1e3, M = 2^20, B or G = 1e9)\n"
    "  --iters/-n  timed calls per row, 1 to 1e6 (fewer past --budget)\n"
    "  --warmup/-w warm-up calls per row, 1 to 1e6\n"
    "  --threads   threads of the pool, 0 to 4096 (0: zero_cpu_threads: ZERO_CPU_THREADS, else the cores, split between the host's ranks)\n"
    "  --budget    seconds one row may take, 0.001 to 1e6\n";

/* a flag's whole number in [lo, hi] into an int, or one line on stderr and 1 */
static int flag_int(const char *flag, const char *v, long long lo, long long hi, int *out) {
    long long n = 0;
    if (tool_int("cpu_adam", flag, v, lo, hi, &n)) return 1;
    *out = (int)n;
    return 0;
}

int main(int argc, char **argv) {
    const char *params_arg = "64M,1B", *out_path = NULL, *muon_arg = NULL;
    int iters = 10, warmup = 2, threads_arg = 0, single = 1;
    double budget = 10.0;
    int64_t sizes[16];
    int n_sizes = 0;
    zero_error err;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (tool_help_asked(argc, argv, usage)) return 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--params")) {
            if (!v) bad = tool_fail("cpu_adam", a, "missing value (counts such as 64M,1B)");
            params_arg = v, i++;
        } else if (!strcmp(a, "--iters") || !strcmp(a, "-n")) bad = flag_int(a, v, 1, 1000000, &iters), i++;
        else if (!strcmp(a, "--warmup") || !strcmp(a, "-w")) bad = flag_int(a, v, 1, 1000000, &warmup), i++;
        else if (!strcmp(a, "--threads")) bad = flag_int(a, v, 0, ZERO_CPU_THREADS_MAX, &threads_arg), i++;
        else if (!strcmp(a, "--budget")) bad = tool_num("cpu_adam", a, v, 0.001, 1e6, &budget), i++;
        else if (!strcmp(a, "--no-single")) single = 0;
        else if (!strcmp(a, "--muon")) {
            if (!v || !*v) bad = tool_fail("cpu_adam", a, "%s value (shapes such as 1600x1600)", v ? "empty" : "missing");
            muon_arg = v, i++;
        } else if (!strcmp(a, "--out")) {
            if (!v || !*v) bad = tool_fail("cpu_adam", a, "%s value (a file name)", v ? "empty" : "missing");
            out_path = v, i++;
        } else return tool_unknown_option("cpu_adam", a, usage);
        if (bad) return 2;
    }
    if (muon_arg) return muon_rows(muon_arg, iters);
    {
        /* the items between commas, each checked; an empty one is an error */
        const char *p = params_arg;
        for (int item = 1;; item++) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char tok[80];
            if (n_sizes == 16) {
                tool_fail("cpu_adam", "--params", "more than 16 counts");
                return 2;
            }
            if (len == 0 && (comma || item > 1)) {
                tool_fail("cpu_adam", "--params", "item %d is empty", item);
                return 2;
            }
            snprintf(tok, sizeof tok, "%.*s", (int)(len < sizeof tok - 1 ? len : sizeof tok - 1), p);
            if (len >= sizeof tok - 1) memcpy(tok + sizeof tok - 4, "...", 4); /* too long: refused, shown cut */
            if (parse_count(tok, &sizes[n_sizes])) return 2;
            n_sizes++;
            if (!comma) break;
            p = comma + 1;
        }
    }

    zero_cpu_features feat = zero_cpu_detect();
    zero_simd_level best = zero_cpu_simd_level(&feat);
    zero_cpu_pool *pool_all = NULL, *pool_one = NULL;
    if (zero_cpu_pool_create(&pool_all, threads_arg, NULL, &err) != ZERO_OK) die("zero_cpu_pool_create", &err);
    if (zero_cpu_pool_create(&pool_one, 1, NULL, &err) != ZERO_OK) die("zero_cpu_pool_create(1)", &err);
    const int T = zero_cpu_pool_threads(pool_all);
    char cpu[256];
    cpu_name(cpu, sizeof cpu);

    FILE *out = NULL;
    if (out_path) {
        out = fopen(out_path, "w");
        if (!out) {
            fprintf(stderr, "cpu_adam: cannot write %s\n", out_path);
            return 1;
        }
        fprintf(out, "cpu %s\nlogical_cores %d\nthreads %d\nsimd %s\niters %d\nwarmup %d\n", cpu,
                feat.logical_cores, T, zero_simd_level_name(best), iters, warmup);
    }

    char nt_note[64];
    if ((int64_t)ZERO_CPU_NT_MIN == INT64_MAX) snprintf(nt_note, sizeof nt_note, "never (the default)");
    else snprintf(nt_note, sizeof nt_note, "calls of %lld elements or more", (long long)ZERO_CPU_NT_MIN);
    printf("# cpu_adam: zero_cpu_adam (AdamW, one flat buffer) vs STREAM-style kernels, same pool\n");
    printf("# cpu: %s, %d logical cores for this process; SIMD: best %s (avx2 %d fma %d f16c %d avx512f %d bw %d vl %d)%s\n",
           cpu, feat.logical_cores, zero_simd_level_name(best), feat.avx2, feat.fma, feat.f16c, feat.avx512f,
           feat.avx512bw, feat.avx512vl, getenv("ZERO_NO_SIMD") ? " [ZERO_NO_SIMD set]" : "");
    printf("# threads: %d (all) and 1; CLOCK_MONOTONIC, median of n after %d warm-up (n <= %d, fewer past %.0f s a row)\n",
           T, warmup, iters, budget);
    printf("# bytes per parameter: 28 for both Adam variants (fp16: grad 2 + master/m/v 24 + param 2;\n"
           "#   fp32: grad 4 + master/m/v 24, no param write); zero_cpu_adam's streaming stores (ZERO_CPU_NT_MIN): %s\n"
           "# bandwidth kernels, bytes per element: copy 8, triad 12 (cached stores), copy-nt 8, triad-nt 12 (streaming\n"
           "#   stores), adam, adam-pf and adam-nt 28 (Adam's 4 read + 3 written streams, trivial arithmetic;\n"
           "#   cached stores, cached with zero_cpu_adam's software prefetch, streaming stores);\n"
           "#   bw = the fastest of them at the same thread count (1 thread: copy, triad, adam-nt)\n"
           "# kernels: %s vectors, pieces of %d elements through the same pool\n",
           nt_note, stream_isa_name(feat.avx512f ? 2 : feat.avx ? 1 : 0), GRAIN);

    int rc = 0;
    for (int si = 0; si < n_sizes; si++) {
        const int64_t N = sizes[si];
        const double need = 18.0 * (double)N, avail = mem_available();
        printf("\n# ---- %lld parameters: %.2f GB of buffers (fp32 master, m, v; 4-byte gradient; fp16 params)\n",
               (long long)N, need / 1e9);
        if (avail > 0 && need > 0.9 * avail) {
            printf("# SKIPPED %lld parameters: needs %.1f GB, MemAvailable is %.1f GB (90%% of it may be used)\n",
                   (long long)N, need / 1e9, avail / 1e9);
            if (out) fprintf(out, "skipped %lld needs_gb %.2f available_gb %.2f\n", (long long)N, need / 1e9, avail / 1e9);
            continue;
        }
        if (need < 1e9)
            printf("# note: %.2f GB of buffers may sit partly in the caches: not a memory figure (64M+ is)\n",
                   need / 1e9);
        bufs B;
        B.master = (float *)aligned_alloc(64, sizeof(float) * (size_t)N);
        B.m = (float *)aligned_alloc(64, sizeof(float) * (size_t)N);
        B.v = (float *)aligned_alloc(64, sizeof(float) * (size_t)N);
        B.grad = aligned_alloc(64, sizeof(float) * (size_t)N);
        B.param = (zero_f16 *)aligned_alloc(64, sizeof(zero_f16) * (size_t)N);
        if (!B.master || !B.m || !B.v || !B.grad || !B.param) {
            printf("# SKIPPED %lld parameters: allocation of %.1f GB failed\n", (long long)N, need / 1e9);
            if (out) fprintf(out, "skipped %lld needs_gb %.2f available_gb %.2f\n", (long long)N, need / 1e9, avail / 1e9);
            free(B.master), free(B.m), free(B.v), free(B.grad), free(B.param);
            continue;
        }
        B.grad_dtype = ZERO_DTYPE_FP16;
        double t0 = now_s();
        if (zero_cpu_pool_run(pool_all, fill_task, &B, N, GRAIN, &err) != ZERO_OK) die("fill", &err);
        printf("# filled in %.1f s\n", now_s() - t0);

        /* STREAM-style bandwidth over master/m/v/grad (restored by the fills below);
           with 1 thread only copy, triad and adam-nt (the single-thread rows are
           for reference, and each takes seconds at 1e9) */
        double bw[2] = {0, 0}, kg[2][K_COUNT];
        int bw_k[2] = {0, 0};
        printf("#%13s %-8s %-7s %6s %3s | %10s %10s %9s %7s\n", "params", "what", "simd", "threads", "n", "time(ms)",
               "Mparam/s", "GB/s", "% of bw");
        for (int pi = 0; pi < (single ? 2 : 1); pi++) {
            int th = pi ? 1 : T;
            stream_ctx sc;
            sc.pool = pi ? pool_one : pool_all;
            sc.n = N;
            sc.s.a = B.m;
            sc.s.b = B.v;
            sc.s.c = B.master;
            sc.s.g = (float *)B.grad;
            sc.s.s = 0.5f;
            sc.s.isa = feat.avx512f ? 2 : feat.avx ? 1 : 0;
            for (int k = 0; k < K_COUNT; k++) {
                kg[pi][k] = 0;
                if (pi && k != K_COPY && k != K_TRIAD && k != K_ADAM_NT) continue;
                sc.s.nt = k == K_COPY_NT || k == K_TRIAD_NT || k == K_ADAM_NT;
                sc.s.pf = k == K_ADAM_PF;
                sc.fn = k == K_COPY || k == K_COPY_NT ? copy_task : k == K_TRIAD || k == K_TRIAD_NT ? triad_task
                                                                                                : adam_shape_task;
                sc.s.s = k >= K_ADAM ? 1e-7f : 0.5f; /* adam: m = v + 0.5 master would grow without bound */
                timing t = time_calls(stream_call, &sc, warmup, iters, budget);
                kg[pi][k] = kernel_bytes[k] * (double)N / (t.ms * 1e-3) / 1e9;
                if (kg[pi][k] > bw[pi]) bw[pi] = kg[pi][k], bw_k[pi] = k;
                printf("%14lld %-8s %-7s %6d %3d | %10.3f %10s %9.2f %7s\n", (long long)N, kernel_names[k], "-", th,
                       t.n, t.ms, "-", kg[pi][k], "-");
                if (out)
                    fprintf(out, "kernel %lld %d %s gbps %.4f ms %.6f\n", (long long)N, th, kernel_names[k], kg[pi][k],
                            t.ms);
            }
            if (out) {
                fprintf(out, "stream %lld %d copy_gbps %.4f triad_gbps %.4f\n", (long long)N, th, kg[pi][K_COPY],
                        kg[pi][K_TRIAD]);
                fprintf(out, "bw %lld %d gbps %.4f kernel %s\n", (long long)N, th, bw[pi], kernel_names[bw_k[pi]]);
            }
        }
        if (zero_cpu_pool_run(pool_all, fill_task, &B, N, GRAIN, &err) != ZERO_OK) die("fill", &err);

        /* Adam rows */
        double best_fp16_all = 0, best_fp32_all = 0;
        zero_adam_seg seg;
        memset(&seg, 0, sizeof seg);
        seg.offset = 0;
        seg.count = N;
        seg.lr = 1e-4f;
        seg.weight_decay = 0.01f;
        for (int var = 0; var < 2; var++) {
            const int fp16 = var == 0;
            B.grad_dtype = fp16 ? ZERO_DTYPE_FP16 : ZERO_DTYPE_FP32;
            if (zero_cpu_pool_run(pool_all, fill_grad_task, &B, N, GRAIN, &err) != ZERO_OK) die("fill", &err);
            adam_ctx ac;
            adam_row(&ac, &B, &seg, fp16);
            for (int li = 0; li < 2; li++) {
                zero_simd_level level = li ? ZERO_SIMD_SCALAR : best;
                if (li && best == ZERO_SIMD_SCALAR) break;
                for (int pi = 0; pi < (single ? 2 : 1); pi++) {
                    int th = pi ? 1 : T;
                    ac.level = level;
                    ac.pool = pi ? pool_one : pool_all;
                    timing t = time_calls(adam_call, &ac, warmup, iters, budget);
                    double mps = (double)N / (t.ms * 1e-3) / 1e6, gbps = 28.0 * (double)N / (t.ms * 1e-3) / 1e9;
                    printf("%14lld %-8s %-7s %6d %3d | %10.3f %10.1f %9.2f %6.1f%%\n", (long long)N,
                           fp16 ? "adam16" : "adam32", zero_simd_level_name(level), th, t.n, t.ms, mps, gbps,
                           100.0 * gbps / bw[pi]);
                    if (out)
                        fprintf(out, "adam %lld %s %s %d ms %.6f n %d\n", (long long)N, fp16 ? "fp16" : "fp32",
                                zero_simd_level_name(level), th, t.ms, t.n);
                    if (li == 0 && pi == 0) {
                        if (fp16) best_fp16_all = gbps;
                        else best_fp32_all = gbps;
                    }
                }
            }
        }
        /* the rules beside Adam: fp16 gradients, the fp16 parameters written, the best SIMD path, all threads;
           bytes per parameter: gradient 2 + master read and written 8 + each state array read and written 8 +
           parameter 2 (Lion m, Adagrad v, SGD's momentum buffer: 20) */
        {
            static const struct {
                zero_optimizer_type kind;
                const char *name;
            } rules[3] = {{ZERO_OPTIMIZER_LION, "lion16"}, {ZERO_OPTIMIZER_ADAGRAD, "adagrad16"}, {ZERO_OPTIMIZER_SGD, "sgd16"}};
            B.grad_dtype = ZERO_DTYPE_FP16;
            if (zero_cpu_pool_run(pool_all, fill_grad_task, &B, N, GRAIN, &err) != ZERO_OK) die("fill", &err);
            for (int ri = 0; ri < 3; ri++) {
                adam_ctx ac;
                memset(&ac, 0, sizeof ac);
                ac.a.kind = rules[ri].kind;
                ac.a.master = B.master;
                ac.a.m = rules[ri].kind == ZERO_OPTIMIZER_ADAGRAD ? NULL : B.m;
                ac.a.v = rules[ri].kind == ZERO_OPTIMIZER_ADAGRAD ? B.v : NULL;
                ac.a.grad = B.grad;
                ac.a.grad_dtype = ZERO_DTYPE_FP16;
                ac.a.param = B.param;
                ac.a.param_dtype = ZERO_DTYPE_FP16;
                ac.a.segs = &seg;
                ac.a.n_segs = 1;
                ac.a.beta1 = 0.9f;
                ac.a.beta2 = 0.99f;
                ac.a.eps = 1e-10f;
                ac.a.momentum = rules[ri].kind == ZERO_OPTIMIZER_SGD ? 0.9f : 0.0f;
                ac.a.grad_scale = 1.0f / 1024.0f;
                ac.level = best;
                ac.pool = pool_all;
                const int state = zero_optimizer_state_mask(rules[ri].kind, ac.a.momentum);
                const double bpp = 2.0 + 8.0 + 8.0 * ((state & 1) + ((state >> 1) & 1)) + 2.0;
                timing t = time_calls(adam_call, &ac, warmup, iters, budget);
                double mps = (double)N / (t.ms * 1e-3) / 1e6, gbps = bpp * (double)N / (t.ms * 1e-3) / 1e9;
                printf("%14lld %-8s %-7s %6d %3d | %10.3f %10.1f %9.2f %6.1f%%\n", (long long)N, rules[ri].name,
                       zero_simd_level_name(best), T, t.n, t.ms, mps, gbps, 100.0 * gbps / bw[0]);
                printf("# %lld params, %s (%.0f B/param), %s, %d threads: %.2f GB/s = %.1f%% of bw (%s)\n", (long long)N,
                       rules[ri].name, bpp, zero_simd_level_name(best), T, gbps, 100.0 * gbps / bw[0], kernel_names[bw_k[0]]);
                if (out)
                    fprintf(out, "rule %lld %s %s %d ms %.6f n %d gbps %.4f\n", (long long)N, rules[ri].name,
                            zero_simd_level_name(best), T, t.ms, t.n, gbps);
            }
        }
        for (int k = 0; k < 4; k++) { /* the results must be finite: a benchmark of NaNs measures nothing */
            int64_t i = (int64_t)((double)(N - 1) * k / 3.0);
            if (!isfinite(B.master[i]) || !isfinite(B.m[i]) || !isfinite(B.v[i])) {
                fprintf(stderr, "cpu_adam: element %lld is not finite after the runs\n", (long long)i);
                rc = 1;
            }
        }
        /* bf16 master and state (bf16.bf16_master_weights_and_grads, bf16_optimizer_states): the fp32 buffers
           narrowed in place to their first N bf16 values (front to back: each read before it is overwritten),
           fp16 gradients and parameters, the best SIMD path, all threads: gradient 2 + master, m, v read and
           written 12 + parameter 2 = 16 bytes per parameter */
        {
            const double bpp = 16.0;
            adam_ctx ac;
            int64_t i;
            for (i = 0; i < N; i++) {
                ((zero_bf16 *)B.master)[i] = zero_f32_to_bf16(B.master[i]);
                ((zero_bf16 *)B.m)[i] = zero_f32_to_bf16(B.m[i]);
                ((zero_bf16 *)B.v)[i] = zero_f32_to_bf16(B.v[i]);
            }
            B.grad_dtype = ZERO_DTYPE_FP16; /* (the rules' fill above) */
            adam_row(&ac, &B, &seg, 1);
            ac.a.master_dtype = ac.a.state_dtype = ZERO_DTYPE_BF16;
            ac.level = best;
            ac.pool = pool_all;
            timing t = time_calls(adam_call, &ac, warmup, iters, budget);
            double mps = (double)N / (t.ms * 1e-3) / 1e6, gbps = bpp * (double)N / (t.ms * 1e-3) / 1e9;
            printf("%14lld %-8s %-7s %6d %3d | %10.3f %10.1f %9.2f %6.1f%%\n", (long long)N, "adambf16",
                   zero_simd_level_name(best), T, t.n, t.ms, mps, gbps, 100.0 * gbps / bw[0]);
            printf("# %lld params, adam with bf16 master and state (16 B/param), %s, %d threads: %.1f Mparam/s, %.2f "
                   "GB/s = %.1f%% of bw (%s); the fp32 row: %.1f Mparam/s\n",
                   (long long)N, zero_simd_level_name(best), T, mps, gbps, 100.0 * gbps / bw[0], kernel_names[bw_k[0]],
                   best_fp16_all / 28.0 * 1e3);
            if (out)
                fprintf(out, "adam %lld bf16state %s %d ms %.6f n %d gbps %.4f\n", (long long)N, zero_simd_level_name(best),
                        T, t.ms, t.n, gbps);
            for (int k = 0; k < 4; k++) {
                int64_t e = (int64_t)((double)(N - 1) * k / 3.0);
                if (!isfinite(zero_bf16_to_f32(((zero_bf16 *)B.master)[e])) ||
                    !isfinite(zero_bf16_to_f32(((zero_bf16 *)B.v)[e]))) {
                    fprintf(stderr, "cpu_adam: bf16 element %lld is not finite after the runs\n", (long long)e);
                    rc = 1;
                }
            }
        }
        for (int pi = 0; pi < (single ? 2 : 1); pi++) {
            printf("# %lld params, memory bandwidth (%d thread%s): %.2f GB/s (%s); copy %.2f, triad %.2f", (long long)N,
                   pi ? 1 : T, pi ? "" : "s", bw[pi], kernel_names[bw_k[pi]], kg[pi][K_COPY], kg[pi][K_TRIAD]);
            if (!pi)
                printf(", copy-nt %.2f, triad-nt %.2f, adam %.2f, adam-pf %.2f", kg[pi][K_COPY_NT],
                       kg[pi][K_TRIAD_NT], kg[pi][K_ADAM], kg[pi][K_ADAM_PF]);
            printf(", adam-nt %.2f GB/s\n", kg[pi][K_ADAM_NT]);
        }
        printf("# %lld params, adam fp16 grads + fp16 param write, %s, %d threads: %.1f Mparam/s, %.2f GB/s at 28 B/param "
               "= %.1f%% of bw (%s)\n",
               (long long)N, zero_simd_level_name(best), T, best_fp16_all / 28.0 * 1e3, best_fp16_all,
               100.0 * best_fp16_all / bw[0], kernel_names[bw_k[0]]);
        printf("# %lld params, adam fp32 grads, no param write, %s, %d threads: %.1f Mparam/s, %.2f GB/s at 28 B/param "
               "= %.1f%% of bw (%s)\n",
               (long long)N, zero_simd_level_name(best), T, best_fp32_all / 28.0 * 1e3, best_fp32_all,
               100.0 * best_fp32_all / bw[0], kernel_names[bw_k[0]]);
        free(B.master), free(B.m), free(B.v), free(B.grad), free(B.param);
    }
    if (out) fclose(out);
    zero_cpu_pool_destroy(pool_all);
    zero_cpu_pool_destroy(pool_one);
    return rc;
}
