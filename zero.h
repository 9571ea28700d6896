/* zero.h - ZeRO (the Zero Redundancy Optimizer) for C and CUDA training loops.

   Sharded optimizer state, gradients and parameters (ZeRO stages 1-3), CPU and
   NVMe offload and fp16 loss scaling for a training program written in C or
   CUDA, configured with the ds_config.json a DeepSpeed user already has.

   This is the core header: plain C11 (also valid C++), no CUDA, no NCCL.
   Companions: zero_offload.h (CPU side of offload) and zero_cuda.cuh (CUDA
   kernels and the NCCL backend); each must be included after this one.

   Do this:
       #define ZERO_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the
   implementation. Every other file includes it without the define.

       #include ...
       #define ZERO_IMPLEMENTATION
       #include "zero.h"

   Minimal use (what exists today: config, loss scaler, LR schedules, memory
   estimator; the engine of DESIGN.md section 5 follows):

       zero_error err;
       zero_config cfg = zero_config_default();
       if (zero_config_load(&cfg, "ds_config.json", &err) != ZERO_OK ||
           zero_config_resolve(&cfg, world_size, &err) != ZERO_OK) {
           fprintf(stderr, "%s\n", err.msg);
           return 1;
       }
       zero_loss_scaler scaler;
       zero_loss_scaler_init(&scaler, &cfg);
       double lr = zero_lr_at(&cfg, -1);        (the lr of optimizer step 1)

   Compile-time options (define before the #include that has
   ZERO_IMPLEMENTATION, unless said otherwise):
       ZERO_STATIC        make every function static (define wherever the
                          header is included; then each file gets its own copy)
       ZERO_ASSERT(x)     your assert (default: assert from <assert.h>)
       ZERO_MALLOC(n), ZERO_REALLOC(p, n), ZERO_FREE(p)
                          your allocator for the small host allocations of the
                          config parser (default: malloc, realloc, free)
       ZERO_JSON_MAX_DEPTH  nesting limit of the JSON parser (default 64)

   Conventions: every fallible function returns a zero_result (ZERO_OK == 0)
   and fills a zero_error (which may be NULL) whose msg says where and why.
   Counts are elements; sizes in bytes end in _bytes. Public names are zero_*,
   private ones zero__*.

   License: MIT, at the end of this file.
*/
#ifndef ZERO_H
#define ZERO_H

#include <stddef.h>
#include <stdint.h>

#define ZERO_VERSION_MAJOR 0
#define ZERO_VERSION_MINOR 1
#define ZERO_VERSION_PATCH 0

#ifndef ZERO_API
#  ifdef ZERO_STATIC
#    define ZERO_API static
#  else
#    define ZERO_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- results ---------------------------------------------------------- */

/* X(name, text): one list makes both the enum and zero_result_string(). */
#define ZERO_RESULT_LIST(X)                                                   \
    X(ZERO_OK, "ok")                                                          \
    X(ZERO_ERR_INVALID_ARG, "invalid argument")                               \
    X(ZERO_ERR_CONFIG, "invalid configuration")                               \
    X(ZERO_ERR_OUT_OF_MEMORY, "out of memory")                                \
    X(ZERO_ERR_IO, "input/output error")                                      \
    X(ZERO_ERR_CORRUPT, "corrupt data")                                       \
    X(ZERO_ERR_CUDA, "CUDA error")                                            \
    X(ZERO_ERR_NCCL, "NCCL error")                                            \
    X(ZERO_ERR_BOOTSTRAP, "bootstrap error")                                  \
    X(ZERO_ERR_TIMEOUT, "timed out")                                          \
    X(ZERO_ERR_STATE, "call not valid in this state")                        \
    X(ZERO_ERR_LOSS_SCALE, "loss scale already at minimum")                   \
    X(ZERO_ERR_UNSUPPORTED, "not supported")

typedef enum zero_result {
#define ZERO__X(name, text) name,
    ZERO_RESULT_LIST(ZERO__X)
#undef ZERO__X
    ZERO_RESULT_COUNT
} zero_result;

/* "ok", "invalid configuration", ...; "unknown result" outside the enum. */
ZERO_API const char *zero_result_string(zero_result r);

/* ---- message items ---------------------------------------------------- */

/* Every error and warning zero can report has an item id, so that programs
   and tests can tell them apart without matching text (sokol's log items).
   X(name, result, summary). */
