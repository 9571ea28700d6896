/* parts/config.h: part of zero.h's implementation (inlined before landing) */

/* ---- config: defaults ---- */

static void zero__offload_default(zero_offload_config *o, int64_t buffer_count) {
    memset(o, 0, sizeof *o);
    o->device = ZERO_OFFLOAD_NONE;
    o->buffer_count = buffer_count;
    o->buffer_size = 100000000;
    o->max_in_cpu = 1000000000;
    o->pin_memory = 1;
    o->ratio = 1.0;
    o->cpuadam_cores_perc = 0.8;
}

ZERO__DEF zero_config zero_config_default(void) {
    zero_config c;
    memset(&c, 0, sizeof c);
    c.train_batch_size = ZERO_UNSET;
    c.train_micro_batch_size_per_gpu = ZERO_UNSET;
    c.gradient_accumulation_steps = ZERO_UNSET;
    c.steps_per_print = 0;
    c.gradient_clipping = 1.0;
    c.gradient_predivide_factor = 1.0;
    c.communication_data_type = ZERO_DTYPE_DEFAULT;
    c.gradient_allreduce_op = ZERO_REDUCE_MEAN;
    c.managed_gradient_accumulation = 1;
    c.zero_force_ds_cpu_optimizer = 1;
    c.grad_accum_dtype = ZERO_DTYPE_DEFAULT;
    c.tag_validation = ZERO_TAG_VALIDATION_WARN;

    c.aio.block_size = 1048576;
    c.aio.queue_depth = 8;
    c.aio.intra_op_parallelism = 1;
    c.aio.overlap_events = 1;

    c.fp16.loss_scale = 0;
    c.fp16.initial_scale_power = 16;
    c.fp16.loss_scale_window = 1000;
    c.fp16.hysteresis = 2;
    c.fp16.min_loss_scale = 1;

    c.bf16.check_grad_overflow = 1;

    c.optimizer.type = ZERO_OPTIMIZER_ADAM;
    c.optimizer.lr = 1e-3;
    c.optimizer.beta1 = 0.9;
    c.optimizer.beta2 = 0.999;
    c.optimizer.eps = 1e-8;
    c.optimizer.weight_decay = 0;
    c.optimizer.bias_correction = 1;
    c.optimizer.adam_w_mode = 1;

    c.scheduler.type = ZERO_SCHEDULER_NONE;
    c.scheduler.last_batch_iteration = -1;
    c.scheduler.warmup_min_lr = 0;
    c.scheduler.warmup_max_lr = ZERO_UNSET;
    c.scheduler.warmup_num_steps = 1000;
    c.scheduler.warmup_type = ZERO_WARMUP_LOG;
    c.scheduler.total_num_steps = ZERO_UNSET;
    c.scheduler.warmup_min_ratio = 0;
    c.scheduler.cos_min_ratio = 1e-4;
    c.scheduler.cycle_min_lr = ZERO_UNSET;
    c.scheduler.cycle_max_lr = ZERO_UNSET;
    c.scheduler.decay_lr_rate = 0;
    c.scheduler.cycle_first_step_size = 2000;
    c.scheduler.cycle_second_step_size = ZERO_UNSET;
    c.scheduler.cycle_first_stair_count = 0;
    c.scheduler.cycle_second_stair_count = ZERO_UNSET;
    c.scheduler.decay_step_size = 0;
    c.scheduler.cycle_momentum = 1;
    c.scheduler.cycle_min_mom = 0.8;
    c.scheduler.cycle_max_mom = 0.9;
    c.scheduler.decay_mom_rate = 0;
    c.scheduler.lr_range_test_min_lr = 1e-3;
    c.scheduler.lr_range_test_step_size = 2000;
    c.scheduler.lr_range_test_step_rate = 1.0;
    c.scheduler.lr_range_test_staircase = 0;

    c.zero_optimization.stage = 0;
    c.zero_optimization.contiguous_gradients = 1;
    c.zero_optimization.reduce_scatter = 1;
    c.zero_optimization.reduce_bucket_size = 500000000;
    c.zero_optimization.use_multi_rank_bucket_allreduce = 1;
    c.zero_optimization.allgather_partitions = 1;
    c.zero_optimization.allgather_bucket_size = 500000000;
    c.zero_optimization.overlap_comm = ZERO_UNSET;
    c.zero_optimization.load_from_fp32_weights = 1;
    zero__offload_default(&c.zero_optimization.offload_param, 5);
    zero__offload_default(&c.zero_optimization.offload_optimizer, 4);
    c.zero_optimization.sub_group_size = 1000000000;
    c.zero_optimization.stage3_prefetch_bucket_size = 50000000;
    c.zero_optimization.stage3_param_persistence_threshold = 100000;
    c.zero_optimization.stage3_model_persistence_threshold = INT64_MAX;
    c.zero_optimization.stage3_max_live_parameters = 1000000000;
    c.zero_optimization.stage3_max_reuse_distance = 1000000000;
    c.zero_optimization.ignore_unused_parameters = 1;
    c.zero_optimization.zero_hpz_partition_size = 1;
    c.zero_optimization.mics_shard_size = -1;
    c.zero_optimization.memory_efficient_linear = 1;
    c.zero_optimization.override_module_apply = 1;

    c.log.fn = NULL;
    c.log.user = NULL;
    c.log.level = ZERO_LOG_INFO;
    c.log.rank = -1;
    return c;
}

/* ---- config: the key table ----
   One row per DeepSpeed key zero knows. The parser, the strictness rules,
   "auto", zero_config_to_json, and docs/config.md (tests/test_config.c checks
   it is current) all read this one table. */

typedef enum zero__kind {
    ZERO__K_SECTION, /* a JSON object of more keys */
    ZERO__K_BOOL,    /* int field, 0/1 */
    ZERO__K_INT,     /* int field */
    ZERO__K_I64,     /* int64_t field */
    ZERO__K_F64,     /* double field */
    ZERO__K_ENUM,    /* int-sized enum field; choices "a|b|c" in enum order */
    ZERO__K_STRING,  /* char[ZERO_PATH_MAX] field */
    ZERO__K_BETAS,   /* [beta1, beta2] into two doubles */
    ZERO__K_ANY,     /* any JSON value, kept nowhere (monitors, PyTorch-only knobs) */
    ZERO__K_COUNT
} zero__kind;

typedef enum zero__auto {
    ZERO__AUTO_NO,      /* "auto" is an error: DeepSpeed and HF never accept it here */
    ZERO__AUTO_SUPPLY,  /* the program sets the field (HF takes it from TrainingArguments) */
    ZERO__AUTO_DERIVE,  /* zero_config_resolve derives it */
    ZERO__AUTO_DEFAULT  /* DeepSpeed's pydantic sections drop "auto": the default applies */
} zero__auto;

