/* test_engine_misuse.c - misuse of the engine gets a clear error that
   names the tensor, never a crash or a hang: a gradient marked ready twice,
   zero_step before every gradient (or every micro-batch) is in, unknown
   tensor indices, gradients of frozen tensors, stage-3 parameters used
   without zero_fetch, releases without a fetch, more gathered units than the
   pool holds, use after zero_engine_destroy, and bad create arguments.

   Every misuse is made by all ranks alike (the engine's collectives stay
   matched); the rank threads record what they saw and the main thread turns
   it into checks (the harness counters are not thread safe).

   Run alone: make test T=test_engine_misuse */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

#define MAXW 4

/* ---------------------------------------------------------------------- */
/* what each rank saw                                                      */

typedef struct rec {
    int pass, nfail;
    char fail[24][600];
} rec;

static rec recs[MAXW];

static void rec_fail(rec *R, const char *fmt, const char *a, const char *b, const char *c) {
    if (R->nfail < 24) snprintf(R->fail[R->nfail], sizeof R->fail[0], fmt, a, b, c);
    R->nfail++;
}

static void expect_true(rec *R, int cond, const char *what) {
    if (cond) R->pass++;
    else rec_fail(R, "%s%s%s", what, "", "");
}

/* The call returned `got`; want `want` with item `item` in
   zero_engine_error(e), whose message names `name` (NULL: not checked). */
static void expect_err(rec *R, zero_engine *e, const char *what, zero_result got, zero_result want, zero_msg item,
                       const char *name) {
    const zero_error *er = zero_engine_error(e);
    char buf[300];
    if (want == ZERO_OK) { /* a success need not clear the engine's last error */
        if (got == ZERO_OK) R->pass++;
        else rec_fail(R, "%s: got %s, want ok (%s)", what, zero_result_string(got), er ? er->msg : "no error");
        return;
    }
    if (got != want) {
        snprintf(buf, sizeof buf, "got %s want %s", zero_result_string(got), zero_result_string(want));
        rec_fail(R, "%s: %s (%s)", what, buf, er ? er->msg : "no error");
        return;
    }
    if (!er) {
        rec_fail(R, "%s: zero_engine_error is NULL%s%s", what, "", "");
        return;
    }
    if (er->item != item || er->code != want) {
        snprintf(buf, sizeof buf, "item %s code %s, want %s", zero_msg_name(er->item), zero_result_string(er->code),
                 zero_msg_name(item));
        rec_fail(R, "%s: %s (%s)", what, buf, er->msg);
        return;
    }
    if (name && !strstr(er->msg, name)) {
        rec_fail(R, "%s: message does not name \"%s\": %s", what, name, er->msg);
        return;
    }
    R->pass++;
}

static void collect(const char *scenario, int world) {
    int r, k;
    for (r = 0; r < world; r++) {
        zt_pass += recs[r].pass;
        for (k = 0; k < recs[r].nfail && k < 24; k++) CHECKF(0, "%s, rank %d: %s", scenario, r, recs[r].fail[k]);
        if (recs[r].nfail > 24) CHECKF(0, "%s, rank %d: %d more failures", scenario, r, recs[r].nfail - 24);
    }
    memset(recs, 0, sizeof recs);
}

/* ---------------------------------------------------------------------- */
/* the model: five tensors in their own groups (own units), one frozen      */

static zero_tensor T[5];
#define NT 5
#define FROZEN_T 2

static void init_cb(void *user, int tensor, int64_t offset, int64_t count, float *out) {
    int64_t k;
    (void)user;
    for (k = 0; k < count; k++) out[k] = 0.01f * (float)(tensor + 1) + 0.001f * (float)(offset + k);
}

static void model_setup(void) {
    static const char *names[NT] = {"blk0.weight", "blk1.weight", "blk2.frozen_weight", "blk3.weight", "blk4.bias"};
    static const int64_t numel[NT] = {40, 24, 9, 33, 3};
    int t;
    for (t = 0; t < NT; t++) {
        memset(&T[t], 0, sizeof T[t]);
        T[t].name = names[t];
        T[t].numel = numel[t];
        T[t].group = t;
        T[t].init = init_cb;
    }
    T[FROZEN_T].flags = ZERO_TENSOR_FROZEN;
}

