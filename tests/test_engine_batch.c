/* test_engine_batch.c - the step's batched backend calls: sumsq_segs (every
   unit's gradient statistics in one call) and adam_multi (every unit's Adam
   in one call). Many small tensors in units of many segments, a frozen unit,
   stages 0-3 on one and two ranks (partial ownership of units): the weights
   and the norm are the same bits as with both calls taken away (one sumsq per
   segment, one adam per unit), the norm matches the test's own sum of
   squares, and each step makes the number of batched calls expected.

   Run alone: make test T=test_engine_batch */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

enum { NT = 40, PER_GROUP = 8, FROZEN_GROUP = 2, STEPS = 3, MAXE = 40 * 24 };

static int64_t size_of(int t) { return 1 + (t * 7) % 23; }
static int frozen_t(int t) { return t / PER_GROUP == FROZEN_GROUP; }

typedef struct job {
    int stage, plain;            /* plain: no sumsq_segs / adam_multi */
    zero_result r[2];
    char msg[2][1024];
    float w[2][MAXE];
    double norm[2][STEPS], want_norm[2][STEPS];
} job;

static volatile int n_sq_calls, n_adam_calls;
static zero_result (*orig_sq)(void *, const zero_sumsq_seg *, int, zero_dtype, zero_stream_id, zero_error *);
static zero_result (*orig_adam)(void *, const zero_adam_args *, int, zero_stream_id, zero_error *);
static zero_result count_sq(void *ctx, const zero_sumsq_seg *s, int n, zero_dtype dt, zero_stream_id st, zero_error *err) {
    __atomic_add_fetch(&n_sq_calls, 1, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&orig_sq, __ATOMIC_SEQ_CST)(ctx, s, n, dt, st, err);
}
static zero_result count_adam(void *ctx, const zero_adam_args *a, int n, zero_stream_id st, zero_error *err) {
    __atomic_add_fetch(&n_adam_calls, 1, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&orig_adam, __ATOMIC_SEQ_CST)(ctx, a, n, st, err);
}

static void init_cb(void *u, int t, int64_t off, int64_t n, float *out) {
    int64_t i;
    (void)u;
    for (i = 0; i < n; i++) out[i] = (float)(0.05 * (double)((t * 13 + off + i) % 11) - 0.2);
}

static float grad_val(int step, int rank, int t, int64_t i) {
    return (float)(0.01 * (double)((step * 5 + rank * 3 + t * 7 + i) % 19) - 0.09);
}

static zero_result run(zero_engine *e, job *J, int rank, int world) {
    int s, t;
    zero_result r;
    for (s = 0; s < STEPS; s++) {
        double sum = 0;
        zero_step_info info;
        for (t = 0; t < NT; t++)
            if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
        for (t = NT - 1; t >= 0; t--) {
            float *g;
            int64_t i;
            if (frozen_t(t)) {
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
                continue;
            }
            g = (float *)zero_grad(e, t);
            if (!g) return zero_engine_error(e)->code;
            for (i = 0; i < size_of(t); i++) g[i] = grad_val(s, rank, t, i);
            if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
            if ((r = zero_release(e, t)) != ZERO_OK) return r;
        }
        /* the test's own norm of the rank-averaged gradient */
        for (t = 0; t < NT; t++) {
            int64_t i;
            int k;
            if (frozen_t(t)) continue;
            for (i = 0; i < size_of(t); i++) {
                double a = 0;
                for (k = 0; k < world; k++) a += grad_val(s, k, t, i);
                a /= world;
                sum += a * a;
            }
        }
        J->want_norm[rank][s] = sqrt(sum);
        if ((r = zero_step(e, &info)) != ZERO_OK) return r;
        J->norm[rank][s] = info.grad_norm;
    }
    return ZERO_OK;
}