#define ZERO_MSG_LIST(X)                                                                   \
    X(NONE, ZERO_OK, "no message")                                                         \
    X(NULL_ARG, ZERO_ERR_INVALID_ARG, "a required pointer argument is NULL")               \
    X(BAD_ARG, ZERO_ERR_INVALID_ARG, "an argument is out of range")                        \
    X(OUT_OF_MEMORY, ZERO_ERR_OUT_OF_MEMORY, "a host allocation failed")                   \
    X(FILE_OPEN, ZERO_ERR_IO, "a file could not be opened")                                \
    X(FILE_READ, ZERO_ERR_IO, "a file could not be read")                                  \
    X(ENV_INVALID, ZERO_OK, "environment variable with an invalid value ignored (warning)") \
    X(CUDA_CALL, ZERO_ERR_CUDA, "a CUDA runtime call failed")                              \
    X(CUDA_NO_DEVICE, ZERO_ERR_CUDA, "no usable CUDA device (driver, CUDA_VISIBLE_DEVICES)") \
    X(CUDA_OUT_OF_MEMORY, ZERO_ERR_CUDA, "a CUDA device allocation failed")                \
    X(NCCL_CALL, ZERO_ERR_NCCL, "an NCCL call failed")                                     \
    X(JSON_EMPTY, ZERO_ERR_CONFIG, "the JSON text is empty")                               \
    X(JSON_UNEXPECTED, ZERO_ERR_CONFIG, "unexpected character in JSON")                    \
    X(JSON_UNTERMINATED, ZERO_ERR_CONFIG, "JSON string, array, object or comment not closed") \
    X(JSON_CONTROL_CHAR, ZERO_ERR_CONFIG, "raw control character inside a JSON string")    \
    X(JSON_BAD_ESCAPE, ZERO_ERR_CONFIG, "invalid escape in a JSON string")                 \
    X(JSON_BAD_UNICODE, ZERO_ERR_CONFIG, "invalid \\u escape or surrogate pair")           \
    X(JSON_BAD_UTF8, ZERO_ERR_CONFIG, "invalid UTF-8 in the JSON text")                    \
    X(JSON_BAD_NUMBER, ZERO_ERR_CONFIG, "malformed JSON number")                           \
    X(JSON_NUMBER_RANGE, ZERO_ERR_CONFIG, "JSON number out of the range of a double")      \
    X(JSON_TOO_DEEP, ZERO_ERR_CONFIG, "JSON nesting deeper than ZERO_JSON_MAX_DEPTH")       \
    X(JSON_TRAILING, ZERO_ERR_CONFIG, "text after the JSON value")                         \
    X(JSON_TOO_LARGE, ZERO_ERR_CONFIG, "JSON text larger than the parser accepts")         \
    X(JSON_DUPLICATE_KEY, ZERO_ERR_CONFIG, "duplicate key in a JSON object")               \
    X(CONFIG_NOT_OBJECT, ZERO_ERR_CONFIG, "expected a JSON object")                        \
    X(CONFIG_UNKNOWN_KEY, ZERO_ERR_CONFIG, "unknown key in a strict section")              \
    X(CONFIG_UNKNOWN_KEY_IGNORED, ZERO_OK, "unknown key ignored (warning)")                \
    X(CONFIG_TYPE, ZERO_ERR_CONFIG, "value of the wrong JSON type")                        \
    X(CONFIG_NOT_INTEGER, ZERO_ERR_CONFIG, "number with a fraction where an integer is expected") \
    X(CONFIG_RANGE, ZERO_ERR_CONFIG, "value out of range")                                 \
    X(CONFIG_ENUM, ZERO_ERR_CONFIG, "value is not one of the accepted choices")            \
    X(CONFIG_LIST_LENGTH, ZERO_ERR_CONFIG, "list of the wrong length")                     \
    X(CONFIG_AUTO_NOT_ALLOWED, ZERO_ERR_CONFIG, "\"auto\" where DeepSpeed never accepts it") \
    X(CONFIG_AUTO_UNRESOLVED, ZERO_ERR_CONFIG, "\"auto\" still unresolved")                \
    X(CONFIG_AUTO_DEFAULT, ZERO_OK, "\"auto\" replaced by DeepSpeed's default (info)")      \
    X(CONFIG_DEPRECATED, ZERO_OK, "deprecated key remapped (warning)")                     \
    X(CONFIG_DEPRECATED_CONFLICT, ZERO_ERR_CONFIG, "deprecated key given with its replacement") \
    X(CONFIG_NOT_IMPLEMENTED, ZERO_OK, "key accepted but not implemented yet (warning)")   \
    X(CONFIG_NO_EFFECT, ZERO_OK, "key accepted, no effect in zero (warning)")              \
    X(CONFIG_UNSUPPORTED, ZERO_ERR_CONFIG, "value zero does not support")                  \
    X(CONFIG_FP16_AND_BF16, ZERO_ERR_CONFIG, "fp16 and bf16 both enabled")                 \
    X(CONFIG_REQUIRED, ZERO_ERR_CONFIG, "a required key is missing")                       \
    X(CONFIG_BATCH_MISSING, ZERO_ERR_CONFIG, "neither train_batch_size nor train_micro_batch_size_per_gpu") \
    X(CONFIG_BATCH_MISMATCH, ZERO_ERR_CONFIG, "batch sizes do not satisfy TBS = MBS x GAS x world") \
    X(CONFIG_INCONSISTENT, ZERO_ERR_CONFIG, "keys that contradict each other")              \
    X(CONFIG_STAGE_IGNORED, ZERO_OK, "key has no effect at this stage (warning)")          \
    X(CONFIG_SCHED_WARNING, ZERO_OK, "scheduler parameters DeepSpeed warns about")          \
    X(LOSS_SCALE_AT_MIN, ZERO_ERR_LOSS_SCALE, "overflow with the loss scale already at its minimum") \
    X(LOSS_SCALER_UNRESOLVED, ZERO_ERR_STATE, "loss scaler made from an unresolved config") \
    X(ESTIMATE_ARGS, ZERO_ERR_INVALID_ARG, "memory estimator arguments out of range")

typedef enum zero_msg {
#define ZERO__X(name, result, text) ZERO_MSG_##name,
    ZERO_MSG_LIST(ZERO__X)
#undef ZERO__X
    ZERO_MSG_COUNT
} zero_msg;

