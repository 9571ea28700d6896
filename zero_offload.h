/* zero_offload.h - the CPU side of zero's offload, for C and CUDA training loops.

   Companion of zero.h: include zero.h first (this file #errors otherwise).
   Plain C11, also valid C++; no CUDA. It holds what zero does on the host
   CPU when optimizer state or parameters are offloaded (DeepSpeed's
   zero_optimization.offload_optimizer / offload_param):

       - CPU feature detection (CPUID + the OS's XSAVE state) and the SIMD
         level the CPU optimizer runs at (AVX-512, AVX2 or scalar)
       - the size of the CPU optimizer's thread pool (program setting,
         ZERO_CPU_THREADS, or the logical cores this process may use, split
         between the ranks the launcher puts on this host)
       - a thread pool (zero_cpu_pool_*) and DeepSpeed's CPU Adam / AdamW in
         one pass over memory (zero_cpu_adam): AVX-512, AVX2+FMA+F16C or
         scalar, chosen at run time; zero_offload_backend puts it behind the
         engine for offload_optimizer "cpu"
       - an NVMe tile store (zero_nvme_*): tiles in files with plain POSIX I/O
         (O_DIRECT where the file system allows), checksummed headers so a
         torn write or a file changed underneath is an error, an I/O thread
         for read-ahead and write-behind, and the bandwidth the store
         achieves in a directory (zero_nvme_bandwidth)
       offload_optimizer "nvme" and offload_param "nvme" in the engine go
       through zero_offload_backend's tile-store hooks, on host ranks and on
       GPUs (docs/offload.md)

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

       offload_optimizer "cpu" with the SIMD CPU Adam, one pool per rank:
           zero_cpu_pool *pool;
           zero_backend ob;
           zero_cpu_pool_create(&pool, 0, &cfg.log, &err);     (0: the default size)
           zero_offload_backend(backend, pool, &ob);
           zero_engine_create(&e, &cfg, tensors, n, &ob, &err);

   Compile-time options (define before the #include that has
   ZERO_IMPLEMENTATION, unless said otherwise):
       ZERO_STATIC, ZERO_ASSERT, ZERO_MALLOC / ZERO_REALLOC / ZERO_FREE
                            as in zero.h (ZERO_STATIC wherever it is included)
       ZERO_CPU_THREADS_MAX the largest thread count ZERO_CPU_THREADS may ask
                            for; larger values are ignored with a warning
                            (default 4096)
       ZERO_CPU_NT_MIN      zero_cpu_adam calls over at least this many
                            elements (all segments together) write master,
                            m, v and the parameter copy with non-temporal
                            (streaming) stores on the AVX-512 and AVX2 paths:
                            no read-for-ownership of the lines they overwrite,
                            at the price of the results not being in the
                            cache afterwards; smaller calls use ordinary
                            stores. Results are the same bits either way.
                            Default INT64_MAX (never): on the 16-core Xeon
                            where it was measured (docs/PERF.md) streaming
                            stores were no faster than ordinary ones with
                            software prefetch; try 2^24 where a CPU pays for
                            read-for-ownership (0: every call)
       ZERO_NVME_ALIGN      alignment of every NVMe I/O (offsets, lengths,
                            buffers) in bytes (default 4096)
       ZERO_NVME_MAX_TILES  tiles per NVMe store (default 2^24)
       ZERO_NVME_TEST_HOOKS tests only: lets a test inject EINVAL, ENOSPC and
                            short writes into the NVMe store

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

/* Map of this file; search for >>name to reach a section. The declarations
   (the API) come first, then the implementation, whose sections are in
   dependency order: each uses only zero.h and the sections above it (the
   machine, then the optimizer, then the tile store, then the backend hooks
   that put both behind the engine).

   declarations
     offload-api-cpu      zero_cpu_features, zero_cpu_detect, zero_simd_level,
                          zero_cpu_simd_level, zero_simd_level_name
     offload-api-threads  zero_cpu_threads, zero_cpu_host_ranks
     offload-api-pool     zero_cpu_pool_create, _destroy, _threads, _run
     offload-api-adam     zero_cpu_adam, zero_cpu_adam_at, zero_offload_backend,
                          zero_cpu_memory_bandwidth, _ready
     offload-api-nvme     zero_nvme_open, _close, _write, _read, _write_async,
                          _read_async, zero_nvme_wait, zero_nvme_bandwidth
   implementation (ZERO_IMPLEMENTATION)
     offload-cpuid        CPUID and XCR0: zero__cpuid, zero__xgetbv0
     offload-cores        the CPUs this process may run on: zero__logical_cores
     offload-detect       zero_cpu_detect, zero_cpu_simd_level,
                          zero_simd_level_name, zero_cpu_threads
     offload-pool         the thread pool: zero_cpu_pool_*, zero__cpu_pool_drain
     offload-adam         CPU Adam's rules (order of operations, streaming
                          stores) and its scalar path: zero__cpu_adam_scalar
     offload-simd         the AVX2 and AVX-512 paths: zero__cpu_adam_avx2, _avx512
     offload-dispatch     checks, then segments spread over the pool:
                          zero_cpu_adam_at, zero_cpu_adam, zero__cpu_adam_task
     offload-bandwidth    the host's memory bandwidth in Adam's pattern:
                          zero_cpu_memory_bandwidth, _ready, zero__bw_task
     offload-nvme         the tile store's file layout and I/O rules, O_DIRECT,
                          limits
     offload-hash         the tiles' checksum: zero__nvme_hash
     offload-tilestore    struct zero_nvme, struct zero_nvme_request,
                          zero__nvme_fail
     offload-tileio       (POSIX) the file: open with the O_DIRECT fallback,
                          whole transfers, zero__nvme_do_write, the checked
                          zero__nvme_do_read, the I/O thread, the superblock
     offload-tileapi      (POSIX) zero_nvme_open, zero_nvme_close, the request
                          queue (zero__nvme_submit), zero_nvme_wait, read, write,
                          the store's bandwidth: zero_nvme_bandwidth,
                          zero__nvme_bw_pass
     offload-noposix      without POSIX I/O: every zero_nvme_* call says so
     offload-backend      the engine's hooks (cpu_adam, tiles_*):
                          zero_offload_backend
*/
#ifndef ZERO_H
#error "zero_offload.h: include zero.h before zero_offload.h"
#endif

#ifndef ZERO_OFFLOAD_H
#define ZERO_OFFLOAD_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- >>offload-api-cpu: CPU features and the SIMD level ---- */

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

/* ---- >>offload-api-threads: CPU optimizer threads ---- */

/* The CPU optimizer's thread count: `configured` when > 0 (the program's
   setting), else ZERO_CPU_THREADS from the environment when it is a whole
   number in [1, ZERO_CPU_THREADS_MAX], else the logical cores (>= 1),
   shared: when the launcher says n ranks run on this host
   (zero_cpu_host_ranks) and this process may run on every online CPU (no
   binding gave it its own), each rank takes cores / n (>= 1), so that n
   CPU optimizers do not run n x cores threads. An invalid ZERO_CPU_THREADS
   ("abc", "0", "-3", "4x") is ignored with a ZERO_MSG_ENV_INVALID warning
   to `log` (NULL: zero_log_default; pass &cfg.log to follow the config's
   logger); an empty one counts as unset. */
ZERO_API int zero_cpu_threads(int configured, const zero_logger *log);

/* The ranks the launcher runs on this host: LOCAL_WORLD_SIZE (torchrun,
   zero_cuda_launch_local), OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI),
   MPI_LOCALNRANKS (MPICH, Intel MPI) or SLURM_NTASKS_PER_NODE, the first
   set to a whole number in [1, 65536]; 1 when none is. */
ZERO_API int zero_cpu_host_ranks(void);

/* ---- >>offload-api-pool: the CPU thread pool ---- */

typedef struct zero_cpu_pool zero_cpu_pool;

/* threads <= 0: zero_cpu_threads(0, log). The calling thread takes part in
   every run, so a pool of 1 starts no thread. */
ZERO_API zero_result zero_cpu_pool_create(zero_cpu_pool **out, int threads, const zero_logger *log,
                                          zero_error *err);
ZERO_API void zero_cpu_pool_destroy(zero_cpu_pool *pool);
ZERO_API int zero_cpu_pool_threads(const zero_cpu_pool *pool);
/* fn(arg, begin, end, thread) over [0, n) cut into pieces of about `grain`
   elements (a multiple of 64 so SIMD lanes and cache lines stay whole), spread
   over the pool; returns when all are done. pool NULL: the calling thread
   does it all. Not reentrant: one run at a time per pool. */
typedef void (*zero_cpu_task)(void *arg, int64_t begin, int64_t end, int thread);
ZERO_API zero_result zero_cpu_pool_run(zero_cpu_pool *pool, zero_cpu_task fn, void *arg, int64_t n,
                                       int64_t grain, zero_error *err);

/* ---- >>offload-api-adam: CPU Adam and the offload backend ---- */

/* DeepSpeed's CPU Adam: the per-element function of
   zero_adam_args in zero.h, over host memory, in one pass: master and
   moments stored in fp32 or bf16 (master_dtype, state_dtype; the math in
   fp32 either way), gradients in fp32 / fp16 / bf16 times grad_scale
   (unscale and clip in one factor), the compute-dtype parameters written in
   the same pass. The SIMD path is zero_cpu_simd_level's (ZERO_NO_SIMD=1: scalar);
   work is split over `pool` (NULL: the calling thread). */
ZERO_API zero_result zero_cpu_adam(const zero_adam_args *a, zero_cpu_pool *pool, zero_error *err);
/* The same on a given path (tests compare the paths): ZERO_ERR_UNSUPPORTED
   when this CPU or build lacks it. */
ZERO_API zero_result zero_cpu_adam_at(const zero_adam_args *a, zero_simd_level level, zero_cpu_pool *pool,
                                      zero_error *err);

/* The backend `base` with zero_cpu_adam over `pool` (NULL: the calling
   thread) as its cpu_adam, the gradient accumulation on the CPU over the
   same pool as its cpu_convert, and the NVMe tile store below as its tiles_*
   hooks: hand *out to zero_engine_create for offload_optimizer "cpu" or
   "nvme" with the SIMD, multi-threaded CPU Adam. *out and the pool must
   outlive the engine. */
ZERO_API void zero_offload_backend(const zero_backend *base, zero_cpu_pool *pool, zero_backend *out);

/* The host's memory bandwidth in the CPU Adam's pattern (zero_floor_of's
   bw.host, bytes/s): four fp32 arrays of n elements, one read and three read
   and written in place, one multiply-add each (28 bytes an element, the
   Adam's with a 16-bit gradient and parameter), on the SIMD path of
   zero_cpu_simd_level, in zero_cpu_adam's pieces over `pool` (NULL: the
   calling thread), with its software prefetch. One warm-up pass, then the
   median of `reps` passes (1 to 1000). n must exceed the caches to measure
   memory (the default of callers: 1 << 27, 2 GiB); the buffers come from
   ZERO_MALLOC and are freed before it returns. */
ZERO_API zero_result zero_cpu_memory_bandwidth(zero_cpu_pool *pool, int64_t n, int reps, double *bytes_per_s,
                                               zero_error *err);

/* The same, with ready(ctx, err) called once the arrays are filled, before the
   warm-up pass (NULL: none). Ranks that share a host pass a barrier there
   (examples/gpt: a one-number all-reduce), so that their passes run
   together and each measures its share of the host: filling the arrays
   takes longer than the passes, and a barrier before the call leaves the
   ranks' passes apart, each measuring the host alone. A ready that returns
   other than ZERO_OK (having filled err) ends the measurement with that
   result, *bytes_per_s 0. */
ZERO_API zero_result zero_cpu_memory_bandwidth_ready(zero_cpu_pool *pool, int64_t n, int reps,
                                                     zero_result (*ready)(void *ctx, zero_error *err), void *ctx,
                                                     double *bytes_per_s, zero_error *err);

/* ---- >>offload-api-nvme: NVMe tile store ---- */

/* Optimizer state (and stage-3 parameters) in files, one tile (a unit's
   chunk) per file region, plain POSIX I/O: O_DIRECT where the file system
   allows it, buffers aligned to the block size. Every tile carries a header
   (magic, tile id, byte count, generation, checksum of the data), so a tile
   half-written by a crash, or changed underneath, is an error on the next
   read, never silent garbage. Errors name the file and the system's reason. */
typedef struct zero_nvme zero_nvme;
typedef struct zero_nvme_request zero_nvme_request;

/* A store under `dir` (which must exist and be writable), in one file
   "<dir>/<prefix>.rank<R>.tiles"; aio: block size and queue depth from the
   config (NULL: defaults); tiles at most tile_bytes each. An open that
   fails after it created the file removes it again (a file it found stays). */
ZERO_API zero_result zero_nvme_open(zero_nvme **out, const char *dir, const char *prefix, int rank,
                                    size_t tile_bytes, const zero_aio_config *aio, zero_error *err);
/* Close; remove the files unless keep. */
ZERO_API void zero_nvme_close(zero_nvme *store, int keep);
/* Synchronous write / read of tile `tile` (bytes <= tile_bytes; buf any
   alignment: the store copies through its aligned buffers when needed). */
ZERO_API zero_result zero_nvme_write(zero_nvme *store, int64_t tile, const void *buf, size_t bytes,
                                     zero_error *err);
ZERO_API zero_result zero_nvme_read(zero_nvme *store, int64_t tile, void *buf, size_t bytes,
                                    zero_error *err);
/* Asynchronous forms (read-ahead of the next tile, write-behind of the last)
   on the store's I/O thread; buf must stay valid until zero_nvme_wait. */
ZERO_API zero_result zero_nvme_write_async(zero_nvme *store, int64_t tile, const void *buf, size_t bytes,
                                           zero_nvme_request **req, zero_error *err);
ZERO_API zero_result zero_nvme_read_async(zero_nvme *store, int64_t tile, void *buf, size_t bytes,
                                          zero_nvme_request **req, zero_error *err);
ZERO_API zero_result zero_nvme_wait(zero_nvme *store, zero_nvme_request *req, zero_error *err);

/* The file system's bandwidth under `dir` as the engine's tile store
   achieves it, in bytes/s (zero_floor_of's bw.nvme_read and nvme_write;
   ranks of a host that measure at once each get their share). A temporary
   store "<dir>/zero_bandwidth.pid<P>.<n>.rank0.tiles" (the process id and a
   count within the process: ranks of one host, processes or threads,
   measuring in one directory at once never share a file) gets `tiles`
   tiles (1 to 4096) of tile_bytes each through zero_nvme_write_async, up to
   aio->queue_depth in flight (aio NULL, or queue_depth <= 0: 8; the other
   aio settings go to zero_nvme_open), then reads them back the same way and
   compares them with what was written. Each rate is tiles x tile_bytes over
   the time from the first submission until the last zero_nvme_wait
   returned; the tile headers and the padding to ZERO_NVME_ALIGN are not
   counted, and the writes are not fsynced. The store runs its requests one
   at a time on its I/O thread, as the engine's stores do. Where the file
   system refuses O_DIRECT the store is buffered (its info line says so):
   the figures are then the page cache's, and the reads may come from
   memory, far faster than the drive. The file is removed before the call
   returns, on success and on error; the buffers (one tile per request in
   flight, and one more) are freed. Errors: NULL_ARG, BAD_ARG (tile_bytes
   outside 1 .. 2^40, tiles outside 1 .. 4096), each message naming the
   argument; the store's own (zero_nvme_open's: `dir` missing or not
   writable; the writes' and reads'), NVME_CORRUPT when a tile reads back
   different, OUT_OF_MEMORY; both rates 0 on any error. */
