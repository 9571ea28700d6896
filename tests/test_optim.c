/* test_optim.c - the optimizers beside Adam (optimizer.type Lion, Adagrad,
   SGD; Lamb in its own section below, with its tolerances) on host ranks: each against a float64 reference of its update rule
   (DeepSpeed's CPU Lion and CPU Adagrad, torch.optim.SGD) over six steps with
   gradient clipping, weight decay with a no-decay tensor, and gradient
   accumulation, at stages 0-3 x world 1, 2, 3, 5; stages 0 and 1, and 2 and
   3, bitwise equal to each other (all four with one micro-batch; with more,
   stages 0-1 add the micro-batches before the reduction and 2-3 after it); optimizer offload to the CPU (through
   zero_offload_backend's pool) and to NVMe bitwise the run without it; fp16 with loss
   scaling and skipped steps against the reference that skips the same
   steps; the state each keeps in the memory report (Lion 4 bytes a
   parameter, SGD without momentum none); a checkpoint saved at one stage and
   loaded at another, bitwise the run that never stopped; a checkpoint of
   another optimizer refused; a backend whose device kernels run Adam only
   refused on the device and accepted with the optimizer offloaded; each
   from a DeepSpeed config's text (DeepSpeed's defaults for what it leaves
   out) bitwise the same config filled in code; the CPU's AVX2 and AVX-512
   paths bitwise the scalar one, with master and state stored in fp32 or
   bf16 (bf16: the fp32 results rounded).

   bf16 master weights and optimizer state (bf16.bf16_master_weights_and_grads,
   bf16_optimizer_states; its section below the SIMD one): Adam, AdamW, Lion,
   Adagrad, SGD with momentum and Lamb, bf16 compute, against a float64
   reference that rounds what it keeps to bf16 at the same points (the master
   and the state after each step, Lamb's moments before its trust ratio; the
   gradients averaged as a 16-bit reduction does), six steps at stages 0-3 x
   world 1, 2, 3, 5: every master value a bf16 value, at most 3% of the
   weights off the reference by at most 4 bf16 steps (fp32 arithmetic against
   float64 can round a value near a tie the other way, and the next steps
   carry it), stages 0-3 bitwise equal; the fp32 run of the same job not bf16;
   optimizer offload to the CPU and NVMe and partial offload (ratio 0.5)
   bitwise the run without it (Adam on its scalar CPU path, ZERO_NO_SIMD=1;
   its SIMD path within 2 bf16 steps of the largest weight), with bf16 or
   fp32 state; checkpoints across stages bitwise, and across storages; the
   memory report (half the bytes; the bf16 parameters are the master on the
   device); accumulation in bf16, or fp32 when grad_accum_dtype says so; the
   config's refusals, naming the key.

   Lion moves each weight by -lr sign(c): where the reference's c is within
   a relative 1e-5 of zero (1e-2 with fp16 gradients) the engine may take the
   other sign, so those weights (counted: at most 1%, 15% with fp16) are left
   out of the comparison.

   Run alone: make test T=test_optim */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#include <unistd.h>

enum { NT = 4, MAXW = 5, TOTAL = 3 + 37 + 129 + 300, STEPS = 6 };
static const int64_t SIZES[NT] = {3, 37, 129, 300};
static zt_wave init_wave = {0.3, 0, 0.7, 0.01, 0};

typedef struct opt {
    zero_optimizer_type type;
    double lr, b1, b2, eps, wd, momentum, dampening;
    int nesterov;
} opt;

typedef struct job {
    opt o;
    double max_coeff, min_coeff; /* Lamb */
    int eps_inside, no_bias_correction, same_grads; /* Lamb; same_grads: every rank the same gradients */
    int stage, gas, dtype, offload, scale_power, no_rules;
    int master16, state16, acc32; /* bf16 master weights, bf16 state; grad_accum_dtype "fp32" (bf16 section) */
    double ratio;                 /* offload_optimizer.ratio (0: 1) */
    const char *nvme; /* offload_optimizer "nvme" under this directory */
    const char *json; /* the optimizer from this DeepSpeed config text instead of o */
    const char *save_dir, *load_dir; /* save after step 3 and stop / load, then train steps 3.. */
    zero_result r[MAXW];
    char msg[MAXW][1024];
    int applied[STEPS];
    float w[TOTAL], m[TOTAL], v[TOTAL];
    zero_memory_stats ms;
} job;

/* Lamb's runs add noise drawn fresh for each run of the program (per
   step, rank, micro-batch and index) */
static float noise[STEPS][MAXW][2][300];
static int use_noise;

static float grad_of(float x, int rank, int m, int s, int64_t i) {
    return x - 0.1f + 0.01f * (float)((rank * 7 + m * 3 + s + i) % 5) + (use_noise ? noise[s][rank][m][i] : 0.0f);
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
                for (i = 0; i < SIZES[t]; i++)
                    zt_store(g, (zero_dtype)J->dtype, i,
                             (float)zero_loss_scale(e) * grad_of(zt_load(w, (zero_dtype)J->dtype, i), J->same_grads ? 0 : rank, m, s, i));
                if ((r = zero_grad_ready(e, t)) != ZERO_OK || (r = zero_release(e, t)) != ZERO_OK) return r;
            }
        if ((r = zero_step(e, &info)) != ZERO_OK) return r;
        if (rank == 0) J->applied[s] = info.applied;
    }
    return ZERO_OK;
}

static zero_result rank_fn(const zero_backend *b0, void *arg) {
    job *J = (job *)arg;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][8];
    zero_engine *e = NULL;
    zero_error err;
    zero_backend ob, nb;
    zero_cpu_pool *pool = NULL;
    const zero_backend *b = b0;
    int t, rank = b0->rank, s0 = 0, s1 = STEPS;
    int64_t o = 0;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].group = t;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
        if (t == 1) ts[t].flags = ZERO_TENSOR_NO_DECAY;
    }
    if (J->no_rules) { /* device kernels that run Adam only */
        nb = *b0;
        nb.opt_rules = 0;
        b = &nb;
    }
    if (J->offload) {
        if (zero_cpu_pool_create(&pool, 2, NULL, &err) != ZERO_OK) return err.code;
        zero_offload_backend(b, pool, &ob);
        b = &ob;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = 100; /* several units, one tensor cut over two */
    c.zero_optimization.offload_optimizer.device = J->nvme ? ZERO_OFFLOAD_NVME : J->offload ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
    if (J->nvme)
        snprintf(c.zero_optimization.offload_optimizer.nvme_path, sizeof c.zero_optimization.offload_optimizer.nvme_path, "%s",
                 J->nvme);
    if (J->json) {
        if (zero_config_parse_json(&c, J->json, strlen(J->json), &err) != ZERO_OK) {
            J->r[rank] = err.code;
            snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
            zero_cpu_pool_destroy(pool);
            return ZERO_OK;
        }
    } else {
        c.optimizer.type = J->o.type;
        c.optimizer.lr = J->o.lr;
        c.optimizer.beta1 = J->o.b1;
        c.optimizer.beta2 = J->o.b2;
        c.optimizer.eps = J->o.eps;
        c.optimizer.weight_decay = J->o.wd;
        c.optimizer.momentum = J->o.momentum;
        c.optimizer.dampening = J->o.dampening;
        c.optimizer.nesterov = J->o.nesterov;
        if (J->o.type == ZERO_OPTIMIZER_LAMB) {
            c.optimizer.max_coeff = J->max_coeff;
            c.optimizer.min_coeff = J->min_coeff;
            c.optimizer.eps_inside_sqrt = J->eps_inside;
            c.optimizer.bias_correction = !J->no_bias_correction;
        }
    }
    c.gradient_clipping = 0.5;
    c.fp16.enabled = J->dtype == ZERO_DTYPE_FP16;
    c.fp16.initial_scale_power = J->scale_power;
    c.bf16.enabled = J->dtype == ZERO_DTYPE_BF16;
    c.bf16.bf16_master_weights_and_grads = J->master16;
    c.bf16.bf16_optimizer_states = J->state16;
    if (J->acc32) c.grad_accum_dtype = ZERO_DTYPE_FP32;
    if (J->ratio > 0) c.zero_optimization.offload_optimizer.ratio = J->ratio;
    if (J->o.type == ZERO_OPTIMIZER_ADAM) c.optimizer.adam_w_mode = 0; /* "Adam": L2 in the gradient */
    c.log.level = ZERO_LOG_ERROR;
    if (zero_config_resolve(&c, b->world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, b, &err) != ZERO_OK) {
        J->r[rank] = err.code;
        snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
        zero_cpu_pool_destroy(pool);
        return ZERO_OK;
    }
    if (rank == 0) zero_memory_report(e, &J->ms);
    if (J->load_dir) {
        if ((J->r[rank] = zero_load(e, J->load_dir, &err)) != ZERO_OK) {
            snprintf(J->msg[rank], sizeof J->msg[rank], "%s", err.msg);
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
        if (zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], J->w + o) != ZERO_OK ||
            zero_read_state(e, t, ZERO_STATE_EXP_AVG, 0, SIZES[t], J->m + o) != ZERO_OK ||
            zero_read_state(e, t, ZERO_STATE_EXP_AVG_SQ, 0, SIZES[t], J->v + o) != ZERO_OK)
            J->r[rank] = zero_engine_error(e)->code;
        o += SIZES[t];
    }
    zero_engine_destroy(e);
    zero_cpu_pool_destroy(pool);
    return ZERO_OK;
}

/* ---- the float64 reference ---- */

typedef struct ref {
    double w[TOTAL], m[TOTAL], v[TOTAL];
    double margin[TOTAL]; /* Lion: the smallest |c| / (|b1 m| + |(1 - b1) g|) seen */
    int clamped_hi, clamped_lo; /* Lamb: trust ratios the clamp cut */
} ref;

/* DeepSpeed's FusedLamb on tensor t (elements o ..) in float64: the moments,
   u = m / (sqrt(v) + eps) + wd p with no bias correction inside, the trust
   ratio |p| / |u| over the whole tensor clamped to [min_coeff, max_coeff]
   (1 where a norm is 0), the bias correction in the step */
