/* test_limits.c - every integer key of the config at the ends of its range,
   through the parser and set directly in the struct, then resolved, and the
   engine created and trained for two steps on 2 host ranks at stages 0-3,
   fp32/fp16/bf16, under each learning-rate schedule, with CPU and NVMe
   offload. Each value must either be refused with an error that names the
   key, or train with finite weights. Under UndefinedBehaviorSanitizer (make
   test's asan build) an int overflow anywhere on the way aborts the test:
   that is what this file is for.

   Run alone: make test T=test_limits */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#include <stdint.h>
#include <unistd.h>

enum { NT = 4, W = 2, STEPS = 2, MAXGAS = 4 };
static const int64_t SIZES[NT] = {96, 300, 17, 64};
static char nvme_dir[64];
static zt_wave wave = {0.2, 0.1, 0.5, 0.013, 0};

typedef struct base {
    const char *name;
    int sched;  /* ZERO_SCHEDULER_* the base uses */
    int nvme;   /* needs nvme_dir */
    const char *json;
} base;

/* The bases: every stage, dtype, schedule and offload the integer keys act in. */
static const base BASES[] = {
    {"s3-fp16-decay", ZERO_SCHEDULER_WARMUP_DECAY_LR, 0,
     "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 2, \"steps_per_print\": 1,"
     " \"fp16\": {\"enabled\": true, \"initial_scale_power\": 8},"
     " \"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": 128, \"stage3_param_persistence_threshold\": 0,"
     "   \"stage3_max_live_parameters\": 400, \"stage3_prefetch_bucket_size\": 200},"
     " \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"total_num_steps\": 20, \"warmup_num_steps\": 3}}}"},
    {"s2-bf16-cycle", ZERO_SCHEDULER_ONE_CYCLE, 0,
     "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 1, \"bf16\": {\"enabled\": true},"
     " \"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": 100, \"allgather_bucket_size\": 100},"
     " \"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_first_step_size\": 3, \"cycle_min_lr\": 1e-4,"
     "   \"cycle_max_lr\": 1e-2}}}"},
    {"s1-range", ZERO_SCHEDULER_LR_RANGE_TEST, 0,
     "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 1, \"gradient_clipping\": 0.5,"
     " \"zero_optimization\": {\"stage\": 1}, \"scheduler\": {\"type\": \"LRRangeTest\","
     " \"params\": {\"lr_range_test_min_lr\": 1e-4, \"lr_range_test_step_size\": 2, \"lr_range_test_step_rate\": 1.5}}}"},
    {"s0-warmup", ZERO_SCHEDULER_WARMUP_LR, 0,
     "{\"train_batch_size\": 4, \"fp16\": {\"enabled\": true, \"loss_scale_window\": 2},"
     " \"zero_optimization\": {\"stage\": 0},"
     " \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_num_steps\": 4}}}"},
    {"s3-cpu-cosine", ZERO_SCHEDULER_WARMUP_COSINE_LR, 0,
     "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 1,"
     " \"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": 128, \"stage3_param_persistence_threshold\": 20,"
     "   \"offload_optimizer\": {\"device\": \"cpu\"}, \"offload_param\": {\"device\": \"cpu\", \"buffer_count\": 2}},"
     " \"scheduler\": {\"type\": \"WarmupCosineLR\", \"params\": {\"total_num_steps\": 10, \"warmup_num_steps\": 2}}}"},
    {"s3-nvme", ZERO_SCHEDULER_NONE, 1,
     "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 1, \"bf16\": {\"enabled\": true},"
     " \"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": 128, \"stage3_param_persistence_threshold\": 0,"
     "   \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"@\"},"
     "   \"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"@\", \"buffer_count\": 3}},"
     " \"aio\": {\"block_size\": 4096, \"queue_depth\": 4}}"},
};
enum { NBASES = (int)(sizeof BASES / sizeof BASES[0]) };

/* Values as JSON text: the ends of int64, of int, of double's exact integers, and the small ones. */
static const char *const VALUES[] = {
    "9223372036854775807", "9.2e18", "4611686018427387904", "9007199254740993", "4294967296", "2147483648",
    "2147483647", "1000000000", "65536", "3", "1", "0", "-1", "-2", "-2147483649", "-9.2e18", "1e300"};
static const char *const QUICK_VALUES[] = {"9.2e18", "4611686018427387904", "2147483648", "2147483647", "1", "0", "-1",
                                           "-9.2e18"};