static zero_result rank_fn(const zero_backend *b0, void *arg) {
    job *J = (job *)arg;
    zero_backend b = *b0;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][16];
    zero_error err;
    zero_engine *e;
    int t;
    int64_t o = 0;
    if (J->plain) b.sumsq_segs = NULL, b.adam_multi = NULL;
    else {
        __atomic_store_n(&orig_sq, b0->sumsq_segs, __ATOMIC_SEQ_CST);
        __atomic_store_n(&orig_adam, b0->adam_multi, __ATOMIC_SEQ_CST);
        b.sumsq_segs = count_sq, b.adam_multi = count_adam;
    }
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        ts[t].name = names[t];
        ts[t].numel = size_of(t), ts[t].group = t / PER_GROUP, ts[t].init = init_cb;
        if (frozen_t(t)) ts[t].flags = ZERO_TENSOR_FROZEN;
        if (t % 5 == 1) ts[t].flags |= ZERO_TENSOR_NO_DECAY;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.stage3_param_persistence_threshold = 0;
    c.optimizer.type = ZERO_OPTIMIZER_ADAMW;
    c.optimizer.weight_decay = 0.1;
    c.optimizer.lr = 1e-2;
    c.gradient_clipping = 0.05;
    c.log.level = ZERO_LOG_LEVEL_COUNT;
    if (zero_config_resolve(&c, b.world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, &b, &err) != ZERO_OK) {
        J->r[b.rank] = err.code;
        snprintf(J->msg[b.rank], sizeof J->msg[b.rank], "%s", err.msg);
        return ZERO_OK;
    }
    J->r[b.rank] = run(e, J, b.rank, b.world);
    snprintf(J->msg[b.rank], sizeof J->msg[b.rank], "%s", zero_engine_error(e)->msg);
    if (J->r[b.rank] == ZERO_OK)
        for (t = 0; t < NT; t++) {
            zero_read_state(e, t, ZERO_STATE_MASTER, 0, size_of(t), J->w[b.rank] + o);
            o += size_of(t);
        }
    zero_engine_destroy(e);
    return ZERO_OK;
}

int main(void) {
    static job a, p;
    zero_error err;
    int stage, world, k, s;
    zt_seed("test_engine_batch");
    for (world = 1; world <= 2; world++)
        for (stage = 0; stage <= 3; stage++) {
            memset(&a, 0, sizeof a);
            memset(&p, 0, sizeof p);
            a.stage = p.stage = stage;
            p.plain = 1;
            n_sq_calls = n_adam_calls = 0;
            CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
            CHECK(zero_host_run(world, rank_fn, &p, &err) == ZERO_OK);
            for (k = 0; k < world; k++) {
                CHECKF(a.r[k] == ZERO_OK && p.r[k] == ZERO_OK, "world %d stage %d rank %d: %s / %s", world, stage, k,
                       a.msg[k], p.msg[k]);
                CHECKF(!memcmp(a.w[k], p.w[k], sizeof a.w[k]), "world %d stage %d rank %d: the batched calls changed the weights",
                       world, stage, k);
                for (s = 0; s < STEPS; s++) {
                    CHECKF(!memcmp(&a.norm[k][s], &p.norm[k][s], sizeof(double)),
                           "world %d stage %d step %d: norm %.17g batched, %.17g plain", world, stage, s, a.norm[k][s],
                           p.norm[k][s]);
                    CHECKF(fabs(a.norm[k][s] - a.want_norm[k][s]) <= 1e-6 * a.want_norm[k][s],
                           "world %d stage %d step %d: norm %.17g, the test's %.17g", world, stage, s, a.norm[k][s],
                           a.want_norm[k][s]);
                }
            }
            /* one statistics call per step on every rank (the step's own) */
            CHECKF(n_sq_calls == world * STEPS, "world %d stage %d: %d sumsq_segs calls, want %d", world, stage, n_sq_calls,
                   world * STEPS);
            /* one Adam call per step where no parameter staging is in the way */
            CHECKF(n_adam_calls == world * STEPS, "world %d stage %d: %d adam_multi calls, want %d", world, stage,
                   n_adam_calls, world * STEPS);
        }
    return zt_finish();
}
