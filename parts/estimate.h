/* parts/estimate.h: part of zero.h's implementation (inlined before landing) */

/* ---- memory estimator ----

   Two answers for the same question ("how much memory do the model states
   take?"): DeepSpeed's, reproduced to the byte so a DeepSpeed user sees the
   numbers they know, and zero's own plan, which is what zero's engine
   allocates (DESIGN.md section 4) and therefore what a user should size a
   machine by. Model states only: activations, the CUDA context, library
   workspaces and the allocator's slack are not counted by either.

   Symbols. P parameters, L largest layer (DeepSpeed: a module's own
   parameters; <= 0 in the args: P/20), g GPUs per node, n nodes, G = g*n,
   f additional_buffer_factor (1.5), d compute-dtype bytes (2 for fp16/bf16,
   4 for fp32), B reduce_bucket_size (5e8 elements), M
   stage3_max_live_parameters (1e9), pf stage3_prefetch_bucket_size (5e7).
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
                            and the next one, never more than the whole model.
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
                             grads 4 S g (pinned fp32 staging of the shard's
                             gradients for CPU Adam), params d S g (pinned
                             staging of the updated compute-dtype shard on its
                             way back to the GPU or to NVMe; not needed when
                             offload_param cpu keeps the shard itself on the
                             host, where CPU Adam writes it directly).
     offload_optimizer nvme: NVMe 12 S g; host keeps 4 tiles per rank
                             (offload_optimizer.buffer_count, DeepSpeed's 4):
                             master, m, v (optimizer 3 * 4 T g) and the fp32
                             gradient tile, which also carries the updated
                             compute-dtype tile out (grads 4 T g).
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
    in->stage = a->stage;
    in->oo = a->offload_optimizer;
    in->op = a->offload_param;
    in->zero_init = a->zero_init != 0;
    in->f = a->additional_buffer_factor > 0 ? a->additional_buffer_factor : 1.5;
    in->d = a->compute_dtype == ZERO_DTYPE_FP32 ? 4.0 : 2.0;
    in->B = a->reduce_bucket_size > 0 ? (double)a->reduce_bucket_size : 5e8;
    in->M = a->stage3_max_live_parameters > 0 ? (double)a->stage3_max_live_parameters : 1e9;
    in->pf = a->stage3_prefetch_bucket_size >= 0 ? (double)a->stage3_prefetch_bucket_size : 5e7;
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
    double S = P / in->G;
    double U = zero__est_min(P, zero__est_max(in->B, in->L));
    double T = U / in->G;
    o->gpu_params_bytes = o->gpu_grads_bytes = o->gpu_optimizer_bytes = 0;
    o->cpu_params_bytes = o->cpu_grads_bytes = o->cpu_optimizer_bytes = 0;
    o->nvme_bytes = 0;

    if (in->stage < 3) {
        o->gpu_params_bytes = P * d;
    } else {
        double pool = zero__est_min(P, zero__est_max(in->M + in->pf, 2 * U));
        o->gpu_params_bytes = pool * d + (in->op == ZERO_OFFLOAD_NONE ? S * d : 0);
    }
    if (in->stage < 2)
        o->gpu_grads_bytes = P * d;
    else
        o->gpu_grads_bytes = zero__est_min(P, 2 * U) * d + 4 * S;
    if (in->stage == 0)
        o->gpu_optimizer_bytes = 12 * P;
    else if (in->oo == ZERO_OFFLOAD_NONE)
        o->gpu_optimizer_bytes = 12 * S;

    if (in->oo == ZERO_OFFLOAD_CPU) {
        o->cpu_optimizer_bytes = 12 * S * g;
        o->cpu_grads_bytes = 4 * S * g;
        if (in->op != ZERO_OFFLOAD_CPU) o->cpu_params_bytes += d * S * g;
    } else if (in->oo == ZERO_OFFLOAD_NVME) {
        o->nvme_bytes += 12 * S * g;
        o->cpu_optimizer_bytes = (ZERO__EST_OPT_TILES - 1) * 4 * T * g;
        o->cpu_grads_bytes = 4 * T * g;
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
        return zero__fail(err, ZERO_MSG_NULL_ARG, "a", 0, 0,
                          "zero_estimate_memory: the arguments pointer is NULL");
    if (!out)
        return zero__fail(err, ZERO_MSG_NULL_ARG, "out", 0, 0,
                          "zero_estimate_memory: the result pointer is NULL");
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
        return zero__fail(err, ZERO_MSG_NULL_ARG, "a", 0, 0,
                          "zero_estimate_max_params: the arguments pointer is NULL");
    if (!max_params)
        return zero__fail(err, ZERO_MSG_NULL_ARG, "max_params", 0, 0,
                          "zero_estimate_max_params: the result pointer is NULL");
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
