/* ---- the CUDA backend ----------------------------------------------------

   One process per GPU. Two streams: the compute stream (the program's, or one
   made here) and a communication stream for NCCL and the kernels around it;
   the engine orders them with events. The host blocks only in sync(), and
   there it polls: the stream, NCCL's asynchronous error, and a deadline, so a
   vanished peer turns into ZERO_ERR_TIMEOUT or ZERO_ERR_NCCL instead of a hang
   (the communicator is aborted then; the backend refuses further work). */

#include <time.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

struct zero_event {
    cudaEvent_t ev;
};

struct zero_cuda {
    zero_backend be;
    zero_dist_env env;
    int device;
    cudaStream_t stream[ZERO_STREAM_COUNT];
    int own_compute;
#ifndef ZERO_NO_NCCL
    ncclComm_t comm;
    int own_comm;
#endif
    double timeout_s;
    zero_cuda_options opt;
    double *scratch; /* sumsq partial sums */
    size_t allocated[ZERO_MEM_KIND_COUNT];
    int failed;      /* sticky: a collective failed or timed out */
    zero_error failure;
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

/* ---- memory ---- */

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
        else p = malloc(bytes);
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
    else free(p);
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

/* ---- events and streams ---- */

static zero_result zero__cuda_event_create(void *ctx, zero_event **out, zero_error *err) {
    zero_event *ev;
    ZERO__CUDA_CTX("event_create");
    ev = (zero_event *)malloc(sizeof *ev);
    if (!ev) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "cuda event_create");
    if (zero_cuda_check(cudaEventCreateWithFlags(&ev->ev, cudaEventDisableTiming), "cudaEventCreateWithFlags", __FILE__,
                        __LINE__, err) != ZERO_OK) {
        free(ev);
        return ZERO_ERR_CUDA;
    }
    *out = ev;
    return ZERO_OK;
}

static void zero__cuda_event_destroy(void *ctx, zero_event *ev) {
    (void)ctx;
    if (!ev) return;
    cudaEventDestroy(ev->ev);
    free(ev);
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

#ifndef ZERO_NO_NCCL
/* NCCL's asynchronous error of the communicator (ncclSuccess while healthy). */
static zero_result zero__cuda_nccl_health(zero_cuda *c, const char *what, zero_error *err) {
    ncclResult_t async = ncclSuccess;
    if (!c->comm) return ZERO_OK;
    if (ncclCommGetAsyncError(c->comm, &async) != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        zero_nccl_check(async != ncclSuccess ? async : ncclInternalError, what, __FILE__, __LINE__, err);
        return zero__cuda_fail_group(c, ZERO_ERR_NCCL, err);
    }
    return ZERO_OK;
}
#endif

/* Wait for stream s, polling NCCL's health and the deadline. */
static zero_result zero__cuda_sync(void *ctx, zero_stream_id s, zero_error *err) {
    double t0;
    unsigned spins = 0;
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
        if (zero__cuda_now() - t0 > c->timeout_s) {
            zero__fail(err, ZERO_MSG_NCCL_TIMEOUT, NULL, 0, 0,
                       "rank %d: the %s stream did not finish within %.0f s: a peer rank stopped, or never reached the "
                       "same collective\nHINT: look at the other ranks' first error; ZERO_TIMEOUT_S sets the deadline",
                       c->env.rank, s == ZERO_STREAM_COMPUTE ? "compute" : "communication", c->timeout_s);
            return zero__cuda_fail_group(c, ZERO_ERR_TIMEOUT, err);
        }
        if (++spins > 64) { /* past the first microseconds: yield the core */
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- collectives ---- */

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
    return op == ZERO_OP_MAX ? ncclMax : op == ZERO_OP_MIN ? ncclMin : ncclSum;
}

/* After an NCCL call on the non-blocking communicator: wait until it is
   enqueued (ncclInProgress), with the deadline. */
static zero_result zero__cuda_nccl_done(zero_cuda *c, ncclResult_t r, const char *what, zero_error *err) {
    double t0 = zero__cuda_now();
    while (r == ncclInProgress) {
        if (ncclCommGetAsyncError(c->comm, &r) != ncclSuccess) r = ncclInternalError;
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
    return zero__cuda_nccl_done(c, ncclReduceScatter(send, recv, count, nt, zero__cuda_nccl_op(op), c->comm,
                                                     zero__cuda_stream_of(c, s)),
                                "ncclReduceScatter", err);
}
static zero_result zero__cuda_all_gather(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt,
                                         zero_stream_id s, zero_error *err) {
    ZERO__CUDA_COLL_PROLOGUE("all_gather");
    return zero__cuda_nccl_done(c, ncclAllGather(send, recv, count, nt, c->comm, zero__cuda_stream_of(c, s)),
                                "ncclAllGather", err);
}
static zero_result zero__cuda_all_reduce(void *ctx, const void *send, void *recv, size_t count, zero_dtype dt, zero_op op,
                                         zero_stream_id s, zero_error *err) {
    ZERO__CUDA_COLL_PROLOGUE("all_reduce");
    return zero__cuda_nccl_done(c, ncclAllReduce(send, recv, count, nt, zero__cuda_nccl_op(op), c->comm,
                                                 zero__cuda_stream_of(c, s)),
                                "ncclAllReduce", err);
}
static zero_result zero__cuda_broadcast(void *ctx, void *buf, size_t count, zero_dtype dt, int root, zero_stream_id s,
                                        zero_error *err) {
    ZERO__CUDA_COLL_PROLOGUE("broadcast");
    return zero__cuda_nccl_done(c, ncclBroadcast(buf, buf, count, nt, root, c->comm, zero__cuda_stream_of(c, s)),
                                "ncclBroadcast", err);
}
#else
/* one GPU, no NCCL: the collectives of a world of one */
static zero_result zero__cuda_copy_if(zero_cuda *c, void *dst, const void *src, size_t bytes, zero_stream_id s,
                                      zero_error *err) {
    if (dst == src || !bytes) return ZERO_OK;
    ZERO_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, zero__cuda_stream_of(c, s)), err);
    return ZERO_OK;
}
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

/* ---- kernels (zero_cuda_kernels) ---- */

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
    return zero__cuda_k_sumsq(x, n, dt, out, c->scratch, ZERO__CUDA_SUMSQ_SCRATCH, zero__cuda_stream_of(c, s), err);
}
static zero_result zero__cuda_adam(void *ctx, const zero_adam_args *a, zero_stream_id s, zero_error *err) {
    ZERO__CUDA_CTX("adam");
    return zero__cuda_k_adam(a, zero__cuda_stream_of(c, s), err);
}

