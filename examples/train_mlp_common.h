/* train_mlp_common.h - what the two builds of the train_mlp example share:
   examples/train_mlp.c (host ranks, threads of one process) and
   examples/train_mlp.cu (one process per GPU, the CUDA backend).

   Here: the command line, the training text, the model's shapes and its
   initial weights, the data sampling (a pure hash, also callable from device
   code), the engine configuration, the tensor list handed to the engine, and
   the reports (one run; --compare-stages' memory table and checks). The
   forward and backward passes and the rank loop are each program's own.

   Include it after zero.h (with ZERO_IMPLEMENTATION defined in the program).
   Compiles as C11 and, through nvcc, as C++17. Every function is static
   inline: a program that does not call one gets no unused-function warning. */
#ifndef TRAIN_MLP_COMMON_H
#define TRAIN_MLP_COMMON_H

#ifndef ZERO_H
#error "train_mlp_common.h: include zero.h first"
#endif

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LAYERS 4                       /* hidden layers */
#define MAX_TENSORS (1 + 2 * (MAX_LAYERS + 1))
#define MAX_FILES 64
#define MAX_WORLD 256

#include "example_hash.h" /* mix64, hash3, hash_uniform, sample_pos */
#include "tool_args.h"    /* tool_int, tool_num: the flags' numbers, range-checked */

/* ---- training text ---- */

typedef struct corpus {
    unsigned char *tok; /* the text as vocabulary ids */
    size_t n;
    int vocab;
    unsigned char byte_of[256]; /* id -> byte */
} corpus;

static inline void corpus_free(corpus *c) {
    free(c->tok);
    memset(c, 0, sizeof *c);
}

/* Reads and concatenates the files; ids are the distinct bytes in byte
   order, so the vocabulary and the model's shape follow from the text alone. */
static inline int corpus_load(corpus *c, const char *const *files, int n_files, char *msg, size_t cap) {
    size_t total = 0, i;
    int f, id_of[256], v = 0;
    memset(c, 0, sizeof *c);
    for (f = 0; f < n_files; f++) {
        FILE *fp = fopen(files[f], "rb");
        long len;
        unsigned char *grown;
        if (!fp) {
            snprintf(msg, cap, "%s: cannot open\nHINT: run from the repository root, or pass --data FILE", files[f]);
            corpus_free(c);
            return 1;
        }
        if (fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
            snprintf(msg, cap, "%s: cannot read its size", files[f]);
            fclose(fp);
            corpus_free(c);
            return 1;
        }
        grown = (unsigned char *)realloc(c->tok, total + (size_t)len + 1);
        if (!grown) {
            snprintf(msg, cap, "%s: out of memory", files[f]);
            fclose(fp);
            corpus_free(c);
            return 1;
        }
        c->tok = grown;
        if (fread(c->tok + total, 1, (size_t)len, fp) != (size_t)len) {
            snprintf(msg, cap, "%s: read error", files[f]);
            fclose(fp);
            corpus_free(c);
            return 1;
        }
        fclose(fp);
        total += (size_t)len;
    }
    c->n = total;
    for (i = 0; i < 256; i++) id_of[i] = -1;
    for (i = 0; i < total; i++) id_of[c->tok[i]] = 0;
    for (i = 0; i < 256; i++)
        if (id_of[i] == 0) {
            id_of[i] = v;
            c->byte_of[v++] = (unsigned char)i;
        }
    for (i = 0; i < total; i++) c->tok[i] = (unsigned char)id_of[c->tok[i]];
    c->vocab = v;
    return 0;
}

/* ---- the model's shapes and initial weights ---- */

typedef struct mlp_dims {
    int vocab, context, embd, hidden, layers; /* V, K, C, H, hidden layers L */
} mlp_dims;

/* Tensors in forward order: wte, then W and b of linear layers 1..L+1 (the
   last one is the output layer). Layer l (0 = embedding) is engine group l.
   W of layer l is stored [fan_in, fan_out], row-major. */
#define T_WTE 0
static inline int t_weight(int l) { return 2 * l - 1; }
static inline int t_bias(int l) { return 2 * l; }
static inline int n_tensors_of(const mlp_dims *d) { return 1 + 2 * (d->layers + 1); }
static inline int fan_in(const mlp_dims *d, int l) { return l == 1 ? d->context * d->embd : d->hidden; }
static inline int fan_out(const mlp_dims *d, int l) { return l == d->layers + 1 ? d->vocab : d->hidden; }

