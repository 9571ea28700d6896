/* bench_offload.cu - offload on one GPU: how large a
   model trains with each placement of the model states, and what offloading
   the optimizer costs per step.

       make bench-offload                      (BENCH_OFFLOAD_ARGS, default --speed --capacity)
       build/bench/bench_offload --speed [--layers 24] [--hidden 8192] [--batch 16,32,4] [--seq 2048] [-n 7] [-w 2]
       build/bench/bench_offload --capacity [--hidden 8192] [--cap-batch 1] [--cap-seq 1024] [--steps 2]
                                 [--placements none,cpu,cpu+param,nvme] [--nvme-dir /tmp/zero_bench_nvme]
                                 [--deadline-s 420] [--trial-timeout-s 300] [--host-reserve-gib 1.5]
                                 [--disk-reserve-gib 1]

   The model: L linear layers y = x W^T, W [H, H] bf16 (one tensor per layer,
   one unit per layer: reduce_bucket_size = H^2), on a batch of B x T tokens.
   Forward and backward are cuBLAS GEMMs (cublasGemmEx, bf16 operands, fp32
   accumulation) on zero's compute stream; every layer's input is kept for the
   backward; the loss is <R, y_L> for a fixed random R, so dy_L = R; the
   backward writes dW = dy^T x straight into zero_grad's buffer (the tensors
   are ZERO_TENSOR_GRAD_WRITE) and hands it over with zero_grad_ready, layers
   in reverse order; zero_fetch / zero_release around every use of a layer
   (stage 3 gathers there). Weights start uniform in +-sqrt(3/H) (unit-variance
   activations through any depth) from a hash of (tensor, element) computed by
   the init callback on the CPU pool; inputs and R are random on the GPU.
   Nothing is timed on zeros.

   The backend: zero_cuda_backend_init / zero_cuda_backend, wrapped by
   zero_offload_backend(base, pool, &ob) (pool: every core) when anything is
   offloaded. Placements:
       none        stage 2, nothing offloaded
       cpu         stage 2, offload_optimizer cpu
       dpu         cpu with offload_optimizer.delayed_param_update (measured
                   only when zero_config_parse_json knows the key)
       cpu-early   cpu with gradient_clipping 0 and bf16.check_grad_overflow false:
                   nothing waits for the global norm, so the engine's thread
                   steps each unit on the CPU during the backward
       cpu+param   stage 3, offload_optimizer cpu, offload_param cpu
       nvme        stage 2, offload_optimizer nvme (nvme_path --nvme-dir)
       nvme+param  stage 3, offload_optimizer nvme, offload_param nvme

   --speed: one model that fits without offload; per placement (none, cpu,
   cpu-early, dpu) and batch: full steps (forward + backward + zero_step, then a
   synchronisation of the compute stream), wall clock, median of n after w
   warm-up; the GPU time of forward + backward from CUDA events; the medians
   of zero_step_info.time_ms[]. In the same process: pinned host <-> device
   bandwidth (cudaMemcpyAsync, 1 GiB and one unit's bytes), and the bandwidth
   of zero's own offload copies: the backend's copy is wrapped, and during a
   few extra steps every host <-> device copy of >= 1 MiB gets CUDA events
   before and after it on its stream, so its own duration is timed (bytes /
   summed durations, per direction).

   --capacity: per placement the plan is zero_estimate_max_params over the
   budgets of this machine: the GPU's free memory (cudaMemGetInfo, in a fresh
   process after the CUDA context, NCCL, cuBLAS and its workspace are up) less
   the program's activations (computed for the layer count, iterated), the
   host's MemAvailable (or the cgroup's limit when lower), and the free bytes
   of --nvme-dir (statvfs) for the nvme placements. Then the model runs at
   floor(f * plan / H^2) layers, f = 1.00, 0.97, 0.94, 0.90, 0.85, 0.80 in
   that order, until one trains: create, --steps full steps (gradient
   accumulation 2, so the engine's fp32 accumulator and staging are the ones
   the estimator counts). Every trial runs in a process of its own (forked
   before any CUDA call), so an out-of-memory kill ends only the trial. A
   trial whose estimated host bytes leave less than --host-reserve-gib of
   MemAvailable is not started (recorded as such), nor one whose estimated
   NVMe bytes leave less than --disk-reserve-gib of the disk. Printed: plan beside
   measured (GPU used by cudaMemGetInfo, host used by MemAvailable, disk used
   by statvfs, the engine's own plan from zero_memory_report) and the ratio of
   the largest model trained to the plan. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "zero_cuda.cuh"
#include "bench.cuh"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <thread>
#include <string>

/* ---- options ---- */

typedef struct opts {
    int speed, capacity;
    int layers, hidden, seq, iters, warmup;          /* --speed */
    int cap_batch, cap_seq, steps;                    /* --capacity */
    std::vector<int> batches;
    std::vector<std::string> placements;
    char nvme_dir[256];
    double deadline_s, trial_timeout_s, host_reserve_gib, disk_reserve_gib;
} opts;

/* ---- placements ---- */

typedef struct placement {
    const char *name;
    int stage;
    zero_offload_device oo, op;
    int dpu;
    int nocheck; /* bf16.check_grad_overflow false: nothing waits for the global norm (the early CPU step) */
} placement;

static const placement PLACEMENTS[] = {
    {"none", 2, ZERO_OFFLOAD_NONE, ZERO_OFFLOAD_NONE, 0, 0},
    {"cpu", 2, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE, 0, 0},
    {"dpu", 2, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE, 1, 0},
    {"cpu-early", 2, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE, 0, 1},
    {"cpu+param", 3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_CPU, 0, 0},
    {"nvme", 2, ZERO_OFFLOAD_NVME, ZERO_OFFLOAD_NONE, 0, 0},
    {"nvme+param", 3, ZERO_OFFLOAD_NVME, ZERO_OFFLOAD_NVME, 0, 0},
};
static const char *dev_name(zero_offload_device d) {
    return d == ZERO_OFFLOAD_CPU ? "cpu" : d == ZERO_OFFLOAD_NVME ? "nvme" : "none";
}
static const placement *find_placement(const char *name) {
    for (size_t i = 0; i < sizeof PLACEMENTS / sizeof PLACEMENTS[0]; i++)
        if (!strcmp(PLACEMENTS[i].name, name)) return &PLACEMENTS[i];
    return NULL;
}

/* ---- host facts (no CUDA: the parent reads these too) ---- */

static const double GIB = 1024.0 * 1024.0 * 1024.0;

static double meminfo_bytes(const char *key) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double v = -1;
    size_t k = strlen(key);
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':') {
            v = atof(line + k + 1) * 1024.0;
            break;
        }
    fclose(f);
    return v;
}
static double read_number_file(const char *path) {
    FILE *f = fopen(path, "r");
    char buf[64] = {0};
    if (!f) return -1;
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
    if (buf[0] < '0' || buf[0] > '9') return -1; /* "max" or nothing */
    return atof(buf);
}
/* what this process may still take: MemAvailable, or the cgroup's room when smaller */
static double host_available(double *cg_room) {
    double avail = meminfo_bytes("MemAvailable");
    double mx = read_number_file("/sys/fs/cgroup/memory.max"), cur = read_number_file("/sys/fs/cgroup/memory.current");
    *cg_room = mx > 0 && cur >= 0 ? mx - cur : -1;
    return *cg_room > 0 && *cg_room < avail ? *cg_room : avail;
}
static double disk_free(const char *dir) {
    struct statvfs s;
    if (statvfs(dir, &s) != 0) return -1;
    return (double)s.f_bavail * (double)s.f_frsize;
}
static double self_status_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double v = -1;
    size_t k = strlen(key);
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':') {
            v = atof(line + k + 1) * 1024.0;
            break;
        }
    fclose(f);
    return v;
}
static void clean_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *x;
    char p[600];
    if (!d) return;
    while ((x = readdir(d)))
        if (x->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, x->d_name);
            unlink(p);
        }
    closedir(d);
}

