/* test_offload.c - zero_offload.h: CPU features, SIMD level, CPU optimizer threads; and the engine's
   arena for the CPU's sum of the micro-batches (private to zero.h: this test compiles the implementation).
   Run alone: make test T=test_offload */
#define _GNU_SOURCE /* setenv/unsetenv, sched_{get,set}affinity and CPU_* in this test;
                       also makes the header take its sched_getaffinity path */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#ifdef __linux__
#include <sched.h>
#endif

/* ---- a logger that records what it is given ---- */

static int cap_calls;
static zero_log_level cap_level;
static zero_msg cap_item;
static char cap_text[1024];

static void capture(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    (void)user;
    (void)rank;
    cap_calls++;
    cap_level = level;
    cap_item = item;
    snprintf(cap_text, sizeof cap_text, "%s", text);
}

static void cap_reset(void) {
    cap_calls = 0;
    cap_level = ZERO_LOG_DEBUG;
    cap_item = ZERO_MSG_NONE;
    cap_text[0] = 0;
}

/* ---- /proc/cpuinfo: the kernel's view of the same flags ---- */

/* 1/0: the first "flags" line of /proc/cpuinfo has / lacks the word; -1: no file or line. */
static int cpuinfo_has(const char *flag) {
    static char line[8192];
    static int loaded = -1;
    if (loaded < 0) {
        FILE *fp = fopen("/proc/cpuinfo", "r");
        loaded = 0;
        if (fp) {
            while (fgets(line, sizeof line, fp))
                if (strncmp(line, "flags", 5) == 0) {
                    loaded = 1;
                    break;
                }
            fclose(fp);
        }
    }
    if (!loaded) return -1;
    {
        const char *p = strchr(line, ':');
        size_t n = strlen(flag);
        if (!p) return -1;
        p++;
        while (*p) {
            while (*p == ' ' || *p == '\t') p++;
            if (strncmp(p, flag, n) == 0 && (p[n] == ' ' || p[n] == '\n' || p[n] == 0)) return 1;
            while (*p && *p != ' ' && *p != '\t') p++;
        }
    }
    return 0;
}

static void test_detect(void) {
    zero_cpu_features f = zero_cpu_detect(), g = zero_cpu_detect();
    const int *v = &f.sse2;
    int i;
    printf("cpu: sse2 %d avx %d avx2 %d fma %d f16c %d avx512f %d avx512bw %d avx512vl %d "
           "avx512_bf16 %d, %d logical cores, simd level %s\n",
           f.sse2, f.avx, f.avx2, f.fma, f.f16c, f.avx512f, f.avx512bw, f.avx512vl, f.avx512_bf16,
           f.logical_cores, zero_simd_level_name(zero_cpu_simd_level(&f)));
    for (i = 0; i < 9; i++) CHECKF(v[i] == 0 || v[i] == 1, "feature %d is %d", i, v[i]);
    CHECK(f.logical_cores >= 1);
    /* the implications the header promises (true ones only) */
    CHECK(!f.avx2 || f.avx);
    CHECK(!f.fma || f.avx);
    CHECK(!f.f16c || f.avx);
    CHECK(!f.avx512f || f.avx);
    CHECK(!f.avx512bw || f.avx512f);
    CHECK(!f.avx512vl || f.avx512f);
    CHECK(!f.avx512_bf16 || f.avx512f);
    CHECK(memcmp(&f, &g, sizeof f) == 0); /* deterministic */
#if defined(__x86_64__) || defined(_M_X64)
    CHECK(f.sse2 == 1); /* part of x86-64 itself */
#else
    for (i = 0; i < 9; i++) CHECK_EQ_INT(v[i], 0);
#endif
}

static void test_cpuinfo(void) {
#if defined(__linux__) && (defined(__x86_64__) || defined(_M_X64))
    /* Linux drops a flag from /proc/cpuinfo when the OS does not enable its
       register state, so the kernel's flags must equal CPUID + XGETBV. */
    static const char *const names[] = {"sse2", "avx", "avx2", "fma", "f16c",
                                        "avx512f", "avx512bw", "avx512vl", "avx512_bf16"};
    zero_cpu_features f = zero_cpu_detect();
    const int *v = &f.sse2;
    int i;
    if (cpuinfo_has("sse2") < 0) {
        printf("no /proc/cpuinfo flags line: cross-check skipped\n");
        return;
    }
    for (i = 0; i < 9; i++)
        CHECKF(v[i] == cpuinfo_has(names[i]), "%s: zero_cpu_detect says %d, /proc/cpuinfo %d",
               names[i], v[i], cpuinfo_has(names[i]));
#endif
}

