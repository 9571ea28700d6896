/* test_config.c - the DeepSpeed JSON config: every reference config, every
   error and warning message, "auto", the batch triangle, resolve, and a
   randomized round trip through zero_config_to_json.

   Run alone: make test T=test_config */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_test.h"

#include <errno.h>
#include <sys/stat.h>

/* ---- a logger that records what was said ---- */
#define LOG_MAX 256
static struct {
    int n;
    zero_msg item[LOG_MAX];
    zero_log_level level[LOG_MAX];
    char text[LOG_MAX][512];
} logged;

static void capture(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    (void)user;
    (void)rank;
    if (logged.n < LOG_MAX) {
        logged.item[logged.n] = item;
        logged.level[logged.n] = level;
        snprintf(logged.text[logged.n], sizeof logged.text[0], "%s", text);
        logged.n++;
    }
}

static zero_config cfg_quiet(void) {
    zero_config c = zero_config_default();
    c.log.fn = capture;
    c.log.level = ZERO_LOG_DEBUG;
    c.log.rank = 0;
    logged.n = 0;
    return c;
}

/* index of the first logged message with this item, or -1 */
static int logged_find(zero_msg item, const char *sub) {
    int i;
    for (i = 0; i < logged.n; i++)
        if (logged.item[i] == item && (!sub || strstr(logged.text[i], sub))) return i;
    return -1;
}

static zero_result parse(zero_config *c, const char *json, zero_error *err) {
    return zero_config_parse_json(c, json, strlen(json), err);
}

/* parse json into a fresh quiet config and expect failure with item at key */
static void expect_error(const char *json, zero_msg item, const char *key, int line, int col, const char *sub, int at) {
    zero_config c = cfg_quiet();
    zero_error err;
    zero_result r = parse(&c, json, &err);
    CHECKF(r != ZERO_OK && err.item == item, "line %d: %s: got %s (%s), want %s", at, json, zero_msg_name(err.item),
           err.msg, zero_msg_name(item));
    CHECKF(r == err.code, "line %d: returned %d, err.code %d", at, (int)r, (int)err.code);
    if (key) CHECKF(strcmp(err.key, key) == 0, "line %d: key %s, want %s (%s)", at, err.key, key, err.msg);
    if (line) CHECKF(err.line == line && err.column == col, "line %d: at %d:%d, want %d:%d (%s)", at, err.line, err.column, line, col, err.msg);
    if (sub) CHECKF(strstr(err.msg, sub) != NULL, "line %d: \"%s\" lacks \"%s\"", at, err.msg, sub);
}
#define EXPECT_ERROR(json, item, key, line, col, sub) expect_error(json, ZERO_MSG_##item, key, line, col, sub, __LINE__)

/* parse json (must succeed) and expect a logged message with item */
static void expect_log(const char *json, zero_msg item, const char *sub, int at) {
    zero_config c = cfg_quiet();
    zero_error err;
    zero_result r = parse(&c, json, &err);
    CHECKF(r == ZERO_OK, "line %d: %s: %s", at, json, err.msg);
    CHECKF(logged_find(item, sub) >= 0, "line %d: no %s message containing \"%s\" for %s", at, zero_msg_name(item),
           sub ? sub : "", json);
}
#define EXPECT_LOG(json, item, sub) expect_log(json, ZERO_MSG_##item, sub, __LINE__)

static zero_result resolve_json(zero_config *c, const char *json, int world, zero_error *err) {
    zero_result r;
    *c = cfg_quiet();
    r = parse(c, json, err);
    if (r != ZERO_OK) return r;
    return zero_config_resolve(c, world, err);
}

static void expect_resolve_error(const char *json, int world, zero_msg item, const char *key, const char *sub, int at) {
    zero_config c;
    zero_error err;
    zero_result r = resolve_json(&c, json, world, &err);
    CHECKF(r != ZERO_OK && err.item == item, "line %d: %s: got %s (%s), want %s", at, json, zero_msg_name(err.item), err.msg,
           zero_msg_name(item));
    if (key) CHECKF(strcmp(err.key, key) == 0, "line %d: key %s, want %s", at, err.key, key);
    if (sub) CHECKF(strstr(err.msg, sub) != NULL, "line %d: \"%s\" lacks \"%s\"", at, err.msg, sub);
}
#define EXPECT_RESOLVE_ERROR(json, world, item, key, sub) expect_resolve_error(json, world, ZERO_MSG_##item, key, sub, __LINE__)

/* ---- defaults agree with the documented DeepSpeed defaults ---- */
static void test_defaults_match_table(void) {
    zero_config d = zero_config_default();
    int i, numeric = 0;
    for (i = 0; i < ZERO__NKEYS; i++) {
        const zero__key *k = &zero__keys[i];
        const char *t = k->info.ds_default;
        char *end;
        double want;
        if (k->kind != ZERO__K_INT && k->kind != ZERO__K_I64 && k->kind != ZERO__K_F64 && k->kind != ZERO__K_BOOL) continue;
        if (k->kind == ZERO__K_BOOL) {
            if (strcmp(t, "None") == 0) {
                CHECK(zero__get_int(&d, k->offset) == ZERO_UNSET);
                continue;
            }
            CHECKF(zero__get_int(&d, k->offset) == (strcmp(t, "true") == 0), "%s default %s", k->info.path, t);
            continue;
        }
        if (strcmp(t, "None") == 0 || strcmp(t, "required") == 0 || strcmp(t, "derived") == 0) { /* (derived: at create) */
            double got = k->kind == ZERO__K_F64 ? zero__get_f64(&d, k->offset)
                         : k->kind == ZERO__K_I64 ? (double)zero__get_i64(&d, k->offset) : zero__get_int(&d, k->offset);
            CHECKF(got == ZERO_UNSET || (got == 0 && strcmp(k->info.path, "steps_per_print") == 0), "%s: %g", k->info.path, got);
            continue;
        }
        if (strcmp(t, "sys.maxsize") == 0) {
            CHECK(zero__get_i64(&d, k->offset) == INT64_MAX);
            continue;
        }
        want = strtod(t, &end);
        CHECKF(*end == 0, "%s: default text \"%s\" is not a number", k->info.path, t);
        if (k->kind == ZERO__K_F64) CHECKF(zero__get_f64(&d, k->offset) == want, "%s: %g vs %s", k->info.path, zero__get_f64(&d, k->offset), t);
        if (k->kind == ZERO__K_I64) CHECKF((double)zero__get_i64(&d, k->offset) == want, "%s: %lld vs %s", k->info.path, (long long)zero__get_i64(&d, k->offset), t);
        if (k->kind == ZERO__K_INT) CHECKF(zero__get_int(&d, k->offset) == want, "%s: %d vs %s", k->info.path, zero__get_int(&d, k->offset), t);
        numeric++;
    }
    CHECKF(numeric >= 43, "only %d numeric defaults checked", numeric); /* (the stage-3 pool's two are derived) */
    /* every key has a meaning, a parent section that exists, and a unique path */
    for (i = 0; i < ZERO__NKEYS; i++) {
        const zero__key *k = &zero__keys[i];
        char parent[128];
        int j2;
        size_t pl = zero__parent_len(k->info.path);
        CHECKF(k->info.meaning && k->info.meaning[0], "%s has no meaning text", k->info.path);
        snprintf(parent, sizeof parent, "%.*s", (int)pl, k->info.path);
        if (pl) CHECKF(zero__key_by_path(parent) && zero__key_by_path(parent)->kind == ZERO__K_SECTION, "%s: no section %s", k->info.path, parent);
        for (j2 = i + 1; j2 < ZERO__NKEYS; j2++) CHECKF(strcmp(k->info.path, zero__keys[j2].info.path) != 0, "%s twice", k->info.path);
        if (k->kind == ZERO__K_ENUM) {
            char nm[64];
            zero__enum_name(k->choices, zero__get_int(&d, k->offset), nm, sizeof nm);
            CHECKF(nm[0] || (k->flags & ZERO__F_NULLABLE) || k->offset == ZERO__OFF(scheduler.type), "%s default has no name", k->info.path);
        }
    }
    CHECK(zero_config_key_count() == ZERO__NKEYS);
    CHECK(zero_config_key(0) != NULL && zero_config_key(-1) == NULL && zero_config_key(ZERO__NKEYS) == NULL);
}

/* ---- the reference configs ---- */
static zero_result load(zero_config *c, const char *name, zero_error *err) {
    char path[256];
    snprintf(path, sizeof path, "tests/configs/%s", name);
    *c = cfg_quiet();
    return zero_config_load(c, path, err);
}

/* what the HF Trainer would fill in */
static void hf_supply(zero_config *c) {
    if (c->fp16.enabled == ZERO_AUTO) c->fp16.enabled = 1;
    if (c->bf16.enabled == ZERO_AUTO) c->bf16.enabled = 0;
    if (c->optimizer.lr == ZERO_AUTO) c->optimizer.lr = 5e-5;
    if (c->optimizer.beta1 == ZERO_AUTO) c->optimizer.beta1 = 0.9, c->optimizer.beta2 = 0.999;
    if (c->optimizer.eps == ZERO_AUTO) c->optimizer.eps = 1e-8;
    if (c->optimizer.weight_decay == ZERO_AUTO) c->optimizer.weight_decay = 0.01;
    if (c->gradient_clipping == ZERO_AUTO) c->gradient_clipping = 1.0;
    if (c->scheduler.warmup_num_steps == ZERO_AUTO) c->scheduler.warmup_num_steps = 100;
    if (c->scheduler.total_num_steps == ZERO_AUTO) c->scheduler.total_num_steps = 1000;
    if (c->train_micro_batch_size_per_gpu == ZERO_AUTO) c->train_micro_batch_size_per_gpu = 4;
    if (c->gradient_accumulation_steps == ZERO_AUTO) c->gradient_accumulation_steps = 2;
    c->hidden_size = 1024;
}

