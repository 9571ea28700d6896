/* test_engine_world1.c - stage 2 on one rank with one micro-batch: the
   backward writes its gradients straight into the owned accumulator (one
   rank owns every unit whole), so the reduce-scatter is in place and no
   copy of the gradients reaches the backend.

   One model on host ranks: a split tensor with ZERO_TENSOR_GRAD_ANY_ORDER
   (a slot of its own, asked for first and finished last), a split tensor
   written in two passes (+=), a frozen tensor, a ZERO_TENSOR_GRAD_WRITE
   tensor, a tensor marked ready without asking for its buffer, and spans
   that take the two ring slots in turn. AdamW with clipping on; fp16 gets
   an inf gradient in one step (skipped). At world 1 stage 2 equals stage 1
   bit for bit (master weights, compute-dtype parameters, every step's norm)
   in fp32, fp16 and bf16, with gas 1 and with gas 2; the norm also matches
   the test's own sum of squares. A wrapper around the host backend counts
   reduce_scatter calls: none at world 1 stage 2 gas 1, and no gradient ring
   in the memory plan; at gas 2 the ring is there and fp32 (accumulating in
   its compute dtype) reduces every trainable unit of the first micro-batch
   into the accumulator; at world 2 every unit is reduce-scattered on every
   rank (the counter sees the calls).

   Without the flag the engine finds emb open across the backward in the
   first micro-batch (a third span asks for a slot while emb's and another
   are open): that span gets a stand-in slot, emb's span a slot of its own
   from the next micro-batch on. The weights, norms and reduce_scatter calls
   then equal the flagged run's bit for bit (stages 2 and 3, world 1 and 2,
   gas 1 and 2, every dtype), and the gradient memory planned after the
   first step is the flagged plan's. Misuse stays an error naming the
   tensor: a gradient asked for again after its zero_grad_ready in the same
   micro-batch (ENGINE_GRAD_TWICE), and zero_step after a backward that
   never readies a tensor (ENGINE_STEP_EARLY).

   Run alone: make test T=test_engine_world1 */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

enum { NT = 7, STEPS = 4, MAXW = 2, TOTAL = 300 + 37 + 1000 + 50 + 129 + 5 + 77, INF_STEP = 2 };
static const int64_t SIZES[NT] = {300, 37, 1000, 50, 129, 5, 77};
static const char *const NAMES[NT] = {"emb", "a", "big", "frozen", "w", "b", "c"};
enum { T_EMB, T_A, T_BIG, T_FROZEN, T_W, T_B, T_C };

typedef struct job {
    int stage, dtype, world, gas;
    int no_hint;       /* emb without ZERO_TENSOR_GRAD_ANY_ORDER: the engine finds it */
    size_t grads_end;  /* GRADS on the device after the run, rank 0 */
    int own_spans, own_found; /* ... of them: spans with a slot of their own, and found ones */
    char report[2048];        /* zero_memory_stats_format after the run */
    zero_result r[MAXW];
    char msg[MAXW][1024];
    float master[MAXW][TOTAL], param[MAXW][TOTAL];
    double norm[MAXW][STEPS], want_norm[MAXW][STEPS];
    int applied[MAXW][STEPS];
    int trainable_units;
    size_t ring_bytes; /* GRADS on the device, rank 0 */
} job;

static volatile int n_rs; /* reduce_scatter calls that reached the backend */
static zero_result (*orig_rs)(void *, const void *, void *, size_t, zero_dtype, zero_op, zero_stream_id, zero_error *);
static zero_result count_rs(void *ctx, const void *send, void *recv, size_t n, zero_dtype dt, zero_op op, zero_stream_id s,
                            zero_error *err) {
    __atomic_add_fetch(&n_rs, 1, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&orig_rs, __ATOMIC_SEQ_CST)(ctx, send, recv, n, dt, op, s, err);
}

static void init_cb(void *u, int t, int64_t off, int64_t n, float *out) {
    int64_t i;
    (void)u;
    for (i = 0; i < n; i++) out[i] = (float)(0.03 * (double)((t * 11 + off + i) % 13) - 0.18);
}

/* pass 0 and 1 of a gradient value (loss scale 1); every value is a few
   hundredths, so the fp16 loss scale 65536 stays finite */
static float gval(int step, int micro, int rank, int t, int64_t i, int pass) {
    return (float)(0.01 * (double)((step * 5 + micro * 7 + rank * 3 + t * 7 + i * (pass + 1)) % 17) - 0.08);
}

static int64_t toff(int t) {
    int64_t o = 0;
    int k;
    for (k = 0; k < t; k++) o += SIZES[k];
    return o;
}

