/* test_muon.c - optimizer Muon (DeepSpeed's MuonWithAuxAdam) on host ranks.

   The model mixes every kind of tensor Muon's split meets: a 2-D "embed"
   and a 2-D "lm_head" (AdamW by name), a bias (AdamW: 1-D, no decay), wide
   and tall matrices, a 3-D stack of matrices, a 2-D tensor the program
   sends to AdamW (ZERO_TENSOR_ADAM), a 2-D "tok_embed" it sends to Muon
   (ZERO_TENSOR_MUON), and a matrix larger than a unit (split into pieces
   that different ranks own). Each run trains six steps with gradient
   clipping, weight decay and fresh random gradients per rank, micro-batch
   and step, and is compared with a float64 reference of the whole rule
   (the mean gradient, the clip, Muon's Nesterov momentum, Newton-Schulz in
   float64 with DeepSpeed's coefficients and five steps, the sqrt(max(1,
   rows / cols)) scale, decoupled decay; AdamW with bias correction on the
   rest), at stages 0-3 x world 1, 2, 3, 5 x gradient accumulation 1, 2, and
   with hybrid sharding (4 ranks in shard groups of 2) at stages 1 and 3.
   Stages 2 and 3 are bitwise equal, and so are 0 and 1 (one micro-batch);
   optimizer offload to the CPU is bitwise the run without it; fp16 with
   loss scaling skips the steps the reference skips; a checkpoint saved at
   stage 2 resumes at stage 3 bitwise; DeepSpeed's config text gives the
   same bits as the config filled in code, with DeepSpeed's defaults (lr
   0.02 / 3e-4, momentum 0.95, betas (0.9, 0.95), eps 1e-10); bad input is
   refused naming the tensor or key; the memory report counts Muon's
   scratch. zero_muon_orthogonalize itself is checked against the float64
   Newton-Schulz on random matrices of every shape.

   Run alone: make test T=test_muon */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_offload.h"

#include <sys/stat.h> /* mkdir */
#include "zero_test.h"

#include <unistd.h>

enum { NT = 9, MAXW = 5, STEPS = 6, TOTAL = 30 + 60 + 12 + 120 + 84 + 16 + 384 + 30 + 24, MAXN = 384 };
static const char *const NAMES[NT] = {"embed", "h.0.w", "h.0.bias", "h.0.tall", "h.1.stack", "h.1.adam", "h.2.big",
                                      "lm_head", "tok_embed"};
static const int NDIM[NT] = {2, 2, 1, 2, 3, 2, 2, 2, 2};
static const int64_t SHAPE[NT][3] = {{6, 5}, {5, 12}, {12}, {20, 6}, {3, 4, 7}, {4, 4}, {16, 24}, {5, 6}, {4, 6}};
static const int FLAGS[NT] = {0, 0, ZERO_TENSOR_NO_DECAY, 0, 0, ZERO_TENSOR_ADAM, 0, 0, ZERO_TENSOR_MUON};
static const int MUON[NT] = {0, 1, 0, 1, 1, 0, 1, 0, 1}; /* the split the engine must make */
static int64_t SIZE[NT];
static zt_wave init_wave = {0.3, 0, 0.7, 0.01, 0};
static float noise[STEPS][MAXW][2][MAXN];

typedef struct job {
    double muon_lr, adam_lr, momentum, wd, b1, b2, eps;
    int nesterov;
    int sched; /* 1: WarmupCosineLR (each side its own lr, scaled); 2: WarmupLR to warmup_max_lr 0.01 (both sides) */
    int stage, gas, dtype, offload, scale_power, mics;
    int64_t bucket; /* reduce_bucket_size (0: 160) */
    const char *json;                /* the optimizer from this DeepSpeed config text */
    const char *nvme;                /* offload_optimizer "nvme" under this directory (with offload) */
    const char *save_dir, *load_dir; /* save after step 3 and stop / load, then train steps 3.. */
    int bad;                         /* 1: a 1-D tensor flagged Muon; 2: one tensor with both flags */
    zero_result r[MAXW];
    char msg[MAXW][1024];
    int applied[STEPS];
    float w[TOTAL], m[TOTAL];
    zero_memory_stats ms;
} job;

static float grad_of(float x, int rank, int m, int s, int64_t i) {
    return 0.3f * x - 0.05f + 0.01f * (float)((rank * 7 + m * 3 + s + i) % 5) + noise[s][rank][m][i];
}