static void test_reference_configs(void) {
    zero_config c;
    zero_error err;
    int others;

    /* seed: ZeRO-2, CPU offload, WarmupLR, everything HF fills is "auto" */
    CHECKF(load(&c, "seed_zero2_cpu_offload_warmuplr.json", &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.fp16.enabled == ZERO_AUTO && c.fp16.loss_scale == 0 && c.fp16.loss_scale_window == 1000);
    CHECK(c.fp16.initial_scale_power == 16 && c.fp16.hysteresis == 2 && c.fp16.min_loss_scale == 1);
    CHECK(c.optimizer.type == ZERO_OPTIMIZER_ADAMW && c.optimizer.lr == ZERO_AUTO && c.optimizer.beta1 == ZERO_AUTO &&
          c.optimizer.beta2 == ZERO_AUTO && c.optimizer.eps == ZERO_AUTO && c.optimizer.weight_decay == ZERO_AUTO);
    CHECK(c.scheduler.type == ZERO_SCHEDULER_WARMUP_LR && c.scheduler.warmup_min_lr == ZERO_AUTO &&
          c.scheduler.warmup_max_lr == ZERO_AUTO && c.scheduler.warmup_num_steps == ZERO_AUTO);
    CHECK(c.zero_optimization.stage == 2 && c.zero_optimization.offload_optimizer.device == ZERO_OFFLOAD_CPU &&
          c.zero_optimization.offload_optimizer.pin_memory == 1 && c.zero_optimization.allgather_bucket_size == 200000000 &&
          c.zero_optimization.reduce_bucket_size == 200000000 && c.zero_optimization.overlap_comm == 1 &&
          c.zero_optimization.reduce_scatter == 1 && c.zero_optimization.contiguous_gradients == 1);
    CHECK(c.gradient_accumulation_steps == ZERO_AUTO && c.gradient_clipping == ZERO_AUTO && c.steps_per_print == 2000 &&
          c.train_batch_size == ZERO_AUTO && c.train_micro_batch_size_per_gpu == ZERO_AUTO && c.wall_clock_breakdown == 0);
    CHECK(zero__first_auto(&c, &others) != NULL && others >= 10);
    CHECK(zero_config_resolve(&c, 2, &err) == ZERO_ERR_CONFIG && err.item == ZERO_MSG_CONFIG_BATCH_MISSING);
    hf_supply(&c);
    CHECKF(zero_config_resolve(&c, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.train_batch_size == 16 && c.scheduler.warmup_min_lr == 0 && c.scheduler.warmup_max_lr == 5e-5);
    CHECK(c.communication_data_type == ZERO_DTYPE_FP16 && c.resolved == 1 && c.world_size == 2);

    /* seed: ZeRO-2, WarmupDecayLR, "enabled": "true" as a string, torch_adam, power 15 */
    CHECKF(load(&c, "seed_zero2_warmupdecay.json", &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.fp16.enabled == 1 && c.fp16.initial_scale_power == 15 && c.optimizer.torch_adam == 1 && c.optimizer.adam_w_mode == 1);
    CHECK(c.scheduler.type == ZERO_SCHEDULER_WARMUP_DECAY_LR && c.scheduler.total_num_steps == ZERO_AUTO);
    CHECK(c.gradient_accumulation_steps == 1 && c.zero_optimization.offload_optimizer.device == ZERO_OFFLOAD_NONE);
    hf_supply(&c);
    CHECKF(zero_config_resolve(&c, 4, &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.gradient_accumulation_steps == 1 && c.train_batch_size == 16 && c.scheduler.total_num_steps == 1000);

    /* seed: ZeRO-3 with both offloads */
    CHECKF(load(&c, "seed_zero3_cpu_offload.json", &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.zero_optimization.stage == 3 && c.zero_optimization.offload_param.device == ZERO_OFFLOAD_CPU &&
          c.zero_optimization.offload_optimizer.device == ZERO_OFFLOAD_CPU && c.zero_optimization.sub_group_size == 1000000000);
    CHECK(c.zero_optimization.reduce_bucket_size == ZERO_AUTO && c.zero_optimization.stage3_prefetch_bucket_size == ZERO_AUTO &&
          c.zero_optimization.stage3_param_persistence_threshold == ZERO_AUTO &&
          c.zero_optimization.stage3_max_live_parameters == 1000000000 && c.zero_optimization.stage3_max_reuse_distance == 1000000000 &&
          c.zero_optimization.stage3_gather_16bit_weights_on_model_save == 1);
    hf_supply(&c);
    CHECKF(zero_config_resolve(&c, 8, &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.zero_optimization.reduce_bucket_size == 1024 * 1024 && c.zero_optimization.stage3_prefetch_bucket_size == 943718 &&
          c.zero_optimization.stage3_param_persistence_threshold == 10240 && c.zero_optimization.overlap_comm == 1);

    /* HF transformers' zero2 test config */
    CHECKF(load(&c, "hf_transformers_ds_config_zero2.json", &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.bf16.enabled == ZERO_AUTO && c.fp16.enabled == ZERO_AUTO && c.zero_optimization.stage == 2);

    /* HF transformers' zero3 test config: the deprecated key is remapped with a warning */
    CHECKF(load(&c, "hf_transformers_ds_config_zero3.json", &err) == ZERO_OK, "%s", err.msg);
    CHECK(logged_find(ZERO_MSG_CONFIG_DEPRECATED, "stage3_gather_16bit_weights_on_model_save") >= 0);
    CHECK(c.zero_optimization.stage3_gather_16bit_weights_on_model_save == 1);
    CHECK(c.zero_optimization.sub_group_size == 100000000000000LL && c.zero_optimization.reduce_bucket_size == 0 &&
          c.zero_optimization.stage3_prefetch_bucket_size == 0 && c.zero_optimization.stage3_param_persistence_threshold == 0);
    CHECK(c.optimizer.lr == 3e-5 && c.optimizer.beta1 == 0.8 && c.optimizer.beta2 == 0.999 && c.optimizer.eps == 1e-8 &&
          c.optimizer.weight_decay == 3e-7);
    CHECK(c.scheduler.type == ZERO_SCHEDULER_WARMUP_LR && c.scheduler.warmup_min_lr == 0 && c.scheduler.warmup_max_lr == 3e-5 &&
          c.scheduler.warmup_num_steps == 500);
    c.train_micro_batch_size_per_gpu = 2;
    CHECKF(zero_config_resolve(&c, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.gradient_accumulation_steps == 1 && c.train_batch_size == 4 && c.gradient_clipping == 1.0);

    /* HF accelerate's zero3 test config: nvme_path given with device cpu */
    CHECKF(load(&c, "hf_accelerate_ds_config_zero3.json", &err) == ZERO_OK, "%s", err.msg);
    CHECK(strcmp(c.zero_optimization.offload_param.nvme_path, "/nvme") == 0 &&
          strcmp(c.zero_optimization.offload_optimizer.nvme_path, "/nvme") == 0);
    CHECK(c.zero_optimization.stage3_gather_16bit_weights_on_model_save == ZERO_AUTO);
    hf_supply(&c);
    CHECKF(zero_config_resolve(&c, 2, &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.zero_optimization.stage3_gather_16bit_weights_on_model_save == 0 && c.fp16.enabled == 1 && c.bf16.enabled == 0);
}

/* ---- every error and warning the config can give ---- */
static void test_messages(void) {
    zero_config c;
    zero_error err;

    /* the example, to the letter */
    EXPECT_ERROR("{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"offload_optimizer\": {\n      \"pin_memory\": true,\n"
                 "      \"buffer_count\": 4,\n      \"device\": \"gpu\"\n    }\n  }\n}",
                 CONFIG_ENUM, "zero_optimization.offload_optimizer.device", 7, 17, NULL);
    c = cfg_quiet();
    parse(&c, "{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"offload_optimizer\": {\n      \"pin_memory\": true,\n"
              "      \"buffer_count\": 4,\n      \"device\": \"gpu\"\n    }\n  }\n}", &err);
    CHECKF(strcmp(err.msg, "zero_optimization.offload_optimizer.device: expected \"cpu\", \"nvme\" or \"none\", got \"gpu\" (line 7:17)") == 0,
           "%s", err.msg);

    EXPECT_ERROR("[1, 2]", CONFIG_NOT_OBJECT, "config", 1, 1, "JSON object");
    EXPECT_ERROR("{\"fp16\": 5}", CONFIG_NOT_OBJECT, "fp16", 1, 10, "expected an object");
    EXPECT_ERROR("{\"zero_optimization\": {\"stgae\": 2}}", CONFIG_UNKNOWN_KEY, "zero_optimization.stgae", 1, 24, "did you mean \"stage\"");
    EXPECT_ERROR("{\"fp16\": {\"enabled\": true, \"loss_scale_windw\": 10}}", CONFIG_UNKNOWN_KEY, "fp16.loss_scale_windw", 1, 28,
                 "did you mean \"loss_scale_window\"");
    EXPECT_ERROR("{\"bf16\": {\"enable\": true}}", CONFIG_UNKNOWN_KEY, "bf16.enable", 0, 0, "did you mean \"enabled\"");
    EXPECT_ERROR("{\"zero_optimization\": {\"offload_param\": {\"device\": \"cpu\", \"colour\": 1}}}", CONFIG_UNKNOWN_KEY,
                 "zero_optimization.offload_param.colour", 0, 0, "unknown key");
    /* offload_param keys that belong to offload_optimizer only */
    EXPECT_ERROR("{\"zero_optimization\": {\"offload_param\": {\"ratio\": 0.5}}}", CONFIG_UNKNOWN_KEY,
                 "zero_optimization.offload_param.ratio", 0, 0, NULL);
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 1e-3, \"betas1\": 0.9}}}", CONFIG_UNKNOWN_KEY,
                 "optimizer.params.betas1", 0, 0, "did you mean \"betas\"");
    EXPECT_ERROR("{\"scheduler\": {\"params\": {\"cycle_min_lr\": 0.1}, \"type\": \"WarmupLR\"}}", CONFIG_UNKNOWN_KEY,
                 "scheduler.params.cycle_min_lr", 0, 0, "not a parameter of scheduler WarmupLR");
    /* a top-level typo is an error (it would train without the section: stage 0, GAS 1); a name far from every key
       warns; a name of the program's own starts with '_' */
    EXPECT_ERROR("{\"trian_batch_size\": 8}", CONFIG_UNKNOWN_KEY, "trian_batch_size", 1, 2, "did you mean \"train_batch_size\"");
    EXPECT_ERROR("{\"zero_optimisation\": {\"stage\": 3}}", CONFIG_UNKNOWN_KEY, "zero_optimisation", 0, 0,
                 "did you mean \"zero_optimization\"");
    EXPECT_ERROR("{\"gradient_acumulation_steps\": 4}", CONFIG_UNKNOWN_KEY, "gradient_acumulation_steps", 0, 0,
                 "HINT: fix its name; a key of your own");
    EXPECT_LOG("{\"my_application_setting\": 8}", CONFIG_UNKNOWN_KEY_IGNORED, "my_application_setting");
    {
        zero_config c = cfg_quiet();
        zero_error err;
        CHECK(parse(&c, "{\"_zero_optimisation\": {\"stage\": 3}}", &err) == ZERO_OK && logged_find(ZERO_MSG_CONFIG_UNKNOWN_KEY_IGNORED, NULL) < 0);
    }
    /* "stage": "auto" is DeepSpeed's default, stage 0: a warning, not the info line of other "auto" defaults */
    EXPECT_LOG("{\"zero_optimization\": {\"stage\": \"auto\"}}", CONFIG_AUTO_DEFAULT, "no ZeRO sharding at all");
    CHECK(logged_find(ZERO_MSG_CONFIG_AUTO_DEFAULT, "no ZeRO sharding") >= 0 &&
          logged.level[logged_find(ZERO_MSG_CONFIG_AUTO_DEFAULT, "no ZeRO sharding")] == ZERO_LOG_WARN);
    /* HF's names for the scheduler's parameters point at DeepSpeed's */
    EXPECT_ERROR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_steps\": 10}}}", CONFIG_UNKNOWN_KEY,
                 "scheduler.params.warmup_steps", 0, 0, "did you mean \"warmup_num_steps\"");
    EXPECT_ERROR("{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"num_training_steps\": 10}}}", CONFIG_UNKNOWN_KEY,
                 "scheduler.params.num_training_steps", 0, 0, "did you mean \"total_num_steps\"");
    EXPECT_LOG("{\"optimizer\": {\"type\": \"Adam\", \"legacy_fusion\": false}}", CONFIG_UNKNOWN_KEY_IGNORED, "optimizer.legacy_fusion");

    EXPECT_ERROR("{\"zero_optimization\": {\"stage\": \"two\"}}", CONFIG_TYPE, "zero_optimization.stage", 1, 33, "expected a number, got \"two\"");
    EXPECT_ERROR("{\"fp16\": {\"enabled\": \"maybe\"}}", CONFIG_TYPE, "fp16.enabled", 1, 22, "expected true or false");
    EXPECT_ERROR("{\"fp16\": {\"loss_scale\": true}}", CONFIG_TYPE, "fp16.loss_scale", 0, 0, "expected a number, got a boolean");
    EXPECT_ERROR("{\"optimizer\": {\"type\": 3}}", CONFIG_TYPE, "optimizer.type", 0, 0, NULL);
    EXPECT_ERROR("{\"zero_optimization\": {\"offload_optimizer\": {\"nvme_path\": 7}}}", CONFIG_TYPE,
                 "zero_optimization.offload_optimizer.nvme_path", 0, 0, "expected a string");
    EXPECT_ERROR("{\"zero_optimization\": {\"offload_optimizer\": {\"nvme_path\": \"a\\u0000b\"}}}", CONFIG_TYPE,
                 "zero_optimization.offload_optimizer.nvme_path", 0, 0, "NUL");
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"betas\": 0.9}}}", CONFIG_TYPE, "optimizer.params.betas", 0, 0, "[beta1, beta2]");
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"betas\": [0.9, \"x\"]}}}", CONFIG_TYPE, "optimizer.params.betas[1]", 0, 0, NULL);

    EXPECT_ERROR("{\"gradient_accumulation_steps\": 1.5}", CONFIG_NOT_INTEGER, "gradient_accumulation_steps", 1, 33, "got 1.5");
    EXPECT_ERROR("{\"zero_optimization\": {\"stage\": 4}}", CONFIG_RANGE, "zero_optimization.stage", 1, 33, "between 0 and 3, got 4");
    EXPECT_ERROR("{\"train_batch_size\": 0}", CONFIG_RANGE, "train_batch_size", 0, 0, "must be >= 1, got 0");
    /* a string holding a NUL is shown escaped, not cut at the NUL */
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Ad\\u0000amW\"}}", CONFIG_ENUM, "optimizer.type", 0, 0,
                 "got \"Ad\\u0000amW\"");
    /* past a float key's far end: the end and the value as given, not int64's */
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"lr\": 1e308}}}", CONFIG_RANGE, "optimizer.params.lr", 0, 0,
                 "must be between 0 and 1e+300, got 1e+308");
    EXPECT_ERROR("{\"zero_optimization\": {\"reduce_bucket_size\": 1e30}}", CONFIG_RANGE, "zero_optimization.reduce_bucket_size",
                 0, 0, "must be between 0 and 2^63-1, got 1e+30");
    EXPECT_ERROR("{\"zero_optimization\": {\"reduce_bucket_size\": -5}}", CONFIG_RANGE, NULL, 0, 0, NULL);
    EXPECT_ERROR("{\"gradient_clipping\": -1}", CONFIG_RANGE, "gradient_clipping", 0, 0, NULL);
    EXPECT_ERROR("{\"fp16\": {\"hysteresis\": 0}}", CONFIG_RANGE, "fp16.hysteresis", 0, 0, NULL);
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"betas\": [0.9, 1.0]}}}", CONFIG_RANGE, "optimizer.params.betas[1]", 0, 0, "[0, 1)");
    EXPECT_ERROR("{\"zero_optimization\": {\"reduce_bucket_size\": 1e30}}", CONFIG_RANGE, NULL, 0, 0, NULL);

    EXPECT_ERROR("{\"communication_data_type\": \"fp8\"}", CONFIG_ENUM, "communication_data_type", 0, 0,
                 "expected \"fp32\", \"fp16\" or \"bf16\", got \"fp8\"");
    EXPECT_ERROR("{\"scheduler\": {\"type\": \"StepLR\"}}", CONFIG_ENUM, "scheduler.type", 0, 0, "\"WarmupLR\"");
    EXPECT_ERROR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_type\": \"cosine\"}}}", CONFIG_ENUM,
                 "scheduler.params.warmup_type", 0, 0, NULL);

    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"betas\": [0.9]}}}", CONFIG_LIST_LENGTH, "optimizer.params.betas", 0, 0, "got 1");
    EXPECT_ERROR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_max_lr\": [1e-3, 2e-3]}}}", CONFIG_LIST_LENGTH,
                 "scheduler.params.warmup_max_lr", 0, 0, "one parameter group");

    EXPECT_ERROR("{\"steps_per_print\": \"auto\"}", CONFIG_AUTO_NOT_ALLOWED, "steps_per_print", 1, 21, NULL);
    EXPECT_ERROR("{\"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_min_lr\": \"auto\"}}}", CONFIG_AUTO_NOT_ALLOWED,
                 "scheduler.params.cycle_min_lr", 0, 0, NULL);
    EXPECT_LOG("{\"zero_optimization\": {\"stage\": \"auto\", \"sub_group_size\": \"auto\"}}", CONFIG_AUTO_DEFAULT, "sub_group_size");

    EXPECT_LOG("{\"zero_optimization\": {\"cpu_offload\": true}}", CONFIG_DEPRECATED, "offload_optimizer");
    EXPECT_LOG("{\"zero_optimization\": true}", CONFIG_DEPRECATED, "stage 1");
    EXPECT_ERROR("{\"zero_optimization\": {\"cpu_offload\": true, \"offload_optimizer\": {\"device\": \"cpu\"}}}",
                 CONFIG_DEPRECATED_CONFLICT, "zero_optimization.cpu_offload", 0, 0, "offload_optimizer");
    EXPECT_ERROR("{\"zero_optimization\": {\"stage3_gather_fp16_weights_on_model_save\": true, "
                 "\"stage3_gather_16bit_weights_on_model_save\": false}}",
                 CONFIG_DEPRECATED_CONFLICT, NULL, 0, 0, NULL);
    EXPECT_ERROR("{\"zero_optimization\": {\"stage3_prefetch_bucket_size\": 5, \"prefetch_bucket_size\": 6}}", CONFIG_INCONSISTENT,
                 "zero_optimization.stage3_prefetch_bucket_size", 0, 0, "alias");

    EXPECT_LOG("{\"zero_optimization\": {\"load_from_fp32_weights\": false}}", CONFIG_NOT_IMPLEMENTED,
               "zero_optimization.load_from_fp32_weights");
    EXPECT_LOG("{\"zero_optimization\": {\"overlap_comm\": false}}", CONFIG_NO_EFFECT, "zero_optimization.overlap_comm");
    /* an implemented key at a non-default value says nothing */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"zero_optimization\": {\"stage\": 2}}", &err) == ZERO_OK);
    CHECK(logged_find(ZERO_MSG_CONFIG_NOT_IMPLEMENTED, NULL) < 0);
    EXPECT_LOG("{\"zero_optimization\": {\"round_robin_gradients\": true}}", CONFIG_NO_EFFECT, "round_robin_gradients");
    EXPECT_LOG("{\"wandb\": {\"enabled\": true}}", CONFIG_NO_EFFECT, "wandb");
    /* DeepSpeed's file monitors are read (zero writes them) */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"tensorboard\": {\"enabled\": true, \"output_path\": \"out/ds_logs\", \"job_name\": \"train_bert\"}, "
                    "\"csv_monitor\": {\"enabled\": true}}",
                &err) == ZERO_OK);
    CHECK(c.tensorboard.enabled == 1 && !strcmp(c.tensorboard.output_path, "out/ds_logs") &&
          !strcmp(c.tensorboard.job_name, "train_bert"));
    CHECK(c.csv_monitor.enabled == 1 && c.csv_monitor.output_path[0] == 0 && !strcmp(c.csv_monitor.job_name, "DeepSpeedJobName"));
    CHECK(logged_find(ZERO_MSG_CONFIG_NO_EFFECT, NULL) < 0 && logged_find(ZERO_MSG_CONFIG_NOT_IMPLEMENTED, NULL) < 0);
    /* a no-effect key at its default says nothing */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"zero_optimization\": {\"contiguous_gradients\": true}}", &err) == ZERO_OK);
    CHECK(logged_find(ZERO_MSG_CONFIG_NO_EFFECT, NULL) < 0);

    EXPECT_ERROR("{\"optimizer\": {\"type\": \"OneBitLamb\"}}", CONFIG_UNSUPPORTED, "optimizer.type", 0, 0, "not supported yet");
    EXPECT_ERROR("{\"zero_optimization\": {\"legacy_stage1\": true}}", CONFIG_UNSUPPORTED, "zero_optimization.legacy_stage1", 0, 0, NULL);
    EXPECT_ERROR("{\"zero_optimization\": {\"zero_quantized_weights\": true}}", CONFIG_UNSUPPORTED, NULL, 0, 0, "ZeRO++");
    EXPECT_ERROR("{\"zero_optimization\": {\"zero_hpz_partition_size\": 8}}", CONFIG_UNSUPPORTED, NULL, 0, 0, NULL);
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"amsgrad\": true}}}", CONFIG_UNSUPPORTED, NULL, 0, 0, NULL);
    EXPECT_ERROR("{\"amp\": {\"enabled\": true}}", CONFIG_UNSUPPORTED, "amp", 0, 0, NULL);
    EXPECT_ERROR("{\"zero_optimization\": {\"zenflow\": {\"topk_ratio\": 0.1}}}", CONFIG_UNSUPPORTED, NULL, 0, 0, NULL);
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"max_grad_norm\": 1.0}}}", CONFIG_UNKNOWN_KEY, NULL, 0, 0, NULL);
    c = cfg_quiet(); /* accepted when off */
    CHECK(parse(&c, "{\"amp\": {\"enabled\": false}, \"zero_optimization\": {\"zenflow\": null}}", &err) == ZERO_OK);

    EXPECT_ERROR("{\"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}", CONFIG_FP16_AND_BF16, "bf16.enabled", 1, 49, NULL);
    EXPECT_ERROR("{\"bfloat16\": {\"enabled\": true}, \"fp16\": {\"enabled\": true}}", CONFIG_FP16_AND_BF16, "fp16.enabled", 0, 0, NULL);
    EXPECT_RESOLVE_ERROR("{\"fp16\": {\"enabled\": \"auto\"}, \"bf16\": {\"enabled\": true}, \"train_batch_size\": 8}", 1,
                         CONFIG_AUTO_UNRESOLVED, "fp16.enabled", "cfg.fp16.enabled");
    {
        zero_config r2 = cfg_quiet();
        parse(&r2, "{\"fp16\": {\"enabled\": \"auto\"}, \"bf16\": {\"enabled\": true}, \"train_batch_size\": 8}", &err);
        r2.fp16.enabled = 1;
        CHECK(zero_config_resolve(&r2, 1, &err) == ZERO_ERR_CONFIG && err.item == ZERO_MSG_CONFIG_FP16_AND_BF16);
    }
    EXPECT_ERROR("{\"scheduler\": {\"params\": {\"warmup_num_steps\": 5}}}", CONFIG_REQUIRED, "scheduler.type", 0, 0, NULL);
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"scheduler\": {\"type\": \"WarmupDecayLR\"}}", 1, CONFIG_REQUIRED,
                         "scheduler.params.total_num_steps", "WarmupDecayLR");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"scheduler\": {\"type\": \"WarmupCosineLR\"}}", 1, CONFIG_REQUIRED,
                         "scheduler.params.total_num_steps", "HINT: the optimizer steps of the whole run");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_min_lr\": 0.1}}}", 1,
                         CONFIG_REQUIRED, "scheduler.params.cycle_max_lr", NULL);
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"nvme\"}}}", 1,
                         CONFIG_REQUIRED, "zero_optimization.offload_param", "nvme_path");
    EXPECT_RESOLVE_ERROR("{\"gradient_accumulation_steps\": 4}", 2, CONFIG_BATCH_MISSING, "train_batch_size", NULL);
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 30, \"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 2}", 4,
                         CONFIG_BATCH_MISMATCH, "train_batch_size", "30 != train_micro_batch_size_per_gpu 4");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 30, \"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 2}", 4,
                         CONFIG_BATCH_MISMATCH, "train_batch_size", "HINT: give two of the three and zero derives the "
                         "third for 4 ranks (DeepSpeed does the same); or make train_batch_size 32");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\"}}}", 1,
                         CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer", "stage");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"gradient_allreduce_op\": \"sum\", \"zero_optimization\": {\"stage\": 3}}", 1,
                         CONFIG_INCONSISTENT, "gradient_allreduce_op", NULL);
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"prescale_gradients\": true, \"zero_optimization\": {\"stage\": 2}}", 1,
                         CONFIG_INCONSISTENT, "prescale_gradients", NULL);
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.5}}}",
                         1, CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer.ratio", NULL);
    /* partial offload: "cpu" and Adam / AdamW only (DeepSpeed's CPU Adam beside its AdamW); without offload
       ignored with a warning, as DeepSpeed ignores it; stage 3 "cpu" accepted, no "not implemented" warning */
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": "
                         "{\"device\": \"nvme\", \"nvme_path\": \"/tmp\", \"ratio\": 0.5}}}",
                         1, CONFIG_UNSUPPORTED, "zero_optimization.offload_optimizer.ratio", "HINT: set the device to \"cpu\"");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"Lion\"}, \"zero_optimization\": {\"stage\": 3, "
                         "\"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.5}}}",
                         1, CONFIG_UNSUPPORTED, "zero_optimization.offload_optimizer.ratio", "needs Adam or AdamW");
    CHECK(resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": "
                           "{\"ratio\": 0.5}}}", 1, &err) == ZERO_OK);
    CHECK(logged_find(ZERO_MSG_CONFIG_NO_EFFECT, "offload_optimizer.ratio") >= 0);
    CHECK(resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": "
                           "{\"device\": \"cpu\", \"ratio\": 0.3}}}", 1, &err) == ZERO_OK);
    CHECK(c.zero_optimization.offload_optimizer.ratio == 0.3 && logged_find(ZERO_MSG_CONFIG_NO_EFFECT, NULL) < 0 &&
          logged_find(ZERO_MSG_CONFIG_NOT_IMPLEMENTED, NULL) < 0);
    CHECK(resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": "
                           "{\"device\": \"cpu\", \"ratio\": 0.3, \"delayed_param_update\": true}}}", 1, &err) == ZERO_OK);
    CHECK(logged_find(ZERO_MSG_CONFIG_NO_EFFECT, "without the delay") >= 0);
    /* hybrid sharding: G divides the world, at stages 1-3; hierarchical gather accepted (no effect) */
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 2, \"mics_shard_size\": 3}}", 8,
                         CONFIG_INCONSISTENT, "zero_optimization.mics_shard_size", "does not divide the world size 8");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3, \"mics_shard_size\": 16}}", 8,
                         CONFIG_INCONSISTENT, "zero_optimization.mics_shard_size", "16 does not divide");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"mics_shard_size\": 4}}", 8,
                         CONFIG_INCONSISTENT, "zero_optimization.mics_shard_size", "stage 1, 2 or 3");
    CHECKF(resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3, \"mics_shard_size\": 4, "
                            "\"mics_hierarchical_params_gather\": true}}", 8, &err) == ZERO_OK && c.zero_optimization.mics_shard_size == 4,
           "%s", err.msg);
    CHECKF(resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 1, \"mics_shard_size\": 8}}", 8, &err) ==
               ZERO_OK, "%s", err.msg);
    CHECKF(resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"mics_shard_size\": -1}}", 8, &err) == ZERO_OK,
           "%s", err.msg);
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"fp16\": {\"enabled\": true, \"loss_scale_window\": 0}}", 1, CONFIG_RANGE,
                         "fp16.loss_scale_window", "dynamic");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"fp16\": {\"enabled\": true, \"min_loss_scale\": 0}}", 1, CONFIG_RANGE,
                         "fp16.min_loss_scale", NULL);
    /* a static scale needs neither */
    CHECKF(resolve_json(&c, "{\"train_batch_size\": 8, \"fp16\": {\"enabled\": true, \"loss_scale\": 128, \"loss_scale_window\": 0}}", 1, &err) == ZERO_OK,
           "%s", err.msg);
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"zero_optimization\": {\"reduce_bucket_size\": \"auto\"}}", 1,
                         CONFIG_AUTO_UNRESOLVED, "zero_optimization.reduce_bucket_size", "cfg.hidden_size");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"optimizer\": {\"params\": {\"lr\": \"auto\"}}}", 1, CONFIG_AUTO_UNRESOLVED,
                         "optimizer.params.lr", "cfg.optimizer.lr");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8}", 0, BAD_ARG, "world_size", NULL);

    /* warnings of resolve */
    CHECK(resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 2, \"offload_param\": {\"device\": \"cpu\"}}}", 1, &err) == ZERO_OK);
    CHECK(logged_find(ZERO_MSG_CONFIG_STAGE_IGNORED, "offload_param") >= 0);
    CHECK(resolve_json(&c, "{\"train_batch_size\": 8, \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"total_num_steps\": 10, \"warmup_num_steps\": 100}}}", 1, &err) == ZERO_OK);
    CHECK(logged_find(ZERO_MSG_CONFIG_SCHED_WARNING, "less than") >= 0);

    /* files */
    c = cfg_quiet();
    CHECK(zero_config_load(&c, "tests/configs/no_such_file.json", &err) == ZERO_ERR_IO && err.item == ZERO_MSG_FILE_OPEN);
    CHECK_STR_CONTAINS(err.msg, "no_such_file.json");
    CHECK(zero_config_load(&c, "tests/configs", &err) == ZERO_ERR_IO && err.item == ZERO_MSG_FILE_READ);
    CHECK_STR_CONTAINS(err.msg, "tests/configs");
    { /* a FIFO: refused before it is opened (opening one waits for a writer; the test would hang) */
        char fifo[64], cmd[256];
        snprintf(fifo, sizeof fifo, "/tmp/zero_test_config_fifo.%d", (int)zt_rand_int(0, 1 << 30));
        snprintf(cmd, sizeof cmd, "rm -f '%s' && mkfifo '%s'", fifo, fifo);
        CHECK(system(cmd) == 0);
        CHECK(zero_config_load(&c, fifo, &err) == ZERO_ERR_IO && err.item == ZERO_MSG_FILE_READ);
        CHECK_STR_CONTAINS(err.msg, fifo);
        CHECK_STR_CONTAINS(err.msg, "not a regular file (a FIFO");
        remove(fifo);
    }
    {
        FILE *f = fopen("build/t/bad_config.json", "wb");
        if (f) {
            fputs("{\n  \"fp16\": {\"enabled\": tru}\n}\n", f);
            fclose(f);
            CHECK(zero_config_load(&c, "build/t/bad_config.json", &err) == ZERO_ERR_CONFIG);
            CHECKF(strncmp(err.msg, "build/t/bad_config.json:2:23: fp16.enabled: ", 44) == 0 && err.line == 2 &&
                       err.column == 23 && !strstr(err.msg, "(line"),
                   "%s", err.msg);
        }
    }
    CHECK(zero_config_load(NULL, "x", &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK(zero_config_parse_json(&c, NULL, 3, &err) == ZERO_ERR_INVALID_ARG && err.item == ZERO_MSG_NULL_ARG);
    CHECK(zero_config_resolve(NULL, 1, &err) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_config_parse_json(&c, "{}", 2, NULL) == ZERO_OK); /* err may be NULL */
    CHECK(zero_config_parse_json(&c, "{", 1, NULL) == ZERO_ERR_CONFIG);
    /* JSON errors come through with their item (a trailing comma is hjson, read as DeepSpeed reads it) */
    EXPECT_ERROR("{\"fp16\": {\"enabled\": true,,}}", JSON_UNEXPECTED, NULL, 1, 27, "two commas in a row");
    EXPECT_ERROR("{\"fp16\": {}, \"fp16\": {}}", JSON_DUPLICATE_KEY, "fp16", 0, 0, NULL);

    /* every message item is named and summarised */
    {
        int m;
        for (m = 0; m < ZERO_MSG_COUNT; m++) {
            CHECK(strcmp(zero_msg_name((zero_msg)m), "UNKNOWN") != 0 && zero_msg_summary((zero_msg)m)[0] != 0);
        }
        CHECK(strcmp(zero_msg_name(ZERO_MSG_CONFIG_RANGE), "CONFIG_RANGE") == 0);
        CHECK(strcmp(zero_msg_name((zero_msg)9999), "UNKNOWN") == 0);
        CHECK(strcmp(zero_result_string(ZERO_OK), "ok") == 0 && strcmp(zero_result_string((zero_result)999), "unknown result") == 0);
        CHECK(ZERO_OK == 0);
    }
}

/* ---- pydantic-style coercions and other accepted forms ---- */
static void test_coercions(void) {
    zero_config c;
    zero_error err;
    c = cfg_quiet();
    CHECKF(parse(&c, "{\"zero_optimization\": {\"stage\": \"3\", \"reduce_bucket_size\": 5e8, \"sub_group_size\": \"1e9\","
                     " \"overlap_comm\": \"yes\", \"contiguous_gradients\": 0}, \"fp16\": {\"enabled\": \"True\"},"
                     " \"steps_per_print\": null, \"train_batch_size\": 9000000000000000001}",
                 &err) == ZERO_OK,
           "%s", err.msg);
    CHECK(c.zero_optimization.stage == 3 && c.zero_optimization.reduce_bucket_size == 500000000 &&
          c.zero_optimization.sub_group_size == 1000000000 && c.zero_optimization.overlap_comm == 1 &&
          c.zero_optimization.contiguous_gradients == 0 && c.fp16.enabled == 1 && c.steps_per_print == 0);
    CHECK(c.train_batch_size == 9000000000000000001LL); /* exact beyond 2^53 */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"optimizer\": {\"type\": \"adamw\", \"params\": {\"lr\": \"3e-4\"}}, "
                    "\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_max_lr\": [0.01], \"warmup_max_lr\": 1}}}",
                &err) == ZERO_ERR_CONFIG); /* duplicate key */
    c = cfg_quiet();
    CHECKF(parse(&c, "{\"optimizer\": {\"type\": \"ADAMW\", \"params\": {\"lr\": \"3e-4\"}}, "
                     "\"scheduler\": {\"params\": {\"warmup_max_lr\": [0.01]}, \"type\": \"WarmupLR\"},"
                     " \"checkpoint\": {\"tag_validation\": \"fail\"}, \"bfloat16\": {\"enabled\": false},"
                     " \"zero_optimization\": {\"offload_optimizer\": null, \"prefetch_bucket_size\": 7}}",
                 &err) == ZERO_OK,
           "%s", err.msg);
    CHECK(c.optimizer.type == ZERO_OPTIMIZER_ADAMW && c.optimizer.lr == 3e-4 && c.scheduler.warmup_max_lr == 0.01);
    CHECK(c.tag_validation == ZERO_TAG_VALIDATION_FAIL && c.bf16.enabled == 0 &&
          c.zero_optimization.stage3_prefetch_bucket_size == 7 &&
          c.zero_optimization.offload_optimizer.device == ZERO_OFFLOAD_NONE);
    /* keys present overwrite, absent keys keep their value; null resets an offload block */
    CHECK(parse(&c, "{\"zero_optimization\": {\"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"/x\"}}}", &err) == ZERO_OK);
    CHECK(c.optimizer.lr == 3e-4 && c.zero_optimization.offload_param.device == ZERO_OFFLOAD_NVME);
    CHECK(parse(&c, "{\"zero_optimization\": {\"offload_param\": null}}", &err) == ZERO_OK);
    CHECK(c.zero_optimization.offload_param.device == ZERO_OFFLOAD_NONE && c.zero_optimization.offload_param.nvme_path[0] == 0);
    /* legacy boolean form */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"zero_optimization\": false}", &err) == ZERO_OK && c.zero_optimization.stage == 0);
    /* comments, as hjson allows */
    c = cfg_quiet();
    CHECKF(parse(&c, "// ds config\n{ /* stage */ \"zero_optimization\": {\"stage\": 1} # trailing\n}", &err) == ZERO_OK, "%s", err.msg);
    CHECK(c.zero_optimization.stage == 1);
    /* a failed resolve leaves the config untouched */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"train_micro_batch_size_per_gpu\": 4, \"optimizer\": {\"params\": {\"lr\": \"auto\"}}}", &err) == ZERO_OK);
    CHECK(zero_config_resolve(&c, 2, &err) != ZERO_OK && c.train_batch_size == ZERO_UNSET && c.resolved == 0);
    c.optimizer.lr = 1e-4;
    CHECK(zero_config_resolve(&c, 2, &err) == ZERO_OK && c.train_batch_size == 8 && c.gradient_accumulation_steps == 1);
    CHECK(zero_config_resolve(&c, 2, &err) == ZERO_OK && c.train_batch_size == 8); /* idempotent */
}

