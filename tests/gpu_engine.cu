// gpu_engine.cu - the engine on the CUDA backend against the same engine on the
// host backend, same inputs: stages 0-3, fp32/fp16/bf16, gradient accumulation,
// unit sizes. One process per GPU (zero_cuda_launch_local forks them when no
// launcher did); every rank compares its CUDA result with a host-backend run of
// the same world size made in its own process. ZERO_TEST_QUICK=1: one small case.
// Offload on GPUs: offload_optimizer cpu / nvme (stages 1-3) and offload_param
// cpu / nvme (stage 3) through zero_offload_backend over the CUDA backend (SIMD
// CPU Adam on a thread pool, NVMe files under a temporary directory per rank),
// against the host engine without offload; with gradient accumulation the
// CPU's sum of the micro-batches bitwise the GPU's (ZERO_HOST_SUM=0) and the
// device accumulator the default picks where the GPU has room; with one
// micro-batch the chunks on the copy stream bitwise those on the comm stream.
// Partial offload (offload_optimizer.ratio 0.5) against the host engine (test_ratio).
// Lion, Adagrad, SGD, Muon and Lamb on the device against the host engine (test_optimizers).
// Hybrid sharding (world >= 2): the backend's groups_init and group_
// collectives against a double-precision reference per group, then the engine
// with mics_shard_size 1 and world / 2 against the host engine with the same.
// Run alone (GPU machine): make test-gpu T=gpu_engine
#define _POSIX_C_SOURCE 200809L // mkdtemp
#define ZERO_IMPLEMENTATION
#define ZERO_NVME_TEST_HOOKS // a full disk, injected
#include "zero.h"
#include "zero_offload.h"
#include "zero_cuda.cuh"
#include "zero_test.h"

#include <errno.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

enum { NT = 7, STEPS = 6 };
static const int64_t SIZES[NT] = {1, 37, 5, 1031, 3, 4099, 64};

static float target_value(int t, int64_t i) { return (float)(0.3 * cos(3.0 * t + 0.11 * (double)i)); }
// the data of global micro-batch gm at step s: a deterministic wobble
static float noise_value(int s, int gm, int t, int64_t i) {
    return (float)(0.05 * sin(0.7 * s + 1.3 * gm + 0.29 * t + 0.013 * (double)i));
}

// the initial weights: 0.5 sin(1 + 7 t + 0.37 i)
static zt_wave init_wave = {0.5, 1.0, 7.0, 0.37, 0};

typedef struct job {
    int stage, dtype, gas;
    int64_t bucket;
    int oo, op;      // offload_optimizer / offload_param device (ZERO_OFFLOAD_*)
    int dpu;         // offload_optimizer.delayed_param_update
    int early;       // no clipping, no bf16 overflow check: the CPU steps units during the backward
    const char *dir; // nvme_path
} job;

// make_cfg's zero_optimization.mics_shard_size (-1: flat); the hybrid cases set
// it around their CUDA and host runs
static int64_t mics_shard = -1;
// make_cfg's optimizer (Adam: the block's default) and SGD's momentum and
// nesterov; test_optimizers sets them around its CUDA and host runs
static zero_optimizer_type opt_type = ZERO_OPTIMIZER_ADAM;
static double opt_momentum = 0;
static int opt_nesterov = 0;

// make_cfg's offload_optimizer.ratio; test_ratio sets it around its CUDA runs
static double oo_ratio = 1;

static zero_config make_cfg(const job *j, int world) {
    zero_config c = zero_config_default();
    zero_error err;
    c.zero_optimization.mics_shard_size = mics_shard;
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = j->gas;
    c.zero_optimization.stage = j->stage;
    c.zero_optimization.reduce_bucket_size = j->bucket;
    c.zero_optimization.stage3_param_persistence_threshold = 4;
    c.gradient_clipping = 0.5;
    c.optimizer.weight_decay = 0.01;
    c.optimizer.lr = 1e-2;
    c.optimizer.type = opt_type;
    c.optimizer.momentum = opt_momentum;
    c.optimizer.nesterov = opt_nesterov;
    c.fp16.enabled = j->dtype == ZERO_DTYPE_FP16;
    c.fp16.initial_scale_power = 8; // no overflow with these gradients
    c.bf16.enabled = j->dtype == ZERO_DTYPE_BF16;
    c.log.level = ZERO_LOG_WARN;
    c.zero_optimization.offload_optimizer.device = (zero_offload_device)j->oo;
    c.zero_optimization.offload_param.device = (zero_offload_device)j->op;
    c.zero_optimization.offload_optimizer.delayed_param_update = j->dpu;
    c.zero_optimization.offload_optimizer.ratio = oo_ratio;
    if (j->early) {
        c.gradient_clipping = 0;
        c.bf16.check_grad_overflow = 0;
    }
    if (j->dir) {
        snprintf(c.zero_optimization.offload_optimizer.nvme_path, sizeof c.zero_optimization.offload_optimizer.nvme_path, "%s", j->dir);
        snprintf(c.zero_optimization.offload_param.nvme_path, sizeof c.zero_optimization.offload_param.nvme_path, "%s", j->dir);
    }
    if (zero_config_resolve(&c, world, &err) != ZERO_OK) fprintf(stderr, "resolve: %s\n", err.msg);
    return c;
}

static void tensors(zero_tensor *ts, char names[NT][16]) {
    memset(ts, 0, sizeof(zero_tensor) * NT);
    for (int t = 0; t < NT; t++) {
        snprintf(names[t], 16, "t%d", t);
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].group = t / 2;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
        if (t == 2) ts[t].flags = ZERO_TENSOR_NO_DECAY;
        if (t == 4) ts[t].flags = ZERO_TENSOR_FROZEN;
    }
    if (opt_type == ZERO_OPTIMIZER_MUON) { // matrices for Muon: tall t1, wide t3 (a tensor cut over units), square t6
        ts[1].ndim = 2, ts[1].shape[0] = 37, ts[1].shape[1] = 1;
        ts[3].ndim = 2, ts[3].shape[0] = 1, ts[3].shape[1] = 1031;
        ts[6].ndim = 2, ts[6].shape[0] = 8, ts[6].shape[1] = 8;
    }
}

// ---- gradients: g = scale * ((w - target) * (1 + i % 3) + noise) ----

template <typename T> __device__ float ld(const T *p, int64_t i);
template <> __device__ float ld<float>(const float *p, int64_t i) { return p[i]; }
template <> __device__ float ld<__half>(const __half *p, int64_t i) { return __half2float(p[i]); }
template <> __device__ float ld<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
template <typename T> __device__ void st(T *p, int64_t i, float v);
template <> __device__ void st<float>(float *p, int64_t i, float v) { p[i] = v; }
template <> __device__ void st<__half>(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
template <> __device__ void st<__nv_bfloat16>(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void grad_kernel(const T *w, T *g, int64_t n, int t, int s, int gm, float scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float x = ld<T>(w, i);
        float tv = (float)(0.3 * cos(3.0 * t + 0.11 * (double)i));
        float nv = (float)(0.05 * sin(0.7 * s + 1.3 * gm + 0.29 * t + 0.013 * (double)i));
        st<T>(g, i, scale * ((x - tv) * (float)(1 + i % 3) + nv));
    }
}

// One training run through engine e; gradients by the GPU kernel or on the host.
static zero_result train(zero_engine *e, const job *j, int rank, int on_gpu, cudaStream_t stream) {
    zero_result r;
    for (int s = 0; s < STEPS; s++) {
        for (int m = 0; m < j->gas; m++) {
            int gm = rank * j->gas + m;
            for (int t = NT - 1; t >= 0; t--) {
                if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
                if (t == 4) { // frozen
                    if ((r = zero_release(e, t)) != ZERO_OK) return r;
                    continue;
                }
                void *w = zero_param(e, t), *g = zero_grad(e, t);
                if (!w || !g) return zero_engine_error(e)->code;
                float scale = (float)zero_loss_scale(e);
                if (on_gpu) {
                    int blocks = (int)((SIZES[t] + 255) / 256);
                    if (j->dtype == ZERO_DTYPE_FP16)
                        grad_kernel<__half><<<blocks, 256, 0, stream>>>((const __half *)w, (__half *)g, SIZES[t], t, s, gm, scale);
                    else if (j->dtype == ZERO_DTYPE_BF16)
                        grad_kernel<__nv_bfloat16><<<blocks, 256, 0, stream>>>((const __nv_bfloat16 *)w, (__nv_bfloat16 *)g,
                                                                               SIZES[t], t, s, gm, scale);
                    else
                        grad_kernel<float><<<blocks, 256, 0, stream>>>((const float *)w, (float *)g, SIZES[t], t, s, gm, scale);
                } else {
                    zero_dtype dt = (zero_dtype)j->dtype;
                    for (int64_t i = 0; i < SIZES[t]; i++) {
                        float x = zt_load(w, dt, i);
                        zt_store(g, dt, i, scale * ((x - target_value(t, i)) * (float)(1 + i % 3) + noise_value(s, gm, t, i)));
                    }
                }
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
            }
        }
        zero_step_info info;
        if ((r = zero_step(e, &info)) != ZERO_OK) return r;
        if (!info.applied) return ZERO_ERR_STATE;
    }
    return zero_flush(e); // a no-op without delayed_param_update
}

static zero_result read_all(zero_engine *e, std::vector<float> &out) {
    out.clear();
    for (int t = 0; t < NT; t++) {
        std::vector<float> v((size_t)SIZES[t]);
        zero_result r = zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], v.data());
        if (r != ZERO_OK) return r;
        out.insert(out.end(), v.begin(), v.end());
    }
    return ZERO_OK;
}

