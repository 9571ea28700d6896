/* test_engine.c - the engine on host ranks: ZeRO does not change the math,
   overflow handling, memory plan, determinism.

   The model: every parameter element i of tensor t has a fixed curvature
   a(t,i) in [0.5, 2] and target c(t,i); the gradient of one micro-batch is
       g = a * (w - c) + noise(step, global micro-batch, t, i)
   computed from the compute-dtype parameters the engine hands out. Rank r's
   micro-batch m is global micro-batch r * GAS + m, so world N with GAS G
   sees the same global batch as world 1 with GAS N * G. The problem is well
   conditioned (|w - c| stays >= 0.25 over the run, so no gradient element
   sits near zero where Adam's m / sqrt(v) flips) and eps = 1e-3 makes Adam
   sensitive to the gradient's scale, so a wrong averaging factor shows.

   The promises tested (state them here, test them below):
   (1) fixed world, GAS 1, same bucket: stages 0, 1, 2, 3 give bitwise
       identical master weights (the host backend sums in rank order);
   (2) GAS > 1: stages 0 and 1 bitwise equal, stages 2 and 3 bitwise equal,
       the two pairs equal within the tolerance of (3);
   (3) every run equals the world-1 stage-0 run with GAS = N * G within
       tolerances (per dtype, see tol_for), as max |w - w_ref| relative to
       max |w_ref| and to how far training moved the weights;
   (4) the world-1 stage-0 fp32 engine equals a plain double-precision Adam
       written here (DeepSpeed's bias correction, clipping formula, weight
       decay modes, lr schedule off by two) within 1e-5.

   ZERO_TEST_QUICK=1 shrinks the matrix (sanitizer runs).

   Run alone: make test T=test_engine */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

#define MAXW 8
#define MAXSTEPS 24
#define MAXT 40
#define MAXE 2048 /* model elements at most */
#define MAXINJ 16

static int quick;

/* ---------------------------------------------------------------------- */
/* the synthetic model                                                     */

typedef struct spec {
    const char *name;
    int64_t numel;
    int group, flags;
    float lr_scale;
    int ndim;
    int64_t shape[2];
} spec;

/* Primes, 1, sizes below the world, 2-d shapes, frozen and no-decay tensors,
   lr multipliers. 261 elements, 246 trainable. */
static const spec model_spec[] = {
    {"embed.weight", 37, 0, 0, 0, 0, {0, 0}},
    {"ln0.weight", 1, 1, ZERO_TENSOR_NO_DECAY, 0, 0, {0, 0}},
    {"ln0.bias", 3, 1, ZERO_TENSOR_NO_DECAY, 0, 0, {0, 0}},
    {"fc1.weight", 60, 2, 0, 0, 2, {12, 5}},
    {"fc1.bias", 7, 2, ZERO_TENSOR_NO_DECAY, 0, 0, {0, 0}},
    {"adapter.weight", 13, 3, ZERO_TENSOR_FROZEN, 0, 0, {0, 0}},
    {"adapter.bias", 2, 3, ZERO_TENSOR_FROZEN | ZERO_TENSOR_NO_DECAY, 0, 0, {0, 0}},
    {"fc2.weight", 101, 4, 0, 0.5f, 0, {0, 0}},
    {"fc2.bias", 2, 4, ZERO_TENSOR_NO_DECAY, 0, 0, {0, 0}},
    {"ln1.weight", 5, 5, ZERO_TENSOR_NO_DECAY, 2.0f, 0, {0, 0}},
    {"head.weight", 29, 6, 0, 0, 0, {0, 0}},
    {"head.bias", 1, 6, ZERO_TENSOR_NO_DECAY, 0, 0, {0, 0}},
};
static int n_t; /* tensors in the current model */
#define NT n_t

static zero_tensor tensors[MAXT];
static int64_t toff[MAXT + 1]; /* flat offsets; toff[NT] = total elements */

static double h01(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    uint64_t x = zt_mix64(zt_mix64(zt_mix64(zt_mix64(a) ^ b) ^ c) ^ d);
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}
static double curv(int t, int64_t i) { return 0.5 + 1.5 * h01(1, (uint64_t)t, (uint64_t)i, 0); }
static double target(int t, int64_t i) { return 0.5 * (2 * h01(2, (uint64_t)t, (uint64_t)i, 0) - 1); }
static float init_w(int t, int64_t i) {
    double side = h01(3, (uint64_t)t, (uint64_t)i, 0) < 0.5 ? -1 : 1;
    return (float)(target(t, i) + side * (0.5 + 0.5 * h01(4, (uint64_t)t, (uint64_t)i, 0)));
}
static double noise(int step, int gmicro, int t, int64_t i) {
    return 0.3 * (2 * h01(5 + (uint64_t)step, (uint64_t)gmicro, (uint64_t)t, (uint64_t)i) - 1);
}
static double grad_of(double w, int step, int gmicro, int t, int64_t i) {
    return curv(t, i) * (w - target(t, i)) + noise(step, gmicro, t, i);
}

static void init_cb(void *user, int tensor, int64_t offset, int64_t count, float *out) {
    int64_t k;
    (void)user;
    for (k = 0; k < count; k++) out[k] = init_w(tensor, offset + k);
}

static void model_setup(void) {
    int t;
    toff[0] = 0;
    n_t = (int)(sizeof model_spec / sizeof model_spec[0]);
    for (t = 0; t < NT; t++) {
        zero_tensor *x = &tensors[t];
        memset(x, 0, sizeof *x);
        x->name = model_spec[t].name;
        x->numel = model_spec[t].numel;
        x->group = model_spec[t].group;
        x->flags = model_spec[t].flags;
        x->lr_scale = model_spec[t].lr_scale;
        x->ndim = model_spec[t].ndim;
        x->shape[0] = model_spec[t].shape[0];
        x->shape[1] = model_spec[t].shape[1];
        x->init = init_cb;
        toff[t + 1] = toff[t] + x->numel;
    }
}
#define NTOT (toff[NT])

/* A random model: sizes 1, primes, below the world, up to a few hundred;
   random groups, frozen and no-decay flags, lr multipliers. */
static void model_random(int world) {
    static char names[MAXT][24];
    static const int64_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 61, 67, 97, 101, 127, 211};
    int t, group = 0, any_trainable = 0;
    n_t = (int)zt_rand_int(1, 24);
    toff[0] = 0;
    for (t = 0; t < NT; t++) {
        zero_tensor *x = &tensors[t];
        memset(x, 0, sizeof *x);
        snprintf(names[t], sizeof names[t], "r%d.%d", group, t);
        x->name = names[t];
        switch (zt_rand_int(0, 4)) {
        case 0: x->numel = 1; break;
        case 1: x->numel = primes[zt_rand_int(0, (long)(sizeof primes / sizeof primes[0]) - 1)]; break;
        case 2: x->numel = zt_rand_int(1, world); break;
        case 3: x->numel = (int64_t)world * ZERO_ALIGN * zt_rand_int(1, 3) + zt_rand_int(-1, 1); break;
        default: x->numel = zt_rand_int(1, 300); break;
        }
        if (x->numel < 1) x->numel = 1;
        if (toff[t] + x->numel > MAXE - 1) x->numel = 1;
        if (zt_rand_int(0, 3) == 0) group++;
        x->group = group;
        x->flags = (zt_rand_int(0, 5) == 0 ? ZERO_TENSOR_FROZEN : 0) | (zt_rand_int(0, 2) == 0 ? ZERO_TENSOR_NO_DECAY : 0);
        if (t == NT - 1 && !any_trainable) x->flags &= ~ZERO_TENSOR_FROZEN;
        if (!(x->flags & ZERO_TENSOR_FROZEN)) any_trainable = 1;
        x->lr_scale = zt_rand_int(0, 4) == 0 ? 0.25f * (float)zt_rand_int(1, 8) : 0;
        x->init = init_cb;
        toff[t + 1] = toff[t] + x->numel;
    }
}

static int64_t trainable_elems(void) {
    int64_t n = 0;
    int t;
    for (t = 0; t < NT; t++)
        if (!(tensors[t].flags & ZERO_TENSOR_FROZEN)) n += tensors[t].numel;
    return n;
}

static int frozen(int t) { return (tensors[t].flags & ZERO_TENSOR_FROZEN) != 0; }

static zero_dtype cfg_dtype(const zero_config *c) {
    return c->fp16.enabled == 1 ? ZERO_DTYPE_FP16 : c->bf16.enabled == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
}

/* ---------------------------------------------------------------------- */
/* configs                                                                 */

typedef struct run_opts {
    int stage, world, gas, steps, clip_on;
    zero_dtype dtype;
    int64_t bucket;
    int sched;        /* 1: WarmupLR linear 1e-3 -> 5e-3 over 10 steps */
    int adamw;        /* 1 (default) or 0: L2 decay */
    int bias_correction;
    int64_t fp16_window; /* fp16.loss_scale_window; 0: DeepSpeed's 1000 */
    int fp16_hysteresis; /* fp16.hysteresis; 0: DeepSpeed's 2 */
    int64_t persist;     /* stage3_param_persistence_threshold */
    int64_t max_live, prefetch; /* stage3_max_live_parameters, stage3_prefetch_bucket_size; 0: defaults */
    int shuffle;         /* 1: each micro-batch visits the groups (layers) in its own order */
    int shard;           /* zero_optimization.mics_shard_size (0: flat) */
    int exact;           /* 1: gradients are multiples of 1/8 in [-2, 2], whose sums and squares no
                            summation order rounds */
} run_opts;

static run_opts opts(int stage, int world, zero_dtype dt, int gas, int64_t bucket, int clip_on) {
    run_opts o;
    memset(&o, 0, sizeof o);
    o.stage = stage;
    o.world = world;
    o.dtype = dt;
    o.gas = gas;
    o.bucket = bucket;
    o.clip_on = clip_on;
    o.steps = quick ? 8 : 20;
    o.adamw = 1;
    o.bias_correction = 1;
    o.persist = 3;
    return o;
}

#define TINY_BUCKET 24
#define DEFAULT_BUCKET 500000000
#define CLIP 2.0

