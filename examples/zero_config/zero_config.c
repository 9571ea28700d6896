/* zero_config - check a DeepSpeed config the way zero reads it.

     zero_config check ds_config.json [--world N] [--hidden H] [--mbs N] [--dtype T]
                       [--supply-hf] [--compact]
         parse, print every warning, resolve for N ranks and print the
         resolved config as JSON (indented; --compact: one line) and a
         summary of it on stderr. A training program fills the "auto"
         values itself; here --hidden gives the model's hidden size (bucket
         sizes), --mbs the micro-batch, --dtype the precision (an "auto"
         fp16.enabled / bf16.enabled) and --supply-hf fills the rest with
         the HF Trainer's default arguments (lr 5e-5, betas 0.9/0.999, eps
         1e-8, weight_decay 0, gradient_clipping 1, fp16 and bf16 off unless
         --dtype says, 100 warmup steps of 1000, 1 accumulation step). A
         config that needs one of them (a Hugging Face one, whose batch sizes
         are "auto") gets a message naming the flags to add, and the keys
         each one answers.
     zero_config keys-markdown
         the key table of docs/config.md (make test checks the two agree).

   Exit status (every zero_* tool's rule): 0 resolved, 1 the file cannot be
   read, has an error or needs a value the flags supply, 2 usage (a bad flag
   or value: one line, then the usage).
*/
#define ZERO_IMPLEMENTATION
#include "zero.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tool_args.h"

static const char *status_name(zero_key_status s) {
    switch (s) {
    case ZERO_KEY_IMPLEMENTED: return "implemented";
    case ZERO_KEY_NOT_YET: return "accepted, not yet";
    case ZERO_KEY_NO_EFFECT: return "accepted, no effect";
    case ZERO_KEY_REJECTED: return "rejected unless default";
    case ZERO_KEY_DEPRECATED: return "deprecated, remapped";
    default: return "?";
    }
}

/* markdown cell: escape the pipe */
static void cell(const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", stdout);
        else putchar(*s);
    }
}

static int keys_markdown(void) {
    int i, n = zero_config_key_count();
    printf("| key | type | default (DeepSpeed's = zero's) | status | meaning (DeepSpeed's) | zero |\n");
    printf("|---|---|---|---|---|---|\n");
    for (i = 0; i < n; i++) {
        const zero_key_info *k = zero_config_key(i);
        printf("| `%s` | ", k->path);
        cell(k->type);
        printf(" | ");
        cell(k->ds_default);
        printf(" | %s | ", status_name(k->status));
        cell(k->meaning);
        printf(" | ");
        cell(k->note);
        printf(" |\n");
    }
    return 0;
}

static const char usage[] =
    "usage: zero_config check FILE [--world N] [--hidden H] [--mbs N] [--dtype T] [--supply-hf]\n"
    "                         [--strict] [--compact]\n"
    "       zero_config keys-markdown\n"
    "       zero_config --help | --version\n";

static const char help[] =
    "\n"
    "check FILE     read the DeepSpeed config FILE as zero reads it, print every warning\n"
    "               (stderr), resolve it for --world ranks and print the resolved config\n"
    "               as JSON (stdout, indented by 2; floats as the shortest text that reads\n"
    "               back the same) and a summary of it (stderr: stage, dtype, batch sizes,\n"
    "               optimizer and lr, scheduler, offload, warnings)\n"
    "  --world N    ranks to resolve for (default 1; 1 to 1048576)\n"
    "  --mbs N      the micro-batch per GPU (1 to 1048576) for a train_micro_batch_size_per_gpu\n"
    "               that is \"auto\" or missing: the HF Trainer's per_device_train_batch_size.\n"
    "               train_batch_size follows: N x gradient_accumulation_steps x ranks\n"
    "  --hidden H   the model's hidden size (1 to 1048576) for \"auto\" bucket sizes:\n"
    "               reduce_bucket_size H*H, stage3_prefetch_bucket_size 0.9*H*H,\n"
    "               stage3_param_persistence_threshold 10*H, as the HF integration sets them\n"
    "  --dtype T    fp32, fp16 or bf16: the run's precision, for an fp16.enabled or\n"
    "               bf16.enabled that is \"auto\" (the HF Trainer's --fp16 / --bf16)\n"
    "  --supply-hf  the HF Trainer's default arguments for the other \"auto\" values:\n"
    "               fp16 and bf16 off (fp32) unless --dtype says, lr 5e-5, betas\n"
    "               0.9/0.999, eps 1e-8, weight_decay 0, gradient_clipping 1, 100 warmup\n"
    "               steps of 1000, 1 accumulation step\n"
    "  --strict     exit 1 when FILE draws any warning (an unknown key, a key with no\n"
    "               effect in zero, one not acted on yet), after printing them all;\n"
    "               info lines do not count (an \"auto\" given DeepSpeed's default, a\n"
    "               form of hjson such as a trailing comma, which DeepSpeed reads too)\n"
    "  --compact    the JSON on one line\n"
    "keys-markdown  the key table of docs/config.md\n"
    "--version      the zero version this tool was built with\n"
    "\n"
    "Hugging Face Transformers and Accelerate configs leave these values to the Trainer\n"
    "(\"auto\"); a training program sets them before zero_config_resolve. When FILE needs\n"
    "one, check says which flag to add and which keys it answers.\n"
    "\n"
    "There is no default dtype: the config says it, or --dtype, or --supply-hf (fp32,\n"
    "the HF Trainer's and DeepSpeed's when neither fp16 nor bf16 is enabled).\n"
    "\n"
    "Exit status (every zero_* tool's rule): 0 resolved; 1 FILE cannot be read, has an\n"
    "error, needs a value the flags above supply (stderr says which), or (--strict) drew\n"
    "a warning; 2 usage: a bad flag or value (one line, then the usage).\n";