enum {
    ZERO__F_STRICT = 1,     /* SECTION: unknown keys inside are errors (else warnings) */
    ZERO__F_NULLABLE = 2,   /* null resets to the default (DeepSpeed's default is None) */
    ZERO__F_PER_GROUP = 4,  /* a number or a list of one (DeepSpeed: one per param group) */
    ZERO__F_NOCASE = 8,     /* ENUM: case-insensitive */
    ZERO__F_ENABLED = 16,   /* ANY: an object whose "enabled": true is rejected */
    ZERO__F_NULL_ONLY = 32  /* ANY + REJECTED: only null / absent is accepted */
};

/* scheduler.params: which schedulers take the key */
#define ZERO__S_WARM (1u << ZERO_SCHEDULER_WARMUP_LR)
#define ZERO__S_DECAY (1u << ZERO_SCHEDULER_WARMUP_DECAY_LR)
#define ZERO__S_COS (1u << ZERO_SCHEDULER_WARMUP_COSINE_LR)
#define ZERO__S_CYCLE (1u << ZERO_SCHEDULER_ONE_CYCLE)
#define ZERO__S_RANGE (1u << ZERO_SCHEDULER_LR_RANGE_TEST)
#define ZERO__S_ALL (ZERO__S_WARM | ZERO__S_DECAY | ZERO__S_COS | ZERO__S_CYCLE | ZERO__S_RANGE)

typedef struct zero__key {
    zero_key_info info;
    zero__kind kind;
    size_t offset;       /* of the field in zero_config (SECTION, ANY: 0) */
    double lo, hi;       /* accepted range of numbers, inclusive */
    const char *choices; /* ENUM: "cpu:1|nvme:2|none:0": name:value, in the order errors list them */
    zero__auto auto_rule;
    unsigned flags;
    unsigned sched_mask; /* scheduler.params: ZERO__S_* */
    const char *alias;   /* another name for the last path component, or NULL */
    const char *field;   /* the C field, for hints: "cfg.optimizer.lr" */
} zero__key;

#define ZERO__OFF(f) offsetof(zero_config, f)
#define ZERO__BIG 9.2e18 /* just under INT64_MAX, exact in double */

#define ZERO__IMPL ZERO_KEY_IMPLEMENTED
#define ZERO__NYET ZERO_KEY_NOT_YET
#define ZERO__NOEF ZERO_KEY_NO_EFFECT
#define ZERO__REJ ZERO_KEY_REJECTED
#define ZERO__DEPR ZERO_KEY_DEPRECATED

static const char zero__engine_note[] = "the engine (issue 3) acts on it";
static const char zero__offload_note[] = "offload (issues 5, 6) acts on it";