ZERO_API zero_result zero_nvme_bandwidth(const char *dir, size_t tile_bytes, int tiles, const zero_aio_config *aio,
                                         double *read_bytes_per_s, double *write_bytes_per_s, zero_error *err);

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
#ifndef ZERO_CPU_NT_MIN
#  define ZERO_CPU_NT_MIN INT64_MAX
#endif
/* The CPU optimizer's software prefetch distance in elements, Adam's and
   Lion's, Adagrad's and SGD's alike (private; 0: none): 256 (1 KB ahead in
   fp32, 512 bytes of a bf16 array) made the fp32 Adam 6-7.5% faster on an
   H100 host's Xeon (make bench-cpu), 4 KB ahead the same within 1-2% */
#ifndef ZERO__CPU_PREFETCH
#  define ZERO__CPU_PREFETCH 256
#endif

/* ---- >>offload-cpuid: CPUID and the OS's register state ---- */

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

/* ---- >>offload-cores: logical cores (the affinity mask) ---- */

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

/* ---- >>offload-detect: features, SIMD level, thread count ---- */

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

ZERO__DEF int zero_cpu_host_ranks(void) {
    static const char *const vars[] = {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "SLURM_NTASKS_PER_NODE"};
    size_t i;
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long n;
        if (!v || !isdigit((unsigned char)v[0])) continue;
        errno = 0;
        n = strtol(v, &end, 10);
        if (*end == 0 && errno == 0 && n >= 1 && n <= 65536) return (int)n;
    }
    return 1;
}

/* The logical cores, split between this host's ranks when this process is
   not bound to a subset of the online CPUs (zero_cpu_threads). */
static int zero__host_share_cores(void) {
    int cores = zero__logical_cores(), n = zero_cpu_host_ranks();
#if defined(_SC_NPROCESSORS_ONLN)
    if (n > 1) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        if (online > 0 && (long)cores >= online) return cores / n > 0 ? cores / n : 1;
    }
#endif
    return cores;
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
        cores = zero__host_share_cores();
        zero__log(lg, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID,
                  "ZERO_CPU_THREADS=\"%s\" ignored: not a whole number in [1, %d]; "
                  "using %d threads (the logical cores this process may run on, split between this host's ranks)",
                  v, ZERO_CPU_THREADS_MAX, cores);
        return cores;
    }
    return zero__host_share_cores();
}

/* ---- >>offload-pool: the CPU thread pool ----

   threads - 1 pthread workers; the caller is thread 0. A run publishes
   (fn, arg, n, grain) under the mutex and wakes the workers; everybody takes
   the next piece [next, next + grain) under the mutex, runs it unlocked, and
   adds its size to `done`; the caller returns once done == n. A worker that
   wakes late finds next >= n and sleeps again, so runs never mix. */

struct zero_cpu_pool {
    int threads, started;
    pthread_t *tids;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    zero_cpu_task fn;
    void *arg;
    int64_t n, grain, next, done;
    int stop;
};

typedef struct zero__cpu_worker_arg {
    zero_cpu_pool *pool;
    int index;
} zero__cpu_worker_arg;

/* Takes pieces of the current run while there are any; called and returns
   with the mutex held. */
static void zero__cpu_pool_drain(zero_cpu_pool *p, int index) {
    while (p->next < p->n) {
        int64_t b = p->next, e = p->n - b > p->grain ? b + p->grain : p->n;
        zero_cpu_task fn = p->fn;
        void *arg = p->arg;
        p->next = e;
        pthread_mutex_unlock(&p->mu);
        fn(arg, b, e, index);
        pthread_mutex_lock(&p->mu);
        p->done += e - b;
        if (p->done == p->n) pthread_cond_broadcast(&p->done_cv);
    }
}

static void *zero__cpu_pool_worker(void *varg) {
    zero__cpu_worker_arg *wa = (zero__cpu_worker_arg *)varg;
    zero_cpu_pool *p = wa->pool;
    int index = wa->index;
    ZERO_FREE(wa);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next >= p->n) pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stop) break;
        zero__cpu_pool_drain(p, index);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

ZERO__DEF void zero_cpu_pool_destroy(zero_cpu_pool *pool) {
    int i;
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->mu);
    for (i = 0; i < pool->started; i++) pthread_join(pool->tids[i], NULL);
    pthread_cond_destroy(&pool->work_cv);
    pthread_cond_destroy(&pool->done_cv);
    pthread_mutex_destroy(&pool->mu);
    ZERO_FREE(pool->tids);
    ZERO_FREE(pool);
}

ZERO__DEF zero_result zero_cpu_pool_create(zero_cpu_pool **out, int threads, const zero_logger *log,
                                           zero_error *err) {
    zero_cpu_pool *p;
    int i;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_cpu_pool_create", 0, 0, "out is NULL");
    *out = NULL;
    if (threads <= 0) threads = zero_cpu_threads(0, log);
    if (threads > ZERO_CPU_THREADS_MAX)
        return zero__fail(err, ZERO_MSG_BAD_ARG, "zero_cpu_pool_create", 0, 0,
                          "%d threads; at most ZERO_CPU_THREADS_MAX (%d)", threads, ZERO_CPU_THREADS_MAX);
    p = (zero_cpu_pool *)ZERO_MALLOC(sizeof *p);
    if (!p) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, "zero_cpu_pool_create", 0, 0, "the pool");
    memset(p, 0, sizeof *p);
    p->threads = threads;
    p->tids = (pthread_t *)ZERO_MALLOC(sizeof(pthread_t) * (size_t)threads);
    if (!p->tids) {
        ZERO_FREE(p);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, "zero_cpu_pool_create", 0, 0,
                          "%d thread handles", threads);
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (i = 1; i < threads; i++) {
        int rc;
        zero__cpu_worker_arg *wa = (zero__cpu_worker_arg *)ZERO_MALLOC(sizeof *wa);
        if (!wa) {
            zero_cpu_pool_destroy(p);
            return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, "zero_cpu_pool_create", 0, 0,
                              "worker %d of %d", i, threads);
        }
        wa->pool = p;
        wa->index = i;
        rc = pthread_create(&p->tids[p->started], NULL, zero__cpu_pool_worker, wa);
        if (rc != 0) {
            ZERO_FREE(wa);
            zero_cpu_pool_destroy(p);
            return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, "zero_cpu_pool_create", 0, 0,
                              "pthread_create for worker %d of %d: %s", i, threads, strerror(rc));
        }
        p->started++;
    }
    *out = p;
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF int zero_cpu_pool_threads(const zero_cpu_pool *pool) { return pool ? pool->threads : 1; }

ZERO__DEF zero_result zero_cpu_pool_run(zero_cpu_pool *pool, zero_cpu_task fn, void *arg, int64_t n,
                                        int64_t grain, zero_error *err) {
    if (!fn) return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_cpu_pool_run", 0, 0, "fn is NULL");
    if (n < 0)
        return zero__fail(err, ZERO_MSG_BAD_ARG, "zero_cpu_pool_run", 0, 0, "n = %lld", (long long)n);
    if (grain <= 0) { /* about 4 pieces per thread, at least 4096 elements */
        int t = pool ? pool->threads : 1;
        grain = n / ((int64_t)t * 4);
        if (grain < 4096) grain = 4096;
    }
    if (grain > (INT64_MAX >> 2)) grain = INT64_MAX >> 2;
    grain = (grain + 63) / 64 * 64;
    if (!pool || pool->threads <= 1 || n <= grain) {
        int64_t b;
        for (b = 0; b < n; b += grain) fn(arg, b, n - b > grain ? b + grain : n, 0);
    } else {
        pthread_mutex_lock(&pool->mu);
        pool->fn = fn;
        pool->arg = arg;
        pool->grain = grain;
        pool->next = 0;
        pool->done = 0;
        pool->n = n;
        pthread_cond_broadcast(&pool->work_cv);
        zero__cpu_pool_drain(pool, 0);
        while (pool->done < pool->n) pthread_cond_wait(&pool->done_cv, &pool->mu);
        pool->fn = NULL;
        pool->arg = NULL;
        pool->n = pool->next = pool->done = 0;
        pthread_mutex_unlock(&pool->mu);
    }
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>offload-adam: CPU Adam's rules and its scalar path ----

   Every path computes each element on its own (no reductions), so results do
   not depend on the thread count or on where pieces start. The SIMD paths
   handle a partial vector (a piece's tail; with streaming stores also the
   head before master's first aligned line) by copying it into a padded
   buffer and running the same vector code on it, so an element's result does
   not depend on its position, nor on the kind of store, either.

   Calls over ZERO_CPU_NT_MIN elements or more (none by default) store with
   non-temporal (streaming) stores: an ordinary store to a line not in the
   cache may read the line from memory first (read-for-ownership), so a call
   far larger than the caches can move 40 bytes per element for the 28 it
   reads and writes (fp32 gradient, no parameter copy); streaming stores
   write whole lines without reading them. Small calls keep ordinary stores,
   which leave the results in the cache for whoever reads them next.

   scalar: zero__host_adam's expressions, element for element (bitwise equal to
           the host backend as long as both are compiled alike; with clang and
           an FMA-enabled -march both contract alike).
   avx2 / avx512: the same order of operations with FMA where DeepSpeed's
           Step_8 uses it: m = fma(g, 1-b1, m*b1), v = fma(g*g, 1-b2, v*b2),
           d = fma(sqrt(v), bc2, eps), p = fma(-lr*wd, p, p), p = fma(m/d, step, p),
           and g = fma(p, wd, g) for L2 decay. Each FMA rounds once where the
           scalar path rounds twice: a few fp32 ulp apart per step
           (test_cpu_adam allows 4 ulp of the magnitude of master's, m's and
           v's terms after one step; a 16-bit parameter is exactly its own
           path's master rounded). fp16 parameters round with F16C / AVX-512
           vcvtps2ph to nearest even, bf16 ones to nearest even by integer
           bias with NaN kept quiet, exactly as zero_f32_to_bf16.
   Storage (zero_adam_args' master_dtype and state_dtype, fp32 or bf16): every
   path loads master, m and v widened to fp32, runs the fp32 math above, and
   stores each rounded to its storage (bf16: the same integer rounding, which
   keeps denormals), so a path's bf16 state is its own fp32 result rounded and
   the rules other than Adam stay bitwise the scalar path. The SIMD paths run
   one loop per pair of storage dtypes, chosen once a piece, so fp32 storage
   tests no dtype per vector; a bf16 array streams where its vectors (32
   bytes on AVX-512, 16 on AVX2) are aligned. */

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#  define ZERO__CPU_SIMD_X86 1
#  include <immintrin.h>
#endif

typedef struct zero__cpu_adam_ctx {
    const zero_adam_args *a;
    const int64_t *prefix; /* prefix[k]: elements of segments before k (flattened index) */
    int store;             /* write param */
    int nt;                /* streaming stores (the call covers >= ZERO_CPU_NT_MIN elements) */
    zero_simd_level level;
} zero__cpu_adam_ctx;

/* One piece [i0, i1) of segment sg, scalar: zero.h's definition itself. */
static void zero__cpu_adam_scalar(const zero_adam_args *a, const zero_adam_seg *sg, int store,
                                  size_t i0, size_t i1) {
    zero__adam_range(a, sg, store, i0, i1);
}

/* ---- >>offload-simd: the AVX2 and AVX-512 paths ---- */

#ifdef ZERO__CPU_SIMD_X86
/* GCC (12, C++ at -O2) reports its own intrinsics' undefined-vector idiom
   (`__m512 __Y = __Y;`) as maybe-uninitialized once they are inlined here;
   the warning is about the compiler's headers, not this code */
#  if defined(__GNUC__) && !defined(__clang__)
#    pragma GCC diagnostic push
#    pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#    pragma GCC diagnostic ignored "-Wuninitialized"
#  endif
#  define ZERO__TARGET_AVX2 __attribute__((target("avx,avx2,fma,f16c")))
#  define ZERO__TARGET_AVX512 __attribute__((target("avx,avx2,fma,f16c,avx512f,avx512bw,avx512vl")))
/* Inlined whatever the optimisation level: the loops below take master's and
   the state's storage dtypes as constants from their callers, one call per
   pair, and need the loads and stores inlined for each pair to get its own
   loop with no test of the storage per vector. */
#  define ZERO__SIMD_INLINE inline __attribute__((always_inline))

/* A whole vector (8 / 16 lanes) of a buffer in dtype dt as fp32: the
   gradient, and master, m and v in their storage (fp32 or bf16: zero-extended
   and shifted left 16, exact); and a vector stored in dt (stream: a
   streaming store to memory aligned to the vector's bytes): fp16 rounds with
   F16C / vcvtps2ph to nearest even, bf16 to nearest even by integer bias with
   NaN kept quiet and denormals kept, exactly as zero_f32_to_bf16 (not
   AVX512-BF16's vcvtneps2bf16, which flushes denormals). */
static ZERO__SIMD_INLINE ZERO__TARGET_AVX2 __m256 zero__ld8(const unsigned char *src, zero_dtype dt) {
    if (dt == ZERO_DTYPE_FP16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)src));
    if (dt == ZERO_DTYPE_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)src)), 16));
    return _mm256_loadu_ps((const float *)src);
}
static ZERO__SIMD_INLINE ZERO__TARGET_AVX2 void zero__st8(unsigned char *dst, zero_dtype dt, __m256 p, int stream) {
    if (dt == ZERO_DTYPE_FP32) {
        if (stream) _mm256_stream_ps((float *)dst, p);
        else _mm256_storeu_ps((float *)dst, p);
    } else if (dt == ZERO_DTYPE_FP16) {
        __m128i h = _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT);
        if (stream) _mm_stream_si128((__m128i *)dst, h);
        else _mm_storeu_si128((__m128i *)dst, h);
    } else {
        __m256i u = _mm256_castps_si256(p), r, nan;
        r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(_mm256_srli_epi32(u, 16),
                                                                                              _mm256_set1_epi32(1))));
        r = _mm256_srli_epi32(r, 16);
        nan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
        r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x0040)), nan);
        r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
        if (stream) _mm_stream_si128((__m128i *)dst, _mm256_castsi256_si128(r));
        else _mm_storeu_si128((__m128i *)dst, _mm256_castsi256_si128(r));
    }
}
static ZERO__SIMD_INLINE ZERO__TARGET_AVX512 __m512 zero__ld16(const unsigned char *src, zero_dtype dt) {
    if (dt == ZERO_DTYPE_FP16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)src));
    if (dt == ZERO_DTYPE_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)src)), 16));
    return _mm512_loadu_ps((const float *)src);
}
static ZERO__SIMD_INLINE ZERO__TARGET_AVX512 void zero__st16(unsigned char *dst, zero_dtype dt, __m512 p, int stream) {
    if (dt == ZERO_DTYPE_FP32) {
        if (stream) _mm512_stream_ps((float *)dst, p);
        else _mm512_storeu_ps((float *)dst, p);
    } else if (dt == ZERO_DTYPE_FP16) {
        __m256i h = _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT);
        if (stream) _mm256_stream_si256((__m256i *)dst, h);
        else _mm256_storeu_si256((__m256i *)dst, h);
    } else {
        __m512i u = _mm512_castps_si512(p), r;
        __mmask16 nan = _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q);
        r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(_mm512_srli_epi32(u, 16),
                                                                                              _mm512_set1_epi32(1))));
        r = _mm512_srli_epi32(r, 16);
        r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x0040)));
        if (stream) _mm256_stream_si256((__m256i *)dst, _mm512_cvtepi32_epi16(r));
        else _mm256_storeu_si256((__m256i *)dst, _mm512_cvtepi32_epi16(r));
    }
}