/* "CONFIG_UNKNOWN_KEY", ...: the item's name without the ZERO_MSG_ prefix. */
ZERO_API const char *zero_msg_name(zero_msg m);
/* The one-line summary of the list above. */
ZERO_API const char *zero_msg_summary(zero_msg m);

/* ---- errors ----------------------------------------------------------- */

/* Filled by every function that takes one (the pointer may be NULL).
   msg is one or more lines: where ("zero_optimization.stage", a file, a
   tensor), why, the position in a config text, and a "HINT:" line where one
   helps. Config errors read like
     zero_optimization.offload_optimizer.device: expected "cpu", "nvme" or "none", got "gpu" (line 7:17) */
typedef struct zero_error {
    zero_result code;   /* == the function's return value */
    zero_msg item;      /* which message (ZERO_MSG_NONE when code == ZERO_OK) */
    int line, column;   /* 1-based position in the config text; 0 when none */
    char key[128];      /* key path such as "fp16.loss_scale_window"; "" when none */
    char msg[1024];
} zero_error;

/* ---- logging ---------------------------------------------------------- */

typedef enum zero_log_level {
    ZERO_LOG_DEBUG,
    ZERO_LOG_INFO,
    ZERO_LOG_WARN,
    ZERO_LOG_ERROR,
    ZERO_LOG_LEVEL_COUNT
} zero_log_level;

/* rank: the caller's rank (0 when not known). text: one message, no newline. */
typedef void (*zero_log_fn)(void *user, zero_log_level level, zero_msg item, int rank,
                            const char *text);

typedef struct zero_logger {
    zero_log_fn fn;        /* NULL: zero_log_default */
    void *user;            /* passed back to fn */
    zero_log_level level;  /* messages below this level are dropped; default INFO */
    int rank;              /* < 0: from the launcher's environment (RANK, SLURM_PROCID,
                              OMPI_COMM_WORLD_RANK), else 0 */
} zero_logger;

/* The default sink: stderr, "[zero][rank R] warning: text". Info and debug
   lines on rank 0 only; warnings and errors on every rank. */
ZERO_API void zero_log_default(void *user, zero_log_level level, zero_msg item, int rank,
                               const char *text);

/* ---- config ----------------------------------------------------------- */

/* Sentinels for fields that DeepSpeed's JSON may leave open.
   ZERO_AUTO: the value was "auto" (as HF Transformers / Accelerate configs
   write it). The program sets the field itself, or zero_config_resolve
   derives it; one still "auto" after resolve is an error naming the key.
   ZERO_UNSET: not given where DeepSpeed's default is None.
   Both are exact in int, int64_t and double, so `x == ZERO_AUTO` works for
   every field; no field accepts them as real values. */
#define ZERO_AUTO (-2)
#define ZERO_UNSET (-1)

typedef enum zero_dtype {
    ZERO_DTYPE_DEFAULT, /* DeepSpeed's None: follows fp16/bf16 */
    ZERO_DTYPE_FP32,
    ZERO_DTYPE_FP16,
    ZERO_DTYPE_BF16,
    ZERO_DTYPE_COUNT
} zero_dtype;

typedef enum zero_offload_device {
    ZERO_OFFLOAD_NONE,
    ZERO_OFFLOAD_CPU,
    ZERO_OFFLOAD_NVME,
    ZERO_OFFLOAD_COUNT
} zero_offload_device;

typedef enum zero_optimizer_type {
    ZERO_OPTIMIZER_ADAM,  /* "Adam": decoupled decay unless adam_w_mode is false */
    ZERO_OPTIMIZER_ADAMW, /* "AdamW" */
    ZERO_OPTIMIZER_COUNT
} zero_optimizer_type;

typedef enum zero_scheduler_type {
    ZERO_SCHEDULER_NONE, /* constant lr = optimizer.params.lr */
    ZERO_SCHEDULER_WARMUP_LR,
    ZERO_SCHEDULER_WARMUP_DECAY_LR,
    ZERO_SCHEDULER_WARMUP_COSINE_LR,
    ZERO_SCHEDULER_ONE_CYCLE,
    ZERO_SCHEDULER_LR_RANGE_TEST,
    ZERO_SCHEDULER_COUNT
} zero_scheduler_type;

typedef enum zero_warmup_type {
    ZERO_WARMUP_LOG,
    ZERO_WARMUP_LINEAR,
    ZERO_WARMUP_COUNT
} zero_warmup_type;

typedef enum zero_reduce_op {
    ZERO_REDUCE_MEAN,
    ZERO_REDUCE_SUM,
    ZERO_REDUCE_COUNT
} zero_reduce_op;

typedef enum zero_tag_validation {
    ZERO_TAG_VALIDATION_WARN,
    ZERO_TAG_VALIDATION_IGNORE,
    ZERO_TAG_VALIDATION_FAIL,
    ZERO_TAG_VALIDATION_COUNT
} zero_tag_validation;

#define ZERO_PATH_MAX 512

/* Every field carries its DeepSpeed key and default (DeepSpeed 0.19, "NEW" in
   ../shared/reference/deepspeed.md). docs/config.md has the full table with
   each key's status in zero. Booleans are ints (0/1). */