static const zero__key zero__keys[] = {
    /* ---- top level ---- */
    {{"train_batch_size", "int", "None", ZERO__IMPL,
      "global batch size TBS = MBS x GAS x world", "\"auto\": derived by zero_config_resolve (batch triangle)"},
     ZERO__K_I64, ZERO__OFF(train_batch_size), 1, ZERO__BIG, NULL, ZERO__AUTO_DERIVE, ZERO__F_NULLABLE, 0, NULL, "cfg.train_batch_size"},
    {{"train_micro_batch_size_per_gpu", "int", "None", ZERO__IMPL,
      "micro-batch per GPU and step (MBS)", "\"auto\": derived by zero_config_resolve (batch triangle)"},
     ZERO__K_I64, ZERO__OFF(train_micro_batch_size_per_gpu), 1, ZERO__BIG, NULL, ZERO__AUTO_DERIVE, ZERO__F_NULLABLE, 0, NULL, "cfg.train_micro_batch_size_per_gpu"},
    {{"gradient_accumulation_steps", "int", "None", ZERO__IMPL,
      "micro-batches per optimizer step (GAS)", "\"auto\": derived by zero_config_resolve (batch triangle)"},
     ZERO__K_I64, ZERO__OFF(gradient_accumulation_steps), 1, ZERO__BIG, NULL, ZERO__AUTO_DERIVE, ZERO__F_NULLABLE, 0, NULL, "cfg.gradient_accumulation_steps"},
    {{"steps_per_print", "int", "None", ZERO__NYET,
      "progress line every N optimizer steps; None: never (code default since v0.15.2; docs say 10)", zero__engine_note},
     ZERO__K_I64, ZERO__OFF(steps_per_print), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, ZERO__F_NULLABLE, 0, NULL, "cfg.steps_per_print"},
    {{"wall_clock_breakdown", "bool", "false", ZERO__NYET, "time each phase of the step", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(wall_clock_breakdown), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.wall_clock_breakdown"},
    {{"gradient_clipping", "float", "1.0", ZERO__NYET,
      "clip the global L2 norm of the gradients to this; 0 disables (NEW default 1.0, OLD 0)",
      "\"auto\": set cfg.gradient_clipping (HF: max_grad_norm)"},
     ZERO__K_F64, ZERO__OFF(gradient_clipping), 0, 1e300, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.gradient_clipping"},
    {{"prescale_gradients", "bool", "false", ZERO__NYET, "divide gradients by the world size before the reduction", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(prescale_gradients), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.prescale_gradients"},
    {{"gradient_predivide_factor", "float", "1.0", ZERO__NYET,
      "divide by f before the sum-reduction and by world/f after", zero__engine_note},
     ZERO__K_F64, ZERO__OFF(gradient_predivide_factor), 1e-300, 1e300, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.gradient_predivide_factor"},
    {{"communication_data_type", "string", "None", ZERO__NYET,
      "dtype of gradient reductions: \"fp32\", \"fp16\", \"bf16\"; None follows fp16/bf16", zero__engine_note},
     ZERO__K_ENUM, ZERO__OFF(communication_data_type), 0, 0, "fp32:1|fp16:2|bf16:3", ZERO__AUTO_NO, ZERO__F_NULLABLE, 0, NULL, "cfg.communication_data_type"},
    {{"gradient_allreduce_op", "string", "\"mean\"", ZERO__NYET,
      "\"mean\" averages gradients over ranks, \"sum\" does not (not with stage 3)", zero__engine_note},
     ZERO__K_ENUM, ZERO__OFF(gradient_allreduce_op), 0, 0, "mean:0|sum:1", ZERO__AUTO_NO, 0, 0, NULL, "cfg.gradient_allreduce_op"},
    {{"managed_gradient_accumulation", "bool", "true", ZERO__NYET,
      "false: every step() is a boundary", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(managed_gradient_accumulation), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.managed_gradient_accumulation"},
    {{"zero_allow_untested_optimizer", "bool", "false", ZERO__NOEF,
      "allow a client optimizer with ZeRO", "zero runs its own Adam/AdamW only"},
     ZERO__K_BOOL, ZERO__OFF(zero_allow_untested_optimizer), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.zero_allow_untested_optimizer"},
    {{"zero_force_ds_cpu_optimizer", "bool", "true", ZERO__NOEF,
      "with CPU offload, require DeepSpeed's CPU optimizer", "zero's CPU Adam is always used with offload"},
     ZERO__K_BOOL, ZERO__OFF(zero_force_ds_cpu_optimizer), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.zero_force_ds_cpu_optimizer"},
    {{"sparse_gradients", "bool", "false", ZERO__REJ, "sparse embedding gradients", "dense gradients only"},
     ZERO__K_BOOL, ZERO__OFF(sparse_gradients), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.sparse_gradients"},
    {{"dump_state", "bool", "false", ZERO__NOEF, "print the engine state after init", ""},
     ZERO__K_BOOL, ZERO__OFF(dump_state), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.dump_state"},
    {{"disable_allgather", "bool", "false", ZERO__NOEF, "legacy switch of the fp16 optimizer", ""},
     ZERO__K_BOOL, ZERO__OFF(disable_allgather), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.disable_allgather"},
    {{"memory_breakdown", "bool", "false", ZERO__NYET, "log memory use at each phase", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(memory_breakdown), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.memory_breakdown"},
    {{"data_types", "object", "{}", ZERO__IMPL, "dtype choices", ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"data_types.grad_accum_dtype", "string", "None", ZERO__NYET,
      "dtype of gradient accumulation: \"fp32\", \"fp16\", \"bf16\"; None = the model's dtype (NEW)", zero__engine_note},
     ZERO__K_ENUM, ZERO__OFF(grad_accum_dtype), 0, 0, "fp32:1|fp16:2|bf16:3", ZERO__AUTO_NO, ZERO__F_NULLABLE, 0, NULL, "cfg.grad_accum_dtype"},
    {{"checkpoint", "object", "{}", ZERO__IMPL, "checkpoint options", ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"checkpoint.tag_validation", "string", "\"WARN\"", ZERO__NYET,
      "check that all ranks save with the same tag: WARN, IGNORE or FAIL", "checkpoints arrive with issue 7"},
     ZERO__K_ENUM, ZERO__OFF(tag_validation), 0, 0, "WARN:0|IGNORE:1|FAIL:2", ZERO__AUTO_NO, ZERO__F_NOCASE, 0, NULL, "cfg.tag_validation"},
    {{"checkpoint.load_universal", "bool", "false", ZERO__NOEF,
      "load a universal (world-size independent) checkpoint", "zero's checkpoints are always world-size independent"},
     ZERO__K_BOOL, ZERO__OFF(load_universal), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.load_universal"},
    {{"checkpoint.use_node_local_storage", "bool", "false", ZERO__NYET, "save per node", "checkpoints arrive with issue 7"},
     ZERO__K_BOOL, ZERO__OFF(use_node_local_storage), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.use_node_local_storage"},
    {{"aio", "object", "{}", ZERO__IMPL, "libaio settings of ZeRO-Infinity's NVMe swapping", ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"aio.block_size", "int", "1048576", ZERO__NOEF, "bytes per I/O request", "zero swaps whole unit tiles with POSIX I/O"},
     ZERO__K_I64, ZERO__OFF(aio.block_size), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.block_size"},
    {{"aio.queue_depth", "int", "8", ZERO__NOEF, "requests in flight", "zero uses POSIX I/O"},
     ZERO__K_I64, ZERO__OFF(aio.queue_depth), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.queue_depth"},
    {{"aio.intra_op_parallelism", "int", "1", ZERO__NOEF, "I/O threads per request (docs call it thread_count)", "zero uses POSIX I/O"},
     ZERO__K_I64, ZERO__OFF(aio.intra_op_parallelism), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.intra_op_parallelism"},
    {{"aio.single_submit", "bool", "false", ZERO__NOEF, "submit requests one by one", "zero uses POSIX I/O"},
     ZERO__K_BOOL, ZERO__OFF(aio.single_submit), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.single_submit"},
    {{"aio.overlap_events", "bool", "true", ZERO__NOEF, "overlap submission and completion", "zero uses POSIX I/O"},
     ZERO__K_BOOL, ZERO__OFF(aio.overlap_events), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.overlap_events"},
    {{"aio.use_gds", "bool", "false", ZERO__REJ, "GPUDirect Storage", "not supported"},
     ZERO__K_BOOL, ZERO__OFF(aio.use_gds), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.use_gds"},

    /* ---- fp16 (strict in NEW: pydantic extra="forbid") ---- */
    {{"fp16", "object", "{}", ZERO__IMPL, "fp16 mixed precision with loss scaling", "unknown keys are errors"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, NULL, ""},
    {{"fp16.enabled", "bool", "false", ZERO__NYET, "train in fp16 with fp32 master weights",
      "the loss scaler honours it; mixed-precision training arrives with the engine. \"auto\": set cfg.fp16.enabled (HF: --fp16)"},
     ZERO__K_BOOL, ZERO__OFF(fp16.enabled), 0, 1, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.fp16.enabled"},
    {{"fp16.auto_cast", "bool", "false", ZERO__NOEF, "cast floating inputs to half before forward",
      "the program owns its inputs"},
     ZERO__K_BOOL, ZERO__OFF(fp16.auto_cast), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.auto_cast"},
    {{"fp16.loss_scale", "float", "0", ZERO__IMPL, "0: dynamic loss scaling; > 0: this static scale", ""},
     ZERO__K_F64, ZERO__OFF(fp16.loss_scale), 0, 1e300, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.loss_scale"},
    {{"fp16.initial_scale_power", "int", "16", ZERO__IMPL, "initial dynamic scale 2^power", ""},
     ZERO__K_INT, ZERO__OFF(fp16.initial_scale_power), 0, 1023, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.initial_scale_power"},
    {{"fp16.loss_scale_window", "int", "1000", ZERO__IMPL, "clean steps before the scale doubles (> 0 when dynamic)", ""},
     ZERO__K_I64, ZERO__OFF(fp16.loss_scale_window), -ZERO__BIG, ZERO__BIG, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.loss_scale_window"},
    {{"fp16.hysteresis", "int", "2", ZERO__IMPL, "overflows tolerated before the scale halves (ZeRO only)", "must be >= 1"},
     ZERO__K_INT, ZERO__OFF(fp16.hysteresis), 1, INT_MAX, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.hysteresis"},
    {{"fp16.consecutive_hysteresis", "bool", "false", ZERO__IMPL, "refill the hysteresis on every clean step", ""},
     ZERO__K_BOOL, ZERO__OFF(fp16.consecutive_hysteresis), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.consecutive_hysteresis"},
    {{"fp16.min_loss_scale", "float", "1", ZERO__IMPL, "lower bound of the dynamic scale (> 0 when dynamic)", ""},
     ZERO__K_F64, ZERO__OFF(fp16.min_loss_scale), -1e300, 1e300, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.min_loss_scale"},
    {{"fp16.fp16_master_weights_and_grads", "bool", "false", ZERO__NYET, "keep master weights in fp16 (ZeRO + CPU Adam)", zero__offload_note},
     ZERO__K_BOOL, ZERO__OFF(fp16.fp16_master_weights_and_grads), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.fp16.fp16_master_weights_and_grads"},

    /* ---- bf16 (strict in NEW) ---- */
    {{"bf16", "object", "{}", ZERO__IMPL, "bf16 mixed precision (no loss scaling)", "alias \"bfloat16\"; unknown keys are errors"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, "bfloat16", ""},
    {{"bf16.enabled", "bool", "false", ZERO__NYET, "train in bf16 with fp32 master weights",
      "the loss scaler honours it (scale 1); mixed-precision training arrives with the engine. \"auto\": set cfg.bf16.enabled (HF: --bf16)"},
     ZERO__K_BOOL, ZERO__OFF(bf16.enabled), 0, 1, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.bf16.enabled"},
    {{"bf16.immediate_grad_update", "bool", "false", ZERO__NYET, "apply gradients as they arrive", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(bf16.immediate_grad_update), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.immediate_grad_update"},
    {{"bf16.check_grad_overflow", "bool", "true", ZERO__NYET, "skip bf16 steps whose gradients hold inf/NaN (NEW >= v0.17.1)", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(bf16.check_grad_overflow), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.check_grad_overflow"},
    {{"bf16.bf16_master_weights_and_grads", "bool", "false", ZERO__NYET, "keep master weights in bf16", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(bf16.bf16_master_weights_and_grads), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.bf16_master_weights_and_grads"},
    {{"bf16.bf16_optimizer_states", "bool", "false", ZERO__NYET, "keep Adam moments in bf16", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(bf16.bf16_optimizer_states), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.bf16_optimizer_states"},

    /* ---- optimizer ---- */
    {{"optimizer", "object", "None", ZERO__IMPL, "the optimizer: {\"type\": ..., \"params\": {...}}", "zero always runs Adam/AdamW; absent: Adam with the defaults below"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"optimizer.type", "string", "-", ZERO__NYET,
      "\"Adam\" or \"AdamW\" (case-insensitive); \"Adam\" decouples weight decay unless adam_w_mode is false",
      "other DeepSpeed optimizers (Lamb, OneBitAdam, Lion, ...) are rejected"},
     ZERO__K_ENUM, ZERO__OFF(optimizer.type), 0, 0, "Adam:0|AdamW:1", ZERO__AUTO_NO, ZERO__F_NOCASE, 0, NULL, "cfg.optimizer.type"},
    {{"optimizer.params", "object", "{}", ZERO__IMPL, "keyword arguments of the optimizer", "unknown keys are errors (DeepSpeed: TypeError)"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, NULL, ""},
    {{"optimizer.params.lr", "float", "1e-3", ZERO__NYET, "learning rate (the base of every schedule)",
      "\"auto\": set cfg.optimizer.lr (HF: learning_rate). zero_lr_at uses it now; Adam arrives with the engine"},
     ZERO__K_F64, ZERO__OFF(optimizer.lr), 0, 1e300, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.optimizer.lr"},
    {{"optimizer.params.betas", "[float, float]", "[0.9, 0.999]", ZERO__NYET, "Adam's beta1, beta2, each in [0, 1)",
      "\"auto\": set cfg.optimizer.beta1 and beta2 (HF: adam_beta1, adam_beta2)"},
     ZERO__K_BETAS, ZERO__OFF(optimizer.beta1), 0, 0.9999999999999999, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.optimizer.beta1, cfg.optimizer.beta2"},
    {{"optimizer.params.eps", "float", "1e-8", ZERO__NYET, "Adam's epsilon", "\"auto\": set cfg.optimizer.eps (HF: adam_epsilon)"},
     ZERO__K_F64, ZERO__OFF(optimizer.eps), 0, 1e300, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.optimizer.eps"},
    {{"optimizer.params.weight_decay", "float", "0", ZERO__NYET, "weight decay (decoupled in AdamW mode)",
      "\"auto\": set cfg.optimizer.weight_decay (HF: weight_decay)"},
     ZERO__K_F64, ZERO__OFF(optimizer.weight_decay), 0, 1e300, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.optimizer.weight_decay"},
    {{"optimizer.params.bias_correction", "bool", "true", ZERO__NYET, "Adam's bias correction", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(optimizer.bias_correction), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.optimizer.bias_correction"},
    {{"optimizer.params.adam_w_mode", "bool", "true", ZERO__NYET, "decoupled weight decay (AdamW) even for \"Adam\"", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(optimizer.adam_w_mode), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.optimizer.adam_w_mode"},
    {{"optimizer.params.torch_adam", "bool", "false", ZERO__NOEF, "use torch's Adam instead of FusedAdam", "same math: zero has one Adam"},
     ZERO__K_BOOL, ZERO__OFF(optimizer.torch_adam), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.optimizer.torch_adam"},
    {{"optimizer.params.amsgrad", "bool", "false", ZERO__REJ, "AMSGrad variant", "DeepSpeed's fused and CPU Adam reject it too"},
     ZERO__K_BOOL, ZERO__OFF(optimizer.amsgrad), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.optimizer.amsgrad"},

    /* ---- scheduler ---- */
    {{"scheduler", "object", "None", ZERO__IMPL, "LR schedule: {\"type\": ..., \"params\": {...}}", "zero_lr_at computes it"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"scheduler.type", "string", "-", ZERO__IMPL,
      "WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle or LRRangeTest", "torch.optim schedulers are rejected"},
     ZERO__K_ENUM, ZERO__OFF(scheduler.type), 0, 0, "WarmupLR:1|WarmupDecayLR:2|WarmupCosineLR:3|OneCycle:4|LRRangeTest:5", ZERO__AUTO_NO, 0, 0, NULL, "cfg.scheduler.type"},
    {{"scheduler.params", "object", "{}", ZERO__IMPL, "keyword arguments of the scheduler",
      "unknown keys, and keys of another scheduler, are errors (DeepSpeed: TypeError)"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, NULL, ""},
    {{"scheduler.params.last_batch_iteration", "int", "-1", ZERO__IMPL, "the iteration to resume from", ""},
     ZERO__K_I64, ZERO__OFF(scheduler.last_batch_iteration), -1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, ZERO__S_ALL, NULL, "cfg.scheduler.last_batch_iteration"},
    {{"scheduler.params.warmup_min_lr", "float", "0", ZERO__IMPL, "WarmupLR/WarmupDecayLR: lr at the start of warmup",
      "\"auto\": 0 (HF's rule)"},
     ZERO__K_F64, ZERO__OFF(scheduler.warmup_min_lr), 0, 1e300, NULL, ZERO__AUTO_DERIVE, ZERO__F_PER_GROUP, ZERO__S_WARM | ZERO__S_DECAY, NULL, "cfg.scheduler.warmup_min_lr"},
    {{"scheduler.params.warmup_max_lr", "float", "None", ZERO__IMPL,
      "WarmupLR/WarmupDecayLR: lr at the end of warmup; None: WarmupLR takes the optimizer's lr (NEW; OLD 1e-3), WarmupDecayLR's signature keeps 1e-3",
      "\"auto\": optimizer.params.lr (HF's rule)"},
     ZERO__K_F64, ZERO__OFF(scheduler.warmup_max_lr), 0, 1e300, NULL, ZERO__AUTO_DERIVE, ZERO__F_PER_GROUP | ZERO__F_NULLABLE, ZERO__S_WARM | ZERO__S_DECAY, NULL, "cfg.scheduler.warmup_max_lr"},
    {{"scheduler.params.warmup_num_steps", "int", "1000", ZERO__IMPL, "warmup length W (WarmupLR uses max(2, W))",
      "\"auto\": set cfg.scheduler.warmup_num_steps (HF: warmup_steps)"},
     ZERO__K_I64, ZERO__OFF(scheduler.warmup_num_steps), 1, ZERO__BIG, NULL, ZERO__AUTO_SUPPLY, 0, ZERO__S_WARM | ZERO__S_DECAY | ZERO__S_COS, NULL, "cfg.scheduler.warmup_num_steps"},
    {{"scheduler.params.warmup_type", "string", "\"log\"", ZERO__IMPL, "warmup curve: \"log\" or \"linear\"",
      "DeepSpeed's WarmupLR warns and uses log on an unknown name; zero rejects it"},
     ZERO__K_ENUM, ZERO__OFF(scheduler.warmup_type), 0, 0, "log:0|linear:1", ZERO__AUTO_NO, 0, ZERO__S_WARM | ZERO__S_DECAY | ZERO__S_COS, NULL, "cfg.scheduler.warmup_type"},
    {{"scheduler.params.total_num_steps", "int", "required", ZERO__IMPL, "WarmupDecayLR/WarmupCosineLR: total steps T",
      "\"auto\": set cfg.scheduler.total_num_steps (HF: num_training_steps)"},
     ZERO__K_I64, ZERO__OFF(scheduler.total_num_steps), 1, ZERO__BIG, NULL, ZERO__AUTO_SUPPLY, ZERO__F_NULLABLE, ZERO__S_DECAY | ZERO__S_COS, NULL, "cfg.scheduler.total_num_steps"},
    {{"scheduler.params.warmup_min_ratio", "float", "0", ZERO__IMPL, "WarmupCosineLR: start ratio of the optimizer's lr", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.warmup_min_ratio), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__S_COS, NULL, "cfg.scheduler.warmup_min_ratio"},
    {{"scheduler.params.cos_min_ratio", "float", "1e-4", ZERO__IMPL, "WarmupCosineLR: final ratio of the optimizer's lr", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.cos_min_ratio), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__S_COS, NULL, "cfg.scheduler.cos_min_ratio"},
    {{"scheduler.params.cycle_min_lr", "float", "required", ZERO__IMPL, "OneCycle: lower lr of the cycle", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.cycle_min_lr), 0, 1e300, NULL, ZERO__AUTO_NO, ZERO__F_PER_GROUP, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_min_lr"},
    {{"scheduler.params.cycle_max_lr", "float", "required", ZERO__IMPL, "OneCycle: upper lr of the cycle", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.cycle_max_lr), 0, 1e300, NULL, ZERO__AUTO_NO, ZERO__F_PER_GROUP, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_max_lr"},
    {{"scheduler.params.decay_lr_rate", "float", "0", ZERO__IMPL, "OneCycle: lr decay rate after the cycle", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.decay_lr_rate), 0, 1e300, NULL, ZERO__AUTO_NO, 0, ZERO__S_CYCLE, NULL, "cfg.scheduler.decay_lr_rate"},
    {{"scheduler.params.cycle_first_step_size", "int", "2000", ZERO__IMPL, "OneCycle: steps of the rising half", ""},
     ZERO__K_I64, ZERO__OFF(scheduler.cycle_first_step_size), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_first_step_size"},
    {{"scheduler.params.cycle_second_step_size", "int", "None", ZERO__IMPL, "OneCycle: steps of the falling half; None: the first's", ""},
     ZERO__K_I64, ZERO__OFF(scheduler.cycle_second_step_size), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, ZERO__F_NULLABLE, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_second_step_size"},
    {{"scheduler.params.cycle_first_stair_count", "int", "0", ZERO__IMPL, "OneCycle: stairs of the rising half (0: smooth)", ""},
     ZERO__K_I64, ZERO__OFF(scheduler.cycle_first_stair_count), 0, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_first_stair_count"},
    {{"scheduler.params.cycle_second_stair_count", "int", "None", ZERO__IMPL, "OneCycle: stairs of the falling half; None: the first's", ""},
     ZERO__K_I64, ZERO__OFF(scheduler.cycle_second_stair_count), 0, ZERO__BIG, NULL, ZERO__AUTO_NO, ZERO__F_NULLABLE, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_second_stair_count"},
    {{"scheduler.params.decay_step_size", "int", "0", ZERO__IMPL, "OneCycle: decay interval after the cycle (0: no decay)", ""},
     ZERO__K_I64, ZERO__OFF(scheduler.decay_step_size), 0, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, ZERO__S_CYCLE, NULL, "cfg.scheduler.decay_step_size"},
    {{"scheduler.params.cycle_momentum", "bool", "true", ZERO__IMPL, "OneCycle: cycle beta1 inversely to the lr (beta2 forced to 0.99)", "zero_betas_at"},
     ZERO__K_BOOL, ZERO__OFF(scheduler.cycle_momentum), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_momentum"},
    {{"scheduler.params.cycle_min_mom", "float", "0.8", ZERO__IMPL, "OneCycle: lower beta1", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.cycle_min_mom), 0, 1, NULL, ZERO__AUTO_NO, ZERO__F_PER_GROUP, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_min_mom"},
    {{"scheduler.params.cycle_max_mom", "float", "0.9", ZERO__IMPL, "OneCycle: upper beta1", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.cycle_max_mom), 0, 1, NULL, ZERO__AUTO_NO, ZERO__F_PER_GROUP, ZERO__S_CYCLE, NULL, "cfg.scheduler.cycle_max_mom"},
    {{"scheduler.params.decay_mom_rate", "float", "0", ZERO__IMPL, "OneCycle: beta1 growth rate after the cycle", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.decay_mom_rate), 0, 1e300, NULL, ZERO__AUTO_NO, 0, ZERO__S_CYCLE, NULL, "cfg.scheduler.decay_mom_rate"},
    {{"scheduler.params.lr_range_test_min_lr", "float", "1e-3", ZERO__IMPL, "LRRangeTest: starting lr", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.lr_range_test_min_lr), 0, 1e300, NULL, ZERO__AUTO_NO, ZERO__F_PER_GROUP, ZERO__S_RANGE, NULL, "cfg.scheduler.lr_range_test_min_lr"},
    {{"scheduler.params.lr_range_test_step_size", "int", "2000", ZERO__IMPL, "LRRangeTest: steps per interval", ""},
     ZERO__K_I64, ZERO__OFF(scheduler.lr_range_test_step_size), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, ZERO__S_RANGE, NULL, "cfg.scheduler.lr_range_test_step_size"},
    {{"scheduler.params.lr_range_test_step_rate", "float", "1.0", ZERO__IMPL, "LRRangeTest: lr growth per interval", ""},
     ZERO__K_F64, ZERO__OFF(scheduler.lr_range_test_step_rate), 0, 1e300, NULL, ZERO__AUTO_NO, 0, ZERO__S_RANGE, NULL, "cfg.scheduler.lr_range_test_step_rate"},
    {{"scheduler.params.lr_range_test_staircase", "bool", "false", ZERO__IMPL, "LRRangeTest: grow in stairs", ""},
     ZERO__K_BOOL, ZERO__OFF(scheduler.lr_range_test_staircase), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__S_RANGE, NULL, "cfg.scheduler.lr_range_test_staircase"},

    /* ---- zero_optimization (strict: pydantic extra="forbid") ---- */
    {{"zero_optimization", "object", "{}", ZERO__IMPL, "ZeRO settings; the legacy booleans true/false mean stage 1/0",
      "unknown keys are errors"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, NULL, ""},
#define ZERO__ZK(name, type, def, status, meaning, note, kind, lo, hi, rule, flags)                   \
    {{"zero_optimization." #name, type, def, status, meaning, note}, kind,                          \
     ZERO__OFF(zero_optimization.name), lo, hi, NULL, rule, flags, 0, NULL, "cfg.zero_optimization." #name}
    ZERO__ZK(stage, "int", "0", ZERO__NYET, "0: data parallel; 1: shard optimizer state; 2: + gradients; 3: + parameters",
             zero__engine_note, ZERO__K_INT, 0, 3, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(contiguous_gradients, "bool", "true", ZERO__NOEF, "copy gradients into contiguous buffers as they are produced",
             "zero's gradients are always contiguous per unit", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(reduce_scatter, "bool", "true", ZERO__NOEF, "reduce gradients per owner instead of a plain all-reduce",
             "zero always reduce-scatters each unit (2x parameters moved per step)", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(reduce_bucket_size, "int", "5e8", ZERO__NYET, "elements per gradient bucket (zero: the largest unit)",
             "\"auto\": hidden_size^2 (HF's rule; set cfg.hidden_size)", ZERO__K_I64, 0, ZERO__BIG, ZERO__AUTO_DERIVE, 0),
    ZERO__ZK(use_multi_rank_bucket_allreduce, "bool", "true", ZERO__NOEF, "stage 1/2: one all-reduce per multi-owner bucket",
             "zero reduce-scatters", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(allgather_partitions, "bool", "true", ZERO__NOEF, "all-gather updated parameters (vs broadcasts)",
             "zero always all-gathers each unit", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(allgather_bucket_size, "int", "5e8", ZERO__NOEF, "chunking of the post-step all-gather",
             "DeepSpeed ignores it when all_gather_into_tensor exists; zero gathers whole units", ZERO__K_I64, 0, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(overlap_comm, "bool", "None", ZERO__NYET, "reduce on a side stream overlapping backward; None: true for stage 3 only",
             zero__engine_note, ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, ZERO__F_NULLABLE),
    ZERO__ZK(load_from_fp32_weights, "bool", "true", ZERO__NYET, "on load, restore fp32 master weights from the checkpoint",
             "checkpoints arrive with issue 7", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(elastic_checkpoint, "bool", "false", ZERO__NOEF, "legacy world-size-resizable stage 1/2 checkpoints",
             "zero's checkpoints are always world-size independent", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.offload_param", "object", "None", ZERO__IMPL, "stage 3: where parameter shards live",
      "unknown keys are errors; null: no offload"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT | ZERO__F_NULLABLE, 0, NULL, ""},
#define ZERO__OK(blk, name, type, def, status, meaning, note, kind, lo, hi, choices, flags)             \
    {{"zero_optimization." #blk "." #name, type, def, status, meaning, note}, kind,                    \
     ZERO__OFF(zero_optimization.blk.name), lo, hi, choices, ZERO__AUTO_DEFAULT, flags, 0, NULL,          \
     "cfg.zero_optimization." #blk "." #name}
    ZERO__OK(offload_param, device, "string", "\"none\"", ZERO__NYET, "\"none\", \"cpu\" or \"nvme\"", zero__offload_note,
             ZERO__K_ENUM, 0, 0, "cpu:1|nvme:2|none:0", 0),
    ZERO__OK(offload_param, nvme_path, "string", "None", ZERO__NYET, "directory of the swap files (device nvme)", zero__offload_note,
             ZERO__K_STRING, 0, 0, NULL, ZERO__F_NULLABLE),
    ZERO__OK(offload_param, buffer_count, "int", "5", ZERO__NYET, "pinned swap buffers", zero__offload_note,
             ZERO__K_I64, 1, ZERO__BIG, NULL, 0),
    ZERO__OK(offload_param, buffer_size, "int", "1e8", ZERO__NYET, "elements per swap buffer", zero__offload_note,
             ZERO__K_I64, 1, ZERO__BIG, NULL, 0),
    ZERO__OK(offload_param, max_in_cpu, "int", "1e9", ZERO__NYET, "elements kept in CPU memory with nvme", zero__offload_note,
             ZERO__K_I64, 0, ZERO__BIG, NULL, 0),
    ZERO__OK(offload_param, pin_memory, "bool", "true", ZERO__NYET, "page-locked host buffers (NEW >= v0.19.5; OLD false)",
             zero__offload_note, ZERO__K_BOOL, 0, 1, NULL, 0),
    {{"zero_optimization.offload_optimizer", "object", "None", ZERO__IMPL, "stages 1-3: where optimizer state lives and steps",
      "unknown keys are errors; null: no offload"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT | ZERO__F_NULLABLE, 0, NULL, ""},
    ZERO__OK(offload_optimizer, device, "string", "\"none\"", ZERO__NYET, "\"none\", \"cpu\" or \"nvme\"", zero__offload_note,
             ZERO__K_ENUM, 0, 0, "cpu:1|nvme:2|none:0", 0),
    ZERO__OK(offload_optimizer, nvme_path, "string", "None", ZERO__NYET, "directory of the swap files (device nvme)", zero__offload_note,
             ZERO__K_STRING, 0, 0, NULL, ZERO__F_NULLABLE),
    ZERO__OK(offload_optimizer, buffer_count, "int", "4", ZERO__NYET, "pinned swap buffers (param, grad, m, v)", zero__offload_note,
             ZERO__K_I64, 1, ZERO__BIG, NULL, 0),
    ZERO__OK(offload_optimizer, pin_memory, "bool", "true", ZERO__NYET, "page-locked host buffers (NEW >= v0.19.5; OLD false)",
             zero__offload_note, ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OK(offload_optimizer, pipeline_read, "bool", "false", ZERO__NYET, "read the next tile while stepping", zero__offload_note,
             ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OK(offload_optimizer, pipeline_write, "bool", "false", ZERO__NYET, "write the last tile while stepping", zero__offload_note,
             ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OK(offload_optimizer, fast_init, "bool", "false", ZERO__NOEF, "build swap files directly from NVMe-resident params",
             "zero creates its swap files at engine creation", ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OK(offload_optimizer, ratio, "float", "1.0", ZERO__NYET, "fraction of sub-groups stepped on the CPU (< 1 only stage 3)",
             zero__offload_note, ZERO__K_F64, 0, 1, NULL, 0),
    ZERO__OK(offload_optimizer, super_offload, "bool", "false", ZERO__REJ, "SuperOffload (NEW)", "not supported",
             ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OK(offload_optimizer, cpuadam_cores_perc, "float", "0.8", ZERO__NYET, "fraction of cores for CPU Adam (NEW)",
             zero__offload_note, ZERO__K_F64, 0, 1, NULL, 0),
#undef ZERO__OK
    ZERO__ZK(sub_group_size, "int", "1e9", ZERO__NYET, "stage 3: elements per optimizer sub-group (zero: per unit tile)",
             zero__engine_note, ZERO__K_I64, 1, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.stage3_prefetch_bucket_size", "int", "5e7", ZERO__NYET,
      "stage 3: elements prefetched ahead (code default 5e7; docs say 5e8)", "alias prefetch_bucket_size. \"auto\": 0.9 x hidden_size^2 (HF's rule)"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_prefetch_bucket_size), 0, ZERO__BIG, NULL, ZERO__AUTO_DERIVE, 0, 0,
     "prefetch_bucket_size", "cfg.zero_optimization.stage3_prefetch_bucket_size"},
    {{"zero_optimization.stage3_param_persistence_threshold", "int", "1e5", ZERO__NYET,
      "stage 3: tensors of at most this many elements stay gathered", "alias param_persistence_threshold. \"auto\": 10 x hidden_size (HF's rule)"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_param_persistence_threshold), 0, ZERO__BIG, NULL, ZERO__AUTO_DERIVE, 0, 0,
     "param_persistence_threshold", "cfg.zero_optimization.stage3_param_persistence_threshold"},
    {{"zero_optimization.stage3_model_persistence_threshold", "int", "sys.maxsize", ZERO__NYET,
      "stage 3: cap on all persistent elements", "alias model_persistence_threshold"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_model_persistence_threshold), 0, 9.3e18, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "model_persistence_threshold", "cfg.zero_optimization.stage3_model_persistence_threshold"},
    {{"zero_optimization.stage3_max_live_parameters", "int", "1e9", ZERO__NYET,
      "stage 3: gathered elements beyond which no prefetch is issued (a needed fetch is never blocked)", "alias max_live_parameters"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_max_live_parameters), 0, ZERO__BIG, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "max_live_parameters", "cfg.zero_optimization.stage3_max_live_parameters"},
    {{"zero_optimization.stage3_max_reuse_distance", "int", "1e9", ZERO__NYET,
      "stage 3: do not release a unit reused within this many elements", "alias max_reuse_distance"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_max_reuse_distance), 0, ZERO__BIG, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "max_reuse_distance", "cfg.zero_optimization.stage3_max_reuse_distance"},
    {{"zero_optimization.stage3_gather_16bit_weights_on_model_save", "bool", "false", ZERO__NYET,
      "stage 3: consolidate 16-bit weights when saving the model",
      "alias gather_16bit_weights_on_model_save; deprecated stage3_gather_fp16_weights_on_model_save. \"auto\": false (Accelerate's rule)"},
     ZERO__K_BOOL, ZERO__OFF(zero_optimization.stage3_gather_16bit_weights_on_model_save), 0, 1, NULL, ZERO__AUTO_DERIVE, 0, 0,
     "gather_16bit_weights_on_model_save", "cfg.zero_optimization.stage3_gather_16bit_weights_on_model_save"},
    {{"zero_optimization.stage3_module_granularity_threshold", "int", "0", ZERO__NOEF,
      "stage 3: fetch fine-grained modules as one leaf", "zero fetches the groups the program registers", },
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_module_granularity_threshold), 0, ZERO__BIG, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "module_granularity_threshold", "cfg.zero_optimization.stage3_module_granularity_threshold"},
    {{"zero_optimization.stage3_use_all_reduce_for_fetch_params", "bool", "false", ZERO__NOEF,
      "stage 3: fetch parameters with all-reduce", "zero fetches with all-gather (same values)"},
     ZERO__K_BOOL, ZERO__OFF(zero_optimization.stage3_use_all_reduce_for_fetch_params), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "use_all_reduce_for_fetch_params", "cfg.zero_optimization.stage3_use_all_reduce_for_fetch_params"},
    {{"zero_optimization.stage3_allgather_sequential", "bool", "false", ZERO__NOEF,
      "stage 3: gather parameters one by one (NEW)", "zero gathers whole units"},
     ZERO__K_BOOL, ZERO__OFF(zero_optimization.stage3_allgather_sequential), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "allgather_sequential", "cfg.zero_optimization.stage3_allgather_sequential"},
    ZERO__ZK(ignore_unused_parameters, "bool", "true", ZERO__NYET, "stage 2: tolerate parameters that get no gradient",
             zero__engine_note, ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(legacy_stage1, "bool", "false", ZERO__REJ, "removed legacy stage 1", "true is an error, as in DeepSpeed",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(round_robin_gradients, "bool", "false", ZERO__NOEF, "stage 1/2: interleave gradient owners",
             "zero's units give every rank a chunk of each bucket already", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(zero_hpz_partition_size, "int", "1", ZERO__REJ, "ZeRO++ hpZ secondary partition size", "ZeRO++ is not supported (only 1)",
             ZERO__K_I64, 1, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(zero_quantized_weights, "bool", "false", ZERO__REJ, "ZeRO++ qwZ quantized weight all-gather", "ZeRO++ is not supported",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(zero_quantized_nontrainable_weights, "bool", "false", ZERO__REJ, "store frozen weights quantized", "not supported",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(zero_quantized_gradients, "bool", "false", ZERO__REJ, "ZeRO++ qgZ quantized gradient reduction", "ZeRO++ is not supported",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.zeropp_loco_param", "object", "None", ZERO__REJ, "ZeRO++ LoCo error feedback {err_beta, reset_T}",
      "only null is accepted"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_DEFAULT, ZERO__F_NULL_ONLY, 0, NULL, ""},
    ZERO__ZK(mics_shard_size, "int", "-1", ZERO__REJ, "MiCS: shard within groups of this size", "MiCS is not supported (only -1)",
             ZERO__K_I64, -ZERO__BIG, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(mics_hierarchical_params_gather, "bool", "false", ZERO__REJ, "MiCS hierarchical gather", "MiCS is not supported",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(memory_efficient_linear, "bool", "true", ZERO__NOEF, "stage 3: PyTorch linear-layer internals", "PyTorch only",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(override_module_apply, "bool", "true", ZERO__NOEF, "stage 3: PyTorch module.apply internals", "PyTorch only",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(pipeline_loading_checkpoint, "bool", "false", ZERO__NOEF, "pipeline-parallel checkpoint loading", "no pipeline parallelism in zero",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(log_trace_cache_warnings, "bool", "false", ZERO__NOEF, "stage 3: log trace-cache invalidations", "",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZK(enable_sanity_checks, "bool", "false", ZERO__NOEF, "extra stage-3 assertions (NEW)", "zero's check mode arrives with the CUDA backend",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.zenflow", "object", "None", ZERO__REJ, "ZenFlow asynchronous CPU updates (NEW)", "only null is accepted"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_DEFAULT, ZERO__F_NULL_ONLY, 0, NULL, ""},
    {{"zero_optimization.leaf_module", "object", "{}", ZERO__NOEF, "stage 3: PyTorch module classes fetched as one (NEW)",
      "zero fetches the groups the program registers"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, ""},
    ZERO__ZK(save_muon_momentum_buffer_in_memory, "bool", "false", ZERO__NOEF, "Muon optimizer buffers (NEW)", "no Muon in zero",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
#undef ZERO__ZK
    /* deprecated, remapped with a warning (zero__config_deprecated) */
    {{"zero_optimization.cpu_offload", "bool", "false", ZERO__DEPR, "true: offload_optimizer {device: cpu}", "deprecated"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"zero_optimization.cpu_offload_param", "bool", "false", ZERO__DEPR, "true: offload_param {device: cpu}", "deprecated"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"zero_optimization.cpu_offload_use_pin_memory", "bool", "false", ZERO__DEPR, "pin_memory of both offload blocks", "deprecated"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"zero_optimization.stage3_gather_fp16_weights_on_model_save", "bool", "false", ZERO__DEPR,
      "stage3_gather_16bit_weights_on_model_save", "deprecated"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},

    /* ---- DeepSpeed top-level sections with nothing to do in zero ---- */
#define ZERO__TOP(name, status, meaning, note, flags)                                                        \
    {{name, "object", "None", status, meaning, note}, ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, flags, 0, NULL, ""}
    ZERO__TOP("amp", ZERO__REJ, "NVIDIA Apex AMP", "enabled: true is an error (use fp16 or bf16)", ZERO__F_ENABLED),
    ZERO__TOP("elasticity", ZERO__REJ, "elastic training batch sizes", "enabled: true is an error", ZERO__F_ENABLED),
    ZERO__TOP("compression_training", ZERO__REJ, "DeepSpeed Compression", "only null is accepted", ZERO__F_NULL_ONLY),
    ZERO__TOP("activation_checkpointing", ZERO__NOEF, "PyTorch activation checkpointing", "the program recomputes its own activations", 0),
    ZERO__TOP("flops_profiler", ZERO__NOEF, "FLOPs profiler", "", 0),
    ZERO__TOP("tensorboard", ZERO__NOEF, "TensorBoard monitor", "", 0),
    ZERO__TOP("wandb", ZERO__NOEF, "Weights & Biases monitor", "", 0),
    ZERO__TOP("csv_monitor", ZERO__NOEF, "CSV monitor", "", 0),
    ZERO__TOP("comet", ZERO__NOEF, "Comet monitor", "", 0),
    ZERO__TOP("comms_logger", ZERO__NOEF, "communication logger", "ZERO_DEBUG=1 arrives with the CUDA backend", 0),
    ZERO__TOP("timers", ZERO__NOEF, "throughput timer settings", "", 0),
    ZERO__TOP("autotuning", ZERO__NOEF, "DeepSpeed autotuner", "", 0),
    ZERO__TOP("compile", ZERO__NOEF, "torch.compile settings", "", 0),
    ZERO__TOP("pipeline", ZERO__NOEF, "pipeline parallelism", "", 0),
    ZERO__TOP("sparse_attention", ZERO__NOEF, "sparse attention kernels", "", 0),
    ZERO__TOP("curriculum_learning", ZERO__NOEF, "curriculum learning", "", 0),
    ZERO__TOP("data_efficiency", ZERO__NOEF, "data efficiency library", "", 0),
    ZERO__TOP("nebula", ZERO__NOEF, "Nebula checkpoint service", "", 0),
    ZERO__TOP("hybrid_engine", ZERO__NOEF, "RLHF hybrid engine", "", 0),
#undef ZERO__TOP
};

#define ZERO__NKEYS ((int)(sizeof zero__keys / sizeof zero__keys[0]))

ZERO__DEF int zero_config_key_count(void) { return ZERO__NKEYS; }
ZERO__DEF const zero_key_info *zero_config_key(int i) {
    return (i >= 0 && i < ZERO__NKEYS) ? &zero__keys[i].info : NULL;
}
