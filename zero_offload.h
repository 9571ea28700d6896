/* zero_offload.h - the CPU side of zero's offload, for C and CUDA training loops.

   Companion of zero.h: include zero.h first (this file #errors otherwise).
   Plain C11, also valid C++; no CUDA. It holds what zero does on the host
   CPU when optimizer state or parameters are offloaded (DeepSpeed's
   zero_optimization.offload_optimizer / offload_param):

       here now:
         - CPU feature detection (CPUID + the OS's XSAVE state) and the SIMD
           level the CPU optimizer will run at (AVX-512, AVX2 or scalar)
         - the size of the CPU optimizer's thread pool (program setting,
           ZERO_CPU_THREADS, or the logical cores this process may use)
       arriving with the CPU-offload issue:
         - SIMD multi-threaded CPU Adam / AdamW (AVX-512 / AVX2 / scalar,
           chosen at run time from zero_cpu_simd_level) and its thread pool
         - the pinned staging pipeline between GPU and CPU
         - NVMe swapping of optimizer state with plain POSIX I/O

   Do this:
       #define ZERO_IMPLEMENTATION
   before you include zero.h *and* this file in *one* C or C++ file:

       #define ZERO_IMPLEMENTATION
       #include "zero.h"
       #include "zero_offload.h"

   Every other file includes both headers without the define.

   Minimal use:

       zero_cpu_features f = zero_cpu_detect();
       zero_simd_level simd = zero_cpu_simd_level(&f);
       int threads = zero_cpu_threads(0, &cfg.log);   (0: not set by the program)
       printf("CPU optimizer: %s, %d threads\n", zero_simd_level_name(simd), threads);

   Compile-time options (define before the #include that has
   ZERO_IMPLEMENTATION, unless said otherwise):
       ZERO_STATIC, ZERO_ASSERT, ZERO_MALLOC / ZERO_FREE
                            as in zero.h (ZERO_STATIC wherever it is included)
       ZERO_CPU_THREADS_MAX the largest thread count ZERO_CPU_THREADS may ask
                            for; larger values are ignored with a warning
                            (default 4096)

   Environment (read on every call, so a program or test may change it):
       ZERO_NO_SIMD=1       zero_cpu_simd_level answers ZERO_SIMD_SCALAR (any
                            non-empty value but "0"), to rule SIMD code out
                            when a result looks wrong
       ZERO_CPU_THREADS=N   the CPU optimizer's thread count when the program
                            sets none; not a whole number in
                            [1, ZERO_CPU_THREADS_MAX]: ignored, with a warning

   Platforms. Feature detection uses CPUID on x86-64 (GCC, Clang, nvcc's host
   compiler, MSVC); elsewhere every feature reads 0 and the CPU optimizer
   runs its scalar code. Logical cores are the CPUs this process may run on:
   on Linux its affinity mask (sched_getaffinity where <sched.h> declares it,
   which needs _GNU_SOURCE in C, else /proc/self/status), so `taskset -c 0-3`
   gives 4; elsewhere sysconf(_SC_NPROCESSORS_ONLN); 1 when neither is known.
   A cgroup CPU quota (docker --cpus) does not show in either: set
   ZERO_CPU_THREADS there.

   License: MIT, at the end of this file.
*/
#ifndef ZERO_H
#error "zero_offload.h: include zero.h before zero_offload.h"
#endif

#ifndef ZERO_OFFLOAD_H
#define ZERO_OFFLOAD_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPU features ------------------------------------------------------ */

/* 1 where the CPU has the feature *and* the operating system saves its
   registers (the AVX and AVX-512 ones need both), else 0. All 0 on CPUs
   other than x86-64. An implied feature is never reported without its base:
   avx2, fma and f16c imply avx; avx512bw, avx512vl and avx512_bf16 imply
   avx512f. */
typedef struct zero_cpu_features {
    int sse2, avx, avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512_bf16;
    int logical_cores; /* CPUs this process may run on, >= 1 (see the top comment) */
} zero_cpu_features;

/* Asks the CPU (CPUID, XGETBV) and the OS; cheap enough to call per use. */
ZERO_API zero_cpu_features zero_cpu_detect(void);

/* The instruction sets the CPU optimizer has code for, best last. */
typedef enum zero_simd_level {
    ZERO_SIMD_SCALAR,  /* plain C */
    ZERO_SIMD_AVX2,    /* needs avx2, fma and f16c */
    ZERO_SIMD_AVX512,  /* needs avx512f, avx512bw and avx512vl */
    ZERO_SIMD_COUNT
} zero_simd_level;

/* The best level f allows (f NULL: this machine, zero_cpu_detect()), or
   ZERO_SIMD_SCALAR when the environment variable ZERO_NO_SIMD is set to a
   non-empty value other than "0". */
ZERO_API zero_simd_level zero_cpu_simd_level(const zero_cpu_features *f);

/* "scalar", "avx2", "avx512"; "unknown" outside the enum. */
ZERO_API const char *zero_simd_level_name(zero_simd_level l);

/* ---- CPU optimizer threads ----------------------------------------------- */

