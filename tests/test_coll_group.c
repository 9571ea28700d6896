/* test_coll_group.c - groups of collectives (the backend's coll_group_begin
   and coll_group_end), on host ranks.

   The host backend as a group's reference: the collectives called inside a
   group run at coll_group_end (their outputs untouched before it, right
   after it, on 2 and 3 ranks, all-gather, reduce-scatter and all-reduce
   mixed); any other stream operation inside a group is refused naming the
   call; a nested begin, an end without a begin and a group of more than 256
   collectives are refused.

   The engine at stage 3 groups two things: the persistent tensors'
   all-gathers after each step, and their gradients' reduce-scatters, which
   wait for the end of each micro-batch's backward (their gradients in
   buffers of their own). Over a model of many small tensors between large
   ones (DeepSpeed's persistence threshold, a threshold of 50, and none),
   world 1, 2 and 3, gas 1 and 2, fp32, bf16 and fp16, weights and norms are
   bitwise those of the same run with ZERO_COLL_GROUP=0 (each collective
   alone), and the same through the whole run; a wrapper counts the groups
   (each at most 128 collectives): one per micro-batch for the reductions
   and one per step for the gathers where the persistent units fit in one,
   more where they do not (300 persistent units: 3 and 3); none with
   ZERO_COLL_GROUP=0 or check_collectives; the gathers' alone with
   mics_shard_size (hybrid: the reductions go on to the replicas) and with
   the optimizer offloaded (its gradients take the host's path). The memory
   report names the persistent spans' gradient buffers.

   Run alone: make test T=test_coll_group */
#define _POSIX_C_SOURCE 200809L /* setenv */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

/* ---- the host backend's contract ---- */

typedef struct hjob {
    int fails;
    char msg[4][1100];
} hjob;

static zero_result host_fn(const zero_backend *b, void *arg) {
    hjob *J = (hjob *)arg;
    int r = b->rank, w = b->world, i;
    float ag_send[4], ag_recv[4 * 3], rs_send[6 * 3], rs_recv[6], ar[5], tmp[2];
    zero_error err;
    for (i = 0; i < 4; i++) ag_send[i] = (float)(10 * r + i);
    for (i = 0; i < 4 * w; i++) ag_recv[i] = -1;
    for (i = 0; i < 6 * w; i++) rs_send[i] = (float)(r + 1) * (float)(i + 1);
    for (i = 0; i < 6; i++) rs_recv[i] = -1;
    for (i = 0; i < 5; i++) ar[i] = (float)(r + i);
    if (b->coll_group_begin(b->ctx, &err) != ZERO_OK) return J->fails++, err.code;
    if (b->all_gather(b->ctx, ag_send, ag_recv, 4, ZERO_DTYPE_FP32, ZERO_STREAM_COMM, &err) != ZERO_OK ||
        b->reduce_scatter(b->ctx, rs_send, rs_recv, 6, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM, &err) != ZERO_OK ||
        b->all_reduce(b->ctx, ar, ar, 5, ZERO_DTYPE_FP32, ZERO_OP_SUM, ZERO_STREAM_COMM, &err) != ZERO_OK)
        return J->fails++, err.code;
    /* queued, not run */
    for (i = 0; i < 4 * w; i++)
        if (ag_recv[i] != -1) J->fails++;
    for (i = 0; i < 6; i++)
        if (rs_recv[i] != -1) J->fails++;
    if (ar[0] != (float)r) J->fails++;
    /* anything else inside the group is refused, naming the call */
    if (b->copy(b->ctx, tmp, ar, sizeof tmp, ZERO_STREAM_COMM, &err) != ZERO_ERR_INVALID_ARG ||
        !strstr(err.msg, "copy") || !strstr(err.msg, "collective group"))
        J->fails++;
    snprintf(J->msg[r], sizeof J->msg[r], "%s", err.msg);
    if (b->coll_group_begin(b->ctx, &err) == ZERO_OK || !strstr(err.msg, "nest")) J->fails++;
    if (b->coll_group_end(b->ctx, &err) != ZERO_OK) return J->fails++, err.code;
    for (i = 0; i < 4 * w; i++)
        if (ag_recv[i] != (float)(10 * (i / 4) + i % 4)) J->fails++;
    for (i = 0; i < 6; i++) {
        float want = 0;
        int k;
        for (k = 0; k < w; k++) want += (float)(k + 1) * (float)(6 * r + i + 1);
        if (rs_recv[i] != want) J->fails++;
    }
    for (i = 0; i < 5; i++)
        if (ar[i] != (float)(w * (w - 1) / 2 + w * i)) J->fails++;
    /* the stream operations work again; an end without a begin is refused */
    if (b->copy(b->ctx, tmp, ar, sizeof tmp, ZERO_STREAM_COMM, &err) != ZERO_OK) J->fails++;
    if (b->coll_group_end(b->ctx, &err) == ZERO_OK || !strstr(err.msg, "no group")) J->fails++;
    /* at most 256 in one group */
    if (b->coll_group_begin(b->ctx, &err) != ZERO_OK) return J->fails++, err.code;
    for (i = 0; i < 256; i++)
        if (b->all_reduce(b->ctx, ar, ar, 1, ZERO_DTYPE_FP32, ZERO_OP_MAX, ZERO_STREAM_COMM, &err) != ZERO_OK) J->fails++;
    if (b->all_reduce(b->ctx, ar, ar, 1, ZERO_DTYPE_FP32, ZERO_OP_MAX, ZERO_STREAM_COMM, &err) == ZERO_OK ||
        !strstr(err.msg, "more than 256"))
        J->fails++;
    if (b->coll_group_end(b->ctx, &err) != ZERO_OK) J->fails++;
    return ZERO_OK;
}

