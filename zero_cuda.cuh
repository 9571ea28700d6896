/* zero_cuda.cuh - the CUDA backend of zero: GPUs, CUDA and NCCL.

   Companion of zero.h: include zero.h first (this file #errors otherwise).
   Compiled by nvcc as C++ (it #errors under a plain C or C++ compiler); its
   API has C linkage, so C code can call it through a .cu file. It holds
   everything zero does on the GPU:

       here now:
         - CUDA and NCCL status checks that turn a failed call into a
           zero_result and an error text with the call, file:line, CUDA's or
           NCCL's own words and a HINT line (zero_cuda_check, ZERO_CUDA_TRY,
           zero_nccl_check, ZERO_NCCL_TRY); nothing here exits or aborts
         - zero_cuda_device_query (the GPU, its memory, driver, runtime and
           NCCL versions) and zero_cuda_build_info (what it was built with)
       arriving with the CUDA-backend issue:
         - the device arena, the compute and communication streams and their
           events, pinned host memory for offload
         - the NCCL communicator and its bootstrap from the launcher's
           environment (torchrun, Slurm, Open MPI; ncclUniqueId over TCP),
           zero_cuda_launch_local, error polling with a timeout
         - all kernels (fused mixed-precision AdamW, unscale + inf/nan check
           + norm, casts, accumulation), behind zero.h's backend interface

   Do this:
       #define ZERO_IMPLEMENTATION
   before you include the headers in *one* .cu file:

       #define ZERO_IMPLEMENTATION
       #include "zero.h"
       #include "zero_offload.h"      (optional: CPU offload)
       #include "zero_cuda.cuh"

   Every other file includes them without the define. Build with
       nvcc -std=c++17 -arch=sm_90 -I<dir of zero.h> train.cu -lnccl

   Minimal use:

       zero_error err;
       zero_cuda_device_info info;
       if (zero_cuda_device_query(local_rank, &info, &err) != ZERO_OK) {
           fprintf(stderr, "%s\n", err.msg);   (e.g. no GPU: a HINT says what to check)
           return 1;
       }
       ...
       zero_result my_step(float *buf, size_t n, zero_error *err) {
           ZERO_CUDA_TRY(cudaMemsetAsync(buf, 0, n * sizeof *buf, 0), err);
           return ZERO_OK;              (on failure the macro returned the error)
       }

   Options:
       ZERO_NO_NCCL   build without NCCL: no nccl.h, no -lnccl, one GPU only;
                      zero_nccl_check and ZERO_NCCL_TRY do not exist. Define it
                      alike in every file (best: -DZERO_NO_NCCL on the nvcc line).
       GPU architecture: kernels are compiled for the -arch / -gencode given to
                      nvcc (the Makefile's GPU_ARCH, default sm_90 for H100 and
                      H200). On a GPU without matching code a launch fails with
                      cudaErrorNoKernelImageForDevice, whose HINT says so;
                      zero_cuda_build_info() lists the architectures built.
       ZERO_STATIC, ZERO_ASSERT, ...: as in zero.h.

   License: MIT, at the end of this file.
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
#endif

extern "C" {

/* ---- CUDA and NCCL status -------------------------------------------- */

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

/* ---- device query and build information ---------------------------------- */

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

/* ---- launcher environment and bootstrap ------------------------------------ */

/* Who this process is, from the launcher's variables, first match wins:
     torchrun (also --no-python): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
                                  MASTER_ADDR, MASTER_PORT
     Slurm (srun):                SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
                                  SLURM_NTASKS_PER_NODE; the address from
                                  MASTER_ADDR / MASTER_PORT when set (else
                                  SLURM_LAUNCH_NODE_IPADDR and port 29500)
     Open MPI (mpirun):           OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK,
                                  _LOCAL_SIZE; MASTER_ADDR / MASTER_PORT
   none of them: a single process, rank 0 of 1. */
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

/* For a program started by hand on a machine with several GPUs: when no
   launcher variables are set, fork one process per visible GPU with torchrun's
   variables set (MASTER_ADDR 127.0.0.1, a free port) and wait for them. In the
   parent *exit_code gets the worst child's exit status (a signal counts as
   128 + its number) and the caller should return it; in a child, or when a
   launcher already started this process, or with one GPU, *exit_code is -1 and
   the caller goes on. Call it first thing in main, before any CUDA call (CUDA
   does not survive fork; the GPUs are counted in a child process). */
ZERO_API zero_result zero_cuda_launch_local(int *exit_code, zero_error *err);

/* ---- the CUDA backend ------------------------------------------------------- */

typedef struct zero_cuda zero_cuda;

typedef struct zero_cuda_options {
    int device;                 /* GPU ordinal; < 0: the local rank (zero_dist_env) */
    double timeout_s;           /* bootstrap and collective deadline; <= 0: the
                                   ZERO_TIMEOUT_S environment variable, else 600 */
    cudaStream_t compute_stream;/* the stream the program's kernels run on; NULL:
                                   zero creates one (zero_cuda_stream) */
#ifndef ZERO_NO_NCCL
    ncclComm_t comm;            /* an existing communicator of the data-parallel
                                   group (not owned); NULL: made from the environment
                                   (NCCL_COMM_ID, else zero_bootstrap_exchange) */
#endif
    int check;                  /* 1: every step the ranks compare a hash of their
                                   collectives and fail on divergence (also
                                   ZERO_CHECK=1 in the environment) */
    /* allocation hooks; NULL: cudaMalloc / cudaMallocHost / malloc */
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
ZERO_API const zero_dist_env *zero_cuda_env(const zero_cuda *c);
/* Destroy engines first. Frees the communicator only if zero made it. */
ZERO_API void zero_cuda_backend_destroy(zero_cuda *c);

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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZERO__CUDA_STR_(...) #__VA_ARGS__
#define ZERO__CUDA_STR(...) ZERO__CUDA_STR_(__VA_ARGS__)

/* ---- status checks ---- */

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

/* ---- device query, build information ---- */

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

ZERO__DEF const char *zero_cuda_build_info(void) {
    return "zero " ZERO__CUDA_STR(ZERO_VERSION_MAJOR) "." ZERO__CUDA_STR(ZERO_VERSION_MINOR) "."
        ZERO__CUDA_STR(ZERO_VERSION_PATCH) "; CUDART_VERSION " ZERO__CUDA_STR(CUDART_VERSION)
#ifndef ZERO_NO_NCCL
        "; NCCL " ZERO__CUDA_STR(NCCL_MAJOR) "." ZERO__CUDA_STR(NCCL_MINOR) "."
        ZERO__CUDA_STR(NCCL_PATCH)
#else
        "; no NCCL"
#endif
#ifdef __CUDA_ARCH_LIST__
        "; __CUDA_ARCH_LIST__ " ZERO__CUDA_STR(__CUDA_ARCH_LIST__)
#endif
        ;
}

/* during development: parts kept in their own files */
#include "zero_cuda_kernels.part.cuh"
#include "zero_cuda_boot.part.cuh"
#include "zero_cuda_backend.part.cuh"

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