/* The storage dtype of master (mbf) or of m and v (sbf): bf16 when set, else fp32. */
#  define ZERO__STORE_DT(bf) ((bf) ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32)

/* Adam on one piece, 8 lanes (AVX2 + FMA + F16C); master stored in bf16 when
   mbf, m and v when sbf, else fp32 (constants from zero__cpu_adam_avx2). nt:
   streaming stores, as zero__adam16 says. */
static ZERO__SIMD_INLINE ZERO__TARGET_AVX2 void zero__adam8(const zero_adam_args *a, const zero_adam_seg *sg, int store,
                                                            int nt, size_t i0, size_t i1, int mbf, int sbf) {
    const float wd = sg->weight_decay;
    const int l2 = !a->adamw && wd != 0.0f, decoupled = a->adamw && wd != 0.0f;
    const __m256 b1 = _mm256_set1_ps(a->beta1), b2 = _mm256_set1_ps(a->beta2);
    const __m256 omb1 = _mm256_set1_ps(1.0f - a->beta1), omb2 = _mm256_set1_ps(1.0f - a->beta2);
    const __m256 vwd = _mm256_set1_ps(wd), step = _mm256_set1_ps(-sg->lr / a->bc1);
    const __m256 decay = _mm256_set1_ps(-sg->lr * wd), bc2 = _mm256_set1_ps(a->bc2);
    const __m256 eps = _mm256_set1_ps(a->eps), scale = _mm256_set1_ps(a->grad_scale);
    const zero_dtype gdt = a->grad_dtype, pdt = a->param_dtype, mdt = ZERO__STORE_DT(mbf), sdt = ZERO__STORE_DT(sbf);
    const size_t gsz = zero_dtype_size(gdt), psz = zero_dtype_size(pdt), msz = mbf ? 2 : 4, ssz = sbf ? 2 : 4;
    unsigned char *const mas = (unsigned char *)a->master, *const mom = (unsigned char *)a->m;
    unsigned char *const var = (unsigned char *)a->v;
    unsigned char tp[32], tm[32], tv[32], tq[32];
    float tg[8];
    size_t i, k, body = i0;
    int st_m = 0, st_v = 0, st_q = 0;
    if (nt) { /* see zero__adam16 */
        body = i0 + (size_t)((8 * msz - ((uintptr_t)(mas + i0 * msz) & (8 * msz - 1))) & (8 * msz - 1)) / msz;
        if (body > i1) body = i1;
        st_m = ((uintptr_t)(mom + body * ssz) & (8 * ssz - 1)) == 0;
        st_v = ((uintptr_t)(var + body * ssz) & (8 * ssz - 1)) == 0;
        st_q = store && ((uintptr_t)((unsigned char *)a->param + body * psz) & (8 * psz - 1)) == 0;
    }
    for (i = i0; i < i1; i += k) {
        unsigned char *pp = mas + i * msz, *pm = mom + i * ssz, *pv = var + i * ssz;
        const unsigned char *pg = (const unsigned char *)a->grad + i * gsz;
        unsigned char *pq = store ? (unsigned char *)a->param + i * psz : NULL;
        __m256 p, m, v, g, d;
        size_t j;
        k = i < body ? body - i : i1 - i < 8 ? i1 - i : 8;
        if (ZERO__CPU_PREFETCH) { /* see zero__adam16 */
            _mm_prefetch((const char *)(pp + ZERO__CPU_PREFETCH * msz), _MM_HINT_T0);
            _mm_prefetch((const char *)(pm + ZERO__CPU_PREFETCH * ssz), _MM_HINT_T0);
            _mm_prefetch((const char *)(pv + ZERO__CPU_PREFETCH * ssz), _MM_HINT_T0);
            _mm_prefetch((const char *)(pg + ZERO__CPU_PREFETCH * gsz), _MM_HINT_T0);
        }
        if (k < 8) { /* a partial vector (the head before the body, the tail): through padded buffers, master, m
                        and v in their storage dtype, the gradient as fp32 */
            memset(tp, 0, sizeof tp), memset(tm, 0, sizeof tm), memset(tv, 0, sizeof tv);
            memset(tg, 0, sizeof tg);
            memcpy(tp, pp, k * msz), memcpy(tm, pm, k * ssz), memcpy(tv, pv, k * ssz);
            for (j = 0; j < k; j++) tg[j] = zero__host_get(a->grad, gdt, i + j);
            pp = tp, pm = tm, pv = tv, pg = (const unsigned char *)tg;
        }
        p = zero__ld8(pp, mdt);
        m = zero__ld8(pm, sdt);
        v = zero__ld8(pv, sdt);
        g = k < 8 ? _mm256_loadu_ps((const float *)pg) : zero__ld8(pg, gdt);
        g = _mm256_mul_ps(g, scale);
        if (l2) g = _mm256_fmadd_ps(p, vwd, g);
        m = _mm256_fmadd_ps(g, omb1, _mm256_mul_ps(m, b1));
        v = _mm256_fmadd_ps(_mm256_mul_ps(g, g), omb2, _mm256_mul_ps(v, b2));
        d = _mm256_fmadd_ps(_mm256_sqrt_ps(v), bc2, eps);
        if (decoupled) p = _mm256_fmadd_ps(decay, p, p);
        p = _mm256_fmadd_ps(_mm256_div_ps(m, d), step, p);
        if (nt && k == 8) {
            zero__st8(pp, mdt, p, 1);
            zero__st8(pm, sdt, m, st_m);
            zero__st8(pv, sdt, v, st_v);
        } else {
            zero__st8(pp, mdt, p, 0);
            zero__st8(pm, sdt, m, 0);
            zero__st8(pv, sdt, v, 0);
        }
        if (store) {
            zero__st8(k < 8 ? tq : pq, pdt, p, st_q && k == 8);
            if (k < 8) memcpy(pq, tq, k * psz);
        }
        if (k < 8) {
            memcpy(mas + i * msz, tp, k * msz), memcpy(mom + i * ssz, tm, k * ssz);
            memcpy(var + i * ssz, tv, k * ssz);
        }
    }
    if (nt) _mm_sfence(); /* streaming stores are weakly ordered: drain them before the piece counts as done */
}

/* Adam on one piece, 16 lanes (AVX-512F, +BW/VL, which the level requires);
   storage as zero__adam8. nt: streaming stores. Elements before master's
   first boundary of a whole vector's bytes (64 in fp32, 32 in bf16) go
   through the padded path with ordinary stores, so from `body` on every
   master store covers an aligned vector (whole lines in fp32, half lines
   that the next store completes in bf16); m, v and the parameter copy
   stream too where they are aligned alike (else ordinary stores: separate
   buffers need not share master's alignment), and the tail is ordinary. */
static ZERO__SIMD_INLINE ZERO__TARGET_AVX512 void zero__adam16(const zero_adam_args *a, const zero_adam_seg *sg,
                                                               int store, int nt, size_t i0, size_t i1, int mbf,
                                                               int sbf) {
    const float wd = sg->weight_decay;
    const int l2 = !a->adamw && wd != 0.0f, decoupled = a->adamw && wd != 0.0f;
    const __m512 b1 = _mm512_set1_ps(a->beta1), b2 = _mm512_set1_ps(a->beta2);
    const __m512 omb1 = _mm512_set1_ps(1.0f - a->beta1), omb2 = _mm512_set1_ps(1.0f - a->beta2);
    const __m512 vwd = _mm512_set1_ps(wd), step = _mm512_set1_ps(-sg->lr / a->bc1);
    const __m512 decay = _mm512_set1_ps(-sg->lr * wd), bc2 = _mm512_set1_ps(a->bc2);
    const __m512 eps = _mm512_set1_ps(a->eps), scale = _mm512_set1_ps(a->grad_scale);
    const zero_dtype gdt = a->grad_dtype, pdt = a->param_dtype, mdt = ZERO__STORE_DT(mbf), sdt = ZERO__STORE_DT(sbf);
    const size_t gsz = zero_dtype_size(gdt), psz = zero_dtype_size(pdt), msz = mbf ? 2 : 4, ssz = sbf ? 2 : 4;
    unsigned char *const mas = (unsigned char *)a->master, *const mom = (unsigned char *)a->m;
    unsigned char *const var = (unsigned char *)a->v;
    unsigned char tp[64], tm[64], tv[64], tq[64];
    float tg[16];
    size_t i, k, body = i0;
    int st_m = 0, st_v = 0, st_q = 0;
    if (nt) {
        body = i0 + (size_t)((16 * msz - ((uintptr_t)(mas + i0 * msz) & (16 * msz - 1))) & (16 * msz - 1)) / msz;
        if (body > i1) body = i1;
        st_m = ((uintptr_t)(mom + body * ssz) & (16 * ssz - 1)) == 0;
        st_v = ((uintptr_t)(var + body * ssz) & (16 * ssz - 1)) == 0;
        st_q = store && ((uintptr_t)((unsigned char *)a->param + body * psz) & (16 * psz - 1)) == 0;
    }
    for (i = i0; i < i1; i += k) {
        unsigned char *pp = mas + i * msz, *pm = mom + i * ssz, *pv = var + i * ssz;
        const unsigned char *pg = (const unsigned char *)a->grad + i * gsz;
        unsigned char *pq = store ? (unsigned char *)a->param + i * psz : NULL;
        __m512 p, m, v, g, d;
        size_t j;
        k = i < body ? body - i : i1 - i < 16 ? i1 - i : 16;
        if (ZERO__CPU_PREFETCH) {
            /* the four read streams, ZERO__CPU_PREFETCH elements ahead (1 KB of
               fp32, 512 bytes of bf16): the hardware prefetchers alone leave
               the divide- and sqrt-bound loop short of memory requests in
               flight (6-7% slower at 1e9 fp32 elements on 16 Xeon cores). A
               prefetch past the buffer's end does not fault. */
            _mm_prefetch((const char *)(pp + ZERO__CPU_PREFETCH * msz), _MM_HINT_T0);
            _mm_prefetch((const char *)(pm + ZERO__CPU_PREFETCH * ssz), _MM_HINT_T0);
            _mm_prefetch((const char *)(pv + ZERO__CPU_PREFETCH * ssz), _MM_HINT_T0);
            _mm_prefetch((const char *)(pg + ZERO__CPU_PREFETCH * gsz), _MM_HINT_T0);
        }
        if (k < 16) {
            memset(tp, 0, sizeof tp), memset(tm, 0, sizeof tm), memset(tv, 0, sizeof tv);
            memset(tg, 0, sizeof tg);
            memcpy(tp, pp, k * msz), memcpy(tm, pm, k * ssz), memcpy(tv, pv, k * ssz);
            for (j = 0; j < k; j++) tg[j] = zero__host_get(a->grad, gdt, i + j);
            pp = tp, pm = tm, pv = tv, pg = (const unsigned char *)tg;
        }
        p = zero__ld16(pp, mdt);
        m = zero__ld16(pm, sdt);
        v = zero__ld16(pv, sdt);
        g = k < 16 ? _mm512_loadu_ps((const float *)pg) : zero__ld16(pg, gdt);
        g = _mm512_mul_ps(g, scale);
        if (l2) g = _mm512_fmadd_ps(p, vwd, g);
        m = _mm512_fmadd_ps(g, omb1, _mm512_mul_ps(m, b1));
        v = _mm512_fmadd_ps(_mm512_mul_ps(g, g), omb2, _mm512_mul_ps(v, b2));
        d = _mm512_fmadd_ps(_mm512_sqrt_ps(v), bc2, eps);
        if (decoupled) p = _mm512_fmadd_ps(decay, p, p);
        p = _mm512_fmadd_ps(_mm512_div_ps(m, d), step, p);
        if (nt && k == 16) {
            zero__st16(pp, mdt, p, 1);
            zero__st16(pm, sdt, m, st_m);
            zero__st16(pv, sdt, v, st_v);
        } else {
            zero__st16(pp, mdt, p, 0);
            zero__st16(pm, sdt, m, 0);
            zero__st16(pv, sdt, v, 0);
        }
        if (store) {
            zero__st16(k < 16 ? tq : pq, pdt, p, st_q && k == 16);
            if (k < 16) memcpy(pq, tq, k * psz);
        }
        if (k < 16) {
            memcpy(mas + i * msz, tp, k * msz), memcpy(mom + i * ssz, tm, k * ssz);
            memcpy(var + i * ssz, tv, k * ssz);
        }
    }
    if (nt) _mm_sfence(); /* streaming stores are weakly ordered: drain them before the piece counts as done */
}

/* The Adam paths: one loop per pair of storage dtypes (master, state). */
static ZERO__TARGET_AVX2 void zero__cpu_adam_avx2(const zero_adam_args *a, const zero_adam_seg *sg, int store, int nt,
                                                  size_t i0, size_t i1) {
    const int mbf = a->master_dtype == ZERO_DTYPE_BF16, sbf = a->state_dtype == ZERO_DTYPE_BF16;
    if (!mbf && !sbf) zero__adam8(a, sg, store, nt, i0, i1, 0, 0);
    else if (!sbf) zero__adam8(a, sg, store, nt, i0, i1, 1, 0);
    else if (mbf) zero__adam8(a, sg, store, nt, i0, i1, 1, 1);
    else zero__adam8(a, sg, store, nt, i0, i1, 0, 1);
}
static ZERO__TARGET_AVX512 void zero__cpu_adam_avx512(const zero_adam_args *a, const zero_adam_seg *sg, int store,
                                                      int nt, size_t i0, size_t i1) {
    const int mbf = a->master_dtype == ZERO_DTYPE_BF16, sbf = a->state_dtype == ZERO_DTYPE_BF16;
    if (!mbf && !sbf) zero__adam16(a, sg, store, nt, i0, i1, 0, 0);
    else if (!sbf) zero__adam16(a, sg, store, nt, i0, i1, 1, 0);
    else if (mbf) zero__adam16(a, sg, store, nt, i0, i1, 1, 1);
    else zero__adam16(a, sg, store, nt, i0, i1, 0, 1);
}

