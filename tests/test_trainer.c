/* test_trainer.c - a trainer shaped like an existing C program, on host
   ranks: a token embedding tied to the output head (its gradient written at
   the start and at the end of the backward), L layers of two per-kind
   tensors each (one group per layer), the program's own cosine schedule with
   warm-up (zero_set_lr), its own loss averaging over the ranks
   (zero_all_reduce_scalars) and its own outlier rule (zero_grad_norm, then
   zero_skip_step on a batch scaled to blow the norm up).
   Proves, at stages 0-3, worlds 1, 2 and 4, with and without gradient
   accumulation:
   - the tied embedding trains at every stage, with ZERO_TENSOR_GRAD_ANY_ORDER
     and without it: at stages 2-3 the engine finds it in the first
     micro-batch (a stand-in slot for the unit that found the ring full, a
     slot of its own for the embedding from then on), with the flagged run's
     losses and weights bitwise and its gradient memory after the first step;
   - every stage gives the losses and weights of stage 0 in the same world,
     bitwise with one micro-batch, within 1e-6 of max|w| with accumulation
     (stages 2-3 add reduced chunks where stages 0-1 reduce the sum);
   - every world gives the losses of one rank, within 1e-5 (the same samples,
     added in another order);
   - the outlier step is skipped in every run and the schedule continues;
   - per-rank memory (zero_memory_report) falls strictly from stage 1 to 2 to
     3 at world 4;
   - bad program memory refused at create, naming the tensor;
   - with the parameters (stages 0-2) and the gradients (zero_tensor.grad,
     every stage, no flag needed: any order) in the program's own stacked
     allocations, the same losses and weights bitwise, every rank's memory
     holding the updated weights, and less engine memory.

   Run alone: make test T=test_trainer */
#ifndef TRAINER_CUDA /* tests/gpu_trainer.cu includes this file for the CUDA backend */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid */
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

/* The program's view of memory: on host ranks it is the engine's (or its
   own) directly; gpu_trainer.cu defines these over device memory. */
static float *tr_param(zero_engine *e, int t) { return (float *)zero_param(e, t); }
static float *tr_grad(zero_engine *e, int t) { return (float *)zero_grad(e, t); }
static zero_result tr_ready(zero_engine *e, int t) { return zero_grad_ready(e, t); }
static float *tr_alloc(size_t n) { return (float *)malloc(sizeof(float) * n); }
static void tr_free(float *p) { free(p); }
static void tr_put(float *dst, const float *src, size_t n) { memcpy(dst, src, sizeof(float) * n); }
static void tr_get(float *dst, const float *src, size_t n) { memcpy(dst, src, sizeof(float) * n); }
#endif

enum { V = 32, C = 16, H = 24, L = 6, NT = 1 + 2 * L, B = 8 /* samples per step, all ranks */, STEPS = 10, OUTLIER = 6 };

typedef struct trainer {
    int stage, world, gas, flag, ext, gext;
    int groups;          /* the port's shape: zero_fetch_group / zero_release_group / zero_grad_ready_group per layer,
                            the program's own pointers read and written (ext and gext), no zero_param or zero_grad */
    int shard;           /* zero_optimization.mics_shard_size (0: flat) */
    int bucket;          /* zero_optimization.reduce_bucket_size (0: 500, several units per layer) */
    int persist;         /* zero_optimization.stage3_param_persistence_threshold (0: none persistent) */
    double loss[STEPS];  /* the averaged loss of each step (rank 0) */
    int applied[STEPS];
    float w[NT][V * C];  /* final master weights (rank 0) */
    size_t mem_total;    /* rank 0's planned bytes, every kind */
    size_t grads_end;    /* rank 0's planned gradient bytes (device) after training */
    int prog_equal;      /* ext: every rank's program memory equals the master weights at the end */
    /* ext 2 (stage 3, zero_alloc memory): rank 0's program parameter bytes backed after create, at the end, at
       most, and reserved; zero_param returned the program's own pointer for every tensor it was asked for */
    size_t backed_create, backed_end, backed_peak, reserved;
    int own_ptr;
    int direct, units;         /* units gathered straight into the program's memory, of all */
    int eval;                  /* a forward alone (an eval, a sampling forward) after each step: 1 on every rank, 2 on
                                  rank 0 alone between zero_gather_params and zero_release_params (every rank) */
    double esum[STEPS];        /* rank 0: what that forward read */
    int gather_misuse;         /* eval 2, stage 3: a gradient or a second gather inside the while was not refused */
    int keep;                  /* ext 2: 1 zero_gather_params before destroy, 2 not; then a second engine over the same
                                  memory (created and gathered) */
    int kept[4];               /* keep, per rank: its memory held the final weights after destroy, and again after the
                                  second engine's create and gather (1), or not (-1) */
    int64_t hits[STEPS];       /* rank 0's stage-3 fetches that found their unit gathered, per step */
    int derived;               /* stage 3: the pool's limits left unset (derived from the groups at create) */
    int hold;                  /* every tensor fetched for the whole micro-batch (beside the per-layer fetches) */
    zero_memory_stats s3;      /* rank 0's memory report after training */
    zero_result create_r, run_r;
    char err[1100];
} trainer;

static zero_tensor tensors[NT];
static char names[NT][16];

static int64_t numel_of(int t) { return t == 0 ? V * C : (t - 1) % 2 == 0 ? H * C : C * H; }

static void init_normal(void *user, int t, int64_t off, int64_t n, float *out) {
    int64_t i;
    (void)user;
    for (i = 0; i < n; i++) {
        uint64_t x = zt_mix64((uint64_t)t * 1000003u + (uint64_t)(off + i));
        out[i] = (float)(((double)(x >> 11) / 9007199254740992.0 - 0.5) * (t == 0 ? 0.5 : 0.4));
    }
}

static void make_tensors(int flag) {
    int t;
    memset(tensors, 0, sizeof tensors);
    for (t = 0; t < NT; t++) {
        if (t == 0) snprintf(names[t], sizeof names[t], "wte");
        else snprintf(names[t], sizeof names[t], "h.%d.%s", (t - 1) / 2, (t - 1) % 2 ? "w2" : "w1");
        tensors[t].name = names[t];
        tensors[t].numel = numel_of(t);
        tensors[t].group = t == 0 ? 0 : 1 + (t - 1) / 2; /* per-layer slices, one group per layer */
        tensors[t].init = init_normal;
        if (t == 0 && flag) tensors[t].flags = ZERO_TENSOR_GRAD_ANY_ORDER; /* tied: head and embedding */
    }
}

/* sample s of step k: token and target */
static void sample(int k, int s, int *tok, int *tgt) {
    uint64_t x = zt_mix64((uint64_t)k * 7919u + (uint64_t)s);
    *tok = (int)(x % V);
    *tgt = (*tok * 7 + 3) % V; /* something to learn */
}

/* The program's schedule: linear warm-up over 3 steps, then cosine to 10% */
static double cosine_lr(int step) {
    const double max_lr = 3e-2, min_lr = 3e-3;
    if (step < 3) return max_lr * (step + 1) / 3.0;
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + cos(3.141592653589793 * (step - 3) / (double)(STEPS - 3)));
}

