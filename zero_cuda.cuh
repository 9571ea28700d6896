/* zero_cuda.cuh - the CUDA backend of zero: GPUs, CUDA and NCCL.

   Companion of zero.h: include zero.h first (this file #errors otherwise).
   Compiled by nvcc as C++ (it #errors under a plain C or C++ compiler); its
   API has C linkage, so C code can call it through a .cu file. It holds
   everything zero does on the GPU:

         - the CUDA backend of zero.h's engine (zero_cuda_backend_init):
           device, pinned and host memory (allocation hooks honoured), the
           compute stream (the program's) and a communication stream ordered by
           events, NCCL collectives, and the kernels (fused mixed-precision
           Adam over many tensors per launch, deterministic sum of squares with
           the inf/nan flag, casts, chunk accumulation, scaling; Muon's
           element-wise parts and its Newton-Schulz orthogonalisation on an
           fp32 SGEMM of its own)
         - hybrid sharding (mics_shard_size): groups_init splits the
           communicator into the shard and replica groups (ncclCommSplit,
           polled against the deadline); the group_ collectives run on them,
           and a group of one rank copies. The split communicators are the
           backend's even when the world's came from the caller
         - the communicator: from an existing ncclComm_t, from NCCL_COMM_ID, or
           from the launcher's environment (torchrun, Slurm, Open MPI) with
           rank 0's ncclUniqueId sent over TCP (zero_dist_env_read,
           zero_bootstrap_exchange); zero_cuda_launch_local starts one process
           per GPU for a program run by hand
         - failure handling: NCCL's asynchronous errors and a deadline
           (ZERO_TIMEOUT_S, default 600 s) are polled while zero waits, so a
           vanished rank is ZERO_ERR_TIMEOUT or ZERO_ERR_NCCL, never a hang
         - CUDA and NCCL status checks that turn a failed call into a
           zero_result and an error text with the call, file:line, CUDA's or
           NCCL's own words and a HINT line (zero_cuda_check, ZERO_CUDA_TRY,
           zero_nccl_check, ZERO_NCCL_TRY); nothing here exits or aborts
         - zero_cuda_device_query and zero_cuda_build_info

   Do this:
       #define ZERO_IMPLEMENTATION
   before you include the headers in *one* .cu file:

       #define ZERO_IMPLEMENTATION
       #include "zero.h"
       #include "zero_offload.h"      (optional: CPU offload)
       #include "zero_cuda.cuh"

   Every other file includes them without the define.

   Minimal use (one process per GPU; a training loop as in zero.h):

       int main(void) {
           int code;
           zero_error err;
           zero_cuda *cu;
           if (zero_cuda_launch_local(&code, &err) != ZERO_OK) return 1;
           if (code >= 0) return code;          (the parent: the ranks ran)
           if (zero_cuda_backend_init(&cu, NULL, &err) != ZERO_OK) {
               fprintf(stderr, "%s\n", err.msg);  (which variable, address or GPU, and a HINT)
               return 1;
           }
           ... zero_engine_create(&e, &cfg, tensors, n, zero_cuda_backend(cu), &err);
           ... kernels on zero_cuda_stream(cu); zero_grad_ready; zero_step ...
           zero_engine_destroy(e);
           zero_cuda_backend_destroy(cu);
       }

   Build: nvcc -std=c++17 -arch=sm_90 -I<dir of zero.h> train.cu -lnccl

   Environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
   MASTER_PORT (torchrun), SLURM_* (srun), OMPI_COMM_WORLD_* (mpirun),
   NCCL_COMM_ID, ZERO_TIMEOUT_S (deadline of the bootstrap and of every wait),
   ZERO_CHECK=1 (ranks compare each collective first), ZERO_LOCAL_GPUS (the
   GPU count zero_cuda_launch_local uses instead of asking CUDA).

   Options:
       ZERO_NO_NCCL   build without NCCL: no nccl.h, no -lnccl, one GPU only;
                      zero_nccl_check and ZERO_NCCL_TRY do not exist. Define it
                      alike in every file (best: -DZERO_NO_NCCL on the nvcc line).
       GPU architecture: kernels are compiled for the -arch / -gencode given to
                      nvcc (the Makefile's GPU_ARCH, default sm_90 for H100 and
                      H200). On a GPU without matching code a launch fails with
                      cudaErrorNoKernelImageForDevice, whose HINT says so;
                      zero_cuda_build_info() lists the architectures built.
       ZERO_STATIC, ZERO_ASSERT, ZERO_MALLOC / ZERO_REALLOC / ZERO_FREE, ...:
                      as in zero.h. zero's host tables here, and host buffers
                      when no allocation hook is given, come from ZERO_MALLOC.

   License: MIT, at the end of this file.
*/

/* Map of this file; search for >>name to reach a section. The declarations
   (the API) come first, then the implementation, whose sections are in
   dependency order: each uses only zero.h and the sections above it (host
   tables and status text, then what the GPU runs, then host-side process
   start-up, then the backend that ties them together).

   declarations
     cuda-api-status     CUDA and NCCL status into a zero_result: zero_cuda_check,
                         ZERO_CUDA_TRY, zero_nccl_check, ZERO_NCCL_TRY
     cuda-api-device     zero_cuda_device_info, zero_cuda_device_query,
                         zero_cuda_build_info
     cuda-api-boot       who this process is and rank 0's id for every rank:
                         zero_dist_env, zero_dist_env_read, zero_bootstrap_exchange
     cuda-api-launch     one process per GPU by hand: zero_cuda_launch_local
     cuda-api-backend    zero_cuda_options, zero_cuda_backend_init, zero_cuda_backend,
                         zero_cuda_stream, zero_cuda_comm_stream, zero_cuda_env,
                         zero_cuda_vm_created, zero_cuda_backend_destroy
     cuda-api-lab        the tools' own: zero_cuda_pcie_bandwidth, _ready (zero_floor_of's
                         bandwidths, measured)
   implementation (ZERO_IMPLEMENTATION)
     cuda-alloc          zeroed host tables through ZERO_MALLOC: zero__cuda_calloc
     cuda-status         error text and HINT lines: zero__cuda_hint, zero_cuda_check,
                         zero__nccl_hint, zero_nccl_check
     cuda-device         zero_cuda_device_query, zero_cuda_build_info,
                         zero_cuda_pcie_bandwidth, _ready
     cuda-kernels        what the kernels compute and how they walk memory; launch
                         geometry and tuning macros (ZERO__CUDA_*)
     cuda-kernel-io      element access: 16-byte loads and stores (zero__cuda_io),
                         zero__cuda_for_range, zero__cuda_block_sum
     cuda-kernel-code    the __global__ kernels: scale, convert, sumsq (+ finish),
                         the fused optimizer kernel (zero__cuda_adam_kernel; its
                         rules zero__cuda_rule_adam, _lion, _adagrad, _sgd), Muon's
                         two element-wise kernels (zero__cuda_muon_mom_kernel, _step_kernel),
                         Lamb's three (zero__cuda_lamb_mom_kernel, _finish_kernel,
                         _step_kernel); a segment's walk in a multi-segment launch
                         (zero__cuda_walk)
     cuda-kernel-launch  host entry points that check, plan and launch:
                         zero__cuda_k_scale, _k_convert, _k_sumsq, _k_adam
                         (Muon's segments to their two kernels: zero__cuda_muon_run;
                         Lamb's passes: zero__cuda_lamb_run)
     cuda-muon-ns        Muon's Newton-Schulz on the device (zero__cuda_k_muon_ns):
                         the fp32 SGEMM kernel (zero__cuda_gemm_kernel, K slices
                         summed in order), the norm in double, the step's products
     cuda-boot           host-only helpers of start-up: clocks, sleep, strerror_r,
                         integer parsing, ZERO_TIMEOUT_S (zero__boot_env_timeout)
     cuda-env            the launcher's variables: zero_dist_env_read,
                         zero__boot_env_master, zero__boot_slurm_per_node
     cuda-exchange       rank 0's id over TCP: the protocol, zero__boot_peer,
                         zero__boot_root (zero__boot_server_*), zero_bootstrap_exchange
     cuda-launch         fork one process per GPU: zero__boot_gpu_count,
                         zero__launch_fork, zero__launch_wait, zero_cuda_launch_local
     cuda-backend        struct zero_cuda; sticky group failure; ZERO__CUDA_CTX
     cuda-be-memory      alloc, free, memset0, copy
     cuda-be-streams     events, stream waits, event_sync and sync (polled against
                         NCCL's error and the deadline)
     cuda-be-collectives NCCL reduce_scatter, all_gather, all_reduce, broadcast
                         (copies for one GPU under ZERO_NO_NCCL); groups_init
                         and the group_ collectives of hybrid sharding
     cuda-be-kernels     the backend's scale, convert, sumsq, adam, muon_ns hooks
     cuda-be-vm          zero_alloc's address ranges: vm_reserve, vm_back, vm_unback,
                         vm_release over the driver's virtual memory management
                         (zero__cuda_vm_*), granules from a pool of physical handles
     cuda-be-init        zero_cuda_options_default, zero__cuda_comm_init,
                         zero_cuda_backend_init, zero_cuda_backend_destroy, getters
*/
#ifndef ZERO_H
#error "zero_cuda.cuh: include zero.h before zero_cuda.cuh"
#endif
#ifndef __CUDACC__
#error "zero_cuda.cuh: compile this file with a CUDA compiler (nvcc), as a .cu file"
#endif

#ifndef ZERO_CUDA_CUH
#define ZERO_CUDA_CUH

#include <cuda_runtime.h>
#ifndef ZERO_NO_NCCL
#  if defined(__has_include)
#    if !__has_include(<nccl.h>)
#      error "zero_cuda.cuh: nccl.h not found: add -I$NCCL_HOME/include, or define ZERO_NO_NCCL for a build without NCCL"
#    endif
#  endif
#  include <nccl.h>
#  if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22700 /* ncclCommWindowRegister, symmetric kernels */
#    define ZERO__CUDA_WINDOWS 1
#  endif
#endif