static zero_result train(zero_engine *e, job *J, int rank, int s0, int s1) {
    int s, m, t;
    zero_result r;
    for (s = s0; s < s1; s++) {
        zero_step_info info;
        for (m = 0; m < J->gas; m++)
            for (t = NT - 1; t >= 0; t--) {
                void *w, *g;
                int64_t i;
                if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
                if (!(w = zero_param(e, t)) || !(g = zero_grad(e, t))) return zero_engine_error(e)->code;
                for (i = 0; i < SIZE[t]; i++)
                    zt_store(g, (zero_dtype)J->dtype, i,
                             (float)zero_loss_scale(e) * grad_of(zt_load(w, (zero_dtype)J->dtype, i), rank, m, s, i));
                if ((r = zero_grad_ready(e, t)) != ZERO_OK || (r = zero_release(e, t)) != ZERO_OK) return r;
            }
        if ((r = zero_step(e, &info)) != ZERO_OK) return r;
        if (rank == 0) J->applied[s] = info.applied;
    }
    return ZERO_OK;
}

static void fail_with(job *J, int rank, zero_result r, const char *msg) {
    J->r[rank] = r;
    snprintf(J->msg[rank], sizeof J->msg[rank], "%s", msg);
}

/* the schedule of job.sched into c */
static void sched_of(zero_config *c, int sched) {
    if (sched == 1) {
        c->scheduler.type = ZERO_SCHEDULER_WARMUP_COSINE_LR;
        c->scheduler.total_num_steps = STEPS;
        c->scheduler.warmup_num_steps = 2;
        c->scheduler.warmup_min_ratio = 0.1;
        c->scheduler.cos_min_ratio = 0.2;
    } else if (sched == 2) {
        c->scheduler.type = ZERO_SCHEDULER_WARMUP_LR;
        c->scheduler.warmup_min_lr = 0.001;
        c->scheduler.warmup_max_lr = 0.01;
        c->scheduler.warmup_num_steps = 3;
        c->scheduler.warmup_type = ZERO_WARMUP_LINEAR;
    }
}

/* Side `muon`'s lr at applied step k (1 ..): DeepSpeed's two groups under
   the schedule (zero_lr_at with the side's lr as the optimizer's) */
static double side_lr(const job *J, int muon, int k) {
    zero_config c = zero_config_default();
    c.optimizer.lr = muon ? J->muon_lr : J->adam_lr;
    if (!J->sched) return c.optimizer.lr;
    sched_of(&c, J->sched);
    return zero_lr_at(&c, k - 2); /* (the first applied step is at last_batch_iteration, -1) */
}

static zero_result rank_fn(const zero_backend *b0, void *arg) {
    job *J = (job *)arg;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    zero_engine *e = NULL;
    zero_error err;
    zero_backend ob;
    zero_cpu_pool *pool = NULL;
    const zero_backend *b = b0;
    int t, d, rank = b0->rank, s0 = 0, s1 = STEPS;
    int64_t o = 0;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        ts[t].name = NAMES[t];
        ts[t].numel = SIZE[t];
        ts[t].ndim = NDIM[t];
        for (d = 0; d < NDIM[t]; d++) ts[t].shape[d] = SHAPE[t][d];
        ts[t].group = t / 3;
        ts[t].flags = FLAGS[t];
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
    }
    if (J->bad == 1) ts[2].flags |= ZERO_TENSOR_MUON;
    if (J->bad == 2) ts[1].flags |= ZERO_TENSOR_MUON | ZERO_TENSOR_ADAM;
    if (J->offload) {
        if (zero_cpu_pool_create(&pool, 2, NULL, &err) != ZERO_OK) return err.code;
        zero_offload_backend(b, pool, &ob);
        b = &ob;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = J->bucket ? J->bucket : 160; /* several units; h.2.big cut into pieces */
    if (J->mics) c.zero_optimization.mics_shard_size = J->mics;
    c.zero_optimization.offload_optimizer.device = J->nvme ? ZERO_OFFLOAD_NVME : J->offload ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
    if (J->nvme)
        snprintf(c.zero_optimization.offload_optimizer.nvme_path, sizeof c.zero_optimization.offload_optimizer.nvme_path, "%s",
                 J->nvme);
    if (J->json) {
        if (zero_config_parse_json(&c, J->json, strlen(J->json), &err) != ZERO_OK) {
            fail_with(J, rank, err.code, err.msg);
            zero_cpu_pool_destroy(pool);
            return ZERO_OK;
        }
    } else {
        c.optimizer.type = ZERO_OPTIMIZER_MUON;
        c.optimizer.muon_lr = J->muon_lr;
        c.optimizer.adam_lr = J->adam_lr;
        c.optimizer.momentum = J->momentum;
        c.optimizer.nesterov = J->nesterov;
        c.optimizer.weight_decay = J->wd;
        c.optimizer.beta1 = J->b1;
        c.optimizer.beta2 = J->b2;
        c.optimizer.eps = J->eps;
    }
    sched_of(&c, J->sched);
    c.gradient_clipping = 0.5;
    c.fp16.enabled = J->dtype == ZERO_DTYPE_FP16;
    c.fp16.initial_scale_power = J->scale_power;
    c.log.level = ZERO_LOG_ERROR;
    if (zero_config_resolve(&c, b->world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, b, &err) != ZERO_OK) {
        fail_with(J, rank, err.code, err.msg);
        zero_cpu_pool_destroy(pool);
        return ZERO_OK;
    }
    if (rank == 0) zero_memory_report(e, &J->ms);
    if (J->load_dir) {
        if ((J->r[rank] = zero_load(e, J->load_dir, &err)) != ZERO_OK) {
            fail_with(J, rank, J->r[rank], err.msg);
            zero_engine_destroy(e);
            zero_cpu_pool_destroy(pool);
            return ZERO_OK;
        }
        s0 = 3;
    }
    if (J->save_dir) s1 = 3;
    J->r[rank] = train(e, J, rank, s0, s1);
    if (J->r[rank] == ZERO_OK && J->save_dir && (J->r[rank] = zero_save(e, J->save_dir, &err)) != ZERO_OK)
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
    else if (J->r[rank] != ZERO_OK)
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", zero_engine_error(e)->msg);
    for (t = 0; t < NT && J->r[rank] == ZERO_OK; t++) {
        if (zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZE[t], J->w + o) != ZERO_OK ||
            zero_read_state(e, t, ZERO_STATE_EXP_AVG, 0, SIZE[t], J->m + o) != ZERO_OK)
            J->r[rank] = zero_engine_error(e)->code;
        o += SIZE[t];
    }
    zero_engine_destroy(e);
    zero_cpu_pool_destroy(pool);
    return ZERO_OK;
}

