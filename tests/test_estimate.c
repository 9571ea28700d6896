/* test_estimate.c - the memory estimator (in zero.h): DeepSpeed's
   worked example and the ZeRO paper's table, random argument sets against a
   plain reimplementation, the engine's own plan (zero_memory_report of
   engines on host ranks: stages 1-3 x 1, 2 and 4 ranks x 1 and 3
   micro-batches x fp32 / bf16 / bf16 with bf16 master and optimizer states x
   optimizer offload), monotonicity, the
   max_params round trip, and every error path.

   Run alone: make test T=test_estimate */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

#define GIB 1073741824.0

static zero_estimate_args args(double P, double L, int g, int n, int stage, int oo, int op) {
    zero_estimate_args a;
    memset(&a, 0, sizeof a);
    a.params = P;
    a.largest_layer = L;
    a.gpus_per_node = g;
    a.nodes = n;
    a.stage = stage;
    a.offload_optimizer = (zero_offload_device)oo;
    a.offload_param = (zero_offload_device)op;
    a.zero_init = 1;
    a.stage3_prefetch_bucket_size = -1; /* the default; 0 would mean no prefetch */
    return a;
}

/* ---- the independent reimplementation (plain, per rank, then per node) ---- */

typedef struct ref_plan {
    double ds_gpu, ds_cpu;
    double gpu_params, gpu_grads, gpu_optim, cpu_params, cpu_grads, cpu_optim, nvme;
    double arena; /* the node's arenas of the host sum (in cpu_grads) */
} ref_plan;

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

/* Python's int() of a float. */
static double py_int(double x) { return x < 0 ? ceil(x) : floor(x); }

/* A rank's arena of the host sum (stages 2-3, the optimizer offloaded, accumulation) as the plan prices it:
   three of the largest unit's chunk in the compute dtype (it grows past that at its first use only into host
   memory left over, which no plan counts) */
static double ref_arena(const zero_estimate_args *a, double bytes, double shard, double tile) {
    (void)shard;
    if (a->stage < 2 || a->gradient_accumulation_steps <= 1 || a->offload_optimizer == ZERO_OFFLOAD_NONE) return 0;
    return 3 * bytes * tile;
}

/* The gradient ring's slots in the reference (stages 2-3 with the optimizer offloaded, where it has one):
   three with one micro-batch and a slot of the largest ring span of at most 256 MiB, else two (0 at stages
   0-1); where ref_slots_force is not 0, that count. */
static int ref_slots_force;
static int ref_slots(const zero_estimate_args *a) {
    double P = a->params, L = a->largest_layer > 0 ? a->largest_layer : a->params / 20;
    double bytes = a->compute_dtype == ZERO_DTYPE_FP32 ? 4 : 2;
    double bucket = a->reduce_bucket_size > 0 ? (double)a->reduce_bucket_size : 5e8;
    double unit = dmin(P, dmax(bucket, L));
    if (a->stage < 2) return 0;
    if (ref_slots_force) return ref_slots_force;
    return a->offload_optimizer != ZERO_OFFLOAD_NONE && a->gradient_accumulation_steps <= 1 &&
                   bytes * unit <= 256.0 * 1024 * 1024
               ? 3
               : 2;
}

static ref_plan reference(const zero_estimate_args *a) {
    ref_plan r;
    double P = a->params, L = a->largest_layer > 0 ? a->largest_layer : a->params / 20;
    double g = a->gpus_per_node, n = a->nodes, G = g * n;
    double f = a->additional_buffer_factor > 0 ? a->additional_buffer_factor : 1.5;
    double bytes = a->compute_dtype == ZERO_DTYPE_FP32 ? 4 : 2;
    double bucket = a->reduce_bucket_size > 0 ? (double)a->reduce_bucket_size : 5e8;
    double live = (double)a->stage3_max_live_parameters; /* <= 0: derived, the pool 4 L */
    double ahead = a->stage3_prefetch_bucket_size >= 0 ? (double)a->stage3_prefetch_bucket_size : 5e7;
    int opt_off = a->offload_optimizer != ZERO_OFFLOAD_NONE;
    int par_off = a->offload_param != ZERO_OFFLOAD_NONE;
    double shard, unit, tile;
    /* bytes an element of the master, of each Adam state array, of the accumulator with more than one
       micro-batch: fp32, or bf16 with bf16_master / bf16_states */
    double mb = a->bf16_master ? 2 : 4, sb = a->bf16_states ? 2 : 4, ab = mb;
    /* per rank, summed to the node below */
    double rank_cpu_params = 0, rank_cpu_grads = 0, rank_cpu_optim = 0, rank_nvme = 0;
    memset(&r, 0, sizeof r);

    /* DeepSpeed */
    switch (a->stage) {
    case 0:
        r.ds_gpu = py_int(16 * P); /* whole bytes, like every DeepSpeed figure */
        r.ds_cpu = 0;
        break;
    case 1:
    case 2:
        if (opt_off) {
            r.ds_gpu = py_int(2 * P);
            r.ds_cpu = py_int(P * (4 * G > 16 ? 4 * G : 16) * f);
        } else {
            r.ds_gpu = py_int(2 * P + py_int(18 * P / G));
            r.ds_cpu = py_int(P * 4 * g * f);
        }
        break;
    default: {
        double h = 1 / n;
        if (!opt_off) {
            r.ds_gpu = py_int(4 * L + py_int(18 * P / G));
            r.ds_cpu = py_int(a->zero_init ? L * 4 * g * f : P * 4 * g * f);
        } else if (!par_off) {
            r.ds_gpu = py_int(4 * L + py_int(2 * P / G));
            r.ds_cpu = py_int(a->zero_init ? P * 16 * h * f : P * dmax(4 * g, 16 * h) * f);
        } else {
            r.ds_gpu = py_int(4 * L);
            r.ds_cpu = py_int(a->zero_init ? P * 18 * h * f : P * dmax(4 * g, 18 * h) * f);
        }
    }
    }

    /* zero: shards cut for the group (mics_shard_size) or for every GPU */
    {
        double Gs = a->mics_shard_size > 0 ? a->mics_shard_size : G;
        shard = P / Gs;
        unit = dmax(bucket, L) < P ? dmax(bucket, L) : P;
        tile = unit / Gs;
    }
    if (a->stage <= 2) {
        r.gpu_params = bytes * P;
    } else {
        double pool = live > 0 ? dmin(P, dmax(live + ahead, 2 * unit))
                               : dmin(dmin(P, dmax(1.05e9, 2 * unit)), 4 * L);
        r.gpu_params = bytes * pool;
        if (a->offload_param == ZERO_OFFLOAD_NONE) r.gpu_params += bytes * shard;
        if (a->offload_param == ZERO_OFFLOAD_CPU) rank_cpu_params += bytes * shard;
        if (a->offload_param == ZERO_OFFLOAD_NVME) {
            rank_nvme += bytes * shard;
            rank_cpu_params += 5 * bytes * tile;
        }
    }
    /* stages 0-1: the gradients, and with accumulation an fp32 accumulator of them all; stage 2 on one GPU
       with one micro-batch and no offload: the owned gradient written in place; else stages 2-3: the ring of
       ref_slots units and the owned accumulator (compute dtype with one micro-batch, fp32 with more); with the
       optimizer offloaded the owned chunks accumulate on the host and the device keeps one unit's chunk of
       fp32 staging with accumulation, none without */
    {
        double gas = a->gradient_accumulation_steps > 1 ? a->gradient_accumulation_steps : 1;
        if (a->stage <= 1) r.gpu_grads = bytes * P + (gas > 1 ? ab * P : 0);
        else if (a->stage == 2 && G == 1 && gas == 1 && !opt_off) r.gpu_grads = bytes * P;
        else r.gpu_grads = bytes * dmin(P, ref_slots(a) * unit) + (opt_off ? (gas > 1 ? ab * tile : 0) : (gas > 1 ? ab : bytes) * shard);
    }
    /* (parameters in the master's dtype: they are the master, the state alone beside them) */
    if (a->stage == 0) r.gpu_optim = ((bytes == mb ? 0 : mb) + 2 * sb) * P;
    else if (!opt_off) r.gpu_optim = ((bytes == mb ? 0 : mb) + 2 * sb) * shard;
    if (opt_off) { /* the engine's host staging: gradients (compute dtype with one micro-batch, else the
                      accumulator's), parameters unless offload_param */
        rank_cpu_grads = (a->gradient_accumulation_steps > 1 ? ab : bytes) * shard;
        r.arena = g * ref_arena(a, bytes, shard, tile);
        rank_cpu_grads += r.arena / g;
        if (a->offload_param == ZERO_OFFLOAD_NONE) rank_cpu_params += bytes * shard;
    }
    if (a->offload_optimizer == ZERO_OFFLOAD_CPU) rank_cpu_optim = (mb + 2 * sb) * shard;
    if (a->offload_optimizer == ZERO_OFFLOAD_NVME) {
        rank_nvme += (mb + 2 * sb) * shard;
        rank_cpu_optim = 4 * (mb + 2 * sb) * tile; /* 4 tile buffers of master | m | v */
    }
    r.cpu_params = g * rank_cpu_params;
    r.cpu_grads = g * rank_cpu_grads;
    r.cpu_optim = g * rank_cpu_optim;
    r.nvme = g * rank_nvme;
    return r;
}

/* zero's plan: equal to rounding (sums of doubles in another order). */
static int same(double got, double want) {
    return fabs(got - want) <= 1e-12 * fabs(want);
}

/* DeepSpeed's figures are Python ints computed in the same order: exact. */
static int compare(const zero_memory_estimate *m, const ref_plan *r) {
    return m->ds_gpu_bytes == r->ds_gpu && m->ds_cpu_bytes == r->ds_cpu &&
           same(m->gpu_params_bytes, r->gpu_params) && same(m->gpu_grads_bytes, r->gpu_grads) &&
           same(m->gpu_optimizer_bytes, r->gpu_optim) && same(m->cpu_params_bytes, r->cpu_params) &&
           same(m->cpu_grads_bytes, r->cpu_grads) && same(m->cpu_optimizer_bytes, r->cpu_optim) &&
           same(m->nvme_bytes, r->nvme) &&
           same(m->gpu_total_bytes, r->gpu_params + r->gpu_grads + r->gpu_optim) &&
           same(m->cpu_total_bytes, r->cpu_params + r->cpu_grads + r->cpu_optim);
}

/* A random valid argument set. */
static zero_estimate_args random_args(void) {
    static const zero_dtype dtypes[] = {ZERO_DTYPE_DEFAULT, ZERO_DTYPE_FP32, ZERO_DTYPE_FP16,
                                        ZERO_DTYPE_BF16};
    zero_estimate_args a;
    int stage = (int)zt_rand_int(0, 3);
    double P = floor(pow(10, zt_rand_range(5, 13)));
    a = args(P, zt_rand01() < 0.3 ? 0 : floor(P * zt_rand_range(1e-4, 1)), (int)zt_rand_int(1, 16),
             (int)zt_rand_int(1, 64), stage, stage ? (int)zt_rand_int(0, 2) : 0,
             stage == 3 ? (int)zt_rand_int(0, 2) : 0);
    if (zt_rand01() < 0.3) a.params = zt_rand_range(1e5, 1e12); /* not whole: DeepSpeed's float path */
    if (a.largest_layer > a.params) a.largest_layer = a.params;
    a.zero_init = zt_rand01() < 0.5;
    a.additional_buffer_factor = zt_rand01() < 0.3 ? 0 : zt_rand_range(0.5, 3);
    a.compute_dtype = dtypes[zt_rand_int(0, 3)];
    a.reduce_bucket_size = zt_rand01() < 0.3 ? 0 : (int64_t)pow(10, zt_rand_range(5, 10));
    a.stage3_max_live_parameters = zt_rand01() < 0.3 ? 0 : (int64_t)pow(10, zt_rand_range(5, 10));
    a.stage3_prefetch_bucket_size = zt_rand01() < 0.3 ? -1 : (int64_t)pow(10, zt_rand_range(0, 9));
    a.gradient_accumulation_steps = zt_rand01() < 0.5 ? (int)zt_rand_int(-1, 1) : (int)zt_rand_int(2, 64);
    if (a.compute_dtype == ZERO_DTYPE_BF16 && zt_rand01() < 0.5) {
        a.bf16_master = 1;
        a.bf16_states = zt_rand01() < 0.5;
    }
    if (stage && zt_rand01() < 0.3) { /* hybrid: a divisor of the GPU count */
        int G = a.gpus_per_node * a.nodes, d = (int)zt_rand_int(1, G);
        while (G % d) d--;
        a.mics_shard_size = d;
    }
    return a;
}

/* ---- DeepSpeed's worked example (reference section 8) ---- */

static void test_worked_example(void) {
    static const struct { int stage, oo, op; double cpu, gpu; } rows[] = {
        {2, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE, 44.70, 1.86},
        {2, ZERO_OFFLOAD_NONE, ZERO_OFFLOAD_NONE, 44.70, 3.96},
        {3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_CPU, 25.15, 0.19},
        {3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE, 22.35, 0.42},
        {3, ZERO_OFFLOAD_NONE, ZERO_OFFLOAD_NONE, 2.24, 2.28},
    };
    size_t i;
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        zero_estimate_args a = args(1e9, 5e7, 8, 1, rows[i].stage, rows[i].oo, rows[i].op);
        zero_memory_estimate m;
        zero_error err;
        a.additional_buffer_factor = 1.5;
        CHECK(zero_estimate_memory(&a, &m, &err) == ZERO_OK);
        CHECK(err.code == ZERO_OK && err.item == ZERO_MSG_NONE);
        /* printed to two decimals: within half a unit of the last place */
        CHECKF(fabs(m.ds_cpu_bytes / GIB - rows[i].cpu) <= 0.005, "row %d cpu %.4f want %.2f",
               (int)i, m.ds_cpu_bytes / GIB, rows[i].cpu);
        CHECKF(fabs(m.ds_gpu_bytes / GIB - rows[i].gpu) <= 0.005, "row %d gpu %.4f want %.2f",
               (int)i, m.ds_gpu_bytes / GIB, rows[i].gpu);
    }
    /* exact bytes of two rows, by hand: 1e9 * 32 * 1.5 and 2e9 + 18e9 / 8 */
    {
        zero_estimate_args a = args(1e9, 5e7, 8, 1, 2, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NONE);
        zero_memory_estimate m;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_cpu_bytes == 48e9 && m.ds_gpu_bytes == 2e9);
        a.offload_optimizer = ZERO_OFFLOAD_NONE;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_gpu_bytes == 4.25e9 && m.ds_cpu_bytes == 48e9);
    }
    /* stage 1 is stage 2's formula; stage 0 is 16 P and no CPU */
    {
        zero_estimate_args a = args(1e9, 5e7, 8, 1, 1, ZERO_OFFLOAD_NONE, ZERO_OFFLOAD_NONE);
        zero_memory_estimate m;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_gpu_bytes == 4.25e9);
        a.stage = 0;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_gpu_bytes == 16e9 && m.ds_cpu_bytes == 0);
    }
    /* both int() truncations, visible with a fractional P (DeepSpeed's
       all_cold takes floats): 2P = 2000001.5, int(18P/8) = int(2250001.6875)
       = 2250001, int(4250002.5) = 4250002 (one truncation only: 4250003) */
    {
        zero_estimate_args a = args(1000000.75, 0.1, 8, 1, 2, ZERO_OFFLOAD_NONE, ZERO_OFFLOAD_NONE);
        zero_memory_estimate m;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_gpu_bytes == 4250002.0);
        /* stage 3: int(4L + int(18P/8)) = int(0.4 + 2250001) = 2250001 */
        a.stage = 3;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_gpu_bytes == 2250001.0);
        /* int(4L + int(2P/8)) = int(0.4 + int(250000.1875)) = 250000 */
        a.offload_optimizer = ZERO_OFFLOAD_CPU;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_gpu_bytes == 250000.0);
    }
    /* stage 3 without zero_init: P * max(4g, 18h) * f */
    {
        zero_estimate_args a = args(1e9, 5e7, 8, 1, 3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_CPU);
        zero_memory_estimate m;
        a.zero_init = 0;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK(m.ds_cpu_bytes == 1e9 * 32 * 1.5);
    }
}

/* ---- the ZeRO paper's table (section 4.8): 7.5B params, N = 64, fp16 ----
   Stages 0 and 1: zero's plan is exactly the paper's 16 P and 4 P + 12 P/N.
   Stages 2 and 3: the paper counts model states only, with the reduced
   gradient shard in fp16, as zero keeps it with one micro-batch; zero adds
   the two-unit gradient ring (and at stage 3 the gather pool). The
   comparison therefore takes zero's params (the own shard at stage 3),
   optimizer state and accumulator, ring and pool excluded. With
   accumulation the accumulator is fp32: twice the paper's shard. */