static void quiet(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    (void)user, (void)level, (void)item, (void)rank, (void)text;
}

/* ---- one run: create, two steps, destroy; what each rank saw ---- */

typedef struct job {
    zero_config cfg;
    zero_result r[W];
    char msg[W][1200];
    int finite[W];
} job;

static zero_result train(zero_engine *e, const zero_config *c, int *finite) {
    zero_result r;
    int s, m, t, gas = c->gradient_accumulation_steps;
    for (s = 0; s < STEPS; s++) {
        zero_step_info in;
        for (m = 0; m < gas; m++) {
            for (t = 0; t < NT; t++) {
                const float *w;
                if ((r = zero_fetch(e, t)) != ZERO_OK) return r;
                if (!(w = (const float *)zero_param(e, t))) return zero_engine_error(e)->code;
                if ((r = zero_release(e, t)) != ZERO_OK) return r;
            }
            for (t = NT - 1; t >= 0; t--) {
                void *g = zero_grad(e, t);
                int64_t i;
                if (!g) return zero_engine_error(e)->code;
                for (i = 0; i < SIZES[t]; i++)
                    zt_store(g, e->plan.cdt, i, 0.01f * (float)((i + t + s) % 7) - 0.03f);
                if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
            }
        }
        zero_report_loss(e, 1.0 / (s + 1));
        if ((r = zero_step(e, &in)) != ZERO_OK) return r;
    }
    for (t = 0; t < NT; t++) { /* the weights after training, as fp32 */
        float *w = (float *)malloc((size_t)SIZES[t] * sizeof(float));
        int64_t i;
        if (!w) return ZERO_ERR_OUT_OF_MEMORY;
        r = zero_read_state(e, t, ZERO_STATE_MASTER, 0, SIZES[t], w);
        for (i = 0; r == ZERO_OK && i < SIZES[t]; i++)
            if (!isfinite(w[i])) *finite = 0;
        free(w);
        if (r != ZERO_OK) return r;
    }
    return ZERO_OK;
}

static zero_result rank_fn(const zero_backend *b, void *arg) {
    job *J = (job *)arg;
    zero_config c = J->cfg;
    zero_tensor ts[NT];
    static const char *names[NT] = {"emb", "w1", "b1", "out"};
    zero_engine *e = NULL;
    zero_backend ob;
    zero_error err;
    zero_result r;
    int t;
    memset(ts, 0, sizeof ts);
    for (t = 0; t < NT; t++) {
        ts[t].name = names[t];
        ts[t].numel = SIZES[t];
        ts[t].init = zt_init_wave;
        ts[t].init_user = &wave;
        ts[t].group = t;
    }
    zero_offload_backend(b, NULL, &ob); /* the tile store for NVMe; the CPU Adam on the calling thread */
    c.log.rank = b->rank;
    J->finite[b->rank] = 1;
    if ((r = zero_engine_create(&e, &c, ts, NT, &ob, &err)) != ZERO_OK) {
        J->r[b->rank] = r;
        snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", err.msg);
        return ZERO_OK;
    }
    /* a gas or a step count too large to loop over: created and destroyed only */
    r = c.gradient_accumulation_steps <= MAXGAS ? train(e, &c, &J->finite[b->rank]) : ZERO_OK;
    J->r[b->rank] = r;
    snprintf(J->msg[b->rank], sizeof J->msg[b->rank], "%s", r == ZERO_OK ? "" : zero_engine_error(e)->msg);
    zero_engine_destroy(e);
    return ZERO_OK;
}

/* The key's last path component: what an error must name. */
static const char *leaf(const char *path) {
    const char *d = strrchr(path, '.');
    return d ? d + 1 : path;
}

/* Does msg name key k (or k2, when two keys were set)? */
static int names_key(const char *msg, const zero__key *k) {
    return k && (strstr(msg, leaf(k->info.path)) || strstr(msg, k->info.path) || (k->alias && strstr(msg, k->alias)));
}