// ---- the host reference: the same job on world host ranks ----
typedef struct host_job {
    const job *j;
    std::vector<float> result;
} host_job;

static zero_result host_rank(const zero_backend *b, void *arg) {
    host_job *H = (host_job *)arg;
    zero_config c = make_cfg(H->j, b->world);
    zero_tensor ts[NT];
    char names[NT][16];
    zero_error err;
    zero_engine *e;
    zero_result r;
    tensors(ts, names);
    if ((r = zero_engine_create(&e, &c, ts, NT, b, &err)) != ZERO_OK) return r;
    r = train(e, H->j, b->rank, 0, NULL);
    std::vector<float> mine;
    if (r == ZERO_OK) r = read_all(e, mine);
    if (r == ZERO_OK && b->rank == 0) H->result = mine;
    zero_engine_destroy(e);
    return r;
}

// allocation hooks: count what zero asks for, hand it out with the CUDA calls
static size_t hook_bytes[ZERO_MEM_KIND_COUNT];
static int hook_allocs, hook_frees;
static void *hook_alloc(void *user, zero_mem_kind kind, size_t bytes) {
    void *p = NULL;
    (void)user;
    if (kind == ZERO_MEM_DEVICE) { if (cudaMalloc(&p, bytes) != cudaSuccess) return NULL; }
    else if (kind == ZERO_MEM_PINNED) { if (cudaMallocHost(&p, bytes) != cudaSuccess) return NULL; }
    else p = malloc(bytes);
    hook_bytes[kind] += bytes;
    hook_allocs++;
    return p;
}
static void hook_free(void *user, zero_mem_kind kind, void *p) {
    (void)user;
    if (kind == ZERO_MEM_DEVICE) cudaFree(p);
    else if (kind == ZERO_MEM_PINNED) cudaFreeHost(p);
    else free(p);
    hook_frees++;
}

// The engine's buffers come from the program's hooks when it gives them, and
// what they hand out is the plan, byte for byte.
static void test_hooks(void) {
    zero_error err;
    zero_cuda *cu;
    zero_cuda_options opt = zero_cuda_options_default();
    opt.alloc = hook_alloc;
    opt.free = hook_free;
    if (zero_cuda_backend_init(&cu, &opt, &err) != ZERO_OK) {
        CHECKF(0, "backend with hooks: %s", err.msg);
        return;
    }
    job j = {3, ZERO_DTYPE_FP16, 2, 600, 0, 0, 0, 0, NULL};
    zero_config c = make_cfg(&j, zero_cuda_backend(cu)->world);
    zero_tensor ts[NT];
    char names[NT][16];
    zero_engine *e;
    tensors(ts, names);
    memset(hook_bytes, 0, sizeof hook_bytes);
    hook_allocs = hook_frees = 0;
    CHECKF(zero_engine_create(&e, &c, ts, NT, zero_cuda_backend(cu), &err) == ZERO_OK, "create: %s", err.msg);
    zero_memory_stats ms;
    zero_memory_report(e, &ms);
    for (int k = 0; k < ZERO_MEM_KIND_COUNT; k++)
        CHECKF(hook_bytes[k] == ms.planned_total[k], "kind %d: hooks gave %zu bytes, the plan says %zu", k, hook_bytes[k],
               ms.planned_total[k]);
    CHECK(train(e, &j, zero_cuda_backend(cu)->rank, 1, zero_cuda_stream(cu)) == ZERO_OK);
    zero_engine_destroy(e);
    CHECKF(hook_frees >= hook_allocs, "%d allocations, %d frees", hook_allocs, hook_frees);
    zero_cuda_backend_destroy(cu);
}

// Parameters in the program's own device memory (zero_tensor.data, one
// cudaMalloc with the tensors in reverse order, the other ranks' initial
// values off by one: create takes rank 0's) against the engine's memory
// started from the same compute-dtype weights (the master then starts from
// them too): bitwise the same master weights and parameters, stages 0-2.
// A host pointer is refused.
typedef struct rounded_init {
    const zt_wave *w;
    zero_dtype dt;
} rounded_init;
// the initial weights as the program holds them: in the compute dtype
static void init_rounded(void *user, int t, int64_t off, int64_t n, float *out) {
    const rounded_init *ri = (const rounded_init *)user;
    for (int64_t i = 0; i < n; i++) out[i] = zt_round(ri->dt, zt_wave_at(ri->w, t, off + i));
}

static void test_program_memory(zero_cuda *cu) {
    const zero_backend *be = zero_cuda_backend(cu);
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt += 2)
        for (int stage = 0; stage <= 2; stage++) {
            job j = {stage, dt, 2, 600, 0, 0, 0, 0, NULL};
            zero_config c = make_cfg(&j, be->world);
            zero_tensor ts[NT];
            char names[NT][16];
            zero_engine *e;
            zero_error err;
            size_t es = zero_dtype_size((zero_dtype)dt), total = 0, off[NT];
            rounded_init ri = {&init_wave, (zero_dtype)dt};
            tensors(ts, names);
            for (int t = 0; t < NT; t++) ts[t].init = init_rounded, ts[t].init_user = &ri;
            std::vector<float> a, b;
            std::vector<char> pa, pb;
            // the engine's memory
            zero_result r = zero_engine_create(&e, &c, ts, NT, be, &err);
            CHECKF(r == ZERO_OK, "create: %s", err.msg);
            if (r != ZERO_OK) continue;
            r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
            if (r == ZERO_OK) r = read_all(e, a);
            for (int t = 0; t < NT && r == ZERO_OK; t++) {
                std::vector<char> h((size_t)SIZES[t] * es);
                cudaMemcpy(h.data(), zero_param(e, t), h.size(), cudaMemcpyDeviceToHost);
                pa.insert(pa.end(), h.begin(), h.end());
            }
            CHECKF(r == ZERO_OK, "engine memory stage %d: %s", stage, zero_engine_error(e)->msg);
            zero_engine_destroy(e);
            // the program's memory
            for (int t = NT - 1; t >= 0; t--) off[t] = total, total += ((size_t)SIZES[t] * es + 255) / 256 * 256;
            char *mem = NULL;
            if (cudaMalloc(&mem, total) != cudaSuccess) {
                CHECK(0);
                continue;
            }
            for (int t = 0; t < NT; t++) {
                std::vector<char> h((size_t)SIZES[t] * es);
                for (int64_t i = 0; i < SIZES[t]; i++)
                    zt_store(h.data(), (zero_dtype)dt, i, zt_wave_at(&init_wave, t, i) + (be->rank > 0 ? 1.0f : 0.0f));
                cudaMemcpy(mem + off[t], h.data(), h.size(), cudaMemcpyHostToDevice);
                ts[t].data = mem + off[t];
                ts[t].init = NULL;
            }
            r = zero_engine_create(&e, &c, ts, NT, be, &err);
            CHECKF(r == ZERO_OK, "create with program memory: %s", err.msg);
            if (r == ZERO_OK) {
                r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
                if (r == ZERO_OK) r = read_all(e, b);
                CHECKF(r == ZERO_OK, "program memory stage %d: %s", stage, zero_engine_error(e)->msg);
                CHECK(zero_param(e, 3) == ts[3].data);
                zero_engine_destroy(e);
                for (int t = 0; t < NT; t++) {
                    std::vector<char> h((size_t)SIZES[t] * es);
                    cudaMemcpy(h.data(), mem + off[t], h.size(), cudaMemcpyDeviceToHost);
                    pb.insert(pb.end(), h.begin(), h.end());
                }
                CHECKF(a.size() == b.size() && !memcmp(a.data(), b.data(), a.size() * sizeof(float)),
                       "stage %d %s: master weights differ with program memory", stage, zero_dtype_name((zero_dtype)dt));
                CHECKF(pa.size() == pb.size() && !memcmp(pa.data(), pb.data(), pa.size()),
                       "stage %d %s: the program's memory differs from the engine's parameters", stage,
                       zero_dtype_name((zero_dtype)dt));
            }
            // host memory given to the CUDA backend: refused, naming the tensor
            std::vector<char> host(total);
            for (int t = 0; t < NT; t++) ts[t].data = host.data() + off[t];
            r = zero_engine_create(&e, &c, ts, NT, be, &err);
            CHECKF(r == ZERO_ERR_INVALID_ARG && strstr(err.msg, "'t0'") && strstr(err.msg, "host memory"), "host memory: %s",
                   r == ZERO_OK ? "created" : err.msg);
            if (r == ZERO_OK) zero_engine_destroy(e);
            // a tensor that runs past the end of the program's allocation: refused, naming it
            for (int t = 0; t < NT; t++) ts[t].data = mem + off[t];
            ts[3].data = mem + total - 256; // t3 has 1031 elements
            r = zero_engine_create(&e, &c, ts, NT, be, &err);
            CHECKF(r == ZERO_ERR_INVALID_ARG && strstr(err.msg, "'t3'") && strstr(err.msg, "to the end of its allocation"),
                   "too small: %s", r == ZERO_OK ? "created" : err.msg);
            if (r == ZERO_OK) zero_engine_destroy(e);
            cudaFree(mem);
        }
}