static inline int64_t tensor_numel(const mlp_dims *d, int t) {
    int l = (t + 1) / 2;
    if (t == T_WTE) return (int64_t)d->vocab * d->embd;
    return t == t_weight(l) ? (int64_t)fan_in(d, l) * fan_out(d, l) : fan_out(d, l);
}

/* wte, h1.weight, h1.bias, ..., out.weight, out.bias */
static inline const char *tensor_name(const mlp_dims *d, int t, char *buf, size_t cap) {
    int l = (t + 1) / 2;
    if (t == T_WTE) return "wte";
    if (l == d->layers + 1) snprintf(buf, cap, "out.%s", t == t_weight(l) ? "weight" : "bias");
    else snprintf(buf, cap, "h%d.%s", l, t == t_weight(l) ? "weight" : "bias");
    return buf;
}

/* The tensors of layer l (the engine's group l) */
static inline int layer_tensors(int l, int *ts) {
    if (l == 0) {
        ts[0] = T_WTE;
        return 1;
    }
    ts[0] = t_weight(l);
    ts[1] = t_bias(l);
    return 2;
}

typedef struct init_spec {
    uint64_t seed;
    mlp_dims d;
} init_spec;

/* Weights as a pure function of (seed, tensor, element), so every world size
   and every layout starts from the same model. Uniform with variance 1/fan_in
   keeps the pre-activations near unit scale; embeddings get variance 1. */
static inline void mlp_init(void *user, int tensor, int64_t offset, int64_t count, float *out) {
    const init_spec *s = (const init_spec *)user;
    float scale = tensor == T_WTE ? 1.7320508f : sqrtf(3.0f / (float)fan_in(&s->d, (tensor + 1) / 2));
    int64_t i;
    for (i = 0; i < count; i++) out[i] = scale * hash_uniform(hash3(s->seed, (uint64_t)tensor, (uint64_t)(offset + i)));
}

/* GELU, tanh form (GPT-2's): 0.5 x (1 + tanh(A (x + B x^3))) */
#define GELU_A 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_B 0.044715f

/* ---- options and the engine's configuration ---- */

typedef struct options {
    const char *prog;  /* "train_mlp", "train_mlp_cuda": for messages */
    int report;        /* 1: this process prints (host; rank 0 of the GPU ranks) */
    int world, stage, steps, mbs, gas, print_every, freeze, compare, check, quiet;
    zero_dtype dtype;
    double lr, wd, clip;
    int64_t bucket;
    uint64_t seed;
    const char *config;
    const char *loss_file; /* --loss-file: every step's global mean loss */
    const char *save_dir, *resume_dir; /* host build: --save, --resume (a checkpoint and the data position in it) */
    mlp_dims d;
    /* which flags were given: they override the config file */
    int has_stage, has_dtype, has_lr, has_wd, has_clip, has_mbs, has_gas, has_bucket, has_world;
} options;

/* The example's own defaults, then the config file over them, then the
   flags: a config file changes only the keys it names. */