/* "fp16": {...} */
typedef struct zero_fp16_config {
    int enabled;                        /* enabled: false (ZERO_AUTO allowed) */
    int auto_cast;                      /* auto_cast: false */
    double loss_scale;                  /* loss_scale: 0 = dynamic, > 0 = static scale */
    int initial_scale_power;            /* initial_scale_power: 16 (S0 = 2^power) */
    int64_t loss_scale_window;          /* loss_scale_window: 1000 */
    int hysteresis;                     /* hysteresis: 2 */
    int consecutive_hysteresis;         /* consecutive_hysteresis: false */
    double min_loss_scale;              /* min_loss_scale: 1 */
    int fp16_master_weights_and_grads;  /* fp16_master_weights_and_grads: false */
} zero_fp16_config;

/* "bf16": {...} (alias "bfloat16") */
typedef struct zero_bf16_config {
    int enabled;                        /* enabled: false (ZERO_AUTO allowed) */
    int immediate_grad_update;          /* immediate_grad_update: false */
    int check_grad_overflow;            /* check_grad_overflow: true */
    int bf16_master_weights_and_grads;  /* bf16_master_weights_and_grads: false */
    int bf16_optimizer_states;          /* bf16_optimizer_states: false */
} zero_bf16_config;

/* "optimizer": {"type": ..., "params": {...}} */
typedef struct zero_optimizer_config {
    zero_optimizer_type type;  /* type: "Adam" when the block is absent */
    double lr;                 /* params.lr: 1e-3 (ZERO_AUTO allowed) */
    double beta1, beta2;       /* params.betas: [0.9, 0.999] (ZERO_AUTO allowed) */
    double eps;                /* params.eps: 1e-8 (ZERO_AUTO allowed) */
    double weight_decay;       /* params.weight_decay: 0 (ZERO_AUTO allowed) */
    int bias_correction;       /* params.bias_correction: true */
    int adam_w_mode;           /* params.adam_w_mode: true */
    int torch_adam;            /* params.torch_adam: false */
    int amsgrad;               /* params.amsgrad: false (true is rejected) */
} zero_optimizer_config;

/* "scheduler": {"type": ..., "params": {...}}; one struct for all five. */
typedef struct zero_scheduler_config {
    zero_scheduler_type type;        /* type: none */
    int64_t last_batch_iteration;    /* params.last_batch_iteration: -1 */
    /* WarmupLR, WarmupDecayLR */
    double warmup_min_lr;            /* warmup_min_lr: 0 (ZERO_AUTO allowed) */
    double warmup_max_lr;            /* warmup_max_lr: ZERO_UNSET = optimizer lr (ZERO_AUTO allowed) */
    /* WarmupLR, WarmupDecayLR, WarmupCosineLR */
    int64_t warmup_num_steps;        /* warmup_num_steps: 1000 (ZERO_AUTO allowed) */
    zero_warmup_type warmup_type;    /* warmup_type: "log" */
    int64_t total_num_steps;         /* total_num_steps: required for Decay/Cosine (ZERO_AUTO allowed) */
    /* WarmupCosineLR */
    double warmup_min_ratio;         /* warmup_min_ratio: 0 */
    double cos_min_ratio;            /* cos_min_ratio: 1e-4 */
    /* OneCycle */
    double cycle_min_lr;             /* cycle_min_lr: required */
    double cycle_max_lr;             /* cycle_max_lr: required */
    double decay_lr_rate;            /* decay_lr_rate: 0 */
    int64_t cycle_first_step_size;   /* cycle_first_step_size: 2000 */
    int64_t cycle_second_step_size;  /* cycle_second_step_size: ZERO_UNSET = first */
    int64_t cycle_first_stair_count; /* cycle_first_stair_count: 0 */
    int64_t cycle_second_stair_count;/* cycle_second_stair_count: ZERO_UNSET = first */
    int64_t decay_step_size;         /* decay_step_size: 0 */
    int cycle_momentum;              /* cycle_momentum: true */
    double cycle_min_mom;            /* cycle_min_mom: 0.8 */
    double cycle_max_mom;            /* cycle_max_mom: 0.9 */
    double decay_mom_rate;           /* decay_mom_rate: 0 */
    /* LRRangeTest */
    double lr_range_test_min_lr;     /* lr_range_test_min_lr: 1e-3 */
    int64_t lr_range_test_step_size; /* lr_range_test_step_size: 2000 */
    double lr_range_test_step_rate;  /* lr_range_test_step_rate: 1.0 */
    int lr_range_test_staircase;     /* lr_range_test_staircase: false */
} zero_scheduler_config;

/* "offload_optimizer" / "offload_param": {...} */
typedef struct zero_offload_config {
    zero_offload_device device;   /* device: "none" */
    char nvme_path[ZERO_PATH_MAX];/* nvme_path: "" (None) */
    int64_t buffer_count;         /* buffer_count: 4 (optimizer) / 5 (param) */
    int64_t buffer_size;          /* buffer_size: 1e8 (param only) */
    int64_t max_in_cpu;           /* max_in_cpu: 1e9 (param only) */
    int pin_memory;               /* pin_memory: true */
    int pipeline_read;            /* pipeline_read: false (optimizer only) */
    int pipeline_write;           /* pipeline_write: false (optimizer only) */
    int fast_init;                /* fast_init: false (optimizer only) */
    double ratio;                 /* ratio: 1.0 (optimizer only) */
    int super_offload;            /* super_offload: false (optimizer only) */
    double cpuadam_cores_perc;    /* cpuadam_cores_perc: 0.8 (optimizer only) */
} zero_offload_config;