// zero_all_reduce_scalars on NCCL: values whose sums are exact in any order,
// so every op must give the same number on every rank.
static void test_scalars(zero_cuda *cu) {
    const zero_backend *be = zero_cuda_backend(cu);
    job j = {2, ZERO_DTYPE_FP16, 1, 600, 0, 0, 0, 0, NULL};
    zero_config c = make_cfg(&j, be->world);
    zero_tensor ts[NT];
    char names[NT][16];
    zero_engine *e;
    zero_error err;
    tensors(ts, names);
    if (zero_engine_create(&e, &c, ts, NT, be, &err) != ZERO_OK) {
        CHECKF(0, "create: %s", err.msg);
        return;
    }
    const zero_op ops[4] = {ZERO_OP_SUM, ZERO_OP_AVG, ZERO_OP_MAX, ZERO_OP_MIN};
    for (int o = 0; o < 4; o++) {
        double v[3] = {be->rank + 1.5, -0.25 * be->rank, ldexp(1.0, be->rank)}, want[3];
        for (int k = 0; k < 3; k++) {
            double sum = 0, mx = -1e300, mn = 1e300;
            for (int r = 0; r < be->world; r++) {
                double x = k == 0 ? r + 1.5 : k == 1 ? -0.25 * r : ldexp(1.0, r);
                sum += x, mx = fmax(mx, x), mn = fmin(mn, x);
            }
            want[k] = o == 0 ? sum : o == 1 ? sum / be->world : o == 2 ? mx : mn;
        }
        zero_result r = zero_all_reduce_scalars(e, v, 3, ops[o]);
        CHECKF(r == ZERO_OK, "op %d: %s", o, zero_engine_error(e)->msg);
        for (int k = 0; k < 3; k++) CHECKF(v[k] == want[k], "op %d value %d: %.17g want %.17g", o, k, v[k], want[k]);
    }
    double v = 1;
    CHECK(zero_all_reduce_scalars(e, &v, 0, ZERO_OP_SUM) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_all_reduce_scalars(e, &v, 1, ZERO_OP_SUM) == ZERO_OK && v == be->world);
    zero_engine_destroy(e);
}

// Lion, Adagrad, SGD (momentum 0.9 nesterov, and none), Muon (tensors 1, 3
// and 6 as matrices; its element-wise passes and the orthogonalisation by the
// backend's muon_ns) and Lamb (its two passes, the trust ratio per whole
// tensor from the sums all-reduced between them) on the device (the
// CUDA backend's fused kernel) against the host engine with the same config:
// stages 0-3 x fp32, bf16 (quick: stage 2). Bound: the engine test's own
// (max |CUDA - host| / max |w| 2e-6 fp32, 1.6e-2 bf16: the reductions and the
// gradient kernel round differently from the host, the update itself is the
// host's bits); for Lion all but 0.1% of the weights within it and every one
// within 2 lr x steps, as a last-bit difference of a gradient can flip the
// sign Lion moves by where its c is within a few ulp of 0.
static void test_optimizers(zero_cuda *cu, int quick) {
    const zero_backend *be = zero_cuda_backend(cu);
    struct {
        zero_optimizer_type type;
        double momentum;
        int nesterov;
        const char *name;
    } const opts[6] = {{ZERO_OPTIMIZER_LION, 0, 0, "Lion"},
                       {ZERO_OPTIMIZER_ADAGRAD, 0, 0, "Adagrad"},
                       {ZERO_OPTIMIZER_SGD, 0.9, 1, "SGD momentum 0.9 nesterov"},
                       {ZERO_OPTIMIZER_SGD, 0, 0, "SGD"},
                       {ZERO_OPTIMIZER_MUON, 0.95, 1, "Muon"},
                       {ZERO_OPTIMIZER_LAMB, 0, 0, "Lamb"}};
    zero_error err;
    double worst = 0;
    int runs = 0;
    for (int o = 0; o < 6; o++)
        for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
            for (int stage = 0; stage <= 3; stage++) {
                if (dt == ZERO_DTYPE_FP16 || (quick && stage != 2)) continue;
                opt_type = opts[o].type, opt_momentum = opts[o].momentum, opt_nesterov = opts[o].nesterov;
                job j = {stage, dt, 2, 600, 0, 0, 0, 0, NULL};
                zero_config c = make_cfg(&j, be->world);
                zero_tensor ts[NT];
                char names[NT][16];
                zero_engine *e;
                std::vector<float> got;
                host_job H;
                tensors(ts, names);
                zero_result r = zero_engine_create(&e, &c, ts, NT, be, &err);
                CHECKF(r == ZERO_OK, "%s create stage %d: %s", opts[o].name, stage, err.msg);
                if (r == ZERO_OK) {
                    r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
                    if (r == ZERO_OK) r = read_all(e, got);
                    CHECKF(r == ZERO_OK, "%s stage %d %s: %s", opts[o].name, stage, zero_dtype_name((zero_dtype)dt),
                           zero_engine_error(e)->msg);
                    zero_engine_destroy(e);
                }
                H.j = &j;
                if (r == ZERO_OK) {
                    r = zero_host_run(be->world, host_rank, &H, &err);
                    CHECKF(r == ZERO_OK, "%s host run: %s", opts[o].name, err.msg);
                }
                opt_type = ZERO_OPTIMIZER_ADAM, opt_momentum = 0, opt_nesterov = 0;
                if (r != ZERO_OK) continue;
                double maxw = 0, maxd = 0, tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : 1.6e-2, lion_step = 2 * c.optimizer.lr * STEPS;
                size_t beyond = 0;
                for (size_t i = 0; i < got.size(); i++) maxw = fmax(maxw, fabs((double)H.result[i]));
                for (size_t i = 0; i < got.size(); i++) {
                    const double d = fabs((double)got[i] - (double)H.result[i]);
                    if (!(d <= tol * maxw)) beyond++;
                    else maxd = fmax(maxd, d);
                    if (opts[o].type == ZERO_OPTIMIZER_LION && !(d <= lion_step)) beyond = got.size();
                }
                const size_t allowed = opts[o].type == ZERO_OPTIMIZER_LION ? got.size() / 1000 : 0;
                worst = fmax(worst, maxd / maxw);
                runs++;
                CHECKF(beyond <= allowed && got.size() == H.result.size(),
                       "%s stage %d %s world %d: %zu weights beyond %.3g of the host engine's (allowed %zu; max diff "
                       "of the others %.3g, max|w| %.3g)",
                       opts[o].name, stage, zero_dtype_name((zero_dtype)dt), be->world, beyond, tol * maxw, allowed, maxd,
                       maxw);
            }
    if (be->rank == 0)
        printf("optimizers on the device (Lion, Adagrad, SGD, Muon, Lamb): %d runs against the host engine, worst difference / "
               "max|w| %.3g\n",
               runs, worst);
}