/* ---- the model's initial weights: a hash of (tensor, element), on the pool ---- */

static zero_cpu_pool *g_pool;
static float g_amp;

static inline float hash_unit(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (float)(x >> 40) * (1.0f / 8388608.0f) - 1.0f; /* [-1, 1) */
}
typedef struct init_job {
    uint64_t base;
    float *out;
} init_job;
static void init_task(void *arg, int64_t begin, int64_t end, int thread) {
    const init_job *j = (const init_job *)arg;
    (void)thread;
    for (int64_t i = begin; i < end; i++) j->out[i] = g_amp * hash_unit(j->base + (uint64_t)i);
}
static void init_weight(void *user, int t, int64_t off, int64_t n, float *out) {
    init_job j = {((uint64_t)(t + 1) << 40) + (uint64_t)off, out};
    zero_error err;
    (void)user;
    if (zero_cpu_pool_run(g_pool, init_task, &j, n, 1 << 16, &err) != ZERO_OK) init_task(&j, 0, n, 0);
}

/* ---- GPU pieces ---- */

__global__ void fill_bf16(__nv_bfloat16 *p, size_t n, uint64_t seed, float amp) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        float u = (float)(bench_hash(seed * 0x9E3779B97F4A7C15ULL + i) >> 8) * (1.0f / 8388608.0f) - 1.0f;
        p[i] = __float2bfloat16_rn(amp * u);
    }
}

#define BENCH_BLAS(call) bench_blas_check((call), #call, __FILE__, __LINE__)
static inline void bench_blas_check(cublasStatus_t s, const char *what, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    fprintf(stderr, "[bench] %s:%d: %s: %s\n", file, line, what, cublasGetStatusName(s));
    exit(1);
}

/* Column-major C[m, n] = op(A) op(B), bf16 in and out, fp32 accumulation. */
static void gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A,
                 int lda, const void *B, int ldb, void *C, int ldc) {
    const float one = 1.0f, zero = 0.0f;
    BENCH_BLAS(cublasGemmEx(h, ta, tb, m, n, k, &one, A, CUDA_R_16BF, lda, B, CUDA_R_16BF, ldb, &zero, C, CUDA_R_16BF,
                            ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* What lives for the whole process: backend, stream, cuBLAS and its workspace */
typedef struct gpu {
    zero_cuda *cu;
    cudaStream_t s;
    cublasHandle_t blas;
    void *ws;
    size_t free0, total; /* cudaMemGetInfo once all of the above is up */
} gpu;

static const size_t BLAS_WS_BYTES = 64u << 20;

static void gpu_init(gpu *g) {
    zero_error err;
    zero_cuda_options o = zero_cuda_options_default();
    o.device = 0;
    BENCH_CUDA(cudaSetDevice(0));
    BENCH_ZERO(zero_cuda_backend_init(&g->cu, &o, &err), &err);
    g->s = zero_cuda_stream(g->cu);
    BENCH_BLAS(cublasCreate(&g->blas));
    BENCH_BLAS(cublasSetStream(g->blas, g->s));
    BENCH_CUDA(cudaMalloc(&g->ws, BLAS_WS_BYTES));
    BENCH_BLAS(cublasSetWorkspace(g->blas, g->ws, BLAS_WS_BYTES));
    BENCH_CUDA(cudaDeviceSynchronize());
    BENCH_CUDA(cudaMemGetInfo(&g->free0, &g->total));
}

/* The activations: x[0..L-1] (every layer's input, kept), R (dy of the last
   layer), two dy/dx buffers, and the last layer's output. */
typedef struct acts {
    std::vector<void *> x;
    void *R, *d[2], *y;
    size_t tokens, bytes;
} acts;
static size_t acts_bytes(int L, size_t tokens, int H) { return ((size_t)L + 4) * tokens * (size_t)H * 2; }
static void acts_alloc(acts *a, int L, size_t tokens, int H, cudaStream_t s) {
    size_t n = tokens * (size_t)H;
    a->tokens = tokens;
    a->bytes = acts_bytes(L, tokens, H);
    a->x.assign((size_t)L, NULL);
    for (int l = 0; l < L; l++) BENCH_CUDA(cudaMalloc(&a->x[(size_t)l], n * 2));
    BENCH_CUDA(cudaMalloc(&a->R, n * 2));
    BENCH_CUDA(cudaMalloc(&a->d[0], n * 2));
    BENCH_CUDA(cudaMalloc(&a->d[1], n * 2));
    BENCH_CUDA(cudaMalloc(&a->y, n * 2));
    int grid = bench_sm_count() * 8;
    fill_bf16<<<grid, 256, 0, s>>>((__nv_bfloat16 *)a->x[0], n, 11, 1.0f); /* the input */
    fill_bf16<<<grid, 256, 0, s>>>((__nv_bfloat16 *)a->R, n, 12, 1.0f);    /* dy of the output */
    BENCH_CUDA(cudaGetLastError());
}
static void acts_free(acts *a) {
    for (size_t l = 0; l < a->x.size(); l++) cudaFree(a->x[l]);
    cudaFree(a->R);
    cudaFree(a->d[0]);
    cudaFree(a->d[1]);
    cudaFree(a->y);
    a->x.clear();
}

/* One micro-batch of `tokens` tokens (<= the activations' size) through the engine. */
static void micro_batch(const gpu *g, zero_engine *e, acts *a, int L, int H, int tokens) {
    cublasHandle_t h = g->blas;
    /* forward: x[l+1] = x[l] W_l^T  (row-major [T, H]; column-major y^T = W x^T) */
    for (int l = 0; l < L; l++) {
        BENCH_ENG(zero_fetch(e, l), e);
        const void *W = bench_ptr(zero_param(e, l), "zero_param", e);
        void *out = l + 1 < L ? a->x[(size_t)l + 1] : a->y;
        gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, H, tokens, H, W, H, a->x[(size_t)l], H, out, H);
        BENCH_ENG(zero_release(e, l), e);
    }
    /* backward of <R, y>: dy_L = R (bf16: loss scale 1) */
    const void *dy = a->R;
    int k = 0;
    for (int l = L - 1; l >= 0; l--) {
        BENCH_ENG(zero_fetch(e, l), e);
        const void *W = bench_ptr(zero_param(e, l), "zero_param", e);
        void *dW = bench_ptr(zero_grad(e, l), "zero_grad", e);
        /* dW [H, H] = dy^T x: column-major dW^T = x^T dy */
        gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, H, H, tokens, a->x[(size_t)l], H, dy, H, dW, H);
        if (l > 0) { /* dx = dy W: column-major dx^T = W^T dy^T */
            gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, H, tokens, H, W, H, dy, H, a->d[k], H);
            dy = a->d[k];
            k ^= 1;
        }
        BENCH_ENG(zero_release(e, l), e);
        BENCH_ENG(zero_grad_ready(e, l), e);
    }
}

/* ---- the backend's copy, wrapped: events around host <-> device copies ---- */

typedef struct copy_rec {
    cudaEvent_t a, b;
    size_t bytes;
    int dir; /* 0: host to device, 1: device to host */
} copy_rec;
static zero_backend g_ob;       /* the backend the engine would have had */
static const zero_cuda *g_cu;
static int g_stamping;
static std::vector<copy_rec> g_recs;
static size_t g_nrec;
static std::mutex g_mu;

