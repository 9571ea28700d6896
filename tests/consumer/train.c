/* train.c - the training loop of the consumer project (tests/consumer): the
   engine's API without the implementation, which main.c compiles. */
#include "train.h"

#include <stdio.h>
#include <string.h>

/* The teacher's weights and the inputs: functions of their indices, so every
   rank sees the same problem and different samples. */
static float teacher(int i) { return i < TRAIN_DIM ? 0.25f * (float)(i + 1) - 1.0f : 0.5f; }
static float input(int rank, int step, int sample, int i) {
    uint32_t h = (uint32_t)(((rank * 131 + step) * 257 + sample) * 17 + i) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return (float)(h & 0xffff) / 32768.0f - 1.0f; /* [-1, 1) */
}

static zero_result fail(train_job *job, int rank, const zero_error *err) {
    snprintf(job->err[rank], sizeof job->err[rank], "%s", err->msg);
    return err->code;
}

zero_result train_rank(const zero_backend *backend, void *arg) {
    train_job *job = (train_job *)arg;
    int rank = backend->rank, step, s, i, t;
    zero_tensor tensors[2];
    zero_config cfg = zero_config_default();
    zero_engine *e;
    zero_error err;

    memset(tensors, 0, sizeof tensors); /* zero fields: defaults; initial weights: zeros */
    tensors[0].name = "linear.weight";
    tensors[0].numel = TRAIN_DIM;
    tensors[1].name = "linear.bias";
    tensors[1].numel = 1;
    cfg.train_micro_batch_size_per_gpu = TRAIN_BATCH;
    cfg.gradient_accumulation_steps = 1;
    cfg.zero_optimization.stage = 2;
    cfg.optimizer.lr = 0.05;
    cfg.log.level = ZERO_LOG_WARN;
    if (zero_config_resolve(&cfg, backend->world, &err) != ZERO_OK ||
        zero_engine_create(&e, &cfg, tensors, 2, backend, &err) != ZERO_OK)
        return fail(job, rank, &err);

    for (step = 0; step < TRAIN_STEPS; step++) {
        float w[TRAIN_DIM + 1], dw[TRAIN_DIM + 1];
        double loss = 0;
        zero_step_info info;
        for (t = 0; t < 2; t++) { /* forward: read the parameters */
            const float *p;
            zero_fetch(e, t);
            if (!(p = (const float *)zero_param(e, t))) return fail(job, rank, zero_engine_error(e));
            memcpy(t == 0 ? w : w + TRAIN_DIM, p, (size_t)tensors[t].numel * sizeof *p);
            zero_release(e, t);
        }
        memset(dw, 0, sizeof dw);
        for (s = 0; s < TRAIN_BATCH; s++) { /* loss = mean of (w.x + b - y)^2 / 2 */
            float x[TRAIN_DIM], pred = w[TRAIN_DIM], y = teacher(TRAIN_DIM), r;
            for (i = 0; i < TRAIN_DIM; i++) {
                x[i] = input(rank, step, s, i);
                pred += w[i] * x[i];
                y += teacher(i) * x[i];
            }
            r = pred - y;
            loss += 0.5 * (double)r * r / TRAIN_BATCH;
            for (i = 0; i < TRAIN_DIM; i++) dw[i] += r * x[i] / TRAIN_BATCH;
            dw[TRAIN_DIM] += r / TRAIN_BATCH;
        }
        job->loss[rank][step] = loss;
        for (t = 1; t >= 0; t--) { /* backward, last tensor first */
            float *g;
            zero_fetch(e, t);
            if (!(g = (float *)zero_grad(e, t))) return fail(job, rank, zero_engine_error(e));
            for (i = 0; i < tensors[t].numel; i++)
                g[i] += (float)(dw[(t == 0 ? 0 : TRAIN_DIM) + i] * zero_loss_scale(e));
            zero_release(e, t);
            if (zero_grad_ready(e, t) != ZERO_OK) return fail(job, rank, zero_engine_error(e));
        }
        if (zero_step(e, &info) != ZERO_OK) return fail(job, rank, zero_engine_error(e));
        job->applied[rank] += info.applied;
    }
    for (t = 0; t < 2; t++) {
        const float *p = (const float *)zero_param(e, t);
        if (!p) return fail(job, rank, zero_engine_error(e));
        memcpy(t == 0 ? job->params[rank] : job->params[rank] + TRAIN_DIM, p,
               (size_t)tensors[t].numel * sizeof *p);
    }
    zero_engine_destroy(e);
    return ZERO_OK;
}