/* ---- init ---- */

ZERO__DEF zero_cuda_options zero_cuda_options_default(void) {
    zero_cuda_options o;
    memset(&o, 0, sizeof o);
    o.device = -1;
    return o;
}

static double zero__cuda_timeout(double given) {
    const char *v = getenv("ZERO_TIMEOUT_S");
    if (given > 0) return given;
    if (v && *v) {
        char *end;
        double t = strtod(v, &end);
        if (*end == 0 && t > 0 && t < 1e7) return t;
        zero__log(NULL, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID, "ZERO_TIMEOUT_S=\"%s\" is not a number of seconds; using 600", v);
    }
    return 600;
}

ZERO__DEF void zero_cuda_backend_destroy(zero_cuda *c) {
    if (!c) return;
    if (c->stream[ZERO_STREAM_COMM]) {
        /* after a failure the stream may hold a collective that never ends:
           do not wait for it (the aborted communicator releases it) */
        if (!c->failed) cudaStreamSynchronize(c->stream[ZERO_STREAM_COMM]);
        cudaStreamDestroy(c->stream[ZERO_STREAM_COMM]);
    }
    if (c->own_compute && c->stream[ZERO_STREAM_COMPUTE]) cudaStreamDestroy(c->stream[ZERO_STREAM_COMPUTE]);
    if (c->scratch) cudaFree(c->scratch);
#ifndef ZERO_NO_NCCL
    if (c->comm && c->own_comm) ncclCommDestroy(c->comm);
#endif
    free(c);
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
    c = (zero_cuda *)calloc(1, sizeof *c);
    if (!c) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_cuda_backend_init");
    c->opt = opt ? *opt : zero_cuda_options_default();
    c->timeout_s = zero__cuda_timeout(c->opt.timeout_s);
#ifndef ZERO_NO_NCCL
    if (c->opt.comm) {
        int n = 0, rk = 0;
        if (ncclCommCount(c->opt.comm, &n) != ncclSuccess || ncclCommUserRank(c->opt.comm, &rk) != ncclSuccess) {
            free(c);
            return zero__fail(err, ZERO_MSG_NCCL_CALL, NULL, 0, 0, "zero_cuda_backend_init: the given communicator is not usable");
        }
        memset(&c->env, 0, sizeof c->env);
        c->env.rank = rk;
        c->env.world = n;
        c->env.local_rank = c->opt.device >= 0 ? c->opt.device : 0;
        c->env.local_world = -1;
        snprintf(c->env.source, sizeof c->env.source, "%s", "comm");
        c->comm = c->opt.comm;
    } else
#endif
    if ((r = zero_dist_env_read(&c->env, err)) != ZERO_OK) {
        free(c);
        return r;
    }
    c->device = c->opt.device >= 0 ? c->opt.device : c->env.local_rank;
    if ((r = zero_cuda_check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount", __FILE__, __LINE__, err)) != ZERO_OK) {
        free(c);
        return r;
    }
    if (c->device >= ndev) {
        int rank = c->env.rank, dev = c->device;
        free(c);
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
    ZERO__CUDA_INIT_TRY(cudaSetDevice(c->device));
    if (c->opt.compute_stream) {
        c->stream[ZERO_STREAM_COMPUTE] = c->opt.compute_stream;
    } else {
        ZERO__CUDA_INIT_TRY(cudaStreamCreateWithFlags(&c->stream[ZERO_STREAM_COMPUTE], cudaStreamNonBlocking));
        c->own_compute = 1;
    }
    ZERO__CUDA_INIT_TRY(cudaStreamCreateWithFlags(&c->stream[ZERO_STREAM_COMM], cudaStreamNonBlocking));
    ZERO__CUDA_INIT_TRY(cudaMalloc((void **)&c->scratch, sizeof(double) * ZERO__CUDA_SUMSQ_SCRATCH));
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
    c->be.sync = zero__cuda_sync;
    c->be.reduce_scatter = zero__cuda_reduce_scatter;
    c->be.all_gather = zero__cuda_all_gather;
    c->be.all_reduce = zero__cuda_all_reduce;
    c->be.broadcast = zero__cuda_broadcast;
    c->be.scale = zero__cuda_scale;
    c->be.convert = zero__cuda_convert;
    c->be.sumsq = zero__cuda_sumsq;
    c->be.adam = zero__cuda_adam;
    *out = c;
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF const zero_backend *zero_cuda_backend(zero_cuda *c) { return c ? &c->be : NULL; }
ZERO__DEF cudaStream_t zero_cuda_stream(const zero_cuda *c) { return c ? c->stream[ZERO_STREAM_COMPUTE] : NULL; }
ZERO__DEF const zero_dist_env *zero_cuda_env(const zero_cuda *c) { return c ? &c->env : NULL; }