static void run(job *J, int world) {
    zero_error err;
    CHECK(zero_host_run(world, rank_fn, J, &err) == ZERO_OK);
}

static int all_ok(const job *J, int world) {
    int r;
    for (r = 0; r < world; r++)
        if (J->r[r] != ZERO_OK) return 0;
    return 1;
}

static int same_state(const job *a, const job *b) {
    return !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m);
}

/* ---- the float64 reference ---- */

/* Newton-Schulz in float64 on one matrix x (rows x cols, row-major): the
   transpose when rows > cols, the Frobenius normalisation, `steps` of
   X = a X + (b A + c A A) X with A = X X^T, then the scale. */
static void ref_ns(double *x, int64_t rows, int64_t cols, int steps, double scale) {
    static double y[MAXN], a[MAXN], bb[MAXN], nx[MAXN];
    const int tr = rows > cols;
    const int64_t r = tr ? cols : rows, c = tr ? rows : cols;
    double ss = 0, inv;
    int64_t i, j, k;
    int s;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) {
            double v = x[i * cols + j];
            if (tr) y[j * rows + i] = v;
            else y[i * cols + j] = v;
            ss += v * v;
        }
    inv = sqrt(ss) + 1e-7;
    for (i = 0; i < r * c; i++) y[i] /= inv;
    for (s = 0; s < steps; s++) {
        for (i = 0; i < r; i++)
            for (j = 0; j < r; j++) {
                double acc = 0;
                for (k = 0; k < c; k++) acc += y[i * c + k] * y[j * c + k];
                a[i * r + j] = acc;
            }
        for (i = 0; i < r; i++)
            for (j = 0; j < r; j++) {
                double acc = 0;
                for (k = 0; k < r; k++) acc += a[i * r + k] * a[k * r + j];
                bb[i * r + j] = -4.7750 * a[i * r + j] + 2.0315 * acc;
            }
        for (i = 0; i < r; i++)
            for (k = 0; k < c; k++) {
                double acc = 0;
                for (j = 0; j < r; j++) acc += bb[i * r + j] * y[j * c + k];
                nx[i * c + k] = 3.4445 * y[i * c + k] + acc;
            }
        memcpy(y, nx, sizeof(double) * (size_t)(r * c));
    }
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) x[i * cols + j] = scale * (tr ? y[j * rows + i] : y[i * cols + j]);
}

typedef struct ref {
    double w[TOTAL], m[TOTAL], v[TOTAL];
} ref;