/* The CPU optimizer's thread count: `configured` when > 0 (the program's
   setting), else ZERO_CPU_THREADS from the environment when it is a whole
   number in [1, ZERO_CPU_THREADS_MAX], else the logical cores (>= 1). An
   invalid ZERO_CPU_THREADS ("abc", "0", "-3", "4x") is ignored with a
   ZERO_MSG_ENV_INVALID warning to `log` (NULL: zero_log_default; pass
   &cfg.log to follow the config's logger); an empty one counts as unset. */
ZERO_API int zero_cpu_threads(int configured, const zero_logger *log);

#ifdef __cplusplus
}
#endif

#endif /* ZERO_OFFLOAD_H */

/* ======================================================================= */
/*                            IMPLEMENTATION                               */
/* ======================================================================= */
#ifdef ZERO_IMPLEMENTATION
#ifndef ZERO__OFFLOAD_IMPLEMENTED
#define ZERO__OFFLOAD_IMPLEMENTED

#ifndef ZERO__IMPLEMENTED
#error "zero_offload.h: define ZERO_IMPLEMENTATION before including zero.h, not only before zero_offload.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#  include <unistd.h>
#endif
#ifdef __linux__
#  include <sched.h>
#endif

#if defined(__x86_64__) || defined(_M_X64)
#  if defined(__GNUC__) || defined(__clang__)
#    include <cpuid.h>
#    define ZERO__CPUID_GNU 1
#  elif defined(_MSC_VER)
#    include <intrin.h>
#    define ZERO__CPUID_MSVC 1
#  endif
#endif

#ifndef ZERO_CPU_THREADS_MAX
#  define ZERO_CPU_THREADS_MAX 4096
#endif

/* ---- CPUID ---- */

#if defined(ZERO__CPUID_GNU) || defined(ZERO__CPUID_MSVC)
/* r = {eax, ebx, ecx, edx} of CPUID(leaf, sub); 0 when the CPU has no such leaf. */
static int zero__cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
#ifdef ZERO__CPUID_GNU
    return __get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3]);
#else
    int v[4];
    __cpuid(v, (int)(leaf & 0x80000000u));
    if ((unsigned)v[0] < leaf) return 0;
    __cpuidex(v, (int)leaf, (int)sub);
    r[0] = (unsigned)v[0], r[1] = (unsigned)v[1], r[2] = (unsigned)v[2], r[3] = (unsigned)v[3];
    return 1;
#endif
}

/* XCR0: which register states the OS saves on a context switch. Only valid
   when CPUID.1:ECX.OSXSAVE is set. Inline asm rather than _xgetbv, which
   GCC offers only when compiling with -mxsave. */
static unsigned long long zero__xgetbv0(void) {
#ifdef ZERO__CPUID_GNU
    unsigned lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    return ((unsigned long long)hi << 32) | lo;
#else
    return (unsigned long long)_xgetbv(0);
#endif
}
#endif

/* ---- logical cores ---- */

#ifdef __linux__
/* CPUs in a Linux cpu list such as "0-3,8-11" (Cpus_allowed_list), up to the
   end of the line; leading blanks skipped. 0 for an empty list, -1 when
   malformed. */
static int zero__cpu_list_count(const char *s) {
    long total = 0;
    while (*s == ' ' || *s == '\t') s++;
    if (*s == 0 || *s == '\n') return 0;
    for (;;) {
        long a, b;
        char *end;
        if (!isdigit((unsigned char)*s)) return -1;
        a = b = strtol(s, &end, 10);
        s = end;
        if (*s == '-') {
            s++;
            if (!isdigit((unsigned char)*s)) return -1;
            b = strtol(s, &end, 10);
            s = end;
        }
        if (b < a || b > (1L << 24)) return -1; /* also catches strtol's LONG_MAX */
        total += b - a + 1;
        if (total > (1L << 24)) return -1;
        if (*s != ',') break;
        s++;
    }
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    return (*s == 0 || *s == '\n') ? (int)total : -1;
}

/* The affinity mask's size from /proc/self/status; 0 when unknown. Works
   whatever feature macros the C file was compiled with. */
static int zero__proc_cpus_allowed(void) {
    enum { cap = 1 << 16 };
    static const char key[] = "\nCpus_allowed_list:";
    FILE *fp = fopen("/proc/self/status", "r");
    char *buf;
    const char *p;
    size_t n;
    int count;
    if (!fp) return 0;
    buf = (char *)ZERO_MALLOC(cap);
    if (!buf) {
        fclose(fp);
        return 0;
    }
    n = fread(buf, 1, cap - 1, fp);
    fclose(fp);
    buf[n] = 0;
    p = strstr(buf, key);
    count = p ? zero__cpu_list_count(p + sizeof key - 1) : -1;
    ZERO_FREE(buf);
    return count > 0 ? count : 0;
}
#endif