extern "C" {

/* ---- >>cuda-api-status: CUDA and NCCL status into a zero_result ---- */

/* ZERO_OK for cudaSuccess (err cleared). Otherwise ZERO_ERR_CUDA with err->msg
       "file:line: what: cudaErrorName (CUDA's description)"
   and a second line "HINT: ..." for the errors that have a usual cause (out
   of memory, no device or driver, a device ordinal out of range, no kernel
   image for the GPU). err->item: ZERO_MSG_CUDA_OUT_OF_MEMORY,
   ZERO_MSG_CUDA_NO_DEVICE or ZERO_MSG_CUDA_CALL. what and file may be NULL;
   err may be NULL. */
ZERO_API zero_result zero_cuda_check(cudaError_t e, const char *what, const char *file, int line,
                                     zero_error *err);

/* Evaluate a CUDA runtime call; on failure return its zero_result from the
   enclosing function (which must return zero_result), err filled. */
#define ZERO_CUDA_TRY(call, err)                                                              \
    do {                                                                                      \
        zero_result zero__cuda_try_r = zero_cuda_check((call), #call, __FILE__, __LINE__, (err)); \
        if (zero__cuda_try_r != ZERO_OK) return zero__cuda_try_r;                             \
    } while (0)

#ifndef ZERO_NO_NCCL
/* ZERO_OK for ncclSuccess (err cleared). Otherwise ZERO_ERR_NCCL
   (ZERO_MSG_NCCL_CALL) with err->msg
       "file:line: what: NCCL error N (ncclGetErrorString)"
   then NCCL's last error text of this thread (ncclGetLastError, NCCL >= 2.13)
   when it has one, then a HINT line. ncclInProgress counts as a failure here:
   code that uses non-blocking communicators polls it before checking. */
ZERO_API zero_result zero_nccl_check(ncclResult_t r, const char *what, const char *file, int line,
                                     zero_error *err);

/* As ZERO_CUDA_TRY, for an NCCL call. */
#define ZERO_NCCL_TRY(call, err)                                                              \
    do {                                                                                      \
        zero_result zero__nccl_try_r = zero_nccl_check((call), #call, __FILE__, __LINE__, (err)); \
        if (zero__nccl_try_r != ZERO_OK) return zero__nccl_try_r;                             \
    } while (0)
#endif

/* ---- >>cuda-api-device: device query and build information ---- */

typedef struct zero_cuda_device_info {
    int device;                      /* the ordinal asked for (within CUDA_VISIBLE_DEVICES) */
    char name[256];                  /* "NVIDIA H100 80GB HBM3" */
    int major, minor;                /* compute capability, 9.0 for H100 */
    int sm_count;                    /* streaming multiprocessors */
    size_t total_bytes, free_bytes;  /* device memory, free as of the query */
    int driver_version;              /* cudaDriverGetVersion: 13000 = 13.0; 0 = no driver */
    int runtime_version;             /* cudaRuntimeGetVersion */
    int nccl_version;                /* ncclGetVersion (the library loaded); 0 under ZERO_NO_NCCL */
} zero_cuda_device_info;

/* Fill *info for `device`. The versions are filled first, so they are valid
   even when the device part fails. Without a usable GPU (no driver, none
   visible, ordinal out of range) ZERO_ERR_CUDA with item
   ZERO_MSG_CUDA_NO_DEVICE and a HINT. Reading free memory makes `device`'s
   primary context current for the call (creating it, which costs some
   memory on that GPU, if it did not exist); the caller's current device is
   restored. So ask about your own GPU only. */
ZERO_API zero_result zero_cuda_device_query(int device, zero_cuda_device_info *info,
                                            zero_error *err);

/* What this file was compiled with, one static line:
   "zero 0.1.0; CUDART_VERSION 13000; NCCL 2.28.9; __CUDA_ARCH_LIST__ 900"
   ("no NCCL" under ZERO_NO_NCCL; the arch part when nvcc defines it). */
ZERO_API const char *zero_cuda_build_info(void);


/* ---- >>cuda-api-boot: launcher environment and bootstrap ---- */

/* Who this process is, from the launcher's variables, first match wins:
     torchrun (also --no-python): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
                                  MASTER_ADDR, MASTER_PORT (under torchrun
                                  itself, TORCHELASTIC_RUN_ID set, its store
                                  holds MASTER_PORT: zero uses MASTER_PORT + 1)
     Slurm (srun):                SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
                                  SLURM_NTASKS_PER_NODE; the address from
                                  MASTER_ADDR / MASTER_PORT when set (else
                                  SLURM_LAUNCH_NODE_IPADDR and port 29500)
     Open MPI (mpirun):           OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK,
                                  _LOCAL_SIZE; MASTER_ADDR / MASTER_PORT
   ZERO_BOOTSTRAP_PORT, when set, is the port of zero's bootstrap whatever the
   launcher; none of them: a single process, rank 0 of 1 (local_world 1).
   With world > 1 the local rank and the port are required (only Slurm falls
   back to port 29500); Slurm is recognised by SLURM_PROCID (a plain salloc
   shell sets SLURM_NTASKS too). */
typedef struct zero_dist_env {
    int rank, world;
    int local_rank, local_world;  /* local_world: -1 when the launcher does not say */
    char master_addr[256];        /* "" when none is needed (world 1) */
    int master_port;
    char source[16];              /* "torchrun", "slurm", "openmpi", "none" */
} zero_dist_env;

/* A variable that is set but malformed or inconsistent (RANK >= WORLD_SIZE,
   a port out of range, WORLD_SIZE > 1 without MASTER_ADDR, ...) is an error
   naming the variable; nothing is guessed. */
ZERO_API zero_result zero_dist_env_read(zero_dist_env *env, zero_error *err);

/* Give every rank the `bytes` bytes that rank 0 holds in id (an
   ncclUniqueId): rank 0 listens on master_addr:master_port and serves them
   to world - 1 peers; the others connect (retrying while the deadline
   allows) and read them. Full reads and writes, a deadline of timeout_s
   seconds; on time-out rank 0's error names the address and the ranks that
   never came, a peer's the address it could not reach. A connection that
   does not speak the protocol (a port scanner, another job) is dropped and
   does not count. world 1: nothing to do. */
ZERO_API zero_result zero_bootstrap_exchange(const zero_dist_env *env, void *id, size_t bytes,
                                             double timeout_s, zero_error *err);

/* ---- >>cuda-api-launch: the local launcher ---- */

/* For a program started by hand on a machine with several GPUs: when no
   launcher variables are set, fork one process per visible GPU with torchrun's
   variables set (MASTER_ADDR 127.0.0.1, a free port) and wait for them. In the
   parent *exit_code gets the worst child's exit status (a signal counts as
   128 + its number) and the caller should return it; in a child, or when a
   launcher already started this process, or with one GPU, *exit_code is -1 and
   the caller goes on. Call it first thing in main, before any CUDA call (CUDA
   does not survive fork; the GPUs are counted in a child process, or taken
   from ZERO_LOCAL_GPUS). When a child fails, the others get ZERO_TIMEOUT_S
   seconds to end on their own (zero's deadlines), then SIGTERM. Launcher
   variables that are set but wrong are an error here too. */
ZERO_API zero_result zero_cuda_launch_local(int *exit_code, zero_error *err);

/* ---- >>cuda-api-backend: the CUDA backend ---- */

typedef struct zero_cuda zero_cuda;

typedef struct zero_cuda_options {
    int device;                 /* GPU ordinal; < 0: the local rank (zero_dist_env) */
    double timeout_s;           /* bootstrap and collective deadline; <= 0: the
                                   ZERO_TIMEOUT_S environment variable, else 600 */
    cudaStream_t compute_stream;/* the stream the program's kernels run on; NULL:
                                   zero creates one (zero_cuda_stream) */
#ifndef ZERO_NO_NCCL
    ncclComm_t comm;            /* an existing communicator of the data-parallel
                                   group (not owned; its GPU is the device unless
                                   `device` says otherwise); NULL: made from the
                                   environment (NCCL_COMM_ID, else
                                   zero_bootstrap_exchange) */
#endif
    int check;                  /* 1: every step the ranks compare a hash of their
                                   collectives and fail on divergence (also
                                   ZERO_CHECK=1 in the environment) */
    /* allocation hooks; NULL: cudaMalloc / cudaMallocHost / ZERO_MALLOC */
    void *(*alloc)(void *user, zero_mem_kind kind, size_t bytes);
    void (*free)(void *user, zero_mem_kind kind, void *p);
    void *alloc_user;
} zero_cuda_options;

ZERO_API zero_cuda_options zero_cuda_options_default(void);
/* Select the GPU, make the streams, set up NCCL (a collective over all ranks)
   and return the backend. */
ZERO_API zero_result zero_cuda_backend_init(zero_cuda **out, const zero_cuda_options *opt,
                                            zero_error *err);
/* The zero_backend to hand to zero_engine_create (valid until destroy). */
ZERO_API const zero_backend *zero_cuda_backend(zero_cuda *c);
/* The compute stream: run the forward and backward kernels on it. */
ZERO_API cudaStream_t zero_cuda_stream(const zero_cuda *c);
/* The communication stream (for timelines and profiling: record events on it;
   do not enqueue work there). */
ZERO_API cudaStream_t zero_cuda_comm_stream(const zero_cuda *c);
ZERO_API const zero_dist_env *zero_cuda_env(const zero_cuda *c);
/* Physical granules the vm_ operations (zero_alloc) have created so far with
   cuMemCreate; it stops growing once the pool covers what is backed at once. */
ZERO_API int64_t zero_cuda_vm_created(const zero_cuda *c);
/* Destroy engines first, and zero_free what zero_alloc gave on this backend
   (ranges still reserved are released here, their pointers left dangling).
   Frees the communicator only if zero made it. */
ZERO_API void zero_cuda_backend_destroy(zero_cuda *c);

/* ---- >>cuda-api-lab: the tools' own: the PCIe bandwidth probe ---- */

/* The PCIe bandwidths of the current device (zero_floor_of's bw.h2d, d2h
   and duplex, bytes/s; bw.host is left as it was): `bytes` from pinned host
   memory to the device, back, and both at once on two streams (duplex: the
   sum over the time both take), each timed with events; one warm-up round,
   then the median of `reps` (1 to 1000). bytes from 1 MiB to 16 GiB (the
   default of callers: 256 MiB); its pinned and device buffers (2 x bytes
   each) are freed before it returns. */
ZERO_API zero_result zero_cuda_pcie_bandwidth(size_t bytes, int reps, zero_bandwidths *bw, zero_error *err);

/* The same, with ready(ctx, err) called once the buffers are allocated and
   filled, before the warm-up round (NULL: none): ranks that share a host
   meet there, so that their copies run together as a step's do (a meeting
   before the call leaves them apart by the pinned allocation's time,
   longer than the copies). A ready that returns other than ZERO_OK (having
   filled err) ends the measurement with that result, *bw unchanged. */
ZERO_API zero_result zero_cuda_pcie_bandwidth_ready(size_t bytes, int reps, zero_result (*ready)(void *ctx, zero_error *err),
                                                    void *ctx, zero_bandwidths *bw, zero_error *err);

} /* extern "C" */

#endif /* ZERO_CUDA_CUH */

/* ======================================================================= */
/*                            IMPLEMENTATION                               */
/* ======================================================================= */
#ifdef ZERO_IMPLEMENTATION
#ifndef ZERO__CUDA_IMPLEMENTED
#define ZERO__CUDA_IMPLEMENTED

#ifndef ZERO__IMPLEMENTED
#error "zero_cuda.cuh: define ZERO_IMPLEMENTATION before including zero.h, not only before zero_cuda.cuh"
#endif

#include <cuda.h> /* the driver's types for the vm_ operations; its functions come through the runtime */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* POSIX: the TCP bootstrap, fork for zero_cuda_launch_local, monotonic clocks */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- >>cuda-alloc: zeroed host tables through zero.h's ZERO_MALLOC ---- */

/* calloc's contract on ZERO_MALLOC: n * size zeroed bytes, NULL when the
   product overflows or memory is short; give it back with ZERO_FREE. */
static void *zero__cuda_calloc(size_t n, size_t size) {
    void *p;
    if (size && n > SIZE_MAX / size) return NULL;
    p = ZERO_MALLOC(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

/* ---- >>cuda-status: CUDA and NCCL failures as zero_error text with a HINT ---- */

static const char *zero__cuda_hint(cudaError_t e) {
    switch (e) {
    case cudaErrorMemoryAllocation:
        return "HINT: the GPU is out of memory: reduce train_micro_batch_size_per_gpu, use a "
               "higher ZeRO stage, or enable offload_optimizer / offload_param "
               "(zero_estimate_memory shows what fits)";
    case cudaErrorNoDevice:
        return "HINT: no CUDA GPU is visible to this process: check nvidia-smi and "
               "CUDA_VISIBLE_DEVICES";
    case cudaErrorInsufficientDriver:
        return "HINT: no NVIDIA driver, or one older than the CUDA runtime this program was "
               "built with: check nvidia-smi (driver version) and CUDA_VISIBLE_DEVICES";
    case cudaErrorInvalidDevice:
        return "HINT: GPU ordinal out of range: check CUDA_VISIBLE_DEVICES and LOCAL_RANK "
               "against the GPUs of this node";
    case cudaErrorNoKernelImageForDevice:
        return "HINT: no code for this GPU's architecture: rebuild with GPU_ARCH (nvcc -arch) "
               "matching it (zero_cuda_build_info() lists what was built)";
    default:
        return NULL;
    }
}

static zero_msg zero__cuda_item(cudaError_t e) {
    switch (e) {
    case cudaErrorMemoryAllocation: return ZERO_MSG_CUDA_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice: return ZERO_MSG_CUDA_NO_DEVICE;
    default: return ZERO_MSG_CUDA_CALL;
    }
}

/* "file:line: what: " with the parts that are present, into buf. */
static const char *zero__cuda_where(char *buf, size_t cap, const char *what, const char *file,
                                    int line) {
    size_t n = 0;
    buf[0] = 0;
    if (file && file[0]) n = (size_t)snprintf(buf, cap, "%s:%d: ", file, line);
    if (what && what[0] && n < cap) snprintf(buf + n, cap - n, "%s: ", what);
    return buf;
}

ZERO__DEF zero_result zero_cuda_check(cudaError_t e, const char *what, const char *file, int line,
                                      zero_error *err) {
    char where[512];
    const char *hint;
    if (e == cudaSuccess) {
        zero__ok(err);
        return ZERO_OK;
    }
    hint = zero__cuda_hint(e);
    return zero__fail(err, zero__cuda_item(e), NULL, 0, 0, "%s%s (%s)%s%s",
                      zero__cuda_where(where, sizeof where, what, file, line),
                      cudaGetErrorName(e), cudaGetErrorString(e), hint ? "\n" : "",
                      hint ? hint : "");
}

#ifndef ZERO_NO_NCCL
static const char *zero__nccl_hint(ncclResult_t r) {
    switch (r) {
    case ncclUnhandledCudaError:
        return "HINT: a CUDA call inside NCCL failed: rerun with NCCL_DEBUG=WARN to see which";
    case ncclSystemError:
        return "HINT: a system call or network operation failed: rerun with NCCL_DEBUG=INFO; "
               "check NCCL_SOCKET_IFNAME and, in containers, the size of /dev/shm "
               "(docker --shm-size)";
    case ncclRemoteError:
        return "HINT: another rank or the network failed: look at the other ranks' logs, "
               "rerun with NCCL_DEBUG=INFO";
    default:
        return "HINT: rerun with NCCL_DEBUG=WARN (or INFO) for NCCL's own account";
    }
}

ZERO__DEF zero_result zero_nccl_check(ncclResult_t r, const char *what, const char *file, int line,
                                      zero_error *err) {
    char where[512];
    const char *last = NULL;
    if (r == ncclSuccess) {
        zero__ok(err);
        return ZERO_OK;
    }
#if NCCL_MAJOR > 2 || (NCCL_MAJOR == 2 && NCCL_MINOR >= 13)
    last = ncclGetLastError(NULL);
#endif
    return zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "%sNCCL error %d (%s)%s%s\n%s",
                      zero__cuda_where(where, sizeof where, what, file, line), (int)r,
                      ncclGetErrorString(r), (last && last[0]) ? "\nNCCL: " : "",
                      (last && last[0]) ? last : "", zero__nccl_hint(r));
}
#endif

/* ---- >>cuda-device: device query, build information ---- */

ZERO__DEF zero_result zero_cuda_device_query(int device, zero_cuda_device_info *info,
                                             zero_error *err) {
    cudaDeviceProp prop;
    int count = 0, prev = 0;
    size_t free_bytes = 0, total_bytes = 0;
    zero_result r;
    if (!info)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_cuda_device_query: info is NULL");
    memset(info, 0, sizeof *info);
    info->device = device;
    if (device < 0)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_cuda_device_query: device %d is negative", device);
    ZERO_CUDA_TRY(cudaDriverGetVersion(&info->driver_version), err);
    ZERO_CUDA_TRY(cudaRuntimeGetVersion(&info->runtime_version), err);
#ifndef ZERO_NO_NCCL
    ZERO_NCCL_TRY(ncclGetVersion(&info->nccl_version), err);
#endif
    ZERO_CUDA_TRY(cudaGetDeviceCount(&count), err);
    if (device >= count) {
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        return zero__fail(err, ZERO_MSG_CUDA_NO_DEVICE, NULL, 0, 0,
                          "zero_cuda_device_query: GPU %d asked for, %d visible "
                          "(CUDA_VISIBLE_DEVICES %s%s%s)\n%s",
                          device, count, vis ? "= \"" : "unset", vis ? vis : "", vis ? "\"" : "",
                          zero__cuda_hint(cudaErrorInvalidDevice));
    }
    ZERO_CUDA_TRY(cudaGetDeviceProperties(&prop, device), err);
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->major = prop.major;
    info->minor = prop.minor;
    info->sm_count = prop.multiProcessorCount;
    info->total_bytes = prop.totalGlobalMem;

    ZERO_CUDA_TRY(cudaGetDevice(&prev), err);
    ZERO_CUDA_TRY(cudaSetDevice(device), err);
    r = zero_cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo", __FILE__,
                        __LINE__, err);
    if (prev != device) {
        /* restore even when cudaMemGetInfo failed; report the first failure */
        zero_error restore_err;
        zero_result rr = zero_cuda_check(cudaSetDevice(prev), "cudaSetDevice(previous device)",
                                         __FILE__, __LINE__, err ? &restore_err : NULL);
        if (r == ZERO_OK && rr != ZERO_OK) {
            if (err) *err = restore_err;
            r = rr;
        }
    }
    if (r != ZERO_OK) return r;
    info->free_bytes = free_bytes;
    if (total_bytes > 0) info->total_bytes = total_bytes;
    zero__ok(err);
    return ZERO_OK;
}

/* Median of n doubles (sorts them). */
static double zero__cuda_median(double *v, int n) {
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

ZERO__DEF zero_result zero_cuda_pcie_bandwidth(size_t bytes, int reps, zero_bandwidths *bw, zero_error *err) {
    return zero_cuda_pcie_bandwidth_ready(bytes, reps, NULL, NULL, bw, err);
}

ZERO__DEF zero_result zero_cuda_pcie_bandwidth_ready(size_t bytes, int reps, zero_result (*ready)(void *ctx, zero_error *err),
                                                     void *ctx, zero_bandwidths *bw, zero_error *err) {
    static const char fn[] = "zero_cuda_pcie_bandwidth";
    void *h[2] = {NULL, NULL}, *d[2] = {NULL, NULL};
    cudaStream_t s[2] = {NULL, NULL};
    cudaEvent_t ev[4] = {NULL, NULL, NULL, NULL};
    double *ms = NULL;
    zero_result r = ZERO_OK;
    int i, k;
    if (!bw) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "%s: bw is NULL", fn);
    if (bytes < ((size_t)1 << 20) || bytes > ((size_t)1 << 34) || reps < 1 || reps > 1000)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "%s: bytes %zu, reps %d: bytes from 1 MiB to 16 GiB, reps from 1 to 1000",
                          fn, bytes, reps);
    ms = (double *)ZERO_MALLOC(sizeof(double) * 3 * (size_t)reps);
    if (!ms) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s: %d timings", fn, reps);
#define ZERO__PCIE_TRY(call) \
    if (r == ZERO_OK) r = zero_cuda_check((call), #call, __FILE__, __LINE__, err)
    for (i = 0; i < 2; i++) {
        ZERO__PCIE_TRY(cudaHostAlloc(&h[i], bytes, cudaHostAllocDefault));
        ZERO__PCIE_TRY(cudaMalloc(&d[i], bytes));
        ZERO__PCIE_TRY(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    }
    for (i = 0; i < 4; i++) ZERO__PCIE_TRY(cudaEventCreate(&ev[i]));
    if (r == ZERO_OK) { /* not zeros: the copies move real data */
        memset(h[0], 0x5A, bytes);
        memset(h[1], 0xA5, bytes);
    }
    ZERO__PCIE_TRY(cudaMemsetAsync(d[0], 0x3C, bytes, s[0]));
    ZERO__PCIE_TRY(cudaMemsetAsync(d[1], 0xC3, bytes, s[0]));
    ZERO__PCIE_TRY(cudaStreamSynchronize(s[0]));
    if (r == ZERO_OK && ready) r = ready(ctx, err); /* (its error is its own: it fills err) */
    for (k = -1; k < reps && r == ZERO_OK; k++) {
        float t[3] = {0, 0, 0};
        /* to the device alone */
        ZERO__PCIE_TRY(cudaEventRecord(ev[0], s[0]));
        ZERO__PCIE_TRY(cudaMemcpyAsync(d[0], h[0], bytes, cudaMemcpyHostToDevice, s[0]));
        ZERO__PCIE_TRY(cudaEventRecord(ev[1], s[0]));
        ZERO__PCIE_TRY(cudaEventSynchronize(ev[1]));
        ZERO__PCIE_TRY(cudaEventElapsedTime(&t[0], ev[0], ev[1]));
        /* to the host alone */
        ZERO__PCIE_TRY(cudaEventRecord(ev[0], s[1]));
        ZERO__PCIE_TRY(cudaMemcpyAsync(h[1], d[1], bytes, cudaMemcpyDeviceToHost, s[1]));
        ZERO__PCIE_TRY(cudaEventRecord(ev[1], s[1]));
        ZERO__PCIE_TRY(cudaEventSynchronize(ev[1]));
        ZERO__PCIE_TRY(cudaEventElapsedTime(&t[1], ev[0], ev[1]));
        /* both at once: from a common start to the later end */
        ZERO__PCIE_TRY(cudaEventRecord(ev[0], s[0]));
        ZERO__PCIE_TRY(cudaStreamWaitEvent(s[1], ev[0], 0));
        ZERO__PCIE_TRY(cudaMemcpyAsync(d[0], h[0], bytes, cudaMemcpyHostToDevice, s[0]));
        ZERO__PCIE_TRY(cudaMemcpyAsync(h[1], d[1], bytes, cudaMemcpyDeviceToHost, s[1]));
        ZERO__PCIE_TRY(cudaEventRecord(ev[2], s[1]));
        ZERO__PCIE_TRY(cudaStreamWaitEvent(s[0], ev[2], 0));
        ZERO__PCIE_TRY(cudaEventRecord(ev[3], s[0]));
        ZERO__PCIE_TRY(cudaEventSynchronize(ev[3]));
        ZERO__PCIE_TRY(cudaEventElapsedTime(&t[2], ev[0], ev[3]));
        if (k >= 0)
            for (i = 0; i < 3; i++) ms[i * reps + k] = t[i];
    }
    if (r == ZERO_OK) {
        double m[3];
        for (i = 0; i < 3; i++) m[i] = zero__cuda_median(ms + (size_t)i * reps, reps);
        if (!(m[0] > 0 && m[1] > 0 && m[2] > 0)) {
            r = zero__fail(err, ZERO_MSG_CUDA_CALL, NULL, 0, 0, "%s: a copy of %zu bytes timed %.4g / %.4g / %.4g ms", fn,
                           bytes, m[0], m[1], m[2]);
        } else {
            bw->h2d = (double)bytes / (m[0] * 1e-3);
            bw->d2h = (double)bytes / (m[1] * 1e-3);
            bw->duplex = 2.0 * (double)bytes / (m[2] * 1e-3);
        }
    }
#undef ZERO__PCIE_TRY
    for (i = 0; i < 4; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
    for (i = 0; i < 2; i++) {
        if (s[i]) cudaStreamDestroy(s[i]);
        if (d[i]) cudaFree(d[i]);
        if (h[i]) cudaFreeHost(h[i]);
    }
    ZERO_FREE(ms);
    if (r == ZERO_OK) zero__ok(err);
    return r;
}

ZERO__DEF const char *zero_cuda_build_info(void) {
    return "zero " ZERO__STR(ZERO_VERSION_MAJOR) "." ZERO__STR(ZERO_VERSION_MINOR) "."
        ZERO__STR(ZERO_VERSION_PATCH) "; CUDART_VERSION " ZERO__STR(CUDART_VERSION)
#ifndef ZERO_NO_NCCL
        "; NCCL " ZERO__STR(NCCL_MAJOR) "." ZERO__STR(NCCL_MINOR) "."
        ZERO__STR(NCCL_PATCH)
#else
        "; no NCCL"
#endif
#ifdef __CUDA_ARCH_LIST__
        "; __CUDA_ARCH_LIST__ " ZERO__STR(__CUDA_ARCH_LIST__)
#endif
        ;
}

/* ---- >>cuda-kernels: what the kernels compute, how they walk memory, launch geometry ----

   The backend's four element-wise kernels, each computing exactly the function
   of its host backend twin in zero.h (zero__host_scale, _convert, _sumsq, _adam):

     zero__cuda_k_scale    x = round_dt(x * factor)
     zero__cuda_k_convert  dst = round_ddt(src), or round_ddt(dst + src) in fp32
     zero__cuda_k_sumsq    out[0] += sum of squares in double, out[1] flags inf/nan;
                           deterministic (no floating atomics: fixed grid, fixed order)
     zero__cuda_k_adam     the optimizer step over a table of segments, many per launch:
                           DeepSpeed's Adam, or the rule zero_adam_args.kind picks
                           (Lion, Adagrad, SGD; zero.h's zero__opt_range); the
                           state a rule does not keep is neither read nor written.
                           Muon's segments (seg.muon) go to two kernels of their own
                           (zero.h's zero__muon_range): pass 1's momentum and
                           update, and in a call of any rule their step from v.
                           Lamb (zero_adam_args.lamb_pass) has two of its own: pass 1's
                           moments with each segment's sums of p^2 and u^2 (a block's
                           in scratch, added in one fixed order: the same bits every
                           run), pass 2's step by the segment's trust ratio.
                           Storage (zero_adam_args.master_dtype, state_dtype):
                           master and state both fp32 or a bf16 master with fp32
                           state for every rule, both bf16 for every rule but
                           Muon (its state is fp32); loaded widened to fp32,
                           stored rounded as zero.h stores them, each storage its
                           own instantiations: fp32's for every grad and param
                           dtype, the bf16 ones for the engine's bf16 compute
                           alone (grad fp32 or bf16, param none or bf16;
                           zero__cuda_all_dtypes says why)

   and one that is not element-wise, in its own section (>>cuda-muon-ns):

     zero__cuda_k_muon_ns  zero_muon_orthogonalize (zero.h) on the device, to rounding

   Each element-wise kernel is one pass over memory. A thread handles 8 consecutive elements at
   a time with 16-byte loads and stores (two for an fp32 array, one for a 16-bit
   one) wherever every array of the call is 16-byte aligned at the same element;
   the elements before that element (the head) and after the last whole group of 8
   (the tail) go one at a time, as does a whole range whose arrays have no common
   alignment. Indices are size_t throughout (ranges beyond 2^31 elements), loops
   are grid-stride, and launches are asynchronous on the caller's stream.

   The fp32 arithmetic uses the _rn intrinsics, one rounding per operation in
   the host backend's order: nvcc may not fuse a multiply and an add into an FMA
   here (the rules whose reference calls fmaf use __fmaf_rn exactly there, and
   copysignf is exact), and -use_fast_math does not change the results, so a kernel and the host
   backend agree bit for bit on the same inputs (as long as the host compiler does
   not contract either: x86-64 without -mfma does not). Conversions to fp16/bf16
   round to nearest even (__float2half_rn semantics; bf16 as zero.h's
   zero_f32_to_bf16, bit for bit: zero__cuda_bf16_bits). */

#define ZERO__CUDA_THREADS 256       /* threads per block of every kernel here */
#define ZERO__CUDA_VEC 8             /* elements per thread per step: 16 bytes of 16-bit data */
#define ZERO__CUDA_SUMSQ_BLOCKS 1024 /* most blocks of one sumsq launch */
/* Segments per launch of the multi-segment kernels (Adam, sumsq_segs), whose
   tables go by value in the launch's parameters: 4 KiB of them before CUDA
   12.1, 32 KiB since (Volta and later). */
#ifndef ZERO__CUDA_SEG_BATCH
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12010
#define ZERO__CUDA_SEG_BATCH 128
#else
#define ZERO__CUDA_SEG_BATCH 32
#endif
#endif
#define ZERO__CUDA_ADAM_BATCH ZERO__CUDA_SEG_BATCH  /* segments per Adam launch */
#define ZERO__CUDA_SUMSQ_BATCH ZERO__CUDA_SEG_BATCH /* segments per sumsq_segs launch */
/* Doubles of device scratch zero__cuda_k_sumsq and zero__cuda_k_sumsq_segs
   need (one partial sum per block, ZERO__CUDA_SUMSQ_BLOCKS at most per
   segment). A segment's grid depends only on its n and alignment, never on
   the GPU or on the other segments of its launch, so its sum is the same on
   every device and in either call. */
#define ZERO__CUDA_SUMSQ_SCRATCH (ZERO__CUDA_SUMSQ_BLOCKS * ZERO__CUDA_SUMSQ_BATCH)

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

/* ---- >>cuda-kernel-io: element access in kernels ---- */

struct zero__cuda_none {}; /* a param type that is never written */
template <typename P> struct zero__cuda_is_none { static const bool value = false; };
template <> struct zero__cuda_is_none<zero__cuda_none> { static const bool value = true; };
/* A state array's type: S (its storage, float or __nv_bfloat16) where the rule keeps it, else none. */
template <bool KEPT, typename S> struct zero__cuda_state { typedef S T; };
template <typename S> struct zero__cuda_state<false, S> { typedef zero__cuda_none T; };

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
    static __device__ __forceinline__ float stored(float x) { return x; } /* what st then ld give back */
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

/* x rounded to bf16 (the low 16 bits) as zero.h's zero_f32_to_bf16 does it,
   bit for bit: to nearest even, a NaN kept quiet with its sign and top payload
   bits (cvt.rn.bf16.f32, behind __float2bfloat16_rn, gives the canonical NaN:
   a bf16 master or moment would differ from the host backend's). */
static __device__ __forceinline__ unsigned zero__cuda_bf16_bits(float x) {
    const unsigned u = __float_as_uint(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x0040u;
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

template <> struct zero__cuda_io<__nv_bfloat16> {
    static __device__ __forceinline__ float ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
    static __device__ __forceinline__ void st(__nv_bfloat16 *p, float x) {
        *p = __ushort_as_bfloat16((unsigned short)zero__cuda_bf16_bits(x));
    }
    static __device__ __forceinline__ float stored(float x) { return __uint_as_float(zero__cuda_bf16_bits(x) << 16); }
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
        for (int k = 0; k < 4; k++) w[k] = zero__cuda_bf16_bits(f[2 * k]) | zero__cuda_bf16_bits(f[2 * k + 1]) << 16;
        zero__cuda_st16<CS>(p, make_uint4(w[0], w[1], w[2], w[3]));
    }
};

/* A state the rule does not keep, or no param: nothing loaded (0) or stored. */
template <> struct zero__cuda_io<zero__cuda_none> {
    static __device__ __forceinline__ float ld(const zero__cuda_none *) { return 0.0f; }
    template <bool CS = false> static __device__ __forceinline__ void ld8(const zero__cuda_none *, float *f) {
#pragma unroll
        for (int k = 0; k < ZERO__CUDA_VEC; k++) f[k] = 0.0f;
    }
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

/* Sum over the block, in a fixed order; the result is valid in thread 0.
   Every thread of the block calls it. Its warp sums are one __shared__ array
   for every call in a kernel, so it ends with a barrier: without it a second
   call (Lamb's sums of p^2, then of u^2) had its warps' lane 0 overwrite the
   array while warp 0 still read the first call's sums (compute-sanitizer's
   racecheck, and a wrong Lamb trust ratio now and then). */
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
    __syncthreads();
    return v;
}

/* ---- >>cuda-kernel-code: the __global__ kernels and the Adam launch's parameters ---- */

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

/* sumsq_segs: segment k of a launch owns blocks [block_end[k-1], block_end[k])
   and partials at the same indices; its blocks walk it exactly as a sumsq
   launch of that many blocks does. */
struct zero__cuda_sq_kseg {
    const void *x;
    double *out;
    size_t n, head, nv;
};
struct zero__cuda_sq_batch {
    int n_segs;
    unsigned block_end[ZERO__CUDA_SUMSQ_BATCH];
    zero__cuda_sq_kseg seg[ZERO__CUDA_SUMSQ_BATCH];
};

static __device__ __forceinline__ int zero__cuda_seg_of(const unsigned *block_end, int n_segs, unsigned b) {
    int lo = 0, hi = n_segs - 1; /* the first k with b < block_end[k] */
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (b < block_end[mid]) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* Where thread threadIdx.x of block blockIdx.x of a multi-segment launch
   works: its segment k (the blocks [block_end[k-1], block_end[k])), its
   start t in the segment's walk and the walk's stride (the segment's blocks
   x blockDim.x): each segment walked as one launch of that many blocks. */
struct zero__cuda_seg_walk {
    int k;
    size_t t, stride;
};
static __device__ __forceinline__ zero__cuda_seg_walk zero__cuda_walk(const unsigned *block_end, int n_segs) {
    zero__cuda_seg_walk w;
    w.k = zero__cuda_seg_of(block_end, n_segs, blockIdx.x);
    const unsigned first = w.k ? block_end[w.k - 1] : 0u;
    w.t = (size_t)(blockIdx.x - first) * blockDim.x + threadIdx.x;
    w.stride = (size_t)(block_end[w.k] - first) * blockDim.x;
    return w;
}

template <typename T>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_sumsq_segs_kernel(const __grid_constant__ zero__cuda_sq_batch b, double *partial) {
    typedef zero__cuda_io<T> io;
    const zero__cuda_seg_walk w = zero__cuda_walk(b.block_end, b.n_segs);
    const zero__cuda_sq_kseg &sg = b.seg[w.k];
    const T *x = (const T *)sg.x;
    const size_t t = w.t, stride = w.stride;
    double acc = 0.0;
    zero__cuda_for_range(
        sg.n, sg.head, sg.nv, t, stride,
        [&](size_t i) {
            float f[ZERO__CUDA_VEC];
            io::ld8(x + i, f);
#pragma unroll
            for (int e = 0; e < ZERO__CUDA_VEC; e++) acc += (double)f[e] * (double)f[e];
        },
        [&](size_t i) {
            const double v = (double)io::ld(x + i);
            acc += v * v;
        });
    acc = zero__cuda_block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

/* Block k finishes segment k as zero__cuda_sumsq_finish_kernel does. */
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_sumsq_segs_finish_kernel(const __grid_constant__ zero__cuda_sq_batch b, const double *partial) {
    const int k = blockIdx.x;
    const unsigned first = k ? b.block_end[k - 1] : 0u, n_partial = b.block_end[k] - first;
    double acc = 0.0;
    for (unsigned i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[first + i];
    acc = zero__cuda_block_sum(acc);
    if (threadIdx.x == 0) {
        double *out = b.seg[k].out;
        out[0] += acc;
        if (!isfinite(acc) && !(out[1] >= 1.0)) out[1] = 1.0;
    }
}

/* What every segment of one optimizer launch shares: the hyperparameters of
   its rule (zero__cuda_common_of zeroes those the rule does not read, so two
   calls share a launch exactly when these bytes are equal). damp = 1 -
   dampening, as the host backend computes it. */
struct zero__cuda_adam_common {
    float beta1, beta2, omb1, omb2, eps, bc2, grad_scale, momentum, damp;
    int adamw, nesterov, first, kind;
    int lamb_pass, eps_inside; /* Lamb: its pass (1, 2) and eps under the square root */
};

/* One segment as the kernel walks it: n elements from each buffer pointer
   (its call's buffers at the segment's offset; a state the rule keeps none of
   is NULL), planned as in zero__cuda_for_range; step and decay the rule's
   per-segment constants as the host backend computes them (zero__cuda_seg_consts):
   Adam -lr / bc1 and -lr wd, Lion lr and 1 - lr wd, Adagrad and SGD lr. */
struct zero__cuda_adam_kseg {
    void *master, *m, *v; /* their call's master_dtype, state_dtype */
    const void *grad;
    void *param;
    size_t n, head, nv;
    float step, decay, wd;
    double *sums;       /* Lamb pass 1: its segment's sums of p^2 and u^2 (added to) */
    const float *ratio; /* Lamb pass 2: its segment's trust ratio (device memory) */
};

/* A launch's segments; segment k owns blocks [block_end[k-1], block_end[k]). */
struct zero__cuda_adam_batch {
    int n_segs;
    unsigned block_end[ZERO__CUDA_ADAM_BATCH];
    zero__cuda_adam_kseg seg[ZERO__CUDA_ADAM_BATCH];
};

/* The rules, one element each: the host backend's zero__opt_range (Adam:
   zero__adam_range) operation by operation in its order, g already multiplied
   by grad_scale, p, m and v loaded widened to fp32. keeps_m, keeps_v: whether
   the rule keeps that state (else the kernel neither loads nor stores it:
   zero__cuda_state; its value here is 0 and unused). */
struct zero__cuda_rule_adam {
    static constexpr bool keeps_m = true, keeps_v = true;
    static __device__ __forceinline__ void one(const zero__cuda_adam_common &c, float wd, float step, float decay,
                                               float &p, float &m, float &v, float g) {
        if (!c.adamw && wd != 0.0f) g = __fadd_rn(__fmul_rn(p, wd), g);
        m = __fmul_rn(m, c.beta1);
        m = __fadd_rn(__fmul_rn(g, c.omb1), m);
        v = __fmul_rn(v, c.beta2);
        v = __fadd_rn(__fmul_rn(__fmul_rn(g, g), c.omb2), v);
        const float d = __fadd_rn(__fmul_rn(__fsqrt_rn(v), c.bc2), c.eps);
        if (c.adamw && wd != 0.0f) p = __fadd_rn(__fmul_rn(decay, p), p);
        p = __fadd_rn(__fmul_rn(__fdiv_rn(m, d), step), p);
    }
};

/* step = lr, decay = 1 - lr wd. */
struct zero__cuda_rule_lion {
    static constexpr bool keeps_m = true, keeps_v = false;
    static __device__ __forceinline__ void one(const zero__cuda_adam_common &c, float wd, float step, float decay,
                                               float &p, float &m, float &, float g) {
        const float u = -copysignf(step, __fmaf_rn(g, c.omb1, __fmul_rn(m, c.beta1)));
        p = wd > 0.0f ? __fmaf_rn(p, decay, u) : __fadd_rn(p, u);
        m = __fmaf_rn(g, c.omb2, __fmul_rn(m, c.beta2));
    }
};

/* step = lr. */
struct zero__cuda_rule_adagrad {
    static constexpr bool keeps_m = false, keeps_v = true;
    static __device__ __forceinline__ void one(const zero__cuda_adam_common &c, float wd, float step, float, float &p,
                                               float &, float &v, float g) {
        if (wd > 0.0f) g = __fmaf_rn(p, wd, g);
        v = __fmaf_rn(g, g, v);
        p = __fmaf_rn(__fdiv_rn(g, __fadd_rn(__fsqrt_rn(v), c.eps)), -step, p);
    }
};

/* step = lr; MOM: momentum != 0 (a momentum buffer in m). */
template <bool MOM> struct zero__cuda_rule_sgd {
    static constexpr bool keeps_m = MOM, keeps_v = false;
    static __device__ __forceinline__ void one(const zero__cuda_adam_common &c, float wd, float step, float, float &p,
                                               float &m, float &, float g) {
        float d = wd != 0.0f ? __fadd_rn(g, __fmul_rn(wd, p)) : g;
        if (MOM) {
            m = c.first ? d : __fadd_rn(__fmul_rn(c.momentum, m), __fmul_rn(c.damp, d));
            d = c.nesterov ? __fadd_rn(d, __fmul_rn(c.momentum, m)) : m;
        }
        p = __fsub_rn(p, __fmul_rn(step, d));
    }
};

/* U groups of 8 elements at idx[0..U): every load first, then the math, then
   every store (loads cannot move past stores to other buffers by themselves). */
template <typename R, int U, typename W, typename M, typename V, typename G, typename P>
static __device__ __forceinline__ void zero__cuda_adam_groups(const zero__cuda_adam_common &c, float wd, float step,
                                                              float decay, W *master, M *mm, V *vv, const G *grad,
                                                              P *param, const size_t *idx) {
    constexpr bool cs = ZERO__CUDA_ADAM_STREAMING != 0;
    typedef zero__cuda_io<W> wio;
    typedef zero__cuda_io<M> mio;
    typedef zero__cuda_io<V> vio;
    float p[U][ZERO__CUDA_VEC], m[U][ZERO__CUDA_VEC], v[U][ZERO__CUDA_VEC], g[U][ZERO__CUDA_VEC];
#pragma unroll
    for (int u = 0; u < U; u++) {
        wio::template ld8<cs>(master + idx[u], p[u]);
        mio::template ld8<cs>(mm + idx[u], m[u]);
        vio::template ld8<cs>(vv + idx[u], v[u]);
        zero__cuda_io<G>::template ld8<cs>(grad + idx[u], g[u]);
    }
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int e = 0; e < ZERO__CUDA_VEC; e++)
            R::one(c, wd, step, decay, p[u][e], m[u][e], v[u][e], __fmul_rn(g[u][e], c.grad_scale));
#pragma unroll
    for (int u = 0; u < U; u++) {
        wio::template st8<cs>(master + idx[u], p[u]);
        mio::template st8<cs>(mm + idx[u], m[u]);
        vio::template st8<cs>(vv + idx[u], v[u]);
        zero__cuda_io<P>::template st8<cs>(param + idx[u], p[u]);
    }
}

/* Both parameters by value in the launch (__grid_constant__: read in place from
   the parameter space, never copied to local memory). R: the rule
   (zero__cuda_rule_*); W: the master's type (float or __nv_bfloat16); M, V:
   m's and v's (zero__cuda_state: the storage where the rule keeps them, a
   state it does not keep zero__cuda_none, so that the storage choices it
   ignores share one instantiation); P: the param type, or zero__cuda_none
   when no compute-dtype copy is written. The walk is zero__cuda_for_range's,
   ZERO__CUDA_ADAM_UNROLL strides at a time. */
template <typename R, typename W, typename M, typename V, typename G, typename P>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_adam_kernel(const __grid_constant__ zero__cuda_adam_common c,
                       const __grid_constant__ zero__cuda_adam_batch b) {
    typedef zero__cuda_io<W> wio;
    typedef zero__cuda_io<M> mio;
    typedef zero__cuda_io<V> vio;
    typedef zero__cuda_io<G> gio;
    typedef zero__cuda_io<P> pio;
    const zero__cuda_seg_walk w = zero__cuda_walk(b.block_end, b.n_segs);
    const zero__cuda_adam_kseg &sg = b.seg[w.k];
    const size_t t = w.t, stride = w.stride;
    const float wd = sg.wd, step = sg.step, decay = sg.decay;
    W *master = (W *)sg.master;
    M *mm = (M *)sg.m;
    V *vv = (V *)sg.v;
    const G *grad = (const G *)sg.grad;
    P *param = (P *)sg.param;
    const size_t n = sg.n, head = sg.head, nv = sg.nv, body = ZERO__CUDA_VEC * nv, ns = n - body;
    size_t j = t;
#if ZERO__CUDA_ADAM_UNROLL > 1
    for (; j + stride < nv; j += 2 * stride) {
        const size_t idx[2] = {head + ZERO__CUDA_VEC * j, head + ZERO__CUDA_VEC * (j + stride)};
        zero__cuda_adam_groups<R, 2>(c, wd, step, decay, master, mm, vv, grad, param, idx);
    }
#endif
    for (; j < nv; j += stride) {
        const size_t idx[1] = {head + ZERO__CUDA_VEC * j};
        zero__cuda_adam_groups<R, 1>(c, wd, step, decay, master, mm, vv, grad, param, idx);
    }
    for (size_t e = t; e < ns; e += stride) {
        const size_t i = e < head ? e : e + body;
        float p = wio::ld(master + i), m = mio::ld(mm + i), v = vio::ld(vv + i);
        R::one(c, wd, step, decay, p, m, v, __fmul_rn(gio::ld(grad + i), c.grad_scale));
        wio::st(master + i, p);
        mio::st(mm + i, m);
        vio::st(vv + i, v);
        pio::st(param + i, p);
    }
}

/* Muon's two element-wise parts (zero.h's zero__muon_range), one element
   each, fp32 with one rounding per operation as there. Pass 1, g already
   times grad_scale, c.omb1 = 1 - momentum: the momentum into m, the update to
   orthogonalise into v. */
static __device__ __forceinline__ void zero__cuda_muon_mom(const zero__cuda_adam_common &c, float &m, float &v,
                                                           float g) {
    m = __fmaf_rn(__fsub_rn(g, m), c.omb1, m);
    v = c.nesterov ? __fmaf_rn(__fsub_rn(g, m), c.omb1, m) : m;
}
/* The step from the orthogonalised update v: step = lr, decay = 1 - lr wd
   (one rounded product, one rounded difference, as zero.h's). */
static __device__ __forceinline__ float zero__cuda_muon_step(float p, float v, float wd, float step, float decay) {
    return wd > 0.0f ? __fmaf_rn(-step, v, __fmul_rn(p, decay)) : __fmaf_rn(-step, v, p);
}

/* A batch of Muon's segments (zero__cuda_adam_batch, as the fused kernel takes
   it), pass 1: each segment's m, v (fp32: zero__pass_misuse refuses Muon's
   segments on bf16 state) and grad (G its type); master and param are not
   touched. Not a rule of zero__cuda_adam_kernel: these two kernels take 3 +
   6 instantiations (the step's 4 on an fp32 master, 2 on a bf16 one:
   zero__cuda_all_dtypes) where another rule there takes 12 + 4. */
template <typename G>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_muon_mom_kernel(const __grid_constant__ zero__cuda_adam_common c,
                           const __grid_constant__ zero__cuda_adam_batch b) {
    typedef zero__cuda_io<float> fio;
    typedef zero__cuda_io<G> gio;
    const zero__cuda_seg_walk w = zero__cuda_walk(b.block_end, b.n_segs);
    const zero__cuda_adam_kseg &sg = b.seg[w.k];
    const size_t t = w.t, stride = w.stride;
    float *mm = (float *)sg.m, *vv = (float *)sg.v;
    const G *grad = (const G *)sg.grad;
    zero__cuda_for_range(
        sg.n, sg.head, sg.nv, t, stride,
        [&](size_t i) {
            float m[ZERO__CUDA_VEC], v[ZERO__CUDA_VEC], g[ZERO__CUDA_VEC];
            fio::ld8(mm + i, m);
            gio::ld8(grad + i, g);
#pragma unroll
            for (int e = 0; e < ZERO__CUDA_VEC; e++) zero__cuda_muon_mom(c, m[e], v[e], __fmul_rn(g[e], c.grad_scale));
            fio::st8(mm + i, m);
            fio::st8(vv + i, v);
        },
        [&](size_t i) {
            float m = mm[i], v;
            zero__cuda_muon_mom(c, m, v, __fmul_rn(gio::ld(grad + i), c.grad_scale));
            mm[i] = m;
            vv[i] = v;
        });
}

/* The step of Muon's segments of a call of any rule: each segment's master
   (W as in zero__cuda_adam_kernel), v (fp32) and param (P likewise); c is
   not read. */
template <typename W, typename P>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_muon_step_kernel(const __grid_constant__ zero__cuda_adam_common c,
                            const __grid_constant__ zero__cuda_adam_batch b) {
    typedef zero__cuda_io<float> fio;
    typedef zero__cuda_io<W> wio;
    typedef zero__cuda_io<P> pio;
    const zero__cuda_seg_walk w = zero__cuda_walk(b.block_end, b.n_segs);
    const zero__cuda_adam_kseg &sg = b.seg[w.k];
    const size_t t = w.t, stride = w.stride;
    const float wd = sg.wd, step = sg.step, decay = __fsub_rn(1.0f, __fmul_rn(step, wd));
    W *master = (W *)sg.master;
    const float *vv = (const float *)sg.v;
    P *param = (P *)sg.param;
    (void)c;
    zero__cuda_for_range(
        sg.n, sg.head, sg.nv, t, stride,
        [&](size_t i) {
            float p[ZERO__CUDA_VEC], v[ZERO__CUDA_VEC];
            wio::ld8(master + i, p);
            fio::ld8(vv + i, v);
#pragma unroll
            for (int e = 0; e < ZERO__CUDA_VEC; e++) p[e] = zero__cuda_muon_step(p[e], v[e], wd, step, decay);
            wio::st8(master + i, p);
            pio::st8(param + i, p);
        },
        [&](size_t i) {
            const float p = zero__cuda_muon_step(wio::ld(master + i), vv[i], wd, step, decay);
            wio::st(master + i, p);
            pio::st(param + i, p);
        });
}

/* Lamb (zero.h's zero__lamb_range), one element each, fp32 with one rounding
   per operation in the host's order: u from m, v and p. */
static __device__ __forceinline__ float zero__cuda_lamb_u(const zero__cuda_adam_common &c, float m, float v, float p,
                                                          float wd) {
    const float d = c.eps_inside ? __fsqrt_rn(__fadd_rn(v, c.eps)) : __fadd_rn(__fsqrt_rn(v), c.eps);
    return __fadd_rn(__fdiv_rn(m, d), __fmul_rn(wd, p));
}
/* Pass 1 on one element (g already times grad_scale): the moments, rounded to
   their storage S before u is formed from them (pass 2 loads them so and
   forms the same u), and the squares of p and u added to the thread's double
   sums. */
template <typename S>
static __device__ __forceinline__ void zero__cuda_lamb_mom(const zero__cuda_adam_common &c, float wd, float p, float &m,
                                                           float &v, float g, double &sp, double &su) {
    m = zero__cuda_io<S>::stored(__fadd_rn(__fmul_rn(c.beta1, m), __fmul_rn(c.omb1, g)));
    v = zero__cuda_io<S>::stored(__fadd_rn(__fmul_rn(c.beta2, v), __fmul_rn(__fmul_rn(c.omb2, g), g)));
    const float u = zero__cuda_lamb_u(c, m, v, p, wd);
    sp += (double)p * (double)p;
    su += (double)u * (double)u;
}

/* Lamb's pass 1 over a batch (zero__cuda_adam_batch): each segment's master
   (W its type), m and v (S) and grad (G); each block's sums of p^2 and u^2
   into partial[2 b], [2 b + 1] (zero__cuda_lamb_finish_kernel adds them up).
   Like Muon's, not a rule of the fused kernel (3 + 4 instantiations on fp32
   storage instead of 12; 2 + 2 on each bf16 one: zero__cuda_all_dtypes). */
template <typename W, typename S, typename G>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_lamb_mom_kernel(const __grid_constant__ zero__cuda_adam_common c,
                           const __grid_constant__ zero__cuda_adam_batch b, double *partial) {
    typedef zero__cuda_io<W> wio;
    typedef zero__cuda_io<S> sio;
    typedef zero__cuda_io<G> gio;
    const zero__cuda_seg_walk w = zero__cuda_walk(b.block_end, b.n_segs);
    const zero__cuda_adam_kseg &sg = b.seg[w.k];
    const size_t t = w.t, stride = w.stride;
    const float wd = sg.wd;
    const W *master = (const W *)sg.master;
    S *mm = (S *)sg.m, *vv = (S *)sg.v;
    const G *grad = (const G *)sg.grad;
    double sp = 0.0, su = 0.0;
    zero__cuda_for_range(
        sg.n, sg.head, sg.nv, t, stride,
        [&](size_t i) {
            float p[ZERO__CUDA_VEC], m[ZERO__CUDA_VEC], v[ZERO__CUDA_VEC], g[ZERO__CUDA_VEC];
            wio::ld8(master + i, p);
            sio::ld8(mm + i, m);
            sio::ld8(vv + i, v);
            gio::ld8(grad + i, g);
#pragma unroll
            for (int e = 0; e < ZERO__CUDA_VEC; e++)
                zero__cuda_lamb_mom<S>(c, wd, p[e], m[e], v[e], __fmul_rn(g[e], c.grad_scale), sp, su);
            sio::st8(mm + i, m);
            sio::st8(vv + i, v);
        },
        [&](size_t i) {
            float m = sio::ld(mm + i), v = sio::ld(vv + i);
            zero__cuda_lamb_mom<S>(c, wd, wio::ld(master + i), m, v, __fmul_rn(gio::ld(grad + i), c.grad_scale), sp, su);
            sio::st(mm + i, m);
            sio::st(vv + i, v);
        });
    sp = zero__cuda_block_sum(sp);
    su = zero__cuda_block_sum(su);
    if (threadIdx.x == 0) partial[2 * (size_t)blockIdx.x] = sp, partial[2 * (size_t)blockIdx.x + 1] = su;
}

/* Block k: segment k's partial sums added in one fixed order, then to its sums. */
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_lamb_finish_kernel(const __grid_constant__ zero__cuda_adam_batch b, const double *partial) {
    const int k = blockIdx.x;
    const unsigned first = k ? b.block_end[k - 1] : 0u;
    double sp = 0.0, su = 0.0;
    for (unsigned i = first + threadIdx.x; i < b.block_end[k]; i += blockDim.x)
        sp += partial[2 * (size_t)i], su += partial[2 * (size_t)i + 1];
    sp = zero__cuda_block_sum(sp);
    su = zero__cuda_block_sum(su);
    if (threadIdx.x == 0) b.seg[k].sums[0] += sp, b.seg[k].sums[1] += su;
}

/* Lamb's pass 2 (the step) over a batch: master (W), m and v (S; read only)
   and param (P as in zero__cuda_adam_kernel); step = lr / (bc1 bc2), times
   the segment's ratio. */
template <typename W, typename S, typename P>
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_lamb_step_kernel(const __grid_constant__ zero__cuda_adam_common c,
                            const __grid_constant__ zero__cuda_adam_batch b) {
    typedef zero__cuda_io<W> wio;
    typedef zero__cuda_io<S> sio;
    typedef zero__cuda_io<P> pio;
    const zero__cuda_seg_walk w = zero__cuda_walk(b.block_end, b.n_segs);
    const zero__cuda_adam_kseg &sg = b.seg[w.k];
    const size_t t = w.t, stride = w.stride;
    const float wd = sg.wd, coef = __fmul_rn(sg.step, *sg.ratio);
    W *master = (W *)sg.master;
    const S *mm = (const S *)sg.m, *vv = (const S *)sg.v;
    P *param = (P *)sg.param;
    zero__cuda_for_range(
        sg.n, sg.head, sg.nv, t, stride,
        [&](size_t i) {
            float p[ZERO__CUDA_VEC], m[ZERO__CUDA_VEC], v[ZERO__CUDA_VEC];
            wio::ld8(master + i, p);
            sio::ld8(mm + i, m);
            sio::ld8(vv + i, v);
#pragma unroll
            for (int e = 0; e < ZERO__CUDA_VEC; e++) p[e] = __fsub_rn(p[e], __fmul_rn(coef, zero__cuda_lamb_u(c, m[e], v[e], p[e], wd)));
            wio::st8(master + i, p);
            pio::st8(param + i, p);
        },
        [&](size_t i) {
            const float p0 = wio::ld(master + i);
            const float p = __fsub_rn(p0, __fmul_rn(coef, zero__cuda_lamb_u(c, sio::ld(mm + i), sio::ld(vv + i), p0, wd)));
            wio::st(master + i, p);
            pio::st(param + i, p);
        });
}

/* ---- >>cuda-kernel-launch: host entry points that check, plan and launch ---- */

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

/* sumsq_segs: ZERO__CUDA_SUMSQ_BATCH segments per pair of launches (partial
   sums, then one block per segment adds its own); a segment gets the blocks
   zero__cuda_k_sumsq would give it, so its bits are that call's. */
template <typename T>
static zero_result zero__cuda_sumsq_segs_run(const zero_sumsq_seg *segs, int n_segs, double *scratch,
                                             size_t scratch_doubles, cudaStream_t s, zero_error *err) {
    const size_t size[1] = {sizeof(T)};
    zero__cuda_sq_batch b;
    unsigned total = 0;
    int k;
    zero_result r;
    memset(&b, 0, sizeof b);
    for (k = 0; k < n_segs; k++) {
        if (segs[k].count > 0) {
            zero__cuda_sq_kseg *q = &b.seg[b.n_segs];
            const void *arrays[1] = {segs[k].x};
            q->x = segs[k].x;
            q->out = segs[k].out;
            q->n = (size_t)segs[k].count;
            zero__cuda_plan(arrays, size, 1, q->n, &q->head, &q->nv);
            total += zero__cuda_blocks(q->n, q->nv, ZERO__CUDA_SUMSQ_BLOCKS);
            b.block_end[b.n_segs++] = total;
        }
        if (b.n_segs == ZERO__CUDA_SUMSQ_BATCH || (k + 1 == n_segs && b.n_segs > 0)) {
            if (!scratch || scratch_doubles < total)
                return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                                  "cuda sumsq_segs: scratch of %zu doubles at %p, %u needed (ZERO__CUDA_SUMSQ_SCRATCH)",
                                  scratch_doubles, (void *)scratch, total);
            zero__cuda_sumsq_segs_kernel<T><<<total, ZERO__CUDA_THREADS, 0, s>>>(b, scratch);
            if ((r = zero__cuda_launched("zero__cuda_sumsq_segs_kernel (sumsq_segs)", err)) != ZERO_OK) return r;
            zero__cuda_sumsq_segs_finish_kernel<<<(unsigned)b.n_segs, ZERO__CUDA_THREADS, 0, s>>>(b, scratch);
            if ((r = zero__cuda_launched("zero__cuda_sumsq_segs_finish_kernel (sumsq_segs)", err)) != ZERO_OK) return r;
            memset(&b, 0, sizeof b);
            total = 0;
        }
    }
    zero__ok(err);
    return ZERO_OK;
}

/* Every segment's result is zero__cuda_k_sumsq's on it (the same bits); the
   outs must be distinct (their segments' blocks run at once). scratch as for
   zero__cuda_k_sumsq. */
static ZERO__UNUSED zero_result zero__cuda_k_sumsq_segs(const zero_sumsq_seg *segs, int n_segs, zero_dtype dt,
                                                        double *scratch, size_t scratch_doubles, cudaStream_t s,
                                                        zero_error *err) {
    zero_result r;
    int k;
    if (n_segs < 0 || (n_segs > 0 && !segs))
        return zero__fail(err, n_segs < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, NULL, 0, 0,
                          "cuda sumsq_segs: %d segments at %p", n_segs, (const void *)segs);
    for (k = 0; k < n_segs; k++) {
        if (segs[k].count < 0)
            return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda sumsq_segs: segment %d has count %lld", k,
                              (long long)segs[k].count);
        if ((r = zero__cuda_check_arg("sumsq_segs", "x", segs[k].x, (size_t)segs[k].count, dt, err)) != ZERO_OK) return r;
        if (segs[k].count > 0 && !segs[k].out)
            return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda sumsq_segs: segment %d's out is NULL", k);
    }
    switch (dt) {
    case ZERO_DTYPE_FP16: return zero__cuda_sumsq_segs_run<__half>(segs, n_segs, scratch, scratch_doubles, s, err);
    case ZERO_DTYPE_BF16: return zero__cuda_sumsq_segs_run<__nv_bfloat16>(segs, n_segs, scratch, scratch_doubles, s, err);
    default: return zero__cuda_sumsq_segs_run<float>(segs, n_segs, scratch, scratch_doubles, s, err);
    }
}

/* Segment sg's constants for rule kind, as the host backend computes them. */
static void zero__cuda_seg_consts(const zero_adam_args *a, const zero_adam_seg *sg, zero__cuda_adam_kseg *q) {
    q->wd = sg->weight_decay;
    q->step = sg->lr;
    q->decay = 0.0f;
    if (a->kind == ZERO_OPTIMIZER_LION) q->decay = 1.0f - sg->lr * sg->weight_decay;
    else if (a->kind != ZERO_OPTIMIZER_ADAGRAD && a->kind != ZERO_OPTIMIZER_SGD) {
        q->step = -sg->lr / a->bc1;
        q->decay = -sg->lr * sg->weight_decay;
    }
}

/* Launches kernel over batch b (blocks [0, *total)), then empties it. */
template <typename K>
static zero_result zero__cuda_batch_flush(K kernel, const char *name, const zero__cuda_adam_common &c,
                                          zero__cuda_adam_batch *b, unsigned *total, cudaStream_t s, zero_error *err) {
    if (!b->n_segs) return ZERO_OK;
    kernel<<<*total, ZERO__CUDA_THREADS, 0, s>>>(c, *b);
    memset(b, 0, sizeof *b);
    *total = 0;
    return zero__cuda_launched(name, err);
}

/* Whether calls a[0..n) have a non-empty segment with seg.muon == muon. */
static int zero__cuda_has_segs(const zero_adam_args *a, int n, int muon) {
    int i, k;
    for (i = 0; i < n; i++)
        for (k = 0; k < a[i].n_segs; k++)
            if (a[i].segs[k].count > 0 && !a[i].segs[k].muon == !muon) return 1;
    return 0;
}

/* One launch per ZERO__CUDA_ADAM_BATCH non-empty segments, taken from the
   calls a[0..n_calls) in order (they share c, the kernel's types and their
   storage); a segment gets blocks in proportion to its size, at least one and
   at most one full wave of the GPU, so one launch covers many small tensors
   and a large one fills the GPU. Only the arrays the launch touches decide a
   segment's alignment. Muon's segments (seg.muon) are left to
   zero__cuda_muon_run. */
template <typename R, typename W, typename M, typename V, typename G, typename P>
static zero_result zero__cuda_adam_run(const zero_adam_args *a, int n_calls, const zero__cuda_adam_common &c,
                                       cudaStream_t s, zero_error *err) {
    const int store = !zero__cuda_is_none<P>::value, has_m = !zero__cuda_is_none<M>::value,
              has_v = !zero__cuda_is_none<V>::value;
    static const char name[] = "zero__cuda_adam_kernel (adam)";
    zero__cuda_adam_batch b;
    unsigned cap = 1, total = 0;
    int i, k;
    zero_result r;
    if ((r = zero__cuda_grid_cap(zero__cuda_adam_kernel<R, W, M, V, G, P>, &cap, err)) != ZERO_OK) return r;
    memset(&b, 0, sizeof b);
    for (i = 0; i < n_calls; i++)
        for (k = 0; k < a[i].n_segs; k++) {
            const zero_adam_seg *sg = &a[i].segs[k];
            if (sg->count > 0 && !sg->muon) {
                zero__cuda_adam_kseg *q = &b.seg[b.n_segs];
                const size_t off = (size_t)sg->offset;
                const void *arrays[5];
                size_t size[5];
                int n_arrays = 0;
                q->master = (W *)a[i].master + off;
                q->m = has_m ? (void *)((M *)a[i].m + off) : NULL;
                q->v = has_v ? (void *)((V *)a[i].v + off) : NULL;
                q->grad = (const G *)a[i].grad + off;
                q->param = store ? (void *)((P *)a[i].param + off) : NULL;
                arrays[n_arrays] = q->master, size[n_arrays++] = sizeof(W);
                if (has_m) arrays[n_arrays] = q->m, size[n_arrays++] = sizeof(M);
                if (has_v) arrays[n_arrays] = q->v, size[n_arrays++] = sizeof(V);
                arrays[n_arrays] = q->grad, size[n_arrays++] = sizeof(G);
                if (store) arrays[n_arrays] = q->param, size[n_arrays++] = sizeof(P);
                q->n = (size_t)sg->count;
                zero__cuda_plan(arrays, size, n_arrays, q->n, &q->head, &q->nv);
                zero__cuda_seg_consts(&a[i], sg, q);
                total += zero__cuda_blocks(q->n, q->nv, cap);
                b.block_end[b.n_segs++] = total;
            }
            if (b.n_segs == ZERO__CUDA_ADAM_BATCH &&
                (r = zero__cuda_batch_flush(zero__cuda_adam_kernel<R, W, M, V, G, P>, name, c, &b, &total, s, err)) !=
                    ZERO_OK)
                return r;
        }
    if ((r = zero__cuda_batch_flush(zero__cuda_adam_kernel<R, W, M, V, G, P>, name, c, &b, &total, s, err)) != ZERO_OK)
        return r;
    zero__ok(err);
    return ZERO_OK;
}

/* Muon's segments (seg.muon) of calls a[0..n_calls), planned and batched as
   zero__cuda_adam_run does, in launches of kernel (zero__cuda_muon_mom_kernel
   or _step_kernel; K is one function pointer type, one instantiation): pass 1
   on v, m (both fp32) and the grad, the step on v, master (its call's
   master_dtype) and the param; esize: the bytes of a grad (pass 1) or param
   element (the step; 0: no param written). */
template <typename K>
static zero_result zero__cuda_muon_run(K kernel, const char *name, int pass, size_t esize, const zero_adam_args *a,
                                       int n_calls, const zero__cuda_adam_common &c, cudaStream_t s, zero_error *err) {
    zero__cuda_adam_batch b;
    unsigned cap = 1, total = 0;
    int i, k;
    zero_result r;
    if ((r = zero__cuda_grid_cap(kernel, &cap, err)) != ZERO_OK) return r;
    memset(&b, 0, sizeof b);
    for (i = 0; i < n_calls; i++)
        for (k = 0; k < a[i].n_segs; k++) {
            const zero_adam_seg *sg = &a[i].segs[k];
            zero__cuda_adam_kseg *q = &b.seg[b.n_segs];
            const size_t off = (size_t)sg->offset, msize = zero__state_bytes(a[i].master_dtype);
            const size_t size[3] = {4, pass == 1 ? 4 : msize, esize};
            const void *arrays[3];
            if (!sg->muon || sg->count <= 0) continue;
            q->v = (float *)a[i].v + off;
            if (pass == 1) q->m = (float *)a[i].m + off, q->grad = (const char *)a[i].grad + off * esize;
            else q->master = (char *)a[i].master + off * msize, q->param = esize ? (char *)a[i].param + off * esize : NULL;
            arrays[0] = q->v;
            arrays[1] = pass == 1 ? (const void *)q->m : (const void *)q->master;
            arrays[2] = pass == 1 ? q->grad : (const void *)q->param;
            q->n = (size_t)sg->count;
            zero__cuda_plan(arrays, size, esize ? 3 : 2, q->n, &q->head, &q->nv);
            q->step = sg->lr;
            q->wd = sg->weight_decay;
            total += zero__cuda_blocks(q->n, q->nv, cap);
            b.block_end[b.n_segs++] = total;
            if (b.n_segs == ZERO__CUDA_ADAM_BATCH &&
                (r = zero__cuda_batch_flush(kernel, name, c, &b, &total, s, err)) != ZERO_OK)
                return r;
        }
    if ((r = zero__cuda_batch_flush(kernel, name, c, &b, &total, s, err)) != ZERO_OK) return r;
    zero__ok(err);
    return ZERO_OK;
}

/* Lamb's segments of calls a[0..n_calls) (every segment: Lamb has no other
   rule beside it), planned and batched as zero__cuda_adam_run does: pass 1
   (kernel zero__cuda_lamb_mom_kernel, esize the bytes of a grad element) on
   master, m, v (their calls' storage) and the grad, each block's sums in scratch (two doubles a
   block: a batch ends where scratch would not hold another segment's), then
   zero__cuda_lamb_finish_kernel adds each segment's; pass 2
   (zero__cuda_lamb_step_kernel, esize a param element's bytes, 0: none
   written) on master, m, v and the param. */
typedef void (*zero__cuda_lamb1_k)(zero__cuda_adam_common, zero__cuda_adam_batch, double *);
typedef void (*zero__cuda_lamb2_k)(zero__cuda_adam_common, zero__cuda_adam_batch);
/* A batch's launch: pass 1 and its sums' finish, or pass 2; then it is empty. */
static zero_result zero__cuda_lamb_flush(zero__cuda_lamb1_k kernel, const char *name, const zero__cuda_adam_common &c,
                                         zero__cuda_adam_batch *b, unsigned *total, double *scratch, cudaStream_t s,
                                         zero_error *err) {
    zero_result r;
    if (!b->n_segs) return ZERO_OK;
    kernel<<<*total, ZERO__CUDA_THREADS, 0, s>>>(c, *b, scratch);
    if ((r = zero__cuda_launched(name, err)) != ZERO_OK) return r;
    zero__cuda_lamb_finish_kernel<<<(unsigned)b->n_segs, ZERO__CUDA_THREADS, 0, s>>>(*b, scratch);
    memset(b, 0, sizeof *b);
    *total = 0;
    return zero__cuda_launched("zero__cuda_lamb_finish_kernel (adam: Lamb's sums)", err);
}
static zero_result zero__cuda_lamb_flush(zero__cuda_lamb2_k kernel, const char *name, const zero__cuda_adam_common &c,
                                         zero__cuda_adam_batch *b, unsigned *total, double *, cudaStream_t s,
                                         zero_error *err) {
    return zero__cuda_batch_flush(kernel, name, c, b, total, s, err);
}

template <typename K>
static zero_result zero__cuda_lamb_run(K kernel, const char *name, int pass, size_t esize, const zero_adam_args *a,
                                       int n_calls, const zero__cuda_adam_common &c, double *scratch, size_t n_scratch,
                                       cudaStream_t s, zero_error *err) {
    zero__cuda_adam_batch b;
    unsigned cap = 1, total = 0;
    int i, k;
    zero_result r;
    if (pass == 1 && (!scratch || n_scratch < 2))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda adam: Lamb's pass 1 needs scratch for its sums");
    if ((r = zero__cuda_grid_cap(kernel, &cap, err)) != ZERO_OK) return r;
    if (pass == 1 && cap > n_scratch / 2) cap = (unsigned)(n_scratch / 2);
    memset(&b, 0, sizeof b);
    for (i = 0; i < n_calls; i++)
        for (k = 0; k < a[i].n_segs; k++) {
            const zero_adam_seg *sg = &a[i].segs[k];
            zero__cuda_adam_kseg q;
            const size_t off = (size_t)sg->offset, msize = zero__state_bytes(a[i].master_dtype),
                         ssize = zero__state_bytes(a[i].state_dtype), size[4] = {msize, ssize, ssize, esize};
            const void *arrays[4];
            unsigned blocks;
            if (sg->count <= 0) continue;
            memset(&q, 0, sizeof q);
            q.master = (char *)a[i].master + off * msize;
            q.m = (char *)a[i].m + off * ssize, q.v = (char *)a[i].v + off * ssize;
            if (pass == 1) q.grad = (const char *)a[i].grad + off * esize, q.sums = a[i].lamb_sums + 2 * (size_t)k;
            else q.param = esize ? (char *)a[i].param + off * esize : NULL, q.ratio = a[i].lamb_ratio + k;
            arrays[0] = q.master, arrays[1] = q.m, arrays[2] = q.v;
            arrays[3] = pass == 1 ? q.grad : (const void *)q.param;
            q.n = (size_t)sg->count;
            zero__cuda_plan(arrays, size, esize ? 4 : 3, q.n, &q.head, &q.nv);
            q.step = sg->lr / (a[i].bc1 * a[i].bc2); /* (the host's lr / (bc1 bc2), times the ratio there) */
            q.wd = sg->weight_decay;
            blocks = zero__cuda_blocks(q.n, q.nv, cap);
            if ((b.n_segs == ZERO__CUDA_ADAM_BATCH || (pass == 1 && 2 * ((size_t)total + blocks) > n_scratch)) &&
                (r = zero__cuda_lamb_flush(kernel, name, c, &b, &total, scratch, s, err)) != ZERO_OK)
                return r;
            b.seg[b.n_segs] = q;
            total += blocks;
            b.block_end[b.n_segs++] = total;
        }
    if ((r = zero__cuda_lamb_flush(kernel, name, c, &b, &total, scratch, s, err)) != ZERO_OK) return r;
    zero__ok(err);
    return ZERO_OK;
}

/* Call a's storage as the kernels take it: master and state each fp32
   (ZERO_DTYPE_DEFAULT too) or bf16 (zero__pass_misuse refuses the others).
   ZERO__CUDA_ST_FP32 both fp32, _BF16 both bf16 (every rule but Muon, whose
   segments need fp32 state: zero__pass_misuse), _BF16_MASTER a bf16 master
   with fp32 state (every rule); zero__cuda_adam_check refuses _FP32_MASTER
   (fp32 master, bf16 state: zero.h's config never makes it, bf16 states need
   bf16 master weights). */
enum { ZERO__CUDA_ST_FP32, ZERO__CUDA_ST_BF16, ZERO__CUDA_ST_BF16_MASTER, ZERO__CUDA_ST_FP32_MASTER };
static int zero__cuda_storage(const zero_adam_args *a) {
    const int mb = a->master_dtype == ZERO_DTYPE_BF16, sb = a->state_dtype == ZERO_DTYPE_BF16;
    return mb ? (sb ? ZERO__CUDA_ST_BF16 : ZERO__CUDA_ST_BF16_MASTER) : sb ? ZERO__CUDA_ST_FP32_MASTER : ZERO__CUDA_ST_FP32;
}

/* The grad and param types a storage's kernels are instantiated for: fp32's
   (W and S float) every grad (fp32, fp16, bf16) and param (none, fp32, fp16,
   bf16); a bf16 master or state only those of the engine, which pairs them
   with bf16 compute: grad fp32 or bf16, param none or bf16
   (zero__cuda_adam_check refuses the others). Every pair in them too nearly
   doubled nvcc's time on each file that includes this header
   (tests/gpu_kernels.cu for sm_90, user time on two shared cores: 18 s
   without bf16 storage, 34 s with every pair, 27 s so). */
template <typename W, typename S> struct zero__cuda_all_dtypes { static constexpr bool value = false; };
template <> struct zero__cuda_all_dtypes<float, float> { static constexpr bool value = true; };
static int zero__cuda_dtypes_taken(const zero_adam_args *a) {
    return zero__cuda_storage(a) == ZERO__CUDA_ST_FP32 ||
           ((a->grad_dtype == ZERO_DTYPE_FP32 || a->grad_dtype == ZERO_DTYPE_BF16) &&
            (!zero__adam_stores_param(a) || a->param_dtype == ZERO_DTYPE_BF16));
}
/* The refusal of a call whose storage has no kernels for its grad and param
   (zero__cuda_adam_check's, and the dispatch's should a call come unchecked). */
static zero_result zero__cuda_dtypes_fail(const zero_adam_args *a, zero_error *err) {
    return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                      "cuda adam: grad_dtype %s, param %s with master_dtype %s, state_dtype %s: bf16 master/state take "
                      "fp32 or bf16 gradients and a bf16 (or no) parameter copy: the engine pairs them with bf16 "
                      "compute\nHINT: bf16.bf16_master_weights_and_grads trains in bf16 (bf16.enabled) with "
                      "data_types.grad_accum_dtype bf16 or fp32",
                      zero_dtype_name(a->grad_dtype), zero__adam_stores_param(a) ? zero_dtype_name(a->param_dtype) : "none",
                      zero_dtype_name(a->master_dtype), zero_dtype_name(a->state_dtype));
}

/* The fused kernel's dispatch: storage, then grad, then param, the types of
   a bf16 storage as zero__cuda_all_dtypes has them. M and V are S where rule
   R keeps that state (zero__cuda_state), so storages that differ only in a
   state R does not keep share one instantiation. */
template <typename R, typename W, typename S, typename G>
static zero_result zero__cuda_adam_param(const zero_adam_args *a, int n_calls, const zero__cuda_adam_common &c,
                                         cudaStream_t s, zero_error *err) {
    typedef typename zero__cuda_state<R::keeps_m, S>::T M;
    typedef typename zero__cuda_state<R::keeps_v, S>::T V;
    if (!zero__adam_stores_param(a)) return zero__cuda_adam_run<R, W, M, V, G, zero__cuda_none>(a, n_calls, c, s, err);
    if (a->param_dtype == ZERO_DTYPE_BF16) return zero__cuda_adam_run<R, W, M, V, G, __nv_bfloat16>(a, n_calls, c, s, err);
    if constexpr (zero__cuda_all_dtypes<W, S>::value) {
        if (a->param_dtype == ZERO_DTYPE_FP16) return zero__cuda_adam_run<R, W, M, V, G, __half>(a, n_calls, c, s, err);
        return zero__cuda_adam_run<R, W, M, V, G, float>(a, n_calls, c, s, err);
    }
    return zero__cuda_dtypes_fail(a, err);
}

template <typename R, typename W, typename S>
static zero_result zero__cuda_adam_grad(const zero_adam_args *a, int n_calls, const zero__cuda_adam_common &c,
                                        cudaStream_t s, zero_error *err) {
    if (a->grad_dtype == ZERO_DTYPE_BF16) return zero__cuda_adam_param<R, W, S, __nv_bfloat16>(a, n_calls, c, s, err);
    if (a->grad_dtype != ZERO_DTYPE_FP16) return zero__cuda_adam_param<R, W, S, float>(a, n_calls, c, s, err);
    if constexpr (zero__cuda_all_dtypes<W, S>::value) return zero__cuda_adam_param<R, W, S, __half>(a, n_calls, c, s, err);
    return zero__cuda_dtypes_fail(a, err);
}

template <typename R>
static zero_result zero__cuda_adam_storage(const zero_adam_args *a, int n_calls, const zero__cuda_adam_common &c,
                                           cudaStream_t s, zero_error *err) {
    switch (zero__cuda_storage(a)) {
    case ZERO__CUDA_ST_BF16: return zero__cuda_adam_grad<R, __nv_bfloat16, __nv_bfloat16>(a, n_calls, c, s, err);
    case ZERO__CUDA_ST_BF16_MASTER: return zero__cuda_adam_grad<R, __nv_bfloat16, float>(a, n_calls, c, s, err);
    default: return zero__cuda_adam_grad<R, float, float>(a, n_calls, c, s, err);
    }
}

/* One call's arguments checked; *end: one past its last element. m and v are
   checked where the rule keeps them (zero_optimizer_state_mask), v also
   where a segment is Muon's; master, m and v in their storage dtype. */
static zero_result zero__cuda_adam_check(const zero_adam_args *a, int64_t *end_out, zero_error *err) {
    int64_t end = 0;
    int k, mask;
    zero_dtype mdt, sdt;
    zero_result r;
    if (!a) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda adam: args is NULL");
    if ((unsigned)a->kind >= (unsigned)ZERO_OPTIMIZER_COUNT)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda adam: kind %d is not a zero_optimizer_type", a->kind);
    if (a->n_segs < 0 || (a->n_segs > 0 && !a->segs))
        return zero__fail(err, a->n_segs < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, NULL, 0, 0,
                          "cuda adam: %d segments at %p", a->n_segs, (const void *)a->segs);
    { /* (after the segments' check: it reads them) */
        char why[160];
        zero_msg item;
        if (zero__pass_misuse(a, why, sizeof why, &item)) return zero__fail(err, item, NULL, 0, 0, "cuda adam: %s", why);
    }
    mdt = a->master_dtype == ZERO_DTYPE_BF16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    sdt = a->state_dtype == ZERO_DTYPE_BF16 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    if (zero__cuda_storage(a) == ZERO__CUDA_ST_FP32_MASTER)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "cuda adam: master_dtype %s with state_dtype %s (%s): bf16 state needs a bf16 master (the "
                          "kernels take master and state both fp32, both bf16, or a bf16 master with fp32 state)\nHINT: "
                          "bf16.bf16_optimizer_states needs bf16.bf16_master_weights_and_grads",
                          zero_dtype_name(a->master_dtype), zero_dtype_name(a->state_dtype),
                          zero_optimizer_name((zero_optimizer_type)a->kind));
    mask = zero_optimizer_state_mask((zero_optimizer_type)a->kind, a->momentum);
    for (k = 0; k < a->n_segs; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        if (sg->offset < 0 || sg->count < 0 || sg->offset > INT64_MAX - sg->count)
            return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda adam: segment %d has offset %lld, count %lld", k,
                              (long long)sg->offset, (long long)sg->count);
        if (sg->count > 0 && sg->offset + sg->count > end) end = sg->offset + sg->count;
        if (sg->count > 0 && sg->muon) mask |= 2; /* (v: Muon's update, in a call of any rule) */
    }
    if ((r = zero__cuda_check_arg("adam", "master", a->master, (size_t)end, mdt, err)) != ZERO_OK ||
        ((mask & 1) && (r = zero__cuda_check_arg("adam", "m", a->m, (size_t)end, sdt, err)) != ZERO_OK) ||
        ((mask & 2) && (r = zero__cuda_check_arg("adam", "v", a->v, (size_t)end, sdt, err)) != ZERO_OK) ||
        (r = zero__cuda_check_arg("adam", "grad", a->grad, (size_t)end, a->grad_dtype, err)) != ZERO_OK ||
        (a->param && (r = zero__cuda_check_arg("adam", "param", a->param, (size_t)end, a->param_dtype, err)) != ZERO_OK))
        return r;
    if (!zero__cuda_dtypes_taken(a)) return zero__cuda_dtypes_fail(a, err);
    *end_out = end;
    return ZERO_OK;
}

/* The hyperparameters call a's rule reads (every other byte 0): Muon's pass
   1 its own; Muon's other call Adam's (its segments without seg.muon take
   Adam's rule, adamw deciding the decay, as in zero.h's zero__opt_range). */
static zero__cuda_adam_common zero__cuda_common_of(const zero_adam_args *a) {
    zero__cuda_adam_common c;
    memset(&c, 0, sizeof c);
    c.grad_scale = a->grad_scale;
    if (a->kind == ZERO_OPTIMIZER_MUON && a->muon_pass == 1) { /* zero__cuda_muon_mom */
        c.kind = ZERO_OPTIMIZER_MUON;
        c.omb1 = 1.0f - a->momentum, c.nesterov = a->nesterov;
        return c;
    }
    /* adamw decides; Muon's other call steps its other segments by Adam's rule */
    c.kind = a->kind == ZERO_OPTIMIZER_ADAMW || a->kind == ZERO_OPTIMIZER_MUON ? ZERO_OPTIMIZER_ADAM : a->kind;
    switch (a->kind) {
    case ZERO_OPTIMIZER_LION:
        c.beta1 = a->beta1, c.beta2 = a->beta2, c.omb1 = 1.0f - a->beta1, c.omb2 = 1.0f - a->beta2;
        break;
    case ZERO_OPTIMIZER_ADAGRAD: c.eps = a->eps; break;
    case ZERO_OPTIMIZER_LAMB:
        c.beta1 = a->beta1, c.beta2 = a->beta2, c.omb1 = 1.0f - a->beta1, c.omb2 = 1.0f - a->beta2;
        c.eps = a->eps, c.eps_inside = a->eps_inside, c.lamb_pass = a->lamb_pass;
        break;
    case ZERO_OPTIMIZER_SGD:
        if (a->momentum != 0.0f)
            c.momentum = a->momentum, c.damp = 1.0f - a->dampening, c.nesterov = a->nesterov, c.first = a->first;
        break;
    default:
        c.beta1 = a->beta1, c.beta2 = a->beta2, c.omb1 = 1.0f - a->beta1, c.omb2 = 1.0f - a->beta2;
        c.eps = a->eps, c.bc2 = a->bc2, c.adamw = a->adamw;
    }
    return c;
}

/* Calls x and y run in one launch: the same rule, hyperparameters, dtypes and
   storage (bc1 enters only the segments' constants). */
static int zero__cuda_adam_same(const zero_adam_args *x, const zero_adam_args *y) {
    const int sx = zero__adam_stores_param(x), sy = zero__adam_stores_param(y);
    const zero__cuda_adam_common cx = zero__cuda_common_of(x), cy = zero__cuda_common_of(y);
    return !memcmp(&cx, &cy, sizeof cx) && x->grad_dtype == y->grad_dtype && sx == sy &&
           (!sx || x->param_dtype == y->param_dtype) && zero__cuda_storage(x) == zero__cuda_storage(y);
}

/* Muon's step over its segments of calls a[0..n) (checked, sharing c, dtypes
   and storage): W the master's type (the state is fp32), its params as
   zero__cuda_all_dtypes has them. */
template <typename W>
static zero_result zero__cuda_muon_step_launch(const zero_adam_args *a, int n, const zero__cuda_adam_common &c,
                                               cudaStream_t s, zero_error *err) {
    static const char step[] = "zero__cuda_muon_step_kernel (adam: Muon's step)";
    if (!zero__adam_stores_param(a))
        return zero__cuda_muon_run(zero__cuda_muon_step_kernel<W, zero__cuda_none>, step, 0, 0, a, n, c, s, err);
    if (a->param_dtype == ZERO_DTYPE_BF16)
        return zero__cuda_muon_run(zero__cuda_muon_step_kernel<W, __nv_bfloat16>, step, 0, 2, a, n, c, s, err);
    if constexpr (zero__cuda_all_dtypes<W, float>::value) {
        if (a->param_dtype == ZERO_DTYPE_FP16)
            return zero__cuda_muon_run(zero__cuda_muon_step_kernel<W, __half>, step, 0, 2, a, n, c, s, err);
        return zero__cuda_muon_run(zero__cuda_muon_step_kernel<W, float>, step, 0, 4, a, n, c, s, err);
    }
    return zero__cuda_dtypes_fail(a, err);
}

/* Muon's segments of calls a[0..n) (checked, sharing c, dtypes and storage):
   pass 1 in Muon's pass-1 calls, the step in the others; none: no launch. */
static zero_result zero__cuda_muon_launch(const zero_adam_args *a, int n, const zero__cuda_adam_common &c,
                                          cudaStream_t s, zero_error *err) {
    static const char mom[] = "zero__cuda_muon_mom_kernel (adam: Muon's pass 1)";
    if (!zero__cuda_has_segs(a, n, 1)) {
        zero__ok(err);
        return ZERO_OK;
    }
    if (a->muon_pass == 1) switch (a->grad_dtype) {
        case ZERO_DTYPE_FP16: return zero__cuda_muon_run(zero__cuda_muon_mom_kernel<__half>, mom, 1, 2, a, n, c, s, err);
        case ZERO_DTYPE_BF16:
            return zero__cuda_muon_run(zero__cuda_muon_mom_kernel<__nv_bfloat16>, mom, 1, 2, a, n, c, s, err);
        default: return zero__cuda_muon_run(zero__cuda_muon_mom_kernel<float>, mom, 1, 4, a, n, c, s, err);
        }
    if (a->master_dtype == ZERO_DTYPE_BF16) return zero__cuda_muon_step_launch<__nv_bfloat16>(a, n, c, s, err);
    return zero__cuda_muon_step_launch<float>(a, n, c, s, err);
}

/* Lamb's pass c.lamb_pass over calls a[0..n) (checked, sharing c, dtypes and
   storage): W the master's type, S m's and v's; pass 1 by grad, pass 2 by
   param, as zero__cuda_all_dtypes has them. */
template <typename W, typename S>
static zero_result zero__cuda_lamb_pass(const zero_adam_args *a, int n, const zero__cuda_adam_common &c, double *scratch,
                                        size_t n_scratch, cudaStream_t s, zero_error *err) {
    static const char mom[] = "zero__cuda_lamb_mom_kernel (adam: Lamb's pass 1)",
                      step[] = "zero__cuda_lamb_step_kernel (adam: Lamb's pass 2)";
    constexpr bool all = zero__cuda_all_dtypes<W, S>::value;
    if (c.lamb_pass == 1) {
        if (a->grad_dtype == ZERO_DTYPE_BF16)
            return zero__cuda_lamb_run(zero__cuda_lamb_mom_kernel<W, S, __nv_bfloat16>, mom, 1, 2, a, n, c, scratch,
                                       n_scratch, s, err);
        if (a->grad_dtype != ZERO_DTYPE_FP16)
            return zero__cuda_lamb_run(zero__cuda_lamb_mom_kernel<W, S, float>, mom, 1, 4, a, n, c, scratch, n_scratch, s,
                                       err);
        if constexpr (all)
            return zero__cuda_lamb_run(zero__cuda_lamb_mom_kernel<W, S, __half>, mom, 1, 2, a, n, c, scratch, n_scratch, s,
                                       err);
        return zero__cuda_dtypes_fail(a, err);
    }
    if (!zero__adam_stores_param(a))
        return zero__cuda_lamb_run(zero__cuda_lamb_step_kernel<W, S, zero__cuda_none>, step, 2, 0, a, n, c, scratch,
                                   n_scratch, s, err);
    if (a->param_dtype == ZERO_DTYPE_BF16)
        return zero__cuda_lamb_run(zero__cuda_lamb_step_kernel<W, S, __nv_bfloat16>, step, 2, 2, a, n, c, scratch,
                                   n_scratch, s, err);
    if constexpr (all) {
        if (a->param_dtype == ZERO_DTYPE_FP16)
            return zero__cuda_lamb_run(zero__cuda_lamb_step_kernel<W, S, __half>, step, 2, 2, a, n, c, scratch, n_scratch,
                                       s, err);
        return zero__cuda_lamb_run(zero__cuda_lamb_step_kernel<W, S, float>, step, 2, 4, a, n, c, scratch, n_scratch, s,
                                   err);
    }
    return zero__cuda_dtypes_fail(a, err);
}

static zero_result zero__cuda_lamb_launch(const zero_adam_args *a, int n, const zero__cuda_adam_common &c,
                                          double *scratch, size_t n_scratch, cudaStream_t s, zero_error *err) {
    switch (zero__cuda_storage(a)) {
    case ZERO__CUDA_ST_BF16: return zero__cuda_lamb_pass<__nv_bfloat16, __nv_bfloat16>(a, n, c, scratch, n_scratch, s, err);
    case ZERO__CUDA_ST_BF16_MASTER: return zero__cuda_lamb_pass<__nv_bfloat16, float>(a, n, c, scratch, n_scratch, s, err);
    default: return zero__cuda_lamb_pass<float, float>(a, n, c, scratch, n_scratch, s, err);
    }
}

/* The fused kernel over the segments of calls a[0..n) that are not Muon's,
   by the rule c names. */
static zero_result zero__cuda_rule_launch(const zero_adam_args *a, int n, const zero__cuda_adam_common &c,
                                          cudaStream_t s, zero_error *err) {
    if (!zero__cuda_has_segs(a, n, 0)) {
        zero__ok(err);
        return ZERO_OK;
    }
    switch (c.kind) {
    case ZERO_OPTIMIZER_LION: return zero__cuda_adam_storage<zero__cuda_rule_lion>(a, n, c, s, err);
    case ZERO_OPTIMIZER_ADAGRAD: return zero__cuda_adam_storage<zero__cuda_rule_adagrad>(a, n, c, s, err);
    case ZERO_OPTIMIZER_SGD:
        if (c.momentum != 0.0f) return zero__cuda_adam_storage<zero__cuda_rule_sgd<true> >(a, n, c, s, err);
        return zero__cuda_adam_storage<zero__cuda_rule_sgd<false> >(a, n, c, s, err);
    default: return zero__cuda_adam_storage<zero__cuda_rule_adam>(a, n, c, s, err);
    }
}

/* Calls a[0..n) (checked, sharing their rule, hyperparameters and dtypes) in
   as few launches as their segments take: Muon's pass 1 on its segments
   alone; any other call its rule on the other segments, then Muon's step on
   Muon's. */
static zero_result zero__cuda_adam_launch(const zero_adam_args *a, int n, double *scratch, size_t n_scratch, cudaStream_t s,
                                          zero_error *err) {
    const zero__cuda_adam_common c = zero__cuda_common_of(a);
    zero_result r;
    if (c.kind == ZERO_OPTIMIZER_LAMB) return zero__cuda_lamb_launch(a, n, c, scratch, n_scratch, s, err);
    if (a->muon_pass == 0 && (r = zero__cuda_rule_launch(a, n, c, s, err)) != ZERO_OK) return r;
    return zero__cuda_muon_launch(a, n, c, s, err);
}

static ZERO__UNUSED zero_result zero__cuda_k_adam(const zero_adam_args *a, double *scratch, size_t n_scratch, cudaStream_t s,
                                                  zero_error *err) {
    int64_t end = 0;
    zero_result r;
    if ((r = zero__cuda_adam_check(a, &end, err)) != ZERO_OK) return r;
    if (!end) {
        zero__ok(err);
        return ZERO_OK;
    }
    return zero__cuda_adam_launch(a, 1, scratch, n_scratch, s, err);
}

/* adam_multi: calls a[0..n) as zero__cuda_k_adam each, runs of consecutive
   calls that share their hyperparameters and dtypes in common launches (the
   calls' memory is disjoint, so the order between their segments is free). */
static ZERO__UNUSED zero_result zero__cuda_k_adam_multi(const zero_adam_args *a, int n, double *scratch, size_t n_scratch,
                                                        cudaStream_t s, zero_error *err) {
    int i, j;
    zero_result r;
    if (n < 0 || (n > 0 && !a))
        return zero__fail(err, n < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda adam_multi: %d calls at %p",
                          n, (const void *)a);
    for (i = 0; i < n; i++) {
        int64_t end = 0;
        if ((r = zero__cuda_adam_check(&a[i], &end, err)) != ZERO_OK) return r;
    }
    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && zero__cuda_adam_same(&a[i], &a[j]);) j++;
        if ((r = zero__cuda_adam_launch(&a[i], j - i, scratch, n_scratch, s, err)) != ZERO_OK) return r;
    }
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>cuda-muon-ns: Muon's Newton-Schulz orthogonalisation on the device ----

   zero_muon_orthogonalize (zero.h's >>muon-ns) in fp32 on the GPU: the batch's
   matrices one after another, each in `work` (zero_muon_work_elems floats: A
   and B, r x r, then the next X, r x c; r the smaller side, c the larger), all
   on the caller's stream, without a host sync or an allocation:
     the norm     zero__cuda_sumsq_kernel's block sums of squares in double into
                  the start of work, then zero__cuda_muon_norm_kernel: every
                  block adds them in one fixed order and divides X by
                  (float)(sqrt(sum) + 1e-7)
     each step    three products of one SGEMM kernel (zero__cuda_gemm_kernel):
                  A = X X^T; B = b A + c (A A); X' = a X + B X, the next X
                  alternating between x and work; then x = the last X (a copy
                  when it lies in work) times scale (zero__cuda_k_scale)
   A matrix with rows > cols is orthogonalised as its transpose without moving
   it: with Y the matrix as stored (c x r), A = Y^T Y and Y' = a Y + Y B^T
   (transposed operands of the SGEMM) are X X^T and X' transposed.

   The SGEMM: C = alpha op(A) op(B) + beta C0, row-major, op a runtime
   transpose flag, plain fp32 FMAs (no tensor cores). A block of 256 threads
   computes a 128 x 128 tile of C, each thread 8 x 8 of it (two 4 x 4
   quadrants 64 apart in each direction: a warp's float4 reads of shared
   memory hit distinct banks or broadcast), over K in stages of 8 held in
   shared memory twice (the next stage's global loads are in flight while the
   current one is multiplied). A thread loads 16 bytes of A and of B a stage
   where the pointer and leading dimension allow it and the stage is whole,
   guarded single floats elsewhere (any size). A and B are symmetric: their
   products compute the tiles on and above the diagonal only and store each
   mirrored too (X X^T's (j, i) sums the products of (i, j) in the same order,
   so both come out exactly symmetric). When the tiles are too few to
   keep every multiprocessor busy, K is cut into slices (blockIdx.y), each
   slice's sums stored whole in a buffer of its own (C itself and the parts of
   work the product leaves free) and added in slice order by
   zero__cuda_gemm_sum_kernel: deterministic, no atomics. The sums run in
   another order than the host's loops, so the results agree with
   zero_muon_orthogonalize to rounding, not bit for bit. */

#define ZERO__CUDA_GEMM_TILE 128   /* a block's tile of C, square */
#define ZERO__CUDA_GEMM_HALF 64    /* a thread's second quadrant, this far on */
#define ZERO__CUDA_GEMM_BK 8       /* K of one shared-memory stage */
#define ZERO__CUDA_GEMM_THREADS 256
#define ZERO__CUDA_GEMM_SLICES 8   /* most K slices of one product */
#define ZERO__CUDA_MUON_PARTIALS 256 /* most block sums of one norm */

/* One product (zero__cuda_gemm). vec_*: float4 access is allowed (the
   pointer 16-byte aligned, the leading dimension a multiple of 4). */
struct zero__cuda_gemm_args {
    const float *a, *b, *c0;
    float *c;
    float *part[ZERO__CUDA_GEMM_SLICES]; /* K sliced: slice z's sums, m x n dense */
    int64_t m, n, k, kslice, lda, ldb, ldc, ldc0;
    float alpha, beta;
    int ta, tb; /* op(A) = A^T, op(B) = B^T */
    int sym;    /* C is symmetric (m = n): only the tiles on and above the diagonal, each stored mirrored too */
    int vec_a, vec_b, vec_c, vec_part;
};

typedef float zero__cuda_gemm_stage[ZERO__CUDA_GEMM_BK][ZERO__CUDA_GEMM_TILE + 4]; /* (+ 4: no bank conflicts) */

/* This thread's 4 elements of one stage of op(P), rows i0.. of its M (A) or
   N (B) side and k0.. of K, zero outside [.., lim) x [.., kend). kc: K runs
   contiguously in memory, element (i, k) at p[i ld + k] (A as it is, B
   transposed); else i does, at p[k ld + i]. */
static __device__ __forceinline__ void zero__cuda_gemm_load(const float *p, int64_t ld, int kc, int vec, int64_t i0,
                                                            int64_t lim, int64_t k0, int64_t kend, float *r) {
    const int t = (int)threadIdx.x;
    if (kc) {
        const int64_t i = i0 + (t >> 1), k = k0 + (t & 1) * 4;
        const float *q = p + i * ld + k;
        if (vec && i < lim && k + 4 <= kend) {
            const float4 v = __ldg(reinterpret_cast<const float4 *>(q));
            r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) r[j] = i < lim && k + j < kend ? q[j] : 0.0f;
        }
    } else {
        const int64_t k = k0 + (t >> 5), i = i0 + (t & 31) * 4;
        const float *q = p + k * ld + i;
        if (vec && k < kend && i + 4 <= lim) {
            const float4 v = __ldg(reinterpret_cast<const float4 *>(q));
            r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) r[j] = k < kend && i + j < lim ? q[j] : 0.0f;
        }
    }
}