static inline zero_result make_config(const options *o, int stage, zero_config *cfg, zero_error *err) {
    zero_optimization_config *z = &cfg->zero_optimization;
    *cfg = zero_config_default();
    cfg->optimizer.lr = 3e-3;
    cfg->optimizer.weight_decay = 0.01;
    cfg->gradient_clipping = 1.0;
    z->stage = 2;
    /* small buckets: units are about a layer, so the stages differ in memory
       even for this small model */
    z->reduce_bucket_size = 16384;
    z->allgather_bucket_size = 16384;
    /* stage 3: biases stay gathered, as DeepSpeed keeps small tensors (its
       default 1e5 would keep this whole model); the weights are sharded and
       at most two layers are gathered at once */
    z->stage3_param_persistence_threshold = 1000;
    z->stage3_prefetch_bucket_size = 16384;
    z->stage3_max_live_parameters = 16384;
    if (o->config) {
        zero_result r = zero_config_load(cfg, o->config, err);
        if (r != ZERO_OK) return r;
    }
    /* "auto" is the program's to answer (HF Transformers configs are full of
       it): the example's settings, as the HF Trainer fills its own */
    if (cfg->optimizer.lr == ZERO_AUTO) cfg->optimizer.lr = 3e-3;
    if (cfg->optimizer.beta1 == ZERO_AUTO) cfg->optimizer.beta1 = 0.9;
    if (cfg->optimizer.beta2 == ZERO_AUTO) cfg->optimizer.beta2 = 0.999;
    if (cfg->optimizer.eps == ZERO_AUTO) cfg->optimizer.eps = 1e-8;
    if (cfg->optimizer.weight_decay == ZERO_AUTO) cfg->optimizer.weight_decay = 0.01;
    if (cfg->gradient_clipping == ZERO_AUTO) cfg->gradient_clipping = 1.0;
    if (cfg->fp16.enabled == ZERO_AUTO) cfg->fp16.enabled = o->has_dtype && o->dtype == ZERO_DTYPE_FP16;
    if (cfg->bf16.enabled == ZERO_AUTO) cfg->bf16.enabled = o->has_dtype && o->dtype == ZERO_DTYPE_BF16;
    if (cfg->scheduler.warmup_num_steps == ZERO_AUTO) cfg->scheduler.warmup_num_steps = o->steps / 10;
    if (cfg->scheduler.total_num_steps == ZERO_AUTO) cfg->scheduler.total_num_steps = o->steps;
    if (cfg->train_batch_size == ZERO_AUTO) cfg->train_batch_size = ZERO_UNSET;
    if (cfg->gradient_accumulation_steps == ZERO_AUTO) cfg->gradient_accumulation_steps = 1;
    if (cfg->train_micro_batch_size_per_gpu == ZERO_AUTO) cfg->train_micro_batch_size_per_gpu = ZERO_UNSET;
    cfg->hidden_size = o->d.hidden; /* "auto" bucket sizes, by the HF rule */
    if (cfg->train_batch_size == ZERO_UNSET && cfg->train_micro_batch_size_per_gpu == ZERO_UNSET)
        cfg->train_micro_batch_size_per_gpu = 16;
    if (o->has_mbs || o->has_gas) cfg->train_batch_size = ZERO_UNSET; /* derived again from the flags */
    if (o->has_mbs) cfg->train_micro_batch_size_per_gpu = o->mbs;
    if (o->has_gas) cfg->gradient_accumulation_steps = o->gas;
    if (o->has_lr) cfg->optimizer.lr = o->lr;
    if (o->has_wd) cfg->optimizer.weight_decay = o->wd;
    if (o->has_clip) cfg->gradient_clipping = o->clip;
    if (o->has_bucket)
        z->reduce_bucket_size = z->allgather_bucket_size = z->stage3_prefetch_bucket_size =
            z->stage3_max_live_parameters = o->bucket;
    if (o->has_stage) z->stage = o->stage;
    if (stage >= 0) z->stage = stage;
    if (o->has_dtype) {
        cfg->fp16.enabled = o->dtype == ZERO_DTYPE_FP16;
        cfg->bf16.enabled = o->dtype == ZERO_DTYPE_BF16;
    }
    return zero_config_resolve(cfg, o->world, err);
}

static inline zero_dtype compute_dtype(const zero_config *cfg) {
    return cfg->fp16.enabled == 1 ? ZERO_DTYPE_FP16 : cfg->bf16.enabled == 1 ? ZERO_DTYPE_BF16 : ZERO_DTYPE_FP32;
}

/* The model as the engine sees it: tensors[0..n) with names in names[] and
   the init callback reading *spec (all three must outlive the engine's
   creation). Returns the number of tensors; *total gets the parameters. */
static inline int model_tensors(const options *o, zero_tensor *tensors, char (*names)[32], init_spec *spec,
                                int64_t *total) {
    int t, nt = n_tensors_of(&o->d);
    spec->seed = o->seed;
    spec->d = o->d;
    *total = 0;
    memset(tensors, 0, sizeof(zero_tensor) * (size_t)nt);
    for (t = 0; t < nt; t++) {
        int l = (t + 1) / 2;
        zero_tensor *x = &tensors[t];
        x->name = tensor_name(&o->d, t, names[t], 32);
        x->numel = tensor_numel(&o->d, t);
        x->group = l;
        if (t == T_WTE) {
            x->ndim = 2, x->shape[0] = o->d.vocab, x->shape[1] = o->d.embd;
            x->flags = o->freeze ? ZERO_TENSOR_FROZEN : 0;
        } else if (t == t_weight(l)) {
            x->ndim = 2, x->shape[0] = fan_in(&o->d, l), x->shape[1] = fan_out(&o->d, l);
        } else {
            x->ndim = 1, x->shape[0] = x->numel;
            x->flags = ZERO_TENSOR_NO_DECAY;
        }
        if (t == T_WTE || t == t_weight(l)) { /* biases: NULL init = zeros */
            x->init = mlp_init;
            x->init_user = spec;
        }
        *total += x->numel;
    }
    return nt;
}