/* "zero_optimization": {...} (or the legacy booleans true/false) */
typedef struct zero_zero_config {
    int stage;                                   /* stage: 0 */
    int contiguous_gradients;                    /* contiguous_gradients: true */
    int reduce_scatter;                          /* reduce_scatter: true */
    int64_t reduce_bucket_size;                  /* reduce_bucket_size: 5e8 (ZERO_AUTO allowed) */
    int use_multi_rank_bucket_allreduce;         /* use_multi_rank_bucket_allreduce: true */
    int allgather_partitions;                    /* allgather_partitions: true */
    int64_t allgather_bucket_size;               /* allgather_bucket_size: 5e8 */
    int overlap_comm;                            /* overlap_comm: ZERO_UNSET = (stage == 3) */
    int load_from_fp32_weights;                  /* load_from_fp32_weights: true */
    int elastic_checkpoint;                      /* elastic_checkpoint: false */
    zero_offload_config offload_param;           /* offload_param */
    zero_offload_config offload_optimizer;       /* offload_optimizer */
    int64_t sub_group_size;                      /* sub_group_size: 1e9 */
    int64_t stage3_prefetch_bucket_size;         /* stage3_prefetch_bucket_size: 5e7 (ZERO_AUTO allowed) */
    int64_t stage3_param_persistence_threshold;  /* stage3_param_persistence_threshold: 1e5 (ZERO_AUTO allowed) */
    int64_t stage3_model_persistence_threshold;  /* stage3_model_persistence_threshold: INT64_MAX */
    int64_t stage3_max_live_parameters;          /* stage3_max_live_parameters: 1e9 */
    int64_t stage3_max_reuse_distance;           /* stage3_max_reuse_distance: 1e9 */
    int stage3_gather_16bit_weights_on_model_save; /* stage3_gather_16bit_weights_on_model_save: false (ZERO_AUTO allowed) */
    int64_t stage3_module_granularity_threshold; /* stage3_module_granularity_threshold: 0 */
    int stage3_use_all_reduce_for_fetch_params;  /* stage3_use_all_reduce_for_fetch_params: false */
    int stage3_allgather_sequential;             /* stage3_allgather_sequential: false */
    int ignore_unused_parameters;                /* ignore_unused_parameters: true */
    int legacy_stage1;                           /* legacy_stage1: false (true is rejected) */
    int round_robin_gradients;                   /* round_robin_gradients: false */
    int64_t zero_hpz_partition_size;             /* zero_hpz_partition_size: 1 */
    int zero_quantized_weights;                  /* zero_quantized_weights: false */
    int zero_quantized_nontrainable_weights;     /* zero_quantized_nontrainable_weights: false */
    int zero_quantized_gradients;                /* zero_quantized_gradients: false */
    int64_t mics_shard_size;                     /* mics_shard_size: -1 */
    int mics_hierarchical_params_gather;         /* mics_hierarchical_params_gather: false */
    int memory_efficient_linear;                 /* memory_efficient_linear: true */
    int override_module_apply;                   /* override_module_apply: true */
    int pipeline_loading_checkpoint;             /* pipeline_loading_checkpoint: false */
    int log_trace_cache_warnings;                /* log_trace_cache_warnings: false */
    int enable_sanity_checks;                    /* enable_sanity_checks: false */
    int save_muon_momentum_buffer_in_memory;     /* save_muon_momentum_buffer_in_memory: false */
} zero_zero_config;

/* "aio": {...} (libaio settings of ZeRO-Infinity; zero uses POSIX I/O) */
typedef struct zero_aio_config {
    int64_t block_size;            /* block_size: 1048576 */
    int64_t queue_depth;           /* queue_depth: 8 */
    int64_t intra_op_parallelism;  /* intra_op_parallelism: 1 */
    int single_submit;             /* single_submit: false */
    int overlap_events;            /* overlap_events: true */
    int use_gds;                   /* use_gds: false */
} zero_aio_config;