/* The 4 elements zero__cuda_gemm_load gave this thread into stage s, as s[k][i]. */
static __device__ __forceinline__ void zero__cuda_gemm_stage_in(zero__cuda_gemm_stage &s, int kc, const float *r) {
    const int t = (int)threadIdx.x;
    if (kc) {
#pragma unroll
        for (int j = 0; j < 4; j++) s[(t & 1) * 4 + j][t >> 1] = r[j];
    } else
        *reinterpret_cast<float4 *>(&s[t >> 5][(t & 31) * 4]) = make_float4(r[0], r[1], r[2], r[3]);
}

/* Element (i, j) of C from its sum: alpha acc + beta C0 (C0 unread when beta
   is 0), with zero.h's roundings where alpha is 1 (fma(beta, C0, acc)) or
   beta is (fma(alpha, acc, beta C0)). */
static __device__ __forceinline__ float zero__cuda_gemm_out(const zero__cuda_gemm_args &g, float acc, int64_t i,
                                                            int64_t j) {
    if (g.beta == 0.0f) return g.alpha == 1.0f ? acc : __fmul_rn(g.alpha, acc);
    const float c0 = g.c0[i * g.ldc0 + j];
    return g.alpha == 1.0f ? __fmaf_rn(g.beta, c0, acc) : __fmaf_rn(g.alpha, acc, __fmul_rn(g.beta, c0));
}