/* The other rules' read streams, ZERO__CPU_PREFETCH elements ahead as Adam's
   loops fetch theirs (see zero__adam16): master and the gradient always, m
   and v where zero_optimizer_state_mask says the rule keeps them (Lion m,
   Adagrad v, SGD m with momentum; one not kept may be NULL); msz and ssz
   the bytes of a master and a state element. A macro of _mm_prefetch, which
   needs no target attribute, so that the one text serves inside both
   target-attributed functions. */
#  define ZERO__OPT_PREFETCH(a, i, gsz, msz, ssz, state)                                                           \
    do {                                                                                                           \
        if (ZERO__CPU_PREFETCH) {                                                                                  \
            _mm_prefetch((const char *)(a)->master + ((i) + ZERO__CPU_PREFETCH) * (msz), _MM_HINT_T0);             \
            _mm_prefetch((const char *)(a)->grad + ((i) + ZERO__CPU_PREFETCH) * (gsz), _MM_HINT_T0);               \
            if ((state) & 1) _mm_prefetch((const char *)(a)->m + ((i) + ZERO__CPU_PREFETCH) * (ssz), _MM_HINT_T0); \
            if ((state) & 2) _mm_prefetch((const char *)(a)->v + ((i) + ZERO__CPU_PREFETCH) * (ssz), _MM_HINT_T0); \
        }                                                                                                          \
    } while (0)

/* The rules beside Adam on whole vectors, zero__opt_range's expressions
   operation for operation (FMA exactly where it calls fmaf; sqrt, division
   and the sign rounded alike; master, m and v widened from and rounded to
   their storage alike), so the same bits; the tail of fewer than a vector
   through zero__opt_range itself. Storage flags as zero__adam8's. */
static ZERO__SIMD_INLINE ZERO__TARGET_AVX2 void zero__opt8(const zero_adam_args *a, const zero_adam_seg *sg, int store,
                                                           size_t i0, size_t i1, int mbf, int sbf) {
    const float lr = sg->lr, wd = sg->weight_decay;
    const __m256 scale = _mm256_set1_ps(a->grad_scale), b1 = _mm256_set1_ps(a->beta1), b2 = _mm256_set1_ps(a->beta2);
    const __m256 omb1 = _mm256_set1_ps(1.0f - a->beta1), omb2 = _mm256_set1_ps(1.0f - a->beta2);
    const __m256 after = _mm256_set1_ps(1.0f - lr * wd), vwd = _mm256_set1_ps(wd), neglr = _mm256_set1_ps(-lr);
    const __m256 vlr = _mm256_set1_ps(lr), eps = _mm256_set1_ps(a->eps), mu = _mm256_set1_ps(a->momentum);
    const __m256 damp = _mm256_set1_ps(1.0f - a->dampening), sign = _mm256_set1_ps(-0.0f);
    const zero_dtype mdt = ZERO__STORE_DT(mbf), sdt = ZERO__STORE_DT(sbf);
    const size_t gsz = zero_dtype_size(a->grad_dtype), psz = zero_dtype_size(a->param_dtype);
    const size_t msz = mbf ? 2 : 4, ssz = sbf ? 2 : 4;
    const int state = zero_optimizer_state_mask((zero_optimizer_type)a->kind, a->momentum);
    unsigned char *const mas = (unsigned char *)a->master;
    size_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        __m256 p, g;
        ZERO__OPT_PREFETCH(a, i, gsz, msz, ssz, state);
        p = zero__ld8(mas + i * msz, mdt);
        g = _mm256_mul_ps(zero__ld8((const unsigned char *)a->grad + i * gsz, a->grad_dtype), scale);
        if (a->kind == ZERO_OPTIMIZER_LION) { /* -copysign(lr, c): c's sign bit flipped onto lr */
            unsigned char *pm = (unsigned char *)a->m + i * ssz;
            __m256 m = zero__ld8(pm, sdt), c = _mm256_fmadd_ps(g, omb1, _mm256_mul_ps(m, b1));
            __m256 u = _mm256_xor_ps(_mm256_and_ps(c, sign), neglr);
            p = wd > 0.0f ? _mm256_fmadd_ps(p, after, u) : _mm256_add_ps(p, u);
            zero__st8(pm, sdt, _mm256_fmadd_ps(g, omb2, _mm256_mul_ps(m, b2)), 0);
        } else if (a->kind == ZERO_OPTIMIZER_ADAGRAD) {
            unsigned char *pv = (unsigned char *)a->v + i * ssz;
            __m256 v;
            if (wd > 0.0f) g = _mm256_fmadd_ps(p, vwd, g);
            v = _mm256_fmadd_ps(g, g, zero__ld8(pv, sdt));
            p = _mm256_fmadd_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_sqrt_ps(v), eps)), neglr, p);
            zero__st8(pv, sdt, v, 0);
        } else {
            __m256 d = wd != 0.0f ? _mm256_add_ps(g, _mm256_mul_ps(vwd, p)) : g;
            if (a->momentum != 0.0f) {
                unsigned char *pm = (unsigned char *)a->m + i * ssz;
                __m256 m = a->first ? d : _mm256_add_ps(_mm256_mul_ps(mu, zero__ld8(pm, sdt)), _mm256_mul_ps(damp, d));
                zero__st8(pm, sdt, m, 0);
                d = a->nesterov ? _mm256_add_ps(d, _mm256_mul_ps(mu, m)) : m;
            }
            p = _mm256_sub_ps(p, _mm256_mul_ps(vlr, d));
        }
        zero__st8(mas + i * msz, mdt, p, 0);
        if (store) zero__st8((unsigned char *)a->param + i * psz, a->param_dtype, p, 0);
    }
    if (i < i1) zero__opt_range(a, sg, store, i, i1);
}

static ZERO__SIMD_INLINE ZERO__TARGET_AVX512 void zero__opt16(const zero_adam_args *a, const zero_adam_seg *sg,
                                                              int store, size_t i0, size_t i1, int mbf, int sbf) {
    const float lr = sg->lr, wd = sg->weight_decay;
    const __m512 scale = _mm512_set1_ps(a->grad_scale), b1 = _mm512_set1_ps(a->beta1), b2 = _mm512_set1_ps(a->beta2);
    const __m512 omb1 = _mm512_set1_ps(1.0f - a->beta1), omb2 = _mm512_set1_ps(1.0f - a->beta2);
    const __m512 after = _mm512_set1_ps(1.0f - lr * wd), vwd = _mm512_set1_ps(wd), neglr = _mm512_set1_ps(-lr);
    const __m512 vlr = _mm512_set1_ps(lr), eps = _mm512_set1_ps(a->eps), mu = _mm512_set1_ps(a->momentum);
    const __m512 damp = _mm512_set1_ps(1.0f - a->dampening);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    const zero_dtype mdt = ZERO__STORE_DT(mbf), sdt = ZERO__STORE_DT(sbf);
    const size_t gsz = zero_dtype_size(a->grad_dtype), psz = zero_dtype_size(a->param_dtype);
    const size_t msz = mbf ? 2 : 4, ssz = sbf ? 2 : 4;
    const int state = zero_optimizer_state_mask((zero_optimizer_type)a->kind, a->momentum);
    unsigned char *const mas = (unsigned char *)a->master;
    size_t i = i0;
    for (; i + 16 <= i1; i += 16) {
        __m512 p, g;
        ZERO__OPT_PREFETCH(a, i, gsz, msz, ssz, state);
        p = zero__ld16(mas + i * msz, mdt);
        g = _mm512_mul_ps(zero__ld16((const unsigned char *)a->grad + i * gsz, a->grad_dtype), scale);
        if (a->kind == ZERO_OPTIMIZER_LION) { /* -copysign(lr, c): c's sign bit flipped onto lr (integer ops: AVX-512F) */
            unsigned char *pm = (unsigned char *)a->m + i * ssz;
            __m512 m = zero__ld16(pm, sdt), c = _mm512_fmadd_ps(g, omb1, _mm512_mul_ps(m, b1));
            __m512 u = _mm512_castsi512_ps(
                _mm512_xor_si512(_mm512_and_si512(_mm512_castps_si512(c), sign), _mm512_castps_si512(neglr)));
            p = wd > 0.0f ? _mm512_fmadd_ps(p, after, u) : _mm512_add_ps(p, u);
            zero__st16(pm, sdt, _mm512_fmadd_ps(g, omb2, _mm512_mul_ps(m, b2)), 0);
        } else if (a->kind == ZERO_OPTIMIZER_ADAGRAD) {
            unsigned char *pv = (unsigned char *)a->v + i * ssz;
            __m512 v;
            if (wd > 0.0f) g = _mm512_fmadd_ps(p, vwd, g);
            v = _mm512_fmadd_ps(g, g, zero__ld16(pv, sdt));
            p = _mm512_fmadd_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_sqrt_ps(v), eps)), neglr, p);
            zero__st16(pv, sdt, v, 0);
        } else {
            __m512 d = wd != 0.0f ? _mm512_add_ps(g, _mm512_mul_ps(vwd, p)) : g;
            if (a->momentum != 0.0f) {
                unsigned char *pm = (unsigned char *)a->m + i * ssz;
                __m512 m = a->first ? d : _mm512_add_ps(_mm512_mul_ps(mu, zero__ld16(pm, sdt)), _mm512_mul_ps(damp, d));
                zero__st16(pm, sdt, m, 0);
                d = a->nesterov ? _mm512_add_ps(d, _mm512_mul_ps(mu, m)) : m;
            }
            p = _mm512_sub_ps(p, _mm512_mul_ps(vlr, d));
        }
        zero__st16(mas + i * msz, mdt, p, 0);
        if (store) zero__st16((unsigned char *)a->param + i * psz, a->param_dtype, p, 0);
    }
    if (i < i1) zero__opt_range(a, sg, store, i, i1);
}

/* The other rules' paths: one loop per pair of storage dtypes (master, state). */
static ZERO__TARGET_AVX2 void zero__cpu_opt_avx2(const zero_adam_args *a, const zero_adam_seg *sg, int store, size_t i0,
                                                 size_t i1) {
    const int mbf = a->master_dtype == ZERO_DTYPE_BF16, sbf = a->state_dtype == ZERO_DTYPE_BF16;
    if (!mbf && !sbf) zero__opt8(a, sg, store, i0, i1, 0, 0);
    else if (!sbf) zero__opt8(a, sg, store, i0, i1, 1, 0);
    else if (mbf) zero__opt8(a, sg, store, i0, i1, 1, 1);
    else zero__opt8(a, sg, store, i0, i1, 0, 1);
}
static ZERO__TARGET_AVX512 void zero__cpu_opt_avx512(const zero_adam_args *a, const zero_adam_seg *sg, int store,
                                                     size_t i0, size_t i1) {
    const int mbf = a->master_dtype == ZERO_DTYPE_BF16, sbf = a->state_dtype == ZERO_DTYPE_BF16;
    if (!mbf && !sbf) zero__opt16(a, sg, store, i0, i1, 0, 0);
    else if (!sbf) zero__opt16(a, sg, store, i0, i1, 1, 0);
    else if (mbf) zero__opt16(a, sg, store, i0, i1, 1, 1);
    else zero__opt16(a, sg, store, i0, i1, 0, 1);
}
#  undef ZERO__OPT_PREFETCH
#  undef ZERO__STORE_DT
#  undef ZERO__SIMD_INLINE
#  if defined(__GNUC__) && !defined(__clang__)
#    pragma GCC diagnostic pop
#  endif
#endif /* ZERO__CPU_SIMD_X86 */

/* ---- >>offload-dispatch: checks, then the segments spread over the pool ---- */

/* The pool's task: flattened elements [begin, end) over the segments. */
static void zero__cpu_adam_task(void *varg, int64_t begin, int64_t end, int thread) {
    const zero__cpu_adam_ctx *c = (const zero__cpu_adam_ctx *)varg;
    const zero_adam_args *a = c->a;
    int lo = 0, hi = a->n_segs - 1, k;
    (void)thread;
    while (lo < hi) { /* the last segment with prefix <= begin */
        int mid = lo + (hi - lo + 1) / 2;
        if (c->prefix[mid] <= begin) lo = mid;
        else hi = mid - 1;
    }
    for (k = lo; k < a->n_segs && c->prefix[k] < end; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        int64_t b = begin > c->prefix[k] ? begin : c->prefix[k];
        int64_t e = end < c->prefix[k + 1] ? end : c->prefix[k + 1];
        size_t i0, i1;
        if (b >= e) continue;
        i0 = (size_t)(sg->offset + (b - c->prefix[k]));
        i1 = (size_t)(sg->offset + (e - c->prefix[k]));
        if (a->kind == ZERO_OPTIMIZER_LAMB || a->muon_pass == 1 || sg->muon) {
            /* (their scalar definition: Lamb's sums' order is the definition's; Muon's element-wise parts are two
               plain streams) */
            zero__opt_range(a, sg, c->store, i0, i1);
            continue;
        }
        if (a->kind > ZERO_OPTIMIZER_ADAMW && a->kind != ZERO_OPTIMIZER_MUON) { /* the other rules: the same bits on
                                                                                   every path (Muon's AdamW side: Adam's) */
            switch (c->level) {
#ifdef ZERO__CPU_SIMD_X86
            case ZERO_SIMD_AVX512: zero__cpu_opt_avx512(a, sg, c->store, i0, i1); break;
            case ZERO_SIMD_AVX2: zero__cpu_opt_avx2(a, sg, c->store, i0, i1); break;
#endif
            default: zero__opt_range(a, sg, c->store, i0, i1); break;
            }
            continue;
        }
        switch (c->level) {
#ifdef ZERO__CPU_SIMD_X86
        case ZERO_SIMD_AVX512: zero__cpu_adam_avx512(a, sg, c->store, c->nt, i0, i1); break;
        case ZERO_SIMD_AVX2: zero__cpu_adam_avx2(a, sg, c->store, c->nt, i0, i1); break;
#endif
        default: zero__cpu_adam_scalar(a, sg, c->store, i0, i1); break;
        }
    }
}

static zero_result zero__cpu_unsupported(zero_error *err, zero_simd_level level) {
    zero_cpu_features f = zero_cpu_detect();
    return zero__fail(err, ZERO_MSG_CPU_SIMD_UNSUPPORTED, "zero_cpu_adam_at", 0, 0,
                      "SIMD level %s: not supported by this %s (avx2 %d, fma %d, f16c %d, avx512f %d, "
                      "avx512bw %d, avx512vl %d)",
                      zero_simd_level_name(level),
#ifdef ZERO__CPU_SIMD_X86
                      "CPU",
#else
                      "build (x86-64 with GCC or Clang only)",
#endif
                      f.avx2, f.fma, f.f16c, f.avx512f, f.avx512bw, f.avx512vl);
}

static int zero__cpu_seg_cmp(const void *x, const void *y) {
    const zero_adam_seg *s = (const zero_adam_seg *)x, *t = (const zero_adam_seg *)y;
    return s->offset < t->offset ? -1 : s->offset > t->offset ? 1 : 0;
}

static int zero__cpu_dtype_ok(zero_dtype dt) {
    return dt == ZERO_DTYPE_FP32 || dt == ZERO_DTYPE_FP16 || dt == ZERO_DTYPE_BF16;
}