/* ---- the batch triangle, DeepSpeed's rules ---- */
static void test_batch_triangle(void) {
    struct { long long tbs, mbs, gas; int world; long long want_tbs, want_mbs, want_gas; int ok; } t[] = {
        {32, 4, 2, 4, 32, 4, 2, 1},  {32, 4, -1, 4, 32, 4, 2, 1}, {32, -1, 2, 4, 32, 4, 2, 1},
        {-1, 4, 2, 4, 32, 4, 2, 1},  {32, -1, -1, 4, 32, 8, 1, 1}, {-1, 4, -1, 4, 16, 4, 1, 1},
        {30, 4, -1, 4, 0, 0, 0, 0},  /* floor: GAS = (30/4)/4 = 1, 4*1*4 != 30 */
        {30, -1, 2, 4, 0, 0, 0, 0},  {-1, -1, 2, 4, 0, 0, 0, 0}, {2, -1, -1, 4, 0, 0, 0, 0}, /* MBS = 0 */
    };
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        zero_config c = cfg_quiet();
        zero_error err;
        zero_result r;
        c.train_batch_size = t[i].tbs;
        c.train_micro_batch_size_per_gpu = t[i].mbs;
        c.gradient_accumulation_steps = t[i].gas;
        r = zero_config_resolve(&c, t[i].world, &err);
        CHECKF((r == ZERO_OK) == t[i].ok, "row %zu: %s", i, err.msg);
        if (t[i].ok)
            CHECKF(c.train_batch_size == t[i].want_tbs && c.train_micro_batch_size_per_gpu == t[i].want_mbs &&
                       c.gradient_accumulation_steps == t[i].want_gas,
                   "row %zu: %lld %lld %lld", i, (long long)c.train_batch_size, (long long)c.train_micro_batch_size_per_gpu,
                   (long long)c.gradient_accumulation_steps);
    }
    /* randomized against the rule written plainly */
    for (i = 0; i < 2000; i++) {
        zero_config c = cfg_quiet();
        zero_error err;
        long long tbs = zt_rand_int(0, 1) ? zt_rand_int(1, 512) : -1, mbs = zt_rand_int(0, 1) ? zt_rand_int(1, 64) : -1;
        long long gas = zt_rand_int(0, 1) ? zt_rand_int(1, 16) : -1, T, M, G;
        int world = (int)zt_rand_int(1, 16), ok;
        c.train_batch_size = tbs;
        c.train_micro_batch_size_per_gpu = mbs;
        c.gradient_accumulation_steps = gas;
        T = tbs; M = mbs; G = gas;
        if (T > 0 && M > 0 && G > 0) {}
        else if (T > 0 && M > 0) G = T / M / world;
        else if (T > 0 && G > 0) M = T / world / G;
        else if (M > 0 && G > 0) T = M * G * world;
        else if (T > 0) G = 1, M = T / world;
        else if (M > 0) G = 1, T = M * world;
        ok = (T > 0 || M > 0) && T > 0 && M > 0 && G > 0 && T == M * G * world;
        CHECKF((zero_config_resolve(&c, world, &err) == ZERO_OK) == ok, "tbs %lld mbs %lld gas %lld world %d: %s", tbs, mbs, gas, world, err.msg);
        if (ok) CHECK(c.train_batch_size == T && c.train_micro_batch_size_per_gpu == M && c.gradient_accumulation_steps == G);
    }
}