static void test_host_contract(void) {
    int w;
    for (w = 2; w <= 3; w++) {
        hjob J;
        zero_error err;
        memset(&J, 0, sizeof J);
        CHECKF(zero_host_run(w, host_fn, &J, &err) == ZERO_OK, "world %d: %s", w, err.msg);
        CHECKF(J.fails == 0, "world %d: %d checks of the host group failed (rank 0 said: %s)", w, J.fails, J.msg[0]);
    }
    printf("host backend: groups run at their end, refuse other calls, nesting and more than 256 collectives\n");
}

/* ---- the host backend's window memory (win_alloc): symmetric use, or an error naming it ---- */

typedef struct wjob {
    int mode; /* 0: symmetric use; 1: the send at another offset on rank 1; 2: another size on rank 1 */
    zero_result r[4];
    char msg[4][1100];
    float got[4][8];
} wjob;

static zero_result win_fn(const zero_backend *b, void *arg) {
    wjob *J = (wjob *)arg;
    int r = b->rank, i;
    float *win = NULL;
    zero_error err;
    memset(&err, 0, sizeof err);
    J->r[r] = b->win_alloc(b->ctx, (J->mode == 2 && r == 1 ? 48 : 64) * sizeof(float), (void **)&win, &err);
    if (J->r[r] == ZERO_OK) {
        const int at = J->mode == 1 && r == 1 ? 8 : 0; /* the send's offset in the window */
        for (i = 0; i < 4; i++) win[at + i] = (float)(10 * r + i);
        J->r[r] = b->all_gather(b->ctx, win + at, win + 32, 4, ZERO_DTYPE_FP32, ZERO_STREAM_COMM, &err);
        if (J->r[r] == ZERO_OK) memcpy(J->got[r], win + 32, sizeof J->got[r]);
    }
    snprintf(J->msg[r], sizeof J->msg[r], "%s", err.msg);
    if (win) b->win_free(b->ctx, win);
    if (J->r[r] == ZERO_OK && J->mode == 0) { /* freed numbers are taken again: far more windows made than held at once */
        for (i = 0; i < 40 && J->r[r] == ZERO_OK; i++) {
            J->r[r] = b->win_alloc(b->ctx, 256, (void **)&win, &err);
            if (J->r[r] == ZERO_OK) b->win_free(b->ctx, win);
        }
        if (J->r[r] != ZERO_OK) snprintf(J->msg[r], sizeof J->msg[r], "window %d: %s", i, err.msg);
    }
    return J->r[r];
}