typedef struct zero_config {
    /* batch triangle: TBS = MBS x GAS x world (zero_config_resolve) */
    int64_t train_batch_size;               /* train_batch_size: ZERO_UNSET (ZERO_AUTO allowed) */
    int64_t train_micro_batch_size_per_gpu; /* train_micro_batch_size_per_gpu: ZERO_UNSET (ZERO_AUTO allowed) */
    int64_t gradient_accumulation_steps;    /* gradient_accumulation_steps: ZERO_UNSET (ZERO_AUTO allowed) */
    int64_t steps_per_print;                /* steps_per_print: 0 = None (no progress print) */
    int wall_clock_breakdown;               /* wall_clock_breakdown: false */
    double gradient_clipping;               /* gradient_clipping: 1.0; 0 disables (ZERO_AUTO allowed) */
    int prescale_gradients;                 /* prescale_gradients: false */
    double gradient_predivide_factor;       /* gradient_predivide_factor: 1.0 */
    zero_dtype communication_data_type;     /* communication_data_type: None */
    zero_reduce_op gradient_allreduce_op;   /* gradient_allreduce_op: "mean" */
    int managed_gradient_accumulation;      /* managed_gradient_accumulation: true */
    int zero_allow_untested_optimizer;      /* zero_allow_untested_optimizer: false */
    int zero_force_ds_cpu_optimizer;        /* zero_force_ds_cpu_optimizer: true */
    int sparse_gradients;                   /* sparse_gradients: false */
    int dump_state;                         /* dump_state: false */
    int disable_allgather;                  /* disable_allgather: false */
    int memory_breakdown;                   /* memory_breakdown: false */
    zero_dtype grad_accum_dtype;            /* data_types.grad_accum_dtype: None */
    zero_tag_validation tag_validation;     /* checkpoint.tag_validation: "WARN" */
    int load_universal;                     /* checkpoint.load_universal: false */
    int use_node_local_storage;             /* checkpoint.use_node_local_storage: false */
    zero_aio_config aio;                    /* aio */
    zero_fp16_config fp16;                  /* fp16 */
    zero_bf16_config bf16;                  /* bf16 */
    zero_optimizer_config optimizer;        /* optimizer */
    zero_scheduler_config scheduler;        /* scheduler */
    zero_zero_config zero_optimization;     /* zero_optimization */

    /* ---- zero's own fields (not DeepSpeed keys) ---- */
    int64_t hidden_size;  /* model hidden size H for "auto" bucket sizes, as the HF
                             integration derives them: reduce_bucket_size = H*H,
                             stage3_prefetch_bucket_size = 0.9*H*H,
                             stage3_param_persistence_threshold = 10*H. 0 = unknown. */
    int world_size;       /* set by zero_config_resolve; 0 before */
    int resolved;         /* set by zero_config_resolve */
    zero_logger log;      /* where warnings and info go */
} zero_config;

/* DeepSpeed's defaults (NEW), nothing "auto", not resolved. */
ZERO_API zero_config zero_config_default(void);

/* Parse a DeepSpeed JSON config over *cfg: keys present in text overwrite
   the fields; absent keys keep what cfg holds (start from
   zero_config_default()). text need not be NUL-terminated. Strict like
   DeepSpeed: unknown keys inside fp16, bf16, zero_optimization, the offload
   blocks and optimizer/scheduler params are errors (with the nearest known
   key), unknown top-level keys are warnings; wrong types, out-of-range values,
   duplicate keys and fp16+bf16 are errors. On error *cfg may be partly
   written: keep a copy if you need the old one. Comments (// and / * * /,
   as DeepSpeed's hjson reader allows) are skipped. */
ZERO_API zero_result zero_config_parse_json(zero_config *cfg, const char *text, size_t len,
                                            zero_error *err);

/* zero_config_parse_json on the contents of a file; errors name the file. */
ZERO_API zero_result zero_config_load(zero_config *cfg, const char *path, zero_error *err);

/* Fill what is derived: "auto" values that have a rule (the batch triangle,
   bucket sizes from hidden_size, warmup_min_lr = 0, warmup_max_lr = lr,
   stage3_gather_16bit_weights_on_model_save = false), DeepSpeed's None
   defaults (overlap_comm, warmup_max_lr, communication_data_type, ...), then
   check the whole config. Any "auto" left is an error naming the key and the
   field to set. world_size is the data-parallel size. Idempotent. */
ZERO_API zero_result zero_config_resolve(zero_config *cfg, int world_size, zero_error *err);

/* Write the configuration as DeepSpeed JSON (every key, resolved values) into
   buf (NUL-terminated, truncated to cap). Returns the length it needs. */
ZERO_API size_t zero_config_to_json(const zero_config *cfg, char *buf, size_t cap);

/* ---- config key table (what docs/config.md is made from) --------------- */

typedef enum zero_key_status {
    ZERO_KEY_IMPLEMENTED,     /* zero does what DeepSpeed does with it */
    ZERO_KEY_NOT_YET,         /* accepted, behaviour arrives with a later issue; warns */
    ZERO_KEY_NO_EFFECT,       /* accepted, nothing to do in zero by design; warns if non-default */
    ZERO_KEY_REJECTED,        /* only DeepSpeed's default value is accepted */
    ZERO_KEY_DEPRECATED,      /* remapped to its replacement with a warning */
    ZERO_KEY_STATUS_COUNT
} zero_key_status;

typedef struct zero_key_info {
    const char *path;        /* "zero_optimization.offload_optimizer.device" */
    const char *type;        /* "bool", "int", "float", "string", "[float, float]", "object" */
    const char *ds_default;  /* DeepSpeed's default, as text */
    zero_key_status status;
    const char *meaning;     /* DeepSpeed's meaning, and zero's where it differs */
    const char *note;        /* zero's note: auto rule, status detail; may be "" */
} zero_key_info;

/* The i-th known key, i in [0, zero_config_key_count()). */
ZERO_API int zero_config_key_count(void);
ZERO_API const zero_key_info *zero_config_key(int i);

/* ---- dynamic loss scaler (DeepSpeed's DynamicLossScaler, NEW rule) ------ */

typedef struct zero_loss_scaler {
    double cur_scale;           /* S */
    double min_scale;           /* fp16.min_loss_scale */
    double scale_factor;        /* 2 (not a DeepSpeed key) */
    int64_t scale_window;       /* fp16.loss_scale_window */
    int delayed_shift;          /* fp16.hysteresis */
    int cur_hysteresis;
    int consecutive_hysteresis; /* fp16.consecutive_hysteresis */
    int64_t cur_iter;           /* optimizer steps seen, overflows included */
    int64_t last_overflow_iter; /* -1 before the first overflow */
    int dynamic;                /* fp16 with loss_scale == 0 */
    int zero_rules;             /* 1: ZeRO's DynamicLossScaler (stage >= 1): hysteresis, error at
                                   the minimum. 0: FP16_Optimizer (stage 0): no hysteresis, clamp. */
    int valid;                  /* 0 when made from a config with fp16.enabled still "auto" */
} zero_loss_scaler;