static void test_paper_table(void) {
    const double P = 7.5e9, N = 64;
    zero_memory_estimate m[4];
    double paper[4];
    int s;
    for (s = 0; s < 4; s++) {
        zero_estimate_args a = args(P, 0, 8, 8, s, 0, 0);
        CHECK(zero_estimate_memory(&a, &m[s], NULL) == ZERO_OK);
    }
    CHECK(fabs(m[0].gpu_total_bytes / 1e9 - 120) < 0.05);
    CHECK(fabs(m[1].gpu_total_bytes / 1e9 - 31.4) < 0.05);
    CHECK_NEAR(m[0].gpu_total_bytes, 16 * P, 1e-15);
    CHECK_NEAR(m[1].gpu_total_bytes, 4 * P + 12 * P / N, 1e-15);
    {
        double ring = 2 * 5e8 * 2, accum = m[2].gpu_grads_bytes - ring;
        CHECK_NEAR(accum, 2 * P / N, 1e-12);
        paper[2] = m[2].gpu_params_bytes + m[2].gpu_optimizer_bytes + accum;
        CHECK(fabs(paper[2] / 1e9 - 16.6) < 0.05);
    }
    {
        double ring = 2 * 5e8 * 2, pool = (1e9 + 5e7) * 2; /* max_live not given: 4 L (1.5e9), at most DeepSpeed's */
        double shard = m[3].gpu_params_bytes - pool, accum = m[3].gpu_grads_bytes - ring;
        CHECK_NEAR(shard, 2 * P / N, 1e-12);
        CHECK_NEAR(accum, 2 * P / N, 1e-12);
        paper[3] = shard + m[3].gpu_optimizer_bytes + accum;
        CHECK(fabs(paper[3] / 1e9 - 1.9) < 0.05);
    }
    { /* with accumulation the owned accumulator is fp32; stages 0-1 add an fp32 accumulator of every gradient */
        zero_estimate_args a = args(P, 0, 8, 8, 2, 0, 0);
        zero_memory_estimate g4;
        a.gradient_accumulation_steps = 4;
        CHECK(zero_estimate_memory(&a, &g4, NULL) == ZERO_OK);
        CHECK_NEAR(g4.gpu_grads_bytes - m[2].gpu_grads_bytes, 2 * P / N, 1e-12);
        a.stage = 1;
        CHECK(zero_estimate_memory(&a, &g4, NULL) == ZERO_OK);
        CHECK_NEAR(g4.gpu_grads_bytes - m[1].gpu_grads_bytes, 4 * P, 1e-12);
    }
}

/* ---- the engine's own plan: zero_memory_report against zero_estimate_memory ----

   A model of layer groups (a block of three tensors per group, the embedding a
   group of its own), reduce_bucket_size one block, so that each group is a unit
   as in examples/gpt; the estimator gets the same counts. What the engine
   plans on the device for parameters, gather pool, gradients, accumulator,
   master and optimizer state (its scratch is not a model state) must be the
   estimator's figure within the units' padding (each unit padded to the ranks
   x 64 elements; stage 3's pool rounds to whole spans). */
enum { EB = 6, EBLOCK = 4096 + 1024 + 64, EEMB = 2048 };
typedef struct est_job {
    int stage, dtype, gas, offload, bf16_state; /* bf16_state: bf16 master weights and optimizer states */
    int poff;                                   /* offload_param "cpu" too (stage 3) */
    double ratio;                               /* offload_optimizer.ratio (0: the default, 1) */
    zero_result r[4];
    char msg[4][1024];
    zero_memory_stats ms[4];
} est_job;

static zero_result est_rank(const zero_backend *b, void *arg) {
    est_job *J = (est_job *)arg;
    static const int64_t sizes[3] = {4096, 1024, 64};
    zero_tensor ts[1 + 3 * EB];
    char names[1 + 3 * EB][16];
    zero_config c = zero_config_default();
    zero_engine *e;
    zero_error err;
    int i, n = 0;
    memset(ts, 0, sizeof ts);
    snprintf(names[n], sizeof names[n], "emb");
    ts[n].name = names[n], ts[n].numel = EEMB, ts[n].group = 0, n++;
    for (i = 0; i < 3 * EB; i++, n++) {
        snprintf(names[n], sizeof names[n], "b%d.t%d", i / 3, i % 3);
        ts[n].name = names[n], ts[n].numel = sizes[i % 3], ts[n].group = 1 + i / 3;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = EBLOCK;
    c.zero_optimization.stage3_param_persistence_threshold = 0;
    if (J->offload) c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    if (J->poff) c.zero_optimization.offload_param.device = ZERO_OFFLOAD_CPU;
    if (J->ratio > 0) c.zero_optimization.offload_optimizer.ratio = J->ratio;
    c.bf16.enabled = J->dtype == ZERO_DTYPE_BF16;
    c.bf16.bf16_master_weights_and_grads = c.bf16.bf16_optimizer_states = J->bf16_state;
    c.log.level = ZERO_LOG_WARN;
    if ((J->r[b->rank] = zero_config_resolve(&c, b->world, &err)) != ZERO_OK ||
        (J->r[b->rank] = zero_engine_create(&e, &c, ts, n, b, &err)) != ZERO_OK) {
        snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", err.msg);
        return ZERO_OK;
    }
    J->r[b->rank] = zero_memory_report(e, &J->ms[b->rank]);
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void test_engine_plan(void) {
    static const int worlds[3] = {1, 2, 4};
    static const double ratios[3] = {1, 0.5, 0.2}; /* offload_optimizer.ratio: stage 3 with offload */
    int w, stage, gas, dt, off, ri, runs = 0;
    double worst = 0;
    for (w = 0; w < 3; w++)
        for (stage = 1; stage <= 3; stage++)
            for (gas = 1; gas <= 3; gas += 2)
                for (dt = 0; dt < 3; dt++) /* fp32; bf16; bf16 with bf16 master and state */
                    for (off = 0; off < (stage == 3 ? 3 : 2); off++) /* 2: the parameters offloaded too */
                        for (ri = 0; ri < (stage == 3 && off ? 3 : 1); ri++) {
                        est_job J;
                        zero_estimate_args a;
                        zero_memory_estimate m;
                        zero_error err;
                        const size_t *dev;
                        double got, want, slack;
                        int k;
                        memset(&J, 0, sizeof J);
                        J.stage = stage, J.gas = gas, J.dtype = dt ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32, J.offload = off > 0;
                        J.poff = off == 2;
                        J.bf16_state = dt == 2;
                        J.ratio = ratios[ri];
                        CHECK(zero_host_run(worlds[w], est_rank, &J, &err) == ZERO_OK);
                        CHECKF(J.r[0] == ZERO_OK, "stage %d world %d gas %d: %s", stage, worlds[w], gas, J.msg[0]);
                        if (J.r[0] != ZERO_OK) continue;
                        a = args(EEMB + (double)EB * EBLOCK, EBLOCK, worlds[w], 1, stage, off > 0, off == 2);
                        a.compute_dtype = (zero_dtype)J.dtype;
                        a.reduce_bucket_size = EBLOCK;
                        a.gradient_accumulation_steps = gas;
                        a.bf16_master = a.bf16_states = dt == 2;
                        a.offload_ratio = ratios[ri];
                        CHECK(zero_estimate_memory(&a, &m, &err) == ZERO_OK);
                        for (got = 0, k = 0; k < ZERO_MEM_CATEGORY_COUNT; k++) {
                            dev = J.ms[0].planned[k];
                            if (k != ZERO_MEM_SCRATCH) got += (double)dev[ZERO_MEM_DEVICE];
                        }
                        want = m.gpu_total_bytes;
                        /* a ratio below 1 keeps optimizer state on the device, in the engine and the estimator */
                        CHECKF(ratios[ri] == 1 || (J.ms[0].planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] > 0 &&
                                                   m.gpu_optimizer_bytes > 0),
                               "ratio %g world %d: device state %zu, estimated %.0f", ratios[ri], worlds[w],
                               J.ms[0].planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE], m.gpu_optimizer_bytes);
                        /* the padding: per unit up to ranks x 64 elements, in each per-element buffer (at most
                           24 bytes an element: params, gradients twice, master, m, v), and the pool's spans */
                        slack = (1 + EB) * worlds[w] * 64 * 24.0 + (stage == 3 ? 4.0 * EBLOCK * 4 * 0.05 : 0);
                        /* a ratio: the estimator keeps (1 - ratio) of the shard on the device, the engine its
                           leading units within that share: never more than the estimate (a plan that fits holds
                           the engine), less by up to one unit's shard of parameters, master, state and
                           accumulator (a block's, 18 bytes an element) */
                        CHECKF(ratios[ri] == 1 || got <= want + slack,
                               "stage %d world %d gas %d %s offload %d ratio %g: the engine plans %.0f device bytes, "
                               "more than the estimator's %.0f (slack %.0f)", stage, worlds[w], gas,
                               zero_dtype_name((zero_dtype)J.dtype), off, ratios[ri], got, want, slack);
                        if (ratios[ri] < 1) slack += (double)EBLOCK / worlds[w] * 18;
                        CHECKF(fabs(got - want) <= slack,
                               "stage %d world %d gas %d %s offload %d ratio %g: the engine plans %.0f device bytes, the "
                               "estimator %.0f (params %.0f, grads %.0f, optimizer %.0f; slack %.0f)",
                               stage, worlds[w], gas, zero_dtype_name((zero_dtype)J.dtype), off, ratios[ri], got, want,
                               m.gpu_params_bytes, m.gpu_grads_bytes, m.gpu_optimizer_bytes, slack);
                        if (fabs(got - want) / want > worst) worst = fabs(got - want) / want;
                        /* and in host memory (the estimator's figure is the node's: every rank's) */
                        for (got = 0, k = 0; k < ZERO_MEM_CATEGORY_COUNT; k++) {
                            dev = J.ms[0].planned[k];
                            if (k != ZERO_MEM_SCRATCH) got += (double)dev[ZERO_MEM_PINNED] + (double)dev[ZERO_MEM_HOST];
                        }
                        want = m.cpu_total_bytes / worlds[w];
                        CHECKF(fabs(got - want) <= slack,
                               "stage %d world %d gas %d %s offload %d ratio %g: the engine plans %.0f host bytes, the "
                               "estimator %.0f a rank (params %.0f, grads %.0f, optimizer %.0f)", stage, worlds[w], gas,
                               zero_dtype_name((zero_dtype)J.dtype), off, ratios[ri], got, want, m.cpu_params_bytes / worlds[w],
                               m.cpu_grads_bytes / worlds[w], m.cpu_optimizer_bytes / worlds[w]);
                        runs++;
                    }
    printf("zero_estimate_memory against the engine's plan: %d configurations, worst %.2f%% apart\n", runs,
           100 * worst);
    {
        /* a ratio with the parameters offloaded: the kept units' parameters on the GPU (the engine's
           default), or with ratio_params_host in the host's shard; the same bytes moved between the two,
           d x the kept share of the shard (2 of 4 units: half of a GPU's 2e8, 1e8 elements) */
        zero_estimate_args a = args(4e8, 1e8, 2, 1, 3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_CPU);
        zero_memory_estimate dev, host;
        zero_error err;
        a.compute_dtype = ZERO_DTYPE_BF16;
        a.offload_ratio = 0.5;
        CHECK(zero_estimate_memory(&a, &dev, &err) == ZERO_OK);
        a.ratio_params_host = 1;
        CHECK(zero_estimate_memory(&a, &host, &err) == ZERO_OK);
        CHECK_NEAR(dev.gpu_params_bytes - host.gpu_params_bytes, 2 * 1e8, 1e-9);
        CHECK_NEAR(host.cpu_params_bytes - dev.cpu_params_bytes, 2 * 1e8 * 2, 1e-9); /* (the node's: both GPUs') */
        CHECK(dev.gpu_optimizer_bytes == host.gpu_optimizer_bytes && dev.cpu_optimizer_bytes == host.cpu_optimizer_bytes);
        a.offload_ratio = 1; /* no kept units: nothing moves */
        CHECK(zero_estimate_memory(&a, &host, &err) == ZERO_OK);
        a.ratio_params_host = 0;
        CHECK(zero_estimate_memory(&a, &dev, &err) == ZERO_OK);
        CHECK(dev.gpu_params_bytes == host.gpu_params_bytes && dev.cpu_params_bytes == host.cpu_params_bytes);
    }
}

/* ---- random argument sets against the reimplementation ---- */

static void test_random(void) {
    int i, bad = 0;
    for (i = 0; i < 1000; i++) {
        zero_estimate_args a = random_args();
        zero_memory_estimate m;
        zero_error err;
        ref_plan r;
        if (zero_estimate_memory(&a, &m, &err) != ZERO_OK) {
            CHECKF(0, "valid args refused: %s", err.msg);
            continue;
        }
        r = reference(&a);
        if (!compare(&m, &r)) {
            if (bad++ < 5)
                CHECKF(0, "P %.17g L %.17g g %d n %d stage %d oo %d op %d: ds %.17g/%.17g want %.17g/%.17g, "
                       "gpu %.17g want %.17g, cpu %.17g want %.17g, nvme %.17g want %.17g",
                       a.params, a.largest_layer, a.gpus_per_node, a.nodes, a.stage,
                       (int)a.offload_optimizer, (int)a.offload_param, m.ds_gpu_bytes, m.ds_cpu_bytes,
                       r.ds_gpu, r.ds_cpu, m.gpu_total_bytes, r.gpu_params + r.gpu_grads + r.gpu_optim,
                       m.cpu_total_bytes, r.cpu_params + r.cpu_grads + r.cpu_optim, m.nvme_bytes, r.nvme);
        }
    }
    CHECKF(bad == 0, "%d of 1000 random argument sets differ from the reference", bad);
}

/* ---- monotonicity: more parameters never need less (but for the gradient ring's one step down, where it
   loses its third slot); more GPUs never need
   more per GPU (nor more host memory per node as nodes grow). DeepSpeed's
   CPU figures are not monotone in G (stage 2 offload charges 4 G bytes per
   parameter per node), so only its GPU figure is checked in G. ---- */

static void test_monotone(void) {
    int i, bad_p = 0, bad_n = 0, slot_steps = 0;
    for (i = 0; i < 1000; i++) {
        zero_estimate_args a = random_args(), b;
        zero_memory_estimate m, mb;
        if (a.mics_shard_size > 0) { /* per GPU, a group of G is the flat plan of G GPUs */
            b = a;
            b.mics_shard_size = 0;
            b.gpus_per_node = a.mics_shard_size;
            b.nodes = 1;
            /* (but a group of one at stage 2 with one micro-batch and no offload: across several GPUs it keeps
               the ring, its gradients reduced across the groups; one GPU alone writes them in place) */
            if (zero_estimate_memory(&a, &m, NULL) || zero_estimate_memory(&b, &mb, NULL) ||
                (!same(m.gpu_total_bytes, mb.gpu_total_bytes) &&
                 !(a.stage == 2 && a.mics_shard_size == 1 && a.gradient_accumulation_steps <= 1 &&
                   a.offload_optimizer == ZERO_OFFLOAD_NONE && m.gpu_total_bytes > mb.gpu_total_bytes)))
                bad_n++;
            a.mics_shard_size = 0; /* (the GPU count below grows the flat plan) */
        }
        b = a;
        b.params = a.params * zt_rand_range(1.0, 3.0);
        if (zt_rand01() < 0.5 && a.largest_layer > 0)
            b.largest_layer = dmin(b.params, a.largest_layer * b.params / a.params); /* rounding */
        if (zero_estimate_memory(&a, &m, NULL) || zero_estimate_memory(&b, &mb, NULL)) {
            CHECKF(0, "refused P %.17g L %.17g", b.params, b.largest_layer);
            continue;
        }
        /* Every term grows with P but the ring's: it loses its third slot where a slot passes 256 MiB.
           There the GPU's plan may fall, by that slot and no more: b's with a's count again is not below a's. */
        if (ref_slots(&a) == 3 && ref_slots(&b) == 2) {
            ref_plan r2 = reference(&b), r3;
            ref_slots_force = 3;
            r3 = reference(&b);
            ref_slots_force = 0;
            slot_steps++;
            if (mb.gpu_total_bytes - r2.gpu_grads + r3.gpu_grads < m.gpu_total_bytes) bad_p++;
            mb.gpu_total_bytes = m.gpu_total_bytes; /* (the rest below) */
        }
        if (mb.gpu_total_bytes < m.gpu_total_bytes || mb.cpu_total_bytes < m.cpu_total_bytes ||
            mb.nvme_bytes < m.nvme_bytes || mb.ds_gpu_bytes < m.ds_gpu_bytes ||
            mb.ds_cpu_bytes < m.ds_cpu_bytes) {
            if (bad_p++ < 3)
                fprintf(stderr, "P %.17g -> %.17g, L %.17g -> %.17g, stage %d oo %d op %d: gpu %.17g -> %.17g, "
                        "cpu %.17g -> %.17g, nvme %.17g -> %.17g, ds %.17g/%.17g -> %.17g/%.17g\n",
                        a.params, b.params, a.largest_layer, b.largest_layer, a.stage,
                        (int)a.offload_optimizer, (int)a.offload_param, m.gpu_total_bytes,
                        mb.gpu_total_bytes, m.cpu_total_bytes, mb.cpu_total_bytes, m.nvme_bytes,
                        mb.nvme_bytes, m.ds_gpu_bytes, m.ds_cpu_bytes, mb.ds_gpu_bytes, mb.ds_cpu_bytes);
        }
        b = a;
        if (zt_rand01() < 0.5) b.gpus_per_node += (int)zt_rand_int(1, 8);
        else b.nodes += (int)zt_rand_int(1, 8);
        if (zero_estimate_memory(&b, &mb, NULL)) {
            bad_n++;
            continue;
        }
        /* (not from one GPU at stage 2 with one micro-batch and no offload: that one writes its gradient in
           place, where more GPUs add the ring of two units) */
        if ((mb.gpu_total_bytes > m.gpu_total_bytes &&
             !(a.stage == 2 && a.gpus_per_node * a.nodes == 1 && a.gradient_accumulation_steps <= 1 &&
               a.offload_optimizer == ZERO_OFFLOAD_NONE)) ||
            mb.ds_gpu_bytes > m.ds_gpu_bytes)
            bad_n++;
        if (b.nodes > a.nodes && (mb.cpu_total_bytes > m.cpu_total_bytes * (1 + 1e-12) ||
                                  mb.nvme_bytes > m.nvme_bytes * (1 + 1e-12)))
            bad_n++;
        /* the node's shards add up to P / n whatever g is; each rank's arena of the host sum is capped alone */
        if (b.gpus_per_node > a.gpus_per_node &&
            !same(mb.cpu_total_bytes - reference(&b).arena, m.cpu_total_bytes - reference(&a).arena))
            bad_n++;
    }
    CHECKF(bad_p == 0, "%d of 1000 not monotone in P (%d across the ring's step)", bad_p, slot_steps);
    CHECKF(bad_n == 0, "%d of 1000 not monotone in the GPU count", bad_n);
}