static void test_host_windows(void) {
    int mode, r, i;
    for (mode = 0; mode < 3; mode++) {
        wjob J;
        zero_error err;
        zero_result res;
        memset(&J, 0, sizeof J);
        J.mode = mode;
        res = zero_host_run(2, win_fn, &J, &err);
        if (mode == 0) {
            CHECKF(res == ZERO_OK && J.r[0] == ZERO_OK && J.r[1] == ZERO_OK, "windows, symmetric: %s / %s", J.msg[0], J.msg[1]);
            for (r = 0; r < 2; r++)
                for (i = 0; i < 8; i++)
                    CHECKF(J.got[r][i] == (float)(10 * (i / 4) + i % 4), "windows rank %d [%d]: %g", r, i, (double)J.got[r][i]);
        } else {
            CHECKF(res != ZERO_OK && J.r[0] != ZERO_OK, "windows, mode %d: not refused", mode);
            CHECK_STR_CONTAINS(mode == 1 ? J.msg[0] : J.msg[1], mode == 1 ? "not symmetric" : "same size on every rank");
        }
    }
    printf("host backend: window memory gathers alike on every rank; another offset or size is refused, named\n");
}

/* ---- the engine ---- */

enum { NT = 14, MANY = 301, STEPS = 3, MAXW = 3 };
/* a layer's large weights between small biases and norms; "head" is split
   into pieces by the bucket (never persistent) */
static const int64_t SIZES[NT] = {7, 300, 5, 260, 9, 3, 280, 6, 11, 240, 4, 8, 900, 2};

typedef struct ejob {
    int world, stage, gas, dtype;
    int64_t persist;   /* stage3_param_persistence_threshold; -1: the default */
    int check, hybrid, offload;
    int many;          /* MANY tensors: 300 of 3 elements, each its own group, and one of 900 */
    int groups[MAXW];  /* coll_group_end calls per rank */
    float master[MAXW][2200];
    double norm[STEPS];
    int persist_spans;
    size_t persist_bytes;
    zero_result r[MAXW];
    char msg[MAXW][1100];
} ejob;

static int64_t size_of(const ejob *J, int t) { return J->many ? (t == MANY - 1 ? 900 : 3) : SIZES[t]; }

static zero_result (*base_end[MAXW])(void *, zero_error *);
static int *count_at[MAXW];
static void *ctx_at[MAXW];
static zero_result count_end(void *ctx, zero_error *err) {
    int k;
    for (k = 0; k < MAXW; k++)
        if (ctx_at[k] == ctx) {
            (*count_at[k])++;
            return base_end[k](ctx, err);
        }
    if (err) {
        memset(err, 0, sizeof *err);
        err->code = ZERO_ERR_INVALID_ARG, err->item = ZERO_MSG_BAD_ARG;
        snprintf(err->msg, sizeof err->msg, "count_end: unknown ctx");
    }
    return ZERO_ERR_INVALID_ARG;
}