static int is_host_ptr(const void *p) {
    cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        cudaGetLastError();
        return 1;
    }
    return at.type == cudaMemoryTypeHost || at.type == cudaMemoryTypeUnregistered;
}
static zero_result w_copy(void *ctx, void *dst, const void *src, size_t bytes, zero_stream_id s, zero_error *err) {
    if (!g_stamping || bytes < (1u << 20)) return g_ob.copy(ctx, dst, src, bytes, s, err);
    int hd = is_host_ptr(dst), hs = is_host_ptr(src);
    if (hd == hs) return g_ob.copy(ctx, dst, src, bytes, s, err);
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_nrec >= g_recs.size()) return g_ob.copy(ctx, dst, src, bytes, s, err);
    copy_rec *r = &g_recs[g_nrec++];
    cudaStream_t st = s == ZERO_STREAM_COMM ? zero_cuda_comm_stream(g_cu) : zero_cuda_stream(g_cu);
    BENCH_CUDA(cudaEventRecord(r->a, st));
    zero_result res = g_ob.copy(ctx, dst, src, bytes, s, err);
    BENCH_CUDA(cudaEventRecord(r->b, st));
    r->bytes = bytes;
    r->dir = hs ? 0 : 1;
    return res;
}

/* ---- engine setup ---- */

/* cfg for placement p; 0 with msg when this zero.h refuses it (a key it does not know, a combination) */
/* src into msg[cap], cut to fit (snprintf with "%s" warns that it may cut) */
static void copy_msg(char *msg, size_t cap, const char *src) {
    size_t k = strnlen(src, cap - 1);
    memcpy(msg, src, k);
    msg[k] = 0;
}

static int make_config(const placement *p, int H, int batch, int gas, const char *nvme_dir, zero_config *cfg,
                       char *msg, size_t cap) {
    zero_error err;
    *cfg = zero_config_default();
    cfg->train_micro_batch_size_per_gpu = batch;
    cfg->gradient_accumulation_steps = gas;
    cfg->bf16.enabled = 1;
    cfg->optimizer.type = ZERO_OPTIMIZER_ADAMW;
    cfg->optimizer.lr = 1e-5;
    cfg->optimizer.weight_decay = 0.01;
    cfg->zero_optimization.stage = p->stage;
    cfg->zero_optimization.reduce_bucket_size = (int64_t)H * H;
    cfg->zero_optimization.offload_optimizer.device = p->oo;
    cfg->zero_optimization.offload_param.device = p->op;
    snprintf(cfg->zero_optimization.offload_optimizer.nvme_path, ZERO_PATH_MAX, "%s", nvme_dir);
    snprintf(cfg->zero_optimization.offload_param.nvme_path, ZERO_PATH_MAX, "%s", nvme_dir);
    if (p->nocheck) { /* nothing of the step waits for the global norm: no clipping (1.0 by default), no bf16 check */
        cfg->gradient_clipping = 0;
        cfg->bf16.check_grad_overflow = 0;
    }
    if (p->dpu) {
        static const char js[] = "{\"zero_optimization\": {\"offload_optimizer\": {\"delayed_param_update\": true}}}";
        if (zero_config_parse_json(cfg, js, strlen(js), &err) != ZERO_OK) {
            copy_msg(msg, cap, err.msg);
            return 0;
        }
    }
    if (zero_config_resolve(cfg, 1, &err) != ZERO_OK) {
        copy_msg(msg, cap, err.msg);
        return 0;
    }
    return 1;
}

typedef struct model {
    std::vector<zero_tensor> ts;
    std::vector<std::string> names;
} model;
static void model_tensors(model *m, int L, int H) {
    m->names.resize((size_t)L);
    m->ts.assign((size_t)L, zero_tensor());
    for (int l = 0; l < L; l++) {
        m->names[(size_t)l] = "h" + std::to_string(l) + ".weight";
        zero_tensor *t = &m->ts[(size_t)l];
        memset(t, 0, sizeof *t);
        t->name = m->names[(size_t)l].c_str();
        t->numel = (int64_t)H * H;
        t->ndim = 2;
        t->shape[0] = H;
        t->shape[1] = H;
        t->group = l;
        t->flags = ZERO_TENSOR_GRAD_WRITE; /* the GEMM stores every element (beta 0) */
        t->init = init_weight;
    }
    g_amp = sqrtf(3.0f / (float)H);
}

/* ---- --speed ---- */

static void pinned_bw(size_t bytes, cudaStream_t s, double *h2d, double *d2h) {
    void *hbuf, *dbuf;
    BENCH_CUDA(cudaMallocHost(&hbuf, bytes));
    BENCH_CUDA(cudaMalloc(&dbuf, bytes));
    memset(hbuf, 0x3c, bytes);
    BENCH_CUDA(cudaMemset(dbuf, 0x3c, bytes));
    for (int dir = 0; dir < 2; dir++) {
        std::vector<cudaEvent_t> a, b;
        const int n = 12, w = 2;
        bench_events(a, n);
        bench_events(b, n);
        for (int i = 0; i < n; i++) {
            BENCH_CUDA(cudaEventRecord(a[(size_t)i], s));
            if (dir == 0) BENCH_CUDA(cudaMemcpyAsync(dbuf, hbuf, bytes, cudaMemcpyHostToDevice, s));
            else BENCH_CUDA(cudaMemcpyAsync(hbuf, dbuf, bytes, cudaMemcpyDeviceToHost, s));
            BENCH_CUDA(cudaEventRecord(b[(size_t)i], s));
        }
        double ms = bench_median(bench_event_ms(a, b, w, n));
        (dir == 0 ? *h2d : *d2h) = (double)bytes / (ms * 1e-3) / 1e9;
        bench_events_free(a);
        bench_events_free(b);
    }
    BENCH_CUDA(cudaFreeHost(hbuf));
    BENCH_CUDA(cudaFree(dbuf));
}

/* Pinned H2D copies of `bytes`, median, alone and while the pool runs
   zero_cpu_adam (bf16 gradients and parameters) over n elements in a loop on
   another thread: whether the step's parameter copies slow down beside the
   CPU Adam's memory traffic. *adam_gbs: the Adam's rate meanwhile, 28 B/param. */