// Partial offload (offload_optimizer.ratio 0.5, stage 3, "cpu"): the first half
// of the units with master, m, v and their accumulator in device memory and the
// CUDA Adam, the rest offloaded to the SIMD CPU Adam; with and without
// offload_param "cpu". Against the host engine without offload, the offload
// tolerance; the device holds master and moments, 12 bytes per own element of
// its units at most.
static void test_ratio(zero_cuda *cu, int quick) {
    const zero_backend *base = zero_cuda_backend(cu);
    zero_cpu_pool *pool = NULL;
    zero_backend ob;
    zero_error err;
    int runs = 0;
    double worst = 0;
    CHECK(zero_cpu_pool_create(&pool, 4, NULL, &err) == ZERO_OK);
    zero_offload_backend(base, pool, &ob);
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (int gas = 1; gas <= 2; gas++)
            for (int op = 0; op <= 1; op++) {
                if (dt == ZERO_DTYPE_FP16 || (quick && (dt != ZERO_DTYPE_BF16 || gas != 2))) continue;
                job ref = {3, dt, gas, 600, 0, 0, 0, 0, NULL}, j = {3, dt, gas, 600, ZERO_OFFLOAD_CPU, op, 0, 0, NULL};
                host_job H;
                H.j = &ref;
                zero_result r = zero_host_run(base->world, host_rank, &H, &err);
                CHECKF(r == ZERO_OK, "ratio host run: %s", err.msg);
                if (r != ZERO_OK) continue;
                oo_ratio = 0.5;
                zero_config c = make_cfg(&j, base->world);
                oo_ratio = 1;
                zero_tensor ts[NT];
                char names[NT][16];
                zero_engine *e;
                zero_memory_stats ms;
                tensors(ts, names);
                r = zero_engine_create(&e, &c, ts, NT, &ob, &err);
                CHECKF(r == ZERO_OK, "ratio create: %s", err.msg);
                if (r != ZERO_OK) continue;
                zero_memory_report(e, &ms);
                CHECKF(ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] > 0 && ms.planned[ZERO_MEM_MASTER][ZERO_MEM_DEVICE] > 0 &&
                           ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_PINNED] > 0,
                       "ratio 0.5: master and moments on the device %zu + %zu bytes, host %zu",
                       ms.planned[ZERO_MEM_MASTER][ZERO_MEM_DEVICE], ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE],
                       ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_PINNED]);
                r = train(e, &j, base->rank, 1, zero_cuda_stream(cu));
                std::vector<float> got;
                if (r == ZERO_OK) r = read_all(e, got);
                CHECKF(r == ZERO_OK, "ratio %s gas %d offload_param %d: %s", zero_dtype_name((zero_dtype)dt), gas, op,
                       zero_engine_error(e)->msg);
                zero_engine_destroy(e);
                if (r != ZERO_OK) continue;
                double maxw = 0, maxd = 0, tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : 1.6e-2;
                for (size_t i = 0; i < got.size(); i++) {
                    maxw = fmax(maxw, fabs((double)H.result[i]));
                    maxd = fmax(maxd, fabs((double)got[i] - (double)H.result[i]));
                }
                worst = fmax(worst, maxd / maxw);
                runs++;
                CHECKF(maxd <= tol * maxw && got.size() == H.result.size(),
                       "ratio 0.5 %s gas %d offload_param %d world %d: vs host max diff %.3g (max|w| %.3g, allowed %.3g)",
                       zero_dtype_name((zero_dtype)dt), gas, op, base->world, maxd, maxw, tol * maxw);
            }
    zero_cpu_pool_destroy(pool);
    if (base->rank == 0)
        printf("offload_optimizer.ratio 0.5 on the GPU: %d runs against the host engine, worst difference / max|w| %.3g\n",
               runs, worst);
}

// One run of job j through the offload backend ob (the environment set by the
// caller, read at create): its weights into got, its device accumulation bytes
// into *acc_dev (may be NULL); what failed, in the CHECK's words with `what`.
static zero_result offload_run(zero_cuda *cu, const zero_backend *ob, job *j, const char *what, std::vector<float> &got,
                               size_t *acc_dev) {
    const zero_backend *base = zero_cuda_backend(cu);
    zero_config c = make_cfg(j, base->world);
    zero_tensor ts[NT];
    char names[NT][16];
    zero_engine *e;
    zero_error err;
    tensors(ts, names);
    zero_result r = zero_engine_create(&e, &c, ts, NT, ob, &err);
    CHECKF(r == ZERO_OK, "%s create: %s", what, err.msg);
    if (r != ZERO_OK) return r;
    if (acc_dev) {
        zero_memory_stats ms;
        zero_memory_report(e, &ms);
        *acc_dev = ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE];
    }
    r = train(e, j, base->rank, 1, zero_cuda_stream(cu));
    if (r == ZERO_OK) r = read_all(e, got);
    CHECKF(r == ZERO_OK, "%s: %s", what, zero_engine_error(e)->msg);
    zero_engine_destroy(e);
    return r;
}

static void test_copy_out(zero_cuda *cu, const zero_backend *ob); // (below: its runs share this test's backend)

// Optimizer offload with gradient accumulation: the micro-batches before the
// last are added on the CPU (zero_offload_backend's cpu_convert over the pool)
// from the compute-dtype chunks the GPU sends; ZERO_HOST_SUM=0 adds each on the
// GPU and sends the fp32 sum back and forth (both with ZERO_GRAD_ACC=host); the
// default on a GPU with room keeps an fp32 accumulator on the device (the memory
// report shows it) and sends the sum once; ZERO_COPY_STREAM=0 sends the CPU's
// chunks on the communication stream instead of the copy stream. All four must
// give the same bits.
static void test_host_sum(zero_cuda *cu) {
    const zero_backend *base = zero_cuda_backend(cu);
    zero_cpu_pool *pool = NULL;
    zero_backend ob;
    zero_error err;
    int runs = 0;
    CHECK(zero_cpu_pool_create(&pool, 4, NULL, &err) == ZERO_OK);
    zero_offload_backend(base, pool, &ob);
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (int stage = 2; stage <= 3; stage++)
            for (int op = 0; op <= (stage == 3 ? 1 : 0); op++) {
                std::vector<float> got[4];
                size_t acc_dev[4] = {0, 0, 0, 0};
                for (int v = 0; v < 4; v++) {
                    job j = {stage, dt, 3, 600, ZERO_OFFLOAD_CPU, op, 0, 0, NULL};
                    char what[96];
                    snprintf(what, sizeof what, "host sum stage %d %s variant %d", stage, zero_dtype_name((zero_dtype)dt), v);
                    if (v != 2) setenv("ZERO_GRAD_ACC", "host", 1);
                    if (v == 1) setenv("ZERO_HOST_SUM", "0", 1);
                    if (v == 3) setenv("ZERO_COPY_STREAM", "0", 1);
                    offload_run(cu, &ob, &j, what, got[v], &acc_dev[v]);
                    unsetenv("ZERO_COPY_STREAM");
                    unsetenv("ZERO_HOST_SUM");
                    unsetenv("ZERO_GRAD_ACC");
                }
                for (int v = 1; v < 4; v++)
                    CHECKF(!got[0].empty() && got[0].size() == got[v].size() &&
                               !memcmp(got[0].data(), got[v].data(), got[0].size() * sizeof(float)),
                           "stage %d %s gas 3 offload_param %d: the CPU's sum of the micro-batches differs from the GPU's "
                           "(%s)", stage, zero_dtype_name((zero_dtype)dt), op,
                           v == 1 ? "ZERO_HOST_SUM=0" : v == 2 ? "the device accumulator" : "ZERO_COPY_STREAM=0");
                /* the default found room: the whole owned accumulator on the device, not one chunk of staging */
                CHECKF(acc_dev[2] > acc_dev[0] && acc_dev[0] == acc_dev[1] && acc_dev[0] == acc_dev[3],
                       "stage %d: device accumulation bytes %zu (default) / %zu (host)", stage, acc_dev[2], acc_dev[0]);
                runs++;
            }
    printf("optimizer offload, gradient accumulation 3: %d runs add the micro-batches on the CPU, bitwise the GPU's sum "
           "(ZERO_HOST_SUM=0), the device accumulator's (the default with room) and the chunks on the communication "
           "stream's (ZERO_COPY_STREAM=0)\n", runs);
    test_copy_out(cu, &ob);
    zero_cpu_pool_destroy(pool);
}