static void test_cpu_list(void) {
#ifdef __linux__
    CHECK_EQ_INT(zero__cpu_list_count("0"), 1);
    CHECK_EQ_INT(zero__cpu_list_count("\t0-1\n"), 2);
    CHECK_EQ_INT(zero__cpu_list_count("0-3,8-11"), 8);
    CHECK_EQ_INT(zero__cpu_list_count("0,2,4,6\nMems_allowed: 1"), 4);
    CHECK_EQ_INT(zero__cpu_list_count("5-5,7"), 2);
    CHECK_EQ_INT(zero__cpu_list_count("0-255\r\n"), 256);
    CHECK_EQ_INT(zero__cpu_list_count(""), 0);
    CHECK_EQ_INT(zero__cpu_list_count(" \n"), 0);
    CHECK_EQ_INT(zero__cpu_list_count("3-1"), -1);
    CHECK_EQ_INT(zero__cpu_list_count("abc"), -1);
    CHECK_EQ_INT(zero__cpu_list_count("0-"), -1);
    CHECK_EQ_INT(zero__cpu_list_count("0,"), -1);
    CHECK_EQ_INT(zero__cpu_list_count("-1"), -1);
    CHECK_EQ_INT(zero__cpu_list_count("0-3x"), -1);
    CHECK_EQ_INT(zero__cpu_list_count("0-99999999999999999999"), -1);
    /* random lists as the kernel prints them: ascending, disjoint ranges */
    {
        int round;
        for (round = 0; round < 200; round++) {
            char buf[4096];
            size_t len = 0;
            long cpu = zt_rand_int(0, 3), want = 0;
            int ranges = (int)zt_rand_int(1, 40), r;
            for (r = 0; r < ranges; r++) {
                long width = zt_rand_int(1, 64);
                if (width == 1)
                    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%ld", r ? "," : "", cpu);
                else
                    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%ld-%ld", r ? "," : "",
                                            cpu, cpu + width - 1);
                want += width;
                cpu += width + zt_rand_int(1, 9);
            }
            snprintf(buf + len, sizeof buf - len, "\n");
            CHECKF(zero__cpu_list_count(buf) == want, "\"%s\" counts %d, want %ld", buf,
                   zero__cpu_list_count(buf), want);
        }
    }
#endif
}

static void test_affinity(void) {
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t orig, one;
    int n, first = -1, i;
    if (sched_getaffinity(0, sizeof orig, &orig) != 0) {
        printf("sched_getaffinity failed: affinity test skipped\n");
        return;
    }
    n = CPU_COUNT(&orig);
    CHECK_EQ_INT(zero_cpu_detect().logical_cores, n);
    CHECK_EQ_INT(zero__proc_cpus_allowed(), n); /* the path C files without _GNU_SOURCE take */
    unsetenv("ZERO_CPU_THREADS");
    CHECK_EQ_INT(zero_cpu_threads(0, NULL), n);
    for (i = 0; i < CPU_SETSIZE && first < 0; i++)
        if (CPU_ISSET(i, &orig)) first = i;
    if (n < 2 || first < 0) {
        printf("%d CPU(s) allowed: pinning test skipped\n", n);
        return;
    }
    /* pinned to one CPU, as `taskset -c <cpu>` would: every path says 1 */
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        printf("sched_setaffinity failed: pinning test skipped\n");
        return;
    }
    CHECK_EQ_INT(zero_cpu_detect().logical_cores, 1);
    CHECK_EQ_INT(zero__proc_cpus_allowed(), 1);
    CHECK_EQ_INT(zero_cpu_threads(0, NULL), 1);
    CHECK(sched_setaffinity(0, sizeof orig, &orig) == 0);
    CHECK_EQ_INT(zero_cpu_detect().logical_cores, n);
#endif
}

