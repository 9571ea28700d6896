/* minimal.c - the smallest complete zero program: a 2-layer MLP trained with
   ZeRO stage 2 on 2 host ranks (threads standing in for GPUs), 2 micro-batches
   per step; then a checkpoint is saved, loaded into a fresh engine and
   compared. examples/minimal.cu is the same program on GPUs.

       gcc -std=c11 -O2 -I. -o build/minimal examples/minimal.c -lm -lpthread
       build/minimal [checkpoint_dir]       (default: a new directory in /tmp, removed at the end)

   Ends with "N passed, N failed"; exits non-zero on any error or failed check. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { RANKS = 2, MICRO = 2, BATCH = 8, IN = 8, HID = 16, STEPS = 60 };
enum { W1, B1, W2, B2, NT }; /* the tensors, in forward order */
enum { ALL = IN * HID + HID + HID + 1 }; /* their elements */

/* A number in [-1, 1) from (a, b) alone: the data and the initial weights are
   then the same whatever the world size or the order ranks run in. */
static float rnd(uint64_t a, uint64_t b) {
    uint64_t x = (a + 1) * 0x9e3779b97f4a7c15ull ^ (b + 1) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31, x *= 0xd6e8feb86659fd93ull, x ^= x >> 32;
    return (float)(x >> 40) / (float)(1 << 23) - 1.0f;
}

/* The engine asks each rank only for the elements it keeps; biases have no
   init and start at zero. */
static void init_weight(void *user, int t, int64_t off, int64_t n, float *out) {
    (void)user;
    for (int64_t i = 0; i < n; i++) out[i] = 0.5f * rnd(1000 + (uint64_t)t, (uint64_t)(off + i));
}

/* One group per layer: a unit never mixes the two, so stage 3 gathers a layer alone. */
static const zero_tensor tensors[NT] = {
    [W1] = {.name = "fc1.weight", .numel = IN * HID, .group = 0, .init = init_weight},
    [B1] = {.name = "fc1.bias", .numel = HID, .group = 0, .flags = ZERO_TENSOR_NO_DECAY},
    [W2] = {.name = "fc2.weight", .numel = HID, .group = 1, .init = init_weight},
    [B2] = {.name = "fc2.bias", .numel = 1, .group = 1, .flags = ZERO_TENSOR_NO_DECAY},
};

typedef struct job {
    zero_config cfg;
    const char *dir;
    double loss[STEPS][RANKS]; /* each rank writes its own column; main reads after the run */
    int saved[RANKS], equal[RANKS];
} job;

/* One micro-batch of samples data .. data + BATCH - 1: forward, the mean
   squared error against y = tanh(sum_k sin(k + 1) x_k), and the backward of
   loss * S (S: the loss scale, 1 without fp16) into the engine's gradients. */
static zero_result micro_batch(zero_engine *e, uint64_t data, double *loss) {
    float x[BATCH][IN], h[BATCH][HID], d[BATCH], S = (float)zero_loss_scale(e);
    zero_result r;
    for (int t = 0; t < NT; t++) /* stage 3 gathers here; stages 0-2 return at once */
        if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
    const float *w1 = zero_param(e, W1), *b1 = zero_param(e, B1), *w2 = zero_param(e, W2), *b2 = zero_param(e, B2);
    if (!w1 || !b1 || !w2 || !b2) return zero_engine_error(e)->code;
    for (int i = 0; i < BATCH; i++) { /* h = tanh(x W1 + b1), p = h . w2 + b2 */
        float y = 0, p = b2[0];
        for (int k = 0; k < IN; k++) x[i][k] = rnd(data + (uint64_t)i, (uint64_t)k), y += sinf(k + 1.0f) * x[i][k];
        for (int j = 0; j < HID; j++) {
            float z = b1[j];
            for (int k = 0; k < IN; k++) z += x[i][k] * w1[k * HID + j];
            h[i][j] = tanhf(z), p += h[i][j] * w2[j];
        }
        y = tanhf(y);
        *loss += 0.5 * (p - y) * (p - y) / BATCH;
        d[i] = S * (p - y) / BATCH; /* not divided by ranks or micro-batches: the engine averages */
    }
    /* Backward, last tensor first; each gradient is handed over as soon as it
       is written, so its unit's reduce-scatter can start while we go on.
       zero_grad's buffers start at zero. */
    float *gw2 = zero_grad(e, W2), *gb2 = zero_grad(e, B2);
    if (!gw2 || !gb2) return zero_engine_error(e)->code;
    for (int i = 0; i < BATCH; i++) {
        gb2[0] += d[i];
        for (int j = 0; j < HID; j++) gw2[j] += d[i] * h[i][j];
    }
    if ((r = zero_grad_ready(e, B2)) != ZERO_OK || (r = zero_grad_ready(e, W2)) != ZERO_OK) return r;
    float *gw1 = zero_grad(e, W1), *gb1 = zero_grad(e, B1);
    if (!gw1 || !gb1) return zero_engine_error(e)->code;
    for (int i = 0; i < BATCH; i++)
        for (int j = 0; j < HID; j++) {
            float dz = d[i] * w2[j] * (1 - h[i][j] * h[i][j]);
            gb1[j] += dz;
            for (int k = 0; k < IN; k++) gw1[k * HID + j] += x[i][k] * dz;
        }
    if ((r = zero_grad_ready(e, B1)) != ZERO_OK || (r = zero_grad_ready(e, W1)) != ZERO_OK) return r;
    for (int t = 0; t < NT; t++) /* every fetch needs its release */
        if ((r = zero_release(e, t)) != ZERO_OK) return r;
    return ZERO_OK;
}