/* ---- randomized round trip: config -> JSON -> config ---- */
static void randomize(zero_config *c) {
    int i;
    for (i = 0; i < ZERO__NKEYS; i++) {
        const zero__key *k = &zero__keys[i];
        if (k->info.status == ZERO_KEY_REJECTED || k->info.status == ZERO_KEY_DEPRECATED) continue;
        if (zt_rand_int(0, 2) == 0) continue;
        switch (k->kind) {
        case ZERO__K_BOOL: zero__put_int(c, k->offset, (int)zt_rand_int(0, 1)); break;
        case ZERO__K_INT: zero__put_int(c, k->offset, (int)zt_rand_int((long)k->lo, k->hi < 1000 ? (long)k->hi : 1000)); break;
        case ZERO__K_I64: {
            int64_t v = (int64_t)zt_rand_int(k->lo < 0 ? 0 : (long)k->lo, 1000000000L) * (int64_t)zt_rand_int(1, 1000);
            if ((double)v > k->hi) v = (int64_t)k->lo + v % ((int64_t)k->hi - (int64_t)k->lo + 1); /* within the key's range */
            zero__put_i64(c, k->offset, v);
            break;
        }
        case ZERO__K_F64: {
            double hi = k->hi > 1e6 ? 1e6 : k->hi, lo = k->lo < 0 ? 0 : k->lo;
            zero__put_f64(c, k->offset, zt_rand_range(lo, hi));
            break;
        }
        case ZERO__K_BETAS:
            zero__put_f64(c, k->offset, zt_rand01());
            zero__put_f64(c, k->offset + sizeof(double), zt_rand01());
            break;
        case ZERO__K_ENUM: {
            /* pick one of the listed values */
            const char *ch = k->choices;
            int n = 1, pick, v = 0;
            const char *q;
            for (q = ch; *q; q++) n += *q == '|';
            pick = (int)zt_rand_int(0, n - 1);
            for (q = ch; pick > 0; q++) pick -= *q == '|';
            v = atoi(strchr(q, ':') + 1);
            zero__put_int(c, k->offset, v);
            break;
        }
        case ZERO__K_STRING: {
            char *s = (char *)c + k->offset;
            int n = (int)zt_rand_int(0, 40), j;
            for (j = 0; j < n; j++) s[j] = (char)zt_rand_int(1, 126);
            s[n] = 0;
            break;
        }
        default: break;
        }
        if ((k->auto_rule == ZERO__AUTO_SUPPLY || k->auto_rule == ZERO__AUTO_DERIVE) && zt_rand_int(0, 5) == 0) zero__key_set_auto(c, k);
    }
    /* keep the combinations a parse accepts */
    if (c->fp16.enabled == 1 && c->bf16.enabled == 1) c->bf16.enabled = 0;
}