static void run_engine(const char *what, const zero__key *k, const zero__key *k2, zero_config *c) {
    job J;
    zero_error err;
    int rk;
    if (zero_config_resolve(c, W, &err) != ZERO_OK) {
        CHECKF(err.msg[0] != 0, "%s: resolve refused it with an empty message", what);
        return;
    }
    memset(&J, 0, sizeof J);
    J.cfg = *c;
    zero_host_run(W, rank_fn, &J, &err);
    for (rk = 0; rk < W; rk++) {
        CHECKF(J.r[rk] == ZERO_OK || J.msg[rk][0], "%s: rank %d failed (%s) with no message", what, rk,
               zero_result_string(J.r[rk]));
        if (J.r[rk] != ZERO_OK && J.r[0] == J.r[rk])
            CHECKF(names_key(J.msg[rk], k) || names_key(J.msg[rk], k2),
                   "%s: rank %d's error does not name the key: %s", what, rk, J.msg[rk]);
        CHECKF(J.r[rk] != ZERO_OK || J.finite[rk], "%s: rank %d trained to non-finite weights", what, rk);
    }
    CHECKF(J.r[0] == J.r[1], "%s: the ranks disagree (%s, %s)", what, zero_result_string(J.r[0]),
           zero_result_string(J.r[1]));
}

/* The base config, parsed from its JSON (nvme_path filled in). */
static int base_cfg(const base *B, zero_config *c) {
    char text[2048], *at;
    zero_error err;
    size_t n = 0;
    const char *s;
    for (s = B->json; *s && n + sizeof nvme_dir + 1 < sizeof text; s++) {
        if (*s == '@') {
            n += (size_t)snprintf(text + n, sizeof text - n, "%s", nvme_dir);
        } else {
            text[n++] = *s;
        }
    }
    text[n] = 0;
    at = text;
    *c = zero_config_default();
    c->log.fn = quiet;
    c->log.level = ZERO_LOG_ERROR;
    if (zero_config_parse_json(c, at, n, &err) != ZERO_OK) {
        CHECKF(0, "base %s: %s", B->name, err.msg);
        return 0;
    }
    return 1;
}