/* One micro-batch: the samples [s0, s0 + n) of step k, forward and backward
   through the engine's buffers (fp32), layer by layer as a batched trainer
   goes. Adds the summed loss to *loss_sum. */
static float *tensor_in(float *all, int t);
static zero_result micro(zero_engine *e, int k, int s0, int n, double *loss_sum, const trainer *T, float *all, float *gall) {
    float x[B][L + 1][C], a[B][L][H], dx[B][C];
    int tok[B], tgt[B];
    float *p[NT], *g[NT];
    float S = (float)zero_loss_scale(e), scale = k == OUTLIER ? 1000.0f : 1.0f; /* the outlier batch */
    zero_result r;
    int t, i, l, s, j, v;
    /* stage 3 gathers what zero_fetch names (the others return at once): the
       embedding for the whole micro-batch, a layer while it computes */
    const int G = T->groups; /* (host memory only: the arithmetic reads the program's pointers) */
    for (t = 0; T->hold && t < NT; t++) /* every layer held for the whole micro-batch */
        if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
    if ((r = G ? zero_fetch_group(e, 0) : zero_fetch(e, 0)) != ZERO_OK) return r;
    if (!(p[0] = G ? tensor_in(all, 0) : tr_param(e, 0))) return zero_engine_error(e)->code;
    for (s = 0; s < n; s++) {
        sample(k, s0 + s, &tok[s], &tgt[s]);
        for (i = 0; i < C; i++) x[s][0][i] = p[0][tok[s] * C + i] * scale;
    }
    for (l = 0; l < L; l++) { /* forward: x_{l+1} = x_l + W2 tanh(W1 x_l) */
        if (G && (r = zero_fetch_group(e, 1 + l)) != ZERO_OK) return r;
        for (t = 1 + 2 * l; t <= 2 + 2 * l; t++)
            if (G) p[t] = tensor_in(all, t);
            else if ((r = zero_fetch(e, t)) != ZERO_OK || !(p[t] = tr_param(e, t)))
                return r ? r : zero_engine_error(e)->code;
        for (s = 0; s < n; s++) {
            const float *w1 = p[1 + 2 * l], *w2 = p[2 + 2 * l];
            for (j = 0; j < H; j++) {
                float acc = 0;
                for (i = 0; i < C; i++) acc += w1[j * C + i] * x[s][l][i];
                a[s][l][j] = tanhf(acc);
            }
            for (i = 0; i < C; i++) {
                float acc = x[s][l][i];
                for (j = 0; j < H; j++) acc += w2[i * H + j] * a[s][l][j];
                x[s][l + 1][i] = acc;
            }
        }
        if (G && (r = zero_release_group(e, 1 + l)) != ZERO_OK) return r;
        for (t = 1 + 2 * l; t <= 2 + 2 * l && !G; t++)
            if ((r = zero_release(e, t)) != ZERO_OK) return r;
    }
    /* the head (tied to the embedding): its gradient buffer is asked for at
       the start of the backward and handed over at the end */
    if (!(g[0] = G ? tensor_in(gall, 0) : tr_grad(e, 0))) return zero_engine_error(e)->code;
    for (s = 0; s < n; s++) {
        float logits[V];
        double mx = -1e30, z = 0;
        for (v = 0; v < V; v++) {
            float acc = 0;
            for (i = 0; i < C; i++) acc += p[0][v * C + i] * x[s][L][i];
            logits[v] = acc;
            if (acc > mx) mx = acc;
        }
        for (v = 0; v < V; v++) z += exp(logits[v] - mx);
        *loss_sum += -(logits[tgt[s]] - mx - log(z));
        for (i = 0; i < C; i++) dx[s][i] = 0;
        for (v = 0; v < V; v++) { /* d(loss * S / n): the engine averages over ranks and micro-batches */
            float d = ((float)(exp(logits[v] - mx) / z) - (v == tgt[s])) * S / (float)n;
            for (i = 0; i < C; i++) {
                g[0][v * C + i] += d * x[s][L][i];
                dx[s][i] += d * p[0][v * C + i];
            }
        }
    }
    for (l = L - 1; l >= 0; l--) { /* each layer's gradients handed over as soon as they are complete */
        const float *w1, *w2;
        float *gw1, *gw2;
        if (G && (r = zero_fetch_group(e, 1 + l)) != ZERO_OK) return r;
        for (t = 1 + 2 * l; t <= 2 + 2 * l; t++)
            if (G) p[t] = tensor_in(all, t);
            else if ((r = zero_fetch(e, t)) != ZERO_OK || !(p[t] = tr_param(e, t)))
                return r ? r : zero_engine_error(e)->code;
        w1 = p[1 + 2 * l], w2 = p[2 + 2 * l];
        gw1 = G ? tensor_in(gall, 1 + 2 * l) : tr_grad(e, 1 + 2 * l);
        gw2 = G ? tensor_in(gall, 2 + 2 * l) : tr_grad(e, 2 + 2 * l);
        if (!gw1 || !gw2) return zero_engine_error(e)->code;
        for (s = 0; s < n; s++) {
            float da[H];
            for (j = 0; j < H; j++) {
                float acc = 0;
                for (i = 0; i < C; i++) {
                    gw2[i * H + j] += dx[s][i] * a[s][l][j];
                    acc += w2[i * H + j] * dx[s][i];
                }
                da[j] = acc * (1 - a[s][l][j] * a[s][l][j]);
            }
            for (i = 0; i < C; i++) {
                float acc = dx[s][i];
                for (j = 0; j < H; j++) {
                    gw1[j * C + i] += da[j] * x[s][l][i];
                    acc += w1[j * C + i] * da[j];
                }
                dx[s][i] = acc;
            }
        }
        if (G) { /* the layer as one call each */
            if ((r = zero_grad_ready_group(e, 1 + l)) != ZERO_OK || (r = zero_release_group(e, 1 + l)) != ZERO_OK) return r;
            continue;
        }
        if ((r = tr_ready(e, 2 + 2 * l)) != ZERO_OK || (r = tr_ready(e, 1 + 2 * l)) != ZERO_OK) return r;
        for (t = 1 + 2 * l; t <= 2 + 2 * l; t++)
            if ((r = zero_release(e, t)) != ZERO_OK) return r;
    }
    for (s = 0; s < n; s++) /* the embedding: the end of the backward, into the head's buffer */
        for (i = 0; i < C; i++) g[0][tok[s] * C + i] += dx[s][i] * scale;
    if (G) r = zero_grad_ready_group(e, 0) != ZERO_OK ? zero_engine_error(e)->code : zero_release_group(e, 0);
    else r = tr_ready(e, 0) != ZERO_OK ? zero_engine_error(e)->code : zero_release(e, 0);
    for (t = 0; r == ZERO_OK && T->hold && t < NT; t++) r = zero_release(e, t);
    return r;
}

/* A forward alone, on every rank, between steps: the training forward's fetches and releases, the weights read
   (an eval or a sampling forward). At stage 3 it leaves the recorded fetch order standing. */
