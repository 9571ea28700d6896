/* test_program.c - what a trainer that keeps its own schedule and logging
   asks of the engine, on host ranks:
   - zero_all_reduce_scalars: sum, mean, max and min of a few doubles over
     worlds 1-4, equal to the same sums in rank order; bad arguments refused;
   - zero_set_lr / zero_set_betas: a run that sets each step's lr and betas
     from the program ends with the same weights, bitwise, as the run whose
     config schedule gives those values;
   - zero_grad_norm: the norm zero_step then reports, bitwise, and zero_step's
     weights unchanged by asking for it;
   - zero_skip_step: no Adam (weights bitwise unchanged), no schedule step, the
     loss scale unchanged, counted as skipped; with the early CPU step it is
     refused, and with cfg.early_cpu_step = 0 it works there too;
   - the resolved configuration logged once at create, naming the default
     gradient clipping;
   - a gradient in the program's memory over any tensor's parameters (its
     own, another's below or above it) refused at create, naming both.

   Run alone: make test T=test_program */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

enum { NT = 4, STEPS = 6, GAS = 2 };
static const int64_t SIZES[NT] = {40, 7, 24, 3};

/* ---- scalars ---- */

typedef struct scal_job {
    zero_config cfg;
    double got[4][4][3]; /* [rank][op][value] */
    zero_result bad[4][4];
    int set_lr; /* zero_set_lr and zero_set_betas twice each before the end */
} scal_job;

static double scal_val(int rank, int k) {
    const double v[3] = {rank + 1.5, (rank * 7) % 5 - 2.25, 1e300 / (rank + 1)};
    return v[k];
}

static zero_result scal_rank(const zero_backend *b, void *arg) {
    scal_job *J = (scal_job *)arg;
    static const zero_tensor ts[1] = {{.name = "w", .numel = 8}};
    const zero_op ops[4] = {ZERO_OP_SUM, ZERO_OP_AVG, ZERO_OP_MAX, ZERO_OP_MIN};
    zero_engine *e;
    zero_error err;
    int o, k;
    double v[ZERO_SCALARS_MAX + 1];
    if (zero_engine_create(&e, &J->cfg, ts, 1, b, &err) != ZERO_OK) return err.code;
    for (o = 0; o < 4; o++) {
        for (k = 0; k < 3; k++) v[k] = scal_val(b->rank, k);
        if (zero_all_reduce_scalars(e, v, 3, ops[o]) != ZERO_OK) return zero_engine_error(e)->code;
        for (k = 0; k < 3; k++) J->got[b->rank][o][k] = v[k];
    }
    /* refused before any collective, on every rank alike: the engine stays usable */
    J->bad[b->rank][0] = zero_all_reduce_scalars(e, v, 0, ZERO_OP_SUM);
    J->bad[b->rank][1] = zero_all_reduce_scalars(e, v, ZERO_SCALARS_MAX + 1, ZERO_OP_SUM);
    J->bad[b->rank][2] = zero_all_reduce_scalars(e, NULL, 1, ZERO_OP_SUM);
    J->bad[b->rank][3] = zero_all_reduce_scalars(e, v, 1, ZERO_OP_COUNT);
    v[0] = 1;
    if (zero_all_reduce_scalars(e, v, 1, ZERO_OP_SUM) != ZERO_OK || v[0] != b->world) return ZERO_ERR_STATE;
    if (J->set_lr) { /* the program takes the rate and the betas over: said once each, by rank 0 */
        if (zero_set_lr(e, 3e-4) != ZERO_OK || zero_set_lr(e, 2e-4) != ZERO_OK || zero_set_betas(e, 0.8, 0.9) != ZERO_OK ||
            zero_set_betas(e, 0.85, 0.9) != ZERO_OK)
            return zero_engine_error(e)->code;
    }
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void test_scalars(void) {
    static scal_job J;
    int world, r, k;
    for (world = 1; world <= 4; world++) {
        zero_error err;
        memset(&J, 0, sizeof J);
        J.cfg = zero_config_default();
        J.cfg.train_micro_batch_size_per_gpu = 1;
        J.cfg.log.level = ZERO_LOG_WARN;
        CHECK(zero_config_resolve(&J.cfg, world, &err) == ZERO_OK);
        CHECKF(zero_host_run(world, scal_rank, &J, &err) == ZERO_OK, "world %d: %s", world, err.msg);
        for (k = 0; k < 3; k++) {
            double sum = 0, mx = scal_val(0, k), mn = scal_val(0, k);
            for (r = 0; r < world; r++) { /* the host backend adds in rank order */
                sum = r ? sum + scal_val(r, k) : scal_val(r, k);
                if (scal_val(r, k) > mx) mx = scal_val(r, k);
                if (scal_val(r, k) < mn) mn = scal_val(r, k);
            }
            for (r = 0; r < world; r++) {
                CHECKF(J.got[r][0][k] == sum, "world %d rank %d sum %d: %.17g want %.17g", world, r, k, J.got[r][0][k], sum);
                CHECKF(J.got[r][1][k] == sum / world, "world %d rank %d mean %d: %.17g want %.17g", world, r, k,
                       J.got[r][1][k], sum / world);
                CHECK(J.got[r][2][k] == mx);
                CHECK(J.got[r][3][k] == mn);
            }
        }
        for (r = 0; r < world; r++) {
            CHECK_EQ_INT(J.bad[r][0], ZERO_ERR_INVALID_ARG);
            CHECK_EQ_INT(J.bad[r][1], ZERO_ERR_INVALID_ARG);
            CHECK_EQ_INT(J.bad[r][2], ZERO_ERR_INVALID_ARG);
            CHECK_EQ_INT(J.bad[r][3], ZERO_ERR_INVALID_ARG);
        }
    }
}

/* ---- a small training run with hooks for the program's decisions ---- */

enum { MODE_CONFIG, MODE_PROGRAM_LR, MODE_NORM, MODE_SKIP };

typedef struct run_job {
    zero_config cfg;
    int mode, offload, skip_at, early;
    double b1, b2; /* optimizer betas of the config (0: the default) */
    float w[STEPS + 1][NT][40]; /* master weights before each step and at the end (rank 0 reads) */
    zero_step_info info[STEPS];
    double norm[STEPS];
    double lr_want[STEPS];
    zero_result skip_r;
    int fail;
} run_job;

/* A gradient from (step, micro-batch, rank, tensor, element) alone. */
static float grad_val(int step, int m, int rank, int t, int64_t i) {
    uint64_t x = zt_mix64(((uint64_t)step * 7919u + (uint64_t)m * 131u + (uint64_t)rank) * 1000003u + (uint64_t)t * 4099u +
                          (uint64_t)i);
    return (float)((double)(x >> 11) / 9007199254740992.0 - 0.5) * 0.1f;
}

/* Collective: every rank reads; rank 0 keeps what it read. */
static void read_weights(zero_engine *e, int rank, float out[NT][40]) {
    float w[NT][40];
    int t;
    for (t = 0; t < NT; t++)
        if (zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], w[t]) != ZERO_OK) memset(w[t], 0xff, sizeof w[t]);
    if (rank == 0) memcpy(out, w, sizeof w);
}

