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

/* ---- config: parsing ---- */

typedef struct zero__parse {
    zero_config *cfg;
    const zero__json *j;
    zero_error *err;
    zero_config defaults; /* for "auto" -> default, null -> default, and status checks */
    int fp16_node, bf16_node; /* where fp16.enabled / bf16.enabled were set (-1) */
    char not_yet[768];        /* keys given that zero does not act on yet: one warning at the end */
    size_t not_yet_len;
    int not_yet_count, not_yet_dropped;
} zero__parse;

/* Fields are written and read with memcpy: the enum fields share int's size
   (checked below) and memcpy sidesteps any aliasing question in C and C++. */
typedef char zero__enum_is_int[(sizeof(zero_dtype) == sizeof(int) &&
                                sizeof(zero_offload_device) == sizeof(int) &&
                                sizeof(zero_scheduler_type) == sizeof(int)) ? 1 : -1];

static size_t zero__kind_size(zero__kind kind) {
    switch (kind) {
    case ZERO__K_BOOL: case ZERO__K_INT: case ZERO__K_ENUM: return sizeof(int);
    case ZERO__K_I64: return sizeof(int64_t);
    case ZERO__K_F64: return sizeof(double);
    case ZERO__K_BETAS: return 2 * sizeof(double);
    case ZERO__K_STRING: return ZERO_PATH_MAX;
    default: return 0;
    }
}

static void zero__put_int(zero_config *c, size_t off, int v) { memcpy((char *)c + off, &v, sizeof v); }
static int zero__get_int(const zero_config *c, size_t off) {
    int v;
    memcpy(&v, (const char *)c + off, sizeof v);
    return v;
}
static void zero__put_i64(zero_config *c, size_t off, int64_t v) { memcpy((char *)c + off, &v, sizeof v); }
static int64_t zero__get_i64(const zero_config *c, size_t off) {
    int64_t v;
    memcpy(&v, (const char *)c + off, sizeof v);
    return v;
}
static void zero__put_f64(zero_config *c, size_t off, double v) { memcpy((char *)c + off, &v, sizeof v); }
static double zero__get_f64(const zero_config *c, size_t off) {
    double v;
    memcpy(&v, (const char *)c + off, sizeof v);
    return v;
}

/* Is the key's field still ZERO_AUTO? */
static int zero__key_is_auto(const zero_config *c, const zero__key *k) {
    switch (k->kind) {
    case ZERO__K_BOOL: case ZERO__K_INT: return zero__get_int(c, k->offset) == ZERO_AUTO;
    case ZERO__K_I64: return zero__get_i64(c, k->offset) == ZERO_AUTO;
    case ZERO__K_F64: case ZERO__K_BETAS: return zero__get_f64(c, k->offset) == ZERO_AUTO;
    default: return 0;
    }
}

static void zero__key_set_auto(zero_config *c, const zero__key *k) {
    switch (k->kind) {
    case ZERO__K_BOOL: case ZERO__K_INT: zero__put_int(c, k->offset, ZERO_AUTO); break;
    case ZERO__K_I64: zero__put_i64(c, k->offset, ZERO_AUTO); break;
    case ZERO__K_BETAS:
        zero__put_f64(c, k->offset, ZERO_AUTO);
        zero__put_f64(c, k->offset + sizeof(double), ZERO_AUTO);
        break;
    case ZERO__K_F64: zero__put_f64(c, k->offset, ZERO_AUTO); break;
    default: break;
    }
}

static void zero__key_copy(zero_config *dst, const zero_config *src, const zero__key *k) {
    size_t n = zero__kind_size(k->kind);
    if (n) memcpy((char *)dst + k->offset, (const char *)src + k->offset, n);
}

static int zero__key_differs(const zero_config *a, const zero_config *b, const zero__key *k) {
    if (k->kind == ZERO__K_STRING)
        return strcmp((const char *)a + k->offset, (const char *)b + k->offset) != 0;
    return memcmp((const char *)a + k->offset, (const char *)b + k->offset, zero__kind_size(k->kind)) != 0;
}