// Optimizer offload with one micro-batch: the reduced chunks the CPU's Adam reads
// cross on the copy stream beside the comm stream's fetches (the default), or on
// the comm stream (ZERO_COPY_STREAM=0); stages 2-3, with and without
// offload_param, with clipping (the CPU's Adam in zero_step, or with the
// parameters offloaded beside the next forward) and without (stage 2: the early
// CPU step, its thread waiting on each chunk's event). Same bits.
// (test_host_sum's offload backend)
static void test_copy_out(zero_cuda *cu, const zero_backend *ob) {
    int runs = 0;
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (int stage = 2; stage <= 3; stage++)
            for (int op = 0; op <= (stage == 3 ? 1 : 0); op++)
                for (int early = 0; early <= (stage == 2 ? 1 : 0); early++) {
                    std::vector<float> got[2];
                    for (int v = 0; v < 2; v++) {
                        job j = {stage, dt, 1, 600, ZERO_OFFLOAD_CPU, op, 0, early, NULL};
                        char what[96];
                        snprintf(what, sizeof what, "copy stream stage %d %s variant %d", stage, zero_dtype_name((zero_dtype)dt), v);
                        if (v == 1) setenv("ZERO_COPY_STREAM", "0", 1);
                        offload_run(cu, ob, &j, what, got[v], NULL);
                        unsetenv("ZERO_COPY_STREAM");
                    }
                    CHECKF(!got[0].empty() && got[0].size() == got[1].size() &&
                               !memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(float)),
                           "stage %d %s gas 1 offload_param %d early %d: the chunks on the copy stream give other weights than "
                           "on the comm stream (ZERO_COPY_STREAM=0)", stage, zero_dtype_name((zero_dtype)dt), op, early);
                    runs++;
                }
    printf("optimizer offload, one micro-batch: %d runs with the reduced chunks on the copy stream, bitwise those on the "
           "communication stream (ZERO_COPY_STREAM=0)\n", runs);
}

// CUDA + offload (SIMD CPU Adam, NVMe files) against the host engine without it.
// Tolerance: the CUDA-vs-host one above; the SIMD CPU Adam rounds like the GPU's
// Adam to within a few fp32 ulp (fused multiply-adds in the same order).
static void test_offload(zero_cuda *cu, int quick) {
    const zero_backend *base = zero_cuda_backend(cu);
    zero_cpu_pool *pool = NULL;
    zero_backend ob;
    zero_error err;
    char dir[] = "/tmp/zero_gpu_offload_XXXXXX";
    double worst[4] = {0, 0, 0, 0};
    int runs = 0;
    if (!mkdtemp(dir)) {
        CHECKF(0, "mkdtemp %s", dir);
        return;
    }
    CHECK(zero_cpu_pool_create(&pool, 4, NULL, &err) == ZERO_OK);
    zero_offload_backend(base, pool, &ob);
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (int stage = 1; stage <= 3; stage++)
            for (int gas = 1; gas <= 2; gas++) {
                if (quick && (dt != ZERO_DTYPE_BF16 || gas != 2)) continue;
                job ref = {stage, dt, gas, 600, 0, 0, 0, 0, NULL};
                host_job H;
                H.j = &ref;
                zero_result r = zero_host_run(base->world, host_rank, &H, &err);
                CHECKF(r == ZERO_OK, "host run: %s", err.msg);
                if (r != ZERO_OK) continue;
                for (int oo = 0; oo <= 2; oo++)
                    for (int op = 0; op <= (stage == 3 ? 2 : 0); op++) {
                        if (!oo && !op) continue;
                        job j = {stage, dt, gas, 600, oo, op, 0, 0, dir};
                        zero_config c = make_cfg(&j, base->world);
                        zero_tensor ts[NT];
                        char names[NT][16];
                        zero_engine *e;
                        tensors(ts, names);
                        r = zero_engine_create(&e, &c, ts, NT, &ob, &err);
                        CHECKF(r == ZERO_OK, "offload %d/%d create stage %d: %s", oo, op, stage, err.msg);
                        if (r != ZERO_OK) continue;
                        r = train(e, &j, base->rank, 1, zero_cuda_stream(cu));
                        CHECKF(r == ZERO_OK, "offload %d/%d train stage %d %s gas %d: %s", oo, op, stage,
                               zero_dtype_name((zero_dtype)dt), gas, zero_engine_error(e)->msg);
                        std::vector<float> got;
                        if (r == ZERO_OK) r = read_all(e, got);
                        CHECKF(r == ZERO_OK, "offload %d/%d read: %s", oo, op, zero_engine_error(e)->msg);
                        zero_engine_destroy(e);
                        if (r != ZERO_OK) continue;
                        double maxw = 0, maxd = 0;
                        for (size_t i = 0; i < got.size(); i++) {
                            maxw = fmax(maxw, fabs((double)H.result[i]));
                            maxd = fmax(maxd, fabs((double)got[i] - (double)H.result[i]));
                        }
                        double tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : dt == ZERO_DTYPE_FP16 ? 2e-3 : 1.6e-2;
                        worst[dt] = fmax(worst[dt], maxd / maxw);
                        runs++;
                        CHECKF(maxd <= tol * maxw,
                               "offload_optimizer %d offload_param %d stage %d %s gas %d world %d: vs host max diff %.3g "
                               "(max|w| %.3g, allowed %.3g)",
                               oo, op, stage, zero_dtype_name((zero_dtype)dt), gas, base->world, maxd, maxw, tol * maxw);
                    }
            }
    // the early CPU step (no clipping, no overflow check): CUDA + CPU Adam during the backward
    // against the host engine without offload, same config
    double worst_early[4] = {0, 0, 0, 0};
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (int stage = 1; stage <= 3; stage++) {
            if (dt == ZERO_DTYPE_FP16 || (quick && stage != 2)) continue;
            job ref = {stage, dt, 2, 600, 0, 0, 0, 1, NULL}, j = {stage, dt, 2, 600, ZERO_OFFLOAD_CPU, 0, 0, 1, NULL};
            host_job H;
            H.j = &ref;
            zero_result r = zero_host_run(base->world, host_rank, &H, &err);
            CHECKF(r == ZERO_OK, "host early run: %s", err.msg);
            if (r != ZERO_OK) continue;
            zero_config c = make_cfg(&j, base->world);
            zero_tensor ts[NT];
            char names[NT][16];
            zero_engine *e;
            tensors(ts, names);
            r = zero_engine_create(&e, &c, ts, NT, &ob, &err);
            CHECKF(r == ZERO_OK, "early create stage %d: %s", stage, err.msg);
            if (r != ZERO_OK) continue;
            r = train(e, &j, base->rank, 1, zero_cuda_stream(cu));
            std::vector<float> got;
            if (r == ZERO_OK) r = read_all(e, got);
            CHECKF(r == ZERO_OK, "early stage %d %s: %s", stage, zero_dtype_name((zero_dtype)dt), zero_engine_error(e)->msg);
            zero_engine_destroy(e);
            if (r != ZERO_OK) continue;
            double maxw = 0, maxd = 0;
            for (size_t i = 0; i < got.size(); i++) {
                maxw = fmax(maxw, fabs((double)H.result[i]));
                maxd = fmax(maxd, fabs((double)got[i] - (double)H.result[i]));
            }
            double tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : 1.6e-2;
            worst_early[dt] = fmax(worst_early[dt], maxd / maxw);
            runs++;
            CHECKF(maxd <= tol * maxw, "early stage %d %s world %d: vs host max diff %.3g (max|w| %.3g, allowed %.3g)", stage,
                   zero_dtype_name((zero_dtype)dt), base->world, maxd, maxw, tol * maxw);
        }
    if (base->rank == 0)
        printf("gpu_engine early CPU step: worst difference to the host engine without offload / max|w|: fp32 %.3g, "
               "bf16 %.3g\n", worst_early[ZERO_DTYPE_FP32], worst_early[ZERO_DTYPE_BF16]);
    // delayed_param_update: CUDA + CPU Adam against the host engine with the same delay
    double worst_dpu[4] = {0, 0, 0, 0};
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (int stage = 1; stage <= 3; stage++) {
            if (quick && (dt != ZERO_DTYPE_BF16 || stage != 2)) continue;
            job j = {stage, dt, 2, 600, ZERO_OFFLOAD_CPU, 0, 1, 0, NULL};
            host_job H;
            H.j = &j;
            zero_result r = zero_host_run(base->world, host_rank, &H, &err);
            CHECKF(r == ZERO_OK, "host dpu run: %s", err.msg);
            if (r != ZERO_OK) continue;
            zero_config c = make_cfg(&j, base->world);
            zero_tensor ts[NT];
            char names[NT][16];
            zero_engine *e;
            tensors(ts, names);
            r = zero_engine_create(&e, &c, ts, NT, &ob, &err);
            CHECKF(r == ZERO_OK, "dpu create stage %d: %s", stage, err.msg);
            if (r != ZERO_OK) continue;
            r = train(e, &j, base->rank, 1, zero_cuda_stream(cu));
            std::vector<float> got;
            if (r == ZERO_OK) r = read_all(e, got);
            CHECKF(r == ZERO_OK, "dpu stage %d %s: %s", stage, zero_dtype_name((zero_dtype)dt), zero_engine_error(e)->msg);
            zero_engine_destroy(e);
            if (r != ZERO_OK) continue;
            double maxw = 0, maxd = 0;
            for (size_t i = 0; i < got.size(); i++) {
                maxw = fmax(maxw, fabs((double)H.result[i]));
                maxd = fmax(maxd, fabs((double)got[i] - (double)H.result[i]));
            }
            double tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : dt == ZERO_DTYPE_FP16 ? 2e-3 : 1.6e-2;
            worst_dpu[dt] = fmax(worst_dpu[dt], maxd / maxw);
            runs++;
            CHECKF(maxd <= tol * maxw, "dpu stage %d %s world %d: vs host max diff %.3g (max|w| %.3g, allowed %.3g)", stage,
                   zero_dtype_name((zero_dtype)dt), base->world, maxd, maxw, tol * maxw);
        }
    if (base->rank == 0)
        printf("gpu_engine delayed_param_update: worst difference to the host engine with the same delay / max|w|: "
               "fp32 %.3g, fp16 %.3g, bf16 %.3g\n",
               worst_dpu[ZERO_DTYPE_FP32], worst_dpu[ZERO_DTYPE_FP16], worst_dpu[ZERO_DTYPE_BF16]);
    // NVMe errors on every rank: a missing directory at create, a full disk in the step
    {
        char missing[200];
        snprintf(missing, sizeof missing, "%s/no_such_dir", dir);
        job j = {2, ZERO_DTYPE_BF16, 1, 600, ZERO_OFFLOAD_NVME, 0, 0, 0, missing};
        zero_config c = make_cfg(&j, base->world);
        zero_tensor ts[NT];
        char names[NT][16];
        zero_engine *e = NULL;
        tensors(ts, names);
        zero_result r = zero_engine_create(&e, &c, ts, NT, &ob, &err);
        CHECKF(r == ZERO_ERR_IO, "missing nvme_path: %d %s", (int)r, err.msg);
        CHECK_STR_CONTAINS(err.msg, "no_such_dir");
        if (e) zero_engine_destroy(e);
        j.dir = dir;
        c = make_cfg(&j, base->world);
        r = zero_engine_create(&e, &c, ts, NT, &ob, &err);
        CHECKF(r == ZERO_OK, "nvme create: %s", err.msg);
        if (r == ZERO_OK) {
            zero__nvme_hook_einval = 3; // every write: ENOSPC
            r = train(e, &j, base->rank, 1, zero_cuda_stream(cu));
            zero__nvme_hook_einval = 0;
            CHECKF(r == ZERO_ERR_IO, "full disk: %d %s", (int)r, zero_engine_error(e)->msg);
            CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "disk full");
            CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "zero_optim.rank");
            if (base->rank == 0) printf("gpu_engine nvme full disk: %s\n", zero_engine_error(e)->msg);
            zero_engine_destroy(e);
        }
    }
    zero_cpu_pool_destroy(pool);
    CHECKF(rmdir(dir) == 0, "rmdir %s: files left behind", dir);
    if (base->rank == 0)
        printf("gpu_engine offload: world %d, %d runs (CUDA + CPU Adam / NVMe); worst difference to the host engine without "
               "offload / max|w|: fp32 %.3g, fp16 %.3g, bf16 %.3g\n",
               base->world, runs, worst[ZERO_DTYPE_FP32], worst[ZERO_DTYPE_FP16], worst[ZERO_DTYPE_BF16]);
}