static zero_tensor run_tensors[NT]; /* made before the ranks start: they read it at once */
static zt_wave run_wave = {0.3, 0.1, 0.7, 0.05, 0};
static void make_run_tensors(void) {
    static const char *names[NT] = {"a.w", "a.b", "b.w", "b.b"};
    int t;
    memset(run_tensors, 0, sizeof run_tensors);
    for (t = 0; t < NT; t++) {
        run_tensors[t].name = names[t];
        run_tensors[t].numel = SIZES[t];
        run_tensors[t].group = t / 2;
        run_tensors[t].init = zt_init_wave;
        run_tensors[t].init_user = &run_wave;
    }
}

static zero_result run_rank(const zero_backend *b, void *arg) {
    run_job *J = (run_job *)arg;
    const zero_tensor *ts = run_tensors;
    zero_backend ob;
    zero_engine *e;
    zero_error err;
    int t, step, m;
    if (J->offload) {
        zero_offload_backend(b, NULL, &ob);
        b = &ob;
    }
    if (zero_engine_create(&e, &J->cfg, ts, NT, b, &err) != ZERO_OK) {
        J->fail = 1;
        return err.code;
    }
    for (step = 0; step < STEPS; step++) {
        zero_result r = ZERO_OK;
        zero_step_info info;
        double norm = 0;
        memset(&info, 0, sizeof info);
        read_weights(e, b->rank, J->w[step]);
        if (J->mode == MODE_PROGRAM_LR) {
            r = zero_set_lr(e, J->lr_want[step]);
            if (r == ZERO_OK) r = zero_set_betas(e, 0.8, 0.95);
        }
        for (m = 0; m < GAS && r == ZERO_OK; m++)
            for (t = NT - 1; t >= 0 && r == ZERO_OK; t--) {
                void *g = zero_grad(e, t);
                zero_dtype dt = J->cfg.fp16.enabled == 1 ? ZERO_DTYPE_FP16 : ZERO_DTYPE_FP32;
                int64_t i;
                if (!g) {
                    r = zero_engine_error(e)->code;
                    break;
                }
                for (i = 0; i < SIZES[t]; i++) /* loss x S: the loss scale seeds the backward */
                    zt_store(g, dt, i, zt_load(g, dt, i) + grad_val(step, m, b->rank, t, i) * (float)zero_loss_scale(e));
                r = zero_grad_ready(e, t);
            }
        if (r == ZERO_OK && (J->mode == MODE_NORM || J->mode == MODE_SKIP)) r = zero_grad_norm(e, &norm);
        if (r == ZERO_OK && J->mode == MODE_SKIP && step == J->skip_at) {
            zero_result sr = zero_skip_step(e, &info);
            if (b->rank == 0) J->skip_r = sr;
            if (sr != ZERO_OK) break; /* expected where the early CPU step ran: stop this run */
        } else if (r == ZERO_OK) {
            r = zero_step(e, &info);
        }
        if (b->rank == 0) {
            J->info[step] = info;
            J->norm[step] = norm;
        }
        if (r != ZERO_OK) {
            J->fail = 1;
            fprintf(stderr, "run_rank: %s\n", zero_engine_error(e)->msg);
            break;
        }
    }
    read_weights(e, b->rank, J->w[STEPS]);
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void run(run_job *J, int stage, int world, int fp16) {
    zero_error err;
    J->cfg = zero_config_default();
    J->cfg.train_micro_batch_size_per_gpu = 1;
    J->cfg.gradient_accumulation_steps = GAS;
    J->cfg.zero_optimization.stage = stage;
    J->cfg.zero_optimization.reduce_bucket_size = 32;
    J->cfg.optimizer.lr = 1e-2;
    J->cfg.optimizer.weight_decay = 0.01;
    J->cfg.log.level = ZERO_LOG_WARN;
    if (fp16) {
        J->cfg.fp16.enabled = 1;
        J->cfg.fp16.initial_scale_power = 8;
    }
    if (J->offload) {
        J->cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        J->cfg.gradient_clipping = 0; /* nothing waits for the norm: the early CPU step is allowed */
        J->cfg.early_cpu_step = J->early;
    }
    if (J->b1 > 0) {
        J->cfg.optimizer.beta1 = J->b1;
        J->cfg.optimizer.beta2 = J->b2;
    }
    if (J->mode == MODE_CONFIG || J->mode == MODE_NORM || J->mode == MODE_SKIP) {
        /* the config's own schedule, which the program-lr run reproduces */
        J->cfg.scheduler.type = ZERO_SCHEDULER_WARMUP_LR;
        J->cfg.scheduler.warmup_num_steps = 4;
        J->cfg.scheduler.warmup_max_lr = 1e-2;
        J->cfg.scheduler.warmup_type = ZERO_WARMUP_LINEAR;
    }
    if (zero_config_resolve(&J->cfg, world, &err) != ZERO_OK) {
        CHECKF(0, "resolve: %s", err.msg);
        return;
    }
    make_run_tensors();
    CHECKF(zero_host_run(world, run_rank, J, &err) == ZERO_OK, "host run: %s", err.msg);
}

static int same_weights(float a[NT][40], float b[NT][40]) {
    int t;
    for (t = 0; t < NT; t++)
        if (memcmp(a[t], b[t], sizeof(float) * (size_t)SIZES[t]) != 0) return 0;
    return 1;
}

/* The program sets each step's lr and betas to what the config's schedule
   would give: the same weights, bitwise, after every step. */
static void test_program_schedule(int stage, int world, int fp16) {
    static run_job A, B;
    int s;
    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    A.mode = MODE_CONFIG;
    A.b1 = 0.8, A.b2 = 0.95;
    run(&A, stage, world, fp16);
    B.mode = MODE_PROGRAM_LR;
    for (s = 0; s < STEPS; s++) B.lr_want[s] = A.info[s].lr;
    run(&B, stage, world, fp16);
    CHECK(!A.fail && !B.fail);
    CHECKF(A.info[0].lr != A.info[STEPS - 1].lr, "the schedule moves (%g .. %g)", A.info[0].lr, A.info[STEPS - 1].lr);
    for (s = 0; s < STEPS; s++) {
        CHECKF(B.info[s].lr == A.info[s].lr, "step %d: lr %g want %g", s, B.info[s].lr, A.info[s].lr);
        CHECKF(same_weights(A.w[s + (s < STEPS - 1)], B.w[s + (s < STEPS - 1)]),
               "stage %d world %d fp16 %d: weights differ after step %d", stage, world, fp16, s);
    }
    CHECKF(same_weights(A.w[STEPS], B.w[STEPS]), "stage %d world %d fp16 %d: final weights differ", stage, world, fp16);
}

/* zero_grad_norm before zero_step: the norm zero_step reports, and the same
   weights as without asking. Then a skip at one step: weights unchanged by
   it, the lr not advanced, the loss scale unchanged, counted as skipped. */
static void test_norm_and_skip(int stage, int world, int fp16, int offload) {
    static run_job A, N, K;
    int s;
    memset(&A, 0, sizeof A);
    memset(&N, 0, sizeof N);
    memset(&K, 0, sizeof K);
    A.offload = N.offload = K.offload = offload;
    A.mode = MODE_CONFIG;
    run(&A, stage, world, fp16);
    N.mode = MODE_NORM;
    run(&N, stage, world, fp16);
    CHECK(!A.fail && !N.fail);
    for (s = 0; s < STEPS; s++) {
        CHECKF(N.norm[s] == N.info[s].grad_norm && N.norm[s] > 0, "step %d: zero_grad_norm %.17g, zero_step %.17g", s,
               N.norm[s], N.info[s].grad_norm);
        CHECKF(N.norm[s] == A.info[s].grad_norm, "step %d: norm %.17g without asking %.17g", s, N.norm[s],
               A.info[s].grad_norm);
    }
    CHECKF(same_weights(A.w[STEPS], N.w[STEPS]), "stage %d world %d: zero_grad_norm changed the weights", stage, world);
    K.mode = MODE_SKIP;
    K.skip_at = 2;
    run(&K, stage, world, fp16);
    CHECK(!K.fail);
    CHECK_EQ_INT(K.skip_r, ZERO_OK);
    CHECK_EQ_INT(K.info[2].applied, 0);
    CHECK_EQ_INT(K.info[2].skipped_by_program, 1);
    CHECK(K.info[2].grad_norm == K.norm[2] && K.norm[2] == A.info[2].grad_norm);
    CHECK(K.info[2].skipped_steps == 1 && K.info[2].global_steps == 3);
    CHECK(K.info[2].next_loss_scale == K.info[1].next_loss_scale);
    CHECKF(same_weights(K.w[2], K.w[3]), "stage %d world %d: the skipped step changed the weights", stage, world);
    CHECKF(same_weights(K.w[2], A.w[2]), "stage %d world %d: before the skip", stage, world);
    CHECKF(K.info[3].lr == A.info[2].lr, "the schedule did not advance: step 3 lr %g, want %g", K.info[3].lr, A.info[2].lr);
    CHECK(K.info[3].applied && K.info[STEPS - 1].skipped_steps == 1);
}

/* The early CPU step applies Adam during the backward: a skip is refused
   with a clear error; with cfg.early_cpu_step = 0 it works. */
static void test_skip_early(void) {
    static run_job K;
    memset(&K, 0, sizeof K);
    K.offload = 1;
    K.early = 1;
    K.mode = MODE_SKIP;
    K.skip_at = 1;
    run(&K, 2, 2, 0);
    CHECK_EQ_INT(K.skip_r, ZERO_ERR_STATE);
    CHECK(K.info[0].cpu_units_early > 0); /* the early step did run */
    test_norm_and_skip(2, 2, 0, 1);        /* early 0: the skip works under optimizer offload */
}

/* The create line: once, on rank 0, with the default clipping named. */
static char resolved_line[1024], prog_lr_line[2][1024];
static int resolved_count, prog_lr_count;
static void capture_log(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    (void)user;
    (void)level;
    if (item == ZERO_MSG_ENGINE_PROGRAM_LR) {
        CHECK_EQ_INT(rank, 0);
        if (prog_lr_count < 2) snprintf(prog_lr_line[prog_lr_count], sizeof prog_lr_line[0], "%s", text);
        prog_lr_count++;
    }
    if (item == ZERO_MSG_ENGINE_RESOLVED) {
        resolved_count++;
        CHECK_EQ_INT(rank, 0);
        snprintf(resolved_line, sizeof resolved_line, "%s", text);
    }
}

static void test_resolved_line(void) {
    static scal_job J;
    zero_error err;
    const char *json[2] = {"{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 3, "
                           "\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 2}}",
                           "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 3, "
                           "\"bf16\": {\"enabled\": true}, \"gradient_clipping\": 1.0, \"zero_optimization\": {\"stage\": 2}}"};
    int given;
    for (given = 0; given < 3; given++) {
        memset(&J, 0, sizeof J);
        J.cfg = zero_config_default();
        if (given < 2) CHECK(zero_config_parse_json(&J.cfg, json[given], strlen(json[given]), &err) == ZERO_OK);
        else { /* the program's code sets the config, its clipping value 1 included: not called a default */
            J.cfg.train_micro_batch_size_per_gpu = 2;
            J.cfg.gradient_accumulation_steps = 3;
            J.cfg.bf16.enabled = 1;
            J.cfg.zero_optimization.stage = 2;
            J.cfg.gradient_clipping = 1.0;
            J.cfg.optimizer.lr = 6e-4;
            J.set_lr = 1;
        }
        J.cfg.log.fn = capture_log;
        J.cfg.log.level = ZERO_LOG_INFO;
        resolved_count = 0;
        resolved_line[0] = 0;
        CHECK(zero_config_resolve(&J.cfg, 2, &err) == ZERO_OK);
        CHECK(zero_host_run(2, scal_rank, &J, &err) == ZERO_OK);
        CHECK_EQ_INT(resolved_count, 1);
        CHECK_STR_CONTAINS(resolved_line, "stage 2, bf16");
        CHECK_STR_CONTAINS(resolved_line, "batch 12 = micro 2 x accumulation 3 x 2 ranks");
        if (given) CHECKF(strstr(resolved_line, "default") == NULL, "%s", resolved_line);
        else CHECK_STR_CONTAINS(resolved_line, "gradient_clipping 1 (DeepSpeed's default, not in the config");
        if (given == 2) {
            CHECK_STR_CONTAINS(resolved_line, "gradient_clipping 1 (the program's zero_config)");
            CHECKF(prog_lr_count == 2, "%d lines on the program's lr and betas, want 2", prog_lr_count);
            CHECK_STR_CONTAINS(prog_lr_line[0], "zero_set_lr: the program drives the learning rate from step 0 on (lr "
                                                "0.0003); the config's lr 0.0006 and schedule constant lr no longer apply");
            CHECK_STR_CONTAINS(prog_lr_line[1], "zero_set_betas: the program drives Adam's betas from step 0 on ((0.8, "
                                                "0.9))");
        } else
            CHECK_EQ_INT(prog_lr_count, 0);
        prog_lr_count = 0;
    }
}

/* With offload_optimizer.ratio below 1 and the parameters offloaded, the
   create line says where the device's units' parameters are: on the device
   (the default), or with ratio_params_device 0 to the host and back every
   step; nothing without offload_param. */
static zero_result twin_rank(const zero_backend *b, void *arg) {
    static const zero_tensor ts[4] = {{.name = "a", .numel = 40}, {.name = "b", .numel = 24}, {.name = "c", .numel = 32},
                                      {.name = "d", .numel = 16}};
    zero_backend ob;
    zero_engine *e;
    zero_error err;
    zero_offload_backend(b, NULL, &ob);
    if (zero_engine_create(&e, (const zero_config *)arg, ts, 4, &ob, &err) != ZERO_OK) return err.code;
    zero_engine_destroy(e);
    return ZERO_OK;
}

static void test_resolved_twin(void) {
    static zero_config cfg;
    zero_error err;
    int poff;
    for (poff = 0; poff < 3; poff++) { /* 2: offload_param with ratio_params_device 0 */
        cfg = zero_config_default();
        cfg.train_micro_batch_size_per_gpu = 1;
        cfg.bf16.enabled = 1;
        cfg.zero_optimization.stage = 3;
        cfg.zero_optimization.reduce_bucket_size = 32;
        cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        cfg.zero_optimization.offload_optimizer.ratio = 0.5;
        cfg.zero_optimization.offload_param.device = poff ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
        cfg.ratio_params_device = poff != 2;
        cfg.log.fn = capture_log;
        cfg.log.level = ZERO_LOG_INFO;
        CHECK(zero_config_resolve(&cfg, 2, &err) == ZERO_OK);
        resolved_count = 0;
        resolved_line[0] = 0;
        CHECK(zero_host_run(2, twin_rank, &cfg, &err) == ZERO_OK);
        CHECK_EQ_INT(resolved_count, 1);
        CHECK_STR_CONTAINS(resolved_line, "own elements on the device, Adam there");
        CHECKF(!strstr(resolved_line, "their parameters on the device too") == (poff != 1) &&
                   !strstr(resolved_line, "their parameters offloaded too") == (poff != 2),
               "offload_param %d: %s", poff, resolved_line);
    }
}

/* ---- a gradient over the weights ---- */

/* Program memory (zero_tensor.data and .grad) where each kind alone is
   fine but a gradient covers parameters: its own, or another tensor's
   starting below or above it. Create refuses, naming both sides and their
   byte ranges, before zero_grad could clear the weights. */
typedef struct alias_job {
    int how;
    zero_result r;
    char msg[1100];
} alias_job;

static zero_result alias_rank(const zero_backend *b, void *arg) {
    alias_job *J = (alias_job *)arg;
    static float mem[2][2][128]; /* [rank][data, grad] */
    static const int64_t off[NT] = {0, 40, 48, 72};
    static const char *names[NT] = {"w0", "w1", "w2", "w3"};
    float *D = mem[b->rank][0], *G = mem[b->rank][1];
    zero_config cfg = zero_config_default();
    zero_tensor ts[NT];
    zero_engine *e = NULL;
    zero_error err;
    zero_result r;
    int t;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) ts[t].name = names[t], ts[t].numel = SIZES[t], ts[t].data = D + off[t], ts[t].grad = G + off[t];
    if (J->how == 1) ts[2].grad = ts[2].data; /* its own weights */
    if (J->how == 2) ts[3].grad = D + 10;     /* inside w0's data, starting above it */
    if (J->how == 3) ts[3].data = G + 20;     /* w3's data inside w0's grad, starting above it */
    cfg.train_micro_batch_size_per_gpu = 1;
    cfg.zero_optimization.stage = 1;
    cfg.log.level = ZERO_LOG_ERROR; /* the refusals are expected */
    if (zero_config_resolve(&cfg, b->world, &err) != ZERO_OK) return err.code;
    r = zero_engine_create(&e, &cfg, ts, NT, b, &err);
    if (r == ZERO_OK) zero_engine_destroy(e);
    if (b->rank == 0) {
        J->r = r;
        snprintf(J->msg, sizeof J->msg, "%s", r == ZERO_OK ? "" : err.msg);
    }
    return ZERO_OK;
}