/* This thread's 8 x 8 sums, rows r0 + {0..3, 64..67} and columns c0 + {0..3,
   64..67}: into C (alpha, beta applied), or whole into its slice's buffer;
   mirror: also at the transposed places (a tile above the diagonal of a
   symmetric C). */
static __device__ __forceinline__ void zero__cuda_gemm_store(const zero__cuda_gemm_args &g, const float (&acc)[8][8],
                                                             int64_t r0, int64_t c0, int mirror) {
    const int split = gridDim.y > 1;
    float *out = split ? g.part[blockIdx.y] : g.c;
    const int64_t ld = split ? g.n : g.ldc;
    const int vec = split ? g.vec_part : g.vec_c;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int64_t row = r0 + (i < 4 ? i : ZERO__CUDA_GEMM_HALF + i - 4);
        if (row >= g.m) continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t col = c0 + h * ZERO__CUDA_GEMM_HALF;
            float v[4];
            if (col >= g.n) continue;
#pragma unroll
            for (int j = 0; j < 4; j++)
                v[j] = split || col + j >= g.n ? acc[i][4 * h + j] : zero__cuda_gemm_out(g, acc[i][4 * h + j], row, col + j);
            if (vec && col + 4 <= g.n)
                *reinterpret_cast<float4 *>(out + row * ld + col) = make_float4(v[0], v[1], v[2], v[3]);
            else
                for (int j = 0; j < 4 && col + j < g.n; j++) out[row * ld + col + j] = v[j];
            if (mirror)
                for (int j = 0; j < 4 && col + j < g.n; j++) out[(col + j) * ld + row] = v[j];
        }
    }
}

/* Block x: tile x of C (row-major over the tiles; sym: over those on and
   above the diagonal, whose mirror images they store too: C = X X^T and
   b A + c (A A) for a symmetric A come out exactly symmetric, element (j, i)
   summing the products of (i, j) in the same order); blockIdx.y: the K
   slice. Two blocks a multiprocessor (128 registers a thread at most). */