/* The two lines a run starts with. ranks: "4 host ranks", "2 GPUs (...)". */
static inline void print_header(const options *o, const zero_config *cfg, const char *ranks, int64_t total, int nt) {
    char what[32];
    if (o->compare) snprintf(what, sizeof what, "ZeRO stages 0 to 3 in turn");
    else snprintf(what, sizeof what, "ZeRO stage %d", cfg->zero_optimization.stage);
    printf("%s: %s, %s, %s, %lld parameters in %d tensors%s\n", o->prog, ranks, what,
           zero_dtype_name(compute_dtype(cfg)), (long long)total, nt, o->freeze ? " (wte frozen)" : "");
    printf("batch: %lld per micro-batch x %lld micro-batches x %d ranks = %lld samples per step; "
           "Adam lr %g, weight decay %g, clip %g, bucket %lld\n",
           (long long)cfg->train_micro_batch_size_per_gpu, (long long)cfg->gradient_accumulation_steps, o->world,
           (long long)cfg->train_batch_size, cfg->optimizer.lr, cfg->optimizer.weight_decay, cfg->gradient_clipping,
           (long long)cfg->zero_optimization.reduce_bucket_size);
}

static inline void print_progress(const options *o, int step, double mean, int n_window, double window,
                                  const zero_step_info *info) {
    printf("step %5d/%d  loss %.4f (mean of %3d: %.4f)  lr %.2e  grad norm %7.4f  loss scale %-6g  "
           "skipped %lld%s\n",
           step, o->steps, mean, n_window, window / n_window, info->lr, info->grad_norm, info->loss_scale,
           (long long)info->skipped_steps, info->applied ? "" : "  (this step: inf/nan gradients)");
}

static inline double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- one training run and its reports ---- */

typedef struct result {
    double first_loss, last_loss; /* of the first step trained and of the last step */
    int first_step;               /* the first step trained: 1, or after a resume the checkpoint's next (0: 1) */
    double head_loss, tail_loss;  /* means of the first and of the last 10 steps */
    double seconds;
    zero_step_info last;
    zero_memory_stats mem0;
    int64_t tokens_per_step;
    float *weights; /* final master weights, all tensors back to back */
    int64_t n_weights;
} result;

/* first/last/head/tail from the global mean loss of every step */
static inline void result_losses(result *res, const double *step_loss, int steps) {
    int i, n = steps < 10 ? steps : 10;
    res->first_loss = step_loss[0];
    res->last_loss = step_loss[steps - 1];
    res->head_loss = res->tail_loss = 0;
    for (i = 0; i < n; i++) {
        res->head_loss += step_loss[i] / n;
        res->tail_loss += step_loss[steps - 1 - i] / n;
    }
}

/* --loss-file: "step loss" lines with 9 digits, for comparing runs (the
   host and the GPU build, two world sizes, a resumed run and the one it
   continues); --compare-stages appends one block per stage, each after a
   "# stage S" line. first: the first step this run trained (after a resume,
   the step after the checkpoint's). */
static inline int write_loss_file(const options *o, int stage, const double *step_loss, int first) {
    FILE *f;
    int i;
    if (!o->loss_file || !o->report) return 0;
    if (!(f = fopen(o->loss_file, stage > 0 ? "a" : "w"))) {
        fprintf(stderr, "%s: %s: cannot write\n", o->prog, o->loss_file);
        return 1;
    }
    if (stage >= 0) fprintf(f, "# stage %d\n", stage);
    for (i = first - 1; i < o->steps; i++) fprintf(f, "%d %.9g\n", i + 1, step_loss[i]);
    return fclose(f) != 0;
}

/* One training run: stage -1 = as configured; verbose prints the header. */
typedef int (*train_fn)(const options *o, const corpus *text, int stage, int verbose, result *res, void *user);

static inline size_t category_bytes(const zero_memory_stats *s, int c) {
    size_t sum = 0;
    int k;
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) sum += s->planned[c][k];
    return sum;
}

static inline size_t total_bytes(const zero_memory_stats *s) {
    size_t sum = 0;
    int k;
    for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) sum += s->planned_total[k];
    return sum;
}

static inline int print_memory(const zero_memory_stats *s) {
    char small[4096], *buf = small;
    size_t need = zero_memory_stats_format(s, small, sizeof small);
    if (need >= sizeof small) {
        if (!(buf = (char *)malloc(need + 1))) return 1;
        zero_memory_stats_format(s, buf, need + 1);
    }
    fputs(buf, stdout);
    if (need && buf[need - 1] != '\n') putchar('\n');
    if (buf != small) free(buf);
    return 0;
}