static void test_grad_over_data(void) {
    static alias_job J;
    const char *want[4][2] = {{NULL, NULL},
                              {"the grad of tensor 'w2' [", "overlaps the data of the same tensor ["},
                              {"the grad of tensor 'w3' [", "overlaps the data of tensor 'w0' ["},
                              {"the grad of tensor 'w0' [", "overlaps the data of tensor 'w3' ["}};
    zero_error err;
    int how;
    for (how = 0; how < 4; how++) {
        memset(&J, 0, sizeof J);
        J.how = how;
        CHECKF(zero_host_run(2, alias_rank, &J, &err) == ZERO_OK, "case %d: host run: %s", how, err.msg);
        if (!how) {
            CHECKF(J.r == ZERO_OK, "disjoint data and grad refused: %s", J.msg);
            continue;
        }
        CHECKF(J.r == ZERO_ERR_INVALID_ARG, "case %d: %s (%s)", how, zero_result_string(J.r), J.msg);
        CHECK_STR_CONTAINS(J.msg, want[how][0]);
        CHECK_STR_CONTAINS(J.msg, want[how][1]);
        CHECK_STR_CONTAINS(J.msg, "a gradient written or cleared there would change the weights");
    }
}

int main(void) {
    zt_seed("test_program");
    test_grad_over_data();
    test_scalars();
    {
        const int stages[4] = {0, 1, 2, 3}, worlds[3] = {1, 2, 4};
        int si, wi, fp16;
        for (si = 0; si < 4; si++)
            for (wi = 0; wi < 3; wi++)
                for (fp16 = 0; fp16 < 2; fp16++) {
                    test_program_schedule(stages[si], worlds[wi], fp16);
                    test_norm_and_skip(stages[si], worlds[wi], fp16, 0);
                }
    }
    test_skip_early();
    test_resolved_line();
    test_resolved_twin();
    return zt_finish();
}