static void ref_lamb(const job *J, ref *R, const double *G, double q, int t, int64_t o, int k) {
    static double u[300];
    double sp = 0, su = 0, ratio = 1, b1 = J->o.b1, b2 = J->o.b2, wd = t == 1 ? 0 : J->o.wd, step = J->o.lr;
    int64_t i;
    for (i = 0; i < SIZES[t]; i++) {
        double g = G[o + i] / q, p = R->w[o + i];
        R->m[o + i] = b1 * R->m[o + i] + (1 - b1) * g;
        R->v[o + i] = b2 * R->v[o + i] + (1 - b2) * g * g;
        u[i] = R->m[o + i] / (J->eps_inside ? sqrt(R->v[o + i] + J->o.eps) : sqrt(R->v[o + i]) + J->o.eps) + wd * p;
        sp += p * p;
        su += u[i] * u[i];
    }
    if (sp > 0 && su > 0) {
        ratio = sqrt(sp) / sqrt(su);
        if (ratio > J->max_coeff) ratio = J->max_coeff, R->clamped_hi++;
        if (ratio < J->min_coeff) ratio = J->min_coeff, R->clamped_lo++;
    }
    if (!J->no_bias_correction) step *= sqrt(1 - pow(b2, k)) / (1 - pow(b1, k));
    for (i = 0; i < SIZES[t]; i++) R->w[o + i] -= step * ratio * u[i];
}

static void ref_run(const job *J, int world, int dtype, ref *R) {
    int s, t, r, m, k = 0;
    int64_t i, o;
    zero_dtype dt = (zero_dtype)dtype;
    for (t = 0, o = 0; t < NT; o += SIZES[t++])
        for (i = 0; i < SIZES[t]; i++) {
            R->w[o + i] = zt_wave_at(&init_wave, t, i);
            R->m[o + i] = R->v[o + i] = 0;
            R->margin[o + i] = 1e300;
        }
    R->clamped_hi = R->clamped_lo = 0;
    for (s = 0; s < STEPS; s++) {
        static double G[TOTAL];
        double norm = 0, q;
        if (!J->applied[s]) continue; /* the engine skipped it (fp16 overflow): no update */
        for (t = 0, o = 0; t < NT; o += SIZES[t++])
            for (i = 0; i < SIZES[t]; i++) {
                double sum = 0;
                float x = zt_round(dt, (float)R->w[o + i]);
                for (r = 0; r < world; r++)
                    for (m = 0; m < J->gas; m++) sum += grad_of(x, J->same_grads ? 0 : r, m, s, i);
                G[o + i] = sum / (world * J->gas);
                norm += G[o + i] * G[o + i];
            }
        norm = sqrt(norm);
        q = (norm + 1e-6) / 0.5;
        if (q < 1) q = 1;
        k++;
        if (J->o.type == ZERO_OPTIMIZER_LAMB) {
            for (t = 0, o = 0; t < NT; o += SIZES[t++]) ref_lamb(J, R, G, q, t, o, k);
            continue;
        }
        for (t = 0, o = 0; t < NT; o += SIZES[t++])
            for (i = 0; i < SIZES[t]; i++) {
                double g = G[o + i] / q, p = R->w[o + i], wd = t == 1 ? 0 : J->o.wd, lr = J->o.lr;
                double *mm = &R->m[o + i], *vv = &R->v[o + i];
                if (J->o.type == ZERO_OPTIMIZER_LION) {
                    double a = J->o.b1 * *mm, b = (1 - J->o.b1) * g, c = a + b;
                    double den = fabs(a) + fabs(b);
                    if (den > 0 && fabs(c) / den < R->margin[o + i]) R->margin[o + i] = fabs(c) / den;
                    if (den == 0) R->margin[o + i] = 0;
                    p = p * (1 - lr * wd) - lr * (c >= 0 ? 1 : -1);
                    *mm = J->o.b2 * *mm + (1 - J->o.b2) * g;
                } else if (J->o.type == ZERO_OPTIMIZER_ADAGRAD) {
                    if (wd > 0) g += wd * p;
                    *vv += g * g;
                    p -= lr * g / (sqrt(*vv) + J->o.eps);
                } else {
                    double d = g + wd * p;
                    if (J->o.momentum != 0) {
                        *mm = k == 1 ? d : J->o.momentum * *mm + (1 - J->o.dampening) * d;
                        d = J->o.nesterov ? d + J->o.momentum * *mm : *mm;
                    }
                    p -= lr * d;
                }
                R->w[o + i] = p;
            }
    }
}

/* max |engine - reference| / max |reference| over the weights Lion's margin
   keeps (all for the others); *skipped: the weights left out */
static double ref_diff(const job *J, const ref *R, double near, int *skipped) {
    double maxd = 0, maxw = 0;
    int64_t i;
    *skipped = 0;
    for (i = 0; i < TOTAL; i++) {
        if (J->o.type == ZERO_OPTIMIZER_LION && R->margin[i] < near) {
            ++*skipped;
            continue;
        }
        maxw = fmax(maxw, fabs(R->w[i]));
        maxd = fmax(maxd, fabs((double)J->w[i] - R->w[i]));
    }
    return maxd / maxw;
}

static const opt OPTS[] = {
    {ZERO_OPTIMIZER_LION, 1e-3, 0.9, 0.99, 0, 0.1, 0, 0, 0},
    {ZERO_OPTIMIZER_ADAGRAD, 5e-2, 0, 0, 1e-10, 0.01, 0, 0, 0},
    {ZERO_OPTIMIZER_SGD, 0.1, 0, 0, 0, 0.01, 0, 0, 0},
    {ZERO_OPTIMIZER_SGD, 0.1, 0, 0, 0, 0.01, 0.9, 0.1, 0},
    {ZERO_OPTIMIZER_SGD, 0.1, 0, 0, 0, 0.01, 0.9, 0, 1},
};
enum { NOPT = sizeof OPTS / sizeof OPTS[0] };

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

static void test_matrix(void) {
    static const int worlds[] = {1, 2, 3, 5};
    static job base, j, at[2];
    static ref R;
    int k, wi, gas, st, runs = 0, left_out = 0;
    double worst[NOPT];
    for (k = 0; k < NOPT; k++) {
        worst[k] = 0;
        for (wi = 0; wi < 4; wi++)
            for (gas = 1; gas <= 2; gas++) {
                int w = worlds[wi], skipped;
                if (getenv("ZERO_TEST_QUICK") && (w == 5 || (w == 3 && gas == 2))) continue;
                memset(&base, 0, sizeof base);
                base.o = OPTS[k];
                base.gas = gas;
                base.dtype = ZERO_DTYPE_FP32;
                for (st = 0; st <= 3; st++) {
                    j = base;
                    j.stage = st;
                    run(&j, w);
                    CHECKF(all_ok(&j, w), "%s stage %d world %d gas %d: %s", zero_optimizer_name(OPTS[k].type), st, w, gas,
                           j.msg[0]);
                    if (!all_ok(&j, w)) continue;
                    if (st == 0) ref_run(&j, w, ZERO_DTYPE_FP32, &R);
                    worst[k] = fmax(worst[k], ref_diff(&j, &R, 1e-5, &skipped));
                    CHECKF(ref_diff(&j, &R, 1e-5, &skipped) < 2e-5 && skipped * 100 <= TOTAL,
                           "%s stage %d world %d gas %d: %.3g from the float64 reference (%d weights left out)",
                           zero_optimizer_name(OPTS[k].type), st, w, gas, ref_diff(&j, &R, 1e-5, &skipped), skipped);
                    if (st == 0) left_out += skipped;
                    if (st == 0 || st == 2) {
                        at[st / 2] = j;
                    } else { /* stages 0-1 add the micro-batches before the reduction, 2-3 after it: each pair
                                is the same arithmetic */
                        const job *b = &at[st / 2];
                        CHECKF(!memcmp(j.w, b->w, sizeof j.w) && !memcmp(j.m, b->m, sizeof j.m) && !memcmp(j.v, b->v, sizeof j.v),
                               "%s world %d gas %d: stage %d differs from stage %d", zero_optimizer_name(OPTS[k].type), w, gas,
                               st, st - 1);
                    }
                    runs++;
                }
                /* the optimizer offloaded to the CPU (stage 2): bitwise the run on the "device" */
                j = at[1];
                memset(j.w, 0, sizeof j.w);
                j.offload = 1;
                run(&j, w);
                CHECKF(all_ok(&j, w) && !memcmp(j.w, at[1].w, sizeof j.w) && !memcmp(j.m, at[1].m, sizeof j.m) &&
                           !memcmp(j.v, at[1].v, sizeof j.v),
                       "%s world %d gas %d: offload to the CPU changed the weights or state (%s)",
                       zero_optimizer_name(OPTS[k].type), w, gas, j.msg[0]);
                if (w <= 2) { /* and to NVMe: master | m | v in one tile per unit */
                    char dir[] = "/tmp/zero_test_optim_nvme_XXXXXX";
                    if (mkdtemp(dir)) {
                        j = at[1];
                        memset(j.w, 0, sizeof j.w);
                        j.offload = 1;
                        j.nvme = dir;
                        run(&j, w);
                        CHECKF(all_ok(&j, w) && !memcmp(j.w, at[1].w, sizeof j.w) && !memcmp(j.m, at[1].m, sizeof j.m) &&
                                   !memcmp(j.v, at[1].v, sizeof j.v),
                               "%s world %d gas %d: offload to NVMe changed the weights or state (%s)",
                               zero_optimizer_name(OPTS[k].type), w, gas, j.msg[0]);
                        rmdir(dir);
                        runs++;
                    }
                }
                if (gas == 1 || w <= 2) /* one micro-batch (or the sums agree): every stage the same bits */
                    CHECKF(!memcmp(at[0].w, at[1].w, sizeof j.w) && !memcmp(at[0].m, at[1].m, sizeof j.m),
                           "%s world %d gas %d: stage 2 differs from stage 0", zero_optimizer_name(OPTS[k].type), w, gas);
                runs++;
            }
    }
    printf("Lion, Adagrad, SGD (plain, momentum + dampening, nesterov): %d runs, stages 0-1 and 2-3 bitwise equal, CPU offload bitwise "
           "equal, NVMe bitwise equal; worst relative difference to float64: %.2g %.2g %.2g %.2g %.2g (Lion: %d weights near c = 0 left out)\n",
           runs, worst[0], worst[1], worst[2], worst[3], worst[4], left_out);
}

/* fp16 with dynamic loss scaling from 2^18: the first steps overflow and are
   skipped; the reference skips the same ones */
