/* quickstart.c: fit y = x . w + b with zero on host ranks (threads).
   Build: gcc -std=c11 -O2 -I<dir of zero.h> -o quickstart quickstart.c -lm -lpthread
   Run:   ./quickstart [ds_config.json [ranks [checkpoint_dir]]] */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { D = 64, STEPS = 300 };

typedef struct job {
    zero_config cfg;    /* resolved for the number of ranks */
    const char *ckpt;   /* NULL: no checkpoints */
} job;

/* a number in [-1, 1) from a hash of (a, b, c) */
static float noise(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ b * 0xbf58476d1ce4e5b9ull ^ c * 0x94d049bb133111ebull;
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    return (float)(x >> 40) / (float)(1 << 23) - 1.0f;
}

/* sample i of micro-batch slot `slot` of step `step`; the true model is
   w_k = sin(k), b = 0.5 */
static float sample(int64_t step, int64_t slot, int i, float *x) {
    float y = 0.5f;
    for (int k = 0; k < D; k++) {
        x[k] = noise((uint64_t)step, (uint64_t)slot * 1000 + (uint64_t)i, (uint64_t)k);
        y += sinf((float)k) * x[k];
    }
    return y;
}

/* dir/latest exists: a save completed there */
static int has_checkpoint(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* One rank: zero_host_run calls it on every rank's thread. */
static zero_result train(const zero_backend *be, void *arg) {
    const job *j = arg;
    const zero_config *cfg = &j->cfg;
    const int B = (int)cfg->train_micro_batch_size_per_gpu;
    const int G = (int)cfg->gradient_accumulation_steps;
    zero_tensor ts[2] = {0};   /* registered in forward order */
    zero_engine *e;
    zero_error err;
    ts[0].name = "w", ts[0].numel = D;
    ts[1].name = "b", ts[1].numel = 1, ts[1].flags = ZERO_TENSOR_NO_DECAY;
    if (zero_engine_create(&e, cfg, ts, 2, be, &err) != ZERO_OK) {
        fprintf(stderr, "rank %d: %s\n", be->rank, err.msg);
        return err.code;
    }
    /* resume from the latest save, if there is one: saved on any rank count and stage */
    if (j->ckpt && has_checkpoint(j->ckpt) && zero_load(e, j->ckpt, &err) != ZERO_OK) {
        fprintf(stderr, "rank %d: %s\n", be->rank, err.msg);
        zero_engine_destroy(e);
        return err.code;
    }
    for (int step = 0; step < STEPS; step++) {
        double loss = 0;
        for (int micro = 0; micro < G; micro++) {
            /* stage 3 gathers on zero_fetch; stages 0-2 return at once */
            if (zero_fetch(e, 0) != ZERO_OK || zero_fetch(e, 1) != ZERO_OK) goto fail;
            const float *w = zero_param(e, 0), *b = zero_param(e, 1);
            float *gw = zero_grad(e, 0), *gb = zero_grad(e, 1); /* zeroed, fp32 here */
            if (!w || !b || !gw || !gb) goto fail;
            /* forward and backward of the mean squared error, times the loss scale S */
            float S = (float)zero_loss_scale(e), x[D];
            for (int i = 0; i < B; i++) {
                float y = sample(step, (int64_t)micro * be->world + be->rank, i, x), p = b[0];
                for (int k = 0; k < D; k++) p += w[k] * x[k];
                loss += 0.5 * (p - y) * (p - y) / B / G;
                for (int k = 0; k < D; k++) gw[k] += S * (p - y) * x[k] / B;
                gb[0] += S * (p - y) / B;
            }
            if (zero_release(e, 0) != ZERO_OK || zero_release(e, 1) != ZERO_OK) goto fail;
            /* hand the gradients over, last tensor first */
            if (zero_grad_ready(e, 1) != ZERO_OK || zero_grad_ready(e, 0) != ZERO_OK) goto fail;
        }
        zero_step_info info;
        if (zero_step(e, &info) != ZERO_OK) goto fail;   /* reduce, clip, Adam, gather */
        if (be->rank == 0 && info.global_steps % 50 == 0)
            printf("step %3lld  loss %.6f  grad norm %.4f  lr %g\n", (long long)info.global_steps, loss,
                   info.grad_norm, info.lr);
    }
    if (j->ckpt && zero_save(e, j->ckpt, &err) != ZERO_OK) { /* every rank calls it */
        fprintf(stderr, "rank %d: %s\n", be->rank, err.msg);
        zero_engine_destroy(e);
        return err.code;
    }
    zero_engine_destroy(e);
    return ZERO_OK;
fail:
    fprintf(stderr, "rank %d: %s\n", be->rank, zero_engine_error(e)->msg);
    zero_result r = zero_engine_error(e)->code;
    zero_engine_destroy(e);
    return r;
}

int main(int argc, char **argv) {
    job j = {zero_config_default(), NULL};   /* DeepSpeed's defaults */
    zero_config *cfg = &j.cfg;
    zero_error err;
    int ranks = argc > 2 ? atoi(argv[2]) : 4;
    j.ckpt = argc > 3 ? argv[3] : NULL;
    cfg->train_micro_batch_size_per_gpu = 16;
    cfg->optimizer.lr = 0.02;
    cfg->zero_optimization.stage = 2;
    if (argc > 1 && zero_config_load(cfg, argv[1], &err) != ZERO_OK) { /* the file's keys win */
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (cfg->fp16.enabled == 1 || cfg->bf16.enabled == 1) {
        fprintf(stderr, "this example computes in fp32: leave fp16 and bf16 off\n");
        return 1;
    }
    if (zero_config_resolve(cfg, ranks, &err) != ZERO_OK ||
        zero_host_run(ranks, train, &j, &err) != ZERO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("stage %d, %d ranks, batch %lld per step: done\n", cfg->zero_optimization.stage, ranks,
           (long long)cfg->train_batch_size);
    return 0;
}