static zero_result engine_fn(const zero_backend *b0, void *arg) {
    ejob *J = (ejob *)arg;
    zero_backend b = *b0;
    zero_config c = zero_config_default();
    static zero_tensor tsw[MAXW][MANY];
    zero_tensor *ts = tsw[b0->rank];
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    int rank = b0->rank, s, m, t, nt = J->many ? MANY : NT;
    int64_t off = 0;
    static const zt_wave wave = {0.3, 0, 0.7, 0.011, 1};
    base_end[rank] = b0->coll_group_end;
    count_at[rank] = &J->groups[rank];
    ctx_at[rank] = b0->ctx;
    if (b.coll_group_end) b.coll_group_end = count_end;
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = 512;
    if (J->persist >= 0) c.zero_optimization.stage3_param_persistence_threshold = J->persist;
    if (J->hybrid) c.zero_optimization.mics_shard_size = 1;
    if (J->offload) c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    c.check_collectives = J->check;
    c.optimizer.lr = 1e-2;
    c.optimizer.weight_decay = 0.05;
    c.gradient_clipping = 0.5;
    c.log.level = ZERO_LOG_LEVEL_COUNT;
    if (J->dtype == ZERO_DTYPE_FP16) c.fp16.enabled = 1, c.fp16.initial_scale_power = 8;
    if (J->dtype == ZERO_DTYPE_BF16) c.bf16.enabled = 1;
    memset(ts, 0, sizeof(zero_tensor) * MANY);
    for (t = 0; t < nt; t++) {
        static char names[MAXW][MANY][16]; /* (one set per rank thread) */
        snprintf(names[rank][t], sizeof names[rank][t], "t%d", t);
        ts[t].name = names[rank][t];
        ts[t].numel = size_of(J, t);
        ts[t].init = zt_init_wave;
        ts[t].init_user = (void *)&wave;
        ts[t].group = J->many ? t : t / 5;
    }
    if (zero_config_resolve(&c, b.world, &err) != ZERO_OK || (r = zero_engine_create(&e, &c, ts, nt, &b, &err)) != ZERO_OK) {
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
        return J->r[rank] = err.code;
    }
    for (s = 0; s < STEPS; s++) {
        zero_step_info in;
        for (m = 0; m < J->gas; m++)
            for (t = nt - 1; t >= 0; t--) {
                void *w, *g;
                int64_t i;
                if (J->stage == 3 && (r = zero_fetch(e, t)) != ZERO_OK) goto out;
                w = zero_param(e, t), g = zero_grad(e, t);
                if (!w || !g) {
                    r = zero_engine_error(e)->code;
                    goto out;
                }
                for (i = 0; i < size_of(J, t); i++)
                    zt_store(g, (zero_dtype)J->dtype, i,
                             zt_load(w, (zero_dtype)J->dtype, i) - 0.05f * (float)((s + m + rank + i + t) % 7));
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) goto out;
                if (J->stage == 3 && (r = zero_release(e, t)) != ZERO_OK) goto out;
            }
        if ((r = zero_step(e, &in)) != ZERO_OK) goto out;
        if (rank == 0) J->norm[s] = in.grad_norm;
    }
    for (t = 0; t < nt; t++) {
        zero_read_state(e, t, ZERO_STATE_MASTER, 0, size_of(J, t), J->master[rank] + off);
        off += size_of(J, t);
    }
    if (rank == 0) {
        zero_memory_stats ms;
        zero_memory_report(e, &ms);
        J->persist_spans = ms.grad_persist_spans;
        J->persist_bytes = ms.grad_persist_bytes;
    }
    r = ZERO_OK;
out:
    if (r != ZERO_OK) snprintf(J->msg[rank], sizeof J->msg[rank], "%s", zero_engine_error(e)->msg);
    J->r[rank] = r;
    zero_engine_destroy(e);
    return r;
}

static int erun(ejob *J, int grouped) {
    zero_error err;
    int k, ok = 1;
    if (grouped)
        unsetenv("ZERO_COLL_GROUP");
    else
        setenv("ZERO_COLL_GROUP", "0", 1);
    memset(J->groups, 0, sizeof J->groups);
    for (k = 0; k < MAXW; k++) J->r[k] = ZERO_OK;
    zero_host_run(J->world, engine_fn, J, &err);
    unsetenv("ZERO_COLL_GROUP");
    for (k = 0; k < J->world; k++)
        if (J->r[k] != ZERO_OK) {
            CHECKF(0, "world %d stage %d: rank %d: %s", J->world, J->stage, k, J->msg[k]);
            ok = 0;
        }
    return ok;
}