static void test_fp16(void) {
    static job j;
    static ref R;
    int k, n = 0, s, skipped_steps;
    for (k = 0; k < NOPT; k++) {
        int left;
        double d;
        memset(&j, 0, sizeof j);
        j.o = OPTS[k];
        j.gas = 2;
        j.stage = 2;
        j.dtype = ZERO_DTYPE_FP16;
        j.scale_power = 18;
        run(&j, 2);
        CHECKF(all_ok(&j, 2), "%s fp16: %s", zero_optimizer_name(OPTS[k].type), j.msg[0]);
        for (s = 0, skipped_steps = 0; s < STEPS; s++) skipped_steps += !j.applied[s];
        CHECKF(skipped_steps >= 1 && skipped_steps < STEPS, "%s fp16: %d of %d steps skipped",
               zero_optimizer_name(OPTS[k].type), skipped_steps, STEPS);
        ref_run(&j, 2, ZERO_DTYPE_FP16, &R);
        d = ref_diff(&j, &R, 1e-2, &left); /* fp16 gradients: Lion's sign is uncertain within 1% of c = 0 */
        CHECKF(d < 3e-3 && left * 100 <= 15 * TOTAL, "%s fp16: %.3g from the reference that skips the same steps (%d left out)",
               zero_optimizer_name(OPTS[k].type), d, left);
        n++;
    }
    printf("fp16 with loss scaling: %d optimizers, skipped steps skipped by the reference too\n", n);
}

static void test_memory(void) {
    static job j;
    static const struct {
        int k;
        int arrays;
    } want[] = {{0, 1}, {1, 1}, {2, 0}, {3, 1}};
    int i;
    for (i = 0; i < 4; i++) {
        size_t got;
        memset(&j, 0, sizeof j);
        j.o = OPTS[want[i].k];
        j.gas = 1;
        j.stage = 2;
        j.dtype = ZERO_DTYPE_FP32;
        run(&j, 2);
        got = j.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE];
        CHECKF(all_ok(&j, 2) && got % 4 == 0 && (want[i].arrays == 0 ? got == 0 : got > 0),
               "%s momentum %g: %zu bytes of optimizer state", zero_optimizer_name(OPTS[want[i].k].type),
               OPTS[want[i].k].momentum, got);
        if (want[i].arrays == 1) { /* one fp32 array over the shard: 4 bytes an element of the rank's shard */
            static job a;
            memset(&a, 0, sizeof a);
            a.o.type = ZERO_OPTIMIZER_ADAMW;
            a.o.lr = 1e-3, a.o.b1 = 0.9, a.o.b2 = 0.999, a.o.eps = 1e-8;
            a.gas = 1;
            a.stage = 2;
            a.dtype = ZERO_DTYPE_FP32;
            run(&a, 2);
            CHECKF(2 * got == a.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE], "%s: %zu bytes of state, Adam %zu",
                   zero_optimizer_name(OPTS[want[i].k].type), got, a.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE]);
        }
    }
}

static void test_ckpt(void) {
    static job whole, first, second, adam;
    char dir[] = "/tmp/zero_test_optim_XXXXXX", sub[600], sub2[600];
    int k;
    if (!mkdtemp(dir)) {
        CHECKF(0, "mkdtemp %s", dir);
        return;
    }
    for (k = 0; k < NOPT; k++) {
        snprintf(sub, sizeof sub, "%s/c%d", dir, k);
        memset(&whole, 0, sizeof whole);
        whole.o = OPTS[k];
        whole.gas = 1;
        whole.stage = 2;
        whole.dtype = ZERO_DTYPE_FP32;
        run(&whole, 2);
        first = whole;
        first.save_dir = sub;
        run(&first, 2);
        second = whole;
        second.stage = 3; /* loaded at another stage: the state resharded */
        second.load_dir = sub;
        memset(second.w, 0, sizeof second.w);
        run(&second, 2);
        CHECKF(all_ok(&first, 2) && all_ok(&second, 2) && !memcmp(second.w, whole.w, sizeof whole.w) &&
                   !memcmp(second.m, whole.m, sizeof whole.m) && !memcmp(second.v, whole.v, sizeof whole.v),
               "%s: 3 steps, save at stage 2, load at stage 3, 3 steps: not the run that never stopped (%s / %s)",
               zero_optimizer_name(OPTS[k].type), first.msg[0], second.msg[0]);
    }
    /* a checkpoint of Adam loaded by Lion, and of Lion by Adam: refused, naming both */
    snprintf(sub2, sizeof sub2, "%s/adam", dir);
    memset(&adam, 0, sizeof adam);
    adam.o.type = ZERO_OPTIMIZER_ADAMW;
    adam.o.lr = 1e-3, adam.o.b1 = 0.9, adam.o.b2 = 0.999, adam.o.eps = 1e-8;
    adam.gas = 1;
    adam.stage = 1;
    adam.dtype = ZERO_DTYPE_FP32;
    adam.save_dir = sub2;
    run(&adam, 1);
    memset(&second, 0, sizeof second);
    second.o = OPTS[0];
    second.gas = 1;
    second.stage = 1;
    second.dtype = ZERO_DTYPE_FP32;
    second.load_dir = sub2;
    run(&second, 1);
    CHECKF(second.r[0] == ZERO_ERR_CONFIG && strstr(second.msg[0], "saved by Adam/AdamW") && strstr(second.msg[0], "Lion") &&
               strstr(second.msg[0], "HINT"),
           "Adam's checkpoint loaded by Lion: %d %s", (int)second.r[0], second.msg[0]);
    snprintf(sub, sizeof sub, "%s/c0", dir);
    second = adam;
    second.save_dir = NULL;
    second.load_dir = sub;
    run(&second, 2);
    CHECKF(second.r[0] == ZERO_ERR_CONFIG && strstr(second.msg[0], "saved by Lion"), "Lion's checkpoint loaded by Adam: %s",
           second.msg[0]);
    {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    printf("checkpoints: %d optimizers saved at stage 2 and resumed at stage 3 bitwise; other optimizers' refused\n", NOPT);
}

/* From a DeepSpeed config's text: the type in any case, the keys it names,
   DeepSpeed's defaults for the rest (Adagrad's lr 1e-2 and eps 1e-10): the
   same bits as the config filled in code with those values */
static void test_json(void) {
    static const struct {
        const char *json;
        opt o;
    } cases[] = {
        {"{\"optimizer\": {\"type\": \"adagrad\", \"params\": {\"weight_decay\": 0.01}}}",
         {ZERO_OPTIMIZER_ADAGRAD, 1e-2, 0.9, 0.999, 1e-10, 0.01, 0, 0, 0}},
        {"{\"optimizer\": {\"type\": \"LION\", \"params\": {\"lr\": 1e-4, \"betas\": [0.95, 0.98], \"weight_decay\": 0.1}}}",
         {ZERO_OPTIMIZER_LION, 1e-4, 0.95, 0.98, 1e-8, 0.1, 0, 0, 0}},
        {"{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": 0.05, \"momentum\": 0.9, \"nesterov\": true}}}",
         {ZERO_OPTIMIZER_SGD, 0.05, 0.9, 0.999, 1e-8, 0, 0.9, 0, 1}},
    };
    static job a, b;
    size_t k;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memset(&a, 0, sizeof a);
        a.o = cases[k].o;
        a.gas = 2;
        a.stage = 3;
        a.dtype = ZERO_DTYPE_FP32;
        b = a;
        b.json = cases[k].json;
        run(&a, 2);
        run(&b, 2);
        CHECKF(all_ok(&a, 2) && all_ok(&b, 2) && !memcmp(a.w, b.w, sizeof a.w) && !memcmp(a.m, b.m, sizeof a.m) &&
                   !memcmp(a.v, b.v, sizeof a.v),
               "%s: the config's text trained otherwise than the same config in code (%s / %s)", cases[k].json, a.msg[0],
               b.msg[0]);
    }
    printf("DeepSpeed config text: %d optimizers train as their configs in code, bitwise\n", (int)k);
}

static void test_device_rules(void) {
    static job j;
    memset(&j, 0, sizeof j);
    j.o = OPTS[0];
    j.gas = 1;
    j.stage = 2;
    j.dtype = ZERO_DTYPE_FP32;
    j.no_rules = 1;
    run(&j, 1);
    CHECKF(j.r[0] == ZERO_ERR_CONFIG && strstr(j.msg[0], "Adam and AdamW only") && strstr(j.msg[0], "offload_optimizer"),
           "Lion on device kernels that run Adam only: %d %s", (int)j.r[0], j.msg[0]);
    j.offload = 1;
    run(&j, 1);
    CHECKF(j.r[0] == ZERO_OK, "Lion offloaded to the CPU on such a backend: %s", j.msg[0]);
}

/* The storage pairs (master, then m and v) the CPU optimizer takes: fp32 and
   bf16 alike, and either in bf16 alone */
static const zero_dtype SIMD_STORE[4][2] = {{ZERO_DTYPE_FP32, ZERO_DTYPE_FP32},
                                            {ZERO_DTYPE_BF16, ZERO_DTYPE_BF16},
                                            {ZERO_DTYPE_BF16, ZERO_DTYPE_FP32},
                                            {ZERO_DTYPE_FP32, ZERO_DTYPE_BF16}};

/* Elements i of n where got (stored in dt) is not want rounded to dt, bit for bit */
static int stored_diff(const unsigned char *got, zero_dtype dt, const float *want, int64_t n) {
    int64_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        if (dt == ZERO_DTYPE_BF16) bad += ((const zero_bf16 *)got)[i] != zero_f32_to_bf16(want[i]);
        else bad += memcmp(got + 4 * i, &want[i], 4) != 0;
    }
    return bad;
}

/* zero_cpu_adam_at on each SIMD path this CPU has, against the scalar path:
   the same bits for every rule (FMA where the scalar definition calls fmaf),
   every gradient and parameter dtype, every storage pair of master and state
   (SIMD_STORE), two segments with their own lr and weight decay, lengths that
   leave a tail, master, m and v starting off their vectors' alignment (by
   1-5 elements) where a pair has bf16, over a pool of 3 threads. Where a pair
   stores bf16, the scalar run is also checked against the fp32 run from the
   same inputs (bf16 values): each bf16 array its nearest even bf16, each fp32
   array and the parameter copy bit for bit, so bf16 storage rounds the fp32
   result once and the parameter copy comes from the fp32 result. */