static inline int train_one(const options *o, const corpus *text, train_fn train, void *user) {
    result res;
    if (train(o, text, -1, 1, &res, user)) return 1;
    if (o->report) {
        int first = res.first_step > 0 ? res.first_step : 1, run = o->steps - first + 1;
        if (run < 1) {
            printf("nothing to train: the checkpoint is at step %d, --steps is %d\n", first - 1, o->steps);
            return 0;
        }
        printf("loss: step %d %.4f, step %d %.4f; mean of the first 10 steps %.4f, of the last 10 %.4f\n", first,
               res.first_loss, o->steps, res.last_loss, res.head_loss, res.tail_loss);
        printf("speed: %.1f steps/s, %.0f tokens/s (%lld predicted bytes per step), %.2f s for %d steps\n",
               run / res.seconds, (double)run * (double)res.tokens_per_step / res.seconds,
               (long long)res.tokens_per_step, res.seconds, run);
        if (res.mem0.stage == 3)
            printf("stage 3, last step: %lld fetches of sharded tensors, %lld found their unit gathered, %lld unit "
                   "gathers\n",
                   (long long)res.last.fetches, (long long)res.last.fetch_hits, (long long)res.last.units_gathered);
        printf("memory of rank 0 of %d:\n", o->world);
        print_memory(&res.mem0);
    }
    free(res.weights);
    return 0;
}

/* Stages 0-3 one after another on the same samples: memory of one rank by
   category, final losses and weights against stage 0. Every rank computes
   the same verdict (losses and weights are global); o->report prints. */
static inline int compare_stages(const options *o, const corpus *text, train_fn train, void *user) {
    static const char *rows[ZERO_MEM_CATEGORY_COUNT] = {"parameters", "gather pool (st. 3)", "gradients",
                                                        "gradient accumulation", "fp32 master weights",
                                                        "Adam moments", "scratch"};
    result res[4];
    int s, c, k, ref, rc = 1, decreasing = 1, agree = 1, p = o->report;
    double unit, worst_loss = 0, worst_w = 0, wmax = 0;
    const char *uname;
    int64_t i;
    memset(res, 0, sizeof res);
    for (s = 0; s < 4; s++) {
        if (train(o, text, s, s == 0, &res[s], user)) goto done;
        if (p)
            printf("stage %d: loss %.4f -> %.4f (means of the first and last 10 steps), %.2f s, %.1f steps/s, %lld "
                   "skipped\n",
                   s, res[s].head_loss, res[s].tail_loss, res[s].seconds, o->steps / res[s].seconds,
                   (long long)res[s].last.skipped_steps);
    }
    unit = total_bytes(&res[0].mem0) >= 10.0 * 1048576 ? 1048576.0 : 1024.0;
    uname = unit > 1024 ? "MiB" : "KiB";
    if (p) {
        printf("\nmemory of one rank of %d (%s), %s, %d steps\n", o->world, uname, zero_dtype_name(res[0].mem0.dtype),
               o->steps);
        printf("%-24s %12s %12s %12s %12s\n", "", "stage 0", "stage 1", "stage 2", "stage 3");
        for (c = 0; c < ZERO_MEM_CATEGORY_COUNT; c++) {
            printf("%-24s", rows[c]);
            for (s = 0; s < 4; s++) printf(" %12.2f", category_bytes(&res[s].mem0, c) / unit);
            printf("\n");
        }
        printf("%-24s", "total");
        for (s = 0; s < 4; s++) printf(" %12.2f", total_bytes(&res[s].mem0) / unit);
        printf("\n%-24s", "allocated by backend");
        for (s = 0; s < 4; s++) {
            size_t a = 0;
            for (k = 0; k < ZERO_MEM_KIND_COUNT; k++) a += res[s].mem0.allocated[k];
            printf(" %12.2f", a / unit);
        }
        for (k = 1; k < ZERO_MEM_KIND_COUNT; k++) { /* offload puts categories in host memory */
            int any = 0;
            for (s = 0; s < 4; s++) any |= res[s].mem0.planned_total[k] != 0;
            if (!any) continue;
            printf("\n%-24s", k == ZERO_MEM_PINNED ? "  of which pinned host" : "  of which host");
            for (s = 0; s < 4; s++) printf(" %12.2f", res[s].mem0.planned_total[k] / unit);
        }
        printf("\n%-24s", "unit gathers, last step");
        for (s = 0; s < 4; s++) printf(" %12lld", (long long)res[s].last.units_gathered);
        printf("\n%-24s", "final loss");
        for (s = 0; s < 4; s++) printf(" %12.6f", res[s].last_loss);
    }
    /* fp16 on stage 0 follows FP16_Optimizer's loss scaler (no hysteresis)
       and stages 1-3 ZeRO's, as in DeepSpeed: when they skipped different
       steps, stage 0 is a different run, so stages 1-3 are held to stage 1 */
    ref = res[0].mem0.dtype == ZERO_DTYPE_FP16 && res[0].last.skipped_steps != res[1].last.skipped_steps ? 1 : 0;
    if (p) printf("\n%-24s", ref ? "max |w - w(stage 1)|" : "max |w - w(stage 0)|");
    for (i = 0; i < res[ref].n_weights; i++) wmax = fmax(wmax, fabs(res[ref].weights[i]));
    for (s = 0; s < 4; s++) {
        double d = 0;
        for (i = 0; s >= ref && i < res[ref].n_weights; i++)
            d = fmax(d, fabs((double)res[s].weights[i] - res[ref].weights[i]));
        if (s >= ref) worst_w = fmax(worst_w, d);
        if (!p) continue;
        if (s >= ref) printf(" %12.3g", d);
        else printf(" %12s", "-");
    }
    if (p) printf("\n");
    for (s = 1; s < 4; s++) {
        if (total_bytes(&res[s].mem0) >= total_bytes(&res[s - 1].mem0)) decreasing = 0;
        if (s > ref) worst_loss = fmax(worst_loss, fabs(res[s].last_loss - res[ref].last_loss) / res[ref].last_loss);
    }
    agree = worst_loss <= 1e-3;
    if (p) {
        printf("check: totals decrease 0 > 1 > 2 > 3: %s\n",
               decreasing      ? "ok"
               : o->world == 1 ? "n/a (one rank has nothing to share)"
                               : "NO for this config: stages 2-3 keep an fp32 accumulator of the rank's shard and two "
                                 "gradient\n"
                                 "       buffers the size of the largest tensor, which few ranks or one dominant "
                                 "tensor do not repay");
        if (ref)
            printf("note: stage 0 skipped %lld steps for fp16 overflow, stages 1-3 %lld: stage 0 uses FP16_Optimizer's "
                   "loss\n"
                   "      scaler (no hysteresis) as DeepSpeed does, so its run differs and stages 1-3 are compared to "
                   "stage 1\n",
                   (long long)res[0].last.skipped_steps, (long long)res[1].last.skipped_steps);
        printf("check: final losses agree: max rel diff %.2e (weights: max abs diff %.2e, max |w| %.3g): %s\n",
               worst_loss, worst_w, wmax, agree ? "ok" : "NO");
    }
    rc = (decreasing || o->world == 1) && agree ? 0 : 1;
done:
    for (s = 0; s < 4; s++) free(res[s].weights);
    return rc;
}

