/* test_engine_check.c - check_collectives (ZERO_CHECK): ranks that make
   different calls get ENGINE_DIVERGED naming both sides instead of a deadlock
   or mixed-up data; with every rank in step, the check changes nothing.
   Also ZERO_TENSOR_GRAD_WRITE (no clearing of the gradient ring): the same
   weights as without it, a tensor whose gradient is never asked for included.

   Run alone: make test T=test_engine_check */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

enum { NT = 3 };
static const int64_t SIZES[NT] = {100, 100, 50};

typedef struct job {
    int stage, check, skip_rank; /* skip_rank: this rank leaves out zero_fetch of tensor 0 */
    int grad_write, no_ask;      /* no_ask: tensor 2 gets no zero_grad at step 1 (zero gradient) */
    zero_result r[4];
    zero_msg item[4];
    char msg[4][1024];
    float w[4][250];
} job;

static void init_cb(void *u, int t, int64_t off, int64_t n, float *out) {
    int64_t i;
    (void)u;
    for (i = 0; i < n; i++) out[i] = (float)(0.01 * (double)(t + 1) * (double)((off + i) % 17));
}

static zero_result run(zero_engine *e, job *J, int rank) {
    int s, t;
    zero_result r;
    for (s = 0; s < 3; s++) {
        for (t = 0; t < NT; t++) {
            if (!(rank == J->skip_rank && t == 0 && s == 1) && (r = zero_fetch(e, t)) != ZERO_OK) return r;
        }
        for (t = NT - 1; t >= 0; t--) {
            float *w, *g;
            int64_t i;
            if (J->no_ask && t == 2 && s == 1) {
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
                continue;
            }
            w = (float *)zero_param(e, t);
            g = (float *)zero_grad(e, t);
            if (!g) return zero_engine_error(e)->code;
            for (i = 0; i < SIZES[t]; i++) g[i] = (w ? w[i] : 0.0f) - 0.5f + 0.001f * (float)(rank + i);
            if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
            if (!(rank == J->skip_rank && t == 0 && s == 1) && (r = zero_release(e, t)) != ZERO_OK) return r;
        }
        if ((r = zero_step(e, NULL)) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

static zero_result rank_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    zero_error err;
    zero_engine *e;
    int t;
    int64_t o = 0;
    memset(ts, 0, sizeof ts);
    ts[0].name = "embed";
    ts[1].name = "block";
    ts[2].name = "head";
    for (t = 0; t < NT; t++) {
        ts[t].numel = SIZES[t], ts[t].group = t, ts[t].init = init_cb;
        if (J->grad_write) ts[t].flags = ZERO_TENSOR_GRAD_WRITE;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.stage3_param_persistence_threshold = 0;
    c.check_collectives = J->check;
    c.log.level = ZERO_LOG_LEVEL_COUNT; /* quiet: the test reads the errors */
    if (zero_config_resolve(&c, b->world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, b, &err) != ZERO_OK) {
        J->r[b->rank] = err.code;
        return ZERO_OK;
    }
    J->r[b->rank] = run(e, J, b->rank);
    J->item[b->rank] = zero_engine_error(e)->item;
    snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", zero_engine_error(e)->msg);
    if (J->r[b->rank] == ZERO_OK)
        for (t = 0; t < NT; t++) {
            zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], J->w[b->rank] + o);
            o += SIZES[t];
        }
    zero_engine_destroy(e);
    return ZERO_OK;
}

int main(void) {
    static job a, b;
    zero_error err;
    int stage, k;
    zt_seed("test_engine_check");
    /* in step: the check changes no number */
    for (stage = 0; stage <= 3; stage++) {
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        a.stage = b.stage = stage;
        a.skip_rank = b.skip_rank = -1;
        b.check = 1;
        CHECK(zero_host_run(2, rank_fn, &a, &err) == ZERO_OK);
        CHECK(zero_host_run(2, rank_fn, &b, &err) == ZERO_OK);
        CHECKF(a.r[0] == ZERO_OK && b.r[0] == ZERO_OK && b.r[1] == ZERO_OK, "stage %d: %s / %s", stage, a.msg[0], b.msg[0]);
        CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]), "stage %d: weights differ with the check on", stage);
    }
    /* GRAD_WRITE: no clearing, same numbers (the backward stores every element) */
    for (stage = 0; stage <= 3; stage++)
        for (k = 0; k < 2; k++) {
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            a.stage = b.stage = stage;
            a.skip_rank = b.skip_rank = -1;
            a.no_ask = b.no_ask = k;
            b.grad_write = 1;
            CHECK(zero_host_run(2, rank_fn, &a, &err) == ZERO_OK);
            CHECK(zero_host_run(2, rank_fn, &b, &err) == ZERO_OK);
            CHECKF(a.r[0] == ZERO_OK && b.r[0] == ZERO_OK, "stage %d: %s / %s", stage, a.msg[0], b.msg[0]);
            CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]), "stage %d no_ask %d: GRAD_WRITE changed the weights", stage, k);
        }
    /* rank 1 skips a stage-3 fetch: both ranks learn where, nobody hangs */
    memset(&a, 0, sizeof a);
    a.stage = 3;
    a.check = 1;
    a.skip_rank = 1;
    CHECK(zero_host_run(2, rank_fn, &a, &err) == ZERO_OK);
    for (k = 0; k < 2; k++) {
        CHECKF(a.r[k] == ZERO_ERR_STATE && a.item[k] == ZERO_MSG_ENGINE_DIVERGED, "rank %d: result %d item %s: %s", k, a.r[k],
               zero_msg_name(a.item[k]), a.msg[k]);
        CHECK_STR_CONTAINS(a.msg[k], "diverged");
        CHECK_STR_CONTAINS(a.msg[k], "stage-3 fetch");
    }
    CHECK_STR_CONTAINS(a.msg[0], "'embed'"); /* rank 0 is at the fetch rank 1 left out */
    CHECK_STR_CONTAINS(a.msg[1], "'block'");
    if (getenv("ZERO_TEST_VERBOSE")) printf("%s\n%s\n", a.msg[0], a.msg[1]);
    return zt_finish();
}