static void test_simd(void) {
    enum { N = 1000, PAD = 8 };
    static float master[N], m[N], v[N], f32[N], ref[3][N], in[3][N + PAD], out[4][3][N + PAD];
    static unsigned char grad[N * 4], param[4][N * 4], ref_param[N * 4];
    zero_cpu_pool *pool = NULL;
    zero_error err;
    int k, gdt, pdt, lvl, st, cases = 0, paths = 0, rounded = 0;
    int64_t i;
    CHECK(zero_cpu_pool_create(&pool, 3, NULL, &err) == ZERO_OK);
    for (k = 0; k < NOPT + 2; k++)
        for (gdt = ZERO_DTYPE_FP32; gdt <= ZERO_DTYPE_BF16; gdt++)
            for (pdt = ZERO_DTYPE_FP32 - 1; pdt <= ZERO_DTYPE_BF16; pdt++) {
                zero_adam_args a;
                zero_adam_seg sg[2] = {{3, 517, 1e-2f, 0.1f, 0}, {600, 399, 3e-3f, 0.0f, 0}};
                opt o = OPTS[k < NOPT ? k : k - NOPT];
                memset(&a, 0, sizeof a);
                a.kind = o.type;
                a.beta1 = (float)o.b1, a.beta2 = (float)o.b2, a.eps = (float)(o.eps > 0 ? o.eps : 1e-10);
                a.momentum = (float)o.momentum, a.dampening = (float)o.dampening, a.nesterov = o.nesterov;
                a.first = k >= NOPT; /* the second pass: the first step (SGD's buffer starts as d) */
                a.grad_scale = 0.75f;
                a.grad_dtype = (zero_dtype)gdt;
                a.param_dtype = (zero_dtype)(pdt < ZERO_DTYPE_FP32 ? ZERO_DTYPE_BF16 : pdt);
                a.segs = sg;
                a.n_segs = 2;
                for (i = 0; i < N; i++) {
                    /* where the gradient is 0, weights in bf16's denormal range (SGD and Adagrad keep them there,
                       and SGD's momentum becomes one): bf16 stores keep denormals */
                    master[i] = i % 97 == 0 ? (i % 2 ? -3e-39f : 5e-39f) : (float)zt_rand_range(-1, 1);
                    m[i] = i % 97 == 0 ? 0.0f : (float)zt_rand_range(-0.1, 0.1); /* some c exactly 0 for Lion */
                    v[i] = (float)zt_rand_range(0, 0.01);
                    f32[i] = i % 97 == 0 ? 0.0f : (float)zt_rand_range(-2, 2);
                }
                for (i = 0; i < N; i++) zt_store(grad, (zero_dtype)gdt, i, f32[i]);
                for (st = 0; st < 4; st++) {
                    const zero_dtype mdt = SIMD_STORE[st][0], sdt = SIMD_STORE[st][1];
                    const size_t msz = mdt == ZERO_DTYPE_BF16 ? 2 : 4, ssz = sdt == ZERO_DTYPE_BF16 ? 2 : 4;
                    const int64_t sh = st == 0 ? 0 : 1 + (k + gdt + st) % 5; /* elements off the arrays' start */
                    const char *pname = pdt < ZERO_DTYPE_FP32 ? "none" : zero_dtype_name((zero_dtype)pdt);
                    unsigned char *inp = (unsigned char *)in[0] + sh * msz;
                    a.master_dtype = mdt, a.state_dtype = sdt;
                    for (i = 0; i < N; i++) { /* bf16 arrays: the values rounded */
                        zt_store(inp, mdt, i, master[i]);
                        zt_store((unsigned char *)in[1] + sh * ssz, sdt, i, m[i]);
                        zt_store((unsigned char *)in[2] + sh * ssz, sdt, i, v[i]);
                    }
                    for (lvl = 0; lvl < 3; lvl++) {
                        zero_result r;
                        unsigned char *om = (unsigned char *)out[lvl + 1][0] + sh * msz;
                        unsigned char *oa = (unsigned char *)out[lvl + 1][1] + sh * ssz;
                        unsigned char *ob = (unsigned char *)out[lvl + 1][2] + sh * ssz;
                        memcpy(out[lvl + 1], in, sizeof in);
                        memset(param[lvl + 1], 0, sizeof param[0]);
                        a.master = om, a.m = oa, a.v = ob;
                        a.grad = grad;
                        a.param = pdt < ZERO_DTYPE_FP32 ? NULL : param[lvl + 1];
                        r = zero_cpu_adam_at(&a, (zero_simd_level)lvl, pool, &err);
                        if (lvl > 0 && r == ZERO_ERR_UNSUPPORTED) continue;
                        CHECKF(r == ZERO_OK, "%s level %d: %s", zero_optimizer_name(o.type), lvl, err.msg);
                        if (lvl == 0) continue;
                        CHECKF(!memcmp(out[lvl + 1], out[1], sizeof out[0]) && !memcmp(param[lvl + 1], param[1], sizeof param[0]),
                               "%s (momentum %g, first %d) grad %s param %s master %s state %s, %lld elements in: "
                               "%s differs from the scalar path",
                               zero_optimizer_name(o.type), o.momentum, a.first, zero_dtype_name((zero_dtype)gdt), pname,
                               zero_dtype_name(mdt), zero_dtype_name(sdt), (long long)sh,
                               zero_simd_level_name((zero_simd_level)lvl));
                        paths++;
                    }
                    /* the scalar path moved the weights it should (not a no-op) */
                    CHECKF(memcmp(out[1][0], in[0], sizeof in[0]) != 0, "%s master %s: nothing changed",
                           zero_optimizer_name(o.type), zero_dtype_name(mdt));
                    if (st > 0) { /* bf16 storage: the fp32 run from the same values, rounded */
                        zero_adam_args f = a;
                        int bad;
                        for (i = 0; i < N; i++) {
                            ref[0][i] = zt_load(inp, mdt, i);
                            ref[1][i] = zt_load((unsigned char *)in[1] + sh * ssz, sdt, i);
                            ref[2][i] = zt_load((unsigned char *)in[2] + sh * ssz, sdt, i);
                        }
                        memset(ref_param, 0, sizeof ref_param);
                        f.master = ref[0], f.m = ref[1], f.v = ref[2];
                        f.master_dtype = f.state_dtype = ZERO_DTYPE_FP32;
                        f.param = pdt < ZERO_DTYPE_FP32 ? NULL : ref_param;
                        CHECK(zero_cpu_adam_at(&f, ZERO_SIMD_SCALAR, NULL, &err) == ZERO_OK);
                        bad = stored_diff((unsigned char *)out[1][0] + sh * msz, mdt, ref[0], N) +
                              stored_diff((unsigned char *)out[1][1] + sh * ssz, sdt, ref[1], N) +
                              stored_diff((unsigned char *)out[1][2] + sh * ssz, sdt, ref[2], N);
                        CHECKF(bad == 0 && !memcmp(param[1], ref_param, sizeof ref_param),
                               "%s (momentum %g, first %d) grad %s param %s master %s state %s: %d stored values "
                               "are not the fp32 run's rounded%s",
                               zero_optimizer_name(o.type), o.momentum, a.first, zero_dtype_name((zero_dtype)gdt), pname,
                               zero_dtype_name(mdt), zero_dtype_name(sdt), bad,
                               memcmp(param[1], ref_param, sizeof ref_param) ? ", the parameter copy differs" : "");
                        rounded++;
                    }
                    cases++;
                }
            }
    zero_cpu_pool_destroy(pool);
    printf("SIMD paths of Lion, Adagrad and SGD: %d cases (%d with bf16 storage, each the fp32 run rounded), "
           "%d path comparisons, bitwise the scalar path\n", cases, rounded, paths);
}

/* ---- Lamb (DeepSpeed's FusedLamb) ---- */

static const struct {
    opt o;
    double max_coeff, min_coeff;
    int eps_inside, no_bias_correction;
} LAMBS[] = {
    /* the ratios here run from about 1e-3 to 0.15: the clamp cuts some at
       each end and leaves the others */
    {{ZERO_OPTIMIZER_LAMB, 1e-2, 0.9, 0.999, 1e-8, 0.01, 0, 0, 0}, 0.05, 0.01, 0, 0},
    /* eps under the root, no bias correction */
    {{ZERO_OPTIMIZER_LAMB, 5e-3, 0.8, 0.99, 1e-6, 0, 0, 0, 0}, 10.0, 0.05, 1, 1},
};
enum { NLAMB = sizeof LAMBS / sizeof LAMBS[0] };

static void lamb_job(job *j, int k, int stage, int gas) {
    memset(j, 0, sizeof *j);
    j->o = LAMBS[k].o;
    j->max_coeff = LAMBS[k].max_coeff;
    j->min_coeff = LAMBS[k].min_coeff;
    j->eps_inside = LAMBS[k].eps_inside;
    j->no_bias_correction = LAMBS[k].no_bias_correction;
    j->stage = stage;
    j->gas = gas;
    j->dtype = ZERO_DTYPE_FP32;
}

static int same_state(const job *a, const job *b) {
    return !memcmp(a->w, b->w, sizeof a->w) && !memcmp(a->m, b->m, sizeof a->m) && !memcmp(a->v, b->v, sizeof a->v);
}

/* max |a - b| / max |b| over the weights */
static double job_diff(const job *a, const job *b) {
    double maxd = 0, maxw = 0;
    int64_t i;
    for (i = 0; i < TOTAL; i++) {
        maxw = fmax(maxw, fabs((double)b->w[i]));
        maxd = fmax(maxd, fabs((double)a->w[i] - (double)b->w[i]));
    }
    return maxd / maxw;
}

/* max over tensors of max |engine - reference| / max |reference| in the
   tensor: each tensor measured on its own scale (the trust ratio is per
   tensor) */
static double lamb_diff(const job *J, const ref *R) {
    double worst = 0;
    int t;
    int64_t i, o;
    for (t = 0, o = 0; t < NT; o += SIZES[t++]) {
        double maxd = 0, maxw = 0;
        for (i = 0; i < SIZES[t]; i++) {
            maxw = fmax(maxw, fabs(R->w[o + i]));
            maxd = fmax(maxd, fabs((double)J->w[o + i] - R->w[o + i]));
        }
        worst = fmax(worst, maxd / maxw);
    }
    return worst;
}

/* stages 0-3 x world 1, 2, 3, 5 x gas 1-2 against the float64 reference
   (relative 2e-6 per tensor); stages 2 and 3 (and 1 with one micro-batch) bitwise,
   their norms summed over the same chunks; stage 0, whose every rank sums
   whole tensors, bitwise them on one rank only; CPU offload at stages 1-3
   bitwise the run without it */