/* g[i] = v, or g[i] += v in the dtype's rounding (what a kernel storing
   the compute dtype does) */
static void put(void *g, zero_dtype dt, int64_t i, float v, int add) {
    zt_store(g, dt, i, add ? zt_round(dt, zt_load(g, dt, i) + zt_round(dt, v)) : v);
}

/* one micro-batch's backward: reverse order, emb asked first and finished
   last, big written twice, b never asked; *sum gets the test's own sum of
   squares of the scaled gradient this micro-batch adds (summed over micro-batches
   below, per element) */
static zero_result backward(zero_engine *e, int step, int micro, int rank, zero_dtype dt, float *acc) {
    float S = (float)zero_loss_scale(e);
    void *emb = zero_grad(e, T_EMB), *g;
    int t;
    int64_t i;
    zero_result r;
    if (!emb) return zero_engine_error(e)->code;
    for (i = 0; i < SIZES[T_EMB]; i++) put(emb, dt, i, gval(step, micro, rank, T_EMB, i, 0) * S, 1);
    for (t = NT - 1; t >= 1; t--) {
        if (t == T_FROZEN) continue;
        if (t == T_B) {
            if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
            continue;
        }
        if (!(g = zero_grad(e, t))) return zero_engine_error(e)->code;
        for (i = 0; i < SIZES[t]; i++) {
            float v = gval(step, micro, rank, t, i, 0) * S;
            if (t == T_A && step == INF_STEP && i == 3 && dt == ZERO_DTYPE_FP16) v = INFINITY;
            put(g, dt, i, v, t != T_W);
        }
        if (t == T_BIG)
            for (i = 0; i < SIZES[t]; i++) put(g, dt, i, gval(step, micro, rank, t, i, 1) * S, 1);
        if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
    }
    for (i = 0; i < SIZES[T_EMB]; i++) put(emb, dt, i, gval(step, micro, rank, T_EMB, i, 1) * S, 1);
    if ((r = zero_grad_ready(e, T_EMB)) != ZERO_OK) return r;
    /* the gradient as the engine holds it, unscaled (every rank the same
       computation, so rank 0's view of the average is what all see) */
    for (t = 0; t < NT; t++) {
        float tmp[1000];
        if (t == T_FROZEN || t == T_B) continue;
        for (i = 0; i < SIZES[t]; i++) {
            float v0 = zt_round(dt, gval(step, micro, rank, t, i, 0) * S), v;
            if (t == T_EMB || t == T_BIG) v = zt_round(dt, v0 + zt_round(dt, gval(step, micro, rank, t, i, 1) * S));
            else v = v0;
            tmp[i] = v;
        }
        for (i = 0; i < SIZES[t]; i++) acc[toff(t) + i] += tmp[i] / S;
    }
    return ZERO_OK;
}

static zero_result run(zero_engine *e, job *J, int rank) {
    zero_dtype dt = (zero_dtype)J->dtype;
    int s, m, t;
    zero_result r;
    static float acc[MAXW][TOTAL];
    for (s = 0; s < STEPS; s++) {
        zero_step_info info;
        double sum = 0;
        int64_t i;
        memset(acc[rank], 0, sizeof acc[rank]);
        for (m = 0; m < J->gas; m++) {
            for (t = 0; t < NT; t++)
                if ((r = zero_fetch(e, t)) != ZERO_OK || (r = zero_release(e, t)) != ZERO_OK) return r;
            if ((r = backward(e, s, m, rank, dt, acc[rank])) != ZERO_OK) return r;
        }
        /* each rank's own sum; the ranks' gradients differ, so at world 2
           this is only a bound-free record (checked at world 1) */
        for (i = 0; i < TOTAL; i++) sum += (double)acc[rank][i] * acc[rank][i];
        J->want_norm[rank][s] = sqrt(sum) / J->gas;
        if ((r = zero_step(e, &info)) != ZERO_OK) return r;
        J->norm[rank][s] = info.grad_norm;
        J->applied[rank][s] = info.applied;
    }
    return ZERO_OK;
}