static const char *const flags[] = {"--world", "--hidden", "--mbs",     "--dtype",   "--supply-hf",
                                    "--strict", "--compact", "--help", "--version", NULL};

/* Every message to the default sink; the warnings counted (--strict). Info
   lines are not: what they report (hjson's forms, "auto" replaced by
   DeepSpeed's default) is how DeepSpeed reads the same file. */
static int n_warnings;
static void count_log(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    if (level == ZERO_LOG_WARN) n_warnings++;
    zero_log_default(user, level, item, rank, text);
}

/* Append a key name to a ", "-separated list. */
static void list_add(char *list, size_t cap, const char *name) {
    size_t n = strlen(list);
    snprintf(list + n, cap - n, "%s%s", n ? ", " : "", name);
}

/* The HF Trainer's defaults, for each "auto" a program must answer: with
   fill, set them. Lists the keys that were "auto" in names and returns how
   many, leaving out gradient_accumulation_steps: zero_config_resolve derives
   it from the batch sizes when they are given (the HF Trainer's 1 when
   filled here). */
static int hf_defaults(zero_config *c, int fill, char *names, size_t cap) {
    int n = 0;
#define HF(field, path, value)                                                                                     \
    if (c->field == ZERO_AUTO) {                                                                                   \
        if (path) n++, list_add(names, cap, path);                                                                 \
        if (fill) c->field = value;                                                                                \
    }
    HF(fp16.enabled, "fp16.enabled", 0)
    HF(bf16.enabled, "bf16.enabled", 0)
    HF(optimizer.lr, "optimizer.params.lr", 5e-5)
    if (c->optimizer.beta1 == ZERO_AUTO && fill) c->optimizer.beta2 = 0.999;
    HF(optimizer.beta1, "optimizer.params.betas", 0.9)
    HF(optimizer.eps, "optimizer.params.eps", 1e-8)
    HF(optimizer.weight_decay, "optimizer.params.weight_decay", 0)
    HF(gradient_clipping, "gradient_clipping", 1.0)
    HF(scheduler.warmup_num_steps, "scheduler.params.warmup_num_steps", 100)
    HF(scheduler.total_num_steps, "scheduler.params.total_num_steps", 1000)
    HF(gradient_accumulation_steps, (const char *)NULL, 1)
#undef HF
    return n;
}

/* Before zero_config_resolve: the values only a program (or a flag here)
   supplies. Prints which flag answers which keys; 1 when one is missing. */