static void test_lamb_matrix(void) {
    static const int worlds[] = {1, 2, 3, 5};
    static job j, at[4], off;
    static ref R;
    int k, wi, gas, st, runs = 0, hi = 0, lo = 0;
    double worst = 0;
    for (k = 0; k < NLAMB; k++)
        for (wi = 0; wi < 4; wi++)
            for (gas = 1; gas <= 2; gas++) {
                int w = worlds[wi];
                if (getenv("ZERO_TEST_QUICK") && (w == 5 || (w == 3 && gas == 2))) continue;
                for (st = 0; st <= 3; st++) {
                    double d;
                    lamb_job(&j, k, st, gas);
                    run(&j, w);
                    CHECKF(all_ok(&j, w), "Lamb %d stage %d world %d gas %d: %s", k, st, w, gas, j.msg[0]);
                    if (!all_ok(&j, w)) continue;
                    if (st == 0) {
                        ref_run(&j, w, ZERO_DTYPE_FP32, &R);
                        hi += R.clamped_hi;
                        lo += R.clamped_lo;
                    }
                    d = lamb_diff(&j, &R);
                    worst = fmax(worst, d);
                    CHECKF(d < 2e-6, "Lamb %d stage %d world %d gas %d: %.3g from the float64 reference", k, st, w, gas, d);
                    at[st] = j;
                    runs++;
                    if (st >= 1) { /* the optimizer offloaded to the CPU: the same bits */
                        off = j;
                        memset(off.w, 0, sizeof off.w);
                        off.offload = 1;
                        run(&off, w);
                        CHECKF(all_ok(&off, w) && same_state(&off, &j),
                               "Lamb %d stage %d world %d gas %d: CPU offload changed the weights or state (%s)", k, st, w,
                               gas, off.msg[0]);
                        runs++;
                    }
                    if (st >= 1 && w <= 2 && k == 0) { /* and to NVMe: both passes over the tiles, the same bits */
                        char dir[] = "/tmp/zero_test_lamb_nvme_XXXXXX";
                        if (mkdtemp(dir)) {
                            off = j;
                            memset(off.w, 0, sizeof off.w);
                            off.offload = 1;
                            off.nvme = dir;
                            run(&off, w);
                            CHECKF(all_ok(&off, w) && same_state(&off, &j),
                                   "Lamb %d stage %d world %d gas %d: NVMe offload changed the weights or state (%s)", k,
                                   st, w, gas, off.msg[0]);
                            rmdir(dir);
                            runs++;
                        }
                    }
                }
                CHECKF(same_state(&at[2], &at[3]), "Lamb %d world %d gas %d: stage 3 differs from stage 2", k, w, gas);
                if (gas == 1)
                    CHECKF(same_state(&at[1], &at[2]), "Lamb %d world %d gas %d: stage 2 differs from stage 1", k, w, gas);
                if (w == 1)
                    CHECKF(same_state(&at[0], &at[1]), "Lamb %d world 1 gas %d: stage 1 differs from stage 0", k, gas);
            }
    CHECKF(hi > 0 && lo > 0, "the clamp never cut (ceiling %d, floor %d times)", hi, lo);
    printf("Lamb: %d runs against float64 (worst relative %.2g; the clamp cut %d ratios at the ceiling, %d at the floor), "
           "stages 2-3 (1-3 with one micro-batch) bitwise, CPU and NVMe offload bitwise\n",
           runs, worst, hi, lo);
}

/* The same gradients on every rank: every world and stage trains as world 1
   at stage 0 within a relative 1e-6 (the norms' sums run in another order
   and the gradients' average over ranks rounds in fp32) */
static void test_lamb_worlds(void) {
    static const int worlds[] = {1, 2, 3, 5};
    static job one, j;
    int wi, st, gas, n = 0;
    double worst = 0;
    for (gas = 1; gas <= 2; gas++) {
        lamb_job(&one, 0, 0, gas);
        one.same_grads = 1;
        run(&one, 1);
        for (wi = 0; wi < 4; wi++)
            for (st = 0; st <= 3; st++) {
                double d;
                if (getenv("ZERO_TEST_QUICK") && worlds[wi] == 5) continue;
                lamb_job(&j, 0, st, gas);
                j.same_grads = 1;
                run(&j, worlds[wi]);
                d = job_diff(&j, &one);
                worst = fmax(worst, d);
                CHECKF(all_ok(&j, worlds[wi]) && d < 1e-6, "Lamb world %d stage %d gas %d: %.3g from world 1 stage 0 (%s)",
                       worlds[wi], st, gas, d, j.msg[0]);
                n++;
            }
    }
    printf("Lamb, the same gradients on every rank: %d runs within %.2g of world 1 stage 0 (bound 1e-6)\n", n, worst);
}

/* fp16 with dynamic loss scaling from 2^18: skipped steps skipped by the
   reference too; with the optimizer offloaded, the same bits */
static void test_lamb_fp16(void) {
    static job j, off;
    static ref R;
    int s, skipped = 0;
    double d;
    lamb_job(&j, 0, 2, 2);
    j.dtype = ZERO_DTYPE_FP16;
    j.scale_power = 18;
    run(&j, 2);
    CHECKF(all_ok(&j, 2), "Lamb fp16: %s", j.msg[0]);
    for (s = 0; s < STEPS; s++) skipped += !j.applied[s];
    CHECKF(skipped >= 1 && skipped < STEPS, "Lamb fp16: %d of %d steps skipped", skipped, STEPS);
    ref_run(&j, 2, ZERO_DTYPE_FP16, &R);
    d = lamb_diff(&j, &R);
    CHECKF(d < 3e-3, "Lamb fp16: %.3g from the reference that skips the same steps", d);
    off = j;
    off.offload = 1;
    memset(off.w, 0, sizeof off.w);
    run(&off, 2);
    CHECKF(all_ok(&off, 2) && same_state(&off, &j), "Lamb fp16: CPU offload changed the weights (%s)", off.msg[0]);
    printf("Lamb fp16: %d of %d steps skipped, %.2g from the reference (bound 3e-3), CPU offload bitwise\n", skipped, STEPS, d);
}

/* a checkpoint saved at stage 2 resumes at stage 3 bitwise (offloaded too);
   Adam refuses Lamb's and Lamb refuses Adam's */
static void test_lamb_ckpt(void) {
    static job whole, first, second;
    char dir[] = "/tmp/zero_test_lamb_XXXXXX", sub[600], sub2[600], cmd[700];
    if (!mkdtemp(dir)) {
        CHECKF(0, "mkdtemp %s", dir);
        return;
    }
    snprintf(sub, sizeof sub, "%s/lamb", dir);
    lamb_job(&whole, 0, 2, 1);
    run(&whole, 2);
    first = whole;
    first.save_dir = sub;
    run(&first, 2);
    second = whole;
    second.stage = 3;
    second.load_dir = sub;
    memset(second.w, 0, sizeof second.w);
    run(&second, 2);
    CHECKF(all_ok(&first, 2) && all_ok(&second, 2) && same_state(&second, &whole),
           "Lamb: saved at stage 2, resumed at stage 3: not the run that never stopped (%s / %s)", first.msg[0], second.msg[0]);
    second.offload = 1;
    memset(second.w, 0, sizeof second.w);
    run(&second, 2);
    CHECKF(all_ok(&second, 2) && same_state(&second, &whole), "Lamb: resumed with CPU offload: not the same bits (%s)",
           second.msg[0]);
    /* Adam loads Lamb's: refused */
    memset(&second, 0, sizeof second);
    second.o.type = ZERO_OPTIMIZER_ADAMW;
    second.o.lr = 1e-3, second.o.b1 = 0.9, second.o.b2 = 0.999, second.o.eps = 1e-8;
    second.gas = 1;
    second.stage = 2;
    second.dtype = ZERO_DTYPE_FP32;
    second.load_dir = sub;
    run(&second, 2);
    CHECKF(second.r[0] == ZERO_ERR_CONFIG && strstr(second.msg[0], "saved by Lamb") && strstr(second.msg[0], "HINT"),
           "Lamb's checkpoint loaded by AdamW: %d %s", (int)second.r[0], second.msg[0]);
    /* Lamb loads Adam's: refused */
    snprintf(sub2, sizeof sub2, "%s/adam", dir);
    first = second;
    first.load_dir = NULL;
    first.save_dir = sub2;
    run(&first, 2);
    lamb_job(&second, 0, 2, 1);
    second.load_dir = sub2;
    run(&second, 2);
    CHECKF(all_ok(&first, 2) && second.r[0] == ZERO_ERR_CONFIG && strstr(second.msg[0], "saved by Adam/AdamW") &&
               strstr(second.msg[0], "Lamb"),
           "Adam's checkpoint loaded by Lamb: %d %s", (int)second.r[0], second.msg[0]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    printf("Lamb checkpoints: resumed at another stage bitwise (and offloaded), other optimizers' refused both ways\n");
}

static void expect_refused(job *j, int world, const char *what, const char *want1, const char *want2) {
    run(j, world);
    CHECKF(j->r[0] != ZERO_OK && strstr(j->msg[0], want1) && (!want2 || strstr(j->msg[0], want2)), "%s: %d %s", what,
           (int)j->r[0], j->msg[0]);
}

/* what zero refuses with Lamb, each naming the key */
static void test_lamb_refusals(void) {
    static job j;
    lamb_job(&j, 0, 2, 1);
    j.json = "{\"optimizer\": {\"type\": \"Lamb\", \"params\": {\"amsgrad\": true}}}";
    expect_refused(&j, 1, "amsgrad true", "amsgrad", NULL);
    lamb_job(&j, 0, 2, 1);
    j.json = "{\"optimizer\": {\"type\": \"Lamb\", \"params\": {\"min_coeff\": 2, \"max_coeff\": 1}}}";
    expect_refused(&j, 1, "min_coeff > max_coeff", "min_coeff", "HINT");
    lamb_job(&j, 0, 2, 1);
    j.max_coeff = 0.5, j.min_coeff = 0.6; /* in code */
    expect_refused(&j, 1, "min_coeff > max_coeff in code", "min_coeff", "max_coeff");
    lamb_job(&j, 0, 2, 1);
    j.o.lr = -1e-3;
    expect_refused(&j, 1, "negative lr", "optimizer.params.lr", NULL);
    lamb_job(&j, 0, 2, 1);
    j.json = "{\"optimizer\": {\"type\": \"Lamb\", \"params\": {\"max_grad_norm\": 1.0}}}";
    expect_refused(&j, 1, "max_grad_norm", "max_grad_norm", "gradient_clipping");
    lamb_job(&j, 0, 2, 1);
    j.dtype = ZERO_DTYPE_FP16;
    j.json = "{\"optimizer\": {\"type\": \"Lamb\"}, \"fp16\": {\"loss_scale\": 128}}";
    expect_refused(&j, 1, "fp16 static loss scale", "loss_scale", "HINT");
    lamb_job(&j, 0, 2, 1);
    j.offload = 1;
    j.json = "{\"optimizer\": {\"type\": \"Lamb\"}, \"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\", "
             "\"delayed_param_update\": true}}}";
    expect_refused(&j, 1, "the delayed update", "delayed_param_update", "HINT");
    /* device kernels without Lamb (the CUDA backend's): refused on the device, run offloaded */
    {
        static job dev, off;
        lamb_job(&dev, 0, 2, 1);
        run(&dev, 2);
        lamb_job(&j, 0, 2, 1);
        j.no_rules = 1;
        expect_refused(&j, 2, "Lamb on device kernels without it", "Adam and AdamW only", "offload_optimizer");
        off = j;
        off.offload = 1;
        run(&off, 2);
        CHECKF(all_ok(&off, 2) && same_state(&off, &dev), "Lamb offloaded on such a backend: %s", off.msg[0]);
    }
    printf("Lamb refusals: amsgrad, min_coeff > max_coeff, negative lr, max_grad_norm, fp16 static scale, the delayed "
           "update, device kernels without it\n");
}

/* DeepSpeed's Lamb keys in a config's text: the same bits as in code */
static void test_lamb_json(void) {
    static job a, b;
    lamb_job(&a, 1, 3, 2);
    b = a;
    b.json = "{\"optimizer\": {\"type\": \"lamb\", \"params\": {\"lr\": 5e-3, \"bias_correction\": false, \"betas\": [0.8, "
             "0.99], \"eps\": 1e-6, \"eps_inside_sqrt\": true, \"weight_decay\": 0, \"max_coeff\": 10.0, \"min_coeff\": 0.05, "
             "\"amsgrad\": false}}}";
    run(&a, 2);
    run(&b, 2);
    CHECKF(all_ok(&a, 2) && all_ok(&b, 2) && same_state(&a, &b), "Lamb from the config's text: not as in code (%s / %s)",
           a.msg[0], b.msg[0]);
    /* DeepSpeed's defaults for what the text leaves out */
    lamb_job(&a, 0, 1, 1);
    a.o.lr = 1e-3, a.o.wd = 0, a.max_coeff = 10.0, a.min_coeff = 0.01;
    b = a;
    b.json = "{\"optimizer\": {\"type\": \"Lamb\"}}";
    run(&a, 2);
    run(&b, 2);
    CHECKF(all_ok(&a, 2) && all_ok(&b, 2) && same_state(&a, &b), "Lamb's defaults: not DeepSpeed's (%s / %s)", a.msg[0],
           b.msg[0]);
    printf("Lamb from DeepSpeed's config keys: bitwise as in code, DeepSpeed's defaults\n");
}

/* the state it keeps: m and v as Adam (zero_optimizer_state_mask 3, the
   estimator's 12 bytes a parameter with the master), and its norm vectors */
static void test_lamb_memory(void) {
    static job l, a;
    size_t gl, ga;
    zero_estimate_args ea;
    zero_memory_estimate el, ead;
    zero_error err;
    CHECK(zero_optimizer_state_mask(ZERO_OPTIMIZER_LAMB, 0) == 3);
    lamb_job(&l, 0, 2, 1);
    run(&l, 2);
    a = l;
    a.o.type = ZERO_OPTIMIZER_ADAMW;
    run(&a, 2);
    gl = l.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE];
    ga = a.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE];
    CHECKF(all_ok(&l, 2) && all_ok(&a, 2) && gl > ga && gl - ga <= 16 * NT + 20 * 16,
           "Lamb's optimizer state %zu bytes, Adam's %zu (the difference: its norm vectors)", gl, ga);
    memset(&ea, 0, sizeof ea);
    ea.params = 1e9;
    ea.gpus_per_node = 8;
    ea.nodes = 1;
    ea.stage = 2;
    ea.optimizer = ZERO_OPTIMIZER_LAMB;
    CHECK(zero_estimate_memory(&ea, &el, &err) == ZERO_OK);
    ea.optimizer = ZERO_OPTIMIZER_ADAM;
    CHECK(zero_estimate_memory(&ea, &ead, &err) == ZERO_OK);
    CHECKF(el.gpu_optimizer_bytes == ead.gpu_optimizer_bytes, "estimator: Lamb %g bytes, Adam %g",
           (double)el.gpu_optimizer_bytes, (double)ead.gpu_optimizer_bytes);
}