static zero_config base_cfg(int stage, int world, int gas) {
    zero_config c = zero_config_default();
    zero_error err;
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = gas;
    c.zero_optimization.stage = stage;
    c.zero_optimization.reduce_bucket_size = 64;
    c.zero_optimization.stage3_param_persistence_threshold = 3; /* blk4.bias persistent */
    c.log.level = ZERO_LOG_ERROR + 1; /* misuse is expected here: keep the log quiet */
    if (zero_config_resolve(&c, world, &err) != ZERO_OK) fprintf(stderr, "resolve: %s\n", err.msg);
    return c;
}

typedef struct scen {
    zero_config cfg;
    int which;
} scen;

/* one clean micro-batch: every trainable gradient written and ready */
static zero_result micro_batch(zero_engine *e) {
    int t;
    zero_result r;
    for (t = NT - 1; t >= 0; t--) {
        float *g;
        int64_t i;
        if (t == FROZEN_T) continue;
        if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
        g = (float *)zero_grad(e, t);
        if (!g) return ZERO_ERR_STATE;
        for (i = 0; i < T[t].numel; i++) g[i] = 0.5f;
        if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
        if ((r = zero_release(e, t)) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

/* ---------------------------------------------------------------------- */
/* the scenarios (run by every rank)                                       */

enum { S_GRAD_TWICE, S_STEP_EARLY, S_STEP_EARLY_GAS, S_STEP_MISSING, S_UNKNOWN, S_FROZEN, S_NOT_FETCHED, S_RELEASE, S_POOL_FULL,
       S_DESTROYED, S_SKIP_READY, S_COUNT };
static const char *scen_name[S_COUNT] = {"grad ready twice", "step before all gradients", "step before all micro-batches", "micro-batch past GAS without a step",
                                         "unknown tensor", "frozen gradient", "stage-3 param without fetch",
                                         "release without fetch", "gather pool full", "use after destroy",
                                         "rank 1 skips one zero_grad_ready"};

static zero_result scen_fn(const zero_backend *b, void *arg) {
    scen *S = (scen *)arg;
    rec *R = &recs[b->rank];
    zero_engine *e = NULL;
    zero_error err;
    zero_step_info info;
    zero_result r;
    int t;

    if ((r = zero_engine_create(&e, &S->cfg, T, NT, b, &err)) != ZERO_OK) {
        rec_fail(R, "zero_engine_create: %s%s%s", err.msg, "", "");
        return r;
    }
    switch (S->which) {
    case S_GRAD_TWICE:
        for (t = NT - 1; t >= 0; t--) {
            float *g;
            if (t == FROZEN_T) continue;
            zero_fetch(e, t);
            g = (float *)zero_grad(e, t);
            if (g) memset(g, 0, sizeof(float) * (size_t)T[t].numel);
            expect_err(R, e, "first zero_grad_ready", zero_grad_ready(e, t), ZERO_OK, ZERO_MSG_NONE, NULL);
            if (t == 3) /* blk3.weight again */
                expect_err(R, e, "second zero_grad_ready", zero_grad_ready(e, t), ZERO_ERR_STATE,
                           ZERO_MSG_ENGINE_GRAD_TWICE, T[t].name);
            zero_release(e, t);
        }
        /* the engine still works: the step goes through */
        expect_err(R, e, "zero_step after the misuse", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "next micro-batch", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "next step", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        break;
    case S_STEP_EARLY:
        /* blk4 and blk3 ready, blk1 and blk0 not */
        for (t = NT - 1; t >= 3; t--) {
            float *g;
            zero_fetch(e, t);
            g = (float *)zero_grad(e, t);
            if (g) memset(g, 0, sizeof(float) * (size_t)T[t].numel);
            zero_grad_ready(e, t);
            zero_release(e, t);
        }
        expect_err(R, e, "zero_step with blk1, blk0 not ready", zero_step(e, &info), ZERO_ERR_STATE,
                   ZERO_MSG_ENGINE_STEP_EARLY, NULL);
        {
            const zero_error *er = zero_engine_error(e);
            expect_true(R, er && (strstr(er->msg, "blk0.weight") || strstr(er->msg, "blk1.weight")),
                        "the early-step message names a tensor that is not ready");
            expect_true(R, er && !strstr(er->msg, "blk3.weight") && !strstr(er->msg, "blk4.bias"),
                        "the early-step message names no tensor that is ready");
            expect_true(R, er && !strncmp(er->msg, "zero_step after", 15), "the early-step message names zero_step");
        }
        { /* the program's own decisions before the step: each names itself, not zero_step */
            double norm = 0;
            const zero_error *er;
            expect_err(R, e, "zero_grad_norm with blk1, blk0 not ready", zero_grad_norm(e, &norm), ZERO_ERR_STATE,
                       ZERO_MSG_ENGINE_STEP_EARLY, NULL);
            er = zero_engine_error(e);
            expect_true(R, er && !strncmp(er->msg, "zero_grad_norm after", 20), "zero_grad_norm's message names it");
            expect_err(R, e, "zero_skip_step with blk1, blk0 not ready", zero_skip_step(e, &info), ZERO_ERR_STATE,
                       ZERO_MSG_ENGINE_STEP_EARLY, NULL);
            er = zero_engine_error(e);
            expect_true(R, er && !strncmp(er->msg, "zero_skip_step after", 20), "zero_skip_step's message names it");
        }
        /* finish the micro-batch: now the step is fine */
        for (t = 1; t >= 0; t--) {
            float *g;
            zero_fetch(e, t);
            g = (float *)zero_grad(e, t);
            if (g) memset(g, 0, sizeof(float) * (size_t)T[t].numel);
            expect_err(R, e, "late zero_grad_ready", zero_grad_ready(e, t), ZERO_OK, ZERO_MSG_NONE, NULL);
            zero_release(e, t);
        }
        expect_err(R, e, "zero_step when complete", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        /* a step with no micro-batch at all */
        expect_err(R, e, "zero_step with no micro-batch", zero_step(e, &info), ZERO_ERR_STATE,
                   ZERO_MSG_ENGINE_STEP_EARLY, NULL);
        break;
    case S_STEP_EARLY_GAS: /* gradient_accumulation_steps 3, two micro-batches */
        expect_err(R, e, "micro-batch 1", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "micro-batch 2", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "zero_step after 2 of 3 micro-batches", zero_step(e, &info), ZERO_ERR_STATE,
                   ZERO_MSG_ENGINE_STEP_EARLY, NULL);
        {
            const zero_error *er = zero_engine_error(e);
            expect_true(R, er && (strstr(er->msg, "2") && strstr(er->msg, "3")),
                        "the message says how many micro-batches arrived and how many are needed");
        }
        expect_err(R, e, "micro-batch 3", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "zero_step after 3", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_true(R, info.applied == 1, "the step after the misuse is applied");
        break;
    case S_STEP_MISSING: /* gradient_accumulation_steps 2, a third micro-batch without zero_step */
        expect_err(R, e, "micro-batch 1", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "micro-batch 2", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        {
            float *g;
            expect_true(R, zero_grad(e, 4) == NULL, "zero_grad in a third micro-batch is NULL");
            expect_err(R, e, "zero_grad in a third micro-batch", ZERO_ERR_STATE, ZERO_ERR_STATE, ZERO_MSG_ENGINE_STEP_MISSING,
                       T[4].name);
            expect_err(R, e, "zero_grad_ready in a third micro-batch", zero_grad_ready(e, 4), ZERO_ERR_STATE,
                       ZERO_MSG_ENGINE_STEP_MISSING, T[4].name);
            expect_err(R, e, "zero_step after the misuse", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
            expect_true(R, info.applied == 1, "the step after the misuse is applied");
            g = (float *)zero_grad(e, 4);
            expect_true(R, g != NULL, "zero_grad works again after the step");
        }
        expect_err(R, e, "next micro-batch", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        break;
    case S_UNKNOWN:
        expect_err(R, e, "zero_fetch(5)", zero_fetch(e, NT), ZERO_ERR_INVALID_ARG, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "5");
        expect_err(R, e, "zero_fetch(-1)", zero_fetch(e, -1), ZERO_ERR_INVALID_ARG, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "-1");
        expect_err(R, e, "zero_release(99)", zero_release(e, 99), ZERO_ERR_INVALID_ARG, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "99");
        expect_err(R, e, "zero_grad_ready(7)", zero_grad_ready(e, 7), ZERO_ERR_INVALID_ARG, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "7");
        expect_true(R, zero_param(e, NT) == NULL, "zero_param(5) is NULL");
        expect_err(R, e, "zero_param(5)", ZERO_ERR_INVALID_ARG, ZERO_ERR_INVALID_ARG, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "5");
        expect_true(R, zero_grad(e, -3) == NULL, "zero_grad(-3) is NULL");
        expect_err(R, e, "zero_grad(-3)", ZERO_ERR_INVALID_ARG, ZERO_ERR_INVALID_ARG, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "-3");
        {
            float out[4];
            expect_err(R, e, "zero_read_state(9)", zero_read_state(e, 9, ZERO_STATE_MASTER, 0, 1, out),
                       ZERO_ERR_INVALID_ARG, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "9");
        }
        expect_err(R, e, "micro-batch after the misuse", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "zero_step after the misuse", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        break;
    case S_FROZEN:
        expect_true(R, zero_grad(e, FROZEN_T) == NULL, "zero_grad(frozen) is NULL");
        expect_err(R, e, "zero_grad(frozen)", ZERO_ERR_STATE, ZERO_ERR_STATE, ZERO_MSG_ENGINE_FROZEN, T[FROZEN_T].name);
        expect_err(R, e, "zero_grad_ready(frozen)", zero_grad_ready(e, FROZEN_T), ZERO_ERR_STATE, ZERO_MSG_ENGINE_FROZEN,
                   T[FROZEN_T].name);
        /* a frozen tensor's parameters are readable */
        zero_fetch(e, FROZEN_T);
        expect_true(R, zero_param(e, FROZEN_T) != NULL, "zero_param(frozen) after fetch");
        zero_release(e, FROZEN_T);
        expect_err(R, e, "micro-batch after the misuse", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "zero_step after the misuse", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        break;
    case S_NOT_FETCHED: /* stage 3 */
        expect_true(R, zero_param(e, 1) == NULL, "stage 3 zero_param(blk1) without fetch is NULL");
        expect_err(R, e, "zero_param without fetch", ZERO_ERR_STATE, ZERO_ERR_STATE, ZERO_MSG_ENGINE_NOT_FETCHED,
                   T[1].name);
        expect_true(R, zero_param(e, 4) != NULL, "a persistent tensor (blk4.bias, 3 elements) needs no fetch");
        expect_err(R, e, "zero_fetch(blk1)", zero_fetch(e, 1), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_true(R, zero_param(e, 1) != NULL, "zero_param(blk1) after fetch");
        expect_err(R, e, "zero_release(blk1)", zero_release(e, 1), ZERO_OK, ZERO_MSG_NONE, NULL);
        break;
    case S_RELEASE: /* stage 3 */
        expect_err(R, e, "zero_release without fetch", zero_release(e, 0), ZERO_ERR_STATE, ZERO_MSG_ENGINE_RELEASE,
                   T[0].name);
        zero_fetch(e, 0);
        expect_err(R, e, "zero_release after fetch", zero_release(e, 0), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "second zero_release", zero_release(e, 0), ZERO_ERR_STATE, ZERO_MSG_ENGINE_RELEASE, T[0].name);
        expect_err(R, e, "micro-batch after the misuse", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "zero_step after the misuse", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        break;
    case S_POOL_FULL: /* stage 3, max live and prefetch small: a pool of 2 units */
        expect_err(R, e, "fetch blk0", zero_fetch(e, 0), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "fetch blk1", zero_fetch(e, 1), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "fetch blk3 (a third unit)", zero_fetch(e, 3), ZERO_ERR_OUT_OF_MEMORY, ZERO_MSG_ENGINE_POOL_FULL,
                   T[3].name);
        expect_true(R, zero_param(e, 0) != NULL && zero_param(e, 1) != NULL, "the live units stay usable");
        expect_err(R, e, "release blk0", zero_release(e, 0), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "fetch blk3 after a release", zero_fetch(e, 3), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "release blk1", zero_release(e, 1), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "release blk3", zero_release(e, 3), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "micro-batch after the misuse", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "zero_step after the misuse", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        break;
    case S_SKIP_READY:
        /* gradient_accumulation_steps 2; rank 1 alone leaves out zero_grad_ready('blk0.weight') in its first
           micro-batch, so that micro-batch never ends and the next backward's first call finds blk4.bias ready:
           the error names the tensor left out and the rank, not blk4.bias alone. Rank 0 goes on as a correct
           rank would: its collectives find rank 1 gone (its own errors are not what this checks). */
        if (b->rank == 0) {
            micro_batch(e);
            micro_batch(e);
            zero_step(e, &info);
            break;
        }
        for (t = NT - 1; t >= 0; t--) {
            float *g;
            if (t == FROZEN_T) continue;
            zero_fetch(e, t);
            g = (float *)zero_grad(e, t);
            if (g) memset(g, 0, sizeof(float) * (size_t)T[t].numel);
            if (t != 0) expect_err(R, e, "zero_grad_ready", zero_grad_ready(e, t), ZERO_OK, ZERO_MSG_NONE, NULL);
            zero_release(e, t);
        }
        {
            const zero_error *er;
            expect_true(R, zero_grad(e, 4) == NULL, "the next micro-batch's zero_grad('blk4.bias') is NULL");
            expect_err(R, e, "the next micro-batch's zero_grad", ZERO_ERR_STATE, ZERO_ERR_STATE, ZERO_MSG_ENGINE_GRAD_TWICE,
                       "'blk0.weight' has no zero_grad_ready yet");
            er = zero_engine_error(e);
            expect_true(R, er && strstr(er->msg, "on rank 1") && strstr(er->msg, "HINT:"),
                        "the message names the rank and has a HINT");
            expect_true(R, er && !strstr(er->msg, "blk1.weight") && !strstr(er->msg, "blk3.weight"),
                        "the message names no other tensor that is ready");
            expect_err(R, e, "zero_step", zero_step(e, &info), ZERO_ERR_STATE, ZERO_MSG_ENGINE_STEP_EARLY,
                       "on rank 1; in micro-batch 1 'blk0.weight' has no zero_grad_ready yet");
        }
        break;
    case S_DESTROYED:
        expect_err(R, e, "micro-batch", micro_batch(e), ZERO_OK, ZERO_MSG_NONE, NULL);
        expect_err(R, e, "zero_step", zero_step(e, &info), ZERO_OK, ZERO_MSG_NONE, NULL);
        zero_engine_destroy(e);
        expect_true(R, zero_param(e, 0) == NULL, "zero_param after destroy is NULL");
        expect_true(R, zero_grad(e, 0) == NULL, "zero_grad after destroy is NULL");
        expect_err(R, e, "zero_step after destroy", zero_step(e, &info), ZERO_ERR_STATE, ZERO_MSG_ENGINE_DESTROYED, NULL);
        expect_err(R, e, "zero_fetch after destroy", zero_fetch(e, 0), ZERO_ERR_STATE, ZERO_MSG_ENGINE_DESTROYED, NULL);
        expect_err(R, e, "zero_grad_ready after destroy", zero_grad_ready(e, 0), ZERO_ERR_STATE, ZERO_MSG_ENGINE_DESTROYED,
                   NULL);
        {
            zero_memory_stats ms;
            expect_true(R, zero_memory_report(e, &ms) != ZERO_OK, "zero_memory_report after destroy fails");
        }
        zero_engine_destroy(e); /* twice: no crash */
        return ZERO_OK;
    }
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void run_scenario(int which, int stage, int world, int gas) {
    scen S;
    zero_error err;
    zero_result r;
    char name[160];
    S.which = which;
    S.cfg = base_cfg(stage, world, gas);
    if (which == S_POOL_FULL) {
        /* max live and prefetch as small as they go: the pool keeps the
           minimum of 2 of the largest units */
        S.cfg.zero_optimization.stage3_max_live_parameters = 1;
        S.cfg.zero_optimization.stage3_prefetch_bucket_size = 1;
        S.cfg.zero_optimization.stage3_max_reuse_distance = 0;
    }
    memset(recs, 0, sizeof recs);
    r = zero_host_run(world, scen_fn, &S, &err);
    snprintf(name, sizeof name, "%s (stage %d, world %d)", scen_name[which], stage, world);
    CHECKF(r == ZERO_OK, "%s: zero_host_run: %s", name, err.msg);
    collect(name, world);
}

/* ---------------------------------------------------------------------- */
/* create with bad arguments                                               */

typedef struct bad {
    zero_config cfg;
    const zero_tensor *t;
    int n;
    zero_result r[MAXW];
    zero_error err[MAXW];
    int null_out[MAXW];
    int no_groups; /* the backend without its group collectives */
} bad;

static zero_result bad_fn(const zero_backend *b, void *arg) {
    bad *B = (bad *)arg;
    zero_engine *e = (zero_engine *)(uintptr_t)8;
    zero_backend nb;
    if (B->no_groups) {
        nb = *b;
        nb.groups_init = NULL;
        nb.group_all_reduce = NULL;
        b = &nb;
    }
    B->r[b->rank] = zero_engine_create(&e, &B->cfg, B->t, B->n, b, &B->err[b->rank]);
    B->null_out[b->rank] = e == NULL || e == (zero_engine *)(uintptr_t)8;
    if (B->r[b->rank] == ZERO_OK && e) zero_engine_destroy(e);
    return ZERO_OK;
}

static void expect_create_fails(const char *what, bad *B, int world, zero_msg item, const char *name) {
    zero_error err;
    int r;
    CHECKF(zero_host_run(world, bad_fn, B, &err) == ZERO_OK, "%s: %s", what, err.msg);
    for (r = 0; r < world; r++) {
        CHECKF(B->r[r] != ZERO_OK, "%s: rank %d: accepted", what, r);
        CHECKF(B->null_out[r], "%s: rank %d: *out not left NULL", what, r);
        CHECKF(B->err[r].code == B->r[r], "%s: err.code", what);
        if (item != ZERO_MSG_NONE)
            CHECKF(B->err[r].item == item, "%s: item %s want %s (%s)", what, zero_msg_name(B->err[r].item), zero_msg_name(item),
                   B->err[r].msg);
        if (name) CHECKF(strstr(B->err[r].msg, name) != NULL, "%s: message lacks \"%s\": %s", what, name, B->err[r].msg);
    }
}

static void test_bad_create(void) {
    static bad B;
    zero_tensor t2[NT];
    memset(&B, 0, sizeof B);
    B.cfg = base_cfg(2, 2, 1);
    B.t = T;
    B.n = NT;
    B.cfg.resolved = 0;
    B.cfg = zero_config_default(); /* never resolved */
    expect_create_fails("unresolved config", &B, 2, ZERO_MSG_NONE, "resolve");
    B.cfg = base_cfg(2, 4, 1); /* resolved for 4 ranks, run on 2 */
    expect_create_fails("config resolved for another world size", &B, 2, ZERO_MSG_NONE, "4");
    B.cfg = base_cfg(2, 2, 1);
    memcpy(t2, T, sizeof t2);
    t2[3].numel = 0;
    B.t = t2;
    expect_create_fails("a tensor with 0 elements", &B, 2, ZERO_MSG_LAYOUT_TENSOR, T[3].name);
    t2[3].numel = T[3].numel;
    t2[4].name = T[1].name;
    expect_create_fails("duplicate tensor names", &B, 2, ZERO_MSG_LAYOUT_DUPLICATE_NAME, T[1].name);
    memcpy(t2, T, sizeof t2);
    {
        int i;
        for (i = 0; i < NT; i++) t2[i].flags |= ZERO_TENSOR_FROZEN;
    }
    expect_create_fails("every tensor frozen", &B, 2, ZERO_MSG_ENGINE_CONFIG, "frozen");
    B.t = NULL;
    expect_create_fails("tensors NULL", &B, 2, ZERO_MSG_NONE, NULL);
    B.t = T;
    B.n = 0;
    expect_create_fails("no tensors", &B, 2, ZERO_MSG_NONE, NULL);
    B.n = NT;
    /* hybrid sharding: a backend without group collectives; a shard size
       changed after zero_config_resolve checked it */
    B.cfg = base_cfg(2, 4, 1);
    B.cfg.zero_optimization.mics_shard_size = 2;
    B.no_groups = 1;
    expect_create_fails("mics_shard_size without group collectives", &B, 4, ZERO_MSG_ENGINE_CONFIG, "groups_init");
    B.no_groups = 0;
    B.cfg.zero_optimization.mics_shard_size = 3;
    expect_create_fails("mics_shard_size 3 on 4 ranks", &B, 4, ZERO_MSG_ENGINE_CONFIG, "mics_shard_size");
    B.cfg = base_cfg(0, 4, 1);
    B.cfg.zero_optimization.mics_shard_size = 2;
    expect_create_fails("mics_shard_size at stage 0", &B, 4, ZERO_MSG_ENGINE_CONFIG, "stage 1, 2 or 3");
    {
        zero_error err;
        zero_config c = base_cfg(1, 1, 1);
        zero_engine *e = NULL;
        CHECK(zero_engine_create(&e, &c, T, NT, NULL, &err) != ZERO_OK); /* no backend */
        CHECK(e == NULL);
        CHECK(zero_engine_create(NULL, &c, T, NT, NULL, NULL) != ZERO_OK);
    }
    /* NULL engine everywhere */
    CHECK(zero_param(NULL, 0) == NULL);
    CHECK(zero_grad(NULL, 0) == NULL);
    CHECK(zero_step(NULL, NULL) != ZERO_OK);
    CHECK(zero_fetch(NULL, 0) != ZERO_OK);
    CHECK(zero_grad_ready(NULL, 0) != ZERO_OK);
    zero_engine_destroy(NULL);
}

int main(void) {
    zt_seed("test_engine_misuse");
    model_setup();
    run_scenario(S_GRAD_TWICE, 0, 2, 1);
    run_scenario(S_GRAD_TWICE, 2, 2, 1);
    run_scenario(S_GRAD_TWICE, 3, 2, 1);
    run_scenario(S_STEP_EARLY, 1, 2, 1);
    run_scenario(S_STEP_EARLY, 3, 2, 1);
    run_scenario(S_STEP_EARLY_GAS, 0, 2, 3);
    run_scenario(S_STEP_EARLY_GAS, 2, 2, 3);
    run_scenario(S_STEP_MISSING, 1, 2, 2);
    run_scenario(S_STEP_MISSING, 3, 2, 2);
    run_scenario(S_UNKNOWN, 1, 2, 1);
    run_scenario(S_UNKNOWN, 3, 1, 1);
    run_scenario(S_FROZEN, 0, 1, 1);
    run_scenario(S_FROZEN, 3, 2, 1);
    run_scenario(S_NOT_FETCHED, 3, 2, 1);
    run_scenario(S_RELEASE, 3, 2, 1);
    run_scenario(S_POOL_FULL, 3, 2, 1);
    run_scenario(S_DESTROYED, 0, 1, 1);
    run_scenario(S_DESTROYED, 3, 2, 1);
    run_scenario(S_SKIP_READY, 0, 2, 2);
    run_scenario(S_SKIP_READY, 2, 2, 2);
    run_scenario(S_SKIP_READY, 3, 2, 2);
    test_bad_create();
    return zt_finish();
}