/* Static scale when fp16.loss_scale > 0, dynamic when 0, 1 for bf16 / fp32. */
ZERO_API void zero_loss_scaler_init(zero_loss_scaler *s, const zero_config *cfg);
/* Once per optimizer step, with that step's overflow flag (agreed by all
   ranks). ZERO_ERR_LOSS_SCALE when an overflow arrives at the minimum scale
   under ZeRO rules (the scaler is then left unchanged, as DeepSpeed raises). */
ZERO_API zero_result zero_loss_scaler_update(zero_loss_scaler *s, int overflow);
/* The scale S to multiply the loss by (NaN for an invalid scaler). */
ZERO_API double zero_loss_scaler_scale(const zero_loss_scaler *s);

/* ---- learning-rate schedules ------------------------------------------- */

/* DeepSpeed's f(it) for cfg->scheduler, `it` being the scheduler's
   last_batch_iteration (-1 before the first step). DeepSpeed steps the
   scheduler after each applied (not skipped) optimizer step, so optimizer
   step k (1-based, no overflow before it) trains with zero_lr_at(cfg, k - 2).
   Without a scheduler: optimizer.params.lr. NaN if a value it needs is still
   "auto". */
ZERO_API double zero_lr_at(const zero_config *cfg, long it);
/* Adam's (beta1, beta2) at `it`: OneCycle with cycle_momentum cycles beta1
   and forces beta2 = 0.99, as DeepSpeed does; otherwise optimizer.params.betas. */
ZERO_API void zero_betas_at(const zero_config *cfg, long it, double *beta1, double *beta2);

/* ---- memory estimator --------------------------------------------------- */

typedef struct zero_estimate_args {
    double params;                   /* total parameters P (shared counted once) */
    double largest_layer;            /* largest layer's own parameters L; <= 0: P / 20 */
    int gpus_per_node;               /* g */
    int nodes;                       /* n */
    int stage;                       /* 0..3 */
    zero_offload_device offload_optimizer; /* stages 1-3 */
    zero_offload_device offload_param;  /* stage 3 only */
    int zero_init;                   /* stage 3: parameters created partitioned (DeepSpeed's
                                        zero.Init); changes DeepSpeed's CPU figure only: zero
                                        always creates them partitioned */
    double additional_buffer_factor; /* DeepSpeed's f: <= 0 means 1.5 */
    zero_dtype compute_dtype;        /* DEFAULT means fp16 */
    int64_t reduce_bucket_size;      /* elements; <= 0 means 5e8 */
    int64_t stage3_max_live_parameters; /* elements; <= 0 means 1e9 */
    int64_t stage3_prefetch_bucket_size; /* elements; < 0 means 5e7 */
} zero_estimate_args;

typedef struct zero_memory_estimate {
    /* DeepSpeed's estimate_zero{2,3}_model_states_mem_needs, per GPU and per
       node CPU, bytes. Stage 1 uses the stage-2 formula (DeepSpeed has no
       other); stage 0 is 16 bytes per parameter on the GPU and 0 CPU; NVMe
       offload gets the CPU-offload figures (DeepSpeed has no NVMe estimate). */
    double ds_gpu_bytes, ds_cpu_bytes;
    /* zero's own plan, per GPU and per node CPU, by category, bytes */
    double gpu_params_bytes;         /* compute-dtype parameters (full, or shard + gather pool) */
    double gpu_grads_bytes;          /* gradient buffers and owned accumulators */
    double gpu_optimizer_bytes;      /* fp32 master + Adam moments kept on the GPU */
    double gpu_total_bytes;
    double cpu_params_bytes;         /* offloaded parameter shards + staging */
    double cpu_grads_bytes;          /* pinned gradient staging for offload */
    double cpu_optimizer_bytes;      /* offloaded fp32 master + moments */
    double cpu_total_bytes;
    double nvme_bytes;               /* per node on NVMe */
} zero_memory_estimate;

ZERO_API zero_result zero_estimate_memory(const zero_estimate_args *a, zero_memory_estimate *out,
                                          zero_error *err);
/* The largest P whose zero plan fits gpu_bytes per GPU, cpu_bytes per node
   and nvme_bytes per node (<= 0: no NVMe), for a's other settings (a->params
   is ignored; largest_layer <= 0 stays P / 20, > 0 stays fixed). Within a
   relative 1e-6 below the true limit; 0 when not even one parameter (one
   layer of largest_layer) fits. Model states only: leave room for
   activations and workspaces. */
ZERO_API zero_result zero_estimate_max_params(const zero_estimate_args *a, double gpu_bytes,
                                              double cpu_bytes, double nvme_bytes,
                                              double *max_params, zero_error *err);

#ifdef __cplusplus
}
#endif

#endif /* ZERO_H */

/* ======================================================================= */
/*                            IMPLEMENTATION                               */
/* ======================================================================= */
#ifdef ZERO_IMPLEMENTATION
#ifndef ZERO__IMPLEMENTED
#define ZERO__IMPLEMENTED

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h> /* stat: POSIX, as NCCL and the rest of zero are */