static void h2d_beside_adam(size_t bytes, int64_t n, cudaStream_t s, double *alone, double *beside, double *adam_gbs) {
    void *hbuf, *dbuf;
    zero_error err;
    BENCH_CUDA(cudaMallocHost(&hbuf, bytes));
    BENCH_CUDA(cudaMalloc(&dbuf, bytes));
    memset(hbuf, 0x3c, bytes);
    float *w = (float *)malloc(sizeof(float) * 3 * (size_t)n);
    uint16_t *gp = (uint16_t *)malloc(sizeof(uint16_t) * 2 * (size_t)n);
    if (!w || !gp) {
        fprintf(stderr, "[bench] h2d_beside_adam: out of host memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < 3 * n; i++) w[i] = 0.01f * hash_unit((uint64_t)i);
    for (int64_t i = 0; i < 2 * n; i++) gp[i] = zero_f32_to_bf16(hash_unit((uint64_t)i + 99));
    zero_adam_seg seg = {0, n, 1e-5f, 0.0f, 0};
    zero_adam_args a;
    memset(&a, 0, sizeof a);
    a.master = w;
    a.m = w + n;
    a.v = w + 2 * n;
    a.grad = gp;
    a.grad_dtype = ZERO_DTYPE_BF16;
    a.param = gp + n;
    a.param_dtype = ZERO_DTYPE_BF16;
    a.segs = &seg;
    a.n_segs = 1;
    a.beta1 = 0.9f;
    a.beta2 = 0.999f;
    a.eps = 1e-8f;
    a.bc1 = 1;
    a.bc2 = 1;
    a.grad_scale = 1;
    a.adamw = 1;
    for (int mode = 0; mode < 2; mode++) {
        std::vector<cudaEvent_t> ea, eb;
        const int iters = 40;
        volatile int stop = 0;
        int calls = 0;
        double t0 = 0, t1 = 0;
        std::thread th;
        if (mode == 1) {
            th = std::thread([&] {
                zero_error e2;
                t0 = bench_now_s();
                while (!stop) {
                    BENCH_ZERO(zero_cpu_adam(&a, g_pool, &e2), &e2);
                    calls++;
                }
                t1 = bench_now_s();
            });
            usleep(300000); /* the Adam is running */
        }
        bench_events(ea, iters);
        bench_events(eb, iters);
        for (int i = 0; i < iters; i++) {
            BENCH_CUDA(cudaEventRecord(ea[(size_t)i], s));
            BENCH_CUDA(cudaMemcpyAsync(dbuf, hbuf, bytes, cudaMemcpyHostToDevice, s));
            BENCH_CUDA(cudaEventRecord(eb[(size_t)i], s));
            BENCH_CUDA(cudaStreamSynchronize(s)); /* one at a time, as the step's pieces come */
        }
        double ms = bench_median(bench_event_ms(ea, eb, 5, iters));
        (mode == 0 ? *alone : *beside) = (double)bytes / (ms * 1e-3) / 1e9;
        if (mode == 1) {
            stop = 1;
            th.join();
            *adam_gbs = calls > 0 ? (double)calls * (double)n * 28.0 / (t1 - t0) / 1e9 : 0;
        }
        bench_events_free(ea);
        bench_events_free(eb);
    }
    (void)err;
    free(w);
    free(gp);
    BENCH_CUDA(cudaFreeHost(hbuf));
    BENCH_CUDA(cudaFree(dbuf));
}

typedef struct copy_stat {
    const char *placement;
    int n[2];                  /* [0] host to device, [1] device to host */
    double bytes[2], ms[2], gbs[2], pin[2];
    size_t size[2];
} copy_stat;

typedef struct speed_row {
    const char *placement;
    int batch;
    double step_ms, fb_ms, phase[ZERO_PHASE_COUNT];
    int measured;
    char note[512];
} speed_row;

static int run_speed(const opts *o) {
    gpu g;
    zero_error err;
    const int L = o->layers, H = o->hidden;
    int bmax = 0;
    for (int b : o->batches) bmax = b > bmax ? b : bmax;
    const size_t tmax = (size_t)bmax * (size_t)o->seq;
    const double P = (double)L * H * H;
    gpu_init(&g);
    g_cu = g.cu;
    BENCH_ZERO(zero_cpu_pool_create(&g_pool, 0, NULL, &err), &err);
    printf("# bench_offload --speed: %d linear layers of [%d x %d] bf16 = %.3e parameters; tokens per step = batch x "
           "%d; cuBLAS bf16 GEMMs, fp32 accumulation\n",
           L, H, H, P, o->seq);
    bench_device_line("# ");
    printf("# CPU pool: %d threads, CPU Adam %s; host MemAvailable %.1f GiB\n", zero_cpu_pool_threads(g_pool),
           zero_simd_level_name(zero_cpu_simd_level(NULL)), meminfo_bytes("MemAvailable") / GIB);

    /* pinned bandwidth, the same process and stream kind */
    double h2d_big, d2h_big, h2d_unit, d2h_unit;
    size_t unit_bytes = (size_t)H * H * 2;
    pinned_bw((size_t)1 << 30, g.s, &h2d_big, &d2h_big);
    pinned_bw(unit_bytes, g.s, &h2d_unit, &d2h_unit);
    printf("# pinned cudaMemcpyAsync, median of 10: 1 GiB H2D %.2f GB/s, D2H %.2f GB/s; %zu B (one unit in bf16) H2D "
           "%.2f GB/s, D2H %.2f GB/s\n",
           h2d_big, d2h_big, unit_bytes, h2d_unit, d2h_unit);

    {
        double alone = 0, beside = 0, adam_gbs = 0; /* set by h2d_beside_adam */
        const size_t piece = (size_t)8 << 20;
        const int64_t n = (int64_t)1 << 28;
        h2d_beside_adam(piece, n, g.s, &alone, &beside, &adam_gbs);
        printf("# pinned H2D of %zu B one at a time, median of 35: alone %.2f GB/s; while zero_cpu_adam (bf16, %lld "
               "elements, %d threads) runs on the host at %.1f GB/s (28 B/param): %.2f GB/s (%.0f%%)\n",
               piece, alone, (long long)n, zero_cpu_pool_threads(g_pool), adam_gbs, beside, 100 * beside / alone);
    }
    acts a;
    acts_alloc(&a, L, tmax, H, g.s);
    model m;
    model_tensors(&m, L, H);
    std::vector<speed_row> rows;
    std::vector<copy_stat> copies;
    std::vector<cudaEvent_t> ea, eb;
    bench_events(ea, o->iters + o->warmup);
    bench_events(eb, o->iters + o->warmup);
    g_recs.resize(4096);
    for (size_t i = 0; i < g_recs.size(); i++) {
        BENCH_CUDA(cudaEventCreate(&g_recs[i].a));
        BENCH_CUDA(cudaEventCreate(&g_recs[i].b));
    }

    const char *speed_placements[] = {"none", "cpu", "cpu-early", "dpu"};
    for (const char *pn : speed_placements) {
        const placement *p = find_placement(pn);
        zero_config cfg;
        char msg[512] = "";
        if (!make_config(p, H, bmax, 1, o->nvme_dir, &cfg, msg, sizeof msg)) {
            speed_row r;
            memset(&r, 0, sizeof r);
            r.placement = pn;
            snprintf(r.note, sizeof r.note, "not measured: the config is refused (%.400s)", msg);
            rows.push_back(r);
            printf("# %s: %s\n", pn, r.note);
            continue;
        }
        zero_backend be = *zero_cuda_backend(g.cu);
        if (p->oo || p->op) zero_offload_backend(zero_cuda_backend(g.cu), g_pool, &be);
        g_ob = be;
        be.copy = w_copy;
        zero_engine *e;
        double t0 = bench_now_s();
        BENCH_ZERO(zero_engine_create(&e, &cfg, m.ts.data(), L, &be, &err), &err);
        double t_create = bench_now_s() - t0;
        zero_memory_stats ms;
        zero_memory_report(e, &ms);
        printf("# %s: engine created in %.1f s; planned device %.2f GiB, pinned %.2f GiB, host %.2f GiB\n", pn, t_create,
               ms.planned_total[ZERO_MEM_DEVICE] / GIB, ms.planned_total[ZERO_MEM_PINNED] / GIB,
               ms.planned_total[ZERO_MEM_HOST] / GIB);
        for (int b : o->batches) {
            int tokens = b * o->seq;
            std::vector<double> wall, fb, ph[ZERO_PHASE_COUNT];
            int total = o->warmup + o->iters;
            for (int i = 0; i < total; i++) {
                zero_step_info info;
                BENCH_CUDA(cudaStreamSynchronize(g.s));
                double s0 = bench_now_s();
                BENCH_CUDA(cudaEventRecord(ea[(size_t)i], g.s));
                micro_batch(&g, e, &a, L, H, tokens);
                BENCH_CUDA(cudaEventRecord(eb[(size_t)i], g.s));
                BENCH_ENG(zero_step(e, &info), e);
                BENCH_CUDA(cudaStreamSynchronize(g.s));
                double s1 = bench_now_s();
                if (!info.applied || !(info.grad_norm > 0)) {
                    fprintf(stderr, "[bench] %s: step %d not applied (grad_norm %g)\n", pn, i, info.grad_norm);
                    return 1;
                }
                if (i >= o->warmup) {
                    wall.push_back((s1 - s0) * 1e3);
                    for (int k = 0; k < ZERO_PHASE_COUNT; k++) ph[k].push_back(info.time_ms[k]);
                }
            }
            fb = bench_event_ms(ea, eb, o->warmup, total);
            speed_row r;
            memset(&r, 0, sizeof r);
            r.placement = pn;
            r.batch = b;
            r.measured = 1;
            r.step_ms = bench_median(wall);
            r.fb_ms = bench_median(fb);
            for (int k = 0; k < ZERO_PHASE_COUNT; k++) r.phase[k] = bench_median(ph[k]);
            rows.push_back(r);
            printf("# %s batch %d (%d tokens): step %.1f ms (min %.1f, max %.1f), forward+backward on the GPU %.1f "
                   "ms\n",
                   pn, b, tokens, r.step_ms, *std::min_element(wall.begin(), wall.end()),
                   *std::max_element(wall.begin(), wall.end()), r.fb_ms);
        }
        /* zero's own host <-> device copies: 3 more steps with the copies stamped */
        if (p->oo) {
            copy_stat cs;
            memset(&cs, 0, sizeof cs);
            cs.placement = pn;
            g_nrec = 0;
            g_stamping = 1;
            for (int i = 0; i < 3; i++) {
                zero_step_info info;
                micro_batch(&g, e, &a, L, H, o->batches[0] * o->seq);
                BENCH_ENG(zero_step(e, &info), e);
            }
            g_stamping = 0;
            BENCH_CUDA(cudaDeviceSynchronize());
            {
                std::lock_guard<std::mutex> lock(g_mu);
                for (size_t i = 0; i < g_nrec; i++) {
                    float t = 0;
                    BENCH_CUDA(cudaEventElapsedTime(&t, g_recs[i].a, g_recs[i].b));
                    cs.ms[g_recs[i].dir] += t;
                    cs.bytes[g_recs[i].dir] += (double)g_recs[i].bytes;
                    cs.n[g_recs[i].dir]++;
                }
            }
            for (int d = 0; d < 2; d++)
                if (cs.n[d] && cs.ms[d] > 0) {
                    cs.gbs[d] = cs.bytes[d] / (cs.ms[d] * 1e-3) / 1e9;
                    cs.size[d] = (size_t)(cs.bytes[d] / cs.n[d]) / 4096 * 4096;
                }
            printf("# %s: zero's copies over 3 steps (batch %d): %d H2D, %.3f GB per step, %.1f ms summed, %.2f GB/s; "
                   "%d D2H, %.3f GB per step, %.1f ms summed, %.2f GB/s\n",
                   pn, o->batches[0], cs.n[0], cs.bytes[0] / 3e9, cs.ms[0], cs.gbs[0], cs.n[1], cs.bytes[1] / 3e9,
                   cs.ms[1], cs.gbs[1]);
            copies.push_back(cs);
        }
        zero_engine_destroy(e);
        /* the pinned bandwidth at the copies' own mean size, for the comparison: after the
           engine is gone (a delayed update's thread would still be running its CPU Adam) */
        if (!copies.empty() && copies.back().placement == pn)
            for (int d = 0; d < 2; d++) {
                copy_stat *cs = &copies.back();
                double h, dd;
                if (!cs->size[d]) continue;
                pinned_bw(cs->size[d], g.s, &h, &dd);
                cs->pin[d] = d == 0 ? h : dd;
            }
    }

    /* the table */
    static const char *phn[ZERO_PHASE_COUNT] = {"backward", "reduce", "fetch", "norm", "optimizer", "gather", "step"};
    printf("#\n# speed: wall clock of forward + backward + zero_step + sync, median of %d after %d warm-up; fwd+bwd = "
           "CUDA events around forward and backward on the compute stream; phases = medians of "
           "zero_step_info.time_ms (host ms)\n",
           o->iters, o->warmup);
    printf("# %-10s %6s %7s %10s %10s %8s |", "placement", "batch", "tokens", "step(ms)", "fwd+bwd", "ratio");
    for (int k = 0; k < ZERO_PHASE_COUNT; k++) printf(" %9s", phn[k]);
    printf("\n");
    for (const speed_row &r : rows) {
        if (!r.measured) {
            printf("  %-10s %s\n", r.placement, r.note);
            continue;
        }
        double base = 0;
        for (const speed_row &q : rows)
            if (q.measured && q.batch == r.batch && !strcmp(q.placement, "none")) base = q.step_ms;
        printf("  %-10s %6d %7d %10.1f %10.1f %8.3f |", r.placement, r.batch, r.batch * o->seq, r.step_ms, r.fb_ms,
               base > 0 ? r.step_ms / base : 0.0);
        for (int k = 0; k < ZERO_PHASE_COUNT; k++) printf(" %9.1f", r.phase[k]);
        printf("\n");
    }
    for (const speed_row &r : rows) {
        if (!r.measured || !strcmp(r.placement, "none")) continue;
        double base = 0;
        for (const speed_row &q : rows)
            if (q.measured && q.batch == r.batch && !strcmp(q.placement, "none")) base = q.step_ms;
        double target = !strcmp(r.placement, "dpu") ? 1.15 : 1.5;
        printf("# target %s/none <= %.2fx at batch %d: %.3fx %s\n", r.placement, target, r.batch, r.step_ms / base,
               r.step_ms / base <= target ? "met" : "missed");
    }
    for (const copy_stat &cs : copies)
        for (int d = 0; d < 2; d++) {
            double big = d == 0 ? h2d_big : d2h_big;
            if (cs.gbs[d] <= 0 || cs.pin[d] <= 0) continue;
            printf("# target zero's offload copies >= 85%% of pinned bandwidth, %s %s: %.2f GB/s in copies of %zu B on "
                   "average; pinned cudaMemcpyAsync of that size %.2f GB/s -> %.1f%% %s (of the 1 GiB figure: "
                   "%.1f%%)\n",
                   cs.placement, d == 0 ? "H2D (parameters)" : "D2H (gradients)", cs.gbs[d], cs.size[d], cs.pin[d],
                   100 * cs.gbs[d] / cs.pin[d], cs.gbs[d] >= 0.85 * cs.pin[d] ? "met" : "missed",
                   100 * cs.gbs[d] / big);
        }
    fflush(stdout);
    acts_free(&a);
    return 0;
}

/* ---- --capacity ---- */

typedef struct trial_in {
    const placement *p;
    int L, H, batch, seq, steps;
    char nvme_dir[256];
    double disk_free0;
} trial_in;

typedef struct trial_out {
    int ok;
    char msg[640];
    double create_s, step_s[8];
    double grad_norm;
    double gpu_used, gpu_total, host_rss, host_avail_after, disk_used;
    double planned[ZERO_MEM_KIND_COUNT], nvme_bytes;
    double acts;
} trial_out;

/* runs in a child process of its own */
static void run_trial(const trial_in *in, trial_out *out) {
    gpu g;
    zero_error err;
    memset(out, 0, sizeof *out);
    gpu_init(&g);
    g_cu = g.cu;
    BENCH_ZERO(zero_cpu_pool_create(&g_pool, 0, NULL, &err), &err);
    model m;
    model_tensors(&m, in->L, in->H);
    acts a;
    size_t tokens = (size_t)in->batch * (size_t)in->seq;
    /* activations through plain cudaMalloc: a failure is reported, not fatal */
    {
        size_t n = tokens * (size_t)in->H * 2;
        a.tokens = tokens;
        a.bytes = acts_bytes(in->L, tokens, in->H);
        a.x.assign((size_t)in->L, NULL);
        void **all[4] = {&a.R, &a.d[0], &a.d[1], &a.y};
        for (int l = 0; l < in->L; l++)
            if (cudaMalloc(&a.x[(size_t)l], n) != cudaSuccess) {
                snprintf(out->msg, sizeof out->msg, "activations: cudaMalloc failed at layer %d", l);
                return;
            }
        for (int k = 0; k < 4; k++)
            if (cudaMalloc(all[k], n) != cudaSuccess) {
                snprintf(out->msg, sizeof out->msg, "activations: cudaMalloc failed");
                return;
            }
        int grid = bench_sm_count() * 8;
        fill_bf16<<<grid, 256, 0, g.s>>>((__nv_bfloat16 *)a.x[0], tokens * (size_t)in->H, 11, 1.0f);
        fill_bf16<<<grid, 256, 0, g.s>>>((__nv_bfloat16 *)a.R, tokens * (size_t)in->H, 12, 1.0f);
        BENCH_CUDA(cudaGetLastError());
        out->acts = (double)a.bytes;
    }
    zero_config cfg;
    char msg[512];
    if (!make_config(in->p, in->H, in->batch, 2, in->nvme_dir, &cfg, msg, sizeof msg)) {
        snprintf(out->msg, sizeof out->msg, "config: %s", msg);
        return;
    }
    zero_backend be = *zero_cuda_backend(g.cu);
    if (in->p->oo || in->p->op) zero_offload_backend(zero_cuda_backend(g.cu), g_pool, &be);
    zero_engine *e;
    double t0 = bench_now_s();
    if (zero_engine_create(&e, &cfg, m.ts.data(), in->L, &be, &err) != ZERO_OK) {
        snprintf(out->msg, sizeof out->msg, "zero_engine_create: %.560s", err.msg);
        return;
    }
    out->create_s = bench_now_s() - t0;
    zero_memory_stats ms;
    zero_memory_report(e, &ms);
    for (int k = 0; k < ZERO_MEM_KIND_COUNT; k++) out->planned[k] = (double)ms.planned_total[k];
    out->nvme_bytes = (double)ms.nvme_bytes;
    printf("#   created in %.1f s: engine plan device %.2f GiB, pinned %.2f GiB, host %.2f GiB, nvme %.2f GiB\n",
           out->create_s, out->planned[ZERO_MEM_DEVICE] / GIB, out->planned[ZERO_MEM_PINNED] / GIB,
           out->planned[ZERO_MEM_HOST] / GIB, out->nvme_bytes / GIB);
    for (int s = 0; s < in->steps && s < 8; s++) {
        zero_step_info info;
        double s0 = bench_now_s();
        for (int mb = 0; mb < 2; mb++) micro_batch(&g, e, &a, in->L, in->H, (int)tokens);
        if (zero_step(e, &info) != ZERO_OK) {
            snprintf(out->msg, sizeof out->msg, "zero_step %d: %.560s", s, zero_engine_error(e)->msg);
            return;
        }
        if (cudaStreamSynchronize(g.s) != cudaSuccess) {
            snprintf(out->msg, sizeof out->msg, "step %d: %s", s, cudaGetErrorString(cudaGetLastError()));
            return;
        }
        out->step_s[s] = bench_now_s() - s0;
        out->grad_norm = info.grad_norm;
        printf("#   step %d: %.2f s, applied %d, grad_norm %.4g\n", s + 1, out->step_s[s], info.applied, info.grad_norm);
        if (!info.applied || !(info.grad_norm > 0)) {
            snprintf(out->msg, sizeof out->msg, "step %d not applied (grad_norm %g)", s, info.grad_norm);
            return;
        }
    }
    size_t fr, tot;
    BENCH_CUDA(cudaMemGetInfo(&fr, &tot));
    double cg;
    out->gpu_used = (double)(tot - fr);
    out->gpu_total = (double)tot;
    out->host_rss = self_status_bytes("VmRSS");
    out->host_avail_after = host_available(&cg);
    out->disk_used = in->p->oo == ZERO_OFFLOAD_NVME || in->p->op == ZERO_OFFLOAD_NVME
                         ? in->disk_free0 - disk_free(in->nvme_dir)
                         : 0;
    out->ok = 1;
    /* no destroy: the process ends and its memory goes with it; the parent removes the files */
}

/* GPU facts from a fresh process: free memory once context, NCCL and cuBLAS are up */
typedef struct probe_out {
    double free0, total;
    char line[512];
} probe_out;

/* fork, run fn(arg, result) in the child, copy its result back through a pipe.
   Returns 1 with *res filled when the child delivered it; *why otherwise. */
template <typename R, typename F>
static int in_child(F fn, R *res, double timeout_s, char *why, size_t cap) {
    int fd[2];
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0) {
        snprintf(why, cap, "pipe: %s", strerror(errno));
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, cap, "fork: %s", strerror(errno));
        return 0;
    }
    if (pid == 0) {
        close(fd[0]);
        setvbuf(stdout, NULL, _IOLBF, 0);
        R r;
        memset(&r, 0, sizeof r);
        fn(&r);
        fflush(stdout);
        const char *p = (const char *)&r;
        size_t left = sizeof r;
        while (left) {
            ssize_t w = write(fd[1], p, left);
            if (w <= 0) break;
            p += w;
            left -= (size_t)w;
        }
        close(fd[1]);
        _exit(0);
    }
    close(fd[1]);
    size_t got = 0;
    char *p = (char *)res;
    double t0 = bench_now_s();
    int timed_out = 0;
    for (;;) {
        struct pollfd pf = {fd[0], POLLIN, 0};
        int pr = poll(&pf, 1, 1000);
        if (pr > 0) {
            ssize_t n = read(fd[0], p + got, sizeof(R) - got);
            if (n <= 0) break;
            got += (size_t)n;
            if (got == sizeof(R)) break;
        }
        if (bench_now_s() - t0 > timeout_s) {
            kill(pid, SIGKILL);
            timed_out = 1;
            break;
        }
    }
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (got == sizeof(R)) return 1;
    if (timed_out) snprintf(why, cap, "timed out after %.0f s (killed)", timeout_s);
    else if (WIFSIGNALED(st)) snprintf(why, cap, "the process died of signal %d%s", WTERMSIG(st),
                                       WTERMSIG(st) == SIGKILL ? " (out-of-memory kill?)" : "");
    else snprintf(why, cap, "the process exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

static void est_args(const placement *p, int H, zero_estimate_args *a) {
    memset(a, 0, sizeof *a);
    a->largest_layer = (double)H * H;
    a->gpus_per_node = 1;
    a->nodes = 1;
    a->stage = p->stage;
    a->offload_optimizer = p->oo;
    a->offload_param = p->op;
    a->zero_init = 1;
    a->compute_dtype = ZERO_DTYPE_BF16;
    a->reduce_bucket_size = (int64_t)H * H;
    a->stage3_max_live_parameters = 0;     /* the config's default, 1e9 */
    a->stage3_prefetch_bucket_size = -1;   /* 5e7 */
    a->gradient_accumulation_steps = 2;    /* the trials' (make_config's gas): fp32 accumulators */
}

typedef struct cap_row {
    const placement *p;
    double plan_params, gpu_budget, host_budget, disk_budget, acts;
    zero_memory_estimate plan_est;
    const char *limit;
    int L_plan_floor;
    std::string trials;
    int best_L;
    trial_out best;
} cap_row;


static const double FRACTIONS[] = {1.00, 0.97, 0.94, 0.90, 0.85, 0.80};

static int run_capacity(const opts *o, double t_start) {
    const int H = o->hidden;
    const double layer = (double)H * H;
    const size_t tokens = (size_t)o->cap_batch * (size_t)o->cap_seq;
    char why[512];
    int rc = 0;
    probe_out pr;
    if (!in_child(
            [&](probe_out *r) {
                gpu g;
                gpu_init(&g);
                bench_device_line("# ");
                r->free0 = (double)g.free0;
                r->total = (double)g.total;
            },
            &pr, 120, why, sizeof why)) {
        printf("# capacity: the GPU probe failed: %s\n", why);
        return 1;
    }
    if (mkdir(o->nvme_dir, 0755) != 0 && errno != EEXIST) printf("# capacity: mkdir %s: %s\n", o->nvme_dir, strerror(errno));
    double cg;
    double avail0 = host_available(&cg);
    printf("# bench_offload --capacity: layers of [%d x %d] bf16 (%.4g parameters each), %zu tokens per micro-batch "
           "(batch %d x seq %d), gradient accumulation 2, %d steps per trial\n",
           H, H, layer, tokens, o->cap_batch, o->cap_seq, o->steps);
    printf("# GPU: %.2f GiB free of %.2f GiB after the CUDA context, NCCL, cuBLAS and its %zu MiB workspace "
           "(cudaMemGetInfo in a fresh process)\n",
           pr.free0 / GIB, pr.total / GIB, BLAS_WS_BYTES >> 20);
    printf("# host: MemTotal %.2f GiB, MemAvailable %.2f GiB, cgroup memory.max room %s; disk %s: %.2f GiB free "
           "(statvfs f_bavail)\n",
           meminfo_bytes("MemTotal") / GIB, meminfo_bytes("MemAvailable") / GIB,
           cg > 0 ? (std::to_string(cg / GIB) + " GiB").c_str() : "unlimited", o->nvme_dir, disk_free(o->nvme_dir) / GIB);
    (void)avail0;
    std::vector<cap_row> rows;
    for (const std::string &pn : o->placements) {
        const placement *p = find_placement(pn.c_str());
        cap_row row;
        row.p = p;
        row.best_L = 0;
        row.limit = "-";
        memset(&row.best, 0, sizeof row.best);
        if (!p || p->dpu) {
            printf("# capacity: unknown placement '%s'\n", pn.c_str());
            rc = 1;
            continue;
        }
        const int nv = p->oo == ZERO_OFFLOAD_NVME || p->op == ZERO_OFFLOAD_NVME;
        clean_dir(o->nvme_dir);
        row.host_budget = host_available(&cg);
        row.disk_budget = nv ? disk_free(o->nvme_dir) : 0;
        zero_estimate_args ea;
        zero_error err;
        est_args(p, H, &ea);
        /* the plan: the largest P whose states fit beside the activations of its own layer count */
        int L_act = 0;
        double P = 0;
        for (int it = 0; it < 8; it++) {
            row.gpu_budget = pr.free0 - (double)acts_bytes(L_act, tokens, H);
            BENCH_ZERO(zero_estimate_max_params(&ea, row.gpu_budget, row.host_budget, nv ? row.disk_budget : 0, &P, &err),
                       &err);
            int L_next = (int)ceil(P / layer);
            if (L_next == L_act) break;
            L_act = L_next;
        }
        row.acts = (double)acts_bytes(L_act, tokens, H);
        row.plan_params = P;
        ea.params = P;
        BENCH_ZERO(zero_estimate_memory(&ea, &row.plan_est, &err), &err);
        {
            double rg = row.plan_est.gpu_total_bytes / row.gpu_budget, rh = row.plan_est.cpu_total_bytes / row.host_budget,
                   rd = nv ? row.plan_est.nvme_bytes / row.disk_budget : 0;
            row.limit = rg >= rh && rg >= rd ? "GPU" : rh >= rd ? "host" : "disk";
        }
        printf("#\n# %s (stage %d, offload_optimizer %s, offload_param %s): budgets GPU %.2f GiB (free less %.2f GiB of "
               "activations), host %.2f GiB, disk %.2f GiB -> plan %.4g parameters (%.2f layers), limited by %s; "
               "estimate there: GPU %.2f, host %.2f, NVMe %.2f GiB\n",
               p->name, p->stage, dev_name(p->oo), dev_name(p->op),
               row.gpu_budget / GIB, row.acts / GIB, row.host_budget / GIB, row.disk_budget / GIB, P, P / layer,
               row.limit, row.plan_est.gpu_total_bytes / GIB, row.plan_est.cpu_total_bytes / GIB,
               row.plan_est.nvme_bytes / GIB);
        int last_L = -1;
        for (double f : FRACTIONS) {
            int L = (int)floor(f * P / layer);
            if (L < 1 || L == last_L) continue;
            last_L = L;
            char item[700];
            zero_memory_estimate me;
            ea.params = (double)L * layer;
            BENCH_ZERO(zero_estimate_memory(&ea, &me, &err), &err);
            if (bench_now_s() - t_start > o->deadline_s) {
                snprintf(item, sizeof item, "%.2f: %d layers not run (deadline %.0f s passed); ", f, L, o->deadline_s);
                row.trials += item;
                printf("#   %s\n", item);
                break;
            }
            double avail = host_available(&cg);
            if (me.cpu_total_bytes > avail - o->host_reserve_gib * GIB) {
                snprintf(item, sizeof item,
                         "%.2f: %d layers not started (estimated host %.2f GiB leaves under %.1f GiB of %.2f GiB "
                         "available); ",
                         f, L, me.cpu_total_bytes / GIB, o->host_reserve_gib, avail / GIB);
                row.trials += item;
                printf("#   %s\n", item);
                continue;
            }
            double dfree = nv ? disk_free(o->nvme_dir) : 0;
            if (nv && me.nvme_bytes > dfree - o->disk_reserve_gib * GIB) {
                snprintf(item, sizeof item,
                         "%.2f: %d layers not started (estimated NVMe %.2f GiB leaves under %.1f GiB of %.2f GiB "
                         "free); ",
                         f, L, me.nvme_bytes / GIB, o->disk_reserve_gib, dfree / GIB);
                row.trials += item;
                printf("#   %s\n", item);
                continue;
            }
            trial_in ti;
            memset(&ti, 0, sizeof ti);
            ti.p = p;
            ti.L = L;
            ti.H = H;
            ti.batch = o->cap_batch;
            ti.seq = o->cap_seq;
            ti.steps = o->steps;
            snprintf(ti.nvme_dir, sizeof ti.nvme_dir, "%s", o->nvme_dir);
            ti.disk_free0 = nv ? disk_free(o->nvme_dir) : 0;
            printf("#   trial %.2f of the plan: %d layers = %.4g parameters (estimate: GPU %.2f, host %.2f, NVMe %.2f "
                   "GiB)\n",
                   f, L, (double)L * layer, me.gpu_total_bytes / GIB, me.cpu_total_bytes / GIB, me.nvme_bytes / GIB);
            double t0 = bench_now_s();
            trial_out to;
            int got = in_child([&](trial_out *r) { run_trial(&ti, r); }, &to, o->trial_timeout_s, why, sizeof why);
            clean_dir(o->nvme_dir);
            double dt = bench_now_s() - t0;
            if (got && to.ok) {
                snprintf(item, sizeof item, "%.2f: %d layers trained (%.0f s); ", f, L, dt);
                row.trials += item;
                row.best_L = L;
                row.best = to;
                printf("#   -> trained: %d steps, GPU used %.2f GiB of %.2f, process RSS %.2f GiB, host available "
                       "after %.2f GiB, disk used %.2f GiB (%.0f s)\n",
                       o->steps, to.gpu_used / GIB, to.gpu_total / GIB, to.host_rss / GIB, to.host_avail_after / GIB,
                       to.disk_used / GIB, dt);
                break;
            }
            snprintf(item, sizeof item, "%.2f: %d layers failed (%s); ", f, L, got ? to.msg : why);
            row.trials += item;
            printf("#   -> failed after %.0f s: %s\n", dt, got ? to.msg : why);
        }
        rows.push_back(row);
    }

    printf("#\n# capacity: plan = zero_estimate_max_params (zero's plan) over this machine's budgets; measured = the "
           "largest layer count that trained %d steps, tried at 1.00, 0.97, 0.94, 0.90, 0.85, 0.80 of the plan\n",
           o->steps);
    printf("# %-10s %6s %12s %8s %8s %8s | %12s %7s %8s %8s %8s %8s | %s\n", "placement", "limit", "plan params",
           "GPU GiB", "host GiB", "NVMe GiB", "trained", "ratio", "GPU used", "RSS", "disk", "step s", "engine plan GiB "
           "(device / pinned / host / nvme)");
    for (const cap_row &r : rows) {
        double meas = (double)r.best_L * layer;
        printf("  %-10s %6s %12.4g %8.2f %8.2f %8.2f | %12.4g %7.3f %8.2f %8.2f %8.2f %8.2f | %.2f / %.2f / %.2f / "
               "%.2f\n",
               r.p->name, r.limit, r.plan_params, r.plan_est.gpu_total_bytes / GIB, r.plan_est.cpu_total_bytes / GIB,
               r.plan_est.nvme_bytes / GIB, meas, meas / r.plan_params, r.best.gpu_used / GIB, r.best.host_rss / GIB,
               r.best.disk_used / GIB, r.best_L ? r.best.step_s[o->steps > 1 ? o->steps - 1 : 0] : 0.0,
               r.best.planned[ZERO_MEM_DEVICE] / GIB, r.best.planned[ZERO_MEM_PINNED] / GIB,
               r.best.planned[ZERO_MEM_HOST] / GIB, r.best.nvme_bytes / GIB);
    }
    for (const cap_row &r : rows) {
        double ratio = (double)r.best_L * layer / r.plan_params;
        printf("# target %s >= 90%% of the plan: %.1f%% %s; trials: %s\n", r.p->name, 100 * ratio,
               ratio >= 0.9 ? "met" : "missed", r.trials.c_str());
        if (ratio < 0.9) rc = 1;
    }
    return rc;
}

static std::vector<std::string> split(const char *s) {
    std::vector<std::string> v;
    std::string cur;
    for (const char *c = s;; c++) {
        if (*c == ',' || !*c) {
            if (!cur.empty()) v.push_back(cur);
            cur.clear();
            if (!*c) break;
        } else cur += *c;
    }
    return v;
}

static const char USAGE[] =
    "usage: bench_offload [--speed] [--capacity]\n"
    "  --speed:    [--layers 24] [--hidden 8192] [--batch 16,32,4] [--seq 2048] [-n 7] [-w 2]\n"
    "  --capacity: [--hidden 8192] [--cap-batch 1] [--cap-seq 1024] [--steps 2]\n"
    "              [--placements none,cpu,cpu+param,nvme] [--nvme-dir /tmp/zero_bench_nvme]\n"
    "              [--deadline-s 420] [--trial-timeout-s 300] [--host-reserve-gib 1.5]\n"
    "              [--disk-reserve-gib 1]\n"
    "  ranges: --layers 1 to 1e5; --hidden 8 to 65536, a multiple of 8; --batch, --cap-batch 1 to 65536;\n"
    "  --seq, --cap-seq 1 to 1048576 (batch x seq at most 2147483647 tokens); -n 1 to 1e6; -w 0 to 1e6;\n"
    "  --steps 1 to 8; --deadline-s, --trial-timeout-s 0.001 to 1e7; --host-reserve-gib,\n"
    "  --disk-reserve-gib 0 to 1e6\n";

/* batch x seq tokens fit an int (the GEMMs' dimension) */
static int check_tokens(const char *flag, int batch, int seq, const char *seq_flag) {
    if ((long long)batch * seq <= INT_MAX) return 0;
    return tool_fail("bench_offload", flag, "%d x %s %d is %lld tokens; at most %d", batch, seq_flag, seq,
                     (long long)batch * seq, INT_MAX);
}

int main(int argc, char **argv) {
    static const char *P = "bench_offload";
    opts o;
    double t_start = bench_now_s();
    o.speed = o.capacity = 0;
    o.layers = 24;
    o.hidden = 8192;
    o.seq = 2048;
    o.iters = 7;
    o.warmup = 2;
    o.cap_batch = 1;
    o.cap_seq = 1024;
    o.steps = 2;
    o.batches = {16, 32, 4};
    o.placements = split("none,cpu,cpu+param,nvme");
    snprintf(o.nvme_dir, sizeof o.nvme_dir, "/tmp/zero_bench_nvme");
    o.deadline_s = 420;
    o.trial_timeout_s = 300;
    o.host_reserve_gib = 1.5;
    o.disk_reserve_gib = 1.0;
    if (tool_help_asked(argc, argv, USAGE)) return 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--speed")) o.speed = 1;
        else if (!strcmp(a, "--capacity")) o.capacity = 1;
        else if (!strcmp(a, "--layers")) bad = bench_int(P, a, v, 1, 100000, &o.layers), i++;
        else if (!strcmp(a, "--hidden")) {
            bad = bench_int(P, a, v, 8, 65536, &o.hidden);
            if (!bad && o.hidden % 8) bad = tool_fail(P, a, "%d is not a multiple of 8", o.hidden);
            i++;
        } else if (!strcmp(a, "--batch")) {
            o.batches.clear();
            if (!v) bad = tool_fail(P, a, "missing value (batch sizes such as 16,32,4, each 1 to 65536)");
            else if (!*v) bad = tool_fail(P, a, "empty value (batch sizes such as 16,32,4, each 1 to 65536)");
            for (const char *p = v; !bad;) { /* the items between commas, each checked */
                const char *comma = strchr(p, ',');
                std::string item = comma ? std::string(p, (size_t)(comma - p)) : std::string(p);
                int b = 0;
                bad = bench_int(P, a, item.c_str(), 1, 65536, &b);
                if (bad) break;
                o.batches.push_back(b);
                if (!comma) break;
                p = comma + 1;
            }
            i++;
        } else if (!strcmp(a, "--seq")) bad = bench_int(P, a, v, 1, 1048576, &o.seq), i++;
        else if (!strcmp(a, "-n")) bad = bench_int(P, a, v, 1, 1000000, &o.iters), i++;
        else if (!strcmp(a, "-w")) bad = bench_int(P, a, v, 0, 1000000, &o.warmup), i++;
        else if (!strcmp(a, "--cap-batch")) bad = bench_int(P, a, v, 1, 65536, &o.cap_batch), i++;
        else if (!strcmp(a, "--cap-seq")) bad = bench_int(P, a, v, 1, 1048576, &o.cap_seq), i++;
        else if (!strcmp(a, "--steps")) bad = bench_int(P, a, v, 1, 8, &o.steps), i++;
        else if (!strcmp(a, "--placements")) {
            if (!v || !*v) bad = tool_fail(P, a, "%s value (placements such as none,cpu)", v ? "empty" : "missing");
            else o.placements = split(v);
            i++;
        } else if (!strcmp(a, "--nvme-dir")) {
            if (!v || !*v) bad = tool_fail(P, a, "%s value (a directory)", v ? "empty" : "missing");
            else if (strlen(v) >= sizeof o.nvme_dir)
                bad = tool_fail(P, a, "longer than %zu characters", sizeof o.nvme_dir - 1);
            else snprintf(o.nvme_dir, sizeof o.nvme_dir, "%s", v);
            i++;
        } else if (!strcmp(a, "--deadline-s")) bad = tool_num(P, a, v, 0.001, 1e7, &o.deadline_s), i++;
        else if (!strcmp(a, "--trial-timeout-s")) bad = tool_num(P, a, v, 0.001, 1e7, &o.trial_timeout_s), i++;
        else if (!strcmp(a, "--host-reserve-gib")) bad = tool_num(P, a, v, 0, 1e6, &o.host_reserve_gib), i++;
        else if (!strcmp(a, "--disk-reserve-gib")) bad = tool_num(P, a, v, 0, 1e6, &o.disk_reserve_gib), i++;
        else return tool_unknown_option("bench_offload", a, USAGE);
        if (bad) return 2;
    }
    if (!o.speed && !o.capacity) {
        fputs(USAGE, stderr);
        return 2;
    }
    for (int b : o.batches)
        if (check_tokens("--batch", b, o.seq, "--seq")) return 2;
    if (check_tokens("--cap-batch", o.cap_batch, o.cap_seq, "--cap-seq")) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = 0;
    char why[512];
    if (o.speed) {
        typedef struct speed_out {
            int rc;
        } speed_out;
        speed_out so;
        if (!in_child([&](speed_out *r) { r->rc = run_speed(&o); }, &so, 1e9, why, sizeof why)) {
            printf("# speed: %s\n", why);
            rc = 1;
        } else if (so.rc) rc = 1;
    }
    if (o.capacity && run_capacity(&o, t_start)) rc = 1;
    printf("# bench_offload: %.0f s\n", bench_now_s() - t_start);
    return rc;
}