static void test_round_trip(void) {
    static char buf[1 << 16];
    int round, i;
    for (round = 0; round < 300; round++) {
        zero_config a = cfg_quiet(), b = cfg_quiet();
        zero_error err;
        size_t n;
        int bad = 0;
        randomize(&a);
        n = zero_config_to_json(&a, buf, sizeof buf);
        CHECK(n < sizeof buf);
        if (parse(&b, buf, &err) != ZERO_OK) {
            CHECKF(0, "round %d: %s\n%s", round, err.msg, buf);
            continue;
        }
        for (i = 0; i < ZERO__NKEYS; i++) {
            const zero__key *k = &zero__keys[i];
            if (!zero__key_emitted(&a, k)) continue;
            if (zero__key_differs(&a, &b, k)) {
                bad++;
                CHECKF(0, "round %d: %s differs after the round trip", round, k->info.path);
            }
        }
        CHECK(bad == 0);
    }
    /* truncation reports the length it needs */
    {
        zero_config a = zero_config_default();
        char small[16];
        size_t need = zero_config_to_json(&a, small, sizeof small);
        CHECK(need > sizeof small && strlen(small) == sizeof small - 1);
        CHECK(zero_config_to_json(&a, NULL, 0) == need);
    }
}

/* ---- hjson's forms in a config, and Infinity / NaN per key ---- */
static void test_hjson(void) {
    zero_config c;
    zero_error err;
    int i;
    c = cfg_quiet();
    CHECKF(parse(&c, "{\n"
                     "  \"train_batch_size\": 16,\n"
                     "  \"zero_optimization\": {'stage': 2, \"offload_optimizer\": {\"device\": 'cpu',},}\n"
                     "  \"optimizer\": {\"type\": 'AdamW', \"params\": {\"lr\": 3e-4, \"betas\": [0.9, 0.95,]}}\n"
                     "  \"scheduler\": {\n"
                     "    \"type\": 'WarmupLR'\n"
                     "    \"params\": {\"warmup_num_steps\": 10}\n"
                     "  },\n"
                     "  \"gradient_clipping\": Infinity,\n"
                     "}",
                 &err) == ZERO_OK,
           "%s", err.msg);
    CHECK(c.train_batch_size == 16 && c.zero_optimization.stage == 2 &&
          c.zero_optimization.offload_optimizer.device == ZERO_OFFLOAD_CPU && c.optimizer.type == ZERO_OPTIMIZER_ADAMW &&
          c.optimizer.beta2 == 0.95 && c.scheduler.type == ZERO_SCHEDULER_WARMUP_LR && c.scheduler.warmup_num_steps == 10);
    CHECK(c.gradient_clipping == 0 && c.gradient_clipping_given == 1); /* Infinity: no clipping, zero's 0 */
    /* one info line per form: how many, the first one's line:col; none is a warning (zero_config --strict) */
    CHECKF(logged_find(ZERO_MSG_JSON_HJSON, "hjson: a trailing comma before ']' or '}' (4 in the text, the first here), "
                                            "read as DeepSpeed's hjson reader reads it; strict JSON tools (json.load, jq) "
                                            "refuse it (line 3:74)") >= 0,
           "%s", logged.n ? logged.text[0] : "");
    CHECK(logged_find(ZERO_MSG_JSON_HJSON, "hjson: a line break standing for the comma between members or elements (3 in "
                                           "the text, the first here), read as DeepSpeed's hjson reader reads it; strict "
                                           "JSON tools (json.load, jq) refuse it (line 3:78)") >= 0);
    CHECK(logged_find(ZERO_MSG_JSON_HJSON, "hjson: a single-quoted string (4 in the text, the first here), read as "
                                           "DeepSpeed's hjson reader reads it; strict JSON tools (json.load, jq) refuse it "
                                           "(line 3:25)") >= 0);
    CHECK(logged_find(ZERO_MSG_JSON_HJSON, "hjson: Infinity, -Infinity or NaN as a number, read as DeepSpeed's hjson "
                                           "reader reads it; strict JSON tools (json.load, jq) refuse it (line 9:24)") >= 0);
    CHECK(logged_find(ZERO_MSG_JSON_HJSON, "gradient_clipping: Infinity: no clipping") >= 0);
    for (i = 0; i < logged.n; i++) CHECKF(logged.level[i] == ZERO_LOG_INFO, "%s", logged.text[i]);
    CHECK(zero_config_resolve(&c, 2, &err) == ZERO_OK);
    /* plain JSON draws no note */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"train_batch_size\": 8, \"gradient_clipping\": 1.5} // JSON with a comment", &err) == ZERO_OK &&
          logged_find(ZERO_MSG_JSON_HJSON, NULL) < 0);
    /* a string holding one of the words, as pydantic reads it */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"gradient_clipping\": \"Infinity\"}", &err) == ZERO_OK && c.gradient_clipping == 0);
    /* refused wherever it means nothing, at the value */
    EXPECT_ERROR("{\"train_batch_size\": Infinity}", CONFIG_RANGE, "train_batch_size", 1, 22,
                 "expected an integer, got Infinity: a count or size is finite");
    EXPECT_ERROR("{\"zero_optimization\": {\"stage\": NaN}}", CONFIG_RANGE, "zero_optimization.stage", 1, 33, "got NaN");
    EXPECT_ERROR("{\"zero_optimization\": {\"reduce_bucket_size\": -Infinity}}", CONFIG_RANGE,
                 "zero_optimization.reduce_bucket_size", 1, 46, "got -Infinity");
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"lr\": NaN}}}", CONFIG_RANGE, "optimizer.params.lr", 1, 33,
                 "expected a finite number, got NaN: it would carry NaN into the arithmetic");
    EXPECT_ERROR("{\"fp16\": {\"loss_scale\": Infinity}}", CONFIG_RANGE, "fp16.loss_scale", 1, 25, "an infinity");
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"betas\": [Infinity, 0.9]}}}", CONFIG_RANGE, "optimizer.params.betas[0]", 1,
                 37, "expected a finite number");
    EXPECT_ERROR("{\"gradient_clipping\": -Infinity}", CONFIG_RANGE, "gradient_clipping", 1, 23, "got -Infinity");
    EXPECT_ERROR("{\"gradient_clipping\": NaN}", CONFIG_RANGE, "gradient_clipping", 1, 23, "got NaN");
    EXPECT_ERROR("{\"fp16\": {\"enabled\": NaN}}", CONFIG_TYPE, "fp16.enabled", 1, 22, "expected true or false, got NaN");
    EXPECT_ERROR("{\"scheduler\": {\"type\": WarmupLR}}", JSON_UNEXPECTED, NULL, 1, 24, "quoteless strings are not accepted");
    EXPECT_ERROR("{\"a\": 1 \"b\": 2}", JSON_UNEXPECTED, NULL, 1, 9, "only a line break may stand for one");
}

