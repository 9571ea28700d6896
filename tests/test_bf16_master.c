/* test_bf16_master.c - bf16.bf16_master_weights_and_grads and
   bf16.bf16_optimizer_states on host ranks: the master weights (and the
   optimizer's state) kept in bf16, each value rounded to the nearest even
   bf16 after every step.

   - Every optimizer (Adam, AdamW, Lion, Adagrad, SGD with momentum, Lamb)
     against a float64 reference that rounds what it keeps to bf16 at the
     same points (the master and the state after each step; Lamb's moments
     before its trust ratio), over six steps with clipping, weight decay with
     a no-decay tensor, at stages 0-3 x world 1, 2, 3, 5: every master value
     is a bf16 value, at most 3% of them differ from the reference, by at
     most 3 bf16 steps (fp32 arithmetic against float64 can round a value
     near a tie the other way, and the next steps carry it); the fp32 run of
     the same job is not bf16 (the storage really changed).
   - ZeRO does not change the math: stages 0-3 bitwise equal in each world.
   - Optimizer offload to the CPU and to NVMe, and partial offload (ratio
     0.5), bitwise the run without it (Adam: on its scalar CPU path,
     ZERO_NO_SIMD=1; its SIMD path, FMA and another order of operations,
     within 2 bf16 steps of the largest weight).
   - bf16 master with fp32 state: the state fp32, the master bf16.
   - Checkpoints: saved after step 3 at stage 2, loaded at stage 3, bitwise
     the run that never stopped; a bf16 engine loads an fp32 checkpoint
     (the master rounded to bf16) and an fp32 engine loads a bf16 one.
   - The memory report: the master 2 bytes a parameter (none when the
     parameters are the master), the state 2 an array; accumulation in bf16
     with more than one micro-batch, fp32 when grad_accum_dtype says so (the
     same weights with and without offload).
   - The config: DeepSpeed's keys from JSON; bf16_optimizer_states without
     bf16_master_weights_and_grads, bf16 master without bf16.enabled, and
     bf16 state with Muon refused with the key named.

   Run alone: make test T=test_bf16_master */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#ifndef ZERO_TEST_SHARED_IMPL
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
    double lr, b1, b2, eps, wd, momentum;
    const char *name;
} opt;

/* learning rates large enough that a step moves a bf16 weight near 0.5
   (its bf16 step is 2^-9) */
static const opt OPTS[] = {
    {ZERO_OPTIMIZER_ADAM, 3e-2, 0.9, 0.999, 1e-8, 0.1, 0, "Adam"},
    {ZERO_OPTIMIZER_ADAMW, 3e-2, 0.9, 0.95, 1e-8, 0.1, 0, "AdamW"},
    {ZERO_OPTIMIZER_LION, 2e-2, 0.9, 0.99, 0, 0.1, 0, "Lion"},
    {ZERO_OPTIMIZER_ADAGRAD, 1e-1, 0, 0, 1e-10, 0.01, 0, "Adagrad"},
    {ZERO_OPTIMIZER_SGD, 0.2, 0, 0, 0, 0.01, 0.9, "SGD momentum"},
    {ZERO_OPTIMIZER_LAMB, 3e-2, 0.9, 0.999, 1e-6, 0.01, 0, "Lamb"},
};
enum { NOPT = sizeof OPTS / sizeof OPTS[0] };

typedef struct job {
    opt o;
    int stage, gas, offload, master16, state16;
    double ratio; /* offload_optimizer.ratio (0: 1) */
    int acc32;    /* data_types.grad_accum_dtype "fp32" */
    const char *nvme;
    const char *save_dir, *load_dir;
    zero_result r[MAXW];
    char msg[MAXW][1024];
    int applied[STEPS];
    float w[TOTAL], m[TOTAL], v[TOTAL];
    zero_memory_stats ms;
} job;

static float grad_of(float x, int rank, int m, int s, int64_t i) {
    return x - 0.1f + 0.01f * (float)((rank * 7 + m * 3 + s + i) % 5);
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
                    zt_store(g, ZERO_DTYPE_BF16, i, grad_of(zt_load(w, ZERO_DTYPE_BF16, i), rank, m, s, i));
                if ((r = zero_grad_ready(e, t)) != ZERO_OK || (r = zero_release(e, t)) != ZERO_OK) return r;
            }
        if ((r = zero_step(e, &info)) != ZERO_OK) return r;
        if (rank == 0) J->applied[s] = info.applied;
    }
    return ZERO_OK;
}