/* ---- bf16 master weights and optimizer state (bf16.bf16_master_weights_and_grads,
   bf16_optimizer_states): the rules above and Adam/AdamW/Lamb, compute in bf16 ---- */

/* learning rates large enough that a step moves a bf16 weight near 0.5
   (its bf16 step is 2^-9) */
static const struct {
    opt o;
    const char *name;
} B16_OPTS[] = {
    {{ZERO_OPTIMIZER_ADAM, 3e-2, 0.9, 0.999, 1e-8, 0.1, 0, 0, 0}, "Adam"},
    {{ZERO_OPTIMIZER_ADAMW, 3e-2, 0.9, 0.95, 1e-8, 0.1, 0, 0, 0}, "AdamW"},
    {{ZERO_OPTIMIZER_LION, 2e-2, 0.9, 0.99, 0, 0.1, 0, 0, 0}, "Lion"},
    {{ZERO_OPTIMIZER_ADAGRAD, 1e-1, 0, 0, 1e-10, 0.01, 0, 0, 0}, "Adagrad"},
    {{ZERO_OPTIMIZER_SGD, 0.2, 0, 0, 0, 0.01, 0.9, 0, 0}, "SGD momentum"},
    {{ZERO_OPTIMIZER_LAMB, 3e-2, 0.9, 0.999, 1e-6, 0.01, 0, 0, 0}, "Lamb"},
};
enum { NB16 = sizeof B16_OPTS / sizeof B16_OPTS[0] };

/* j: a job of B16_OPTS[k] in bf16 (fp32 master and state until the caller
   sets master16, state16), Lamb's clamps DeepSpeed's defaults */
static void b16_job(job *j, int k, int stage, int gas) {
    memset(j, 0, sizeof *j);
    j->dtype = ZERO_DTYPE_BF16;
    j->o = B16_OPTS[k].o;
    j->max_coeff = 10, j->min_coeff = 0.01;
    j->stage = stage;
    j->gas = gas;
}

/* ---- the float64 reference, rounding what it keeps to bf16 ---- */

/* x rounded to the nearest bf16 (8 significant bits), ties to even: the
   scaled value's nearest integer in the default rounding mode */
static double b16_round(double x) {
    int ex;
    double scale;
    if (x == 0 || !isfinite(x)) return x;
    frexp(x, &ex);
    scale = ldexp(1.0, 8 - ex);
    return nearbyint(x * scale) / scale;
}

typedef struct b16_ref {
    double w[TOTAL], m[TOTAL], v[TOTAL];
    double margin[TOTAL]; /* Lion: the smallest |c| / (|b1 m| + |(1 - b1) g|) seen */
} b16_ref;

static void b16_ref_run(const job *J, int world, b16_ref *R) {
    const opt *O = &J->o;
    int s, t, r, k = 0;
    int64_t i, o;
    for (t = 0, o = 0; t < NT; o += SIZES[t++])
        for (i = 0; i < SIZES[t]; i++) {
            R->w[o + i] = b16_round(zt_wave_at(&init_wave, t, i));
            R->m[o + i] = R->v[o + i] = 0;
            R->margin[o + i] = 1e300;
        }
    for (s = 0; s < STEPS; s++) {
        static double G[TOTAL], u[TOTAL];
        double norm = 0, q;
        if (!J->applied[s]) continue;
        for (t = 0, o = 0; t < NT; o += SIZES[t++])
            for (i = 0; i < SIZES[t]; i++) {
                /* each rank's bf16 gradient (one micro-batch), averaged as a 16-bit
                   reduction does (ZERO_OP_AVG): every contribution times 1/world
                   rounded to bf16, added in rank order, each partial sum rounded */
                float x = (float)R->w[o + i], pre = 1.0f / (float)world; /* (x: the bf16 parameter the forward reads) */
                double acc = 0;
                for (r = 0; r < world; r++) {
                    double c = b16_round((float)b16_round(grad_of(x, r, 0, s, i)) * pre);
                    acc = r == 0 ? c : b16_round(acc + c);
                }
                G[o + i] = acc;
                norm += G[o + i] * G[o + i];
            }
        norm = sqrt(norm);
        q = (norm + 1e-6) / 0.5;
        if (q < 1) q = 1;
        k++;
        for (t = 0, o = 0; t < NT; o += SIZES[t++]) {
            double wd = t == 1 ? 0 : O->wd, lr = O->lr, sp = 0, su = 0, ratio = 1;
            for (i = 0; i < SIZES[t]; i++) {
                double g = G[o + i] / q, p = R->w[o + i], *mm = &R->m[o + i], *vv = &R->v[o + i];
                switch (O->type) {
                case ZERO_OPTIMIZER_ADAM:
                case ZERO_OPTIMIZER_ADAMW: {
                    double bc1 = 1 - pow(O->b1, k), bc2 = 1 - pow(O->b2, k);
                    if (O->type == ZERO_OPTIMIZER_ADAM) g += wd * p;
                    *mm = O->b1 * *mm + (1 - O->b1) * g;
                    *vv = O->b2 * *vv + (1 - O->b2) * g * g;
                    if (O->type == ZERO_OPTIMIZER_ADAMW) p -= lr * wd * p;
                    p -= lr / bc1 * *mm / (sqrt(*vv) / sqrt(bc2) + O->eps);
                    break;
                }
                case ZERO_OPTIMIZER_LION: {
                    double a = O->b1 * *mm, b = (1 - O->b1) * g, c = a + b, den = fabs(a) + fabs(b);
                    R->margin[o + i] = fmin(R->margin[o + i], den > 0 ? fabs(c) / den : 0);
                    p = p * (1 - lr * wd) - lr * (c >= 0 ? 1 : -1);
                    *mm = O->b2 * *mm + (1 - O->b2) * g;
                    break;
                }
                case ZERO_OPTIMIZER_ADAGRAD:
                    if (wd > 0) g += wd * p;
                    *vv += g * g;
                    p -= lr * g / (sqrt(*vv) + O->eps);
                    break;
                case ZERO_OPTIMIZER_SGD: {
                    double d = g + wd * p;
                    *mm = k == 1 ? d : O->momentum * *mm + d;
                    p -= lr * *mm;
                    break;
                }
                default: /* Lamb: the moments kept (rounded) first, u from them */
                    *mm = b16_round(O->b1 * *mm + (1 - O->b1) * g);
                    *vv = b16_round(O->b2 * *vv + (1 - O->b2) * g * g);
                    u[o + i] = *mm / (sqrt(*vv) + O->eps) + wd * p;
                    sp += p * p;
                    su += u[o + i] * u[o + i];
                    break;
                }
                if (O->type != ZERO_OPTIMIZER_LAMB) {
                    R->w[o + i] = b16_round(p);
                    *mm = b16_round(*mm);
                    *vv = b16_round(*vv);
                }
            }
            if (O->type == ZERO_OPTIMIZER_LAMB) {
                double step = lr * sqrt(1 - pow(O->b2, k)) / (1 - pow(O->b1, k));
                if (sp > 0 && su > 0) ratio = fmin(fmax(sqrt(sp) / sqrt(su), 0.01), 10.0);
                for (i = 0; i < SIZES[t]; i++) R->w[o + i] = b16_round(R->w[o + i] - step * ratio * u[o + i]);
            }
        }
    }
}