/* ---- resolve's messages name the file and the key's line:col ---- */
static const char *write_tmp(char *path, size_t cap, const char *name, const char *text) {
    FILE *f;
    snprintf(path, cap, "/tmp/zero_test_config_%d_%s", (int)zt_rand_int(0, 1 << 30), name);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static void expect_placed(int at, const zero_config *c, zero_result r, const zero_error *err, const char *file, int line,
                          int col, const char *key, const char *hint) {
    char want[512];
    CHECKF(r == ZERO_ERR_CONFIG && err->line == line && err->column == col && strcmp(err->key, key) == 0,
           "line %d: at %d:%d key %s, want %d:%d %s (%s)", at, err->line, err->column, err->key, line, col, key, err->msg);
    if (line && file) snprintf(want, sizeof want, "%s:%d:%d: %s: ", file, line, col, key);
    else snprintf(want, sizeof want, "%s: ", key);
    CHECKF(strncmp(err->msg, want, strlen(want)) == 0, "line %d: \"%s\" does not start with \"%s\"", at, err->msg, want);
    CHECKF(strstr(err->msg, hint) != NULL && strstr(err->msg, "\nHINT: ") != NULL, "line %d: no HINT line \"%s\" in %s", at,
           hint, err->msg);
    (void)c;
}
#define EXPECT_PLACED(c, r, err, file, line, col, key, hint) expect_placed(__LINE__, c, r, err, file, line, col, key, hint)

static void test_places(void) {
    static const char triangle[] = "{\n"
                                   "  \"train_micro_batch_size_per_gpu\": 4,\n"
                                   "  \"gradient_accumulation_steps\": 1,\n"
                                   "  \"train_batch_size\": 10\n"
                                   "}\n";
    static const char decay[] = "{\"train_batch_size\": 8,\n"
                                " \"scheduler\": {\"params\": {\"warmup_num_steps\": 10},\n"
                                "      \"type\": \"WarmupDecayLR\"}}";
    char p1[128], p2[128], p3[128], want[200];
    const char *f1 = write_tmp(p1, sizeof p1, "triangle.json", triangle), *f2 = write_tmp(p2, sizeof p2, "decay.json", decay);
    zero_config c;
    zero_error err;
    zero_result r;

    /* from a file: FILE:line:col of the key first, the HINT after */
    c = cfg_quiet();
    CHECK(zero_config_load(&c, f1, &err) == ZERO_OK && strcmp(c.source.file, f1) == 0);
    r = zero_config_resolve(&c, 2, &err);
    EXPECT_PLACED(&c, r, &err, f1, 4, 3, "train_batch_size", "HINT: give two of the three");
    CHECK(err.item == ZERO_MSG_CONFIG_BATCH_MISMATCH && strstr(err.msg, "train_batch_size 10 != ") != NULL);
    c = cfg_quiet();
    CHECK(zero_config_load(&c, f2, &err) == ZERO_OK);
    r = zero_config_resolve(&c, 1, &err);
    /* the missing key has no place: the scheduler's type, which asks for it, has */
    EXPECT_PLACED(&c, r, &err, f2, 3, 7, "scheduler.params.total_num_steps", "HINT: the optimizer steps of the whole run");
    CHECK(err.item == ZERO_MSG_CONFIG_REQUIRED && strstr(err.msg, "is required by WarmupDecayLR") != NULL);

    /* from text in memory: the parser's form, the place before the HINT line */
    r = resolve_json(&c, triangle, 2, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 4, 3, "train_batch_size", "HINT:");
    CHECKF(strstr(err.msg, "(line 4:3)\nHINT: ") != NULL, "%s", err.msg);
    CHECK(c.source.file[0] == 0);

    /* set by the program: no place, even over a loaded config */
    c = cfg_quiet();
    c.train_micro_batch_size_per_gpu = 4;
    c.gradient_accumulation_steps = 1;
    c.train_batch_size = 10;
    r = zero_config_resolve(&c, 2, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 0, 0, "train_batch_size", "HINT: give two of the three");
    c = cfg_quiet();
    CHECK(zero_config_load(&c, f1, &err) == ZERO_OK);
    c.train_batch_size = 12; /* the program's value, not the file's */
    r = zero_config_resolve(&c, 2, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 0, 0, "train_batch_size", "HINT:");
    c = cfg_quiet();
    c.scheduler.type = ZERO_SCHEDULER_WARMUP_COSINE_LR;
    c.train_batch_size = 8;
    r = zero_config_resolve(&c, 1, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 0, 0, "scheduler.params.total_num_steps", "HINT:");
    /* a later parse starts afresh: the first file's places no longer hold */
    c = cfg_quiet();
    CHECK(zero_config_load(&c, f1, &err) == ZERO_OK && parse(&c, "{}", &err) == ZERO_OK);
    r = zero_config_resolve(&c, 2, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 0, 0, "train_batch_size", "HINT:");

    /* other resolve errors and warnings: placed, with a HINT */
    r = resolve_json(&c, "{\"train_batch_size\": 8,\n \"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\"}}}", 1,
                     &err);
    EXPECT_PLACED(&c, r, &err, NULL, 2, 46, "zero_optimization.offload_optimizer", "HINT: set zero_optimization.stage");
    r = resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3},\n \"gradient_allreduce_op\": \"sum\"}", 1,
                     &err);
    EXPECT_PLACED(&c, r, &err, NULL, 2, 2, "gradient_allreduce_op", "HINT: use \"mean\"");
    r = resolve_json(&c, "{\"train_batch_size\": 8, \"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_max_lr\": 1}}}", 1, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 1, 39, "scheduler.params.cycle_min_lr", "HINT: give scheduler.params.cycle_min_lr");
    r = resolve_json(&c, "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 2, \"mics_shard_size\": 3}}", 2, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 1, 59, "zero_optimization.mics_shard_size", "HINT: a divisor of 2");
    r = resolve_json(&c, "{\"train_batch_size\": 8, \"optimizer\": {\"params\": {\"lr\": \"auto\"}}}", 1, &err);
    EXPECT_PLACED(&c, r, &err, NULL, 1, 50, "optimizer.params.lr", "HINT: set cfg.optimizer.lr");
    CHECK(resolve_json(&c, "{\"train_batch_size\": 8,\n \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": "
                           "{\"total_num_steps\": 10, \"warmup_num_steps\": 100}}}",
                       1, &err) == ZERO_OK);
    CHECKF(logged_find(ZERO_MSG_CONFIG_SCHED_WARNING, "scheduler.params.total_num_steps: 10 is less than warmup_num_steps "
                                                      "100 (line 2:52)") >= 0,
           "%s", logged.n ? logged.text[logged.n - 1] : "");
    c = cfg_quiet();
    CHECK(zero_config_load(&c, write_tmp(p3, sizeof p3, "stage2_param.json", "{\"train_batch_size\": 8,\n\"zero_optimization\": "
                                                             "{\"stage\": 2, \"offload_param\": {\"device\": \"cpu\"}}}"),
                           &err) == ZERO_OK);
    CHECK(zero_config_resolve(&c, 1, &err) == ZERO_OK);
    snprintf(want, sizeof want, "%s:2:53: zero_optimization.offload_param: parameter offload needs stage 3", p3);
    CHECKF(logged_find(ZERO_MSG_CONFIG_STAGE_IGNORED, want) >= 0, "%s", logged.n ? logged.text[logged.n - 1] : "");
    remove(p1);
    remove(p2);
    remove(p3);
}