static zero_result eval_forward(zero_engine *e, double *sum) {
    zero_result r;
    int t, l;
    float *p;
    if ((r = zero_fetch(e, 0)) != ZERO_OK || !(p = tr_param(e, 0))) return r ? r : zero_engine_error(e)->code;
    *sum += p[0];
    for (l = 0; l < L; l++) {
        for (t = 1 + 2 * l; t <= 2 + 2 * l; t++) {
            if ((r = zero_fetch(e, t)) != ZERO_OK || !(p = tr_param(e, t))) return r ? r : zero_engine_error(e)->code;
            *sum += p[1];
        }
        for (t = 1 + 2 * l; t <= 2 + 2 * l; t++)
            if ((r = zero_release(e, t)) != ZERO_OK) return r;
    }
    return zero_release(e, 0);
}

/* The program's own parameter memory, as an existing trainer has it: one
   allocation, the embedding, then every layer's w1 stacked [L, H, C], then
   every layer's w2 stacked [L, C, H]. */
enum { OFF_W1 = V * C, OFF_W2 = OFF_W1 + L * H * C, ALL = OFF_W2 + L * C * H };
static float *tensor_in(float *all, int t) {
    return t == 0 ? all : (t - 1) % 2 == 0 ? all + OFF_W1 + (t - 1) / 2 * H * C : all + OFF_W2 + (t - 1) / 2 * C * H;
}

/* One rank of a training run. */
static zero_result trainer_rank(const zero_backend *b, void *arg) {
    trainer *T = (trainer *)arg;
    zero_config cfg = zero_config_default();
    zero_tensor ts[NT];
    float *all = NULL, *gall = NULL;
    static float fin[4][ALL]; /* keep: each rank's copy of the final weights, in the program's layout */
    zero_engine *e;
    zero_error err;
    zero_result r = ZERO_OK;
    int k, m, per_micro = B / (T->world * T->gas), t;
    double norm_mean = 0;
    cfg.train_micro_batch_size_per_gpu = per_micro;
    cfg.gradient_accumulation_steps = T->gas;
    cfg.zero_optimization.stage = T->stage;
    if (T->shard) cfg.zero_optimization.mics_shard_size = T->shard;
    cfg.zero_optimization.reduce_bucket_size = T->bucket ? T->bucket : 500; /* several units per layer */
    cfg.zero_optimization.stage3_param_persistence_threshold = T->persist;
    if (T->persist) cfg.zero_optimization.stage3_model_persistence_threshold = 1200; /* the first three layer tensors */
    if (!T->derived) {
        cfg.zero_optimization.stage3_max_live_parameters = 1000; /* the gather pool: about two layers */
        cfg.zero_optimization.stage3_prefetch_bucket_size = 400;
    }
    cfg.gradient_clipping = 0; /* the program's outlier rule instead */
    cfg.optimizer.weight_decay = 0.01;
    cfg.log.level = ZERO_LOG_WARN;
    memcpy(ts, tensors, sizeof ts);
    if (T->ext) { /* the weights in the program's allocation; the other ranks' differ: create takes rank 0's */
        if (T->ext == 2) { /* stage 3 keeps the program's pointers: zero_alloc where the program allocated */
            if (zero_alloc(b, sizeof(float) * ALL, (void **)&all, &err) != ZERO_OK) {
                if (b->rank == 0) snprintf(T->err, sizeof T->err, "%s", err.msg);
                T->create_r = err.code;
                return ZERO_OK;
            }
        } else if (!(all = tr_alloc(ALL))) {
            return ZERO_ERR_OUT_OF_MEMORY;
        }
        for (t = 0; t < NT; t++) {
            float w[V * C > H * C ? V * C : H * C];
            int64_t i;
            init_normal(NULL, t, 0, numel_of(t), w);
            if (b->rank > 0)
                for (i = 0; i < numel_of(t); i++) w[i] += 1.0f;
            tr_put(tensor_in(all, t), w, (size_t)numel_of(t));
            ts[t].data = tensor_in(all, t);
            ts[t].init = NULL;
        }
    }
    if (T->gext) { /* the gradients in the program's allocation, stacked like the parameters */
        if (!(gall = tr_alloc(ALL))) return ZERO_ERR_OUT_OF_MEMORY;
        for (t = 0; t < NT; t++) ts[t].grad = tensor_in(gall, t);
    }
    if ((r = zero_config_resolve(&cfg, b->world, &err)) != ZERO_OK ||
        (r = zero_engine_create(&e, &cfg, ts, NT, b, &err)) != ZERO_OK) {
        if (b->rank == 0) {
            T->create_r = r;
            snprintf(T->err, sizeof T->err, "%s", err.msg);
        }
        if (T->ext == 2) zero_free(b, all);
        else tr_free(all);
        tr_free(gall);
        return ZERO_OK;
    }
    if (b->rank == 0) {
        zero_memory_stats ms;
        if (zero_memory_report(e, &ms) == ZERO_OK) {
            for (t = 0; t < ZERO_MEM_KIND_COUNT; t++) T->mem_total += ms.planned_total[t];
            T->backed_create = ms.program_backed;
            T->reserved = ms.program_reserved;
            T->direct = ms.program_direct_units;
            T->units = ms.program_units;
        }
        T->own_ptr = 1;
    }
    for (k = 0; k < STEPS && r == ZERO_OK; k++) {
        double loss = 0, norm;
        zero_step_info info;
        if ((r = zero_set_lr(e, cosine_lr(k))) != ZERO_OK) break;
        for (m = 0; m < T->gas && r == ZERO_OK; m++) /* this rank's samples: a contiguous share of the step's */
            r = micro(e, k, (b->rank * T->gas + m) * per_micro, per_micro, &loss, T, all, gall);
        if (r != ZERO_OK) break;
        loss /= per_micro * T->gas;
        if ((r = zero_all_reduce_scalars(e, &loss, 1, ZERO_OP_AVG)) != ZERO_OK) break; /* the program's loss average */
        if ((r = zero_grad_norm(e, &norm)) != ZERO_OK) break;
        if (k > 0 && norm > 10 * norm_mean) { /* the outlier rule */
            r = zero_skip_step(e, &info);
        } else {
            r = zero_step(e, &info);
            norm_mean = k == 0 ? norm : 0.8 * norm_mean + 0.2 * norm;
        }
        if (b->rank == 0) {
            T->loss[k] = loss;
            T->applied[k] = info.applied;
            T->hits[k] = info.fetch_hits;
        }
        if (T->eval && r == ZERO_OK) {
            double sum = 0;
            if (T->eval == 2) { /* DeepSpeed's GatheredParameters: every rank gathers, rank 0 alone runs the forward */
                if ((r = zero_gather_params(e)) == ZERO_OK && b->rank == 0) {
                    r = eval_forward(e, &sum);
                    if (r == ZERO_OK && T->stage == 3 &&
                        (zero_grad(e, 1) != NULL || zero_engine_error(e)->item != ZERO_MSG_ENGINE_GATHERED ||
                         zero_gather_params(e) != ZERO_ERR_STATE || zero_engine_error(e)->item != ZERO_MSG_ENGINE_GATHERED))
                        T->gather_misuse = 1;
                }
                if (r == ZERO_OK) r = zero_release_params(e);
            } else {
                r = eval_forward(e, &sum);
            }
            if (b->rank == 0) T->esum[k] = sum;
        }
        if (T->ext == 2 && r == ZERO_OK && k == 1) /* between steps, every rank: zero_param gives the program's pointers */
            for (t = 0; t < NT; t++)
                if (zero_fetch(e, t) != ZERO_OK || zero_param(e, t) != (void *)tensor_in(all, t) ||
                    zero_release(e, t) != ZERO_OK)
                    T->own_ptr = 0;
    }
    if (r != ZERO_OK && b->rank == 0) {
        T->run_r = r;
        snprintf(T->err, sizeof T->err, "%s", zero_engine_error(e)->msg);
    }
    if (b->rank == 0) T->prog_equal = 1;
    for (t = 0; t < NT && r == ZERO_OK; t++) {
        float w[V * C];
        if (zero_read_state(e, t, ZERO_STATE_MASTER, 0, numel_of(t), w) != ZERO_OK) break;
        if (b->rank == 0) memcpy(T->w[t], w, sizeof(float) * (size_t)numel_of(t));
        if (T->keep) memcpy(tensor_in(fin[b->rank], t), w, sizeof(float) * (size_t)numel_of(t));
        /* every rank's own memory holds the updated weights (fp32: the master exactly) */
        if (all && T->ext == 1) {
            float mine[V * C];
            tr_get(mine, tensor_in(all, t), (size_t)numel_of(t));
            if (memcmp(mine, w, sizeof(float) * (size_t)numel_of(t)) != 0) T->prog_equal = 0;
        }
    }
    if (b->rank == 0) {
        zero_memory_stats ms;
        if (zero_memory_report(e, &ms) == ZERO_OK) {
            T->grads_end = ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE];
            T->backed_end = ms.program_backed;
            T->backed_peak = ms.program_backed_peak;
            T->s3 = ms;
        }
    }
    if (T->keep) { /* the trained weights stay in the program's memory, which another engine may take */
        static float mine[4][ALL];
        int ok = T->keep == 2 || zero_gather_params(e) == ZERO_OK, again;
        zero_engine_destroy(e);
        for (again = 0; again < 2; again++) { /* (every rank makes the same calls, whatever it found) */
            tr_get(mine[b->rank], all, ALL); /* (unbacked pages would fault here: destroy backs them again) */
            if (T->keep == 1 && memcmp(mine[b->rank], fin[b->rank], sizeof(float) * ALL) != 0) ok = 0;
            if (again == 0) {
                if (zero_engine_create(&e, &cfg, ts, NT, b, &err) != ZERO_OK) {
                    ok = 0;
                    break;
                }
                if (zero_gather_params(e) != ZERO_OK) ok = 0;
                zero_engine_destroy(e);
            }
        }
        T->kept[b->rank] = ok ? 1 : -1;
    } else {
        zero_engine_destroy(e);
    }
    if (T->ext == 2) zero_free(b, all);
    else tr_free(all);
    tr_free(gall);
    return ZERO_OK;
}

