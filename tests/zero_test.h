/* zero_test.h - the one small harness of zero's tests.

   CHECK(cond) records a pass or a failure (file:line and the expression) and
   keeps going; numeric checks print the values. Every test program ends with
   `return zt_finish();`, which prints "N passed, N failed" and returns non-zero
   on any failure. Random inputs are fresh each run: the seed comes from the
   clock (or ZERO_TEST_SEED) and is printed, so a failure can be replayed. */
#ifndef ZERO_TEST_H
#define ZERO_TEST_H

#include <math.h>
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
    uint64_t z = seed;
    int i;
    for (i = 0; i < 4; i++) { /* splitmix64 */
        z += 0x9e3779b97f4a7c15ull;
        uint64_t x = z;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        zt_rng_s[i] = x ^ (x >> 31);
    }
    printf("%s: seed %llu (ZERO_TEST_SEED=%llu replays it)\n", name, (unsigned long long)seed,
           (unsigned long long)seed);
}

static inline int zt_finish(void) {
    printf("%d passed, %d failed\n", zt_pass, zt_fail);
    return zt_fail ? 1 : 0;
}

#endif