/* ---- command line ---- */

static const char train_mlp_options[] =
    "  --stage S            ZeRO stage 0..3 (default 2)\n"
    "  --dtype T            compute dtype fp32 (default), fp16 (dynamic loss scaling) or bf16\n"
    "  --steps N            optimizer steps (default 200)\n"
    "  --mbs N              train_micro_batch_size_per_gpu (default 16)\n"
    "  --gas N              gradient_accumulation_steps (default 1)\n"
    "  --lr X               Adam learning rate (default 3e-3)\n"
    "  --wd X               weight decay, AdamW style; biases are exempt (default 0.01)\n"
    "  --clip X             gradient_clipping (default 1.0; 0 disables)\n"
    "  --bucket N           reduce_bucket_size in elements (default 16384: about one unit per layer)\n"
    "  --seed N             seed of the initial weights and of the data sampling (default 1)\n"
    "  --config FILE        a DeepSpeed ds_config.json; the flags above override its keys. Its\n"
    "                       jsonl_monitor writes the engine's metrics, one JSON line per step,\n"
    "                       with the loss printed here (docs/observability.md)\n"
    "  --data FILE[,FILE]   training text, repeatable (default README.md and docs/*.md)\n"
    "  --context K          bytes of context (default 8)\n"
    "  --embd C             embedding width (default 20)\n"
    "  --hidden H           hidden width (default 180)\n"
    "  --layers L           hidden layers, 1..4 (default 4)\n"
    "  --freeze-embedding   train everything but wte (fine-tuning: wte is ZERO_TENSOR_FROZEN)\n"
    "  --print-every N      progress line every N steps (default steps / 10)\n"
    "  --compare-stages     train with stages 0, 1, 2 and 3 in turn; print memory and final loss\n"
    "  --loss-file FILE     write every step's loss (9 digits) to FILE, to compare runs\n";