/* The CPUs this process may run on; 0 when the platform does not say. */
static int zero__affinity_cpus(void) {
#if defined(__linux__) && defined(CPU_ALLOC) && defined(CPU_COUNT_S)
    /* Grow the set until the kernel's CPU count fits (EINVAL: too small). */
    int ncpu;
    for (ncpu = 1024; ncpu <= (1 << 20); ncpu *= 2) {
        size_t size = CPU_ALLOC_SIZE(ncpu);
        cpu_set_t *set = CPU_ALLOC(ncpu);
        int rc, e, count = 0;
        if (!set) break;
        CPU_ZERO_S(size, set);
        rc = sched_getaffinity(0, size, set);
        e = errno;
        if (rc == 0) count = CPU_COUNT_S(size, set);
        CPU_FREE(set);
        if (rc == 0 && count > 0) return count;
        if (rc == 0 || e != EINVAL) break;
    }
#endif
#ifdef __linux__
    return zero__proc_cpus_allowed();
#else
    return 0;
#endif
}

static int zero__logical_cores(void) {
    int n = zero__affinity_cpus();
#if defined(_SC_NPROCESSORS_ONLN)
    if (n <= 0) {
        long s = sysconf(_SC_NPROCESSORS_ONLN);
        if (s > 0 && s < INT_MAX) n = (int)s;
    }
#endif
    return n > 0 ? n : 1;
}

/* ---- public: features, SIMD level, threads ---- */

ZERO__DEF zero_cpu_features zero_cpu_detect(void) {
    zero_cpu_features f;
    memset(&f, 0, sizeof f);
#if defined(ZERO__CPUID_GNU) || defined(ZERO__CPUID_MSVC)
    {
        unsigned r1[4] = {0, 0, 0, 0}, r7[4] = {0, 0, 0, 0}, r71[4] = {0, 0, 0, 0};
        int os_avx = 0, os_avx512 = 0;
        if (zero__cpuid(1, 0, r1)) {
            f.sse2 = (int)((r1[3] >> 26) & 1);
            if ((r1[2] >> 27) & 1) { /* OSXSAVE: XGETBV may be used */
                unsigned long long xcr0 = zero__xgetbv0();
                os_avx = (xcr0 & 0x6) == 0x6;                   /* SSE, AVX state */
                os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;    /* opmask, ZMM0-15 hi, ZMM16-31 */
            }
            if (os_avx && ((r1[2] >> 28) & 1)) {
                f.avx = 1;
                f.fma = (int)((r1[2] >> 12) & 1);
                f.f16c = (int)((r1[2] >> 29) & 1);
            }
        }
        if (f.avx && zero__cpuid(7, 0, r7)) {
            f.avx2 = (int)((r7[1] >> 5) & 1);
            if (os_avx512 && ((r7[1] >> 16) & 1)) {
                f.avx512f = 1;
                f.avx512bw = (int)((r7[1] >> 30) & 1);
                f.avx512vl = (int)((r7[1] >> 31) & 1);
                /* leaf 7 subleaf 1 exists when subleaf 0's EAX says so */
                if (r7[0] >= 1 && zero__cpuid(7, 1, r71)) f.avx512_bf16 = (int)((r71[0] >> 5) & 1);
            }
        }
    }
#endif
    f.logical_cores = zero__logical_cores();
    return f;
}

ZERO__DEF zero_simd_level zero_cpu_simd_level(const zero_cpu_features *f) {
    zero_cpu_features here;
    const char *off = getenv("ZERO_NO_SIMD");
    if (off && off[0] && strcmp(off, "0") != 0) return ZERO_SIMD_SCALAR;
    if (!f) {
        here = zero_cpu_detect();
        f = &here;
    }
    if (f->avx512f && f->avx512bw && f->avx512vl) return ZERO_SIMD_AVX512;
    if (f->avx2 && f->fma && f->f16c) return ZERO_SIMD_AVX2;
    return ZERO_SIMD_SCALAR;
}

ZERO__DEF const char *zero_simd_level_name(zero_simd_level l) {
    switch (l) {
    case ZERO_SIMD_SCALAR: return "scalar";
    case ZERO_SIMD_AVX2: return "avx2";
    case ZERO_SIMD_AVX512: return "avx512";
    default: return "unknown";
    }
}

ZERO__DEF int zero_cpu_threads(int configured, const zero_logger *lg) {
    const char *v;
    int cores;
    if (configured > 0) return configured;
    v = getenv("ZERO_CPU_THREADS");
    if (v && v[0]) {
        long n = -1;
        if (isdigit((unsigned char)v[0])) {
            char *end;
            errno = 0;
            n = strtol(v, &end, 10);
            if (*end != 0 || errno != 0) n = -1;
        }
        if (n >= 1 && n <= ZERO_CPU_THREADS_MAX) return (int)n;
        cores = zero__logical_cores();
        zero__log(lg, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID,
                  "ZERO_CPU_THREADS=\"%s\" ignored: not a whole number in [1, %d]; "
                  "using %d threads (the logical cores this process may run on)",
                  v, ZERO_CPU_THREADS_MAX, cores);
        return cores;
    }
    return zero__logical_cores();
}

#endif /* ZERO__OFFLOAD_IMPLEMENTED */
#endif /* ZERO_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the zero authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