static void ref_run(const job *J, int world, int dtype, ref *R) {
    static double G[TOTAL], u[MAXN];
    int s, t, r, m, k = 0;
    int64_t i, o;
    for (t = 0, o = 0; t < NT; o += SIZE[t++])
        for (i = 0; i < SIZE[t]; i++) {
            R->w[o + i] = zt_wave_at(&init_wave, t, i);
            R->m[o + i] = R->v[o + i] = 0;
        }
    for (s = 0; s < STEPS; s++) {
        double norm = 0, q;
        if (!J->applied[s]) continue; /* the engine skipped it (fp16 overflow): no update */
        for (t = 0, o = 0; t < NT; o += SIZE[t++])
            for (i = 0; i < SIZE[t]; i++) {
                double sum = 0;
                float x = zt_round((zero_dtype)dtype, (float)R->w[o + i]);
                for (r = 0; r < world; r++)
                    for (m = 0; m < J->gas; m++) sum += grad_of(x, r, m, s, i);
                G[o + i] = sum / (world * J->gas);
                norm += G[o + i] * G[o + i];
            }
        norm = sqrt(norm);
        q = (norm + 1e-6) / 0.5;
        if (q < 1) q = 1;
        k++;
        for (t = 0, o = 0; t < NT; o += SIZE[t++]) {
            const double wd = FLAGS[t] & ZERO_TENSOR_NO_DECAY ? 0 : J->wd, beta = J->momentum;
            if (MUON[t]) {
                const int64_t rows = SHAPE[t][NDIM[t] - 2], cols = SHAPE[t][NDIM[t] - 1], n = rows * cols;
                const double scale = sqrt(rows > cols ? (double)rows / (double)cols : 1.0);
                for (i = 0; i < SIZE[t]; i++) {
                    double g = G[o + i] / q;
                    R->m[o + i] = beta * R->m[o + i] + (1 - beta) * g;
                    u[i] = J->nesterov ? (1 - beta) * g + beta * R->m[o + i] : R->m[o + i];
                }
                for (i = 0; i < SIZE[t]; i += n) ref_ns(u + i, rows, cols, 5, scale);
                for (i = 0; i < SIZE[t]; i++) R->w[o + i] = R->w[o + i] * (1 - side_lr(J, 1, k) * wd) - side_lr(J, 1, k) * u[i];
            } else {
                const double bc1 = 1 - pow(J->b1, k), bc2 = 1 - pow(J->b2, k), lr = side_lr(J, 0, k);
                for (i = 0; i < SIZE[t]; i++) {
                    double g = G[o + i] / q, p = R->w[o + i];
                    R->m[o + i] = J->b1 * R->m[o + i] + (1 - J->b1) * g;
                    R->v[o + i] = J->b2 * R->v[o + i] + (1 - J->b2) * g * g;
                    p -= lr * wd * p;
                    p -= lr * (R->m[o + i] / bc1) / (sqrt(R->v[o + i] / bc2) + J->eps);
                    R->w[o + i] = p;
                }
            }
        }
    }
}

/* max |engine - reference| / max |reference| over the weights */
static double ref_diff(const job *J, const ref *R) {
    double maxd = 0, maxw = 0;
    int64_t i;
    for (i = 0; i < TOTAL; i++) {
        maxw = fmax(maxw, fabs(R->w[i]));
        maxd = fmax(maxd, fabs((double)J->w[i] - R->w[i]));
    }
    return maxd / maxw;
}

static void base_job(job *j, int stage, int gas) {
    memset(j, 0, sizeof *j);
    j->muon_lr = 0.02;
    j->adam_lr = 3e-3;
    j->momentum = 0.95;
    j->nesterov = 1;
    j->wd = 0.1;
    j->b1 = 0.9;
    j->b2 = 0.95;
    j->eps = 1e-10;
    j->stage = stage;
    j->gas = gas;
    j->dtype = ZERO_DTYPE_FP32;
}

/* ---- the tests ---- */

