// gpu_fault.cu - failures across GPUs turn into errors, never hangs (2+ GPUs;
// with one GPU it says so and checks nothing). The parent process forks the
// ranks once per scenario through zero_cuda_launch_local; each rank checks its
// own outcome and exits 0 when it saw what it should.
//   killed:  rank 1 vanishes in the middle of a step; rank 0's zero_step must
//            return ZERO_ERR_TIMEOUT or ZERO_ERR_NCCL within the deadline
//   absent:  rank 1 never starts; rank 0's zero_cuda_backend_init times out
//            naming the rank that never came
//   comm_id: NCCL_COMM_ID set: every rank makes the id, training works
//   own_comm: the program makes the communicator and hands it in
//   diverge: with ZERO_CHECK=1 rank 1 leaves out a stage-3 fetch: both ranks
//            get ENGINE_DIVERGED naming the unit, nobody hangs
// Run alone (GPU machine): make test-gpu T=gpu_fault
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_cuda.cuh"
#include "zero_test.h"

#include <signal.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

__global__ void fill(float *g, const float *w, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        g[i] = w[i] - 0.25f;
}

static void init_cb(void *u, int t, int64_t off, int64_t n, float *out) {
    (void)u;
    for (int64_t i = 0; i < n; i++) out[i] = 0.001f * (float)((off + i + t) % 97);
}

enum { NT = 4 };
static const int64_t SIZES[NT] = {1 << 16, 1 << 20, 12345, 1 << 18};

// one step; rank `die` leaves with _exit before zero_step of step `die_step`
static zero_result step(zero_engine *e, zero_cuda *cu, int rank, int s, int die, int die_step) {
    zero_result r;
    for (int t = NT - 1; t >= 0; t--) {
        float *w = (float *)zero_param(e, t), *g = (float *)zero_grad(e, t);
        if (!w || !g) return zero_engine_error(e)->code;
        fill<<<64, 256, 0, zero_cuda_stream(cu)>>>(g, w, SIZES[t]);
        if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
    }
    if (rank == die && s == die_step) _exit(0); // vanish: no goodbye to NCCL
    return zero_step(e, NULL);
}