ZERO__DEF zero_result zero_cpu_adam_at(const zero_adam_args *a, zero_simd_level level, zero_cpu_pool *pool,
                                       zero_error *err) {
    static const char *fname = "zero_cpu_adam_at";
    zero__cpu_adam_ctx c;
    int64_t *prefix, total = 0;
    int k, sorted = 1, mask;
    zero_result res;
    if (!a) return zero__fail(err, ZERO_MSG_NULL_ARG, fname, 0, 0, "args is NULL");
    if ((int)level < 0 || level >= ZERO_SIMD_COUNT)
        return zero__fail(err, ZERO_MSG_BAD_ARG, fname, 0, 0, "SIMD level %d is not a zero_simd_level",
                          (int)level);
    if (level != ZERO_SIMD_SCALAR) {
#ifdef ZERO__CPU_SIMD_X86
        zero_cpu_features f = zero_cpu_detect();
        if ((level == ZERO_SIMD_AVX2 && !(f.avx2 && f.fma && f.f16c)) ||
            (level == ZERO_SIMD_AVX512 && !(f.avx512f && f.avx512bw && f.avx512vl && f.fma && f.f16c)))
            return zero__cpu_unsupported(err, level);
#else
        return zero__cpu_unsupported(err, level);
#endif
    }
    if (a->n_segs < 0 || (a->n_segs > 0 && !a->segs))
        return zero__fail(err, a->n_segs < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, fname, 0, 0,
                          "%d segments at %p", a->n_segs, (const void *)a->segs);
    for (k = 0; k < a->n_segs; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        if (sg->offset < 0 || sg->count < 0 || sg->offset > INT64_MAX - sg->count ||
            (uint64_t)(sg->offset + sg->count) > (uint64_t)(SIZE_MAX / sizeof(float)))
            return zero__fail(err, ZERO_MSG_BAD_ARG, fname, 0, 0, "segment %d has offset %lld, count %lld",
                              k, (long long)sg->offset, (long long)sg->count);
        if (k > 0 && sg->count > 0 && a->segs[k - 1].count > 0 &&
            sg->offset < a->segs[k - 1].offset + a->segs[k - 1].count)
            sorted = 0;
        total += sg->count; /* each < 2^61, fewer than 2^31 of them: no overflow */
    }
    if (!zero__cpu_dtype_ok(a->grad_dtype))
        return zero__fail(err, ZERO_MSG_BAD_ARG, fname, 0, 0, "grad_dtype %d (%s) is not fp32, fp16 or bf16",
                          (int)a->grad_dtype, zero_dtype_name(a->grad_dtype));
    if (a->param && !zero__cpu_dtype_ok(a->param_dtype))
        return zero__fail(err, ZERO_MSG_BAD_ARG, fname, 0, 0, "param_dtype %d (%s) is not fp32, fp16 or bf16",
                          (int)a->param_dtype, zero_dtype_name(a->param_dtype));
    if (a->kind < 0 || a->kind >= ZERO_OPTIMIZER_COUNT)
        return zero__fail(err, ZERO_MSG_BAD_ARG, fname, 0, 0, "kind %d is not a zero_optimizer_type", a->kind);
    mask = zero_optimizer_state_mask((zero_optimizer_type)a->kind, a->momentum);
    if (total > 0 && (!a->master || ((mask & 1) && !a->m) || ((mask & 2) && !a->v) || !a->grad))
        return zero__fail(err, ZERO_MSG_NULL_ARG, fname, 0, 0,
                          "master %p, m %p, v %p, grad %p: none that %s uses may be NULL (%lld elements)",
                          (void *)a->master, (void *)a->m, (void *)a->v, a->grad,
                          zero_optimizer_name((zero_optimizer_type)a->kind), (long long)total);
    {
        char why[160];
        zero_msg item;
        if ((total > 0 || a->kind != ZERO_OPTIMIZER_LAMB) && zero__pass_misuse(a, why, sizeof why, &item))
            return zero__fail(err, item, fname, 0, 0, "%s", why);
    }
    if ((uintptr_t)a->master % zero__state_bytes(a->master_dtype) != 0 ||
        ((uintptr_t)a->m | (uintptr_t)a->v) % zero__state_bytes(a->state_dtype) != 0 ||
        (uintptr_t)a->grad % zero_dtype_size(a->grad_dtype) != 0 ||
        (a->param && (uintptr_t)a->param % zero_dtype_size(a->param_dtype) != 0))
        return zero__fail(err, ZERO_MSG_BAD_ARG, fname, 0, 0, "a buffer is not aligned to its elements");
    if (total == 0) {
        zero__ok(err);
        return ZERO_OK;
    }
    if (!sorted) { /* overlapping segments would race between threads (and update twice) */
        zero_adam_seg *s = (zero_adam_seg *)ZERO_MALLOC(sizeof *s * (size_t)a->n_segs);
        int bad = -1;
        if (!s) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, fname, 0, 0, "%d segments", a->n_segs);
        memcpy(s, a->segs, sizeof *s * (size_t)a->n_segs);
        qsort(s, (size_t)a->n_segs, sizeof *s, zero__cpu_seg_cmp);
        {
            int64_t reach = 0;
            for (k = 0; k < a->n_segs && bad < 0; k++) {
                if (s[k].count == 0) continue;
                if (s[k].offset < reach) bad = k;
                if (s[k].offset + s[k].count > reach) reach = s[k].offset + s[k].count;
            }
        }
        ZERO_FREE(s);
        if (bad >= 0)
            return zero__fail(err, ZERO_MSG_BAD_ARG, fname, 0, 0, "segments overlap");
    }
    prefix = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * ((size_t)a->n_segs + 1));
    if (!prefix) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, fname, 0, 0, "%d segments", a->n_segs);
    prefix[0] = 0;
    for (k = 0; k < a->n_segs; k++) prefix[k + 1] = prefix[k] + a->segs[k].count;
    c.a = a;
    c.prefix = prefix;
    c.store = zero__adam_stores_param(a);
    c.level = level;
    c.nt = total >= (int64_t)ZERO_CPU_NT_MIN;
    if (a->kind == ZERO_OPTIMIZER_LAMB && a->lamb_pass == 1) {
        /* one thread: each segment's sums in element order, as the host
           backend adds them (threads would race on a segment's sums) */
        zero__cpu_adam_task(&c, 0, total, 0);
        ZERO_FREE(prefix);
        zero__ok(err);
        return ZERO_OK;
    }
    /* pieces of 32K elements (~900 KB of traffic): enough to spread 2^20
       elements over 8 threads, few enough to cost nothing in locking */
    res = zero_cpu_pool_run(pool, zero__cpu_adam_task, &c, total, 32768, err);
    ZERO_FREE(prefix);
    return res;
}

ZERO__DEF zero_result zero_cpu_adam(const zero_adam_args *a, zero_cpu_pool *pool, zero_error *err) {
    if (!a) return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_cpu_adam", 0, 0, "args is NULL");
    return zero_cpu_adam_at(a, zero_cpu_simd_level(NULL), pool, err);
}

/* ---- >>offload-bandwidth: the host's memory bandwidth in the CPU Adam's pattern ----

   Each element: x = s g; a += x; b += x; c += x (g read; a, b, c read and
   written in place): Adam's streams without its arithmetic, so the time is
   the memory's. Cached stores and the 1 KB software prefetch, as
   zero_cpu_adam by default. */

typedef struct zero__bw_ctx {
    float *a, *b, *c;
    const float *g;
    zero_simd_level level;
} zero__bw_ctx;

static void zero__bw_scalar(float *a, float *b, float *c, const float *g, int64_t i, int64_t e) {
    for (; i < e; i++) {
        float x = 0.5f * g[i];
        a[i] += x;
        b[i] += x;
        c[i] += x;
    }
}

#ifdef ZERO__CPU_SIMD_X86
#  define ZERO__BW_PREFETCH(i)                                          \
    _mm_prefetch((const char *)(a + (i) + 256), _MM_HINT_T0);           \
    _mm_prefetch((const char *)(b + (i) + 256), _MM_HINT_T0);           \
    _mm_prefetch((const char *)(c + (i) + 256), _MM_HINT_T0);           \
    _mm_prefetch((const char *)(g + (i) + 256), _MM_HINT_T0)
static ZERO__TARGET_AVX512 void zero__bw_avx512(float *a, float *b, float *c, const float *g, int64_t i, int64_t e) {
    const __m512 s = _mm512_set1_ps(0.5f);
    for (; i + 16 <= e; i += 16) {
        __m512 x;
        ZERO__BW_PREFETCH(i);
        x = _mm512_mul_ps(s, _mm512_loadu_ps(g + i));
        _mm512_storeu_ps(a + i, _mm512_add_ps(_mm512_loadu_ps(a + i), x));
        _mm512_storeu_ps(b + i, _mm512_add_ps(_mm512_loadu_ps(b + i), x));
        _mm512_storeu_ps(c + i, _mm512_add_ps(_mm512_loadu_ps(c + i), x));
    }
    zero__bw_scalar(a, b, c, g, i, e);
}
static ZERO__TARGET_AVX2 void zero__bw_avx2(float *a, float *b, float *c, const float *g, int64_t i, int64_t e) {
    const __m256 s = _mm256_set1_ps(0.5f);
    for (; i + 8 <= e; i += 8) {
        __m256 x;
        ZERO__BW_PREFETCH(i);
        x = _mm256_mul_ps(s, _mm256_loadu_ps(g + i));
        _mm256_storeu_ps(a + i, _mm256_add_ps(_mm256_loadu_ps(a + i), x));
        _mm256_storeu_ps(b + i, _mm256_add_ps(_mm256_loadu_ps(b + i), x));
        _mm256_storeu_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(c + i), x));
    }
    zero__bw_scalar(a, b, c, g, i, e);
}
#  undef ZERO__BW_PREFETCH
#endif

static void zero__bw_task(void *arg, int64_t begin, int64_t end, int thread) {
    const zero__bw_ctx *x = (const zero__bw_ctx *)arg;
    (void)thread;
#ifdef ZERO__CPU_SIMD_X86
    if (x->level == ZERO_SIMD_AVX512) {
        zero__bw_avx512(x->a, x->b, x->c, x->g, begin, end);
        return;
    }
    if (x->level == ZERO_SIMD_AVX2) {
        zero__bw_avx2(x->a, x->b, x->c, x->g, begin, end);
        return;
    }
#endif
    zero__bw_scalar(x->a, x->b, x->c, x->g, begin, end);
}

static int zero__bw_cmp(const void *p, const void *q) {
    double a = *(const double *)p, b = *(const double *)q;
    return a < b ? -1 : a > b;
}

ZERO__DEF zero_result zero_cpu_memory_bandwidth(zero_cpu_pool *pool, int64_t n, int reps, double *bytes_per_s,
                                                zero_error *err) {
    return zero_cpu_memory_bandwidth_ready(pool, n, reps, NULL, NULL, bytes_per_s, err);
}

ZERO__DEF zero_result zero_cpu_memory_bandwidth_ready(zero_cpu_pool *pool, int64_t n, int reps,
                                                      zero_result (*ready)(void *ctx, zero_error *err), void *ctx,
                                                      double *bytes_per_s, zero_error *err) {
    static const char fn[] = "zero_cpu_memory_bandwidth";
    zero__bw_ctx x;
    float *buf;
    double *secs;
    int64_t i;
    int k;
    zero_result r = ZERO_OK;
    if (bytes_per_s) *bytes_per_s = 0;
    if (!bytes_per_s) return zero__fail(err, ZERO_MSG_NULL_ARG, fn, 0, 0, "bytes_per_s is NULL");
    if (n < 64 || n > ((int64_t)1 << 40) || reps < 1 || reps > 1000)
        return zero__fail(err, ZERO_MSG_BAD_ARG, fn, 0, 0, "n = %lld, reps = %d: n from 64 to 2^40, reps from 1 to 1000",
                          (long long)n, reps);
    buf = (float *)ZERO_MALLOC(sizeof(float) * 4 * (size_t)n);
    secs = (double *)ZERO_MALLOC(sizeof(double) * (size_t)reps);
    if (!buf || !secs) {
        ZERO_FREE(buf);
        ZERO_FREE(secs);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, fn, 0, 0, "4 x %lld floats (%.2f GiB)", (long long)n,
                          16.0 * (double)n / 1073741824.0);
    }
    x.a = buf;
    x.b = buf + n;
    x.c = buf + 2 * n;
    x.g = buf + 3 * n;
    x.level = zero_cpu_simd_level(NULL);
    for (i = 0; i < 4 * n; i++) buf[i] = (float)(i % 1021) * 1e-3f; /* not zeros; every page touched */
    if (ready) r = ready(ctx, err); /* (its error is its own: it fills err) */
    for (k = -1; k < reps && r == ZERO_OK; k++) {
        struct timespec t0, t1;
        timespec_get(&t0, TIME_UTC);
        r = zero_cpu_pool_run(pool, zero__bw_task, &x, n, 32768, err);
        timespec_get(&t1, TIME_UTC);
        if (k >= 0) secs[k] = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    }
    if (r == ZERO_OK) {
        qsort(secs, (size_t)reps, sizeof *secs, zero__bw_cmp);
        *bytes_per_s = secs[reps / 2] > 0 ? 28.0 * (double)n / secs[reps / 2] : 0;
        zero__ok(err);
    }
    ZERO_FREE(buf);
    ZERO_FREE(secs);
    return r;
}

/* ---- >>offload-nvme: the NVMe tile store's layout and I/O rules ----

   Layout: one file per store, "<dir>/<prefix>.rank<R>.tiles".
     offset 0                      superblock, one alignment block (4096 bytes):
                                   magic "ZERONVMS", version, tile_bytes,
                                   slot size, header checksum
     offset 4096 + tile x slot     tile `tile`: a 64-byte header, then the data,
                                   the write padded with zeros to 4096 bytes;
                                   slot = round_up(64 + tile_bytes, 4096)
   Tile header (little or native endian, 64 bytes):
     0 magic "ZERONVMT" (u64)   8 version (u32)   12 header size (u32)
     16 tile id (i64)           24 byte count (u64)
     32 generation (u64: 1 for the first write of the tile in this store's
        life, +1 each rewrite; a reopened store continues from the generation
        it last read, else restarts at 1)
     40 checksum of the data (u64)  48 reserved (u64, 0)
     56 checksum of bytes 0..55 (u64)
   The checksum is a 64-bit hash over 8-byte words (xxHash64's round and
   avalanche, 4 lanes); a tile is written with one pwrite-equivalent of header
   + data, so a torn write (crash mid-write: new header with old data, or the
   reverse) fails the data checksum on the next read: ZERO_ERR_CORRUPT naming
   the file, the tile and what differed. A reopened file (keep = 1) keeps its
   tiles; its superblock must match the tile size.

   I/O: every request (synchronous ones too: they are enqueued and waited for)
   runs on the store's one I/O thread in FIFO order, so a read after a pending
   write of the same tile sees the written data, and the file offset is used by
   that thread alone. The queue holds at most aio->queue_depth requests (more:
   the enqueuing call blocks until one finishes). aio->block_size is the
   largest single read/write system call. O_DIRECT is tried first; when open,
   or the first I/O, fails with EINVAL the file is reopened buffered (an info
   log says so).

   Strict C11 (-std=c11 without a feature macro, where glibc hides pread,
   pwrite, posix_memalign and O_DIRECT): this file uses only what every mode
   shows: open/read/write/lseek/fstat/fsync/close/unlink (<fcntl.h>,
   <unistd.h>, <sys/stat.h>), C11's aligned_alloc, and lseek + read/write in
   place of pread/pwrite, which is race-free because only the I/O thread
   touches the descriptor. O_DIRECT: the macro when visible, else glibc's
   internal __O_DIRECT (defined by <fcntl.h> in every mode with the
   architecture's value), else the Linux value of the architecture. No system
   function is redeclared, so nothing can clash with C++'s _GNU_SOURCE
   declarations. */

