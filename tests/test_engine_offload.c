/* test_engine_offload.c - offload_optimizer "cpu" on the host backend: the
   fp32 master weights and Adam moments live in pinned host memory, Adam runs
   through the backend's cpu_adam on staged gradient chunks, and the weights
   are bitwise those of the same run without offload (same arithmetic, other
   memory); the memory report puts those bytes under pinned host memory.
   Through zero_offload_backend the engine runs zero_offload.h's SIMD CPU
   Adam over a thread pool instead: bitwise the same with ZERO_NO_SIMD=1,
   within the SIMD paths' rounding otherwise. offload_optimizer "nvme"
   (through zero_offload_backend's tile store, in a temporary directory)
   keeps master, m and v in a file, one tile per unit: bitwise the same
   weights and moments with the scalar CPU Adam, and a byte flipped in the
   file between steps fails the next step with NVME_CORRUPT. offload_param
   "cpu" and "nvme" (stage 3; with the optimizer on the device, in host
   memory or on NVMe; a frozen tensor; a small pool with prefetch; 2 or 5
   tile buffers): bitwise the run without offload, the shard where the
   memory report says, and a flipped byte of the parameter file fails the
   next fetch with NVME_CORRUPT. With gradient accumulation at stages 2-3
   the CPU adds the micro-batches before the last (their bytes counted, the
   same bits as ZERO_HOST_SUM=0's adds on the device); a failing cpu_convert
   reaches every rank at the last micro-batch, named, without a hang. Where
   the backend's mem_info leaves room (or ZERO_GRAD_ACC / the config says so)
   they add up on the device instead and the sum crosses once: the same bits,
   the rule checked to the byte. offload_optimizer.ratio < 1 at stage 3
   (partial offload: the first units' state and Adam on the device): the
   same bits, the device's bytes of master and moments and the backward's
   bytes to the host exactly the device units' share, and a checkpoint
   saved at ratio 0.5 resumed at ratio 1 and without offload.
   ZERO_TEST_QUICK=1 (the sanitizer runs) keeps worlds and accumulations 1
   and 3 of the partial offload's matrix.

   Run alone: make test T=test_engine_offload */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp in this test */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#include <fcntl.h>
#include <unistd.h>

enum { NT = 5, MAXW = 4, TOTAL = 1 + 37 + 300 + 7 + 129 };
static const int64_t SIZES[NT] = {1, 37, 300, 7, 129};

typedef struct job {
    int stage, dtype, gas, offload, pin, simd;
    int poff, pbufs, frozen, small_pool; /* offload_param device; its buffer_count; tensor 2 frozen; stage-3 pool */
    int pcorrupt;                        /* flip a byte of the parameter file after step 2 */
    int dpu, stale; /* delayed_param_update; gradients from the parameters the previous step's forward saw */
    int destroy_early; /* destroy right after the last zero_step, the delayed Adam still running */
    int noclip;        /* gradient_clipping 0 (with "cpu" and no overflow check: the early CPU step) */
    int64_t early_units; /* rank 0: units the CPU stepped during the backward, over the run */
    int no_overlap;      /* cfg.overlap_cpu_step = 0 */
    int params_host;     /* cfg.ratio_params_device = 0 */
    int64_t overlapped;  /* rank 0: units whose CPU Adam zero_step left to run beside the next forward */
    int64_t bwd_to_host, bwd_to_dev; /* rank 0: bytes copied in the last step's backwards */
    int64_t cpu_sum;                 /* rank 0: the last step's cpu_sum_bytes (the CPU's adds of micro-batches) */
    int64_t all_to_dev, step_to_host; /* rank 0: the last step's bytes to the device (every phase), to the host in zero_step */
    int nvme, no_hooks, corrupt; /* "nvme"; a backend without tile store; flip a file byte after step 2 */
    int clear_path;              /* nvme_path emptied after zero_config_resolve */
    int shard;                   /* zero_optimization.mics_shard_size (0: flat) */
    int gacc;                    /* cfg.grad_accum_device + 2 (0: the default, -1) */
    int64_t fake_free;           /* > 0: the backend's mem_info says this many bytes are free */
    double ratio;                /* offload_optimizer.ratio (0: 1, the default; set ratio0 for 0) */
    int ratio0;                  /* offload_optimizer.ratio 0 */
    int late_ratio;              /* the ratio set after zero_config_resolve */
    int s0, s1;                  /* the steps trained: s0 .. s1 - 1 (0 .. 6 when s1 is 0) */
    const char *save, *load;     /* zero_save after training / zero_load before it, into / from this directory */
    int64_t dev_elems;           /* rank 0: own elements of the units the ratio keeps on the device */
    int64_t count_elems;         /* rank 0: what a count of units would keep, (int)((1 - ratio) x n) of n */
    const char *dir;             /* nvme_path */
    int64_t bucket;
    zero_result r[MAXW];
    zero_msg item[MAXW];
    char key[MAXW][128];
    char msg[MAXW][1024];
    float w[MAXW][TOTAL], m[MAXW][TOTAL];
    zero_memory_stats ms;
} job;

/* the initial weights: 0.3 sin(0.7 t + 0.01 i) */
static zt_wave init_wave = {0.3, 0, 0.7, 0.01, 0};

/* a byte of tile 0's data (after the 4096-byte superblock and the 64-byte
   header) of this rank's file, flipped behind the store's back */
static int flip_byte(const char *dir, const char *prefix, int rank) {
    char path[1024];
    unsigned char c;
    int fd, ok;
    snprintf(path, sizeof path, "%s/%s.rank%d.tiles", dir, prefix, rank);
    fd = open(path, O_RDWR);
    if (fd < 0) return 0;
    ok = pread(fd, &c, 1, 4096 + 64 + 2) == 1;
    c ^= 0x10;
    ok = ok && pwrite(fd, &c, 1, 4096 + 64 + 2) == 1 && fsync(fd) == 0;
    close(fd);
    return ok;
}

static zero_result train(zero_engine *e, const job *J, int rank) {
    int s, m, t;
    zero_result r;
    float prev[TOTAL], cur[TOTAL]; /* J->stale: the values the previous step's forward saw */
    for (s = J->s0; s < (J->s1 ? J->s1 : 6); s++) {
        /* after a step wrote the parameter tiles, before the fetches read them */
        if (J->pcorrupt && s == 3 && !flip_byte(J->dir, "zero_param", rank)) return ZERO_ERR_IO;
        for (m = 0; m < J->gas; m++) {
            for (t = NT - 1; t >= 0; t--) {
                void *w, *g;
                int64_t i;
                if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
                w = zero_param(e, t);
                if (!w) return zero_engine_error(e)->code;
                if (J->frozen && t == 2) { /* read, no gradient */
                    if ((r = zero_release(e, t)) != ZERO_OK) return r;
                    continue;
                }
                g = zero_grad(e, t);
                if (!g) return zero_engine_error(e)->code;
                {
                    int64_t o = 0;
                    int k;
                    for (k = 0; k < t; k++) o += SIZES[k];
                    for (i = 0; i < SIZES[t]; i++) {
                        float x = zt_load(w, J->dtype, i);
                        if (m == 0) cur[o + i] = x;
                        if (J->stale && s > 0) x = prev[o + i];
                        zt_store(g, J->dtype, i, (float)zero_loss_scale(e) * (x - 0.1f + 0.01f * (float)((rank * 7 + m * 3 + s + i) % 5)));
                    }
                }
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
            }
        }
        if (J->corrupt && s == 2 && !flip_byte(J->dir, "zero_optim", rank)) return ZERO_ERR_IO;

        {
            zero_step_info info;
            if ((r = zero_step(e, &info)) != ZERO_OK) return r;
            if (rank == 0) ((job *)J)->early_units += info.cpu_units_early;
            if (rank == 0) ((job *)J)->overlapped += info.cpu_units_overlapped;
            if (rank == 0) ((job *)J)->bwd_to_host = info.bytes_to_host[ZERO_XFER_BACKWARD];
            if (rank == 0) ((job *)J)->bwd_to_dev = info.bytes_to_device[ZERO_XFER_BACKWARD];
            if (rank == 0) ((job *)J)->cpu_sum = info.cpu_sum_bytes;
            if (rank == 0) ((job *)J)->step_to_host = info.bytes_to_host[ZERO_XFER_STEP];
            if (rank == 0) {
                int ph;
                ((job *)J)->all_to_dev = 0;
                for (ph = 0; ph < ZERO_XFER_PHASE_COUNT; ph++) ((job *)J)->all_to_dev += info.bytes_to_device[ph];
            }
        }
        memcpy(prev, cur, sizeof prev);
    }
    return (J->dpu && !J->destroy_early && (r = zero_flush(e)) != ZERO_OK) ? r : ZERO_OK;
}

static int64_t fake_free_bytes; /* set before zero_host_run, read by its ranks */
static int fake_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes) {
    (void)ctx;
    *free_bytes = (size_t)fake_free_bytes;
    *total_bytes = (size_t)fake_free_bytes * 2;
    return 0;
}