/* A failed call: which one, and why (err for the calls that take one, else zero_engine_error) */
#define TRY(call, why) do { if ((r = (call)) != ZERO_OK) { \
        fprintf(stderr, "rank %d: %s: %s\n", be->rank, #call, why); goto out; } } while (0)

/* One rank; zero_host_run calls it on every rank's thread. The collective
   calls (create, step, save, load, read_state) run on every rank in the same
   order. */
static zero_result rank_main(const zero_backend *be, void *arg) {
    job *j = arg;
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    float saved[ALL], loaded[ALL]; /* every tensor's fp32 master weights, back to back */
    TRY(zero_engine_create(&e, &j->cfg, tensors, NT, be, &err), err.msg);
    for (int step = 0; step < STEPS; step++) {
        double loss = 0;
        for (int m = 0; m < MICRO; m++) /* every rank and micro-batch its own samples */
            TRY(micro_batch(e, (((uint64_t)step * MICRO + (uint64_t)m) * RANKS + (uint64_t)be->rank) * BATCH, &loss),
                zero_engine_error(e)->msg);
        j->loss[step][be->rank] = loss / MICRO;
        zero_report_loss(e, loss / MICRO); /* for the metrics file (jsonl_monitor): rank 0's is the one written */
        TRY(zero_step(e, NULL), zero_engine_error(e)->msg); /* reduce, clip, Adam on this rank's shard, gather */
    }
    TRY(zero_save(e, j->dir, &err), err.msg); /* each rank writes its shard, rank 0 the metadata */
    j->saved[be->rank] = 1;
    for (int t = 0, at = 0; t < NT; at += (int)tensors[t].numel, t++) /* gathered from the ranks that own them */
        TRY(zero_read_state(e, t, ZERO_STATE_MASTER, 0, tensors[t].numel, saved + at), zero_engine_error(e)->msg);
    zero_engine_destroy(e); /* a new engine, as a resumed run would start, must come back to these weights */
    TRY(zero_engine_create(&e, &j->cfg, tensors, NT, be, &err), err.msg);
    TRY(zero_load(e, j->dir, &err), err.msg);
    for (int t = 0, at = 0; t < NT; at += (int)tensors[t].numel, t++)
        TRY(zero_read_state(e, t, ZERO_STATE_MASTER, 0, tensors[t].numel, loaded + at), zero_engine_error(e)->msg);
    j->equal[be->rank] = memcmp(saved, loaded, sizeof saved) == 0;
out:
    zero_engine_destroy(e); /* on this rank's thread, while its backend lives */
    return r;
}

/* The default checkpoint directory is the program's own: removed at the end (a directory given is kept). */
static int remove_entry(const char *path, const struct stat *st, int kind, struct FTW *at) {
    (void)st, (void)kind, (void)at;
    return remove(path);
}

int main(int argc, char **argv) {
    static job j; /* static: zeroed, and the loss table off the stack */
    char tmp[] = "/tmp/zero_minimal_XXXXXX";
    zero_error err;
    if (argc > 1 && argv[1][0] == '-') { /* no flags: one optional directory */
        printf("usage: %s [checkpoint_dir]   (default: a new directory in /tmp, removed at the end)\n", argv[0]);
        return strcmp(argv[1], "--help") && strcmp(argv[1], "-h") ? 2 : 0;
    }
    j.cfg = zero_config_default(); /* DeepSpeed's defaults; zero_config_load reads a ds_config.json instead */
    j.cfg.train_micro_batch_size_per_gpu = BATCH;
    j.cfg.gradient_accumulation_steps = MICRO;
    j.cfg.optimizer.lr = 0.01;
    j.cfg.zero_optimization.stage = 2;               /* optimizer state and gradients sharded over the ranks */
    j.cfg.zero_optimization.reduce_bucket_size = 64; /* elements per unit: fc1.weight alone fills two */
    j.dir = argc > 1 ? argv[1] : mkdtemp(tmp);
    if (!j.dir) perror("mkdtemp");
    else if (zero_config_resolve(&j.cfg, RANKS, &err) != ZERO_OK ||
             zero_host_run(RANKS, rank_main, &j, &err) != ZERO_OK) /* rank_main on RANKS threads */
        fprintf(stderr, "minimal: %s\n", err.msg);
    for (int s = 0; s < STEPS; s += 10) printf("step %2d  loss %.5f\n", s + 1, (j.loss[s][0] + j.loss[s][1]) / 2);
    double first = (j.loss[0][0] + j.loss[0][1]) / 2, last = (j.loss[STEPS - 1][0] + j.loss[STEPS - 1][1]) / 2;
    int ok[3] = {last < first / 4, j.saved[0] && j.saved[1], j.equal[0] && j.equal[1]}, pass = ok[0] + ok[1] + ok[2];
    printf("%s  the loss fell: %.5f -> %.5f\n", ok[0] ? "ok  " : "FAIL", first, last);
    printf("%s  zero_save to %s%s\n", ok[1] ? "ok  " : "FAIL", j.dir ? j.dir : "(none)",
           argc > 1 ? "" : " (a temporary directory, removed now)");
    printf("%s  zero_load into a fresh engine: the same weights\n", ok[2] ? "ok  " : "FAIL");
    if (argc < 2 && j.dir) nftw(j.dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    printf("%d passed, %d failed\n", pass, 3 - pass);
    return pass == 3 ? 0 : 1;
}