static void test_orthogonalize(void) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {1, 7, 13}, {1, 13, 7}, {2, 8, 8}, {1, 1, 9}, {1, 9, 1}, {3, 5, 11}};
    static float x[400], work[400];
    static double xd[400];
    zero_error err;
    double worst = 0;
    int k;
    for (k = 0; k < (int)(sizeof shapes / sizeof shapes[0]); k++) {
        const int64_t bt = shapes[k][0], rows = shapes[k][1], cols = shapes[k][2], n = rows * cols;
        const float scale = (float)sqrt(rows > cols ? (double)rows / (double)cols : 1.0);
        double maxd = 0, maxr = 0;
        int64_t i;
        for (i = 0; i < bt * n; i++) x[i] = (float)zt_rand_range(-1, 1), xd[i] = x[i];
        CHECK(zero_muon_work_elems(rows, cols) <= 400);
        CHECK(zero_muon_orthogonalize(x, bt, rows, cols, 5, scale, work, &err) == ZERO_OK);
        for (i = 0; i < bt; i++) ref_ns(xd + i * n, rows, cols, 5, scale);
        for (i = 0; i < bt * n; i++) {
            maxd = fmax(maxd, fabs(x[i] - xd[i]));
            maxr = fmax(maxr, fabs(xd[i]));
        }
        CHECKF(maxd <= 5e-6 * fmax(1, maxr), "orthogonalize %lld x %lld x %lld: %.3g from float64 (max %.3g)", (long long)bt,
               (long long)rows, (long long)cols, maxd, maxr);
        worst = fmax(worst, maxd / fmax(1, maxr));
    }
    /* 0 steps: the normalised matrix, times the scale */
    x[0] = 3, x[1] = 4;
    CHECK(zero_muon_orthogonalize(x, 1, 1, 2, 0, 1.0f, work, &err) == ZERO_OK);
    CHECKF(fabs(x[0] - 0.6) < 1e-6 && fabs(x[1] - 0.8) < 1e-6, "0 steps: %g %g", x[0], x[1]);
    /* bad arguments: refused, naming the function */
    CHECK(zero_muon_orthogonalize(x, 1, 0, 2, 5, 1.0f, work, &err) == ZERO_ERR_INVALID_ARG &&
          strstr(err.msg, "zero_muon_orthogonalize"));
    CHECK(zero_muon_orthogonalize(x, 1, 2, 2, 5, 0.0f, work, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_muon_orthogonalize(NULL, 1, 2, 2, 5, 1.0f, work, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_muon_orthogonalize(x, 1, 2, 2, -1, 1.0f, work, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_muon_work_elems(3, 5) == 2 * 9 + 15 && zero_muon_work_elems(5, 3) == 2 * 9 + 15);
    printf("zero_muon_orthogonalize: 7 shapes within %.2g of float64 Newton-Schulz (relative to max(1, max |x|))\n", worst);
}

static void test_matrix(void) {
    static const int worlds[] = {1, 2, 3, 5};
    static job j, at[4];
    static ref R;
    int wi, gas, st, runs = 0;
    double worst = 0;
    for (wi = 0; wi < 4; wi++)
        for (gas = 1; gas <= 2; gas++) {
            const int w = worlds[wi];
            if (getenv("ZERO_TEST_QUICK") && (w == 5 || (w == 3 && gas == 2))) continue;
            for (st = 0; st <= 3; st++) {
                double d;
                base_job(&j, st, gas);
                run(&j, w);
                CHECKF(all_ok(&j, w), "Muon stage %d world %d gas %d: %s", st, w, gas, j.msg[0]);
                if (!all_ok(&j, w)) continue;
                if (st == 0) ref_run(&j, w, ZERO_DTYPE_FP32, &R);
                d = ref_diff(&j, &R);
                worst = fmax(worst, d);
                CHECKF(d < 2e-6, "Muon stage %d world %d gas %d: %.3g from the float64 reference", st, w, gas, d);
                at[st] = j;
                runs++;
            }
            CHECKF(same_state(&at[2], &at[3]), "Muon world %d gas %d: stage 3 differs from stage 2", w, gas);
            if (gas == 1) CHECKF(same_state(&at[0], &at[1]), "Muon world %d: stage 1 differs from stage 0", w);
            if (gas == 1) CHECKF(same_state(&at[1], &at[2]), "Muon world %d: stage 2 differs from stage 1", w);
            for (st = 1; st <= 3; st += 2) { /* the optimizer on the CPU, its scalar path: the same bits (AdamW's SIMD
                                                 paths round its FMAs once: within the bound of the reference) */
                double d;
                j = at[st];
                memset(j.w, 0, sizeof j.w);
                j.offload = 1;
                setenv("ZERO_NO_SIMD", "1", 1);
                run(&j, w);
                unsetenv("ZERO_NO_SIMD");
                CHECKF(all_ok(&j, w) && same_state(&j, &at[st]), "Muon stage %d world %d gas %d: CPU offload changed the "
                                                                 "weights or momentum (%s)", st, w, gas, j.msg[0]);
                j = at[st];
                memset(j.w, 0, sizeof j.w);
                j.offload = 1;
                run(&j, w);
                d = ref_diff(&j, &R);
                CHECKF(all_ok(&j, w) && d < 2e-6, "Muon stage %d world %d gas %d: CPU offload (SIMD) %.3g from the reference (%s)",
                       st, w, gas, d, j.msg[0]);
                runs += 2;
                if (w <= 2) { /* and over NVMe tiles: the momentum in the tiles, the updates in memory; the CPU's bits */
                    static job nv;
                    char dir[] = "/tmp/zero_test_muon_nvme_XXXXXX";
                    if (!mkdtemp(dir)) {
                        CHECKF(0, "mkdtemp %s", dir);
                        continue;
                    }
                    nv = j;
                    memset(nv.w, 0, sizeof nv.w);
                    nv.nvme = dir;
                    run(&nv, w);
                    CHECKF(all_ok(&nv, w) && same_state(&nv, &j), "Muon stage %d world %d gas %d: NVMe offload changed the "
                                                                  "weights or momentum (%s)", st, w, gas, nv.msg[0]);
                    rmdir(dir);
                    runs++;
                }
            }
        }
    /* under a schedule: WarmupCosineLR scales each side's own lr, WarmupLR's warmup_max_lr is both sides' */
    for (st = 1; st <= 2; st++) {
        base_job(&j, 3, 1);
        j.sched = st;
        run(&j, 2);
        ref_run(&j, 2, ZERO_DTYPE_FP32, &R);
        CHECKF(all_ok(&j, 2) && ref_diff(&j, &R) < 2e-6, "Muon with schedule %d: %.3g from the reference (%s)", st,
               ref_diff(&j, &R), j.msg[0]);
    }
    /* batches of at most 100 gathered elements (ZERO_MUON_GATHER): one batch a unit here; units of 400 put h.0.tall
       and h.1.stack in one unit, so the second must stay in the first's batch */
    for (st = 1; st <= 3; st++) {
        static job one;
        base_job(&one, st, 1);
        one.bucket = 400;
        run(&one, 3);
        base_job(&j, st, 1);
        j.bucket = 400;
        setenv("ZERO_MUON_GATHER", "100", 1);
        run(&j, 3);
        unsetenv("ZERO_MUON_GATHER");
        ref_run(&j, 3, ZERO_DTYPE_FP32, &R);
        CHECKF(all_ok(&j, 3) && ref_diff(&j, &R) < 2e-6 && same_state(&j, &one),
               "Muon stage %d, 3 ranks, batches of 100: %.3g from the reference, %s the run in one batch (%s)", st,
               ref_diff(&j, &R), same_state(&j, &one) ? "bitwise" : "not", j.msg[0]);
        CHECKF(j.ms.muon_gather_bytes < one.ms.muon_gather_bytes, "Muon's gathered batch: %zu bytes in batches of 100, "
               "%zu in one", j.ms.muon_gather_bytes, one.ms.muon_gather_bytes);
    }
    /* hybrid sharding: 4 ranks in shard groups of 2, each group orthogonalising over its own ranks */
    for (st = 1; st <= 3; st += 2) {
        base_job(&j, st, 1);
        j.mics = 2;
        run(&j, 4);
        ref_run(&j, 4, ZERO_DTYPE_FP32, &R);
        CHECKF(all_ok(&j, 4) && ref_diff(&j, &R) < 2e-6, "Muon stage %d, 4 ranks, mics_shard_size 2: %.3g from the "
                                                         "reference (%s)", st, ref_diff(&j, &R), j.msg[0]);
    }
    /* without Nesterov's form */
    base_job(&j, 2, 1);
    j.nesterov = 0;
    run(&j, 3);
    ref_run(&j, 3, ZERO_DTYPE_FP32, &R);
    CHECKF(all_ok(&j, 3) && ref_diff(&j, &R) < 2e-6, "Muon without nesterov: %.3g from the reference (%s)", ref_diff(&j, &R),
           j.msg[0]);
    printf("Muon: %d runs at stages 0-3 x worlds 1, 2, 3, 5 x accumulation 1, 2, worst %.2g from float64 (bound 2e-6); stages 2-3 "
           "and 0-1 bitwise, CPU offload bitwise (its scalar path), NVMe offload bitwise the CPU's\n", runs, worst);
}

static void test_fp16(void) {
    static job j;
    static ref R;
    int s, skipped = 0;
    double d;
    base_job(&j, 2, 2);
    j.dtype = ZERO_DTYPE_FP16;
    j.scale_power = 20;
    run(&j, 2);
    CHECKF(all_ok(&j, 2), "Muon fp16: %s", j.msg[0]);
    for (s = 0; s < STEPS; s++) skipped += !j.applied[s];
    CHECKF(skipped >= 1 && skipped < STEPS, "Muon fp16: %d of %d steps skipped", skipped, STEPS);
    ref_run(&j, 2, ZERO_DTYPE_FP16, &R);
    d = ref_diff(&j, &R);
    CHECKF(d < 1e-3, "Muon fp16: %.3g from the reference that skips the same steps", d);
    printf("Muon fp16: %d of %d steps skipped, %.2g from the reference (bound 1e-3)\n", skipped, STEPS, d);
}

static void test_ckpt(void) {
    static job whole, first, second;
    char dir[] = "/tmp/zero_test_muon_XXXXXX", sub[600];
    if (!mkdtemp(dir)) {
        CHECKF(0, "mkdtemp %s", dir);
        return;
    }
    snprintf(sub, sizeof sub, "%s/ck", dir);
    base_job(&whole, 3, 1);
    run(&whole, 2);
    base_job(&first, 2, 1);
    first.save_dir = sub;
    run(&first, 2);
    base_job(&second, 3, 1);
    second.load_dir = sub;
    run(&second, 2);
    CHECKF(all_ok(&first, 2) && all_ok(&second, 2) && same_state(&second, &whole),
           "Muon: saved at stage 2, resumed at stage 3: not the run that never stopped (%s / %s)", first.msg[0], second.msg[0]);
    { /* over NVMe tiles: the momentum saved from the tiles and loaded into them */
        static char nv[3][620], ck2[620];
        int i, made = 1;
        for (i = 0; i < 3; i++) {
            snprintf(nv[i], sizeof nv[i], "%s/nvme%d", dir, i);
            made = made && mkdir(nv[i], 0700) == 0;
        }
        snprintf(ck2, sizeof ck2, "%s/ck_nvme", dir);
        CHECKF(made, "mkdir under %s", dir);
        base_job(&whole, 3, 1);
        whole.offload = 1, whole.nvme = nv[0];
        run(&whole, 2);
        base_job(&first, 2, 1);
        first.offload = 1, first.nvme = nv[1], first.save_dir = ck2;
        run(&first, 2);
        base_job(&second, 3, 1);
        second.offload = 1, second.nvme = nv[2], second.load_dir = ck2;
        run(&second, 2);
        CHECKF(made && all_ok(&whole, 2) && all_ok(&first, 2) && all_ok(&second, 2) && same_state(&second, &whole),
               "Muon over NVMe: saved at stage 2, resumed at stage 3: not the run that never stopped (%s / %s / %s)",
               whole.msg[0], first.msg[0], second.msg[0]);
    }
    {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    }
    printf("Muon checkpoint: saved at stage 2, resumed at stage 3, bitwise the run that never stopped (the optimizer in "
           "memory, and over NVMe tiles)\n");
}

static void test_json(void) {
    static job code, text;
    /* DeepSpeed's defaults for what the text leaves out: lr 0.02 (Muon) and 3e-4 (AdamW), momentum 0.95 */
    base_job(&code, 2, 1);
    code.adam_lr = 3e-4;
    code.wd = 0;
    code.eps = 1e-10;
    run(&code, 2);
    base_job(&text, 2, 1);
    text.json = "{\"optimizer\": {\"type\": \"muon\"}}";
    run(&text, 2);
    CHECKF(all_ok(&code, 2) && all_ok(&text, 2) && same_state(&code, &text),
           "Muon from {\"type\": \"muon\"}: not DeepSpeed's defaults filled in code (%s / %s)", code.msg[0], text.msg[0]);
    /* lr sets both sides; muon_lr and adam_lr override it */
    base_job(&code, 2, 1);
    code.muon_lr = 0.01;
    code.adam_lr = 0.005;
    code.wd = 0.05;
    code.momentum = 0.9;
    run(&code, 2);
    text.json = "{\"optimizer\": {\"type\": \"Muon\", \"params\": {\"lr\": 0.005, \"muon_lr\": 0.01, \"momentum\": 0.9, "
                "\"weight_decay\": 0.05, \"betas\": [0.9, 0.95], \"eps\": 1e-10, \"ns_method\": \"standard\"}}}";
    run(&text, 2);
    CHECKF(all_ok(&code, 2) && all_ok(&text, 2) && same_state(&code, &text), "Muon's keys from the text: not the config in "
                                                                              "code (%s / %s)", code.msg[0], text.msg[0]);
    printf("Muon from DeepSpeed's config text: bitwise the config in code (its defaults, lr, muon_lr, momentum, ns_method)\n");
}

static void expect_refused(job *j, int world, const char *what, const char *want1, const char *want2) {
    run(j, world);
    CHECKF(j->r[0] != ZERO_OK && strstr(j->msg[0], want1) && (!want2 || strstr(j->msg[0], want2)), "%s: %d \"%s\"", what,
           (int)j->r[0], j->msg[0]);
}

static void test_refusals(void) {
    static job j;
    base_job(&j, 2, 1);
    j.bad = 1;
    expect_refused(&j, 2, "Muon on a 1-D tensor", "h.0.bias", "dimensions");
    base_job(&j, 2, 1);
    j.bad = 2;
    expect_refused(&j, 2, "both flags", "h.0.w", "ZERO_TENSOR_ADAM");
    base_job(&j, 2, 1);
    j.json = "{\"optimizer\": {\"type\": \"Muon\", \"params\": {\"momentum\": 1.0}}}";
    expect_refused(&j, 1, "momentum 1", "momentum", "[0, 1)");
    j.json = "{\"optimizer\": {\"type\": \"Muon\", \"params\": {\"muon_lr\": -0.1}}}";
    expect_refused(&j, 1, "a negative muon_lr", "muon_lr", NULL);
    j.json = "{\"optimizer\": {\"type\": \"Muon\", \"params\": {\"ns_method\": \"cubic\"}}}";
    expect_refused(&j, 1, "an unknown ns_method", "ns_method", "gram");
    j.json = "{\"optimizer\": {\"type\": \"Muon\", \"params\": {\"dampening\": 0.1}}}";
    expect_refused(&j, 1, "SGD's dampening with Muon", "dampening", NULL);
    j.json = "{\"optimizer\": {\"type\": \"Muon\"}, \"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": "
             "{\"device\": \"cpu\", \"ratio\": 0.5}}}";
    expect_refused(&j, 1, "Muon with a partial offload", "ratio", "Adam");
    j.json = "{\"optimizer\": {\"type\": \"Mewon\"}}";
    expect_refused(&j, 1, "an unknown type", "Muon", "Lamb");
}

static void test_memory(void) {
    static job j;
    size_t w1, w2;
    base_job(&j, 2, 1);
    run(&j, 1);
    w1 = j.ms.planned[ZERO_MEM_SCRATCH][ZERO_MEM_DEVICE];
    run(&j, 2);
    w2 = j.ms.planned[ZERO_MEM_SCRATCH][ZERO_MEM_DEVICE];
    /* one rank: the scratch of the largest matrix (16 x 24: 2 * 256 + 384 floats) is all Muon adds there; two: the
       gathered units and a chunk besides */
    CHECKF(all_ok(&j, 2) && w2 > w1 + 4 * 384, "Muon's scratch: %zu bytes on one rank, %zu on two", w1, w2);
    /* the report: 5 tensors (tok_embed by its flag; the 3-D stack once), their elements, the work of 16 x 24 */
    CHECKF(j.ms.muon_tensors == 5 && j.ms.muon_elems == 60 + 120 + 84 + 384 + 24 &&
               j.ms.muon_work_bytes == 4 * (2 * 16 * 16 + 16 * 24) && j.ms.muon_gather_bytes > 0 && j.ms.muon_chunk_bytes > 0 &&
               j.ms.muon_work_bytes + j.ms.muon_gather_bytes + j.ms.muon_chunk_bytes <= w2,
           "Muon's report: %d tensors, %lld elements, work %zu, gathered %zu, chunk %zu", j.ms.muon_tensors,
           (long long)j.ms.muon_elems, j.ms.muon_work_bytes, j.ms.muon_gather_bytes, j.ms.muon_chunk_bytes);
    {
        char buf[4096];
        zero_memory_stats_format(&j.ms, buf, sizeof buf);
        CHECKF(strstr(buf, "Muon: 5 tensors") != NULL && strstr(buf, "NVMe passes") == NULL, "%s", buf);
    }
    CHECKF(j.ms.muon_update_bytes == 0, "Muon's updates staged without NVMe: %zu bytes", j.ms.muon_update_bytes);
    { /* over NVMe: the updates wait in host memory, a chunk of each Muon unit (at least its share of the elements) */
        char dir[] = "/tmp/zero_test_muon_mem_XXXXXX", buf[4096];
        if (!mkdtemp(dir)) {
            CHECKF(0, "mkdtemp %s", dir);
            return;
        }
        base_job(&j, 2, 1);
        j.offload = 1;
        j.nvme = dir;
        run(&j, 2);
        zero_memory_stats_format(&j.ms, buf, sizeof buf);
        CHECKF(all_ok(&j, 2) && j.ms.muon_update_bytes >= (size_t)(4 * j.ms.muon_elems / 2) &&
                   j.ms.muon_update_bytes <= (size_t)(4 * TOTAL) && strstr(buf, "the updates between the NVMe passes") != NULL,
               "Muon over NVMe: %zu bytes of updates for %lld Muon elements on 2 ranks (%s)\n%s", j.ms.muon_update_bytes,
               (long long)j.ms.muon_elems, j.msg[0], buf);
        rmdir(dir);
    }
}

int main(void) {
    int s, r, m, i, t;
    zt_seed("test_muon");
    for (t = 0; t < NT; t++) SIZE[t] = NDIM[t] == 1 ? SHAPE[t][0] : NDIM[t] == 2 ? SHAPE[t][0] * SHAPE[t][1]
                                                                  : SHAPE[t][0] * SHAPE[t][1] * SHAPE[t][2];
    for (s = 0; s < STEPS; s++)
        for (r = 0; r < MAXW; r++)
            for (m = 0; m < 2; m++)
                for (i = 0; i < MAXN; i++) noise[s][r][m][i] = (float)zt_rand_range(-0.05, 0.05);
    test_orthogonalize();
    test_matrix();
    test_fp16();
    test_ckpt();
    test_json();
    test_refusals();
    test_memory();
    return zt_finish();
}