static void fill_config(zero_config *c, const job *J) {
    c->train_micro_batch_size_per_gpu = 1;
    c->gradient_accumulation_steps = J->gas;
    c->zero_optimization.stage = J->stage;
    c->zero_optimization.reduce_bucket_size = 100; /* several units, one tensor cut over two */
    c->zero_optimization.offload_optimizer.device =
        J->nvme ? ZERO_OFFLOAD_NVME : J->offload ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
    if (J->ratio > 0) c->zero_optimization.offload_optimizer.ratio = J->ratio;
    if (J->nvme)
        snprintf(c->zero_optimization.offload_optimizer.nvme_path, sizeof c->zero_optimization.offload_optimizer.nvme_path,
                 "%s", J->nvme);
    c->optimizer.type = J->o.type;
    c->optimizer.lr = J->o.lr;
    c->optimizer.beta1 = J->o.b1;
    c->optimizer.beta2 = J->o.b2;
    c->optimizer.eps = J->o.eps;
    c->optimizer.weight_decay = J->o.wd;
    c->optimizer.momentum = J->o.momentum;
    c->optimizer.adam_w_mode = J->o.type == ZERO_OPTIMIZER_ADAMW; /* "Adam": L2 in the gradient */
    c->gradient_clipping = 0.5;
    c->bf16.enabled = 1;
    c->bf16.bf16_master_weights_and_grads = J->master16;
    c->bf16.bf16_optimizer_states = J->state16;
    if (J->acc32) c->grad_accum_dtype = ZERO_DTYPE_FP32;
    c->log.level = ZERO_LOG_ERROR;
}

static zero_result rank_fn(const zero_backend *b0, void *arg) {
    job *J = (job *)arg;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][8];
    zero_engine *e = NULL;
    zero_error err;
    zero_backend ob;
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
    if (J->offload || J->nvme) {
        if (zero_cpu_pool_create(&pool, 2, NULL, &err) != ZERO_OK) return err.code;
        zero_offload_backend(b, pool, &ob);
        b = &ob;
    }
    fill_config(&c, J);
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

static void run(job *J, int world) {
    zero_error err;
    memset(J->r, 0, sizeof J->r);
    CHECK(zero_host_run(world, rank_fn, J, &err) == ZERO_OK);
}

static int all_ok(const job *J, int world) {
    int r;
    for (r = 0; r < world; r++)
        if (J->r[r] != ZERO_OK) return 0;
    return 1;
}

/* ---- the float64 reference, rounding what it keeps to bf16 ---- */

/* x rounded to the nearest bf16 (8 significant bits), ties to even: the
   scaled value's nearest integer in the default rounding mode */
static double bf(double x) {
    int ex;
    double scale;
    if (x == 0 || !isfinite(x)) return x;
    frexp(x, &ex);
    scale = ldexp(1.0, 8 - ex);
    return nearbyint(x * scale) / scale;
}

typedef struct ref {
    double w[TOTAL], m[TOTAL], v[TOTAL];
    double margin[TOTAL]; /* Lion: the smallest |c| / (|b1 m| + |(1 - b1) g|) seen */
} ref;

