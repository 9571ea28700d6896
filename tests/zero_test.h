/* zero_test.h - the one small harness of zero's tests.

   CHECK(cond) records a pass or a failure (file:line and the expression) and
   keeps going; numeric checks print the values. Every test program ends with
   `return zt_finish();`, which prints "N passed, N failed" and returns non-zero
   on any failure. Random inputs are fresh each run: the seed comes from the
   clock (or ZERO_TEST_SEED) and is printed, so a failure can be replayed.
   Below those, the small helpers several tests share (tensor values, fp16 /
   bf16 buffer access, bit comparison, hashing, a clock). */
#ifndef ZERO_TEST_H
#define ZERO_TEST_H

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int zt_pass, zt_fail;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (cond) {                                                                   \
            zt_pass++;                                                                \
        } else {                                                                      \
            zt_fail++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                             \
    } while (0)

/* CHECK with a printf-style explanation printed on failure. */
#define CHECKF(cond, ...)                                                             \
    do {                                                                              \
        if (cond) {                                                                   \
            zt_pass++;                                                                \
        } else {                                                                      \
            zt_fail++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
        }                                                                             \
    } while (0)

/* |got - want| <= rel * max(|want|, tiny): relative closeness, NaN never passes. */
static inline int zt_near(double got, double want, double rel) {
    double scale = fabs(want) > 1e-300 ? fabs(want) : 1e-300;
    return fabs(got - want) <= rel * scale || got == want;
}
#define CHECK_NEAR(got, want, rel)                                                          \
    CHECKF(zt_near((got), (want), (rel)), "got %.17g want %.17g (rel err %.3g, allowed %.3g)", \
           (double)(got), (double)(want),                                                   \
           fabs((double)(got) - (double)(want)) / (fabs((double)(want)) > 0 ? fabs((double)(want)) : 1), \
           (double)(rel))

#define CHECK_EQ_INT(got, want)                                                   \
    CHECKF((long long)(got) == (long long)(want), "got %lld want %lld", (long long)(got), \
           (long long)(want))

#define CHECK_STR_CONTAINS(s, sub) CHECKF(strstr((s), (sub)) != NULL, "\"%s\" lacks \"%s\"", (s), (sub))

/* splitmix64's output function: a well-mixed hash of x, also for deterministic
   inputs that any rank can recompute */