/* ---- max_params: the plan at the answer fits, 1e-5 more does not ---- */

static int fits(const zero_estimate_args *a, double P, double gpu, double cpu, double nvme) {
    zero_estimate_args b = *a;
    zero_memory_estimate m;
    b.params = P;
    if (zero_estimate_memory(&b, &m, NULL) != ZERO_OK) return 0;
    return m.gpu_total_bytes <= gpu && m.cpu_total_bytes <= cpu &&
           m.nvme_bytes <= (nvme > 0 ? nvme : 0);
}

static void test_max_params(void) {
    int i, found = 0, bad = 0, steps = 0;
    for (i = 0; i < 300; i++) {
        zero_estimate_args a = random_args();
        double gpu = pow(10, zt_rand_range(9, 11.5)), cpu = zt_rand01() < 0.2 ? 0 : pow(10, zt_rand_range(10, 13));
        double nvme = zt_rand01() < 0.3 ? 0 : pow(10, zt_rand_range(11, 14)), mp = -1;
        zero_error err;
        if (a.largest_layer > 0) a.largest_layer = pow(10, zt_rand_range(4, 9));
        a.params = zt_rand01() < 0.5 ? 0 : -5; /* ignored */
        if (zero_estimate_max_params(&a, gpu, cpu, nvme, &mp, &err) != ZERO_OK) {
            CHECKF(0, "refused: %s", err.msg);
            continue;
        }
        if (mp == 0) { /* nothing fits: not even the smallest model */
            if (fits(&a, a.largest_layer > 1 ? a.largest_layer : 1, gpu, cpu, nvme)) bad++;
            continue;
        }
        found++;
        if (!fits(&a, mp, gpu, cpu, nvme)) bad++;
        if (mp < 1e15 && fits(&a, mp * (1 + 1e-5), gpu, cpu, nvme)) bad++;
        /* 1e-6 relative: a little more than the answer fits no longer */
        if (mp < 1e15 && fits(&a, mp * (1 + 1e-6), gpu, cpu, nvme)) bad++;
        /* nor the first model past the ring's step, where the plan falls by a slot (found on the reference's
           rule, to 1e-12) */
        {
            zero_estimate_args t = a;
            double three = mp, two = 1e15;
            t.params = mp;
            if (ref_slots(&t) == 3 && (t.params = two, ref_slots(&t) == 2)) {
                while (two - three > 1e-12 * three) {
                    t.params = 0.5 * (three + two);
                    if (ref_slots(&t) == 3) three = t.params;
                    else two = t.params;
                }
                steps++;
                if (fits(&a, two * (1 + 1e-9), gpu, cpu, nvme)) bad++;
            }
        }
    }
    CHECKF(bad == 0, "%d max_params round trips failed (%d with the ring's step above the answer)", bad, steps);
    CHECKF(found > 100, "only %d of 300 budgets fit anything", found);

    /* by hand: stage 0 takes 16 bytes per parameter */
    {
        zero_estimate_args a = args(0, 0, 8, 1, 0, 0, 0);
        double mp;
        CHECK(zero_estimate_max_params(&a, 80e9, 0, 0, &mp, NULL) == ZERO_OK);
        CHECK_NEAR(mp, 5e9, 1e-6);
        CHECK(mp <= 5e9);
        /* one byte fits no parameter */
        CHECK(zero_estimate_max_params(&a, 1, 0, 0, &mp, NULL) == ZERO_OK);
        CHECK(mp == 0);
    }
    /* The ring's step (zero__ring_default): stage 3, both offloads, one GPU, bf16, buckets of 5e7, L = P / 20.
       The GPU holds the gather pool, 4 L = P / 5 elements (0.4 P bytes), and the ring: three slots of L
       (0.3 P) while a slot is at most 256 MiB (L <= 2^27, P <= 20 x 2^27 = 2.684e9), two (0.2 P) past it.
       1.8e9 bytes: 2.571e9 fits below the step, but 3e9 past it; 1.6e9: the step's far side needs 1.61e9,
       so 1.6e9 / 0.7 below it. */
    {
        zero_estimate_args a = args(0, 0, 1, 1, 3, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_CPU);
        const double step = 20.0 * (1 << 27);
        zero_memory_estimate m;
        double mp = -1;
        a.compute_dtype = ZERO_DTYPE_BF16;
        a.reduce_bucket_size = 50000000;
        a.params = step;
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK_NEAR(m.gpu_total_bytes, 0.7 * step, 1e-12);
        a.params = step * (1 + 1e-9);
        CHECK(zero_estimate_memory(&a, &m, NULL) == ZERO_OK);
        CHECK_NEAR(m.gpu_total_bytes, 0.6 * step, 1e-8);
        CHECK(zero_estimate_max_params(&a, 1.8e9, 1e13, 0, &mp, NULL) == ZERO_OK);
        CHECK_NEAR(mp, 3e9, 1e-6);
        CHECK(mp <= 3e9);
        CHECK(zero_estimate_max_params(&a, 1.6e9, 1e13, 0, &mp, NULL) == ZERO_OK);
        CHECK_NEAR(mp, 1.6e9 / 0.7, 1e-6);
        /* with the step's far side right at the budget */
        CHECK(zero_estimate_max_params(&a, 0.6 * step * (1 + 1e-6), 1e13, 0, &mp, NULL) == ZERO_OK);
        CHECK(mp > step);
    }
    /* an absolute layer bigger than the budget: nothing fits */
    {
        zero_estimate_args a = args(0, 3e10, 8, 1, 3, 0, 0);
        double mp = -1;
        CHECK(zero_estimate_max_params(&a, 80e9, 1e12, 0, &mp, NULL) == ZERO_OK);
        CHECK(mp == 0);
    }
    /* NVMe options need NVMe; host offload needs host memory */
    {
        zero_estimate_args a = args(0, 0, 8, 1, 3, ZERO_OFFLOAD_NVME, ZERO_OFFLOAD_NONE);
        double mp = -1;
        CHECK(zero_estimate_max_params(&a, 80e9, 1e12, 0, &mp, NULL) == ZERO_OK && mp == 0);
        CHECK(zero_estimate_max_params(&a, 80e9, 1e12, 2e12, &mp, NULL) == ZERO_OK && mp > 1e10);
        a.offload_optimizer = ZERO_OFFLOAD_CPU;
        CHECK(zero_estimate_max_params(&a, 80e9, 0, 0, &mp, NULL) == ZERO_OK && mp == 0);
        /* stage 3 with optimizer on the host: host memory binds at 16 bytes per parameter with one
           micro-batch (master, m, v, the 16-bit gradient and parameter staging), 18 with accumulation
           (the gradient staging in fp32) and the host sum's arena on each of the node's 8 ranks: three of
           the largest unit's chunk (L = P / 20 here: P / 20 / 8 elements of 2 bytes), 3 x 2 x P / 160 */
        CHECK(zero_estimate_max_params(&a, 80e9, 1e12, 0, &mp, NULL) == ZERO_OK);
        CHECK_NEAR(mp, 1e12 / 16, 1e-6);
        a.gradient_accumulation_steps = 2;
        CHECK(zero_estimate_max_params(&a, 80e9, 1e12, 0, &mp, NULL) == ZERO_OK);
        CHECK_NEAR(mp, 1e12 / (18 + 8 * 3 * 2.0 / 160), 1e-6);
    }
}

/* ---- every error path ---- */

static void expect_err(const zero_estimate_args *a, zero_msg item, const char *key, const char *text) {
    zero_memory_estimate m;
    zero_error err;
    zero_result r;
    m.gpu_total_bytes = 123;
    r = zero_estimate_memory(a, &m, &err);
    CHECK(r == ZERO_ERR_INVALID_ARG && err.code == r);
    CHECKF(err.item == item, "item %s want %s (%s)", zero_msg_name(err.item), zero_msg_name(item), err.msg);
    CHECKF(strcmp(err.key, key) == 0, "key \"%s\" want \"%s\"", err.key, key);
    CHECK_STR_CONTAINS(err.msg, text);
    CHECK(m.gpu_total_bytes == 0); /* cleared on error */
    CHECK(zero_estimate_memory(a, &m, NULL) == r); /* err may be NULL */
}