static int needs_flags(const zero_config *cfg, const char *file, long long world, long long hidden, long long mbs,
                       int supply) {
    char batch[256] = "", buckets[512] = "", hf[1024] = "";
    const zero_optimization_config *z = &cfg->zero_optimization;
    zero_config probe = *cfg;
    int need_hidden, need_hf;
    if (cfg->train_batch_size <= 0 && cfg->train_micro_batch_size_per_gpu <= 0) {
        snprintf(batch, sizeof batch, "train_micro_batch_size_per_gpu%s, train_batch_size%s",
                 cfg->train_micro_batch_size_per_gpu == ZERO_AUTO ? " (\"auto\")" : " (not set)",
                 cfg->train_batch_size == ZERO_AUTO ? " (\"auto\")" : " (not set)");
    }
    if (!hidden) { /* stage3_* "auto" has a default below stage 3, as in DeepSpeed */
        if (z->reduce_bucket_size == ZERO_AUTO)
            list_add(buckets, sizeof buckets, "zero_optimization.reduce_bucket_size");
        if (z->stage == 3 && z->stage3_prefetch_bucket_size == ZERO_AUTO)
            list_add(buckets, sizeof buckets, "zero_optimization.stage3_prefetch_bucket_size");
        if (z->stage == 3 && z->stage3_param_persistence_threshold == ZERO_AUTO)
            list_add(buckets, sizeof buckets, "zero_optimization.stage3_param_persistence_threshold");
    }
    need_hidden = buckets[0] != 0;
    need_hf = !supply && hf_defaults(&probe, 0, hf, sizeof hf) > 0;
    if (!batch[0] && !need_hidden && !need_hf) return 0;
    fprintf(stderr, "zero_config: %s leaves values to the training program, as Hugging Face configs do; add:\n", file);
    if (batch[0])
        fprintf(stderr, "  --mbs N       the micro-batch per GPU (HF: per_device_train_batch_size) for %s\n", batch);
    if (need_hidden)
        fprintf(stderr, "  --hidden H    the model's hidden size for %s\n", buckets);
    if (need_hf)
        fprintf(stderr, "  --supply-hf   the HF Trainer's defaults (zero_config --help lists them) for %s\n", hf);
    fprintf(stderr, "zero_config: run: zero_config check %s --world %lld", file, world);
    if (mbs) fprintf(stderr, " --mbs %lld", mbs);
    else if (batch[0]) fprintf(stderr, " --mbs N");
    if (hidden) fprintf(stderr, " --hidden %lld", hidden);
    else if (need_hidden) fprintf(stderr, " --hidden H");
    fprintf(stderr, "%s\n", need_hf || supply ? " --supply-hf" : "");
    if (need_hf && (cfg->fp16.enabled == ZERO_AUTO || cfg->bf16.enabled == ZERO_AUTO))
        fprintf(stderr, "zero_config: (--supply-hf means fp32; add --dtype bf16 or --dtype fp16 for a mixed-precision "
                        "run)\n");
    return 1;
}

static int usage_error(void) { return tool_usage_error(usage); }

static void newline(int depth) {
    putchar('\n');
    while (depth-- > 0) fputs("  ", stdout);
}

/* zero_config_to_json's one line indented by 2, as Python's json.dumps(indent=2)
   lays it out, except that an array (the betas) stays on one line. */
static void print_indented(const char *j) {
    int depth = 0, in_array = 0;
    for (; *j; j++) {
        if (*j == '"') { /* a string, escapes and all, as it is */
            putchar(*j++);
            for (; *j && *j != '"'; j++) {
                if (*j == '\\' && j[1]) putchar(*j++);
                putchar(*j);
            }
            if (*j) putchar('"');
            else break;
            continue;
        }
        switch (*j) {
        case '{':
            putchar('{');
            if (j[1] == '}') putchar('}'), j++;
            else newline(++depth);
            break;
        case '}': newline(--depth), putchar('}'); break;
        case '[': in_array++, putchar('['); break;
        case ']': in_array--, putchar(']'); break;
        case ',':
            putchar(',');
            if (in_array) putchar(' ');
            else newline(depth);
            break;
        case ':': fputs(": ", stdout); break;
        default: putchar(*j);
        }
    }
    putchar('\n');
}

static const char *scheduler_name(zero_scheduler_type t) {
    switch (t) {
    case ZERO_SCHEDULER_WARMUP_LR: return "WarmupLR";
    case ZERO_SCHEDULER_WARMUP_DECAY_LR: return "WarmupDecayLR";
    case ZERO_SCHEDULER_WARMUP_COSINE_LR: return "WarmupCosineLR";
    case ZERO_SCHEDULER_ONE_CYCLE: return "OneCycle";
    case ZERO_SCHEDULER_LR_RANGE_TEST: return "LRRangeTest";
    default: return "none (constant lr)";
    }
}

static const char *offload_name(zero_offload_device d) {
    return d == ZERO_OFFLOAD_CPU ? "cpu" : d == ZERO_OFFLOAD_NVME ? "nvme" : "none";
}