static zero_result rank_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][8];
    zero_error err;
    zero_engine *e;
    zero_cpu_pool *pool = NULL;
    zero_backend ob;
    zero_result r;
    int t;
    int64_t o = 0;
    if (J->simd) { /* zero_offload.h's CPU Adam on 2 threads of this rank */
        if (zero_cpu_pool_create(&pool, 2, NULL, &err) != ZERO_OK) {
            J->r[b->rank] = err.code;
            return ZERO_OK;
        }
        zero_offload_backend(b, pool, &ob);
        b = &ob;
    } else if ((J->nvme || J->poff == ZERO_OFFLOAD_NVME) && !J->no_hooks) { /* the tile store, the CPU Adam on the calling thread */
        zero_offload_backend(b, NULL, &ob);
        b = &ob;
    }
    if (J->fake_free > 0) {
        if (b != &ob) ob = *b;
        ob.mem_info = fake_mem_info;
        b = &ob;
    }
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].group = t / 2;
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
        if (t == 3) ts[t].flags = ZERO_TENSOR_NO_DECAY;
        if (t == 2 && J->frozen) ts[t].flags = ZERO_TENSOR_FROZEN;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = J->gas;
    c.zero_optimization.stage = J->stage;
    c.zero_optimization.reduce_bucket_size = J->bucket;
    c.zero_optimization.offload_optimizer.device = J->offload ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
    c.zero_optimization.offload_optimizer.pin_memory = J->pin;
    if (J->poff) {
        zero_offload_config *op = &c.zero_optimization.offload_param;
        op->device = (zero_offload_device)J->poff;
        op->pin_memory = J->pin;
        if (J->pbufs) op->buffer_count = J->pbufs;
        if (J->dir) snprintf(op->nvme_path, sizeof op->nvme_path, "%s", J->dir);
    }
    c.zero_optimization.offload_optimizer.delayed_param_update = J->dpu;
    if (J->small_pool) { /* every tensor fetched and released, a pool of a few units, prefetch */
        c.zero_optimization.stage3_param_persistence_threshold = 0;
        c.zero_optimization.stage3_max_live_parameters = 200;
        c.zero_optimization.stage3_prefetch_bucket_size = 150;
    }
    if (J->nvme) {
        c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_NVME;
        snprintf(c.zero_optimization.offload_optimizer.nvme_path, sizeof c.zero_optimization.offload_optimizer.nvme_path,
                 "%s", J->dir);
    }
    c.optimizer.weight_decay = 0.01;
    c.overlap_cpu_step = !J->no_overlap;
    c.ratio_params_device = !J->params_host;
    c.gradient_clipping = J->noclip ? 0 : 0.5;
    if (J->shard) c.zero_optimization.mics_shard_size = J->shard;
    if (J->gacc) c.grad_accum_device = J->gacc - 2;
    if ((J->ratio > 0 || J->ratio0) && !J->late_ratio) c.zero_optimization.offload_optimizer.ratio = J->ratio0 ? 0 : J->ratio;
    c.fp16.enabled = J->dtype == ZERO_DTYPE_FP16;
    c.fp16.initial_scale_power = 6;
    c.bf16.enabled = J->dtype == ZERO_DTYPE_BF16;
    c.log.level = ZERO_LOG_WARN;
    r = zero_config_resolve(&c, b->world, &err);
    if (J->clear_path) c.zero_optimization.offload_optimizer.nvme_path[0] = 0;
    if (J->late_ratio) c.zero_optimization.offload_optimizer.ratio = J->ratio;
    if (r != ZERO_OK || zero_engine_create(&e, &c, ts, NT, b, &err) != ZERO_OK) {
        J->r[b->rank] = err.code;
        J->item[b->rank] = err.item;
        snprintf(J->key[b->rank], sizeof J->key[b->rank], "%s", err.key);
        snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", err.msg);
        zero_cpu_pool_destroy(pool);
        return ZERO_OK;
    }
    if (b->rank == 0) {
        /* the rule, counted here: by elements, at most (1 - ratio) of the trainable shard's (DeepSpeed's
           count of its equal sub-groups, by elements: zero's units are not of one size), the units spread
           through the layout: a unit stays on the device when the device's elements so far, its own
           counted, stay within that share of the trainable elements so far (ZERO_RATIO_UNITS=first: the
           leading units whose chunks end within the share) */
        const zero_layout *l = zero_engine_layout(e);
        int u, nu = zero_layout_unit_count(l), stop = 0, n = 0, keep;
        double ratio = c.zero_optimization.offload_optimizer.ratio;
        int64_t st = 0;
        for (u = 0; u < nu; u++)
            if (!zero_layout_unit(l, u)->frozen) st += zero_layout_unit(l, u)->chunk, n++;
        keep = ratio < 1 ? (int)((1.0 - ratio) * (double)n) : 0;
        J->count_elems = 0;
        for (u = 0; u < nu && keep > 0; u++)
            if (!zero_layout_unit(l, u)->frozen) J->count_elems += zero_layout_unit(l, u)->chunk, keep--;
        J->dev_elems = 0;
        if (getenv("ZERO_RATIO_UNITS") && !strcmp(getenv("ZERO_RATIO_UNITS"), "first")) {
            for (u = 0; u < nu && ratio < 1 && !stop; u++)
                if (!zero_layout_unit(l, u)->frozen) {
                    if ((double)(J->dev_elems + zero_layout_unit(l, u)->chunk) > (1.0 - ratio) * (double)st) stop = 1;
                    else J->dev_elems += zero_layout_unit(l, u)->chunk;
                }
        } else {
            double seen = 0;
            for (u = 0; u < nu && ratio < 1; u++)
                if (!zero_layout_unit(l, u)->frozen) {
                    seen += (double)zero_layout_unit(l, u)->chunk;
                    if ((double)(J->dev_elems + zero_layout_unit(l, u)->chunk) <= (1.0 - ratio) * seen)
                        J->dev_elems += zero_layout_unit(l, u)->chunk;
                }
        }
        zero_memory_report(e, &J->ms);
    }
    J->r[b->rank] = J->load ? zero_load(e, J->load, &err) : ZERO_OK;
    if (J->r[b->rank] != ZERO_OK) snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "zero_load: %.900s", err.msg);
    if (J->r[b->rank] == ZERO_OK) J->r[b->rank] = train(e, J, b->rank);
    if (J->r[b->rank] == ZERO_OK && J->save && (J->r[b->rank] = zero_save(e, J->save, &err)) != ZERO_OK) {
        snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "zero_save: %.900s", err.msg);
        zero_engine_destroy(e);
        zero_cpu_pool_destroy(pool);
        return ZERO_OK;
    }
    if (J->destroy_early) {
        zero_engine_destroy(e);
        zero_cpu_pool_destroy(pool);
        return ZERO_OK;
    }
    J->item[b->rank] = zero_engine_error(e)->item;
    snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", zero_engine_error(e)->msg);
    for (t = 0; t < NT && J->r[b->rank] == ZERO_OK; t++) {
        if (zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], J->w[b->rank] + o) != ZERO_OK ||
            (!(J->frozen && t == 2) &&
             zero_read_state(e, t, ZERO_STATE_EXP_AVG, 0, SIZES[t], J->m[b->rank] + o) != ZERO_OK)) {
            J->r[b->rank] = zero_engine_error(e)->code;
            snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", zero_engine_error(e)->msg);
        }
        o += SIZES[t];
    }
    zero_engine_destroy(e);
    zero_cpu_pool_destroy(pool);
    return ZERO_OK;
}

/* The CPU's sum of micro-batches failing: the backend's cpu_convert fails
   at its third call on every rank. The error reaches the program at the
   last micro-batch (where the engine waits for the thread), naming what
   failed, without a hang; every rank sees it and the engine is destroyed
   cleanly. */
typedef struct sum_fail {
    int calls[MAXW];
    zero_result r[MAXW];
    char msg[MAXW][1024];
    int at_micro[MAXW]; /* the micro-batch whose zero_grad_ready returned it (-1: none) */
} sum_fail;
static sum_fail sf;

static zero_result failing_convert(void *cpu_ctx, void *dst, zero_dtype ddt, const void *src, zero_dtype sdt, size_t n,
                                   int acc, zero_error *err) {
    (void)cpu_ctx, (void)dst, (void)ddt, (void)src, (void)sdt, (void)n, (void)acc;
    memset(err, 0, sizeof *err);
    err->code = ZERO_ERR_IO;
    err->item = ZERO_MSG_FILE_READ;
    snprintf(err->msg, sizeof err->msg, "injected cpu_convert failure");
    return ZERO_ERR_IO;
}

static zero_result sum_fail_rank(const zero_backend *b0, void *arg) {
    zero_backend b = *b0;
    zero_config c = zero_config_default();
    zero_tensor ts[NT];
    char names[NT][8];
    zero_engine *e = NULL;
    zero_error err;
    int t, m, rank = b0->rank;
    (void)arg;
    b.cpu_convert = failing_convert;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].init = zt_init_wave;
        ts[t].init_user = &init_wave;
    }
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = 3;
    c.zero_optimization.stage = 2;
    c.zero_optimization.reduce_bucket_size = 64;
    c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    c.log.level = ZERO_LOG_LEVEL_COUNT; /* silent: the injected failure is expected */
    sf.at_micro[rank] = -1;
    if (zero_config_resolve(&c, b.world, &err) != ZERO_OK || zero_engine_create(&e, &c, ts, NT, &b, &err) != ZERO_OK) {
        sf.r[rank] = err.code;
        snprintf(sf.msg[rank], sizeof sf.msg[rank], "%s", err.msg);
        return ZERO_OK;
    }
    for (m = 0; m < 3 && sf.at_micro[rank] < 0; m++)
        for (t = NT - 1; t >= 0; t--) {
            void *g;
            zero_result r;
            int64_t i;
            if (zero_fetch(e, t) != ZERO_OK || !zero_param(e, t) || !(g = zero_grad(e, t))) break;
            for (i = 0; i < SIZES[t]; i++) ((float *)g)[i] = 0.01f * (float)(i % 7) - 0.02f;
            if ((r = zero_grad_ready(e, t)) != ZERO_OK) {
                sf.r[rank] = r;
                sf.at_micro[rank] = m;
                snprintf(sf.msg[rank], sizeof sf.msg[rank], "%s", zero_engine_error(e)->msg);
                break;
            }
            zero_release(e, t);
        }
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void test_sum_failure(void) {
    zero_error err;
    int r;
    memset(&sf, 0, sizeof sf);
    CHECK(zero_host_run(2, sum_fail_rank, NULL, &err) == ZERO_OK);
    for (r = 0; r < 2; r++)
        CHECKF(sf.r[r] == ZERO_ERR_IO && sf.at_micro[r] == 2 && strstr(sf.msg[r], "gradient accumulation on the CPU") &&
                   strstr(sf.msg[r], "injected cpu_convert failure"),
               "rank %d: %d at micro-batch %d: %s", r, (int)sf.r[r], sf.at_micro[r], sf.msg[r]);
    printf("the CPU's sum failing: both ranks told at the last micro-batch, naming it\n");
}

/* Where the micro-batches add up with the optimizer offloaded (stage 3, 2
   ranks, 2 micro-batches): the device when its accumulator takes at most a
   third of what mem_info says is free (to the byte), the host above that or
   when mem_info cannot tell (the host backend without ZERO_HOST_MEM_LIMIT);
   cfg.grad_accum_device 0 / 1 and ZERO_GRAD_ACC decide instead. The path
   shows in the backward's bytes to the device (only the host's sum brings
   any back), and the weights are the run without offload's either way. */