static void test_errors(void) {
    zero_estimate_args a, ok = args(1e9, 0, 8, 1, 2, 0, 0);
    const zero_msg E = ZERO_MSG_ESTIMATE_ARGS;
    zero_memory_estimate m;
    zero_error err;
    double mp = 7;

    a = ok; a.params = -1;       expect_err(&a, E, "params", "params: must be > 0 and finite, got -1");
    a = ok; a.params = 0;        expect_err(&a, E, "params", "must be > 0");
    a = ok; a.params = NAN;      expect_err(&a, E, "params", "must be > 0");
    a = ok; a.params = INFINITY; expect_err(&a, E, "params", "finite");
    a = ok; a.params = 2e15;     expect_err(&a, E, "params", "must be <= 1e+15");
    a = ok; a.largest_layer = 2e9; expect_err(&a, E, "largest_layer", "must be <= params");
    a = ok; a.largest_layer = NAN; expect_err(&a, E, "largest_layer", "got nan");
    a = ok; a.largest_layer = -INFINITY; expect_err(&a, E, "largest_layer", "got -inf");
    a = ok; a.gpus_per_node = 0; expect_err(&a, E, "gpus_per_node", "must be >= 1, got 0");
    a = ok; a.nodes = -2;        expect_err(&a, E, "nodes", "must be >= 1, got -2");
    a = ok; a.mics_shard_size = 3; expect_err(&a, E, "mics_shard_size", "3 must divide the GPU count (8)");
    a = ok; a.mics_shard_size = 16; expect_err(&a, E, "mics_shard_size", "16 must divide");
    a = ok; a.mics_shard_size = 4; a.stage = 0; expect_err(&a, E, "mics_shard_size", "stage 0");
    a = ok; a.stage = 4;         expect_err(&a, E, "stage", "must be 0, 1, 2 or 3, got 4");
    a = ok; a.stage = -1;        expect_err(&a, E, "stage", "got -1");
    a = ok; a.offload_optimizer = (zero_offload_device)3; expect_err(&a, E, "offload_optimizer", "got 3");
    a = ok; a.offload_param = (zero_offload_device)3; expect_err(&a, E, "offload_param", "got 3");
#ifndef __cplusplus /* C++: values outside the enum's range are undefined */
    a = ok; a.offload_optimizer = (zero_offload_device)-1; expect_err(&a, E, "offload_optimizer", "got -1");
    a = ok; a.offload_param = (zero_offload_device)7; expect_err(&a, E, "offload_param", "got 7");
#endif
    a = ok; a.bf16_master = 1;   expect_err(&a, E, "bf16_master", "need compute_dtype bf16");
    a = ok; a.compute_dtype = ZERO_DTYPE_BF16; a.bf16_states = 1; expect_err(&a, E, "bf16_states", "need bf16_master");
    a = ok; a.offload_param = ZERO_OFFLOAD_CPU; expect_err(&a, E, "offload_param", "needs stage 3, got stage 2");
    a = ok; a.stage = 0; a.offload_optimizer = ZERO_OFFLOAD_CPU;
    expect_err(&a, E, "offload_optimizer", "needs stage 1, 2 or 3, got stage 0");
    a = ok; a.additional_buffer_factor = NAN; expect_err(&a, E, "additional_buffer_factor", "finite");
    a = ok; a.compute_dtype = ZERO_DTYPE_COUNT; expect_err(&a, E, "compute_dtype", "got 4");

    /* NULL pointers */
    CHECK(zero_estimate_memory(NULL, &m, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(err.item == ZERO_MSG_NULL_ARG && strcmp(err.key, "a") == 0);
    CHECK(zero_estimate_memory(&ok, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(err.item == ZERO_MSG_NULL_ARG && strcmp(err.key, "out") == 0);
    CHECK(zero_estimate_max_params(NULL, 1, 1, 1, &mp, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(err.item == ZERO_MSG_NULL_ARG && strcmp(err.key, "a") == 0 && mp == 0);
    CHECK(zero_estimate_max_params(&ok, 1, 1, 1, NULL, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(err.item == ZERO_MSG_NULL_ARG && strcmp(err.key, "max_params") == 0);

    /* max_params' own arguments, and the shared settings */
#define MAXP_ERR(args_, gpu, cpu, nvme, key_, text)                                             \
    do {                                                                                        \
        mp = 7;                                                                                 \
        CHECK(zero_estimate_max_params(&(args_), gpu, cpu, nvme, &mp, &err) == ZERO_ERR_INVALID_ARG); \
        CHECK(err.item == E && mp == 0);                                                        \
        CHECKF(strcmp(err.key, key_) == 0, "key \"%s\" want \"%s\"", err.key, key_);           \
        CHECK_STR_CONTAINS(err.msg, text);                                                      \
    } while (0)
    MAXP_ERR(ok, 0, 1e12, 0, "gpu_bytes", "must be > 0");
    MAXP_ERR(ok, NAN, 1e12, 0, "gpu_bytes", "must be > 0");
    MAXP_ERR(ok, 8e10, -1, 0, "cpu_bytes", "must be >= 0");
    MAXP_ERR(ok, 8e10, INFINITY, 0, "cpu_bytes", "finite");
    MAXP_ERR(ok, 8e10, 1e12, NAN, "nvme_bytes", "finite");
    a = ok; a.largest_layer = 2e15;
    MAXP_ERR(a, 8e10, 1e12, 0, "largest_layer", "must be <= 1e+15");
    a = ok; a.stage = 9;
    MAXP_ERR(a, 8e10, 1e12, 0, "stage", "got 9");
    a = ok; a.nodes = 0;
    MAXP_ERR(a, 8e10, 1e12, 0, "nodes", "got 0");
#undef MAXP_ERR

    /* success clears a previous error */
    CHECK(zero_estimate_memory(&ok, &m, &err) == ZERO_OK && err.code == ZERO_OK && err.key[0] == 0 &&
          err.msg[0] == 0);
    /* defaults for fields <= 0 equal the documented values */
    {
        zero_memory_estimate d, e;
        a = ok;
        a.stage = 3;
        a.params = 5e9;
        a.reduce_bucket_size = a.stage3_max_live_parameters = 0;
        CHECK(zero_estimate_memory(&a, &d, NULL) == ZERO_OK);
        a.largest_layer = a.params / 20;
        a.additional_buffer_factor = 1.5;
        a.compute_dtype = ZERO_DTYPE_FP16;
        a.reduce_bucket_size = 500000000;
        /* max_live not given: the pool 4 L (1e9 here), as max_live 9.5e8 and the prefetch 5e7 make it */
        a.stage3_max_live_parameters = 950000000;
        a.stage3_prefetch_bucket_size = 50000000;
        CHECK(zero_estimate_memory(&a, &e, NULL) == ZERO_OK);
        CHECK(memcmp(&d, &e, sizeof d) == 0);
        a.stage3_max_live_parameters = 2000000000;
        CHECK(zero_estimate_memory(&a, &d, NULL) == ZERO_OK);
        a.stage3_prefetch_bucket_size = 0; /* 0 is a value: no prefetch */
        CHECK(zero_estimate_memory(&a, &e, NULL) == ZERO_OK);
        CHECK(e.gpu_params_bytes < d.gpu_params_bytes);
    }
}

/* ---- the step-time model (zero_estimate_time) ---- */

static zero_time_model tm_small(void) {
    zero_time_model m;
    memset(&m, 0, sizeof m);
    m.params = 1e6;
    m.layers = 1;
    m.hidden = 10;
    m.vocab = 0;
    m.seq = 1;
    m.micro_batch = 1;
    m.compute_dtype = ZERO_DTYPE_BF16;
    m.gpus_per_node = 2;
    m.nodes = 2;
    m.tflops = 1e-6; /* 1e6 FLOP/s */
    m.tflops_hidden = 10; /* at this width: no scaling */
    m.hbm_bytes_per_s = 1.5e10;
    m.intra_bus_bytes_per_s = 1e9;
    m.intra_latency_s = 1e-3;
    m.inter_bus_bytes_per_s = 0.5e9;
    m.inter_latency_s = 2e-3;
    m.pcie_bytes_per_s = 1e9;
    m.host_bytes_per_s = 2.8e9;
    m.stage = 2;
    m.group = 2;
    m.comm_contention = 0.5;
    return m;
}

/* Worked by hand (the formulas in zero.h's comment, one unit of 1e6 bf16
   elements = 2e6 bytes): F = 6 (12 * 100) + 12 * 10 = 7320 FLOPs per token,
   one token, so t_mb = 7.32 ms, t_bwd = 4.88 ms. */
static void test_time_hand(void) {
    zero_time_model m = tm_small();
    zero_time_estimate o;
    zero_error err;
    /* stage 2, G = 2 inside a node, R = 2 across the 2 nodes:
       reduce-scatter 1e-3 + 2e6/2/1e9 = 2 ms (intra, 1e6 bytes sent);
       all-reduce of 1e6 bytes over 2: 2 (2e-3 + 0.5e6/0.5e9) = 6 ms (inter, 1e6 bytes);
       exposed: max(8, 8 - 4.88) = 8 ms, so none beside the compute (no contention); the
       gather after the step 2 ms (intra, 1e6 bytes): one unit, so under no Adam,
       max(1 + 2, 2 + 1) - 1 = 2 exposed; Adam 30 * 5e5 / 1.5e10 = 1 ms.
       Step 7.32 + 10 + 1 = 18.32 ms. */
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.flops_per_token, 7320, 1e-12);
    CHECK_NEAR(o.compute_s, 7.32e-3, 1e-12);
    CHECK_NEAR(o.exposed_comm_s, 10e-3, 1e-12);
    CHECK_NEAR(o.optimizer_s, 1e-3, 1e-12);
    CHECK_NEAR(o.step_s, 18.32e-3, 1e-12);
    CHECK(o.contention_s == 0);
    CHECK_NEAR(o.comm_intra_s, 4e-3, 1e-12);
    CHECK_NEAR(o.comm_inter_s, 6e-3, 1e-12);
    CHECK_NEAR(o.bytes_intra, 2e6, 1e-12);
    CHECK_NEAR(o.bytes_inter, 1e6, 1e-12);
    CHECK_NEAR(o.tokens_per_s_per_gpu, 1 / 18.32e-3, 1e-12);
    CHECK(o.bytes_pcie == 0 && o.cpu_adam_s == 0 && o.exposed_offload_s == 0);
    CHECK_EQ_INT(o.world, 4);
    CHECK_EQ_INT(o.group, 2);
    CHECK_EQ_INT(o.replicas, 2);
    CHECK(o.gpu_memory_bytes > 0);

    /* two units of 5e5: reduce-scatter 1e-3 + 1e6/2/1e9 = 1.5 ms, all-reduce of 5e5 bytes
       2 (2e-3 + 2.5e5/0.5e9) = 5 ms: red_all 13 ms, exposed max(6.5, 13 - 4.88) = 8.12, so
       4.88 of the 13 run beside the backward. Their work at the intra rates: the
       reduce-scatters 2 x 1.5, the all-reduces 2 x 2 (1e-3 + 2.5e5/1e9) = 2 x 2.5: 8 ms,
       costing 0.5 x 8 x 4.88 / 13 ms. Gathers 1.5 ms each: under the Adam max(1 + 1.5,
       3 + 0.5) - 1 = 2.5 exposed (3 after the whole Adam).
       Step 7.32 + that + 8.12 + 2.5 + 1 ms (0.5 more serial). */
    m.unit_params = 5e5;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.contention_s, 0.5 * 8e-3 * 4.88 / 13, 1e-12);
    CHECK_NEAR(o.exposed_comm_s, 10.62e-3, 1e-12);
    CHECK_NEAR(o.step_s, 18.94e-3 + 0.5 * 8e-3 * 4.88 / 13, 1e-12);
    m.step_serial_gathers = 1;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.step_s, 19.44e-3 + 0.5 * 8e-3 * 4.88 / 13, 1e-12);
    m.comm_contention = 0; /* the default factor */
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.contention_s, 1.3006 * 8e-3 * 4.88 / 13, 1e-12);
    m = tm_small();

    /* stage 3 on one node of 4 (intra rates), 4 micro-batches: gather 1e-3 + 2e6 * 3/4 /
       1e9 = 2.5 ms, reduce-scatter 2.5; forward exposes 2.5, backward max(2.5, 5 - 4.88) =
       2.5: 20 ms exposed of 4 x 7.5 = 30, the 10 beside the compute cost 0.5 x 10 = 5 ms.
       Step 4 x 7.32 + 20 + 5 + 0.5 (Adam of 2.5e5) = 54.78 ms, and the accumulation: 4 micro-batches
       add the reduced shard (2.5e5 x (2 + 8) bytes at 1.5e10 B/s): 4 x 1/6 ms. */
    m.gpus_per_node = 4;
    m.nodes = 1;
    m.stage = 3;
    m.group = 0;
    m.grad_accum = 4;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.exposed_comm_s, 20e-3, 1e-12);
    CHECK_NEAR(o.contention_s, 5e-3, 1e-12);
    CHECK_NEAR(o.accumulate_s, 4 * 2.5e5 * 10 / 1.5e10, 1e-12);
    CHECK_NEAR(o.step_s, 54.78e-3 + 4 * 2.5e5 * 10 / 1.5e10, 1e-12);
    m = tm_small();

    /* stage 3 over the world (G = 4 crosses nodes: inter rates), 4 micro-batches:
       gather 2e-3 + 2e6 * 3/4 / 0.5e9 = 5 ms; reduce-scatter 5 ms; one unit, so
       forward exposes 5 + max(0, 0 - 2.44) = 5, backward max(5, 5 + 5 - 4.88) = 5.12;
       per micro-batch 10.12 ms; Adam 30 * 2.5e5 / 1.5e10 = 0.5 ms. Beside the compute:
       19.52 of the 60 ms; their work at the intra rates (1e-3 + 1.5e6 / 1e9 = 2.5 ms each,
       12 of them) 30 ms, costing 0.5 x 30 x 19.52 / 60 = 4.88 ms. Step 4 * (7.32 + 10.12) +
       4.88 + 0.5 = 75.14 ms, the accumulation (as above) on top. Bytes: 3 rings of 1.5e6 per
       micro-batch, all inter. */
    m.stage = 3;
    m.group = 0;
    m.grad_accum = 4;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.step_s, 75.14e-3 + 4 * 2.5e5 * 10 / 1.5e10, 1e-12);
    CHECK_NEAR(o.contention_s, 4.88e-3, 1e-12);
    CHECK_NEAR(o.exposed_comm_s, 40.48e-3, 1e-12);
    CHECK_NEAR(o.comm_inter_s, 4 * 15e-3, 1e-12);
    CHECK(o.comm_intra_s == 0 && o.bytes_intra == 0);
    CHECK_NEAR(o.bytes_inter, 4 * 4.5e6, 1e-12);
    /* serial gathers: forward 5, backward 5 + max(5, 5 - 4.88) = 10: 4 (7.32 + 15) + 0.5;
       every collective exposed, none beside the compute */
    m.stage3_serial_gathers = 1;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.step_s, 89.78e-3 + 4 * 2.5e5 * 10 / 1.5e10, 1e-12);

    /* stage 0 on the same 4 GPUs: an all-reduce of 2e6 bytes across nodes,
       2 (2e-3 + 2e6 * 3/4 / 0.5e9) = 10 ms, at the last of 4 micro-batches only:
       exposed max(10, 10 - 4.88) = 10; Adam on all 1e6: 2 ms; each micro-batch adds the whole
       gradient into the fp32 accumulator: 1e6 x (2 x 2 + 8) bytes at 1.5e10 B/s, 0.8 ms. */
    m.stage = 0;
    m.stage3_serial_gathers = 0;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.accumulate_s, 4 * 0.8e-3, 1e-12);
    CHECK_NEAR(o.step_s, 4 * 7.32e-3 + 10e-3 + 2e-3 + 4 * 0.8e-3, 1e-12);
    CHECK_NEAR(o.bytes_inter, 3e6, 1e-12);
    CHECK_EQ_INT(o.group, 1);
    CHECK_EQ_INT(o.replicas, 4);

    /* offload on one GPU, stage 2: no collective; gradients to the host
       2e6 / 1e9 = 2 ms (max(2, 2 - 4.88) exposed), CPU Adam 28e6 / 2.8e9 =
       10 ms, parameters back 2 ms: 7.32 + 2 + 10 + 2 = 21.32 ms */
    m = tm_small();
    m.gpus_per_node = 1;
    m.nodes = 1;
    m.group = 0;
    m.offload_optimizer = ZERO_OFFLOAD_CPU;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.step_s, 21.32e-3, 1e-12);
    CHECK_NEAR(o.cpu_adam_s, 10e-3, 1e-12);
    CHECK_NEAR(o.offload_copy_s, 4e-3, 1e-12);
    CHECK_NEAR(o.bytes_pcie, 4e6, 1e-12);
    CHECK(o.optimizer_s == 0 && o.exposed_comm_s == 0 && o.bytes_intra == 0 && o.bytes_inter == 0);

    /* hybrid stage 2 with 3 micro-batches: the group's reduce-scatter each
       micro-batch (2 ms, intra), the replicas' all-reduce once, of the fp32
       chunk: 4e6 / 2 = 2e6 bytes over 2, 2 (2e-3 + 1e6 / 0.5e9) = 8 ms (inter,
       2e6 bytes). Exposed: 2 * max(2, 2 - 4.88) + max(10, 10 - 4.88) + the gather 2
       = 16 ms. Step 3 * 7.32 + 16 + 1 = 38.96 ms, and 3 micro-batches' accumulation into the
       shard (5e5 x 10 bytes at 1.5e10 B/s): 1 ms. */
    m = tm_small();
    m.grad_accum = 3;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.exposed_comm_s, 16e-3, 1e-12);
    CHECK_NEAR(o.accumulate_s, 1e-3, 1e-12);
    CHECK_NEAR(o.step_s, 39.96e-3, 1e-12);
    CHECK_NEAR(o.bytes_inter, 2e6, 1e-12);
    CHECK_NEAR(o.bytes_intra, 3 * 1e6 + 1e6, 1e-12);
    CHECK_NEAR(o.comm_inter_s, 8e-3, 1e-12);

    /* recompute: the block's forward again in the backward, (24 * 100 + 4 * 10) =
       2440 FLOPs: 2.44 ms more per micro-batch, all of it in the backward (now
       7.32 ms: the reductions still hide no more than before, max(8, 8 - 7.32) = 8).
       Step 18.32 + 2.44 = 20.76 ms. */
    m = tm_small();
    m.recompute = 1;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.recompute_s, 2.44e-3, 1e-12);
    CHECK_NEAR(o.compute_s, 9.76e-3, 1e-12);
    CHECK_NEAR(o.flops_per_token, 7320, 1e-12); /* the model's FLOPs, not the recomputed ones */
    CHECK_NEAR(o.step_s, 20.76e-3, 1e-12);

    /* the defaults stand in for rates <= 0 */
    m = tm_small();
    m.tflops = 0;
    m.hbm_bytes_per_s = -1;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.compute_s, 7320 / 466.4e12, 1e-12);
    CHECK_NEAR(o.optimizer_s, 30 * 5e5 / 2.79e12, 1e-12);
}

/* More GPUs never send fewer bytes across nodes, for every stage and group
   size, at 8 GPUs per node, 1 to 1024 GPUs. */
static void test_time_monotone(void) {
    int stage, gi, k;
    static const int groups[] = {1, 2, 4, 8, 16, 0};
    for (stage = 0; stage <= 3; stage++)
        for (gi = 0; gi < (int)(sizeof groups / sizeof groups[0]); gi++) {
            double prev = -1;
            for (k = 0; k <= 10; k++) {
                int N = 1 << k;
                zero_time_model m = tm_small();
                zero_time_estimate o;
                m.params = 1.5e9;
                m.layers = 48;
                m.hidden = 1600;
                m.seq = 1024;
                m.micro_batch = 8;
                m.tflops = 0;
                m.hbm_bytes_per_s = m.intra_bus_bytes_per_s = m.inter_bus_bytes_per_s = 0;
                m.intra_latency_s = m.inter_latency_s = 0;
                m.gpus_per_node = N < 8 ? N : 8;
                m.nodes = N < 8 ? 1 : N / 8;
                m.stage = stage;
                m.group = groups[gi];
                if (groups[gi] > N) continue;
                CHECKF(zero_estimate_time(&m, &o, NULL) == ZERO_OK, "stage %d G %d N %d", stage,
                       groups[gi], N);
                CHECKF(o.bytes_inter >= prev, "stage %d G %d N %d: %g < %g", stage, groups[gi], N,
                       o.bytes_inter, prev);
                CHECKF(N > 8 || o.bytes_inter == 0, "stage %d G %d N %d: one node, %g inter", stage,
                       groups[gi], N, o.bytes_inter);
                CHECKF(o.step_s > 0 && o.step_s < 1e3, "stage %d N %d step %g", stage, N, o.step_s);
                prev = o.bytes_inter;
            }
        }
}

/* ---- calibration: the runs of docs/PERF.md and docs/results/ ----

   GPT-2 XL of examples/gpt: L 48, C 1600, V 256, T 1024 (or 128),
   P = L (12 C^2 + 13 C) + V C + T C + 2 C (1.4776096e9 at T 1024).
   Fitted inputs, each on runs other than those it predicts:
   - H100, code 010bf01: tflops from docs/results/h100_fast.tsv row ab_s0
     (stage 0, 187.9 ms): 8.0228e13 FLOPs / (187.9 - 15.891 ms Adam) = 466.42;
   - 2x H200, code 2f283f8: from docs/results/h200x2.tsv row scale_stage2_1gpu
     (201.3 ms), Adam at 3.917e12 B/s (the H200 copy of PERF.md 1-2, 4257
     GB/s, times zero_step's 0.920 of the copy at 1.5B in PERF.md 2b): 422.30;
   - 4x H200, code 221d6d7: from docs/results/h200x4.tsv row scale_stage2_1gpu
     (196.4 ms): 433.48;
   - 2x H200, code bcd951c: from docs/results/h200x2_bcd951c.tsv row
     s2_1gpu (182.1 ms): 469.77; and the contention factor (1.3006) from its
     2-GPU stage-3 rows (203.85 ms, the mean of two), the model's 176.74 ms
     without contention and its 20.85 ms of collectives beside the compute.
   - 2x H200, code dcf48e3: from docs/results/h200x2_dcf48e3_scale.tsv row
     sc_s2_1gpu (184.003 ms): 8.0228e13 / (184.003 - 11.317 ms Adam) = 464.59.
   The rows before bcd951c gathered after the whole step at stages 1-2
   (step_serial_gathers). The offload run takes the H100's 466.42 (another recipe and commit) and
   the PCIe and host rates its own log measured (its floor: lines). */

typedef struct calib_run {
    const char *what, *source;
    int gpus, stage, T, B, offload, serial, fitted;
    double tflops, hbm, pcie, host, measured_ms;
    int recompute, layers, hidden; /* 0, 0: GPT-2 XL (L 48, C 1600) */
    int step_overlap;              /* 1: stages 1-2's gathers under the step's Adam (bcd951c on) */
    int gas;                       /* micro-batches a step (0: 1) */
    int offload_param;             /* 1: both offloads (stage 3, the overlapped CPU step) */
    double keep;                   /* stage3_max_live_parameters (0: the engine's derived pool) */
    double tol;                    /* the bound on this row's error (0: 15%, 10% on several GPUs); a row on
                                      several GPUs with its own bound is a documented miss of the 10% */
    int vocab;                     /* 0: 256 (examples/gpt's bytes) */
    double ratio;                  /* offload_optimizer.ratio (0: 1, all on the CPU) */
    int params_host;               /* 1: a ratio with offload_param on the engine before the device's
                                      units kept their parameters (ratio_params_host) */
    int spread;                    /* 1: the ratio's kept units spread through the layout (the engine
                                      from 6cbca0e); 0: the leading ones (ratio_first) */
    int copy_out;                  /* 1: the gradients went to the host on the copy stream beside the fetches
                                      (more than one micro-batch: the engine from e5dcd13; one: from the
                                      copy stream's change for it); 0: on the communication stream behind
                                      them (grads_on_comm) */
    int dev_sum;                   /* 1: the micro-batches added on the GPU (grad_accum_device: the engine's
                                      default where the accumulator fits a third of the free memory) */
} calib_run;