/* The summary's optimizer line: the type and only the parameters it takes. */
static void print_optimizer(const zero_optimizer_config *o, double clip) {
    switch (o->type) {
    case ZERO_OPTIMIZER_LION:
        fprintf(stderr, "  optimizer: Lion, lr %g, betas %g/%g, weight_decay %g", o->lr, o->beta1, o->beta2,
                o->weight_decay);
        break;
    case ZERO_OPTIMIZER_ADAGRAD:
        fprintf(stderr, "  optimizer: Adagrad, lr %g, eps %g, weight_decay %g", o->lr, o->eps, o->weight_decay);
        break;
    case ZERO_OPTIMIZER_SGD:
        fprintf(stderr, "  optimizer: SGD, lr %g, momentum %g", o->lr, o->momentum);
        if (o->dampening != 0) fprintf(stderr, ", dampening %g", o->dampening);
        fprintf(stderr, "%s, weight_decay %g", o->nesterov == 1 ? ", nesterov" : "", o->weight_decay);
        break;
    default:
        fprintf(stderr, "  optimizer: %s, lr %g, betas %g/%g, eps %g, weight_decay %g",
                o->type == ZERO_OPTIMIZER_ADAMW ? "AdamW"
                : o->adam_w_mode                ? "Adam (adam_w_mode: decoupled weight decay)"
                                                : "Adam (L2 weight decay)",
                o->lr, o->beta1, o->beta2, o->eps, o->weight_decay);
    }
    fprintf(stderr, "; gradient_clipping %g\n", clip);
}

/* The resolved config in a few lines, for a reader (stderr: stdout is the JSON). */
static void print_summary(const zero_config *c, const char *file, long long world) {
    const zero_optimization_config *z = &c->zero_optimization;
    long long gas = (long long)c->gradient_accumulation_steps;
    fprintf(stderr, "zero_config: %s resolved for %lld rank%s:\n", file, world, world == 1 ? "" : "s");
    fprintf(stderr, "  ZeRO stage %d, %s\n", z->stage,
            c->fp16.enabled == 1 ? "fp16 (loss scaling)" : c->bf16.enabled == 1 ? "bf16" : "fp32");
    fprintf(stderr, "  batch: train_batch_size %lld = micro-batch %lld x %lld accumulation step%s x %lld rank%s\n",
            (long long)c->train_batch_size, (long long)c->train_micro_batch_size_per_gpu, gas, gas == 1 ? "" : "s",
            world, world == 1 ? "" : "s");
    print_optimizer(&c->optimizer, c->gradient_clipping);
    fprintf(stderr, "  scheduler: %s", scheduler_name(c->scheduler.type));
    if (c->scheduler.type == ZERO_SCHEDULER_WARMUP_LR || c->scheduler.type == ZERO_SCHEDULER_WARMUP_DECAY_LR ||
        c->scheduler.type == ZERO_SCHEDULER_WARMUP_COSINE_LR)
        fprintf(stderr, ", %lld warmup steps", (long long)c->scheduler.warmup_num_steps);
    if (c->scheduler.type == ZERO_SCHEDULER_WARMUP_DECAY_LR || c->scheduler.type == ZERO_SCHEDULER_WARMUP_COSINE_LR)
        fprintf(stderr, " of %lld", (long long)c->scheduler.total_num_steps);
    fprintf(stderr, "\n  offload: optimizer %s, parameters %s\n", offload_name(z->offload_optimizer.device),
            offload_name(z->offload_param.device));
    fprintf(stderr, "  %d warning%s%s\n", n_warnings, n_warnings == 1 ? "" : "s", n_warnings ? " (above)" : "");
}

/* --dtype: an "auto" fp16.enabled / bf16.enabled answered; a value the
   config gives is kept (said, when it disagrees). */
static void apply_dtype(zero_config *c, zero_dtype dt) {
    if (c->fp16.enabled == ZERO_AUTO) c->fp16.enabled = dt == ZERO_DTYPE_FP16;
    if (c->bf16.enabled == ZERO_AUTO) c->bf16.enabled = dt == ZERO_DTYPE_BF16;
    if ((c->fp16.enabled == 1) != (dt == ZERO_DTYPE_FP16) || (c->bf16.enabled == 1) != (dt == ZERO_DTYPE_BF16))
        fprintf(stderr, "zero_config: --dtype %s: the config sets fp16.enabled %s, bf16.enabled %s; the config's "
                        "values stand (--dtype answers \"auto\" only)\n",
                zero_dtype_name(dt), c->fp16.enabled == 1 ? "true" : "false", c->bf16.enabled == 1 ? "true" : "false");
}