static void test_grad_place(void) {
    static job a, j;
    static const struct {
        int fake;          /* mem_info says 3 x the accumulator + delta bytes are free (2: at ratio 0.5, 3 x the
                              CPU's share of it, and the device's units' master, moments and accumulator more) */
        int64_t delta;
        const char *limit; /* ZERO_HOST_MEM_LIMIT */
        const char *env;   /* ZERO_GRAD_ACC */
        int gacc, device;  /* job.gacc; the device's sum expected */
    } cases[] = {
        {0, 0, NULL, NULL, 0, 0},       /* no limit: unknown, the host */
        {0, 0, "1000000000", NULL, 0, 1}, /* a limit with room */
        {0, 0, "1000000000", "host", 0, 0}, /* the environment over the rule */
        {0, 0, "1000000000", NULL, 2, 0}, /* cfg 0 over the rule */
        {0, 0, NULL, NULL, 3, 1},       /* cfg 1 without knowing */
        {1, 0, NULL, NULL, 0, 1},       /* exactly a third */
        {1, -1, NULL, NULL, 0, 0},      /* a byte less */
        {1, -1, NULL, "device", 0, 1},  /* the environment over the rule */
        {2, 0, NULL, NULL, 0, 1},       /* ratio 0.5: a third of what is free less the device units' own */
        {2, -1, NULL, NULL, 0, 0},      /* a byte less */
    };
    zero_error err;
    size_t acc, later = 0, devacc = 0;
    unsigned k;
    memset(&a, 0, sizeof a);
    a.stage = 3;
    a.dtype = ZERO_DTYPE_BF16;
    a.gas = 2;
    a.bucket = 64;
    CHECK(zero_host_run(2, rank_fn, &a, &err) == ZERO_OK && a.r[0] == ZERO_OK);
    acc = a.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE]; /* rank 0's owned fp32 accumulator */
    CHECK(acc > 0);
    { /* ratio 0.5 with the host's sum: the device units' master and moments, which create allocates after it decides */
        j = a;
        j.offload = 1;
        j.ratio = 0.5;
        j.gacc = 2;
        CHECK(zero_host_run(2, rank_fn, &j, &err) == ZERO_OK && j.r[0] == ZERO_OK);
        /* rank 0's device units: master, m and v (fp32, bf16's master and state) and their fp32 accumulator */
        later = (size_t)j.dev_elems * 12;
        devacc = (size_t)j.dev_elems * 4;
        CHECK(j.dev_elems > 0 && devacc < acc && j.ms.planned[ZERO_MEM_MASTER][ZERO_MEM_DEVICE] >= (size_t)j.dev_elems * 4);
    }
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        j = a; /* the same run, the optimizer offloaded */
        memset(j.w, 0, sizeof j.w);
        j.offload = 1;
        j.gacc = cases[k].gacc;
        if (cases[k].fake == 2) j.ratio = 0.5;
        if (cases[k].fake) /* (read by the ranks' mem_info) */
            j.fake_free = fake_free_bytes = cases[k].fake == 2 ? 3 * (int64_t)(acc - devacc) + (int64_t)(later + devacc) + cases[k].delta
                                                               : 3 * (int64_t)acc + cases[k].delta;
        if (cases[k].limit) setenv("ZERO_HOST_MEM_LIMIT", cases[k].limit, 1);
        if (cases[k].env) setenv("ZERO_GRAD_ACC", cases[k].env, 1);
        CHECK(zero_host_run(2, rank_fn, &j, &err) == ZERO_OK);
        unsetenv("ZERO_HOST_MEM_LIMIT");
        unsetenv("ZERO_GRAD_ACC");
        CHECKF(j.r[0] == ZERO_OK && j.r[1] == ZERO_OK, "grad place case %u: %s / %s", k, j.msg[0], j.msg[1]);
        CHECKF((j.bwd_to_dev == 0) == cases[k].device && j.bwd_to_host > 0,
               "grad place case %u: %lld bytes to the device, %lld to the host; expected the %s's sum", k,
               (long long)j.bwd_to_dev, (long long)j.bwd_to_host, cases[k].device ? "device" : "host");
        CHECKF(!memcmp(j.w[0], a.w[0], sizeof j.w[0]), "grad place case %u: the weights differ from the run without offload", k);
    }
}

/* offload_optimizer.ratio (partial offload, stage 3): the leading
   trainable units within the first (1 - ratio) of the shard's elements
   stay on the device (master, m, v,
   their gradient accumulator, the device's Adam), the rest are offloaded
   as at ratio 1. Over world 1-3, gas 1-3, the three dtypes, with and
   without offload_param "cpu": the weights and moments bitwise the run
   without offload; ratio 1 the same bytes as before (memory and copies);
   the device's optimizer state and master exactly 12 bytes per own
   element of the device's units, the host's that much less than at ratio
   1; the device's accumulator that many elements larger; and the
   backward's bytes to the host less by the device's share of the shard:
   (B1 - Br) x S == B1 x Sd (B: bytes to the host, S the own elements of
   the trainable shard, Sd the device units'). */
static void test_ratio(void) {
    static job a, one, b;
    static const double ratios[] = {1, 0, 0.3, 0.7};
    zero_error err;
    int dt, world, gas, poff, k, r, n = 0, split = 0, rules_differ = 0;
    const int quick = getenv("ZERO_TEST_QUICK") && atoi(getenv("ZERO_TEST_QUICK")); /* (sanitizer runs: worlds and gas 1, 3) */
    for (poff = 0; poff < 2; poff++)
        for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
            for (world = 1; world <= 3; world++)
                for (gas = 1; gas <= 3; gas++) {
                    if (quick && (world == 2 || gas == 2)) continue;
                    memset(&a, 0, sizeof a);
                    a.stage = 3;
                    a.dtype = dt;
                    a.gas = gas;
                    a.bucket = 64;
                    a.pin = 1;
                    a.poff = poff ? ZERO_OFFLOAD_CPU : 0;
                    CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                    CHECKF(a.r[0] == ZERO_OK, "ratio: the run without offload: %s", a.msg[0]);
                    for (k = 0; k < 4; k++) {
                        job *J = k == 0 ? &one : &b;
                        size_t dev, host, asz = gas > 1 ? 4 : zero_dtype_size((zero_dtype)dt);
                        int64_t shard;
                        *J = a;
                        memset(J->w, 0, sizeof J->w);
                        memset(J->m, 0, sizeof J->m);
                        J->offload = 1;
                        J->ratio = ratios[k];
                        J->ratio0 = ratios[k] == 0;
                        CHECK(zero_host_run(world, rank_fn, J, &err) == ZERO_OK);
                        for (r = 0; r < world; r++)
                            CHECKF(J->r[r] == ZERO_OK, "ratio %g %s world %d gas %d poff %d rank %d: %s", ratios[k],
                                   zero_dtype_name((zero_dtype)dt), world, gas, poff, r, J->msg[r]);
                        CHECKF(!memcmp(a.w[0], J->w[0], sizeof a.w[0]) && !memcmp(a.m[0], J->m[0], sizeof a.m[0]),
                               "ratio %g %s world %d gas %d poff %d: the weights or moments differ from the run without offload",
                               ratios[k], zero_dtype_name((zero_dtype)dt), world, gas, poff);
                        dev = J->ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] + J->ms.planned[ZERO_MEM_MASTER][ZERO_MEM_DEVICE];
                        host = J->ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_PINNED] + J->ms.planned[ZERO_MEM_MASTER][ZERO_MEM_PINNED];
                        shard = (int64_t)(one.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_PINNED] +
                                          one.ms.planned[ZERO_MEM_MASTER][ZERO_MEM_PINNED]) / 12;
                        CHECKF(dev == 12 * (size_t)J->dev_elems, "ratio %g world %d gas %d: %zu device bytes of master and "
                               "optimizer state, %lld own elements on the device", ratios[k], world, gas, dev, (long long)J->dev_elems);
                        CHECKF(host + dev == 12 * (size_t)shard, "ratio %g world %d gas %d: %zu host bytes, %zu device, shard %lld",
                               ratios[k], world, gas, host, dev, (long long)shard);
                        CHECKF(J->ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE] ==
                                   one.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE] + (size_t)J->dev_elems * asz,
                               "ratio %g world %d gas %d: %zu bytes of device accumulator, %zu at ratio 1, %lld elements",
                               ratios[k], world, gas, J->ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE],
                               one.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE], (long long)J->dev_elems);
                        CHECKF((one.bwd_to_host - J->bwd_to_host) * shard == one.bwd_to_host * J->dev_elems && one.bwd_to_host > 0,
                               "ratio %g %s world %d gas %d: %lld bytes to the host in the backward, %lld at ratio 1 (%lld of "
                               "%lld own elements on the device)", ratios[k], zero_dtype_name((zero_dtype)dt), world, gas,
                               (long long)J->bwd_to_host, (long long)one.bwd_to_host, (long long)J->dev_elems, (long long)shard);
                        if (J->count_elems != J->dev_elems) rules_differ++;
                        if (k == 0) /* ratio 1 is the offload of before: nothing on the device */
                            CHECK(J->dev_elems == 0 && dev == 0);
                        if (poff && k > 0) {
                            /* offload_param: the device's units keep their parameters on the device (their
                               elements' bytes moved from the host's shard to the device's, and no staging of a
                               unit's chunk on the device), none of them crosses to the host in zero_step (the
                               step's bytes to the host those of ratio 1), and the fetches bring that much less, a whole number
                               of times (each fetch of the device's units less) */
                            const size_t cs = zero_dtype_size((zero_dtype)dt);
                            zero_mem_kind hk = J->pin ? ZERO_MEM_PINNED : ZERO_MEM_HOST;
                            const int64_t less = one.all_to_dev - J->all_to_dev, unit = J->dev_elems * (int64_t)cs;
                            CHECKF(J->ms.planned[ZERO_MEM_PARAMS][hk] + (size_t)unit == one.ms.planned[ZERO_MEM_PARAMS][hk] &&
                                       J->ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE] ==
                                           one.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE] + (size_t)unit,
                                   "ratio %g %s world %d gas %d: parameters %zu host / %zu device bytes, at ratio 1 %zu / %zu, "
                                   "%lld device elements", ratios[k], zero_dtype_name((zero_dtype)dt), world, gas,
                                   J->ms.planned[ZERO_MEM_PARAMS][hk], J->ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE],
                                   one.ms.planned[ZERO_MEM_PARAMS][hk], one.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE],
                                   (long long)J->dev_elems);
                            CHECKF(J->step_to_host == one.step_to_host && one.all_to_dev > 0 &&
                                       (unit == 0 ? less == 0 : less > 0 && less % unit == 0),
                                   "ratio %g %s world %d gas %d: %lld bytes to the host in zero_step (ratio 1: %lld), %lld "
                                   "to the device (ratio 1: %lld), %lld device elements", ratios[k],
                                   zero_dtype_name((zero_dtype)dt), world, gas, (long long)J->step_to_host,
                                   (long long)one.step_to_host, (long long)J->all_to_dev, (long long)one.all_to_dev,
                                   (long long)J->dev_elems);
                            if (k == 1) { /* cfg.ratio_params_device 0: the same weights, the parameters' memory as at
                                             ratio 1, the fetches bringing the device's units' chunks again (a whole number of
                                             times more), and those chunks copied to the host after their Adam */
                                static job h;
                                h = *J;
                                memset(h.w, 0, sizeof h.w);
                                memset(h.m, 0, sizeof h.m);
                                h.params_host = 1;
                                CHECK(zero_host_run(world, rank_fn, &h, &err) == ZERO_OK);
                                CHECKF(h.r[0] == ZERO_OK && !memcmp(a.w[0], h.w[0], sizeof a.w[0]) &&
                                           !memcmp(a.m[0], h.m[0], sizeof a.m[0]) &&
                                           h.ms.planned[ZERO_MEM_PARAMS][hk] == one.ms.planned[ZERO_MEM_PARAMS][hk] &&
                                           (unit == 0 ? h.all_to_dev == J->all_to_dev
                                                      : h.all_to_dev > J->all_to_dev && (h.all_to_dev - J->all_to_dev) % unit == 0) &&
                                           h.step_to_host == J->step_to_host + unit,
                                       "ratio_params_device 0, ratio %g %s world %d gas %d: %s; host parameters %zu (ratio 1: "
                                       "%zu), to the device %lld (kept: %lld), to the host in zero_step %lld (%lld + %lld)",
                                       ratios[k], zero_dtype_name((zero_dtype)dt), world, gas, h.msg[0],
                                       h.ms.planned[ZERO_MEM_PARAMS][hk], one.ms.planned[ZERO_MEM_PARAMS][hk],
                                       (long long)h.all_to_dev, (long long)J->all_to_dev, (long long)h.step_to_host,
                                       (long long)J->step_to_host, (long long)unit);
                            }
                        }
                        if (J->dev_elems > 0 && J->dev_elems < shard) split++;
                        n++;
                    }
                }
    /* the micro-batches added on the device for the CPU's units too (cfg.grad_accum_device 1), and hybrid
       sharding (groups of 2 of 4 ranks): bitwise the run without offload */
    for (k = 0; k < 2; k++) {
        int w = k ? 4 : 2;
        memset(&a, 0, sizeof a);
        a.stage = 3;
        a.dtype = ZERO_DTYPE_BF16;
        a.gas = 2;
        a.bucket = 64;
        a.pin = 1;
        a.shard = k ? 2 : 0;
        b = a;
        b.offload = 1;
        b.ratio = 0.5;
        b.gacc = k ? 0 : 3;
        CHECK(zero_host_run(w, rank_fn, &a, &err) == ZERO_OK);
        CHECK(zero_host_run(w, rank_fn, &b, &err) == ZERO_OK);
        CHECKF(a.r[0] == ZERO_OK && b.r[0] == ZERO_OK && b.dev_elems > 0, "ratio 0.5 %s: %s / %s",
               k ? "hybrid" : "device accumulation", a.msg[0], b.msg[0]);
        CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]) &&
                   !memcmp(b.w[w - 1], b.w[0], sizeof b.w[0]),
               "ratio 0.5 %s: the weights or moments differ from the run without offload", k ? "hybrid" : "device accumulation");
        n++;
    }
    /* "nvme" with a ratio below 1, set after zero_config_resolve (which refuses it): refused at create */
    {
        char dir[] = "/tmp/zero_test_ratio_nvme_XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        memset(&b, 0, sizeof b);
        b.stage = 3;
        b.dtype = ZERO_DTYPE_FP32;
        b.gas = 1;
        b.bucket = 64;
        b.nvme = 1;
        b.dir = dir;
        b.ratio = 0.5;
        b.late_ratio = 1;
        CHECK(zero_host_run(1, rank_fn, &b, &err) == ZERO_OK);
        CHECKF(b.r[0] == ZERO_ERR_CONFIG && !strcmp(b.key[0], "zero_optimization.offload_optimizer.ratio") &&
                   strstr(b.msg[0], "HINT") != NULL,
               "nvme with ratio 0.5 at create: %d %s: %s", (int)b.r[0], b.key[0], b.msg[0]);
        rmdir(dir);
    }
    CHECKF(split > 0, "ratio: no run split the units between the device and the CPU");
    /* the units here are not of one size (1, 37, 300, 7, 129 elements), so a count of units keeps another share than
       the elements' rule in some runs: those runs tell the two apart */
    CHECKF(rules_differ > 0, "ratio: no run where a count of units would keep another share than the elements' rule");
    printf("offload_optimizer.ratio 0, 0.3, 0.7, 1: %d runs bitwise the run without offload (%d split, %d where a count "
           "of units would keep another share), memory and backward bytes to the device's share\n", n, split, rules_differ);
}

