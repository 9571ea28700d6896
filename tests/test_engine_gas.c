/* test_engine_gas.c - zero_set_train_batch_size: the micro-batches a step
   change between steps, as DeepSpeed's engine.set_train_batch_size.

   Each run trains 2 steps at accumulation 2, changes to 3 (then 4 for one
   more), on host ranks at stages 0-3, one and two ranks, with and without
   offload_optimizer "cpu", fp32 and bf16. The reference makes the same
   steps with engines made for each accumulation, the state carried across
   by zero_save / zero_load: the weights and Adam's first moment must be the
   same bits. Refused, each with its message: a change during a step
   (ENGINE_STEP_EARLY), a batch that is not a multiple of micro-batch x
   ranks or is <= 0 (BAD_ARG), and one micro-batch <-> several
   (ENGINE_CONFIG, with its hint); the engine trains on after each.

   Run alone: make test T=test_engine_gas */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#ifndef ZERO_TEST_SHARED_IMPL   /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

#include <unistd.h>

enum { NT = 4, TOTAL = 5 + 130 + 17 + 64, MAXW = 2, MICRO = 2 };
static const int64_t SIZES[NT] = {5, 130, 17, 64};
static zt_wave init_wave = {0.3, 0.1, 0.7, 0.02, 0};

typedef struct job {
    int stage, world, dtype, offload;
    int phase;              /* 0: one engine, the accumulation changed in place; 1: engines per accumulation */
    const char *dir;        /* phase 1: the checkpoints */
    zero_result r[MAXW];
    char msg[MAXW][1024];
    float w[MAXW][TOTAL], m[MAXW][TOTAL];
} job;

/* the steps' plan: accumulation 2, 2, 3, 3, 4 */
enum { STEPS = 5 };
static const int GAS_AT[STEPS] = {2, 2, 3, 3, 4};

static zero_result make(const zero_backend *b, const job *J, int gas, zero_engine **e, zero_error *err) {
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][8]; /* (copied by the engine) */
    int t;
    zero_result r;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        snprintf(names[t], sizeof names[t], "g%d", t);
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].group = t / 2;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
    }
    c.train_micro_batch_size_per_gpu = MICRO;
    c.gradient_accumulation_steps = gas;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = 100;
    c.zero_optimization.offload_optimizer.device = J->offload ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
    c.optimizer.weight_decay = 0.01;
    c.gradient_clipping = 0.5;
    c.bf16.enabled = J->dtype == ZERO_DTYPE_BF16;
    c.log.level = ZERO_LOG_WARN;
    if ((r = zero_config_resolve(&c, b->world, err)) != ZERO_OK) return r;
    return zero_engine_create(e, &c, ts, NT, b, err);
}

/* step s: gas micro-batches, every tensor's gradient from its parameters and (s, micro, rank) */
static zero_result step(zero_engine *e, const job *J, int s, int gas, int rank) {
    int m, t;
    zero_result r;
    for (m = 0; m < gas; m++)
        for (t = NT - 1; t >= 0; t--) {
            void *w, *g;
            int64_t i;
            if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
            if (!(w = zero_param(e, t)) || !(g = zero_grad(e, t))) return zero_engine_error(e)->code;
            for (i = 0; i < SIZES[t]; i++)
                zt_store(g, J->dtype, i,
                         zt_load(w, J->dtype, i) - 0.05f + 0.01f * (float)((rank * 5 + m * 3 + s * 7 + (int)i) % 9));
            if ((r = zero_grad_ready(e, t)) != ZERO_OK || (r = zero_release(e, t)) != ZERO_OK) return r;
        }
    return zero_step(e, NULL);
}

static zero_result read_back(zero_engine *e, job *J, int rank) {
    int64_t o = 0;
    int t;
    zero_result r;
    for (t = 0; t < NT; o += SIZES[t], t++)
        if ((r = zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], J->w[rank] + o)) != ZERO_OK ||
            (r = zero_read_state(e, t, ZERO_STATE_EXP_AVG, 0, SIZES[t], J->m[rank] + o)) != ZERO_OK)
            return r;
    return ZERO_OK;
}

static zero_result in_place(const zero_backend *b, job *J, zero_error *err) {
    zero_engine *e;
    int s, rank = b->rank;
    zero_result r;
    if ((r = make(b, J, GAS_AT[0], &e, err)) != ZERO_OK) return r;
    for (s = 0; s < STEPS && r == ZERO_OK; s++) {
        if (s > 0 && GAS_AT[s] != GAS_AT[s - 1])
            r = zero_set_train_batch_size(e, (int64_t)MICRO * GAS_AT[s] * b->world);
        if (r == ZERO_OK) r = step(e, J, s, GAS_AT[s], rank);
    }
    if (r == ZERO_OK) r = read_back(e, J, rank);
    if (r != ZERO_OK) *err = *zero_engine_error(e);
    zero_engine_destroy(e);
    return r;
}