static void test_simd_level(void) {
    zero_cpu_features none, avx2, avx512, partial;
    zero_simd_level here;
    memset(&none, 0, sizeof none);
    none.logical_cores = 1;
    avx2 = none;
    avx2.sse2 = avx2.avx = avx2.avx2 = avx2.fma = avx2.f16c = 1;
    avx512 = avx2;
    avx512.avx512f = avx512.avx512bw = avx512.avx512vl = 1;

    unsetenv("ZERO_NO_SIMD");
    CHECK_EQ_INT(zero_cpu_simd_level(&none), ZERO_SIMD_SCALAR);
    CHECK_EQ_INT(zero_cpu_simd_level(&avx2), ZERO_SIMD_AVX2);
    CHECK_EQ_INT(zero_cpu_simd_level(&avx512), ZERO_SIMD_AVX512);
    partial = avx2;
    partial.fma = 0; /* AVX2 without FMA: no AVX2 kernel */
    CHECK_EQ_INT(zero_cpu_simd_level(&partial), ZERO_SIMD_SCALAR);
    partial = avx2;
    partial.f16c = 0;
    CHECK_EQ_INT(zero_cpu_simd_level(&partial), ZERO_SIMD_SCALAR);
    partial = avx512;
    partial.avx512bw = 0; /* AVX-512F without BW: falls back to AVX2 */
    CHECK_EQ_INT(zero_cpu_simd_level(&partial), ZERO_SIMD_AVX2);
    partial = avx512;
    partial.avx512vl = 0;
    CHECK_EQ_INT(zero_cpu_simd_level(&partial), ZERO_SIMD_AVX2);

    /* NULL: this machine */
    {
        zero_cpu_features f = zero_cpu_detect();
        here = zero_cpu_simd_level(&f);
        CHECK_EQ_INT(zero_cpu_simd_level(NULL), here);
    }

    /* ZERO_NO_SIMD: any non-empty value but "0" turns SIMD off */
    setenv("ZERO_NO_SIMD", "1", 1);
    CHECK_EQ_INT(zero_cpu_simd_level(&avx512), ZERO_SIMD_SCALAR);
    CHECK_EQ_INT(zero_cpu_simd_level(&avx2), ZERO_SIMD_SCALAR);
    CHECK_EQ_INT(zero_cpu_simd_level(NULL), ZERO_SIMD_SCALAR);
    setenv("ZERO_NO_SIMD", "yes", 1);
    CHECK_EQ_INT(zero_cpu_simd_level(&avx512), ZERO_SIMD_SCALAR);
    setenv("ZERO_NO_SIMD", "0", 1);
    CHECK_EQ_INT(zero_cpu_simd_level(&avx512), ZERO_SIMD_AVX512);
    setenv("ZERO_NO_SIMD", "", 1);
    CHECK_EQ_INT(zero_cpu_simd_level(&avx2), ZERO_SIMD_AVX2);
    unsetenv("ZERO_NO_SIMD");
    CHECK_EQ_INT(zero_cpu_simd_level(NULL), here);

    CHECK(strcmp(zero_simd_level_name(ZERO_SIMD_SCALAR), "scalar") == 0);
    CHECK(strcmp(zero_simd_level_name(ZERO_SIMD_AVX2), "avx2") == 0);
    CHECK(strcmp(zero_simd_level_name(ZERO_SIMD_AVX512), "avx512") == 0);
    CHECK(strcmp(zero_simd_level_name(ZERO_SIMD_COUNT), "unknown") == 0);
    CHECK(strcmp(zero_simd_level_name((zero_simd_level)-1), "unknown") == 0);
}

static void test_threads(void) {
    static const char *const bad[] = {"abc", "0", "-3", "4x", " 4", "+4", "3.5", "4097",
                                      "99999999999999999999999"};
    zero_logger lg;
    int cores = zero_cpu_detect().logical_cores;
    size_t i;
    memset(&lg, 0, sizeof lg);
    lg.fn = capture;
    lg.level = ZERO_LOG_INFO;

    /* the program's setting wins over everything */
    setenv("ZERO_CPU_THREADS", "7", 1);
    cap_reset();
    CHECK_EQ_INT(zero_cpu_threads(3, &lg), 3);
    CHECK_EQ_INT(zero_cpu_threads(1, &lg), 1);
    CHECK_EQ_INT(cap_calls, 0);

    /* a valid environment value, no warning */
    CHECK_EQ_INT(zero_cpu_threads(0, &lg), 7);
    CHECK_EQ_INT(zero_cpu_threads(-1, &lg), 7);
    setenv("ZERO_CPU_THREADS", "1", 1);
    CHECK_EQ_INT(zero_cpu_threads(0, &lg), 1);
    setenv("ZERO_CPU_THREADS", "4096", 1); /* ZERO_CPU_THREADS_MAX */
    CHECK_EQ_INT(zero_cpu_threads(0, &lg), 4096);
    CHECK_EQ_INT(cap_calls, 0);

    /* invalid values: cores, and one warning each naming the variable and the value */
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("ZERO_CPU_THREADS", bad[i], 1);
        cap_reset();
        CHECKF(zero_cpu_threads(0, &lg) == cores, "ZERO_CPU_THREADS=\"%s\"", bad[i]);
        CHECKF(cap_calls == 1, "ZERO_CPU_THREADS=\"%s\": %d log calls", bad[i], cap_calls);
        CHECK_EQ_INT(cap_level, ZERO_LOG_WARN);
        CHECK_EQ_INT(cap_item, ZERO_MSG_ENV_INVALID);
        CHECK_STR_CONTAINS(cap_text, "ZERO_CPU_THREADS");
        CHECK_STR_CONTAINS(cap_text, bad[i]);
    }
    /* the logger's level filters the warning as any other */
    setenv("ZERO_CPU_THREADS", "abc", 1);
    lg.level = ZERO_LOG_ERROR;
    cap_reset();
    CHECK_EQ_INT(zero_cpu_threads(0, &lg), cores);
    CHECK_EQ_INT(cap_calls, 0);
    lg.level = ZERO_LOG_INFO;

    /* empty or unset: cores, silently */
    setenv("ZERO_CPU_THREADS", "", 1);
    cap_reset();
    CHECK_EQ_INT(zero_cpu_threads(0, &lg), cores);
    unsetenv("ZERO_CPU_THREADS");
    CHECK_EQ_INT(zero_cpu_threads(0, &lg), cores);
    CHECK_EQ_INT(cap_calls, 0);
    CHECK(cores >= 1);

    /* the message item */
    CHECK(strcmp(zero_msg_name(ZERO_MSG_ENV_INVALID), "ENV_INVALID") == 0);
    CHECK_EQ_INT(zero__msg_results[ZERO_MSG_ENV_INVALID], ZERO_OK);
}

