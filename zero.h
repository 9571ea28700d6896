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

   Minimal use (every rank; on GPUs the backend comes from zero_cuda.cuh,
   on the CPU zero_host_run starts one thread per rank and passes it in):

       zero_config cfg = zero_config_default();
       zero_error err;
       zero_engine *e;
       if (zero_config_load(&cfg, "ds_config.json", &err) != ZERO_OK ||
           zero_config_resolve(&cfg, backend->world, &err) != ZERO_OK ||
           zero_engine_create(&e, &cfg, tensors, n_tensors, backend, &err) != ZERO_OK) {
           fprintf(stderr, "%s\n", err.msg);         (which key or tensor, and why)
           return 1;
       }
       for (step = 0; step < steps; step++) {
           for (micro = 0; micro < cfg.gradient_accumulation_steps; micro++) {
               forward: zero_fetch(e, t); use zero_param(e, t); zero_release(e, t);
               loss * zero_loss_scale(e) seeds the backward; for t = last .. 0:
                   write t's gradient into zero_grad(e, t); zero_grad_ready(e, t);
           }
           zero_step(e, &info);       (reduce, inf/nan check, clip, Adam, lr, gather)
       }
       zero_engine_destroy(e);

   The pure pieces work alone: zero_loss_scaler_*, zero_lr_at, zero_layout_*,
   zero_estimate_memory. docs/engine.md explains the loop, the unit layout and
   the stages. Link with -lm -lpthread.

   The public functions by who needs them:
     a trainer      zero_config_default, zero_config_load, zero_config_resolve,
                    zero_engine_create, zero_engine_destroy, zero_engine_error,
                    zero_result_string; the loop: zero_fetch, zero_release,
                    zero_param, zero_grad, zero_grad_ready (and their _group
                    forms), zero_loss_scale, zero_report_loss, zero_step;
                    stage 3 behind its own pointers: zero_alloc, zero_free;
                    checkpoints: zero_save, zero_load, zero_export_safetensors,
                    the program's own state in them: zero_client_put,
                    zero_client_get, zero_client_count, zero_client_key;
                    when it drives them: zero_set_lr, zero_set_betas,
                    zero_grad_norm, zero_skip_step, zero_all_reduce_scalars,
                    zero_flush, zero_gather_params, zero_release_params,
                    zero_global_steps, zero_memory_report,
                    zero_memory_stats_format; pretrained weights:
                    zero_safetensors_open, _bind, _close; stacked kinds:
                    zero_tensors_of_kinds
     a tool         planning: zero_estimate_memory, zero_estimate_max_params,
                    zero_estimate_time, zero_floor_of; configs:
                    zero_config_parse_json, zero_config_to_json,
                    zero_config_key_count, zero_config_key; the units:
                    zero_layout_*, zero_engine_layout, zero_read_state;
                    safetensors files: zero_safetensors_count, _get, _find,
                    _metadata, _read; the pure pieces: zero_loss_scaler_*,
                    zero_lr_at, zero_betas_at, zero_f32_to_f16 and the other
                    conversions, zero_dtype_size, zero_dtype_name; messages:
                    zero_msg_name, zero_msg_summary; zero_version
     a backend's    zero_backend (the struct of operations), zero_host_run and
       writer       zero_host_allocated_bytes (the host backend, the model to
                    follow), zero_log_default

   Map (search for >>name to reach a section; each section uses only those
   above it, so the file reads top to bottom):

   Declarations
     api-results        zero_result, zero_result_string
     api-messages       the message items: one X-macro list makes enum, names, texts
     api-errors         zero_error (code, item, key, line, column, msg)
     api-logging        levels, zero_logger, zero_log_default
     api-config         zero_config and its parts: DeepSpeed's keys; load, resolve, print
     api-keys           the config key table type (docs/config.md is made from it)
     api-scaler         zero_loss_scaler_init / _update / _scale
     api-schedules      zero_lr_at: WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest
     api-estimator      zero_estimate_memory, zero_estimate_max_params
     api-fp16           zero_f32_to_f16 / _bf16 and back
     api-layout         zero_tensor, zero_layout_create: tensors cut into units
     api-backend        zero_backend (the seam), zero_host_run (the host backend)
     api-engine         zero_engine_create, zero_fetch, zero_grad, zero_grad_ready,
                        zero_step, zero_save, zero_load, zero_client_put / _get,
                        zero_memory_report, ...
     api-safetensors    zero_safetensors_open / _read / _bind: pretrained weights by name
     api-lab            the tools' own: zero_estimate_time (the step-time model),
                        zero_floor_of (a step's floor at measured bandwidths)
   Implementation
     prelude            system headers, ZERO_MALLOC / ZERO_ASSERT defaults, private macros
     errors             results, messages, errors, logging
     files              opening files so that no open can block (FIFOs, devices refused)
     json               the JSON reader (config files, checkpoint metadata): before its users
     config-defaults    zero_config_default
     config-keys        the key table (data: one row per DeepSpeed key)
     config-parse       zero_config_load, zero_config_parse (zero__set_leaf, zero__member)
     config-resolve     zero_config_resolve: "auto", the batch triangle, cross-key checks
     config-tojson      zero_config_to_json
     scaler             the dynamic loss scaler
     schedules          the learning-rate schedules
     estimator          the memory estimator and the largest model that fits
     fp16               fp16 and bf16 conversions (and zero__host_cast / _uncast)
     safetensors        the safetensors reader: headers checked whole at open, ranged
                        reads converted and transposed, zero_safetensors_bind's init
     host               the host backend: ranks as threads, collectives in shared memory,
                        the groups of hybrid sharding (a barrier per group)
     muon-ns            Muon's Newton-Schulz orthogonalisation on the host
                        (zero_muon_orthogonalize); the host backend's adam and ranks after it
     layout             tensors into units: zero_layout_create, zero_layout_locate
     engine-core        struct zero_engine in parts (the strategy table among them);
                        errors, entry check, allocation
     engine-timeline    ZERO_TIMELINE: one step's collectives and stream waits timed with
                        the backend's timed events, written as a Chrome trace
     engine-observe     every collective and host wait: ZERO_DEBUG, the watchdog,
                        check_collectives, the metrics line
     engine-tiles       NVMe tile requests, offload_param's tile cache
     engine-state       where a unit's state lives, the one layer that knows: the views
                        (zero__master_at, zero__param_own), where Adam's output goes
                        (zero__param_out / _put), any residency read and written
                        (zero__state_get / _put: checkpoints, zero_read_state, load, init),
                        the post-step gather, a unit's gradient views (zero__grad_view),
                        the program's memory through one unit's staging (zero__ext_copy)
     engine-thread      the engine's CPU thread: one job at a time for the strategies that
                        step beside the GPU (early, overlapped, delayed)
     engine-hsum        optimizer offload with gradient accumulation: the CPU adds the
                        micro-batches before the last into the host staging
     engine-pvm         stage 3 behind the program's pointers: a count per page, the
                        dropped spans whose pages wait, gathers into the program's memory
     engine-program     the program's own memory (zero_tensor.data, .grad) as a residency: its
                        checks and plan at create, initial weights from rank 0's memory,
                        the gradients copied out of it before each reduction
     engine-fetch       stage 3: the gather pool and fetch trace; zero_fetch, zero_release, zero_param
     engine-life        zero_engine_create / destroy: plan, allocate (each beside its free),
                        initial weights
     engine-adam        what every optimizer strategy shares: hyperparameters, one unit's
                        CPU Adam, the unit loop, the empty operations
     engine-grads       zero_grad (the ring-slot claim), zero_grad_ready, a unit's reduction
                        (with mics_shard_size: in the group, then across the groups)
     opt-device         the optimizer strategies, one table of operations each (zero__strategy),
                        chosen at create (zero__strategy_pick): Adam on the device
     opt-cpu            the CPU Adam after the norm (the pieces the other CPU ones share)
     opt-twin           partial offload (offload_optimizer.ratio < 1): the first units on the
                        device's Adam, the rest the CPU's
     opt-overlap        the CPU Adam beside the next forward (overlap_cpu_step)
     opt-early          the CPU Adam during the last backward (the early CPU step)
     opt-delayed        step t's CPU Adam beside step t+1 (delayed_param_update)
     opt-nvme           the CPU Adam over NVMe tiles; zero__strategy_pick
     engine-step        zero_step as its phases (ready, norm, overflow, skip or clip, the
                        strategy's step and after, report); zero_flush; the program's
                        own schedule and step decisions (zero_set_lr, zero_set_betas,
                        zero_grad_norm, zero_skip_step)
     engine-scalars     zero_all_reduce_scalars: a trainer's loss and counts over the ranks
     ckpt-format        checkpoint files: header, CRC-32C, atomic commit; the
                        program's client state (zero_client_*) and its file
     ckpt-save          zero_save
     ckpt-load          zero_load on any world size
     export             zero_export_safetensors
     readout            zero_memory_report, zero_memory_stats_format, zero_read_state
     lab                the tools' own: the step-time model, the floor of a step

   Functions longer than about 150 lines, and why: zero_layout_create (one
   straight pass that validates the tensors and cuts them into units). None
   is over 160 (tests/headers.sh).

   Compile-time options (define before the #include that has
   ZERO_IMPLEMENTATION, unless said otherwise):
       ZERO_STATIC        make every function static (define wherever the
                          header is included; then each file gets its own copy)
       ZERO_ASSERT(x)     your assert (default: assert from <assert.h>)
       ZERO_MALLOC(n), ZERO_REALLOC(p, n), ZERO_FREE(p)
                          your allocator for zero's own host tables (config
                          parser, layout, engine bookkeeping; buffers come from
                          the backend) (default: malloc, realloc, free)
       ZERO_JSON_MAX_DEPTH  nesting limit of the JSON parser (default 64)
       ZERO_CLIENT_MAX_KEYS, ZERO_CLIENT_MAX_BYTES
                          keys and value bytes one rank's client state may
                          hold (zero_client_put; default 1024 and 16 MiB;
                          define wherever the header is included, the same
                          in every program that reads the checkpoints)

   Environment (read at run time):
       ZERO_TIMEOUT_S       seconds a collective or wait may take before it fails
                            (host backend: default 300, decimals ok; zero_cuda.cuh:
                            600). ZERO_HOST_TIMEOUT_S is its alias for the host
                            backend alone, read when ZERO_TIMEOUT_S is unset.
       ZERO_HOST_MEM_LIMIT  bytes one host rank may allocate (tests of the
                            out-of-memory paths; default: no limit)

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
#define ZERO__STR_(...) #__VA_ARGS__
#define ZERO__STR(...) ZERO__STR_(__VA_ARGS__)

#ifndef ZERO_API
#  ifdef ZERO_STATIC
#    define ZERO_API static
#  else
#    define ZERO_API extern
#  endif
#endif

/* A name kept for programs that use it, to be removed in the version the
   message says: the compiler warns where it is used. */
#if defined(__GNUC__) || defined(__clang__)
#  define ZERO_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#  define ZERO_DEPRECATED(msg)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- >>api-results: zero_result and zero_result_string ---- */

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

/* ---- >>api-messages: the message items (one X-macro list: enum, names, texts) ---- */

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
    X(FILE_WRITE, ZERO_ERR_IO, "a file could not be written (disk full, removed, no permission)") \
    X(NVME_CORRUPT, ZERO_ERR_CORRUPT, "a stored tile fails its checks: a torn write, or changed underneath") \
    X(ENV_INVALID, ZERO_OK, "environment variable with an invalid value ignored (warning)") \
    X(CUDA_CALL, ZERO_ERR_CUDA, "a CUDA runtime call failed")                              \
    X(CUDA_NO_DEVICE, ZERO_ERR_CUDA, "no usable CUDA device (driver, CUDA_VISIBLE_DEVICES)") \
    X(CUDA_OUT_OF_MEMORY, ZERO_ERR_CUDA, "a CUDA device allocation failed")                \
    X(NCCL_CALL, ZERO_ERR_NCCL, "an NCCL call failed")                                     \
    X(NCCL_TIMEOUT, ZERO_ERR_TIMEOUT, "a collective did not finish within the deadline (ZERO_TIMEOUT_S)") \
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
    X(JSON_HJSON, ZERO_OK, "a form of hjson that strict JSON refuses, read as DeepSpeed reads it (info)") \
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
    X(ESTIMATE_ARGS, ZERO_ERR_INVALID_ARG, "memory estimator arguments out of range")     \
    X(LAYOUT_TENSOR, ZERO_ERR_INVALID_ARG, "a registered tensor is invalid (name, size, shape)") \
    X(LAYOUT_DUPLICATE_NAME, ZERO_ERR_INVALID_ARG, "two tensors registered with the same name") \
    X(ENGINE_CONFIG, ZERO_ERR_CONFIG, "the engine cannot run this configuration")         \
    X(ENGINE_UNKNOWN_TENSOR, ZERO_ERR_INVALID_ARG, "tensor index out of range")           \
    X(ENGINE_DESTROYED, ZERO_ERR_STATE, "engine used after zero_engine_destroy (or never created)") \
    X(ENGINE_FROZEN, ZERO_ERR_STATE, "gradient asked of a frozen tensor")                 \
    X(ENGINE_GRAD_TWICE, ZERO_ERR_STATE, "gradient marked ready twice in one micro-batch") \
    X(ENGINE_STEP_EARLY, ZERO_ERR_STATE, "zero_step before every gradient of the step is ready") \
    X(ENGINE_STEP_DECIDED, ZERO_ERR_STATE, "the early CPU step already applied this step's Adam") \
    X(ENGINE_STEP_MISSING, ZERO_ERR_STATE, "gradients for more micro-batches than gradient_accumulation_steps before zero_step") \
    X(ENGINE_NOT_FETCHED, ZERO_ERR_STATE, "stage-3 parameter used without zero_fetch")    \
    X(ENGINE_RELEASE, ZERO_ERR_STATE, "zero_release of a tensor that is not fetched")      \
    X(ENGINE_GATHERED, ZERO_ERR_STATE, "gradients, a step or a second gather while zero_gather_params holds the model") \
    X(ENGINE_POOL_FULL, ZERO_ERR_OUT_OF_MEMORY, "more gathered units live than the stage-3 pool holds") \
    X(ENGINE_POOL_GREW, ZERO_OK, "the derived stage-3 pool grew: the program holds more at once than it planned (info)") \
    X(ENGINE_TIMELINE, ZERO_OK, "ZERO_TIMELINE: a step's streams timed and written, or why not (info)") \
    X(ENGINE_GRAD_RING_FULL, ZERO_ERR_STATE, "more units with unfinished gradients than the gradient ring holds") \
    X(ENGINE_GRAD_OWN_SLOT, ZERO_OK, "a span's gradient found open across the backward gets a buffer of its own (info)") \
    X(VM_UNSUPPORTED, ZERO_ERR_UNSUPPORTED, "the backend cannot leave memory unbacked (zero_alloc)") \
    X(VM_FAILED, ZERO_ERR_OUT_OF_MEMORY, "reserving, backing or unbacking address space failed") \
    X(ENGINE_PROGRAM_LR, ZERO_OK, "the program drives the learning rate or betas from now on (info)") \
    X(ENGINE_DIVERGED, ZERO_ERR_STATE, "ranks reached different collectives (check_collectives / ZERO_CHECK)") \
    X(ENGINE_BROKEN, ZERO_ERR_STATE, "engine unusable after an earlier collective or backend failure") \
    X(ENGINE_TRACE, ZERO_OK, "stage-3 fetch order differs from the recorded one (info)")  \
    X(ENGINE_PROGRESS, ZERO_OK, "progress line (steps_per_print)")                        \
    X(ENGINE_TIMERS, ZERO_OK, "phase times (wall_clock_breakdown)")                       \
    X(ENGINE_SKIPPED, ZERO_OK, "steps skipped for inf/nan gradients in the last print period") \
    X(ENGINE_RESOLVED, ZERO_OK, "the resolved configuration, once at create (rank 0)") \
    X(ENGINE_COLLECTIVE, ZERO_OK, "a collective the engine issues, on every rank (ZERO_DEBUG=1; debug level)") \
    X(ENGINE_WATCHDOG, ZERO_ERR_TIMEOUT, "a rank has waited ZERO_WATCHDOG_S seconds on a collective or a sync (warning; the wait goes on)") \
    X(ENGINE_METRICS, ZERO_ERR_IO, "a monitor's file (jsonl_monitor, tensorboard, csv_monitor) cannot be opened or written") \
    X(CKPT_DONE, ZERO_OK, "zero_save or zero_load succeeded: one info line, rank 0 (what, where, how long)") \
    X(CKPT_NOT_FOUND, ZERO_ERR_IO, "no checkpoint in the directory (neither meta.zck nor a latest pointer)") \
    X(CKPT_CORRUPT, ZERO_ERR_CORRUPT, "a checkpoint file fails its checks: truncated, flipped bits, missing, or not a checkpoint") \
    X(CKPT_VERSION, ZERO_ERR_CONFIG, "a checkpoint of a newer format version than this build reads") \
    X(CKPT_MISMATCH, ZERO_ERR_CONFIG, "the checkpoint's tensors or layout do not match the engine's model") \
    X(CLIENT_KEY, ZERO_ERR_INVALID_ARG, "a client-state key is empty, longer than ZERO_CLIENT_KEY_MAX or not printable ASCII") \
    X(CLIENT_MISSING, ZERO_ERR_INVALID_ARG, "zero_client_get of a key the store lacks, asked for as required (found_bytes NULL)") \
    X(CLIENT_SIZE, ZERO_ERR_INVALID_ARG, "a client-state value of another size than asked for, or past the store's limits") \
    X(HOST_COLLECTIVE_MISMATCH, ZERO_ERR_STATE, "ranks called different collectives")      \
    X(HOST_PEER_EXITED, ZERO_ERR_STATE, "a rank left while others wait in a collective")   \
    X(HOST_TIMEOUT, ZERO_ERR_TIMEOUT, "a host collective waited past its deadline")        \
    X(BOOTSTRAP_ENV, ZERO_ERR_BOOTSTRAP, "a launcher variable is malformed or contradicts another") \
    X(BOOTSTRAP_LISTEN, ZERO_ERR_BOOTSTRAP, "rank 0 could not listen on MASTER_ADDR:MASTER_PORT") \
    X(BOOTSTRAP_PROTOCOL, ZERO_ERR_BOOTSTRAP, "what answers at MASTER_ADDR:MASTER_PORT is not zero's bootstrap") \
    X(BOOTSTRAP_MISMATCH, ZERO_ERR_BOOTSTRAP, "ranks disagree on world or id size, or two processes claim one rank") \
    X(BOOTSTRAP_TIMEOUT, ZERO_ERR_TIMEOUT, "the ranks did not all meet within the bootstrap deadline") \
    X(LAUNCH_LOCAL, ZERO_ERR_BOOTSTRAP, "zero_cuda_launch_local could not start its processes") \
    X(LAUNCH_INFO, ZERO_OK, "processes started, failed or stopped by zero_cuda_launch_local (info, warning)") \
    X(CPU_SIMD_UNSUPPORTED, ZERO_ERR_UNSUPPORTED, "the CPU or the build lacks the SIMD level asked for") \
    X(HOST_THREAD, ZERO_ERR_INVALID_ARG, "host ranks could not be started")

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

/* ---- >>api-errors: zero_error ---- */

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

/* ---- >>api-logging: log levels and the logger hook ---- */

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

/* The default sink: stderr, "[zero][rank R] warning: text". Info lines on
   rank 0 only; debug lines (ZERO_DEBUG asks for them), warnings and errors
   on every rank. */
ZERO_API void zero_log_default(void *user, zero_log_level level, zero_msg item, int rank,
                               const char *text);

/* ---- >>api-config: zero_config (DeepSpeed's keys), load, resolve, print ---- */

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
    ZERO_OPTIMIZER_LION,  /* "Lion": DeepSpeed's CPU Lion (csrc/lion/cpu_lion_impl.cpp); one moment */
    ZERO_OPTIMIZER_ADAGRAD, /* "Adagrad": DeepSpeed's CPU Adagrad (csrc/includes/cpu_adagrad.h); one sum of squares */
    ZERO_OPTIMIZER_SGD,   /* "SGD": torch.optim.SGD (momentum, dampening, nesterov); a momentum buffer when momentum > 0 */
    ZERO_OPTIMIZER_LAMB,  /* "Lamb": DeepSpeed's FusedLamb (csrc/lamb/fused_lamb_cuda_kernel.cu); Adam's two moments and a
                             trust ratio per whole tensor */
    ZERO_OPTIMIZER_MUON,  /* "Muon": DeepSpeed's MuonWithAuxAdam (deepspeed/runtime/zero/muon/original_muon.py):
                             Newton-Schulz orthogonalised momentum on the matrices, AdamW on the rest */
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

/* Every field carries its DeepSpeed key and default (DeepSpeed 0.19; where 0.16
   differed, the comment says so). docs/config.md has the full table with
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
    double momentum;           /* SGD params.momentum: 0 */
    double dampening;          /* SGD params.dampening: 0 */
    int nesterov;              /* SGD params.nesterov: false */
    int eps_inside_sqrt;       /* Lamb params.eps_inside_sqrt: false */
    double max_coeff;          /* Lamb params.max_coeff: 10 (the trust ratio's ceiling) */
    double min_coeff;          /* Lamb params.min_coeff: 0.01 (its floor; <= max_coeff) */
} zero_optimizer_config;

/* "scheduler": {"type": ..., "params": {...}}; one struct for all five. */
typedef struct zero_scheduler_config {
    zero_scheduler_type type;        /* type: none */
    int64_t last_batch_iteration;    /* params.last_batch_iteration: -1 */
    /* WarmupLR, WarmupDecayLR */
    double warmup_min_lr;            /* warmup_min_lr: 0 (ZERO_AUTO allowed) */
    double warmup_max_lr;            /* warmup_max_lr: ZERO_UNSET = None: WarmupLR takes optimizer lr,
                                        WarmupDecayLR 1e-3, as DeepSpeed (ZERO_AUTO allowed) */
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
    int delayed_param_update;     /* delayed_param_update: false (optimizer only; zero's key, not DeepSpeed's) */
} zero_offload_config;

/* "zero_optimization": {...} (or the legacy booleans true/false) */
typedef struct zero_optimization_config {
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
    int64_t stage3_prefetch_bucket_size;         /* stage3_prefetch_bucket_size: ZERO_UNSET = the largest group
                                                    (derived at create; DeepSpeed: 5e7) (ZERO_AUTO allowed) */
    int64_t stage3_param_persistence_threshold;  /* stage3_param_persistence_threshold: 1e5 (ZERO_AUTO allowed) */
    int64_t stage3_model_persistence_threshold;  /* stage3_model_persistence_threshold: INT64_MAX */
    int64_t stage3_max_live_parameters;          /* stage3_max_live_parameters: ZERO_UNSET = the three largest
                                                    groups and room for the largest once more (derived at create;
                                                    DeepSpeed: 1e9) */
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
} zero_optimization_config;
/* its former name, kept so that programs using it still build; removed in zero 0.2 */
typedef zero_optimization_config zero_zero_config ZERO_DEPRECATED("zero_zero_config is zero_optimization_config; the old "
                                                                  "name goes in zero 0.2");

/* "aio": {...} (libaio settings of ZeRO-Infinity; zero uses POSIX I/O) */
typedef struct zero_aio_config {
    int64_t block_size;            /* block_size: 1048576 */
    int64_t queue_depth;           /* queue_depth: 8 */
    int64_t intra_op_parallelism;  /* intra_op_parallelism: 1 */
    int single_submit;             /* single_submit: false */
    int overlap_events;            /* overlap_events: true */
    int use_gds;                   /* use_gds: false */
} zero_aio_config;

/* A monitor: "jsonl_monitor" (zero's own, shaped like DeepSpeed's
   csv_monitor: rank 0 appends one JSON object per optimizer step to
   <output_path>/<job_name>.jsonl), DeepSpeed's "tensorboard" and
   "csv_monitor" (files in <output_path>/<job_name>/). docs/observability.md
   has the fields. */
typedef struct zero_monitor_config {
    int enabled;                   /* enabled: false */
    char output_path[ZERO_PATH_MAX]; /* output_path: "" (the working directory) */
    char job_name[ZERO_PATH_MAX];  /* job_name: "zero" */
} zero_monitor_config;

/* Room for every key of the key table (zero_config_key_count() is at most this). */
#define ZERO_CONFIG_MAX_KEYS 256

/* Where the last JSON text parsed into the config set each key, so that
   zero_config_resolve's messages name the place: "ds_config.json:4:3:
   train_batch_size: ...". Filled by zero_config_load and
   zero_config_parse_json (each parse starts it afresh), read by
   zero_config_resolve; zero_config_default() leaves it empty and a program
   never needs to touch it. A place is named only while the field still
   holds the value parsed there (value_hash), so a field the program set
   itself after loading is not blamed on the file. */
typedef struct zero_config_source {
    char file[ZERO_PATH_MAX];                  /* the file zero_config_load read; "" for text */
    int line[ZERO_CONFIG_MAX_KEYS];            /* by key index (zero_config_key(i)): the key's 1-based
                                                  line in the text, 0 when the text did not set it */
    int col[ZERO_CONFIG_MAX_KEYS];             /* its 1-based byte column */
    uint32_t value_hash[ZERO_CONFIG_MAX_KEYS]; /* FNV-1a of the field as the parser stored it */
} zero_config_source;

typedef struct zero_config {
    /* batch triangle: TBS = MBS x GAS x world (zero_config_resolve) */
    int64_t train_batch_size;               /* train_batch_size: ZERO_UNSET (ZERO_AUTO allowed) */
    int64_t train_micro_batch_size_per_gpu; /* train_micro_batch_size_per_gpu: ZERO_UNSET (ZERO_AUTO allowed) */
    int64_t gradient_accumulation_steps;    /* gradient_accumulation_steps: ZERO_UNSET (ZERO_AUTO allowed) */
    int64_t steps_per_print;                /* steps_per_print: 0 = None (no progress print) */
    int wall_clock_breakdown;               /* wall_clock_breakdown: false */
    double gradient_clipping;               /* gradient_clipping: 1.0; 0 disables (ZERO_AUTO allowed) */
    int gradient_clipping_given;            /* set by the parser: 1 the JSON has gradient_clipping, -1 a
                                               JSON without it; 0 (no JSON read): the program's code set
                                               the config. Only the create line's wording reads it: a
                                               value not from a JSON file is never called a default */
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
    zero_dtype grad_accum_dtype;            /* data_types.grad_accum_dtype: None (zero: fp32) */
    zero_tag_validation tag_validation;     /* checkpoint.tag_validation: "WARN" */
    int load_universal;                     /* checkpoint.load_universal: false */
    int use_node_local_storage;             /* checkpoint.use_node_local_storage: false */
    zero_aio_config aio;                    /* aio */
    zero_fp16_config fp16;                  /* fp16 */
    zero_bf16_config bf16;                  /* bf16 */
    zero_optimizer_config optimizer;        /* optimizer */
    zero_scheduler_config scheduler;        /* scheduler */
    zero_optimization_config zero_optimization;     /* zero_optimization */

    /* ---- zero's own fields (not DeepSpeed keys) ---- */
    int64_t hidden_size;  /* model hidden size H for "auto" bucket sizes, as the HF
                             integration derives them: reduce_bucket_size = H*H,
                             stage3_prefetch_bucket_size = 0.9*H*H,
                             stage3_param_persistence_threshold = 10*H. 0 = unknown. */
    int check_collectives;/* 1: before every collective the ranks compare what they are
                             about to do (kind and unit) and fail with ENGINE_DIVERGED
                             naming both, instead of a deadlock or a silent mix-up; one
                             small all-reduce more per collective (debugging). Also
                             ZERO_CHECK=1 in the environment. Default 0. */
    zero_monitor_config jsonl_monitor; /* jsonl_monitor: metrics, one JSON line per step */
    zero_monitor_config tensorboard;   /* tensorboard: TensorBoard event files, <output_path>/<job_name>/ (job_name
                                          "DeepSpeedJobName") */
    zero_monitor_config csv_monitor;   /* csv_monitor: DeepSpeed's CSV files, one per tag, in <output_path>/<job_name>/ */
    int early_cpu_step;   /* offload_optimizer "cpu" with nothing that needs the global norm
                             (no clipping, no overflow check): 1 (default) starts each
                             unit's CPU Adam during the backward; 0 keeps it until
                             zero_step, so that the program may still read
                             zero_grad_norm and zero_skip_step. Set in code only. */
    int overlap_cpu_step; /* stage 3 with offload_param and offload_optimizer "cpu" and the
                             CPU Adam in zero_step: 1 (default) steps the persistent
                             units, then returns and leaves the other units' CPU Adam to
                             the engine's thread, in the order the next forward fetches
                             them; each zero_fetch waits for its units (the same
                             arithmetic, not a stale step). 0: zero_step does all of it.
                             Set in code only. */
    int grad_accum_device; /* offload_optimizer at stages 2-3 with gradient accumulation:
                             where the micro-batches add up. 1: on the device, in an
                             fp32 accumulator of this rank's owned parameters (4 bytes
                             each / N), the sum crossing to the host once a step; 0: in
                             host memory, each micro-batch crossing (the CPU adds them,
                             zero_backend.cpu_convert). -1 (default): the device when
                             that accumulator takes at most a third of the device
                             memory free once the parameters are placed
                             (zero_backend.mem_info), else the host;
                             ZERO_GRAD_ACC=device or =host in the environment decides
                             instead. The same bits every way. Set in code only. */
    int world_size;       /* set by zero_config_resolve; 0 before */
    int resolved;         /* set by zero_config_resolve */
    zero_logger log;      /* where warnings and info go */
    zero_config_source source; /* set by the parser: where each key stood in the text */
} zero_config;

/* DeepSpeed's defaults (DeepSpeed 0.19), nothing "auto", not resolved. */
ZERO_API zero_config zero_config_default(void);

/* Parse a DeepSpeed JSON config over *cfg: keys present in text overwrite
   the fields; absent keys keep what cfg holds (start from
   zero_config_default()). text need not be NUL-terminated. Strict like
   DeepSpeed: unknown keys inside fp16, bf16, zero_optimization, the offload
   blocks and optimizer/scheduler params are errors (with the nearest known
   key), unknown top-level keys are warnings; wrong types, out-of-range values,
   duplicate keys and fp16+bf16 are errors. On error *cfg may be partly
   written: keep a copy if you need the old one. Comments (// and / * * /,
   as DeepSpeed's hjson reader allows) are skipped, and hjson's trailing
   commas, line breaks for commas, single quotes and Infinity/NaN are read
   as DeepSpeed reads them, each form with one info line (JSON_HJSON).
   cfg->source records where each key stood. */
ZERO_API zero_result zero_config_parse_json(zero_config *cfg, const char *text, size_t len,
                                            zero_error *err);

/* zero_config_parse_json on the contents of a file; errors start with
   "FILE:line:col: " (the place where there is one). */
ZERO_API zero_result zero_config_load(zero_config *cfg, const char *path, zero_error *err);

/* Fill what is derived: "auto" values that have a rule (the batch triangle,
   bucket sizes from hidden_size, warmup_min_lr = 0, warmup_max_lr = lr,
   stage3_gather_16bit_weights_on_model_save = false), DeepSpeed's None
   defaults (overlap_comm, warmup_max_lr, communication_data_type, ...), then
   check the whole config. Any "auto" left is an error naming the key and the
   field to set. Errors and warnings name the place of their key in the
   text the config was parsed from (cfg->source), while the field holds the
   value parsed there. world_size is the data-parallel size. Idempotent. */
ZERO_API zero_result zero_config_resolve(zero_config *cfg, int world_size, zero_error *err);

/* Write the configuration as DeepSpeed JSON (every key, resolved values) into
   buf (NUL-terminated, truncated to cap). Returns the length it needs. */
ZERO_API size_t zero_config_to_json(const zero_config *cfg, char *buf, size_t cap);

/* ---- >>api-keys: the config key table (what docs/config.md is made from) ---- */

typedef enum zero_key_status {
    ZERO_KEY_IMPLEMENTED,     /* zero does what DeepSpeed does with it */
    ZERO_KEY_NOT_YET,         /* accepted, its behaviour not built; warns */
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

/* ---- >>api-scaler: the dynamic loss scaler (DeepSpeed's DynamicLossScaler) ---- */

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
/* The scale S to multiply the loss by (NaN for an invalid scaler: cfg or s NULL, fp16.enabled "auto"). */
ZERO_API double zero_loss_scaler_scale(const zero_loss_scaler *s);

/* ---- >>api-schedules: learning-rate schedules (zero_lr_at) ---- */

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

/* ---- >>api-estimator: the memory estimator ---- */

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
    int64_t stage3_max_live_parameters; /* elements; <= 0: not given, so derived as the engine derives it for a
                                           program that gives its layers groups (the pool 4 L, the three largest
                                           groups and the largest once more, the prefetch inside it; at most the
                                           pool of DeepSpeed's 1e9 + 5e7) */
    int64_t stage3_prefetch_bucket_size; /* elements; < 0 means 5e7 (with max_live given) */
    int mics_shard_size;             /* hybrid sharding: zero's plan shards over groups of this
                                        many GPUs (<= 0: all of them); must divide the GPU count.
                                        DeepSpeed's figures stay flat (its estimators have no MiCS) */
    zero_optimizer_type optimizer;   /* zero's plan: the fp32 master and this optimizer's state, 4 bytes
                                        each (zero_optimizer_state_mask: Adam 12 a parameter, Lion and
                                        Adagrad 8, SGD 4 or with momentum 8); NVMe tiles keep 12.
                                        0: Adam. DeepSpeed's figures assume Adam */
    double momentum;                 /* SGD's momentum (0: no buffer) */
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


/* ---- >>api-fp16: fp16 and bf16 conversions ---- */

/* IEEE binary16 and bfloat16 as raw bits, converted with round-to-nearest-
   even (what CUDA's __float2half_rn / __float2bfloat16_rn do). NaN stays NaN
   (quiet), overflow goes to inf. */
typedef uint16_t zero_f16;
typedef uint16_t zero_bf16;
ZERO_API zero_f16 zero_f32_to_f16(float x);
ZERO_API float zero_f16_to_f32(zero_f16 h);
ZERO_API zero_bf16 zero_f32_to_bf16(float x);
ZERO_API float zero_bf16_to_f32(zero_bf16 h);
/* bytes of one element of dtype (DEFAULT counts as fp32) */
ZERO_API size_t zero_dtype_size(zero_dtype dtype);
ZERO_API const char *zero_dtype_name(zero_dtype dtype);

/* ---- >>api-layout: tensors and the unit layout ---- */

#define ZERO_MAX_DIMS 8
/* Every unit, chunk and tensor starts at a multiple of ZERO_ALIGN elements:
   16 bytes of fp16/bf16, 32 of fp32, so 16-byte vector access works in
   every dtype. */
#define ZERO_ALIGN 8

enum {
    ZERO_TENSOR_FROZEN = 1 << 0,   /* no gradient, no optimizer state, never reduced */
    ZERO_TENSOR_NO_DECAY = 1 << 1, /* weight decay off (biases, norms) */
    ZERO_TENSOR_GRAD_WRITE = 1 << 2, /* the backward stores every element of the gradient
                                       (no +=): zero_grad's buffer need not be zero, and
                                       stages 2-3 skip clearing it (one pass less) */
    ZERO_TENSOR_MUON = 1 << 4,     /* optimizer Muon: this tensor takes Muon's update (it must be 2-D,
                                      or 3-D: a stack of matrices), whatever its name */
    ZERO_TENSOR_ADAM = 1 << 5,     /* optimizer Muon: this tensor takes the AdamW side. Neither flag:
                                      DeepSpeed's split (a tensor of 2 or 3 dimensions whose name
                                      holds neither "embed" nor "lm_head", any case, takes Muon) */
    ZERO_TENSOR_GRAD_ANY_ORDER = 1 << 3 /* a hint, never needed: its gradient is written at
                                       distant points of the backward (a tied embedding:
                                       the head at the start, the embedding at the end).
                                       Stages 2-3 give such a span a gradient buffer of its
                                       own instead of a slot of the two-slot ring; without
                                       the hint the engine finds it in the first
                                       micro-batch (one stand-in buffer and a re-plan at
                                       its end, then the same plan); with it, planned at
                                       create. Counted under GRADS either way. */
};

/* Writes the initial fp32 values of elements [offset, offset + count) of
   tensor `tensor` into out. Each rank is asked only for the ranges it keeps,
   so initial weights never depend on the world size; a callback that is a
   function of (tensor, element index) gives the same model on any layout. */
typedef void (*zero_init_fn)(void *user, int tensor, int64_t offset, int64_t count,
                             float *out);

/* One parameter tensor, registered in forward order. Zero-initialise and set
   what you need: zero means "default" for every field. */
typedef struct zero_tensor {
    const char *name;          /* unique; copied */
    int64_t numel;             /* elements, >= 1 */
    int ndim;                  /* 0: a flat [numel] */
    int64_t shape[ZERO_MAX_DIMS]; /* product must equal numel when ndim > 0 */
    int group;                 /* a layer id: units never cross a change of group */
    int flags;                 /* ZERO_TENSOR_* */
    float lr_scale;            /* multiplies the learning rate; 0 means 1 */
    zero_init_fn init;         /* NULL: zeros */
    void *init_user;
    void *data;                /* the program's own memory for the tensor's full parameters in
                                  the compute dtype (stages 0-2), or NULL: the engine's. Given for
                                  every tensor or none. The engine takes the initial weights from
                                  it (rank 0's, broadcast) and writes the updated parameters back
                                  into it each step; zero_param returns it. A slice of a larger
                                  allocation (one layer of a stacked [L, ...] array) is fine. */
    void *grad;                /* the program's own memory for the tensor's gradient in the compute
                                  dtype, or NULL: the engine's. Given for every trainable tensor or
                                  none, any stage. zero_grad returns it, cleared at the micro-batch's
                                  first request (unless ZERO_TENSOR_GRAD_WRITE); the engine reduces
                                  from it when the tensor's unit is ready. Gradients may then be
                                  finished in any order. */
} zero_tensor;

/* The zero_tensor table of a program that keeps its parameters as llm.c
   does (ParameterTensors): n kinds, named by the words of `kinds` ("wte wpe
   ln1w ..."), kind k starting at data[k] (and its gradient at grad[k]; grad
   NULL: the engine's gradient memory) with numel[k] elements; the kinds
   [first_stacked, end_stacked) are stacked over `layers` layers (layer l's
   slice of numel[k] / layers elements at data[k] + l * slice), the others are
   one tensor each. The table is in forward order: the whole kinds before
   the stacked ones (group 0), then layer by layer each stacked kind's slice
   (group 1 + l, named "h.<l>.<kind>"), then the whole kinds after them
   (group layers + 1). esize: bytes of one compute-dtype element. Tensor
   names go into names[i] (the engine copies them at create). Returns the
   number of tensors, or -1 with err (BAD_ARG naming the kind: a numel the
   layers do not divide, a bad range, more tensors than cap, more kinds than
   64). */
ZERO_API int zero_tensors_of_kinds(const char *kinds, void *const *data, void *const *grad, const size_t *numel,
                                   int first_stacked, int end_stacked, int layers, size_t esize, zero_tensor *out, int cap,
                                   char (*names)[64], zero_error *err);

typedef struct zero_layout zero_layout;

/* How the planner cuts tensors into units (zero_engine_create fills it from
   the config: reduce_bucket_size, and for stage 3 the persistence
   thresholds). */
typedef struct zero_layout_args {
    int world;                      /* ranks sharing every unit, >= 1 */
    int64_t bucket_elems;           /* reduce_bucket_size: most elements in one unit;
                                       0: one tensor per unit (none split) */
    int64_t persist_threshold;      /* tensors of at most this many elements are
                                       persistent (stage 3); <= 0: none */
    int64_t model_persist_threshold;/* cap on all persistent elements; <= 0: no cap */
} zero_layout_args;

/* A unit: a run of whole tensors in registration order (or one piece of a
   tensor larger than bucket_elems), never crossing a change of group,
   frozen-ness or persistence. In buffers that hold whole units it occupies
   [offset, offset + padded); rank r owns [offset + r * chunk, offset +
   (r + 1) * chunk), of which zero_layout_chunk_real(r) lie inside numel and
   the rest is padding. */
typedef struct zero_unit {
    int64_t offset;     /* in the padded full buffer */
    int64_t numel;      /* elements from the first tensor's start to the last one's end
                           (model data plus alignment gaps between tensors) */
    int64_t padded;     /* numel rounded up to a multiple of world * ZERO_ALIGN */
    int64_t chunk;      /* padded / world */
    int64_t shard_offset; /* where this unit's chunk sits in a rank's shard */
    int first_tensor, last_tensor; /* tensors overlapping the unit, inclusive */
    int span;           /* units of one split tensor share a span */
    int group;
    int frozen, persistent;
} zero_unit;

/* Where a tensor lives. A tensor larger than bucket_elems is split into
   pieces of a multiple of world * ZERO_ALIGN elements (so the pieces stay
   contiguous in memory; this is the one place the world size moves a unit
   boundary); every other unit holds whole tensors. */
typedef struct zero_tensor_place {
    int64_t offset;     /* in the padded full buffer (a multiple of ZERO_ALIGN) */
    int first_unit, n_units;
    int64_t unit_offset;/* offset of the tensor inside its first unit */
} zero_tensor_place;

/* One element's home: unit, owning rank, and the offset in that rank's
   shard (what checkpoints address). */
typedef struct zero_location {
    int unit;
    int rank;
    int64_t shard_offset;
} zero_location;

ZERO_API zero_result zero_layout_create(zero_layout **out, const zero_tensor *tensors,
                                        int n_tensors, const zero_layout_args *args,
                                        zero_error *err);
ZERO_API void zero_layout_destroy(zero_layout *l);
ZERO_API int zero_layout_unit_count(const zero_layout *l);
ZERO_API int zero_layout_tensor_count(const zero_layout *l);
ZERO_API int zero_layout_world(const zero_layout *l);
ZERO_API const zero_unit *zero_layout_unit(const zero_layout *l, int unit);
ZERO_API const zero_tensor_place *zero_layout_tensor(const zero_layout *l, int tensor);
ZERO_API const char *zero_layout_tensor_name(const zero_layout *l, int tensor);
ZERO_API int zero_layout_find(const zero_layout *l, const char *name); /* -1: none */
/* Elements of rank's chunk of unit inside the unit's numel: model data and
   the alignment gaps between its tensors (0 when the rank owns only padding). */
ZERO_API int64_t zero_layout_chunk_real(const zero_layout *l, int unit, int rank);
/* Padded full-buffer elements (sum of padded over units). */
ZERO_API int64_t zero_layout_padded_numel(const zero_layout *l);
/* Elements of one rank's shard (sum of chunk over units; equal on every
   rank). trainable_only: skip frozen units. */
ZERO_API int64_t zero_layout_shard_numel(const zero_layout *l, int trainable_only);
/* Element `offset` of `tensor`: its unit, owner and shard offset. */
ZERO_API zero_result zero_layout_locate(const zero_layout *l, int tensor, int64_t offset,
                                        zero_location *out, zero_error *err);

/* ---- >>api-backend: the backend seam (zero_backend) and the host backend ---- */

typedef enum zero_mem_kind {
    ZERO_MEM_DEVICE,  /* GPU memory (host backend: ordinary memory, counted as device) */
    ZERO_MEM_PINNED,  /* page-locked host memory */
    ZERO_MEM_HOST,    /* ordinary host memory */
    ZERO_MEM_KIND_COUNT
} zero_mem_kind;

typedef enum zero_stream_id {
    ZERO_STREAM_COMPUTE, /* the user's stream: backward writes gradients here */
    ZERO_STREAM_COMM,    /* collectives and the kernels around them */
    ZERO_STREAM_COUNT
} zero_stream_id;

typedef enum zero_op {
    ZERO_OP_SUM,
    ZERO_OP_MAX,
    ZERO_OP_MIN,
    ZERO_OP_AVG, /* the mean: each contribution times 1/world (rounded to the dtype),
                    then the sum; NCCL's ncclAvg. The gradient reductions use it */
    ZERO_OP_COUNT
} zero_op;

/* Hybrid sharding (zero_optimization.mics_shard_size = G, world % G == 0):
   rank r's shard group is the G consecutive ranks r / G * G .. r / G * G + G - 1,
   which share one copy of the sharded state; its replica group is the
   world / G ranks r % G, r % G + G, ..., which hold the same shard. */
typedef enum zero_group {
    ZERO_GROUP_WORLD,   /* every rank: what the plain collectives use */
    ZERO_GROUP_SHARD,
    ZERO_GROUP_REPLICA,
    ZERO_GROUP_COUNT
} zero_group;

typedef struct zero_event zero_event; /* backend-defined */

/* One contiguous piece of an Adam update: elements [offset, offset + count)
   of the buffers in zero_adam_args, with their own lr and weight decay
   (parameter groups). */
typedef struct zero_adam_seg {
    int64_t offset, count;
    float lr, weight_decay;
    int muon;  /* 1: a Muon segment (zero_adam_args below: Muon), whatever the call's rule */
} zero_adam_seg;

/* One piece of a sumsq_segs call: count elements at x, their statistics
   added into out[0..1] as sumsq does. */
typedef struct zero_sumsq_seg {
    const void *x;
    int64_t count;
    double *out;
} zero_sumsq_seg;

/* DeepSpeed's fused/CPU Adam per element, fp32 math:
     g = grad * grad_scale                    (unscale, 1/GAS and clip in one factor)
     if (!adamw && wd) g += wd * p
     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
     denom = sqrt(v) * bc2 + eps               bc2 = 1/sqrt(1 - b2^t)
     if (adamw && wd)  p = p - lr wd p         (pre-update p)
     p = p - (lr / bc1) * m / denom            bc1 = 1 - b1^t
   then param (compute dtype) = round(p) when param != NULL.
   kind picks another rule (zero_optimizer_type; ADAM and ADAMW are the one
   above, adamw deciding the decay), each with g = grad * grad_scale and the
   segment's lr and wd:
     LION     c = fma(g, 1 - b1, b1 m); u = -copysign(lr, c)   (DeepSpeed's CPU
              Lion: c == +0 moves by -lr); p = wd > 0 ? fma(p, 1 - lr wd, u)
              : p + u; m = fma(g, 1 - b2, b2 m)                 (m only)
     ADAGRAD  if (wd > 0) g = fma(p, wd, g); v = fma(g, g, v);  (DeepSpeed's CPU
              p = fma(g / (sqrt(v) + eps), -lr, p)               Adagrad; v only)
     SGD      d = g + wd p (wd != 0); with momentum: m = first ? d : momentum m +
              (1 - dampening) d, d = nesterov ? d + momentum m : m;
              p = p - lr d                                     (torch.optim.SGD; m
              only with momentum, unread otherwise)
     LAMB     two calls, lamb_pass 1 then 2 (DeepSpeed's FusedLamb: moments
              without bias correction inside u, the correction in the step):
              1: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g;
                 u = m / (sqrt(v) + eps) + wd p  (sqrt(v + eps): eps_inside);
                 segment k's sums of p^2 and u^2, in double, in element
                 order, added to lamb_sums[2k], [2k + 1]; p unchanged
              2: u again from the same m, v, p (bitwise pass 1's);
                 p = p - (lr / (bc1 bc2) * lamb_ratio[k]) u
              Pass 1 continues the sums where a call before it left them, so
              a segment cut into pieces adds up as if stepped whole.
     MUON     the segments with seg.muon set, in two calls around the
              orthogonalisation (zero_muon_orthogonalize); b = momentum:
              muon_pass 1 (kind MUON; the other segments untouched):
                 m = fmaf(g - m, 1 - b, m); v = nesterov ? fmaf(g - m, 1 - b, m)
                 : m  (DeepSpeed's lerps, with the new m); p unchanged, no param
              then the engine turns v (whole matrices) into the orthogonalised
              update o; in the call of any rule (muon_pass 0), a segment with
              seg.muon set takes o from v:
                 p = wd > 0 ? fmaf(-lr, v, p * (1 - lr wd)) : fmaf(-lr, v, p)
              (1 - lr wd: one fp32 product and difference), then param.
   The state a rule does not use may be NULL (zero_optimizer_state_mask). */
typedef struct zero_adam_args {
    float *master, *m, *v;     /* fp32 */
    const void *grad; zero_dtype grad_dtype;
    void *param; zero_dtype param_dtype; /* compute-dtype copy to write, or NULL */
    const zero_adam_seg *segs; int n_segs;
    float beta1, beta2, eps;
    float bc1, bc2;            /* bias corrections as above (1 when off) */
    float grad_scale;
    int adamw;
    int kind;                  /* zero_optimizer_type (0: Adam) */
    float momentum, dampening; /* SGD */
    int nesterov, first;       /* SGD: nesterov; the first applied step (the buffer starts as d) */
    int lamb_pass, eps_inside; /* LAMB: 1 or 2 (above); eps under the square root */
    double *lamb_sums;         /* LAMB pass 1: per segment, sum p^2 and sum u^2 (added to) */
    const float *lamb_ratio;   /* LAMB pass 2: per segment, its tensor's trust ratio */
    int muon_pass;             /* MUON: 1 (above); 0 in every other call */
} zero_adam_args;

/* The fp32 state arrays the rule of `type` keeps per element: bit 0 m (Adam's
   and Lamb's first moment, Lion's momentum, SGD's momentum buffer when
   momentum != 0), bit 1 v (Adam's and Lamb's second moment, Adagrad's sum of
   squares). Lamb's per-tensor norms are not per element (two doubles a
   tensor and a ratio a segment, for the step only). */
ZERO_API int zero_optimizer_state_mask(zero_optimizer_type type, double momentum);
/* "Adam", "AdamW", "Lion", "Adagrad", "SGD", "Lamb", "Muon"; "?" outside the enum. */
ZERO_API const char *zero_optimizer_name(zero_optimizer_type type);

/* Muon's orthogonalisation, in place, of `batch` matrices of rows x cols
   (row-major, one after the other), each as DeepSpeed's
   zeropower_via_newtonschulz5 in fp32: X the matrix, transposed when rows >
   cols; X = X / (|X|_F + 1e-7) (the norm summed in double); `steps` times
   A = X X^T, B = b A + c (A A), X = a X + B X with (a, b, c) = (3.4445,
   -4.7750, 2.0315); back untransposed, times `scale` (the engine passes
   sqrt(max(1, rows / cols))). work: zero_muon_work_elems(rows, cols) floats
   of scratch. The host's loops; the CUDA backend's muon_ns does the same on
   the device (its sums in another order). */
ZERO_API zero_result zero_muon_orthogonalize(float *x, int64_t batch, int64_t rows, int64_t cols, int steps, float scale,
                                             float *work, zero_error *err);
/* The scratch one matrix's orthogonalisation takes: 2 r^2 + r c floats, r
   the smaller side and c the larger (A, B and the next X). */
ZERO_API int64_t zero_muon_work_elems(int64_t rows, int64_t cols);

/* Everything the engine needs from a machine. Calls on one stream run in
   order; the engine orders streams with events. Collectives are called by
   every rank in the same order (NCCL semantics): reduce_scatter's send holds
   world * count elements and recv gets this rank's count (recv may be send +
   rank * count); all_gather's send holds count and recv world * count (send
   may be recv + rank * count); all_reduce and broadcast may work in place.
   Every function returns ZERO_OK or an error with err filled. */
typedef struct zero_backend {
    void *ctx;
    int rank, world;
    const char *name;         /* "host", "cuda" */
    zero_result (*alloc)(void *ctx, zero_mem_kind kind, size_t bytes, void **out, zero_error *err);
    void (*free)(void *ctx, zero_mem_kind kind, void *p);
    zero_result (*memset0)(void *ctx, void *p, size_t bytes, zero_stream_id s, zero_error *err);
    /* copy between any two kinds */
    zero_result (*copy)(void *ctx, void *dst, const void *src, size_t bytes, zero_stream_id s,
                        zero_error *err);
    zero_result (*event_create)(void *ctx, zero_event **out, zero_error *err);
    void (*event_destroy)(void *ctx, zero_event *ev);
    zero_result (*event_record)(void *ctx, zero_event *ev, zero_stream_id s, zero_error *err);
    zero_result (*stream_wait)(void *ctx, zero_stream_id s, zero_event *ev, zero_error *err);
    zero_result (*sync)(void *ctx, zero_stream_id s, zero_error *err); /* host waits */
    zero_result (*reduce_scatter)(void *ctx, const void *send, void *recv, size_t count,
                                  zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err);
    zero_result (*all_gather)(void *ctx, const void *send, void *recv, size_t count,
                              zero_dtype dt, zero_stream_id s, zero_error *err);
    zero_result (*all_reduce)(void *ctx, const void *send, void *recv, size_t count,
                              zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err);
    zero_result (*broadcast)(void *ctx, void *buf, size_t count, zero_dtype dt, int root,
                             zero_stream_id s, zero_error *err);
    /* x[i] *= factor (in x's dtype, rounded once) */
    zero_result (*scale)(void *ctx, void *x, size_t n, zero_dtype dt, float factor,
                         zero_stream_id s, zero_error *err);
    /* dst[i] (dst_dt) = src[i] (src_dt) when !accumulate, dst[i] += src[i]
       (in fp32, rounded to dst_dt) when accumulate */
    zero_result (*convert)(void *ctx, void *dst, zero_dtype dst_dt, const void *src,
                           zero_dtype src_dt, size_t n, int accumulate, zero_stream_id s,
                           zero_error *err);
    /* out[0] += sum of x[i]^2 in double (sequential order on the host backend),
       out[1] = max(out[1], 1) when any x[i] is inf or nan. out: 2 doubles in
       device memory. */
    zero_result (*sumsq)(void *ctx, const void *x, size_t n, zero_dtype dt, double *out,
                         zero_stream_id s, zero_error *err);
    zero_result (*adam)(void *ctx, const zero_adam_args *a, zero_stream_id s, zero_error *err);
    /* Adam over host memory (pinned or ordinary), synchronous, for
       offload_optimizer.device "cpu", called with cpu_ctx; NULL: this backend
       cannot offload (zero_offload_backend in zero_offload.h puts its SIMD CPU
       Adam here) */
    zero_result (*cpu_adam)(void *cpu_ctx, const zero_adam_args *a, zero_error *err);
    void *cpu_ctx;
    /* Optional tile store for offload_optimizer / offload_param "nvme"
       (NULL: none; zero_offload_backend puts zero_offload.h's NVMe store
       here): one tile per unit in files under dir, named after `name`
       ("zero_optim", "zero_param") and the rank, tiles at most tile_bytes;
       read / write are asynchronous and return a request that tiles_wait
       completes (buffers stay valid until then); close removes the files.
       Errors name the file. */
    zero_result (*tiles_open)(void *cpu_ctx, const char *dir, const char *name, int rank, size_t tile_bytes,
                              const zero_aio_config *aio, void **store, zero_error *err);
    void (*tiles_close)(void *store);
    zero_result (*tiles_read)(void *store, int64_t tile, void *buf, size_t bytes, void **req,
                              zero_error *err);
    zero_result (*tiles_write)(void *store, int64_t tile, const void *buf, size_t bytes, void **req,
                               zero_error *err);
    zero_result (*tiles_wait)(void *store, void *req, zero_error *err);
    /* Optional: the host waits until event ev completed, safely from another
       thread than the one using the backend (the engine's CPU-step thread).
       NULL: events complete at once (the host backend, whose copies are
       synchronous). */
    zero_result (*event_sync)(void *ctx, zero_event *ev, zero_error *err);
    /* Optional: the kind of memory ptr points into (ZERO_MEM_DEVICE, _PINNED,
       _HOST), or -1 when unknown; the engine checks a program's tensor
       memory with it. NULL: not checked. */
    int (*mem_kind_of)(void *ctx, const void *ptr);
    /* Optional: the bytes from ptr to the end of the allocation it points
       into, or -1 when unknown; the engine checks that a program's tensor
       fits. NULL: not checked. */
    int64_t (*mem_extent)(void *ctx, const void *ptr);
    /* Optional: sumsq over n_segs segments of dtype dt in one call, each
       segment's result the same bits as sumsq(segs[k].x, segs[k].count, dt,
       segs[k].out); the segments' outs are distinct. The CUDA backend runs
       many segments per launch. NULL: the engine calls sumsq per segment. */
    zero_result (*sumsq_segs)(void *ctx, const zero_sumsq_seg *segs, int n_segs, zero_dtype dt, zero_stream_id s,
                              zero_error *err);
    /* Optional: adam(&a[0]) ... adam(&a[n - 1]) in one call, the calls over
       disjoint memory; the same result as those calls. The CUDA backend runs
       the segments of many calls per launch where the calls share their
       hyperparameters and dtypes. NULL: the engine calls adam per unit. */
    zero_result (*adam_multi)(void *ctx, const zero_adam_args *a, int n, zero_stream_id s, zero_error *err);
    /* Optional (hybrid sharding; NULL: flat sharding only): groups_init makes
       the shard and replica groups of shard size G (see zero_group), called
       by every rank with the same G, once per engine (again with another G
       remakes them); then the group_ collectives are reduce_scatter,
       all_gather and all_reduce over one group, its ranks (and the chunks of
       reduce_scatter and all_gather) in world order, AVG dividing by the
       group's size. ZERO_GROUP_WORLD is the plain collective. The engine
       needs all four only when G < world. */
    zero_result (*groups_init)(void *ctx, int shard_size, zero_error *err);
    zero_result (*group_reduce_scatter)(void *ctx, zero_group g, const void *send, void *recv, size_t count,
                                        zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err);
    zero_result (*group_all_gather)(void *ctx, zero_group g, const void *send, void *recv, size_t count,
                                    zero_dtype dt, zero_stream_id s, zero_error *err);
    zero_result (*group_all_reduce)(void *ctx, zero_group g, const void *send, void *recv, size_t count,
                                    zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err);
    /* Optional (stage 3 behind the program's own pointers: zero_alloc; NULL:
       not offered, zero_alloc says so). Address ranges whose pages the engine
       backs with memory only while it needs them:
         vm_reserve  a range of at least `bytes`, rounded up to *granule (which
                     it sets: the unit of backing) into *reserved; with
                     `backed` 1 every page backed and readable and writable
                     by the backend's kernels (zero_alloc: what the program
                     fills before zero_engine_create), with 0 none (the
                     engine's own ranges, backed by vm_back as they fill);
         vm_back     pages [p, p + bytes) (granule-aligned, inside a range,
                     unbacked) get memory and become accessible; contents
                     undefined;
         vm_unback   pages [p, p + bytes) (granule-aligned, backed) are no
                     longer needed: their contents are lost and they may
                     become inaccessible (a backend that backs each vm_back
                     call as one piece keeps a piece until all its pages are
                     unbacked); the caller has waited for all work that
                     touches them;
         vm_release  the whole range (base and *reserved from vm_reserve) freed,
                     backed pages included.
       Memory behind unbacked pages goes back to a pool of the backend's, so
       backing again creates nothing once the pool holds enough. */
    zero_result (*vm_reserve)(void *ctx, size_t bytes, int backed, void **base, size_t *reserved, size_t *granule,
                              zero_error *err);
    zero_result (*vm_back)(void *ctx, void *p, size_t bytes, zero_error *err);
    zero_result (*vm_unback)(void *ctx, void *p, size_t bytes, zero_error *err);
    void (*vm_release)(void *ctx, void *base, size_t reserved);
    /* Optional (ZERO_TIMELINE; NULL: no timeline): an event that
       event_elapsed can time (event_destroy frees it), and the milliseconds
       from a's completion to b's, both recorded; the host waits for both
       first, within ZERO_TIMEOUT_S. */
    zero_result (*event_create_timed)(void *ctx, zero_event **out, zero_error *err);
    zero_result (*event_elapsed)(void *ctx, zero_event *a, zero_event *b, double *ms, zero_error *err);
    /* Optional: convert's rule over host memory (pinned or ordinary),
       synchronous, called with cpu_ctx from the engine's CPU thread. With
       offload_optimizer and gradient accumulation at stages 2-3 the engine
       adds the micro-batches before the last into the host staging with it
       (NULL: each is added on the device, the sum going there and back).
       zero_offload_backend spreads it over its pool. */
    zero_result (*cpu_convert)(void *cpu_ctx, void *dst, zero_dtype dst_dt, const void *src, zero_dtype src_dt, size_t n,
                               int accumulate, zero_error *err);
    /* Bit k set: adam and adam_multi run zero_optimizer_type k's rule
       (zero_adam_args.kind); Adam and AdamW need no bit. The engine refuses
       another rule on the device where its bit is clear (cpu_adam, the CPU
       offload's, runs every rule). The host and CUDA backends set the bits
       of Lion, Adagrad and SGD. */
    unsigned opt_rules;
    /* Optional: the bytes of device memory free now and in all (the CUDA
       backend: cudaMemGetInfo; the host backend: what ZERO_HOST_MEM_LIMIT
       leaves of its limit, when one is set); 0, or -1 when unknown (NULL:
       unknown). zero_config.grad_accum_device's default decides by it. */
    int (*mem_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
    /* Optional: zero_muon_orthogonalize on the backend's memory, queued on
       stream s (x and work there). NULL: the engine runs
       zero_muon_orthogonalize on the host (where x lives on the host). */
    zero_result (*muon_ns)(void *ctx, float *x, int64_t batch, int64_t rows, int64_t cols, int steps, float scale,
                           float *work, zero_stream_id s, zero_error *err);
} zero_backend;

/* The host backend: rank i of `world` ranks runs fn(backend_i, arg) on its own
   thread. Collectives go through shared memory and add in rank order (rank 0
   first, rounding to the dtype after each addition), so results are the
   same on every run. A rank that returns early, a mismatch of collectives
   and a wait past ZERO_TIMEOUT_S seconds (environment, default 300; alias
   ZERO_HOST_TIMEOUT_S)
   fail the others' collectives with an error instead of hanging. Returns
   ZERO_OK when every rank's fn did, else the first failing rank's result
   (err says which rank and why). */
typedef zero_result (*zero_host_fn)(const zero_backend *backend, void *arg);
ZERO_API zero_result zero_host_run(int world, zero_host_fn fn, void *arg, zero_error *err);
/* Bytes of `kind` this host rank holds from backend->alloc right now (what a
   memory test compares with zero_memory_report's plan); 0 for other backends. */
ZERO_API size_t zero_host_allocated_bytes(const zero_backend *backend, zero_mem_kind kind);

/* Memory for the program's parameters that stage 3 can leave where they are
   (docs/porting.md "Stage 3"): `bytes` of the memory the backend computes on
   (device memory for the CUDA backend), all of it readable and writable, as
   cudaMalloc's, so the program fills it as before (its checkpoint, its
   initialisation). A stage-3 engine whose tensors' `.data` point into it
   takes rank 0's values at create and from then on backs with memory only
   the pages of what is gathered (between zero_fetch and zero_release, what
   prefetch brought, the persistent tensors): the program's pointers, its
   pointer arithmetic over stacked layers included, stay valid, and a read of
   a layer that is not fetched touches unbacked memory (a fault on host ranks,
   an illegal address on a GPU) instead of stale values. At stages 0-2 it is
   plain memory. Backends without the vm_ operations refuse (UNSUPPORTED).
   The pages are whole granules (2 MiB on the GPUs measured; the host page,
   or ZERO_HOST_VM_PAGE bytes, on host ranks). Keep parameters only in it:
   the engine unbacks every page no tensor of its own holds. */
ZERO_API zero_result zero_alloc(const zero_backend *backend, size_t bytes, void **out, zero_error *err);
/* Frees memory from zero_alloc (after the engine that used it is destroyed);
   NULL does nothing. */
ZERO_API void zero_free(const zero_backend *backend, void *p);

/* ---- >>api-engine: the engine (create, fetch, grad, step, save, load, report) ---- */

typedef struct zero_engine zero_engine;

typedef enum zero_phase {
    ZERO_PHASE_BACKWARD,   /* first gradient touched to the last one ready (all micro-batches) */
    ZERO_PHASE_REDUCE,     /* gradient reductions and accumulation */
    ZERO_PHASE_FETCH,      /* stage-3 gathers and waits */
    ZERO_PHASE_NORM,       /* overflow check and global norm */
    ZERO_PHASE_OPTIMIZER,  /* Adam and the compute-dtype copy */
    ZERO_PHASE_GATHER,     /* all-gather of updated parameters */
    ZERO_PHASE_STEP,       /* all of zero_step */
    ZERO_PHASE_COUNT
} zero_phase;

/* The parts of a step whose copies zero_step_info counts apart: the
   forward (zero_fetch before the micro-batch's first zero_grad), the
   backward (from there to its last zero_grad_ready) and zero_step. */
typedef enum zero_xfer_phase {
    ZERO_XFER_FORWARD,
    ZERO_XFER_BACKWARD,
    ZERO_XFER_STEP,
    ZERO_XFER_PHASE_COUNT
} zero_xfer_phase;

typedef struct zero_step_info {
    int applied;           /* 1: weights updated; 0: skipped (inf/nan gradients) */
    int64_t global_steps;  /* after this step (skipped ones count, as DeepSpeed) */
    int64_t skipped_steps; /* total so far */
    double loss_scale;     /* the scale this step's gradients carried */
    double next_loss_scale;/* zero_loss_scale() for the next step */
    double grad_norm;      /* global L2 norm of the averaged, unscaled gradient before
                              clipping; -1 when not finite (DeepSpeed's convention) */
    double clip_coef;      /* factor clipping applied (1: none) */
    double lr;             /* base learning rate of this step (before lr_scale) */
    int overflow_unit;     /* first unit with inf/nan (-1: none) */
    int overflow_tensor;   /* first tensor (registration order) with inf/nan there (-1: none) */
    double time_ms[ZERO_PHASE_COUNT]; /* this step's phase times (milliseconds) */
    /* stage 3, over this step's micro-batches: */
    int64_t fetches;       /* zero_fetch calls of non-persistent tensors */
    int64_t fetch_hits;    /* ... that found their unit gathered already (prefetched or kept) */
    int64_t units_gathered;/* all-gathers of units (fetches, prefetches, persistent refresh) */
    /* offload_optimizer "cpu": units whose CPU Adam was started during the
       backward (the early step: no clipping, no overflow check); 0 when the
       CPU stepped them in zero_step */
    int64_t cpu_units_early;
    int skipped_by_program;/* 1: zero_skip_step skipped it (applied 0, the norm finite) */
    /* cfg.overlap_cpu_step: units whose CPU Adam zero_step left to the
       engine's thread, to finish beside the next forward (0: none) */
    int64_t cpu_units_overlapped;
    /* What crossed PCIe for this step on this rank, bytes, by phase: the
       copies the engine issued between its host memory (pinned or not) and
       device memory (what zero_floor_of prices). The reads and writes of
       zero_read_state, zero_save, zero_load and the export between steps
       are not counted. */
    int64_t bytes_to_device[ZERO_XFER_PHASE_COUNT];
    int64_t bytes_to_host[ZERO_XFER_PHASE_COUNT];
    /* offload_optimizer: the host memory the CPU Adam of this step reads
       and writes, bytes (master, m and v read and written, the gradient
       read, the compute-dtype parameters written); 0 when skipped. With
       delayed_param_update it runs during the next step. */
    int64_t cpu_adam_bytes;
    /* What this rank's collectives sent for this step, bytes, per group
       (ZERO_GROUP_WORLD: the flat collectives; with mics_shard_size the
       reductions and gathers inside the shard group and the all-reduce
       across groups): a reduce-scatter or all-gather of n ranks sends
       (n - 1) / n of the whole buffer, an all-reduce 2 (n - 1) / n, as
       NCCL's ring does. The statistics' few bytes are counted too. */
    int64_t comm_bytes[ZERO_GROUP_COUNT];
} zero_step_info;


typedef enum zero_mem_category {
    ZERO_MEM_PARAMS,       /* compute-dtype parameters: full, or own shard (stage 3) */
    ZERO_MEM_GATHER_POOL,  /* stage 3: gathered units */
    ZERO_MEM_GRADS,        /* compute-dtype gradients: full, or the unit ring (stage 2-3) */
    ZERO_MEM_GRAD_ACCUM,   /* accumulation over micro-batches / reduced owned chunks */
    ZERO_MEM_MASTER,       /* fp32 master weights (0 when fp32 params are the master) */
    ZERO_MEM_OPTIM_STATE,  /* Adam m and v */
    ZERO_MEM_SCRATCH,      /* reduction staging and small statistics */
    ZERO_MEM_CATEGORY_COUNT
} zero_mem_category;

typedef struct zero_memory_stats {
    size_t planned[ZERO_MEM_CATEGORY_COUNT][ZERO_MEM_KIND_COUNT]; /* bytes, this rank */
    size_t allocated[ZERO_MEM_KIND_COUNT]; /* what the backend handed out, this rank */
    size_t planned_total[ZERO_MEM_KIND_COUNT];
    int64_t params, trainable_params; /* model elements (no padding) */
    int64_t padded_params;            /* full buffer elements with padding */
    int64_t shard_params;             /* elements of one rank's shard */
    int units, world, stage;
    int shard_world;        /* ranks sharing each unit's shards: mics_shard_size, else world */
    zero_dtype dtype;
    zero_dtype accum_dtype; /* of the accumulator (stages 2-3 with one micro-batch: the compute dtype) */
    size_t nvme_bytes;      /* bytes kept in files, this rank: master, m and v (offload_optimizer "nvme"),
                               the compute-dtype shard (offload_param "nvme") */
    /* stages 2-3: unit spans whose gradients have a buffer of their own beside the two-slot ring (part of
       "gradients"): those with a ZERO_TENSOR_GRAD_ANY_ORDER tensor, and those the engine found written at
       distant points of the backward (a tied embedding: counted from the end of the micro-batch that showed it) */
    int grad_own_spans, grad_own_found;
    size_t grad_own_bytes;
    /* stage 3 behind the program's pointers (zero_alloc): bytes of the program's parameter memory backed now
       (the persistent tensors' pages and the gathered layers'), the most since create, of how many reserved,
       in granules of how many bytes; 0 otherwise. Not in `planned`: the program's memory, as with .data */
    size_t program_backed, program_backed_peak, program_reserved, program_granule;
    /* of its units, how many all-gather straight into the program's memory (each tensor where the unit's layout
       puts it, no padding past the last); the others go through the pool and a copy. All of them: no pool */
    int program_direct_units, program_units;
    /* stage 3: the gather pool's limits in elements, as the config gave them or as create derived them where it
       left them unset (stage3_derived bits: 1 max_live: the three largest groups + the largest once more, 2
       prefetch: the largest group),
       and the largest group (its spans that are not persistent); the parameter bytes on the device (the shard and
       the gather pool; a unit's staging for the program's memory aside) and, with max_live derived, their bound:
       1/N of the model (the shard) + the pool (that max_live) + the persistent tensors, which create checks. 0 at
       stages 0-2 */
    int64_t stage3_max_live, stage3_prefetch, stage3_group_max;
    int64_t stage3_pool_elems; /* the pool's room for spans that are not persistent now (a derived pool grows where
                                  the program holds more than planned: an info line says so) */
    int stage3_derived;
    size_t stage3_param_bytes, stage3_param_bound;
} zero_memory_stats;

/* Plans every buffer from cfg (which zero_config_resolve must have
   resolved for backend->world ranks) and the tensors, allocates them once
   and writes the initial weights through each tensor's init callback. A
   collective: every rank calls it with the same tensors and config. */
ZERO_API zero_result zero_engine_create(zero_engine **out, const zero_config *cfg,
                                        const zero_tensor *tensors, int n_tensors,
                                        const zero_backend *backend, zero_error *err);
/* Frees everything. Later calls with e fail with ENGINE_DESTROYED. */
ZERO_API void zero_engine_destroy(zero_engine *e);
/* The last error of this engine (code ZERO_OK when none). */
ZERO_API const zero_error *zero_engine_error(const zero_engine *e);

/* Tensor t's parameters in the compute dtype (fp32, fp16 or bf16 per the
   config), ZERO_ALIGN-aligned. Stage 3: valid between zero_fetch(t) and
   zero_release(t) (always for persistent tensors). NULL on misuse (see
   zero_engine_error). */
ZERO_API void *zero_param(zero_engine *e, int t);
/* Tensor t's gradient buffer for the current micro-batch, compute dtype,
   zero when the micro-batch's backward first asks for it: write or add the
   gradient of the scaled loss (loss * zero_loss_scale()) into it, then call
   zero_grad_ready. The engine averages over ranks and micro-batches. A tensor
   registered with ZERO_TENSOR_GRAD_WRITE gets a buffer of undefined contents
   that the backward must overwrite entirely. */
ZERO_API void *zero_grad(zero_engine *e, int t);
/* Tensor t's gradient of this micro-batch is complete. When the last tensor
   of a unit is ready, the unit's reduction starts (stage 2-3 every
   micro-batch; stage 0-1 on the last micro-batch of the step). */
ZERO_API zero_result zero_grad_ready(zero_engine *e, int t);
/* Stage 3: gather the unit(s) holding t (with prefetch of what the recorded
   order says comes next); stages 0-2: nothing to do. Counted: every fetch
   needs its release. */
ZERO_API zero_result zero_fetch(zero_engine *e, int t);
/* Kernels that read zero_param(t) are queued on the compute stream before
   the release: a later gather into the same pool memory waits only for the
   compute queued up to the span's last release. */
ZERO_API zero_result zero_release(zero_engine *e, int t);
/* A layer as one call: zero_fetch, zero_release of every tensor of group g
   (zero_tensor.group) in registration order, and zero_grad_ready of every
   trainable tensor of g not ready yet in this micro-batch, the last
   registered first (a tensor whose gradient was never asked for is zero).
   A group no tensor has is refused (BAD_ARG, naming the groups there are).
   With the parameters in zero_alloc memory (stage 3) and the gradients in
   the program's (zero_tensor.grad), these three are the port's only calls
   in the forward and backward. */
ZERO_API zero_result zero_fetch_group(zero_engine *e, int group);
ZERO_API zero_result zero_release_group(zero_engine *e, int group);
ZERO_API zero_result zero_grad_ready_group(zero_engine *e, int group);
/* Stage 3, DeepSpeed's GatheredParameters for C: every rank calls
   zero_gather_params between steps (no tensor fetched); after it every
   tensor is gathered, so a forward alone may run on any ranks (rank 0's
   sampling, an eval on one rank): zero_fetch and zero_release only count,
   zero_param gives every tensor (the program's own pointers with zero_alloc
   memory), nothing is collective. Every rank calls zero_release_params
   before the next gradient or step (asked for in between: ENGINE_GATHERED).
   Memory: the whole model once; a pool smaller than the model gets a
   second one of the model's size until the release (with every unit
   all-gathered straight into zero_alloc memory: none). Stages 0-2: nothing
   to do. */
ZERO_API zero_result zero_gather_params(zero_engine *e);
ZERO_API zero_result zero_release_params(zero_engine *e);
/* The loss scale S to seed the backward with (1 without fp16). */
ZERO_API double zero_loss_scale(const zero_engine *e);
/* The optimizer step, after gradient_accumulation_steps micro-batches:
   finish reductions, agree on inf/nan over all ranks (skip the step if any),
   unscale, clip, Adam, advance the lr schedule, update the loss scale, and
   bring every rank's parameters up to date. info may be NULL. */
ZERO_API zero_result zero_step(zero_engine *e, zero_step_info *info);

/* The program's own schedule and step decisions (DeepSpeed's client
   scheduler, and a skip-a-step-on-an-outlier rule):
   zero_set_lr        the base learning rate (before each tensor's lr_scale)
                      of every step from the next one on, instead of the
                      config's scheduler; lr < 0 hands it back to the config.
   zero_set_betas     Adam's betas likewise (beta1 < 0: back to the config).
                      Both must come before the backward of a step's last
                      micro-batch when the early CPU step is on (its Adam
                      starts there): ENGINE_STEP_DECIDED otherwise.
   zero_grad_norm     after the last micro-batch, before zero_step or
                      zero_skip_step: the global norm of the averaged,
                      unscaled gradient that zero_step reports (-1 when not
                      finite); zero_step reuses it. Every rank calls it.
   zero_skip_step     instead of zero_step: the step's gradients are dropped
                      and it counts as skipped (global_steps and
                      skipped_steps grow, as for an overflow); no Adam, no
                      schedule step, the loss scale unchanged.
                      info->skipped_by_program = 1. */
ZERO_API zero_result zero_set_lr(zero_engine *e, double lr);
ZERO_API zero_result zero_set_betas(zero_engine *e, double beta1, double beta2);
/* DeepSpeed's engine.set_train_batch_size: the global batch from the next
   step on. The micro-batch stays; the micro-batches a step
   (gradient_accumulation_steps) become train_batch_size / (micro-batch x
   ranks), which must divide evenly. Between steps (before the first
   zero_grad of a step, else ENGINE_STEP_EARLY). An engine made with one
   micro-batch a step keeps one and one made with several keeps several (the
   accumulator's buffers and dtype are planned at create): ENGINE_CONFIG
   otherwise, with a hint. The monitors' sample counts follow the new size
   from here on. */
ZERO_API zero_result zero_set_train_batch_size(zero_engine *e, int64_t train_batch_size);
ZERO_API zero_result zero_grad_norm(zero_engine *e, double *norm);
ZERO_API zero_result zero_skip_step(zero_engine *e, zero_step_info *info);

/* What a trainer reduces beside the engine (its loss, token counts): the n
   doubles of vals, in place, reduced over the ranks with ZERO_OP_SUM,
   ZERO_OP_MAX, ZERO_OP_MIN or ZERO_OP_AVG (the sum divided by the world
   size, the same on every backend). Every rank calls it at the same point
   with the same n and op; n at most ZERO_SCALARS_MAX. It waits for the
   engine's communication stream (a reduction still running ends first). */
#define ZERO_SCALARS_MAX 64
ZERO_API zero_result zero_all_reduce_scalars(zero_engine *e, double *vals, int n, zero_op op);
/* With offload_optimizer.delayed_param_update, zero_step leaves the CPU Adam
   of its step running and the device holds the parameters of the step
   before; zero_flush waits for it and brings them to the device (before an
   evaluation, an export, or the end of training). With cfg.overlap_cpu_step
   it waits for the CPU Adam zero_step left running (the CPU pool is free
   after). A collective; a no-op otherwise. */
ZERO_API zero_result zero_flush(zero_engine *e);
/* Checkpoints (a collective, between steps): zero_save writes dir/step<N>/
   (each rank its shard of master weights and Adam moments, rank 0 the
   metadata) and then points dir/latest at it; a crash at any moment leaves
   the previous checkpoint the latest. zero_load reads dir/latest's
   checkpoint (or dir itself when it is one) into an engine of the same
   tensors on any world size and stage, every rank reading only what it
   owns; every file and block is checksummed, and a checkpoint that fails a
   check leaves the engine unchanged. docs/checkpoints.md has the format. */
ZERO_API zero_result zero_save(zero_engine *e, const char *dir, zero_error *err);
ZERO_API zero_result zero_load(zero_engine *e, const char *dir, zero_error *err);
/* The program's own state in checkpoints (DeepSpeed's client_state): a
   small store of named byte strings on each rank's engine. zero_save writes
   every rank's store beside its shard; zero_load replaces the store with the
   checkpoint's (empty for a checkpoint without one): on the same world size
   each rank gets the values it saved, on another one every rank gets rank
   0's (DeepSpeed keeps rank 0's alone), so state that must survive a resize
   is best stored as a global position that each rank derives its own from.
   Not collectives; any time, each rank its own.
   zero_client_put    copies size_bytes (1 or more) bytes of data under key
                      (1 to ZERO_CLIENT_KEY_MAX printable ASCII characters, no
                      space), replacing a value of that key; data NULL with
                      size_bytes 0 removes the key. At most
                      ZERO_CLIENT_MAX_KEYS keys and ZERO_CLIENT_MAX_BYTES
                      bytes of values per rank (CLIENT_SIZE beyond).
   zero_client_get    copies key's value into out when it is size_bytes long
                      (CLIENT_SIZE, naming both sizes, when not; out
                      untouched). found_bytes: the value's size, 0 when the
                      key is absent (then ZERO_OK); found_bytes NULL makes an
                      absent key an error (CLIENT_MISSING).
   zero_client_count  the number of keys; zero_client_key: key i (0 ..
                      count - 1, in the order first put) and its size in
                      *size_bytes (may be NULL); NULL when i is out of range. */
#define ZERO_CLIENT_KEY_MAX 63
#ifndef ZERO_CLIENT_MAX_KEYS
#define ZERO_CLIENT_MAX_KEYS 1024
#endif
#ifndef ZERO_CLIENT_MAX_BYTES
#define ZERO_CLIENT_MAX_BYTES ((size_t)16 << 20)
#endif
ZERO_API zero_result zero_client_put(zero_engine *e, const char *key, const void *data, size_t size_bytes);
ZERO_API zero_result zero_client_get(zero_engine *e, const char *key, void *out, size_t size_bytes, size_t *found_bytes);
ZERO_API int zero_client_count(const zero_engine *e);
ZERO_API const char *zero_client_key(const zero_engine *e, int i, size_t *size_bytes);
/* The consolidated weights in the safetensors format: every tensor by its
   name and shape (flat [numel] when it has none), as dtype (fp32: the
   master weights; fp16 / bf16: their rounding, what training computes
   with). A collective between steps; rank 0 writes path (tmp, fsync,
   rename), streaming tensor by tensor in pieces, never the whole model in
   one buffer. */
ZERO_API zero_result zero_export_safetensors(zero_engine *e, const char *path, zero_dtype dtype, zero_error *err);
ZERO_API zero_result zero_memory_report(const zero_engine *e, zero_memory_stats *out);
/* A table of the report, one line per category (what `make run` prints). */
ZERO_API size_t zero_memory_stats_format(const zero_memory_stats *r, char *buf, size_t cap);
typedef enum zero_state_kind {
    ZERO_STATE_MASTER,      /* fp32 master weights (frozen tensors: their values) */
    ZERO_STATE_EXP_AVG,     /* Adam m */
    ZERO_STATE_EXP_AVG_SQ,  /* Adam v */
    ZERO_STATE_KIND_COUNT
} zero_state_kind;

/* A collective: every rank gets elements [offset, offset + count) of tensor
   t's optimizer state `what`, as fp32, gathered from the owners. Not valid
   between a micro-batch's first zero_grad and zero_step. */
ZERO_API zero_result zero_read_state(zero_engine *e, int t, zero_state_kind what, int64_t offset,
                                     int64_t count, float *out);
/* The engine's layout (units, chunks, locations). */
ZERO_API const zero_layout *zero_engine_layout(const zero_engine *e);
/* The step's loss as the program computed it (averaged as it likes): the
   next zero_step's progress line and jsonl_monitor record carry it (rank 0's
   value is the one written). Optional; forgotten after that step. */
ZERO_API void zero_report_loss(zero_engine *e, double loss);

/* "MAJOR.MINOR.PATCH" of these headers (ZERO_VERSION_MAJOR/MINOR/PATCH). */
ZERO_API const char *zero_version(void);
/* Optimizer steps made so far, skipped ones included (DeepSpeed's
   global_steps; a loaded checkpoint's count after zero_load); -1 for an
   engine that is not live. */
ZERO_API int64_t zero_global_steps(const zero_engine *e);

/* ---- >>api-safetensors: reading safetensors checkpoints; initial weights by name ---- */

/* An opened safetensors checkpoint: one .safetensors file, a sharded one
   (model.safetensors.index.json and the shards its weight_map names), or a
   directory holding either (a Hugging Face model directory). Opening reads
   and checks every header (JSON, dtypes, shapes, data_offsets against the
   file sizes) and no tensor data; reads then take only the byte ranges
   asked for, so each rank of a sharded model reads only what it keeps.
   The data is little-endian, as the format defines and this host is. */
typedef struct zero_safetensors zero_safetensors;

typedef struct zero_safetensors_tensor {
    const char *name;
    const char *dtype;            /* as the file says: "F32", "F16", "BF16", "F64", "I64", ... */
    int ndim;                     /* 0: a scalar */
    int64_t shape[ZERO_MAX_DIMS];
    int64_t numel;
    const char *file;             /* the file that holds it */
    uint64_t offset, bytes;       /* its data: bytes from offset in that file */
} zero_safetensors_tensor;

/* path: a file, an index (*.json) or a directory (model.safetensors.index.json,
   else model.safetensors). Errors name the file, the tensor and why. */
ZERO_API zero_result zero_safetensors_open(zero_safetensors **out, const char *path, zero_error *err);
ZERO_API void zero_safetensors_close(zero_safetensors *st);
ZERO_API int zero_safetensors_count(const zero_safetensors *st);
/* Tensor i (0 .. count - 1) in name order, or NULL. */
ZERO_API const zero_safetensors_tensor *zero_safetensors_get(const zero_safetensors *st, int i);
/* The index of the tensor called name, or -1. */
ZERO_API int zero_safetensors_find(const zero_safetensors *st, const char *name);
/* A "__metadata__" value of the (first) file, or NULL. */
ZERO_API const char *zero_safetensors_metadata(const zero_safetensors *st, const char *key);
/* Elements [offset, offset + count) of tensor i, converted from F32, F16,
   BF16 or F64 to dtype (fp32, fp16 or bf16) into out. transpose (2-D
   tensors only): the elements of the tensor's transpose, so a [out, in]
   weight reads as [in, out]. Safe from several threads at once. */
ZERO_API zero_result zero_safetensors_read(zero_safetensors *st, int i, int64_t offset, int64_t count, int transpose,
                                           zero_dtype dtype, void *out, zero_error *err);

/* How zero_safetensors_bind matches the engine's tensors to the checkpoint's. */
typedef struct zero_safetensors_options {
    /* The checkpoint's name for the engine's tensor `tensor` called `name`
       (build it in buf, cap bytes, or return a constant), or NULL: the
       tensor is not in the checkpoint and keeps its own init. *transpose
       comes preset from transpose_2d; set it for this tensor. NULL: the
       engine's names as they are. */
    const char *(*rename)(void *user, int tensor, const char *name, char *buf, size_t cap, int *transpose);
    /* Checkpoint tensors that need no engine tensor (buffers such as an
       attention mask, a head tied to the embedding): nonzero to skip one.
       NULL: none. */
    int (*ignore)(void *user, const char *ckpt_name);
    void *user;
    int transpose_2d;     /* every 2-D tensor is stored transposed in the checkpoint: [out, in]
                             (torch.nn.Linear) against [in, out] here (Conv1D, y = x W) */
    int allow_missing;    /* engine tensors the checkpoint lacks keep their own init
                             (default: an error that lists them) */
    int allow_unexpected; /* checkpoint tensors no engine tensor takes are left out
                             (default: an error that lists them) */
} zero_safetensors_options;

/* Initial weights by name: sets tensors[t].init and .init_user of every
   tensor the checkpoint has, after checking all of them at once (missing
   and unexpected names in one error, as PyTorch's strict load_state_dict;
   every shape, against the tensor's ndim/shape or its numel when ndim is 0;
   every dtype). Nothing changes when it fails. Keep st open until
   zero_engine_create returns: create reads, on each rank, only the ranges
   that rank keeps, and fails on every rank (naming the file, the tensor and
   why) if a read fails. With the program's memory (zero_tensor.data) the
   values are written into it at create. opt may be NULL (defaults). A
   handle may be bound any number of times (two engines from one file):
   each binding stays valid until zero_safetensors_close, independent of
   the others. */
ZERO_API zero_result zero_safetensors_bind(zero_safetensors *st, zero_tensor *tensors, int n_tensors,
                                           const zero_safetensors_options *opt, zero_error *err);

/* ---- >>api-lab: the tools' own: the step-time model and the floor of a step ----

   What examples/zero_estimate (--time), examples/gpt's floor line and the
   benchmarks use to price a step; a trainer needs neither. */

/* The step-time model: zero_estimate_time. A pure function (no allocation,
   no GPU) that prices one optimizer step of GPT-shaped training under a ZeRO
   option on a machine described by a few rates. docs/PERF.md ("A step-time
   model, calibrated") compares it with the runs this repository measured.

   Every field is zero-initialised and filled. Model fields params, layers,
   hidden, seq and micro_batch are required; a machine rate <= 0 takes the
   default named beside it (one H100 or H200 of docs/PERF.md, or for
   InfiniBand a stated assumption). Bandwidths are bytes per second, times
   seconds. */
typedef struct zero_time_model {
    /* the model */
    double params;            /* P, trainable parameters */
    int layers;               /* L, transformer blocks */
    int hidden;               /* C */
    int vocab;                /* V; 0 allowed (the head's FLOPs then drop out) */
    int seq;                  /* T, tokens per sequence */
    int micro_batch;          /* B, sequences per micro-batch per GPU */
    int grad_accum;           /* micro-batches per step; <= 0 means 1 */
    zero_dtype compute_dtype; /* parameters and gradients on the wire; DEFAULT means bf16 */
    double unit_params;       /* elements per communication unit; <= 0: P / L (one block) */
    /* the machine */
    int gpus_per_node;        /* g */
    int nodes;                /* n */
    double tflops;            /* achieved TFLOP/s per GPU on forward + backward, FLOPs counted
                                 as 6 (12 L C^2 + V C) + 12 L C T per token; <= 0: 466.4,
                                 fitted on one H100: GPT-2 XL at stage 0, 187.9 ms a step) */
    double hbm_bytes_per_s;   /* the optimizer step's rate at 30 bytes per parameter;
                                 <= 0: 2.79e12 (zero_step of 1.56e9 parameters on one H100) */
    double intra_bus_bytes_per_s; /* NCCL bus bandwidth inside a node; <= 0: 225e9 (NVLink,
                                     2x H200, NCCL's bus bandwidth on 64-128 MB units) */
    double intra_latency_s;   /* fixed cost per collective inside a node; <= 0: 10e-6 (2x H200:
                                 a 1 MB collective took 13.7-14.9 us) */
    double inter_bus_bytes_per_s; /* NCCL bus bandwidth of a ring that crosses nodes; <= 0: 40e9
                                     (400 Gb/s InfiniBand per GPU at 80% of line rate: an
                                     assumption, not measured here) */
    double inter_latency_s;   /* per collective across nodes; <= 0: 30e-6 (assumption) */
    double pcie_bytes_per_s;  /* one direction, per GPU; <= 0: 55e9 (one H100's host copies, 54.5-55.1 GB/s) */
    double host_bytes_per_s;  /* the CPU Adam's memory bandwidth, per node (shared by its g
                                 processes); <= 0: 150e9 (an H100 host's CPU Adam: 118-171 GB/s) */
    /* the ZeRO option */
    int stage;                /* 0..3 */
    int group;                /* hybrid group G: shard within G consecutive ranks, replicate
                                 across world / G; <= 0 means the world. Must divide the world,
                                 and divide g or be a multiple of it. Stage 0 ignores it */
    zero_offload_device offload_optimizer; /* NONE or CPU (stages 1-3) */
    int recompute;            /* 1: every block's forward runs again in the backward (activation
                                 checkpointing, examples/gpt --recompute) */
    double tflops_hidden;     /* the width C at which tflops was achieved; <= 0: 1600 (GPT-2 XL,
                                 where the default was fitted). At the model's width the rate is
                                 tflops x (C / (C + c0)) / (Ch / (Ch + c0)): narrow products run
                                 slower, wide ones faster. Set it to hidden to take tflops as it is */
    double tflops_half_width; /* c0 of that scaling; <= 0: 880 (fitted on GPT-2 124M's step
                                 against XL's on one H100: 16.1 ms) */
    int stage3_serial_gathers; /* 1: stage 3's gathers do not overlap compute (the engine before
                                  stage 3 ordered its streams per span);
                                  0: prefetched gathers overlap the forward and backward */
} zero_time_model;

typedef struct zero_time_estimate {
    double step_s;            /* one optimizer step (grad_accum micro-batches) */
    double compute_s;         /* forward + backward FLOPs / tflops, all micro-batches, recompute's
                                 extra forward included */
    double recompute_s;       /* that extra forward (0 without recompute) */
    double optimizer_s;       /* the GPU Adam (0 with offload_optimizer) */
    double comm_intra_s;      /* collective time on NVLink-side rings, per step (busy, not exposed) */
    double comm_inter_s;      /* the same on rings that cross nodes */
    double exposed_comm_s;    /* collective time the step waits for */
    double offload_copy_s;    /* PCIe copies (gradients to the host, parameters back) */
    double cpu_adam_s;        /* the CPU Adam over the shard */
    double exposed_offload_s; /* copies + CPU Adam the step waits for */
    double bytes_intra;       /* bytes each GPU sends per step on rings inside a node */
    double bytes_inter;       /* bytes each GPU sends per step on rings that cross nodes */
    double bytes_pcie;        /* bytes each GPU moves over PCIe per step (both directions) */
    double flops_per_token;
    double tokens_per_s_per_gpu;
    double gpu_memory_bytes;  /* model states per GPU: zero_estimate_memory's gpu_total_bytes
                                 for the shard group (activations come on top) */
    int world, group, replicas; /* world = g n; the group G used; replicas = world / G */
} zero_time_estimate;

/* The range the defaults above were measured on (docs/PERF.md, "A step-time
   model, calibrated"); a model or machine outside it is priced by
   extrapolation. Width C: GPT-2 124M's 768 (the width scaling's fit) to
   4096 (two one-H100 trials, predicted within 7%); sequence T: 128 (the
   offload run) to 1024 (every other run); GPUs: at most 4, on one node (the
   4x H200 machine); nodes: 1, as no run crossed nodes (the inter-node rates
   are assumptions). */
#define ZERO_TIME_MEASURED_HIDDEN_MIN 768
#define ZERO_TIME_MEASURED_HIDDEN_MAX 4096
#define ZERO_TIME_MEASURED_SEQ_MIN 128
#define ZERO_TIME_MEASURED_SEQ_MAX 1024
#define ZERO_TIME_MEASURED_GPUS_MAX 4
#define ZERO_TIME_MEASURED_NODES_MAX 1

/* Price one step: m's defaults applied, every field of *out set. Pure: any
   thread. Errors: ZERO_ERR_INVALID_ARG (NULL_ARG; ESTIMATE_ARGS naming the
   field and why: a required field missing or out of range, a group that does
   not divide the world or straddles nodes, NVMe offload, offload at stage 0,
   a non-finite rate). *out is zeroed first. */
ZERO_API zero_result zero_estimate_time(const zero_time_model *m, zero_time_estimate *out,
                                        zero_error *err);

/* The floor of an offloaded step: its copies at the PCIe bandwidths and its
   CPU Adam at the host's memory bandwidth, each measured on this machine
   (zero_cuda_pcie_bandwidth, zero_cpu_memory_bandwidth), overlapped as far
   as this engine's schedule lets them:
     sequential  forward + backward + max(Adam, step copies): the Adam waits
                 for the last gradient (clipping and the overflow check need
                 the global norm); the step's copies run behind its pieces
     overlapped  max(forward, Adam) + backward + step copies: the overlapped
                 CPU step (cfg.overlap_cpu_step) left units' Adam to run
                 beside the next forward (info->cpu_units_overlapped > 0)
     early       forward + max(backward, Adam) + step copies: the early CPU
                 step runs the Adam beside the backward (info->cpu_units_early > 0)
     delayed     max(forward + backward + step copies, Adam):
                 delayed_param_update runs the Adam beside the next step
   A phase's copies take max(to device / h2d, to host / d2h, both / duplex).
   GPU compute, collectives and NVMe are not in it: a lower bound. */
typedef struct zero_bandwidths {
    double h2d, d2h; /* pinned host to device, device to host, alone (bytes/s) */
    double duplex;   /* both directions at once, their sum (bytes/s; 0: max(h2d, d2h)) */
    double host;     /* host memory in the CPU Adam's pattern, this rank's share (bytes/s) */
} zero_bandwidths;

typedef struct zero_floor {
    double copy_ms[ZERO_XFER_PHASE_COUNT]; /* each phase's copies at the bandwidths */
    double adam_ms;                        /* cpu_adam_bytes / host */
    double floor_ms;                       /* the step at best, with the schedule's overlap */
    const char *schedule;                  /* "sequential", "overlapped", "early", "delayed" (static) */
} zero_floor;

/* The floor of the step that `info` reports (zero_step's), for engine e.
   ZERO_ERR_INVALID_ARG for a bandwidth <= 0 (or not finite) where the step
   has bytes for it. */
ZERO_API zero_result zero_floor_of(zero_engine *e, const zero_step_info *info, const zero_bandwidths *bw,
                                   zero_floor *out);

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

/* ---- >>prelude: system headers, compile-time options, private macros ---- */

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h> /* the host backend's ranks; the engine's list of live engines */
#include <string.h>
#include <sys/stat.h> /* stat: POSIX, as NCCL and the rest of zero are */
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#  include <fcntl.h>  /* open, pread: checkpoints, NVMe tiles, safetensors */
#  include <unistd.h>
#  include <sys/mman.h> /* the host backend's address ranges (zero_alloc) */
/* strict C11 hides MAP_ANONYMOUS's name, not the kernel's flag */
#  if defined(MAP_ANONYMOUS)
#    define ZERO__MAP_ANON MAP_ANONYMOUS
#  elif defined(MAP_ANON)
#    define ZERO__MAP_ANON MAP_ANON
#  elif defined(__linux__) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || \
                               defined(__riscv) || defined(__powerpc__))
#    define ZERO__MAP_ANON 0x20
#  endif
#endif

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

/* ---- >>errors: results, messages, errors, logging ---- */

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

/* "fn: arg is NULL", with err->key = arg (which argument, for programs). */
static zero_result zero__null_arg(zero_error *err, const char *fn, const char *arg) {
    zero_result r = zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "%s: %s is NULL", fn, arg);
    if (err) snprintf(err->key, sizeof err->key, "%s", arg);
    return r;
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
    if (level == ZERO_LOG_INFO && rank != 0) return; /* debug (asked for: ZERO_DEBUG) from every rank */
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

/* ---- >>files: opening files so that no open can block ----

   open(2) of a FIFO waits for the other end, and a device may wait forever:
   no timeout helps, since a rank stuck in open never reaches a collective.
   Every file zero opens (configs, checkpoints, NVMe tiles, safetensors,
   metrics) is refused unless it is a regular file: looked at before the open,
   opened with O_NONBLOCK (which a regular file ignores), and looked at again
   through the descriptor (the path may have changed in between). */

/* For reading. missing: the item for a path that does not exist. */
static int zero__open_read(const char *path, uint64_t *size, zero_msg missing, zero_error *err) {
    struct stat sb;
    int fd;
    if (stat(path, &sb) != 0) {
        zero__fail(err, errno == ENOENT ? missing : ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: not a regular file (%s)", path,
                   S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO, whose open would block"
                                                                              : "a device or socket");
        return -1;
    }
    do fd = open(path, O_RDONLY | O_NONBLOCK);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0) {
        close(fd);
        zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: not a regular file", path);
        return -1;
    }
    if (size) *size = (uint64_t)sb.st_size;
    return fd;
}

/* A symbolic link as the last part of a path is never written through.
   Strict C11 hides O_NOFOLLOW's name in <fcntl.h>, not the kernel's flag:
   Linux's value is taken then (asm-generic/fcntl.h, and arm's and power's). */
#if defined(O_NOFOLLOW)
#  define ZERO__O_NOFOLLOW O_NOFOLLOW
#elif defined(__linux__) && (defined(__x86_64__) || defined(__i386__) || defined(__riscv))
#  define ZERO__O_NOFOLLOW 0400000
#elif defined(__linux__) && (defined(__aarch64__) || defined(__arm__) || defined(__powerpc__))
#  define ZERO__O_NOFOLLOW 0100000
#else
#  define ZERO__O_NOFOLLOW 0
#endif

/* For appending (O_APPEND): created (mode 0644) or an existing regular file;
   a symbolic link there is refused (ELOOP), not followed. */
static int zero__open_write(const char *path, int how, zero_error *err) {
    struct stat sb;
    int fd;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: exists and is not a regular file (%s); not written", path,
                   S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO" : "a device or socket");
        return -1;
    }
    do fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | ZERO__O_NOFOLLOW | how, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: %s%s", path, strerror(errno),
                   errno == ELOOP ? " (a symbolic link: not written through)" : "");
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: not a regular file; not written", path);
        return -1;
    }
    return fd;
}

/* A new file beside path to write and then rename onto it: path.<pid>-<n>.tmp,
   created exclusively (O_CREAT | O_EXCL: whatever lies at that name, a file
   or a link planted there, is never followed or truncated; another writer's
   temporary file, of another process or engine, is never shared). tmp gets
   the name. */
static pthread_mutex_t zero__tmp_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long zero__tmp_seq;
static int zero__open_tmp(const char *path, char *tmp, size_t cap, zero_error *err) {
    int fd = -1, tries, en = 0;
    for (tries = 0; tries < 64; tries++) {
        unsigned long n;
        pthread_mutex_lock(&zero__tmp_mu);
        n = ++zero__tmp_seq;
        pthread_mutex_unlock(&zero__tmp_mu);
        snprintf(tmp, cap, "%s.%ld-%lu.tmp", path, (long)getpid(), n);
        do fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | ZERO__O_NOFOLLOW, 0644);
        while (fd < 0 && errno == EINTR);
        if (fd >= 0) return fd;
        en = errno;
        if (en != EEXIST) break; /* (EEXIST: a name of another host's process, or planted: the next one) */
    }
    zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: %s", tmp, strerror(en));
    return -1;
}

/* n bytes at off: 1 read, 0 end of file first, -1 error (errno). The
   caller serialises calls on one fd (lseek and read: C11's <unistd.h> need
   not declare pread). */
static int zero__read_at(int fd, uint64_t off, void *buf, size_t n) {
    char *p = (char *)buf;
    if (lseek(fd, (off_t)off, SEEK_SET) == (off_t)-1) return -1;
    while (n > 0) {
        ssize_t r = read(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) return 0;
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

/* A directory, opened to fsync it; anything else refused (-1, errno ENOTDIR). */
static int zero__open_dir(const char *path) {
    struct stat sb;
    int fd;
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    do fd = open(path, O_RDONLY | O_NONBLOCK);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        close(fd);
        errno = ENOTDIR;
        return -1;
    }
    return fd;
}

/* ---- >>json: the JSON reader (RFC 8259 plus hjson-style comments and, for configs, hjson's forms) ----

   The config loader's reader. Iterative (explicit stack of at most
   ZERO_JSON_MAX_DEPTH containers, no recursion), one pass over the text,
   nodes in one array that grows by doubling, in document order (node 0 is
   the root). Strings are validated while parsing and decoded on demand.
   Accepted beyond RFC 8259: a leading UTF-8 BOM, and comments wherever
   whitespace may stand: `// ...` and `# ...` to the end of the line and
   `/ * ... * /` blocks (as DeepSpeed's hjson reader accepts them). Duplicate
   keys (compared after decoding) are errors, found by sorting each object's
   keys (stable merge sort, O(m log m)) when the object closes.
   With hjson set (zero__json_parse_hjson: the config loader; checkpoint
   metadata stays strict) it also accepts what DeepSpeed's reader (hjson-py)
   accepts and a ds_config plausibly holds, and counts each form in
   j->forms for the loader's notes: a trailing comma before ']' or '}'; a
   line break standing for the comma between members or elements (never a
   space); single-quoted strings and keys, where '"' is itself and \' a
   quote (\' in double quotes too); and the words Infinity, -Infinity and
   NaN as numbers (hjson-py reads them as strings, which DeepSpeed's float
   keys then take as numbers). hjson's quoteless strings and keys and its
   ''' strings stay errors that say how to write them in JSON: a quoteless
   value runs to the end of its line, commas included, which is a trap in a
   file that mixes both styles.
   Positions: line counts '\n', column counts bytes from the line start (on
   line 1, after the BOM), both 1-based. */

#ifndef ZERO__JSON_MAX_BYTES
#  define ZERO__JSON_MAX_BYTES ((size_t)256 << 20) /* 256 MiB */
#endif
#ifndef ZERO__JSON_MAX_NODES
#  define ZERO__JSON_MAX_NODES (INT_MAX / 2)
#endif
#define ZERO__JSON_PATH_CAP 256 /* key paths inside error messages */

typedef enum zero__json_type {
    ZERO__JSON_NULL,
    ZERO__JSON_FALSE,
    ZERO__JSON_TRUE,
    ZERO__JSON_NUMBER,
    ZERO__JSON_STRING,
    ZERO__JSON_ARRAY,
    ZERO__JSON_OBJECT
} zero__json_type;

typedef struct zero__json_node {
    zero__json_type type;
    int parent;        /* index of the enclosing array/object node, -1 for the root */
    int next;          /* next sibling (next element / next member VALUE), -1 at the end */
    int first;         /* ARRAY/OBJECT: first child (element / member VALUE), -1 if empty */
    int count;         /* ARRAY/OBJECT: number of children */
    int key;           /* member value: index of its key node (a STRING node in no child chain,
                          whose parent is the object); -1 otherwise */
    size_t start, end; /* byte span in the text; STRING: the raw bytes between the quotes */
    int line, col;     /* 1-based position of the node's first byte (STRING: the opening quote) */
    double number;     /* NUMBER: value (correctly rounded, locale independent) */
    int64_t integer;   /* NUMBER: exact value when is_integer, else 0 */
    int is_integer;    /* NUMBER: written without fraction/exponent AND fits int64_t exactly */
} zero__json_node;

/* The forms beyond JSON that the hjson mode accepts (see above). */
typedef enum zero__json_form {
    ZERO__JSON_FORM_TRAILING_COMMA,
    ZERO__JSON_FORM_LINE_COMMA,
    ZERO__JSON_FORM_SINGLE_QUOTE,
    ZERO__JSON_FORM_QUOTE_ESCAPE,
    ZERO__JSON_FORM_NONFINITE,
    ZERO__JSON_FORM_COUNT
} zero__json_form;

typedef struct zero__json_seen {
    int count;     /* how many times the form occurs */
    int line, col; /* the first one */
} zero__json_seen;

typedef struct zero__json {
    const char *text;
    size_t len;
    zero__json_node *nodes;
    int count, cap;
    int hjson;                                    /* parsed with hjson's forms accepted */
    zero__json_seen forms[ZERO__JSON_FORM_COUNT]; /* hjson: each form found */
} zero__json;

typedef struct zero__json_frame {
    int node; /* the open array/object */
    int last; /* its last child so far, -1 when none */
} zero__json_frame;

typedef struct zero__json_parser {
    zero__json *j;
    const char *t;
    size_t len, pos;
    size_t bom;          /* 3 when the text starts with a UTF-8 BOM, else 0 */
    int line;            /* line of pos (tracked while skipping whitespace) */
    size_t line_start;   /* byte offset where that line starts */
    int depth;           /* open containers */
    int pending_key;     /* key node of the member whose value comes next, -1 when none */
    int hjson;           /* hjson's forms accepted (j->hjson) */
    size_t comma;        /* offset of the last ',' read (a trailing comma's place) */
    int *sort_a, *sort_b; /* scratch for the duplicate-key check */
    int sort_cap;
    zero_error *err;
    zero__json_frame stack[ZERO_JSON_MAX_DEPTH > 0 ? ZERO_JSON_MAX_DEPTH : 1];
} zero__json_parser;

/* ---- json: small helpers ---- */

static int zero__json_is_digit(int c) { return c >= '0' && c <= '9'; }
static int zero__json_is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
static int zero__json_hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
/* Four hex digits at s[0..4) (the caller checked they exist); -1 if one is not hex. */
static long zero__json_hex4(const char *s) {
    long v = 0;
    int k;
    for (k = 0; k < 4; k++) {
        int h = zero__json_hexval((unsigned char)s[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Length (2..4) of the valid UTF-8 sequence at s[0..n) whose first byte is
   >= 0x80, or 0 when it is not valid; *why then says why. */
static int zero__json_utf8_len(const unsigned char *s, size_t n, const char **why) {
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    int len, k;
    if (c < 0x80) return 1;
    if (c < 0xC0) { *why = "a continuation byte where a character must start"; return 0; }
    if (c < 0xC2) { *why = "an overlong encoding"; return 0; }
    if (c < 0xE0) len = 2;
    else if (c < 0xF0) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;      /* overlong below U+0800 */
        else if (c == 0xED) hi = 0x9F; /* U+D800..U+DFFF: UTF-16 surrogates */
    } else if (c < 0xF5) {
        len = 4;
        if (c == 0xF0) lo = 0x90;      /* overlong below U+10000 */
        else if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        *why = c == 0xFF || c == 0xFE ? "a byte that never occurs in UTF-8"
                                      : "a lead byte of a code point above U+10FFFF";
        return 0;
    }
    for (k = 1; k < len; k++) {
        unsigned b;
        if ((size_t)k >= n) { *why = "a sequence cut off by the end of the input"; return 0; }
        b = s[k];
        if (b < 0x80 || b > 0xBF) { *why = "a sequence missing a continuation byte"; return 0; }
        if (k == 1 && (b < lo || b > hi)) {
            *why = c == 0xED ? "a UTF-16 surrogate encoded in UTF-8"
                 : c == 0xF4 ? "a code point above U+10FFFF"
                             : "an overlong encoding";
            return 0;
        }
    }
    return len;
}

/* Bounded appender: keeps buf NUL-terminated, never writes past cap. */
typedef struct zero__json_out {
    char *buf;
    size_t cap, n;
} zero__json_out;
static void zero__json_put(zero__json_out *o, const char *s, size_t n) {
    size_t room, k;
    if (o->cap == 0) return;
    room = o->cap - 1 - o->n; /* n <= cap - 1 always */
    k = n < room ? n : room;
    if (k) memcpy(o->buf + o->n, s, k);
    o->n += k;
    o->buf[o->n] = 0;
}

/* One decoded step of the raw string text t[*pi..end): 1..4 bytes into out.
   The text was validated by the parser; anything malformed is passed through
   byte by byte, never read past end. */
static size_t zero__json_decode_step(const char *t, size_t *pi, size_t end, unsigned char out[4]) {
    size_t i = *pi;
    unsigned char c = (unsigned char)t[i], e;
    long cp;
    if (c != '\\' || i + 1 >= end) {
        out[0] = c;
        *pi = i + 1;
        return 1;
    }
    e = (unsigned char)t[i + 1];
    *pi = i + 2;
    switch (e) {
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'u': break;
    default: out[0] = e; return 1; /* '"', '\\', '/' */
    }
    if (i + 6 > end || (cp = zero__json_hex4(t + i + 2)) < 0) {
        out[0] = e;
        return 1;
    }
    i += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= end && t[i] == '\\' && t[i + 1] == 'u') {
        long lo = zero__json_hex4(t + i + 2);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
    }
    *pi = i;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static int zero__json_is_string(const zero__json *j, int node) {
    return j && j->nodes && node >= 0 && node < j->count &&
           j->nodes[node].type == ZERO__JSON_STRING && j->nodes[node].end <= j->len;
}

ZERO__UNUSED static size_t zero__json_string(const zero__json *j, int node, char *buf, size_t cap) {
    size_t i, end, total = 0;
    if (buf && cap) buf[0] = 0;
    if (!zero__json_is_string(j, node)) return 0;
    i = j->nodes[node].start;
    end = j->nodes[node].end;
    while (i < end) {
        unsigned char b[4];
        size_t n = zero__json_decode_step(j->text, &i, end, b), k;
        for (k = 0; k < n; k++, total++)
            if (buf && total + 1 < cap) buf[total] = (char)b[k];
    }
    if (buf && cap) buf[total < cap ? total : cap - 1] = 0;
    return total;
}

ZERO__UNUSED static int zero__json_string_eq(const zero__json *j, int node, const char *s, size_t n) {
    size_t i, end, at = 0;
    if (!zero__json_is_string(j, node) || (!s && n)) return 0;
    i = j->nodes[node].start;
    end = j->nodes[node].end;
    while (i < end) {
        unsigned char b[4];
        size_t m = zero__json_decode_step(j->text, &i, end, b);
        if (m > n - at || memcmp(b, s + at, m) != 0) return 0;
        at += m;
    }
    return at == n;
}

/* Streaming byte reader over a decoded string, for comparing two keys. */
typedef struct zero__json_reader {
    const char *t;
    size_t i, end;
    unsigned char b[4];
    size_t n, k;
} zero__json_reader;
static void zero__json_reader_init(zero__json_reader *r, const zero__json *j, int node) {
    r->t = j->text;
    r->i = j->nodes[node].start;
    r->end = j->nodes[node].end;
    r->n = r->k = 0;
}
static int zero__json_reader_next(zero__json_reader *r) { /* next byte, -1 at the end */
    if (r->k == r->n) {
        if (r->i >= r->end) return -1;
        r->n = zero__json_decode_step(r->t, &r->i, r->end, r->b);
        r->k = 0;
    }
    return r->b[r->k++];
}
/* memcmp order of the decoded keys, the shorter first on a common prefix. */
static int zero__json_keycmp(const zero__json *j, int a, int b) {
    zero__json_reader ra, rb;
    zero__json_reader_init(&ra, j, a);
    zero__json_reader_init(&rb, j, b);
    for (;;) {
        int x = zero__json_reader_next(&ra), y = zero__json_reader_next(&rb);
        if (x != y) return x < y ? -1 : 1;
        if (x < 0) return 0;
    }
}

/* Path of `node`, then (when extra_key >= 0) ".<that key>", or (when
   extra_index >= 0) "[extra_index]". A key node's path is its member's. */
static void zero__json_path_ex(const zero__json *j, int node, int extra_key, int extra_index,
                               char *buf, size_t cap) {
    int chain[ZERO_JSON_MAX_DEPTH + 2];
    int n = 0, c, k;
    zero__json_out o;
    char tmp[32];
    o.buf = buf;
    o.cap = buf ? cap : 0;
    o.n = 0;
    if (o.cap) buf[0] = 0;
    if (!j || !j->nodes || node < 0 || node >= j->count) return;
    /* node and its ancestors below the root, innermost first */
    for (c = node; c >= 0 && c < j->count && j->nodes[c].parent >= 0 &&
                   n < (int)(sizeof chain / sizeof chain[0]);
         c = j->nodes[c].parent)
        chain[n++] = c;
    for (k = n - 1; k >= -1; k--) {
        int p, keynode = -1, index = -1;
        if (k >= 0) {
            c = chain[k];
            p = j->nodes[c].parent;
            if (p < 0 || p >= j->count) break;
            if (j->nodes[p].type == ZERO__JSON_OBJECT) {
                keynode = j->nodes[c].key >= 0 ? j->nodes[c].key : c;
            } else {
                int s;
                index = 0;
                for (s = j->nodes[p].first; s >= 0 && s < j->count && s != c; s = j->nodes[s].next)
                    index++;
            }
        } else {
            keynode = extra_key;
            index = extra_key >= 0 ? -1 : extra_index;
        }
        if (keynode >= 0 && zero__json_is_string(j, keynode)) {
            zero__json_reader r;
            int b;
            if (o.n) zero__json_put(&o, ".", 1);
            zero__json_reader_init(&r, j, keynode);
            while ((b = zero__json_reader_next(&r)) >= 0) {
                char ch = (char)(b < 0x20 || b == 0x7F ? '?' : b);
                zero__json_put(&o, &ch, 1);
            }
        } else if (index >= 0) {
            snprintf(tmp, sizeof tmp, "[%d]", index);
            zero__json_put(&o, tmp, strlen(tmp));
        }
    }
}

ZERO__UNUSED static void zero__json_path(const zero__json *j, int node, char *buf, size_t cap) {
    zero__json_path_ex(j, node, -1, -1, buf, cap);
}

ZERO__UNUSED static int zero__json_get(const zero__json *j, int obj, const char *name) {
    int c;
    size_t n;
    if (!j || !j->nodes || !name || obj < 0 || obj >= j->count ||
        j->nodes[obj].type != ZERO__JSON_OBJECT)
        return -1;
    n = strlen(name);
    for (c = j->nodes[obj].first; c >= 0 && c < j->count; c = j->nodes[c].next)
        if (zero__json_string_eq(j, j->nodes[c].key, name, n)) return c;
    return -1;
}

ZERO__UNUSED static void zero__json_free(zero__json *j) {
    if (!j) return;
    ZERO_FREE(j->nodes);
    j->nodes = NULL;
    j->text = NULL;
    j->len = 0;
    j->count = j->cap = 0;
}

/* ---- json: errors ---- */

/* Key path where the parser stands: the value being parsed (after a key or
   inside an array) or the open object. */
static void zero__json_here(const zero__json_parser *p, char *buf, size_t cap) {
    const zero__json *j = p->j;
    int top;
    buf[0] = 0;
    if (p->depth == 0) return;
    top = p->stack[p->depth - 1].node;
    if (j->nodes[top].type == ZERO__JSON_OBJECT)
        zero__json_path_ex(j, top, p->pending_key, -1, buf, cap);
    else
        zero__json_path_ex(j, top, -1, j->nodes[top].count, buf, cap);
}

/* 1-based line and byte column of offset pos. */
static void zero__json_linecol(const zero__json_parser *p, size_t pos, int *line, int *col) {
    size_t i, start = p->bom;
    int l = 1;
    if (pos > p->len) pos = p->len;
    if (pos < start) pos = start;
    for (i = start; i < pos; i++)
        if (p->t[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = l;
    *col = (int)(pos - start) + 1;
}

static void zero__json_form_at(zero__json_parser *p, zero__json_form form, size_t pos) {
    zero__json_seen *s = &p->j->forms[form];
    if (s->count++ == 0) zero__json_linecol(p, pos, &s->line, &s->col);
}

/* at: whose key path the message names: ZERO__JSON_AT_NONE, ZERO__JSON_AT_HERE
   (zero__json_here) or a node. Paths are made only here, on error. */
#define ZERO__JSON_AT_NONE (-2)
#define ZERO__JSON_AT_HERE (-1)
static zero_result zero__json_fail_at(zero__json_parser *p, zero_msg item, int at, size_t pos,
                                      const char *fmt, ...) ZERO__PRINTF(5, 6);
static zero_result zero__json_fail_at(zero__json_parser *p, zero_msg item, int at, size_t pos,
                                      const char *fmt, ...) {
    char text[768], key[ZERO__JSON_PATH_CAP];
    int line, col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    key[0] = 0;
    if (at == ZERO__JSON_AT_HERE) zero__json_here(p, key, sizeof key);
    else if (at >= 0) zero__json_path(p->j, at, key, sizeof key);
    zero__json_linecol(p, pos, &line, &col);
    return zero__fail(p->err, item, at == ZERO__JSON_AT_NONE ? NULL : key, line, col, "%s", text);
}

/* What stands at pos, for "got ...": 'x', 'word', end of input, ... */
static void zero__json_got(const zero__json_parser *p, size_t pos, char *buf, size_t cap) {
    unsigned char c;
    const char *why;
    if (pos >= p->len) {
        snprintf(buf, cap, "end of input");
        return;
    }
    c = (unsigned char)p->t[pos];
    if (zero__json_is_word(c)) {
        size_t n = 0;
        while (pos + n < p->len && zero__json_is_word((unsigned char)p->t[pos + n]) && n < 24) n++;
        snprintf(buf, cap, "'%.*s%s'", (int)n, p->t + pos,
                 pos + n < p->len && zero__json_is_word((unsigned char)p->t[pos + n]) ? "..." : "");
    } else if (c == '\'') {
        snprintf(buf, cap, "\"'\"");
    } else if (c >= 0x20 && c < 0x7F) {
        snprintf(buf, cap, "'%c'", c);
    } else if (c < 0x80) {
        snprintf(buf, cap, "control character 0x%02X", c);
    } else {
        int n = zero__json_utf8_len((const unsigned char *)p->t + pos, p->len - pos, &why);
        if (n > 0) snprintf(buf, cap, "'%.*s'", n, p->t + pos);
        else snprintf(buf, cap, "byte 0x%02X", c);
    }
}

/* "<expected>, got <what is at pos><hint>"; invalid UTF-8 at pos reports JSON_BAD_UTF8. */
static zero_result zero__json_unexpected(zero__json_parser *p, zero_msg item, int at, size_t pos, const char *expected, const char *hint) {
    char got[64];
    const char *why = "";
    if (pos < p->len && (unsigned char)p->t[pos] >= 0x80 &&
        !zero__json_utf8_len((const unsigned char *)p->t + pos, p->len - pos, &why))
        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, at, pos,
                                  "invalid UTF-8 (byte 0x%02X starts %s); %s",
                                  (unsigned char)p->t[pos], why, expected);
    zero__json_got(p, pos, got, sizeof got);
    return zero__json_fail_at(p, item, at, pos, "%s, got %s%s", expected, got, hint ? hint : "");
}

static const char *zero__json_kind(zero__json_type t) {
    return t == ZERO__JSON_OBJECT ? "object" : "array";
}

/* ---- json: parsing ---- */

static int zero__json_new_node(zero__json_parser *p, zero__json_type type, size_t start) {
    zero__json *j = p->j;
    zero__json_node *n;
    if (j->count >= ZERO__JSON_MAX_NODES) {
        zero__json_fail_at(p, ZERO_MSG_JSON_TOO_LARGE, ZERO__JSON_AT_HERE, start,
                           "the JSON text needs more than %d nodes (values and keys), the most "
                           "the parser accepts",
                           (int)ZERO__JSON_MAX_NODES);
        return -1;
    }
    if (j->count == j->cap) {
        int ncap = j->cap ? (j->cap > ZERO__JSON_MAX_NODES / 2 ? ZERO__JSON_MAX_NODES : j->cap * 2)
                          : 32;
        zero__json_node *nn = NULL;
        if ((size_t)ncap <= SIZE_MAX / sizeof(zero__json_node))
            nn = (zero__json_node *)ZERO_REALLOC(j->nodes, (size_t)ncap * sizeof(zero__json_node));
        if (!nn) {
            zero__fail(p->err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                       "out of memory growing the JSON parser's node array to %d nodes", ncap);
            return -1;
        }
        j->nodes = nn;
        j->cap = ncap;
    }
    n = &j->nodes[j->count];
    n->type = type;
    n->parent = p->depth > 0 ? p->stack[p->depth - 1].node : -1;
    n->next = n->first = n->key = -1;
    n->count = 0;
    n->start = n->end = start;
    n->line = p->line;
    n->col = (int)(start - p->line_start) + 1;
    n->number = 0;
    n->integer = 0;
    n->is_integer = 0;
    return j->count++;
}

/* Link a new value node into the open container (if any) as its last child. */
static void zero__json_attach(zero__json_parser *p, int idx) {
    zero__json *j = p->j;
    zero__json_frame *f;
    if (p->depth == 0) return;
    f = &p->stack[p->depth - 1];
    if (f->last >= 0) j->nodes[f->last].next = idx;
    else j->nodes[f->node].first = idx;
    f->last = idx;
    j->nodes[f->node].count++;
    j->nodes[idx].key = p->pending_key;
    p->pending_key = -1;
}

/* Skip whitespace and comments. */
static zero_result zero__json_skip(zero__json_parser *p) {
    const char *t = p->t;
    size_t len = p->len;
    const char *why;
    while (p->pos < len) {
        unsigned char c = (unsigned char)t[p->pos];
        if (c == ' ' || c == '\t' || c == '\r') {
            p->pos++;
        } else if (c == '\n') {
            p->pos++;
            p->line++;
            p->line_start = p->pos;
        } else if (c == '#' || (c == '/' && p->pos + 1 < len && t[p->pos + 1] == '/')) {
            while (p->pos < len && t[p->pos] != '\n') {
                if ((unsigned char)t[p->pos] >= 0x80) {
                    int n = zero__json_utf8_len((const unsigned char *)t + p->pos, len - p->pos, &why);
                    if (!n)
                        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_NONE, p->pos,
                                                  "invalid UTF-8 in a comment (byte 0x%02X starts %s)",
                                                  (unsigned char)t[p->pos], why);
                    p->pos += (size_t)n;
                } else {
                    p->pos++;
                }
            }
        } else if (c == '/' && p->pos + 1 < len && t[p->pos + 1] == '*') {
            int line0 = p->line, col0 = (int)(p->pos - p->line_start) + 1;
            p->pos += 2;
            for (;;) {
                unsigned char d;
                if (p->pos >= len)
                    return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_NONE, p->pos,
                                              "expected '*/' to close the comment opened at line "
                                              "%d:%d, got end of input",
                                              line0, col0);
                d = (unsigned char)t[p->pos];
                if (d == '*' && p->pos + 1 < len && t[p->pos + 1] == '/') {
                    p->pos += 2;
                    break;
                }
                if (d == '\n') {
                    p->pos++;
                    p->line++;
                    p->line_start = p->pos;
                } else if (d >= 0x80) {
                    int n = zero__json_utf8_len((const unsigned char *)t + p->pos, len - p->pos, &why);
                    if (!n)
                        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_NONE, p->pos,
                                                  "invalid UTF-8 in a comment (byte 0x%02X starts %s)",
                                                  d, why);
                    p->pos += (size_t)n;
                } else {
                    p->pos++;
                }
            }
        } else if (c == '/') {
            return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_NONE, p->pos + 1,
                                         "expected '/' or '*' after '/' to start a comment", NULL);
        } else {
            break;
        }
    }
    return ZERO_OK;
}

/* Record one occurrence of an hjson form at offset pos (the first one's place). */
static void zero__json_form_at(zero__json_parser *p, zero__json_form form, size_t pos);

/* Validate the string whose opening quote (", or ' in hjson mode) is at
   p->pos; on success *end is the offset of the closing quote. */
static zero_result zero__json_scan_string(zero__json_parser *p, size_t *end) {
    const char *t = p->t;
    size_t len = p->len, i = p->pos + 1;
    const char *why;
    char q = t[p->pos]; /* the other quote stands for itself inside */
    const char *qs = q == '"' ? "'\"'" : "\"'\""; /* the quote as messages show it */
    for (;;) {
        unsigned char c;
        if (i >= len)
            return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, i,
                                      "expected %s to close the string opened at line %d:%d, "
                                      "got end of input",
                                      qs, p->line, (int)(p->pos - p->line_start) + 1);
        c = (unsigned char)t[i];
        if (c == (unsigned char)q) break;
        if (c == '\\') {
            unsigned char e;
            long cp, lo;
            if (i + 1 >= len)
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, i + 1,
                                          "expected an escape character after '\\' and %s to "
                                          "close the string opened at line %d:%d, got end of input",
                                          qs, p->line, (int)(p->pos - p->line_start) + 1);
            e = (unsigned char)t[i + 1];
            if (e == '\'' && p->hjson) { /* hjson's escape of the single quote, in either quotes */
                if (q == '"') zero__json_form_at(p, ZERO__JSON_FORM_QUOTE_ESCAPE, i);
                i += 2;
                continue;
            }
            switch (e) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                i += 2;
                continue;
            case 'u': break;
            default: {
                char got[64];
                zero__json_got(p, i + 1, got, sizeof got);
                if (e < 0x20 || e >= 0x80) {
                    if (e >= 0x80 && !zero__json_utf8_len((const unsigned char *)t + i + 1,
                                                          len - i - 1, &why))
                        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_HERE, i + 1,
                                                  "invalid UTF-8 (byte 0x%02X starts %s) after '\\'",
                                                  e, why);
                    return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_ESCAPE, ZERO__JSON_AT_HERE, i,
                                              "invalid escape: expected one of \\\" \\\\ \\/ \\b \\f "
                                              "\\n \\r \\t \\uXXXX%s after '\\', got %s",
                                              p->hjson ? " \\'" : "", got);
                }
                return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_ESCAPE, ZERO__JSON_AT_HERE, i,
                                          "invalid escape '\\%c': expected one of \\\" \\\\ \\/ \\b "
                                          "\\f \\n \\r \\t \\uXXXX%s",
                                          e, p->hjson ? " \\'" : "");
            }
            }
            /* \uXXXX */
            {
                size_t k;
                for (k = 0; k < 4; k++)
                    if (i + 2 + k >= len || zero__json_hexval((unsigned char)t[i + 2 + k]) < 0)
                        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i + 2 + k,
                                                     "expected 4 hex digits after '\\u'", NULL);
            }
            cp = zero__json_hex4(t + i + 2);
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i,
                                          "lone low surrogate \\u%.4s: expected a high surrogate "
                                          "\\uD800-\\uDBFF before it",
                                          t + i + 2);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                size_t k;
                if (i + 7 >= len || t[i + 6] != '\\' || t[i + 7] != 'u') {
                    char got[64];
                    zero__json_got(p, i + 6, got, sizeof got);
                    return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i,
                                              "high surrogate \\u%.4s must be followed by a low "
                                              "surrogate \\uDC00-\\uDFFF, got %s",
                                              t + i + 2, i + 6 < len && t[i + 6] == '\\' ?
                                              "another escape" : got);
                }
                for (k = 0; k < 4; k++)
                    if (i + 8 + k >= len || zero__json_hexval((unsigned char)t[i + 8 + k]) < 0)
                        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i + 8 + k,
                                                     "expected 4 hex digits after '\\u'", NULL);
                lo = zero__json_hex4(t + i + 8);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i,
                                              "high surrogate \\u%.4s must be followed by a low "
                                              "surrogate \\uDC00-\\uDFFF, got \\u%.4s",
                                              t + i + 2, t + i + 8);
                i += 12;
            } else {
                i += 6;
            }
        } else if (c < 0x20) {
            return zero__json_fail_at(p, ZERO_MSG_JSON_CONTROL_CHAR, ZERO__JSON_AT_HERE, i,
                                      "raw control character 0x%02X inside a string: expected it "
                                      "escaped (\\n, \\t, \\u00XX)%s",
                                      c, c != '\n' ? "" : q == '"' ? "; is a closing '\"' missing?"
                                                                   : "; is a closing \"'\" missing?");
        } else if (c >= 0x80) {
            int n = zero__json_utf8_len((const unsigned char *)t + i, len - i, &why);
            if (!n)
                return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_HERE, i,
                                          "invalid UTF-8 in a string (byte 0x%02X starts %s)", c, why);
            i += (size_t)n;
        } else {
            i++;
        }
    }
    *end = i;
    return ZERO_OK;
}

/* Parse the string at p->pos into a new node (not attached). */
static zero_result zero__json_string_node(zero__json_parser *p, int *out) {
    size_t end = 0;
    zero_result rc = zero__json_scan_string(p, &end);
    int idx;
    if (rc != ZERO_OK) return rc;
    if (p->t[p->pos] == '\'') zero__json_form_at(p, ZERO__JSON_FORM_SINGLE_QUOTE, p->pos);
    idx = zero__json_new_node(p, ZERO__JSON_STRING, p->pos);
    if (idx < 0) return p->err ? p->err->code : ZERO_ERR_CONFIG;
    p->j->nodes[idx].start = p->pos + 1;
    p->j->nodes[idx].end = end;
    p->pos = end + 1;
    *out = idx;
    return ZERO_OK;
}

/* Convert the validated number token t[s..e) into node n. */
static zero_result zero__json_convert_number(zero__json_parser *p, size_t s,
                                             size_t e, int is_int, zero__json_node *n) {
    const char *t = p->t;
    int neg = t[s] == '-';
    if (is_int) {
        uint64_t mag = 0, limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
        size_t i;
        int fits = 1;
        for (i = s + (size_t)neg; i < e; i++) {
            unsigned d = (unsigned)(t[i] - '0');
            if (mag > (limit - d) / 10) {
                fits = 0;
                break;
            }
            mag = mag * 10 + d;
        }
        if (fits) {
            n->is_integer = 1;
            n->integer = neg ? (mag == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
            n->number = neg ? -(double)mag : (double)mag; /* correctly rounded */
            return ZERO_OK;
        }
    }
    {
        /* strtod with the token's '.' replaced by this locale's decimal point */
        char small[96], *buf = small, *endp;
        const char *dp = ".";
        size_t dpn, need, k = 0, i;
        struct lconv *lc = localeconv();
        double v;
        if (lc && lc->decimal_point && lc->decimal_point[0]) dp = lc->decimal_point;
        dpn = strlen(dp);
        need = (e - s) + dpn + 1;
        if (need > sizeof small) {
            buf = (char *)ZERO_MALLOC(need);
            if (!buf)
                return zero__fail(p->err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                                  "out of memory converting a %zu-byte number", e - s);
        }
        for (i = s; i < e; i++) {
            if (t[i] == '.') {
                memcpy(buf + k, dp, dpn);
                k += dpn;
            } else {
                buf[k++] = t[i];
            }
        }
        buf[k] = 0;
        v = strtod(buf, &endp);
        i = (size_t)(endp - buf);
        if (buf != small) ZERO_FREE(buf);
        if (i != k)
            return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, s,
                                      "number '%.*s' could not be converted by strtod",
                                      (int)(e - s < 40 ? e - s : 40), t + s);
        if (v > DBL_MAX || v < -DBL_MAX)
            return zero__json_fail_at(p, ZERO_MSG_JSON_NUMBER_RANGE, ZERO__JSON_AT_HERE, s,
                                      "number '%.*s%s' is out of the range of a double: expected a "
                                      "magnitude below 1.7976931348623157e308",
                                      (int)(e - s < 40 ? e - s : 40), t + s, e - s > 40 ? "..." : "");
        n->number = v; /* underflow to 0 or a subnormal is fine */
    }
    return ZERO_OK;
}

/* Is the word w (n bytes, no NUL) at t[i..len), not followed by a word character? */
static int zero__json_word_at(const char *t, size_t len, size_t i, const char *w, size_t n) {
    return len - i >= n && memcmp(t + i, w, n) == 0 && (len - i == n || !zero__json_is_word((unsigned char)t[i + n]));
}

/* hjson mode: Infinity, -Infinity or NaN at t[s..e) as a NUMBER node. */
static zero_result zero__json_nonfinite(zero__json_parser *p, size_t s, size_t e, int *out) {
    int idx = zero__json_new_node(p, ZERO__JSON_NUMBER, s);
    double inf = HUGE_VAL;
    if (idx < 0) return p->err ? p->err->code : ZERO_ERR_CONFIG;
    p->j->nodes[idx].end = e;
    p->j->nodes[idx].number = p->t[s] == 'N' ? (double)NAN : p->t[s] == '-' ? -inf : inf;
    zero__json_form_at(p, ZERO__JSON_FORM_NONFINITE, s);
    p->pos = e;
    *out = idx;
    return ZERO_OK;
}

/* Parse the number at p->pos (RFC 8259 grammar exactly) into a new node. */
static zero_result zero__json_number(zero__json_parser *p, int *out) {
    const char *t = p->t;
    size_t len = p->len, s = p->pos, i = s;
    int is_int = 1, idx;
    zero_result rc;
    if (t[i] == '-') i++;
    if (i < len && t[i] == 'I' && zero__json_word_at(t, len, i, "Infinity", 8)) {
        if (p->hjson) return zero__json_nonfinite(p, s, i + 8, out);
        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                     "malformed number: expected a digit after '-'",
                                     " (JSON has no NaN or Infinity)");
    }
    if (i >= len || !zero__json_is_digit((unsigned char)t[i]))
        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                     "malformed number: expected a digit after '-'", NULL);
    if (t[i] == '0') {
        i++;
        if (i < len && zero__json_is_digit((unsigned char)t[i]))
            return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                         "malformed number: expected '.', 'e' or the end of the "
                                         "number after a leading '0'",
                                         " (JSON numbers have no leading zeros)");
    } else {
        while (i < len && zero__json_is_digit((unsigned char)t[i])) i++;
    }
    if (i < len && t[i] == '.') {
        is_int = 0;
        i++;
        if (i >= len || !zero__json_is_digit((unsigned char)t[i]))
            return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                         "malformed number: expected a digit after '.'", NULL);
        while (i < len && zero__json_is_digit((unsigned char)t[i])) i++;
    }
    if (i < len && (t[i] == 'e' || t[i] == 'E')) {
        is_int = 0;
        i++;
        if (i < len && (t[i] == '+' || t[i] == '-')) i++;
        if (i >= len || !zero__json_is_digit((unsigned char)t[i]))
            return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                         "malformed number: expected a digit in the exponent", NULL);
        while (i < len && zero__json_is_digit((unsigned char)t[i])) i++;
    }
    if (i < len && (zero__json_is_word((unsigned char)t[i]) || t[i] == '.' || t[i] == '+' ||
                    t[i] == '-')) {
        char msg[128];
        snprintf(msg, sizeof msg, "malformed number: expected the end of the number after '%.*s'",
                 (int)(i - s < 40 ? i - s : 40), t + s);
        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i, msg, NULL);
    }
    idx = zero__json_new_node(p, ZERO__JSON_NUMBER, s);
    if (idx < 0) return p->err ? p->err->code : ZERO_ERR_CONFIG;
    p->j->nodes[idx].end = i;
    rc = zero__json_convert_number(p, s, i, is_int, &p->j->nodes[idx]);
    if (rc != ZERO_OK) return rc;
    p->pos = i;
    *out = idx;
    return ZERO_OK;
}

/* Check the object `obj` (just closed) for duplicate keys. */
static zero_result zero__json_check_dups(zero__json_parser *p, int obj) {
    zero__json *j = p->j;
    int n = j->nodes[obj].count, c, k, width, *a, *b, best = -1, best_first = -1, run;
    if (n < 2) return ZERO_OK;
    if (n > p->sort_cap) {
        int ncap = p->sort_cap ? p->sort_cap : 16;
        int *na, *nb;
        while (ncap < n) ncap = ncap > INT_MAX / 2 ? n : ncap * 2;
        na = (int *)ZERO_MALLOC((size_t)ncap * sizeof(int));
        nb = (int *)ZERO_MALLOC((size_t)ncap * sizeof(int));
        if (!na || !nb) {
            ZERO_FREE(na);
            ZERO_FREE(nb);
            return zero__fail(p->err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                              "out of memory checking an object of %d members for duplicate keys", n);
        }
        ZERO_FREE(p->sort_a);
        ZERO_FREE(p->sort_b);
        p->sort_a = na;
        p->sort_b = nb;
        p->sort_cap = ncap;
    }
    a = p->sort_a;
    b = p->sort_b;
    for (k = 0, c = j->nodes[obj].first; c >= 0; c = j->nodes[c].next) a[k++] = j->nodes[c].key;
    /* bottom-up merge sort, stable: equal keys stay in document order */
    for (width = 1; width < n; width *= 2) {
        int lo, *tmp;
        for (lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n;
            int hi = mid + width < n ? mid + width : n;
            int x = lo, y = mid, o = lo;
            while (x < mid && y < hi) b[o++] = zero__json_keycmp(j, a[x], a[y]) <= 0 ? a[x++] : a[y++];
            while (x < mid) b[o++] = a[x++];
            while (y < hi) b[o++] = a[y++];
        }
        tmp = a;
        a = b;
        b = tmp;
    }
    /* each run of equal keys: its first two are the first duplicate of that key */
    for (run = 0, k = 1; k <= n; k++) {
        if (k < n && zero__json_keycmp(j, a[run], a[k]) == 0) continue;
        if (k - run >= 2 && (best < 0 || a[run + 1] < best)) {
            best = a[run + 1];
            best_first = a[run];
        }
        run = k;
    }
    if (best >= 0) {
        char path[ZERO__JSON_PATH_CAP];
        const zero__json_node *d = &j->nodes[best], *f = &j->nodes[best_first];
        zero__json_path_ex(j, obj, best, -1, path, sizeof path);
        zero__fail(p->err, ZERO_MSG_JSON_DUPLICATE_KEY, path, 0, 0,
                   "duplicate key (line %d:%d), first at line %d:%d", d->line, d->col, f->line,
                   f->col);
        if (p->err) {
            p->err->line = d->line;
            p->err->column = d->col;
        }
        return ZERO_ERR_CONFIG;
    }
    return ZERO_OK;
}

/* Close the container on top of the stack at its bracket p->pos. */
static zero_result zero__json_close(zero__json_parser *p) {
    int node = p->stack[--p->depth].node;
    p->j->nodes[node].end = ++p->pos;
    if (p->j->nodes[node].type == ZERO__JSON_OBJECT) return zero__json_check_dups(p, node);
    return ZERO_OK;
}

enum { ZERO__JSON_ST_VALUE, ZERO__JSON_ST_AFTER, ZERO__JSON_ST_KEY, ZERO__JSON_ST_DONE };

/* A literal at p->pos (true, false, null) as node *idx; a word that is none
   of them an error that guesses what was meant. */
static zero_result zero__json_word(zero__json_parser *p, int *idx) {
    zero__json *j = p->j;
    const char *t = p->t;
    size_t s = p->pos, e = s;
    zero__json_type type = ZERO__JSON_NULL;
    int ok = 1;
    while (e < p->len && zero__json_is_word((unsigned char)t[e])) e++;
    if (e - s == 4 && memcmp(t + s, "true", 4) == 0) type = ZERO__JSON_TRUE;
    else if (e - s == 5 && memcmp(t + s, "false", 5) == 0) type = ZERO__JSON_FALSE;
    else if (e - s == 4 && memcmp(t + s, "null", 4) == 0) type = ZERO__JSON_NULL;
    else ok = 0;
    if (!ok && p->hjson && ((e - s == 8 && memcmp(t + s, "Infinity", 8) == 0) ||
                            (e - s == 3 && memcmp(t + s, "NaN", 3) == 0)))
        return zero__json_nonfinite(p, s, e, idx);
    if (!ok) {
        static const char *const lits[] = {"true", "false", "null"};
        const char *hint = p->hjson ? " (hjson's quoteless strings are not accepted: put the value in "
                                      "double quotes)"
                                    : " (strings need double quotes)";
        int k;
        for (k = 0; k < 3; k++) /* a misspelt literal: "tru", "nul", "falsey" */
            if (e - s >= 2 && (strncmp(t + s, lits[k], e - s) == 0 ||
                               strncmp(t + s, lits[k], strlen(lits[k])) == 0))
                hint = k == 0 ? " (did you mean true?)"
                     : k == 1 ? " (did you mean false?)"
                              : " (did you mean null?)";
        if ((e - s == 4 && (memcmp(t + s, "True", 4) == 0 || memcmp(t + s, "None", 4) == 0)) ||
            (e - s == 5 && memcmp(t + s, "False", 5) == 0))
            hint = " (JSON's literals are lowercase true, false and null)";
        else if ((e - s == 3 && memcmp(t + s, "NaN", 3) == 0) ||
                 (e - s == 8 && memcmp(t + s, "Infinity", 8) == 0))
            hint = " (JSON has no NaN or Infinity)";
        return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, s,
                                     "expected a value (object, array, string, number, "
                                     "true, false or null)",
                                     hint);
    }
    if ((*idx = zero__json_new_node(p, type, s)) < 0) return p->err ? p->err->code : ZERO_ERR_CONFIG;
    j->nodes[*idx].end = e;
    p->pos = e;
    return ZERO_OK;
}

/* hjson's multi-line string opener ''' at p->pos? */
static int zero__json_triple(const zero__json_parser *p) {
    return p->len - p->pos >= 3 && memcmp(p->t + p->pos, "'''", 3) == 0;
}

/* A member's key at p->pos and the ':' after it (after: what the key
   follows, '{' or ','); the key waits in p->pending_key for its value. */
static zero_result zero__json_key(zero__json_parser *p, char after) {
    zero__json *j = p->j;
    const char *t = p->t;
    zero_result rc;
    int key = -1;
    if (p->pos >= p->len) {
        const zero__json_node *o = &j->nodes[p->stack[p->depth - 1].node];
        return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, p->pos,
                                  "expected '\"' to start %s, got end of input (the "
                                  "object opened at line %d:%d is not closed)",
                                  after == ',' ? "the next key after ','" : "a key or '}'",
                                  o->line, o->col);
    }
    if (t[p->pos] != '"' && !(p->hjson && t[p->pos] == '\'' && !zero__json_triple(p))) {
        unsigned char c = (unsigned char)t[p->pos];
        return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, p->pos,
            after == ',' ? "expected '\"' to start the next key after ','"
                         : "expected '\"' to start a key or '}'",
            after == ',' && c == '}' ? " (trailing commas are not allowed)"
            : after == ',' && c == ',' ? " (two commas in a row)"
            : zero__json_is_word(c)  ? (p->hjson ? " (hjson's quoteless keys are not accepted: put the key in "
                                                   "double quotes)"
                                                 : " (keys need double quotes)")
            : c == '\''              ? (p->hjson ? " (a ''' string is hjson's multi-line form, not accepted "
                                                   "for a key)"
                                                 : " (keys need double quotes)")
                                     : "");
    }
    if ((rc = zero__json_string_node(p, &key)) != ZERO_OK) return rc;
    p->pending_key = key;
    if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
    if (p->pos >= p->len || t[p->pos] != ':') {
        char expected[ZERO__JSON_PATH_CAP + 64];
        char name[64];
        size_t n = zero__json_string(j, key, name, sizeof name), k;
        for (k = 0; name[k]; k++) /* one line: control characters shown as '?' */
            if ((unsigned char)name[k] < 0x20 || name[k] == 0x7F) name[k] = '?';
        snprintf(expected, sizeof expected, "expected ':' after the key \"%s%s\"", name,
                 n >= sizeof name ? "..." : "");
        if (p->pos >= p->len) {
            const zero__json_node *o = &j->nodes[p->stack[p->depth - 1].node];
            return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, p->pos,
                                      "%s, got end of input (the object opened at line "
                                      "%d:%d is not closed)",
                                      expected, o->line, o->col);
        }
        return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, p->pos, expected,
                                     NULL);
    }
    p->pos++;
    return ZERO_OK;
}

/* hjson: could what stands at p->pos begin the next member (isobj) or
   element? Only then does a line break stand for a missing comma. */
static int zero__json_starts_item(const zero__json_parser *p, int isobj) {
    unsigned char c = (unsigned char)p->t[p->pos];
    if (c == '"' || c == '\'') return 1;
    return !isobj && (c == '{' || c == '[' || c == '-' || zero__json_is_word(c));
}

static zero_result zero__json_run(zero__json_parser *p) {
    zero__json *j = p->j;
    const char *t = p->t;
    int state = ZERO__JSON_ST_VALUE;
    char after = 0; /* what the value or key follows: 0 (top), '[', ',' or ':' */
    zero_result rc;

    if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
    if (p->pos >= p->len)
        return zero__json_fail_at(p, ZERO_MSG_JSON_EMPTY, ZERO__JSON_AT_NONE, p->pos,
                                  "expected a JSON value, got end of input (the text is empty or "
                                  "only whitespace and comments)");
    while (state != ZERO__JSON_ST_DONE) {
        size_t before = p->pos; /* in ST_AFTER: just past the value */
        int line_before = p->line;
        if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
        if (state == ZERO__JSON_ST_VALUE && p->hjson && after == ',' && p->pos < p->len && t[p->pos] == ']') {
            zero__json_form_at(p, ZERO__JSON_FORM_TRAILING_COMMA, p->comma);
            if ((rc = zero__json_close(p)) != ZERO_OK) return rc;
            state = ZERO__JSON_ST_AFTER;
        } else if (state == ZERO__JSON_ST_KEY && p->hjson && after == ',' && p->pos < p->len && t[p->pos] == '}') {
            zero__json_form_at(p, ZERO__JSON_FORM_TRAILING_COMMA, p->comma);
            if ((rc = zero__json_close(p)) != ZERO_OK) return rc;
            state = ZERO__JSON_ST_AFTER;
        } else if (state == ZERO__JSON_ST_VALUE) {
            unsigned char c;
            int idx = -1;
            if (p->pos >= p->len) {
                const zero__json_node *o;
                if (p->depth == 0) /* not reached: the text was checked not empty */
                    return zero__json_fail_at(p, ZERO_MSG_JSON_EMPTY, ZERO__JSON_AT_NONE, p->pos,
                                              "expected a JSON value, got end of input");
                o = &j->nodes[p->stack[p->depth - 1].node];
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, p->pos,
                                          "expected a value after '%c', got end of input (the "
                                          "%s opened at line %d:%d is not closed)",
                                          after, zero__json_kind(o->type), o->line, o->col);
            }
            c = (unsigned char)t[p->pos];
            if (c == '{' || c == '[') {
                zero__json_type type = c == '{' ? ZERO__JSON_OBJECT : ZERO__JSON_ARRAY;
                if (p->depth >= ZERO_JSON_MAX_DEPTH)
                    return zero__json_fail_at(p, ZERO_MSG_JSON_TOO_DEEP, ZERO__JSON_AT_HERE, p->pos,
                                              "expected at most %d nested arrays/objects, got '%c' "
                                              "opening level %d (ZERO_JSON_MAX_DEPTH)",
                                              (int)ZERO_JSON_MAX_DEPTH, c, p->depth + 1);
                if ((idx = zero__json_new_node(p, type, p->pos)) < 0)
                    return p->err ? p->err->code : ZERO_ERR_CONFIG;
                zero__json_attach(p, idx);
                p->stack[p->depth].node = idx;
                p->stack[p->depth].last = -1;
                p->depth++;
                p->pos++;
                after = (char)c;
                if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
                if (p->pos < p->len && t[p->pos] == (c == '{' ? '}' : ']')) {
                    if ((rc = zero__json_close(p)) != ZERO_OK) return rc;
                    state = ZERO__JSON_ST_AFTER;
                } else {
                    state = c == '{' ? ZERO__JSON_ST_KEY : ZERO__JSON_ST_VALUE;
                }
                continue;
            }
            if (c == '"' || (c == '\'' && p->hjson && !zero__json_triple(p))) {
                rc = zero__json_string_node(p, &idx);
            } else if (c == '\'' && p->hjson) {
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, p->pos,
                                          "expected a value, got ''' (hjson's multi-line string, not "
                                          "accepted: write one JSON string in double quotes, \\n for each "
                                          "line break)");
            } else if (c == '-' || zero__json_is_digit(c)) {
                rc = zero__json_number(p, &idx);
            } else if (zero__json_is_word(c)) {
                rc = zero__json_word(p, &idx);
            } else if (c == '+' || c == '.') {
                return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, p->pos,
                                             "malformed number: expected '-' or a digit to start it",
                                             c == '.' ? " (write 0.5, not .5)"
                                                      : " (JSON numbers have no '+' sign)");
            } else {
                char expected[64];
                snprintf(expected, sizeof expected, "expected a value%s%s%s",
                         after == ',' ? " after ','" : after == ':' ? " after ':'" : "",
                         after == '[' ? " or ']'" : "", "");
                return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, p->pos, expected,
                    after == ',' && c == ']' ? " (trailing commas are not allowed)"
                    : after == ',' && c == ',' ? " (two commas in a row)"
                    : c == '\'' ? " (strings need double quotes)"
                                : "");
            }
            if (rc != ZERO_OK) return rc;
            zero__json_attach(p, idx);
            state = ZERO__JSON_ST_AFTER;
        } else if (state == ZERO__JSON_ST_AFTER) {
            const zero__json_frame *f;
            int isobj;
            if (p->depth == 0) {
                if (p->pos < p->len)
                    return zero__json_unexpected(p, ZERO_MSG_JSON_TRAILING, ZERO__JSON_AT_NONE, p->pos,
                                                 "expected the end of input after the top-level "
                                                 "value",
                                                 NULL);
                state = ZERO__JSON_ST_DONE;
                continue;
            }
            f = &p->stack[p->depth - 1];
            isobj = j->nodes[f->node].type == ZERO__JSON_OBJECT;
            if (p->pos >= p->len) {
                const zero__json_node *o = &j->nodes[f->node];
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, f->last, p->pos,
                                          "expected ',' or '%c' after %s, got end of input (the "
                                          "%s opened at line %d:%d is not closed)",
                                          isobj ? '}' : ']', isobj ? "object member" : "array element",
                                          zero__json_kind(o->type), o->line, o->col);
            }
            if (t[p->pos] == ',') {
                p->comma = p->pos++;
                after = ',';
                state = isobj ? ZERO__JSON_ST_KEY : ZERO__JSON_ST_VALUE;
            } else if (t[p->pos] == (isobj ? '}' : ']')) {
                if ((rc = zero__json_close(p)) != ZERO_OK) return rc;
            } else if (p->hjson && p->line > line_before && zero__json_starts_item(p, isobj)) {
                /* hjson: a line break stands for the comma */
                zero__json_form_at(p, ZERO__JSON_FORM_LINE_COMMA, before);
                after = '\n';
                state = isobj ? ZERO__JSON_ST_KEY : ZERO__JSON_ST_VALUE;
            } else {
                return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, f->last, p->pos,
                                             isobj ? "expected ',' or '}' after object member"
                                                   : "expected ',' or ']' after array element",
                                             p->hjson && p->line == line_before && zero__json_starts_item(p, isobj)
                                                 ? " (a comma is missing: only a line break may stand for one)"
                                                 : NULL);
            }
        } else { /* ZERO__JSON_ST_KEY */
            if ((rc = zero__json_key(p, after)) != ZERO_OK) return rc;
            after = ':';
            state = ZERO__JSON_ST_VALUE;
        }
    }
    return ZERO_OK;
}

static zero_result zero__json_parse_mode(zero__json *j, const char *text, size_t len, int hjson,
                                         zero_error *err) {
    zero__json_parser p;
    zero_result rc;
    if (!j) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero__json_parse: j is NULL");
    memset(j, 0, sizeof *j);
    j->hjson = hjson != 0;
    if (!text && len)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero__json_parse: text is NULL");
    if (len > ZERO__JSON_MAX_BYTES)
        return zero__fail(err, ZERO_MSG_JSON_TOO_LARGE, NULL, 0, 0,
                          "the JSON text is %zu bytes, expected at most %zu (256 MiB)", len,
                          (size_t)ZERO__JSON_MAX_BYTES);
    memset(&p, 0, sizeof p);
    j->text = text ? text : "";
    j->len = len;
    p.j = j;
    p.t = j->text;
    p.len = len;
    p.line = 1;
    p.pending_key = -1;
    p.hjson = j->hjson;
    p.err = err;
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF)
        p.bom = 3;
    p.pos = p.line_start = p.bom;
    rc = zero__json_run(&p);
    ZERO_FREE(p.sort_a);
    ZERO_FREE(p.sort_b);
    if (rc != ZERO_OK) {
        zero__json_free(j);
        return rc;
    }
    zero__ok(err);
    return ZERO_OK;
}

/* Strict JSON (comments allowed): checkpoint metadata, safetensors headers. */
ZERO__UNUSED static zero_result zero__json_parse(zero__json *j, const char *text, size_t len, zero_error *err) {
    return zero__json_parse_mode(j, text, len, 0, err);
}

/* JSON plus hjson's forms (see the section's head), each counted in j->forms: configs. */
ZERO__UNUSED static zero_result zero__json_parse_hjson(zero__json *j, const char *text, size_t len,
                                                       zero_error *err) {
    return zero__json_parse_mode(j, text, len, 1, err);
}

/* ---- >>config-defaults: zero_config_default ---- */

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
    c.optimizer.max_coeff = 10.0;
    c.optimizer.min_coeff = 0.01;

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
    c.zero_optimization.stage3_prefetch_bucket_size = ZERO_UNSET; /* derived from the plan at create */
    c.zero_optimization.stage3_param_persistence_threshold = 100000;
    c.zero_optimization.stage3_model_persistence_threshold = INT64_MAX;
    c.zero_optimization.stage3_max_live_parameters = ZERO_UNSET; /* derived from the plan at create */
    c.zero_optimization.stage3_max_reuse_distance = 1000000000;
    c.zero_optimization.ignore_unused_parameters = 1;
    c.zero_optimization.zero_hpz_partition_size = 1;
    c.zero_optimization.mics_shard_size = -1;
    c.zero_optimization.memory_efficient_linear = 1;
    c.zero_optimization.override_module_apply = 1;

    snprintf(c.jsonl_monitor.job_name, sizeof c.jsonl_monitor.job_name, "zero");
    snprintf(c.tensorboard.job_name, sizeof c.tensorboard.job_name, "DeepSpeedJobName");
    snprintf(c.csv_monitor.job_name, sizeof c.csv_monitor.job_name, "DeepSpeedJobName");
    c.early_cpu_step = 1;
    c.overlap_cpu_step = 1;
    c.grad_accum_device = -1;

    c.log.fn = NULL;
    c.log.user = NULL;
    c.log.level = ZERO_LOG_INFO;
    c.log.rank = -1;
    return c;
}

/* ---- >>config-keys: the key table (data) ----
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
    ZERO__F_NULL_ONLY = 32, /* ANY + REJECTED: only null / absent is accepted */
    ZERO__F_BOOL = 64       /* ANY: a bool or null, kept nowhere; true is refused (REJECTED) or warned (NO_EFFECT) */
};

/* scheduler.params: which schedulers take the key */
#define ZERO__S_WARM (1u << ZERO_SCHEDULER_WARMUP_LR)
#define ZERO__S_DECAY (1u << ZERO_SCHEDULER_WARMUP_DECAY_LR)
#define ZERO__S_COS (1u << ZERO_SCHEDULER_WARMUP_COSINE_LR)
#define ZERO__S_CYCLE (1u << ZERO_SCHEDULER_ONE_CYCLE)
#define ZERO__S_RANGE (1u << ZERO_SCHEDULER_LR_RANGE_TEST)
#define ZERO__S_ALL (ZERO__S_WARM | ZERO__S_DECAY | ZERO__S_COS | ZERO__S_CYCLE | ZERO__S_RANGE)

/* optimizer.params: which optimizers take the key */
#define ZERO__O_ADAM ((1u << ZERO_OPTIMIZER_ADAM) | (1u << ZERO_OPTIMIZER_ADAMW))
#define ZERO__O_LION (1u << ZERO_OPTIMIZER_LION)
#define ZERO__O_ADAGRAD (1u << ZERO_OPTIMIZER_ADAGRAD)
#define ZERO__O_SGD (1u << ZERO_OPTIMIZER_SGD)
#define ZERO__O_LAMB (1u << ZERO_OPTIMIZER_LAMB)
#define ZERO__O_ALL (ZERO__O_ADAM | ZERO__O_LION | ZERO__O_ADAGRAD | ZERO__O_SGD | ZERO__O_LAMB)

typedef struct zero__key {
    zero_key_info info;
    zero__kind kind;
    size_t offset;       /* of the field in zero_config (SECTION, ANY: 0) */
    double lo, hi;       /* accepted range of numbers, inclusive */
    const char *choices; /* ENUM: "cpu:1|nvme:2|none:0": name:value, in the order errors list them */
    zero__auto auto_rule;
    unsigned flags;
    unsigned type_mask;  /* scheduler.params: ZERO__S_*; optimizer.params: ZERO__O_* (the types taking the key) */
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

static const char zero__engine_note[] = "not acted on yet: zero trains as with the default";
static const char zero__offload_note[] = "not acted on yet: the offload engine has no such knob";

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
    {{"steps_per_print", "int", "None", ZERO__IMPL,
      "progress line every N optimizer steps; None: never (code default since v0.15.2; docs say 10)", ""},
     ZERO__K_I64, ZERO__OFF(steps_per_print), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, ZERO__F_NULLABLE, 0, NULL, "cfg.steps_per_print"},
    {{"wall_clock_breakdown", "bool", "false", ZERO__IMPL, "time each phase of the step", ""},
     ZERO__K_BOOL, ZERO__OFF(wall_clock_breakdown), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.wall_clock_breakdown"},
    {{"gradient_clipping", "float", "1.0", ZERO__IMPL,
      "clip the global L2 norm of the gradients to this; 0 disables (DeepSpeed 0.19 default 1.0, DeepSpeed 0.16: 0)",
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
      "allow a client optimizer with ZeRO", "zero runs its own optimizers only"},
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
    {{"data_types.grad_accum_dtype", "string", "None", ZERO__IMPL,
      "dtype of gradient accumulation: \"fp32\", \"fp16\", \"bf16\"; None = the model's dtype (DeepSpeed 0.19)", "None means fp32 in zero (accumulating fp16/bf16 gradients in 16 bits loses them)"},
     ZERO__K_ENUM, ZERO__OFF(grad_accum_dtype), 0, 0, "fp32:1|fp16:2|bf16:3", ZERO__AUTO_NO, ZERO__F_NULLABLE, 0, NULL, "cfg.grad_accum_dtype"},
    {{"checkpoint", "object", "{}", ZERO__IMPL, "checkpoint options", ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"checkpoint.tag_validation", "string", "\"WARN\"", ZERO__NYET,
      "check that all ranks save with the same tag: WARN, IGNORE or FAIL", "not acted on yet"},
     ZERO__K_ENUM, ZERO__OFF(tag_validation), 0, 0, "WARN:0|IGNORE:1|FAIL:2", ZERO__AUTO_NO, ZERO__F_NOCASE, 0, NULL, "cfg.tag_validation"},
    {{"checkpoint.load_universal", "bool", "false", ZERO__NOEF,
      "load a universal (world-size independent) checkpoint", "zero's checkpoints are always world-size independent"},
     ZERO__K_BOOL, ZERO__OFF(load_universal), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.load_universal"},
    {{"checkpoint.use_node_local_storage", "bool", "false", ZERO__NYET, "save per node", "not acted on yet: every rank writes into the one directory zero_save is given"},
     ZERO__K_BOOL, ZERO__OFF(use_node_local_storage), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.use_node_local_storage"},
    {{"aio", "object", "{}", ZERO__IMPL, "libaio settings of ZeRO-Infinity's NVMe swapping", ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"aio.block_size", "int", "1048576", ZERO__NOEF, "bytes per I/O request", "zero swaps whole unit tiles with POSIX I/O"},
     ZERO__K_I64, ZERO__OFF(aio.block_size), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.block_size"},
    {{"aio.queue_depth", "int", "8", ZERO__NOEF, "requests in flight", "zero uses POSIX I/O"},
     ZERO__K_I64, ZERO__OFF(aio.queue_depth), 1, 65536, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.queue_depth"},
    {{"aio.intra_op_parallelism", "int", "1", ZERO__NOEF, "I/O threads per request (docs call it thread_count)", "zero uses POSIX I/O"},
     ZERO__K_I64, ZERO__OFF(aio.intra_op_parallelism), 1, ZERO__BIG, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.intra_op_parallelism"},
    {{"aio.single_submit", "bool", "false", ZERO__NOEF, "submit requests one by one", "zero uses POSIX I/O"},
     ZERO__K_BOOL, ZERO__OFF(aio.single_submit), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.single_submit"},
    {{"aio.overlap_events", "bool", "true", ZERO__NOEF, "overlap submission and completion", "zero uses POSIX I/O"},
     ZERO__K_BOOL, ZERO__OFF(aio.overlap_events), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.overlap_events"},
    {{"aio.use_gds", "bool", "false", ZERO__REJ, "GPUDirect Storage", "not supported"},
     ZERO__K_BOOL, ZERO__OFF(aio.use_gds), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.aio.use_gds"},

    /* ---- fp16 (strict in DeepSpeed 0.19: pydantic extra="forbid") ---- */
    {{"fp16", "object", "{}", ZERO__IMPL, "fp16 mixed precision with loss scaling", "unknown keys are errors"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, NULL, ""},
    {{"fp16.enabled", "bool", "false", ZERO__IMPL, "train in fp16 with fp32 master weights",
      "\"auto\": set cfg.fp16.enabled (HF: --fp16)"},
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

    /* ---- bf16 (strict in DeepSpeed 0.19) ---- */
    {{"bf16", "object", "{}", ZERO__IMPL, "bf16 mixed precision (no loss scaling)", "alias \"bfloat16\"; unknown keys are errors"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, "bfloat16", ""},
    {{"bf16.enabled", "bool", "false", ZERO__IMPL, "train in bf16 with fp32 master weights",
      "\"auto\": set cfg.bf16.enabled (HF: --bf16)"},
     ZERO__K_BOOL, ZERO__OFF(bf16.enabled), 0, 1, NULL, ZERO__AUTO_SUPPLY, 0, 0, NULL, "cfg.bf16.enabled"},
    {{"bf16.immediate_grad_update", "bool", "false", ZERO__NYET, "apply gradients as they arrive", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(bf16.immediate_grad_update), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.immediate_grad_update"},
    {{"bf16.check_grad_overflow", "bool", "true", ZERO__IMPL, "skip bf16 steps whose gradients hold inf/NaN (DeepSpeed >= 0.17.1)", "stages 1-2, as DeepSpeed (stage 3 checks fp16 only)"},
     ZERO__K_BOOL, ZERO__OFF(bf16.check_grad_overflow), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.check_grad_overflow"},
    {{"bf16.bf16_master_weights_and_grads", "bool", "false", ZERO__NYET, "keep master weights in bf16", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(bf16.bf16_master_weights_and_grads), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.bf16_master_weights_and_grads"},
    {{"bf16.bf16_optimizer_states", "bool", "false", ZERO__NYET, "keep Adam moments in bf16", zero__engine_note},
     ZERO__K_BOOL, ZERO__OFF(bf16.bf16_optimizer_states), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, "cfg.bf16.bf16_optimizer_states"},

    /* ---- optimizer ---- */
    {{"optimizer", "object", "None", ZERO__IMPL, "the optimizer: {\"type\": ..., \"params\": {...}}", "absent: Adam with the defaults below"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"optimizer.type", "string", "-", ZERO__IMPL,
      "\"Adam\", \"AdamW\", \"Lion\", \"Adagrad\", \"SGD\" or \"Lamb\" (case-insensitive); \"Adam\" decouples weight decay unless adam_w_mode is false",
      "DeepSpeed's other optimizers (OneBitAdam, ZeroOneAdam, OneBitLamb, MuAdam, MuAdamW, MuSGD, Muon) and other torch.optim names are errors"},
     ZERO__K_ENUM, ZERO__OFF(optimizer.type), 0, 0, "Adam:0|AdamW:1|Lion:2|Adagrad:3|SGD:4|Lamb:5", ZERO__AUTO_NO, ZERO__F_NOCASE, 0, NULL, "cfg.optimizer.type"},
    {{"optimizer.params", "object", "{}", ZERO__IMPL, "keyword arguments of the optimizer",
      "unknown keys, and keys of another optimizer, are errors (DeepSpeed: TypeError)"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT, 0, NULL, ""},
    {{"optimizer.params.lr", "float", "1e-3", ZERO__IMPL, "learning rate (the base of every schedule); Adagrad: 1e-2",
      "\"auto\": set cfg.optimizer.lr (HF: learning_rate)"},
     ZERO__K_F64, ZERO__OFF(optimizer.lr), 0, 1e300, NULL, ZERO__AUTO_SUPPLY, 0, ZERO__O_ALL, NULL, "cfg.optimizer.lr"},
    {{"optimizer.params.betas", "[float, float]", "[0.9, 0.999]", ZERO__IMPL, "Adam's, Lion's and Lamb's beta1, beta2, each in [0, 1)",
      "\"auto\": set cfg.optimizer.beta1 and beta2 (HF: adam_beta1, adam_beta2)"},
     ZERO__K_BETAS, ZERO__OFF(optimizer.beta1), 0, 0.9999999999999999, NULL, ZERO__AUTO_SUPPLY, 0, ZERO__O_ADAM | ZERO__O_LION | ZERO__O_LAMB, NULL, "cfg.optimizer.beta1, cfg.optimizer.beta2"},
    {{"optimizer.params.eps", "float", "1e-8", ZERO__IMPL, "Adam's, Adagrad's and Lamb's epsilon; Adagrad: 1e-10",
      "\"auto\": set cfg.optimizer.eps (HF: adam_epsilon)"},
     ZERO__K_F64, ZERO__OFF(optimizer.eps), 0, 1e300, NULL, ZERO__AUTO_SUPPLY, 0, ZERO__O_ADAM | ZERO__O_ADAGRAD | ZERO__O_LAMB, NULL, "cfg.optimizer.eps"},
    {{"optimizer.params.weight_decay", "float", "0", ZERO__IMPL, "weight decay (decoupled in AdamW mode and in Lion; in Lamb's update)",
      "\"auto\": set cfg.optimizer.weight_decay (HF: weight_decay)"},
     ZERO__K_F64, ZERO__OFF(optimizer.weight_decay), 0, 1e300, NULL, ZERO__AUTO_SUPPLY, 0, ZERO__O_ALL, NULL, "cfg.optimizer.weight_decay"},
    {{"optimizer.params.bias_correction", "bool", "true", ZERO__IMPL, "Adam's and Lamb's bias correction", ""},
     ZERO__K_BOOL, ZERO__OFF(optimizer.bias_correction), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__O_ADAM | ZERO__O_LAMB, NULL, "cfg.optimizer.bias_correction"},
    {{"optimizer.params.adam_w_mode", "bool", "true", ZERO__IMPL, "decoupled weight decay (AdamW) even for \"Adam\"", ""},
     ZERO__K_BOOL, ZERO__OFF(optimizer.adam_w_mode), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__O_ADAM, NULL, "cfg.optimizer.adam_w_mode"},
    {{"optimizer.params.torch_adam", "bool", "false", ZERO__NOEF, "use torch's Adam instead of FusedAdam", "same math: zero has one Adam"},
     ZERO__K_BOOL, ZERO__OFF(optimizer.torch_adam), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__O_ADAM, NULL, "cfg.optimizer.torch_adam"},
    {{"optimizer.params.amsgrad", "bool", "false", ZERO__REJ, "Adam's, Adagrad's and Lamb's AMSGrad variant",
      "DeepSpeed's fused and CPU Adam and its FusedLamb reject it; its CPU Adagrad ignores it"},
     ZERO__K_BOOL, ZERO__OFF(optimizer.amsgrad), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__O_ADAM | ZERO__O_ADAGRAD | ZERO__O_LAMB, NULL, "cfg.optimizer.amsgrad"},
    {{"optimizer.params.momentum", "float", "0", ZERO__IMPL, "SGD's momentum factor; 0: no momentum buffer", ""},
     ZERO__K_F64, ZERO__OFF(optimizer.momentum), 0, 1e300, NULL, ZERO__AUTO_NO, 0, ZERO__O_SGD, NULL, "cfg.optimizer.momentum"},
    {{"optimizer.params.dampening", "float", "0", ZERO__IMPL, "SGD's dampening of the momentum", ""},
     ZERO__K_F64, ZERO__OFF(optimizer.dampening), -1e300, 1e300, NULL, ZERO__AUTO_NO, 0, ZERO__O_SGD, NULL, "cfg.optimizer.dampening"},
    {{"optimizer.params.nesterov", "bool", "false", ZERO__IMPL, "SGD's Nesterov momentum",
      "needs momentum > 0 and dampening 0 (torch's rule)"},
     ZERO__K_BOOL, ZERO__OFF(optimizer.nesterov), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__O_SGD, NULL, "cfg.optimizer.nesterov"},
    {{"optimizer.params.maximize", "bool", "false", ZERO__REJ, "SGD: maximize the objective", "true is not supported"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_BOOL, ZERO__O_SGD, NULL, ""},
    {{"optimizer.params.foreach", "bool", "None", ZERO__NOEF, "SGD: torch's multi-tensor implementation", "zero has its own kernels"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_BOOL, ZERO__O_SGD, NULL, ""},
    {{"optimizer.params.fused", "bool", "None", ZERO__NOEF, "SGD: torch's fused implementation", "zero has its own kernels"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_BOOL, ZERO__O_SGD, NULL, ""},
    {{"optimizer.params.differentiable", "bool", "false", ZERO__NOEF, "SGD: autograd through the step", "zero's step is not part of a graph"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_BOOL, ZERO__O_SGD, NULL, ""},
    {{"optimizer.params.eps_inside_sqrt", "bool", "false", ZERO__IMPL, "Lamb: eps added to v under the square root", ""},
     ZERO__K_BOOL, ZERO__OFF(optimizer.eps_inside_sqrt), 0, 1, NULL, ZERO__AUTO_NO, 0, ZERO__O_LAMB, NULL, "cfg.optimizer.eps_inside_sqrt"},
    {{"optimizer.params.max_coeff", "float", "10.0", ZERO__IMPL, "Lamb: the trust ratio's ceiling", ""},
     ZERO__K_F64, ZERO__OFF(optimizer.max_coeff), 0, 1e300, NULL, ZERO__AUTO_NO, 0, ZERO__O_LAMB, NULL, "cfg.optimizer.max_coeff"},
    {{"optimizer.params.min_coeff", "float", "0.01", ZERO__IMPL, "Lamb: the trust ratio's floor", "must not exceed max_coeff"},
     ZERO__K_F64, ZERO__OFF(optimizer.min_coeff), 0, 1e300, NULL, ZERO__AUTO_NO, 0, ZERO__O_LAMB, NULL, "cfg.optimizer.min_coeff"},
    {{"optimizer.params.max_grad_norm", "float", "0", ZERO__REJ, "Lamb: clip by the global gradient norm",
      "DeepSpeed refuses it in any optimizer's params (ValueError): use gradient_clipping"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_NULL_ONLY, ZERO__O_LAMB, NULL, ""},

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
      "WarmupLR/WarmupDecayLR: lr at the end of warmup; None: WarmupLR takes the optimizer's lr (DeepSpeed 0.19; DeepSpeed 0.16: 1e-3), WarmupDecayLR's signature keeps 1e-3",
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
#define ZERO__ZERO_KEY(name, type, def, status, meaning, note, kind, lo, hi, rule, flags)                   \
    {{"zero_optimization." #name, type, def, status, meaning, note}, kind,                          \
     ZERO__OFF(zero_optimization.name), lo, hi, NULL, rule, flags, 0, NULL, "cfg.zero_optimization." #name}
    ZERO__ZERO_KEY(stage, "int", "0", ZERO__IMPL, "0: data parallel; 1: shard optimizer state; 2: + gradients; 3: + parameters",
             "", ZERO__K_INT, 0, 3, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(contiguous_gradients, "bool", "true", ZERO__NOEF, "copy gradients into contiguous buffers as they are produced",
             "zero's gradients are always contiguous per unit", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(reduce_scatter, "bool", "true", ZERO__NOEF, "reduce gradients per owner instead of a plain all-reduce",
             "zero always reduce-scatters each unit (2x parameters moved per step)", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(reduce_bucket_size, "int", "5e8", ZERO__IMPL, "elements per gradient bucket (zero: the largest unit)",
             "\"auto\": hidden_size^2 (HF's rule; set cfg.hidden_size)", ZERO__K_I64, 0, ZERO__BIG, ZERO__AUTO_DERIVE, 0),
    ZERO__ZERO_KEY(use_multi_rank_bucket_allreduce, "bool", "true", ZERO__NOEF, "stage 1/2: one all-reduce per multi-owner bucket",
             "zero reduce-scatters", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(allgather_partitions, "bool", "true", ZERO__NOEF, "all-gather updated parameters (vs broadcasts)",
             "zero always all-gathers each unit", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(allgather_bucket_size, "int", "5e8", ZERO__NOEF, "chunking of the post-step all-gather",
             "DeepSpeed ignores it when all_gather_into_tensor exists; zero gathers whole units", ZERO__K_I64, 0, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(overlap_comm, "bool", "None", ZERO__NOEF, "reduce on a side stream overlapping backward; None: true for stage 3 only",
             "zero always reduces each unit on its communication stream as soon as its gradients are ready, overlapping the backward; false does not turn that off (zero has no reduction after the backward)", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, ZERO__F_NULLABLE),
    ZERO__ZERO_KEY(load_from_fp32_weights, "bool", "true", ZERO__NYET, "on load, restore fp32 master weights from the checkpoint",
             "not acted on yet: zero_load always restores the fp32 master from the checkpoint (as true)", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(elastic_checkpoint, "bool", "false", ZERO__NOEF, "legacy world-size-resizable stage 1/2 checkpoints",
             "zero's checkpoints are always world-size independent", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.offload_param", "object", "None", ZERO__IMPL, "stage 3: where parameter shards live",
      "unknown keys are errors; null: no offload"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT | ZERO__F_NULLABLE, 0, NULL, ""},
#define ZERO__OFFLOAD_KEY(blk, name, type, def, status, meaning, note, kind, lo, hi, choices, flags)             \
    {{"zero_optimization." #blk "." #name, type, def, status, meaning, note}, kind,                    \
     ZERO__OFF(zero_optimization.blk.name), lo, hi, choices, ZERO__AUTO_DEFAULT, flags, 0, NULL,          \
     "cfg.zero_optimization." #blk "." #name}
    ZERO__OFFLOAD_KEY(offload_param, device, "string", "\"none\"", ZERO__IMPL, "\"none\", \"cpu\" or \"nvme\"",
             "stage 3 (ignored below, as DeepSpeed): \"cpu\": each rank's compute-dtype shard in host memory, copied into "
             "the gather pool before each all-gather; \"nvme\": the shard in files under nvme_path, one tile per unit, "
             "through buffer_count host buffers (host backend, through zero_offload_backend)",
             ZERO__K_ENUM, 0, 0, "cpu:1|nvme:2|none:0", 0),
    ZERO__OFFLOAD_KEY(offload_param, nvme_path, "string", "None", ZERO__IMPL, "directory of the swap files (device nvme)",
             "must exist; the file is nvme_path/zero_param.rankR.tiles, removed at zero_engine_destroy",
             ZERO__K_STRING, 0, 0, NULL, ZERO__F_NULLABLE),
    ZERO__OFFLOAD_KEY(offload_param, buffer_count, "int", "5", ZERO__IMPL, "pinned swap buffers",
             "device nvme: max(2, buffer_count) buffers of one unit's chunk: a cache with read-ahead along the stage-3 "
             "fetch order and write-behind of the step",
             ZERO__K_I64, 1, ZERO__BIG, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_param, buffer_size, "int", "1e8", ZERO__NOEF, "elements per swap buffer",
             "zero's buffers hold one unit's chunk (units are at most reduce_bucket_size elements)",
             ZERO__K_I64, 1, ZERO__BIG, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_param, max_in_cpu, "int", "1e9", ZERO__NOEF, "elements kept in CPU memory with nvme",
             "with nvme zero keeps buffer_count unit chunks in host memory", ZERO__K_I64, 0, ZERO__BIG, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_param, pin_memory, "bool", "true", ZERO__IMPL, "page-locked host buffers (DeepSpeed >= 0.19.5; DeepSpeed 0.16: false)",
             "the host shard (device cpu) or the tile buffers (nvme)", ZERO__K_BOOL, 0, 1, NULL, 0),
    {{"zero_optimization.offload_optimizer", "object", "None", ZERO__IMPL, "stages 1-3: where optimizer state lives and steps",
      "unknown keys are errors; null: no offload"},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, ZERO__F_STRICT | ZERO__F_NULLABLE, 0, NULL, ""},
    ZERO__OFFLOAD_KEY(offload_optimizer, device, "string", "\"none\"", ZERO__IMPL, "\"none\", \"cpu\" or \"nvme\"",
             "\"cpu\": master weights and Adam state in host memory, Adam on the CPU (host backend now, GPUs with the offload pipeline); \"nvme\": the same with master and Adam state in files under nvme_path, one tile per unit (host backend, through zero_offload_backend)",
             ZERO__K_ENUM, 0, 0, "cpu:1|nvme:2|none:0", 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, nvme_path, "string", "None", ZERO__IMPL, "directory of the swap files (device nvme)",
             "must exist; the file is nvme_path/zero_optim.rankR.tiles, removed at zero_engine_destroy",
             ZERO__K_STRING, 0, 0, NULL, ZERO__F_NULLABLE),
    ZERO__OFFLOAD_KEY(offload_optimizer, buffer_count, "int", "4", ZERO__IMPL, "pinned swap buffers (param, grad, m, v)",
             "device nvme: max(3, buffer_count) tile buffers (master | m | v of one unit's chunk each)",
             ZERO__K_I64, 1, ZERO__BIG, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, pin_memory, "bool", "true", ZERO__IMPL, "page-locked host buffers (DeepSpeed >= 0.19.5; DeepSpeed 0.16: false)",
             "", ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, pipeline_read, "bool", "false", ZERO__NOEF, "read the next tile while stepping",
             "zero always reads the next tiles ahead (max(3, buffer_count) buffers)", ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, pipeline_write, "bool", "false", ZERO__NOEF, "write the last tile while stepping",
             "zero always writes the last tile behind the next one's Adam", ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, fast_init, "bool", "false", ZERO__NOEF, "build swap files directly from NVMe-resident params",
             "zero creates its swap files at engine creation", ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, ratio, "float", "1.0", ZERO__IMPL, "fraction of sub-groups stepped on the CPU (< 1 only stage 3)",
             "units are the sub-groups: the first (int)((1 - ratio) x trainable units) keep master, m, v and their "
             "gradients on the device and step with its Adam, the rest on the CPU; device \"cpu\" and Adam / AdamW only (\"nvme\", "
             "other optimizers refused); no early, overlapped or delayed CPU step then; ignored (warning) without offload, as DeepSpeed",
             ZERO__K_F64, 0, 1, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, super_offload, "bool", "false", ZERO__REJ, "SuperOffload (DeepSpeed 0.19)", "not supported",
             ZERO__K_BOOL, 0, 1, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, cpuadam_cores_perc, "float", "0.8", ZERO__NYET, "fraction of cores for CPU Adam (DeepSpeed 0.19)",
             zero__offload_note, ZERO__K_F64, 0, 1, NULL, 0),
    ZERO__OFFLOAD_KEY(offload_optimizer, delayed_param_update, "bool", "false", ZERO__IMPL,
             "zero's own key: delayed parameter update (ZeRO-Offload paper's DPU)",
             "device cpu, without offload_param: the CPU Adam of step t runs beside the forward and backward of step "
             "t+1, whose forward uses the parameters of step t-1 (one step stale); zero_flush applies the last one",
             ZERO__K_BOOL, 0, 1, NULL, 0),
#undef ZERO__OFFLOAD_KEY
    ZERO__ZERO_KEY(sub_group_size, "int", "1e9", ZERO__NYET, "stage 3: elements per optimizer sub-group (zero: per unit tile)",
             zero__engine_note, ZERO__K_I64, 1, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.stage3_prefetch_bucket_size", "int", "derived", ZERO__IMPL,
      "stage 3: elements prefetched ahead (DeepSpeed's code default 5e7; its docs say 5e8)", "alias prefetch_bucket_size. Not given (or null): the largest group's elements, derived at create with max_live (one layer ahead, within the pool). \"auto\": 0.9 x hidden_size^2 (HF's rule)"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_prefetch_bucket_size), 0, ZERO__BIG, NULL, ZERO__AUTO_DERIVE, ZERO__F_NULLABLE, 0,
     "prefetch_bucket_size", "cfg.zero_optimization.stage3_prefetch_bucket_size"},
    {{"zero_optimization.stage3_param_persistence_threshold", "int", "1e5", ZERO__IMPL,
      "stage 3: tensors of at most this many elements stay gathered", "alias param_persistence_threshold. \"auto\": 10 x hidden_size (HF's rule)"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_param_persistence_threshold), 0, ZERO__BIG, NULL, ZERO__AUTO_DERIVE, 0, 0,
     "param_persistence_threshold", "cfg.zero_optimization.stage3_param_persistence_threshold"},
    {{"zero_optimization.stage3_model_persistence_threshold", "int", "sys.maxsize", ZERO__IMPL,
      "stage 3: cap on all persistent elements", "alias model_persistence_threshold"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_model_persistence_threshold), 0, 9.3e18, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "model_persistence_threshold", "cfg.zero_optimization.stage3_model_persistence_threshold"},
    {{"zero_optimization.stage3_max_live_parameters", "int", "derived", ZERO__IMPL,
      "stage 3: gathered elements beyond which no prefetch is issued (a needed fetch is never blocked; DeepSpeed's default 1e9)", "alias max_live_parameters; given: zero's gather pool holds max(max_live + prefetch, 2 x largest unit) elements. Not given (null, \"auto\"): derived at create from zero_tensor.group: the three largest groups (a layer's tensors; a tied embedding once) and room for the largest once more, the pool that many elements with the prefetch inside it, grown where the program holds more (one group for all, or a backend without address ranges: DeepSpeed's 1e9 and 5e7)"},
     ZERO__K_I64, ZERO__OFF(zero_optimization.stage3_max_live_parameters), 0, ZERO__BIG, NULL, ZERO__AUTO_DEFAULT, ZERO__F_NULLABLE, 0,
     "max_live_parameters", "cfg.zero_optimization.stage3_max_live_parameters"},
    {{"zero_optimization.stage3_max_reuse_distance", "int", "1e9", ZERO__IMPL,
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
      "stage 3: gather parameters one by one (DeepSpeed 0.19)", "zero gathers whole units"},
     ZERO__K_BOOL, ZERO__OFF(zero_optimization.stage3_allgather_sequential), 0, 1, NULL, ZERO__AUTO_DEFAULT, 0, 0,
     "allgather_sequential", "cfg.zero_optimization.stage3_allgather_sequential"},
    ZERO__ZERO_KEY(ignore_unused_parameters, "bool", "true", ZERO__NYET, "stage 2: tolerate parameters that get no gradient",
             "zero: mark an unused tensor ready without writing its gradient (it counts as zero)", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(legacy_stage1, "bool", "false", ZERO__REJ, "removed legacy stage 1", "true is an error, as in DeepSpeed",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(round_robin_gradients, "bool", "false", ZERO__NOEF, "stage 1/2: interleave gradient owners",
             "zero's units give every rank a chunk of each bucket already", ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(zero_hpz_partition_size, "int", "1", ZERO__REJ, "ZeRO++ hpZ secondary partition size",
             "only 1: the secondary copy is not built; mics_shard_size keeps the parameters' gathers inside the group",
             ZERO__K_I64, 1, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(zero_quantized_weights, "bool", "false", ZERO__REJ, "ZeRO++ qwZ quantized weight all-gather", "ZeRO++ is not supported",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(zero_quantized_nontrainable_weights, "bool", "false", ZERO__REJ, "store frozen weights quantized", "not supported",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(zero_quantized_gradients, "bool", "false", ZERO__REJ, "ZeRO++ qgZ quantized gradient reduction", "ZeRO++ is not supported",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.zeropp_loco_param", "object", "None", ZERO__REJ, "ZeRO++ LoCo error feedback {err_beta, reset_T}",
      "only null is accepted"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_DEFAULT, ZERO__F_NULL_ONLY, 0, NULL, ""},
    ZERO__ZERO_KEY(mics_shard_size, "int", "-1", ZERO__IMPL, "MiCS: shard within groups of this size, replicate across groups",
             "hybrid sharding at stages 1-3 (DeepSpeed: stage 3 only); G consecutive ranks share one shard; -1 or 0: flat; "
             "must divide the world size",
             ZERO__K_I64, -ZERO__BIG, ZERO__BIG, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(mics_hierarchical_params_gather, "bool", "false", ZERO__NOEF, "MiCS: gather parameters in two hops when a group spans nodes",
             "zero gathers with one all-gather over the shard group; NCCL routes it over NVLink and the network itself",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(memory_efficient_linear, "bool", "true", ZERO__NOEF, "stage 3: PyTorch linear-layer internals", "PyTorch only",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(override_module_apply, "bool", "true", ZERO__NOEF, "stage 3: PyTorch module.apply internals", "PyTorch only",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(pipeline_loading_checkpoint, "bool", "false", ZERO__NOEF, "pipeline-parallel checkpoint loading", "no pipeline parallelism in zero",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(log_trace_cache_warnings, "bool", "false", ZERO__NOEF, "stage 3: log trace-cache invalidations", "",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    ZERO__ZERO_KEY(enable_sanity_checks, "bool", "false", ZERO__NOEF, "extra stage-3 assertions (DeepSpeed 0.19)", "zero's checks: check_collectives / ZERO_CHECK=1 (docs/engine.md)",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
    {{"zero_optimization.zenflow", "object", "None", ZERO__REJ, "ZenFlow asynchronous CPU updates (DeepSpeed 0.19)", "only null is accepted"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_DEFAULT, ZERO__F_NULL_ONLY, 0, NULL, ""},
    {{"zero_optimization.leaf_module", "object", "{}", ZERO__NOEF, "stage 3: PyTorch module classes fetched as one (DeepSpeed 0.19)",
      "zero fetches the groups the program registers"},
     ZERO__K_ANY, 0, 0, 0, NULL, ZERO__AUTO_DEFAULT, 0, 0, NULL, ""},
    ZERO__ZERO_KEY(save_muon_momentum_buffer_in_memory, "bool", "false", ZERO__NOEF, "Muon optimizer buffers (DeepSpeed 0.19)", "no Muon in zero",
             ZERO__K_BOOL, 0, 1, ZERO__AUTO_DEFAULT, 0),
#undef ZERO__ZERO_KEY
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
    {{"tensorboard", "object", "{}", ZERO__IMPL, "TensorBoard monitor: event files written by zero (no dependency)", ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"tensorboard.enabled", "bool", "false", ZERO__IMPL,
      "rank 0 writes each optimizer step's scalars at DeepSpeed's tags (Train/Samples/train_loss, lr, loss_scale with "
      "fp16, elapsed_time_ms_* with wall_clock_breakdown) and zero's (grad_norm, skipped_steps, samples_per_sec, "
      "device_memory_bytes), step = samples seen",
      "docs/observability.md"},
     ZERO__K_BOOL, ZERO__OFF(tensorboard.enabled), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.tensorboard.enabled"},
    {{"tensorboard.output_path", "string", "\"\"", ZERO__IMPL, "parent of the job's directory (\"\": the working directory)",
      "made where missing, as DeepSpeed's makedirs"},
     ZERO__K_STRING, ZERO__OFF(tensorboard.output_path), 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.tensorboard.output_path"},
    {{"tensorboard.job_name", "string", "\"DeepSpeedJobName\"", ZERO__IMPL,
      "the event file is <output_path>/<job_name>/events.out.tfevents.<time>.zero.<pid>.0", ""},
     ZERO__K_STRING, ZERO__OFF(tensorboard.job_name), 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.tensorboard.job_name"},
    ZERO__TOP("wandb", ZERO__NOEF, "Weights & Biases monitor",
              "no network client in zero: tensorboard and csv_monitor write the same scalars to files", 0),
    {{"csv_monitor", "object", "{}", ZERO__IMPL, "CSV monitor: DeepSpeed's files, one per tag", ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"csv_monitor.enabled", "bool", "false", ZERO__IMPL,
      "rank 0 appends \"step,value\" to <tag>.csv for tensorboard's scalars (the tag's '/' and ' ' made '_'; a "
      "\"step,<name>\" header first)",
      "docs/observability.md"},
     ZERO__K_BOOL, ZERO__OFF(csv_monitor.enabled), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.csv_monitor.enabled"},
    {{"csv_monitor.output_path", "string", "\"\"", ZERO__IMPL, "parent of the job's directory (\"\": the working directory)",
      "made where missing"},
     ZERO__K_STRING, ZERO__OFF(csv_monitor.output_path), 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.csv_monitor.output_path"},
    {{"csv_monitor.job_name", "string", "\"DeepSpeedJobName\"", ZERO__IMPL, "the files are in <output_path>/<job_name>/", ""},
     ZERO__K_STRING, ZERO__OFF(csv_monitor.job_name), 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.csv_monitor.job_name"},
    {{"jsonl_monitor", "object", "{}", ZERO__IMPL, "zero's own key: metrics as JSON lines (shaped like csv_monitor)",
      ""},
     ZERO__K_SECTION, 0, 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, ""},
    {{"jsonl_monitor.enabled", "bool", "false", ZERO__IMPL,
      "rank 0 appends one JSON object per optimizer step: step, loss (zero_report_loss), lr, loss scale, grad norm, "
      "skipped, phase times, samples/s, memory by category",
      "docs/observability.md lists the fields"},
     ZERO__K_BOOL, ZERO__OFF(jsonl_monitor.enabled), 0, 1, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.jsonl_monitor.enabled"},
    {{"jsonl_monitor.output_path", "string", "\"\"", ZERO__IMPL, "directory of the file (\"\": the working directory)",
      "must exist; zero_engine_create fails naming it otherwise"},
     ZERO__K_STRING, ZERO__OFF(jsonl_monitor.output_path), 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL,
     "cfg.jsonl_monitor.output_path"},
    {{"jsonl_monitor.job_name", "string", "\"zero\"", ZERO__IMPL, "the file is <output_path>/<job_name>.jsonl", ""},
     ZERO__K_STRING, ZERO__OFF(jsonl_monitor.job_name), 0, 0, NULL, ZERO__AUTO_NO, 0, 0, NULL, "cfg.jsonl_monitor.job_name"},
    ZERO__TOP("comet", ZERO__NOEF, "Comet monitor", "", 0),
    ZERO__TOP("comms_logger", ZERO__NOEF, "communication logger", "ZERO_DEBUG=1 logs every collective instead (docs/observability.md)", 0),
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

/* ---- >>config-parse: zero_config_load and zero_config_parse ---- */

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

/* zero_config_source has a slot for every key */
typedef char zero__keys_fit_source[ZERO__NKEYS <= ZERO_CONFIG_MAX_KEYS ? 1 : -1];

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

/* FNV-1a of key k's field as it stands (a string up to its NUL): whether a
   parsed value is still the one in the field (zero_config_source). */
static uint32_t zero__key_hash(const zero_config *c, const zero__key *k) {
    const unsigned char *b = (const unsigned char *)c + k->offset, *nul;
    size_t n = zero__kind_size(k->kind), i;
    if (k->kind == ZERO__K_STRING && (nul = (const unsigned char *)memchr(b, 0, n)) != NULL) n = (size_t)(nul - b);
    uint32_t h = 2166136261u;
    for (i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
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

/* Is bit t of mask set (t an enum value, perhaps one a program made up)? */
static int zero__type_in(unsigned mask, int t) { return t >= 0 && t < 32 && (mask & (1u << t)) != 0; }

/* Does key k apply to c: 0 for a parameter of another scheduler or
   optimizer than c's (DeepSpeed passes params as keyword arguments to the
   type's constructor, which raises TypeError), else 1. */
static int zero__key_applies(const zero_config *c, const zero__key *k) {
    if (strncmp(k->info.path, "scheduler.params.", 17) == 0) return zero__type_in(k->type_mask, (int)c->scheduler.type);
    if (strncmp(k->info.path, "optimizer.params.", 17) == 0) return zero__type_in(k->type_mask, (int)c->optimizer.type);
    return 1;
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

/* The known key of `section` nearest to name, if near enough to be a typo
   (of c's scheduler or optimizer, in their params). */
static const char *zero__suggest(const zero_config *cfg, const char *section, const char *name, size_t n) {
    size_t slen = strlen(section);
    const char *best = NULL;
    int best_d = (int)(1 + n / 4), i;
    if (best_d > 3) best_d = 3;
    for (i = 0; i < ZERO__NKEYS; i++) {
        const zero__key *k = &zero__keys[i];
        const char *cand[2];
        int c;
        if (zero__parent_len(k->info.path) != slen || strncmp(k->info.path, section, slen) != 0) continue;
        if (k->info.status == ZERO_KEY_DEPRECATED || !zero__key_applies(cfg, k)) continue;
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
    if (v->type == ZERO__JSON_STRING) { /* as JSON writes it: a NUL or other control byte escaped, not cut at */
        char tmp[64], esc[6 * sizeof tmp + 8];
        size_t n = zero__json_string(p->j, node, tmp, sizeof tmp), i, k = 0;
        for (i = 0; i < n && i < sizeof tmp - 1; i++) {
            unsigned char c = (unsigned char)tmp[i];
            if (c < 0x20 || c == 0x7f) k += (size_t)snprintf(esc + k, sizeof esc - k, "\\u%04x", c);
            else if (c == '"' || c == '\\') esc[k++] = '\\', esc[k++] = (char)c;
            else esc[k++] = (char)c;
        }
        esc[k] = 0;
        snprintf(buf, cap, "\"%s%s\"", esc, n >= sizeof tmp ? "..." : "");
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

/* A JSON number, or a string holding one (pydantic's lax mode accepts "5e8";
   "Infinity" and "NaN" as the bare words are). */
static zero_result zero__get_number(zero__parse *p, const char *key, int node, double *d, int64_t *i, int *is_int) {
    const zero__json_node *v = &p->j->nodes[node];
    if (v->type == ZERO__JSON_STRING) {
        char buf[64];
        zero__json inner;
        zero_result r;
        size_t n = zero__json_string(p->j, node, buf, sizeof buf);
        memset(&inner, 0, sizeof inner);
        if (n < sizeof buf && memchr(buf, 0, n) == NULL &&
            zero__json_parse_hjson(&inner, buf, n, NULL) == ZERO_OK && inner.nodes[0].type == ZERO__JSON_NUMBER) {
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

/* a bound as the message shows it: an integer key's ends of int64 by name, else the number */
static void zero__fmt_num(char *buf, size_t cap, double x, int integer) {
    if (integer && x >= 9e18) snprintf(buf, cap, "2^63-1");
    else if (integer && x <= -9e18) snprintf(buf, cap, "-2^63");
    else snprintf(buf, cap, "%.15g", x);
}

static zero_result zero__range_fail(zero__parse *p, const zero__key *k, const char *key, int node, double x) {
    char lo[32], hi[32], got[32];
    int integer = k->kind != ZERO__K_F64;
    zero__fmt_num(lo, sizeof lo, k->lo, integer);
    zero__fmt_num(hi, sizeof hi, k->hi, integer);
    zero__fmt_num(got, sizeof got, x, 0); /* (the value as written: 1e30 is not 2^63-1) */
    /* (an open upper end is left out, unless the value is past it) */
    if ((k->hi >= 1e300 || k->hi >= ZERO__BIG) && x < k->lo)
        return zero__pfail(p, ZERO_MSG_CONFIG_RANGE, key, node, "must be >= %s, got %s", lo, got);
    return zero__pfail(p, ZERO_MSG_CONFIG_RANGE, key, node, "must be between %s and %s, got %s", lo, hi, got);
}

/* Infinity, -Infinity, NaN (hjson's words) where key k wants a number. A
   count or size has none (DeepSpeed's pydantic int refuses them too); no
   float key means anything by NaN or -Infinity, and only gradient_clipping
   by Infinity: DeepSpeed then clips to an infinite norm, which never
   scales, the same as zero's 0 ("off"), stored instead so that the value
   stays finite everywhere after the parser. 1: *d replaced, 0: d is
   finite, < 0: refused (*r holds the error). */
static int zero__nonfinite(zero__parse *p, const zero__key *k, const char *key, int node, double *d, zero_result *r) {
    char pv[96];
    if (*d == *d && *d <= DBL_MAX && *d >= -DBL_MAX) return 0;
    zero__preview(p, node, pv, sizeof pv);
    if (k->offset == ZERO__OFF(gradient_clipping) && *d > 0) {
        zero__pwarn(p, ZERO_LOG_INFO, ZERO_MSG_JSON_HJSON, key, node,
                    "Infinity: no clipping (DeepSpeed clips to an infinite norm, which never scales); zero stores 0, "
                    "its \"off\"");
        *d = 0;
        return 1;
    }
    if (k->kind == ZERO__K_INT || k->kind == ZERO__K_I64)
        *r = zero__pfail(p, ZERO_MSG_CONFIG_RANGE, key, node,
                         "expected an integer, got %s: a count or size is finite (DeepSpeed refuses it too)", pv);
    else
        *r = zero__pfail(p, ZERO_MSG_CONFIG_RANGE, key, node,
                         "expected a finite number, got %s: it would carry %s into the arithmetic", pv,
                         *d != *d ? "NaN" : "an infinity");
    return -1;
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

/* optimizer.type names no optimizer of zero's (list: zero's, pv: the value
   as written): DeepSpeed's own that zero does not run yet are told apart from
   any other name (DeepSpeed looks those up in torch.optim). */
static zero_result zero__optimizer_type_fail(zero__parse *p, const char *key, int node, const char *s, size_t n,
                                             const char *list, const char *pv) {
    static const char *const ds_only[] = {"OneBitAdam", "ZeroOneAdam", "OneBitLamb", "MuAdam",
                                          "MuAdamW",    "MuSGD",       "Muon"};
    size_t q, c;
    for (q = 0; q < sizeof ds_only / sizeof ds_only[0]; q++) {
        int same = strlen(ds_only[q]) == n;
        for (c = 0; same && c < n; c++) same = tolower((unsigned char)s[c]) == tolower((unsigned char)ds_only[q][c]);
        if (same)
            return zero__pfail(p, ZERO_MSG_CONFIG_UNSUPPORTED, key, node,
                               "DeepSpeed's %s is not supported yet: zero runs %s (case-insensitive)", ds_only[q], list);
    }
    return zero__pfail(p, ZERO_MSG_CONFIG_ENUM, key, node,
                       "expected %s (case-insensitive), got %s: zero runs these; other torch.optim optimizers are "
                       "not supported",
                       list, pv);
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
        if (zero__nonfinite(p, k, key, node, &d, &r) < 0) return r;
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
        if (zero__nonfinite(p, k, key, node, &d, &r) < 0) return r;
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
            zero__preview(p, node, pv, sizeof pv);
            zero__enum_list(k->choices, list, sizeof list);
            if (k->offset == ZERO__OFF(optimizer.type)) return zero__optimizer_type_fail(p, key, node, s, n, list, pv);
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
            if (zero__nonfinite(p, k, ekey, e, &b[c], &r) < 0) return r;
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

/* Key k was set from the member whose key node is kn: remember where (zero_config_source). */
static void zero__place(zero__parse *p, const zero__key *k, int kn) {
    zero_config_source *src = &p->cfg->source;
    int i = (int)(k - zero__keys);
    if (zero__kind_size(k->kind) == 0 || i < 0 || i >= ZERO_CONFIG_MAX_KEYS) return; /* a section: no field */
    src->line[i] = p->j->nodes[kn].line;
    src->col[i] = p->j->nodes[kn].col;
    src->value_hash[i] = zero__key_hash(p->cfg, k);
}

/* Deprecated zero_optimization keys: remap, or refuse when the new key is there too. */
static zero_result zero__deprecated(zero__parse *p, const zero__key *k, const char *key, int obj, int node) {
    const char *name = zero__last_name(k->info.path);
    zero_optimization_config *z = &p->cfg->zero_optimization;
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

/* The params that optimizer type t takes, "lr, betas, ..." (the key table's order). */
static void zero__optimizer_params(int t, char *buf, size_t cap) {
    size_t len = 0;
    int i;
    buf[0] = 0;
    for (i = 0; i < ZERO__NKEYS && len < cap; i++) {
        const zero__key *k = &zero__keys[i];
        if (strncmp(k->info.path, "optimizer.params.", 17) != 0 || !zero__type_in(k->type_mask, t)) continue;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", k->info.path + 17);
    }
}

/* optimizer.params.NAME that the chosen optimizer does not take. */
static zero_result zero__not_optimizer_param(zero__parse *p, const char *key, int kn, const char *hint) {
    char tname[32], takes[256];
    int t = (int)p->cfg->optimizer.type;
    zero__enum_name(zero__key_by_path("optimizer.type")->choices, t, tname, sizeof tname);
    zero__optimizer_params(t, takes, sizeof takes);
    return zero__pfail(p, ZERO_MSG_CONFIG_UNKNOWN_KEY, key, kn,
                       "not a parameter of optimizer %s%s%s%s\nHINT: %s takes %s (DeepSpeed passes params to its "
                       "constructor: TypeError)",
                       tname, hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "", tname, takes);
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
    { /* messages show control bytes of a key as '?' (no terminal escapes from a config file) */
        size_t c, shown = n < sizeof name ? n : sizeof name - 1;
        for (c = 0; c < shown; c++)
            if ((unsigned char)name[c] < 0x20 || name[c] == 0x7f) name[c] = '?';
    }
    snprintf(key, sizeof key, "%s%s%s", section, section[0] ? "." : "", name);
    if (k && !zero__key_applies(p->cfg, k))
        k = NULL; /* a parameter of another scheduler or optimizer: DeepSpeed's constructor raises TypeError */

    if (!k) {
        const zero__key *sec = section[0] ? zero__key_by_path(section) : NULL;
        const char *hint = n < sizeof name ? zero__suggest(p->cfg, section, name, n) : NULL;
        int strict = sec && (sec->flags & ZERO__F_STRICT);
        /* the names HF's TrainingArguments gives these (the scheduler's own are DeepSpeed's) */
        static const char *const hf_name[][2] = {{"warmup_steps", "warmup_num_steps"}, {"num_warmup_steps", "warmup_num_steps"},
                                                 {"num_training_steps", "total_num_steps"}, {"max_steps", "total_num_steps"},
                                                 {"learning_rate", "warmup_max_lr"}};
        if (strcmp(section, "scheduler.params") == 0) {
            char tname[32];
            size_t h;
            for (h = 0; h < sizeof hf_name / sizeof hf_name[0]; h++)
                if (strlen(hf_name[h][0]) == n && !memcmp(name, hf_name[h][0], n) && zero__suggest(p->cfg, section, hf_name[h][1], strlen(hf_name[h][1])))
                    hint = hf_name[h][1];
            zero__enum_name(zero__key_by_path("scheduler.type")->choices, (int)p->cfg->scheduler.type, tname,
                            sizeof tname);
            return zero__pfail(p, ZERO_MSG_CONFIG_UNKNOWN_KEY, key, kn, "not a parameter of scheduler %s%s%s%s", tname,
                               hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
        }
        if (strcmp(section, "optimizer.params") == 0) return zero__not_optimizer_param(p, key, kn, hint);
        if (strict)
            return zero__pfail(p, ZERO_MSG_CONFIG_UNKNOWN_KEY, key, kn, "unknown key%s%s%s", hint ? " (did you mean \"" : "",
                               hint ? hint : "", hint ? "\"?)" : "");
        if (!section[0] && name[0] == '_') return ZERO_OK; /* the program's own top-level key */
        if (!section[0] && hint) /* a typo of a section would train without it: DeepSpeed ignores it silently */
            return zero__pfail(p, ZERO_MSG_CONFIG_UNKNOWN_KEY, key, kn,
                               "unknown key (did you mean \"%s\"?): as it is, zero would train without it\n"
                               "HINT: fix its name; a key of your own that resembles one of DeepSpeed's: start its name "
                               "with '_' (zero ignores top-level keys that do)",
                               hint);
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
            zero__place(p, k, kn);
            return zero__status(p, k, key, node);
        case ZERO__AUTO_DEFAULT:
            if (k->kind == ZERO__K_SECTION || k->kind == ZERO__K_ANY) return ZERO_OK;
            zero__key_copy(p->cfg, &p->defaults, k);
            zero__place(p, k, kn);
            if (!strcmp(k->info.path, "zero_optimization.stage")) /* the one whose default changes everything */
                zero__pwarn(p, ZERO_LOG_WARN, ZERO_MSG_CONFIG_AUTO_DEFAULT, key, node,
                            "\"auto\": DeepSpeed uses its default 0 here, no ZeRO sharding at all (the HF integration "
                            "does not fill it)\nHINT: set 1, 2 or 3");
            else
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
        if (k->flags & ZERO__F_BOOL) {
            int b;
            if ((r = zero__get_bool(p, key, node, &b)) != ZERO_OK || !b) return r;
            if (k->info.status == ZERO_KEY_REJECTED)
                return zero__pfail(p, ZERO_MSG_CONFIG_UNSUPPORTED, key, node, "true is not supported (only false)");
            return zero__status(p, k, key, node);
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
    zero__place(p, k, kn);
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

/* Did the text just parsed set key `path` (zero_config_source)? */
static int zero__parsed_key(const zero_config *c, const char *path) {
    const zero__key *k = zero__key_by_path(path);
    return k && c->source.line[k - zero__keys] > 0;
}

/* The optimizer the text names has defaults of its own where Adam's are in
   zero_config_default(): lr and eps not in the text, and still Adam's, take
   them (DeepSpeedCPUAdagrad: lr 1e-2, eps 1e-10). A type set in code keeps
   the values the code set. */
static void zero__optimizer_type_defaults(zero_config *c, const zero_config *adam) {
    if (!zero__parsed_key(c, "optimizer.type") || c->optimizer.type != ZERO_OPTIMIZER_ADAGRAD) return;
    if (!zero__parsed_key(c, "optimizer.params.lr") && c->optimizer.lr == adam->optimizer.lr) c->optimizer.lr = 1e-2;
    if (!zero__parsed_key(c, "optimizer.params.eps") && c->optimizer.eps == adam->optimizer.eps) c->optimizer.eps = 1e-10;
}

/* One info line per hjson form the text uses: how many, and the first one's place. */
static void zero__hjson_notes(const zero_config *cfg, const zero__json *j) {
    static const char *const what[ZERO__JSON_FORM_COUNT] = {
        "a trailing comma before ']' or '}'",
        "a line break standing for the comma between members or elements",
        "a single-quoted string",
        "the escape \\' inside double quotes",
        "Infinity, -Infinity or NaN as a number"};
    int f;
    for (f = 0; f < ZERO__JSON_FORM_COUNT; f++) {
        const zero__json_seen *s = &j->forms[f];
        if (!s->count) continue;
        char many[64] = "";
        if (s->count > 1) snprintf(many, sizeof many, " (%d in the text, the first here)", s->count);
        zero__log(&cfg->log, ZERO_LOG_INFO, ZERO_MSG_JSON_HJSON,
                  "hjson: %s%s, read as DeepSpeed's hjson reader reads it; strict JSON tools (json.load, jq) refuse it "
                  "(line %d:%d)",
                  what[f], many, s->line, s->col);
    }
}

/* zero_config_parse_json; file: what zero_config_source names ("" for text). */
static zero_result zero__config_parse(zero_config *cfg, const char *text, size_t len, const char *file, zero_error *err) {
    zero__json j;
    zero__parse p;
    zero_result r;
    memset(&cfg->source, 0, sizeof cfg->source); /* the places of an earlier text no longer hold */
    snprintf(cfg->source.file, sizeof cfg->source.file, "%s", file);
    memset(&j, 0, sizeof j);
    if ((r = zero__json_parse_hjson(&j, text ? text : "", len, err)) != ZERO_OK) return r;
    zero__hjson_notes(cfg, &j);
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
        if (zero__json_get(&j, 0, "gradient_clipping") >= 0) cfg->gradient_clipping_given = 1;
        else if (cfg->gradient_clipping_given == 0) cfg->gradient_clipping_given = -1;
        zero__optimizer_type_defaults(cfg, &p.defaults);
        if (p.not_yet_count)
            zero__log(&cfg->log, ZERO_LOG_WARN, ZERO_MSG_CONFIG_NOT_IMPLEMENTED,
                      "%d key%s accepted and checked, not acted on yet (docs/config.md has each key's status): %s%s",
                      p.not_yet_count, p.not_yet_count == 1 ? "" : "s", p.not_yet, p.not_yet_dropped ? ", ..." : "");
        zero__ok(err);
    }
    zero__json_free(&j);
    return r;
}

ZERO__DEF zero_result zero_config_parse_json(zero_config *cfg, const char *text, size_t len, zero_error *err) {
    if (!cfg || (!text && len))
        return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_config_parse_json", 0, 0, "%s is NULL", !cfg ? "cfg" : "text");
    return zero__config_parse(cfg, text, len, "", err);
}

#define ZERO__CONFIG_MAX_BYTES ((long)256 << 20)

ZERO__DEF zero_result zero_config_load(zero_config *cfg, const char *path, zero_error *err) {
    zero_error fe;
    uint64_t size = 0;
    char *buf;
    int fd, rd;
    zero_result r;
    if (!cfg || !path)
        return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_config_load", 0, 0, "%s is NULL", !cfg ? "cfg" : "path");
    if ((fd = zero__open_read(path, &size, ZERO_MSG_FILE_OPEN, &fe)) < 0) /* a FIFO or device: refused, never opened */
        return zero__fail(err, fe.item, path, 0, 0, "cannot open the config: %s", /* fe.msg is "path: why" */
                          strlen(fe.msg) > strlen(path) + 2 ? fe.msg + strlen(path) + 2 : fe.msg);
    if (size > (uint64_t)ZERO__CONFIG_MAX_BYTES) {
        close(fd);
        return zero__fail(err, ZERO_MSG_JSON_TOO_LARGE, path, 0, 0, "%llu bytes; a config may have at most %ld",
                          (unsigned long long)size, ZERO__CONFIG_MAX_BYTES);
    }
    buf = (char *)ZERO_MALLOC((size_t)size + 1);
    if (!buf) {
        close(fd);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, path, 0, 0, "cannot allocate %llu bytes", (unsigned long long)size + 1);
    }
    rd = zero__read_at(fd, 0, buf, (size_t)size);
    if (rd != 1) {
        int e = errno;
        ZERO_FREE(buf);
        close(fd);
        return zero__fail(err, ZERO_MSG_FILE_READ, path, 0, 0, "%s", rd < 0 ? strerror(e) : "short read (the file shrank)");
    }
    close(fd);
    r = zero__config_parse(cfg, buf, (size_t)size, path, err);
    ZERO_FREE(buf);
    if (r != ZERO_OK && err) { /* the file and the place first: "ds_config.json:7:17: key: why" */
        char text[sizeof err->msg], tail[48];
        size_t tl = 0, ml;
        snprintf(text, sizeof text, "%s", err->msg);
        ml = strlen(text);
        if (err->line > 0) { /* the place moves to the front */
            tl = (size_t)snprintf(tail, sizeof tail, " (line %d:%d)", err->line, err->column);
            if (tl < ml && strcmp(text + ml - tl, tail) == 0) text[ml - tl] = 0;
            snprintf(tail, sizeof tail, ":%d:%d", err->line, err->column);
        } else {
            tail[0] = 0;
        }
        {
            zero__json_out o;
            o.buf = err->msg;
            o.cap = sizeof err->msg;
            o.n = 0;
            zero__json_put(&o, path, strlen(path));
            zero__json_put(&o, tail, strlen(tail));
            zero__json_put(&o, ": ", 2);
            zero__json_put(&o, text, strlen(text));
        }
    }
    return r;
}

/* ---- >>config-resolve: zero_config_resolve ("auto", the batch triangle, checks) ---- */

/* Where the text set key `path` (zero_config_source), while the field still
   holds what was parsed there: 1 and *line, *col; 0 when no text set it. */
static int zero__config_place(const zero_config *c, const char *path, int *line, int *col) {
    const zero__key *k = path ? zero__key_by_path(path) : NULL;
    int i;
    if (!k || zero__kind_size(k->kind) == 0) return 0;
    i = (int)(k - zero__keys);
    if (c->source.line[i] <= 0 || c->source.col[i] <= 0 || c->source.value_hash[i] != zero__key_hash(c, k)) return 0;
    *line = c->source.line[i];
    *col = c->source.col[i];
    return 1;
}

/* A resolve message about key, placed at the key `at` of the text: "FILE:L:C:
   key: text" from a file, "key: text (line L:C)" from text in memory (before
   a HINT line, as the parser's messages read), "key: text" without a place. */
static void zero__placed(const zero_config *c, const char *key, const char *at, const char *text, char *out,
                         size_t cap, int *line, int *col) {
    zero__json_out o;
    const char *nl = strchr(text, '\n'), *file = c->source.file;
    size_t head = nl ? (size_t)(nl - text) : strlen(text);
    size_t flen = (const char *)memchr(file, 0, sizeof c->source.file) ? strlen(file) : 0;
    char pos[48];
    int placed;
    o.buf = out;
    o.cap = cap;
    o.n = 0;
    out[0] = 0;
    *line = *col = 0;
    placed = zero__config_place(c, at, line, col);
    if (placed && flen) {
        zero__json_put(&o, file, flen);
        snprintf(pos, sizeof pos, ":%d:%d: ", *line, *col);
        zero__json_put(&o, pos, strlen(pos));
    }
    zero__json_put(&o, key, strlen(key));
    zero__json_put(&o, ": ", 2);
    zero__json_put(&o, text, head);
    if (placed && !flen) {
        snprintf(pos, sizeof pos, " (line %d:%d)", *line, *col);
        zero__json_put(&o, pos, strlen(pos));
    }
    zero__json_put(&o, text + head, strlen(text + head));
}

/* zero__fail for resolve: the message about key, placed at key `at` (zero__placed). */
static zero_result zero__rfail(const zero_config *c, zero_error *err, zero_msg item, const char *key, const char *at,
                               const char *fmt, ...) ZERO__PRINTF(6, 7);
static zero_result zero__rfail(const zero_config *c, zero_error *err, zero_msg item, const char *key, const char *at,
                               const char *fmt, ...) {
    char text[1024], msg[1024];
    int line, col;
    zero_result r;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    zero__placed(c, key, at, text, msg, sizeof msg, &line, &col);
    r = zero__fail(err, item, NULL, 0, 0, "%s", msg);
    if (err) {
        snprintf(err->key, sizeof err->key, "%s", key);
        err->line = line;
        err->column = col;
    }
    return r;
}

/* A resolve warning, placed as zero__rfail places errors. */
static void zero__rwarn(const zero_config *c, zero_msg item, const char *key, const char *at, const char *fmt, ...)
    ZERO__PRINTF(5, 6);
static void zero__rwarn(const zero_config *c, zero_msg item, const char *key, const char *at, const char *fmt, ...) {
    char text[1024], msg[1024];
    int line, col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    zero__placed(c, key, at, text, msg, sizeof msg, &line, &col);
    zero__log(&c->log, ZERO_LOG_WARN, item, "%s", msg);
}

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
        return zero__rfail(c, err, ZERO_MSG_CONFIG_BATCH_MISSING, "train_batch_size",
                           c->train_micro_batch_size_per_gpu == ZERO_AUTO ? "train_micro_batch_size_per_gpu" : "train_batch_size",
                          "either train_batch_size or train_micro_batch_size_per_gpu must be given%s\n"
                          "HINT: set cfg.train_micro_batch_size_per_gpu (and cfg.gradient_accumulation_steps) before "
                          "zero_config_resolve; the HF Trainer fills them from per_device_train_batch_size",
                          any_auto ? " (they are \"auto\")" : "");
    }
    if (tbs <= 0 || mbs <= 0 || gas <= 0 || (double)mbs * gas * world != (double)tbs)
        return zero__rfail(c, err, ZERO_MSG_CONFIG_BATCH_MISMATCH, "train_batch_size", "train_batch_size",
                          "train_batch_size %lld != train_micro_batch_size_per_gpu %lld x gradient_accumulation_steps "
                          "%lld x world_size %d (each must be > 0, and the product must be exact)\nHINT: give two of "
                          "the three and zero derives the third for %d ranks (DeepSpeed does the same); or make "
                          "train_batch_size %lld",
                          (long long)tbs, (long long)mbs, (long long)gas, world, world,
                          (long long)(mbs > 0 && gas > 0 && (double)mbs * gas * world < 9e18 ? mbs * gas * world : 0));
    c->train_batch_size = tbs;
    c->train_micro_batch_size_per_gpu = mbs;
    c->gradient_accumulation_steps = gas;
    return ZERO_OK;
}

/* Every number against its key's range, as the parser checks JSON: a program
   may set any value in the struct. DeepSpeed's default (a None sentinel
   included) is always accepted. */
static zero_result zero__resolve_ranges(const zero_config *c, zero_error *err) {
    zero_config d = zero_config_default();
    size_t i;
    for (i = 0; i < sizeof zero__keys / sizeof zero__keys[0]; i++) {
        const zero__key *k = &zero__keys[i];
        const char *at = (const char *)c + k->offset, *def = (const char *)&d + k->offset;
        double v;
        if (k->offset == 0) continue;
        if (k->kind == ZERO__K_INT || k->kind == ZERO__K_BOOL) {
            int x, y;
            memcpy(&x, at, sizeof x), memcpy(&y, def, sizeof y);
            if (x == y) continue;
            v = x;
        } else if (k->kind == ZERO__K_I64) {
            int64_t x, y;
            memcpy(&x, at, sizeof x), memcpy(&y, def, sizeof y);
            if (x == y) continue;
            v = (double)x;
        } else if (k->kind == ZERO__K_F64) {
            double x, y;
            memcpy(&x, at, sizeof x), memcpy(&y, def, sizeof y);
            if (x == y) continue;
            v = x;
        } else {
            continue;
        }
        if (!(v >= k->lo && v <= k->hi))
            return zero__rfail(c, err, ZERO_MSG_CONFIG_RANGE, k->info.path, k->info.path,
                               "%s = %.17g is out of range: it must be between %.17g and %.17g (set in code: the JSON "
                               "parser refuses it too)\nHINT: set %s within that range, or leave it at DeepSpeed's "
                               "default %s",
                               k->field ? k->field : k->info.path, v, k->lo, k->hi, k->field ? k->field : k->info.path,
                               k->info.ds_default);
    }
    return ZERO_OK;
}

/* The optimizer's own rules, past the ranges of its keys: a type zero
   knows, and torch.optim.SGD's rule for nesterov. */
static zero_result zero__resolve_optimizer(const zero_config *c, zero_error *err) {
    const zero_optimizer_config *o = &c->optimizer;
    if ((unsigned)o->type >= ZERO_OPTIMIZER_COUNT)
        return zero__rfail(c, err, ZERO_MSG_CONFIG_ENUM, "optimizer.type", "optimizer.type",
                           "cfg.optimizer.type = %d is no zero_optimizer_type\nHINT: ZERO_OPTIMIZER_ADAM, _ADAMW, "
                           "_LION, _ADAGRAD, _SGD or _LAMB",
                           (int)o->type);
    if (o->type == ZERO_OPTIMIZER_SGD && o->nesterov == 1 && !(o->momentum > 0 && o->dampening == 0))
        return zero__rfail(c, err, ZERO_MSG_CONFIG_INCONSISTENT, "optimizer.params.nesterov", "optimizer.params.nesterov",
                           "SGD's nesterov needs momentum > 0 and dampening 0, got momentum %g, dampening %g (torch: "
                           "ValueError)\nHINT: set optimizer.params.momentum (0.9 is usual) and leave dampening at 0, "
                           "or set nesterov to false",
                           o->momentum, o->dampening);
    if (o->type == ZERO_OPTIMIZER_LAMB && o->min_coeff > o->max_coeff)
        return zero__rfail(c, err, ZERO_MSG_CONFIG_INCONSISTENT, "optimizer.params.min_coeff", "optimizer.params.min_coeff",
                           "Lamb's min_coeff %g is above its max_coeff %g: no trust ratio lies between them\nHINT: "
                           "set min_coeff <= max_coeff (DeepSpeed's defaults: 0.01 and 10)",
                           o->min_coeff, o->max_coeff);
    if (o->type == ZERO_OPTIMIZER_LAMB && c->fp16.enabled == 1 && c->fp16.loss_scale > 0)
        return zero__rfail(c, err, ZERO_MSG_CONFIG_INCONSISTENT, "fp16.loss_scale", "fp16.loss_scale",
                           "Lamb with fp16 needs dynamic loss scaling, got the static loss_scale %g (DeepSpeed asserts "
                           "the same)\nHINT: set fp16.loss_scale to 0",
                           c->fp16.loss_scale);
    return ZERO_OK;
}

static zero_result zero__resolve_check_offload(const zero_config *c, const zero_offload_config *o, const char *name,
                                               zero_error *err) {
    char at[80];
    snprintf(at, sizeof at, "%s.device", name);
    if (o->device == ZERO_OFFLOAD_NVME && o->nvme_path[0] == 0)
        return zero__rfail(c, err, ZERO_MSG_CONFIG_REQUIRED, name, at,
                          "device is \"nvme\" but nvme_path is not set\nHINT: set %s.nvme_path to a directory on the NVMe drive",
                          name);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_config_resolve(zero_config *cfg, int world_size, zero_error *err) {
    zero_config c;
    zero_optimization_config *z;
    zero_scheduler_config *s;
    const zero__key *k;
    int others, stage, half;
    zero_result r;
    if (!cfg) return zero__fail(err, ZERO_MSG_NULL_ARG, "zero_config_resolve", 0, 0, "cfg is NULL");
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
            return zero__rfail(&c, err, ZERO_MSG_CONFIG_AUTO_UNRESOLVED, k->info.path, k->info.path,
                              "is \"auto\" and cfg.hidden_size is not set%s\nHINT: set cfg.hidden_size to the model's "
                              "hidden size (zero then derives it as the HF integration does), or set %s",
                              others ? " (more keys are \"auto\" too)" : "", k->field);
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_AUTO_UNRESOLVED, k->info.path, k->info.path,
                          "is still \"auto\"%s\nHINT: set %s before zero_config_resolve (%s)",
                          others ? " (and more keys after it)" : "", k->field, k->info.note);
    }

    /* 3. DeepSpeed's None defaults */
    half = c.fp16.enabled == 1 ? ZERO_DTYPE_FP16 : c.bf16.enabled == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    if (z->overlap_comm == ZERO_UNSET) z->overlap_comm = stage == 3;
    if (c.communication_data_type == ZERO_DTYPE_DEFAULT) c.communication_data_type = (zero_dtype)half;
    /* zero accumulates in fp32 unless told otherwise (DeepSpeed 0.19: the model's dtype) */
    if (c.grad_accum_dtype == ZERO_DTYPE_DEFAULT) c.grad_accum_dtype = ZERO_DTYPE_FP32;
    if (s->type == ZERO_SCHEDULER_WARMUP_LR && s->warmup_max_lr == ZERO_UNSET) s->warmup_max_lr = c.optimizer.lr;
    if (s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR && s->warmup_max_lr == ZERO_UNSET) s->warmup_max_lr = 1e-3;
    if (s->type == ZERO_SCHEDULER_ONE_CYCLE) {
        if (s->cycle_second_step_size == ZERO_UNSET) s->cycle_second_step_size = s->cycle_first_step_size;
        if (s->cycle_second_stair_count == ZERO_UNSET) s->cycle_second_stair_count = s->cycle_first_stair_count;
    }

    /* 4. the whole config */
    if ((r = zero__resolve_ranges(&c, err)) != ZERO_OK || (r = zero__resolve_optimizer(&c, err)) != ZERO_OK) return r;
    if (c.fp16.enabled == 1 && c.bf16.enabled == 1)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_FP16_AND_BF16, "bf16.enabled", "bf16.enabled",
                           "fp16 and bf16 are both enabled; enable one\nHINT: set fp16.enabled or bf16.enabled to false "
                           "(bf16 needs no loss scaling; fp16 runs where bf16 does not)");
    if (c.fp16.enabled == 1 && c.fp16.loss_scale == 0) {
        if (c.fp16.loss_scale_window < 1)
            return zero__rfail(&c, err, ZERO_MSG_CONFIG_RANGE, "fp16.loss_scale_window", "fp16.loss_scale_window",
                               "must be > 0 with dynamic loss scaling, got %lld\nHINT: DeepSpeed's default is 1000; or "
                               "set fp16.loss_scale to a static scale",
                               (long long)c.fp16.loss_scale_window);
        if (!(c.fp16.min_loss_scale > 0))
            return zero__rfail(&c, err, ZERO_MSG_CONFIG_RANGE, "fp16.min_loss_scale", "fp16.min_loss_scale",
                               "must be > 0 with dynamic loss scaling, got %g\nHINT: DeepSpeed's default is 1",
                               c.fp16.min_loss_scale);
    }
    if ((s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR || s->type == ZERO_SCHEDULER_WARMUP_COSINE_LR) &&
        s->total_num_steps == ZERO_UNSET)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_REQUIRED, "scheduler.params.total_num_steps", "scheduler.type",
                          "is required by %s\nHINT: the optimizer steps of the whole run (HF: max_steps, or "
                          "num_train_epochs x the steps of an epoch); a program sets cfg.scheduler.total_num_steps "
                          "before zero_config_resolve",
                          s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR ? "WarmupDecayLR" : "WarmupCosineLR");
    if (s->type == ZERO_SCHEDULER_ONE_CYCLE && (s->cycle_min_lr == ZERO_UNSET || s->cycle_max_lr == ZERO_UNSET))
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_REQUIRED,
                           s->cycle_min_lr == ZERO_UNSET ? "scheduler.params.cycle_min_lr" : "scheduler.params.cycle_max_lr",
                           "scheduler.type",
                           "is required by OneCycle\nHINT: give scheduler.params.cycle_min_lr and cycle_max_lr, the "
                           "learning rates the cycle runs between");
    if (s->type == ZERO_SCHEDULER_WARMUP_DECAY_LR && s->total_num_steps < s->warmup_num_steps)
        zero__rwarn(&c, ZERO_MSG_CONFIG_SCHED_WARNING, "scheduler.params.total_num_steps",
                    "scheduler.params.total_num_steps", "%lld is less than warmup_num_steps %lld",
                    (long long)s->total_num_steps, (long long)s->warmup_num_steps);
    if ((r = zero__resolve_check_offload(&c, &z->offload_optimizer, "zero_optimization.offload_optimizer", err)) != ZERO_OK ||
        (r = zero__resolve_check_offload(&c, &z->offload_param, "zero_optimization.offload_param", err)) != ZERO_OK)
        return r;
    if (z->offload_optimizer.device != ZERO_OFFLOAD_NONE && stage == 0)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer",
                           "zero_optimization.offload_optimizer.device", "optimizer offload needs ZeRO, and the stage is 0"
                           "\nHINT: set zero_optimization.stage to 1, 2 or 3, or offload_optimizer.device to \"none\"");
    if (z->offload_optimizer.delayed_param_update == 1 && z->offload_optimizer.device != ZERO_OFFLOAD_CPU)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer.delayed_param_update",
                           "zero_optimization.offload_optimizer.delayed_param_update",
                           "needs offload_optimizer.device \"cpu\" (the delayed step runs on the CPU)\nHINT: set "
                           "offload_optimizer.device to \"cpu\", or delayed_param_update to false");
    if (z->offload_optimizer.delayed_param_update == 1 && stage == 3 && z->offload_param.device != ZERO_OFFLOAD_NONE)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer.delayed_param_update",
                           "zero_optimization.offload_optimizer.delayed_param_update",
                           "not with offload_param: the delayed CPU step would write the parameters the forward reads "
                           "from the host\nHINT: drop one of them: offload_param.device \"none\", or "
                           "delayed_param_update false");
    if (z->offload_optimizer.ratio < 1 && z->offload_optimizer.device == ZERO_OFFLOAD_NONE)
        zero__rwarn(&c, ZERO_MSG_CONFIG_NO_EFFECT, "zero_optimization.offload_optimizer.ratio",
                    "zero_optimization.offload_optimizer.ratio",
                    "%g without optimizer offload: ignored, as DeepSpeed does (the ratio splits only what is offloaded)",
                    z->offload_optimizer.ratio);
    else if (z->offload_optimizer.ratio < 1 && stage != 3)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.offload_optimizer.ratio",
                           "zero_optimization.offload_optimizer.ratio",
                           "a ratio below 1 (partial offload) needs stage 3, stage is %d\nHINT: set "
                           "zero_optimization.stage to 3, or the ratio to 1",
                           stage);
    if (z->offload_optimizer.ratio < 1 && z->offload_optimizer.device == ZERO_OFFLOAD_CPU && stage == 3 &&
        z->offload_optimizer.delayed_param_update == 1)
        zero__rwarn(&c, ZERO_MSG_CONFIG_NO_EFFECT, "zero_optimization.offload_optimizer.delayed_param_update",
                    "zero_optimization.offload_optimizer.delayed_param_update",
                    "true with offload_optimizer.ratio %g: partial offload steps the CPU's units after the norm, "
                    "without the delay (no stale step)", z->offload_optimizer.ratio);
    if (z->offload_optimizer.ratio < 1 && z->offload_optimizer.device == ZERO_OFFLOAD_NVME)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_UNSUPPORTED, "zero_optimization.offload_optimizer.ratio",
                           "zero_optimization.offload_optimizer.ratio",
                           "%g with offload_optimizer.device \"nvme\": zero's partial offload keeps the other units "
                           "in host memory, not in NVMe tiles\nHINT: set the device to \"cpu\", or the ratio to 1",
                           z->offload_optimizer.ratio);
    if (z->offload_optimizer.ratio < 1 && z->offload_optimizer.device == ZERO_OFFLOAD_CPU &&
        c.optimizer.type != ZERO_OPTIMIZER_ADAM && c.optimizer.type != ZERO_OPTIMIZER_ADAMW)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_UNSUPPORTED, "zero_optimization.offload_optimizer.ratio",
                           "optimizer.type",
                           "%g needs Adam or AdamW, as DeepSpeed's partial offload does (its CPU Adam beside the "
                           "device's AdamW)\nHINT: set the ratio to 1, or the optimizer to Adam / AdamW",
                           z->offload_optimizer.ratio);
    if (z->mics_shard_size > 0 && stage == 0)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.mics_shard_size",
                           "zero_optimization.mics_shard_size",
                           "%lld: hybrid sharding shards the optimizer state within groups; it needs stage 1, 2 or 3\n"
                           "HINT: set zero_optimization.stage, or mics_shard_size to -1 (off)",
                           (long long)z->mics_shard_size);
    if (z->mics_shard_size > 0 && (z->mics_shard_size > world_size || world_size % z->mics_shard_size != 0))
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT, "zero_optimization.mics_shard_size",
                           "zero_optimization.mics_shard_size",
                           "%lld does not divide the world size %d: the groups are mics_shard_size consecutive ranks, "
                           "world / mics_shard_size of them\nHINT: a divisor of %d (the ranks of a node, say)",
                           (long long)z->mics_shard_size, world_size, world_size);
    if (z->offload_param.device != ZERO_OFFLOAD_NONE && stage != 3)
        zero__rwarn(&c, ZERO_MSG_CONFIG_STAGE_IGNORED, "zero_optimization.offload_param",
                    "zero_optimization.offload_param.device", "parameter offload needs stage 3; ignored at stage %d", stage);
    if (c.gradient_allreduce_op == ZERO_REDUCE_SUM && stage == 3)
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT, "gradient_allreduce_op", "gradient_allreduce_op",
                           "\"sum\" is not allowed with stage 3 (as in DeepSpeed)\nHINT: use \"mean\", or stage 1 or 2");
    if (stage == 2 && z->reduce_scatter && (c.prescale_gradients || c.gradient_predivide_factor != 1.0))
        return zero__rfail(&c, err, ZERO_MSG_CONFIG_INCONSISTENT,
                           c.prescale_gradients ? "prescale_gradients" : "gradient_predivide_factor",
                           c.prescale_gradients ? "prescale_gradients" : "gradient_predivide_factor",
                           "stage 2 with reduce_scatter needs prescale_gradients false and gradient_predivide_factor 1 "
                           "(DeepSpeed asserts the same)\nHINT: drop prescale_gradients and gradient_predivide_factor "
                           "(neither is acted on yet in zero), or set zero_optimization.reduce_scatter false");

    c.world_size = world_size;
    c.resolved = 1;
    *cfg = c;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>config-tojson: zero_config_to_json ---- */

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
    /* The shortest of %.15g, %.16g, %.17g that reads back as d (0.9, not
       0.90000000000000002; %.17g always does). strtod reads in the locale
       snprintf wrote in; the text is then made locale-proof: a decimal comma
       goes back to '.'. */
    char tmp[40], *c;
    int prec;
    for (prec = 15; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d) break;
    }
    if (prec == 17) snprintf(tmp, sizeof tmp, "%.17g", d);
    for (c = tmp; *c; c++)
        if (*c == ',') *c = '.';
    zero__put(o, "%s", tmp);
}

static int zero__key_emitted(const zero_config *c, const zero__key *k) {
    if (k->info.status == ZERO_KEY_DEPRECATED || k->kind == ZERO__K_ANY) return 0;
    if (strncmp(k->info.path, "scheduler", 9) == 0 && c->scheduler.type == ZERO_SCHEDULER_NONE) return 0;
    if (!zero__key_applies(c, k)) return 0;
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
    if (buf && cap) buf[0] = 0;
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

/* ---- >>scaler: the loss scaler ----

   DeepSpeed has three fp16 scalers (runtime/fp16/loss_scaler.py and its users):
   the ZeRO optimizers use DynamicLossScaler (hysteresis, raise at the
   minimum), FP16_Optimizer / FP16_UnfusedOptimizer (no ZeRO) have their own
   _update_scale without hysteresis that clamps at the minimum. zero_rules
   picks between the two; both grow with the DeepSpeed >= 0.17.1 window rule. */

/* A config value still "auto": nothing can be computed from it. */
static int zero__open(double v) { return v == (double)ZERO_AUTO; }

ZERO__DEF void zero_loss_scaler_init(zero_loss_scaler *s, const zero_config *cfg) {
    const zero_fp16_config *f;
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->cur_scale = NAN;
    s->min_scale = NAN;
    s->scale_factor = 2.0; /* hard-coded in DeepSpeed, not a JSON key */
    s->last_overflow_iter = -1;
    s->valid = 0;
    if (!cfg) return;

    f = &cfg->fp16;
    s->zero_rules = cfg->zero_optimization.stage >= 1;
    s->scale_window = f->loss_scale_window;
    s->delayed_shift = f->hysteresis;
    s->cur_hysteresis = f->hysteresis;
    s->consecutive_hysteresis = f->consecutive_hysteresis != 0;

    /* fp16.enabled still "auto": nobody has said which precision this run uses. */
    if (f->enabled == ZERO_AUTO) return;

    if (!f->enabled) { /* bf16 or fp32: a static scaler with S = 1 */
        s->cur_scale = 1.0;
        s->min_scale = 1.0;
        s->valid = 1;
        return;
    }
    /* fp16: every value the scaler is made from must be known. */
    if (zero__open(f->loss_scale) || f->initial_scale_power == ZERO_AUTO ||
        f->loss_scale_window == ZERO_AUTO || f->hysteresis == ZERO_AUTO ||
        zero__open(f->min_loss_scale))
        return;
    if (f->loss_scale > 0) { /* static: S fixed (DeepSpeed's LossScaler) */
        s->cur_scale = f->loss_scale;
        s->min_scale = f->loss_scale;
        s->valid = 1;
        return;
    }
    s->dynamic = 1;
    s->cur_scale = ldexp(1.0, f->initial_scale_power);
    s->min_scale = f->min_loss_scale;
    s->valid = 1;
}

/* The scale after an overflow that shifts: max(S / 2, min). */
static double zero__scaler_halved(const zero_loss_scaler *s) {
    double next = s->cur_scale / s->scale_factor;
    return next > s->min_scale ? next : s->min_scale;
}

/* There is no zero_error parameter: the result code says everything and the
   engine that calls this once per optimizer step reports it (with the step
   number it knows). ZERO_ERR_LOSS_SCALE: an overflow arrived with S already
   at min_scale under ZeRO rules; DeepSpeed raises "Current loss scale already
   at minimum" before touching its state, so the scaler is left exactly as it
   was (cur_iter not advanced either). ZERO_ERR_STATE: made from a config with
   fp16.enabled (or another fp16 value) still "auto". */
ZERO__DEF zero_result zero_loss_scaler_update(zero_loss_scaler *s, int overflow) {
    if (!s) return zero__fail(NULL, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_loss_scaler_update: s is NULL");
    if (!s->valid)
        return zero__fail(NULL, ZERO_MSG_LOSS_SCALER_UNRESOLVED, "fp16.enabled", 0, 0,
                          "the loss scaler was made from an unresolved config");
    if (!s->dynamic) return ZERO_OK; /* static or bf16/fp32: LossScaler.update_scale is a no-op */

    if (overflow) {
        if (!s->zero_rules) {
            /* FP16_Optimizer: no hysteresis, never raises. */
            s->cur_scale = zero__scaler_halved(s);
        } else if (s->delayed_shift == 1 || s->cur_hysteresis == 1) {
            if (s->cur_scale == s->min_scale)
                return zero__fail(NULL, ZERO_MSG_LOSS_SCALE_AT_MIN, "fp16.min_loss_scale", 0, 0,
                                  "overflow at iteration %lld with the loss scale already at its minimum %g",
                                  (long long)s->cur_iter, s->min_scale);
            s->cur_scale = zero__scaler_halved(s);
        } else {
            s->cur_hysteresis--; /* scale kept, the step is still skipped */
        }
        s->last_overflow_iter = s->cur_iter;
    } else {
        /* The window rule of DeepSpeed >= 0.17.1: k clean steps since the last
           overflow; grow on the first clean step after each full window.
           (DeepSpeed 0.16 grew when (cur_iter - last_overflow_iter) % window == 0, one
           step earlier.) A window <= 0 (rejected by the config) never grows
           instead of dividing by zero. */
        int64_t k = s->cur_iter - s->last_overflow_iter - 1;
        if (s->zero_rules && s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
        if (k > 0 && s->scale_window > 0 && k % s->scale_window == 0) {
            if (s->zero_rules && !s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
            s->cur_scale *= s->scale_factor;
        }
    }
    s->cur_iter++;
    return ZERO_OK;
}

ZERO__DEF double zero_loss_scaler_scale(const zero_loss_scaler *s) {
    return (s && s->valid) ? s->cur_scale : NAN;
}

/* ---- >>schedules: learning-rate schedules ----

   Each f(it) is DeepSpeed's lr_schedules.py (DeepSpeed 0.19) written out; `it` is the
   scheduler's last_batch_iteration. Every scheduler's constructor writes
   f(-1) (OneCycle and LRRangeTest write their min values, which is the same
   lr), so it < 0 means "before the first scheduler step"; values below -1
   are treated like -1. A scheduler with a value it needs still "auto" (or a
   required value missing) gives NaN for every `it`, not only where that value
   enters, so an unresolved config cannot look right for the first steps. */

/* pi as Python's math.pi (M_PI is not C11). */
#define ZERO__SCHED_PI 3.14159265358979323846

/* W = max(2, warmup_num_steps): WarmupLR's constructor does this, and
   WarmupDecayLR (a subclass) inherits it. WarmupCosineLR: section 2.3 of the
   reference writes "it < W" with the W that 2.1 defines as max(2, ...), and
   DeepSpeed's WarmupCosineLR.__init__ indeed sets
   warmup_num_steps = max(2, warmup_num_steps) too, so all three use it (the
   reference's table 2.6, W = 10, is the same either way). With the raw value
   a log warmup of 1 step would compute ln(1)/ln(1) = NaN. */
static double zero__sched_warmup_w(const zero_scheduler_config *sc) {
    return sc->warmup_num_steps < 2 ? 2.0 : (double)sc->warmup_num_steps;
}

/* The warmup fraction at 0 <= it < W: ln(it+1)/ln(W) or it/W. DeepSpeed
   keeps 1/ln(W) and multiplies; so does this. An unknown type is log, as
   DeepSpeed falls back to log (the config rejects unknown names). */
static double zero__sched_warmup_frac(zero_warmup_type type, long it, double w) {
    if (type == ZERO_WARMUP_LINEAR) return (double)it / w;
    return (1.0 / log(w)) * log((double)it + 1.0);
}

/* WarmupLR (decay = 0) and WarmupDecayLR (decay = 1). */
static double zero__sched_warmup_lr(const zero_config *cfg, long it, int decay) {
    const zero_scheduler_config *sc = &cfg->scheduler;
    double min_lr = sc->warmup_min_lr, max_lr = sc->warmup_max_lr, w, gamma;
    /* warmup_max_lr None: WarmupLR (DeepSpeed 0.19) takes the optimizer's lr (DeepSpeed 0.16: 0.001);
       WarmupDecayLR's own signature still defaults to 0.001, in DeepSpeed 0.19 too. */
    if (max_lr == (double)ZERO_UNSET) max_lr = decay ? 1e-3 : cfg->optimizer.lr;
    if (zero__open(min_lr) || zero__open(max_lr) ||
        sc->warmup_num_steps == ZERO_AUTO)
        return NAN;
    if (decay && (sc->total_num_steps == ZERO_AUTO || sc->total_num_steps == ZERO_UNSET)) return NAN;
    if (it < 0) return min_lr;
    w = zero__sched_warmup_w(sc);
    if ((double)it < w) {
        gamma = zero__sched_warmup_frac(sc->warmup_type, it, w);
    } else if (!decay) {
        gamma = 1.0;
    } else {
        double t = (double)sc->total_num_steps, den = t - w;
        gamma = (t - (double)it) / (den > 1.0 ? den : 1.0);
        if (gamma < 0.0) gamma = 0.0; /* reaches min_lr at it = T and stays */
    }
    return min_lr + (max_lr - min_lr) * gamma;
}

/* WarmupCosineLR (DeepSpeed >= 0.19.3): a ratio of the optimizer's lr. */
static double zero__sched_cosine_lr(const zero_config *cfg, long it) {
    const zero_scheduler_config *sc = &cfg->scheduler;
    double lr = cfg->optimizer.lr, w, ratio;
    if (zero__open(lr) || sc->warmup_num_steps == ZERO_AUTO ||
        sc->total_num_steps == ZERO_AUTO || sc->total_num_steps == ZERO_UNSET)
        return NAN;
    if (it < 0) return 0.0;
    w = zero__sched_warmup_w(sc);
    if ((double)it < w) {
        double r = zero__sched_warmup_frac(sc->warmup_type, it, w);
        ratio = sc->warmup_min_ratio + r * (1.0 - sc->warmup_min_ratio);
    } else {
        /* p = (it - W + 1) / max(1, T - W), clamped to 1: the ratio stays at
           cos_min_ratio after T (DeepSpeed 0.16 let the cosine rise again). */
        double den = (double)sc->total_num_steps - w;
        double p = ((double)it - w + 1.0) / (den > 1.0 ? den : 1.0);
        if (p > 1.0) p = 1.0;
        ratio = sc->cos_min_ratio + (1.0 - sc->cos_min_ratio) * ((1.0 + cos(ZERO__SCHED_PI * p)) / 2.0);
        if (ratio < 0.0) ratio = 0.0;
    }
    return lr * ratio;
}

/* OneCycle's half-cycle lengths; 0 when they are unusable. */
static int zero__sched_cycle_sizes(const zero_scheduler_config *sc, double *first, double *second) {
    int64_t a = sc->cycle_first_step_size;
    int64_t b = sc->cycle_second_step_size == ZERO_UNSET ? a : sc->cycle_second_step_size;
    if (a <= 0 || b <= 0) return 0;
    *first = (double)a;
    *second = (double)b;
    return 1;
}

/* OneCycle's position s in [0, 1] at 0 <= it < first + second (0 at the
   start, 1 at the end of the rising half, back to 0 at the end).

   Stairs: the reference says only "stair counts > 0 quantise s to
   floor(position * stairs) / stairs". Our reading: in the half the step
   falls in, with n = that half's stair count (the second's defaults to the
   first's), s becomes floor(s * n) / n, so s takes the values 0, 1/n, ...,
   (n-1)/n, and 1 only at the peak itself. s * n is computed from the integer
   offset c into the cycle (c * n / first, or (total - c) * n / second)
   rather than from the rounded s, so an exact stair is never lost to a
   1e-16 rounding; DeepSpeed's current lr_schedules.py does the same. */
static double zero__sched_cycle_pos(const zero_scheduler_config *sc, long it, double first,
                                    double second) {
    double total = first + second, ratio = first / total;
    double b = (double)it + 1.0;
    double x = 1.0 + b / total - floor(1.0 + b / total);
    double s;
    int64_t stairs;
    if (x <= ratio) {
        s = x / ratio;
        stairs = sc->cycle_first_stair_count;
    } else {
        s = (x - 1.0) / (ratio - 1.0);
        stairs = sc->cycle_second_stair_count == ZERO_UNSET ? sc->cycle_first_stair_count
                                                             : sc->cycle_second_stair_count;
    }
    if (stairs > 0) {
        double n = (double)stairs, c = fmod(b, total), pos;
        if (c <= first)
            pos = c * n / first;
        else
            pos = (total - c) * n / second;
        s = floor(pos) / n;
    }
    return s;
}

/* OneCycle lr and beta1. */
static void zero__sched_one_cycle(const zero_config *cfg, long it, double *lr, double *beta1) {
    const zero_scheduler_config *sc = &cfg->scheduler;
    double first, second, total;
    double min_lr = sc->cycle_min_lr, max_lr = sc->cycle_max_lr;
    double min_mom = sc->cycle_min_mom, max_mom = sc->cycle_max_mom;
    *lr = *beta1 = NAN;
    if (!zero__sched_cycle_sizes(sc, &first, &second)) return;
    total = first + second;
    if (!zero__open(min_lr) && min_lr != (double)ZERO_UNSET && !zero__open(max_lr) &&
        max_lr != (double)ZERO_UNSET) {
        if (it < 0) /* the constructor's lr */
            *lr = min_lr;
        else if ((double)it < total)
            *lr = min_lr + (max_lr - min_lr) * zero__sched_cycle_pos(sc, it, first, second);
        else if (sc->decay_step_size == 0 || sc->decay_lr_rate == 0.0)
            *lr = min_lr;
        else
            *lr = min_lr / (1.0 + sc->decay_lr_rate *
                                      (((double)it - total + 1.0) / (double)sc->decay_step_size));
    }
    if (zero__open(min_mom) || zero__open(max_mom)) return;
    if (it < 0) /* the constructor's betas: (cycle_min_mom, 0.99), not f(-1) */
        *beta1 = min_mom;
    else if ((double)it < total)
        *beta1 = max_mom - (max_mom - min_mom) * zero__sched_cycle_pos(sc, it, first, second);
    else if (sc->decay_step_size == 0 || sc->decay_mom_rate == 0.0)
        *beta1 = max_mom;
    else
        *beta1 = max_mom * (1.0 + sc->decay_mom_rate *
                                      (((double)it - total + 1.0) / (double)sc->decay_step_size));
}

/* LRRangeTest: min_lr * (1 + step_rate * interval). */
static double zero__sched_range_test_lr(const zero_scheduler_config *sc, long it) {
    double interval;
    if (zero__open(sc->lr_range_test_min_lr) || sc->lr_range_test_step_size <= 0) return NAN;
    if (it < 0) return sc->lr_range_test_min_lr; /* the constructor's lr (= f(-1)) */
    interval = ((double)it + 1.0) / (double)sc->lr_range_test_step_size;
    if (sc->lr_range_test_staircase) interval = floor(interval);
    return sc->lr_range_test_min_lr * (1.0 + sc->lr_range_test_step_rate * interval);
}

ZERO__DEF double zero_lr_at(const zero_config *cfg, long it) {
    double lr, beta1;
    if (!cfg) return NAN;
    switch (cfg->scheduler.type) {
    case ZERO_SCHEDULER_NONE:
        return zero__open(cfg->optimizer.lr) ? NAN : cfg->optimizer.lr;
    case ZERO_SCHEDULER_WARMUP_LR: return zero__sched_warmup_lr(cfg, it, 0);
    case ZERO_SCHEDULER_WARMUP_DECAY_LR: return zero__sched_warmup_lr(cfg, it, 1);
    case ZERO_SCHEDULER_WARMUP_COSINE_LR: return zero__sched_cosine_lr(cfg, it);
    case ZERO_SCHEDULER_ONE_CYCLE:
        zero__sched_one_cycle(cfg, it, &lr, &beta1);
        return lr;
    case ZERO_SCHEDULER_LR_RANGE_TEST: return zero__sched_range_test_lr(&cfg->scheduler, it);
    default: return NAN;
    }
}

ZERO__DEF void zero_betas_at(const zero_config *cfg, long it, double *beta1, double *beta2) {
    double b1 = NAN, b2 = NAN;
    if (cfg && cfg->scheduler.type == ZERO_SCHEDULER_ONE_CYCLE && cfg->scheduler.cycle_momentum) {
        double lr;
        zero__sched_one_cycle(cfg, it, &lr, &b1);
        (void)lr;
        b2 = b1 == b1 ? 0.99 : NAN; /* DeepSpeed writes betas = (beta1, 0.99): beta2 is forced */
    } else if (cfg) {
        b1 = zero__open(cfg->optimizer.beta1) ? NAN : cfg->optimizer.beta1;
        b2 = zero__open(cfg->optimizer.beta2) ? NAN : cfg->optimizer.beta2;
    }
    if (beta1) *beta1 = b1;
    if (beta2) *beta2 = b2;
}

/* ---- >>estimator: the memory estimator ----

   Two answers for the same question ("how much memory do the model states
   take?"): DeepSpeed's, reproduced to the byte so a DeepSpeed user sees the
   numbers they know, and zero's own plan from the engine's buffers, which the
   engine allocates exactly (zero_memory_report shows both), so it is what a
   user should size a machine by. Model states only: activations, the CUDA context, library
   workspaces and the allocator's slack are not counted by either.

   Symbols. P parameters, L largest layer (DeepSpeed: a module's own
   parameters; <= 0 in the args: P/20), g GPUs per node, n nodes, G = g*n,
   f additional_buffer_factor (1.5), d compute-dtype bytes (2 for fp16/bf16,
   4 for fp32), B reduce_bucket_size (5e8 elements), M
   stage3_max_live_parameters (given; not given: derived, below), pf
   stage3_prefetch_bucket_size (5e7).
   All figures are bytes; GPU figures per GPU, CPU and NVMe figures per node
   (the sum over its g ranks), as DeepSpeed's are.

   DeepSpeed (estimate_zero2_model_states_mem_needs in stage_1_and_2.py,
   estimate_zero3_model_states_mem_needs in stage3.py, DeepSpeed 0.16-0.19;
   int() is Python's truncation, evaluation order kept so rounding matches):
     stage 0   no estimator in DeepSpeed: plain data parallel with mixed-
               precision Adam, gpu = int(16 P) (2 params + 2 grads + 12 fp32
               master and moments), cpu = 0.
     stage 1   DeepSpeed has no stage-1 estimator: the stage-2 formula.
     stage 2   offload:    gpu = int(2P),             cpu = int(P * max(4G, 16) * f)
               no offload: gpu = int(2P + int(18P/G)), cpu = int(P * 4 * g * f)
     stage 3   h = 1/n, gpu = int(4L + x), cpu = int(c):
               optimizer and params offloaded: x = 0,
                   c = P*18*h*f (zero_init) or P*max(4g, 18h)*f
               optimizer offloaded only:       x = int(2P/G),
                   c = P*16*h*f (zero_init) or P*max(4g, 16h)*f
               no optimizer offload (param offload ignored, as DeepSpeed
               does): x = int(18P/G), c = L*4*g*f (zero_init) or P*4*g*f
     DeepSpeed's estimators know only "offloaded or not": an NVMe offload
     gets the CPU-offload row (its GPU figure applies; its CPU figure is then
     an upper bound). zero_init matters only here: zero's engine always
     creates parameters partitioned (each rank's init callback writes only
     what it owns), so its plan never holds a full copy on the host.

   zero's plan. The planner cuts the parameters into units of at most B
   elements (a tensor larger than B is a unit alone; no tensor is larger
   than L), and every rank owns 1/G of every unit. Padding (each unit to a
   multiple of G * align elements) is ignored: under G * align elements per
   unit. With
       S = P / G                   elements of one rank's shard
       U = min(P, max(B, L))       elements of the largest unit
       T = U / G                   elements of one rank's chunk of a unit (a tile)
   per GPU:
     params      stage 0-2: P d (full copy);
                 stage 3:   pool d, plus S d for the own shard unless
                            offload_param moves it to the host or NVMe;
                            pool = min(P, max(M + pf, 2U)): the gathered units
                            that may be live at once (max_live_parameters plus
                            the prefetch look-ahead), at least the unit in use
                            and the next one, never more than the whole model;
                            M not given: what the engine derives for a
                            program whose layers are groups (zero_tensor.group;
                            the drop-in API's zero_tensors_of_kinds sets them):
                            the three largest groups and the largest once more,
                            each at most L, the prefetch inside it, and never
                            more than DeepSpeed's defaults give, so pool =
                            min(P, max(1e9 + 5e7, 2U), 4L).
     grads       stage 0-1: P d (full buffer, reduce-scattered in place);
                 stage 2-3: min(P, 2U) d (a ring of two unit buffers: one
                            filled by the backward while the other reduces)
                            + 4 S (owned-chunk fp32 accumulator over
                            micro-batches; it stays on the GPU with offload,
                            where the norm and overflow check run).
     optimizer   stage 0: 12 P (fp32 master + Adam m and v, full);
                 stage 1-3: 12 S, or 0 with offload_optimizer.
   per node (each of the g ranks holds the same, so g times a rank's):
     offload_optimizer cpu:  optimizer 12 S g (master, m, v; pinned),
                             grads 4 S g (pinned staging of the shard's
                             gradients for CPU Adam; fp32 at most), params
                             d S g (pinned staging of the updated
                             compute-dtype shard on its way back to the GPU;
                             not allocated with offload_param, whose shard or
                             tile buffers CPU Adam writes directly).
     offload_optimizer nvme: NVMe 12 S g; host keeps 4 tiles per rank
                             (offload_optimizer.buffer_count, DeepSpeed's 4,
                             each master | m | v of a chunk: optimizer
                             4 * 12 T g) and the same gradient and parameter
                             staging as cpu.
     offload_param cpu:      params d S g (the shard lives in pinned memory).
     offload_param nvme:     NVMe d S g; host keeps 5 swap-in tiles per rank
                             (offload_param.buffer_count, DeepSpeed's 5):
                             params 5 d T g.
   offload_optimizer needs stage >= 1 (stage 0 has no shard to offload),
   offload_param needs stage 3, as in DeepSpeed.

   Every term is nondecreasing in P, so zero_estimate_max_params bisects. */

#define ZERO__EST_PARAMS_MAX 1e15       /* sanity bound on P (keeps 18P exact in a double) */
#define ZERO__EST_OPT_TILES 4.0         /* offload_optimizer.buffer_count default */
#define ZERO__EST_PARAM_TILES 5.0       /* offload_param.buffer_count default */

/* The arguments with defaults applied, as doubles. */
typedef struct zero__est_in {
    double P, L, g, n, G, f, d, B, M, pf;
    double Gs; /* the GPUs each shard is cut for: G, or mics_shard_size */
    double sb; /* bytes a parameter of master and optimizer state (12 for Adam) */
    int stage, zero_init;
    zero_offload_device oo, op;
} zero__est_in;

/* Validate everything but params/largest_layer (zero_estimate_max_params
   supplies those) and apply the defaults. */
static zero_result zero__est_settings(const zero_estimate_args *a, zero__est_in *in,
                                      zero_error *err) {
    zero_msg e = ZERO_MSG_ESTIMATE_ARGS;
    memset(in, 0, sizeof *in);
    if (a->gpus_per_node < 1)
        return zero__fail(err, e, "gpus_per_node", 0, 0, "must be >= 1, got %d", a->gpus_per_node);
    if (a->nodes < 1) return zero__fail(err, e, "nodes", 0, 0, "must be >= 1, got %d", a->nodes);
    if (a->stage < 0 || a->stage > 3)
        return zero__fail(err, e, "stage", 0, 0, "must be 0, 1, 2 or 3, got %d", a->stage);
    if ((unsigned)a->offload_optimizer >= (unsigned)ZERO_OFFLOAD_COUNT)
        return zero__fail(err, e, "offload_optimizer", 0, 0,
                          "must be ZERO_OFFLOAD_NONE, _CPU or _NVME, got %d",
                          (int)a->offload_optimizer);
    if ((unsigned)a->offload_param >= (unsigned)ZERO_OFFLOAD_COUNT)
        return zero__fail(err, e, "offload_param", 0, 0,
                          "must be ZERO_OFFLOAD_NONE, _CPU or _NVME, got %d",
                          (int)a->offload_param);
    if (a->offload_optimizer != ZERO_OFFLOAD_NONE && a->stage == 0)
        return zero__fail(err, e, "offload_optimizer", 0, 0,
                          "needs stage 1, 2 or 3, got stage 0 (stage 0 keeps the whole optimizer "
                          "state on every GPU; there is no shard to offload)");
    if (a->offload_param != ZERO_OFFLOAD_NONE && a->stage != 3)
        return zero__fail(err, e, "offload_param", 0, 0,
                          "needs stage 3, got stage %d (only stage 3 partitions parameters)",
                          a->stage);
    if (!(fabs(a->additional_buffer_factor) <= DBL_MAX)) /* NaN, +-inf */
        return zero__fail(err, e, "additional_buffer_factor", 0, 0, "must be finite, got %g",
                          a->additional_buffer_factor);
    if ((unsigned)a->compute_dtype >= (unsigned)ZERO_DTYPE_COUNT)
        return zero__fail(err, e, "compute_dtype", 0, 0,
                          "must be ZERO_DTYPE_DEFAULT, _FP32, _FP16 or _BF16, got %d",
                          (int)a->compute_dtype);
    in->g = (double)a->gpus_per_node;
    in->n = (double)a->nodes;
    in->G = in->g * in->n;
    if (a->mics_shard_size > 0 && (a->stage == 0 || (double)a->mics_shard_size > in->G ||
                                   fmod(in->G, (double)a->mics_shard_size) != 0))
        return zero__fail(err, e, "mics_shard_size", 0, 0,
                          "%d must divide the GPU count (%g) at stage 1, 2 or 3 (stage %d)", a->mics_shard_size, in->G,
                          a->stage);
    in->Gs = a->mics_shard_size > 0 ? (double)a->mics_shard_size : in->G;
    in->stage = a->stage;
    in->oo = a->offload_optimizer;
    in->op = a->offload_param;
    in->zero_init = a->zero_init != 0;
    in->f = a->additional_buffer_factor > 0 ? a->additional_buffer_factor : 1.5;
    in->d = a->compute_dtype == ZERO_DTYPE_FP32 ? 4.0 : 2.0;
    in->B = a->reduce_bucket_size > 0 ? (double)a->reduce_bucket_size : 5e8;
    in->M = a->stage3_max_live_parameters > 0 ? (double)a->stage3_max_live_parameters : -1; /* -1: derived */
    in->pf = a->stage3_prefetch_bucket_size >= 0 ? (double)a->stage3_prefetch_bucket_size : 5e7;
    if ((unsigned)a->optimizer >= (unsigned)ZERO_OPTIMIZER_COUNT)
        return zero__fail(err, e, "optimizer", 0, 0, "must be a zero_optimizer_type, got %d", (int)a->optimizer);
    if (!(a->momentum >= 0) || a->momentum > DBL_MAX)
        return zero__fail(err, e, "momentum", 0, 0, "must be >= 0 and finite, got %g", a->momentum);
    {
        int mask = zero_optimizer_state_mask(a->optimizer, a->momentum);
        in->sb = 4.0 + 4.0 * ((mask & 1) + ((mask >> 1) & 1));
    }
    return ZERO_OK;
}

static zero_result zero__est_check_params(double P, zero_error *err) {
    if (!(P > 0) || P > DBL_MAX) /* also NaN */
        return zero__fail(err, ZERO_MSG_ESTIMATE_ARGS, "params", 0, 0,
                          "must be > 0 and finite, got %g", P);
    if (P > ZERO__EST_PARAMS_MAX)
        return zero__fail(err, ZERO_MSG_ESTIMATE_ARGS, "params", 0, 0,
                          "must be <= %g, got %g", ZERO__EST_PARAMS_MAX, P);
    return ZERO_OK;
}

static double zero__est_max(double x, double y) { return x > y ? x : y; }
static double zero__est_min(double x, double y) { return x < y ? x : y; }

/* DeepSpeed's estimators, term for term (header comment). */
static void zero__est_deepspeed(const zero__est_in *in, double *gpu, double *cpu) {
    double P = in->P, L = in->L, g = in->g, G = in->G, f = in->f;
    int offload = in->oo != ZERO_OFFLOAD_NONE, offload_params = in->op != ZERO_OFFLOAD_NONE;
    double gpu_mem, cpu_mem;
    if (in->stage == 0) {
        gpu_mem = 16 * P;
        cpu_mem = 0;
    } else if (in->stage <= 2) {
        if (offload) {
            gpu_mem = 2 * P;
            cpu_mem = P * zero__est_max(4 * G, 16) * f;
        } else {
            gpu_mem = 2 * P + trunc(18 * P / G);
            cpu_mem = P * 4 * g * f;
        }
    } else {
        double h = 1.0 / in->n, largest_layer_memory = 4 * L;
        if (offload && offload_params) {
            gpu_mem = largest_layer_memory;
            cpu_mem = in->zero_init ? P * 18 * h * f : P * zero__est_max(4 * g, 18 * h) * f;
        } else if (offload) {
            gpu_mem = largest_layer_memory + trunc(2 * P / G);
            cpu_mem = in->zero_init ? P * 16 * h * f : P * zero__est_max(4 * g, 16 * h) * f;
        } else {
            gpu_mem = largest_layer_memory + trunc(18 * P / G);
            cpu_mem = in->zero_init ? L * 4 * g * f : P * 4 * g * f;
        }
    }
    *gpu = trunc(gpu_mem);
    *cpu = trunc(cpu_mem);
}

/* zero's plan (header comment); fills every field but the ds_* ones. */
static void zero__est_plan(const zero__est_in *in, zero_memory_estimate *o) {
    double P = in->P, d = in->d, g = in->g;
    double S = P / in->Gs;
    double U = zero__est_min(P, zero__est_max(in->B, in->L));
    double T = U / in->Gs;
    o->gpu_params_bytes = o->gpu_grads_bytes = o->gpu_optimizer_bytes = 0;
    o->cpu_params_bytes = o->cpu_grads_bytes = o->cpu_optimizer_bytes = 0;
    o->nvme_bytes = 0;

    if (in->stage < 3) {
        o->gpu_params_bytes = P * d;
    } else {
        double pool = zero__est_min(P, zero__est_max(in->M < 0 ? 1e9 + 5e7 : in->M + in->pf, 2 * U));
        if (in->M < 0) pool = zero__est_min(pool, 4 * in->L);
        o->gpu_params_bytes = pool * d + (in->op == ZERO_OFFLOAD_NONE ? S * d : 0);
    }
    if (in->stage < 2)
        o->gpu_grads_bytes = P * d;
    else /* the ring of two units; the owned fp32 accumulator, or with the optimizer offloaded (where the
            chunks accumulate in the host staging) one unit's chunk of staging */
        o->gpu_grads_bytes = zero__est_min(P, 2 * U) * d + 4 * (in->oo == ZERO_OFFLOAD_NONE ? S : T);
    if (in->stage == 0)
        o->gpu_optimizer_bytes = in->sb * P;
    else if (in->oo == ZERO_OFFLOAD_NONE)
        o->gpu_optimizer_bytes = in->sb * S;

    if (in->oo != ZERO_OFFLOAD_NONE) {
        /* the gradient staging of the shard, and the parameter staging unless
           offload_param keeps the shard (or its tiles) on the host */
        o->cpu_grads_bytes = 4 * S * g;
        if (in->op == ZERO_OFFLOAD_NONE) o->cpu_params_bytes += d * S * g;
        if (in->oo == ZERO_OFFLOAD_CPU) {
            o->cpu_optimizer_bytes = in->sb * S * g;
        } else {
            o->nvme_bytes += 12 * S * g;
            o->cpu_optimizer_bytes = ZERO__EST_OPT_TILES * 12 * T * g; /* tiles of master | m | v */
        }
    }
    if (in->op == ZERO_OFFLOAD_CPU) {
        o->cpu_params_bytes += d * S * g;
    } else if (in->op == ZERO_OFFLOAD_NVME) {
        o->nvme_bytes += d * S * g;
        o->cpu_params_bytes += ZERO__EST_PARAM_TILES * d * T * g;
    }
    o->gpu_total_bytes = o->gpu_params_bytes + o->gpu_grads_bytes + o->gpu_optimizer_bytes;
    o->cpu_total_bytes = o->cpu_params_bytes + o->cpu_grads_bytes + o->cpu_optimizer_bytes;
}

ZERO__DEF zero_result zero_estimate_memory(const zero_estimate_args *a, zero_memory_estimate *out,
                                           zero_error *err) {
    zero__est_in in;
    zero_result r;
    if (out) memset(out, 0, sizeof *out);
    if (!a)
        return zero__null_arg(err, "zero_estimate_memory", "a");
    if (!out)
        return zero__null_arg(err, "zero_estimate_memory", "out");
    if ((r = zero__est_check_params(a->params, err)) != ZERO_OK) return r;
    if (!(fabs(a->largest_layer) <= DBL_MAX) || a->largest_layer > a->params)
        return zero__fail(err, ZERO_MSG_ESTIMATE_ARGS, "largest_layer", 0, 0,
                          "must be <= params (%g) (or <= 0 for params / 20), got %g", a->params,
                          a->largest_layer);
    if ((r = zero__est_settings(a, &in, err)) != ZERO_OK) return r;
    in.P = a->params;
    in.L = a->largest_layer > 0 ? a->largest_layer : a->params / 20;
    zero__est_deepspeed(&in, &out->ds_gpu_bytes, &out->ds_cpu_bytes);
    zero__est_plan(&in, out);
    zero__ok(err);
    return ZERO_OK;
}

/* Does zero's plan for P parameters fit the budgets? */
static int zero__est_fits(zero__est_in *in, double P, double L_abs, double gpu_bytes,
                          double cpu_bytes, double nvme_bytes) {
    zero_memory_estimate m;
    in->P = P;
    in->L = L_abs > 0 ? L_abs : P / 20;
    zero__est_plan(in, &m);
    return m.gpu_total_bytes <= gpu_bytes && m.cpu_total_bytes <= cpu_bytes &&
           m.nvme_bytes <= (nvme_bytes > 0 ? nvme_bytes : 0);
}

ZERO__DEF zero_result zero_estimate_max_params(const zero_estimate_args *a, double gpu_bytes,
                                               double cpu_bytes, double nvme_bytes,
                                               double *max_params, zero_error *err) {
    zero__est_in in;
    zero_result r;
    double lo, hi, L_abs;
    zero_msg e = ZERO_MSG_ESTIMATE_ARGS;
    if (max_params) *max_params = 0;
    if (!a)
        return zero__null_arg(err, "zero_estimate_max_params", "a");
    if (!max_params)
        return zero__null_arg(err, "zero_estimate_max_params", "max_params");
    if (!(gpu_bytes > 0) || gpu_bytes > DBL_MAX)
        return zero__fail(err, e, "gpu_bytes", 0, 0, "must be > 0 and finite, got %g", gpu_bytes);
    if (!(cpu_bytes >= 0) || cpu_bytes > DBL_MAX)
        return zero__fail(err, e, "cpu_bytes", 0, 0, "must be >= 0 and finite, got %g", cpu_bytes);
    if (!(fabs(nvme_bytes) <= DBL_MAX))
        return zero__fail(err, e, "nvme_bytes", 0, 0, "must be finite (<= 0: no NVMe), got %g",
                          nvme_bytes);
    if (!(fabs(a->largest_layer) <= DBL_MAX) || a->largest_layer > ZERO__EST_PARAMS_MAX)
        return zero__fail(err, e, "largest_layer", 0, 0,
                          "must be <= %g (or <= 0 for params / 20), got %g", ZERO__EST_PARAMS_MAX,
                          a->largest_layer);
    if ((r = zero__est_settings(a, &in, err)) != ZERO_OK) return r;
    zero__ok(err);

    /* The smallest model: one parameter, or one layer when L is absolute. */
    L_abs = a->largest_layer > 0 ? a->largest_layer : 0;
    lo = L_abs > 1 ? L_abs : 1;
    if (!zero__est_fits(&in, lo, L_abs, gpu_bytes, cpu_bytes, nvme_bytes)) return ZERO_OK;
    hi = lo;
    for (;;) { /* grow until it no longer fits, or the sanity bound */
        hi = zero__est_min(2 * hi, ZERO__EST_PARAMS_MAX);
        if (!zero__est_fits(&in, hi, L_abs, gpu_bytes, cpu_bytes, nvme_bytes)) break;
        lo = hi;
        if (hi >= ZERO__EST_PARAMS_MAX) {
            *max_params = hi;
            return ZERO_OK;
        }
    }
    /* lo fits, hi does not; 1e-7 keeps the answer well inside 1e-6 */
    while (hi - lo > 1e-7 * lo) {
        double mid = 0.5 * (lo + hi);
        if (zero__est_fits(&in, mid, L_abs, gpu_bytes, cpu_bytes, nvme_bytes))
            lo = mid;
        else
            hi = mid;
    }
    *max_params = lo;
    return ZERO_OK;
}

/* ---- >>fp16: fp16 and bf16 conversions ---- */

/* The host backend's fifth dtype: exact doubles for the engine's statistics (norms,
   overflow flags, counters) in all_reduce and every other collective. One past the
   public enum so that no public value changes; only the host backend accepts it (the
   CUDA backend maps it to ncclFloat64). zero_dtype_size gives 8, zero_dtype_name
   "fp64". */
#define ZERO__DTYPE_F64 ZERO_DTYPE_COUNT

/* Integer bit work rather than float arithmetic, so the result never depends on the
   FPU's rounding mode or on flush-to-zero settings of the calling thread. */
ZERO__DEF zero_f16 zero_f32_to_f16(float x) {
    uint32_t u, a, sign;
    memcpy(&u, &x, sizeof u);
    sign = (u >> 16) & 0x8000u;
    a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) /* NaN: quiet, keep the sign and the top of the payload */
        return (zero_f16)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u) /* >= 65520, half-way past 65504, ties to the even 65536: inf */
        return (zero_f16)(sign | 0x7C00u);
    if (a >= 0x38800000u) { /* a binary16 normal: the carry may bump the exponent */
        a += 0x0FFFu + ((a >> 13) & 1u);
        return (zero_f16)(sign | ((a - 0x38000000u) >> 13));
    }
    if (a <= 0x33000000u) /* <= 2^-25: half the smallest subnormal ties to 0 */
        return (zero_f16)sign;
    {
        /* a subnormal result: value * 2^24 = mant * 2^(e - 126), shift in [14, 24] */
        uint32_t e = a >> 23, mant = (a & 0x7FFFFFu) | 0x800000u, shift = 126u - e;
        uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (m & 1u))) m++;
        return (zero_f16)(sign | m);
    }
}

ZERO__DEF float zero_f16_to_f32(zero_f16 h) {
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16, e = ((uint32_t)h >> 10) & 0x1Fu;
    uint32_t m = (uint32_t)h & 0x3FFu, u;
    float f;
    if (e == 0x1Fu) {
        u = sign | 0x7F800000u | (m << 13);
    } else if (e != 0) {
        u = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        u = sign;
    } else { /* subnormal: normalise, every one is a float normal */
        e = 113u;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        u = sign | (e << 23) | ((m & 0x3FFu) << 13);
    }
    memcpy(&f, &u, sizeof f);
    return f;
}

ZERO__DEF zero_bf16 zero_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: the bias below could carry it into inf */
        return (zero_bf16)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (zero_bf16)(u >> 16);
}

ZERO__DEF float zero_bf16_to_f32(zero_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

ZERO__DEF size_t zero_dtype_size(zero_dtype dtype) {
    switch (dtype) {
    case ZERO_DTYPE_DEFAULT:
    case ZERO_DTYPE_FP32: return 4;
    case ZERO_DTYPE_FP16:
    case ZERO_DTYPE_BF16: return 2;
    case ZERO__DTYPE_F64: return 8;
    default: return 0;
    }
}

ZERO__DEF const char *zero_dtype_name(zero_dtype dtype) {
    switch (dtype) {
    case ZERO_DTYPE_DEFAULT: return "default";
    case ZERO_DTYPE_FP32: return "fp32";
    case ZERO_DTYPE_FP16: return "fp16";
    case ZERO_DTYPE_BF16: return "bf16";
    case ZERO__DTYPE_F64: return "fp64";
    default: return "unknown dtype";
    }
}

/* fp32 to and from a dtype on the host (fp32: a copy) */
static void zero__host_cast(void *dst, zero_dtype dt, const float *src, int64_t n) {
    int64_t i;
    if (dt == ZERO_DTYPE_FP16)
        for (i = 0; i < n; i++) ((zero_f16 *)dst)[i] = zero_f32_to_f16(src[i]);
    else if (dt == ZERO_DTYPE_BF16)
        for (i = 0; i < n; i++) ((zero_bf16 *)dst)[i] = zero_f32_to_bf16(src[i]);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

static void zero__host_uncast(float *dst, zero_dtype dt, const void *src, int64_t n) {
    int64_t i;
    if (dt == ZERO_DTYPE_FP16)
        for (i = 0; i < n; i++) dst[i] = zero_f16_to_f32(((const zero_f16 *)src)[i]);
    else if (dt == ZERO_DTYPE_BF16)
        for (i = 0; i < n; i++) dst[i] = zero_bf16_to_f32(((const zero_bf16 *)src)[i]);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

/* ---- >>safetensors: the safetensors reader (files, index, ranged reads, zero_safetensors_bind) ----

   A file: 8 bytes little-endian N, N bytes of JSON {name: {dtype, shape,
   data_offsets: [begin, end]}, "__metadata__": {string: string}}, then the
   data; offsets are relative to the data's start. As the reference
   implementation, the data must be indexed whole: sorted by begin, each
   tensor starts where the last ended and the last ends at the file's end. */

#ifndef ZERO_ST_MAX_HEADER
#define ZERO_ST_MAX_HEADER ((uint64_t)100 << 20) /* bytes of JSON header (the reference's limit) */
#endif

static int64_t zero__st_min(int64_t a, int64_t b) { return a < b ? a : b; }

typedef struct zero__st_file {
    char *path;
    int fd;
    uint64_t size, data; /* file bytes; where the data starts */
} zero__st_file;

typedef struct zero__st_bind {
    zero_safetensors *st;
    int src, transpose;
    struct zero__st_bind *prev; /* (element 0 of a binding's array) the binding made before it: every one stays
                                   valid until zero_safetensors_close, whose tensors may still be created from */
} zero__st_bind;

typedef struct zero__st_failure {
    pthread_t thread;
    zero_error err;
} zero__st_failure;

struct zero_safetensors {
    zero__st_file *files;
    int n_files;
    zero_safetensors_tensor *t; /* in name order */
    int n, cap;
    char **meta; /* key, value, key, value ... */
    int n_meta;
    zero__st_bind *bind;
    pthread_mutex_t lock;
    /* reads by init callbacks that failed, one per thread (ranks that are
       threads share st): zero_engine_create takes its own thread's */
    zero__st_failure *failed;
    int n_failed;
};

static const struct { const char *name; int size; } zero__st_dtypes[] = {
    {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
    {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8}};

static int zero__st_dtype_size(const char *d) {
    size_t i;
    for (i = 0; i < sizeof zero__st_dtypes / sizeof zero__st_dtypes[0]; i++)
        if (!strcmp(d, zero__st_dtypes[i].name)) return zero__st_dtypes[i].size;
    return 0;
}

static char *zero__st_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = (char *)ZERO_MALLOC(n);
    if (c) memcpy(c, s, n);
    return c;
}

/* a JSON string node decoded into a new NUL-terminated string; NULL with why set when it holds a NUL */
static char *zero__st_jstr(const zero__json *j, int node) {
    size_t n = zero__json_string(j, node, NULL, 0);
    char *s = (char *)ZERO_MALLOC(n + 1);
    if (!s) return NULL;
    zero__json_string(j, node, s, n + 1);
    if (strlen(s) != n) {
        ZERO_FREE(s);
        return NULL;
    }
    return s;
}

static int zero__st_by_begin(const void *a, const void *b) {
    const zero_safetensors_tensor *x = *(const zero_safetensors_tensor *const *)a, *y = *(const zero_safetensors_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : (x->bytes < y->bytes ? -1 : x->bytes > y->bytes);
}

/* One tensor's entry: dtype, shape, data_offsets checked against data_bytes. */
static zero_result zero__st_entry(const zero__json *j, int v, const char *path, const char *name, uint64_t data_bytes,
                                  zero_safetensors_tensor *t, zero_error *err) {
    int d = -1, s = -1, o = -1, c, k = 0, es;
    char dt[16];
    uint64_t b[2], numel = 1, nz = 1;
    if (j->nodes[v].type != ZERO__JSON_OBJECT)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': not an object", path, name);
    for (c = j->nodes[v].first; c >= 0; c = j->nodes[c].next) {
        int key = j->nodes[c].key;
        if (zero__json_string_eq(j, key, "dtype", 5)) d = c;
        else if (zero__json_string_eq(j, key, "shape", 5)) s = c;
        else if (zero__json_string_eq(j, key, "data_offsets", 12)) o = c;
    }
    if (d < 0 || s < 0 || o < 0)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': no %s", path, name,
                          d < 0 ? "dtype" : s < 0 ? "shape" : "data_offsets");
    if (j->nodes[d].type != ZERO__JSON_STRING || zero__json_string(j, d, dt, sizeof dt) >= sizeof dt ||
        (es = zero__st_dtype_size(dt)) == 0)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': dtype is not one safetensors defines",
                          path, name);
    if (j->nodes[s].type != ZERO__JSON_ARRAY || j->nodes[s].count > ZERO_MAX_DIMS)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': shape is not an array of at most %d "
                          "dimensions", path, name, ZERO_MAX_DIMS);
    memset(t, 0, sizeof *t);
    for (c = j->nodes[s].first; c >= 0; c = j->nodes[c].next, k++) {
        const zero__json_node *x = &j->nodes[c];
        if (x->type != ZERO__JSON_NUMBER || !x->is_integer || x->integer < 0)
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': shape[%d] is not a "
                              "non-negative integer", path, name, k);
        /* every extent and the product of the non-zero ones bounded, whatever the order: [0, 2^62] is as
           wrong as [2^62, 0] */
        if (x->integer > 0 && nz > ((uint64_t)1 << 60) / (uint64_t)x->integer)
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': the shape's product overflows "
                              "(shape[%d] = %lld; 2^60 elements at most)", path, name, k, (long long)x->integer);
        if (x->integer > 0) nz *= (uint64_t)x->integer;
        numel *= (uint64_t)x->integer;
        t->shape[k] = x->integer;
    }
    t->ndim = k;
    if (j->nodes[o].type != ZERO__JSON_ARRAY || j->nodes[o].count != 2)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': data_offsets is not [begin, end]",
                          path, name);
    for (k = 0, c = j->nodes[o].first; c >= 0; c = j->nodes[c].next, k++) {
        const zero__json_node *x = &j->nodes[c];
        if (x->type != ZERO__JSON_NUMBER || !x->is_integer || x->integer < 0)
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': data_offsets[%d] is not a "
                              "non-negative integer", path, name, k);
        b[k] = (uint64_t)x->integer;
    }
    if (b[1] < b[0])
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': data_offsets [%llu, %llu] out of "
                          "order (end before begin)", path, name, (unsigned long long)b[0], (unsigned long long)b[1]);
    if (b[1] - b[0] != numel * (uint64_t)es)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': %llu bytes of data for %s x %llu "
                          "elements (%llu bytes)", path, name, (unsigned long long)(b[1] - b[0]), dt,
                          (unsigned long long)numel, (unsigned long long)(numel * (uint64_t)es));
    if (b[1] > data_bytes)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s': data_offsets end at byte %llu of a "
                          "data section of %llu bytes (the file is truncated)", path, name, (unsigned long long)b[1],
                          (unsigned long long)data_bytes);
    t->dtype = zero__st_dtypes[0].name; /* replaced by the table's own string below */
    {
        size_t i;
        for (i = 0; i < sizeof zero__st_dtypes / sizeof zero__st_dtypes[0]; i++)
            if (!strcmp(dt, zero__st_dtypes[i].name)) t->dtype = zero__st_dtypes[i].name;
    }
    t->numel = (int64_t)numel;
    t->offset = b[0];
    t->bytes = b[1] - b[0];
    return ZERO_OK;
}

/* file f's JSON header (text, len) into st's tensors; data_bytes after it */
static zero_result zero__st_parse_header(zero_safetensors *st, int f, const char *text, size_t len, uint64_t data_bytes,
                                   zero_error *err) {
    const char *path = st->files[f].path;
    zero__json j;
    zero_error je;
    zero_result r = ZERO_OK;
    int c, first = st->n, i;
    zero_safetensors_tensor **ord = NULL;
    if (zero__json_parse(&j, text, len, &je) != ZERO_OK)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: the header is not JSON: %s", path, je.msg);
    if (j.count < 1 || j.nodes[0].type != ZERO__JSON_OBJECT) {
        zero__json_free(&j);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: the header is not a JSON object", path);
    }
    for (c = j.nodes[0].first; c >= 0 && r == ZERO_OK; c = j.nodes[c].next) {
        char *name = zero__st_jstr(&j, j.nodes[c].key);
        if (!name) {
            r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: a tensor name holds a NUL byte", path);
            break;
        }
        if (!strcmp(name, "__metadata__")) {
            int m;
            ZERO_FREE(name);
            if (j.nodes[c].type != ZERO__JSON_OBJECT) {
                r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: __metadata__ is not an object", path);
                break;
            }
            if (f != 0) continue; /* the first file's metadata speaks for the checkpoint */
            for (m = j.nodes[c].first; m >= 0 && r == ZERO_OK; m = j.nodes[m].next) {
                char **nm = (char **)ZERO_REALLOC(st->meta, sizeof(char *) * (size_t)(2 * st->n_meta + 2));
                if (!nm) {
                    r = zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s: metadata", path);
                    break;
                }
                st->meta = nm;
                if (j.nodes[m].type != ZERO__JSON_STRING) {
                    r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: __metadata__ values must be strings", path);
                    break;
                }
                nm[2 * st->n_meta] = zero__st_jstr(&j, j.nodes[m].key);
                nm[2 * st->n_meta + 1] = zero__st_jstr(&j, m);
                st->n_meta++;
                if (!nm[2 * st->n_meta - 2] || !nm[2 * st->n_meta - 1])
                    r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: __metadata__: a NUL byte or no memory",
                                   path);
            }
            continue;
        }
        if (st->n == st->cap) {
            int cap = st->cap ? 2 * st->cap : 64;
            zero_safetensors_tensor *nt = (zero_safetensors_tensor *)ZERO_REALLOC(st->t, sizeof *nt * (size_t)cap);
            if (!nt) {
                ZERO_FREE(name);
                r = zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s: tensor table", path);
                break;
            }
            st->t = nt;
            st->cap = cap;
        }
        if ((r = zero__st_entry(&j, c, path, name, data_bytes, &st->t[st->n], err)) != ZERO_OK) {
            ZERO_FREE(name);
            break;
        }
        st->t[st->n].name = name;
        st->t[st->n].file = path;
        st->n++;
    }
    zero__json_free(&j);
    if (r != ZERO_OK) return r;
    /* the data indexed whole: no overlap, no gap, nothing after the last tensor */
    if (st->n > first && !(ord = (zero_safetensors_tensor **)ZERO_MALLOC(sizeof *ord * (size_t)(st->n - first))))
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s: tensor order", path);
    for (i = first; i < st->n; i++) ord[i - first] = &st->t[i];
    if (ord) qsort(ord, (size_t)(st->n - first), sizeof *ord, zero__st_by_begin);
    {
        uint64_t at = 0;
        const char *prev = NULL;
        for (i = 0; i < st->n - first && r == ZERO_OK; i++) {
            if (ord[i]->offset < at)
                r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s' (data_offsets from %llu) overlaps "
                               "tensor '%s' (to %llu)", path, ord[i]->name, (unsigned long long)ord[i]->offset,
                               prev ? prev : "?", (unsigned long long)at);
            else if (ord[i]->offset > at)
                r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s' starts at data byte %llu, after "
                               "a gap from %llu (the data must be indexed whole)", path, ord[i]->name,
                               (unsigned long long)ord[i]->offset, (unsigned long long)at);
            at = ord[i]->offset + ord[i]->bytes;
            prev = ord[i]->name;
        }
        if (r == ZERO_OK && at != data_bytes)
            r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %llu bytes after the last tensor's data (the "
                           "tensors index %llu of %llu)", path, (unsigned long long)(data_bytes - at),
                           (unsigned long long)at, (unsigned long long)data_bytes);
    }
    ZERO_FREE(ord);
    for (i = first; i < st->n; i++) st->t[i].offset += st->files[f].data; /* relative to the file now */
    return r;
}

/* Opens file path as st's next file and reads its header. */
static zero_result zero__st_add_file(zero_safetensors *st, const char *path, zero_error *err) {
    zero__st_file *nf = (zero__st_file *)ZERO_REALLOC(st->files, sizeof *nf * (size_t)(st->n_files + 1));
    zero__st_file *f;
    unsigned char len8[8];
    uint64_t hl;
    char *h;
    int k, rr;
    zero_result r;
    if (!nf) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s", path);
    st->files = nf;
    f = &st->files[st->n_files];
    memset(f, 0, sizeof *f);
    f->fd = -1;
    if (!(f->path = zero__st_strdup(path))) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s", path);
    st->n_files++;
    if ((f->fd = zero__open_read(path, &f->size, ZERO_MSG_FILE_OPEN, err)) < 0) return err ? err->code : ZERO_ERR_IO;
    if (f->size < 8)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %llu bytes, too short for the 8-byte header "
                          "length", path, (unsigned long long)f->size);
    if ((rr = zero__read_at(f->fd, 0, len8, 8)) != 1)
        return zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: %s", path, rr < 0 ? strerror(errno) : "short read");
    for (hl = 0, k = 7; k >= 0; k--) hl = hl << 8 | len8[k];
    if (hl > f->size - 8)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: the header length %llu runs past the end of the "
                          "file (%llu bytes)", path, (unsigned long long)hl, (unsigned long long)f->size);
    if (hl > ZERO_ST_MAX_HEADER)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: a header of %llu bytes, more than the %llu allowed",
                          path, (unsigned long long)hl, (unsigned long long)ZERO_ST_MAX_HEADER);
    if (!(h = (char *)ZERO_MALLOC((size_t)hl + 1))) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s", path);
    if ((rr = zero__read_at(f->fd, 8, h, (size_t)hl)) != 1) {
        ZERO_FREE(h);
        return zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: %s", path, rr < 0 ? strerror(errno) : "short read");
    }
    h[hl] = 0;
    f->data = 8 + hl;
    r = zero__st_parse_header(st, st->n_files - 1, h, (size_t)hl, f->size - f->data, err);
    ZERO_FREE(h);
    return r;
}

static int zero__st_by_name(const void *a, const void *b) {
    return strcmp(((const zero_safetensors_tensor *)a)->name, ((const zero_safetensors_tensor *)b)->name);
}

/* model.safetensors.index.json: every shard its weight_map names, each name found in its shard and nowhere else */
static zero_result zero__st_index(zero_safetensors *st, const char *path, zero_error *err) {
    uint64_t size;
    int fd = zero__open_read(path, &size, ZERO_MSG_FILE_OPEN, err), c, i, wm = -1, rr;
    char *text, dir[ZERO_PATH_MAX + 64], *slash;
    zero__json j;
    zero_error je;
    zero_result r = ZERO_OK;
    if (fd < 0) return err ? err->code : ZERO_ERR_IO;
    if (size > ZERO_ST_MAX_HEADER || !(text = (char *)ZERO_MALLOC((size_t)size + 1))) {
        close(fd);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %llu bytes: too large for an index", path,
                          (unsigned long long)size);
    }
    rr = zero__read_at(fd, 0, text, (size_t)size);
    close(fd);
    if (rr != 1) {
        ZERO_FREE(text);
        return zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: %s", path, rr < 0 ? strerror(errno) : "short read");
    }
    if (zero__json_parse(&j, text, (size_t)size, &je) != ZERO_OK) {
        ZERO_FREE(text);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: not JSON: %s", path, je.msg);
    }
    snprintf(dir, sizeof dir, "%s", path);
    slash = strrchr(dir, '/');
    if (slash) slash[1] = 0;
    else dir[0] = 0;
    if (j.count > 0 && j.nodes[0].type == ZERO__JSON_OBJECT)
        for (c = j.nodes[0].first; c >= 0; c = j.nodes[c].next)
            if (zero__json_string_eq(&j, j.nodes[c].key, "weight_map", 10)) wm = c;
    if (wm < 0 || j.nodes[wm].type != ZERO__JSON_OBJECT)
        r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: no \"weight_map\" object", path);
    for (c = wm >= 0 ? j.nodes[wm].first : -1; c >= 0 && r == ZERO_OK; c = j.nodes[c].next) { /* the shards, once each */
        char *shard = j.nodes[c].type == ZERO__JSON_STRING ? zero__st_jstr(&j, c) : NULL, *name = zero__st_jstr(&j, j.nodes[c].key);
        char full[ZERO_PATH_MAX + 256];
        int seen = 0;
        if (!shard || !name || !shard[0] || shard[0] == '/' || strstr(shard, ".."))
            r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: weight_map['%s']: not a file name beside the index",
                           path, name ? name : "?");
        if (r == ZERO_OK) {
            snprintf(full, sizeof full, "%s%s", dir, shard);
            for (i = 0; i < st->n_files && !seen; i++) seen = !strcmp(st->files[i].path, full);
            if (!seen && zero__st_add_file(st, full, err) != ZERO_OK) {
                char why[sizeof err->msg];
                snprintf(why, sizeof why, "%s", err ? err->msg : "");
                r = zero__fail(err, err ? err->item : ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: weight_map['%s'] names '%s': %s",
                               path, name, shard, why);
            }
        }
        ZERO_FREE(shard);
        ZERO_FREE(name);
    }
    if (r == ZERO_OK && st->n > 1) qsort(st->t, (size_t)st->n, sizeof *st->t, zero__st_by_name);
    for (i = 1; i < st->n && r == ZERO_OK; i++)
        if (!strcmp(st->t[i].name, st->t[i - 1].name))
            r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s' is in two shards: %s and %s", path,
                           st->t[i].name, st->t[i - 1].file, st->t[i].file);
    for (c = wm >= 0 && r == ZERO_OK ? j.nodes[wm].first : -1; c >= 0 && r == ZERO_OK; c = j.nodes[c].next) {
        char *shard = zero__st_jstr(&j, c), *name = zero__st_jstr(&j, j.nodes[c].key);
        int k = name ? zero_safetensors_find(st, name) : -1;
        size_t dl = strlen(dir);
        if (k < 0 || !shard || strcmp(st->t[k].file + dl, shard) != 0)
            r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: weight_map['%s'] names '%s', which has no such "
                           "tensor", path, name ? name : "?", shard ? shard : "?");
        ZERO_FREE(shard);
        ZERO_FREE(name);
    }
    if (r == ZERO_OK && wm >= 0 && j.nodes[wm].count != st->n) /* every shard tensor is in the map */
        for (i = 0; i < st->n && r == ZERO_OK; i++) {
            int found = 0;
            for (c = j.nodes[wm].first; c >= 0 && !found; c = j.nodes[c].next)
                found = zero__json_string_eq(&j, j.nodes[c].key, st->t[i].name, strlen(st->t[i].name));
            if (!found)
                r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s' of %s is not in the index's "
                               "weight_map", path, st->t[i].name, st->t[i].file);
        }
    zero__json_free(&j);
    ZERO_FREE(text);
    return r;
}

ZERO__DEF void zero_safetensors_close(zero_safetensors *st) {
    int i;
    if (!st) return;
    for (i = 0; i < st->n_files; i++) {
        if (st->files[i].fd >= 0) close(st->files[i].fd);
        ZERO_FREE(st->files[i].path);
    }
    for (i = 0; i < st->n; i++) ZERO_FREE((char *)st->t[i].name);
    for (i = 0; i < 2 * st->n_meta; i++) ZERO_FREE(st->meta[i]);
    ZERO_FREE(st->meta);
    ZERO_FREE(st->files);
    ZERO_FREE(st->t);
    while (st->bind) {
        zero__st_bind *prev = st->bind[0].prev;
        ZERO_FREE(st->bind);
        st->bind = prev;
    }
    ZERO_FREE(st->failed);
    pthread_mutex_destroy(&st->lock);
    ZERO_FREE(st);
}

ZERO__DEF zero_result zero_safetensors_open(zero_safetensors **out, const char *path, zero_error *err) {
    zero_safetensors *st;
    struct stat sb;
    char p[ZERO_PATH_MAX + 64];
    size_t n;
    zero_result r;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_safetensors_open: out is NULL");
    *out = NULL;
    if (!path) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_safetensors_open: path is NULL");
    if (strlen(path) >= ZERO_PATH_MAX)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_safetensors_open: a path of %zu bytes", strlen(path));
    if (!(st = (zero_safetensors *)ZERO_MALLOC(sizeof *st)))
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_safetensors_open");
    memset(st, 0, sizeof *st);
    pthread_mutex_init(&st->lock, NULL);
    snprintf(p, sizeof p, "%s", path);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", path);
        if (stat(p, &sb) != 0) snprintf(p, sizeof p, "%s/model.safetensors", path);
        if (stat(p, &sb) != 0) {
            zero_safetensors_close(st);
            return zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: a directory with neither "
                              "model.safetensors.index.json nor model.safetensors", path);
        }
    }
    n = strlen(p);
    if (n >= 5 && !strcmp(p + n - 5, ".json")) {
        r = zero__st_index(st, p, err);
    } else {
        r = zero__st_add_file(st, p, err);
        if (r == ZERO_OK && st->n > 1) qsort(st->t, (size_t)st->n, sizeof *st->t, zero__st_by_name);
        for (n = 1; r == ZERO_OK && (int)n < st->n; n++)
            if (!strcmp(st->t[n].name, st->t[n - 1].name))
                r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor '%s' twice", p, st->t[n].name);
    }
    if (r != ZERO_OK) {
        zero_safetensors_close(st);
        return r;
    }
    *out = st;
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF int zero_safetensors_count(const zero_safetensors *st) { return st ? st->n : 0; }

ZERO__DEF const zero_safetensors_tensor *zero_safetensors_get(const zero_safetensors *st, int i) {
    return st && i >= 0 && i < st->n ? &st->t[i] : NULL;
}

ZERO__DEF int zero_safetensors_find(const zero_safetensors *st, const char *name) {
    int lo = 0, hi;
    if (!st || !name) return -1;
    hi = st->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(st->t[mid].name, name);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

ZERO__DEF const char *zero_safetensors_metadata(const zero_safetensors *st, const char *key) {
    int i;
    if (!st || !key) return NULL;
    for (i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta[2 * i], key)) return st->meta[2 * i + 1];
    return NULL;
}

/* n source elements of dtype code d (F32, F16, BF16, F64) to fp32 */
static void zero__st_to_f32(const char *d, const unsigned char *src, int64_t n, float *dst) {
    int64_t i;
    if (!strcmp(d, "F32")) memcpy(dst, src, sizeof(float) * (size_t)n);
    else if (!strcmp(d, "F16")) zero__host_uncast(dst, ZERO_DTYPE_FP16, src, n);
    else if (!strcmp(d, "BF16")) zero__host_uncast(dst, ZERO_DTYPE_BF16, src, n);
    else
        for (i = 0; i < n; i++) {
            double x;
            memcpy(&x, src + 8 * i, 8);
            dst[i] = (float)x;
        }
}

#define ZERO__ST_PIECE ((int64_t)1 << 20) /* elements read and converted at a time */

ZERO__DEF zero_result zero_safetensors_read(zero_safetensors *st, int i, int64_t offset, int64_t count, int transpose,
                                           zero_dtype dtype, void *out, zero_error *err) {
    const zero_safetensors_tensor *t;
    const zero__st_file *f = NULL;
    int es, k;
    size_t os;
    unsigned char *raw;
    float *tmp;
    int64_t rows = 1, cols = 1, done;
    zero_result r = ZERO_OK;
    if (!st) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_safetensors_read: st is NULL");
    if (!out && count > 0) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_safetensors_read: out is NULL");
    if (i < 0 || i >= st->n)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_safetensors_read: tensor %d of %d", i, st->n);
    t = &st->t[i];
    if (strcmp(t->dtype, "F32") && strcmp(t->dtype, "F16") && strcmp(t->dtype, "BF16") && strcmp(t->dtype, "F64"))
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "%s: tensor '%s' is %s: only F32, F16, BF16 and F64 convert "
                          "to weights", t->file, t->name, t->dtype);
    if (offset < 0 || count < 0 || offset > t->numel || count > t->numel - offset)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_safetensors_read('%s'): elements [%lld, +%lld) of %lld",
                          t->name, (long long)offset, (long long)count, (long long)t->numel);
    if (dtype != ZERO_DTYPE_FP32 && dtype != ZERO_DTYPE_FP16 && dtype != ZERO_DTYPE_BF16)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_safetensors_read('%s'): dtype %d: fp32, fp16 or bf16",
                          t->name, (int)dtype);
    if (transpose) {
        if (t->ndim != 2)
            return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "%s: tensor '%s' has %d dimensions: only 2-D ones "
                              "transpose", t->file, t->name, t->ndim);
        rows = t->shape[1], cols = t->shape[0]; /* the transpose is [shape[1], shape[0]] */
    }
    if (count == 0) return ZERO_OK;
    for (k = 0; k < st->n_files; k++)
        if (st->files[k].path == t->file) f = &st->files[k];
    es = zero__st_dtype_size(t->dtype);
    os = zero_dtype_size(dtype);
    { /* buffers for one piece: what this call reads at a time, no more */
        int64_t piece = transpose ? zero__st_min(ZERO__ST_PIECE, (offset + count - 1) / cols - offset / cols + 1)
                                  : zero__st_min(ZERO__ST_PIECE, count);
        raw = (unsigned char *)ZERO_MALLOC((size_t)piece * (size_t)es);
        tmp = (float *)ZERO_MALLOC(sizeof(float) * (size_t)piece);
    }
    if (!raw || !tmp || !f) {
        ZERO_FREE(raw);
        ZERO_FREE(tmp);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_safetensors_read('%s'): buffers", t->name);
    }
    if (!transpose) {
        for (done = 0; done < count && r == ZERO_OK; done += ZERO__ST_PIECE) {
            int64_t n = zero__st_min(ZERO__ST_PIECE, count - done);
            int rr;
            pthread_mutex_lock(&st->lock);
            rr = zero__read_at(f->fd, t->offset + (uint64_t)(offset + done) * (uint64_t)es, raw, (size_t)n * (size_t)es);
            pthread_mutex_unlock(&st->lock);
            if (rr != 1) {
                r = zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: tensor '%s': reading elements [%lld, +%lld): %s",
                               t->file, t->name, (long long)(offset + done), (long long)n,
                               rr < 0 ? strerror(errno) : "the file ends early (truncated since it was opened)");
                break;
            }
            zero__st_to_f32(t->dtype, raw, n, tmp);
            zero__host_cast((char *)out + (size_t)done * os, dtype, tmp, n);
        }
    } else { /* element (r, c) of the transpose is (c, r) of the file: per file row, the columns in range */
        int64_t r0 = offset / cols, r1 = (offset + count - 1) / cols, c, rr_;
        for (rr_ = r0; rr_ <= r1 && r == ZERO_OK; rr_ += ZERO__ST_PIECE) { /* file columns in pieces */
            int64_t a = rr_, b = zero__st_min(r1 + 1, rr_ + ZERO__ST_PIECE);
            for (c = 0; c < cols && r == ZERO_OK; c++) {
                int64_t x;
                int rr;
                pthread_mutex_lock(&st->lock);
                rr = zero__read_at(f->fd, t->offset + (uint64_t)(c * rows + a) * (uint64_t)es, raw, (size_t)(b - a) * (size_t)es);
                pthread_mutex_unlock(&st->lock);
                if (rr != 1) {
                    r = zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: tensor '%s': reading row %lld: %s", t->file,
                                   t->name, (long long)c, rr < 0 ? strerror(errno) : "the file ends early (truncated "
                                   "since it was opened)");
                    break;
                }
                zero__st_to_f32(t->dtype, raw, b - a, tmp);
                for (x = a; x < b; x++) {
                    int64_t at = x * cols + c - offset;
                    if (at >= 0 && at < count) zero__host_cast((char *)out + (size_t)at * os, dtype, tmp + (x - a), 1);
                }
            }
        }
    }
    ZERO_FREE(raw);
    ZERO_FREE(tmp);
    if (r == ZERO_OK) zero__ok(err);
    return r;
}

/* the init callback of a bound tensor; a failed read is kept for zero_engine_create to report */
static void zero__st_init(void *user, int tensor, int64_t offset, int64_t count, float *out) {
    zero__st_bind *b = (zero__st_bind *)user;
    zero_error e;
    (void)tensor;
    zero__ok(&e);
    if (zero_safetensors_read(b->st, b->src, offset, count, b->transpose, ZERO_DTYPE_FP32, out, &e) != ZERO_OK) {
        zero_safetensors *st = b->st;
        int k, have = 0;
        memset(out, 0, sizeof(float) * (size_t)count);
        pthread_mutex_lock(&st->lock);
        for (k = 0; k < st->n_failed; k++) have |= pthread_equal(st->failed[k].thread, pthread_self());
        if (!have) {
            zero__st_failure *nf =
                (zero__st_failure *)ZERO_REALLOC(st->failed, sizeof *nf * (size_t)(st->n_failed + 1));
            if (nf) {
                st->failed = nf;
                nf[st->n_failed].thread = pthread_self();
                nf[st->n_failed].err = e;
                st->n_failed++;
            } else if (st->n_failed > 0) { /* no memory: this thread's failure rides on the first one's record */
                st->failed[0].thread = pthread_self();
            }
        }
        pthread_mutex_unlock(&st->lock);
    }
}

/* a shape as "[a, b]" */
static void zero__st_shape(char *buf, size_t cap, int ndim, const int64_t *s, int64_t numel) {
    size_t n = 0;
    int k;
    if (ndim <= 0) {
        snprintf(buf, cap, "[%lld]", (long long)numel);
        return;
    }
    for (k = 0; k < ndim && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", k ? ", " : "[", (long long)s[k]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

ZERO__DEF zero_result zero_safetensors_bind(zero_safetensors *st, zero_tensor *tensors, int n_tensors,
                                           const zero_safetensors_options *opt, zero_error *err) {
    zero_safetensors_options o;
    zero__st_bind *b;
    unsigned char *used;
    char missing[600], unexpected[600];
    int t, k, n_missing = 0, n_unexpected = 0;
    if (!st) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_safetensors_bind: st is NULL");
    if (!tensors) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_safetensors_bind: tensors is NULL");
    if (n_tensors < 1) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_safetensors_bind: n_tensors %d", n_tensors);
    memset(&o, 0, sizeof o);
    if (opt) o = *opt;
    b = (zero__st_bind *)ZERO_MALLOC(sizeof *b * (size_t)n_tensors);
    used = (unsigned char *)ZERO_MALLOC((size_t)st->n + 1);
    if (!b || !used) {
        ZERO_FREE(b);
        ZERO_FREE(used);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_safetensors_bind: %d tensors", n_tensors);
    }
    memset(used, 0, (size_t)st->n + 1);
    missing[0] = unexpected[0] = 0;
#define ZERO__ST_LIST(buf, cnt, nm)                                                                          \
    do {                                                                                                     \
        size_t l_ = strlen(buf);                                                                             \
        if (l_ + strlen(nm) + 8 < sizeof buf) snprintf(buf + l_, sizeof buf - l_, "%s'%s'", cnt ? ", " : "", nm); \
        else if (l_ + 6 < sizeof buf && !strstr(buf, ", ...")) snprintf(buf + l_, sizeof buf - l_, ", ...");  \
        cnt++;                                                                                               \
    } while (0)
    for (t = 0; t < n_tensors; t++) {
        const zero_tensor *x = &tensors[t];
        char nbuf[512];
        const char *ck;
        int tr, i;
        const zero_safetensors_tensor *s;
        b[t].st = st;
        b[t].prev = NULL;
        b[t].src = -1;
        if (!x->name) {
            ZERO_FREE(b);
            ZERO_FREE(used);
            return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_safetensors_bind: tensor %d has no name", t);
        }
        tr = o.transpose_2d && x->ndim == 2;
        ck = o.rename ? o.rename(o.user, t, x->name, nbuf, sizeof nbuf, &tr) : x->name;
        if (!ck) continue;
        if ((i = zero_safetensors_find(st, ck)) < 0) {
            ZERO__ST_LIST(missing, n_missing, ck);
            continue;
        }
        s = &st->t[i];
        used[i] = 1;
        {
            int ok = s->numel == x->numel;
            char a[128], c[128];
            if (ok && tr) ok = s->ndim == 2 && x->ndim == 2 && s->shape[0] == x->shape[1] && s->shape[1] == x->shape[0];
            else if (ok && x->ndim > 0) {
                ok = s->ndim == x->ndim;
                for (k = 0; ok && k < x->ndim; k++) ok = s->shape[k] == x->shape[k];
            }
            if (!ok) {
                zero__st_shape(a, sizeof a, x->ndim, x->shape, x->numel);
                zero__st_shape(c, sizeof c, s->ndim, s->shape, s->numel);
                ZERO_FREE(b);
                ZERO_FREE(used);
                return zero__fail(err, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0, "%s: tensor '%s' is %s there, '%s' is %s here%s",
                                  s->file, ck, c, x->name, a, tr ? " (read transposed)" : x->ndim == 2 && s->ndim == 2 ?
                                  " (stored [out, in]? set transpose_2d or the rename callback's *transpose)" : "");
            }
        }
        if (strcmp(s->dtype, "F32") && strcmp(s->dtype, "F16") && strcmp(s->dtype, "BF16") && strcmp(s->dtype, "F64")) {
            ZERO_FREE(b);
            ZERO_FREE(used);
            return zero__fail(err, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0, "%s: tensor '%s' is %s: only F32, F16, BF16 and F64 "
                              "convert to weights", s->file, ck, s->dtype);
        }
        b[t].src = i;
        b[t].transpose = tr;
    }
    for (k = 0; k < st->n; k++)
        if (!used[k] && !(o.ignore && o.ignore(o.user, st->t[k].name))) ZERO__ST_LIST(unexpected, n_unexpected, st->t[k].name);
#undef ZERO__ST_LIST
    ZERO_FREE(used);
    if ((n_missing && !o.allow_missing) || (n_unexpected && !o.allow_unexpected)) {
        ZERO_FREE(b);
        return zero__fail(err, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0, "%s: %d of the model's tensors missing%s%s%s; %d in the "
                          "checkpoint unexpected%s%s%s (a rename or ignore callback maps them; allow_missing / "
                          "allow_unexpected accept them)", st->n_files ? st->files[0].path : "?",
                          o.allow_missing ? 0 : n_missing, n_missing && !o.allow_missing ? ": " : "",
                          o.allow_missing ? "" : missing, "", o.allow_unexpected ? 0 : n_unexpected,
                          n_unexpected && !o.allow_unexpected ? ": " : "", o.allow_unexpected ? "" : unexpected, "");
    }
    b[0].prev = st->bind;
    st->bind = b;
    for (t = 0; t < n_tensors; t++)
        if (b[t].src >= 0) {
            tensors[t].init = zero__st_init;
            tensors[t].init_user = &b[t];
        }
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>host: the host backend (ranks as threads of one process) ----

   One group per zero_host_run, one rank state per thread. Every field a peer reads is
   written under the group mutex or before a barrier that the reader passed after it,
   so the mutex gives every happens-before edge the collectives need (ThreadSanitizer
   sees the same). */

#define ZERO__HOST_MAX_WORLD 1024
#define ZERO__HOST_ALIGN 64       /* bytes: a cache line, and any vector width */
#define ZERO__HOST_BLOCK 256      /* elements reduced per pass over the ranks */
#define ZERO__HOST_TIMEOUT_DEFAULT 300.0
#define ZERO__HOST_MAGIC 0x7a65726fu  /* "zero": live allocation or event */
#define ZERO__HOST_DEAD 0x64656164u   /* "dead": freed */

enum {
    ZERO__HOST_REDUCE_SCATTER,
    ZERO__HOST_ALL_GATHER,
    ZERO__HOST_ALL_REDUCE,
    ZERO__HOST_BROADCAST,
    ZERO__HOST_GROUPS           /* groups_init: every rank posts its G */
};

/* One barrier: how many ranks are inside, and how many times it opened. */
typedef struct zero__host_bar {
    int arrived;
    unsigned long long generation;
} zero__host_bar;

/* What a rank asked for, posted where its peers can compare and read it. */
typedef struct zero__host_call {
    int kind;
    size_t count;
    zero_dtype dt;
    zero_op op;
    int root;
    const void *send;
    void *recv;                 /* broadcast: the buffer (send == recv) */
    zero_group grp;             /* the ranks it runs over */
    unsigned long long seq;     /* 1-based number of this rank's collective in grp */
} zero__host_call;

/* The ranks of one collective: n ranks first, first + stride, ..., this rank
   the me-th, meeting at barrier bar. */
typedef struct zero__host_set {
    zero__host_bar *bar;
    int first, stride, n, me;
} zero__host_set;

typedef struct zero__host_group zero__host_group;

typedef struct zero__host_rank {
    zero_backend be;            /* what fn gets; be.ctx points back here */
    zero__host_group *g;
    int rank;
    zero__host_call call;       /* posted under g->mu; peers read it between barriers */
    unsigned long long ncoll[ZERO_GROUP_COUNT]; /* collectives posted, per group kind */
    unsigned long long arrived_gen; /* under g->mu: the barrier this rank last reached */
    const zero__host_bar *arrived_bar; /* and which barrier that was */
    int shard_size;             /* groups_init's G; 0: no groups made */
    int exited;                 /* under g->mu */
    int started;
    zero_result result;         /* fn's return value */
    size_t allocated[ZERO_MEM_KIND_COUNT];
    size_t allocated_total;
    zero_error first, last;     /* the first and last backend errors (code ZERO_OK: none) */
    pthread_t thread;
} zero__host_rank;

struct zero__host_group {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* default clock: CLOCK_REALTIME, what TIME_UTC reads */
    int world;
    zero__host_bar bar;         /* the barrier of every rank */
    zero__host_bar *bars;       /* [2 world]: shard group from rank f at f, replica group from f at world + f */
    int n_exited;
    int failed;                 /* sticky: every later collective fails with this */
    zero_msg fail_item;
    char fail_msg[768];
    double timeout_s;
    size_t mem_limit;           /* bytes per rank (ZERO_HOST_MEM_LIMIT); SIZE_MAX: none */
    zero_host_fn fn;
    void *arg;
    zero__host_rank *ranks;
};

/* Host memory comes with this header just below the aligned block, so free knows the
   size and kind without a table. */
typedef struct zero__host_block {
    void *raw;
    size_t bytes;
    int kind;
    unsigned magic;
} zero__host_block;

typedef struct zero__host_event {
    unsigned magic;
    double t_ms; /* when last recorded (the host's streams run as called: when the work before it was done) */
} zero__host_event;

static const char *const zero__host_kind_names[ZERO_MEM_KIND_COUNT] = {"device", "pinned",
                                                                       "host"};
static const char *const zero__host_call_names[] = {"reduce_scatter", "all_gather",
                                                    "all_reduce", "broadcast", "groups_init"};

static const char *zero__host_op_name(zero_op op) {
    return op == ZERO_OP_SUM ? "sum" : op == ZERO_OP_MAX ? "max" : op == ZERO_OP_MIN ? "min"
         : op == ZERO_OP_AVG ? "avg" : "?";
}

/* ---- host backend: errors ---- */

/* Every backend error goes through here: it fills err (which may be NULL) and keeps a
   copy in the rank, so zero_host_run can say why a rank's fn failed. */
static zero_result zero__host_fail(zero__host_rank *r, zero_error *err, zero_msg item,
                                   const char *fmt, ...) ZERO__PRINTF(4, 5);
static zero_result zero__host_fail(zero__host_rank *r, zero_error *err, zero_msg item,
                                   const char *fmt, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (r) {
        zero__fail(&r->last, item, NULL, 0, 0, "%s", text);
        if (r->first.code == ZERO_OK) r->first = r->last;
    }
    return zero__fail(err, item, NULL, 0, 0, "%s", text);
}

/* The first failure of a group wins; the caller holds g->mu. */
static void zero__host_set_failed(zero__host_group *g, zero_msg item, const char *fmt, ...)
    ZERO__PRINTF(3, 4);
static void zero__host_set_failed(zero__host_group *g, zero_msg item, const char *fmt, ...) {
    va_list ap;
    if (g->failed) return;
    g->failed = 1;
    g->fail_item = item;
    va_start(ap, fmt);
    vsnprintf(g->fail_msg, sizeof g->fail_msg, fmt, ap);
    va_end(ap);
    pthread_cond_broadcast(&g->cv);
}

/* The caller holds g->mu. */
static zero_result zero__host_sticky(zero__host_rank *r, zero_error *err) {
    return zero__host_fail(r, err, r->g->fail_item, "%s", r->g->fail_msg);
}

#define ZERO__HOST_CTX(fname)                                                                 \
    zero__host_rank *r = (zero__host_rank *)ctx;                                              \
    if (!r) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "host " fname ": ctx is NULL")

static zero_result zero__host_check_stream(zero__host_rank *r, const char *fname,
                                           zero_stream_id s, zero_error *err) {
    if ((unsigned)s >= (unsigned)ZERO_STREAM_COUNT)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: stream %d is not a stream id",
                               fname, (int)s);
    return ZERO_OK;
}

/* p may be NULL only when n == 0; buffers must be aligned to their element size (every
   engine buffer is far more aligned than that). */
static zero_result zero__host_check_buf(zero__host_rank *r, const char *fname, const char *what,
                                        const void *p, size_t n, size_t align, zero_error *err) {
    if (!p && n > 0)
        return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host %s: %s is NULL (%zu elements)",
                               fname, what, n);
    if (p && align > 1 && (uintptr_t)p % align != 0)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG,
                               "host %s: %s (%p) is not aligned to its %zu-byte elements", fname,
                               what, p, align);
    return ZERO_OK;
}

/* The kernels' dtypes; the collectives also take ZERO__DTYPE_F64. */
static zero_result zero__host_check_dtype(zero__host_rank *r, const char *fname, const char *what,
                                          zero_dtype dt, int allow_f64, zero_error *err) {
    if (dt == ZERO_DTYPE_FP32 || dt == ZERO_DTYPE_FP16 || dt == ZERO_DTYPE_BF16 ||
        (allow_f64 && dt == ZERO__DTYPE_F64))
        return ZERO_OK;
    return zero__host_fail(r, err, ZERO_MSG_BAD_ARG,
                           "host %s: %s %d (%s) is not fp32, fp16, bf16%s", fname, what, (int)dt,
                           zero_dtype_name(dt), allow_f64 ? " or fp64" : "");
}

/* ---- host backend: element access ---- */

static float zero__host_get(const void *p, zero_dtype dt, size_t i) {
    switch (dt) {
    case ZERO_DTYPE_FP16: return zero_f16_to_f32(((const zero_f16 *)p)[i]);
    case ZERO_DTYPE_BF16: return zero_bf16_to_f32(((const zero_bf16 *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void zero__host_put(void *p, zero_dtype dt, size_t i, float v) {
    switch (dt) {
    case ZERO_DTYPE_FP16: ((zero_f16 *)p)[i] = zero_f32_to_f16(v); break;
    case ZERO_DTYPE_BF16: ((zero_bf16 *)p)[i] = zero_f32_to_bf16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* v rounded to dt, as a float (fp32: v itself) */
static float zero__host_round(zero_dtype dt, float v) {
    switch (dt) {
    case ZERO_DTYPE_FP16: return zero_f16_to_f32(zero_f32_to_f16(v));
    case ZERO_DTYPE_BF16: return zero_bf16_to_f32(zero_f32_to_bf16(v));
    default: return v;
    }
}

/* MAX and MIN propagate NaN (fmaxf would drop it): an inf/nan flag or a norm reduced
   with MAX must never lose a NaN. The CUDA backend has to match. */
static float zero__host_comb_f(zero_op op, float a, float b) {
    if (op == ZERO_OP_SUM || op == ZERO_OP_AVG) return a + b;
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return op == ZERO_OP_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

static double zero__host_comb_d(zero_op op, double a, double b) {
    if (op == ZERO_OP_SUM || op == ZERO_OP_AVG) return a + b;
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return op == ZERO_OP_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

/* ---- host backend: memory, copies, events ---- */

static zero_result zero__host_alloc(void *ctx, zero_mem_kind kind, size_t bytes, void **out,
                                    zero_error *err) {
    zero__host_block *h;
    void *raw;
    uintptr_t p;
    size_t extra = sizeof(zero__host_block) + ZERO__HOST_ALIGN - 1;
    ZERO__HOST_CTX("alloc");
    if (!out) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host alloc: out is NULL");
    *out = NULL;
    if ((unsigned)kind >= (unsigned)ZERO_MEM_KIND_COUNT)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host alloc: memory kind %d is not one "
                               "of device, pinned, host", (int)kind);
    if (bytes > SIZE_MAX - extra || bytes > r->g->mem_limit - r->allocated_total) {
        return zero__host_fail(r, err, ZERO_MSG_OUT_OF_MEMORY,
                               "host alloc: %zu bytes of %s memory: %s (this rank holds %zu bytes)",
                               bytes, zero__host_kind_names[kind],
                               bytes > SIZE_MAX - extra ? "larger than the address space"
                                                        : "over ZERO_HOST_MEM_LIMIT",
                               r->allocated_total);
    }
    /* bytes == 0 still gets a header and so a unique pointer: callers may treat NULL as
       failure, and free(p) of it stays valid. */
    raw = ZERO_MALLOC(bytes + extra);
    if (!raw)
        return zero__host_fail(r, err, ZERO_MSG_OUT_OF_MEMORY,
                               "host alloc: %zu bytes of %s memory failed (this rank holds %zu "
                               "bytes)", bytes, zero__host_kind_names[kind], r->allocated_total);
    p = ((uintptr_t)raw + sizeof(zero__host_block) + ZERO__HOST_ALIGN - 1) &
        ~(uintptr_t)(ZERO__HOST_ALIGN - 1);
    h = (zero__host_block *)p - 1;
    h->raw = raw;
    h->bytes = bytes;
    h->kind = (int)kind;
    h->magic = ZERO__HOST_MAGIC;
    r->allocated[kind] += bytes;
    r->allocated_total += bytes;
    *out = (void *)p;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- the host backend's address ranges (zero_alloc; stage 3 behind the program's pointers) ----

   mmap'd and readable and writable at first; a page unbacked is remapped
   PROT_NONE (its memory dropped), so a read of a layer the engine has not
   gathered faults instead of reading stale values; backed again it is
   readable and writable and zero. The granule is the system page, or
   ZERO_HOST_VM_PAGE bytes (a multiple of it: the tests take 64 KiB so that
   small tensors share pages as a GPU's 2 MiB granules make them). */
#ifdef ZERO__MAP_ANON
static size_t zero__host_vm_granule(void) {
    long sys = sysconf(_SC_PAGESIZE);
    size_t g = sys > 0 ? (size_t)sys : 4096;
    const char *v = getenv("ZERO_HOST_VM_PAGE");
    if (v && *v) {
        char *end = NULL;
        unsigned long long want = strtoull(v, &end, 10);
        if (end && !*end && want >= g && want <= ((size_t)1 << 30) && want % g == 0) g = (size_t)want;
    }
    return g;
}

/* Each range's granules, backed or not, so that vm_back and vm_unback refuse
   what a GPU's backend refuses (a granule backed twice, or unbacked while
   unbacked) and host tests see the misuse a GPU would: one table for the
   process (ranges outlive the rank that reserved them until zero_free). */
typedef struct zero__host_vm {
    uintptr_t base;
    size_t n, g;
    unsigned char *on; /* n entries */
    struct zero__host_vm *next;
} zero__host_vm;
static zero__host_vm *zero__host_vm_head;
static pthread_mutex_t zero__host_vm_lock = PTHREAD_MUTEX_INITIALIZER;

static zero_result zero__host_vm_reserve(void *ctx, size_t bytes, int backed, void **base, size_t *reserved,
                                         size_t *granule, zero_error *err) {
    size_t g = zero__host_vm_granule(), n;
    void *p;
    zero__host_vm *t;
    (void)ctx;
    if (!base || !reserved || !granule)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "host vm_reserve: base, reserved or granule is NULL");
    if (bytes == 0 || bytes > SIZE_MAX / 2 - g)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "host vm_reserve: %zu bytes", bytes);
    n = (bytes + g - 1) / g * g;
    t = (zero__host_vm *)ZERO_MALLOC(sizeof *t);
    if (t) t->on = (unsigned char *)ZERO_MALLOC(n / g);
    if (!t || !t->on) {
        ZERO_FREE(t);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "host vm_reserve: a table of %zu granules", n / g);
    }
    /* one granule more, so the range can start on a granule */
    p = mmap(NULL, n + g, backed ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | ZERO__MAP_ANON, -1, 0);
    if (p == MAP_FAILED) {
        ZERO_FREE(t->on);
        ZERO_FREE(t);
        return zero__fail(err, ZERO_MSG_VM_FAILED, NULL, 0, 0, "host vm_reserve: mmap of %zu bytes: %s", n + g,
                          strerror(errno));
    }
    {
        uintptr_t a = ((uintptr_t)p + g - 1) / g * g;
        if (a > (uintptr_t)p) munmap(p, a - (uintptr_t)p);
        if ((uintptr_t)p + n + g > a + n) munmap((void *)(a + n), (uintptr_t)p + n + g - (a + n));
        *base = (void *)a;
        t->base = a;
    }
    t->n = n / g;
    t->g = g;
    memset(t->on, backed != 0, t->n);
    pthread_mutex_lock(&zero__host_vm_lock);
    t->next = zero__host_vm_head;
    zero__host_vm_head = t;
    pthread_mutex_unlock(&zero__host_vm_lock);
    *reserved = n;
    *granule = g;
    zero__ok(err);
    return ZERO_OK;
}

/* [p, p + bytes) checked as the CUDA backend checks it (inside one range, on
   granules, every granule backed == want) and, when it is, marked !want.
   Under zero__host_vm_lock. */
static zero_result zero__host_vm_flip(const char *op, void *p, size_t bytes, int want, zero_error *err) {
    uintptr_t a = (uintptr_t)p;
    zero__host_vm *t;
    size_t i, i0;
    for (t = zero__host_vm_head; t; t = t->next)
        if (a >= t->base && a - t->base <= t->n * t->g && bytes <= t->n * t->g - (a - t->base)) break;
    if (!t)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "host %s: [%p, +%zu) is not inside a range from vm_reserve",
                          op, p, bytes);
    if (bytes == 0 || (a - t->base) % t->g || bytes % t->g)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "host %s: [%p, +%zu) is not whole granules of %zu bytes (the range starts at %p)", op, p,
                          bytes, t->g, (void *)t->base);
    i0 = (a - t->base) / t->g;
    for (i = i0; i < i0 + bytes / t->g; i++)
        if (t->on[i] != want)
            return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "host %s: [%p, +%zu): the granule at %p is %s", op, p,
                              bytes, (void *)(t->base + i * t->g), want ? "not backed" : "backed already");
    memset(t->on + i0, !want, bytes / t->g);
    return ZERO_OK;
}

static zero_result zero__host_vm_back(void *ctx, void *p, size_t bytes, zero_error *err) {
    zero_result r;
    (void)ctx;
    pthread_mutex_lock(&zero__host_vm_lock);
    r = zero__host_vm_flip("vm_back", p, bytes, 0, err);
    if (r == ZERO_OK && mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) {
        r = zero__fail(err, ZERO_MSG_VM_FAILED, NULL, 0, 0, "backing [%p, +%zu): mprotect: %s", p, bytes, strerror(errno));
        (void)zero__host_vm_flip("vm_back", p, bytes, 1, NULL);
    }
    pthread_mutex_unlock(&zero__host_vm_lock);
    if (r == ZERO_OK) zero__ok(err);
    return r;
}

static zero_result zero__host_vm_unback(void *ctx, void *p, size_t bytes, zero_error *err) {
    zero_result r;
    (void)ctx;
    pthread_mutex_lock(&zero__host_vm_lock);
    r = zero__host_vm_flip("vm_unback", p, bytes, 1, err);
    if (r == ZERO_OK && mmap(p, bytes, PROT_NONE, MAP_PRIVATE | ZERO__MAP_ANON | MAP_FIXED, -1, 0) == MAP_FAILED) {
        r = zero__fail(err, ZERO_MSG_VM_FAILED, NULL, 0, 0, "unbacking [%p, +%zu): mmap: %s", p, bytes, strerror(errno));
        (void)zero__host_vm_flip("vm_unback", p, bytes, 0, NULL);
    }
    pthread_mutex_unlock(&zero__host_vm_lock);
    if (r == ZERO_OK) zero__ok(err);
    return r;
}

static void zero__host_vm_release(void *ctx, void *base, size_t reserved) {
    zero__host_vm **pp, *t;
    (void)ctx;
    pthread_mutex_lock(&zero__host_vm_lock);
    for (pp = &zero__host_vm_head; *pp && (*pp)->base != (uintptr_t)base; pp = &(*pp)->next) {
    }
    t = *pp;
    if (t) *pp = t->next;
    pthread_mutex_unlock(&zero__host_vm_lock);
    if (t) ZERO_FREE(t->on);
    ZERO_FREE(t);
    munmap(base, reserved);
}
#endif

/* ---- zero_alloc: the ranges programs hold, found by address ---- */

typedef struct zero__vm_range {
    char *base;
    size_t bytes, reserved, granule;
    void *ctx; /* the backend's, and its operations */
    zero_result (*back)(void *ctx, void *p, size_t bytes, zero_error *err);
    zero_result (*unback)(void *ctx, void *p, size_t bytes, zero_error *err);
    void (*release)(void *ctx, void *base, size_t reserved);
    int users; /* engines that manage its pages now */
    struct zero__vm_range *next;
} zero__vm_range;
static pthread_mutex_t zero__vm_lock = PTHREAD_MUTEX_INITIALIZER;
static zero__vm_range *zero__vm_head;

/* The range holding [p, p + n) whole, or NULL. */
static zero__vm_range *zero__vm_find(const void *p, size_t n) {
    zero__vm_range *r;
    pthread_mutex_lock(&zero__vm_lock);
    for (r = zero__vm_head; r; r = r->next)
        if ((const char *)p >= r->base && (uintptr_t)p - (uintptr_t)r->base <= r->bytes &&
            n <= r->bytes - (size_t)((uintptr_t)p - (uintptr_t)r->base))
            break;
    pthread_mutex_unlock(&zero__vm_lock);
    return r;
}

ZERO__DEF int zero_tensors_of_kinds(const char *kinds, void *const *data, void *const *grad, const size_t *numel,
                                    int first_stacked, int end_stacked, int layers, size_t esize, zero_tensor *out, int cap,
                                    char (*names)[64], zero_error *err) {
    char word[64][48];
    const char *p = kinds;
    int n_kinds = 0, k, l, n = 0, pass;
    if (!kinds || !data || !numel || !out || !names) {
        zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_tensors_of_kinds: %s is NULL",
                   !kinds ? "kinds" : !data ? "data" : !numel ? "numel" : !out ? "out" : "names");
        return -1;
    }
    while (*p) { /* the kinds' names: words separated by spaces */
        size_t len;
        while (*p == ' ') p++;
        if (!*p) break;
        len = strcspn(p, " ");
        if (n_kinds == 64 || len >= sizeof word[0]) {
            zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_tensors_of_kinds: %s", n_kinds == 64 ? "more than 64 kinds" :
                       "a kind's name past 47 bytes");
            return -1;
        }
        memcpy(word[n_kinds], p, len);
        word[n_kinds++][len] = 0;
        p += len;
    }
    if (layers < 1 || first_stacked < 0 || end_stacked < first_stacked || end_stacked > n_kinds) {
        zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_tensors_of_kinds: stacked kinds [%d, %d) over %d layers, of %d "
                   "kinds", first_stacked, end_stacked, layers, n_kinds);
        return -1;
    }
    for (k = 0; k < n_kinds; k++)
        if (numel[k] < 1 || (k >= first_stacked && k < end_stacked && numel[k] % (size_t)layers)) {
            zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_tensors_of_kinds: kind '%s': %zu elements%s", word[k],
                       numel[k], numel[k] < 1 ? "" : " do not split into the layers");
            return -1;
        }
    /* three passes: the whole kinds before the stacked ones, the layers, the whole kinds after */
    for (pass = 0; pass < 3; pass++)
        for (l = 0; l < (pass == 1 ? layers : 1); l++)
            for (k = pass == 0 ? 0 : pass == 1 ? first_stacked : end_stacked;
                 k < (pass == 0 ? first_stacked : pass == 1 ? end_stacked : n_kinds); k++) {
                size_t slice = pass == 1 ? numel[k] / (size_t)layers : numel[k], at = (size_t)l * slice * esize;
                zero_tensor *t = &out[n];
                if (n >= cap) {
                    zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_tensors_of_kinds: more than cap (%d) tensors", cap);
                    return -1;
                }
                memset(t, 0, sizeof *t);
                if (pass == 1) snprintf(names[n], 64, "h.%d.%s", l, word[k]);
                else snprintf(names[n], 64, "%s", word[k]);
                t->name = names[n];
                t->numel = (int64_t)slice;
                t->group = pass == 0 ? 0 : pass == 1 ? 1 + l : layers + 1;
                t->data = data[k] ? (char *)data[k] + at : NULL;
                t->grad = grad && grad[k] ? (char *)grad[k] + at : NULL;
                n++;
            }
    zero__ok(err);
    return n;
}

ZERO__DEF zero_result zero_alloc(const zero_backend *be, size_t bytes, void **out, zero_error *err) {
    zero__vm_range *r;
    zero_result res;
    if (out) *out = NULL;
    if (!be) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_alloc: backend is NULL");
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_alloc: out is NULL");
    if (bytes == 0) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_alloc: bytes is 0");
    if (!be->vm_reserve || !be->vm_back || !be->vm_unback || !be->vm_release)
        return zero__fail(err, ZERO_MSG_VM_UNSUPPORTED, NULL, 0, 0,
                          "zero_alloc: backend '%s' cannot leave memory unbacked (no vm_ operations)\nHINT: allocate the "
                          "parameters as before and leave stage 3's tensors' data NULL (zero_param between zero_fetch and "
                          "zero_release)", be->name ? be->name : "?");
    r = (zero__vm_range *)ZERO_MALLOC(sizeof *r);
    if (!r) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_alloc: range table");
    memset(r, 0, sizeof *r);
    res = be->vm_reserve(be->ctx, bytes, 1, (void **)&r->base, &r->reserved, &r->granule, err);
    if (res != ZERO_OK) {
        ZERO_FREE(r);
        return res;
    }
    r->bytes = bytes;
    r->ctx = be->ctx;
    r->back = be->vm_back;
    r->unback = be->vm_unback;
    r->release = be->vm_release;
    pthread_mutex_lock(&zero__vm_lock);
    r->next = zero__vm_head;
    zero__vm_head = r;
    pthread_mutex_unlock(&zero__vm_lock);
    *out = r->base;
    zero__ok(err);
    return ZERO_OK;
}

/* A backend going away (its destroy releases what it reserved): its ranges
   leave the table, so a later zero_free of one is an error, not a call into
   a freed backend. */
static ZERO__UNUSED void zero__vm_forget(const void *ctx) {
    zero__vm_range **pp;
    pthread_mutex_lock(&zero__vm_lock);
    for (pp = &zero__vm_head; *pp;)
        if ((*pp)->ctx == ctx) {
            zero__vm_range *r = *pp;
            *pp = r->next;
            ZERO_FREE(r);
        } else {
            pp = &(*pp)->next;
        }
    pthread_mutex_unlock(&zero__vm_lock);
}

ZERO__DEF void zero_free(const zero_backend *be, void *p) {
    zero__vm_range **pp, *r = NULL;
    (void)be;
    if (!p) return;
    pthread_mutex_lock(&zero__vm_lock);
    for (pp = &zero__vm_head; *pp; pp = &(*pp)->next)
        if ((*pp)->base == (char *)p) {
            r = *pp;
            *pp = r->next;
            break;
        }
    pthread_mutex_unlock(&zero__vm_lock);
    if (!r) {
        zero_logger lg;
        memset(&lg, 0, sizeof lg);
        lg.rank = -1;
        zero__log(&lg, ZERO_LOG_ERROR, ZERO_MSG_BAD_ARG, "zero_free: %p is not memory from zero_alloc (freed twice?)", p);
        return;
    }
    if (r->users) {
        zero_logger lg;
        memset(&lg, 0, sizeof lg);
        lg.rank = -1;
        zero__log(&lg, ZERO_LOG_ERROR, ZERO_MSG_BAD_ARG,
                  "zero_free: %p is still used by %d engine(s): destroy them first (freed anyway)", p, r->users);
    }
    r->release(r->ctx, r->base, r->reserved);
    ZERO_FREE(r);
}

/* free has no error channel: a pointer that is not a live block of this backend is left
   alone and noted as the rank's last error (zero_host_run reports it if fn fails). */
/* mem_info: what ZERO_HOST_MEM_LIMIT leaves of its limit (all kinds count
   against it, as in alloc); unknown without a limit. */
static int zero__host_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes) {
    const zero__host_rank *r = (const zero__host_rank *)ctx;
    if (!r || !free_bytes || !total_bytes || r->g->mem_limit == SIZE_MAX) return -1;
    *total_bytes = r->g->mem_limit;
    *free_bytes = r->g->mem_limit > r->allocated_total ? r->g->mem_limit - r->allocated_total : 0;
    return 0;
}

static void zero__host_free(void *ctx, zero_mem_kind kind, void *p) {
    zero__host_rank *r = (zero__host_rank *)ctx;
    zero__host_block *h;
    if (!p) return;
    h = (zero__host_block *)p - 1;
    if (!r) { /* nowhere to count it: still give the memory back */
        if (h->magic == ZERO__HOST_MAGIC) {
            h->magic = ZERO__HOST_DEAD;
            ZERO_FREE(h->raw);
        }
        return;
    }
    if (h->magic != ZERO__HOST_MAGIC || (unsigned)h->kind >= (unsigned)ZERO_MEM_KIND_COUNT) {
        zero__host_fail(r, NULL, ZERO_MSG_BAD_ARG,
                        "host free: %p is not a live block of this backend (freed twice?)", p);
        return;
    }
    if ((int)kind != h->kind)
        zero__host_fail(r, NULL, ZERO_MSG_BAD_ARG,
                        "host free: %p is %s memory, freed as %s (freed anyway)", p,
                        zero__host_kind_names[h->kind],
                        (unsigned)kind < (unsigned)ZERO_MEM_KIND_COUNT
                            ? zero__host_kind_names[kind] : "an invalid kind");
    r->allocated[h->kind] -= h->bytes;
    r->allocated_total -= h->bytes;
    h->magic = ZERO__HOST_DEAD;
    ZERO_FREE(h->raw);
}

/* Counts the sizes asked for, without alignment or headers. */
ZERO__DEF size_t zero_host_allocated_bytes(const zero_backend *b, zero_mem_kind kind) {
    const zero__host_rank *r;
    if (!b || !b->ctx || b->alloc != zero__host_alloc ||
        (unsigned)kind >= (unsigned)ZERO_MEM_KIND_COUNT)
        return 0;
    r = (const zero__host_rank *)b->ctx;
    return r->allocated[kind];
}

/* Streams are only ordering tags on the host: everything runs at once, in call order. */
static zero_result zero__host_memset0(void *ctx, void *p, size_t bytes, zero_stream_id s,
                                      zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("memset0");
    if ((res = zero__host_check_stream(r, "memset0", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "memset0", "p", p, bytes, 1, err)) != ZERO_OK) return res;
    if (bytes) memset(p, 0, bytes);
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_copy(void *ctx, void *dst, const void *src, size_t bytes,
                                   zero_stream_id s, zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("copy");
    if ((res = zero__host_check_stream(r, "copy", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "copy", "dst", dst, bytes, 1, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "copy", "src", src, bytes, 1, err)) != ZERO_OK) return res;
    if (bytes && dst != src) memmove(dst, src, bytes); /* overlap costs nothing to allow */
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_event_create(void *ctx, zero_event **out, zero_error *err) {
    zero__host_event *ev;
    ZERO__HOST_CTX("event_create");
    if (!out) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host event_create: out is NULL");
    *out = NULL;
    ev = (zero__host_event *)ZERO_MALLOC(sizeof *ev);
    if (!ev)
        return zero__host_fail(r, err, ZERO_MSG_OUT_OF_MEMORY,
                               "host event_create: %zu bytes failed", sizeof *ev);
    ev->magic = ZERO__HOST_MAGIC;
    ev->t_ms = -1;
    *out = (zero_event *)ev;
    zero__ok(err);
    return ZERO_OK;
}

static void zero__host_event_destroy(void *ctx, zero_event *e) {
    zero__host_event *ev = (zero__host_event *)e;
    (void)ctx;
    if (!ev) return;
    ev->magic = ZERO__HOST_DEAD;
    ZERO_FREE(ev);
}

static zero_result zero__host_check_event(zero__host_rank *r, const char *fname, zero_event *e,
                                          zero_error *err) {
    const zero__host_event *ev = (const zero__host_event *)e;
    if (!ev) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host %s: event is NULL", fname);
    if (ev->magic != ZERO__HOST_MAGIC)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: %p is not a live event", fname,
                               (const void *)ev);
    return ZERO_OK;
}

static double zero__now_ms(void); /* (engine) */
static zero_result zero__host_event_record(void *ctx, zero_event *ev, zero_stream_id s,
                                           zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("event_record");
    if ((res = zero__host_check_event(r, "event_record", ev, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_stream(r, "event_record", s, err)) != ZERO_OK) return res;
    ((zero__host_event *)ev)->t_ms = zero__now_ms();
    zero__ok(err);
    return ZERO_OK;
}

/* Every host event can be timed. */
static zero_result zero__host_event_elapsed(void *ctx, zero_event *a, zero_event *b, double *ms, zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("event_elapsed");
    if ((res = zero__host_check_event(r, "event_elapsed", a, err)) != ZERO_OK ||
        (res = zero__host_check_event(r, "event_elapsed", b, err)) != ZERO_OK)
        return res;
    if (!ms) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host event_elapsed: ms is NULL");
    if (((zero__host_event *)a)->t_ms < 0 || ((zero__host_event *)b)->t_ms < 0)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host event_elapsed: an event never recorded");
    *ms = ((zero__host_event *)b)->t_ms - ((zero__host_event *)a)->t_ms;
    zero__ok(err);
    return ZERO_OK;
}

/* The host's copies and kernels run when called: an event is complete once recorded. */
static zero_result zero__host_event_sync(void *ctx, zero_event *ev, zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("event_sync");
    if ((res = zero__host_check_event(r, "event_sync", ev, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_stream_wait(void *ctx, zero_stream_id s, zero_event *ev,
                                          zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("stream_wait");
    if ((res = zero__host_check_event(r, "stream_wait", ev, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_stream(r, "stream_wait", s, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_sync(void *ctx, zero_stream_id s, zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("sync");
    if ((res = zero__host_check_stream(r, "sync", s, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- host backend: barrier ---- */

/* An absolute CLOCK_REALTIME deadline: timespec_get(TIME_UTC) is the one clock plain C11
   offers, and it is the clock pthread_cond_timedwait measures by default (clock_gettime
   and pthread_condattr_setclock are hidden under -std=c11). A wall-clock jump during a
   wait moves the deadline with it; the default of 300 s leaves room for that. */
static void zero__host_deadline(double seconds, struct timespec *ts) {
    double whole = floor(seconds);
    long ns;
    ts->tv_sec = 0;
    ts->tv_nsec = 0;
    timespec_get(ts, TIME_UTC);
    ts->tv_sec += (time_t)whole;
    ns = ts->tv_nsec + (long)((seconds - whole) * 1e9);
    if (ns >= 1000000000L) {
        ns -= 1000000000L;
        ts->tv_sec++;
    }
    ts->tv_nsec = ns;
}

static int zero__host_past(const struct timespec *deadline) {
    struct timespec now;
    now.tv_sec = 0;
    now.tv_nsec = 0;
    timespec_get(&now, TIME_UTC);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static const char *const zero__host_group_names[ZERO_GROUP_COUNT] = {"", " in the shard group",
                                                                      " in the replica group"};

static void zero__host_describe(const zero__host_call *c, char *buf, size_t cap) {
    int n;
    size_t used;
    if (c->kind == ZERO__HOST_GROUPS) {
        snprintf(buf, cap, "groups_init #%llu (shard size %zu)", c->seq, c->count);
        return;
    }
    n = snprintf(buf, cap, "%s #%llu%s (count %zu, %s", zero__host_call_names[c->kind], c->seq,
                 zero__host_group_names[(unsigned)c->grp < ZERO_GROUP_COUNT ? c->grp : 0], c->count,
                 zero_dtype_name(c->dt));
    used = n > 0 && (size_t)n < cap ? (size_t)n : cap - 1;
    if (c->kind == ZERO__HOST_REDUCE_SCATTER || c->kind == ZERO__HOST_ALL_REDUCE)
        snprintf(buf + used, cap - used, ", %s)", zero__host_op_name(c->op));
    else if (c->kind == ZERO__HOST_BROADCAST)
        snprintf(buf + used, cap - used, ", root %d)", c->root);
    else
        snprintf(buf + used, cap - used, ")");
}

static int zero__host_same_call(const zero__host_call *a, const zero__host_call *b) {
    if (a->kind != b->kind || a->count != b->count || a->dt != b->dt || a->seq != b->seq ||
        a->grp != b->grp)
        return 0;
    if ((a->kind == ZERO__HOST_REDUCE_SCATTER || a->kind == ZERO__HOST_ALL_REDUCE) &&
        a->op != b->op)
        return 0;
    return a->kind != ZERO__HOST_BROADCAST || a->root == b->root;
}

/* The ranks a collective over group grp runs on, seen from rank r (groups made). */
static zero__host_set zero__host_set_of(zero__host_rank *r, zero_group grp) {
    zero__host_group *g = r->g;
    zero__host_set st;
    int G = r->shard_size;
    if (grp == ZERO_GROUP_SHARD && G > 0) {
        st.first = r->rank / G * G;
        st.stride = 1;
        st.n = G;
        st.me = r->rank % G;
        st.bar = &g->bars[st.first];
    } else if (grp == ZERO_GROUP_REPLICA && G > 0) {
        st.first = r->rank % G;
        st.stride = G;
        st.n = g->world / G;
        st.me = r->rank / G;
        st.bar = &g->bars[g->world + st.first];
    } else {
        st.first = 0;
        st.stride = 1;
        st.n = g->world;
        st.me = r->rank;
        st.bar = &g->bar;
    }
    return st;
}

static const zero__host_rank *zero__host_member(const zero__host_group *g, const zero__host_set *st, int i) {
    return &g->ranks[st->first + i * st->stride];
}

/* The last rank into a collective's first barrier compares every posted call with the
   set's first rank's (g->mu held). */
static int zero__host_mismatch(zero__host_group *g, const zero__host_set *st) {
    const zero__host_call *c0 = &zero__host_member(g, st, 0)->call;
    int i;
    for (i = 1; i < st->n; i++) {
        const zero__host_rank *o = zero__host_member(g, st, i);
        if (!zero__host_same_call(c0, &o->call)) {
            char a[160], b[160];
            zero__host_describe(c0, a, sizeof a);
            zero__host_describe(&o->call, b, sizeof b);
            zero__host_set_failed(g, ZERO_MSG_HOST_COLLECTIVE_MISMATCH,
                                  "rank %d called %s while rank %d called %s", st->first, a, o->rank, b);
            return 1;
        }
    }
    return 0;
}

/* Ranks of the set that have not reached barrier `gen`, as "1, 3, 5" (g->mu held);
   returns how many. */
static int zero__host_missing(const zero__host_group *g, const zero__host_set *st, unsigned long long gen,
                              char *buf, size_t cap) {
    size_t used = 0;
    int i, listed = 0, missing = 0;
    buf[0] = 0;
    for (i = 0; i < st->n; i++) {
        const zero__host_rank *o = zero__host_member(g, st, i);
        if (o->arrived_bar == st->bar && o->arrived_gen == gen) continue;
        missing++;
        if (listed < 16 && used < cap) {
            int n = snprintf(buf + used, cap - used, "%s%d", listed ? ", " : "", o->rank);
            used += n > 0 ? (size_t)n : 0;
            listed++;
        }
    }
    if (missing > listed && used < cap)
        snprintf(buf + used, cap - used, ", ... (%d ranks)", missing);
    return missing;
}

/* Wait (g->mu held) until every rank of the set reaches this barrier, or fail: the
   group failed before or while we wait, a rank of the set left fn, or the deadline
   passed. check: this is a collective's first barrier, where the calls are compared. A
   rank that fails leaves the barrier counting it, which no longer matters: the group
   stays failed (one failure fails every rank, as an aborted NCCL job does). */
static zero_result zero__host_barrier(zero__host_rank *r, const zero__host_set *st, int check, zero_error *err) {
    zero__host_group *g = r->g;
    zero__host_bar *bar = st->bar;
    unsigned long long gen = bar->generation;
    struct timespec deadline;
    if (g->failed) return zero__host_sticky(r, err);
    r->arrived_gen = gen;
    r->arrived_bar = bar;
    if (++bar->arrived == st->n) {
        bar->arrived = 0;
        if (check && zero__host_mismatch(g, st)) return zero__host_sticky(r, err);
        bar->generation++;
        pthread_cond_broadcast(&g->cv);
        return ZERO_OK;
    }
    zero__host_deadline(g->timeout_s, &deadline);
    for (;;) {
        char what[160];
        if (bar->generation != gen) return ZERO_OK;
        if (g->failed) return zero__host_sticky(r, err);
        if (g->n_exited > 0) {
            int i = 0;
            while (i < st->n && !zero__host_member(g, st, i)->exited) i++;
            if (i < st->n) {
                const zero__host_rank *o = zero__host_member(g, st, i);
                zero__host_describe(&r->call, what, sizeof what);
                zero__host_set_failed(g, ZERO_MSG_HOST_PEER_EXITED,
                                      "rank %d left (returned %s) while rank %d waits in %s", o->rank,
                                      zero_result_string(o->result), r->rank, what);
                return zero__host_sticky(r, err);
            }
        }
        if (zero__host_past(&deadline)) {
            char missing[200];
            int n_missing;
            zero__host_describe(&r->call, what, sizeof what);
            n_missing = zero__host_missing(g, st, gen, missing, sizeof missing);
            zero__host_set_failed(g, ZERO_MSG_HOST_TIMEOUT,
                                  "%s: rank%s %s did not arrive within %g s (rank %d waited)\n"
                                  "HINT: a rank is stuck or skipped a collective; raise "
                                  "ZERO_TIMEOUT_S if it is only slow",
                                  what, n_missing > 1 ? "s" : "", missing, g->timeout_s, r->rank);
            return zero__host_sticky(r, err);
        }
        pthread_cond_timedwait(&g->cv, &g->mu, &deadline);
    }
}

static zero_result zero__host_barrier_locked(zero__host_rank *r, const zero__host_set *st, int check,
                                             zero_error *err) {
    zero_result res;
    pthread_mutex_lock(&r->g->mu);
    res = zero__host_barrier(r, st, check, err);
    pthread_mutex_unlock(&r->g->mu);
    return res;
}

/* ---- host backend: collectives ---- */

/* dst[i] = x_0[off + i] op x_1[off + i] op ... in rank order over the set's send
   buffers; 16-bit sums round to the dtype after every addition, so each partial sum is
   what a 16-bit accumulator would hold. Blocks are read completely before they are
   written, which makes dst == this rank's own send + off safe. */
static void zero__host_reduce(const zero__host_group *g, const zero__host_set *st, const zero__host_call *c,
                              size_t off, size_t n, void *dst) {
    size_t esz = zero_dtype_size(c->dt), i0, j, nb;
    int s, round16 = (c->op == ZERO_OP_SUM || c->op == ZERO_OP_AVG) && esz == 2;
    int avg = c->op == ZERO_OP_AVG;
    float pre = 1.0f / (float)st->n; /* AVG: every contribution scaled first, as ncclAvg */
    double pre_d = 1.0 / (double)st->n;
    for (i0 = 0; i0 < n; i0 += nb) {
        nb = n - i0 < ZERO__HOST_BLOCK ? n - i0 : ZERO__HOST_BLOCK;
        if (c->dt == ZERO__DTYPE_F64) {
            double acc[ZERO__HOST_BLOCK];
            memcpy(acc, (const double *)zero__host_member(g, st, 0)->call.send + off + i0, nb * sizeof(double));
            if (avg)
                for (j = 0; j < nb; j++) acc[j] *= pre_d;
            for (s = 1; s < st->n; s++) {
                const double *x = (const double *)zero__host_member(g, st, s)->call.send + off + i0;
                for (j = 0; j < nb; j++) acc[j] = zero__host_comb_d(c->op, acc[j], avg ? x[j] * pre_d : x[j]);
            }
            memcpy((double *)dst + i0, acc, nb * sizeof(double));
        } else {
            float acc[ZERO__HOST_BLOCK];
            const char *x0 = (const char *)zero__host_member(g, st, 0)->call.send + (off + i0) * esz;
            for (j = 0; j < nb; j++) {
                acc[j] = zero__host_get(x0, c->dt, j);
                if (avg) acc[j] = zero__host_round(c->dt, acc[j] * pre);
            }
            for (s = 1; s < st->n; s++) {
                const char *x = (const char *)zero__host_member(g, st, s)->call.send + (off + i0) * esz;
                for (j = 0; j < nb; j++) {
                    float xv = zero__host_get(x, c->dt, j);
                    float v = zero__host_comb_f(c->op, acc[j], avg ? zero__host_round(c->dt, xv * pre) : xv);
                    acc[j] = round16 ? zero__host_round(c->dt, v) : v;
                }
            }
            for (j = 0; j < nb; j++) zero__host_put((char *)dst + i0 * esz, c->dt, j, acc[j]);
        }
    }
}

/* all_reduce's share of member s: contiguous, sizes differ by at most one */
static void zero__host_share(size_t count, int n, int s, size_t *start, size_t *len) {
    size_t base = count / (size_t)n, rem = count % (size_t)n, us = (size_t)s;
    *start = us * base + (us < rem ? us : rem);
    *len = base + (us < rem ? 1 : 0);
}

/* This rank's data movement between barriers. Each rank writes only its own recv, and
   only where no peer reads in the same phase. */
static void zero__host_move(zero__host_rank *r, const zero__host_set *st, const zero__host_call *c, int phase) {
    const zero__host_group *g = r->g;
    size_t esz = zero_dtype_size(c->dt), start, len;
    int s;
    if (!c->count) return; /* the buffers may be NULL then */
    switch (c->kind) {
    case ZERO__HOST_REDUCE_SCATTER: /* chunk me of every send -> own recv */
        zero__host_reduce(g, st, c, (size_t)st->me * c->count, c->count, c->recv);
        break;
    case ZERO__HOST_ALL_REDUCE:
        if (phase == 1) { /* reduce own share into own recv (peers read other shares) */
            zero__host_share(c->count, st->n, st->me, &start, &len);
            zero__host_reduce(g, st, c, start, len, (char *)c->recv + start * esz);
        } else {          /* fetch every other share from its owner's recv */
            for (s = 0; s < st->n; s++) {
                zero__host_share(c->count, st->n, s, &start, &len);
                if (s != st->me && len)
                    memcpy((char *)c->recv + start * esz,
                           (const char *)zero__host_member(g, st, s)->call.recv + start * esz, len * esz);
            }
        }
        break;
    case ZERO__HOST_ALL_GATHER:
        for (s = 0; s < st->n; s++) {
            char *dst = (char *)c->recv + (size_t)s * c->count * esz;
            const void *src = zero__host_member(g, st, s)->call.send;
            if (dst != src) memcpy(dst, src, c->count * esz);
        }
        break;
    case ZERO__HOST_BROADCAST:
        if (r->rank != c->root && c->recv != g->ranks[c->root].call.recv)
            memcpy(c->recv, g->ranks[c->root].call.recv, c->count * esz);
        break;
    default: break;
    }
}

/* A rank whose call is malformed never joins; failing the group right away keeps its
   peers from waiting for it (they would otherwise see it leave, or time out). */
static zero_result zero__host_reject(zero__host_rank *r, const zero__host_call *c,
                                     zero_result res) {
    char what[160];
    zero__host_describe(c, what, sizeof what);
    pthread_mutex_lock(&r->g->mu);
    zero__host_set_failed(r->g, ZERO_MSG_HOST_COLLECTIVE_MISMATCH,
                          "rank %d called %s with invalid arguments: %s", r->rank, what,
                          r->last.msg);
    pthread_mutex_unlock(&r->g->mu);
    return res;
}

static zero_result zero__host_check_call(zero__host_rank *r, const zero__host_call *c,
                                         const zero__host_set *st, zero_stream_id s, zero_error *err) {
    const char *fname = zero__host_call_names[c->kind];
    int world = st->n;
    size_t esz, per_rank_max;
    zero_result res;
    if (c->grp != ZERO_GROUP_WORLD && (unsigned)c->grp >= (unsigned)ZERO_GROUP_COUNT)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host group_%s: group %d is not shard or replica", fname,
                               (int)c->grp);
    if (c->grp != ZERO_GROUP_WORLD && r->shard_size == 0)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host group_%s: the groups are not made (call "
                               "groups_init first)", fname);
    if ((res = zero__host_check_stream(r, fname, s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, fname, "dtype", c->dt, 1, err)) != ZERO_OK) return res;
    if ((c->kind == ZERO__HOST_REDUCE_SCATTER || c->kind == ZERO__HOST_ALL_REDUCE) &&
        (unsigned)c->op >= (unsigned)ZERO_OP_COUNT)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: op %d is not sum, max or min",
                               fname, (int)c->op);
    if (c->kind == ZERO__HOST_BROADCAST && (c->root < 0 || c->root >= world))
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host broadcast: root %d is outside "
                               "[0, %d)", c->root, world);
    esz = zero_dtype_size(c->dt);
    per_rank_max = SIZE_MAX / esz / (size_t)world;
    if (c->count > per_rank_max)
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host %s: count %zu overflows the "
                               "byte size of %d ranks' %s buffers", fname, c->count, world,
                               zero_dtype_name(c->dt));
    if (c->kind == ZERO__HOST_BROADCAST)
        return zero__host_check_buf(r, fname, "buf", c->recv, c->count, esz, err);
    if ((res = zero__host_check_buf(r, fname, "send", c->send, c->count, esz, err)) != ZERO_OK)
        return res;
    return zero__host_check_buf(r, fname, "recv", c->recv, c->count, esz, err);
}

static zero_result zero__host_collective(zero__host_rank *r, zero__host_call *c, zero_stream_id s,
                                         zero_error *err) {
    zero__host_group *g = r->g;
    zero__host_set st;
    zero_result res;
    /* counted even when rejected: a skipped call shows as a mismatch */
    c->seq = ++r->ncoll[(unsigned)c->grp < ZERO_GROUP_COUNT ? c->grp : 0];
    st = zero__host_set_of(r, c->grp);
    if ((res = zero__host_check_call(r, c, &st, s, err)) != ZERO_OK) return zero__host_reject(r, c, res);
    pthread_mutex_lock(&g->mu);
    if (!g->failed) r->call = *c;
    res = zero__host_barrier(r, &st, 1, err);
    pthread_mutex_unlock(&g->mu);
    if (res != ZERO_OK) return res;
    zero__host_move(r, &st, c, 1);
    if (c->kind == ZERO__HOST_ALL_REDUCE) {
        if ((res = zero__host_barrier_locked(r, &st, 0, err)) != ZERO_OK) return res;
        zero__host_move(r, &st, c, 2);
    }
    /* nobody returns (and reuses or frees its buffers) while a peer may still read them */
    if ((res = zero__host_barrier_locked(r, &st, 0, err)) != ZERO_OK) return res;
    zero__ok(err);
    return ZERO_OK;
}

/* One collective call of this rank, described for zero__host_collective. */
static zero_result zero__host_post(void *ctx, int kind, zero_group grp, const void *send, void *recv, size_t count,
                                   zero_dtype dt, zero_op op, int root, zero_stream_id s, zero_error *err) {
    zero__host_call c;
    zero__host_rank *r = (zero__host_rank *)ctx;
    if (!r)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "host %s: ctx is NULL",
                          zero__host_call_names[kind]);
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.grp = grp;
    c.count = count;
    c.dt = dt;
    c.op = op;
    c.root = root;
    c.send = send;
    c.recv = recv;
    return zero__host_collective(r, &c, s, err);
}

static zero_result zero__host_reduce_scatter(void *ctx, const void *send, void *recv, size_t count,
                                             zero_dtype dt, zero_op op, zero_stream_id s,
                                             zero_error *err) {
    return zero__host_post(ctx, ZERO__HOST_REDUCE_SCATTER, ZERO_GROUP_WORLD, send, recv, count, dt, op, 0, s, err);
}

static zero_result zero__host_all_gather(void *ctx, const void *send, void *recv, size_t count,
                                         zero_dtype dt, zero_stream_id s, zero_error *err) {
    return zero__host_post(ctx, ZERO__HOST_ALL_GATHER, ZERO_GROUP_WORLD, send, recv, count, dt, ZERO_OP_SUM, 0, s, err);
}

static zero_result zero__host_all_reduce(void *ctx, const void *send, void *recv, size_t count,
                                         zero_dtype dt, zero_op op, zero_stream_id s,
                                         zero_error *err) {
    return zero__host_post(ctx, ZERO__HOST_ALL_REDUCE, ZERO_GROUP_WORLD, send, recv, count, dt, op, 0, s, err);
}

static zero_result zero__host_broadcast(void *ctx, void *buf, size_t count, zero_dtype dt,
                                        int root, zero_stream_id s, zero_error *err) {
    return zero__host_post(ctx, ZERO__HOST_BROADCAST, ZERO_GROUP_WORLD, buf, buf, count, dt, ZERO_OP_SUM, root, s, err);
}

static zero_result zero__host_group_reduce_scatter(void *ctx, zero_group grp, const void *send, void *recv,
                                                   size_t count, zero_dtype dt, zero_op op, zero_stream_id s,
                                                   zero_error *err) {
    return zero__host_post(ctx, ZERO__HOST_REDUCE_SCATTER, grp, send, recv, count, dt, op, 0, s, err);
}

static zero_result zero__host_group_all_gather(void *ctx, zero_group grp, const void *send, void *recv, size_t count,
                                               zero_dtype dt, zero_stream_id s, zero_error *err) {
    return zero__host_post(ctx, ZERO__HOST_ALL_GATHER, grp, send, recv, count, dt, ZERO_OP_SUM, 0, s, err);
}

static zero_result zero__host_group_all_reduce(void *ctx, zero_group grp, const void *send, void *recv, size_t count,
                                               zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err) {
    return zero__host_post(ctx, ZERO__HOST_ALL_REDUCE, grp, send, recv, count, dt, op, 0, s, err);
}

/* The groups of shard size G: every rank posts its G (one barrier of the whole world
   compares them), then its group collectives meet at the barriers of its own sets. */
static zero_result zero__host_groups_init(void *ctx, int shard_size, zero_error *err) {
    zero__host_call c;
    zero__host_set st;
    zero_result res;
    ZERO__HOST_CTX("groups_init");
    memset(&c, 0, sizeof c);
    c.kind = ZERO__HOST_GROUPS;
    c.grp = ZERO_GROUP_WORLD;
    c.count = shard_size > 0 ? (size_t)shard_size : 0;
    c.dt = ZERO_DTYPE_FP32;
    c.seq = ++r->ncoll[ZERO_GROUP_WORLD];
    if (shard_size < 1 || shard_size > r->g->world || r->g->world % shard_size != 0) {
        res = zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host groups_init: shard size %d does not divide world %d",
                              shard_size, r->g->world);
        return zero__host_reject(r, &c, res);
    }
    st = zero__host_set_of(r, ZERO_GROUP_WORLD);
    pthread_mutex_lock(&r->g->mu);
    if (!r->g->failed) r->call = c;
    res = zero__host_barrier(r, &st, 1, err);
    pthread_mutex_unlock(&r->g->mu);
    if (res != ZERO_OK) return res;
    /* the new groups number their calls from 1 (every rank passed the barrier: no earlier group call is in flight) */
    r->ncoll[ZERO_GROUP_SHARD] = r->ncoll[ZERO_GROUP_REPLICA] = 0;
    r->shard_size = shard_size; /* read only by this rank: the set of each later call */
    zero__ok(err);
    return ZERO_OK;
}

/* ---- host backend: kernels ---- */

static zero_result zero__host_scale(void *ctx, void *x, size_t n, zero_dtype dt, float factor,
                                    zero_stream_id s, zero_error *err) {
    zero_result res;
    size_t i;
    ZERO__HOST_CTX("scale");
    if ((res = zero__host_check_stream(r, "scale", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, "scale", "dtype", dt, 0, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "scale", "x", x, n, zero_dtype_size(dt), err)) != ZERO_OK)
        return res;
    for (i = 0; i < n; i++) zero__host_put(x, dt, i, zero__host_get(x, dt, i) * factor);
    zero__ok(err);
    return ZERO_OK;
}

/* convert's rule over host memory, elements [0, n): dst[i] (ddt) = src[i]
   (sdt), or dst[i] + src[i] in fp32 rounded to ddt when acc. The fp32
   destinations, the one the engine adds gradients into, in loops the
   compiler vectorises (a bf16 is the top half of its fp32). dst and src
   may be the same buffer of the same dtype, not otherwise overlap. */
static void zero__host_convert_n(void *dst, zero_dtype ddt, const void *src, zero_dtype sdt, size_t n, int acc) {
    size_t i;
    if (!acc && ddt == sdt) {
        if (n && dst != src) memcpy(dst, src, n * zero_dtype_size(ddt));
    } else if (ddt == ZERO_DTYPE_FP32 && sdt == ZERO_DTYPE_BF16) {
        float *d = (float *)dst;
        const uint16_t *b = (const uint16_t *)src;
        for (i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)b[i] << 16;
            float f;
            memcpy(&f, &bits, sizeof f);
            d[i] = acc ? d[i] + f : f;
        }
    } else if (ddt == ZERO_DTYPE_FP32 && sdt == ZERO_DTYPE_FP32) {
        float *d = (float *)dst;
        const float *f = (const float *)src;
        for (i = 0; i < n; i++) d[i] += f[i];
    } else {
        for (i = 0; i < n; i++) zero__host_put(dst, ddt, i, (acc ? zero__host_get(dst, ddt, i) : 0.0f) + zero__host_get(src, sdt, i));
    }
}

/* dst and src may be the same buffer of the same dtype, not otherwise overlap. */
static zero_result zero__host_convert(void *ctx, void *dst, zero_dtype dst_dt, const void *src,
                                      zero_dtype src_dt, size_t n, int accumulate,
                                      zero_stream_id s, zero_error *err) {
    zero_result res;
    ZERO__HOST_CTX("convert");
    if ((res = zero__host_check_stream(r, "convert", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, "convert", "dst_dt", dst_dt, 0, err)) != ZERO_OK ||
        (res = zero__host_check_dtype(r, "convert", "src_dt", src_dt, 0, err)) != ZERO_OK ||
        (res = zero__host_check_buf(r, "convert", "dst", dst, n, zero_dtype_size(dst_dt), err)) !=
            ZERO_OK ||
        (res = zero__host_check_buf(r, "convert", "src", src, n, zero_dtype_size(src_dt), err)) !=
            ZERO_OK)
        return res;
    zero__host_convert_n(dst, dst_dt, src, src_dt, n, accumulate);
    zero__ok(err);
    return ZERO_OK;
}

/* cpu_convert: the host ranks' memory is the CPU's; convert's checks and rule. */
static zero_result zero__host_cpu_convert(void *cpu_ctx, void *dst, zero_dtype dst_dt, const void *src, zero_dtype src_dt,
                                          size_t n, int accumulate, zero_error *err) {
    return zero__host_convert(cpu_ctx, dst, dst_dt, src, src_dt, n, accumulate, ZERO_STREAM_COMM, err);
}

/* The squares are summed into a local double and added to out[0] once, as a GPU kernel
   adds its partial sum. A finite float squared is at most ~1.2e77, so the double sum of
   finite elements can never overflow: it is non-finite exactly when an element is. */
static zero_result zero__host_sumsq(void *ctx, const void *x, size_t n, zero_dtype dt, double *out,
                                    zero_stream_id s, zero_error *err) {
    zero_result res;
    size_t i;
    double sum = 0;
    ZERO__HOST_CTX("sumsq");
    if ((res = zero__host_check_stream(r, "sumsq", s, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_dtype(r, "sumsq", "dtype", dt, 0, err)) != ZERO_OK) return res;
    if ((res = zero__host_check_buf(r, "sumsq", "x", x, n, zero_dtype_size(dt), err)) != ZERO_OK)
        return res;
    if (!out) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host sumsq: out is NULL");
    if ((res = zero__host_check_buf(r, "sumsq", "out", out, 2, sizeof(double), err)) != ZERO_OK)
        return res;
    for (i = 0; i < n; i++) {
        double v = (double)zero__host_get(x, dt, i);
        sum += v * v;
    }
    out[0] += sum;
    if (!isfinite(sum) && !(out[1] >= 1)) out[1] = 1;
    zero__ok(err);
    return ZERO_OK;
}

/* Segment by segment, in order: exactly the sumsq calls. */
static zero_result zero__host_sumsq_segs(void *ctx, const zero_sumsq_seg *segs, int n_segs, zero_dtype dt,
                                         zero_stream_id s, zero_error *err) {
    int k;
    ZERO__HOST_CTX("sumsq_segs");
    if (n_segs < 0 || (n_segs > 0 && !segs))
        return zero__host_fail(r, err, n_segs < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG,
                               "host sumsq_segs: %d segments at %p", n_segs, (const void *)segs);
    for (k = 0; k < n_segs; k++) {
        zero_result res;
        if (segs[k].count < 0)
            return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host sumsq_segs: segment %d has count %lld", k,
                                   (long long)segs[k].count);
        if ((res = zero__host_sumsq(ctx, segs[k].x, (size_t)segs[k].count, dt, segs[k].out, s, err)) != ZERO_OK)
            return res;
    }
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_adam(void *ctx, const zero_adam_args *a, zero_stream_id s, zero_error *err);

/* Call by call, in order: exactly the adam calls. */
static zero_result zero__host_adam_multi(void *ctx, const zero_adam_args *a, int n, zero_stream_id s,
                                         zero_error *err) {
    int k;
    ZERO__HOST_CTX("adam_multi");
    if (n < 0 || (n > 0 && !a))
        return zero__host_fail(r, err, n < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, "host adam_multi: %d calls at %p", n,
                               (const void *)a);
    for (k = 0; k < n; k++) {
        zero_result res = zero__host_adam(ctx, &a[k], s, err);
        if (res != ZERO_OK) return res;
    }
    zero__ok(err);
    return ZERO_OK;
}

/* DeepSpeed's CPU Adam (csrc/includes/cpu_adam_impl.h, Step_1) operation by operation,
   in fp32, so that the host backend, the CPU offload and the CUDA kernel can agree. */
/* DeepSpeed's Adam on elements [i0, i1) of segment sg, fp32, in its order of
   operations: the one scalar definition (the host backend and zero_offload.h's
   scalar CPU Adam both run it; the SIMD and CUDA paths are checked against it). */
static void zero__adam_range(const zero_adam_args *a, const zero_adam_seg *sg, int store, size_t i0, size_t i1) {
    float b1 = a->beta1, b2 = a->beta2, omb1 = 1.0f - b1, omb2 = 1.0f - b2;
    float wd = sg->weight_decay, step = -sg->lr / a->bc1, decay = -sg->lr * wd;
    size_t i;
    for (i = i0; i < i1; i++) {
        float p = a->master[i], m = a->m[i], v = a->v[i], d;
        float g = zero__host_get(a->grad, a->grad_dtype, i) * a->grad_scale;
        if (!a->adamw && wd != 0.0f) g = p * wd + g;
        m = m * b1;
        m = g * omb1 + m;
        v = v * b2;
        v = (g * g) * omb2 + v;
        d = sqrtf(v) * a->bc2 + a->eps;
        if (a->adamw && wd != 0.0f) p = decay * p + p;
        p = (m / d) * step + p;
        a->master[i] = p;
        a->m[i] = m;
        a->v[i] = v;
        if (store) zero__host_put(a->param, a->param_dtype, i, p);
    }
}

/* Lamb's pass (a->lamb_pass) on elements [i0, i1) of segment sg, fp32 as
   DeepSpeed's kernel, the sums in double (zero_adam_args). sg is one of
   a->segs: its index picks its sums and ratio. */
static void zero__lamb_range(const zero_adam_args *a, const zero_adam_seg *sg, int store, size_t i0, size_t i1) {
    size_t k = (size_t)(sg - a->segs), i;
    float b1 = a->beta1, b2 = a->beta2, omb1 = 1.0f - b1, omb2 = 1.0f - b2, wd = sg->weight_decay, eps = a->eps;
    if (a->lamb_pass == 1) {
        double sp = a->lamb_sums[2 * k], su = a->lamb_sums[2 * k + 1];
        for (i = i0; i < i1; i++) {
            float p = a->master[i], g = zero__host_get(a->grad, a->grad_dtype, i) * a->grad_scale;
            float m = b1 * a->m[i] + omb1 * g, v = b2 * a->v[i] + omb2 * g * g;
            float u = m / (a->eps_inside ? sqrtf(v + eps) : sqrtf(v) + eps) + wd * p;
            a->m[i] = m;
            a->v[i] = v;
            sp += (double)p * (double)p;
            su += (double)u * (double)u;
        }
        a->lamb_sums[2 * k] = sp;
        a->lamb_sums[2 * k + 1] = su;
        return;
    }
    {
        float coef = sg->lr / (a->bc1 * a->bc2) * a->lamb_ratio[k];
        for (i = i0; i < i1; i++) {
            float p = a->master[i], m = a->m[i], v = a->v[i];
            float u = m / (a->eps_inside ? sqrtf(v + eps) : sqrtf(v) + eps) + wd * p;
            p = p - coef * u;
            a->master[i] = p;
            if (store) zero__host_put(a->param, a->param_dtype, i, p);
        }
    }
}

/* Muon's two element-wise parts on elements [i0, i1) of segment sg
   (zero_adam_args): pass 1 (a->muon_pass 1) the momentum and the update to
   orthogonalise, into v, on Muon's segments only; then, in a call of any
   rule, a Muon segment's step from the orthogonalised update in v. */
static void zero__muon_range(const zero_adam_args *a, const zero_adam_seg *sg, int store, size_t i0, size_t i1) {
    size_t i;
    if (!sg->muon) return; /* (pass 1 on another rule's segment) */
    if (a->muon_pass == 1) {
        const float omb = 1.0f - a->momentum;
        for (i = i0; i < i1; i++) {
            float g = zero__host_get(a->grad, a->grad_dtype, i) * a->grad_scale;
            float m = fmaf(g - a->m[i], omb, a->m[i]);
            a->m[i] = m;
            a->v[i] = a->nesterov ? fmaf(g - m, omb, m) : m;
        }
        return;
    }
    {
        const float lr = sg->lr, wd = sg->weight_decay, after = 1.0f - lr * wd;
        for (i = i0; i < i1; i++) {
            float p = a->master[i];
            p = wd > 0.0f ? fmaf(-lr, a->v[i], p * after) : fmaf(-lr, a->v[i], p);
            a->master[i] = p;
            if (store) zero__host_put(a->param, a->param_dtype, i, p);
        }
    }
}

/* The rules other than Adam on elements [i0, i1) of segment sg, fp32, in
   their references' order of operations (zero_adam_args): the one scalar
   definition, as zero__adam_range is Adam's. */
static void zero__opt_range(const zero_adam_args *a, const zero_adam_seg *sg, int store, size_t i0, size_t i1) {
    float lr = sg->lr, wd = sg->weight_decay, b1 = a->beta1, b2 = a->beta2;
    float omb1 = 1.0f - b1, omb2 = 1.0f - b2, after = 1.0f - lr * wd, mu = a->momentum, damp = 1.0f - a->dampening;
    size_t i;
    if (a->muon_pass == 1 || sg->muon) {
        zero__muon_range(a, sg, store, i0, i1);
        return;
    }
    if (a->kind == ZERO_OPTIMIZER_LAMB) {
        zero__lamb_range(a, sg, store, i0, i1);
        return;
    }
    if (a->kind != ZERO_OPTIMIZER_LION && a->kind != ZERO_OPTIMIZER_ADAGRAD && a->kind != ZERO_OPTIMIZER_SGD) {
        zero__adam_range(a, sg, store, i0, i1);
        return;
    }
    for (i = i0; i < i1; i++) {
        float p = a->master[i], g = zero__host_get(a->grad, a->grad_dtype, i) * a->grad_scale;
        if (a->kind == ZERO_OPTIMIZER_LION) {
            float m = a->m[i], c = fmaf(g, omb1, m * b1), u = -copysignf(lr, c);
            p = wd > 0.0f ? fmaf(p, after, u) : p + u;
            a->m[i] = fmaf(g, omb2, m * b2);
        } else if (a->kind == ZERO_OPTIMIZER_ADAGRAD) {
            float v;
            if (wd > 0.0f) g = fmaf(p, wd, g);
            v = fmaf(g, g, a->v[i]);
            p = fmaf(g / (sqrtf(v) + a->eps), -lr, p);
            a->v[i] = v;
        } else {
            float d = wd != 0.0f ? g + wd * p : g;
            if (mu != 0.0f) {
                float m = a->first ? d : mu * a->m[i] + damp * d;
                a->m[i] = m;
                d = a->nesterov ? d + mu * m : m;
            }
            p = p - lr * d;
        }
        a->master[i] = p;
        if (store) zero__host_put(a->param, a->param_dtype, i, p);
    }
}

ZERO__DEF int zero_optimizer_state_mask(zero_optimizer_type type, double momentum) {
    switch (type) {
    case ZERO_OPTIMIZER_LION: return 1;
    case ZERO_OPTIMIZER_ADAGRAD: return 2;
    case ZERO_OPTIMIZER_SGD: return momentum != 0 ? 1 : 0;
    default: return 3;
    }
}

ZERO__DEF const char *zero_optimizer_name(zero_optimizer_type type) {
    static const char *const names[ZERO_OPTIMIZER_COUNT] = {"Adam", "AdamW", "Lion", "Adagrad", "SGD", "Lamb", "Muon"};
    return (unsigned)type < (unsigned)ZERO_OPTIMIZER_COUNT ? names[type] : "?";
}

/* ---- >>muon-ns: Muon's Newton-Schulz orthogonalisation on the host ---- */

ZERO__DEF int64_t zero_muon_work_elems(int64_t rows, int64_t cols) {
    int64_t r = rows < cols ? rows : cols, c = rows < cols ? cols : rows;
    return r < 1 ? 0 : 2 * r * r + r * c;
}

/* One matrix y (r x c, r <= c, row-major) orthogonalised in place, with
   a, b the r x r scratch and t the r x c one. */
static void zero__muon_ns1(float *y, int64_t r, int64_t c, int steps, float *a, float *b, float *t) {
    const float ca = 3.4445f, cb = -4.7750f, cc = 2.0315f;
    double ss = 0;
    float inv, *cur = y, *nxt = t;
    int64_t i, j, k, n = r * c;
    int st;
    for (i = 0; i < n; i++) ss += (double)y[i] * y[i];
    inv = (float)(sqrt(ss) + 1e-7);
    for (i = 0; i < n; i++) y[i] /= inv;
    for (st = 0; st < steps; st++) {
        for (i = 0; i < r; i++) /* A = X X^T (symmetric: the upper half, mirrored) */
            for (j = i; j < r; j++) {
                const float *xi = cur + i * c, *xj = cur + j * c;
                float acc = 0;
                for (k = 0; k < c; k++) acc = fmaf(xi[k], xj[k], acc);
                a[i * r + j] = a[j * r + i] = acc;
            }
        for (i = 0; i < r; i++) { /* B = b A + c (A A) */
            float *bi = b + i * r;
            for (j = 0; j < r; j++) bi[j] = 0;
            for (k = 0; k < r; k++) {
                const float aik = a[i * r + k], *ak = a + k * r;
                for (j = 0; j < r; j++) bi[j] = fmaf(aik, ak[j], bi[j]);
            }
            for (j = 0; j < r; j++) bi[j] = fmaf(cc, bi[j], cb * a[i * r + j]);
        }
        for (i = 0; i < r; i++) { /* X' = a X + B X */
            float *ni = nxt + i * c;
            const float *bi = b + i * r;
            for (k = 0; k < c; k++) ni[k] = 0;
            for (j = 0; j < r; j++) {
                const float bij = bi[j], *xj = cur + j * c;
                for (k = 0; k < c; k++) ni[k] = fmaf(bij, xj[k], ni[k]);
            }
            for (k = 0; k < c; k++) ni[k] = fmaf(ca, cur[i * c + k], ni[k]);
        }
        { float *sw = cur; cur = nxt; nxt = sw; }
    }
    if (cur != y) memcpy(y, cur, sizeof(float) * (size_t)n);
}

ZERO__DEF zero_result zero_muon_orthogonalize(float *x, int64_t batch, int64_t rows, int64_t cols, int steps, float scale,
                                              float *work, zero_error *err) {
    int64_t r = rows < cols ? rows : cols, c = rows < cols ? cols : rows, q, i, j;
    if (batch < 0 || rows < 1 || cols < 1 || steps < 0 || !(scale > 0) || !x || !work)
        return zero__fail(err, x && work ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG, NULL, 0, 0,
                          "zero_muon_orthogonalize: batch %lld of %lld x %lld, %d steps, scale %g, x %p, work %p",
                          (long long)batch, (long long)rows, (long long)cols, steps, (double)scale, (void *)x, (void *)work);
    for (q = 0; q < batch; q++) {
        float *m = x + q * rows * cols, *a = work, *b = work + r * r, *t = work + 2 * r * r;
        if (rows > cols) { /* work on the transpose: into t, back at the end */
            for (i = 0; i < rows; i++)
                for (j = 0; j < cols; j++) t[j * rows + i] = m[i * cols + j];
            zero__muon_ns1(t, r, c, steps, a, b, m);
            for (i = 0; i < rows; i++)
                for (j = 0; j < cols; j++) m[i * cols + j] = t[j * rows + i] * scale;
        } else {
            zero__muon_ns1(m, r, c, steps, a, b, t);
            for (i = 0; i < rows * cols; i++) m[i] *= scale;
        }
    }
    zero__ok(err);
    return ZERO_OK;
}

static zero_result zero__host_adam(void *ctx, const zero_adam_args *a, zero_stream_id s,
                                   zero_error *err) {
    zero_result res;
    int k, store, mask;
    int64_t end = 0;
    ZERO__HOST_CTX("adam");
    if ((res = zero__host_check_stream(r, "adam", s, err)) != ZERO_OK) return res;
    if (!a) return zero__host_fail(r, err, ZERO_MSG_NULL_ARG, "host adam: args is NULL");
    if (a->n_segs < 0 || (a->n_segs > 0 && !a->segs))
        return zero__host_fail(r, err, a->n_segs < 0 ? ZERO_MSG_BAD_ARG : ZERO_MSG_NULL_ARG,
                               "host adam: %d segments at %p", a->n_segs, (const void *)a->segs);
    for (k = 0; k < a->n_segs; k++) {
        const zero_adam_seg *sg = &a->segs[k];
        if (sg->offset < 0 || sg->count < 0 || sg->offset > INT64_MAX - sg->count)
            return zero__host_fail(r, err, ZERO_MSG_BAD_ARG,
                                   "host adam: segment %d has offset %lld, count %lld", k,
                                   (long long)sg->offset, (long long)sg->count);
        if (sg->count > 0 && sg->offset + sg->count > end) end = sg->offset + sg->count;
    }
    if ((uint64_t)end > (uint64_t)(SIZE_MAX / sizeof(float)))
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host adam: segments reach element "
                               "%lld, past the address space", (long long)end);
    if ((res = zero__host_check_dtype(r, "adam", "grad_dtype", a->grad_dtype, 0, err)) != ZERO_OK)
        return res;
    if (a->param &&
        (res = zero__host_check_dtype(r, "adam", "param_dtype", a->param_dtype, 0, err)) != ZERO_OK)
        return res;
    mask = zero_optimizer_state_mask((zero_optimizer_type)a->kind, a->momentum);
    if (a->kind == ZERO_OPTIMIZER_LAMB && a->n_segs > 0 &&
        !(a->lamb_pass == 1 ? a->lamb_sums != NULL : a->lamb_pass == 2 && a->lamb_ratio != NULL))
        return zero__host_fail(r, err, a->lamb_pass == 1 || a->lamb_pass == 2 ? ZERO_MSG_NULL_ARG : ZERO_MSG_BAD_ARG,
                               "host adam: Lamb pass %d without its %s", a->lamb_pass,
                               a->lamb_pass == 2 ? "lamb_ratio" : a->lamb_pass == 1 ? "lamb_sums" : "pass (1 or 2)");
    if (a->muon_pass != 0 && !(a->muon_pass == 1 && a->kind == ZERO_OPTIMIZER_MUON))
        return zero__host_fail(r, err, ZERO_MSG_BAD_ARG, "host adam: muon_pass %d with kind %s (pass 1 is Muon's only)",
                               a->muon_pass, zero_optimizer_name((zero_optimizer_type)a->kind));
    if ((res = zero__host_check_buf(r, "adam", "master", a->master, (size_t)end, 4, err)) !=
            ZERO_OK ||
        ((mask & 1) && (res = zero__host_check_buf(r, "adam", "m", a->m, (size_t)end, 4, err)) != ZERO_OK) ||
        ((mask & 2) && (res = zero__host_check_buf(r, "adam", "v", a->v, (size_t)end, 4, err)) != ZERO_OK) ||
        (res = zero__host_check_buf(r, "adam", "grad", a->grad, (size_t)end,
                                    zero_dtype_size(a->grad_dtype), err)) != ZERO_OK)
        return res;
    if (a->param && (res = zero__host_check_buf(r, "adam", "param", a->param, (size_t)end,
                                                zero_dtype_size(a->param_dtype), err)) != ZERO_OK)
        return res;
    store = a->param && !(a->param_dtype == ZERO_DTYPE_FP32 && a->param == (void *)a->master);
    for (k = 0; k < a->n_segs; k++)
        zero__opt_range(a, &a->segs[k], store, (size_t)a->segs[k].offset, (size_t)(a->segs[k].offset + a->segs[k].count));
    zero__ok(err);
    return ZERO_OK;
}

/* On the host backend every buffer is host memory: CPU Adam is the same kernel. */
static zero_result zero__host_cpu_adam(void *ctx, const zero_adam_args *a, zero_error *err) {
    return zero__host_adam(ctx, a, ZERO_STREAM_COMM, err);
}

/* ---- host backend: ranks ---- */

/* Seconds as "300" or "0.5": parsed by hand because strtod follows the C locale a
   program may have changed (a comma locale would turn "0.5" into 0). */
static int zero__host_parse_seconds(const char *v, double *out) {
    double t = 0, scale = 1;
    int digits = 0;
    for (; *v >= '0' && *v <= '9'; v++, digits++) t = t * 10 + (*v - '0');
    if (*v == '.')
        for (v++; *v >= '0' && *v <= '9'; v++, digits++) t += (*v - '0') * (scale *= 0.1);
    if (*v || !digits || !(t > 0)) return 0;
    *out = t < 1e9 ? t : 1e9; /* ~30 years: keeps tv_sec far from overflow */
    return 1;
}

static int zero__host_parse_bytes(const char *v, size_t *out) {
    size_t b = 0;
    if (!*v) return 0;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || b > (SIZE_MAX - 9) / 10) return 0;
        b = b * 10 + (size_t)(*v - '0');
    }
    *out = b;
    return 1;
}

/* Read on every zero_host_run, so a program (or a test) can change them in between.
   A bad value is ignored with one warning per variable and process. */
static void zero__host_env(zero__host_group *g) {
    static int warned_timeout, warned_limit;
    /* ZERO_TIMEOUT_S, the deadline of every backend; ZERO_HOST_TIMEOUT_S is
       its alias for the host backend alone (read when ZERO_TIMEOUT_S is unset) */
    const char *name = "ZERO_TIMEOUT_S", *v = getenv(name);
    char text[256];
    if (!v || !*v) v = getenv(name = "ZERO_HOST_TIMEOUT_S");
    g->timeout_s = ZERO__HOST_TIMEOUT_DEFAULT;
    if (v && *v && !zero__host_parse_seconds(v, &g->timeout_s) && !warned_timeout) {
        warned_timeout = 1;
        snprintf(text, sizeof text, "%s=\"%.64s\" is not a positive number of "
                 "seconds; using %g", name, v, ZERO__HOST_TIMEOUT_DEFAULT);
        zero_log_default(NULL, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID, 0, text);
    }
    v = getenv("ZERO_HOST_MEM_LIMIT");
    g->mem_limit = SIZE_MAX;
    if (v && *v && !zero__host_parse_bytes(v, &g->mem_limit) && !warned_limit) {
        warned_limit = 1;
        snprintf(text, sizeof text, "ZERO_HOST_MEM_LIMIT=\"%.64s\" is not a byte count; no limit",
                 v);
        zero_log_default(NULL, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID, 0, text);
    }
}

static void zero__host_exit(zero__host_rank *r, zero_result res) {
    zero__host_group *g = r->g;
    pthread_mutex_lock(&g->mu);
    r->result = res;
    r->exited = 1;
    g->n_exited++;
    pthread_cond_broadcast(&g->cv); /* waiters must see that this rank will never arrive */
    pthread_mutex_unlock(&g->mu);
}

static void *zero__host_thread(void *p) {
    zero__host_rank *r = (zero__host_rank *)p;
    zero__host_exit(r, r->g->fn(&r->be, r->g->arg));
    return NULL;
}

/* The backend error fn most likely passed on: the last one with fn's result code, else
   the first (a rank often fails, then meets the failed group on its way out); NULL
   when fn failed on its own. */
static const zero_error *zero__host_cause(const zero__host_rank *r) {
    if (r->last.code != ZERO_OK && r->last.code == r->result) return &r->last;
    if (r->first.code != ZERO_OK && r->first.code == r->result) return &r->first;
    return NULL;
}

static const char *zero__host_reason(const zero__host_rank *r, char *buf, size_t cap) {
    const zero_error *e = zero__host_cause(r);
    if (e) return e->msg;
    snprintf(buf, cap, "fn returned %s", zero_result_string(r->result));
    return buf;
}

/* Failed only because the group did (a peer's mismatch, exit or lateness). */
static int zero__host_consequence(const zero__host_rank *r) {
    const zero_error *e = zero__host_cause(r);
    return e && (e->item == ZERO_MSG_HOST_PEER_EXITED ||
                 e->item == ZERO_MSG_HOST_COLLECTIVE_MISMATCH || e->item == ZERO_MSG_HOST_TIMEOUT);
}

static zero_result zero__host_report(const zero__host_group *g, zero_error *err) {
    const zero__host_rank *first = NULL, *cause = NULL;
    char b1[64], b2[64];
    zero_msg item;
    int s;
    for (s = 0; s < g->world; s++) {
        const zero__host_rank *r = &g->ranks[s];
        if (r->result == ZERO_OK) continue;
        if (!first) first = r;
        if (!cause && !zero__host_consequence(r)) cause = r;
    }
    if (!first) {
        zero__ok(err);
        return ZERO_OK;
    }
    /* The lowest failing rank is the answer; a rank that failed on its own account while
       that one only saw the group fail is named too, as the likely first cause. */
    item = zero__host_cause(first) ? zero__host_cause(first)->item : ZERO_MSG_NONE;
    if (cause && cause != first && zero__host_consequence(first))
        zero__fail(err, item, NULL, 0, 0, "rank %d: %s\nrank %d: %s", first->rank,
                   zero__host_reason(first, b1, sizeof b1), cause->rank,
                   zero__host_reason(cause, b2, sizeof b2));
    else
        zero__fail(err, item, NULL, 0, 0, "rank %d: %s", first->rank,
                   zero__host_reason(first, b1, sizeof b1));
    if (err) err->code = first->result; /* "fn returned X" has no item of its own */
    return first->result;
}

ZERO__DEF zero_result zero_host_run(int world, zero_host_fn fn, void *arg, zero_error *err) {
    zero__host_group *g;
    zero_result res;
    int i;
    if (!fn) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_host_run: fn is NULL");
    if (world < 1 || world > ZERO__HOST_MAX_WORLD)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0,
                          "zero_host_run: world %d is outside [1, %d]", world,
                          ZERO__HOST_MAX_WORLD);
    g = (zero__host_group *)ZERO_MALLOC(sizeof *g);
    if (!g) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_host_run: %zu bytes "
                              "of group state failed", sizeof *g);
    memset(g, 0, sizeof *g);
    g->ranks = (zero__host_rank *)ZERO_MALLOC((size_t)world * sizeof *g->ranks);
    if (!g->ranks) {
        ZERO_FREE(g);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_host_run: %zu bytes of "
                          "rank state failed", (size_t)world * sizeof *g->ranks);
    }
    memset(g->ranks, 0, (size_t)world * sizeof *g->ranks);
    g->bars = (zero__host_bar *)ZERO_MALLOC(2 * (size_t)world * sizeof *g->bars);
    if (!g->bars) {
        ZERO_FREE(g->ranks);
        ZERO_FREE(g);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_host_run: %zu bytes of "
                          "group barriers failed", 2 * (size_t)world * sizeof *g->bars);
    }
    memset(g->bars, 0, 2 * (size_t)world * sizeof *g->bars);
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        ZERO_FREE(g->bars);
        ZERO_FREE(g->ranks);
        ZERO_FREE(g);
        return zero__fail(err, ZERO_MSG_HOST_THREAD, NULL, 0, 0,
                          "zero_host_run: mutex init failed");
    }
    if (pthread_cond_init(&g->cv, NULL) != 0) {
        pthread_mutex_destroy(&g->mu);
        ZERO_FREE(g->bars);
        ZERO_FREE(g->ranks);
        ZERO_FREE(g);
        return zero__fail(err, ZERO_MSG_HOST_THREAD, NULL, 0, 0,
                          "zero_host_run: condition variable init failed");
    }
    g->world = world;
    g->fn = fn;
    g->arg = arg;
    zero__host_env(g);
    for (i = 0; i < world; i++) {
        zero__host_rank *r = &g->ranks[i];
        zero_backend *b = &r->be;
        r->g = g;
        r->rank = i;
        r->arrived_gen = ~0ull;
        zero__ok(&r->first);
        zero__ok(&r->last);
        b->ctx = r;
        b->rank = i;
        b->world = world;
        b->name = "host";
        b->alloc = zero__host_alloc;
        b->free = zero__host_free;
        b->memset0 = zero__host_memset0;
        b->copy = zero__host_copy;
        b->event_create = zero__host_event_create;
        b->event_destroy = zero__host_event_destroy;
        b->event_record = zero__host_event_record;
        b->stream_wait = zero__host_stream_wait;
        b->event_sync = zero__host_event_sync;
        b->event_create_timed = zero__host_event_create;
        b->event_elapsed = zero__host_event_elapsed;
        b->sync = zero__host_sync;
        b->reduce_scatter = zero__host_reduce_scatter;
        b->all_gather = zero__host_all_gather;
        b->all_reduce = zero__host_all_reduce;
        b->broadcast = zero__host_broadcast;
        b->groups_init = zero__host_groups_init;
        b->group_reduce_scatter = zero__host_group_reduce_scatter;
        b->group_all_gather = zero__host_group_all_gather;
        b->group_all_reduce = zero__host_group_all_reduce;
        b->scale = zero__host_scale;
        b->convert = zero__host_convert;
        b->sumsq = zero__host_sumsq;
        b->adam = zero__host_adam;
        b->sumsq_segs = zero__host_sumsq_segs;
        b->adam_multi = zero__host_adam_multi;
        b->cpu_adam = zero__host_cpu_adam;
        b->cpu_ctx = b->ctx;
        b->cpu_convert = zero__host_cpu_convert;
        b->opt_rules = (1u << ZERO_OPTIMIZER_COUNT) - 1u;
        b->mem_info = zero__host_mem_info;
#ifdef ZERO__MAP_ANON
        b->vm_reserve = zero__host_vm_reserve;
        b->vm_back = zero__host_vm_back;
        b->vm_unback = zero__host_vm_unback;
        b->vm_release = zero__host_vm_release;
#endif
    }
    if (world == 1) {
        zero__host_exit(&g->ranks[0], fn(&g->ranks[0].be, arg));
    } else {
        for (i = 0; i < world; i++) {
            int rc = pthread_create(&g->ranks[i].thread, NULL, zero__host_thread, &g->ranks[i]);
            if (rc != 0) {
                /* the ranks that run see the group failed and the rest as gone */
                int j;
                pthread_mutex_lock(&g->mu);
                zero__host_set_failed(g, ZERO_MSG_HOST_THREAD,
                                      "could not start the thread of rank %d of %d: %s", i, world,
                                      strerror(rc));
                for (j = i; j < world; j++) {
                    g->ranks[j].exited = 1;
                    g->ranks[j].result = zero__msg_results[ZERO_MSG_HOST_THREAD];
                    zero__fail(&g->ranks[j].first, ZERO_MSG_HOST_THREAD, NULL, 0, 0, "%s",
                               g->fail_msg);
                    g->ranks[j].last = g->ranks[j].first;
                }
                g->n_exited += world - i;
                pthread_mutex_unlock(&g->mu);
                break;
            }
            g->ranks[i].started = 1;
        }
        for (i = 0; i < world; i++)
            if (g->ranks[i].started) pthread_join(g->ranks[i].thread, NULL);
    }
    res = zero__host_report(g, err);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    ZERO_FREE(g->bars);
    ZERO_FREE(g->ranks);
    ZERO_FREE(g);
    return res;
}

/* ---- >>layout: tensors into units ----

   Walk the tensors in registration order and cut runs of whole tensors of at
   most bucket_elems elements; a change of group, of frozen-ness or (stage 3)
   of persistence closes the run. Inside a unit every tensor starts at a
   multiple of ZERO_ALIGN. A tensor larger than bucket_elems is cut into
   pieces of a multiple of world * ZERO_ALIGN elements: no padding lands
   between the pieces, so the tensor stays contiguous for the user's kernels,
   and all pieces share one span (the buffers that hold a tensor whole, the
   stage-3 pool and the gradient ring, work in spans). Each unit is padded to
   a multiple of world * ZERO_ALIGN and laid out back to back; rank r owns
   chunk r of every unit. */

struct zero_layout {
    int world, n_tensors, n_units, n_spans;
    zero_unit *units;
    zero_tensor_place *places;
    int64_t *piece;      /* per tensor: piece size when split, else 0 */
    int64_t *numel;      /* per tensor */
    int *span_first;     /* per span: first unit; span_first[n_spans] = n_units */
    char **names;
    int64_t padded_numel, shard_numel, shard_trainable;
};

static int64_t zero__align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
static int64_t zero__max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t zero__min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
/* a + b for sizes from the config (each >= 0): INT64_MAX where the sum would overflow. */
static int64_t zero__sat_add_i64(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static void zero__layout_free(zero_layout *l) {
    int i;
    if (!l) return;
    if (l->names)
        for (i = 0; i < l->n_tensors; i++) ZERO_FREE(l->names[i]);
    ZERO_FREE(l->names);
    ZERO_FREE(l->units);
    ZERO_FREE(l->places);
    ZERO_FREE(l->piece);
    ZERO_FREE(l->numel);
    ZERO_FREE(l->span_first);
    ZERO_FREE(l);
}

typedef struct zero__named {
    const char *name;
    int index;
} zero__named;

/* qsort has no context argument, and ranks plan layouts concurrently: sort
   (name, index) pairs, not indices into a shared table. */
static int zero__cmp_named(const void *a, const void *b) {
    const zero__named *x = (const zero__named *)a, *y = (const zero__named *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

static zero_result zero__layout_check(const zero_tensor *ts, int n, const zero_layout_args *a,
                                      zero_error *err) {
    int i, d;
    if (!ts || !a) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_layout_create: %s is NULL", !ts ? "tensors" : "args");
    if (n <= 0) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_create: %d tensors (need at least one)", n);
    if (a->world < 1) return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_create: world %d (need >= 1)", a->world);
    if (a->bucket_elems < 0)
        return zero__fail(err, ZERO_MSG_BAD_ARG, "zero_optimization.reduce_bucket_size", 0, 0,
                          "%lld elements (need >= 0; 0: one tensor per unit)", (long long)a->bucket_elems);
    for (i = 0; i < n; i++) {
        const zero_tensor *t = &ts[i];
        if (!t->name || !t->name[0])
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0,
                              "tensor %d (of %d%s%s%s): its name is %s; every tensor needs a non-empty, unique name", i,
                              n, i > 0 && ts[i - 1].name ? ", after '" : "", i > 0 && ts[i - 1].name ? ts[i - 1].name : "",
                              i > 0 && ts[i - 1].name ? "'" : "", t->name ? "\"\" (empty)" : "NULL");
        if (strlen(t->name) > 200)
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%.40s...': its name is %zu bytes, "
                              "200 at most (checkpoints store it)", i, t->name, strlen(t->name));
        if (t->numel < 1 || t->numel > ((int64_t)1 << 50))
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': numel %lld (need 1 .. 2^50)", i,
                              t->name, (long long)t->numel);
        if (t->ndim < 0 || t->ndim > ZERO_MAX_DIMS)
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': ndim %d (need 0 .. %d)", i, t->name,
                              t->ndim, ZERO_MAX_DIMS);
        if (t->ndim > 0) {
            int64_t prod = 1;
            for (d = 0; d < t->ndim; d++) {
                if (t->shape[d] < 1 || prod > t->numel / t->shape[d] + 1)
                    return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0,
                                      "tensor %d '%s': shape[%d] = %lld does not fit numel %lld", i, t->name, d,
                                      (long long)t->shape[d], (long long)t->numel);
                prod *= t->shape[d];
            }
            if (prod != t->numel)
                return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0,
                                  "tensor %d '%s': shape has %lld elements, numel is %lld", i, t->name, (long long)prod,
                                  (long long)t->numel);
        }
        if (t->flags & ~(ZERO_TENSOR_FROZEN | ZERO_TENSOR_NO_DECAY | ZERO_TENSOR_GRAD_WRITE | ZERO_TENSOR_GRAD_ANY_ORDER))
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': unknown flags 0x%x", i, t->name,
                              (unsigned)t->flags);
        if (!(t->lr_scale >= 0) || t->lr_scale > 1e30f)
            return zero__fail(err, ZERO_MSG_LAYOUT_TENSOR, NULL, 0, 0, "tensor %d '%s': lr_scale %g (need >= 0, 0 = 1)", i,
                              t->name, (double)t->lr_scale);
    }
    return ZERO_OK;
}

ZERO__DEF zero_result zero_layout_create(zero_layout **out, const zero_tensor *ts, int n,
                                         const zero_layout_args *a, zero_error *err) {
    zero_layout *l;
    int i, u;
    int64_t gran, persist_total = 0;
    zero_result r;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_layout_create: out is NULL");
    *out = NULL;
    if ((r = zero__layout_check(ts, n, a, err)) != ZERO_OK) return r;

    /* duplicate names, found by sorting */
    {
        zero__named *nm = (zero__named *)ZERO_MALLOC(sizeof(zero__named) * (size_t)n);
        if (!nm) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create: %d tensors", n);
        for (i = 0; i < n; i++) nm[i].name = ts[i].name, nm[i].index = i;
        qsort(nm, (size_t)n, sizeof *nm, zero__cmp_named);
        for (i = 1; i < n; i++)
            if (!strcmp(nm[i - 1].name, nm[i].name)) {
                r = zero__fail(err, ZERO_MSG_LAYOUT_DUPLICATE_NAME, NULL, 0, 0, "tensors %d and %d are both named '%s'",
                               nm[i - 1].index, nm[i].index, nm[i].name);
                ZERO_FREE(nm);
                return r;
            }
        ZERO_FREE(nm);
    }

    l = (zero_layout *)ZERO_MALLOC(sizeof *l);
    if (!l) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create");
    memset(l, 0, sizeof *l);
    l->world = a->world;
    l->n_tensors = n;
    gran = (int64_t)a->world * ZERO_ALIGN;
    {
        /* upper bound on units: every tensor alone, plus its pieces */
        int64_t cap = 0;
        for (i = 0; i < n; i++) {
            int64_t p = (a->bucket_elems > 0 && ts[i].numel > a->bucket_elems)
                            ? zero__max_i64(gran, a->bucket_elems / gran * gran) : 0;
            cap += p ? (ts[i].numel + p - 1) / p : 1;
        }
        if (cap > INT_MAX / 2) {
            zero__layout_free(l);
            return zero__fail(err, ZERO_MSG_BAD_ARG, "zero_optimization.reduce_bucket_size", 0, 0,
                              "%lld elements cuts the model into %lld units (too many)\nHINT: raise reduce_bucket_size",
                              (long long)a->bucket_elems, (long long)cap);
        }
        l->units = (zero_unit *)ZERO_MALLOC(sizeof(zero_unit) * (size_t)cap);
        l->span_first = (int *)ZERO_MALLOC(sizeof(int) * (size_t)(cap + 1));
    }
    l->places = (zero_tensor_place *)ZERO_MALLOC(sizeof(zero_tensor_place) * (size_t)n);
    l->piece = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)n);
    l->numel = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)n);
    l->names = (char **)ZERO_MALLOC(sizeof(char *) * (size_t)n);
    if (!l->units || !l->span_first || !l->places || !l->piece || !l->numel || !l->names) {
        zero__layout_free(l);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create");
    }
    memset(l->names, 0, sizeof(char *) * (size_t)n);
    for (i = 0; i < n; i++) {
        size_t len = strlen(ts[i].name) + 1;
        l->names[i] = (char *)ZERO_MALLOC(len);
        if (!l->names[i]) {
            zero__layout_free(l);
            return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_layout_create");
        }
        memcpy(l->names[i], ts[i].name, len);
    }

    {
        int open = 0;
        l->n_units = 0;
        for (i = 0; i < n; i++) {
            const zero_tensor *t = &ts[i];
            int frozen = (t->flags & ZERO_TENSOR_FROZEN) != 0, persistent = 0;
            zero_tensor_place *pl = &l->places[i];
            zero_unit *x;
            int64_t p = zero__max_i64(gran, a->bucket_elems / gran * gran);
            l->numel[i] = t->numel;
            l->piece[i] = 0;
            /* bucket 0 (DeepSpeed: every tensor reduced alone): one tensor per unit, never split */
            if (a->bucket_elems > 0 && t->numel > a->bucket_elems && t->numel > p) { /* pieces, one span */
                int64_t off;
                l->piece[i] = p;
                pl->first_unit = l->n_units;
                pl->n_units = 0;
                pl->unit_offset = 0;
                l->span_first[l->n_spans] = l->n_units;
                for (off = 0; off < t->numel; off += p) {
                    x = &l->units[l->n_units++];
                    memset(x, 0, sizeof *x);
                    x->numel = zero__min_i64(p, t->numel - off);
                    x->first_tensor = x->last_tensor = i;
                    x->span = l->n_spans;
                    x->group = t->group;
                    x->frozen = frozen;
                    pl->n_units++;
                }
                l->n_spans++;
                open = 0;
                continue;
            }
            if (a->persist_threshold > 0 && t->numel <= a->persist_threshold &&
                (a->model_persist_threshold <= 0 || persist_total + t->numel <= a->model_persist_threshold)) {
                persistent = 1;
                persist_total += t->numel;
            }
            x = open ? &l->units[l->n_units - 1] : NULL;
            if (x && x->group == t->group && x->frozen == frozen && x->persistent == persistent &&
                a->bucket_elems > 0 && zero__align_up(x->numel, ZERO_ALIGN) + t->numel <= a->bucket_elems) {
                pl->first_unit = l->n_units - 1;
                pl->n_units = 1;
                pl->unit_offset = zero__align_up(x->numel, ZERO_ALIGN);
                x->numel = pl->unit_offset + t->numel;
                x->last_tensor = i;
                continue;
            }
            x = &l->units[l->n_units];
            memset(x, 0, sizeof *x);
            x->numel = t->numel;
            x->first_tensor = x->last_tensor = i;
            x->span = l->n_spans;
            x->group = t->group;
            x->frozen = frozen;
            x->persistent = persistent;
            l->span_first[l->n_spans++] = l->n_units;
            pl->first_unit = l->n_units++;
            pl->n_units = 1;
            pl->unit_offset = 0;
            open = 1;
        }
    }
    l->span_first[l->n_spans] = l->n_units;
    {
        int64_t off = 0, sh = 0, sht = 0;
        for (u = 0; u < l->n_units; u++) {
            zero_unit *x = &l->units[u];
            x->padded = zero__align_up(x->numel, gran);
            x->chunk = x->padded / a->world;
            x->offset = off;
            x->shard_offset = sh;
            off += x->padded;
            sh += x->chunk;
            if (!x->frozen) sht += x->chunk;
        }
        l->padded_numel = off;
        l->shard_numel = sh;
        l->shard_trainable = sht;
    }
    for (i = 0; i < n; i++) {
        zero_tensor_place *pl = &l->places[i];
        pl->offset = l->units[pl->first_unit].offset + pl->unit_offset;
    }
    *out = l;
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF void zero_layout_destroy(zero_layout *l) { zero__layout_free(l); }
ZERO__DEF int zero_layout_unit_count(const zero_layout *l) { return l ? l->n_units : 0; }
ZERO__DEF int zero_layout_tensor_count(const zero_layout *l) { return l ? l->n_tensors : 0; }
ZERO__DEF int zero_layout_world(const zero_layout *l) { return l ? l->world : 0; }
ZERO__DEF const zero_unit *zero_layout_unit(const zero_layout *l, int u) {
    return (l && u >= 0 && u < l->n_units) ? &l->units[u] : NULL;
}
ZERO__DEF const zero_tensor_place *zero_layout_tensor(const zero_layout *l, int t) {
    return (l && t >= 0 && t < l->n_tensors) ? &l->places[t] : NULL;
}
ZERO__DEF const char *zero_layout_tensor_name(const zero_layout *l, int t) {
    return (l && t >= 0 && t < l->n_tensors) ? l->names[t] : NULL;
}
ZERO__DEF int zero_layout_find(const zero_layout *l, const char *name) {
    int i;
    if (!l || !name) return -1;
    for (i = 0; i < l->n_tensors; i++)
        if (!strcmp(l->names[i], name)) return i;
    return -1;
}
ZERO__DEF int64_t zero_layout_chunk_real(const zero_layout *l, int u, int rank) {
    const zero_unit *x = zero_layout_unit(l, u);
    if (!x || rank < 0 || rank >= l->world) return 0;
    return zero__max_i64(0, zero__min_i64(x->chunk, x->numel - (int64_t)rank * x->chunk));
}
ZERO__DEF int64_t zero_layout_padded_numel(const zero_layout *l) { return l ? l->padded_numel : 0; }
ZERO__DEF int64_t zero_layout_shard_numel(const zero_layout *l, int trainable_only) {
    return l ? (trainable_only ? l->shard_trainable : l->shard_numel) : 0;
}

/* The unit holding element off of tensor t, and the element's offset inside it. */
static int zero__layout_unit_of(const zero_layout *l, int t, int64_t off, int64_t *in_unit) {
    const zero_tensor_place *pl = &l->places[t];
    if (l->piece[t]) {
        *in_unit = off % l->piece[t];
        return pl->first_unit + (int)(off / l->piece[t]);
    }
    *in_unit = pl->unit_offset + off;
    return pl->first_unit;
}

ZERO__DEF zero_result zero_layout_locate(const zero_layout *l, int t, int64_t off, zero_location *out,
                                         zero_error *err) {
    int64_t in;
    int u;
    if (!l || !out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_layout_locate: %s is NULL", !l ? "l" : "out");
    if (t < 0 || t >= l->n_tensors)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_locate: tensor %d of %d", t, l->n_tensors);
    if (off < 0 || off >= l->numel[t])
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_layout_locate: offset %lld outside tensor '%s' (%lld elements)",
                          (long long)off, l->names[t], (long long)l->numel[t]);
    u = zero__layout_unit_of(l, t, off, &in);
    out->unit = u;
    out->rank = (int)(in / l->units[u].chunk);
    out->shard_offset = l->units[u].shard_offset + in % l->units[u].chunk;
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>engine-core: the engine's parts; errors, entry check, allocation, views of a unit ----

   One step, per rank (N ranks, G micro-batches, S the loss scale):
     micro-batch m: the user writes compute-dtype gradients of loss * S into
       zero_grad buffers (zeroed by the engine) and marks them ready; when a
       unit's last tensor is ready:
         stage 0-1: (G > 1) accumulate into the full accumulator, zero the
                    buffer; on the last micro-batch divide by N and all-reduce
                    (stage 0) or reduce-scatter in place (stage 1);
         stage 2-3: reduce-scatter the unit in its ring slot in place with the
                    average inside the reduction (ZERO_OP_AVG), add the owned
                    chunk into the shard accumulator. Stage 2 on one rank
                    with G == 1 (optimizer on the device): the slot is the
                    unit's place in the accumulator, and nothing is copied.
     zero_step: per unit, each rank sums squares (double) of its owned chunk
       and flags inf/nan; one all-reduce of those per-unit pairs gives the
       global norm and the first bad unit; skip on overflow; else Adam on the
       owned chunks with grad_scale = 1 / (G S clip), write the compute-dtype
       copy, all-gather (stage 1-2) or drop gathered units (stage 3).
   Every rank runs the same arithmetic in the same order for a given world
   size, so stages 0-3 agree bitwise when G == 1. */

typedef struct zero__seg {
    int tensor;
    int64_t unit_off;   /* offset inside the unit */
    int64_t tensor_off; /* offset inside the tensor */
    int64_t count;
} zero__seg;

typedef struct zero__span_state {
    int64_t pool_off; /* element offset in the pool; -1: not resident */
    int refs;         /* zero_fetch calls without their zero_release */
    int prefetched;   /* resident, gathered ahead of use */
    int64_t last_use; /* fetch clock, for eviction */
    int slot;         /* gradient ring slot this micro-batch (-1: none) */
    int units_left;   /* units whose reduction has not run this micro-batch */
    int persistent, frozen;
    int clear;        /* a tensor of the span may accumulate (+=): clear its ring slot */
    /* stage 3, non-persistent spans, backends with events: the stream order
       per span instead of whole streams (a prefetch no longer holds back
       the compute queued before its use, nor waits for compute that does
       not read its pool region) */
    zero_event *ev_ready; /* on the comm stream after its gather */
    zero_event *ev_free;  /* on the compute stream at its last zero_release */
    int wait_ready;       /* the compute stream has yet to wait for ev_ready */
    int free_rec;         /* ev_free holds a record */
} zero__span_state;

enum { ZERO__TRACE_RECORD, ZERO__TRACE_COMPLETE, ZERO__TRACE_INVALID };

/* The optimizer strategies: where Adam runs and when, chosen once at create
   (zero__strategy_pick) and called through one table of operations by
   zero_grad_ready, zero_step, zero_skip_step, zero_flush and the readers of
   the state, none of which asks which strategy runs. Each strategy is one
   section (>>opt-device, >>opt-cpu, >>opt-overlap, >>opt-early,
   >>opt-delayed, >>opt-nvme) and has every operation (zero__opt_nop and
   kin where it has nothing to do):
     alloc         at create, its buffers (host staging, tables, the thread's
     release       lock); release frees them
     unit_reduced  unit u's reduction of a micro-batch is queued (last: the
                   step's last micro-batch): the CPU strategies send its
                   chunk to the host there
     backward      the first zero_grad of a step: what the backward refills
                   is free
     param_wait    before unit u's parameters are copied for a gather
     settle        every gradient of the step is in (zero_step,
                   zero_skip_step): what the step before left running ends
     norm_stats    the owned chunks' squares and inf/nan flags queued for
                   the norm (unless the reductions did it)
     step          Adam of every owned chunk, the new parameters where they
                   live; fills the info's CPU figures
     after         the new parameters everywhere the step did not put them
     quiesce       no CPU Adam runs (before the state is read or written)
     flush         zero_flush
     floor         zero_floor_of: the floor of a step of this schedule */
typedef struct zero__sizes { /* element counts the allocations are made from */
    int64_t psi, psiT, S, ST;  /* padded, trainable padded, shard, trainable shard */
    int64_t persist;           /* stage 3: persistent spans */
    int64_t dyn_total, dyn_max; /* stage 3: the other spans, all and the largest */
    int64_t slot;              /* the largest trainable span: one gradient ring slot */
    int trainable_spans, maxcap; /* trainable spans that take ring slots; maxcap: most tensors in one unit */
    int own_spans;             /* stages 2-3: spans with a gradient slot of their own ... */
    int64_t own_elems;         /* ... and their elements */
} zero__sizes;

typedef struct zero__strategy {
    const char *name;
    zero_result (*alloc)(zero_engine *e, const zero__sizes *zs);
    void (*release)(zero_engine *e);
    zero_result (*unit_reduced)(zero_engine *e, int u, int last);
    zero_result (*backward)(zero_engine *e);
    zero_result (*param_wait)(zero_engine *e, int u);
    zero_result (*settle)(zero_engine *e);
    zero_result (*norm_stats)(zero_engine *e);
    zero_result (*step)(zero_engine *e, float grad_scale, zero_step_info *in);
    zero_result (*after)(zero_engine *e);
    zero_result (*quiesce)(zero_engine *e);
    zero_result (*flush)(zero_engine *e);
    double (*floor)(const zero_step_info *in, double fwd, double bwd, double step, double adam, const char **schedule);
} zero__strategy;
static const zero__strategy *zero__strategy_pick(const zero_engine *e); /* (after the strategies, >>opt-nvme) */
typedef struct zero__client zero__client; /* the program's checkpointed state (>>ckpt-format) */
static void zero__client_free(zero__client *c);

/* The engine in parts, one sub-struct per concern. `plan` is fixed at
   create; the others are state that the calls named beside them change. */

typedef struct zero__plan { /* what zero_engine_create decided; read-only afterwards */
    zero_layout *layout;        /* tensors cut into units (zero_layout_create) */
    int rank, world, stage, gas; /* gas: gradient_accumulation_steps. rank and world are this rank's
                                   place in its shard group and the group's size: every partition
                                   (units, chunks, checkpoints) is the shard group's */
    int grank, gworld;          /* the rank and world of the whole job (logs, files, scalars) */
    int hybrid;                 /* mics_shard_size: world < gworld; the reduced chunk is averaged
                                   over the world / world groups, which hold the same shard */
    zero_dtype cdt, adt, gdt;   /* compute dtype; gradient accumulation dtype; dtype of the reduced
                                   gradient chunks Adam reads */
    size_t csize, asize;        /* bytes of one cdt / adt element */
    zero_mem_kind opt_kind;     /* where master, m and v live */
    int n_tensors, n_trainable, n_units, n_spans;
    int ext;                    /* the parameters live in the program's memory (zero_tensor.data) */
    int gext;                   /* the gradients live in the program's memory (zero_tensor.grad) */
    int pvm;                    /* stage 3 behind the program's pointers: .data in zero_alloc memory, its pages
                                   backed only where a span is gathered (zero__pvm) */
    int host_acc;               /* optimizer offload at stages 2-3: the reduced chunks accumulate in the
                                   host staging (buf.cpu_grad); the device keeps one chunk of staging.
                                   Cleared with GAS > 1 where they add up on the device instead
                                   (zero__plan_grad_place) */
    int host_sum;               /* host_acc with GAS > 1 and the backend's cpu_convert: the micro-batches
                                   before the last are added on the CPU (>>engine-hsum) */
    int gdirect;                /* stage 2, one rank, one micro-batch, the engine's gradients, Adam on the
                                   device: the owned accumulator is every unit whole, so a span's slot is
                                   its own place there (zero__slot_at); no ring buffer */
    /* per tensor */
    void **tdata;               /* ext: the program's memory of each tensor */
    void **tgrad;               /* gext: the program's gradient memory of each tensor (NULL: frozen) */
    int *tflags;
    float *tlr;
    int *tgroup, *tndim;        /* group, dimensions (checkpoints) */
    int64_t *tshape;            /* ZERO_MAX_DIMS extents */
    /* per unit */
    int64_t *unit_buf_off;      /* element offset in the trainable padded buffers (-1: frozen) */
    int64_t *unit_shard_off;    /* element offset in this rank's trainable shard (-1: frozen) */
    int64_t seg_elems;          /* elements of all Adam segments: what this rank's Adam steps */
    int *seg_first, *seg_count; /* the unit's Adam segments in segs */
    zero_adam_seg *segs;
    int *seg_tensor;
    int *pair_first, n_pairs;   /* (unit, tensor) pairs of the norm statistics: index of a unit's first */
    /* per span (a run of units gathered or reduced together) */
    int64_t *span_off, *span_padded;
} zero__plan;

typedef struct zero__buffers { /* device (or host) memory of the step, allocated once at create */
    void *params, *grads, *accum; /* compute-dtype parameters, gradients, accumulator */
    void *acc_stage;              /* host_acc with GAS > 1: one chunk (adt) where a micro-batch is added */
    float *master, *m, *v;        /* fp32 master weights and Adam moments (plan.opt_kind) */
    float *dmaster, *dm, *dv;     /* offload_optimizer.ratio < 1: those of the units stepped on the device
                                     (opt.dev_elems each, device memory; zero__master_at knows which) */
    double *stats_dev, *stats_host; /* per (unit, tensor) pair: sum of squares, inf/nan flag */
    double *check_dev, *check_host; /* check_collectives: 2 doubles each */
    double *scal_dev, *scal_host;   /* zero_all_reduce_scalars: ZERO_SCALARS_MAX doubles each */
    void *cpu_grad, *cpu_param;   /* optimizer offload: host staging of the owned chunks (trainable shard) */
    void *ustage;                 /* ext: one unit's compute-dtype parameters between the
                                     program's memory and the optimizer or the all-gather */
    void *gstage;                 /* gext: one unit's gradient, gathered from the program's
                                     memory for its reduction */
    zero__seg *segtmp;            /* one unit's segments (scratch) */
    zero_sumsq_seg *sq;           /* statistics segments gathered for one sumsq_segs call (n_pairs) */
    int n_sq;                     /* ... how many are pending */
    zero_dtype sq_dt;             /* ... their dtype */
    zero_adam_args *uargs;        /* one Adam call per unit for adam_multi (n_units) */
    zero_adam_seg *cpu_segs;      /* one unit's Adam segments clipped to a piece (scratch) */
    zero_event *ev_compute, *ev_comm; /* stream order (no-ops on the host) */
} zero__buffers;

typedef struct zero__grad_ring { /* zero_grad / zero_grad_ready of the current micro-batch */
    int *tensors_left;          /* per unit: tensors not yet ready this micro-batch */
    int *tensors_per_unit;      /* per unit: trainable tensors (tensors_left's reset value) */
    unsigned char *ready;       /* per tensor: zero_grad_ready called this micro-batch */
    unsigned char *asked;       /* per tensor: its gradient buffer was handed out this micro-batch */
    /* stages 0-1 with one micro-batch (zero__grads_lazy): a unit's gradient
       buffer is cleared when the micro-batch first asks for one of its
       tensors, over [clear_lo, clear_hi) (unit elements; the tensors without
       ZERO_TENSOR_GRAD_WRITE), instead of the whole buffer in every step */
    int64_t *clear_lo, *clear_hi;
    unsigned char *unit_asked;  /* per unit: cleared this micro-batch */
    int ready_count, touched;   /* tensors ready; any gradient asked for in this micro-batch */
    /* stages 2-3: gradient slots, one span each: n_ring (at most 2) slots of
       slot_elems that spans take in turn, then one slot of its own for each
       span with a ZERO_TENSOR_GRAD_ANY_ORDER tensor */
    int64_t slot_elems;
    int n_slots, n_ring, *slot_span; /* slot_span: the span a slot holds (-1: free) */
    int slot_cap;                    /* the slot tables' length: the ring, every span's own slot, a stand-in */
    int64_t *slot_off;               /* element offset of each slot in buf.grads */
    void **slot_mem;                 /* a stand-in slot's own allocation (zero__ring_standin); NULL: in buf.grads */
    size_t *slot_mem_bytes;          /* ... and its bytes */
    size_t grads_bytes;              /* bytes of buf.grads (replaced by zero__slots_replan) */
    int *span_slot;                  /* per span: its own slot, or -1 (the ring) */
    /* per span: 0 in the ring, ZERO__OWN_FLAG (a ZERO_TENSOR_GRAD_ANY_ORDER tensor: planned at create) or
       ZERO__OWN_FOUND (seen open across the backward: planned at the end of the micro-batch that saw it) */
    unsigned char *span_own;
    int replan;                      /* stand-ins or found spans wait for zero__slots_replan */
    int64_t *slot_freed, slot_clock; /* when each slot was last released */
    int64_t *slot_claimed;           /* when each slot was last claimed (slot_clock) */
    int *slot_nested;                /* spans claimed and released while the slot's span stayed open */
    zero_event **ev_slot;
} zero__grad_ring;
#define ZERO__OWN_FLAG 1
#define ZERO__OWN_FOUND 2

typedef struct zero__pool3 { /* stage 3: gathered units and the fetch trace */
    void *base;                 /* the pool of gathered units */
    int64_t pool_elems, persist_elems;
    int64_t *ext_off, *ext_len; /* pool extents, sorted by offset */
    int n_ext;
    int *trace, trace_len, trace_cap, trace_pos, trace_state, trace_warned; /* one micro-batch's fetches */
    int64_t fetch_clock, n_fetches, n_hits, n_gathered; /* counters of the current step */
    /* regions of dropped spans: a gather into one first has the comm stream
       wait for that span's ev_free (its readers on the compute stream) */
    int64_t *stale_off, *stale_len;
    int *stale_span, n_stale, stale_cap, stale_full; /* stale_full: the list overflowed, fence everything once */
    int gathered;               /* zero_gather_params holds every span */
    int64_t live_limit, prefetch_limit; /* stage3_max_live_parameters and stage3_prefetch_bucket_size, or what
                                           create derived where the config left them unset */
    int64_t group_max;          /* elements of the largest group's spans that are not persistent */
    int derived;                /* bits: 1 live_limit, 2 prefetch_limit derived from the plan */
    /* a derived pool grows instead of failing a needed fetch (DeepSpeed's max_live never blocks one): an address
       range for every span reserved, pages backed as far as the pool reaches (or, where the pool only counts,
       nothing backed at all) */
    int grows;
    char *vm_base;              /* the range (NULL: the pool is one allocation) */
    size_t vm_reserved, vm_granule, vm_backed;
    int64_t dyn_total;          /* elements of every span that is not persistent: the pool grows to twice that at
                                   most (placements that fragment it still find room at its end) */
    void *saved_base;           /* its pool of the model's size: the pool it stands in for, NULL: none */
    int64_t saved_elems;        /* the pool's own room for spans, restored at zero_release_params */
} zero__pool3;

typedef struct zero__run { /* where the training is: micro-batch, steps, loss scale, schedule */
    int micro;
    zero_loss_scaler scaler;
    int64_t global_steps, skipped_steps, applied_steps, sched_it;
    int64_t samples_base, samples_from; /* samples seen before global step samples_from (the batch size changed there) */
    float beta1_t, beta2_t;
    double last_b1, last_b2;
    double step_lr;                     /* this step's base learning rate */
    double prog_lr, prog_b1, prog_b2;   /* zero_set_lr / zero_set_betas (< 0: the config's schedule) */
    int prog_said;                      /* bits: 1 the program's lr, 2 its betas were announced (rank 0's info line) */
    int norm_ready;                     /* zero_grad_norm ran for this step: the norm phase is done */
    double norm_sumsq;                  /* ... its sum of squares (scaled) */
    int norm_bad_unit, norm_bad_tensor; /* ... and the first inf/nan */
    double t_phase[ZERO_PHASE_COUNT], t_backward_start;
} zero__run;

/* ZERO_TIMELINE (zero__tl_*): one optimizer step's streams timed. */
enum { ZERO__TL_COLL, ZERO__TL_WAIT, ZERO__TL_CALL };
typedef struct zero__tl_rec {
    int a, b;             /* its timed events, begin and end (-1: a host call, no event) */
    unsigned char kind;   /* ZERO__TL_* */
    unsigned char stream; /* the stream it ran on (a collective) or that waited */
    int unit, tensor;     /* what it was for (-1: nothing named) */
    const char *what;     /* the collective, the wait's reason, the call (static strings) */
    const char *api;      /* the public call under way (NULL: none) */
    double host_ms;       /* when the host issued it, from the window's start */
    double bytes;         /* a collective's buffer */
} zero__tl_rec;
typedef struct zero__timeline {
    int on;               /* ZERO_TIMELINE set and the backend times events */
    int active, done;     /* inside the window; the window is over */
    int full;             /* events or records ran out: the rest of the window not recorded */
    int64_t step;         /* the optimizer step timed (1: the first) */
    char path[ZERO_PATH_MAX];
    zero_event **ev;      /* ZERO__TL_EVENTS, created as the window needs them */
    double *ev_host;      /* when the host recorded each, from the window's start */
    int n_ev, n_made;
    zero__tl_rec *rec;
    int n_rec;
    double host0;
} zero__timeline;

typedef struct zero__observe { /* ZERO_DEBUG=1, check_collectives, the watchdog, jsonl_monitor, progress */
    int debug;                  /* log every collective */
    int check;                  /* check_collectives */
    int tr_kind, tr_unit;       /* the collective about to be issued (zero__coll_check names it) */
    const char *tr_api;         /* the public call under way, for collectives it did not announce */
    int64_t n_coll;             /* collectives issued */
    struct {
        pthread_mutex_t lock;
        pthread_cond_t cv;      /* wakes the thread to stop */
        pthread_t thread;
        int on, stop;           /* the watchdog thread runs; asked to stop */
        double threshold_s;     /* report a wait longer than this; 0: no watchdog */
        const char *what;       /* the blocking backend call under way, NULL: none */
        int kind, unit;         /* the collective it belongs to */
        const char *api;        /* the public call under way */
        double since_ms;
        int reports;            /* lines printed for this wait */
        int64_t step;
        int micro;
        int64_t n_coll;         /* collectives issued when the wait began */
    } wd;
    FILE *jsonl;                /* jsonl_monitor's file (rank 0) */
    FILE *tb;                   /* tensorboard's event file (rank 0) */
    char csv_dir[2 * ZERO_PATH_MAX + 2]; /* csv_monitor's directory (rank 0; "": off) */
    const char *csv_headed[12]; /* csv_monitor: the tags whose file this engine gave its header */
    int n_csv_headed;
    double loss;                /* zero_report_loss since the last step */
    int has_loss;
    double t_print_ms;          /* when the last progress line was (engine creation before the first) */
    double t_step_ms;           /* when the last zero_step returned (engine creation before the first) */
    int64_t steps_at_print;
    /* the print period */
    int64_t period_skipped;
    double period_scale_from;
    int period_first_unit, period_first_tensor;
} zero__observe;

typedef struct zero__opt_place { /* the optimizer strategy's state; which one runs is decided at create */
    int cpu;                    /* offload_optimizer "cpu" or "nvme": master, m, v on the host, Adam there */
    /* offload_optimizer.ratio < 1 (partial offload, stage 3, "cpu"): the
       trainable units whose own chunks begin below dev_elems (the first
       (int)((1 - ratio) x trainable units), DeepSpeed's rule for its
       sub-groups) keep master, m, v and their gradient accumulator on the
       device and step with the device's Adam (zero__unit_on_device) */
    int twin;
    int64_t dev_elems;
    /* early CPU step (offload "cpu" without clipping or an overflow check:
       nothing of the step waits for the global norm): on the last
       micro-batch the engine's thread steps each unit as soon as its gradient
       chunk has reached the host (event grad_on_host[u]), in the backward's
       order (queue early_queue) */
    int early, early_armed, early_closed;
    int *early_queue, early_head, early_tail;
    zero_event **grad_on_host;
    /* the overlapped CPU step (cfg.overlap_cpu_step): zero_step hands the
       units of trail_order (the next forward's fetch order) to the thread;
       trail_done of them are stepped (under thr.mu); trail_pos[u] is u's
       place in the order (-1: not in it) */
    int trail, trail_armed, trail_n, trail_done;
    int *trail_order, *trail_pos;
    /* Lamb (>>engine-adam): pass 1's sums of p^2 and u^2 per segment of
       plan.segs and pass 2's trust ratio per segment, where the optimizer
       runs (lamb_seg, lamb_ratio: the host's own arrays when that is the
       host) and on the host; the sums per tensor, on the host and where
       they are all-reduced */
    int lamb, n_lamb_segs;
    double *lamb_seg, *lamb_seg_host, *lamb_ten_dev, *lamb_ten_host;
    float *lamb_ratio, *lamb_ratio_host;
} zero__opt_place;

typedef struct zero__host_sum { /* plan.host_sum (>>engine-hsum) */
    int armed, closed;          /* the thread's job runs; no more chunks this step */
    int n_slot, next;           /* host slots of one unit's chunk (compute dtype), used in turn */
    void **slot;
    zero_event **ev;            /* a slot's copy from the device is done */
    int *busy;                  /* a slot's chunk is not yet added (under thr.mu) */
    int *q_unit, *q_slot, *q_set; /* the queue (n_slot entries, under thr.mu): unit, slot, first micro-batch */
    int head, tail;
} zero__host_sum;

/* The engine's CPU thread (>>engine-thread), started on first use by the
   strategies that step on it (early, overlapped, delayed): it runs one job
   at a time, with the step's hyperparameters h; a job's failure waits in
   err for the strategy that collects it. */
typedef void (*zero__thread_job)(zero_engine *e, zero_error *fail);
typedef struct zero__thread {
    int started, go, quit, sync;       /* running; a job handed over; stop; lock made */
    zero__thread_job job;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zero_adam_args h;                  /* the job's hyperparameters */
    zero_error err;                    /* the last job's result */
} zero__thread;

typedef struct zero__nvme_tiles { /* offload_optimizer "nvme" */
    /* master | m | v of each trainable unit's owned chunk in one tile of the
       backend's tile store (tile id = unit index); n_tbuf host buffers of
       tile_bytes cycle through read, Adam, write */
    int on;
    void *store;
    int n_tbuf;
    void **tbuf, **tbuf_rd, **tbuf_wr; /* buffers; their pending read / write requests */
    int *tile_units, n_tile_units;     /* trainable units with Adam work, in order (made at create) */
    size_t tile_bytes, nvme_bytes;
} zero__nvme_tiles;

typedef struct zero__param_offload { /* offload_param (stage 3) */
    /* the compute-dtype shard lives on the host (buf.params, param_kind) or,
       with "nvme", in one tile per unit of the tile store pstore, cached in
       n_pbuf host buffers. A gather copies the owned chunk into its place in
       the pool and all-gathers in place. Device Adam writes the new
       parameters into pstage (one unit's chunk on the device) before they go
       to the host. */
    int device;                        /* ZERO_OFFLOAD_NONE / CPU / NVME */
    zero_mem_kind param_kind;          /* where buf.params (the shard) lives */
    void *pstage;
    void *pstore;
    int n_pbuf;
    void **pbuf, **pbuf_req;           /* buffers; a pending read or write of each */
    int *pbuf_unit;                    /* unit whose chunk a buffer holds (-1: none) */
    unsigned char *pbuf_copying;       /* a copy out of it may still run on the comm stream */
    int64_t *pbuf_used, pbuf_clock;    /* last use, for eviction */
    size_t ptile_bytes;
} zero__param_offload;

typedef struct zero__delayed { /* offload_optimizer.delayed_param_update */
    /* the CPU Adam of a step runs on the engine's thread beside the next
       forward and backward; the staging pairs alternate (one read by that
       Adam, one filled by the backward) */
    int on;
    void *grad[2], *param[2];          /* staging pairs; buf.cpu_grad / buf.cpu_param point at one */
    int cur;                           /* the pair the backward fills now */
    int pending;                       /* a delayed Adam was started; its parameters are not on the device */
    void *dev;                         /* device staging of the new owned chunks (trainable shard, compute dtype) */
    int done_from, copied_from;        /* units >= these: stepped by the thread (it goes from the last unit
                                          down, the backward's order) / copied to dev (under thr.mu) */
} zero__delayed;

typedef struct zero__xfer { /* the step's copies between host and device (zero_step_info) */
    int phase;                                    /* ZERO_XFER_*: where the program is in the step */
    int64_t to_dev[ZERO_XFER_PHASE_COUNT], to_host[ZERO_XFER_PHASE_COUNT];
    int64_t comm[ZERO_GROUP_COUNT]; /* bytes the step's collectives send from this rank, per group */
    uintptr_t *lo, *hi;                           /* the engine's allocations */
    int outside_dev;                              /* memory outside them is device memory (the program's tensors) */
    unsigned char *dev;                           /* ... 1: device memory, 0: host (pinned or not) */
    int n, cap;
} zero__xfer;

/* Stage 3 behind the program's pointers (plan.pvm): the zero_alloc ranges
   the tensors' .data lie in, a count per page of the spans that hold it
   (a page shared by two layers, or by every layer's slice of a small
   stacked kind, is backed while any of them is), and the spans dropped from
   the pool whose pages stay backed a while: the last ZERO__PVM_PEND of them
   always (their readers may still run), older ones while the spans gathered
   and waiting fit the gather pool's elements (when every gathered unit lands
   in the program's memory the pool has no memory, and what it would have
   held keeps spans mapped instead, the same bytes up to each span's partial
   pages: a span fetched again soon costs no unmap, map and access call, each
   tens of microseconds). The oldest is unbacked first. None wait on the
   host backend. */
#ifndef ZERO__PVM_PEND
#define ZERO__PVM_PEND 8
#endif
typedef struct zero__pvm_reg {
    zero__vm_range *r;
    int32_t *ref; /* per granule: holds */
} zero__pvm_reg;
typedef struct zero__pvm {
    int n_reg, depth;          /* ranges; spans that wait whatever the budget (ZERO__PVM_PEND, or 0: unbacked at once) */
    zero__pvm_reg *reg;
    int *treg;                 /* per tensor: its range */
    unsigned char *held;       /* per span: its pages counted */
    int *pend, n_pend, n_pev;  /* dropped spans whose pages wait, oldest first (room for every span) */
    zero_event **pev;          /* each waiting span's compute and comm fences (n_pev events) */
    int64_t pend_elems;        /* their elements (span_padded) */
    int64_t budget;            /* elements the pool's resident spans and the waiting ones may have together (beyond
                                  the last depth, which always wait); 0 where the pool has memory of its own */
    int64_t backed, backed_peak; /* bytes of the ranges backed now, and the most since create's end */
    void **udst;               /* per unit: the program's address its all-gather writes, or NULL: into the pool, then copied */
    int dyn_direct;            /* every unit not persistent all-gathers into the program's memory: the pool's
                                  memory holds the persistent spans alone (none when they are direct too) */
    int all_direct;
    int started;               /* create's own hold on every page is gone */
    zero_error failed;         /* an unback that failed where no caller could hear it; the next call reports it */
} zero__pvm;

struct zero_engine {
    zero_config cfg;
    zero_backend be;
    zero__plan plan;
    zero__span_state *spans;   /* per span: shared by the gradient ring and the stage-3 pool */
    zero__buffers buf;
    zero__grad_ring grad;
    zero__pool3 pool;
    zero__run run;
    zero__observe obs;
    const zero__strategy *strat; /* the optimizer strategy (zero__strategy_pick) */
    zero__opt_place opt;
    zero__host_sum hsum;
    zero__thread thr;
    zero__nvme_tiles nvme;
    zero__param_offload offload_param;
    zero__delayed dpu;
    zero__xfer xfer;
    zero__pvm pvm;
    zero__timeline tl;
    struct {
        size_t planned[ZERO_MEM_CATEGORY_COUNT][ZERO_MEM_KIND_COUNT];
        size_t allocated[ZERO_MEM_KIND_COUNT];
    } mem;
    int broken;                /* a backend call failed: every later call is refused */
    zero_error err;
    zero__client *client;      /* the program's state for checkpoints (zero_client_put; >>ckpt-format); NULL: empty */
    struct zero_engine *next_live;
};

/* Live engines, so a call on a destroyed one is an error, not a crash. */
static pthread_mutex_t zero__live_lock = PTHREAD_MUTEX_INITIALIZER;

static zero_engine *zero__live_head;

/* The model's elements (no padding), all and trainable: the memory report and the metrics start line. */
static void zero__count_params(const zero_engine *e, zero_memory_stats *out) {
    int k;
    out->params = out->trainable_params = 0;
    for (k = 0; k < e->plan.n_tensors; k++) {
        out->params += e->plan.layout->numel[k];
        if (!(e->plan.tflags[k] & ZERO_TENSOR_FROZEN)) out->trainable_params += e->plan.layout->numel[k];
    }
}

static int zero__engine_live(const zero_engine *e) {
    zero_engine *p;
    int found = 0;
    if (!e) return 0;
    pthread_mutex_lock(&zero__live_lock);
    for (p = zero__live_head; p; p = p->next_live)
        if (p == e) {
            found = 1;
            break;
        }
    pthread_mutex_unlock(&zero__live_lock);
    return found;
}

static double zero__now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Record an engine error, log it, return its code. */
static zero_result zero__efail(zero_engine *e, zero_msg item, const char *fmt, ...) ZERO__PRINTF(3, 4);

static zero_result zero__efail(zero_engine *e, zero_msg item, const char *fmt, ...) {
    char text[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    zero__fail(&e->err, item, NULL, 0, 0, "%s", text);
    zero__log(&e->cfg.log, ZERO_LOG_ERROR, item, "%s", e->err.msg);
    return e->err.code;
}

/* A backend call failed: its error becomes the engine's; collectives may be
   out of step across ranks now, so the engine refuses further work. */
static zero_result zero__ebackend(zero_engine *e, zero_error *be_err, const char *what) {
    size_t wl = strlen(what), ml = strlen(be_err->msg), cap = sizeof e->err.msg - 1;
    e->err = *be_err;
    /* "what: backend message", cut to fit (memcpy: the parts are measured) */
    if (wl > cap) wl = cap;
    memcpy(e->err.msg, what, wl);
    if (wl + 2 <= cap) {
        memcpy(e->err.msg + wl, ": ", 2);
        wl += 2;
        if (ml > cap - wl) ml = cap - wl;
        memcpy(e->err.msg + wl, be_err->msg, ml);
        wl += ml;
    }
    e->err.msg[wl] = 0;
    e->broken = 1;
    zero__log(&e->cfg.log, ZERO_LOG_ERROR, be_err->item, "%s", e->err.msg);
    return be_err->code ? be_err->code : ZERO_ERR_STATE;
}

/* Run a backend call whose zero_error is be_err_; on failure leave with it. */
#define ZERO__TRY_BE(e, what, expr)                                 \
    do {                                                            \
        zero_error be_err_;                                         \
        zero__ok(&be_err_);                                         \
        if ((expr) != ZERO_OK) return zero__ebackend((e), &be_err_, (what)); \
    } while (0)

/* Entry check of every engine call. */
static zero_result zero__enter(zero_engine *e, const char *fn) {
    if (!zero__engine_live(e)) {
        zero_logger lg;
        memset(&lg, 0, sizeof lg);
        lg.rank = -1;
        lg.level = ZERO_LOG_INFO;
        if (!e) {
            zero__log(&lg, ZERO_LOG_ERROR, ZERO_MSG_NULL_ARG,
                      "%s: e is NULL (no engine: zero_engine_create failed or was not called)", fn);
            return ZERO_ERR_INVALID_ARG;
        }
        zero__log(&lg, ZERO_LOG_ERROR, ZERO_MSG_ENGINE_DESTROYED,
                  "%s: engine %p was destroyed or never created", fn, (const void *)e);
        return ZERO_ERR_STATE;
    }
    e->obs.tr_api = fn; /* collectives not announced by zero__coll_check are labelled by the call */
    e->obs.tr_kind = 0;
    e->obs.tr_unit = -1;
    if (e->broken)
        return zero__efail(e, ZERO_MSG_ENGINE_BROKEN, "%s: the engine stopped after an earlier failure: see the "
                                                      "first error\nHINT: destroy the engine; every rank must", fn);
    return ZERO_OK;
}

/* Address of element `elems` of a buffer of `esize`-byte elements. */
static char *zero__at(void *base, int64_t elems, size_t esize) {
    return (char *)base + (size_t)elems * esize;
}

/* Tensor pieces inside [lo, hi) of unit u, in unit coordinates. */
static int zero__unit_segments(const zero_layout *l, int u, int64_t lo, int64_t hi, zero__seg *out, int cap) {
    const zero_unit *x = &l->units[u];
    int i, n = 0;
    for (i = x->first_tensor; i <= x->last_tensor; i++) {
        const zero_tensor_place *pl = &l->places[i];
        int64_t t0, t1, tbase; /* tensor elements [t0, t1) in this unit start at unit offset tbase */
        if (l->piece[i]) {
            int k = u - pl->first_unit;
            t0 = (int64_t)k * l->piece[i];
            t1 = t0 + x->numel;
            tbase = 0;
        } else {
            t0 = 0;
            t1 = l->numel[i];
            tbase = pl->unit_offset;
        }
        {
            int64_t a0 = zero__max_i64(lo, tbase), a1 = zero__min_i64(hi, tbase + (t1 - t0));
            if (a1 > a0 && n < cap) {
                out[n].tensor = i;
                out[n].unit_off = a0;
                out[n].tensor_off = t0 + (a0 - tbase);
                out[n].count = a1 - a0;
                n++;
            }
        }
    }
    return n;
}

static int zero__span_of_tensor(const zero_engine *e, int t) {
    return e->plan.layout->units[e->plan.layout->places[t].first_unit].span;
}

static const char *zero__tname(const zero_engine *e, int t) { return e->plan.layout->names[t]; }

/* Stream `waiter` waits for all work queued so far on stream `from`. */
static zero_result zero__wait_on(zero_engine *e, zero_stream_id waiter, zero_event *ev, int unit, const char *why,
                                 zero_error *be); /* (engine-timeline) */

static zero_result zero__order(zero_engine *e, zero_stream_id from, zero_stream_id waiter, zero_event *ev) {
    zero_error be;
    zero__ok(&be);
    if (!ev) return ZERO_OK;
    if (e->be.event_record(e->be.ctx, ev, from, &be) != ZERO_OK ||
        zero__wait_on(e, waiter, ev, -1, waiter == ZERO_STREAM_COMPUTE ? "the communication stream" : "the compute stream",
                      &be) != ZERO_OK)
        return zero__ebackend(e, &be, "stream order");
    return ZERO_OK;
}

/* A range of the engine's memory and its side, in the table zero__copy
   counts host-device crossings by. */
static zero_result zero__xfer_add(zero_engine *e, const void *p, size_t bytes, int dev) {
    zero__xfer *x = &e->xfer;
    if (x->n == x->cap) {
        int cap = x->cap ? 2 * x->cap : 32;
        uintptr_t *lo = (uintptr_t *)ZERO_REALLOC(x->lo, sizeof(uintptr_t) * (size_t)cap);
        uintptr_t *hi = lo ? (uintptr_t *)ZERO_REALLOC(x->hi, sizeof(uintptr_t) * (size_t)cap) : NULL;
        unsigned char *d = hi ? (unsigned char *)ZERO_REALLOC(x->dev, (size_t)cap) : NULL;
        if (lo) x->lo = lo;
        if (hi) x->hi = hi;
        if (!lo || !hi || !d) return ZERO_ERR_OUT_OF_MEMORY;
        x->dev = d;
        x->cap = cap;
    }
    x->lo[x->n] = (uintptr_t)p;
    x->hi[x->n] = (uintptr_t)p + bytes;
    x->dev[x->n++] = (unsigned char)dev;
    return ZERO_OK;
}

static zero_result zero__ealloc(zero_engine *e, zero_mem_category cat, zero_mem_kind kind, size_t bytes,
                                void **out, const char *what) {
    zero_error be;
    zero__ok(&be);
    *out = NULL;
    e->mem.planned[cat][kind] += bytes;
    if (!bytes) return ZERO_OK;
    if (e->be.alloc(e->be.ctx, kind, bytes, out, &be) != ZERO_OK || !*out) {
        char text[700];
        snprintf(text, sizeof text, "%s (%.1f MiB)", what, (double)bytes / 1048576.0);
        if (!be.msg[0]) zero__fail(&be, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "allocation failed");
        zero__ebackend(e, &be, text);
        e->broken = 0;
        return e->err.code;
    }
    e->mem.allocated[kind] += bytes;
    if (zero__xfer_add(e, *out, bytes, kind == ZERO_MEM_DEVICE) != ZERO_OK) {
        e->be.free(e->be.ctx, kind, *out);
        e->mem.allocated[kind] -= bytes;
        *out = NULL;
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "%s: the table of allocations", what);
    }
    return ZERO_OK;
}

/* Where p lies: 1 in device memory the engine allocated, 0 in its host
   memory (pinned or not), -1 elsewhere (the program's memory, temporary
   buffers). */
static int zero__mem_side(const zero_engine *e, const void *p) {
    uintptr_t a = (uintptr_t)p;
    int i;
    for (i = 0; i < e->xfer.n; i++)
        if (a >= e->xfer.lo[i] && a < e->xfer.hi[i]) return e->xfer.dev[i];
    return -1;
}

/* The backend's copy, counted by direction and phase when it goes between
   the engine's host memory and its device memory (the program's tensors
   are device memory: a copy between them and engine host memory counts
   too). Host-to-host copies (temporary buffers at create) do not. */
static zero_result zero__copy(zero_engine *e, void *dst, const void *src, size_t bytes, zero_stream_id s, zero_error *err) {
    int sd = zero__mem_side(e, dst), ss = zero__mem_side(e, src);
    if (sd == 0 && (ss == 1 || (ss < 0 && e->xfer.outside_dev))) e->xfer.to_host[e->xfer.phase] += (int64_t)bytes;
    if (ss == 0 && (sd == 1 || (sd < 0 && e->xfer.outside_dev))) e->xfer.to_dev[e->xfer.phase] += (int64_t)bytes;
    return e->be.copy(e->be.ctx, dst, src, bytes, s, err);
}

static void zero__efree(zero_engine *e, zero_mem_kind kind, void *p) {
    if (p) e->be.free(e->be.ctx, kind, p);
}







/* ---- >>engine-timeline: ZERO_TIMELINE, one step's streams timed ----

   ZERO_TIMELINE=path times optimizer step ZERO_TIMELINE_STEP (default 3,
   counted from 1) on every rank, from the end of the step before to the end
   of that step, with the backend's timed events: each collective on its
   stream, each wait of one stream on the other (the compute stream's waits
   are the communication the step did not hide), and the program's calls on
   the host's clock. Written as a Chrome trace, path.rank<r>.json (Perfetto
   and chrome://tracing open it), with a summary line per rank. The events
   are recorded beside the engine's work; nothing else changes. */
#ifndef ZERO__TL_EVENTS
#define ZERO__TL_EVENTS 32768
#endif
#define ZERO__TL_PREMADE 4096

static zero_result zero__sync(zero_engine *e, zero_stream_id s, zero_error *err);
static int zero__ck_write_all(int fd, const void *buf, size_t n);

/* A timed event recorded on stream s now: its index, or -1 (no window, or
   it ran out of events: the rest of the window is not recorded). */
static int zero__tl_mark(zero_engine *e, zero_stream_id s) {
    zero__timeline *t = &e->tl;
    zero_error be;
    if (!t->active || t->full) return -1;
    zero__ok(&be);
    if (t->n_ev == ZERO__TL_EVENTS ||
        (t->n_ev == t->n_made && e->be.event_create_timed(e->be.ctx, &t->ev[t->n_made], &be) != ZERO_OK)) {
        t->full = 1;
        return -1;
    }
    if (t->n_ev == t->n_made) t->n_made++;
    if (e->be.event_record(e->be.ctx, t->ev[t->n_ev], s, &be) != ZERO_OK) {
        t->full = 1;
        return -1;
    }
    t->ev_host[t->n_ev] = zero__now_ms() - t->host0;
    return t->n_ev++;
}

static void zero__tl_add(zero_engine *e, int a, int b, int kind, zero_stream_id s, int unit, int tensor,
                         const char *what, double bytes) {
    zero__timeline *t = &e->tl;
    zero__tl_rec *x;
    if (!t->active || (kind != ZERO__TL_CALL && (a < 0 || b < 0))) return;
    if (t->n_rec == ZERO__TL_EVENTS) {
        t->full = 1;
        return;
    }
    x = &t->rec[t->n_rec++];
    x->a = a, x->b = b, x->kind = (unsigned char)kind, x->stream = (unsigned char)s;
    x->unit = unit, x->tensor = tensor, x->what = what, x->api = e->obs.tr_api, x->bytes = bytes;
    x->host_ms = a >= 0 ? t->ev_host[a] : zero__now_ms() - t->host0;
}

/* The end of a collective or a wait begun at mark a. */
static void zero__tl_close(zero_engine *e, int a, zero_stream_id s, int kind, int unit, const char *what, double bytes) {
    if (a >= 0) zero__tl_add(e, a, zero__tl_mark(e, s), kind, s, unit, -1, what, bytes);
}

/* A program's call, on the host's clock. */
static void zero__tl_call(zero_engine *e, const char *what, int tensor) {
    if (e->tl.active) zero__tl_add(e, -1, -1, ZERO__TL_CALL, ZERO_STREAM_COMPUTE, -1, tensor, what, 0);
}

/* Stream waiter waits for ev (a unit's, or -1), timed inside the window. */
static zero_result zero__wait_on(zero_engine *e, zero_stream_id waiter, zero_event *ev, int unit, const char *why,
                                 zero_error *be) {
    int a = zero__tl_mark(e, waiter);
    zero_result r = e->be.stream_wait(e->be.ctx, waiter, ev, be);
    zero__tl_close(e, a, waiter, ZERO__TL_WAIT, unit, why, 0);
    return r;
}

static void zero__tl_free(zero__timeline *t, zero_engine *e) {
    int i;
    for (i = 0; t->ev && i < t->n_made; i++) e->be.event_destroy(e->be.ctx, t->ev[i]);
    ZERO_FREE(t->ev);
    ZERO_FREE(t->ev_host);
    ZERO_FREE(t->rec);
    t->ev = NULL, t->ev_host = NULL, t->rec = NULL;
    t->n_ev = t->n_made = t->n_rec = 0;
    t->active = 0;
}

/* The window opens: the two streams' starts are events 0 and 1. */
static void zero__tl_begin(zero_engine *e) {
    zero__timeline *t = &e->tl;
    t->ev = (zero_event **)ZERO_MALLOC(sizeof(zero_event *) * ZERO__TL_EVENTS);
    t->ev_host = (double *)ZERO_MALLOC(sizeof(double) * ZERO__TL_EVENTS);
    t->rec = (zero__tl_rec *)ZERO_MALLOC(sizeof(zero__tl_rec) * ZERO__TL_EVENTS);
    if (!t->ev || !t->ev_host || !t->rec) {
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_TIMELINE, "ZERO_TIMELINE: no memory for %d events: no timeline",
                  ZERO__TL_EVENTS);
        zero__tl_free(t, e);
        t->on = 0;
        return;
    }
    /* most steps need fewer: made now, outside the timed work (more are made as needed) */
    while (t->n_made < ZERO__TL_PREMADE) {
        zero_error be;
        zero__ok(&be);
        if (e->be.event_create_timed(e->be.ctx, &t->ev[t->n_made], &be) != ZERO_OK) break;
        t->n_made++;
    }
    t->host0 = zero__now_ms();
    t->active = 1;
    if (zero__tl_mark(e, ZERO_STREAM_COMPUTE) != 0 || zero__tl_mark(e, ZERO_STREAM_COMM) != 1) {
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_TIMELINE,
                  "ZERO_TIMELINE: the backend could not make or record a timed event: no timeline");
        zero__tl_free(t, e);
        t->on = 0;
    }
}

/* A growing text, for the trace file. */
typedef struct zero__tl_text {
    char *p;
    size_t n, cap;
    int bad; /* out of memory */
} zero__tl_text;

static void zero__tl_put(zero__tl_text *x, const char *fmt, ...) ZERO__PRINTF(2, 3);
static void zero__tl_put(zero__tl_text *x, const char *fmt, ...) {
    va_list ap;
    int k;
    if (x->bad) return;
    for (;;) {
        va_start(ap, fmt);
        k = vsnprintf(x->p ? x->p + x->n : NULL, x->p ? x->cap - x->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            x->bad = 1;
            return;
        }
        if (x->p && (size_t)k < x->cap - x->n) {
            x->n += (size_t)k;
            return;
        }
        {
            size_t cap = x->cap ? 2 * x->cap : 1 << 16;
            char *q;
            while (cap < x->n + (size_t)k + 1) cap *= 2;
            if (!(q = (char *)ZERO_REALLOC(x->p, cap))) {
                x->bad = 1;
                return;
            }
            x->p = q, x->cap = cap;
        }
    }
}

/* s inside a JSON string: quotes, backslashes and control bytes escaped. */
static void zero__tl_esc(zero__tl_text *x, const char *s) {
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') zero__tl_put(x, "\\%c", c);
        else if (c < 0x20) zero__tl_put(x, "\\u%04x", c);
        else zero__tl_put(x, "%c", c);
    }
}

/* The name a record carries: its operation or reason, and its tensor. */
static const char *zero__tl_tensor(const zero_engine *e, const zero__tl_rec *r) {
    if (r->tensor >= 0 && r->tensor < e->plan.n_tensors) return zero__tname(e, r->tensor);
    if (r->unit >= 0 && r->unit < e->plan.n_units) return zero__tname(e, e->plan.layout->units[r->unit].first_tensor);
    return NULL;
}

/* The window closes at zero_step's end: both streams drained, every event
   timed from the compute stream's start, the trace written (a new file
   beside the path, renamed onto it), a summary line. */
static void zero__tl_end(zero_engine *e) {
    zero__timeline *t = &e->tl;
    int end_c = zero__tl_mark(e, ZERO_STREAM_COMPUTE), end_m = zero__tl_mark(e, ZERO_STREAM_COMM), i, fd;
    double *at = NULL, t0 = 0, span = 0, busy[3] = {0, 0, 0}, waited[2] = {0, 0}, gathers_waited = 0;
    int n_coll[3] = {0, 0, 0};
    static const char *const coll[3] = {"all-gather", "reduce-scatter", "all-reduce"};
    char path[ZERO_PATH_MAX + 32], tmp[ZERO_PATH_MAX + 96];
    zero__tl_text x;
    zero_error be;
    memset(&x, 0, sizeof x);
    zero__ok(&be);
    t->active = 0;
    t->done = 1;
    if (zero__sync(e, ZERO_STREAM_COMPUTE, &be) != ZERO_OK || zero__sync(e, ZERO_STREAM_COMM, &be) != ZERO_OK ||
        !(at = (double *)ZERO_MALLOC(sizeof(double) * (size_t)(t->n_ev + 1)))) {
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_TIMELINE, "ZERO_TIMELINE: step %lld not written: %s",
                  (long long)t->step, at ? be.msg : "no memory");
        goto out;
    }
    for (i = 0; i < t->n_ev; i++)
        if (e->be.event_elapsed(e->be.ctx, t->ev[0], t->ev[i], &at[i], &be) != ZERO_OK) {
            zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_TIMELINE, "ZERO_TIMELINE: step %lld not written: %s",
                      (long long)t->step, be.msg);
            goto out;
        }
    for (i = 0; i < t->n_ev; i++) t0 = at[i] < t0 ? at[i] : t0; /* (the other stream may have started first) */
    for (i = 0; i < t->n_ev; i++) span = at[i] - t0 > span ? at[i] - t0 : span;
    if (end_c >= 0) span = at[end_c] - t0;
    zero__tl_put(&x, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"step\": %lld, \"rank\": %d, \"world\": %d, "
                     "\"stage\": %d, \"complete\": %s, \"compute_end_ms\": %.3f, \"communication_end_ms\": %.3f},\n"
                     "\"traceEvents\": [\n",
                 (long long)t->step, e->plan.grank, e->plan.gworld, e->plan.stage, t->full ? "false" : "true",
                 end_c >= 0 ? at[end_c] - t0 : -1.0, end_m >= 0 ? at[end_m] - t0 : -1.0);
    zero__tl_put(&x, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}},\n",
                 e->plan.grank, e->plan.grank);
    zero__tl_put(&x, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"compute "
                     "stream: its waits\"}},\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": 1, \"args\": "
                     "{\"name\": \"communication stream\"}},\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, "
                     "\"tid\": 2, \"args\": {\"name\": \"host: the program's calls (its own clock)\"}}",
                 e->plan.grank, e->plan.grank, e->plan.grank);
    for (i = 0; i < t->n_rec; i++) {
        const zero__tl_rec *r = &t->rec[i];
        const char *name = zero__tl_tensor(e, r);
        zero__tl_put(&x, ",\n{\"pid\": %d, ", e->plan.grank);
        if (r->kind == ZERO__TL_CALL) {
            zero__tl_put(&x, "\"tid\": 2, \"ph\": \"i\", \"s\": \"t\", \"cat\": \"call\", \"ts\": %.3f, ", 1e3 * r->host_ms);
        } else {
            double d = at[r->b] - at[r->a];
            int k;
            zero__tl_put(&x, "\"tid\": %d, \"ph\": \"X\", \"cat\": \"%s\", \"ts\": %.3f, \"dur\": %.3f, ",
                         r->stream == ZERO_STREAM_COMM, r->kind == ZERO__TL_COLL ? "collective" : "wait",
                         1e3 * (at[r->a] - t0), 1e3 * d);
            if (r->kind == ZERO__TL_WAIT) {
                waited[r->stream == ZERO_STREAM_COMM] += d;
                if (r->stream == ZERO_STREAM_COMPUTE && r->unit >= 0) gathers_waited += d;
            }
            for (k = 0; r->kind == ZERO__TL_COLL && k < 3; k++)
                if (!strcmp(r->what, coll[k])) busy[k] += d, n_coll[k]++;
        }
        zero__tl_put(&x, "\"name\": \"%s", r->kind == ZERO__TL_WAIT ? "waits for " : "");
        zero__tl_esc(&x, r->what);
        if (name) zero__tl_put(&x, " "), zero__tl_esc(&x, name);
        zero__tl_put(&x, "\", \"args\": {\"issued_ms\": %.3f", r->host_ms);
        if (r->kind == ZERO__TL_COLL) zero__tl_put(&x, ", \"bytes\": %.0f", r->bytes);
        if (r->api) zero__tl_put(&x, ", \"api\": \""), zero__tl_esc(&x, r->api), zero__tl_put(&x, "\"");
        zero__tl_put(&x, "}}");
    }
    zero__tl_put(&x, "\n]}\n");
    if (x.bad) {
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_TIMELINE, "ZERO_TIMELINE: step %lld not written: no memory "
                  "for the trace", (long long)t->step);
        goto out;
    }
    snprintf(path, sizeof path, "%s.rank%d.json", t->path, e->plan.grank);
    fd = zero__open_tmp(path, tmp, sizeof tmp, &be);
    if (fd < 0 || !zero__ck_write_all(fd, x.p, x.n) || close(fd) != 0 || rename(tmp, path) != 0) {
        const char *why = fd < 0 ? be.msg : strerror(errno);
        if (fd >= 0) unlink(tmp);
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_TIMELINE, "ZERO_TIMELINE: %s not written: %s", path, why);
        goto out;
    }
    zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_TIMELINE,
              "ZERO_TIMELINE: step %lld, rank %d: %.2f ms on the compute stream; the communication stream busy %.2f ms "
              "(%s %.2f ms in %d, %s %.2f ms in %d, %s %.2f ms in %d); the compute stream waited %.2f ms for it (stage-3 "
              "gathers %.2f ms), the communication stream %.2f ms for compute%s; %s",
              (long long)t->step, e->plan.grank, span, busy[0] + busy[1] + busy[2], coll[0], busy[0], n_coll[0], coll[1],
              busy[1], n_coll[1], coll[2], busy[2], n_coll[2], waited[0], gathers_waited, waited[1],
              t->full ? " (events ran out: the step's end not recorded)" : "", path);
out:
    ZERO_FREE(at);
    ZERO_FREE(x.p);
    zero__tl_free(t, e);
}

/* At zero_step's end (applied or skipped): the window opens after step
   `step - 1` and closes after step `step`. */
static void zero__tl_step(zero_engine *e) {
    zero__timeline *t = &e->tl;
    if (!t->on || t->done) return;
    if (t->active && e->run.global_steps >= t->step) zero__tl_end(e);
    else if (!t->active && e->run.global_steps == t->step - 1) zero__tl_begin(e);
}

/* At zero_engine_create: ZERO_TIMELINE and ZERO_TIMELINE_STEP read. */
static void zero__tl_start(zero_engine *e) {
    const char *p = getenv("ZERO_TIMELINE"), *s = getenv("ZERO_TIMELINE_STEP");
    zero__timeline *t = &e->tl;
    memset(t, 0, sizeof *t);
    if (!p || !*p) return;
    t->step = 3;
    if (s && *s) {
        char *end;
        long long k = strtoll(s, &end, 10);
        if (end == s || *end || k < 1)
            zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID,
                      "ZERO_TIMELINE_STEP=%s: not a step number (1, 2, ...), ignored (the timeline times step 3)", s);
        else
            t->step = k;
    }
    if (strlen(p) >= sizeof t->path) {
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID, "ZERO_TIMELINE: a path of %zu bytes (at most %zu): "
                  "no timeline", strlen(p), sizeof t->path - 1);
        return;
    }
    if (!e->be.event_create_timed || !e->be.event_elapsed) {
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_TIMELINE,
                  "ZERO_TIMELINE: the %s backend cannot time events (event_create_timed, event_elapsed): no timeline",
                  e->be.name ? e->be.name : "program's");
        return;
    }
    snprintf(t->path, sizeof t->path, "%s", p);
    t->on = 1;
    if (t->step == 1) zero__tl_begin(e);
}

/* ---- >>engine-observe: collectives and waits in one place: debug log, watchdog, checks ----

   ZERO_DEBUG=1: every collective the engine issues is logged on every rank
   (debug level): its number, kind, unit and tensors, bytes, dtype, stream.
   The watchdog (ZERO_WATCHDOG_S seconds, default 60; 0 turns it off): a
   thread that notices when the engine has been blocked longer than that in
   one backend call (a collective, which blocks on host ranks, or a sync,
   which blocks on GPUs) and logs, as a warning on that rank, what it waits
   on: the collective's kind and unit, the step and micro-batch. Every rank
   that waits says so, so the rank that does not is the one to look at. The
   wait goes on (the backend's own timeout, ZERO_TIMEOUT_S, still ends it).
   jsonl_monitor: one JSON object per step, rank 0 (zero__metrics_line). */

/* check_collectives: before each collective the ranks agree on what comes
   (kind, unit, step) with one all-reduce (max of tag and of -tag); a rank
   that skipped or added a collective shows up here, named, instead of
   deadlocking or mixing data in the collective itself. */
enum { ZERO__C_INIT = 1, ZERO__C_FETCH, ZERO__C_REDUCE, ZERO__C_NORM, ZERO__C_GATHER, ZERO__C_READ };

static const char *const zero__c_names[] = {"?", "the initial all_gather", "a stage-3 fetch (all_gather)",
                                            "the gradient reduction", "the norm all_reduce",
                                            "the post-step all_gather", "zero_read_state's all_gather"};

static double zero__obs_dsize(zero_dtype dt) {
    return dt == (zero_dtype)ZERO__DTYPE_F64 ? 8.0 : (double)zero_dtype_size(dt);
}

/* "unit 17 (h.8.attn.c_attn.weight .. h.8.mlp.c_proj.bias)" or "no unit" */
static void zero__obs_unit(const zero_engine *e, int unit, char *buf, size_t cap) {
    const zero_unit *u = unit >= 0 && unit < e->plan.n_units ? zero_layout_unit(e->plan.layout, unit) : NULL;
    if (!u) snprintf(buf, cap, "no unit");
    else if (u->first_tensor == u->last_tensor)
        snprintf(buf, cap, "unit %d (%s)", unit, zero__tname(e, u->first_tensor));
    else
        snprintf(buf, cap, "unit %d (%s .. %s)", unit, zero__tname(e, u->first_tensor), zero__tname(e, u->last_tensor));
}

/* A line that ZERO_DEBUG asked for: debug level, past the logger's level filter */
static ZERO__UNUSED void zero__dlog(zero_engine *e, const char *fmt, ...) ZERO__PRINTF(2, 3);

static void zero__dlog(zero_engine *e, const char *fmt, ...) {
    char text[1024];
    va_list ap;
    const zero_logger *lg = &e->cfg.log;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    (lg->fn ? lg->fn : zero_log_default)(lg->user, ZERO_LOG_DEBUG, ZERO_MSG_ENGINE_COLLECTIVE, e->plan.grank, text);
}

static void zero__wait_begin(zero_engine *e, const char *what) {
    if (e->obs.wd.threshold_s <= 0) return;
    pthread_mutex_lock(&e->obs.wd.lock);
    e->obs.wd.what = what;
    e->obs.wd.kind = e->obs.tr_kind;
    e->obs.wd.unit = e->obs.tr_unit;
    e->obs.wd.api = e->obs.tr_api ? e->obs.tr_api : "zero_engine_create";
    e->obs.wd.since_ms = zero__now_ms();
    e->obs.wd.reports = 0;
    e->obs.wd.step = e->run.global_steps;
    e->obs.wd.micro = e->run.micro;
    e->obs.wd.n_coll = e->obs.n_coll;
    pthread_mutex_unlock(&e->obs.wd.lock);
}

static void zero__wait_end(zero_engine *e) {
    if (e->obs.wd.threshold_s <= 0) return;
    pthread_mutex_lock(&e->obs.wd.lock);
    e->obs.wd.what = NULL;
    pthread_mutex_unlock(&e->obs.wd.lock);
}

/* Every collective and host wait of the engine goes through these (the
   backend's own functions otherwise). In a world of one an in-place
   collective leaves its buffer as it is and is not handed to the backend:
   NCCL runs even a one-rank AVG as a kernel that multiplies by 1 over the
   whole buffer (a read and a write of every gradient at stages 0-1). */
static void zero__coll_log(zero_engine *e, const char *op, size_t count, zero_dtype dt, zero_stream_id s) {
    char unit[320];
    e->obs.n_coll++;
    if (!e->obs.debug) return;
    zero__obs_unit(e, e->obs.tr_unit, unit, sizeof unit);
    zero__dlog(e, "collective #%lld: %s of %s for %s: %zu elements (%.0f bytes) of %s on the %s stream; step %lld, "
                  "micro-batch %d",
               (long long)e->obs.n_coll, op, unit,
               e->obs.tr_kind >= 1 && e->obs.tr_kind <= 6 ? zero__c_names[e->obs.tr_kind] : e->obs.tr_api ? e->obs.tr_api : "?",
               count, (double)count * zero__obs_dsize(dt),
               dt == (zero_dtype)ZERO__DTYPE_F64 ? "f64" : zero_dtype_name(dt),
               s == ZERO_STREAM_COMM ? "communication" : "compute", (long long)e->run.global_steps, e->run.micro);
}

static zero_result zero__sync(zero_engine *e, zero_stream_id s, zero_error *err) {
    zero_result r;
    zero__wait_begin(e, s == ZERO_STREAM_COMM ? "a sync of the communication stream" : "a sync of the compute stream");
    r = e->be.sync(e->be.ctx, s, err);
    zero__wait_end(e);
    return r;
}

/* The group a collective of the engine runs over, as the backend sees it:
   flat sharding has one group, the world. */
static zero_group zero__grp(const zero_engine *e, zero_group g) {
    return e->plan.hybrid ? g : ZERO_GROUP_WORLD;
}
static int zero__grp_size(const zero_engine *e, zero_group g) {
    if (g == ZERO_GROUP_WORLD) return e->plan.gworld;
    return g == ZERO_GROUP_SHARD ? e->plan.world : e->plan.gworld / e->plan.world; /* (flat: the replicas are 1) */
}

/* bytes a ring collective of n ranks sends from each: (n - 1) / n of the buffer, twice for an all-reduce */
static void zero__coll_count(zero_engine *e, zero_group g, double buffer_bytes, int twice) {
    int n = zero__grp_size(e, g);
    if (n > 1) e->xfer.comm[zero__grp(e, g)] += (int64_t)(buffer_bytes * (n - 1) / n * (twice ? 2 : 1));
}

/* reduce-scatter and all-gather run over the shard group (the world when flat) */
static zero_result zero__reduce_scatter(zero_engine *e, const void *send, void *recv, size_t count, zero_dtype dt,
                                        zero_op op, zero_stream_id s, zero_error *err) {
    zero_result r;
    int a;
    zero__coll_log(e, "reduce-scatter", count * (size_t)e->plan.world, dt, s);
    if (e->plan.world == 1 && send == recv) return ZERO_OK;
    zero__coll_count(e, ZERO_GROUP_SHARD, (double)count * e->plan.world * zero__obs_dsize(dt), 0);
    zero__wait_begin(e, "a reduce-scatter");
    a = zero__tl_mark(e, s);
    r = e->plan.hybrid ? e->be.group_reduce_scatter(e->be.ctx, ZERO_GROUP_SHARD, send, recv, count, dt, op, s, err)
                       : e->be.reduce_scatter(e->be.ctx, send, recv, count, dt, op, s, err);
    zero__tl_close(e, a, s, ZERO__TL_COLL, e->obs.tr_unit, "reduce-scatter", (double)count * e->plan.world * zero__obs_dsize(dt));
    zero__wait_end(e);
    return r;
}

static zero_result zero__all_gather(zero_engine *e, const void *send, void *recv, size_t count, zero_dtype dt,
                                    zero_stream_id s, zero_error *err) {
    zero_result r;
    int a;
    zero__coll_log(e, "all-gather", count * (size_t)e->plan.world, dt, s);
    if (e->plan.world == 1 && send == recv) return ZERO_OK;
    zero__coll_count(e, ZERO_GROUP_SHARD, (double)count * e->plan.world * zero__obs_dsize(dt), 0);
    zero__wait_begin(e, "an all-gather");
    a = zero__tl_mark(e, s);
    r = e->plan.hybrid ? e->be.group_all_gather(e->be.ctx, ZERO_GROUP_SHARD, send, recv, count, dt, s, err)
                       : e->be.all_gather(e->be.ctx, send, recv, count, dt, s, err);
    zero__tl_close(e, a, s, ZERO__TL_COLL, e->obs.tr_unit, "all-gather", (double)count * e->plan.world * zero__obs_dsize(dt));
    zero__wait_end(e);
    return r;
}

/* all-reduce over group g: ZERO_GROUP_WORLD (agreements, the program's
   scalars), _SHARD (the statistics of the shard's chunks), _REPLICA (a
   reduced chunk over the groups that hold it) */
static zero_result zero__all_reduce_in(zero_engine *e, zero_group g, const void *send, void *recv, size_t count,
                                       zero_dtype dt, zero_op op, zero_stream_id s, zero_error *err) {
    zero_result r;
    int a;
    zero__coll_log(e, g == ZERO_GROUP_REPLICA ? "all-reduce across the groups" : "all-reduce", count, dt, s);
    if (zero__grp_size(e, g) == 1 && send == recv) return ZERO_OK;
    zero__coll_count(e, g, (double)count * zero__obs_dsize(dt), 1);
    zero__wait_begin(e, "an all-reduce");
    a = zero__tl_mark(e, s);
    r = zero__grp(e, g) != ZERO_GROUP_WORLD ? e->be.group_all_reduce(e->be.ctx, g, send, recv, count, dt, op, s, err)
                                            : e->be.all_reduce(e->be.ctx, send, recv, count, dt, op, s, err);
    zero__tl_close(e, a, s, ZERO__TL_COLL, e->obs.tr_unit, "all-reduce", (double)count * zero__obs_dsize(dt));
    zero__wait_end(e);
    return r;
}

static zero_result zero__all_reduce(zero_engine *e, const void *send, void *recv, size_t count, zero_dtype dt,
                                    zero_op op, zero_stream_id s, zero_error *err) {
    return zero__all_reduce_in(e, ZERO_GROUP_WORLD, send, recv, count, dt, op, s, err);
}

static void *zero__watchdog_main(void *arg) {
    zero_engine *e = (zero_engine *)arg;
    pthread_mutex_lock(&e->obs.wd.lock);
    while (!e->obs.wd.stop) {
        struct timespec ts;
        double waited = e->obs.wd.what ? (zero__now_ms() - e->obs.wd.since_ms) / 1000.0 : 0;
        if (e->obs.wd.what && waited >= e->obs.wd.threshold_s * (e->obs.wd.reports + 1)) {
            char unit[320], text[900];
            zero__obs_unit(e, e->obs.wd.unit, unit, sizeof unit);
            snprintf(text, sizeof text,
                     "watchdog: waiting %.1f s in %s for %s of %s (step %lld, micro-batch %d; %lld collectives issued "
                     "so far). Every rank that waits logs this line: a rank that names another unit, or none, is "
                     "where to look (ZERO_DEBUG=1 logs each collective)",
                     waited, e->obs.wd.what, e->obs.wd.kind >= 1 && e->obs.wd.kind <= 6 ? zero__c_names[e->obs.wd.kind] : e->obs.wd.api,
                     unit, (long long)e->obs.wd.step, e->obs.wd.micro, (long long)e->obs.wd.n_coll);
            e->obs.wd.reports++;
            pthread_mutex_unlock(&e->obs.wd.lock);
            zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_WATCHDOG, "%s", text);
            pthread_mutex_lock(&e->obs.wd.lock);
            continue;
        }
        zero__host_deadline(0.1, &ts);
        pthread_cond_timedwait(&e->obs.wd.cv, &e->obs.wd.lock, &ts);
    }
    pthread_mutex_unlock(&e->obs.wd.lock);
    return NULL;
}

/* ---- tensorboard and csv_monitor (rank 0), DeepSpeed's monitors without
   a dependency ----

   tensorboard: <output_path>/<job_name>/events.out.tfevents.<time>.zero.<pid>.0,
   the event-file format TensorBoard reads: records of an 8-byte length, its
   masked CRC-32C, the data, the data's masked CRC-32C, each a serialized
   Event protobuf (wall_time: field 1 double; step: 2 varint; file_version: 3
   string, the first record "brain.Event:2"; summary: 5, values of a tag
   (field 1) and a float simple_value (field 2)). csv_monitor: DeepSpeed's
   layout, one file per tag (its '/' and ' ' made '_'), <tag>.csv, a header
   "step,<the tag's last part>" the first time this engine writes it, then
   "step,value" rows. Both take DeepSpeed's step, the samples seen
   (global_steps x train_batch_size), and its tag names (Train/Samples/...),
   with zero's own scalars beside (zero__monitor_tags). A failed write
   warns once and stops that monitor; training goes on. */

static uint32_t zero__crc32c(uint32_t crc, const void *data, size_t n); /* (ckpt-format) */

/* TFRecord's CRC: CRC-32C rotated right by 15 plus a constant */
static uint32_t zero__tf_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

static size_t zero__pb_varint(unsigned char *p, uint64_t v) {
    size_t n = 0;
    do {
        p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static size_t zero__pb_fixed(unsigned char *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
    return (size_t)bytes;
}

/* An Event (field numbers above) into p (room for 64 + the values' bytes):
   wall_time, step, and either the file_version or a summary of n tagged
   floats. Returns its length. */
static size_t zero__tf_event(unsigned char *p, double wall, int64_t step, const char *version, const char *const *tags,
                             const double *vals, int n) {
    size_t k = 0, s, i;
    uint64_t bits;
    int j;
    memcpy(&bits, &wall, 8);
    p[k++] = 0x09; /* 1, fixed64 */
    k += zero__pb_fixed(p + k, bits, 8);
    p[k++] = 0x10; /* 2, varint */
    k += zero__pb_varint(p + k, (uint64_t)step);
    if (version) {
        s = strlen(version);
        p[k++] = 0x1a; /* 3, bytes */
        k += zero__pb_varint(p + k, s);
        memcpy(p + k, version, s);
        return k + s;
    }
    for (s = 0, j = 0; j < n; j++) s += 2 + (2 + strlen(tags[j])) + 5; /* each Value: tag, length, its fields */
    p[k++] = 0x2a; /* 5, bytes: the Summary */
    k += zero__pb_varint(p + k, s);
    for (j = 0; j < n; j++) {
        float f = (float)vals[j];
        uint32_t fb;
        size_t tl = strlen(tags[j]);
        memcpy(&fb, &f, 4);
        p[k++] = 0x0a; /* Summary.value: 1, bytes */
        p[k++] = (unsigned char)(2 + tl + 5);
        p[k++] = 0x0a; /* Value.tag: 1, bytes */
        p[k++] = (unsigned char)tl;
        for (i = 0; i < tl; i++) p[k++] = (unsigned char)tags[j][i];
        p[k++] = 0x15; /* Value.simple_value: 2, fixed32 */
        k += zero__pb_fixed(p + k, fb, 4);
    }
    return k;
}

/* One record around data: 0 on success */
static int zero__tf_record(FILE *f, const unsigned char *data, size_t n) {
    unsigned char h[12], t[4];
    uint32_t c;
    zero__pb_fixed(h, n, 8);
    c = zero__tf_mask(zero__crc32c(0, h, 8));
    zero__pb_fixed(h + 8, c, 4);
    zero__pb_fixed(t, zero__tf_mask(zero__crc32c(0, data, n)), 4);
    return fwrite(h, 1, 12, f) != 12 || fwrite(data, 1, n, f) != n || fwrite(t, 1, 4, f) != 4 || fflush(f) != 0;
}

/* The directory <output_path>/<job_name>, made as DeepSpeed's makedirs does
   (every missing level; what exists must be a directory). 0 on success. */
static int zero__monitor_dir(const zero_monitor_config *m, char *dir, size_t cap, zero_error *err) {
    size_t i, n;
    int len = snprintf(dir, cap, "%s%s%s", m->output_path, m->output_path[0] ? "/" : "", m->job_name);
    if (len < 0 || (size_t)len >= cap || !m->job_name[0]) {
        zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "'%s' / '%s': an empty job_name or a path too long", m->output_path,
                   m->job_name);
        return -1;
    }
    n = (size_t)len;
    for (i = 1; i <= n; i++) {
        if (dir[i] != '/' && dir[i] != 0) continue;
        {
            char c = dir[i];
            struct stat sb;
            dir[i] = 0;
            if (mkdir(dir, 0755) != 0 && (errno != EEXIST || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
                zero__fail(err, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "%s: %s", dir,
                           errno == EEXIST ? "exists and is not a directory" : strerror(errno));
                dir[i] = c;
                return -1;
            }
            dir[i] = c;
        }
    }
    return 0;
}

/* At zero_engine_create, rank 0: the monitors the config enables */
static zero_result zero__monitors_open(zero_engine *e) {
    char dir[2 * ZERO_PATH_MAX + 2], path[2 * ZERO_PATH_MAX + 96];
    zero_error fe;
    zero__ok(&fe);
    if (e->cfg.tensorboard.enabled == 1) {
        unsigned char ev[64];
        int fd;
        if (zero__monitor_dir(&e->cfg.tensorboard, dir, sizeof dir, &fe) != 0)
            return zero__efail(e, ZERO_MSG_ENGINE_METRICS, "tensorboard: %s", fe.msg);
        snprintf(path, sizeof path, "%s/events.out.tfevents.%010lld.zero.%ld.0", dir, (long long)time(NULL), (long)getpid());
        fd = zero__open_write(path, O_APPEND, &fe);
        if (fd >= 0) close(fd);
        if (fd < 0 || !(e->obs.tb = fopen(path, "ab")))
            return zero__efail(e, ZERO_MSG_ENGINE_METRICS, "tensorboard: cannot open %s for appending: %s", path,
                               fd < 0 ? fe.msg : strerror(errno));
        if (zero__tf_record(e->obs.tb, ev, zero__tf_event(ev, zero__now_ms() / 1000.0, 0, "brain.Event:2", NULL, NULL, 0)))
            return zero__efail(e, ZERO_MSG_ENGINE_METRICS, "tensorboard: writing %s: %s", path, strerror(errno));
    }
    if (e->cfg.csv_monitor.enabled == 1) {
        if (zero__monitor_dir(&e->cfg.csv_monitor, e->obs.csv_dir, sizeof e->obs.csv_dir, &fe) != 0)
            return zero__efail(e, ZERO_MSG_ENGINE_METRICS, "csv_monitor: %s", fe.msg);
    }
    return ZERO_OK;
}

enum { ZERO__MON_TAGS = 12 };

/* The step's scalars: DeepSpeed's Train/Samples tags (train_loss when the
   program reported one, lr, loss_scale with fp16, the elapsed_time_ms_*
   of wall_clock_breakdown), then zero's own (grad norm, skipped steps,
   samples/s, device memory allocated). Returns how many. */
static int zero__monitor_tags(const zero_engine *e, const zero_step_info *in, double samples_per_s, const char **tags,
                              double *vals) {
    int n = 0;
    zero_memory_stats ms;
#define ZERO__MON(t, v) (tags[n] = "Train/Samples/" t, vals[n++] = (v))
    if (e->obs.has_loss) ZERO__MON("train_loss", e->obs.loss);
    ZERO__MON("lr", in->lr);
    if (e->plan.cdt == ZERO_DTYPE_FP16) ZERO__MON("loss_scale", in->loss_scale);
    if (e->cfg.wall_clock_breakdown == 1) {
        ZERO__MON("elapsed_time_ms_backward", in->time_ms[ZERO_PHASE_BACKWARD]);
        ZERO__MON("elapsed_time_ms_backward_allreduce", in->time_ms[ZERO_PHASE_REDUCE]);
        ZERO__MON("elapsed_time_ms_step", in->time_ms[ZERO_PHASE_STEP]);
    }
    ZERO__MON("grad_norm", in->grad_norm);
    ZERO__MON("skipped_steps", (double)in->skipped_steps);
    if (samples_per_s > 0) ZERO__MON("samples_per_sec", samples_per_s);
    memset(&ms, 0, sizeof ms);
    if (zero_memory_report(e, &ms) == ZERO_OK) ZERO__MON("device_memory_bytes", (double)ms.allocated[ZERO_MEM_DEVICE]);
#undef ZERO__MON
    return n;
}

/* A monitor's write failed: one warning, that monitor stops */
static void zero__monitor_lost(zero_engine *e, const char *which, const char *path) {
    zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_METRICS, "%s: writing %s failed (%s); it stops here, training goes on",
              which, path, strerror(errno));
}

/* The step just made, to every open monitor (rank 0) */
static void zero__monitors_write(zero_engine *e, const zero_step_info *in, double samples_per_s) {
    const char *tags[ZERO__MON_TAGS];
    double vals[ZERO__MON_TAGS];
    int n, i;
    int64_t samples = e->run.samples_base + (in->global_steps - e->run.samples_from) * e->cfg.train_batch_size;
    if (!e->obs.tb && !e->obs.csv_dir[0]) return;
    n = zero__monitor_tags(e, in, samples_per_s, tags, vals);
    if (e->obs.tb) {
        unsigned char ev[64 + ZERO__MON_TAGS * 64];
        if (zero__tf_record(e->obs.tb, ev, zero__tf_event(ev, zero__now_ms() / 1000.0, samples, NULL, tags, vals, n))) {
            zero__monitor_lost(e, "tensorboard", "its event file");
            fclose(e->obs.tb);
            e->obs.tb = NULL;
        }
    }
    for (i = 0; i < n && e->obs.csv_dir[0]; i++) {
        char path[sizeof e->obs.csv_dir + 64], *q;
        const char *last = strrchr(tags[i], '/');
        zero_error fe;
        int fd, fail, h;
        FILE *f;
        snprintf(path, sizeof path, "%s/%s.csv", e->obs.csv_dir, tags[i]);
        for (q = path + strlen(e->obs.csv_dir) + 1; *q; q++)
            if (*q == '/' || *q == ' ') *q = '_';
        fd = zero__open_write(path, O_APPEND, &fe);
        if (fd >= 0) close(fd);
        f = fd >= 0 ? fopen(path, "a") : NULL;
        fail = !f;
        for (h = 0; h < e->obs.n_csv_headed && strcmp(e->obs.csv_headed[h], tags[i]); h++) {
        }
        if (f && h == e->obs.n_csv_headed && fprintf(f, "step,%s\n", last ? last + 1 : tags[i]) < 0) fail = 1;
        if (f && fprintf(f, "%lld,%.9g\n", (long long)samples, vals[i]) < 0) fail = 1;
        if (f && fclose(f) != 0) fail = 1;
        if (fail) {
            zero__monitor_lost(e, "csv_monitor", path);
            e->obs.csv_dir[0] = 0;
        }
        if (h == e->obs.n_csv_headed && h < ZERO__MON_TAGS) e->obs.csv_headed[e->obs.n_csv_headed++] = tags[i];
    }
}

/* ZERO_DEBUG, ZERO_WATCHDOG_S and jsonl_monitor, at zero_engine_create */
static zero_result zero__obs_start(zero_engine *e) {
    const char *w = getenv("ZERO_WATCHDOG_S");
    const zero_monitor_config *m = &e->cfg.jsonl_monitor;
    e->obs.wd.threshold_s = 60;
    zero__tl_start(e);
    e->obs.t_print_ms = e->obs.t_step_ms = zero__now_ms();
    if (w && *w) {
        char *end;
        double x = strtod(w, &end);
        if (end == w || *end || !(x >= 0) || x > 1e9) /* as every ZERO_* variable: a warning, the default */
            zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENV_INVALID,
                      "ZERO_WATCHDOG_S=%s: not a number of seconds, ignored (the watchdog reports after 60 s; 0 turns "
                      "it off)",
                      w);
        else
            e->obs.wd.threshold_s = x;
    }
    if (e->obs.wd.threshold_s > 0) {
        if (pthread_mutex_init(&e->obs.wd.lock, NULL) != 0) {
            e->obs.wd.threshold_s = 0;
            return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "watchdog: pthread_mutex_init failed");
        }
        if (pthread_cond_init(&e->obs.wd.cv, NULL) != 0) {
            pthread_mutex_destroy(&e->obs.wd.lock);
            e->obs.wd.threshold_s = 0;
            return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "watchdog: pthread_cond_init failed");
        }
        if (pthread_create(&e->obs.wd.thread, NULL, zero__watchdog_main, e) != 0) {
            pthread_cond_destroy(&e->obs.wd.cv);
            pthread_mutex_destroy(&e->obs.wd.lock);
            e->obs.wd.threshold_s = 0;
            return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "watchdog: pthread_create failed\nHINT: ZERO_WATCHDOG_S=0 runs without it");
        }
        e->obs.wd.on = 1;
    }
    if (m->enabled == 1 && e->plan.grank == 0) {
        char path[2 * ZERO_PATH_MAX + 8];
        snprintf(path, sizeof path, "%s%s%s.jsonl", m->output_path, m->output_path[0] ? "/" : "", m->job_name);
        zero_error fe;
        /* made or checked as a regular file first (a FIFO or device: refused, never opened for stdio;
           C11 has no fdopen) */
        int fd = zero__open_write(path, O_APPEND, &fe);
        if (fd >= 0) close(fd);
        if (fd < 0 || !(e->obs.jsonl = fopen(path, "a"))) {
            return zero__efail(e, ZERO_MSG_ENGINE_METRICS,
                               "jsonl_monitor: cannot open %s for appending: %s\nHINT: jsonl_monitor.output_path must be "
                               "an existing, writable directory",
                               path, fd < 0 ? fe.msg : strerror(errno));
        }
        zero_memory_stats ms;
        memset(&ms, 0, sizeof ms);
        zero__count_params(e, &ms); /* the engine is not live yet: zero_memory_report would refuse */
        fprintf(e->obs.jsonl,
                "{\"event\":\"start\",\"version\":\"%s\",\"world\":%d,\"stage\":%d,\"dtype\":\"%s\",\"train_batch_size\":"
                "%lld,\"gradient_accumulation_steps\":%d,\"params\":%lld,\"trainable_params\":%lld,\"units\":%d,"
                "\"shard_world\":%d}\n",
                zero_version(), e->plan.gworld, e->plan.stage, zero_dtype_name(e->plan.cdt), (long long)e->cfg.train_batch_size, e->plan.gas,
                (long long)ms.params, (long long)ms.trainable_params, e->plan.n_units, e->plan.world);
        fflush(e->obs.jsonl);
    }
    return e->plan.grank == 0 ? zero__monitors_open(e) : ZERO_OK;
}

static void zero__obs_stop(zero_engine *e) {
    if (e->obs.wd.on) {
        pthread_mutex_lock(&e->obs.wd.lock);
        e->obs.wd.stop = 1;
        pthread_cond_broadcast(&e->obs.wd.cv);
        pthread_mutex_unlock(&e->obs.wd.lock);
        pthread_join(e->obs.wd.thread, NULL);
        pthread_cond_destroy(&e->obs.wd.cv);
        pthread_mutex_destroy(&e->obs.wd.lock);
        e->obs.wd.on = 0;
        e->obs.wd.threshold_s = 0;
    }
    if (e->obs.jsonl) fclose(e->obs.jsonl);
    e->obs.jsonl = NULL;
    if (e->obs.tb) fclose(e->obs.tb);
    e->obs.tb = NULL;
    if (e->tl.on && !e->tl.done) {
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_TIMELINE,
                  "ZERO_TIMELINE: the engine ended before step %lld did: no timeline written", (long long)e->tl.step);
        zero__tl_free(&e->tl, e);
    }
}

ZERO__DEF void zero_report_loss(zero_engine *e, double loss) {
    if (!zero__engine_live(e)) return;
    e->obs.loss = loss;
    e->obs.has_loss = 1;
}

ZERO__DEF int64_t zero_global_steps(const zero_engine *e) { return zero__engine_live(e) ? e->run.global_steps : -1; }

ZERO__DEF const char *zero_version(void) {
    return ZERO__STR(ZERO_VERSION_MAJOR) "." ZERO__STR(ZERO_VERSION_MINOR) "." ZERO__STR(ZERO_VERSION_PATCH);
}

/* "1h02m05s" */
static void zero__fmt_duration(double s, char *buf, size_t cap) {
    long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
    if (t >= 3600) snprintf(buf, cap, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60) snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, cap, "%lds", t);
}

/* One JSON object for jsonl_monitor (rank 0): the step just made */
/* ,"key":v; null for a NaN or an infinity, which JSON cannot write (a diverged loss stays readable) */
/* A number of a JSON line: NaN and inf are not JSON, so they are written as
   null and their keys collected in *bad ("nonfinite":[...] says why). */
static void zero__jsonl_num(FILE *f, const char *key, double v, char *bad, size_t cap) {
    size_t n = strlen(bad);
    if (isfinite(v)) {
        fprintf(f, ",\"%s\":%.9g", key, v);
        return;
    }
    fprintf(f, ",\"%s\":null", key);
    snprintf(bad + n, cap - n, "%s\"%s\"", n ? "," : "", key);
}

static void zero__metrics_line(zero_engine *e, const zero_step_info *in, double samples_per_s) {
    static const char *const phase[ZERO_PHASE_COUNT] = {"backward", "reduce", "fetch", "norm", "optimizer", "gather",
                                                        "step"};
    static const char *const cat[ZERO_MEM_CATEGORY_COUNT] = {"params", "gather_pool", "grads", "grad_accum",
                                                             "master", "optim_state", "scratch"};
    static const char *const kind[ZERO_MEM_KIND_COUNT] = {"device", "pinned", "host"};
    zero_memory_stats ms;
    int i, k;
    char bad[128] = "";
    FILE *f = e->obs.jsonl;
    if (!f) return;
    fprintf(f, "{\"event\":\"step\",\"step\":%lld", (long long)in->global_steps);
    if (e->obs.has_loss) zero__jsonl_num(f, "loss", e->obs.loss, bad, sizeof bad);
    zero__jsonl_num(f, "lr", in->lr, bad, sizeof bad);
    zero__jsonl_num(f, "loss_scale", in->loss_scale, bad, sizeof bad);
    zero__jsonl_num(f, "next_loss_scale", in->next_loss_scale, bad, sizeof bad);
    zero__jsonl_num(f, "grad_norm", in->grad_norm, bad, sizeof bad);
    zero__jsonl_num(f, "clip_coef", in->clip_coef, bad, sizeof bad);
    if (bad[0]) fprintf(f, ",\"nonfinite\":[%s]", bad);
    fprintf(f, ",\"skipped\":%d,\"skipped_steps\":%lld", in->applied ? 0 : 1, (long long)in->skipped_steps);
    if (samples_per_s > 0) fprintf(f, ",\"samples_per_s\":%.6g", samples_per_s);
    fprintf(f, ",\"time_ms\":{");
    for (i = 0; i < ZERO_PHASE_COUNT; i++) fprintf(f, "%s\"%s\":%.6g", i ? "," : "", phase[i], in->time_ms[i]);
    fprintf(f, "}");
    if (e->plan.stage == 3)
        fprintf(f, ",\"fetches\":%lld,\"fetch_hits\":%lld,\"units_gathered\":%lld", (long long)in->fetches,
                (long long)in->fetch_hits, (long long)in->units_gathered);
    fprintf(f, ",\"comm_bytes\":{\"world\":%lld,\"shard\":%lld,\"replica\":%lld}", (long long)in->comm_bytes[ZERO_GROUP_WORLD],
            (long long)in->comm_bytes[ZERO_GROUP_SHARD], (long long)in->comm_bytes[ZERO_GROUP_REPLICA]);
    if (zero_memory_report(e, &ms) == ZERO_OK) {
        fprintf(f, ",\"memory_bytes\":{");
        for (i = 0; i < ZERO_MEM_CATEGORY_COUNT; i++) {
            fprintf(f, "%s\"%s\":{", i ? "," : "", cat[i]);
            for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) fprintf(f, "%s\"%s\":%zu", k ? "," : "", kind[k], ms.planned[i][k]);
            fprintf(f, "}");
        }
        fprintf(f, ",\"allocated\":{");
        for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) fprintf(f, "%s\"%s\":%zu", k ? "," : "", kind[k], ms.allocated[k]);
        fprintf(f, "}}");
    }
    if (fprintf(f, "}\n") < 0 || fflush(f) != 0) {
        zero__log(&e->cfg.log, ZERO_LOG_WARN, ZERO_MSG_ENGINE_METRICS,
                  "jsonl_monitor: writing failed (%s); metrics stop here, training goes on", strerror(errno));
        fclose(f);
        e->obs.jsonl = NULL;
    }
}

static double zero__c_tag(const zero_engine *e, int kind, int unit) {
    return ((double)(e->run.global_steps % 4096) * 8.0 + kind) * 4294967296.0 + (double)(unit + 1);
}

static void zero__c_describe(const zero_engine *e, double tag, char *buf, size_t cap) {
    double hi = floor(tag / 4294967296.0);
    int kind = (int)fmod(hi, 8.0), unit = (int)(tag - hi * 4294967296.0) - 1;
    (void)e;
    snprintf(buf, cap, "%s of unit %d (step %lld mod 4096)", zero__c_names[kind >= 1 && kind <= 6 ? kind : 0], unit,
             (long long)(hi / 8.0));
}

static zero_result zero__coll_check(zero_engine *e, int kind, int unit) {
    double tag;
    e->obs.tr_kind = kind; /* for ZERO_DEBUG's log and the watchdog */
    e->obs.tr_unit = unit;
    if (!e->obs.check) return ZERO_OK;
    tag = zero__c_tag(e, kind, unit);
    e->buf.check_host[0] = tag;
    e->buf.check_host[1] = -tag;
    ZERO__TRY_BE(e, "check_collectives: tag", zero__copy(e, e->buf.check_dev, e->buf.check_host, 2 * sizeof(double),
                                                        ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "check_collectives: all_reduce",
                 zero__all_reduce(e, e->buf.check_dev, e->buf.check_dev, 2, (zero_dtype)ZERO__DTYPE_F64, ZERO_OP_MAX,
                                  ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "check_collectives: result", zero__copy(e, e->buf.check_host, e->buf.check_dev, 2 * sizeof(double),
                                                           ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "check_collectives: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    if (e->buf.check_host[0] != tag || -e->buf.check_host[1] != tag) {
        char mine[160], other[160];
        zero__c_describe(e, tag, mine, sizeof mine);
        zero__c_describe(e, e->buf.check_host[0] != tag ? e->buf.check_host[0] : -e->buf.check_host[1], other, sizeof other);
        e->broken = 1;
        return zero__efail(e, ZERO_MSG_ENGINE_DIVERGED,
                           "rank %d: the ranks diverged: this rank is at %s ('%s'), another is at %s\nHINT: every rank "
                           "must make the same zero_fetch / zero_grad_ready / zero_step calls in the same order",
                           e->plan.grank, mine, unit >= 0 && unit < e->plan.n_units ? zero__tname(e, e->plan.layout->units[unit].first_tensor) : "-",
                           other);
    }
    return ZERO_OK;
}

/* ---- >>engine-tiles: NVMe tile requests, the parameter tile cache, where new parameters go ----

   n_pbuf host buffers hold unit chunks of the compute-dtype shard; at most
   one buffer holds a given unit. A gather takes its units from the cache
   (reading on a miss) and reads ahead the units that come next: the rest of
   its span, then the spans the stage-3 trace fetches next. The step writes
   each unit's new chunk through a buffer (write-behind), which then holds
   the new values. A buffer is reused only after its request completed and
   the copies out of it left the comm stream. */

/* Wait store's pending request *q (if any) and clear it; a failure goes to
   *first when given and still ZERO_OK. Returns 0 when the request failed. */
static int zero__req_wait(zero_engine *e, void *store, void **q, zero_error *first) {
    zero_error be;
    int ok;
    if (!*q) return 1;
    zero__ok(&be);
    ok = e->be.tiles_wait(store, *q, &be) == ZERO_OK;
    if (!ok && first && first->code == ZERO_OK) *first = be;
    *q = NULL;
    return ok;
}

/* NVMe tiles: wait every pending read and write; the first failure goes to
   *first (when given and still ZERO_OK). No request is left pending. */
static void zero__tiles_drain(zero_engine *e, zero_error *first) {
    int k;
    if (!e->nvme.store || !e->nvme.tbuf_rd) return;
    for (k = 0; k < e->nvme.n_tbuf; k++) {
        zero__req_wait(e, e->nvme.store, &e->nvme.tbuf_rd[k], first);
        zero__req_wait(e, e->nvme.store, &e->nvme.tbuf_wr[k], first);
    }
}

/* Complete buffer b's pending read or write; with `reuse`, also the copies
   out of the buffers still queued on the comm stream. */
static zero_result zero__pbuf_settle(zero_engine *e, int b, int reuse, zero_error *fail) {
    if (!zero__req_wait(e, e->offload_param.pstore, &e->offload_param.pbuf_req[b], fail)) {
        e->offload_param.pbuf_unit[b] = -1;
        return fail->code;
    }
    if (reuse && e->offload_param.pbuf_copying[b]) {
        int k;
        if (zero__sync(e, ZERO_STREAM_COMM, fail) != ZERO_OK) return fail->code;
        for (k = 0; k < e->offload_param.n_pbuf; k++) e->offload_param.pbuf_copying[k] = 0;
    }
    return ZERO_OK;
}

/* The buffer holding unit u, else the least recently used one, emptied and
   free to overwrite (*hit says which). */
static zero_result zero__pbuf_take(zero_engine *e, int u, int *out, int *hit, zero_error *fail) {
    int b = -1, k;
    for (k = 0; k < e->offload_param.n_pbuf && b < 0; k++)
        if (e->offload_param.pbuf_unit[k] == u) b = k;
    *hit = b >= 0;
    if (b < 0) {
        b = 0;
        for (k = 1; k < e->offload_param.n_pbuf; k++)
            if (e->offload_param.pbuf_used[k] < e->offload_param.pbuf_used[b]) b = k;
        if (zero__pbuf_settle(e, b, 1, fail) != ZERO_OK) return fail->code;
        e->offload_param.pbuf_unit[b] = -1;
    }
    e->offload_param.pbuf_used[b] = ++e->offload_param.pbuf_clock;
    *out = b;
    return ZERO_OK;
}

/* Unit u's chunk in a buffer: from the cache or read now (wait: 1) or in
   the background (wait: 0). */
static zero_result zero__pbuf_load(zero_engine *e, int u, int wait, int *out, zero_error *fail) {
    int b = 0, hit = 0;
    if (zero__pbuf_take(e, u, &b, &hit, fail) != ZERO_OK) return fail->code;
    if (!hit) {
        if (e->be.tiles_read(e->offload_param.pstore, u, e->offload_param.pbuf[b], (size_t)e->plan.layout->units[u].chunk * e->plan.csize, &e->offload_param.pbuf_req[b], fail) !=
            ZERO_OK) {
            e->offload_param.pbuf_req[b] = NULL;
            return fail->code;
        }
        e->offload_param.pbuf_unit[b] = u;
    }
    if (wait && zero__pbuf_settle(e, b, 0, fail) != ZERO_OK) return fail->code;
    *out = b;
    return ZERO_OK;
}

/* Read ahead up to n_pbuf - 1 units: span s's units from u_next on, then
   the units of the spans the trace fetches next that are not resident. */
static zero_result zero__pbuf_ahead(zero_engine *e, int s, int u_next, zero_error *fail) {
    const zero_layout *l = e->plan.layout;
    int left = e->offload_param.n_pbuf - 1, u, p, b;
    for (u = u_next; u < l->span_first[s + 1] && left > 0; u++, left--)
        if (zero__pbuf_load(e, u, 0, &b, fail) != ZERO_OK) return fail->code;
    if (e->pool.trace_state != ZERO__TRACE_COMPLETE) return ZERO_OK;
    for (p = e->pool.trace_pos; p < e->pool.trace_len && left > 0; p++) {
        int t = e->pool.trace[p];
        if (t == s || e->spans[t].pool_off >= 0 || e->spans[t].persistent) continue;
        for (u = l->span_first[t]; u < l->span_first[t + 1] && left > 0; u++, left--)
            if (zero__pbuf_load(e, u, 0, &b, fail) != ZERO_OK) return fail->code;
    }
    return ZERO_OK;
}

/* Every pending request of the cache waited (the first failure to *first). */
static void zero__pbuf_drain(zero_engine *e, zero_error *first) {
    int k;
    if (!e->offload_param.pstore || !e->offload_param.pbuf_req) return;
    for (k = 0; k < e->offload_param.n_pbuf; k++)
        if (!zero__req_wait(e, e->offload_param.pstore, &e->offload_param.pbuf_req[k], first)) e->offload_param.pbuf_unit[k] = -1;
}






/* ---- >>engine-state: where a unit's state lives ----

   The one layer that knows where each unit's parameters (compute dtype),
   master weights and Adam moments live: device memory, pinned or pageable
   host memory (offload), NVMe tiles (offload to "nvme"), the program's own
   memory (zero_alloc, the drop-in API), and which of them is the same
   buffer (fp32 on the device: the master is the parameters). The step reads
   it through the views (zero__master_at, zero__mom_at, zero__param_own) and
   zero__param_out / _put; checkpoints, zero_read_state, export, load and the
   initial weights through zero__state_get and zero__state_put, which take
   any residency. A new residency is a change to this section alone (and
   its allocation in >>engine-life). */

/* Per-unit pointers into the buffers (see the memory plan in zero_engine_create). */
/* fp32 parameters on the device, Adam there: the parameters are the master */
static int zero__master_is_params(const zero_engine *e) {
    return e->plan.cdt == ZERO_DTYPE_FP32 && !e->opt.cpu && !e->offload_param.device && !e->plan.ext;
}

/* Unit u's optimizer state and Adam are the device's: every unit without
   optimizer offload; with offload_optimizer.ratio < 1, the trainable units
   whose own chunks lie below opt.dev_elems (the first ones in layout
   order, zero__state_split). */
static int zero__unit_on_device(const zero_engine *e, int u) {
    if (!e->opt.cpu) return 1;
    return e->opt.twin && e->plan.unit_shard_off[u] >= 0 && e->plan.unit_shard_off[u] < e->opt.dev_elems;
}

/* Unit u's place in the buffer its master, m and v live in: the device's
   units from the start of buf.dmaster / dm / dv, the others after them in
   buf.master / m / v. */
static int64_t zero__opt_off(const zero_engine *e, int u) {
    if (e->plan.stage == 0) return e->plan.unit_buf_off[u];
    return e->plan.unit_shard_off[u] - (e->opt.twin && !zero__unit_on_device(e, u) ? e->opt.dev_elems : 0);
}

static float *zero__master_at(const zero_engine *e, int u) {
    const zero_unit *x = &e->plan.layout->units[u];
    if (zero__master_is_params(e)) {
        if (e->plan.stage == 0) return (float *)e->buf.params + x->offset;
        if (e->plan.stage < 3) return (float *)e->buf.params + x->offset + (int64_t)e->plan.rank * x->chunk;
        return (float *)e->buf.params + x->shard_offset;
    }
    return (e->opt.twin && zero__unit_on_device(e, u) ? e->buf.dmaster : e->buf.master) + zero__opt_off(e, u);
}

/* Unit u's m (which 0) or v (1); NULL for a state the optimizer does not
   keep (zero_optimizer_state_mask) and with NVMe (its tiles hold them). */
static float *zero__mom_at(const zero_engine *e, int which, int u) {
    int dev = e->opt.twin && zero__unit_on_device(e, u);
    float *base = which ? (dev ? e->buf.dv : e->buf.v) : (dev ? e->buf.dm : e->buf.m);
    return base ? base + zero__opt_off(e, u) : NULL;
}

/* compute-dtype parameters that rank owns of unit u: whole unit on stage 0 */
static void *zero__param_own(const zero_engine *e, int u) {
    const zero_unit *x = &e->plan.layout->units[u];
    if (e->plan.ext) /* the unit's staging: the whole unit (stage 0), the own chunk in it (1-2) */
        return zero__at(e->buf.ustage, e->plan.stage == 0 ? 0 : (int64_t)e->plan.rank * x->chunk, e->plan.csize);
    if (e->plan.stage == 0) return zero__at(e->buf.params, x->offset, e->plan.csize);
    if (e->plan.stage < 3) return zero__at(e->buf.params, x->offset + (int64_t)e->plan.rank * x->chunk, e->plan.csize);
    return zero__at(e->buf.params, x->shard_offset, e->plan.csize);
}

/* ext: unit u's tensors between the program's memory and the unit staging
   (to_program 0: into the staging; 1: out to the program), segment by
   segment on the comm stream. */
static zero_result zero__ext_copy(zero_engine *e, int u, int to_program, zero_error *fail) {
    const zero_unit *x = &e->plan.layout->units[u];
    int k, n = zero__unit_segments(e->plan.layout, u, 0, x->numel, e->buf.segtmp, x->last_tensor - x->first_tensor + 1);
    for (k = 0; k < n; k++) {
        const zero__seg *sg = &e->buf.segtmp[k];
        char *prog = zero__at(e->plan.tdata[sg->tensor], sg->tensor_off, e->plan.csize);
        char *st = zero__at(e->buf.ustage, sg->unit_off, e->plan.csize);
        if (zero__copy(e, to_program ? prog : st, to_program ? st : prog, (size_t)sg->count * e->plan.csize,
                       ZERO_STREAM_COMM, fail) != ZERO_OK)
            return fail->code;
    }
    return ZERO_OK;
}


/* Where Adam's compute-dtype output goes (offload_param).

   host_adam: CPU Adam (offload_optimizer) writes host memory, device Adam
   device memory. zero__param_out says where unit u's new chunk is written,
   zero__param_put moves it to where the shard lives afterwards. */

/* The compute-dtype shard lives on the device (no offload_param). */
static int zero__params_on_device(const zero_engine *e) { return !e->offload_param.device; }

/* Each unit's new parameters land in place: on the device, not through the
   unit staging of the program's memory. */
static int zero__params_in_place(const zero_engine *e) { return !e->plan.ext && !e->offload_param.device; }

/* What zero__param_put does, for its error. */
static const char *zero__param_put_what(const zero_engine *e) {
    return e->offload_param.device == ZERO_OFFLOAD_NVME ? "zero_step: NVMe write of a parameter tile"
           : e->offload_param.device                    ? "zero_step: parameters to the host"
                                                        : "zero_step: parameters to the device";
}

static zero_result zero__param_out(zero_engine *e, int u, int host_adam, void **dst, int *buf, zero_error *fail) {
    *buf = -1;
    *dst = NULL;
    if (host_adam) {
        if (e->offload_param.device == ZERO_OFFLOAD_NVME) {
            int hit;
            if (zero__pbuf_take(e, u, buf, &hit, fail) != ZERO_OK) return fail->code;
            if (zero__pbuf_settle(e, *buf, 1, fail) != ZERO_OK) return fail->code;
            e->offload_param.pbuf_unit[*buf] = -1; /* being overwritten */
            *dst = e->offload_param.pbuf[*buf];
        } else {
            *dst = e->offload_param.device == ZERO_OFFLOAD_CPU ? zero__param_own(e, u)
                                               : zero__at(e->buf.cpu_param, e->plan.unit_shard_off[u], e->plan.csize);
        }
    } else {
        *dst = e->offload_param.device ? e->offload_param.pstage : zero__master_is_params(e) ? NULL : zero__param_own(e, u);
    }
    return ZERO_OK;
}

static zero_result zero__param_put(zero_engine *e, int u, int host_adam, const void *src, int buf, zero_error *fail) {
    size_t bytes = (size_t)e->plan.layout->units[u].chunk * e->plan.csize;
    if (e->offload_param.device == ZERO_OFFLOAD_NVME) {
        if (!host_adam) { /* device staging -> a host buffer first */
            int hit;
            if (zero__pbuf_take(e, u, &buf, &hit, fail) != ZERO_OK ||
                zero__pbuf_settle(e, buf, 1, fail) != ZERO_OK)
                return fail->code;
            e->offload_param.pbuf_unit[buf] = -1;
            if (zero__copy(e, e->offload_param.pbuf[buf], src, bytes, ZERO_STREAM_COMM, fail) != ZERO_OK ||
                zero__sync(e, ZERO_STREAM_COMM, fail) != ZERO_OK)
                return fail->code;
        }
        if (e->be.tiles_write(e->offload_param.pstore, u, e->offload_param.pbuf[buf], bytes, &e->offload_param.pbuf_req[buf], fail) != ZERO_OK) {
            e->offload_param.pbuf_req[buf] = NULL;
            return fail->code;
        }
        e->offload_param.pbuf_unit[buf] = u;
        e->offload_param.pbuf_used[buf] = ++e->offload_param.pbuf_clock;
        return ZERO_OK;
    }
    if (!src) return ZERO_OK; /* fp32 on the device: the master is the parameter */
    if (src == zero__param_own(e, u)) return ZERO_OK;
    return zero__copy(e, zero__param_own(e, u), src, bytes, ZERO_STREAM_COMM, fail);
}

/* Where unit u's gradient is, every view of it computed in one place:
     write  where the backward writes the compute-dtype gradient (the full
            buffer, stages 0-1; the unit's place in its span's ring slot,
            stages 2-3: NULL while the span holds no slot)
     acc    the unit's accumulator (stages 0-1 with accumulation: the full
            one; stages 2-3: the owned chunk's)
     full   the reduced gradient of the whole unit (stages 0-1; NULL above)
     chunk  this rank's reduced chunk: what the norm statistics and the
            optimizer offload read
     adam   what the device Adam reads: the whole unit (stage 0) or the chunk
     dt     dtype of full, chunk and adam
     program  the gradients are the program's (zero_tensor.grad): `write` is
            the unit staging they are copied into before the reduction
            (zero__gext_gather), which clears them there
     ring   `write` is the span's ring slot (stages 2-3) */
typedef struct zero__gview {
    char *write, *acc, *full, *chunk, *adam;
    zero_dtype dt;
    int program, ring;
} zero__gview;

/* Stages 2-3: the memory of span s while it holds slot k. plan.gdirect: the
   span's place in the owned accumulator (one rank owns every unit whole, so
   the span's units lie there back to back as in the slot, and the
   reduce-scatter from the slot to the accumulator is in place); else slot k
   of the ring buffer. */
static char *zero__slot_at(const zero_engine *e, int s, int k) {
    if (e->plan.gdirect)
        return zero__at(e->buf.accum, e->plan.unit_shard_off[e->plan.layout->span_first[s]], e->plan.asize);
    if (e->grad.slot_mem[k]) return (char *)e->grad.slot_mem[k];
    return zero__at(e->buf.grads, e->grad.slot_off[k], e->plan.csize);
}

/* Stages 2-3: unit u's reduced chunk accumulates in the host staging
   (plan.host_acc), not on the device. */
static int zero__grad_on_host(const zero_engine *e, int u) {
    return e->plan.host_acc && !zero__unit_on_device(e, u);
}

static zero__gview zero__grad_view(const zero_engine *e, int u) {
    const zero_unit *x = &e->plan.layout->units[u];
    zero__gview v;
    memset(&v, 0, sizeof v);
    v.program = e->plan.gext;
    if (e->plan.stage <= 1) {
        v.write = e->plan.gext ? (char *)e->buf.gstage : zero__at(e->buf.grads, e->plan.unit_buf_off[u], e->plan.csize);
        if (e->plan.gas > 1 || e->plan.gext) {
            v.acc = zero__at(e->buf.accum, e->plan.unit_buf_off[u], e->plan.asize);
            v.full = v.acc;
            v.dt = e->plan.adt;
        } else {
            v.full = v.write;
            v.dt = e->plan.cdt;
        }
        v.chunk = v.full + (size_t)((int64_t)e->plan.rank * x->chunk) * zero_dtype_size(v.dt);
        v.adam = e->plan.stage == 0 ? v.full : v.chunk;
    } else {
        const zero__span_state *ss = &e->spans[x->span];
        v.ring = !e->plan.gext;
        if (e->plan.gext)
            v.write = (char *)e->buf.gstage;
        else if (ss->slot >= 0)
            v.write = zero__slot_at(e, x->span, ss->slot) + (size_t)(x->offset - e->plan.span_off[x->span]) * e->plan.csize;
        /* (host_acc: no device accumulator, the chunk is in buf.cpu_grad; but
           for the units stepped on the device, whose chunks lie first) */
        v.acc = !zero__grad_on_host(e, u) && e->buf.accum ? zero__at(e->buf.accum, e->plan.unit_shard_off[u], e->plan.asize) : NULL;
        v.chunk = v.adam = v.acc;
        v.dt = e->plan.adt;
    }
    return v;
}

/* Stages 0-1 with one micro-batch: the full gradient buffer is cleared unit
   by unit where the micro-batch first asks for a tensor of the unit (on the
   compute stream, in the backward's order, behind the previous step, which
   the compute stream waits for), over its accumulating tensors only. A step
   then has no pass over the whole buffer, and a unit of
   ZERO_TENSOR_GRAD_WRITE tensors is never cleared. */
static int zero__grads_lazy(const zero_engine *e) {
    return e->plan.stage <= 1 && e->plan.gas == 1 && !e->plan.gext && e->buf.grads != NULL;
}

/* Scratch a reader or writer of unit state lends the layer: `stage` of at
   least 4 bytes per element of the range (pinned where the copies should
   stay asynchronous), `tile` of one optimizer tile (12 bytes per element of
   the own range) or parameter tile, needed only with NVMe. */
typedef struct zero__state_io {
    void *stage, *tile;
} zero__state_io;

/* What of a unit's state (zero__state_get): the values a checkpoint and
   zero_read_state call the master (the fp32 master; the compute-dtype
   parameters of a frozen unit, or where the master is the parameters), and
   Adam's m and v. */
enum { ZERO__ST_MASTER, ZERO__ST_M, ZERO__ST_V };

/* The values of `what` are the compute-dtype parameters. */
static int zero__state_is_params(const zero_engine *e, int u, int what) {
    return e->plan.layout->units[u].frozen || (what == ZERO__ST_MASTER && zero__master_is_params(e));
}

/* This rank holds the whole of unit u's `what` (stage 0; the parameters of
   stages 1-2, in the engine's memory or the program's); else its own chunk
   alone. */
static int zero__state_whole(const zero_engine *e, int u, int what) {
    return e->plan.stage == 0 || (e->plan.stage <= 2 && zero__state_is_params(e, u, what));
}

/* Elements [lo, lo + n) of unit u's `what` (unit coordinates, inside what
   this rank holds: zero__state_whole, or the own chunk) as floats into out,
   wherever they live: the device, pinned host memory, NVMe tiles, the
   program's memory. A frozen unit's m and v, and a range of padding alone,
   are zeros. With got (may be NULL) fp32 values already in io->stage are
   handed out there instead of copied into out. Local: no collective. */
static zero_result zero__state_get(zero_engine *e, int u, int what, int64_t lo, int64_t n, float *out, const float **got,
                                   zero__state_io *io, zero_error *fail) {
    const zero_unit *x = &e->plan.layout->units[u];
    int64_t hlo = zero__state_whole(e, u, what) ? 0 : (int64_t)e->plan.rank * x->chunk; /* the held range's start */
    size_t cs = e->plan.csize;
    const char *src;
    if (got) *got = out;
    if ((x->frozen && what != ZERO__ST_MASTER) || lo >= x->numel ||
        (what != ZERO__ST_MASTER && !e->nvme.on && !zero__mom_at(e, what == ZERO__ST_M ? 0 : 1, u))) {
        memset(out, 0, (size_t)n * 4);
        return ZERO_OK;
    }
    if (zero__state_is_params(e, u, what)) {
        if (e->offload_param.device == ZERO_OFFLOAD_NVME) { /* the unit's parameter tile (the own chunk) */
            void *req = NULL;
            if (e->be.tiles_read(e->offload_param.pstore, u, io->tile, (size_t)x->chunk * cs, &req, fail) != ZERO_OK ||
                e->be.tiles_wait(e->offload_param.pstore, req, fail) != ZERO_OK)
                return fail->code;
            zero__host_uncast(out, e->plan.cdt, zero__at(io->tile, lo - hlo, cs), n);
            return ZERO_OK;
        }
        if (e->plan.ext) { /* the program's memory, through the unit staging */
            if (zero__ext_copy(e, u, 0, fail) != ZERO_OK) return fail->code;
            src = zero__at(e->buf.ustage, lo, cs);
        } else {
            src = zero__at(e->plan.stage == 3 ? zero__param_own(e, u) : zero__at(e->buf.params, x->offset, cs), lo - hlo, cs);
        }
        if (zero__copy(e, io->stage, src, (size_t)n * cs, ZERO_STREAM_COMM, fail) != ZERO_OK ||
            zero__sync(e, ZERO_STREAM_COMM, fail) != ZERO_OK)
            return fail->code;
        zero__host_uncast(out, e->plan.cdt, io->stage, n);
        return ZERO_OK;
    }
    if (e->nvme.on) { /* the unit's tile: master | m | v */
        void *req = NULL;
        if (e->be.tiles_read(e->nvme.store, u, io->tile, 12 * (size_t)x->chunk, &req, fail) != ZERO_OK ||
            e->be.tiles_wait(e->nvme.store, req, fail) != ZERO_OK)
            return fail->code;
        memcpy(out, (const float *)io->tile + (size_t)what * (size_t)x->chunk + (lo - hlo), (size_t)n * 4);
        return ZERO_OK;
    }
    src = (const char *)((what == ZERO__ST_MASTER ? zero__master_at(e, u) : zero__mom_at(e, what == ZERO__ST_M ? 0 : 1, u)) +
                         (lo - hlo));
    if (zero__copy(e, io->stage, src, (size_t)n * 4, ZERO_STREAM_COMM, fail) != ZERO_OK || zero__sync(e, ZERO_STREAM_COMM, fail) != ZERO_OK)
        return fail->code;
    if (got)
        *got = (const float *)io->stage;
    else
        memcpy(out, io->stage, (size_t)n * 4);
    return ZERO_OK;
}

/* This rank's own range of unit u (the whole unit at stage 0, the own chunk
   above: zero__own_elems) from master, m and v (fp32 host memory; m, v
   NULL: left as they are, zero at create; zero with NVMe) into wherever
   they live: the compute-dtype parameters (stages 1-2 gather them
   afterwards: zero__step_gather, zero__state_spread), the master where it
   is not the parameters, the moments of a trainable unit. io->stage takes
   the parameters' cast; with NVMe, master, m and v may be io->tile's
   thirds already (then nothing is copied; io->tile NULL: the step's first
   tile buffer). */
static zero_result zero__state_put(zero_engine *e, int u, const float *master, const float *m, const float *v,
                                   zero__state_io *io, zero_error *err) {
    const zero_unit *x = &e->plan.layout->units[u];
    int64_t n = e->plan.stage == 0 ? x->padded : x->chunk;
    {
        zero__host_cast(io->stage, e->plan.cdt, master, n);
        if (e->offload_param.device == ZERO_OFFLOAD_NVME) {
            void *req = NULL;
            if (e->be.tiles_write(e->offload_param.pstore, u, io->stage, (size_t)n * e->plan.csize, &req, err) != ZERO_OK ||
                e->be.tiles_wait(e->offload_param.pstore, req, err) != ZERO_OK)
                return err->code;
        } else if (zero__copy(e, zero__param_own(e, u), io->stage, (size_t)n * e->plan.csize, ZERO_STREAM_COMM, err) != ZERO_OK) {
            return err->code;
        }
    }
    if (!x->frozen) {
        if (e->nvme.on) { /* master | m | v in the unit's tile */
            float *tb = (float *)(io->tile ? io->tile : e->nvme.tbuf[0]);
            const float *part[3];
            int k;
            void *req = NULL;
            part[0] = master, part[1] = m, part[2] = v;
            for (k = 0; k < 3; k++)
                if (!part[k])
                    memset(tb + (size_t)k * (size_t)n, 0, sizeof(float) * (size_t)n);
                else if (part[k] != tb + (size_t)k * (size_t)n)
                    memcpy(tb + (size_t)k * (size_t)n, part[k], sizeof(float) * (size_t)n);
            if (e->be.tiles_write(e->nvme.store, u, tb, 12 * (size_t)n, &req, err) != ZERO_OK ||
                e->be.tiles_wait(e->nvme.store, req, err) != ZERO_OK)
                return err->code;
        } else if ((!zero__master_is_params(e) &&
                    zero__copy(e, zero__master_at(e, u), master, sizeof(float) * (size_t)n, ZERO_STREAM_COMM, err) != ZERO_OK) ||
                   (m && zero__mom_at(e, 0, u) &&
                    zero__copy(e, zero__mom_at(e, 0, u), m, sizeof(float) * (size_t)n, ZERO_STREAM_COMM, err) != ZERO_OK) ||
                   (v && zero__mom_at(e, 1, u) &&
                    zero__copy(e, zero__mom_at(e, 1, u), v, sizeof(float) * (size_t)n, ZERO_STREAM_COMM, err) != ZERO_OK)) {
            return err->code;
        }
    }
    /* the copies read the caller's memory, which its next unit overwrites */
    if (zero__sync(e, ZERO_STREAM_COMM, err) != ZERO_OK) return err->code;
    return ZERO_OK;
}

/* Stages 1-2 after the step: every rank's new chunk of trainable unit u to
   every rank (a no-op on the other stages). All ranks call it for the same
   units in the same order. */
static zero_result zero__step_gather(zero_engine *e, int u) {
    const zero_unit *x = &e->plan.layout->units[u];
    char what[96];
    zero_result r;
    if (e->plan.stage == 3 || (e->plan.stage == 0 && !e->plan.ext)) return ZERO_OK;
    if (e->plan.stage != 0) {
        if ((r = zero__coll_check(e, ZERO__C_GATHER, u)) != ZERO_OK) return r;
        snprintf(what, sizeof what, "%s: all_gather of parameters", e->obs.tr_api);
        ZERO__TRY_BE(e, what,
                     zero__all_gather(e, zero__param_own(e, u),
                                      e->plan.ext ? e->buf.ustage : zero__at(e->buf.params, x->offset, e->plan.csize),
                                      (size_t)x->chunk, e->plan.cdt, ZERO_STREAM_COMM, &be_err_));
    }
    /* the program's memory: the unit's new parameters out of the staging */
    snprintf(what, sizeof what, "%s: parameters to the program's memory", e->obs.tr_api);
    if (e->plan.ext) ZERO__TRY_BE(e, what, zero__ext_copy(e, u, 1, &be_err_));
    return ZERO_OK;
}

/* Stages 1-2 at create: every unit's full parameters gathered from the
   owned chunks the initial weights went to (the program's memory: rank
   0's were broadcast there already). */
static zero_result zero__state_spread(zero_engine *e) {
    const zero_layout *l = e->plan.layout;
    int u;
    zero_result r;
    if ((e->plan.stage != 1 && e->plan.stage != 2) || e->plan.ext) return ZERO_OK;
    for (u = 0; u < l->n_units; u++) {
        const zero_unit *x = &l->units[u];
        if ((r = zero__coll_check(e, ZERO__C_INIT, u)) != ZERO_OK) return r;
        ZERO__TRY_BE(e, "zero_engine_create: all_gather of initial weights",
                     zero__all_gather(e, zero__param_own(e, u), zero__at(e->buf.params, x->offset, e->plan.csize),
                                      (size_t)x->chunk, e->plan.cdt, ZERO_STREAM_COMM, &be_err_));
    }
    return ZERO_OK;
}
/* Stage 3, the gather of unit u (span s) into dst: what this rank sends,
   its own chunk of the compute-dtype shard. With offload_param the chunk
   comes from the host (or its NVMe tile) into its place in dst first, and
   the all-gather runs in place (after the strategy's param_wait: the
   overlapped CPU step may still be writing it). */
static zero_result zero__state_param_send(zero_engine *e, int s, int u, char *dst, const void **send) {
    const zero_unit *x = &e->plan.layout->units[u];
    char *own = dst + (size_t)e->plan.rank * (size_t)x->chunk * e->plan.csize;
    zero_error fail;
    zero_result r;
    *send = e->buf.params ? zero__at(e->buf.params, x->shard_offset, e->plan.csize) : NULL;
    if (zero__params_on_device(e)) return ZERO_OK;
    zero__ok(&fail);
    if (e->offload_param.device == ZERO_OFFLOAD_NVME) {
        int b = 0;
        if (zero__pbuf_load(e, u, 1, &b, &fail) != ZERO_OK || zero__pbuf_ahead(e, s, u + 1, &fail) != ZERO_OK)
            return zero__ebackend(e, &fail, "stage-3 fetch: NVMe read of a parameter tile");
        *send = e->offload_param.pbuf[b];
        e->offload_param.pbuf_copying[b] = 1;
    } else if ((r = e->strat->param_wait(e, u)) != ZERO_OK) {
        return r;
    }
    ZERO__TRY_BE(e, "stage-3 fetch: parameters from the host",
                 zero__copy(e, own, *send, (size_t)x->chunk * e->plan.csize, ZERO_STREAM_COMM, &be_err_));
    *send = own;
    return ZERO_OK;
}

/* Tensor t's compute-dtype parameters for the program (zero_param; stage 3:
   gathered): the program's own pointer where its memory holds them (backed
   while gathered, at stage 3), else the full copy (stages 0-2) or the
   gather pool. */
static void *zero__state_param_at(const zero_engine *e, int t) {
    const zero_tensor_place *pl = &e->plan.layout->places[t];
    int s;
    if (e->plan.ext || e->plan.pvm) return e->plan.tdata[t];
    if (e->plan.stage != 3) return zero__at(e->buf.params, pl->offset, e->plan.csize);
    s = zero__span_of_tensor(e, t);
    return zero__at(e->pool.base, e->spans[s].pool_off + (pl->offset - e->plan.span_off[s]), e->plan.csize);
}

/* Bytes of the largest tile a state reader may need in io->tile (0: none). */
static size_t zero__state_tile_bytes(const zero_engine *e) {
    size_t a = e->nvme.on ? e->nvme.tile_bytes : 0;
    size_t b = e->offload_param.device == ZERO_OFFLOAD_NVME ? e->offload_param.ptile_bytes : 0;
    return a > b ? a : b;
}

/* Create's decisions of where the state lives and which strategy steps it
   (from the config, the stage and what the backend can do); nothing else
   decides them. */
static void zero__state_plan(zero_engine *e, const zero_config *cfg, const zero_backend *be) {
    const zero_optimization_config *z = &cfg->zero_optimization;
    /* stages 2-3 with one micro-batch add nothing up: the reduced chunk stays
       in the compute dtype (2 bytes a parameter / N, ZeRO's formula) */
    e->plan.adt = (e->plan.gas == 1 && (z->stage >= 2 || e->plan.gext)) ? e->plan.cdt : cfg->grad_accum_dtype;
    /* (with the program's gradient memory the accumulator holds the reduced gradient at every stage) */
    e->plan.gdt = e->plan.stage >= 2 || e->plan.gext ? e->plan.adt : e->plan.gas > 1 ? e->plan.adt : e->plan.cdt;
    e->opt.cpu = z->offload_optimizer.device == ZERO_OFFLOAD_CPU || z->offload_optimizer.device == ZERO_OFFLOAD_NVME;
    /* partial offload (config-resolve kept it to stage 3 and "cpu"): which
       units stay on the device waits for the layout (zero__state_split) */
    e->opt.twin = z->offload_optimizer.device == ZERO_OFFLOAD_CPU && e->plan.stage == 3 && z->offload_optimizer.ratio < 1;
    e->plan.host_acc = e->opt.cpu && e->plan.stage >= 2 && !e->plan.gext;
    /* one rank reduces nothing: the backward writes straight into the owned
       accumulator and the reduce-scatter is in place (skipped). Not with the
       optimizer offloaded: host_acc and the early step read the slot */
    e->plan.gdirect = e->plan.stage == 2 && e->plan.gworld == 1 && e->plan.gas == 1 && !e->plan.gext && !e->opt.cpu;
    e->nvme.on = z->offload_optimizer.device == ZERO_OFFLOAD_NVME;
    e->plan.opt_kind = !e->opt.cpu ? ZERO_MEM_DEVICE : z->offload_optimizer.pin_memory ? ZERO_MEM_PINNED : ZERO_MEM_HOST;
    e->offload_param.device = e->plan.stage == 3 ? (int)z->offload_param.device : ZERO_OFFLOAD_NONE; /* ignored below stage 3, as DeepSpeed */
    /* (partial offload: the plain CPU strategy beside the device's units; no delayed, early or overlapped step) */
    e->dpu.on = z->offload_optimizer.delayed_param_update == 1 && z->offload_optimizer.device == ZERO_OFFLOAD_CPU &&
                !e->offload_param.device && !e->opt.twin;
    /* the CPU adds the micro-batches up (not beside the delayed Adam, which holds the thread and the CPU's pool
       through the next step's backward); ZERO_HOST_SUM=0: on the device, for comparison */
    {
        const char *hs = getenv("ZERO_HOST_SUM");
        e->plan.host_sum = e->plan.host_acc && e->plan.gas > 1 && !e->dpu.on && be->cpu_convert && be->event_sync &&
                           be->event_create && be->event_record && be->event_destroy && !(hs && strcmp(hs, "0") == 0);
    }
    /* the early CPU step: nothing of the step needs the global norm (no clipping,
       no overflow check) and the backend can wait on events from a thread */
    e->opt.early = cfg->early_cpu_step != 0 && z->offload_optimizer.device == ZERO_OFFLOAD_CPU && !e->dpu.on && !e->opt.twin &&
                   !e->offload_param.device && !(cfg->gradient_clipping > 0) &&
               e->plan.cdt != ZERO_DTYPE_FP16 &&
               !(e->plan.cdt == ZERO_DTYPE_BF16 && cfg->bf16.check_grad_overflow == 1 && (e->plan.stage == 1 || e->plan.stage == 2)) &&
               be->event_sync && be->event_create && be->event_record && be->event_destroy;
    /* the overlapped CPU step: the next forward's fetches wait for their units' Adam */
    e->opt.trail = cfg->overlap_cpu_step != 0 && z->offload_optimizer.device == ZERO_OFFLOAD_CPU && !e->dpu.on && !e->opt.early && !e->opt.twin &&
                   e->plan.stage == 3 && e->offload_param.device == ZERO_OFFLOAD_CPU;
    e->offload_param.param_kind = !e->offload_param.device ? ZERO_MEM_DEVICE : z->offload_param.pin_memory ? ZERO_MEM_PINNED : ZERO_MEM_HOST;
    e->strat = zero__strategy_pick(e);
}

/* Partial offload, once the layout is made: DeepSpeed keeps the first
   (int)((1 - ratio) x n) of its n sub-groups on the device and steps the
   rest on the CPU; zero's units are its sub-groups, so the first that many
   trainable units in layout order stay on the device, whose own chunks are
   the first opt.dev_elems elements of the trainable shard. */
static zero_result zero__state_split(zero_engine *e, const zero__sizes *zs) {
    const zero_layout *l = e->plan.layout;
    int u, n = 0, keep;
    e->opt.dev_elems = 0;
    if (!e->opt.twin) return ZERO_OK;
    for (u = 0; u < l->n_units; u++) n += !l->units[u].frozen;
    keep = (int)((1.0 - e->cfg.zero_optimization.offload_optimizer.ratio) * (double)n);
    e->opt.dev_elems = zs->ST;
    for (u = 0; u < l->n_units; u++)
        if (!l->units[u].frozen && keep-- == 0) {
            e->opt.dev_elems = e->plan.unit_shard_off[u];
            break;
        }
    return ZERO_OK;
}

/* The offloads the config asks for, against what the backend has. */
static zero_result zero__state_check(const zero_config *cfg, const zero_backend *be, zero_error *err) {
    const zero_optimization_config *z = &cfg->zero_optimization;
    if (z->stage == 3 && z->offload_param.device == ZERO_OFFLOAD_NVME &&
        (!be->tiles_open || !be->tiles_close || !be->tiles_read || !be->tiles_write || !be->tiles_wait))
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_param.device", 0, 0,
                          "\"nvme\": backend has no tile store; use zero_offload_backend (zero_offload.h)");
    if (z->stage == 3 && z->offload_param.device == ZERO_OFFLOAD_NVME && z->offload_param.nvme_path[0] == 0)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_param.nvme_path", 0, 0,
                          "device is \"nvme\" but nvme_path is empty\nHINT: set it to a directory on the NVMe drive");
    if (z->offload_optimizer.device == ZERO_OFFLOAD_NVME &&
        (!be->tiles_open || !be->tiles_close || !be->tiles_read || !be->tiles_write || !be->tiles_wait))
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_optimizer.device", 0, 0,
                          "\"nvme\": backend has no tile store; use zero_offload_backend (zero_offload.h)");
    if (z->offload_optimizer.device == ZERO_OFFLOAD_NVME && z->offload_optimizer.nvme_path[0] == 0)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_optimizer.nvme_path", 0, 0,
                          "device is \"nvme\" but nvme_path is empty\nHINT: set it to a directory on the NVMe drive");
    if (z->offload_optimizer.device != ZERO_OFFLOAD_NONE && !be->cpu_adam)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_optimizer.device", 0, 0,
                          "\"%s\": backend '%s' has no CPU Adam\nHINT: wrap the backend with zero_offload_backend "
                          "(zero_offload.h), or set the device to \"none\"",
                          z->offload_optimizer.device == ZERO_OFFLOAD_NVME ? "nvme" : "cpu", be->name ? be->name : "?");
    /* (zero_config_resolve refuses these; a config changed after it is refused here) */
    if (z->stage == 3 && z->offload_optimizer.ratio < 1 && z->offload_optimizer.device != ZERO_OFFLOAD_NONE &&
        (z->offload_optimizer.device != ZERO_OFFLOAD_CPU ||
         (cfg->optimizer.type != ZERO_OPTIMIZER_ADAM && cfg->optimizer.type != ZERO_OPTIMIZER_ADAMW)))
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_optimizer.ratio", 0, 0,
                          "%g: partial offload needs offload_optimizer.device \"cpu\" and Adam or AdamW (the config "
                          "changed after zero_config_resolve?)\nHINT: set the ratio to 1", z->offload_optimizer.ratio);
    return ZERO_OK;
}

/* Allocation of the state where it lives (beside its free): the
   compute-dtype parameters and offload_param's staging and tiles, the
   master and Adam's moments or their NVMe tiles. */
/* n host buffers of `bytes` for tiles, then the backend's tile store of this
   rank (file `name`.rank<r>.tiles in `path`). */
static zero_result zero__tiles_make(zero_engine *e, zero_mem_category cat, zero_mem_kind kind, int n, size_t bytes,
                                    void **bufs, const char *what_buf, const char *path, const char *name, void **store,
                                    const char *what_store) {
    zero_error be;
    zero_result r;
    int k;
    for (k = 0; k < n; k++)
        if ((r = zero__ealloc(e, cat, kind, bytes, &bufs[k], what_buf)) != ZERO_OK) return r;
    zero__ok(&be);
    if (e->be.tiles_open(e->be.cpu_ctx, path, name, e->plan.grank, bytes, &e->cfg.aio, store, &be) != ZERO_OK) {
        *store = NULL;
        return zero__ebackend(e, &be, what_store);
    }
    return ZERO_OK;
}

/* The matching free of zero__tiles_make (after the caller drained the
   store's pending requests). */
static void zero__tiles_unmake(zero_engine *e, zero_mem_kind kind, int n, void **bufs, void **store) {
    int k;
    if (*store && e->be.tiles_close) e->be.tiles_close(*store);
    *store = NULL;
    if (bufs)
        for (k = 0; k < n; k++) zero__efree(e, kind, bufs[k]);
}

/* offload_param "nvme": the tile buffers and the parameter tile store. */
static zero_result zero__alloc_param_tiles(zero_engine *e, int64_t max_chunk, int64_t shard) {
    const zero_offload_config *op = &e->cfg.zero_optimization.offload_param;
    int k;
    e->offload_param.ptile_bytes = (size_t)max_chunk * e->plan.csize;
    e->nvme.nvme_bytes += (size_t)shard * e->plan.csize;
    e->offload_param.n_pbuf = (int)zero__max_i64(2, zero__min_i64(op->buffer_count, 1024));
    e->offload_param.pbuf = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)e->offload_param.n_pbuf);
    e->offload_param.pbuf_req = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)e->offload_param.n_pbuf);
    e->offload_param.pbuf_unit = (int *)ZERO_MALLOC(sizeof(int) * (size_t)e->offload_param.n_pbuf);
    e->offload_param.pbuf_copying = (unsigned char *)ZERO_MALLOC((size_t)e->offload_param.n_pbuf);
    e->offload_param.pbuf_used = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)e->offload_param.n_pbuf);
    if (!e->offload_param.pbuf || !e->offload_param.pbuf_req || !e->offload_param.pbuf_unit || !e->offload_param.pbuf_copying || !e->offload_param.pbuf_used)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: NVMe parameter buffer table");
    for (k = 0; k < e->offload_param.n_pbuf; k++) {
        e->offload_param.pbuf[k] = e->offload_param.pbuf_req[k] = NULL;
        e->offload_param.pbuf_unit[k] = -1;
        e->offload_param.pbuf_copying[k] = 0;
        e->offload_param.pbuf_used[k] = 0;
    }
    return zero__tiles_make(e, ZERO_MEM_PARAMS, e->offload_param.param_kind, e->offload_param.n_pbuf,
                            e->offload_param.ptile_bytes, e->offload_param.pbuf, "NVMe parameter tile buffer", op->nvme_path,
                            "zero_param", &e->offload_param.pstore, "zero_engine_create: offload_param \"nvme\"");
}

/* The compute-dtype parameters (full, or stage 3's shard: on the host with
   offload_param), and offload_param's device staging and NVMe tiles. */
static zero_result zero__alloc_params(zero_engine *e, const zero__sizes *zs) {
    const zero_layout *l = e->plan.layout;
    int64_t maxc = 0, maxt = 0;
    int u;
    zero_result r;
    if (e->plan.ext) { /* the program holds them: one unit's staging here */
        for (u = 0; u < l->n_units; u++) maxc = zero__max_i64(maxc, l->units[u].padded);
        return zero__ealloc(e, ZERO_MEM_PARAMS, ZERO_MEM_DEVICE, (size_t)maxc * e->plan.csize, &e->buf.ustage,
                            "unit staging of the program's parameters");
    }
    if (e->plan.pvm) { /* create reads the program's weights through one unit's staging */
        for (u = 0; u < l->n_units; u++) maxc = zero__max_i64(maxc, l->units[u].padded);
        if ((r = zero__ealloc(e, ZERO_MEM_PARAMS, ZERO_MEM_DEVICE, (size_t)maxc * e->plan.csize, &e->buf.ustage,
                              "unit staging of the program's parameters")) != ZERO_OK)
            return r;
        maxc = 0;
    }
    if (e->offload_param.device != ZERO_OFFLOAD_NVME &&
        (r = zero__ealloc(e, ZERO_MEM_PARAMS, e->offload_param.param_kind, (size_t)(e->plan.stage == 3 ? zs->S : zs->psi) * e->plan.csize,
                          &e->buf.params, e->offload_param.device ? "parameter shard (offload_param \"cpu\")" : "compute-dtype parameters")) !=
            ZERO_OK)
        return r;
    if (!e->offload_param.device) return ZERO_OK;
    for (u = 0; u < l->n_units; u++) {
        maxc = zero__max_i64(maxc, l->units[u].chunk);
        if (!l->units[u].frozen) maxt = zero__max_i64(maxt, l->units[u].chunk);
    }
    /* device Adam writes a unit's new parameters here on their way to the host */
    if ((!e->opt.cpu || e->opt.dev_elems > 0) &&
        (r = zero__ealloc(e, ZERO_MEM_PARAMS, ZERO_MEM_DEVICE, (size_t)maxt * e->plan.csize, &e->offload_param.pstage,
                                         "offload_param staging of one unit's chunk")) != ZERO_OK)
        return r;
    return e->offload_param.device == ZERO_OFFLOAD_NVME ? zero__alloc_param_tiles(e, maxc, zs->S) : ZERO_OK;
}

static void zero__free_params(zero_engine *e) {
    zero__efree(e, e->offload_param.param_kind, e->buf.params);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.ustage);
    if (e->offload_param.pstore) zero__pbuf_drain(e, NULL);
    zero__tiles_unmake(e, e->offload_param.param_kind, e->offload_param.n_pbuf, e->offload_param.pbuf,
                       &e->offload_param.pstore);
    ZERO_FREE(e->offload_param.pbuf);
    ZERO_FREE(e->offload_param.pbuf_req);
    ZERO_FREE(e->offload_param.pbuf_unit);
    ZERO_FREE(e->offload_param.pbuf_copying);
    ZERO_FREE(e->offload_param.pbuf_used);
    zero__efree(e, ZERO_MEM_DEVICE, e->offload_param.pstage);
}

/* offload_optimizer "nvme": master | m | v of a unit's chunk per tile, in
   files; max(3, buffer_count) host buffers of the largest tile cycle through
   read-ahead, Adam and write-behind. */
static zero_result zero__alloc_optim_tiles(zero_engine *e, const zero__sizes *zs) {
    const zero_layout *l = e->plan.layout;
    const zero_offload_config *oo = &e->cfg.zero_optimization.offload_optimizer;
    int64_t maxc = 0;
    int u;
    for (u = 0; u < l->n_units; u++)
        if (!l->units[u].frozen) maxc = zero__max_i64(maxc, l->units[u].chunk);
    e->nvme.tile_bytes = 12 * (size_t)maxc;
    e->nvme.nvme_bytes += 12 * (size_t)zs->ST;
    e->nvme.n_tbuf = (int)zero__max_i64(3, zero__min_i64(oo->buffer_count, 1024));
    e->nvme.tbuf = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)e->nvme.n_tbuf);
    e->nvme.tbuf_rd = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)e->nvme.n_tbuf);
    e->nvme.tbuf_wr = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)e->nvme.n_tbuf);
    e->nvme.tile_units = (int *)ZERO_MALLOC(sizeof(int) * (size_t)(l->n_units ? l->n_units : 1));
    if (!e->nvme.tbuf || !e->nvme.tbuf_rd || !e->nvme.tbuf_wr || !e->nvme.tile_units)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: NVMe buffer table");
    for (u = 0; u < l->n_units; u++)
        if (!l->units[u].frozen && e->plan.seg_count[u] > 0) e->nvme.tile_units[e->nvme.n_tile_units++] = u;
    memset(e->nvme.tbuf, 0, sizeof(void *) * (size_t)e->nvme.n_tbuf);
    memset(e->nvme.tbuf_rd, 0, sizeof(void *) * (size_t)e->nvme.n_tbuf);
    memset(e->nvme.tbuf_wr, 0, sizeof(void *) * (size_t)e->nvme.n_tbuf);
    return zero__tiles_make(e, ZERO_MEM_OPTIM_STATE, e->plan.opt_kind, e->nvme.n_tbuf, e->nvme.tile_bytes, e->nvme.tbuf,
                            "NVMe optimizer tile buffer", oo->nvme_path, "zero_optim", &e->nvme.store,
                            "zero_engine_create: offload_optimizer \"nvme\"");
}

/* Lamb's norm vectors (zero__opt_place): 16 bytes a segment where the
   optimizer runs and 20 on the host, 16 a tensor on the device and on the
   host. */
static zero_result zero__lamb_alloc(zero_engine *e) {
    size_t ns = 0, nt = (size_t)e->plan.n_tensors;
    int u, dev = e->plan.opt_kind == ZERO_MEM_DEVICE;
    void *p[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    zero_result r;
    e->opt.lamb = e->cfg.optimizer.type == ZERO_OPTIMIZER_LAMB;
    if (!e->opt.lamb) return ZERO_OK;
    for (u = 0; u < e->plan.n_units; u++) ns += (size_t)e->plan.seg_count[u];
    e->opt.n_lamb_segs = (int)ns;
    if (ns == 0) ns = 1;
    if ((r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_PINNED, 2 * ns * sizeof(double), &p[0], "Lamb sums per segment")) != ZERO_OK ||
        (r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_PINNED, ns * sizeof(float), &p[1], "Lamb ratio per segment")) != ZERO_OK ||
        (r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_DEVICE, 2 * nt * sizeof(double), &p[2], "Lamb norms per tensor")) != ZERO_OK ||
        (r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_PINNED, 2 * nt * sizeof(double), &p[3], "Lamb norms per tensor (host)")) != ZERO_OK ||
        (dev && (r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_DEVICE, 2 * ns * sizeof(double), &p[4], "Lamb sums per segment (device)")) != ZERO_OK) ||
        (dev && (r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_DEVICE, ns * sizeof(float), &p[5], "Lamb ratio per segment (device)")) != ZERO_OK)) {
        int k;
        for (k = 0; k < 6; k++) zero__efree(e, k == 2 || k >= 4 ? ZERO_MEM_DEVICE : ZERO_MEM_PINNED, p[k]);
        return r;
    }
    e->opt.lamb_seg_host = (double *)p[0];
    e->opt.lamb_ratio_host = (float *)p[1];
    e->opt.lamb_ten_dev = (double *)p[2];
    e->opt.lamb_ten_host = (double *)p[3];
    e->opt.lamb_seg = dev ? (double *)p[4] : e->opt.lamb_seg_host;
    e->opt.lamb_ratio = dev ? (float *)p[5] : e->opt.lamb_ratio_host;
    return ZERO_OK;
}

static void zero__lamb_free(zero_engine *e) {
    if (e->opt.lamb_seg != e->opt.lamb_seg_host) zero__efree(e, ZERO_MEM_DEVICE, e->opt.lamb_seg);
    if (e->opt.lamb_ratio != e->opt.lamb_ratio_host) zero__efree(e, ZERO_MEM_DEVICE, e->opt.lamb_ratio);
    zero__efree(e, ZERO_MEM_PINNED, e->opt.lamb_seg_host);
    zero__efree(e, ZERO_MEM_PINNED, e->opt.lamb_ratio_host);
    zero__efree(e, ZERO_MEM_DEVICE, e->opt.lamb_ten_dev);
    zero__efree(e, ZERO_MEM_PINNED, e->opt.lamb_ten_host);
    e->opt.lamb_seg = e->opt.lamb_seg_host = e->opt.lamb_ten_dev = e->opt.lamb_ten_host = NULL;
    e->opt.lamb_ratio = e->opt.lamb_ratio_host = NULL;
}

/* The fp32 state arrays of the configured optimizer (zero_optimizer_state_mask). */
static int zero__opt_mask(const zero_engine *e) {
    return zero_optimizer_state_mask(e->cfg.optimizer.type, e->cfg.optimizer.momentum);
}

/* fp32 master weights (unless the parameters are the master) and the
   optimizer's state (Adam's moments; one array or none for the others),
   where the optimizer lives; or, with NVMe, its tiles (master | m | v for
   every optimizer, an unused third zero). */
static zero_result zero__alloc_optim(zero_engine *e, const zero__sizes *zs) {
    /* (offload_optimizer.ratio < 1: the device's units apart, dev elements each) */
    int64_t dev = e->opt.dev_elems, opt = (e->plan.stage == 0 ? zs->psiT : zs->ST) - dev;
    void *p;
    zero_result r;
    if (e->nvme.on) return zero__alloc_optim_tiles(e, zs);
    if (!zero__master_is_params(e)) {
        if ((r = zero__ealloc(e, ZERO_MEM_MASTER, e->plan.opt_kind, (size_t)opt * 4, &p, "fp32 master weights")) != ZERO_OK)
            return r;
        e->buf.master = (float *)p;
        if ((r = zero__ealloc(e, ZERO_MEM_MASTER, ZERO_MEM_DEVICE, (size_t)dev * 4, &p,
                              "fp32 master weights (the units stepped on the device)")) != ZERO_OK)
            return r;
        e->buf.dmaster = (float *)p;
    }
    if (zero__opt_mask(e) & 1) {
        if ((r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, e->plan.opt_kind, (size_t)opt * 4, &p, "optimizer exp_avg")) != ZERO_OK)
            return r;
        e->buf.m = (float *)p;
        if ((r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_DEVICE, (size_t)dev * 4, &p,
                              "optimizer exp_avg (the units stepped on the device)")) != ZERO_OK)
            return r;
        e->buf.dm = (float *)p;
    }
    if (zero__opt_mask(e) & 2) {
        if ((r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, e->plan.opt_kind, (size_t)opt * 4, &p, "optimizer exp_avg_sq")) != ZERO_OK)
            return r;
        e->buf.v = (float *)p;
        if ((r = zero__ealloc(e, ZERO_MEM_OPTIM_STATE, ZERO_MEM_DEVICE, (size_t)dev * 4, &p,
                              "optimizer exp_avg_sq (the units stepped on the device)")) != ZERO_OK)
            return r;
        e->buf.dv = (float *)p;
    }
    return zero__lamb_alloc(e);
}

static void zero__free_optim(zero_engine *e) {
    zero__lamb_free(e);
    zero__efree(e, e->plan.opt_kind, e->buf.master);
    zero__efree(e, e->plan.opt_kind, e->buf.m);
    zero__efree(e, e->plan.opt_kind, e->buf.v);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.dmaster);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.dm);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.dv);
    if (e->nvme.store) zero__tiles_drain(e, NULL);
    zero__tiles_unmake(e, e->plan.opt_kind, e->nvme.n_tbuf, e->nvme.tbuf, &e->nvme.store);
    ZERO_FREE(e->nvme.tbuf);
    ZERO_FREE(e->nvme.tbuf_rd);
    ZERO_FREE(e->nvme.tbuf_wr);
    ZERO_FREE(e->nvme.tile_units);
}

/* ---- >>engine-thread: the engine's CPU thread ----

   One thread per engine, started on first use, runs the jobs of the
   strategies that step beside the GPU's work (>>opt-early, >>opt-overlap,
   >>opt-delayed), one job at a time. A job runs with thr.mu held (it lets go
   of it while it computes) and its failure stays in thr.err until the
   strategy collects it (zero__thread_wait, or its own wait). */

static void *zero__thread_main(void *arg) {
    zero_engine *e = (zero_engine *)arg;
    pthread_mutex_lock(&e->thr.mu);
    for (;;) {
        zero_error fail;
        while (!e->thr.go && !e->thr.quit) pthread_cond_wait(&e->thr.cv, &e->thr.mu);
        if (!e->thr.go) break; /* quit, nothing left to do */
        zero__ok(&fail);
        e->thr.job(e, &fail);
        e->thr.err = fail;
        e->thr.go = 0;
        pthread_cond_broadcast(&e->thr.cv);
    }
    pthread_mutex_unlock(&e->thr.mu);
    return NULL;
}

/* At create, for a strategy that uses the thread: its lock and condition. */
static zero_result zero__thread_init(zero_engine *e) {
    if (e->thr.sync) return ZERO_OK;
    if (pthread_mutex_init(&e->thr.mu, NULL) != 0) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: mutex");
    if (pthread_cond_init(&e->thr.cv, NULL) != 0) {
        pthread_mutex_destroy(&e->thr.mu);
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: condition variable");
    }
    e->thr.sync = 1;
    return ZERO_OK;
}

/* The thread, started on first use. */
static zero_result zero__thread_start(zero_engine *e) {
    if (e->thr.started) return ZERO_OK;
    if (pthread_create(&e->thr.thread, NULL, zero__thread_main, e) != 0)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_step: cannot start the engine's CPU-step thread");
    e->thr.started = 1;
    return ZERO_OK;
}

/* With thr.mu held: `job` to the thread (started), with a clear error. */
static void zero__thread_go(zero_engine *e, zero__thread_job job) {
    e->thr.job = job;
    zero__ok(&e->thr.err);
    e->thr.go = 1;
    pthread_cond_broadcast(&e->thr.cv);
}

/* Until the thread's job (if one runs) is done; its failure becomes the
   engine's, named `what`. */
static zero_result zero__thread_wait(zero_engine *e, const char *what) {
    zero_error fail;
    if (!e->thr.started) return ZERO_OK;
    pthread_mutex_lock(&e->thr.mu);
    while (e->thr.go) pthread_cond_wait(&e->thr.cv, &e->thr.mu);
    fail = e->thr.err;
    zero__ok(&e->thr.err);
    pthread_mutex_unlock(&e->thr.mu);
    if (fail.code != ZERO_OK) return zero__ebackend(e, &fail, what);
    return ZERO_OK;
}

/* A job that takes a queue until it is closed: *closed set (under thr.mu),
   then zero__thread_wait. */
static zero_result zero__thread_close(zero_engine *e, int *closed, const char *what) {
    pthread_mutex_lock(&e->thr.mu);
    *closed = 1;
    pthread_cond_broadcast(&e->thr.cv);
    pthread_mutex_unlock(&e->thr.mu);
    return zero__thread_wait(e, what);
}

/* zero_engine_destroy: the thread stopped (a job it runs notices quit and
   ends), then its lock gone. */
static void zero__thread_stop(zero_engine *e) {
    if (e->thr.started) {
        pthread_mutex_lock(&e->thr.mu);
        e->thr.quit = 1;
        pthread_cond_broadcast(&e->thr.cv);
        pthread_mutex_unlock(&e->thr.mu);
        pthread_join(e->thr.thread, NULL);
        e->thr.started = 0;
    }
    if (e->thr.sync) {
        pthread_mutex_destroy(&e->thr.mu);
        pthread_cond_destroy(&e->thr.cv);
        e->thr.sync = 0;
    }
}

/* ---- >>engine-hsum: the CPU adds up the micro-batches (plan.host_sum) ----

   With the optimizer offloaded at stages 2-3 the reduced chunks add up in
   the host staging (buf.cpu_grad, accumulation dtype). On each micro-batch
   before the last, a unit's reduced chunk crosses to the host once, in the
   compute dtype (2 bytes an element with bf16, where adding on the device
   takes 4 in and 4 out), into one of n_slot host slots; the engine's thread
   waits for the copy (its event), adds the chunk into the staging with the
   backend's cpu_convert (the first micro-batch sets it) and frees the slot.
   The device waits for no one: the next chunk for a busy slot waits on the
   host until the thread is done with it. convert's rule is the device's
   (fp32 addition, rounded to the accumulation dtype), so the sum is the
   same bits. The last micro-batch drains the thread and adds on the device
   as before, where the norm's statistics are taken. */

#define ZERO__HSUM_SLOTS 3

static zero_result zero__hsum_alloc(zero_engine *e, int64_t maxc) {
    zero__host_sum *h = &e->hsum;
    int k, n = ZERO__HSUM_SLOTS;
    zero_result r;
    h->slot = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)n);
    h->ev = (zero_event **)ZERO_MALLOC(sizeof(zero_event *) * (size_t)n);
    h->busy = (int *)ZERO_MALLOC(sizeof(int) * (size_t)n * 4);
    if (!h->slot || !h->ev || !h->busy) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: host sum tables");
    memset(h->slot, 0, sizeof(void *) * (size_t)n);
    memset(h->ev, 0, sizeof(zero_event *) * (size_t)n);
    memset(h->busy, 0, sizeof(int) * (size_t)n * 4);
    h->q_unit = h->busy + n;
    h->q_slot = h->busy + 2 * n;
    h->q_set = h->busy + 3 * n;
    h->n_slot = n;
    for (k = 0; k < n; k++) {
        zero_error be;
        zero__ok(&be);
        if ((r = zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, e->plan.opt_kind, (size_t)maxc * e->plan.csize, &h->slot[k],
                              "gradient accumulation: host slot")) != ZERO_OK)
            return r;
        if (e->be.event_create(e->be.ctx, &h->ev[k], &be) != ZERO_OK) return zero__ebackend(e, &be, "zero_engine_create: events");
    }
    return zero__thread_init(e);
}

static void zero__hsum_free(zero_engine *e) {
    zero__host_sum *h = &e->hsum;
    int k;
    for (k = 0; k < h->n_slot; k++) {
        if (h->slot) zero__efree(e, e->plan.opt_kind, h->slot[k]);
        if (h->ev && h->ev[k] && e->be.event_destroy) e->be.event_destroy(e->be.ctx, h->ev[k]);
    }
    ZERO_FREE(h->slot);
    ZERO_FREE(h->ev);
    ZERO_FREE(h->busy);
    memset(h, 0, sizeof *h);
}

/* The job: each queued chunk once it is on the host, added into the
   staging, its slot freed; until the queue is closed and empty. After a
   failure the rest is only drained (the slots freed). */
static void zero__hsum_run(zero_engine *e, zero_error *fail) {
    zero__host_sum *h = &e->hsum;
    for (;;) {
        int q, u, k;
        while (h->head == h->tail && !h->closed && !e->thr.quit) pthread_cond_wait(&e->thr.cv, &e->thr.mu);
        if (h->head == h->tail) break; /* closed (or quitting) and drained */
        q = h->head++ % h->n_slot;
        u = h->q_unit[q];
        k = h->q_slot[q];
        if (fail->code == ZERO_OK && !e->thr.quit) {
            int set = h->q_set[q];
            pthread_mutex_unlock(&e->thr.mu);
            if (e->be.event_sync(e->be.ctx, h->ev[k], fail) == ZERO_OK)
                e->be.cpu_convert(e->be.cpu_ctx, zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], e->plan.asize), e->plan.adt,
                                  h->slot[k], e->plan.cdt, (size_t)e->plan.layout->units[u].chunk, !set, fail);
            pthread_mutex_lock(&e->thr.mu);
        }
        h->busy[k] = 0;
        pthread_cond_broadcast(&e->thr.cv);
    }
}

/* A micro-batch before the last: unit u's reduced chunk (own, on the
   device) to a free host slot, and to the thread, armed on first use. */
static zero_result zero__hsum_add(zero_engine *e, int u, const char *own) {
    zero__host_sum *h = &e->hsum;
    int k = h->next, q;
    zero_result r;
    if (!h->armed) { /* whatever the thread ran before (an overlapped Adam) has ended: the backward waited for it */
        if ((r = zero__thread_wait(e, "CPU thread")) != ZERO_OK || (r = zero__thread_start(e)) != ZERO_OK) return r;
        pthread_mutex_lock(&e->thr.mu);
        h->head = h->tail = 0;
        h->closed = 0;
        zero__thread_go(e, zero__hsum_run);
        pthread_mutex_unlock(&e->thr.mu);
        h->armed = 1;
    }
    h->next = (k + 1) % h->n_slot;
    pthread_mutex_lock(&e->thr.mu);
    while (h->busy[k]) pthread_cond_wait(&e->thr.cv, &e->thr.mu);
    pthread_mutex_unlock(&e->thr.mu);
    ZERO__TRY_BE(e, "gradient accumulation: the chunk to the host",
                 zero__copy(e, h->slot[k], own, (size_t)e->plan.layout->units[u].chunk * e->plan.csize, ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "gradient accumulation: event", e->be.event_record(e->be.ctx, h->ev[k], ZERO_STREAM_COMM, &be_err_));
    pthread_mutex_lock(&e->thr.mu);
    h->busy[k] = 1;
    q = h->tail++ % h->n_slot;
    h->q_unit[q] = u;
    h->q_slot[q] = k;
    h->q_set[q] = e->run.micro == 0;
    pthread_cond_broadcast(&e->thr.cv);
    pthread_mutex_unlock(&e->thr.mu);
    return ZERO_OK;
}

/* Every chunk queued so far added (the last micro-batch, zero_step): the
   queue closed, the thread's job ended, its failure the engine's. */
static zero_result zero__hsum_drain(zero_engine *e) {
    zero_result r;
    if (!e->hsum.armed) return ZERO_OK;
    r = zero__thread_close(e, &e->hsum.closed, "gradient accumulation on the CPU");
    e->hsum.armed = 0;
    e->hsum.next = 0;
    return r;
}

/* ---- >>engine-pvm: stage 3 behind the program's pointers (zero_alloc memory) ---- */

/* Tensor t's elements [off, off + count) in its range: the granules they
   touch counted up (d > 0) or down; a granule whose count leaves 0 is backed,
   one that reaches 0 unbacked, each run of them in one backend call. */
static zero_result zero__pvm_count_range(zero_engine *e, int t, int64_t off, int64_t count, int d) {
    zero__pvm_reg *g = &e->pvm.reg[e->pvm.treg[t]];
    size_t gr = g->r->granule, a, b;
    int64_t p, p0, p1, run = -1;
    zero_error be;
    if (count <= 0) return ZERO_OK;
    a = (size_t)((const char *)e->plan.tdata[t] - g->r->base) + (size_t)off * e->plan.csize;
    b = a + (size_t)count * e->plan.csize;
    p0 = (int64_t)(a / gr);
    p1 = (int64_t)((b + gr - 1) / gr);
    zero__ok(&be);
    for (p = p0; p <= p1; p++) {
        int edge = 0;
        if (p < p1) edge = d > 0 ? g->ref[p]++ == 0 : --g->ref[p] == 0;
        if (edge && run < 0) run = p;
        if ((!edge || p == p1) && run >= 0) {
            char *at = g->r->base + (size_t)run * gr;
            size_t n = (size_t)(p - run) * gr;
            zero_result r = d > 0 ? g->r->back(g->r->ctx, at, n, &be) : g->r->unback(g->r->ctx, at, n, &be);
            if (r != ZERO_OK)
                return zero__efail(e, be.item ? be.item : ZERO_MSG_VM_FAILED, "stage 3, '%s''s pages in the program's memory: %s",
                                   zero__tname(e, t), be.msg);
            e->pvm.backed += d > 0 ? (int64_t)n : -(int64_t)n;
            if (e->pvm.started && e->pvm.backed > e->pvm.backed_peak) e->pvm.backed_peak = e->pvm.backed;
            run = -1;
        }
    }
    return ZERO_OK;
}

static zero_result zero__pvm_count(zero_engine *e, int s, int d) {
    const zero_layout *l = e->plan.layout;
    int u;
    for (u = l->span_first[s]; u < l->span_first[s + 1]; u++) {
        const zero_unit *x = &l->units[u];
        int k, n = zero__unit_segments(l, u, 0, x->numel, e->buf.segtmp, x->last_tensor - x->first_tensor + 1);
        for (k = 0; k < n; k++) {
            zero__seg sg = e->buf.segtmp[k];
            zero_result r = zero__pvm_count_range(e, sg.tensor, sg.tensor_off, sg.count, d);
            if (r != ZERO_OK) return r;
        }
    }
    return ZERO_OK;
}

static zero_result zero__pvm_retire(zero_engine *e);
static int64_t zero__pool_resident(const zero_engine *e);

/* Entry i leaves the waiting list; its two events go to the list's free end. */
static void zero__pvm_unpend(zero_engine *e, int i) {
    zero_event *c = e->pvm.pev[2 * i], *m = e->pvm.pev[2 * i + 1];
    int s = e->pvm.pend[i];
    for (; i + 1 < e->pvm.n_pend; i++) {
        e->pvm.pend[i] = e->pvm.pend[i + 1];
        e->pvm.pev[2 * i] = e->pvm.pev[2 * i + 2];
        e->pvm.pev[2 * i + 1] = e->pvm.pev[2 * i + 3];
    }
    e->pvm.pev[2 * i] = c, e->pvm.pev[2 * i + 1] = m;
    e->pvm.n_pend--;
    e->pvm.pend_elems -= e->plan.span_padded[s];
}

/* Waiting spans unbacked, oldest first, until they and the pool's resident
   spans fit the budget; the last depth always wait. */
static zero_result zero__pvm_trim(zero_engine *e) {
    zero_result r = ZERO_OK;
    while (r == ZERO_OK && e->pvm.n_pend > e->pvm.depth && zero__pool_resident(e) + e->pvm.pend_elems > e->pvm.budget)
        r = zero__pvm_retire(e);
    return r;
}

/* Span s about to be gathered: its pages backed (a span dropped a while ago
   whose pages still wait is taken back as it is; else waiting spans are
   unbacked first where the budget asks). */
static zero_result zero__pvm_hold(zero_engine *e, int s) {
    int i;
    zero_result r;
    if (!e->plan.pvm) return ZERO_OK;
    for (i = 0; i < e->pvm.n_pend; i++)
        if (e->pvm.pend[i] == s) {
            zero_error be;
            zero__ok(&be);
            /* the gather rewrites pages its last readers may still read */
            if (zero__wait_on(e, ZERO_STREAM_COMM, e->pvm.pev[2 * i], -1, "a span's pages: their last readers", &be) != ZERO_OK)
                return zero__ebackend(e, &be, "stage 3: the last readers of a span's pages");
            zero__pvm_unpend(e, i);
            return ZERO_OK;
        }
    if (e->pvm.held[s]) return ZERO_OK;
    if ((r = zero__pvm_trim(e)) != ZERO_OK) return r; /* (s is resident already) */
    e->pvm.held[s] = 1;
    return zero__pvm_count(e, s, +1);
}

/* The oldest waiting span: its readers ended (both streams' fences), its pages unbacked. */
static zero_result zero__pvm_retire(zero_engine *e) {
    int s = e->pvm.pend[0];
    zero_error be;
    zero__ok(&be);
    if (e->be.event_sync(e->be.ctx, e->pvm.pev[0], &be) != ZERO_OK || e->be.event_sync(e->be.ctx, e->pvm.pev[1], &be) != ZERO_OK)
        return zero__ebackend(e, &be, "stage 3: the last readers of a span's pages");
    zero__pvm_unpend(e, 0);
    e->pvm.held[s] = 0;
    return zero__pvm_count(e, s, -1);
}

/* Span s left the pool: its pages unbacked once the kernels queued so far
   (its readers) and the comm stream's copies into them are done. The host
   backend runs both in order already: at once there. */
static void zero__pvm_drop(zero_engine *e, int s) {
    zero_error be;
    zero_result r = ZERO_OK;
    if (!e->plan.pvm || !e->pvm.held[s]) return;
    zero__ok(&be);
    if (e->pvm.depth == 0) {
        e->pvm.held[s] = 0;
        r = zero__pvm_count(e, s, -1);
    } else {
        int i = e->pvm.n_pend;
        if (e->be.event_record(e->be.ctx, e->pvm.pev[2 * i], ZERO_STREAM_COMPUTE, &be) != ZERO_OK ||
            e->be.event_record(e->be.ctx, e->pvm.pev[2 * i + 1], ZERO_STREAM_COMM, &be) != ZERO_OK) {
            r = zero__ebackend(e, &be, "stage 3: fences of a span's pages");
        } else {
            e->pvm.pend[i] = s;
            e->pvm.n_pend++;
            e->pvm.pend_elems += e->plan.span_padded[s];
            r = zero__pvm_trim(e);
        }
    }
    if (r != ZERO_OK && e->pvm.failed.code == ZERO_OK) e->pvm.failed = e->err;
}

/* After span s's gather: the parts of its units gathered into the pool at
   pool_off (not straight into the program's memory) copied to each tensor's
   place, on the comm stream (before the span's ready fence). */
/* Where unit u's all-gather writes: the program's memory, or NULL (the pool). */
static char *zero__pvm_dst(const zero_engine *e, int u) { return e->plan.pvm ? (char *)e->pvm.udst[u] : NULL; }

/* zero_memory_report's figures of the program's memory behind stage 3. */
static void zero__pvm_report(const zero_engine *e, zero_memory_stats *out) {
    int k;
    if (!e->plan.pvm) return;
    out->program_backed = (size_t)e->pvm.backed;
    out->program_backed_peak = (size_t)e->pvm.backed_peak;
    for (k = 0; k < e->pvm.n_reg; k++) {
        out->program_reserved += e->pvm.reg[k].r->reserved;
        out->program_granule = e->pvm.reg[k].r->granule;
    }
    out->program_units = e->plan.layout->n_units;
    for (k = 0; k < e->plan.layout->n_units; k++) out->program_direct_units += e->pvm.udst[k] != NULL;
}

static zero_result zero__pvm_scatter(zero_engine *e, int s, int64_t pool_off) {
    const zero_layout *l = e->plan.layout;
    int u;
    if (!e->plan.pvm) return ZERO_OK;
    for (u = l->span_first[s]; u < l->span_first[s + 1]; u++) {
        const zero_unit *x = &l->units[u];
        int64_t at = pool_off + (x->offset - e->plan.span_off[s]);
        int k, n;
        if (e->pvm.udst[u]) continue;
        n = zero__unit_segments(l, u, 0, x->numel, e->buf.segtmp, x->last_tensor - x->first_tensor + 1);
        for (k = 0; k < n; k++) {
            const zero__seg *sg = &e->buf.segtmp[k];
            ZERO__TRY_BE(e, "stage 3: the gathered parameters into the program's memory",
                         zero__copy(e, zero__at(e->plan.tdata[sg->tensor], sg->tensor_off, e->plan.csize),
                                    zero__at(e->pool.base, at + sg->unit_off, e->plan.csize),
                                    (size_t)sg->count * e->plan.csize, ZERO_STREAM_COMM, &be_err_));
        }
    }
    return ZERO_OK;
}

/* Unit u's gathered elements are the program's own bytes, in order: no
   padding past its last tensor (padded == numel), no gap between its
   tensors, each tensor where the unit's layout puts it relative to the
   first. Its all-gather then writes the program's memory: no pool, no copy. */
static void *zero__pvm_unit_direct(const zero_engine *e, int u, zero__seg *sg, int cap) {
    const zero_unit *x = &e->plan.layout->units[u];
    char *base;
    int64_t next = 0;
    int k, n;
    if (x->padded != x->numel) return NULL;
    n = zero__unit_segments(e->plan.layout, u, 0, x->numel, sg, cap);
    if (n < 1 || n > cap) return NULL;
    base = zero__at(e->plan.tdata[sg[0].tensor], sg[0].tensor_off, e->plan.csize);
    for (k = 0; k < n; k++) {
        if (sg[k].unit_off != next ||
            zero__at(e->plan.tdata[sg[k].tensor], sg[k].tensor_off, e->plan.csize) !=
                base + (size_t)sg[k].unit_off * e->plan.csize)
            return NULL;
        next += sg[k].count;
    }
    return next == x->numel ? base : NULL;
}

/* At plan time (before the pool): which units gather straight into the
   program's memory; when all do, the pool needs no memory. */
static zero_result zero__pvm_plan_direct(zero_engine *e) {
    const zero_layout *l = e->plan.layout;
    int u, cap = 1;
    zero__seg *sg;
    if (!e->plan.pvm) return ZERO_OK;
    for (u = 0; u < l->n_units; u++) cap = (int)zero__max_i64(cap, l->units[u].last_tensor - l->units[u].first_tensor + 1);
    e->pvm.udst = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)(l->n_units + 1));
    sg = (zero__seg *)ZERO_MALLOC(sizeof(zero__seg) * (size_t)cap);
    if (!e->pvm.udst || !sg) {
        ZERO_FREE(sg);
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: stage-3 page tables");
    }
    e->pvm.all_direct = e->pvm.dyn_direct = 1;
    for (u = 0; u < l->n_units; u++) {
        e->pvm.udst[u] = zero__pvm_unit_direct(e, u, sg, cap);
        if (!e->pvm.udst[u]) {
            e->pvm.all_direct = 0;
            if (!l->units[u].persistent) e->pvm.dyn_direct = 0;
        }
    }
    ZERO_FREE(sg);
    return ZERO_OK;
}

/* At create, before the weights: the ranges, a count per page, and create's
   own hold on every page (zero_alloc backed them all; the program filled
   them). */
static zero_result zero__pvm_setup(zero_engine *e) {
    int t, k;
    if (!e->plan.pvm) return ZERO_OK;
    e->pvm.treg = (int *)ZERO_MALLOC(sizeof(int) * (size_t)e->plan.n_tensors);
    e->pvm.reg = (zero__pvm_reg *)ZERO_MALLOC(sizeof(zero__pvm_reg) * (size_t)e->plan.n_tensors);
    e->pvm.held = (unsigned char *)ZERO_MALLOC((size_t)e->plan.n_spans + 1);
    if (!e->pvm.treg || !e->pvm.reg || !e->pvm.held)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: stage-3 page tables");
    memset(e->pvm.held, 0, (size_t)e->plan.n_spans + 1);
    for (t = 0; t < e->plan.n_tensors; t++) {
        zero__vm_range *r = zero__vm_find(e->plan.tdata[t], (size_t)e->plan.layout->numel[t] * e->plan.csize);
        for (k = 0; k < e->pvm.n_reg && e->pvm.reg[k].r != r; k++) {
        }
        if (k == e->pvm.n_reg) {
            size_t pages = r->reserved / r->granule, p;
            e->pvm.reg[k].r = r;
            e->pvm.reg[k].ref = (int32_t *)ZERO_MALLOC(sizeof(int32_t) * (pages + 1));
            e->pvm.n_reg++;
            if (!e->pvm.reg[k].ref) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: stage-3 page tables");
            for (p = 0; p <= pages; p++) e->pvm.reg[k].ref[p] = 1;
            e->pvm.backed += (int64_t)r->reserved;
            pthread_mutex_lock(&zero__vm_lock);
            r->users++;
            pthread_mutex_unlock(&zero__vm_lock);
        }
        e->pvm.treg[t] = k;
    }
    e->pvm.depth = e->be.alloc == zero__host_alloc ? 0 : ZERO__PVM_PEND;
    e->pvm.n_pev = e->pvm.depth > 0 ? 2 * (e->pvm.depth + e->plan.n_spans + 1) : 0;
    e->pvm.pend = (int *)ZERO_MALLOC(sizeof(int) * (size_t)(e->pvm.n_pev / 2 + 1));
    e->pvm.pev = (zero_event **)ZERO_MALLOC(sizeof(zero_event *) * (size_t)(e->pvm.n_pev + 1));
    if (!e->pvm.pend || !e->pvm.pev) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: stage-3 page tables");
    memset(e->pvm.pev, 0, sizeof(zero_event *) * (size_t)(e->pvm.n_pev + 1));
    for (k = 0; k < e->pvm.n_pev; k++) {
        zero_error be;
        zero__ok(&be);
        if (e->be.event_create(e->be.ctx, &e->pvm.pev[k], &be) != ZERO_OK)
            return zero__ebackend(e, &be, "zero_engine_create: stage-3 page fences");
    }
    return ZERO_OK;
}

/* At create's end: create's hold goes; what no persistent span holds is unbacked. */
static zero_result zero__pvm_start(zero_engine *e) {
    int k;
    if (!e->plan.pvm) return ZERO_OK;
    for (k = 0; k < e->pvm.n_reg; k++) {
        zero__pvm_reg *g = &e->pvm.reg[k];
        size_t pages = g->r->reserved / g->r->granule, p, run = 0;
        int open = 0;
        zero_error be;
        zero__ok(&be);
        for (p = 0; p <= pages; p++) {
            int edge = p < pages && --g->ref[p] == 0;
            if (edge && !open) run = p, open = 1;
            if ((!edge || p == pages) && open) {
                if (g->r->unback(g->r->ctx, g->r->base + run * g->r->granule, (p - run) * g->r->granule, &be) != ZERO_OK)
                    return zero__efail(e, be.item ? be.item : ZERO_MSG_VM_FAILED, "zero_engine_create: the program's "
                                       "parameter memory: %s", be.msg);
                e->pvm.backed -= (int64_t)((p - run) * g->r->granule);
                open = 0;
            }
        }
        g->ref[pages] = 0;
    }
    e->pvm.started = 1;
    e->pvm.backed_peak = e->pvm.backed;
    if (e->pvm.depth > 0 && e->pvm.dyn_direct) e->pvm.budget = e->pool.pool_elems; /* what the pool would hold */
    return ZERO_OK;
}

/* At destroy: the program's allocation whole again, as zero_alloc gave it
   (the pages this engine unbacked backed, their contents undefined; what was
   gathered keeps its values, so after zero_gather_params the program holds
   the trained weights), and a later engine may take it. Dropped spans still
   waiting keep their pages: nothing to wait for. Failures are logged. */
static void zero__pvm_free(zero_engine *e) {
    int k;
    if (!e->plan.pvm) return;
    for (k = 0; e->pvm.pev && k < e->pvm.n_pev; k++)
        if (e->pvm.pev[k]) e->be.event_destroy(e->be.ctx, e->pvm.pev[k]);
    ZERO_FREE(e->pvm.pev);
    ZERO_FREE(e->pvm.pend);
    for (k = 0; k < e->pvm.n_reg; k++) {
        zero__pvm_reg *g = &e->pvm.reg[k];
        size_t pages = g->r->reserved / g->r->granule, p, run = 0;
        int open = 0, alone;
        pthread_mutex_lock(&zero__vm_lock);
        alone = g->r->users == 1;
        g->r->users--;
        pthread_mutex_unlock(&zero__vm_lock);
        for (p = 0; g->ref && alone && e->pvm.started && p <= pages; p++) {
            int off = p < pages && g->ref[p] == 0;
            if (off && !open) run = p, open = 1;
            if ((!off || p == pages) && open) {
                zero_error be;
                zero__ok(&be);
                if (g->r->back(g->r->ctx, g->r->base + run * g->r->granule, (p - run) * g->r->granule, &be) != ZERO_OK)
                    zero__log(&e->cfg.log, ZERO_LOG_ERROR, be.item ? be.item : ZERO_MSG_VM_FAILED,
                              "zero_engine_destroy: the program's parameter memory backed again: %s (those pages stay "
                              "unbacked until zero_free)", be.msg);
                open = 0;
            }
        }
        ZERO_FREE(g->ref);
    }
    ZERO_FREE(e->pvm.reg);
    ZERO_FREE(e->pvm.treg);
    ZERO_FREE(e->pvm.held);
    ZERO_FREE(e->pvm.udst);
}

/* ---- >>engine-program: the program's own memory (zero_tensor.data, .grad) ----

   The drop-in API's residency: the program keeps its parameter (and
   gradient) buffers and zero works on them. Stages 0-2 read and write the
   parameters through one unit's staging (zero__ext_copy, >>engine-state);
   stage 3 keeps the program's pointers and backs only what is gathered
   (>>engine-pvm). Here: the checks and plan at create, the initial weights
   taken from rank 0's memory, and the gradients copied from the program's
   memory before each reduction. */

/* The program's own parameter memory (zero_tensor.data): for every tensor
   or none, stages 0-2, aligned to the element, in the memory the backend
   computes on, no two tensors overlapping. */
static int zero__ext_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(const char *const *)a, y = (uintptr_t)*(const char *const *)b;
    return x < y ? -1 : x > y;
}

/* Program memory of n tensors (ptr[t], NULL where a tensor has none,
   `what` names it in messages): each aligned to the element, in the memory
   the backend computes on, no two overlapping. */
static zero_result zero__check_program_memory(zero_engine *e, const zero_tensor *ts, void *const *ptr, int n,
                                              const char *what) {
    const char **ends = (const char **)ZERO_MALLOC(sizeof(char *) * 2 * (size_t)(n ? n : 1));
    const char **starts = (const char **)ZERO_MALLOC(sizeof(char *) * 2 * (size_t)(n ? n : 1));
    zero_result r = ZERO_OK;
    int t, i, m = 0;
    if (!ends || !starts) {
        ZERO_FREE(ends);
        ZERO_FREE(starts);
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: tensor memory table");
    }
    for (t = 0; t < n && r == ZERO_OK; t++) {
        int kind;
        int64_t extent, need = ts[t].numel * (int64_t)e->plan.csize;
        if (!ptr[t]) continue;
        kind = e->be.mem_kind_of ? e->be.mem_kind_of(e->be.ctx, ptr[t]) : -1;
        /* (zero_alloc's ranges: the engine's own, mapped in granules a driver reports one by one) */
        extent = e->be.mem_extent && !(e->plan.pvm && ptr == e->plan.tdata) ? e->be.mem_extent(e->be.ctx, ptr[t]) : -1;
        if ((uintptr_t)ptr[t] % e->plan.csize)
            r = zero__efail(e, ZERO_MSG_BAD_ARG, "zero_engine_create: tensor '%s': %s %p is not aligned to its %zu-byte %s "
                                                 "elements", ts[t].name, what, ptr[t], e->plan.csize, zero_dtype_name(e->plan.cdt));
        else if (extent >= 0 && extent < need)
            r = zero__efail(e, ZERO_MSG_BAD_ARG, "zero_engine_create: tensor '%s': %s %p has %lld bytes to the end of its "
                                                 "allocation; the tensor's %lld %s elements need %lld",
                            ts[t].name, what, ptr[t], (long long)extent, (long long)ts[t].numel, zero_dtype_name(e->plan.cdt),
                            (long long)need);
        else if (kind >= 0 && kind != ZERO_MEM_DEVICE)
            r = zero__efail(e, ZERO_MSG_BAD_ARG, "zero_engine_create: tensor '%s': %s %p is %s memory; backend '%s' computes "
                                                 "on device memory\nHINT: allocate it with cudaMalloc (or the program's device "
                                                 "allocator)", ts[t].name, what, ptr[t], kind == ZERO_MEM_PINNED ? "pinned host" : "host",
                            e->be.name ? e->be.name : "?");
        ends[2 * t] = (const char *)ptr[t];
        ends[2 * t + 1] = (const char *)ptr[t] + (size_t)ts[t].numel * e->plan.csize;
        starts[2 * m] = ends[2 * t], starts[2 * m + 1] = (const char *)(intptr_t)t, m++;
    }
    /* overlap: sorted by start, each must end before the next starts */
    if (r == ZERO_OK) qsort(starts, (size_t)m, 2 * sizeof(char *), zero__ext_cmp);
    for (i = 0; i + 1 < m && r == ZERO_OK; i++) {
        int a = (int)(intptr_t)starts[2 * i + 1], b = (int)(intptr_t)starts[2 * i + 3];
        if ((uintptr_t)ends[2 * a + 1] > (uintptr_t)ends[2 * b])
            r = zero__efail(e, ZERO_MSG_BAD_ARG, "zero_engine_create: tensors '%s' and '%s' overlap in the program's memory "
                                                 "(%s: %lld and %lld elements of %zu bytes from %p and %p)",
                            ts[a].name, ts[b].name, what, (long long)ts[a].numel, (long long)ts[b].numel, e->plan.csize,
                            ptr[a], ptr[b]);
    }
    ZERO_FREE(ends);
    ZERO_FREE(starts);
    return r;
}

static int zero__range_cmp(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* No gradient of the program's (zero_tensor.grad) overlaps any tensor's
   parameters there (zero_tensor.data): clearing or writing it would change
   the weights. Each kind is checked alone first (zero__check_program_memory),
   so with both kinds sorted by start an overlap shows between neighbours of
   different kinds. */
static zero_result zero__check_grad_vs_data(zero_engine *e, const zero_tensor *ts, int n) {
    uintptr_t *r = (uintptr_t *)ZERO_MALLOC(sizeof(uintptr_t) * 3 * 2 * (size_t)(n ? n : 1)); /* start, end, 2 t + kind */
    zero_result res = ZERO_OK;
    int t, m = 0, i;
    if (!r) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: tensor memory table");
    for (t = 0; t < n; t++) {
        size_t bytes = (size_t)ts[t].numel * e->plan.csize;
        if (e->plan.tdata[t])
            r[3 * m] = (uintptr_t)e->plan.tdata[t], r[3 * m + 1] = r[3 * m] + bytes, r[3 * m + 2] = 2 * (uintptr_t)t, m++;
        if (e->plan.tgrad[t])
            r[3 * m] = (uintptr_t)e->plan.tgrad[t], r[3 * m + 1] = r[3 * m] + bytes, r[3 * m + 2] = 2 * (uintptr_t)t + 1, m++;
    }
    qsort(r, (size_t)m, 3 * sizeof(uintptr_t), zero__range_cmp);
    for (i = 0; i + 1 < m && res == ZERO_OK; i++)
        if (r[3 * i + 1] > r[3 * (i + 1)]) {
            /* the gradient's side first, whichever starts lower, with both byte ranges */
            const uintptr_t *g = (r[3 * i + 2] & 1) ? &r[3 * i] : &r[3 * (i + 1)];
            const uintptr_t *d = g == &r[3 * i] ? &r[3 * (i + 1)] : &r[3 * i];
            int tg = (int)(g[2] / 2), td = (int)(d[2] / 2);
            res = zero__efail(e, ZERO_MSG_BAD_ARG,
                              "zero_engine_create: the grad of tensor '%s' [%p, %p) overlaps the data of %s%s%s [%p, %p) "
                              "in the program's memory: a gradient written or cleared there would change the weights",
                              ts[tg].name, (void *)g[0], (void *)g[1], tg == td ? "the same tensor" : "tensor '",
                              tg == td ? "" : ts[td].name, tg == td ? "" : "'", (void *)d[0], (void *)d[1]);
        }
    ZERO_FREE(r);
    return res;
}

/* The program's own parameter memory (zero_tensor.data): for every tensor
   or none, stages 0-2. */
static zero_result zero__plan_ext(zero_engine *e, const zero_tensor *ts, int n) {
    int t, given = 0, first_missing = -1;
    for (t = 0; t < n; t++) {
        if (ts[t].data) given++;
        else if (first_missing < 0) first_missing = t;
    }
    if (!given) return ZERO_OK;
    if (given < n)
        return zero__efail(e, ZERO_MSG_ENGINE_CONFIG, "zero_engine_create: tensor '%s' has no data while %d others point at "
                                                      "the program's memory\nHINT: give zero_tensor.data for every tensor or "
                                                      "for none", ts[first_missing].name, given);
    if (e->plan.stage == 3) { /* the program's pointers kept: its memory must be zero_alloc's */
        for (t = 0; t < n; t++)
            if (!zero__vm_find(ts[t].data, (size_t)ts[t].numel * e->plan.csize))
                return zero__efail(e, ZERO_MSG_ENGINE_CONFIG,
                                   "zero_engine_create: tensor '%s' points at memory zero_alloc did not give (%p): stage 3 "
                                   "keeps only each rank's shard and backs the program's pointers with memory only where a "
                                   "layer is gathered, which needs an address range it manages\nHINT: allocate the "
                                   "parameters with zero_alloc(backend, bytes, &ptr, &err) where the program called cudaMalloc "
                                   "(the pointers, and the arithmetic over them, stay as they are); or leave "
                                   "zero_tensor.data NULL and use zero_param between zero_fetch and zero_release",
                                   ts[t].name, ts[t].data);
        e->plan.pvm = 1;
        e->plan.tdata = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)n);
        if (!e->plan.tdata) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: tensor memory table");
        for (t = 0; t < n; t++) e->plan.tdata[t] = ts[t].data;
        return zero__check_program_memory(e, ts, e->plan.tdata, n, "data");
    }
    if (e->nvme.on)
        return zero__efail(e, ZERO_MSG_ENGINE_CONFIG, "zero_engine_create: tensor '%s' points at the program's memory, which "
                                                      "offload_optimizer \"nvme\" does not support yet\nHINT: \"cpu\", or leave "
                                                      "zero_tensor.data NULL", ts[0].name);
    e->plan.ext = 1;
    e->xfer.outside_dev = 1; /* (zero__copy counts the staging's copies to and from the program's tensors) */
    e->plan.tdata = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)n);
    if (!e->plan.tdata) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: tensor memory table");
    for (t = 0; t < n; t++) e->plan.tdata[t] = ts[t].data;
    return zero__check_program_memory(e, ts, e->plan.tdata, n, "data");
}

/* The program's own gradient memory (zero_tensor.grad): for every trainable
   tensor or none, any stage (e->plan.gext was set from it before the
   dtypes were planned). */
static zero_result zero__plan_gext(zero_engine *e, const zero_tensor *ts, int n) {
    int t;
    zero_result r;
    if (!e->plan.gext) return ZERO_OK;
    for (t = 0; t < n; t++) {
        int frozen = (ts[t].flags & ZERO_TENSOR_FROZEN) != 0;
        if (!frozen && !ts[t].grad)
            return zero__efail(e, ZERO_MSG_ENGINE_CONFIG, "zero_engine_create: tensor '%s' has no grad while others point "
                                                          "at the program's gradient memory\nHINT: give zero_tensor.grad for "
                                                          "every trainable tensor or for none", ts[t].name);
        if (frozen && ts[t].grad)
            return zero__efail(e, ZERO_MSG_ENGINE_CONFIG, "zero_engine_create: tensor '%s' is frozen (ZERO_TENSOR_FROZEN) and "
                                                          "has no gradient: leave its grad NULL", ts[t].name);
    }
    e->plan.tgrad = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)n);
    if (!e->plan.tgrad) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: tensor memory table");
    for (t = 0; t < n; t++) e->plan.tgrad[t] = ts[t].grad;
    if ((r = zero__check_program_memory(e, ts, e->plan.tgrad, n, "grad")) != ZERO_OK) return r;
    if (e->plan.pvm)
        for (t = 0; t < n; t++) {
            zero__vm_range *g = ts[t].grad ? zero__vm_find(ts[t].grad, 1) : NULL;
            int k;
            for (k = 0; g && k < n; k++)
                if (zero__vm_find(ts[k].data, 1) == g)
                    return zero__efail(e, ZERO_MSG_ENGINE_CONFIG,
                                       "zero_engine_create: the grad of tensor '%s' lies in the zero_alloc memory of the "
                                       "parameters (tensor '%s'), whose pages stage 3 unbacks\nHINT: keep gradients in "
                                       "memory of their own", ts[t].name, ts[k].name);
        }
    return e->plan.ext || e->plan.pvm ? zero__check_grad_vs_data(e, ts, n) : ZERO_OK;
}

/* ext, rank 0 at create: the tensors of unit u that have an init callback
   (a bound safetensors checkpoint) take its values in the unit's staging,
   over what the program's memory held; the broadcast then writes them into
   every rank's memory. */
static zero_result zero__ext_init_values(zero_engine *e, const zero_tensor *ts, int u) {
    const zero_unit *x = &e->plan.layout->units[u];
    size_t bytes = e->plan.csize * (size_t)x->numel;
    int k, ns, any = 0;
    void *h;
    float *f;
    zero_error be;
    zero_result r = ZERO_OK;
    for (k = x->first_tensor; k <= x->last_tensor; k++) any |= ts[k].init != NULL;
    if (!any) return ZERO_OK;
    h = ZERO_MALLOC(bytes);
    f = (float *)ZERO_MALLOC(sizeof(float) * (size_t)x->numel);
    zero__ok(&be);
    if (!h || !f) {
        r = zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: %lld elements of init staging", (long long)x->numel);
    } else if (zero__copy(e, h, e->buf.ustage, bytes, ZERO_STREAM_COMM, &be) != ZERO_OK ||
               zero__sync(e, ZERO_STREAM_COMM, &be) != ZERO_OK) {
        r = zero__ebackend(e, &be, "zero_engine_create: the program's weights");
    } else {
        zero__host_uncast(f, e->plan.cdt, h, x->numel);
        ns = zero__unit_segments(e->plan.layout, u, 0, x->numel, e->buf.segtmp, x->last_tensor - x->first_tensor + 1);
        for (k = 0; k < ns; k++) {
            const zero__seg *sg = &e->buf.segtmp[k];
            if (ts[sg->tensor].init)
                ts[sg->tensor].init(ts[sg->tensor].init_user, sg->tensor, sg->tensor_off, sg->count, f + sg->unit_off);
        }
        zero__host_cast(h, e->plan.cdt, f, x->numel);
        if (zero__copy(e, e->buf.ustage, h, bytes, ZERO_STREAM_COMM, &be) != ZERO_OK ||
            zero__sync(e, ZERO_STREAM_COMM, &be) != ZERO_OK)
            r = zero__ebackend(e, &be, "zero_engine_create: the initial weights");
    }
    ZERO_FREE(h);
    ZERO_FREE(f);
    return r;
}

/* Write initial weights: each rank only what it keeps (stage 0: everything). */
/* ext, at create: unit u from the program's memory into the staging, rank
   0's broadcast to every rank and written back to the program's memory (the
   ranks start from the same weights, as DeepSpeed's broadcast at
   initialize); the n elements from lo (the rank's part) as fp32 in vals. */
static zero_result zero__ext_init_unit(zero_engine *e, const zero_tensor *ts, int u, int64_t lo, int64_t n, float *vals,
                                       void *cast) {
    const zero_unit *x = &e->plan.layout->units[u];
    int64_t have = zero__max_i64(0, zero__min_i64(lo + n, x->padded) - lo);
    zero_result r;
    ZERO__TRY_BE(e, "zero_engine_create: the program's weights", zero__ext_copy(e, u, 0, &be_err_));
    if (e->plan.grank == 0 && (r = zero__ext_init_values(e, ts, u)) != ZERO_OK) return r;
    if ((r = zero__coll_check(e, ZERO__C_INIT, u)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "zero_engine_create: broadcast of the program's weights",
                 e->be.broadcast(e->be.ctx, e->buf.ustage, (size_t)x->padded, e->plan.cdt, 0, ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_engine_create: the program's weights", zero__ext_copy(e, u, 1, &be_err_));
    ZERO__TRY_BE(e, "zero_engine_create: the program's weights",
                 zero__copy(e, cast, zero__at(e->buf.ustage, lo, e->plan.csize), (size_t)have * e->plan.csize,
                            ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_engine_create: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    zero__host_uncast(vals, e->plan.cdt, cast, have);
    if (have < n) memset(vals + have, 0, sizeof(float) * (size_t)(n - have));
    /* padding holds no weights: zero, so the unit's zero elements stay zero */
    {
        const zero__seg *sg;
        int k, ns = zero__unit_segments(e->plan.layout, u, lo, lo + have, e->buf.segtmp, x->last_tensor - x->first_tensor + 1);
        int64_t at = lo;
        for (k = 0; k < ns; k++) {
            sg = &e->buf.segtmp[k];
            if (sg->unit_off > at) memset(vals + (at - lo), 0, sizeof(float) * (size_t)(sg->unit_off - at));
            at = sg->unit_off + sg->count;
        }
        if (lo + have > at) memset(vals + (at - lo), 0, sizeof(float) * (size_t)(lo + have - at));
    }
    return ZERO_OK;
}

/* gext: unit u's gradients from the program's memory into the unit staging
   (its padding stays zero), on the comm stream; then the program's memory is
   cleared there, so the next micro-batch's backward adds into zeros (a
   program that writes its gradients without asking zero_grad, and a tensor no
   kernel wrote, both see zero; the next micro-batch's compute waits for the
   comm stream at the end of this one). */
static zero_result zero__gext_gather(zero_engine *e, int u, zero_error *fail) {
    const zero_unit *x = &e->plan.layout->units[u];
    int k, n = zero__unit_segments(e->plan.layout, u, 0, x->numel, e->buf.segtmp, x->last_tensor - x->first_tensor + 1);
    for (k = 0; k < n; k++) {
        const zero__seg *sg = &e->buf.segtmp[k];
        char *prog = zero__at(e->plan.tgrad[sg->tensor], sg->tensor_off, e->plan.csize);
        if (zero__copy(e, zero__at(e->buf.gstage, sg->unit_off, e->plan.csize), prog, (size_t)sg->count * e->plan.csize,
                       ZERO_STREAM_COMM, fail) != ZERO_OK ||
            e->be.memset0(e->be.ctx, prog, (size_t)sg->count * e->plan.csize, ZERO_STREAM_COMM, fail) != ZERO_OK)
            return fail->code;
    }
    return ZERO_OK;
}

/* fp32 values of unit u's elements [lo, hi) from the init callbacks (zeros in gaps). */
static void zero__init_values(const zero_engine *e, const zero_tensor *ts, int u, int64_t lo, int64_t hi,
                              float *out, zero__seg *segs, int cap) {
    int n = zero__unit_segments(e->plan.layout, u, lo, hi, segs, cap), k;
    memset(out, 0, sizeof(float) * (size_t)(hi - lo));
    for (k = 0; k < n; k++) {
        const zero_tensor *t = &ts[segs[k].tensor];
        if (t->init)
            t->init(t->init_user, segs[k].tensor, segs[k].tensor_off, segs[k].count, out + (segs[k].unit_off - lo));
    }
}

/* Unit u's initial values of this rank's range [lo, lo + n) into vals
   (fp32; cast: scratch of n compute-dtype elements): from the program's
   memory where it holds the weights (rank 0's, broadcast to every rank),
   else from the tensors' init callbacks (zeros where none, and in the
   padding). */
static zero_result zero__init_unit_values(zero_engine *e, const zero_tensor *ts, int u, int64_t lo, int64_t n, float *vals,
                                          void *cast, zero__seg *segs, int cap) {
    int64_t hi = zero__min_i64(lo + n, e->plan.layout->units[u].numel);
    if (e->plan.ext || e->plan.pvm) return zero__ext_init_unit(e, ts, u, lo, n, vals, cast);
    if (hi > lo) zero__init_values(e, ts, u, lo, hi, vals, segs, cap);
    if (hi - lo < n) memset(vals + zero__max_i64(0, hi - lo), 0, sizeof(float) * (size_t)(n - zero__max_i64(0, hi - lo)));
    return ZERO_OK;
}

/* At create: the program's gradient memory starts at zero (each reduction
   clears what it read). */
static zero_result zero__gext_clear(zero_engine *e) {
    int t;
    if (!e->plan.gext) return ZERO_OK;
    for (t = 0; t < e->plan.n_tensors; t++)
        if (e->plan.tgrad[t])
            ZERO__TRY_BE(e, "zero_engine_create: the program's gradients",
                         e->be.memset0(e->be.ctx, e->plan.tgrad[t], (size_t)e->plan.layout->numel[t] * e->plan.csize,
                                       ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

/* zero_grad with the program's gradient memory: its buffer, cleared at
   the micro-batch's first request unless the backward writes it whole. */
static void *zero__gext_grad(zero_engine *e, int t) {
    zero_error be;
    zero__ok(&be);
    if (!e->grad.asked[t] && !(e->plan.tflags[t] & ZERO_TENSOR_GRAD_WRITE) &&
        e->be.memset0(e->be.ctx, e->plan.tgrad[t], (size_t)e->plan.layout->numel[t] * e->plan.csize, ZERO_STREAM_COMPUTE,
                      &be) != ZERO_OK) {
        zero__ebackend(e, &be, "zero_grad: clearing the program's gradient");
        return NULL;
    }
    e->grad.asked[t] = 1;
    return e->plan.tgrad[t];
}

/* ---- >>engine-fetch: stage 3: gather pool, fetch trace, prefetch; zero_fetch/release/param ----

   The persistent spans sit first, at fixed places; the rest of the pool is
   handed out first-fit from a sorted list of extents (no allocation during
   training). A required fetch that finds no room evicts unreferenced
   resident spans, least recently used first (prefetched ones last); if the
   spans still referenced leave no room, the fetch fails with POOL_FULL. */

/* Where a span of `need` elements goes: each gap offers its bottom and its
   top; the choice that leaves the largest free gap wins, and on a tie a
   large span (at least half the largest) goes to the top of its gap and a
   small one to the bottom. Large spans collect at the top end and small ones
   at the bottom, so a released span leaves a hole its successor fits into
   (first-fit alone strands a large unit between a small one and the end). */
static int64_t zero__pool_find(const zero_engine *e, int64_t need, int *at) {
    int64_t lo = e->pool.persist_elems, end = e->pool.persist_elems + e->pool.pool_elems, best = -1, best_left = -1;
    int64_t big = 0, largest_other = 0, cur = lo;
    int i, side, prefer_top, best_pref = -1;
    for (i = 0; i < e->plan.n_spans; i++)
        if (!e->spans[i].persistent) big = zero__max_i64(big, e->plan.span_padded[i]);
    prefer_top = 2 * need >= big;
    /* the largest gap, and the second largest, decide what is left after a placement */
    for (i = 0; i <= e->pool.n_ext; i++) {
        int64_t next = i < e->pool.n_ext ? e->pool.ext_off[i] : end;
        largest_other = zero__max_i64(largest_other, next - cur);
        if (i < e->pool.n_ext) cur = e->pool.ext_off[i] + e->pool.ext_len[i];
    }
    cur = lo;
    for (i = 0; i <= e->pool.n_ext; i++) {
        int64_t next = i < e->pool.n_ext ? e->pool.ext_off[i] : end, gap = next - cur;
        if (gap >= need) {
            /* largest free gap after placing here: the rest of this gap, or the
               largest other gap (recomputed only when this gap was the largest) */
            int64_t other = 0, c2 = lo;
            int k;
            if (gap == largest_other) {
                for (k = 0; k <= e->pool.n_ext; k++) {
                    int64_t nx = k < e->pool.n_ext ? e->pool.ext_off[k] : end;
                    if (k != i) other = zero__max_i64(other, nx - c2);
                    if (k < e->pool.n_ext) c2 = e->pool.ext_off[k] + e->pool.ext_len[k];
                }
            } else {
                other = largest_other;
            }
            for (side = 0; side < 2; side++) {
                int top = side == 1, pref = top == prefer_top;
                int64_t left = zero__max_i64(other, gap - need);
                if (left > best_left || (left == best_left && pref > best_pref)) {
                    best = top ? next - need : cur;
                    best_left = left;
                    best_pref = pref;
                    *at = i;
                }
            }
        }
        if (i < e->pool.n_ext) cur = e->pool.ext_off[i] + e->pool.ext_len[i];
    }
    return best;
}

static void zero__pool_take(zero_engine *e, int s, int64_t off, int at) {
    int i;
    for (i = e->pool.n_ext; i > at; i--) {
        e->pool.ext_off[i] = e->pool.ext_off[i - 1];
        e->pool.ext_len[i] = e->pool.ext_len[i - 1];
    }
    e->pool.ext_off[at] = off;
    e->pool.ext_len[at] = e->plan.span_padded[s];
    e->pool.n_ext++;
    e->spans[s].pool_off = off;
}

static void zero__pool_drop(zero_engine *e, int s) {
    int i, j;
    zero__span_state *ss = &e->spans[s];
    if (ss->persistent || ss->pool_off < 0) return;
    if (ss->ev_free && ss->free_rec) { /* its region keeps its readers' fence until a gather takes it */
        if (e->pool.n_stale == e->pool.stale_cap) {
            e->pool.stale_full = 1;
            e->pool.n_stale = 0;
        }
        e->pool.stale_off[e->pool.n_stale] = ss->pool_off;
        e->pool.stale_len[e->pool.n_stale] = e->plan.span_padded[s];
        e->pool.stale_span[e->pool.n_stale++] = s;
    }
    for (i = 0; i < e->pool.n_ext; i++)
        if (e->pool.ext_off[i] == ss->pool_off) {
            for (j = i; j + 1 < e->pool.n_ext; j++) {
                e->pool.ext_off[j] = e->pool.ext_off[j + 1];
                e->pool.ext_len[j] = e->pool.ext_len[j + 1];
            }
            e->pool.n_ext--;
            break;
        }
    ss->pool_off = -1;
    ss->prefetched = 0;
    zero__pvm_drop(e, s);
}

static int64_t zero__pool_resident(const zero_engine *e) {
    int64_t n = 0;
    int i;
    for (i = 0; i < e->pool.n_ext; i++) n += e->pool.ext_len[i];
    return n;
}


/* Before a gather writes pool elements [off, off + len): the comm stream
   waits for the compute stream's readers of what was there (the spans
   dropped from that region, at their last release); all queued compute
   where the span has no events (or the list overflowed). An entry waited
   for is done with: the comm stream keeps that order for all later work. */
static zero_result zero__pool_fence(zero_engine *e, int s, int64_t off, int64_t len) {
    int i;
    zero_error be;
    if (!e->spans[s].ev_ready || e->pool.stale_full) {
        e->pool.stale_full = 0;
        e->pool.n_stale = 0;
        return zero__order(e, ZERO_STREAM_COMPUTE, ZERO_STREAM_COMM, e->buf.ev_compute);
    }
    zero__ok(&be);
    for (i = 0; i < e->pool.n_stale;) {
        if (e->pool.stale_off[i] < off + len && off < e->pool.stale_off[i] + e->pool.stale_len[i]) {
            if (zero__wait_on(e, ZERO_STREAM_COMM, e->spans[e->pool.stale_span[i]].ev_free, -1, "a pool region: its last readers",
                              &be) != ZERO_OK)
                return zero__ebackend(e, &be, "stage-3 fetch: stream order");
            e->pool.n_stale--;
            e->pool.stale_off[i] = e->pool.stale_off[e->pool.n_stale];
            e->pool.stale_len[i] = e->pool.stale_len[e->pool.n_stale];
            e->pool.stale_span[i] = e->pool.stale_span[e->pool.n_stale];
        } else {
            i++;
        }
    }
    return ZERO_OK;
}

/* The compute stream waits for span s's gather (once). */
static zero_result zero__span_ready(zero_engine *e, int s) {
    zero_error be;
    zero__span_state *ss = &e->spans[s];
    if (!ss->wait_ready) return ZERO_OK;
    zero__ok(&be);
    ss->wait_ready = 0;
    if (zero__wait_on(e, ZERO_STREAM_COMPUTE, ss->ev_ready, e->plan.layout->span_first[s], "a stage-3 gather", &be) != ZERO_OK)
        return zero__ebackend(e, &be, "stage-3 fetch: stream order");
    return ZERO_OK;
}

/* Gather span s into the pool at pool_off. now: the compute stream waits
   for it at once (a required fetch, a persistent span); else (a prefetch)
   at its zero_fetch. */
static zero_result zero__gather_span(zero_engine *e, int s, int64_t pool_off, int now) {
    const zero_layout *l = e->plan.layout;
    int u;
    double t0 = zero__now_ms();
    zero_result r;
    /* the pool region may still be read by kernels of a released span */
    if ((r = zero__pool_fence(e, s, pool_off, e->plan.span_padded[s])) != ZERO_OK) return r;
    if ((r = zero__pvm_hold(e, s)) != ZERO_OK) return r;
    for (u = l->span_first[s]; u < l->span_first[s + 1]; u++) {
        const zero_unit *x = &l->units[u];
        char *dst = zero__pvm_dst(e, u);
        const void *send;
        if (!dst) dst = zero__at(e->pool.base, pool_off + (x->offset - e->plan.span_off[s]), e->plan.csize);
        if ((r = zero__coll_check(e, ZERO__C_FETCH, u)) != ZERO_OK) return r;
        e->pool.n_gathered++;
        if ((r = zero__state_param_send(e, s, u, dst, &send)) != ZERO_OK) return r;
        ZERO__TRY_BE(e, "stage-3 all_gather",
                     zero__all_gather(e, send, dst, (size_t)x->chunk, e->plan.cdt, ZERO_STREAM_COMM, &be_err_));
    }
    if ((r = zero__pvm_scatter(e, s, pool_off)) != ZERO_OK) return r;
    if (e->spans[s].ev_ready) {
        ZERO__TRY_BE(e, "stage-3 fetch: stream order", e->be.event_record(e->be.ctx, e->spans[s].ev_ready, ZERO_STREAM_COMM, &be_err_));
        e->spans[s].wait_ready = 1;
        if (now && (r = zero__span_ready(e, s)) != ZERO_OK) return r;
    } else if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->buf.ev_comm)) != ZERO_OK) {
        return r;
    }
    e->run.t_phase[ZERO_PHASE_FETCH] += zero__now_ms() - t0;
    return ZERO_OK;
}


static int zero__pool_grow(zero_engine *e, int64_t need); /* (engine-setup) */

/* Make span s resident for a required fetch: unreferenced spans evicted,
   least recently used first, then (a derived pool) the pool grown. */
static zero_result zero__pool_fetch(zero_engine *e, int s) {
    int at;
    int64_t off;
    for (;;) {
        int i, victim = -1;
        off = zero__pool_find(e, e->plan.span_padded[s], &at);
        if (off >= 0) break;
        for (i = 0; i < e->plan.n_spans; i++) {
            const zero__span_state *c = &e->spans[i];
            if (c->persistent || c->pool_off < 0 || c->refs > 0) continue;
            if (victim < 0 || c->prefetched < e->spans[victim].prefetched ||
                (c->prefetched == e->spans[victim].prefetched && c->last_use < e->spans[victim].last_use))
                victim = i;
        }
        if (victim < 0) {
            char held[400];
            int grew = zero__pool_grow(e, e->plan.span_padded[s]);
            if (grew > 0) continue;
            if (grew < 0) return e->err.code;
            size_t n = 0;
            int k;
            held[0] = 0;
            for (k = 0; k < e->plan.n_spans && n < sizeof held - 64; k++)
                if (!e->spans[k].persistent && e->spans[k].refs > 0)
                    n += (size_t)snprintf(held + n, sizeof held - n, "%s'%s'", n ? ", " : "",
                                          zero__tname(e, e->plan.layout->units[e->plan.layout->span_first[k]].first_tensor));
            return zero__efail(e, ZERO_MSG_ENGINE_POOL_FULL,
                               "zero_fetch('%s'): its unit needs %lld elements, the stage-3 pool holds %lld and the "
                               "units of %s are still fetched\nHINT: zero_release tensors after use, or raise "
                               "zero_optimization.stage3_max_live_parameters (pool = max(max_live + prefetch, 2 x "
                               "largest unit); not given: the three largest groups and the largest once more)",
                               zero__tname(e, e->plan.layout->units[e->plan.layout->span_first[s]].first_tensor),
                               (long long)e->plan.span_padded[s], (long long)e->pool.pool_elems, held);
        }
        zero__pool_drop(e, victim);
    }
    zero__pool_take(e, s, off, at);
    return zero__gather_span(e, s, off, 1);
}

static void zero__trace_invalidate(zero_engine *e, const char *why) {
    if (!e->pool.trace_warned) {
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_TRACE,
                  "stage 3: %s; prefetch is off until the next micro-batch records the order again", why);
        e->pool.trace_warned = 1;
    }
    e->pool.trace_state = ZERO__TRACE_INVALID;
}

/* Gather what the recorded order says comes next, within
   min(max_live - resident, prefetch_bucket_size) elements. */
static zero_result zero__prefetch(zero_engine *e) {
    int64_t budget = zero__min_i64(e->pool.live_limit - zero__pool_resident(e), e->pool.prefetch_limit);
    int64_t vol = 0;
    int p;
    zero_result r;
    for (p = e->pool.trace_pos; p < e->pool.trace_len && vol < budget; p++) {
        int s = e->pool.trace[p], at;
        int64_t off;
        if (e->spans[s].pool_off >= 0 || e->spans[s].persistent) continue;
        off = zero__pool_find(e, e->plan.span_padded[s], &at);
        if (off < 0) break; /* prefetch never evicts */
        zero__pool_take(e, s, off, at);
        e->spans[s].prefetched = 1;
        e->spans[s].last_use = e->pool.fetch_clock;
        if ((r = zero__gather_span(e, s, off, 0)) != ZERO_OK) return r; /* used at its zero_fetch */
        vol += e->plan.span_padded[s];
    }
    return ZERO_OK;
}

static zero_result zero__check_tensor(zero_engine *e, int t, const char *fn) {
    if (t < 0 || t >= e->plan.n_tensors)
        return zero__efail(e, ZERO_MSG_ENGINE_UNKNOWN_TENSOR, "%s: tensor %d does not exist (the engine has %d)", fn, t,
                           e->plan.n_tensors);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_fetch(zero_engine *e, int t) {
    zero_result r;
    int s;
    zero__span_state *ss;
    if ((r = zero__enter(e, "zero_fetch")) != ZERO_OK || (r = zero__check_tensor(e, t, "zero_fetch")) != ZERO_OK)
        return r;
    zero__tl_call(e, "zero_fetch", t);
    if (e->pvm.failed.code != ZERO_OK) {
        e->err = e->pvm.failed;
        return e->err.code;
    }
    if (e->plan.stage != 3) return ZERO_OK;
    s = zero__span_of_tensor(e, t);
    ss = &e->spans[s];
    e->pool.fetch_clock++;
    if (ss->persistent || e->pool.gathered) { /* resident for good, or for zero_gather_params' while */
        ss->refs++;
        return ZERO_OK;
    }
    if (e->pool.trace_state == ZERO__TRACE_RECORD) {
        if (e->pool.trace_len < e->pool.trace_cap)
            e->pool.trace[e->pool.trace_len++] = s;
        else
            zero__trace_invalidate(e, "more fetches in a micro-batch than the trace holds");
    } else if (e->pool.trace_state == ZERO__TRACE_COMPLETE) {
        if (e->pool.trace_pos < e->pool.trace_len && e->pool.trace[e->pool.trace_pos] == s)
            e->pool.trace_pos++;
        else if (e->pool.trace_pos > 0 && e->pool.trace[0] == s && e->grad.ready_count == 0)
            /* the micro-batch's first fetch again before any gradient: what ran since was a forward alone (an eval,
               a sampling forward on every rank); the recorded order stands and starts over */
            e->pool.trace_pos = 1;
        else
            zero__trace_invalidate(e, "the fetch order differs from the one recorded");
    }
    e->pool.n_fetches++;
    if (ss->pool_off >= 0) {
        e->pool.n_hits++;
        if ((r = zero__span_ready(e, s)) != ZERO_OK) return r; /* a prefetch's gather, before the kernels that follow */
    } else if ((r = zero__pool_fetch(e, s)) != ZERO_OK) {
        return r;
    }
    ss->refs++;
    ss->prefetched = 0;
    ss->last_use = e->pool.fetch_clock;
    if (e->pool.trace_state == ZERO__TRACE_COMPLETE && e->pool.prefetch_limit > 0)
        return zero__prefetch(e);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_release(zero_engine *e, int t) {
    zero_result r;
    int s, keep = 0;
    zero__span_state *ss;
    if ((r = zero__enter(e, "zero_release")) != ZERO_OK || (r = zero__check_tensor(e, t, "zero_release")) != ZERO_OK)
        return r;
    zero__tl_call(e, "zero_release", t);
    if (e->plan.stage != 3) return ZERO_OK;
    s = zero__span_of_tensor(e, t);
    ss = &e->spans[s];
    if (ss->refs <= 0)
        return zero__efail(e, ZERO_MSG_ENGINE_RELEASE, "zero_release('%s'): not fetched (every zero_release needs a zero_fetch)",
                           zero__tname(e, t));
    if (--ss->refs > 0 || ss->persistent) return ZERO_OK;
    if (ss->ev_free) { /* the kernels queued so far are its last readers until the next fetch */
        zero_error be;
        zero__ok(&be);
        if (e->be.event_record(e->be.ctx, ss->ev_free, ZERO_STREAM_COMPUTE, &be) != ZERO_OK)
            return zero__ebackend(e, &be, "zero_release: stream order");
        ss->free_rec = 1;
    }
    if (e->pool.trace_state == ZERO__TRACE_COMPLETE) { /* used again soon? (stage3_max_reuse_distance) */
        /* the rest of this micro-batch's order, then, when another micro-batch of the step follows (the
           parameters stay what they are until zero_step), its order from the start */
        int64_t dist = 0;
        int p, n = e->pool.trace_len - e->pool.trace_pos + (e->run.micro < e->plan.gas - 1 ? e->pool.trace_pos : 0), k;
        for (k = 0; k < n && dist < e->cfg.zero_optimization.stage3_max_reuse_distance; k++) {
            p = (e->pool.trace_pos + k) % e->pool.trace_len;
            if (e->pool.trace[p] == s) {
                keep = 1;
                break;
            }
            dist += e->plan.span_padded[e->pool.trace[p]];
        }
    }
    if (!keep) zero__pool_drop(e, s);
    return ZERO_OK;
}

/* The tensors of group g, one call each: the group checked first (it has a tensor). */
static zero_result zero__group_check(zero_engine *e, int g, const char *fn) {
    int t, lo = 0, hi = -1;
    zero_result r;
    if ((r = zero__enter(e, fn)) != ZERO_OK) return r;
    for (t = 0; t < e->plan.n_tensors; t++) {
        if (e->plan.tgroup[t] == g) return ZERO_OK;
        if (t == 0 || e->plan.tgroup[t] < lo) lo = e->plan.tgroup[t];
        if (t == 0 || e->plan.tgroup[t] > hi) hi = e->plan.tgroup[t];
    }
    return zero__efail(e, ZERO_MSG_BAD_ARG, "%s(%d): no tensor has group %d (the tensors' groups run from %d to %d)", fn, g, g,
                       lo, hi);
}

/* fn(e, t) for every tensor of group g, in registration order. */
static zero_result zero__group_each(zero_engine *e, int g, const char *name, zero_result (*fn)(zero_engine *, int)) {
    zero_result r;
    int t;
    if ((r = zero__group_check(e, g, name)) != ZERO_OK) return r;
    for (t = 0; t < e->plan.n_tensors; t++)
        if (e->plan.tgroup[t] == g && (r = fn(e, t)) != ZERO_OK) return r;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_fetch_group(zero_engine *e, int g) {
    return zero__group_each(e, g, "zero_fetch_group", zero_fetch);
}

ZERO__DEF zero_result zero_release_group(zero_engine *e, int g) {
    return zero__group_each(e, g, "zero_release_group", zero_release);
}

ZERO__DEF zero_result zero_grad_ready_group(zero_engine *e, int g) {
    zero_result r;
    int t, n = 0;
    if ((r = zero__group_check(e, g, "zero_grad_ready_group")) != ZERO_OK) return r;
    for (t = 0; t < e->plan.n_tensors; t++)
        n += e->plan.tgroup[t] == g && !(e->plan.tflags[t] & ZERO_TENSOR_FROZEN) && !e->grad.ready[t];
    /* n of them: the last may complete the micro-batch, which clears every tensor's ready mark */
    for (t = e->plan.n_tensors - 1; t >= 0 && n > 0; t--)
        if (e->plan.tgroup[t] == g && !(e->plan.tflags[t] & ZERO_TENSOR_FROZEN) && !e->grad.ready[t]) {
            if ((r = zero_grad_ready(e, t)) != ZERO_OK) return r;
            n--;
        }
    return ZERO_OK;
}

ZERO__DEF void *zero_param(zero_engine *e, int t) {
    if (zero__enter(e, "zero_param") != ZERO_OK || zero__check_tensor(e, t, "zero_param") != ZERO_OK) return NULL;
    if (e->plan.stage == 3) {
        int s = zero__span_of_tensor(e, t);
        const zero__span_state *ss = &e->spans[s];
        if (!ss->persistent && (ss->refs <= 0 || ss->pool_off < 0)) {
            zero__efail(e, ZERO_MSG_ENGINE_NOT_FETCHED,
                        "zero_param('%s'): stage 3 keeps only a shard of it; call zero_fetch first (and zero_release "
                        "after use)",
                        zero__tname(e, t));
            return NULL;
        }
    }
    return zero__state_param_at(e, t);
}

static void zero__efree_counted(zero_engine *e, zero_mem_category cat, zero_mem_kind kind, void *p, size_t bytes);

/* The gradients and the step wait for zero_release_params. */
static zero_result zero__not_gathered(zero_engine *e, const char *fn) {
    if (!e->pool.gathered) return ZERO_OK;
    return zero__efail(e, ZERO_MSG_ENGINE_GATHERED, "%s: the parameters are gathered (zero_gather_params): every rank "
                       "calls zero_release_params first", fn);
}

/* Every span not persistent out of the pool (none is fetched): its readers'
   fences recorded at its release stand for it. */
static void zero__pool_empty(zero_engine *e) {
    int s;
    for (s = 0; s < e->plan.n_spans; s++)
        if (!e->spans[s].persistent && e->spans[s].pool_off >= 0) zero__pool_drop(e, s);
}

ZERO__DEF zero_result zero_gather_params(zero_engine *e) {
    int64_t need = 0;
    zero_result r;
    int s;
    if ((r = zero__enter(e, "zero_gather_params")) != ZERO_OK) return r;
    if (e->plan.stage != 3) return ZERO_OK;
    if (e->pool.gathered)
        return zero__efail(e, ZERO_MSG_ENGINE_GATHERED, "zero_gather_params: the parameters are gathered already "
                           "(every zero_gather_params needs its zero_release_params)");
    for (s = 0; s < e->plan.n_spans; s++) {
        if (e->spans[s].persistent) continue;
        if (e->spans[s].refs > 0) {
            int t;
            for (t = 0; t < e->plan.n_tensors && zero__span_of_tensor(e, t) != s; t++) {
            }
            return zero__efail(e, ZERO_MSG_ENGINE_GATHERED, "zero_gather_params: '%s' is fetched: call it between "
                               "steps, with every zero_fetch released", zero__tname(e, t));
        }
        need += e->plan.span_padded[s];
    }
    zero__pool_empty(e);
    e->pool.saved_elems = e->pool.pool_elems;
    e->pool.saved_base = NULL;
    if (e->pool.pool_elems < need) {
        if (e->pvm.dyn_direct) { /* the pool only counts: more room costs nothing */
            e->pool.pool_elems = need;
        } else { /* a pool of the model's size for the while: the persistent spans copied to their places in it */
            void *big = NULL;
            size_t persist = (size_t)e->pool.persist_elems * e->plan.csize;
            if ((r = zero__ealloc(e, ZERO_MEM_GATHER_POOL, ZERO_MEM_DEVICE, persist + (size_t)need * e->plan.csize, &big,
                                  "zero_gather_params: a pool of the model's size")) != ZERO_OK)
                return r;
            if (persist) {
                ZERO__TRY_BE(e, "zero_gather_params: the persistent spans",
                             zero__copy(e, big, e->pool.base, persist, ZERO_STREAM_COMM, &be_err_));
            }
            e->pool.saved_base = e->pool.base;
            e->pool.base = big;
            e->pool.pool_elems = need;
        }
    }
    e->pool.n_stale = 0; /* (a new pool, or the same with every span dropped: the next gathers wait for all compute) */
    e->pool.stale_full = 1;
    e->pool.gathered = 1;
    for (s = 0; s < e->plan.n_spans; s++) {
        if (e->spans[s].persistent) continue;
        if ((r = zero__pool_fetch(e, s)) != ZERO_OK) return r;
        e->spans[s].refs++;
    }
    return ZERO_OK;
}

ZERO__DEF zero_result zero_release_params(zero_engine *e) {
    zero_result r;
    int s;
    if ((r = zero__enter(e, "zero_release_params")) != ZERO_OK) return r;
    if (e->plan.stage != 3) return ZERO_OK;
    if (!e->pool.gathered)
        return zero__efail(e, ZERO_MSG_ENGINE_RELEASE, "zero_release_params: the parameters are not gathered "
                           "(zero_gather_params first)");
    for (s = 0; s < e->plan.n_spans; s++) {
        zero__span_state *ss = &e->spans[s];
        if (ss->persistent || ss->refs <= 0) continue;
        ss->refs = 0; /* the window's hold, and any fetch inside it the program did not release */
        if (ss->ev_free) {
            zero_error be;
            zero__ok(&be);
            if (e->be.event_record(e->be.ctx, ss->ev_free, ZERO_STREAM_COMPUTE, &be) != ZERO_OK)
                return zero__ebackend(e, &be, "zero_release_params: stream order");
            ss->free_rec = 1;
        }
    }
    zero__pool_empty(e);
    e->pool.gathered = 0;
    if (e->pool.saved_base) { /* the readers of the model-sized pool done before it goes */
        ZERO__TRY_BE(e, "zero_release_params: the model-sized pool's readers", zero__sync(e, ZERO_STREAM_COMPUTE, &be_err_));
        ZERO__TRY_BE(e, "zero_release_params: the model-sized pool's writers", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
        zero__efree_counted(e, ZERO_MEM_GATHER_POOL, ZERO_MEM_DEVICE, e->pool.base,
                            (size_t)(e->pool.persist_elems + e->pool.pool_elems) * e->plan.csize);
        e->pool.base = e->pool.saved_base;
        e->pool.saved_base = NULL;
    }
    e->pool.pool_elems = e->pool.saved_elems;
    e->pool.n_stale = 0;
    e->pool.stale_full = 1;
    return ZERO_OK;
}

/* ---- >>engine-life: zero_engine_create/destroy: plan, allocate beside free, initial weights ----

   zero_engine_create plans (tables, units, spans, Adam segments), then
   allocates in a fixed order (parameters, stage-3 pool, gradients, optimizer
   state, offload staging, scratch), zero-fills and writes the initial
   weights. The memory plan (bytes per rank; Psi = padded elements, T =
   trainable, S = shard elements, d / a = compute / accumulation dtype bytes):
     PARAMS       stage 0-2: Psi d;   stage 3: S d; with the program's memory (zero_tensor.data,
                  stages 0-2): the largest unit's padded elements x d (its staging)
     GATHER_POOL  stage 3: (persistent spans + min(rest, max(max_live + prefetch, 2 U))) d,
                  U the largest non-persistent span
     GRADS        stage 0-1: Psi_T d; stage 2-3: (min(2, ring spans) x largest ring span + the spans
                  with a ZERO_TENSOR_GRAD_ANY_ORDER tensor, each its own size) x d; with the
                  program's gradient memory (zero_tensor.grad): the largest trainable unit x d;
                  stage 2 with N == 1, G == 1 and the optimizer on the device: 0 (the backward
                  writes into GRAD_ACCUM)
     GRAD_ACCUM   with zero_tensor.grad: stage 0-1 Psi_T a, stage 2-3 S_T a (a = d when G == 1)
     GRAD_ACCUM   stage 0-1: Psi_T a when G > 1, else 0; stage 2-3: S_T a, with a = d
                  when G == 1 (nothing to add up: the reduced chunk itself); with the optimizer
                  offloaded (stages 2-3) none on the device but, for G > 1, one largest unit's
                  chunk x a of staging there and (host_sum) three x d on the host (>>engine-hsum)
     MASTER       0 for fp32 (the parameters are the master, unless they are the program's);
                  stage 0: 4 Psi_T; else 4 S_T
     OPTIM_STATE  stage 0: 8 Psi_T; else 8 S_T
     SCRATCH      16 bytes per (unit, tensor) pair on the device and on the host (norm and
                  inf/nan statistics; the host copy pinned), + 8 ZERO_SCALARS_MAX on each
                  (zero_all_reduce_scalars), + 16 on each with check_collectives */

/* Every rank's flag summed (a barrier with agreement): 0 when all were 0. */
static zero_result zero__agree(zero_engine *e, double mine, double *sum) {
    e->buf.stats_host[0] = mine;
    ZERO__TRY_BE(e, "agreement of the ranks", zero__copy(e, e->buf.stats_dev, e->buf.stats_host, sizeof(double),
                                                        ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "agreement of the ranks", zero__all_reduce(e, e->buf.stats_dev, e->buf.stats_dev, 1,
                                                              (zero_dtype)ZERO__DTYPE_F64, ZERO_OP_SUM, ZERO_STREAM_COMM,
                                                              &be_err_));
    ZERO__TRY_BE(e, "agreement of the ranks", zero__copy(e, e->buf.stats_host, e->buf.stats_dev, sizeof(double),
                                                        ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "agreement of the ranks", e->be.memset0(e->be.ctx, e->buf.stats_dev, sizeof(double), ZERO_STREAM_COMM,
                                                           &be_err_));
    ZERO__TRY_BE(e, "agreement of the ranks", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    *sum = e->buf.stats_host[0];
    e->buf.stats_host[0] = 0;
    return ZERO_OK;
}




/* Initial weights from a safetensors checkpoint (zero_safetensors_bind):
   the ranks agree that every read succeeded, and all fail together,
   naming the file and tensor, when one did not. */
static zero_result zero__init_agree(zero_engine *e, const zero_tensor *ts) {
    zero_safetensors *st = NULL;
    zero_error mine;
    double sum = 0;
    int t, k;
    zero_result r;
    zero__ok(&mine);
    for (t = 0; t < e->plan.n_tensors && !st; t++)
        if (ts[t].init == zero__st_init && ts[t].init_user) st = ((zero__st_bind *)ts[t].init_user)->st;
    if (!st) return ZERO_OK; /* the same on every rank: the tensors are */
    pthread_mutex_lock(&st->lock); /* this thread's failure, taken out: the next create starts clean */
    for (k = 0; k < st->n_failed; k++)
        if (pthread_equal(st->failed[k].thread, pthread_self())) {
            mine = st->failed[k].err;
            st->failed[k] = st->failed[--st->n_failed];
            break;
        }
    pthread_mutex_unlock(&st->lock);
    if ((r = zero__agree(e, mine.code != ZERO_OK, &sum)) != ZERO_OK) return r;
    if (sum == 0) return ZERO_OK;
    if (mine.code != ZERO_OK) return zero__efail(e, mine.item, "zero_engine_create: initial weights: %s", mine.msg);
    return zero__efail(e, ZERO_MSG_FILE_READ, "zero_engine_create: initial weights: %g rank(s) could not read %s (see "
                       "their errors)", sum, st->n_files ? st->files[0].path : "the safetensors checkpoint");
}

static zero_result zero__engine_init_weights(zero_engine *e, const zero_tensor *ts) {
    const zero_layout *l = e->plan.layout;
    int64_t maxn = 0;
    int u, cap = 0;
    float *vals;
    void *cast;
    zero__seg *segs;
    zero__state_io io;
    zero_result r = ZERO_OK;
    for (u = 0; u < l->n_units; u++) {
        maxn = zero__max_i64(maxn, e->plan.stage == 0 ? l->units[u].padded : l->units[u].chunk);
        cap = (int)zero__max_i64(cap, l->units[u].last_tensor - l->units[u].first_tensor + 1);
    }
    if ((r = zero__pvm_setup(e)) != ZERO_OK) return r;
    vals = (float *)ZERO_MALLOC(sizeof(float) * (size_t)maxn);
    cast = ZERO_MALLOC(e->plan.csize * (size_t)maxn);
    segs = (zero__seg *)ZERO_MALLOC(sizeof(zero__seg) * (size_t)cap);
    if (!vals || !cast || !segs) {
        ZERO_FREE(vals);
        ZERO_FREE(cast);
        ZERO_FREE(segs);
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: %lld elements of init staging",
                           (long long)maxn);
    }
    io.stage = cast;
    io.tile = NULL; /* (zero__state_put takes the step's first tile buffer) */
    for (u = 0; u < l->n_units && r == ZERO_OK; u++) {
        const zero_unit *x = &l->units[u];
        int64_t lo = e->plan.stage == 0 ? 0 : (int64_t)e->plan.rank * x->chunk;
        int64_t n = e->plan.stage == 0 ? x->padded : x->chunk;
        zero_error be;
        zero__ok(&be);
        if ((r = zero__init_unit_values(e, ts, u, lo, n, vals, cast, segs, cap)) != ZERO_OK) break;
        if (zero__state_put(e, u, vals, NULL, NULL, &io, &be) != ZERO_OK) {
            r = zero__ebackend(e, &be, "zero_engine_create: initial weights");
            break;
        }
    }
    ZERO_FREE(vals);
    ZERO_FREE(cast);
    ZERO_FREE(segs);
    if (r != ZERO_OK) return r;
    if ((r = zero__init_agree(e, ts)) != ZERO_OK) return r;
    if ((r = zero__state_spread(e)) != ZERO_OK) return r;
    if (e->plan.stage == 3) {
        int s;
        for (s = 0; s < e->plan.n_spans; s++)
            if (e->spans[s].persistent && (r = zero__gather_span(e, s, e->spans[s].pool_off, 1)) != ZERO_OK) return r;
    }
    if ((r = zero__gext_clear(e)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "zero_engine_create: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    return zero__pvm_start(e);
}


/* The engine's host tables and stream-order events. */
static zero_result zero__plan_tables(zero_engine *e, int n) {
    const zero_layout *l = e->plan.layout;
    e->plan.n_tensors = n;
    e->plan.n_units = l->n_units;
    e->plan.n_spans = l->n_spans;
    e->plan.tflags = (int *)ZERO_MALLOC(sizeof(int) * (size_t)n);
    e->plan.tlr = (float *)ZERO_MALLOC(sizeof(float) * (size_t)n);
    e->plan.tgroup = (int *)ZERO_MALLOC(sizeof(int) * (size_t)n);
    e->plan.tndim = (int *)ZERO_MALLOC(sizeof(int) * (size_t)n);
    e->plan.tshape = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * ZERO_MAX_DIMS * (size_t)n);
    e->grad.ready = (unsigned char *)ZERO_MALLOC((size_t)n);
    e->grad.asked = (unsigned char *)ZERO_MALLOC((size_t)n);
    e->plan.unit_buf_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_units);
    e->plan.unit_shard_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_units);
    e->grad.tensors_left = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->grad.tensors_per_unit = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->plan.seg_first = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->plan.seg_count = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    e->spans = (zero__span_state *)ZERO_MALLOC(sizeof(zero__span_state) * (size_t)l->n_spans);
    e->plan.span_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->plan.span_padded = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->pool.ext_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->pool.ext_len = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)l->n_spans);
    e->grad.span_slot = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_spans);
    e->grad.span_own = (unsigned char *)ZERO_MALLOC((size_t)l->n_spans);
    e->pool.trace_cap = 4 * n + 64;
    e->pool.trace = (int *)ZERO_MALLOC(sizeof(int) * (size_t)e->pool.trace_cap);
    if (!e->plan.tflags || !e->plan.tlr || !e->plan.tgroup || !e->plan.tndim || !e->plan.tshape || !e->grad.ready ||
        !e->grad.asked || !e->plan.unit_buf_off || !e->plan.unit_shard_off || !e->grad.tensors_left ||
        !e->grad.tensors_per_unit || !e->plan.seg_first || !e->plan.seg_count || !e->spans || !e->plan.span_off ||
        !e->plan.span_padded || !e->pool.ext_off || !e->pool.ext_len || !e->grad.span_slot || !e->grad.span_own ||
        !e->pool.trace)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: engine tables for %d tensors", n);
    memset(e->spans, 0, sizeof(zero__span_state) * (size_t)l->n_spans); /* (no events yet, whatever fails next) */
    memset(e->grad.ready, 0, (size_t)n);
    memset(e->grad.asked, 0, (size_t)n);
    if (e->be.event_create && e->be.event_record && e->be.stream_wait && e->be.event_destroy) {
        zero_error be;
        zero__ok(&be);
        if (e->be.event_create(e->be.ctx, &e->buf.ev_compute, &be) != ZERO_OK ||
            e->be.event_create(e->be.ctx, &e->buf.ev_comm, &be) != ZERO_OK)
            return zero__ebackend(e, &be, "zero_engine_create: events");
    }
    return ZERO_OK;
}

static void zero__free_tables(zero_engine *e) {
    if (e->be.event_destroy) {
        if (e->buf.ev_compute) e->be.event_destroy(e->be.ctx, e->buf.ev_compute);
        if (e->buf.ev_comm) e->be.event_destroy(e->be.ctx, e->buf.ev_comm);
    }
    ZERO_FREE(e->plan.tflags);
    ZERO_FREE(e->plan.tlr);
    ZERO_FREE(e->plan.tgroup);
    ZERO_FREE(e->plan.tndim);
    ZERO_FREE(e->plan.tshape);
    ZERO_FREE(e->plan.unit_buf_off);
    ZERO_FREE(e->plan.unit_shard_off);
    ZERO_FREE(e->grad.tensors_left);
    ZERO_FREE(e->grad.tensors_per_unit);
    ZERO_FREE(e->plan.seg_first);
    ZERO_FREE(e->plan.seg_count);
    ZERO_FREE(e->plan.segs);
    ZERO_FREE(e->plan.seg_tensor);
    ZERO_FREE(e->grad.ready);
    ZERO_FREE(e->grad.asked);
    ZERO_FREE(e->spans);
    ZERO_FREE(e->plan.span_off);
    ZERO_FREE(e->plan.span_padded);
    ZERO_FREE(e->grad.span_slot);
    ZERO_FREE(e->grad.span_own);
    ZERO_FREE(e->pool.ext_off);
    ZERO_FREE(e->pool.ext_len);
    ZERO_FREE(e->pool.trace);
    ZERO_FREE(e->plan.pair_first);
    ZERO_FREE(e->buf.segtmp);
    ZERO_FREE(e->buf.sq);
    ZERO_FREE(e->buf.uargs);
    ZERO_FREE(e->grad.clear_lo);
    ZERO_FREE(e->grad.clear_hi);
    ZERO_FREE(e->grad.unit_asked);
    ZERO_FREE(e->plan.tdata);
    ZERO_FREE(e->plan.tgrad);
}

/* Stages 2-3: the gradient slots' sizes from grad.span_own: each trainable
   span marked there gets a slot of its own (numbered from 0 here, after the
   ring's in zero__slots_fill), the others share the ring, whose slot is the
   largest of them. */
static void zero__slot_sizes(zero_engine *e, zero__sizes *zs) {
    int s;
    zs->trainable_spans = zs->own_spans = 0;
    zs->slot = zs->own_elems = 0;
    for (s = 0; s < e->plan.n_spans; s++) {
        e->grad.span_slot[s] = -1;
        if (e->spans[s].frozen) continue;
        if (e->grad.span_own[s]) {
            e->grad.span_slot[s] = zs->own_spans++;
            zs->own_elems += e->plan.span_padded[s];
        } else {
            zs->trainable_spans++;
            zs->slot = zero__max_i64(zs->slot, e->plan.span_padded[s]);
        }
    }
}

/* Per tensor, unit and span: flags, offsets in the trainable buffers and the
   shard, norm-statistics pairs, span extents; the sizes the allocations use. */
static zero_result zero__plan_units(zero_engine *e, const zero_tensor *ts, int n, zero__sizes *zs) {
    const zero_layout *l = e->plan.layout;
    int u, s, i;
    int64_t goff = 0, tsh = 0;
    memset(zs, 0, sizeof *zs);
    for (i = 0; i < n; i++) {
        e->plan.tflags[i] = ts[i].flags;
        e->plan.tlr[i] = ts[i].lr_scale > 0 ? ts[i].lr_scale : 1.0f;
        e->plan.tgroup[i] = ts[i].group;
        e->plan.tndim[i] = ts[i].ndim > 0 && ts[i].ndim <= ZERO_MAX_DIMS ? ts[i].ndim : 0;
        memcpy(e->plan.tshape + (size_t)i * ZERO_MAX_DIMS, ts[i].shape, sizeof(int64_t) * ZERO_MAX_DIMS);
        if (!(ts[i].flags & ZERO_TENSOR_FROZEN)) e->plan.n_trainable++;
    }
    if (e->plan.n_trainable == 0)
        return zero__efail(e, ZERO_MSG_ENGINE_CONFIG, "zero_engine_create: all %d tensors are frozen (ZERO_TENSOR_FROZEN): "
                                                      "nothing to train", n);
    e->plan.pair_first = (int *)ZERO_MALLOC(sizeof(int) * (size_t)l->n_units);
    if (!e->plan.pair_first) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: engine tables");
    for (u = 0; u < l->n_units; u++) {
        const zero_unit *x = &l->units[u];
        e->plan.pair_first[u] = e->plan.n_pairs;
        e->plan.n_pairs += x->last_tensor - x->first_tensor + 1;
        e->plan.unit_buf_off[u] = x->frozen ? -1 : goff;
        e->plan.unit_shard_off[u] = x->frozen ? -1 : tsh;
        if (!x->frozen) goff += x->padded, tsh += x->chunk;
        e->grad.tensors_per_unit[u] = e->grad.tensors_left[u] = x->frozen ? 0 : x->last_tensor - x->first_tensor + 1;
        zs->maxcap = (int)zero__max_i64(zs->maxcap, x->last_tensor - x->first_tensor + 1);
    }
    for (s = 0; s < l->n_spans; s++) {
        const zero_unit *f = &l->units[l->span_first[s]], *la = &l->units[l->span_first[s + 1] - 1];
        zero__span_state *ss = &e->spans[s];
        int ti;
        memset(ss, 0, sizeof *ss);
        ss->pool_off = -1;
        ss->slot = -1;
        ss->frozen = f->frozen;
        ss->persistent = f->persistent;
        for (ti = f->first_tensor; ti <= la->last_tensor; ti++)
            if (!(ts[ti].flags & (ZERO_TENSOR_GRAD_WRITE | ZERO_TENSOR_FROZEN))) ss->clear = 1;
        e->plan.span_off[s] = f->offset;
        e->plan.span_padded[s] = la->offset + la->padded - f->offset;
        e->grad.span_own[s] = 0;
        if (!f->frozen && e->plan.stage >= 2 && !e->plan.gext)
            for (ti = f->first_tensor; ti <= la->last_tensor; ti++)
                if ((ts[ti].flags & ZERO_TENSOR_GRAD_ANY_ORDER) && !(ts[ti].flags & ZERO_TENSOR_FROZEN))
                    e->grad.span_own[s] = ZERO__OWN_FLAG;
        if (f->persistent) {
            ss->pool_off = zs->persist;
            zs->persist += e->plan.span_padded[s];
        } else {
            zs->dyn_total += e->plan.span_padded[s];
            zs->dyn_max = zero__max_i64(zs->dyn_max, e->plan.span_padded[s]);
        }
    }
    zero__slot_sizes(e, zs);
    zs->psi = l->padded_numel;
    zs->psiT = goff;
    zs->S = l->shard_numel;
    zs->ST = tsh;
    return ZERO_OK;
}

/* Adam segments: whole units on stage 0, the owned chunk otherwise (freed
   with the tables). */
static zero_result zero__plan_segments(zero_engine *e, int maxcap) {
    const zero_layout *l = e->plan.layout;
    zero__seg *tmp;
    int u, total = 0, nseg = 0;
    e->buf.segtmp = (zero__seg *)ZERO_MALLOC(sizeof(zero__seg) * (size_t)maxcap);
    e->buf.sq = (zero_sumsq_seg *)ZERO_MALLOC(sizeof(zero_sumsq_seg) * (size_t)(e->plan.n_pairs + 1));
    e->buf.uargs = (zero_adam_args *)ZERO_MALLOC(sizeof(zero_adam_args) * (size_t)(l->n_units + 1));
    e->grad.clear_lo = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)(l->n_units + 1));
    e->grad.clear_hi = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)(l->n_units + 1));
    e->grad.unit_asked = (unsigned char *)ZERO_MALLOC((size_t)(l->n_units + 1));
    if (!e->buf.segtmp || !e->buf.sq || !e->buf.uargs || !e->grad.clear_lo || !e->grad.clear_hi || !e->grad.unit_asked)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: segments");
    memset(e->grad.unit_asked, 0, (size_t)(l->n_units + 1));
    tmp = (zero__seg *)ZERO_MALLOC(sizeof(zero__seg) * (size_t)maxcap);
    if (!tmp) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: segments");
    for (u = 0; u < l->n_units; u++) { /* the part of each unit that accumulating tensors write */
        const zero_unit *x = &l->units[u];
        int k, c = x->frozen ? 0 : zero__unit_segments(l, u, 0, x->numel, tmp, maxcap);
        e->grad.clear_lo[u] = e->grad.clear_hi[u] = 0;
        for (k = 0; k < c; k++) {
            if (e->plan.tflags[tmp[k].tensor] & (ZERO_TENSOR_GRAD_WRITE | ZERO_TENSOR_FROZEN)) continue;
            if (e->grad.clear_hi[u] == e->grad.clear_lo[u]) e->grad.clear_lo[u] = tmp[k].unit_off;
            e->grad.clear_lo[u] = zero__min_i64(e->grad.clear_lo[u], tmp[k].unit_off);
            e->grad.clear_hi[u] = zero__max_i64(e->grad.clear_hi[u], tmp[k].unit_off + tmp[k].count);
        }
    }
    for (u = 0; u < l->n_units; u++) total += l->units[u].frozen ? 0 : l->units[u].last_tensor - l->units[u].first_tensor + 1;
    e->plan.segs = (zero_adam_seg *)ZERO_MALLOC(sizeof(zero_adam_seg) * (size_t)(total ? total : 1));
    e->plan.seg_tensor = (int *)ZERO_MALLOC(sizeof(int) * (size_t)(total ? total : 1));
    if (!e->plan.segs || !e->plan.seg_tensor) {
        ZERO_FREE(tmp);
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: segments");
    }
    for (u = 0; u < l->n_units; u++) {
        const zero_unit *x = &l->units[u];
        int64_t lo = e->plan.stage == 0 ? 0 : (int64_t)e->plan.rank * x->chunk;
        int64_t hi = e->plan.stage == 0 ? x->numel : zero__min_i64(lo + x->chunk, x->numel);
        int k, c = (x->frozen || hi <= lo) ? 0 : zero__unit_segments(l, u, lo, hi, tmp, maxcap);
        e->plan.seg_first[u] = nseg;
        e->plan.seg_count[u] = c;
        for (k = 0; k < c; k++) {
            e->plan.segs[nseg].offset = tmp[k].unit_off - lo;
            e->plan.segs[nseg].count = tmp[k].count;
            e->plan.seg_elems += tmp[k].count;
            e->plan.segs[nseg].lr = 0;
            e->plan.segs[nseg].weight_decay = 0;
            e->plan.seg_tensor[nseg++] = tmp[k].tensor;
        }
    }
    ZERO_FREE(tmp);
    return ZERO_OK;
}






/* Stage 3: the groups' elements (their spans that are not persistent; a
   group: consecutive tensors of one zero_tensor.group value, a layer; a tied
   embedding is one tensor, counted once): the largest (*max) and the three
   largest together (*top3). 0 when the program gave one group for all. */
static void zero__group_sizes(const zero_engine *e, int64_t *max, int64_t *top3) {
    const zero_layout *l = e->plan.layout;
    int64_t top[3] = {0, 0, 0}, run = 0;
    int s, prev = 0, groups = 0, k;
    for (s = 0; s <= e->plan.n_spans; s++) {
        int g = s < e->plan.n_spans ? e->plan.tgroup[l->units[l->span_first[s]].first_tensor] : prev;
        if (s == e->plan.n_spans || (s > 0 && g != prev)) { /* the run before s ends */
            for (k = 0; k < 3 && run <= top[k]; k++) {
            }
            if (k < 3) {
                memmove(top + k + 1, top + k, sizeof(int64_t) * (size_t)(2 - k));
                top[k] = run;
            }
            run = 0;
        }
        if (s == e->plan.n_spans) break;
        if (s == 0 || g != prev) groups++, prev = g;
        if (!e->spans[s].persistent) run += e->plan.span_padded[s];
    }
    *max = groups > 1 ? top[0] : 0;
    *top3 = groups > 1 ? top[0] + top[1] + top[2] : 0;
}

/* Stage 3 with max_live derived: the bound on the parameter bytes on the
   device, 1/N of the model (the shard) + the three largest groups and the
   largest once more (the pool, in whole granules where it may grow) + the
   persistent tensors; 0 when DeepSpeed's keys set the pool. */
static size_t zero__stage3_bound(const zero_engine *e) {
    if (e->plan.stage != 3 || !(e->pool.derived & 1)) return 0;
    return (size_t)(e->plan.layout->shard_numel + e->pool.live_limit + e->pool.persist_elems) * e->plan.csize +
           e->pool.vm_granule; /* (a pool that may grow is backed in whole granules) */
}

/* The stage-3 parameter bytes on the device: the shard (unless offload_param
   keeps it on the host) and the gather pool. */
static size_t zero__stage3_bytes(const zero_engine *e) {
    size_t shard = zero__params_on_device(e) ? (size_t)e->plan.layout->shard_numel * e->plan.csize : 0;
    return shard + e->mem.planned[ZERO_MEM_GATHER_POOL][ZERO_MEM_DEVICE];
}

/* At create, after the pool: the bound holds (a failure here is zero's bug, said as such). */
static zero_result zero__stage3_check(zero_engine *e) {
    size_t bound = zero__stage3_bound(e), have = zero__stage3_bytes(e);
    if (!bound || have <= bound) return ZERO_OK;
    return zero__efail(e, ZERO_MSG_ENGINE_POOL_FULL,
                       "zero_engine_create: stage 3 plans %zu bytes of parameters on the device, above its bound of %zu "
                       "(1/N of the model + a pool of %lld elements + the persistent tensors): a bug of "
                       "zero's, please report it\nHINT: set zero_optimization.stage3_max_live_parameters to plan the "
                       "pool from DeepSpeed's keys instead", have, bound, (long long)e->pool.live_limit);
}

/* The derived pool's backed bytes for `elems` elements past the persistent
   spans, whole granules. */
static size_t zero__pool_vm_bytes(const zero_engine *e, int64_t elems) {
    size_t b = (size_t)(e->pool.persist_elems + elems) * e->plan.csize, g = e->pool.vm_granule;
    return zero__min_i64((int64_t)((b + g - 1) / g * g), (int64_t)e->pool.vm_reserved);
}

/* Pages [vm_backed, bytes) of the derived pool backed, and counted where
   the memory report reads them. */
static zero_result zero__pool_vm_back(zero_engine *e, size_t bytes, const char *when) {
    zero_error be;
    size_t more;
    if (bytes <= e->pool.vm_backed) return ZERO_OK;
    more = bytes - e->pool.vm_backed;
    zero__ok(&be);
    if (e->be.vm_back(e->be.ctx, e->pool.vm_base + e->pool.vm_backed, more, &be) != ZERO_OK)
        return zero__efail(e, ZERO_MSG_ENGINE_POOL_FULL, "%s: the stage-3 gather pool's next %.1f MiB: %s\nHINT: set "
                           "zero_optimization.stage3_max_live_parameters to plan the pool from DeepSpeed's keys, or "
                           "release layers sooner", when, (double)more / 1048576.0, be.msg);
    e->pool.vm_backed = bytes;
    e->mem.planned[ZERO_MEM_GATHER_POOL][ZERO_MEM_DEVICE] += more;
    e->mem.allocated[ZERO_MEM_DEVICE] += more;
    return ZERO_OK;
}

/* The derived pool: an address range for the persistent spans and every
   other span, reserved unbacked and backed for the pool as planned (never
   more at once: a model near the GPU's size still fits). */
static zero_result zero__pool_vm_make(zero_engine *e) {
    zero_error be;
    void *base = NULL;
    zero__ok(&be);
    if (e->be.vm_reserve(e->be.ctx, (size_t)(e->pool.persist_elems + 2 * e->pool.dyn_total) * e->plan.csize, 0, &base,
                         &e->pool.vm_reserved, &e->pool.vm_granule, &be) != ZERO_OK)
        return zero__ebackend(e, &be, "zero_engine_create: the stage-3 gather pool's address range");
    e->pool.vm_base = (char *)base;
    e->pool.base = base;
    if (zero__xfer_add(e, base, e->pool.vm_reserved, 1) != ZERO_OK)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: the table of allocations");
    return zero__pool_vm_back(e, zero__pool_vm_bytes(e, e->pool.pool_elems), "zero_engine_create");
}

/* A needed fetch of `need` elements found the derived pool full of spans
   the program holds: the pool grows by a group (or the span). 1: grown; 0:
   it cannot (DeepSpeed's keys set it, it reached twice every span's size,
   or zero_gather_params' pool stands in); -1: failed. */
static int zero__pool_grow(zero_engine *e, int64_t need) {
    int64_t to;
    if (!e->pool.grows || e->pool.pool_elems + need > 2 * e->pool.dyn_total || e->pool.saved_base) return 0;
    /* (the room added is at the pool's end, after its last gap: the span fits there whatever the placement) */
    to = zero__min_i64(2 * e->pool.dyn_total, e->pool.pool_elems + zero__max_i64(need, e->pool.group_max));
    if (e->pool.vm_base && zero__pool_vm_back(e, zero__pool_vm_bytes(e, to), "zero_fetch") != ZERO_OK) return -1;
    if (e->plan.grank == 0)
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_POOL_GREW,
                  "stage 3: the gather pool grew from %lld to %lld elements: the program holds more at once than the "
                  "three largest groups and one more (set stage3_max_live_parameters to plan it yourself)",
                  (long long)e->pool.pool_elems, (long long)to);
    e->pool.pool_elems = to;
    return 1;
}

/* Stage 3's gather pool: the persistent spans, then room for the others:
   max(max_live + prefetch, 2 x the largest span) elements as DeepSpeed's
   keys say, or, where the config left stage3_max_live_parameters unset and
   the program gave its layers groups, the three largest groups (what a
   program of llm.c's shape holds at once: the embedding it reads at the
   start and at the head, a layer and the next, whose weights its fused
   kernels read) and room for the largest once more (the pool places spans
   first-fit: with no room to spare it fragments, measured on the llm.c
   port), the prefetch (given, or one group) inside it. Such a pool grows
   where the program holds more (zero__pool_grow), so it lies in an address
   range of every span's size, backed as far as it reaches. A program with
   one group for all, or a backend without address ranges, gets DeepSpeed's
   1e9 + 5e7. */
static zero_result zero__alloc_pool(zero_engine *e, const zero__sizes *zs) {
    const zero_optimization_config *z = &e->cfg.zero_optimization;
    int64_t want, top3;
    if (e->plan.stage != 3) return ZERO_OK;
    {
        zero_result r = zero__pvm_plan_direct(e);
        if (r != ZERO_OK) return r;
    }
    zero__group_sizes(e, &e->pool.group_max, &top3);
    e->pool.live_limit = z->stage3_max_live_parameters;
    e->pool.prefetch_limit = z->stage3_prefetch_bucket_size;
    if (!e->pool.group_max || /* no groups, or a pool that could not grow: DeepSpeed's defaults */
        !(e->pvm.dyn_direct || (e->be.vm_reserve && e->be.vm_back && e->be.vm_unback && e->be.vm_release))) {
        if (e->pool.live_limit == ZERO_UNSET) e->pool.live_limit = 1000000000;
        if (e->pool.prefetch_limit == ZERO_UNSET) e->pool.prefetch_limit = 50000000;
    }
    e->pool.derived = (e->pool.live_limit == ZERO_UNSET) | (e->pool.prefetch_limit == ZERO_UNSET) << 1;
    if (e->pool.prefetch_limit == ZERO_UNSET) e->pool.prefetch_limit = e->pool.group_max;
    if (e->pool.live_limit == ZERO_UNSET) {
        /* (never above the pool DeepSpeed's defaults give, 1e9 + 5e7: a model of large layers keeps that, and grows
           it where the program holds more) */
        e->pool.live_limit = zero__min_i64(zero__max_i64(top3 + e->pool.group_max, 2 * zs->dyn_max),
                                           zero__max_i64(1050000000, 2 * zs->dyn_max));
        want = e->pool.live_limit;
    } else {
        want = zero__max_i64(zero__sat_add_i64(zero__max_i64(0, e->pool.live_limit), zero__max_i64(0, e->pool.prefetch_limit)),
                             2 * zs->dyn_max);
    }
    e->pool.persist_elems = zs->persist;
    e->pool.pool_elems = zero__min_i64(zs->dyn_total, want);
    if (e->be.event_create && e->be.event_record && e->be.stream_wait && e->be.event_destroy) {
        int s;
        e->pool.stale_cap = 2 * e->plan.n_spans + 8;
        e->pool.stale_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)e->pool.stale_cap);
        e->pool.stale_len = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)e->pool.stale_cap);
        e->pool.stale_span = (int *)ZERO_MALLOC(sizeof(int) * (size_t)e->pool.stale_cap);
        if (!e->pool.stale_off || !e->pool.stale_len || !e->pool.stale_span)
            return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: gather pool tables");
        for (s = 0; s < e->plan.n_spans; s++) {
            zero_error be;
            zero__ok(&be);
            if (e->spans[s].persistent) continue;
            if (e->be.event_create(e->be.ctx, &e->spans[s].ev_ready, &be) != ZERO_OK ||
                e->be.event_create(e->be.ctx, &e->spans[s].ev_free, &be) != ZERO_OK)
                return zero__ebackend(e, &be, "zero_engine_create: events");
        }
    }
    e->pool.dyn_total = zs->dyn_total;
    e->pool.grows = (e->pool.derived & 1) && e->pool.pool_elems < zs->dyn_total;
    /* all-gathers into the program's memory: the pool only counts what is gathered (its persistent part may
       still hold spans that are not) */
    if (e->pvm.all_direct) return ZERO_OK; /* (set by zero__pvm_plan_direct alone) */
    if (e->pool.grows && !e->pvm.dyn_direct) return zero__pool_vm_make(e);
    return zero__ealloc(e, ZERO_MEM_GATHER_POOL, ZERO_MEM_DEVICE,
                        (size_t)(zs->persist + (e->pvm.dyn_direct ? 0 : e->pool.pool_elems)) * e->plan.csize,
                        &e->pool.base, "stage-3 gather pool");
}

static void zero__free_pool(zero_engine *e) {
    int s;
    if (e->spans && e->be.event_destroy)
        for (s = 0; s < e->plan.n_spans; s++) {
            if (e->spans[s].ev_ready) e->be.event_destroy(e->be.ctx, e->spans[s].ev_ready);
            if (e->spans[s].ev_free) e->be.event_destroy(e->be.ctx, e->spans[s].ev_free);
        }
    ZERO_FREE(e->pool.stale_off);
    ZERO_FREE(e->pool.stale_len);
    ZERO_FREE(e->pool.stale_span);
    if (e->pool.vm_base) { /* (zero_gather_params' pool may stand in for it: base or saved_base) */
        if (e->pool.base == (void *)e->pool.vm_base) e->pool.base = NULL;
        if (e->pool.saved_base == (void *)e->pool.vm_base) e->pool.saved_base = NULL;
        e->be.vm_release(e->be.ctx, e->pool.vm_base, e->pool.vm_reserved);
        e->pool.vm_base = NULL;
    }
    zero__efree(e, ZERO_MEM_DEVICE, e->pool.base);
    zero__efree(e, ZERO_MEM_DEVICE, e->pool.saved_base); /* destroyed inside zero_gather_params' while */
}

/* Gradients: the full buffer and accumulator (stages 0-1), or the ring of
   two span slots and the owned-chunk accumulator (stages 2-3). */
/* Elements of all gradient slots: the ring's and the spans' own. */
static int64_t zero__slots_elems(const zero_engine *e, const zero__sizes *zs) {
    if (e->plan.gdirect) return 0; /* the slots are the accumulator's own places */
    return (int64_t)e->grad.n_ring * zs->slot + zs->own_elems;
}

/* Events order a slot's reuse after its span's reduction (plan.gdirect: no
   event; a slot's memory is its span's alone, and the previous step's reads
   of it end before zero_step returns). */
static int zero__slot_events(const zero_engine *e) {
    return e->be.event_create && e->be.event_record && e->be.stream_wait && e->be.event_destroy && !e->plan.gdirect;
}

/* Slot k's event, made at its first use (a slot number past the plan's is a
   stand-in, or a slot of its own after zero__slots_replan). */
static zero_result zero__slot_event(zero_engine *e, int k) {
    zero_error be;
    zero__ok(&be);
    if (e->grad.ev_slot[k] || !zero__slot_events(e)) return ZERO_OK;
    if (e->be.event_create(e->be.ctx, &e->grad.ev_slot[k], &be) != ZERO_OK)
        return zero__ebackend(e, &be, "gradient slot events");
    return ZERO_OK;
}

/* Stages 2-3: the slots in the tables (made by zero__plan_slots): the ring
   first, then each own slot at its span's size, all free. */
static zero_result zero__slots_fill(zero_engine *e, const zero__sizes *zs) {
    int k, s;
    int64_t off;
    zero_result r;
    e->grad.n_ring = zs->trainable_spans < 2 ? zs->trainable_spans : 2;
    e->grad.n_slots = e->grad.n_ring + zs->own_spans;
    e->grad.slot_elems = zs->slot;
    for (k = 0; k < e->grad.slot_cap; k++) {
        e->grad.slot_span[k] = -1;
        e->grad.slot_freed[k] = e->grad.slot_claimed[k] = 0;
        e->grad.slot_nested[k] = 0;
        e->grad.slot_off[k] = (int64_t)k * zs->slot; /* the ring's; own slots below */
    }
    off = (int64_t)e->grad.n_ring * zs->slot;
    for (s = 0; s < e->plan.n_spans; s++)
        if (e->grad.span_slot[s] >= 0) {
            e->grad.span_slot[s] += e->grad.n_ring;
            e->grad.slot_off[e->grad.span_slot[s]] = off;
            off += e->plan.span_padded[s];
        }
    for (k = 0; k < e->grad.n_slots; k++)
        if ((r = zero__slot_event(e, k)) != ZERO_OK) return r;
    return ZERO_OK;
}

/* Stages 2-3: the slots' tables, long enough for the ring, a slot of its
   own for every span and one stand-in (zero__ring_standin), then filled. */
static zero_result zero__plan_slots(zero_engine *e, const zero__sizes *zs) {
    int k = e->grad.slot_cap = 3 + e->plan.n_spans;
    e->grad.slot_span = (int *)ZERO_MALLOC(sizeof(int) * (size_t)k);
    e->grad.slot_off = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)k);
    e->grad.slot_freed = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)k);
    e->grad.slot_claimed = (int64_t *)ZERO_MALLOC(sizeof(int64_t) * (size_t)k);
    e->grad.slot_nested = (int *)ZERO_MALLOC(sizeof(int) * (size_t)k);
    e->grad.slot_mem = (void **)ZERO_MALLOC(sizeof(void *) * (size_t)k);
    e->grad.slot_mem_bytes = (size_t *)ZERO_MALLOC(sizeof(size_t) * (size_t)k);
    e->grad.ev_slot = (zero_event **)ZERO_MALLOC(sizeof(zero_event *) * (size_t)k);
    if (!e->grad.slot_span || !e->grad.slot_off || !e->grad.slot_freed || !e->grad.slot_claimed || !e->grad.slot_nested || !e->grad.slot_mem ||
        !e->grad.slot_mem_bytes || !e->grad.ev_slot)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: gradient slot tables");
    memset(e->grad.ev_slot, 0, sizeof(zero_event *) * (size_t)k);
    memset(e->grad.slot_mem, 0, sizeof(void *) * (size_t)k);
    memset(e->grad.slot_mem_bytes, 0, sizeof(size_t) * (size_t)k);
    return zero__slots_fill(e, zs);
}

/* Optimizer offload at stages 2-3 with GAS > 1: where the micro-batches add
   up (zero_config.grad_accum_device). On the device the accumulator of the
   owned chunks costs ST x asize bytes there and the sum crosses once, on the
   last micro-batch; on the host each micro-batch crosses (plan.host_acc; the
   CPU adds them where it can, plan.host_sum). Called once the parameters are
   placed, so the free memory it reads is what the rest must share. */
static zero_result zero__plan_grad_place(zero_engine *e, const zero__sizes *zs) {
    int dev = e->cfg.grad_accum_device;
    const char *v = getenv("ZERO_GRAD_ACC");
    size_t fr = 0, tot = 0;
    if (!e->plan.host_acc || e->plan.gas == 1) return ZERO_OK; /* (one micro-batch: nothing to add up) */
    if (dev < 0 && v && (strcmp(v, "device") == 0 || strcmp(v, "host") == 0)) dev = v[0] == 'd';
    if (dev < 0)
        dev = e->be.mem_info && e->be.mem_info(e->be.ctx, &fr, &tot) == 0 &&
              (double)zs->ST * (double)e->plan.asize <= (double)fr / 3.0;
    if (dev) e->plan.host_acc = e->plan.host_sum = 0;
    return ZERO_OK;
}

static zero_result zero__alloc_grads(zero_engine *e, const zero__sizes *zs) {
    zero_result r;
    if (e->plan.gext) { /* the program's gradients: one unit's staging, and the accumulator (the reduced gradient) */
        int64_t maxp = 0;
        int u;
        for (u = 0; u < e->plan.layout->n_units; u++)
            if (!e->plan.layout->units[u].frozen) maxp = zero__max_i64(maxp, e->plan.layout->units[u].padded);
        if ((r = zero__ealloc(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, (size_t)maxp * e->plan.csize, &e->buf.gstage,
                              "unit staging of the program's gradients")) != ZERO_OK)
            return r;
        return zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, ZERO_MEM_DEVICE,
                            (size_t)(e->plan.stage <= 1 ? zs->psiT : zs->ST) * e->plan.asize, &e->buf.accum,
                            e->plan.stage <= 1 ? "gradient accumulator" : "owned gradient accumulator");
    }
    if (e->plan.stage <= 1) {
        if ((r = zero__ealloc(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, (size_t)zs->psiT * e->plan.csize, &e->buf.grads, "gradients")) !=
            ZERO_OK)
            return r;
        if (e->plan.gas > 1 && (r = zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, ZERO_MEM_DEVICE, (size_t)zs->psiT * e->plan.asize,
                                                 &e->buf.accum, "gradient accumulator")) != ZERO_OK)
            return r;
        return ZERO_OK;
    }
    if ((r = zero__plan_slots(e, zs)) != ZERO_OK) return r;
    e->grad.grads_bytes = (size_t)zero__slots_elems(e, zs) * e->plan.csize;
    if ((r = zero__ealloc(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, e->grad.grads_bytes, &e->buf.grads, "gradient ring")) !=
        ZERO_OK)
        return r;
    if (e->plan.host_acc) { /* the owned chunks accumulate on the host; one chunk of device staging for GAS > 1 */
        int64_t maxc = 0;
        int u;
        for (u = 0; u < e->plan.layout->n_units; u++)
            if (!e->plan.layout->units[u].frozen) maxc = zero__max_i64(maxc, e->plan.layout->units[u].chunk);
        if (e->plan.host_sum && (r = zero__hsum_alloc(e, maxc)) != ZERO_OK) return r;
        if (e->plan.gas > 1 && (r = zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, ZERO_MEM_DEVICE, (size_t)maxc * e->plan.asize,
                                                 &e->buf.acc_stage, "gradient accumulation staging")) != ZERO_OK)
            return r;
        /* (partial offload: the units stepped on the device accumulate there) */
        return zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, ZERO_MEM_DEVICE, (size_t)e->opt.dev_elems * e->plan.asize, &e->buf.accum,
                            "owned gradient accumulator (the units stepped on the device)");
    }
    return zero__ealloc(e, ZERO_MEM_GRAD_ACCUM, ZERO_MEM_DEVICE, (size_t)zs->ST * e->plan.asize, &e->buf.accum,
                        "owned gradient accumulator");
}

static void zero__free_grads(zero_engine *e) {
    int k;
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.grads);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.gstage);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.accum);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.acc_stage);
    zero__hsum_free(e);
    if (e->grad.ev_slot && e->be.event_destroy)
        for (k = 0; k < e->grad.slot_cap; k++)
            if (e->grad.ev_slot[k]) e->be.event_destroy(e->be.ctx, e->grad.ev_slot[k]);
    if (e->grad.slot_mem)
        for (k = 0; k < e->grad.slot_cap; k++) zero__efree(e, ZERO_MEM_DEVICE, e->grad.slot_mem[k]);
    ZERO_FREE(e->grad.slot_mem);
    ZERO_FREE(e->grad.slot_mem_bytes);
    ZERO_FREE(e->grad.slot_claimed);
    ZERO_FREE(e->grad.slot_nested);
    ZERO_FREE(e->grad.ev_slot);
    ZERO_FREE(e->grad.slot_span);
    ZERO_FREE(e->grad.slot_off);
    ZERO_FREE(e->grad.slot_freed);
}







/* The norm statistics (device, and pinned on the host so that the copy to it
   stays asynchronous and a hung collective is seen by the backend's polling
   sync, not inside a blocking copy), and check_collectives' pair. */
static zero_result zero__alloc_scratch(zero_engine *e) {
    size_t stats = sizeof(double) * 2 * (size_t)e->plan.n_pairs;
    void *p;
    zero_result r;
    if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_DEVICE, stats, &p, "norm statistics")) != ZERO_OK) return r;
    e->buf.stats_dev = (double *)p;
    if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_PINNED, stats, &p, "norm statistics (host)")) != ZERO_OK) return r;
    e->buf.stats_host = (double *)p;
    if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_DEVICE, sizeof(double) * ZERO_SCALARS_MAX, &p, "scalar reductions")) !=
        ZERO_OK)
        return r;
    e->buf.scal_dev = (double *)p;
    if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_PINNED, sizeof(double) * ZERO_SCALARS_MAX, &p,
                          "scalar reductions (host)")) != ZERO_OK)
        return r;
    e->buf.scal_host = (double *)p;
    if (!e->obs.check) return ZERO_OK;
    if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_DEVICE, 2 * sizeof(double), &p, "collective check")) != ZERO_OK) return r;
    e->buf.check_dev = (double *)p;
    if ((r = zero__ealloc(e, ZERO_MEM_SCRATCH, ZERO_MEM_PINNED, 2 * sizeof(double), &p, "collective check (host)")) != ZERO_OK)
        return r;
    e->buf.check_host = (double *)p;
    return ZERO_OK;
}

static void zero__free_scratch(zero_engine *e) {
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.stats_dev);
    zero__efree(e, ZERO_MEM_PINNED, e->buf.stats_host);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.check_dev);
    zero__efree(e, ZERO_MEM_PINNED, e->buf.check_host);
    zero__efree(e, ZERO_MEM_DEVICE, e->buf.scal_dev);
    zero__efree(e, ZERO_MEM_PINNED, e->buf.scal_host);
}

/* Gradients, moments, parameters and statistics start at zero. */
static zero_result zero__zero_fill(zero_engine *e, const zero__sizes *zs) {
    int64_t opt = e->plan.stage == 0 ? zs->psiT : zs->ST;
    size_t grads = (size_t)(e->plan.stage <= 1 ? zs->psiT : zero__slots_elems(e, zs)) * e->plan.csize;
    size_t params = (size_t)(e->plan.stage == 3 ? zs->S : zs->psi) * e->plan.csize;
    zero_error be;
    int64_t gst = 0;
    int u;
    for (u = 0; u < e->plan.layout->n_units && e->buf.gstage; u++)
        if (!e->plan.layout->units[u].frozen) gst = zero__max_i64(gst, e->plan.layout->units[u].padded);
    zero__ok(&be);
    if ((e->buf.grads && e->be.memset0(e->be.ctx, e->buf.grads, grads, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        (e->buf.gstage && e->be.memset0(e->be.ctx, e->buf.gstage, (size_t)gst * e->plan.csize, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        (e->buf.m && e->be.memset0(e->be.ctx, e->buf.m, (size_t)(opt - e->opt.dev_elems) * 4, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        (e->buf.v && e->be.memset0(e->be.ctx, e->buf.v, (size_t)(opt - e->opt.dev_elems) * 4, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        (e->buf.dm && e->be.memset0(e->be.ctx, e->buf.dm, (size_t)e->opt.dev_elems * 4, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        (e->buf.dv && e->be.memset0(e->be.ctx, e->buf.dv, (size_t)e->opt.dev_elems * 4, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        (e->buf.params && e->be.memset0(e->be.ctx, e->buf.params, params, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        (e->buf.cpu_param &&
         e->be.memset0(e->be.ctx, e->buf.cpu_param, (size_t)zs->ST * e->plan.csize, ZERO_STREAM_COMM, &be) != ZERO_OK) ||
        e->be.memset0(e->be.ctx, e->buf.stats_dev, sizeof(double) * 2 * (size_t)e->plan.n_pairs, ZERO_STREAM_COMM, &be) !=
            ZERO_OK)
        return zero__ebackend(e, &be, "zero_engine_create: zero-fill");
    return ZERO_OK;
}

/* Everything zero_engine_create made, in the reverse order; a delayed Adam
   still running finishes first, then the engine's thread leaves. */
static void zero__engine_free(zero_engine *e) {
    if (!e) return;
    zero__client_free(e->client);
    zero__obs_stop(e);
    zero__pvm_free(e);
    zero__thread_stop(e);
    zero__free_scratch(e);
    e->strat->release(e);
    zero__free_optim(e);
    zero__free_grads(e);
    zero__free_pool(e);
    zero__free_params(e);
    zero__free_tables(e);
    ZERO_FREE(e->xfer.lo);
    ZERO_FREE(e->xfer.hi);
    ZERO_FREE(e->xfer.dev);
    zero_layout_destroy(e->plan.layout);
    ZERO_FREE(e);
}






static zero_result zero__engine_setup(zero_engine *e, const zero_tensor *ts, int n) {
    zero__sizes zs;
    zero_result r;
    if ((r = zero__plan_ext(e, ts, n)) != ZERO_OK || (r = zero__plan_gext(e, ts, n)) != ZERO_OK ||
        (r = zero__plan_tables(e, n)) != ZERO_OK || (r = zero__plan_units(e, ts, n, &zs)) != ZERO_OK ||
        (r = zero__state_split(e, &zs)) != ZERO_OK ||
        (r = zero__plan_segments(e, zs.maxcap)) != ZERO_OK || (r = zero__alloc_params(e, &zs)) != ZERO_OK ||
        (r = zero__alloc_pool(e, &zs)) != ZERO_OK || (r = zero__stage3_check(e)) != ZERO_OK ||
        (r = zero__plan_grad_place(e, &zs)) != ZERO_OK || (r = zero__alloc_grads(e, &zs)) != ZERO_OK ||
        (r = zero__alloc_optim(e, &zs)) != ZERO_OK || (r = e->strat->alloc(e, &zs)) != ZERO_OK ||
        (r = zero__alloc_scratch(e)) != ZERO_OK || (r = zero__zero_fill(e, &zs)) != ZERO_OK)
        return r;
    return zero__engine_init_weights(e, ts);
}

/* The optimizer and only its own parameters, as the create line shows them:
   "AdamW lr 0.001 betas (0.9, 0.999) eps 1e-08 weight_decay 0",
   "SGD lr 0.01 momentum 0.9 nesterov weight_decay 0". */
static void zero__optimizer_text(const zero_optimizer_config *o, char *buf, size_t cap) {
    switch (o->type) {
    case ZERO_OPTIMIZER_ADAM:
    case ZERO_OPTIMIZER_ADAMW:
        snprintf(buf, cap, "%s lr %g betas (%g, %g) eps %g weight_decay %g",
                 o->type == ZERO_OPTIMIZER_ADAMW || o->adam_w_mode == 1 ? "AdamW" : "Adam", o->lr, o->beta1, o->beta2,
                 o->eps, o->weight_decay);
        break;
    case ZERO_OPTIMIZER_LION:
        snprintf(buf, cap, "Lion lr %g betas (%g, %g) weight_decay %g", o->lr, o->beta1, o->beta2, o->weight_decay);
        break;
    case ZERO_OPTIMIZER_ADAGRAD:
        snprintf(buf, cap, "Adagrad lr %g eps %g weight_decay %g", o->lr, o->eps, o->weight_decay);
        break;
    case ZERO_OPTIMIZER_LAMB:
        snprintf(buf, cap, "Lamb lr %g betas (%g, %g) eps %g%s weight_decay %g coeff [%g, %g]%s", o->lr, o->beta1, o->beta2,
                 o->eps, o->eps_inside_sqrt == 1 ? " in sqrt" : "", o->weight_decay, o->min_coeff, o->max_coeff,
                 o->bias_correction ? "" : " no bc");
        break;
    case ZERO_OPTIMIZER_SGD: {
        char damp[40] = "";
        if (o->dampening != 0) snprintf(damp, sizeof damp, " dampening %g", o->dampening);
        snprintf(buf, cap, "SGD lr %g momentum %g%s%s weight_decay %g", o->lr, o->momentum, damp,
                 o->nesterov == 1 ? " nesterov" : "", o->weight_decay);
        break;
    }
    default: snprintf(buf, cap, "optimizer type %d", (int)o->type); break;
    }
}

/* Once at create, on rank 0: the configuration as resolved, compact, and
   any default that changes the math which the config did not set. */
static void zero__log_resolved(const zero_engine *e) {
    static const char *const sched[] = {"constant lr", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle",
                                        "LRRangeTest"};
    static const char *const place[] = {"none", "cpu", "nvme"};
    const zero_config *c = &e->cfg;
    const zero_optimization_config *z = &c->zero_optimization;
    char clip[160], opt[160], twin[128] = "";
    if (e->plan.grank != 0) return;
    if (e->opt.twin)
        snprintf(twin, sizeof twin, " (ratio %g: %lld own elements on the device, Adam there)",
                 z->offload_optimizer.ratio, (long long)e->opt.dev_elems);
    zero__optimizer_text(&c->optimizer, opt, sizeof opt);
    if (!(c->gradient_clipping > 0))
        snprintf(clip, sizeof clip, "off");
    else if (c->gradient_clipping_given < 0 && c->gradient_clipping == 1.0)
        snprintf(clip, sizeof clip, "1 (DeepSpeed's default, not in the config: it rescales every step whose norm is "
                                    "above 1; set gradient_clipping to 0 to turn it off)");
    else if (c->gradient_clipping_given == 0)
        snprintf(clip, sizeof clip, "%g (the program's zero_config)", c->gradient_clipping);
    else
        snprintf(clip, sizeof clip, "%g", c->gradient_clipping);
    zero__log(&c->log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_RESOLVED,
              "stage %d, %s (master fp32, accumulation %s), %d rank%s | batch %lld = micro %lld x accumulation %lld x %d "
              "rank%s | %s | schedule %s | gradient_clipping %s | offload "
              "optimizer %s%s%s, params %s | reduce_bucket_size %lld: %d units",
              e->plan.stage, zero_dtype_name(e->plan.cdt), zero_dtype_name(e->plan.adt), e->plan.gworld,
              e->plan.gworld == 1 ? "" : "s", (long long)c->train_batch_size, (long long)c->train_micro_batch_size_per_gpu,
              (long long)c->gradient_accumulation_steps, e->plan.gworld, e->plan.gworld == 1 ? "" : "s",
              opt, (unsigned)c->scheduler.type < ZERO_SCHEDULER_COUNT ? sched[c->scheduler.type] : "?", clip,
              place[(unsigned)z->offload_optimizer.device % 3u],
              !e->opt.cpu || e->plan.stage < 2 || e->plan.gas == 1 ? ""
              : e->plan.host_acc                                   ? " (micro-batches added in host memory)"
                                                                   : " (micro-batches added on the device)",
              twin, place[(unsigned)e->offload_param.device % 3u], (long long)z->reduce_bucket_size, e->plan.n_units);
}

/* The arguments and the resolved config, checked before anything is made. */
static zero_result zero__create_check(const zero_config *cfg, const zero_tensor *tensors, const zero_backend *be,
                                      zero_error *err) {
    const zero_optimization_config *z;
    if (!cfg || !tensors || !be)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_engine_create: %s is NULL",
                          !cfg ? "cfg" : !tensors ? "tensors" : "backend");
    if (!be->alloc || !be->free || !be->memset0 || !be->copy || !be->sync || !be->reduce_scatter || !be->all_gather ||
        !be->all_reduce || !be->broadcast || !be->scale || !be->convert || !be->sumsq || !be->adam)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0,
                          "zero_engine_create: backend '%s' lacks a function", be->name ? be->name : "?");
    if (be->world < 1 || be->rank < 0 || be->rank >= be->world)
        return zero__fail(err, ZERO_MSG_BAD_ARG, NULL, 0, 0, "zero_engine_create: backend rank %d of world %d", be->rank,
                          be->world);
    if (!cfg->resolved)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, NULL, 0, 0,
                          "the config is not resolved\nHINT: call zero_config_resolve(&cfg, %d, &err) first", be->world);
    if (cfg->world_size != be->world)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, NULL, 0, 0,
                          "the config was resolved for %d ranks, the backend has %d\nHINT: zero_config_resolve(&cfg, %d, &err)",
                          cfg->world_size, be->world, be->world);
    z = &cfg->zero_optimization;
    if (z->stage < 0 || z->stage > 3)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.stage", 0, 0, "%d (need 0 .. 3)", z->stage);
    if (z->mics_shard_size > 0 && (z->stage == 0 || be->world % z->mics_shard_size != 0 || z->mics_shard_size > be->world))
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.mics_shard_size", 0, 0,
                          "%lld with stage %d on %d ranks: it must divide the world size, at stage 1, 2 or 3",
                          (long long)z->mics_shard_size, z->stage, be->world);
    if (z->mics_shard_size > 0 && z->mics_shard_size < be->world &&
        (!be->groups_init || !be->group_reduce_scatter || !be->group_all_gather || !be->group_all_reduce))
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.mics_shard_size", 0, 0,
                          "%lld: backend '%s' has no group collectives (groups_init, group_reduce_scatter, "
                          "group_all_gather, group_all_reduce); hybrid sharding needs them",
                          (long long)z->mics_shard_size, be->name ? be->name : "?");
    {
        zero_result r = zero__state_check(cfg, be, err);
        if (r != ZERO_OK) return r;
    }
    if (cfg->gradient_accumulation_steps < 1 || cfg->gradient_accumulation_steps > 1000000)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "gradient_accumulation_steps", 0, 0, "%lld (need 1 .. 1e6)",
                          (long long)cfg->gradient_accumulation_steps);
    if (cfg->grad_accum_dtype != ZERO_DTYPE_FP32 && cfg->grad_accum_dtype != ZERO_DTYPE_FP16 &&
        cfg->grad_accum_dtype != ZERO_DTYPE_BF16)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "data_types.grad_accum_dtype", 0, 0, "not resolved");
    if (cfg->optimizer.amsgrad == 1)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "optimizer.params.amsgrad", 0, 0, "true is not supported");
    if ((unsigned)cfg->optimizer.type >= (unsigned)ZERO_OPTIMIZER_COUNT)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "optimizer.type", 0, 0, "%d is not a zero_optimizer_type",
                          (int)cfg->optimizer.type);
    if (cfg->optimizer.type > ZERO_OPTIMIZER_ADAMW && z->offload_optimizer.device == ZERO_OFFLOAD_NONE &&
        !(be->opt_rules & (1u << cfg->optimizer.type)))
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "optimizer.type", 0, 0,
                          "\"%s\": backend '%s' runs Adam and AdamW only on the device\nHINT: set "
                          "zero_optimization.offload_optimizer.device to \"cpu\" (the CPU runs %s), or optimizer.type to "
                          "\"AdamW\"",
                          zero_optimizer_name(cfg->optimizer.type), be->name ? be->name : "?",
                          zero_optimizer_name(cfg->optimizer.type));
    if (cfg->optimizer.type == ZERO_OPTIMIZER_LAMB && z->offload_optimizer.device == ZERO_OFFLOAD_NVME)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_optimizer.device", 0, 0,
                          "\"nvme\" with Lamb: its trust ratio needs the norms of whole tensors before any element "
                          "moves, and the NVMe step reads each tile once\nHINT: set offload_optimizer.device to \"cpu\"");
    if (cfg->optimizer.type == ZERO_OPTIMIZER_LAMB && z->offload_optimizer.delayed_param_update == 1)
        return zero__fail(err, ZERO_MSG_ENGINE_CONFIG, "zero_optimization.offload_optimizer.delayed_param_update", 0, 0,
                          "true with Lamb: the delayed step runs one unit at a time beside the next step, and Lamb's "
                          "trust ratio needs the norms of whole tensors first\nHINT: set delayed_param_update to false");

    return ZERO_OK;
}

/* What create decides before the layout: ranks, dtypes, where the
   optimizer and the parameters live (the placement zero_step dispatches on),
   and the observability switches. */
static void zero__plan_placement(zero_engine *e, const zero_config *cfg, const zero_backend *be) {
    const zero_optimization_config *z = &cfg->zero_optimization;
    e->cfg = *cfg;
    e->be = *be;
    e->plan.grank = be->rank;
    e->plan.gworld = be->world;
    /* mics_shard_size G: the partition is the shard group's (G ranks); flat: the world's */
    e->plan.world = z->mics_shard_size > 0 && z->mics_shard_size < be->world ? (int)z->mics_shard_size : be->world;
    e->plan.rank = be->rank % e->plan.world;
    e->plan.hybrid = e->plan.world < be->world;
    if (e->cfg.log.rank < 0) e->cfg.log.rank = be->rank;
    e->plan.stage = z->stage;
    e->plan.gas = (int)cfg->gradient_accumulation_steps;
    e->plan.cdt = cfg->fp16.enabled == 1 ? ZERO_DTYPE_FP16 : cfg->bf16.enabled == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
    zero__state_plan(e, cfg, be);
    e->plan.csize = zero_dtype_size(e->plan.cdt);
    e->plan.asize = zero_dtype_size(e->plan.adt);
    e->run.sched_it = cfg->scheduler.last_batch_iteration;
    e->obs.period_first_unit = -1;
    e->run.last_b1 = e->run.last_b2 = -1;
    e->run.prog_lr = e->run.prog_b1 = e->run.prog_b2 = -1;
    {
        const char *v = getenv("ZERO_CHECK"), *d = getenv("ZERO_DEBUG");
        e->obs.check = cfg->check_collectives == 1 || (v && v[0] == '1' && v[1] == 0);
        e->obs.debug = d && d[0] && strcmp(d, "0") != 0; /* before the first collective: create's gathers are logged */
        e->obs.tr_unit = -1;
        e->obs.tr_api = "zero_engine_create";
    }
}

ZERO__DEF zero_result zero_engine_create(zero_engine **out, const zero_config *cfg, const zero_tensor *tensors,
                                         int n_tensors, const zero_backend *be, zero_error *err) {
    zero_engine *e;
    zero_layout_args la;
    zero_result r;
    const zero_optimization_config *z;
    if (!out) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_engine_create: out is NULL");
    *out = NULL;
    if ((r = zero__create_check(cfg, tensors, be, err)) != ZERO_OK) return r;
    z = &cfg->zero_optimization;
    e = (zero_engine *)ZERO_MALLOC(sizeof *e);
    if (!e) return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_engine_create");
    memset(e, 0, sizeof *e);
    {
        int t;
        for (t = 0; t < n_tensors; t++)
            if (tensors[t].grad) e->plan.gext = 1; /* before the dtypes: they depend on it */
    }
    zero__plan_placement(e, cfg, be);
    zero_loss_scaler_init(&e->run.scaler, cfg);
    if (!e->run.scaler.valid) {
        ZERO_FREE(e);
        return zero__fail(err, ZERO_MSG_LOSS_SCALER_UNRESOLVED, "fp16", 0, 0, "the loss scaler cannot be made from this config");
    }
    if (e->plan.hybrid && (r = be->groups_init(be->ctx, e->plan.world, err)) != ZERO_OK) {
        ZERO_FREE(e);
        return r; /* (the backend's error names the rank and the groups) */
    }
    memset(&la, 0, sizeof la);
    la.world = e->plan.world; /* the shard group's: units padded for G ranks */
    la.bucket_elems = z->reduce_bucket_size;
    if (e->plan.stage == 3) {
        la.persist_threshold = z->stage3_param_persistence_threshold;
        la.model_persist_threshold = z->stage3_model_persistence_threshold;
    }
    if ((r = zero_layout_create(&e->plan.layout, tensors, n_tensors, &la, err)) != ZERO_OK) {
        ZERO_FREE(e);
        return r;
    }
    if ((r = zero__engine_setup(e, tensors, n_tensors)) != ZERO_OK) {
        if (err) *err = e->err;
        zero__engine_free(e);
        return r;
    }
    if ((r = zero__obs_start(e)) != ZERO_OK) {
        if (err) *err = e->err;
        zero__engine_free(e);
        return r;
    }
    zero__log_resolved(e);
    e->pool.n_gathered = 0; /* the initial gathers belong to no step */
    memset(e->xfer.comm, 0, sizeof e->xfer.comm);
    memset(e->run.t_phase, 0, sizeof e->run.t_phase);
    pthread_mutex_lock(&zero__live_lock);
    e->next_live = zero__live_head;
    zero__live_head = e;
    pthread_mutex_unlock(&zero__live_lock);
    *out = e;
    zero__ok(&e->err);
    zero__ok(err);
    return ZERO_OK;
}

ZERO__DEF void zero_engine_destroy(zero_engine *e) {
    zero_engine **pp;
    int found = 0;
    if (!e) return;
    pthread_mutex_lock(&zero__live_lock);
    for (pp = &zero__live_head; *pp; pp = &(*pp)->next_live)
        if (*pp == e) {
            *pp = e->next_live;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&zero__live_lock);
    if (!found) {
        zero_logger lg;
        memset(&lg, 0, sizeof lg);
        lg.rank = -1;
        zero__log(&lg, ZERO_LOG_ERROR, ZERO_MSG_ENGINE_DESTROYED,
                  "zero_engine_destroy: engine %p was already destroyed or never created", (void *)e);
        return;
    }
    zero__engine_free(e);
}

ZERO__DEF const zero_error *zero_engine_error(const zero_engine *e) {
    static const zero_error destroyed = {ZERO_ERR_STATE, ZERO_MSG_ENGINE_DESTROYED, 0, 0, "",
                                         "engine was destroyed or never created"};
    static const zero_error null_e = {ZERO_ERR_INVALID_ARG, ZERO_MSG_NULL_ARG, 0, 0, "",
                                      "zero_engine_error: e is NULL (no engine: zero_engine_create failed or was not "
                                      "called; its zero_error says why)"};
    return !e ? &null_e : zero__engine_live(e) ? &e->err : &destroyed;
}

ZERO__DEF const zero_layout *zero_engine_layout(const zero_engine *e) {
    return zero__engine_live(e) ? e->plan.layout : NULL;
}

/* ---- >>engine-adam: what every optimizer strategy shares ---- */

/* Unit u's Adam arguments: the step's hyperparameters (h), its segments with
   this step's lr and each tensor's weight decay; the caller points the
   buffers (master, m, v, grad, param) where this step keeps them. */
static void zero__adam_args_for(zero_engine *e, int u, const zero_adam_args *h, zero_adam_args *aa) {
    int k;
    for (k = e->plan.seg_first[u]; k < e->plan.seg_first[u] + e->plan.seg_count[u]; k++) {
        int ti = e->plan.seg_tensor[k];
        e->plan.segs[k].lr = (float)(e->run.step_lr * e->plan.tlr[ti]);
        e->plan.segs[k].weight_decay = (e->plan.tflags[ti] & ZERO_TENSOR_NO_DECAY) ? 0.0f : (float)e->cfg.optimizer.weight_decay;
    }
    *aa = *h;
    aa->segs = e->plan.segs + e->plan.seg_first[u];
    aa->n_segs = e->plan.seg_count[u];
    if (aa->lamb_sums) aa->lamb_sums += 2 * (size_t)e->plan.seg_first[u];
    if (aa->lamb_ratio) aa->lamb_ratio += e->plan.seg_first[u];
}

/* This step's Adam hyperparameters (base lr into e->run.step_lr), with
   DeepSpeed's float beta^t bias correction; advances beta^t: once per
   applied step. */
/* The learning rate and betas of the coming step: the program's
   (zero_set_lr, zero_set_betas) or the config's schedule. */
static double zero__lr_now(const zero_engine *e) {
    return e->run.prog_lr >= 0 ? e->run.prog_lr : zero_lr_at(&e->cfg, (long)e->run.sched_it);
}
static void zero__betas_now(const zero_engine *e, double *b1, double *b2) {
    if (e->run.prog_b1 >= 0) {
        *b1 = e->run.prog_b1;
        *b2 = e->run.prog_b2;
    } else {
        zero_betas_at(&e->cfg, (long)e->run.sched_it, b1, b2);
    }
}

static void zero__step_hyper(zero_engine *e, float grad_scale, zero_adam_args *hyper) {
    double b1, b2, lr = zero__lr_now(e);
    int64_t t = e->run.applied_steps + 1;
    float bc1 = 1, bc2 = 1;
    zero__betas_now(e, &b1, &b2);
    if (b1 == e->run.last_b1 && b2 == e->run.last_b2 && t > 1) {
        e->run.beta1_t *= (float)b1;
        e->run.beta2_t *= (float)b2;
    } else {
        e->run.beta1_t = powf((float)b1, (float)t);
        e->run.beta2_t = powf((float)b2, (float)t);
    }
    e->run.last_b1 = b1;
    e->run.last_b2 = b2;
    if (e->cfg.optimizer.bias_correction) {
        bc1 = 1.0f - e->run.beta1_t;
        bc2 = 1.0f / sqrtf(1.0f - e->run.beta2_t);
    }
    memset(hyper, 0, sizeof *hyper);
    hyper->beta1 = (float)b1;
    hyper->beta2 = (float)b2;
    hyper->eps = (float)e->cfg.optimizer.eps;
    hyper->bc1 = bc1;
    hyper->bc2 = bc2;
    hyper->grad_scale = grad_scale;
    hyper->adamw = e->cfg.optimizer.type == ZERO_OPTIMIZER_ADAMW || e->cfg.optimizer.adam_w_mode == 1;
    hyper->kind = (int)e->cfg.optimizer.type;
    hyper->momentum = (float)e->cfg.optimizer.momentum;
    hyper->dampening = (float)e->cfg.optimizer.dampening;
    hyper->nesterov = e->cfg.optimizer.nesterov == 1;
    hyper->first = t == 1;
    hyper->eps_inside = e->cfg.optimizer.eps_inside_sqrt == 1;
    hyper->param_dtype = e->plan.cdt;
    e->run.step_lr = lr;
}


#ifndef ZERO_CPU_STEP_PIECE
#define ZERO_CPU_STEP_PIECE (1 << 22) /* elements per CPU Adam call when the result goes to the device */
#endif

/* CPU Adam of unit u over master / m / v (its owned chunk's), the gradient
   chunk `grad` (host, e->plan.gdt), the new compute-dtype parameters to `param`
   (host). With `to_device` the chunk is stepped in pieces of
   ZERO_CPU_STEP_PIECE elements and each piece's parameters are queued to the
   device behind it: the copy runs while the CPU steps the next piece. */
static zero_result zero__cpu_unit(zero_engine *e, int u, const zero_adam_args *h, float *master, float *m, float *v,
                                  const void *grad, void *param, int to_device, zero_error *fail) {
    zero_adam_args aa;
    int64_t c = e->plan.layout->units[u].chunk, piece = to_device ? ZERO_CPU_STEP_PIECE : c, p0;
    zero__adam_args_for(e, u, h, &aa);
    aa.master = master;
    aa.m = m;
    aa.v = v;
    aa.grad = grad;
    aa.grad_dtype = e->plan.gdt;
    aa.param = param;
    if (piece < 1) piece = c;
    for (p0 = 0; p0 < c; p0 += piece) {
        int64_t p1 = zero__min_i64(c, p0 + piece);
        zero_adam_args pa = aa;
        int k, n = 0;
        for (k = 0; k < aa.n_segs; k++) { /* the segments clipped to [p0, p1) */
            int64_t lo = zero__max_i64(aa.segs[k].offset, p0), hi = zero__min_i64(aa.segs[k].offset + aa.segs[k].count, p1);
            if (hi <= lo) continue;
            if (n == 0 && pa.lamb_sums) pa.lamb_sums = aa.lamb_sums + 2 * (size_t)k; /* (Lamb: the first one's slots) */
            if (n == 0 && pa.lamb_ratio) pa.lamb_ratio = aa.lamb_ratio + k;
            e->buf.cpu_segs[n] = aa.segs[k];
            e->buf.cpu_segs[n].offset = lo;
            e->buf.cpu_segs[n].count = hi - lo;
            n++;
        }
        pa.segs = e->buf.cpu_segs;
        pa.n_segs = n;
        if (n > 0 && e->be.cpu_adam(e->be.cpu_ctx, &pa, fail) != ZERO_OK) return fail->code;
        if (to_device && zero__copy(e, zero__at(zero__param_own(e, u), p0, e->plan.csize), zero__at(param, p0, e->plan.csize),
                                    (size_t)(p1 - p0) * e->plan.csize, ZERO_STREAM_COMM, fail) != ZERO_OK)
            return fail->code;
    }
    return ZERO_OK;
}

/* The loop every per-unit strategy shares: each trainable unit's own chunk
   stepped by `one` (where the rank owns part of it), then the unit's
   all-gather queued behind it, so that with offload the copy and the gather
   of one unit run while the CPU steps the next. */
typedef zero_result (*zero__opt_unit_fn)(zero_engine *e, int u, const zero_adam_args *hyper);
static zero_result zero__opt_units(zero_engine *e, const zero_adam_args *hyper, zero__opt_unit_fn one) {
    const zero_layout *l = e->plan.layout;
    int u;
    zero_result r;
    for (u = 0; u < l->n_units; u++) {
        if (l->units[u].frozen) continue;
        if (e->plan.seg_count[u] > 0 && (r = one(e, u, hyper)) != ZERO_OK) return r;
        if ((r = zero__step_gather(e, u)) != ZERO_OK) return r;
    }
    return ZERO_OK;
}

/* Lamb's first pass and its norms, before the strategy's usual loop runs
   the second (hyper->lamb_pass 2): `pass1` updates every stepped unit's
   m and v and adds its segments' sums of p^2 and u^2 into lamb_seg; on the
   host they become sums per tensor (segments in order), summed over the
   shard group in fp64 (not at stage 0, where every rank stepped every
   element), and each tensor's trust ratio |p| / |u|, clamped to
   [min_coeff, max_coeff], 1 where either norm is 0 (DeepSpeed's FusedLamb),
   goes to each of its segments. The second pass computes u again from m, v
   and p rather than keeping it: 4 bytes a parameter saved for one more
   division and root an element. */
static zero_result zero__lamb_norms(zero_engine *e, zero_adam_args *hyper, zero__opt_unit_fn pass1) {
    const zero_layout *l = e->plan.layout;
    size_t ns = (size_t)e->opt.n_lamb_segs, nt = (size_t)e->plan.n_tensors, k;
    int dev = e->opt.lamb_seg != e->opt.lamb_seg_host, u;
    zero_result r;
    double lo = e->cfg.optimizer.min_coeff, hi = e->cfg.optimizer.max_coeff;
    if (dev)
        ZERO__TRY_BE(e, "zero_step: Lamb sums", e->be.memset0(e->be.ctx, e->opt.lamb_seg, 2 * ns * sizeof(double), ZERO_STREAM_COMM, &be_err_));
    else
        memset(e->opt.lamb_seg, 0, 2 * ns * sizeof(double));
    hyper->lamb_pass = 1;
    hyper->lamb_sums = e->opt.lamb_seg;
    hyper->lamb_ratio = NULL;
    for (u = 0; u < l->n_units; u++)
        if (!l->units[u].frozen && e->plan.seg_count[u] > 0 && (r = pass1(e, u, hyper)) != ZERO_OK) return r;
    if (dev)
        ZERO__TRY_BE(e, "zero_step: Lamb sums to the host",
                     zero__copy(e, e->opt.lamb_seg_host, e->opt.lamb_seg, 2 * ns * sizeof(double), ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_step: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    memset(e->opt.lamb_ten_host, 0, 2 * nt * sizeof(double));
    for (k = 0; k < ns; k++) {
        double *t = e->opt.lamb_ten_host + 2 * (size_t)e->plan.seg_tensor[k];
        t[0] += e->opt.lamb_seg_host[2 * k];
        t[1] += e->opt.lamb_seg_host[2 * k + 1];
    }
    if (e->plan.stage > 0) {
        ZERO__TRY_BE(e, "zero_step: Lamb norms to the device",
                     zero__copy(e, e->opt.lamb_ten_dev, e->opt.lamb_ten_host, 2 * nt * sizeof(double), ZERO_STREAM_COMM, &be_err_));
        ZERO__TRY_BE(e, "zero_step: all_reduce of the Lamb norms",
                     zero__all_reduce_in(e, ZERO_GROUP_SHARD, e->opt.lamb_ten_dev, e->opt.lamb_ten_dev, 2 * nt,
                                         (zero_dtype)ZERO__DTYPE_F64, ZERO_OP_SUM, ZERO_STREAM_COMM, &be_err_));
        ZERO__TRY_BE(e, "zero_step: Lamb norms to the host",
                     zero__copy(e, e->opt.lamb_ten_host, e->opt.lamb_ten_dev, 2 * nt * sizeof(double), ZERO_STREAM_COMM, &be_err_));
        ZERO__TRY_BE(e, "zero_step: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    }
    for (k = 0; k < ns; k++) {
        const double *t = e->opt.lamb_ten_host + 2 * (size_t)e->plan.seg_tensor[k];
        double w = sqrt(t[0]), n = sqrt(t[1]), ratio = 1;
        if (w != 0 && n != 0) {
            ratio = w / n;
            if (ratio > hi) ratio = hi;
            if (ratio < lo) ratio = lo;
        }
        e->opt.lamb_ratio_host[k] = (float)ratio;
    }
    if (dev) /* (pass 2 follows on the same stream) */
        ZERO__TRY_BE(e, "zero_step: Lamb ratios to the device",
                     zero__copy(e, e->opt.lamb_ratio, e->opt.lamb_ratio_host, ns * sizeof(float), ZERO_STREAM_COMM, &be_err_));
    hyper->lamb_pass = 2;
    hyper->lamb_sums = NULL;
    hyper->lamb_ratio = e->opt.lamb_ratio;
    return ZERO_OK;
}

/* Stage 3 after a step: the persistent spans (kept gathered) refreshed from
   the new owned chunks. */
static zero_result zero__persist_refresh(zero_engine *e) {
    int s;
    zero_result r;
    if (e->plan.stage != 3) return ZERO_OK;
    for (s = 0; s < e->plan.n_spans; s++)
        if (e->spans[s].persistent && !e->spans[s].frozen && (r = zero__gather_span(e, s, e->spans[s].pool_off, 1)) != ZERO_OK)
            return r;
    return ZERO_OK;
}

/* A strategy's operations where it has nothing to do. */
static zero_result zero__opt_nop(zero_engine *e) {
    (void)e;
    return ZERO_OK;
}
static zero_result zero__opt_nop_u(zero_engine *e, int u) {
    (void)e, (void)u;
    return ZERO_OK;
}
static zero_result zero__opt_nop_alloc(zero_engine *e, const zero__sizes *zs) {
    (void)e, (void)zs;
    return ZERO_OK;
}
static void zero__opt_nop_release(zero_engine *e) { (void)e; }
static zero_result zero__opt_nop_reduced(zero_engine *e, int u, int last) {
    (void)e, (void)u, (void)last;
    return ZERO_OK;
}

/* The floor of a step whose phases run one after the other: the forward's
   and the backward's copies, then the step's copies or the CPU Adam,
   whichever is longer (they overlap unit by unit). */
static double zero__floor_sequential(const zero_step_info *in, double fwd, double bwd, double step, double adam,
                                     const char **schedule) {
    (void)in;
    *schedule = "sequential";
    return fwd + bwd + (step > adam ? step : adam);
}

/* ---- >>engine-grads: zero_grad (ring-slot claim), zero_grad_ready, a unit's reduction ---- */

/* The trainable tensors of the open micro-batch without zero_grad_ready on
   this rank, for an error: "'a', 'b', 'c' and 4 more" into buf; their count. */
static int zero__not_ready_list(const zero_engine *e, char *buf, size_t cap) {
    size_t at = 0;
    int t, n = 0;
    buf[0] = 0;
    for (t = 0; t < e->plan.n_tensors; t++) {
        if ((e->plan.tflags[t] & ZERO_TENSOR_FROZEN) || e->grad.ready[t]) continue;
        if (n++ < 4 && at + 8 < cap)
            at += (size_t)snprintf(buf + at, cap - at, "%s'%.60s'", n == 1 ? "" : ", ", zero__tname(e, t));
        if (at >= cap) at = cap - 1;
    }
    if (n > 4 && at + 1 < cap) snprintf(buf + at, cap - at, " and %d more", n - 4);
    return n;
}

static zero_result zero__grad_check(zero_engine *e, int t, const char *fn) {
    zero_result r;
    if ((r = zero__enter(e, fn)) != ZERO_OK || (r = zero__check_tensor(e, t, fn)) != ZERO_OK ||
        (r = zero__not_gathered(e, fn)) != ZERO_OK)
        return r;
    if (e->plan.tflags[t] & ZERO_TENSOR_FROZEN)
        return zero__efail(e, ZERO_MSG_ENGINE_FROZEN, "%s('%s'): the tensor is frozen (ZERO_TENSOR_FROZEN): it has no gradient",
                           fn, zero__tname(e, t));
    if (e->run.micro >= e->plan.gas)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_MISSING,
                           "%s('%s'): %d micro-batches (gradient_accumulation_steps) are complete\nHINT: call "
                           "zero_step before the next micro-batch",
                           fn, zero__tname(e, t), e->plan.gas);
    if (e->grad.ready[t]) {
        /* ready twice, or (the common case) this rank's backward skipped another tensor's zero_grad_ready, so its
           micro-batch never ended and this call is the next one's: name those, the ones to fix */
        char list[320];
        int n = zero__not_ready_list(e, list, sizeof list);
        return zero__efail(e, ZERO_MSG_ENGINE_GRAD_TWICE,
                           "%s('%s') on rank %d: micro-batch %d of this step is not complete: %s %s no "
                           "zero_grad_ready yet on this rank, and '%s' was marked ready in it already\nHINT: a "
                           "micro-batch ends when every trainable gradient is marked ready; if this rank's backward "
                           "skipped %s (zero_grad_ready_group marks a whole group), this call belongs to the next "
                           "micro-batch: mark %s ready; if '%s' was marked ready twice in one backward, drop the second "
                           "call",
                           fn, zero__tname(e, t), e->plan.grank, e->run.micro + 1, list, n == 1 ? "has" : "have",
                           zero__tname(e, t), list, n == 1 ? "it" : "them", zero__tname(e, t));
    }
    if (!e->grad.touched) {
        zero_result r;
        /* (the overlapped step's Adam reads the gradient staging this backward refills) */
        if ((r = e->strat->backward(e)) != ZERO_OK) return r;
        e->grad.touched = 1;
        e->run.t_backward_start = zero__now_ms();
    }
    e->xfer.phase = ZERO_XFER_BACKWARD;
    return ZERO_OK;
}

/* Span a's gradient is written at distant points of the backward: marked
   for a slot of its own when this micro-batch ends (zero__slots_replan). t:
   the tensor whose gradient call showed it. */
static void zero__span_found(zero_engine *e, int a, int t) {
    const zero_layout *l = e->plan.layout;
    if (e->grad.span_own[a]) return;
    e->grad.span_own[a] = ZERO__OWN_FOUND;
    e->grad.replan = 1;
    if (e->plan.grank == 0)
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_GRAD_OWN_SLOT,
                  "'%s': its gradient stays open while later units' gradients are written and reduced (seen at "
                  "'%s'; a tensor written at distant points of the backward, like a tied embedding): its unit gets "
                  "a gradient buffer of its own from the next micro-batch on (%.1f MiB, under gradients in the "
                  "memory report), so the two-slot ring keeps overlapping the rest; ZERO_TENSOR_GRAD_ANY_ORDER on "
                  "it plans this at create",
                  zero__tname(e, l->units[l->span_first[a]].first_tensor), zero__tname(e, t),
                  (double)e->plan.span_padded[a] * (double)e->plan.csize / 1048576.0);
}

/* Stages 2-3: every ring slot is held by an open span and span s (tensor t)
   asks for one. A backward that finishes each span before starting the
   next-but-one never gets here; one that does writes some gradient at
   distant points (a tied embedding: the head's product at the start of the
   backward, the embedding's rows at its end), so the span claimed first stays
   open across the backward. The program may hold pointers into the open
   slots, so nothing moves: s gets a stand-in slot of its own for this
   micro-batch, and the ring's longest-open span is marked to get a slot of
   its own when the micro-batch ends (zero__slots_replan), as
   ZERO_TENSOR_GRAD_ANY_ORDER would have planned it at create. Later
   micro-batches take the ring as planned. *slot: the stand-in. */
static zero_result zero__ring_standin(zero_engine *e, int s, int t, int *slot) {
    int k, v = -1, n = e->grad.n_slots;
    zero_result r;
    for (k = 0; k < e->grad.n_ring; k++) /* (one already marked holds a slot until the plan changes: it is the cause) */
        if (e->grad.span_own[e->grad.slot_span[k]]) break;
        else if (v < 0 || e->grad.slot_claimed[k] < e->grad.slot_claimed[v]) v = k;
    if (k < e->grad.n_ring) v = -1;
    if (v >= 0) zero__span_found(e, e->grad.slot_span[v], t);
    e->grad.replan = 1;
    for (k = e->grad.n_ring; k < n; k++) /* a stand-in of this micro-batch, free and large enough */
        if (e->grad.slot_mem[k] && e->grad.slot_span[k] < 0 &&
            e->grad.slot_mem_bytes[k] >= (size_t)e->plan.span_padded[s] * e->plan.csize) {
            e->grad.span_slot[s] = *slot = k;
            return ZERO_OK;
        }
    if (n >= e->grad.slot_cap) /* more stand-ins in one micro-batch than spans: a backward that never readies */
        return zero__efail(e, ZERO_MSG_ENGINE_GRAD_RING_FULL,
                           "zero_grad('%s'): %d spans have gradients not all ready\nHINT: call zero_grad_ready for "
                           "every tensor once its gradient is written",
                           zero__tname(e, t), n);
    if (!e->plan.gdirect) {
        e->grad.slot_mem_bytes[n] = (size_t)e->plan.span_padded[s] * e->plan.csize;
        if ((r = zero__ealloc(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, e->grad.slot_mem_bytes[n], &e->grad.slot_mem[n],
                              "a stand-in gradient slot for one micro-batch")) != ZERO_OK)
            return r;
    }
    e->grad.slot_span[n] = -1;
    e->grad.slot_freed[n] = 0;
    e->grad.span_slot[s] = n;
    e->grad.n_slots++;
    *slot = n;
    return zero__slot_event(e, n);
}

/* Stages 2-3: a slot for span s, whose tensor t asks for its gradient
   buffer first: its own, else the free ring slot released longest ago (its
   reduction is most likely done, so the backward does not wait for the one
   just launched), else a stand-in (zero__ring_standin). Ordered after the
   slot's last reduction and cleared where a tensor of the span accumulates. */
static zero_result zero__ring_claim(zero_engine *e, int s, int t) {
    const zero_layout *l = e->plan.layout;
    zero__span_state *ss = &e->spans[s];
    int k, best = -1;
    zero_error be;
    zero_result r;
    if (ss->slot >= 0) return ZERO_OK;
    if (e->grad.span_slot[s] >= 0) /* its own slot: free whenever the span is not open */
        best = e->grad.span_slot[s];
    else
        for (k = 0; k < e->grad.n_ring; k++)
            if (e->grad.slot_span[k] < 0 && (best < 0 || e->grad.slot_freed[k] < e->grad.slot_freed[best])) best = k;
    if (best < 0 && (r = zero__ring_standin(e, s, t, &best)) != ZERO_OK) return r;
    k = best;
    zero__ok(&be);
    if (e->grad.ev_slot[k] &&
        zero__wait_on(e, ZERO_STREAM_COMPUTE, e->grad.ev_slot[k], -1, "a gradient slot: its reduction", &be) != ZERO_OK)
        return zero__ebackend(e, &be, "zero_grad: waiting for a gradient slot");
    /* cleared on the compute stream, in the backward's order: a clear on the
       comm stream behind the reduction was measured slower (it competes with
       the backward's kernels for the GPU) */
    if (ss->clear && e->be.memset0(e->be.ctx, zero__slot_at(e, s, k),
                                   (size_t)e->plan.span_padded[s] * e->plan.csize, ZERO_STREAM_COMPUTE, &be) != ZERO_OK)
        return zero__ebackend(e, &be, "zero_grad: clearing a gradient slot");
    e->grad.slot_span[k] = s;
    e->grad.slot_claimed[k] = ++e->grad.slot_clock;
    e->grad.slot_nested[k] = 0;
    ss->slot = k;
    ss->units_left = l->span_first[s + 1] - l->span_first[s];
    return ZERO_OK;
}

/* A buffer made after create, freed before destroy: its bytes leave the
   plan and the counts (so the memory report stays what is held), and its
   range the table of allocations. */
static void zero__efree_counted(zero_engine *e, zero_mem_category cat, zero_mem_kind kind, void *p, size_t bytes) {
    zero__xfer *x = &e->xfer;
    int i;
    if (!p) return;
    for (i = 0; i < x->n; i++)
        if (x->lo[i] == (uintptr_t)p) {
            x->lo[i] = x->lo[x->n - 1], x->hi[i] = x->hi[x->n - 1], x->dev[i] = x->dev[x->n - 1];
            x->n--;
            break;
        }
    e->mem.planned[cat][kind] -= bytes;
    e->mem.allocated[kind] -= bytes;
    e->be.free(e->be.ctx, kind, p);
}

/* Stages 2-3, at the end of a micro-batch that needed stand-ins: the slots
   planned again from grad.span_own (the spans found open across the
   backward now have slots of their own, the ring's slot is the largest of
   the rest), after both streams are past every use of the old ones. The
   memory report then shows the new plan: what ZERO_TENSOR_GRAD_ANY_ORDER on
   those tensors plans at create. */
static zero_result zero__slots_replan(zero_engine *e) {
    zero__sizes zs;
    size_t before = e->mem.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE];
    int k;
    zero_result r;
    e->grad.replan = 0;
    ZERO__TRY_BE(e, "gradient slots planned again", zero__sync(e, ZERO_STREAM_COMPUTE, &be_err_));
    ZERO__TRY_BE(e, "gradient slots planned again", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    for (k = 0; k < e->grad.slot_cap; k++) {
        zero__efree_counted(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, e->grad.slot_mem[k], e->grad.slot_mem_bytes[k]);
        e->grad.slot_mem[k] = NULL;
        e->grad.slot_mem_bytes[k] = 0;
    }
    zero__efree_counted(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, e->buf.grads, e->grad.grads_bytes);
    e->buf.grads = NULL;
    memset(&zs, 0, sizeof zs);
    zero__slot_sizes(e, &zs);
    if ((r = zero__slots_fill(e, &zs)) != ZERO_OK) return r;
    e->grad.grads_bytes = (size_t)zero__slots_elems(e, &zs) * e->plan.csize;
    if ((r = zero__ealloc(e, ZERO_MEM_GRADS, ZERO_MEM_DEVICE, e->grad.grads_bytes, &e->buf.grads, "gradient ring")) !=
        ZERO_OK) {
        e->broken = 1;
        return r;
    }
    if (e->plan.grank == 0)
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_GRAD_OWN_SLOT,
                  "gradient slots planned again: %d unit span%s with a buffer of its own, a ring of %d x %.1f MiB: "
                  "gradients %.1f MiB (were %.1f MiB in this micro-batch)",
                  zs.own_spans, zs.own_spans == 1 ? "" : "s", e->grad.n_ring,
                  (double)zs.slot * (double)e->plan.csize / 1048576.0,
                  (double)e->mem.planned[ZERO_MEM_GRADS][ZERO_MEM_DEVICE] / 1048576.0, (double)before / 1048576.0);
    return ZERO_OK;
}


static zero_result zero__grads_clear_units(zero_engine *e, const zero_tensor_place *pl) {
    int k;
    for (k = 0; k < pl->n_units; k++) {
        int u = pl->first_unit + k;
        if (e->grad.unit_asked[u]) continue;
        e->grad.unit_asked[u] = 1;
        if (e->grad.clear_hi[u] > e->grad.clear_lo[u])
            ZERO__TRY_BE(e, "zero_grad: gradient clear",
                         e->be.memset0(e->be.ctx, zero__grad_view(e, u).write + (size_t)e->grad.clear_lo[u] * e->plan.csize,
                                       (size_t)(e->grad.clear_hi[u] - e->grad.clear_lo[u]) * e->plan.csize,
                                       ZERO_STREAM_COMPUTE, &be_err_));
    }
    return ZERO_OK;
}

/* Tensor t's gradient buffer for this micro-batch (after the entry checks):
   claims its span's ring slot on stages 2-3, clears its units on stages 0-1
   (zero__grads_lazy). NULL on failure (e->err). */
static void *zero__grad_buffer(zero_engine *e, int t) {
    const zero_tensor_place *pl = &e->plan.layout->places[t];
    int u = pl->first_unit;
    if (zero__grad_view(e, u).program) return zero__gext_grad(e, t);
    e->grad.asked[t] = 1;
    if (e->plan.stage >= 2 && zero__ring_claim(e, zero__span_of_tensor(e, t), t) != ZERO_OK) return NULL;
    if (zero__grads_lazy(e) && zero__grads_clear_units(e, pl) != ZERO_OK) return NULL;
    return zero__grad_view(e, u).write + (size_t)(pl->offset - e->plan.layout->units[u].offset) * e->plan.csize;
}

ZERO__DEF void *zero_grad(zero_engine *e, int t) {
    if (zero__grad_check(e, t, "zero_grad") != ZERO_OK) return NULL;
    return zero__grad_buffer(e, t);
}

/* The pending statistics segments (zero__stats_add) on the comm stream: one
   sumsq_segs call, or sumsq per segment where the backend has none. */
static zero_result zero__stats_flush(zero_engine *e) {
    int k, n = e->buf.n_sq;
    e->buf.n_sq = 0;
    if (n == 0) return ZERO_OK;
    if (e->be.sumsq_segs) {
        ZERO__TRY_BE(e, "gradient norm",
                     e->be.sumsq_segs(e->be.ctx, e->buf.sq, n, e->buf.sq_dt, ZERO_STREAM_COMM, &be_err_));
        return ZERO_OK;
    }
    for (k = 0; k < n; k++)
        ZERO__TRY_BE(e, "gradient norm",
                     e->be.sumsq(e->be.ctx, e->buf.sq[k].x, (size_t)e->buf.sq[k].count, e->buf.sq_dt, e->buf.sq[k].out,
                                 ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

/* Unit u's owned reduced chunk, per tensor, as pending statistics segments
   whose squares and inf/nan flags go to its (unit, tensor) slots of
   stats_dev (cleared after every step); zero__stats_flush issues them. Every
   (unit, tensor) pair has its own slot, so one call never has two segments
   on one slot. */
static zero_result zero__stats_add(zero_engine *e, int u, const char *chunk, zero_dtype dt) {
    const zero_layout *l = e->plan.layout;
    const zero_unit *x = &l->units[u];
    int64_t lo = (int64_t)e->plan.rank * x->chunk, hi = zero__min_i64(lo + x->chunk, x->numel);
    int k, n;
    zero_result r;
    if (x->frozen || hi <= lo) return ZERO_OK;
    if (e->buf.n_sq > 0 && e->buf.sq_dt != dt && (r = zero__stats_flush(e)) != ZERO_OK) return r;
    e->buf.sq_dt = dt;
    n = zero__unit_segments(l, u, lo, hi, e->buf.segtmp, x->last_tensor - x->first_tensor + 1);
    for (k = 0; k < n; k++) {
        const zero__seg *sg = &e->buf.segtmp[k];
        zero_sumsq_seg *q = &e->buf.sq[e->buf.n_sq++];
        q->x = chunk + (size_t)(sg->unit_off - lo) * zero_dtype_size(dt);
        q->count = sg->count;
        q->out = e->buf.stats_dev + 2 * (e->plan.pair_first[u] + (sg->tensor - x->first_tensor));
    }
    return ZERO_OK;
}

/* Unit u's statistics now (one call). */
static zero_result zero__unit_stats_of(zero_engine *e, int u, const char *chunk, zero_dtype dt) {
    zero_result r;
    if ((r = zero__stats_add(e, u, chunk, dt)) != ZERO_OK) return r;
    return zero__stats_flush(e);
}

/* Unit u's statistics from where its reduced chunk is, pending (the caller
   flushes). */
static zero_result zero__unit_stats_add(zero_engine *e, int u) {
    const zero_unit *x = &e->plan.layout->units[u];
    zero__gview gv;
    if (x->frozen || (int64_t)e->plan.rank * x->chunk >= x->numel) return ZERO_OK; /* (no buffer of its own) */
    gv = zero__grad_view(e, u);
    return zero__stats_add(e, u, gv.chunk, gv.dt);
}

static zero_result zero__unit_stats(zero_engine *e, int u) {
    zero_result r;
    if ((r = zero__unit_stats_add(e, u)) != ZERO_OK) return r;
    return zero__stats_flush(e);
}


/* mics_shard_size: unit u's reduced chunk (its shard group's average) averaged
   in place over the world / G groups that hold the same shard: one all-reduce
   per unit and step on the comm stream, behind the unit's last reduce-scatter
   (with accumulation the chunk's sum over the micro-batches crosses once).
   Every rank of the replica group owns the same chunk, so all of them call
   it or none. */
static zero_result zero__reduce_replicas(zero_engine *e, void *chunk, size_t count, zero_dtype dt) {
    if (!e->plan.hybrid) return ZERO_OK;
    ZERO__TRY_BE(e, "all_reduce of gradients across the groups",
                 zero__all_reduce_in(e, ZERO_GROUP_REPLICA, chunk, chunk, count, dt, ZERO_OP_AVG, ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

/* Stages 0-1: accumulate unit u's micro-batch gradient (G > 1) and, on the
   last micro-batch, all-reduce (stage 0) or reduce-scatter it in place
   (stage 1). AVG: every rank's contribution times 1/world inside the
   collective (no pass of its own over the unit), then the sum. */
static zero_result zero__reduce_full(zero_engine *e, int u, const zero__gview *gv) {
    const zero_unit *x = &e->plan.layout->units[u];
    size_t chunk = (size_t)x->chunk, es = zero_dtype_size(gv->dt);
    zero_result r;
    if (gv->acc) {
        ZERO__TRY_BE(e, "gradient accumulation",
                     e->be.convert(e->be.ctx, gv->acc, e->plan.adt, gv->write, e->plan.cdt, (size_t)x->padded, e->run.micro > 0,
                                   ZERO_STREAM_COMM, &be_err_));
        if (!gv->program) /* (the program's gradients are cleared where they are read) */
            ZERO__TRY_BE(e, "gradient clear",
                         e->be.memset0(e->be.ctx, gv->write, (size_t)x->padded * e->plan.csize, ZERO_STREAM_COMM, &be_err_));
    }
    if (e->run.micro != e->plan.gas - 1) return ZERO_OK;
    if ((r = zero__coll_check(e, ZERO__C_REDUCE, u)) != ZERO_OK) return r;
    if (e->plan.stage == 0)
        ZERO__TRY_BE(e, "all_reduce of gradients",
                     zero__all_reduce(e, gv->full, gv->full, (size_t)x->padded, gv->dt, ZERO_OP_AVG, ZERO_STREAM_COMM, &be_err_));
    else
        ZERO__TRY_BE(e, "reduce_scatter of gradients",
                     zero__reduce_scatter(e, gv->full, gv->full + (size_t)e->plan.rank * chunk * es, chunk, gv->dt, ZERO_OP_AVG,
                                          ZERO_STREAM_COMM, &be_err_));
    if (e->plan.stage == 1) return zero__reduce_replicas(e, gv->full + (size_t)e->plan.rank * chunk * es, chunk, gv->dt);
    return ZERO_OK;
}

/* Stages 2-3: reduce-scatter unit u from its ring slot, add the owned chunk
   into the accumulator, and free the slot after the span's last unit. */
/* host_acc: unit u's micro-batch sums land in this rank's part of its ring
   slot (own), then go to the host staging, where the owned chunk
   accumulates. With GAS > 1, the micro-batches before the last go to the
   CPU, which adds them (host_sum, >>engine-hsum); on the last (and on every
   one without host_sum) the chunk so far comes back into the device
   staging, the micro-batch is added there in adt and the sum goes out
   again. On the last micro-batch the statistics are taken on the device
   from what goes out. All on the comm stream, before the ring slot is
   released, so one staging chunk serves every unit in turn and the slot is
   not overwritten while its copy runs. */
static zero_result zero__reduce_host(zero_engine *e, int u, char *write, char *own) {
    const zero_unit *x = &e->plan.layout->units[u];
    size_t chunk = (size_t)x->chunk, as = e->plan.asize;
    char *host, *src = own;
    zero_dtype sdt = e->plan.cdt;
    int last = e->run.micro == e->plan.gas - 1;
    zero_result r;
    /* the CPU's sum of the micro-batches before this one, complete */
    if (last && (r = zero__hsum_drain(e)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "reduce_scatter of gradients",
                 zero__reduce_scatter(e, write, own, chunk, e->plan.cdt, ZERO_OP_AVG, ZERO_STREAM_COMM, &be_err_));
    if (e->plan.seg_count[u] == 0) return ZERO_OK; /* this rank owns only padding of u */
    if (!last && e->plan.host_sum) return zero__hsum_add(e, u, own);
    host = zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], as);
    if (e->plan.gas > 1) {
        if (e->run.micro > 0)
            ZERO__TRY_BE(e, "gradient accumulation: the host's sum to the device",
                         zero__copy(e, e->buf.acc_stage, host, chunk * as, ZERO_STREAM_COMM, &be_err_));
        ZERO__TRY_BE(e, "gradient accumulation",
                     e->be.convert(e->be.ctx, e->buf.acc_stage, e->plan.adt, own, e->plan.cdt, chunk, e->run.micro > 0,
                                   ZERO_STREAM_COMM, &be_err_));
        src = (char *)e->buf.acc_stage;
        sdt = e->plan.adt;
    }
    if (last && (r = zero__reduce_replicas(e, src, chunk, sdt)) != ZERO_OK) return r;
    if (last && (r = zero__unit_stats_of(e, u, src, sdt)) != ZERO_OK) return r;
    if (e->plan.gas > 1 || last)
        ZERO__TRY_BE(e, "gradients to the host",
                     zero__copy(e, host, src, chunk * zero_dtype_size(sdt), ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

static zero_result zero__reduce_ring(zero_engine *e, int u, const zero__gview *gv) {
    const zero_unit *x = &e->plan.layout->units[u];
    zero__span_state *ss = &e->spans[x->span];
    size_t chunk = (size_t)x->chunk;
    char *own = gv->write + (size_t)e->plan.rank * chunk * e->plan.csize;
    zero_result r;
    if ((r = zero__coll_check(e, ZERO__C_REDUCE, u)) != ZERO_OK) return r;
    if (zero__grad_on_host(e, u)) {
        if ((r = zero__reduce_host(e, u, gv->write, own)) != ZERO_OK) return r;
    } else if (e->run.micro == 0 && e->plan.adt == e->plan.cdt) {
        /* the first micro-batch's sums land straight in the accumulator */
        ZERO__TRY_BE(e, "reduce_scatter of gradients",
                     zero__reduce_scatter(e, gv->write, gv->acc, chunk, e->plan.cdt, ZERO_OP_AVG, ZERO_STREAM_COMM, &be_err_));
    } else {
        ZERO__TRY_BE(e, "reduce_scatter of gradients",
                     zero__reduce_scatter(e, gv->write, own, chunk, e->plan.cdt, ZERO_OP_AVG, ZERO_STREAM_COMM, &be_err_));
        ZERO__TRY_BE(e, "gradient accumulation",
                     e->be.convert(e->be.ctx, gv->acc, e->plan.adt, own, e->plan.cdt, chunk, e->run.micro > 0, ZERO_STREAM_COMM,
                                   &be_err_));
    }
    if (!zero__grad_on_host(e, u) && e->run.micro == e->plan.gas - 1 &&
        (r = zero__reduce_replicas(e, gv->acc, chunk, e->plan.adt)) != ZERO_OK)
        return r;
    if (gv->ring && --ss->units_left == 0) {
        int k;
        /* a ring span open since before this span began, and still open: two
           such lives and it is written at distant points (one is a layer's
           weights and biases asked for together) */
        for (k = 0; k < e->grad.n_ring; k++)
            if (k != ss->slot && e->grad.slot_span[k] >= 0 &&
                e->grad.slot_claimed[k] < e->grad.slot_claimed[ss->slot] && ++e->grad.slot_nested[k] >= 2)
                zero__span_found(e, e->grad.slot_span[k], x->first_tensor);
        /* the slot is free once the comm stream is past this point */
        if (e->grad.ev_slot[ss->slot])
            ZERO__TRY_BE(e, "gradient ring event",
                         e->be.event_record(e->be.ctx, e->grad.ev_slot[ss->slot], ZERO_STREAM_COMM, &be_err_));
        e->grad.slot_freed[ss->slot] = ++e->grad.slot_clock;
        e->grad.slot_span[ss->slot] = -1;
        ss->slot = -1;
    }
    return ZERO_OK;
}

/* Unit u's gradients of this micro-batch are complete: its reduction, then
   what the optimizer strategy does with it (the CPU's: the chunk to the
   host on the last micro-batch). */
static zero_result zero__unit_done(zero_engine *e, int u) {
    zero__gview gv = zero__grad_view(e, u);
    double t0 = zero__now_ms();
    zero_result r;
    /* the reduction reads what the backward wrote on the compute stream */
    if ((r = zero__order(e, ZERO_STREAM_COMPUTE, ZERO_STREAM_COMM, e->buf.ev_compute)) != ZERO_OK) return r;
    if (gv.program) ZERO__TRY_BE(e, "the program's gradients", zero__gext_gather(e, u, &be_err_));
    r = e->plan.stage <= 1 ? zero__reduce_full(e, u, &gv) : zero__reduce_ring(e, u, &gv);
    if (r != ZERO_OK) return r;
    if ((r = e->strat->unit_reduced(e, u, e->run.micro == e->plan.gas - 1)) != ZERO_OK) return r;
    e->run.t_phase[ZERO_PHASE_REDUCE] += zero__now_ms() - t0;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_grad_ready(zero_engine *e, int t) {
    zero_result r;
    const zero_tensor_place *pl;
    int k;
    if ((r = zero__grad_check(e, t, "zero_grad_ready")) != ZERO_OK) return r;
    zero__tl_call(e, "zero_grad_ready", t);
    pl = &e->plan.layout->places[t];
    if (!e->grad.asked[t] && zero__grad_view(e, pl->first_unit).program) {
        /* never asked: what the program wrote there without asking (its memory was zero since the last reduction
           read it, zero__gext_gather) */
    } else if (zero__grads_lazy(e) && !e->grad.asked[t]) {
        /* never asked for its buffer: its gradient is zero this micro-batch
           (its units' clears need not cover it: zero it here) */
        void *g = zero__grad_buffer(e, t);
        if (!g) return e->err.code;
        ZERO__TRY_BE(e, "zero_grad_ready: zero gradient",
                     e->be.memset0(e->be.ctx, g, (size_t)e->plan.layout->numel[t] * e->plan.csize, ZERO_STREAM_COMPUTE,
                                   &be_err_));
    } else if (e->plan.stage >= 2 && !e->grad.asked[t]) {
        /* never asked for its buffer: its gradient is zero this micro-batch (a
           GRAD_WRITE tensor's slot is not cleared for it: zero it here) */
        void *g = zero__grad_buffer(e, t);
        if (!g) return e->err.code;
        if (e->plan.tflags[t] & ZERO_TENSOR_GRAD_WRITE)
            ZERO__TRY_BE(e, "zero_grad_ready: zero gradient",
                         e->be.memset0(e->be.ctx, g, (size_t)e->plan.layout->numel[t] * e->plan.csize, ZERO_STREAM_COMPUTE, &be_err_));
    }
    e->grad.ready[t] = 1;
    e->grad.ready_count++;
    for (k = 0; k < pl->n_units; k++) {
        int u = pl->first_unit + k;
        if (--e->grad.tensors_left[u] == 0 && (r = zero__unit_done(e, u)) != ZERO_OK) return r;
    }
    if (e->grad.ready_count == e->plan.n_trainable) { /* the micro-batch is complete */
        e->run.micro++;
        e->xfer.phase = ZERO_XFER_FORWARD;
        e->grad.ready_count = 0;
        memset(e->grad.ready, 0, (size_t)e->plan.n_tensors);
        memset(e->grad.asked, 0, (size_t)e->plan.n_tensors);
        memset(e->grad.unit_asked, 0, (size_t)e->plan.n_units);
        memcpy(e->grad.tensors_left, e->grad.tensors_per_unit, sizeof(int) * (size_t)e->plan.n_units);
        if (e->run.micro == e->plan.gas) e->run.t_phase[ZERO_PHASE_BACKWARD] += zero__now_ms() - e->run.t_backward_start;
        /* the next micro-batch writes buffers this one's reductions still use */
        if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->buf.ev_comm)) != ZERO_OK) return r;
        if (e->grad.replan && (r = zero__slots_replan(e)) != ZERO_OK) return r;
        if (e->plan.stage == 3) {
            if (e->pool.trace_state == ZERO__TRACE_RECORD && e->pool.trace_len > 0)
                e->pool.trace_state = ZERO__TRACE_COMPLETE;
            else if (e->pool.trace_state == ZERO__TRACE_INVALID) {
                e->pool.trace_state = ZERO__TRACE_RECORD;
                e->pool.trace_len = 0;
            }
            e->pool.trace_pos = 0;
        }
    }
    return ZERO_OK;
}

ZERO__DEF double zero_loss_scale(const zero_engine *e) {
    if (!zero__engine_live(e)) return NAN;
    return zero_loss_scaler_scale(&e->run.scaler);
}

/* ---- >>opt-device: Adam on the device (the backend's fused kernel) ----

   Each unit's owned chunk is stepped where it lies; its new compute-dtype
   parameters go where they live (zero__param_out / _put: in place, or a
   device staging on their way to the host or NVMe) and (stages 1-2) its
   all-gather queues behind them. */

/* Unit u's arguments for the device's rule: the step's hyperparameters and
   segments, its master and state where they live, its reduced gradient; no
   parameter output (the caller points aa->param). */
static void zero__device_args(zero_engine *e, int u, const zero_adam_args *hyper, zero_adam_args *aa) {
    zero__gview gv = zero__grad_view(e, u);
    zero__adam_args_for(e, u, hyper, aa);
    aa->master = zero__master_at(e, u);
    aa->m = zero__mom_at(e, 0, u);
    aa->v = zero__mom_at(e, 1, u);
    aa->grad = gv.adam;
    aa->grad_dtype = gv.dt;
    aa->param = NULL;
}

static zero_result zero__opt_device_unit(zero_engine *e, int u, const zero_adam_args *hyper) {
    zero_adam_args aa;
    void *dst;
    int pb;
    ZERO__TRY_BE(e, "zero_step: parameter buffer", zero__param_out(e, u, 0, &dst, &pb, &be_err_));
    zero__device_args(e, u, hyper, &aa);
    aa.param = dst;
    ZERO__TRY_BE(e, "zero_step: Adam", e->be.adam(e->be.ctx, &aa, ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, zero__param_put_what(e), zero__param_put(e, u, 0, dst, pb, &be_err_));
    return ZERO_OK;
}

/* Device Adam of every unit in one adam_multi call, then the units'
   all-gathers in unit order. Used where each unit's new parameters land in
   place (zero__params_in_place): each gather follows its unit's Adam on the
   comm stream as in zero__opt_units; the gathers would have waited for the
   Adam kernels queued before them on that stream anyway, so issuing them
   after the one call loses no overlap. */
static zero_result zero__opt_device_all(zero_engine *e, const zero_adam_args *hyper) {
    const zero_layout *l = e->plan.layout;
    int u, n = 0;
    zero_result r;
    for (u = 0; u < l->n_units; u++) {
        zero_adam_args *aa = &e->buf.uargs[n];
        if (l->units[u].frozen || e->plan.seg_count[u] == 0) continue;
        zero__device_args(e, u, hyper, aa);
        aa->param = zero__master_is_params(e) ? NULL : zero__param_own(e, u);
        n++;
    }
    if (n > 0) ZERO__TRY_BE(e, "zero_step: Adam", e->be.adam_multi(e->be.ctx, e->buf.uargs, n, ZERO_STREAM_COMM, &be_err_));
    for (u = 0; u < l->n_units; u++)
        if (!l->units[u].frozen && (r = zero__step_gather(e, u)) != ZERO_OK) return r;
    return ZERO_OK;
}

/* The norm's statistics of every unit, in one sumsq_segs call. */
static zero_result zero__device_norm_stats(zero_engine *e) {
    int u;
    zero_result r;
    for (u = 0; u < e->plan.layout->n_units; u++)
        if ((r = zero__unit_stats_add(e, u)) != ZERO_OK) return r;
    return ZERO_OK;
}

/* Lamb's first pass of unit u on the device (zero__lamb_norms). */
static zero_result zero__lamb_device_unit(zero_engine *e, int u, const zero_adam_args *hyper) {
    zero_adam_args aa;
    zero__device_args(e, u, hyper, &aa);
    ZERO__TRY_BE(e, "zero_step: Lamb's first pass", e->be.adam(e->be.ctx, &aa, ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

static zero_result zero__device_step(zero_engine *e, float grad_scale, zero_step_info *in) {
    zero_adam_args hyper;
    zero_result r;
    (void)in;
    zero__step_hyper(e, grad_scale, &hyper);
    if (e->opt.lamb && (r = zero__lamb_norms(e, &hyper, zero__lamb_device_unit)) != ZERO_OK) return r;
    return e->be.adam_multi && zero__params_in_place(e) ? zero__opt_device_all(e, &hyper)
                                                        : zero__opt_units(e, &hyper, zero__opt_device_unit);
}

static const zero__strategy zero__strat_device = {
    "device", zero__opt_nop_alloc, zero__opt_nop_release, zero__opt_nop_reduced, zero__opt_nop, zero__opt_nop_u, zero__opt_nop, zero__device_norm_stats,
    zero__device_step, zero__persist_refresh, zero__opt_nop, zero__opt_nop, zero__floor_sequential};

/* ---- >>opt-cpu: Adam on the CPU after the step's norm (offload_optimizer "cpu") ----

   On the last micro-batch each unit's reduced chunk goes to host staging as
   its reduction ends (zero__unit_offload); zero_step steps the units one by
   one with the CPU Adam (zero__cpu_unit) and sends each one's new parameters
   where they live. The other CPU strategies (overlap, early, delayed, nvme)
   are this one with the Adam moved in time or its state in tiles; they
   share its pieces. */

/* Last micro-batch: unit u's reduced chunk is final. Its statistics and the
   copy of the chunk to host staging go on the comm stream now, behind its
   reduction and beside the rest of the backward; zero_step finds them done
   after its one sync. */
static zero_result zero__unit_offload(zero_engine *e, int u) {
    size_t gs = zero_dtype_size(e->plan.gdt);
    zero_result r;
    if (e->plan.layout->units[u].frozen || e->plan.seg_count[u] == 0) return ZERO_OK;
    if (e->plan.host_acc) return ZERO_OK; /* its statistics and copy went with its reduction (zero__reduce_host) */
    if ((r = zero__unit_stats(e, u)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "gradients to the host",
                 zero__copy(e, zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], gs), zero__grad_view(e, u).chunk,
                            (size_t)e->plan.layout->units[u].chunk * gs, ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

/* Host staging (gradient chunks over; parameters back, unless offload_param
   takes the CPU Adam's output straight to the host shard or its tile
   buffers) and the CPU Adam's segment table. */
static zero_result zero__cpu_alloc(zero_engine *e, const zero__sizes *zs) {
    size_t gbytes = (size_t)zs->ST * zero_dtype_size(e->plan.gdt), pbytes = (size_t)zs->ST * e->plan.csize;
    zero_result r;
    if ((r = zero__ealloc(e, ZERO_MEM_GRADS, e->plan.opt_kind, gbytes, &e->buf.cpu_grad, "offload gradient staging")) != ZERO_OK)
        return r;
    if (zero__params_on_device(e) &&
        (r = zero__ealloc(e, ZERO_MEM_PARAMS, e->plan.opt_kind, pbytes, &e->buf.cpu_param, "offload parameter staging")) != ZERO_OK)
        return r;
    e->buf.cpu_segs = (zero_adam_seg *)ZERO_MALLOC(sizeof(zero_adam_seg) * (size_t)(zs->maxcap > 0 ? zs->maxcap : 1));
    if (!e->buf.cpu_segs) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: segments");
    return ZERO_OK;
}

static void zero__cpu_release(zero_engine *e) {
    zero__efree(e, e->plan.opt_kind, e->buf.cpu_grad);
    zero__efree(e, e->plan.opt_kind, e->buf.cpu_param);
    ZERO_FREE(e->buf.cpu_segs);
}

static zero_result zero__cpu_reduced(zero_engine *e, int u, int last) {
    return last ? zero__unit_offload(e, u) : ZERO_OK;
}

/* The step's host-memory traffic for zero_floor_of: master, m, v read and
   written; the gradient read; the parameters written. */
static void zero__cpu_figures(const zero_engine *e, zero_step_info *in) {
    in->cpu_adam_bytes = e->plan.seg_elems * (int64_t)(24 + zero_dtype_size(e->plan.gdt) + e->plan.csize);
}

/* CPU Adam of unit u from its staged gradient chunk. */
static zero_result zero__opt_cpu_unit(zero_engine *e, int u, const zero_adam_args *hyper) {
    void *dst;
    int pb;
    ZERO__TRY_BE(e, "zero_step: parameter buffer", zero__param_out(e, u, 1, &dst, &pb, &be_err_));
    ZERO__TRY_BE(e, "zero_step: CPU Adam",
                 zero__cpu_unit(e, u, hyper, zero__master_at(e, u), zero__mom_at(e, 0, u), zero__mom_at(e, 1, u),
                                zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], zero_dtype_size(e->plan.gdt)), dst,
                                zero__params_on_device(e), &be_err_));
    if (!zero__params_on_device(e)) /* (else zero__cpu_unit sent them there piece by piece) */
        ZERO__TRY_BE(e, zero__param_put_what(e), zero__param_put(e, u, 1, dst, pb, &be_err_));
    return ZERO_OK;
}

/* Lamb's first pass of unit u on the CPU (zero__lamb_norms): no parameters out. */
static zero_result zero__lamb_cpu_unit(zero_engine *e, int u, const zero_adam_args *hyper) {
    ZERO__TRY_BE(e, "zero_step: Lamb's first pass on the CPU",
                 zero__cpu_unit(e, u, hyper, zero__master_at(e, u), zero__mom_at(e, 0, u), zero__mom_at(e, 1, u),
                                zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], zero_dtype_size(e->plan.gdt)), NULL, 0,
                                &be_err_));
    return ZERO_OK;
}

static zero_result zero__cpu_step(zero_engine *e, float grad_scale, zero_step_info *in) {
    zero_adam_args hyper;
    zero_result r;
    zero__step_hyper(e, grad_scale, &hyper);
    zero__cpu_figures(e, in);
    if (e->opt.lamb && (r = zero__lamb_norms(e, &hyper, zero__lamb_cpu_unit)) != ZERO_OK) return r;
    return zero__opt_units(e, &hyper, zero__opt_cpu_unit);
}

static const zero__strategy zero__strat_cpu = {
    "cpu", zero__cpu_alloc, zero__cpu_release, zero__cpu_reduced, zero__opt_nop, zero__opt_nop_u, zero__opt_nop, zero__opt_nop,
    zero__cpu_step, zero__persist_refresh, zero__opt_nop, zero__opt_nop, zero__floor_sequential};

/* ---- >>opt-twin: partial offload, some units on the device (offload_optimizer.ratio < 1) ----

   Stage 3, "cpu": the units zero__unit_on_device names (the first ones)
   keep their reduced chunks, master, m and v on the device and step with
   the device's Adam; the others are the plain CPU strategy's. The early,
   overlapped and delayed CPU steps are not combined with it
   (zero__state_plan leaves them off). */

/* The device's units: their statistics on the last micro-batch, where the
   CPU's take theirs; nothing crosses. */
static zero_result zero__twin_reduced(zero_engine *e, int u, int last) {
    if (!zero__unit_on_device(e, u)) return zero__cpu_reduced(e, u, last);
    return last ? zero__unit_stats(e, u) : ZERO_OK;
}

static zero_result zero__opt_twin_unit(zero_engine *e, int u, const zero_adam_args *hyper) {
    return zero__unit_on_device(e, u) ? zero__opt_device_unit(e, u, hyper) : zero__opt_cpu_unit(e, u, hyper);
}

static zero_result zero__twin_step(zero_engine *e, float grad_scale, zero_step_info *in) {
    const zero_layout *l = e->plan.layout;
    zero_adam_args hyper;
    int u;
    zero__step_hyper(e, grad_scale, &hyper);
    zero__cpu_figures(e, in);
    for (u = 0; u < l->n_units; u++) /* (the host's traffic: not the device's units') */
        if (!l->units[u].frozen && zero__unit_on_device(e, u))
            in->cpu_adam_bytes -= zero__max_i64(0, zero__min_i64(l->units[u].chunk, l->units[u].numel - (int64_t)e->plan.rank * l->units[u].chunk)) *
                                  (int64_t)(24 + zero_dtype_size(e->plan.gdt) + e->plan.csize);
    return zero__opt_units(e, &hyper, zero__opt_twin_unit);
}

static const zero__strategy zero__strat_twin = {
    "cpu+device", zero__cpu_alloc, zero__cpu_release, zero__twin_reduced, zero__opt_nop, zero__opt_nop_u, zero__opt_nop,
    zero__opt_nop, zero__twin_step, zero__persist_refresh, zero__opt_nop, zero__opt_nop, zero__floor_sequential};

/* ---- >>opt-overlap: the CPU Adam beside the next forward (cfg.overlap_cpu_step) ----

   Stage 3 with both offloads to the CPU: zero_step steps the persistent
   spans' units itself and hands the others to the engine's thread in the
   order the next forward fetches them; a fetch waits only for its own unit's
   Adam (param_wait), the next backward for all of them. */

/* The job: the units of trail_order in turn, each published as done; stops
   at a failure or when the engine quits. */
static void zero__trail_run(zero_engine *e, zero_error *fail) {
    int i;
    for (i = e->opt.trail_done; i < e->opt.trail_n && !e->thr.quit; i++) {
        int u = e->opt.trail_order[i];
        pthread_mutex_unlock(&e->thr.mu);
        zero__cpu_unit(e, u, &e->thr.h, zero__master_at(e, u), zero__mom_at(e, 0, u), zero__mom_at(e, 1, u),
                       zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], zero_dtype_size(e->plan.gdt)), zero__param_own(e, u), 0,
                       fail);
        pthread_mutex_lock(&e->thr.mu);
        if (fail->code != ZERO_OK) break;
        e->opt.trail_done = i + 1;
        pthread_cond_broadcast(&e->thr.cv);
    }
}

/* The overlapped step's Adam of unit u done (u < 0: of every unit); its
   failure becomes the engine's. */
static zero_result zero__trail_wait(zero_engine *e, int u) {
    zero_error fail;
    int need;
    if (!e->opt.trail_armed) return ZERO_OK;
    need = u < 0 ? e->opt.trail_n : e->opt.trail_pos[u] + 1;
    if (need <= 0) return ZERO_OK; /* not one the thread steps */
    zero__ok(&fail);
    pthread_mutex_lock(&e->thr.mu);
    while (e->opt.trail_done < need && e->thr.go) pthread_cond_wait(&e->thr.cv, &e->thr.mu);
    if (!e->thr.go) { /* finished (or failed): the step is over */
        fail = e->thr.err;
        zero__ok(&e->thr.err);
        e->opt.trail_armed = 0;
    }
    pthread_mutex_unlock(&e->thr.mu);
    if (fail.code != ZERO_OK) return zero__ebackend(e, &fail, "CPU Adam beside the forward (overlap_cpu_step)");
    return ZERO_OK;
}

static zero_result zero__trail_wait_all(zero_engine *e) { return zero__trail_wait(e, -1); }

/* The CPU staging, the thread, and the units' order. */
static zero_result zero__trail_alloc(zero_engine *e, const zero__sizes *zs) {
    int nu = e->plan.layout->n_units ? e->plan.layout->n_units : 1;
    zero_result r;
    if ((r = zero__cpu_alloc(e, zs)) != ZERO_OK) return r;
    e->opt.trail_order = (int *)ZERO_MALLOC(sizeof(int) * (size_t)nu);
    e->opt.trail_pos = (int *)ZERO_MALLOC(sizeof(int) * (size_t)nu);
    if (!e->opt.trail_order || !e->opt.trail_pos)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: overlapped step tables");
    return zero__thread_init(e);
}

static void zero__trail_release(zero_engine *e) {
    zero__cpu_release(e);
    ZERO_FREE(e->opt.trail_order);
    ZERO_FREE(e->opt.trail_pos);
}

/* The units of persistent spans stepped here (they stay on the device,
   refreshed by the step); the others handed to the thread in the order of
   the recorded fetch trace (what the next forward fetches first goes first),
   then the rest in unit order. */
static zero_result zero__trail_step(zero_engine *e, float grad_scale, zero_step_info *in) {
    const zero_layout *l = e->plan.layout;
    zero_adam_args h;
    int s, u, p, n = 0;
    zero_result r;
    zero__step_hyper(e, grad_scale, &h);
    zero__cpu_figures(e, in);
    for (s = 0; s < e->plan.n_spans; s++)
        if (e->spans[s].persistent)
            for (u = l->span_first[s]; u < l->span_first[s + 1]; u++)
                if (!l->units[u].frozen && e->plan.seg_count[u] > 0 && (r = zero__opt_cpu_unit(e, u, &h)) != ZERO_OK) return r;
    for (u = 0; u < l->n_units; u++) e->opt.trail_pos[u] = -1;
#define ZERO__TRAIL_ADD(u_)                                                                                       \
    if (!l->units[u_].frozen && e->plan.seg_count[u_] > 0 && !e->spans[l->units[u_].span].persistent &&          \
        e->opt.trail_pos[u_] < 0) {                                                                               \
        e->opt.trail_pos[u_] = n;                                                                                 \
        e->opt.trail_order[n++] = u_;                                                                             \
    }
    if (e->pool.trace_state == ZERO__TRACE_COMPLETE)
        for (p = 0; p < e->pool.trace_len; p++)
            for (u = l->span_first[e->pool.trace[p]]; u < l->span_first[e->pool.trace[p] + 1]; u++) ZERO__TRAIL_ADD(u)
    for (u = 0; u < l->n_units; u++) ZERO__TRAIL_ADD(u)
#undef ZERO__TRAIL_ADD
    if (n == 0) return ZERO_OK;
    if ((r = zero__thread_start(e)) != ZERO_OK) return r;
    pthread_mutex_lock(&e->thr.mu);
    e->thr.h = h;
    e->opt.trail_n = n;
    e->opt.trail_done = 0;
    e->opt.trail_armed = 1;
    zero__thread_go(e, zero__trail_run);
    pthread_mutex_unlock(&e->thr.mu);
    in->cpu_units_overlapped = n;
    return ZERO_OK;
}

static double zero__trail_floor(const zero_step_info *in, double fwd, double bwd, double step, double adam,
                                const char **schedule) {
    if (in->cpu_units_overlapped <= 0) return zero__floor_sequential(in, fwd, bwd, step, adam, schedule);
    *schedule = "overlapped";
    return (fwd > adam ? fwd : adam) + bwd + step;
}

static const zero__strategy zero__strat_overlap = {
    "overlapped cpu", zero__trail_alloc, zero__trail_release, zero__cpu_reduced, zero__trail_wait_all, zero__trail_wait, zero__trail_wait_all, zero__opt_nop,
    zero__trail_step, zero__persist_refresh, zero__trail_wait_all, zero__trail_wait_all, zero__trail_floor};

/* ---- >>opt-early: the CPU Adam during the last backward (the early CPU step) ----

   Offload "cpu" without clipping or an overflow check: nothing of the step
   waits for the global norm, so on the last micro-batch the engine's thread
   steps each unit as soon as its gradient chunk has reached the host
   (event grad_on_host[u]), in the backward's order; zero_step waits for the
   last one and sends the parameters to the device. Where it was not armed
   (no unit reached the host on the last micro-batch) the step is the plain
   CPU one. */

/* The CPU staging, the thread, the queue and an event per unit that the
   thread waits on. */
static zero_result zero__early_alloc(zero_engine *e, const zero__sizes *zs) {
    const zero_layout *l = e->plan.layout;
    int u;
    zero_result r;
    if ((r = zero__cpu_alloc(e, zs)) != ZERO_OK) return r;
    e->opt.early_queue = (int *)ZERO_MALLOC(sizeof(int) * (size_t)(l->n_units ? l->n_units : 1));
    e->opt.grad_on_host = (zero_event **)ZERO_MALLOC(sizeof(zero_event *) * (size_t)(l->n_units ? l->n_units : 1));
    if (!e->opt.early_queue || !e->opt.grad_on_host)
        return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_engine_create: early step tables");
    memset(e->opt.grad_on_host, 0, sizeof(zero_event *) * (size_t)l->n_units);
    for (u = 0; u < l->n_units; u++) {
        zero_error be;
        zero__ok(&be);
        if (!l->units[u].frozen && e->plan.seg_count[u] > 0 && e->be.event_create(e->be.ctx, &e->opt.grad_on_host[u], &be) != ZERO_OK)
            return zero__ebackend(e, &be, "zero_engine_create: events");
    }
    return zero__thread_init(e);
}

static void zero__early_release(zero_engine *e) {
    int k;
    zero__cpu_release(e);
    if (e->opt.grad_on_host && e->be.event_destroy)
        for (k = 0; k < e->plan.n_units; k++)
            if (e->opt.grad_on_host[k]) e->be.event_destroy(e->be.ctx, e->opt.grad_on_host[k]);
    ZERO_FREE(e->opt.grad_on_host);
    ZERO_FREE(e->opt.early_queue);
}

/* The job: each queued unit once its gradient chunk is on the host, until
   the step closes the queue; after a failure the rest is only drained. */
static void zero__early_run(zero_engine *e, zero_error *fail) {
    for (;;) {
        int u;
        while (e->opt.early_head == e->opt.early_tail && !e->opt.early_closed && !e->thr.quit) pthread_cond_wait(&e->thr.cv, &e->thr.mu);
        if (e->opt.early_head == e->opt.early_tail) break; /* closed (or quitting) and drained */
        u = e->opt.early_queue[e->opt.early_head++];
        if (fail->code != ZERO_OK || e->thr.quit) continue;
        pthread_mutex_unlock(&e->thr.mu);
        if (e->be.event_sync(e->be.ctx, e->opt.grad_on_host[u], fail) == ZERO_OK)
            zero__cpu_unit(e, u, &e->thr.h, zero__master_at(e, u), zero__mom_at(e, 0, u), zero__mom_at(e, 1, u),
                           zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], zero_dtype_size(e->plan.gdt)),
                           zero__at(e->buf.cpu_param, e->plan.unit_shard_off[u], e->plan.csize), 0, fail);
        pthread_mutex_lock(&e->thr.mu);
    }
}

/* Last micro-batch, unit u's gradient chunk queued to the host: the thread
   steps it once the copy is done (the first unit of the step arms the step:
   its hyperparameters, the queue). */
static zero_result zero__early_reduced(zero_engine *e, int u, int last) {
    zero_result r;
    if (!last) return ZERO_OK;
    if ((r = zero__unit_offload(e, u)) != ZERO_OK) return r;
    if (e->plan.layout->units[u].frozen || e->plan.seg_count[u] == 0) return ZERO_OK;
    if (!e->opt.early_armed) {
        /* no clipping and no overflow check: the step's factor is 1 / (G S) */
        zero__step_hyper(e, (float)(1.0 / ((double)e->plan.gas * zero_loss_scaler_scale(&e->run.scaler))), &e->thr.h);
        if ((r = zero__thread_start(e)) != ZERO_OK) return r;
        pthread_mutex_lock(&e->thr.mu);
        e->opt.early_head = e->opt.early_tail = 0;
        e->opt.early_closed = 0;
        zero__thread_go(e, zero__early_run);
        pthread_mutex_unlock(&e->thr.mu);
        e->opt.early_armed = 1;
    }
    ZERO__TRY_BE(e, "early CPU step: event", e->be.event_record(e->be.ctx, e->opt.grad_on_host[u], ZERO_STREAM_COMM, &be_err_));
    pthread_mutex_lock(&e->thr.mu);
    e->opt.early_queue[e->opt.early_tail++] = u;
    pthread_cond_broadcast(&e->thr.cv);
    pthread_mutex_unlock(&e->thr.mu);
    return ZERO_OK;
}

/* The thread stepped the units during the backward (with the
   hyperparameters fixed when it was armed); their parameters go to the
   device. */
static zero_result zero__opt_early_unit(zero_engine *e, int u, const zero_adam_args *hyper) {
    (void)hyper;
    ZERO__TRY_BE(e, "zero_step: parameters to the device",
                 zero__copy(e, zero__param_own(e, u), zero__at(e->buf.cpu_param, e->plan.unit_shard_off[u], e->plan.csize),
                            (size_t)e->plan.layout->units[u].chunk * e->plan.csize, ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

/* No more units this step: wait until the thread has stepped all, then
   their parameters to the device. */
static zero_result zero__early_step(zero_engine *e, float grad_scale, zero_step_info *in) {
    zero_adam_args hyper;
    zero_result r;
    if (!e->opt.early_armed) return zero__cpu_step(e, grad_scale, in);
    in->cpu_units_early = e->opt.early_tail;
    r = zero__thread_close(e, &e->opt.early_closed, "early CPU step");
    e->opt.early_armed = 0;
    if (r != ZERO_OK) return r;
    hyper = e->thr.h;
    zero__cpu_figures(e, in);
    return zero__opt_units(e, &hyper, zero__opt_early_unit);
}

static double zero__early_floor(const zero_step_info *in, double fwd, double bwd, double step, double adam,
                                const char **schedule) {
    if (in->cpu_units_early <= 0) return zero__floor_sequential(in, fwd, bwd, step, adam, schedule);
    *schedule = "early";
    return fwd + (bwd > adam ? bwd : adam) + step;
}

static const zero__strategy zero__strat_early = {
    "early cpu", zero__early_alloc, zero__early_release, zero__early_reduced, zero__opt_nop, zero__opt_nop_u, zero__opt_nop, zero__opt_nop,
    zero__early_step, zero__persist_refresh, zero__opt_nop, zero__opt_nop, zero__early_floor};

/* ---- >>opt-delayed: step t's CPU Adam beside step t+1 (delayed_param_update) ----

   zero_step of step t decides overflow and clipping from step t's gradients
   (on the host already), puts the parameters of step t-1's delayed Adam on
   the device (settle: zero__dpu_apply), then hands step t's CPU Adam to the
   engine's thread and returns: that Adam runs beside the forward and
   backward of step t+1, which therefore use the parameters of step t-1.
   The staging pairs alternate, so the backward fills one while the thread
   reads the other. zero_flush (and the next zero_step) wait for the thread
   and apply its parameters. */

/* The CPU staging as the first of two pairs, the second pair, the device
   staging of the new chunks, the thread. */
static zero_result zero__dpu_alloc(zero_engine *e, const zero__sizes *zs) {
    size_t gbytes = (size_t)zs->ST * zero_dtype_size(e->plan.gdt), pbytes = (size_t)zs->ST * e->plan.csize;
    zero_result r;
    if ((r = zero__cpu_alloc(e, zs)) != ZERO_OK) return r;
    e->dpu.grad[0] = e->buf.cpu_grad;
    e->dpu.param[0] = e->buf.cpu_param;
    if ((r = zero__ealloc(e, ZERO_MEM_GRADS, e->plan.opt_kind, gbytes, &e->dpu.grad[1], "delayed update: second gradient staging")) !=
            ZERO_OK ||
        (r = zero__ealloc(e, ZERO_MEM_PARAMS, e->plan.opt_kind, pbytes, &e->dpu.param[1], "delayed update: second parameter staging")) !=
            ZERO_OK ||
        (r = zero__ealloc(e, ZERO_MEM_PARAMS, ZERO_MEM_DEVICE, pbytes, &e->dpu.dev, "delayed update: device staging")) != ZERO_OK)
        return r;
    return zero__thread_init(e);
}

/* (buf.cpu_grad / cpu_param point at one of the pairs) */
static void zero__dpu_release(zero_engine *e) {
    zero__efree(e, e->plan.opt_kind, e->dpu.grad[0]);
    zero__efree(e, e->plan.opt_kind, e->dpu.grad[1]);
    zero__efree(e, e->plan.opt_kind, e->dpu.param[0]);
    zero__efree(e, e->plan.opt_kind, e->dpu.param[1]);
    ZERO_FREE(e->buf.cpu_segs);
    zero__efree(e, ZERO_MEM_DEVICE, e->dpu.dev);
}

/* The job: every unit from the last down (the backward's order), each
   published as stepped (its new parameters may go to the device). */
static void zero__dpu_run(zero_engine *e, zero_error *fail) {
    int u, q = 1 - e->dpu.cur; /* the pair the step handed over */
    pthread_mutex_unlock(&e->thr.mu);
    for (u = e->plan.n_units - 1; u >= 0; u--) {
        if (!e->plan.layout->units[u].frozen && e->plan.seg_count[u] > 0 &&
            zero__cpu_unit(e, u, &e->thr.h, zero__master_at(e, u), zero__mom_at(e, 0, u), zero__mom_at(e, 1, u),
                           zero__at(e->dpu.grad[q], e->plan.unit_shard_off[u], zero_dtype_size(e->plan.gdt)),
                           zero__at(e->dpu.param[q], e->plan.unit_shard_off[u], e->plan.csize), 0, fail) != ZERO_OK)
            break;
        pthread_mutex_lock(&e->thr.mu);
        e->dpu.done_from = u;
        pthread_mutex_unlock(&e->thr.mu);
    }
    pthread_mutex_lock(&e->thr.mu);
}

static zero_result zero__dpu_wait(zero_engine *e) { return zero__thread_wait(e, "delayed CPU Adam"); }

/* Step t's CPU Adam to the thread, reading the staging pair the backward
   filled; the next backward fills the other one. */
static zero_result zero__dpu_step(zero_engine *e, float grad_scale, zero_step_info *in) {
    zero_result r;
    zero_adam_args h;
    zero__step_hyper(e, grad_scale, &h);
    zero__cpu_figures(e, in);
    if ((r = zero__dpu_wait(e)) != ZERO_OK || (r = zero__thread_start(e)) != ZERO_OK) return r;
    pthread_mutex_lock(&e->thr.mu);
    e->thr.h = h;
    e->dpu.done_from = e->dpu.copied_from = e->plan.n_units;
    e->dpu.cur = 1 - e->dpu.cur;
    e->buf.cpu_grad = e->dpu.grad[e->dpu.cur];
    e->dpu.pending = 1;
    zero__thread_go(e, zero__dpu_run);
    pthread_mutex_unlock(&e->thr.mu);
    return ZERO_OK;
}

/* The units the thread has stepped since the last call: their new chunks
   to the device staging, on the comm stream (from the backward, so the
   host-to-device copies run beside it; the parameters in use stay as they
   are until zero__dpu_apply). Local to this rank: no collective. */
static zero_result zero__dpu_early(zero_engine *e) {
    int u, q = 1 - e->dpu.cur, from;
    if (!e->dpu.pending) return ZERO_OK;
    pthread_mutex_lock(&e->thr.mu);
    from = e->dpu.done_from;
    pthread_mutex_unlock(&e->thr.mu);
    for (u = from; u < e->dpu.copied_from; u++)
        if (!e->plan.layout->units[u].frozen && e->plan.seg_count[u] > 0)
            ZERO__TRY_BE(e, "delayed update: parameters to the device",
                         zero__copy(e, zero__at(e->dpu.dev, e->plan.unit_shard_off[u], e->plan.csize),
                                    zero__at(e->dpu.param[q], e->plan.unit_shard_off[u], e->plan.csize),
                                    (size_t)e->plan.layout->units[u].chunk * e->plan.csize, ZERO_STREAM_COMM, &be_err_));
    if (from < e->dpu.copied_from) e->dpu.copied_from = from;
    return ZERO_OK;
}

static zero_result zero__dpu_reduced(zero_engine *e, int u, int last) {
    zero_result r;
    if ((r = zero__cpu_reduced(e, u, last)) != ZERO_OK) return r;
    return zero__dpu_early(e);
}

/* The delayed Adam's parameters in place: wait, copy what the backward did
   not (zero__dpu_early), then device to device into every owned chunk and
   all-gather (stages 1-2) or refresh the persistent spans (stage 3). A
   collective when one is pending (every rank has one then). */
static zero_result zero__dpu_apply(zero_engine *e) {
    const zero_layout *l = e->plan.layout;
    int u;
    zero_result r;
    if (!e->dpu.pending) return ZERO_OK;
    if ((r = zero__dpu_wait(e)) != ZERO_OK || (r = zero__dpu_early(e)) != ZERO_OK) return r;
    e->dpu.pending = 0;
    for (u = 0; u < l->n_units; u++) {
        if (l->units[u].frozen) continue;
        if (e->plan.seg_count[u] > 0)
            ZERO__TRY_BE(e, "delayed update: parameters in place",
                         zero__copy(e, zero__param_own(e, u), zero__at(e->dpu.dev, e->plan.unit_shard_off[u], e->plan.csize),
                                    (size_t)l->units[u].chunk * e->plan.csize, ZERO_STREAM_COMM, &be_err_));
        if ((r = zero__step_gather(e, u)) != ZERO_OK) return r;
    }
    return zero__persist_refresh(e);
}

static zero_result zero__dpu_quiesce(zero_engine *e) { return e->dpu.pending ? zero__dpu_wait(e) : ZERO_OK; }

/* zero_flush: the last step's parameters in place, between steps. */
static zero_result zero__dpu_flush(zero_engine *e) {
    zero_result r;
    if (!e->dpu.pending) return ZERO_OK;
    if (e->grad.touched || e->run.micro > 0)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY, "zero_flush: gradients of a step are pending; flush before "
                                                          "the first zero_grad or after zero_step");
    if ((r = zero__dpu_apply(e)) != ZERO_OK) return r;
    if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->buf.ev_comm)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "zero_flush: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

static double zero__dpu_floor(const zero_step_info *in, double fwd, double bwd, double step, double adam,
                              const char **schedule) {
    (void)in;
    *schedule = "delayed";
    return fwd + bwd + step > adam ? fwd + bwd + step : adam;
}

static const zero__strategy zero__strat_delayed = {
    "delayed cpu", zero__dpu_alloc, zero__dpu_release, zero__dpu_reduced, zero__opt_nop, zero__opt_nop_u, zero__dpu_apply, zero__opt_nop,
    zero__dpu_step, zero__opt_nop, zero__dpu_quiesce, zero__dpu_flush, zero__dpu_floor};

/* ---- >>opt-nvme: the CPU Adam over NVMe tiles (offload_optimizer "nvme") ----

   master | m | v of each trainable unit's owned chunk live in one tile of
   the backend's tile store; the step reads tiles ahead, steps, and writes
   them behind. */

/* Adam over the tiles, unit by unit. Tile of list
   entry j in buffer j % n_tbuf; reads run up to n_tbuf - 1 entries ahead,
   the last entry's write behind the current one's Adam, and a buffer is read
   into only after its previous write completed. Any failure waits every
   pending request before it returns (the store's error names the file). */
static zero_result zero__nvme_step(zero_engine *e, const zero_adam_args *h) {
    const zero_layout *l = e->plan.layout;
    int nb = e->nvme.n_tbuf, u, nu = e->nvme.n_tile_units, i, next = 0;
    const int *list = e->nvme.tile_units; /* no allocation in the step */
    zero_error fail;
    const char *what = "";
    zero__ok(&fail);
    for (i = 0; i < nu && fail.code == ZERO_OK; i++) {
        void *dst;
        int bi = i % nb, pb;
        int64_t c;
        float *tb;
        /* read-ahead into free buffers */
        while (next < nu && next < i + nb - 1 && fail.code == ZERO_OK) {
            int bn = next % nb;
            int64_t cn = l->units[list[next]].chunk;
            if (e->nvme.tbuf_wr[bn]) {
                void *q = e->nvme.tbuf_wr[bn];
                e->nvme.tbuf_wr[bn] = NULL;
                if (e->be.tiles_wait(e->nvme.store, q, &fail) != ZERO_OK) {
                    what = "zero_step: NVMe write of an optimizer tile";
                    break;
                }
            }
            if (e->be.tiles_read(e->nvme.store, list[next], e->nvme.tbuf[bn], 12 * (size_t)cn, &e->nvme.tbuf_rd[bn], &fail) != ZERO_OK) {
                e->nvme.tbuf_rd[bn] = NULL;
                what = "zero_step: NVMe read of an optimizer tile";
                break;
            }
            next++;
        }
        if (fail.code != ZERO_OK) break;
        u = list[i];
        c = l->units[u].chunk;
        tb = (float *)e->nvme.tbuf[bi];
        {
            void *q = e->nvme.tbuf_rd[bi];
            e->nvme.tbuf_rd[bi] = NULL;
            if (e->be.tiles_wait(e->nvme.store, q, &fail) != ZERO_OK) {
                what = "zero_step: NVMe read of an optimizer tile";
                break;
            }
        }
        if (zero__param_out(e, u, 1, &dst, &pb, &fail) != ZERO_OK) {
            what = "zero_step: NVMe parameter tile buffer";
            break;
        }
        if (zero__cpu_unit(e, u, h, tb, tb + c, tb + 2 * c, zero__at(e->buf.cpu_grad, e->plan.unit_shard_off[u], zero_dtype_size(e->plan.gdt)),
                           dst, 0, &fail) != ZERO_OK) {
            what = "zero_step: CPU Adam";
            break;
        }
        /* write-behind of this tile while the next one steps */
        if (e->be.tiles_write(e->nvme.store, u, tb, 12 * (size_t)c, &e->nvme.tbuf_wr[bi], &fail) != ZERO_OK) {
            e->nvme.tbuf_wr[bi] = NULL;
            what = "zero_step: NVMe write of an optimizer tile";
            break;
        }
        if (zero__param_put(e, u, 1, dst, pb, &fail) != ZERO_OK) {
            what = zero__param_put_what(e);
            break;
        }
    }
    if (fail.code != ZERO_OK) {
        zero__tiles_drain(e, NULL);
        return zero__ebackend(e, &fail, what);
    }
    zero__tiles_drain(e, &fail);
    if (fail.code != ZERO_OK) return zero__ebackend(e, &fail, "zero_step: NVMe write of an optimizer tile");
    return ZERO_OK;
}

static zero_result zero__nvme_opt_step(zero_engine *e, float grad_scale, zero_step_info *in) {
    zero_adam_args hyper;
    zero__step_hyper(e, grad_scale, &hyper);
    zero__cpu_figures(e, in);
    return zero__nvme_step(e, &hyper);
}

/* Stages 1-2: the units' all-gathers after the whole step (the ranks' tile
   lists differ, so none is queued inside it); stage 3: the persistent
   spans. */
static zero_result zero__nvme_after(zero_engine *e) {
    const zero_layout *l = e->plan.layout;
    int u;
    zero_result r;
    for (u = 0; u < l->n_units; u++)
        if (!l->units[u].frozen && (r = zero__step_gather(e, u)) != ZERO_OK) return r;
    return zero__persist_refresh(e);
}

static const zero__strategy zero__strat_nvme = {
    "nvme", zero__cpu_alloc, zero__cpu_release, zero__cpu_reduced, zero__opt_nop, zero__opt_nop_u, zero__opt_nop, zero__opt_nop,
    zero__nvme_opt_step, zero__nvme_after, zero__opt_nop, zero__opt_nop, zero__floor_sequential};

/* The strategy zero_engine_create decided on (zero__place_plan's flags). */
/* (Lamb steps after the norms of whole tensors, which no unit has before
   every unit's first pass: not early nor overlapped; create refuses it with
   NVMe and the delayed update) */
static const zero__strategy *zero__strategy_pick(const zero_engine *e) {
    int lamb = e->cfg.optimizer.type == ZERO_OPTIMIZER_LAMB;
    if (e->nvme.on) return &zero__strat_nvme;
    if (e->dpu.on) return &zero__strat_delayed;
    if (e->opt.early && !lamb) return &zero__strat_early;
    if (e->opt.trail && !lamb) return &zero__strat_overlap;
    if (e->opt.twin) return &zero__strat_twin;
    return e->opt.cpu ? &zero__strat_cpu : &zero__strat_device;
}

/* ---- >>engine-step: zero_step as its phases; zero_flush ----

   zero_step reads as its phases: ready?, norm, overflow and the loss scale,
   (skip | clip, the optimizer of the placement chosen at create, the new
   parameters everywhere), the report. */

/* bytes of the full gradient buffer (stage 0-1) */
static size_t zero__grads_bytes(const zero_engine *e) {
    int64_t n = 0;
    int u;
    for (u = 0; u < e->plan.n_units; u++)
        if (!e->plan.layout->units[u].frozen) n += e->plan.layout->units[u].padded;
    return (size_t)n * e->plan.csize;
}

/* Hand the step's counters and phase times to info; start the next step's. */
static void zero__step_counters(zero_engine *e, zero_step_info *in) {
    in->fetches = e->pool.n_fetches;
    in->fetch_hits = e->pool.n_hits;
    in->units_gathered = e->pool.n_gathered;
    e->pool.n_fetches = e->pool.n_hits = e->pool.n_gathered = 0;
    memcpy(in->bytes_to_device, e->xfer.to_dev, sizeof in->bytes_to_device);
    memcpy(in->bytes_to_host, e->xfer.to_host, sizeof in->bytes_to_host);
    memset(e->xfer.to_dev, 0, sizeof e->xfer.to_dev);
    memset(e->xfer.to_host, 0, sizeof e->xfer.to_host);
    memcpy(in->comm_bytes, e->xfer.comm, sizeof in->comm_bytes);
    memset(e->xfer.comm, 0, sizeof e->xfer.comm);
    e->xfer.phase = ZERO_XFER_FORWARD;
    memset(e->run.t_phase, 0, sizeof e->run.t_phase);
}

static void zero__step_reset(zero_engine *e) {
    e->run.micro = 0;
    e->grad.ready_count = 0;
    e->grad.touched = 0;
    memset(e->grad.ready, 0, (size_t)e->plan.n_tensors);
    memset(e->grad.asked, 0, (size_t)e->plan.n_tensors);
    memset(e->grad.unit_asked, 0, (size_t)e->plan.n_units);
    memcpy(e->grad.tensors_left, e->grad.tensors_per_unit, sizeof(int) * (size_t)e->plan.n_units);
    e->run.norm_ready = 0;
}

static void zero__step_log(zero_engine *e, const zero_step_info *in) {
    const zero_config *c = &e->cfg;
    double now = zero__now_ms(), dt = (now - e->obs.t_step_ms) / 1000.0;
    e->obs.t_step_ms = now;
    if (e->obs.jsonl) zero__metrics_line(e, in, dt > 0 ? (double)c->train_batch_size / dt : 0);
    zero__monitors_write(e, in, dt > 0 ? (double)c->train_batch_size / dt : 0);
    if (c->wall_clock_breakdown)
        zero__log(&c->log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_TIMERS,
                  "time (ms) | backward: %.2f | reduce: %.2f | fetch: %.2f | norm: %.2f | optimizer: %.2f | gather: %.2f | "
                  "step: %.2f",
                  in->time_ms[ZERO_PHASE_BACKWARD], in->time_ms[ZERO_PHASE_REDUCE], in->time_ms[ZERO_PHASE_FETCH],
                  in->time_ms[ZERO_PHASE_NORM], in->time_ms[ZERO_PHASE_OPTIMIZER], in->time_ms[ZERO_PHASE_GATHER],
                  in->time_ms[ZERO_PHASE_STEP]);
    if (c->steps_per_print > 0 && e->run.global_steps % c->steps_per_print == 0) {
        double b1, b2, secs = (now - e->obs.t_print_ms) / 1000.0;
        int64_t steps = e->run.global_steps - e->obs.steps_at_print, total = c->scheduler.total_num_steps;
        char loss[48] = "", eta[64] = "", of[32] = "";
        zero__betas_now(e, &b1, &b2);
        if (e->obs.has_loss) snprintf(loss, sizeof loss, ", loss=%.6g", e->obs.loss);
        if (total > 0 && steps > 0 && secs > 0) {
            char d[32];
            snprintf(of, sizeof of, "/%lld", (long long)total);
            zero__fmt_duration(total > e->run.global_steps ? (double)(total - e->run.global_steps) * secs / (double)steps : 0,
                               d, sizeof d);
            snprintf(eta, sizeof eta, ", eta=%s", d);
        }
        zero__log(&c->log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_PROGRESS,
                  "step=%lld%s, skipped=%lld, lr=[%.6g], mom=[(%g, %g)], grad_norm=%.6g, loss_scale=%g%s, "
                  "samples/s=%.4g%s",
                  (long long)e->run.global_steps, of, (long long)e->run.skipped_steps, zero__lr_now(e), b1, b2,
                  in->grad_norm, in->next_loss_scale, loss,
                  secs > 0 ? (double)c->train_batch_size * (double)steps / secs : 0.0, eta);
        e->obs.t_print_ms = now;
        e->obs.steps_at_print = e->run.global_steps;
        if (e->obs.period_skipped > 0) {
            int u = e->obs.period_first_unit;
            zero__log(&c->log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_SKIPPED,
                      "%lld of the last %lld steps skipped for inf/nan gradients (first in unit %d, tensor '%s'); loss "
                      "scale %g -> %g",
                      (long long)e->obs.period_skipped, (long long)c->steps_per_print, u,
                      e->obs.period_first_tensor >= 0 ? zero__tname(e, e->obs.period_first_tensor) : "?", e->obs.period_scale_from,
                      in->next_loss_scale);
        }
        e->obs.period_skipped = 0;
        e->obs.period_first_unit = -1;
    }
    e->obs.has_loss = 0; /* a loss belongs to one step */
}

/* Every micro-batch finished and (stage 3) nothing still fetched. */
/* fn: the call that needs every gradient of the step (zero_step, zero_grad_norm, zero_skip_step), named in the error */
static zero_result zero__step_ready(zero_engine *e, const char *fn) {
    const zero_layout *l = e->plan.layout;
    zero_result r;
    if ((r = zero__not_gathered(e, fn)) != ZERO_OK) return r;
    if (e->run.micro < e->plan.gas) {
        char list[320];
        int n = zero__not_ready_list(e, list, sizeof list);
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY,
                           "%s after %d of %d micro-batches (gradient_accumulation_steps) on rank %d; in micro-batch %d "
                           "%s %s no zero_grad_ready yet on this rank\nHINT: every rank marks every trainable gradient "
                           "ready in each micro-batch (a tensor the loss does not reach too: its gradient is then zero)",
                           fn, e->run.micro, e->plan.gas, e->plan.grank, e->run.micro + 1, list, n == 1 ? "has" : "have");
    }
    if (e->plan.stage == 3) {
        int s;
        for (s = 0; s < e->plan.n_spans; s++)
            if (!e->spans[s].persistent && e->spans[s].refs > 0)
                return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY,
                                   "%s while '%s' is still fetched\nHINT: zero_release every zero_fetch before "
                                   "the step",
                                   fn, zero__tname(e, l->units[l->span_first[s]].first_tensor));
    }
    return ZERO_OK;
}

/* Phase 1: squares and inf/nan flags of the owned chunks per (unit, tensor),
   summed over ranks: the global sum of squares, and exactly where inf/nan
   appeared first (with offload_optimizer computed as each unit's reduction
   ended). */
static zero_result zero__step_norm(zero_engine *e, double *sumsq, int *bad_unit, int *bad_tensor) {
    const zero_layout *l = e->plan.layout;
    int u;
    zero_result r;
    *sumsq = 0;
    *bad_unit = *bad_tensor = -1;
    if ((r = e->strat->norm_stats(e)) != ZERO_OK || (r = zero__stats_flush(e)) != ZERO_OK) return r;
    if ((r = zero__coll_check(e, ZERO__C_NORM, -1)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "zero_step: all_reduce of the norm",
                 zero__all_reduce_in(e, ZERO_GROUP_SHARD, e->buf.stats_dev, e->buf.stats_dev, 2 * (size_t)e->plan.n_pairs,
                                     (zero_dtype)ZERO__DTYPE_F64, ZERO_OP_SUM, ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_step: statistics to the host",
                 zero__copy(e, e->buf.stats_host, e->buf.stats_dev, sizeof(double) * 2 * (size_t)e->plan.n_pairs,
                            ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_step: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    /* cleared for the next step's sums (queued behind the copy just waited) */
    ZERO__TRY_BE(e, "zero_step: clear statistics",
                 e->be.memset0(e->be.ctx, e->buf.stats_dev, sizeof(double) * 2 * (size_t)e->plan.n_pairs, ZERO_STREAM_COMM,
                               &be_err_));
    for (u = 0; u < l->n_units; u++) {
        int k;
        for (k = 0; k <= l->units[u].last_tensor - l->units[u].first_tensor; k++) {
            const double *st = e->buf.stats_host + 2 * (e->plan.pair_first[u] + k);
            *sumsq += st[0];
            if (*bad_unit < 0 && st[1] > 0) {
                *bad_unit = u;
                *bad_tensor = l->units[u].first_tensor + k;
            }
        }
    }
    return ZERO_OK;
}

/* Phase 1 once per step: zero_grad_norm may have run it. */
static zero_result zero__step_norm_once(zero_engine *e) {
    zero_result r;
    if (e->run.norm_ready) return ZERO_OK;
    if ((r = zero__step_norm(e, &e->run.norm_sumsq, &e->run.norm_bad_unit, &e->run.norm_bad_tensor)) != ZERO_OK) return r;
    e->run.norm_ready = 1;
    return ZERO_OK;
}

/* The norm zero_step reports: averaged over micro-batches, unscaled; -1
   when not finite. */
static double zero__norm_of(const zero_engine *e, double sumsq) {
    double norm = sqrt(sumsq) / ((double)e->plan.gas * zero_loss_scaler_scale(&e->run.scaler));
    return isfinite(norm) ? norm : -1;
}

/* The report's counters and log line, then out to the caller. */
static void zero__step_report(zero_engine *e, zero_step_info *in, double t0, zero_step_info *info) {
    in->global_steps = e->run.global_steps;
    in->skipped_steps = e->run.skipped_steps;
    in->next_loss_scale = zero_loss_scaler_scale(&e->run.scaler);
    in->time_ms[ZERO_PHASE_STEP] = zero__now_ms() - t0;
    zero__step_counters(e, in);
    zero__step_log(e, in);
    if (info) *info = *in;
    zero__tl_step(e);
}

/* An overflow skips the step: gradients dropped, no Adam, no schedule step.
   scaler_r is the loss scaler's verdict (an error at the minimum scale). */
static zero_result zero__step_skip(zero_engine *e, zero_step_info *in, double t0, zero_result scaler_r,
                                   zero_step_info *info) {
    e->run.skipped_steps++;
    if (!in->skipped_by_program && e->obs.period_skipped++ == 0) {
        e->obs.period_first_unit = in->overflow_unit;
        e->obs.period_first_tensor = in->overflow_tensor;
    }
    if (e->plan.stage <= 1 && e->plan.gas == 1 && e->buf.grads && !zero__grads_lazy(e))
        ZERO__TRY_BE(e, "zero_step: gradient clear",
                     e->be.memset0(e->be.ctx, e->buf.grads, zero__grads_bytes(e), ZERO_STREAM_COMM, &be_err_));
    if (e->plan.stage == 3) {
        int s;
        for (s = 0; s < e->plan.n_spans; s++) zero__pool_drop(e, s);
    }
    zero__step_reset(e);
    in->applied = 0;
    if (!in->skipped_by_program) in->grad_norm = -1;
    in->clip_coef = 1;
    in->lr = zero__lr_now(e);
    zero__step_report(e, in, t0, info);
    if (scaler_r != ZERO_OK)
        return zero__efail(e, ZERO_MSG_LOSS_SCALE_AT_MIN,
                           "zero_step: inf/nan gradients (unit %d, tensor '%s') with the loss scale already at "
                           "fp16.min_loss_scale %g (DeepSpeed raises here too)\nHINT: the model diverged, or lower "
                           "min_loss_scale",
                           in->overflow_unit, in->overflow_tensor >= 0 ? zero__tname(e, in->overflow_tensor) : "?",
                           e->run.scaler.min_scale);
    return ZERO_OK;
}

/* Phase 4: the strategy's optimizer. */
static zero_result zero__step_optimizer(zero_engine *e, float grad_scale, zero_step_info *in) {
    double t1 = zero__now_ms();
    zero_result r = e->strat->step(e, grad_scale, in);
    in->lr = e->run.step_lr;
    in->time_ms[ZERO_PHASE_OPTIMIZER] = zero__now_ms() - t1;
    return r;
}

/* Phase 5: every rank's parameters up to date (the strategy's `after`:
   stages 1-2 gathered where the step did not, stage 3's persistent spans
   refreshed), stage 3's gathered units dropped. */
static zero_result zero__step_params(zero_engine *e) {
    zero_result r;
    if ((r = e->strat->after(e)) != ZERO_OK) return r;
    if (e->plan.stage == 3) {
        int s;
        for (s = 0; s < e->plan.n_spans; s++)
            if (!e->spans[s].persistent) zero__pool_drop(e, s);
    }
    if (e->plan.stage <= 1 && e->plan.gas == 1 && e->buf.grads && !zero__grads_lazy(e))
        ZERO__TRY_BE(e, "zero_step: gradient clear",
                     e->be.memset0(e->be.ctx, e->buf.grads, zero__grads_bytes(e), ZERO_STREAM_COMM, &be_err_));
    if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->buf.ev_comm)) != ZERO_OK) return r;
    ZERO__TRY_BE(e, "zero_step: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    return ZERO_OK;
}

/* The first half of zero_step and zero_skip_step, every gradient in: the
   norm and the first inf/nan (zero_grad_norm may have found them already),
   then what the strategy's last step left running settled (the delayed
   update's parameters go to the device here, whether or not this step is
   applied). */
static zero_result zero__step_begin(zero_engine *e, zero_step_info *in, double t0) {
    zero_result r;
    e->xfer.phase = ZERO_XFER_STEP;
    memset(in, 0, sizeof *in);
    memcpy(in->time_ms, e->run.t_phase, sizeof in->time_ms);
    if ((r = zero__hsum_drain(e)) != ZERO_OK) return r;
    if ((r = zero__step_norm_once(e)) != ZERO_OK) return r;
    in->time_ms[ZERO_PHASE_NORM] = zero__now_ms() - t0;
    if ((r = e->strat->settle(e)) != ZERO_OK) return r;
    in->loss_scale = zero_loss_scaler_scale(&e->run.scaler);
    in->overflow_unit = e->run.norm_bad_unit;
    in->overflow_tensor = e->run.norm_bad_tensor;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_step(zero_engine *e, zero_step_info *info) {
    zero_step_info in;
    zero_result r;
    int check, overflow;
    double t0 = zero__now_ms(), t1, S, norm, q = 1;
    if ((r = zero__enter(e, "zero_step")) != ZERO_OK) return r;
    zero__tl_call(e, "zero_step", -1);
    /* 1. the global norm and the first inf/nan; the strategy settled */
    if ((r = zero__step_ready(e, "zero_step")) != ZERO_OK || (r = zero__step_begin(e, &in, t0)) != ZERO_OK) return r;

    /* 2. overflow: fp16 always; bf16 with check_grad_overflow on stages 1-2
       (DeepSpeed >= 0.19.5) */
    check = e->plan.cdt == ZERO_DTYPE_FP16 ||
            (e->plan.cdt == ZERO_DTYPE_BF16 && e->cfg.bf16.check_grad_overflow == 1 && (e->plan.stage == 1 || e->plan.stage == 2));
    overflow = check && in.overflow_unit >= 0;
    S = in.loss_scale;
    if (e->obs.period_skipped == 0 && overflow) e->obs.period_scale_from = S;
    r = zero_loss_scaler_update(&e->run.scaler, overflow);
    e->run.global_steps++;
    if (overflow || r != ZERO_OK) return zero__step_skip(e, &in, t0, r, info);

    /* 3. unscale, average over micro-batches, clip (DeepSpeed's formula) */
    norm = sqrt(e->run.norm_sumsq) / ((double)e->plan.gas * S);
    if (e->cfg.gradient_clipping > 0 && isfinite(norm)) q = (norm + 1e-6) / e->cfg.gradient_clipping;
    if (q < 1) q = 1;
    in.grad_norm = isfinite(norm) ? norm : -1;
    in.clip_coef = 1.0 / q;

    /* 4. Adam on the owned chunks, where the strategy runs it */
    if ((r = zero__step_optimizer(e, (float)(1.0 / ((double)e->plan.gas * S * q)), &in)) != ZERO_OK) return r;

    /* 5. the new parameters everywhere */
    t1 = zero__now_ms();
    if ((r = zero__step_params(e)) != ZERO_OK) return r;
    in.time_ms[ZERO_PHASE_GATHER] = zero__now_ms() - t1;

    e->run.applied_steps++;
    e->run.sched_it++;
    zero__step_reset(e);
    in.applied = 1;
    zero__step_report(e, &in, t0, info);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_flush(zero_engine *e) {
    zero_result r;
    if ((r = zero__enter(e, "zero_flush")) != ZERO_OK) return r;
    return e->strat->flush(e);
}

/* The early CPU step fixes a step's hyperparameters and applies its Adam
   during the last micro-batch's backward: after that the program can no
   longer change them, nor skip the step. */
static zero_result zero__step_open(zero_engine *e, const char *fn) {
    if (e->opt.early_armed)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_DECIDED,
                           "%s: the early CPU step already started this step's Adam during the backward\nHINT: call it "
                           "before the last micro-batch's backward, or set cfg.early_cpu_step = 0 before "
                           "zero_engine_create so that the CPU Adam waits for zero_step",
                           fn);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_set_lr(zero_engine *e, double lr) {
    zero_result r;
    if ((r = zero__enter(e, "zero_set_lr")) != ZERO_OK || (r = zero__step_open(e, "zero_set_lr")) != ZERO_OK) return r;
    if (!isfinite(lr))
        return zero__efail(e, ZERO_MSG_BAD_ARG, "zero_set_lr: lr %g is not finite (a value < 0 hands it back to the config)",
                           lr);
    if (lr >= 0 && !(e->run.prog_said & 1) && e->plan.grank == 0) {
        static const char *const sched[] = {"constant lr", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle",
                                            "LRRangeTest"};
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_PROGRAM_LR,
                  "zero_set_lr: the program drives the learning rate from step %lld on (lr %g); the config's lr %g and "
                  "schedule %s no longer apply (zero_set_lr(e, -1) hands the rate back to them)",
                  (long long)e->run.global_steps, lr, e->cfg.optimizer.lr,
                  (unsigned)e->cfg.scheduler.type < ZERO_SCHEDULER_COUNT ? sched[e->cfg.scheduler.type] : "?");
    }
    if (lr >= 0) e->run.prog_said |= 1;
    e->run.prog_lr = lr < 0 ? -1 : lr;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_set_train_batch_size(zero_engine *e, int64_t train_batch_size) {
    zero_result r;
    int64_t per = 0, gas = 0;
    if ((r = zero__enter(e, "zero_set_train_batch_size")) != ZERO_OK) return r;
    if (e->grad.touched || e->run.micro > 0)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY,
                           "zero_set_train_batch_size: micro-batch %d of %d is under way; call it before the first "
                           "zero_grad of a step or after zero_step",
                           e->run.micro + 1, e->plan.gas);
    per = e->cfg.train_micro_batch_size_per_gpu * (int64_t)e->plan.gworld;
    if (train_batch_size > 0 && per > 0 && train_batch_size % per == 0) gas = train_batch_size / per;
    if (gas < 1 || gas > 1000000)
        return zero__efail(e, ZERO_MSG_BAD_ARG,
                           "zero_set_train_batch_size(%lld): not a multiple of micro-batch %lld x %d rank%s = %lld, from 1 "
                           "to 1e6 micro-batches a step",
                           (long long)train_batch_size, (long long)e->cfg.train_micro_batch_size_per_gpu, e->plan.gworld,
                           e->plan.gworld == 1 ? "" : "s", (long long)per);
    if ((gas == 1) != (e->plan.gas == 1))
        return zero__efail(e, ZERO_MSG_ENGINE_CONFIG,
                           "zero_set_train_batch_size(%lld): %lld micro-batch%s a step, where the engine was made for %d: "
                           "one micro-batch and several plan different gradient buffers\nHINT: create the engine with "
                           "gradient_accumulation_steps %s",
                           (long long)train_batch_size, (long long)gas, gas == 1 ? "" : "es", e->plan.gas,
                           gas == 1 ? "1 to step with one" : "> 1 to change the number later");
    e->run.samples_base += (e->run.global_steps - e->run.samples_from) * e->cfg.train_batch_size;
    e->run.samples_from = e->run.global_steps;
    if (e->plan.grank == 0 && gas != e->plan.gas)
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_RESOLVED,
                  "zero_set_train_batch_size: batch %lld = micro %lld x accumulation %lld x %d rank%s from step %lld on "
                  "(was accumulation %d)",
                  (long long)train_batch_size, (long long)e->cfg.train_micro_batch_size_per_gpu, (long long)gas,
                  e->plan.gworld, e->plan.gworld == 1 ? "" : "s", (long long)e->run.global_steps + 1, e->plan.gas);
    e->plan.gas = (int)gas;
    e->cfg.gradient_accumulation_steps = gas;
    e->cfg.train_batch_size = train_batch_size;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_set_betas(zero_engine *e, double beta1, double beta2) {
    zero_result r;
    if ((r = zero__enter(e, "zero_set_betas")) != ZERO_OK || (r = zero__step_open(e, "zero_set_betas")) != ZERO_OK)
        return r;
    if (beta1 < 0) {
        e->run.prog_b1 = e->run.prog_b2 = -1;
        return ZERO_OK;
    }
    if (!(beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
        return zero__efail(e, ZERO_MSG_BAD_ARG, "zero_set_betas: (%g, %g): each must be in [0, 1) (beta1 < 0: the config's)",
                           beta1, beta2);
    if (!(e->run.prog_said & 2) && e->plan.grank == 0)
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_ENGINE_PROGRAM_LR,
                  "zero_set_betas: the program drives Adam's betas from step %lld on ((%g, %g)); the config's (%g, %g) "
                  "no longer apply (zero_set_betas(e, -1, -1) hands them back)",
                  (long long)e->run.global_steps, beta1, beta2, e->cfg.optimizer.beta1, e->cfg.optimizer.beta2);
    e->run.prog_said |= 2;
    e->run.prog_b1 = beta1;
    e->run.prog_b2 = beta2;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_grad_norm(zero_engine *e, double *norm) {
    zero_result r;
    if (norm) *norm = -1;
    if ((r = zero__enter(e, "zero_grad_norm")) != ZERO_OK) return r;
    if (!norm) return zero__efail(e, ZERO_MSG_NULL_ARG, "zero_grad_norm: norm is NULL");
    if ((r = zero__step_ready(e, "zero_grad_norm")) != ZERO_OK || (r = zero__step_norm_once(e)) != ZERO_OK) return r;
    *norm = zero__norm_of(e, e->run.norm_sumsq);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_skip_step(zero_engine *e, zero_step_info *info) {
    zero_step_info in;
    zero_result r;
    double t0 = zero__now_ms();
    if ((r = zero__enter(e, "zero_skip_step")) != ZERO_OK || (r = zero__step_ready(e, "zero_skip_step")) != ZERO_OK ||
        (r = zero__step_open(e, "zero_skip_step")) != ZERO_OK || (r = zero__step_begin(e, &in, t0)) != ZERO_OK)
        return r;
    in.grad_norm = zero__norm_of(e, e->run.norm_sumsq);
    in.skipped_by_program = 1;
    e->run.global_steps++;
    return zero__step_skip(e, &in, t0, ZERO_OK, info);
}

/* ---- >>engine-scalars: zero_all_reduce_scalars ---- */

ZERO__DEF zero_result zero_all_reduce_scalars(zero_engine *e, double *vals, int n, zero_op op) {
    zero_result r;
    int i;
    if ((r = zero__enter(e, "zero_all_reduce_scalars")) != ZERO_OK) return r;
    if (!vals) return zero__efail(e, ZERO_MSG_NULL_ARG, "zero_all_reduce_scalars: vals is NULL");
    if (n < 1 || n > ZERO_SCALARS_MAX)
        return zero__efail(e, ZERO_MSG_BAD_ARG, "zero_all_reduce_scalars: n = %d (need 1 .. %d)", n, ZERO_SCALARS_MAX);
    if (op != ZERO_OP_SUM && op != ZERO_OP_MAX && op != ZERO_OP_MIN && op != ZERO_OP_AVG)
        return zero__efail(e, ZERO_MSG_BAD_ARG, "zero_all_reduce_scalars: op %d is not ZERO_OP_SUM, _MAX, _MIN or _AVG",
                           (int)op);
    memcpy(e->buf.scal_host, vals, sizeof(double) * (size_t)n);
    ZERO__TRY_BE(e, "zero_all_reduce_scalars: to the device",
                 zero__copy(e, e->buf.scal_dev, e->buf.scal_host, sizeof(double) * (size_t)n, ZERO_STREAM_COMM,
                            &be_err_));
    ZERO__TRY_BE(e, "zero_all_reduce_scalars: all_reduce",
                 zero__all_reduce(e, e->buf.scal_dev, e->buf.scal_dev, (size_t)n, (zero_dtype)ZERO__DTYPE_F64,
                                  op == ZERO_OP_AVG ? ZERO_OP_SUM : op, ZERO_STREAM_COMM, &be_err_));
    ZERO__TRY_BE(e, "zero_all_reduce_scalars: to the host",
                 zero__copy(e, e->buf.scal_host, e->buf.scal_dev, sizeof(double) * (size_t)n, ZERO_STREAM_COMM,
                            &be_err_));
    ZERO__TRY_BE(e, "zero_all_reduce_scalars: sync", zero__sync(e, ZERO_STREAM_COMM, &be_err_));
    for (i = 0; i < n; i++) vals[i] = op == ZERO_OP_AVG ? e->buf.scal_host[i] / e->plan.gworld : e->buf.scal_host[i];
    return ZERO_OK;
}

/* ---- >>ckpt-format: checkpoints: the format, checksums, atomic file commit, client state ----

   <dir>/latest names the newest complete checkpoint <dir>/<tag> (tag
   "step<global_steps>"). In it: meta.zck (rank 0: the model's tensors, the
   layout arguments and world size it was saved with, the step counters,
   loss scaler and schedule position) and rank<R>.zck for every saving rank R:
   that rank's shard (zero_layout's shard coordinates: its chunk of every
   unit in unit order, padding zeros included) as three fp32 arrays: values
   (the fp32 master; frozen tensors: their parameters), Adam m and v. Every
   file: a 64-byte header (magic, version, kind, sizes, CRC-32C of the body
   and of the header); rank files carry a CRC-32C per block of
   ZERO_CKPT_BLOCK elements of each array, so a reader checks what it reads
   without reading the rest. When the program put client state
   (zero_client_put), every rank of the job also writes client<R>.zck.

   Writing: each rank writes rank<R>.zck.tmp, fsyncs it, renames it into
   place; the ranks agree that all succeeded (a small all-reduce); rank 0
   then writes meta.zck the same way, fsyncs the directory, and replaces
   `latest` the same way (tmp, fsync, rename, fsync of <dir>). A crash at any
   moment leaves `latest` naming the previous complete checkpoint.

   Reading on any world size: the saving layout is rebuilt from meta.zck
   (zero_layout is deterministic) and checked against the stored unit table;
   every rank reads, for each element range it owns now, the (tensor, offset)
   ranges from the saving ranks' files that hold them (zero_layout_locate). */

#ifndef ZERO_CKPT_BLOCK
#define ZERO_CKPT_BLOCK 65536 /* elements per checksummed block of a rank file's array */
#endif

#define ZERO__CK_MAGIC "ZEROCKPT"

/* The newest format this build reads. A save writes version 1 (what builds
   before client state read) unless it holds client state: then meta.zck and
   the client files are version 2, which an older build refuses rather than
   drop the program's state. An optimizer other than Adam / AdamW makes
   meta.zck version 3 (its type after the client-file count), which builds
   that ran Adam alone refuse rather than load its state as Adam's. */
#define ZERO__CK_VERSION 3u

#define ZERO__CK_HDR 64

enum { ZERO__CK_META = 1, ZERO__CK_RANK = 2, ZERO__CK_CLIENT = 3 };

/* CRC-32C (Castagnoli, reflected 0x82F63B78). Three ways to one value:
   the SSE4.2 crc32 instruction where the CPU has it (x86-64, chosen at run
   time: zero is built without -march), else eight bytes a round through
   eight tables (slicing-by-8); zero__crc32c_ref is the one-table
   definition the tests hold both to. The tables are made once (pthread_once:
   host ranks are threads that save together). A save checksums every byte
   it writes, so this loop sets its speed: about 0.3 GB/s one table a byte,
   several GB/s either fast way (docs/PERF.md "Saving a checkpoint"). */
static uint32_t zero__crc32c_table[8][256];
static int zero__crc32c_hw_ok;
static pthread_once_t zero__crc32c_once = PTHREAD_ONCE_INIT;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#  include <cpuid.h>
#  define ZERO__CRC32C_SSE42 1
static __attribute__((target("sse4.2"))) uint32_t zero__crc32c_sse42(uint32_t c, const unsigned char *p, size_t n) {
    uint64_t c64;
    for (; n && ((uintptr_t)p & 7); n--) c = __builtin_ia32_crc32qi(c, *p++);
    c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
    }
    c = (uint32_t)c64;
    for (; n; n--) c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif
static void zero__crc32c_init(void) {
    uint32_t k, b;
    for (k = 0; k < 256; k++) {
        uint32_t c = k;
        for (b = 0; b < 8; b++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        zero__crc32c_table[0][k] = c;
    }
    for (k = 0; k < 256; k++)
        for (b = 1; b < 8; b++)
            zero__crc32c_table[b][k] = zero__crc32c_table[0][zero__crc32c_table[b - 1][k] & 0xFF] ^
                                       (zero__crc32c_table[b - 1][k] >> 8);
#ifdef ZERO__CRC32C_SSE42
    {
        unsigned a, bx, c, d;
        zero__crc32c_hw_ok = __get_cpuid(1, &a, &bx, &c, &d) && (c >> 20 & 1); /* CPUID.1:ECX.SSE4_2 */
    }
#endif
}
/* the definition: one table, a byte a round (the state inverted before and after, as the other two) */
static ZERO__UNUSED uint32_t zero__crc32c_ref(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    pthread_once(&zero__crc32c_once, zero__crc32c_init);
    crc = ~crc;
    for (; n; n--) crc = zero__crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
/* slicing-by-8: eight bytes a round, in any byte order of the machine */
static uint32_t zero__crc32c_sw(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    uint32_t (*t)[256] = zero__crc32c_table;
    pthread_once(&zero__crc32c_once, zero__crc32c_init);
    crc = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = t[7][lo & 0xFF] ^ t[6][lo >> 8 & 0xFF] ^ t[5][lo >> 16 & 0xFF] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
              t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    }
    for (; n; n--) crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
static uint32_t zero__crc32c(uint32_t crc, const void *data, size_t n) {
    pthread_once(&zero__crc32c_once, zero__crc32c_init);
#ifdef ZERO__CRC32C_SSE42
    if (zero__crc32c_hw_ok) return ~zero__crc32c_sse42(~crc, (const unsigned char *)data, n);
#endif
    return zero__crc32c_sw(crc, data, n);
}

/* little-endian helpers of the file format */
static void zero__ck_put64(unsigned char *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t zero__ck_get64(const unsigned char *p) {
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void zero__ck_put32(unsigned char *p, uint32_t v) {
    int i;
    for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t zero__ck_get32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Header: 0 magic[8], 8 version u32, 12 kind u32, 16 body bytes u64,
   24 body CRC u32, 28 rank u32, 32 world u32, 36 elements-or-0 u64 (rank
   files: shard elements), 44 save id u64 (the same in every file of one
   save: files of different saves never mix), 52..59 zero, 60 header CRC u32
   (of bytes 0..59). */
static void zero__ck_header(unsigned char *h, uint32_t version, uint32_t kind, uint64_t body, uint32_t body_crc, int rank,
                            int world, uint64_t elems, uint64_t id) {
    memset(h, 0, ZERO__CK_HDR);
    memcpy(h, ZERO__CK_MAGIC, 8);
    zero__ck_put32(h + 8, version);
    zero__ck_put32(h + 12, kind);
    zero__ck_put64(h + 16, body);
    zero__ck_put32(h + 24, body_crc);
    zero__ck_put32(h + 28, (uint32_t)rank);
    zero__ck_put32(h + 32, (uint32_t)world);
    zero__ck_put64(h + 36, elems);
    zero__ck_put64(h + 44, id);
    zero__ck_put32(h + 60, zero__crc32c(0, h, 60));
}

/* Checks a header read from `path`; fills err naming the file and the problem. */
static zero_result zero__ck_check_header(const unsigned char *h, const char *path, uint32_t kind, zero_error *err) {
    if (memcmp(h, ZERO__CK_MAGIC, 8) != 0)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: not a zero checkpoint file (bad magic)", path);
    if (zero__ck_get32(h + 60) != zero__crc32c(0, h, 60))
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: header checksum mismatch (flipped bits, or "
                                                                  "not written completely)", path);
    if (zero__ck_get32(h + 8) > ZERO__CK_VERSION)
        return zero__fail(err, ZERO_MSG_CKPT_VERSION, NULL, 0, 0,
                          "%s: format version %u is newer than this build's %u\nHINT: load it with a newer zero", path,
                          zero__ck_get32(h + 8), ZERO__CK_VERSION);
    if (zero__ck_get32(h + 8) < 1 || zero__ck_get32(h + 12) != kind)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: version %u kind %u, expected a %s file", path,
                          zero__ck_get32(h + 8), zero__ck_get32(h + 12),
                          kind == ZERO__CK_META ? "meta" : kind == ZERO__CK_RANK ? "rank" : "client");
    return ZERO_OK;
}

/* write all of buf at the current position; 0 and errno on failure */
static int zero__ck_write_all(int fd, const void *buf, size_t n) {
    const char *p = (const char *)buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        if (w == 0) {
            errno = ENOSPC;
            return 0;
        }
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* read exactly n bytes at offset off; -1 error (errno), 0 short (end of file), 1 ok */
static zero_result zero__ck_fsync_dir(const char *dir, zero_error *err) {
    int fd = zero__open_dir(dir);
    if (fd < 0 || fsync(fd) != 0) {
        int en = errno;
        if (fd >= 0) close(fd);
        return zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "fsync of directory %s: %s", dir, strerror(en));
    }
    close(fd);
    return ZERO_OK;
}

/* A write error's message led by the file it was for (and the temporary
   name written), so "File too large" says where. */
static void zero__err_name_file(zero_error *err, const char *path, const char *tmp) {
    char m[2 * ZERO_PATH_MAX + 300 + sizeof err->msg];
    size_t n;
    if (!err) return;
    snprintf(m, sizeof m, "%s (written as %s): %s", path, tmp, err->msg);
    n = strlen(m) < sizeof err->msg ? strlen(m) : sizeof err->msg - 1;
    memcpy(err->msg, m, n);
    err->msg[n] = 0;
}

/* The directory holding path, fsynced: a rename into it is on disk. */
static zero_result zero__fsync_parent(const char *path, zero_error *err) {
    char dir[ZERO_PATH_MAX + 128];
    const char *slash = strrchr(path, '/');
    if (!slash) return zero__ck_fsync_dir(".", err);
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return zero__ck_fsync_dir(dir, err);
}

/* A fresh temporary file beside path (zero__open_tmp) written by fill(),
   fsynced, renamed onto path (rename replaces whatever entry path is, a link
   planted there included, and never writes through it), the directory
   fsynced. */
typedef int (*zero__ck_fill_fn)(int fd, void *arg, zero_error *err);

static zero_result zero__ck_commit_file(const char *path, zero__ck_fill_fn fill, void *arg, zero_error *err) {
    char tmp[ZERO_PATH_MAX + 128];
    int fd = zero__open_tmp(path, tmp, sizeof tmp, err);
    if (fd < 0) return err->code;
    if (!fill(fd, arg, err)) {
        close(fd);
        unlink(tmp);
        zero__err_name_file(err, path, tmp);
        return err->code ? err->code : ZERO_ERR_IO;
    }
    if (fsync(fd) != 0) {
        int en = errno;
        close(fd);
        unlink(tmp);
        return zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "fsync %s: %s", tmp, strerror(en));
    }
    if (close(fd) != 0) {
        unlink(tmp);
        return zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "close %s: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int en = errno;
        unlink(tmp);
        return zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "rename %s -> %s: %s", tmp, path, strerror(en));
    }
    return zero__fsync_parent(path, err);
}

/* The program's own state (zero_client_put): named byte strings, kept in
   the order first put. On disk each rank's store is client<R>.zck (R the
   rank in the whole job, hybrid groups included): the header (kind 3,
   version 2; rank, world, the save id; at 36 the number of keys), then per
   key: u64 key bytes, the key, u64 value bytes, the value; the body CRC-32C
   covers them. meta.zck (version 2) ends with the number of client files. */
typedef struct zero__client_entry {
    char key[ZERO_CLIENT_KEY_MAX + 1];
    size_t bytes;
    unsigned char *data;
} zero__client_entry;

struct zero__client {
    int n, cap;
    size_t bytes; /* of every value */
    zero__client_entry *ent;
};

static void zero__client_free(zero__client *c) {
    int i;
    if (!c) return;
    for (i = 0; i < c->n; i++) ZERO_FREE(c->ent[i].data);
    ZERO_FREE(c->ent);
    ZERO_FREE(c);
}

static int zero__client_find(const zero__client *c, const char *key, size_t len) {
    int i;
    for (i = 0; c && i < c->n; i++)
        if (strlen(c->ent[i].key) == len && memcmp(c->ent[i].key, key, len) == 0) return i;
    return -1;
}

/* NULL when the key is usable, else why not (for the caller's message) */
static const char *zero__client_key_bad(const char *key, size_t len) {
    size_t i;
    if (len == 0) return "is empty";
    if (len > ZERO_CLIENT_KEY_MAX) return "is longer than ZERO_CLIENT_KEY_MAX (63) bytes";
    for (i = 0; i < len; i++)
        if ((unsigned char)key[i] <= 0x20 || (unsigned char)key[i] >= 0x7F) return "has a byte that is not printable ASCII (or a space)";
    return NULL;
}

/* Sets key to a copy of the bytes (replacing its value) or, data NULL, removes it; the store is unchanged on failure.
   NULL, or why not with *item the message (key, limits, memory). */
static const char *zero__client_set(zero__client **cp, const char *key, size_t len, const void *data, size_t bytes,
                                    zero_msg *item) {
    zero__client *c = *cp;
    int i = zero__client_find(c, key, len);
    unsigned char *copy;
    *item = ZERO_MSG_CLIENT_SIZE;
    if (!data) {
        if (i >= 0) {
            c->bytes -= c->ent[i].bytes;
            ZERO_FREE(c->ent[i].data);
            memmove(c->ent + i, c->ent + i + 1, sizeof *c->ent * (size_t)(c->n - i - 1));
            c->n--;
        }
        return NULL;
    }
    if (bytes > ZERO_CLIENT_MAX_BYTES - (c ? c->bytes - (i >= 0 ? c->ent[i].bytes : 0) : 0))
        return "would take the rank's client state past ZERO_CLIENT_MAX_BYTES";
    if (i < 0 && c && c->n >= ZERO_CLIENT_MAX_KEYS) return "would be key number ZERO_CLIENT_MAX_KEYS + 1";
    *item = ZERO_MSG_OUT_OF_MEMORY;
    if (!c) {
        if (!(c = (zero__client *)ZERO_MALLOC(sizeof *c))) return "out of memory";
        memset(c, 0, sizeof *c);
        *cp = c;
    }
    if (i < 0 && c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        zero__client_entry *g = (zero__client_entry *)ZERO_REALLOC(c->ent, sizeof *g * (size_t)cap);
        if (!g) return "out of memory";
        c->ent = g;
        c->cap = cap;
    }
    if (!(copy = (unsigned char *)ZERO_MALLOC(bytes))) return "out of memory";
    memcpy(copy, data, bytes);
    if (i < 0) {
        i = c->n++;
        memcpy(c->ent[i].key, key, len);
        c->ent[i].key[len] = 0;
    } else {
        c->bytes -= c->ent[i].bytes;
        ZERO_FREE(c->ent[i].data);
    }
    c->ent[i].data = copy;
    c->ent[i].bytes = bytes;
    c->bytes += bytes;
    return NULL;
}

/* The body of a client file into b (NULL: its size). */
static size_t zero__client_body(const zero__client *c, unsigned char *b) {
    size_t n = 0;
    int i;
    for (i = 0; c && i < c->n; i++) {
        size_t kl = strlen(c->ent[i].key);
        if (b) {
            zero__ck_put64(b + n, kl);
            memcpy(b + n + 8, c->ent[i].key, kl);
            zero__ck_put64(b + n + 8 + kl, c->ent[i].bytes);
            memcpy(b + n + 16 + kl, c->ent[i].data, c->ent[i].bytes);
        }
        n += 16 + kl + c->ent[i].bytes;
    }
    return n;
}

/* A whole client file (header and body, any bytes: the fuzz target calls it) into a new store (*out NULL for one
   of no keys): the header, the body's size and checksum, every record (key rules, sizes within the limits, no key
   twice, nothing after the last). Its rank, world and save id are the caller's to check. */
static zero_result zero__client_read(const unsigned char *fb, size_t fn, const char *path, zero__client **out,
                                     zero_error *err) {
    const unsigned char *b = fb + ZERO__CK_HDR;
    size_t n, p = 0;
    uint64_t count, k;
    zero__client *c = NULL;
    zero_result r;
    *out = NULL;
    if (fn < ZERO__CK_HDR)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %zu bytes, shorter than a header", path, fn);
    if ((r = zero__ck_check_header(fb, path, ZERO__CK_CLIENT, err)) != ZERO_OK) return r;
    n = fn - ZERO__CK_HDR;
    if (zero__ck_get64(fb + 16) != n || zero__crc32c(0, b, n) != zero__ck_get32(fb + 24))
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %s", path,
                          zero__ck_get64(fb + 16) != n ? "truncated or extended" : "body checksum mismatch");
    count = zero__ck_get64(fb + 36);
    if (count > ZERO_CLIENT_MAX_KEYS)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %llu keys, more than ZERO_CLIENT_MAX_KEYS (%d)", path,
                          (unsigned long long)count, ZERO_CLIENT_MAX_KEYS);
    for (k = 0; k < count; k++) {
        uint64_t kl, vl;
        const char *why;
        zero_msg item;
        if (n - p < 8 || (kl = zero__ck_get64(b + p)) > n - p - 8) goto trunc;
        if ((why = zero__client_key_bad((const char *)b + p + 8, (size_t)kl)) != NULL) {
            zero__client_free(c);
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: key %llu %s", path, (unsigned long long)k, why);
        }
        if (zero__client_find(c, (const char *)b + p + 8, (size_t)kl) >= 0) {
            zero__client_free(c);
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: key '%.*s' twice", path, (int)kl, b + p + 8);
        }
        p += 8 + (size_t)kl;
        if (n - p < 8 || (vl = zero__ck_get64(b + p)) > n - p - 8) goto trunc;
        if (vl == 0 || (why = zero__client_set(&c, (const char *)b + p - kl, (size_t)kl, b + p + 8, (size_t)vl, &item))) {
            zero__client_free(c);
            return zero__fail(err, vl ? item : ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: key '%.*s': a value of %llu bytes%s%s",
                              path, (int)kl, b + p - kl, (unsigned long long)vl, vl ? " " : "", vl ? why : "");
        }
        p += 8 + (size_t)vl;
    }
    if (p != n) {
        zero__client_free(c);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %zu bytes after the last of %llu keys", path, n - p,
                          (unsigned long long)count);
    }
    *out = c;
    return ZERO_OK;
trunc:
    zero__client_free(c);
    return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: client state ends early (key %llu of %llu, byte %zu of %zu)",
                      path, (unsigned long long)k, (unsigned long long)count, p, n);
}

ZERO__DEF zero_result zero_client_put(zero_engine *e, const char *key, const void *data, size_t size_bytes) {
    zero_result r;
    const char *why;
    zero_msg item;
    size_t len;
    if ((r = zero__enter(e, "zero_client_put")) != ZERO_OK) return r;
    if (!key) return zero__efail(e, ZERO_MSG_NULL_ARG, "zero_client_put: key is NULL");
    len = strlen(key);
    if ((why = zero__client_key_bad(key, len)) != NULL)
        return zero__efail(e, ZERO_MSG_CLIENT_KEY, "zero_client_put: key '%.80s'%s %s", key, len > 80 ? "..." : "", why);
    if (!data && size_bytes)
        return zero__efail(e, ZERO_MSG_NULL_ARG,
                           "zero_client_put: data is NULL (key '%s', size_bytes %zu)\nHINT: data NULL with size_bytes "
                           "0 removes the key", key, size_bytes);
    if (data && !size_bytes)
        return zero__efail(e, ZERO_MSG_CLIENT_SIZE,
                           "zero_client_put('%s'): size_bytes is 0: a value has 1 byte or more\nHINT: data NULL with "
                           "size_bytes 0 removes the key", key);
    if ((why = zero__client_set(&e->client, key, len, data, size_bytes, &item)) != NULL)
        return zero__efail(e, item,
                           "zero_client_put('%s'): %zu bytes %s (this rank holds %d keys, %zu bytes; at most %d keys, %zu "
                           "bytes)\nHINT: keep large state (a shuffled index, a replay buffer) in a file of your own "
                           "beside the checkpoint and put its name here",
                           key, size_bytes, why, e->client ? e->client->n : 0, e->client ? e->client->bytes : 0,
                           ZERO_CLIENT_MAX_KEYS, (size_t)ZERO_CLIENT_MAX_BYTES);
    return ZERO_OK;
}

ZERO__DEF zero_result zero_client_get(zero_engine *e, const char *key, void *out, size_t size_bytes, size_t *found_bytes) {
    zero_result r;
    int i;
    if (found_bytes) *found_bytes = 0;
    if ((r = zero__enter(e, "zero_client_get")) != ZERO_OK) return r;
    if (!key || !out) return zero__efail(e, ZERO_MSG_NULL_ARG, "zero_client_get: %s is NULL", !key ? "key" : "out");
    if ((i = zero__client_find(e->client, key, strlen(key))) < 0) {
        char list[300];
        size_t at = 0;
        int k;
        if (found_bytes) return ZERO_OK;
        list[0] = 0;
        for (k = 0; e->client && k < e->client->n && at + 70 < sizeof list; k++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s'%s'", k ? ", " : "", e->client->ent[k].key);
        if (e->client && k < e->client->n) snprintf(list + at, sizeof list - at, " and %d more", e->client->n - k);
        return zero__efail(e, ZERO_MSG_CLIENT_MISSING,
                           "zero_client_get('%.80s'): rank %d's client state has no such key (%s%s)\nHINT: zero_load "
                           "replaces the store with the checkpoint's: one saved before zero_client_put('%.80s') has "
                           "none; pass found_bytes to treat the key as optional",
                           key, e->plan.grank, list[0] ? "its keys: " : "it is empty", list, key);
    }
    if (found_bytes) *found_bytes = e->client->ent[i].bytes;
    if (e->client->ent[i].bytes != size_bytes)
        return zero__efail(e, ZERO_MSG_CLIENT_SIZE,
                           "zero_client_get('%s'): the value is %zu bytes, the caller asked for %zu; out is unchanged\n"
                           "HINT: the program that saved it stored another type or layout under this key",
                           key, e->client->ent[i].bytes, size_bytes);
    memcpy(out, e->client->ent[i].data, size_bytes);
    return ZERO_OK;
}

ZERO__DEF int zero_client_count(const zero_engine *e) {
    return zero__engine_live(e) && e->client ? e->client->n : 0;
}

ZERO__DEF const char *zero_client_key(const zero_engine *e, int i, size_t *size_bytes) {
    if (size_bytes) *size_bytes = 0;
    if (!zero__engine_live(e) || !e->client || i < 0 || i >= e->client->n) return NULL;
    if (size_bytes) *size_bytes = e->client->ent[i].bytes;
    return e->client->ent[i].key;
}

/* ---- >>ckpt-save: zero_save: what a rank holds of a unit, rank files, metadata, latest ---- */


typedef struct zero__ck_rank_writer {
    zero_engine *e;
    float *buf;          /* one unit chunk */
    void *tile, *stage_buf;
    uint32_t *crc;       /* 3 x blocks */
    int64_t blocks;
    uint64_t id;
} zero__ck_rank_writer;

/* rank file: header | values | m | v (shard elements each) | block CRCs */
static int zero__ck_fill_rank(int fd, void *arg, zero_error *err) {
    zero__ck_rank_writer *w = (zero__ck_rank_writer *)arg;
    zero_engine *e = w->e;
    const zero_layout *l = e->plan.layout;
    int64_t S = l->shard_numel;
    unsigned char h[ZERO__CK_HDR];
    int what, u;
    uint32_t tcrc;
    memset(h, 0, sizeof h);
    if (!zero__ck_write_all(fd, h, sizeof h)) goto io;
    for (what = 0; what < 3; what++) {
        int64_t pos = 0; /* element of the array; block crc accumulates across units */
        uint32_t crc = 0;
        for (u = 0; u < l->n_units; u++) {
            const zero_unit *x = &l->units[u];
            int64_t i = 0;
            const float *vals;
            zero__state_io io;
            io.stage = w->stage_buf;
            io.tile = w->tile;
            if (zero__state_get(e, u, what, (int64_t)e->plan.rank * x->chunk, x->chunk, w->buf, &vals, &io, err) != ZERO_OK)
                return 0;
            while (i < x->chunk) { /* split the unit at block boundaries */
                int64_t room = ZERO_CKPT_BLOCK - pos % ZERO_CKPT_BLOCK, n = zero__min_i64(room, x->chunk - i);
                crc = zero__crc32c(crc, vals + i, (size_t)n * 4);
                i += n;
                pos += n;
                if (pos % ZERO_CKPT_BLOCK == 0 || pos == S) {
                    w->crc[what * w->blocks + (pos - 1) / ZERO_CKPT_BLOCK] = crc;
                    crc = 0;
                }
            }
            if (!zero__ck_write_all(fd, vals, (size_t)x->chunk * 4)) goto io;
        }
    }
    {
        unsigned char *t = (unsigned char *)ZERO_MALLOC((size_t)(3 * w->blocks) * 4 + 1);
        int64_t k;
        if (!t) {
            zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "checkpoint: CRC table");
            return 0;
        }
        for (k = 0; k < 3 * w->blocks; k++) zero__ck_put32(t + 4 * k, w->crc[k]);
        tcrc = zero__crc32c(0, t, (size_t)(3 * w->blocks) * 4);
        if (!zero__ck_write_all(fd, t, (size_t)(3 * w->blocks) * 4)) {
            ZERO_FREE(t);
            goto io;
        }
        ZERO_FREE(t);
    }
    /* the body CRC covers the block table (each block has its own) */
    zero__ck_header(h, 1, ZERO__CK_RANK, (uint64_t)(3 * S * 4 + 3 * w->blocks * 4), tcrc, e->plan.rank, e->plan.world,
                    (uint64_t)S, w->id);
    if (lseek(fd, 0, SEEK_SET) == (off_t)-1 || !zero__ck_write_all(fd, h, sizeof h)) goto io;
    return 1;
io:
    zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "checkpoint rank file: %s%s", strerror(errno),
               errno == ENOSPC ? " (disk full)" : "");
    return 0;
}

/* meta body: counters, scaler, layout args, tensors, unit table digest */
typedef struct zero__ck_meta_writer {
    zero_engine *e;
    uint64_t id;
    int64_t client_files; /* 0: none (a version-1 file) */
} zero__ck_meta_writer;

/* meta.zck's version 3: the optimizer's type recorded */
static int zero__ck_meta_v3(const zero_engine *e) { return e->cfg.optimizer.type > ZERO_OPTIMIZER_ADAMW; }

static size_t zero__ck_meta_body(const zero_engine *e, int64_t client_files, unsigned char *b) {
    const zero_layout *l = e->plan.layout;
    const zero_loss_scaler *s = &e->run.scaler;
    size_t n = 0;
    int t;
    uint32_t udig = 0;
    int u;
#define ZERO__W64(v) do { if (b) zero__ck_put64(b + n, (uint64_t)(v)); n += 8; } while (0)
#define ZERO__WD(v) do { double d_ = (v); uint64_t q_; memcpy(&q_, &d_, 8); ZERO__W64(q_); } while (0)
    ZERO__W64(e->plan.world);
    ZERO__W64(e->plan.stage);
    ZERO__W64(e->plan.cdt);
    ZERO__W64(e->plan.n_tensors);
    ZERO__W64(e->cfg.zero_optimization.reduce_bucket_size);
    ZERO__W64(e->plan.stage == 3 ? e->cfg.zero_optimization.stage3_param_persistence_threshold : 0);
    ZERO__W64(e->plan.stage == 3 ? e->cfg.zero_optimization.stage3_model_persistence_threshold : 0);
    ZERO__W64(e->run.global_steps);
    ZERO__W64(e->run.skipped_steps);
    ZERO__W64(e->run.applied_steps);
    ZERO__W64(e->run.sched_it);
    ZERO__WD((double)e->run.beta1_t);
    ZERO__WD((double)e->run.beta2_t);
    ZERO__WD(e->run.last_b1);
    ZERO__WD(e->run.last_b2);
    ZERO__WD(s->cur_scale);
    ZERO__W64(s->cur_hysteresis);
    ZERO__W64(s->cur_iter);
    ZERO__W64(s->last_overflow_iter);
    for (u = 0; u < l->n_units; u++) {
        int64_t q[4];
        q[0] = l->units[u].offset, q[1] = l->units[u].numel, q[2] = l->units[u].chunk, q[3] = l->units[u].first_tensor;
        udig = zero__crc32c(udig, q, sizeof q);
    }
    ZERO__W64(l->n_units);
    ZERO__W64(udig);
    for (t = 0; t < e->plan.n_tensors; t++) {
        size_t len = strlen(l->names[t]);
        int k;
        ZERO__W64(l->numel[t]);
        ZERO__W64(e->plan.tflags[t]);
        ZERO__W64((int64_t)e->plan.tgroup[t]);
        ZERO__W64(e->plan.tndim[t]);
        for (k = 0; k < e->plan.tndim[t]; k++) ZERO__W64(e->plan.tshape[(size_t)t * ZERO_MAX_DIMS + (size_t)k]);
        ZERO__W64(len);
        if (b) memcpy(b + n, l->names[t], len);
        n += len;
    }
    if (client_files > 0 || zero__ck_meta_v3(e)) ZERO__W64(client_files);
    if (zero__ck_meta_v3(e)) ZERO__W64(e->cfg.optimizer.type);
#undef ZERO__W64
#undef ZERO__WD
    return n;
}

static int zero__ck_fill_meta(int fd, void *arg, zero_error *err) {
    zero_engine *e = ((zero__ck_meta_writer *)arg)->e;
    uint64_t id = ((zero__ck_meta_writer *)arg)->id;
    int64_t cf = ((zero__ck_meta_writer *)arg)->client_files;
    size_t n = zero__ck_meta_body(e, cf, NULL);
    unsigned char *b = (unsigned char *)ZERO_MALLOC(ZERO__CK_HDR + n);
    int ok;
    if (!b) {
        zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "checkpoint: metadata");
        return 0;
    }
    zero__ck_meta_body(e, cf, b + ZERO__CK_HDR);
    zero__ck_header(b, zero__ck_meta_v3(e) ? 3 : cf > 0 ? 2 : 1, ZERO__CK_META, n, zero__crc32c(0, b + ZERO__CK_HDR, n), 0, e->plan.world, 0, id);
    ok = zero__ck_write_all(fd, b, ZERO__CK_HDR + n);
    ZERO_FREE(b);
    if (!ok)
        zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "checkpoint metadata: %s%s", strerror(errno),
                   errno == ENOSPC ? " (disk full)" : "");
    return ok;
}

/* client<R>.zck: this rank's store (zero__client_body) */
static int zero__ck_fill_client(int fd, void *arg, zero_error *err) {
    const zero__ck_meta_writer *w = (const zero__ck_meta_writer *)arg;
    const zero_engine *e = w->e;
    size_t n = zero__client_body(e->client, NULL);
    unsigned char *b = (unsigned char *)ZERO_MALLOC(ZERO__CK_HDR + n + 1);
    int ok;
    if (!b) {
        zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "checkpoint: client state");
        return 0;
    }
    zero__client_body(e->client, b + ZERO__CK_HDR);
    zero__ck_header(b, 2, ZERO__CK_CLIENT, n, zero__crc32c(0, b + ZERO__CK_HDR, n), e->plan.grank, (int)w->client_files,
                    (uint64_t)(e->client ? e->client->n : 0), w->id);
    ok = zero__ck_write_all(fd, b, ZERO__CK_HDR + n);
    ZERO_FREE(b);
    if (!ok)
        zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "checkpoint client state: %s%s", strerror(errno),
                   errno == ENOSPC ? " (disk full)" : "");
    return ok;
}

typedef struct zero__ck_text {
    const char *text;
} zero__ck_text;

static int zero__ck_fill_text(int fd, void *arg, zero_error *err) {
    const char *t = ((zero__ck_text *)arg)->text;
    if (zero__ck_write_all(fd, t, strlen(t))) return 1;
    zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "checkpoint pointer: %s", strerror(errno));
    return 0;
}


/* scratch for one unit chunk: fp32 buffer, a tile, a pinned staging */
static zero_result zero__ck_scratch(zero_engine *e, float **buf, void **tile, void **stage_buf) {
    int64_t maxc = 0;
    int u;
    zero_error be;
    for (u = 0; u < e->plan.n_units; u++) maxc = zero__max_i64(maxc, e->plan.layout->units[u].chunk);
    *buf = (float *)ZERO_MALLOC((size_t)maxc * 4 + 4);
    *tile = *stage_buf = NULL;
    if (!*buf) return zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "checkpoint: staging");
    zero__ok(&be);
    if (e->be.alloc(e->be.ctx, ZERO_MEM_PINNED, (size_t)maxc * 12 + 64, tile, &be) != ZERO_OK ||
        e->be.alloc(e->be.ctx, ZERO_MEM_PINNED, (size_t)maxc * 4 + 64, stage_buf, &be) != ZERO_OK) {
        if (*tile) e->be.free(e->be.ctx, ZERO_MEM_PINNED, *tile);
        ZERO_FREE(*buf);
        *tile = NULL;
        return zero__ebackend(e, &be, "checkpoint: staging");
    }
    return ZERO_OK;
}

static void zero__ck_scratch_free(zero_engine *e, float *buf, void *tile, void *stage_buf) {
    ZERO_FREE(buf);
    if (tile) e->be.free(e->be.ctx, ZERO_MEM_PINNED, tile);
    if (stage_buf) e->be.free(e->be.ctx, ZERO_MEM_PINNED, stage_buf);
}

static zero_result zero__ck_between_steps(zero_engine *e, const char *fn) {
    zero_result r;
    if (e->grad.touched || e->run.micro > 0)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY, "%s: gradients of a step are pending; call it before the "
                                                          "first zero_grad or after zero_step", fn);
    if ((r = e->strat->quiesce(e)) != ZERO_OK) return r; /* a delayed or overlapped Adam writes the state */
    if (e->offload_param.pstore) { /* the step's parameter writes behind: complete before the files are read or rewritten */
        zero_error first;
        zero__ok(&first);
        zero__pbuf_drain(e, &first);
        if (first.code != ZERO_OK) return zero__ebackend(e, &first, fn);
    }
    return ZERO_OK;
}

/* The entry of zero_save / zero_load / zero_export_safetensors: a live
   engine, a usable path, between steps; the error also into *err. */
static zero_result zero__ck_enter(zero_engine *e, const char *fn, const char *arg, const char *path, zero_error *err) {
    zero_result r;
    if (!e) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "%s: e is NULL (no engine: zero_engine_create failed or "
                                                                "was not called)", fn);
    if ((r = zero__enter(e, fn)) != ZERO_OK) {
        if (err) *err = *zero_engine_error(e);
        return r;
    }
    if (!path)
        r = zero__efail(e, ZERO_MSG_NULL_ARG, "%s: %s is NULL", fn, arg);
    else if (!path[0] || strlen(path) > ZERO_PATH_MAX - 40)
        r = zero__efail(e, ZERO_MSG_BAD_ARG, "%s: %s %s", fn, arg, !path[0] ? "is empty" : "is too long");
    else
        r = zero__ck_between_steps(e, fn);
    if (r != ZERO_OK && err) *err = e->err;
    return r;
}

ZERO__DEF zero_result zero_save(zero_engine *e, const char *dir, zero_error *err) {
    char tag[64], tdir[ZERO_PATH_MAX], path[ZERO_PATH_MAX + 64];
    zero__ck_rank_writer w;
    zero_result r;
    zero_error fe;
    double bad = 0, t0 = zero__now_ms();
    uint64_t w_id = 0;
    int64_t client_files = 0;
    zero__ok(&fe);
    if ((r = zero__ck_enter(e, "zero_save", "dir", dir, err)) != ZERO_OK) return r;
    /* rank 0 picks a directory name no save used ("step<N>", else
       "step<N>.<k>": a checkpoint is never overwritten) and an id for this
       save's files; the others learn both from the agreement sums */
    {
        double k = 0, id = 0, sum;
        if (e->plan.grank == 0) {
            struct timespec ts;
            if (mkdir(dir, 0755) != 0 && errno != EEXIST) k = -1;
            /* claimed by mkdir, which one caller alone can win: a second writer in the directory (another job,
               another engine) takes the next name, and nothing there (a link planted as step<N>) is entered */
            for (; k >= 0 && k < 1e6; k++) {
                if (k == 0) snprintf(tdir, sizeof tdir, "%s/step%lld", dir, (long long)e->run.global_steps);
                else snprintf(tdir, sizeof tdir, "%s/step%lld.%d", dir, (long long)e->run.global_steps, (int)k);
                if (mkdir(tdir, 0755) == 0) break;
                if (errno != EEXIST) {
                    k = -1;
                    break;
                }
            }
            if (k >= 1e6) k = -1;
            timespec_get(&ts, TIME_UTC);
            id = (double)(((uint64_t)ts.tv_sec * 1000003u + (uint64_t)ts.tv_nsec + (uint64_t)e->run.global_steps * 7919u) &
                          (((uint64_t)1 << 52) - 1));
        }
        if ((r = zero__agree(e, k, &sum)) != ZERO_OK) {
            if (err) *err = e->err;
            return r;
        }
        k = sum;
        if ((r = zero__agree(e, id, &sum)) != ZERO_OK) {
            if (err) *err = e->err;
            return r;
        }
        w_id = (uint64_t)sum;
        /* client state: every rank writes its store when any rank has one */
        if ((r = zero__agree(e, e->client ? (double)e->client->n : 0, &sum)) != ZERO_OK) {
            if (err) *err = e->err;
            return r;
        }
        client_files = sum > 0 ? e->plan.gworld : 0;
        if (k < 0) {
            r = zero__efail(e, ZERO_MSG_FILE_OPEN, "zero_save: cannot create %s (see rank 0's error)", dir);
            if (err) *err = e->err;
            return r;
        }
        if (k == 0) snprintf(tag, sizeof tag, "step%lld", (long long)e->run.global_steps);
        else snprintf(tag, sizeof tag, "step%lld.%d", (long long)e->run.global_steps, (int)k);
    }
    snprintf(tdir, sizeof tdir, "%s/%s", dir, tag);
    /* every rank: the directory (EEXIST: another rank made it) */
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mkdir(tdir, 0755) != 0 && errno != EEXIST)) {
        zero__fail(&fe, ZERO_MSG_FILE_OPEN, NULL, 0, 0, "zero_save: cannot create %s: %s", tdir, strerror(errno));
        bad = 1;
    }
    memset(&w, 0, sizeof w);
    w.e = e;
    w.id = w_id;
    w.blocks = (e->plan.layout->shard_numel + ZERO_CKPT_BLOCK - 1) / ZERO_CKPT_BLOCK;
    /* mics_shard_size: the first group writes the files (the other groups hold
       the same shards), so the checkpoint is a flat one of the group's size */
    if (!bad && e->plan.grank == e->plan.rank) {
        w.crc = (uint32_t *)ZERO_MALLOC(sizeof(uint32_t) * (size_t)(3 * w.blocks + 1));
        if (!w.crc || zero__ck_scratch(e, &w.buf, &w.tile, &w.stage_buf) != ZERO_OK) {
            ZERO_FREE(w.crc);
            if (err) *err = e->err;
            return e->err.code ? e->err.code : ZERO_ERR_OUT_OF_MEMORY;
        }
        snprintf(path, sizeof path, "%s/rank%05d.zck", tdir, e->plan.rank);
        if (zero__ck_commit_file(path, zero__ck_fill_rank, &w, &fe) != ZERO_OK) bad = 1;
        zero__ck_scratch_free(e, w.buf, w.tile, w.stage_buf);
        ZERO_FREE(w.crc);
    }
    if (!bad && client_files > 0) { /* every rank of the job, hybrid groups included: each rank's state is its own */
        zero__ck_meta_writer cw;
        cw.e = e;
        cw.id = w_id;
        cw.client_files = client_files;
        snprintf(path, sizeof path, "%s/client%05d.zck", tdir, e->plan.grank);
        if (zero__ck_commit_file(path, zero__ck_fill_client, &cw, &fe) != ZERO_OK) bad = 1;
    }
    /* all ranks' files in place before anyone commits */
    {
        double sum = 0;
        if ((r = zero__agree(e, bad, &sum)) != ZERO_OK) {
            if (err) *err = e->err;
            return r;
        }
        if (bad) {
            r = zero__efail(e, fe.item, "zero_save: %s (the previous checkpoint stays the latest)", fe.msg);
            if (err) *err = e->err;
            return r;
        }
        if (sum > 0) {
            r = zero__efail(e, ZERO_MSG_FILE_WRITE, "zero_save: %g rank(s) could not write their file into %s (see "
                                                    "their errors); the previous checkpoint stays the latest", sum, tdir);
            if (err) *err = e->err;
            return r;
        }
    }
    if (e->plan.grank == 0) {
        zero__ck_meta_writer mw;
        zero__ck_text lt;
        char latest[ZERO_PATH_MAX + 16];
        mw.e = e;
        mw.id = w_id;
        mw.client_files = client_files;
        lt.text = tag;
        snprintf(path, sizeof path, "%s/meta.zck", tdir);
        snprintf(latest, sizeof latest, "%s/latest", dir);
        /* (each commit fsyncs its directory: step<N> with every rank file and meta.zck, then dir with latest) */
        if (zero__ck_commit_file(path, zero__ck_fill_meta, &mw, &fe) != ZERO_OK ||
            zero__ck_commit_file(latest, zero__ck_fill_text, &lt, &fe) != ZERO_OK)
            bad = 1;
    }
    {   /* every rank learns whether rank 0 committed */
        double sum = 0;
        if ((r = zero__agree(e, bad, &sum)) != ZERO_OK) {
            if (err) *err = e->err;
            return r;
        }
        if (sum > 0) {
            r = zero__efail(e, e->plan.grank == 0 ? fe.item : ZERO_MSG_FILE_WRITE, "zero_save: %s", e->plan.grank == 0 ? fe.msg
                            : "rank 0 could not write the metadata or the latest pointer (see its error)");
            if (err) *err = e->err;
            return r;
        }
    }
    if (e->plan.grank == 0)
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_CKPT_DONE,
                  "zero_save: step %lld saved in %s (%d rank files of %.1f MiB, %d client key%s, %.2f s)",
                  (long long)e->run.global_steps, tdir, e->plan.world, (double)e->plan.layout->shard_numel * 12.0 / 1048576.0,
                  zero_client_count(e), zero_client_count(e) == 1 ? "" : "s", (zero__now_ms() - t0) / 1000.0);
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>ckpt-load: zero_load on any world size: metadata, the saving layout, range reads, then apply ---- */

typedef struct zero__ck_meta {
    int64_t world, stage, dtype, n_tensors, bucket, persist, model_persist;
    int64_t global_steps, skipped_steps, applied_steps, sched_it;
    double beta1_t, beta2_t, last_b1, last_b2, cur_scale;
    int64_t cur_hysteresis, cur_iter, last_overflow_iter, n_units;
    int64_t client_files; /* version 2: the ranks whose client<R>.zck the save wrote; 0: none */
    int64_t optimizer;    /* version 3: zero_optimizer_type; before: Adam (or AdamW: the same state) */
    uint32_t udig;
    zero_tensor *tensors; /* names point into names */
    char *names;
} zero__ck_meta;

static void zero__ck_meta_free(zero__ck_meta *m) {
    ZERO_FREE(m->tensors);
    ZERO_FREE(m->names);
    m->tensors = NULL;
    m->names = NULL;
}

/* Parse and check a meta body of format `version` (any bytes: a fuzz target calls it). */
static zero_result zero__ck_parse_meta(const unsigned char *b, size_t n, uint32_t version, const char *path, zero__ck_meta *m,
                                       zero_error *err) {
    size_t p = 0;
    int64_t t;
    size_t names_len = 0;
    memset(m, 0, sizeof *m);
#define ZERO__R64(dst)                                                                                       \
    do {                                                                                                     \
        if (n - p < 8) goto trunc;                                                                           \
        dst = (int64_t)zero__ck_get64(b + p);                                                                \
        p += 8;                                                                                              \
    } while (0)
#define ZERO__RD(dst)                                                                                        \
    do {                                                                                                     \
        uint64_t q_;                                                                                         \
        if (n - p < 8) goto trunc;                                                                           \
        q_ = zero__ck_get64(b + p);                                                                          \
        memcpy(&dst, &q_, 8);                                                                                \
        p += 8;                                                                                              \
    } while (0)
    ZERO__R64(m->world);
    ZERO__R64(m->stage);
    ZERO__R64(m->dtype);
    ZERO__R64(m->n_tensors);
    ZERO__R64(m->bucket);
    ZERO__R64(m->persist);
    ZERO__R64(m->model_persist);
    ZERO__R64(m->global_steps);
    ZERO__R64(m->skipped_steps);
    ZERO__R64(m->applied_steps);
    ZERO__R64(m->sched_it);
    ZERO__RD(m->beta1_t);
    ZERO__RD(m->beta2_t);
    ZERO__RD(m->last_b1);
    ZERO__RD(m->last_b2);
    ZERO__RD(m->cur_scale);
    ZERO__R64(m->cur_hysteresis);
    ZERO__R64(m->cur_iter);
    ZERO__R64(m->last_overflow_iter);
    ZERO__R64(m->n_units);
    {
        int64_t d;
        ZERO__R64(d);
        m->udig = (uint32_t)d;
    }
    if (m->world < 1 || m->world > (1 << 20) || m->stage < 0 || m->stage > 3 || m->dtype < 0 ||
        m->dtype >= ZERO_DTYPE_COUNT || m->n_tensors < 1 || m->n_tensors > (1 << 24) || m->n_units < 1 ||
        m->global_steps < 0 || m->skipped_steps < 0 || m->applied_steps < 0 || m->sched_it < -1)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                          "%s: values out of range (world %lld, stage %lld, %lld tensors, %lld units)", path,
                          (long long)m->world, (long long)m->stage, (long long)m->n_tensors, (long long)m->n_units);
    if ((size_t)m->n_tensors > (n - p) / 32) goto trunc; /* each tensor takes 32 bytes before its name */
    m->tensors = (zero_tensor *)ZERO_MALLOC(sizeof(zero_tensor) * (size_t)m->n_tensors);
    m->names = (char *)ZERO_MALLOC(n - p + (size_t)m->n_tensors + 1);
    if (!m->tensors || !m->names) {
        zero__ck_meta_free(m);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s: metadata of %lld tensors", path,
                          (long long)m->n_tensors);
    }
    memset(m->tensors, 0, sizeof(zero_tensor) * (size_t)m->n_tensors);
    for (t = 0; t < m->n_tensors; t++) {
        int64_t numel, flags, group, len, ndim, k;
        zero_tensor *x = &m->tensors[t];
        ZERO__R64(numel);
        ZERO__R64(flags);
        ZERO__R64(group);
        ZERO__R64(ndim);
        if (ndim < 0 || ndim > ZERO_MAX_DIMS) {
            zero__ck_meta_free(m);
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor %lld has %lld dimensions", path,
                              (long long)t, (long long)ndim);
        }
        for (k = 0; k < ndim; k++) ZERO__R64(x->shape[k]);
        ZERO__R64(len);
        if (len < 1 || (uint64_t)len > n - p || numel < 1 || group < INT32_MIN || group > INT32_MAX || flags < 0 ||
            flags > 0xFFFF) {
            zero__ck_meta_free(m);
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor %lld: bad record (name of %lld bytes, "
                                                                      "%lld elements)", path, (long long)t, (long long)len,
                              (long long)numel);
        }
        if (memchr(b + p, 0, (size_t)len)) {
            zero__ck_meta_free(m);
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: tensor %lld: a NUL byte in its name", path,
                              (long long)t);
        }
        memcpy(m->names + names_len, b + p, (size_t)len);
        m->names[names_len + (size_t)len] = 0;
        x->name = m->names + names_len;
        names_len += (size_t)len + 1;
        p += (size_t)len;
        x->numel = numel;
        x->flags = (int)flags;
        x->group = (int)group;
        x->ndim = (int)ndim;
    }
    if (version >= 2) {
        ZERO__R64(m->client_files);
        if (m->client_files < (version >= 3 ? 0 : 1) || m->client_files > (1 << 20)) {
            zero__ck_meta_free(m);
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %lld client state files", path,
                              (long long)m->client_files);
        }
    }
    if (version >= 3) {
        ZERO__R64(m->optimizer);
        if (m->optimizer <= ZERO_OPTIMIZER_ADAMW || m->optimizer >= ZERO_OPTIMIZER_COUNT) {
            zero__ck_meta_free(m);
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: optimizer type %lld", path, (long long)m->optimizer);
        }
    }
    if (p != n) {
        zero__ck_meta_free(m);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %zu bytes after the last tensor", path, n - p);
    }
#undef ZERO__R64
#undef ZERO__RD
    return ZERO_OK;
trunc:
    zero__ck_meta_free(m);
    return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: metadata ends early (byte %zu of %zu)", path, p, n);
}

/* A whole meta.zck (header and body, any bytes: the fuzz target's entry). */
static zero_result zero__ck_meta_read(const unsigned char *mb, size_t mn, const char *path, zero__ck_meta *m,
                                      zero_error *err) {
    zero_result r;
    memset(m, 0, sizeof *m);
    if (mn < ZERO__CK_HDR)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %zu bytes, shorter than a header", path, mn);
    if ((r = zero__ck_check_header(mb, path, ZERO__CK_META, err)) != ZERO_OK) return r;
    if (zero__ck_get64(mb + 16) != mn - ZERO__CK_HDR || zero__crc32c(0, mb + ZERO__CK_HDR, mn - ZERO__CK_HDR) != zero__ck_get32(mb + 24))
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %s", path,
                          zero__ck_get64(mb + 16) != mn - ZERO__CK_HDR ? "truncated or extended" : "body checksum mismatch");
    if ((r = zero__ck_parse_meta(mb + ZERO__CK_HDR, mn - ZERO__CK_HDR, zero__ck_get32(mb + 8), path, m, err)) != ZERO_OK)
        return r;
    /* the header's fields against the body: a forged header with a recomputed checksum is still refused */
    if (zero__ck_get32(mb + 28) != 0 || (int64_t)zero__ck_get32(mb + 32) != m->world || zero__ck_get64(mb + 36) != 0 ||
        zero__ck_get64(mb + 52) != 0) {
        zero_result rr = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                                    "%s: the header says rank %u of world %u (elements %llu), the metadata was saved by "
                                    "rank 0 of world %lld (elements 0): the header was altered",
                                    path, zero__ck_get32(mb + 28), zero__ck_get32(mb + 32),
                                    (unsigned long long)zero__ck_get64(mb + 36), (long long)m->world);
        zero__ck_meta_free(m);
        return rr;
    }
    return ZERO_OK;
}

/* Reached through `latest`: a tag zero_save wrote (stepN or stepN.k) must name the step the metadata holds. */
static zero_result zero__ck_meta_tag(const zero__ck_meta *m, const char *path, const char *dir, const char *tag,
                                     zero_error *err) {
    long long n = -1;
    int used = 0;
    if (strncmp(tag, "step", 4) != 0 || !isdigit((unsigned char)tag[4]) || sscanf(tag, "step%lld%n", &n, &used) != 1 ||
        (tag[used] != 0 && tag[used] != '.'))
        return ZERO_OK; /* not a name zero_save gives */
    if (n != (long long)m->global_steps)
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                          "%s holds step %lld, but %s/latest names it as \"%s\": the metadata was copied from another "
                          "save",
                          path, (long long)m->global_steps, dir, tag);
    return ZERO_OK;
}

/* Read a whole small file (meta.zck, latest); NULL with err filled. */
static unsigned char *zero__ck_slurp(const char *path, size_t *len, size_t cap, zero_msg missing, zero_error *err) {
    uint64_t size = 0;
    int fd = zero__open_read(path, &size, missing, err);
    unsigned char *b;
    int r;
    if (fd < 0) return NULL;
    if (size > cap) {
        close(fd);
        zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %llu bytes, more than the %zu this file may have", path,
                   (unsigned long long)size, cap);
        return NULL;
    }
    b = (unsigned char *)ZERO_MALLOC((size_t)size + 1);
    if (!b) {
        close(fd);
        zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s", path);
        return NULL;
    }
    r = zero__read_at(fd, 0, b, (size_t)size);
    close(fd);
    if (r != 1) {
        ZERO_FREE(b);
        zero__fail(err, ZERO_MSG_FILE_READ, NULL, 0, 0, "%s: %s", path, r < 0 ? strerror(errno) : "short read");
        return NULL;
    }
    b[size] = 0;
    *len = (size_t)size;
    return b;
}

/* The checkpoint directory: dir itself when it holds meta.zck, else dir/<latest>.
   tag: what `latest` held ("" when dir itself is the checkpoint). Errors name
   `latest` and what it held when that is what is wrong. */
static zero_result zero__ck_find(const char *dir, char *tdir, size_t cap, char tag[256], zero_error *err) {
    char path[ZERO_PATH_MAX + 64], shown[4 * 64 + 8];
    struct stat st;
    unsigned char *lt;
    size_t n, i, k = 0;
    int bad = 0;
    tag[0] = 0;
    snprintf(path, sizeof path, "%s/meta.zck", dir);
    if (stat(path, &st) == 0) {
        snprintf(tdir, cap, "%s", dir);
        return ZERO_OK;
    }
    snprintf(path, sizeof path, "%s/latest", dir);
    lt = zero__ck_slurp(path, &n, 255, ZERO_MSG_CKPT_NOT_FOUND, err);
    if (!lt) {
        if (err && err->item == ZERO_MSG_CKPT_NOT_FOUND)
            zero__fail(err, ZERO_MSG_CKPT_NOT_FOUND, NULL, 0, 0,
                       "%s is not a checkpoint: neither meta.zck nor a latest pointer in it", dir);
        return err ? err->code : ZERO_ERR_IO;
    }
    while (n > 0 && (lt[n - 1] == '\n' || lt[n - 1] == '\r' || lt[n - 1] == ' ' || lt[n - 1] == '\t')) n--; /* echo's newline */
    for (i = 0; i < n; i++)
        if (!(isalnum(lt[i]) || lt[i] == '_' || lt[i] == '-' || lt[i] == '.') || (i == 0 && lt[i] == '.')) bad = 1;
    for (i = 0; i < n && i < 64; i++) /* what it held, printable */
        k += (size_t)snprintf(shown + k, sizeof shown - k, lt[i] >= 0x20 && lt[i] < 0x7F && lt[i] != '"' && lt[i] != '\\'
                                                                ? "%c" : "\\x%02x", lt[i]);
    if (n > 64) snprintf(shown + k, sizeof shown - k, "...");
    if (n == 0 || bad) {
        ZERO_FREE(lt);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                          "%s %s%s%s, not the name of a checkpoint directory (letters, digits, '_', '-', '.')\nHINT: "
                          "write the name of one of the checkpoints in %s into it (zero_save writes stepN), or pass "
                          "that checkpoint's directory itself",
                          path, n == 0 ? "is empty" : "holds \"", n == 0 ? "" : shown, n == 0 ? "" : "\"", dir);
    }
    memcpy(tag, lt, n);
    tag[n] = 0;
    ZERO_FREE(lt);
    snprintf(tdir, cap, "%s/%s", dir, tag);
    snprintf(path, sizeof path, "%s/meta.zck", tdir);
    if (stat(path, &st) != 0) {
        int en = errno;
        return zero__fail(err, ZERO_MSG_CKPT_NOT_FOUND, NULL, 0, 0,
                          "%s/latest names \"%s\", but %s: %s (the checkpoint it named was removed, or latest was "
                          "edited)\nHINT: write the name of one of the checkpoints in %s into %s/latest, or pass that "
                          "checkpoint's directory itself",
                          dir, tag, path, strerror(en), dir, dir);
    }
    return ZERO_OK;
}

/* Saving rank `which`'s client<R>.zck of the checkpoint in tdir, read whole and checked (zero__client_read), and
   its header against the metadata: the rank it names, the number of client files, the save's id (mb: meta.zck). */
static zero_result zero__ck_client_load(const char *tdir, int which, const zero__ck_meta *m, const unsigned char *mb,
                                        zero__client **out, zero_error *err) {
    char path[ZERO_PATH_MAX + 64];
    unsigned char *fb;
    size_t fn = 0;
    zero_result r;
    *out = NULL;
    snprintf(path, sizeof path, "%s/client%05d.zck", tdir, which);
    fb = zero__ck_slurp(path, &fn, ZERO__CK_HDR + ZERO_CLIENT_MAX_BYTES + (size_t)ZERO_CLIENT_MAX_KEYS * (16 + ZERO_CLIENT_KEY_MAX),
                        ZERO_MSG_CKPT_CORRUPT, err);
    if (!fb) {
        if (err && err->item == ZERO_MSG_CKPT_CORRUPT && strlen(err->msg) + 80 < sizeof err->msg)
            snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                     " (meta.zck says %lld ranks saved client state)", (long long)m->client_files);
        return err ? err->code : ZERO_ERR_IO;
    }
    if ((r = zero__client_read(fb, fn, path, out, err)) == ZERO_OK &&
        (zero__ck_get32(fb + 28) != (uint32_t)which || (int64_t)zero__ck_get32(fb + 32) != m->client_files ||
         zero__ck_get64(fb + 44) != zero__ck_get64(mb + 44))) {
        r = zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                       "%s: %s (it says rank %u of %u, save id %llu; meta.zck: %lld client files, save id %llu)", path,
                       zero__ck_get64(fb + 44) != zero__ck_get64(mb + 44) ? "this client file was copied in from another "
                                                                            "checkpoint" : "the header was altered",
                       zero__ck_get32(fb + 28), zero__ck_get32(fb + 32), (unsigned long long)zero__ck_get64(fb + 44),
                       (long long)m->client_files, (unsigned long long)zero__ck_get64(mb + 44));
        zero__client_free(*out);
        *out = NULL;
    }
    ZERO_FREE(fb);
    return r;
}

/* Reads ranges of a saving rank's file, checking each block it touches. */
typedef struct zero__ck_reader {
    char tdir[ZERO_PATH_MAX];
    int old_world;
    int64_t old_shard;  /* elements per array */
    uint64_t id;        /* the save's id (meta.zck) */
    int64_t blocks;
    int *fd;            /* per saving rank, -1 closed */
    uint32_t **crc;     /* per saving rank: 3 x blocks */
    float *blk[3];      /* one block per array, cached */
    int blk_rank[3];
    int64_t blk_index[3]; /* (-1 none) */
} zero__ck_reader;

static void zero__ck_reader_close(zero__ck_reader *rd) {
    int k;
    if (rd->fd)
        for (k = 0; k < rd->old_world; k++)
            if (rd->fd[k] >= 0) close(rd->fd[k]);
    if (rd->crc)
        for (k = 0; k < rd->old_world; k++) ZERO_FREE(rd->crc[k]);
    ZERO_FREE(rd->fd);
    ZERO_FREE(rd->crc);
    for (k = 0; k < 3; k++) ZERO_FREE(rd->blk[k]);
}

/* The save id in rank file r's header (checked); 0 when it cannot be read. */
static int zero__ck_peek_id(const zero__ck_reader *rd, int r, uint64_t *id) {
    char path[ZERO_PATH_MAX + 64];
    unsigned char h[ZERO__CK_HDR];
    zero_error fe;
    int fd, k;
    snprintf(path, sizeof path, "%s/rank%05d.zck", rd->tdir, r);
    if ((fd = zero__open_read(path, NULL, ZERO_MSG_FILE_OPEN, &fe)) < 0) return 0;
    k = zero__read_at(fd, 0, h, sizeof h);
    close(fd);
    if (k != 1 || zero__ck_check_header(h, path, ZERO__CK_RANK, &fe) != ZERO_OK) return 0;
    *id = zero__ck_get64(h + 44);
    return 1;
}

static zero_result zero__ck_open_rank(zero__ck_reader *rd, int r, zero_error *err) {
    char path[ZERO_PATH_MAX + 64];
    unsigned char h[ZERO__CK_HDR], *t;
    int fd, k;
    uint64_t tbytes = (uint64_t)(3 * rd->blocks) * 4, data = (uint64_t)(3 * rd->old_shard) * 4;
    zero_result res;
    if (rd->fd[r] >= 0) return ZERO_OK;
    snprintf(path, sizeof path, "%s/rank%05d.zck", rd->tdir, r);
    fd = zero__open_read(path, NULL, ZERO_MSG_CKPT_CORRUPT, err);
    if (fd < 0) {
        if (err && err->item == ZERO_MSG_CKPT_CORRUPT) /* missing */
            snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                     " (the checkpoint was saved on %d ranks; every rank file is needed)", rd->old_world);
        return err ? err->code : ZERO_ERR_IO;
    }
    k = zero__read_at(fd, 0, h, sizeof h);
    if (k != 1) {
        close(fd);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %s", path, k < 0 ? strerror(errno) : "truncated header");
    }
    if ((res = zero__ck_check_header(h, path, ZERO__CK_RANK, err)) != ZERO_OK) {
        close(fd);
        return res;
    }
    if ((int)zero__ck_get32(h + 28) == r && (int)zero__ck_get32(h + 32) == rd->old_world &&
        (int64_t)zero__ck_get64(h + 36) == rd->old_shard && zero__ck_get64(h + 16) == data + tbytes &&
        zero__ck_get64(h + 52) == 0 && zero__ck_get64(h + 44) != rd->id) {
        /* the shapes agree, the save ids do not: if another rank file shares this one's id, meta.zck is the stranger */
        uint64_t other = 0;
        int r2 = (r + 1) % rd->old_world;
        close(fd);
        if (r2 != r && zero__ck_peek_id(rd, r2, &other) && other == zero__ck_get64(h + 44))
            return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                              "%s/meta.zck belongs to another save (id %llu) than the rank files beside it (%s and "
                              "rank%05d.zck: id %llu): meta.zck was copied in from another checkpoint",
                              rd->tdir, (unsigned long long)rd->id, path, r2, (unsigned long long)other);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                          "%s belongs to another save (id %llu) than %s/meta.zck (id %llu)%s", path,
                          (unsigned long long)zero__ck_get64(h + 44), rd->tdir, (unsigned long long)rd->id,
                          r2 != r ? ": this rank file was copied in from another checkpoint"
                                  : ": one of the two was copied in from another checkpoint");
    }
    if ((int)zero__ck_get32(h + 28) != r || (int)zero__ck_get32(h + 32) != rd->old_world ||
        (int64_t)zero__ck_get64(h + 36) != rd->old_shard || zero__ck_get64(h + 16) != data + tbytes ||
        zero__ck_get64(h + 52) != 0 || zero__ck_get64(h + 44) != rd->id) {
        close(fd);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0,
                          "%s: rank %u of %u with %llu elements of save %llu, expected rank %d of %d with %lld of "
                          "save %llu (a file of another checkpoint mixed in)", path, zero__ck_get32(h + 28),
                          zero__ck_get32(h + 32), (unsigned long long)zero__ck_get64(h + 36),
                          (unsigned long long)zero__ck_get64(h + 44), r, rd->old_world, (long long)rd->old_shard,
                          (unsigned long long)rd->id);
    }
    t = (unsigned char *)ZERO_MALLOC((size_t)tbytes + 4);
    rd->crc[r] = (uint32_t *)ZERO_MALLOC((size_t)tbytes + 4);
    if (!t || !rd->crc[r]) {
        ZERO_FREE(t);
        close(fd);
        return zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "%s: block table", path);
    }
    k = zero__read_at(fd, ZERO__CK_HDR + data, t, (size_t)tbytes);
    if (k != 1 || zero__crc32c(0, t, (size_t)tbytes) != zero__ck_get32(h + 24)) {
        ZERO_FREE(t);
        close(fd);
        return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s: %s", path,
                          k < 0 ? strerror(errno) : k == 0 ? "truncated (the block table is missing)"
                                                           : "block table checksum mismatch");
    }
    {
        int64_t q;
        for (q = 0; q < 3 * rd->blocks; q++) rd->crc[r][q] = zero__ck_get32(t + 4 * q);
    }
    ZERO_FREE(t);
    rd->fd[r] = fd;
    return ZERO_OK;
}

/* count elements of array `what` of saving rank r from shard offset `off` into out. */
static zero_result zero__ck_read(zero__ck_reader *rd, int r, int what, int64_t off, int64_t count, float *out,
                                 zero_error *err) {
    zero_result res;
    if ((res = zero__ck_open_rank(rd, r, err)) != ZERO_OK) return res;
    while (count > 0) {
        int64_t bi = off / ZERO_CKPT_BLOCK, b0 = bi * ZERO_CKPT_BLOCK;
        int64_t bn = zero__min_i64(ZERO_CKPT_BLOCK, rd->old_shard - b0), n = zero__min_i64(count, b0 + bn - off);
        if (rd->blk_rank[what] != r || rd->blk_index[what] != bi) {
            int k = zero__read_at(rd->fd[r], ZERO__CK_HDR + ((uint64_t)what * (uint64_t)rd->old_shard + (uint64_t)b0) * 4,
                                     rd->blk[what], (size_t)bn * 4);
            rd->blk_index[what] = -1;
            if (k != 1 || zero__crc32c(0, rd->blk[what], (size_t)bn * 4) != rd->crc[r][what * rd->blocks + bi])
                return zero__fail(err, ZERO_MSG_CKPT_CORRUPT, NULL, 0, 0, "%s/rank%05d.zck: %s in block %lld of the %s",
                                  rd->tdir, r, k < 0 ? strerror(errno) : k == 0 ? "truncated" : "checksum mismatch",
                                  (long long)bi, what == 0 ? "values" : what == 1 ? "exp_avg" : "exp_avg_sq");
            rd->blk_rank[what] = r, rd->blk_index[what] = bi;
        }
        memcpy(out, rd->blk[what] + (off - b0), (size_t)n * 4);
        out += n;
        off += n;
        count -= n;
    }
    return ZERO_OK;
}

/* Elements [lo, hi) of unit u (this engine's layout) of array `what` into out,
   gathered from the saving ranks' files through the saving layout `ol`;
   tmap: this engine's tensor -> the saved one. */
static zero_result zero__ck_fill_range(zero_engine *e, zero__ck_reader *rd, const zero_layout *ol, const int *tmap, int u,
                                       int64_t lo, int64_t hi, int what, float *out, zero_error *err) {
    int k, n = zero__unit_segments(e->plan.layout, u, lo, hi, e->buf.segtmp, e->plan.layout->units[u].last_tensor - e->plan.layout->units[u].first_tensor + 1);
    memset(out, 0, sizeof(float) * (size_t)(hi - lo)); /* gaps and padding */
    for (k = 0; k < n; k++) {
        const zero__seg *sg = &e->buf.segtmp[k];
        int ot = tmap[sg->tensor];
        int64_t toff = sg->tensor_off, left = sg->count;
        float *dst = out + (sg->unit_off - lo);
        while (left > 0) {
            zero_location loc;
            const zero_unit *ox;
            int64_t in_chunk, run;
            zero_result res;
            memset(&loc, 0, sizeof loc); /* gcc -O3 cannot see that locate fills it on success */
            if (zero_layout_locate(ol, ot, toff, &loc, err) != ZERO_OK) return err->code;
            ox = zero_layout_unit(ol, loc.unit);
            in_chunk = loc.shard_offset - ox->shard_offset;
            run = zero__min_i64(left, ox->chunk - in_chunk);
            if ((res = zero__ck_read(rd, loc.rank, what, loc.shard_offset, run, dst, err)) != ZERO_OK) return res;
            dst += run;
            toff += run;
            left -= run;
        }
    }
    return ZERO_OK;
}

/* This rank's part of unit u from the checkpoint into the engine: master, m
   and v (trainable) read into tile's thirds, then wherever they live. */
static zero_result zero__ck_unit_set(zero_engine *e, zero__ck_reader *rd, const zero_layout *ol, const int *tmap, int u,
                                     float *tile, void *stage_buf, zero_error *err) {
    const zero_unit *x = &e->plan.layout->units[u];
    int64_t lo = e->plan.stage == 0 ? 0 : (int64_t)e->plan.rank * x->chunk, n = e->plan.stage == 0 ? x->padded : x->chunk;
    int64_t hi = zero__min_i64(lo + n, x->numel);
    int what;
    zero_result res;
    zero__state_io io;
    if (hi < lo) hi = lo;
    for (what = 0; what < (x->frozen ? 1 : 3); what++) {
        float *vals = tile + (size_t)what * (size_t)n;
        if ((res = zero__ck_fill_range(e, rd, ol, tmap, u, lo, hi, what, vals, err)) != ZERO_OK) return res;
        if (hi - lo < n) memset(vals + (hi - lo), 0, sizeof(float) * (size_t)(n - (hi - lo)));
    }
    io.stage = stage_buf;
    io.tile = tile;
    return zero__state_put(e, u, tile, x->frozen ? NULL : tile + n, x->frozen ? NULL : tile + 2 * n, &io, err);
}

/* The engine's tensors in the checkpoint's metadata, by name: tmap[t] is
   tensor t's index there. */
static zero_result zero__load_match(zero_engine *e, const zero__ck_meta *m, const char *path, int **tmap_out, zero_error *fe) {
    int t, k, *tmap;
    int64_t mine = e->cfg.optimizer.type > ZERO_OPTIMIZER_ADAMW ? e->cfg.optimizer.type : 0;
    *tmap_out = NULL;
    if (m->optimizer != mine)
        return zero__fail(fe, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0,
                          "%s: saved by %s, the engine runs %s: its state (exp_avg, exp_avg_sq) is not this optimizer's"
                          "\nHINT: run %s to resume it; to change the optimizer, start from its weights (zero_ckpt convert DIR "
                          "--safetensors FILE, then zero_safetensors_bind)",
                          path, m->optimizer ? zero_optimizer_name((zero_optimizer_type)m->optimizer) : "Adam/AdamW",
                          mine ? zero_optimizer_name((zero_optimizer_type)mine) : "Adam/AdamW",
                          m->optimizer ? zero_optimizer_name((zero_optimizer_type)m->optimizer) : "Adam or AdamW");
    if (m->dtype != e->plan.cdt) {
        const char *want = zero_dtype_name(e->plan.cdt);
        return zero__fail(fe, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0,
                          "%s: saved in %s, the engine runs %s\nHINT: run in %s; or, for weights imported with zero_ckpt "
                          "import, import them again with --dtype %s; for a checkpoint of training, zero_ckpt convert "
                          "DIR --safetensors FILE --dtype %s, then start from FILE (zero_safetensors_bind)",
                          path, zero_dtype_name((zero_dtype)m->dtype), want, zero_dtype_name((zero_dtype)m->dtype), want,
                          want);
    }
    if (m->n_tensors != e->plan.n_tensors) { /* named: what each side has that the other lacks (the first few) */
        char list[2][420];
        int side, miss[2] = {0, 0};
        for (side = 0; side < 2; side++) {
            int n = side ? (int)m->n_tensors : e->plan.n_tensors, i, j;
            size_t at = 0;
            list[side][0] = 0;
            for (i = 0; i < n; i++) {
                const char *name = side ? m->tensors[i].name : e->plan.layout->names[i];
                for (j = 0; j < (side ? e->plan.n_tensors : (int)m->n_tensors) &&
                            strcmp(name, side ? e->plan.layout->names[j] : m->tensors[j].name) != 0;
                     j++) {
                }
                if (j < (side ? e->plan.n_tensors : (int)m->n_tensors)) continue;
                if (miss[side]++ < 4 && at < sizeof list[side] - 1)
                    at += (size_t)snprintf(list[side] + at, sizeof list[side] - at, "%s'%s'", at ? ", " : "", name);
            }
            if (miss[side] > 4 && at < sizeof list[side] - 1)
                snprintf(list[side] + at, sizeof list[side] - at, " and %d more", miss[side] - 4);
        }
        return zero__fail(fe, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0,
                          "%s: %lld tensors there, %d in the engine: %s%s%s%s%s%s%s%s%s\nHINT: zero_load matches tensors by "
                          "name: register the model under the checkpoint's names (examples/zero_ckpt lists them; "
                          "zero_safetensors_bind lists a safetensors file's)",
                          path, (long long)m->n_tensors, e->plan.n_tensors, miss[0] ? "the engine's tensor" : "",
                          miss[0] > 1 ? "s " : miss[0] ? " " : "", list[0],
                          miss[0] > 1 ? " are not in the checkpoint" : miss[0] ? " is not in the checkpoint" : "",
                          miss[0] && miss[1] ? "; " : "", miss[1] ? "the checkpoint's tensor" : "",
                          miss[1] > 1 ? "s " : miss[1] ? " " : "", miss[1] ? list[1] : "",
                          miss[1] > 1 ? " are not in the engine" : miss[1] ? " is not in the engine" : "");
    }
    tmap = (int *)ZERO_MALLOC(sizeof(int) * (size_t)e->plan.n_tensors);
    if (!tmap) return zero__fail(fe, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_load: tensor map");
    *tmap_out = tmap;
    for (t = 0; t < e->plan.n_tensors; t++) {
        int found = -1;
        for (k = 0; k < m->n_tensors && found < 0; k++)
            if (strcmp(m->tensors[k].name, e->plan.layout->names[t]) == 0) found = k;
        if (found < 0 || m->tensors[found].numel != e->plan.layout->numel[t] ||
            (m->tensors[found].flags & ZERO_TENSOR_FROZEN) != (e->plan.tflags[t] & ZERO_TENSOR_FROZEN))
            return zero__fail(fe, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0,
                              found < 0 ? "%s: the engine's tensor '%s' is not in the checkpoint"
                                        : "%s: tensor '%s' differs (elements or frozen-ness) from the checkpoint's",
                              path, e->plan.layout->names[t]);
        tmap[t] = found;
    }
    return ZERO_OK;
}

/* The saving layout, rebuilt from the metadata and checked against its
   digest. */
static zero_result zero__load_layout(const zero__ck_meta *m, const char *path, zero_layout **ol, zero_error *fe) {
    zero_layout_args la;
    uint32_t udig = 0;
    int u;
    memset(&la, 0, sizeof la);
    la.world = (int)m->world;
    la.bucket_elems = m->bucket;
    la.persist_threshold = m->persist;
    la.model_persist_threshold = m->model_persist;
    if (zero_layout_create(ol, m->tensors, (int)m->n_tensors, &la, fe) != ZERO_OK) return fe->code;
    for (u = 0; u < (*ol)->n_units; u++) {
        int64_t q[4];
        q[0] = (*ol)->units[u].offset, q[1] = (*ol)->units[u].numel, q[2] = (*ol)->units[u].chunk;
        q[3] = (*ol)->units[u].first_tensor;
        udig = zero__crc32c(udig, q, sizeof q);
    }
    if ((*ol)->n_units != m->n_units || udig != m->udig)
        return zero__fail(fe, ZERO_MSG_CKPT_MISMATCH, NULL, 0, 0,
                          "%s: the saving layout (%lld units) does not rebuild the same here (%d units): a checkpoint of "
                          "another zero version's layout", path, (long long)m->n_units, (*ol)->n_units);
    return ZERO_OK;
}

/* The reader of the saving ranks' files (opened as ranges are read). */
static zero_result zero__load_reader(zero__ck_reader *rd, const char *tdir, const zero__ck_meta *m, const unsigned char *mb,
                                     const zero_layout *ol, zero_error *fe) {
    int t;
    snprintf(rd->tdir, sizeof rd->tdir, "%s", tdir);
    rd->old_world = (int)m->world;
    rd->id = zero__ck_get64(mb + 44);
    rd->old_shard = ol->shard_numel;
    rd->blocks = (rd->old_shard + ZERO_CKPT_BLOCK - 1) / ZERO_CKPT_BLOCK;
    rd->fd = (int *)ZERO_MALLOC(sizeof(int) * (size_t)m->world);
    rd->crc = (uint32_t **)ZERO_MALLOC(sizeof(uint32_t *) * (size_t)m->world);
    for (t = 0; t < 3; t++) {
        rd->blk[t] = (float *)ZERO_MALLOC(sizeof(float) * ZERO_CKPT_BLOCK);
        rd->blk_index[t] = -1;
        rd->blk_rank[t] = -1;
    }
    if (!rd->fd || !rd->crc || !rd->blk[0] || !rd->blk[1] || !rd->blk[2])
        return zero__fail(fe, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_load: reader");
    for (t = 0; t < m->world; t++) rd->fd[t] = -1, rd->crc[t] = NULL;
    return ZERO_OK;
}

/* Elements of the largest piece a rank holds of one unit. */
static int64_t zero__max_own_elems(const zero_engine *e) {
    int64_t maxn = 0;
    int u;
    for (u = 0; u < e->plan.n_units; u++)
        maxn = zero__max_i64(maxn, e->plan.stage == 0 ? e->plan.layout->units[u].padded : e->plan.layout->units[u].chunk);
    return maxn;
}

/* Read everything this rank needs before changing anything: every file it
   touches is checked first (a corrupt checkpoint leaves the engine as it
   was). */
static zero_result zero__load_check(zero_engine *e, zero__ck_reader *rd, const zero_layout *ol, const int *tmap, float **vals,
                                    zero_error *fe) {
    int u;
    *vals = (float *)ZERO_MALLOC(sizeof(float) * (size_t)zero__max_own_elems(e) + 4);
    if (!*vals) return zero__fail(fe, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "zero_load: staging");
    for (u = 0; u < e->plan.n_units; u++) {
        const zero_unit *x = &e->plan.layout->units[u];
        int64_t lo = e->plan.stage == 0 ? 0 : (int64_t)e->plan.rank * x->chunk;
        int64_t hi = zero__min_i64(lo + (e->plan.stage == 0 ? x->padded : x->chunk), x->numel);
        int what;
        for (what = 0; what < (x->frozen ? 1 : 3) && hi > lo; what++)
            if (zero__ck_fill_range(e, rd, ol, tmap, u, lo, hi, what, *vals, fe) != ZERO_OK) return fe->code;
    }
    return ZERO_OK;
}

/* Every rank read its part: now change the engine, each unit's part, then
   the full copies (stages 1-2 gathered, stage 3's persistent spans), the
   counters, the loss scaler and the schedule position. */
static zero_result zero__load_apply(zero_engine *e, zero__ck_reader *rd, const zero_layout *ol, const int *tmap,
                                    const zero__ck_meta *m) {
    int64_t maxn = zero__max_own_elems(e);
    void *tile = NULL, *stage_buf = NULL;
    zero_error be;
    zero_result r = ZERO_OK;
    int u, t;
    zero__ok(&be);
    if (e->be.alloc(e->be.ctx, ZERO_MEM_PINNED, (size_t)maxn * 12 + 64, &tile, &be) != ZERO_OK ||
        e->be.alloc(e->be.ctx, ZERO_MEM_PINNED, (size_t)maxn * 4 + 64, &stage_buf, &be) != ZERO_OK) {
        r = zero__ebackend(e, &be, "zero_load: staging");
        e->broken = 0; /* nothing changed yet */
        goto out;
    }
    if (e->offload_param.pstore) /* the parameter cache holds the old values */
        for (t = 0; t < e->offload_param.n_pbuf; t++) e->offload_param.pbuf_unit[t] = -1;
    for (u = 0; u < e->plan.n_units; u++) {
        if (zero__ck_unit_set(e, rd, ol, tmap, u, (float *)tile, stage_buf, &be) != ZERO_OK) {
            /* the files passed every check a moment ago: the state is now partly replaced */
            r = zero__ebackend(e, &be, "zero_load: while replacing the engine's state");
            goto out;
        }
        /* stages 1-2: gathered (the program's memory: written out before its staging takes the next unit) */
        if ((r = zero__step_gather(e, u)) != ZERO_OK) goto out;
    }
    if (e->plan.stage == 3) {
        int s;
        for (s = 0; s < e->plan.n_spans; s++) {
            if (!e->spans[s].persistent) zero__pool_drop(e, s);
            else if ((r = zero__gather_span(e, s, e->spans[s].pool_off, 1)) != ZERO_OK) goto out;
        }
    }
    e->run.global_steps = m->global_steps;
    e->run.skipped_steps = m->skipped_steps;
    e->run.applied_steps = m->applied_steps;
    e->run.sched_it = m->sched_it;
    e->run.beta1_t = (float)m->beta1_t;
    e->run.beta2_t = (float)m->beta2_t;
    e->run.last_b1 = m->last_b1;
    e->run.last_b2 = m->last_b2;
    e->run.scaler.cur_scale = m->cur_scale;
    e->run.scaler.cur_hysteresis = (int)m->cur_hysteresis;
    e->run.scaler.cur_iter = m->cur_iter;
    e->run.scaler.last_overflow_iter = m->last_overflow_iter;
    e->dpu.pending = 0; /* a delayed update of the state before is void now */
    if ((r = zero__order(e, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE, e->buf.ev_comm)) != ZERO_OK) goto out;
    if (zero__sync(e, ZERO_STREAM_COMM, &be) != ZERO_OK) r = zero__ebackend(e, &be, "zero_load: sync");
out:
    if (tile) e->be.free(e->be.ctx, ZERO_MEM_PINNED, tile);
    if (stage_buf) e->be.free(e->be.ctx, ZERO_MEM_PINNED, stage_buf);
    return r;
}

ZERO__DEF zero_result zero_load(zero_engine *e, const char *dir, zero_error *err) {
    char tdir[ZERO_PATH_MAX], path[ZERO_PATH_MAX + 64], tag[256];
    unsigned char *mb = NULL;
    size_t mn = 0;
    zero__ck_meta m;
    zero_layout *ol = NULL;
    int *tmap = NULL;
    zero__ck_reader rd;
    float *vals = NULL;
    zero__client *client = NULL;
    int client_from = 0;
    zero_error fe;
    zero_result r;
    double bad = 0, sum = 0, t0 = zero__now_ms();
    zero__ok(&fe);
    memset(&m, 0, sizeof m);
    memset(&rd, 0, sizeof rd);
    if ((r = zero__ck_enter(e, "zero_load", "dir", dir, err)) != ZERO_OK) return r;
    /* every rank reads and checks the metadata and its part of the files;
       nothing changes until all agree */
    if (zero__ck_find(dir, tdir, sizeof tdir, tag, &fe) != ZERO_OK) {
        bad = 1;
    } else {
        snprintf(path, sizeof path, "%s/meta.zck", tdir);
        mb = zero__ck_slurp(path, &mn, (size_t)1 << 31, ZERO_MSG_CKPT_NOT_FOUND, &fe);
        bad = !mb || zero__ck_meta_read(mb, mn, path, &m, &fe) != ZERO_OK || zero__ck_meta_tag(&m, path, dir, tag, &fe) != ZERO_OK ||
              zero__load_match(e, &m, path, &tmap, &fe) != ZERO_OK ||
              zero__load_layout(&m, path, &ol, &fe) != ZERO_OK || zero__load_reader(&rd, tdir, &m, mb, ol, &fe) != ZERO_OK ||
              zero__load_check(e, &rd, ol, tmap, &vals, &fe) != ZERO_OK;
        /* the client state: this rank's own on the saving world size, else rank 0's */
        client_from = m.client_files == e->plan.gworld ? e->plan.grank : 0;
        if (!bad && m.client_files > 0 && zero__ck_client_load(tdir, client_from, &m, mb, &client, &fe) != ZERO_OK) bad = 1;
    }
    if ((r = zero__agree(e, bad, &sum)) != ZERO_OK) goto out;
    if (sum > 0) {
        if (bad)
            r = zero__efail(e, fe.item, "zero_load: %s (the engine is unchanged)", fe.msg);
        else
            r = zero__efail(e, ZERO_MSG_CKPT_CORRUPT, "zero_load: %g other rank(s) could not read the checkpoint in %s "
                                                      "(see their errors); the engine is unchanged", sum, dir);
        e->broken = 0; /* nothing changed: the engine stays usable */
        goto out;
    }
    r = zero__load_apply(e, &rd, ol, tmap, &m);
    if (r == ZERO_OK) { /* the store is the checkpoint's, whole (none: empty) */
        zero__client_free(e->client);
        e->client = client;
        client = NULL;
    }
    if (r == ZERO_OK && e->plan.grank == 0)
        zero__log(&e->cfg.log, ZERO_LOG_INFO, ZERO_MSG_CKPT_DONE,
                  "zero_load: step %lld loaded from %s (saved by %lld ranks at stage %lld; %d client key%s%s; %.2f s)",
                  (long long)m.global_steps, tdir, (long long)m.world, (long long)m.stage, zero_client_count(e),
                  zero_client_count(e) == 1 ? "" : "s",
                  m.client_files > 0 && m.client_files != e->plan.gworld ? ", rank 0's on every rank (the world size changed)" : "",
                  (zero__now_ms() - t0) / 1000.0);
out:
    zero__client_free(client);
    zero__ck_meta_free(&m);
    ZERO_FREE(mb);
    ZERO_FREE(tmap);
    ZERO_FREE(vals);
    zero__ck_reader_close(&rd);
    if (ol) zero_layout_destroy(ol);
    if (r != ZERO_OK && err) *err = e->err;
    else zero__ok(err);
    return r;
}

/* ---- >>export: zero_export_safetensors: consolidated weights, streamed tensor by tensor ---- */

#ifndef ZERO_EXPORT_PIECE
#define ZERO_EXPORT_PIECE ((int64_t)1 << 22) /* elements gathered and written at a time */
#endif

typedef struct zero__st_writer {
    zero_engine *e;
    zero_dtype dt;
    float *buf;
    void *out;
    int failed_collective; /* a collective failed: the other ranks stop too */
} zero__st_writer;

/* The JSON header: {"name":{"dtype":"BF16","shape":[..],"data_offsets":[a,b]},...}
   (names escaped), padded with spaces to a multiple of 8 bytes. */
static size_t zero__st_header(const zero_engine *e, zero_dtype dt, char *h, size_t cap) {
    size_t n = 0, es = zero_dtype_size(dt);
    uint64_t off = 0;
    int t, k;
#define ZERO__SP(...)                                                                             \
    do {                                                                                          \
        int w_ = snprintf(h ? h + (n < cap ? n : cap) : NULL, h && n < cap ? cap - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                                              \
    } while (0)
    ZERO__SP("{\"__metadata__\":{\"format\":\"pt\",\"writer\":\"zero\",\"step\":\"%lld\"}", (long long)e->run.global_steps);
    for (t = 0; t < e->plan.n_tensors; t++) {
        const char *c;
        ZERO__SP(",\"");
        for (c = e->plan.layout->names[t]; *c; c++) {
            unsigned char u = (unsigned char)*c;
            if (u == '"' || u == '\\') ZERO__SP("\\%c", u);
            else if (u < 0x20) ZERO__SP("\\u%04x", u);
            else ZERO__SP("%c", u);
        }
        ZERO__SP("\":{\"dtype\":\"%s\",\"shape\":[", dt == ZERO_DTYPE_FP32 ? "F32" : dt == ZERO_DTYPE_FP16 ? "F16" : "BF16");
        if (e->plan.tndim[t] == 0) ZERO__SP("%lld", (long long)e->plan.layout->numel[t]);
        for (k = 0; k < e->plan.tndim[t]; k++) ZERO__SP("%s%lld", k ? "," : "", (long long)e->plan.tshape[(size_t)t * ZERO_MAX_DIMS + (size_t)k]);
        ZERO__SP("],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                 (unsigned long long)(off + (uint64_t)e->plan.layout->numel[t] * es));
        off += (uint64_t)e->plan.layout->numel[t] * es;
    }
    ZERO__SP("}");
    while (n % 8) ZERO__SP(" ");
#undef ZERO__SP
    return n;
}

/* rank 0 writes; every rank takes part in the reads (zero_read_state) */
static int zero__st_fill(int fd, void *arg, zero_error *err) {
    zero__st_writer *w = (zero__st_writer *)arg;
    zero_engine *e = w->e;
    size_t hn = zero__st_header(e, w->dt, NULL, 0), es = zero_dtype_size(w->dt);
    char *h = (char *)ZERO_MALLOC(hn + 1);
    unsigned char len[8];
    int t, ok = fd >= 0, en = 0; /* fd < 0: a rank other than 0, reading along */
    if (!h) {
        zero__fail(err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0, "safetensors header");
        return 0;
    }
    zero__st_header(e, w->dt, h, hn + 1);
    zero__ck_put64(len, (uint64_t)hn);
    if (ok && (!zero__ck_write_all(fd, len, 8) || !zero__ck_write_all(fd, h, hn))) ok = 0, en = errno;
    ZERO_FREE(h);
    for (t = 0; t < e->plan.n_tensors; t++) {
        int64_t o;
        for (o = 0; o < e->plan.layout->numel[t]; o += ZERO_EXPORT_PIECE) {
            int64_t n = zero__min_i64(ZERO_EXPORT_PIECE, e->plan.layout->numel[t] - o);
            if (zero_read_state(e, t, ZERO_STATE_MASTER, o, n, w->buf) != ZERO_OK) {
                w->failed_collective = 1;
                *err = e->err;
                return 0;
            }
            zero__host_cast(w->out, w->dt, w->buf, n); /* fp32 / the compute dtype's rounding */
            if (ok && !zero__ck_write_all(fd, w->out, (size_t)n * es)) ok = 0, en = errno;
        }
    }
    if (!ok && fd >= 0) /* (errno of the failed write: the reads along the way may have set it since) */
        zero__fail(err, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "safetensors: %s%s", strerror(en), en == ENOSPC ? " (disk full)" : "");
    return ok;
}

ZERO__DEF zero_result zero_export_safetensors(zero_engine *e, const char *path, zero_dtype dtype, zero_error *err) {
    zero__st_writer w;
    zero_result r;
    zero_error fe;
    double sum = 0;
    int bad = 0;
    zero__ok(&fe);
    if ((r = zero__ck_enter(e, "zero_export_safetensors", "path", path, err)) != ZERO_OK) return r;
    if (dtype != ZERO_DTYPE_FP32 && dtype != ZERO_DTYPE_FP16 && dtype != ZERO_DTYPE_BF16) {
        r = zero__efail(e, ZERO_MSG_BAD_ARG, "zero_export_safetensors: dtype %d: fp32, fp16 or bf16", (int)dtype);
        if (err) *err = e->err;
        return r;
    }
    memset(&w, 0, sizeof w);
    w.e = e;
    w.dt = dtype;
    w.buf = (float *)ZERO_MALLOC(sizeof(float) * (size_t)ZERO_EXPORT_PIECE);
    w.out = ZERO_MALLOC(sizeof(float) * (size_t)ZERO_EXPORT_PIECE);
    if (!w.buf || !w.out) {
        ZERO_FREE(w.buf);
        ZERO_FREE(w.out);
        r = zero__efail(e, ZERO_MSG_OUT_OF_MEMORY, "zero_export_safetensors: %lld-element buffers",
                        (long long)ZERO_EXPORT_PIECE);
        if (err) *err = e->err;
        return r;
    }
    if (e->plan.grank == 0) { /* rank 0 takes part in the reads even when it cannot write */
        char tmp[ZERO_PATH_MAX + 16];
        int fd;
        fd = zero__open_tmp(path, tmp, sizeof tmp, &fe);
        bad = !zero__st_fill(fd, &w, &fe) || fd < 0;
        if (bad && fd >= 0 && !w.failed_collective) zero__err_name_file(&fe, path, tmp);
        if (fd >= 0) {
            if (!bad && fsync(fd) != 0) {
                zero__fail(&fe, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "fsync %s: %s", tmp, strerror(errno));
                bad = 1;
            }
            if (close(fd) != 0 && !bad) {
                zero__fail(&fe, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "close %s: %s", tmp, strerror(errno));
                bad = 1;
            }
            if (!bad && rename(tmp, path) != 0) {
                zero__fail(&fe, ZERO_MSG_FILE_WRITE, NULL, 0, 0, "rename %s -> %s: %s", tmp, path, strerror(errno));
                bad = 1;
            }
            if (!bad && zero__fsync_parent(path, &fe) != ZERO_OK) bad = 1;
            if (bad) unlink(tmp);
        }
    } else {
        zero__st_fill(-1, &w, &fe);
    }
    ZERO_FREE(w.buf);
    ZERO_FREE(w.out);
    if (w.failed_collective) { /* the engine is broken: its error says why */
        if (err) *err = e->err;
        return e->err.code;
    }
    if ((r = zero__agree(e, bad, &sum)) != ZERO_OK) {
        if (err) *err = e->err;
        return r;
    }
    if (sum > 0) {
        r = zero__efail(e, bad ? fe.item : ZERO_MSG_FILE_WRITE, "zero_export_safetensors: %s",
                        bad ? fe.msg : "rank 0 could not write the file (see its error)");
        if (err) *err = e->err;
        return r;
    }
    zero__ok(err);
    return ZERO_OK;
}

/* ---- >>readout: zero_memory_report, zero_memory_stats_format, zero_read_state ---- */

ZERO__DEF zero_result zero_memory_report(const zero_engine *e, zero_memory_stats *out) {
    int c, k, u;
    if (!out) return ZERO_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!e) return ZERO_ERR_INVALID_ARG;
    if (!zero__engine_live(e)) return ZERO_ERR_STATE;
    memcpy(out->planned, e->mem.planned, sizeof out->planned);
    memcpy(out->allocated, e->mem.allocated, sizeof out->allocated);
    for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++)
        for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) out->planned_total[k] += e->mem.planned[c][k];
    for (u = 0; u < e->plan.n_units; u++) {
        const zero_unit *x = &e->plan.layout->units[u];
        out->padded_params += x->padded;
    }
    zero__count_params(e, out);
    out->shard_params = e->plan.layout->shard_numel;
    out->units = e->plan.n_units;
    out->world = e->plan.gworld;
    out->shard_world = e->plan.world;
    out->stage = e->plan.stage;
    out->dtype = e->plan.cdt;
    out->accum_dtype = e->plan.adt;
    out->nvme_bytes = e->nvme.nvme_bytes;
    zero__pvm_report(e, out);
    if (e->plan.stage == 3) {
        out->stage3_max_live = e->pool.live_limit;
        out->stage3_prefetch = e->pool.prefetch_limit;
        out->stage3_group_max = e->pool.group_max;
        out->stage3_pool_elems = e->pool.saved_base ? e->pool.saved_elems : e->pool.pool_elems;
        out->stage3_derived = e->pool.derived;
        out->stage3_param_bytes = zero__stage3_bytes(e);
        out->stage3_param_bound = zero__stage3_bound(e);
    }
    if (e->plan.stage >= 2 && !e->plan.gdirect) { /* (no span has its own slot with the program's gradients) */
        int s;
        for (s = 0; s < e->plan.n_spans; s++)
            if (e->grad.span_own[s] && e->grad.span_slot[s] >= e->grad.n_ring) { /* planned (not a stand-in, and a
                                                                                      found span once planned) */
                out->grad_own_spans++;
                out->grad_own_found += e->grad.span_own[s] == ZERO__OWN_FOUND;
                out->grad_own_bytes += (size_t)e->plan.span_padded[s] * e->plan.csize;
            }
    }
    return ZERO_OK;
}

ZERO__DEF size_t zero_memory_stats_format(const zero_memory_stats *r, char *buf, size_t cap) {
    static const char *const names[ZERO_MEM_CATEGORY_COUNT] = {
        "parameters", "gather pool", "gradients", "grad accumulation", "fp32 master", "Adam m + v", "scratch"};
    size_t n = 0;
    int c;
    double total = 0;
    char sink[1]; /* the destination when only measuring (buf NULL) */
#define ZERO__PUT(...)                                                                  \
    do {                                                                                \
        int w_ = snprintf(buf ? buf + (n < cap ? n : cap) : sink, buf && n < cap ? cap - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                                    \
    } while (0)
    if (buf && cap) buf[0] = 0;
    if (!r) return 0;
    ZERO__PUT("memory per rank: stage %d, %d ranks, %s parameters, %s accumulation, %lld params (%lld trainable), "
              "%d units\n",
              r->stage, r->world, zero_dtype_name(r->dtype), zero_dtype_name(r->accum_dtype), (long long)r->params,
              (long long)r->trainable_params, r->units);
    if (r->shard_world > 0 && r->shard_world < r->world)
        ZERO__PUT("hybrid sharding: shards over groups of %d ranks, %d groups\n", r->shard_world,
                  r->world / r->shard_world);
    for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) {
        double b = (double)r->planned[c][ZERO_MEM_DEVICE] + (double)r->planned[c][ZERO_MEM_PINNED] +
                   (double)r->planned[c][ZERO_MEM_HOST];
        total += b;
        ZERO__PUT("  %-18s %12.0f bytes %10.3f MiB\n", names[c], b, b / 1048576.0);
    }
    ZERO__PUT("  %-18s %12.0f bytes %10.3f MiB (allocated %.0f)\n", "total", total, total / 1048576.0,
              (double)r->allocated[ZERO_MEM_DEVICE] + (double)r->allocated[ZERO_MEM_PINNED] +
                  (double)r->allocated[ZERO_MEM_HOST]);
    if (r->nvme_bytes)
        ZERO__PUT("  %-18s %12.0f bytes %10.3f MiB (master, m and v in files)\n", "nvme", (double)r->nvme_bytes,
                  (double)r->nvme_bytes / 1048576.0);
    if (r->program_reserved)
        ZERO__PUT("  (the program's parameter memory: %.3f MiB backed now, %.3f MiB at most, of %.3f MiB reserved in "
                  "granules of %.0f KiB: the persistent tensors and what is gathered; %d of %d units gathered "
                  "straight into it%s)\n",
                  (double)r->program_backed / 1048576.0, (double)r->program_backed_peak / 1048576.0,
                  (double)r->program_reserved / 1048576.0, (double)r->program_granule / 1024.0,
                  r->program_direct_units, r->program_units,
                  r->program_direct_units == r->program_units ? ", so the gather pool has no memory"
                                                              : ", the others through the gather pool and a copy");
    if (r->stage == 3)
        ZERO__PUT("  (stage 3: parameters on the device %.3f MiB, the shard and a gather pool for max_live %lld%s and "
                  "prefetch %lld%s elements; the largest group %lld elements%s%.3f MiB)\n",
                  (double)r->stage3_param_bytes / 1048576.0, (long long)r->stage3_max_live,
                  r->stage3_derived & 1 ? " (derived: the three largest groups + the largest)" : "", (long long)r->stage3_prefetch,
                  r->stage3_derived & 2 ? " (derived: one group)" : "", (long long)r->stage3_group_max,
                  r->stage3_param_bound ? "; at most 1/N of the model + that pool + the persistent tensors = "
                                        : "; DeepSpeed's keys given, no bound: ",
                  (double)(r->stage3_param_bound ? r->stage3_param_bound : r->stage3_param_bytes) / 1048576.0);
    if (r->grad_own_spans)
        ZERO__PUT("  (gradients: %.3f MiB of them are %d unit span%s with a buffer of its own beside the ring, %d "
                  "found in the backward: written at distant points, like a tied embedding)\n",
                  (double)r->grad_own_bytes / 1048576.0, r->grad_own_spans, r->grad_own_spans == 1 ? "" : "s",
                  r->grad_own_found);
#undef ZERO__PUT
    return n;
}

ZERO__DEF zero_result zero_read_state(zero_engine *e, int t, zero_state_kind what, int64_t offset, int64_t count,
                                      float *out) {
    const zero_layout *l;
    zero_result r;
    int64_t done = 0;
    void *tmp_dev = NULL;
    float *vals;
    zero__state_io io;
    int64_t maxpad = 0;
    int k, kind = what == ZERO_STATE_MASTER ? ZERO__ST_MASTER : what == ZERO_STATE_EXP_AVG ? ZERO__ST_M : ZERO__ST_V;
    if ((r = zero__enter(e, "zero_read_state")) != ZERO_OK || (r = zero__check_tensor(e, t, "zero_read_state")) != ZERO_OK)
        return r;
    if (!out) return zero__efail(e, ZERO_MSG_NULL_ARG, "zero_read_state: out is NULL");
    io.stage = io.tile = NULL;
    l = e->plan.layout;
    if ((unsigned)what >= ZERO_STATE_KIND_COUNT || offset < 0 || count < 0 || offset + count > l->numel[t])
        return zero__efail(e, ZERO_MSG_BAD_ARG, "zero_read_state('%s'): range [%lld, %lld) of %lld elements, what %d",
                           zero__tname(e, t), (long long)offset, (long long)(offset + count), (long long)l->numel[t],
                           (int)what);
    if ((e->plan.tflags[t] & ZERO_TENSOR_FROZEN) && what != ZERO_STATE_MASTER)
        return zero__efail(e, ZERO_MSG_ENGINE_FROZEN, "zero_read_state('%s'): a frozen tensor has no Adam state",
                           zero__tname(e, t));
    if (e->grad.touched || e->run.micro > 0)
        return zero__efail(e, ZERO_MSG_ENGINE_STEP_EARLY, "zero_read_state('%s'): gradients of this step are pending; "
                                                          "read state before the first zero_grad or after zero_step",
                           zero__tname(e, t));
    /* a delayed Adam still running writes the state read here */
    if ((r = e->strat->quiesce(e)) != ZERO_OK) return r;
    for (k = 0; k < l->places[t].n_units; k++) maxpad = zero__max_i64(maxpad, l->units[l->places[t].first_unit + k].padded);
    {   /* host: the layer's stage | the values read or gathered (pinned: the copies stay asynchronous, a hung
           collective shows in sync); the device: the unit gathered */
        zero_error be;
        zero__ok(&be);
        if (e->be.alloc(e->be.ctx, ZERO_MEM_DEVICE, (size_t)maxpad * 4, &tmp_dev, &be) != ZERO_OK ||
            e->be.alloc(e->be.ctx, ZERO_MEM_PINNED, (size_t)maxpad * 8, &io.stage, &be) != ZERO_OK ||
            (zero__state_tile_bytes(e) && e->be.alloc(e->be.ctx, ZERO_MEM_PINNED, zero__state_tile_bytes(e), &io.tile, &be) != ZERO_OK)) {
            r = zero__ebackend(e, &be, "zero_read_state: staging");
            goto out;
        }
    }
    vals = (float *)io.stage + maxpad;
    while (done < count && r == ZERO_OK) {
        int64_t in, n;
        int u = zero__layout_unit_of(l, t, offset + done, &in);
        const zero_unit *x = &l->units[u];
        int64_t own = (int64_t)e->plan.rank * x->chunk;
        zero_error be;
        zero__ok(&be);
        n = zero__min_i64(count - done, x->numel - in);
        if (l->piece[t] == 0) n = zero__min_i64(n, l->numel[t] - (offset + done));
        if (zero__state_whole(e, u, kind)) { /* here whole: no collective */
            if (zero__state_get(e, u, kind, in, n, out + done, NULL, &io, &be) != ZERO_OK)
                r = zero__ebackend(e, &be, "zero_read_state");
        } else if ((r = zero__coll_check(e, ZERO__C_READ, u)) != ZERO_OK) {
            break;
        } else if (zero__state_get(e, u, kind, own, x->chunk, vals, NULL, &io, &be) != ZERO_OK) {
            r = zero__ebackend(e, &be, "zero_read_state");
        } else { /* every rank's own chunk, gathered in fp32 on the device */
            void *at = zero__at(tmp_dev, own, 4);
            if (zero__copy(e, at, vals, (size_t)x->chunk * 4, ZERO_STREAM_COMM, &be) != ZERO_OK ||
                zero__all_gather(e, at, tmp_dev, (size_t)x->chunk, ZERO_DTYPE_FP32, ZERO_STREAM_COMM, &be) != ZERO_OK ||
                zero__copy(e, vals, zero__at(tmp_dev, in, 4), (size_t)n * 4, ZERO_STREAM_COMM, &be) != ZERO_OK ||
                zero__sync(e, ZERO_STREAM_COMM, &be) != ZERO_OK)
                r = zero__ebackend(e, &be, "zero_read_state: all_gather");
            else
                memcpy(out + done, vals, (size_t)n * 4);
        }
        done += n;
    }
out:
    if (tmp_dev) e->be.free(e->be.ctx, ZERO_MEM_DEVICE, tmp_dev);
    if (io.stage) e->be.free(e->be.ctx, ZERO_MEM_PINNED, io.stage);
    if (io.tile) e->be.free(e->be.ctx, ZERO_MEM_PINNED, io.tile);
    return r;
}

/* ---- >>lab: the tools' own: the step-time model, the floor of a step ---- */

/* The step-time model (zero_estimate_time). A step of m micro-batches is
   priced from rates, with what overlaps what made explicit:

     F = 6 (12 L C^2 + V C) + 12 L C T      FLOPs per token (examples/gpt's count)
     rate = tflops (C / (C + c0)) / (Ch / (Ch + c0))   the achieved rate at width C, from
                                            the rate achieved at width Ch (tflops_hidden)
     t_mb = F B T / rate                    one micro-batch's forward + backward
     t_fwd = t_mb / 3, t_bwd = 2 t_mb / 3   the 2:4 split of the 6 in F
     recompute                              the blocks' forward again in the backward:
                                            t_bwd += (24 L C^2 + 4 L C T) B T / tflops

   Collectives run per unit of u elements (d bytes each; Nu = ceil(P / u)
   units) as rings: over k ranks a reduce-scatter or all-gather of s bytes
   costs lat + s (k-1)/k / busbw, and sends s (k-1)/k bytes per GPU; an
   all-reduce is a reduce-scatter then an all-gather. A ring inside a node
   runs at the intra rates; one that crosses nodes at the inter rates (its
   node-crossing links set its speed, so its bytes count as inter-node).
   The shard group is G consecutive ranks (it crosses nodes when G > g); the
   R = world / G replicas of a chunk sit on different nodes when n > 1.

     reduce one unit   reduce-scatter of d u within G, then (the last
                       micro-batch only: the engine averages the chunk's sum
                       over the micro-batches once) all-reduce of a u / G
                       across R, a = 4 with accumulation (the fp32 chunk),
                       else d (stage 0: G = 1, an all-reduce across the world)
     gather one unit   all-gather of d u within G

   When (docs/engine.md): stages 0-1 reduce at the last micro-batch, stages
   2-3 at every one; stages 1-2 gather every unit after the optimizer step;
   stage 3 gathers every unit twice per micro-batch (forward, backward).

   Exposed (the step waits for it), per micro-batch:
     reductions        max(red_u, red_all - t_bwd): they run beside the
                       backward, except the last unit's; red_u
                       holds the replicas' all-reduce on the last
                       micro-batch only
     stage 3           forward: gat_u + max(0, gat_all - gat_u - t_fwd) (the
                       first unit cannot be prefetched); backward:
                       max(red_u, gat_all + red_all - t_bwd) (one comm
                       stream carries both). With stage3_serial_gathers
                       every gather is exposed: gat_all in each pass.
     stages 1-2        gat_all after the optimizer step, all of it.

   Optimizer: 30 bytes per parameter of the shard (P / G; stage 0 P) at
   hbm_bytes_per_s (bench_optim --gpt moves 30: master, m, v, the gradient
   read twice, the parameter written). With offload_optimizer cpu: the CPU
   Adam touches 28 bytes per shard parameter (zero_floor_of's count: 41.3 GB
   for 1.48e9) at host_bytes_per_s shared by the node's g ranks;
   each reducing micro-batch copies d P / G of gradients to the host beside
   the backward (exposed: max(d u / G / pcie, copy - t_bwd)); the updated
   d P / G come back after the Adam, exposed, as zero_floor_of's sequential
   schedule has it.

     step = m t_mb + exposed collectives + (optimizer, or the exposed
            offload copies + CPU Adam) */

#define ZERO__TIME_TFLOPS 466.4        /* GPT-2 XL at stage 0 on one H100: 187.9 ms a step */
#define ZERO__TIME_WIDTH 1600.0        /* ... GPT-2 XL's width */
#define ZERO__TIME_HALF_WIDTH 880.0    /* GPT-2 124M's 16.1 ms step against XL's, one H100 */
#define ZERO__TIME_HBM 2.79e12         /* zero_step on one H100: 30 B x 1.5576e9 in 16.751 ms */
#define ZERO__TIME_INTRA_BW 225e9      /* 2x H200: NCCL busbw 201-230 GB/s, 64-256 MB units */
#define ZERO__TIME_INTRA_LAT 10e-6     /* 2x H200: 13.7-14.9 us for 1 MB */
#define ZERO__TIME_INTER_BW 40e9       /* 400 Gb/s per GPU at 80%: assumed, not measured */
#define ZERO__TIME_INTER_LAT 30e-6     /* assumed, not measured */
#define ZERO__TIME_PCIE 55e9           /* one H100's host copies: 54.5-55.1 GB/s */
#define ZERO__TIME_HOST 150e9          /* an H100 host's CPU Adam: 146.8-165.7 GB/s */
#define ZERO__TIME_OPT_BYTES 30.0      /* per parameter, bench_optim --gpt */
#define ZERO__TIME_CPU_ADAM_BYTES 28.0 /* per parameter: master, m, v read and written, 16-bit grad in, param out */

/* One ring over k ranks: a reduce-scatter or all-gather of s bytes. */
static double zero__time_ring(double s, double k, double bw, double lat) {
    return k > 1 ? lat + s * (k - 1) / k / bw : 0;
}
static double zero__time_sent(double s, double k) { return k > 1 ? s * (k - 1) / k : 0; }

/* A rate: <= 0 takes the default, NaN and infinities are refused. */
static zero_result zero__time_rate(double v, double def, const char *key, double *out,
                                   zero_error *err) {
    if (!(fabs(v) <= DBL_MAX))
        return zero__fail(err, ZERO_MSG_ESTIMATE_ARGS, key, 0, 0,
                          "must be finite (<= 0 for the default %g), got %g", def, v);
    *out = v > 0 ? v : def;
    return ZERO_OK;
}

/* zero_estimate_time's model checked (each field named in the error) and its
   rates, each the model's or its measured default, into k. */
typedef struct zero__time_rates {
    double tf, ch, c0, hbm, ibw, ilat, xbw, xlat, pcie, host;
} zero__time_rates;
static zero_result zero__time_args(const zero_time_model *m, zero__time_rates *k, zero_error *err) {
    zero_msg e = ZERO_MSG_ESTIMATE_ARGS;
    zero_result r;
    if ((r = zero__est_check_params(m->params, err)) != ZERO_OK) return r;
    if (m->layers < 1) return zero__fail(err, e, "layers", 0, 0, "must be >= 1, got %d", m->layers);
    if (m->hidden < 1) return zero__fail(err, e, "hidden", 0, 0, "must be >= 1, got %d", m->hidden);
    if (m->vocab < 0) return zero__fail(err, e, "vocab", 0, 0, "must be >= 0, got %d", m->vocab);
    if (m->seq < 1) return zero__fail(err, e, "seq", 0, 0, "must be >= 1, got %d", m->seq);
    if (m->micro_batch < 1)
        return zero__fail(err, e, "micro_batch", 0, 0, "must be >= 1, got %d", m->micro_batch);
    if ((unsigned)m->compute_dtype >= (unsigned)ZERO_DTYPE_COUNT)
        return zero__fail(err, e, "compute_dtype", 0, 0,
                          "must be ZERO_DTYPE_DEFAULT, _FP32, _FP16 or _BF16, got %d",
                          (int)m->compute_dtype);
    if (!(fabs(m->unit_params) <= DBL_MAX) || m->unit_params > m->params)
        return zero__fail(err, e, "unit_params", 0, 0,
                          "must be <= params (%g) (or <= 0 for params / layers), got %g", m->params,
                          m->unit_params);
    if (m->gpus_per_node < 1)
        return zero__fail(err, e, "gpus_per_node", 0, 0, "must be >= 1, got %d", m->gpus_per_node);
    if (m->nodes < 1) return zero__fail(err, e, "nodes", 0, 0, "must be >= 1, got %d", m->nodes);
    if ((double)m->gpus_per_node * (double)m->nodes > 1073741824.0)
        return zero__fail(err, e, "nodes", 0, 0, "gpus_per_node x nodes must be <= 2^30, got %g",
                          (double)m->gpus_per_node * (double)m->nodes);
    if (m->stage < 0 || m->stage > 3)
        return zero__fail(err, e, "stage", 0, 0, "must be 0, 1, 2 or 3, got %d", m->stage);
    if (m->offload_optimizer != ZERO_OFFLOAD_NONE && m->offload_optimizer != ZERO_OFFLOAD_CPU)
        return zero__fail(err, e, "offload_optimizer", 0, 0,
                          "must be ZERO_OFFLOAD_NONE or _CPU (NVMe is not modelled), got %d",
                          (int)m->offload_optimizer);
    if (m->offload_optimizer == ZERO_OFFLOAD_CPU && m->stage == 0)
        return zero__fail(err, e, "offload_optimizer", 0, 0,
                          "needs stage 1, 2 or 3, got stage 0 (no shard to offload)");
    if ((r = zero__time_rate(m->tflops, ZERO__TIME_TFLOPS, "tflops", &k->tf, err)) != ZERO_OK ||
        (r = zero__time_rate(m->tflops_hidden, ZERO__TIME_WIDTH, "tflops_hidden", &k->ch, err)) != ZERO_OK ||
        (r = zero__time_rate(m->tflops_half_width, ZERO__TIME_HALF_WIDTH, "tflops_half_width", &k->c0, err)) != ZERO_OK ||
        (r = zero__time_rate(m->hbm_bytes_per_s, ZERO__TIME_HBM, "hbm_bytes_per_s", &k->hbm, err)) != ZERO_OK ||
        (r = zero__time_rate(m->intra_bus_bytes_per_s, ZERO__TIME_INTRA_BW, "intra_bus_bytes_per_s",
                             &k->ibw, err)) != ZERO_OK ||
        (r = zero__time_rate(m->intra_latency_s, ZERO__TIME_INTRA_LAT, "intra_latency_s", &k->ilat,
                             err)) != ZERO_OK ||
        (r = zero__time_rate(m->inter_bus_bytes_per_s, ZERO__TIME_INTER_BW, "inter_bus_bytes_per_s",
                             &k->xbw, err)) != ZERO_OK ||
        (r = zero__time_rate(m->inter_latency_s, ZERO__TIME_INTER_LAT, "inter_latency_s", &k->xlat,
                             err)) != ZERO_OK ||
        (r = zero__time_rate(m->pcie_bytes_per_s, ZERO__TIME_PCIE, "pcie_bytes_per_s", &k->pcie,
                             err)) != ZERO_OK ||
        (r = zero__time_rate(m->host_bytes_per_s, ZERO__TIME_HOST, "host_bytes_per_s", &k->host,
                             err)) != ZERO_OK)
        return r;
    return ZERO_OK;
}

ZERO__DEF zero_result zero_estimate_time(const zero_time_model *m, zero_time_estimate *out,
                                         zero_error *err) {
    zero_msg e = ZERO_MSG_ESTIMATE_ARGS;
    zero_result r;
    zero__time_rates k = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    double P, L, C, V, T, B, mb, d, u, nu, g, n, W, G, R;
    double tf, hbm, ibw, ilat, xbw, xlat, pcie, host, ch, c0;
    double gbw, glat, rbw, rlat, t_mb, t_fwd, t_bwd, ub, ev;
    double red_u, red_all, red_u1, red_all1, gat_u, gat_all, red_g_s, red_r_s, ab;
    double red_g_bytes, red_r_bytes, gat_bytes, n_red, n_gat, exp_c = 0;
    int gcross, rcross;
    zero_estimate_args ea;
    zero_memory_estimate me;
    if (out) memset(out, 0, sizeof *out);
    if (!m) return zero__null_arg(err, "zero_estimate_time", "m");
    if (!out) return zero__null_arg(err, "zero_estimate_time", "out");
    if ((r = zero__time_args(m, &k, err)) != ZERO_OK) return r;
    tf = k.tf, ch = k.ch, c0 = k.c0, hbm = k.hbm, ibw = k.ibw, ilat = k.ilat, xbw = k.xbw, xlat = k.xlat,
    pcie = k.pcie, host = k.host;
    g = (double)m->gpus_per_node;
    n = (double)m->nodes;
    W = g * n;
    if (m->stage == 0) {
        G = 1; /* nothing sharded: the gradients are all-reduced across the world */
    } else {
        G = m->group > 0 ? (double)m->group : W;
        if (G > W || fmod(W, G) != 0)
            return zero__fail(err, e, "group", 0, 0, "must divide the world (%g GPUs), got %d", W,
                              m->group);
        if (G <= g ? fmod(g, G) != 0 : fmod(G, g) != 0)
            return zero__fail(err, e, "group", 0, 0,
                              "must divide gpus_per_node (%g) or be a multiple of it, got %d "
                              "(a group would straddle nodes)", g, m->group);
    }
    R = W / G;
    P = m->params;
    L = (double)m->layers;
    C = (double)m->hidden;
    V = (double)m->vocab;
    T = (double)m->seq;
    B = (double)m->micro_batch;
    mb = m->grad_accum > 0 ? (double)m->grad_accum : 1;
    d = m->compute_dtype == ZERO_DTYPE_FP32 ? 4.0 : 2.0;
    u = m->unit_params > 0 ? m->unit_params : P / L;
    nu = ceil(P / u);
    ub = d * u;

    out->world = (int)W;
    out->group = (int)G;
    out->replicas = (int)R;
    out->flops_per_token = 6 * (12 * L * C * C + V * C) + 12 * L * C * T;
    tf *= (C / (C + c0)) / (ch / (ch + c0)); /* the achieved rate at this width */
    t_mb = out->flops_per_token * B * T / (tf * 1e12);
    t_fwd = t_mb / 3;
    t_bwd = t_mb - t_fwd;
    if (m->recompute) {
        double extra = (24 * L * C * C + 4 * L * C * T) * B * T / (tf * 1e12);
        out->recompute_s = mb * extra;
        t_bwd += extra;
        t_mb += extra;
    }
    out->compute_s = mb * t_mb;

    gcross = G > g;
    rcross = n > 1 && R > 1;
    gbw = gcross ? xbw : ibw;
    glat = gcross ? xlat : ilat;
    rbw = rcross ? xbw : ibw;
    rlat = rcross ? xlat : ilat;
    /* one unit: the group's reduce-scatter, the replicas' all-reduce (of the
       accumulated chunk: fp32 with accumulation), the group's gather */
    ab = mb > 1 && m->stage >= 1 ? 4.0 * u : ub;
    red_g_s = zero__time_ring(ub, G, gbw, glat);
    red_r_s = 2 * zero__time_ring(ab / G, R, rbw, rlat);
    red_u = red_g_s;            /* a micro-batch before the last */
    red_u1 = red_g_s + red_r_s; /* the last one */
    gat_u = zero__time_ring(ub, G, gbw, glat);
    red_all = nu * red_u;
    red_all1 = nu * red_u1;
    gat_all = nu * gat_u;
    red_g_bytes = nu * zero__time_sent(ub, G);
    red_r_bytes = nu * 2 * zero__time_sent(ab / G, R);
    gat_bytes = nu * zero__time_sent(ub, G);

    ev = m->stage >= 2 ? mb : 1; /* micro-batches that reduce */
    n_red = ev;
    n_gat = m->stage == 3 ? 2 * mb : (m->stage >= 1 ? 1 : 0);
    if (m->stage == 3) {
        double fwd = m->stage3_serial_gathers ? gat_all : gat_u + fmax(0, gat_all - gat_u - t_fwd);
        double bwd = m->stage3_serial_gathers ? gat_all + fmax(red_u, red_all - t_bwd)
                                              : fmax(red_u, gat_all + red_all - t_bwd);
        double bwd1 = m->stage3_serial_gathers ? gat_all + fmax(red_u1, red_all1 - t_bwd)
                                               : fmax(red_u1, gat_all + red_all1 - t_bwd);
        exp_c = mb * fwd + (mb - 1) * bwd + bwd1;
    } else {
        exp_c = (ev - 1) * fmax(red_u, red_all - t_bwd) + fmax(red_u1, red_all1 - t_bwd);
        if (m->stage >= 1) exp_c += gat_all; /* the gather after the step */
    }
    out->exposed_comm_s = exp_c;
    out->comm_intra_s = (gcross ? 0 : n_red * nu * red_g_s + n_gat * gat_all) + (rcross ? 0 : nu * red_r_s);
    out->comm_inter_s = (gcross ? n_red * nu * red_g_s + n_gat * gat_all : 0) + (rcross ? nu * red_r_s : 0);
    out->bytes_intra = (gcross ? 0 : n_red * red_g_bytes + n_gat * gat_bytes) + (rcross ? 0 : red_r_bytes);
    out->bytes_inter = (gcross ? n_red * red_g_bytes + n_gat * gat_bytes : 0) + (rcross ? red_r_bytes : 0);

    if (m->offload_optimizer == ZERO_OFFLOAD_CPU) {
        double shard = d * P / G, d2h = shard / pcie, h2d = shard / pcie;
        out->cpu_adam_s = ZERO__TIME_CPU_ADAM_BYTES * (P / G) * g / host;
        out->offload_copy_s = ev * d2h + h2d;
        out->bytes_pcie = ev * shard + shard;
        out->exposed_offload_s = ev * fmax(ub / G / pcie, d2h - t_bwd) + out->cpu_adam_s + h2d;
    } else {
        out->optimizer_s = ZERO__TIME_OPT_BYTES * (P / G) / hbm;
    }
    out->step_s = out->compute_s + out->exposed_comm_s + out->optimizer_s + out->exposed_offload_s;
    out->tokens_per_s_per_gpu = mb * B * T / out->step_s;

    memset(&ea, 0, sizeof ea);
    ea.params = P;
    ea.largest_layer = u;
    ea.gpus_per_node = (int)g;
    ea.nodes = (int)n;
    ea.mics_shard_size = m->stage == 0 ? 0 : (int)G; /* (stage 0 shards nothing) */
    ea.stage = m->stage;
    ea.offload_optimizer = m->offload_optimizer;
    ea.compute_dtype = m->compute_dtype == ZERO_DTYPE_DEFAULT ? ZERO_DTYPE_BF16 : m->compute_dtype;
    ea.stage3_prefetch_bucket_size = -1;
    if ((r = zero_estimate_memory(&ea, &me, err)) != ZERO_OK) return r;
    out->gpu_memory_bytes = me.gpu_total_bytes;
    zero__ok(err);
    return ZERO_OK;
}

/* One phase's copies at the bandwidths (ms): the larger of each direction
   alone and both through the duplex figure. */
static double zero__copies_ms(int64_t to_dev, int64_t to_host, const zero_bandwidths *bw) {
    double duplex = bw->duplex > 0 ? bw->duplex : bw->h2d > bw->d2h ? bw->h2d : bw->d2h, t = 0, a;
    if (to_dev > 0) t = (double)to_dev / bw->h2d;
    if (to_host > 0 && (a = (double)to_host / bw->d2h) > t) t = a;
    if (to_dev > 0 && to_host > 0 && (a = (double)(to_dev + to_host) / duplex) > t) t = a;
    return t * 1e3;
}

ZERO__DEF zero_result zero_floor_of(zero_engine *e, const zero_step_info *info, const zero_bandwidths *bw, zero_floor *out) {
    int64_t dev = 0, host = 0;
    double f, b, st;
    zero_result r;
    int k;
    if (out) memset(out, 0, sizeof *out);
    if ((r = zero__enter(e, "zero_floor_of")) != ZERO_OK) return r;
    if (!info || !bw || !out)
        return zero__efail(e, ZERO_MSG_NULL_ARG, "zero_floor_of: %s is NULL", !info ? "info" : !bw ? "bw" : "out");
    for (k = 0; k < ZERO_XFER_PHASE_COUNT; k++) {
        if (info->bytes_to_device[k] < 0 || info->bytes_to_host[k] < 0 || info->cpu_adam_bytes < 0)
            return zero__efail(e, ZERO_MSG_BAD_ARG, "zero_floor_of: info holds negative byte counts (not zero_step's)");
        dev += info->bytes_to_device[k];
        host += info->bytes_to_host[k];
    }
    if ((dev > 0 && !(bw->h2d > 0 && isfinite(bw->h2d))) || (host > 0 && !(bw->d2h > 0 && isfinite(bw->d2h))) ||
        !(bw->duplex >= 0 && isfinite(bw->duplex)) || (info->cpu_adam_bytes > 0 && !(bw->host > 0 && isfinite(bw->host))))
        return zero__efail(e, ZERO_MSG_BAD_ARG,
                           "zero_floor_of: bandwidths h2d %g, d2h %g, duplex %g, host %g bytes/s: each the step uses must be "
                           "finite and > 0 (duplex >= 0)",
                           bw->h2d, bw->d2h, bw->duplex, bw->host);
    for (k = 0; k < ZERO_XFER_PHASE_COUNT; k++) out->copy_ms[k] = zero__copies_ms(info->bytes_to_device[k], info->bytes_to_host[k], bw);
    out->adam_ms = info->cpu_adam_bytes > 0 ? (double)info->cpu_adam_bytes / bw->host * 1e3 : 0;
    f = out->copy_ms[ZERO_XFER_FORWARD];
    b = out->copy_ms[ZERO_XFER_BACKWARD];
    st = out->copy_ms[ZERO_XFER_STEP];
    out->floor_ms = e->strat->floor(info, f, b, st, out->adam_ms, &out->schedule);
    return ZERO_OK;
}

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