static void config(zero_config *c, const job *J) {
    *c = zero_config_default();
    c->train_micro_batch_size_per_gpu = 1;
    c->gradient_accumulation_steps = J->gas;
    c->zero_optimization.stage = J->stage;
    c->zero_optimization.reduce_bucket_size = 256;
    c->optimizer.type = ZERO_OPTIMIZER_ADAMW;
    c->optimizer.weight_decay = 0.1;
    c->optimizer.lr = 1e-2;
    c->gradient_clipping = 0.05;
    c->log.level = ZERO_LOG_LEVEL_COUNT;
    /* no persistent tensors: at stage 3 they would have gradient buffers of their own (reduced in one group at
       the micro-batch's end), leaving the ring to emb and big alone, where nothing needs finding */
    c->zero_optimization.stage3_param_persistence_threshold = 0;
    if (J->dtype == ZERO_DTYPE_FP16) c->fp16.enabled = 1;
    if (J->dtype == ZERO_DTYPE_BF16) c->bf16.enabled = 1;
}

static void tensors(zero_tensor *ts, int hint) {
    int t;
    memset(ts, 0, sizeof(zero_tensor) * NT);
    for (t = 0; t < NT; t++) {
        ts[t].name = NAMES[t];
        ts[t].numel = SIZES[t];
        ts[t].group = t;
        ts[t].init = init_cb;
    }
    ts[T_EMB].flags = hint ? ZERO_TENSOR_GRAD_ANY_ORDER : 0;
    ts[T_FROZEN].flags = ZERO_TENSOR_FROZEN;
    ts[T_W].flags = ZERO_TENSOR_GRAD_WRITE;
}

static zero_result rank_fn(const zero_backend *b0, void *arg) {
    job *J = (job *)arg;
    zero_backend b = *b0;
    zero_config c;
    zero_tensor ts[NT];
    zero_error err;
    zero_engine *e;
    int t, rank = b0->rank;
    __atomic_store_n(&orig_rs, b0->reduce_scatter, __ATOMIC_SEQ_CST);
    b.reduce_scatter = count_rs;
    tensors(ts, !J->no_hint);
    config(&c, J);
    if (zero_config_resolve(&c, b.world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, &b, &err) != ZERO_OK) {
        J->r[rank] = err.code;
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
        return ZERO_OK;
    }
    if (rank == 0) {
        const zero_layout *L = zero_engine_layout(e);
        zero_memory_stats ms;
        int u;
        J->trainable_units = 0;
        for (u = 0; u < zero_layout_unit_count(L); u++) J->trainable_units += !zero_layout_unit(L, u)->frozen;
        zero_memory_report(e, &ms);
        J->ring_bytes = ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE];
    }
    J->r[rank] = run(e, J, rank);
    snprintf(J->msg[rank], sizeof J->msg[rank], "%s", zero_engine_error(e)->msg);
    if (rank == 0) {
        zero_memory_stats ms;
        zero_memory_report(e, &ms);
        J->grads_end = ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE];
        J->own_spans = ms.grad_own_spans, J->own_found = ms.grad_own_found;
        zero_memory_stats_format(&ms, J->report, sizeof J->report);
    }
    if (J->r[rank] == ZERO_OK)
        for (t = 0; t < NT; t++) {
            int64_t i;
            const void *p;
            zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], J->master[rank] + toff(t));
            if (zero_fetch(e, t) != ZERO_OK || !(p = zero_param(e, t))) {
                J->r[rank] = zero_engine_error(e)->code;
                break;
            }
            for (i = 0; i < SIZES[t]; i++) J->param[rank][toff(t) + i] = zt_load(p, (zero_dtype)J->dtype, i);
            zero_release(e, t);
        }
    zero_engine_destroy(e);
    return ZERO_OK;
}

static int go(job *J, int stage, int dtype, int world, int gas, int no_hint) {
    zero_error err;
    int k;
    memset(J, 0, sizeof *J);
    J->stage = stage, J->dtype = dtype, J->world = world, J->gas = gas, J->no_hint = no_hint;
    n_rs = 0;
    CHECK(zero_host_run(world, rank_fn, J, &err) == ZERO_OK);
    for (k = 0; k < world; k++) {
        CHECKF(J->r[k] == ZERO_OK, "stage %d %s world %d gas %d rank %d: %s", stage, zero_dtype_name((zero_dtype)dtype),
               world, gas, k, J->msg[k]);
        if (J->r[k] != ZERO_OK) return -1;
    }
    return n_rs;
}

/* Misuse with emb found rather than flagged: a third span's gradient while
   two are open is handed out (a stand-in); a gradient asked for again after
   its zero_grad_ready in the same micro-batch is refused, and zero_step
   after a backward that never readied a tensor names it. */