#ifndef ZERO_ASSERT
#  include <assert.h>
#  define ZERO_ASSERT(x) assert(x)
#endif
#ifndef ZERO_MALLOC
#  define ZERO_MALLOC(n) malloc(n)
#  define ZERO_REALLOC(p, n) realloc(p, n)
#  define ZERO_FREE(p) free(p)
#endif
#ifndef ZERO_JSON_MAX_DEPTH
#  define ZERO_JSON_MAX_DEPTH 64
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define ZERO__PRINTF(a, b) __attribute__((format(printf, a, b)))
#  define ZERO__UNUSED __attribute__((unused))
#else
#  define ZERO__PRINTF(a, b)
#  define ZERO__UNUSED
#endif

/* Definitions of public functions; under ZERO_STATIC a program that calls
   only some of them must not get unused-function warnings. */
#ifdef ZERO_STATIC
#  define ZERO__DEF static ZERO__UNUSED
#else
#  define ZERO__DEF
#endif

/* ---- results, messages, errors, logging ---- */

ZERO__DEF const char *zero_result_string(zero_result r) {
    switch (r) {
#define ZERO__X(name, text) case name: return text;
        ZERO_RESULT_LIST(ZERO__X)
#undef ZERO__X
    default: return "unknown result";
    }
}

static const char *const zero__msg_names[] = {
#define ZERO__X(name, result, text) #name,
    ZERO_MSG_LIST(ZERO__X)
#undef ZERO__X
};
static const char *const zero__msg_summaries[] = {
#define ZERO__X(name, result, text) text,
    ZERO_MSG_LIST(ZERO__X)
#undef ZERO__X
};
static const zero_result zero__msg_results[] = {
#define ZERO__X(name, result, text) result,
    ZERO_MSG_LIST(ZERO__X)
#undef ZERO__X
};

ZERO__DEF const char *zero_msg_name(zero_msg m) {
    return ((unsigned)m < ZERO_MSG_COUNT) ? zero__msg_names[m] : "UNKNOWN";
}
ZERO__DEF const char *zero_msg_summary(zero_msg m) {
    return ((unsigned)m < ZERO_MSG_COUNT) ? zero__msg_summaries[m] : "unknown message";
}

/* Fill err (if any) and return the item's result code. The text becomes
   "key: <formatted> (line L:C)", each part only when present. */
static ZERO__UNUSED zero_result zero__fail(zero_error *err, zero_msg item, const char *key,
                                           int line, int col, const char *fmt, ...)
    ZERO__PRINTF(6, 7);
static zero_result zero__fail(zero_error *err, zero_msg item, const char *key, int line, int col,
                              const char *fmt, ...) {
    zero_result code = zero__msg_results[item];
    if (err) {
        size_t n = 0;
        va_list ap;
        err->code = code;
        err->item = item;
        err->line = line;
        err->column = col;
        err->key[0] = 0;
        if (key) snprintf(err->key, sizeof err->key, "%s", key);
        err->msg[0] = 0;
        if (key && key[0]) n = (size_t)snprintf(err->msg, sizeof err->msg, "%s: ", key);
        if (n < sizeof err->msg) {
            va_start(ap, fmt);
            n += (size_t)vsnprintf(err->msg + n, sizeof err->msg - n, fmt, ap);
            va_end(ap);
        }
        if (line > 0 && n < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - n, " (line %d:%d)", line, col);
    }
    return code;
}

static ZERO__UNUSED void zero__ok(zero_error *err) {
    if (err) {
        err->code = ZERO_OK;
        err->item = ZERO_MSG_NONE;
        err->line = err->column = 0;
        err->key[0] = 0;
        err->msg[0] = 0;
    }
}

static int zero__env_rank(void) {
    static const char *const vars[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"};
    size_t i;
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end == 0 && r >= 0 && r < INT_MAX) return (int)r;
        }
    }
    return 0;
}

ZERO__DEF void zero_log_default(void *user, zero_log_level level, zero_msg item, int rank,
                                const char *text) {
    static const char *const names[] = {"debug", "info", "warning", "error"};
    (void)user;
    (void)item;
    if (level < ZERO_LOG_WARN && rank != 0) return;
    fprintf(stderr, "[zero][rank %d] %s: %s\n", rank,
            names[(unsigned)level < ZERO_LOG_LEVEL_COUNT ? level : ZERO_LOG_ERROR], text);
}

static ZERO__UNUSED void zero__log(const zero_logger *lg, zero_log_level level, zero_msg item,
                                   const char *fmt, ...) ZERO__PRINTF(4, 5);
static void zero__log(const zero_logger *lg, zero_log_level level, zero_msg item, const char *fmt,
                      ...) {
    char text[1024];
    va_list ap;
    zero_log_fn fn = lg ? lg->fn : NULL;
    int rank = (lg && lg->rank >= 0) ? lg->rank : zero__env_rank();
    if (lg && level < lg->level) return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    (fn ? fn : zero_log_default)(lg ? lg->user : NULL, level, item, rank, text);
}

/* @@PARTS@@ (development only: inlined before landing) */
#include "parts/json.h"
#include "parts/config.h"
#include "parts/sched.h"
#include "parts/estimate.h"

#endif /* ZERO__IMPLEMENTED */
#endif /* ZERO_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the zero authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