/* A checkpoint saved at ratio 0.5 resumes at ratio 1 and without offload
   (and one saved without offload at ratio 0.5): 3 steps, save, a new
   engine loads and trains 3 more; bitwise the 6 steps without a break. */
static void test_ratio_ckpt(void) {
    static job a, b, c;
    char dir[] = "/tmp/zero_test_ratio_XXXXXX", path[256], cmd[300];
    zero_error err;
    int dt, world, v, n = 0;
    CHECK(mkdtemp(dir) != NULL);
    for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
        for (world = 1; world <= 3; world++)
            for (v = 0; v < 3; v++) { /* saved at 0.5 / loaded at 1; 0.5 / none; none / 0.5 */
                memset(&a, 0, sizeof a);
                a.stage = 3;
                a.dtype = dt;
                a.gas = 2;
                a.bucket = 64;
                a.pin = 1;
                CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                snprintf(path, sizeof path, "%s/c%d_%d_%d", dir, dt, world, v);
                b = a;
                b.offload = v < 2;
                b.ratio = v < 2 ? 0.5 : 0;
                b.s1 = 3;
                b.save = path;
                CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
                CHECKF(b.r[0] == ZERO_OK, "ratio checkpoint %d: save: %s", v, b.msg[0]);
                c = a;
                memset(c.w, 0, sizeof c.w);
                c.offload = v != 1;
                c.ratio = v == 2 ? 0.5 : 0;
                c.s0 = 3;
                c.load = path;
                CHECK(zero_host_run(world, rank_fn, &c, &err) == ZERO_OK);
                CHECKF(c.r[0] == ZERO_OK, "ratio checkpoint %d: load: %s", v, c.msg[0]);
                CHECKF(!memcmp(a.w[0], c.w[0], sizeof a.w[0]) && !memcmp(a.m[0], c.m[0], sizeof a.m[0]),
                       "ratio checkpoint %s world %d variant %d: resumed weights or moments differ",
                       zero_dtype_name((zero_dtype)dt), world, v);
                n++;
            }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
    printf("offload_optimizer.ratio 0.5 checkpoints: %d resumed bitwise at ratio 1, without offload, and from it\n", n);
}

/* Host memory checked before it is taken (zero_host_mem_available, ZERO_MEM_AVAILABLE standing in for
   the node's figure): an engine whose host allocation of ZERO_MEM_CHECK_MIN bytes or more would leave less
   than ZERO_MEM_RESERVE of what is left is refused at create with ZERO_ERR_OUT_OF_MEMORY, naming the buffer, pinned or pageable, both sizes,
   where the figure came from and what to change, on every rank; one that fits, the device's memory (the
   host backend's too), allocations below the threshold and a malformed variable (ignored) create. */
typedef struct room_job {
    int64_t numel;
    int offload, pin;
    zero_result r[MAXW];
    char msg[MAXW][1024];
} room_job;
static zero_result room_rank(const zero_backend *b, void *arg) {
    room_job *J = (room_job *)arg;
    zero_config c = zero_config_default();
    zero_tensor t;
    zero_engine *e = NULL;
    zero_error err;
    memset(&t, 0, sizeof t);
    t.name = "w";
    t.numel = J->numel;
    c.train_micro_batch_size_per_gpu = 1;
    c.zero_optimization.stage = 2;
    if (J->offload) c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    c.zero_optimization.offload_optimizer.pin_memory = J->pin;
    c.log.level = ZERO_LOG_LEVEL_COUNT; /* silent: the refusals are expected */
    J->r[b->rank] = zero_config_resolve(&c, b->world, &err);
    if (J->r[b->rank] == ZERO_OK) J->r[b->rank] = zero_engine_create(&e, &c, &t, 1, b, &err);
    snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", J->r[b->rank] == ZERO_OK ? "" : err.msg);
    zero_engine_destroy(e);
    return ZERO_OK;
}
static void test_host_room(void) {
    static const struct {
        const char *avail; /* ZERO_MEM_AVAILABLE */
        int64_t numel;
        int offload, pin, world, refused;
    } cases[] = {
        {"10000000", 5000000, 1, 1, 1, 1},       /* 20 MB of master on the host, 10 MB left: refused */
        {"10000000", 10000000, 1, 0, 2, 1},      /* pageable, both ranks (their shards: 20 MB each) */
        {"1000000000000", 5000000, 1, 1, 2, 0},  /* room */
        {"10000000", 5000000, 0, 1, 1, 0},       /* no offload: the device's memory is not checked */
        {"1", 1000000, 1, 1, 1, 0},              /* 4 MB allocations: below ZERO_MEM_CHECK_MIN */
        {"12x", 5000000, 1, 1, 1, 0},            /* malformed: ignored (a warning), the node's figure */
        {"1083741824", 5000000, 1, 1, 1, 1},     /* 20 MB with ZERO_MEM_RESERVE (1 GiB) + 10 MB left: refused */
        {"2073741824", 5000000, 1, 1, 1, 0},     /* the reserve + 1 GB: room */
    };
    static room_job J;
    static char first[1024];
    zero_error err;
    unsigned k;
    int r;
    setenv("ZERO_MEM_AVAILABLE", "123456789", 1);
    CHECK(zero_host_mem_available() == 123456789.0);
    unsetenv("ZERO_MEM_AVAILABLE");
    {
        FILE *f = fopen("/proc/meminfo", "r");
        if (f) {
            fclose(f);
            CHECKF(zero_host_mem_available() > 0, "zero_host_mem_available %.0f on a machine with /proc/meminfo",
                   zero_host_mem_available());
        }
    }
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memset(&J, 0, sizeof J);
        J.numel = cases[k].numel, J.offload = cases[k].offload, J.pin = cases[k].pin;
        setenv("ZERO_MEM_AVAILABLE", cases[k].avail, 1);
        CHECK(zero_host_run(cases[k].world, room_rank, &J, &err) == ZERO_OK);
        unsetenv("ZERO_MEM_AVAILABLE");
        for (r = 0; r < cases[k].world; r++) {
            if (!cases[k].refused) {
                CHECKF(J.r[r] == ZERO_OK, "host room case %u rank %d: %s", k, r, J.msg[r]);
                continue;
            }
            CHECKF(J.r[r] == ZERO_ERR_OUT_OF_MEMORY, "host room case %u rank %d: %d (%s)", k, r, (int)J.r[r], J.msg[r]);
            CHECK_STR_CONTAINS(J.msg[r], cases[k].pin ? "GiB of pinned host memory" : "GiB of pageable host memory");
            CHECK_STR_CONTAINS(J.msg[r], atof(cases[k].avail) < 1e9 ? "this process can take 0.01 GiB more (ZERO_MEM_AVAILABLE)"
                                                                  : "this process can take 1.01 GiB more (ZERO_MEM_AVAILABLE)");
            CHECK_STR_CONTAINS(J.msg[r], "less 1.00 GiB kept for the rest of it (ZERO_MEM_RESERVE)");
            CHECK_STR_CONTAINS(J.msg[r], "HINT: offload_optimizer.ratio below 1");
            if (!first[0]) snprintf(first, sizeof first, "%s", J.msg[r]);
        }
    }
    printf("host memory checked before it is taken: %u cases; the first refusal: %s\n", k, first);
}

/* The host sum's arena sized at its first use: created at three of the largest chunk (what the plan prices), grown
   at the first micro-batch toward half of a micro-batch's host-bound chunks, within half of the host memory left over
   ZERO_MEM_RESERVE (ZERO_MEM_AVAILABLE standing in for the node's figure) per rank; not at all when that is less than
   one chunk more. The memory report's pinned GRAD_ACCUM bytes move by exactly the growth, and every size gives the
   same weights. One fp32 tensor of 4e6 elements in units of 250,000 (below ZERO_MEM_CHECK_MIN each: create is not
   refused at the small figures). */