static void ref_run(const job *J, int world, ref *R) {
    const opt *O = &J->o;
    int s, t, r, k = 0;
    int64_t i, o;
    double (*rm)(double) = bf; /* the master's rounding */
    for (t = 0, o = 0; t < NT; o += SIZES[t++])
        for (i = 0; i < SIZES[t]; i++) {
            R->w[o + i] = bf(zt_wave_at(&init_wave, t, i));
            R->m[o + i] = R->v[o + i] = 0;
            R->margin[o + i] = 1e300;
        }
    (void)rm;
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
                    double c = bf((float)bf(grad_of(x, r, 0, s, i)) * pre);
                    acc = r == 0 ? c : bf(acc + c);
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
                    *mm = bf(O->b1 * *mm + (1 - O->b1) * g);
                    *vv = bf(O->b2 * *vv + (1 - O->b2) * g * g);
                    u[o + i] = *mm / (sqrt(*vv) + O->eps) + wd * p;
                    sp += p * p;
                    su += u[o + i] * u[o + i];
                    break;
                }
                if (O->type != ZERO_OPTIMIZER_LAMB) {
                    R->w[o + i] = bf(p);
                    *mm = bf(*mm);
                    *vv = bf(*vv);
                }
            }
            if (O->type == ZERO_OPTIMIZER_LAMB) {
                double step = lr * sqrt(1 - pow(O->b2, k)) / (1 - pow(O->b1, k));
                if (sp > 0 && su > 0) ratio = fmin(fmax(sqrt(sp) / sqrt(su), 0.01), 10.0);
                for (i = 0; i < SIZES[t]; i++) R->w[o + i] = bf(R->w[o + i] - step * ratio * u[o + i]);
            }
        }
    }
}

/* Whether x is a bf16 value (its low 16 bits zero). */
static int is_bf16(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    return (b & 0xFFFFu) == 0;
}

/* The engine's master against the reference: how many differ, and the
   largest difference in bf16 steps of the reference's value. Lion moves a
   weight by -lr sign(c): where the reference's c is within a relative 1e-4
   of zero the engine's fp32 c may have the other sign, so those weights
   (at most 2%) are left out. */