static __global__ void __launch_bounds__(ZERO__CUDA_GEMM_THREADS, 2)
zero__cuda_gemm_kernel(const __grid_constant__ zero__cuda_gemm_args g) {
    __shared__ __align__(16) zero__cuda_gemm_stage sa[2], sb[2];
    const int tx = (int)threadIdx.x & 15, ty = (int)threadIdx.x >> 4, akc = !g.ta, bkc = g.tb;
    const int64_t tiles_n = (g.n + ZERO__CUDA_GEMM_TILE - 1) / ZERO__CUDA_GEMM_TILE;
    int64_t ti = (int64_t)blockIdx.x / tiles_n, tj = (int64_t)blockIdx.x % tiles_n;
    if (g.sym) { /* the upper triangle's tiles, row by row */
        int64_t rest = blockIdx.x;
        for (ti = 0; rest >= tiles_n - ti; ti++) rest -= tiles_n - ti;
        tj = ti + rest;
    }
    const int64_t m0 = ti * ZERO__CUDA_GEMM_TILE, n0 = tj * ZERO__CUDA_GEMM_TILE;
    const int64_t kbeg = (int64_t)blockIdx.y * g.kslice, kend = kbeg + g.kslice < g.k ? kbeg + g.kslice : g.k;
    float acc[8][8], ra[4], rb[4];
    int buf = 0;
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
    zero__cuda_gemm_load(g.a, g.lda, akc, g.vec_a, m0, g.m, kbeg, kend, ra);
    zero__cuda_gemm_load(g.b, g.ldb, bkc, g.vec_b, n0, g.n, kbeg, kend, rb);
    zero__cuda_gemm_stage_in(sa[0], akc, ra);
    zero__cuda_gemm_stage_in(sb[0], bkc, rb);
    __syncthreads();
    for (int64_t k0 = kbeg; k0 < kend; k0 += ZERO__CUDA_GEMM_BK) {
        const int more = k0 + ZERO__CUDA_GEMM_BK < kend;
        if (more) {
            zero__cuda_gemm_load(g.a, g.lda, akc, g.vec_a, m0, g.m, k0 + ZERO__CUDA_GEMM_BK, kend, ra);
            zero__cuda_gemm_load(g.b, g.ldb, bkc, g.vec_b, n0, g.n, k0 + ZERO__CUDA_GEMM_BK, kend, rb);
        }
#pragma unroll
        for (int kk = 0; kk < ZERO__CUDA_GEMM_BK; kk++) {
            const float4 a0 = *reinterpret_cast<const float4 *>(&sa[buf][kk][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4 *>(&sa[buf][kk][ZERO__CUDA_GEMM_HALF + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4 *>(&sb[buf][kk][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4 *>(&sb[buf][kk][ZERO__CUDA_GEMM_HALF + tx * 4]);
            const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = __fmaf_rn(av[i], bv[j], acc[i][j]);
        }
        if (more) { /* the other buffer: every thread finished reading it before the last barrier */
            zero__cuda_gemm_stage_in(sa[buf ^ 1], akc, ra);
            zero__cuda_gemm_stage_in(sb[buf ^ 1], bkc, rb);
            __syncthreads();
            buf ^= 1;
        }
    }
    zero__cuda_gemm_store(g, acc, m0 + ty * 4, n0 + tx * 4, g.sym && ti != tj);
}

/* K sliced: C = alpha (the slices' sums added in slice order) + beta C0. part[0]
   may be C itself (each element read, then written, by one thread). */
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_gemm_sum_kernel(const __grid_constant__ zero__cuda_gemm_args g, int slices) {
    const size_t mn = (size_t)g.m * (size_t)g.n, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < mn; e += stride) {
        const int64_t i = (int64_t)(e / (size_t)g.n), j = (int64_t)(e % (size_t)g.n);
        float acc = g.part[0][e];
        for (int z = 1; z < slices; z++) acc = __fadd_rn(acc, g.part[z][e]);
        g.c[i * g.ldc + j] = zero__cuda_gemm_out(g, acc, i, j);
    }
}

/* x[0..n) divided by (float)(sqrt(the sum of partial[0..n_partial)) + 1e-7),
   the sum in double and in the same order in every block. */
static __global__ void __launch_bounds__(ZERO__CUDA_THREADS)
zero__cuda_muon_norm_kernel(float *x, size_t n, const double *partial, unsigned n_partial) {
    __shared__ float d;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    double acc = 0.0;
    for (unsigned i = threadIdx.x; i < n_partial; i += blockDim.x) acc += partial[i];
    acc = zero__cuda_block_sum(acc);
    if (threadIdx.x == 0) d = (float)__dadd_rn(__dsqrt_rn(acc), 1e-7);
    __syncthreads();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) x[i] = __fdiv_rn(x[i], d);
}

static int zero__cuda_gemm_vec(const void *p, int64_t ld) { return (uintptr_t)p % 16u == 0 && ld % 4 == 0; }

/* How many K slices a product of `tiles` tiles and `ksteps` stages of K takes
   (at most `slots`, the buffers there are for their sums): the cheapest by a
   rough model of time, in stages of one tile on one multiprocessor (two
   blocks resident a multiprocessor keep it busy; a block alone runs at about
   2/3 of its rate): the busiest multiprocessor's blocks times the stages of
   a slice, plus moving the slices' sums (a stage of a tile, 2^17 FMAs, takes
   an H100 / H200 multiprocessor about as long as the whole GPU takes to move
   2 MB). */
static int zero__cuda_gemm_slices(int64_t tiles, int64_t ksteps, int64_t mn, int slots, int sms) {
    double best = 0.0;
    int s, pick = 1;
    for (s = 1; s <= slots && s <= ZERO__CUDA_GEMM_SLICES; s++) {
        const int64_t per = (ksteps + s - 1) / s, busiest = (tiles * s + sms - 1) / sms;
        double cost;
        if (s > 1 && per < 16) break; /* (slices of fewer stages: their sums cost more than they save) */
        cost = (double)per * (busiest % 2 ? (double)busiest + 0.5 : (double)busiest) +
               (s > 1 ? (double)(s + 2) * (double)mn * 4.0 / 2e6 : 0.0);
        if (s == 1 || cost < best) best = cost, pick = s;
    }
    return pick;
}

/* C = alpha op(A) op(B) + beta C0 on stream s (g's fields; C0 may be C;
   sym: C symmetric, C0 too when read). The
   sums of K slices may go to C (unless C0 is C, or C is not dense) and to
   spare[0..n_spare) (spare_n[z] floats each, overlapping none of A, B, C0). */
static zero_result zero__cuda_gemm(zero__cuda_gemm_args g, float *const *spare, const int64_t *spare_n, int n_spare,
                                   int sms, cudaStream_t s, zero_error *err) {
    const int64_t t = ZERO__CUDA_GEMM_TILE, tm = (g.m + t - 1) / t, tn = (g.n + t - 1) / t, mn = g.m * g.n;
    const int64_t tiles = g.sym ? tn * (tn + 1) / 2 : tm * tn;
    const int64_t ksteps = (g.k + ZERO__CUDA_GEMM_BK - 1) / ZERO__CUDA_GEMM_BK;
    int slots = 0, slices, z;
    zero_result r;
    if (g.c0 != g.c && g.ldc == g.n) g.part[slots++] = g.c;
    for (z = 0; z < n_spare; z++)
        for (int64_t q = 0; q + mn <= spare_n[z] && slots < ZERO__CUDA_GEMM_SLICES; q += mn) g.part[slots++] = spare[z] + q;
    slices = zero__cuda_gemm_slices(tiles, ksteps, mn, slots, sms);
    g.kslice = (ksteps + slices - 1) / slices * ZERO__CUDA_GEMM_BK;
    slices = (int)((g.k + g.kslice - 1) / g.kslice);
    g.vec_a = zero__cuda_gemm_vec(g.a, g.lda);
    g.vec_b = zero__cuda_gemm_vec(g.b, g.ldb);
    g.vec_c = zero__cuda_gemm_vec(g.c, g.ldc);
    g.vec_part = g.n % 4 == 0;
    for (z = 0; z < slices && slices > 1; z++) g.vec_part &= zero__cuda_gemm_vec(g.part[z], 0);
    zero__cuda_gemm_kernel<<<dim3((unsigned)tiles, (unsigned)slices), ZERO__CUDA_GEMM_THREADS, 0, s>>>(g);
    if ((r = zero__cuda_launched("zero__cuda_gemm_kernel (muon_ns)", err)) != ZERO_OK || slices == 1) return r;
    {
        const int64_t want = (mn + ZERO__CUDA_THREADS - 1) / ZERO__CUDA_THREADS, most = (int64_t)sms * 8;
        zero__cuda_gemm_sum_kernel<<<(unsigned)(want < most ? want : most), ZERO__CUDA_THREADS, 0, s>>>(g, slices);
    }
    return zero__cuda_launched("zero__cuda_gemm_sum_kernel (muon_ns)", err);
}

/* x[0..n) divided by its Frobenius norm plus 1e-7 (zero.h's), the block sums
   in work (work_n floats, at least 3: one double's room at any alignment). */
static zero_result zero__cuda_muon_norm(float *x, int64_t n, float *work, int64_t work_n, int sms, cudaStream_t s,
                                        zero_error *err) {
    double *partial = (double *)(((uintptr_t)work + 7u) & ~(uintptr_t)7u);
    const int64_t room = (int64_t)(((uintptr_t)(work + work_n) - (uintptr_t)partial) / sizeof(double));
    const void *arrays[1] = {x};
    const size_t size[1] = {sizeof(float)};
    const int64_t want = (n + ZERO__CUDA_THREADS - 1) / ZERO__CUDA_THREADS, most = (int64_t)sms * 4;
    size_t head, nv;
    unsigned grid;
    zero_result r;
    zero__cuda_plan(arrays, size, 1, (size_t)n, &head, &nv);
    grid = zero__cuda_blocks((size_t)n, nv, ZERO__CUDA_MUON_PARTIALS);
    if ((int64_t)grid > room) grid = (unsigned)room;
    zero__cuda_sumsq_kernel<float><<<grid, ZERO__CUDA_THREADS, 0, s>>>(x, (size_t)n, head, nv, partial);
    if ((r = zero__cuda_launched("zero__cuda_sumsq_kernel (muon_ns)", err)) != ZERO_OK) return r;
    zero__cuda_muon_norm_kernel<<<(unsigned)(want < most ? want : most), ZERO__CUDA_THREADS, 0, s>>>(x, (size_t)n,
                                                                                                     partial, grid);
    return zero__cuda_launched("zero__cuda_muon_norm_kernel (muon_ns)", err);
}

/* The three products of one step on X = cur (as stored: r x c, or c x r when
   tall), the next X into nxt; A, B: work's r x r parts. */
static zero_result zero__cuda_muon_step(const float *cur, float *nxt, float *A, float *B, int64_t r, int64_t c, int tall,
                                        int sms, cudaStream_t s, zero_error *err) {
    const float ca = 3.4445f, cb = -4.7750f, cc = 2.0315f;
    float *spare[2] = {B, nxt};
    int64_t spare_n[2] = {r * r, r * c};
    zero__cuda_gemm_args g;
    zero_result res;
    memset(&g, 0, sizeof g); /* A = X X^T: Y Y^T, or Y^T Y when tall */
    g.a = g.b = cur, g.c = A;
    g.m = g.n = r, g.k = c, g.lda = g.ldb = tall ? r : c, g.ldc = r;
    g.ta = tall, g.tb = !tall, g.sym = 1, g.alpha = 1.0f;
    if ((res = zero__cuda_gemm(g, spare, spare_n, 2, sms, s, err)) != ZERO_OK) return res;
    memset(&g, 0, sizeof g); /* B = b A + c (A A) */
    g.a = g.b = g.c0 = A, g.c = B;
    g.m = g.n = g.k = r, g.lda = g.ldb = g.ldc = g.ldc0 = r;
    g.alpha = cc, g.beta = cb, g.sym = 1;
    spare[0] = nxt, spare_n[0] = r * c;
    if ((res = zero__cuda_gemm(g, spare, spare_n, 1, sms, s, err)) != ZERO_OK) return res;
    memset(&g, 0, sizeof g); /* X' = a X + B X: Y' = a Y + B Y, or a Y + Y B^T when tall */
    g.a = tall ? cur : B, g.b = tall ? B : cur, g.c0 = cur, g.c = nxt;
    g.m = tall ? c : r, g.n = tall ? r : c, g.k = r;
    g.lda = r, g.ldb = tall ? r : c, g.ldc = g.ldc0 = g.n;
    g.tb = tall, g.alpha = 1.0f, g.beta = ca;
    spare[0] = A, spare_n[0] = r * r;
    return zero__cuda_gemm(g, spare, spare_n, 1, sms, s, err);
}

/* zero_muon_orthogonalize on the device: batch matrices of rows x cols at x
   (row-major, one after the other), work zero_muon_work_elems(rows, cols)
   floats of device memory; queued on stream s, nothing allocated, the host
   never waits. */
static ZERO__UNUSED zero_result zero__cuda_k_muon_ns(float *x, int64_t batch, int64_t rows, int64_t cols, int steps,
                                                     float scale, float *work, cudaStream_t s, zero_error *err) {
    const int64_t r = rows < cols ? rows : cols, c = rows < cols ? cols : rows, t = ZERO__CUDA_GEMM_TILE;
    int64_t q;
    int dev = 0, sms = 0, st;
    zero_result res;
    if (batch < 0 || rows < 1 || cols < 1 || steps < 0 || !(scale > 0) || !x || !work)
        return zero__fail(err, x && work ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, NULL, 0, 0,
                          "cuda muon_ns: batch %lld of %lld x %lld, %d steps, scale %g, x %p, work %p", (long long)batch,
                          (long long)rows, (long long)cols, steps, (double)scale, (void *)x, (void *)work);
    if ((uintptr_t)x % sizeof(float) || (uintptr_t)work % sizeof(float))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda muon_ns: x (%p) or work (%p) is not aligned to floats",
                          (void *)x, (void *)work);
    if (r > INT64_MAX / 8 / c || (batch > 0 && r * c > INT64_MAX / 8 / batch) ||
        (r + t - 1) / t * ((c + t - 1) / t) > INT_MAX)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda muon_ns: batch %lld of %lld x %lld is too large",
                          (long long)batch, (long long)rows, (long long)cols);
    ZERO_CUDA_TRY(cudaGetDevice(&dev), err);
    ZERO_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    if (sms < 1) sms = 1;
    for (q = 0; q < batch; q++) {
        float *y = x + q * r * c, *cur = y, *nxt = work + 2 * r * r;
        if ((res = zero__cuda_muon_norm(y, r * c, work, 2 * r * r + r * c, sms, s, err)) != ZERO_OK) return res;
        for (st = 0; st < steps; st++) {
            float *done = cur;
            if ((res = zero__cuda_muon_step(cur, nxt, work, work + r * r, r, c, rows > cols, sms, s, err)) != ZERO_OK)
                return res;
            cur = nxt, nxt = done;
        }
        if (cur != y && (res = zero__cuda_k_convert(y, ZERO_DTYPE_FP32, cur, ZERO_DTYPE_FP32, (size_t)(r * c), 0, s,
                                                    err)) != ZERO_OK)
            return res;
        if (scale != 1.0f && (res = zero__cuda_k_scale(y, (size_t)(r * c), ZERO_DTYPE_FP32, scale, s, err)) != ZERO_OK)
            return res;
    }
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>cuda-boot: host-only helpers of process start-up ----

   This section and the next three start the processes: the launcher's
   environment (zero_dist_env_read), the exchange of rank 0's ncclUniqueId
   over TCP (zero_bootstrap_exchange) and the local launcher that forks one
   process per GPU (zero_cuda_launch_local). Host code only: POSIX sockets,
   poll, fork; no CUDA call except the GPU count, made in a child. Here:
   strerror_r, the monotonic clock, sleeping, parsing. */

#ifdef __linux__
#  include <sys/prctl.h>
#endif

/* strerror_r is the GNU one (char *) under g++, the POSIX one (int) elsewhere:
   the overload picks whichever this libc has. */
static ZERO__UNUSED const char *zero__boot_strerror_pick(int r, const char *buf) {
    return r == 0 ? buf : "unknown error";
}
static ZERO__UNUSED const char *zero__boot_strerror_pick(const char *s, const char *buf) {
    (void)buf;
    return s;
}
static const char *zero__boot_strerror(int e, char *buf, size_t cap) {
    buf[0] = 0;
    return zero__boot_strerror_pick(strerror_r(e, buf, cap), buf);
}

extern "C" {

static double zero__boot_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds left before deadline for poll: 0 when past, at least 1 otherwise. */
static int zero__boot_ms_left(double deadline) {
    double left = deadline - zero__boot_now();
    if (left <= 0) return 0;
    if (left > 1e6) return 1000000000;
    return (int)(left * 1e3) + 1;
}

static void zero__boot_sleep(double s) {
    struct timespec ts;
    if (s <= 0) return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* "host:port", "[v6]:port" */
static void zero__boot_hostport(char *buf, size_t cap, const char *addr, int port) {
    if (strchr(addr, ':'))
        snprintf(buf, cap, "[%s]:%d", addr, port);
    else
        snprintf(buf, cap, "%s:%d", addr, port);
}

/* The whole string is decimal digits and its value lies in [lo, hi]:
   0 yes, 1 not digits (or empty), 2 out of range. */
static int zero__boot_parse_int(const char *s, long long lo, long long hi, long long *out) {
    long long v = 0;
    int big = 0;
    const char *p = s;
    if (!*p) return 1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return 1;
        if (v <= (LLONG_MAX - 9) / 10)
            v = v * 10 + (*p - '0');
        else
            big = 1;
    }
    if (big || v < lo || v > hi) return 2;
    *out = v;
    return 0;
}

/* ZERO_TIMEOUT_S in seconds: the value when it is a number in (0, 1e7), 0 when
   unset or empty, -1 otherwise. *text (when text is not NULL): the variable's
   value, NULL when unset. */
static double zero__boot_env_timeout(const char **text) {
    const char *v = getenv("ZERO_TIMEOUT_S");
    if (text) *text = v;
    if (v && *v) {
        char *end;
        double t = strtod(v, &end);
        if (*end == 0 && t > 0 && t < 1e7) return t;
        return -1;
    }
    return 0;
}

/* ---- >>cuda-env: the launcher's variables (torchrun, Slurm, Open MPI) ---- */

/* An error about variable `name` (set into err->key too). */
static zero_result zero__boot_env_fail(zero_error *err, const char *name, const char *fmt, ...)
    ZERO__PRINTF(3, 4);
static zero_result zero__boot_env_fail(zero_error *err, const char *name, const char *fmt, ...) {
    char text[900];
    va_list ap;
    zero_result r;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    r = zero__fail(err, ZERO_MSG_BOOTSTRAP_ENV, NULL, 0, 0, "%s", text);
    if (err) snprintf(err->key, sizeof err->key, "%s", name);
    return r;
}

/* Integer variable `name` in [lo, hi]: *set = 0 when unset; error when set and
   malformed (empty, not all digits, out of range). */
static zero_result zero__boot_env_int(const char *launcher, const char *name, long long lo,
                                      long long hi, int *set, long long *out, zero_error *err) {
    const char *v = getenv(name);
    *set = v != NULL;
    if (!v) return ZERO_OK;
    switch (zero__boot_parse_int(v, lo, hi, out)) {
    case 0: return ZERO_OK;
    case 1:
        return zero__boot_env_fail(err, name, "%s=\"%s\": %s (launcher: %s)", name, v,
                                   *v ? "not a non-negative decimal integer" : "set but empty",
                                   launcher);
    default:
        return zero__boot_env_fail(err, name, "%s=\"%s\": out of range, expected %lld to %lld (launcher: %s)",
                                   name, v, lo, hi, launcher);
    }
}

/* Slurm's tasks per node: "4", "4(x2)", "2(x3),1". The count of node `node`
   (node < 0: the count when all nodes agree, -1 when they differ). 0 ok,
   1 malformed, 2 node not in the list. */
static int zero__boot_slurm_per_node(const char *s, long long node, long long *out) {
    long long first = -1, idx = 0;
    int differ = 0;
    const char *p = s;
    for (;;) {
        long long n = 0, rep = 1;
        int digits = 0;
        for (; *p >= '0' && *p <= '9'; p++, digits++)
            if (n < 1000000000LL) n = n * 10 + (*p - '0');
        if (!digits || n < 1 || n >= 1000000000LL) return 1;
        if (*p == '(') {
            if (p[1] != 'x') return 1;
            p += 2;
            rep = 0;
            digits = 0;
            for (; *p >= '0' && *p <= '9'; p++, digits++)
                if (rep < 1000000000LL) rep = rep * 10 + (*p - '0');
            if (!digits || rep < 1 || rep >= 1000000000LL || *p != ')') return 1;
            p++;
        }
        if (first < 0) first = n;
        if (n != first) differ = 1;
        if (node >= idx && node < idx + rep) {
            *out = n;
            /* still check the rest is well formed */
            node = -2;
        }
        idx += rep;
        if (*p == 0) break;
        if (*p != ',') return 1;
        p++;
    }
    if (node == -2) return 0;
    if (node >= 0) return 2;
    *out = differ ? -1 : first;
    return 0;
}

typedef struct zero__boot_launcher {
    const char *name;
    const char *detect[2];  /* any of these set: this launcher started us */
    const char *rank, *world, *world_alt, *local_rank, *local_world;
} zero__boot_launcher;

static const zero__boot_launcher zero__boot_launchers[] = {
    {"torchrun", {"RANK", "WORLD_SIZE"}, "RANK", "WORLD_SIZE", NULL, "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    /* SLURM_NTASKS alone is also set in an salloc shell: only a task has SLURM_PROCID */
    {"slurm", {"SLURM_PROCID", NULL}, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID",
     "SLURM_NTASKS_PER_NODE"},
    {"openmpi", {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE", NULL, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
};

/* The launcher whose variables are present (first match), NULL for none. */
static const zero__boot_launcher *zero__boot_detect(void) {
    size_t i, j;
    for (i = 0; i < sizeof zero__boot_launchers / sizeof zero__boot_launchers[0]; i++)
        for (j = 0; j < 2; j++)
            if (zero__boot_launchers[i].detect[j] && getenv(zero__boot_launchers[i].detect[j]))
                return &zero__boot_launchers[i];
    return NULL;
}

/* MASTER_ADDR / MASTER_PORT into env: each from the variable when set, else
   from the fallbacks (Slurm: its launch node and 29500). Required for world > 1. */
static zero_result zero__boot_env_master(zero_dist_env *env, const char *launcher,
                                         const char *addr_fallback_var, int port_fallback,
                                         zero_error *err) {
    const char *addr = getenv("MASTER_ADDR");
    const char *addr_var = "MASTER_ADDR";
    long long port = 0;
    int port_set = 0;
    zero_result r;
    if (!addr && addr_fallback_var && getenv(addr_fallback_var)) {
        addr = getenv(addr_fallback_var);
        addr_var = addr_fallback_var;
    }
    if (addr) {
        if (!*addr)
            return zero__boot_env_fail(err, addr_var, "%s=\"\": set but empty (launcher: %s)", addr_var, launcher);
        if (strlen(addr) >= sizeof env->master_addr)
            return zero__boot_env_fail(err, addr_var, "%s=\"%.40s...\": longer than %d characters (launcher: %s)",
                                       addr_var, addr, (int)sizeof env->master_addr - 1, launcher);
        snprintf(env->master_addr, sizeof env->master_addr, "%s", addr);
    } else if (env->world > 1) {
        return zero__boot_env_fail(err, "MASTER_ADDR",
                                   "MASTER_ADDR is not set, but the world has %d ranks (launcher: %s)\n"
                                   "HINT: export MASTER_ADDR (the host of rank 0) and MASTER_PORT on every rank%s",
                                   env->world, launcher,
                                   addr_fallback_var ? ", or run under srun, which sets SLURM_LAUNCH_NODE_IPADDR" : "");
    }
    if ((r = zero__boot_env_int(launcher, "MASTER_PORT", 1, 65535, &port_set, &port, err)) != ZERO_OK) return r;
    {
        /* torchrun's own store (its rendezvous) listens on MASTER_PORT: zero's
           bootstrap takes the next port there; ZERO_BOOTSTRAP_PORT overrides */
        long long bport = 0;
        int bport_set = 0;
        if ((r = zero__boot_env_int(launcher, "ZERO_BOOTSTRAP_PORT", 1, 65535, &bport_set, &bport, err)) != ZERO_OK)
            return r;
        if (bport_set) {
            env->master_port = (int)bport;
            return ZERO_OK;
        }
        if (port_set && getenv("TORCHELASTIC_RUN_ID")) port = port < 65535 ? port + 1 : port - 1;
    }
    if (port_set)
        env->master_port = (int)port;
    else if (port_fallback > 0)
        env->master_port = port_fallback;
    else if (env->world > 1)
        return zero__boot_env_fail(err, "MASTER_PORT",
                                   "MASTER_PORT is not set, but the world has %d ranks (launcher: %s)\n"
                                   "HINT: export MASTER_PORT (a free TCP port on rank 0's host) on every rank",
                                   env->world, launcher);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_dist_env_read(zero_dist_env *env, zero_error *err) {
    const zero__boot_launcher *L;
    long long rank = 0, world = 0, lrank = 0, lworld = -1;
    int rank_set, world_set, lrank_set, lworld_set = 0;
    const char *world_var;
    zero_result r;
    if (!env) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_dist_env_read: env is NULL");
    memset(env, 0, sizeof *env);
    L = zero__boot_detect();
    if (!L) {
        env->world = 1;
        env->local_world = 1;
        snprintf(env->source, sizeof env->source, "%s", "none");
        zero__ok(err);
        return ZERO_OK;
    }
    snprintf(env->source, sizeof env->source, "%s", L->name);
    world_var = L->world;
    if (L->world_alt && !getenv(L->world) && getenv(L->world_alt)) world_var = L->world_alt;

    if ((r = zero__boot_env_int(L->name, L->rank, 0, INT_MAX - 1, &rank_set, &rank, err)) != ZERO_OK) return r;
    if ((r = zero__boot_env_int(L->name, world_var, 1, INT_MAX, &world_set, &world, err)) != ZERO_OK) return r;
    if ((r = zero__boot_env_int(L->name, L->local_rank, 0, INT_MAX - 1, &lrank_set, &lrank, err)) != ZERO_OK)
        return r;
    if (!rank_set)
        return zero__boot_env_fail(err, L->rank, "%s is not set, but %s=\"%s\" is (launcher: %s sets both)",
                                   L->rank, world_var, getenv(world_var), L->name);
    if (!world_set)
        return zero__boot_env_fail(err, world_var, "%s is not set, but %s=\"%s\" is (launcher: %s sets both)",
                                   world_var, L->rank, getenv(L->rank), L->name);
    if (rank >= world)
        return zero__boot_env_fail(err, L->rank, "%s=\"%s\": not below %s=\"%s\" (launcher: %s)", L->rank,
                                   getenv(L->rank), world_var, getenv(world_var), L->name);
    if (!lrank_set && world > 1)
        return zero__boot_env_fail(err, L->local_rank,
                                   "%s is not set, but %s=\"%s\" is (launcher: %s); the local rank picks the GPU",
                                   L->local_rank, world_var, getenv(world_var), L->name);
    if (lrank_set && lrank >= world)
        return zero__boot_env_fail(err, L->local_rank, "%s=\"%s\": not below %s=\"%s\" (launcher: %s)",
                                   L->local_rank, getenv(L->local_rank), world_var, getenv(world_var), L->name);

    if (strcmp(L->name, "slurm") == 0) {
        /* "4", or Slurm's compressed per-node list "4(x2)", "2(x3),1" */
        const char *lw_var = getenv(L->local_world) ? L->local_world
                             : getenv("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE"
                                                                   : NULL;
        if (lw_var) {
            const char *v = getenv(lw_var);
            long long node = -1;
            int node_set = 0, pr;
            if ((pr = zero__boot_slurm_per_node(v, -1, &lworld)) == 0 && lworld < 0) {
                /* the nodes differ: this node's entry, by SLURM_NODEID */
                if ((r = zero__boot_env_int(L->name, "SLURM_NODEID", 0, INT_MAX, &node_set, &node, err)) != ZERO_OK)
                    return r;
                lworld = -1;
                if (node_set) {
                    pr = zero__boot_slurm_per_node(v, node, &lworld);
                    if (pr == 2)
                        return zero__boot_env_fail(err, "SLURM_NODEID",
                                                   "SLURM_NODEID=\"%s\": %s=\"%s\" has no entry for it "
                                                   "(launcher: slurm)",
                                                   getenv("SLURM_NODEID"), lw_var, v);
                }
            }
            if (pr == 1)
                return zero__boot_env_fail(err, lw_var,
                                           "%s=\"%s\": not a count of tasks per node such as \"4\" or "
                                           "\"4(x2)\" (launcher: slurm)",
                                           lw_var, v);
            lworld_set = lworld > 0;
            if (lworld_set && lworld > world)
                return zero__boot_env_fail(err, lw_var,
                                           "%s=\"%s\": more tasks per node (%lld) than %s=\"%s\" (launcher: slurm)",
                                           lw_var, v, lworld, world_var, getenv(world_var));
            if (lworld_set && lrank_set && lrank >= lworld)
                return zero__boot_env_fail(err, L->local_rank,
                                           "%s=\"%s\": not below the %lld tasks of this node (%s=\"%s\") "
                                           "(launcher: slurm)",
                                           L->local_rank, getenv(L->local_rank), lworld, lw_var, v);
        }
    } else {
        if ((r = zero__boot_env_int(L->name, L->local_world, 1, INT_MAX, &lworld_set, &lworld, err)) != ZERO_OK)
            return r;
        if (lworld_set && lworld > world)
            return zero__boot_env_fail(err, L->local_world, "%s=\"%s\": above %s=\"%s\" (launcher: %s)", L->local_world,
                                       getenv(L->local_world), world_var, getenv(world_var), L->name);
        if (lworld_set && lrank_set && lrank >= lworld)
            return zero__boot_env_fail(err, L->local_rank, "%s=\"%s\": not below %s=\"%s\" (launcher: %s)",
                                       L->local_rank, getenv(L->local_rank), L->local_world,
                                       getenv(L->local_world), L->name);
        if (!lworld_set) lworld = -1;
    }
    env->rank = (int)rank;
    env->world = (int)world;
    env->local_rank = lrank_set ? (int)lrank : 0;
    env->local_world = (int)lworld;
    if (strcmp(L->name, "slurm") == 0)
        r = zero__boot_env_master(env, L->name, "SLURM_LAUNCH_NODE_IPADDR", 29500, err);
    else
        r = zero__boot_env_master(env, L->name, NULL, 0, err);
    if (r != ZERO_OK) return r;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>cuda-exchange: rank 0's ncclUniqueId to every rank over TCP ----

   The protocol, all integers big-endian:
     request (peer -> rank 0), 32 bytes:
       "zero" | u32 version | u32 rank | u32 world | u64 bytes | u64 nonce
     reply (rank 0 -> peer), 32 bytes, then the blob when status is 0:
       "zero" | u32 version | u32 status | u32 world | u64 bytes | u64 0
   The nonce is random per call: the same process retrying after a broken
   connection is served again; a second process claiming a served rank is
   refused. Rank 0 serves many connections at once through poll, so a client
   that connects and stays silent, or stops half-way through its request,
   holds up nobody; such a client is dropped when the table of connections
   is full (its oldest unfinished entry goes first), at the latest when rank
   0 has served everyone. Every socket is non-blocking; every wait is a poll
   bounded by the deadline. */

#define ZERO__BOOT_VERSION 1u
#define ZERO__BOOT_HDR 32

enum {
    ZERO__BOOT_ST_OK = 0,
    ZERO__BOOT_ST_VERSION = 1,
    ZERO__BOOT_ST_WORLD = 2,
    ZERO__BOOT_ST_BYTES = 3,
    ZERO__BOOT_ST_RANK = 4,
    ZERO__BOOT_ST_TAKEN = 5
};

#ifdef MSG_NOSIGNAL
#  define ZERO__BOOT_SEND_FLAGS MSG_NOSIGNAL
#else
#  define ZERO__BOOT_SEND_FLAGS 0
#endif

/* read-side end of stream, as an error code of zero__boot_io */
#define ZERO__BOOT_EOF (-1)

static void zero__boot_put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
    p[3] = (unsigned char)v;
}
static void zero__boot_put64(unsigned char *p, uint64_t v) {
    zero__boot_put32(p, (uint32_t)(v >> 32));
    zero__boot_put32(p + 4, (uint32_t)v);
}
static uint32_t zero__boot_get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static uint64_t zero__boot_get64(const unsigned char *p) {
    return (uint64_t)zero__boot_get32(p) << 32 | zero__boot_get32(p + 4);
}

static void zero__boot_header(unsigned char *h, uint32_t a, uint32_t b, uint64_t c, uint64_t d) {
    memcpy(h, "zero", 4);
    zero__boot_put32(h + 4, ZERO__BOOT_VERSION);
    zero__boot_put32(h + 8, a);
    zero__boot_put32(h + 12, b);
    zero__boot_put64(h + 16, c);
    zero__boot_put64(h + 24, d);
}

/* Non-blocking, close-on-exec, no SIGPIPE, no Nagle delay. */
static void zero__boot_prepare(int fd) {
    int one = 1, fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
#ifdef SO_NOSIGPIPE
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* 0 when fd is ready for ev (or has an error the next call will report), ETIMEDOUT
   at the deadline, else poll's errno. */
static int zero__boot_wait(int fd, short ev, double deadline) {
    for (;;) {
        struct pollfd p;
        int k, ms = zero__boot_ms_left(deadline);
        if (ms <= 0) return ETIMEDOUT;
        p.fd = fd;
        p.events = ev;
        p.revents = 0;
        k = poll(&p, 1, ms);
        if (k > 0) return 0;
        if (k < 0 && errno != EINTR) return errno;
    }
}

/* All n bytes through the non-blocking fd before the deadline (partial
   transfers and EINTR continue): 0, ZERO__BOOT_EOF, ETIMEDOUT or an errno. */
static int zero__boot_io(int fd, void *buf, size_t n, int writing, double deadline) {
    unsigned char *p = (unsigned char *)buf;
    size_t done = 0;
    while (done < n) {
        ssize_t k = writing ? send(fd, p + done, n - done, ZERO__BOOT_SEND_FLAGS) : recv(fd, p + done, n - done, 0);
        int e;
        if (k > 0) {
            done += (size_t)k;
            continue;
        }
        if (k == 0 && !writing) return ZERO__BOOT_EOF;
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return errno;
        if ((e = zero__boot_wait(fd, writing ? POLLOUT : POLLIN, deadline)) != 0) return e;
    }
    return 0;
}

/* Connect to one address before the deadline: 0 and *out, or an errno. */
static int zero__boot_connect(const struct addrinfo *ai, double deadline, int *out) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol), e, soerr = 0;
    socklen_t len = sizeof soerr;
    if (fd < 0) return errno;
    zero__boot_prepare(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            e = errno;
            close(fd);
            return e;
        }
        if ((e = zero__boot_wait(fd, POLLOUT, deadline)) != 0) {
            close(fd);
            return e;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) soerr = errno;
        if (soerr) {
            close(fd);
            return soerr;
        }
    }
    *out = fd;
    return 0;
}

static uint64_t zero__boot_nonce(void) {
    static volatile unsigned counter;
    struct timespec a, b;
    uint64_t x;
    int local;
    clock_gettime(CLOCK_REALTIME, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    x = (uint64_t)a.tv_sec * 1000000007ull ^ (uint64_t)a.tv_nsec ^ (uint64_t)b.tv_nsec << 21 ^
        (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&local ^ (uint64_t)__sync_add_and_fetch(&counter, 1) << 52;
    /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static const char *zero__boot_status_text(uint32_t st) {
    switch (st) {
    case ZERO__BOOT_ST_VERSION: return "a different version of zero's bootstrap protocol";
    case ZERO__BOOT_ST_WORLD: return "a different world size";
    case ZERO__BOOT_ST_BYTES: return "a different id size";
    case ZERO__BOOT_ST_RANK: return "a rank outside 1 .. world - 1";
    case ZERO__BOOT_ST_TAKEN: return "a rank another process already claimed";
    default: return "an unknown refusal";
    }
}

/* A peer: connect to rank 0 (retrying while it is not up), send the request,
   read the reply and the blob. */
static zero_result zero__boot_peer(const zero_dist_env *env, void *id, size_t bytes, double timeout_s,
                                   double deadline, const char *where, zero_error *err) {
    unsigned char req[ZERO__BOOT_HDR], rep[ZERO__BOOT_HDR];
    char last[320], ebuf[128], port[16];
    double pause = 0.005;
    int attempts = 0;
    snprintf(last, sizeof last, "%s", "no attempt was made");
    snprintf(port, sizeof port, "%d", env->master_port);
    zero__boot_header(req, (uint32_t)env->rank, (uint32_t)env->world, (uint64_t)bytes, zero__boot_nonce());
    while (zero__boot_now() < deadline) {
        struct addrinfo hints, *res = NULL, *ai;
        int g;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_protocol = IPPROTO_TCP;
        hints.ai_flags = AI_NUMERICSERV;
        attempts++;
        g = getaddrinfo(env->master_addr, port, &hints, &res);
        if (g != 0) {
            snprintf(last, sizeof last, "cannot resolve \"%s\": %s", env->master_addr,
                     g == EAI_SYSTEM ? zero__boot_strerror(errno, ebuf, sizeof ebuf) : gai_strerror(g));
            res = NULL;
        }
        for (ai = res; ai; ai = ai->ai_next) {
            int fd = -1, e;
            /* a silently dropped SYN must not keep the other addresses from a try */
            double until = zero__boot_now() + 5.0;
            uint32_t st;
            if (until > deadline) until = deadline;
            if ((e = zero__boot_connect(ai, until, &fd)) != 0) {
                snprintf(last, sizeof last, "connect: %s", zero__boot_strerror(e, ebuf, sizeof ebuf));
                continue;
            }
            e = zero__boot_io(fd, req, sizeof req, 1, deadline);
            if (e == 0) e = zero__boot_io(fd, rep, sizeof rep, 0, deadline);
            if (e != 0) {
                close(fd);
                if (e == ZERO__BOOT_EOF)
                    snprintf(last, sizeof last, "%s", "rank 0 closed the connection before replying");
                else if (e == ETIMEDOUT)
                    snprintf(last, sizeof last, "%s", "connected, but no reply came");
                else
                    snprintf(last, sizeof last, "%s", zero__boot_strerror(e, ebuf, sizeof ebuf));
                continue;
            }
            if (memcmp(rep, "zero", 4) != 0) {
                close(fd);
                freeaddrinfo(res);
                return zero__fail(err, ZERO_MSG_BOOTSTRAP_PROTOCOL, NULL, 0, 0,
                                  "zero_bootstrap_exchange: rank %d of %d: what answers at %s is not zero's "
                                  "bootstrap (another program holds MASTER_PORT)\nHINT: pick a free MASTER_PORT, the "
                                  "same on every rank",
                                  env->rank, env->world, where);
            }
            st = zero__boot_get32(rep + 8);
            if (st != ZERO__BOOT_ST_OK) {
                close(fd);
                freeaddrinfo(res);
                return zero__fail(err, ZERO_MSG_BOOTSTRAP_MISMATCH, NULL, 0, 0,
                                  "zero_bootstrap_exchange: rank %d of %d: rank 0 at %s (protocol version %u, "
                                  "world %u, id of %llu bytes) refused this rank (version %u, world %d, id of %zu "
                                  "bytes): %s\nHINT: every rank needs the same WORLD_SIZE and build; each RANK "
                                  "once; another job may be using MASTER_PORT",
                                  env->rank, env->world, where, (unsigned)zero__boot_get32(rep + 4),
                                  (unsigned)zero__boot_get32(rep + 12), (unsigned long long)zero__boot_get64(rep + 16),
                                  ZERO__BOOT_VERSION, env->world, bytes, zero__boot_status_text(st));
            }
            e = zero__boot_io(fd, id, bytes, 0, deadline);
            close(fd);
            if (e != 0) {
                snprintf(last, sizeof last, "reading the id: %s",
                         e == ZERO__BOOT_EOF ? "rank 0 closed the connection"
                         : e == ETIMEDOUT   ? "timed out"
                                            : zero__boot_strerror(e, ebuf, sizeof ebuf));
                continue;
            }
            freeaddrinfo(res);
            zero__ok(err);
            return ZERO_OK;
        }
        if (res) freeaddrinfo(res);
        {
            double left = deadline - zero__boot_now();
            zero__boot_sleep(pause < left ? pause : left);
            pause = pause * 2 < 0.2 ? pause * 2 : 0.2;
        }
    }
    return zero__fail(err, ZERO_MSG_BOOTSTRAP_TIMEOUT, NULL, 0, 0,
                      "zero_bootstrap_exchange: rank %d of %d could not reach rank 0 at %s within %.3g s "
                      "(%d attempts; last: %s)\nHINT: check that rank 0 runs and reaches the bootstrap, that "
                      "MASTER_ADDR and MASTER_PORT are the same on every rank and reachable from this host "
                      "(firewall); ZERO_TIMEOUT_S sets the deadline",
                      env->rank, env->world, where, timeout_s, attempts, last);
}

typedef struct zero__boot_conn {
    int fd;
    int writing;            /* 0: reading the request; 1: writing the reply */
    int ok;                 /* the reply is the shared one with the blob */
    int rank;
    size_t got, sent;
    double since;
    unsigned char req[ZERO__BOOT_HDR];
    unsigned char rep[ZERO__BOOT_HDR]; /* a refusal */
} zero__boot_conn;

#define ZERO__BOOT_MAX_LISTEN 8

/* Bind and listen on every address master_addr resolves to. */
static zero_result zero__boot_listen(const zero_dist_env *env, const char *where, int *fds, int *n,
                                     zero_error *err) {
    struct addrinfo hints, *res = NULL, *ai, *bj;
    char port[16], ebuf[128];
    int g, e = 0, inuse = 0;
    *n = 0;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    snprintf(port, sizeof port, "%d", env->master_port);
    g = getaddrinfo(env->master_addr, port, &hints, &res);
    if (g != 0)
        return zero__fail(err, ZERO_MSG_BOOTSTRAP_LISTEN, NULL, 0, 0,
                          "zero_bootstrap_exchange: rank 0 cannot resolve MASTER_ADDR \"%s\": %s\nHINT: "
                          "MASTER_ADDR must name rank 0's host (an address or a resolvable name)",
                          env->master_addr,
                          g == EAI_SYSTEM ? zero__boot_strerror(errno, ebuf, sizeof ebuf) : gai_strerror(g));
    for (ai = res; ai && *n < ZERO__BOOT_MAX_LISTEN; ai = ai->ai_next) {
        int fd, one = 1, dup = 0;
        for (bj = res; bj != ai; bj = bj->ai_next)
            if (bj->ai_addrlen == ai->ai_addrlen && memcmp(bj->ai_addr, ai->ai_addr, ai->ai_addrlen) == 0) dup = 1;
        if (dup) continue;
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
            e = errno;
            if (e == EADDRINUSE) inuse = 1;
            close(fd);
            continue;
        }
        zero__boot_prepare(fd);
        fds[(*n)++] = fd;
    }
    freeaddrinfo(res);
    /* one address taken by someone else: peers that try it would meet them */
    if (inuse || *n == 0) {
        int i;
        for (i = 0; i < *n; i++) close(fds[i]);
        *n = 0;
        if (inuse) e = EADDRINUSE;
        return zero__fail(err, ZERO_MSG_BOOTSTRAP_LISTEN, NULL, 0, 0,
                          "zero_bootstrap_exchange: rank 0 cannot listen on %s: %s\nHINT: %s", where,
                          zero__boot_strerror(e, ebuf, sizeof ebuf),
                          e == EADDRINUSE ? "another process holds MASTER_PORT (an earlier run still alive, or "
                                            "another job): set another MASTER_PORT on every rank"
                          : e == EADDRNOTAVAIL ? "MASTER_ADDR is not an address of this host: rank 0 must run on "
                                                 "the host MASTER_ADDR names (with Slurm, set MASTER_ADDR to the "
                                                 "first node of the job)"
                                               : "check MASTER_ADDR and MASTER_PORT");
    }
    return ZERO_OK;
}

/* Rank 0 while it serves: the listening sockets, the open connections, and per
   rank whether it was served, whether a process claimed it and with which nonce. */
typedef struct zero__boot_server {
    const zero_dist_env *env;
    size_t bytes;
    int lfd[ZERO__BOOT_MAX_LISTEN], nl;
    int world, cap, nconn, nserved, refused;
    unsigned char *served, *claimed;
    uint64_t *nonces;
    unsigned char *okbuf; /* the reply to an accepted request: header, then the blob */
    zero__boot_conn *conns;
    struct pollfd *pfd;   /* the listening sockets, then one per connection */
    char refusal[200];    /* the last refused request, for the time-out message */
} zero__boot_server;

/* Listen, and make the tables and the shared reply. On failure *sv still goes
   to zero__boot_server_close. */
static zero_result zero__boot_server_open(zero__boot_server *sv, const zero_dist_env *env, const void *id,
                                          size_t bytes, const char *where, zero_error *err) {
    int world = env->world;
    zero_result r;
    memset(sv, 0, sizeof *sv);
    sv->env = env;
    sv->bytes = bytes;
    sv->world = world;
    sv->cap = (world - 1 < 1000 ? world - 1 : 1000) + 16;
    if ((r = zero__boot_listen(env, where, sv->lfd, &sv->nl, err)) != ZERO_OK) return r;
    sv->served = (unsigned char *)zero__cuda_calloc((size_t)world, 1);
    sv->claimed = (unsigned char *)zero__cuda_calloc((size_t)world, 1);
    sv->nonces = (uint64_t *)zero__cuda_calloc((size_t)world, sizeof *sv->nonces);
    sv->okbuf = (unsigned char *)ZERO_MALLOC(ZERO__BOOT_HDR + bytes);
    sv->conns = (zero__boot_conn *)zero__cuda_calloc((size_t)sv->cap, sizeof *sv->conns);
    sv->pfd = (struct pollfd *)zero__cuda_calloc((size_t)(sv->cap + sv->nl), sizeof *sv->pfd);
    if (!sv->served || !sv->claimed || !sv->nonces || !sv->okbuf || !sv->conns || !sv->pfd)
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                          "zero_bootstrap_exchange: rank 0: no memory for the table of %d ranks", world);
    zero__boot_header(sv->okbuf, ZERO__BOOT_ST_OK, (uint32_t)world, (uint64_t)bytes, 0);
    if (bytes) memcpy(sv->okbuf + ZERO__BOOT_HDR, id, bytes);
    return ZERO_OK;
}

static void zero__boot_server_close(zero__boot_server *sv) {
    int i;
    for (i = 0; i < sv->nconn; i++) close(sv->conns[i].fd);
    for (i = 0; i < sv->nl; i++) close(sv->lfd[i]);
    ZERO_FREE(sv->served);
    ZERO_FREE(sv->claimed);
    ZERO_FREE(sv->nonces);
    ZERO_FREE(sv->okbuf);
    ZERO_FREE(sv->conns);
    ZERO_FREE(sv->pfd);
}

/* The deadline passed: name the ranks that never came (the first 24). */
static zero_result zero__boot_server_timeout(const zero__boot_server *sv, const char *where, double timeout_s,
                                             zero_error *err) {
    char list[512];
    size_t n = 0;
    int i, missing = 0, shown = 0;
    list[0] = 0;
    for (i = 1; i < sv->world; i++) {
        if (sv->served[i]) continue;
        missing++;
        if (shown < 24 && n < sizeof list) {
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", shown ? ", " : "", i);
            shown++;
        }
    }
    if (missing > shown && n < sizeof list) snprintf(list + n, sizeof list - n, " and %d more", missing - shown);
    return zero__fail(err, ZERO_MSG_BOOTSTRAP_TIMEOUT, NULL, 0, 0,
                      "zero_bootstrap_exchange: rank 0 of %d listened on %s for %.3g s: %s %s never "
                      "connected%s%s%s"
                      "\nHINT: start every rank with the same MASTER_ADDR, MASTER_PORT and world size; a rank "
                      "that failed earlier logged its own error%s; ZERO_TIMEOUT_S sets the deadline",
                      sv->world, where, timeout_s, missing == 1 ? "rank" : "ranks", list,
                      sv->refused ? " (refused: " : "", sv->refused ? sv->refusal : "", sv->refused ? ")" : "",
                      strcmp(sv->env->source, "slurm") == 0 ? "; under Slurm start the tasks with srun (a batch "
                                                              "script alone is one task)"
                                                            : "");
}

/* A whole request in c->req: accept it (c->ok, the rank claimed with its
   nonce) or prepare the refusal in c->rep; either way c goes on to writing. */
static void zero__boot_server_judge(zero__boot_server *sv, zero__boot_conn *c) {
    uint32_t ver = zero__boot_get32(c->req + 4), rk = zero__boot_get32(c->req + 8);
    uint32_t w = zero__boot_get32(c->req + 12);
    uint64_t b = zero__boot_get64(c->req + 16), nonce = zero__boot_get64(c->req + 24);
    uint32_t st = ZERO__BOOT_ST_OK;
    if (ver != ZERO__BOOT_VERSION)
        st = ZERO__BOOT_ST_VERSION;
    else if (w != (uint32_t)sv->world)
        st = ZERO__BOOT_ST_WORLD;
    else if (b != (uint64_t)sv->bytes)
        st = ZERO__BOOT_ST_BYTES;
    else if (rk == 0 || rk >= (uint32_t)sv->world)
        st = ZERO__BOOT_ST_RANK;
    else if (sv->claimed[rk] && sv->nonces[rk] != nonce)
        st = ZERO__BOOT_ST_TAKEN;
    c->writing = 1;
    c->rank = (int)rk;
    if (st == ZERO__BOOT_ST_OK) {
        sv->claimed[rk] = 1;
        sv->nonces[rk] = nonce;
        c->ok = 1;
    } else {
        sv->refused++;
        snprintf(sv->refusal, sizeof sv->refusal,
                 "%d connection%s speaking zero's protocol, the last with rank %u, world %u, "
                 "id of %llu bytes, version %u",
                 sv->refused, sv->refused == 1 ? "" : "s", (unsigned)rk, (unsigned)w, (unsigned long long)b,
                 (unsigned)ver);
        zero__boot_header(c->rep, st, (uint32_t)sv->world, (uint64_t)sv->bytes, 0);
    }
}

/* Send what the socket takes of c's reply. 1: done with c (the reply is out, a
   served rank counted, or the peer failed); 0: the socket is full, keep c. */
static int zero__boot_server_send(zero__boot_server *sv, zero__boot_conn *c) {
    const unsigned char *buf = c->ok ? sv->okbuf : c->rep;
    size_t total = c->ok ? ZERO__BOOT_HDR + sv->bytes : ZERO__BOOT_HDR;
    ssize_t t = 0;
    while (c->sent < total) {
        t = send(c->fd, buf + c->sent, total - c->sent, ZERO__BOOT_SEND_FLAGS);
        if (t > 0) {
            c->sent += (size_t)t;
            continue;
        }
        if (t < 0 && errno == EINTR) continue;
        break;
    }
    if (c->sent < total) return t < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : 1;
    if (c->ok && !sv->served[c->rank]) {
        sv->served[c->rank] = 1;
        sv->nserved++;
    }
    return 1;
}

/* A connection poll found ready: read what came of its request, judge it once
   whole, then send the reply. 1: done with c (close it); 0: keep it. */
static int zero__boot_server_step(zero__boot_server *sv, zero__boot_conn *c) {
    if (!c->writing) {
        ssize_t t = recv(c->fd, c->req + c->got, ZERO__BOOT_HDR - c->got, 0);
        if (t < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
        if (t <= 0) return 1;
        c->got += (size_t)t;
        /* garbage is dropped as soon as it shows */
        if (memcmp(c->req, "zero", c->got < 4 ? c->got : 4) != 0) return 1;
        if (c->got < ZERO__BOOT_HDR) return 0;
        zero__boot_server_judge(sv, c);
        /* on to the write: the socket is very likely writable */
    }
    return zero__boot_server_send(sv, c);
}

/* Every connection poll found ready, then the table compacted. */
static void zero__boot_server_serve(zero__boot_server *sv) {
    int i, j = 0;
    /* pfd[nl + i] belongs to conns[i] */
    for (i = 0; i < sv->nconn; i++) {
        zero__boot_conn *c = &sv->conns[i];
        if (!sv->pfd[sv->nl + i].revents) continue;
        if (zero__boot_server_step(sv, c)) {
            close(c->fd);
            c->fd = -1;
        }
    }
    /* (the pollfd indexes are no longer needed) */
    for (i = 0; i < sv->nconn; i++)
        if (sv->conns[i].fd >= 0) sv->conns[j++] = sv->conns[i];
    sv->nconn = j;
}

/* Accept on the listening sockets poll found ready; with the table full, the
   oldest client still sending its request makes room. */
static void zero__boot_server_accept(zero__boot_server *sv) {
    int i;
    for (i = 0; i < sv->nl; i++) {
        int burst;
        if (!(sv->pfd[i].revents & POLLIN)) continue;
        for (burst = 0; burst < 64; burst++) {
            int fd = accept(sv->lfd[i], NULL, NULL);
            zero__boot_conn *c;
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                break; /* EAGAIN: no more; EMFILE and others: try again after the next poll */
            }
            if (sv->nconn == sv->cap) {
                int j, oldest = -1;
                for (j = 0; j < sv->nconn; j++)
                    if (!sv->conns[j].writing && (oldest < 0 || sv->conns[j].since < sv->conns[oldest].since))
                        oldest = j;
                if (oldest < 0) {
                    close(fd);
                    continue;
                }
                close(sv->conns[oldest].fd);
                sv->conns[oldest] = sv->conns[--sv->nconn];
            }
            zero__boot_prepare(fd);
            c = &sv->conns[sv->nconn++];
            memset(c, 0, sizeof *c);
            c->fd = fd;
            c->since = zero__boot_now();
        }
    }
}

/* Rank 0: serve the blob to world - 1 peers, one poll over every socket at a time. */
static zero_result zero__boot_root(const zero_dist_env *env, const void *id, size_t bytes, double timeout_s,
                                   double deadline, const char *where, zero_error *err) {
    zero__boot_server sv;
    zero_result r = zero__boot_server_open(&sv, env, id, bytes, where, err);
    while (r == ZERO_OK && sv.nserved < sv.world - 1) {
        int ms = zero__boot_ms_left(deadline), i, k, np = 0;
        if (ms <= 0) {
            r = zero__boot_server_timeout(&sv, where, timeout_s, err);
            break;
        }
        for (i = 0; i < sv.nl; i++) {
            sv.pfd[np].fd = sv.lfd[i];
            sv.pfd[np].events = POLLIN;
            sv.pfd[np++].revents = 0;
        }
        for (i = 0; i < sv.nconn; i++) {
            sv.pfd[np].fd = sv.conns[i].fd;
            sv.pfd[np].events = sv.conns[i].writing ? POLLOUT : POLLIN;
            sv.pfd[np++].revents = 0;
        }
        k = poll(sv.pfd, (nfds_t)np, ms);
        if (k < 0) {
            char ebuf[128];
            if (errno == EINTR) continue;
            r = zero__fail(err, ZERO_MSG_BOOTSTRAP_LISTEN, NULL, 0, 0, "zero_bootstrap_exchange: rank 0: poll: %s",
                           zero__boot_strerror(errno, ebuf, sizeof ebuf));
            break;
        }
        if (k == 0) continue;
        zero__boot_server_serve(&sv);
        if (sv.nserved >= sv.world - 1) break;
        zero__boot_server_accept(&sv);
    }
    if (r == ZERO_OK) zero__ok(err);
    zero__boot_server_close(&sv);
    return r;
}

ZERO__DEF zero_result zero_bootstrap_exchange(const zero_dist_env *env, void *id, size_t bytes,
                                              double timeout_s, zero_error *err) {
    char where[300];
    double deadline;
    if (!env) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_bootstrap_exchange: env is NULL");
    if (!id && bytes)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_bootstrap_exchange: id is NULL");
    if (env->world < 1 || env->rank < 0 || env->rank >= env->world)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: rank %d of world %d is out of range", env->rank, env->world);
    if (env->world == 1) {
        zero__ok(err);
        return ZERO_OK;
    }
    if (!(timeout_s > 0) || timeout_s > 1e9)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: timeout_s %g is not a positive number of seconds", timeout_s);
    if (bytes > ((size_t)1 << 30))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: %zu bytes to exchange; at most 1 GiB", bytes);
    if (!memchr(env->master_addr, 0, sizeof env->master_addr) || !env->master_addr[0] || env->master_port < 1 ||
        env->master_port > 65535)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_bootstrap_exchange: world %d needs master_addr and master_port (got \"%.64s\" "
                          "and %d)",
                          env->world, memchr(env->master_addr, 0, sizeof env->master_addr) ? env->master_addr : "",
                          env->master_port);
    zero__boot_hostport(where, sizeof where, env->master_addr, env->master_port);
    deadline = zero__boot_now() + timeout_s;
    if (env->rank == 0) return zero__boot_root(env, id, bytes, timeout_s, deadline, where, err);
    return zero__boot_peer(env, id, bytes, timeout_s, deadline, where, err);
}

/* ---- >>cuda-launch: the local launcher, one process per GPU ---- */

/* GPUs visible to a fresh process, counted in a child so that this process
   never initialises CUDA (which does not survive fork). -1 when the count
   could not be had. */
static int zero__boot_gpu_count(void) {
    int fds[2], n = -1, st;
    pid_t pid;
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int count = 0;
        ssize_t w;
        close(fds[0]);
        if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
        w = write(fds[1], &count, sizeof count);
        _exit(w == (ssize_t)sizeof count ? 0 : 1);
    }
    close(fds[1]);
    {
        /* driver start-up on a large node takes seconds; a hung driver must not hang us */
        double deadline = zero__boot_now() + 120.0;
        size_t got = 0;
        while (got < sizeof n) {
            ssize_t k;
            if (zero__boot_wait(fds[0], POLLIN, deadline) != 0) break;
            k = read(fds[0], (char *)&n + got, sizeof n - got);
            if (k > 0)
                got += (size_t)k;
            else if (!(k < 0 && errno == EINTR))
                break;
        }
        if (got < sizeof n) {
            n = -1;
            kill(pid, SIGKILL);
        }
    }
    close(fds[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return n;
}

/* A free TCP port on 127.0.0.1 (the kernel's pick), -errno on failure. */
static int zero__boot_free_port(void) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port, e;
    if (fd < 0) return -errno;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        e = errno;
        close(fd);
        return -e;
    }
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int zero__boot_child_code(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

/* How many processes to start: ZERO_LOCAL_GPUS when set, else the GPUs a
   child process sees (0 when it could not count them). */
static zero_result zero__launch_gpus(long long *ngpu, zero_error *err) {
    int set = 0;
    zero_result r;
    *ngpu = 0;
    if ((r = zero__boot_env_int("zero_cuda_launch_local", "ZERO_LOCAL_GPUS", 0, 4096, &set, ngpu, err)) != ZERO_OK)
        return r;
    if (!set) {
        *ngpu = zero__boot_gpu_count();
        if (*ngpu < 0) {
            zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                      "zero_cuda_launch_local: the GPUs could not be counted (the probe process failed); "
                      "going on as one process");
            *ngpu = 0;
        }
    }
    return ZERO_OK;
}

/* Child i of n, right after the fork: end with the launcher (Linux), then
   torchrun's variables for rank i on 127.0.0.1:port. */
static zero_result zero__launch_child(int i, int n, int port, pid_t parent, zero_error *err) {
    char v[32], ebuf[128];
    int ok = 1;
#ifdef __linux__
    /* the launcher killed (not by a terminal's ^C, which reaches all): end too */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
#else
    (void)parent;
#endif
    snprintf(v, sizeof v, "%d", i);
    ok &= setenv("RANK", v, 1) == 0;
    ok &= setenv("LOCAL_RANK", v, 1) == 0;
    snprintf(v, sizeof v, "%d", n);
    ok &= setenv("WORLD_SIZE", v, 1) == 0;
    ok &= setenv("LOCAL_WORLD_SIZE", v, 1) == 0;
    ok &= setenv("MASTER_ADDR", "127.0.0.1", 1) == 0;
    snprintf(v, sizeof v, "%d", port);
    ok &= setenv("MASTER_PORT", v, 1) == 0;
    if (!ok)
        return zero__fail(err, ZERO_MSG_LAUNCH_LOCAL, NULL, 0, 0, "zero_cuda_launch_local: rank %d: setenv: %s", i,
                          zero__boot_strerror(errno, ebuf, sizeof ebuf));
    zero__ok(err);
    return ZERO_OK;
}

/* Fork the n ranks into pids[]. In a child *child is 1 and the result is the
   child's (zero__launch_child). In the parent a failed fork stops and reaps
   the children already started. */
static zero_result zero__launch_fork(int n, int port, pid_t *pids, int *child, zero_error *err) {
    pid_t parent = getpid();
    char ebuf[128];
    int i;
    *child = 0;
    fflush(NULL);
    for (i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            *child = 1;
            return zero__launch_child(i, n, port, parent, err);
        }
        if (pid < 0) {
            int e = errno, j, st;
            for (j = 0; j < i; j++) kill(pids[j], SIGTERM);
            for (j = 0; j < i; j++)
                while (waitpid(pids[j], &st, 0) < 0 && errno == EINTR) {
                }
            return zero__fail(err, ZERO_MSG_LAUNCH_LOCAL, NULL, 0, 0,
                              "zero_cuda_launch_local: fork of process %d of %d: %s (the %d started were stopped)",
                              i, n, zero__boot_strerror(e, ebuf, sizeof ebuf), i);
        }
        pids[i] = pid;
    }
    return ZERO_OK;
}

/* One pass over the children not yet done: reap the ones that ended (waitpid
   by pid: other children of the program are not ours to reap), log each
   failure, keep the worst exit code and the time of the first failure. 1 when
   any ended. */
static int zero__launch_reap(int n, const pid_t *pids, int *done, int *left, int *worst, double *failed_at) {
    int i, progress = 0;
    for (i = 0; i < n; i++) {
        int st = 0, code;
        pid_t w;
        if (done[i]) continue;
        w = waitpid(pids[i], &st, WNOHANG);
        if (w == 0 || (w < 0 && errno == EINTR)) continue;
        done[i] = 1;
        (*left)--;
        progress = 1;
        code = w == pids[i] ? zero__boot_child_code(st) : 1; /* w < 0: reaped elsewhere, status lost */
        if (code > *worst) *worst = code;
        if (code != 0) {
            if (w == pids[i] && WIFSIGNALED(st))
                zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                          "zero_cuda_launch_local: rank %d (pid %d) was killed by signal %d", i, (int)pids[i],
                          WTERMSIG(st));
            else
                zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                          "zero_cuda_launch_local: rank %d (pid %d) exited with status %d", i, (int)pids[i], code);
            if (*failed_at < 0) *failed_at = zero__boot_now();
        }
    }
    return progress;
}

/* Wait for the n children; the worst exit code. After a failure the others
   get `grace` seconds to fail on their own, then SIGTERM, 10 s later SIGKILL. */
static int zero__launch_wait(int n, const pid_t *pids, int *done, double grace) {
    int i, left = n, worst = 0, termed = 0, killed = 0;
    double failed_at = -1, termed_at = 0;
    while (left > 0) {
        int progress = zero__launch_reap(n, pids, done, &left, &worst, &failed_at);
        if (left == 0) break;
        if (failed_at >= 0 && !termed && zero__boot_now() - failed_at > grace) {
            zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_LAUNCH_INFO,
                      "zero_cuda_launch_local: %d process%s still running %.3g s after the first failure: "
                      "sending SIGTERM",
                      left, left == 1 ? "" : "es", grace);
            for (i = 0; i < n; i++)
                if (!done[i]) kill(pids[i], SIGTERM);
            termed = 1;
            termed_at = zero__boot_now();
        }
        if (termed && !killed && zero__boot_now() - termed_at > 10.0) {
            for (i = 0; i < n; i++)
                if (!done[i]) kill(pids[i], SIGKILL);
            killed = 1;
        }
        if (!progress) zero__boot_sleep(0.01);
    }
    return worst;
}

ZERO__DEF zero_result zero_cuda_launch_local(int *exit_code, zero_error *err) {
    zero_dist_env env;
    zero_result r;
    long long ngpu = 0;
    int port, n, child = 0;
    double grace = 600, t;
    pid_t *pids;
    int *done;
    char ebuf[128];
    if (!exit_code) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_cuda_launch_local: exit_code is NULL");
    *exit_code = -1;
    /* started by a launcher (or its variables are wrong: say so now) */
    if ((r = zero_dist_env_read(&env, err)) != ZERO_OK) return r;
    if (strcmp(env.source, "none") != 0) {
        zero__ok(err);
        return ZERO_OK;
    }
    if ((r = zero__launch_gpus(&ngpu, err)) != ZERO_OK) return r;
    if (ngpu <= 1) {
        zero__ok(err);
        return ZERO_OK;
    }
    n = (int)ngpu;
    if ((t = zero__boot_env_timeout(NULL)) > 0) grace = t;
    port = zero__boot_free_port();
    if (port < 0)
        return zero__fail(err, ZERO_MSG_LAUNCH_LOCAL, NULL, 0, 0,
                          "zero_cuda_launch_local: no free TCP port on 127.0.0.1: %s",
                          zero__boot_strerror(-port, ebuf, sizeof ebuf));
    pids = (pid_t *)zero__cuda_calloc((size_t)n, sizeof *pids);
    done = (int *)zero__cuda_calloc((size_t)n, sizeof *done);
    if (!pids || !done) {
        ZERO_FREE(pids);
        ZERO_FREE(done);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_cuda_launch_local");
    }
    /* an inherited SIG_IGN would make the children vanish unreaped, statuses lost */
    {
        struct sigaction sa;
        if (sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) signal(SIGCHLD, SIG_DFL);
    }
    zero__log(NULL, ZERO_LOG_INFO, ZERO_MSG_LAUNCH_INFO,
              "zero_cuda_launch_local: %d GPUs: starting %d processes (MASTER_ADDR 127.0.0.1, MASTER_PORT %d)", n, n,
              port);
    r = zero__launch_fork(n, port, pids, &child, err);
    if (r == ZERO_OK && !child) *exit_code = zero__launch_wait(n, pids, done, grace);
    ZERO_FREE(pids);
    ZERO_FREE(done);
    if (r == ZERO_OK && !child) zero__ok(err);
    return r;
}

} /* extern "C" */

/* ---- >>cuda-backend: the backend's state and its sticky group failure ----

   One process per GPU. Two streams: the compute stream (the program's, or one
   made here) and a communication stream for NCCL and the kernels around it;
   the engine orders them with events. The host blocks only in sync and
   event_sync, and there it polls against a deadline (sync also against NCCL's
   asynchronous error), so a vanished peer turns into ZERO_ERR_TIMEOUT or
   ZERO_ERR_NCCL instead of a hang (after a failed sync the communicator is
   aborted, with the group communicators; the backend refuses further work). */

struct zero_event {
    cudaEvent_t ev;
};

/* One range from vm_reserve: per granule the physical handle mapped there
   (0: unbacked; the driver's handles are never 0). */
/* A granule of a range. A piece is one physical handle mapped over granules
   [head, head + size); its fields sit at its head. */
typedef struct zero__cuda_vm_gran {
    CUmemGenericAllocationHandle h; /* its piece's handle; 0: unmapped */
    uint32_t head;                  /* its piece's first granule */
    uint32_t size, live;            /* at a head: the piece's granules, and how many of them are backed */
    unsigned char on;               /* backed, as vm_back and vm_unback see it */
} zero__cuda_vm_gran;

typedef struct zero__cuda_vm_range {
    CUdeviceptr base;
    size_t n;              /* granules; the range is n * granule bytes */
    zero__cuda_vm_gran *g; /* n entries */
} zero__cuda_vm_range;

struct zero_cuda {
    zero_backend be;
    zero_dist_env env;
    int device;
    cudaStream_t stream[ZERO_STREAM_COUNT];
    int own_compute;
#ifndef ZERO_NO_NCCL
    ncclComm_t comm;
    int own_comm;
    /* groups_init's shard and replica communicators, split from comm and
       always owned here (even when comm is the caller's); NULL for a group
       of one rank (a copy) or of every rank (comm itself) */
    ncclComm_t group_comm[ZERO_GROUP_COUNT];
    int in_group;    /* between coll_group_begin and coll_group_end */
#endif
#ifdef ZERO__CUDA_WINDOWS
    /* win_alloc's buffers (ncclMemAlloc) and their windows on comm */
    void *win_p[8];
    ncclWindow_t win_h[8];
    size_t win_bytes[8];
    int n_win;
#endif
    int shard_size;  /* groups_init's G; 0: no groups made */
    double timeout_s;
    zero_cuda_options opt;
    double *scratch; /* sumsq and Adam partial sums: ZERO__CUDA_SUMSQ_SCRATCH doubles per stream (zero__cuda_scratch_of) */
    size_t allocated[ZERO_MEM_KIND_COUNT];
    int failed;      /* sticky: a collective failed or timed out */
    zero_error failure;
    /* the vm_ operations (zero_alloc), all under vm_lock: the ranges, and the
       pool of unmapped pieces (a handle and its granules) that vm_back maps
       before it creates any. vm_mapped + vm_pooled <= vm_total (granules: of
       the mappings, of the pool, of the live ranges) always, so physical
       memory never exceeds the ranges' and vm_pool (vm_total entries) never
       grows outside vm_reserve; and vm_pooled <= 16 x vm_piece_max, so the
       pool holds what a training loop's next fetches take back (pieces of
       a layer's size), not the memory of every layer unmapped */
    pthread_mutex_t vm_lock;
    int vm_lock_ok;                         /* vm_lock initialised (destroy may come before) */
    size_t vm_granule;                      /* 0: not asked yet */
    zero__cuda_vm_range *vm_range;
    int vm_n, vm_cap;
    CUmemGenericAllocationHandle *vm_pool;
    uint32_t *vm_pool_size;                 /* each pooled handle's granules */
    size_t vm_pool_n, vm_pool_cap, vm_pooled, vm_mapped, vm_total;
    uint32_t vm_piece_max;                  /* the largest piece mapped so far, granules */
    int64_t vm_created;                     /* cuMemCreate calls that succeeded */
};

static double zero__cuda_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static zero_result zero__cuda_sticky(zero_cuda *c, zero_error *err) {
    if (err) *err = c->failure;
    return c->failure.code ? c->failure.code : ZERO_ERR_STATE;
}

/* Remember a failure of the group: later calls repeat it at once. */
static zero_result zero__cuda_fail_group(zero_cuda *c, zero_result r, zero_error *err) {
    if (err) {
        err->code = r;
        c->failure = *err;
    }
    c->failure.code = r;
    c->failed = 1;
#ifndef ZERO_NO_NCCL
    for (int g = 0; g < ZERO_GROUP_COUNT; g++)
        if (c->group_comm[g]) ncclCommAbort(c->group_comm[g]), c->group_comm[g] = NULL;
    if (c->comm) ncclCommAbort(c->comm), c->comm = NULL;
#endif
    return r;
}

#define ZERO__CUDA_CTX(fn)                                               \
    zero_cuda *c = (zero_cuda *)ctx;                                     \
    if (!c) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda " fn ": no backend"); \
    if (c->failed) return zero__cuda_sticky(c, err)

static cudaStream_t zero__cuda_stream_of(zero_cuda *c, zero_stream_id s) {
    return c->stream[(unsigned)s < ZERO_STREAM_COUNT ? s : ZERO_STREAM_COMM];
}

/* Stream s's scratch of the reductions (sumsq, sumsq_segs, Adam's): one per stream, so that kernels on two
   streams never share one (the engine takes statistics on the compute stream beside the comm stream's) */
static double *zero__cuda_scratch_of(zero_cuda *c, zero_stream_id s) {
    return c->scratch + (size_t)((unsigned)s < ZERO_STREAM_COUNT ? s : ZERO_STREAM_COMM) * ZERO__CUDA_SUMSQ_SCRATCH;
}

/* ---- >>cuda-be-memory: device, pinned and host memory (allocation hooks honoured) ---- */

static zero_result zero__cuda_alloc(void *ctx, zero_mem_kind kind, size_t bytes, void **out, zero_error *err) {
    void *p = NULL;
    cudaError_t e = cudaSuccess;
    ZERO__CUDA_CTX("alloc");
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda alloc: out is NULL");
    *out = NULL;
    if ((unsigned)kind >= ZERO_MEM_KIND_COUNT)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda alloc: memory kind %d", (int)kind);
    if (c->opt.alloc) {
        p = bytes ? c->opt.alloc(c->opt.alloc_user, kind, bytes) : NULL;
        if (bytes && !p)
            return zero__fail(err, kind == ZERO_MEM_DEVICE ? ZERO_MSG_CUDA_OUT_OF_MEMORY : ZERO_MSG_OUT_OF_MEMORY, NULL, 0,
                              0, "the allocation hook returned NULL for %zu bytes of %s memory", bytes,
                              kind == ZERO_MEM_DEVICE ? "device" : kind == ZERO_MEM_PINNED ? "pinned" : "host");
    } else if (bytes) {
        if (kind == ZERO_MEM_DEVICE) e = cudaMalloc(&p, bytes);
        else if (kind == ZERO_MEM_PINNED) e = cudaMallocHost(&p, bytes);
        else p = ZERO_MALLOC(bytes);
        if (e != cudaSuccess || !p) {
            char what[96];
            if (e != cudaSuccess) {
                snprintf(what, sizeof what, "%s of %zu bytes on GPU %d", kind == ZERO_MEM_DEVICE ? "cudaMalloc" : "cudaMallocHost",
                         bytes, c->device);
                return zero_cuda_check(e, what, __FILE__, __LINE__, err);
            }
            return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "malloc of %zu bytes failed", bytes);
        }
    }
    c->allocated[kind] += bytes;
    *out = p;
    return ZERO_OK;
}

static void zero__cuda_free(void *ctx, zero_mem_kind kind, void *p) {
    zero_cuda *c = (zero_cuda *)ctx;
    if (!c || !p) return;
    if (c->opt.free) c->opt.free(c->opt.alloc_user, kind, p);
    else if (kind == ZERO_MEM_DEVICE) cudaFree(p);
    else if (kind == ZERO_MEM_PINNED) cudaFreeHost(p);
    else ZERO_FREE(p);
}

static zero_result zero__cuda_memset0(void *ctx, void *p, size_t bytes, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("memset0");
    if (!bytes) return ZERO_OK;
    ZERO_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, zero__cuda_stream_of(c, s)), err);
    return ZERO_OK;
}