#ifndef TRAINER_CUDA
/* Bad program memory is refused at create, naming the tensor and why. */
typedef struct refuse_job {
    int stage, how;
    zero_result r;
    char msg[1100];
} refuse_job;

static zero_result refuse_rank(const zero_backend *b, void *arg) {
    refuse_job *J = (refuse_job *)arg;
    static float mem[4][ALL + 1];
    zero_config cfg = zero_config_default();
    zero_tensor ts[NT];
    zero_engine *e = NULL;
    zero_error err;
    float *all = mem[b->rank];
    int t;
    memcpy(ts, tensors, sizeof ts);
    for (t = 0; t < NT; t++) ts[t].data = tensor_in(all, t);
    if (J->how == 0) ts[3].data = NULL;                                /* some tensors without */
    if (J->how == 1) ts[2].data = (char *)ts[1].data + 4 * (H * C - 8); /* overlaps its neighbour */
    if (J->how == 2) ts[1].data = (char *)ts[1].data + 2;              /* not aligned to fp32 */
    if (J->how == 4) { /* gradients in the program's memory for some trainable tensors only */
        for (t = 0; t < NT; t++) ts[t].data = NULL, ts[t].grad = t == 2 ? NULL : tensor_in(all, t);
    }
    if (J->how == 5) ts[4].grad = ts[4].data; /* a gradient on its own weights (each kind alone is fine) */
    if (J->how == 5)
        for (t = 0; t < NT; t++)
            if (t != 4) ts[t].grad = (char *)mem[(b->rank + 2) % 4] + ((char *)ts[t].data - (char *)all);
    cfg.train_micro_batch_size_per_gpu = 1;
    cfg.zero_optimization.stage = J->stage;
    cfg.log.level = ZERO_LOG_ERROR; /* the refusals are expected */
    if (zero_config_resolve(&cfg, b->world, &err) != ZERO_OK) return err.code;
    {
        zero_result r = zero_engine_create(&e, &cfg, ts, NT, b, &err);
        if (r == ZERO_OK) zero_engine_destroy(e);
        if (b->rank == 0) {
            J->r = r;
            if (r != ZERO_OK) snprintf(J->msg, sizeof J->msg, "%s", err.msg);
        }
    }
    return ZERO_OK;
}

static void test_refused(void) {
    static refuse_job J;
    const char *want[6] = {"'h.1.w1' has no data", "overlap in the program's memory", "is not aligned", "points at memory zero_alloc did not give",
                           "'h.0.w2' has no grad", "a gradient written or cleared there would change the weights"};
    int how;
    zero_error err;
    make_tensors(1);
    for (how = 0; how < 6; how++) {
        memset(&J, 0, sizeof J);
        J.how = how;
        J.stage = how == 3 ? 3 : 1;
        CHECK(zero_host_run(2, refuse_rank, &J, &err) == ZERO_OK);
        CHECKF(J.r != ZERO_OK, "case %d created", how);
        CHECKF(strstr(J.msg, want[how]) != NULL, "case %d: \"%s\" lacks \"%s\"", how, J.msg, want[how]);
        if (how == 3) CHECK_STR_CONTAINS(J.msg, "HINT: allocate the parameters with zero_alloc(backend, bytes, &ptr, &err)");
    }
}

/* The host backend's vm_ operations refuse what the CUDA backend refuses (tests/gpu_vm.cu): a granule backed
   twice, one unbacked while unbacked, a run off the granules or outside a range; a range reserved unbacked (the
   derived stage-3 pool's) has no accessible page until vm_back. */