static void compare(const job *J, const ref *R, int *differ, double *steps, int *not16) {
    int64_t i;
    int near0 = 0;
    *differ = *not16 = 0;
    *steps = 0;
    for (i = 0; i < TOTAL; i++) {
        double d = fabs((double)J->w[i] - R->w[i]), ulp;
        int ex;
        if (!is_bf16(J->w[i])) ++*not16;
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

static void test_matrix(void) {
    static const int worlds[] = {1, 2, 3, 5};
    static job j, at0;
    static ref R;
    int k, wi, st, runs = 0;
    for (k = 0; k < NOPT; k++) {
        int worst_differ = 0;
        double worst_steps = 0;
        for (wi = 0; wi < 4; wi++) {
            int w = worlds[wi];
            for (st = 0; st <= 3; st++) {
                int differ, not16;
                double steps;
                memset(&j, 0, sizeof j);
                j.o = OPTS[k];
                j.stage = st;
                j.gas = 1;
                j.master16 = j.state16 = 1;
                run(&j, w);
                runs++;
                CHECKF(all_ok(&j, w), "%s world %d stage %d: %s", OPTS[k].name, w, st, j.msg[0]);
                if (!all_ok(&j, w)) continue;
                ref_run(&j, w, &R);
                compare(&j, &R, &differ, &steps, &not16);
                CHECKF(not16 == 0, "%s world %d stage %d: %d master values are not bf16", OPTS[k].name, w, st, not16);
                CHECKF(differ <= TOTAL * 3 / 100 && steps <= 4,
                       "%s world %d stage %d: %d of %d weights differ from the bf16 reference, by up to %.2f bf16 steps",
                       OPTS[k].name, w, st, differ, TOTAL, steps);
                if (differ > worst_differ) worst_differ = differ;
                if (steps > worst_steps) worst_steps = steps;
                if (st == 0) {
                    at0 = j;
                } else {
                    CHECKF(!memcmp(j.w, at0.w, sizeof j.w) && !memcmp(j.m, at0.m, sizeof j.m) && !memcmp(j.v, at0.v, sizeof j.v),
                           "%s world %d: stage %d differs from stage 0", OPTS[k].name, w, st);
                }
            }
        }
        printf("  %-13s bf16 master and state, stages 0-3 x world 1, 2, 3, 5: at most %d of %d weights off the "
               "float64 reference, by %.2f bf16 steps at most\n",
               OPTS[k].name, worst_differ, TOTAL, worst_steps);
    }
    CHECK(runs == NOPT * 16);
}

/* the same job with fp32 storage: its master is not bf16 (the test above
   would see it), and both kinds of storage train the weights */
static void test_fp32_differs(void) {
    static job a, b;
    int n16 = 0;
    int64_t i;
    memset(&a, 0, sizeof a);
    a.o = OPTS[0];
    a.stage = 1;
    a.gas = 1;
    b = a;
    b.master16 = b.state16 = 1;
    run(&a, 2);
    run(&b, 2);
    CHECK(all_ok(&a, 2) && all_ok(&b, 2));
    for (i = 0; i < TOTAL; i++) n16 += is_bf16(a.w[i]);
    CHECKF(n16 < TOTAL / 4, "the fp32 run's master: %d of %d values are bf16 values", n16, TOTAL);
    CHECK(memcmp(a.w, b.w, sizeof a.w) != 0);
    {
        int moved = 0, t;
        int64_t o = 0;
        for (t = 0; t < NT; o += SIZES[t++])
            for (i = 0; i < SIZES[t]; i++) moved += b.w[o + i] != (float)bf(zt_wave_at(&init_wave, t, i));
        CHECKF(moved > TOTAL * 9 / 10, "bf16 master: only %d of %d weights moved in six steps", moved, TOTAL);
    }
}

/* offload to the CPU (zero_offload_backend's SIMD paths) and to NVMe:
   bitwise the run without it; bf16 master with fp32 state too */
static void test_offload(void) {
    static job base, j;
    char dir[] = "/tmp/zero_bf16_nvme_XXXXXX", cmd[96];
    int k, st, mix;
    double simd_worst = 0;
    CHECK(mkdtemp(dir) != NULL);
    for (mix = 0; mix < 2; mix++)
        for (k = 0; k < NOPT; k++)
            for (st = 1; st <= 3; st++) {
                int nv, adam = OPTS[k].type <= ZERO_OPTIMIZER_ADAMW;
                memset(&base, 0, sizeof base);
                base.o = OPTS[k];
                base.stage = st;
                base.gas = st == 2 ? 2 : 1;
                base.master16 = 1;
                base.state16 = !mix;
                run(&base, 2);
                CHECKF(all_ok(&base, 2), "%s stage %d state%s: %s", OPTS[k].name, st, mix ? " fp32" : " bf16", base.msg[0]);
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
                           "%s stage %d gas %d state %s: offload to %s changed the weights or state (%s)", OPTS[k].name, st,
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
                           "%s stage %d state %s: the SIMD CPU Adam is %.3g off (max |w| %.3g)", OPTS[k].name, st,
                           mix ? "fp32" : "bf16", maxd, maxw);
                    if (maxw > 0 && maxd / maxw > simd_worst) simd_worst = maxd / maxw;
                }
                if (mix) { /* the state fp32, the master bf16 */
                    int64_t i;
                    int m16 = 0, s16 = 0;
                    for (i = 0; i < TOTAL; i++) m16 += is_bf16(base.w[i]), s16 += is_bf16(base.m[i]) && is_bf16(base.v[i]);
                    CHECKF(m16 == TOTAL, "%s stage %d: bf16 master with fp32 state: %d of %d master values bf16",
                           OPTS[k].name, st, m16, TOTAL);
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
static void test_checkpoint(void) {
    static job full, a, b;
    char dir[] = "/tmp/zero_bf16_ckpt_XXXXXX", path[128], cmd[96];
    int k;
    CHECK(mkdtemp(dir) != NULL);
    for (k = 0; k < NOPT; k++) {
        memset(&full, 0, sizeof full);
        full.o = OPTS[k];
        full.stage = 3;
        full.gas = 1;
        full.master16 = full.state16 = 1;
        run(&full, 2);
        snprintf(path, sizeof path, "%s/o%d", dir, k);
        a = full;
        a.stage = 2;
        a.save_dir = path;
        run(&a, 2);
        CHECKF(all_ok(&a, 2), "%s: save: %s", OPTS[k].name, a.msg[0]);
        b = full;
        b.load_dir = path;
        run(&b, 2);
        CHECKF(all_ok(&b, 2) && !memcmp(b.w, full.w, sizeof b.w) && !memcmp(b.m, full.m, sizeof b.m) &&
                   !memcmp(b.v, full.v, sizeof b.v),
               "%s: saved at stage 2 and loaded at stage 3 is not the run that never stopped (%s)", OPTS[k].name,
               b.msg[0]);
        /* an fp32 engine loads the bf16 checkpoint: its values are the saved bf16 ones */
        b = full;
        b.master16 = b.state16 = 0;
        b.load_dir = path;
        b.save_dir = NULL;
        run(&b, 2);
        CHECKF(all_ok(&b, 2), "%s: an fp32 engine loading a bf16 checkpoint: %s", OPTS[k].name, b.msg[0]);
    }
    /* a bf16 engine loads an fp32 checkpoint: the master rounded to bf16 */
    memset(&a, 0, sizeof a);
    a.o = OPTS[0];
    a.stage = 1;
    a.gas = 1;
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
        for (i = 0; i < TOTAL; i++) not16 += !is_bf16(b.w[i]);
        CHECKF(not16 == 0, "after loading an fp32 checkpoint, %d master values are not bf16", not16);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
}

static size_t planned(const zero_memory_stats *ms, zero_mem_category c) {
    return ms->planned[c][ZERO_MEM_DEVICE] + ms->planned[c][ZERO_MEM_PINNED] + ms->planned[c][ZERO_MEM_HOST];
}

/* the memory report: half the bytes of the fp32 run for what is bf16 */
static void test_memory(void) {
    static job a, b;
    int st, off, gas;
    for (st = 0; st <= 3; st++)
        for (off = 0; off < 2; off++)
            for (gas = 1; gas <= 2; gas++) {
                if (off && st == 0) continue;
                memset(&a, 0, sizeof a);
                a.o = OPTS[0];
                a.stage = st;
                a.gas = gas;
                a.offload = off;
                b = a;
                b.master16 = b.state16 = 1;
                run(&a, 2);
                run(&b, 2);
                CHECK(all_ok(&a, 2) && all_ok(&b, 2));
                CHECKF(planned(&b.ms, ZERO_MEM_OPTIM_STATE) * 2 == planned(&a.ms, ZERO_MEM_OPTIM_STATE) &&
                           planned(&a.ms, ZERO_MEM_OPTIM_STATE) > 0,
                       "stage %d offload %d gas %d: state %zu bytes in bf16, %zu in fp32", st, off, gas,
                       planned(&b.ms, ZERO_MEM_OPTIM_STATE), planned(&a.ms, ZERO_MEM_OPTIM_STATE));
                /* on the device the bf16 parameters are the master: none of its own; offloaded: half */
                CHECKF(off ? planned(&b.ms, ZERO_MEM_MASTER) * 2 == planned(&a.ms, ZERO_MEM_MASTER)
                           : planned(&b.ms, ZERO_MEM_MASTER) == 0,
                       "stage %d offload %d gas %d: master %zu bytes in bf16, %zu in fp32", st, off, gas,
                       planned(&b.ms, ZERO_MEM_MASTER), planned(&a.ms, ZERO_MEM_MASTER));
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
static void test_accum32(void) {
    static job a, b;
    int st, off;
    for (st = 1; st <= 3; st += 2)
        for (off = 0; off < 2; off++) {
            int64_t i, not16 = 0;
            memset(&a, 0, sizeof a);
            a.o = OPTS[1];
            a.stage = st;
            a.gas = 2;
            a.master16 = a.state16 = 1;
            a.acc32 = 1;
            a.offload = off;
            if (off) setenv("ZERO_NO_SIMD", "1", 1);
            run(&a, 2);
            unsetenv("ZERO_NO_SIMD");
            CHECKF(all_ok(&a, 2), "stage %d offload %d, fp32 accumulation: %s", st, off, a.msg[0]);
            CHECKF(a.ms.accum_dtype == ZERO_DTYPE_FP32, "stage %d offload %d: accumulation %s", st, off,
                   zero_dtype_name(a.ms.accum_dtype));
            for (i = 0; i < TOTAL; i++) not16 += !is_bf16(a.w[i]);
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
static void test_config(void) {
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
    zt_seed("test_bf16_master");
    printf("bf16 master weights and optimizer state on host ranks\n");
    test_config();
    test_matrix();
    test_fp32_differs();
    test_memory();
    test_offload();
    test_checkpoint();
    test_accum32();
    return zt_finish();
}