// ---- hybrid sharding ----

// The ranks of rank's group g for shard size G, in world order; *me: rank's place.
static std::vector<int> group_members(zero_group g, int rank, int world, int G, int *me) {
    std::vector<int> m;
    if (g == ZERO_GROUP_SHARD)
        for (int k = 0; k < G; k++) m.push_back(rank / G * G + k);
    else if (g == ZERO_GROUP_REPLICA)
        for (int k = 0; k < world / G; k++) m.push_back(rank % G + k * G);
    else
        for (int k = 0; k < world; k++) m.push_back(k);
    for (size_t k = 0; k < m.size(); k++)
        if (m[k] == rank) *me = (int)k;
    return m;
}

// rank's input element i: a multiple of 1/4 in [-4, 4], so sums over up to 8
// ranks are exact in bf16 and fp32; distinct across ranks, so a wrong member
// set or order shows
static double group_input(int rank, int64_t i) { return (double)((rank * 7 + i * 3) % 33 - 16) / 4.0; }

// groups_init and the group_ collectives on the CUDA backend, each result
// read back and compared with a double-precision sum over the group's ranks.
static void test_groups(zero_cuda *cu) {
    const zero_backend *be = zero_cuda_backend(cu);
    const int world = be->world, rank = be->rank;
    const int64_t count = 1031;
    zero_error err;
    if (world < 2) {
        if (rank == 0) printf("gpu_engine groups: skipped (one GPU; hybrid sharding needs world >= 2)\n");
        return;
    }
    CHECKF(be->groups_init && be->group_reduce_scatter && be->group_all_gather && be->group_all_reduce,
           "the CUDA backend lacks the group members");
    if (!be->groups_init) return;
    // before groups_init, and G that cannot be: clear errors, no collective
    char *dummy = NULL;
    CHECK(cudaMalloc(&dummy, 64) == cudaSuccess);
    zero_result r = be->group_all_reduce(be->ctx, ZERO_GROUP_SHARD, dummy, dummy, 4, ZERO_DTYPE_FP32, ZERO_OP_SUM,
                                         ZERO_STREAM_COMM, &err);
    CHECKF(r == ZERO_ERR_INVALID_ARG && strstr(err.msg, "groups_init"), "group collective before groups_init: %d %s", (int)r,
           r == ZERO_OK ? "" : err.msg);
    CHECK(be->groups_init(be->ctx, 0, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(be->groups_init(be->ctx, world + 1, &err) == ZERO_ERR_INVALID_ARG);
    if (world >= 3) {
        r = be->groups_init(be->ctx, world - 1, &err);
        CHECKF(r == ZERO_ERR_INVALID_ARG && strstr(err.msg, "divide"), "G %d of world %d: %d %s", world - 1, world, (int)r,
               r == ZERO_OK ? "" : err.msg);
    }
    cudaFree(dummy);
    std::vector<int> Gs = {1, world};
    if (world >= 4 && world % 2 == 0) Gs.push_back(world / 2);
    int checks = 0;
    double worst[4] = {0, 0, 0, 0};
    for (int G : Gs) {
        r = be->groups_init(be->ctx, G, &err);
        CHECKF(r == ZERO_OK, "groups_init(%d): %s", G, err.msg);
        if (r != ZERO_OK) return; // a failed init leaves the backend failed
        CHECKF(be->groups_init(be->ctx, G, &err) == ZERO_OK, "groups_init(%d) again: %s", G, err.msg);
        for (int gi = ZERO_GROUP_WORLD; gi < ZERO_GROUP_COUNT; gi++)
            for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt += 2)
                for (int avg = 0; avg <= 1; avg++)
                    for (int inplace = 0; inplace <= 1; inplace++)
                        for (int kind = 0; kind < 3; kind++) { // reduce_scatter, all_gather, all_reduce
                            zero_group g = (zero_group)gi;
                            zero_op op = avg ? ZERO_OP_AVG : ZERO_OP_SUM;
                            if (kind == 1 && avg) continue; // all_gather has no op
                            int me = 0;
                            std::vector<int> mem = group_members(g, rank, world, G, &me);
                            const int64_t n = (int64_t)mem.size();
                            const size_t es = zero_dtype_size((zero_dtype)dt);
                            const int64_t nin = kind == 0 ? n * count : count, nout = kind == 1 ? n * count : count;
                            std::vector<double> want((size_t)nout);
                            for (int64_t i = 0; i < nout; i++) {
                                double sum = 0;
                                if (kind == 1) {
                                    want[(size_t)i] = group_input(mem[(size_t)(i / count)], i % count);
                                    continue;
                                }
                                int64_t src = kind == 0 ? me * count + i : i;
                                for (int m : mem) sum += group_input(m, src);
                                want[(size_t)i] = avg ? sum / (double)n : sum;
                            }
                            std::vector<char> hin((size_t)nin * es), hout((size_t)nout * es);
                            for (int64_t i = 0; i < nin; i++) zt_store(hin.data(), (zero_dtype)dt, i, (float)group_input(rank, i));
                            // buffers: in place per the contract (reduce_scatter's recv inside
                            // send, all_gather's send inside recv, all_reduce send == recv)
                            char *dsend = NULL, *drecv = NULL;
                            size_t big = (size_t)(kind == 2 ? nin : n * count) * es;
                            if (cudaMalloc(&dsend, big) != cudaSuccess || cudaMalloc(&drecv, big) != cudaSuccess) {
                                CHECK(0);
                                return;
                            }
                            char *in = dsend, *out = drecv;
                            if (inplace) {
                                if (kind == 0) out = dsend + (size_t)me * count * es;
                                else if (kind == 1) in = drecv + (size_t)me * count * es, out = drecv;
                                else out = dsend;
                            }
                            cudaMemcpy(in, hin.data(), hin.size(), cudaMemcpyHostToDevice);
                            if (kind == 0)
                                r = be->group_reduce_scatter(be->ctx, g, in, out, (size_t)count, (zero_dtype)dt, op, ZERO_STREAM_COMM,
                                                             &err);
                            else if (kind == 1)
                                r = be->group_all_gather(be->ctx, g, in, out, (size_t)count, (zero_dtype)dt, ZERO_STREAM_COMM, &err);
                            else
                                r = be->group_all_reduce(be->ctx, g, in, out, (size_t)count, (zero_dtype)dt, op, ZERO_STREAM_COMM,
                                                         &err);
                            if (r == ZERO_OK) r = be->sync(be->ctx, ZERO_STREAM_COMM, &err);
                            static const char *kinds[3] = {"group_reduce_scatter", "group_all_gather", "group_all_reduce"};
                            CHECKF(r == ZERO_OK, "G %d group %d %s %s: %s", G, gi, kinds[kind], zero_dtype_name((zero_dtype)dt),
                                   err.msg);
                            if (r == ZERO_OK) {
                                cudaMemcpy(hout.data(), out, hout.size(), cudaMemcpyDeviceToHost);
                                double maxw = 0, maxd = 0;
                                for (int64_t i = 0; i < nout; i++) {
                                    maxw = fmax(maxw, fabs(want[(size_t)i]));
                                    maxd = fmax(maxd, fabs((double)zt_load(hout.data(), (zero_dtype)dt, i) - want[(size_t)i]));
                                }
                                // sums of these inputs are exact; AVG over a group of 3 or 6 rounds
                                double tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : 1.6e-2;
                                worst[dt] = fmax(worst[dt], maxd / maxw);
                                checks++;
                                CHECKF(maxd <= tol * maxw,
                                       "rank %d G %d %s %s %s %s%s: max diff %.3g to the reference (max %.3g, allowed %.3g)",
                                       rank, G, g == ZERO_GROUP_SHARD ? "shard" : g == ZERO_GROUP_REPLICA ? "replica" : "world",
                                       kinds[kind], zero_dtype_name((zero_dtype)dt), avg ? "AVG" : "SUM",
                                       inplace ? " in place" : "", maxd, maxw, tol * maxw);
                            }
                            cudaFree(dsend);
                            cudaFree(drecv);
                        }
    }
    if (rank == 0)
        printf("gpu_engine groups: world %d, shard sizes 1, %d%s: %d collectives checked; worst difference / max: fp32 %.3g, "
               "bf16 %.3g\n",
               world, world, world >= 4 && world % 2 == 0 ? " and world / 2" : "", checks, worst[ZERO_DTYPE_FP32],
               worst[ZERO_DTYPE_BF16]);
}

// counting wrappers over the CUDA backend: the hybrid engine must make the
// groups and use them
static const zero_backend *count_base;
static int count_groups_init, count_group_calls;
static zero_result count_groups_init_fn(void *ctx, int G, zero_error *err) {
    count_groups_init++;
    return count_base->groups_init(ctx, G, err);
}
static zero_result count_rs(void *ctx, zero_group g, const void *send, void *recv, size_t n, zero_dtype dt, zero_op op,
                            zero_stream_id s, zero_error *err) {
    count_group_calls++;
    return count_base->group_reduce_scatter(ctx, g, send, recv, n, dt, op, s, err);
}
static zero_result count_ag(void *ctx, zero_group g, const void *send, void *recv, size_t n, zero_dtype dt, zero_stream_id s,
                            zero_error *err) {
    count_group_calls++;
    return count_base->group_all_gather(ctx, g, send, recv, n, dt, s, err);
}
static zero_result count_ar(void *ctx, zero_group g, const void *send, void *recv, size_t n, zero_dtype dt, zero_op op,
                            zero_stream_id s, zero_error *err) {
    count_group_calls++;
    return count_base->group_all_reduce(ctx, g, send, recv, n, dt, op, s, err);
}

// The engine with mics_shard_size G (1, and world / 2 when world >= 4 is
// even) on the CUDA backend against the host engine with the same G, stages
// 1-3, fp32 and bf16, gas 1 and 2; the tolerances of the flat comparison.
static void test_hybrid(zero_cuda *cu, int quick) {
    const zero_backend *be = zero_cuda_backend(cu);
    const int world = be->world;
    zero_error err;
    if (world < 2) {
        if (be->rank == 0) printf("gpu_engine hybrid: skipped (one GPU; mics_shard_size needs world >= 2)\n");
        return;
    }
    zero_backend cb = *be;
    count_base = be;
    cb.groups_init = count_groups_init_fn;
    cb.group_reduce_scatter = count_rs;
    cb.group_all_gather = count_ag;
    cb.group_all_reduce = count_ar;
    std::vector<int> Gs = {1};
    if (world >= 4 && world % 2 == 0) Gs.push_back(world / 2);
    double worst[4] = {0, 0, 0, 0};
    int runs = 0;
    for (int G : Gs)
        for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt += 2)
            for (int stage = 1; stage <= 3; stage++)
                for (int gas = 1; gas <= 2; gas++) {
                    if (quick && (dt != ZERO_DTYPE_BF16 || gas != 2 || stage != 2)) continue;
                    job j = {stage, dt, gas, 600, 0, 0, 0, 0, NULL};
                    mics_shard = G;
                    zero_config c = make_cfg(&j, world);
                    zero_tensor ts[NT];
                    char names[NT][16];
                    zero_engine *e;
                    tensors(ts, names);
                    count_groups_init = count_group_calls = 0;
                    zero_result r = zero_engine_create(&e, &c, ts, NT, &cb, &err);
                    CHECKF(r == ZERO_OK, "hybrid create G %d stage %d %s: %s", G, stage, zero_dtype_name((zero_dtype)dt), err.msg);
                    if (r != ZERO_OK) {
                        mics_shard = -1;
                        continue;
                    }
                    r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
                    CHECKF(r == ZERO_OK, "hybrid train G %d stage %d %s gas %d: %s", G, stage, zero_dtype_name((zero_dtype)dt),
                           gas, zero_engine_error(e)->msg);
                    std::vector<float> got;
                    if (r == ZERO_OK) r = read_all(e, got);
                    zero_engine_destroy(e);
                    CHECKF(count_groups_init >= 1 && count_group_calls > 0,
                           "hybrid G %d stage %d: groups_init called %d times, group collectives %d", G, stage,
                           count_groups_init, count_group_calls);
                    host_job H;
                    H.j = &j;
                    zero_result hr = r == ZERO_OK ? zero_host_run(world, host_rank, &H, &err) : r;
                    mics_shard = -1;
                    if (r != ZERO_OK) continue;
                    CHECKF(hr == ZERO_OK, "hybrid host run G %d: %s", G, err.msg);
                    if (hr != ZERO_OK || H.result.size() != got.size()) continue;
                    double maxw = 0, maxd = 0;
                    for (size_t i = 0; i < got.size(); i++) {
                        maxw = fmax(maxw, fabs((double)H.result[i]));
                        maxd = fmax(maxd, fabs((double)got[i] - (double)H.result[i]));
                    }
                    double tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : 1.6e-2;
                    worst[dt] = fmax(worst[dt], maxd / maxw);
                    runs++;
                    CHECKF(maxd <= tol * maxw,
                           "hybrid G %d stage %d %s gas %d world %d: CUDA vs host max diff %.3g (max|w| %.3g, allowed %.3g)", G,
                           stage, zero_dtype_name((zero_dtype)dt), gas, world, maxd, maxw, tol * maxw);
                }
    if (be->rank == 0)
        printf("gpu_engine hybrid: world %d, mics_shard_size 1%s, %d runs; worst CUDA-vs-host difference / max|w|: fp32 %.3g, "
               "bf16 %.3g\n",
               world, world >= 4 && world % 2 == 0 ? " and world / 2" : "", runs, worst[ZERO_DTYPE_FP32],
               worst[ZERO_DTYPE_BF16]);
}

