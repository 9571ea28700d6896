/* test_estimate.c - the memory estimator (in zero.h): DeepSpeed's
   worked example and the ZeRO paper's table, random argument sets against a
   plain reimplementation, monotonicity, the max_params round trip, and every
   error path.

   Run alone: make test T=test_estimate */
#define ZERO_IMPLEMENTATION
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
} ref_plan;

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

/* Python's int() of a float. */
static double py_int(double x) { return x < 0 ? ceil(x) : floor(x); }

static ref_plan reference(const zero_estimate_args *a) {
    ref_plan r;
    double P = a->params, L = a->largest_layer > 0 ? a->largest_layer : a->params / 20;
    double g = a->gpus_per_node, n = a->nodes, G = g * n;
    double f = a->additional_buffer_factor > 0 ? a->additional_buffer_factor : 1.5;
    double bytes = a->compute_dtype == ZERO_DTYPE_FP32 ? 4 : 2;
    double bucket = a->reduce_bucket_size > 0 ? (double)a->reduce_bucket_size : 5e8;
    double live = a->stage3_max_live_parameters > 0 ? (double)a->stage3_max_live_parameters : 1e9;
    double ahead = a->stage3_prefetch_bucket_size >= 0 ? (double)a->stage3_prefetch_bucket_size : 5e7;
    int opt_off = a->offload_optimizer != ZERO_OFFLOAD_NONE;
    int par_off = a->offload_param != ZERO_OFFLOAD_NONE;
    double shard, unit, tile;
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

    /* zero */
    shard = P / G;
    unit = dmax(bucket, L) < P ? dmax(bucket, L) : P;
    tile = unit / G;
    if (a->stage <= 2) {
        r.gpu_params = bytes * P;
    } else {
        double pool = dmin(P, dmax(live + ahead, 2 * unit));
        r.gpu_params = bytes * pool;
        if (a->offload_param == ZERO_OFFLOAD_NONE) r.gpu_params += bytes * shard;
        if (a->offload_param == ZERO_OFFLOAD_CPU) rank_cpu_params += bytes * shard;
        if (a->offload_param == ZERO_OFFLOAD_NVME) {
            rank_nvme += bytes * shard;
            rank_cpu_params += 5 * bytes * tile;
        }
    }
    /* stages 2-3: the ring of two units, and the owned fp32 accumulator; with the optimizer offloaded the
       owned chunks accumulate on the host and the device keeps one unit's chunk of staging */
    r.gpu_grads = a->stage <= 1 ? bytes * P : bytes * dmin(P, 2 * unit) + 4 * (opt_off ? tile : shard);
    if (a->stage == 0) r.gpu_optim = 12 * P;
    else if (!opt_off) r.gpu_optim = 12 * shard;
    if (opt_off) { /* the engine's host staging: gradients (fp32 at most), parameters unless offload_param */
        rank_cpu_grads = 4 * shard;
        if (a->offload_param == ZERO_OFFLOAD_NONE) rank_cpu_params += bytes * shard;
    }
    if (a->offload_optimizer == ZERO_OFFLOAD_CPU) rank_cpu_optim = 12 * shard;
    if (a->offload_optimizer == ZERO_OFFLOAD_NVME) {
        rank_nvme += 12 * shard;
        rank_cpu_optim = 4 * 12 * tile; /* 4 tile buffers of master | m | v */
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
   gradient shard in fp16; zero adds the two-unit gradient ring (and at stage 3
   the gather pool) and keeps that shard in fp32. The comparison therefore
   takes zero's params (the own shard at stage 3), optimizer state and
   accumulator at 2 bytes per element, ring and pool excluded. */
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
        CHECK_NEAR(accum, 4 * P / N, 1e-12);
        paper[2] = m[2].gpu_params_bytes + m[2].gpu_optimizer_bytes + accum / 2;
        CHECK(fabs(paper[2] / 1e9 - 16.6) < 0.05);
    }
    {
        double ring = 2 * 5e8 * 2, pool = (1e9 + 5e7) * 2;
        double shard = m[3].gpu_params_bytes - pool, accum = m[3].gpu_grads_bytes - ring;
        CHECK_NEAR(shard, 2 * P / N, 1e-12);
        CHECK_NEAR(accum, 4 * P / N, 1e-12);
        paper[3] = shard + m[3].gpu_optimizer_bytes + accum / 2;
        CHECK(fabs(paper[3] / 1e9 - 1.9) < 0.05);
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

/* ---- monotonicity: more parameters never need less; more GPUs never need
   more per GPU (nor more host memory per node as nodes grow). DeepSpeed's
   CPU figures are not monotone in G (stage 2 offload charges 4 G bytes per
   parameter per node), so only its GPU figure is checked in G. ---- */

static void test_monotone(void) {
    int i, bad_p = 0, bad_n = 0;
    for (i = 0; i < 1000; i++) {
        zero_estimate_args a = random_args(), b;
        zero_memory_estimate m, mb;
        b = a;
        b.params = a.params * zt_rand_range(1.0, 3.0);
        if (zt_rand01() < 0.5 && a.largest_layer > 0)
            b.largest_layer = dmin(b.params, a.largest_layer * b.params / a.params); /* rounding */
        if (zero_estimate_memory(&a, &m, NULL) || zero_estimate_memory(&b, &mb, NULL)) {
            CHECKF(0, "refused P %.17g L %.17g", b.params, b.largest_layer);
            continue;
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
        if (mb.gpu_total_bytes > m.gpu_total_bytes || mb.ds_gpu_bytes > m.ds_gpu_bytes)
            bad_n++;
        if (b.nodes > a.nodes && (mb.cpu_total_bytes > m.cpu_total_bytes * (1 + 1e-12) ||
                                  mb.nvme_bytes > m.nvme_bytes * (1 + 1e-12)))
            bad_n++;
        if (b.gpus_per_node > a.gpus_per_node && !same(mb.cpu_total_bytes, m.cpu_total_bytes))
            bad_n++; /* the node's shards add up to P / n whatever g is */
    }
    CHECKF(bad_p == 0, "%d of 1000 not monotone in P", bad_p);
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
    int i, found = 0, bad = 0;
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
    }
    CHECKF(bad == 0, "%d max_params round trips failed", bad);
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
        /* stage 3 with optimizer on the host: host memory binds at 18 bytes per parameter */
        CHECK(zero_estimate_max_params(&a, 80e9, 1e12, 0, &mp, NULL) == ZERO_OK);
        CHECK_NEAR(mp, 1e12 / 18, 1e-6);
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
    a = ok; a.stage = 4;         expect_err(&a, E, "stage", "must be 0, 1, 2 or 3, got 4");
    a = ok; a.stage = -1;        expect_err(&a, E, "stage", "got -1");
    a = ok; a.offload_optimizer = (zero_offload_device)3; expect_err(&a, E, "offload_optimizer", "got 3");
    a = ok; a.offload_param = (zero_offload_device)3; expect_err(&a, E, "offload_param", "got 3");
#ifndef __cplusplus /* C++: values outside the enum's range are undefined */
    a = ok; a.offload_optimizer = (zero_offload_device)-1; expect_err(&a, E, "offload_optimizer", "got -1");
    a = ok; a.offload_param = (zero_offload_device)7; expect_err(&a, E, "offload_param", "got 7");
#endif
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
        a.stage3_max_live_parameters = 1000000000;
        a.stage3_prefetch_bucket_size = 50000000;
        CHECK(zero_estimate_memory(&a, &e, NULL) == ZERO_OK);
        CHECK(memcmp(&d, &e, sizeof d) == 0);
        a.stage3_prefetch_bucket_size = 0; /* 0 is a value: no prefetch */
        CHECK(zero_estimate_memory(&a, &e, NULL) == ZERO_OK);
        CHECK(e.gpu_params_bytes < d.gpu_params_bytes);
    }
}

int main(void) {
    zt_seed("test_estimate");
    test_worked_example();
    test_paper_table();
    test_random();
    test_monotone();
    test_max_params();
    test_errors();
    return zt_finish();
}