static void test_engine(void) {
    static const int dts[3] = {ZERO_DTYPE_FP32, ZERO_DTYPE_BF16, ZERO_DTYPE_FP16};
    static const int64_t persists[3] = {-1, 50, 0};
    int w, gas, d, p, runs = 0, grouped_runs = 0;
    static ejob A, B;
    for (w = 1; w <= 3; w++)
        for (gas = 1; gas <= 2; gas++)
            for (d = 0; d < 3; d++)
                for (p = 0; p < 3; p++) {
                    int k;
                    memset(&A, 0, sizeof A);
                    A.world = w, A.stage = 3, A.gas = gas, A.dtype = dts[d], A.persist = persists[p];
                    B = A;
                    if (!erun(&A, 1) || !erun(&B, 0)) continue;
                    runs++;
                    for (k = 0; k < w; k++)
                        CHECKF(!memcmp(A.master[k], B.master[k], sizeof A.master[k]),
                               "world %d gas %d dtype %d persistence %lld rank %d: master weights differ with groups", w,
                               gas, dts[d], (long long)persists[p], k);
                    CHECKF(!memcmp(A.norm, B.norm, sizeof A.norm), "world %d gas %d: norms differ with groups", w, gas);
                    for (k = 0; k < w; k++) CHECKF(B.groups[k] == 0, "ZERO_COLL_GROUP=0: %d groups", B.groups[k]);
                    if (persists[p] == 0) {
                        CHECKF(A.persist_spans == 0 && A.groups[0] == 0, "no persistent tensors: %d spans, %d groups",
                               A.persist_spans, A.groups[0]);
                    } else {
                        /* a reduction group per micro-batch, a gather group per step (the persistent units are few) */
                        for (k = 0; k < w; k++)
                            CHECKF(A.groups[k] == STEPS * (gas + 1), "world %d gas %d rank %d: %d groups, want %d", w,
                                   gas, k, A.groups[k], STEPS * (gas + 1));
                        CHECKF(A.persist_spans >= 4 && A.persist_bytes > 0 && B.persist_spans == 0,
                               "persistent spans' gradient buffers: %d (%zu bytes) grouped, %d not", A.persist_spans,
                               A.persist_bytes, B.persist_spans);
                        grouped_runs++;
                    }
                }
    printf("stage 3: %d runs bitwise equal with and without groups (%d of them grouped)\n", runs, grouped_runs);
    CHECK(runs == 54 && grouped_runs == 36);

    /* groups off with check_collectives; hybrid sharding and the optimizer offloaded: the gathers only */
    {
        static const char *what[3] = {"check_collectives", "mics_shard_size 1", "offload_optimizer cpu"};
        int k;
        for (k = 0; k < 3; k++) {
            memset(&A, 0, sizeof A);
            A.world = 2, A.stage = 3, A.gas = 2, A.dtype = ZERO_DTYPE_FP32, A.persist = -1;
            A.check = k == 0, A.hybrid = k == 1, A.offload = k == 2;
            B = A;
            if (!erun(&A, 1) || !erun(&B, 0)) continue;
            CHECKF(!memcmp(A.master, B.master, sizeof A.master), "%s: master weights differ", what[k]);
            CHECKF(A.persist_spans == 0, "%s: %d persistent gradient buffers", what[k], A.persist_spans);
            CHECKF(A.groups[0] == (k == 0 ? 0 : STEPS), "%s: %d groups", what[k], A.groups[0]);
        }
    }
    /* 300 persistent units (each tensor a group of its own): groups of at most 128, so 3 a micro-batch
       and 3 a step */
    {
        memset(&A, 0, sizeof A);
        A.world = 2, A.stage = 3, A.gas = 2, A.dtype = ZERO_DTYPE_BF16, A.persist = -1, A.many = 1;
        B = A;
        if (erun(&A, 1) && erun(&B, 0)) {
            CHECKF(!memcmp(A.master, B.master, sizeof A.master), "300 persistent units: master weights differ");
            CHECKF(A.groups[0] == STEPS * (3 * 2 + 3) && A.groups[1] == A.groups[0],
                   "300 persistent units: %d and %d groups, want %d", A.groups[0], A.groups[1], STEPS * 9);
            CHECKF(A.persist_spans == MANY - 1, "300 persistent units: %d spans", A.persist_spans);
        }
    }
    printf("stage 3: groups off with check_collectives, the reductions alone with mics_shard_size and with the "
           "optimizer offloaded; 300 persistent units in groups of at most 128\n");
}

int main(void) {
    zt_seed("test_coll_group");
    test_host_contract();
    test_host_windows();
    test_engine();
    return zt_finish();
}