// Resume on the GPU: 6 steps, zero_save, 6 more steps (A); a fresh engine,
// zero_load, the same 6 steps (B): A and B bitwise equal. Then the
// safetensors export of A for a Python check (make test-gpu prints its path).
static void test_resume(zero_cuda *cu) {
    const zero_backend *be = zero_cuda_backend(cu);
    zero_error err;
    char dir[96];
    // one directory for every rank: the launcher (or zero_cuda_launch_local) is their common parent
    snprintf(dir, sizeof dir, "/tmp/zero_gpu_ckpt_%d", (int)getppid());
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        CHECKF(0, "mkdir %s", dir);
        return;
    }
    for (int stage = 0; stage <= 3; stage++) {
        job j = {stage, ZERO_DTYPE_BF16, 2, 600, 0, 0, 0, 0, NULL};
        zero_config c = make_cfg(&j, be->world);
        zero_tensor ts[NT];
        char names[NT][16], sub[160];
        std::vector<float> wa, wb;
        zero_engine *e = NULL;
        tensors(ts, names);
        snprintf(sub, sizeof sub, "%s/s%d", dir, stage);
        zero_result r = zero_engine_create(&e, &c, ts, NT, be, &err);
        if (r == ZERO_OK) r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
        if (r == ZERO_OK) r = zero_save(e, sub, &err);
        if (r == ZERO_OK) r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
        if (r == ZERO_OK) r = read_all(e, wa);
        CHECKF(r == ZERO_OK, "resume stage %d (A): %s", stage, e ? zero_engine_error(e)->msg : err.msg);
        zero_engine_destroy(e);
        e = NULL;
        r = zero_engine_create(&e, &c, ts, NT, be, &err);
        if (r == ZERO_OK) r = zero_load(e, sub, &err);
        if (r == ZERO_OK) r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
        if (r == ZERO_OK) r = read_all(e, wb);
        CHECKF(r == ZERO_OK, "resume stage %d (B): %s", stage, e ? zero_engine_error(e)->msg : err.msg);
        CHECKF(wa.size() == wb.size() && wa.size() > 0 && !memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)),
               "resume stage %d: the resumed GPU run differs from the uninterrupted one", stage);
        const char *ex = getenv("ZERO_GPU_EXPORT"); // tests/gpu.sh: Python's safetensors reads it back
        if (stage == 3 && r == ZERO_OK && ex) {
            CHECK(zero_export_safetensors(e, ex, ZERO_DTYPE_FP32, &err) == ZERO_OK);
            if (be->rank == 0) { // the values it must hold, raw fp32 in registration order
                std::string p = std::string(ex) + ".expect";
                FILE *f = fopen(p.c_str(), "wb");
                CHECK(f && fwrite(wb.data(), sizeof(float), wb.size(), f) == wb.size());
                if (f) fclose(f);
            }
        }
        if (be->rank == 0)
            printf("gpu_engine resume: world %d, stage %d, bf16: 6 steps + save + 6 steps vs load + 6 steps: %zu weights %s\n",
                   be->world, stage, wa.size(),
                   wa.size() == wb.size() && !memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)) ? "bitwise equal"
                                                                                                      : "DIFFERENT");
        zero_engine_destroy(e);
    }
}