enum { GROW_N = 4000000, GROW_UNIT = 250000 };
typedef struct grow_job {
    const char *avail;
    size_t before[MAXW], after[MAXW];
    float w[MAXW][64];
    zero_result r[MAXW];
    char msg[MAXW][1024];
} grow_job;
static zero_result grow_rank(const zero_backend *b, void *arg) {
    grow_job *J = (grow_job *)arg;
    zero_config c = zero_config_default();
    zero_tensor t;
    zero_engine *e = NULL;
    zero_error err;
    zero_memory_stats ms;
    zero_step_info info;
    int mb, r = b->rank;
    memset(&t, 0, sizeof t);
    t.name = "w";
    t.numel = GROW_N;
    c.train_micro_batch_size_per_gpu = 1;
    c.gradient_accumulation_steps = 2;
    c.zero_optimization.stage = 2;
    c.zero_optimization.reduce_bucket_size = GROW_UNIT;
    c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    c.zero_optimization.offload_optimizer.pin_memory = 1;
    c.log.level = ZERO_LOG_LEVEL_COUNT;
    setenv("ZERO_GRAD_ACC", "host", 1);
    J->r[r] = zero_config_resolve(&c, b->world, &err);
    if (J->r[r] == ZERO_OK) J->r[r] = zero_engine_create(&e, &c, &t, 1, b, &err);
    if (J->r[r] != ZERO_OK) {
        snprintf(J->msg[r], sizeof J->msg[r], "%s", err.msg);
        return ZERO_OK;
    }
    zero_memory_report(e, &ms);
    J->before[r] = ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_PINNED];
    for (mb = 0; mb < 2 && J->r[r] == ZERO_OK; mb++) {
        float *g = (float *)zero_grad(e, 0);
        int64_t i;
        if (!g) {
            J->r[r] = zero_engine_error(e)->code;
            break;
        }
        for (i = 0; i < GROW_N; i++) g[i] = (float)((i * 7 + mb * 3 + r) % 11) * 0.01f - 0.05f;
        J->r[r] = zero_grad_ready(e, 0);
    }
    if (J->r[r] == ZERO_OK) J->r[r] = zero_step(e, &info);
    if (J->r[r] == ZERO_OK) J->r[r] = zero_read_state(e, 0, ZERO_STATE_MASTER, 1000, 64, J->w[r]);
    if (J->r[r] != ZERO_OK) snprintf(J->msg[r], sizeof J->msg[r], "%s", zero_engine_error(e)->msg);
    zero_memory_report(e, &ms);
    J->after[r] = ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_PINNED];
    zero_engine_destroy(e);
    return ZERO_OK;
}
static void test_arena_grow(void) {
    static const struct {
        int world;
        double room; /* over ZERO_MEM_RESERVE; < 0: the machine's own figure */
    } cases[] = {{1, -1}, {1, 12e6}, {1, 7e6}, {2, 12e6}, {2, 1e12}};
    static grow_job J, first;
    zero_error err;
    unsigned k;
    int r;
    char avail[64];
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int W = cases[k].world;
        const int64_t place = ((int64_t)GROW_UNIT / W * 4 + 255) / 256 * 256, least = 3 * place;
        const int64_t want = ((int64_t)GROW_N / W * 4 / 2 + 255) / 256 * 256;
        int64_t cap = want;
        if (cases[k].room >= 0) {
            double half = cases[k].room / (2.0 * W);
            if (half < (double)want) cap = (int64_t)(half / 256) * 256;
        }
        if (cap < least + least / 3) cap = least;
        memset(&J, 0, sizeof J);
        snprintf(avail, sizeof avail, "%.0f", cases[k].room + 1073741824.0);
        if (cases[k].room >= 0) setenv("ZERO_MEM_AVAILABLE", avail, 1);
        CHECK(zero_host_run(W, grow_rank, &J, &err) == ZERO_OK);
        unsetenv("ZERO_MEM_AVAILABLE");
        unsetenv("ZERO_GRAD_ACC");
        for (r = 0; r < W; r++) {
            CHECKF(J.r[r] == ZERO_OK, "arena case %u rank %d: %s", k, r, J.msg[r]);
            CHECKF((int64_t)J.after[r] - (int64_t)J.before[r] == cap - least,
                   "arena case %u (world %d, %.0f bytes over the reserve) rank %d: the pinned accumulation bytes moved "
                   "by %lld, want %lld (arena %lld of %lld wanted, %lld at create)",
                   k, W, cases[k].room, r, (long long)J.after[r] - (long long)J.before[r], (long long)(cap - least),
                   (long long)cap, (long long)want, (long long)least);
        }
        if (k == 0) first = J;
        else if (W == 1) CHECKF(!memcmp(J.w[0], first.w[0], sizeof J.w[0]), "arena case %u: other weights", k);
    }
    printf("the host sum's arena sized at its first use: %u cases (grown to what it wants, to half the room, not at "
           "all), the same weights\n", k);
}

/* The gradient ring: with the optimizer offloaded and one micro-batch three slots of the largest span by default
   (the copy stream's copies hold a slot longer than the backward takes to fill the next), else two; or
   ZERO_GRAD_RING's (2 to 8, at most one per trainable span; anything else is ignored with a warning). The
   weights the same bits at every count. */
static void test_grad_ring(void) {
    static job a, j, b2;
    static const struct {
        const char *env;
        int slots; /* of the largest span's */
    } cases[] = {{"2", 2}, {"4", 4}, {"3", 3}, {"9", 3}, {"1", 3}, {"two", 3}, {"", 3}}; /* (at most the trainable spans: 4 here) */
    zero_error err;
    size_t slot;
    unsigned k;
    char outer[32] = "";
    const char *o = getenv("ZERO_GRAD_RING"); /* (the run's own, put back at the end) */
    if (o) snprintf(outer, sizeof outer, "%s", o);
    unsetenv("ZERO_GRAD_RING");
    memset(&a, 0, sizeof a);
    a.stage = 2;
    a.dtype = ZERO_DTYPE_BF16;
    a.gas = 1;
    a.bucket = 64;
    a.offload = 1;
    CHECK(zero_host_run(1, rank_fn, &a, &err) == ZERO_OK && a.r[0] == ZERO_OK);
    slot = a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] / 3;
    CHECKF(slot > 0 && a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] == 3 * slot,
           "one micro-batch offloaded: %zu bytes of gradient ring, not three slots",
           a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE]);
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        j = a;
        memset(j.w, 0, sizeof j.w);
        setenv("ZERO_GRAD_RING", cases[k].env, 1);
        CHECK(zero_host_run(1, rank_fn, &j, &err) == ZERO_OK);
        unsetenv("ZERO_GRAD_RING");
        CHECKF(j.r[0] == ZERO_OK, "ZERO_GRAD_RING=%s: %s", cases[k].env, j.msg[0]);
        CHECKF(j.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] == slot * (size_t)cases[k].slots,
               "ZERO_GRAD_RING=%s: %zu bytes of gradient ring, want %d slots of %zu", cases[k].env,
               j.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE], cases[k].slots, slot);
        CHECKF(!memcmp(j.w[0], a.w[0], sizeof j.w[0]), "ZERO_GRAD_RING=%s: other weights", cases[k].env);
    }
    /* more micro-batches and two ranks (the host's sum; the reduce-scatters): two slots by default, the same
       bits with three */
    j = a;
    j.gas = 2;
    CHECK(zero_host_run(2, rank_fn, &j, &err) == ZERO_OK && j.r[0] == ZERO_OK);
    b2 = j;
    memset(b2.w, 0, sizeof b2.w);
    setenv("ZERO_GRAD_RING", "3", 1);
    CHECK(zero_host_run(2, rank_fn, &b2, &err) == ZERO_OK);
    unsetenv("ZERO_GRAD_RING");
    CHECKF(b2.r[0] == ZERO_OK && b2.r[1] == ZERO_OK && !memcmp(b2.w[0], j.w[0], sizeof j.w[0]) &&
               2 * b2.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] == 3 * j.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE],
           "gas 2, two ranks, ZERO_GRAD_RING=3: %s; %zu bytes of gradient ring against %zu", b2.msg[0],
           b2.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE], j.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE]);
    if (o) setenv("ZERO_GRAD_RING", outer, 1);
}