/* The parent section of a key path: "a.b.c" -> "a.b" (length), "a" -> "" */
static size_t zero__parent_len(const char *path) {
    const char *dot = strrchr(path, '.');
    return dot ? (size_t)(dot - path) : 0;
}
static const char *zero__last_name(const char *path) {
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* The key `name` (n bytes) inside `section`, by its name or alias. */
static const zero__key *zero__key_find(const char *section, const char *name, size_t n, int *via_alias) {
    size_t slen = strlen(section);
    int i;
    for (i = 0; i < ZERO__NKEYS; i++) {
        const zero__key *k = &zero__keys[i];
        const char *last;
        if (zero__parent_len(k->info.path) != slen || strncmp(k->info.path, section, slen) != 0) continue;
        last = zero__last_name(k->info.path);
        if (strlen(last) == n && memcmp(last, name, n) == 0) {
            if (via_alias) *via_alias = 0;
            return k;
        }
        if (k->alias && strlen(k->alias) == n && memcmp(k->alias, name, n) == 0) {
            if (via_alias) *via_alias = 1;
            return k;
        }
    }
    return NULL;
}

static const zero__key *zero__key_by_path(const char *path) {
    int i;
    for (i = 0; i < ZERO__NKEYS; i++)
        if (strcmp(zero__keys[i].info.path, path) == 0) return &zero__keys[i];
    return NULL;
}

/* Edit distance, for "did you mean". Strings past 64 bytes get no suggestion. */
static int zero__edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    int row[65], i, j;
    if (na > 64 || nb > 64) return 1000;
    for (j = 0; j <= (int)nb; j++) row[j] = j;
    for (i = 1; i <= (int)na; i++) {
        int diag = row[0];
        row[0] = i;
        for (j = 1; j <= (int)nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

/* The known key of `section` nearest to name, if near enough to be a typo. */
static const char *zero__suggest(const char *section, const char *name, size_t n) {
    size_t slen = strlen(section);
    const char *best = NULL;
    int best_d = (int)(1 + n / 4), i;
    if (best_d > 3) best_d = 3;
    for (i = 0; i < ZERO__NKEYS; i++) {
        const zero__key *k = &zero__keys[i];
        const char *cand[2];
        int c;
        if (zero__parent_len(k->info.path) != slen || strncmp(k->info.path, section, slen) != 0) continue;
        if (k->info.status == ZERO_KEY_DEPRECATED) continue;
        cand[0] = zero__last_name(k->info.path);
        cand[1] = k->alias;
        for (c = 0; c < 2; c++) {
            int d;
            if (!cand[c]) continue;
            d = zero__edit_distance(name, n, cand[c], strlen(cand[c]));
            if (d <= best_d && (best == NULL || d < best_d)) {
                best = cand[c];
                best_d = d;
            }
        }
    }
    return best;
}

static const char *zero__json_type_name(zero__json_type t) {
    switch (t) {
    case ZERO__JSON_NULL: return "null";
    case ZERO__JSON_FALSE: case ZERO__JSON_TRUE: return "a boolean";
    case ZERO__JSON_NUMBER: return "a number";
    case ZERO__JSON_STRING: return "a string";
    case ZERO__JSON_ARRAY: return "an array";
    default: return "an object";
    }
}

/* Short quoted preview of a node's text for messages: "gpu", 1.5, [...] */
static void zero__preview(const zero__parse *p, int node, char *buf, size_t cap) {
    const zero__json_node *v = &p->j->nodes[node];
    if (v->type == ZERO__JSON_STRING) {
        char tmp[64];
        size_t n = zero__json_string(p->j, node, tmp, sizeof tmp);
        snprintf(buf, cap, "\"%s%s\"", tmp, n >= sizeof tmp ? "..." : "");
    } else if (v->type == ZERO__JSON_ARRAY || v->type == ZERO__JSON_OBJECT) {
        snprintf(buf, cap, "%s", v->type == ZERO__JSON_ARRAY ? "an array" : "an object");
    } else {
        size_t n = v->end - v->start;
        if (n > 40) n = 40;
        snprintf(buf, cap, "%.*s", (int)n, p->j->text + v->start);
    }
}

static zero_result zero__pfail(zero__parse *p, zero_msg item, const char *key, int node, const char *fmt, ...)
    ZERO__PRINTF(5, 6);
static zero_result zero__pfail(zero__parse *p, zero_msg item, const char *key, int node, const char *fmt, ...) {
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return zero__fail(p->err, item, key, node >= 0 ? p->j->nodes[node].line : 0,
                      node >= 0 ? p->j->nodes[node].col : 0, "%s", text);
}

static void zero__pwarn(zero__parse *p, zero_log_level level, zero_msg item, const char *key, int node,
                        const char *fmt, ...) ZERO__PRINTF(6, 7);
static void zero__pwarn(zero__parse *p, zero_log_level level, zero_msg item, const char *key, int node,
                        const char *fmt, ...) {
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (node >= 0)
        zero__log(&p->cfg->log, level, item, "%s: %s (line %d:%d)", key, text, p->j->nodes[node].line,
                  p->j->nodes[node].col);
    else
        zero__log(&p->cfg->log, level, item, "%s: %s", key, text);
}

static int zero__is_auto(const zero__parse *p, int node) {
    return p->j->nodes[node].type == ZERO__JSON_STRING && zero__json_string_eq(p->j, node, "auto", 4);
}

/* A JSON number, or a string holding one (pydantic's lax mode accepts "5e8"). */
static zero_result zero__get_number(zero__parse *p, const char *key, int node, double *d, int64_t *i, int *is_int) {
    const zero__json_node *v = &p->j->nodes[node];
    if (v->type == ZERO__JSON_STRING) {
        char buf[64];
        zero__json inner;
        zero_result r;
        size_t n = zero__json_string(p->j, node, buf, sizeof buf);
        memset(&inner, 0, sizeof inner);
        if (n < sizeof buf && memchr(buf, 0, n) == NULL &&
            zero__json_parse(&inner, buf, n, NULL) == ZERO_OK && inner.nodes[0].type == ZERO__JSON_NUMBER) {
            *d = inner.nodes[0].number;
            *i = inner.nodes[0].integer;
            *is_int = inner.nodes[0].is_integer;
            zero__json_free(&inner);
            return ZERO_OK;
        }
        zero__json_free(&inner);
        {
            char pv[96];
            zero__preview(p, node, pv, sizeof pv);
            r = zero__pfail(p, ZERO_MSG_CONFIG_TYPE, key, node, "expected a number, got %s", pv);
        }
        return r;
    }
    if (v->type != ZERO__JSON_NUMBER)
        return zero__pfail(p, ZERO_MSG_CONFIG_TYPE, key, node, "expected a number, got %s", zero__json_type_name(v->type));
    *d = v->number;
    *i = v->integer;
    *is_int = v->is_integer;
    return ZERO_OK;
}

static void zero__fmt_num(char *buf, size_t cap, double x) {
    if (x >= 9e18) snprintf(buf, cap, "2^63-1");
    else if (x <= -9e18) snprintf(buf, cap, "-2^63");
    else snprintf(buf, cap, "%.15g", x);
}

static zero_result zero__range_fail(zero__parse *p, const zero__key *k, const char *key, int node, double x) {
    char lo[32], hi[32], got[32];
    zero__fmt_num(lo, sizeof lo, k->lo);
    zero__fmt_num(hi, sizeof hi, k->hi);
    zero__fmt_num(got, sizeof got, x);
    if (k->hi >= 1e300 || k->hi >= ZERO__BIG)
        return zero__pfail(p, ZERO_MSG_CONFIG_RANGE, key, node, "must be >= %s, got %s", lo, got);
    return zero__pfail(p, ZERO_MSG_CONFIG_RANGE, key, node, "must be between %s and %s, got %s", lo, hi, got);
}

/* Booleans the way pydantic's lax mode reads them. */
static zero_result zero__get_bool(zero__parse *p, const char *key, int node, int *out) {
    static const char *const yes[] = {"true", "1", "yes", "on", "t", "y"};
    static const char *const no[] = {"false", "0", "no", "off", "f", "n"};
    const zero__json_node *v = &p->j->nodes[node];
    char buf[8], pv[96];
    size_t n, i;
    if (v->type == ZERO__JSON_TRUE || v->type == ZERO__JSON_FALSE) {
        *out = v->type == ZERO__JSON_TRUE;
        return ZERO_OK;
    }
    if (v->type == ZERO__JSON_NUMBER && (v->number == 0 || v->number == 1)) {
        *out = v->number == 1;
        return ZERO_OK;
    }
    if (v->type == ZERO__JSON_STRING) {
        n = zero__json_string(p->j, node, buf, sizeof buf);
        if (n < sizeof buf) {
            for (i = 0; i < n; i++) buf[i] = (char)tolower((unsigned char)buf[i]);
            for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
                if (strcmp(buf, yes[i]) == 0) { *out = 1; return ZERO_OK; }
                if (strcmp(buf, no[i]) == 0) { *out = 0; return ZERO_OK; }
            }
        }
    }
    zero__preview(p, node, pv, sizeof pv);
    return zero__pfail(p, ZERO_MSG_CONFIG_TYPE, key, node, "expected true or false, got %s", pv);
}

/* Match an ENUM choice list "cpu:1|nvme:2|none:0"; -1 when no match. */
static int zero__enum_match(const char *choices, const char *s, size_t n, int nocase) {
    const char *c = choices;
    while (*c) {
        const char *colon = strchr(c, ':'), *bar;
        size_t len = (size_t)(colon - c);
        int ok = len == n;
        size_t i;
        for (i = 0; ok && i < n; i++)
            ok = nocase ? tolower((unsigned char)c[i]) == tolower((unsigned char)s[i]) : c[i] == s[i];
        if (ok) return atoi(colon + 1);
        bar = strchr(colon, '|');
        if (!bar) break;
        c = bar + 1;
    }
    return -1;
}

/* The name of enum value v in a choice list ("" when none). */
static void zero__enum_name(const char *choices, int v, char *buf, size_t cap) {
    const char *c = choices;
    buf[0] = 0;
    while (*c) {
        const char *colon = strchr(c, ':'), *bar = strchr(colon, '|');
        if (atoi(colon + 1) == v) {
            snprintf(buf, cap, "%.*s", (int)(colon - c), c);
            return;
        }
        if (!bar) break;
        c = bar + 1;
    }
}

/* "\"cpu\", \"nvme\" or \"none\"" */
static void zero__enum_list(const char *choices, char *buf, size_t cap) {
    const char *c = choices;
    size_t len = 0;
    buf[0] = 0;
    while (*c && len < cap) {
        const char *colon = strchr(c, ':'), *bar = strchr(colon, '|');
        const char *sep = len == 0 ? "" : (bar ? ", " : " or ");
        len += (size_t)snprintf(buf + len, cap - len, "%s\"%.*s\"", sep, (int)(colon - c), c);
        if (!bar) break;
        c = bar + 1;
    }
}

/* Store the value at `node` into key k's field. */
static zero_result zero__set_leaf(zero__parse *p, const zero__key *k, const char *key, int node) {
    const zero__json *j = p->j;
    const zero__json_node *v = &j->nodes[node];
    zero_result r;
    char pv[96];

    if (v->type == ZERO__JSON_NULL && (k->flags & ZERO__F_NULLABLE)) {
        zero__key_copy(p->cfg, &p->defaults, k);
        return ZERO_OK;
    }
    if ((k->flags & ZERO__F_PER_GROUP) && v->type == ZERO__JSON_ARRAY) {
        if (v->count != 1)
            return zero__pfail(p, ZERO_MSG_CONFIG_LIST_LENGTH, key, node,
                               "zero trains one parameter group: give a number or a list of one, got %d values",
                               v->count);
        node = v->first;
        v = &j->nodes[node];
    }
    switch (k->kind) {
    case ZERO__K_BOOL: {
        int b;
        if ((r = zero__get_bool(p, key, node, &b)) != ZERO_OK) return r;
        zero__put_int(p->cfg, k->offset, b);
        return ZERO_OK;
    }
    case ZERO__K_INT:
    case ZERO__K_I64: {
        double d;
        int64_t i;
        int is_int;
        if ((r = zero__get_number(p, key, node, &d, &i, &is_int)) != ZERO_OK) return r;
        if (!is_int) {
            if (d != floor(d)) {
                zero__preview(p, node, pv, sizeof pv);
                return zero__pfail(p, ZERO_MSG_CONFIG_NOT_INTEGER, key, node, "expected an integer, got %s", pv);
            }
            if (d < k->lo || d > k->hi) return zero__range_fail(p, k, key, node, d);
            i = (int64_t)d;
        } else if ((double)i < k->lo || (double)i > k->hi) {
            return zero__range_fail(p, k, key, node, (double)i);
        }
        if (k->kind == ZERO__K_INT) zero__put_int(p->cfg, k->offset, (int)i);
        else zero__put_i64(p->cfg, k->offset, i);
        return ZERO_OK;
    }
    case ZERO__K_F64: {
        double d;
        int64_t i;
        int is_int;
        if ((r = zero__get_number(p, key, node, &d, &i, &is_int)) != ZERO_OK) return r;
        if (!(d >= k->lo && d <= k->hi)) return zero__range_fail(p, k, key, node, d);
        zero__put_f64(p->cfg, k->offset, d);
        return ZERO_OK;
    }
    case ZERO__K_ENUM: {
        char s[64], list[256];
        size_t n;
        int e = -1;
        if (v->type != ZERO__JSON_STRING) {
            zero__enum_list(k->choices, list, sizeof list);
            return zero__pfail(p, ZERO_MSG_CONFIG_TYPE, key, node, "expected %s, got %s", list,
                               zero__json_type_name(v->type));
        }
        n = zero__json_string(j, node, s, sizeof s);
        if (n < sizeof s) e = zero__enum_match(k->choices, s, n, (k->flags & ZERO__F_NOCASE) != 0);
        if (e < 0) {
            static const char *const ds_optimizers[] = {"lamb", "onebitadam", "zerooneadam", "onebitlamb", "adagrad",
                                                        "lion", "muadam", "muadamw", "musgd", "muon", "sgd"};
            size_t q;
            zero__preview(p, node, pv, sizeof pv);
            if (k->offset == ZERO__OFF(optimizer.type) && n < sizeof s) {
                for (q = 0; q < sizeof ds_optimizers / sizeof ds_optimizers[0]; q++)
                    if (strlen(ds_optimizers[q]) == n) {
                        size_t c;
                        int same = 1;
                        for (c = 0; c < n; c++)
                            same &= tolower((unsigned char)s[c]) == ds_optimizers[q][c];
                        if (same)
                            return zero__pfail(p, ZERO_MSG_CONFIG_UNSUPPORTED, key, node,
                                               "%s is not supported: zero implements Adam and AdamW", pv);
                    }
            }
            zero__enum_list(k->choices, list, sizeof list);
            return zero__pfail(p, ZERO_MSG_CONFIG_ENUM, key, node, "expected %s, got %s", list, pv);
        }
        zero__put_int(p->cfg, k->offset, e);
        return ZERO_OK;
    }
    case ZERO__K_STRING: {
        char *dst = (char *)p->cfg + k->offset;
        size_t n;
        if (v->type != ZERO__JSON_STRING)
            return zero__pfail(p, ZERO_MSG_CONFIG_TYPE, key, node, "expected a string, got %s",
                               zero__json_type_name(v->type));
        n = zero__json_string(j, node, dst, ZERO_PATH_MAX);
        if (n >= ZERO_PATH_MAX) {
            dst[0] = 0;
            return zero__pfail(p, ZERO_MSG_CONFIG_RANGE, key, node, "longer than %d bytes", ZERO_PATH_MAX - 1);
        }
        if (strlen(dst) != n) {
            dst[0] = 0;
            return zero__pfail(p, ZERO_MSG_CONFIG_TYPE, key, node, "contains a NUL character");
        }
        return ZERO_OK;
    }
    case ZERO__K_BETAS: {
        double b[2];
        int e, c;
        if (v->type != ZERO__JSON_ARRAY)
            return zero__pfail(p, ZERO_MSG_CONFIG_TYPE, key, node, "expected [beta1, beta2], got %s",
                               zero__json_type_name(v->type));
        if (v->count != 2)
            return zero__pfail(p, ZERO_MSG_CONFIG_LIST_LENGTH, key, node, "expected 2 values [beta1, beta2], got %d",
                               v->count);
        for (c = 0, e = v->first; c < 2; c++, e = j->nodes[e].next) {
            char ekey[224];
            int64_t i;
            int is_int;
            snprintf(ekey, sizeof ekey, "%s[%d]", key, c);
            if ((r = zero__get_number(p, ekey, e, &b[c], &i, &is_int)) != ZERO_OK) return r;
            if (!(b[c] >= k->lo && b[c] <= k->hi))
                return zero__pfail(p, ZERO_MSG_CONFIG_RANGE, ekey, e, "must be in [0, 1), got %.17g", b[c]);
        }
        zero__put_f64(p->cfg, k->offset, b[0]);
        zero__put_f64(p->cfg, k->offset + sizeof(double), b[1]);
        return ZERO_OK;
    }
    default:
        return ZERO_OK;
    }
}

static zero_result zero__walk(zero__parse *p, const char *section, int obj);

/* Deprecated zero_optimization keys: remap, or refuse when the new key is there too. */
static zero_result zero__deprecated(zero__parse *p, const zero__key *k, const char *key, int obj, int node) {
    const char *name = zero__last_name(k->info.path);
    zero_zero_config *z = &p->cfg->zero_optimization;
    const char *repl;
    int b;
    zero_result r;
    if (strcmp(name, "cpu_offload") == 0) repl = "offload_optimizer";
    else if (strcmp(name, "cpu_offload_param") == 0) repl = "offload_param";
    else if (strcmp(name, "cpu_offload_use_pin_memory") == 0) repl = "offload_optimizer";
    else repl = "stage3_gather_16bit_weights_on_model_save";
    if (zero__json_get(p->j, obj, repl) >= 0 ||
        (repl[0] == 's' && zero__json_get(p->j, obj, "gather_16bit_weights_on_model_save") >= 0) ||
        (strcmp(name, "cpu_offload_use_pin_memory") == 0 && zero__json_get(p->j, obj, "offload_param") >= 0))
        return zero__pfail(p, ZERO_MSG_CONFIG_DEPRECATED_CONFLICT, key, node,
                           "deprecated key given together with its replacement zero_optimization.%s: keep only the new one",
                           repl);
    if ((r = zero__get_bool(p, key, node, &b)) != ZERO_OK) return r;
    zero__pwarn(p, ZERO_LOG_WARN, ZERO_MSG_CONFIG_DEPRECATED, key, node, "deprecated: use zero_optimization.%s%s",
                repl, strcmp(name, "cpu_offload_use_pin_memory") == 0 ? ".pin_memory (and offload_param's)" : "");
    if (strcmp(name, "cpu_offload") == 0) {
        if (b) z->offload_optimizer.device = ZERO_OFFLOAD_CPU;
    } else if (strcmp(name, "cpu_offload_param") == 0) {
        if (b) z->offload_param.device = ZERO_OFFLOAD_CPU;
    } else if (strcmp(name, "cpu_offload_use_pin_memory") == 0) {
        z->offload_optimizer.pin_memory = z->offload_param.pin_memory = b;
    } else {
        z->stage3_gather_16bit_weights_on_model_save = b;
    }
    return ZERO_OK;
}

/* The status rules, after a key's value is stored. */
static zero_result zero__status(zero__parse *p, const zero__key *k, const char *key, int node) {
    switch (k->info.status) {
    case ZERO_KEY_NOT_YET: {
        size_t n = strlen(key);
        (void)node;
        if (p->not_yet_len + n + 3 < sizeof p->not_yet) {
            if (p->not_yet_count) memcpy(p->not_yet + p->not_yet_len, ", ", 2), p->not_yet_len += 2;
            memcpy(p->not_yet + p->not_yet_len, key, n + 1);
            p->not_yet_len += n;
        } else {
            p->not_yet_dropped++;
        }
        p->not_yet_count++;
        return ZERO_OK;
    }
    case ZERO_KEY_NO_EFFECT:
        if (k->kind == ZERO__K_ANY || zero__key_differs(p->cfg, &p->defaults, k))
            zero__pwarn(p, ZERO_LOG_WARN, ZERO_MSG_CONFIG_NO_EFFECT, key, node, "has no effect in zero%s%s",
                        k->info.note[0] ? ": " : "", k->info.note);
        return ZERO_OK;
    case ZERO_KEY_REJECTED:
        if (k->kind != ZERO__K_ANY && zero__key_differs(p->cfg, &p->defaults, k)) {
            char pv[96];
            zero__preview(p, node, pv, sizeof pv);
            zero__key_copy(p->cfg, &p->defaults, k);
            return zero__pfail(p, ZERO_MSG_CONFIG_UNSUPPORTED, key, node, "%s is not supported (only %s): %s", pv,
                               k->info.ds_default, k->info.note);
        }
        return ZERO_OK;
    default:
        return ZERO_OK;
    }
}

static zero_result zero__member(zero__parse *p, const char *section, int obj, int node) {
    const zero__json *j = p->j;
    int kn = j->nodes[node].key;
    char name[128], key[200];
    size_t n = zero__json_string(j, kn, name, sizeof name);
    int via_alias = 0;
    const zero__key *k = (n < sizeof name) ? zero__key_find(section, name, n, &via_alias) : NULL;
    const zero__json_node *v = &j->nodes[node];
    zero_result r;

    if (n >= sizeof name) memcpy(name + sizeof name - 4, "...", 4);
    snprintf(key, sizeof key, "%s%s%s", section, section[0] ? "." : "", name);
    if (k && k->info.path[0] != 0 && strncmp(k->info.path, "scheduler.params.", 17) == 0 &&
        !(k->sched_mask & (1u << p->cfg->scheduler.type)))
        k = NULL; /* a parameter of another scheduler: DeepSpeed's constructor raises TypeError */

    if (!k) {
        const zero__key *sec = section[0] ? zero__key_by_path(section) : NULL;
        const char *hint = n < sizeof name ? zero__suggest(section, name, n) : NULL;
        int strict = sec && (sec->flags & ZERO__F_STRICT);
        if (strcmp(section, "scheduler.params") == 0) {
            char tname[32];
            zero__enum_name(zero__key_by_path("scheduler.type")->choices, (int)p->cfg->scheduler.type, tname,
                            sizeof tname);
            return zero__pfail(p, ZERO_MSG_CONFIG_UNKNOWN_KEY, key, kn, "not a parameter of scheduler %s%s%s%s", tname,
                               hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
        }
        if (strict)
            return zero__pfail(p, ZERO_MSG_CONFIG_UNKNOWN_KEY, key, kn, "unknown key%s%s%s", hint ? " (did you mean \"" : "",
                               hint ? hint : "", hint ? "\"?)" : "");
        zero__pwarn(p, ZERO_LOG_WARN, ZERO_MSG_CONFIG_UNKNOWN_KEY_IGNORED, key, kn, "unknown key, ignored%s%s%s",
                    hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
        return ZERO_OK;
    }
    snprintf(key, sizeof key, "%s", k->info.path);
    if (via_alias) {
        const char *primary = zero__last_name(k->info.path);
        if (zero__json_get(j, obj, primary) >= 0)
            return zero__pfail(p, ZERO_MSG_CONFIG_INCONSISTENT, key, kn, "given twice, as \"%s\" and as its alias \"%s\"",
                               primary, k->alias);
    }
    if (k->info.status == ZERO_KEY_DEPRECATED) return zero__deprecated(p, k, key, obj, node);

    if (zero__is_auto(p, node)) {
        switch (k->auto_rule) {
        case ZERO__AUTO_SUPPLY:
        case ZERO__AUTO_DERIVE:
            zero__key_set_auto(p->cfg, k);
            return zero__status(p, k, key, node);
        case ZERO__AUTO_DEFAULT:
            if (k->kind == ZERO__K_SECTION || k->kind == ZERO__K_ANY) return ZERO_OK;
            zero__key_copy(p->cfg, &p->defaults, k);
            zero__pwarn(p, ZERO_LOG_INFO, ZERO_MSG_CONFIG_AUTO_DEFAULT, key, node,
                        "\"auto\": DeepSpeed uses its default %s here", k->info.ds_default);
            return zero__status(p, k, key, node);
        default:
            return zero__pfail(p, ZERO_MSG_CONFIG_AUTO_NOT_ALLOWED, key, node,
                               "\"auto\" is not accepted here (neither DeepSpeed nor the HF integration resolves it); give a value");
        }
    }

    if (k->kind == ZERO__K_SECTION) {
        if (v->type == ZERO__JSON_NULL && (k->flags & ZERO__F_NULLABLE)) {
            /* "offload_param": null: no offload, every key of the block back to its default */
            int i;
            for (i = 0; i < ZERO__NKEYS; i++)
                if (strncmp(zero__keys[i].info.path, key, strlen(key)) == 0 &&
                    zero__keys[i].info.path[strlen(key)] == '.')
                    zero__key_copy(p->cfg, &p->defaults, &zero__keys[i]);
            return ZERO_OK;
        }
        if (v->type != ZERO__JSON_OBJECT) {
            if (strcmp(key, "zero_optimization") == 0 && (v->type == ZERO__JSON_TRUE || v->type == ZERO__JSON_FALSE)) {
                p->cfg->zero_optimization.stage = v->type == ZERO__JSON_TRUE;
                zero__pwarn(p, ZERO_LOG_WARN, ZERO_MSG_CONFIG_DEPRECATED, key, node,
                            "the legacy boolean form means stage %d; write {\"stage\": %d}",
                            p->cfg->zero_optimization.stage, p->cfg->zero_optimization.stage);
                return ZERO_OK;
            }
            return zero__pfail(p, ZERO_MSG_CONFIG_NOT_OBJECT, key, node, "expected an object, got %s",
                               zero__json_type_name(v->type));
        }
        return zero__walk(p, key, node);
    }
    if (k->kind == ZERO__K_ANY) {
        if (v->type == ZERO__JSON_NULL) return ZERO_OK;
        if (k->flags & ZERO__F_NULL_ONLY) {
            return zero__pfail(p, ZERO_MSG_CONFIG_UNSUPPORTED, key, node, "is not supported: %s", k->info.note);
        }
        if (k->flags & ZERO__F_ENABLED) {
            int en = 0, e = v->type == ZERO__JSON_OBJECT ? zero__json_get(j, node, "enabled") : -1;
            if (e >= 0 && (r = zero__get_bool(p, key, e, &en)) != ZERO_OK) return r;
            if (en)
                return zero__pfail(p, ZERO_MSG_CONFIG_UNSUPPORTED, key, e, "is not supported: %s", k->info.note);
            return ZERO_OK;
        }
        return zero__status(p, k, key, node);
    }
    if ((r = zero__set_leaf(p, k, key, node)) != ZERO_OK) return r;
    if (k->offset == ZERO__OFF(fp16.enabled)) p->fp16_node = node;
    if (k->offset == ZERO__OFF(bf16.enabled)) p->bf16_node = node;
    return zero__status(p, k, key, node);
}

static zero_result zero__walk(zero__parse *p, const char *section, int obj) {
    const zero__json *j = p->j;
    int node;
    zero_result r;
    /* optimizer / scheduler: the type decides which params are valid, wherever it stands */
    if (strcmp(section, "optimizer") == 0 || strcmp(section, "scheduler") == 0) {
        int t = zero__json_get(j, obj, "type"), prm = zero__json_get(j, obj, "params");
        if (t >= 0 && (r = zero__member(p, section, obj, t)) != ZERO_OK) return r;
        if (t < 0 && strcmp(section, "scheduler") == 0 && prm >= 0 &&
            j->nodes[prm].type != ZERO__JSON_NULL)
            return zero__pfail(p, ZERO_MSG_CONFIG_REQUIRED, "scheduler.type", prm,
                               "scheduler.params given without scheduler.type");
    }
    for (node = j->nodes[obj].first; node >= 0; node = j->nodes[node].next) {
        int kn = j->nodes[node].key;
        if ((strcmp(section, "optimizer") == 0 || strcmp(section, "scheduler") == 0) &&
            zero__json_string_eq(j, kn, "type", 4))
            continue;
        if ((r = zero__member(p, section, obj, node)) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

ZERO__DEF zero_result zero_config_parse_json(zero_config *cfg, const char *text, size_t len, zero_error *err) {
    zero__json j;
    zero__parse p;
    zero_result r;
    if (!cfg || (!text && len))
        return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_config_parse_json", 0, 0, "cfg and text must not be NULL");
    memset(&j, 0, sizeof j);
    if ((r = zero__json_parse(&j, text ? text : "", len, err)) != ZERO_OK) return r;
    p.cfg = cfg;
    p.j = &j;
    p.err = err;
    p.defaults = zero_config_default();
    p.fp16_node = p.bf16_node = -1;
    p.not_yet[0] = 0;
    p.not_yet_len = 0;
    p.not_yet_count = p.not_yet_dropped = 0;
    if (j.nodes[0].type != ZERO__JSON_OBJECT) {
        r = zero__pfail(&p, ZERO_MSG_CONFIG_NOT_OBJECT, "config", 0, "a DeepSpeed config is a JSON object, got %s",
                        zero__json_type_name(j.nodes[0].type));
    } else if ((r = zero__walk(&p, "", 0)) == ZERO_OK && cfg->fp16.enabled == 1 && cfg->bf16.enabled == 1) {
        int at = p.bf16_node > p.fp16_node ? p.bf16_node : p.fp16_node;
        r = zero__pfail(&p, ZERO_MSG_CONFIG_FP16_AND_BF16, at == p.bf16_node ? "bf16.enabled" : "fp16.enabled", at,
                        "fp16 and bf16 are both enabled; enable one");
    }
    if (r == ZERO_OK) {
        cfg->resolved = 0;
        if (p.not_yet_count)
            zero__log(&cfg->log, ZERO_LOG_WARN, ZERO_MSG_CONFIG_NOT_IMPLEMENTED,
                      "%d key%s accepted and checked, not acted on yet (docs/config.md has each key's status): %s%s",
                      p.not_yet_count, p.not_yet_count == 1 ? "" : "s", p.not_yet, p.not_yet_dropped ? ", ..." : "");
        zero__ok(err);
    }
    zero__json_free(&j);
    return r;
}

#define ZERO__CONFIG_MAX_BYTES ((long)256 << 20)

ZERO__DEF zero_result zero_config_load(zero_config *cfg, const char *path, zero_error *err) {
    FILE *f;
    struct stat st;
    long size;
    char *buf;
    size_t got;
    zero_result r;
    if (!cfg || !path) return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_config_load", 0, 0, "cfg and path must not be NULL");
    f = fopen(path, "rb");
    if (!f) return zero__fail(err, ZERO_MSG_FILE_OPEN, path, 0, 0, "cannot open the config: %s", strerror(errno));
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return zero__fail(err, ZERO_MSG_FILE_READ, path, 0, 0, "not a regular file");
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        int e = errno;
        fclose(f);
        return zero__fail(err, ZERO_MSG_FILE_READ, path, 0, 0, "cannot read the config (is it a regular file?): %s",
                          strerror(e));
    }
    if (size > ZERO__CONFIG_MAX_BYTES) {
        fclose(f);
        return zero__fail(err, ZERO_MSG_JSON_TOO_LARGE, path, 0, 0, "%ld bytes; a config may have at most %ld", size,
                          ZERO__CONFIG_MAX_BYTES);
    }
    buf = (char *)ZERO_MALLOC((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, path, 0, 0, "cannot allocate %ld bytes", size + 1);
    }
    got = fread(buf, 1, (size_t)size, f);
    if (got != (size_t)size || ferror(f)) {
        int e = errno;
        ZERO_FREE(buf);
        fclose(f);
        return zero__fail(err, ZERO_MSG_FILE_READ, path, 0, 0, "short read (%zu of %ld bytes): %s", got, size,
                          strerror(e));
    }
    fclose(f);
    r = zero_config_parse_json(cfg, buf, (size_t)size, err);
    ZERO_FREE(buf);
    if (r != ZERO_OK && err) { /* name the file first: "ds_config.json: key: why (line L:C)" */
        size_t pl = strlen(path), ml = strlen(err->msg);
        if (pl + 3 < sizeof err->msg) {
            if (ml > sizeof err->msg - pl - 3) ml = sizeof err->msg - pl - 3;
            memmove(err->msg + pl + 2, err->msg, ml);
            memcpy(err->msg, path, pl);
            err->msg[pl] = ':';
            err->msg[pl + 1] = ' ';
            err->msg[pl + 2 + ml] = 0;
        }
    }
    return r;
}

/* ---- config: resolve ---- */

/* The first key still "auto", or NULL; *others counts the rest. */
static const zero__key *zero__first_auto(const zero_config *c, int *others) {
    const zero__key *first = NULL;
    int i;
    *others = 0;
    for (i = 0; i < ZERO__NKEYS; i++) {
        if (!zero__key_is_auto(c, &zero__keys[i])) continue;
        if (!first) first = &zero__keys[i];
        else (*others)++;
    }
    return first;
}

static zero_result zero__resolve_batch(zero_config *c, int world, zero_error *err) {
    int64_t tbs = c->train_batch_size > 0 ? c->train_batch_size : 0;
    int64_t mbs = c->train_micro_batch_size_per_gpu > 0 ? c->train_micro_batch_size_per_gpu : 0;
    int64_t gas = c->gradient_accumulation_steps > 0 ? c->gradient_accumulation_steps : 0;
    int any_auto = c->train_batch_size == ZERO_AUTO || c->train_micro_batch_size_per_gpu == ZERO_AUTO ||
                   c->gradient_accumulation_steps == ZERO_AUTO;
    /* DeepSpeed's _set_batch_related_parameters, floor divisions included */
    if (tbs && mbs && gas) {
    } else if (tbs && mbs) {
        gas = (tbs / mbs) / world;
    } else if (tbs && gas) {
        mbs = (tbs / world) / gas;
    } else if (mbs && gas) {
        tbs = (double)mbs * gas * world < 9e18 ? mbs * gas * world : -1;
    } else if (tbs) {
        gas = 1;
        mbs = tbs / world;
    } else if (mbs) {
        gas = 1;
        tbs = (double)mbs * world < 9e18 ? mbs * world : -1;
    } else {
        return zero__fail(err, ZERO_MSG_CONFIG_BATCH_MISSING, "train_batch_size", 0, 0,
                          "either train_batch_size or train_micro_batch_size_per_gpu must be given%s\n"
                          "HINT: set cfg.train_micro_batch_size_per_gpu (and cfg.gradient_accumulation_steps) before "
                          "zero_config_resolve; the HF Trainer fills them from per_device_train_batch_size",
                          any_auto ? " (they are \"auto\")" : "");
    }
    if (tbs <= 0 || mbs <= 0 || gas <= 0 || (double)mbs * gas * world != (double)tbs)
        return zero__fail(err, ZERO_MSG_CONFIG_BATCH_MISMATCH, "train_batch_size", 0, 0,
                          "train_batch_size %lld != train_micro_batch_size_per_gpu %lld x gradient_accumulation_steps "
                          "%lld x world_size %d (each must be > 0, and the product must be exact)",
                          (long long)tbs, (long long)mbs, (long long)gas, world);
    c->train_batch_size = tbs;
    c->train_micro_batch_size_per_gpu = mbs;
    c->gradient_accumulation_steps = gas;
    return ZERO_OK;
}

static zero_result zero__resolve_check_offload(zero_config *c, const zero_offload_config *o, const char *name,
                                               zero_error *err) {
    if (o->device == ZERO_OFFLOAD_NVME && o->nvme_path[0] == 0)
        return zero__fail(err, ZERO_MSG_CONFIG_REQUIRED, name, 0, 0,
                          "device is \"nvme\" but nvme_path is not set\nHINT: set %s.nvme_path to a directory on the NVMe drive",
                          name);
    (void)c;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_config_resolve(zero_config *cfg, int world_size, zero_error *err) {
    zero_config c;
    zero_zero_config *z;
    zero_scheduler_config *s;
    const zero__key *k;
    int others, stage, half;
    zero_result r;
    if (!cfg) return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_config_resolve", 0, 0, "cfg must not be NULL");
    if (world_size < 1)
        return zero__fail(err, ZERO_MSG_BAD_ARG, "world_size", 0, 0, "must be >= 1, got %d", world_size);
    c = *cfg; /* work on a copy: on error *cfg is untouched */
    z = &c.zero_optimization;
    s = &c.scheduler;
    stage = z->stage;

    /* 1. "auto" with a rule */
    if (c.hidden_size > 0) {
        int64_t h = c.hidden_size;
        if (z->reduce_bucket_size == ZERO_AUTO) z->reduce_bucket_size = h * h;
        if (z->stage3_prefetch_bucket_size == ZERO_AUTO) z->stage3_prefetch_bucket_size = (int64_t)(0.9 * (double)h * (double)h);
        if (z->stage3_param_persistence_threshold == ZERO_AUTO) z->stage3_param_persistence_threshold = 10 * h;
    } else if (stage != 3) { /* HF fills the stage3_* keys only for stage 3; DeepSpeed then drops "auto" */
        if (z->stage3_prefetch_bucket_size == ZERO_AUTO) z->stage3_prefetch_bucket_size = 50000000;
        if (z->stage3_param_persistence_threshold == ZERO_AUTO) z->stage3_param_persistence_threshold = 100000;
    }
    if (z->stage3_gather_16bit_weights_on_model_save == ZERO_AUTO) z->stage3_gather_16bit_weights_on_model_save = 0;
    if (s->warmup_min_lr == ZERO_AUTO) s->warmup_min_lr = 0;
    if (s->warmup_max_lr == ZERO_AUTO) s->warmup_max_lr = c.optimizer.lr; /* HF: learning_rate (checked below if still auto) */
    if ((r = zero__resolve_batch(&c, world_size, err)) != ZERO_OK) return r;

    /* 2. "auto" that only the program can answer */
    if ((k = zero__first_auto(&c, &others)) != NULL) {
        if (k->offset == ZERO__OFF(zero_optimization.reduce_bucket_size) ||
            k->offset == ZERO__OFF(zero_optimization.stage3_prefetch_bucket_size) ||
            k->offset == ZERO__OFF(zero_optimization.stage3_param_persistence_threshold))
            return zero__fail(err, ZERO_MSG_CONFIG_AUTO_UNRESOLVED, k->info.path, 0, 0,
                              "is \"auto\" and cfg.hidden_size is not set%s\nHINT: set cfg.hidden_size to the model's "
                              "hidden size (zero then derives it as the HF integration does), or set %s",
                              others ? " (more keys are \"auto\" too)" : "", k->field);
        return zero__fail(err, ZERO_MSG_CONFIG_AUTO_UNRESOLVED, k->info.path, 0, 0,
                          "is still \"auto\"%s\nHINT: set %s before zero_config_resolve (%s)",
                          others ? " (and more keys after it)" : "", k->field, k->info.note);
    }

    /* 3. DeepSpeed's None defaults */
    half = c.fp16.enabled == 1 ? ZERO_DTYPE_FP16 : c.bf16.enabled == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    if (z->overlap_comm == ZERO_UNSET) z->overlap_comm = stage == 3;
    if (c.communication_data_type == ZERO_DTYPE_DEFAULT) c.communication_data_type = (zero_dtype)half;
    if (c.grad_accum_dtype == ZERO_DTYPE_DEFAULT) c.grad_accum_dtype = (zero_dtype)half;
    if (s->type == ZERO_SCHEDULER_WARMUP_LR && s->warmup_max_lr == ZERO_UNSET) s->warmup_max_lr = c.optimizer.lr;
    if (s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR && s->warmup_max_lr == ZERO_UNSET) s->warmup_max_lr = 1e-3;
    if (s->type == ZERO_SCHEDULER_ONE_CYCLE) {
        if (s->cycle_second_step_size == ZERO_UNSET) s->cycle_second_step_size = s->cycle_first_step_size;
        if (s->cycle_second_stair_count == ZERO_UNSET) s->cycle_second_stair_count = s->cycle_first_stair_count;
    }

    /* 4. the whole config */
    if (c.fp16.enabled == 1 && c.bf16.enabled == 1)
        return zero__fail(err, ZERO_MSG_CONFIG_FP16_AND_BF16, "bf16.enabled", 0, 0, "fp16 and bf16 are both enabled; enable one");
    if (c.fp16.enabled == 1 && c.fp16.loss_scale == 0) {
        if (c.fp16.loss_scale_window < 1)
            return zero__fail(err, ZERO_MSG_CONFIG_RANGE, "fp16.loss_scale_window", 0, 0,
                              "must be > 0 with dynamic loss scaling, got %lld", (long long)c.fp16.loss_scale_window);
        if (!(c.fp16.min_loss_scale > 0))
            return zero__fail(err, ZERO_MSG_CONFIG_RANGE, "fp16.min_loss_scale", 0, 0,
                              "must be > 0 with dynamic loss scaling, got %g", c.fp16.min_loss_scale);
    }
    if ((s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR || s->type == ZERO_SCHEDULER_WARMUP_COSINE_LR) &&
        s->total_num_steps == ZERO_UNSET)
        return zero__fail(err, ZERO_MSG_CONFIG_REQUIRED, "scheduler.params.total_num_steps", 0, 0,
                          "is required by %s", s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR ? "WarmupDecayLR" : "WarmupCosineLR");
    if (s->type == ZERO_SCHEDULER_ONE_CYCLE && (s->cycle_min_lr == ZERO_UNSET || s->cycle_max_lr == ZERO_UNSET))
        return zero__fail(err, ZERO_MSG_CONFIG_REQUIRED,
                          s->cycle_min_lr == ZERO_UNSET ? "scheduler.params.cycle_min_lr" : "scheduler.params.cycle_max_lr",
                          0, 0, "is required by OneCycle");
    if (s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR && s->total_num_steps < s->warmup_num_steps)
        zero__log(&c.log, ZERO_LOG_WARN, ZERO_MSG_CONFIG_SCHED_WARNING,
                  "scheduler.params.total_num_steps %lld is less than warmup_num_steps %lld", (long long)s->total_num_steps,
                  (long long)s->warmup_num_steps);
    if ((r = zero__resolve_check_offload(&c, &z->offload_optimizer, "zero_optimization.offload_optimizer", err)) != ZERO_OK ||
        (r = zero__resolve_check_offload(&c, &z->offload_param, "zero_optimization.offload_param", err)) != ZERO_OK)
        return r;
    if (z->offload_optimizer.device != ZERO_OFFLOAD_NONE && stage == 0)
        return zero__fail(err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer", 0, 0,
                          "optimizer offload needs ZeRO: set zero_optimization.stage to 1, 2 or 3");
    if (z->offload_optimizer.ratio < 1 && stage != 3)
        return zero__fail(err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer.ratio", 0, 0,
                          "a ratio below 1 (partial offload) needs stage 3, stage is %d", stage);
    if (z->offload_param.device != ZERO_OFFLOAD_NONE && stage != 3)
        zero__log(&c.log, ZERO_LOG_WARN, ZERO_MSG_CONFIG_STAGE_IGNORED,
                  "zero_optimization.offload_param: parameter offload needs stage 3; ignored at stage %d", stage);
    if (c.gradient_allreduce_op == ZERO_REDUCE_SUM && stage == 3)
        return zero__fail(err, ZERO_MSG_CONFIG_INCONSISTENT, "gradient_allreduce_op", 0, 0,
                          "\"sum\" is not allowed with stage 3 (as in DeepSpeed)");
    if (stage == 2 && z->reduce_scatter && (c.prescale_gradients || c.gradient_predivide_factor != 1.0))
        return zero__fail(err, ZERO_MSG_CONFIG_INCONSISTENT,
                          c.prescale_gradients ? "prescale_gradients" : "gradient_predivide_factor", 0, 0,
                          "stage 2 with reduce_scatter needs prescale_gradients false and gradient_predivide_factor 1 "
                          "(DeepSpeed asserts the same)");

    c.world_size = world_size;
    c.resolved = 1;
    *cfg = c;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- config: back to JSON ---- */

typedef struct zero__out {
    char *buf;
    size_t cap, len;
} zero__out;

static void zero__put(zero__out *o, const char *fmt, ...) ZERO__PRINTF(2, 3);
static void zero__put(zero__out *o, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(o->len < o->cap ? o->buf + o->len : NULL, o->len < o->cap ? o->cap - o->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

static void zero__put_string(zero__out *o, const char *s) {
    zero__put(o, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') zero__put(o, "\\%c", ch);
        else if (ch < 0x20) zero__put(o, "\\u%04x", ch);
        else zero__put(o, "%c", ch);
    }
    zero__put(o, "\"");
}

static void zero__put_double(zero__out *o, double d) {
    /* %.17g round-trips; locale-proof: swap a decimal comma back to '.' */
    char tmp[40], *c;
    snprintf(tmp, sizeof tmp, "%.17g", d);
    for (c = tmp; *c; c++)
        if (*c == ',') *c = '.';
    zero__put(o, "%s", tmp);
}

static int zero__key_emitted(const zero_config *c, const zero__key *k) {
    if (k->info.status == ZERO_KEY_DEPRECATED || k->kind == ZERO__K_ANY) return 0;
    if (strncmp(k->info.path, "scheduler", 9) == 0 && c->scheduler.type == ZERO_SCHEDULER_NONE) return 0;
    if (strncmp(k->info.path, "scheduler.params.", 17) == 0 && !(k->sched_mask & (1u << c->scheduler.type))) return 0;
    /* a required key not given (OneCycle's cycle_min_lr, ...) has no JSON spelling */
    if (!(k->flags & ZERO__F_NULLABLE) && k->lo >= 0 &&
        ((k->kind == ZERO__K_F64 && zero__get_f64(c, k->offset) == ZERO_UNSET) ||
         (k->kind == ZERO__K_I64 && zero__get_i64(c, k->offset) == ZERO_UNSET)))
        return 0;
    return k->kind != ZERO__K_SECTION;
}

ZERO__DEF size_t zero_config_to_json(const zero_config *cfg, char *buf, size_t cap) {
    zero__out o;
    char open[4][48]; /* the open sections, outermost first */
    int depth = 0, i, first[5] = {1, 1, 1, 1, 1};
    o.buf = buf;
    o.cap = cap;
    o.len = 0;
    if (!cfg) return 0;
    zero__put(&o, "{");
    for (i = 0; i < ZERO__NKEYS; i++) {
        const zero__key *k = &zero__keys[i];
        const char *path = k->info.path, *name;
        int d = 0, want = 0;
        const char *q;
        if (!zero__key_emitted(cfg, k)) continue;
        /* depth of the parent path, and how many open sections it shares */
        for (q = path; *q; q++) want += *q == '.';
        while (d < depth && d < want) {
            size_t n = strlen(open[d]);
            const char *start = path;
            int comp;
            for (comp = 0; comp < d; comp++) start = strchr(start, '.') + 1;
            if (strncmp(start, open[d], n) != 0 || start[n] != '.') break;
            d++;
        }
        for (; depth > d; depth--) zero__put(&o, "}");
        while (depth < want) {
            const char *start = path, *end;
            int comp;
            for (comp = 0; comp < depth; comp++) start = strchr(start, '.') + 1;
            end = strchr(start, '.');
            snprintf(open[depth], sizeof open[depth], "%.*s", (int)(end - start), start);
            zero__put(&o, "%s\"%s\":{", first[depth] ? "" : ",", open[depth]);
            first[depth] = 0;
            depth++;
            first[depth] = 1;
        }
        name = zero__last_name(path);
        zero__put(&o, "%s\"%s\":", first[depth] ? "" : ",", name);
        first[depth] = 0;
        if (zero__key_is_auto(cfg, k)) {
            zero__put(&o, "\"auto\"");
            continue;
        }
        switch (k->kind) {
        case ZERO__K_BOOL: {
            int v = zero__get_int(cfg, k->offset);
            if (v == ZERO_UNSET && (k->flags & ZERO__F_NULLABLE)) zero__put(&o, "null");
            else zero__put(&o, "%s", v ? "true" : "false");
            break;
        }
        case ZERO__K_INT: zero__put(&o, "%d", zero__get_int(cfg, k->offset)); break;
        case ZERO__K_I64: {
            int64_t v = zero__get_i64(cfg, k->offset);
            if ((k->flags & ZERO__F_NULLABLE) && (v == ZERO_UNSET || (v == 0 && k->lo >= 1))) zero__put(&o, "null");
            else zero__put(&o, "%lld", (long long)v);
            break;
        }
        case ZERO__K_F64: {
            double v = zero__get_f64(cfg, k->offset);
            if ((k->flags & ZERO__F_NULLABLE) && v == ZERO_UNSET) zero__put(&o, "null");
            else zero__put_double(&o, v);
            break;
        }
        case ZERO__K_ENUM: {
            char nm[48];
            zero__enum_name(k->choices, zero__get_int(cfg, k->offset), nm, sizeof nm);
            if (nm[0]) zero__put_string(&o, nm);
            else zero__put(&o, "null");
            break;
        }
        case ZERO__K_STRING: {
            const char *v = (const char *)cfg + k->offset;
            if (v[0] == 0 && (k->flags & ZERO__F_NULLABLE)) zero__put(&o, "null");
            else zero__put_string(&o, v);
            break;
        }
        case ZERO__K_BETAS:
            zero__put(&o, "[");
            zero__put_double(&o, zero__get_f64(cfg, k->offset));
            zero__put(&o, ",");
            zero__put_double(&o, zero__get_f64(cfg, k->offset + sizeof(double)));
            zero__put(&o, "]");
            break;
        default: break;
        }
    }
    for (; depth > 0; depth--) zero__put(&o, "}");
    zero__put(&o, "}");
    if (cap) buf[o.len < cap ? o.len : cap - 1] = 0;
    return o.len;
}