int main(void) {
    int code = 1;
    zero_cuda *cu = zt_cuda_start("gpu_engine", &code);
    if (!cu) return code;
    zero_error err;
    const zero_backend *be = zero_cuda_backend(cu);
    int quick = getenv("ZERO_TEST_QUICK") != NULL;
    test_groups(cu); // first: no engine has made groups yet
    double worst[4] = {0, 0, 0, 0};
    for (int dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (int stage = 0; stage <= 3; stage++)
            for (int gas = 1; gas <= 2; gas++)
                for (int b = 0; b < 2; b++) {
                    if (quick && (dt != ZERO_DTYPE_FP16 || gas != 2 || b != 0 || stage < 2)) continue;
                    job j = {stage, dt, gas, b == 0 ? (int64_t)600 : (int64_t)500000000, 0, 0, 0, 0, NULL};
                    zero_config c = make_cfg(&j, be->world);
                    zero_tensor ts[NT];
                    char names[NT][16];
                    zero_engine *e;
                    tensors(ts, names);
                    zero_result r = zero_engine_create(&e, &c, ts, NT, be, &err);
                    CHECKF(r == ZERO_OK, "create stage %d dtype %d: %s", stage, dt, err.msg);
                    if (r != ZERO_OK) continue;
                    r = train(e, &j, be->rank, 1, zero_cuda_stream(cu));
                    CHECKF(r == ZERO_OK, "train stage %d %s gas %d bucket %lld: %s", stage, zero_dtype_name((zero_dtype)dt), gas,
                           (long long)j.bucket, zero_engine_error(e)->msg);
                    std::vector<float> got;
                    if (r == ZERO_OK) r = read_all(e, got);
                    zero_engine_destroy(e);
                    if (r != ZERO_OK) continue;
                    host_job H;
                    H.j = &j;
                    r = zero_host_run(be->world, host_rank, &H, &err);
                    CHECKF(r == ZERO_OK, "host run: %s", err.msg);
                    if (r != ZERO_OK) continue;
                    double maxw = 0, maxd = 0;
                    for (size_t i = 0; i < got.size(); i++) {
                        maxw = fmax(maxw, fabs((double)H.result[i]));
                        maxd = fmax(maxd, fabs((double)got[i] - (double)H.result[i]));
                    }
                    // the reductions add in another order on NCCL than on the host (rank order): fp32
                    // differs in the last bits, fp16/bf16 gradients by an ulp of the 16-bit type
                    double tol = dt == ZERO_DTYPE_FP32 ? 2e-6 : dt == ZERO_DTYPE_FP16 ? 2e-3 : 1.6e-2;
                    worst[dt] = fmax(worst[dt], maxd / maxw);
                    CHECKF(maxd <= tol * maxw, "stage %d %s gas %d bucket %lld world %d: CUDA vs host max diff %.3g (max|w| %.3g, "
                           "allowed %.3g)", stage, zero_dtype_name((zero_dtype)dt), gas, (long long)j.bucket, be->world, maxd,
                           maxw, tol * maxw);
                }
    if (be->rank == 0)
        printf("gpu_engine: world %d; worst CUDA-vs-host difference / max|w|: fp32 %.3g, fp16 %.3g, bf16 %.3g\n", be->world,
               worst[ZERO_DTYPE_FP32], worst[ZERO_DTYPE_FP16], worst[ZERO_DTYPE_BF16]);
    test_scalars(cu);
    test_optimizers(cu, quick);
    test_hybrid(cu, quick);
    test_program_memory(cu);
    test_offload(cu, quick);
    test_ratio(cu, quick);
    test_host_sum(cu);
    if (!quick) test_resume(cu);
    zero_cuda_backend_destroy(cu);
    test_hooks();
    return zt_finish();
}