/* {"a": {"b": {"c": V}}} for the path a.b.c; scheduler params with the base's type beside them. */
static void key_json(const zero__key *k, const base *B, const char *value, char *out, size_t cap) {
    static const char *const types[] = {"", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"};
    char path[256], *parts[8], *p;
    int n = 0, i;
    size_t len = 0;
    if (!strncmp(k->info.path, "scheduler.params.", 17)) {
        snprintf(out, cap, "{\"scheduler\": {\"type\": \"%s\", \"params\": {\"%s\": %s}}}", types[B->sched],
                 k->info.path + 17, value);
        return;
    }
    snprintf(path, sizeof path, "%s", k->info.path);
    for (p = strtok(path, "."); p && n < 8; p = strtok(NULL, ".")) parts[n++] = p;
    for (i = 0; i < n; i++) len += (size_t)snprintf(out + len, cap - len, "{\"%s\": ", parts[i]);
    len += (size_t)snprintf(out + len, cap - len, "%s", value);
    for (i = 0; i < n; i++) len += (size_t)snprintf(out + len, cap - len, "}");
}

static int is_int_key(const zero__key *k) {
    return (k->kind == ZERO__K_INT || k->kind == ZERO__K_I64) && k->offset > 0;
}

/* An integer key that acts in base B: scheduler params only under their schedulers. */
static int acts_in(const zero__key *k, const base *B) {
    return is_int_key(k) && (strncmp(k->info.path, "scheduler.params.", 17) != 0 || (k->type_mask & (1u << B->sched)));
}

/* Through the parser: the JSON value over the base, then resolve, create, train. */
static void test_parsed(int quick) {
    const char *const *vals = quick ? QUICK_VALUES : VALUES;
    int nv = quick ? (int)(sizeof QUICK_VALUES / sizeof *QUICK_VALUES) : (int)(sizeof VALUES / sizeof *VALUES);
    size_t ki;
    int bi, vi, runs = 0;
    for (ki = 0; ki < sizeof zero__keys / sizeof zero__keys[0]; ki++) {
        const zero__key *k = &zero__keys[ki];
        for (bi = 0; bi < NBASES; bi++) {
            const base *B = &BASES[bi];
            if (!acts_in(k, B)) continue;
            for (vi = 0; vi < nv; vi++) {
                zero_config c;
                zero_error err;
                char json[512], what[400];
                if (!base_cfg(B, &c)) return;
                key_json(k, B, vals[vi], json, sizeof json);
                snprintf(what, sizeof what, "%s = %s over %s", k->info.path, vals[vi], B->name);
                if (zero_config_parse_json(&c, json, strlen(json), &err) != ZERO_OK) {
                    CHECKF(names_key(err.msg, k), "%s: refused without naming the key: %s", what, err.msg);
                    continue;
                }
                run_engine(what, k, NULL, &c);
                runs++;
            }
        }
    }
    CHECKF(runs > 100, "only %d runs reached the engine", runs);
}

/* Set in the struct by a program: the ends of the field's C type, which the parser never lets through. */
static void test_direct(void) {
    size_t ki;
    int bi, vi;
    for (ki = 0; ki < sizeof zero__keys / sizeof zero__keys[0]; ki++) {
        const zero__key *k = &zero__keys[ki];
        for (bi = 0; bi < NBASES; bi++) {
            const base *B = &BASES[bi];
            if (!acts_in(k, B)) continue;
            for (vi = 0; vi < 4; vi++) {
                zero_config c;
                char what[400];
                if (!base_cfg(B, &c)) return;
                if (k->kind == ZERO__K_I64) {
                    static const int64_t v64[4] = {INT64_MAX, INT64_MIN, INT64_MAX / 2 + 1, (int64_t)INT32_MAX + 1};
                    memcpy((char *)&c + k->offset, &v64[vi], sizeof v64[vi]);
                    snprintf(what, sizeof what, "cfg.%s = %lld (set in code) over %s", k->info.path, (long long)v64[vi], B->name);
                } else {
                    static const int v32[4] = {INT_MAX, INT_MIN, INT_MAX / 2 + 1, INT_MIN / 2};
                    memcpy((char *)&c + k->offset, &v32[vi], sizeof v32[vi]);
                    snprintf(what, sizeof what, "cfg.%s = %d (set in code) over %s", k->info.path, v32[vi], B->name);
                }
                run_engine(what, k, NULL, &c);
            }
        }
    }
}

/* Two keys at once near the top of int64: sizes the engine adds to each other (max_live + prefetch, ...). */
static void test_pairs(int quick) {
    static const char *const big[] = {"9.2e18", "4611686018427387905"};
    static const int stage3_bases[] = {0, 4, 5};
    size_t a, b;
    int bi, vi, runs = 0;
    for (a = 0; a < sizeof zero__keys / sizeof zero__keys[0]; a++) {
        const zero__key *ka = &zero__keys[a];
        if (!is_int_key(ka) || !strncmp(ka->info.path, "scheduler.", 10)) continue;
        for (b = a + 1; b < sizeof zero__keys / sizeof zero__keys[0]; b++) {
            const zero__key *kb = &zero__keys[b];
            if (!is_int_key(kb) || !strncmp(kb->info.path, "scheduler.", 10)) continue;
            for (bi = 0; bi < (quick ? 1 : 3); bi++) {
                const base *B = &BASES[stage3_bases[bi]];
                for (vi = 0; vi < 2; vi++) {
                    zero_config c;
                    zero_error err;
                    char ja[512], jb[512], what[600];
                    if (!base_cfg(B, &c)) return;
                    key_json(ka, B, big[vi], ja, sizeof ja);
                    key_json(kb, B, big[vi], jb, sizeof jb);
                    snprintf(what, sizeof what, "%s and %s = %s over %s", ka->info.path, kb->info.path, big[vi], B->name);
                    if (zero_config_parse_json(&c, ja, strlen(ja), &err) != ZERO_OK ||
                        zero_config_parse_json(&c, jb, strlen(jb), &err) != ZERO_OK) {
                        CHECKF(err.msg[0] != 0, "%s: refused with an empty message", what);
                        continue;
                    }
                    run_engine(what, ka, kb, &c);
                    runs++;
                }
            }
        }
    }
    CHECKF(runs > 100, "only %d pair runs reached the engine", runs);
}

int main(void) {
    int quick = getenv("ZERO_TEST_QUICK") != NULL;
    snprintf(nvme_dir, sizeof nvme_dir, "/tmp/zero_limits_XXXXXX");
    if (!mkdtemp(nvme_dir)) {
        CHECKF(0, "mkdtemp: %s", strerror(errno));
        return zt_finish();
    }
    test_parsed(quick);
    test_direct();
    test_pairs(quick);
    {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", nvme_dir);
        CHECK(system(cmd) == 0);
    }
    return zt_finish();
}