static zero_result zero__cuda_copy(void *ctx, void *dst, const void *src, size_t bytes, zero_stream_id s,
                                   zero_error *err) {
    ZERO__CUDA_CTX("copy");
    if (!bytes) return ZERO_OK;
    ZERO_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, zero__cuda_stream_of(c, s)), err);
    return ZERO_OK;
}

/* ---- >>cuda-be-streams: events, stream order, and the polled waits ---- */

/* An event; timed: one cudaEventElapsedTime can read (ZERO_TIMELINE), else
   without timing, the cheaper kind every stream order uses. */
static zero_result zero__cuda_event_make(void *ctx, zero_event **out, int timed, zero_error *err) {
    zero_event *ev;
    ZERO__CUDA_CTX("event_create");
    ev = (zero_event *)ZERO_MALLOC(sizeof *ev);
    if (!ev) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "cuda event_create");
    if (zero_cuda_check(cudaEventCreateWithFlags(&ev->ev, timed ? cudaEventDefault : cudaEventDisableTiming),
                        "cudaEventCreateWithFlags", __FILE__, __LINE__, err) != ZERO_OK) {
        ZERO_FREE(ev);
        return ZERO_ERR_CUDA;
    }
    *out = ev;
    return ZERO_OK;
}

static zero_result zero__cuda_event_create(void *ctx, zero_event **out, zero_error *err) {
    return zero__cuda_event_make(ctx, out, 0, err);
}

static zero_result zero__cuda_event_create_timed(void *ctx, zero_event **out, zero_error *err) {
    return zero__cuda_event_make(ctx, out, 1, err);
}

static void zero__cuda_event_destroy(void *ctx, zero_event *ev) {
    (void)ctx;
    if (!ev) return;
    cudaEventDestroy(ev->ev);
    ZERO_FREE(ev);
}

static zero_result zero__cuda_event_record(void *ctx, zero_event *ev, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("event_record");
    ZERO_CUDA_TRY(cudaEventRecord(ev->ev, zero__cuda_stream_of(c, s)), err);
    return ZERO_OK;
}

static zero_result zero__cuda_stream_wait(void *ctx, zero_stream_id s, zero_event *ev, zero_error *err) {
    ZERO__CUDA_CTX("stream_wait");
    ZERO_CUDA_TRY(cudaStreamWaitEvent(zero__cuda_stream_of(c, s), ev->ev, 0), err);
    return ZERO_OK;
}

/* The host waits until ev has completed: polling against ZERO_TIMEOUT_S,
   reading no backend state but the deadline, so the engine's CPU-step thread
   may call it while the training thread uses the backend. */
/* The memory a pointer points into, for the engine's check of a program's
   tensor memory: device (or managed) memory, pinned host memory, or host
   memory CUDA does not know. */
static int zero__cuda_mem_kind_of(void *ctx, const void *ptr) {
    cudaPointerAttributes a;
    (void)ctx;
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
        cudaGetLastError(); /* not a CUDA pointer: clear the sticky-free error */
        return ZERO_MEM_HOST;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return ZERO_MEM_DEVICE;
    case cudaMemoryTypeHost: return ZERO_MEM_PINNED;
    default: return ZERO_MEM_HOST;
    }
}

/* mem_info: the current device's free and total memory (the backend's
   device, which the program's thread has current); -1 when CUDA cannot say. */
static int zero__cuda_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes) {
    (void)ctx;
    if (!free_bytes || !total_bytes) return -1;
    if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}

/* The bytes from ptr to the end of its device allocation, from the
   driver's cuMemGetAddressRange (reached through the runtime, so nothing
   more to link); -1 where the toolkit or the driver cannot tell. */
static int64_t zero__cuda_mem_extent(void *ctx, const void *ptr) {
    (void)ctx;
#if CUDART_VERSION >= 12050
    typedef int (*range_fn)(unsigned long long *base, size_t *size, unsigned long long dptr);
    static range_fn fn = []() -> range_fn {
        void *f = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            cudaGetLastError();
            return NULL;
        }
        return (range_fn)f;
    }();
    unsigned long long base = 0;
    size_t size = 0;
    if (!fn || fn(&base, &size, (unsigned long long)(uintptr_t)ptr) != 0) return -1;
    return (int64_t)(base + size - (unsigned long long)(uintptr_t)ptr);
#else
    (void)ptr;
    return -1;
#endif
}

#ifndef ZERO_CUDA_SYNC_SPIN_US
#define ZERO_CUDA_SYNC_SPIN_US 5000 /* microseconds a sync polls without sleeping */
#endif