/* ---- the optimizer types: names, each one's params and defaults, ranges, the create line ---- */
static void expect_optimizer(const char *json, zero_optimizer_type t, double lr, double eps, int at) {
    zero_config c = cfg_quiet();
    zero_error err;
    zero_result r = parse(&c, json, &err);
    CHECKF(r == ZERO_OK, "line %d: %s: %s", at, json, err.msg);
    CHECKF(c.optimizer.type == t && c.optimizer.lr == lr && c.optimizer.eps == eps, "line %d: %s: type %d lr %g eps %g",
           at, json, (int)c.optimizer.type, c.optimizer.lr, c.optimizer.eps);
}
#define EXPECT_OPTIMIZER(json, t, lr, eps) expect_optimizer(json, ZERO_OPTIMIZER_##t, lr, eps, __LINE__)

/* the create line's optimizer part of the config parsed from json */
static void expect_optimizer_text(const char *json, const char *want, int at) {
    zero_config c = cfg_quiet();
    zero_error err;
    char text[200];
    CHECKF(parse(&c, json, &err) == ZERO_OK, "line %d: %s", at, err.msg);
    zero__optimizer_text(&c.optimizer, text, sizeof text);
    CHECKF(strcmp(text, want) == 0, "line %d: \"%s\", want \"%s\"", at, text, want);
}
#define EXPECT_OPTIMIZER_TEXT(json, want) expect_optimizer_text(json, want, __LINE__)