static int make_cfg(const run_opts *o, zero_config *c) {
    zero_error err;
    *c = zero_config_default();
    c->train_micro_batch_size_per_gpu = 1;
    c->gradient_accumulation_steps = o->gas;
    c->zero_optimization.stage = o->stage;
    c->zero_optimization.reduce_bucket_size = o->bucket;
    /* stage 3: tensors of <= persist elements (3 by default) persistent, the rest fetched */
    c->zero_optimization.stage3_param_persistence_threshold = o->persist;
    /* DeepSpeed's keys (its defaults where 0): plan_want's formula; the pool derived from the groups when they
       are left unset is test_trainer's */
    c->zero_optimization.stage3_max_live_parameters = o->max_live ? o->max_live : 1000000000;
    c->zero_optimization.stage3_prefetch_bucket_size = o->prefetch ? (o->prefetch < 0 ? 0 : o->prefetch) : 50000000;
    c->gradient_clipping = o->clip_on ? CLIP : 0;
    if (o->shard) c->zero_optimization.mics_shard_size = o->shard;
    c->optimizer.type = ZERO_OPTIMIZER_ADAM;
    c->optimizer.adam_w_mode = o->adamw;
    c->optimizer.bias_correction = o->bias_correction;
    c->optimizer.lr = 5e-3;
    c->optimizer.eps = 1e-3;
    c->optimizer.weight_decay = 0.1;
    if (o->dtype == ZERO_DTYPE_FP16) {
        c->fp16.enabled = 1;
        c->fp16.initial_scale_power = 8; /* g * S stays far below 65504 in every reduction */
        if (o->fp16_window) c->fp16.loss_scale_window = o->fp16_window;
        if (o->fp16_hysteresis) c->fp16.hysteresis = o->fp16_hysteresis;
    } else if (o->dtype == ZERO_DTYPE_BF16) {
        c->bf16.enabled = 1;
    }
    if (o->sched) {
        c->scheduler.type = ZERO_SCHEDULER_WARMUP_LR;
        c->scheduler.warmup_min_lr = 1e-3;
        c->scheduler.warmup_max_lr = 5e-3;
        c->scheduler.warmup_num_steps = 10;
        c->scheduler.warmup_type = ZERO_WARMUP_LINEAR;
    }
    c->log.level = ZERO_LOG_WARN;
    if (zero_config_resolve(c, o->world, &err) != ZERO_OK) {
        CHECKF(0, "zero_config_resolve: %s", err.msg);
        return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------------- */
/* one training run on `world` host ranks                                  */

typedef struct inject {
    int step, rank, micro;
    int unit_pick; /* the k-th trainable unit of the layout; its first element */
    int tail;      /* 1: the first element of the last tensor of the first unit from
                      unit_pick on that holds several tensors */
    float value;   /* INFINITY, -INFINITY or NAN */
} inject;

typedef struct job {
    run_opts o;
    zero_config cfg;
    int n_inject;
    inject inj[MAXINJ];
    int snapshots; /* rank 0 keeps master, m, v after create and after every step */
    /* outputs */
    float *w[MAXW];                    /* final masters, flat, per rank */
    float *snap[3];                    /* [(steps + 1) * NTOT] */
    zero_step_info info[MAXW][MAXSTEPS];
    zero_memory_stats mem[MAXW];
    size_t mem_want[MAXW][ZERO_MEM_CATEGORY_COUNT][ZERO_MEM_KIND_COUNT]; /* plan_want */
    size_t host_alloc[MAXW][ZERO_MEM_KIND_COUNT]; /* zero_host_allocated_bytes before destroy */
    size_t host_left[MAXW][ZERO_MEM_KIND_COUNT];  /* and after */
    int64_t param_mismatch[MAXW];      /* elements where param != round(master) */
    int64_t frozen_changed[MAXW];
    int expect_unit[MAXSTEPS], expect_tensor[MAXSTEPS];
    char err[MAXW][1536];
    zero_result host_result;
    zero_error host_err;
} job;

static void job_init(job *J, const run_opts *o) {
    int r, k;
    memset(J, 0, sizeof *J);
    J->o = *o;
    for (r = 0; r < o->world; r++) J->w[r] = (float *)calloc((size_t)NTOT, sizeof(float));
    for (k = 0; k < MAXSTEPS; k++) J->expect_unit[k] = J->expect_tensor[k] = -1;
}
static void job_free(job *J) {
    int r;
    for (r = 0; r < MAXW; r++) free(J->w[r]);
    for (r = 0; r < 3; r++) free(J->snap[r]);
    memset(J->w, 0, sizeof J->w);
    memset(J->snap, 0, sizeof J->snap);
}

#define FAILR(...)                                                                    \
    do {                                                                              \
        if (!J->err[rank][0]) snprintf(J->err[rank], sizeof J->err[rank], __VA_ARGS__); \
    } while (0)
/* an engine call that must succeed; on failure the rank records why and
   leaves (the host backend then fails the other ranks' collectives) */
#define ECALL(call, what)                                                                        \
    do {                                                                                         \
        zero_result r_ = (call);                                                                 \
        if (r_ != ZERO_OK) {                                                                     \
            FAILR("rank %d step %d: %s: %s: %s", rank, s, what, zero_result_string(r_),         \
                  zero_engine_error(e)->msg);                                                    \
            res = r_;                                                                            \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

static zero_result read_all_state(zero_engine *e, zero_state_kind kind, float *out) {
    int t;
    zero_result r;
    for (t = 0; t < NT; t++) {
        if (kind != ZERO_STATE_MASTER && frozen(t)) { /* no Adam state: zeros */
            memset(out + toff[t], 0, sizeof(float) * (size_t)tensors[t].numel);
            continue;
        }
        if ((r = zero_read_state(e, t, kind, 0, tensors[t].numel, out + toff[t])) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

/* The memory plan of zero.h's engine (bytes per rank), from the layout:
   Psi padded elements, _T trainable (frozen units left out), S shard
   elements, d / a compute / accumulation dtype bytes, a span = the units of
   one split tensor (or one unit), U = the largest non-persistent span:
     PARAMS       stage 0-2: Psi d;   stage 3: S d
     GATHER_POOL  stage 3: (persistent spans + min(rest, max(max_live + prefetch, 2 U))) d
     GRADS        stage 0-1: Psi_T d; stage 2-3: min(2, trainable spans) x largest trainable span x d;
                  stage 2 on one rank with GAS == 1: 0 (the backward writes into the accumulator)
     GRAD_ACCUM   stage 0-1: Psi_T a when GAS > 1, else 0; stage 2-3: S_T a (a = d when GAS == 1)
     MASTER       0 for fp32 (the parameters are the master); stage 0: 4 Psi_T; else 4 S_T
     OPTIM_STATE  stage 0: 8 Psi_T; else 8 S_T
     SCRATCH      16 bytes per (unit, tensor) pair on the device and 16 on the host, + 8
                  ZERO_SCALARS_MAX on each (zero_all_reduce_scalars)
   Everything else on the device (the host backend's "device" memory). */
static void plan_want(const zero_layout *L, const zero_config *cfg, size_t want[ZERO_MEM_CATEGORY_COUNT][ZERO_MEM_KIND_COUNT]) {
    int u, nu = zero_layout_unit_count(L), stage = cfg->zero_optimization.stage, tspans = 0;
    int64_t psi = zero_layout_padded_numel(L), S = zero_layout_shard_numel(L, 0), ST = zero_layout_shard_numel(L, 1);
    int64_t psiT = 0, persist = 0, dyn_total = 0, dyn_max = 0, tmax = 0, span_len = 0, pown = 0;
    /* stage 3 where collectives group (the host backend does, unless the collectives are checked or
       ZERO_COLL_GROUP=0): a trainable persistent span's gradient has a buffer of its own beside the ring */
    const char *chk = getenv("ZERO_CHECK"), *grp = getenv("ZERO_COLL_GROUP");
    int mics = cfg->zero_optimization.mics_shard_size;
    int own_persist = stage == 3 && cfg->check_collectives != 1 && !(chk && !strcmp(chk, "1")) && !(grp && !strcmp(grp, "0")) &&
                      (mics <= 0 || mics >= cfg->world_size) && cfg->zero_optimization.offload_optimizer.device == ZERO_OFFLOAD_NONE;
    int64_t live = cfg->zero_optimization.stage3_max_live_parameters;
    int64_t pre = cfg->zero_optimization.stage3_prefetch_bucket_size > 0 ? cfg->zero_optimization.stage3_prefetch_bucket_size : 0;
    size_t d = zero_dtype_size(cfg_dtype(cfg)), a = zero_dtype_size(cfg->grad_accum_dtype);
    int64_t opt;
    memset(want, 0, sizeof(size_t) * ZERO_MEM_CATEGORY_COUNT * ZERO_MEM_KIND_COUNT);
    for (u = 0; u < nu; u++) {
        const zero_unit *x = zero_layout_unit(L, u);
        if (!x->frozen) psiT += x->padded;
        span_len += x->padded;
        if (u + 1 == nu || zero_layout_unit(L, u + 1)->span != x->span) { /* span ends */
            if (!x->frozen && own_persist && x->persistent) pown += span_len;
            else if (!x->frozen) { tspans++; if (span_len > tmax) tmax = span_len; }
            if (x->persistent) persist += span_len;
            else { dyn_total += span_len; if (span_len > dyn_max) dyn_max = span_len; }
            span_len = 0;
        }
    }
    opt = stage == 0 ? psiT : ST;
    want[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE] = (size_t)(stage == 3 ? S : psi) * d;
    if (stage == 3) {
        int64_t w = live + pre > 2 * dyn_max ? live + pre : 2 * dyn_max;
        want[ZERO_MEM_GATHER_POOL][ZERO_MEM_DEVICE] = (size_t)(persist + (dyn_total < w ? dyn_total : w)) * d;
    }
    if (stage <= 1) {
        want[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] = (size_t)psiT * d;
        want[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE] = cfg->gradient_accumulation_steps > 1 ? (size_t)psiT * a : 0;
    } else {
        int direct = stage == 2 && cfg->world_size == 1 && cfg->gradient_accumulation_steps == 1;
        want[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] = direct ? 0 : (size_t)((tspans < 2 ? tspans : 2) * tmax + pown) * d;
        /* one micro-batch adds nothing up: the reduced chunk stays in the compute dtype */
        want[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE] = (size_t)ST * (cfg->gradient_accumulation_steps > 1 ? a : d);
    }
    want[ZERO_MEM_MASTER][ZERO_MEM_DEVICE] = cfg_dtype(cfg) == ZERO_DTYPE_FP32 ? 0 : (size_t)opt * 4;
    want[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] = (size_t)opt * 8;
    {   /* statistics per (unit, tensor) pair */
        size_t pairs = 0;
        for (u = 0; u < nu; u++) pairs += (size_t)(zero_layout_unit(L, u)->last_tensor - zero_layout_unit(L, u)->first_tensor + 1);
        want[ZERO_MEM_SCRATCH][ZERO_MEM_DEVICE] = 16 * pairs + 8 * ZERO_SCALARS_MAX;
        want[ZERO_MEM_SCRATCH][ZERO_MEM_PINNED] = 16 * pairs + 8 * ZERO_SCALARS_MAX;
    }
}

/* The order a micro-batch visits the tensors in: registration order, or
   (shuffle) the groups in an order of their own per (step, micro-batch),
   the same on every rank, each group's tensors together and in order (so a
   unit's gradients complete before the next unit's start). Stage 3 then
   meets fetch orders that differ from the recorded trace. */
static void visit_order(int shuffle, int step, int micro, int *ord) {
    int first[MAXT + 1], ng = 0, t, g, k = 0;
    for (t = 0; t < NT; t++)
        if (t == 0 || tensors[t].group != tensors[t - 1].group) first[ng++] = t;
    first[ng] = NT;
    {
        int perm[MAXT];
        for (g = 0; g < ng; g++) perm[g] = g;
        if (shuffle)
            for (g = ng - 1; g > 0; g--) {
                int j = (int)(zt_mix64(((uint64_t)step << 20) ^ ((uint64_t)micro << 8) ^ (uint64_t)g) % (uint64_t)(g + 1)), x = perm[g];
                perm[g] = perm[j];
                perm[j] = x;
            }
        for (g = 0; g < ng; g++)
            for (t = first[perm[g]]; t < first[perm[g] + 1]; t++) ord[k++] = t;
    }
}

static zero_result rank_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    int rank = b->rank, s = -1, m, t, k;
    zero_engine *e = NULL;
    zero_error err;
    zero_dtype dt = cfg_dtype(&J->cfg);
    const zero_layout *L;
    float *wbuf = (float *)malloc(sizeof(float) * (size_t)NTOT);
    float *tmp = (float *)malloc(sizeof(float) * (size_t)NTOT);
    int inj_t[MAXINJ];
    int64_t inj_i[MAXINJ];
    zero_result res = ZERO_OK;

    if ((res = zero_engine_create(&e, &J->cfg, tensors, NT, b, &err)) != ZERO_OK) {
        FAILR("rank %d: zero_engine_create: %s", rank, err.msg);
        e = NULL;
        goto done;
    }
    L = zero_engine_layout(e);
    /* injection places: the first element of the k-th trainable unit */
    for (k = 0; k < J->n_inject; k++) {
        int u, seen = 0, nu = zero_layout_unit_count(L), pick = -1, ntrain = 0;
        for (u = 0; u < nu; u++) ntrain += !zero_layout_unit(L, u)->frozen;
        for (u = 0; u < nu; u++) {
            if (zero_layout_unit(L, u)->frozen) continue;
            if (seen++ == J->inj[k].unit_pick % ntrain) { pick = u; break; }
        }
        inj_t[k] = zero_layout_unit(L, pick)->first_tensor;
        inj_i[k] = zero_layout_unit(L, pick)->offset - zero_layout_tensor(L, inj_t[k])->offset;
        for (u = 0; J->inj[k].tail && u < nu; u++) {
            const zero_unit *x = zero_layout_unit(L, (pick + u) % nu);
            if (x->frozen || x->last_tensor == x->first_tensor) continue;
            pick = (pick + u) % nu;
            inj_t[k] = x->last_tensor;
            inj_i[k] = 0;
            break;
        }
        if (rank == 0 && (J->expect_unit[J->inj[k].step] < 0 || pick < J->expect_unit[J->inj[k].step])) {
            J->expect_unit[J->inj[k].step] = pick; /* the first unit with inf/nan */
            J->expect_tensor[J->inj[k].step] = inj_t[k];
        }
    }
    if (J->snapshots) {
        for (k = 0; k < 3; k++) {
            ECALL(read_all_state(e, (zero_state_kind)k, tmp), "zero_read_state (initial)");
            if (rank == 0) memcpy(J->snap[k], tmp, sizeof(float) * (size_t)NTOT);
        }
    }

    for (s = 0; s < J->o.steps; s++) {
        for (m = 0; m < J->o.gas; m++) {
            int gm = rank * J->o.gas + m, ord[MAXT], kk;
            double S = zero_loss_scale(e);
            visit_order(J->o.shuffle, s, m, ord);
            /* forward: each tensor fetched, read, released (stage 3 gathers it) */
            for (kk = 0; kk < NT; kk++) {
                const void *p;
                int64_t i;
                t = ord[kk];
                ECALL(zero_fetch(e, t), "zero_fetch (forward)");
                p = zero_param(e, t);
                if (!p) ECALL(zero_engine_error(e)->code ? zero_engine_error(e)->code : ZERO_ERR_STATE, "zero_param");
                for (i = 0; i < tensors[t].numel; i++) wbuf[toff[t] + i] = zt_load(p, dt, i);
                ECALL(zero_release(e, t), "zero_release (forward)");
            }
            /* backward in reverse order, fetching again */
            for (kk = NT - 1; kk >= 0; kk--) {
                void *g;
                const void *p;
                int64_t i;
                t = ord[kk];
                if (frozen(t)) continue;
                ECALL(zero_fetch(e, t), "zero_fetch (backward)");
                p = zero_param(e, t);
                if (!p) ECALL(zero_engine_error(e)->code ? zero_engine_error(e)->code : ZERO_ERR_STATE, "zero_param (backward)");
                g = zero_grad(e, t);
                if (!g) ECALL(zero_engine_error(e)->code ? zero_engine_error(e)->code : ZERO_ERR_STATE, "zero_grad");
                for (i = 0; i < tensors[t].numel; i++) {
                    float w = zt_load(p, dt, i);
                    if (!zt_same_bits(w, wbuf[toff[t] + i])) FAILR("rank %d step %d: %s[%lld] changed between forward and backward",
                                                                rank, s, tensors[t].name, (long long)i);
                    double gv = grad_of(w, s, gm, t, i);
                    if (J->o.exact) gv = round(fmax(-2.0, fmin(2.0, gv)) * 8) / 8;
                    zt_store(g, dt, i, (float)(gv * S));
                }
                for (k = 0; k < J->n_inject; k++)
                    if (J->inj[k].step == s && J->inj[k].rank == rank && J->inj[k].micro == m && inj_t[k] == t)
                        zt_store(g, dt, inj_i[k], J->inj[k].value);
                ECALL(zero_grad_ready(e, t), "zero_grad_ready");
                ECALL(zero_release(e, t), "zero_release (backward)");
            }
        }
        ECALL(zero_step(e, &J->info[rank][s]), "zero_step");
        if (J->snapshots) {
            for (k = 0; k < 3; k++) {
                ECALL(read_all_state(e, (zero_state_kind)k, tmp), "zero_read_state");
                if (rank == 0) memcpy(J->snap[k] + (size_t)(s + 1) * (size_t)NTOT, tmp, sizeof(float) * (size_t)NTOT);
            }
        }
    }
    ECALL(read_all_state(e, ZERO_STATE_MASTER, J->w[rank]), "zero_read_state (final)");
    /* the compute-dtype parameters every rank sees are round(master) */
    for (t = 0; t < NT; t++) {
        const void *p;
        int64_t i;
        ECALL(zero_fetch(e, t), "zero_fetch (final)");
        p = zero_param(e, t);
        if (!p) ECALL(ZERO_ERR_STATE, "zero_param (final)");
        for (i = 0; i < tensors[t].numel; i++) {
            float mw = J->w[rank][toff[t] + i];
            if (!zt_same_bits(zt_load(p, dt, i), zt_round(dt, mw))) J->param_mismatch[rank]++;
            /* a frozen tensor keeps its initial value (as the fp32 the init
               callback gave, or as the compute-dtype copy of it) */
            if (frozen(t) && !zt_same_bits(mw, init_w(t, i)) && !zt_same_bits(mw, zt_round(dt, init_w(t, i))))
                J->frozen_changed[rank]++;
        }
        ECALL(zero_release(e, t), "zero_release (final)");
    }
    ECALL(zero_memory_report(e, &J->mem[rank]), "zero_memory_report");
    plan_want(L, &J->cfg, J->mem_want[rank]);
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) J->host_alloc[rank][k] = zero_host_allocated_bytes(b, (zero_mem_kind)k);
    zero_engine_destroy(e);
    e = NULL;
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) J->host_left[rank][k] = zero_host_allocated_bytes(b, (zero_mem_kind)k);
done:
    if (e) zero_engine_destroy(e);
    free(wbuf);
    free(tmp);
    return res;
}

/* Runs J; returns 1 when every rank finished. */
static int job_run(job *J) {
    int r, ok = 1;
    if (!make_cfg(&J->o, &J->cfg)) return 0;
    if (J->snapshots)
        for (r = 0; r < 3; r++) J->snap[r] = (float *)calloc((size_t)(J->o.steps + 1) * (size_t)NTOT, sizeof(float));
    J->host_result = zero_host_run(J->o.world, rank_fn, J, &J->host_err);
    for (r = 0; r < J->o.world; r++)
        if (J->err[r][0]) ok = 0;
    if (J->host_result != ZERO_OK || !ok) {
        CHECKF(0, "stage %d world %d %s gas %d bucket %lld clip %d: %s%s%s", J->o.stage, J->o.world,
               zero_dtype_name(J->o.dtype), J->o.gas, (long long)J->o.bucket, J->o.clip_on, J->host_err.msg,
               J->err[0][0] ? " | " : "", J->err[0]);
        for (r = 1; r < J->o.world; r++)
            if (J->err[r][0]) fprintf(stderr, "    %s\n", J->err[r]);
        return 0;
    }
    CHECK(ok);
    return 1;
}

static void check_memory(const job *J);

static const char *desc(const run_opts *o) {
    static char buf[160];
    snprintf(buf, sizeof buf, "stage %d world %d %s gas %d bucket %s clip %s", o->stage, o->world,
             zero_dtype_name(o->dtype), o->gas, o->bucket == TINY_BUCKET ? "tiny" : "default", o->clip_on ? "on" : "off");
    return buf;
}

/* Checks that hold for every finished run: ranks agree bitwise, parameters
   are round(master), frozen tensors never move, and the step info is sane. */
static void check_run_basics(const job *J) {
    int r, s;
    int64_t i;
    const run_opts *o = &J->o;
    check_memory(J);
    for (r = 0; r < o->world; r++) {
        int64_t diff = 0;
        for (i = 0; i < NTOT; i++)
            if (!zt_same_bits(J->w[r][i], J->w[0][i])) diff++;
        CHECKF(diff == 0, "%s: rank %d's masters differ from rank 0's in %lld elements", desc(o), r, (long long)diff);
        CHECKF(J->param_mismatch[r] == 0, "%s: rank %d: %lld parameters != round(master)", desc(o), r,
               (long long)J->param_mismatch[r]);
        CHECKF(J->frozen_changed[r] == 0, "%s: rank %d: %lld frozen elements moved", desc(o), r,
               (long long)J->frozen_changed[r]);
        for (s = 0; s < o->steps; s++) {
            const zero_step_info *a = &J->info[r][s], *z = &J->info[0][s];
            if (a->applied != z->applied || a->loss_scale != z->loss_scale || a->grad_norm != z->grad_norm ||
                a->lr != z->lr || a->skipped_steps != z->skipped_steps) {
                CHECKF(0, "%s: step %d: rank %d's info differs from rank 0's", desc(o), s, r);
                break;
            }
        }
    }
    for (s = 0; s < o->steps; s++) {
        const zero_step_info *a = &J->info[0][s];
        if (J->n_inject) break;
        if (!(a->applied == 1 && a->global_steps == s + 1 && a->skipped_steps == 0 &&
              (o->dtype != ZERO_DTYPE_FP16 || a->loss_scale == 256.0) && (o->dtype == ZERO_DTYPE_FP16 || a->loss_scale == 1.0) &&
              a->overflow_unit == -1 && a->overflow_tensor == -1 && (o->sched || zt_near(a->lr, 5e-3, 1e-7)) && a->grad_norm > 0)) {
            CHECKF(0, "%s: step %d info: applied %d global %lld skipped %lld scale %g unit %d tensor %d lr %g norm %g",
                   desc(o), s, a->applied, (long long)a->global_steps, (long long)a->skipped_steps, a->loss_scale,
                   a->overflow_unit, a->overflow_tensor, a->lr, a->grad_norm);
            break;
        }
        {
            double want = o->clip_on ? fmin(1.0, CLIP / (a->grad_norm + 1e-6)) : 1.0;
            if (!zt_near(a->clip_coef, want, 1e-6)) {
                CHECKF(0, "%s: step %d clip_coef %.9g want %.9g (norm %g)", desc(o), s, a->clip_coef, want, a->grad_norm);
                break;
            }
        }
    }
}

/* ---------------------------------------------------------------------- */
/* comparisons                                                             */

typedef struct tol {
    double rel;  /* max |w - ref| <= rel * max |ref| */
    double move; /* max |w - ref| <= move * max |ref - w0| */
    double norm; /* per-step grad norm, relative */
} tol;

/* fp32: sums in another order differ by ~1e-7 relative, and Adam on a well
   conditioned gradient keeps that: the worst seen (all comparisons, several
   seeds) is 3.4e-7 of max|w| and 3.4e-6 of the move (the double trainer vs
   the float engine); allowed 2e-6 and 2e-5. fp16 (unit roundoff 4.9e-4) and
   bf16 (3.9e-3): world N reduces partial sums in the 16-bit communication
   dtype, world 1 accumulates micro-batches in fp32, and the gradient comes
   from round(master), which can round differently once masters differ; the
   double trainer emulates the 16-bit rounding of parameters and gradients
   but not of the reductions. Worst seen: fp16 1.9e-4 of max|w|, 3.0e-3 of the
   move; bf16 1.9e-3 and 1.4e-2. Allowed about 5x that. A wrong averaging
   factor or a missing bias correction moves the weights by > 1e-3 of max|w|
   (the control in test_vs_double). */
static tol tol_for(zero_dtype dt) {
    tol t;
    if (dt == ZERO_DTYPE_FP16) { t.rel = 1e-3; t.move = 1.5e-2; t.norm = 5e-3; }
    else if (dt == ZERO_DTYPE_BF16) { t.rel = 8e-3; t.move = 6e-2; t.norm = 4e-2; }
    else { t.rel = 2e-6; t.move = 2e-5; t.norm = 1e-5; }
    return t;
}

static void weight_err(const float *w, const float *ref, double *err, double *scale, double *move) {
    int t;
    int64_t i;
    *err = *scale = *move = 0;
    for (t = 0; t < NT; t++)
        for (i = 0; i < tensors[t].numel; i++) {
            double d = fabs((double)w[toff[t] + i] - ref[toff[t] + i]);
            if (!(d <= *err)) *err = d; /* NaN wins */
            if (fabs(ref[toff[t] + i]) > *scale) *scale = fabs(ref[toff[t] + i]);
            if (fabs(ref[toff[t] + i] - init_w(t, i)) > *move) *move = fabs(ref[toff[t] + i] - init_w(t, i));
        }
}

/* the worst ratios seen per tolerance class, printed at the end, so the
   margins of tol_for stay visible */
static double seen_rel[ZERO_DTYPE_COUNT], seen_move[ZERO_DTYPE_COUNT];
static char seen_rel_what[ZERO_DTYPE_COUNT][200], seen_move_what[ZERO_DTYPE_COUNT][200];

static int tol_class(tol tl) {
    return tl.rel == tol_for(ZERO_DTYPE_FP16).rel ? ZERO_DTYPE_FP16 : tl.rel == tol_for(ZERO_DTYPE_BF16).rel ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
}

static void check_close(const char *what, const float *w, const float *ref, tol tl, double *worst_move) {
    double err, scale, move;
    int cls = tol_class(tl);
    weight_err(w, ref, &err, &scale, &move);
    if (scale > 0 && err / scale > seen_rel[cls]) {
        seen_rel[cls] = err / scale;
        snprintf(seen_rel_what[cls], sizeof seen_rel_what[cls], "%s", what);
    }
    if (move > 0 && err / move > seen_move[cls]) {
        seen_move[cls] = err / move;
        snprintf(seen_move_what[cls], sizeof seen_move_what[cls], "%s", what);
    }
    CHECKF(err <= tl.rel * scale && err <= tl.move * move,
           "%s: max |w - ref| %.3g = %.3g of max|ref| (allowed %.3g), %.3g of the move %.3g (allowed %.3g)", what, err,
           err / scale, tl.rel, move > 0 ? err / move : 0.0, move, tl.move);
    if (worst_move && move > 0 && err / move > *worst_move) *worst_move = err / move;
}

static int64_t bit_diff(const float *a, const float *b) {
    int64_t i, n = 0;
    for (i = 0; i < NTOT; i++)
        if (!zt_same_bits(a[i], b[i])) n++;
    return n;
}

/* ---------------------------------------------------------------------- */
/* (4) the double-precision reference trainer                              */

typedef struct dref {
    double w[MAXE], norm[MAXSTEPS], lr[MAXSTEPS];
} dref;

/* Plain Adam/AdamW as DeepSpeed's CPU Adam does it, in double, on the
   average of gas_total micro-batch gradients. emulate: the gradient is
   computed from w rounded to dt, and rounded to dt after scaling by S (a fixed
   power of two) as the engine's users do. skip[s]: step s is skipped (its
   data is lost, nothing changes, the schedule does not advance). */
static void dref_train(dref *R, const zero_config *cfg, int gas_total, int steps, zero_dtype emulate, double S,
                       const int *skip) {
    static double m[MAXE], v[MAXE], g[MAXE];
    int s, t, gm, applied = 0;
    int64_t i;
    /* DeepSpeed's CPU Adam holds betas, eps and beta^t in float and forms
       1 - beta in float (cpu_adam_impl.cpp: betta2_minus1 = 1 - _betta2):
       1 - 0.999f = 0.00099998713, a 1.3e-5 relative offset that shows when
       bias correction is off. The rest of the arithmetic is double. */
    float b1f = (float)cfg->optimizer.beta1, b2f = (float)cfg->optimizer.beta2, b1t = 1, b2t = 1;
    double b1 = b1f, b2 = b2f, omb1 = (float)(1.0f - b1f), omb2 = (float)(1.0f - b2f), eps = (float)cfg->optimizer.eps;
    for (t = 0; t < NT; t++)
        for (i = 0; i < tensors[t].numel; i++) R->w[toff[t] + i] = init_w(t, i);
    memset(m, 0, sizeof m);
    memset(v, 0, sizeof v);
    for (s = 0; s < steps; s++) {
        double sq = 0, coef = 1, lr, bc1, bc2;
        int step_t;
        if (skip && skip[s]) { R->norm[s] = -1; R->lr[s] = 0; continue; }
        for (t = 0; t < NT; t++) {
            if (frozen(t)) continue;
            for (i = 0; i < tensors[t].numel; i++) {
                double acc = 0, w = R->w[toff[t] + i];
                if (emulate != ZERO_DTYPE_FP32) w = zt_round(emulate, (float)w);
                for (gm = 0; gm < gas_total; gm++) {
                    double gi = grad_of(w, s, gm, t, i);
                    if (emulate != ZERO_DTYPE_FP32) gi = zt_round(emulate, (float)(gi * S)) / S;
                    acc += gi;
                }
                g[toff[t] + i] = acc / gas_total;
                sq += g[toff[t] + i] * g[toff[t] + i];
            }
        }
        R->norm[s] = sqrt(sq);
        if (cfg->gradient_clipping > 0) coef = fmin(1.0, cfg->gradient_clipping / (R->norm[s] + 1e-6));
        applied++;
        step_t = applied;
        lr = zero_lr_at(cfg, applied - 2);
        R->lr[s] = lr;
        b1t *= b1f; /* float, one multiplication per applied step */
        b2t *= b2f;
        (void)step_t;
        bc1 = cfg->optimizer.bias_correction ? (float)(1 - b1t) : 1;
        bc2 = cfg->optimizer.bias_correction ? 1 / sqrt((float)(1 - b2t)) : 1;
        for (t = 0; t < NT; t++) {
            double wd = (tensors[t].flags & ZERO_TENSOR_NO_DECAY) ? 0 : cfg->optimizer.weight_decay;
            double lrt = lr * (tensors[t].lr_scale > 0 ? tensors[t].lr_scale : 1);
            if (frozen(t)) continue;
            for (i = 0; i < tensors[t].numel; i++) {
                int64_t k = toff[t] + i;
                double gi = g[k] * coef, p = R->w[k];
                if (!cfg->optimizer.adam_w_mode && wd > 0) gi += wd * p;
                m[k] = b1 * m[k] + omb1 * gi;
                v[k] = b2 * v[k] + omb2 * gi * gi;
                if (cfg->optimizer.adam_w_mode && wd > 0) p -= lrt * wd * p;
                p -= (lrt / bc1) * m[k] / (sqrt(v[k]) * bc2 + eps);
                R->w[k] = p;
            }
        }
    }
}

static void test_vs_double(void) {
    static const struct { int gas, clip, sched, adamw, bc; } cases[] = {
        {1, 0, 0, 1, 1}, {1, 1, 0, 1, 1}, {3, 1, 1, 1, 1}, {4, 0, 1, 0, 1}, {2, 1, 0, 0, 0}, {3, 0, 0, 1, 0},
    };
    int c;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        run_opts o = opts(0, 1, ZERO_DTYPE_FP32, cases[c].gas, DEFAULT_BUCKET, cases[c].clip);
        job J;
        static dref R;
        float wref[MAXE];
        int s;
        int64_t i;
        char what[200];
        o.sched = cases[c].sched;
        o.adamw = cases[c].adamw;
        o.bias_correction = cases[c].bc;
        job_init(&J, &o);
        if (job_run(&J)) {
            check_run_basics(&J);
            dref_train(&R, &J.cfg, o.gas, o.steps, ZERO_DTYPE_FP32, 1, NULL);
            for (i = 0; i < NTOT; i++) wref[i] = (float)R.w[i];
            snprintf(what, sizeof what, "engine vs double Adam (gas %d clip %d WarmupLR %d adamw %d bias_correction %d)",
                     o.gas, o.clip_on, o.sched, o.adamw, o.bias_correction);
            check_close(what, J.w[0], wref, tol_for(ZERO_DTYPE_FP32), NULL);
            for (s = 0; s < o.steps; s++) {
                CHECKF(zt_near(J.info[0][s].grad_norm, R.norm[s], 1e-5), "%s: step %d grad_norm %.9g want %.9g", what, s,
                       J.info[0][s].grad_norm, R.norm[s]);
                CHECKF(J.info[0][s].lr == R.lr[s] || zt_near(J.info[0][s].lr, R.lr[s], 1e-7),
                       "%s: step %d lr %.9g want %.9g", what, s, J.info[0][s].lr, R.lr[s]);
            }
        }
        job_free(&J);
    }
    /* a control: the reference is sensitive to what it checks (a wrong
       averaging factor, a missing bias correction) */
    {
        run_opts o = opts(0, 1, ZERO_DTYPE_FP32, 2, DEFAULT_BUCKET, 1);
        zero_config c1;
        static dref A, B;
        double err = 0;
        int64_t i;
        if (make_cfg(&o, &c1)) {
            dref_train(&A, &c1, 2, o.steps, ZERO_DTYPE_FP32, 1, NULL);
            dref_train(&B, &c1, 1, o.steps, ZERO_DTYPE_FP32, 1, NULL); /* half the batch */
            for (i = 0; i < NTOT; i++) err = fmax(err, fabs(A.w[i] - B.w[i]));
            CHECKF(err > 1e-3, "control: a different batch moves the weights by only %g", err);
            c1.optimizer.bias_correction = 0;
            dref_train(&B, &c1, 2, o.steps, ZERO_DTYPE_FP32, 1, NULL);
            err = 0;
            for (i = 0; i < NTOT; i++) err = fmax(err, fabs(A.w[i] - B.w[i]));
            CHECKF(err > 1e-3, "control: bias correction off moves the weights by only %g", err);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* (1)-(3) the equivalence matrix                                          */

typedef struct refrun {
    int have;
    float w[MAXE];
    double norm[MAXSTEPS];
} refrun;

static void test_matrix(void) {
    static const int worlds_full[] = {1, 2, 3, 4, 8}, worlds_quick[] = {1, 2, 4};
    static const zero_dtype dts_full[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16},
                            dts_quick[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16};
    static const int64_t buckets_full[] = {TINY_BUCKET, DEFAULT_BUCKET}, buckets_quick[] = {TINY_BUCKET};
    const int *worlds = quick ? worlds_quick : worlds_full;
    const zero_dtype *dts = quick ? dts_quick : dts_full;
    const int64_t *buckets = quick ? buckets_quick : buckets_full;
    int nw = quick ? 3 : 5, nd = 3, nb = quick ? 1 : 2;
    int di, clip, gi, wi, bi, st, runs = 0, s;
    double worst[ZERO_DTYPE_COUNT] = {0};
    static refrun refs[ZERO_DTYPE_COUNT][2][25]; /* [dtype][clip][gas_total] */
    static job J[4];

    for (di = 0; di < nd; di++)
        for (clip = quick ? 1 : 0; clip < 2; clip++)
            for (gi = 0; gi < 2; gi++)
                for (wi = 0; wi < nw; wi++) {
                    zero_dtype dt = dts[di];
                    int gas = gi ? 3 : 1, world = worlds[wi], total = gas * world;
                    refrun *R = &refs[dt][clip][total];
                    tol tl = tol_for(dt);
                    if (!R->have) { /* the reference: world 1, stage 0, GAS = N * G */
                        run_opts o = opts(0, 1, dt, total, DEFAULT_BUCKET, clip);
                        job_init(&J[0], &o);
                        if (job_run(&J[0])) {
                            check_run_basics(&J[0]);
                            memcpy(R->w, J[0].w[0], sizeof(float) * (size_t)NTOT);
                            for (s = 0; s < o.steps; s++) R->norm[s] = J[0].info[0][s].grad_norm;
                            R->have = 1;
                        }
                        job_free(&J[0]);
                        runs++;
                        if (!R->have) continue;
                    }
                    for (bi = 0; bi < nb; bi++) {
                        int okrun[4] = {0, 0, 0, 0};
                        char what[256];
                        for (st = 0; st < 4; st++) {
                            run_opts o = opts(st, world, dt, gas, buckets[bi], clip);
                            job_init(&J[st], &o);
                            okrun[st] = job_run(&J[st]);
                            runs++;
                            if (!okrun[st]) continue;
                            check_run_basics(&J[st]);
                            snprintf(what, sizeof what, "(3) %s vs world 1 stage 0 gas %d", desc(&o), total);
                            check_close(what, J[st].w[0], R->w, tl, &worst[dt]);
                            for (s = 0; s < o.steps; s++)
                                if (!zt_near(J[st].info[0][s].grad_norm, R->norm[s], tl.norm)) {
                                    CHECKF(0, "%s: step %d grad_norm %.9g want %.9g", what, s, J[st].info[0][s].grad_norm,
                                           R->norm[s]);
                                    break;
                                }
                        }
                        if (gas == 1) { /* (1) */
                            for (st = 1; st < 4; st++)
                                if (okrun[0] && okrun[st]) {
                                    int64_t d = bit_diff(J[st].w[0], J[0].w[0]);
                                    CHECKF(d == 0, "(1) %s: %lld elements differ from stage 0 (want bitwise equal)",
                                           desc(&J[st].o), (long long)d);
                                }
                        } else { /* (2) */
                            if (okrun[0] && okrun[1]) {
                                int64_t d = bit_diff(J[1].w[0], J[0].w[0]);
                                CHECKF(d == 0, "(2) %s: %lld elements differ from stage 0", desc(&J[1].o), (long long)d);
                            }
                            if (okrun[2] && okrun[3]) {
                                int64_t d = bit_diff(J[3].w[0], J[2].w[0]);
                                CHECKF(d == 0, "(2) %s: %lld elements differ from stage 2", desc(&J[3].o), (long long)d);
                            }
                            if (okrun[0] && okrun[2]) {
                                snprintf(what, sizeof what, "(2) %s vs stage 0", desc(&J[2].o));
                                check_close(what, J[2].w[0], J[0].w[0], tl, NULL);
                            }
                        }
                        for (st = 0; st < 4; st++) job_free(&J[st]);
                    }
                }
    printf("test_matrix: %d runs; worst error / move: fp32 %.3g (allowed %.3g), fp16 %.3g (%.3g), bf16 %.3g (%.3g)\n", runs,
           worst[ZERO_DTYPE_FP32], tol_for(ZERO_DTYPE_FP32).move, worst[ZERO_DTYPE_FP16], tol_for(ZERO_DTYPE_FP16).move,
           worst[ZERO_DTYPE_BF16], tol_for(ZERO_DTYPE_BF16).move);
}

/* The 16-bit engine against the double trainer that emulates the rounding
   of parameters and gradients: catches errors the engine-vs-engine matrix
   cannot (both sides sharing a mistake in the 16-bit path). */
static void test_half_vs_double(void) {
    int di;
    for (di = 0; di < 2; di++) {
        zero_dtype dt = di ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP16;
        run_opts o = opts(2, 2, dt, 2, TINY_BUCKET, 1);
        job J;
        static dref R;
        float wref[MAXE];
        int64_t i;
        char what[200];
        job_init(&J, &o);
        if (job_run(&J)) {
            dref_train(&R, &J.cfg, o.gas * o.world, o.steps, dt, dt == ZERO_DTYPE_FP16 ? 256.0 : 1.0, NULL);
            for (i = 0; i < NTOT; i++) wref[i] = (float)R.w[i];
            snprintf(what, sizeof what, "%s vs double Adam with %s rounding", desc(&o), zero_dtype_name(dt));
            check_close(what, J.w[0], wref, tol_for(dt), NULL);
        }
        job_free(&J);
    }
}

/* ---------------------------------------------------------------------- */
/* overflow injection                                                      */

static void test_overflow(void) {
    /* steps with inf/nan on one rank; a window of 4 and hysteresis 2 make
       the scale move both ways within 20 steps */
    static const struct { int step; float value; int tail; } pat[] = {
        {0, INFINITY, 0}, {2, NAN, 0}, {3, -INFINITY, 0}, {9, INFINITY, 0}, {14, NAN, 0}, {15, INFINITY, 0},
        {9, NAN, 0},      /* a second unit on another rank at step 9: the first unit is reported */
        {17, INFINITY, 1}, /* not the unit's first tensor: overflow_tensor names the one that held it */
    };
    int npat = (int)(sizeof pat / sizeof pat[0]);
    static const int worlds_full[] = {1, 2, 3, 4}, worlds_quick[] = {2};
    int nw = quick ? 1 : 4, wi, st;
    for (wi = 0; wi < nw; wi++)
        for (st = 0; st < 4; st++) {
            int world = quick ? worlds_quick[wi] : worlds_full[wi];
            run_opts o = opts(st, world, ZERO_DTYPE_FP16, st == 1 ? 2 : 1, TINY_BUCKET, 1);
            job J;
            zero_loss_scaler sc;
            int skip[MAXSTEPS] = {0}, k, s, r, applied = 0, nskip = 0;
            o.steps = 20;
            o.sched = 1;
            o.fp16_window = 4;
            o.fp16_hysteresis = 2;
            job_init(&J, &o);
            J.snapshots = 1;
            for (k = 0; k < npat; k++) {
                J.inj[k].step = pat[k].step;
                J.inj[k].rank = (pat[k].step * 7 + 1 + (k == 6)) % world;
                J.inj[k].micro = o.gas - 1 - (pat[k].step % o.gas);
                J.inj[k].unit_pick = 3 * k + 1;
                J.inj[k].value = pat[k].value;
                J.inj[k].tail = pat[k].tail;
                skip[pat[k].step] = 1;
            }
            J.n_inject = npat;
            if (!job_run(&J)) { job_free(&J); continue; }
            /* the tail injection lands in ln0.bias, the second tensor of the ln0 unit */
            CHECKF(J.expect_tensor[17] == 2, "overflow %s: the tail injection went to tensor %d, not ln0.bias", desc(&o),
                   J.expect_tensor[17]);
            zero_loss_scaler_init(&sc, &J.cfg);
            for (s = 0; s < o.steps; s++) {
                double before = zero_loss_scaler_scale(&sc), lr_want = zero_lr_at(&J.cfg, applied - 1);
                int bad = 0;
                zero_loss_scaler_update(&sc, skip[s]);
                if (skip[s]) nskip++; else applied++;
                for (r = 0; r < world; r++) {
                    const zero_step_info *a = &J.info[r][s];
                    if (a->applied != !skip[s] || a->loss_scale != before || a->next_loss_scale != zero_loss_scaler_scale(&sc) ||
                        a->skipped_steps != nskip || a->global_steps != s + 1 ||
                        (!skip[s] && !zt_near(a->lr, lr_want, 1e-12))) bad = 1;
                    if (skip[s] && (a->overflow_unit != J.expect_unit[s] || a->overflow_tensor != J.expect_tensor[s] ||
                                    a->grad_norm != -1)) bad = 1;
                    if (!skip[s] && (a->overflow_unit != -1 || a->overflow_tensor != -1)) bad = 1;
                    if (bad) {
                        CHECKF(0,
                               "overflow %s step %d rank %d: applied %d (want %d) scale %g->%g (want %g->%g) skipped %lld (want %d) "
                               "global %lld lr %g (want %g) unit %d tensor %d (want %d %d) norm %g",
                               desc(&o), s, r, a->applied, !skip[s], a->loss_scale, a->next_loss_scale, before,
                               zero_loss_scaler_scale(&sc), (long long)a->skipped_steps, nskip, (long long)a->global_steps,
                               a->lr, lr_want, a->overflow_unit, a->overflow_tensor, J.expect_unit[s], J.expect_tensor[s],
                               a->grad_norm);
                        break;
                    }
                }
                CHECK(!bad);
                /* master, m and v untouched by a skipped step; changed by an applied one */
                for (k = 0; k < 3; k++) {
                    const float *prev = J.snap[k] + (size_t)s * (size_t)NTOT, *cur = prev + NTOT;
                    int64_t d = 0, i;
                    for (i = 0; i < NTOT; i++)
                        if (!zt_same_bits(prev[i], cur[i])) d++;
                    if (skip[s]) CHECKF(d == 0, "overflow %s step %d: %lld elements of state %d changed on a skipped step", desc(&o), s,
                                        (long long)d, k);
                    else CHECKF(d > 0, "overflow %s step %d: state %d did not change on an applied step", desc(&o), s, k);
                }
            }
            /* Adam's step count and the schedule skip too: the result equals
               training on the applied steps alone */
            {
                static dref R;
                float wref[MAXE];
                int64_t i;
                dref_train(&R, &J.cfg, o.gas * world, o.steps, ZERO_DTYPE_FP16, 256.0, skip);
                for (i = 0; i < NTOT; i++) wref[i] = (float)R.w[i];
                /* the scale changes by powers of two only, so the emulation with a
                   fixed S is exact as long as nothing underflows */
                check_close("overflow run vs double Adam on the applied steps", J.w[0], wref, tol_for(ZERO_DTYPE_FP16), NULL);
            }
            check_run_basics(&J);
            job_free(&J);
        }
}

/* bf16 with check_grad_overflow (default true): stages 1 and 2 skip a step
   with inf/nan like fp16, with the scale fixed at 1 (deepspeed.md 1.6). */
static void test_bf16_overflow(void) {
    int st;
    for (st = 1; st <= 2; st++) {
        run_opts o = opts(st, 2, ZERO_DTYPE_BF16, 1, TINY_BUCKET, 0);
        job J;
        int s;
        o.steps = 6;
        job_init(&J, &o);
        J.snapshots = 1;
        J.n_inject = 1;
        J.inj[0].step = 2;
        J.inj[0].rank = 1;
        J.inj[0].unit_pick = 2;
        J.inj[0].value = INFINITY;
        if (job_run(&J)) {
            for (s = 0; s < o.steps; s++) {
                const zero_step_info *a = &J.info[0][s];
                CHECKF(a->applied == (s != 2) && a->loss_scale == 1.0 && a->next_loss_scale == 1.0 &&
                           a->skipped_steps == (s >= 2),
                       "bf16 stage %d step %d: applied %d scale %g skipped %lld", st, s, a->applied, a->loss_scale,
                       (long long)a->skipped_steps);
            }
            CHECK_EQ_INT(J.info[0][2].overflow_unit, J.expect_unit[2]);
            CHECK(bit_diff(J.snap[0] + 2 * NTOT, J.snap[0] + 3 * NTOT) == 0);
            CHECK(bit_diff(J.snap[1] + 2 * NTOT, J.snap[1] + 3 * NTOT) == 0);
        }
        job_free(&J);
    }
    /* stage 3 checks overflow only for fp16 (DeepSpeed's stage3.py, deepspeed.md
       1.6): a bf16 inf is not skipped, the norm is reported as -1 */
    {
        run_opts o = opts(3, 2, ZERO_DTYPE_BF16, 1, TINY_BUCKET, 0);
        job J;
        int s;
        o.steps = 4;
        job_init(&J, &o);
        J.n_inject = 1;
        J.inj[0].step = 2;
        J.inj[0].rank = 1;
        J.inj[0].unit_pick = 2;
        J.inj[0].value = INFINITY;
        if (job_run(&J))
            for (s = 0; s < o.steps; s++)
                CHECKF(J.info[0][s].applied == 1 && J.info[0][s].skipped_steps == 0 && (s != 2 || J.info[0][s].grad_norm == -1),
                       "bf16 stage 3 step %d: applied %d skipped %lld norm %g", s, J.info[0][s].applied,
                       (long long)J.info[0][s].skipped_steps, J.info[0][s].grad_norm);
        job_free(&J);
    }
}

/* Layers visited in a different order every micro-batch (stage 3: fetch
   orders that break the recorded trace, with a pool of 2 units): the math
   does not change, so (1)-(3) hold as with the fixed order. */
static void test_shuffled_order(void) {
    int di, gi, st;
    for (di = 0; di < 2; di++)
        for (gi = 0; gi < 2; gi++) {
            zero_dtype dt = di ? ZERO_DTYPE_FP16 : ZERO_DTYPE_FP32;
            int gas = gi ? 2 : 1, world = 4, ok[4];
            static job J[4], R;
            run_opts ro = opts(0, 1, dt, gas * world, DEFAULT_BUCKET, 1);
            if (quick && gi) continue;
            job_init(&R, &ro);
            if (!job_run(&R)) { job_free(&R); continue; }
            for (st = 0; st < 4; st++) {
                run_opts o = opts(st, world, dt, gas, TINY_BUCKET, 1);
                char what[200];
                o.shuffle = 1;
                o.max_live = 1; /* the pool's minimum: 2 of the largest units */
                o.prefetch = 1;
                job_init(&J[st], &o);
                ok[st] = job_run(&J[st]);
                if (!ok[st]) continue;
                check_run_basics(&J[st]);
                snprintf(what, sizeof what, "shuffled order: %s vs world 1 in order", desc(&o));
                check_close(what, J[st].w[0], R.w[0], tol_for(dt), NULL);
            }
            for (st = 1; st < 4; st++) {
                int base = gas == 1 ? 0 : st == 1 ? 0 : st == 3 ? 2 : -1;
                if (base >= 0 && ok[st] && ok[base])
                    CHECKF(bit_diff(J[st].w[0], J[base].w[0]) == 0, "shuffled order: %s differs bitwise from stage %d", desc(&J[st].o),
                           base);
            }
            for (st = 0; st < 4; st++) job_free(&J[st]);
            job_free(&R);
        }
}

/* ---------------------------------------------------------------------- */
/* determinism                                                             */

static void test_determinism(void) {
    static const struct { int stage, world; zero_dtype dt; int gas; } cases[] = {
        {3, 4, ZERO_DTYPE_FP16, 3}, {2, 3, ZERO_DTYPE_BF16, 2}, {1, 8, ZERO_DTYPE_FP32, 1},
    };
    int c, n = quick ? 1 : 3;
    for (c = 0; c < n; c++) {
        static job A, B;
        run_opts o = opts(cases[c].stage, cases[c].world, cases[c].dt, cases[c].gas, TINY_BUCKET, 1);
        job_init(&A, &o);
        job_init(&B, &o);
        if (job_run(&A) && job_run(&B)) {
            int s, same_info = 1;
            CHECKF(bit_diff(A.w[0], B.w[0]) == 0, "determinism %s: two runs differ", desc(&o));
            for (s = 0; s < o.steps; s++)
                if (A.info[0][s].grad_norm != B.info[0][s].grad_norm) same_info = 0;
            CHECKF(same_info, "determinism %s: grad norms differ", desc(&o));
        }
        job_free(&A);
        job_free(&B);
    }
}

/* ---------------------------------------------------------------------- */
/* memory                                                                  */

static const char *cat_name[ZERO_MEM_CATEGORY_COUNT] = {"params", "gather_pool", "grads", "grad_accum",
                                                        "master", "optim_state", "scratch"};

/* One run's memory: the plan equals what the backend handed out (the
   engine's own count and the host backend's), every category follows the
   formulas of plan_want, and destroy gives everything back. */
static void check_memory(const job *J) {
    int r, c, k;
    const run_opts *o = &J->o;
    for (r = 0; r < o->world; r++) {
        const zero_memory_stats *ms = &J->mem[r];
        for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) {
            size_t sum = 0;
            for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) sum += ms->planned[c][k];
            CHECKF(ms->allocated[k] == ms->planned_total[k] && sum == ms->planned_total[k],
                   "memory %s rank %d kind %d: allocated %zu, planned total %zu, categories %zu", desc(o), r, k,
                   ms->allocated[k], ms->planned_total[k], sum);
            CHECKF(J->host_alloc[r][k] == ms->allocated[k], "memory %s rank %d kind %d: host backend counts %zu, engine %zu",
                   desc(o), r, k, J->host_alloc[r][k], ms->allocated[k]);
            CHECKF(J->host_left[r][k] == 0, "memory %s rank %d kind %d: %zu bytes still allocated after destroy", desc(o), r, k,
                   J->host_left[r][k]);
            for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++)
                CHECKF(ms->planned[c][k] == J->mem_want[r][c][k], "memory %s rank %d: %s (kind %d) %zu bytes, formula %zu", desc(o),
                       r, cat_name[c], k, ms->planned[c][k], J->mem_want[r][c][k]);
        }
        CHECK_EQ_INT(ms->world, o->world);
        CHECK_EQ_INT(ms->shard_world, o->shard ? o->shard : o->world);
        CHECK_EQ_INT(ms->stage, o->stage);
        CHECK_EQ_INT(ms->params, NTOT);
        CHECK_EQ_INT(ms->trainable_params, trainable_elems());
        CHECK_EQ_INT(ms->shard_params * (o->shard ? o->shard : o->world), ms->padded_params);
        CHECK_EQ_INT(ms->dtype, o->dtype);
        CHECK_EQ_INT(ms->accum_dtype, (o->stage >= 2 && o->gas == 1) ? o->dtype : J->cfg.grad_accum_dtype);
    }
}

static void test_memory(void) {
    static const int worlds_full[] = {1, 2, 4, 8}, worlds_quick[] = {2};
    int nw = quick ? 1 : 4, wi, st, c, v;
    /* data_types.grad_accum_dtype unset means fp32 in zero (zero.h) */
    {
        run_opts o = opts(2, 2, ZERO_DTYPE_BF16, 2, TINY_BUCKET, 0);
        zero_config cf;
        if (make_cfg(&o, &cf)) CHECK_EQ_INT(cf.grad_accum_dtype, ZERO_DTYPE_FP32);
    }
    for (wi = 0; wi < nw; wi++) {
        int world = quick ? worlds_quick[wi] : worlds_full[wi];
        size_t table[4][ZERO_MEM_CATEGORY_COUNT];
        memset(table, 0, sizeof table);
        for (v = 0; v < (quick ? 1 : 3); v++)
            for (st = 0; st < 4; st++) {
                /* v 0: fp16 gas 1 (the printed table); 1: fp32 gas 3; 2: bf16 gas 2, default bucket */
                run_opts o = v == 0   ? opts(st, world, ZERO_DTYPE_FP16, 1, TINY_BUCKET, 1)
                             : v == 1 ? opts(st, world, ZERO_DTYPE_FP32, 3, TINY_BUCKET, 1)
                                      : opts(st, world, ZERO_DTYPE_BF16, 2, DEFAULT_BUCKET, 0);
                job J;
                o.steps = 1;
                job_init(&J, &o);
                if (job_run(&J)) {
                    check_memory(&J);
                    if (v == 0)
                        for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++)
                            table[st][c] = J.mem[0].planned[c][ZERO_MEM_DEVICE] + J.mem[0].planned[c][ZERO_MEM_PINNED] +
                                           J.mem[0].planned[c][ZERO_MEM_HOST];
                }
                job_free(&J);
            }
        {
            size_t tot[4] = {0, 0, 0, 0};
            printf("memory per rank, bytes, fp16, %d rank%s, %lld parameters, tiny buckets:\n", world, world > 1 ? "s" : "",
                   (long long)NTOT);
            printf("  %-12s %10s %10s %10s %10s\n", "category", "stage 0", "stage 1", "stage 2", "stage 3");
            for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) {
                printf("  %-12s %10zu %10zu %10zu %10zu\n", cat_name[c], table[0][c], table[1][c], table[2][c], table[3][c]);
                for (st = 0; st < 4; st++) tot[st] += table[st][c];
            }
            printf("  %-12s %10zu %10zu %10zu %10zu\n", "total", tot[0], tot[1], tot[2], tot[3]);
        }
    }
}

/* A model large enough for ZeRO's per-rank savings to show (16 tensors of
   16384 elements, bucket = one tensor, stage 3 pool bounded to 2 units):
   the engine's plan follows the formulas, equals what was allocated, and each
   stage needs less per rank than the one before; bytes per parameter printed
   like the ZeRO paper's table (fp16: 16, 4 + 12/N, 2 + 14/N, 16/N). */
typedef struct bigjob {
    zero_config cfg;
    zero_memory_stats mem[MAXW];
    size_t want[MAXW][ZERO_MEM_CATEGORY_COUNT][ZERO_MEM_KIND_COUNT];
    size_t host_alloc[MAXW][ZERO_MEM_KIND_COUNT];
    char err[MAXW][1100];
} bigjob;

#define BIG_T 16
#define BIG_N 16384
static zero_tensor big_tensors[BIG_T];

static zero_result big_fn(const zero_backend *b, void *arg) {
    bigjob *B = (bigjob *)arg;
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    int k;
    if ((r = zero_engine_create(&e, &B->cfg, big_tensors, BIG_T, b, &err)) != ZERO_OK) {
        snprintf(B->err[b->rank], sizeof B->err[b->rank], "%s", err.msg);
        return r;
    }
    zero_memory_report(e, &B->mem[b->rank]);
    plan_want(zero_engine_layout(e), &B->cfg, B->want[b->rank]);
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) B->host_alloc[b->rank][k] = zero_host_allocated_bytes(b, (zero_mem_kind)k);
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void test_memory_large(void) {
    static bigjob B;
    static char names[BIG_T][16];
    int world = quick ? 4 : 8, st, c, k, r, t;
    size_t tot[4] = {0, 0, 0, 0}, table[4][ZERO_MEM_CATEGORY_COUNT];
    double nparam = (double)BIG_T * BIG_N;
    for (t = 0; t < BIG_T; t++) {
        memset(&big_tensors[t], 0, sizeof big_tensors[t]);
        snprintf(names[t], sizeof names[t], "layer%d.w", t);
        big_tensors[t].name = names[t];
        big_tensors[t].numel = BIG_N;
        big_tensors[t].group = t;
    }
    memset(table, 0, sizeof table);
    for (st = 0; st < 4; st++) {
        zero_error err;
        memset(&B, 0, sizeof B);
        B.cfg = zero_config_default();
        B.cfg.train_micro_batch_size_per_gpu = 1;
        B.cfg.fp16.enabled = 1;
        B.cfg.zero_optimization.stage = st;
        B.cfg.zero_optimization.reduce_bucket_size = BIG_N;
        B.cfg.zero_optimization.stage3_max_live_parameters = 2 * BIG_N;
        B.cfg.zero_optimization.stage3_prefetch_bucket_size = 0;
        B.cfg.zero_optimization.stage3_param_persistence_threshold = 0; /* every tensor gathered on demand */
        B.cfg.log.level = ZERO_LOG_WARN;
        if (zero_config_resolve(&B.cfg, world, &err) != ZERO_OK) { CHECKF(0, "%s", err.msg); return; }
        if (zero_host_run(world, big_fn, &B, &err) != ZERO_OK) {
            CHECKF(0, "large model stage %d: %s | %s", st, err.msg, B.err[0]);
            continue;
        }
        for (r = 0; r < world; r++)
            for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) {
                CHECKF(B.mem[r].allocated[k] == B.mem[r].planned_total[k] && B.host_alloc[r][k] == B.mem[r].allocated[k],
                       "large model stage %d rank %d kind %d: allocated %zu planned %zu host %zu", st, r, k, B.mem[r].allocated[k],
                       B.mem[r].planned_total[k], B.host_alloc[r][k]);
                for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++)
                    CHECKF(B.mem[r].planned[c][k] == B.want[r][c][k], "large model stage %d rank %d: %s (kind %d) %zu, formula %zu", st,
                           r, cat_name[c], k, B.mem[r].planned[c][k], B.want[r][c][k]);
            }
        for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) {
            for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) table[st][c] += B.mem[0].planned[c][k];
            tot[st] += table[st][c];
        }
    }
    printf("memory per rank, fp16, %d ranks, %.0f parameters in %d units (stage 3 pool: 2 units), bytes per parameter:\n", world,
           nparam, BIG_T);
    printf("  %-12s %8s %8s %8s %8s\n", "category", "stage 0", "stage 1", "stage 2", "stage 3");
    for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++)
        printf("  %-12s %8.3f %8.3f %8.3f %8.3f\n", cat_name[c], table[0][c] / nparam, table[1][c] / nparam, table[2][c] / nparam,
               table[3][c] / nparam);
    printf("  %-12s %8.3f %8.3f %8.3f %8.3f\n", "total", tot[0] / nparam, tot[1] / nparam, tot[2] / nparam, tot[3] / nparam);
    CHECKF(tot[1] < tot[0] && tot[2] < tot[1] && tot[3] < tot[2], "per-rank totals do not fall stage by stage: %zu %zu %zu %zu", tot[0],
           tot[1], tot[2], tot[3]);
    /* the model states of the ZeRO paper (fp16 params + grads, fp32 master + Adam) */
    CHECK_NEAR(tot[0] / nparam, 16.0, 0.01);
}