static const char *const host_rank_vars[] = {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                             "SLURM_NTASKS_PER_NODE"};

static void unset_host_ranks(void) {
    size_t i;
    for (i = 0; i < sizeof host_rank_vars / sizeof host_rank_vars[0]; i++) unsetenv(host_rank_vars[i]);
}

/* The ranks on this host from the launchers' variables, and the pool's share of the cores */
static void test_host_ranks(void) {
    static const char *const bad[] = {"0", "x", "2x", "-2", " 2", "65537", ""};
    int cores = zero_cpu_detect().logical_cores, share;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    size_t i, k;
    unsetenv("ZERO_CPU_THREADS");
    unset_host_ranks();
    CHECK_EQ_INT(zero_cpu_host_ranks(), 1);
    CHECK_EQ_INT(zero_cpu_threads(0, NULL), cores);
    for (i = 0; i < sizeof host_rank_vars / sizeof host_rank_vars[0]; i++) { /* each launcher's variable alone */
        char v[16];
        snprintf(v, sizeof v, "%d", (int)i + 2);
        setenv(host_rank_vars[i], v, 1);
        CHECKF(zero_cpu_host_ranks() == (int)i + 2, "%s=%s: %d", host_rank_vars[i], v, zero_cpu_host_ranks());
        for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            setenv(host_rank_vars[i], bad[k], 1);
            CHECKF(zero_cpu_host_ranks() == 1, "%s=\"%s\": %d", host_rank_vars[i], bad[k], zero_cpu_host_ranks());
        }
        unsetenv(host_rank_vars[i]);
    }
    setenv("SLURM_NTASKS_PER_NODE", "8", 1); /* the first one set wins: torchrun's before Slurm's */
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    CHECK_EQ_INT(zero_cpu_host_ranks(), 2);
    unsetenv("SLURM_NTASKS_PER_NODE");
    /* two ranks here: each pool takes half the cores (at least 1) unless this process is bound to fewer than the
       online CPUs */
    share = online > 0 && cores >= online ? (cores / 2 > 0 ? cores / 2 : 1) : cores;
    CHECK_EQ_INT(zero_cpu_threads(0, NULL), share);
    setenv("LOCAL_WORLD_SIZE", "100000", 1); /* (out of range: one rank) */
    CHECK_EQ_INT(zero_cpu_threads(0, NULL), cores);
    setenv("LOCAL_WORLD_SIZE", "4096", 1); /* more ranks than cores: one thread each */
    CHECK_EQ_INT(zero_cpu_threads(0, NULL), online > 0 && cores >= online ? 1 : cores);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    setenv("ZERO_CPU_THREADS", "5", 1); /* the environment's count and the program's win */
    CHECK_EQ_INT(zero_cpu_threads(0, NULL), 5);
    CHECK_EQ_INT(zero_cpu_threads(3, NULL), 3);
    { /* an invalid one: the share (its warning, tested above, kept out of the output) */
        zero_logger quiet;
        memset(&quiet, 0, sizeof quiet);
        quiet.fn = capture;
        quiet.level = ZERO_LOG_ERROR;
        setenv("ZERO_CPU_THREADS", "abc", 1);
        CHECK_EQ_INT(zero_cpu_threads(0, &quiet), share);
    }
    unsetenv("ZERO_CPU_THREADS");