/* the reference: an engine per accumulation, the state carried by a checkpoint */
static zero_result per_engine(const zero_backend *b, job *J, zero_error *err) {
    zero_engine *e = NULL;
    int s, rank = b->rank;
    zero_result r = ZERO_OK;
    char path[512];
    for (s = 0; s < STEPS && r == ZERO_OK; s++) {
        if (!e || GAS_AT[s] != GAS_AT[s - 1]) {
            if (e) {
                if ((r = zero_save(e, J->dir, err)) != ZERO_OK) break;
                zero_engine_destroy(e);
                e = NULL;
            }
            if ((r = make(b, J, GAS_AT[s], &e, err)) != ZERO_OK) break;
            if (s > 0) {
                snprintf(path, sizeof path, "%s/step%d", J->dir, s);
                if ((r = zero_load(e, path, err)) != ZERO_OK) break;
            }
        }
        if ((r = step(e, J, s, GAS_AT[s], rank)) != ZERO_OK) *err = *zero_engine_error(e);
    }
    if (r == ZERO_OK && (r = read_back(e, J, rank)) != ZERO_OK) *err = *zero_engine_error(e);
    zero_engine_destroy(e);
    return r;
}

static zero_result rank_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_error err;
    memset(&err, 0, sizeof err);
    J->r[b->rank] = J->phase ? per_engine(b, J, &err) : in_place(b, J, &err);
    snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", err.msg);
    return ZERO_OK;
}

/* The refusals, one rank: each leaves the engine training. */
typedef struct misuse {
    zero_result r;
    char msg[1024];
} misuse;

static zero_result misuse_fn(const zero_backend *b, void *arg) {
    misuse *M = (misuse *)arg;
    job J;
    zero_engine *e, *e1;
    zero_error err;
    void *g;
    memset(&J, 0, sizeof J);
    J.stage = 2;
    J.dtype = ZERO_DTYPE_FP32;
    M->r = ZERO_ERR_STATE;
    if (make(b, &J, 2, &e, &err) != ZERO_OK) {
        snprintf(M->msg, sizeof M->msg, "%s", err.msg);
        return ZERO_OK;
    }
    /* not a multiple of micro-batch 2 x 1 rank; <= 0 */
    CHECK(zero_set_train_batch_size(e, 7) == ZERO_ERR_INVALID_ARG);
    CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "not a multiple of micro-batch 2 x 1 rank");
    CHECK(zero_set_train_batch_size(e, 0) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_set_train_batch_size(e, -4) == ZERO_ERR_INVALID_ARG);
    /* several micro-batches -> one */
    CHECK(zero_set_train_batch_size(e, 2) == ZERO_ERR_CONFIG);
    CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "gradient_accumulation_steps 1 to step with one");
    /* during a step */
    CHECK(zero_fetch(e, 0) == ZERO_OK && (g = zero_grad(e, 0)) != NULL);
    CHECK(zero_set_train_batch_size(e, 6) == ZERO_ERR_STATE);
    CHECK_STR_CONTAINS(zero_engine_error(e)->msg, "micro-batch 1 of 2 is under way");
    CHECK(zero_release(e, 0) == ZERO_OK);
    zero_engine_destroy(e);
    /* one micro-batch -> several */
    if (make(b, &J, 1, &e1, &err) != ZERO_OK) {
        snprintf(M->msg, sizeof M->msg, "%s", err.msg);
        return ZERO_OK;
    }
    CHECK(zero_set_train_batch_size(e1, 4) == ZERO_ERR_CONFIG);
    CHECK_STR_CONTAINS(zero_engine_error(e1)->msg, "gradient_accumulation_steps > 1 to change the number later");
    CHECK(zero_set_train_batch_size(e1, 2) == ZERO_OK); /* the same one: nothing changes */
    M->r = step(e1, &J, 0, 1, 0);                      /* and it trains */
    if (M->r != ZERO_OK) snprintf(M->msg, sizeof M->msg, "%s", zero_engine_error(e1)->msg);
    zero_engine_destroy(e1);
    return ZERO_OK;
}

int main(void) {
    static job a, b;
    zero_error err;
    int stage, world, dt, off, k, runs = 0;
    zt_seed("test_engine_gas");
    for (stage = 0; stage <= 3; stage++)
        for (world = 1; world <= MAXW; world++)
            for (dt = 0; dt < 2; dt++)
                for (off = 0; off < 2; off++) {
                    char dir[] = "/tmp/zero_gas_XXXXXX";
                    if (off && stage == 0) continue; /* (no shard to offload) */
                    memset(&a, 0, sizeof a);
                    a.stage = stage;
                    a.world = world;
                    a.dtype = dt ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
                    a.offload = off;
                    b = a;
                    b.phase = 1;
                    CHECK(mkdtemp(dir) != NULL);
                    b.dir = dir;
                    CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                    CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
                    for (k = 0; k < world; k++) {
                        CHECKF(a.r[k] == ZERO_OK && b.r[k] == ZERO_OK, "stage %d world %d %s offload %d rank %d: %s / %s",
                               stage, world, zero_dtype_name((zero_dtype)a.dtype), off, k, a.msg[k], b.msg[k]);
                        CHECKF(!memcmp(a.w[k], b.w[k], sizeof a.w[k]) && !memcmp(a.m[k], b.m[k], sizeof a.m[k]),
                               "stage %d world %d %s offload %d rank %d: the accumulation changed in place differs from "
                               "engines made for it",
                               stage, world, zero_dtype_name((zero_dtype)a.dtype), off, k);
                    }
                    runs++;
                    {
                        char cmd[600];
                        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                        if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
                    }
                }
    {
        misuse M;
        memset(&M, 0, sizeof M);
        CHECK(zero_host_run(1, misuse_fn, &M, &err) == ZERO_OK);
        CHECKF(M.r == ZERO_OK, "after the refusals: %s", M.msg);
    }
    printf("zero_set_train_batch_size: %d runs changed the accumulation 2 -> 3 -> 4 in place, bitwise engines made for "
           "each\n", runs);
    return zt_finish();
}