/* ---------------------------------------------------------------------- */
/* random models: layouts with every kind of straddling and padding        */

/* Hybrid sharding (mics_shard_size G) on 8 ranks, as 8 groups of 1 (pure
   replication), 4 of 2, 2 of 4 and 1 of 8 (flat), stages 1-3, fp32 and
   bf16, with and without accumulation, against the flat run of the same
   world. Exact gradients (multiples of 1/8, whose sums, averages over
   powers of two and squares round in no order): the weights are bitwise
   the flat run's, clipping on. Random gradients: the group's reduce-scatter
   and the all-reduce across groups add the ranks' contributions in another
   order than the flat reduce-scatter (and the norm's squares in other
   chunks), so the weights agree within tol_for's bound of a summation
   order, as every world size does against world 1; G = 1 with clipping off
   and G = 8 are bitwise. Every rank of every group ends with the same
   weights (check_run_basics), and the memory per rank is the plan of a
   world of G (check_memory). */
static void test_hybrid(void) {
    static const int shards[] = {1, 2, 4, 8};
    static const zero_dtype dts[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_BF16};
    static job F, H;
    int st, di, gi, ex, si, runs = 0, s;
    for (ex = 1; ex >= 0; ex--)
        for (st = 1; st <= 3; st++)
            for (di = 0; di < 2; di++)
                for (gi = 0; gi < 2; gi++) {
                    int gas = gi ? 3 : 1, clip = ex || st == 2;
                    run_opts o = opts(st, 8, dts[di], gas, TINY_BUCKET, clip);
                    o.exact = ex;
                    if (quick) o.steps = 4;
                    job_init(&F, &o);
                    runs++;
                    if (!job_run(&F)) { job_free(&F); continue; }
                    check_run_basics(&F);
                    for (si = 0; si < 4; si++) {
                        char what[200];
                        run_opts h = o;
                        int64_t d;
                        h.shard = shards[si];
                        job_init(&H, &h);
                        runs++;
                        if (job_run(&H)) {
                            check_run_basics(&H);
                            d = bit_diff(H.w[0], F.w[0]);
                            snprintf(what, sizeof what, "hybrid %dx%d (mics_shard_size %d) %s %s vs flat", 8 / h.shard,
                                     h.shard, h.shard, desc(&h), ex ? "exact gradients" : "random gradients");
                            if (ex || h.shard == 8 || (h.shard == 1 && !clip && (gas == 1 || st == 1)))
                                CHECKF(d == 0, "%s: %lld elements differ (want bitwise equal)", what, (long long)d);
                            else
                                check_close(what, H.w[0], F.w[0], tol_for(o.dtype), NULL);
                            for (s = 0; s < o.steps; s++)
                                if (ex ? H.info[0][s].grad_norm != F.info[0][s].grad_norm
                                       : !zt_near(H.info[0][s].grad_norm, F.info[0][s].grad_norm, tol_for(o.dtype).norm)) {
                                    CHECKF(0, "%s: step %d grad_norm %.17g, flat %.17g", what, s, H.info[0][s].grad_norm,
                                           F.info[0][s].grad_norm);
                                    break;
                                }
                            /* what crossed each kind of link: the flat run's gradient bytes split into the
                               shard group's and the groups' all-reduce */
                            CHECKF(h.shard == 8 || (H.info[0][0].comm_bytes[ZERO_GROUP_REPLICA] > 0 &&
                                                    H.info[0][0].comm_bytes[ZERO_GROUP_WORLD] < F.info[0][0].comm_bytes[ZERO_GROUP_WORLD]),
                                   "%s: bytes per step: world %lld, shard %lld, replica %lld (flat: world %lld)", what,
                                   (long long)H.info[0][0].comm_bytes[ZERO_GROUP_WORLD],
                                   (long long)H.info[0][0].comm_bytes[ZERO_GROUP_SHARD],
                                   (long long)H.info[0][0].comm_bytes[ZERO_GROUP_REPLICA],
                                   (long long)F.info[0][0].comm_bytes[ZERO_GROUP_WORLD]);
                            CHECKF(h.shard > 1 || H.info[0][0].comm_bytes[ZERO_GROUP_SHARD] == 0,
                                   "%s: groups of one rank sent %lld bytes inside the group", what,
                                   (long long)H.info[0][0].comm_bytes[ZERO_GROUP_SHARD]);
                        }
                        job_free(&H);
                    }
                    job_free(&F);
                }
    printf("test_hybrid: %d runs of 8 ranks\n", runs);
}