#if defined(__linux__) && defined(CPU_COUNT)
    if (cores >= 2) { /* bound to one CPU (taskset, srun --cpu-bind): the binding is the share, not split again */
        cpu_set_t orig, one;
        int first = -1;
        if (sched_getaffinity(0, sizeof orig, &orig) == 0) {
            for (i = 0; i < CPU_SETSIZE && first < 0; i++)
                if (CPU_ISSET(i, &orig)) first = (int)i;
            CPU_ZERO(&one);
            CPU_SET(first, &one);
            if (first >= 0 && sched_setaffinity(0, sizeof one, &one) == 0) {
                CHECK_EQ_INT(zero_cpu_threads(0, NULL), 1);
                CHECK(sched_setaffinity(0, sizeof orig, &orig) == 0);
            }
        }
    }
#endif
    unset_host_ranks();
}

/* The host sum's arena (>>engine-hsum: zero__hsum_fit, push and pop, what
   the engine's backward and its CPU thread run under the mutex): chunks of
   random sizes taken in turn, the oldest freed at random, 100,000 times on
   each of four arenas (3, 4 and 7 of the largest chunk, and 3 to 40 at
   random), against a map of the arena's bytes: every chunk inside the arena
   and over no byte still queued; a chunk refused only when the place the
   queue comes to (after the last chunk, or from the start where that runs
   past the end) holds a queued byte, or the queue is full; the empty arena
   takes any chunk at 0. */
static void test_hsum_arena(void) {
    enum { NQ = 24, MAXC = 8, A = 256 };
    static unsigned char used[40 * MAXC * A];
    const int64_t caps[4] = {3, 4, 7, (int64_t)zt_rand_int(3, 40)};
    long takes = 0, refusals = 0, wraps = 0, bad = 0, it;
    int c;
    for (c = 0; c < 4; c++) {
        zero__host_sum h;
        int64_t q_off[NQ], q_len[NQ], next = 0;
        memset(&h, 0, sizeof h);
        memset(used, 0, sizeof used);
        h.q_off = q_off;
        h.n_q = NQ;
        h.cap = caps[c] * MAXC * A;
        for (it = 0; it < 100000; it++) {
            if (h.head < h.tail && zt_rand01() < 0.45) { /* the thread frees the oldest */
                int q = h.head % NQ;
                memset(used + q_off[q], 0, (size_t)q_len[q]);
                zero__hsum_pop(&h);
                if (h.head == h.tail) next = 0;
                continue;
            }
            int64_t need = (int64_t)zt_rand_int(1, MAXC) * A, off = zero__hsum_fit(&h, need), i, busy = 0;
            if (off < 0) { /* refused: the queue is full, or the place it comes to is taken */
                int64_t at = next + need <= h.cap ? next : 0;
                for (i = at; i < at + need; i++) busy |= used[i];
                if (!(h.tail - h.head == NQ || busy)) bad++;
                refusals++;
                continue;
            }
            if ((h.head == h.tail && off != 0) || off + need > h.cap) {
                bad++;
                continue;
            }
            for (i = off; i < off + need; i++) busy |= used[i];
            if (busy) bad++;
            if (off == 0 && next > 0) wraps++;
            memset(used + off, 1, (size_t)need);
            q_off[h.tail % NQ] = off;
            q_len[h.tail % NQ] = need;
            zero__hsum_push(&h, off, need);
            next = off + need;
            takes++;
        }
    }
    CHECKF(bad == 0 && takes > 100000 && refusals > 4000 && wraps > 4000,
           "host-sum arenas of 3, 4, 7 and %lld chunks: %ld misplaced or wrongly refused, %ld taken, %ld refused, %ld wrapped",
           (long long)caps[3], bad, takes, refusals, wraps);
    printf("the host sum's arenas (3, 4, 7 and %lld of the largest chunk): %ld chunks placed, %ld refused, %ld wrapped; "
           "none over a queued one\n", (long long)caps[3], takes, refusals, wraps);
}

int main(void) {
    (void)zt_near; /* harness helpers this test has no use for */
    (void)zt_rand_range;
    zt_seed("test_offload");
    unset_host_ranks(); /* (the thread counts below are this process's alone) */
    test_detect();
    test_cpuinfo();
    test_cpu_list();
    test_affinity();
    test_simd_level();
    test_threads();
    test_host_ranks();
    test_hsum_arena();
    return zt_finish();
}