#define H100_TF 466.42
#define H100_HBM 2.79e12
#define X2_TF 422.30
#define X4_TF 433.48
#define H200_HBM 3.917e12
#define X2C_TF 469.77
#define X2D_TF 485.19
#define X2E_TF 464.59
#define X2F_TF 469.216
#define X2G_TF 468.118

static const calib_run calib[] = {
    /* docs/results/h100_fast.tsv row ab_s0 (PERF.md 5f, "Stage by stage"): the fit */
    {"H100 stage 0, mb 8", "results/h100_fast.tsv ab_s0", 1, 0, 1024, 8, 0, 0, 1, H100_TF, H100_HBM, 0, 0, 187.9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5f table, docs/results/h100_fast.tsv row fast_zero */
    {"H100 ZeRO-2, mb 8", "PERF.md 5f; results/h100_fast.tsv fast_zero", 1, 2, 1024, 8, 0, 0, 0, H100_TF, H100_HBM, 0, 0, 192.7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5f, the call before: ab_s1.log */
    {"H100 ZeRO-1, mb 8", "results/h100_fast.tsv ab_s1", 1, 1, 1024, 8, 0, 0, 0, H100_TF, H100_HBM, 0, 0, 188.9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5c, docs/results/h200x2.tsv rows scale_stage{1,2,3}_{1,2}gpu */
    {"2x H200 box, 1 GPU, stage 1", "PERF.md 5c; h200x2/scale_stage1_1gpu.log", 1, 1, 1024, 8, 0, 1, 0, X2_TF, H200_HBM, 0, 0, 199.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 box, 1 GPU, stage 2", "PERF.md 5c; h200x2/scale_stage2_1gpu.log", 1, 2, 1024, 8, 0, 1, 1, X2_TF, H200_HBM, 0, 0, 201.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 box, 1 GPU, stage 3", "PERF.md 5c; h200x2/scale_stage3_1gpu.log", 1, 3, 1024, 8, 0, 1, 0, X2_TF, H200_HBM, 0, 0, 204.6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200, stage 1", "PERF.md 5c; h200x2/scale_stage1_2gpu.log", 2, 1, 1024, 8, 0, 1, 0, X2_TF, H200_HBM, 0, 0, 210.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200, stage 2", "PERF.md 5c; h200x2/scale_stage2_2gpu.log", 2, 2, 1024, 8, 0, 1, 0, X2_TF, H200_HBM, 0, 0, 209.1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200, stage 3", "PERF.md 5c; h200x2/scale_stage3_2gpu.log", 2, 3, 1024, 8, 0, 1, 0, X2_TF, H200_HBM, 0, 0, 230.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5e (same machine and code as 5c's 2-GPU runs), micro-batch 16:
       docs/results/h200x2.tsv rows xl16_stage{2,3} */
    {"2x H200, stage 2, mb 16", "PERF.md 5e; h200x2/xl16_stage2.log", 2, 2, 1024, 16, 0, 1, 0, X2_TF, H200_HBM, 0, 0, 369.2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200, stage 3, mb 16", "PERF.md 5e; h200x2/xl16_stage3.log", 2, 3, 1024, 16, 0, 1, 0, X2_TF, H200_HBM, 0, 0, 389.8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5c, docs/results/h200x4.tsv rows scale_stage{1,2,3}_{1,4}gpu */
    {"4x H200 box, 1 GPU, stage 1", "PERF.md 5c; h200x4/scale_stage1_1gpu.log", 1, 1, 1024, 8, 0, 1, 0, X4_TF, H200_HBM, 0, 0, 195.8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"4x H200 box, 1 GPU, stage 2", "PERF.md 5c; h200x4/scale_stage2_1gpu.log", 1, 2, 1024, 8, 0, 1, 1, X4_TF, H200_HBM, 0, 0, 196.4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"4x H200 box, 1 GPU, stage 3", "PERF.md 5c; h200x4/scale_stage3_1gpu.log", 1, 3, 1024, 8, 0, 1, 0, X4_TF, H200_HBM, 0, 0, 201.8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"4x H200, stage 1", "PERF.md 5c; h200x4/scale_stage1_4gpu.log", 4, 1, 1024, 8, 0, 1, 0, X4_TF, H200_HBM, 0, 0, 205.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"4x H200, stage 2", "PERF.md 5c; h200x4/scale_stage2_4gpu.log", 4, 2, 1024, 8, 0, 1, 0, X4_TF, H200_HBM, 0, 0, 204.9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"4x H200, stage 3", "PERF.md 5c; h200x4/scale_stage3_4gpu.log", 4, 3, 1024, 8, 0, 1, 0, X4_TF, H200_HBM, 0, 0, 237.4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5j, docs/results/h200x2_bcd951c.tsv (one machine session, code bcd951c): stage 3's
       gathers overlapped, stages 1-2's under the step's Adam; the two repeats' mean where two ran */
    {"2x H200 box (bcd951c), 1 GPU, stage 2", "PERF.md 5j; h200x2_bcd951c s2_1gpu", 1, 2, 1024, 8, 0, 0, 1, X2C_TF, H200_HBM, 0, 0, 182.1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 box (bcd951c), 1 GPU, stage 3", "PERF.md 5j; h200x2_bcd951c groups_s3_1gpu_grouped_{1,2}", 1, 3, 1024, 8, 0, 0, 0, X2C_TF, H200_HBM, 0, 0, 188.6, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (bcd951c), stage 2", "PERF.md 5j; h200x2_bcd951c groups_s2_2gpu_grouped_{1,2}", 2, 2, 1024, 8, 0, 0, 0, X2C_TF, H200_HBM, 0, 0, 191.8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (bcd951c), stage 2, ZERO_STEP_OVERLAP=0", "PERF.md 5j; h200x2_bcd951c groups_s2_2gpu_alone_{1,2}", 2, 2, 1024, 8, 0, 0, 0, X2C_TF, H200_HBM, 0, 0, 194.85, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (bcd951c), stage 3", "PERF.md 5j; h200x2_bcd951c groups_s3_2gpu_grouped_{1,2}", 2, 3, 1024, 8, 0, 0, 1, X2C_TF, H200_HBM, 0, 0, 203.85, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5c, docs/results/h200x2_4d94af3_scale.tsv (bench.sh scale, one machine session, code 4d94af3):
       stage 2 on one GPU the fit, the others predicted */
    {"2x H200 box (4d94af3), 1 GPU, stage 1", "PERF.md 5c; h200x2_4d94af3_scale sc_s1_1gpu", 1, 1, 1024, 8, 0, 0, 0, X2D_TF, H200_HBM, 0, 0, 177.8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 box (4d94af3), 1 GPU, stage 2", "PERF.md 5c; h200x2_4d94af3_scale sc_s2_1gpu", 1, 2, 1024, 8, 0, 0, 1, X2D_TF, H200_HBM, 0, 0, 176.7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 box (4d94af3), 1 GPU, stage 3", "PERF.md 5c; h200x2_4d94af3_scale sc_s3_1gpu", 1, 3, 1024, 8, 0, 0, 0, X2D_TF, H200_HBM, 0, 0, 183.3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (4d94af3), stage 1", "PERF.md 5c; h200x2_4d94af3_scale sc_s1_2gpu", 2, 1, 1024, 8, 0, 0, 0, X2D_TF, H200_HBM, 0, 0, 186.4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (4d94af3), stage 2", "PERF.md 5c; h200x2_4d94af3_scale sc_s2_2gpu", 2, 2, 1024, 8, 0, 0, 0, X2D_TF, H200_HBM, 0, 0, 186.6, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (4d94af3), stage 3", "PERF.md 5c; h200x2_4d94af3_scale sc_s3_2gpu", 2, 3, 1024, 8, 0, 0, 0, X2D_TF, H200_HBM, 0, 0, 196.5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5c, docs/results/h200x2_dcf48e3_scale.tsv (bench.sh scale and offload-n, one machine session,
       code dcf48e3): stage 2 on one GPU the fit, the others predicted; ZeRO-2 + optimizer offload on both
       GPUs with its log's PCIe (55.4 and 55.2 GB/s: 55.3) and the node's host memory (188.96 GB/s: cpu_adam's
       32-thread adam-pf on this machine kind, the same session; the two ranks' CPU Adams share it) */
    {"2x H200 box (dcf48e3), 1 GPU, stage 1", "PERF.md 5c; h200x2_dcf48e3_scale sc_s1_1gpu", 1, 1, 1024, 8, 0, 0, 0, X2E_TF, H200_HBM, 0, 0, 183.699, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 box (dcf48e3), 1 GPU, stage 2", "PERF.md 5c; h200x2_dcf48e3_scale sc_s2_1gpu", 1, 2, 1024, 8, 0, 0, 1, X2E_TF, H200_HBM, 0, 0, 184.003, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 box (dcf48e3), 1 GPU, stage 3", "PERF.md 5c; h200x2_dcf48e3_scale sc_s3_1gpu", 1, 3, 1024, 8, 0, 0, 0, X2E_TF, H200_HBM, 0, 0, 191.305, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (dcf48e3), stage 1", "PERF.md 5c; h200x2_dcf48e3_scale sc_s1_2gpu", 2, 1, 1024, 8, 0, 0, 0, X2E_TF, H200_HBM, 0, 0, 189.813, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (dcf48e3), stage 2", "PERF.md 5c; h200x2_dcf48e3_scale sc_s2_2gpu", 2, 2, 1024, 8, 0, 0, 0, X2E_TF, H200_HBM, 0, 0, 190.762, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (dcf48e3), stage 3", "PERF.md 5c; h200x2_dcf48e3_scale sc_s3_2gpu", 2, 3, 1024, 8, 0, 0, 0, X2E_TF, H200_HBM, 0, 0, 200.53, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (dcf48e3), ZeRO-2 + optimizer offload, T 128, mb 16, fp16", "PERF.md 4b; h200x2_dcf48e3_scale on_z2_zero", 2, 2, 128, 16, 1, 0, 0, X2E_TF, H200_HBM, 55.3e9, 188.96e9, 331.3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* Both offloads (stage 3, the overlapped CPU step), one H200: PERF.md 4c's 6.65e9 GPT (L 32, C 4096,
       V 50304, T 1024, micro-batch 8, recompute, the pool keeping the model: max live 1e10-1e11), PCIe 55.1
       GB/s, host memory 150 GB/s (139.1 measured in the accumulation-16 run; 137-169 in the others), the
       rate of the dcf48e3 fit (another session of the same machine kind): within 8% at accumulation 4 to 16.
       With one micro-batch the first forward waits for the whole CPU Adam, its fetch sharing host memory with
       it, and the backward's copies do not hide under its compute (PERF.md 4b): 1.5% low; before those two
       terms 16-18% low. The seed's recipe (GPT-2 XL, T 128, micro-batch 16, fp16, the derived pool), on one
       H100 (6ad964f) and one H200 (check-gpu at 1fd7a2f, its floor line's PCIe and host): 8% low */
    /* accumulation 4, 8 and 16 ran the device's sum of micro-batches (grad_accum_device: the fp32 accumulator
       on the GPU, the sum sent once, the engine's default where it fits a third of the free memory) */
    {"H200 6.65e9, both offloads, recompute, gas 1", "PERF.md 4c (accumulation 1)", 1, 3, 1024, 8, 1, 0, 0, X2E_TF, H200_HBM, 55.1e9, 150e9, 2173, 1, 32, 4096, 0, 1, 1, 1e11, 0, 50304, 0, 0, 0, 0, 0},
    {"H200 6.65e9, both offloads, recompute, gas 4", "PERF.md 4c (accumulation 4, the device's sum)", 1, 3, 1024, 8, 1, 0, 0, X2E_TF, H200_HBM, 55.1e9, 150e9, 4576, 1, 32, 4096, 0, 4, 1, 1e11, 0, 50304, 0, 0, 0, 0, 1},
    {"H200 6.65e9, both offloads, recompute, gas 8", "PERF.md 4c (accumulation 8)", 1, 3, 1024, 8, 1, 0, 0, X2E_TF, H200_HBM, 55.1e9, 150e9, 7658, 1, 32, 4096, 0, 8, 1, 1e11, 0, 50304, 0, 0, 0, 0, 1},
    {"H200 6.65e9, both offloads, recompute, gas 16", "PERF.md 4c (accumulation 16)", 1, 3, 1024, 8, 1, 0, 0, X2E_TF, H200_HBM, 55.1e9, 139.1e9, 13436, 1, 32, 4096, 0, 16, 1, 1e11, 0, 50304, 0, 0, 0, 0, 1},
    {"H100 seed recipe (both offloads, T 128, mb 16, fp16)", "PERF.md 4b floor table; h100_offload_floor", 1, 3, 128, 16, 1, 0, 0, H100_TF, H100_HBM, 54.9e9, 152.7e9, 462.7, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"H200 seed recipe (check-gpu 1fd7a2f, xl_fp16_s3_offload)", "PERF.md GPU checks; its floor line", 1, 3, 128, 16, 1, 0, 0, X2E_TF, H200_HBM, 54.85e9, 177.9e9, 415.8, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* bench.sh offload-ratio on 2x H200 (code 8eaccf0, one machine session; docs/results/h200x2_8eaccf0_ratio.tsv):
       both GPUs ran (the target meant one); PCIe from each run's floor lines (54.3-55.0 GB/s); the node's host
       memory 188.96 GB/s as in the dcf48e3 row above (the floor lines' per-rank probes, 152-184 GB/s each, add up
       to more than the CPU Adams got together: with their sum the ZeRO-3 + optimizer offload row is 21% low); the
       mean of the two repeats; the rate of the dcf48e3 fit. Two rows are documented misses, held to their own
       bound (docs/PERF.md 4e): the seed's recipe at ratio 0.1 is 12% low (its device units' parameters went to
       the host and back: ratio_params_host; at ratio 1 it is 10% low, within the bound, since the one
       micro-batch's copies are priced outside the backward's compute and the first forward's fetch beside the
       CPU Adam in host memory: it was 21% low before); the 6.65e9 GPT at ratio 0.1 is 20% high: its compute with
       the gathers beside it took 750 ms, the compute alone as the model prices it (no contention), where the
       contention factor fitted at C 1600 adds 114 ms */
    {"2x H200 (8eaccf0), 6.65e9, ZeRO-3 + optimizer offload, recompute", "h200x2_8eaccf0_ratio ratio_big_all_{1,2}", 2, 3, 1024, 8, 1, 0, 0, X2E_TF, H200_HBM, 54.8e9, 188.96e9, 1947.2, 1, 32, 4096, 1, 0, 0, 0, 0, 50304, 0, 0, 0, 0, 0},
    {"2x H200 (8eaccf0), 6.65e9, the same at ratio 0.1", "h200x2_8eaccf0_ratio ratio_big_plan_{1,2}", 2, 3, 1024, 8, 1, 0, 0, X2E_TF, H200_HBM, 55.0e9, 188.96e9, 847.0, 1, 32, 4096, 1, 0, 0, 0, 0.25, 50304, 0.1, 0, 0, 0, 0},
    {"2x H200 (8eaccf0), seed recipe (both offloads)", "h200x2_8eaccf0_ratio ratio_seed_all_{1,2}", 2, 3, 128, 16, 1, 0, 0, X2E_TF, H200_HBM, 54.5e9, 188.96e9, 379.2, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (8eaccf0), seed recipe at ratio 0.1", "h200x2_8eaccf0_ratio ratio_seed_plan_{1,2}", 2, 3, 128, 16, 1, 0, 0, X2E_TF, H200_HBM, 54.3e9, 188.96e9, 183.9, 0, 0, 0, 1, 1, 1, 0, 0.15, 0, 0.1, 1, 0, 0, 0},
    {"2x H200 (8eaccf0), 6.65e9, stage 1, mb 1 x 64 (gpt --auto)", "h200x2_8eaccf0_ratio ratio_big_auto", 2, 1, 1024, 1, 0, 0, 0, X2E_TF, H200_HBM, 0, 0, 6520.4, 0, 32, 4096, 1, 64, 0, 0, 0, 50304, 0, 0, 0, 0, 0},
    /* PERF.md 5j, docs/results/h200x2_fd100f4_s10.tsv call 2 (code fd100f4's engine: stages 1-2 leave the
       step's all-gathers to run beside the next forward; the model prices them under the step's Adam, as at
       bcd951c): stage 2 on one GPU the fit (182.7 ms: 8.0228e13 / (182.7 - 11.317 ms Adam) = 468.118), the
       2-GPU rows the means of two interleaved runs each */
    {"2x H200 box (fd100f4), 1 GPU, stage 2", "PERF.md 5j; h200x2_fd100f4_s10 xl_s2_1g (call 2)", 1, 2, 1024, 8, 0, 0, 1, X2G_TF, H200_HBM, 0, 0, 182.7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (fd100f4), stage 2, gathers deferred", "PERF.md 5j; h200x2_fd100f4_s10 xl_s2_def_{1,2}", 2, 2, 1024, 8, 0, 0, 0, X2G_TF, H200_HBM, 0, 0, 189.95, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (fd100f4), stage 1, gathers deferred", "PERF.md 5j; h200x2_fd100f4_s10 xl_s1_def_{1,2}", 2, 1, 1024, 8, 0, 0, 0, X2G_TF, H200_HBM, 0, 0, 190.95, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (fd100f4), stage 2, ZERO_GATHER_DEFER=0", "PERF.md 5j; h200x2_fd100f4_s10 xl_s2_off_{1,2}", 2, 2, 1024, 8, 0, 0, 0, X2G_TF, H200_HBM, 0, 0, 192.2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (fd100f4), stage 1, ZERO_GATHER_DEFER=0", "PERF.md 5j; h200x2_fd100f4_s10 xl_s1_off_{1,2}", 2, 1, 1024, 8, 0, 0, 0, X2G_TF, H200_HBM, 0, 0, 192.3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5c and 4e, the mid-session call at b068db0 on 2x H200 (stage 2 on one GPU the fit, the mean of two
       runs, 181.7 and 182.9 ms; the rest predicted): stage 1-2 on both GPUs, the seed's recipe and ZeRO-2 +
       optimizer offload with the probes' barrier (PCIe from their floor lines; the node's host memory, the two
       ranks' shares added: 186 and 189 GB/s), and gpt --auto's new pick for the 6.65e9 GPT (micro-batch 8 x 8) */
    {"2x H200 box (b068db0), 1 GPU, stage 2", "PERF.md 5c; h200x2_b068db0_mid s2_1gpu_{1,2}", 1, 2, 1024, 8, 0, 0, 1, X2F_TF, H200_HBM, 0, 0, 182.3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (b068db0), stage 2", "PERF.md 5c; h200x2_b068db0_mid s2_2gpu_{1,2}", 2, 2, 1024, 8, 0, 0, 0, X2F_TF, H200_HBM, 0, 0, 188.95, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (b068db0), stage 1", "PERF.md 5c; h200x2_b068db0_mid s1_2gpu", 2, 1, 1024, 8, 0, 0, 0, X2F_TF, H200_HBM, 0, 0, 189.7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (b068db0), ZeRO-2 + optimizer offload, T 128, mb 16, fp16", "PERF.md 4d; h200x2_b068db0_mid z2off_2gpu", 2, 2, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 52.9e9, 188.9e9, 308.5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (b068db0), seed recipe (both offloads)", "PERF.md 4d; h200x2_b068db0_mid seed_2gpu", 2, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 49.1e9, 185.9e9, 367.2, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"2x H200 (b068db0), 6.65e9, stage 1, mb 8 x 8 (gpt --auto)", "PERF.md 4e; h200x2_b068db0_mid auto_2gpu", 2, 1, 1024, 8, 0, 0, 0, X2F_TF, H200_HBM, 0, 0, 5104.3, 0, 32, 4096, 1, 8, 0, 0, 0, 50304, 0, 0, 0, 0, 0},
    /* PERF.md 4e, the final call at 4bf4f91 on 2x H200 (the kept units' parameters on the device): the seed's
       recipe at ratio 0.1 on one GPU and on both, and at ratio 1 on one; PCIe and host memory from their floor
       lines (one GPU: the node's; two: the ranks' shares added). The 2-GPU run is a documented miss, 23% low
       (at T 128 each unit's fetch, gather and wait form a chain the model does not price) */
    {"H200 (4bf4f91) seed recipe at ratio 0.1", "PERF.md 4e; final call seed_r01_1gpu", 1, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 55.4e9, 189.9e9, 86.5, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0.1, 0, 0, 0, 0},
    {"2x H200 (4bf4f91) seed recipe at ratio 0.1", "PERF.md 4e; final call seed_r01_2gpu", 2, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 54.4e9, 181.9e9, 131.9, 0, 0, 0, 1, 1, 1, 0, 0.25, 0, 0.1, 0, 0, 0, 0},
    {"H200 (4bf4f91) seed recipe (both offloads)", "PERF.md 4e; final call seed_r1_1gpu", 1, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 55.4e9, 183.8e9, 385.9, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 4b, "The statistics on the copy stream" (one H200, one machine session at 57f515a, each the mean of
       two interleaved runs; PCIe and host memory from their floor lines): the model prices the one-micro-batch
       backward's gradients beside its fetches (47.0 ms less than on the comm stream); the engine gained 27.8 ms.
       5% and 10% low */
    {"H200 (57f515a) seed recipe, its gradients with their statistics on the copy stream", "PERF.md 4b; h200_57f515a_seed seed_copy_{1,2}", 1, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 55.25e9, 156.6e9, 417.45, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0},
    {"H200 (df2ac6e) seed recipe, the comm stream not waiting for the backward", "PERF.md 4b; h200_3024df8_seed seed_{1,2} df2ac6e", 1, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 55.25e9, 163.9e9, 391.55, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0},
    {"H200 (3024df8) seed recipe, its statistics on the compute stream", "PERF.md 4b; h200_3024df8_seed seed_new_{1..4} (rates of 1-2)", 1, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 55.4e9, 157.0e9, 396.35, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0},
    {"H200 (57f515a) seed recipe, ZERO_COPY_STREAM=0", "PERF.md 4b; h200_57f515a_seed seed_comm_{1,2}", 1, 3, 128, 16, 1, 0, 0, X2F_TF, H200_HBM, 55.3e9, 152.8e9, 445.2, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 4c, one H200 (16 cores, 125 GiB of host memory) at ab9034e: the 7.26e9 GPT (L 35, C 4096, V 50304)
       as gpt --auto --offload-optimizer cpu --tokens 131072 chose it: stage 3, ratio 0.1, the parameters on the
       CPU and the kept units' on the GPU, micro-batch 4 x 32, no recompute; PCIe 55.35 GB/s (55.4 and 55.3, its
       floor line), host memory 161.7 GB/s. The compute is its floor (1.06x): the model's rate for C 4096 at
       micro-batch 4 is what this row measures */
    {"H200 (ab9034e) 7.26e9, gpt --auto: ratio 0.1, params cpu, mb 4 x 32", "PERF.md 4c; big_auto.log", 1, 3, 1024, 4, 1, 0, 0, X2F_TF, H200_HBM, 55.35e9, 161.7e9, 11915.9, 0, 35, 4096, 1, 32, 1, 0, 0, 50304, 0.1, 0, 0, 0, 1},
    /* PERF.md 4c, one H200 at 3a69cdd (the host sum's arena): the largest GPT with accumulation the plan fits
       (L 63, 12.9e9), as gpt --auto --offload-optimizer cpu --tokens 131072 chose it: ratio 0.4, the parameters
       on the CPU and the kept units' on the GPU, recompute, micro-batch 2 x 64; PCIe 55.75 GB/s (55.1 and 56.4),
       host memory 150.4 GB/s (its floor line). The model prices each micro-batch at the kept layers' compute,
       then the CPU share's copies (each pass's fetches, the backward's gradients after them) beside that share's
       compute; what it leaves out is one stream's copies waiting behind the fetches' waits for pool room (the
       gradient ring's waits in the run's timeline): held to 15%. At 55bc6fd, with 3 slots of the largest chunk
       for the host's adds, the run took 70,105 ms (-27%) */
    {"H200 (3a69cdd) 12.9e9, gpt --auto: ratio 0.4, params cpu, recompute, mb 2 x 64", "PERF.md 4c; h200_3a69cdd_big auto_L63", 1, 3, 1024, 2, 1, 0, 0, X2F_TF, H200_HBM, 55.75e9, 150.4e9, 56899.9, 1, 63, 4096, 1, 64, 1, 0, 0.15, 50304, 0.4, 0, 0, 0, 0},
    /* the same machine kind and code: L 60 (12.3e9), gpt --auto's pick (ratio 0.4, params cpu, recompute,
       micro-batch 8 x 16), priced at 24,500 ms; PCIe 55.25 GB/s (55.3 and 55.2), host memory 162.4 GB/s (its
       floor line). At 37691b5 (3 slots): 28,893 ms */
    {"H200 (3a69cdd) 12.3e9, gpt --auto: ratio 0.4, params cpu, recompute, mb 8 x 16", "PERF.md 4c; h200_3a69cdd_big auto_L60", 1, 3, 1024, 8, 1, 0, 0, X2F_TF, H200_HBM, 55.25e9, 162.4e9, 26186.7, 1, 60, 4096, 1, 16, 1, 0, 0, 50304, 0.4, 0, 0, 0, 0},
    /* PERF.md 4c, one H200 in one machine session of the fifth session: L 60 at e5dcd13 with the host sum's
       chunks on the copy stream (25,420.9 ms; 26,321.9 with ZERO_COPY_STREAM=0), PCIe 55.35 GB/s (55.4 and 55.3),
       host memory 187.7 GB/s; L 63 at 4a18868 (the arena grown at its first use), PCIe 55.35, host memory 164.1
       GB/s. L 63 is held to 15% as at 3a69cdd: its host memory also carries the CPU's adds of 63 micro-batches,
       which the model does not price */
    {"H200 (e5dcd13) 12.3e9, the copy stream, gpt --auto: ratio 0.4, params cpu, recompute, mb 8 x 16", "PERF.md 4c; h200_e5dcd13_copy L60_copy", 1, 3, 1024, 8, 1, 0, 0, X2F_TF, H200_HBM, 55.35e9, 187.7e9, 25420.9, 1, 60, 4096, 1, 16, 1, 0, 0, 50304, 0.4, 0, 0, 1, 0},
    {"H200 (4a18868) 12.9e9, gpt --auto: ratio 0.4, params cpu, recompute, mb 2 x 64", "PERF.md 4c; h200_e5dcd13_copy L63_auto", 1, 3, 1024, 2, 1, 0, 0, X2F_TF, H200_HBM, 55.35e9, 164.1e9, 56969.4, 1, 63, 4096, 1, 64, 1, 0, 0.15, 50304, 0.4, 0, 0, 1, 0},
    /* PERF.md 4c, one H200 in one machine session of the sixth session, at 8b4784b (the ratio's kept units spread
       through the layout): L 63 as gpt --auto chose it (ratio 0.4, micro-batch 2 x 64), PCIe 55.25 GB/s (55.2 and
       55.3), host memory 143.6 GB/s; L 63 at ratio 0.41 and micro-batch 4 x 32 (flags; what the plan picks with the
       ratio in steps of 0.01), PCIe 55.9 (55.4 and 56.4), host memory 145.8; L 60 as gpt --auto chose it (ratio 0.4,
       8 x 16), PCIe 55.25, host memory 142.2. Their backward's load on host memory (the CPU's adds, 3.3 TB a step
       at micro-batch 2) is what ZERO__TIME_HOST_NORM fits */
    {"H200 (8b4784b) 12.9e9, spread, gpt --auto: ratio 0.4, params cpu, recompute, mb 2 x 64", "PERF.md 4c; h200_8b4784b_spread L63_spread", 1, 3, 1024, 2, 1, 0, 0, X2F_TF, H200_HBM, 55.25e9, 143.6e9, 51228.9, 1, 63, 4096, 1, 64, 1, 0, 0, 50304, 0.4, 0, 1, 1, 0},
    {"H200 (8b4784b) 12.9e9, spread: ratio 0.41, params cpu, recompute, mb 4 x 32", "PERF.md 4c; h200_8b4784b_spread L63_mb4", 1, 3, 1024, 4, 1, 0, 0, X2F_TF, H200_HBM, 55.9e9, 145.8e9, 30643.8, 1, 63, 4096, 1, 32, 1, 0, 0, 50304, 0.41, 0, 1, 1, 0},
    {"H200 (8b4784b) 12.3e9, spread, gpt --auto: ratio 0.4, params cpu, recompute, mb 8 x 16", "PERF.md 4c; h200_8b4784b_spread L60_spread", 1, 3, 1024, 8, 1, 0, 0, X2F_TF, H200_HBM, 55.25e9, 142.2e9, 24827.4, 1, 60, 4096, 1, 16, 1, 0, 0, 50304, 0.4, 0, 1, 1, 0},
    /* the same machine kind, the call of 76f400d's make check-gpu: L 63 as gpt --auto then chose it (ratio 0.42,
       micro-batch 4 x 32; one step after the warm-up), PCIe 55.2 GB/s (55.1 and 55.3), host memory 150.4 GB/s */
    {"H200 (76f400d) 12.9e9, gpt --auto: ratio 0.42, params cpu, recompute, mb 4 x 32", "PERF.md 4c; h200_8b4784b_spread L63_auto", 1, 3, 1024, 4, 1, 0, 0, X2F_TF, H200_HBM, 55.2e9, 150.4e9, 30735.4, 1, 63, 4096, 1, 32, 1, 0, 0, 50304, 0.42, 0, 1, 1, 0},
    /* PERF.md 4c, seventh session, one H200: L 63 as gpt --auto chooses it (ratio 0.42, 4 x 32) with the plain step
       (the code of 8465d80 run with --no-overlap-cpu-step: main's schedule), PCIe 55.95 GB/s (55.5 and 56.4), host
       memory 173.2 GB/s; in another machine session, L 64 as gpt --auto chooses it at 0245524 (ratio 0.41, 2 x 64),
       PCIe 55.1 (both ways), host memory 152.8 */
    {"H200 (8465d80, plain step) 12.9e9, gpt --auto: ratio 0.42, params cpu, recompute, mb 4 x 32", "PERF.md 4c; h200_0245524_l64 L63_plain", 1, 3, 1024, 4, 1, 0, 0, X2F_TF, H200_HBM, 55.95e9, 173.2e9, 30469.4, 1, 63, 4096, 1, 32, 1, 0, 0, 50304, 0.42, 0, 1, 1, 0},
    {"H200 (0245524) 13.1e9, gpt --auto: ratio 0.41, params cpu, recompute, mb 2 x 64", "PERF.md 4c; h200_0245524_l64 L64_auto", 1, 3, 1024, 2, 1, 0, 0, X2F_TF, H200_HBM, 55.1e9, 152.8e9, 50303.3, 1, 64, 4096, 1, 64, 1, 0, 0, 50304, 0.41, 0, 1, 1, 0},
    /* PERF.md 4b "The floor of the offloaded step", docs/results/h100_offload_floor.tsv row z2off_zero:
       fp16, T 128, micro-batch 16; its floor lines: PCIe 54.7 GB/s to the GPU and 55.1 to the host
       (54.9, their mean, here), host memory 152.8 GB/s */
    {"H100 ZeRO-2 + optimizer offload, T 128, mb 16, fp16", "PERF.md 4b; h100_offload_floor/z2off_zero.log", 1, 2, 128, 16, 1, 0, 0, H100_TF, H100_HBM, 54.9e9, 152.8e9, 441.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* PERF.md 5f, code d40a9b3 (010bf01's kernels), docs/results/h100_max.tsv: the largest
       micro-batch, recompute at 8 and at its largest, and the biggest model (C 4096, micro-batch 1) */
    {"H100 ZeRO-2, mb 26 (the largest)", "PERF.md 5f; h100_max/fastmax_zero.log", 1, 2, 1024, 26, 0, 0, 0, H100_TF, H100_HBM, 0, 0, 576.6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"H100 ZeRO-2, recompute, mb 8", "PERF.md 5f; h100_max/rc8_zero.log", 1, 2, 1024, 8, 0, 0, 0, H100_TF, H100_HBM, 0, 0, 237.8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"H100 ZeRO-2, recompute, mb 145 (the largest)", "PERF.md 5f; h100_max/rcmax_zero.log", 1, 2, 1024, 145, 0, 0, 0, H100_TF, H100_HBM, 0, 0, 3841.7, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"H100 ZeRO-2, L 24, C 4096, mb 1", "PERF.md 5f; h100_max/biggest_zero_L24.log", 1, 2, 1024, 1, 0, 0, 0, H100_TF, H100_HBM, 0, 0, 111.0, 0, 24, 4096, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"H100 ZeRO-2, recompute, L 25, C 4096, mb 1", "PERF.md 5f; h100_max/biggest_zero_recompute_L25.log", 1, 2, 1024, 1, 0, 0, 0, H100_TF, H100_HBM, 0, 0, 129.9, 1, 25, 4096, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* docs/results/h100_fast.tsv row ab_s124 (PERF.md 5f): GPT-2 124M's width (768); the fit of the
       rate's width scaling (ZERO__TIME_HALF_WIDTH) */
    {"H100 ZeRO-2, GPT-2 124M (L 12, C 768), mb 8", "results/h100_fast.tsv ab_s124", 1, 2, 1024, 8, 0, 0, 1, H100_TF, H100_HBM, 0, 0, 16.1, 0, 12, 768, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};

static zero_time_model calib_model(const calib_run *c) {
    zero_time_model m;
    double C = c->hidden ? c->hidden : 1600, L = c->layers ? c->layers : 48;
    memset(&m, 0, sizeof m);
    m.layers = (int)L;
    m.hidden = (int)C;
    m.recompute = c->recompute;
    m.vocab = c->vocab ? c->vocab : 256;
    m.seq = c->T;
    m.params = L * (12 * C * C + 13 * C) + m.vocab * C + c->T * C + 2 * C;
    m.micro_batch = c->B;
    m.compute_dtype = c->offload && c->T == 128 ? ZERO_DTYPE_FP16 : ZERO_DTYPE_BF16; /* (the T 128 recipes: fp16) */
    m.grad_accum = c->gas;
    m.offload_param = c->offload_param ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
    m.stage3_max_live_parameters = c->keep;
    m.gpus_per_node = c->gpus;
    m.nodes = 1;
    m.tflops = c->tflops;
    m.hbm_bytes_per_s = c->hbm;
    m.pcie_bytes_per_s = c->pcie;
    m.host_bytes_per_s = c->host;
    m.stage = c->stage;
    m.offload_optimizer = c->offload ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
    m.stage3_serial_gathers = c->serial;
    m.step_serial_gathers = !c->step_overlap;
    m.offload_ratio = c->ratio;
    m.ratio_params_host = c->params_host;
    m.ratio_first = !c->spread;
    m.grads_on_comm = !c->copy_out;
    m.grad_accum_device = c->dev_sum;
    return m;
}

static void test_time_calibration(void) {
    size_t i, misses = 0;
    int print = getenv("TEST_ESTIMATE_TABLE") != NULL;
    if (print) printf("| run | source | measured ms | predicted ms | error |\n|---|---|---|---|---|\n");
    for (i = 0; i < sizeof calib / sizeof calib[0]; i++) {
        zero_time_model m = calib_model(&calib[i]);
        zero_time_estimate o;
        double pred, rel;
        CHECK(zero_estimate_time(&m, &o, NULL) == ZERO_OK);
        pred = o.step_s * 1e3;
        rel = (pred - calib[i].measured_ms) / calib[i].measured_ms;
        if (print)
            printf("| %s%s | %s | %.1f | %.1f | %+.1f%% |\n", calib[i].what,
                   calib[i].fitted ? " (fit)" : "", calib[i].source, calib[i].measured_ms, pred,
                   100 * rel);
        CHECKF(fabs(rel) <= (calib[i].tol > 0 ? calib[i].tol : 0.15), "%s: predicted %.1f ms, measured %.1f (%+.1f%%)",
               calib[i].what, pred, calib[i].measured_ms, 100 * rel);
        /* the runs on several GPUs: within 10%, but for the documented misses (their own bound) */
        CHECKF(calib[i].gpus == 1 || calib[i].tol > 0 || fabs(rel) <= 0.10, "%s: predicted %.1f ms, measured %.1f (%+.1f%%)",
               calib[i].what, pred, calib[i].measured_ms, 100 * rel);
        misses += calib[i].gpus > 1 && calib[i].tol > 0;
        /* a fitted run is reproduced (its fit is exact to the digits above) */
        CHECKF(!calib[i].fitted || fabs(rel) < 0.001, "%s: the fit gives %.2f ms", calib[i].what, pred);
    }
    /* the documented misses on several GPUs: the two of the 8eaccf0 comment and the seed's recipe at ratio 0.1
       at 4bf4f91, no more */
    CHECKF(misses == 3, "%zu rows on several GPUs hold their own bound, 3 are documented", misses);
    {
        /* the fitted figures are what the comment says they are: the FLOPs of
           GPT-2 XL at micro-batch 8, over the fitted run's step less its Adam */
        zero_time_model m = calib_model(&calib[0]);
        double P = m.params, flops = (6 * (12 * 48 * 1600.0 * 1600 + 256 * 1600) +
                                      12 * 48 * 1600.0 * 1024) * 8192;
        CHECK_NEAR(P, 1.4776096e9, 1e-9);
        CHECK_NEAR(flops / (187.9e-3 - 30 * P / H100_HBM) / 1e12, H100_TF, 1e-4);
        CHECK_NEAR(flops / (201.3e-3 - 30 * P / H200_HBM) / 1e12, X2_TF, 1e-4);
        CHECK_NEAR(flops / (196.4e-3 - 30 * P / H200_HBM) / 1e12, X4_TF, 1e-4);
        CHECK_NEAR(flops / (182.1e-3 - 30 * P / H200_HBM) / 1e12, X2C_TF, 1e-4);
        CHECK_NEAR(flops / (176.672e-3 - 30 * P / H200_HBM) / 1e12, X2D_TF, 1e-4);
        /* bench_optim --gpt 1.5B (V 50257: 1557611200 parameters): zero_step in 16.751 ms at 30 bytes each */
        CHECK_NEAR(30 * 1557611200.0 / 16.751e-3, H100_HBM, 1e-3);
    }
}

static void test_time_errors(void) {
    zero_time_model m = tm_small();
    zero_time_estimate o;
    zero_error err;
    CHECK(zero_estimate_time(NULL, &o, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK_STR_CONTAINS(err.msg, "zero_estimate_time: m is NULL");
    CHECK(zero_estimate_time(&m, NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
#define BAD(field_set, K, TXT)                                                  \
    do {                                                                           \
        m = tm_small();                                                            \
        field_set;                                                                 \
        memset(&o, 0x5a, sizeof o);                                                \
        CHECK(zero_estimate_time(&m, &o, &err) == ZERO_ERR_INVALID_ARG);           \
        CHECK(err.item == ZERO_MSG_ESTIMATE_ARGS);                                 \
        CHECKF(strcmp(err.key, K) == 0, "key %s want %s", err.key, K);             \
        CHECK_STR_CONTAINS(err.msg, TXT);                                          \
        CHECK(o.step_s == 0 && o.world == 0);                                      \
    } while (0)
    BAD(m.params = 0, "params", "must be > 0");
    BAD(m.params = NAN, "params", "must be > 0");
    BAD(m.layers = 0, "layers", "must be >= 1");
    BAD(m.hidden = -1, "hidden", "must be >= 1");
    BAD(m.vocab = -1, "vocab", "must be >= 0");
    BAD(m.seq = 0, "seq", "must be >= 1");
    BAD(m.micro_batch = 0, "micro_batch", "must be >= 1");
    BAD(m.compute_dtype = (zero_dtype)99, "compute_dtype", "got 99");
    BAD(m.unit_params = 2e6, "unit_params", "must be <= params");
    BAD(m.gpus_per_node = 0, "gpus_per_node", "must be >= 1");
    BAD(m.nodes = 0, "nodes", "must be >= 1");
    BAD(m.stage = 4, "stage", "must be 0, 1, 2 or 3");
    BAD(m.offload_optimizer = ZERO_OFFLOAD_NVME, "offload_optimizer", "NVMe is not modelled");
    BAD((m.stage = 0, m.offload_optimizer = ZERO_OFFLOAD_CPU), "offload_optimizer", "needs stage 1");
    BAD(m.group = 3, "group", "must divide the world (4 GPUs)");
    BAD(m.group = 8, "group", "must divide the world");
    BAD((m.gpus_per_node = 6, m.group = 4), "group", "straddle nodes");
    BAD(m.tflops = NAN, "tflops", "must be finite");
    BAD(m.tflops_hidden = INFINITY, "tflops_hidden", "must be finite");
    BAD(m.tflops_half_width = NAN, "tflops_half_width", "must be finite");
    BAD(m.inter_bus_bytes_per_s = INFINITY, "inter_bus_bytes_per_s", "must be finite");
    BAD(m.host_bytes_per_s = -INFINITY, "host_bytes_per_s", "must be finite");
    BAD(m.comm_contention = NAN, "comm_contention", "must be finite");
    BAD(m.offload_param = ZERO_OFFLOAD_CPU, "offload_param", "at stage 3 with offload_optimizer cpu");
    BAD((m.stage = 3, m.offload_param = ZERO_OFFLOAD_CPU), "offload_param", "got 1 at stage 3, offload_optimizer 0");
    BAD((m.stage = 3, m.offload_optimizer = ZERO_OFFLOAD_CPU, m.offload_param = ZERO_OFFLOAD_NVME), "offload_param",
        "NVMe, and the parameters alone, are not modelled");
    BAD(m.stage3_max_live_parameters = NAN, "stage3_max_live_parameters", "must be finite");
    BAD(m.offload_ratio = -0.5, "offload_ratio", "must be >= 0");
    BAD(m.offload_ratio = NAN, "offload_ratio", "must be >= 0");
    BAD((m.offload_optimizer = ZERO_OFFLOAD_CPU, m.offload_ratio = 0.5), "offload_ratio", "needs stage 3");
    BAD((m.stage = 3, m.offload_ratio = 0.5), "offload_ratio", "offload_optimizer cpu");
#undef BAD
    /* stage 0 ignores the group; a group that straddles nodes is fine there */
    m = tm_small();
    m.stage = 0;
    m.group = 3;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK && err.code == ZERO_OK);
}

/* offload_optimizer.ratio: the first (1 - ratio) of the shard steps on the GPU. GPT-2 XL's shape at
   stage 3 on 2 GPUs of one node: ratio 0.5 keeps half, so the CPU Adam, the copies and the host's
   optimizer memory halve, the GPU Adam steps the other half (30 bytes a parameter at the HBM rate)
   and the GPU holds their master, m, v and bf16 accumulator; ratio 0.3 leaves 0.3 of the CPU Adam. */
static void test_time_ratio(void) {
    zero_time_model m;
    zero_time_estimate full, half, o;
    zero_estimate_args a;
    zero_memory_estimate mf, mh;
    zero_error err;
    const double P = 1.4776096e9, S = P / 2;
    memset(&m, 0, sizeof m);
    m.params = P, m.layers = 48, m.hidden = 1600, m.vocab = 256, m.seq = 128, m.micro_batch = 16;
    m.gpus_per_node = 2, m.nodes = 1, m.stage = 3, m.offload_optimizer = ZERO_OFFLOAD_CPU;
    CHECK(zero_estimate_time(&m, &full, &err) == ZERO_OK);
    m.offload_ratio = 1;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK && o.step_s == full.step_s);
    m.offload_ratio = 0.5;
    CHECK(zero_estimate_time(&m, &half, &err) == ZERO_OK);
    CHECK_NEAR(half.cpu_adam_s, full.cpu_adam_s / 2, 1e-15);
    CHECK_NEAR(half.bytes_pcie, full.bytes_pcie / 2, 1e-3);
    CHECK_NEAR(half.optimizer_s, 30 * S / 2 / 2.79e12, 1e-15);
    CHECK(full.optimizer_s == 0);
    CHECKF(half.step_s < full.step_s, "half %g full %g", half.step_s, full.step_s);
    CHECK_NEAR(half.gpu_memory_bytes - full.gpu_memory_bytes, (12 + 2) * S / 2, 1);
    m.offload_ratio = 0.3;
    CHECK(zero_estimate_time(&m, &o, &err) == ZERO_OK);
    CHECK_NEAR(o.cpu_adam_s, full.cpu_adam_s * 0.3, 1e-15);
    /* the memory estimator: the host's optimizer shrinks by what the GPU gains */
    memset(&a, 0, sizeof a);
    a.params = P, a.largest_layer = P / 48, a.gpus_per_node = 2, a.nodes = 1, a.stage = 3;
    a.offload_optimizer = ZERO_OFFLOAD_CPU, a.compute_dtype = ZERO_DTYPE_BF16;
    CHECK(zero_estimate_memory(&a, &mf, &err) == ZERO_OK);
    a.offload_ratio = 0.5;
    CHECK(zero_estimate_memory(&a, &mh, &err) == ZERO_OK);
    CHECK_NEAR(mh.gpu_optimizer_bytes, 12 * S / 2, 1);
    CHECK_NEAR(mf.cpu_optimizer_bytes - mh.cpu_optimizer_bytes, 12 * S / 2 * 2, 1);
    CHECK(mh.cpu_grads_bytes == mf.cpu_grads_bytes && mh.cpu_params_bytes == mf.cpu_params_bytes);
    a.optimizer = ZERO_OPTIMIZER_LION;
    CHECK(zero_estimate_memory(&a, &mh, &err) == ZERO_ERR_INVALID_ARG && !strcmp(err.key, "offload_ratio"));
    CHECK_STR_CONTAINS(err.msg, "Adam or AdamW");
}

/* Both offloads (stage 3): the bytes over PCIe and what the step waits for, by hand. One GPU, P = 1e9 in
   10 units, bf16 (d 2), PCIe 50 GB/s, host 140 GB/s, 4 micro-batches: a pass of the shard is 2e9 / 50e9 =
   40 ms; each micro-batch before the last sends its gradients (2e9, 40 ms, the host adds them up) beside
   its backward, after its fetches on the same stream; the last brings the host's fp32 sum back and sends
   the sum out (4e9 each way, 160 ms); the CPU Adam 28e9 / 140e9 = 200 ms. With the pool keeping the model
   the forward brings the shard once (2e9 + 3 x 2e9 + 8e9 bytes); without, every forward and backward does
   (8 passes: 16e9 + 6e9 + 8e9). A backward's fetches (comm stream) and gradients (copy stream) cross at
   once: the longer of each and both at ZERO__TIME_PCIE_DUPLEX (1.6) x 50 GB/s. A backward before the last
   also loads host memory: the CPU's adds (10 bytes a CPU-side parameter), its fetches and its gradients, at
   the host's rate; it and the backward's compute with its exposed copies take their L2 norm (hnorm). The
   first forward waits for the CPU Adam, whose host memory its fetch shares (2e9 / 140e9 more). */
static double hnorm(double bwd, double load) { return sqrt(bwd * bwd + load * load); }

static void test_time_param_offload(void) {
    zero_time_model m;
    zero_time_estimate keep, pass, plain;
    zero_error err;
    double t_fwd, t_bwd;
    memset(&m, 0, sizeof m);
    m.params = 1e9, m.layers = 10, m.hidden = 1000, m.vocab = 0, m.seq = 100, m.micro_batch = 1, m.grad_accum = 4;
    m.gpus_per_node = 1, m.nodes = 1, m.stage = 3, m.offload_optimizer = ZERO_OFFLOAD_CPU;
    m.offload_param = ZERO_OFFLOAD_CPU, m.pcie_bytes_per_s = 50e9, m.host_bytes_per_s = 140e9;
    m.stage3_max_live_parameters = 1e9;
    CHECK(zero_estimate_time(&m, &keep, &err) == ZERO_OK);
    t_fwd = keep.compute_s / 4 / 3, t_bwd = 2 * t_fwd;
    CHECK_NEAR(keep.bytes_pcie, 16e9, 1);
    CHECK_NEAR(keep.cpu_adam_s, 0.2, 1e-12);
    /* the first forward waits for the Adam (the fetch beside it); each backward's gradients beside its compute,
       the last's sum in and out beside the last backward */
    CHECK_NEAR(keep.exposed_offload_s, fmax(0.2 + 2e9 / 140e9, t_fwd) - t_fwd + 3 * (hnorm(t_bwd + fmax(0, 0.04 - t_bwd), 12e9 / 140e9) - t_bwd) +
                                           fmax(0, 0.16 - t_bwd), 1e-12);
    CHECK_NEAR(keep.step_s, keep.compute_s + keep.exposed_offload_s + keep.exposed_comm_s + keep.contention_s, 1e-12);
    CHECK(keep.gpu_memory_bytes > 2e9); /* (the pool holds the model) */
    m.stage3_max_live_parameters = 0;
    CHECK(zero_estimate_time(&m, &pass, &err) == ZERO_OK);
    CHECK_NEAR(pass.bytes_pcie, 30e9, 1);
    CHECK_NEAR(pass.exposed_offload_s, fmax(0.2 + 2e9 / 140e9, t_fwd) - t_fwd + 3 * fmax(0, 0.04 - t_fwd) + 3 * (hnorm(t_bwd + fmax(0, 0.05 - t_bwd), 14e9 / 140e9) - t_bwd) +
                                           fmax(0, 0.04 + 0.16 - t_bwd), 1e-12);
    /* grads_on_comm (ZERO_COPY_STREAM=0, the engine before e5dcd13): a backward's gradients after its fetches */
    m.grads_on_comm = 1;
    CHECK(zero_estimate_time(&m, &plain, &err) == ZERO_OK);
    CHECK_NEAR(plain.exposed_offload_s, fmax(0.2 + 2e9 / 140e9, t_fwd) - t_fwd + 3 * fmax(0, 0.04 - t_fwd) + 3 * (hnorm(t_bwd + fmax(0, 0.08 - t_bwd), 14e9 / 140e9) - t_bwd) +
                                            fmax(0, 0.04 + 0.16 - t_bwd), 1e-12);
    m.grads_on_comm = 0;
    /* grad_accum_device: the micro-batches added on the GPU (4e9 bytes of accumulator there; each add d + 8
       bytes a parameter at the default 2.79e12 B/s), the fp32 sum sent once (4e9, 80 ms) after the last
       backward's fetch; no CPU adds, no gradients before the last: the host memory's load is the fetches' */
    m.grad_accum_device = 1;
    CHECK(zero_estimate_time(&m, &plain, &err) == ZERO_OK);
    CHECK_NEAR(plain.bytes_pcie, 16e9 + 4e9, 1);
    CHECK_NEAR(plain.accumulate_s, 4 * 1e9 * 10 / 2.79e12, 1e-12);
    CHECK_NEAR(plain.gpu_memory_bytes, pass.gpu_memory_bytes + 4e9, 1);
    CHECK_NEAR(plain.exposed_offload_s, fmax(0.2 + 2e9 / 140e9, t_fwd) - t_fwd + 3 * fmax(0, 0.04 - t_fwd) + 3 * (hnorm(t_bwd + fmax(0, 0.04 - t_bwd), 2e9 / 140e9) - t_bwd) +
                                            fmax(0, 0.04 + 0.08 - t_bwd), 1e-12);
    m.grad_accum_device = 0;
    CHECK(pass.gpu_memory_bytes < keep.gpu_memory_bytes);
    /* a ratio below 1: the plain step (the Adam's CPU part, then the forward), the GPU's part on the device,
       whose half of the shard keeps its parameters and gradients there: each pass fetches the other half
       (1e9 bytes, 20 ms) beside that half's compute only where the kept units are the first layers
       (ratio_first), beside the whole pass's where they are spread (the default); each micro-batch before
       the last sends 1e9 (20 ms), the last the fp32 sum in and out (2e9 each way, 80 ms) */
    m.offload_ratio = 0.5;
    m.ratio_first = 1;
    CHECK(zero_estimate_time(&m, &plain, &err) == ZERO_OK);
    CHECK_NEAR(plain.cpu_adam_s, 0.1, 1e-12);
    CHECK(plain.optimizer_s > 0);
    CHECK_NEAR(plain.bytes_pcie, 8 * 1e9 + 3 * 1e9 + 4e9, 1);
    CHECK_NEAR(plain.exposed_offload_s, t_fwd / 2 + fmax(0.02, t_fwd / 2) + 0.1 - t_fwd + 3 * fmax(0, 0.02 - t_fwd / 2) +
                                            3 * (hnorm(t_bwd + fmax(0, 0.025 - t_bwd / 2), 7e9 / 140e9) - t_bwd) +
                                            fmax(0, 0.02 + 0.08 - t_bwd / 2), 1e-12);
    m.ratio_first = 0;
    CHECK(zero_estimate_time(&m, &plain, &err) == ZERO_OK);
    CHECK_NEAR(plain.bytes_pcie, 8 * 1e9 + 3 * 1e9 + 4e9, 1);
    CHECK_NEAR(plain.exposed_offload_s, fmax(0.02, t_fwd) + 0.1 - t_fwd + 3 * fmax(0, 0.02 - t_fwd) +
                                            3 * (hnorm(t_bwd + fmax(0, 0.025 - t_bwd), 7e9 / 140e9) - t_bwd) +
                                            fmax(0, 0.02 + 0.08 - t_bwd), 1e-12);
    /* the engine before (ratio_params_host): every unit's parameters fetched, the device's written back
       after their Adam (1e9 bytes, 20 ms, exposed) */
    m.ratio_params_host = 1;
    CHECK(zero_estimate_time(&m, &plain, &err) == ZERO_OK);
    CHECK_NEAR(plain.bytes_pcie, 8 * 2e9 + 3 * 1e9 + 4e9 + 1e9, 1);
    CHECK_NEAR(plain.exposed_offload_s, fmax(0.04, t_fwd) + 0.1 + 0.02 - t_fwd + 3 * fmax(0, 0.04 - t_fwd) +
                                            3 * (hnorm(t_bwd + fmax(0, 0.04 - t_bwd), 8e9 / 140e9) - t_bwd) +
                                            fmax(0, 0.04 + 0.08 - t_bwd), 1e-12);
    /* one micro-batch, all on the CPU, the pool derived: the forward's fetch (40 ms) under the Adam; the
       backward's fetch (40 ms) and gradients (2e9, 40 ms), on the comm and the copy stream at once: 80 ms at
       ZERO__TIME_PCIE_DUPLEX (1.6) x 50 GB/s, 50 ms, more than either alone, none of it under the backward's
       compute; grads_on_comm (the engine before, ZERO_COPY_STREAM=0): one after the other, 80 ms */
    m.ratio_params_host = 0, m.offload_ratio = 0, m.grad_accum = 1;
    CHECK(zero_estimate_time(&m, &plain, &err) == ZERO_OK);
    t_fwd = plain.compute_s / 3, t_bwd = 2 * t_fwd;
    CHECK_NEAR(plain.bytes_pcie, 6e9, 1);
    CHECK_NEAR(plain.exposed_offload_s, fmax(0.2 + 2e9 / 140e9, t_fwd) - t_fwd + fmax(0.2e9 / 50e9, 0.05), 1e-12);
    m.grads_on_comm = 1;
    CHECK(zero_estimate_time(&m, &keep, &err) == ZERO_OK);
    CHECK_NEAR(keep.exposed_offload_s, fmax(0.2 + 2e9 / 140e9, t_fwd) - t_fwd + fmax(0.2e9 / 50e9, 0.08), 1e-12);
    CHECK_NEAR(keep.step_s - plain.step_s, 0.03, 1e-12);
}

/* zero_estimate_plan: the search zero_estimate --time --plan prints, as a function. */
static void test_time_plan(void) {
    zero_time_model m;
    zero_time_plan pl, big;
    zero_time_estimate o;
    zero_error err;
    const double GiB = 1073741824.0;
    memset(&m, 0, sizeof m);
    m.params = 1.4776096e9, m.layers = 48, m.hidden = 1600, m.vocab = 256, m.seq = 1024, m.micro_batch = 8;
    m.gpus_per_node = 1, m.nodes = 1;
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, 0, 0, &pl, &err) == ZERO_OK && pl.found);
    /* one GPU that holds everything: no offload, no recompute, and the pick's price is zero_estimate_time's */
    CHECK(pl.model.offload_optimizer == ZERO_OFFLOAD_NONE && !pl.model.recompute && pl.model.micro_batch == 8);
    CHECK(zero_estimate_time(&pl.model, &o, &err) == ZERO_OK && o.step_s == pl.est.step_s);
    CHECK(pl.est.gpu_memory_bytes + pl.activation_bytes + ZERO_TIME_PLAN_RESERVE <= 79.18 * GiB);
    CHECK(pl.activation_bytes == zero_estimate_activations(&pl.model));
    CHECK(!pl.tight_found); /* (nothing faster needs the reserve's room) */
    /* a GPU a little too small for the pick with its reserve: the plan takes a slower option and names the pick
       as tight */
    {
        zero_time_plan sm;
        double need = pl.est.gpu_memory_bytes + pl.activation_bytes;
        CHECK(zero_estimate_plan(&m, need + ZERO_TIME_PLAN_RESERVE / 2, 0, 0, &sm, &err) == ZERO_OK && sm.found);
        CHECKF(sm.tight_found && sm.tight_est.step_s == pl.est.step_s && sm.est.step_s > pl.est.step_s,
               "tight %d %.4g against %.4g, the pick %.4g", sm.tight_found, sm.tight_est.step_s, pl.est.step_s, sm.est.step_s);
    }
    /* only the offloaded options where the model asks for them: at stage 3 the ratio keeps the rest on the GPU */
    m.offload_optimizer = ZERO_OFFLOAD_CPU;
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, 0, 0, &pl, &err) == ZERO_OK && pl.found);
    CHECKF(pl.model.offload_optimizer == ZERO_OFFLOAD_CPU && pl.model.stage == 3 && pl.model.offload_ratio < 1,
           "stage %d offload %d ratio %g", pl.model.stage, (int)pl.model.offload_optimizer, pl.model.offload_ratio);
    /* the engine's rule for the micro-batches' sum with the optimizer offloaded: on the GPU where the CPU share's
       fp32 accumulator takes at most a third of what the states leave (here the GPU holds GPT-2 XL many times
       over); at the 12.9e9 GPT below, the host */
    m.grad_accum = 4;
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, 0, 0, &pl, &err) == ZERO_OK && pl.found);
    {
        double acc = 4.0 * m.params / pl.est.group *
                     (pl.model.stage == 3 && pl.model.offload_ratio > 0 && pl.model.offload_ratio < 1 ? pl.model.offload_ratio : 1);
        CHECKF(pl.model.offload_optimizer == ZERO_OFFLOAD_CPU && pl.model.grad_accum_device == 1 &&
                   acc <= (79.18 * GiB - (pl.est.gpu_memory_bytes - acc)) / 3,
               "grad_accum_device %d, accumulator %.3g bytes, states %.3g", pl.model.grad_accum_device, acc,
               pl.est.gpu_memory_bytes);
    }
    CHECK(zero_estimate_time(&pl.model, &o, &err) == ZERO_OK && o.step_s == pl.est.step_s && o.accumulate_s > 0);
    m.grad_accum = 0;
    m.offload_optimizer = ZERO_OFFLOAD_NONE;
    /* tokens: the micro-batch and the accumulation searched, their product the step's sequences */
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, 0, 65536, &pl, &err) == ZERO_OK && pl.found);
    CHECKF(pl.model.micro_batch * pl.model.grad_accum * 1024 == 65536, "mb %d gas %d", pl.model.micro_batch,
           pl.model.grad_accum);
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, 0, 1000, &pl, &err) == ZERO_OK && !pl.found); /* (not whole sequences) */
    /* a 40e9 GPT on one GPU: both offloads where the host holds them, nothing where it does not */
    m.params = 40e9, m.layers = 200, m.hidden = 4096, m.vocab = 50304, m.grad_accum = 8;
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, 1000 * GiB, 0, &big, &err) == ZERO_OK && big.found);
    CHECK(big.model.stage == 3 && big.model.offload_param == ZERO_OFFLOAD_CPU && big.est.cpu_memory_bytes <= 1000 * GiB);
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, 120 * GiB, 0, &pl, &err) == ZERO_OK && !pl.found);
    /* the host keeps ZERO_TIME_PLAN_HOST_RESERVE (2 GiB a GPU and 2 more) beside the offloads: a host of exactly
       the pick's figure is refused, one of that figure and the reserve takes it */
    CHECK(ZERO_TIME_PLAN_HOST_RESERVE(1) == 4 * GiB && ZERO_TIME_PLAN_HOST_RESERVE(8) == 18 * GiB);
    CHECK(zero_estimate_plan(&m, 79.18 * GiB, big.est.cpu_memory_bytes + 4 * GiB, 0, &pl, &err) == ZERO_OK && pl.found);
    CHECK(pl.est.cpu_memory_bytes <= big.est.cpu_memory_bytes);
    {
        zero_time_plan tight;
        CHECK(zero_estimate_plan(&m, 79.18 * GiB, pl.est.cpu_memory_bytes + 4 * GiB * (1 - 1e-9), 0, &tight, &err) ==
              ZERO_OK);
        CHECK(!tight.found || tight.est.cpu_memory_bytes < pl.est.cpu_memory_bytes);
    }
    /* the ratio in steps of 0.01: the 12.9e9 GPT (L 63, C 4096) on one H200 (139.8 GiB, 124.8 GiB of host memory)
       with 131072 tokens a step: the plan that ran at 4 x 32 with ratio 0.41 (PERF.md 4c) takes 0.42 (the
       activations of 4 x 1024 tokens, 5.84 GiB, and the 4 GiB reserve leave 129.96 GiB for the states, 0.41's
       are 130.61); its figures by hand */
    memset(&m, 0, sizeof m);
    m.layers = 63, m.hidden = 4096, m.vocab = 50304, m.seq = 1024, m.gpus_per_node = 1, m.nodes = 1;
    m.params = 63 * (12 * 4096.0 * 4096 + 13 * 4096) + 50304 * 4096.0 + 1024 * 4096.0 + 2 * 4096;
    m.micro_batch = 1, m.offload_optimizer = ZERO_OFFLOAD_CPU, m.compute_dtype = ZERO_DTYPE_BF16;
    CHECK(zero_estimate_plan(&m, 139.8 * GiB, 124.8 * GiB, 131072, &pl, &err) == ZERO_OK && pl.found);
    CHECKF(pl.model.stage == 3 && pl.model.offload_param == ZERO_OFFLOAD_CPU && pl.model.recompute &&
               pl.model.micro_batch == 4 && pl.model.grad_accum == 32 && fabs(pl.model.offload_ratio - 0.42) < 1e-12,
           "stage %d param %d recompute %d mb %d x %d ratio %g", pl.model.stage, (int)pl.model.offload_param,
           pl.model.recompute, pl.model.micro_batch, pl.model.grad_accum, pl.model.offload_ratio);
    CHECK_NEAR(pl.activation_bytes, (4.0 * 4096 * 64 + 54.0 * 4096) * 4096 + 1073741824.0, 1e-12);
    CHECK(pl.model.grad_accum_device == 0); /* (0.42 x 12.9e9 x 4 bytes against a third of the 4 GiB or so left) */
    CHECK(pl.est.gpu_memory_bytes + pl.activation_bytes + ZERO_TIME_PLAN_RESERVE <= 139.8 * GiB);
    big = pl;
    big.model.offload_ratio = 0.41;
    CHECK(zero_estimate_time(&big.model, &o, &err) == ZERO_OK &&
          o.gpu_memory_bytes + pl.activation_bytes + ZERO_TIME_PLAN_RESERVE > 139.8 * GiB);
    /* nothing faster lies inside the reserve at L 63 (0.41 at 4 x 32 leaves less than the reserve but is no
       faster than 0.42) */
    CHECK(!pl.tight_found || pl.tight_est.step_s < pl.est.step_s);
    /* one layer more (13.1e9): the pick is 2 x 64 (0.41), and 4 x 32 at 0.41, faster, leaves less than the
       reserve: named in tight (PERF.md 4c: it ran in 30.4 s, the pick in 50.3) */
    {
        zero_time_model l64 = m;
        zero_time_plan p64;
        l64.layers = 64;
        l64.params = 64 * (12 * 4096.0 * 4096 + 13 * 4096) + 50304 * 4096.0 + 1024 * 4096.0 + 2 * 4096;
        CHECK(zero_estimate_plan(&l64, 139.8 * GiB, 124.8 * GiB, 131072, &p64, &err) == ZERO_OK && p64.found);
        CHECKF(p64.model.micro_batch == 2 && p64.tight_found && p64.tight.micro_batch == 4 && p64.tight.grad_accum == 32 &&
                   p64.tight.stage == 3 && p64.tight.recompute && p64.tight.offload_param == ZERO_OFFLOAD_CPU,
               "pick mb %d; tight %d: stage %d mb %d x %d ratio %g", p64.model.micro_batch, p64.tight_found, p64.tight.stage,
               p64.tight.micro_batch, p64.tight.grad_accum, p64.tight.offload_ratio);
        CHECK(p64.tight_est.step_s < p64.est.step_s);
        CHECK(p64.tight_est.gpu_memory_bytes + p64.tight_activation_bytes <= 139.8 * GiB &&
              p64.tight_est.gpu_memory_bytes + p64.tight_activation_bytes + ZERO_TIME_PLAN_RESERVE > 139.8 * GiB);
        CHECK(p64.tight_activation_bytes == zero_estimate_activations(&p64.tight));
        CHECK(zero_estimate_time(&p64.tight, &o, &err) == ZERO_OK && o.step_s == p64.tight_est.step_s);
        /* with the reserve's room given (the GPU larger by it), the plan takes an option at least as fast */
        CHECK(zero_estimate_plan(&l64, 139.8 * GiB + ZERO_TIME_PLAN_RESERVE, 124.8 * GiB, 131072, &big, &err) == ZERO_OK &&
              big.found && big.est.step_s <= p64.tight_est.step_s * (1 + 1e-9));
    }
    /* the activations: kept, 34 C a token a block and the logits (6 V a token) up to the 1 GiB chunk */
    pl.model.recompute = 0, pl.model.micro_batch = 1;
    CHECK_NEAR(zero_estimate_activations(&pl.model), 34.0 * 4096 * 1024 * 63 + 6.0 * 50304 * 1024, 1e-12);
    pl.model.micro_batch = 8;
    CHECK_NEAR(zero_estimate_activations(&pl.model), 34.0 * 4096 * 8192 * 63 + 1073741824.0, 1e-12);
    CHECK(zero_estimate_activations(NULL) == 0);
    /* errors, naming what */
    CHECK(zero_estimate_plan(NULL, 1, 0, 0, &pl, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK(zero_estimate_plan(&m, 1, 0, 0, NULL, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK(zero_estimate_plan(&m, 0, 0, 0, &pl, &err) == ZERO_ERR_INVALID_ARG && !strcmp(err.key, "gpu_bytes"));
    CHECK(zero_estimate_plan(&m, 1e10, NAN, 0, &pl, &err) == ZERO_ERR_INVALID_ARG && !strcmp(err.key, "cpu_bytes"));
    CHECK(zero_estimate_plan(&m, 1e10, 0, -1, &pl, &err) == ZERO_ERR_INVALID_ARG && !strcmp(err.key, "tokens"));
    m.layers = 0;
    CHECK(zero_estimate_plan(&m, 1e10, 0, 0, &pl, &err) == ZERO_ERR_INVALID_ARG && !strcmp(err.key, "layers") &&
          !pl.found);
}

int main(void) {
    zt_seed("test_estimate");
    test_worked_example();
    test_paper_table();
    test_random();
    test_engine_plan();
    test_monotone();
    test_max_params();
    test_errors();
    test_time_hand();
    test_time_monotone();
    test_time_calibration();
    test_time_errors();
    test_time_ratio();
    test_time_param_offload();
    test_time_plan();
    return zt_finish();
}