/* Wait for event ev, polling as zero__cuda_sync does. */
static zero_result zero__cuda_event_sync(void *ctx, zero_event *ev, zero_error *err) {
    zero_cuda *c = (zero_cuda *)ctx;
    double t0 = zero__cuda_now(), now;
    if (!c || !ev) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda event_sync: no backend or event");
    for (;;) {
        cudaError_t e = cudaEventQuery(ev->ev);
        if (e == cudaSuccess) return ZERO_OK;
        if (e != cudaErrorNotReady) return zero_cuda_check(e, "cudaEventQuery", __FILE__, __LINE__, err);
        now = zero__cuda_now();
        if (now - t0 > c->timeout_s)
            return zero__fail(err, ZERO_MSG_NCCL_TIMEOUT, NULL, 0, 0,
                              "rank %d: a copy to the host did not finish within %.0f s (the communication stream "
                              "is stuck behind a collective)\nHINT: look at the other ranks' first error; ZERO_TIMEOUT_S "
                              "sets the deadline",
                              c->env.rank, c->timeout_s);
        if (now - t0 < 1e-6 * ZERO_CUDA_SYNC_SPIN_US) {
            sched_yield();
        } else {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

/* The milliseconds from a to b, both complete (waited for within the deadline). */
static zero_result zero__cuda_event_elapsed(void *ctx, zero_event *a, zero_event *b, double *ms, zero_error *err) {
    float f = 0;
    zero_result r;
    if (!a || !b || !ms) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda event_elapsed: an event or ms is NULL");
    if ((r = zero__cuda_event_sync(ctx, a, err)) != ZERO_OK || (r = zero__cuda_event_sync(ctx, b, err)) != ZERO_OK) return r;
    ZERO_CUDA_TRY(cudaEventElapsedTime(&f, a->ev, b->ev), err);
    *ms = f;
    return ZERO_OK;
}

#ifndef ZERO_NO_NCCL
/* NCCL's asynchronous error of the communicator and of the group
   communicators (ncclSuccess while healthy). */
static zero_result zero__cuda_nccl_health(zero_cuda *c, const char *what, zero_error *err) {
    for (int g = 0; g < ZERO_GROUP_COUNT; g++) {
        ncclComm_t comm = g == ZERO_GROUP_WORLD ? c->comm : c->group_comm[g];
        ncclResult_t async = ncclSuccess;
        if (!comm) continue;
        if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
            zero_nccl_check(async != ncclSuccess ? async : ncclInternalError, what, __FILE__, __LINE__, err);
            return zero__cuda_fail_group(c, ZERO_ERR_NCCL, err);
        }
    }
    return ZERO_OK;
}
#endif

/* Wait for stream s, polling NCCL's health and the deadline. For its first
   ZERO_CUDA_SYNC_SPIN_US it polls back to back (yielding the core between
   polls): the step's waits last about a millisecond and are followed by the
   launches of the next phase, so a wait that ends late leaves the GPU idle
   for as long. A sleep of 50 us between polls, with the kernel's default
   50 us timer slack, returned 50-100 us after the stream finished. Longer
   waits sleep between polls. */
static zero_result zero__cuda_sync(void *ctx, zero_stream_id s, zero_error *err) {
    double t0, now;
    ZERO__CUDA_CTX("sync");
    t0 = zero__cuda_now();
    for (;;) {
        cudaError_t e = cudaStreamQuery(zero__cuda_stream_of(c, s));
        if (e == cudaSuccess) return ZERO_OK;
        if (e != cudaErrorNotReady) {
            zero_cuda_check(e, "cudaStreamQuery (a kernel or copy on zero's stream failed)", __FILE__, __LINE__, err);
            return zero__cuda_fail_group(c, ZERO_ERR_CUDA, err);
        }
#ifndef ZERO_NO_NCCL
        if (zero__cuda_nccl_health(c, "a collective failed while zero waited for it", err) != ZERO_OK) return ZERO_ERR_NCCL;
#endif
        now = zero__cuda_now();
        if (now - t0 > c->timeout_s) {
            zero__fail(err, ZERO_MSG_NCCL_TIMEOUT, NULL, 0, 0,
                       "rank %d: the %s stream did not finish within %.0f s: a peer rank stopped, or never reached the "
                       "same collective\nHINT: look at the other ranks' first error; ZERO_TIMEOUT_S sets the deadline",
                       c->env.rank, s == ZERO_STREAM_COMPUTE ? "compute" : "communication", c->timeout_s);
            return zero__cuda_fail_group(c, ZERO_ERR_TIMEOUT, err);
        }
        if (now - t0 < 1e-6 * ZERO_CUDA_SYNC_SPIN_US) {
            sched_yield();
        } else { /* a long wait: sleep between polls */
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- >>cuda-be-collectives: NCCL collectives (copies for one GPU without NCCL) ---- */

/* A collective over one rank: recv = send (AVG divides by 1). */
static zero_result zero__cuda_copy_if(zero_cuda *c, void *dst, const void *src, size_t bytes, zero_stream_id s,
                                      zero_error *err) {
    if (dst == src || !bytes) return ZERO_OK;
    ZERO_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, zero__cuda_stream_of(c, s)), err);
    return ZERO_OK;
}

#ifndef ZERO_NO_NCCL
static int zero__cuda_nccl_type(zero_dtype dt, ncclDataType_t *out) {
    switch ((int)dt) {
    case ZERO_DTYPE_FP32: *out = ncclFloat32; return 1;
    case ZERO_DTYPE_FP16: *out = ncclFloat16; return 1;
    case ZERO_DTYPE_BF16: *out = ncclBfloat16; return 1;
    case ZERO__DTYPE_F64: *out = ncclFloat64; return 1;
    default: return 0;
    }
}
static ncclRedOp_t zero__cuda_nccl_op(zero_op op) {
    return op == ZERO_OP_MAX ? ncclMax : op == ZERO_OP_MIN ? ncclMin : op == ZERO_OP_AVG ? ncclAvg : ncclSum;
}

/* After an NCCL call on the non-blocking communicator comm: wait until it is
   enqueued (ncclInProgress), with the deadline. */
static zero_result zero__cuda_nccl_done(zero_cuda *c, ncclComm_t comm, ncclResult_t r, const char *what,
                                        zero_error *err) {
    double t0 = zero__cuda_now();
    while (r == ncclInProgress) {
        if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) r = ncclInternalError;
        if (r == ncclInProgress && zero__cuda_now() - t0 > c->timeout_s) {
            zero__fail(err, ZERO_MSG_NCCL_TIMEOUT, NULL, 0, 0, "rank %d: %s was not enqueued within %.0f s", c->env.rank, what,
                       c->timeout_s);
            return zero__cuda_fail_group(c, ZERO_ERR_TIMEOUT, err);
        }
    }
    if (r != ncclSuccess) {
        zero_nccl_check(r, what, __FILE__, __LINE__, err);
        return zero__cuda_fail_group(c, ZERO_ERR_NCCL, err);
    }
    return ZERO_OK;
}

#define ZERO__CUDA_COLL_PROLOGUE(fn)                                                                \
    ncclDataType_t nt;                                                                              \
    ZERO__CUDA_CTX(fn);                                                                             \
    if (!zero__cuda_nccl_type(dt, &nt))                                                             \
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda " fn ": dtype %d", (int)dt);     \
    if (!c->comm) return zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "cuda " fn ": no communicator"); \
    if (!count) return ZERO_OK

static zero_result zero__cuda_reduce_scatter(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt,
                                             zero_op op, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_COLL_PROLOGUE("reduce_scatter");
    return zero__cuda_nccl_done(c, c->comm,
                                ncclReduceScatter(send, recv, count, nt, zero__cuda_nccl_op(op), c->comm,
                                                  zero__cuda_stream_of(c, s)),
                                "ncclReduceScatter", err);
}
static zero_result zero__cuda_all_gather(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt,
                                         zero_stream_id s, zero_error *err) {
    ZERO__CUDA_COLL_PROLOGUE("all_gather");
    return zero__cuda_nccl_done(c, c->comm, ncclAllGather(send, recv, count, nt, c->comm, zero__cuda_stream_of(c, s)),
                                "ncclAllGather", err);
}
/* coll_group_begin / _end: ncclGroupStart / ncclGroupEnd; the communicators
   are non-blocking, so the end is polled on each against the deadline. */
static zero_result zero__cuda_coll_group_begin(void *ctx, zero_error *err) {
    ncclResult_t r;
    ZERO__CUDA_CTX("coll_group_begin");
    if (c->in_group) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda coll_group_begin: a group is open already");
    if ((r = ncclGroupStart()) != ncclSuccess) {
        zero_nccl_check(r, "ncclGroupStart", __FILE__, __LINE__, err);
        return zero__cuda_fail_group(c, ZERO_ERR_NCCL, err);
    }
    c->in_group = 1;
    zero__ok(err);
    return ZERO_OK;
}
static zero_result zero__cuda_coll_group_end(void *ctx, zero_error *err) {
    zero_result res;
    ZERO__CUDA_CTX("coll_group_end");
    if (!c->in_group) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda coll_group_end: no group is open");
    c->in_group = 0;
    res = zero__cuda_nccl_done(c, c->comm, ncclGroupEnd(), "ncclGroupEnd", err);
    for (int g = 0; g < ZERO_GROUP_COUNT && res == ZERO_OK; g++)
        if (c->group_comm[g] && c->group_comm[g] != c->comm)
            res = zero__cuda_nccl_done(c, c->group_comm[g], ncclInProgress, "ncclGroupEnd", err);
    return res;
}
#ifdef ZERO__CUDA_WINDOWS
/* win_alloc / win_free (zero_backend): ncclMemAlloc's memory registered on
   the world communicator with NCCL_WIN_COLL_SYMMETRIC, so that NCCL's
   symmetric kernels can run the collectives whose buffers all lie in such
   windows at the same offsets. Both are collective (each rank, in the same
   order); registration polls the non-blocking communicator with the
   deadline. */
static zero_result zero__cuda_win_alloc(void *ctx, size_t bytes, void **out, zero_error *err) {
    void *p = NULL;
    ncclWindow_t w = NULL;
    ncclResult_t r;
    zero_result res;
    ZERO__CUDA_CTX("win_alloc");
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda win_alloc: out is NULL");
    *out = NULL;
    if (!c->comm) return zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "cuda win_alloc: no communicator");
    if (c->n_win == (int)(sizeof c->win_p / sizeof c->win_p[0]))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda win_alloc: more than %d window buffers",
                          (int)(sizeof c->win_p / sizeof c->win_p[0]));
    if ((r = ncclMemAlloc(&p, bytes)) != ncclSuccess || !p) {
        char what[96];
        snprintf(what, sizeof what, "ncclMemAlloc of %zu bytes on GPU %d", bytes, c->device);
        return zero_nccl_check(r != ncclSuccess ? r : ncclSystemError, what, __FILE__, __LINE__, err);
    }
    /* On a non-blocking communicator the registration may return ncclSuccess
       while its group job still runs (the handle unset, the next call on the
       communicator refused): it is polled until the communicator is ready. */
    if ((r = ncclCommWindowRegister(c->comm, p, bytes, &w, NCCL_WIN_COLL_SYMMETRIC)) == ncclSuccess) r = ncclInProgress;
    if ((res = zero__cuda_nccl_done(c, c->comm, r, "ncclCommWindowRegister", err)) != ZERO_OK) {
        ncclMemFree(p);
        return res;
    }
    c->win_p[c->n_win] = p;
    c->win_h[c->n_win] = w;
    c->win_bytes[c->n_win++] = bytes;
    c->allocated[ZERO_MEM_DEVICE] += bytes;
    *out = p;
    return ZERO_OK;
}

static void zero__cuda_win_free(void *ctx, void *p) {
    zero_cuda *c = (zero_cuda *)ctx;
    zero_error err;
    if (!c || !p) return;
    for (int i = 0; i < c->n_win; i++) {
        if (c->win_p[i] != p) continue;
        if (c->comm && !c->failed) { /* (a failed communicator is aborted: its windows went with it) */
            ncclResult_t r = ncclCommWindowDeregister(c->comm, c->win_h[i]); /* (polled as win_alloc's) */
            (void)zero__cuda_nccl_done(c, c->comm, r == ncclSuccess ? ncclInProgress : r, "ncclCommWindowDeregister", &err);
        }
        ncclMemFree(p);
        c->allocated[ZERO_MEM_DEVICE] -= c->win_bytes[i];
        c->n_win--;
        c->win_p[i] = c->win_p[c->n_win], c->win_h[i] = c->win_h[c->n_win], c->win_bytes[i] = c->win_bytes[c->n_win];
        return;
    }
}
#endif

static zero_result zero__cuda_all_reduce(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt, zero_op op,
                                         zero_stream_id s, zero_error *err) {
    ZERO__CUDA_COLL_PROLOGUE("all_reduce");
    return zero__cuda_nccl_done(c, c->comm,
                                ncclAllReduce(send, recv, count, nt, zero__cuda_nccl_op(op), c->comm,
                                              zero__cuda_stream_of(c, s)),
                                "ncclAllReduce", err);
}
static zero_result zero__cuda_broadcast(void *ctx, void *buf, size_t count, zero_dtype dt, int root, zero_stream_id s,
                                        zero_error *err) {
    ZERO__CUDA_COLL_PROLOGUE("broadcast");
    return zero__cuda_nccl_done(c, c->comm, ncclBroadcast(buf, buf, count, nt, root, c->comm, zero__cuda_stream_of(c, s)),
                                "ncclBroadcast", err);
}
#else
/* one GPU, no NCCL: the collectives of a world of one */
static zero_result zero__cuda_reduce_scatter(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt,
                                             zero_op op, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("reduce_scatter");
    (void)op;
    return zero__cuda_copy_if(c, recv, send, count * zero_dtype_size(dt), s, err);
}
static zero_result zero__cuda_all_gather(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt,
                                         zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("all_gather");
    return zero__cuda_copy_if(c, recv, send, count * zero_dtype_size(dt), s, err);
}
static zero_result zero__cuda_all_reduce(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt, zero_op op,
                                         zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("all_reduce");
    (void)op;
    return zero__cuda_copy_if(c, recv, send, count * zero_dtype_size(dt), s, err);
}
static zero_result zero__cuda_broadcast(void *ctx, void *buf, size_t count, zero_dtype dt, int root, zero_stream_id s,
                                        zero_error *err) {
    ZERO__CUDA_CTX("broadcast");
    (void)buf, (void)count, (void)dt, (void)root, (void)s;
    return ZERO_OK;
}
#endif

/* Hybrid sharding: groups_init splits comm into the shard group (color
   rank / G) and the replica group (color rank % G), both keyed by the world
   rank so their ranks come in world order. A group of one rank makes no
   communicator (its collectives are copies), nor does a group of every rank
   (comm itself). The splits are non-blocking and polled against the
   deadline, like the first communicator: a rank that never calls is
   ZERO_ERR_TIMEOUT. Before splitting, the ranks compare their G with one
   small all-reduce, so a rank with another G is an error naming both. */

static const char *zero__cuda_group_name(zero_group g) {
    return g == ZERO_GROUP_SHARD ? "shard group" : g == ZERO_GROUP_REPLICA ? "replica group" : "world";
}

/* Ranks in group g of this backend (groups made). */
static int zero__cuda_group_size(const zero_cuda *c, zero_group g) {
    return g == ZERO_GROUP_SHARD ? c->shard_size : g == ZERO_GROUP_REPLICA ? c->env.world / c->shard_size : c->env.world;
}

#ifndef ZERO_NO_NCCL
/* Destroy the group communicators; the streams are idle (or failed). */
static void zero__cuda_groups_free(zero_cuda *c) {
    for (int g = 0; g < ZERO_GROUP_COUNT; g++) {
        if (!c->group_comm[g]) continue;
        if (c->failed) ncclCommAbort(c->group_comm[g]);
        else ncclCommDestroy(c->group_comm[g]);
        c->group_comm[g] = NULL;
    }
}

/* Wait until comm's pending call (a split, here) has finished: NCCL writes
   the new communicator into *child when it has. */
static zero_result zero__cuda_split_wait(zero_cuda *c, ncclComm_t *child, const char *what, zero_error *err) {
    double t0 = zero__cuda_now();
    ncclResult_t r = ncclInProgress;
    for (int k = 0; k < 2; k++) { /* the parent's async job, then the child's own init */
        ncclComm_t comm = k == 0 ? c->comm : *child;
        if (!comm) break;
        for (;;) {
            if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) r = ncclInternalError;
            if (r != ncclInProgress) break;
            if (zero__cuda_now() - t0 > c->timeout_s) {
                zero__fail(err, ZERO_MSG_NCCL_TIMEOUT, NULL, 0, 0,
                           "rank %d of %d: %s was not ready within %.0f s: a rank did not call groups_init\nHINT: every "
                           "rank must create the engine with the same mics_shard_size; ZERO_TIMEOUT_S sets the deadline",
                           c->env.rank, c->env.world, what, c->timeout_s);
                return zero__cuda_fail_group(c, ZERO_ERR_TIMEOUT, err);
            }
            sched_yield();
        }
        if (r != ncclSuccess) {
            zero_nccl_check(r, what, __FILE__, __LINE__, err);
            return zero__cuda_fail_group(c, ZERO_ERR_NCCL, err);
        }
    }
    return ZERO_OK;
}

/* Every rank's G equals this rank's: the max and min of (G, -G) over comm,
   on the communication stream. The buffer is stream-ordered (no device-wide
   sync in cudaMalloc / cudaFree); the host reads it only after the polled
   wait (a copy to pageable memory would block without a deadline). */
static zero_result zero__cuda_groups_agree(zero_cuda *c, int G, zero_error *err) {
    double h[2] = {(double)G, -(double)G}, *d = NULL;
    cudaStream_t st = c->stream[ZERO_STREAM_COMM];
    zero_result r;
    ZERO_CUDA_TRY(cudaMallocAsync((void **)&d, sizeof h, st), err);
    r = zero_cuda_check(cudaMemcpyAsync(d, h, sizeof h, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync", __FILE__, __LINE__,
                        err);
    if (r == ZERO_OK)
        r = zero__cuda_nccl_done(c, c->comm, ncclAllReduce(d, d, 2, ncclFloat64, ncclMax, c->comm, st),
                                 "ncclAllReduce (groups_init's shard size)", err);
    if (r == ZERO_OK) r = zero__cuda_sync(c, ZERO_STREAM_COMM, err);
    if (r == ZERO_OK)
        r = zero_cuda_check(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync", __FILE__,
                            __LINE__, err);
    cudaFreeAsync(d, st);
    if (r != ZERO_OK) return r;
    if (h[0] != (double)G || -h[1] != (double)G)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "rank %d: groups_init with shard size %d, but another rank asked for %d\nHINT: every rank must "
                          "use the same mics_shard_size",
                          c->env.rank, G, h[0] != (double)G ? (int)h[0] : (int)-h[1]);
    return ZERO_OK;
}
#endif

static zero_result zero__cuda_groups_init(void *ctx, int G, zero_error *err) {
    ZERO__CUDA_CTX("groups_init");
    if (G < 1 || G > c->env.world || c->env.world % G)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "rank %d: groups_init: shard size %d must be 1 .. %d and divide the world of %d ranks", c->env.rank,
                          G, c->env.world, c->env.world);
    if (c->shard_size == G) return ZERO_OK;
#ifndef ZERO_NO_NCCL
    {
        zero_result r;
        ncclResult_t nr;
        if (c->shard_size) { /* other groups: let their collectives end, then destroy them */
            if ((r = zero__cuda_sync(c, ZERO_STREAM_COMM, err)) != ZERO_OK) return r;
            if ((r = zero__cuda_sync(c, ZERO_STREAM_COMPUTE, err)) != ZERO_OK) return r;
            zero__cuda_groups_free(c);
            c->shard_size = 0;
        }
        if (c->env.world > 1) {
            if (!c->comm) return zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "cuda groups_init: no communicator");
            if ((r = zero__cuda_groups_agree(c, G, err)) != ZERO_OK) return r;
        }
        for (int g = ZERO_GROUP_SHARD; g <= ZERO_GROUP_REPLICA; g++) {
            int n = g == ZERO_GROUP_SHARD ? G : c->env.world / G;
            int color = g == ZERO_GROUP_SHARD ? c->env.rank / G : c->env.rank % G;
            ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
            char what[64];
            if (n == 1 || n == c->env.world) continue; /* a copy, or comm itself */
            snprintf(what, sizeof what, "ncclCommSplit (%s)", zero__cuda_group_name((zero_group)g));
            cfg.blocking = 0;
            nr = ncclCommSplit(c->comm, color, c->env.rank, &c->group_comm[g], &cfg);
            if (nr != ncclSuccess && nr != ncclInProgress) {
                zero_nccl_check(nr, what, __FILE__, __LINE__, err);
                return zero__cuda_fail_group(c, ZERO_ERR_NCCL, err);
            }
            if ((r = zero__cuda_split_wait(c, &c->group_comm[g], what, err)) != ZERO_OK) return r;
            if (!c->group_comm[g]) {
                zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "rank %d: %s gave no communicator", c->env.rank, what);
                return zero__cuda_fail_group(c, ZERO_ERR_NCCL, err);
            }
        }
    }
#endif
    c->shard_size = G;
    return ZERO_OK;
}

/* The group collectives: ZERO_GROUP_WORLD is the plain one; a group of one
   rank copies; a group of every rank runs on comm, the others on their
   split communicator. */
#define ZERO__CUDA_GROUP_PROLOGUE(fn)                                                                        \
    int gsize;                                                                                               \
    ZERO__CUDA_CTX(fn);                                                                                      \
    if ((unsigned)g >= ZERO_GROUP_COUNT)                                                                     \
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda " fn ": group %d", (int)g);               \
    if (g != ZERO_GROUP_WORLD && !c->shard_size)                                                             \
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,                                                 \
                          "rank %d: cuda " fn " on the %s before groups_init made the groups", c->env.rank,  \
                          zero__cuda_group_name(g));                                                         \
    gsize = zero__cuda_group_size(c, g)

#ifndef ZERO_NO_NCCL
/* The communicator of group g (size > 1) and the call's name for errors. */
static ncclComm_t zero__cuda_group_comm(zero_cuda *c, zero_group g, int gsize, const char *call, char *what, size_t n) {
    snprintf(what, n, "%s (%s)", call, zero__cuda_group_name(g));
    return gsize == c->env.world ? c->comm : c->group_comm[g];
}
#define ZERO__CUDA_GROUP_COMM(fn, call)                                                                      \
    ncclDataType_t nt;                                                                                       \
    char what[64];                                                                                           \
    ncclComm_t comm = zero__cuda_group_comm(c, g, gsize, call, what, sizeof what);                           \
    if (!zero__cuda_nccl_type(dt, &nt))                                                                      \
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda " fn ": dtype %d", (int)dt);              \
    if (!comm)                                                                                               \
        return zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "cuda " fn ": no communicator for the %s",    \
                          zero__cuda_group_name(g));                                                         \
    if (!count) return ZERO_OK
#endif

static zero_result zero__cuda_group_reduce_scatter(void *ctx, zero_group g, const void *send, void *recv, size_t count,
                                                   zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_GROUP_PROLOGUE("group_reduce_scatter");
    if (g == ZERO_GROUP_WORLD) return zero__cuda_reduce_scatter(ctx, send, recv, count, dt, op, s, err);
    if (gsize == 1) return zero__cuda_copy_if(c, recv, send, count * zero_dtype_size(dt), s, err);
#ifndef ZERO_NO_NCCL
    {
        ZERO__CUDA_GROUP_COMM("group_reduce_scatter", "ncclReduceScatter");
        return zero__cuda_nccl_done(c, comm,
                                    ncclReduceScatter(send, recv, count, nt, zero__cuda_nccl_op(op), comm,
                                                      zero__cuda_stream_of(c, s)),
                                    what, err);
    }
#else
    return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda group_reduce_scatter: built with ZERO_NO_NCCL");
#endif
}
static zero_result zero__cuda_group_all_gather(void *ctx, zero_group g, const void *send, void *recv, size_t count,
                                               zero_dtype dt, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_GROUP_PROLOGUE("group_all_gather");
    if (g == ZERO_GROUP_WORLD) return zero__cuda_all_gather(ctx, send, recv, count, dt, s, err);
    if (gsize == 1) return zero__cuda_copy_if(c, recv, send, count * zero_dtype_size(dt), s, err);
#ifndef ZERO_NO_NCCL
    {
        ZERO__CUDA_GROUP_COMM("group_all_gather", "ncclAllGather");
        return zero__cuda_nccl_done(c, comm, ncclAllGather(send, recv, count, nt, comm, zero__cuda_stream_of(c, s)), what,
                                    err);
    }
#else
    return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda group_all_gather: built with ZERO_NO_NCCL");
#endif
}
static zero_result zero__cuda_group_all_reduce(void *ctx, zero_group g, const void *send, void *recv, size_t count,
                                               zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_GROUP_PROLOGUE("group_all_reduce");
    if (g == ZERO_GROUP_WORLD) return zero__cuda_all_reduce(ctx, send, recv, count, dt, op, s, err);
    if (gsize == 1) return zero__cuda_copy_if(c, recv, send, count * zero_dtype_size(dt), s, err);
#ifndef ZERO_NO_NCCL
    {
        ZERO__CUDA_GROUP_COMM("group_all_reduce", "ncclAllReduce");
        return zero__cuda_nccl_done(c, comm,
                                    ncclAllReduce(send, recv, count, nt, zero__cuda_nccl_op(op), comm,
                                                  zero__cuda_stream_of(c, s)),
                                    what, err);
    }
#else
    return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda group_all_reduce: built with ZERO_NO_NCCL");
#endif
}

/* ---- >>cuda-be-kernels: the backend's kernel hooks on its streams ---- */

static zero_result zero__cuda_scale(void *ctx, void *x, size_t n, zero_dtype dt, float factor, zero_stream_id s,
                                    zero_error *err) {
    ZERO__CUDA_CTX("scale");
    return zero__cuda_k_scale(x, n, dt, factor, zero__cuda_stream_of(c, s), err);
}
static zero_result zero__cuda_convert(void *ctx, void *dst, zero_dtype ddt, const void *src, zero_dtype sdt, size_t n,
                                      int accumulate, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("convert");
    return zero__cuda_k_convert(dst, ddt, src, sdt, n, accumulate, zero__cuda_stream_of(c, s), err);
}
static zero_result zero__cuda_sumsq(void *ctx, const void *x, size_t n, zero_dtype dt, double *out, zero_stream_id s,
                                    zero_error *err) {
    ZERO__CUDA_CTX("sumsq");
    return zero__cuda_k_sumsq(x, n, dt, out, zero__cuda_scratch_of(c, s), ZERO__CUDA_SUMSQ_SCRATCH, zero__cuda_stream_of(c, s), err);
}
static zero_result zero__cuda_adam(void *ctx, const zero_adam_args *a, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("adam");
    return zero__cuda_k_adam(a, zero__cuda_scratch_of(c, s), ZERO__CUDA_SUMSQ_SCRATCH, zero__cuda_stream_of(c, s), err);
}
static zero_result zero__cuda_sumsq_segs(void *ctx, const zero_sumsq_seg *segs, int n_segs, zero_dtype dt,
                                         zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("sumsq_segs");
    return zero__cuda_k_sumsq_segs(segs, n_segs, dt, zero__cuda_scratch_of(c, s), ZERO__CUDA_SUMSQ_SCRATCH, zero__cuda_stream_of(c, s),
                                   err);
}
static zero_result zero__cuda_adam_multi(void *ctx, const zero_adam_args *a, int n, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("adam_multi");
    return zero__cuda_k_adam_multi(a, n, zero__cuda_scratch_of(c, s), ZERO__CUDA_SUMSQ_SCRATCH, zero__cuda_stream_of(c, s), err);
}
static zero_result zero__cuda_muon_ns(void *ctx, float *x, int64_t batch, int64_t rows, int64_t cols, int steps,
                                      float scale, float *work, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("muon_ns");
    return zero__cuda_k_muon_ns(x, batch, rows, cols, steps, scale, work, zero__cuda_stream_of(c, s), err);
}

/* ---- >>cuda-be-vm: zero_alloc's address ranges (stage 3 behind the program's pointers) ----

   A range is address space from cuMemAddressReserve, backed in granules
   (cuMemGetAllocationGranularity's recommended size, 2 MiB on the GPUs
   measured) by pieces: a physical handle from cuMemCreate mapped over a run
   of granules with cuMemMap and made readable and writable by this GPU with
   cuMemSetAccess. The driver's cost is per mapping (some 30 us to set access
   and 18 us to unmap on an H200, whatever its size), so vm_back maps each
   run it is asked for as one piece; vm_reserve asked for a backed range
   (zero_alloc's) maps one per granule, so that any run can be unbacked
   later, and an unbacked one (the engine's pool) maps nothing. A piece is unmapped once none of its
   granules is backed, its handle kept in a pool that vm_back takes from by
   size: fetching a model's layers again creates nothing. vm_release gives a
   range's handles to the pool as far as the other live ranges could use
   them and frees the rest.
   The driver's functions come through the runtime
   (cudaGetDriverEntryPointByVersion): nothing more to link. */

typedef struct zero__cuda_vmm {
    decltype(&cuMemAddressReserve) reserve;
    decltype(&cuMemAddressFree) addr_free;
    decltype(&cuMemCreate) create;
    decltype(&cuMemRelease) release;
    decltype(&cuMemMap) map;
    decltype(&cuMemUnmap) unmap;
    decltype(&cuMemSetAccess) set_access;
    decltype(&cuMemGetAllocationGranularity) granularity;
    decltype(&cuDeviceGetAttribute) attribute;
    decltype(&cuGetErrorName) error_name;
    decltype(&cuGetErrorString) error_string;
    const char *missing; /* the first entry point not found; NULL: all there */
} zero__cuda_vmm;