static const char train_mlp_batch_note[] =
    "The loss printed is the mean over the whole global batch (every rank, every micro-batch).\n"
    "The global batch of a step depends only on world x gas x mbs, so runs with different\n"
    "world sizes and the same product train on the same samples.\n"
    "A bad flag or value is one line on stderr and exit status 2.\n";

/* The training text's files: the --data lists, else README.md and the .md files of docs/. */
typedef struct text_files {
    const char *files[MAX_FILES];
    char *lists[MAX_FILES]; /* copies of the --data arguments, cut at commas */
    int n_files, n_lists, have_glob;
    glob_t g;
} text_files;

static inline void text_files_free(text_files *f) {
    int i;
    if (f->have_glob) globfree(&f->g);
    for (i = 0; i < f->n_lists; i++) free(f->lists[i]);
    memset(f, 0, sizeof *f);
}

/* A flag's number in [lo, hi], or one line on stderr (tool_args.h's) and 1 */
static inline int flag_int(const options *o, const char *flag, const char *v, long long lo, long long hi, int *out) {
    long long n = 0;
    if (tool_int(o->prog, flag, v, lo, hi, &n)) return 1;
    *out = (int)n;
    return 0;
}

/* a file name after the flag */
static inline int flag_file(const options *o, const char *flag, const char *v, const char **out) {
    if (!v || !*v) return tool_fail(o->prog, flag, "%s value (a file name)", v ? "empty" : "missing");
    *out = v;
    return 0;
}

/* Defaults in o first (o->prog set), then the flags. gpu: the CUDA build
   (no --world: one rank per GPU; no --gradcheck). Returns 0 to go on, 1 on a
   bad flag or value (one line on stderr; the program exits with status 2),
   2 when --help was asked for. */