static zero_result host_vm_rank(const zero_backend *b, void *arg) {
    zero_error err;
    void *base = NULL;
    size_t res = 0, g = 0;
    char *p;
    (void)arg;
    CHECK(b->vm_reserve && b->vm_back && b->vm_unback && b->vm_release);
    /* a backed range (zero_alloc's): every page readable at once, a second vm_back refused */
    CHECKF(b->vm_reserve(b->ctx, 1, 1, &base, &res, &g, &err) == ZERO_OK, "%s", err.msg);
    if (!base) return ZERO_ERR_STATE;
    CHECK(((char *)base)[0] == 0 && res == g && g >= 4096);
    CHECKF(b->vm_back(b->ctx, base, g, &err) == ZERO_ERR_INVALID_ARG && strstr(err.msg, "backed already"), "%s", err.msg);
    b->vm_release(b->ctx, base, res);
    /* unbacked (the derived pool's) */
    CHECKF(b->vm_reserve(b->ctx, 3 * g + 1, 0, &base, &res, &g, &err) == ZERO_OK, "%s", err.msg);
    if (!base) return ZERO_ERR_STATE;
    p = (char *)base;
    CHECK(res == 4 * g);
    CHECKF(b->vm_unback(b->ctx, p, g, &err) == ZERO_ERR_INVALID_ARG && strstr(err.msg, "not backed"), "%s", err.msg);
    CHECKF(b->vm_back(b->ctx, p + g, 2 * g, &err) == ZERO_OK, "%s", err.msg);
    memset(p + g, 7, 2 * g); /* backed: writable */
    CHECKF(b->vm_back(b->ctx, p + 2 * g, 2 * g, &err) == ZERO_ERR_INVALID_ARG && strstr(err.msg, "backed already"),
           "%s", err.msg);
    CHECK(p[2 * g] == 7); /* a refused call changes nothing */
    CHECKF(b->vm_back(b->ctx, p + 3 * g, g, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(b->vm_unback(b->ctx, p + g, g + 1, &err) == ZERO_ERR_INVALID_ARG && strstr(err.msg, "whole granules"), "%s",
           err.msg);
    CHECKF(b->vm_back(b->ctx, p + 3 * g, 2 * g, &err) == ZERO_ERR_INVALID_ARG && strstr(err.msg, "not inside"), "%s",
           err.msg);
    CHECKF(b->vm_unback(b->ctx, p + g, 3 * g, &err) == ZERO_OK, "%s", err.msg);
    CHECKF(b->vm_back(b->ctx, p, 4 * g, &err) == ZERO_OK, "%s", err.msg);
    CHECK(p[0] == 0 && p[2 * g] == 0); /* backed again: zero */
    b->vm_release(b->ctx, base, res);
    return ZERO_OK;
}

static void test_host_vm(void) {
    zero_error err;
    CHECKF(zero_host_run(1, host_vm_rank, NULL, &err) == ZERO_OK, "%s", err.msg);
}

/* Stage 3 with the parameters in zero_alloc memory: a layer not fetched is not there to read. A child process
   reads h.1.w1 (not persistent: the threshold is 0) right after create: it must fault, not read stale values;
   a fetched layer reads its weights; an engine over memory zero_alloc did not give is refused (test_refused). */
static volatile float fault_sink;
static zero_result fault_rank(const zero_backend *b, void *arg) {
    int *stage_read = (int *)arg; /* 0: read unfetched, 1: read fetched */
    zero_config cfg = zero_config_default();
    zero_tensor ts[NT];
    zero_engine *e;
    zero_error err;
    float *all;
    int t;
    memcpy(ts, tensors, sizeof ts);
    if (zero_alloc(b, sizeof(float) * ALL, (void **)&all, &err) != ZERO_OK) return err.code;
    for (t = 0; t < NT; t++) {
        init_normal(NULL, t, 0, numel_of(t), tensor_in(all, t));
        ts[t].data = tensor_in(all, t);
        ts[t].init = NULL;
    }
    cfg.train_micro_batch_size_per_gpu = 1;
    cfg.zero_optimization.stage = 3;
    cfg.zero_optimization.reduce_bucket_size = 500;
    cfg.zero_optimization.stage3_param_persistence_threshold = 0;
    cfg.log.level = ZERO_LOG_ERROR;
    if (zero_config_resolve(&cfg, b->world, &err) != ZERO_OK || zero_engine_create(&e, &cfg, ts, NT, b, &err) != ZERO_OK)
        return err.code;
    if (*stage_read == 1) {
        float w[H * C];
        if (zero_fetch(e, 3) != ZERO_OK) return ZERO_ERR_STATE;
        init_normal(NULL, 3, 0, numel_of(3), w);
        if (memcmp(w, tensor_in(all, 3), sizeof(float) * (size_t)numel_of(3)) != 0) return ZERO_ERR_CORRUPT;
        if (zero_release(e, 3) != ZERO_OK) return ZERO_ERR_STATE;
        /* a group no tensor has: refused, naming the groups there are */
        if (zero_fetch_group(e, 99) != ZERO_ERR_INVALID_ARG ||
            !strstr(zero_engine_error(e)->msg, "zero_fetch_group(99): no tensor has group 99 (the tensors' groups run from 0 "
                                               "to 6)") ||
            zero_grad_ready_group(e, -1) != ZERO_ERR_INVALID_ARG)
            return ZERO_ERR_STATE;
    } else {
        if (!freopen("/dev/null", "w", stderr)) return ZERO_ERR_IO; /* (a sanitizer's report of the fault is expected) */
        fault_sink = tensor_in(all, 3)[5]; /* not fetched: unbacked */
    }
    zero_engine_destroy(e);
    zero_free(b, all);
    return ZERO_OK;
}

static void test_unfetched_faults(void) {
    int how;
    make_tensors(1);
    for (how = 0; how <= 1; how++) {
        pid_t pid = fork();
        if (pid == 0) {
            zero_error err;
            zero_result r = zero_host_run(1, fault_rank, &how, &err);
            _exit(r == ZERO_OK ? 0 : 3);
        } else {
            int status = 0;
            CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
            if (how == 0) /* a signal, or the sanitizer's report of one (it exits non-zero) */
                CHECKF(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "a read of an unfetched layer returned (status %d)",
                       status);
            else
                CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a fetched layer in zero_alloc memory: status %d",
                       status);
        }
    }
}

static void train_mem(trainer *T, int stage, int world, int gas, int flag, int ext, int gext) {
    zero_error err;
    memset(T, 0, sizeof *T);
    T->stage = stage, T->world = world, T->gas = gas, T->flag = flag, T->ext = ext, T->gext = gext;
    make_tensors(flag);
    CHECKF(zero_host_run(world, trainer_rank, T, &err) == ZERO_OK, "host run: %s", err.msg);
}

static void train(trainer *T, int stage, int world, int gas, int flag) { train_mem(T, stage, world, gas, flag, 0, 0); }

#endif

static double max_abs(const trainer *T) {
    double mx = 0;
    int t, i;
    for (t = 0; t < NT; t++)
        for (i = 0; i < numel_of(t); i++) mx = fmax(mx, fabs((double)T->w[t][i]));
    return mx;
}

static double max_diff(const trainer *A, const trainer *X) {
    double d = 0;
    int t, i;
    for (t = 0; t < NT; t++)
        for (i = 0; i < numel_of(t); i++) d = fmax(d, fabs((double)A->w[t][i] - (double)X->w[t][i]));
    return d;
}

#ifndef TRAINER_CUDA
int main(void) {
    static trainer one, ref, T;
    const int worlds[3] = {1, 2, 4};
    int wi, stage, gas, k, world, ext;
    size_t mem[4] = {0, 0, 0, 0}, mem_ext[3] = {0, 0, 0}, mem_grad[4] = {0, 0, 0, 0}, mem_alloc[2] = {0, 0};
    zt_seed("test_trainer");
    test_refused();
    test_host_vm();
    test_unfetched_faults();
    train(&one, 0, 1, 1, 1); /* one rank, stage 0: the reference */
    CHECKF(one.create_r == ZERO_OK && one.run_r == ZERO_OK, "reference run: %s", one.err);
    CHECKF(one.loss[STEPS - 1] < one.loss[0], "the loss falls: %g -> %g", one.loss[0], one.loss[STEPS - 1]);
    for (k = 0; k < STEPS; k++) CHECKF(one.applied[k] == (k != OUTLIER), "step %d applied %d", k, one.applied[k]);
    for (wi = 0; wi < 3; wi++)
        for (gas = 1; gas <= 2; gas++) {
            int world = worlds[wi];
            if (B / (world * gas) < 1) continue;
            train(&ref, 0, world, gas, 1);
            for (stage = 0; stage <= 3; stage++) {
                const trainer *X = &ref;
                double d, mw = max_abs(&ref);
                if (stage > 0) {
                    train(&T, stage, world, gas, 1);
                    X = &T;
                }
                CHECKF(X->create_r == ZERO_OK && X->run_r == ZERO_OK, "stage %d world %d gas %d: %s", stage, world, gas, X->err);
                if (world == 4 && gas == 1) mem[stage] = X->mem_total;
                for (k = 0; k < STEPS; k++) {
                    CHECKF(X->applied[k] == (k != OUTLIER), "stage %d world %d gas %d: step %d applied %d", stage, world, gas,
                           k, X->applied[k]);
                    /* the same samples as one rank: the loss within the summation order's rounding */
                    CHECKF(fabs(X->loss[k] - one.loss[k]) <= 1e-5 * fabs(one.loss[k]),
                           "stage %d world %d gas %d step %d: loss %.9g, one rank %.9g", stage, world, gas, k, X->loss[k],
                           one.loss[k]);
                }
                d = max_diff(&ref, X);
                if (gas == 1) /* stages agree bitwise in one world without accumulation */
                    CHECKF(d == 0, "stage %d world %d: weights differ from stage 0 by %.3g", stage, world, d);
                else
                    CHECKF(d <= 1e-6 * mw, "stage %d world %d gas %d: %.3g from stage 0 (max|w| %.3g)", stage, world, gas, d,
                           mw);
                CHECKF(max_diff(&one, X) <= 1e-4 * max_abs(&one), "stage %d world %d gas %d: %.3g from one rank", stage,
                       world, gas, max_diff(&one, X));
                if (stage == 3) { /* the pool's limits left unset: derived from the groups (the three largest and
                                     one more: 4 layers of 2 x H x C, of a model of 6 layers and the embedding), the
                                     same weights and losses, the parameter bytes within their bound, in engine
                                     memory and in zero_alloc memory (where the pool only counts) */
                    static trainer Dv;
                    int ext, hold;
                    for (ext = 0; ext <= 2; ext += 2)
                        for (hold = 0; hold <= 1; hold++) {
                        const zero_memory_stats *m = &Dv.s3;
                        int64_t layer = 2 * H * C, model = V * C + L * layer;
                        memset(&Dv, 0, sizeof Dv);
                        Dv.stage = 3, Dv.world = world, Dv.gas = gas, Dv.flag = 1, Dv.ext = ext, Dv.derived = 1;
                        Dv.hold = hold; /* the program holds the whole model: the derived pool grows, no fetch fails */
                        make_tensors(1);
                        CHECK(zero_host_run(world, trainer_rank, &Dv, NULL) == ZERO_OK);
                        CHECKF(Dv.create_r == ZERO_OK && Dv.run_r == ZERO_OK, "derived pool, world %d gas %d ext %d: %s",
                               world, gas, ext, Dv.err);
                        CHECKF(max_diff(X, &Dv) == 0 && memcmp(X->loss, Dv.loss, sizeof Dv.loss) == 0,
                               "derived pool, world %d gas %d ext %d: %.3g from DeepSpeed's keys' run", world, gas, ext,
                               max_diff(X, &Dv));
                        CHECKF(hold ? m->stage3_pool_elems >= m->stage3_max_live + m->stage3_group_max
                                    : m->stage3_pool_elems == m->stage3_max_live,
                               "derived pool, world %d ext %d hold %d: the pool %lld elements, planned %lld", world, ext,
                               hold, (long long)m->stage3_pool_elems, (long long)m->stage3_max_live);
                        if (hold) continue; /* (the bound is create's plan) */
                        CHECKF(m->stage3_derived == 3 && m->stage3_group_max >= layer &&
                                   m->stage3_group_max <= layer + 2 * 8 * world && m->stage3_prefetch == m->stage3_group_max &&
                                   m->stage3_max_live == 4 * m->stage3_group_max,
                               "derived pool, world %d ext %d: derived %d, group %lld (a layer %lld), prefetch %lld, max_live "
                               "%lld", world, ext, m->stage3_derived, (long long)m->stage3_group_max, (long long)layer,
                               (long long)m->stage3_prefetch, (long long)m->stage3_max_live);
                                /* the bound, computed here: the shard, four layers (and their padding), the granule */
                        CHECKF(m->stage3_param_bytes <= m->stage3_param_bound &&
                                   m->stage3_param_bound <= sizeof(float) * (size_t)((model + world - 1) / world + 64 * world +
                                                                                     4 * (layer + 16 * world)) +
                                                                (size_t)sysconf(_SC_PAGESIZE) &&
                                   m->stage3_param_bytes < sizeof(float) * (size_t)((model + world - 1) / world + model),
                               "derived pool, world %d ext %d: %zu parameter bytes, bound %zu, the model %zu (DeepSpeed's "
                               "1e9 pools all of it beside the shard)", world, ext, m->stage3_param_bytes,
                               m->stage3_param_bound, sizeof(float) * (size_t)model);
                    }
                }
                if (stage == 3) { /* the program's stacked allocation from zero_alloc: its pointers kept, its pages
                                     backed while gathered; with the gradients in the program's memory too */
                    static trainer P3;
                    int gx;
                    for (gx = 0; gx <= 1; gx++) {
                        train_mem(&P3, 3, world, gas, !gx, 2, gx);
                        CHECKF(P3.create_r == ZERO_OK && P3.run_r == ZERO_OK, "zero_alloc, stage 3 world %d gas %d grad %d: %s",
                               world, gas, gx, P3.err);
                        CHECKF(max_diff(X, &P3) == 0 && memcmp(X->loss, P3.loss, sizeof P3.loss) == 0,
                               "zero_alloc, stage 3 world %d gas %d grad %d: %.3g from the engine's memory", world, gas, gx,
                               max_diff(X, &P3));
                        CHECKF(P3.own_ptr, "zero_alloc, stage 3 world %d: zero_param is not the program's pointer", world);
                        /* each unit is one layer's tensor: gathered straight into the program's memory, no pool */
                        CHECKF(P3.direct == P3.units && P3.units > 0, "zero_alloc, stage 3 world %d: %d of %d units direct",
                               world, P3.direct, P3.units);
                        if (world == 4 && gas == 1) mem_alloc[gx] = P3.mem_total;
                        if (gas == 1 && !gx) { /* the trained weights kept in the program's memory past destroy */
                            static trainer K3;
                            int keep;
                            for (keep = 2; keep >= 1; keep--) { /* 2: destroyed without a gather, the pages backed again */
                            memset(&K3, 0, sizeof K3);
                            K3.keep = keep;
                            K3.stage = 3, K3.world = world, K3.gas = 1, K3.flag = 1, K3.ext = 2;
                            make_tensors(1);
                            CHECKF(zero_host_run(world, trainer_rank, &K3, NULL) == ZERO_OK, "host run");
                            int rk, kept = 1;
                            for (rk = 0; rk < world; rk++) kept &= K3.kept[rk] == 1;
                            CHECKF(K3.run_r == ZERO_OK && kept && max_diff(&P3, &K3) == 0,
                                   "zero_alloc, stage 3 world %d: after zero_gather_params and destroy the program's memory "
                                   "does not hold the final weights on every rank, or a second engine over it failed "
                                   "(keep %d: %s)", world, keep, K3.err);
                            }
                        }
                        if (gas == 1 && world > 1 && !gx) {
                            /* units of two tensors (a layer's w1 and w2, apart in the stacked allocation): through the
                               pool and a copy, still the weights of the engine's own memory */
                            static trainer Q, Q3;
                            memset(&Q, 0, sizeof Q);
                            Q.bucket = 1000;
                            Q.stage = 3, Q.world = world, Q.gas = 1, Q.flag = 1;
                            make_tensors(1);
                            CHECKF(zero_host_run(world, trainer_rank, &Q, NULL) == ZERO_OK, "host run");
                            memset(&Q3, 0, sizeof Q3);
                            Q3.bucket = 1000;
                            Q3.stage = 3, Q3.world = world, Q3.gas = 1, Q3.flag = 1, Q3.ext = 2;
                            CHECKF(zero_host_run(world, trainer_rank, &Q3, NULL) == ZERO_OK, "host run");
                            CHECKF(Q.run_r == ZERO_OK && Q3.run_r == ZERO_OK && Q3.own_ptr, "bucket 1000, world %d: %s %s",
                                   world, Q.err, Q3.err);
                            CHECKF(Q3.direct < Q3.units, "bucket 1000, world %d: %d of %d units direct", world, Q3.direct,
                                   Q3.units);
                            CHECKF(max_diff(&Q, &Q3) == 0 && memcmp(Q.loss, Q3.loss, sizeof Q.loss) == 0,
                                   "bucket 1000, world %d: zero_alloc memory %.3g from the engine's", world,
                                   max_diff(&Q, &Q3));
                        }
                        /* nothing persistent here: no page backed between steps; some while layers were gathered */
                        CHECKF(P3.backed_create == 0 && P3.backed_end == 0 && P3.backed_peak > 0 &&
                                   P3.backed_peak <= P3.reserved,
                               "zero_alloc, stage 3 world %d gas %d: backed %zu after create, %zu at the end, %zu at most "
                               "of %zu", world, gas, P3.backed_create, P3.backed_end, P3.backed_peak, P3.reserved);
                    }
                }
                if (stage <= 2) { /* the same run with the parameters in the program's stacked allocation */
                    static trainer P;
                    train_mem(&P, stage, world, gas, 1, 1, 0);
                    CHECKF(P.create_r == ZERO_OK && P.run_r == ZERO_OK, "program memory, stage %d world %d gas %d: %s",
                           stage, world, gas, P.err);
                    CHECKF(max_diff(X, &P) == 0 && memcmp(X->loss, P.loss, sizeof P.loss) == 0,
                           "program memory, stage %d world %d gas %d: %.3g from the engine's memory", stage, world, gas,
                           max_diff(X, &P));
                    CHECKF(P.prog_equal, "program memory, stage %d world %d gas %d: a rank's memory differs from the master",
                           stage, world, gas);
                    if (world == 4 && gas == 1) mem_ext[stage] = P.mem_total;
                }
                { /* the port's shape: the program's pointers for weights and gradients, one call per layer */
                    static trainer Gr;
                    memset(&Gr, 0, sizeof Gr);
                    Gr.groups = 1;
                    Gr.stage = stage, Gr.world = world, Gr.gas = gas, Gr.flag = 0, Gr.ext = stage <= 2 ? 1 : 2, Gr.gext = 1;
                    make_tensors(0);
                    {
                        zero_error err;
                        CHECKF(zero_host_run(world, trainer_rank, &Gr, &err) == ZERO_OK, "host run: %s", err.msg);
                    }
                    CHECKF(Gr.create_r == ZERO_OK && Gr.run_r == ZERO_OK, "groups, stage %d world %d gas %d: %s", stage,
                           world, gas, Gr.err);
                    CHECKF(max_diff(X, &Gr) == 0 && memcmp(X->loss, Gr.loss, sizeof Gr.loss) == 0,
                           "groups, stage %d world %d gas %d: %.3g from the per-tensor run", stage, world, gas,
                           max_diff(X, &Gr));
                }
                { /* the gradients in the program's memory too (and the parameters where allowed), no flag: any order */
                    static trainer Q;
                    train_mem(&Q, stage, world, gas, 0, stage <= 2, 1);
                    CHECKF(Q.create_r == ZERO_OK && Q.run_r == ZERO_OK, "program gradients, stage %d world %d gas %d: %s",
                           stage, world, gas, Q.err);
                    CHECKF(max_diff(X, &Q) == 0 && memcmp(X->loss, Q.loss, sizeof Q.loss) == 0,
                           "program gradients, stage %d world %d gas %d: %.3g from the engine's memory", stage, world, gas,
                           max_diff(X, &Q));
                    if (world == 4 && gas == 1) mem_grad[stage] = Q.mem_total;
                }
            }
        }
    CHECKF(mem[1] > mem[2] && mem[2] > mem[3], "world 4 memory per rank: stage 1 %zu, 2 %zu, 3 %zu bytes", mem[1], mem[2],
           mem[3]);
    printf("test_trainer: world 4 bytes per rank: stage 0 %zu, 1 %zu, 2 %zu, 3 %zu\n", mem[0], mem[1], mem[2], mem[3]);
    printf("test_trainer: world 4 bytes per rank with the parameters in the program's memory: stage 0 %zu, 1 %zu, 2 %zu\n",
           mem_ext[0], mem_ext[1], mem_ext[2]);
    CHECKF(mem_ext[1] > mem_ext[2] && mem_ext[2] < mem[2], "program memory at world 4: stage 1 %zu, 2 %zu (engine's: %zu)",
           mem_ext[1], mem_ext[2], mem[2]);
    printf("test_trainer: world 4 bytes per rank at stage 3 with the parameters in zero_alloc memory: %zu, with the gradients "
           "in the program's memory too: %zu\n", mem_alloc[0], mem_alloc[1]);
    /* every unit gathered straight into the program's pages: no gather pool, so less engine memory than stage 3's own */
    CHECKF(mem_alloc[0] < mem[3] && mem_alloc[1] < mem_alloc[0], "zero_alloc at world 4: %zu, gradients too %zu (engine's "
           "stage 3: %zu)", mem_alloc[0], mem_alloc[1], mem[3]);
    printf("test_trainer: world 4 bytes per rank with parameters (stages 0-2) and gradients in the program's memory: stage 0 "
           "%zu, 1 %zu, 2 %zu, 3 %zu\n", mem_grad[0], mem_grad[1], mem_grad[2], mem_grad[3]);
    /* (stage 3 keeps the parameters in the engine: compared with its own engine-memory run) */
    CHECKF(mem_grad[1] > mem_grad[2] && mem_grad[2] < mem_ext[2] && mem_grad[3] < mem[3],
           "program gradients at world 4: stage 1 %zu, 2 %zu (parameters only: %zu), 3 %zu (engine's: %zu)", mem_grad[1],
           mem_grad[2], mem_ext[2], mem_grad[3], mem[3]);
    /* hybrid sharding on 4 ranks as 2 groups of 2, the program's stacked allocation for the gradients (and the
       parameters at stages 1-2), the tied embedding in any order: the losses and weights of the flat run of the
       same world, within the summation-order bound of fp32 (the same sums in another order) */
    for (stage = 1; stage <= 3; stage++) {
        static trainer F, Hy;
        train_mem(&F, stage, 4, 1, 0, stage <= 2, 1);
        memset(&Hy, 0, sizeof Hy);
        Hy.shard = 2;
        Hy.stage = stage, Hy.world = 4, Hy.gas = 1, Hy.flag = 0, Hy.ext = stage <= 2, Hy.gext = 1;
        {
            zero_error err;
            CHECKF(zero_host_run(4, trainer_rank, &Hy, &err) == ZERO_OK, "host run: %s", err.msg);
        }
        CHECKF(F.create_r == ZERO_OK && F.run_r == ZERO_OK && Hy.create_r == ZERO_OK && Hy.run_r == ZERO_OK,
               "hybrid, stage %d: %s %s", stage, F.err, Hy.err);
        CHECKF(max_diff(&F, &Hy) <= 1e-5 * max_abs(&F), "hybrid 2x2, stage %d, program memory: weights %.3g from flat "
               "(max|w| %.3g)", stage, max_diff(&F, &Hy), max_abs(&F));
        for (k = 0; k < STEPS; k++)
            if (!zt_near(Hy.loss[k], F.loss[k], 1e-6)) {
                CHECKF(0, "hybrid 2x2, stage %d, step %d: loss %.9g, flat %.9g", stage, k, Hy.loss[k], F.loss[k]);
                break;
            }
        CHECKF(stage == 3 || Hy.prog_equal, "hybrid 2x2, stage %d: a rank's program memory differs from the master", stage);
    }
    /* a forward alone on every rank after each step (an eval, a sampling forward): the training run's weights
       bitwise, and at stage 3 its prefetch hits in every step (the recorded order stands) */
    for (stage = 0; stage <= 3; stage++)
        for (world = 1; world <= 4; world *= 2) {
            static trainer Pl, Ev;
            train(&Pl, stage, world, 1, 1);
            memset(&Ev, 0, sizeof Ev);
            Ev.eval = 1;
            Ev.stage = stage, Ev.world = world, Ev.gas = 1, Ev.flag = 1;
            make_tensors(1);
            {
                zero_error err;
                CHECKF(zero_host_run(world, trainer_rank, &Ev, &err) == ZERO_OK, "host run: %s", err.msg);
            }
            CHECKF(Ev.run_r == ZERO_OK && !memcmp(Pl.w, Ev.w, sizeof Ev.w), "eval forwards, stage %d world %d: %s", stage,
                   world, Ev.err);
            for (k = 0; k < STEPS; k++)
                if (Ev.hits[k] != Pl.hits[k]) {
                    CHECKF(0, "eval forwards, stage %d world %d, step %d: %lld prefetch hits, %lld without the evals", stage,
                           world, k, (long long)Ev.hits[k], (long long)Pl.hits[k]);
                    break;
                }
            if (stage == 3) CHECKF(Pl.hits[STEPS - 1] > 0, "stage 3 world %d: no prefetch hit in the last step", world);
            /* the same forward on rank 0 alone inside zero_gather_params / zero_release_params: what it read, the
               weights and the prefetch hits as with every rank's; at stage 3 in the engine's memory (a pool of
               the model's size for the while) and in zero_alloc memory (no pool) */
            for (ext = 0; ext <= (stage == 3 ? 3 : 0); ext++) {
                static trainer Ga;
                if (ext == 1) continue;
                memset(&Ga, 0, sizeof Ga);
                Ga.eval = 2;
                Ga.stage = stage, Ga.world = world, Ga.gas = 1, Ga.flag = 1, Ga.ext = ext == 2 ? 2 : 0;
                if (ext == 3) Ga.persist = 400; /* the layers' tensors persistent: their places copied into the second pool */
                make_tensors(1);
                {
                    zero_error err;
                    CHECKF(zero_host_run(world, trainer_rank, &Ga, &err) == ZERO_OK, "host run: %s", err.msg);
                }
                CHECKF(Ga.run_r == ZERO_OK && !memcmp(Pl.w, Ga.w, sizeof Ga.w) && !memcmp(Ev.esum, Ga.esum, sizeof Ga.esum),
                       "gathered forwards on rank 0, stage %d world %d ext %d: %s", stage, world, ext, Ga.err);
                if (ext == 2) { /* (its own fetches after step 1 move the next step's hits: against the same run without) */
                    static trainer Za;
                    train_mem(&Za, stage, world, 1, 1, ext, 0);
                    CHECKF(!memcmp(Ga.hits, Za.hits, sizeof Za.hits), "gathered forwards, stage %d world %d ext %d: "
                           "prefetch hits differ", stage, world, ext);
                } else if (ext == 0) {
                    CHECKF(!memcmp(Ga.hits, Pl.hits, sizeof Pl.hits), "gathered forwards, stage %d world %d: prefetch hits "
                           "differ", stage, world);
                }
                CHECKF(!Ga.gather_misuse, "stage %d world %d ext %d: zero_grad or a second zero_gather_params inside the "
                       "gathered while was not refused (ENGINE_GATHERED)", stage, world, ext);
            }
        }
    /* without the flag the engine finds the tied embedding in the first micro-batch: the flagged run's bits, and
       its gradient memory from then on */
    for (stage = 2; stage <= 3; stage++)
        for (world = 1; world <= 4; world *= 2)
            for (gas = 1; gas <= 2; gas++) {
                static trainer Fl, Nf;
                train(&Fl, stage, world, gas, 1);
                train(&Nf, stage, world, gas, 0);
                CHECKF(Fl.run_r == ZERO_OK && Nf.run_r == ZERO_OK, "stage %d world %d gas %d, found: %s %s", stage,
                       world, gas, Fl.err, Nf.err);
                CHECKF(!memcmp(Fl.w, Nf.w, sizeof Fl.w) && !memcmp(Fl.loss, Nf.loss, sizeof Fl.loss),
                       "stage %d world %d gas %d: the found embedding's run differs from the flagged one", stage, world,
                       gas);
                CHECKF(Nf.grads_end == Fl.grads_end, "stage %d world %d gas %d: gradients %zu bytes found, %zu flagged",
                       stage, world, gas, Nf.grads_end, Fl.grads_end);
            }
    return zt_finish();
}
#endif