int main(void) {
    static job a, b, c;
    zero_error err;
    int stage, dt, world, gas, k, r, n_sum = 0;
    zt_seed("test_engine_offload");
    test_grad_ring();
    test_host_room();
    test_arena_grow();
    test_sum_failure();
    test_grad_place();
    test_ratio();
    test_ratio_ckpt();
    for (stage = 1; stage <= 3; stage++)
        for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
            for (world = 1; world <= 3; world++)
                for (gas = 1; gas <= 3; gas++)
                    for (k = 0; k < 2; k++) {
                        memset(&a, 0, sizeof a);
                        memset(&b, 0, sizeof b);
                        a.stage = b.stage = stage;
                        a.dtype = b.dtype = dt;
                        a.gas = b.gas = gas;
                        a.bucket = b.bucket = k ? 64 : 500000000;
                        a.pin = b.pin = 1;
                        b.offload = 1;
                        b.pin = (world + gas) % 2; /* pinned and ordinary host memory both */
                        CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                        CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
                        for (r = 0; r < world; r++)
                            CHECKF(a.r[r] == ZERO_OK && b.r[r] == ZERO_OK, "stage %d %s world %d gas %d: %s / %s", stage,
                                   zero_dtype_name((zero_dtype)dt), world, gas, a.msg[r], b.msg[r]);
                        CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]),
                               "stage %d %s world %d gas %d bucket %lld: offload changed the weights or moments", stage,
                               zero_dtype_name((zero_dtype)dt), world, gas, (long long)a.bucket);
                        if (stage >= 2 && gas > 1) {
                            /* the micro-batches before the last cross to the host once, in the compute
                               dtype, and the CPU adds them; the last brings the sum X (accumulation dtype,
                               fp32) to the device, adds there and sends it back: to the device X, to the
                               host (G - 1) X d / 4 + X. ZERO_HOST_SUM=0 adds every micro-batch on the
                               device: (G - 1) X to the device, G X to the host; the same bits. */
                            int64_t x = b.bwd_to_dev, d = (int64_t)zero_dtype_size((zero_dtype)dt);
                            CHECKF(x > 0 && b.bwd_to_host == (gas - 1) * x * d / 4 + x,
                                   "stage %d %s world %d gas %d: backward copies %lld to the host, %lld to the device", stage,
                                   zero_dtype_name((zero_dtype)dt), world, gas, (long long)b.bwd_to_host, (long long)x);
                            /* the CPU's adds of the micro-batches before the last, X / 4 elements each: the chunk
                               read (d bytes), the fp32 sum written by the first, read and written by the rest */
                            CHECKF(b.cpu_sum == (gas - 1) * x * d / 4 + x + (gas - 2) * 2 * x,
                                   "stage %d %s world %d gas %d: cpu_sum_bytes %lld, want %lld (X %lld)", stage,
                                   zero_dtype_name((zero_dtype)dt), world, gas, (long long)b.cpu_sum,
                                   (long long)((gas - 1) * x * d / 4 + x + (gas - 2) * 2 * x), (long long)x);
                            c = b;
                            c.bwd_to_dev = c.bwd_to_host = 0;
                            setenv("ZERO_HOST_SUM", "0", 1);
                            CHECK(zero_host_run(world, rank_fn, &c, &err) == ZERO_OK);
                            unsetenv("ZERO_HOST_SUM");
                            CHECKF(c.r[0] == ZERO_OK && !memcmp(c.w[0], b.w[0], sizeof c.w[0]) && !memcmp(c.m[0], b.m[0], sizeof c.m[0]),
                                   "stage %d %s world %d gas %d: ZERO_HOST_SUM=0 changed the weights or moments (%s)", stage,
                                   zero_dtype_name((zero_dtype)dt), world, gas, c.msg[0]);
                            CHECKF(c.bwd_to_dev == (gas - 1) * x && c.bwd_to_host == gas * x && c.cpu_sum == 0,
                                   "stage %d %s world %d gas %d, ZERO_HOST_SUM=0: %lld to the host, %lld to the device (X %lld)",
                                   stage, zero_dtype_name((zero_dtype)dt), world, gas, (long long)c.bwd_to_host,
                                   (long long)c.bwd_to_dev, (long long)x);
                            /* ZERO_GRAD_ACC=device: the micro-batches add up in a device accumulator of
                               the no-offload run's size, and the sum X crosses once, on the last; the same bits */
                            c = b;
                            c.bwd_to_dev = c.bwd_to_host = 0;
                            setenv("ZERO_GRAD_ACC", "device", 1);
                            CHECK(zero_host_run(world, rank_fn, &c, &err) == ZERO_OK);
                            unsetenv("ZERO_GRAD_ACC");
                            CHECKF(c.r[0] == ZERO_OK && !memcmp(c.w[0], a.w[0], sizeof c.w[0]) && !memcmp(c.m[0], a.m[0], sizeof c.m[0]),
                                   "stage %d %s world %d gas %d: the device's accumulation changed the weights or moments (%s)",
                                   stage, zero_dtype_name((zero_dtype)dt), world, gas, c.msg[0]);
                            CHECKF(c.bwd_to_dev == 0 && c.bwd_to_host == x && c.cpu_sum == 0,
                                   "stage %d %s world %d gas %d, ZERO_GRAD_ACC=device: %lld to the host, %lld to the device (X %lld)",
                                   stage, zero_dtype_name((zero_dtype)dt), world, gas, (long long)c.bwd_to_host,
                                   (long long)c.bwd_to_dev, (long long)x);
                            CHECKF(c.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE] == a.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE],
                                   "stage %d world %d gas %d: device accumulator %zu bytes, %zu without offload", stage, world, gas,
                                   c.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE], a.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE]);
                            n_sum++;
                        }
                        /* master and moments moved off the device, to the kind asked for */
                        {
                            zero_mem_kind host = b.pin ? ZERO_MEM_PINNED : ZERO_MEM_HOST;
                            size_t moved = a.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE];
                            CHECK(b.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] == 0);
                            CHECK(b.ms.planned[ZERO_MEM_OPTIM_STATE][host] == moved);
                            CHECK(b.ms.planned[ZERO_MEM_MASTER][ZERO_MEM_DEVICE] == 0);
                            CHECK(b.ms.planned[ZERO_MEM_MASTER][host] == moved / 2); /* 4 of m + v's 8 bytes */
                            CHECK(b.ms.planned_total[ZERO_MEM_DEVICE] < a.ms.planned_total[ZERO_MEM_DEVICE]);
                            for (r = 0; r < ZERO_MEM_KIND_COUNT; r++) CHECK(b.ms.allocated[r] == b.ms.planned_total[r]);
                            if (stage >= 2) {
                                /* the reduced chunks accumulate in the host staging (the size of the device
                                   accumulator the run without offload has); the device keeps one chunk of
                                   staging for gas 2 (the largest: the shard of the largest unit), none for gas 1 */
                                size_t acc = a.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE];
                                size_t stg = b.ms.planned[ZERO_MEM_GRAD_ACCUM][ZERO_MEM_DEVICE];
                                CHECKF(b.ms.planned[ZERO_MEM_GRADS][host] == acc,
                                       "stage %d gas %d: host gradient staging %zu bytes, device accumulator without offload %zu",
                                       stage, gas, b.ms.planned[ZERO_MEM_GRADS][host], acc);
                                CHECKF(gas == 1 ? stg == 0 : stg > 0 && stg <= acc && stg % 4 == 0,
                                       "stage %d gas %d world %d: %zu bytes of device accumulation staging (accumulator %zu)",
                                       stage, gas, world, stg, acc);
                                /* the same ring, except that stage 2 on one rank with gas 1 has none
                                   without offload (the backward writes into the accumulator), while the
                                   offloaded run keeps it (the chunks go to the host from the slot), and
                                   that with one micro-batch the offloaded ring has three slots, not two */
                                if (stage == 2 && world == 1 && gas == 1)
                                    CHECK(a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] == 0 &&
                                          b.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] > 0);
                                else /* (stage 3 without offload: the persistent spans have buffers of their own beside
                                           the ring, which then holds the other spans alone, maybe none) */
                                    CHECKF((stage == 3 ? b.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] >=
                                                             a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] - a.ms.grad_persist_bytes
                                                       : b.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] * 2 ==
                                                             a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] * (gas == 1 ? 3 : 2)) &&
                                               b.ms.grad_persist_spans == 0 && (stage == 3) == (a.ms.grad_persist_spans > 0),
                                           "stage %d gas %d world %d: gradients %zu bytes offloaded, %zu (%d persistent spans, "
                                           "%zu bytes) without", stage, gas, world, b.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE],
                                           a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE], a.ms.grad_persist_spans,
                                           a.ms.grad_persist_bytes);
                            }
                        }
                    }
    printf("gradient accumulation with the optimizer offloaded: %d runs add the micro-batches on the CPU, bitwise the "
           "device's sum (ZERO_HOST_SUM=0), each one's bytes checked\n", n_sum);
    /* hybrid sharding with the optimizer offloaded: 4 ranks as 2 groups of 2
       and 4 groups of 1; the reduced chunk crosses the groups before it goes
       to the host (stages 2-3: the host staging; the early CPU step; the
       delayed update): bitwise the hybrid run without offload, every rank
       the same weights */
    {
        int n = 0, v;
        for (stage = 1; stage <= 3; stage++)
            for (gas = 1; gas <= 2; gas++)
                for (v = 0; v < 3; v++) { /* 0: CPU step in zero_step; 1: early CPU step; 2: delayed update */
                    int sh = 1 + (stage + gas + v) % 2; /* 1 or 2 */
                    if (v == 2 && stage == 3) continue; /* (delayed update: stages 1-2 here) */
                    memset(&a, 0, sizeof a);
                    memset(&b, 0, sizeof b);
                    a.stage = b.stage = stage;
                    /* (bf16 checks its gradients for overflow at stages 1-2: no early step there) */
                    a.dtype = b.dtype = v == 1 ? ZERO_DTYPE_FP32 : ZERO_DTYPE_BF16;
                    a.gas = b.gas = gas;
                    a.bucket = b.bucket = 64;
                    a.pin = b.pin = 1;
                    a.shard = b.shard = sh;
                    a.noclip = b.noclip = v == 1;
                    b.offload = 1;
                    b.dpu = v == 2;
                    a.stale = b.stale = v == 2; /* the delayed update's gradients come from the previous weights */
                    CHECK(zero_host_run(4, rank_fn, &a, &err) == ZERO_OK);
                    CHECK(zero_host_run(4, rank_fn, &b, &err) == ZERO_OK);
                    for (r = 0; r < 4; r++)
                        CHECKF(a.r[r] == ZERO_OK && b.r[r] == ZERO_OK, "hybrid stage %d gas %d variant %d rank %d: %s / %s",
                               stage, gas, v, r, a.msg[r], b.msg[r]);
                    for (r = 1; r < 4; r++)
                        CHECKF(!memcmp(b.w[r], b.w[0], sizeof b.w[0]), "hybrid offload stage %d gas %d: rank %d's weights "
                               "differ from rank 0's", stage, gas, r);
                    if (v == 2) continue; /* (the delayed update trains on other weights: compared with itself above) */
                    CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]),
                           "hybrid (mics_shard_size %d) stage %d gas %d variant %d: offload changed the weights or moments",
                           sh, stage, gas, v);
                    if (v == 1) CHECKF(b.early_units > 0, "hybrid stage %d gas %d: no unit stepped early", stage, gas);
                    n++;
                }
        /* offload_param cpu and nvme at stage 3 under groups of 2: each rank's shard in its own host memory or
           file, fetched and gathered inside the group */
        for (v = 0; v < 2; v++) {
            char pdir[] = "/tmp/zero_test_hyb_XXXXXX";
            if (v && !mkdtemp(pdir)) { CHECK(0); break; }
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            a.stage = b.stage = 3;
            a.dtype = b.dtype = ZERO_DTYPE_BF16;
            a.gas = b.gas = 2;
            a.bucket = b.bucket = 64;
            a.pin = b.pin = 1;
            a.shard = b.shard = 2;
            b.poff = v ? ZERO_OFFLOAD_NVME : ZERO_OFFLOAD_CPU;
            b.dir = v ? pdir : NULL;
            CHECK(zero_host_run(4, rank_fn, &a, &err) == ZERO_OK);
            CHECK(zero_host_run(4, rank_fn, &b, &err) == ZERO_OK);
            for (r = 0; r < 4; r++)
                CHECKF(a.r[r] == ZERO_OK && b.r[r] == ZERO_OK, "hybrid offload_param %s rank %d: %s / %s", v ? "nvme" : "cpu",
                       r, a.msg[r], b.msg[r]);
            CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(b.w[3], b.w[0], sizeof b.w[0]),
                   "hybrid offload_param %s: the weights differ from the run without it (or between groups)", v ? "nvme" : "cpu");
            n++;
            if (v) rmdir(pdir);
        }
        printf("hybrid sharding with offload_optimizer cpu and offload_param: %d runs bitwise the hybrid run without offload\n", n);
    }
    /* the SIMD CPU Adam of zero_offload.h behind the engine */
    double worst[ZERO_DTYPE_COUNT] = {0, 0, 0, 0};
    for (stage = 1; stage <= 3; stage += 2)
        for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
            for (k = 0; k < 2; k++) { /* k = 1: ZERO_NO_SIMD, the scalar path: bitwise */
                double maxw = 0, maxd = 0;
                size_t i;
                memset(&a, 0, sizeof a);
                memset(&b, 0, sizeof b);
                a.stage = b.stage = stage;
                a.dtype = b.dtype = dt;
                a.gas = b.gas = 2;
                a.bucket = b.bucket = 64;
                a.pin = b.pin = 1;
                b.offload = b.simd = 1;
                if (k) setenv("ZERO_NO_SIMD", "1", 1);
                CHECK(zero_host_run(2, rank_fn, &a, &err) == ZERO_OK);
                CHECK(zero_host_run(2, rank_fn, &b, &err) == ZERO_OK);
                unsetenv("ZERO_NO_SIMD");
                CHECKF(b.r[0] == ZERO_OK && b.r[1] == ZERO_OK, "simd stage %d: %s", stage, b.msg[0]);
                for (i = 0; i < TOTAL; i++) {
                    maxw = fmax(maxw, fabs(a.w[0][i]));
                    maxd = fmax(maxd, fabs((double)a.w[0][i] - b.w[0][i]));
                }
                if (k)
                    CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]),
                           "stage %d %s: the scalar CPU Adam changed the weights", stage, zero_dtype_name((zero_dtype)dt));
                else if (maxw > 0 && maxd / maxw > worst[dt]) worst[dt] = maxd / maxw;
                if (!k) /* FMA and another order of fp32 operations; a 16-bit rounding may flip and feed back */
                    /* fp32: a few ulp after 6 steps; 16-bit: one bf16 ulp of max|w| (2^-8) covers a
                       flipped rounding fed back (seen: 1e-7 for all three dtypes) */
                    CHECKF(maxd <= (dt == ZERO_DTYPE_FP32 ? 1e-6 : 4e-3) * maxw,
                           "stage %d %s: SIMD CPU Adam differs by %.3g (max|w| %.3g)", stage,
                           zero_dtype_name((zero_dtype)dt), maxd, maxw);
            }
    printf("SIMD CPU Adam (%s) vs the host backend's, after 6 steps, max |dw| / max|w|: fp32 %.3g, fp16 %.3g, bf16 %.3g\n",
           zero_simd_level_name(zero_cpu_simd_level(NULL)), worst[ZERO_DTYPE_FP32], worst[ZERO_DTYPE_FP16],
           worst[ZERO_DTYPE_BF16]);
    /* offload_optimizer "nvme": master, m and v in a file under a temporary
       directory, the scalar CPU Adam: bitwise the run without offload */
    {
        char dir[] = "/tmp/zero_test_nvme_XXXXXX", missing[1100];
        CHECK(mkdtemp(dir) != NULL);
        setenv("ZERO_NO_SIMD", "1", 1);
        for (stage = 1; stage <= 3; stage++)
            for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_FP16; dt++)
                for (world = 1; world <= 2; world++)
                    for (gas = 1; gas <= 2; gas++) {
                        memset(&a, 0, sizeof a);
                        memset(&b, 0, sizeof b);
                        a.stage = b.stage = stage;
                        a.dtype = b.dtype = dt;
                        a.gas = b.gas = gas;
                        a.bucket = b.bucket = (stage + gas) % 2 ? 64 : 500000000;
                        a.pin = 1;
                        b.pin = (world + gas) % 2;
                        b.nvme = 1;
                        b.dir = dir;
                        CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                        CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
                        for (r = 0; r < world; r++)
                            CHECKF(a.r[r] == ZERO_OK && b.r[r] == ZERO_OK, "nvme stage %d %s world %d gas %d: %s / %s",
                                   stage, zero_dtype_name((zero_dtype)dt), world, gas, a.msg[r], b.msg[r]);
                        CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]),
                               "nvme stage %d %s world %d gas %d: offload to NVMe changed the weights or moments", stage,
                               zero_dtype_name((zero_dtype)dt), world, gas);
                        {   /* no master, m, v on the device or as shards on the host: tile buffers and the file */
                            zero_mem_kind host = b.pin ? ZERO_MEM_PINNED : ZERO_MEM_HOST;
                            size_t mv = a.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE]; /* 8 x trainable shard */
                            size_t tiles = b.ms.planned[ZERO_MEM_OPTIM_STATE][host];
                            for (r = 0; r < ZERO_MEM_KIND_COUNT; r++) CHECK(b.ms.planned[ZERO_MEM_MASTER][r] == 0);
                            CHECK(b.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] == 0);
                            CHECK(b.ms.planned[ZERO_MEM_OPTIM_STATE][host == ZERO_MEM_PINNED ? ZERO_MEM_HOST : ZERO_MEM_PINNED] == 0);
                            CHECKF(tiles > 0 && tiles % (4 * 12) == 0, "tile buffers %zu bytes", tiles); /* 4 buffers */
                            CHECK(b.ms.nvme_bytes == mv / 8 * 12);
                            CHECK(a.ms.nvme_bytes == 0);
                            CHECK(b.ms.planned_total[ZERO_MEM_DEVICE] < a.ms.planned_total[ZERO_MEM_DEVICE]);
                            for (r = 0; r < ZERO_MEM_KIND_COUNT; r++) CHECK(b.ms.allocated[r] == b.ms.planned_total[r]);
                        }
                    }
        /* a byte of the file flipped between steps: the next step fails with
           NVME_CORRUPT naming the file, every rank, no hang */
        for (world = 1; world <= 2; world++) {
            memset(&b, 0, sizeof b);
            b.stage = 2;
            b.dtype = ZERO_DTYPE_FP16;
            b.gas = 1;
            b.bucket = 64;
            b.pin = 1;
            b.nvme = 1;
            b.corrupt = 1;
            b.dir = dir;
            CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
            for (r = 0; r < world; r++) {
                CHECKF(b.r[r] == ZERO_ERR_CORRUPT && b.item[r] == ZERO_MSG_NVME_CORRUPT, "corrupt world %d rank %d: %d %s",
                       world, r, (int)b.r[r], b.msg[r]);
                CHECK_STR_CONTAINS(b.msg[r], "zero_optim.rank");
                CHECK_STR_CONTAINS(b.msg[r], dir);
            }
        }
        unsetenv("ZERO_NO_SIMD");
        /* a missing directory: the store's error, naming the path */
        snprintf(missing, sizeof missing, "%s/no_such_dir", dir);
        memset(&b, 0, sizeof b);
        b.stage = 1;
        b.dtype = ZERO_DTYPE_FP32;
        b.gas = 1;
        b.bucket = 64;
        b.nvme = 1;
        b.dir = missing;
        CHECK(zero_host_run(2, rank_fn, &b, &err) == ZERO_OK);
        for (r = 0; r < 2; r++) {
            CHECKF(b.r[r] == ZERO_ERR_IO, "missing dir: %d %s", (int)b.r[r], b.msg[r]);
            CHECK_STR_CONTAINS(b.msg[r], "no_such_dir");
        }
        /* the host backend alone has no tile store */
        b.dir = dir;
        b.no_hooks = 1;
        CHECK(zero_host_run(1, rank_fn, &b, &err) == ZERO_OK);
        CHECK(b.r[0] == ZERO_ERR_CONFIG);
        CHECK_STR_CONTAINS(b.msg[0], "tile store");
        CHECK_STR_CONTAINS(b.key[0], "offload_optimizer.device");
        CHECK_STR_CONTAINS(b.msg[0], "zero_offload_backend");
        /* an empty nvme_path: refused naming the key (zero_config_resolve refuses it first) */
        {
            zero_config c = zero_config_default();
            c.train_micro_batch_size_per_gpu = 1;
            c.zero_optimization.stage = 2;
            c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_NVME;
            CHECK(zero_config_resolve(&c, 1, &err) != ZERO_OK);
            CHECK_STR_CONTAINS(err.msg, "nvme_path");
        }
        b.no_hooks = 0;
        b.clear_path = 1;
        CHECK(zero_host_run(1, rank_fn, &b, &err) == ZERO_OK);
        CHECK(b.r[0] == ZERO_ERR_CONFIG);
        CHECK_STR_CONTAINS(b.msg[0], "empty");
        CHECK_STR_CONTAINS(b.key[0], "offload_optimizer.nvme_path");
        /* every file removed: the directory is empty again */
        CHECKF(rmdir(dir) == 0, "rmdir %s: files left behind", dir);
    }
    /* stage 0 with offload: DeepSpeed's rule, refused by the config */
    {
        zero_config c = zero_config_default();
        c.train_micro_batch_size_per_gpu = 1;
        c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        CHECK(zero_config_resolve(&c, 1, &err) != ZERO_OK);
    }
    /* the early CPU step: without clipping or an overflow check (fp32, bf16)
       the engine's thread steps each unit as its gradient reaches the host,
       during the backward: bitwise the run without offload */
    {
        int nruns = 0;
        int64_t early = 0;
        for (stage = 1; stage <= 3; stage++)
            for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
                for (world = 1; world <= 3; world++)
                    for (gas = 1; gas <= 2; gas++) {
                        if (dt == ZERO_DTYPE_FP16) continue; /* its overflow check needs the whole gradient */
                        memset(&a, 0, sizeof a);
                        memset(&b, 0, sizeof b);
                        a.stage = b.stage = stage;
                        a.dtype = b.dtype = dt;
                        a.gas = b.gas = gas;
                        a.bucket = b.bucket = (stage + world) % 2 ? 64 : 500000000;
                        a.pin = b.pin = 1;
                        a.noclip = b.noclip = 1;
                        a.frozen = b.frozen = world == 2;
                        b.offload = 1;
                        b.simd = world == 3; /* the pool under the engine's thread */
                        if (!b.simd) setenv("ZERO_NO_SIMD", "1", 1);
                        CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                        CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
                        unsetenv("ZERO_NO_SIMD");
                        for (r = 0; r < world; r++)
                            CHECKF(a.r[r] == ZERO_OK && b.r[r] == ZERO_OK, "early stage %d %s world %d gas %d: %s / %s",
                                   stage, zero_dtype_name((zero_dtype)dt), world, gas, a.msg[r], b.msg[r]);
                        {   /* bf16 on stages 1-2 checks overflow by default (bf16.check_grad_overflow, DeepSpeed
                               NEW): the step waits for the whole gradient there */
                            int expect = !(dt == ZERO_DTYPE_BF16 && stage <= 2);
                            CHECKF((b.early_units > 0) == expect && a.early_units == 0,
                                   "early stage %d %s world %d: %lld units early (expected %s)", stage,
                                   zero_dtype_name((zero_dtype)dt), world, (long long)b.early_units, expect ? "some" : "none");
                        }
                        if (!b.simd) {
                            CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]),
                                   "early stage %d %s world %d gas %d: the early CPU step changed the weights", stage,
                                   zero_dtype_name((zero_dtype)dt), world, gas);
                        } else { /* the SIMD CPU Adam: within its rounding (see the SIMD section above) */
                            double maxw = 0, maxd = 0;
                            size_t i;
                            for (i = 0; i < TOTAL; i++) {
                                maxw = fmax(maxw, fabs(a.w[0][i]));
                                maxd = fmax(maxd, fabs((double)a.w[0][i] - b.w[0][i]));
                            }
                            CHECKF(maxd <= (dt == ZERO_DTYPE_FP32 ? 1e-6 : 4e-3) * maxw,
                                   "early stage %d %s world %d: SIMD differs by %.3g (max|w| %.3g)", stage,
                                   zero_dtype_name((zero_dtype)dt), world, maxd, maxw);
                        }
                        early += b.early_units;
                        nruns++;
                    }
        printf("early CPU step: %d runs (%lld units stepped during the backward), bitwise the run without offload "
               "(scalar CPU Adam)\n", nruns, (long long)early);
    }
    /* delayed_param_update: the CPU Adam of step t runs beside step t+1's
       forward and backward, which see the parameters of step t-1. The same
       computation serially (no delay; the gradients of step t from the values
       step t-1's forward saw) gives bitwise the same weights and moments, and
       the run without delay does not (the delay is real) */
    {
        int nruns = 0, differ = 0;
        setenv("ZERO_NO_SIMD", "1", 1);
        for (stage = 1; stage <= 3; stage++)
            for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
                for (world = 1; world <= 2; world++)
                    for (gas = 1; gas <= 2; gas++) {
                        static job c0;
                        memset(&a, 0, sizeof a);
                        memset(&b, 0, sizeof b);
                        memset(&c0, 0, sizeof c0);
                        a.stage = b.stage = c0.stage = stage;
                        a.dtype = b.dtype = c0.dtype = dt;
                        a.gas = b.gas = c0.gas = gas;
                        a.bucket = b.bucket = c0.bucket = (stage + gas) % 2 ? 64 : 500000000;
                        a.pin = b.pin = c0.pin = 1;
                        a.offload = b.offload = c0.offload = 1;
                        a.frozen = b.frozen = c0.frozen = world == 2;
                        a.dpu = 1;
                        a.simd = (stage + dt) % 3 == 0; /* the pool's threads under the engine's thread */
                        b.simd = a.simd;
                        b.stale = 1;
                        CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                        CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
                        CHECK(zero_host_run(world, rank_fn, &c0, &err) == ZERO_OK);
                        for (r = 0; r < world; r++)
                            CHECKF(a.r[r] == ZERO_OK && b.r[r] == ZERO_OK && c0.r[r] == ZERO_OK,
                                   "dpu stage %d %s world %d gas %d: %s / %s / %s", stage, zero_dtype_name((zero_dtype)dt),
                                   world, gas, a.msg[r], b.msg[r], c0.msg[r]);
                        CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]),
                               "dpu stage %d %s world %d gas %d: the delayed update differs from the same staleness "
                               "computed serially", stage, zero_dtype_name((zero_dtype)dt), world, gas);
                        differ += memcmp(a.w[0], c0.w[0], sizeof a.w[0]) != 0;
                        /* two staging pairs: the second one on top of "cpu"'s */
                        CHECK(a.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_PINNED] == 2 * c0.ms.planned[ZERO_MEM_GRADS][ZERO_MEM_PINNED]);
                        CHECK(a.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_PINNED] == 2 * c0.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_PINNED]);
                        for (r = 0; r < ZERO_MEM_KIND_COUNT; r++) CHECK(a.ms.allocated[r] == a.ms.planned_total[r]);
                        nruns++;
                    }
        CHECKF(differ == nruns, "the delayed update equals the undelayed run in %d of %d runs", nruns - differ, nruns);
        /* destroyed while the delayed Adam runs: it finishes first (ASan sees no use after free) */
        memset(&a, 0, sizeof a);
        a.stage = 2;
        a.dtype = ZERO_DTYPE_BF16;
        a.gas = 1;
        a.bucket = 64;
        a.pin = 1;
        a.offload = a.dpu = a.destroy_early = 1;
        CHECK(zero_host_run(2, rank_fn, &a, &err) == ZERO_OK);
        CHECK(a.r[0] == ZERO_OK && a.r[1] == ZERO_OK);
        unsetenv("ZERO_NO_SIMD");
        printf("delayed_param_update: %d runs bitwise equal to the serial computation with one step of staleness\n", nruns);
        /* refused where it cannot work: not "cpu", or with offload_param */
        {
            zero_config c = zero_config_default();
            c.train_micro_batch_size_per_gpu = 1;
            c.zero_optimization.stage = 3;
            c.zero_optimization.offload_optimizer.delayed_param_update = 1;
            CHECK(zero_config_resolve(&c, 1, &err) == ZERO_ERR_CONFIG);
            CHECK_STR_CONTAINS(err.key, "delayed_param_update");
            c = zero_config_default();
            c.train_micro_batch_size_per_gpu = 1;
            c.zero_optimization.stage = 3;
            c.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
            c.zero_optimization.offload_param.device = ZERO_OFFLOAD_CPU;
            c.zero_optimization.offload_optimizer.delayed_param_update = 1;
            CHECK(zero_config_resolve(&c, 1, &err) == ZERO_ERR_CONFIG);
            CHECK_STR_CONTAINS(err.msg, "offload_param");
        }
    }
    /* offload_param (stage 3): the compute-dtype shard on the host or in a
       file, with the optimizer on the device, the host or NVMe: bitwise the
       same run without parameter offload */
    {
        char dir[] = "/tmp/zero_test_poff_XXXXXX";
        int poff, opt, nruns = 0;
        CHECK(mkdtemp(dir) != NULL);
        setenv("ZERO_NO_SIMD", "1", 1);
        for (poff = ZERO_OFFLOAD_CPU; poff <= ZERO_OFFLOAD_NVME; poff++)
            for (opt = 0; opt < 3; opt++)
                for (dt = ZERO_DTYPE_FP32; dt <= ZERO_DTYPE_BF16; dt++)
                    for (world = 1; world <= 3; world++)
                        for (gas = 1; gas <= 2; gas++) {
                            int variant = (poff + opt + dt + world + gas) % 2;
                            memset(&a, 0, sizeof a);
                            memset(&b, 0, sizeof b);
                            a.stage = b.stage = 3;
                            a.dtype = b.dtype = dt;
                            a.gas = b.gas = gas;
                            a.bucket = b.bucket = variant ? 64 : 500000000;
                            a.small_pool = b.small_pool = variant;
                            a.frozen = b.frozen = world == 2;
                            a.pin = 1;
                            b.pin = (world + gas + opt) % 2;
                            b.poff = poff;
                            b.pbufs = variant ? 2 : 0; /* 2 buffers: every unit evicts; else DeepSpeed's 5 */
                            b.offload = opt == 1;
                            b.nvme = opt == 2;
                            b.dir = dir;
                            CHECK(zero_host_run(world, rank_fn, &a, &err) == ZERO_OK);
                            CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
                            for (r = 0; r < world; r++)
                                CHECKF(a.r[r] == ZERO_OK && b.r[r] == ZERO_OK,
                                       "offload_param %d optimizer %d %s world %d gas %d: %s / %s", poff, opt,
                                       zero_dtype_name((zero_dtype)dt), world, gas, a.msg[r], b.msg[r]);
                            CHECKF(!memcmp(a.w[0], b.w[0], sizeof a.w[0]) && !memcmp(a.m[0], b.m[0], sizeof a.m[0]),
                                   "offload_param %d optimizer %d %s world %d gas %d: parameter offload changed the "
                                   "weights or moments",
                                   poff, opt, zero_dtype_name((zero_dtype)dt), world, gas);
                            /* the overlapped CPU step (offload_param and optimizer "cpu"): units left to the
                               thread every step where spans are not persistent (small_pool: threshold 0;
                               otherwise this model's tensors are all under DeepSpeed's threshold, and
                               persistent units are stepped in zero_step), none without it; bitwise the
                               same with it off, and a destroy while the thread still steps neither hangs
                               nor leaks */
                            CHECKF((b.overlapped > 0) == (poff == ZERO_OFFLOAD_CPU && opt == 1 && variant),
                                   "offload_param %d optimizer %d: %lld units overlapped", poff, opt, (long long)b.overlapped);
                            if (poff == ZERO_OFFLOAD_CPU && opt == 1) {
                                job c0 = b;
                                memset(c0.r, 0, sizeof c0.r);
                                c0.overlapped = 0;
                                c0.no_overlap = 1;
                                CHECK(zero_host_run(world, rank_fn, &c0, &err) == ZERO_OK);
                                CHECKF(c0.overlapped == 0 && c0.r[0] == ZERO_OK && !memcmp(c0.w[0], b.w[0], sizeof b.w[0]) &&
                                           !memcmp(c0.m[0], b.m[0], sizeof b.m[0]),
                                       "overlap_cpu_step 0, %s world %d gas %d: %lld units overlapped, or other weights",
                                       zero_dtype_name((zero_dtype)dt), world, gas, (long long)c0.overlapped);
                                c0 = b;
                                memset(c0.r, 0, sizeof c0.r);
                                c0.destroy_early = 1;
                                CHECK(zero_host_run(world, rank_fn, &c0, &err) == ZERO_OK);
                                for (r = 0; r < world; r++) CHECK(c0.r[r] == ZERO_OK);
                            }
                            {   /* the shard left the device: on the host, or tile buffers + the file */
                                zero_mem_kind host = b.pin ? ZERO_MEM_PINNED : ZERO_MEM_HOST;
                                size_t shard = a.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE]; /* S x d */
                                size_t d = zero_dtype_size((zero_dtype)dt), optim_nvme = opt == 2 ? a.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] / 8 * 12 : 0;
                                size_t dev = b.ms.planned[ZERO_MEM_PARAMS][ZERO_MEM_DEVICE];
                                /* device Adam: one unit's chunk of staging, at most 64 / world x 8 rounded */
                                CHECKF(opt ? dev == 0 : dev > 0 && dev <= d * (size_t)(variant ? 64 : TOTAL + 64),
                                       "device parameter bytes %zu", dev);
                                if (poff == ZERO_OFFLOAD_CPU) {
                                    CHECK(b.ms.planned[ZERO_MEM_PARAMS][host] == shard);
                                    CHECK(b.ms.nvme_bytes == optim_nvme);
                                } else {
                                    size_t bufs = b.ms.planned[ZERO_MEM_PARAMS][host];
                                    CHECKF(bufs > 0 && bufs % (size_t)(variant ? 2 : 5) == 0, "buffers %zu", bufs);
                                    CHECK(b.ms.nvme_bytes == optim_nvme + shard);
                                }
                                /* less on the device; with device Adam the staging of one unit stays
                                   (as large as the shard when a unit holds a whole tensor), and fp32
                                   needs its own master there (the device parameters were the master) */
                                if (opt)
                                    CHECK(b.ms.planned_total[ZERO_MEM_DEVICE] < a.ms.planned_total[ZERO_MEM_DEVICE]);
                                else if (dt != ZERO_DTYPE_FP32)
                                    CHECK(b.ms.planned_total[ZERO_MEM_DEVICE] <= a.ms.planned_total[ZERO_MEM_DEVICE]);
                                else
                                    CHECK(b.ms.planned[ZERO_MEM_MASTER][ZERO_MEM_DEVICE] ==
                                          a.ms.planned[ZERO_MEM_OPTIM_STATE][ZERO_MEM_DEVICE] / 2);
                                for (r = 0; r < ZERO_MEM_KIND_COUNT; r++) CHECK(b.ms.allocated[r] == b.ms.planned_total[r]);
                            }
                            nruns++;
                        }
        printf("offload_param: %d runs bitwise equal to the runs without it\n", nruns);
        /* a byte of the parameter file flipped between steps: the next fetch
           fails with NVME_CORRUPT naming the file, every rank, no hang */
        for (world = 1; world <= 2; world++) {
            memset(&b, 0, sizeof b);
            b.stage = 3;
            b.dtype = ZERO_DTYPE_BF16;
            b.gas = 1;
            b.bucket = 64;
            b.small_pool = 1;
            b.pin = 1;
            b.poff = ZERO_OFFLOAD_NVME;
            b.pcorrupt = 1;
            b.dir = dir;
            CHECK(zero_host_run(world, rank_fn, &b, &err) == ZERO_OK);
            for (r = 0; r < world; r++) {
                CHECKF(b.r[r] != ZERO_OK, "parameter file corrupt world %d rank %d: no error", world, r);
                if (r == 0) { /* rank 0's own file was read: its store names it; peers may see the failed collective */
                    CHECKF(b.r[r] == ZERO_ERR_CORRUPT && b.item[r] == ZERO_MSG_NVME_CORRUPT, "world %d: %d %s", world,
                           (int)b.r[r], b.msg[r]);
                    CHECK_STR_CONTAINS(b.msg[r], "zero_param.rank0");
                }
            }
        }
        unsetenv("ZERO_NO_SIMD");
        /* the host backend alone has no tile store; an empty nvme_path */
        memset(&b, 0, sizeof b);
        b.stage = 3;
        b.dtype = ZERO_DTYPE_FP32;
        b.gas = 1;
        b.bucket = 64;
        b.poff = ZERO_OFFLOAD_NVME;
        b.dir = dir;
        b.no_hooks = 1;
        CHECK(zero_host_run(1, rank_fn, &b, &err) == ZERO_OK);
        CHECK(b.r[0] == ZERO_ERR_CONFIG);
        CHECK_STR_CONTAINS(b.key[0], "offload_param.device");
        CHECK_STR_CONTAINS(b.msg[0], "zero_offload_backend");
        CHECKF(rmdir(dir) == 0, "rmdir %s: files left behind", dir);
    }
    return zt_finish();
}