/* Whether x is a bf16 value (its low 16 bits zero). */
static int b16_is(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    return (b & 0xFFFFu) == 0;
}

/* The engine's master against the reference: how many differ, and the
   largest difference in bf16 steps of the reference's value. Lion moves a
   weight by -lr sign(c): where the reference's c is within a relative 1e-4
   of zero the engine's fp32 c may have the other sign, so those weights
   (at most 2%) are left out. */
static void b16_compare(const job *J, const b16_ref *R, int *differ, double *steps, int *not16) {
    int64_t i;
    int near0 = 0;
    *differ = *not16 = 0;
    *steps = 0;
    for (i = 0; i < TOTAL; i++) {
        double d = fabs((double)J->w[i] - R->w[i]), ulp;
        int ex;
        if (!b16_is(J->w[i])) ++*not16;
        if (J->o.type == ZERO_OPTIMIZER_LION && R->margin[i] < 1e-4) {
            near0++;
            continue;
        }
        if (d == 0) continue;
        ++*differ;
        frexp(R->w[i] != 0 ? R->w[i] : J->w[i], &ex);
        ulp = ldexp(1.0, ex - 8);
        if (d / ulp > *steps) *steps = d / ulp;
    }
    if (near0 > TOTAL / 50) *differ = TOTAL; /* (too many to leave out: fail) */
}

static void test_b16_matrix(void) {
    static const int worlds[] = {1, 2, 3, 5};
    static job j, at0;
    static b16_ref R;
    int k, wi, st, runs = 0;
    for (k = 0; k < NB16; k++) {
        int worst_differ = 0;
        double worst_steps = 0;
        for (wi = 0; wi < 4; wi++) {
            int w = worlds[wi];
            for (st = 0; st <= 3; st++) {
                int differ, not16;
                double steps;
                b16_job(&j, k, st, 1);
                j.master16 = j.state16 = 1;
                run(&j, w);
                runs++;
                CHECKF(all_ok(&j, w), "%s world %d stage %d: %s", B16_OPTS[k].name, w, st, j.msg[0]);
                if (!all_ok(&j, w)) continue;
                b16_ref_run(&j, w, &R);
                b16_compare(&j, &R, &differ, &steps, &not16);
                CHECKF(not16 == 0, "%s world %d stage %d: %d master values are not bf16", B16_OPTS[k].name, w, st, not16);
                CHECKF(differ <= TOTAL * 3 / 100 && steps <= 4,
                       "%s world %d stage %d: %d of %d weights differ from the bf16 reference, by up to %.2f bf16 steps",
                       B16_OPTS[k].name, w, st, differ, TOTAL, steps);
                if (differ > worst_differ) worst_differ = differ;
                if (steps > worst_steps) worst_steps = steps;
                if (st == 0) {
                    at0 = j;
                } else {
                    CHECKF(!memcmp(j.w, at0.w, sizeof j.w) && !memcmp(j.m, at0.m, sizeof j.m) && !memcmp(j.v, at0.v, sizeof j.v),
                           "%s world %d: stage %d differs from stage 0", B16_OPTS[k].name, w, st);
                }
            }
        }
        printf("  %-13s bf16 master and state, stages 0-3 x world 1, 2, 3, 5: at most %d of %d weights off the "
               "float64 reference, by %.2f bf16 steps at most\n",
               B16_OPTS[k].name, worst_differ, TOTAL, worst_steps);
    }
    CHECK(runs == NB16 * 16);
}

/* the same job with fp32 storage: its master is not bf16 (the test above
   would see it), and both kinds of storage train the weights */
static void test_b16_fp32_differs(void) {
    static job a, b;
    int n16 = 0;
    int64_t i;
    b16_job(&a, 0, 1, 1);
    b = a;
    b.master16 = b.state16 = 1;
    run(&a, 2);
    run(&b, 2);
    CHECK(all_ok(&a, 2) && all_ok(&b, 2));
    for (i = 0; i < TOTAL; i++) n16 += b16_is(a.w[i]);
    CHECKF(n16 < TOTAL / 4, "the fp32 run's master: %d of %d values are bf16 values", n16, TOTAL);
    CHECK(memcmp(a.w, b.w, sizeof a.w) != 0);
    {
        int moved = 0, t;
        int64_t o = 0;
        for (t = 0; t < NT; o += SIZES[t++])
            for (i = 0; i < SIZES[t]; i++) moved += b.w[o + i] != (float)b16_round(zt_wave_at(&init_wave, t, i));
        CHECKF(moved > TOTAL * 9 / 10, "bf16 master: only %d of %d weights moved in six steps", moved, TOTAL);
    }
}

/* offload to the CPU (zero_offload_backend's SIMD paths) and to NVMe:
   bitwise the run without it; bf16 master with fp32 state too */
static void test_b16_offload(void) {
    static job base, j;
    char dir[] = "/tmp/zero_bf16_nvme_XXXXXX", cmd[96];
    int k, st, mix;
    double simd_worst = 0;
    CHECK(mkdtemp(dir) != NULL);
    for (mix = 0; mix < 2; mix++)
        for (k = 0; k < NB16; k++)
            for (st = 1; st <= 3; st++) {
                int nv, adam = B16_OPTS[k].o.type <= ZERO_OPTIMIZER_ADAMW;
                b16_job(&base, k, st, st == 2 ? 2 : 1);
                base.master16 = 1;
                base.state16 = !mix;
                run(&base, 2);
                CHECKF(all_ok(&base, 2), "%s stage %d state%s: %s", B16_OPTS[k].name, st, mix ? " fp32" : " bf16", base.msg[0]);
                for (nv = 0; nv < 3; nv++) { /* the CPU, NVMe, and (Adam, stage 3) half of the units kept on the device */
                    if (nv == 2 && !(st == 3 && adam)) continue;
                    j = base;
                    j.offload = 1;
                    j.nvme = nv == 1 ? dir : NULL;
                    j.ratio = nv == 2 ? 0.5 : 0;
                    if (adam) setenv("ZERO_NO_SIMD", "1", 1); /* (the scalar CPU Adam: bitwise; SIMD below) */
                    run(&j, 2);
                    unsetenv("ZERO_NO_SIMD");
                    CHECKF(all_ok(&j, 2) && !memcmp(j.w, base.w, sizeof j.w) && !memcmp(j.m, base.m, sizeof j.m) &&
                               !memcmp(j.v, base.v, sizeof j.v),
                           "%s stage %d gas %d state %s: offload to %s changed the weights or state (%s)", B16_OPTS[k].name, st,
                           base.gas, mix ? "fp32" : "bf16", nv == 2 ? "the CPU at ratio 0.5" : nv ? "NVMe" : "the CPU",
                           j.msg[0]);
                }
                if (adam) { /* the SIMD CPU Adam: FMA and another order of fp32 operations, so a bf16
                               rounding may go the other way and feed back: within 2 bf16 steps of max |w| */
                    double maxw = 0, maxd = 0;
                    int64_t i;
                    j = base;
                    j.offload = 1;
                    run(&j, 2);
                    for (i = 0; i < TOTAL; i++) {
                        maxw = fmax(maxw, fabs(base.w[i]));
                        maxd = fmax(maxd, fabs((double)j.w[i] - base.w[i]));
                    }
                    CHECKF(all_ok(&j, 2) && maxd <= 2 * ldexp(maxw, -8),
                           "%s stage %d state %s: the SIMD CPU Adam is %.3g off (max |w| %.3g)", B16_OPTS[k].name, st,
                           mix ? "fp32" : "bf16", maxd, maxw);
                    if (maxw > 0 && maxd / maxw > simd_worst) simd_worst = maxd / maxw;
                }
                if (mix) { /* the state fp32, the master bf16 */
                    int64_t i;
                    int m16 = 0, s16 = 0;
                    for (i = 0; i < TOTAL; i++) m16 += b16_is(base.w[i]), s16 += b16_is(base.m[i]) && b16_is(base.v[i]);
                    CHECKF(m16 == TOTAL, "%s stage %d: bf16 master with fp32 state: %d of %d master values bf16",
                           B16_OPTS[k].name, st, m16, TOTAL);
                    if (k == 0)
                        CHECKF(s16 < TOTAL / 4, "Adam stage %d: fp32 state, but %d of %d m, v pairs are bf16 values", st,
                               s16, TOTAL);
                }
            }
    printf("  offload to the CPU and NVMe, ratio 0.5: bitwise (Adam: its scalar CPU path); Adam's SIMD path at most "
           "%.3g of max |w| off\n",
           simd_worst);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
}

/* saved at stage 2 after step 3, loaded at stage 3: bitwise the run that
   never stopped; across storage: a bf16 engine loads an fp32 checkpoint, an
   fp32 engine a bf16 one */