#if defined(__unix__) || defined(__APPLE__)
#  define ZERO__NVME_POSIX 1
#  include <fcntl.h>
#  include <sys/types.h>
#  include <sys/stat.h>
#  include <unistd.h>
#endif

#if defined(O_DIRECT)
#  define ZERO__O_DIRECT O_DIRECT
#elif defined(__O_DIRECT)
#  define ZERO__O_DIRECT __O_DIRECT
#elif defined(__linux__)
#  if defined(__aarch64__) || defined(__arm__)
#    define ZERO__O_DIRECT 0200000
#  elif defined(__powerpc__) || defined(__powerpc64__)
#    define ZERO__O_DIRECT 0400000
#  elif defined(__mips__)
#    define ZERO__O_DIRECT 0100000
#  elif defined(__sparc__)
#    define ZERO__O_DIRECT 0x100000
#  elif defined(__alpha__)
#    define ZERO__O_DIRECT 02000000
#  elif defined(__hppa__)
#    define ZERO__O_DIRECT 040000
#  else /* x86, x86-64, riscv, s390, loongarch, the asm-generic value */
#    define ZERO__O_DIRECT 040000
#  endif
#else
#  define ZERO__O_DIRECT 0 /* macOS and others: buffered */
#endif

#ifndef ZERO_NVME_MAX_TILES
#  define ZERO_NVME_MAX_TILES ((int64_t)1 << 24) /* tile ids 0 .. this - 1 */
#endif
#ifndef ZERO_NVME_ALIGN
#  define ZERO_NVME_ALIGN 4096 /* offsets, lengths and buffers of every I/O */
#endif

/* Tests only: make O_DIRECT fail with EINVAL at open (1) or at the first I/O
   (2); make writes fail with ENOSPC (3) or write nothing (4). */
#ifdef ZERO_NVME_TEST_HOOKS
static int zero__nvme_hook_einval;
#endif

#define ZERO__NVME_HDR 64
#define ZERO__NVME_VERSION 1u
#define ZERO__NVME_TILE_MAGIC 0x544d564e4f52455aull  /* "ZERONVMT" little endian */
#define ZERO__NVME_SUPER_MAGIC 0x534d564e4f52455aull /* "ZERONVMS" */

/* ---- >>offload-hash: the tiles' checksum ---- */

static uint64_t zero__nvme_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t zero__nvme_ld64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint64_t zero__nvme_round(uint64_t acc, uint64_t w) {
    acc += w * 0xC2B2AE3D27D4EB4Full;
    acc = zero__nvme_rotl(acc, 31);
    return acc * 0x9E3779B185EBCA87ull;
}
static uint64_t zero__nvme_hash(const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    const uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full;
    uint64_t a = P1 + P2, b = P2, c = 0, d = 0 - P1, h;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a = zero__nvme_round(a, zero__nvme_ld64(p + i));
        b = zero__nvme_round(b, zero__nvme_ld64(p + i + 8));
        c = zero__nvme_round(c, zero__nvme_ld64(p + i + 16));
        d = zero__nvme_round(d, zero__nvme_ld64(p + i + 24));
    }
    h = zero__nvme_rotl(a, 1) + zero__nvme_rotl(b, 7) + zero__nvme_rotl(c, 12) + zero__nvme_rotl(d, 18);
    h ^= (uint64_t)n * P1;
    for (; i + 8 <= n; i += 8) h = zero__nvme_rotl(h ^ zero__nvme_round(0, zero__nvme_ld64(p + i)), 27) * P1 + P2;
    for (; i < n; i++) h = zero__nvme_rotl(h ^ ((uint64_t)p[i] * 0x27D4EB2F165667C5ull), 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= 0x165667B19E3779F9ull;
    h ^= h >> 32;
    return h;
}

/* ---- >>offload-tilestore: the store and its requests ---- */

struct zero_nvme_request {
    zero_nvme_request *next;             /* queue */
    zero_nvme_request *all_prev, *all_next; /* every request not yet waited for */
    zero_nvme *store;
    int write, done;
    int64_t tile;
    const void *src;
    void *dst;
    size_t bytes;
    zero_result rc;
    zero_error err;
};

struct zero_nvme {
    char *path;
    int fd, direct, rank;
    size_t tile_bytes, slot;
    size_t chunk; /* largest single read/write */
    int64_t max_tiles;
    unsigned char *stage; /* slot bytes, ZERO_NVME_ALIGN-aligned; I/O thread only */
    uint64_t *gens;       /* per tile: last generation written or read; 0 never */
    int64_t ngens;
    zero_logger log;
#ifdef ZERO__NVME_POSIX
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
#endif
    int thread_started, stop;
    zero_nvme_request *head, *tail, *all;
    int64_t inflight, depth; /* queued + running; the bound */
};

static zero_result zero__nvme_fail(zero_error *err, zero_result code, zero_msg item, const char *fmt, ...)
    ZERO__PRINTF(4, 5);
static zero_result zero__nvme_fail(zero_error *err, zero_result code, zero_msg item, const char *fmt, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    zero__fail(err, item, NULL, 0, 0, "%s", text);
    if (err) err->code = code; /* == the item's result; kept explicit at every call */
    return code;
}

#ifdef ZERO__NVME_POSIX

/* ---- >>offload-tileio: the file, tile write and checked read, the I/O thread ---- */

static size_t zero__nvme_round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Free with free(): zero.h's ZERO_MALLOC has no aligned form, and O_DIRECT
   needs ZERO_NVME_ALIGN-aligned buffers. */
static void *zero__nvme_aligned(size_t n) {
    return aligned_alloc(ZERO_NVME_ALIGN, zero__nvme_round_up(n ? n : 1, ZERO_NVME_ALIGN));
}

/* The tile file, created or reopened; -1 with errno. Never blocks: an
   existing non-regular file (a FIFO, a device) is refused before the open
   (ENODEV) and after it, through the descriptor. */
static int zero__nvme_openfd(const char *path, int direct) {
    struct stat sb;
    int fd;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        errno = ENODEV;
        return -1;
    }
    do {
        fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK | ZERO__O_NOFOLLOW | (direct ? ZERO__O_DIRECT : 0), 0600);
        if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
            close(fd);
            errno = ENODEV;
            return -1;
        }
#ifdef ZERO_NVME_TEST_HOOKS
        if (fd >= 0 && direct && zero__nvme_hook_einval == 1) {
            close(fd);
            fd = -1;
            errno = EINVAL;
        }
#endif
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/* Buffered from now on (O_DIRECT refused with EINVAL); 0 or an errno. */
static int zero__nvme_fallback(zero_nvme *s, const char *why) {
    int fd = zero__nvme_openfd(s->path, 0);
    if (fd < 0) return errno;
    close(s->fd);
    s->fd = fd;
    s->direct = 0;
    zero__log(&s->log, ZERO_LOG_INFO, ZERO_MSG_NONE,
              "nvme store %s: O_DIRECT refused (%s: EINVAL); using buffered I/O", s->path, why);
    return 0;
}

/* Whole transfer at `off`: 0 on success; else errno (0 with *done short: EOF
   on read, a zero-byte write). */
static int zero__nvme_xfer(zero_nvme *s, int wr, unsigned char *buf, size_t len, int64_t off, size_t *done) {
    *done = 0;
    while (*done < len) {
        size_t want = len - *done;
        ssize_t r;
        if (want > s->chunk) want = s->chunk;
        if (lseek(s->fd, (off_t)(off + (int64_t)*done), SEEK_SET) < 0) return errno;
#ifdef ZERO_NVME_TEST_HOOKS
        if ((s->direct && zero__nvme_hook_einval == 2) || (wr && zero__nvme_hook_einval == 3)) {
            r = -1;
            errno = zero__nvme_hook_einval == 2 ? EINVAL : ENOSPC;
        } else if (wr && zero__nvme_hook_einval == 4) {
            r = 0;
        } else
#endif
        r = wr ? write(s->fd, buf + *done, want) : read(s->fd, buf + *done, want);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EINVAL && s->direct) {
                int e = zero__nvme_fallback(s, wr ? "write" : "read");
                if (e) return e;
                continue; /* retry buffered */
            }
            return errno;
        }
        if (r == 0) return 0; /* EOF / nothing written */
        *done += (size_t)r;
    }
    return 0;
}

static void zero__nvme_put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static void zero__nvme_put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t zero__nvme_ld32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static int64_t zero__nvme_offset(const zero_nvme *s, int64_t tile) {
    return (int64_t)ZERO_NVME_ALIGN + tile * (int64_t)s->slot;
}

/* The file is still there under its name: 0, else fills err. */
static zero_result zero__nvme_stat(zero_nvme *s, int64_t *size, zero_error *err) {
    struct stat st;
    if (fstat(s->fd, &st) != 0)
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_READ, "nvme store %s: fstat: %s", s->path,
                               strerror(errno));
    if (st.st_nlink == 0)
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_READ,
                               "nvme store %s: file removed underneath (unlinked while open)", s->path);
    *size = (int64_t)st.st_size;
    return ZERO_OK;
}

static zero_result zero__nvme_grow(zero_nvme *s, int64_t tile, zero_error *err) {
    if (tile < s->ngens) return ZERO_OK;
    {
        int64_t n = s->ngens ? s->ngens : 64;
        uint64_t *g;
        while (n <= tile) n *= 2;
        if (n > s->max_tiles) n = s->max_tiles;
        g = (uint64_t *)ZERO_REALLOC(s->gens, (size_t)n * sizeof *g);
        if (!g)
            return zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY,
                                   "nvme store %s: generation table of %lld tiles", s->path, (long long)n);
        memset(g + s->ngens, 0, (size_t)(n - s->ngens) * sizeof *g);
        s->gens = g;
        s->ngens = n;
    }
    return ZERO_OK;
}

static zero_result zero__nvme_do_write(zero_nvme *s, int64_t tile, const void *src, size_t bytes,
                                       zero_error *err) {
    unsigned char *h = s->stage;
    size_t len = zero__nvme_round_up(ZERO__NVME_HDR + bytes, ZERO_NVME_ALIGN), done;
    int64_t off = zero__nvme_offset(s, tile), size;
    uint64_t gen;
    int e;
    zero_result rc;
    if ((rc = zero__nvme_stat(s, &size, err)) != ZERO_OK) return rc;
    if ((rc = zero__nvme_grow(s, tile, err)) != ZERO_OK) return rc;
    gen = s->gens[tile] + 1;
    if (bytes) memcpy(h + ZERO__NVME_HDR, src, bytes);
    memset(h + ZERO__NVME_HDR + bytes, 0, len - ZERO__NVME_HDR - bytes);
    zero__nvme_put64(h + 0, ZERO__NVME_TILE_MAGIC);
    zero__nvme_put32(h + 8, ZERO__NVME_VERSION);
    zero__nvme_put32(h + 12, ZERO__NVME_HDR);
    zero__nvme_put64(h + 16, (uint64_t)tile);
    zero__nvme_put64(h + 24, (uint64_t)bytes);
    zero__nvme_put64(h + 32, gen);
    zero__nvme_put64(h + 40, zero__nvme_hash(h + ZERO__NVME_HDR, bytes));
    zero__nvme_put64(h + 48, 0);
    zero__nvme_put64(h + 56, zero__nvme_hash(h, 56));
    e = zero__nvme_xfer(s, 1, h, len, off, &done);
    if (e)
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_WRITE,
                               "nvme store %s: writing tile %lld (%zu bytes at offset %lld): %s%s", s->path,
                               (long long)tile, len, (long long)off, strerror(e),
                               e == ENOSPC ? " (disk full)" : "");
    if (done < len)
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_WRITE,
                               "nvme store %s: short write of tile %lld: %zu of %zu bytes at offset %lld "
                               "(disk full?)",
                               s->path, (long long)tile, done, len, (long long)off);
    s->gens[tile] = gen;
    return ZERO_OK;
}

static zero_result zero__nvme_do_read(zero_nvme *s, int64_t tile, void *dst, size_t bytes, zero_error *err) {
    unsigned char *h = s->stage;
    size_t len = zero__nvme_round_up(ZERO__NVME_HDR + bytes, ZERO_NVME_ALIGN), got = 0;
    int64_t off = zero__nvme_offset(s, tile), size;
    uint64_t v, want;
    int e, never;
    zero_result rc;
    if ((rc = zero__nvme_stat(s, &size, err)) != ZERO_OK) return rc;
    if ((rc = zero__nvme_grow(s, tile, err)) != ZERO_OK) return rc;
    never = s->gens[tile] == 0;
    if (off < size) {
        e = zero__nvme_xfer(s, 0, h, len, off, &got);
        if (e)
            return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_READ,
                                   "nvme store %s: reading tile %lld (%zu bytes at offset %lld): %s", s->path,
                                   (long long)tile, len, (long long)off, strerror(e));
    }
    if (got < ZERO__NVME_HDR) {
        if (never)
            return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                                   "nvme store %s: tile %lld was never written (the file ends at %lld bytes)",
                                   s->path, (long long)tile, (long long)size);
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_READ,
                               "nvme store %s: short read of tile %lld: %zu of %zu bytes at offset %lld: the file "
                               "(now %lld bytes) was truncated underneath",
                               s->path, (long long)tile, got, len, (long long)off, (long long)size);
    }
    v = zero__nvme_ld64(h);
    if (v != ZERO__NVME_TILE_MAGIC) {
        int zero_hdr = 1, i;
        for (i = 0; i < ZERO__NVME_HDR; i++) zero_hdr &= h[i] == 0;
        if (zero_hdr && never)
            return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                                   "nvme store %s: tile %lld was never written", s->path, (long long)tile);
        return zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                               "nvme store %s: tile %lld: bad header magic 0x%016llx (want 0x%016llx): written by "
                               "a crash or changed underneath",
                               s->path, (long long)tile, (unsigned long long)v,
                               (unsigned long long)ZERO__NVME_TILE_MAGIC);
    }
    v = zero__nvme_ld64(h + 56);
    want = zero__nvme_hash(h, 56);
    if (v != want)
        return zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                               "nvme store %s: tile %lld: header checksum mismatch (stored 0x%016llx, computed "
                               "0x%016llx): written by a crash or changed underneath",
                               s->path, (long long)tile, (unsigned long long)v, (unsigned long long)want);
    if (zero__nvme_ld32(h + 8) != ZERO__NVME_VERSION || zero__nvme_ld32(h + 12) != ZERO__NVME_HDR)
        return zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                               "nvme store %s: tile %lld: header version %u size %u (this build reads %u, %u)",
                               s->path, (long long)tile, (unsigned)zero__nvme_ld32(h + 8),
                               (unsigned)zero__nvme_ld32(h + 12), ZERO__NVME_VERSION, (unsigned)ZERO__NVME_HDR);
    v = zero__nvme_ld64(h + 16);
    if (v != (uint64_t)tile)
        return zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                               "nvme store %s: tile %lld: the header names tile %lld: written by a crash or "
                               "changed underneath",
                               s->path, (long long)tile, (long long)v);
    v = zero__nvme_ld64(h + 24);
    if (v != (uint64_t)bytes)
        return zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                               "nvme store %s: tile %lld: byte count mismatch: the tile holds %llu bytes, the read "
                               "asked for %zu",
                               s->path, (long long)tile, (unsigned long long)v, bytes);
    if (got < len)
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_READ,
                               "nvme store %s: short read of tile %lld: %zu of %zu bytes at offset %lld: the file "
                               "(now %lld bytes) was truncated underneath",
                               s->path, (long long)tile, got, len, (long long)off, (long long)size);
    v = zero__nvme_ld64(h + 40);
    want = zero__nvme_hash(h + ZERO__NVME_HDR, bytes);
    if (v != want)
        return zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                               "nvme store %s: tile %lld: data checksum mismatch (stored 0x%016llx, computed "
                               "0x%016llx, %zu bytes, generation %llu): written by a crash or changed underneath",
                               s->path, (long long)tile, (unsigned long long)v, (unsigned long long)want, bytes,
                               (unsigned long long)zero__nvme_ld64(h + 32));
    if (bytes) memcpy(dst, h + ZERO__NVME_HDR, bytes);
    v = zero__nvme_ld64(h + 32);
    if (v > s->gens[tile]) s->gens[tile] = v;
    return ZERO_OK;
}