static void print_model(void) {
    int t;
    fprintf(stderr, "  model (numel:group:flags:lr_scale):");
    for (t = 0; t < NT; t++)
        fprintf(stderr, " %lld:%d:%d:%g", (long long)tensors[t].numel, tensors[t].group, tensors[t].flags, (double)tensors[t].lr_scale);
    fputc('\n', stderr);
}

static void test_random_models(int iters) {
    static const int worlds[] = {2, 3, 4, 5, 7, 8};
    static const int64_t buckets[] = {0, 8, 16, 24, 40, 200, DEFAULT_BUCKET}; /* 0: one tensor per unit */
    static const zero_dtype dts[] = {ZERO_DTYPE_FP32, ZERO_DTYPE_FP16, ZERO_DTYPE_BF16};
    static const int64_t persists[] = {0, 3, 10};
    static job J[4], R;
    int it, st, failed = 0;
    for (it = 0; it < iters && failed < 3; it++) {
        int world = worlds[zt_rand_int(0, 5)], gas = (int)zt_rand_int(1, 2), clip = (int)zt_rand_int(0, 1);
        int64_t bucket = buckets[zt_rand_int(0, 6)], persist = persists[zt_rand_int(0, 2)];
        zero_dtype dt = dts[zt_rand_int(0, 2)];
        int fail0 = zt_fail, ok[4], shuffle = zt_rand_int(0, 2) == 0;
        tol tl = tol_for(dt);
        run_opts ro = opts(0, 1, dt, gas * world, DEFAULT_BUCKET, clip);
        model_random(world);
        ro.steps = 10;
        job_init(&R, &ro);
        if (!job_run(&R)) { job_free(&R); print_model(); failed++; continue; }
        for (st = 0; st < 4; st++) {
            run_opts o = opts(st, world, dt, gas, bucket, clip);
            char what[200];
            o.steps = 10;
            o.persist = persist;
            o.shuffle = shuffle;
            if (st == 3) { /* the gather pool from its minimum (2 largest units) to everything */
                static const int64_t lives[] = {0, 1, 64}, pres[] = {0, -1, 32};
                o.max_live = lives[zt_rand_int(0, 2)];
                o.prefetch = pres[zt_rand_int(0, 2)];
            }
            job_init(&J[st], &o);
            ok[st] = job_run(&J[st]);
            if (!ok[st]) continue;
            check_run_basics(&J[st]);
            snprintf(what, sizeof what, "random model %d: %s bucket %lld persist %lld live %lld prefetch %lld shuffle %d vs world 1", it,
                     desc(&o), (long long)bucket, (long long)persist, (long long)o.max_live, (long long)o.prefetch, shuffle);
            check_close(what, J[st].w[0], R.w[0], tl, NULL);
        }
        for (st = 1; st < 4; st++) {
            int base = gas == 1 ? 0 : st == 1 ? 0 : st == 3 ? 2 : -1;
            if (base < 0 || !ok[st] || !ok[base]) continue;
            CHECKF(bit_diff(J[st].w[0], J[base].w[0]) == 0, "random model %d: %s bucket %lld: differs bitwise from stage %d", it,
                   desc(&J[st].o), (long long)bucket, base);
        }
        if (zt_fail != fail0) { print_model(); failed++; }
        for (st = 0; st < 4; st++) job_free(&J[st]);
        job_free(&R);
    }
    model_setup(); /* back to the fixed model */
}