static void test_b16_checkpoint(void) {
    static job full, a, b;
    char dir[] = "/tmp/zero_bf16_ckpt_XXXXXX", path[128], cmd[96];
    int k;
    CHECK(mkdtemp(dir) != NULL);
    for (k = 0; k < NB16; k++) {
        b16_job(&full, k, 3, 1);
        full.master16 = full.state16 = 1;
        run(&full, 2);
        snprintf(path, sizeof path, "%s/o%d", dir, k);
        a = full;
        a.stage = 2;
        a.save_dir = path;
        run(&a, 2);
        CHECKF(all_ok(&a, 2), "%s: save: %s", B16_OPTS[k].name, a.msg[0]);
        b = full;
        b.load_dir = path;
        run(&b, 2);
        CHECKF(all_ok(&b, 2) && !memcmp(b.w, full.w, sizeof b.w) && !memcmp(b.m, full.m, sizeof b.m) &&
                   !memcmp(b.v, full.v, sizeof b.v),
               "%s: saved at stage 2 and loaded at stage 3 is not the run that never stopped (%s)", B16_OPTS[k].name,
               b.msg[0]);
        /* and into NVMe tiles (master | m | v in bf16, 6 bytes a parameter), with the state fp32 too (10):
           the scalar CPU path, bitwise */
        if (k <= 1) {
            char tiles[] = "/tmp/zero_bf16_tiles_XXXXXX";
            int mix;
            CHECK(mkdtemp(tiles) != NULL);
            for (mix = 0; mix < 2; mix++) {
                /* the same load without offload: the run that never stopped (bf16 state), or with fp32 state the
                   run that loads it on the device */
                a = full;
                a.load_dir = path;
                a.state16 = !mix;
                if (mix) run(&a, 2);
                else a = full;
                b = a;
                b.load_dir = path;
                b.offload = 1;
                b.nvme = tiles;
                setenv("ZERO_NO_SIMD", "1", 1);
                run(&b, 2);
                unsetenv("ZERO_NO_SIMD");
                CHECKF(all_ok(&a, 2) && all_ok(&b, 2) && !memcmp(b.w, a.w, sizeof b.w) && !memcmp(b.m, a.m, sizeof b.m) &&
                           !memcmp(b.v, a.v, sizeof b.v),
                       "%s: loaded into NVMe tiles (state %s) is not the same load on the device (%s)", B16_OPTS[k].name,
                       mix ? "fp32" : "bf16", b.msg[0]);
            }
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", tiles);
            if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", tiles);
        }
        /* an fp32 engine loads the bf16 checkpoint: its values are the saved bf16 ones */
        b = full;
        b.master16 = b.state16 = 0;
        b.load_dir = path;
        b.save_dir = NULL;
        run(&b, 2);
        CHECKF(all_ok(&b, 2), "%s: an fp32 engine loading a bf16 checkpoint: %s", B16_OPTS[k].name, b.msg[0]);
    }
    /* a bf16 engine loads an fp32 checkpoint: the master rounded to bf16 */
    b16_job(&a, 0, 1, 1);
    snprintf(path, sizeof path, "%s/fp32", dir);
    a.save_dir = path;
    run(&a, 2);
    CHECK(all_ok(&a, 2));
    b = a;
    b.save_dir = NULL;
    b.load_dir = path;
    b.master16 = b.state16 = 1;
    run(&b, 2);
    CHECKF(all_ok(&b, 2), "a bf16 engine loading an fp32 checkpoint: %s", b.msg[0]);
    {
        int64_t i;
        int not16 = 0;
        for (i = 0; i < TOTAL; i++) not16 += !b16_is(b.w[i]);
        CHECKF(not16 == 0, "after loading an fp32 checkpoint, %d master values are not bf16", not16);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
}

static size_t b16_planned(const zero_memory_stats *ms, zero_mem_category c) {
    return ms->planned[c][ZERO_MEM_DEVICE] + ms->planned[c][ZERO_MEM_PINNED] + ms->planned[c][ZERO_MEM_HOST];
}

/* the memory report: half the bytes of the fp32 run for what is bf16 */
static void test_b16_memory(void) {
    static job a, b;
    int st, off, gas;
    for (st = 0; st <= 3; st++)
        for (off = 0; off < 2; off++)
            for (gas = 1; gas <= 2; gas++) {
                if (off && st == 0) continue;
                b16_job(&a, 0, st, gas);
                a.offload = off;
                b = a;
                b.master16 = b.state16 = 1;
                run(&a, 2);
                run(&b, 2);
                CHECK(all_ok(&a, 2) && all_ok(&b, 2));
                CHECKF(b16_planned(&b.ms, ZERO_MEM_OPTIM_STATE) * 2 == b16_planned(&a.ms, ZERO_MEM_OPTIM_STATE) &&
                           b16_planned(&a.ms, ZERO_MEM_OPTIM_STATE) > 0,
                       "stage %d offload %d gas %d: state %zu bytes in bf16, %zu in fp32", st, off, gas,
                       b16_planned(&b.ms, ZERO_MEM_OPTIM_STATE), b16_planned(&a.ms, ZERO_MEM_OPTIM_STATE));
                /* on the device the bf16 parameters are the master: none of its own; offloaded: half */
                CHECKF(off ? b16_planned(&b.ms, ZERO_MEM_MASTER) * 2 == b16_planned(&a.ms, ZERO_MEM_MASTER)
                           : b16_planned(&b.ms, ZERO_MEM_MASTER) == 0,
                       "stage %d offload %d gas %d: master %zu bytes in bf16, %zu in fp32", st, off, gas,
                       b16_planned(&b.ms, ZERO_MEM_MASTER), b16_planned(&a.ms, ZERO_MEM_MASTER));
                CHECKF(b.ms.master_dtype == ZERO_DTYPE_BF16 && b.ms.state_dtype == ZERO_DTYPE_BF16 &&
                           a.ms.master_dtype == ZERO_DTYPE_FP32 && a.ms.state_dtype == ZERO_DTYPE_FP32,
                       "stage %d: the report's dtypes", st);
                if (gas == 2)
                    CHECKF(b.ms.accum_dtype == ZERO_DTYPE_BF16 && a.ms.accum_dtype == ZERO_DTYPE_FP32,
                           "stage %d offload %d: accumulation %s with bf16 master, %s without", st, off,
                           zero_dtype_name(b.ms.accum_dtype), zero_dtype_name(a.ms.accum_dtype));
                if (st == 1 && !off && gas == 1) {
                    char text[4096];
                    zero_memory_stats_format(&b.ms, text, sizeof text);
                    CHECKF(strstr(text, "bf16 master weights and optimizer state") != NULL, "the report says so:\n%s", text);
                }
            }
}

/* grad_accum_dtype "fp32" beside bf16 master weights: fp32 accumulators, the
   master still bf16, at stages 1 and 3 (which add the micro-batches before
   and after the reduction: not each other's bits) the same weights with the
   optimizer offloaded */
static void test_b16_accum32(void) {
    static job a, b;
    int st, off;
    for (st = 1; st <= 3; st += 2)
        for (off = 0; off < 2; off++) {
            int64_t i, not16 = 0;
            b16_job(&a, 1, st, 2);
            a.master16 = a.state16 = 1;
            a.acc32 = 1;
            a.offload = off;
            if (off) setenv("ZERO_NO_SIMD", "1", 1);
            run(&a, 2);
            unsetenv("ZERO_NO_SIMD");
            CHECKF(all_ok(&a, 2), "stage %d offload %d, fp32 accumulation: %s", st, off, a.msg[0]);
            CHECKF(a.ms.accum_dtype == ZERO_DTYPE_FP32, "stage %d offload %d: accumulation %s", st, off,
                   zero_dtype_name(a.ms.accum_dtype));
            for (i = 0; i < TOTAL; i++) not16 += !b16_is(a.w[i]);
            CHECKF(not16 == 0, "stage %d offload %d, fp32 accumulation: %lld master values not bf16", st, off,
                   (long long)not16);
            if (!off)
                b = a;
            else
                CHECKF(!memcmp(a.w, b.w, sizeof a.w) && !memcmp(a.m, b.m, sizeof a.m),
                       "fp32 accumulation: stage %d offloaded differs from the run without offload", st);
        }
}

/* DeepSpeed's keys from JSON, and what the config refuses */
static void test_b16_config(void) {
    zero_config c;
    zero_error err;
    static const char ok[] = "{\"train_micro_batch_size_per_gpu\": 1, \"bf16\": {\"enabled\": true, "
                             "\"bf16_master_weights_and_grads\": true, \"bf16_optimizer_states\": true}, "
                             "\"zero_optimization\": {\"stage\": 2}}";
    static const struct {
        const char *json, *key;
    } bad[] = {
        {"{\"train_micro_batch_size_per_gpu\": 1, \"bf16\": {\"enabled\": true, \"bf16_optimizer_states\": true}}",
         "bf16.bf16_optimizer_states"},
        {"{\"train_micro_batch_size_per_gpu\": 1, \"bf16\": {\"enabled\": false, \"bf16_master_weights_and_grads\": true}}",
         "bf16.bf16_master_weights_and_grads"},
        {"{\"train_micro_batch_size_per_gpu\": 1, \"fp16\": {\"enabled\": true}, \"bf16\": "
         "{\"bf16_master_weights_and_grads\": true}}",
         "bf16.bf16_master_weights_and_grads"},
        {"{\"train_micro_batch_size_per_gpu\": 1, \"optimizer\": {\"type\": \"Muon\"}, \"bf16\": {\"enabled\": true, "
         "\"bf16_master_weights_and_grads\": true, \"bf16_optimizer_states\": true}}",
         "bf16.bf16_optimizer_states"},
        {"{\"train_micro_batch_size_per_gpu\": 1, \"data_types\": {\"grad_accum_dtype\": \"fp16\"}, \"bf16\": "
         "{\"enabled\": true, \"bf16_master_weights_and_grads\": true}}",
         "data_types.grad_accum_dtype"},
    };
    size_t i;
    c = zero_config_default();
    CHECK(zero_config_parse_json(&c, ok, strlen(ok), &err) == ZERO_OK);
    CHECK(zero_config_resolve(&c, 2, &err) == ZERO_OK);
    CHECK(c.bf16.bf16_master_weights_and_grads == 1 && c.bf16.bf16_optimizer_states == 1);
    CHECKF(c.grad_accum_dtype == ZERO_DTYPE_BF16, "grad_accum_dtype %s", zero_dtype_name(c.grad_accum_dtype));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zero_result r;
        c = zero_config_default();
        c.log.level = ZERO_LOG_ERROR + 1;
        r = zero_config_parse_json(&c, bad[i].json, strlen(bad[i].json), &err);
        if (r == ZERO_OK) r = zero_config_resolve(&c, 1, &err);
        CHECKF(r != ZERO_OK && strstr(err.msg, bad[i].key) != NULL && strstr(err.msg, "HINT") != NULL,
               "case %zu: %d, %s", i, (int)r, err.msg);
    }
    /* the Muon master in bf16 with fp32 state is fine */
    c = zero_config_default();
    c.train_micro_batch_size_per_gpu = 1;
    c.optimizer.type = ZERO_OPTIMIZER_MUON;
    c.bf16.enabled = 1;
    c.bf16.bf16_master_weights_and_grads = 1;
    CHECKF(zero_config_resolve(&c, 1, &err) == ZERO_OK, "Muon with bf16 master: %s", err.msg);
}

int main(void) {
    zt_seed("test_optim");
    test_matrix();
    test_fp16();
    test_memory();
    test_ckpt();
    test_device_rules();
    test_json();
    test_simd();
    test_b16_config();
    test_b16_matrix();
    test_b16_fp32_differs();
    test_b16_memory();
    test_b16_offload();
    test_b16_checkpoint();
    test_b16_accum32();
    {
        int s, r, m, i;
        for (s = 0; s < STEPS; s++)
            for (r = 0; r < MAXW; r++)
                for (m = 0; m < 2; m++)
                    for (i = 0; i < 300; i++) noise[s][r][m][i] = (float)zt_rand_range(-0.05, 0.05);
        use_noise = 1;
    }
    test_lamb_matrix();
    test_lamb_worlds();
    test_lamb_fp16();
    test_lamb_ckpt();
    test_lamb_refusals();
    test_lamb_json();
    test_lamb_memory();
    return zt_finish();
}