static void *zero__nvme_thread(void *arg) {
    zero_nvme *s = (zero_nvme *)arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        zero_nvme_request *r;
        while (!s->head && !s->stop) pthread_cond_wait(&s->cv_work, &s->mu);
        if (!s->head) break;
        r = s->head;
        s->head = r->next;
        if (!s->head) s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        zero__ok(&r->err);
        r->rc = r->write ? zero__nvme_do_write(s, r->tile, r->src, r->bytes, &r->err)
                         : zero__nvme_do_read(s, r->tile, r->dst, r->bytes, &r->err);
        pthread_mutex_lock(&s->mu);
        r->done = 1;
        s->inflight--;
        pthread_cond_broadcast(&s->cv_done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static zero_result zero__nvme_super(zero_nvme *s, zero_error *err) {
    unsigned char *b = (unsigned char *)zero__nvme_aligned(ZERO_NVME_ALIGN);
    int64_t size = 0;
    size_t done;
    int e;
    zero_result rc = ZERO_OK;
    if (!b)
        return zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY, "nvme store %s: superblock",
                               s->path);
    memset(b, 0, ZERO_NVME_ALIGN);
    if ((rc = zero__nvme_stat(s, &size, err)) != ZERO_OK) goto out;
    if (size == 0) {
        zero__nvme_put64(b, ZERO__NVME_SUPER_MAGIC);
        zero__nvme_put32(b + 8, ZERO__NVME_VERSION);
        zero__nvme_put32(b + 12, ZERO_NVME_ALIGN);
        zero__nvme_put64(b + 16, (uint64_t)s->tile_bytes);
        zero__nvme_put64(b + 24, (uint64_t)s->slot);
        zero__nvme_put64(b + 56, zero__nvme_hash(b, 56));
        e = zero__nvme_xfer(s, 1, b, ZERO_NVME_ALIGN, 0, &done);
        if (e || done < ZERO_NVME_ALIGN)
            rc = zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_WRITE, "nvme store %s: writing the superblock: %s",
                                 s->path, e ? strerror(e) : "short write (disk full?)");
    } else {
        e = zero__nvme_xfer(s, 0, b, ZERO_NVME_ALIGN, 0, &done);
        if (e)
            rc = zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_OPEN, "nvme store %s: reading the superblock: %s",
                                 s->path, strerror(e));
        else if (done < 64 || zero__nvme_ld64(b) != ZERO__NVME_SUPER_MAGIC ||
                 zero__nvme_ld64(b + 56) != zero__nvme_hash(b, 56) || zero__nvme_ld32(b + 8) != ZERO__NVME_VERSION ||
                 zero__nvme_ld32(b + 12) != ZERO_NVME_ALIGN)
            rc = zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                                 "nvme store %s: the file exists and is not a zero tile store of this version "
                                 "(bad superblock): remove it or choose another prefix",
                                 s->path);
        else if (zero__nvme_ld64(b + 16) != (uint64_t)s->tile_bytes || zero__nvme_ld64(b + 24) != (uint64_t)s->slot)
            rc = zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                                 "nvme store %s: the file holds tiles of %llu bytes, this store asks %zu: remove it "
                                 "or open it with the same tile size",
                                 s->path, (unsigned long long)zero__nvme_ld64(b + 16), s->tile_bytes);
    }
out:
    free(b);
    return rc;
}

/* ---- >>offload-tileapi: open, close, the request queue, wait, the bandwidth ---- */

/* "<dir>/<prefix>.rank<R>.tiles" (dir non-empty), from ZERO_MALLOC; NULL:
   out of memory */
static char *zero__nvme_path(const char *dir, const char *prefix, int rank) {
    size_t n = strlen(dir) + strlen(prefix) + 32;
    char *p = (char *)ZERO_MALLOC(n);
    if (p) snprintf(p, n, "%s%s%s.rank%d.tiles", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", prefix, rank);
    return p;
}

ZERO__DEF zero_result zero_nvme_open(zero_nvme **out, const char *dir, const char *prefix, int rank,
                                     size_t tile_bytes, const zero_aio_config *aio, zero_error *err) {
    zero_nvme *s;
    struct stat st;
    int64_t block = aio ? aio->block_size : 1048576, depth = aio ? aio->queue_depth : 8, max_off;
    int created = 0;
    zero_result rc;
    if (!out || !dir || !prefix)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_NULL_ARG, "zero_nvme_open: %s is NULL",
                               !out ? "out" : !dir ? "dir" : "prefix");
    *out = NULL;
    if (!dir[0] || !prefix[0] || strchr(prefix, '/') || rank < 0)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                               "zero_nvme_open: dir \"%s\" and prefix \"%s\" must be non-empty, the prefix without "
                               "'/', rank %d >= 0",
                               dir, prefix, rank);
    if (tile_bytes == 0 || tile_bytes > ((size_t)1 << 40) || tile_bytes > SIZE_MAX / 2)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                               "zero_nvme_open: tile_bytes %zu out of range (1 .. 2^40)", tile_bytes);
    if (block <= 0 || depth <= 0 || depth > 65536)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                               "zero_nvme_open: aio.block_size %lld must be > 0 and aio.queue_depth %lld in 1..65536",
                               (long long)block, (long long)depth);
    if (stat(dir, &st) != 0)
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_OPEN, "nvme_path %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_OPEN, "nvme_path %s: not a directory", dir);
    s = (zero_nvme *)ZERO_MALLOC(sizeof *s);
    if (!s) return zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY, "zero_nvme_open");
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->rank = rank;
    s->tile_bytes = tile_bytes;
    s->slot = zero__nvme_round_up(ZERO__NVME_HDR + tile_bytes, ZERO_NVME_ALIGN);
    s->chunk = zero__nvme_round_up((size_t)(block < ((int64_t)1 << 30) ? block : ((int64_t)1 << 30)), ZERO_NVME_ALIGN);
    s->depth = depth;
    s->log.fn = NULL;
    s->log.user = NULL;
    s->log.level = ZERO_LOG_INFO;
    s->log.rank = rank;
    max_off = sizeof(off_t) >= 8 ? INT64_MAX : (int64_t)INT32_MAX;
    s->max_tiles = (max_off - ZERO_NVME_ALIGN) / (int64_t)s->slot;
    if (s->max_tiles > ZERO_NVME_MAX_TILES) s->max_tiles = ZERO_NVME_MAX_TILES;
    s->path = zero__nvme_path(dir, prefix, rank);
    if (!s->path) {
        ZERO_FREE(s);
        return zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY, "zero_nvme_open");
    }
    s->stage = (unsigned char *)zero__nvme_aligned(s->slot);
    if (!s->stage) {
        rc = zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY,
                             "nvme store %s: staging buffer of %zu bytes", s->path, s->slot);
        goto fail;
    }
    s->direct = ZERO__O_DIRECT != 0;
    created = stat(s->path, &st) != 0; /* (a failure below removes a file this call made, never one it found) */
    s->fd = zero__nvme_openfd(s->path, s->direct);
    if (s->fd < 0 && s->direct && errno == EINVAL) {
        s->direct = 0;
        s->fd = zero__nvme_openfd(s->path, 0);
        if (s->fd >= 0)
            zero__log(&s->log, ZERO_LOG_INFO, ZERO_MSG_NONE,
                      "nvme store %s: the file system refuses O_DIRECT; using buffered I/O", s->path);
    }
    if (s->fd < 0) {
        rc = zero__nvme_fail(err, ZERO_ERR_IO, ZERO_MSG_FILE_OPEN, "nvme store %s: cannot open: %s", s->path,
                             errno == ENODEV ? "not a regular file (a FIFO or device is never opened)" : strerror(errno));
        goto fail;
    }
    if ((rc = zero__nvme_super(s, err)) != ZERO_OK) goto fail;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        rc = zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY, "nvme store %s: mutex", s->path);
        goto fail;
    }
    pthread_cond_init(&s->cv_work, NULL);
    pthread_cond_init(&s->cv_done, NULL);
    if (pthread_create(&s->thread, NULL, zero__nvme_thread, s) != 0) {
        pthread_cond_destroy(&s->cv_work);
        pthread_cond_destroy(&s->cv_done);
        pthread_mutex_destroy(&s->mu);
        rc = zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY,
                             "nvme store %s: cannot start the I/O thread", s->path);
        goto fail;
    }
    s->thread_started = 1;
    *out = s;
    zero__ok(err);
    return ZERO_OK;
fail:
    if (s->fd >= 0) {
        close(s->fd);
        if (created) (void)unlink(s->path);
    }
    free(s->stage);
    ZERO_FREE(s->path);
    ZERO_FREE(s);
    return rc;
}

ZERO__DEF void zero_nvme_close(zero_nvme *s, int keep) {
    zero_nvme_request *r;
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1; /* the thread drains the queue first */
    pthread_cond_broadcast(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    for (r = s->all; r;) { /* requests never waited for */
        zero_nvme_request *next = r->all_next;
        ZERO_FREE(r);
        r = next;
    }
    if (keep) {
        if (fsync(s->fd) != 0 && errno != EINVAL)
            zero__log(&s->log, ZERO_LOG_WARN, ZERO_MSG_FILE_READ, "nvme store %s: fsync at close: %s", s->path,
                      strerror(errno));
    }
    close(s->fd);
    if (!keep && unlink(s->path) != 0 && errno != ENOENT)
        zero__log(&s->log, ZERO_LOG_WARN, ZERO_MSG_FILE_READ, "nvme store %s: cannot remove: %s", s->path,
                  strerror(errno));
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_done);
    pthread_mutex_destroy(&s->mu);
    free(s->stage);
    ZERO_FREE(s->gens);
    ZERO_FREE(s->path);
    ZERO_FREE(s);
}

static zero_result zero__nvme_submit(const char *fn, zero_nvme *s, int write, int64_t tile, const void *src, void *dst,
                                     size_t bytes, zero_nvme_request **req, zero_error *err) {
    zero_nvme_request *r;
    if (req) *req = NULL;
    if (!s || !req || (bytes && !(write ? src : (const void *)dst)))
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_NULL_ARG, "%s: %s is NULL", fn,
                               !s ? "store" : !req ? "req" : "buf");
    if (tile < 0 || tile >= s->max_tiles)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                               "%s: nvme store %s: tile %lld out of range (0 .. %lld)", fn, s->path, (long long)tile,
                               (long long)(s->max_tiles - 1));
    if (bytes > s->tile_bytes)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                               "%s: nvme store %s: tile %lld: %zu bytes, more than the store's tile_bytes %zu", fn,
                               s->path, (long long)tile, bytes, s->tile_bytes);
    r = (zero_nvme_request *)ZERO_MALLOC(sizeof *r);
    if (!r) return zero__nvme_fail(err, ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_OUT_OF_MEMORY, "%s: request", fn);
    memset(r, 0, sizeof *r);
    r->store = s;
    r->write = write;
    r->tile = tile;
    r->src = src;
    r->dst = dst;
    r->bytes = bytes;
    pthread_mutex_lock(&s->mu);
    while (s->inflight >= s->depth) pthread_cond_wait(&s->cv_done, &s->mu);
    r->all_next = s->all;
    if (s->all) s->all->all_prev = r;
    s->all = r;
    if (s->tail) s->tail->next = r;
    else s->head = r;
    s->tail = r;
    s->inflight++;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    *req = r;
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_nvme_wait(zero_nvme *s, zero_nvme_request *r, zero_error *err) {
    zero_result rc;
    if (!s || !r)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_NULL_ARG, "zero_nvme_wait: %s is NULL", !s ? "store" : "req");
    if (r->store != s)
        return zero__nvme_fail(err, ZERO_ERR_INVALID_ARG, ZERO_MSG_BAD_ARG,
                               "zero_nvme_wait: the request belongs to another store");
    pthread_mutex_lock(&s->mu);
    while (!r->done) pthread_cond_wait(&s->cv_done, &s->mu);
    if (r->all_prev) r->all_prev->all_next = r->all_next;
    else s->all = r->all_next;
    if (r->all_next) r->all_next->all_prev = r->all_prev;
    pthread_mutex_unlock(&s->mu);
    rc = r->rc;
    if (err) *err = r->err;
    ZERO_FREE(r);
    return rc;
}

ZERO__DEF zero_result zero_nvme_write_async(zero_nvme *s, int64_t tile, const void *buf, size_t bytes,
                                            zero_nvme_request **req, zero_error *err) {
    return zero__nvme_submit("zero_nvme_write_async", s, 1, tile, buf, NULL, bytes, req, err);
}

ZERO__DEF zero_result zero_nvme_read_async(zero_nvme *s, int64_t tile, void *buf, size_t bytes,
                                           zero_nvme_request **req, zero_error *err) {
    return zero__nvme_submit("zero_nvme_read_async", s, 0, tile, NULL, buf, bytes, req, err);
}

ZERO__DEF zero_result zero_nvme_write(zero_nvme *s, int64_t tile, const void *buf, size_t bytes, zero_error *err) {
    zero_nvme_request *r;
    zero_result rc = zero__nvme_submit("zero_nvme_write", s, 1, tile, buf, NULL, bytes, &r, err);
    return rc != ZERO_OK ? rc : zero_nvme_wait(s, r, err);
}