static zero__cuda_vmm zero__cuda_vmm_load(void) {
    zero__cuda_vmm a;
    memset(&a, 0, sizeof a);
#if CUDART_VERSION >= 12050
    struct {
        const char *name;
        void **slot;
    } want[] = {{"cuMemAddressReserve", (void **)&a.reserve},
                {"cuMemAddressFree", (void **)&a.addr_free},
                {"cuMemCreate", (void **)&a.create},
                {"cuMemRelease", (void **)&a.release},
                {"cuMemMap", (void **)&a.map},
                {"cuMemUnmap", (void **)&a.unmap},
                {"cuMemSetAccess", (void **)&a.set_access},
                {"cuMemGetAllocationGranularity", (void **)&a.granularity},
                {"cuDeviceGetAttribute", (void **)&a.attribute},
                {"cuGetErrorName", (void **)&a.error_name},
                {"cuGetErrorString", (void **)&a.error_string}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        void *f = NULL;
        cudaDriverEntryPointQueryResult q;
        /* 12000: the signatures as of CUDA 12.0, the ones cuda.h declares for these */
        if (cudaGetDriverEntryPointByVersion(want[i].name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !f) {
            cudaGetLastError();
            f = NULL;
            if (!a.missing) a.missing = want[i].name;
        }
        *want[i].slot = f;
    }
#else
    a.missing = "cudaGetDriverEntryPointByVersion (this program was built with a CUDA runtime older than 12.5)";
#endif
    return a;
}

/* The driver's entry points, looked up once per process (C++ makes the
   first call's initialisation thread-safe). */
static const zero__cuda_vmm *zero__cuda_vmm_get(void) {
    static const zero__cuda_vmm api = zero__cuda_vmm_load();
    return &api;
}

/* A failed driver call as zero_error: the operation, the call, the address
   range it was about, the GPU, and the driver's name and words for r. */
static zero_result zero__cuda_vm_drv(const zero_cuda *c, CUresult r, const char *op, const char *call, CUdeviceptr p,
                                     size_t bytes, zero_error *err) {
    const zero__cuda_vmm *api = zero__cuda_vmm_get();
    const char *name = NULL, *text = NULL;
    char num[32], where[80] = "";
    int oom = r == CUDA_ERROR_OUT_OF_MEMORY;
    if (api->error_name && api->error_name(r, &name) != CUDA_SUCCESS) name = NULL;
    if (api->error_string && api->error_string(r, &text) != CUDA_SUCCESS) text = NULL;
    if (!name) snprintf(num, sizeof num, "CUresult %d", (int)r), name = num;
    if (p) snprintf(where, sizeof where, " of [%p, +%zu)", (void *)(uintptr_t)p, bytes);
    else if (bytes) snprintf(where, sizeof where, " of %zu bytes", bytes);
    zero_msg item = oom ? ZERO_MSG_VM_FAILED : r == CUDA_ERROR_NOT_SUPPORTED ? ZERO_MSG_VM_UNSUPPORTED : ZERO_MSG_CUDA_CALL;
    return zero__fail(err, item, NULL, 0, 0, "cuda %s: %s%s on GPU %d: %s (%s)%s%s", op, call, where, c->device, name,
                      text ? text : "no description", oom ? "\n" : "", oom ? zero__cuda_hint(cudaErrorMemoryAllocation) : "");
}

/* The range holding [p, p + bytes) whole, or NULL. */
static zero__cuda_vm_range *zero__cuda_vm_find(zero_cuda *c, CUdeviceptr p, size_t bytes) {
    for (int k = 0; k < c->vm_n; k++) {
        zero__cuda_vm_range *r = &c->vm_range[k];
        size_t size = r->n * c->vm_granule;
        if (p >= r->base && p - r->base <= size && bytes <= size - (size_t)(p - r->base)) return r;
    }
    return NULL;
}

/* A piece's handle back to the pool; released instead where the pool would
   then hold more than the live ranges leave unmapped, or more than sixteen
   of the largest piece (stage 3 unmaps every layer it drops: pooling them
   all would keep the whole model's memory in use; GPT-2 XL on 4 H200s
   through the program's pointers, median step against zero_param's: four
   1.03-1.10x, sixteen 1.00-1.02x, no bound 1.02x and 2.4 GiB more in use). */
static void zero__cuda_vm_give(zero_cuda *c, CUmemGenericAllocationHandle h, uint32_t size) {
    if (c->vm_pooled + c->vm_mapped + size <= c->vm_total && c->vm_pooled + size <= 16 * (size_t)c->vm_piece_max &&
        c->vm_pool_n < c->vm_pool_cap) {
        c->vm_pool[c->vm_pool_n] = h;
        c->vm_pool_size[c->vm_pool_n++] = size;
        c->vm_pooled += size;
    } else {
        zero__cuda_vmm_get()->release(h);
    }
}

/* Pooled handle k taken out of the pool (the last one takes its place). */
static CUmemGenericAllocationHandle zero__cuda_vm_pool_out(zero_cuda *c, size_t k) {
    CUmemGenericAllocationHandle h = c->vm_pool[k];
    c->vm_pooled -= c->vm_pool_size[k];
    c->vm_pool_n--;
    c->vm_pool[k] = c->vm_pool[c->vm_pool_n];
    c->vm_pool_size[k] = c->vm_pool_size[c->vm_pool_n];
    return h;
}

/* A handle of `size` granules for an unmapped run: a pooled one of that size,
   else a new one, made after releasing pooled handles until the new memory
   keeps mapped + pooled within the ranges. *call names a failed call. */
static CUresult zero__cuda_vm_take(zero_cuda *c, uint32_t size, CUmemGenericAllocationHandle *h, const char **call) {
    const zero__cuda_vmm *api = zero__cuda_vmm_get();
    CUmemAllocationProp prop;
    CUresult e;
    for (size_t k = c->vm_pool_n; k-- > 0;)
        if (c->vm_pool_size[k] == size) {
            *h = zero__cuda_vm_pool_out(c, k);
            return CUDA_SUCCESS;
        }
    while (c->vm_pool_n && c->vm_pooled + c->vm_mapped + size > c->vm_total)
        api->release(zero__cuda_vm_pool_out(c, c->vm_pool_n - 1));
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = c->device;
    if ((e = api->create(h, (size_t)size * c->vm_granule, &prop, 0)) != CUDA_SUCCESS) {
        *call = "cuMemCreate";
        return e;
    }
    c->vm_created++;
    return CUDA_SUCCESS;
}

/* The piece at granule `head` of r unmapped in one call, its handle to the pool. */
static CUresult zero__cuda_vm_unmap_piece(zero_cuda *c, zero__cuda_vm_range *r, size_t head) {
    zero__cuda_vm_gran *p = &r->g[head];
    uint32_t size = p->size;
    CUmemGenericAllocationHandle h = p->h;
    CUresult e = zero__cuda_vmm_get()->unmap(r->base + head * c->vm_granule, (size_t)size * c->vm_granule);
    if (e != CUDA_SUCCESS) return e;
    for (size_t i = head; i < head + size; i++) r->g[i].h = 0;
    c->vm_mapped -= size;
    zero__cuda_vm_give(c, h, size);
    return CUDA_SUCCESS;
}

/* Granules [i0, i1) of r (all backed) unbacked: a piece none of whose
   granules stays backed is unmapped. Goes on past a failure (that piece stays
   mapped, as the driver left it, and is unmapped with its range); returns the
   first failure and, in *at, its piece's first granule. */
static CUresult zero__cuda_vm_off(zero_cuda *c, zero__cuda_vm_range *r, size_t i0, size_t i1, size_t *at) {
    CUresult first = CUDA_SUCCESS;
    for (size_t i = i0; i < i1; i++) {
        zero__cuda_vm_gran *p = &r->g[r->g[i].head];
        r->g[i].on = 0;
        if (--p->live == 0) {
            CUresult e = zero__cuda_vm_unmap_piece(c, r, r->g[i].head);
            if (e != CUDA_SUCCESS && first == CUDA_SUCCESS) first = e, *at = r->g[i].head;
        }
    }
    return first;
}

/* Backs granules [i0, i1) of r (all unbacked). A granule whose piece is still
   mapped (another of its granules is backed) is backed as it is; each run of
   unmapped ones gets one piece (or, each=1, one per granule), mapped and made
   readable and writable by this GPU. All or nothing: on a failure what this
   call backed is unbacked again. */
static zero_result zero__cuda_vm_map(zero_cuda *c, zero__cuda_vm_range *r, size_t i0, size_t i1, int each,
                                     const char *op, zero_error *err) {
    const zero__cuda_vmm *api = zero__cuda_vmm_get();
    size_t g = c->vm_granule, i = i0, j = i0, done = i0;
    CUresult e = CUDA_SUCCESS;
    const char *call = NULL;
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = c->device;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    while (i < i1) {
        CUmemGenericAllocationHandle h = 0;
        CUdeviceptr p = r->base + i * g;
        uint32_t size;
        if (r->g[i].h) {
            r->g[i].on = 1;
            r->g[r->g[i].head].live++;
            done = ++i;
            continue;
        }
        for (j = i + 1; !each && j < i1 && !r->g[j].h; j++) {
        }
        size = (uint32_t)(j - i);
        if ((e = zero__cuda_vm_take(c, size, &h, &call)) != CUDA_SUCCESS) break;
        if ((e = api->map(p, (size_t)size * g, 0, h, 0)) != CUDA_SUCCESS) {
            zero__cuda_vm_give(c, h, size); /* not mapped: the room it had is still there */
            call = "cuMemMap";
            break;
        }
        for (size_t k = i; k < j; k++) r->g[k].h = h, r->g[k].head = (uint32_t)i, r->g[k].on = 1;
        r->g[i].size = r->g[i].live = size;
        c->vm_mapped += size;
        if (size > c->vm_piece_max) c->vm_piece_max = size;
        done = j;
        if ((e = api->set_access(p, (size_t)size * g, &d, 1)) != CUDA_SUCCESS) {
            call = "cuMemSetAccess";
            break;
        }
        i = j;
    }
    if (call) { /* the failed run is [i, j); what this call backed before it is [i0, done) */
        size_t ignored;
        zero__cuda_vm_off(c, r, i0, done, &ignored);
        return zero__cuda_vm_drv(c, e, op, call, r->base + i * g, (j - i) * g, err);
    }
    zero__ok(err);
    return ZERO_OK;
}

/* Takes range k out of the table: its pieces unmapped (handles to the pool
   as far as the others' granules could use them, the rest freed) and its
   address space freed. Failures are logged: nobody is left to return them to. */
static void zero__cuda_vm_drop(zero_cuda *c, int k) {
    const zero__cuda_vmm *api = zero__cuda_vmm_get();
    zero__cuda_vm_range r = c->vm_range[k];
    size_t at = 0, size = r.n * c->vm_granule;
    CUresult e = CUDA_SUCCESS;
    c->vm_range[k] = c->vm_range[--c->vm_n];
    c->vm_total -= r.n;
    for (size_t i = 0; i < r.n; i++)
        if (r.g[i].h && r.g[i].head == i) {
            CUresult f;
            c->vm_mapped -= r.g[i].size; /* out of the count first: give sees the ranges without this one */
            f = api->unmap(r.base + i * c->vm_granule, (size_t)r.g[i].size * c->vm_granule);
            if (f == CUDA_SUCCESS) {
                zero__cuda_vm_give(c, r.g[i].h, r.g[i].size);
            } else {
                if (e == CUDA_SUCCESS) e = f, at = i;
                api->release(r.g[i].h); /* the memory goes when the mapping does */
            }
        }
    if (e != CUDA_SUCCESS) {
        zero_error err;
        zero__cuda_vm_drv(c, e, "vm_release", "cuMemUnmap", r.base + at * c->vm_granule, c->vm_granule, &err);
        zero__log(NULL, ZERO_LOG_ERROR, err.item, "%s (the range's address space is leaked)", err.msg);
    } else if ((e = api->addr_free(r.base, size)) != CUDA_SUCCESS) {
        zero_error err;
        zero__cuda_vm_drv(c, e, "vm_release", "cuMemAddressFree", r.base, size, &err);
        zero__log(NULL, ZERO_LOG_ERROR, err.item, "%s", err.msg);
    }
    /* the pool no larger than the granules the live ranges leave unmapped */
    while (c->vm_pool_n && c->vm_pooled + c->vm_mapped > c->vm_total)
        api->release(zero__cuda_vm_pool_out(c, c->vm_pool_n - 1));
    ZERO_FREE(r.g);
}

/* The granule, asked of the driver once per backend, with VMM support checked
   first (an error that says what is missing). Under vm_lock. */
static zero_result zero__cuda_vm_granule(zero_cuda *c, zero_error *err) {
    const zero__cuda_vmm *api = zero__cuda_vmm_get();
    CUmemAllocationProp prop;
    CUresult e;
    int yes = 0;
    size_t g = 0;
    if (c->vm_granule) return ZERO_OK;
    if (api->missing) {
        int drv = 0, rt = 0;
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
        return zero__fail(err, ZERO_MSG_VM_UNSUPPORTED, NULL, 0, 0,
                          "cuda vm_reserve: the CUDA driver offers no virtual memory management to this program "
                          "(%s not found; driver %d, runtime %d)\nHINT: update the NVIDIA driver (and build with CUDA "
                          "12.5 or later), or allocate the parameters as before and leave stage 3's tensors' data NULL",
                          api->missing, drv, rt);
    }
    if ((e = api->attribute(&yes, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, (CUdevice)c->device)) !=
        CUDA_SUCCESS)
        return zero__cuda_vm_drv(c, e, "vm_reserve", "cuDeviceGetAttribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)", 0, 0,
                                 err);
    if (!yes)
        return zero__fail(err, ZERO_MSG_VM_UNSUPPORTED, NULL, 0, 0,
                          "cuda vm_reserve: GPU %d does not support virtual memory management (cuMemCreate, cuMemMap)\n"
                          "HINT: allocate the parameters as before and leave stage 3's tensors' data NULL", c->device);
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = c->device;
    if ((e = api->granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) != CUDA_SUCCESS)
        return zero__cuda_vm_drv(c, e, "vm_reserve", "cuMemGetAllocationGranularity", 0, 0, err);
    if (g == 0 || (g & (g - 1)))
        return zero__fail(err, ZERO_MSG_VM_FAILED, NULL, 0, 0, "cuda vm_reserve: GPU %d's granularity is %zu bytes",
                          c->device, g);
    c->vm_granule = g;
    return ZERO_OK;
}

static zero_result zero__cuda_vm_reserve(void *ctx, size_t bytes, int backed, void **base, size_t *reserved,
                                         size_t *granule, zero_error *err) {
    const zero__cuda_vmm *api = zero__cuda_vmm_get();
    zero_result res;
    CUresult e;
    CUdeviceptr va = 0;
    zero__cuda_vm_gran *gr;
    size_t g, n;
    ZERO__CUDA_CTX("vm_reserve");
    if (!base || !reserved || !granule)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda vm_reserve: base, reserved or granule is NULL");
    *base = NULL;
    *reserved = *granule = 0;
    pthread_mutex_lock(&c->vm_lock);
    if ((res = zero__cuda_vm_granule(c, err)) != ZERO_OK) goto out;
    g = c->vm_granule;
    if (bytes == 0 || bytes > SIZE_MAX - g) {
        res = zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda vm_reserve: %zu bytes", bytes);
        goto out;
    }
    n = (bytes + g - 1) / g;
    if (n > UINT32_MAX) {
        res = zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda vm_reserve: %zu bytes are more than %u granules",
                         bytes, UINT32_MAX);
        goto out;
    }
    /* room first, so that nothing below needs host memory */
    if (c->vm_n == c->vm_cap) {
        int cap = c->vm_cap ? 2 * c->vm_cap : 8;
        zero__cuda_vm_range *t = (zero__cuda_vm_range *)ZERO_REALLOC(c->vm_range, (size_t)cap * sizeof *t);
        if (!t) {
            res = zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "cuda vm_reserve: range table");
            goto out;
        }
        c->vm_range = t;
        c->vm_cap = cap;
    }
    if (c->vm_pool_cap < c->vm_total + n) {
        size_t cap = c->vm_total + n > 2 * c->vm_pool_cap ? c->vm_total + n : 2 * c->vm_pool_cap;
        CUmemGenericAllocationHandle *t = NULL;
        uint32_t *z = NULL;
        if (cap <= SIZE_MAX / sizeof *t) t = (CUmemGenericAllocationHandle *)ZERO_REALLOC(c->vm_pool, cap * sizeof *t);
        if (t) c->vm_pool = t;
        if (t && cap <= SIZE_MAX / sizeof *z) z = (uint32_t *)ZERO_REALLOC(c->vm_pool_size, cap * sizeof *z);
        if (!z) {
            res = zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "cuda vm_reserve: a pool of %zu granules", cap);
            goto out;
        }
        c->vm_pool_size = z;
        c->vm_pool_cap = cap;
    }
    gr = (zero__cuda_vm_gran *)zero__cuda_calloc(n, sizeof *gr);
    if (!gr) {
        res = zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "cuda vm_reserve: a table of %zu granules", n);
        goto out;
    }
    /* aligned to the granule, so that every granule can be mapped alone */
    if ((e = api->reserve(&va, n * g, g, 0, 0)) != CUDA_SUCCESS) {
        ZERO_FREE(gr);
        res = zero__cuda_vm_drv(c, e, "vm_reserve", "cuMemAddressReserve", 0, n * g, err);
        goto out;
    }
    c->vm_range[c->vm_n].base = va;
    c->vm_range[c->vm_n].n = n;
    c->vm_range[c->vm_n].g = gr;
    c->vm_n++;
    c->vm_total += n;
    /* backed: a piece per granule, so that any run of them can be unbacked later; unbacked: vm_back maps runs */
    if (backed && (res = zero__cuda_vm_map(c, &c->vm_range[c->vm_n - 1], 0, n, 1, "vm_reserve", err)) != ZERO_OK) {
        zero__cuda_vm_drop(c, c->vm_n - 1);
        goto out;
    }
    *base = (void *)(uintptr_t)va;
    *reserved = n * g;
    *granule = g;
out:
    pthread_mutex_unlock(&c->vm_lock);
    return res;
}

/* The range and first granule of [p, p + bytes) for vm_back / vm_unback:
   inside one range, on granules, and every granule backed (want 1) or
   unbacked (want 0); otherwise an error that changes nothing. */
static zero_result zero__cuda_vm_run(zero_cuda *c, const char *op, void *p, size_t bytes, int want,
                                     zero__cuda_vm_range **out, size_t *first, zero_error *err) {
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)p;
    zero__cuda_vm_range *r = c->vm_granule ? zero__cuda_vm_find(c, a, bytes) : NULL;
    size_t g = c->vm_granule, i0;
    if (!r)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda %s: [%p, +%zu) is not inside a range from vm_reserve",
                          op, p, bytes);
    if (bytes == 0 || (a - r->base) % g || bytes % g)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "cuda %s: [%p, +%zu) is not whole granules of %zu bytes (the range starts at %p)", op, p,
                          bytes, g, (void *)(uintptr_t)r->base);
    i0 = (size_t)(a - r->base) / g;
    for (size_t i = i0; i < i0 + bytes / g; i++)
        if (r->g[i].on != (want != 0))
            return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "cuda %s: [%p, +%zu): the granule at %p is %s", op, p,
                              bytes, (void *)(uintptr_t)(r->base + i * g), want ? "not backed" : "backed already");
    *out = r;
    *first = i0;
    return ZERO_OK;
}

static zero_result zero__cuda_vm_back(void *ctx, void *p, size_t bytes, zero_error *err) {
    zero__cuda_vm_range *r = NULL;
    size_t i0 = 0;
    zero_result res;
    ZERO__CUDA_CTX("vm_back");
    pthread_mutex_lock(&c->vm_lock);
    res = zero__cuda_vm_run(c, "vm_back", p, bytes, 0, &r, &i0, err);
    if (res == ZERO_OK) res = zero__cuda_vm_map(c, r, i0, i0 + bytes / c->vm_granule, 0, "vm_back", err);
    pthread_mutex_unlock(&c->vm_lock);
    return res;
}

/* Not refused after a failure of the group, as free is not: it gives memory back. */
static zero_result zero__cuda_vm_unback(void *ctx, void *p, size_t bytes, zero_error *err) {
    zero_cuda *c = (zero_cuda *)ctx;
    zero__cuda_vm_range *r = NULL;
    size_t i0 = 0, at = 0;
    zero_result res;
    if (!c) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "cuda vm_unback: no backend");
    pthread_mutex_lock(&c->vm_lock);
    res = zero__cuda_vm_run(c, "vm_unback", p, bytes, 1, &r, &i0, err);
    if (res == ZERO_OK) {
        CUresult e = zero__cuda_vm_off(c, r, i0, i0 + bytes / c->vm_granule, &at);
        if (e != CUDA_SUCCESS)
            res = zero__cuda_vm_drv(c, e, "vm_unback", "cuMemUnmap", r->base + at * c->vm_granule,
                                    (size_t)r->g[at].size * c->vm_granule, err);
        else
            zero__ok(err);
    }
    pthread_mutex_unlock(&c->vm_lock);
    return res;
}

static void zero__cuda_vm_release(void *ctx, void *base, size_t reserved) {
    zero_cuda *c = (zero_cuda *)ctx;
    int k;
    if (!c || !base) return;
    pthread_mutex_lock(&c->vm_lock);
    for (k = 0; k < c->vm_n && c->vm_range[k].base != (CUdeviceptr)(uintptr_t)base; k++) {
    }
    if (k == c->vm_n) {
        zero__log(NULL, ZERO_LOG_ERROR, ZERO_MSG_BAD_ARG,
                  "cuda vm_release: %p is not a range from vm_reserve (released twice?)", base);
    } else {
        if (reserved != c->vm_range[k].n * c->vm_granule)
            zero__log(NULL, ZERO_LOG_ERROR, ZERO_MSG_BAD_ARG,
                      "cuda vm_release: the range at %p has %zu bytes, not %zu (released whole anyway)", base,
                      c->vm_range[k].n * c->vm_granule, reserved);
        zero__cuda_vm_drop(c, k);
    }
    pthread_mutex_unlock(&c->vm_lock);
}

ZERO__DEF int64_t zero_cuda_vm_created(const zero_cuda *c) {
    int64_t n;
    if (!c) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&c->vm_lock);
    n = c->vm_created;
    pthread_mutex_unlock((pthread_mutex_t *)&c->vm_lock);
    return n;
}

/* At destroy: the ranges nobody released, then the pool. */
static void zero__cuda_vm_destroy(zero_cuda *c) {
    if (!c->vm_lock_ok) return;
    while (c->vm_n > 0) zero__cuda_vm_drop(c, c->vm_n - 1);
    while (c->vm_pool_n) zero__cuda_vmm_get()->release(zero__cuda_vm_pool_out(c, c->vm_pool_n - 1));
    ZERO_FREE(c->vm_range);
    ZERO_FREE(c->vm_pool);
    ZERO_FREE(c->vm_pool_size);
    c->vm_range = NULL;
    c->vm_pool = NULL;
    c->vm_pool_size = NULL;
    pthread_mutex_destroy(&c->vm_lock);
    c->vm_lock_ok = 0;
}

/* ---- >>cuda-be-init: options, communicator, backend init and destroy, getters ---- */

ZERO__DEF zero_cuda_options zero_cuda_options_default(void) {
    zero_cuda_options o;
    memset(&o, 0, sizeof o);
    o.device = -1;
    return o;
}

static double zero__cuda_timeout(double given) {
    const char *v;
    double t;
    if (given > 0) return given;
    t = zero__boot_env_timeout(&v);
    if (t > 0) return t;
    if (t < 0)
        zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID, "ZERO_TIMEOUT_S=\"%s\" is not a number of seconds; using 600", v);
    return 600;
}

ZERO__DEF void zero_cuda_backend_destroy(zero_cuda *c) {
    if (!c) return;
    /* after a failure the stream may hold a collective that never ends:
       do not wait for it (the aborted communicator releases it) */
    if (c->stream[ZERO_STREAM_COMM] && !c->failed) cudaStreamSynchronize(c->stream[ZERO_STREAM_COMM]);
    if (c->stream[ZERO_STREAM_COPY] && !c->failed) cudaStreamSynchronize(c->stream[ZERO_STREAM_COPY]);
    /* ranges zero_free did not release: unmapped after the compute stream's work on them */
    if (c->vm_n && !c->failed && c->stream[ZERO_STREAM_COMPUTE]) cudaStreamSynchronize(c->stream[ZERO_STREAM_COMPUTE]);
    zero__vm_forget(c); /* zero.h's table of zero_alloc ranges: this backend's leave it */
    zero__cuda_vm_destroy(c);
    if (c->stream[ZERO_STREAM_COMM]) cudaStreamDestroy(c->stream[ZERO_STREAM_COMM]);
    if (c->stream[ZERO_STREAM_COPY]) cudaStreamDestroy(c->stream[ZERO_STREAM_COPY]);
    if (c->own_compute && c->stream[ZERO_STREAM_COMPUTE]) cudaStreamDestroy(c->stream[ZERO_STREAM_COMPUTE]);
    if (c->scratch) cudaFree(c->scratch);
#ifndef ZERO_NO_NCCL
    zero__cuda_groups_free(c); /* split from comm: before it, and ours even when comm is not */
    if (c->comm && c->own_comm) ncclCommDestroy(c->comm);
#endif
    ZERO_FREE(c);
}

#ifndef ZERO_NO_NCCL
/* A communicator of env.world ranks: the unique id from NCCL_COMM_ID (every
   rank makes it) or from rank 0 over TCP; non-blocking init polled with the
   deadline, so a rank that never comes is an error, not a hang. */
static zero_result zero__cuda_comm_init(zero_cuda *c, zero_error *err) {
    ncclUniqueId id;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclResult_t r;
    double t0;
    const char *comm_id = getenv("NCCL_COMM_ID");
    zero_result zr;
    memset(&id, 0, sizeof id);
    if ((comm_id && *comm_id) || c->env.rank == 0) ZERO_NCCL_TRY(ncclGetUniqueId(&id), err);
    if (!(comm_id && *comm_id) && c->env.world > 1 &&
        (zr = zero_bootstrap_exchange(&c->env, &id, sizeof id, c->timeout_s, err)) != ZERO_OK)
        return zr;
    cfg.blocking = 0;
    r = ncclCommInitRankConfig(&c->comm, c->env.world, id, c->env.rank, &cfg);
    t0 = zero__cuda_now();
    while (r == ncclInProgress) {
        if (zero__cuda_now() - t0 > c->timeout_s) {
            zero__fail(err, ZERO_MSG_NCCL_TIMEOUT, NULL, 0, 0,
                       "rank %d of %d: the NCCL communicator was not ready within %.0f s: a rank did not join\nHINT: "
                       "start every rank; ZERO_TIMEOUT_S sets the deadline",
                       c->env.rank, c->env.world, c->timeout_s);
            if (c->comm) ncclCommAbort(c->comm), c->comm = NULL;
            return ZERO_ERR_TIMEOUT;
        }
        if (ncclCommGetAsyncError(c->comm, &r) != ncclSuccess) r = ncclInternalError;
    }
    if (r != ncclSuccess) {
        zero_nccl_check(r, "ncclCommInitRankConfig", __FILE__, __LINE__, err);
        if (c->comm) ncclCommAbort(c->comm), c->comm = NULL;
        return ZERO_ERR_NCCL;
    }
    c->own_comm = 1;
    return ZERO_OK;
}
#endif

ZERO__DEF zero_result zero_cuda_backend_init(zero_cuda **out, const zero_cuda_options *opt, zero_error *err) {
    zero_cuda *c;
    zero_result r;
    int ndev = 0;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_cuda_backend_init: out is NULL");
    *out = NULL;
    c = (zero_cuda *)zero__cuda_calloc(1, sizeof *c);
    if (!c) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_cuda_backend_init");
    c->opt = opt ? *opt : zero_cuda_options_default();
    c->timeout_s = zero__cuda_timeout(c->opt.timeout_s);
#ifndef ZERO_NO_NCCL
    if (c->opt.comm) {
        int n = 0, rk = 0;
        if (ncclCommCount(c->opt.comm, &n) != ncclSuccess || ncclCommUserRank(c->opt.comm, &rk) != ncclSuccess) {
            ZERO_FREE(c);
            return zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "zero_cuda_backend_init: the given communicator is not usable");
        }
        memset(&c->env, 0, sizeof c->env);
        c->env.rank = rk;
        c->env.world = n;
        /* the communicator knows its GPU; an explicit device must agree with it */
        {
            int cdev = -1;
            if (ncclCommCuDevice(c->opt.comm, &cdev) != ncclSuccess) cdev = -1;
            if (c->opt.device >= 0 && cdev >= 0 && c->opt.device != cdev) {
                int want = c->opt.device;
                ZERO_FREE(c);
                return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                                  "zero_cuda_backend_init: options.device is %d but the communicator lives on GPU %d", want,
                                  cdev);
            }
            c->env.local_rank = c->opt.device >= 0 ? c->opt.device : cdev >= 0 ? cdev : 0;
        }
        c->env.local_world = -1;
        snprintf(c->env.source, sizeof c->env.source, "%s", "comm");
        c->comm = c->opt.comm;
    } else
#endif
    if ((r = zero_dist_env_read(&c->env, err)) != ZERO_OK) {
        ZERO_FREE(c);
        return r;
    }
    c->device = c->opt.device >= 0 ? c->opt.device : c->env.local_rank;
    if ((r = zero_cuda_check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount", __FILE__, __LINE__, err)) != ZERO_OK) {
        ZERO_FREE(c);
        return r;
    }
    if (c->device >= ndev) {
        int rank = c->env.rank, dev = c->device;
        ZERO_FREE(c);
        return zero__fail(err, ZERO_MSG_CUDA_NO_DEVICE, NULL, 0, 0,
                          "rank %d wants GPU %d but %d are visible\nHINT: one process per GPU; check CUDA_VISIBLE_DEVICES "
                          "and the launcher's --nproc-per-node",
                          rank, dev, ndev);
    }
#define ZERO__CUDA_INIT_TRY(call)                                                                 \
    do {                                                                                          \
        if ((r = zero_cuda_check((call), #call, __FILE__, __LINE__, err)) != ZERO_OK) {           \
            zero_cuda_backend_destroy(c);                                                         \
            return r;                                                                             \
        }                                                                                         \
    } while (0)
    if (pthread_mutex_init(&c->vm_lock, NULL) != 0) {
        ZERO_FREE(c);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_cuda_backend_init: a mutex");
    }
    c->vm_lock_ok = 1;
    ZERO__CUDA_INIT_TRY(cudaSetDevice(c->device));
    if (c->opt.compute_stream) {
        c->stream[ZERO_STREAM_COMPUTE] = c->opt.compute_stream;
    } else {
        ZERO__CUDA_INIT_TRY(cudaStreamCreateWithFlags(&c->stream[ZERO_STREAM_COMPUTE], cudaStreamNonBlocking));
        c->own_compute = 1;
    }
    {
        /* the communication stream at the device's highest priority: its
           collectives' blocks start as soon as a multiprocessor frees, not
           behind the compute stream's queued blocks (ZERO_COMM_PRIORITY=0:
           the default priority) */
        const char *pv = getenv("ZERO_COMM_PRIORITY");
        int least = 0, greatest = 0;
        ZERO__CUDA_INIT_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        ZERO__CUDA_INIT_TRY(cudaStreamCreateWithPriority(&c->stream[ZERO_STREAM_COMM], cudaStreamNonBlocking,
                                                         pv && !strcmp(pv, "0") ? 0 : greatest));
        (void)least;
    }
    /* the copy stream: copies to the host that run beside the communication
       stream's copies to the device (PCIe carries both directions at once) */
    ZERO__CUDA_INIT_TRY(cudaStreamCreateWithFlags(&c->stream[ZERO_STREAM_COPY], cudaStreamNonBlocking));
    ZERO__CUDA_INIT_TRY(cudaMalloc((void **)&c->scratch, sizeof(double) * ZERO__CUDA_SUMSQ_SCRATCH * ZERO_STREAM_COUNT));
#undef ZERO__CUDA_INIT_TRY
#ifndef ZERO_NO_NCCL
    if (!c->comm && (r = zero__cuda_comm_init(c, err)) != ZERO_OK) {
        zero_cuda_backend_destroy(c);
        return r;
    }
#else
    if (c->env.world != 1) {
        zero_cuda_backend_destroy(c);
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "built with ZERO_NO_NCCL: one rank only, the launcher says %d",
                          c->env.world);
    }
#endif
    c->be.ctx = c;
    c->be.rank = c->env.rank;
    c->be.world = c->env.world;
    c->be.name = "cuda";
    c->be.alloc = zero__cuda_alloc;
    c->be.free = zero__cuda_free;
    c->be.memset0 = zero__cuda_memset0;
    c->be.copy = zero__cuda_copy;
    c->be.event_create = zero__cuda_event_create;
    c->be.event_destroy = zero__cuda_event_destroy;
    c->be.event_record = zero__cuda_event_record;
    c->be.stream_wait = zero__cuda_stream_wait;
    c->be.event_sync = zero__cuda_event_sync;
    c->be.event_create_timed = zero__cuda_event_create_timed;
    c->be.event_elapsed = zero__cuda_event_elapsed;
    c->be.mem_kind_of = zero__cuda_mem_kind_of;
    c->be.mem_extent = zero__cuda_mem_extent;
    c->be.mem_info = zero__cuda_mem_info;
    c->be.vm_reserve = zero__cuda_vm_reserve;
    c->be.vm_back = zero__cuda_vm_back;
    c->be.vm_unback = zero__cuda_vm_unback;
    c->be.vm_release = zero__cuda_vm_release;
    c->be.sync = zero__cuda_sync;
    c->be.reduce_scatter = zero__cuda_reduce_scatter;
    c->be.all_gather = zero__cuda_all_gather;
    c->be.all_reduce = zero__cuda_all_reduce;
    c->be.broadcast = zero__cuda_broadcast;
    c->be.scale = zero__cuda_scale;
    c->be.convert = zero__cuda_convert;
    c->be.sumsq = zero__cuda_sumsq;
    c->be.adam = zero__cuda_adam;
    c->be.sumsq_segs = zero__cuda_sumsq_segs;
    c->be.adam_multi = zero__cuda_adam_multi;
    c->be.muon_ns = zero__cuda_muon_ns;
    c->be.opt_rules = 1u << ZERO_OPTIMIZER_LION | 1u << ZERO_OPTIMIZER_ADAGRAD | 1u << ZERO_OPTIMIZER_SGD |
                      1u << ZERO_OPTIMIZER_MUON | 1u << ZERO_OPTIMIZER_LAMB;
    c->be.groups_init = zero__cuda_groups_init;
    c->be.group_reduce_scatter = zero__cuda_group_reduce_scatter;
    c->be.group_all_gather = zero__cuda_group_all_gather;
    c->be.group_all_reduce = zero__cuda_group_all_reduce;
#ifndef ZERO_NO_NCCL
    c->be.coll_group_begin = zero__cuda_coll_group_begin;
    c->be.coll_group_end = zero__cuda_coll_group_end;
#endif
#ifdef ZERO__CUDA_WINDOWS
    c->be.win_alloc = zero__cuda_win_alloc;
    c->be.win_free = zero__cuda_win_free;
#endif
    *out = c;
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF const zero_backend *zero_cuda_backend(zero_cuda *c) { return c ? &c->be : NULL; }
ZERO__DEF cudaStream_t zero_cuda_stream(const zero_cuda *c) { return c ? c->stream[ZERO_STREAM_COMPUTE] : NULL; }
ZERO__DEF cudaStream_t zero_cuda_comm_stream(const zero_cuda *c) { return c ? c->stream[ZERO_STREAM_COMM] : NULL; }
ZERO__DEF const zero_dist_env *zero_cuda_env(const zero_cuda *c) { return c ? &c->env : NULL; }

#endif /* ZERO__CUDA_IMPLEMENTED */
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