int main(int argc, char **argv) {
    zero_config cfg = zero_config_default();
    zero_error err;
    const char *file = NULL;
    long long world = 1, hidden = 0, mbs = 0;
    int i, supply = 0, strict = 0, compact = 0;
    zero_dtype dtype = ZERO_DTYPE_DEFAULT;
    static char json[1 << 16];
    static char hf_unused[1024];
    char hint[64];
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            fputs(help, stdout);
            return 0;
        }
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--version")) return tool_version("zero_config");
    if (argc < 2) return tool_usage_fail("zero_config", NULL, usage, "missing command (check or keys-markdown)");
    if (!strcmp(argv[1], "keys-markdown")) {
        if (argc > 2)
            return tool_usage_fail("zero_config", NULL, usage, "keys-markdown takes no arguments, got '%s'", argv[2]);
        return keys_markdown();
    }
    if (strcmp(argv[1], "check") != 0)
        return tool_usage_fail("zero_config", NULL, usage, "unknown command '%s'", argv[1]);
    for (i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--supply-hf")) {
            supply = 1;
            continue;
        }
        if (!strcmp(f, "--strict")) {
            strict = 1;
            continue;
        }
        if (!strcmp(f, "--compact")) {
            compact = 1;
            continue;
        }
        if (!strcmp(f, "--world")) {
            if (tool_int("zero_config", f, v, 1, 1048576, &world)) return usage_error();
        } else if (!strcmp(f, "--hidden")) {
            if (tool_int("zero_config", f, v, 1, 1048576, &hidden)) return usage_error();
        } else if (!strcmp(f, "--mbs")) {
            if (tool_int("zero_config", f, v, 1, 1048576, &mbs)) return usage_error();
        } else if (!strcmp(f, "--dtype")) {
            dtype = !v ? ZERO_DTYPE_DEFAULT : !strcmp(v, "fp32") ? ZERO_DTYPE_FP32
                  : !strcmp(v, "fp16") ? ZERO_DTYPE_FP16 : !strcmp(v, "bf16") ? ZERO_DTYPE_BF16 : ZERO_DTYPE_DEFAULT;
            if (dtype == ZERO_DTYPE_DEFAULT)
                return tool_usage_fail("zero_config", f, usage, v ? "'%s' is not fp32, fp16 or bf16" : "missing value%s",
                                       v ? v : " (fp32, fp16 or bf16)");
        } else if (f[0] == '-' && f[1]) {
            return tool_usage_fail("zero_config", NULL, usage, "unknown argument '%s'%s", f,
                                   tool_did_you_mean(f, flags, hint, sizeof hint));
        } else if (file) {
            return tool_usage_fail("zero_config", NULL, usage, "check takes one FILE, got '%s' and '%s'", file, f);
        } else {
            file = f;
            continue;
        }
        i++;
    }
    if (!file) return tool_usage_fail("zero_config", "check", usage, "missing FILE (the DeepSpeed config)");
    cfg.log.rank = 0;
    cfg.log.fn = count_log;
    if (zero_config_load(&cfg, file, &err) != ZERO_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    if (hidden) cfg.hidden_size = hidden;
    if (mbs && cfg.train_micro_batch_size_per_gpu < 0) cfg.train_micro_batch_size_per_gpu = mbs;
    if (dtype != ZERO_DTYPE_DEFAULT) apply_dtype(&cfg, dtype);
    if (supply) hf_defaults(&cfg, 1, hf_unused, sizeof hf_unused);
    if (needs_flags(&cfg, file, world, hidden, mbs, supply)) return 1;
    if (zero_config_resolve(&cfg, (int)world, &err) != ZERO_OK) {
        const char *hint = strstr(err.msg, "\nHINT:");
        if (err.item != ZERO_MSG_CONFIG_AUTO_UNRESOLVED || !hint) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 1;
        }
        /* an "auto" no flag answers: the library's hint speaks of struct fields */
        fprintf(stderr, "error: %.*s\nzero_config: no flag of zero_config answers %s: write its value into %s\n",
                (int)(hint - err.msg), err.msg, err.key[0] ? err.key : "that key", file);
        return 1;
    }
    zero_config_to_json(&cfg, json, sizeof json);
    if (compact) printf("%s\n", json);
    else print_indented(json);
    print_summary(&cfg, file, world);
    if (strict && n_warnings) {
        fprintf(stderr, "zero_config: %d warning%s above (--strict)\n", n_warnings, n_warnings == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