ZERO__DEF zero_result zero_nvme_read(zero_nvme *s, int64_t tile, void *buf, size_t bytes, zero_error *err) {
    zero_nvme_request *r;
    zero_result rc = zero__nvme_submit("zero_nvme_read", s, 0, tile, NULL, buf, bytes, &r, err);
    return rc != ZERO_OK ? rc : zero_nvme_wait(s, r, err);
}

/* zero_nvme_bandwidth's tiles: the pattern `ref` (bytes 1 .. 255, never 0,
   changing every 4 KiB block) with the tile's own id in its first 8 bytes
   (or fewer), so a tile read back in another's place differs. */
static void zero__nvme_bw_stamp(unsigned char *p, size_t bytes, int tile) {
    size_t k;
    for (k = 0; k < 8 && k < bytes; k++) p[k] = (unsigned char)(0x80 | (((uint64_t)tile >> (7 * k)) & 0x7f));
}

/* One timed pass of zero_nvme_bandwidth: tiles 0 .. tiles-1 written from
   (write) or read into (else) the `ring` buffers in turn, ring (<= the
   store's queue depth) requests in flight; each read compared with what its
   write held. *secs: from the first submission until the last wait returned.
   On error the requests still in flight are left to zero_nvme_close. */
static zero_result zero__nvme_bw_pass(zero_nvme *s, int write, unsigned char **buf, zero_nvme_request **req, int ring,
                                      int tiles, const unsigned char *ref, double *secs, zero_error *err) {
    size_t tb = s->tile_bytes, head = tb < 8 ? tb : 8;
    double t0 = zero__now_ms();
    unsigned char stamp[8];
    zero_result rc;
    int i;
    for (i = 0; i < tiles + ring; i++) {
        if (i >= ring) { /* the oldest request, tile i - ring */
            int t = i - ring;
            unsigned char *p = buf[t % ring];
            if ((rc = zero_nvme_wait(s, req[t % ring], err)) != ZERO_OK) return rc;
            zero__nvme_bw_stamp(stamp, head, t);
            if (!write && (memcmp(p, stamp, head) != 0 || memcmp(p + head, ref + head, tb - head) != 0))
                return zero__nvme_fail(err, ZERO_ERR_CORRUPT, ZERO_MSG_NVME_CORRUPT,
                                       "zero_nvme_bandwidth: nvme store %s: tile %d read back differs from what "
                                       "was written",
                                       s->path, t);
        }
        if (i < tiles) {
            unsigned char *p = buf[i % ring];
            if (write) zero__nvme_bw_stamp(p, tb, i);
            rc = write ? zero_nvme_write_async(s, i, p, tb, &req[i % ring], err)
                       : zero_nvme_read_async(s, i, p, tb, &req[i % ring], err);
            if (rc != ZERO_OK) return rc;
        }
    }
    *secs = (zero__now_ms() - t0) / 1e3;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_nvme_bandwidth(const char *dir, size_t tile_bytes, int tiles, const zero_aio_config *aio,
                                          double *read_bytes_per_s, double *write_bytes_per_s, zero_error *err) {
    static const char fn[] = "zero_nvme_bandwidth";
    zero_aio_config cfg;
    zero_nvme *s = NULL;
    unsigned char **buf = NULL, *ref = NULL;
    zero_nvme_request **req = NULL;
    char prefix[96];
    unsigned long seq;
    double ws = 0, rs = 0, bytes = (double)tile_bytes * (double)tiles;
    int ring, i, got = 0;
    zero_result rc;
    size_t j;
    if (read_bytes_per_s) *read_bytes_per_s = 0;
    if (write_bytes_per_s) *write_bytes_per_s = 0;
    if (!dir) return zero__fail(err, ZERO_MSG_NULL_ARG, fn, 0, 0, "dir is NULL");
    if (!read_bytes_per_s) return zero__fail(err, ZERO_MSG_NULL_ARG, fn, 0, 0, "read_bytes_per_s is NULL");
    if (!write_bytes_per_s) return zero__fail(err, ZERO_MSG_NULL_ARG, fn, 0, 0, "write_bytes_per_s is NULL");
    if (tile_bytes == 0 || tile_bytes > ((size_t)1 << 40))
        return zero__fail(err, ZERO_MSG_BAD_ARG, fn, 0, 0, "tile_bytes = %zu: from 1 to 2^40", tile_bytes);
    if (tiles < 1 || tiles > 4096)
        return zero__fail(err, ZERO_MSG_BAD_ARG, fn, 0, 0, "tiles = %d: from 1 to 4096", tiles);
    memset(&cfg, 0, sizeof cfg);
    if (aio) cfg = *aio;
    else cfg.block_size = 1048576; /* zero_nvme_open's default */
    if (cfg.queue_depth <= 0) cfg.queue_depth = 8;
    ring = cfg.queue_depth < tiles ? (int)cfg.queue_depth : tiles;
    pthread_mutex_lock(&zero__tmp_mu); /* zero.h's count of this process's temporary names */
    seq = ++zero__tmp_seq;
    pthread_mutex_unlock(&zero__tmp_mu);
    snprintf(prefix, sizeof prefix, "zero_bandwidth.pid%ld.%lu", (long)getpid(), seq);
    if ((rc = zero_nvme_open(&s, dir, prefix, 0, tile_bytes, &cfg, err)) != ZERO_OK) return rc; /* (it removes what it made) */
    buf = (unsigned char **)ZERO_MALLOC(sizeof *buf * (size_t)ring);
    req = (zero_nvme_request **)ZERO_MALLOC(sizeof *req * (size_t)ring);
    ref = (unsigned char *)ZERO_MALLOC(tile_bytes);
    if (buf) {
        memset(buf, 0, sizeof *buf * (size_t)ring);
        while (got < ring && (buf[got] = (unsigned char *)zero__nvme_aligned(tile_bytes)) != NULL) got++;
    }
    if (!req || !ref || got < ring) {
        rc = zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, fn, 0, 0, "%d buffers of %zu bytes (one per request in flight, "
                        "and the pattern)", ring + 1, tile_bytes);
        goto done;
    }
    for (j = 0; j < tile_bytes; j++) ref[j] = (unsigned char)(1 + (j + j / 4096) % 255);
    for (i = 0; i < ring; i++) memcpy(buf[i], ref, tile_bytes);
    if ((rc = zero__nvme_bw_pass(s, 1, buf, req, ring, tiles, ref, &ws, err)) != ZERO_OK) goto done;
    for (i = 0; i < ring; i++) memset(buf[i], 0, tile_bytes); /* a read that fills nothing cannot pass */
    if ((rc = zero__nvme_bw_pass(s, 0, buf, req, ring, tiles, ref, &rs, err)) != ZERO_OK) goto done;
    *write_bytes_per_s = ws > 0 ? bytes / ws : 0;
    *read_bytes_per_s = rs > 0 ? bytes / rs : 0;
    zero__ok(err);
done:
    zero_nvme_close(s, 0); /* waits for what is still in flight, then removes the file */
    for (i = 0; i < got; i++) free(buf[i]);
    ZERO_FREE(buf);
    ZERO_FREE(req);
    ZERO_FREE(ref);
    return rc;
}

#else /* no POSIX I/O */

/* ---- >>offload-noposix: without POSIX I/O every zero_nvme_* call says so ---- */

ZERO__DEF zero_result zero_nvme_open(zero_nvme **out, const char *dir, const char *prefix, int rank,
                                     size_t tile_bytes, const zero_aio_config *aio, zero_error *err) {
    (void)dir, (void)prefix, (void)rank, (void)tile_bytes, (void)aio;
    if (out) *out = NULL;
    return zero__nvme_fail(err, ZERO_ERR_UNSUPPORTED, ZERO_MSG_BAD_ARG,
                           "zero_nvme_open: the NVMe tile store needs POSIX I/O (not on this platform)");
}
ZERO__DEF void zero_nvme_close(zero_nvme *s, int keep) { (void)s, (void)keep; }
ZERO__DEF zero_result zero_nvme_write(zero_nvme *s, int64_t tile, const void *buf, size_t bytes, zero_error *err) {
    (void)s, (void)tile, (void)buf, (void)bytes;
    return zero__nvme_fail(err, ZERO_ERR_UNSUPPORTED, ZERO_MSG_BAD_ARG, "zero_nvme_write: no POSIX I/O");
}
ZERO__DEF zero_result zero_nvme_read(zero_nvme *s, int64_t tile, void *buf, size_t bytes, zero_error *err) {
    (void)s, (void)tile, (void)buf, (void)bytes;
    return zero__nvme_fail(err, ZERO_ERR_UNSUPPORTED, ZERO_MSG_BAD_ARG, "zero_nvme_read: no POSIX I/O");
}
ZERO__DEF zero_result zero_nvme_write_async(zero_nvme *s, int64_t tile, const void *buf, size_t bytes,
                                            zero_nvme_request **req, zero_error *err) {
    (void)s, (void)tile, (void)buf, (void)bytes;
    if (req) *req = NULL;
    return zero__nvme_fail(err, ZERO_ERR_UNSUPPORTED, ZERO_MSG_BAD_ARG, "zero_nvme_write_async: no POSIX I/O");
}
ZERO__DEF zero_result zero_nvme_read_async(zero_nvme *s, int64_t tile, void *buf, size_t bytes,
                                           zero_nvme_request **req, zero_error *err) {
    (void)s, (void)tile, (void)buf, (void)bytes;
    if (req) *req = NULL;
    return zero__nvme_fail(err, ZERO_ERR_UNSUPPORTED, ZERO_MSG_BAD_ARG, "zero_nvme_read_async: no POSIX I/O");
}
ZERO__DEF zero_result zero_nvme_wait(zero_nvme *s, zero_nvme_request *req, zero_error *err) {
    (void)s, (void)req;
    return zero__nvme_fail(err, ZERO_ERR_UNSUPPORTED, ZERO_MSG_BAD_ARG, "zero_nvme_wait: no POSIX I/O");
}
ZERO__DEF zero_result zero_nvme_bandwidth(const char *dir, size_t tile_bytes, int tiles, const zero_aio_config *aio,
                                          double *read_bytes_per_s, double *write_bytes_per_s, zero_error *err) {
    (void)dir, (void)tile_bytes, (void)tiles, (void)aio;
    if (read_bytes_per_s) *read_bytes_per_s = 0;
    if (write_bytes_per_s) *write_bytes_per_s = 0;
    return zero__nvme_fail(err, ZERO_ERR_UNSUPPORTED, ZERO_MSG_BAD_ARG, "zero_nvme_bandwidth: no POSIX I/O");
}

#endif /* ZERO__NVME_POSIX */

/* ---- >>offload-backend: the engine's hooks, CPU Adam and the tile stores ---- */

static zero_result zero__offload_cpu_adam(void *cpu_ctx, const zero_adam_args *a, zero_error *err) {
    return zero_cpu_adam(a, (zero_cpu_pool *)cpu_ctx, err);
}

/* cpu_convert: convert's rule (zero__host_convert_n) over pieces of the
   arrays, spread over the pool */
typedef struct zero__cpu_conv {
    char *dst;
    const char *src;
    zero_dtype ddt, sdt;
    int acc;
} zero__cpu_conv;

static void zero__cpu_convert_task(void *arg, int64_t begin, int64_t end, int thread) {
    const zero__cpu_conv *c = (const zero__cpu_conv *)arg;
    (void)thread;
    zero__host_convert_n(c->dst + (size_t)begin * zero_dtype_size(c->ddt), c->ddt, c->src + (size_t)begin * zero_dtype_size(c->sdt),
                         c->sdt, (size_t)(end - begin), c->acc);
}

static zero_result zero__offload_cpu_convert(void *cpu_ctx, void *dst, zero_dtype dst_dt, const void *src, zero_dtype src_dt,
                                             size_t n, int accumulate, zero_error *err) {
    zero__cpu_conv c;
    int k;
    zero_dtype dts[2];
    dts[0] = dst_dt;
    dts[1] = src_dt;
    for (k = 0; k < 2; k++)
        if (dts[k] != ZERO_DTYPE_FP32 && dts[k] != ZERO_DTYPE_FP16 && dts[k] != ZERO_DTYPE_BF16)
            return zero__fail(err, ZERO_MSG_BAD_ARG, "cpu_convert", 0, 0, "%s %d (%s) is not fp32, fp16 or bf16",
                              k ? "src_dt" : "dst_dt", (int)dts[k], zero_dtype_name(dts[k]));
    if (n > 0 && (!dst || !src)) return zero__fail(err, ZERO_MSG_NULL_ARG, "cpu_convert", 0, 0, "%s is NULL", dst ? "src" : "dst");
    if (n > (size_t)INT64_MAX) return zero__fail(err, ZERO_MSG_BAD_ARG, "cpu_convert", 0, 0, "n = %zu", n);
    c.dst = (char *)dst;
    c.src = (const char *)src;
    c.ddt = dst_dt;
    c.sdt = src_dt;
    c.acc = accumulate;
    return zero_cpu_pool_run((zero_cpu_pool *)cpu_ctx, zero__cpu_convert_task, &c, (int64_t)n, 32768, err);
}

/* the engine's tile stores (offload_optimizer / offload_param "nvme"):
   zero_nvme_* under the engine's prefix ("zero_optim", "zero_param"), files
   removed on close */
static zero_result zero__offload_tiles_open(void *cpu_ctx, const char *dir, const char *name, int rank,
                                            size_t tile_bytes, const zero_aio_config *aio, void **store,
                                            zero_error *err) {
    zero_nvme *s = NULL;
    zero_result rc;
    (void)cpu_ctx;
    rc = zero_nvme_open(&s, dir, name, rank, tile_bytes, aio, err);
    *store = rc == ZERO_OK ? (void *)s : NULL;
    return rc;
}
static void zero__offload_tiles_close(void *store) { zero_nvme_close((zero_nvme *)store, 0); }
static zero_result zero__offload_tiles_read(void *store, int64_t tile, void *buf, size_t bytes, void **req,
                                            zero_error *err) {
    zero_nvme_request *r = NULL;
    zero_result rc = zero_nvme_read_async((zero_nvme *)store, tile, buf, bytes, &r, err);
    *req = r;
    return rc;
}
static zero_result zero__offload_tiles_write(void *store, int64_t tile, const void *buf, size_t bytes, void **req,
                                             zero_error *err) {
    zero_nvme_request *r = NULL;
    zero_result rc = zero_nvme_write_async((zero_nvme *)store, tile, buf, bytes, &r, err);
    *req = r;
    return rc;
}
static zero_result zero__offload_tiles_wait(void *store, void *req, zero_error *err) {
    return zero_nvme_wait((zero_nvme *)store, (zero_nvme_request *)req, err);
}

ZERO__DEF void zero_offload_backend(const zero_backend *base, zero_cpu_pool *pool, zero_backend *out) {
    if (!base || !out) return;
    *out = *base;
    out->cpu_adam = zero__offload_cpu_adam;
    out->cpu_convert = zero__offload_cpu_convert;
    out->cpu_ctx = pool;
    out->tiles_open = zero__offload_tiles_open;
    out->tiles_close = zero__offload_tiles_close;
    out->tiles_read = zero__offload_tiles_read;
    out->tiles_write = zero__offload_tiles_write;
    out->tiles_wait = zero__offload_tiles_wait;
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