int main(void) {
    clock_t t0 = clock();
    quick = getenv("ZERO_TEST_QUICK") && atoi(getenv("ZERO_TEST_QUICK"));
    zt_seed("test_engine");
    model_setup();
    test_vs_double();
    test_half_vs_double();
    test_overflow();
    test_bf16_overflow();
    test_determinism();
    test_shuffled_order();
    test_memory();
    test_memory_large();
    test_matrix();
    test_hybrid();
    test_random_models(quick ? 12 : 60);
    printf("worst error seen, as a fraction of max|w| / of the move (allowed):\n"
           "  fp32 %.3g (%.3g) / %.3g (%.3g)\n  fp16 %.3g (%.3g) / %.3g (%.3g)\n  bf16 %.3g (%.3g) / %.3g (%.3g)\n",
           seen_rel[ZERO_DTYPE_FP32], tol_for(ZERO_DTYPE_FP32).rel, seen_move[ZERO_DTYPE_FP32], tol_for(ZERO_DTYPE_FP32).move,
           seen_rel[ZERO_DTYPE_FP16], tol_for(ZERO_DTYPE_FP16).rel, seen_move[ZERO_DTYPE_FP16], tol_for(ZERO_DTYPE_FP16).move,
           seen_rel[ZERO_DTYPE_BF16], tol_for(ZERO_DTYPE_BF16).rel, seen_move[ZERO_DTYPE_BF16], tol_for(ZERO_DTYPE_BF16).move);
    {
        int c;
        for (c = 1; c < ZERO_DTYPE_COUNT; c++)
            printf("  %s worst: %s | %s\n", zero_dtype_name((zero_dtype)c), seen_rel_what[c], seen_move_what[c]);
    }
    printf("test_engine: %s matrix, %.1f s cpu\n", quick ? "quick" : "full", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return zt_finish();
}