static zero_result misuse_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_config c;
    zero_tensor ts[NT];
    zero_error err;
    zero_engine *e;
    zero_step_info info;
    int t;
    tensors(ts, 0);
    config(&c, J);
    if (zero_config_resolve(&c, b->world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, b, &err) != ZERO_OK) {
        snprintf(J->msg[0], sizeof J->msg[0], "%s", err.msg);
        J->r[0] = err.code;
        return ZERO_OK;
    }
    for (t = 0; t < NT; t++) zero_fetch(e, t), zero_release(e, t);
    J->r[0] = ZERO_ERR_STATE;
    if (!zero_grad(e, T_C) || !zero_grad(e, T_BIG) || !zero_grad(e, T_A))
        snprintf(J->msg[0], sizeof J->msg[0], "three open spans refused: %.900s", zero_engine_error(e)->msg);
    else if (zero_grad_ready(e, T_C) != ZERO_OK)
        snprintf(J->msg[0], sizeof J->msg[0], "zero_grad_ready(c): %.900s", zero_engine_error(e)->msg);
    else if (zero_grad(e, T_C) != NULL || zero_engine_error(e)->item != ZERO_MSG_ENGINE_GRAD_TWICE ||
             !strstr(zero_engine_error(e)->msg, "'c'"))
        snprintf(J->msg[0], sizeof J->msg[0], "c's gradient again after its ready: %.900s", zero_engine_error(e)->msg);
    else if (zero_step(e, &info) == ZERO_OK)
        snprintf(J->msg[0], sizeof J->msg[0], "zero_step with tensors not ready succeeded");
    else if (zero_engine_error(e)->item != ZERO_MSG_ENGINE_STEP_EARLY || !strstr(zero_engine_error(e)->msg, "'emb'"))
        snprintf(J->msg[0], sizeof J->msg[0], "zero_step with tensors not ready: %.900s", zero_engine_error(e)->msg);
    else
        J->r[0] = ZERO_OK;
    zero_engine_destroy(e);
    return ZERO_OK;
}

/* The unflagged run against the flagged one: the same bits, the same
   collectives, the flagged plan's gradient memory at the end */
static void same_as_hint(const job *h, const job *f, int ch, int cf, const char *what) {
    int k;
    if (ch < 0 || cf < 0) return;
    for (k = 0; k < h->world; k++) {
        CHECKF(!memcmp(h->master[k], f->master[k], sizeof h->master[k]), "%s rank %d: master weights differ", what, k);
        CHECKF(!memcmp(h->param[k], f->param[k], sizeof h->param[k]), "%s rank %d: parameters differ", what, k);
        CHECKF(!memcmp(h->norm[k], f->norm[k], sizeof h->norm[k]), "%s rank %d: norms differ", what, k);
    }
    CHECKF(ch == cf, "%s: %d reduce_scatter calls found, %d flagged", what, cf, ch);
    CHECKF(f->grads_end == h->grads_end, "%s: gradients %zu bytes after the run, %zu flagged", what, f->grads_end,
           h->grads_end);
    if (h->grads_end > 0) { /* (world 1 stage 2 gas 1: the slots are the accumulator's places, no buffer) */
        CHECKF(h->own_spans == 1 && h->own_found == 0, "%s: flagged run reports %d own spans, %d found", what,
               h->own_spans, h->own_found);
        CHECKF(f->own_spans == 1 && f->own_found == 1, "%s: found run reports %d own spans, %d found", what,
               f->own_spans, f->own_found);
        CHECKF(strstr(f->report, "1 found in the backward") != NULL, "%s: the memory report does not say it:\n%s", what,
               f->report);
    }
    printf("%s: found = flagged bitwise, %d reduce_scatter calls, gradients %zu bytes (at create %zu)\n", what, cf,
           f->grads_end, f->ring_bytes);
}