static void test_optimizers(void) {
    static const char *const ds_only[] = {"OneBitAdam", "ZeroOneAdam", "OneBitLamb", "MuAdam", "MuAdamW", "MuSGD"};
    /* every key of optimizer.params and the types that take it (DeepSpeed's and torch's signatures) */
    static const struct {
        const char *name, *value;
        int adam, lion, adagrad, sgd, lamb, muon;
    } takes[] = {{"lr", "0.5", 1, 1, 1, 1, 1, 1},          {"betas", "[0.9, 0.99]", 1, 1, 0, 0, 1, 1},
                 {"eps", "1e-6", 1, 0, 1, 0, 1, 1},        {"weight_decay", "0.1", 1, 1, 1, 1, 1, 1},
                 {"bias_correction", "false", 1, 0, 0, 0, 1, 0}, {"adam_w_mode", "false", 1, 0, 0, 0, 0, 0},
                 {"torch_adam", "true", 1, 0, 0, 0, 0, 0}, {"amsgrad", "false", 1, 0, 1, 0, 1, 0},
                 {"momentum", "0.9", 0, 0, 0, 1, 0, 1},    {"dampening", "0.1", 0, 0, 0, 1, 0, 0},
                 {"nesterov", "false", 0, 0, 0, 1, 0, 1},  {"maximize", "false", 0, 0, 0, 1, 0, 0},
                 {"foreach", "false", 0, 0, 0, 1, 0, 0},   {"fused", "null", 0, 0, 0, 1, 0, 0},
                 {"differentiable", "false", 0, 0, 0, 1, 0, 0},
                 {"eps_inside_sqrt", "true", 0, 0, 0, 0, 1, 0}, {"max_coeff", "0.3", 0, 0, 0, 0, 1, 0},
                 {"min_coeff", "0.001", 0, 0, 0, 0, 1, 0}, {"muon_lr", "0.01", 0, 0, 0, 0, 0, 1},
                 {"adam_lr", "0.001", 0, 0, 0, 0, 0, 1},  {"ns_method", "\"standard\"", 0, 0, 0, 0, 0, 1}};
    static const char *const tname[] = {"Adam", "AdamW", "Lion", "Adagrad", "SGD", "Lamb", "Muon"};
    char json[512], want[400];
    zero_config c;
    zero_error err;
    zero_result r;
    size_t i;
    int t;

    /* the names, in any case; Adagrad's own lr and eps when the file leaves them out */
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"Lion\"}}", LION, 1e-3, 1e-8);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"LION\"}}", LION, 1e-3, 1e-8);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"adagrad\"}}", ADAGRAD, 1e-2, 1e-10);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"AdaGrad\", \"params\": {\"weight_decay\": 0.1}}}", ADAGRAD, 1e-2, 1e-10);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"lr\": 0.05}}}", ADAGRAD, 0.05, 1e-10);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"params\": {\"eps\": 1e-8}, \"type\": \"Adagrad\"}}", ADAGRAD, 1e-2, 1e-8);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"lr\": 1e-3, \"eps\": 1e-7}}}", ADAGRAD, 1e-3, 1e-7);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"SGD\"}}", SGD, 1e-3, 1e-8);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"sgd\"}}", SGD, 1e-3, 1e-8);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"Sgd\"}}", SGD, 1e-3, 1e-8);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"adam\"}}", ADAM, 1e-3, 1e-8);
    EXPECT_OPTIMIZER("{\"optimizer\": {\"type\": \"ADAMW\"}}", ADAMW, 1e-3, 1e-8);
    /* "auto" stays for the program to answer, Adagrad's included */
    c = cfg_quiet();
    CHECK(parse(&c, "{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"lr\": \"auto\"}}}", &err) == ZERO_OK);
    CHECK(c.optimizer.lr == ZERO_AUTO && c.optimizer.eps == 1e-10);
    /* the SGD keys land in their fields */
    c = cfg_quiet();
    CHECKF(parse(&c, "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": 0.1, \"momentum\": 0.9, \"dampening\": 0.5, "
                     "\"nesterov\": false, \"weight_decay\": 1e-4}}}",
                 &err) == ZERO_OK,
           "%s", err.msg);
    CHECK(c.optimizer.lr == 0.1 && c.optimizer.momentum == 0.9 && c.optimizer.dampening == 0.5 &&
          c.optimizer.nesterov == 0 && c.optimizer.weight_decay == 1e-4);
    c = cfg_quiet();
    CHECK(parse(&c, "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": 0.9, \"nesterov\": true}}}", &err) == ZERO_OK);
    CHECK(c.optimizer.nesterov == 1);
    /* a program's zero_config keeps its values: no file, or a file that does not name the type */
    c = zero_config_default();
    c.optimizer.type = ZERO_OPTIMIZER_ADAGRAD;
    c.train_batch_size = 8;
    CHECK(zero_config_resolve(&c, 1, &err) == ZERO_OK && c.optimizer.lr == 1e-3 && c.optimizer.eps == 1e-8);
    c = cfg_quiet();
    c.optimizer.type = ZERO_OPTIMIZER_ADAGRAD;
    CHECK(parse(&c, "{\"train_batch_size\": 8}", &err) == ZERO_OK && c.optimizer.lr == 1e-3 && c.optimizer.eps == 1e-8);
    c = cfg_quiet();
    c.optimizer.lr = 0.3; /* set in code before the parse: not Adam's default, so kept */
    CHECK(parse(&c, "{\"optimizer\": {\"type\": \"Adagrad\"}}", &err) == ZERO_OK && c.optimizer.lr == 0.3 &&
          c.optimizer.eps == 1e-10);

    /* each key against each type: taken, or an error naming the key and the type, with what the type takes */
    for (t = 0; t < ZERO_OPTIMIZER_COUNT; t++) {
        char takes_list[256];
        zero__optimizer_params(t, takes_list, sizeof takes_list);
        for (i = 0; i < sizeof takes / sizeof takes[0]; i++) {
            int ok = t <= ZERO_OPTIMIZER_ADAMW ? takes[i].adam
                     : t == ZERO_OPTIMIZER_LION ? takes[i].lion
                     : t == ZERO_OPTIMIZER_ADAGRAD ? takes[i].adagrad
                     : t == ZERO_OPTIMIZER_LAMB ? takes[i].lamb
                     : t == ZERO_OPTIMIZER_MUON ? takes[i].muon : takes[i].sgd;
            snprintf(json, sizeof json, "{\"optimizer\": {\"type\": \"%s\", \"params\": {\"%s\": %s}}}", tname[t],
                     takes[i].name, takes[i].value);
            if (ok) {
                c = cfg_quiet();
                r = parse(&c, json, &err);
                CHECKF(r == ZERO_OK, "%s: %s", json, err.msg);
                CHECKF(strstr(takes_list, takes[i].name) != NULL, "%s lacks %s", takes_list, takes[i].name);
                continue;
            }
            snprintf(want, sizeof want, "optimizer.params.%s: not a parameter of optimizer %s", takes[i].name, tname[t]);
            c = cfg_quiet();
            r = parse(&c, json, &err);
            CHECKF(r == ZERO_ERR_CONFIG && strstr(err.msg, want) == err.msg, "%s: %s", json, err.msg);
            snprintf(want, sizeof want, "\nHINT: %s takes %s (", tname[t], takes_list);
            CHECKF(strstr(err.msg, want) != NULL, "%s: %s lacks %s", json, err.msg, want);
            snprintf(want, sizeof want, "optimizer.params.%s", takes[i].name);
            CHECKF(strcmp(err.key, want) == 0 && err.line == 1 && err.column > 30, "%s: key %s at %d:%d", json, err.key,
                   err.line, err.column);
        }
    }
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"eps\": 1e-8}}}", CONFIG_UNKNOWN_KEY,
                 "optimizer.params.eps", 1, 43, "HINT: Lion takes lr, betas, weight_decay (");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"betas\": [0.9, 0.99]}}}", CONFIG_UNKNOWN_KEY,
                 "optimizer.params.betas", 0, 0, "HINT: Adagrad takes lr, eps, weight_decay, amsgrad (");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"betas\": [0.9, 0.99]}}}", CONFIG_UNKNOWN_KEY,
                 "optimizer.params.betas", 0, 0, "not a parameter of optimizer SGD");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"momentum\": 0.9}}}", CONFIG_UNKNOWN_KEY,
                 "optimizer.params.momentum", 0, 0, "not a parameter of optimizer AdamW\nHINT: AdamW takes lr, betas, eps");
    /* the params stand before the type: the type still decides */
    EXPECT_ERROR("{\"optimizer\": {\"params\": {\"momentum\": 0.9}, \"type\": \"Lion\"}}", CONFIG_UNKNOWN_KEY,
                 "optimizer.params.momentum", 1, 27, "optimizer Lion");
    /* a typo is suggested among the type's own keys only; another type's key is not suggested for itself */
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentm\": 0.9}}}", CONFIG_UNKNOWN_KEY,
                 "optimizer.params.momentm", 0, 0, "(did you mean \"momentum\"?)");
    c = cfg_quiet();
    CHECK(parse(&c, "{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"nesterov\": true}}}", &err) == ZERO_ERR_CONFIG);
    CHECKF(strstr(err.msg, "did you mean") == NULL, "%s", err.msg);
    c = cfg_quiet();
    CHECK(parse(&c, "{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"cycle_min_lr\": 1}}}", &err) == ZERO_ERR_CONFIG);
    CHECKF(strstr(err.msg, "not a parameter of scheduler WarmupLR") && !strstr(err.msg, "did you mean"), "%s", err.msg);
    /* amsgrad and maximize true: not supported; foreach, fused, differentiable true: no effect, said */
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"amsgrad\": true}}}", CONFIG_UNSUPPORTED,
                 "optimizer.params.amsgrad", 0, 0, "is not supported");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"maximize\": true}}}", CONFIG_UNSUPPORTED,
                 "optimizer.params.maximize", 1, 54, "true is not supported");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"maximize\": 2}}}", CONFIG_TYPE,
                 "optimizer.params.maximize", 0, 0, "expected true or false");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": \"auto\"}}}", CONFIG_AUTO_NOT_ALLOWED,
                 "optimizer.params.momentum", 0, 0, NULL);
    EXPECT_LOG("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"foreach\": true}}}", CONFIG_NO_EFFECT,
               "optimizer.params.foreach: has no effect");
    EXPECT_LOG("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"fused\": true}}}", CONFIG_NO_EFFECT, "optimizer.params.fused");
    EXPECT_LOG("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"differentiable\": true}}}", CONFIG_NO_EFFECT,
               "optimizer.params.differentiable");
    c = cfg_quiet();
    CHECK(parse(&c, "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"foreach\": false, \"fused\": null, \"maximize\": false}}}",
                &err) == ZERO_OK);
    CHECK(logged_find(ZERO_MSG_CONFIG_NO_EFFECT, NULL) < 0);

    /* DeepSpeed's optimizers that zero does not run yet, and other names: zero's list in the error */
    for (i = 0; i < sizeof ds_only / sizeof ds_only[0]; i++) {
        snprintf(json, sizeof json, "{\"optimizer\": {\"type\": \"%s\"}}", ds_only[i]);
        c = cfg_quiet();
        r = parse(&c, json, &err);
        CHECKF(r == ZERO_ERR_CONFIG && err.item == ZERO_MSG_CONFIG_UNSUPPORTED && !strcmp(err.key, "optimizer.type") &&
                   strstr(err.msg, "is not supported yet") &&
                   strstr(err.msg, "\"Adam\", \"AdamW\", \"Lion\", \"Adagrad\", \"SGD\", \"Lamb\" or \"Muon\""),
               "%s: %s", json, err.msg);
    }
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"RMSprop\"}}", CONFIG_ENUM, "optimizer.type", 1, 24,
                 "expected \"Adam\", \"AdamW\", \"Lion\", \"Adagrad\", \"SGD\", \"Lamb\" or \"Muon\" (case-insensitive), got \"RMSprop\"");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Lamb2\"}}", CONFIG_ENUM, "optimizer.type", 0, 0, "torch.optim");

    /* ranges: at parse, and in resolve for values set in code */
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": -0.1}}}", CONFIG_RANGE, "optimizer.params.lr", 0, 0,
                 "must be >= 0, got -0.1");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": -0.5}}}", CONFIG_RANGE,
                 "optimizer.params.momentum", 1, 54, "must be >= 0, got -0.5");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"weight_decay\": -1}}}", CONFIG_RANGE,
                 "optimizer.params.weight_decay", 0, 0, "must be >= 0");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"betas\": [0.9, 1]}}}", CONFIG_RANGE,
                 "optimizer.params.betas[1]", 0, 0, "[0, 1)");
    EXPECT_ERROR("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"betas\": [-0.1, 0.9]}}}", CONFIG_RANGE,
                 "optimizer.params.betas[0]", 0, 0, "[0, 1)");
    c = cfg_quiet();
    c.train_batch_size = 8;
    c.optimizer.type = ZERO_OPTIMIZER_SGD;
    c.optimizer.momentum = -0.5;
    CHECK(zero_config_resolve(&c, 1, &err) == ZERO_ERR_CONFIG && err.item == ZERO_MSG_CONFIG_RANGE &&
          !strcmp(err.key, "optimizer.params.momentum") && strstr(err.msg, "cfg.optimizer.momentum = -0.5"));
    c.optimizer.momentum = 0;
    c.optimizer.lr = -1;
    CHECK(zero_config_resolve(&c, 1, &err) == ZERO_ERR_CONFIG && !strcmp(err.key, "optimizer.params.lr"));
    c.optimizer.lr = 1e-3;
    c.optimizer.type = (zero_optimizer_type)ZERO_OPTIMIZER_COUNT;
    CHECK(zero_config_resolve(&c, 1, &err) == ZERO_ERR_CONFIG && !strcmp(err.key, "optimizer.type"));
    c.optimizer.type = ZERO_OPTIMIZER_SGD;
    CHECKF(zero_config_resolve(&c, 1, &err) == ZERO_OK, "%s", err.msg);

    /* nesterov: momentum > 0 and dampening 0 (torch's ValueError), placed at the key */
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"SGD\", \"params\": {\"nesterov\": true}}}", 1,
                         CONFIG_INCONSISTENT, "optimizer.params.nesterov", "needs momentum > 0 and dampening 0");
    EXPECT_RESOLVE_ERROR("{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"SGD\", \"params\": {\"nesterov\": true, "
                         "\"momentum\": 0.9, \"dampening\": 0.1}}}",
                         1, CONFIG_INCONSISTENT, "optimizer.params.nesterov", "dampening 0.1");
    r = resolve_json(&c, "{\"train_batch_size\": 8,\n \"optimizer\": {\"type\": \"SGD\", \"params\": {\"nesterov\": true}}}", 1,
                     &err);
    EXPECT_PLACED(&c, r, &err, NULL, 2, 42, "optimizer.params.nesterov", "HINT: set optimizer.params.momentum");
    {
        char path[128], path2[128];
        const char *f = write_tmp(path, sizeof path, "nesterov.json",
                                  "{\"train_batch_size\": 8,\n \"optimizer\": {\"type\": \"SGD\", \"params\": {\"nesterov\": true}}}");
        c = cfg_quiet();
        CHECK(zero_config_load(&c, f, &err) == ZERO_OK);
        r = zero_config_resolve(&c, 1, &err);
        EXPECT_PLACED(&c, r, &err, f, 2, 42, "optimizer.params.nesterov", "HINT: set optimizer.params.momentum");
        snprintf(want, sizeof want, "%s:2:42: optimizer.params.nesterov: SGD's nesterov needs", f);
        CHECKF(strstr(err.msg, want) == err.msg, "%s", err.msg);
        /* a wrong-type key from a file: FILE:line:col first */
        remove(path);
        f = write_tmp(path2, sizeof path2, "lion_eps.json", "{\"optimizer\": {\"type\": \"Lion\",\n  \"params\": {\"eps\": 1e-8}}}");
        c = cfg_quiet();
        CHECK(zero_config_load(&c, f, &err) == ZERO_ERR_CONFIG);
        snprintf(want, sizeof want, "%s:2:14: optimizer.params.eps: not a parameter of optimizer Lion", f);
        CHECKF(strstr(err.msg, want) == err.msg, "%s", err.msg);
        remove(path2);
    }
    CHECKF(resolve_json(&c, "{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"SGD\", \"params\": {\"nesterov\": true, "
                            "\"momentum\": 0.9}}}", 1, &err) == ZERO_OK, "%s", err.msg);
    /* nesterov matters to SGD only (set in code for another type: not checked) */
    c = cfg_quiet();
    c.train_batch_size = 8;
    c.optimizer.nesterov = 1;
    CHECK(zero_config_resolve(&c, 1, &err) == ZERO_OK);

    /* the create line: the type and its own params; Adam's as before */
    EXPECT_OPTIMIZER_TEXT("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"lr\": 1e-4, \"betas\": [0.9, 0.99], \"weight_decay\": 0.1}}}",
                          "Lion lr 0.0001 betas (0.9, 0.99) weight_decay 0.1");
    EXPECT_OPTIMIZER_TEXT("{\"optimizer\": {\"type\": \"Adagrad\"}}", "Adagrad lr 0.01 eps 1e-10 weight_decay 0");
    EXPECT_OPTIMIZER_TEXT("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": 0.01, \"momentum\": 0.9, \"nesterov\": true}}}",
                          "SGD lr 0.01 momentum 0.9 nesterov weight_decay 0");
    EXPECT_OPTIMIZER_TEXT("{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": 0.5, \"dampening\": 0.5, \"weight_decay\": 1e-4}}}",
                          "SGD lr 0.001 momentum 0.5 dampening 0.5 weight_decay 0.0001");
    EXPECT_OPTIMIZER_TEXT("{\"optimizer\": {\"type\": \"Lamb\", \"params\": {\"max_coeff\": 0.3, \"eps_inside_sqrt\": true}}}",
                          "Lamb lr 0.001 betas (0.9, 0.999) eps 1e-08 in sqrt weight_decay 0 coeff [0.01, 0.3]");
    EXPECT_OPTIMIZER_TEXT("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 3e-4}}}",
                          "AdamW lr 0.0003 betas (0.9, 0.999) eps 1e-08 weight_decay 0");
    EXPECT_OPTIMIZER_TEXT("{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"adam_w_mode\": false, \"weight_decay\": 0.01}}}",
                          "Adam lr 0.001 betas (0.9, 0.999) eps 1e-08 weight_decay 0.01");

    /* to JSON and back: each type's own params only */
    for (t = 0; t < ZERO_OPTIMIZER_COUNT; t++) {
        static char buf[1 << 16];
        zero_config a = cfg_quiet(), b = cfg_quiet();
        a.optimizer.type = (zero_optimizer_type)t;
        a.optimizer.momentum = 0.9;
        a.optimizer.nesterov = 1;
        a.optimizer.lr = 0.25;
        zero_config_to_json(&a, buf, sizeof buf);
        CHECKF(parse(&b, buf, &err) == ZERO_OK && b.optimizer.type == a.optimizer.type && b.optimizer.lr == 0.25,
               "%s: %s", tname[t], err.msg);
        CHECKF((strstr(buf, "\"momentum\"") != NULL) == (t == ZERO_OPTIMIZER_SGD || t == ZERO_OPTIMIZER_MUON), "%s", tname[t]);
        CHECKF((strstr(buf, "\"betas\"") != NULL) ==
                   (t <= ZERO_OPTIMIZER_LION || t == ZERO_OPTIMIZER_LAMB || t == ZERO_OPTIMIZER_MUON),
               "%s", tname[t]);
        CHECKF((strstr(buf, "\"eps\"") != NULL) == (t <= ZERO_OPTIMIZER_ADAMW || t == ZERO_OPTIMIZER_ADAGRAD ||
                                                   t == ZERO_OPTIMIZER_LAMB || t == ZERO_OPTIMIZER_MUON),
               "%s", tname[t]);
        CHECKF((strstr(buf, "\"muon_lr\"") != NULL) == (t == ZERO_OPTIMIZER_MUON), "%s", tname[t]);
        CHECKF((strstr(buf, "\"max_coeff\"") != NULL) == (t == ZERO_OPTIMIZER_LAMB), "%s", tname[t]);
        snprintf(want, sizeof want, "\"type\":\"%s\"", tname[t]);
        CHECKF(strstr(buf, want) != NULL, "%s", want);
    }
}

/* ---- logging defaults ---- */
static void test_logging(void) {
    zero_config c = zero_config_default();
    zero_error err;
    CHECK(c.log.fn == NULL && c.log.level == ZERO_LOG_INFO && c.log.rank == -1);
    /* the default sink must not crash and respects the level */
    c.log.level = ZERO_LOG_ERROR;
    CHECK(parse(&c, "{\"unknown_top\": 1}", &err) == ZERO_OK);
    c = cfg_quiet();
    c.log.level = ZERO_LOG_ERROR;
    CHECK(parse(&c, "{\"unknown_top\": 1}", &err) == ZERO_OK && logged.n == 0);
    zero_log_default(NULL, ZERO_LOG_INFO, ZERO_MSG_NONE, 1, "rank 1 info: dropped");
}

int main(void) {
    zt_seed("test_config");
    test_defaults_match_table();
    test_reference_configs();
    test_messages();
    test_coercions();
    test_batch_triangle();
    test_round_trip();
    test_hjson();
    test_places();
    test_optimizers();
    test_logging();
    return zt_finish();
}