static int rank_main(const char *scenario) {
    zero_error err;
    zero_cuda *cu = NULL;
    zero_dist_env env;
    if (zero_dist_env_read(&env, &err) != ZERO_OK) {
        fprintf(stderr, "env: %s\n", err.msg);
        return 2;
    }
    alarm(120); // whatever happens, this rank ends
    if (!strcmp(scenario, "absent") && env.rank == 1) _exit(0);
    double t0 = now_s();
    zero_cuda_options opt = zero_cuda_options_default();
    ncclComm_t own = NULL;
    if (!strcmp(scenario, "own_comm")) {
        ncclUniqueId id;
        if (cudaSetDevice(env.local_rank) != cudaSuccess) return 5;
        if (env.rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return 5;
        if (zero_bootstrap_exchange(&env, &id, sizeof id, 30, &err) != ZERO_OK) {
            fprintf(stderr, "own_comm: %s\n", err.msg);
            return 5;
        }
        if (ncclCommInitRank(&own, env.world, id, env.rank) != ncclSuccess) return 5;
        opt.comm = own;
        opt.device = env.local_rank;
    }
    zero_result r = zero_cuda_backend_init(&cu, &opt, &err);
    if (!strcmp(scenario, "absent")) {
        double dt = now_s() - t0;
        /* rank 0 names the missing rank; the others (world > 2) time out too,
           waiting for it in the bootstrap or in NCCL's setup */
        int ok = r == ZERO_ERR_TIMEOUT && dt < 20 && (env.rank != 0 || strstr(err.msg, "rank 1") != NULL);
        printf("absent: rank %d: %s after %.1f s: %s\n", env.rank, zero_result_string(r), dt, err.msg);
        if (cu) zero_cuda_backend_destroy(cu);
        return ok ? 0 : 1;
    }
    if (r != ZERO_OK) {
        fprintf(stderr, "rank %d: backend: %s\n", env.rank, err.msg);
        return 3;
    }
    const zero_backend *be = zero_cuda_backend(cu);
    zero_config c = zero_config_default();
    c.train_micro_batch_size_per_gpu = 1;
    c.zero_optimization.stage = !strcmp(scenario, "diverge") ? 3 : 2;
    c.zero_optimization.stage3_param_persistence_threshold = 0;
    c.zero_optimization.stage3_prefetch_bucket_size = 0; // every fetch gathers: the divergence shows at once
    c.zero_optimization.stage3_max_reuse_distance = 0;
    c.zero_optimization.reduce_bucket_size = 1 << 18;
    c.log.level = ZERO_LOG_WARN;
    zero_tensor ts[NT];
    memset(ts, 0, sizeof ts);
    const char *names[NT] = {"a", "b", "c", "d"};
    for (int t = 0; t < NT; t++) ts[t].name = names[t], ts[t].numel = SIZES[t], ts[t].init = init_cb;
    zero_engine *e;
    if (zero_config_resolve(&c, be->world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, be, &err) != ZERO_OK) {
        fprintf(stderr, "rank %d: engine: %s\n", env.rank, err.msg);
        return 4;
    }
    int killed = !strcmp(scenario, "killed"), diverge = !strcmp(scenario, "diverge");
    for (int s = 0; s < 4; s++) {
        t0 = now_s();
        if (diverge) { // stage 3: fetch everything; rank 1 forgets tensor 1 at step 2
            for (int t = 0; t < NT && r == ZERO_OK; t++)
                if (!(be->rank == 1 && s == 2 && t == 1)) r = zero_fetch(e, t);
            if (r != ZERO_OK) break;
            for (int t = NT - 1; t >= 0; t--) {
                float *g = (float *)zero_grad(e, t);
                if (!g) { r = zero_engine_error(e)->code; break; }
                cudaMemsetAsync(g, 0, sizeof(float) * (size_t)SIZES[t], zero_cuda_stream(cu));
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) break;
                if (!(be->rank == 1 && s == 2 && t == 1) && (r = zero_release(e, t)) != ZERO_OK) break;
            }
            if (r == ZERO_OK) r = zero_step(e, NULL);
        } else {
            r = step(e, cu, be->rank, s, killed ? 1 : -1, 2);
        }
        if (r != ZERO_OK) break;
    }
    double dt = now_s() - t0;
    int ok;
    if (killed) {
        ok = (r == ZERO_ERR_TIMEOUT || r == ZERO_ERR_NCCL) && dt < 30 && zero_engine_error(e)->code == r;
        printf("killed: rank %d: zero_step gave %s after %.1f s: %s\n", be->rank, zero_result_string(r), dt,
               zero_engine_error(e)->msg);
        // a further call fails at once, it does not wait again
        t0 = now_s();
        zero_result r2 = zero_step(e, NULL);
        ok = ok && r2 != ZERO_OK && now_s() - t0 < 1.0;
    } else if (diverge) {
        ok = r == ZERO_ERR_STATE && zero_engine_error(e)->item == ZERO_MSG_ENGINE_DIVERGED &&
             strstr(zero_engine_error(e)->msg, "stage-3 fetch") != NULL;
        printf("diverge: rank %d: %s\n", be->rank, zero_engine_error(e)->msg);
    } else {
        ok = r == ZERO_OK;
        printf("%s: rank %d: %s\n", scenario, be->rank, r == ZERO_OK ? "4 steps" : zero_engine_error(e)->msg);
    }
    zero_engine_destroy(e);
    zero_cuda_backend_destroy(cu);
    if (own) ncclCommDestroy(own);
    return ok ? 0 : 1;
}

int main(void) {
    zero_error err;
    const char *scenario = getenv("ZERO_FAULT_SCENARIO");
    setvbuf(stdout, NULL, _IOLBF, 0); // lines survive a rank that is killed
    if (getenv("RANK") && scenario) return rank_main(scenario); // a rank
    zt_seed("gpu_fault");
    static const char *const scenarios[] = {"killed", "absent", "comm_id", "own_comm", "diverge"};
    for (int k = 0; k < 5; k++) {
        int code = -1;
        setenv("ZERO_FAULT_SCENARIO", scenarios[k], 1);
        setenv("ZERO_TIMEOUT_S", "8", 1);
        if (!strcmp(scenarios[k], "comm_id")) setenv("NCCL_COMM_ID", "127.0.0.1:29631", 1);
        if (!strcmp(scenarios[k], "diverge")) setenv("ZERO_CHECK", "1", 1);
        else unsetenv("ZERO_CHECK");
        zero_result r = zero_cuda_launch_local(&code, &err);
        unsetenv("NCCL_COMM_ID");
        CHECKF(r == ZERO_OK, "%s: launch: %s", scenarios[k], err.msg);
        if (r == ZERO_OK && code < 0) {
            if (getenv("RANK")) return rank_main(scenarios[k]); // a child: this is a rank now
            printf("gpu_fault: fewer than 2 GPUs: nothing to check\n");
            break;
        }
        CHECKF(code == 0, "%s: worst rank exit status %d", scenarios[k], code);
    }
    return zt_finish();
}