int main(void) {
    static job s1, s2;
    static const int dts[3] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16};
    zero_error err;
    int d, gas, k, st;
    zt_seed("test_engine_world1");
    for (d = 0; d < 3; d++)
        for (gas = 1; gas <= 2; gas++) {
            const char *dn = zero_dtype_name((zero_dtype)dts[d]);
            int c1 = go(&s1, 1, dts[d], 1, gas, 0), c2 = go(&s2, 2, dts[d], 1, gas, 0), moved = 0;
            if (c1 < 0 || c2 < 0) continue;
            CHECKF(!memcmp(s1.master[0], s2.master[0], sizeof s1.master[0]),
                   "%s gas %d: stage 2's master weights differ from stage 1's", dn, gas);
            CHECKF(!memcmp(s1.param[0], s2.param[0], sizeof s1.param[0]),
                   "%s gas %d: stage 2's compute-dtype parameters differ from stage 1's", dn, gas);
            for (k = 0; k < TOTAL; k++) {
                float w0;
                int t = 0;
                while (k >= toff(t + 1) && t + 1 < NT) t++;
                init_cb(NULL, t, k - toff(t), 1, &w0);
                moved += s2.master[0][k] != w0;
                /* (a frozen tensor has no master: its compute-dtype copy reads back) */
                if (t == T_FROZEN)
                    CHECKF(s2.master[0][k] == zt_round((zero_dtype)dts[d], w0), "%s gas %d: frozen element %d moved", dn, gas, k);
            }
            /* (an element whose weight and gradients are all zero may stay) */
            CHECKF(moved >= (TOTAL - SIZES[T_FROZEN]) * 95 / 100, "%s gas %d: %d of %d trainable weights moved", dn, gas,
                   moved, (int)(TOTAL - SIZES[T_FROZEN]));
            for (st = 0; st < STEPS; st++) {
                int skip = dts[d] == ZERO_DTYPE_FP16 && st == INF_STEP;
                CHECKF(!memcmp(&s1.norm[0][st], &s2.norm[0][st], sizeof(double)), "%s gas %d step %d: norm %.17g stage 1, %.17g stage 2",
                       dn, gas, st, s1.norm[0][st], s2.norm[0][st]);
                CHECKF(s2.applied[0][st] == !skip, "%s gas %d step %d: applied %d", dn, gas, st, s2.applied[0][st]);
                if (!skip)
                    CHECKF(fabs(s2.norm[0][st] - s2.want_norm[0][st]) <= 1e-5 * s2.want_norm[0][st],
                           "%s gas %d step %d: norm %.17g, the test's %.17g", dn, gas, st, s2.norm[0][st], s2.want_norm[0][st]);
            }
            /* stage 1 at world 1 reduces in place: nothing reaches the backend */
            CHECKF(c1 == 0, "%s gas %d: stage 1 world 1 made %d reduce_scatter calls", dn, gas, c1);
            if (gas == 1) {
                CHECKF(c2 == 0, "%s gas 1: stage 2 world 1 made %d reduce_scatter calls, want 0", dn, c2);
                CHECKF(s2.ring_bytes == 0, "%s gas 1: stage 2 world 1 plans %zu bytes of gradient ring, want 0", dn,
                       s2.ring_bytes);
            } else {
                int want = dts[d] == ZERO_DTYPE_FP32 ? STEPS * s2.trainable_units : 0;
                CHECKF(c2 == want, "%s gas 2: stage 2 world 1 made %d reduce_scatter calls, want %d", dn, c2, want);
                CHECKF(s2.ring_bytes > 0, "%s gas 2: stage 2 world 1 plans no gradient ring", dn);
            }
            printf("world 1 %s gas %d: stage 2 = stage 1 bitwise, reduce_scatter calls %d, ring %zu bytes\n", dn, gas, c2,
                   s2.ring_bytes);
        }
    /* two ranks: every trainable unit reduce-scattered on each, every step */
    {
        int c2 = go(&s2, 2, ZERO_DTYPE_FP32, 2, 1, 0);
        if (c2 >= 0) {
            CHECKF(c2 == 2 * STEPS * s2.trainable_units, "world 2: %d reduce_scatter calls, want %d", c2,
                   2 * STEPS * s2.trainable_units);
            CHECK(s2.ring_bytes > 0);
            CHECK(!memcmp(s2.master[0], s2.master[1], sizeof s2.master[0]));
        }
    }
    /* emb found, not flagged */
    for (d = 0; d < 3; d++)
        for (st = 2; st <= 3; st++)
            for (k = 1; k <= MAXW; k++)
                for (gas = 1; gas <= 2; gas++) {
                    char what[96];
                    int ch = go(&s1, st, dts[d], k, gas, 0), cf = go(&s2, st, dts[d], k, gas, 1);
                    snprintf(what, sizeof what, "stage %d %s world %d gas %d", st, zero_dtype_name((zero_dtype)dts[d]), k,
                             gas);
                    same_as_hint(&s1, &s2, ch, cf, what);
                }
    /* misuse */
    for (k = 1; k <= MAXW; k++) {
        memset(&s2, 0, sizeof s2);
        s2.stage = 2, s2.dtype = ZERO_DTYPE_FP32, s2.world = 1, s2.gas = k;
        CHECK(zero_host_run(1, misuse_fn, &s2, &err) == ZERO_OK);
        CHECKF(s2.r[0] == ZERO_OK, "stage 2 %s: %s", k == 1 ? "gas 1" : "gas 2", s2.msg[0]);
    }
    return zt_finish();
}