static inline uint64_t zt_mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* ---- fresh random inputs (xoshiro256**), seed printed ---- */
static uint64_t zt_rng_s[4];
static inline uint64_t zt_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t zt_rand_u64(void) {
    uint64_t r = zt_rotl(zt_rng_s[1] * 5, 7) * 9, t = zt_rng_s[1] << 17;
    zt_rng_s[2] ^= zt_rng_s[0];
    zt_rng_s[3] ^= zt_rng_s[1];
    zt_rng_s[1] ^= zt_rng_s[2];
    zt_rng_s[0] ^= zt_rng_s[3];
    zt_rng_s[2] ^= t;
    zt_rng_s[3] = zt_rotl(zt_rng_s[3], 45);
    return r;
}
/* uniform in [0, 1) */
static inline double zt_rand01(void) { return (double)(zt_rand_u64() >> 11) * (1.0 / 9007199254740992.0); }
static inline double zt_rand_range(double lo, double hi) { return lo + (hi - lo) * zt_rand01(); }
static inline long zt_rand_int(long lo, long hi) { /* inclusive */
    return lo + (long)(zt_rand_u64() % (uint64_t)(hi - lo + 1));
}
static inline void zt_seed(const char *name) {
    const char *env = getenv("ZERO_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    int i;
    for (i = 0; i < 4; i++) zt_rng_s[i] = zt_mix64(seed + (uint64_t)i * 0x9e3779b97f4a7c15ull); /* splitmix64 */
    printf("%s: seed %llu (ZERO_TEST_SEED=%llu replays it)\n", name, (unsigned long long)seed,
           (unsigned long long)seed);
}

/* ---- small shared helpers ---- */

/* wall-clock seconds (C11's timespec_get), for printed timings and deadlines */
static inline double zt_now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* a float's bits: equal bits tell NaNs and signed zeros apart where == does not */
static inline uint32_t zt_float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline int zt_same_bits(float a, float b) { return zt_float_bits(a) == zt_float_bits(b); }

/* Deterministic tensor values for zero_tensor.init, with init_user pointing at
   a zt_wave: element x of tensor t is amp * sin(phase + freq_t * t + freq_x * x)
   (cos where cosine is set), computed in double and rounded to float once. */
typedef struct zt_wave {
    double amp, phase, freq_t, freq_x;
    int cosine;
} zt_wave;
static inline float zt_wave_at(const zt_wave *w, int t, int64_t x) {
    double a = w->phase + w->freq_t * t + w->freq_x * (double)x;
    return (float)(w->amp * (w->cosine ? cos(a) : sin(a)));
}
static inline void zt_init_wave(void *user, int t, int64_t off, int64_t n, float *out) {
    int64_t i;
    for (i = 0; i < n; i++) out[i] = zt_wave_at((const zt_wave *)user, t, off + i);
}

/* fp32 / fp16 / bf16 buffer elements as float (zero.h's conversions: include
   this header after zero.h) */
#ifdef ZERO_H
static inline float zt_load(const void *p, zero_dtype dt, int64_t i) {
    if (dt == ZERO_DTYPE_FP16) return zero_f16_to_f32(((const zero_f16 *)p)[i]);
    if (dt == ZERO_DTYPE_BF16) return zero_bf16_to_f32(((const zero_bf16 *)p)[i]);
    return ((const float *)p)[i];
}
static inline void zt_store(void *p, zero_dtype dt, int64_t i, float v) {
    if (dt == ZERO_DTYPE_FP16) ((zero_f16 *)p)[i] = zero_f32_to_f16(v);
    else if (dt == ZERO_DTYPE_BF16) ((zero_bf16 *)p)[i] = zero_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}
/* v rounded to dt and back: what a dt buffer keeps of it */
static inline float zt_round(zero_dtype dt, float v) {
    if (dt == ZERO_DTYPE_FP16) return zero_f16_to_f32(zero_f32_to_f16(v));
    if (dt == ZERO_DTYPE_BF16) return zero_bf16_to_f32(zero_f32_to_bf16(v));
    return v;
}
#endif

static inline int zt_finish(void) {
    printf("%d passed, %d failed\n", zt_pass, zt_fail);
    return zt_fail ? 1 : 0;
}

#ifdef ZERO_CUDA_CUH
/* A GPU test program's start: one process per GPU (zero_cuda_launch_local
   forks them when no launcher started the ranks), the seed, and this rank's
   CUDA backend. NULL with *exit_code set when main should return it (the
   parent after its children, or a failure). */
static inline zero_cuda *zt_cuda_start(const char *name, int *exit_code) {
    zero_error err;
    zero_cuda *cu;
    int code = -1;
    if (zero_cuda_launch_local(&code, &err) != ZERO_OK) {
        fprintf(stderr, "%s: launch: %s\n", name, err.msg);
        *exit_code = 1;
        return NULL;
    }
    if (code >= 0) { /* the parent: the children did the work */
        *exit_code = code;
        return NULL;
    }
    zt_seed(name);
    if (zero_cuda_backend_init(&cu, NULL, &err) != ZERO_OK) {
        fprintf(stderr, "%s: backend: %s\n", name, err.msg);
        CHECK(0);
        *exit_code = zt_finish();
        return NULL;
    }
    return cu;
}
#endif

/* Per-rank state of a test's backend wrapper, found by the ctx each wrapped
   call gets: the wrapper keeps the host backend's ctx (every other function
   needs it), and host ranks are threads. */
#define ZT_WRAP_MAX 8
static pthread_mutex_t zt_wrap_mu = PTHREAD_MUTEX_INITIALIZER;
static void *zt_wrap_ctx[ZT_WRAP_MAX], *zt_wrap_state[ZT_WRAP_MAX];

/* rank's state (NULL: none) for backend ctx */
static inline void zt_wrap_set(int rank, void *ctx, void *state) {
    pthread_mutex_lock(&zt_wrap_mu);
    zt_wrap_ctx[rank] = state ? ctx : NULL;
    zt_wrap_state[rank] = state;
    pthread_mutex_unlock(&zt_wrap_mu);
}

static inline void *zt_wrap_of(const void *ctx) {
    void *st = NULL;
    int i;
    pthread_mutex_lock(&zt_wrap_mu);
    for (i = 0; i < ZT_WRAP_MAX && !st; i++)
        if (zt_wrap_state[i] && zt_wrap_ctx[i] == ctx) st = zt_wrap_state[i];
    pthread_mutex_unlock(&zt_wrap_mu);
    return st;
}

#endif