static inline int parse_args(int argc, char **argv, int gpu, options *o, text_files *f) {
    int i;
    memset(f, 0, sizeof *f);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        int bad = 0, used = 1; /* bad: the message is out */
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 2;
        else if (!strcmp(a, "--gradcheck") && !gpu) o->check = 1, used = 0;
        else if (!strcmp(a, "--seed")) {
            if (!(bad = tool_int(o->prog, a, v, 0, 2147483647LL, &n))) o->seed = (uint64_t)n;
        } else if (!strcmp(a, "--context")) bad = flag_int(o, a, v, 1, 64, &o->d.context);
        else if (!strcmp(a, "--embd")) bad = flag_int(o, a, v, 1, 1024, &o->d.embd);
        else if (!strcmp(a, "--hidden")) bad = flag_int(o, a, v, 1, 4096, &o->d.hidden);
        else if (!strcmp(a, "--layers")) bad = flag_int(o, a, v, 1, MAX_LAYERS, &o->d.layers);
        else if (!strcmp(a, "--data")) {
            /* FILE[,FILE...]; repeatable */
            char *copy, *tok;
            if (!v || !*v) bad = flag_file(o, a, v, &v);
            else if (f->n_lists == MAX_FILES) bad = tool_fail(o->prog, a, "more than %d lists", MAX_FILES);
            else if (!(copy = (char *)malloc(strlen(v) + 1))) bad = tool_fail(o->prog, a, "out of memory");
            else {
                strcpy(copy, v);
                f->lists[f->n_lists++] = copy;
                for (tok = strtok(copy, ","); tok && f->n_files < MAX_FILES; tok = strtok(NULL, ","))
                    f->files[f->n_files++] = tok;
            }
        } else if (!strcmp(a, "--world") && !gpu) bad = flag_int(o, a, v, 1, MAX_WORLD, &o->world), o->has_world = 1;
        else if (!strcmp(a, "--stage")) bad = flag_int(o, a, v, 0, 3, &o->stage), o->has_stage = 1;
        else if (!strcmp(a, "--steps")) bad = flag_int(o, a, v, 1, 100000000LL, &o->steps);
        else if (!strcmp(a, "--mbs")) bad = flag_int(o, a, v, 1, 1 << 20, &o->mbs), o->has_mbs = 1;
        else if (!strcmp(a, "--gas")) bad = flag_int(o, a, v, 1, 1 << 20, &o->gas), o->has_gas = 1;
        else if (!strcmp(a, "--bucket")) {
            if (!(bad = tool_int(o->prog, a, v, 1, 2147483647LL, &n))) o->bucket = (int64_t)n, o->has_bucket = 1;
        } else if (!strcmp(a, "--print-every")) bad = flag_int(o, a, v, 1, 100000000LL, &o->print_every);
        else if (!strcmp(a, "--lr")) bad = tool_num(o->prog, a, v, 0, 10, &o->lr), o->has_lr = 1;
        else if (!strcmp(a, "--wd")) bad = tool_num(o->prog, a, v, 0, 10, &o->wd), o->has_wd = 1;
        else if (!strcmp(a, "--clip")) bad = tool_num(o->prog, a, v, 0, 1e6, &o->clip), o->has_clip = 1;
        else if (!strcmp(a, "--config")) bad = flag_file(o, a, v, &o->config);
        else if (!strcmp(a, "--loss-file")) bad = flag_file(o, a, v, &o->loss_file);
        else if (!strcmp(a, "--save") && !gpu) bad = flag_file(o, a, v, &o->save_dir);
        else if (!strcmp(a, "--resume") && !gpu) bad = flag_file(o, a, v, &o->resume_dir);
        else if (!strcmp(a, "--dtype")) {
            o->has_dtype = 1;
            if (v && !strcmp(v, "fp32")) o->dtype = ZERO_DTYPE_FP32;
            else if (v && !strcmp(v, "fp16")) o->dtype = ZERO_DTYPE_FP16;
            else if (v && !strcmp(v, "bf16")) o->dtype = ZERO_DTYPE_BF16;
            else if (!v) bad = tool_fail(o->prog, a, "missing value (fp32, fp16 or bf16)");
            else bad = tool_fail(o->prog, a, "'%s' is not fp32, fp16 or bf16", v);
        } else if (!strcmp(a, "--freeze-embedding")) o->freeze = 1, used = 0;
        else if (!strcmp(a, "--compare-stages")) o->compare = 1, used = 0;
        else if (!strcmp(a, "--quiet")) o->quiet = 1, used = 0;
        else {
            if (gpu && !strcmp(a, "--world"))
                fprintf(stderr, "%s: --world: the ranks are one process per GPU; choose the GPUs with "
                                "CUDA_VISIBLE_DEVICES (or start it with torchrun --no-python --nproc-per-node N)\n",
                        o->prog);
            else if (gpu && !strcmp(a, "--gradcheck"))
                fprintf(stderr, "%s: --gradcheck is the host build's (train_mlp --gradcheck); on GPUs, compare the "
                                "first losses with train_mlp's in fp32\n",
                        o->prog);
            else fprintf(stderr, "%s: unknown option %s (--help lists them)\n", o->prog, a);
            return 1;
        }
        if (bad) return 1;
        i += used;
    }
    if (o->compare && (o->save_dir || o->resume_dir))
        return tool_fail(o->prog, o->save_dir ? "--save" : "--resume", "not with --compare-stages (one run saves or resumes)");
    if (f->n_files == 0) { /* the default text: README.md and the .md files of docs/, our own prose */
        size_t k;
        f->files[f->n_files++] = "README.md";
        f->have_glob = 1;
        if (glob("docs/*.md", 0, NULL, &f->g) == 0)
            for (k = 0; k < f->g.gl_pathc && f->n_files < MAX_FILES; k++) f->files[f->n_files++] = f->g.gl_pathv[k];
    }
    if (!o->print_every) o->print_every = o->steps >= 10 ? o->steps / 10 : 1;
    return 0;
}

/* Loads the text, sets o->d.vocab and prints the data line (o->report). */
static inline int load_text(options *o, const text_files *f, corpus *text) {
    char msg[512];
    if (corpus_load(text, f->files, f->n_files, msg, sizeof msg)) {
        fprintf(stderr, "%s: %s\n", o->prog, msg);
        return 1;
    }
    if (text->n <= (size_t)o->d.context) {
        fprintf(stderr, "%s: the text has %zu bytes; it needs more than --context %d\n", o->prog, text->n,
                o->d.context);
        return 1;
    }
    o->d.vocab = text->vocab;
    if (o->report)
        printf("data: %d files, %zu bytes, %d distinct bytes (the vocabulary)\n", f->n_files, text->n, text->vocab);
    return 0;
}

/* The defaults of both programs. */
static inline void options_default(options *o, const char *prog) {
    memset(o, 0, sizeof *o);
    o->prog = prog;
    o->report = 1;
    o->d.context = 8;
    o->d.embd = 20;
    o->d.hidden = 180;
    o->d.layers = 4;
    o->seed = 1;
    o->world = 4;
    o->steps = 200;
}

#endif /* TRAIN_MLP_COMMON_H */
